/* The per-API benchmark behind "never slower than libc": where the fast path
 * does not win on this machine, that entry point stays on libc. */
#include "config.h"

#include "api_choice.h"

#include <string.h>

#include "clock.h"
#include "debug.h"
#include "libc.h"
#include "lines.h"
#include "look.h"
#include "offsets.h"
#include "placement.h"
#include "raw_lines.h"
#include "start_data.h"
#include "table.h"
#include "verdict.h"

#define API_CHOICE_CALLS  1000u
#define API_CHOICE_ROUNDS 15u

struct api_cost api_choice_costs[ENTRY_COUNT];
bool api_choice_made;
struct api_choice_record api_choice_last;
/* Every CLOCK_API_* bit readers of each mode have been given since the
 * engine began. */
static uint32_t api_choice_ever_published[TABLE_MODE_COUNT];
/* Whether the engine chooses for both modes (api_choice_for_both_modes).
 * Set by every process start (start_data.h). */
static bool api_choice_both_modes START_DATA;
/* When the engine began (api_choice_begin), monotonic ns. */
static uint64_t api_choice_started_ns;

typedef void (*api_loop_fn)(uint32_t flags, unsigned calls);

/* Keeps results alive without a shared-memory write per call. */
static void api_consume(uint64_t value)
{
	__asm__ volatile("" : : "r"(value));
}

/* The mode being measured, read by the entry-shaped functions below as the
 * exported ones read api_flags: one load per call. */
static uint32_t api_measured_flags;
/* Calls the counter could not answer during a measurement. */
static unsigned api_fallbacks;

/* Counts a call the counter could not answer; the result stands for it. */
static int api_fell_back(int result)
{
	api_fallbacks++;
	return result;
}

/* Functions of the exported entry points' shape: the flags loaded, the
 * arguments tested, the fast read inline, the careful read beside it. They
 * are called through pointers, as libc's are, so that each side pays what
 * a program's call pays: an entry point goes to the TSC only where it wins
 * end to end, not only in a loop with everything inlined. (Measured on a
 * 2-vCPU KVM guest: ordered mode won by 8 % inlined and lost by 1 to 7 %
 * through the exported functions.) */
/* clock_gettime of the table's other clocks, out of line as the exported
 * function has it (preload_other_clock). */
static __attribute__((noinline)) int api_entry_other_clock(clockid_t id, struct timespec *ts)
{
	uint32_t flags = __atomic_load_n(&api_measured_flags, __ATOMIC_RELAXED);
	const struct clock_row *row = clock_table_row(id);
	bool answered;

	if (row == NULL || !((flags >> id) & 1) || ts == NULL)
		return -1;
	answered = row->lines == CLOCK_LINES_RAW
		       ? clock_answer_raw(flags, ts)
		       : clock_answer_offset_clock(flags, row->offset, ts);
	return answered ? 0 : api_fell_back(-1);
}

static __attribute__((noinline)) int api_entry_clock_gettime(clockid_t id, struct timespec *ts)
{
	uint32_t flags = __atomic_load_n(&api_measured_flags, __ATOMIC_RELAXED);

	if ((unsigned)id > CLOCK_MONOTONIC)
		return api_entry_other_clock(id, ts);
	if (!((flags >> id) & 1) || ts == NULL)
		return -1;
	if (id == CLOCK_MONOTONIC)
		return clock_answer_monotonic(flags, ts) ? 0 : api_fell_back(-1);
	return clock_answer_realtime(flags, ts) ? 0 : api_fell_back(-1);
}

static __attribute__((noinline)) int api_entry_gettimeofday(struct timeval *tv, void *tz)
{
	uint32_t flags = __atomic_load_n(&api_measured_flags, __ATOMIC_RELAXED);

	if (!(flags & CLOCK_API_GETTIMEOFDAY) || tz != NULL || tv == NULL)
		return -1;
	return clock_answer_timeval(flags, tv) ? 0 : api_fell_back(-1);
}

static __attribute__((noinline)) time_t api_entry_time(time_t *t)
{
	uint32_t flags = __atomic_load_n(&api_measured_flags, __ATOMIC_RELAXED);
	time_t now;

	if (!(flags & CLOCK_API_TIME))
		return -1;
	if (!clock_answer_seconds(flags, &now))
		return api_fell_back(-1);
	if (t != NULL)
		*t = now;
	return now;
}

