/* The refresh thread's state as the entry points see it: while a start is
 * due, and only then, api_flags carries CLOCK_START_PENDING, so that calls
 * passing through to libc make the start check without a second load. No
 * thread is started here. */
#include "config.h"

#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "api_choice.h"
#include "clock.h"
#include "libc.h"
#include "lines.h"
#include "look.h"
#include "placement.h"
#include "raw_lines.h"
#include "refresh.h"
#include "round.h"
#include "table.h"
#include "unit.h"
#include "verdict.h"
#include "watch.h"

static struct settings refresh_test_settings(bool disabled)
{
	struct settings settings = {
		.disabled = disabled,
		.relaxed = false,
		.debug = false,
		.force = false,
		.interval_ms = 5000,
	};

	return settings;
}

static void refresh_test_setup(void)
{
	memset(&table_page.shared, 0, sizeof table_page.shared);
	/* What the refresh thread's start maps before its first round. */
	ck_assert(round_map());
}

static void refresh_test_teardown(void)
{
	struct settings off = refresh_test_settings(true);

	refresh_configure(&off);
	memset(&table_page.shared, 0, sizeof table_page.shared);
}

/* As the entry points see it (table_api_flags): the table's word, or the
 * word a process that never wrote the table shows instead. */
static bool refresh_test_pending(void)
{
	return (table_api_flags() & CLOCK_START_PENDING) != 0;
}

/* Enabled: the first time call is to start the thread. Disabled: never. */
START_TEST(test_refresh_start_pending_from_settings)
{
	struct settings on = refresh_test_settings(false), off = refresh_test_settings(true);

	refresh_configure(&on);
	ck_assert_int_eq(refresh_state, REFRESH_IDLE);
	ck_assert(refresh_test_pending());
	refresh_configure(&off);
	ck_assert_int_eq(refresh_state, REFRESH_OFF);
	ck_assert(!refresh_test_pending());
}
END_TEST

/* A process start that only configures leaves the table's page untouched
 * (its first write would be a page fault of every process start): the
 * start is due all the same, and once anything is published the table's
 * words carry the bit and the readers read them again. */
START_TEST(test_refresh_start_pending_leaves_table)
{
	struct settings on = refresh_test_settings(false);
	const char *fork_mode = getenv("CK_FORK");

	/* A process's first start comes once: where Check runs every test in
	 * one process (CK_FORK=no, as make check-valgrind does) the tests
	 * before this one have written the table already. make check runs
	 * it in a child of its own. */
	if (fork_mode != NULL && strcmp(fork_mode, "no") == 0)
		return;
	refresh_configure(&on);
	ck_assert(refresh_test_pending());
	ck_assert_uint_eq(table_page.shared.api_flags[TABLE_MODE_ORDERED], 0);
	ck_assert_uint_eq(table_page.shared.api_flags[TABLE_MODE_RELAXED], 0);
	ck_assert(table_own_flags != &table_page.shared.api_flags[TABLE_MODE_ORDERED]);
	ck_assert_int_eq(table_own_mode(), TABLE_MODE_ORDERED);

	table_publish_flags(TABLE_MODE_ORDERED, CLOCK_API_MONOTONIC);
	ck_assert(table_own_flags == &table_page.shared.api_flags[TABLE_MODE_ORDERED]);
	ck_assert_uint_eq(table_api_flags(), CLOCK_API_MONOTONIC | CLOCK_START_PENDING);
	ck_assert_uint_eq(table_page.shared.api_flags[TABLE_MODE_RELAXED], CLOCK_START_PENDING);
	table_set_start_pending(false);
	ck_assert_uint_eq(table_api_flags(), CLOCK_API_MONOTONIC);
	/* From now on a pending start is the table's bit again. */
	table_set_start_pending(true);
	ck_assert(table_own_flags == &table_page.shared.api_flags[TABLE_MODE_ORDERED]);
	ck_assert_uint_eq(table_page.shared.api_flags[TABLE_MODE_ORDERED],
			  CLOCK_API_MONOTONIC | CLOCK_START_PENDING);
}
END_TEST

/* Without a thread, a stop for a restart leaves the start due; a stop for
 * good turns the library off, for good; and a fork child of a process
 * whose thread was stopping has none to wait for. */
