/* Odd calls get libc's answer: the same return value, the same errno, the
 * output left alone on failure, and a value that libc's own readings taken
 * just before and just after bracket (exactly for what passes through,
 * within the accuracy bound for what the library answers from the TSC).
 *
 * Each comparison runs three times: at the first time call (the refresh
 * thread is being started), once the fast path is active, and on a fresh
 * thread; each pass also reads every clock the library answers (and the
 * coarse clocks, which it leaves to libc) many times in turn, and none may
 * go back. Under FASTTIME_DISABLE=1 every answer must
 * be libc's exactly; under FASTTIME_FORCE=1 (with FASTTIME_DEBUG=1) every
 * entry point must be answered from the TSC. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "integ.h"

/* No call sets this value: what errno holds afterwards is what the call did. */
#define SEMANTICS_ERRNO 4242
/* The accuracy bound for the clocks the library may answer itself. */
#define SEMANTICS_TOLERANCE_NS 5000

static bool semantics_disabled;
static const struct timespec semantics_poison = { .tv_sec = 0x5eed5eed, .tv_nsec = 123456789 };
/* Laundered so that the compiler neither warns about nor assumes it. */
static struct timespec *volatile semantics_null_ts;
static struct timeval *volatile semantics_null_tv;
static struct timezone *volatile semantics_null_tz;
/* The library's functions, called through pointers wherever an argument is
 * NULL on purpose: glibc declares them nonnull, and UBSan enforces that on
 * direct calls. Set in main(), not by initializers: older linkers (Debian
 * 11's) answer a function's address in data with a stub in the program,
 * and that stub then is clock_gettime's address for the whole process,
 * which integ_require_preload takes for the preload not in effect. */
static int (*volatile semantics_lib_clock_gettime)(clockid_t, struct timespec *);
static int (*volatile semantics_lib_gettimeofday)(struct timeval *, void *);
static int (*volatile semantics_lib_timespec_get)(struct timespec *, int);

/* The slack allowed around libc's bracket for a clock the library may
 * accelerate; none when it passes everything through. */
static int64_t semantics_tolerance(bool accelerated)
{
	return accelerated && !semantics_disabled ? SEMANTICS_TOLERANCE_NS : 0;
}

/* Whether the library may answer clock id from the TSC (its clock table's
 * rows): the others (the coarse clocks, CPU time) are libc's answers
 * exactly. */
static bool semantics_accelerated(clockid_t id)
{
	return id == CLOCK_MONOTONIC || id == CLOCK_REALTIME || id == CLOCK_BOOTTIME ||
	       id == CLOCK_TAI || id == CLOCK_MONOTONIC_RAW;
}

/* Whether ts still holds the pattern written before the call. */
static bool semantics_poisoned(const struct timespec *ts)
{
	return memcmp(ts, &semantics_poison, sizeof *ts) == 0;
}

/* Proves clock_gettime(id) answers as libc does: return value, errno, the
 * output untouched on failure (also with a NULL output), and a reading that
 * libc's readings before and after bracket. */
