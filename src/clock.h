/* The read path: TSC -> CPU -> line -> nanoseconds -> timespec.
 *
 * Everything here is inline so that each exported function compiles to one
 * straight run of instructions. In ordered mode every instruction after
 * rdtscp is serial, so the chain after it is kept to a multiply, an add and a
 * subtract: the line is loaded before the read (for the CPU this thread last
 * ran on), and the seconds split is cached per thread. */
#ifndef FASTTIME_CLOCK_H
#define FASTTIME_CLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/time.h>
#include <time.h>

#include "calib.h"
#include "cpu.h"
#include "table.h"

#define CLOCK_NS_PER_SEC 1000000000u

/* api_flags bits: which entry points answer from the TSC, and how. */
enum clock_api {
	/* Bit n is clock id n, so the entry point tests (flags >> id) & 1. */
	CLOCK_API_REALTIME = 1u << CLOCK_REALTIME,   /* clock_gettime(CLOCK_REALTIME) */
	CLOCK_API_MONOTONIC = 1u << CLOCK_MONOTONIC, /* clock_gettime(CLOCK_MONOTONIC) */
	CLOCK_API_GETTIMEOFDAY = 1u << 2,
	CLOCK_API_TIME = 1u << 3,
	CLOCK_API_TIMESPEC_GET = 1u << 4,
	CLOCK_API_ALL = 0x1fu,
	CLOCK_MODE_RELAXED = 1u << 8, /* rdtsc + rseq CPU id instead of rdtscp */
};

/* A cached second: tv_sec for any ns in [sec * 1e9, (sec + 1) * 1e9). One
 * word, so that a signal handler's refill can never pair one second's start
 * with another's number; the multiply is done before the counter is read. */
struct clock_second {
	int64_t sec;
};

/* Per-thread state, in the static TLS block: one load, no call. */
struct clock_thread_state {
	uint64_t last_mono_ns; /* the monotonic clamp */
	uint32_t last_cpu;     /* whose line to load before the TSC read */
	struct clock_second mono_second;
	struct clock_second real_second;
};

extern __thread struct clock_thread_state clock_thread __attribute__((tls_model("initial-exec")));

/* Out of line: the rare cases, kept off the inline path. */
uint64_t clock_clamp_backwards(uint64_t ns);
int64_t clock_second_refill(struct clock_second *second, uint64_t ns);

static inline uint64_t clock_mulhi(uint64_t a, uint64_t b)
{
	return (uint64_t)(((unsigned __int128)a * b) >> 64);
}

/* Turns tsc and a line into monotonic ns, checking freshness and clamping so
 * that this thread never sees time go back. */
static inline bool clock_finish(uint64_t tsc, struct calib_line line, uint64_t valid_from,
				uint64_t valid_ticks, uint64_t *ns_out)
{
	uint64_t ns;

	if (__builtin_expect(tsc - valid_from > valid_ticks || line.mult == 0, 0))
		return false;
	ns = clock_mulhi(tsc, line.mult) + line.offset;
	/* A branch, not a conditional move: predicted, it keeps the clamp off
	 * the chain that follows the counter read. */
	if (__builtin_expect(ns < clock_thread.last_mono_ns, 0))
		ns = clock_clamp_backwards(ns);
	clock_thread.last_mono_ns = ns;
	*ns_out = ns;
	return true;
}

/* Ordered: rdtscp gives the counter and the CPU id in one instruction. */
static inline bool clock_read_ordered(uint64_t *ns_out)
{
	uint32_t guess = clock_thread.last_cpu & CPU_AUX_CPU_MASK;
	struct calib_line line = table_load(guess);
	uint64_t valid_from = __atomic_load_n(&table_shared.valid_from_tsc, __ATOMIC_ACQUIRE);
	uint64_t valid_ticks = __atomic_load_n(&table_shared.valid_ticks, __ATOMIC_ACQUIRE);
	uint32_t aux, cpu;
	uint64_t tsc = cpu_rdtscp(&aux);

	cpu = cpu_from_tsc_aux(aux);
	if (__builtin_expect(cpu != guess, 0)) {
		line = table_load(cpu);
		clock_thread.last_cpu = cpu;
	}
	return clock_finish(tsc, line, valid_from, valid_ticks, ns_out);
}

