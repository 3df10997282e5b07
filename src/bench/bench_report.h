/* fasttime-bench's output for a measurement: the human table, the CSV that
 * scripts/fasttime-compare and scripts/fasttime-benchmarks read by name,
 * and the --trace file. */
#ifndef FASTTIME_BENCH_REPORT_H
#define FASTTIME_BENCH_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "bench_library.h"
#include "bench_measure.h"
#include "cpu.h"

/* One figure per line (source,api,metric,value) from merged, each thread's
 * ns per call from results when there are several, then the run's own
 * figures (threads, rounds; under --symbols, what library answered). */
void bench_report_csv(const struct bench_result *merged, const struct bench_result *results,
		      unsigned n, const struct bench_library *library);

/* The machine and the run in one line, what --symbols measured, then one
 * table per thread. */
void bench_report_table(const struct cpu_facts *facts, const struct bench_result *results,
			unsigned n, const struct bench_library *library);

/* Writes trace to f; false when writing failed. */
bool bench_report_trace(FILE *f, const struct bench_trace *trace);

#endif
