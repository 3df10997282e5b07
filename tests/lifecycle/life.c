/* Helpers shared by the lifecycle tests (see life.h). */
#include "config.h"

#include "life.h"

#include "api_choice.h"
#include "watch.h"

#include "machine.h"

#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

struct life_libc life_libc;

static const char *life_name = "lifecycle";
/* The tap's functions, found at start (see tap.c). */
static uint64_t (*life_tap_calls)(void);
static void (*life_tap_hold_refresh)(bool hold);
static unsigned (*life_tap_held)(void);

void life_say(const char *format, ...)
{
	va_list args;

	printf("%s: ", life_name);
	va_start(args, format);
	vprintf(format, args);
	va_end(args);
	putchar('\n');
	fflush(stdout);
}

void life_fail(const char *format, ...)
{
	va_list args;

	printf("%s: FAIL: ", life_name);
	va_start(args, format);
	vprintf(format, args);
	va_end(args);
	putchar('\n');
	fflush(stdout);
	exit(1);
}

void life_skip(const char *format, ...)
{
	va_list args;

	printf("%s: SKIP: ", life_name);
	va_start(args, format);
	vprintf(format, args);
	va_end(args);
	putchar('\n');
	fflush(stdout);
	exit(LIFE_EXIT_SKIP);
}

/* Where the library answers with libc (the CPU lacks what the fast path
 * needs, or FASTTIME_HWCAPS hides it), there is nothing of its own to test:
 * skip rather than pass on libc's merits. */
static void life_require_cpu(void)
{
	const char *reason = test_machine_unusable();

	if (reason != NULL)
		life_skip("%s", reason);
}

/* The library named by the object that defines the function at address. */
static const char *life_defined_in(void *address)
{
	Dl_info info;

	if (dladdr(address, &info) == 0 || info.dli_fname == NULL)
		return "(unknown)";
	return info.dli_fname;
}

void life_begin(const char *name)
{
	void *libc;

	life_name = name;
	setvbuf(stdout, NULL, _IOLBF, 0);
	life_require_cpu();

	/* A run without the library would test libc: it must fail, not pass. */
	if (strstr(life_defined_in((void *)clock_gettime), "libfasttime") == NULL)
		life_fail("clock_gettime comes from %s, not libfasttime: run me through %s.test "
			  "(LD_PRELOAD)",
			  life_defined_in((void *)clock_gettime), name);
	if (strstr(life_defined_in((void *)gettimeofday), "libfasttime") == NULL ||
	    strstr(life_defined_in((void *)time), "libfasttime") == NULL ||
	    strstr(life_defined_in((void *)timespec_get), "libfasttime") == NULL)
		life_fail("gettimeofday, time or timespec_get does not come from libfasttime");

	/* libc itself, already loaded: its symbols are its own, never ours. */
	libc = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_NOW);
	if (libc == NULL)
		life_fail("dlopen(libc.so.6, RTLD_NOLOAD): %s", dlerror());
	life_libc.clock_gettime =
	    (int (*)(clockid_t, struct timespec *))dlsym(libc, "clock_gettime");
	life_libc.gettimeofday = (int (*)(struct timeval *, void *))dlsym(libc, "gettimeofday");
	life_libc.time = (time_t(*)(time_t *))dlsym(libc, "time");
	life_libc.timespec_get = (int (*)(struct timespec *, int))dlsym(libc, "timespec_get");
	if (life_libc.clock_gettime == NULL || life_libc.gettimeofday == NULL ||
	    life_libc.time == NULL || life_libc.timespec_get == NULL)
		life_fail("libc's time functions not found");
	if (strstr(life_defined_in((void *)life_libc.clock_gettime), "libfasttime") != NULL)
		life_fail("dlsym(libc) returned fasttime's clock_gettime");

	life_tap_calls = (uint64_t(*)(void))dlsym(RTLD_DEFAULT, "life_tap_calls");
	life_tap_hold_refresh = (void (*)(bool))dlsym(RTLD_DEFAULT, "life_tap_hold_refresh");
	life_tap_held = (unsigned (*)(void))dlsym(RTLD_DEFAULT, "life_tap_held");
	if (life_tap_calls == NULL || life_tap_hold_refresh == NULL || life_tap_held == NULL)
		life_fail("the tap (liblifetap.so) is not preloaded after libfasttime.so");
}

