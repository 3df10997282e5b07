/* The read path: TSC -> CPU -> line -> nanoseconds -> timespec.
 *
 * Two reads. The fast read here is inline, so that each exported function
 * compiles to one straight run of instructions with no call; it answers only
 * in the common case. The careful read (clock.c) answers the rest. The line
 * is loaded before the counter is read, for the CPU this thread last ran on,
 * and the seconds split is cached per thread, so the chain after the read
 * is a multiply, an add and a subtract with a test for each condition. */
#ifndef FASTTIME_CLOCK_H
#define FASTTIME_CLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/time.h>
#include <time.h>

#include "calib_line.h"
#include "clock_table.h"
#include "cpu.h"
#include "table.h"
#include "timespec_ns.h"
#include "wiped.h"

#define CLOCK_NS_PER_SEC TIMESPEC_NS_PER_SEC

/* The CLOCK_READ_BITS that stand for a reading. */
static inline uint32_t clock_flags_for_reading(struct cpu_reading reading)
{
	uint32_t flags = reading.counter == CPU_READ_LFENCE_RDTSC ? CLOCK_READ_LFENCE : 0;

	if (reading.cpu_id == CPU_ID_GETCPU)
		return flags | CLOCK_CPU_GETCPU;
	if (reading.counter == CPU_READ_RDTSC)
		flags |= CLOCK_MODE_RELAXED;
	return flags;
}

/* A cached second: tv_sec for any ns in [sec * 1e9, (sec + 1) * 1e9). One
 * word, so that a signal handler's refill can never pair one second's start
 * with another's number; the multiply is done before the counter is read. */
struct clock_second {
	int64_t sec;
};

/* Per-thread state, in the static TLS block: one load, no call. */
struct clock_thread_state {
	uint64_t last_mono_ns; /* the monotonic clamp */
	uint32_t last_cpu;     /* whose line to load before the TSC read */
	/* The second each clock last answered in, by its offset kind. */
	struct clock_second seconds[CLOCK_OFFSET_COUNT];
	/* CLOCK_MONOTONIC_RAW's clamp and second: its lines are its own. */
	uint64_t last_raw_ns;
	struct clock_second raw_second;
	/* The validity (valid_from_tsc, valid_ticks) this thread's careful
	 * read last found lapsed: while the table still holds that one, the
	 * lines cannot answer, and a slow call asks libc without reading the
	 * counter again (clock_lines_lapsed). Last, so that the fast read's
	 * fields keep their places. */
	uint64_t lapsed_from_tsc;
	uint64_t lapsed_ticks;
};

extern __thread struct clock_thread_state clock_thread
    __attribute__((tls_model("initial-exec"), visibility("hidden")));

static inline uint64_t clock_mulhi(uint64_t a, uint64_t b)
{
	return (uint64_t)(((unsigned __int128)a * b) >> 64);
}

/* Forced inline: each exported function must be one run of instructions
 * with no call, or it saves registers on every path, pass-through included. */
#define CLOCK_FAST static inline __attribute__((always_inline))

/* The clamp of a set of lines (a constant at every call, so that the
 * compiler addresses the field directly). */
CLOCK_FAST uint64_t *clock_lines_last(enum clock_lines lines)
{
	return lines == CLOCK_LINES_RAW ? &clock_thread.last_raw_ns : &clock_thread.last_mono_ns;
}

/* The fast read gives up, and the careful read (clock.c) answers, whenever
 * anything is unusual: a stale table, a table due to be judged again, a thread that moved to
 * another CPU, a line that would take this thread's time back, a thread with no clamp yet, a new
 * second. So the fast read calls nothing and keeps one test per condition after the counter read.
 */

/* The line at tsc, if the table is fresh and it keeps this thread's time
 * from going back. One comparison covers three cases: last - 1 wraps when
 * the clamp is unset (0); a withdrawn record (0, 0) gives ns = 0; an older
 * line, or another CPU's, gives ns < last. */
CLOCK_FAST bool clock_fast_finish(enum clock_lines lines, uint64_t tsc, struct calib_line line,
				  uint64_t valid_from, uint64_t valid_ticks, uint64_t *ns_out)
{
	uint64_t *last = clock_lines_last(lines);
	uint64_t ns;

	if (__builtin_expect(tsc - valid_from > valid_ticks, 0))
		return false;
	if (__builtin_expect(wiped_judged_past(tsc), 0))
		return false;
	ns = clock_mulhi(tsc, line.mult) + line.offset;
	if (__builtin_expect(ns <= *last - 1, 0))
		return false;
	*last = ns;
	*ns_out = ns;
	return true;
}

