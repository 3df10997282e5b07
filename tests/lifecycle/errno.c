/* The program's errno is its own (errno.test): every exported function of
 * the library leaves errno as libc's own function would, on the paths where
 * the library does work of its own around libc's call: the first time call
 * (which starts the refresh thread, or looks for a calibration service's
 * page), a served first call, calls over stale lines and over a page whose
 * service ended, a clock id or a base the library leaves to libc, a NULL
 * pointer, the signal interposers, the namespace and seccomp interposers, a
 * fork child and the constructor.
 *
 * errno.test runs it with FASTTIME_DEBUG=1 and stderr on /dev/full: each
 * debug line the library writes then fails with ENOSPC, so work of the
 * library's that is not kept from the program shows in errno, whatever the
 * machine. Each check presets errno to ERRNO_SENTINEL, a value no call
 * sets, and compares the call's return value and errno with those of libc's
 * own function (found around the preload) called the same way. */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "life.h"

#define ERRNO_SENTINEL 4242

/* Not declared by every C library's headers. */
typedef void (*errno_handler)(int);
extern errno_handler bsd_signal(int sig, errno_handler handler);
extern errno_handler ssignal(int sig, errno_handler handler);
extern errno_handler sysv_signal(int sig, errno_handler handler);

/* The time calls checked, each made through the preload or libc's own. */
enum errno_call {
	ERRNO_MONOTONIC,
	ERRNO_REALTIME,
	ERRNO_BOOTTIME,
	ERRNO_TAI,
	ERRNO_MONOTONIC_RAW,
	ERRNO_GETTIMEOFDAY,
	ERRNO_GETTIMEOFDAY_TZ,
	ERRNO_TIME,
	ERRNO_TIMESPEC_GET,
	ERRNO_TIMESPEC_GET_BASE, /* a base other than TIME_UTC */
	ERRNO_BAD_CLOCK,	 /* a clock id no kernel knows: EINVAL */
	ERRNO_CPUTIME,		 /* a clock the library leaves to libc */
	ERRNO_CALLS
};

static const char *const errno_call_names[ERRNO_CALLS] = {
	"clock_gettime(CLOCK_MONOTONIC)",
	"clock_gettime(CLOCK_REALTIME)",
	"clock_gettime(CLOCK_BOOTTIME)",
	"clock_gettime(CLOCK_TAI)",
	"clock_gettime(CLOCK_MONOTONIC_RAW)",
	"gettimeofday(tv, NULL)",
	"gettimeofday(tv, tz)",
	"time(&t)",
	"timespec_get(ts, TIME_UTC)",
	"timespec_get(ts, TIME_UTC + 1)",
	"clock_gettime(4242)",
	"clock_gettime(CLOCK_PROCESS_CPUTIME_ID)",
};

static const clockid_t errno_clock_ids[] = {
	[ERRNO_MONOTONIC] = CLOCK_MONOTONIC,	     [ERRNO_REALTIME] = CLOCK_REALTIME,
	[ERRNO_BOOTTIME] = CLOCK_BOOTTIME,	     [ERRNO_TAI] = CLOCK_TAI,
	[ERRNO_MONOTONIC_RAW] = CLOCK_MONOTONIC_RAW, [ERRNO_BAD_CLOCK] = 4242,
	[ERRNO_CPUTIME] = CLOCK_PROCESS_CPUTIME_ID,
};

/* A call's outcome: its return value, reduced to what libc's is compared
 * by (time()'s seconds to whether it failed), and errno after it. */
struct errno_outcome {
	long rc;
	int error;
};

/* The exported functions, called through pointers: glibc declares their
 * answer's place never NULL, so a NULL passed to them by name is undefined
 * behaviour that UBSan reports in this file, before the call is made. */
static int (*volatile errno_clock_gettime)(clockid_t, struct timespec *) = clock_gettime;
static int (*volatile errno_gettimeofday)(struct timeval *, void *) = gettimeofday;
static int (*volatile errno_timespec_get)(struct timespec *, int) = timespec_get;

/* Makes call through the preload (libc false) or through libc's own
 * function, with the places given (NULL for a NULL pointer), errno preset. */
static struct errno_outcome errno_make(enum errno_call call, bool libc, bool null)
{
	struct timespec ts, *tsp = null ? NULL : &ts;
	struct timeval tv, *tvp = null ? NULL : &tv;
	struct timezone tz;
	time_t t, *tp = null ? NULL : &t;
	struct errno_outcome out;

