/* The processor's facts as the library judges them: which reading each mode
 * takes, when the fast path cannot run, what a clocksource's name says, and
 * the kernel's CPU lists. Fake facts: no machine is needed. */
#include "config.h"

#include <sched.h>
#include <string.h>

#include "cpu.h"
#include "unit.h"

#define CPU_TEST_WORDS (CPU_MAX_CPUS / (8 * sizeof(unsigned long)))

/* A machine with everything the fast path can use. */
static struct cpu_facts cpu_test_full(void)
{
	struct cpu_facts facts;

	memset(&facts, 0, sizeof facts);
	facts.invariant_tsc = true;
	facts.has_rdtscp = true;
	facts.lfence_serializing = true;
	facts.has_avx = true;
	facts.has_cmpxchg16b = true;
	facts.rseq_registered = true;
	return facts;
}

/* Each mode's reading on each kind of machine: rdtscp first, lfence; rdtsc
 * where it is missing, relaxed always rdtsc, and getcpu wherever rseq is. */
START_TEST(test_cpu_readings)
{
	static const struct {
		bool rdtscp, lfence, rseq, relaxed;
		enum cpu_counter_read counter;
		enum cpu_id_source id;
	} cases[] = {
		{ true, true, true, false, CPU_READ_RDTSCP, CPU_ID_TSC_AUX },
		{ true, false, false, false, CPU_READ_RDTSCP, CPU_ID_TSC_AUX },
		{ false, true, true, false, CPU_READ_LFENCE_RDTSC, CPU_ID_RSEQ },
		{ false, true, false, false, CPU_READ_LFENCE_RDTSC, CPU_ID_GETCPU },
		{ true, true, true, true, CPU_READ_RDTSC, CPU_ID_RSEQ },
		{ true, true, false, true, CPU_READ_RDTSC, CPU_ID_GETCPU },
		{ false, false, true, true, CPU_READ_RDTSC, CPU_ID_RSEQ },
		{ false, false, false, true, CPU_READ_RDTSC, CPU_ID_GETCPU },
	};

	for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct cpu_facts facts = cpu_test_full();
		struct cpu_reading reading;

		facts.has_rdtscp = cases[i].rdtscp;
		facts.lfence_serializing = cases[i].lfence;
		facts.rseq_registered = cases[i].rseq;
		ck_assert_msg(cpu_choose_reading(&facts, cases[i].relaxed, &reading) == NULL,
			      "case %u", i);
		ck_assert_msg(reading.counter == cases[i].counter, "case %u: counter %d", i,
			      reading.counter);
		ck_assert_msg(reading.cpu_id == cases[i].id, "case %u: id %d", i, reading.cpu_id);
	}
}
END_TEST

/* Ordered mode with neither rdtscp nor a serializing lfence has no reading,
 * and says why; relaxed mode there still has one. */
START_TEST(test_cpu_no_ordered_reading)
{
	struct cpu_facts facts = cpu_test_full();
	struct cpu_reading reading;
	const char *why;

	facts.has_rdtscp = false;
	facts.lfence_serializing = false;
	why = cpu_choose_reading(&facts, false, &reading);
	ck_assert_ptr_nonnull(why);
	ck_assert_ptr_nonnull(strstr(why, "rdtscp"));
	ck_assert_ptr_nonnull(strstr(why, "lfence"));
	ck_assert_ptr_null(cpu_choose_reading(&facts, true, &reading));
}
END_TEST

/* rdtscp is no longer needed; the invariant TSC, cmpxchg16b and AVX are,
 * and a kernel that dropped the TSC during the run stops it. */
