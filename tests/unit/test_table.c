/* The per-CPU table: publishing, withdrawing, and 16-byte records that
 * readers never see half-written. */
#include "config.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "table.h"
#include "unit.h"

#define TABLE_TEST_READERS 3
/* The record the concurrency test writes, away from the first cache lines. */
#define TABLE_TEST_CPU 77u

static void table_test_setup(void)
{
	memset(table_page.records, 0, sizeof table_page.records);
	memset(&table_page.shared, 0, sizeof table_page.shared);
	table_wanted_clear();
}

static void table_test_teardown(void)
{
	table_test_setup();
}

static void table_check_record(uint32_t cpu, uint64_t mult, uint64_t offset)
{
	struct calib_line line = table_load(cpu);

	ck_assert_msg(line.mult == mult && line.offset == offset,
		      "cpu %u: {%llx, %llx}, expected {%llx, %llx}", cpu,
		      (unsigned long long)line.mult, (unsigned long long)line.offset,
		      (unsigned long long)mult, (unsigned long long)offset);
}

/* What is published is what is loaded, on that CPU only; a withdrawn record
 * reads as "no line"; publishing again replaces. */
START_TEST(test_table_round_trip)
{
	struct calib_line a = { 0x8000000000000001ull, 0xfedcba9876543210ull };
	struct calib_line b = { 0x4444444444444444ull, 1 };
	struct calib_line c = { UINT64_MAX, UINT64_MAX };

	table_publish(0, a);
	table_publish(5, b);
	table_publish(CPU_MAX_CPUS - 1, c);
	table_check_record(0, a.mult, a.offset);
	table_check_record(5, b.mult, b.offset);
	table_check_record(CPU_MAX_CPUS - 1, c.mult, c.offset);
	table_check_record(1, 0, 0);
	table_check_record(4, 0, 0);
	table_check_record(6, 0, 0);
	table_check_record(CPU_MAX_CPUS - 2, 0, 0);

	table_withdraw(5);
	table_check_record(5, 0, 0);
	table_check_record(0, a.mult, a.offset);
	table_publish(0, b);
	table_check_record(0, b.mult, b.offset);
	table_withdraw(CPU_MAX_CPUS - 1);
	table_check_record(CPU_MAX_CPUS - 1, 0, 0);
}
END_TEST

/* CPU ids beyond the table are ignored: nothing is written in it (and an
 * AddressSanitizer build sees any write past its end). */
START_TEST(test_table_out_of_range)
{
	struct calib_line line = { 3, 4 };

	table_publish(CPU_MAX_CPUS, line);
	table_publish(UINT32_MAX, line);
	table_withdraw(CPU_MAX_CPUS);
	table_withdraw(UINT32_MAX);
	for (uint32_t cpu = 0; cpu < CPU_MAX_CPUS; cpu++)
		table_check_record(cpu, 0, 0);
}
END_TEST

/* A reader's report sets its CPU's bit, once, and no other; a CPU beyond
 * the table is ignored; the writer's clear forgets them all. */
START_TEST(test_table_wanted)
{
	unsigned long wanted[TABLE_WANTED_WORDS], expected[TABLE_WANTED_WORDS];

	memset(expected, 0, sizeof expected);
	table_wanted_copy(wanted);
	ck_assert(memcmp(wanted, expected, sizeof expected) == 0);
	table_want_line(0);
	table_want_line(65);
	table_want_line(65);
	table_want_line(CPU_MAX_CPUS - 1);
	table_want_line(CPU_MAX_CPUS);
	table_want_line(UINT32_MAX);
	cpu_mask_set(expected, 0);
	cpu_mask_set(expected, 65);
	cpu_mask_set(expected, CPU_MAX_CPUS - 1);
	table_wanted_copy(wanted);
	ck_assert(memcmp(wanted, expected, sizeof expected) == 0);
	table_wanted_clear();
	memset(expected, 0, sizeof expected);
	table_wanted_copy(wanted);
	ck_assert(memcmp(wanted, expected, sizeof expected) == 0);
}
END_TEST

