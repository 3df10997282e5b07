/* fork without exec: the child inherits the lines but not the refresh thread.
 * It must keep accurate, monotonic time for many refresh intervals, get a
 * refresh thread of its own, and answer from the TSC again. So must a child
 * made by _Fork() or by a raw clone system call, for which no atfork
 * handler runs. fork+exec, vfork, posix_spawn and system() must work and
 * leave no thread behind.
 *
 * Short: FASTTIME_INTERVAL_MS=100 (set by fork.test), 1 s in the child: its
 * thread starts within a few intervals, and ten of them see its lines
 * renewed some eight times over (each is trusted for 1.5 intervals).
 * Soak (FASTTIME_SOAK=1): the default interval; the parent reads for 4 s
 * first, so that its refreshes have left the short start-up intervals; the
 * child runs 16 s. */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock_table.h"
#include "life.h"

/* The exit status an exec'd copy returns when its own checks pass. */
#define FORK_EXEC_OK 42

extern char **environ;

/* The exec'd copy: the preload follows through exec and answers there too. */
static int fork_exec_child(void)
{
	struct life_track mono = { 0 }, real = { 0 };

	for (int i = 0; i < 20000; i++) {
		life_sample_mono(&mono);
		life_sample_real(&real);
	}
	if (mono.backward != 0 || real.backward != 0 || mono.max_error_ns > LIFE_MAX_ERROR_NS ||
	    real.max_error_ns > LIFE_MAX_ERROR_NS) {
		life_judge("exec'd copy, CLOCK_MONOTONIC", &mono);
		life_judge("exec'd copy, CLOCK_REALTIME", &real);
	}
	return FORK_EXEC_OK;
}

/* Where the TSC did not answer CLOCK_MONOTONIC when it should have: true,
 * with a line saying so, when the library's own choice leaves it to libc
 * now (a reading not forced, whose choice may change after the first
 * check: a close call between the counter and libc, measured again when
 * more CPUs have lines). Forced, or chosen for the TSC, it is a failure. */
static bool fork_chosen_libc(const char *who)
{
	if (life_forced() || !life_chosen_libc(CLOCK_API_MONOTONIC))
		return false;
	life_say("%s: the library's choice now leaves CLOCK_MONOTONIC to libc: its answers from "
		 "the TSC are not required (the rest is checked)",
		 who);
	return true;
}

/* The forked child: accurate and monotonic throughout, a refresh thread of
 * its own (not created by an atfork handler), and the TSC answering again. */
static void fork_child(unsigned run_ms)
{
	struct life_track mono = { 0 }, real = { 0 };
	uint64_t start = life_libc_mono_ns(), end = start + run_ms * LIFE_NS_PER_MS;
	uint64_t next_look = 0, seen_at = 0;
	unsigned threads = life_thread_count();

	/* Before any time call: only this thread came through fork, and fork
	 * itself must not have started another. */
	if (threads != 1) {
		life_list_threads();
		life_fail("child: %u threads right after fork, expected 1", threads);
	}
	while (life_libc_mono_ns() < end) {
		life_sample_for(1, &mono, &real);
		if (seen_at == 0 && life_libc_mono_ns() >= next_look) {
			if (life_threads_named("fasttime") > 0)
				seen_at = life_libc_mono_ns();
			next_look = life_libc_mono_ns() + 10 * LIFE_NS_PER_MS;
		}
	}
	/* The library starts the thread lazily; give it a few more seconds. */
	for (int i = 0; seen_at == 0 && i < 500; i++) {
		life_sample_for(10, &mono, &real);
		if (life_threads_named("fasttime") > 0)
			seen_at = life_libc_mono_ns();
	}
	if (seen_at == 0) {
		life_list_threads();
		life_fail("child: no refresh thread %.1f s after fork",
			  (double)(life_libc_mono_ns() - start) / 1e9);
	}
	if (life_threads_named("fasttime") != 1) {
		life_list_threads();
		life_fail("child: %u refresh threads", life_threads_named("fasttime"));
	}
	life_say("child: refresh thread running %.2f s after fork (lines trusted for %.2f s)",
		 (double)(seen_at - start) / 1e9, (double)life_window_ns() / 1e9);
	/* Its lines must take over from libc again, unless the library's own
	 * choice (a reading not forced) now leaves the clock to libc. */
	if (!life_wait_fast(5000) && !fork_chosen_libc("child"))
		life_fail("child: still answering with libc 5 s after the refresh thread started");
	life_sample_for(200, &mono, &real);
	life_say("child: ran %.1f s (%.0f refresh intervals)",
		 (double)(life_libc_mono_ns() - start) / 1e9,
		 (double)(life_libc_mono_ns() - start) / (double)life_interval_ns());
	life_judge("child CLOCK_MONOTONIC", &mono);
	life_judge("child CLOCK_REALTIME", &real);
}