/* The offset a clock adds to the monotonic lines (clock_table.h). */
static inline uint64_t clock_offset(enum clock_offset_kind kind)
{
	return __atomic_load_n(&table_page.shared.offset_ns[kind], __ATOMIC_RELAXED);
}

/* The offset of kind (a constant at every call: none is no load), read
 * after the validity: the refresh thread publishes a moved offset before it
 * renews the validity, so a reader that finds the lines valid adds the
 * offset published with them. Read before the validity, a reader between
 * the two loads when a resume was followed would pair the old offset with
 * the new validity, and a clock it had just been given from libc, with
 * the new offset, would go back by the suspend. */
CLOCK_FAST uint64_t clock_offset_after_validity(enum clock_offset_kind kind)
{
	return kind == CLOCK_OFFSET_NONE ? 0 : clock_offset(kind);
}

/* Each fast read loads the line of the CPU this thread last ran on before
 * it reads the counter, and gives up at once when that CPU has no line: a
 * thread on a CPU not calibrated yet then pays for no counter read, and its
 * call costs about what libc's does. The offset is loaded before the
 * counter is read too, off the chain after it. */
struct clock_fast_start {
	uint32_t guess; /* the CPU this thread last ran on */
	struct calib_line line;
	uint64_t valid_from;
	uint64_t valid_ticks;
	uint64_t added; /* the clock's offset */
};

CLOCK_FAST struct clock_fast_start clock_fast_begin(enum clock_lines lines,
						    enum clock_offset_kind kind)
{
	struct clock_fast_start start;

	start.guess = clock_thread.last_cpu;
	start.line = table_load_lines(lines, start.guess);
	start.valid_from = __atomic_load_n(&table_page.shared.valid_from_tsc, __ATOMIC_ACQUIRE);
	start.valid_ticks = __atomic_load_n(&table_page.shared.valid_ticks, __ATOMIC_ACQUIRE);
	start.added = clock_offset_after_validity(kind);
	return start;
}

/* Ordered: rdtscp gives the counter and the CPU id in one instruction. */
CLOCK_FAST bool clock_fast_ordered_ns(enum clock_lines lines, enum clock_offset_kind kind,
				      uint64_t *ns_out, uint64_t *added_out)
{
	struct clock_fast_start start = clock_fast_begin(lines, kind);
	uint32_t aux;
	uint64_t tsc;

	if (__builtin_expect(start.line.mult == 0, 0))
		return false;
	tsc = cpu_rdtscp(&aux);

	if (__builtin_expect(cpu_from_tsc_aux(aux) != start.guess, 0))
		return false;
	*added_out = start.added;
	return clock_fast_finish(lines, tsc, start.line, start.valid_from, start.valid_ticks,
				 ns_out);
}

/* Relaxed: rdtsc overlaps with the surrounding work. As in ordered mode the
 * line is the one of the CPU this thread last ran on; the rseq area, read
 * once after the counter, confirms it (the kernel rewrites the id whenever
 * the thread comes back to user space on another CPU). Only two migrations
 * within the few nanoseconds between the two reads would go unseen, and
 * then the clamp keeps this thread's time from going back. Reading the id
 * before the counter as well, to choose the line, measured 1.5 to 3 ns
 * slower: it puts a load in front of the line's load. An id that is not a
 * CPU (rseq unregistered: -1) never matches. */
CLOCK_FAST bool clock_fast_relaxed_ns(enum clock_lines lines, enum clock_offset_kind kind,
				      uint64_t *ns_out, uint64_t *added_out)
{
	struct clock_fast_start start = clock_fast_begin(lines, kind);
	uint64_t tsc;

	if (__builtin_expect(start.line.mult == 0, 0))
		return false;
	tsc = cpu_rdtsc();
	if (__builtin_expect(cpu_rseq_current() != start.guess, 0))
		return false;
	*added_out = start.added;
	return clock_fast_finish(lines, tsc, start.line, start.valid_from, start.valid_ticks,
				 ns_out);
}

/* Ordered without rdtscp: lfence keeps rdtsc behind every earlier
 * instruction, as rdtscp would, and the rseq id is read before and after
 * the counter: both must be the CPU whose line was loaded, so the counter
 * was read there (a migration always passes through the kernel, which
 * rewrites the id before the thread runs again). */