/* The validity window is stored as given, replaced by the next call, and
 * touches nothing else in the shared record. */
START_TEST(test_table_validity)
{
	table_page.shared.offset_ns[CLOCK_OFFSET_REALTIME] = 1234567;
	table_page.shared.api_flags[TABLE_MODE_ORDERED] = 0x13;
	table_set_validity(1000, 2000);
	ck_assert_uint_eq(table_page.shared.valid_from_tsc, 1000);
	ck_assert_uint_eq(table_page.shared.valid_ticks, 2000);
	table_set_validity(UINT64_MAX - 5, 0);
	ck_assert_uint_eq(table_page.shared.valid_from_tsc, UINT64_MAX - 5);
	ck_assert_uint_eq(table_page.shared.valid_ticks, 0);
	table_set_validity(0, UINT64_MAX);
	ck_assert_uint_eq(table_page.shared.valid_from_tsc, 0);
	ck_assert_uint_eq(table_page.shared.valid_ticks, UINT64_MAX);
	ck_assert_uint_eq(table_page.shared.offset_ns[CLOCK_OFFSET_REALTIME], 1234567);
	ck_assert_uint_eq(table_page.shared.api_flags[TABLE_MODE_ORDERED], 0x13);
}
END_TEST

/* Shared between the writer and the readers of the concurrency test. */
static bool table_test_stop;
static bool table_test_go;

struct table_reader {
	pthread_t thread;
	uint32_t cpu;
	uint64_t loads;
	uint64_t torn;
	uint64_t went_back;
	uint64_t changes;
	struct calib_line first_torn;
};

/* What the writer is given and gives back. */
struct table_writer {
	uint32_t cpu;
	uint64_t published;
};

/* Publishes {m, ~m} for m = 1, 2, ... until told to stop. */
static void *table_test_writer(void *arg)
{
	struct table_writer *writer = arg;
	uint64_t m = 1;

	while (!__atomic_load_n(&table_test_go, __ATOMIC_ACQUIRE))
		;
	while (!__atomic_load_n(&table_test_stop, __ATOMIC_RELAXED)) {
		struct calib_line line = { m, ~m };

		table_publish(writer->cpu, line);
		m++;
	}
	writer->published = m - 1;
	return NULL;
}

/* Loads the record until told to stop, counting pairs that do not belong
 * together and values older than one already seen. */
static void *table_test_reader(void *arg)
{
	struct table_reader *reader = arg;
	uint64_t last = 0;

	while (!__atomic_load_n(&table_test_go, __ATOMIC_ACQUIRE))
		;
	while (!__atomic_load_n(&table_test_stop, __ATOMIC_RELAXED)) {
		/* TABLE_TEST_CPU is loaded with a constant index, whose address
		 * the compiler sees (the known-bug case); any other record with
		 * an index known only at run time, as the read path's CPU id. */
		struct calib_line line = reader->cpu == TABLE_TEST_CPU ? table_load(TABLE_TEST_CPU)
								       : table_load(reader->cpu);

		reader->loads++;
		/* {m, ~m} as written, or the empty record {0, 0} it starts
		 * from; anything else is half of one and half of another. */
		if (line.offset != (line.mult == 0 ? 0 : ~line.mult)) {
			if (reader->torn++ == 0)
				reader->first_torn = line;
		}
		if (line.mult < last)
			reader->went_back++;
		if (line.mult != last)
			reader->changes++;
		last = line.mult;
	}
	return NULL;
}

/* Runs one writer and the readers on record cpu for half a second, then
 * checks what the readers saw. */
