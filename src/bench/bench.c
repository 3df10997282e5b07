/* fasttime-bench: what each entry point costs here, from libc and from the
 * TSC in both modes, measured in the same run, alternating; per-call cost
 * percentiles; the error against libc and any backward step.
 *
 * By default the engine runs inside this process and each mode is called
 * directly. With --symbols the process's own clock_gettime and friends are
 * measured instead (run it under fasttime to measure the preloaded library
 * end to end) against libc's, found with dlopen(RTLD_NOLOAD).
 *
 * In engine mode a bare rdtsc loop and a bare rdtscp loop run in the same
 * rounds: they are the floor each mode's read path is measured against.
 *
 * --csv prints one figure per line (source,api,metric,value) for
 * scripts/fasttime-compare and scripts/fasttime-benchmarks; --trace FILE
 * records the error against libc over the run.
 *
 * Two more modes serve scripts/fasttime-benchmarks, both run under the
 * preloaded library: --startup times the library's start from the first
 * time call (from its FASTTIME_DEBUG lines), --idle calls the clock once and
 * sleeps, measuring the refresh thread's CPU time and the process's memory.
 * --spawn runs other processes under the library and under one that does
 * nothing, and times their starts and forks.
 *
 * This file reads the options and hands over: bench_measure measures,
 * bench_report prints, bench_startup, bench_idle and bench_spawn are the
 * other modes;
 * bench_library, bench_libc and bench_proc serve them. */
#include "config.h"

#include "bench.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_idle.h"
#include "bench_libc.h"
#include "bench_library.h"
#include "bench_measure.h"
#include "bench_report.h"
#include "bench_spawn.h"
#include "bench_startup.h"
#include "cpu.h"
#include "debug.h"
#include "settings.h"

struct bench_options bench_options = { .seconds = 3.0, .threads = 1, .rounds = 20 };

/* The usage text, on stdout for --help and on stderr after a bad option. */
static void bench_usage(FILE *out)
{
	fprintf(out, "Usage: fasttime-bench [--seconds S] [--threads T] [--symbols] [--csv]\n"
		     "                      [--trace FILE] [--after-fork S]\n"
		     "       fasttime --debug fasttime-bench --startup [--csv]\n"
		     "       fasttime fasttime-bench --idle S [--csv]\n"
		     "       fasttime-bench --spawn [--rounds R] [--library PATH] [--empty PATH] "
		     "[--csv]\n"
		     "Measures clock_gettime (MONOTONIC, REALTIME, BOOTTIME, TAI, MONOTONIC_RAW),\n"
		     "gettimeofday, time and timespec_get from libc and from the TSC (ordered and\n"
		     "relaxed) in one run, with a bare rdtsc and a bare rdtscp loop in the same\n"
		     "rounds.\n"
		     "  --seconds S  how long to measure (default 3)\n"
		     "  --threads T  measure in T threads at once (default 1)\n"
		     "  --symbols    measure this process's own functions (run it under fasttime)\n"
		     "               against libc's, instead of the engine's modes\n"
		     "  --after-fork S  with --symbols: fork once the library runs, and measure\n"
		     "               in the child, S seconds after the fork\n"
		     "  --csv        one figure per line: source,api,metric,value\n"
		     "  --trace FILE write the error of MONOTONIC against libc over the run to\n"
		     "               FILE: per round and source, seconds since the start, the\n"
		     "               median offset from libc's sandwich midpoint and the largest\n"
		     "               error, in ns\n"
		     "  --startup    under the preloaded library with FASTTIME_DEBUG=1: call\n"
		     "               clock_gettime in a loop from the start and time the\n"
		     "               library's debug lines (refresh thread, each CPU's first\n"
		     "               line, the per-API decision) from the first call\n"
		     "  --idle S     call clock_gettime once, let the library's first short\n"
		     "               intervals pass, then sleep about S seconds (whole refresh\n"
		     "               intervals) and report the refresh thread's CPU time over\n"
		     "               them, the process's resident memory and the thread's stack\n"
		     "  --spawn      time what the library adds to processes that never read the\n"
		     "               clock, against a preloaded library that does nothing, in R\n"
		     "               rounds (default 20) alternating the two: each round spawns\n"
		     "               /bin/true 50 times preloaded, forks 100 times in a preloaded\n"
		     "               parent (this program again, with --fork-loop), forks as\n"
		     "               many times in one that read the clock first (so served\n"
		     "               where a page serves), and runs\n"
		     "               sh -c 'for i in $(seq 25); do /bin/true; done' preloaded\n"
		     "               twice\n"
		     "  --library PATH, --empty PATH  the two libraries of --spawn (default: the\n"
		     "               build tree's, else the installed libfasttime.so and\n"
		     "               fasttime-bench-empty.so)\n");
}

