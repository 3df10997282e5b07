/* Stale lines: the library must notice that nobody refreshed them and answer
 * with libc until a refresh succeeds, and answer with libc for good when its
 * thread could not even be created.
 *
 *   stall stop      the whole process is stopped (SIGSTOP from a child) for
 *                   longer than the window the lines are trusted for, then
 *                   continued: the reads that follow stay within 5 us of
 *                   libc and monotonic, and the TSC answers again later.
 *   stall starve    the refresh thread alone is held (by the tap, at its next
 *                   call into libc) past the window: every read must then be
 *                   answered by libc; let go, the TSC answers again.
 *   stall nothread  thread creation fails (RLIMIT_NPROC, or as root a
 *                   seccomp filter on clone(CLONE_THREAD)): every answer
 *                   comes from libc, no thread appears, nothing breaks.
 *
 * The window is the watch's (120 ms, watch.h) whatever the interval;
 * stall.test runs them with FASTTIME_INTERVAL_MS=100, or with the default
 * interval and longer runs when soaking. */
#include "config.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "life.h"

/* Starts the refresh thread, waits until its lines answer, and reads on past
 * the short start-up intervals (4 s of them at the default interval), so that
 * the lines are trusted for the whole configured window. */
static void stall_until_fast(void)
{
	struct life_track mono = { 0 }, real = { 0 };

	life_require_fast();
	life_sample_for(life_interval_ns() >= 1000 * LIFE_NS_PER_MS ? 4000 : 300, &mono, &real);
	life_judge("before, CLOCK_MONOTONIC", &mono);
	life_judge("before, CLOCK_REALTIME", &real);
}

/* A helper process stops its parent for ms, then lets it go on. */
static pid_t stall_stopper(unsigned ms)
{
	pid_t parent = getpid(), pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		life_fail("fork: %s", strerror(errno));
	if (pid == 0) {
		life_sleep_ms(50);
		kill(parent, SIGSTOP);
		life_sleep_ms(ms);
		kill(parent, SIGCONT);
		_exit(0);
	}
	return pid;
}

/* One stop: read through it; after it, accuracy, monotonicity and the TSC back. */
static void stall_one_stop(unsigned stop_ms)
{
	struct life_track mono = { 0 }, real = { 0 }, after = { 0 }, after_real = { 0 };
	uint64_t give_up, prev = life_libc_mono_ns(), resumed = 0;
	uint64_t libc_answers = 0, first_fast_at = 0;
	pid_t helper = stall_stopper(stop_ms);

	give_up = prev + (stop_ms + 10000) * LIFE_NS_PER_MS;
	/* Read until a gap between two turns of the loop shows that the process
	 * was stopped (wherever in the turn the stop landed). */
	while (resumed == 0) {
		uint64_t now;

		life_sample_mono(&mono);
		life_sample_real(&real);
		now = life_libc_mono_ns();
		if (now - prev > stop_ms * LIFE_NS_PER_MS / 2)
			resumed = now;
		else if (now > give_up)
			life_fail("the process was never stopped");
		prev = now;
	}
	/* Right after: the lines are older than the window. Note how many reads
	 * libc answered before the refresh thread's first round came through. */
	while (life_libc_mono_ns() < resumed + 2 * LIFE_NS_PER_SEC) {
		uint64_t fast_before = after.fast;

		life_sample_mono(&after);
		life_sample_real(&after_real);
		if (after.fast == fast_before && first_fast_at == 0)
			libc_answers++;
		else if (first_fast_at == 0)
			first_fast_at = life_libc_mono_ns();
	}
	if (life_wait_child(helper, 30) != 0)
		life_fail("the stopping helper failed");
	life_say("stopped %.1f s (window %.1f s); then %llu reads answered by libc before the "
		 "TSC, which came back %.1f ms after the stop",
		 (double)stop_ms / 1e3, (double)life_window_ns() / 1e9,
		 (unsigned long long)libc_answers,
		 first_fast_at ? (double)(first_fast_at - resumed) / 1e6 : -1.0);
	life_judge("through the stop, CLOCK_MONOTONIC", &mono);
	life_judge("through the stop, CLOCK_REALTIME", &real);
	life_judge("2 s after the stop, CLOCK_MONOTONIC", &after);
	life_judge("2 s after the stop, CLOCK_REALTIME", &after_real);
	if (!life_wait_fast(5000))
		life_fail("still answering with libc 7 s after the stop");
}

