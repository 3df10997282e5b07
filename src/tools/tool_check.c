/* The cross-CPU counter test behind fasttime --check.
 *
 * Two threads, one pinned to the reference CPU (A, the first allowed CPU)
 * and one to the CPU under test (B), play ping-pong through one cache line:
 *
 *   A: t1 = TSC; send request i
 *                                   B: see request i; t2 = TSC; send answer i
 *   A: see answer i; t3 = TSC
 *
 * B sees the request only after A read t1, and reads t2 only after it saw
 * the request; likewise for the answer. So in real time t1 < t2 < t3. If B's
 * counter reads d ticks more than A's at the same instant, A's counter read
 * t2 - d at the moment of t2, so t1 < t2 - d < t3, that is
 *
 *   t2 - t3 < d < t2 - t1
 *
 * Each round trip bounds d; the intersection over all of them is reported.
 * The interval contains 0 exactly when no round trip saw a counter go
 * backwards (t2 < t1 or t3 < t2). There is no further tolerance, on
 * purpose: an offset smaller than the time a cache line takes to cross
 * between the two CPUs stays inside the interval and no program can observe
 * it, since any hand-off of a timestamp between threads takes at least that
 * long; an interval that excludes 0 means a hand-off did see time go back.
 * Those are the two cases the exit status tells apart. */
#include "config.h"

#include "tool_check.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu.h"
#include "timespec_ns.h"

/* Round trips per CPU, unless the time runs out first. */
#define TOOL_CHECK_TRIPS 20000u
/* All CPUs share this budget, so that a 64-CPU machine is done in a few
 * seconds: each pair gets its share, at most TOOL_CHECK_PAIR_MAX_NS. */
#define TOOL_CHECK_BUDGET_NS   2000000000ull
#define TOOL_CHECK_PAIR_MAX_NS 250000000ull
#define TOOL_CHECK_PAIR_MIN_NS 2000000ull
/* An answer that takes this long means B is not running: give up on it. */
#define TOOL_CHECK_STALL_NS 500000000ull
/* How long the counter's rate is measured, for the figures in ns. */
#define TOOL_CHECK_RATE_NS 20000000ull

/* The ping-pong line: on its own cache line, so that nothing else moves
 * with it. Request i is 2i + 1, its answer 2i + 2. */
struct tool_check_channel {
	uint64_t seq;
} __attribute__((aligned(64)));

/* One pair's run: what both threads read and write. */
struct tool_check_pair {
	struct tool_check_channel channel;
	bool stop __attribute__((aligned(64))); /* A is done: B leaves */
	uint32_t reference, cpu;
	unsigned capacity;
	uint64_t deadline_ns; /* A starts no round trip after this */
	unsigned trips;	      /* completed round trips */
	bool stalled;	      /* B stopped answering */
	uint64_t *t1, *t2, *t3;
	uint32_t *cpu1, *cpu2, *cpu3; /* the CPU each read was taken on */
};

/* What one pair's round trips say about B's offset. */
struct tool_check_result {
	unsigned used;		  /* round trips whose reads ran on the right CPUs */
	int64_t low, high;	  /* d lies in [low, high], in ticks */
	uint64_t best_round_trip; /* the shortest t3 - t1, in ticks */
	unsigned backward;	  /* round trips that saw a counter go back */
};

/* CLOCK_MONOTONIC in ns, for the deadlines and the counter's rate. */
static uint64_t tool_check_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return timespec_to_ns(&ts);
}

/* How the counter and the CPU id are read: rdtscp where the CPU advertises
 * it, else lfence; rdtsc with the CPU id read before and after (the rule the
 * library follows: TSC_AUX is never read unless rdtscp is advertised). */
static struct cpu_reading tool_check_reading;

/* Reads the counter after every earlier load has completed (rdtscp, or the
 * lfence before rdtsc, waits for them) and before any later instruction
 * starts (the lfence after it): so the read falls after the message that
 * was seen and before the one that is sent. C11 fences order memory only,
 * not the counter; these are the fences that order the counter. *cpu is
 * where it was read, CPU_MAX_CPUS or more when that cannot be told. */
