/* The measurement behind fasttime-bench's table and CSV: ns per call from
 * loops in which the source and the entry point are constants, rounds that
 * alternate every source, per-call cost percentiles from short batches, and
 * the error against libc from sandwiches libc / source / libc.
 *
 * In engine mode a bare rdtsc loop and a bare rdtscp loop run in the same
 * rounds: they are the floor each mode's read path is measured against. */
#include "config.h"

#include "bench_measure.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_libc.h"
#include "clock.h"
#include "libc.h"
#include "offsets.h"
#include "raw_lines.h"
#include "refresh.h"
#include "verdict.h"
#include "settings.h"

static double bench_measure_ns_per_tick;
/* How each mode reads the counter and the CPU id on this machine
 * (CLOCK_READ_BITS), and whether the ordered instruction is rdtscp (else
 * lfence; rdtsc). */
static uint32_t bench_measure_ordered_flags, bench_measure_relaxed_flags;
static bool bench_measure_ordered_is_rdtscp = true;
/* Whether the engine's calibration measured the BOOTTIME and TAI offsets.
 * Without its offset the engine would answer that clock with the monotonic
 * lines alone: a cost, but not of that clock's answer. Read once before the
 * refresh thread starts, which alone writes what offsets_known reads. */
static bool bench_measure_boottime_known, bench_measure_tai_known;
/* Whether every CPU with a line had a MONOTONIC_RAW line after the
 * calibration: without one the engine's read of that clock gives up, and
 * its loop would time the give-up. Read when the offsets are. */
static bool bench_measure_raw_ready;

/* Each row at its position: two rows at one position would be an error
 * (-Woverride-init), as would a position past the end, so the rows fill
 * the positions. */
const enum entry_point bench_measure_order[ENTRY_COUNT] = {
#define ENTRY(id, form, clock, bit, bench_position, name, key, bench_name)                         \
	[bench_position] = ENTRY_##id,
#include "entry_table.def"
#undef ENTRY
};

/* One call of api through fns (libc's own functions, or the process's
 * symbols), its result left in *ts, *tv or *t. */
static inline __attribute__((always_inline)) void
bench_measure_answer_functions(const struct libc_time_functions *fns, enum entry_point api,
			       struct timespec *ts, struct timeval *tv, time_t *t)
{
	switch (api) {
	case ENTRY_MONOTONIC: fns->clock_gettime(CLOCK_MONOTONIC, ts); break;
	case ENTRY_REALTIME: fns->clock_gettime(CLOCK_REALTIME, ts); break;
	case ENTRY_GETTIMEOFDAY: fns->gettimeofday(tv, NULL); break;
	case ENTRY_TIME: *t = fns->time(NULL); break;
	case ENTRY_TIMESPEC_GET: fns->timespec_get(ts, TIME_UTC); break;
	case ENTRY_BOOTTIME: fns->clock_gettime(CLOCK_BOOTTIME, ts); break;
	case ENTRY_TAI: fns->clock_gettime(CLOCK_TAI, ts); break;
	case ENTRY_MONOTONIC_RAW: fns->clock_gettime(CLOCK_MONOTONIC_RAW, ts); break;
	default: break;
	}
}

/* One call of api from the engine's lines in the mode of flags: false
 * where the read gave up (no usable line), leaving the result alone. */
static inline __attribute__((always_inline)) bool
bench_measure_answer_lines(uint32_t flags, enum entry_point api, struct timespec *ts,
			   struct timeval *tv, time_t *t)
{
	switch (api) {
	case ENTRY_MONOTONIC: return clock_answer_monotonic(flags, ts);
	case ENTRY_REALTIME:
	case ENTRY_TIMESPEC_GET: return clock_answer_realtime(flags, ts);
	case ENTRY_GETTIMEOFDAY: return clock_answer_timeval(flags, tv);
	case ENTRY_TIME: return clock_answer_seconds(flags, t);
	case ENTRY_BOOTTIME: return clock_answer_offset_clock(flags, CLOCK_OFFSET_BOOTTIME, ts);
	case ENTRY_TAI: return clock_answer_offset_clock(flags, CLOCK_OFFSET_TAI, ts);
	case ENTRY_MONOTONIC_RAW: return clock_answer_raw(flags, ts);
	default: return false;
	}
}

