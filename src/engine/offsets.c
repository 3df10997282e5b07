/* The clocks' offsets (offsets.h): sandwiches of libc's clocks, judged by
 * calib.c (the first time) and watch.c (a step), published by table.c. */
#include "config.h"

#include "offsets.h"

#include "clock.h"
#include "debug.h"
#include "libc.h"
#include "table.h"
#include "watch.h"

/* Sandwiches taken to publish an offset the first time, as a round takes
 * per CPU; and to judge whether a published one moved, at every renewal of
 * the lines' validity, where three clocks' worth of sandwiches stand
 * between the look's sample and the validity it grants, and a step of a
 * microsecond is seen with fewer. */
#define OFFSETS_SANDWICHES	 15u
#define OFFSETS_RENEW_SANDWICHES 5u

/* Which offsets were published once: the refresh thread's alone. */
static bool offsets_published[CLOCK_OFFSET_COUNT];

bool offsets_known(enum clock_offset_kind kind)
{
	return kind == CLOCK_OFFSET_NONE || (kind < CLOCK_OFFSET_COUNT && offsets_published[kind]);
}

unsigned offsets_samples(clockid_t id, struct calib_offset_sample *samples, unsigned n)
{
	unsigned taken = 0;

	for (unsigned i = 0; i < n; i++) {
		struct timespec between;

		samples[taken].mono_before = libc_monotonic_ns();
		if (libc_clock_gettime(id, &between) != 0)
			continue;
		samples[taken].real = timespec_to_ns(&between);
		samples[taken].mono_after = libc_monotonic_ns();
		taken++;
	}
	return taken;
}

/* Measures kind's offset: publishes it the first time, and whenever it
 * moves by more than the sandwiches can explain. True when it moved. */
static bool offsets_renew_one(enum clock_offset_kind kind)
{
	const struct clock_row *row = clock_table_row_for_offset(kind);
	struct calib_offset_sample samples[OFFSETS_SANDWICHES];
	/* Loaded before the samples: a reader that publishes a step while
	 * they are taken (preload_follow_step) is newer than they are, and
	 * the swap below then leaves its offset in place. */
	uint64_t published = clock_offset(kind);
	uint64_t offset, width;
	unsigned taken;
	int64_t moved;

	if (row == NULL)
		return false;
	taken = offsets_samples(row->id, samples,
				offsets_published[kind] ? OFFSETS_RENEW_SANDWICHES
							: OFFSETS_SANDWICHES);
	if (taken == 0)
		return false;
	if (!offsets_published[kind]) {
		if (!calib_realtime_offset(samples, taken, &offset, &width))
			return false;
		table_set_offset(kind, offset);
		offsets_published[kind] = true;
		return false;
	}
	if (watch_realtime_judge(samples, taken, published, WATCH_STEP_THRESHOLD_NS, &offset,
				 &moved) != WATCH_REALTIME_SET)
		return false;
	if (!table_swap_offset(kind, published, offset))
		return false;
	debug_log("%s was set: moved %+lld ns", row->name, (long long)moved);
	return true;
}

bool offsets_renew(bool known_only)
{
	bool moved = false;

	for (unsigned kind = CLOCK_OFFSET_NONE + 1; kind < CLOCK_OFFSET_COUNT; kind++)
		if (!known_only || offsets_published[kind])
			moved = offsets_renew_one((enum clock_offset_kind)kind) || moved;
	return moved;
}
