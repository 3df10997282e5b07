/* The clamp on libc's answers: a thread that had answers from the TSC
 * and is now answered by libc (the lines went stale, an entry point went
 * back to libc) must not see its time go back, though a line may run a
 * few nanoseconds ahead of the kernel's clock. libc's answer is raised to
 * what this thread was last given, through its monotonic clamp plus the
 * clock's current offset. */
#ifndef FASTTIME_PRELOAD_CLAMP_H
#define FASTTIME_PRELOAD_CLAMP_H

#include <sys/time.h>
#include <time.h>

#include "clock.h"
#include "clock_table.h"
#include "watch.h"

/* A clock-with-offset answer from libc earlier than this thread's last
 * one by less than this is held at the last one; by more, it is held only
 * where libc's clock minus its CLOCK_MONOTONIC still shows the published
 * offset within this (the drop is the lines' own lead); where that moved
 * further, the clock was set back, and libc's answer stands. */
#define PRELOAD_CLAMP_MAX_NS 1000000u
/* How far past a second's start time()'s coarse clock may still name the
 * second before: a tick at the slowest HZ the kernel offers (100), with room. */
#define PRELOAD_COARSE_LAG_MAX_NS 20000000u
/* How far above libc's CLOCK_MONOTONIC the floor may go to keep a clock
 * with an offset from going back: an offset further off than this is a
 * step not followed yet (a resume), and CLOCK_MONOTONIC must not stand
 * still for its length. A published offset is left alone while it is
 * within the step the watch follows (WATCH_STEP_THRESHOLD_NS) plus its
 * sandwich's width of the truth, so it may be off by a few microseconds
 * (more where the kernel's clock is a system call), and a cap at the
 * step alone lets such a clock go back from libc's answer to the TSC's
 * next one. */
#define PRELOAD_CLAMP_OFFSET_SLACK_NS (10u * WATCH_STEP_THRESHOLD_NS)

/* libc's answer of the clock that lines answer with no offset
 * (CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW), raised to what this thread was
 * last given. */
void preload_clamp_lines(enum clock_lines lines, struct timespec *ts);
/* libc's answer for the clock that is monotonic plus kind's offset. */
void preload_clamp_offset_clock(enum clock_offset_kind kind, struct timespec *ts);
/* gettimeofday's microseconds (CLOCK_REALTIME). */
void preload_clamp_timeval(struct timeval *tv);
/* time()'s seconds, from the kernel's coarse clock. */
time_t preload_clamp_seconds(time_t sec);
/* The latest of this thread's answers from libc less the offset published
 * with each, since its floor was last raised, where no answer from the TSC
 * can come before a careful read; 0: none owed. */
extern __thread uint64_t preload_clamp_owed_ns
    __attribute__((tls_model("initial-exec"), visibility("hidden")));

/* preload_clamp_after_libc's raise, at once: one call of libc's
 * CLOCK_MONOTONIC. */
void preload_clamp_after_libc_now(uint64_t owed_ns);

/* After libc answered the clock that is monotonic plus kind's offset with
 * answer_ns: raises this thread's monotonic floor to libc's CLOCK_MONOTONIC
 * now, as a libc answer of MONOTONIC does, and further to answer_ns less
 * the published offset, by at most PRELOAD_CLAMP_OFFSET_SLACK_NS: a line
 * that comes back a little behind the kernel's clock, or an offset
 * published a little short (it is measured from a sandwich's middle),
 * would otherwise give this thread an earlier answer than libc's just
 * before, and CLOCK_BOOTTIME, like the kernel's, must never go back. One
 * call of libc's CLOCK_MONOTONIC; none, and no call at all, while the
 * process's table is to be judged (the lines lapsed under it, or it was
 * never judged): the floor is owed, this thread's fast reads are turned
 * off until its next careful read, and its caller raises the floor first
 * (preload_clamp_settle). A program that
 * reads a settable clock in a loop over stale lines then pays libc's call
 * alone. A clock set before the offset's own length owes nothing beyond
 * now. */
static inline void preload_clamp_after_libc(enum clock_offset_kind kind, uint64_t answer_ns)
{
	uint64_t offset = clock_offset(kind);

	if (wiped_judged_until() != 0) {
		preload_clamp_after_libc_now(answer_ns - offset);
		return;
	}
	/* Modulo 2^64, as offsets are: CLOCK_BOOTTIME's, measured on a
	 * machine that never slept, may lie a few nanoseconds below zero. */
	if ((int64_t)(answer_ns - offset) > 0 && answer_ns - offset > preload_clamp_owed_ns)
		preload_clamp_owed_ns = answer_ns - offset;
	/* The deadline is the process's: another thread's judgement may set
	 * it before this thread's next call, whose fast read must not answer
	 * before the floor is raised. */
	clock_thread_fast_reads_off();
}

/* Raises the floor to what is owed (preload_clamp_after_libc's raise, with
 * a CLOCK_MONOTONIC read now: the later, the closer its cap). */
void preload_clamp_settle_owed(void);

/* Before a careful read may answer from the TSC: the floor this thread's
 * answers from libc owe it, if any. One load otherwise. */
static inline void preload_clamp_settle(void)
{
	if (__builtin_expect(preload_clamp_owed_ns != 0, 0))
		preload_clamp_settle_owed();
}

#endif
