/* A process under the preload beside a calibration service (fasttimed, or
 * the fasttime command's own): what it says about itself, for served.test
 * to judge. Each case prints key=value lines on stdout (a forked child's
 * keys start with "child.", those after a namespace call with "after.");
 * the script decides what they must be.
 *
 *   layout            (without the preload) where the page's fields are,
 *                     from src/read/service_page.h and table.h, as
 *                     page_size, version_at, version_other (a version
 *                     that is not this one's, below 256), valid_ticks_at,
 *                     records_at, calibrated_at (the mask of CPUs the
 *                     service calibrates, a bit each, little-endian)
 *   probe [WAIT_MS]   1000 reads of CLOCK_MONOTONIC (first_libc_answers:
 *                     how many libc answered: a read that reached libc
 *                     while the next did not was the TSC's, the clamp's
 *                     seed or a check of the lines taken beside it, so 0
 *                     where the TSC answers from the first call; first_fresh: whether
 *                     FASTTIME_PAGE's page could answer them throughout:
 *                     fresh by the validity it had before, with a line for
 *                     the CPU they ran on before and after them, which a
 *                     real-time load there withdraws for a while), then
 *                     samples of CLOCK_MONOTONIC, CLOCK_REALTIME and
 *                     CLOCK_BOOTTIME against libc in 10 ms slices until a
 *                     thread named "fasttime" appears, or WAIT_MS (500 by
 *                     default) have
 *                     passed and each clock was answered from the TSC at
 *                     least once (or 10 s: a service kept from running
 *                     leaves its page stale meanwhile); without /proc,
 *                     the threads are "unknown" and the wait is WAIT_MS
 *   fork              a short probe, then fork: the child probes (500 ms)
 *   maps              how many mappings the process's first time call
 *                     added (maps_added): a served start maps the page
 *                     over the library's table, which must split no
 *                     mapping (each one more is copied at every fork)
 *   watch             samples the three clocks until SIGTERM; prints
 *                     "ready" once the first samples are taken, and one
 *                     "phase=N" line of counts at each SIGUSR1 (and at the
 *                     end): the counts start again at each phase, the
 *                     backward check goes on across them
 *   unshare-time      a short probe, then unshare(CLONE_NEWTIME) (exits 77
 *                     where the kernel refuses it: EPERM, EINVAL), then a
 *                     probe until the process's own thread runs (5000 ms),
 *                     its lines come (settled_fast) and 300 ms of samples
 *   setns-time        the same through setns into this process's own time
 *                     namespace
 *   unshare-time child  unshare-time, then a child made in the new time
 *                     namespace, its CLOCK_MONOTONIC and CLOCK_BOOTTIME
 *                     1000 s ahead, which probes as the parent did
 *   unshare-time raw  the same with unshare made by syscall(), which the
 *                     library does not see: the parent stays served, the
 *                     child finds out at its first time call
 *   unshare-time raw thread  the same, the child's first time call made
 *                     by a thread it starts (keys "child.thread.")
 *                     served.test runs the two raw ones
 *   unshare-time raw nofork  the same, the child made without fork()
 *                     (_Fork, or a raw clone), which runs no atfork
 *                     handler: child.first_off_ns, its first
 *                     CLOCK_MONOTONIC from the library less the kernel's
 *                     (read by system calls on each side of it)
 *   fork-quiet        a first time call, then fork: the child counts the
 *                     pages of the library's code in its own page tables
 *                     (child.library_code_pages, from /proc/self/pagemap:
 *                     a fork child has none until it runs some of it);
 *                     wipeonfork=no where the kernel cannot wipe a page
 *                     at fork (MADV_WIPEONFORK)
 *   stale-reads SERVICE_PID  once the page answers, stops the service
 *                     until calls of CLOCK_MONOTONIC reach libc, then
 *                     counts every counter read of 1000 of them (trapped:
 *                     PR_SET_TSC) and continues the service:
 *                     stale_calls, stale_libc_calls, stale_counter_reads;
 *                     then, each over a page stopped again, 1000 calls
 *                     of each settable clock's entry point:
 *                     stale_NAME_libc_calls (NAME realtime,
 *                     gettimeofday, timespec_get, tai), and
 *                     stale_NAME_counter_reads for gettimeofday and
 *                     timespec_get;
 *                     counted=no where the kernel cannot trap them,
 *                     served=no where the page was refused at start
 *   timens-run NS proc|noproc CMD...  (without the preload) runs CMD in
 *                     a new time namespace, CLOCK_MONOTONIC NS ns ahead,
 *                     and with noproc in a new mount namespace without
 *                     /proc (77 where the kernel refuses either)
 *   sealed-copy FILE LINK  (without the preload) FILE's bytes and mode
 *                     in a sealed memfd that LINK names, as a service not
 *                     run as root publishes its page; "ready", then held
 *                     until SIGTERM
 *   no-memfd-run CMD...  (without the preload) runs CMD with
 *                     memfd_create failing (ENOSYS), as on a kernel
 *                     older than 3.17 (77 where no filter can be set)
 *
 * Every sample is a sandwich libc, preload, libc; the tap behind the
 * library tells an answer from the TSC from one by libc (life.c). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include <x86intrin.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "life.h"
#include "service_page.h"
#include "table.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

/* The offset a child in a new time namespace gets, in seconds. */
#define SERVED_NAMESPACE_OFFSET_S 1000
/* How long a served probe waits at most for each clock's answer from the
 * TSC. */
