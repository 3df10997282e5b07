/* The entry points fasttime answers, as a table: one row per entry point
 * (clock_gettime once per clock it answers, then gettimeofday, time and
 * timespec_get), giving its api_flags bit, the clock it reads (its row in
 * clock_table.h) and its names: in the debug lines and --info, in the
 * api.NAME.* keys of --info --format=keys, and in fasttime-bench's table
 * and CSV. The per-API choice measures the entry points in this order,
 * --info lists them in it, and the bench names them from it. Adding a
 * clock is a row here beside its row in clock_table.h. */
#ifndef FASTTIME_ENTRY_TABLE_H
#define FASTTIME_ENTRY_TABLE_H

#include <stdint.h>
#include <time.h>

#include "clock_table.h"

enum entry_point {
	ENTRY_MONOTONIC,
	ENTRY_REALTIME,
	ENTRY_BOOTTIME,
	ENTRY_TAI,
	ENTRY_MONOTONIC_RAW,
	ENTRY_GETTIMEOFDAY,
	ENTRY_TIME,
	ENTRY_TIMESPEC_GET,
	ENTRY_COUNT,
};

struct entry_row {
	uint32_t api;	  /* its CLOCK_API_* bit */
	clockid_t clock;  /* the clock it reads: its clock_table row's id */
	const char *name; /* "clock_gettime(CLOCK_MONOTONIC)": debug lines, --info */
	const char *key;  /* "clock_gettime_monotonic": --info --format=keys */
	/* "clock_gettime(MONOTONIC)": fasttime-bench's table and CSV, which
	 * scripts/ read */
	const char *bench_name;
};

/* One row per entry point, by enum entry_point. */
extern const struct entry_row entry_table[ENTRY_COUNT];

#endif
