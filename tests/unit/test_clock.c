/* The read path with fake lines on the real TSC: answers lie on the line
 * between TSC reads taken around them, in every form, per CPU, clamped per
 * thread, and refused when the table is stale or empty. */
#include "config.h"

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "calib.h"
#include "clock.h"
#include "clock_check.h"
#include "cpu.h"
#include "libc.h"
#include "table.h"
#include "unit.h"

#define NS_PER_SEC 1000000000ull
/* Realtime minus monotonic in these tests: November 2023, odd nanoseconds. */
#define CLOCK_TEST_REALTIME_OFFSET (1700000000ull * NS_PER_SEC + 987654321ull)
/* Slopes: about one fake ns per real ns at 3 GHz, and much slower ones for
 * the tests that must not see time run on. */
#define CLOCK_TEST_MULT	      0x9000000000000000ull
#define CLOCK_TEST_SLOW_MULT  (1ull << 58)
#define CLOCK_TEST_CRAWL_MULT (1ull << 46)

/* Every reading this machine can take (clock.h's CLOCK_READ_BITS), filled
 * by suite_clock: rdtscp where advertised, lfence; rdtsc where lfence
 * serializes, rdtsc, each CPU id source glibc and the CPU allow. */
static uint32_t clock_test_modes[5];
static int clock_test_mode_total;
static bool clock_test_has_rdtscp;

static cpu_set_t clock_test_saved_mask;
static bool clock_test_pinned;
static int clock_test_cpu;

/* libc's clock_gettime, which the fixture puts back. */
static int (*clock_test_libc_clock_gettime)(clockid_t, struct timespec *);
/* The kernel the lines are checked against (clock_check.h): its
 * CLOCK_MONOTONIC is this CPU's line at the counter, less lag_ns; each
 * read takes stall_ns of the line's time (a read preempted). */
static int64_t clock_test_kernel_lag_ns;
static uint64_t clock_test_kernel_stall_ns;
static unsigned clock_test_kernel_reads;

static int clock_test_kernel_clock_gettime(clockid_t id, struct timespec *ts)
{
	struct calib_line line;
	uint64_t ns;

	if (id != CLOCK_MONOTONIC || clock_test_cpu < 0)
		return clock_test_libc_clock_gettime(id, ts);
	line = table_load_lines(CLOCK_LINES_MONOTONIC, (uint32_t)clock_test_cpu);
	if (line.mult == 0)
		return clock_test_libc_clock_gettime(id, ts);
	ns = calib_line_eval(line, cpu_rdtsc_fenced());
	while (calib_line_eval(line, cpu_rdtsc_fenced()) - ns < clock_test_kernel_stall_ns)
		;
	ns -= (uint64_t)clock_test_kernel_lag_ns;
	clock_test_kernel_reads++;
	ts->tv_sec = (time_t)(ns / NS_PER_SEC);
	ts->tv_nsec = (long)(ns % NS_PER_SEC);
	return 0;
}

/* The words of the process's deadlines, as at a process's start. */
static void clock_test_deadlines_clear(void)
{
	memset(&wiped.words, 0, sizeof wiped.words);
}

/* Every test starts with an empty table, a fresh thread state, no
 * deadline for the process's reads (the tests of the deadlines set them:
 * the others would see a fast read decline at a check's end), a kernel
 * that agrees with the lines, and this thread pinned to its CPU so that
 * its TSC reads are in order and its CPU's line is known. */
static void clock_test_setup(void)
{
	cpu_set_t one;

	clock_test_deadlines_clear();
	wiped.words.judged_until_tsc = UINT64_MAX;
	libc_resolve();
	clock_test_libc_clock_gettime = libc_time.clock_gettime;
	clock_test_kernel_lag_ns = 0;
	clock_test_kernel_stall_ns = 0;
	clock_test_kernel_reads = 0;
	libc_time.clock_gettime = clock_test_kernel_clock_gettime;

	memset(table_page.records, 0, sizeof table_page.records);
	memset(table_page.raw_records, 0, sizeof table_page.raw_records);
	memset(&table_page.shared, 0, sizeof table_page.shared);
	memset(&clock_thread, 0, sizeof clock_thread);
	table_wanted_clear();
	clock_test_pinned = false;
	clock_test_cpu = sched_getcpu();
	if (clock_test_cpu < 0 ||
	    sched_getaffinity(0, sizeof clock_test_saved_mask, &clock_test_saved_mask) != 0)
		return;
	CPU_ZERO(&one);
	CPU_SET(clock_test_cpu, &one);
	clock_test_pinned = sched_setaffinity(0, sizeof one, &one) == 0;
}

static void clock_test_teardown(void)
{
	libc_time.clock_gettime = clock_test_libc_clock_gettime;
	clock_test_deadlines_clear();
	if (clock_test_pinned)
		sched_setaffinity(0, sizeof clock_test_saved_mask, &clock_test_saved_mask);
	memset(table_page.records, 0, sizeof table_page.records);
	memset(table_page.raw_records, 0, sizeof table_page.raw_records);
	memset(&table_page.shared, 0, sizeof table_page.shared);
	memset(&clock_thread, 0, sizeof clock_thread);
}

/* The TSC, read after everything before it and before anything after it
 * (rdtscp where the CPU advertises it, else lfence; rdtsc, then lfence). */
static uint64_t clock_test_tsc(void)
{
	uint32_t aux;
	uint64_t tsc = clock_test_has_rdtscp ? cpu_rdtscp(&aux) : cpu_rdtsc_fenced();

	__asm__ volatile("lfence" ::: "memory");
	return tsc;
}

/* The line of slope mult whose value at tsc is ns. */
static struct calib_line clock_test_line_at(uint64_t mult, uint64_t tsc, uint64_t ns)
{
	struct calib_line line = { .mult = mult, .offset = 0 };

	line.offset = ns - calib_line_eval(line, tsc);
	return line;
}

/* Gives every CPU the same line and makes it valid for any TSC value. */
static void clock_test_publish_all(struct calib_line line)
{
	for (uint32_t cpu = 0; cpu < CPU_MAX_CPUS; cpu++)
		table_publish(cpu, line);
	table_set_validity(0, UINT64_MAX);
}

static uint64_t clock_test_ns(const struct timespec *ts)
{
	ck_assert_int_ge(ts->tv_nsec, 0);
	ck_assert_int_lt(ts->tv_nsec, NS_PER_SEC);
	return (uint64_t)ts->tv_sec * NS_PER_SEC + (uint64_t)ts->tv_nsec;
}

/* Asserts lo <= value <= hi, modulo 2^64. */
static void clock_test_between(uint64_t value, uint64_t lo, uint64_t hi)
{
	ck_assert_msg(value - lo <= hi - lo, "%llu is not in [%llu, %llu]",
		      (unsigned long long)value, (unsigned long long)lo, (unsigned long long)hi);
}

/* Fills clock_test_modes with the readings this machine can take. */
static int clock_test_mode_count(void)
{
	struct cpu_facts facts;
	int n = 0;

	cpu_probe_instructions(&facts);
	clock_test_has_rdtscp = facts.has_rdtscp;
	if (facts.has_rdtscp)
		clock_test_modes[n++] = 0;
	if (facts.rseq_registered) {
		clock_test_modes[n++] = CLOCK_MODE_RELAXED;
		if (facts.lfence_serializing)
			clock_test_modes[n++] = CLOCK_READ_LFENCE;
	}
	clock_test_modes[n++] = CLOCK_CPU_GETCPU;
	if (facts.lfence_serializing)
		clock_test_modes[n++] = CLOCK_CPU_GETCPU | CLOCK_READ_LFENCE;
	clock_test_mode_total = n;
	return n;
}