/* A number of seconds above 0 and up to max into *out; false, with a
 * message naming the option, when value is not one. */
static bool bench_parse_seconds(const char *option, const char *value, double max, double *out)
{
	char *end;
	double seconds;

	errno = 0;
	seconds = strtod(value, &end);
	if (errno || end == value || *end || !(seconds > 0) || seconds > max) {
		fprintf(stderr,
			"fasttime-bench: %s wants a number of seconds above 0 and up to %.0f, "
			"not '%s'\n",
			option, max, value);
		return false;
	}
	*out = seconds;
	return true;
}

/* Reads the options into bench_options; false, with a message, when they
 * are not usable. */
static bool bench_parse(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "threads", required_argument, NULL, 't' },
		{ "symbols", no_argument, NULL, 'y' },
		{ "csv", no_argument, NULL, 'c' },
		{ "trace", required_argument, NULL, 'r' },
		{ "startup", no_argument, NULL, 'u' },
		{ "idle", required_argument, NULL, 'i' },
		{ "after-fork", required_argument, NULL, 'f' },
		{ "spawn", no_argument, NULL, 'p' },
		{ "rounds", required_argument, NULL, 'R' },
		{ "library", required_argument, NULL, 'L' },
		{ "empty", required_argument, NULL, 'E' },
		{ "fork-loop", required_argument, NULL, 'F' },
		{ "fork-loop-reading", required_argument, NULL, 'G' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	while ((opt = getopt_long(argc, argv, "", longs, NULL)) != -1) {
		char *end;
		switch (opt) {
		case 's':
			if (!bench_parse_seconds("--seconds", optarg, 3600, &bench_options.seconds))
				return false;
			break;
		case 't': {
			unsigned long n = strtoul(optarg, &end, 10);
			if (*end || n < 1 || n > 256) {
				fprintf(stderr,
					"fasttime-bench: --threads wants 1 to 256, not '%s'\n",
					optarg);
				return false;
			}
			bench_options.threads = (unsigned)n;
			break;
		}
		case 'i':
			if (!bench_parse_seconds("--idle", optarg, 86400, &bench_options.idle))
				return false;
			break;
		case 'f':
			if (!bench_parse_seconds("--after-fork", optarg, 3600,
						 &bench_options.after_fork))
				return false;
			break;
		case 'R':
		case 'F':
		case 'G': {
			unsigned long n = strtoul(optarg, &end, 10);
			if (*optarg < '0' || *optarg > '9' || *end || n < 1 || n > 100000) {
				fprintf(stderr,
					"fasttime-bench: --%s wants 1 to 100000, not '%s'\n",
					opt == 'R'   ? "rounds"
					: opt == 'F' ? "fork-loop"
						     : "fork-loop-reading",
					optarg);
				return false;
			}
			if (opt == 'R')
				bench_options.rounds = (unsigned)n;
			else
				bench_options.fork_loop = (unsigned)n;
			if (opt == 'G')
				bench_options.fork_loop_reads = true;
			break;
		}
		case 'L': bench_options.library = optarg; break;
		case 'E': bench_options.empty = optarg; break;
		case 'p': bench_options.spawn = true; break;
		case 'u': bench_options.startup = true; break;
		case 'y': bench_options.symbols = true; break;
		case 'c': bench_options.csv = true; break;
		case 'r': bench_options.trace = optarg; break;
		case 'h': bench_usage(stdout); exit(0);
		default: bench_usage(stderr); return false;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "fasttime-bench: unexpected argument '%s'\n", argv[optind]);
		return false;
	}
	if ((bench_options.startup || bench_options.idle > 0) &&
	    (bench_options.symbols || bench_options.trace != NULL || bench_options.threads != 1)) {
		fprintf(stderr, "fasttime-bench: --startup and --idle take only --csv\n");
		return false;
	}
	if (bench_options.after_fork > 0 && !bench_options.symbols) {
		fprintf(stderr, "fasttime-bench: --after-fork needs --symbols\n");
		return false;
	}
	if (bench_options.startup && bench_options.idle > 0) {
		fprintf(stderr, "fasttime-bench: --startup and --idle cannot be combined\n");
		return false;
	}
	if (bench_options.spawn && (bench_options.startup || bench_options.idle > 0 ||
				    bench_options.symbols || bench_options.trace != NULL ||
				    bench_options.threads != 1 || bench_options.fork_loop > 0)) {
		fprintf(stderr, "fasttime-bench: --spawn takes only --rounds, --library, --empty "
				"and --csv\n");
		return false;
	}
	if (!bench_options.spawn &&
	    (bench_options.library != NULL || bench_options.empty != NULL)) {
		fprintf(stderr, "fasttime-bench: --library and --empty are --spawn's\n");
		return false;
	}
	return true;
}