/* One call of api from source, its result left in *ts, *tv or *t; false
 * where the engine's lines gave up and libc answered instead, as it does
 * for a preloaded process (the loop then times what that process pays,
 * not the give-up alone). */
static inline __attribute__((always_inline)) bool
bench_measure_answer(enum bench_source source, enum entry_point api, struct timespec *ts,
		     struct timeval *tv, time_t *t)
{
	uint32_t flags =
	    source == BENCH_RELAXED ? bench_measure_relaxed_flags : bench_measure_ordered_flags;

	switch (source) {
	case BENCH_LIBC: bench_measure_answer_functions(&bench_libc, api, ts, tv, t); return true;
	case BENCH_SYMBOL:
		bench_measure_answer_functions(&bench_process, api, ts, tv, t);
		return true;
	default:
		if (__builtin_expect(bench_measure_answer_lines(flags, api, ts, tv, t), 1))
			return true;
		bench_measure_answer_functions(&bench_libc, api, ts, tv, t);
		return false;
	}
}

/* One call of api from source, returning something that depends on it. */
static inline __attribute__((always_inline)) uint64_t bench_measure_call(enum bench_source source,
									 enum entry_point api)
{
	struct timespec ts = { 0, 0 };
	struct timeval tv = { 0, 0 };
	time_t t = 0;

	bench_measure_answer(source, api, &ts, &tv, &t);
	return (uint64_t)ts.tv_nsec + (uint64_t)tv.tv_usec + (uint64_t)t;
}

/* Specialised loops: the source and the api are constants inside each. */
#define BENCH_MEASURE_LOOP(source, api)                                                            \
	static __attribute__((noinline)) void bench_measure_loop_##source##_##api(unsigned n)      \
	{                                                                                          \
		for (unsigned i = 0; i < n; i++)                                                   \
			bench_consume(bench_measure_call(source, api));                            \
	}
#define BENCH_MEASURE_LOOPS(source)                                                                \
	BENCH_MEASURE_LOOP(source, ENTRY_MONOTONIC)                                                \
	BENCH_MEASURE_LOOP(source, ENTRY_REALTIME)                                                 \
	BENCH_MEASURE_LOOP(source, ENTRY_GETTIMEOFDAY)                                             \
	BENCH_MEASURE_LOOP(source, ENTRY_TIME)                                                     \
	BENCH_MEASURE_LOOP(source, ENTRY_TIMESPEC_GET)                                             \
	BENCH_MEASURE_LOOP(source, ENTRY_BOOTTIME)                                                 \
	BENCH_MEASURE_LOOP(source, ENTRY_TAI)                                                      \
	BENCH_MEASURE_LOOP(source, ENTRY_MONOTONIC_RAW)
BENCH_MEASURE_LOOPS(BENCH_LIBC)
BENCH_MEASURE_LOOPS(BENCH_ORDERED)
BENCH_MEASURE_LOOPS(BENCH_RELAXED)
BENCH_MEASURE_LOOPS(BENCH_SYMBOL)

typedef void (*bench_measure_loop_fn)(unsigned n);
#define BENCH_MEASURE_ROW(source)                                                                  \
	{                                                                                          \
		[ENTRY_MONOTONIC] = bench_measure_loop_##source##_ENTRY_MONOTONIC,                 \
		[ENTRY_REALTIME] = bench_measure_loop_##source##_ENTRY_REALTIME,                   \
		[ENTRY_BOOTTIME] = bench_measure_loop_##source##_ENTRY_BOOTTIME,                   \
		[ENTRY_TAI] = bench_measure_loop_##source##_ENTRY_TAI,                             \
		[ENTRY_MONOTONIC_RAW] = bench_measure_loop_##source##_ENTRY_MONOTONIC_RAW,         \
		[ENTRY_GETTIMEOFDAY] = bench_measure_loop_##source##_ENTRY_GETTIMEOFDAY,           \
		[ENTRY_TIME] = bench_measure_loop_##source##_ENTRY_TIME,                           \
		[ENTRY_TIMESPEC_GET] = bench_measure_loop_##source##_ENTRY_TIMESPEC_GET,           \
	}