bool life_soak(void)
{
	const char *soak = getenv("FASTTIME_SOAK");

	return soak != NULL && *soak != '\0' && strcmp(soak, "0") != 0 && strcmp(soak, "no") != 0;
}

bool life_relaxed(void)
{
	const char *mode = getenv("FASTTIME_MODE");

	return mode != NULL && strcmp(mode, "relaxed") == 0;
}

bool life_churn_malloc(_Atomic uint64_t *count, uint64_t target, unsigned seed, unsigned max_rounds)
{
	void *blocks[16] = { NULL };
	bool ok = true;

	for (unsigned i = 0; ok && atomic_load(count) < target && i < max_rounds; i++) {
		unsigned slot = (i ^ seed) % 16;

		free(blocks[slot]);
		blocks[slot] = malloc(2048 + (rand_r(&seed) % 60000u));
		ok = blocks[slot] != NULL;
	}
	for (unsigned slot = 0; slot < 16; slot++)
		free(blocks[slot]);
	return ok;
}

uint64_t life_interval_ns(void)
{
	const char *interval = getenv("FASTTIME_INTERVAL_MS");
	unsigned long ms = 5000;

	if (interval != NULL && *interval != '\0')
		ms = strtoul(interval, NULL, 10);
	return (uint64_t)ms * LIFE_NS_PER_MS;
}

uint64_t life_window_ns(void)
{
	return WATCH_VALID_NS;
}

uint64_t life_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * LIFE_NS_PER_SEC + (uint64_t)ts->tv_nsec;
}

uint64_t life_libc_mono_ns(void)
{
	struct timespec ts;

	life_libc.clock_gettime(CLOCK_MONOTONIC, &ts);
	return life_ns(&ts);
}

uint64_t life_libc_real_ns(void)
{
	struct timespec ts;

	life_libc.clock_gettime(CLOCK_REALTIME, &ts);
	return life_ns(&ts);
}

uint64_t life_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return life_ns(&ts);
}

void life_sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

uint64_t life_fallthrough(void)
{
	return life_tap_calls();
}

void life_hold_refresh(bool hold)
{
	life_tap_hold_refresh(hold);
}

unsigned life_refresh_held(void)
{
	return life_tap_held();
}

/* Reads a small /proc file into buf; its length, or 0. */
static size_t life_read_small(const char *path, char *buf, size_t size)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0; /* the thread or the process has just exited */
	n = read(fd, buf, size - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return n > 0 ? (size_t)n : 0;
}

/* /proc/self for this process (pid 0), /proc/PID for another: a
 * process in a PID namespace of its own sees itself in /proc under
 * another number than getpid() gives. */
static void life_proc_dir(pid_t pid, char *buf, size_t size)
{
	if (pid == 0)
		snprintf(buf, size, "/proc/self");
	else
		snprintf(buf, size, "/proc/%d", (int)pid);
}

/* Calls fn for each thread of pid (0: this process) with its comm and id,
 * until it returns false; false when pid's threads cannot be listed (it
 * has exited). Allocates nothing (getdents64 into the stack, not
 * opendir): the watchdog calls it in a process that may be stuck on
 * malloc's lock. */
static bool life_each_thread_of(pid_t pid, bool (*fn)(const char *comm, pid_t tid, void *arg),
				void *arg)
{
	char dir[32], path[48], entries[4096];
	bool more = true;
	long n;
	int fd;

	life_proc_dir(pid, dir, sizeof dir);
	snprintf(path, sizeof path, "%s/task", dir);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return false;
	while (more && (n = syscall(SYS_getdents64, fd, entries, sizeof entries)) > 0)
		for (long at = 0; more && at < n;) {
			/* struct linux_dirent64: ino, off, reclen, type, name. */
			unsigned short reclen;
			const char *name = entries + at + 19;
			char file[96], comm[64];

			memcpy(&reclen, entries + at + 16, sizeof reclen);
			at += reclen;
			if (name[0] == '.')
				continue;
			snprintf(file, sizeof file, "%s/%s/comm", path, name);
			if (life_read_small(file, comm, sizeof comm) == 0)
				continue; /* the thread has just exited */
			comm[strcspn(comm, "\n")] = '\0';
			more = fn(comm, (pid_t)atoi(name), arg);
		}
	close(fd);
	return true;
}