#define SERVED_PROBE_MAX_MS 10000u

/* The three clocks' tracks. */
struct served_tracks {
	struct life_track mono, real, boot;
};

static const char *served_prefix = "";

/* Samples the three clocks for ms milliseconds. */
static void served_sample_for(unsigned ms, struct served_tracks *t)
{
	uint64_t end = life_libc_mono_ns() + ms * LIFE_NS_PER_MS;

	do {
		life_sample_mono(&t->mono);
		life_sample_real(&t->real);
		life_sample_boot(&t->boot);
	} while (life_libc_mono_ns() < end);
}

/* Starts the counts again; the backward check goes on. */
static void served_restart(struct served_tracks *t)
{
	t->mono = (struct life_track){ .last_ns = t->mono.last_ns };
	t->real = (struct life_track){ .last_ns = t->real.last_ns };
	t->boot = (struct life_track){ .last_ns = t->boot.last_ns };
}

static void served_say_track(const char *clock, const struct life_track *track)
{
	printf("%s%s_samples=%llu\n%s%s_fast=%llu\n%s%s_backward=%llu\n%s%s_max_error_ns=%llu\n",
	       served_prefix, clock, (unsigned long long)track->samples, served_prefix, clock,
	       (unsigned long long)track->fast, served_prefix, clock,
	       (unsigned long long)track->backward, served_prefix, clock,
	       (unsigned long long)track->max_error_ns);
}

static void served_say_tracks(const struct served_tracks *t)
{
	served_say_track("mono", &t->mono);
	served_say_track("real", &t->real);
	served_say_track("boot", &t->boot);
}

/* FASTTIME_PAGE's page, mapped read-only, or NULL: none where the file is
 * shorter than a page (a shrunk one, which the probe's own reads from the
 * view would meet as SIGBUS). */
static const struct table_page *served_page_view(void)
{
	const char *path = getenv("FASTTIME_PAGE");
	struct stat st;
	void *view;
	int fd;

	if (path == NULL || path[0] != '/')
		return NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(struct table_page)) {
		close(fd);
		return NULL;
	}
	view = mmap(NULL, sizeof(struct table_page), PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	return view == MAP_FAILED ? NULL : view;
}

/* Whether page has a line for cpu now (none where the service withdrew it,
 * or never calibrated that CPU). */
static bool served_page_has_line(const struct table_page *page, int cpu)
{
	return page != NULL && cpu >= 0 && (unsigned)cpu < CPU_MAX_CPUS &&
	       __atomic_load_n(&page->records[cpu].mult, __ATOMIC_ACQUIRE) != 0;
}

/* Waits for a child the case forked (30 s at most) and prints its exit
 * status, or 128 + its signal, for the .test script to judge. */
