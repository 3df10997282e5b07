/* The period of the checks after a call the TSC could not answer: once per
 * period in the process whatever the number of calls, never held off by
 * a reading behind the last. Fake readings: the clock's own is not used. */
#include "config.h"

#include <stdint.h>

#include "stale_checks.h"
#include "unit.h"

/* Far from any reading an earlier test in this process left behind. */
#define STALE_TEST_BASE (1ull << 62)

/* Calls every 10 us for 100 periods: the checks run once per period (the
 * first call's included), not at each of the 10,000 calls. */
START_TEST(test_stale_checks_once_per_period)
{
	const uint64_t step = STALE_CHECKS_PERIOD_NS / 100;
	unsigned due = 0;

	for (uint64_t i = 0; i < 100 * 100; i++)
		due += stale_checks_due(STALE_TEST_BASE + i * step);
	ck_assert_uint_eq(due, 100);
}
END_TEST

/* Calls far apart: each is due. The same reading again, or one a little
 * earlier (another thread's), is not; one more than a period earlier (a
 * fork child in another time namespace) is, and the period runs from it. */
START_TEST(test_stale_checks_readings)
{
	const uint64_t period = STALE_CHECKS_PERIOD_NS;
	uint64_t now = STALE_TEST_BASE + (1ull << 40);

	for (unsigned i = 0; i < 5; i++) {
		now += 10 * period;
		ck_assert(stale_checks_due(now));
		ck_assert(!stale_checks_due(now));
		ck_assert(!stale_checks_due(now - period / 2));
		ck_assert(!stale_checks_due(now - period));
		ck_assert(!stale_checks_due(now + period - 1));
	}
	ck_assert(stale_checks_due(now + period));
	ck_assert(stale_checks_due(now - period - 1));
	now -= 1000 * period;
	ck_assert(stale_checks_due(now));
	ck_assert(!stale_checks_due(now + 1));
	ck_assert(stale_checks_due(now + period));
}
END_TEST

Suite *suite_stale_checks(void)
{
	Suite *suite = suite_create("stale_checks");
	TCase *tc = tcase_create("period");

	tcase_add_test(tc, test_stale_checks_once_per_period);
	tcase_add_test(tc, test_stale_checks_readings);
	suite_add_tcase(suite, tc);
	return suite;
}