static void semantics_clock(const char *pass, clockid_t id, const char *what)
{
	struct timespec before = semantics_poison, ours = semantics_poison,
			after = semantics_poison;
	int rc_before, rc_ours, rc_after, errno_before, errno_ours, errno_after;
	int64_t tolerance = semantics_tolerance(semantics_accelerated(id));

	errno = SEMANTICS_ERRNO;
	rc_before = integ_libc.clock_gettime(id, &before);
	errno_before = errno;
	errno = SEMANTICS_ERRNO;
	rc_ours = clock_gettime(id, &ours);
	errno_ours = errno;
	errno = SEMANTICS_ERRNO;
	rc_after = integ_libc.clock_gettime(id, &after);
	errno_after = errno;

	if (rc_before != rc_after || errno_before != errno_after) {
		printf("note: %s: libc changed its answer for clock %d (%s) during the test\n",
		       pass, (int)id, what);
		return;
	}
	if (rc_ours != rc_before || errno_ours != errno_before) {
		integ_fail(
		    "%s: clock_gettime(%d /* %s */) returned %d, errno %d; libc %d, errno %d", pass,
		    (int)id, what, rc_ours, errno_ours, rc_before, errno_before);
		return;
	}
	if (rc_before != 0) {
		int rc_null_libc, rc_null_ours, errno_null_libc, errno_null_ours;

		if (!semantics_poisoned(&ours))
			integ_fail("%s: clock_gettime(%d /* %s */) failed but wrote its output",
				   pass, (int)id, what);
		/* A failing clock fails before the output is used: NULL too. */
		errno = SEMANTICS_ERRNO;
		rc_null_libc = integ_libc.clock_gettime(id, semantics_null_ts);
		errno_null_libc = errno;
		errno = SEMANTICS_ERRNO;
		rc_null_ours = semantics_lib_clock_gettime(id, semantics_null_ts);
		errno_null_ours = errno;
		if (rc_null_ours != rc_null_libc || errno_null_ours != errno_null_libc)
			integ_fail("%s: clock_gettime(%d /* %s */, NULL) returned %d, errno %d; "
				   "libc %d, errno %d",
				   pass, (int)id, what, rc_null_ours, errno_null_ours, rc_null_libc,
				   errno_null_libc);
		return;
	}
	if (ours.tv_nsec < 0 || ours.tv_nsec >= INTEG_NS_PER_SEC)
		integ_fail("%s: clock %d (%s): tv_nsec %ld out of range", pass, (int)id, what,
			   ours.tv_nsec);
	else if (integ_ns(&ours) < integ_ns(&before) - tolerance ||
		 integ_ns(&ours) > integ_ns(&after) + tolerance)
		integ_fail(
		    "%s: clock %d (%s): %lld.%09ld is outside libc's [%lld.%09ld, %lld.%09ld] "
		    "+- %lld ns",
		    pass, (int)id, what, (long long)ours.tv_sec, ours.tv_nsec,
		    (long long)before.tv_sec, before.tv_nsec, (long long)after.tv_sec,
		    after.tv_nsec, (long long)tolerance);
}

/* The kernel's encoding of a CPU-time clock id (include/linux/posix-timers.h):
 * which is 0 PROF, 1 VIRT, 2 SCHED. */
static clockid_t semantics_cpu_clock(pid_t pid, bool per_thread, unsigned which)
{
	return (clockid_t)((~(unsigned)pid << 3) | (per_thread ? 4u : 0u) | which);
}

/* A pid that no process has: the CPU clock it names is invalid. */
static pid_t semantics_unused_pid(void)
{
	for (pid_t pid = 4194303; pid > 2; pid--)
		if (kill(pid, 0) != 0 && errno == ESRCH)
			return pid;
	return 0;
}

/* A thread with a CPU clock of its own, parked until the program ends. */
static void *semantics_parked(void *unused)
{
	(void)unused;
	for (;;)
		pause();
	return NULL;
}

/* What clock id c is, for the messages. */
static const char *semantics_clock_name(int c)
{
	static const char *const names[] = {
		"REALTIME",	  "MONOTONIC",	     "PROCESS_CPUTIME_ID", "THREAD_CPUTIME_ID",
		"MONOTONIC_RAW",  "REALTIME_COARSE", "MONOTONIC_COARSE",   "BOOTTIME",
		"REALTIME_ALARM", "BOOTTIME_ALARM",  "10 (unused)",	   "TAI",
	};

	if (c < 0)
		return "negative: a CPU-time clock's encoding";
	if (c < (int)(sizeof names / sizeof names[0]))
		return names[c];
	return "beyond the last clock";
}

/* Proves every clock id, valid or not, and other threads' and processes'
 * CPU-time clocks are answered as libc answers them. */
