/* fasttime-bench: what each entry point costs here, from libc and from the
 * TSC in both modes, measured in the same run, alternating; per-call cost
 * percentiles; the error against libc and any backward step.
 *
 * By default the engine runs inside this process and each mode is called
 * directly. With --symbols the process's own clock_gettime and friends are
 * measured instead (run it under fasttime to measure the preloaded library
 * end to end) against libc's, found with dlopen(RTLD_NOLOAD). */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "cpu.h"
#include "histogram.h"
#include "libc.h"
#include "refresh.h"
#include "settings.h"
#include "table.h"

#define BENCH_BATCH 16u          /* calls per timed batch, for percentiles */
#define BENCH_LOOP_CALLS 20000u  /* calls per timed loop, for ns per call */

enum bench_source { BENCH_LIBC, BENCH_ORDERED, BENCH_RELAXED, BENCH_SYMBOL, BENCH_SOURCES };
static const char *const bench_source_names[BENCH_SOURCES] = { "libc", "ordered", "relaxed",
							       "process" };

enum bench_api { BENCH_MONOTONIC, BENCH_REALTIME, BENCH_GETTIMEOFDAY, BENCH_TIME,
		 BENCH_TIMESPEC_GET, BENCH_APIS };
static const char *const bench_api_names[BENCH_APIS] = {
	"clock_gettime(MONOTONIC)", "clock_gettime(REALTIME)", "gettimeofday", "time",
	"timespec_get(TIME_UTC)",
};

struct bench_options {
	double seconds;
	unsigned threads;
	bool symbols;      /* measure the process's symbols, not the engine */
	bool csv;
};

/* libc's own functions: in --symbols mode looked up in libc.so.6 itself,
 * which a preload cannot answer. */
static struct libc_time_functions bench_libc;

struct bench_result {
	double best_ns[BENCH_APIS][BENCH_SOURCES];
	struct histogram cost[BENCH_SOURCES];          /* MONOTONIC, tenths of ns */
	struct histogram error[BENCH_SOURCES][2];      /* |error| ns: MONOTONIC, REALTIME */
	uint64_t backward[BENCH_SOURCES];
	uint64_t error_samples[BENCH_SOURCES];
};

static struct bench_options bench_options = { .seconds = 3.0, .threads = 1 };
static double bench_ns_per_tick;

static void bench_consume(uint64_t value)
{
	__asm__ volatile("" : : "r"(value));
}

/* One call of api from source, returning something that depends on it. */
static inline __attribute__((always_inline)) uint64_t bench_call(enum bench_source source,
								  enum bench_api api)
{
	struct timespec ts = { 0, 0 };
	struct timeval tv = { 0, 0 };
	time_t t = 0;
	uint32_t flags = source == BENCH_RELAXED ? CLOCK_MODE_RELAXED : 0;

	switch (source) {
	case BENCH_LIBC:
		switch (api) {
		case BENCH_MONOTONIC: bench_libc.clock_gettime(CLOCK_MONOTONIC, &ts); break;
		case BENCH_REALTIME: bench_libc.clock_gettime(CLOCK_REALTIME, &ts); break;
		case BENCH_GETTIMEOFDAY: bench_libc.gettimeofday(&tv, NULL); break;
		case BENCH_TIME: t = bench_libc.time(NULL); break;
		case BENCH_TIMESPEC_GET: bench_libc.timespec_get(&ts, TIME_UTC); break;
		default: break;
		}
		break;
	case BENCH_SYMBOL:
		switch (api) {
		case BENCH_MONOTONIC: clock_gettime(CLOCK_MONOTONIC, &ts); break;
		case BENCH_REALTIME: clock_gettime(CLOCK_REALTIME, &ts); break;
		case BENCH_GETTIMEOFDAY: gettimeofday(&tv, NULL); break;
		case BENCH_TIME: t = time(NULL); break;
		case BENCH_TIMESPEC_GET: timespec_get(&ts, TIME_UTC); break;
		default: break;
		}
		break;
	default:
		switch (api) {
		case BENCH_MONOTONIC: clock_answer_monotonic(flags, &ts); break;
		case BENCH_REALTIME:
		case BENCH_TIMESPEC_GET: clock_answer_realtime(flags, &ts); break;
		case BENCH_GETTIMEOFDAY: clock_answer_timeval(flags, &tv); break;
		case BENCH_TIME: clock_answer_seconds(flags, &t); break;
		default: break;
		}
		break;
	}
	return (uint64_t)ts.tv_nsec + (uint64_t)tv.tv_usec + (uint64_t)t;
}