	errno = ERRNO_SENTINEL;
	switch (call) {
	case ERRNO_GETTIMEOFDAY:
		out.rc = libc ? life_libc.gettimeofday(tvp, NULL) : errno_gettimeofday(tvp, NULL);
		break;
	case ERRNO_GETTIMEOFDAY_TZ:
		out.rc = libc ? life_libc.gettimeofday(tvp, &tz) : errno_gettimeofday(tvp, &tz);
		break;
	case ERRNO_TIME:
		out.rc = (libc ? life_libc.time(tp) : time(tp)) == (time_t)-1 ? -1 : 0;
		break;
	case ERRNO_TIMESPEC_GET:
		out.rc = libc ? life_libc.timespec_get(tsp, TIME_UTC)
			      : errno_timespec_get(tsp, TIME_UTC);
		break;
	case ERRNO_TIMESPEC_GET_BASE:
		out.rc = libc ? life_libc.timespec_get(tsp, TIME_UTC + 1)
			      : errno_timespec_get(tsp, TIME_UTC + 1);
		break;
	default:
		out.rc = libc ? life_libc.clock_gettime(errno_clock_ids[call], tsp)
			      : errno_clock_gettime(errno_clock_ids[call], tsp);
		break;
	}
	out.error = errno;
	return out;
}

/* Fails unless the preload's call gave what libc's gives. */
static void errno_check(const char *when, enum errno_call call, struct errno_outcome ours)
{
	struct errno_outcome libc = errno_make(call, true, false);

	if (ours.rc != libc.rc || ours.error != libc.error)
		life_fail("%s: %s returned %ld, errno %d (%s); libc's %ld, errno %d (%s)", when,
			  errno_call_names[call], ours.rc, ours.error, strerror(ours.error),
			  libc.rc, libc.error, strerror(libc.error));
}

/* Every call once through the preload, each checked against libc's. */
static void errno_check_all(const char *when)
{
	for (int call = 0; call < ERRNO_CALLS; call++)
		errno_check(when, call, errno_make(call, false, false));
}

/* The process's first time call is call; then every call. */
static void errno_first(enum errno_call call)
{
	errno_check("first call", call, errno_make(call, false, false));
	errno_check_all("after the first call");
	life_say("first call %s: errno as libc's", errno_call_names[call]);
}

/* A call's outcome in a child, where it may die of a signal: the wait
 * status, and the outcome it reports through a pipe. */
static int errno_in_child(enum errno_call call, bool libc, struct errno_outcome *out)
{
	int fds[2], status;
	pid_t pid;

	memset(out, 0, sizeof *out);
	if (pipe(fds) != 0)
		life_fail("pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		life_fail("fork: %s", strerror(errno));
	if (pid == 0) {
		struct errno_outcome made = errno_make(call, libc, true);

		if (write(fds[1], &made, sizeof made) != (ssize_t)sizeof made)
			_exit(2);
		_exit(0);
	}
	close(fds[1]);
	if (read(fds[0], out, sizeof *out) != (ssize_t)sizeof *out)
		memset(out, 0xff, sizeof *out);
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return status;
}

/* NULL for the answer's place, as the first time call of a process (the
 * child's: its parent made none) and again once the thread runs: libc's
 * outcome, a fault included. */
static void errno_null(void)
{
	for (int round = 0; round < 2; round++) {
		for (int call = 0; call < ERRNO_CALLS; call++) {
			struct errno_outcome ours, libc;
			int ours_status = errno_in_child(call, false, &ours);
			int libc_status = errno_in_child(call, true, &libc);

			if (ours_status != libc_status || ours.rc != libc.rc ||
			    ours.error != libc.error)
				life_fail(
				    "%s with NULL%s: status %#x, returned %ld, errno %d; libc's "
				    "status %#x, returned %ld, errno %d",
				    errno_call_names[call], round ? " (thread running)" : "",
				    ours_status, ours.rc, ours.error, libc_status, libc.rc,
				    libc.error);
		}
		if (round == 0)
			life_require_fast();
	}
	life_say("NULL places: libc's outcome, first call and later");
}

/* Calls for ms milliseconds, each checked. */
static void errno_calls_for(const char *when, unsigned ms)
{
	uint64_t end = life_libc_mono_ns() + (uint64_t)ms * LIFE_NS_PER_MS;

	while (life_libc_mono_ns() < end)
		errno_check_all(when);
}

/* Answers from the TSC, then over lines gone stale while the tap holds
 * the refresh thread, then again once it is let go. */
static void errno_stale(void)
{
	uint64_t deadline;
	unsigned stale = 0;

	life_require_fast();
	errno_calls_for("answered from the TSC", 200);
	life_hold_refresh(true);
	deadline = life_libc_mono_ns() + life_window_ns() + 10 * LIFE_NS_PER_SEC;
	/* Until the lines are stale: libc answers CLOCK_MONOTONIC, which the
	 * TSC answered (the tap counts it). */
	while (stale < 1000) {
		uint64_t before = life_fallthrough();
		struct errno_outcome mono = errno_make(ERRNO_MONOTONIC, false, false);

		if (life_fallthrough() > before)
			stale++;
		errno_check("lines going stale", ERRNO_MONOTONIC, mono);
		if (life_libc_mono_ns() > deadline)
			life_fail("the lines did not go stale with the refresh thread held");
		errno_check_all("lines going stale");
	}
	errno_calls_for("stale lines", 300);
	life_hold_refresh(false);
	errno_calls_for("the refresh thread let go", 300);
	life_say("stale lines: errno as libc's before, during and after");
}

/* A served process: its first call maps the page (served.test proves it
 * is served; here only errno counts). */
static void errno_served(void)
{
	errno_first(ERRNO_MONOTONIC);
	errno_calls_for("served", 200);
	life_say("served: errno as libc's");
}

/* A served process whose service ends (SIGTERM: its page goes): calls over
 * the stale page, its looks for a new one, and the leave for a thread of
 * its own once the page is abandoned. */
static void errno_abandoned(pid_t service)
{
	uint64_t deadline;

	errno_first(ERRNO_MONOTONIC);
	life_require_fast();
	errno_calls_for("served", 100);
	if (kill(service, SIGTERM) != 0)
		life_fail("kill(%d): %s", (int)service, strerror(errno));
	deadline = life_libc_mono_ns() + 60 * LIFE_NS_PER_SEC;
	while (life_threads_named("fasttime") == 0) {
		if (life_libc_mono_ns() > deadline)
			life_fail("no thread of its own 60 s after its service ended");
		errno_check_all("service ended");
	}
	errno_calls_for("left the page", 300);
	life_say("service ended: errno as libc's over the stale page and after the leave");
}

static void errno_handler_noop(int sig)
{
	(void)sig;
}

/* libc's own function name, around the preload. */
static void *errno_libc_function(const char *name)
{
	void *libc = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_NOW);
	void *found = libc != NULL ? dlsym(libc, name) : NULL;

	if (found == NULL)
		life_fail("libc's %s not found", name);
	return found;
}