CLOCK_FAST bool clock_fast_fenced_ns(enum clock_lines lines, enum clock_offset_kind kind,
				     uint64_t *ns_out, uint64_t *added_out)
{
	struct clock_fast_start start = clock_fast_begin(lines, kind);
	uint32_t before;
	uint64_t tsc;

	if (__builtin_expect(start.line.mult == 0, 0))
		return false;
	before = cpu_rseq_current();
	tsc = cpu_rdtsc_fenced();
	if (__builtin_expect((before ^ start.guess) | (cpu_rseq_current() ^ start.guess), 0))
		return false;
	*added_out = start.added;
	return clock_fast_finish(lines, tsc, start.line, start.valid_from, start.valid_ticks,
				 ns_out);
}

/* Relaxed first: it is the mode chosen for speed. A reading whose CPU id
 * comes from getcpu is a call: the careful read answers it. */
CLOCK_FAST bool clock_fast_lines_ns(uint32_t flags, enum clock_lines lines,
				    enum clock_offset_kind kind, uint64_t *ns_out,
				    uint64_t *added_out)
{
	if (flags & CLOCK_MODE_RELAXED)
		return clock_fast_relaxed_ns(lines, kind, ns_out, added_out);
	if (flags & (CLOCK_READ_LFENCE | CLOCK_CPU_GETCPU)) {
		if (flags & CLOCK_CPU_GETCPU)
			return false;
		return clock_fast_fenced_ns(lines, kind, ns_out, added_out);
	}
	return clock_fast_ordered_ns(lines, kind, ns_out, added_out);
}

/* Seconds and the rest from this thread's cached second; false in a new
 * second, which the careful read's division fills in. */
CLOCK_FAST bool clock_fast_split(const struct clock_second *second, uint64_t ns, int64_t *sec,
				 uint64_t *rest_ns)
{
	int64_t cached = second->sec;
	uint64_t into = ns - (uint64_t)cached * CLOCK_NS_PER_SEC;

	if (__builtin_expect(into >= CLOCK_NS_PER_SEC, 0))
		return false;
	*sec = cached;
	*rest_ns = into;
	return true;
}

/* The reading of the clock that is monotonic plus kind's offset, split by
 * the thread's cached second for that clock. */
CLOCK_FAST bool clock_fast_read_split(uint32_t flags, enum clock_offset_kind kind, int64_t *sec,
				      uint64_t *rest_ns)
{
	uint64_t ns, added;

	return clock_fast_lines_ns(flags, CLOCK_LINES_MONOTONIC, kind, &ns, &added) &&
	       clock_fast_split(&clock_thread.seconds[kind], ns + added, sec, rest_ns);
}

/* The fast answers; false means "ask the careful read". */
CLOCK_FAST bool clock_fast_monotonic(uint32_t flags, struct timespec *ts)
{
	uint64_t rest;
	int64_t sec;

	if (!clock_fast_read_split(flags, CLOCK_OFFSET_NONE, &sec, &rest))
		return false;
	ts->tv_sec = (time_t)sec;
	ts->tv_nsec = (long)rest;
	return true;
}

/* Any clock of the table that is the monotonic lines plus an offset. */
CLOCK_FAST bool clock_fast_offset_clock(uint32_t flags, enum clock_offset_kind kind,
					struct timespec *ts)
{
	uint64_t rest;
	int64_t sec;

	if (!clock_fast_read_split(flags, kind, &sec, &rest))
		return false;
	ts->tv_sec = (time_t)sec;
	ts->tv_nsec = (long)rest;
	return true;
}

CLOCK_FAST bool clock_fast_realtime(uint32_t flags, struct timespec *ts)
{
	return clock_fast_offset_clock(flags, CLOCK_OFFSET_REALTIME, ts);
}

/* CLOCK_MONOTONIC_RAW, from its own lines and clamp. */
CLOCK_FAST bool clock_fast_raw(uint32_t flags, struct timespec *ts)
{
	uint64_t ns, added, rest;
	int64_t sec;

	if (!clock_fast_lines_ns(flags, CLOCK_LINES_RAW, CLOCK_OFFSET_NONE, &ns, &added) ||
	    !clock_fast_split(&clock_thread.raw_second, ns, &sec, &rest))
		return false;
	ts->tv_sec = (time_t)sec;
	ts->tv_nsec = (long)rest;
	return true;
}

