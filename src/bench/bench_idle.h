/* fasttime-bench --idle: what the preloaded library costs a program that
 * has read the clock once and then sleeps: its refresh thread's CPU time,
 * the process's resident memory and the thread's stack. */
#ifndef FASTTIME_BENCH_IDLE_H
#define FASTTIME_BENCH_IDLE_H

/* Sleeps about bench_options.idle seconds and prints what it measured (CSV
 * with --csv); returns the exit status. Must run before anything else in
 * the process reads the clock. */
int bench_idle_run(void);

#endif
