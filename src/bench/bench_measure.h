/* The measurement: each entry point from each source in specialised loops,
 * rounds alternating the sources, per-call cost in batches, the error
 * against libc and backward steps, in one or more threads at once. */
#ifndef FASTTIME_BENCH_MEASURE_H
#define FASTTIME_BENCH_MEASURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpu.h"
#include "entry_table.h"
#include "histogram.h"

#define BENCH_MEASURE_BATCH	 16u	/* calls per timed batch, for percentiles */
#define BENCH_MEASURE_LOOP_CALLS 20000u /* calls per timed loop, for ns per call */

enum bench_source { BENCH_LIBC, BENCH_ORDERED, BENCH_RELAXED, BENCH_SYMBOL, BENCH_SOURCES };

/* The order in which the entry points are measured and reported (the
 * table's rows, the CSV's lines, which scripts/ read): those of old first,
 * then the clocks added later, BOOTTIME and TAI, which the engine answers as
 * the monotonic lines plus an offset, and MONOTONIC_RAW, from lines of its
 * own (clock_table.h). */
extern const enum entry_point bench_measure_order[ENTRY_COUNT];

/* The bare counter reads, the floor under each mode's read path: rdtsc,
 * and the ordered instruction (named by bench_measure_ordered_instruction;
 * "rdtscp" in the CSV whichever it is). */
enum bench_bare { BENCH_BARE_RDTSC, BENCH_BARE_RDTSCP, BENCH_BARES };

/* One round's MONOTONIC sandwiches of one source, for --trace. */
struct bench_trace_point {
	double seconds; /* since the measurement started */
	enum bench_source source;
	double offset_ns;  /* median of reading - sandwich midpoint */
	uint64_t error_ns; /* the round's largest error (0 inside a sandwich) */
};

struct bench_trace {
	struct bench_trace_point *points;
	size_t count, capacity;
	uint64_t start_ns;
	bool full; /* out of memory: the rest is not recorded */
};

struct bench_result {
	double best_ns[ENTRY_COUNT][BENCH_SOURCES]; /* by enum entry_point */
	double bare_ns[BENCH_BARES];		    /* engine mode only */
	struct histogram cost[BENCH_SOURCES];	    /* MONOTONIC, tenths of ns */
	struct histogram error[BENCH_SOURCES][2];   /* |error| ns: MONOTONIC, REALTIME */
	uint64_t backward[BENCH_SOURCES];
	/* Readings of the error passes that the engine's lines gave up on, so
	 * that libc answered them (the engine's loops then time libc too). */
	uint64_t gave_up[BENCH_SOURCES];
	unsigned rounds;
	struct bench_trace *trace; /* the first thread's only */
};

/* Whether this run measures source (libc and the process's symbols with
 * --symbols, libc and the engine's modes without). */
bool bench_measure_source_wanted(enum bench_source source);

/* Whether this run measures api: all of them, except in engine mode a clock
 * whose offset the engine has not measured (a kernel without that clock),
 * or MONOTONIC_RAW where its lines were not ready after the calibration. */
bool bench_measure_api_wanted(enum entry_point api);

/* Starts the engine in this process and waits for every CPU's line; false
 * (with a message where the CPU is the reason) when it cannot run here. */
bool bench_measure_start_engine(const struct cpu_facts *facts);

/* Measures for bench_options.seconds in n threads at once, one result each
 * (results[0].trace, if set, records the first thread's error over time);
 * false, with a message, when a thread cannot start. */
bool bench_measure_run(struct bench_result *results, unsigned n);

/* The threads' results as one: each loop's best averaged over the threads
 * (what a typical thread saw), the histograms and counts added up. */
void bench_measure_merge(struct bench_result *into, const struct bench_result *results, unsigned n);

/* "rdtscp" or "lfence; rdtsc": what the ordered mode reads with here. */
const char *bench_measure_ordered_instruction(void);

#endif
