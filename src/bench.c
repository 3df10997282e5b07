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
 * sleeps, measuring the refresh thread's CPU time and the process's memory. */
#include "config.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
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

/* BOOTTIME is a clock the library never answers: in --symbols mode it shows
 * what passing through the library costs. The engine has no answer for it. */
enum bench_api { BENCH_MONOTONIC, BENCH_REALTIME, BENCH_GETTIMEOFDAY, BENCH_TIME,
		 BENCH_TIMESPEC_GET, BENCH_BOOTTIME, BENCH_APIS };
static const char *const bench_api_names[BENCH_APIS] = {
	"clock_gettime(MONOTONIC)", "clock_gettime(REALTIME)", "gettimeofday", "time",
	"timespec_get(TIME_UTC)", "clock_gettime(BOOTTIME)",
};

/* The bare counter reads, the floor under each mode's read path. */
enum bench_bare { BENCH_BARE_RDTSC, BENCH_BARE_RDTSCP, BENCH_BARES };
static const char *const bench_bare_names[BENCH_BARES] = { "rdtsc", "rdtscp" };

struct bench_options {
	double seconds;
	unsigned threads;
	bool symbols;      /* measure the process's symbols, not the engine */
	bool csv;
	const char *trace; /* file for the error over time, or NULL */
	bool startup;      /* time the preloaded library's start */
	double idle;       /* seconds to sleep with the clock called once, or 0 */
};

/* One round's MONOTONIC sandwiches of one source, for --trace. */
struct bench_trace_point {
	double seconds;          /* since the measurement started */
	enum bench_source source;
	double offset_ns;        /* median of reading - sandwich midpoint */
	uint64_t error_ns;       /* the round's largest error (0 inside a sandwich) */
};

struct bench_trace {
	struct bench_trace_point *points;
	size_t count, capacity;
	uint64_t start_ns;
	bool full;               /* out of memory: the rest is not recorded */
};

/* libc's own functions: in --symbols mode looked up in libc.so.6 itself,
 * which a preload cannot answer. */
static struct libc_time_functions bench_libc;

struct bench_result {
	double best_ns[BENCH_APIS][BENCH_SOURCES];
	double bare_ns[BENCH_BARES];                   /* engine mode only */
	struct histogram cost[BENCH_SOURCES];          /* MONOTONIC, tenths of ns */
	struct histogram error[BENCH_SOURCES][2];      /* |error| ns: MONOTONIC, REALTIME */
	uint64_t backward[BENCH_SOURCES];
	unsigned rounds;
	struct bench_trace *trace;                     /* the first thread's only */
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
		case BENCH_BOOTTIME: bench_libc.clock_gettime(CLOCK_BOOTTIME, &ts); break;
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
		case BENCH_BOOTTIME: clock_gettime(CLOCK_BOOTTIME, &ts); break;
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
	BENCH_LOOP(source, BENCH_TIMESPEC_GET) \
	BENCH_LOOP(source, BENCH_BOOTTIME)
BENCH_LOOPS(BENCH_LIBC)
BENCH_LOOPS(BENCH_ORDERED)
BENCH_LOOPS(BENCH_RELAXED)
BENCH_LOOPS(BENCH_SYMBOL)

typedef void (*bench_loop_fn)(unsigned n);
#define BENCH_ROW(source)                                                         \
	{ bench_loop_##source##_BENCH_MONOTONIC, bench_loop_##source##_BENCH_REALTIME, \
	  bench_loop_##source##_BENCH_GETTIMEOFDAY, bench_loop_##source##_BENCH_TIME,  \
	  bench_loop_##source##_BENCH_TIMESPEC_GET, bench_loop_##source##_BENCH_BOOTTIME }
static const bench_loop_fn bench_loops[BENCH_SOURCES][BENCH_APIS] = {
	BENCH_ROW(BENCH_LIBC), BENCH_ROW(BENCH_ORDERED), BENCH_ROW(BENCH_RELAXED),
	BENCH_ROW(BENCH_SYMBOL),
};

/* The instruction alone, its result consumed as the clock loops consume
 * theirs: what no read path built on it can beat. */
static __attribute__((noinline)) void bench_loop_rdtsc(unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		bench_consume(cpu_rdtsc());
}

static __attribute__((noinline)) void bench_loop_rdtscp(unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		uint32_t aux;
		uint64_t tsc = cpu_rdtscp(&aux);
		/* The ordered read uses both outputs: so does its floor. */
		bench_consume(tsc + aux);
	}
}

static const bench_loop_fn bench_bare_loops[BENCH_BARES] = { bench_loop_rdtsc, bench_loop_rdtscp };

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
		double tenths = (double)ticks * bench_ns_per_tick * 10.0 / BENCH_BATCH;
		histogram_add(h, (uint64_t)tenths);
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

static int bench_compare_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Appends one round's point; the memory is taken between timed loops. */
static void bench_trace_add(struct bench_trace *trace, enum bench_source source, double *offsets,
			    unsigned n, uint64_t worst)
{
	struct bench_trace_point *point;

	if (n == 0 || trace->full)
		return;
	if (trace->count == trace->capacity) {
		size_t capacity = trace->capacity ? 2 * trace->capacity : 1024;
		void *grown = realloc(trace->points, capacity * sizeof *trace->points);
		if (grown == NULL) {
			trace->full = true;
			return;
		}
		trace->points = grown;
		trace->capacity = capacity;
	}
	qsort(offsets, n, sizeof *offsets, bench_compare_double);
	point = &trace->points[trace->count++];
	point->seconds = (double)(bench_mono_ns() - trace->start_ns) / 1e9;
	point->source = source;
	point->offset_ns = n % 2 ? offsets[n / 2] : (offsets[n / 2 - 1] + offsets[n / 2]) / 2;
	point->error_ns = worst;
}

/* Error against libc from sandwiches libc / source / libc, and backward
 * steps between consecutive readings of the source. */
static void bench_errors(enum bench_source source, unsigned samples, struct bench_result *r)
{
	uint64_t previous = 0, worst = 0;
	/* Where the readings fall inside the sandwiches shows a slow drift that
	 * the error, 0 inside a sandwich, hides: kept for the trace. */
	double offsets[1024];
	unsigned noffsets = 0;
	bool tracing = r->trace != NULL && source != BENCH_LIBC;

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
		if (tracing && !realtime && noffsets < sizeof offsets / sizeof offsets[0]) {
			offsets[noffsets++] = (double)(int64_t)(ours - before) -
					      (double)(after - before) / 2;
			if ((uint64_t)(error < 0 ? -error : error) > worst)
				worst = (uint64_t)(error < 0 ? -error : error);
		}
	}
	if (tracing)
		bench_trace_add(r->trace, source, offsets, noffsets, worst);
}

