/* The library at rest. The thread's first intervals are short (the ramp);
 * after them it refreshes every configured interval and wakes every
 * WATCH_PERIOD_NS to watch for a set clock and renew the lines' validity. The window runs from the
 * middle of one full interval to the middle of another, so that it holds a
 * known number of rounds. */
#include "config.h"

#include "bench_idle.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "bench_libc.h"
#include "bench_library.h"
#include "bench_proc.h"
#include "refresh.h"
#include "round.h"
#include "settings.h"
#include "watch.h"

#define BENCH_IDLE_MAPPINGS 64u

/* Resident KiB per mapped file (by its base name) and for anonymous memory,
 * from /proc/self/smaps, with the process's private and proportional
 * totals: what VmRSS adds up, so that a difference can be traced to the
 * library's own file, to libc pages only its thread touches (shared with
 * every program on the machine), or to memory of its own. The mapping that
 * holds the refresh thread's stack pointer is its stack, which also holds
 * the thread's descriptor and static TLS. */
struct bench_idle_mappings {
	char names[BENCH_IDLE_MAPPINGS][64];
	uint64_t rss_kib[BENCH_IDLE_MAPPINGS];
	unsigned count;
	uint64_t private_kib, pss_kib;
	bool stack; /* both stack figures were found */
	uint64_t stack_size_kib, stack_rss_kib;
};

/* What the window saw. */
struct bench_idle_result {
	struct bench_library library;
	struct settings settings;
	unsigned rounds;
	uint64_t window_ns;
	long tid;      /* the refresh thread, or 0 */
	bool measured; /* its CPU time was read at both ends */
	uint64_t cpu_ns, voluntary, involuntary;
	uint64_t rss_kib, anon_kib, file_kib;
	struct bench_idle_mappings mappings;
};

/* CPU time of one thread of this process in ns: the first field of
 * schedstat, or utime + stime (clock ticks) where the kernel has none. */
static bool bench_idle_thread_cpu_ns(long tid, uint64_t *ns)
{
	unsigned long long value, utime, stime;
	const char *fields;
	char line[1024];

	if (bench_proc_task_line(tid, "schedstat", line, sizeof line) &&
	    sscanf(line, "%llu", &value) == 1) {
		*ns = value;
		return true;
	}
	/* From the state: 10 more fields, then utime and stime. */
	fields = bench_proc_task_stat(tid, line, sizeof line);
	if (fields == NULL ||
	    sscanf(fields, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
		   &stime) != 2)
		return false;
	*ns = (utime + stime) * (1000000000ull / (unsigned long long)sysconf(_SC_CLK_TCK));
	return true;
}

/* The thread's stack pointer, which /proc shows while the thread is blocked
 * in a system call (the refresh thread sleeps in one nearly all the time);
 * 0 when it is not known. */
static uint64_t bench_idle_stack_pointer(long tid)
{
	char line[512], *last = NULL, *before = NULL, *word;
	uint64_t sp;

	if (!bench_proc_task_line(tid, "syscall", line, sizeof line))
		return 0;
	/* "nr arg... sp pc" (or "running"): the stack pointer is next to last. */
	for (word = strtok(line, " \n"); word != NULL; word = strtok(NULL, " \n")) {
		before = last;
		last = word;
	}
	if (before == NULL || sscanf(before, "%" SCNx64, &sp) != 1)
		return 0;
	return sp;
}

/* One pass over /proc/self/smaps: every mapping's resident KiB, and the
 * size and resident part of the one that holds sp (none when sp is 0). */