/* The same for this process. */
static void life_each_thread(bool (*fn)(const char *comm, pid_t tid, void *arg), void *arg)
{
	if (!life_each_thread_of(0, fn, arg))
		life_fail("cannot list /proc/self/task: %s", strerror(errno));
}

struct life_count {
	const char *comm;
	unsigned n;
};

/* Counts a thread, if its name is the one asked for (or any name). */
static bool life_count_one(const char *comm, pid_t tid, void *arg)
{
	struct life_count *count = arg;

	(void)tid;
	if (count->comm == NULL || strcmp(comm, count->comm) == 0)
		count->n++;
	return true;
}

unsigned life_thread_count(void)
{
	struct life_count count = { NULL, 0 };

	life_each_thread(life_count_one, &count);
	return count.n;
}

unsigned life_threads_named(const char *comm)
{
	struct life_count count = { comm, 0 };

	life_each_thread(life_count_one, &count);
	return count.n;
}

struct life_find {
	const char *comm;
	pid_t tid;
};

/* Stops at the first thread whose name is the one asked for. */
static bool life_find_one(const char *comm, pid_t tid, void *arg)
{
	struct life_find *find = arg;

	if (strcmp(comm, find->comm) != 0)
		return true;
	find->tid = tid;
	return false;
}

pid_t life_thread_named(const char *comm)
{
	struct life_find find = { comm, -1 };

	life_each_thread(life_find_one, &find);
	return find.tid;
}

/* Prints a thread's name. */
static bool life_print_one(const char *comm, pid_t tid, void *arg)
{
	(void)tid;
	(void)arg;
	printf(" [%s]", comm);
	return true;
}

void life_list_threads(void)
{
	printf("%s: threads:", life_name);
	life_each_thread(life_print_one, NULL);
	putchar('\n');
	fflush(stdout);
}

pid_t life_wait_refresh_thread(void)
{
	pid_t tid = -1;

	for (unsigned i = 0; i < 300 && tid < 0; i++) {
		tid = life_thread_named("fasttime");
		if (tid < 0)
			life_sleep_ms(10);
	}
	if (tid < 0) {
		life_list_threads();
		life_fail("no thread named fasttime");
	}
	return tid;
}

bool life_wait_fast_clock(clockid_t id, unsigned max_ms)
{
	uint64_t deadline = life_libc_mono_ns() + max_ms * LIFE_NS_PER_MS;

	do {
		uint64_t before;
		struct timespec ts;

		/* The first call after a pause may check the lines against
		 * libc's clock (clock_check.h: the process's reads are checked
		 * every few milliseconds), asking libc while it answers from
		 * the TSC. The 1000 after it fit in one check's time. */
		clock_gettime(id, &ts);
		before = life_fallthrough();
		for (int i = 0; i < 1000; i++)
			clock_gettime(id, &ts);
		if (life_fallthrough() == before)
			return true;
		life_sleep_ms(5);
	} while (life_libc_mono_ns() < deadline);
	return false;
}

bool life_wait_fast(unsigned max_ms)
{
	return life_wait_fast_clock(CLOCK_MONOTONIC, max_ms);
}

bool life_forced(void)
{
	const char *force = getenv("FASTTIME_FORCE");

	return force != NULL && *force != '\0' && strcmp(force, "0") != 0 &&
	       strcmp(force, "no") != 0;
}

bool life_served(void)
{
	const char *served = getenv("LIFE_SERVED");

	return served != NULL && *served != '\0' && strcmp(served, "0") != 0;
}

void life_require_fast(void)
{
	life_mono_ns();
	if (life_wait_fast(3000)) {
		/* Served, the lines answer with no thread of ours; refused,
		 * the library's own thread made them. */
		if (life_served() && life_threads_named("fasttime") != 0) {
			life_say("not served at start: the library calibrates in its own thread");
			exit(LIFE_EXIT_NOT_SERVED);
		}
		if (life_served())
			life_say(
			    "served by a calibration service's page: no thread of the library's");
		return;
	}
	if (!life_forced())
		life_skip("the library chose libc for CLOCK_MONOTONIC (FASTTIME_FORCE is off)");
	life_fail("CLOCK_MONOTONIC not answered from the TSC 3 s after the first call, "
		  "although FASTTIME_FORCE=%s",
		  getenv("FASTTIME_FORCE"));
}