static const bench_measure_loop_fn bench_measure_loops[BENCH_SOURCES][ENTRY_COUNT] = {
	BENCH_MEASURE_ROW(BENCH_LIBC),
	BENCH_MEASURE_ROW(BENCH_ORDERED),
	BENCH_MEASURE_ROW(BENCH_RELAXED),
	BENCH_MEASURE_ROW(BENCH_SYMBOL),
};

/* The instruction alone, its result consumed as the clock loops consume
 * theirs: what no read path built on it can beat. */
static __attribute__((noinline)) void bench_measure_loop_rdtsc(unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		bench_consume(cpu_rdtsc());
}

/* The same for the ordered mode's instruction: rdtscp where the CPU
 * advertises it, else lfence; rdtsc. */
static __attribute__((noinline)) void bench_measure_loop_ordered(unsigned n)
{
	if (!bench_measure_ordered_is_rdtscp) {
		for (unsigned i = 0; i < n; i++)
			bench_consume(cpu_rdtsc_fenced());
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		uint32_t aux;
		uint64_t tsc = cpu_rdtscp(&aux);
		/* The ordered read uses both outputs: so does its floor. */
		bench_consume(tsc + aux);
	}
}

const char *bench_measure_ordered_instruction(void)
{
	return bench_measure_ordered_is_rdtscp ? "rdtscp" : "lfence; rdtsc";
}

static const bench_measure_loop_fn bench_measure_bare_loops[BENCH_BARES] = {
	bench_measure_loop_rdtsc, bench_measure_loop_ordered
};

/* Per-call cost of MONOTONIC in batches, into a histogram of tenths of ns. */
static void bench_measure_batches(enum bench_source source, unsigned batches, struct histogram *h)
{
	for (unsigned b = 0; b < batches; b++) {
		uint64_t start = cpu_rdtsc();
		bench_measure_loops[source][ENTRY_MONOTONIC](BENCH_MEASURE_BATCH);
		uint64_t ticks = cpu_rdtsc() - start;
		double tenths =
		    (double)ticks * bench_measure_ns_per_tick * 10.0 / BENCH_MEASURE_BATCH;
		histogram_add(h, (uint64_t)tenths);
	}
}

/* The source's reading of MONOTONIC or REALTIME, in ns; *from_lines false
 * where the engine's lines gave up and libc answered. */
static uint64_t bench_measure_read_ns(enum bench_source source, bool realtime, bool *from_lines)
{
	struct timespec ts = { 0, 0 };
	struct timeval tv;
	time_t t;

	*from_lines =
	    bench_measure_answer(source, realtime ? ENTRY_REALTIME : ENTRY_MONOTONIC, &ts, &tv, &t);
	return timespec_to_ns(&ts);
}

/* Orders doubles for qsort. */
static int bench_measure_compare_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Appends one round's point; the memory is taken between timed loops. */
static void bench_measure_trace_add(struct bench_trace *trace, enum bench_source source,
				    double *offsets, unsigned n, uint64_t worst)
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
	qsort(offsets, n, sizeof *offsets, bench_measure_compare_double);
	point = &trace->points[trace->count++];
	point->seconds = (double)(bench_libc_ns(CLOCK_MONOTONIC) - trace->start_ns) / 1e9;
	point->source = source;
	point->offset_ns = n % 2 ? offsets[n / 2] : (offsets[n / 2 - 1] + offsets[n / 2]) / 2;
	point->error_ns = worst;
}

/* Error against libc from sandwiches libc / source / libc, and backward
 * steps between consecutive readings of the source. */