/* Makes a child process one way, without exec: "fork", "_Fork" (glibc 2.34
 * and later: no atfork handler runs) or "clone" (the system call itself,
 * behind libc's back). Returns as fork does; ENOSYS where _Fork is absent. */
static pid_t fork_by(const char *how)
{
	if (strcmp(how, "fork") == 0)
		return fork();
	if (strcmp(how, "_Fork") == 0) {
#ifdef HAVE__FORK
		return _Fork();
#else
		errno = ENOSYS;
		return -1;
#endif
	}
	return (pid_t)syscall(SYS_clone, (unsigned long)SIGCHLD, NULL, NULL, NULL, NULL);
}

/* Runs fork_child in a child made the given way. */
static void fork_child_by(const char *how, unsigned run_ms)
{
	pid_t pid;

	life_say("child made by %s", how);
#if defined(__SANITIZE_THREAD__)
	/* ThreadSanitizer follows fork() only: in a child made any other way
	 * it still counts the parent's threads, and reports the child's own
	 * refresh thread as racing with the parent's. */
	if (strcmp(how, "fork") != 0) {
		life_say("%s: not followed by ThreadSanitizer; skipped", how);
		return;
	}
#endif
	fflush(stdout);
	pid = fork_by(how);
	if (pid < 0 && errno == ENOSYS) {
		life_say("%s: not in this C library; skipped", how);
		return;
	}
	if (pid < 0)
		life_fail("%s: %s", how, strerror(errno));
	if (pid == 0) {
		fork_child(run_ms);
		fflush(stdout);
		_exit(0);
	}
	if (life_wait_child(pid, run_ms / 1000 + 60) != 0)
		life_fail("the child made by %s failed", how);
}

/* A vfork child that reads the clock while the lines are stale (the
 * refresh thread held by the tap): it shares the parent's memory, so it
 * must not take itself for a new process and start a thread there, which
 * would leave the parent with two. */
static void fork_vfork_with_stale_lines(void)
{
	pid_t pid;
	int status;

	life_hold_refresh(true);
	life_sleep_ms((unsigned)(life_window_ns() / LIFE_NS_PER_MS) + 100);
	fflush(stdout);
	pid = vfork();
	if (pid == 0) {
		struct timespec ts;

		for (int i = 0; i < 1000; i++)
			clock_gettime(CLOCK_MONOTONIC, &ts);
		_exit(0);
	}
	if (pid < 0)
		life_fail("vfork: %s", strerror(errno));
	status = life_wait_child(pid, 30);
	if (status != 0)
		life_fail("the vfork child reading stale lines ended with status 0x%x", status);
	/* The parent's own reads while the lines are still stale: had the
	 * child taken the shared state for its own, the parent would now take
	 * itself for a new process and start a second thread. */
	for (int i = 0; i < 1000; i++)
		life_mono_ns();
	life_hold_refresh(false);
	if (!life_wait_fast(5000) && !fork_chosen_libc("parent"))
		life_fail("parent: the TSC does not answer again after the vfork child");
	if (life_threads_named("fasttime") != 1) {
		life_list_threads();
		life_fail("parent: %u refresh threads after a vfork child read stale lines",
			  life_threads_named("fasttime"));
	}
	life_say("vfork child reading stale lines: the parent still has one refresh thread");
}