/* Monotonic answers lie on the published line between the TSC reads taken
 * around them, split correctly into seconds, and never go back. */
START_TEST(test_clock_monotonic)
{
	uint32_t mode = clock_test_modes[_i];
	struct calib_line line;
	uint64_t previous = 0;

	line = clock_test_line_at(CLOCK_TEST_MULT, clock_test_tsc(), 1000 * NS_PER_SEC + 123456789);
	clock_test_publish_all(line);
	for (unsigned i = 0; i < 2000; i++) {
		struct timespec ts;
		uint64_t before, after, ns;

		before = clock_test_tsc();
		ck_assert(clock_answer_monotonic(mode, &ts));
		after = clock_test_tsc();
		ns = clock_test_ns(&ts);
		clock_test_between(ns, calib_line_eval(line, before), calib_line_eval(line, after));
		ck_assert_uint_ge(ns, previous);
		previous = ns;
	}
}
END_TEST

/* Each CPU answers from its own record: with a different line per CPU, the
 * answer comes from the line of the CPU this thread is pinned to. */
START_TEST(test_clock_own_cpu_line)
{
	uint32_t mode = clock_test_modes[_i];
	uint64_t now = clock_test_tsc();
	struct calib_line mine = { 0, 0 };

	ck_assert_msg(clock_test_pinned, "cannot pin the test thread to its CPU");
	for (uint32_t cpu = 0; cpu < CPU_MAX_CPUS; cpu++) {
		struct calib_line line =
		    clock_test_line_at(CLOCK_TEST_MULT, now, (1 + cpu) * 1000 * NS_PER_SEC);
		table_publish(cpu, line);
		if (cpu == (uint32_t)clock_test_cpu)
			mine = line;
	}
	table_set_validity(0, UINT64_MAX);
	for (unsigned i = 0; i < 100; i++) {
		struct timespec ts;
		uint64_t before, after;

		before = clock_test_tsc();
		ck_assert(clock_answer_monotonic(mode, &ts));
		after = clock_test_tsc();
		clock_test_between(clock_test_ns(&ts), calib_line_eval(mine, before),
				   calib_line_eval(mine, after));
	}
	/* With this CPU's record withdrawn, the others do not stand in for it. */
	table_withdraw((uint32_t)clock_test_cpu);
	for (unsigned i = 0; i < 100; i++) {
		struct timespec ts;

		ck_assert(!clock_answer_monotonic(mode, &ts));
	}
}
END_TEST

/* Realtime is monotonic plus the published offset, in all three forms:
 * timespec, timeval (microseconds, rounded down) and whole seconds. */
START_TEST(test_clock_realtime)
{
	uint32_t mode = clock_test_modes[_i];
	const uint64_t offset = CLOCK_TEST_REALTIME_OFFSET;
	struct calib_line line;

	line = clock_test_line_at(CLOCK_TEST_MULT, clock_test_tsc(), 5000 * NS_PER_SEC + 999999);
	clock_test_publish_all(line);
	__atomic_store_n(&table_page.shared.offset_ns[CLOCK_OFFSET_REALTIME], offset,
			 __ATOMIC_RELEASE);
	for (unsigned i = 0; i < 1000; i++) {
		struct timespec ts, mono_before, mono_after;
		struct timeval tv;
		time_t sec;
		uint64_t before, after, lo, hi, us;

		before = clock_test_tsc();
		ck_assert(clock_answer_realtime(mode, &ts));
		after = clock_test_tsc();
		lo = calib_line_eval(line, before) + offset;
		hi = calib_line_eval(line, after) + offset;
		clock_test_between(clock_test_ns(&ts), lo, hi);

		before = clock_test_tsc();
		ck_assert(clock_answer_timeval(mode, &tv));
		after = clock_test_tsc();
		lo = calib_line_eval(line, before) + offset;
		hi = calib_line_eval(line, after) + offset;
		ck_assert_int_ge(tv.tv_usec, 0);
		ck_assert_int_lt(tv.tv_usec, 1000000);
		us = (uint64_t)tv.tv_sec * 1000000u + (uint64_t)tv.tv_usec;
		clock_test_between(us, lo / 1000, hi / 1000);

		before = clock_test_tsc();
		ck_assert(clock_answer_seconds(mode, &sec));
		after = clock_test_tsc();
		lo = calib_line_eval(line, before) + offset;
		hi = calib_line_eval(line, after) + offset;
		clock_test_between((uint64_t)sec, lo / NS_PER_SEC, hi / NS_PER_SEC);

		ck_assert(clock_answer_monotonic(mode, &mono_before));
		ck_assert(clock_answer_realtime(mode, &ts));
		ck_assert(clock_answer_monotonic(mode, &mono_after));
		clock_test_between(clock_test_ns(&ts) - offset, clock_test_ns(&mono_before),
				   clock_test_ns(&mono_after));
	}
}
END_TEST

/* When the refresh thread publishes a new offset (the clock was set, or the
 * machine resumed), the next realtime answer is re-anchored on it at once,
 * back or forward, in every form; monotonic answers do not move. */
START_TEST(test_clock_realtime_reanchored)
{
	uint32_t mode = clock_test_modes[_i];
	const uint64_t offsets[] = {
		CLOCK_TEST_REALTIME_OFFSET,
		CLOCK_TEST_REALTIME_OFFSET - 3 * 3600 * NS_PER_SEC,	     /* set back 3 h */
		CLOCK_TEST_REALTIME_OFFSET - 3 * 3600 * NS_PER_SEC + 250000, /* 250 us on */
		CLOCK_TEST_REALTIME_OFFSET + 40 * NS_PER_SEC,		     /* resumed */
	};
	struct calib_line line =
	    clock_test_line_at(CLOCK_TEST_MULT, clock_test_tsc(), 7000 * NS_PER_SEC + 1);
	uint64_t last_mono = 0;

	clock_test_publish_all(line);
	for (unsigned i = 0; i < sizeof offsets / sizeof offsets[0]; i++) {
		struct timespec ts, mono;
		struct timeval tv;
		time_t sec;
		uint64_t before, after, us;

		__atomic_store_n(&table_page.shared.offset_ns[CLOCK_OFFSET_REALTIME], offsets[i],
				 __ATOMIC_RELEASE);
		before = clock_test_tsc();
		ck_assert(clock_answer_realtime(mode, &ts));
		ck_assert(clock_answer_timeval(mode, &tv));
		ck_assert(clock_answer_seconds(mode, &sec));
		ck_assert(clock_answer_monotonic(mode, &mono));
		after = clock_test_tsc();
		clock_test_between(clock_test_ns(&ts), calib_line_eval(line, before) + offsets[i],
				   calib_line_eval(line, after) + offsets[i]);
		us = (uint64_t)tv.tv_sec * 1000000u + (uint64_t)tv.tv_usec;
		clock_test_between(us, (calib_line_eval(line, before) + offsets[i]) / 1000,
				   (calib_line_eval(line, after) + offsets[i]) / 1000);
		clock_test_between((uint64_t)sec,
				   (calib_line_eval(line, before) + offsets[i]) / NS_PER_SEC,
				   (calib_line_eval(line, after) + offsets[i]) / NS_PER_SEC);
		ck_assert_uint_ge(clock_test_ns(&mono), last_mono);
		last_mono = clock_test_ns(&mono);
	}
}
END_TEST

/* The seconds split, cached per thread, is right for any sequence of
 * values: forwards, backwards across a second, and at the ends of the range. */