static void bench_measure_errors(enum bench_source source, unsigned samples, struct bench_result *r)
{
	uint64_t previous = 0, worst = 0;
	/* Where the readings fall inside the sandwiches shows a slow drift that
	 * the error, 0 inside a sandwich, hides: kept for the trace. */
	double offsets[1024];
	unsigned noffsets = 0;
	bool tracing = r->trace != NULL && source != BENCH_LIBC;

	for (unsigned i = 0; i < samples; i++) {
		bool realtime = i & 1;
		clockid_t id = realtime ? CLOCK_REALTIME : CLOCK_MONOTONIC;
		uint64_t before = bench_libc_ns(id);
		bool from_lines;
		uint64_t ours = bench_measure_read_ns(source, realtime, &from_lines);
		uint64_t after = bench_libc_ns(id);
		int64_t error;
		uint64_t distance;

		if (!from_lines)
			r->gave_up[source]++;
		if (!realtime) {
			if (ours < previous)
				r->backward[source]++;
			previous = ours;
		}
		/* An interrupted sandwich says nothing about the error. */
		if (after < before || after - before > 1000)
			continue;
		if (ours >= before && ours <= after)
			error = 0;
		else
			error = (int64_t)(ours - (before + (after - before) / 2));
		distance = (uint64_t)(error < 0 ? -error : error);
		histogram_add(&r->error[source][realtime], distance);
		if (tracing && !realtime && noffsets < sizeof offsets / sizeof offsets[0]) {
			offsets[noffsets++] =
			    (double)(int64_t)(ours - before) - (double)(after - before) / 2;
			if (distance > worst)
				worst = distance;
		}
	}
	if (tracing)
		bench_measure_trace_add(r->trace, source, offsets, noffsets, worst);
}

bool bench_measure_source_wanted(enum bench_source source)
{
	if (bench_options.symbols)
		return source == BENCH_LIBC || source == BENCH_SYMBOL;
	return source != BENCH_SYMBOL;
}

bool bench_measure_api_wanted(enum entry_point api)
{
	if (bench_options.symbols)
		return true;
	if (api == ENTRY_BOOTTIME)
		return bench_measure_boottime_known;
	if (api == ENTRY_TAI)
		return bench_measure_tai_known;
	if (api == ENTRY_MONOTONIC_RAW)
		return bench_measure_raw_ready;
	return true;
}

/* ns per call of one loop of BENCH_MEASURE_LOOP_CALLS calls. */
static double bench_measure_time_loop(bench_measure_loop_fn loop)
{
	uint64_t start = bench_libc_ns(CLOCK_MONOTONIC);

	loop(BENCH_MEASURE_LOOP_CALLS);
	return (double)(bench_libc_ns(CLOCK_MONOTONIC) - start) / BENCH_MEASURE_LOOP_CALLS;
}

/* One thread's measurement: rounds until bench_options.seconds are over. */
static void bench_measure_rounds(struct bench_result *r)
{
	uint64_t deadline =
	    bench_libc_ns(CLOCK_MONOTONIC) + (uint64_t)(bench_options.seconds * 1e9);
	unsigned rounds = 0;

	for (unsigned s = 0; s < BENCH_SOURCES; s++) {
		histogram_reset(&r->cost[s]);
		histogram_reset(&r->error[s][0]);
		histogram_reset(&r->error[s][1]);
		for (unsigned a = 0; a < ENTRY_COUNT; a++)
			r->best_ns[a][s] = 1e30;
	}
	for (unsigned b = 0; b < BENCH_BARES; b++)
		r->bare_ns[b] = 1e30;
	/* Rounds alternate every source, so that the machine's moods fall on
	 * all of them alike; each loop's best round is kept. The bare
	 * instructions run beside every API, so that the floor gets as many
	 * chances at its best as the read paths it is compared with. */
	do {
		for (unsigned i = 0; i < ENTRY_COUNT; i++) {
			enum entry_point a = bench_measure_order[i];

			if (!bench_measure_api_wanted(a))
				continue;
			for (unsigned s = 0; s < BENCH_SOURCES; s++) {
				double ns;

				if (!bench_measure_source_wanted(s))
					continue;
				ns = bench_measure_time_loop(bench_measure_loops[s][a]);
				if (ns < r->best_ns[a][s])
					r->best_ns[a][s] = ns;
			}
			for (unsigned b = 0; b < BENCH_BARES && !bench_options.symbols; b++) {
				double ns = bench_measure_time_loop(bench_measure_bare_loops[b]);
				if (ns < r->bare_ns[b])
					r->bare_ns[b] = ns;
			}
		}
		for (unsigned s = 0; s < BENCH_SOURCES; s++) {
			if (!bench_measure_source_wanted(s))
				continue;
			bench_measure_batches(s, 2000, &r->cost[s]);
			bench_measure_errors(s, 2000, r);
		}
		rounds++;
	} while (bench_libc_ns(CLOCK_MONOTONIC) < deadline || rounds < 3);
	r->rounds = rounds;
}

