/* What a thread owes its clamp after libc answered a clock with an offset
 * while the process's table is to be judged (preload_clamp.h): the floor
 * its next answer from the TSC must not fall below. */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "clock.h"
#include "preload_clamp.h"
#include "table.h"
#include "unit.h"
#include "wiped.h"

static void preload_clamp_test_setup(void)
{
	memset(&table_page.shared, 0, sizeof table_page.shared);
	memset(&clock_thread, 0, sizeof clock_thread);
	memset(&wiped.words, 0, sizeof wiped.words);
	preload_clamp_owed_ns = 0;
}

/* With the deadline at zero, libc's answer less the offset is owed, and the
 * thread's fast reads are off until a careful read raises its floor; an
 * offset a few nanoseconds below zero (CLOCK_BOOTTIME's, measured on a
 * machine that never slept) is an offset like another. */
START_TEST(test_preload_clamp_owes_answer_less_offset)
{
	const uint64_t mono = 87381688640478ull;
	const int64_t offsets[] = { -35, 0, 35, 1700000000 };

	for (unsigned i = 0; i < sizeof offsets / sizeof offsets[0]; i++) {
		preload_clamp_test_setup();
		table_set_offset(CLOCK_OFFSET_BOOTTIME, (uint64_t)offsets[i]);
		clock_thread.last_mono_ns = mono - 1000;
		preload_clamp_after_libc(CLOCK_OFFSET_BOOTTIME, mono + (uint64_t)offsets[i]);
		ck_assert_msg(preload_clamp_owed_ns == mono, "offset %lld: owed %llu, not %llu",
			      (long long)offsets[i], (unsigned long long)preload_clamp_owed_ns,
			      (unsigned long long)mono);
		ck_assert_int_eq(clock_thread.seconds[CLOCK_OFFSET_BOOTTIME].sec, -1);
	}
}
END_TEST

/* An answer below its clock's offset (a clock set before the offset's own
 * length) owes nothing. */
START_TEST(test_preload_clamp_owes_nothing_before_offset)
{
	preload_clamp_test_setup();
	table_set_offset(CLOCK_OFFSET_REALTIME, 1700000000000000000ull);
	preload_clamp_after_libc(CLOCK_OFFSET_REALTIME, 5000000000ull);
	ck_assert_uint_eq(preload_clamp_owed_ns, 0);
}
END_TEST

Suite *suite_preload_clamp(void)
{
	Suite *suite = suite_create("preload_clamp");
	TCase *tc = tcase_create("owed");

	tcase_add_checked_fixture(tc, preload_clamp_test_setup, preload_clamp_test_setup);
	tcase_add_test(tc, test_preload_clamp_owes_answer_less_offset);
	tcase_add_test(tc, test_preload_clamp_owes_nothing_before_offset);
	suite_add_tcase(suite, tc);
	return suite;
}
