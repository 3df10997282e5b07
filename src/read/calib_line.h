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

/* Ticks that fit in ns at mult's rate, at most UINT64_MAX; 0 for no line.
 * Deadlines kept in ticks (a line's validity, a page's next judgement) let
 * a reader compare them with the counter it already read. */
static inline uint64_t calib_line_ticks_for_ns(uint64_t mult, uint64_t ns)
{
	uint64_t ticks, remainder;

	if (mult == 0)
		return 0;
	/* (ns * 2^64) / mult reaches 2^64 exactly when ns >= mult. Below,
	 * the quotient fits, and one divide instruction takes it: libgcc's
	 * 128-bit division lies at the far end of the library's code, a page
	 * that a served process start would otherwise fault in for this. */
	if (ns >= mult)
		return UINT64_MAX;
	__asm__("divq %[mult]"
		: "=a"(ticks), "=d"(remainder)
		: "a"((uint64_t)0), "d"(ns), [mult] "rm"(mult)
		: "cc");
	(void)remainder;
	return ticks;
}

#endif