CLOCK_FAST bool clock_fast_timeval(uint32_t flags, struct timeval *tv)
{
	uint64_t rest;
	int64_t sec;

	if (!clock_fast_read_split(flags, CLOCK_OFFSET_REALTIME, &sec, &rest))
		return false;
	tv->tv_sec = (time_t)sec;
	tv->tv_usec = (suseconds_t)(rest / 1000u);
	return true;
}

CLOCK_FAST bool clock_fast_seconds(uint32_t flags, time_t *sec_out)
{
	uint64_t rest;
	int64_t sec;

	if (!clock_fast_read_split(flags, CLOCK_OFFSET_REALTIME, &sec, &rest))
		return false;
	*sec_out = (time_t)sec;
	return true;
}

/* Until this thread's next careful read, which refills them, its fast
 * reads of CLOCK_MONOTONIC and of the clocks offset from it give up: a
 * cached second of -1 matches no reading. Word stores, no call. */
static inline void clock_thread_fast_reads_off(void)
{
	for (unsigned kind = 0; kind < CLOCK_OFFSET_COUNT; kind++)
		clock_thread.seconds[kind].sec = -1;
}

/* The CPU a thread's guess is parked on while its lines are lapsed: on any
 * machine with fewer CPUs it has no line, so that the fast read gives up
 * before it reads the counter (the careful read parks a guess only where
 * it finds no line there). Still a guess like any other: a thread that
 * does run there is told so by the counter's CPU id. */
#define CLOCK_PARKED_CPU (CPU_MAX_CPUS - 1u)

/* Whether the table's validity is still the one this thread's careful read
 * last found lapsed: then no reading can answer from the lines, and the
 * slow path goes to libc at once. Two plain loads; a renewal, a page moved
 * over the table or a leave writes another validity, and the next slow
 * call reads carefully again. */
static inline bool clock_lines_lapsed(void)
{
	return __atomic_load_n(&table_page.shared.valid_from_tsc, __ATOMIC_ACQUIRE) ==
		   clock_thread.lapsed_from_tsc &&
	       __atomic_load_n(&table_page.shared.valid_ticks, __ATOMIC_ACQUIRE) ==
		   clock_thread.lapsed_ticks;
}

/* The careful read (clock.c): every check written out, the clamp applied
 * instead of refused, the second refilled; false when the table is stale
 * or this CPU has no line, and then the caller asks libc. */
bool clock_careful_monotonic(uint32_t flags, struct timespec *ts);
bool clock_careful_realtime(uint32_t flags, struct timespec *ts);
bool clock_careful_offset_clock(uint32_t flags, enum clock_offset_kind kind, struct timespec *ts);
bool clock_careful_raw(uint32_t flags, struct timespec *ts);
bool clock_careful_timeval(uint32_t flags, struct timeval *tv);
bool clock_careful_seconds(uint32_t flags, time_t *sec);
/* Seconds and the rest for any ns, refilling the cached second. */
void clock_to_timespec(struct clock_second *second, uint64_t ns, struct timespec *ts);

/* The answers each form gives from the TSC; false means "ask libc". */
static inline bool clock_answer_monotonic(uint32_t flags, struct timespec *ts)
{
	return clock_fast_monotonic(flags, ts) || clock_careful_monotonic(flags, ts);
}

static inline bool clock_answer_realtime(uint32_t flags, struct timespec *ts)
{
	return clock_fast_realtime(flags, ts) || clock_careful_realtime(flags, ts);
}

static inline bool clock_answer_offset_clock(uint32_t flags, enum clock_offset_kind kind,
					     struct timespec *ts)
{
	return clock_fast_offset_clock(flags, kind, ts) ||
	       clock_careful_offset_clock(flags, kind, ts);
}

static inline bool clock_answer_raw(uint32_t flags, struct timespec *ts)
{
	return clock_fast_raw(flags, ts) || clock_careful_raw(flags, ts);
}

static inline bool clock_answer_timeval(uint32_t flags, struct timeval *tv)
{
	return clock_fast_timeval(flags, tv) || clock_careful_timeval(flags, tv);
}

static inline bool clock_answer_seconds(uint32_t flags, time_t *sec)
{
	return clock_fast_seconds(flags, sec) || clock_careful_seconds(flags, sec);
}

#endif
