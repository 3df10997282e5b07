/* Accuracy against libc's own clock, once the fast path is active: each
 * reading of the library is taken between two of libc's, and its error is
 * how far it lies outside that bracket. Whatever preempts the thread only
 * widens a bracket, so the error never depends on the machine's load.
 *
 * Asserts p99 <= 1 us and max <= 5 us for clock_gettime(CLOCK_MONOTONIC),
 * clock_gettime(CLOCK_REALTIME), clock_gettime(CLOCK_BOOTTIME),
 * clock_gettime(CLOCK_TAI), clock_gettime(CLOCK_MONOTONIC_RAW),
 * gettimeofday and timespec_get(TIME_UTC), and
 * that no entry point ever steps back within the thread. Under
 * FASTTIME_FORCE=1 (with FASTTIME_DEBUG=1) every entry point must have been
 * answered from the TSC, or the run proves nothing about it. The thread moves
 * between the CPUs it may use, so that every CPU's line is read.
 *
 *   accuracy [SECONDS]     3 s by default, 20 s with FASTTIME_SOAK=1 */
#include "config.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "integ.h"

#define ACCURACY_P99_LIMIT_NS 1000
#define ACCURACY_MAX_LIMIT_NS 5000
/* Exact counts up to here; larger errors are counted together (the limits
 * are far below it) and the largest is kept. */
#define ACCURACY_EXACT_NS 20000
/* How often the thread moves to the next CPU. */
#define ACCURACY_MOVE_EVERY_NS 20000000

enum accuracy_clock {
	ACCURACY_MONOTONIC,
	ACCURACY_REALTIME,
	ACCURACY_BOOTTIME,
	ACCURACY_TAI,
	ACCURACY_MONOTONIC_RAW,
	ACCURACY_GETTIMEOFDAY,
	ACCURACY_TIMESPEC_GET,
	ACCURACY_COUNT,
};

static const char *const accuracy_names[ACCURACY_COUNT] = {
	"clock_gettime(CLOCK_MONOTONIC)",
	"clock_gettime(CLOCK_REALTIME)",
	"clock_gettime(CLOCK_BOOTTIME)",
	"clock_gettime(CLOCK_TAI)",
	"clock_gettime(CLOCK_MONOTONIC_RAW)",
	"gettimeofday",
	"timespec_get(TIME_UTC)",
};

static const enum integ_api accuracy_api[ACCURACY_COUNT] = {
	INTEG_API_MONOTONIC,	 INTEG_API_REALTIME,	 INTEG_API_BOOTTIME,	 INTEG_API_TAI,
	INTEG_API_MONOTONIC_RAW, INTEG_API_GETTIMEOFDAY, INTEG_API_TIMESPEC_GET,
};

struct accuracy_stats {
	uint64_t counts[ACCURACY_EXACT_NS + 1];
	uint64_t widths[ACCURACY_EXACT_NS + 1]; /* libc's brackets, for scale */
	uint64_t samples;
	uint64_t early; /* readings before libc's bracket */
	uint64_t late;	/* readings after it */
	uint64_t max_ns;
	uint64_t backwards; /* readings earlier than this API's previous one */
	int64_t worst_back_ns;
	int64_t last_ns; /* the previous reading, for the backward check */
};

static struct accuracy_stats accuracy_stats[ACCURACY_COUNT];
/* The realtime entry points read one clock: a reading from one of them
 * earlier than the previous reading from another is an inversion. Counted
 * and shown, not failed: the library may answer some from the TSC and
 * others with libc. */
static uint64_t accuracy_realtime_inversions;
static int64_t accuracy_realtime_worst_ns;
static int64_t accuracy_realtime_last_ns;

/* Records one reading of interval [ours_low, ours_high] (a gettimeofday
 * reading is a whole microsecond) against libc's bracket [before, after]. */
static void accuracy_record(struct accuracy_stats *stats, int64_t before, int64_t ours_low,
			    int64_t ours_high, int64_t after)
{
	uint64_t error = 0;

	if (ours_high < before) {
		error = (uint64_t)(before - ours_high);
		stats->early++;
	} else if (ours_low > after) {
		error = (uint64_t)(ours_low - after);
		stats->late++;
	}
	stats->samples++;
	stats->counts[error < ACCURACY_EXACT_NS ? error : ACCURACY_EXACT_NS]++;
	if (after - before < ACCURACY_EXACT_NS)
		stats->widths[after - before]++;
	else
		stats->widths[ACCURACY_EXACT_NS]++;
	if (error > stats->max_ns)
		stats->max_ns = error;
	if (stats->samples > 1 && ours_low < stats->last_ns) {
		stats->backwards++;
		if (stats->last_ns - ours_low > stats->worst_back_ns)
			stats->worst_back_ns = stats->last_ns - ours_low;
	}
	stats->last_ns = ours_low;
}

