/* Sandwiches (sandwich.h). */
#include "config.h"

#include "sandwich.h"

#include "libc.h"
#include "verdict.h"

bool sandwich_take(clockid_t clock, struct calib_sample *sample, struct cpu_stamp *stamp)
{
	/* Asked before the first read: nothing but the counter's read
	 * between the two. */
	struct cpu_reading reading = verdict_sample_reading();
	struct timespec ts_before, ts_after;
	uint64_t before, after;
	int failed = libc_clock_gettime(clock, &ts_before);

	*stamp = cpu_read_stamp(reading);
	failed |= libc_clock_gettime(clock, &ts_after);
	if (failed != 0)
		return false;
	before = timespec_to_ns(&ts_before);
	after = timespec_to_ns(&ts_after);
	if (after < before)
		return false;
	sample->tsc = stamp->tsc;
	sample->width_ns = after - before;
	sample->ns = before + sample->width_ns / 2;
	return true;
}

bool sandwich_narrowest_on(clockid_t clock, uint32_t cpu, unsigned n, struct calib_sample *best,
			   uint32_t *node)
{
	struct calib_sample samples[SANDWICH_MAX_PER_VISIT];
	unsigned taken = 0;

	if (n > SANDWICH_MAX_PER_VISIT)
		n = SANDWICH_MAX_PER_VISIT;
	for (unsigned i = 0; i < n; i++) {
		struct cpu_stamp stamp;

		if (!sandwich_take(clock, &samples[taken], &stamp) || stamp.cpu != cpu)
			continue;
		*node = stamp.node;
		taken++;
	}
	if (taken == 0)
		return false;
	*best = samples[calib_narrowest(samples, taken)];
	return true;
}
