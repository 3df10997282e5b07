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

/* Measures each entry point's fast path (read as mode_flags, the
 * CLOCK_READ_BITS of clock.h, say) against libc's, alternating, and returns
 * the CLOCK_API_* bits of those that were clearly faster (by 3 %). The
 * table must be valid. *fallbacks counts the calls the counter could not
 * answer: any at all, and the fast figures are libc's, not the counter's.
 * between_rounds, unless NULL, is called between the timed rounds: over a
 * slow kernel clock the measurement outlasts the lines' validity, and the
 * caller renews it there (refresh_renew_validity). */
uint32_t api_choice_measure(uint32_t mode_flags, struct api_cost costs[API_CHOICE_COUNT],
			    unsigned *fallbacks, void (*between_rounds)(void));

#endif
