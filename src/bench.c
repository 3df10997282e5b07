/* fasttime-bench: what each entry point costs here, from libc and from the
 * TSC in both modes, measured in the same run, alternating; per-call cost
 * percentiles; the error against libc and any backward step.
 *
 * By default the engine runs inside this process and each mode is called
 * directly. With --symbols the process's own clock_gettime and friends are
 * measured instead (run it under fasttime to measure the preloaded library
 * end to end) against libc's, found with dlopen(RTLD_NOLOAD).
 *
 * --csv prints one figure per line (source,api,metric,value) for
 * scripts/fasttime-compare; --trace FILE records the error against libc over
 * the run. */
#include "config.h"

#include <dirent.h>
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
	const char *trace; /* file for the error over time, or NULL */
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
		into->rounds += results[t].rounds;
	}
	for (unsigned s = 0; s < BENCH_SOURCES; s++)
		for (unsigned a = 0; a < BENCH_APIS; a++)
			into->best_ns[a][s] /= n;
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
		"                      [--trace FILE]\n"
		"Measures clock_gettime, gettimeofday, time and timespec_get from libc and\n"
		"from the TSC (ordered and relaxed) in one run.\n"
		"  --seconds S  how long to measure (default 3)\n"
		"  --threads T  measure in T threads at once (default 1)\n"
		"  --symbols    measure this process's own functions (run it under fasttime)\n"
		"               against libc's, instead of the engine's modes\n"
		"  --csv        one figure per line: source,api,metric,value\n"
		"  --trace FILE write the error of MONOTONIC against libc over the run to\n"
		"               FILE: per round and source, seconds since the start, the\n"
		"               median offset from libc's sandwich midpoint and the largest\n"
		"               error, in ns\n");
}

static bool bench_parse(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "threads", required_argument, NULL, 't' },
		{ "symbols", no_argument, NULL, 'y' },
		{ "csv", no_argument, NULL, 'c' },
		{ "trace", required_argument, NULL, 'r' },
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

/* The state letter of the library's refresh thread (named "fasttime") from
 * /proc, or 0 when this process has no such thread. */
static char bench_library_thread_state(void)
{
	DIR *tasks = opendir("/proc/self/task");
	struct dirent *task;
	char state = 0;

	if (tasks == NULL)
		return 0;
	while (state == 0 && (task = readdir(tasks)) != NULL) {
		char path[300], line[512], *paren;
		FILE *f;
		bool ours;

		if (task->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "/proc/self/task/%s/comm", task->d_name);
		f = fopen(path, "r");
		if (f == NULL)
			continue;
		ours = fgets(line, sizeof line, f) != NULL && strcmp(line, "fasttime\n") == 0;
		fclose(f);
		if (!ours)
			continue;
		snprintf(path, sizeof path, "/proc/self/task/%s/stat", task->d_name);
		f = fopen(path, "r");
		if (f == NULL)
			continue;
		/* "tid (comm) S ...": the state follows the last parenthesis. */
		if (fgets(line, sizeof line, f) != NULL && (paren = strrchr(line, ')')) != NULL &&
		    paren[1] == ' ')
			state = paren[2];
		fclose(f);
	}
	closedir(tasks);
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
		preloaded = strncmp(owner, "libfasttime", 11) == 0;
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