static void bench_idle_mappings(struct bench_idle_mappings *m, uint64_t sp)
{
	char line[512], name[64] = "anonymous";
	FILE *f = fopen("/proc/self/smaps", "r");
	uint64_t low, high, kib;
	bool stack = false, have_size = false, have_rss = false;

	memset(m, 0, sizeof *m);
	if (f == NULL)
		return;
	while (fgets(line, sizeof line, f) != NULL) {
		char path[400] = "";
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %*s %*s %*s %399s", &low, &high,
			   path) >= 2) {
			const char *slash = strrchr(path, '/');
			snprintf(name, sizeof name, "%s",
				 path[0] == '\0' ? "anonymous"
				 : slash != NULL ? slash + 1
						 : path);
			for (char *c = name; *c != '\0'; c++)
				if (*c == ',')
					*c = '_';
			stack = sp != 0 && sp >= low && sp < high;
		} else if (sscanf(line, "Size: %" SCNu64, &kib) == 1) {
			if (stack) {
				m->stack_size_kib = kib;
				have_size = true;
			}
		} else if (sscanf(line, "Rss: %" SCNu64, &kib) == 1) {
			unsigned i;
			for (i = 0; i < m->count && strcmp(m->names[i], name) != 0; i++)
				;
			if (i == m->count && m->count < BENCH_IDLE_MAPPINGS)
				snprintf(m->names[m->count++], sizeof m->names[0], "%s", name);
			if (i < m->count)
				m->rss_kib[i] += kib;
			if (stack) {
				m->stack_rss_kib = kib;
				have_rss = true;
			}
		} else if (sscanf(line, "Private_Clean: %" SCNu64, &kib) == 1 ||
			   sscanf(line, "Private_Dirty: %" SCNu64, &kib) == 1) {
			m->private_kib += kib;
		} else if (sscanf(line, "Pss: %" SCNu64, &kib) == 1) {
			m->pss_kib += kib;
		}
	}
	fclose(f);
	m->stack = have_size && have_rss;
}

/* Sleeps until libc's MONOTONIC reaches deadline_ns. */
static void bench_idle_sleep_until(uint64_t deadline_ns)
{
	struct timespec until = timespec_from_ns(deadline_ns);

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR)
		;
}

/* Calls the clock once, waits out the ramp, then reads the thread's CPU
 * time and context switches at both ends of a window of whole rounds. */
static void bench_idle_measure(struct bench_idle_result *r)
{
	uint64_t interval_ns, ramp_ns = 0, start, window_start;
	uint64_t cpu_before = 0, cpu_after = 0, vol_before = 0, vol_after = 0;
	uint64_t invol_before = 0, invol_after = 0, sp = 0;
	char path[96];

	interval_ns = (uint64_t)r->settings.interval_ms * 1000000ull;
	for (unsigned round = 0; round_interval_after(round, interval_ns) < interval_ns; round++)
		ramp_ns += round_interval_after(round, interval_ns);
	r->rounds = (unsigned)(bench_options.idle * 1e9 / (double)interval_ns + 0.5);
	if (r->rounds < 1)
		r->rounds = 1;

	start = bench_library_first_call();
	bench_idle_sleep_until(start + ramp_ns + interval_ns / 2);
	r->tid = bench_library_tid();
	window_start = bench_libc_ns(CLOCK_MONOTONIC);
	if (r->tid != 0) {
		snprintf(path, sizeof path, "/proc/self/task/%ld/status", r->tid);
		r->measured = bench_idle_thread_cpu_ns(r->tid, &cpu_before);
		bench_proc_value(path, "voluntary_ctxt_switches", &vol_before);
		bench_proc_value(path, "nonvoluntary_ctxt_switches", &invol_before);
	}
	bench_idle_sleep_until(window_start + r->rounds * interval_ns);
	r->window_ns = bench_libc_ns(CLOCK_MONOTONIC) - window_start;
	if (r->tid != 0) {
		r->measured = r->measured && bench_idle_thread_cpu_ns(r->tid, &cpu_after);
		bench_proc_value(path, "voluntary_ctxt_switches", &vol_after);
		bench_proc_value(path, "nonvoluntary_ctxt_switches", &invol_after);
		sp = bench_idle_stack_pointer(r->tid);
	}
	r->cpu_ns = cpu_after - cpu_before;
	r->voluntary = vol_after - vol_before;
	r->involuntary = invol_after - invol_before;
	bench_proc_value("/proc/self/status", "VmRSS", &r->rss_kib);
	bench_proc_value("/proc/self/status", "RssAnon", &r->anon_kib);
	bench_proc_value("/proc/self/status", "RssFile", &r->file_kib);
	bench_idle_mappings(&r->mappings, sp);
}

