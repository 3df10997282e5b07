/* The clock table's rows and the api_flags bits they name: each row's bit
 * is its clock id's, the groups of bits never share one, and each row is
 * found by its id and by its offset kind; the entry-point table agrees with
 * it. No TSC is read: this suite runs on any machine. */
#include "config.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "clock_table.h"
#include "entry_table.h"
#include "unit.h"

/* Every single bit api_flags may hold, by group, for the disjointness
 * test: the entry points' (entry_table.def), then how the counter is read
 * and the engine's state. */
static const struct {
	const char *name;
	uint32_t bit;
} clock_table_test_bits[] = {
#define ENTRY(id, form, clock, bit, bench_position, name, key, bench_name)                         \
	{ "CLOCK_API_" #id, CLOCK_API_##id },
#include "entry_table.def"
#undef ENTRY
	{ "CLOCK_MODE_RELAXED", CLOCK_MODE_RELAXED },
	{ "CLOCK_READ_LFENCE", CLOCK_READ_LFENCE },
	{ "CLOCK_CPU_GETCPU", CLOCK_CPU_GETCPU },
	{ "CLOCK_START_PENDING", CLOCK_START_PENDING },
	{ "CLOCK_LIBC_CLAMPED", CLOCK_LIBC_CLAMPED },
};

#define CLOCK_TABLE_TEST_BIT_COUNT (sizeof clock_table_test_bits / sizeof clock_table_test_bits[0])

/* The bits below CLOCK_ID_BITS: the ones clock_gettime tests by id. */
#define CLOCK_TABLE_TEST_ID_MASK ((1u << CLOCK_ID_BITS) - 1u)

/* Each row's api bit is 1 << its clock id, below CLOCK_ID_BITS; it reads
 * its own bit among its entry points and no other clock id's; ids are each
 * used once, and so is each pair of lines and offset kind (two rows that
 * shared both would be one clock); together the rows cover every entry
 * point, and only REALTIME's row has gettimeofday, time and timespec_get. */
START_TEST(test_clock_table_rows)
{
	uint32_t apis = 0, entry_points = 0;

	for (unsigned i = 0; i < CLOCK_TABLE_ROWS; i++) {
		const struct clock_row *row = &clock_table[i];
		uint32_t others = CLOCK_API_GETTIMEOFDAY | CLOCK_API_TIME | CLOCK_API_TIMESPEC_GET;

		ck_assert_msg(row->id >= 0 && (unsigned)row->id < CLOCK_ID_BITS,
			      "%s: clock id %d has no bit below CLOCK_ID_BITS", row->name,
			      (int)row->id);
		ck_assert_msg(row->api == 1u << row->id, "%s: api bit %#x, not 1 << %d", row->name,
			      row->api, (int)row->id);
		ck_assert_msg((row->api & ~CLOCK_TABLE_TEST_ID_MASK) == 0,
			      "%s: api bit %#x at or above CLOCK_ID_BITS", row->name, row->api);
		ck_assert_msg((row->api & CLOCK_API_CLOCK_IDS) == row->api,
			      "%s: api bit %#x missing from CLOCK_API_CLOCK_IDS", row->name,
			      row->api);
		ck_assert_msg((row->entry_points & CLOCK_TABLE_TEST_ID_MASK) == row->api,
			      "%s: entry points %#x name clock ids other than its own (%#x)",
			      row->name, row->entry_points, row->api);
		ck_assert_msg((row->entry_points & ~CLOCK_API_ALL) == 0,
			      "%s: entry points %#x hold a bit that is no entry point", row->name,
			      row->entry_points);
		ck_assert_msg(row->offset < CLOCK_OFFSET_COUNT, "%s: offset kind %d", row->name,
			      (int)row->offset);
		ck_assert_msg(row->lines < CLOCK_LINES_COUNT, "%s: lines %d", row->name,
			      (int)row->lines);
		ck_assert_msg((row->entry_points & others) == 0 || row->id == CLOCK_REALTIME,
			      "%s: gettimeofday, time or timespec_get read it", row->name);
		ck_assert_msg((apis & row->api) == 0, "%s: clock id used twice", row->name);
		ck_assert_msg((entry_points & row->entry_points) == 0,
			      "%s: an entry point read by two rows", row->name);
		for (unsigned j = 0; j < i; j++)
			ck_assert_msg(clock_table[j].offset != row->offset ||
					  clock_table[j].lines != row->lines,
				      "%s and %s add the same offset kind to the same lines",
				      clock_table[j].name, row->name);
		apis |= row->api;
		entry_points |= row->entry_points;
	}
	ck_assert_uint_eq(apis, CLOCK_API_CLOCK_IDS);
	ck_assert_uint_eq(entry_points, CLOCK_API_ALL);
}
END_TEST

/* Each row says which clock, lines and offset it is, and its name says so
 * too: CLOCK_MONOTONIC_RAW alone is answered by the raw lines, which NTP's
 * slews never reach. */
START_TEST(test_clock_table_row_contents)
{
	static const struct {
		clockid_t id;
		const char *name;
		enum clock_lines lines;
		enum clock_offset_kind offset;
		uint32_t api;
	} expected[] = {
		{ CLOCK_REALTIME, "CLOCK_REALTIME", CLOCK_LINES_MONOTONIC, CLOCK_OFFSET_REALTIME,
		  CLOCK_API_REALTIME },
		{ CLOCK_MONOTONIC, "CLOCK_MONOTONIC", CLOCK_LINES_MONOTONIC, CLOCK_OFFSET_NONE,
		  CLOCK_API_MONOTONIC },
		{ CLOCK_BOOTTIME, "CLOCK_BOOTTIME", CLOCK_LINES_MONOTONIC, CLOCK_OFFSET_BOOTTIME,
		  CLOCK_API_BOOTTIME },
		{ CLOCK_TAI, "CLOCK_TAI", CLOCK_LINES_MONOTONIC, CLOCK_OFFSET_TAI, CLOCK_API_TAI },
		{ CLOCK_MONOTONIC_RAW, "CLOCK_MONOTONIC_RAW", CLOCK_LINES_RAW, CLOCK_OFFSET_NONE,
		  CLOCK_API_MONOTONIC_RAW },
	};

	ck_assert_uint_eq(sizeof expected / sizeof expected[0], CLOCK_TABLE_ROWS);
	for (unsigned i = 0; i < CLOCK_TABLE_ROWS; i++) {
		const struct clock_row *row = clock_table_row(expected[i].id);

		ck_assert_msg(row != NULL, "no row for %s", expected[i].name);
		ck_assert_str_eq(row->name, expected[i].name);
		ck_assert_msg(row->offset == expected[i].offset, "%s adds offset kind %d, not %d",
			      row->name, (int)row->offset, (int)expected[i].offset);
		ck_assert_msg(row->lines == expected[i].lines, "%s is answered by lines %d, not %d",
			      row->name, (int)row->lines, (int)expected[i].lines);
		ck_assert_uint_eq(row->api, expected[i].api);
	}
}
END_TEST

/* Every bit is one bit, and no two share it: clock ids, entry points and
 * read modes can be tested in one word without confusing them. The groups
 * sit where clock_table.h puts them: ids below CLOCK_ID_BITS, the rest at
 * or above it. */
START_TEST(test_clock_table_bits_disjoint)
{
	uint32_t seen = 0;

	for (unsigned i = 0; i < CLOCK_TABLE_TEST_BIT_COUNT; i++) {
		uint32_t bit = clock_table_test_bits[i].bit;

		ck_assert_msg(bit != 0 && (bit & (bit - 1)) == 0, "%s is %#x, not one bit",
			      clock_table_test_bits[i].name, bit);
		ck_assert_msg((seen & bit) == 0, "%s (%#x) shares its bit with another",
			      clock_table_test_bits[i].name, bit);
		seen |= bit;
	}
	ck_assert_uint_eq(CLOCK_API_CLOCK_IDS & ~CLOCK_TABLE_TEST_ID_MASK, 0);
	ck_assert_uint_eq((CLOCK_API_GETTIMEOFDAY | CLOCK_API_TIME | CLOCK_API_TIMESPEC_GET) &
			      CLOCK_TABLE_TEST_ID_MASK,
			  0);
	ck_assert_uint_eq((CLOCK_READ_BITS | CLOCK_START_PENDING | CLOCK_LIBC_CLAMPED) &
			      CLOCK_TABLE_TEST_ID_MASK,
			  0);
	ck_assert_uint_eq(CLOCK_READ_BITS,
			  CLOCK_MODE_RELAXED | CLOCK_READ_LFENCE | CLOCK_CPU_GETCPU);
	ck_assert_uint_eq(CLOCK_READ_BITS & CLOCK_API_ALL, 0);
	ck_assert_uint_eq(CLOCK_READ_BITS & (CLOCK_START_PENDING | CLOCK_LIBC_CLAMPED), 0);
	ck_assert_uint_eq(CLOCK_API_ALL & (CLOCK_START_PENDING | CLOCK_LIBC_CLAMPED), 0);
	ck_assert_uint_eq(CLOCK_START_PENDING & CLOCK_LIBC_CLAMPED, 0);
}
END_TEST

/* clock_table_row finds each row by its id, and nothing for the clocks
 * libc answers: the coarse clocks, the CPU-time clocks, the alarm clocks,
 * unused and negative ids. */
START_TEST(test_clock_table_row_lookup)
{
	static const clockid_t none[] = {
		CLOCK_REALTIME_COARSE,
		CLOCK_MONOTONIC_COARSE,
		CLOCK_PROCESS_CPUTIME_ID,
		CLOCK_THREAD_CPUTIME_ID,
		CLOCK_REALTIME_ALARM,
		CLOCK_BOOTTIME_ALARM,
		10,
		CLOCK_ID_BITS,
		-1,
		-6,
		INT_MIN,
		INT_MAX,
	};

	for (unsigned i = 0; i < CLOCK_TABLE_ROWS; i++)
		ck_assert_msg(clock_table_row(clock_table[i].id) == &clock_table[i],
			      "%s not found by its id %d", clock_table[i].name,
			      (int)clock_table[i].id);
	for (unsigned i = 0; i < sizeof none / sizeof none[0]; i++)
		ck_assert_msg(clock_table_row(none[i]) == NULL, "clock id %d has a row (%s)",
			      (int)none[i], clock_table_row(none[i])->name);
}
END_TEST

/* Every offset kind has its row among the clocks of the monotonic lines,
 * and the row of such a row's offset kind is that row: offset kind and
 * clock id lead to each other. */
START_TEST(test_clock_table_offset_round_trip)
{
	for (unsigned kind = 0; kind < CLOCK_OFFSET_COUNT; kind++) {
		const struct clock_row *row =
		    clock_table_row_for_offset((enum clock_offset_kind)kind);

		ck_assert_msg(row != NULL, "no row adds offset kind %u", kind);
		ck_assert_uint_eq(row->offset, kind);
		ck_assert_uint_eq(row->lines, CLOCK_LINES_MONOTONIC);
		ck_assert_ptr_eq(clock_table_row(row->id), row);
	}
	for (unsigned i = 0; i < CLOCK_TABLE_ROWS; i++)
		if (clock_table[i].lines == CLOCK_LINES_MONOTONIC)
			ck_assert_ptr_eq(clock_table_row_for_offset(clock_table[i].offset),
					 &clock_table[i]);
	ck_assert_ptr_null(clock_table_row_for_offset(CLOCK_OFFSET_COUNT));
}
END_TEST

/* Each entry point has a bit of its own, and together they are every
 * CLOCK_API_* bit; each reads a clock of the clock table, among whose
 * entry points it is, and each clock's entry points are the rows that
 * read it. */
START_TEST(test_entry_table_rows)
{
	uint32_t apis = 0;

	for (unsigned e = 0; e < ENTRY_COUNT; e++) {
		const struct entry_row *entry = &entry_table[e];
		const struct clock_row *row = clock_table_row(entry->clock);
		uint32_t readers = 0;

		ck_assert_msg(entry->api != 0 && (entry->api & (entry->api - 1)) == 0,
			      "%s: api %#x is not one bit", entry->name, entry->api);
		ck_assert_msg((apis & entry->api) == 0, "%s: bit %#x used twice", entry->name,
			      entry->api);
		apis |= entry->api;
		ck_assert_msg(row != NULL, "%s reads clock %d, which has no row", entry->name,
			      (int)entry->clock);
		for (unsigned f = 0; f < ENTRY_COUNT; f++)
			if (entry_table[f].clock == entry->clock)
				readers |= entry_table[f].api;
		ck_assert_msg(row->entry_points == readers,
			      "%s: its clock's entry points %#x, not the rows that read it %#x",
			      entry->name, row->entry_points, readers);
	}
	ck_assert_uint_eq(apis, CLOCK_API_ALL);
}
END_TEST

/* Every entry point has each of its names, none shared with another row,
 * and its key is one word of the api.NAME.* keys: lower case, digits and
 * underscores. */
START_TEST(test_entry_table_names)
{
	for (unsigned e = 0; e < ENTRY_COUNT; e++) {
		const struct entry_row *entry = &entry_table[e];

		ck_assert_msg(entry->name != NULL && entry->name[0] != '\0', "entry %u: no name",
			      e);
		ck_assert_msg(entry->key != NULL && entry->key[0] != '\0', "%s: no key",
			      entry->name);
		ck_assert_msg(entry->bench_name != NULL && entry->bench_name[0] != '\0',
			      "%s: no bench name", entry->name);
		ck_assert_msg(strspn(entry->key, "abcdefghijklmnopqrstuvwxyz0123456789_") ==
				  strlen(entry->key),
			      "%s: key \"%s\" is not one word", entry->name, entry->key);
		for (unsigned f = 0; f < e; f++) {
			ck_assert_str_ne(entry_table[f].name, entry->name);
			ck_assert_str_ne(entry_table[f].key, entry->key);
			ck_assert_str_ne(entry_table[f].bench_name, entry->bench_name);
		}
	}
}
END_TEST

/* The rows as entry_table.def writes them, with their form and bit. */
static const struct {
	const char *id, *form;
	clockid_t clock;
	unsigned bit;
} entry_table_test_rows[] = {
#define ENTRY(id, form, clock, bit, bench_position, name, key, bench_name)                         \
	{ #id, #form, clock, bit },
#include "entry_table.def"
#undef ENTRY
};

/* clock_gettime's rows have their clock id for bit, below CLOCK_ID_BITS;
 * every other row is a form of its own, reads CLOCK_REALTIME and has a bit
 * from CLOCK_ID_BITS up, below the bits that say how the counter is read. */
START_TEST(test_entry_table_forms)
{
	ck_assert_uint_eq(sizeof entry_table_test_rows / sizeof entry_table_test_rows[0],
			  ENTRY_COUNT);
	for (unsigned e = 0; e < ENTRY_COUNT; e++) {
		const char *id = entry_table_test_rows[e].id, *form = entry_table_test_rows[e].form;
		unsigned bit = entry_table_test_rows[e].bit;

		ck_assert_uint_eq(1u << bit, entry_table[e].api);
		ck_assert_int_eq(entry_table_test_rows[e].clock, entry_table[e].clock);
		if (strcmp(form, "CLOCK_GETTIME") == 0) {
			ck_assert_msg(bit == (unsigned)entry_table_test_rows[e].clock &&
					  bit < CLOCK_ID_BITS,
				      "%s: clock_gettime's bit %u is not its clock id", id, bit);
			continue;
		}
		ck_assert_msg(strcmp(form, id) == 0, "%s: form %s, not its own", id, form);
		ck_assert_int_eq(entry_table_test_rows[e].clock, CLOCK_REALTIME);
		ck_assert_msg(bit >= CLOCK_ID_BITS && (1u << bit) < CLOCK_MODE_RELAXED,
			      "%s: bit %u outside the other entry points' bits", id, bit);
	}
}
END_TEST

Suite *suite_clock_table(void)
{
	Suite *suite = suite_create("clock_table");
	TCase *tc = tcase_create("rows and bits");

	tcase_add_test(tc, test_clock_table_rows);
	tcase_add_test(tc, test_clock_table_row_contents);
	tcase_add_test(tc, test_clock_table_bits_disjoint);
	tcase_add_test(tc, test_clock_table_row_lookup);
	tcase_add_test(tc, test_clock_table_offset_round_trip);
	tcase_add_test(tc, test_entry_table_rows);
	tcase_add_test(tc, test_entry_table_names);
	tcase_add_test(tc, test_entry_table_forms);
	suite_add_tcase(suite, tc);
	return suite;
}
