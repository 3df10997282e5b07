/* The writer's side of the per-CPU table. */
#include "config.h"

#include "table.h"

#include <stdbool.h>
#include <time.h>

#include "clock_table.h"
#include "start_data.h"

/* In a section of its own, which the library's link puts at the start of
 * the zero-filled data, before .bss (src/preload/libfasttime.ld): a page
 * mapped over it then splits no mapping that a fork copies. Not in .bss
 * itself: its page alignment would align all of .bss to a page, so that
 * the first .bss page, which crtstuff's destructor reads and writes at
 * every process exit, were a page of its own (two faults), not the tail
 * of the .data page the loader writes anyway. Linked without that script
 * (the programs), .lbss puts it after .bss. */
struct table_page table_page __attribute__((section(".lbss.fasttime_table")));
bool table_read_only START_DATA;
const uint32_t *table_own_flags = &table_page.shared.api_flags[TABLE_MODE_ORDERED];
/* This process's reading mode (table_set_mode). */
static enum table_mode table_mode_of_process START_DATA = TABLE_MODE_ORDERED;
/* The readers' flags until the table's own words are first written: a
 * process that has not started its thread has only CLOCK_START_PENDING to
 * show, and showing it from here, in the .data page the loader writes
 * anyway, spares every process start the page fault of a first write into
 * the table (table_set_start_pending). In use while table_pending_here. */
static uint32_t table_pending_word START_DATA = CLOCK_START_PENDING;
static bool table_pending_here START_DATA;
/* Whether the table's flags were ever set, or asked to be while a page
 * stood in the table's place: from then on they are the readers'. */
static bool table_flags_set START_DATA;
/* Aligned, and a whole number of cache lines: the readers' rare writes here
 * never take a line the read path loads. */
unsigned long table_wanted[TABLE_WANTED_WORDS] __attribute__((aligned(64)));
/* Readers inside table_swap_offset now: a page mapped over the table in
 * the process's run waits until they have gone (table_writers_gone). Read
 * by a served start, so kept with the start's data (start_data.h). */
static unsigned table_writers START_DATA;

/* A served process's table is the service's page, mapped read-only: its
 * engine never runs, and this keeps any path that would still write (a
 * fork child's bookkeeping, a stopper) from faulting. */
static bool table_is_read_only(void)
{
	return __atomic_load_n(&table_read_only, __ATOMIC_ACQUIRE);
}

/* One 16-byte store as a lock cmpxchg16b loop: the only instruction that
 * writes 16 bytes atomically on every x86-64 CPU that has it. */
static void table_store16(struct table_record *record, uint64_t lo, uint64_t hi)
{
#if defined(__SANITIZE_THREAD__)
	/* ThreadSanitizer runs 16-byte atomics under its own lock: the reader
	 * uses them in its builds, so the writer must too. */
	unsigned __int128 value = (unsigned __int128)hi << 64 | lo;
	__atomic_store_n((unsigned __int128 *)record, value, __ATOMIC_RELEASE);
#else
	uint64_t expected_lo = record->mult;
	uint64_t expected_hi = record->offset;
	bool swapped;

	do {
		__asm__ volatile("lock cmpxchg16b %1"
				 : "=@ccz"(swapped), "+m"(*record), "+a"(expected_lo),
				   "+d"(expected_hi)
				 : "b"(lo), "c"(hi)
				 : "memory");
	} while (!swapped);
#endif
}

/* A record with no slope is stored as (0, 0), which the fast read turns into
 * ns = 0 and refuses by its clamp test, without a test of its own. */
static void table_publish_into(struct table_record *records, uint32_t cpu, struct calib_line line)
{
	if (cpu >= CPU_MAX_CPUS || table_is_read_only())
		return;
	table_store16(&records[cpu], line.mult, line.mult != 0 ? line.offset : 0);
}

void table_publish(uint32_t cpu, struct calib_line line)
{
	table_publish_into(table_page.records, cpu, line);
}

void table_publish_raw(uint32_t cpu, struct calib_line line)
{
	table_publish_into(table_page.raw_records, cpu, line);
}

/* The raw line first: a reader never finds a raw line on a CPU whose
 * monotonic line has gone, which the validity would not explain. */
void table_withdraw(uint32_t cpu)
{
	table_withdraw_raw(cpu);
	table_publish_into(table_page.records, cpu, (struct calib_line){ 0, 0 });
}

void table_withdraw_raw(uint32_t cpu)
{
	table_publish_into(table_page.raw_records, cpu, (struct calib_line){ 0, 0 });
}

void table_set_calibrated(uint32_t cpu, bool calibrated)
{
	const unsigned bits = 8 * sizeof(unsigned long);
	unsigned long bit;
	unsigned long *word;

	if (cpu >= CPU_MAX_CPUS || table_is_read_only())
		return;
	bit = 1ul << (cpu % bits);
	word = &table_page.calibrated[cpu / bits];
	if (calibrated)
		__atomic_fetch_or(word, bit, __ATOMIC_RELEASE);
	else
		__atomic_fetch_and(word, ~bit, __ATOMIC_RELEASE);
}

void table_set_validity(uint64_t valid_from_tsc, uint64_t valid_ticks)
{
	if (table_is_read_only())
		return;
	/* Narrow the window first so that no reader ever sees a window wider
	 * than either the old or the new one. */
	__atomic_store_n(&table_page.shared.valid_ticks, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&table_page.shared.valid_from_tsc, valid_from_tsc, __ATOMIC_RELEASE);
	__atomic_store_n(&table_page.shared.valid_ticks, valid_ticks, __ATOMIC_RELEASE);
}