/* A signal function's outcome, errno preset. */
static struct errno_outcome errno_signal_call(errno_handler (*fn)(int, errno_handler), int sig)
{
	struct errno_outcome out;

	errno = ERRNO_SENTINEL;
	out.rc = fn(sig, errno_handler_noop) == SIG_ERR ? -1 : 0;
	out.error = errno;
	return out;
}

/* The interposers that install handlers, for a signal they may install
 * (SIGUSR1) and one they may not (SIGKILL): libc's return and errno. */
static void errno_signals(const char *when)
{
	static const char *const names[] = { "signal", "bsd_signal", "ssignal", "sysv_signal",
					     "sigset" };
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
	errno_handler (*ours[])(int, errno_handler) = { signal, bsd_signal, ssignal, sysv_signal,
							sigset };
#pragma GCC diagnostic pop
	int (*libc_sigaction)(int, const struct sigaction *, struct sigaction *) = (int (*)(
	    int, const struct sigaction *, struct sigaction *))errno_libc_function("sigaction");
	const int sigs[] = { SIGUSR1, SIGKILL, 0 };
	struct sigaction act, old;

	memset(&act, 0, sizeof act);
	act.sa_handler = errno_handler_noop;
	for (unsigned s = 0; s < sizeof sigs / sizeof sigs[0]; s++) {
		struct errno_outcome mine, theirs;

		errno = ERRNO_SENTINEL;
		mine.rc = sigaction(sigs[s], &act, &old);
		mine.error = errno;
		errno = ERRNO_SENTINEL;
		theirs.rc = libc_sigaction(sigs[s], &act, &old);
		theirs.error = errno;
		if (mine.rc != theirs.rc || mine.error != theirs.error)
			life_fail("%s: sigaction(%d) returned %ld, errno %d; libc's %ld, errno %d",
				  when, sigs[s], mine.rc, mine.error, theirs.rc, theirs.error);
		for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++) {
			errno_handler (*libc_fn)(int, errno_handler) =
			    (errno_handler(*)(int, errno_handler))errno_libc_function(names[i]);

			mine = errno_signal_call(ours[i], sigs[s]);
			theirs = errno_signal_call(libc_fn, sigs[s]);
			if (mine.rc != theirs.rc || mine.error != theirs.error)
				life_fail("%s: %s(%d) returned %s, errno %d; libc's %s, errno %d",
					  when, names[i], sigs[s],
					  mine.rc ? "SIG_ERR" : "a handler", mine.error,
					  theirs.rc ? "SIG_ERR" : "a handler", theirs.error);
		}
	}
	signal(SIGUSR1, SIG_DFL);
	life_say("%s: the signal interposers leave errno as libc's", when);
}