START_TEST(test_refresh_stop_without_thread)
{
	struct settings on = refresh_test_settings(false);

	refresh_configure(&on);
	ck_assert_int_eq(refresh_stop(REFRESH_STOP_RESTART), REFRESH_STOPPED_NONE);
	ck_assert_int_eq(refresh_state, REFRESH_IDLE);
	ck_assert(refresh_test_pending());
	ck_assert_int_eq(refresh_stop(REFRESH_STOP_FOR_GOOD), REFRESH_STOPPED_NONE);
	ck_assert_int_eq(refresh_state, REFRESH_OFF);
	ck_assert(!refresh_test_pending());
	refresh_start();
	ck_assert_int_eq(refresh_state, REFRESH_OFF);

	__atomic_store_n(&refresh_state, REFRESH_STOPPING, __ATOMIC_RELEASE);
	refresh_after_fork_in_child();
	ck_assert_int_eq(refresh_state, REFRESH_IDLE);
	ck_assert(refresh_test_pending());
	refresh_configure(&on);
}
END_TEST

/* A fork child has no thread: a start is due again, and the flags the
 * parent chose are kept beside the bit. A child of a process whose library
 * is off stays off. */
START_TEST(test_refresh_start_pending_after_fork)
{
	const uint32_t chosen = CLOCK_API_MONOTONIC | CLOCK_API_GETTIMEOFDAY;
	struct settings off = refresh_test_settings(true);

	__atomic_store_n(&refresh_state, REFRESH_RUNNING, __ATOMIC_RELEASE);
	table_publish_flags(TABLE_MODE_ORDERED, chosen);
	refresh_after_fork_in_child();
	ck_assert_int_eq(refresh_state, REFRESH_IDLE);
	ck_assert_uint_eq(table_api_flags(), chosen | CLOCK_START_PENDING);
	ck_assert_uint_eq(table_page.shared.api_flags[TABLE_MODE_ORDERED],
			  chosen | CLOCK_START_PENDING);

	refresh_configure(&off);
	__atomic_store_n(&table_page.shared.api_flags[TABLE_MODE_ORDERED], 0, __ATOMIC_RELEASE);
	refresh_after_fork_in_child();
	ck_assert_int_eq(refresh_state, REFRESH_OFF);
	ck_assert(!refresh_test_pending());
}
END_TEST

/* The thread wakes for a first line when the anchor's sandwich allows one,
 * not on its fixed schedule: with 1.2 us sandwiches (a kernel clock that
 * is a system call) 330 ms after the anchor instead of 850 ms into the
 * schedule. CPUs with a line, dropped ones and those it cannot run on do
 * not wake it; an earlier schedule stands. */
START_TEST(test_refresh_wakes_for_first_line)
{
	const uint64_t anchor_ns = 1000000000, scheduled = anchor_ns + 850000000;
	const uint64_t due = anchor_ns + 300000000 + 30000000;
	struct lines_cpu *c = &lines_cpus[3];

	memset(lines_cpus, 0, CPU_MAX_CPUS * sizeof *lines_cpus);
	ck_assert_uint_eq(round_next_deadline(scheduled), scheduled);
	lines_cpu_allow(3);
	c->calib[CLOCK_LINES_MONOTONIC].has_anchor = true;
	c->calib[CLOCK_LINES_MONOTONIC].anchor.ns = anchor_ns;
	c->calib[CLOCK_LINES_MONOTONIC].anchor.width_ns = 1200;
	ck_assert_uint_eq(round_next_deadline(scheduled), due);
	ck_assert_uint_eq(round_next_deadline(anchor_ns + 100000000), anchor_ns + 100000000);
	c->dropped = true;
	ck_assert_uint_eq(round_next_deadline(scheduled), scheduled);
	c->dropped = false;
	c->allowed = false;
	ck_assert_uint_eq(round_next_deadline(scheduled), scheduled);
	lines_cpu_allow(3);
	c->calib[CLOCK_LINES_MONOTONIC].line.mult = 1ull << 63;
	ck_assert_uint_eq(round_next_deadline(scheduled), scheduled);
	memset(lines_cpus, 0, CPU_MAX_CPUS * sizeof *lines_cpus);
}
END_TEST

/* The looks' window is the least of every answering line's, whichever
 * CPUs they are on: a line too noisy to trust (its sandwich as wide as the
 * budget) on the last CPU there may be closes the window, until that CPU
 * leaves. */
