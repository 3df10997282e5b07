/* The clocksource as evidence (evidence.h): which kernels' clocks let the
 * lines answer at once, and the probation for the others, with fake
 * figures at and across each bound. */
#include "config.h"

#include "evidence.h"
#include "unit.h"

/* About 0.5 ns per tick (a 2 GHz TSC), as a 0.64 fixed-point fraction. */
#define EVIDENCE_TEST_SLOPE (1ull << 63)

/* A slope changed by ppb parts per billion. */
static uint64_t evidence_test_slope(int64_t ppb)
{
	__int128 change = (__int128)EVIDENCE_TEST_SLOPE * ppb / 1000000000;

	return (uint64_t)((__int128)EVIDENCE_TEST_SLOPE + change);
}

/* The TSC and the hypervisors' TSC clocks are trusted at once; the others
 * after EVIDENCE_PROBATION_ROUNDS steady rounds in a row, not before. */
START_TEST(test_evidence_trust)
{
	ck_assert(evidence_trusted(CPU_CLOCKSOURCE_TSC, 0));
	ck_assert(evidence_trusted(CPU_CLOCKSOURCE_TSC_DERIVED, 0));
	for (unsigned rounds = 0; rounds < EVIDENCE_PROBATION_ROUNDS; rounds++) {
		ck_assert(!evidence_trusted(CPU_CLOCKSOURCE_OTHER, rounds));
		ck_assert(!evidence_trusted(CPU_CLOCKSOURCE_UNKNOWN, rounds));
	}
	ck_assert(evidence_trusted(CPU_CLOCKSOURCE_OTHER, EVIDENCE_PROBATION_ROUNDS));
	ck_assert(evidence_trusted(CPU_CLOCKSOURCE_UNKNOWN, EVIDENCE_PROBATION_ROUNDS));
}
END_TEST

/* A prediction within the bound plus the sandwich's width is steady, either
 * sign; one nanosecond more is not. */
START_TEST(test_evidence_error_bound)
{
	const uint64_t slope = EVIDENCE_TEST_SLOPE;

	ck_assert(evidence_cpu_steady(0, 40, slope, slope));
	ck_assert(evidence_cpu_steady(EVIDENCE_MAX_ERROR_NS + 40, 40, slope, slope));
	ck_assert(evidence_cpu_steady(-(EVIDENCE_MAX_ERROR_NS + 40), 40, slope, slope));
	ck_assert(!evidence_cpu_steady(EVIDENCE_MAX_ERROR_NS + 41, 40, slope, slope));
	ck_assert(!evidence_cpu_steady(-(EVIDENCE_MAX_ERROR_NS + 41), 40, slope, slope));
	/* A wide sandwich (a system-call clock) widens the bound with it. */
	ck_assert(evidence_cpu_steady(EVIDENCE_MAX_ERROR_NS + 1200, 1200, slope, slope));
	ck_assert(!evidence_cpu_steady(INT64_MIN, 40, slope, slope));
}
END_TEST

/* A rate that moved within the bound is steady, either way; beyond it, or
 * with no rate on either side, it is not. */
START_TEST(test_evidence_rate_bound)
{
	const int64_t limit = EVIDENCE_MAX_RATE_CHANGE_PPB;

	ck_assert(evidence_cpu_steady(0, 40, EVIDENCE_TEST_SLOPE, evidence_test_slope(limit - 1)));
	ck_assert(
	    evidence_cpu_steady(0, 40, EVIDENCE_TEST_SLOPE, evidence_test_slope(-(limit - 1))));
	ck_assert(
	    !evidence_cpu_steady(0, 40, EVIDENCE_TEST_SLOPE, evidence_test_slope(limit + 1000)));
	ck_assert(
	    !evidence_cpu_steady(0, 40, EVIDENCE_TEST_SLOPE, evidence_test_slope(-limit - 1000)));
	ck_assert(!evidence_cpu_steady(0, 40, 0, EVIDENCE_TEST_SLOPE));
	ck_assert(!evidence_cpu_steady(0, 40, EVIDENCE_TEST_SLOPE, 0));
}
END_TEST

/* A vDSO clock that became a system call (40 ns sandwiches, then 1.2 us)
 * says the kernel left the TSC; load-sized widening, a clock that was a
 * system call from the start, or no earlier round, does not. */
START_TEST(test_evidence_slowed_clock)
{
	ck_assert(evidence_kernel_clock_slowed(40, 1200));
	ck_assert(evidence_kernel_clock_slowed(40, 40 + EVIDENCE_SLOW_MIN_NS));
	ck_assert(!evidence_kernel_clock_slowed(40, 40 + EVIDENCE_SLOW_MIN_NS - 1));
	ck_assert(!evidence_kernel_clock_slowed(40, 150));
	ck_assert(!evidence_kernel_clock_slowed(1200, 1200 * EVIDENCE_SLOW_FACTOR - 1));
	ck_assert(evidence_kernel_clock_slowed(1200, 1200 * EVIDENCE_SLOW_FACTOR));
	ck_assert(!evidence_kernel_clock_slowed(1200, 40));
	ck_assert(!evidence_kernel_clock_slowed(0, 5000));
}
END_TEST

Suite *suite_evidence(void)
{
	Suite *s = suite_create("evidence");
	TCase *tc = tcase_create("clocksource");

	tcase_add_test(tc, test_evidence_trust);
	tcase_add_test(tc, test_evidence_error_bound);
	tcase_add_test(tc, test_evidence_rate_bound);
	tcase_add_test(tc, test_evidence_slowed_clock);
	suite_add_tcase(s, tc);
	return s;
}