static void semantics_all_clocks(const char *pass, pthread_t parked)
{
	static const clockid_t far[] = { 100, 1000, INT_MAX, INT_MIN, INT_MIN + 2, -1000 };
	pid_t unused = semantics_unused_pid();
	clockid_t id;

	for (int c = -8; c <= 16; c++)
		semantics_clock(pass, (clockid_t)c, semantics_clock_name(c));
	for (unsigned i = 0; i < sizeof far / sizeof far[0]; i++)
		semantics_clock(pass, far[i], "far out of range");

	if (pthread_getcpuclockid(parked, &id) == 0)
		semantics_clock(pass, id, "another thread's CPU clock");
	if (clock_getcpuclockid(getpid(), &id) == 0)
		semantics_clock(pass, id, "this process's CPU clock by pid");
	if (clock_getcpuclockid(1, &id) == 0)
		semantics_clock(pass, id, "pid 1's CPU clock");
	for (unsigned which = 0; which < 4; which++) {
		semantics_clock(pass, semantics_cpu_clock(getpid(), false, which),
				"this process's CPU clock, each kind");
		semantics_clock(pass, semantics_cpu_clock(1, false, which), "pid 1's, each kind");
		semantics_clock(pass, semantics_cpu_clock(1, true, which),
				"thread 1's, not in this process");
	}
	if (unused != 0) {
		semantics_clock(pass, semantics_cpu_clock(unused, false, 2),
				"a process that does not exist");
		semantics_clock(pass, semantics_cpu_clock(unused, true, 2),
				"a thread that does not exist");
	}
}

/* Proves gettimeofday answers as libc does with and without a timezone and
 * a time value: the same return value, errno and zone, and a time libc
 * brackets (exactly whenever a timezone is asked for). */
static void semantics_gettimeofday(const char *pass)
{
	for (unsigned c = 0; c < 4; c++) {
		bool want_tv = (c & 1) == 0, want_tz = (c & 2) == 0;
		struct timeval before = { -1, -1 }, ours = { -1, -1 }, after = { -1, -1 };
		struct timezone zone_libc = { -777, -777 }, zone_ours = { -777, -777 };
		int rc_libc, rc_ours, errno_libc, errno_ours;
		int64_t tolerance_us = semantics_tolerance(!want_tz) / 1000;

		errno = SEMANTICS_ERRNO;
		rc_libc = integ_libc.gettimeofday(want_tv ? &before : semantics_null_tv,
						  want_tz ? &zone_libc : semantics_null_tz);
		errno_libc = errno;
		errno = SEMANTICS_ERRNO;
		rc_ours = semantics_lib_gettimeofday(want_tv ? &ours : semantics_null_tv,
						     want_tz ? &zone_ours : semantics_null_tz);
		errno_ours = errno;
		integ_libc.gettimeofday(&after, NULL);

		if (rc_ours != rc_libc || errno_ours != errno_libc) {
			integ_fail(
			    "%s: gettimeofday(%s, %s) returned %d, errno %d; libc %d, errno %d",
			    pass, want_tv ? "tv" : "NULL", want_tz ? "tz" : "NULL", rc_ours,
			    errno_ours, rc_libc, errno_libc);
			continue;
		}
		if (want_tz && (zone_ours.tz_minuteswest != zone_libc.tz_minuteswest ||
				zone_ours.tz_dsttime != zone_libc.tz_dsttime))
			integ_fail("%s: gettimeofday's timezone is {%d, %d}; libc's {%d, %d}", pass,
				   zone_ours.tz_minuteswest, zone_ours.tz_dsttime,
				   zone_libc.tz_minuteswest, zone_libc.tz_dsttime);
		if (want_tv && rc_libc == 0) {
			int64_t b = (int64_t)before.tv_sec * 1000000 + before.tv_usec;
			int64_t o = (int64_t)ours.tv_sec * 1000000 + ours.tv_usec;
			int64_t a = (int64_t)after.tv_sec * 1000000 + after.tv_usec;

			if (ours.tv_usec < 0 || ours.tv_usec >= 1000000 || o < b - tolerance_us ||
			    o > a + tolerance_us)
				integ_fail(
				    "%s: gettimeofday(tv, %s) = %lld.%06ld is outside libc's "
				    "[%lld.%06ld, %lld.%06ld] +- %lld us",
				    pass, want_tz ? "tz" : "NULL", (long long)ours.tv_sec,
				    (long)ours.tv_usec, (long long)before.tv_sec,
				    (long)before.tv_usec, (long long)after.tv_sec,
				    (long)after.tv_usec, (long long)tolerance_us);
		}
	}
}

/* The second that a realtime reading ns falls in. */
static time_t semantics_second_of(int64_t ns)
{
	return (time_t)(ns >= 0 ? ns / INTEG_NS_PER_SEC
				: -((-ns + INTEG_NS_PER_SEC - 1) / INTEG_NS_PER_SEC));
}

