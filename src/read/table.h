/* Per-CPU lines, published by one writer and read without locks or writes.
 *
 * The writer swaps each 16-byte record with cmpxchg16b; readers load it with
 * one aligned 16-byte SSE load, which is atomic on every CPU that has AVX
 * (cpu_unusable_reason refuses the others). A locked cmpxchg16b would cost
 * the reader more than libc's whole call.
 *
 * The one thing a reader writes is its CPU's bit in table_wanted, once, when
 * it finds that CPU without a line: the writer's own affinity does not say
 * where the program's other threads run (a poller pinned to a CPU of its
 * own), so they say it themselves. */
#ifndef FASTTIME_TABLE_H
#define FASTTIME_TABLE_H

#include <emmintrin.h>
#include <stdbool.h>
#include <stdint.h>

#include "calib_line.h"
#include "clock_table.h"
#include "cpu.h"

struct table_record {
	uint64_t mult;
	uint64_t offset;
} __attribute__((aligned(16)));

/* The readers' modes (FASTTIME_MODE), each with its own api_flags word:
 * the lines are the same for both, the choice of entry points and how the
 * counter is read are not. */
enum table_mode { TABLE_MODE_ORDERED, TABLE_MODE_RELAXED, TABLE_MODE_COUNT };

/* Read-mostly facts shared by all CPUs, on their own cache line. */
struct table_shared {
	/* A reading is fresh when (tsc - valid_from_tsc) <= valid_ticks, as
	 * unsigned: this catches both a stale table and a TSC that went back. */
	uint64_t valid_from_tsc;
	uint64_t valid_ticks;
	/* Each clock of the table minus CLOCK_MONOTONIC, in ns, modulo 2^64,
	 * by its offset kind (clock_table.h); [CLOCK_OFFSET_NONE] stays 0. */
	uint64_t offset_ns[CLOCK_OFFSET_COUNT];
	/* Which entry points answer from the TSC, and how the counter is
	 * read (clock_table.h), for a reader of each mode: a service's page
	 * serves both; a process's own engine writes its own mode's only. */
	uint32_t api_flags[TABLE_MODE_COUNT];
} __attribute__((aligned(64)));

/* The bytes a calibration service writes at the start of the page it
 * publishes (service_page.h): who wrote it, with which settings. */
#define TABLE_PAGE_HEADER_BYTES 192u
/* x86-64's base page: what mmap places, and so the block's alignment. */
#define TABLE_PAGE_ALIGN 4096u
/* Words of a mask with one bit per CPU id. */
#define TABLE_CPU_MASK_WORDS (CPU_MAX_CPUS / (8 * sizeof(unsigned long)))

/* The lines and the facts beside them, in one page-aligned block of whole
 * pages and nothing else: a process served by a calibration service maps
 * the service's page over it, read-only, and the service maps the same
 * file over its own (service_page.h). The read path then loads the same
 * addresses whoever calibrates. Hidden, like every variable the read path
 * touches, so that code addresses it directly rather than through the
 * GOT; the records are indexed by CPU id, and their untouched pages cost
 * no memory. */
struct table_page {
	unsigned char header[TABLE_PAGE_HEADER_BYTES];
	struct table_shared shared;
	/* The lines calibrated against CLOCK_MONOTONIC, by CPU id. */
	struct table_record records[CPU_MAX_CPUS];
	/* Those calibrated against CLOCK_MONOTONIC_RAW, under the same
	 * validity: a CPU's raw line is withdrawn whenever its monotonic
	 * line is. */
	struct table_record raw_records[CPU_MAX_CPUS];
	/* The CPUs the engine calibrates (it visits each round), whether or
	 * not their line answers at the moment: a served reader needs every
	 * CPU it may run on among them, not a line on each right now (a
	 * real-time load withdraws one for a while). Read by the judge of a
	 * service's page only, never on the read path. */
	unsigned long calibrated[TABLE_CPU_MASK_WORDS];
} __attribute__((aligned(TABLE_PAGE_ALIGN)));

_Static_assert(sizeof(struct table_page) % TABLE_PAGE_ALIGN == 0,
	       "the table is whole pages, so that a mapping over it covers nothing else");

extern __attribute__((visibility("hidden"))) struct table_page table_page;

/* True once the table is a calibration service's page, mapped read-only:
 * every writer below then returns without writing (a write would fault). */
extern __attribute__((visibility("hidden"))) bool table_read_only;

/* This process's mode's word of api_flags: set by table_set_mode before
 * any reader, pointed at table_pending_word by the constructor's pending
 * start (so that a start writes no page of the table) and back at the
 * table's word at the table's first write. A pointer rather than an index:
 * the read path loads it and then the word, with no address to compute
 * between; both loads are atomic (on x86-64 each is one plain mov). */
extern __attribute__((visibility("hidden"))) const uint32_t *table_own_flags;

/* The mode of this process's readers (settings.relaxed). */
void table_set_mode(bool relaxed);
/* The mode table_set_mode set (ordered until then). */
enum table_mode table_own_mode(void);

/* The flags this process's entry points read: its own mode's word. */
static inline uint32_t table_api_flags(void)
{
	return __atomic_load_n(__atomic_load_n(&table_own_flags, __ATOMIC_ACQUIRE),
			       __ATOMIC_RELAXED);
}

