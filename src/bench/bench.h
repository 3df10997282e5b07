/* fasttime-bench's command line, which every part of the benchmark reads,
 * and the sink that keeps a measured call from being optimised away. */
#ifndef FASTTIME_BENCH_H
#define FASTTIME_BENCH_H

#include <stdbool.h>
#include <stdint.h>

struct bench_options {
	double seconds;
	unsigned threads;
	bool symbols; /* measure the process's symbols, not the engine */
	bool csv;
	const char *trace;    /* file for the error over time, or NULL */
	bool startup;	      /* time the preloaded library's start */
	double idle;	      /* seconds to sleep with the clock called once, or 0 */
	double after_fork;    /* --symbols: measure in a child this long after fork */
	bool spawn;	      /* time process starts and forks under the library */
	unsigned rounds;      /* --spawn's rounds */
	const char *library;  /* --spawn's library, or NULL: found */
	const char *empty;    /* --spawn's library that does nothing, or NULL */
	unsigned fork_loop;   /* forks for --spawn's preloaded parent, or 0 */
	bool fork_loop_reads; /* which reads the clock once before them */
};

/* Filled by the option parsing in bench.c before anything is measured. */
extern struct bench_options bench_options;

/* Makes value live at no cost: a call whose result is consumed stays. */
static inline void bench_consume(uint64_t value)
{
	__asm__ volatile("" : : "r"(value));
}

#endif