START_TEST(test_clock_split)
{
	/* Not from the last, partial second below 2^64 straight to a value
	 * under 709551616: that wraps into the cached second (year 2554). */
	/* clang-format off */
	static const uint64_t values[] = {
		0, 1, 999999999, 1000000000, 1000000001, 1999999999, 5000000000,
		3000000007, 2999999999, 3000000000, (1ull << 63) - 1, 1ull << 63,
		UINT64_MAX - 1, UINT64_MAX, 123456789012345678ull, 17,
	};
	/* clang-format on */
	struct clock_second second;

	memset(&second, 0, sizeof second);
	for (unsigned i = 0; i < sizeof values / sizeof values[0]; i++) {
		struct timespec ts;

		clock_to_timespec(&second, values[i], &ts);
		ck_assert_int_eq(ts.tv_sec, (time_t)(values[i] / NS_PER_SEC));
		ck_assert_int_eq(ts.tv_nsec, (long)(values[i] % NS_PER_SEC));
	}
}
END_TEST

/* Answers that cross a second boundary carry it over correctly in every
 * form: the line is placed a few microseconds before a whole second. */
START_TEST(test_clock_second_boundary)
{
	uint32_t mode = clock_test_modes[_i];
	const uint64_t whole = 2000 * NS_PER_SEC;
	const uint64_t offset = 7 * NS_PER_SEC;
	bool saw_before = false, saw_after = false;
	uint64_t margin = 3000;

	__atomic_store_n(&table_page.shared.offset_ns[CLOCK_OFFSET_REALTIME], offset,
			 __ATOMIC_RELEASE);
	/* Retry with more room when the first answer already lies past the
	 * boundary (a slow machine, valgrind). */
	for (unsigned attempt = 0; attempt < 12 && !saw_before; attempt++, margin *= 4) {
		struct calib_line line =
		    clock_test_line_at(CLOCK_TEST_SLOW_MULT, clock_test_tsc(), whole - margin);

		memset(&clock_thread, 0, sizeof clock_thread);
		clock_test_publish_all(line);
		saw_after = false;
		for (unsigned long i = 0; i < 50000000ul && !saw_after; i++) {
			struct timespec mono, real;
			struct timeval tv;
			uint64_t before, after, lo, hi, ns;

			before = clock_test_tsc();
			ck_assert(clock_answer_monotonic(mode, &mono));
			ck_assert(clock_answer_realtime(mode, &real));
			ck_assert(clock_answer_timeval(mode, &tv));
			after = clock_test_tsc();
			lo = calib_line_eval(line, before);
			hi = calib_line_eval(line, after);
			ns = clock_test_ns(&mono);
			clock_test_between(ns, lo, hi);
			clock_test_between(clock_test_ns(&real), lo + offset, hi + offset);
			ck_assert_int_lt(tv.tv_usec, 1000000);
			clock_test_between((uint64_t)tv.tv_sec * 1000000u + (uint64_t)tv.tv_usec,
					   (lo + offset) / 1000, (hi + offset) / 1000);
			if (i == 0 && ns >= whole)
				break;
			if (mono.tv_sec == (time_t)(whole / NS_PER_SEC) - 1)
				saw_before = true;
			if (mono.tv_sec == (time_t)(whole / NS_PER_SEC))
				saw_after = true;
		}
	}
	ck_assert(saw_before);
	ck_assert(saw_after);
}
END_TEST

/* Offsets for the table's other clocks, each unlike the others, so that an
 * answer that adds another clock's offset lies outside its bracket:
 * BOOTTIME ahead by 2.25 s slept, TAI ahead of REALTIME by 37 s. */
#define CLOCK_TEST_BOOTTIME_OFFSET (2 * NS_PER_SEC + 250000000ull)
#define CLOCK_TEST_TAI_OFFSET	   (CLOCK_TEST_REALTIME_OFFSET + 37 * NS_PER_SEC)

static const enum clock_offset_kind clock_test_offset_kinds[] = {
	CLOCK_OFFSET_REALTIME,
	CLOCK_OFFSET_BOOTTIME,
	CLOCK_OFFSET_TAI,
};

static void clock_test_set_offsets(uint64_t realtime, uint64_t boottime, uint64_t tai)
{
	__atomic_store_n(&table_page.shared.offset_ns[CLOCK_OFFSET_REALTIME], realtime,
			 __ATOMIC_RELEASE);
	__atomic_store_n(&table_page.shared.offset_ns[CLOCK_OFFSET_BOOTTIME], boottime,
			 __ATOMIC_RELEASE);
	__atomic_store_n(&table_page.shared.offset_ns[CLOCK_OFFSET_TAI], tai, __ATOMIC_RELEASE);
}

/* Reads clock kind through read, between two TSC reads, and asserts the
 * answer is the line plus that clock's own offset; returns it in ns. */
static uint64_t
clock_test_offset_read(bool (*read)(uint32_t, enum clock_offset_kind, struct timespec *),
		       uint32_t mode, enum clock_offset_kind kind, struct calib_line line)
{
	uint64_t offset = table_page.shared.offset_ns[kind], before, after, ns;
	struct timespec ts;

	before = clock_test_tsc();
	ck_assert_msg(read(mode, kind, &ts), "offset kind %d did not answer", (int)kind);
	after = clock_test_tsc();
	ns = clock_test_ns(&ts);
	ck_assert_msg(ns - (calib_line_eval(line, before) + offset) <=
			  calib_line_eval(line, after) - calib_line_eval(line, before),
		      "offset kind %d: %llu is not line + its offset %llu, in [%llu, %llu]",
		      (int)kind, (unsigned long long)ns, (unsigned long long)offset,
		      (unsigned long long)(calib_line_eval(line, before) + offset),
		      (unsigned long long)(calib_line_eval(line, after) + offset));
	return ns;
}

/* The fast read, as a function of the careful read's shape. */
static bool clock_test_fast_offset(uint32_t mode, enum clock_offset_kind kind, struct timespec *ts)
{
	return clock_fast_offset_clock(mode, kind, ts);
}

static bool clock_test_answer_offset(uint32_t mode, enum clock_offset_kind kind,
				     struct timespec *ts)
{
	return clock_answer_offset_clock(mode, kind, ts);
}

/* CLOCK_BOOTTIME and CLOCK_TAI (and REALTIME, through the same function)
 * are the line plus their own offset, from the careful read, from the fast
 * read once the careful one has set the clamp and the second, and from
 * both together; the fast read answers wherever it can (not with getcpu). */
START_TEST(test_clock_offset_clocks)
{
	uint32_t mode = clock_test_modes[_i];
	struct calib_line line =
	    clock_test_line_at(CLOCK_TEST_MULT, clock_test_tsc(), 3000 * NS_PER_SEC + 500000000);

	ck_assert_msg(clock_test_pinned, "cannot pin the test thread to its CPU");
	clock_test_publish_all(line);
	clock_test_set_offsets(CLOCK_TEST_REALTIME_OFFSET, CLOCK_TEST_BOOTTIME_OFFSET,
			       CLOCK_TEST_TAI_OFFSET);
	for (unsigned i = 0; i < 300; i++) {
		for (unsigned k = 0; k < 3; k++) {
			enum clock_offset_kind kind = clock_test_offset_kinds[k];
			struct timespec ts;

			clock_test_offset_read(clock_careful_offset_clock, mode, kind, line);
			if (mode & CLOCK_CPU_GETCPU) {
				ck_assert(!clock_fast_offset_clock(mode, kind, &ts));
			} else if (clock_thread.seconds[kind].sec ==
				   (int64_t)((calib_line_eval(line, clock_test_tsc()) +
					      table_page.shared.offset_ns[kind]) /
					     NS_PER_SEC)) {
				/* Still in the second the careful read cached. */
				clock_test_offset_read(clock_test_fast_offset, mode, kind, line);
			}
			clock_test_offset_read(clock_test_answer_offset, mode, kind, line);
		}
	}
}
END_TEST