static __attribute__((noinline)) int api_entry_timespec_get(struct timespec *ts, int base)
{
	uint32_t flags = __atomic_load_n(&api_measured_flags, __ATOMIC_RELAXED);

	if (base != TIME_UTC || !(flags & CLOCK_API_TIMESPEC_GET) || ts == NULL)
		return 0;
	return clock_answer_realtime(flags, ts) ? TIME_UTC : api_fell_back(0);
}

static struct libc_time_functions api_entries = {
	.clock_gettime = api_entry_clock_gettime,
	.gettimeofday = api_entry_gettimeofday,
	.time = api_entry_time,
	.timespec_get = api_entry_timespec_get,
};

/* The table, through a pointer the compiler cannot see through, so that
 * every call stays an indirect call into an out-of-line function. */
static struct libc_time_functions *api_entry(void)
{
	struct libc_time_functions *entries = &api_entries;

	__asm__("" : "+r"(entries));
	return entries;
}

/* For each form of entry point, libc's function and the entry-shaped one
 * in loops, named after the row (api_libc_ID, api_fast_ID): clock_gettime's
 * with its clock id a constant in each pair, as in a program's call. */
#define API_LOOPS_CLOCK_GETTIME(id, clock)                                                         \
	static __attribute__((noinline)) void api_libc_##id(uint32_t flags, unsigned calls)        \
	{                                                                                          \
		struct timespec ts;                                                                \
		(void)flags;                                                                       \
		for (unsigned i = 0; i < calls; i++) {                                             \
			libc_clock_gettime(clock, &ts);                                            \
			api_consume((uint64_t)ts.tv_nsec);                                         \
		}                                                                                  \
	}                                                                                          \
	static __attribute__((noinline)) void api_fast_##id(uint32_t flags, unsigned calls)        \
	{                                                                                          \
		struct timespec ts = { 0, 0 };                                                     \
		(void)flags;                                                                       \
		for (unsigned i = 0; i < calls; i++) {                                             \
			api_entry()->clock_gettime(clock, &ts);                                    \
			api_consume((uint64_t)ts.tv_nsec);                                         \
		}                                                                                  \
	}

#define API_LOOPS_GETTIMEOFDAY(id, clock)                                                          \
	static __attribute__((noinline)) void api_libc_##id(uint32_t flags, unsigned calls)        \
	{                                                                                          \
		struct timeval tv;                                                                 \
		(void)flags;                                                                       \
		for (unsigned i = 0; i < calls; i++) {                                             \
			libc_gettimeofday(&tv, NULL);                                              \
			api_consume((uint64_t)tv.tv_usec);                                         \
		}                                                                                  \
	}                                                                                          \
	static __attribute__((noinline)) void api_fast_##id(uint32_t flags, unsigned calls)        \
	{                                                                                          \
		struct timeval tv = { 0, 0 };                                                      \
		(void)flags;                                                                       \
		for (unsigned i = 0; i < calls; i++) {                                             \
			api_entry()->gettimeofday(&tv, NULL);                                      \
			api_consume((uint64_t)tv.tv_usec);                                         \
		}                                                                                  \
	}

#define API_LOOPS_TIME(id, clock)                                                                  \
	static __attribute__((noinline)) void api_libc_##id(uint32_t flags, unsigned calls)        \
	{                                                                                          \
		(void)flags;                                                                       \
		for (unsigned i = 0; i < calls; i++)                                               \
			api_consume((uint64_t)libc_time_now(NULL));                                \
	}                                                                                          \
	static __attribute__((noinline)) void api_fast_##id(uint32_t flags, unsigned calls)        \
	{                                                                                          \
		(void)flags;                                                                       \
		for (unsigned i = 0; i < calls; i++)                                               \
			api_consume((uint64_t)api_entry()->time(NULL));                            \
	}

#define API_LOOPS_TIMESPEC_GET(id, clock)                                                          \
	static __attribute__((noinline)) void api_libc_##id(uint32_t flags, unsigned calls)        \
	{                                                                                          \
		struct timespec ts;                                                                \
		(void)flags;                                                                       \
		for (unsigned i = 0; i < calls; i++) {                                             \
			libc_timespec_get(&ts, TIME_UTC);                                          \
			api_consume((uint64_t)ts.tv_nsec);                                         \
		}                                                                                  \
	}                                                                                          \
	static __attribute__((noinline)) void api_fast_##id(uint32_t flags, unsigned calls)        \
	{                                                                                          \
		struct timespec ts = { 0, 0 };                                                     \
		(void)flags;                                                                       \
		for (unsigned i = 0; i < calls; i++) {                                             \
			api_entry()->timespec_get(&ts, TIME_UTC);                                  \
			api_consume((uint64_t)ts.tv_nsec);                                         \
		}                                                                                  \
	}

