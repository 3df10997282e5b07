/* This process and its threads as the kernel shows them: files under
 * /proc/self, and the CPUs the process may run on. */
#ifndef FASTTIME_BENCH_PROC_H
#define FASTTIME_BENCH_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The first line of /proc/self/task/<tid>/<file>, newline included. */
bool bench_proc_task_line(long tid, const char *file, char *line, size_t size);

/* The thread's stat line from its state on (the fields after "(comm) "),
 * read into line; NULL when it cannot be read. */
const char *bench_proc_task_stat(long tid, char *line, size_t size);

/* A number from a "Key:   value" file in /proc (kB or a count). */
bool bench_proc_value(const char *path, const char *key, uint64_t *value);

/* The CPUs this process may run on; 0 when unknown. */
unsigned bench_proc_allowed_cpus(void);

#endif