/* Proves time(&t) stores what it returns, time(NULL) works, errno is left
 * alone, and the second lies between libc's: libc's time() lags the precise
 * clock by up to a tick, so the library's precise second may be one later. */
static void semantics_time(const char *pass)
{
	for (unsigned c = 0; c < 2; c++) {
		struct timespec real_before, real_after;
		time_t coarse_before, coarse_after, stored = (time_t)-12345, got, low, high;
		int64_t tolerance = semantics_tolerance(true);
		int errno_ours;

		integ_libc.clock_gettime(CLOCK_REALTIME, &real_before);
		coarse_before = integ_libc.time(NULL);
		errno = SEMANTICS_ERRNO;
		got = c == 0 ? time(&stored) : time(NULL);
		errno_ours = errno;
		coarse_after = integ_libc.time(NULL);
		integ_libc.clock_gettime(CLOCK_REALTIME, &real_after);

		low = coarse_before;
		high = coarse_after;
		if (!semantics_disabled) {
			time_t precise_low =
			    semantics_second_of(integ_ns(&real_before) - tolerance);
			time_t precise_high =
			    semantics_second_of(integ_ns(&real_after) + tolerance);
			low = precise_low < low ? precise_low : low;
			high = precise_high > high ? precise_high : high;
		}
		if (errno_ours != SEMANTICS_ERRNO)
			integ_fail("%s: time() changed errno to %d", pass, errno_ours);
		if (c == 0 && stored != got)
			integ_fail("%s: time(&t) returned %lld but stored %lld", pass,
				   (long long)got, (long long)stored);
		if (c == 1 && stored != (time_t)-12345)
			integ_fail("%s: time(NULL) wrote somewhere", pass);
		if (got < low || got > high)
			integ_fail("%s: time(%s) = %lld is outside libc's [%lld, %lld]", pass,
				   c == 0 ? "&t" : "NULL", (long long)got, (long long)low,
				   (long long)high);
	}
}

/* Proves timespec_get answers every base as libc does: 0 and the output
 * untouched for a base libc does not know, and libc's bracket otherwise. */
static void semantics_timespec_get(const char *pass)
{
	static const int bases[] = { INT_MIN, -1, 0, TIME_UTC, 2, 3, 4, 99, INT_MAX };

	for (unsigned i = 0; i < sizeof bases / sizeof bases[0]; i++) {
		int base = bases[i];
		struct timespec before = semantics_poison, ours = semantics_poison;
		struct timespec after = semantics_poison;
		int rc_before, rc_ours, rc_after, errno_libc, errno_ours;
		int64_t tolerance = semantics_tolerance(base == TIME_UTC);

		errno = SEMANTICS_ERRNO;
		rc_before = integ_libc.timespec_get(&before, base);
		errno_libc = errno;
		errno = SEMANTICS_ERRNO;
		rc_ours = timespec_get(&ours, base);
		errno_ours = errno;
		rc_after = integ_libc.timespec_get(&after, base);

		if (rc_ours != rc_before || errno_ours != errno_libc) {
			integ_fail(
			    "%s: timespec_get(ts, %d) returned %d, errno %d; libc %d, errno %d",
			    pass, base, rc_ours, errno_ours, rc_before, errno_libc);
			continue;
		}
		if (rc_before == 0) {
			int rc_null_libc = integ_libc.timespec_get(semantics_null_ts, base);
			int rc_null_ours = semantics_lib_timespec_get(semantics_null_ts, base);

			if (!semantics_poisoned(&ours))
				integ_fail("%s: timespec_get(ts, %d) returned 0 but wrote ts", pass,
					   base);
			if (rc_null_ours != rc_null_libc)
				integ_fail("%s: timespec_get(NULL, %d) returned %d; libc %d", pass,
					   base, rc_null_ours, rc_null_libc);
			continue;
		}
		if (rc_after != rc_before)
			continue;
		if (ours.tv_nsec < 0 || ours.tv_nsec >= INTEG_NS_PER_SEC ||
		    integ_ns(&ours) < integ_ns(&before) - tolerance ||
		    integ_ns(&ours) > integ_ns(&after) + tolerance)
			integ_fail("%s: timespec_get(ts, %d) = %lld.%09ld is outside libc's "
				   "[%lld.%09ld, %lld.%09ld] +- %lld ns",
				   pass, base, (long long)ours.tv_sec, ours.tv_nsec,
				   (long long)before.tv_sec, before.tv_nsec,
				   (long long)after.tv_sec, after.tv_nsec, (long long)tolerance);
	}
}