START_TEST(test_refresh_window_walks_every_line)
{
	const uint32_t last = CPU_MAX_CPUS - 1;

	memset(lines_cpus, 0, CPU_MAX_CPUS * sizeof *lines_cpus);
	ck_assert_uint_eq(lines_window(0, 0, NULL, 0), WATCH_VALID_NS);
	lines_cpu_allow(last);
	lines_cpus[last].calib[CLOCK_LINES_MONOTONIC].line.mult = 1ull << 63;
	lines_cpus[last].last_width_ns = WATCH_LINE_BUDGET_NS;
	ck_assert_uint_eq(lines_window(0, 0, NULL, 0), 0);
	lines_cpu_leaves(last);
	ck_assert_uint_eq(lines_window(0, 0, NULL, 0), WATCH_VALID_NS);
	memset(lines_cpus, 0, CPU_MAX_CPUS * sizeof *lines_cpus);
	memset(&table_page.shared, 0, sizeof table_page.shared);
}
END_TEST

/* Makes the whole pages of lines_cpus between the entries of from and to
 * (both excluded) unreadable, or readable again. */
static void refresh_test_protect_between(uint32_t from, uint32_t to, bool unreadable)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = ((uintptr_t)&lines_cpus[from + 1] + page - 1) & ~(page - 1);
	uintptr_t end = (uintptr_t)&lines_cpus[to] & ~(page - 1);

	ck_assert_uint_gt(end, start);
	ck_assert_int_eq(
	    mprotect((void *)start, end - start, unreadable ? PROT_NONE : PROT_READ | PROT_WRITE),
	    0);
}

/* The walks over the CPUs read the entries of allowed CPUs alone: every
 * entry read maps a page of the array in the process, which every fork
 * then copies and every exit tears down (some 270 pages a fork, when the
 * walks read all CPU_MAX_CPUS entries). The pages between the allowed
 * entries are made unreadable: a walk that reads one dies of SIGSEGV. */
START_TEST(test_refresh_walks_read_allowed_entries_only)
{
	const uint32_t far = CPU_MAX_CPUS / 2;
	unsigned long visit[PLACEMENT_MASK_WORDS] = { 0 };

	memset(lines_cpus, 0, CPU_MAX_CPUS * sizeof *lines_cpus);
	lines_cpu_allow(0);
	lines_cpu_allow(1);
	lines_cpu_allow(far);
	lines_cpus[1].calib[CLOCK_LINES_MONOTONIC].line.mult = 1ull << 63;
	lines_cpus[far].calib[CLOCK_LINES_MONOTONIC].line.mult = 1ull << 63;
	lines_cpus[far].calib[CLOCK_LINES_RAW].line.mult = 1ull << 63;
	cpu_mask_set(visit, 0);
	cpu_mask_set(visit, 1);
	refresh_test_protect_between(1, far, true);
	refresh_test_protect_between(far, CPU_MAX_CPUS - 1, true);
	ck_assert_uint_eq(lines_answering(), 2);
	ck_assert(!raw_lines_ready());
	ck_assert_uint_eq(round_next_deadline(UINT64_MAX), UINT64_MAX);
	lines_withdraw_unsampled(visit);
	ck_assert(lines_cpus[far].withdrawn[CLOCK_LINES_MONOTONIC]);
	ck_assert_uint_eq(lines_answering(), 1);
	lines_restart_calibrations();
	lines_leave_others(visit);
	ck_assert(!lines_cpus[far].allowed);
	refresh_test_protect_between(1, far, false);
	refresh_test_protect_between(far, CPU_MAX_CPUS - 1, false);
	memset(lines_cpus, 0, CPU_MAX_CPUS * sizeof *lines_cpus);
	memset(&table_page.shared, 0, sizeof table_page.shared);
}
END_TEST

/* A CPU whose line a skipped visit withdrew (a real-time thread owned it)
 * wakes the thread when its skip ends, not at the schedule; an earlier
 * schedule stands, and a CPU that still has its line, a skip already over
 * (the CPU went unvisited) or a last visit that succeeded wake nothing. */
START_TEST(test_refresh_wakes_when_skip_ends)
{
	const uint64_t now = libc_monotonic_ns();
	const uint64_t scheduled = now + 5000000000ull, skip_end = now + 1000000000ull;
	struct lines_cpu *c = &lines_cpus[2];

	memset(lines_cpus, 0, CPU_MAX_CPUS * sizeof *lines_cpus);
	lines_cpu_allow(2);
	c->withdrawn[CLOCK_LINES_MONOTONIC] = true;
	c->calib[CLOCK_LINES_MONOTONIC].line.mult = 1ull << 63;
	c->unreachable_backoff_ns = 1000000000ull;
	c->unreachable_until_ns = skip_end;
	ck_assert_uint_eq(round_next_deadline(scheduled), skip_end);
	ck_assert_uint_eq(round_next_deadline(now + 500000000ull), now + 500000000ull);
	c->withdrawn[CLOCK_LINES_MONOTONIC] = false;
	ck_assert_uint_eq(round_next_deadline(scheduled), scheduled);
	c->withdrawn[CLOCK_LINES_MONOTONIC] = true;
	c->unreachable_until_ns = now - 1;
	ck_assert_uint_eq(round_next_deadline(scheduled), scheduled);
	c->unreachable_until_ns = skip_end;
	c->unreachable_backoff_ns = 0;
	ck_assert_uint_eq(round_next_deadline(scheduled), scheduled);
	memset(lines_cpus, 0, CPU_MAX_CPUS * sizeof *lines_cpus);
}
END_TEST