/* Each clock keeps its own cached second: a BOOTTIME answer in one second,
 * then a TAI answer in another, then REALTIME and MONOTONIC in others, are
 * each right, and the fast read of each still answers afterwards (its
 * second was not overwritten by another clock's). The line crawls, so no
 * clock crosses a second meanwhile. */
START_TEST(test_clock_offset_seconds_independent)
{
	uint32_t mode = clock_test_modes[_i];
	const uint64_t mono = 1000 * NS_PER_SEC + 500000000;
	struct calib_line line = clock_test_line_at(CLOCK_TEST_CRAWL_MULT, clock_test_tsc(), mono);
	struct timespec ts;

	ck_assert_msg(clock_test_pinned, "cannot pin the test thread to its CPU");
	clock_test_publish_all(line);
	clock_test_set_offsets(CLOCK_TEST_REALTIME_OFFSET, CLOCK_TEST_BOOTTIME_OFFSET,
			       CLOCK_TEST_TAI_OFFSET);
	for (unsigned round = 0; round < 3; round++) {
		clock_test_offset_read(clock_test_answer_offset, mode, CLOCK_OFFSET_BOOTTIME, line);
		clock_test_offset_read(clock_test_answer_offset, mode, CLOCK_OFFSET_TAI, line);
		clock_test_offset_read(clock_test_answer_offset, mode, CLOCK_OFFSET_REALTIME, line);
		ck_assert(clock_answer_monotonic(mode, &ts));
		ck_assert_int_eq(ts.tv_sec, (time_t)(mono / NS_PER_SEC));
	}
	/* With every second cached, the fast read answers each clock in turn
	 * (getcpu is a call: only the careful read answers there). */
	for (unsigned round = 0; round < 3 && !(mode & CLOCK_CPU_GETCPU); round++) {
		clock_test_offset_read(clock_test_fast_offset, mode, CLOCK_OFFSET_BOOTTIME, line);
		clock_test_offset_read(clock_test_fast_offset, mode, CLOCK_OFFSET_TAI, line);
		clock_test_offset_read(clock_test_fast_offset, mode, CLOCK_OFFSET_REALTIME, line);
		ck_assert(clock_fast_monotonic(mode, &ts));
	}
	/* Each second is its clock's own. */
	ck_assert_int_eq(clock_thread.seconds[CLOCK_OFFSET_NONE].sec, (int64_t)(mono / NS_PER_SEC));
	for (unsigned k = 0; k < 3; k++) {
		enum clock_offset_kind kind = clock_test_offset_kinds[k];

		ck_assert_int_eq(
		    clock_thread.seconds[kind].sec,
		    (int64_t)((mono + table_page.shared.offset_ns[kind]) / NS_PER_SEC));
	}
}
END_TEST

/* An offset that moves forward (the machine resumed: BOOTTIME and
 * REALTIME jump; TAI steps with REALTIME) never takes a clock back within
 * the thread, by small steps and large, from the fast read and the careful
 * one alike; each answer is on the line plus the offset just published. */
START_TEST(test_clock_offset_moves_forward)
{
	uint32_t mode = clock_test_modes[_i];
	struct calib_line line =
	    clock_test_line_at(CLOCK_TEST_MULT, clock_test_tsc(), 9000 * NS_PER_SEC + 999000000);
	uint64_t realtime = CLOCK_TEST_REALTIME_OFFSET, boottime = CLOCK_TEST_BOOTTIME_OFFSET;
	uint64_t tai = CLOCK_TEST_TAI_OFFSET;
	uint64_t last[CLOCK_OFFSET_COUNT] = { 0 };

	clock_test_publish_all(line);
	for (unsigned step = 0; step < 200; step++) {
		/* 1 ns, 1 us, 1 ms and 40 s forward, in turn. */
		static const uint64_t by[] = { 1, 1000, 1000000, 40 * NS_PER_SEC };
		uint64_t forward = by[step % 4];

		boottime += forward;
		realtime += forward;
		/* Now and then the kernel's TAI offset is set. */
		tai += forward + (step % 7 == 0 ? NS_PER_SEC : 0);
		clock_test_set_offsets(realtime, boottime, tai);
		for (unsigned k = 0; k < 3; k++) {
			enum clock_offset_kind kind = clock_test_offset_kinds[k];
			uint64_t ns, again;

			ns = clock_test_offset_read(clock_test_answer_offset, mode, kind, line);
			ck_assert_msg(ns >= last[kind], "offset kind %d went back %llu ns",
				      (int)kind, (unsigned long long)(last[kind] - ns));
			again =
			    clock_test_offset_read(clock_careful_offset_clock, mode, kind, line);
			ck_assert_msg(again >= ns, "offset kind %d went back %llu ns", (int)kind,
				      (unsigned long long)(ns - again));
			last[kind] = again;
		}
	}
}
END_TEST

/* What another thread, with a fresh clamp, reads. */
struct clock_test_reader {
	uint32_t mode;
	bool answered;
	uint64_t ns, lo_tsc, hi_tsc;
};

