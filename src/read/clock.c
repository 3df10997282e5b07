/* The careful read: what answers when the fast read in clock.h gives up.
 * Every check is written out, the clamp holds the thread's last answer
 * instead of refusing, and a new second is divided out. Out of line, so
 * that the exported functions' fast path calls nothing. */
#include "config.h"

#include "clock.h"

#include "clock_check.h"
#include "service_page.h"

__thread struct clock_thread_state clock_thread __attribute__((tls_model("initial-exec")));

/* The line at tsc as monotonic ns, or false when the table is stale, the TSC
 * is before its window, the record holds no line, or the table, judged
 * again (service_page_rejudge), may not answer. Two CPUs' lines
 * disagree by a few nanoseconds and a refresh may bend a line under a
 * reader: then this thread keeps its last answer. */
/* The lines' validity has lapsed at tsc: remembered, so that the slow calls
 * until it is renewed go to libc without a careful read
 * (clock_lines_lapsed), and the fast read's guess parked on a CPU with no
 * line, so that they read no counter either. A counter before the validity
 * (another CPU's a little behind, or one reset by a resume) is no lapse
 * the next call can count on. */
static void clock_careful_lapsed(uint64_t tsc, uint64_t valid_from, uint64_t valid_ticks)
{
	if ((int64_t)(tsc - valid_from) < 0)
		return;
	clock_thread.lapsed_from_tsc = valid_from;
	clock_thread.lapsed_ticks = valid_ticks;
	if (table_load_lines(CLOCK_LINES_MONOTONIC, CLOCK_PARKED_CPU).mult == 0 &&
	    table_load_lines(CLOCK_LINES_RAW, CLOCK_PARKED_CPU).mult == 0)
		clock_thread.last_cpu = CLOCK_PARKED_CPU;
}

/* Past the fast read's deadline: the page judged again (a served
 * process's), then the lines checked against the kernel's clock, each
 * where its own deadline has passed. line is the CPU's line of kind
 * lines; the check takes the CPU's CLOCK_MONOTONIC line. */
static bool clock_careful_judged(enum clock_lines lines, uint64_t tsc, struct calib_line line)
{
	if (!service_page_rejudge(tsc))
		return false;
	if (lines != CLOCK_LINES_MONOTONIC)
		line = table_load_lines(CLOCK_LINES_MONOTONIC, clock_thread.last_cpu);
	return clock_check(tsc, line);
}

static bool clock_careful_finish(enum clock_lines lines, uint64_t tsc, struct calib_line line,
				 uint64_t valid_from, uint64_t valid_ticks, uint64_t *ns_out)
{
	uint64_t *last = clock_lines_last(lines);
	uint64_t ns;

	if (tsc - valid_from > valid_ticks) {
		/* A page that was stale is judged again before it answers:
		 * after a counter reset, the process's deadline is far ahead.
		 * And lines that lapsed are checked again: the thread may
		 * restart them anywhere its samples say. */
		if (wiped_judged_until() != 0)
			clock_check_judged_until(0);
		clock_check_forget();
		clock_careful_lapsed(tsc, valid_from, valid_ticks);
		return false;
	}
	if (line.mult == 0 ||
	    (tsc >= wiped_judged_until() && !clock_careful_judged(lines, tsc, line)))
		return false;
	ns = clock_mulhi(tsc, line.mult) + line.offset;
	if (ns < *last)
		ns = *last;
	*last = ns;
	*ns_out = ns;
	return true;
}

/* This thread is on cpu, which has no line: libc answers, and the refresh
 * thread learns that a thread of the program runs here (table_want_line).
 * Remembers the CPU for the fast read's guess. */
static bool clock_careful_no_line(uint32_t cpu)
{
	clock_thread.last_cpu = cpu;
	table_want_line(cpu);
	return false;
}

/* rdtscp and the line of the CPU it names, and kind's offset (read after
 * the validity: clock_offset_after_validity); remembers the CPU for the fast
 * read's guess. Where rseq says the thread is on a CPU with no line, no
 * counter is read: libc answers at about its own cost. */
static bool clock_careful_ordered_ns(enum clock_lines lines, enum clock_offset_kind kind,
				     uint64_t *ns_out, uint64_t *added_out)
{
	uint64_t valid_from, valid_ticks, tsc;
	struct calib_line line;
	uint32_t aux, cpu;

	if (cpu_rseq_cpu_id_offset != 0) {
		cpu = cpu_rseq_current();
		if (cpu < CPU_MAX_CPUS && table_load_lines(lines, cpu).mult == 0)
			return clock_careful_no_line(cpu);
	}
	valid_from = __atomic_load_n(&table_page.shared.valid_from_tsc, __ATOMIC_ACQUIRE);
	valid_ticks = __atomic_load_n(&table_page.shared.valid_ticks, __ATOMIC_ACQUIRE);
	*added_out = clock_offset_after_validity(kind);
	tsc = cpu_rdtscp(&aux);
	cpu = cpu_from_tsc_aux(aux);
	line = table_load_lines(lines, cpu);
	if (line.mult == 0)
		return clock_careful_no_line(cpu);
	clock_thread.last_cpu = cpu;
	return clock_careful_finish(lines, tsc, line, valid_from, valid_ticks, ns_out);
}

/* The CPU id from rseq (inline, one load) or from getcpu. */
static inline uint32_t clock_careful_cpu(uint32_t flags)
{
	if (flags & CLOCK_CPU_GETCPU)
		return cpu_current_id(CPU_ID_GETCPU);
	return cpu_rseq_current();
}