/* The skips of a CPU whose visits wait behind a real-time thread double
 * while it stays taken, also where the visit that ends each skip gets
 * through (a thread the kernel throttles lets a second's skip end in its
 * free twentieth): 1 s, 2 s, 4 s... up to 16 s. They start again from 1 s
 * only once every visit got through for 32 s. Fake monotonic times. */
START_TEST(test_refresh_skips_grow_while_taken)
{
	const uint64_t s = 1000000000ull, t0 = 1000 * s;
	const uint32_t cpu = 1;
	const struct lines_cpu *c = &lines_cpus[cpu];
	uint64_t t = t0, expected = LINES_UNREACHABLE_FIRST_NS;

	memset(lines_cpus, 0, CPU_MAX_CPUS * sizeof *lines_cpus);
	ck_assert_uint_eq(lines_cpu_note_visit(cpu, true, t), 0);
	for (unsigned i = 0; i < 7; i++) {
		uint64_t skip = lines_cpu_note_visit(cpu, false, t);

		ck_assert_uint_eq(skip, expected);
		ck_assert_uint_eq(c->unreachable_until_ns, t + skip);
		/* The visit that ends the skip gets through; the next waits. */
		t += skip + s / 20;
		ck_assert_uint_eq(lines_cpu_note_visit(cpu, true, t), 0);
		ck_assert_uint_eq(c->unreachable_until_ns, 0);
		t += s / 10;
		if (expected < LINES_UNREACHABLE_LAST_NS)
			expected *= 2;
	}
	/* Free for less than 32 s since the last wait: the next wait is
	 * skipped for 16 s; free for longer, the next one for 1 s again. */
	t = c->unreachable_last_ns + LINES_UNREACHABLE_FORGET_NS - s;
	ck_assert_uint_eq(lines_cpu_note_visit(cpu, true, t), 0);
	ck_assert_uint_eq(lines_cpu_note_visit(cpu, false, t + s), LINES_UNREACHABLE_LAST_NS);
	t = c->unreachable_last_ns + LINES_UNREACHABLE_FORGET_NS + 1;
	ck_assert_uint_eq(lines_cpu_note_visit(cpu, true, t), 0);
	ck_assert_uint_eq(lines_cpu_note_visit(cpu, false, t + s), LINES_UNREACHABLE_FIRST_NS);
	memset(lines_cpus, 0, CPU_MAX_CPUS * sizeof *lines_cpus);
}
END_TEST

/* Which CPUs a round visits: the one it begins on, every one where no
 * line may be carried, and else only those whose lines (monotonic and
 * raw) do not answer, whose counter did not agree at the last visit, or
 * that were carried ROUND_VISIT_EVERY - 1 rounds in a row; the others'
 * lines are carried. */