/* Runs the exec'd copy through one way of starting a process, checks its status. */
static void fork_check_status(const char *how, int status)
{
	if (!WIFEXITED(status) || WEXITSTATUS(status) != FORK_EXEC_OK)
		life_fail("%s: exec'd copy ended with status 0x%x, expected exit %d", how, status,
			  FORK_EXEC_OK);
	life_say("%s: exec'd copy exited %d", how, FORK_EXEC_OK);
}

/* fork+exec, vfork+exec, posix_spawn and system(): each child is preloaded
 * too, and each exit status arrives unchanged. */
static void fork_exec_ways(const char *self)
{
	char *argv[] = { (char *)self, (char *)"--exec-child", NULL };
	pid_t pid;
	int status, rc;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		execve(self, argv, environ);
		_exit(127);
	}
	if (pid < 0)
		life_fail("fork: %s", strerror(errno));
	fork_check_status("fork+exec", life_wait_child(pid, 60));

	pid = vfork();
	if (pid == 0) {
		execve(self, argv, environ);
		_exit(127);
	}
	if (pid < 0)
		life_fail("vfork: %s", strerror(errno));
	fork_check_status("vfork+exec", life_wait_child(pid, 60));

	rc = posix_spawn(&pid, self, NULL, NULL, argv, environ);
	if (rc != 0)
		life_fail("posix_spawn: %s", strerror(rc));
	fork_check_status("posix_spawn", life_wait_child(pid, 60));

	status = system("true");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		life_fail("system(\"true\") returned 0x%x", status);
	status = system("exit 7");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 7)
		life_fail("system(\"exit 7\") returned 0x%x, expected exit 7", status);
	life_say("system: \"true\" exited 0, \"exit 7\" exited 7");
}

/* The parent: calibrated, it forks, then starts exec'd copies four ways. */
int main(int argc, char **argv)
{
	struct life_track mono = { 0 }, real = { 0 };
	unsigned run_ms = life_soak() ? 16000 : 1000;
	/* Past the short start-up intervals (4 s of them at the default). */
	unsigned warm_ms = life_interval_ns() >= 1000 * LIFE_NS_PER_MS ? 4000 : 300;
	unsigned before, after;

	life_begin("fork");
	if (argc > 1 && strcmp(argv[1], "--exec-child") == 0)
		return fork_exec_child();
	life_watchdog(run_ms / 1000 + 120);

	/* The first call starts the refresh thread; wait until its lines answer. */
	life_require_fast();
	if (life_threads_named("fasttime") != 1)
		life_fail("parent: %u refresh threads, expected 1", life_threads_named("fasttime"));
	life_sample_for(warm_ms, &mono, &real);
	life_judge("parent CLOCK_MONOTONIC", &mono);
	life_judge("parent CLOCK_REALTIME", &real);
	before = life_thread_count();

	life_say("%s mode, interval %llu ms, child runs %u ms",
		 life_relaxed() ? "relaxed" : "ordered",
		 (unsigned long long)(life_interval_ns() / LIFE_NS_PER_MS), run_ms);
	fork_child_by("fork", run_ms);
	fork_child_by("_Fork", run_ms);
	fork_child_by("clone", run_ms);
	fork_vfork_with_stale_lines();

	/* This very file, even if a rebuild has replaced it meanwhile. */
	fork_exec_ways("/proc/self/exe");

	/* The parent is unchanged: the same threads, one refresh thread, good time. */
	after = life_thread_count();
	if (after != before || life_threads_named("fasttime") != 1) {
		life_list_threads();
		life_fail("parent: %u threads before the children, %u after", before, after);
	}
	life_say("parent: %u threads before the children and after", before);
	mono = (struct life_track){ 0 };
	real = (struct life_track){ 0 };
	life_sample_for(200, &mono, &real);
	life_judge("parent afterwards, CLOCK_MONOTONIC", &mono);
	life_judge("parent afterwards, CLOCK_REALTIME", &real);
	return 0;
}