/* Checks a realtime reading [low, low + granule) against the previous
 * realtime reading from any entry point. */
static void accuracy_realtime_order(int64_t low, int64_t granule)
{
	int64_t last = accuracy_realtime_last_ns - accuracy_realtime_last_ns % granule;

	if (low < last) {
		accuracy_realtime_inversions++;
		if (last - low > accuracy_realtime_worst_ns)
			accuracy_realtime_worst_ns = last - low;
	}
	if (low > accuracy_realtime_last_ns)
		accuracy_realtime_last_ns = low;
}

/* The smallest value that at least p percent of the samples counted in
 * counts do not exceed; beyond, the largest seen. */
static uint64_t accuracy_percentile(const uint64_t *counts, uint64_t samples, double p,
				    uint64_t largest)
{
	uint64_t wanted = (uint64_t)((double)samples * p / 100.0 + 0.5), seen = 0;

	if (wanted == 0)
		wanted = 1;
	for (uint64_t e = 0; e < ACCURACY_EXACT_NS; e++) {
		seen += counts[e];
		if (seen >= wanted)
			return e;
	}
	return largest;
}

/* One reading of clock_gettime(id) between two of libc's (the kernel's
 * clock, through the vDSO where it has one), recorded as row c. */
static void accuracy_bracket(enum accuracy_clock c, clockid_t id)
{
	struct timespec before, ours, after;

	integ_libc.clock_gettime(id, &before);
	clock_gettime(id, &ours);
	integ_libc.clock_gettime(id, &after);
	accuracy_record(&accuracy_stats[c], integ_ns(&before), integ_ns(&ours), integ_ns(&ours),
			integ_ns(&after));
}

/* One bracketed reading of each clock. */
static void accuracy_round(void)
{
	struct timespec before, ours, after;
	struct timeval tv;

	accuracy_bracket(ACCURACY_MONOTONIC, CLOCK_MONOTONIC);
	/* BOOTTIME and TAI are MONOTONIC plus an offset of their own: read
	 * between the others, so that each follows another clock's reading
	 * and a cached second of one clock is tested against the next. */
	accuracy_bracket(ACCURACY_BOOTTIME, CLOCK_BOOTTIME);
	accuracy_bracket(ACCURACY_TAI, CLOCK_TAI);
	/* MONOTONIC_RAW has lines of its own, and a clamp of its own. */
	accuracy_bracket(ACCURACY_MONOTONIC_RAW, CLOCK_MONOTONIC_RAW);

	integ_libc.clock_gettime(CLOCK_REALTIME, &before);
	clock_gettime(CLOCK_REALTIME, &ours);
	integ_libc.clock_gettime(CLOCK_REALTIME, &after);
	accuracy_record(&accuracy_stats[ACCURACY_REALTIME], integ_ns(&before), integ_ns(&ours),
			integ_ns(&ours), integ_ns(&after));
	accuracy_realtime_order(integ_ns(&ours), 1);

	/* gettimeofday is the realtime clock cut to microseconds: bracket it
	 * with the nanosecond clock, and let it stand for its whole µs. */
	integ_libc.clock_gettime(CLOCK_REALTIME, &before);
	gettimeofday(&tv, NULL);
	integ_libc.clock_gettime(CLOCK_REALTIME, &after);
	{
		int64_t low = (int64_t)tv.tv_sec * INTEG_NS_PER_SEC + (int64_t)tv.tv_usec * 1000;
		accuracy_record(&accuracy_stats[ACCURACY_GETTIMEOFDAY], integ_ns(&before), low,
				low + 999, integ_ns(&after));
		accuracy_realtime_order(low, 1000);
	}

	integ_libc.timespec_get(&before, TIME_UTC);
	timespec_get(&ours, TIME_UTC);
	integ_libc.timespec_get(&after, TIME_UTC);
	accuracy_record(&accuracy_stats[ACCURACY_TIMESPEC_GET], integ_ns(&before), integ_ns(&ours),
			integ_ns(&ours), integ_ns(&after));
	accuracy_realtime_order(integ_ns(&ours), 1);
}

/* Moves the thread to the next CPU it may use after *cpu, so that readings
 * come from every CPU's line and across migrations. */
static void accuracy_move(const cpu_set_t *allowed, int *cpu)
{
	cpu_set_t one;

	if (CPU_COUNT(allowed) < 2)
		return;
	do
		*cpu = (*cpu + 1) % CPU_SETSIZE;
	while (!CPU_ISSET(*cpu, allowed));
	CPU_ZERO(&one);
	CPU_SET(*cpu, &one);
	sched_setaffinity(0, sizeof one, &one);
}