static void *clock_test_read_thread(void *arg)
{
	struct clock_test_reader *reader = arg;
	struct timespec ts;

	reader->lo_tsc = clock_test_tsc();
	reader->answered = clock_answer_monotonic(reader->mode, &ts);
	reader->hi_tsc = clock_test_tsc();
	reader->ns = (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
	return NULL;
}

/* A line republished 1 us behind never makes this thread's time go back: it
 * keeps its last answer until the line catches up. A new thread, with no
 * history, reads the new line as it is: the clamp is per thread. */
START_TEST(test_clock_clamp)
{
	struct clock_test_reader reader = { .mode = clock_test_modes[_i] };
	uint32_t mode = clock_test_modes[_i];
	struct calib_line line, behind;
	struct timespec ts;
	pthread_t thread;
	uint64_t first, after, ns;

	line = clock_test_line_at(CLOCK_TEST_CRAWL_MULT, clock_test_tsc(), 300 * NS_PER_SEC);
	clock_test_publish_all(line);
	ck_assert(clock_answer_monotonic(mode, &ts));
	first = clock_test_ns(&ts);

	behind = line;
	behind.offset -= 1000;
	clock_test_publish_all(behind);
	for (unsigned i = 0; i < 100; i++) {
		ck_assert(clock_answer_monotonic(mode, &ts));
		after = clock_test_tsc();
		ns = clock_test_ns(&ts);
		ck_assert_uint_ge(ns, first);
		/* The new line had not caught up yet, so the answer is the old one. */
		if (calib_line_eval(behind, after) < first)
			ck_assert_uint_eq(ns, first);
	}
	ck_assert_uint_lt(calib_line_eval(behind, clock_test_tsc()), first);

	ck_assert_int_eq(pthread_create(&thread, NULL, clock_test_read_thread, &reader), 0);
	pthread_join(thread, NULL);
	ck_assert(reader.answered);
	clock_test_between(reader.ns, calib_line_eval(behind, reader.lo_tsc),
			   calib_line_eval(behind, reader.hi_tsc));
	ck_assert_uint_lt(reader.ns, first);
}
END_TEST

/* Outside the validity window (a stale table, or a TSC before it) every
 * form refuses to answer and the clamp is left alone; inside, it answers. */
START_TEST(test_clock_stale)
{
	uint32_t mode = clock_test_modes[_i];
	uint64_t now = clock_test_tsc();
	struct calib_line line = clock_test_line_at(CLOCK_TEST_MULT, now, 50 * NS_PER_SEC);
	const uint64_t windows[][2] = {
		{ now + (1ull << 40), 1000 }, /* the TSC is before the window */
		{ 0, now / 2 },		      /* the window ended long ago */
		{ now - 1000000, 0 },	      /* an empty window */
	};
	struct timespec ts;
	struct timeval tv;
	time_t sec;

	clock_test_publish_all(line);
	ck_assert(clock_answer_monotonic(mode, &ts));
	clock_thread.last_mono_ns = 42;
	for (unsigned i = 0; i < 3; i++) {
		table_set_validity(windows[i][0], windows[i][1]);
		ck_assert(!clock_answer_monotonic(mode, &ts));
		ck_assert(!clock_answer_realtime(mode, &ts));
		ck_assert(!clock_answer_timeval(mode, &tv));
		ck_assert(!clock_answer_seconds(mode, &sec));
		ck_assert_uint_eq(clock_thread.last_mono_ns, 42);
	}
	table_set_validity(now - 1000000, 1ull << 40);
	ck_assert(clock_answer_monotonic(mode, &ts));
	ck_assert(clock_answer_seconds(mode, &sec));
}
END_TEST

/* A mult of 0 means no line: with every record empty, or withdrawn, nothing
 * answers even though the window is open. */
START_TEST(test_clock_no_line)
{
	uint32_t mode = clock_test_modes[_i];
	struct calib_line line = clock_test_line_at(CLOCK_TEST_MULT, clock_test_tsc(), NS_PER_SEC);
	struct timespec ts;
	struct timeval tv;
	time_t sec;

	table_set_validity(0, UINT64_MAX);
	ck_assert(!clock_answer_monotonic(mode, &ts));
	ck_assert(!clock_answer_realtime(mode, &ts));
	ck_assert(!clock_answer_timeval(mode, &tv));
	ck_assert(!clock_answer_seconds(mode, &sec));

	clock_test_publish_all(line);
	ck_assert(clock_answer_monotonic(mode, &ts));
	for (uint32_t cpu = 0; cpu < CPU_MAX_CPUS; cpu++)
		table_withdraw(cpu);
	ck_assert(!clock_answer_monotonic(mode, &ts));
	ck_assert(!clock_answer_realtime(mode, &ts));

	/* A record with an offset but no slope is still no line. */
	line.mult = 0;
	clock_test_publish_all(line);
	ck_assert(!clock_answer_monotonic(mode, &ts));
}
END_TEST

/* The fast read answers only in the common case and leaves every other one
 * to the careful read: a thread with no clamp yet, a line behind its clamp,
 * a guess of the wrong CPU, a withdrawn record, a new second, a table due
 * to be judged again. Each case is
 * set up after a fast answer, so each refusal is the case's own. */
START_TEST(test_clock_fast_gives_up)
{
	uint32_t mode = clock_test_modes[_i];
	struct calib_line line =
	    clock_test_line_at(CLOCK_TEST_CRAWL_MULT, clock_test_tsc(), 400 * NS_PER_SEC + 5);
	struct clock_thread_state good;
	struct timespec ts;
	uint64_t ns;

	ck_assert_msg(clock_test_pinned, "cannot pin the test thread to its CPU");
	clock_test_publish_all(line);
	if (mode & CLOCK_CPU_GETCPU) {
		/* getcpu is a call: only the careful read answers. */
		ck_assert(clock_careful_monotonic(mode, &ts));
		ck_assert_uint_eq(clock_thread.last_cpu, (uint32_t)clock_test_cpu);
		ck_assert(!clock_fast_monotonic(mode, &ts));
		ck_assert(clock_careful_monotonic(mode, &ts));
		return;
	}
	/* No clamp yet: the careful read answers and remembers the CPU. */
	ck_assert(!clock_fast_monotonic(mode, &ts));
	ck_assert(clock_careful_monotonic(mode, &ts));
	ck_assert_uint_eq(clock_thread.last_cpu, (uint32_t)clock_test_cpu);
	/* (A CPU id from getcpu is a call: the careful read answers it.) */
	ck_assert(clock_fast_monotonic(mode, &ts) == !(mode & CLOCK_CPU_GETCPU));
	ns = clock_test_ns(&ts);
	good = clock_thread;

	/* Behind the clamp: refused, and the careful read holds the clamp. */
	clock_thread.last_mono_ns = ns + 1000000;
	ck_assert(!clock_fast_monotonic(mode, &ts));
	ck_assert(clock_careful_monotonic(mode, &ts));
	ck_assert_uint_eq(clock_test_ns(&ts), ns + 1000000);

	/* The wrong CPU guessed: refused; the careful read corrects the guess. */
	clock_thread = good;
	clock_thread.last_cpu = (uint32_t)(clock_test_cpu + 1) % CPU_MAX_CPUS;
	ck_assert(!clock_fast_monotonic(mode, &ts));
	ck_assert(clock_careful_monotonic(mode, &ts));
	ck_assert_uint_eq(clock_thread.last_cpu, (uint32_t)clock_test_cpu);
	/* (A CPU id from getcpu is a call: the careful read answers it.) */
	ck_assert(clock_fast_monotonic(mode, &ts) == !(mode & CLOCK_CPU_GETCPU));

	/* Another second cached: refused; the careful read divides again. */
	clock_thread = good;
	clock_thread.seconds[CLOCK_OFFSET_NONE].sec = 399;
	ck_assert(!clock_fast_monotonic(mode, &ts));
	ck_assert(clock_careful_monotonic(mode, &ts));
	ck_assert_int_eq(clock_thread.seconds[CLOCK_OFFSET_NONE].sec, 400);
	ck_assert(clock_fast_monotonic(mode, &ts));

	/* Past the process's deadline: refused; the careful read judges the
	 * table again (the process's own: never again), checks the lines,
	 * and answers. */
	clock_thread = good;
	wiped.words.judged_until_tsc = clock_test_tsc();
	wiped.words.checked_until_tsc = clock_test_tsc();
	ck_assert(!clock_fast_monotonic(mode, &ts));
	ck_assert(clock_careful_monotonic(mode, &ts));
	ck_assert_uint_eq(wiped.words.judged_until_given_tsc, UINT64_MAX);
	ck_assert_uint_gt(clock_check_until(), clock_test_tsc());
	ck_assert_uint_eq(wiped_judged_until(), clock_check_until());
	ck_assert(clock_fast_monotonic(mode, &ts));

	/* A fork child's deadlines, zero: refused; judged again, answers. */
	clock_thread = good;
	clock_test_deadlines_clear();
	ck_assert(!clock_fast_monotonic(mode, &ts));
	ck_assert(clock_careful_monotonic(mode, &ts));
	ck_assert_uint_eq(wiped.words.judged_until_given_tsc, UINT64_MAX);
	ck_assert_uint_eq(wiped_judged_until(), clock_check_until());
	wiped.words.judged_until_tsc = UINT64_MAX;

	/* Fast reads turned off for a thread (an answer from libc owes its
	 * floor): refused until a careful read, which turns them on again. */
	clock_thread = good;
	clock_thread_fast_reads_off();
	ck_assert(!clock_fast_monotonic(mode, &ts));
	ck_assert(!clock_fast_realtime(mode, &ts));
	ck_assert(clock_careful_monotonic(mode, &ts));
	ck_assert(clock_fast_monotonic(mode, &ts));

	/* This CPU's record withdrawn: neither read answers. */
	clock_thread = good;
	table_withdraw((uint32_t)clock_test_cpu);
	ck_assert(!clock_fast_monotonic(mode, &ts));
	ck_assert(!clock_careful_monotonic(mode, &ts));
	ck_assert_uint_eq(clock_thread.last_mono_ns, good.last_mono_ns);
}
END_TEST

/* Whether cpu's bit is set in the CPUs readers found without a line. */
static bool clock_test_wanted(uint32_t cpu)
{
	unsigned long wanted[TABLE_WANTED_WORDS];

	table_wanted_copy(wanted);
	return cpu_mask_has(wanted, cpu);
}

/* A careful read that finds this CPU without a line reports it, so that the
 * refresh thread visits it; one that finds a line, or a stale table, does
 * not. The report is made once and stays until the writer clears it. */
START_TEST(test_clock_no_line_reported)
{
	uint32_t mode = clock_test_modes[_i];
	struct calib_line line =
	    clock_test_line_at(CLOCK_TEST_MULT, clock_test_tsc(), 400 * NS_PER_SEC);
	uint32_t cpu = (uint32_t)clock_test_cpu;
	unsigned long wanted[TABLE_WANTED_WORDS], none[TABLE_WANTED_WORDS];
	struct timespec ts;

	ck_assert_msg(clock_test_pinned, "cannot pin the test thread to its CPU");
	memset(none, 0, sizeof none);
	clock_test_publish_all(line);
	table_set_validity(0, UINT64_MAX);
	ck_assert(clock_careful_monotonic(mode, &ts));
	table_wanted_copy(wanted);
	ck_assert(memcmp(wanted, none, sizeof none) == 0);

	/* Stale: the line is there, the thread is late; nothing to report. */
	table_set_validity(0, 0);
	table_set_validity(clock_test_tsc() + (1ull << 40), 0);
	ck_assert(!clock_careful_monotonic(mode, &ts));
	ck_assert(!clock_test_wanted(cpu));

	table_set_validity(0, UINT64_MAX);
	table_withdraw(cpu);
	ck_assert(!clock_careful_monotonic(mode, &ts));
	ck_assert(!clock_careful_realtime(mode, &ts));
	table_wanted_copy(wanted);
	ck_assert(cpu_mask_has(wanted, cpu));
	cpu_mask_set(none, cpu);
	ck_assert_msg(memcmp(wanted, none, sizeof none) == 0, "a CPU other than %u reported", cpu);
	table_wanted_clear();
	ck_assert(!clock_test_wanted(cpu));
	ck_assert(!clock_careful_monotonic(mode, &ts));
	ck_assert(clock_test_wanted(cpu));
}
END_TEST

/* A record published with no slope is stored as (0, 0), whatever its
 * offset: that is what lets the fast read skip a test of its own. */
START_TEST(test_clock_no_slope_stored_empty)
{
	struct calib_line line = { .mult = 0, .offset = 12345 };

	table_publish(3, line);
	ck_assert_uint_eq(table_page.records[3].mult, 0);
	ck_assert_uint_eq(table_page.records[3].offset, 0);
}
END_TEST

/* Gives every CPU the same CLOCK_MONOTONIC_RAW line (the validity is the
 * monotonic lines', set by clock_test_publish_all). */
static void clock_test_publish_all_raw(struct calib_line line)
{
	for (uint32_t cpu = 0; cpu < CPU_MAX_CPUS; cpu++)
		table_publish_raw(cpu, line);
}

/* A CLOCK_MONOTONIC_RAW answer, between two TSC reads, lies on line. */
static uint64_t clock_test_raw_read(bool (*read)(uint32_t, struct timespec *), uint32_t mode,
				    struct calib_line line)
{
	uint64_t before, after, ns;
	struct timespec ts;

	before = clock_test_tsc();
	ck_assert_msg(read(mode, &ts), "CLOCK_MONOTONIC_RAW did not answer");
	after = clock_test_tsc();
	ns = clock_test_ns(&ts);
	clock_test_between(ns, calib_line_eval(line, before), calib_line_eval(line, after));
	return ns;
}

/* CLOCK_MONOTONIC_RAW answers from its own lines, not the monotonic ones,
 * in every form of the read (careful, fast once the careful one has set
 * its clamp and second, both), while MONOTONIC keeps answering from its
 * own: two lines a minute apart, each answer on its own. */
START_TEST(test_clock_raw_own_lines)
{
	uint32_t mode = clock_test_modes[_i];
	uint64_t now = clock_test_tsc();
	struct calib_line mono = clock_test_line_at(CLOCK_TEST_MULT, now, 5000 * NS_PER_SEC);
	struct calib_line raw = clock_test_line_at(CLOCK_TEST_MULT, now, 4940 * NS_PER_SEC + 7);

	ck_assert_msg(clock_test_pinned, "cannot pin the test thread to its CPU");
	clock_test_publish_all(mono);
	clock_test_publish_all_raw(raw);
	for (unsigned i = 0; i < 300; i++) {
		struct timespec ts;
		uint64_t before, after;

		clock_test_raw_read(clock_careful_raw, mode, raw);
		if (mode & CLOCK_CPU_GETCPU)
			ck_assert(!clock_fast_raw(mode, &ts));
		else if (clock_thread.raw_second.sec ==
			 (int64_t)(calib_line_eval(raw, clock_test_tsc()) / NS_PER_SEC))
			clock_test_raw_read(clock_fast_raw, mode, raw);
		clock_test_raw_read(clock_answer_raw, mode, raw);
		before = clock_test_tsc();
		ck_assert(clock_answer_monotonic(mode, &ts));
		after = clock_test_tsc();
		clock_test_between(clock_test_ns(&ts), calib_line_eval(mono, before),
				   calib_line_eval(mono, after));
	}
}
END_TEST

/* Each set of lines has its own clamp: a raw line republished 1 us behind
 * holds CLOCK_MONOTONIC_RAW at its last answer, and leaves the monotonic
 * clamp alone; a monotonic line republished behind leaves the raw clock
 * answering on its line. */
START_TEST(test_clock_raw_clamp)
{
	uint32_t mode = clock_test_modes[_i];
	uint64_t now = clock_test_tsc();
	struct calib_line mono = clock_test_line_at(CLOCK_TEST_CRAWL_MULT, now, 300 * NS_PER_SEC);
	struct calib_line raw = clock_test_line_at(CLOCK_TEST_CRAWL_MULT, now, 200 * NS_PER_SEC);
	struct calib_line behind;
	uint64_t first_raw, first_mono, mono_clamp, raw_clamp;
	struct timespec ts;

	clock_test_publish_all(mono);
	clock_test_publish_all_raw(raw);
	ck_assert(clock_answer_raw(mode, &ts));
	first_raw = clock_test_ns(&ts);
	ck_assert_uint_eq(clock_thread.last_raw_ns, first_raw);
	ck_assert(clock_answer_monotonic(mode, &ts));
	first_mono = clock_test_ns(&ts);
	mono_clamp = clock_thread.last_mono_ns;

	behind = raw;
	behind.offset -= 1000;
	clock_test_publish_all_raw(behind);
	for (unsigned i = 0; i < 100; i++) {
		ck_assert(clock_answer_raw(mode, &ts));
		ck_assert_uint_ge(clock_test_ns(&ts), first_raw);
		if (calib_line_eval(behind, clock_test_tsc()) < first_raw)
			ck_assert_uint_eq(clock_test_ns(&ts), first_raw);
	}
	ck_assert_uint_eq(clock_thread.last_mono_ns, mono_clamp);

	raw_clamp = clock_thread.last_raw_ns;
	behind = mono;
	behind.offset -= 1000;
	clock_test_publish_all(behind);
	ck_assert(clock_answer_monotonic(mode, &ts));
	ck_assert_uint_eq(clock_test_ns(&ts), first_mono);
	ck_assert_uint_eq(clock_thread.last_raw_ns, raw_clamp);
}
END_TEST

/* CLOCK_MONOTONIC_RAW answers only where its own line is published and
 * the table is fresh: with raw records empty the monotonic clock still
 * answers and the raw one does not; table_withdraw_raw takes the raw line
 * alone, table_withdraw both; a stale table refuses both. */
START_TEST(test_clock_raw_no_line)
{
	uint32_t mode = clock_test_modes[_i];
	uint64_t now = clock_test_tsc();
	struct calib_line line = clock_test_line_at(CLOCK_TEST_MULT, now, 70 * NS_PER_SEC);
	struct timespec ts;

	ck_assert_msg(clock_test_pinned, "cannot pin the test thread to its CPU");
	clock_test_publish_all(line);
	ck_assert(clock_answer_monotonic(mode, &ts));
	ck_assert(!clock_answer_raw(mode, &ts));

	clock_test_publish_all_raw(line);
	ck_assert(clock_answer_raw(mode, &ts));
	table_withdraw_raw((uint32_t)clock_test_cpu);
	ck_assert(!clock_answer_raw(mode, &ts));
	ck_assert(clock_answer_monotonic(mode, &ts));

	table_publish_raw((uint32_t)clock_test_cpu, line);
	ck_assert(clock_answer_raw(mode, &ts));
	table_withdraw((uint32_t)clock_test_cpu);
	ck_assert(!clock_answer_raw(mode, &ts));
	ck_assert(!clock_answer_monotonic(mode, &ts));

	table_publish((uint32_t)clock_test_cpu, line);
	table_publish_raw((uint32_t)clock_test_cpu, line);
	ck_assert(clock_answer_raw(mode, &ts));
	clock_thread.last_raw_ns = 42;
	table_set_validity(0, now / 2);
	ck_assert(!clock_answer_raw(mode, &ts));
	ck_assert_uint_eq(clock_thread.last_raw_ns, 42);
}
END_TEST

/* Lines the careful read found lapsed stay known as lapsed, by two plain
 * loads, until the validity is renewed, and the thread's guess is parked
 * on a CPU with no line, so that its fast read gives up before it reads
 * the counter; a renewal is seen at once, and the careful read then
 * answers and unparks the guess. A counter before the validity is no
 * lapse to count on, and a parking CPU that has a line is not parked on. */
START_TEST(test_clock_lapsed_parked)
{
	uint32_t mode = clock_test_modes[_i];
	uint64_t now = clock_test_tsc();
	struct calib_line line = clock_test_line_at(CLOCK_TEST_MULT, now, 50 * NS_PER_SEC);
	struct timespec ts;

	ck_assert_msg(clock_test_pinned, "cannot pin the test thread to its CPU");
	ck_assert_uint_lt((uint32_t)clock_test_cpu, CLOCK_PARKED_CPU);
	table_publish((uint32_t)clock_test_cpu, line);
	table_publish_raw((uint32_t)clock_test_cpu, line);
	table_set_validity(now - 1000000, 1ull << 40);
	ck_assert(clock_answer_monotonic(mode, &ts));
	ck_assert(!clock_lines_lapsed());
	ck_assert_uint_eq(clock_thread.last_cpu, (uint32_t)clock_test_cpu);

	/* Lapsed: remembered and parked, for the monotonic and raw lines. */
	table_set_validity(now - 1000000, 1000);
	ck_assert(!clock_answer_monotonic(mode, &ts));
	ck_assert(clock_lines_lapsed());
	ck_assert_uint_eq(clock_thread.last_cpu, CLOCK_PARKED_CPU);
	ck_assert_uint_eq(table_load_lines(CLOCK_LINES_MONOTONIC, CLOCK_PARKED_CPU).mult, 0);
	ck_assert_uint_eq(table_load_lines(CLOCK_LINES_RAW, CLOCK_PARKED_CPU).mult, 0);
	ck_assert(!clock_fast_monotonic(mode, &ts));
	ck_assert(!clock_fast_raw(mode, &ts));
	ck_assert(clock_lines_lapsed());

	/* Renewed: no longer lapsed; the parked fast read still gives up, and
	 * the careful read answers and puts the guess back. */
	table_set_validity(clock_test_tsc() - 1000, 1ull << 40);
	ck_assert(!clock_lines_lapsed());
	ck_assert(!clock_fast_monotonic(mode, &ts));
	ck_assert(clock_careful_monotonic(mode, &ts));
	ck_assert_uint_eq(clock_thread.last_cpu, (uint32_t)clock_test_cpu);
	/* (A CPU id from getcpu is a call: the careful read answers it.) */
	ck_assert(clock_fast_monotonic(mode, &ts) == !(mode & CLOCK_CPU_GETCPU));

	/* Renewed with the same length of window: another validity still. */
	table_set_validity(now - 2000000, 1000);
	ck_assert(!clock_answer_raw(mode, &ts));
	ck_assert(clock_lines_lapsed());
	table_set_validity(now - 1000000, 1000);
	ck_assert(!clock_lines_lapsed());

	/* The counter before the validity: refused, not remembered. */
	memset(&clock_thread, 0, sizeof clock_thread);
	clock_thread.last_cpu = (uint32_t)clock_test_cpu;
	table_set_validity(now + (1ull << 40), 1000);
	ck_assert(!clock_answer_monotonic(mode, &ts));
	ck_assert(!clock_lines_lapsed());
	ck_assert_uint_eq(clock_thread.last_cpu, (uint32_t)clock_test_cpu);

	/* A line on the parking CPU: remembered as lapsed, not parked. */
	table_publish(CLOCK_PARKED_CPU, line);
	table_set_validity(now - 1000000, 1000);
	ck_assert(!clock_answer_monotonic(mode, &ts));
	ck_assert(clock_lines_lapsed());
	ck_assert_uint_eq(clock_thread.last_cpu, (uint32_t)clock_test_cpu);
}
END_TEST

/* Ticks of line's slope in ns. */
static uint64_t clock_test_ticks(struct calib_line line, uint64_t ns)
{
	return calib_line_ticks_for_ns(line.mult, ns);
}

/* A careful CLOCK_MONOTONIC read with the process's deadlines zero (a
 * process's first read), again while the check could not tell (this
 * thread preempted around its read of the kernel's clock: the next check
 * comes a retry's time later), for up to 10 s of the line's time (a bound
 * on a wait, not a duration asserted): whether one answered, and the
 * counter before and after the last. */
static bool clock_test_checked_read(uint32_t mode, struct calib_line line, uint64_t *before,
				    uint64_t *after)
{
	uint64_t give_up = clock_test_tsc() + clock_test_ticks(line, 10 * NS_PER_SEC);

	do {
		struct timespec ts;

		clock_test_deadlines_clear();
		*before = clock_test_tsc();
		if (clock_careful_monotonic(mode, &ts)) {
			*after = clock_test_tsc();
			return true;
		}
		*after = clock_test_tsc();
	} while (*after < give_up);
	return false;
}

/* The line the checks' tests read (every CPU's, valid for any counter
 * value), this thread pinned to its CPU. */
static struct calib_line clock_test_check_line(void)
{
	struct calib_line line =
	    clock_test_line_at(CLOCK_TEST_MULT, clock_test_tsc(), 70 * NS_PER_SEC);

	ck_assert_msg(clock_test_pinned, "cannot pin the test thread to its CPU");
	clock_test_publish_all(line);
	return line;
}

/* The lines' check (clock_check.h) against a kernel that agrees with the
 * line: the read answers from the line, and the process's deadline moves
 * on by the limit over the rate (3.5 ms of the line's time, less the
 * check's own width), which the fast read then keeps. */
START_TEST(test_clock_check_agrees)
{
	uint32_t mode = clock_test_modes[_i];
	struct calib_line line = clock_test_check_line();
	uint64_t before, after, longest = CLOCK_CHECK_LIMIT_NS * 1000000ull / CLOCK_CHECK_RATE_PPM;
	struct timespec ts;

	ck_assert(clock_test_checked_read(mode, line, &before, &after));
	clock_test_between(clock_check_until(), before + clock_test_ticks(line, longest * 9 / 10),
			   after + clock_test_ticks(line, longest));
	ck_assert_uint_eq(wiped_judged_until(), clock_check_until());
	ck_assert_uint_eq(wiped.words.judged_until_given_tsc, UINT64_MAX);
	ck_assert(clock_fast_monotonic(mode, &ts) == !(mode & CLOCK_CPU_GETCPU));
}
END_TEST

/* A kernel 0.5 ms from the line, behind it or ahead: the read still
 * answers, and the check trusts the line for as long as the rate leaves
 * it within the limit, about 1 ms of the line's time, not 3.5. */
START_TEST(test_clock_check_shorter_when_off)
{
	uint32_t mode = clock_test_modes[_i];
	struct calib_line line = clock_test_check_line();
	uint64_t before, after, room = CLOCK_CHECK_LIMIT_NS - 500000u;

	for (int sign = -1; sign <= 1; sign += 2) {
		clock_test_kernel_lag_ns = sign * 500000;
		ck_assert(clock_test_checked_read(mode, line, &before, &after));
		clock_test_between(
		    clock_check_until(),
		    before +
			clock_test_ticks(line, (room - 50000u) * 1000000ull / CLOCK_CHECK_RATE_PPM),
		    after + clock_test_ticks(line, room * 1000000ull / CLOCK_CHECK_RATE_PPM));
	}
}
END_TEST

/* A kernel 1 ms from the line (a slew the refresh thread did not see):
 * the read is refused and libc answers; the next reads are refused without
 * asking the kernel again, until the retry's time has passed; then a check
 * that finds the line right again lets it answer. */
START_TEST(test_clock_check_refuses)
{
	uint32_t mode = clock_test_modes[_i];
	struct calib_line line = clock_test_check_line();
	uint64_t deadline;
	struct timespec ts;
	unsigned reads;
	bool answered = false;

	for (int sign = -1; sign <= 1; sign += 2) {
		clock_test_kernel_lag_ns = sign * 1000000;
		clock_test_deadlines_clear();
		ck_assert(!clock_careful_monotonic(mode, &ts));
		ck_assert_uint_eq(clock_check_until(), 0);
		ck_assert_uint_eq(wiped_judged_until(), 0);
		reads = clock_test_kernel_reads;
		ck_assert(!clock_careful_monotonic(mode, &ts));
		ck_assert(!clock_fast_monotonic(mode, &ts));
		ck_assert_uint_eq(clock_test_kernel_reads, reads);
	}
	clock_test_kernel_lag_ns = 0;
	/* Not a duration: a bound on the wait for the retry (1 ms). */
	deadline = clock_test_tsc() + clock_test_ticks(line, 10 * NS_PER_SEC);
	while (!answered && clock_test_tsc() < deadline)
		answered = clock_careful_monotonic(mode, &ts);
	ck_assert(answered);
	ck_assert_uint_gt(clock_test_kernel_reads, reads);
	ck_assert_uint_ne(clock_check_until(), 0);
}
END_TEST

/* Lines that lapse lose the check's grant: the lines published after the
 * lapse (restarted where the thread's samples put them) are checked again
 * before they answer. */
START_TEST(test_clock_check_forgotten_at_lapse)
{
	uint32_t mode = clock_test_modes[_i];
	struct calib_line line = clock_test_check_line();
	uint64_t before, after, now;
	struct timespec ts;
	unsigned reads;

	ck_assert(clock_test_checked_read(mode, line, &before, &after));
	ck_assert_uint_ne(clock_check_until(), 0);
	now = clock_test_tsc();
	table_set_validity(now - 1000000, 1000);
	ck_assert(!clock_careful_monotonic(mode, &ts));
	ck_assert_uint_eq(clock_check_until(), 0);
	table_set_validity(0, UINT64_MAX);
	reads = clock_test_kernel_reads;
	ck_assert(clock_careful_monotonic(mode, &ts));
	ck_assert_uint_gt(clock_test_kernel_reads, reads);
	ck_assert_uint_ne(clock_check_until(), 0);
}
END_TEST

/* A check preempted around its read of the kernel's clock (the read takes
 * 100 us) tells nothing: libc answers this read and the next ones without
 * asking the kernel again (a slow libc or a loaded machine would fail the
 * next check too), until a check a retry's time later finds the line
 * right. */
START_TEST(test_clock_check_preempted)
{
	uint32_t mode = clock_test_modes[_i];
	struct calib_line line = clock_test_check_line();
	uint64_t before, after;
	unsigned reads;
	struct timespec ts;

	clock_test_kernel_stall_ns = 100000;
	clock_test_deadlines_clear();
	ck_assert(!clock_careful_monotonic(mode, &ts));
	ck_assert_uint_eq(clock_check_until(), 0);
	reads = clock_test_kernel_reads;
	ck_assert(!clock_careful_monotonic(mode, &ts));
	ck_assert_uint_eq(clock_test_kernel_reads, reads);
	clock_test_kernel_stall_ns = 0;
	ck_assert(clock_test_checked_read(mode, line, &before, &after));
	ck_assert_uint_gt(clock_check_until(), after);
}
END_TEST

Suite *suite_clock(void)
{
	Suite *suite = suite_create("clock");
	int modes = clock_test_mode_count();
	TCase *tc;

	tc = tcase_create("arithmetic");
	tcase_add_test(tc, test_clock_split);
	suite_add_tcase(suite, tc);

	tc = tcase_create("read path");
	tcase_add_checked_fixture(tc, clock_test_setup, clock_test_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_clock_monotonic, 0, modes);
	tcase_add_loop_test(tc, test_clock_own_cpu_line, 0, modes);
	tcase_add_loop_test(tc, test_clock_realtime, 0, modes);
	tcase_add_loop_test(tc, test_clock_second_boundary, 0, modes);
	tcase_add_loop_test(tc, test_clock_clamp, 0, modes);
	tcase_add_loop_test(tc, test_clock_stale, 0, modes);
	tcase_add_loop_test(tc, test_clock_lapsed_parked, 0, modes);
	tcase_add_loop_test(tc, test_clock_no_line, 0, modes);
	tcase_add_loop_test(tc, test_clock_no_line_reported, 0, modes);
	tcase_add_loop_test(tc, test_clock_realtime_reanchored, 0, modes);
	tcase_add_loop_test(tc, test_clock_fast_gives_up, 0, modes);
	tcase_add_loop_test(tc, test_clock_offset_clocks, 0, modes);
	tcase_add_loop_test(tc, test_clock_offset_seconds_independent, 0, modes);
	tcase_add_loop_test(tc, test_clock_offset_moves_forward, 0, modes);
	tcase_add_loop_test(tc, test_clock_raw_own_lines, 0, modes);
	tcase_add_loop_test(tc, test_clock_raw_clamp, 0, modes);
	tcase_add_loop_test(tc, test_clock_raw_no_line, 0, modes);
	tcase_add_test(tc, test_clock_no_slope_stored_empty);
	suite_add_tcase(suite, tc);

	tc = tcase_create("lines' check");
	tcase_add_checked_fixture(tc, clock_test_setup, clock_test_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_clock_check_agrees, 0, modes);
	tcase_add_loop_test(tc, test_clock_check_shorter_when_off, 0, modes);
	tcase_add_loop_test(tc, test_clock_check_refuses, 0, modes);
	tcase_add_loop_test(tc, test_clock_check_forgotten_at_lapse, 0, modes);
	tcase_add_loop_test(tc, test_clock_check_preempted, 0, modes);
	suite_add_tcase(suite, tc);
	return suite;
}