/* A fork child, its fork handlers run: errno as the parent left it. */
static void errno_fork(void)
{
	int status;
	pid_t pid;

	life_require_fast();
	errno = ERRNO_SENTINEL;
	pid = fork();
	if (pid == 0) {
		int error = errno;

		if (error != ERRNO_SENTINEL) {
			printf("errno: FAIL: in the fork child, errno %d (%s), not %d\n", error,
			       strerror(error), ERRNO_SENTINEL);
			fflush(stdout);
			_exit(1);
		}
		errno_check_all("fork child");
		_exit(0);
	}
	if (pid < 0)
		life_fail("fork: %s", strerror(errno));
	if (errno != ERRNO_SENTINEL)
		life_fail("fork's parent: errno %d, not %d", errno, ERRNO_SENTINEL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		life_fail("the fork child failed (status %#x)", status);
	life_say("fork: errno kept in the child and the parent");
}

/* The interposers that stop the refresh thread: setns of no namespace
 * (a descriptor of /dev/null, type 0: the thread is stopped first), and a seccomp
 * filter refused (a NULL program: the thread stops for good). libc's
 * errno, not the stop's. */
static void errno_stops(void)
{
	int (*libc_setns)(int, int) = (int (*)(int, int))errno_libc_function("setns");
	int (*libc_prctl)(int, ...) = (int (*)(int, ...))errno_libc_function("prctl");
	struct errno_outcome mine, theirs;

	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		life_fail("/dev/null: %s", strerror(errno));
	life_require_fast();
	errno = ERRNO_SENTINEL;
	mine.rc = setns(fd, 0);
	mine.error = errno;
	errno = ERRNO_SENTINEL;
	theirs.rc = libc_setns(fd, 0);
	theirs.error = errno;
	close(fd);
	if (mine.rc != theirs.rc || mine.error != theirs.error)
		life_fail("setns(/dev/null, 0) returned %ld, errno %d; libc's %ld, errno %d",
			  mine.rc, mine.error, theirs.rc, theirs.error);
	errno_check_all("after setns");
	life_require_fast();
	errno = ERRNO_SENTINEL;
	mine.rc = prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, NULL, 0, 0);
	mine.error = errno;
	errno = ERRNO_SENTINEL;
	theirs.rc = libc_prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, NULL, 0, 0);
	theirs.error = errno;
	if (mine.rc != theirs.rc || mine.error != theirs.error)
		life_fail("prctl(PR_SET_SECCOMP, NULL) returned %ld, errno %d; libc's %ld, "
			  "errno %d",
			  mine.rc, mine.error, theirs.rc, theirs.error);
	errno_check_all("after prctl");
	life_say("setns and prctl: errno as libc's");
}

int main(int argc, char **argv)
{
	/* Before anything of ours: what the constructors left. */
	int at_main = errno;

	if (argc == 2 && strcmp(argv[1], "at-main") == 0) {
		/* Compared by errno.test with the program run without the
		 * preload. */
		printf("errno at main: %d\n", at_main);
		return 0;
	}
	life_begin("errno");
	if (argc == 3 && strcmp(argv[1], "first") == 0) {
		int call = atoi(argv[2]);

		if (call < 0 || call >= ERRNO_CALLS)
			life_fail("no call %d", call);
		errno_first(call);
	} else if (argc == 2 && strcmp(argv[1], "null") == 0) {
		errno_null();
	} else if (argc == 2 && strcmp(argv[1], "stale") == 0) {
		errno_stale();
	} else if (argc == 2 && strcmp(argv[1], "served") == 0) {
		if (!life_served())
			life_fail("'served' is for life_run_served");
		errno_served();
	} else if (argc == 3 && strcmp(argv[1], "abandoned") == 0) {
		errno_abandoned((pid_t)atoi(argv[2]));
	} else if (argc == 2 && strcmp(argv[1], "signals") == 0) {
		errno_signals("before any time call");
		life_require_fast();
		errno_signals("with the refresh thread running");
	} else if (argc == 2 && strcmp(argv[1], "fork") == 0) {
		errno_fork();
	} else if (argc == 2 && strcmp(argv[1], "stops") == 0) {
		errno_stops();
	} else {
		life_fail("usage: errno at-main | first CALL | null | stale | served | "
			  "abandoned SERVICE_PID | signals | fork | stops");
	}
	return 0;
}