/* Prints the figures of each clock and fails those beyond the limits. */
static void accuracy_report(const enum integ_path paths[INTEG_API_COUNT], double seconds)
{
	printf("%-35s %-7s %10s %8s %8s %6s %6s %6s %9s %7s\n", "entry point", "path", "samples",
	       "early", "late", "p50", "p99", "max", "backwards", "bracket");
	for (unsigned c = 0; c < ACCURACY_COUNT; c++) {
		const struct accuracy_stats *stats = &accuracy_stats[c];
		uint64_t p50 =
		    accuracy_percentile(stats->counts, stats->samples, 50, stats->max_ns);
		uint64_t p99 =
		    accuracy_percentile(stats->counts, stats->samples, 99, stats->max_ns);
		uint64_t width =
		    accuracy_percentile(stats->widths, stats->samples, 50, ACCURACY_EXACT_NS);

		printf("%-35s %-7s %10llu %8llu %8llu %6llu %6llu %6llu %9llu %7llu\n",
		       accuracy_names[c], integ_path_name(paths[accuracy_api[c]]),
		       (unsigned long long)stats->samples, (unsigned long long)stats->early,
		       (unsigned long long)stats->late, (unsigned long long)p50,
		       (unsigned long long)p99, (unsigned long long)stats->max_ns,
		       (unsigned long long)stats->backwards, (unsigned long long)width);
		if (stats->samples == 0)
			integ_fail("%s: no samples", accuracy_names[c]);
		if (p99 > ACCURACY_P99_LIMIT_NS)
			integ_fail("%s: p99 error %llu ns > %d ns", accuracy_names[c],
				   (unsigned long long)p99, ACCURACY_P99_LIMIT_NS);
		if (stats->max_ns > ACCURACY_MAX_LIMIT_NS)
			integ_fail("%s: max error %llu ns > %d ns", accuracy_names[c],
				   (unsigned long long)stats->max_ns, ACCURACY_MAX_LIMIT_NS);
		if (stats->backwards > 0)
			integ_fail("%s: %llu backward steps, the worst %lld ns", accuracy_names[c],
				   (unsigned long long)stats->backwards,
				   (long long)stats->worst_back_ns);
	}
	printf("errors in ns outside libc's bracket, over %.1f s; 'early' and 'late' count the "
	       "readings before and after it; 'bracket' is its median width in ns\n",
	       seconds);
	printf("realtime entry points out of order with each other: %llu, the worst %lld ns "
	       "(shown, not asserted)\n",
	       (unsigned long long)accuracy_realtime_inversions,
	       (long long)accuracy_realtime_worst_ns);
}

/* Waits for the fast path, then brackets readings for the given time. */
int main(int argc, char **argv)
{
	enum integ_path paths[INTEG_API_COUNT];
	double seconds = integ_env_true("FASTTIME_SOAK") ? 20.0 : 3.0;
	int64_t start, end, next_move;
	cpu_set_t allowed;
	int cpu = -1;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1)
		seconds = atof(argv[1]);
	if (seconds <= 0) {
		fprintf(stderr, "usage: %s [SECONDS]\n", argv[0]);
		return INTEG_ERROR;
	}
	integ_require_preload();
	integ_load_libc();
	integ_require_tsc();
	printf("mode: %s\n", getenv("FASTTIME_MODE") ? getenv("FASTTIME_MODE") : "default");
	if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
		CPU_ZERO(&allowed);

	/* The first call starts the refresh thread; it calibrates within tens
	 * of milliseconds. Half a second leaves a wide margin. */
	integ_capture_begin();
	start = integ_libc_mono_ns();
	accuracy_round();
	integ_capture_end(3000, paths);
	while (integ_libc_mono_ns() - start < 500000000)
		integ_sleep_ms(10);
	memset(accuracy_stats, 0, sizeof accuracy_stats);
	accuracy_realtime_inversions = 0;
	accuracy_realtime_worst_ns = 0;
	accuracy_realtime_last_ns = 0;

	start = integ_libc_mono_ns();
	end = start + (int64_t)(seconds * 1e9);
	next_move = start;
	for (int64_t now = start; now < end; now = integ_libc_mono_ns()) {
		if (now >= next_move) {
			accuracy_move(&allowed, &cpu);
			next_move = now + ACCURACY_MOVE_EVERY_NS;
		}
		for (unsigned i = 0; i < 64; i++)
			accuracy_round();
	}
	accuracy_report(paths, (double)(integ_libc_mono_ns() - start) / 1e9);
	integ_check_forced(paths);
	return integ_status();
}