START_TEST(test_refresh_round_visits)
{
	struct lines_cpu c;

	memset(&c, 0, sizeof c);
	c.allowed = true;
	c.calib[CLOCK_LINES_MONOTONIC].line.mult = 1ull << 63;
	c.calib[CLOCK_LINES_RAW].line.mult = 1ull << 63;
	c.agrees = true;
	for (c.carried_rounds = 0; c.carried_rounds + 1 < ROUND_VISIT_EVERY; c.carried_rounds++) {
		ck_assert(!round_visit_needed(&c, false, true));
		ck_assert(round_visit_needed(&c, true, true));
		ck_assert(round_visit_needed(&c, false, false));
	}
	ck_assert(round_visit_needed(&c, false, true));
	c.carried_rounds = 0;
	c.agrees = false;
	ck_assert(round_visit_needed(&c, false, true));
	c.agrees = true;
	c.withdrawn[CLOCK_LINES_MONOTONIC] = true;
	ck_assert(round_visit_needed(&c, false, true));
	c.withdrawn[CLOCK_LINES_MONOTONIC] = false;
	c.withdrawn[CLOCK_LINES_RAW] = true;
	ck_assert(round_visit_needed(&c, false, true));
	c.withdrawn[CLOCK_LINES_RAW] = false;
	c.calib[CLOCK_LINES_RAW].line.mult = 0;
	ck_assert(round_visit_needed(&c, false, true));
	c.calib[CLOCK_LINES_RAW].line.mult = 1ull << 63;
	c.dropped = true;
	ck_assert(round_visit_needed(&c, false, true));
	c.dropped = false;
	c.allowed = false;
	ck_assert(round_visit_needed(&c, false, true));
	c.allowed = true;
	ck_assert(!round_visit_needed(&c, false, true));
	/* A CPU that leaves is visited again when it comes back. */
	lines_cpus[5] = c;
	lines_cpu_leaves(5);
	lines_cpus[5].allowed = true;
	lines_cpus[5].calib[CLOCK_LINES_MONOTONIC].line.mult = 1ull << 63;
	lines_cpus[5].calib[CLOCK_LINES_RAW].line.mult = 1ull << 63;
	ck_assert(round_visit_needed(&lines_cpus[5], false, true));
	memset(lines_cpus, 0, CPU_MAX_CPUS * sizeof *lines_cpus);
	memset(&table_page.shared, 0, sizeof table_page.shared);
}
END_TEST

/* Sleeps ms milliseconds. */
static void refresh_test_nap(long ms)
{
	struct timespec nap = { 0, ms * 1000000L };

	nanosleep(&nap, NULL);
}

/* A look that finds the line of the CPU it runs on off (beyond the
 * tolerance, short of a discontinuity) calls a round, and that CPU is
 * visited by it, not carried; a look that finds the line right leaves it
 * to be carried. Real rounds and sandwiches, the test pinned to one CPU. */
START_TEST(test_refresh_look_finds_line_off)
{
	cpu_set_t saved, one;
	int here = sched_getcpu();
	struct lines_cpu *c;
	enum look_verdict seen;

	libc_resolve();
	verdict_read_kernel();
	if (here < 0 || verdict_prepare(false) != NULL ||
	    sched_getaffinity(0, sizeof saved, &saved) != 0) {
		printf("look_finds_line_off: no counter to read here; not run\n");
		return;
	}
	CPU_ZERO(&one);
	CPU_SET(here, &one);
	ck_assert_int_eq(sched_setaffinity(0, sizeof one, &one), 0);
	ck_assert(placement_read_affinity());
	c = &lines_cpus[here];
	for (unsigned round = 0; round < 100 && !raw_lines_cpu_answers(c); round++) {
		round_run(CALIB_MIN_INTERVAL_NS, false);
		refresh_test_nap(20);
	}
	ck_assert(raw_lines_cpu_answers(c));
	round_run(CALIB_MIN_INTERVAL_NS, false);
	ck_assert(c->agrees);
	refresh_test_nap(2);
	(void)look_once();
	ck_assert(c->agrees);
	/* The line 100 us behind: twice the tolerance, far short of what
	 * milliseconds between looks would make a discontinuity. */
	refresh_test_nap(2);
	c->calib[CLOCK_LINES_MONOTONIC].line.offset -= 100000u;
	seen = look_once();
	ck_assert_int_eq(seen, LOOK_ROUND_DUE);
	ck_assert(!c->agrees);
	ck_assert(round_visit_needed(c, false, true));
	sched_setaffinity(0, sizeof saved, &saved);
	memset(lines_cpus, 0, CPU_MAX_CPUS * sizeof *lines_cpus);
}
END_TEST

/* A CPU whose calibration keeps failing answers with libc after 15 s of
 * failures with no success between, not before; a success in between starts
 * the count again. Fake monotonic times; the table is plain memory. */
