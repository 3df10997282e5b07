/* The clamp on libc's answers (preload_clamp.h). */
#include "config.h"

#include "preload_clamp.h"

#include <stdbool.h>
#include <stdint.h>

#include "clock.h"
#include "libc.h"

/* libc's answer, raised to what this thread was last given: it may have
 * had fast readings, and a line may run a few nanoseconds ahead of the
 * kernel's clock. */
void preload_clamp_lines(enum clock_lines lines, struct timespec *ts)
{
	uint64_t *last = clock_lines_last(lines);
	uint64_t ns = timespec_to_ns(ts);

	if (ns < *last)
		*ts = timespec_from_ns(*last);
	else
		*last = ns;
}

/* The earliest answer of the clock that is monotonic plus kind's offset
 * this thread may be given now: its clamped monotonic reading (or what
 * its answers from libc owe the floor, where that is later) plus the
 * current offset; false before its first answer. */
static bool preload_clamp_floor(enum clock_offset_kind kind, uint64_t *floor_ns)
{
	uint64_t last = clock_thread.last_mono_ns;

	if (preload_clamp_owed_ns > last)
		last = preload_clamp_owed_ns;
	if (last == 0)
		return false;
	*floor_ns = last + clock_offset(kind);
	return true;
}

/* kind's clock minus libc's CLOCK_MONOTONIC, less offset_ns, at most:
 * libc's clock read after CLOCK_MONOTONIC, so that this thread preempted
 * between the two makes it larger, never smaller. False where libc fails. */
static bool preload_clamp_moved_at_most(enum clock_offset_kind kind, uint64_t offset_ns,
					int64_t *moved_ns)
{
	const struct clock_row *row = clock_table_row_for_offset(kind);
	struct timespec mono, clock;

	if (row == NULL || libc_clock_gettime(CLOCK_MONOTONIC, &mono) != 0 ||
	    libc_clock_gettime(row->id, &clock) != 0)
		return false;
	*moved_ns = (int64_t)(timespec_to_ns(&clock) - timespec_to_ns(&mono) - offset_ns);
	return true;
}

/* Whether libc's answer ns of kind's clock, earlier than this thread's
 * floor (its clamped monotonic reading plus offset_ns, the offset
 * published with it) by a millisecond or more, is earlier by this thread's
 * own lead: lines that ran ahead of the kernel's clock before they went
 * stale (a fast slew that began while the refresh thread could not look).
 * The clock was set back only if libc's clock minus its CLOCK_MONOTONIC
 * moved from the offset; otherwise the whole drop is the lead, which the
 * monotonic clamp holds too. CLOCK_MONOTONIC read after libc's answer
 * makes the offset look smaller by the time between the two: a millisecond
 * is room for that, and where it looks moved by more (a set-back, or this
 * thread preempted between them) it is read again the other way round,
 * which preemption cannot make look smaller: a set-back must show there
 * too. One call of libc's, three where it looks set back, only on this
 * path. */
static bool preload_clamp_own_lead(enum clock_offset_kind kind, uint64_t ns, uint64_t offset_ns)
{
	struct timespec mono;
	bool own = false;
	int64_t moved;

	if (libc_clock_gettime(CLOCK_MONOTONIC, &mono) == 0) {
		moved = (int64_t)(ns - timespec_to_ns(&mono) - offset_ns);
		own = moved > -(int64_t)PRELOAD_CLAMP_MAX_NS ||
		      (preload_clamp_moved_at_most(kind, offset_ns, &moved) &&
		       moved > -(int64_t)PRELOAD_CLAMP_MAX_NS);
	}
	return own;
}

/* Whether libc's answer ns must be raised to *floor_ns: it is earlier
 * than what the TSC gave this thread last. By less than a millisecond it
 * is always raised; by more, only where the clock was not set back
 * (preload_clamp_own_lead): a clock set back is followed, as it would be
 * without fasttime. CLOCK_BOOTTIME is never set back: however far below,
 * it is raised, as CLOCK_MONOTONIC is. */
static bool preload_clamp_below_floor(enum clock_offset_kind kind, uint64_t ns, uint64_t *floor_ns)
{
	uint64_t last = clock_thread.last_mono_ns, offset;

	if (last == 0)
		return false;
	offset = clock_offset(kind);
	*floor_ns = last + offset;
	if (ns >= *floor_ns)
		return false;
	return kind == CLOCK_OFFSET_BOOTTIME || *floor_ns - ns < PRELOAD_CLAMP_MAX_NS ||
	       preload_clamp_own_lead(kind, ns, offset);
}

void preload_clamp_offset_clock(enum clock_offset_kind kind, struct timespec *ts)
{
	uint64_t floor;

	if (preload_clamp_below_floor(kind, timespec_to_ns(ts), &floor))
		*ts = timespec_from_ns(floor);
}

void preload_clamp_timeval(struct timeval *tv)
{
	uint64_t floor;

	if (preload_clamp_below_floor(CLOCK_OFFSET_REALTIME, timeval_to_ns(tv), &floor)) {
		tv->tv_sec = (time_t)(floor / CLOCK_NS_PER_SEC);
		tv->tv_usec = (suseconds_t)(floor % CLOCK_NS_PER_SEC / 1000u);
	}
}

/* libc answers time() from the kernel's coarse clock, which lags the
 * precise one by up to a tick: just after a second begins it still names
 * the one before, which this thread may already have been given. */
time_t preload_clamp_seconds(time_t sec)
{
	uint64_t floor, next_second;

	if (sec < 0 || !preload_clamp_floor(CLOCK_OFFSET_REALTIME, &floor))
		return sec;
	next_second = ((uint64_t)sec + 1) * CLOCK_NS_PER_SEC;
	if (floor >= next_second && floor - next_second < PRELOAD_COARSE_LAG_MAX_NS)
		return (time_t)(floor / CLOCK_NS_PER_SEC);
	return sec;
}

/* Raises this thread's monotonic floor to libc's CLOCK_MONOTONIC now,
 * and further to owed_ns (libc's answer of a clock less the offset
 * published with it) by at most PRELOAD_CLAMP_OFFSET_SLACK_NS: the
 * thread's next answer from the TSC must not be earlier than libc's, but
 * an offset further off than the slack is a step not followed yet, and
 * CLOCK_MONOTONIC must not stand still for its length. */
static void preload_clamp_raise(uint64_t owed_ns)
{
	struct timespec mono;
	uint64_t now, wanted;
	int64_t ahead;

	if (libc_clock_gettime(CLOCK_MONOTONIC, &mono) != 0)
		return;
	now = timespec_to_ns(&mono);
	ahead = (int64_t)(owed_ns - now);
	wanted = ahead <= 0 ? now
		 : ahead > (int64_t)PRELOAD_CLAMP_OFFSET_SLACK_NS
		     ? now + PRELOAD_CLAMP_OFFSET_SLACK_NS
		     : now + (uint64_t)ahead;
	if (wanted > clock_thread.last_mono_ns)
		clock_thread.last_mono_ns = wanted;
}

__thread uint64_t preload_clamp_owed_ns __attribute__((tls_model("initial-exec")));

void preload_clamp_after_libc_now(uint64_t owed_ns)
{
	preload_clamp_raise(owed_ns);
}

void preload_clamp_settle_owed(void)
{
	/* Cleared after the raise: a signal handler's call in between raises
	 * the floor itself. */
	preload_clamp_raise(preload_clamp_owed_ns);
	preload_clamp_owed_ns = 0;
}