/* Notes one answer against its sandwich [lo, hi] and the track's last answer. */
static void life_note(struct life_track *track, uint64_t lo, uint64_t answer, uint64_t hi,
		      bool fast)
{
	uint64_t error = 0;

	if (answer < lo)
		error = lo - answer;
	else if (answer > hi)
		error = answer - hi;
	if (error > track->max_error_ns)
		track->max_error_ns = error;
	if (answer < track->last_ns) {
		track->backward++;
		if (track->last_ns - answer > track->worst_back_ns)
			track->worst_back_ns = track->last_ns - answer;
	}
	track->last_ns = answer;
	track->samples++;
	track->fast += fast;
}

/* One sandwich of clock id: libc, the preload, libc. A call that reached
 * libc is followed by another: where that one did not, the first was a
 * check of the lines (clock_check.h: a call every few milliseconds asks
 * libc while the TSC answers it), not an answer of libc's, which the next
 * call would get too. */
static void life_sample(clockid_t id, const char *name, struct life_track *track)
{
	struct timespec lo, answer, hi, next;
	uint64_t before = life_fallthrough();
	bool from_tsc;

	life_libc.clock_gettime(id, &lo);
	if (clock_gettime(id, &answer) != 0)
		life_fail("clock_gettime(%s) failed: %s", name, strerror(errno));
	life_libc.clock_gettime(id, &hi);
	from_tsc = life_fallthrough() == before;
	if (!from_tsc) {
		before = life_fallthrough();
		clock_gettime(id, &next);
		from_tsc = life_fallthrough() == before;
	}
	life_note(track, life_ns(&lo), life_ns(&answer), life_ns(&hi), from_tsc);
}

void life_sample_mono(struct life_track *track)
{
	life_sample(CLOCK_MONOTONIC, "CLOCK_MONOTONIC", track);
}

void life_sample_real(struct life_track *track)
{
	life_sample(CLOCK_REALTIME, "CLOCK_REALTIME", track);
}

void life_sample_boot(struct life_track *track)
{
	life_sample(CLOCK_BOOTTIME, "CLOCK_BOOTTIME", track);
}

void life_sample_for(unsigned ms, struct life_track *mono, struct life_track *real)
{
	uint64_t end = life_libc_mono_ns() + ms * LIFE_NS_PER_MS;

	while (life_libc_mono_ns() < end) {
		life_sample_mono(mono);
		life_sample_real(real);
	}
}

void life_judge(const char *what, const struct life_track *track)
{
	life_say("%s: %llu samples, %.1f%% from the TSC, max error %llu ns, %llu backward", what,
		 (unsigned long long)track->samples,
		 track->samples ? 100.0 * (double)track->fast / (double)track->samples : 0.0,
		 (unsigned long long)track->max_error_ns, (unsigned long long)track->backward);
	if (track->backward != 0)
		life_fail("%s: %llu backward steps (worst %llu ns)", what,
			  (unsigned long long)track->backward,
			  (unsigned long long)track->worst_back_ns);
	if (track->max_error_ns > LIFE_MAX_ERROR_NS)
		life_fail("%s: error %llu ns against libc, more than %u", what,
			  (unsigned long long)track->max_error_ns, LIFE_MAX_ERROR_NS);
}

unsigned life_cpus(int *cpus, unsigned max)
{
	cpu_set_t set;
	unsigned n = 0;

	if (sched_getaffinity(0, sizeof set, &set) != 0)
		life_fail("sched_getaffinity: %s", strerror(errno));
	for (int cpu = 0; cpu < CPU_SETSIZE && n < max; cpu++)
		if (CPU_ISSET(cpu, &set))
			cpus[n++] = cpu;
	return n;
}

