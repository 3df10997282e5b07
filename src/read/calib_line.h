/* A line, all a reader needs of the calibration: the engine draws lines
 * (calib.h), the table publishes them, readers evaluate them. */
#ifndef FASTTIME_CALIB_LINE_H
#define FASTTIME_CALIB_LINE_H

#include <stdint.h>

/* ns = mulhi64(tsc, mult) + offset, all modulo 2^64. mult is nanoseconds per
 * tick as a 0.64 fixed-point fraction: one multiply gives the product's high
 * word with no shift, and the fraction has 64 bits of precision. It requires
 * a TSC faster than 1 GHz, which every invariant TSC we know of is. A mult of
 * zero means "no line": readers answer with libc. */
struct calib_line {
	uint64_t mult;
	uint64_t offset;
};

#endif