/* The CPUs on which readers found no line, one bit each, on cache lines of
 * their own: set by readers (table_want_line), read and cleared by the
 * writer. */
#define TABLE_WANTED_WORDS TABLE_CPU_MASK_WORDS
extern __attribute__((visibility("hidden"))) unsigned long table_wanted[TABLE_WANTED_WORDS];

/* Publishes one CPU's monotonic line atomically. */
void table_publish(uint32_t cpu, struct calib_line line);
/* Publishes one CPU's CLOCK_MONOTONIC_RAW line atomically. */
void table_publish_raw(uint32_t cpu, struct calib_line line);
/* Makes readers on this CPU answer every clock with libc. */
void table_withdraw(uint32_t cpu);
/* Makes readers on this CPU answer CLOCK_MONOTONIC_RAW with libc. */
void table_withdraw_raw(uint32_t cpu);
/* Whether the engine calibrates cpu (table_page.calibrated). */
void table_set_calibrated(uint32_t cpu, bool calibrated);
/* Makes every record stale at once (fork child before its refresh thread). */
void table_set_validity(uint64_t valid_from_tsc, uint64_t valid_ticks);

/* The shared facts beside the lines: table.c is their only writer (but
 * for readers' table_want_line and a reader's step of a clock, which goes
 * through table_swap_offset). */
/* Publishes the flags readers of mode use (api_flags[mode]), keeping
 * CLOCK_START_PENDING as a stopper or starter may set it meanwhile. */
void table_publish_flags(enum table_mode mode, uint32_t flags);
/* Sets or clears CLOCK_START_PENDING in every mode's api_flags. */
void table_set_start_pending(bool pending);
/* Stops every answer from the lines at once: each mode's api_flags
 * becomes its flags (less CLOCK_START_PENDING), and the validity ends. */
void table_stop_answering(const uint32_t flags[TABLE_MODE_COUNT]);
/* Publishes a clock's offset (kind) the first time. */
void table_set_offset(enum clock_offset_kind kind, uint64_t offset_ns);
/* Publishes a moved offset unless someone published another since
 * expected_ns was read: true when this one went in. */
bool table_swap_offset(enum clock_offset_kind kind, uint64_t expected_ns, uint64_t offset_ns);
/* After table_read_only was set on a table a reader could still write (a
 * reader's table_swap_offset, its check made before the flag): waits, in
 * 1 ms sleeps up to max_ms, until none is writing; true when none is, and
 * none will. */
bool table_writers_gone(unsigned max_ms);

/* The writer's copy of table_wanted, and its clearing: the program's threads
 * moved, and those still without a line say so again. */
void table_wanted_copy(unsigned long *into);
void table_wanted_clear(void);

/* A reader on cpu found no line there: sets cpu's bit unless it is set
 * already. The load first, so that a reader left without a line (a CPU the
 * writer cannot reach) writes the shared word once, not at every call. No
 * lock, no call. */
static inline void table_want_line(uint32_t cpu)
{
	const unsigned bits = 8 * sizeof(unsigned long);
	unsigned long bit = 1ul << (cpu % bits);
	unsigned long *word;

	if (cpu >= CPU_MAX_CPUS)
		return;
	word = &table_wanted[cpu / bits];
	if (!(__atomic_load_n(word, __ATOMIC_RELAXED) & bit))
		__atomic_fetch_or(word, bit, __ATOMIC_RELAXED);
}

/* One record, loaded whole: also a record of another process's page. */
static inline struct calib_line table_load_record(const struct table_record *record)
{
	struct calib_line line;
#if defined(__SANITIZE_THREAD__)
	/* ThreadSanitizer cannot see that an aligned SSE load is atomic; in
	 * its builds both sides use its 16-byte atomics (see table.c). */
	unsigned __int128 v = __atomic_load_n((unsigned __int128 *)record, __ATOMIC_RELAXED);
	line.mult = (uint64_t)v;
	line.offset = (uint64_t)(v >> 64);
#else
	__m128i v;

	/* One movdqa, written out: as a plain intrinsic the compiler may split
	 * the load into two 8-byte moves, which can tear. */
	__asm__ volatile("movdqa %1, %0" : "=x"(v) : "m"(*record));
	line.mult = (uint64_t)_mm_cvtsi128_si64(v);
	line.offset = (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(v, v));
#endif
	return line;
}

/* One CPU's line of the given lines (a constant at every call). */
static inline struct calib_line table_load_lines(enum clock_lines lines, uint32_t cpu)
{
	const struct table_record *records =
	    lines == CLOCK_LINES_RAW ? table_page.raw_records : table_page.records;

	/* The records' address taken whole: left to itself, GCC folds the
	 * records' place in the page into the index (add 16, then shift) and
	 * puts one more instruction before the read path's load. */
	__asm__("" : "+r"(records));
	return table_load_record(&records[cpu]);
}

/* One CPU's monotonic line. */
static inline struct calib_line table_load(uint32_t cpu)
{
	return table_load_lines(CLOCK_LINES_MONOTONIC, cpu);
}

#endif
