/* A tap between fasttime and libc, preloaded after libfasttime.so.
 *
 * fasttime finds libc's functions with dlsym(RTLD_NEXT), and the next object
 * after it in the search order is this one: every call fasttime passes on to
 * libc goes through here and is counted, per thread. A test can then tell an
 * answer from the TSC (count unchanged) from an answer by libc, which keeps
 * tests of the fast path from passing on the fallback alone.
 *
 * The tap can also hold the refresh thread (named "fasttime") at its next
 * call: a starved or dead refresh thread, on demand. */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/time.h>
#include <time.h>

#define TAP_EXPORT __attribute__((visibility("default")))

/* Static TLS: the tap is loaded at start-up, and a signal handler may count. */
static __thread uint64_t tap_calls __attribute__((tls_model("initial-exec")));

/* The next definition after ours, found on first use: fasttime's constructor
 * may run before ours, and dlsym of an existing symbol does not allocate. */
static void *tap_next(void **slot, const char *name)
{
	void *fn = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

	if (fn == NULL) {
		fn = dlsym(RTLD_NEXT, name);
		__atomic_store_n(slot, fn, __ATOMIC_RELEASE);
	}
	return fn;
}

static void *tap_clock_gettime_next, *tap_gettimeofday_next, *tap_time_next, *tap_timespec_get_next;

/* How many calls this thread has made that reached libc through the tap. */
TAP_EXPORT uint64_t life_tap_calls(void);
TAP_EXPORT uint64_t life_tap_calls(void)
{
	return tap_calls;
}

static bool tap_gate_closed;
static unsigned tap_held;

/* Closes or opens the gate for the refresh thread. */
TAP_EXPORT void life_tap_hold_refresh(bool hold);
TAP_EXPORT void life_tap_hold_refresh(bool hold)
{
	__atomic_store_n(&tap_gate_closed, hold, __ATOMIC_RELEASE);
}

/* How many threads the gate holds now. */
TAP_EXPORT unsigned life_tap_held(void);
TAP_EXPORT unsigned life_tap_held(void)
{
	return __atomic_load_n(&tap_held, __ATOMIC_ACQUIRE);
}

/* While the gate is closed, the refresh thread waits here; others pass. */
static void tap_gate(void)
{
	char name[16] = "";
	int saved;

	if (!__atomic_load_n(&tap_gate_closed, __ATOMIC_ACQUIRE))
		return;
	saved = errno;
	if (prctl(PR_GET_NAME, name) == 0 && strcmp(name, "fasttime") == 0) {
		struct timespec ms = { 0, 1000000 };

		__atomic_add_fetch(&tap_held, 1, __ATOMIC_ACQ_REL);
		while (__atomic_load_n(&tap_gate_closed, __ATOMIC_ACQUIRE))
			nanosleep(&ms, NULL);
		__atomic_sub_fetch(&tap_held, 1, __ATOMIC_ACQ_REL);
	}
	errno = saved;
}

/* Counts, then answers exactly as libc does. */
TAP_EXPORT int clock_gettime(clockid_t id, struct timespec *ts)
{
	int (*next)(clockid_t, struct timespec *) = (int (*)(clockid_t, struct timespec *))tap_next(
	    &tap_clock_gettime_next, "clock_gettime");

	tap_calls++;
	tap_gate();
	return next(id, ts);
}

/* Counts, then answers exactly as libc does. */
TAP_EXPORT int gettimeofday(struct timeval *tv, GETTIMEOFDAY_TZ_TYPE tz)
{
	int (*next)(struct timeval *, void *) =
	    (int (*)(struct timeval *, void *))tap_next(&tap_gettimeofday_next, "gettimeofday");

	tap_calls++;
	tap_gate();
	return next(tv, tz);
}

/* Counts, then answers exactly as libc does. */
TAP_EXPORT time_t time(time_t *t)
{
	time_t (*next)(time_t *) = (time_t(*)(time_t *))tap_next(&tap_time_next, "time");

	tap_calls++;
	tap_gate();
	return next(t);
}

/* Counts, then answers exactly as libc does. */
TAP_EXPORT int timespec_get(struct timespec *ts, int base)
{
	int (*next)(struct timespec *, int) =
	    (int (*)(struct timespec *, int))tap_next(&tap_timespec_get_next, "timespec_get");

	tap_calls++;
	tap_gate();
	return next(ts, base);
}