/* The clocks read again and again by semantics_forward: those the library
 * may answer from the TSC and those it leaves to libc. */
static const clockid_t semantics_forward_ids[] = {
	CLOCK_MONOTONIC,	CLOCK_BOOTTIME,	     CLOCK_TAI,
	CLOCK_REALTIME,		CLOCK_MONOTONIC_RAW, CLOCK_REALTIME_COARSE,
	CLOCK_MONOTONIC_COARSE,
};

#define SEMANTICS_FORWARD_CLOCKS (sizeof semantics_forward_ids / sizeof semantics_forward_ids[0])
#define SEMANTICS_FORWARD_ROUNDS 20000u

/* Proves that each clock, read many times in turn with the others (so that
 * each call follows another clock's), returns 0, gives a valid tv_nsec, and
 * never goes back within the thread; and that, by the end, each is within
 * libc's bracket (the library's clocks within the accuracy bound). */
static void semantics_forward(const char *pass)
{
	int64_t last[SEMANTICS_FORWARD_CLOCKS] = { 0 };
	unsigned failures = 0;

	for (unsigned round = 0; round < SEMANTICS_FORWARD_ROUNDS && failures < 10; round++) {
		for (unsigned c = 0; c < SEMANTICS_FORWARD_CLOCKS; c++) {
			clockid_t id = semantics_forward_ids[c];
			struct timespec ts = semantics_poison;
			int rc = clock_gettime(id, &ts);

			if (rc != 0 || ts.tv_nsec < 0 || ts.tv_nsec >= INTEG_NS_PER_SEC) {
				integ_fail("%s: clock_gettime(%s) returned %d, tv_nsec %ld", pass,
					   semantics_clock_name(id), rc, ts.tv_nsec);
				failures++;
				continue;
			}
			if (round > 0 && integ_ns(&ts) < last[c]) {
				integ_fail("%s: clock_gettime(%s) went back %lld ns at call %u",
					   pass, semantics_clock_name(id),
					   (long long)(last[c] - integ_ns(&ts)), round);
				failures++;
			}
			last[c] = integ_ns(&ts);
		}
	}
	for (unsigned c = 0; c < SEMANTICS_FORWARD_CLOCKS; c++)
		semantics_clock(pass, semantics_forward_ids[c],
				semantics_clock_name(semantics_forward_ids[c]));
}

/* Every comparison above, once. */
static void semantics_everything(const char *pass, pthread_t parked)
{
	semantics_all_clocks(pass, parked);
	semantics_forward(pass);
	semantics_gettimeofday(pass);
	semantics_time(pass);
	semantics_timespec_get(pass);
}

struct semantics_thread_args {
	pthread_t parked;
};

/* The comparisons on a thread whose clamp and cached second are new. */
static void *semantics_fresh_thread(void *arg)
{
	const struct semantics_thread_args *args = arg;

	semantics_everything("fresh thread", args->parked);
	return NULL;
}

