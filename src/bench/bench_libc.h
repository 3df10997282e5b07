/* libc's own time functions, looked up in libc.so.6 itself: what the
 * benchmark compares with and times with, which a preload cannot answer. */
#ifndef FASTTIME_BENCH_LIBC_H
#define FASTTIME_BENCH_LIBC_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "clock.h"
#include "libc.h"

extern struct libc_time_functions bench_libc;
/* The same four as this process's own calls reach them: libc's natively,
 * the library's when preloaded. Called through these pointers, both sides
 * of a comparison pay the same indirect call. */
extern struct libc_time_functions bench_process;

/* Fills bench_libc and bench_process; false when one lacks a function. */
bool bench_libc_find(void);

/* libc's reading of clock id in ns. Inline: a sandwich of two of these
 * around another reading is as narrow as two calls of libc's. */
static inline uint64_t bench_libc_ns(clockid_t id)
{
	struct timespec ts;

	bench_libc.clock_gettime(id, &ts);
	return timespec_to_ns(&ts);
}

#endif
