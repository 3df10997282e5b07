/* The entry-point table (entry_table.h). */
#include "config.h"

#include "entry_table.h"

const struct entry_row entry_table[ENTRY_COUNT] = {
	[ENTRY_MONOTONIC] = { CLOCK_API_MONOTONIC, CLOCK_MONOTONIC,
			      "clock_gettime(CLOCK_MONOTONIC)", "clock_gettime_monotonic",
			      "clock_gettime(MONOTONIC)" },
	[ENTRY_REALTIME] = { CLOCK_API_REALTIME, CLOCK_REALTIME, "clock_gettime(CLOCK_REALTIME)",
			     "clock_gettime_realtime", "clock_gettime(REALTIME)" },
	[ENTRY_BOOTTIME] = { CLOCK_API_BOOTTIME, CLOCK_BOOTTIME, "clock_gettime(CLOCK_BOOTTIME)",
			     "clock_gettime_boottime", "clock_gettime(BOOTTIME)" },
	[ENTRY_TAI] = { CLOCK_API_TAI, CLOCK_TAI, "clock_gettime(CLOCK_TAI)", "clock_gettime_tai",
			"clock_gettime(TAI)" },
	[ENTRY_MONOTONIC_RAW] = { CLOCK_API_MONOTONIC_RAW, CLOCK_MONOTONIC_RAW,
				  "clock_gettime(CLOCK_MONOTONIC_RAW)",
				  "clock_gettime_monotonic_raw", "clock_gettime(MONOTONIC_RAW)" },
	[ENTRY_GETTIMEOFDAY] = { CLOCK_API_GETTIMEOFDAY, CLOCK_REALTIME, "gettimeofday",
				 "gettimeofday", "gettimeofday" },
	[ENTRY_TIME] = { CLOCK_API_TIME, CLOCK_REALTIME, "time", "time", "time" },
	[ENTRY_TIMESPEC_GET] = { CLOCK_API_TIMESPEC_GET, CLOCK_REALTIME, "timespec_get(TIME_UTC)",
				 "timespec_get_utc", "timespec_get(TIME_UTC)" },
};