static void served_report_child(pid_t pid)
{
	int status = life_wait_child(pid, 30);

	printf("child_status=%d\n",
	       WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}
/* The probe (see the top); with settle, once the thread is seen, whether
 * the TSC answers within 5 s and then 300 ms of samples ("early_" keys:
 * the samples before). */
static void served_probe(unsigned wait_ms, bool settle)
{
	const struct table_page *page = served_page_view();
	struct served_tracks t = { 0 };
	uint64_t before, end, give_up, valid_from = 0, valid_ticks = 0;
	bool thread_seen = false, each_fast = false, line_before, fresh, reached[1000];
	unsigned libc_answers = 0;
	int cpu_before;
	/* Without /proc (timens-run noproc), threads cannot be counted. */
	bool proc = access("/proc/self/task", F_OK) == 0;
	struct timespec ts;

	if (page != NULL) {
		valid_from = __atomic_load_n(&page->shared.valid_from_tsc, __ATOMIC_ACQUIRE);
		valid_ticks = __atomic_load_n(&page->shared.valid_ticks, __ATOMIC_ACQUIRE);
	}
	cpu_before = sched_getcpu();
	line_before = served_page_has_line(page, cpu_before);
	for (int i = 0; i < 1000; i++) {
		before = life_fallthrough();
		clock_gettime(CLOCK_MONOTONIC, &ts);
		reached[i] = life_fallthrough() != before;
	}
	for (int i = 0; i < 1000; i++)
		libc_answers += reached[i] && (i == 999 || reached[i + 1]);
	printf("%sfirst_libc_answers=%u\n", served_prefix, libc_answers);
	/* Fresh from before the reads to after them, by the validity read
	 * before (a renewal meanwhile only makes it fresher), with a line
	 * for their CPU on each side of them. */
	fresh = valid_ticks != 0 && __rdtsc() - valid_from <= valid_ticks && line_before &&
		sched_getcpu() == cpu_before && served_page_has_line(page, cpu_before);
	printf("%sfirst_fresh=%s\n", served_prefix,
	       page == NULL ? "unknown"
	       : fresh	    ? "yes"
			    : "no");
	if (page != NULL)
		munmap((void *)page, sizeof *page);
	end = life_libc_mono_ns() + wait_ms * LIFE_NS_PER_MS;
	give_up = end + SERVED_PROBE_MAX_MS * LIFE_NS_PER_MS;
	do {
		served_sample_for(10, &t);
		thread_seen = proc && life_threads_named("fasttime") > 0;
		each_fast = t.mono.fast > 0 && t.real.fast > 0 && t.boot.fast > 0;
	} while (!thread_seen &&
		 (life_libc_mono_ns() < end || (!each_fast && life_libc_mono_ns() < give_up)));
	if (proc)
		printf("%sfasttime_thread=%s\n%sthreads=%u\n", served_prefix,
		       thread_seen ? "yes" : "no", served_prefix, life_thread_count());
	else
		printf("%sfasttime_thread=unknown\n%sthreads=unknown\n", served_prefix,
		       served_prefix);
	if (thread_seen && settle) {
		printf("%ssettled_fast=%s\n", served_prefix, life_wait_fast(5000) ? "yes" : "no");
		served_say_track("early_mono", &t.mono);
		served_say_track("early_real", &t.real);
		served_say_track("early_boot", &t.boot);
		served_restart(&t);
		served_sample_for(300, &t);
	}
	served_say_tracks(&t);
	fflush(stdout);
}

static int served_fork(void)
{
	pid_t pid;

	served_probe(100, false);
	pid = fork();
	if (pid < 0)
		life_fail("fork: %s", strerror(errno));
	if (pid == 0) {
		served_prefix = "child.";
		printf("child.threads_at_fork=%u\n", life_thread_count());
		served_probe(500, false);
		_exit(0);
	}
	served_report_child(pid);
	return 0;
}

/* The process's mappings, by /proc/self/maps read with no allocation
 * (stdio's buffer would make the heap a mapping of its own); -1 when it
 * cannot be read. */
static int served_count_maps(void)
{
	static char buf[4096];
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC), lines = 0;
	ssize_t n;

	if (fd < 0)
		return -1;
	while ((n = read(fd, buf, sizeof buf)) > 0)
		for (ssize_t i = 0; i < n; i++)
			lines += buf[i] == '\n';
	close(fd);
	return n < 0 ? -1 : lines;
}

/* The mappings a served process's first time call adds: one, the page. */
static int served_maps(void)
{
	struct timespec ts;
	int before = served_count_maps(), after;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	after = served_count_maps();
	if (before < 0 || after < 0)
		life_fail("/proc/self/maps: %s", strerror(errno));
	printf("maps_added=%d\n", after - before);
	return 0;
}

static volatile sig_atomic_t served_phase_asked, served_stop_asked;

static void served_on_signal(int sig)
{
	if (sig == SIGUSR1)
		served_phase_asked = 1;
	else
		served_stop_asked = 1;
}

/* One phase's counts, on one line. */
static void served_phase(unsigned n, struct served_tracks *t)
{
	const struct life_track *tracks[3] = { &t->mono, &t->real, &t->boot };
	const char *names[3] = { "mono", "real", "boot" };

	printf("phase=%u", n);
	for (unsigned i = 0; i < 3; i++)
		printf(" %s_samples=%llu %s_fast=%llu %s_backward=%llu %s_max_error_ns=%llu",
		       names[i], (unsigned long long)tracks[i]->samples, names[i],
		       (unsigned long long)tracks[i]->fast, names[i],
		       (unsigned long long)tracks[i]->backward, names[i],
		       (unsigned long long)tracks[i]->max_error_ns);
	printf(" threads=%u fasttime_threads=%u\n", life_thread_count(),
	       life_threads_named("fasttime"));
	fflush(stdout);
	served_restart(t);
}

static int served_watch(void)
{
	struct sigaction action = { .sa_handler = served_on_signal };
	struct served_tracks t = { 0 };
	unsigned phase = 0;

	sigemptyset(&action.sa_mask);
	if (sigaction(SIGUSR1, &action, NULL) != 0 || sigaction(SIGTERM, &action, NULL) != 0)
		life_fail("sigaction: %s", strerror(errno));
	served_sample_for(0, &t);
	printf("ready\n");
	fflush(stdout);
	while (!served_stop_asked) {
		/* Half the time asleep: the machine is shared with the service. */
		served_sample_for(2, &t);
		life_sleep_ms(2);
		if (served_phase_asked) {
			served_phase_asked = 0;
			served_phase(phase++, &t);
		}
	}
	served_phase(phase, &t);
	printf("end\n");
	return 0;
}

/* This thread's counter reads while they trap (PR_TSC_SIGSEGV), counted by
 * served_counter_trap, which does each read for the instruction. */