/* How a child ended, as one comparable number. */
static int semantics_fate(int status)
{
	if (WIFSIGNALED(status))
		return 1000 + WTERMSIG(status);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The calls made with a NULL output, each in a child: clock_gettime of
 * every clock the library may answer and of those it leaves to libc, and
 * timespec_get (id -1 here). */
static const struct {
	const char *what;
	clockid_t id;
} semantics_null_calls[] = {
	{ "clock_gettime(CLOCK_MONOTONIC, NULL)", CLOCK_MONOTONIC },
	{ "clock_gettime(CLOCK_REALTIME, NULL)", CLOCK_REALTIME },
	{ "clock_gettime(CLOCK_BOOTTIME, NULL)", CLOCK_BOOTTIME },
	{ "clock_gettime(CLOCK_TAI, NULL)", CLOCK_TAI },
	{ "clock_gettime(CLOCK_MONOTONIC_RAW, NULL)", CLOCK_MONOTONIC_RAW },
	{ "clock_gettime(CLOCK_REALTIME_COARSE, NULL)", CLOCK_REALTIME_COARSE },
	{ "clock_gettime(CLOCK_MONOTONIC_COARSE, NULL)", CLOCK_MONOTONIC_COARSE },
	{ "timespec_get(NULL, TIME_UTC)", -1 },
};

#define SEMANTICS_NULL_COUNT (sizeof semantics_null_calls / sizeof semantics_null_calls[0])

/* Makes one call with a NULL output in a child, by libc or by the library,
 * and exits with what it returned (a crash ends it by a signal). */
static int semantics_null_child(unsigned call, bool use_libc)
{
	clockid_t id = semantics_null_calls[call].id;
	struct rlimit no_core = { 0, 0 };
	int rc;

	setrlimit(RLIMIT_CORE, &no_core);
	errno = SEMANTICS_ERRNO;
	if (id < 0)
		rc = (use_libc ? integ_libc.timespec_get
			       : semantics_lib_timespec_get)(semantics_null_ts, TIME_UTC);
	else
		rc = (use_libc ? integ_libc.clock_gettime
			       : semantics_lib_clock_gettime)(id, semantics_null_ts);
	return (rc & 0xf) | (errno == SEMANTICS_ERRNO ? 0 : errno == EFAULT ? 0x10 : 0x20);
}

/* Proves a NULL output for a clock that exists meets libc's fate, whatever
 * that is (glibc's vDSO path crashes): the library adds no check of its own
 * and hides none. */
static void semantics_null_outputs(void)
{
	for (unsigned call = 0; call < SEMANTICS_NULL_COUNT; call++) {
		const char *what = semantics_null_calls[call].what;
		int fates[2];

		for (unsigned side = 0; side < 2; side++) {
			int status;
			pid_t pid;

			fflush(stdout);
			pid = fork();
			if (pid == 0)
				_exit(semantics_null_child(call, side == 0));
			if (pid < 0 || waitpid(pid, &status, 0) != pid) {
				printf("ERROR: fork/waitpid: %s\n", strerror(errno));
				exit(INTEG_ERROR);
			}
			fates[side] = semantics_fate(status);
		}
		if (fates[0] != fates[1])
			integ_fail("%s: libc's child ended as %d, the library's as %d (1000+ is a "
				   "signal)",
				   what, fates[0], fates[1]);
		else
			printf("%s: ends as %d with libc and with the library\n", what, fates[0]);
	}
}

/* Compares one call's return value and errno with libc's for
 * semantics_no_threads_child; true when they agree. */
static bool semantics_same_errno(const char *what, long rc_libc, int errno_libc, long rc_ours,
				 int errno_ours)
{
	if (rc_ours == rc_libc && errno_ours == errno_libc)
		return true;
	printf("FAIL: with no thread possible, %s returned %ld, errno %d (%s); libc %ld, "
	       "errno %d\n",
	       what, rc_ours, errno_ours, strerror(errno_ours), rc_libc, errno_libc);
	return false;
}

/* In a forked child where no thread can be created: whichever call tries to
 * start the refresh thread must still leave errno as libc leaves it. */
static int semantics_no_threads_child(void)
{
	struct rlimit none = { 0, 0 };
	struct timespec ts;
	struct timeval tv;
	struct timezone tz;
	pthread_t probe;
	bool same = true;
	long rc_libc, rc_ours;
	int errno_libc;
	const char *preload = getenv("LD_PRELOAD");

	/* valgrind runs the program's threads itself: a limit on threads
	 * tells nothing about the library there. */
	if (preload != NULL && strstr(preload, "vgpreload") != NULL)
		return INTEG_SKIP;
	/* RLIMIT_NPROC does not bind root: become nobody first. */
	if (getuid() == 0 && setuid(65534) != 0)
		return INTEG_SKIP;
	if (setrlimit(RLIMIT_NPROC, &none) != 0)
		return INTEG_SKIP;
	if (pthread_create(&probe, NULL, semantics_parked, NULL) == 0)
		return INTEG_SKIP;

	/* A timezone always goes to libc, after waking the refresh thread. */
	errno = SEMANTICS_ERRNO;
	rc_libc = integ_libc.gettimeofday(&tv, &tz);
	errno_libc = errno;
	errno = SEMANTICS_ERRNO;
	rc_ours = gettimeofday(&tv, &tz);
	same &= semantics_same_errno("gettimeofday(tv, tz)", rc_libc, errno_libc, rc_ours, errno);

	/* The others, in case the library wakes the thread from them instead. */
	errno = SEMANTICS_ERRNO;
	rc_ours = time(NULL) > 0;
	same &= semantics_same_errno("time(NULL)", 1, SEMANTICS_ERRNO, rc_ours, errno);
	for (clockid_t id = 0; id <= CLOCK_TAI; id++) {
		char what[64];

		errno = SEMANTICS_ERRNO;
		rc_libc = integ_libc.clock_gettime(id, &ts);
		errno_libc = errno;
		errno = SEMANTICS_ERRNO;
		rc_ours = clock_gettime(id, &ts);
		snprintf(what, sizeof what, "clock_gettime(%d)", (int)id);
		same &= semantics_same_errno(what, rc_libc, errno_libc, rc_ours, errno);
	}
	errno = SEMANTICS_ERRNO;
	rc_ours = timespec_get(&ts, TIME_UTC);
	same &= semantics_same_errno("timespec_get(ts, TIME_UTC)", TIME_UTC, SEMANTICS_ERRNO,
				     rc_ours, errno);
	return same ? INTEG_PASS : INTEG_FAIL;
}

/* Runs semantics_no_threads_child and reports its outcome. */
static void semantics_no_threads(void)
{
	int status;
	pid_t pid;

#if defined(__SANITIZE_THREAD__)
	/* ThreadSanitizer ends a forked child that creates a thread. */
	printf("note: ThreadSanitizer build; errno case not run\n");
	return;
#endif
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		int result = semantics_no_threads_child();
		fflush(stdout);
		_exit(result);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid) {
		printf("ERROR: fork/waitpid: %s\n", strerror(errno));
		exit(INTEG_ERROR);
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == INTEG_PASS)
		printf("a slow call whose thread cannot start leaves errno as libc does\n");
	else if (WIFEXITED(status) && WEXITSTATUS(status) == INTEG_SKIP)
		printf("note: could not forbid thread creation here; errno case not run\n");
	else
		integ_fail("errno after a failed thread start differs from libc's (status %#x)",
			   status);
}