/* stall stop: SIGSTOP for the window plus 0.8 s, once (three times soaking). */
static void stall_stop(void)
{
	unsigned stop_ms = (unsigned)(life_window_ns() / LIFE_NS_PER_MS) + 800;
	unsigned stops = life_soak() ? 3 : 1;

	life_watchdog(stops * (stop_ms / 1000 + 40));
	stall_until_fast();
	for (unsigned i = 0; i < stops; i++)
		stall_one_stop(stop_ms);
}

/* stall starve: the refresh thread held past the window; libc must answer. */
static void stall_starve(void)
{
	struct life_track mono = { 0 }, real = { 0 };
	unsigned hold_ms = (unsigned)(life_window_ns() / LIFE_NS_PER_MS) + 500;
	uint64_t deadline;

	life_watchdog(hold_ms / 1000 + 60);
	stall_until_fast();
	life_hold_refresh(true);
	deadline = life_libc_mono_ns() + 2 * life_interval_ns() + 5 * LIFE_NS_PER_SEC;
	while (life_refresh_held() == 0) {
		if (life_libc_mono_ns() > deadline)
			life_fail("the refresh thread never came to the tap to be held");
		life_sample_for(1, &mono, &real);
	}
	/* Until the window closes the lines may still answer; read through it. */
	life_sample_for(hold_ms, &mono, &real);
	life_judge("refresh thread held, through the window, CLOCK_MONOTONIC", &mono);
	life_judge("refresh thread held, through the window, CLOCK_REALTIME", &real);

	/* Past the window: nothing may come from the stale lines. */
	mono = (struct life_track){ .last_ns = mono.last_ns };
	real = (struct life_track){ .last_ns = real.last_ns };
	life_sample_for(300, &mono, &real);
	life_judge("refresh thread held, past the window, CLOCK_MONOTONIC", &mono);
	life_judge("refresh thread held, past the window, CLOCK_REALTIME", &real);
	if (mono.fast != 0 || real.fast != 0)
		life_fail("answers from lines %.1f s old (window %.1f s): %llu + %llu reads",
			  (double)hold_ms / 1e3, (double)life_window_ns() / 1e9,
			  (unsigned long long)mono.fast, (unsigned long long)real.fast);

	life_hold_refresh(false);
	if (!life_wait_fast(5000))
		life_fail("still answering with libc 5 s after the refresh thread was let go");
	mono = (struct life_track){ .last_ns = mono.last_ns };
	real = (struct life_track){ .last_ns = real.last_ns };
	life_sample_for(300, &mono, &real);
	life_judge("refresh thread let go, CLOCK_MONOTONIC", &mono);
	life_judge("refresh thread let go, CLOCK_REALTIME", &real);
}

/* The body of the probe thread. */
static void *stall_nothing(void *arg)
{
	return arg;
}

/* Whether this process can still create a thread. */
static bool stall_can_create_thread(void)
{
	pthread_t thread;

	if (pthread_create(&thread, NULL, stall_nothing, NULL) != 0)
		return false;
	pthread_join(thread, NULL);
	return true;
}

/* Makes clone(CLONE_THREAD) fail with EPERM; clone3, whose flags a filter
 * cannot read, fails with ENOSYS so that glibc falls back to clone, and fork
 * (clone without CLONE_THREAD) still works. */
static bool stall_forbid_threads_seccomp(void)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		/* The flags, args[0]; CLONE_THREAD is in its low 32 bits. */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog program = { sizeof filter / sizeof filter[0], filter };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return false;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) == 0;
}

/* Takes away the right to create threads; says how, or NULL if it could not. */
static const char *stall_forbid_threads(void)
{
	struct rlimit one = { 1, 1 };

	/* RLIMIT_NPROC counts the user's processes and threads; root and
	 * CAP_SYS_RESOURCE are exempt, hence the probe. */
	if (setrlimit(RLIMIT_NPROC, &one) == 0 && !stall_can_create_thread())
		return "RLIMIT_NPROC=1";
	if (stall_forbid_threads_seccomp() && !stall_can_create_thread())
		return "a seccomp filter on clone(CLONE_THREAD)";
	return NULL;
}