static bool bench_source_wanted(enum bench_source source)
{
	if (bench_options.symbols)
		return source == BENCH_LIBC || source == BENCH_SYMBOL;
	return source != BENCH_SYMBOL;
}

/* BOOTTIME only where the process's own function is measured: the engine
 * does not answer it. */
static bool bench_api_wanted(enum bench_api api)
{
	return api != BENCH_BOOTTIME || bench_options.symbols;
}

/* ns per call of one loop of BENCH_LOOP_CALLS calls. */
static double bench_time_loop(bench_loop_fn loop)
{
	uint64_t start = bench_mono_ns();

	loop(BENCH_LOOP_CALLS);
	return (double)(bench_mono_ns() - start) / BENCH_LOOP_CALLS;
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
	for (unsigned b = 0; b < BENCH_BARES; b++)
		r->bare_ns[b] = 1e30;
	/* Rounds alternate every source, so that the machine's moods fall on
	 * all of them alike; each loop's best round is kept. The bare
	 * instructions run beside every API, so that the floor gets as many
	 * chances at its best as the read paths it is compared with. */
	do {
		for (unsigned a = 0; a < BENCH_APIS; a++) {
			if (!bench_api_wanted(a))
				continue;
			for (unsigned s = 0; s < BENCH_SOURCES; s++) {
				double ns;

				if (!bench_source_wanted(s))
					continue;
				ns = bench_time_loop(bench_loops[s][a]);
				if (ns < r->best_ns[a][s])
					r->best_ns[a][s] = ns;
			}
			for (unsigned b = 0; b < BENCH_BARES && !bench_options.symbols; b++) {
				double ns = bench_time_loop(bench_bare_loops[b]);
				if (ns < r->bare_ns[b])
					r->bare_ns[b] = ns;
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
	r->rounds = rounds;
}

static void *bench_thread(void *arg)
{
	bench_run(arg);
	return NULL;
}

/* The threads' results as one: each loop's best averaged over the threads
 * (what a typical thread saw), the histograms and counts added up. */
static void bench_merge(struct bench_result *into, const struct bench_result *results,
			unsigned n)
{
	*into = results[0];
	into->trace = NULL;
	for (unsigned t = 1; t < n; t++) {
		for (unsigned s = 0; s < BENCH_SOURCES; s++) {
			for (unsigned a = 0; a < BENCH_APIS; a++)
				into->best_ns[a][s] += results[t].best_ns[a][s];
			histogram_merge(&into->cost[s], &results[t].cost[s]);
			histogram_merge(&into->error[s][0], &results[t].error[s][0]);
			histogram_merge(&into->error[s][1], &results[t].error[s][1]);
			into->backward[s] += results[t].backward[s];
		}
		for (unsigned b = 0; b < BENCH_BARES; b++)
			into->bare_ns[b] += results[t].bare_ns[b];
		into->rounds += results[t].rounds;
	}
	for (unsigned s = 0; s < BENCH_SOURCES; s++)
		for (unsigned a = 0; a < BENCH_APIS; a++)
			into->best_ns[a][s] /= n;
	for (unsigned b = 0; b < BENCH_BARES; b++)
		into->bare_ns[b] /= n;
}

/* Whether the engine's read path for api is compared with the floor: the
 * entry points that read the counter (time() does too, but libc answers it
 * from a coarse clock no read can match). */
static bool bench_api_has_floor(enum bench_api api)
{
	return api != BENCH_TIME && api != BENCH_BOOTTIME;
}

/* One figure per line, every value in ns unless the metric says otherwise:
 * the comparison script reads these by name. */
static void bench_print_csv(const struct bench_result *r)
{
	/* Enough points for a percentile curve; the table picks its own. */
	static const double curve[] = { 1,  5,    10,   20,    25,    30,     40,
					50, 60,   70,   75,    80,    90,     95,
					97, 99, 99.5, 99.9, 99.95, 99.99, 99.995, 99.999 };
	static const char *const clock_api[2] = { "clock_gettime(MONOTONIC)",
						  "clock_gettime(REALTIME)" };

	printf("source,api,metric,value\n");
	for (unsigned s = 0; s < BENCH_SOURCES; s++) {
		const char *name = bench_source_names[s];
		const struct histogram *cost = &r->cost[s];

		if (!bench_source_wanted(s))
			continue;
		for (unsigned a = 0; a < BENCH_APIS; a++)
			if (bench_api_wanted(a))
				printf("%s,%s,ns_per_call,%.2f\n", name, bench_api_names[a],
				       r->best_ns[a][s]);
		for (unsigned i = 0; i < sizeof curve / sizeof curve[0]; i++)
			printf("%s,%s,cost_p%g_ns,%.1f\n", name, clock_api[0], curve[i],
			       histogram_percentile(cost, curve[i]) / 10.0);
		printf("%s,%s,cost_max_ns,%.1f\n", name, clock_api[0], (double)cost->max / 10.0);
		printf("%s,%s,cost_mean_ns,%.1f\n", name, clock_api[0],
		       cost->total ? cost->sum / (double)cost->total / 10.0 : 0.0);
		printf("%s,%s,cost_batches,%" PRIu64 "\n", name, clock_api[0], cost->total);
		for (unsigned c = 0; c < 2; c++) {
			const struct histogram *error = &r->error[s][c];
			printf("%s,%s,error_p50_ns,%.0f\n", name, clock_api[c],
			       histogram_percentile(error, 50));
			printf("%s,%s,error_p99_ns,%.0f\n", name, clock_api[c],
			       histogram_percentile(error, 99));
			printf("%s,%s,error_max_ns,%" PRIu64 "\n", name, clock_api[c], error->max);
			printf("%s,%s,error_samples,%" PRIu64 "\n", name, clock_api[c],
			       error->total);
		}
		printf("%s,%s,backward_steps,%" PRIu64 "\n", name, clock_api[0], r->backward[s]);
	}
	if (bench_options.symbols)
		return;
	/* The floor, and each mode's distance from it and ratio to libc, all
	 * from this run's rounds. */
	for (unsigned b = 0; b < BENCH_BARES; b++)
		printf("%s,-,ns_per_call,%.2f\n", bench_bare_names[b], r->bare_ns[b]);
	for (unsigned a = 0; a < BENCH_APIS; a++) {
		if (!bench_api_has_floor(a))
			continue;
		printf("relaxed,%s,minus_rdtsc_ns,%.2f\n", bench_api_names[a],
		       r->best_ns[a][BENCH_RELAXED] - r->bare_ns[BENCH_BARE_RDTSC]);
		printf("ordered,%s,minus_rdtscp_ns,%.2f\n", bench_api_names[a],
		       r->best_ns[a][BENCH_ORDERED] - r->bare_ns[BENCH_BARE_RDTSCP]);
		for (unsigned s = BENCH_ORDERED; s <= BENCH_RELAXED; s++)
			printf("%s,%s,ratio_to_libc,%.3f\n", bench_source_names[s],
			       bench_api_names[a], r->best_ns[a][s] / r->best_ns[a][BENCH_LIBC]);
	}
}

/* Each thread's own ns per call, beside the merged figures: whether two
 * threads reading at once each pay what one pays alone. */
static void bench_print_csv_threads(const struct bench_result *results, unsigned n)
{
	for (unsigned t = 0; t < n; t++) {
		for (unsigned s = 0; s < BENCH_SOURCES; s++) {
			if (!bench_source_wanted(s))
				continue;
			for (unsigned a = 0; a < BENCH_APIS; a++)
				if (bench_api_wanted(a))
					printf("%s,%s,thread%u_ns_per_call,%.2f\n",
					       bench_source_names[s], bench_api_names[a], t + 1,
					       results[t].best_ns[a][s]);
		}
	}
}

static void bench_print(const struct bench_result *r)
{
	enum bench_source fast[2];
	unsigned nfast = 0;

	for (unsigned s = BENCH_ORDERED; s < BENCH_SOURCES; s++)
		if (bench_source_wanted(s))
			fast[nfast++] = s;

	printf("\nns per call (best loop of %u calls; ratio to libc in this run)\n",
	       BENCH_LOOP_CALLS);
	printf("%-26s %8s", "api", "libc");
	for (unsigned f = 0; f < nfast; f++)
		printf(" %10s %6s", bench_source_names[fast[f]], "ratio");
	printf("\n");
	for (unsigned a = 0; a < BENCH_APIS; a++) {
		if (!bench_api_wanted(a))
			continue;
		printf("%-26s %8.2f", bench_api_names[a], r->best_ns[a][BENCH_LIBC]);
		for (unsigned f = 0; f < nfast; f++)
			printf(" %10.2f %6.2f", r->best_ns[a][fast[f]],
			       r->best_ns[a][fast[f]] / r->best_ns[a][BENCH_LIBC]);
		printf("\n");
	}

	if (!bench_options.symbols) {
		printf("\nagainst the bare instruction (best loop of each, same rounds): "
		       "rdtsc %.2f ns, rdtscp %.2f ns\n",
		       r->bare_ns[BENCH_BARE_RDTSC], r->bare_ns[BENCH_BARE_RDTSCP]);
		printf("%-26s %14s %14s\n", "api", "relaxed-rdtsc", "ordered-rdtscp");
		for (unsigned a = 0; a < BENCH_APIS; a++)
			if (bench_api_has_floor(a))
				printf("%-26s %14.2f %14.2f\n", bench_api_names[a],
				       r->best_ns[a][BENCH_RELAXED] - r->bare_ns[BENCH_BARE_RDTSC],
				       r->best_ns[a][BENCH_ORDERED] -
					   r->bare_ns[BENCH_BARE_RDTSCP]);
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
		"                      [--trace FILE]\n"
		"       fasttime --debug fasttime-bench --startup [--csv]\n"
		"       fasttime fasttime-bench --idle S [--csv]\n"
		"Measures clock_gettime, gettimeofday, time and timespec_get from libc and\n"
		"from the TSC (ordered and relaxed) in one run, with a bare rdtsc and a bare\n"
		"rdtscp loop in the same rounds.\n"
		"  --seconds S  how long to measure (default 3)\n"
		"  --threads T  measure in T threads at once (default 1)\n"
		"  --symbols    measure this process's own functions (run it under fasttime)\n"
		"               against libc's, instead of the engine's modes; adds\n"
		"               clock_gettime(BOOTTIME), which the library passes through\n"
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
		"               them, the process's resident memory and the thread's stack\n");
}

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
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	while ((opt = getopt_long(argc, argv, "", longs, NULL)) != -1) {
		char *end;
		switch (opt) {
		case 's':
			errno = 0;
			bench_options.seconds = strtod(optarg, &end);
			if (errno || *end || bench_options.seconds <= 0 ||
			    bench_options.seconds > 3600) {
				fprintf(stderr,
					"fasttime-bench: --seconds wants a number above 0 "
					"and up to 3600, not '%s'\n",
					optarg);
				return false;
			}
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
			errno = 0;
			bench_options.idle = strtod(optarg, &end);
			if (errno || *end || bench_options.idle <= 0 || bench_options.idle > 86400) {
				fprintf(stderr,
					"fasttime-bench: --idle wants a number of seconds above 0 "
					"and up to 86400, not '%s'\n",
					optarg);
				return false;
			}
			break;
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
	if (bench_options.startup && bench_options.idle > 0) {
		fprintf(stderr, "fasttime-bench: --startup and --idle cannot be combined\n");
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
	bench_libc.clock_gettime =
		(int (*)(clockid_t, struct timespec *))dlsym(libc, "clock_gettime");
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

/* The file whose clock_gettime this process calls: libc.so.6 natively,
 * libfasttime.so under fasttime, a sanitizer's runtime where it intercepts
 * the call. Comparing the address with libc's would take an interceptor for
 * the library. */
static const char *bench_symbol_owner(void)
{
	void *symbol = dlsym(RTLD_DEFAULT, "clock_gettime");
	const char *slash;
	Dl_info info;

	if (symbol == NULL || dladdr(symbol, &info) == 0 || info.dli_fname == NULL ||
	    info.dli_fname[0] == '\0')
		return "unknown";
	slash = strrchr(info.dli_fname, '/');
	return slash != NULL ? slash + 1 : info.dli_fname;
}

/* The thread id of the library's refresh thread (named "fasttime"), or 0
 * when this process has no such thread. */
static long bench_library_tid(void)
{
	DIR *tasks = opendir("/proc/self/task");
	struct dirent *task;
	long tid = 0;

	if (tasks == NULL)
		return 0;
	while (tid == 0 && (task = readdir(tasks)) != NULL) {
		char path[300], line[64];
		FILE *f;

		if (task->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "/proc/self/task/%s/comm", task->d_name);
		f = fopen(path, "r");
		if (f == NULL)
			continue;
		if (fgets(line, sizeof line, f) != NULL && strcmp(line, "fasttime\n") == 0)
			tid = strtol(task->d_name, NULL, 10);
		fclose(f);
	}
	closedir(tasks);
	return tid;
}

/* The state letter of the library's refresh thread from /proc, or 0 when
 * this process has no such thread. */
static char bench_library_thread_state(void)
{
	long tid = bench_library_tid();
	char path[64], line[512], *paren;
	char state = 0;
	FILE *f;

	if (tid == 0)
		return 0;
	snprintf(path, sizeof path, "/proc/self/task/%ld/stat", tid);
	f = fopen(path, "r");
	if (f == NULL)
		return 0;
	/* "tid (comm) S ...": the state follows the last parenthesis. */
	if (fgets(line, sizeof line, f) != NULL && (paren = strrchr(line, ')')) != NULL &&
	    paren[1] == ' ')
		state = paren[2];
	fclose(f);
	return state;
}

enum bench_library_state { BENCH_LIBRARY_READY, BENCH_LIBRARY_ABSENT, BENCH_LIBRARY_BUSY };
static const char *const bench_library_state_names[] = { "ready", "absent", "busy" };

/* Under the preload the process's functions answer with libc until the
 * library's refresh thread has calibrated the CPUs and chosen its entry
 * points: measuring that start would mix libc's cost into the library's.
 * The thread sleeps between rounds, so once it is seen asleep a few
 * milliseconds in a row its first round (and the choice) is over. No
 * thread, or one that ended: the library is off here and answers with libc
 * (fasttime --debug says why). A thread that never rests: measure anyway,
 * and say so. *waited_ms says how long this took. */
static enum bench_library_state bench_wait_for_library(double *waited_ms)
{
	const struct timespec poll = { 0, 1000000 };
	uint64_t start = bench_mono_ns(), waited;
	enum bench_library_state result;
	unsigned asleep = 0;
	bool seen = false;
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts); /* the first call starts the thread */
	for (;;) {
		char state = bench_library_thread_state();

		waited = bench_mono_ns() - start;
		asleep = state == 'S' ? asleep + 1 : 0;
		if (asleep >= 3) {
			result = BENCH_LIBRARY_READY;
			break;
		}
		if (state == 0 && (seen || waited > 500000000u)) {
			result = BENCH_LIBRARY_ABSENT;
			break;
		}
		if (waited > 5000000000u) {
			result = BENCH_LIBRARY_BUSY;
			break;
		}
		seen = seen || state != 0;
		nanosleep(&poll, NULL);
	}
	*waited_ms = (double)waited / 1e6;
	return result;
}

/* The CPUs this process may run on. */
static unsigned bench_allowed_cpus(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof set, &set) != 0)
		return 0;
	return (unsigned)CPU_COUNT(&set);
}

/* Whether the process's clock_gettime is the preloaded library's. */
static bool bench_is_preloaded(const char *owner)
{
	return strncmp(owner, "libfasttime", 11) == 0;
}

static const char *bench_getenv(const char *name)
{
	return getenv(name);
}

/* The library has warned about its settings already. */
static void bench_ignore_warning(const char *line)
{
	(void)line;
}

/* One library debug line as the start-up timing saw it. */
struct bench_startup_line {
	double ms;          /* since just before the first time call */
	char text[200];
};

#define BENCH_STARTUP_LINES 64u
#define BENCH_STARTUP_TIMEOUT_NS 5000000000ull

/* "fasttime: API: libc X ns, fasttime Y ns: fast|libc", the library's
 * per-API decision: the API's name into api and whether it went fast. */
static bool bench_startup_decision(const char *text, char *api, size_t size, bool *fast)
{
	const char *libc = strstr(text, ": libc ");
	size_t n = strlen(text);

	if (strncmp(text, "fasttime: ", 10) != 0 || libc == NULL ||
	    strstr(libc, " ns, fasttime ") == NULL || n < 6)
		return false;
	if (strcmp(text + n - 6, ": fast") == 0)
		*fast = true;
	else if (strcmp(text + n - 6, ": libc") == 0)
		*fast = false;
	else
		return false;
	snprintf(api, size, "%.*s", (int)(libc - text - 10), text + 10);
	return true;
}

/* How long after the first time call the fast path is active: the library
 * says so only through its FASTTIME_DEBUG lines, so they are read through a
 * pipe put on stderr before that call and stamped with libc's own clock as
 * they arrive (at most a few microseconds late: the pipe is polled between
 * short bursts of calls). Meanwhile this thread keeps calling the clock, as
 * a program that times things from its first instruction would. */
static int bench_startup(void)
{
	struct bench_startup_line lines[BENCH_STARTUP_LINES];
	const char *owner = bench_symbol_owner();
	unsigned nlines = 0, first_lines = 0, decisions = 0, fast = 0;
	unsigned allowed = bench_allowed_cpus();
	double thread_ms = -1, all_lines_ms = -1, decision_ms = -1;
	const char *outcome = "timeout";
	char buffer[4096], api[64];
	size_t used = 0;
	uint64_t start, first_call_ns;
	int fds[2], saved;
	struct settings settings;
	struct timespec ts;
	bool is_fast;

	settings_load(&settings, bench_getenv, bench_ignore_warning);
	if (!bench_is_preloaded(owner)) {
		fprintf(stderr, "fasttime-bench: --startup wants the library preloaded "
				"(fasttime --debug fasttime-bench --startup)\n");
		return 2;
	}
	if (!settings.debug) {
		fprintf(stderr, "fasttime-bench: --startup reads the library's debug lines: "
				"run it with FASTTIME_DEBUG=1 (fasttime --debug)\n");
		return 2;
	}
	if (pipe(fds) != 0 || fcntl(fds[0], F_SETFL, O_NONBLOCK) != 0 ||
	    (saved = dup(STDERR_FILENO)) < 0 || dup2(fds[1], STDERR_FILENO) < 0) {
		fprintf(stderr, "fasttime-bench: cannot catch the library's output: %s\n",
			strerror(errno));
		return 1;
	}
	close(fds[1]);

	start = bench_mono_ns();
	clock_gettime(CLOCK_MONOTONIC, &ts);
	first_call_ns = bench_mono_ns() - start;
	bench_consume((uint64_t)ts.tv_nsec);
	for (;;) {
		ssize_t n;
		char *line, *newline;
		double ms;

		for (unsigned i = 0; i < 64; i++) {
			clock_gettime(CLOCK_MONOTONIC, &ts);
			bench_consume((uint64_t)ts.tv_nsec);
		}
		if (bench_mono_ns() - start > BENCH_STARTUP_TIMEOUT_NS)
			break;
		n = read(fds[0], buffer + used, sizeof buffer - 1 - used);
		if (n <= 0)
			continue;
		ms = (double)(bench_mono_ns() - start) / 1e6;
		used += (size_t)n;
		buffer[used] = '\0';
		line = buffer;
		while ((newline = strchr(line, '\n')) != NULL) {
			*newline = '\0';
			if (nlines < BENCH_STARTUP_LINES) {
				lines[nlines].ms = ms;
				snprintf(lines[nlines].text, sizeof lines[nlines].text, "%s", line);
				nlines++;
			}
			if (strstr(line, ": refresh thread started") != NULL && thread_ms < 0)
				thread_ms = ms;
			if (strstr(line, ": first line, ") != NULL && ++first_lines == allowed)
				all_lines_ms = ms;
			if (bench_startup_decision(line, api, sizeof api, &is_fast)) {
				fast += is_fast;
				if (++decisions == API_CHOICE_COUNT) {
					decision_ms = ms;
					outcome = "decided";
				}
			}
			if (strstr(line, "not starting") != NULL ||
			    strstr(line, "cannot start") != NULL ||
			    strstr(line, "answering with libc from now on") != NULL)
				outcome = "not started";
			line = newline + 1;
		}
		/* A partial line waits for its end; a line longer than the
		 * buffer is dropped. */
		used = strlen(line);
		memmove(buffer, line, used + 1);
		if (used == sizeof buffer - 1)
			used = 0;
		if (strcmp(outcome, "timeout") != 0)
			break;
	}
	/* Later debug lines go where fasttime --debug sends them. */
	dup2(saved, STDERR_FILENO);
	close(saved);
	close(fds[0]);

	if (bench_options.csv) {
		printf("source,api,metric,value\n");
		printf("startup,-,first_call_us,%.1f\n", (double)first_call_ns / 1e3);
		printf("startup,-,allowed_cpus,%u\n", allowed);
		if (thread_ms >= 0)
			printf("startup,-,thread_started_ms,%.3f\n", thread_ms);
		if (all_lines_ms >= 0)
			printf("startup,-,all_first_lines_ms,%.3f\n", all_lines_ms);
		for (unsigned i = 0; i < nlines; i++) {
			char cpu[32];
			if (sscanf(lines[i].text, "fasttime: cpu %31[0-9]: first line,", cpu) == 1)
				printf("startup,cpu%s,first_line_ms,%.3f\n", cpu, lines[i].ms);
			if (bench_startup_decision(lines[i].text, api, sizeof api, &is_fast))
				printf("startup,%s,decision,%s\n", api, is_fast ? "fast" : "libc");
		}
		if (decision_ms >= 0)
			printf("startup,-,decision_ms,%.3f\n", decision_ms);
		printf("startup,-,fast_apis,%u\n", fast);
		printf("startup,-,outcome,%s\n", outcome);
	} else {
		printf("fasttime-bench %s: the library's start, timed from the first "
		       "clock_gettime(MONOTONIC) (this thread calls it in a loop)\n",
		       PACKAGE_VERSION);
		printf("first call: %.1f us\n", (double)first_call_ns / 1e3);
		for (unsigned i = 0; i < nlines; i++)
			printf("%9.3f ms  %s\n", lines[i].ms, lines[i].text);
		if (decision_ms >= 0 && fast > 0)
			printf("fast path active %.3f ms after the first call, for %u of %u entry "
			       "points\n",
			       decision_ms, fast, (unsigned)API_CHOICE_COUNT);
		else if (decision_ms >= 0)
			printf("decided %.3f ms after the first call: libc answers every entry "
			       "point here\n",
			       decision_ms);
		else if (strcmp(outcome, "timeout") == 0)
			printf("no decision within %.0f s\n", BENCH_STARTUP_TIMEOUT_NS / 1e9);
		else
			printf("the library did not start its fast path\n");
	}
	return 0;
}

/* CPU time of one thread of this process in ns: the first field of
 * schedstat, or utime + stime (clock ticks) where the kernel has none. */
static bool bench_thread_cpu_ns(long tid, uint64_t *ns)
{
	char path[64], line[1024], *paren;
	unsigned long long value, utime, stime;
	bool found = false;
	FILE *f;

	snprintf(path, sizeof path, "/proc/self/task/%ld/schedstat", tid);
	f = fopen(path, "r");
	if (f != NULL) {
		found = fscanf(f, "%llu", &value) == 1;
		fclose(f);
		if (found) {
			*ns = value;
			return true;
		}
	}
	snprintf(path, sizeof path, "/proc/self/task/%ld/stat", tid);
	f = fopen(path, "r");
	if (f == NULL)
		return false;
	/* After "(comm) ": state and 10 more fields, then utime and stime. */
	if (fgets(line, sizeof line, f) != NULL && (paren = strrchr(line, ')')) != NULL &&
	    sscanf(paren + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
		   &stime) == 2) {
		*ns = (utime + stime) * (1000000000ull / (unsigned long long)sysconf(_SC_CLK_TCK));
		found = true;
	}
	fclose(f);
	return found;
}

/* A number from a "Key:   value" file in /proc (kB or a count). */
static bool bench_proc_value(const char *path, const char *key, uint64_t *value)
{
	size_t length = strlen(key);
	char line[256];
	bool found = false;
	FILE *f = fopen(path, "r");

	if (f == NULL)
		return false;
	while (!found && fgets(line, sizeof line, f) != NULL)
		if (strncmp(line, key, length) == 0 && line[length] == ':')
			found = sscanf(line + length + 1, "%" SCNu64, value) == 1;
	fclose(f);
	return found;
}

/* The size and resident part, in KiB, of the thread's stack: the mapping
 * that holds its stack pointer, which /proc shows while it is blocked in a
 * system call (the refresh thread sleeps in one nearly all the time). The
 * mapping also holds the thread's descriptor and static TLS. */
static bool bench_thread_stack(long tid, uint64_t *size_kib, uint64_t *rss_kib)
{
	char path[64], line[512], *last = NULL, *before = NULL, *word;
	uint64_t sp, low, high;
	bool inside = false, have_size = false, have_rss = false;
	FILE *f;

	snprintf(path, sizeof path, "/proc/self/task/%ld/syscall", tid);
	f = fopen(path, "r");
	if (f == NULL)
		return false;
	if (fgets(line, sizeof line, f) == NULL)
		line[0] = '\0';
	fclose(f);
	/* "nr arg... sp pc" (or "running"): the stack pointer is next to last. */
	for (word = strtok(line, " \n"); word != NULL; word = strtok(NULL, " \n")) {
		before = last;
		last = word;
	}
	if (before == NULL || sscanf(before, "%" SCNx64, &sp) != 1 || sp == 0)
		return false;
	f = fopen("/proc/self/smaps", "r");
	if (f == NULL)
		return false;
	while (fgets(line, sizeof line, f) != NULL) {
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " ", &low, &high) == 2) {
			if (inside)
				break;
			inside = sp >= low && sp < high;
		} else if (inside && strncmp(line, "Size:", 5) == 0) {
			have_size = sscanf(line + 5, "%" SCNu64, size_kib) == 1;
		} else if (inside && strncmp(line, "Rss:", 4) == 0) {
			have_rss = sscanf(line + 4, "%" SCNu64, rss_kib) == 1;
		}
	}
	fclose(f);
	return have_size && have_rss;
}

/* Resident KiB per mapped file (by its base name) and for anonymous memory,
 * from /proc/self/smaps, with the process's private and proportional
 * totals: what VmRSS adds up, so that a difference can be traced to the
 * library's own file, to libc pages only its thread touches (shared with
 * every program on the machine), or to memory of its own. */
struct bench_mappings {
	char names[64][64];
	uint64_t rss_kib[64];
	unsigned count;
	uint64_t private_kib, pss_kib;
};

static void bench_read_mappings(struct bench_mappings *m)
{
	char line[512], name[64] = "anonymous";
	FILE *f = fopen("/proc/self/smaps", "r");
	uint64_t low, high, kib;

	memset(m, 0, sizeof *m);
	if (f == NULL)
		return;
	while (fgets(line, sizeof line, f) != NULL) {
		char path[400] = "";
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %*s %*s %*s %399s", &low, &high,
			   path) >= 2) {
			const char *slash = strrchr(path, '/');
			snprintf(name, sizeof name, "%s",
				 path[0] == '\0' ? "anonymous" : slash != NULL ? slash + 1 : path);
			for (char *c = name; *c != '\0'; c++)
				if (*c == ',')
					*c = '_';
		} else if (sscanf(line, "Rss: %" SCNu64, &kib) == 1) {
			unsigned i;
			for (i = 0; i < m->count && strcmp(m->names[i], name) != 0; i++)
				;
			if (i == m->count && m->count < 64)
				snprintf(m->names[m->count++], sizeof m->names[0], "%s", name);
			if (i < m->count)
				m->rss_kib[i] += kib;
		} else if (sscanf(line, "Private_Clean: %" SCNu64, &kib) == 1 ||
			   sscanf(line, "Private_Dirty: %" SCNu64, &kib) == 1) {
			m->private_kib += kib;
		} else if (sscanf(line, "Pss: %" SCNu64, &kib) == 1) {
			m->pss_kib += kib;
		}
	}
	fclose(f);
}

