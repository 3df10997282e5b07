/* fasttime-bench --startup: how long after the first time call the
 * preloaded library's fast path is active, from its FASTTIME_DEBUG lines. */
#ifndef FASTTIME_BENCH_STARTUP_H
#define FASTTIME_BENCH_STARTUP_H

/* Times the start and prints it (CSV with --csv); returns the exit status,
 * 2 when the library is not preloaded or not in debug mode. Must run before
 * anything else in the process reads the clock. */
int bench_startup_run(void);

#endif