START_TEST(test_cpu_unusable)
{
	struct cpu_facts facts = cpu_test_full();

	ck_assert_ptr_null(cpu_unusable_reason(&facts, false));
	facts.has_rdtscp = false;
	ck_assert_ptr_null(cpu_unusable_reason(&facts, false));
	ck_assert_ptr_nonnull(cpu_unusable_reason(&facts, true));
	facts = cpu_test_full();
	facts.invariant_tsc = false;
	ck_assert_ptr_nonnull(strstr(cpu_unusable_reason(&facts, false), "invariant TSC"));
	facts.hidden = CPU_HWCAP_INVARIANT_TSC;
	ck_assert_ptr_nonnull(strstr(cpu_unusable_reason(&facts, false), "FASTTIME_HWCAPS"));
	facts = cpu_test_full();
	facts.has_cmpxchg16b = false;
	ck_assert_ptr_nonnull(cpu_unusable_reason(&facts, false));
	facts = cpu_test_full();
	facts.has_avx = false;
	ck_assert_ptr_nonnull(cpu_unusable_reason(&facts, false));
}
END_TEST

/* The probe applies FASTTIME_HWCAPS: what it hides reads as absent on any
 * machine, and it is recorded. */
START_TEST(test_cpu_hidden)
{
	struct cpu_facts facts;
	uint32_t saved = cpu_hidden_hwcaps;

	cpu_hidden_hwcaps =
	    CPU_HWCAP_RDTSCP | CPU_HWCAP_LFENCE_SERIALIZING | CPU_HWCAP_INVARIANT_TSC;
	cpu_probe_instructions(&facts);
	cpu_hidden_hwcaps = saved;
	ck_assert(!facts.has_rdtscp);
	ck_assert(!facts.lfence_serializing);
	ck_assert(!facts.invariant_tsc);
	ck_assert_uint_eq(facts.hidden, CPU_HWCAP_RDTSCP | CPU_HWCAP_LFENCE_SERIALIZING |
					    CPU_HWCAP_INVARIANT_TSC);
}
END_TEST

/* Clocksources by name: the TSC, the hypervisors' TSC-derived clocks, and
 * the rest, which say nothing about the TSC. */
START_TEST(test_cpu_clocksource_kinds)
{
	ck_assert_int_eq(cpu_classify_clocksource("tsc"), CPU_CLOCKSOURCE_TSC);
	ck_assert_int_eq(cpu_classify_clocksource("kvm-clock"), CPU_CLOCKSOURCE_TSC_DERIVED);
	ck_assert_int_eq(cpu_classify_clocksource("xen"), CPU_CLOCKSOURCE_TSC_DERIVED);
	ck_assert_int_eq(cpu_classify_clocksource("hyperv_clocksource_tsc_page"),
			 CPU_CLOCKSOURCE_TSC_DERIVED);
	ck_assert_int_eq(cpu_classify_clocksource("hyperv_clocksource_msr"), CPU_CLOCKSOURCE_OTHER);
	ck_assert_int_eq(cpu_classify_clocksource("hpet"), CPU_CLOCKSOURCE_OTHER);
	ck_assert_int_eq(cpu_classify_clocksource("acpi_pm"), CPU_CLOCKSOURCE_OTHER);
	ck_assert_int_eq(cpu_classify_clocksource("tscx"), CPU_CLOCKSOURCE_OTHER);
	ck_assert_int_eq(cpu_classify_clocksource("unknown"), CPU_CLOCKSOURCE_UNKNOWN);
	ck_assert_int_eq(cpu_classify_clocksource(""), CPU_CLOCKSOURCE_UNKNOWN);
}
END_TEST

static unsigned cpu_test_count(const unsigned long *mask)
{
	unsigned n = 0;

	for (unsigned cpu = 0; cpu < CPU_MAX_CPUS; cpu++)
		n += cpu_mask_has(mask, cpu);
	return n;
}

/* The kernel's CPU lists: single CPUs, ranges, a newline at the end, and
 * CPUs past the first word. */
