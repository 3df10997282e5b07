/* The entry points fasttime answers, as a table: one row per entry point
 * (clock_gettime once per clock it answers, then gettimeofday, time and
 * timespec_get), written once, in entry_table.def. A row gives the entry
 * point's api_flags bit, the clock it reads (its row in clock_table.h) and
 * its names: in the debug lines and --info, in the api.KEY.* keys of --info
 * --format=keys, and in fasttime-bench's table and CSV. The per-API choice
 * measures the entry points in the rows' order and --info lists them in it;
 * the bench and the scripts name them from the rows. Adding a clock is a
 * row in entry_table.def beside its row in clock_table.h. */
#ifndef FASTTIME_ENTRY_TABLE_H
#define FASTTIME_ENTRY_TABLE_H

#include <stdint.h>
#include <time.h>

#include "clock_table.h"

/* The rows' names as constants, ENTRY_COUNT after them. */
enum entry_point {
#define ENTRY(id, form, clock, bit, bench_position, name, key, bench_name) ENTRY_##id,
#include "entry_table.def"
#undef ENTRY
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