/* Specialised loops: the source and the api are constants inside each. */
#define BENCH_LOOP(source, api)                                                     \
	static __attribute__((noinline)) void bench_loop_##source##_##api(unsigned n) \
	{                                                                           \
		for (unsigned i = 0; i < n; i++)                                    \
			bench_consume(bench_call(source, api));                     \
	}
#define BENCH_LOOPS(source)                  \
	BENCH_LOOP(source, BENCH_MONOTONIC)    \
	BENCH_LOOP(source, BENCH_REALTIME)     \
	BENCH_LOOP(source, BENCH_GETTIMEOFDAY) \
	BENCH_LOOP(source, BENCH_TIME)         \
	BENCH_LOOP(source, BENCH_TIMESPEC_GET)
BENCH_LOOPS(BENCH_LIBC)
BENCH_LOOPS(BENCH_ORDERED)
BENCH_LOOPS(BENCH_RELAXED)
BENCH_LOOPS(BENCH_SYMBOL)

typedef void (*bench_loop_fn)(unsigned n);
#define BENCH_ROW(source)                                                         \
	{ bench_loop_##source##_BENCH_MONOTONIC, bench_loop_##source##_BENCH_REALTIME, \
	  bench_loop_##source##_BENCH_GETTIMEOFDAY, bench_loop_##source##_BENCH_TIME,  \
	  bench_loop_##source##_BENCH_TIMESPEC_GET }
static const bench_loop_fn bench_loops[BENCH_SOURCES][BENCH_APIS] = {
	BENCH_ROW(BENCH_LIBC), BENCH_ROW(BENCH_ORDERED), BENCH_ROW(BENCH_RELAXED),
	BENCH_ROW(BENCH_SYMBOL),
};

static uint64_t bench_mono_ns(void)
{
	struct timespec ts;

	bench_libc.clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * CLOCK_NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

static uint64_t bench_real_ns(void)
{
	struct timespec ts;

	bench_libc.clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * CLOCK_NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* Per-call cost of MONOTONIC in batches, into a histogram of tenths of ns. */
static void bench_batches(enum bench_source source, unsigned batches, struct histogram *h)
{
	for (unsigned b = 0; b < batches; b++) {
		uint64_t start = cpu_rdtsc();
		bench_loops[source][BENCH_MONOTONIC](BENCH_BATCH);
		uint64_t ticks = cpu_rdtsc() - start;
		histogram_add(h, (uint64_t)((double)ticks * bench_ns_per_tick * 10.0 / BENCH_BATCH));
	}
}

/* The source's reading of MONOTONIC or REALTIME, in ns. */
static uint64_t bench_read_ns(enum bench_source source, bool realtime)
{
	struct timespec ts = { 0, 0 };
	uint32_t flags = source == BENCH_RELAXED ? CLOCK_MODE_RELAXED : 0;
	clockid_t id = realtime ? CLOCK_REALTIME : CLOCK_MONOTONIC;

	if (source == BENCH_LIBC)
		bench_libc.clock_gettime(id, &ts);
	else if (source == BENCH_SYMBOL)
		clock_gettime(id, &ts);
	else if (realtime)
		clock_answer_realtime(flags, &ts);
	else
		clock_answer_monotonic(flags, &ts);
	return (uint64_t)ts.tv_sec * CLOCK_NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* Error against libc from sandwiches libc / source / libc, and backward
 * steps between consecutive readings of the source. */
static void bench_errors(enum bench_source source, unsigned samples, struct bench_result *r)
{
	uint64_t previous = 0;

	for (unsigned i = 0; i < samples; i++) {
		bool realtime = i & 1;
		uint64_t before = realtime ? bench_real_ns() : bench_mono_ns();
		uint64_t ours = bench_read_ns(source, realtime);
		uint64_t after = realtime ? bench_real_ns() : bench_mono_ns();
		uint64_t mono = realtime ? 0 : ours;
		int64_t error;

		if (!realtime) {
			if (mono < previous)
				r->backward[source]++;
			previous = mono;
		}
		/* An interrupted sandwich says nothing about the error. */
		if (after < before || after - before > 1000)
			continue;
		if (ours >= before && ours <= after)
			error = 0;
		else
			error = (int64_t)(ours - (before + (after - before) / 2));
		histogram_add(&r->error[source][realtime], (uint64_t)(error < 0 ? -error : error));
		r->error_samples[source]++;
	}
}

static bool bench_source_wanted(enum bench_source source)
{
	if (bench_options.symbols)
		return source == BENCH_LIBC || source == BENCH_SYMBOL;
	return source != BENCH_SYMBOL;
}

static void bench_run(struct bench_result *r)
{
	uint64_t deadline = bench_mono_ns() + (uint64_t)(bench_options.seconds * 1e9);
	unsigned rounds = 0;

	for (unsigned s = 0; s < BENCH_SOURCES; s++) {
		histogram_reset(&r->cost[s]);
		histogram_reset(&r->error[s][0]);
		histogram_reset(&r->error[s][1]);
		for (unsigned a = 0; a < BENCH_APIS; a++)
			r->best_ns[a][s] = 1e30;
	}
	/* Rounds alternate every source, so that the machine's moods fall on
	 * all of them alike; each loop's best round is kept. */
	do {
		for (unsigned a = 0; a < BENCH_APIS; a++) {
			for (unsigned s = 0; s < BENCH_SOURCES; s++) {
				uint64_t start;
				double ns;

				if (!bench_source_wanted(s))
					continue;
				start = bench_mono_ns();
				bench_loops[s][a](BENCH_LOOP_CALLS);
				ns = (double)(bench_mono_ns() - start) / BENCH_LOOP_CALLS;
				if (ns < r->best_ns[a][s])
					r->best_ns[a][s] = ns;
			}
		}
		for (unsigned s = 0; s < BENCH_SOURCES; s++) {
			if (!bench_source_wanted(s))
				continue;
			bench_batches(s, 2000, &r->cost[s]);
			bench_errors(s, 2000, r);
		}
		rounds++;
	} while (bench_mono_ns() < deadline || rounds < 3);
}

static void *bench_thread(void *arg)
{
	bench_run(arg);
	return NULL;
}

static void bench_print(const struct bench_result *r)
{
	enum bench_source fast[2];
	unsigned nfast = 0;

	for (unsigned s = BENCH_ORDERED; s < BENCH_SOURCES; s++)
		if (bench_source_wanted(s))
			fast[nfast++] = s;

	if (bench_options.csv) {
		printf("section,api,source,value,unit\n");
		for (unsigned a = 0; a < BENCH_APIS; a++)
			for (unsigned s = 0; s < BENCH_SOURCES; s++)
				if (bench_source_wanted(s))
					printf("cost,%s,%s,%.2f,ns/call\n", bench_api_names[a],
					       bench_source_names[s], r->best_ns[a][s]);
		for (unsigned s = 0; s < BENCH_SOURCES; s++) {
			static const double ps[] = { 50, 90, 99, 99.9, 99.99, 100 };
			if (!bench_source_wanted(s))
				continue;
			for (unsigned i = 0; i < 6; i++)
				printf("percentile,clock_gettime(MONOTONIC),%s,p%g=%.1f,ns/call\n",
				       bench_source_names[s], ps[i],
				       histogram_percentile(&r->cost[s], ps[i]) / 10.0);
			for (unsigned c = 0; c < 2; c++)
				printf("error,%s,%s,p50=%.0f p99=%.0f max=%" PRIu64 ",ns\n",
				       c ? "REALTIME" : "MONOTONIC", bench_source_names[s],
				       histogram_percentile(&r->error[s][c], 50),
				       histogram_percentile(&r->error[s][c], 99), r->error[s][c].max);
			printf("backward,MONOTONIC,%s,%" PRIu64 ",steps\n", bench_source_names[s],
			       r->backward[s]);
		}
		return;
	}

	printf("\nns per call (best loop of %u calls; ratio to libc in this run)\n",
	       BENCH_LOOP_CALLS);
	printf("%-26s %8s", "api", "libc");
	for (unsigned f = 0; f < nfast; f++)
		printf(" %10s %6s", bench_source_names[fast[f]], "ratio");
	printf("\n");
	for (unsigned a = 0; a < BENCH_APIS; a++) {
		printf("%-26s %8.2f", bench_api_names[a], r->best_ns[a][BENCH_LIBC]);
		for (unsigned f = 0; f < nfast; f++)
			printf(" %10.2f %6.2f", r->best_ns[a][fast[f]],
			       r->best_ns[a][fast[f]] / r->best_ns[a][BENCH_LIBC]);
		printf("\n");
	}

	printf("\nper-call cost of clock_gettime(MONOTONIC), ns (batches of %u)\n", BENCH_BATCH);
	printf("%-10s %8s %8s %8s %8s %8s %8s\n", "source", "p50", "p90", "p99", "p99.9",
	       "p99.99", "max");
	for (unsigned s = 0; s < BENCH_SOURCES; s++) {
		if (!bench_source_wanted(s))
			continue;
		printf("%-10s %8.1f %8.1f %8.1f %8.1f %8.1f %8.1f\n", bench_source_names[s],
		       histogram_percentile(&r->cost[s], 50) / 10.0,
		       histogram_percentile(&r->cost[s], 90) / 10.0,
		       histogram_percentile(&r->cost[s], 99) / 10.0,
		       histogram_percentile(&r->cost[s], 99.9) / 10.0,
		       histogram_percentile(&r->cost[s], 99.99) / 10.0,
		       (double)r->cost[s].max / 10.0);
	}

	printf("\nerror against libc, ns (|reading - libc sandwich midpoint|; 0 inside the "
	       "sandwich)\n");
	printf("%-10s %-10s %8s %8s %8s %10s %9s\n", "source", "clock", "p50", "p99", "max",
	       "samples", "backward");
	for (unsigned s = 0; s < BENCH_SOURCES; s++) {
		if (!bench_source_wanted(s))
			continue;
		for (unsigned c = 0; c < 2; c++)
			printf("%-10s %-10s %8.0f %8.0f %8" PRIu64 " %10" PRIu64 " %9s\n",
			       bench_source_names[s], c ? "REALTIME" : "MONOTONIC",
			       histogram_percentile(&r->error[s][c], 50),
			       histogram_percentile(&r->error[s][c], 99), r->error[s][c].max,
			       r->error[s][c].total, c ? "-" : "");
		printf("%-10s %-10s %48" PRIu64 "\n", "", "backward steps", r->backward[s]);
	}
}

static void bench_usage(FILE *out)
{
	fprintf(out,
		"Usage: fasttime-bench [--seconds S] [--threads T] [--symbols] [--csv]\n"
		"Measures clock_gettime, gettimeofday, time and timespec_get from libc and\n"
		"from the TSC (ordered and relaxed) in one run.\n"
		"  --seconds S  how long to measure (default 3)\n"
		"  --threads T  measure in T threads at once (default 1)\n"
		"  --symbols    measure this process's own functions (run it under fasttime)\n"
		"               against libc's, instead of the engine's modes\n"
		"  --csv        machine-readable output\n");
}

static bool bench_parse(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "seconds", required_argument, NULL, 's' }, { "threads", required_argument, NULL, 't' },
		{ "symbols", no_argument, NULL, 'y' },       { "csv", no_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },          { NULL, 0, NULL, 0 },
	};
	int opt;

	while ((opt = getopt_long(argc, argv, "", longs, NULL)) != -1) {
		char *end;
		switch (opt) {
		case 's':
			errno = 0;
			bench_options.seconds = strtod(optarg, &end);
			if (errno || *end || bench_options.seconds <= 0 || bench_options.seconds > 3600) {
				fprintf(stderr, "fasttime-bench: --seconds wants a number from 0 to 3600, not '%s'\n", optarg);
				return false;
			}
			break;
		case 't': {
			unsigned long n = strtoul(optarg, &end, 10);
			if (*end || n < 1 || n > 256) {
				fprintf(stderr, "fasttime-bench: --threads wants 1 to 256, not '%s'\n", optarg);
				return false;
			}
			bench_options.threads = (unsigned)n;
			break;
		}
		case 'y': bench_options.symbols = true; break;
		case 'c': bench_options.csv = true; break;
		case 'h': bench_usage(stdout); exit(0);
		default: bench_usage(stderr); return false;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "fasttime-bench: unexpected argument '%s'\n", argv[optind]);
		return false;
	}
	return true;
}

/* libc's own functions, from libc.so.6 itself. */
static bool bench_find_libc(void)
{
	void *libc = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_NOW);

	if (libc == NULL)
		return false;
	bench_libc.clock_gettime = (int (*)(clockid_t, struct timespec *))dlsym(libc, "clock_gettime");
	bench_libc.gettimeofday = (int (*)(struct timeval *, void *))dlsym(libc, "gettimeofday");
	bench_libc.time = (time_t(*)(time_t *))dlsym(libc, "time");
	bench_libc.timespec_get = (int (*)(struct timespec *, int))dlsym(libc, "timespec_get");
	return bench_libc.clock_gettime && bench_libc.gettimeofday && bench_libc.time &&
	       bench_libc.timespec_get;
}

/* Starts the engine in this process and waits for every CPU's line. */
static bool bench_start_engine(void)
{
	struct settings settings = { .interval_ms = SETTINGS_DEFAULT_INTERVAL_MS };
	struct cpu_facts facts;

	cpu_probe_instructions(&facts);
	cpu_probe_kernel(&facts);
	if (cpu_unusable_reason(&facts) != NULL) {
		fprintf(stderr, "fasttime-bench: the fast path cannot run here: %s\n",
			cpu_unusable_reason(&facts));
		return false;
	}
	libc_resolve();
	refresh_configure(&settings, &facts);
	if (!refresh_calibrate_now())
		return false;
	refresh_ensure_started();
	return true;
}

static double bench_find_ns_per_tick(void)
{
	uint64_t t0 = bench_mono_ns(), c0 = cpu_rdtsc();
	while (bench_mono_ns() - t0 < 20000000u)
		;
	return (double)(bench_mono_ns() - t0) / (double)(cpu_rdtsc() - c0);
}

int main(int argc, char **argv)
{
	struct cpu_facts facts;
	struct bench_result *results;
	pthread_t threads[256];

	if (!bench_parse(argc, argv))
		return 2;
	if (!bench_find_libc()) {
		fprintf(stderr, "fasttime-bench: cannot find libc's own time functions\n");
		return 1;
	}
	cpu_probe_instructions(&facts);
	cpu_probe_kernel(&facts);
	if (!bench_options.symbols && !bench_start_engine())
		return 77;
	bench_ns_per_tick = bench_find_ns_per_tick();

	results = calloc(bench_options.threads, sizeof *results);
	if (results == NULL)
		return 1;
	for (unsigned t = 0; t < bench_options.threads; t++)
		pthread_create(&threads[t], NULL, bench_thread, &results[t]);
	for (unsigned t = 0; t < bench_options.threads; t++)
		pthread_join(threads[t], NULL);

	if (!bench_options.csv) {
		printf("fasttime-bench %s: %s, %ld CPUs, clocksource %s, %u thread(s), %.1f s%s\n",
		       PACKAGE_VERSION, facts.brand, sysconf(_SC_NPROCESSORS_ONLN), facts.clocksource,
		       bench_options.threads, bench_options.seconds,
		       bench_options.symbols ? ", measuring this process's symbols" : "");
	}
	for (unsigned t = 0; t < bench_options.threads; t++) {
		if (bench_options.threads > 1 && !bench_options.csv)
			printf("\n== thread %u\n", t + 1);
		bench_print(&results[t]);
	}
	free(results);
	return 0;
}