START_TEST(test_cpu_lists)
{
	unsigned long mask[CPU_TEST_WORDS];

	ck_assert(cpu_parse_list("0\n", mask, CPU_TEST_WORDS));
	ck_assert_uint_eq(cpu_test_count(mask), 1);
	ck_assert(cpu_mask_has(mask, 0));

	ck_assert(cpu_parse_list("0-3,8,10-11", mask, CPU_TEST_WORDS));
	ck_assert_uint_eq(cpu_test_count(mask), 7);
	ck_assert(cpu_mask_has(mask, 3) && cpu_mask_has(mask, 8) && cpu_mask_has(mask, 11));
	ck_assert(!cpu_mask_has(mask, 4) && !cpu_mask_has(mask, 9));

	ck_assert(cpu_parse_list("1,63-65,4095", mask, CPU_TEST_WORDS));
	ck_assert_uint_eq(cpu_test_count(mask), 5);
	ck_assert(cpu_mask_has(mask, 64) && cpu_mask_has(mask, 4095));

	ck_assert(cpu_parse_list("", mask, CPU_TEST_WORDS));
	ck_assert_uint_eq(cpu_test_count(mask), 0);
	ck_assert_uint_eq(cpu_mask_next(mask, CPU_TEST_WORDS, 0), CPU_MAX_CPUS);
}
END_TEST

/* Walking a mask visits its CPUs in order, across and past empty words,
 * from any starting point. */
START_TEST(test_cpu_mask_walk)
{
	static const uint32_t expected[] = { 1, 63, 64, 65, 700, 4095 };
	unsigned long mask[CPU_TEST_WORDS];
	unsigned n = 0;

	ck_assert(cpu_parse_list("1,63-65,700,4095", mask, CPU_TEST_WORDS));
	for (uint32_t cpu = cpu_mask_next(mask, CPU_TEST_WORDS, 0); cpu < CPU_MAX_CPUS;
	     cpu = cpu_mask_next(mask, CPU_TEST_WORDS, cpu + 1)) {
		ck_assert_uint_lt(n, sizeof expected / sizeof expected[0]);
		ck_assert_uint_eq(cpu, expected[n]);
		n++;
	}
	ck_assert_uint_eq(n, sizeof expected / sizeof expected[0]);
	ck_assert_uint_eq(cpu_mask_next(mask, CPU_TEST_WORDS, 66), 700);
	ck_assert_uint_eq(cpu_mask_next(mask, CPU_TEST_WORDS, 701), 4095);
	cpu_mask_set(mask, 2);
	ck_assert_uint_eq(cpu_mask_next(mask, CPU_TEST_WORDS, 2), 2);
}
END_TEST

/* Anything else is refused rather than guessed at. */
START_TEST(test_cpu_bad_lists)
{
	static const char *const bad[] = { "a",	   "1-",     "-1",
					   "3-1",  "1,,2",   "1;2",
					   "4096", "0-4096", "99999999999999999999",
					   "1 2" };
	unsigned long mask[CPU_TEST_WORDS];

	for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_msg(!cpu_parse_list(bad[i], mask, CPU_TEST_WORDS), "\"%s\" accepted",
			      bad[i]);
}
END_TEST

/* This machine's online CPUs include the one this thread runs on. */
START_TEST(test_cpu_online_has_this_cpu)
{
	unsigned long mask[CPU_TEST_WORDS];
	int cpu = sched_getcpu();

	if (!cpu_online_mask(mask, CPU_TEST_WORDS) || cpu < 0)
		return;
	ck_assert(cpu_mask_has(mask, (unsigned)cpu));
}
END_TEST

Suite *suite_cpu(void)
{
	Suite *s = suite_create("cpu");
	TCase *tc = tcase_create("facts");

	tcase_add_test(tc, test_cpu_readings);
	tcase_add_test(tc, test_cpu_no_ordered_reading);
	tcase_add_test(tc, test_cpu_unusable);
	tcase_add_test(tc, test_cpu_hidden);
	tcase_add_test(tc, test_cpu_clocksource_kinds);
	tcase_add_test(tc, test_cpu_lists);
	tcase_add_test(tc, test_cpu_mask_walk);
	tcase_add_test(tc, test_cpu_bad_lists);
	tcase_add_test(tc, test_cpu_online_has_this_cpu);
	suite_add_tcase(s, tc);
	return s;
}