/* The comparisons at the first call, once calibrated and on a new thread;
 * then NULL outputs and a failed thread start, in children. */
int main(void)
{
	enum integ_path paths[INTEG_API_COUNT];
	struct semantics_thread_args args;
	pthread_t fresh;
	int64_t first_call;

	setvbuf(stdout, NULL, _IOLBF, 0);
	integ_require_preload();
	integ_load_libc();
	semantics_lib_clock_gettime = clock_gettime;
	semantics_lib_gettimeofday = gettimeofday;
	semantics_lib_timespec_get = timespec_get;
	semantics_disabled = integ_env_true("FASTTIME_DISABLE");
	if (semantics_disabled)
		printf("mode: disabled (every answer must be libc's exactly)\n");
	else
		printf("mode: %s\n", getenv("FASTTIME_MODE") ? getenv("FASTTIME_MODE") : "default");
	if (pthread_create(&args.parked, NULL, semantics_parked, NULL) != 0) {
		printf("ERROR: pthread_create\n");
		return INTEG_ERROR;
	}
	integ_capture_begin();

	/* The first call of the process: it starts the refresh thread. */
	first_call = integ_libc_mono_ns();
	semantics_everything("first calls", args.parked);

	/* The library calibrates within tens of milliseconds of the first
	 * call; half a second leaves a wide margin on a busy machine. */
	integ_capture_end(3000, paths);
	while (integ_libc_mono_ns() - first_call < 500000000)
		integ_sleep_ms(10);
	for (unsigned a = 0; a < INTEG_API_COUNT; a++)
		printf("%s: %s\n", integ_api_names[a], integ_path_name(paths[a]));
	integ_check_forced(paths);
	semantics_everything("calibrated", args.parked);

	if (pthread_create(&fresh, NULL, semantics_fresh_thread, &args) != 0 ||
	    pthread_join(fresh, NULL) != 0) {
		printf("ERROR: pthread_create\n");
		return INTEG_ERROR;
	}
	semantics_null_outputs();
	semantics_no_threads();
	if (integ_failures() == 0)
		printf("all answers match libc's\n");
	return integ_status();
}