#define ENTRY(id, form, clock, bit, bench_position, name, key, bench_name)                         \
	API_LOOPS_##form(id, clock)
#include "entry_table.def"
#undef ENTRY

static double api_time_loop(api_loop_fn loop, uint32_t flags)
{
	uint64_t start = libc_monotonic_ns();

	loop(flags, API_CHOICE_CALLS);
	return (double)(libc_monotonic_ns() - start) / API_CHOICE_CALLS;
}

/* The CLOCK_API_* bits the lines can answer now: those of every clock whose
 * offset is published (a kernel without CLOCK_TAI has none for it) and
 * whose lines answer wherever the monotonic ones do. */
static uint32_t api_choice_answerable(void)
{
	uint32_t bits = 0;

	for (unsigned i = 0; i < CLOCK_TABLE_ROWS; i++) {
		const struct clock_row *row = &clock_table[i];

		if (row->lines == CLOCK_LINES_RAW ? raw_lines_ready() : offsets_known(row->offset))
			bits |= row->entry_points;
	}
	return bits;
}

/* Each entry point's two loops: libc's, and the fast path's. */
static const struct {
	api_loop_fn libc_loop;
	api_loop_fn fast_loop;
} api_choice_loops[ENTRY_COUNT] = {
#define ENTRY(id, form, clock, bit, bench_position, name, key, bench_name)                         \
	[ENTRY_##id] = { api_libc_##id, api_fast_##id },
#include "entry_table.def"
#undef ENTRY
};

/* Times entry point a against libc, alternating, and keeps each side's best
 * round: the least disturbed by the rest of the machine (the fast side
 * only where measure_fast). */
static void api_choice_measure_entry(unsigned a, uint32_t mode_flags, bool measure_fast,
				     double *best_libc, double *best_fast)
{
	for (unsigned round = 0; round < API_CHOICE_ROUNDS; round++) {
		double libc_ns, fast_ns;

		/* Over a slow kernel clock the measurement outlasts
		 * the lines' validity: a look renews it. */
		look_once();
		libc_ns = api_time_loop(api_choice_loops[a].libc_loop, mode_flags);
		fast_ns =
		    measure_fast ? api_time_loop(api_choice_loops[a].fast_loop, mode_flags) : 0;
		if (libc_ns < *best_libc)
			*best_libc = libc_ns;
		if (fast_ns < *best_fast)
			*best_fast = fast_ns;
	}
}

uint32_t api_choice_measure(uint32_t mode_flags, struct api_cost costs[ENTRY_COUNT],
			    unsigned *fallbacks)
{
	uint32_t chosen = 0, answerable = api_choice_answerable();

	/* The loops call libc through its resolved functions. */
	libc_resolve();
	api_fallbacks = 0;
	__atomic_store_n(&api_measured_flags, mode_flags | answerable, __ATOMIC_RELAXED);
	for (unsigned a = 0; a < ENTRY_COUNT; a++) {
		bool measure_fast = (answerable & entry_table[a].api) != 0;
		double best_libc = 1e30, best_fast = 1e30;

		api_choice_measure_entry(a, mode_flags, measure_fast, &best_libc, &best_fast);
		costs[a].name = entry_table[a].name;
		costs[a].flag = entry_table[a].api;
		costs[a].libc_ns = best_libc;
		costs[a].fast_ns = measure_fast ? best_fast : 0;
		if (measure_fast && best_fast < best_libc * API_CHOICE_MARGIN)
			chosen |= entry_table[a].api;
	}
	*fallbacks = api_fallbacks;
	return chosen & answerable;
}

/* The next CPU after the last choice's that has a line: the measurement
 * needs one, and moves from CPU to CPU rather than load one. One of the
 * thread's own CPUs where it can: a CPU visited only for other threads (a
 * pinned poller's) gets a round's pin, not the measurement too. */
static bool api_choice_cpu(uint32_t *cpu_out)
{
	for (int pass = 0; pass < 2; pass++) {
		/* The first CPU after the last choice's, else the first from 0. */
		uint32_t first = CPU_MAX_CPUS;

		LINES_FOR_EACH_ALLOWED (cpu) {
			if ((pass == 0 && !placement_home_has(cpu)) ||
			    !lines_cpu_answers(&lines_cpus[cpu]))
				continue;
			if (cpu > api_choice_last.cpu) {
				*cpu_out = cpu;
				return true;
			}
			if (first == CPU_MAX_CPUS)
				first = cpu;
		}
		if (first < CPU_MAX_CPUS) {
			*cpu_out = first;
			return true;
		}
	}
	return false;
}

/* Whether the entry points should be measured (again): never yet, or more
 * CPUs have lines than when they were (the first round that covers every
 * CPU, a CPU that joined), or the lines can answer a clock they could not
 * (CLOCK_MONOTONIC_RAW's lines a round behind), or the last measurement
 * was thrown away. */
static bool api_choice_due(unsigned with_line)
{
	return !api_choice_made || with_line > api_choice_last.cpus_with_line ||
	       (api_choice_answerable() & ~api_choice_last.answerable) != 0;
}

uint32_t api_choice_flags_for(enum table_mode mode, uint32_t apis)
{
	uint32_t flags = apis | verdict_flags_of_mode(mode);

	api_choice_ever_published[mode] |= apis;
	if (api_choice_ever_published[mode] & ~apis)
		flags |= CLOCK_LIBC_CLAMPED;
	return flags;
}

void api_choice_stopped_flags(uint32_t flags[TABLE_MODE_COUNT])
{
	for (unsigned mode = 0; mode < TABLE_MODE_COUNT; mode++)
		flags[mode] = api_choice_ever_published[mode] != 0 ? CLOCK_LIBC_CLAMPED : 0;
}

/* Whether the engine chooses for readers of mode: its own, and the other
 * too for a service, where readers of that mode can read here. */
static bool api_choice_serves_mode(enum table_mode mode)
{
	return verdict_mode_reads(mode) && (api_choice_both_modes || mode == table_own_mode());
}

/* Publishes what readers use: the chosen entry points while the lines are
 * trusted, none (libc answers) while they are not; for each mode the
 * engine chooses for. */
static void api_choice_publish_flags(bool trusted)
{
	for (unsigned mode = 0; mode < TABLE_MODE_COUNT; mode++) {
		uint32_t apis =
		    trusted && api_choice_made ? api_choice_last.chosen_by_mode[mode] : 0;

		if (!api_choice_serves_mode((enum table_mode)mode))
			continue;
		/* A stopper may set CLOCK_START_PENDING meanwhile: table.c
		 * keeps it. */
		table_publish_flags((enum table_mode)mode,
				    api_choice_flags_for((enum table_mode)mode, apis));
	}
}

/* Measures every mode the engine chooses for, this process's own first
 * (its costs are the ones kept for diagnostics): the chosen bits by mode
 * in chosen, the calls that fell back in *fallbacks. */
static void api_choice_measure_modes(struct api_cost costs[ENTRY_COUNT],
				     uint32_t chosen[TABLE_MODE_COUNT], unsigned *fallbacks)
{
	enum table_mode own = table_own_mode();

	for (unsigned i = 0; i < TABLE_MODE_COUNT; i++) {
		enum table_mode mode = i == 0 ? own : (enum table_mode)(1 - own);
		struct api_cost other[ENTRY_COUNT];
		unsigned fell_back = 0;

		chosen[mode] = 0;
		if (!api_choice_serves_mode(mode))
			continue;
		chosen[mode] = api_choice_measure(verdict_flags_of_mode(mode),
						  mode == own ? costs : other, &fell_back);
		*fallbacks += fell_back;
		if (mode != own && fell_back == 0)
			for (unsigned a = 0; a < ENTRY_COUNT; a++)
				debug_log("%s, for %s readers: libc %.1f ns, fasttime %.1f ns: %s",
					  other[a].name,
					  mode == TABLE_MODE_RELAXED ? "relaxed" : "ordered",
					  other[a].libc_ns, other[a].fast_ns,
					  (chosen[mode] & other[a].flag) ? "fast" : "libc");
	}
}

/* Measures every mode on cpu, in a visit like a round's: a real-time
 * thread that takes the CPU meanwhile gets the thread moved back by a
 * reader. False when the thread could not be pinned there; else the
 * costs, the chosen bits by mode and the calls that fell back. */
static bool api_choice_measure_on(uint32_t cpu, struct api_cost costs[ENTRY_COUNT],
				  uint32_t chosen[TABLE_MODE_COUNT], unsigned *fallbacks)
{
	placement_visit_begin(cpu);
	if (!placement_pin(cpu)) {
		placement_visit_close();
		return false;
	}
	/* Named even where this process's own mode is not measured (a
	 * service whose own mode cannot read here). */
	memset(costs, 0, ENTRY_COUNT * sizeof *costs);
	for (unsigned a = 0; a < ENTRY_COUNT; a++) {
		costs[a].name = entry_table[a].name;
		costs[a].flag = entry_table[a].api;
	}
	api_choice_measure_modes(costs, chosen, fallbacks);
	if (placement_visit_close())
		(*fallbacks)++;
	placement_unpin();
	return true;
}

/* Keeps a measurement on cpu in which no call fell back: the choice (every
 * answerable entry point where forced), its costs, and when and where it
 * was made. */
static void api_choice_keep(unsigned round, unsigned with_line, bool force, uint32_t cpu,
			    const struct api_cost costs[ENTRY_COUNT],
			    uint32_t chosen[TABLE_MODE_COUNT])
{
	api_choice_last.answerable = api_choice_answerable();
	for (unsigned mode = 0; mode < TABLE_MODE_COUNT; mode++)
		if (force && api_choice_serves_mode((enum table_mode)mode))
			chosen[mode] = CLOCK_API_ALL & api_choice_last.answerable;
	memcpy(api_choice_costs, costs, sizeof api_choice_costs);
	api_choice_last.round = round;
	api_choice_last.after_start_ns = libc_monotonic_ns() - api_choice_started_ns;
	api_choice_last.cpu = cpu;
	api_choice_last.cpus_with_line = with_line;
	memcpy(api_choice_last.chosen_by_mode, chosen, sizeof api_choice_last.chosen_by_mode);
	api_choice_last.chosen = chosen[table_own_mode()];
	api_choice_made = true;
}

/* The choice just kept, for FASTTIME_DEBUG: when and where, then each
 * entry point's costs and side. */
static void api_choice_log(unsigned round, unsigned with_line, uint32_t cpu)
{
	debug_log("entry points chosen after round %u, %.3f s after start, measured on cpu %u "
		  "with lines on %u of %u CPUs",
		  round, (double)api_choice_last.after_start_ns / 1e9, cpu, with_line,
		  api_choice_last.cpus_usable);
	for (unsigned a = 0; a < ENTRY_COUNT; a++) {
		const struct api_cost *cost = &api_choice_costs[a];

		/* Not "libc" for a clock whose lines are not ready: the next
		 * round chooses it (api_choice_due). */
		if (cost->fast_ns == 0)
			debug_log("%s: libc %.1f ns, fasttime not measured: no lines for it yet",
				  cost->name, cost->libc_ns);
		else
			debug_log("%s: libc %.1f ns, fasttime %.1f ns: %s", cost->name,
				  cost->libc_ns, cost->fast_ns,
				  (api_choice_last.chosen & cost->flag) ? "fast" : "libc");
	}
}

/* Measures each entry point against libc on a CPU that has a line, and
 * chooses. A measurement in which any call fell back (the thread was on a
 * CPU without a line, or the lines went stale) says nothing: it is thrown
 * away, and the next round measures again. */
static void api_choice_choose(unsigned round, unsigned with_line, bool force)
{
	struct api_cost costs[ENTRY_COUNT];
	uint32_t chosen[TABLE_MODE_COUNT];
	unsigned fallbacks = 0;
	uint32_t cpu;

	if (!api_choice_cpu(&cpu))
		return;
	if (!api_choice_measure_on(cpu, costs, chosen, &fallbacks))
		return;
	if (fallbacks > 0) {
		api_choice_last.rejected++;
		api_choice_last.cpu = cpu;
		debug_log("entry points: measurement on cpu %u thrown away: %u calls fell back "
			  "to libc; measuring again next round",
			  cpu, fallbacks);
		return;
	}
	api_choice_keep(round, with_line, force, cpu, costs, chosen);
	api_choice_log(round, with_line, cpu);
}

void api_choice_begin(uint64_t now_ns)
{
	api_choice_started_ns = now_ns;
}

void api_choice_forget(void)
{
	memset(&api_choice_last, 0, sizeof api_choice_last);
	api_choice_made = false;
}

void api_choice_for_both_modes(bool both)
{
	api_choice_both_modes = both;
}

void api_choice_after_round(unsigned round, const struct round_result *result, bool trusted,
			    bool force)
{
	api_choice_last.cpus_usable = result->usable;
	if (result->with_line > 0 && trusted && api_choice_due(result->with_line))
		api_choice_choose(round, result->with_line, force);
	api_choice_publish_flags(trusted);
}

bool api_choice_again(unsigned with_line, const struct round_result *round, bool force)
{
	unsigned rejected = api_choice_last.rejected;

	if (round != NULL)
		api_choice_last.cpus_usable = round->usable;
	api_choice_made = false;
	api_choice_choose(api_choice_last.round, with_line, force);
	api_choice_publish_flags(verdict_trusted());
	return api_choice_made && api_choice_last.rejected == rejected;
}
