/* The preloaded library as this process sees it: whose clock_gettime the
 * process calls, the library's refresh thread and settings, its start. */
#ifndef FASTTIME_BENCH_LIBRARY_H
#define FASTTIME_BENCH_LIBRARY_H

#include <stdbool.h>
#include <stdint.h>

#include "settings.h"

enum bench_library_state {
	BENCH_LIBRARY_READY,
	BENCH_LIBRARY_ABSENT,
	BENCH_LIBRARY_BUSY,
	BENCH_LIBRARY_SERVED, /* a calibration service's page answers: no thread */
};

struct bench_library {
	const char *owner;		/* the file defining the process's clock_gettime */
	bool preloaded;			/* owner is the preloaded library */
	enum bench_library_state state; /* after bench_library_wait */
	double waited_ms;		/* how long bench_library_wait took */
	char page[256];			/* the page that serves it, when SERVED */
};

/* Fills owner and preloaded; the state stays BENCH_LIBRARY_ABSENT. */
void bench_library_find(struct bench_library *library);

/* Whether a calibration service's page serves this process (it is mapped
 * read-only and shared, whole); fills page with its path. */
bool bench_library_served(struct bench_library *library);

/* Calls the clock and waits for the library's first round to be over;
 * fills state and waited_ms. */
void bench_library_wait(struct bench_library *library);

/* Forks. The parent waits for the child and returns its exit status (1
 * when it cannot fork or wait); the child returns -1 after reading the
 * clock once, sleeping seconds and waiting for its own copy of the
 * library to be ready again (library's state and waited_ms are the
 * child's). */
int bench_library_fork(struct bench_library *library, double seconds);

/* Calls the process's clock_gettime once, the call that starts the
 * library's thread; returns libc's MONOTONIC ns from just before it. */
uint64_t bench_library_first_call(void);

/* The thread id of the library's refresh thread (named "fasttime"), or 0
 * when this process has no such thread. */
long bench_library_tid(void);

/* The FASTTIME_* settings as the library read them, without its warnings. */
void bench_library_settings(struct settings *settings);

#endif