static void table_test_concurrent_on(uint32_t cpu)
{
	struct table_reader readers[TABLE_TEST_READERS];
	struct table_writer writer = { .cpu = cpu, .published = 0 };
	struct timespec half_second = { 0, 500000000 };
	struct calib_line start = { 0, 0 };
	pthread_t writer_thread;
	uint64_t changes = 0;

	memset(readers, 0, sizeof readers);
	table_publish(cpu, start);
	__atomic_store_n(&table_test_stop, false, __ATOMIC_RELAXED);
	__atomic_store_n(&table_test_go, false, __ATOMIC_RELAXED);
	ck_assert_int_eq(pthread_create(&writer_thread, NULL, table_test_writer, &writer), 0);
	for (unsigned i = 0; i < TABLE_TEST_READERS; i++) {
		readers[i].cpu = cpu;
		ck_assert_int_eq(
		    pthread_create(&readers[i].thread, NULL, table_test_reader, &readers[i]), 0);
	}
	__atomic_store_n(&table_test_go, true, __ATOMIC_RELEASE);
	nanosleep(&half_second, NULL);
	__atomic_store_n(&table_test_stop, true, __ATOMIC_RELAXED);
	pthread_join(writer_thread, NULL);
	for (unsigned i = 0; i < TABLE_TEST_READERS; i++)
		pthread_join(readers[i].thread, NULL);

	ck_assert_uint_gt(writer.published, 0);
	for (unsigned i = 0; i < TABLE_TEST_READERS; i++) {
		ck_assert_uint_gt(readers[i].loads, 0);
		ck_assert_msg(readers[i].torn == 0,
			      "reader %u saw %llu torn records of %llu, first {%llx, %llx}", i,
			      (unsigned long long)readers[i].torn,
			      (unsigned long long)readers[i].loads,
			      (unsigned long long)readers[i].first_torn.mult,
			      (unsigned long long)readers[i].first_torn.offset);
		ck_assert_uint_eq(readers[i].went_back, 0);
		changes += readers[i].changes;
	}
	/* The readers did run while the record was changing. */
	ck_assert_uint_gt(changes, TABLE_TEST_READERS);
	table_check_record(cpu, writer.published, ~writer.published);
}

/* While one thread publishes as fast as it can, readers loading the same
 * record with an index known only at run time, as the read path does, never
 * see a mult from one line with the offset of another, nor an older line
 * after a newer one. (Under ThreadSanitizer both sides use its 16-byte
 * atomics, which it serialises: the test holds there too.) */
START_TEST(test_table_concurrent)
{
	table_test_concurrent_on(TABLE_TEST_CPU + 1);
}
END_TEST

/* The same with an index the compiler can see: a plain 16-byte intrinsic
 * load was split by GCC 12 -O2 into two 8-byte moves there, and tore. */
START_TEST(test_table_concurrent_constant_index)
{
	table_test_concurrent_on(TABLE_TEST_CPU);
}
END_TEST

/* Whether valgrind runs this process: it runs one thread at a time, so a
 * race test proves nothing there, and its spinning threads can starve the
 * one that would stop them. */
static bool table_test_under_valgrind(void)
{
	const char *preload = getenv("LD_PRELOAD");

	return preload != NULL && strstr(preload, "vgpreload") != NULL;
}

Suite *suite_table(void)
{
	Suite *suite = suite_create("table");
	TCase *tc;

	tc = tcase_create("records");
	tcase_add_checked_fixture(tc, table_test_setup, table_test_teardown);
	tcase_add_test(tc, test_table_round_trip);
	tcase_add_test(tc, test_table_out_of_range);
	tcase_add_test(tc, test_table_validity);
	tcase_add_test(tc, test_table_wanted);
	suite_add_tcase(suite, tc);

	tc = tcase_create("concurrency");
	tcase_add_checked_fixture(tc, table_test_setup, table_test_teardown);
	tcase_set_timeout(tc, 60);
	if (!table_test_under_valgrind()) {
		tcase_add_test(tc, test_table_concurrent);
		tcase_add_test(tc, test_table_concurrent_constant_index);
	}
	suite_add_tcase(suite, tc);
	return suite;
}
