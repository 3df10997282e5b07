/* fasttime-bench --spawn: what the preloaded library adds to every process
 * start and every fork, against a preloaded library that does nothing. */
#ifndef FASTTIME_BENCH_SPAWN_H
#define FASTTIME_BENCH_SPAWN_H

/* Runs the three cases (spawns of /bin/true, forks in a preloaded parent,
 * a shell spawning /bin/true), alternating the two libraries round by
 * round, and prints what it measured (CSV with --csv); returns the exit
 * status. */
int bench_spawn_run(void);

/* The preloaded parent of the fork case: forks count times, each child
 * leaving at once, and writes each fork's time to standard output. */
int bench_spawn_fork_loop(unsigned count);

#endif
