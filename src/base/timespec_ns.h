/* struct timespec to nanoseconds and back, written once: every reading of
 * libc's clocks, every deadline and every clamp goes through these. */
#ifndef FASTTIME_TIMESPEC_NS_H
#define FASTTIME_TIMESPEC_NS_H

#include <stdint.h>
#include <sys/time.h>
#include <time.h>

#define TIMESPEC_NS_PER_SEC 1000000000u

/* A reading of a clock since its epoch (never negative) in ns. */
static inline uint64_t timespec_to_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * TIMESPEC_NS_PER_SEC + (uint64_t)ts->tv_nsec;
}

/* gettimeofday's reading in ns (its microseconds, so a multiple of 1000). */
static inline uint64_t timeval_to_ns(const struct timeval *tv)
{
	return (uint64_t)tv->tv_sec * TIMESPEC_NS_PER_SEC + (uint64_t)tv->tv_usec * 1000u;
}

static inline struct timespec timespec_from_ns(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / TIMESPEC_NS_PER_SEC),
			       .tv_nsec = (long)(ns % TIMESPEC_NS_PER_SEC) };

	return ts;
}

#endif