static inline uint64_t tool_check_tsc(uint32_t *cpu)
{
	struct cpu_stamp stamp;

	/* Nor may the compiler move the read above the wait before it. */
	__asm__ volatile("" ::: "memory");
	stamp = cpu_read_stamp(tool_check_reading);
	__asm__ volatile("lfence" ::: "memory");
	*cpu = stamp.cpu;
	return stamp.tsc;
}

unsigned tool_check_allowed_cpus(uint32_t *cpus, unsigned max)
{
	size_t size = CPU_ALLOC_SIZE(CPU_MAX_CPUS);
	cpu_set_t *set = CPU_ALLOC(CPU_MAX_CPUS);
	unsigned n = 0;

	if (set == NULL)
		return 0;
	if (sched_getaffinity(0, size, set) == 0) {
		for (uint32_t cpu = 0; cpu < CPU_MAX_CPUS && n < max; cpu++)
			if (CPU_ISSET_S(cpu, size, set))
				cpus[n++] = cpu;
	}
	CPU_FREE(set);
	return n;
}

/* B's side: answers each request with its own reading. */
static void *tool_check_partner(void *arg)
{
	struct tool_check_pair *pair = arg;

	for (unsigned i = 0; i < pair->capacity; i++) {
		uint64_t request = 2 * (uint64_t)i + 1;

		while (__atomic_load_n(&pair->channel.seq, __ATOMIC_ACQUIRE) != request)
			if (__atomic_load_n(&pair->stop, __ATOMIC_ACQUIRE))
				return NULL;
		pair->t2[i] = tool_check_tsc(&pair->cpu2[i]);
		__atomic_store_n(&pair->channel.seq, request + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* Waits for B's answer; false when B stopped answering. */
static bool tool_check_wait_answer(struct tool_check_pair *pair, uint64_t answer)
{
	uint64_t give_up = 0;

	for (unsigned spins = 1; __atomic_load_n(&pair->channel.seq, __ATOMIC_ACQUIRE) != answer;
	     spins++) {
		/* The clock is read rarely, to keep the wait a tight loop. */
		if (spins % 65536 == 0) {
			uint64_t now = tool_check_now_ns();
			if (give_up == 0)
				give_up = now + TOOL_CHECK_STALL_NS;
			else if (now > give_up)
				return false;
		}
	}
	return true;
}

/* A's side: sends the requests and times the answers. The counts are kept
 * in locals and stored at the end: the pair's other fields share a cache
 * line with the stop flag, which B reads while it waits. */
static void *tool_check_reference(void *arg)
{
	struct tool_check_pair *pair = arg;
	unsigned trips = 0;
	bool stalled = false;

	for (unsigned i = 0; i < pair->capacity; i++) {
		uint64_t request = 2 * (uint64_t)i + 1;

		pair->t1[i] = tool_check_tsc(&pair->cpu1[i]);
		__atomic_store_n(&pair->channel.seq, request, __ATOMIC_RELEASE);
		if (!tool_check_wait_answer(pair, request + 1)) {
			stalled = true;
			break;
		}
		pair->t3[i] = tool_check_tsc(&pair->cpu3[i]);
		trips = i + 1;
		if (i % 64 == 63 && tool_check_now_ns() > pair->deadline_ns)
			break;
	}
	pair->trips = trips;
	pair->stalled = stalled;
	__atomic_store_n(&pair->stop, true, __ATOMIC_RELEASE);
	return NULL;
}

/* Starts fn in a thread pinned to cpu. */
static int tool_check_start(pthread_t *thread, uint32_t cpu, void *(*fn)(void *),
			    struct tool_check_pair *pair)
{
	size_t size = CPU_ALLOC_SIZE(CPU_MAX_CPUS);
	cpu_set_t *set = CPU_ALLOC(CPU_MAX_CPUS);
	pthread_attr_t attr;
	int rc;

	if (set == NULL)
		return ENOMEM;
	CPU_ZERO_S(size, set);
	CPU_SET_S(cpu, size, set);
	pthread_attr_init(&attr);
	rc = pthread_attr_setaffinity_np(&attr, size, set);
	if (rc == 0)
		rc = pthread_create(thread, &attr, fn, pair);
	pthread_attr_destroy(&attr);
	CPU_FREE(set);
	return rc;
}

/* Runs the ping-pong between pair->reference and pair->cpu; 0 or an errno. */
static int tool_check_run_pair(struct tool_check_pair *pair)
{
	pthread_t a, b;
	int rc;

	pair->channel.seq = 0;
	pair->stop = false;
	pair->trips = 0;
	pair->stalled = false;
	rc = tool_check_start(&b, pair->cpu, tool_check_partner, pair);
	if (rc != 0)
		return rc;
	rc = tool_check_start(&a, pair->reference, tool_check_reference, pair);
	if (rc != 0) {
		__atomic_store_n(&pair->stop, true, __ATOMIC_RELEASE);
		pthread_join(b, NULL);
		return rc;
	}
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	return 0;
}

/* Intersects the bounds of every round trip whose three reads ran where
 * they should (pinning alone proves nothing: each read names its CPU). */
static void tool_check_analyse(const struct tool_check_pair *pair, struct tool_check_result *r)
{
	r->used = 0;
	r->low = INT64_MIN;
	r->high = INT64_MAX;
	r->best_round_trip = UINT64_MAX;
	r->backward = 0;
	for (unsigned i = 0; i < pair->trips; i++) {
		int64_t upper = (int64_t)(pair->t2[i] - pair->t1[i]);
		int64_t lower = (int64_t)(pair->t2[i] - pair->t3[i]);

		if (pair->cpu1[i] != pair->reference || pair->cpu3[i] != pair->reference ||
		    pair->cpu2[i] != pair->cpu)
			continue;
		r->used++;
		if (upper < r->high)
			r->high = upper;
		if (lower > r->low)
			r->low = lower;
		if (pair->t3[i] - pair->t1[i] < r->best_round_trip)
			r->best_round_trip = pair->t3[i] - pair->t1[i];
		if (upper < 0 || lower > 0)
			r->backward++;
	}
}

/* Ticks as ns, at the measured rate. */
static double tool_check_ns(double ns_per_tick, int64_t ticks)
{
	return ns_per_tick * (double)ticks;
}

/* Prints one CPU's line of the report. */
static void tool_check_print(const struct tool_check_pair *pair, const struct tool_check_result *r,
			     double ns_per_tick)
{
	char ticks[48], ns[48], trip[32];

	if (r->low > r->high) {
		/* No constant offset fits every round trip. */
		snprintf(ticks, sizeof ticks, "none: not constant");
		snprintf(ns, sizeof ns, "-");
	} else {
		snprintf(ticks, sizeof ticks, "%+" PRId64 " .. %+" PRId64, r->low, r->high);
		snprintf(ns, sizeof ns, "%+.1f .. %+.1f", tool_check_ns(ns_per_tick, r->low),
			 tool_check_ns(ns_per_tick, r->high));
	}
	snprintf(trip, sizeof trip, "%.1f",
		 tool_check_ns(ns_per_tick, (int64_t)r->best_round_trip));
	printf("%5" PRIu32 " %7u  %-24s %-22s %10s %9u\n", pair->cpu, r->used, ticks, ns, trip,
	       r->backward);
}

/* The counter's rate against CLOCK_MONOTONIC, over a short sleep. */
static double tool_check_ns_per_tick(void)
{
	struct timespec pause = { 0, (long)TOOL_CHECK_RATE_NS };
	uint64_t ns0 = tool_check_now_ns(), tsc0 = cpu_rdtsc();
	uint64_t ns1, tsc1;

	nanosleep(&pause, NULL);
	ns1 = tool_check_now_ns();
	tsc1 = cpu_rdtsc();
	return tsc1 > tsc0 ? (double)(ns1 - ns0) / (double)(tsc1 - tsc0) : 0.0;
}

/* Allocates the reads of TOOL_CHECK_TRIPS round trips; false when out of memory. */
static bool tool_check_alloc(struct tool_check_pair *pair)
{
	pair->capacity = TOOL_CHECK_TRIPS;
	pair->t1 = calloc(TOOL_CHECK_TRIPS, sizeof *pair->t1);
	pair->t2 = calloc(TOOL_CHECK_TRIPS, sizeof *pair->t2);
	pair->t3 = calloc(TOOL_CHECK_TRIPS, sizeof *pair->t3);
	pair->cpu1 = calloc(TOOL_CHECK_TRIPS, sizeof *pair->cpu1);
	pair->cpu2 = calloc(TOOL_CHECK_TRIPS, sizeof *pair->cpu2);
	pair->cpu3 = calloc(TOOL_CHECK_TRIPS, sizeof *pair->cpu3);
	return pair->t1 && pair->t2 && pair->t3 && pair->cpu1 && pair->cpu2 && pair->cpu3;
}

/* Frees what tool_check_alloc got, also after a partial failure. */
static void tool_check_free(struct tool_check_pair *pair)
{
	free(pair->t1);
	free(pair->t2);
	free(pair->t3);
	free(pair->cpu1);
	free(pair->cpu2);
	free(pair->cpu3);
}

int tool_check_run(void)
{
	static uint32_t cpus[CPU_MAX_CPUS];
	static struct tool_check_pair pair;
	struct cpu_facts facts;
	unsigned n, backward = 0, trips = 0, untested = 0;
	uint64_t share;
	double ns_per_tick;

	cpu_probe_instructions(&facts);
	if (cpu_choose_reading(&facts, false, &tool_check_reading) != NULL) {
		printf("result: cannot check: %s\n",
		       cpu_choose_reading(&facts, false, &tool_check_reading));
		return 1;
	}
	n = tool_check_allowed_cpus(cpus, CPU_MAX_CPUS);
	if (n == 0) {
		printf("result: cannot check: cannot read this process's CPU affinity\n");
		return 1;
	}
	ns_per_tick = tool_check_ns_per_tick();
	printf("fasttime --check: each CPU's time-stamp counter against CPU %" PRIu32 "'s\n"
	       "(counter at %.3f GHz, read with %s, CPU id from %s;\n"
	       "the offset lies between t2 - t3 and t2 - t1 for every round trip\n"
	       "t1 -> t2 -> t3 through a shared cache line)\n\n",
	       cpus[0], ns_per_tick > 0 ? 1.0 / ns_per_tick : 0.0,
	       cpu_counter_read_name(tool_check_reading.counter),
	       cpu_id_source_name(tool_check_reading.cpu_id));
	printf("%5s %7s  %-24s %-22s %10s %9s\n", "cpu", "trips", "offset ticks", "offset ns",
	       "best rt ns", "backward");
	printf("%5" PRIu32 " %7s  %s\n", cpus[0], "-", "reference");
	fflush(stdout);
	if (n == 1) {
		printf("\nresult: consistent (one CPU only: nothing to compare)\n");
		return 0;
	}
	if (!tool_check_alloc(&pair)) {
		tool_check_free(&pair);
		printf("\nresult: cannot check: out of memory\n");
		return 1;
	}
	share = TOOL_CHECK_BUDGET_NS / (n - 1);
	share = share > TOOL_CHECK_PAIR_MAX_NS ? TOOL_CHECK_PAIR_MAX_NS : share;
	share = share < TOOL_CHECK_PAIR_MIN_NS ? TOOL_CHECK_PAIR_MIN_NS : share;
	pair.reference = cpus[0];
	for (unsigned k = 1; k < n; k++) {
		struct tool_check_result result;
		int rc;

		pair.cpu = cpus[k];
		pair.deadline_ns = tool_check_now_ns() + share;
		rc = tool_check_run_pair(&pair);
		if (rc != 0) {
			printf("%5" PRIu32 " %7s  cannot run there: %s\n", cpus[k], "-",
			       strerror(rc));
			untested++;
			continue;
		}
		tool_check_analyse(&pair, &result);
		if (pair.stalled && result.used == 0) {
			printf("%5" PRIu32 " %7s  no answer from this CPU\n", cpus[k], "-");
			untested++;
			continue;
		}
		if (result.used == 0) {
			printf("%5" PRIu32 " %7s  no round trip ran on the right CPUs\n", cpus[k],
			       "-");
			untested++;
			continue;
		}
		tool_check_print(&pair, &result, ns_per_tick);
		fflush(stdout);
		backward += result.backward;
		trips += result.used;
	}
	tool_check_free(&pair);
	if (backward > 0) {
		printf("\nresult: inconsistent: %u of %u round trips saw a counter go backwards\n",
		       backward, trips);
		return 1;
	}
	if (untested > 0) {
		printf("\nresult: inconclusive: %u CPU(s) could not be tested\n", untested);
		return 1;
	}
	printf("\nresult: consistent: no round trip saw a counter go backwards\n");
	return 0;
}