/* The result as source,api,metric,value lines. */
static void bench_idle_csv(const struct bench_idle_result *r)
{
	const struct bench_idle_mappings *m = &r->mappings;
	double window_s = (double)r->window_ns / 1e9;

	printf("source,api,metric,value\n");
	printf("idle,-,preloaded,%d\n", r->library.preloaded);
	printf("idle,-,allowed_cpus,%u\n", bench_proc_allowed_cpus());
	printf("idle,-,interval_ms,%u\n", r->settings.interval_ms);
	printf("idle,-,watch_step_ms,%llu\n", WATCH_PERIOD_NS / 1000000ull);
	printf("idle,-,window_s,%.3f\n", window_s);
	printf("idle,-,rounds,%u\n", r->rounds);
	printf("idle,-,thread,%s\n", r->tid != 0 ? "running" : "none");
	if (r->measured) {
		printf("idle,-,thread_cpu_ns,%" PRIu64 "\n", r->cpu_ns);
		printf("idle,-,thread_cpu_percent,%.5f\n",
		       (double)r->cpu_ns / 1e9 / window_s * 100);
		printf("idle,-,thread_voluntary_switches,%" PRIu64 "\n", r->voluntary);
		printf("idle,-,thread_involuntary_switches,%" PRIu64 "\n", r->involuntary);
	}
	printf("idle,-,vmrss_kib,%" PRIu64 "\n", r->rss_kib);
	printf("idle,-,rssanon_kib,%" PRIu64 "\n", r->anon_kib);
	printf("idle,-,rssfile_kib,%" PRIu64 "\n", r->file_kib);
	printf("idle,-,private_kib,%" PRIu64 "\n", m->private_kib);
	printf("idle,-,pss_kib,%" PRIu64 "\n", m->pss_kib);
	for (unsigned i = 0; i < m->count; i++)
		printf("idle,%s,rss_kib,%" PRIu64 "\n", m->names[i], m->rss_kib[i]);
	if (m->stack) {
		printf("idle,-,thread_stack_size_kib,%" PRIu64 "\n", m->stack_size_kib);
		printf("idle,-,thread_stack_rss_kib,%" PRIu64 "\n", m->stack_rss_kib);
	}
}

/* The result for a person, mappings with nothing resident left out. */
static void bench_idle_table(const struct bench_idle_result *r)
{
	const struct bench_idle_mappings *m = &r->mappings;

	printf("fasttime-bench %s: clock_gettime called once (%s), then asleep\n", PACKAGE_VERSION,
	       r->library.preloaded ? "the library's" : r->library.owner);
	if (r->measured)
		printf("refresh thread: %.3f ms of CPU in %.1f s (%u rounds every %u ms): "
		       "%.5f %% of one core; %" PRIu64 " wake-ups\n",
		       (double)r->cpu_ns / 1e6, (double)r->window_ns / 1e9, r->rounds,
		       r->settings.interval_ms, (double)r->cpu_ns / (double)r->window_ns * 100,
		       r->voluntary);
	else
		printf("no refresh thread in this process\n");
	printf("resident: %" PRIu64 " KiB (anonymous %" PRIu64 ", file %" PRIu64
	       "); private %" PRIu64 " KiB, proportional %" PRIu64 " KiB\n",
	       r->rss_kib, r->anon_kib, r->file_kib, m->private_kib, m->pss_kib);
	for (unsigned i = 0; i < m->count; i++)
		if (m->rss_kib[i] > 0)
			printf("  %6" PRIu64 " KiB  %s\n", m->rss_kib[i], m->names[i]);
	if (m->stack)
		printf("refresh thread's stack mapping: %" PRIu64 " KiB, %" PRIu64
		       " KiB resident\n",
		       m->stack_size_kib, m->stack_rss_kib);
}

int bench_idle_run(void)
{
	struct bench_idle_result result = { .tid = 0 };

	bench_library_find(&result.library);
	bench_library_settings(&result.settings);
	bench_idle_measure(&result);
	if (bench_options.csv)
		bench_idle_csv(&result);
	else
		bench_idle_table(&result);
	return 0;
}