/* Relaxed: rdtsc overlaps with the surrounding work. The CPU id comes from
 * the rseq area before and after; a migration in between shows as a change
 * (the kernel rewrites the id on the way back to user space), and then the
 * ordered read answers instead. */
static inline bool clock_read_relaxed(uint64_t *ns_out)
{
	uint32_t cpu = cpu_rseq_current();
	uint64_t valid_from, valid_ticks, tsc;
	struct calib_line line;

	if (__builtin_expect(cpu >= CPU_MAX_CPUS, 0))
		return clock_read_ordered(ns_out);
	line = table_load(cpu);
	valid_from = __atomic_load_n(&table_shared.valid_from_tsc, __ATOMIC_ACQUIRE);
	valid_ticks = __atomic_load_n(&table_shared.valid_ticks, __ATOMIC_ACQUIRE);
	tsc = cpu_rdtsc();
	if (__builtin_expect(cpu_rseq_current() != cpu, 0))
		return clock_read_ordered(ns_out);
	return clock_finish(tsc, line, valid_from, valid_ticks, ns_out);
}

static inline bool clock_read_mono_ns(uint32_t flags, uint64_t *ns_out)
{
	if (flags & CLOCK_MODE_RELAXED)
		return clock_read_relaxed(ns_out);
	return clock_read_ordered(ns_out);
}

static inline uint64_t clock_realtime_offset(void)
{
	return __atomic_load_n(&table_shared.realtime_offset_ns, __ATOMIC_RELAXED);
}

/* Seconds and the rest, with the division done once a second per thread. */
static inline void clock_split(struct clock_second *second, uint64_t ns, int64_t *sec,
			       uint64_t *rest_ns)
{
	int64_t cached = second->sec;
	uint64_t into = ns - (uint64_t)cached * CLOCK_NS_PER_SEC;

	if (__builtin_expect(into >= CLOCK_NS_PER_SEC, 0)) {
		cached = clock_second_refill(second, ns);
		into = ns - (uint64_t)cached * CLOCK_NS_PER_SEC;
	}
	*sec = cached;
	*rest_ns = into;
}

static inline void clock_to_timespec(struct clock_second *second, uint64_t ns, struct timespec *ts)
{
	int64_t sec;
	uint64_t rest;

	clock_split(second, ns, &sec, &rest);
	ts->tv_sec = (time_t)sec;
	ts->tv_nsec = (long)rest;
}

/* The answers each entry point gives; false means "ask libc". */
static inline bool clock_answer_monotonic(uint32_t flags, struct timespec *ts)
{
	uint64_t ns;

	if (!clock_read_mono_ns(flags, &ns))
		return false;
	clock_to_timespec(&clock_thread.mono_second, ns, ts);
	return true;
}

static inline bool clock_answer_realtime(uint32_t flags, struct timespec *ts)
{
	uint64_t offset = clock_realtime_offset();
	uint64_t ns;

	if (!clock_read_mono_ns(flags, &ns))
		return false;
	clock_to_timespec(&clock_thread.real_second, ns + offset, ts);
	return true;
}

static inline bool clock_answer_timeval(uint32_t flags, struct timeval *tv)
{
	uint64_t offset = clock_realtime_offset();
	uint64_t ns, rest;
	int64_t sec;

	if (!clock_read_mono_ns(flags, &ns))
		return false;
	clock_split(&clock_thread.real_second, ns + offset, &sec, &rest);
	tv->tv_sec = (time_t)sec;
	tv->tv_usec = (suseconds_t)(rest / 1000u);
	return true;
}

static inline bool clock_answer_seconds(uint32_t flags, time_t *sec_out)
{
	uint64_t offset = clock_realtime_offset();
	uint64_t ns, rest;
	int64_t sec;

	if (!clock_read_mono_ns(flags, &ns))
		return false;
	clock_split(&clock_thread.real_second, ns + offset, &sec, &rest);
	*sec_out = (time_t)sec;
	return true;
}

#endif
