/* The clock table (clock_table.h). */
#include "config.h"

#include "clock_table.h"

#include <stddef.h>

const struct clock_row clock_table[CLOCK_TABLE_ROWS] = {
	{ CLOCK_REALTIME, "CLOCK_REALTIME", CLOCK_LINES_MONOTONIC, CLOCK_OFFSET_REALTIME,
	  CLOCK_API_REALTIME,
	  CLOCK_API_REALTIME | CLOCK_API_GETTIMEOFDAY | CLOCK_API_TIME | CLOCK_API_TIMESPEC_GET },
	{ CLOCK_MONOTONIC, "CLOCK_MONOTONIC", CLOCK_LINES_MONOTONIC, CLOCK_OFFSET_NONE,
	  CLOCK_API_MONOTONIC, CLOCK_API_MONOTONIC },
	{ CLOCK_BOOTTIME, "CLOCK_BOOTTIME", CLOCK_LINES_MONOTONIC, CLOCK_OFFSET_BOOTTIME,
	  CLOCK_API_BOOTTIME, CLOCK_API_BOOTTIME },
	{ CLOCK_TAI, "CLOCK_TAI", CLOCK_LINES_MONOTONIC, CLOCK_OFFSET_TAI, CLOCK_API_TAI,
	  CLOCK_API_TAI },
	{ CLOCK_MONOTONIC_RAW, "CLOCK_MONOTONIC_RAW", CLOCK_LINES_RAW, CLOCK_OFFSET_NONE,
	  CLOCK_API_MONOTONIC_RAW, CLOCK_API_MONOTONIC_RAW },
};

const struct clock_row *clock_table_row(clockid_t id)
{
	for (unsigned i = 0; i < CLOCK_TABLE_ROWS; i++)
		if (clock_table[i].id == id)
			return &clock_table[i];
	return NULL;
}

const struct clock_row *clock_table_row_for_offset(enum clock_offset_kind kind)
{
	for (unsigned i = 0; i < CLOCK_TABLE_ROWS; i++)
		if (clock_table[i].lines == CLOCK_LINES_MONOTONIC && clock_table[i].offset == kind)
			return &clock_table[i];
	return NULL;
}