const char *life_fifo_unavailable(void)
{
	char runtime[32];
	pid_t pid;
	int status;

	if (life_read_small("/proc/sys/kernel/sched_rt_runtime_us", runtime, sizeof runtime) == 0)
		return "cannot read /proc/sys/kernel/sched_rt_runtime_us";
	if (atol(runtime) < 0)
		return "real-time throttling is off (sched_rt_runtime_us -1): a SCHED_FIFO loop "
		       "would own its CPU for ever";
	/* Asked in a child, so that this process keeps its own policy. */
	pid = fork();
	if (pid < 0)
		life_fail("fork: %s", strerror(errno));
	if (pid == 0) {
		struct sched_param param = { .sched_priority = 1 };

		_exit(sched_setscheduler(0, SCHED_FIFO, &param) == 0 ? 0 : 1);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return "this process may not use SCHED_FIFO (needs root or CAP_SYS_NICE)";
	return NULL;
}

/* Pins the calling thread to cpu; false where it may not run there. */
static bool life_pin(int cpu)
{
	cpu_set_t one;

	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	return sched_setaffinity(0, sizeof one, &one) == 0;
}

pid_t life_fifo_loop(const int *cpus, unsigned n, unsigned hop_ms, unsigned seconds)
{
	pid_t pid = fork();

	if (pid < 0)
		life_fail("fork: %s", strerror(errno));
	if (pid == 0) {
		struct sched_param param = { .sched_priority = 1 };

		/* Bounded whatever happens to the parent. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		signal(SIGALRM, SIG_DFL);
		alarm(seconds);
		if (sched_setscheduler(0, SCHED_FIFO, &param) != 0)
			_exit(LIFE_EXIT_SKIP);
		for (unsigned i = 0;; i = (i + 1) % n) {
			uint64_t end = life_libc_mono_ns() + hop_ms * LIFE_NS_PER_MS;

			life_pin(cpus[i]);
			while (life_libc_mono_ns() < end)
				;
		}
	}
	return pid;
}

void life_load_stop(pid_t pid)
{
	struct sched_param ordinary = { .sched_priority = 0 };
	int status;

	/* An ordinary thread first: a killed child dies only once it runs, and
	 * a real-time thread of higher priority on its CPU (a neighbour's)
	 * would keep a SCHED_FIFO one from running at all. */
	sched_setscheduler(pid, SCHED_OTHER, &ordinary);
	kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
}

/* How a hang is told from a loaded machine: past its time, a process still
 * counts as running while its own threads (not the library's refresh
 * thread, not the watchdog) or its children used CPU time in the last
 * window: a deadlock whose threads wait uses none, a starved test a
 * little. Never past LIFE_STARVED_FACTOR times its time, so that a test
 * that spins for ever (a deadlock that spins) still ends. */
#define LIFE_PROGRESS_WINDOW_S 5u
#define LIFE_STARVED_FACTOR    4u

/* utime + stime of one thread, in clock ticks, from its stat line (the
 * fields after the name, which may itself hold spaces and parentheses). */
static uint64_t life_thread_ticks(const char *stat_path)
{
	char line[1024];
	unsigned long long utime = 0, stime = 0;
	const char *fields;

	if (life_read_small(stat_path, line, sizeof line) == 0)
		return 0;
	fields = strrchr(line, ')');
	if (fields == NULL ||
	    sscanf(fields + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
		   &stime) != 2)
		return 0;
	return utime + stime;
}

struct life_ticks {
	pid_t pid;
	bool with_children;
	uint64_t ticks;
};

static uint64_t life_own_ticks(pid_t pid, bool with_children);

/* Adds a thread's CPU time unless it is fasttime's or the watchdog's, and
 * with_children, that of the processes it started. */
static bool life_add_ticks(const char *comm, pid_t tid, void *arg)
{
	struct life_ticks *sum = arg;
	char dir[32], file[96], children[4096];

	life_proc_dir(sum->pid, dir, sizeof dir);
	if (strcmp(comm, "fasttime") != 0 && strcmp(comm, "watchdog") != 0) {
		snprintf(file, sizeof file, "%s/task/%d/stat", dir, (int)tid);
		sum->ticks += life_thread_ticks(file);
	}
	if (!sum->with_children)
		return true;
	/* Each pid is followed by a space: a number cut short by the buffer
	 * has none, and is not a child. */
	snprintf(file, sizeof file, "%s/task/%d/children", dir, (int)tid);
	if (life_read_small(file, children, sizeof children) > 0)
		for (char *p = children, *end; *p != '\0'; p = end) {
			long child = strtol(p, &end, 10);

			if (end == p || *end != ' ')
				break;
			sum->ticks += life_own_ticks((pid_t)child, false);
		}
	return true;
}

/* CPU time used by pid's (0: this process's) threads other than
 * fasttime's and the watchdog; with_children, and by those of the
 * processes they started (a parent waiting for a starved child is not
 * hung either). */
static uint64_t life_own_ticks(pid_t pid, bool with_children)
{
	struct life_ticks sum = { pid, with_children, 0 };

	life_each_thread_of(pid, life_add_ticks, &sum);
	return sum.ticks;
}

/* Waits one window; true when pid's own threads, or its children's, used
 * CPU time in it. */
static bool life_progressed(pid_t pid)
{
	uint64_t before = life_own_ticks(pid, true);

	life_sleep_ms(LIFE_PROGRESS_WINDOW_S * 1000u);
	return life_own_ticks(pid, true) != before;
}

/* Past its time: waits one window, counted in *waited. NULL while pid
 * still counts as running (its own threads used CPU in the window, and it
 * has had less than LIFE_STARVED_FACTOR times its time), or else why it
 * does not, for the failure message. */
static const char *life_busy_window(pid_t pid, unsigned seconds, unsigned *waited)
{
	bool busy;

	if (*waited >= LIFE_STARVED_FACTOR * seconds)
		return "its threads still busy";
	busy = life_progressed(pid);
	*waited += LIFE_PROGRESS_WINDOW_S;
	return busy ? NULL : "neither its threads nor its children used CPU in the last 5 s";
}

static void *life_watchdog_main(void *arg)
{
	unsigned seconds = (unsigned)(uintptr_t)arg, waited = seconds;
	const char *why;
	char line[200];
	int n;

	life_sleep_ms(seconds * 1000u);
	while ((why = life_busy_window(0, seconds, &waited)) == NULL)
		;
	n = snprintf(line, sizeof line,
		     "%s: FAIL: watchdog: still running after %u s, %s (deadlock?)\n", life_name,
		     waited, why);
	if (write(STDOUT_FILENO, line, (size_t)n) < 0)
		abort();
	abort();
}

void life_watchdog(unsigned seconds)
{
	sigset_t all, saved;
	pthread_t thread;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &saved);
	if (pthread_create(&thread, NULL, life_watchdog_main, (void *)(uintptr_t)seconds) != 0)
		life_fail("cannot start the watchdog thread");
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	pthread_setname_np(thread, "watchdog");
	pthread_detach(thread);
}

/* Prints each thread of a stuck process and the kernel's idea of where it waits. */
static void life_show_stuck(pid_t pid)
{
	char path[64];
	DIR *dir;
	struct dirent *entry;

	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (dir == NULL)
		return;
	while ((entry = readdir(dir)) != NULL) {
		char file[320], comm[64] = "", wchan[64] = "";
		FILE *f;

		if (entry->d_name[0] == '.')
			continue;
		snprintf(file, sizeof file, "/proc/%d/task/%s/comm", (int)pid, entry->d_name);
		if ((f = fopen(file, "r")) != NULL) {
			if (fgets(comm, sizeof comm, f) == NULL)
				comm[0] = '\0';
			fclose(f);
		}
		snprintf(file, sizeof file, "/proc/%d/task/%s/wchan", (int)pid, entry->d_name);
		if ((f = fopen(file, "r")) != NULL) {
			if (fgets(wchan, sizeof wchan, f) == NULL)
				wchan[0] = '\0';
			fclose(f);
		}
		comm[strcspn(comm, "\n")] = '\0';
		printf("%s:   thread %s [%s] waits in %s\n", life_name, entry->d_name, comm,
		       wchan[0] != '\0' ? wchan : "?");
	}
	closedir(dir);
	fflush(stdout);
	/* The user-space stacks say who holds what; gdb is optional. */
	if (access("/usr/bin/gdb", X_OK) == 0) {
		char command[160];

		snprintf(command, sizeof command,
			 "env -u LD_PRELOAD timeout 30 /usr/bin/gdb -q -batch -p %d "
			 "-ex 'thread apply all bt' </dev/null 2>&1 | grep -E '^(Thread|#)'",
			 (int)pid);
		if (system(command) != 0)
			printf("%s:   (no stacks from gdb)\n", life_name);
		fflush(stdout);
	}
}

int life_wait_child(pid_t pid, unsigned seconds)
{
	uint64_t deadline = life_libc_mono_ns() + seconds * LIFE_NS_PER_SEC;
	unsigned waited = seconds;
	const char *why = NULL;
	int status;

	for (;;) {
		pid_t done = waitpid(pid, &status, WNOHANG);

		if (done == pid)
			return status;
		if (done < 0 && errno != EINTR)
			life_fail("waitpid: %s", strerror(errno));
		if (why != NULL)
			break;
		if (life_libc_mono_ns() > deadline) {
			/* Looks again after each window: it may have ended in it. */
			why = life_busy_window(pid, seconds, &waited);
			continue;
		}
		life_sleep_ms(10);
	}
	printf("%s: child %d still running after %u s, %s:\n", life_name, (int)pid, waited, why);
	life_show_stuck(pid);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	life_fail("child %d hung (deadlock?)", (int)pid);
}

/* The preloaded library as the loader placed it: its file and load base. */
struct life_library {
	char path[4096];
	uintptr_t base;
};

/* dl_iterate_phdr's visit: notes libfasttime's object. */
static int life_library_visit(struct dl_phdr_info *info, size_t size, void *data)
{
	struct life_library *library = data;
	const char *slash;

	(void)size;
	if (info->dlpi_name == NULL)
		return 0;
	slash = strrchr(info->dlpi_name, '/');
	if (strncmp(slash != NULL ? slash + 1 : info->dlpi_name, "libfasttime.so", 14) != 0)
		return 0;
	snprintf(library->path, sizeof library->path, "%s", info->dlpi_name);
	library->base = (uintptr_t)info->dlpi_addr;
	return 1;
}

/* Reads size bytes at offset of file into a new buffer; NULL on failure. */
static void *life_read_at(FILE *file, uint64_t offset, uint64_t size)
{
	void *buffer = size > 0 && size < (64u << 20) ? malloc(size) : NULL;

	if (buffer != NULL &&
	    (fseek(file, (long)offset, SEEK_SET) != 0 || fread(buffer, 1, size, file) != size)) {
		free(buffer);
		buffer = NULL;
	}
	return buffer;
}

/* The address of name, a symbol of the preloaded library (a hidden one
 * too), from its file's symbol table; NULL where it cannot be found. */
static void *life_library_symbol(const char *name)
{
	struct life_library library = { .path = "" };
	Elf64_Ehdr header;
	Elf64_Shdr *sections = NULL;
	void *found = NULL;
	FILE *file;

	if (dl_iterate_phdr(life_library_visit, &library) == 0 ||
	    (file = fopen(library.path, "rb")) == NULL)
		return NULL;
	if (fread(&header, sizeof header, 1, file) == 1 &&
	    memcmp(header.e_ident, ELFMAG, SELFMAG) == 0 &&
	    header.e_shentsize == sizeof(Elf64_Shdr))
		sections = life_read_at(file, header.e_shoff,
					(uint64_t)header.e_shnum * sizeof(Elf64_Shdr));
	for (unsigned i = 0; sections != NULL && i < header.e_shnum && found == NULL; i++) {
		Elf64_Sym *symbols;
		char *names;

		if (sections[i].sh_type != SHT_SYMTAB || sections[i].sh_link >= header.e_shnum)
			continue;
		symbols = life_read_at(file, sections[i].sh_offset, sections[i].sh_size);
		names = life_read_at(file, sections[sections[i].sh_link].sh_offset,
				     sections[sections[i].sh_link].sh_size);
		for (uint64_t s = 0; symbols != NULL && names != NULL &&
				     s < sections[i].sh_size / sizeof(Elf64_Sym);
		     s++)
			if (symbols[s].st_name < sections[sections[i].sh_link].sh_size &&
			    symbols[s].st_shndx != SHN_UNDEF &&
			    strcmp(names + symbols[s].st_name, name) == 0) {
				found = (void *)(library.base + symbols[s].st_value);
				break;
			}
		free(symbols);
		free(names);
	}
	free(sections);
	fclose(file);
	return found;
}

bool life_chosen_libc(uint32_t api_bits)
{
	const bool *made = life_library_symbol("api_choice_made");
	const struct api_choice_record *last = life_library_symbol("api_choice_last");

	if (made == NULL || last == NULL)
		return false;
	return __atomic_load_n(made, __ATOMIC_ACQUIRE) &&
	       (__atomic_load_n(&last->chosen, __ATOMIC_RELAXED) & api_bits) == 0;
}