static void bench_sleep_until(uint64_t deadline_ns)
{
	struct timespec until = {
		.tv_sec = (time_t)(deadline_ns / CLOCK_NS_PER_SEC),
		.tv_nsec = (long)(deadline_ns % CLOCK_NS_PER_SEC),
	};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR)
		;
}

/* What the library costs a program that has read the clock once and then
 * does nothing: its refresh thread's CPU time, and resident memory.
 *
 * The thread's first intervals are short (the ramp); after them it refreshes
 * every configured interval and wakes every REFRESH_STEP_WATCH_NS to watch
 * for a set clock. The window runs from the middle of one full interval to
 * the middle of another, so that it holds a known number of rounds. */
static int bench_idle(void)
{
	struct settings settings;
	uint64_t interval_ns, ramp_ns = 0, start, window_start, window_end;
	uint64_t cpu_before = 0, cpu_after = 0, vol_before = 0, vol_after = 0;
	uint64_t invol_before = 0, invol_after = 0, rss = 0, anon = 0, file = 0;
	uint64_t stack_size = 0, stack_rss = 0;
	struct bench_mappings mappings;
	const char *owner = bench_symbol_owner();
	bool preloaded = bench_is_preloaded(owner), measured = false, stack = false;
	unsigned rounds;
	char path[96];
	struct timespec ts;
	long tid;

	settings_load(&settings, bench_getenv, bench_ignore_warning);
	interval_ns = (uint64_t)settings.interval_ms * 1000000ull;
	for (unsigned round = 0; refresh_interval_after(round, interval_ns) < interval_ns; round++)
		ramp_ns += refresh_interval_after(round, interval_ns);
	rounds = (unsigned)(bench_options.idle * 1e9 / (double)interval_ns + 0.5);
	if (rounds < 1)
		rounds = 1;

	start = bench_mono_ns();
	clock_gettime(CLOCK_MONOTONIC, &ts);
	bench_consume((uint64_t)ts.tv_nsec);
	bench_sleep_until(start + ramp_ns + interval_ns / 2);
	tid = bench_library_tid();
	window_start = bench_mono_ns();
	if (tid != 0) {
		snprintf(path, sizeof path, "/proc/self/task/%ld/status", tid);
		measured = bench_thread_cpu_ns(tid, &cpu_before);
		bench_proc_value(path, "voluntary_ctxt_switches", &vol_before);
		bench_proc_value(path, "nonvoluntary_ctxt_switches", &invol_before);
	}
	bench_sleep_until(window_start + rounds * interval_ns);
	window_end = bench_mono_ns();
	if (tid != 0) {
		measured = measured && bench_thread_cpu_ns(tid, &cpu_after);
		bench_proc_value(path, "voluntary_ctxt_switches", &vol_after);
		bench_proc_value(path, "nonvoluntary_ctxt_switches", &invol_after);
		stack = bench_thread_stack(tid, &stack_size, &stack_rss);
	}
	bench_proc_value("/proc/self/status", "VmRSS", &rss);
	bench_proc_value("/proc/self/status", "RssAnon", &anon);
	bench_proc_value("/proc/self/status", "RssFile", &file);
	bench_read_mappings(&mappings);

	if (bench_options.csv) {
		double window_s = (double)(window_end - window_start) / 1e9;

		printf("source,api,metric,value\n");
		printf("idle,-,preloaded,%d\n", preloaded);
		printf("idle,-,allowed_cpus,%u\n", bench_allowed_cpus());
		printf("idle,-,interval_ms,%u\n", settings.interval_ms);
		printf("idle,-,watch_step_ms,%llu\n", REFRESH_STEP_WATCH_NS / 1000000ull);
		printf("idle,-,window_s,%.3f\n", window_s);
		printf("idle,-,rounds,%u\n", rounds);
		printf("idle,-,thread,%s\n", tid != 0 ? "running" : "none");
		if (measured) {
			printf("idle,-,thread_cpu_ns,%" PRIu64 "\n", cpu_after - cpu_before);
			printf("idle,-,thread_cpu_percent,%.5f\n",
			       (double)(cpu_after - cpu_before) / 1e9 / window_s * 100);
			printf("idle,-,thread_voluntary_switches,%" PRIu64 "\n",
			       vol_after - vol_before);
			printf("idle,-,thread_involuntary_switches,%" PRIu64 "\n",
			       invol_after - invol_before);
		}
		printf("idle,-,vmrss_kib,%" PRIu64 "\n", rss);
		printf("idle,-,rssanon_kib,%" PRIu64 "\n", anon);
		printf("idle,-,rssfile_kib,%" PRIu64 "\n", file);
		printf("idle,-,private_kib,%" PRIu64 "\n", mappings.private_kib);
		printf("idle,-,pss_kib,%" PRIu64 "\n", mappings.pss_kib);
		for (unsigned i = 0; i < mappings.count; i++)
			printf("idle,%s,rss_kib,%" PRIu64 "\n", mappings.names[i],
			       mappings.rss_kib[i]);
		if (stack) {
			printf("idle,-,thread_stack_size_kib,%" PRIu64 "\n", stack_size);
			printf("idle,-,thread_stack_rss_kib,%" PRIu64 "\n", stack_rss);
		}
	} else {
		printf("fasttime-bench %s: clock_gettime called once (%s), then asleep\n",
		       PACKAGE_VERSION, preloaded ? "the library's" : owner);
		if (measured)
			printf("refresh thread: %.3f ms of CPU in %.1f s (%u rounds every %u ms): "
			       "%.5f %% of one core; %" PRIu64 " wake-ups\n",
			       (double)(cpu_after - cpu_before) / 1e6,
			       (double)(window_end - window_start) / 1e9, rounds,
			       settings.interval_ms,
			       (double)(cpu_after - cpu_before) /
				   (double)(window_end - window_start) * 100,
			       vol_after - vol_before);
		else
			printf("no refresh thread in this process\n");
		printf("resident: %" PRIu64 " KiB (anonymous %" PRIu64 ", file %" PRIu64
		       "); private %" PRIu64 " KiB, proportional %" PRIu64 " KiB\n",
		       rss, anon, file, mappings.private_kib, mappings.pss_kib);
		for (unsigned i = 0; i < mappings.count; i++)
			if (mappings.rss_kib[i] > 0)
				printf("  %6" PRIu64 " KiB  %s\n", mappings.rss_kib[i],
				       mappings.names[i]);
		if (stack)
			printf("refresh thread's stack mapping: %" PRIu64 " KiB, %" PRIu64
			       " KiB resident\n",
			       stack_size, stack_rss);
	}
	return 0;
}

