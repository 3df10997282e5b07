/* The realtime offset (realtime.h): sandwiches of libc's clocks, judged by
 * calib.c (the first time) and watch.c (a step), published by table.c. */
#include "config.h"

#include "realtime.h"

#include "clock.h"
#include "debug.h"
#include "libc.h"
#include "table.h"
#include "watch.h"

/* Sandwiches taken each time the offset is measured. */
#define REALTIME_SANDWICHES 15u

/* Whether the offset was published once: the refresh thread's alone. */
static bool realtime_known;

bool realtime_offset_known(void)
{
	return realtime_known;
}

void realtime_offset_samples(struct calib_offset_sample *samples, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		samples[i].mono_before = libc_monotonic_ns();
		samples[i].real = libc_realtime_ns();
		samples[i].mono_after = libc_monotonic_ns();
	}
}

/* CLOCK_REALTIME minus CLOCK_MONOTONIC changes only when the clock is set
 * (or the machine resumes: CLOCK_MONOTONIC stops in suspend): publishes it
 * the first time and whenever it moves by more than the sandwich can
 * explain. True when it moved. */
bool realtime_renew_offset(void)
{
	struct calib_offset_sample samples[REALTIME_SANDWICHES];
	/* Loaded before the samples: a reader that publishes a step while
	 * they are taken (preload_follow_realtime_step) is newer than they
	 * are, and the swap below then leaves its offset in place. */
	uint64_t published = clock_realtime_offset();
	uint64_t offset, width;
	int64_t moved;

	realtime_offset_samples(samples, REALTIME_SANDWICHES);
	if (!realtime_known) {
		if (!calib_realtime_offset(samples, REALTIME_SANDWICHES, &offset, &width))
			return false;
		table_set_realtime_offset(offset);
		realtime_known = true;
		return false;
	}
	if (watch_realtime_judge(samples, REALTIME_SANDWICHES, published, WATCH_STEP_THRESHOLD_NS,
				 &offset, &moved) != WATCH_REALTIME_SET)
		return false;
	if (!table_swap_realtime_offset(published, offset))
		return false;
	debug_log("realtime clock was set: moved %+lld ns", (long long)moved);
	return true;
}
