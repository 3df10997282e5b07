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
 * this thread may be given now: its clamped monotonic reading plus the
 * current offset; false before its first answer from the TSC. */
static bool preload_clamp_floor(enum clock_offset_kind kind, uint64_t *floor_ns)
{
	uint64_t last = clock_thread.last_mono_ns;

	if (last == 0)
		return false;
	*floor_ns = last + clock_offset(kind);
	return true;
}

/* Whether libc's answer ns must be raised to *floor_ns: it is earlier
 * than what the TSC gave this thread last, by less than a millisecond (by
 * more, the clock was set back, and libc's answer stands, as it would
 * without fasttime). CLOCK_BOOTTIME is never set back: however far below,
 * it is raised, as CLOCK_MONOTONIC is. (Lines that ran ahead while the
 * kernel's rate moved and the thread could not look, up to the rate times
 * the validity, 6.6 ms at 83,333 ppm, then lapsed, took it back by that.) */
static bool preload_clamp_below_floor(enum clock_offset_kind kind, uint64_t ns, uint64_t *floor_ns)
{
	return preload_clamp_floor(kind, floor_ns) && ns < *floor_ns &&
	       (kind == CLOCK_OFFSET_BOOTTIME || *floor_ns - ns < PRELOAD_CLAMP_MAX_NS);
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

void preload_clamp_after_libc(enum clock_offset_kind kind, uint64_t answer_ns)
{
	struct timespec mono;
	uint64_t now, wanted;
	int64_t ahead;

	if (libc_clock_gettime(CLOCK_MONOTONIC, &mono) != 0)
		return;
	now = timespec_to_ns(&mono);
	ahead = (int64_t)(answer_ns - clock_offset(kind) - now);
	wanted = ahead <= 0 ? now
		 : ahead > (int64_t)PRELOAD_CLAMP_OFFSET_SLACK_NS
		     ? now + PRELOAD_CLAMP_OFFSET_SLACK_NS
		     : now + (uint64_t)ahead;
	if (wanted > clock_thread.last_mono_ns)
		clock_thread.last_mono_ns = wanted;
}