static bool bench_write_trace(FILE *f, const struct bench_trace *trace)
{
	fprintf(f, "# fasttime-bench %s: clock_gettime(MONOTONIC) against libc, first thread\n"
		   "# one line per round and source; ns; offset: median of reading - libc\n"
		   "# sandwich midpoint; error: largest distance outside a sandwich\n"
		   "# seconds source offset_ns error_ns\n",
		PACKAGE_VERSION);
	for (size_t i = 0; i < trace->count; i++) {
		const struct bench_trace_point *point = &trace->points[i];
		fprintf(f, "%.6f %s %.1f %" PRIu64 "\n", point->seconds,
			bench_source_names[point->source], point->offset_ns, point->error_ns);
	}
	if (trace->full)
		fprintf(f, "# out of memory: the rest of the run is not recorded\n");
	return fflush(f) == 0 && !ferror(f);
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
	struct bench_result *results, merged;
	struct bench_trace trace = { 0 };
	pthread_t threads[256];
	FILE *trace_file = NULL;
	enum bench_library_state library = BENCH_LIBRARY_ABSENT;
	const char *owner = NULL;
	bool preloaded = false;
	double waited_ms = 0;
	int status = 0;

	if (!bench_parse(argc, argv))
		return 2;
	if (!bench_find_libc()) {
		fprintf(stderr, "fasttime-bench: cannot find libc's own time functions\n");
		return 1;
	}
	/* Before anything here reads the clock: both time the library from
	 * its first call. */
	if (bench_options.startup)
		return bench_startup();
	if (bench_options.idle > 0)
		return bench_idle();
	if (bench_options.trace != NULL) {
		trace_file = fopen(bench_options.trace, "w");
		if (trace_file == NULL) {
			fprintf(stderr, "fasttime-bench: cannot write %s: %s\n",
				bench_options.trace, strerror(errno));
			return 1;
		}
	}
	cpu_probe_instructions(&facts);
	cpu_probe_kernel(&facts);
	if (bench_options.symbols) {
		owner = bench_symbol_owner();
		preloaded = bench_is_preloaded(owner);
		if (preloaded)
			library = bench_wait_for_library(&waited_ms);
	} else if (!bench_start_engine()) {
		return 77;
	}
	bench_ns_per_tick = bench_find_ns_per_tick();

	results = calloc(bench_options.threads, sizeof *results);
	if (results == NULL)
		return 1;
	if (trace_file != NULL)
		results[0].trace = &trace;
	trace.start_ns = bench_mono_ns();
	for (unsigned t = 0; t < bench_options.threads; t++) {
		int rc = pthread_create(&threads[t], NULL, bench_thread, &results[t]);
		if (rc != 0) {
			fprintf(stderr, "fasttime-bench: cannot start thread %u: %s\n", t + 1,
				strerror(rc));
			return 1;
		}
	}
	for (unsigned t = 0; t < bench_options.threads; t++)
		pthread_join(threads[t], NULL);

	if (bench_options.csv) {
		bench_merge(&merged, results, bench_options.threads);
		bench_print_csv(&merged);
		if (bench_options.threads > 1)
			bench_print_csv_threads(results, bench_options.threads);
		printf("bench,-,threads,%u\n", bench_options.threads);
		printf("bench,-,seconds,%g\n", bench_options.seconds);
		printf("bench,-,rounds,%u\n", merged.rounds);
		printf("bench,-,loop_calls,%u\n", BENCH_LOOP_CALLS);
		printf("bench,-,batch_calls,%u\n", BENCH_BATCH);
		if (bench_options.symbols) {
			printf("bench,-,preloaded,%d\n", preloaded);
			printf("bench,-,clock_gettime_from,%s\n", owner);
			printf("bench,-,library_thread,%s\n",
			       preloaded ? bench_library_state_names[library] : "none");
			printf("bench,-,warmup_ms,%.1f\n", waited_ms);
		}
	} else {
		printf("fasttime-bench %s: %s, %ld CPUs, clocksource %s, %u thread(s), %.1f s\n",
		       PACKAGE_VERSION, facts.brand, sysconf(_SC_NPROCESSORS_ONLN),
		       facts.clocksource, bench_options.threads, bench_options.seconds);
		if (bench_options.symbols && !preloaded)
			printf("measuring this process's symbols: %s's (fasttime not preloaded)\n",
			       owner);
		else if (bench_options.symbols && library == BENCH_LIBRARY_READY)
			printf("measuring this process's symbols: preloaded; the library's "
			       "first round was over after %.0f ms\n",
			       waited_ms);
		else if (bench_options.symbols && library == BENCH_LIBRARY_ABSENT)
			printf("measuring this process's symbols: preloaded, but the library "
			       "runs no thread: it answers with libc\n");
		else if (bench_options.symbols)
			printf("measuring this process's symbols: preloaded, but the library's "
			       "thread was not seen at rest after %.0f ms\n",
			       waited_ms);
		for (unsigned t = 0; t < bench_options.threads; t++) {
			if (bench_options.threads > 1)
				printf("\n== thread %u\n", t + 1);
			bench_print(&results[t]);
		}
	}
	if (trace_file != NULL) {
		if (!bench_write_trace(trace_file, &trace) || fclose(trace_file) != 0) {
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