static volatile uint64_t served_counter_reads;

/* PR_SET_TSC for this thread by a raw system call: no interposer in the
 * way, and callable from the handler. */
static long served_set_tsc(long how)
{
	long rc;

	__asm__ volatile("syscall"
			 : "=a"(rc)
			 : "0"((long)SYS_prctl), "D"((long)PR_SET_TSC), "S"(how)
			 : "rcx", "r11", "memory");
	return rc;
}

/* A trapped rdtsc or rdtscp (of the library, or of libc's vDSO): done with
 * the counter enabled for a moment, its registers set, and counted. Any
 * other fault: the default action, at the instruction again. */
static void served_counter_trap(int sig, siginfo_t *info, void *context)
{
	ucontext_t *uc = context;
	greg_t *regs = uc->uc_mcontext.gregs;
	const unsigned char *ip = (const unsigned char *)regs[REG_RIP];
	uint32_t lo, hi, aux;

	(void)info;
	if (ip[0] == 0x0f && ip[1] == 0x31) {
		served_set_tsc(PR_TSC_ENABLE);
		__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
		served_set_tsc(PR_TSC_SIGSEGV);
		regs[REG_RIP] += 2;
	} else if (ip[0] == 0x0f && ip[1] == 0x01 && ip[2] == 0xf9) {
		served_set_tsc(PR_TSC_ENABLE);
		__asm__ volatile("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux));
		served_set_tsc(PR_TSC_SIGSEGV);
		regs[REG_RCX] = aux;
		regs[REG_RIP] += 3;
	} else {
		signal(sig, SIG_DFL);
		return;
	}
	regs[REG_RAX] = lo;
	regs[REG_RDX] = hi;
	served_counter_reads = served_counter_reads + 1;
}

/* Whether one call of CLOCK_MONOTONIC through the preload reached libc;
 * its answer never before last (updated). */
static bool served_call_reached_libc(uint64_t *last)
{
	uint64_t before = life_fallthrough();
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		life_fail("clock_gettime failed");
	if (life_ns(&ts) < *last)
		life_fail("CLOCK_MONOTONIC went back by %llu ns",
			  (unsigned long long)(*last - life_ns(&ts)));
	*last = life_ns(&ts);
	return life_fallthrough() != before;
}

/* Whether the page answers CLOCK_MONOTONIC now: the second of two calls
 * did not reach libc. The first takes any check of the lines that is due
 * (clock_check.h: it asks libc while the TSC answers); a stale page sends
 * both to libc. */
static bool served_page_answers(uint64_t *last)
{
	served_call_reached_libc(last);
	return !served_call_reached_libc(last);
}

/* The settable clocks' entry points, counted over a stale page as
 * CLOCK_MONOTONIC is: their answers from libc raise the thread's floor. */
enum served_settable { SERVED_REALTIME, SERVED_GETTIMEOFDAY, SERVED_TIMESPEC_GET, SERVED_TAI };

static const char *const served_settable_names[] = { "realtime", "gettimeofday", "timespec_get",
						     "tai" };

/* One call of a settable clock's entry point, in ns (gettimeofday's
 * microseconds as ns). */
static uint64_t served_settable_ns(enum served_settable which)
{
	struct timespec ts;
	struct timeval tv;
	bool ok;

	switch (which) {
	case SERVED_REALTIME: ok = clock_gettime(CLOCK_REALTIME, &ts) == 0; break;
	case SERVED_GETTIMEOFDAY:
		ok = gettimeofday(&tv, NULL) == 0;
		ts.tv_sec = tv.tv_sec;
		ts.tv_nsec = tv.tv_usec * 1000;
		break;
	case SERVED_TIMESPEC_GET: ok = timespec_get(&ts, TIME_UTC) == TIME_UTC; break;
	default: ok = clock_gettime(CLOCK_TAI, &ts) == 0; break;
	}
	if (!ok)
		life_fail("%s failed", served_settable_names[which]);
	return life_ns(&ts);
}

/* calls calls of which's entry point, never back; prints how many reached
 * libc (the tap counts each call of libc's clocks, the library's own
 * included) and, where trapped, the counter reads they made. */
static void served_count_settable(enum served_settable which, uint64_t calls, bool trapped)
{
	uint64_t libc_calls = life_fallthrough(), reads = served_counter_reads, last = 0, ns;

	for (uint64_t i = 0; i < calls; i++) {
		ns = served_settable_ns(which);
		if (ns < last) {
			served_set_tsc(PR_TSC_ENABLE);
			life_fail("%s went back by %llu ns", served_settable_names[which],
				  (unsigned long long)(last - ns));
		}
		last = ns;
	}
	printf("stale_%s_libc_calls=%llu\n", served_settable_names[which],
	       (unsigned long long)(life_fallthrough() - libc_calls));
	if (trapped)
		printf("stale_%s_counter_reads=%llu\n", served_settable_names[which],
		       (unsigned long long)(served_counter_reads - reads));
}

/* Pins this thread to a CPU of allowed whose line FASTTIME_PAGE's page
 * holds: a call there that reaches libc found the lines lapsed, not its
 * CPU without a line (a CPU the service could not visit lately). False
 * where no CPU has one. */
static bool served_pin_to_line(const cpu_set_t *allowed)
{
	const struct table_page *page = served_page_view();
	bool pinned = false;
	cpu_set_t one;

	for (int cpu = 0; cpu < CPU_SETSIZE && !pinned; cpu++) {
		if (!CPU_ISSET(cpu, allowed) || !served_page_has_line(page, cpu))
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		pinned = sched_setaffinity(0, sizeof one, &one) == 0;
	}
	if (page != NULL)
		munmap((void *)page, sizeof(struct table_page));
	return pinned;
}

/* What served_stop_until_stale found. */
enum served_stale {
	SERVED_STALE,	 /* the service stopped, the lines lapsed under this thread */
	SERVED_ALONE,	 /* this process calibrates alone: nothing stopped */
	SERVED_NO_LINES, /* no CPU of this thread's has a line: the service continued */
};

/* Once the page answers this thread, stops the service (SIGSTOP) and
 * returns when this thread's calls reach libc, on a CPU with a line (the
 * lines lapsed: the service can no longer withdraw one); allowed: the
 * CPUs this thread may be pinned to. */
static enum served_stale served_stop_until_stale(pid_t service, uint64_t *last,
						 const cpu_set_t *allowed)
{
	uint64_t deadline = life_libc_mono_ns() + 60 * LIFE_NS_PER_SEC;

	sched_setaffinity(0, sizeof *allowed, allowed);
	while (!served_page_answers(last)) {
		if (life_libc_mono_ns() > deadline)
			life_fail("the page never answered");
		life_sleep_ms(1);
	}
	if (life_threads_named("fasttime") != 0)
		return SERVED_ALONE;
	if (kill(service, SIGSTOP) != 0)
		life_fail("kill(%d, SIGSTOP): %s", (int)service, strerror(errno));
	if (!served_pin_to_line(allowed)) {
		kill(service, SIGCONT);
		return SERVED_NO_LINES;
	}
	while (served_page_answers(last)) {
		if (life_libc_mono_ns() > deadline) {
			kill(service, SIGCONT);
			life_fail("the page of a stopped service never went stale");
		}
		life_sleep_ms(1);
	}
	return SERVED_STALE;
}

/* stale-reads SERVICE_PID: once the page answers, stops its service
 * (SIGSTOP) until the page is stale (calls reach libc), counts the
 * counter reads of 1000 calls of CLOCK_MONOTONIC then, and continues the
 * service. Prints stale_calls, stale_libc_calls, stale_counter_reads
 * (every rdtsc and rdtscp of this thread, the library's and libc's, by
 * trapping them), or counted=no where the kernel cannot trap them;
 * served=no where the process was not served but calibrates alone. Then
 * the same for 1000 calls of each settable clock's entry point
 * (CLOCK_REALTIME, gettimeofday, timespec_get, CLOCK_TAI), each over a
 * page of its own stop made stale (the calls of CLOCK_MONOTONIC that find
 * it so come first), each on a CPU with a line (pinned; lines=none where
 * none has one): stale_NAME_libc_calls (calls of libc's clocks, the
 * library's own included) and, for gettimeofday and timespec_get,
 * stale_NAME_counter_reads. Each count is
 * short: a page stale for seconds is left, and a thread of the library's
 * started meanwhile would inherit the trap with every signal blocked. */
static int served_stale_reads(pid_t service)
{
	const uint64_t calls = 1000;
	uint64_t last = 0, libc_calls;
	bool trapped;
	struct sigaction trap = { .sa_sigaction = served_counter_trap, .sa_flags = SA_SIGINFO };
	struct sigaction old;
	enum served_stale found;
	cpu_set_t allowed;

	sigemptyset(&trap.sa_mask);
	if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
		life_fail("sched_getaffinity: %s", strerror(errno));
	/* Refused at start (a service kept from renewing its page), this
	 * process calibrates alone: nothing to stop. */
	found = served_stop_until_stale(service, &last, &allowed);
	if (found != SERVED_STALE) {
		printf(found == SERVED_ALONE ? "served=no\n" : "lines=none\n");
		return 0;
	}
	if (sigaction(SIGSEGV, &trap, &old) != 0 || served_set_tsc(PR_TSC_SIGSEGV) != 0) {
		kill(service, SIGCONT);
		printf("counted=no\n");
		return 0;
	}
	served_counter_reads = 0;
	libc_calls = life_fallthrough();
	for (uint64_t i = 0; i < calls; i++)
		served_call_reached_libc(&last);
	libc_calls = life_fallthrough() - libc_calls;
	served_set_tsc(PR_TSC_ENABLE);
	kill(service, SIGCONT);
	printf("counted=yes\nstale_calls=%llu\nstale_libc_calls=%llu\nstale_counter_reads=%llu\n",
	       (unsigned long long)calls, (unsigned long long)libc_calls,
	       (unsigned long long)served_counter_reads);
	for (int which = SERVED_REALTIME; which <= SERVED_TAI; which++) {
		found = served_stop_until_stale(service, &last, &allowed);
		if (found != SERVED_STALE) {
			printf(found == SERVED_ALONE ? "served=no\n" : "lines=none\n");
			break;
		}
		/* The tap places CLOCK_REALTIME and CLOCK_TAI on its own
		 * moved clock with reads of CLOCK_MONOTONIC around each, more
		 * where trapping makes them slow: their counter reads are
		 * the tap's, not counted. */
		trapped = which == SERVED_GETTIMEOFDAY || which == SERVED_TIMESPEC_GET;
		if (trapped)
			served_set_tsc(PR_TSC_SIGSEGV);
		served_count_settable((enum served_settable)which, calls, trapped);
		served_set_tsc(PR_TSC_ENABLE);
		kill(service, SIGCONT);
	}
	sigaction(SIGSEGV, &old, NULL);
	sched_setaffinity(0, sizeof allowed, &allowed);
	return 0;
}

/* Sets the offsets the children of this process get in its new time
 * namespace; false where they cannot be set. */
static bool served_set_offsets(void)
{
	char text[64];
	int fd = open("/proc/self/timens_offsets", O_WRONLY | O_CLOEXEC);
	bool ok;

	if (fd < 0)
		return false;
	snprintf(text, sizeof text, "monotonic %d 0\nboottime %d 0\n", SERVED_NAMESPACE_OFFSET_S,
		 SERVED_NAMESPACE_OFFSET_S);
	ok = write(fd, text, strlen(text)) == (ssize_t)strlen(text);
	close(fd);
	return ok;
}

/* The probe of a child's new thread. */
static void *served_thread_probe(void *unused)
{
	(void)unused;
	served_probe(500, false);
	return NULL;
}

static int served_time_namespace(bool by_setns, bool raw, bool child, bool thread)
{
	const char *call = by_setns ? "setns" : "unshare";
	int rc, fd = -1;
	pid_t pid;

	if (by_setns) {
		fd = open("/proc/self/ns/time", O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			life_skip("no /proc/self/ns/time: %s", strerror(errno));
	}
	served_probe(100, false);
	rc = by_setns ? setns(fd, CLONE_NEWTIME)
	     : raw    ? (int)syscall(SYS_unshare, CLONE_NEWTIME)
		      : unshare(CLONE_NEWTIME);
	if (rc != 0) {
		if (errno == EPERM || errno == EINVAL)
			life_skip("%s(CLONE_NEWTIME): %s", call, strerror(errno));
		life_fail("%s(CLONE_NEWTIME): %s", call, strerror(errno));
	}
	printf("entered=yes\n");
	served_prefix = "after.";
	/* Unseen by the library, the call leaves the process served. */
	served_probe(raw ? 500 : 5000, !raw);
	if (!child)
		return 0;
	if (!served_set_offsets())
		life_skip("cannot set the new time namespace's offsets");
	pid = fork();
	if (pid < 0)
		life_fail("fork: %s", strerror(errno));
	if (pid == 0) {
		/* The kernel's CLOCK_MONOTONIC here is 1000 s ahead of the
		 * parent's. */
		pthread_t probe;

		served_prefix = "child.";
		if (thread) {
			/* The child's first read, in a thread of its own. */
			served_prefix = "child.thread.";
			if (pthread_create(&probe, NULL, served_thread_probe, NULL) != 0)
				life_fail("pthread_create failed");
			pthread_join(probe, NULL);
			served_prefix = "child.";
		}
		served_probe(raw ? 500 : 5000, !raw);
		_exit(0);
	}
	served_report_child(pid);
	return 0;
}

/* The kernel's CLOCK_MONOTONIC by a system call, which nothing preloaded
 * sees; 0 where it fails. */
static uint64_t served_kernel_mono_ns(void)
{
	struct timespec ts;

	if (syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * LIFE_NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* A child made without fork(): no atfork handler runs in it. */
static pid_t served_fork_without_handlers(void)
{
#if defined(__GLIBC_PREREQ) && __GLIBC_PREREQ(2, 34)
	return _Fork();
#else
	return (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
#endif
}

/* unshare-time raw nofork: the parent, served, puts its children in a new
 * time namespace by a raw system call; a child made without fork() must
 * not answer from the page, whose time is the parent's namespace's. */
static int served_time_namespace_nofork(void)
{
	pid_t pid;

	served_probe(100, false);
	if (syscall(SYS_unshare, CLONE_NEWTIME) != 0) {
		if (errno == EPERM || errno == EINVAL)
			life_skip("unshare(CLONE_NEWTIME): %s", strerror(errno));
		life_fail("unshare(CLONE_NEWTIME): %s", strerror(errno));
	}
	printf("entered=yes\n");
	if (!served_set_offsets())
		life_skip("cannot set the new time namespace's offsets");
	fflush(stdout);
	pid = served_fork_without_handlers();
	if (pid < 0)
		life_fail("_Fork: %s", strerror(errno));
	if (pid == 0) {
		uint64_t before = served_kernel_mono_ns(), after;
		struct timespec ts;

		if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
			_exit(3);
		after = served_kernel_mono_ns();
		if (before == 0 || after == 0)
			_exit(4);
		/* Signed: the page's time is the parent's namespace's, behind. */
		dprintf(1, "child.first_off_ns=%lld\nchild.first_within=%lld\n",
			(long long)((uint64_t)ts.tv_sec * LIFE_NS_PER_SEC + (uint64_t)ts.tv_nsec -
				    before),
			(long long)(after - before));
		_exit(0);
	}
	served_report_child(pid);
	return 0;
}

/* How many pages of the library's executable mapping are in this
 * process's page tables; -1 where that cannot be told. No allocation, no
 * time call. */
static int served_library_code_pages(void)
{
	static char maps[65536];
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC), pages = 0, found = 0;
	size_t used = 0;
	ssize_t n;

	if (fd < 0)
		return -1;
	while (used < sizeof maps - 1 && (n = read(fd, maps + used, sizeof maps - 1 - used)) > 0)
		used += (size_t)n;
	close(fd);
	maps[used] = '\0';
	fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	for (char *line = maps, *end; *line != '\0'; line = end + 1) {
		unsigned long start, stop;
		char perms[8];

		end = strchr(line, '\n');
		if (end == NULL)
			break;
		*end = '\0';
		if (strstr(line, "libfasttime") == NULL ||
		    sscanf(line, "%lx-%lx %7s", &start, &stop, perms) != 3 || perms[2] != 'x')
			continue;
		found++;
		for (unsigned long page = start; page < stop; page += 4096) {
			uint64_t entry;

			if (pread(fd, &entry, sizeof entry, (off_t)(page / 4096 * sizeof entry)) !=
			    (ssize_t)sizeof entry) {
				close(fd);
				return -1;
			}
			pages += (int)(entry >> 63);
		}
	}
	close(fd);
	return found == 0 ? -1 : pages;
}

/* fork-quiet: a served process's fork child runs nothing of the library
 * (where the kernel can wipe a page at fork): no page of its code is in
 * the child's page tables before the child's own first time call. */
static int served_fork_quiet(void)
{
	void *probe = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct timespec ts;
	pid_t pid;

	if (probe == MAP_FAILED)
		life_fail("mmap: %s", strerror(errno));
	/* MADV_WIPEONFORK: 18 (Linux 4.14). */
	printf("wipeonfork=%s\n", madvise(probe, 4096, 18) == 0 ? "yes" : "no");
	munmap(probe, 4096);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		life_fail("fork: %s", strerror(errno));
	if (pid == 0) {
		dprintf(1, "child.library_code_pages=%d\n", served_library_code_pages());
		_exit(0);
	}
	served_report_child(pid);
	return 0;
}

/* timens-run: runs argv (a reader) in a new time namespace whose
 * CLOCK_MONOTONIC is mono_ns ahead of this one's, and, with hide_proc, in
 * a new mount namespace where /proc is not mounted. Exits 77 where the
 * kernel refuses a namespace; else with the reader's status. */
static int served_timens_run(long mono_ns, bool hide_proc, char **argv)
{
	char text[64];
	int fd, status;
	pid_t pid;

	if (unshare(CLONE_NEWTIME | (hide_proc ? CLONE_NEWNS : 0)) != 0) {
		fprintf(stderr, "served: unshare(CLONE_NEWTIME%s): %s\n",
			hide_proc ? " | CLONE_NEWNS" : "", strerror(errno));
		return 77;
	}
	snprintf(text, sizeof text, "monotonic %ld %ld\n", mono_ns / 1000000000l,
		 mono_ns % 1000000000l);
	fd = open("/proc/self/timens_offsets", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		fprintf(stderr, "served: cannot set the time namespace's offsets: %s\n",
			strerror(errno));
		return 77;
	}
	close(fd);
	if (hide_proc && (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
			  umount2("/proc", MNT_DETACH) != 0)) {
		fprintf(stderr, "served: cannot take /proc away: %s\n", strerror(errno));
		return 77;
	}
	pid = fork();
	if (pid < 0)
		return 99;
	if (pid == 0) {
		execvp(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid)
		return 99;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* sealed-copy: the bytes and mode of file in a memfd sealed against
 * shrinking and growing, named by link, a link to /proc/PID/fd/N, as a
 * service not run as root names its page (a reader not run as root trusts
 * no other page of its own user's); prints "ready", and holds it until
 * SIGTERM, then removes the link. */
static int served_sealed_copy(const char *file, const char *link)
{
	char target[64], buffer[65536];
	struct stat st;
	sigset_t set;
	ssize_t got;
	int in = open(file, O_RDONLY | O_CLOEXEC), fd, sig;

	if (in < 0 || fstat(in, &st) != 0) {
		fprintf(stderr, "sealed-copy: %s: %s\n", file, strerror(errno));
		return 1;
	}
	fd = memfd_create("fasttime-copy", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0) {
		fprintf(stderr, "sealed-copy: memfd_create: %s\n", strerror(errno));
		return 1;
	}
	while ((got = read(in, buffer, sizeof buffer)) > 0)
		if (write(fd, buffer, (size_t)got) != got)
			got = -1;
	close(in);
	snprintf(target, sizeof target, "/proc/%d/fd/%d", (int)getpid(), fd);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	if (got < 0 || fchmod(fd, st.st_mode & 07777) != 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0 ||
	    (unlink(link) != 0 && errno != ENOENT) || symlink(target, link) != 0 ||
	    sigprocmask(SIG_BLOCK, &set, NULL) != 0) {
		fprintf(stderr, "sealed-copy: %s: %s\n", link, strerror(errno));
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	sigwait(&set, &sig);
	unlink(link);
	return 0;
}

/* no-memfd-run: runs argv with memfd_create failing as on a kernel older
 * than 3.17 (ENOSYS, by a seccomp filter, under no new privileges): a
 * service not run as root can then make no sealed page. Exits 77 where
 * the filter cannot be installed. */
static int served_no_memfd_run(char **argv)
{
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_memfd_create, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog program = { .len = sizeof code / sizeof code[0], .filter = code };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program) != 0) {
		fprintf(stderr, "no-memfd-run: no seccomp filter: %s\n", strerror(errno));
		return 77;
	}
	execvp(argv[0], argv);
	fprintf(stderr, "no-memfd-run: %s: %s\n", argv[0], strerror(errno));
	return 127;
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "layout") == 0) {
		printf("page_size=%u\nversion_at=%zu\nversion_other=%u\nvalid_ticks_at=%zu\n"
		       "records_at=%zu\ncalibrated_at=%zu\n",
		       SERVICE_PAGE_SIZE, offsetof(struct service_page_header, version),
		       (SERVICE_PAGE_VERSION + 1u) & 0xffu,
		       offsetof(struct table_page, shared.valid_ticks),
		       offsetof(struct table_page, records),
		       offsetof(struct table_page, calibrated));
		return 0;
	}
	if (argc == 4 && strcmp(argv[1], "sealed-copy") == 0)
		return served_sealed_copy(argv[2], argv[3]);
	if (argc >= 3 && strcmp(argv[1], "no-memfd-run") == 0)
		return served_no_memfd_run(argv + 2);
	if (argc >= 5 && strcmp(argv[1], "timens-run") == 0)
		return served_timens_run(strtol(argv[2], NULL, 10), strcmp(argv[3], "noproc") == 0,
					 argv + 4);
	life_begin("served");
	/* The watchdog: not life_watchdog, whose thread would be counted. */
	alarm(300);
	if (argc >= 2 && argc <= 3 && strcmp(argv[1], "probe") == 0) {
		served_probe(argc == 3 ? (unsigned)strtoul(argv[2], NULL, 10) : 500, false);
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "fork") == 0)
		return served_fork();
	if (argc == 2 && strcmp(argv[1], "watch") == 0)
		return served_watch();
	if (argc == 2 && strcmp(argv[1], "maps") == 0)
		return served_maps();
	if (argc == 2 && strcmp(argv[1], "unshare-time") == 0)
		return served_time_namespace(false, false, false, false);
	if (argc == 3 && strcmp(argv[1], "unshare-time") == 0 &&
	    (strcmp(argv[2], "child") == 0 || strcmp(argv[2], "raw") == 0))
		return served_time_namespace(false, strcmp(argv[2], "raw") == 0, true, false);
	if (argc == 4 && strcmp(argv[1], "unshare-time") == 0 && strcmp(argv[2], "raw") == 0 &&
	    strcmp(argv[3], "thread") == 0)
		return served_time_namespace(false, true, true, true);
	if (argc == 4 && strcmp(argv[1], "unshare-time") == 0 && strcmp(argv[2], "raw") == 0 &&
	    strcmp(argv[3], "nofork") == 0)
		return served_time_namespace_nofork();
	if (argc == 2 && strcmp(argv[1], "fork-quiet") == 0)
		return served_fork_quiet();
	if (argc == 2 && strcmp(argv[1], "setns-time") == 0)
		return served_time_namespace(true, false, false, false);
	if (argc == 3 && strcmp(argv[1], "stale-reads") == 0)
		return served_stale_reads((pid_t)strtol(argv[2], NULL, 10));
	fprintf(
	    stderr,
	    "usage: served probe [WAIT_MS] | fork | fork-quiet | maps | watch | unshare-time "
	    "[child|raw [thread|nofork]] | setns-time | stale-reads SERVICE_PID | timens-run NS "
	    "proc|noproc CMD... | no-memfd-run CMD... | sealed-copy FILE LINK\n");
	return 99;
}
