/* Which entry points are faster from the TSC than from libc, measured once
 * on this machine when the first calibration is good. */
#ifndef FASTTIME_API_CHOICE_H
#define FASTTIME_API_CHOICE_H

#include <stdint.h>

enum api_choice_index {
	API_CHOICE_MONOTONIC,
	API_CHOICE_REALTIME,
	API_CHOICE_GETTIMEOFDAY,
	API_CHOICE_TIME,
	API_CHOICE_TIMESPEC_GET,
	API_CHOICE_COUNT,
};

struct api_cost {
	const char *name;
	uint32_t flag;	/* its CLOCK_API_* bit */
	double libc_ns; /* per call, the best of several rounds */
	double fast_ns;
};

/* Measures each entry point's fast path (in the mode given by mode_flags,
 * CLOCK_MODE_RELAXED or 0) against libc's, alternating, and returns the
 * CLOCK_API_* bits of those that were clearly faster (by 3 %). The table
 * must be valid. */
uint32_t api_choice_measure(uint32_t mode_flags, struct api_cost costs[API_CHOICE_COUNT]);

#endif