/* A measuring thread's start routine. */
static void *bench_measure_thread(void *arg)
{
	bench_measure_rounds(arg);
	return NULL;
}

/* The counter's rate against libc's MONOTONIC over 20 ms, which turns the
 * batches' ticks into ns. */
static double bench_measure_find_ns_per_tick(void)
{
	uint64_t t0 = bench_libc_ns(CLOCK_MONOTONIC), c0 = cpu_rdtsc();
	while (bench_libc_ns(CLOCK_MONOTONIC) - t0 < 20000000u)
		;
	return (double)(bench_libc_ns(CLOCK_MONOTONIC) - t0) / (double)(cpu_rdtsc() - c0);
}

bool bench_measure_run(struct bench_result *results, unsigned n)
{
	pthread_t threads[256];

	bench_measure_ns_per_tick = bench_measure_find_ns_per_tick();
	if (results[0].trace != NULL)
		results[0].trace->start_ns = bench_libc_ns(CLOCK_MONOTONIC);
	for (unsigned t = 0; t < n; t++) {
		int rc = pthread_create(&threads[t], NULL, bench_measure_thread, &results[t]);
		if (rc != 0) {
			fprintf(stderr, "fasttime-bench: cannot start thread %u: %s\n", t + 1,
				strerror(rc));
			return false;
		}
	}
	for (unsigned t = 0; t < n; t++)
		pthread_join(threads[t], NULL);
	return true;
}

void bench_measure_merge(struct bench_result *into, const struct bench_result *results, unsigned n)
{
	*into = results[0];
	into->trace = NULL;
	for (unsigned t = 1; t < n; t++) {
		for (unsigned s = 0; s < BENCH_SOURCES; s++) {
			for (unsigned a = 0; a < ENTRY_COUNT; a++)
				into->best_ns[a][s] += results[t].best_ns[a][s];
			histogram_merge(&into->cost[s], &results[t].cost[s]);
			histogram_merge(&into->error[s][0], &results[t].error[s][0]);
			histogram_merge(&into->error[s][1], &results[t].error[s][1]);
			into->backward[s] += results[t].backward[s];
			into->gave_up[s] += results[t].gave_up[s];
		}
		for (unsigned b = 0; b < BENCH_BARES; b++)
			into->bare_ns[b] += results[t].bare_ns[b];
		into->rounds += results[t].rounds;
	}
	for (unsigned s = 0; s < BENCH_SOURCES; s++)
		for (unsigned a = 0; a < ENTRY_COUNT; a++)
			into->best_ns[a][s] /= n;
	for (unsigned b = 0; b < BENCH_BARES; b++)
		into->bare_ns[b] /= n;
}

bool bench_measure_start_engine(const struct cpu_facts *facts)
{
	struct settings settings = { .interval_ms = SETTINGS_DEFAULT_INTERVAL_MS };

	struct cpu_reading reading;
	const char *no_ordered_reading = cpu_choose_reading(facts, false, &reading);

	/* Ordered mode where the CPU has no ordered read: measured as relaxed,
	 * which the report says. */
	if (no_ordered_reading != NULL) {
		fprintf(stderr, "fasttime-bench: %s; the ordered column reads as relaxed\n",
			no_ordered_reading);
		cpu_choose_reading(facts, true, &reading);
	}
	bench_measure_ordered_flags = clock_flags_for_reading(reading);
	bench_measure_ordered_is_rdtscp = reading.counter == CPU_READ_RDTSCP;
	cpu_choose_reading(facts, true, &reading);
	bench_measure_relaxed_flags = clock_flags_for_reading(reading);
	libc_resolve();
	refresh_configure(&settings);
	if (!refresh_calibrate_now()) {
		fprintf(stderr, "fasttime-bench: the fast path cannot run here: %s\n",
			verdict_unusable() != NULL ? verdict_unusable()
						   : "calibration gave no CPU a line");
		return false;
	}
	bench_measure_boottime_known = offsets_known(CLOCK_OFFSET_BOOTTIME);
	bench_measure_tai_known = offsets_known(CLOCK_OFFSET_TAI);
	bench_measure_raw_ready = raw_lines_ready();
	refresh_ensure_started();
	return true;
}
