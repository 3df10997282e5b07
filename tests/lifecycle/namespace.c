/* A program that enters a namespace the kernel lets only a single-threaded
 * process enter, after reading the clock (so the library's thread runs):
 *   unshare-user  unshare(CLONE_NEWUSER)
 *   setns-mnt     setns into its own mount namespace, opened at the start
 *   setns-user    setns into a user namespace a helper child made
 *   unshare-user-handler  unshare(CLONE_NEWUSER) from a signal handler,
 *                 where the library may not join its thread: it asks it
 *                 to stop and retries until it has gone
 * The call must succeed as it does natively, the clock must still read
 * right after it, and the thread must start again at the reads that follow
 * (within a bounded wait). With "native" before the case, the program runs
 * the call alone, without the library, and exits 77 where it fails: the
 * .test script skips then (no user namespaces, no privilege, a sanitizer's
 * own thread). The program makes no thread of its own: its watchdog is
 * alarm(). */
#include "config.h"

#include "life.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* How long the thread may take to come back: generous, for a loaded
 * machine (the lines it left answer for up to 120 ms first). */
#define NAMESPACE_RESTART_WAIT_MS 5000u

struct namespace_case {
	int fd;	      /* setns: the namespace to enter */
	pid_t helper; /* setns-user: the child that made it */
};

/* A child that makes a user namespace and waits, killed at the end. */
static pid_t namespace_user_helper(void)
{
	int ready[2];
	char byte;
	pid_t pid;

	if (pipe(ready) != 0)
		return -1;
	pid_t parent = getpid();

	pid = fork();
	if (pid == 0) {
		/* Never outlives the test: a helper left behind held the
		 * machine's test lock and stalled every later test run. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
			_exit(1);
		close(ready[0]);
		byte = unshare(CLONE_NEWUSER) == 0 ? 'y' : 'n';
		if (write(ready[1], &byte, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(ready[1]);
	if (pid < 0 || read(ready[0], &byte, 1) != 1 || byte != 'y') {
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
		pid = -1;
	}
	close(ready[0]);
	return pid;
}

/* Opens what the case will enter; false where it cannot (errno says why;
 * EPERM: the helper child could not make a user namespace). */
static bool namespace_prepare(const char *name, struct namespace_case *c)
{
	char path[64];

	c->fd = -1;
	c->helper = -1;
	if (strcmp(name, "unshare-user") == 0 || strcmp(name, "unshare-user-handler") == 0)
		return true;
	if (strcmp(name, "setns-mnt") == 0) {
		c->fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
		return c->fd >= 0;
	}
	if (strcmp(name, "setns-user") == 0) {
		c->helper = namespace_user_helper();
		if (c->helper < 0) {
			errno = EPERM;
			return false;
		}
		snprintf(path, sizeof path, "/proc/%d/ns/user", (int)c->helper);
		c->fd = open(path, O_RDONLY | O_CLOEXEC);
		return c->fd >= 0;
	}
	fprintf(stderr, "unknown case %s\n", name);
	exit(99);
}

static volatile sig_atomic_t namespace_handler_rc, namespace_handler_errno;

static void namespace_handler(int sig)
{
	int saved_errno = errno;

	(void)sig;
	namespace_handler_rc = unshare(CLONE_NEWUSER);
	namespace_handler_errno = errno;
	errno = saved_errno;
}

/* The call from a handler installed through sigaction (so the library
 * knows it runs one), raised on this thread. */
static int namespace_enter_in_handler(void)
{
	struct sigaction action = { .sa_handler = namespace_handler };

	sigemptyset(&action.sa_mask);
	namespace_handler_rc = 1;
	if (sigaction(SIGUSR1, &action, NULL) != 0 || raise(SIGUSR1) != 0 ||
	    namespace_handler_rc == 1)
		return -1;
	errno = namespace_handler_errno;
	return namespace_handler_rc;
}

static int namespace_enter(const char *name, const struct namespace_case *c)
{
	if (strcmp(name, "unshare-user") == 0)
		return unshare(CLONE_NEWUSER);
	if (strcmp(name, "unshare-user-handler") == 0)
		return namespace_enter_in_handler();
	if (strcmp(name, "setns-mnt") == 0)
		return setns(c->fd, CLONE_NEWNS);
	return setns(c->fd, CLONE_NEWUSER);
}

static void namespace_cleanup(struct namespace_case *c)
{
	if (c->fd >= 0)
		close(c->fd);
	if (c->helper > 0) {
		kill(c->helper, SIGKILL);
		waitpid(c->helper, NULL, 0);
	}
}

/* Without the library: does the call succeed here at all? */
static int namespace_native(const char *name)
{
	struct namespace_case c;
	int rc;

	if (!namespace_prepare(name, &c)) {
		printf("namespace: %s: cannot prepare here: %s\n", name, strerror(errno));
		return LIFE_EXIT_SKIP;
	}
	rc = namespace_enter(name, &c);
	if (rc != 0)
		printf("namespace: %s fails here without the library: %s\n", name, strerror(errno));
	namespace_cleanup(&c);
	return rc == 0 ? 0 : LIFE_EXIT_SKIP;
}

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : "unshare-user";
	struct life_track mono = { 0 }, real = { 0 };
	struct namespace_case c;
	uint64_t deadline;

	if (strcmp(name, "native") == 0)
		return namespace_native(argc > 2 ? argv[2] : "unshare-user");
	life_begin("namespace");
#if defined(__SANITIZE_THREAD__)
	/* Its runtime starts a thread of its own with the first thread
	 * created (ours), and keeps it: the process is never alone again. */
	life_skip("ThreadSanitizer's background thread stays: no single-threaded namespace call "
		  "can succeed after a thread was created");
#endif
	alarm(60);
	if (!namespace_prepare(name, &c))
		life_skip("%s: cannot prepare here: %s", name, strerror(errno));
	life_require_fast();
	if (life_threads_named("fasttime") != 1) {
		life_list_threads();
		life_fail("no fasttime thread before the call");
	}
	errno = 0;
	if (namespace_enter(name, &c) != 0)
		life_fail("%s after a clock read: %s (natively it succeeds)", name,
			  strerror(errno));
	life_say("%s succeeded after a clock read", name);
	life_sample_for(200, &mono, &real);
	life_judge("monotonic", &mono);
	life_judge("realtime", &real);
	deadline = life_libc_mono_ns() + NAMESPACE_RESTART_WAIT_MS * LIFE_NS_PER_MS;
	while (life_threads_named("fasttime") == 0) {
		if (life_libc_mono_ns() > deadline) {
			life_list_threads();
			life_fail(
			    "no fasttime thread %u ms after the call, while reading the clock",
			    NAMESPACE_RESTART_WAIT_MS);
		}
		(void)life_mono_ns();
		life_sleep_ms(5);
	}
	life_say("the fasttime thread started again");
	namespace_cleanup(&c);
	life_say("%s: PASS", name);
	return 0;
}
