/* The careful read: what answers when the fast read in clock.h gives up.
 * Every check is written out, the clamp holds the thread's last answer
 * instead of refusing, and a new second is divided out. Out of line, so
 * that the exported functions' fast path calls nothing. */
#include "config.h"

#include "clock.h"

__thread struct clock_thread_state clock_thread __attribute__((tls_model("initial-exec")));

/* The line at tsc as monotonic ns, or false when the table is stale, the TSC
 * is before its window, or the record holds no line. Two CPUs' lines
 * disagree by a few nanoseconds and a refresh may bend a line under a
 * reader: then this thread keeps its last answer. */
static bool clock_careful_finish(uint64_t tsc, struct calib_line line, uint64_t valid_from,
				 uint64_t valid_ticks, uint64_t *ns_out)
{
	uint64_t ns;

	if (tsc - valid_from > valid_ticks || line.mult == 0)
		return false;
	ns = clock_mulhi(tsc, line.mult) + line.offset;
	if (ns < clock_thread.last_mono_ns)
		ns = clock_thread.last_mono_ns;
	clock_thread.last_mono_ns = ns;
	*ns_out = ns;
	return true;
}

/* rdtscp and the line of the CPU it names; remembers the CPU for the fast
 * read's guess. */
static bool clock_careful_ordered_ns(uint64_t *ns_out)
{
	uint64_t valid_from = __atomic_load_n(&table_shared.valid_from_tsc, __ATOMIC_ACQUIRE);
	uint64_t valid_ticks = __atomic_load_n(&table_shared.valid_ticks, __ATOMIC_ACQUIRE);
	uint32_t aux, cpu;
	uint64_t tsc = cpu_rdtscp(&aux);

	cpu = cpu_from_tsc_aux(aux);
	clock_thread.last_cpu = cpu;
	return clock_careful_finish(tsc, table_load(cpu), valid_from, valid_ticks, ns_out);
}

/* rdtsc between two reads of the rseq CPU id; rdtscp when they differ or
 * the id is not a CPU. Remembers the CPU for the fast read's guess. */
static bool clock_careful_relaxed_ns(uint64_t *ns_out)
{
	uint32_t cpu = cpu_rseq_current();
	uint64_t valid_from, valid_ticks, tsc;
	struct calib_line line;

	if (cpu >= CPU_MAX_CPUS)
		return clock_careful_ordered_ns(ns_out);
	line = table_load(cpu);
	valid_from = __atomic_load_n(&table_shared.valid_from_tsc, __ATOMIC_ACQUIRE);
	valid_ticks = __atomic_load_n(&table_shared.valid_ticks, __ATOMIC_ACQUIRE);
	tsc = cpu_rdtsc();
	if (cpu_rseq_current() != cpu)
		return clock_careful_ordered_ns(ns_out);
	clock_thread.last_cpu = cpu;
	return clock_careful_finish(tsc, line, valid_from, valid_ticks, ns_out);
}

static bool clock_careful_mono_ns(uint32_t flags, uint64_t *ns_out)
{
	if (flags & CLOCK_MODE_RELAXED)
		return clock_careful_relaxed_ns(ns_out);
	return clock_careful_ordered_ns(ns_out);
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

/* The reading of the clock that is monotonic plus added_ns, split by the
 * thread's cached second for that clock, which is refilled when it is not
 * this reading's. */
static bool clock_careful_read_split(uint32_t flags, struct clock_second *second, uint64_t added_ns,
				     int64_t *sec, uint64_t *rest_ns)
{
	uint64_t ns;

	if (!clock_careful_mono_ns(flags, &ns))
		return false;
	clock_split(second, ns + added_ns, sec, rest_ns);
	return true;
}

bool clock_careful_monotonic(uint32_t flags, struct timespec *ts)
{
	uint64_t rest;
	int64_t sec;

	if (!clock_careful_read_split(flags, &clock_thread.mono_second, 0, &sec, &rest))
		return false;
	ts->tv_sec = (time_t)sec;
	ts->tv_nsec = (long)rest;
	return true;
}

bool clock_careful_realtime(uint32_t flags, struct timespec *ts)
{
	uint64_t rest;
	int64_t sec;

	if (!clock_careful_read_split(flags, &clock_thread.real_second, clock_realtime_offset(),
				      &sec, &rest))
		return false;
	ts->tv_sec = (time_t)sec;
	ts->tv_nsec = (long)rest;
	return true;
}

bool clock_careful_timeval(uint32_t flags, struct timeval *tv)
{
	uint64_t rest;
	int64_t sec;

	if (!clock_careful_read_split(flags, &clock_thread.real_second, clock_realtime_offset(),
				      &sec, &rest))
		return false;
	tv->tv_sec = (time_t)sec;
	tv->tv_usec = (suseconds_t)(rest / 1000u);
	return true;
}

bool clock_careful_seconds(uint32_t flags, time_t *sec_out)
{
	uint64_t rest;
	int64_t sec;

	if (!clock_careful_read_split(flags, &clock_thread.real_second, clock_realtime_offset(),
				      &sec, &rest))
		return false;
	*sec_out = (time_t)sec;
	return true;
}