/* Looks up a FASTTIME_* variable for settings_load. */
static const char *bench_getenv(const char *name)
{
	return getenv(name);
}

/* Reads the options and runs the mode they ask for; 2 after bad usage, 77
 * where the engine cannot run here. */
int main(int argc, char **argv)
{
	struct cpu_facts facts;
	struct settings settings;
	struct bench_library library = { .owner = NULL, .state = BENCH_LIBRARY_ABSENT };
	struct bench_result *results, merged;
	struct bench_trace trace = { 0 };
	FILE *trace_file = NULL;
	int status = 0;

	if (!bench_parse(argc, argv))
		return 2;
	if (!bench_libc_find()) {
		fprintf(stderr, "fasttime-bench: cannot find libc's own time functions\n");
		return 1;
	}
	/* Before anything here reads the clock: both time the library from
	 * its first call. */
	if (bench_options.startup)
		return bench_startup_run();
	if (bench_options.idle > 0)
		return bench_idle_run();
	if (bench_options.spawn)
		return bench_spawn_run();
	if (bench_options.fork_loop > 0)
		return bench_spawn_fork_loop(bench_options.fork_loop);
	if (bench_options.trace != NULL) {
		trace_file = fopen(bench_options.trace, "w");
		if (trace_file == NULL) {
			fprintf(stderr, "fasttime-bench: cannot write %s: %s\n",
				bench_options.trace, strerror(errno));
			return 1;
		}
	}
	/* FASTTIME_HWCAPS: measure as a machine without what this one has. */
	settings_load(&settings, bench_getenv, debug_write_line);
	cpu_hidden_hwcaps = settings.hidden_hwcaps;
	cpu_probe_instructions(&facts);
	cpu_probe_kernel(&facts);
	if (bench_options.symbols) {
		bench_library_find(&library);
		if (library.preloaded)
			bench_library_wait(&library);
		if (bench_options.after_fork > 0) {
			int child_status = bench_library_fork(&library, bench_options.after_fork);
			if (child_status >= 0)
				return child_status;
		}
	} else if (!bench_measure_start_engine(&facts)) {
		return 77;
	}

	results = calloc(bench_options.threads, sizeof *results);
	if (results == NULL)
		return 1;
	if (trace_file != NULL)
		results[0].trace = &trace;
	if (!bench_measure_run(results, bench_options.threads))
		return 1;

	if (bench_options.csv) {
		bench_measure_merge(&merged, results, bench_options.threads);
		bench_report_csv(&merged, results, bench_options.threads, &library);
	} else {
		bench_report_table(&facts, results, bench_options.threads, &library);
	}
	if (trace_file != NULL) {
		if (!bench_report_trace(trace_file, &trace) || fclose(trace_file) != 0) {
			fprintf(stderr, "fasttime-bench: cannot write %s\n", bench_options.trace);
			status = 1;
		}
	}
	free(trace.points);
	free(results);
	if (fflush(stdout) != 0)
		status = 1;
	return status;
}