/* rdtsc, fenced or not, between two reads of the CPU id (rseq or getcpu);
 * read again when they differ, libc when they differ twice or the id is
 * not a CPU. TSC_AUX is never read here: where rdtscp is not advertised it
 * may hold anything (a hypervisor's own numbers). Remembers the CPU for the
 * fast read's guess. */
static bool clock_careful_checked_ns(uint32_t flags, enum clock_lines lines,
				     enum clock_offset_kind kind, uint64_t *ns_out,
				     uint64_t *added_out)
{
	for (int attempt = 0; attempt < 2; attempt++) {
		uint32_t cpu = clock_careful_cpu(flags);
		uint64_t valid_from, valid_ticks, tsc;
		struct calib_line line;

		if (cpu >= CPU_MAX_CPUS)
			return false;
		line = table_load_lines(lines, cpu);
		if (line.mult == 0)
			return clock_careful_no_line(cpu);
		valid_from = __atomic_load_n(&table_page.shared.valid_from_tsc, __ATOMIC_ACQUIRE);
		valid_ticks = __atomic_load_n(&table_page.shared.valid_ticks, __ATOMIC_ACQUIRE);
		*added_out = clock_offset_after_validity(kind);
		tsc = (flags & CLOCK_READ_LFENCE) ? cpu_rdtsc_fenced() : cpu_rdtsc();
		if (clock_careful_cpu(flags) != cpu)
			continue;
		clock_thread.last_cpu = cpu;
		return clock_careful_finish(lines, tsc, line, valid_from, valid_ticks, ns_out);
	}
	return false;
}

static bool clock_careful_lines_ns(uint32_t flags, enum clock_lines lines,
				   enum clock_offset_kind kind, uint64_t *ns_out,
				   uint64_t *added_out)
{
	if (flags & CLOCK_READ_BITS)
		return clock_careful_checked_ns(flags, lines, kind, ns_out, added_out);
	return clock_careful_ordered_ns(lines, kind, ns_out, added_out);
}

/* The division the fast read avoids, once a second per thread. */
static void clock_split(struct clock_second *second, uint64_t ns, int64_t *sec, uint64_t *rest_ns)
{
	int64_t cached = second->sec;
	uint64_t into = ns - (uint64_t)cached * CLOCK_NS_PER_SEC;

	if (into >= CLOCK_NS_PER_SEC) {
		/* One word: a signal handler that refills it in between can
		 * never pair one second's start with another's number. */
		cached = (int64_t)(ns / CLOCK_NS_PER_SEC);
		second->sec = cached;
		into = ns - (uint64_t)cached * CLOCK_NS_PER_SEC;
	}
	*sec = cached;
	*rest_ns = into;
}

void clock_to_timespec(struct clock_second *second, uint64_t ns, struct timespec *ts)
{
	int64_t sec;
	uint64_t rest;

	clock_split(second, ns, &sec, &rest);
	ts->tv_sec = (time_t)sec;
	ts->tv_nsec = (long)rest;
}

/* The reading of the clock that is monotonic plus kind's offset, split by
 * the thread's cached second for that clock, which is refilled when it is
 * not this reading's. */
static bool clock_careful_read_split(uint32_t flags, enum clock_offset_kind kind, int64_t *sec,
				     uint64_t *rest_ns)
{
	uint64_t ns, added;

	if (!clock_careful_lines_ns(flags, CLOCK_LINES_MONOTONIC, kind, &ns, &added))
		return false;
	clock_split(&clock_thread.seconds[kind], ns + added, sec, rest_ns);
	return true;
}

bool clock_careful_monotonic(uint32_t flags, struct timespec *ts)
{
	uint64_t rest;
	int64_t sec;

	if (!clock_careful_read_split(flags, CLOCK_OFFSET_NONE, &sec, &rest))
		return false;
	ts->tv_sec = (time_t)sec;
	ts->tv_nsec = (long)rest;
	return true;
}

bool clock_careful_offset_clock(uint32_t flags, enum clock_offset_kind kind, struct timespec *ts)
{
	uint64_t rest;
	int64_t sec;

	if (!clock_careful_read_split(flags, kind, &sec, &rest))
		return false;
	ts->tv_sec = (time_t)sec;
	ts->tv_nsec = (long)rest;
	return true;
}

bool clock_careful_realtime(uint32_t flags, struct timespec *ts)
{
	return clock_careful_offset_clock(flags, CLOCK_OFFSET_REALTIME, ts);
}

bool clock_careful_raw(uint32_t flags, struct timespec *ts)
{
	uint64_t ns, added;

	if (!clock_careful_lines_ns(flags, CLOCK_LINES_RAW, CLOCK_OFFSET_NONE, &ns, &added))
		return false;
	clock_to_timespec(&clock_thread.raw_second, ns, ts);
	return true;
}

bool clock_careful_timeval(uint32_t flags, struct timeval *tv)
{
	uint64_t rest;
	int64_t sec;

	if (!clock_careful_read_split(flags, CLOCK_OFFSET_REALTIME, &sec, &rest))
		return false;
	tv->tv_sec = (time_t)sec;
	tv->tv_usec = (suseconds_t)(rest / 1000u);
	return true;
}

bool clock_careful_seconds(uint32_t flags, time_t *sec_out)
{
	uint64_t rest;
	int64_t sec;

	if (!clock_careful_read_split(flags, CLOCK_OFFSET_REALTIME, &sec, &rest))
		return false;
	*sec_out = (time_t)sec;
	return true;
}