START_TEST(test_refresh_drop_after_15_s)
{
	const uint32_t cpu = 3;
	const uint64_t t0 = 1000 * 1000000000ull;
	struct lines_cpu *c = &lines_cpus[cpu];
	struct calib_line line = { .mult = 1ull << 63, .offset = 12345 };

	memset(c, 0, sizeof *c);
	table_publish(cpu, line);
	lines_cpu_failed(cpu, t0);
	lines_cpu_failed(cpu, t0 + LINES_DROP_AFTER_NS - 1);
	ck_assert(!c->dropped);
	ck_assert_uint_eq(table_page.records[cpu].mult, line.mult);
	/* A success: failing_since_ns is cleared, as lines_cpu_update does. */
	c->failing_since_ns = 0;
	lines_cpu_failed(cpu, t0 + LINES_DROP_AFTER_NS + 5);
	ck_assert(!c->dropped);
	lines_cpu_failed(cpu, t0 + 2 * LINES_DROP_AFTER_NS + 4);
	ck_assert(!c->dropped);
	lines_cpu_failed(cpu, t0 + 2 * LINES_DROP_AFTER_NS + 5);
	ck_assert(c->dropped);
	ck_assert_uint_eq(table_page.records[cpu].mult, 0);
	ck_assert_uint_eq(table_page.records[cpu].offset, 0);
	memset(lines_cpus, 0, CPU_MAX_CPUS * sizeof *lines_cpus);
}
END_TEST

/* An entry point that answered from the TSC and stops (the lines lost the
 * clocksource's trust, the kernel dropped the TSC) has libc's answers
 * clamped from then on; one that was left to libc from the start does
 * not. Each mode's readers by their own history: a service's relaxed
 * readers were not given what its ordered ones were. */
START_TEST(test_refresh_clamp_after_tsc_answers)
{
	const enum table_mode ordered = TABLE_MODE_ORDERED, relaxed = TABLE_MODE_RELAXED;
	uint32_t stopped[TABLE_MODE_COUNT];

	api_choice_stopped_flags(stopped);
	ck_assert_uint_eq(stopped[ordered] | stopped[relaxed], 0);
	ck_assert_uint_eq(api_choice_flags_for(ordered, 0) & CLOCK_LIBC_CLAMPED, 0);
	ck_assert_uint_eq(api_choice_flags_for(ordered, CLOCK_API_MONOTONIC) & CLOCK_LIBC_CLAMPED,
			  0);
	ck_assert_uint_eq(api_choice_flags_for(ordered, CLOCK_API_MONOTONIC | CLOCK_API_REALTIME) &
			      CLOCK_LIBC_CLAMPED,
			  0);
	ck_assert_uint_ne(api_choice_flags_for(ordered, CLOCK_API_MONOTONIC) & CLOCK_LIBC_CLAMPED,
			  0);
	ck_assert_uint_ne(api_choice_flags_for(ordered, 0) & CLOCK_LIBC_CLAMPED, 0);
	ck_assert_uint_eq(api_choice_flags_for(ordered, CLOCK_API_ALL) & CLOCK_API_ALL,
			  CLOCK_API_ALL);

	api_choice_stopped_flags(stopped);
	ck_assert_uint_eq(stopped[ordered], CLOCK_LIBC_CLAMPED);
	ck_assert_uint_eq(stopped[relaxed], 0);
	ck_assert_uint_eq(api_choice_flags_for(relaxed, 0) & CLOCK_LIBC_CLAMPED, 0);
	ck_assert_uint_eq(api_choice_flags_for(relaxed, CLOCK_API_TIME) & CLOCK_LIBC_CLAMPED, 0);
	ck_assert_uint_ne(api_choice_flags_for(relaxed, 0) & CLOCK_LIBC_CLAMPED, 0);
	api_choice_stopped_flags(stopped);
	ck_assert_uint_eq(stopped[relaxed], CLOCK_LIBC_CLAMPED);
}
END_TEST

Suite *suite_refresh(void)
{
	Suite *s = suite_create("refresh");
	TCase *tc = tcase_create("state");

	tcase_add_checked_fixture(tc, refresh_test_setup, refresh_test_teardown);
	tcase_add_test(tc, test_refresh_start_pending_from_settings);
	tcase_add_test(tc, test_refresh_start_pending_leaves_table);
	tcase_add_test(tc, test_refresh_start_pending_after_fork);
	tcase_add_test(tc, test_refresh_stop_without_thread);
	tcase_add_test(tc, test_refresh_wakes_for_first_line);
	tcase_add_test(tc, test_refresh_wakes_when_skip_ends);
	tcase_add_test(tc, test_refresh_skips_grow_while_taken);
	tcase_add_test(tc, test_refresh_window_walks_every_line);
	tcase_add_test(tc, test_refresh_walks_read_allowed_entries_only);
	tcase_add_test(tc, test_refresh_round_visits);
	tcase_add_test(tc, test_refresh_look_finds_line_off);
	tcase_add_test(tc, test_refresh_drop_after_15_s);
	tcase_add_test(tc, test_refresh_clamp_after_tsc_answers);
	suite_add_tcase(s, tc);
	return s;
}