/* One sandwich each of gettimeofday, time and timespec_get against libc. */
static void stall_other_calls(uint64_t *worst_error_ns, uint64_t *fast)
{
	struct timeval tv_lo, tv, tv_hi;
	struct timespec ts_lo, ts, ts_hi;
	time_t t_lo, t, t_hi;
	uint64_t before = life_fallthrough(), ns, lo, hi;

	life_libc.gettimeofday(&tv_lo, NULL);
	if (gettimeofday(&tv, NULL) != 0)
		life_fail("gettimeofday failed");
	life_libc.gettimeofday(&tv_hi, NULL);
	*fast += life_fallthrough() == before;
	ns = ((uint64_t)tv.tv_sec * 1000000u + (uint64_t)tv.tv_usec) * 1000u;
	lo = ((uint64_t)tv_lo.tv_sec * 1000000u + (uint64_t)tv_lo.tv_usec) * 1000u;
	hi = ((uint64_t)tv_hi.tv_sec * 1000000u + (uint64_t)tv_hi.tv_usec) * 1000u;
	if (ns < lo && lo - ns > *worst_error_ns)
		*worst_error_ns = lo - ns;
	if (ns > hi && ns - hi > *worst_error_ns)
		*worst_error_ns = ns - hi;

	before = life_fallthrough();
	t_lo = life_libc.time(NULL);
	t = time(NULL);
	t_hi = life_libc.time(NULL);
	*fast += life_fallthrough() == before;
	if (t < t_lo || t > t_hi)
		life_fail("time() answered %lld outside libc's [%lld, %lld]", (long long)t,
			  (long long)t_lo, (long long)t_hi);

	before = life_fallthrough();
	life_libc.timespec_get(&ts_lo, TIME_UTC);
	if (timespec_get(&ts, TIME_UTC) != TIME_UTC)
		life_fail("timespec_get failed");
	life_libc.timespec_get(&ts_hi, TIME_UTC);
	*fast += life_fallthrough() == before;
	if (life_ns(&ts) < life_ns(&ts_lo) || life_ns(&ts) > life_ns(&ts_hi))
		life_fail("timespec_get answered outside libc's sandwich");
}

/* stall nothread: the refresh thread cannot be created; libc answers all. */
static void stall_nothread(void)
{
	struct life_track mono = { 0 }, real = { 0 };
	unsigned run_ms = life_soak() ? 20000 : 1500;
	uint64_t other_error = 0, other_fast = 0, end;
	unsigned threads;
	const char *how;

	life_watchdog(run_ms / 1000 + 30);
	/* Before the first time call, so that the library's first attempt to
	 * start its thread is the one that fails. */
	how = stall_forbid_threads();
	if (how == NULL)
		life_skip("nothread: cannot take away thread creation here (neither "
			  "RLIMIT_NPROC nor seccomp works)");
	threads = life_thread_count();

	end = life_libc_mono_ns() + run_ms * LIFE_NS_PER_MS;
	while (life_libc_mono_ns() < end) {
		for (int i = 0; i < 100; i++) {
			life_sample_mono(&mono);
			life_sample_real(&real);
		}
		stall_other_calls(&other_error, &other_fast);
	}
	life_say("threads forbidden by %s: %.1f s of reads", how, (double)run_ms / 1e3);
	life_judge("no thread, CLOCK_MONOTONIC", &mono);
	life_judge("no thread, CLOCK_REALTIME", &real);
	life_say("no thread, gettimeofday/time/timespec_get: %llu from the TSC, "
		 "gettimeofday max error %llu ns",
		 (unsigned long long)other_fast, (unsigned long long)other_error);
	if (other_error > LIFE_MAX_ERROR_NS)
		life_fail("gettimeofday: error %llu ns against libc",
			  (unsigned long long)other_error);
	if (mono.fast != 0 || real.fast != 0 || other_fast != 0)
		life_fail("answers from the TSC with no refresh thread: lines nobody keeps fresh");
	if (life_threads_named("fasttime") != 0 || life_thread_count() != threads) {
		life_list_threads();
		life_fail("threads changed although none could be created");
	}
}

/* Runs the part argv[1] names. */
int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";

	life_begin("stall");
	if (strcmp(what, "stop") == 0)
		stall_stop();
	else if (strcmp(what, "starve") == 0)
		stall_starve();
	else if (strcmp(what, "nothread") == 0)
		stall_nothread();
	else
		life_fail("usage: stall stop|starve|nothread");
	return 0;
}
