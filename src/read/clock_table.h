/* The clocks fasttime answers, as a table: one row per clock id, saying
 * what answers it (which lines, plus which offset), its bit in api_flags,
 * and the entry points that read it. Adding a clock is a row here, its
 * clock_gettime's row in entry_table.def (which gives the bits), an offset
 * kind if it needs one, and its tests.
 *
 * api_flags bits: clock_gettime's clock ids first, bit n for clock id n
 * (so that clock_gettime tests (flags >> id) & 1), below CLOCK_ID_BITS;
 * the other entry points above them; then how the counter is read. */
#ifndef FASTTIME_CLOCK_TABLE_H
#define FASTTIME_CLOCK_TABLE_H

#include <stdint.h>
#include <time.h>

/* Clock ids below this have a bit of their own; any other id (a CPU-time
 * clock's, which is negative) goes to libc untouched. */
#define CLOCK_ID_BITS 16u

/* Each entry point's bit, CLOCK_API_ID (entry_table.def): clock_gettime's,
 * by clock id, below CLOCK_ID_BITS; the other entry points, all
 * CLOCK_REALTIME, above them; CLOCK_API_ALL, all of them; then how the
 * counter is read and the engine's state. */
enum clock_api {
#define ENTRY(id, form, clock, bit, bench_position, name, key, bench_name)                         \
	CLOCK_API_##id = 1u << (bit),
#include "entry_table.def"
#undef ENTRY
	CLOCK_API_ALL = 0u
#define ENTRY(id, form, clock, bit, bench_position, name, key, bench_name) | CLOCK_API_##id
#include "entry_table.def"
#undef ENTRY
	,
	/* clock_gettime's */
	CLOCK_API_CLOCK_IDS = CLOCK_API_ALL & ((1u << CLOCK_ID_BITS) - 1u),
	/* How the counter and the CPU id are read (cpu.h's cpu_reading):
	 * none of these bits is rdtscp with TSC_AUX. */
	CLOCK_MODE_RELAXED = 1u << (CLOCK_ID_BITS + 4), /* rdtsc, CPU id from rseq */
	/* The refresh thread is due to start: until it has, calls that pass
	 * through to libc make the start check on the way. Kept here so that
	 * a pass-through tests one word it has loaded anyway. */
	CLOCK_START_PENDING = 1u << (CLOCK_ID_BITS + 5),
	/* ordered: lfence; rdtsc, CPU id from rseq */
	CLOCK_READ_LFENCE = 1u << (CLOCK_ID_BITS + 6),
	/* No rseq: the CPU id comes from getcpu, a call, so only the careful
	 * read answers; with CLOCK_READ_LFENCE the counter is fenced. */
	CLOCK_CPU_GETCPU = 1u << (CLOCK_ID_BITS + 7),
	/* An entry point that answered from the TSC no longer does (the
	 * kernel dropped the TSC, the lines lost the clocksource's trust):
	 * libc's answers pass through the thread's clamp, which they would
	 * skip if left to libc from the start, since a thread's last answer
	 * from the TSC may be a little ahead of the kernel's clock. */
	CLOCK_LIBC_CLAMPED = 1u << (CLOCK_ID_BITS + 8),
	CLOCK_READ_BITS = CLOCK_MODE_RELAXED | CLOCK_READ_LFENCE | CLOCK_CPU_GETCPU,
};

/* A bit below CLOCK_ID_BITS is clock_gettime's for the clock of that id. */
#define ENTRY(id, form, clock, bit, bench_position, name, key, bench_name)                         \
	_Static_assert((bit) >= CLOCK_ID_BITS || (bit) == (clock),                                 \
		       #id ": a bit below CLOCK_ID_BITS is a clock id's");
#include "entry_table.def"
#undef ENTRY

/* Which per-CPU lines answer a clock: those calibrated against
 * CLOCK_MONOTONIC (which NTP slews, and so every clock made from it), or
 * those calibrated against CLOCK_MONOTONIC_RAW, which it never slews. Each
 * has its records in the table and its own clamp in every thread. */
enum clock_lines {
	CLOCK_LINES_MONOTONIC,
	CLOCK_LINES_RAW,
	CLOCK_LINES_COUNT,
};

/* What is added to the monotonic lines to answer a clock: each offset is
 * that clock minus CLOCK_MONOTONIC, measured by the refresh thread
 * (offsets.h) and published in the table (table_page.shared.offset_ns). */
enum clock_offset_kind {
	CLOCK_OFFSET_NONE,     /* CLOCK_MONOTONIC itself: always 0 */
	CLOCK_OFFSET_REALTIME, /* moves when the clock is set, at a leap second, on resume */
	CLOCK_OFFSET_BOOTTIME, /* grows by the time spent suspended */
	CLOCK_OFFSET_TAI,      /* moves when the clock or the TAI offset is set, on resume */
	CLOCK_OFFSET_COUNT,
};

struct clock_row {
	clockid_t id;
	const char *name;	       /* "CLOCK_BOOTTIME" */
	enum clock_lines lines;	       /* the lines that answer it */
	enum clock_offset_kind offset; /* added to the monotonic lines */
	uint32_t api;		       /* its clock_gettime bit */
	uint32_t entry_points;	       /* every CLOCK_API_* bit that reads this clock */
};

#define CLOCK_TABLE_ROWS 5u
/* One row per clock answered from the TSC, by clock id. */
extern const struct clock_row clock_table[CLOCK_TABLE_ROWS];

/* The row of clock id id, or NULL where the TSC never answers it (libc
 * does: the coarse clocks, which libc answers faster; CPU-time clocks). */
const struct clock_row *clock_table_row(clockid_t id);
/* The row answering offset kind kind (the clock that is the monotonic
 * lines plus it). */
const struct clock_row *clock_table_row_for_offset(enum clock_offset_kind kind);

#endif