void table_wanted_copy(unsigned long *into)
{
	for (unsigned i = 0; i < TABLE_WANTED_WORDS; i++)
		into[i] = __atomic_load_n(&table_wanted[i], __ATOMIC_RELAXED);
}

void table_wanted_clear(void)
{
	for (unsigned i = 0; i < TABLE_WANTED_WORDS; i++)
		if (__atomic_load_n(&table_wanted[i], __ATOMIC_RELAXED) != 0)
			__atomic_store_n(&table_wanted[i], 0, __ATOMIC_RELAXED);
}

void table_set_mode(bool relaxed)
{
	table_mode_of_process = relaxed ? TABLE_MODE_RELAXED : TABLE_MODE_ORDERED;
	if (!table_pending_here)
		__atomic_store_n(&table_own_flags,
				 &table_page.shared.api_flags[table_mode_of_process],
				 __ATOMIC_RELEASE);
}

enum table_mode table_own_mode(void)
{
	return table_mode_of_process;
}

/* Before the table's words are written: if the readers' flags are still
 * table_pending_word, the table's words take its CLOCK_START_PENDING and
 * the readers are pointed back at them. */
static void table_flags_back_in_table(void)
{
	if (!__atomic_load_n(&table_flags_set, __ATOMIC_RELAXED))
		__atomic_store_n(&table_flags_set, true, __ATOMIC_RELAXED);
	if (!__atomic_load_n(&table_pending_here, __ATOMIC_ACQUIRE))
		return;
	/* A page in the table's place keeps the service's flags. */
	for (unsigned mode = 0; mode < TABLE_MODE_COUNT && !table_is_read_only(); mode++)
		__atomic_fetch_or(&table_page.shared.api_flags[mode], CLOCK_START_PENDING,
				  __ATOMIC_RELEASE);
	__atomic_store_n(&table_own_flags, &table_page.shared.api_flags[table_mode_of_process],
			 __ATOMIC_RELEASE);
	__atomic_store_n(&table_pending_here, false, __ATOMIC_RELEASE);
}

void table_publish_flags(enum table_mode mode, uint32_t flags)
{
	uint32_t *word, seen;

	if (mode >= TABLE_MODE_COUNT)
		return;
	table_flags_back_in_table();
	if (table_is_read_only())
		return;
	word = &table_page.shared.api_flags[mode];
	seen = __atomic_load_n(word, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(
	    word, &seen, (flags & ~(uint32_t)CLOCK_START_PENDING) | (seen & CLOCK_START_PENDING),
	    false, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
}

void table_set_start_pending(bool pending)
{
	/* The first start pending of a process (its constructor's), while
	 * the table's words were never set: shown from table_pending_word,
	 * the table's page left untouched. */
	if (pending &&
	    (__atomic_load_n(&table_pending_here, __ATOMIC_ACQUIRE) ||
	     (!__atomic_load_n(&table_flags_set, __ATOMIC_RELAXED) && !table_is_read_only()))) {
		__atomic_store_n(&table_pending_here, true, __ATOMIC_RELEASE);
		__atomic_store_n(&table_own_flags, &table_pending_word, __ATOMIC_RELEASE);
		return;
	}
	table_flags_back_in_table();
	if (table_is_read_only())
		return;
	for (unsigned mode = 0; mode < TABLE_MODE_COUNT; mode++) {
		uint32_t *word = &table_page.shared.api_flags[mode];

		if (pending)
			__atomic_fetch_or(word, CLOCK_START_PENDING, __ATOMIC_RELEASE);
		else
			__atomic_fetch_and(word, ~(uint32_t)CLOCK_START_PENDING, __ATOMIC_RELEASE);
	}
}

void table_stop_answering(const uint32_t flags[TABLE_MODE_COUNT])
{
	table_flags_back_in_table();
	if (table_is_read_only())
		return;
	for (unsigned mode = 0; mode < TABLE_MODE_COUNT; mode++)
		__atomic_store_n(&table_page.shared.api_flags[mode],
				 flags[mode] & ~(uint32_t)CLOCK_START_PENDING, __ATOMIC_RELEASE);
	table_set_validity(0, 0);
}

void table_set_offset(enum clock_offset_kind kind, uint64_t offset_ns)
{
	if (kind == CLOCK_OFFSET_NONE || kind >= CLOCK_OFFSET_COUNT || table_is_read_only())
		return;
	__atomic_store_n(&table_page.shared.offset_ns[kind], offset_ns, __ATOMIC_RELEASE);
}

bool table_swap_offset(enum clock_offset_kind kind, uint64_t expected_ns, uint64_t offset_ns)
{
	bool swapped;

	if (kind == CLOCK_OFFSET_NONE || kind >= CLOCK_OFFSET_COUNT)
		return false;
	/* Counted before the flag is read, each in total order with the
	 * flag's store and the count's load in table_writers_gone: either
	 * this writer sees the flag, or the waiter sees the writer. */
	__atomic_add_fetch(&table_writers, 1u, __ATOMIC_SEQ_CST);
	swapped = !__atomic_load_n(&table_read_only, __ATOMIC_SEQ_CST) &&
		  __atomic_compare_exchange_n(&table_page.shared.offset_ns[kind], &expected_ns,
					      offset_ns, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
	__atomic_sub_fetch(&table_writers, 1u, __ATOMIC_RELEASE);
	return swapped;
}

bool table_writers_gone(unsigned max_ms)
{
	struct timespec ms = { 0, 1000000 };

	for (unsigned waited = 0;; waited++) {
		if (__atomic_load_n(&table_writers, __ATOMIC_SEQ_CST) == 0)
			return true;
		if (waited >= max_ms)
			return false;
		nanosleep(&ms, NULL);
	}
}
