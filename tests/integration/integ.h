/* Shared by the integration programs: proof that the library is preloaded,
 * libc's own time functions, the CPU check, failure counting, and which
 * entry points the library chose to answer from the TSC. */
#ifndef FASTTIME_INTEG_H
#define FASTTIME_INTEG_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/time.h>
#include <time.h>

/* Exit statuses understood by automake's test driver. */
#define INTEG_PASS  0
#define INTEG_FAIL  1
#define INTEG_SKIP  77
#define INTEG_ERROR 99

#define INTEG_NS_PER_SEC 1000000000ll

/* libc's own functions, which the preload cannot answer. */
struct integ_libc {
	int (*clock_gettime)(clockid_t, struct timespec *);
	int (*gettimeofday)(struct timeval *, void *);
	time_t (*time)(time_t *);
	int (*timespec_get)(struct timespec *, int);
};

extern struct integ_libc integ_libc;

/* The entry points the library may accelerate, in its own order. */
enum integ_api {
	INTEG_API_MONOTONIC,
	INTEG_API_REALTIME,
	INTEG_API_BOOTTIME,
	INTEG_API_TAI,
	INTEG_API_MONOTONIC_RAW,
	INTEG_API_GETTIMEOFDAY,
	INTEG_API_TIME,
	INTEG_API_TIMESPEC_GET,
	INTEG_API_COUNT,
};

/* What the library said about an entry point under FASTTIME_DEBUG=1. */
enum integ_path {
	INTEG_PATH_UNKNOWN,
	INTEG_PATH_LIBC,
	INTEG_PATH_FAST,
};

extern const char *const integ_api_names[INTEG_API_COUNT];

/* Exits with INTEG_FAIL unless all four time functions this program calls
 * are libfasttime's: a test that runs without the library must not pass. */
void integ_require_preload(void);
/* Fills integ_libc from the already loaded libc.so.6; INTEG_ERROR if not. */
void integ_load_libc(void);
/* Exits with INTEG_SKIP where the library answers with libc by its own
 * rule (tests/common/machine.h), under this process's settings. */
void integ_require_tsc(void);

/* A FASTTIME_* boolean as the library reads it ("1", "yes", "true", "on"). */
bool integ_env_true(const char *name);

/* Prints "FAIL: ..." and counts it; integ_status turns the count into the
 * exit status. */
void integ_fail(const char *format, ...) __attribute__((format(printf, 1, 2)));
int integ_status(void);
/* Whether any failure was counted so far. */
unsigned integ_failures(void);

static inline int64_t integ_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * INTEG_NS_PER_SEC + ts->tv_nsec;
}

/* Under FASTTIME_DEBUG=1, catches the library's stderr lines until it has
 * said which entry points answer from the TSC; call before the first time
 * call. Returns false (and does nothing) without FASTTIME_DEBUG. */
bool integ_capture_begin(void);
/* Waits up to timeout_ms for the choice, restores stderr, copies what was
 * caught to it, and fills paths. */
void integ_capture_end(unsigned timeout_ms, enum integ_path paths[INTEG_API_COUNT]);
const char *integ_path_name(enum integ_path path);
/* Under FASTTIME_FORCE=1, fails every entry point the library said it
 * answers with libc: a run meant to test the TSC path must not pass on
 * libc's answers. Nothing without FASTTIME_FORCE or FASTTIME_DEBUG, or
 * where the library answers with libc by its own rule. */
void integ_check_forced(const enum integ_path paths[INTEG_API_COUNT]);

/* Sleeps with nanosleep, which the library does not interpose: the wait
 * does not depend on the clock under test. */
void integ_sleep_ms(unsigned ms);
/* libc's CLOCK_MONOTONIC in nanoseconds. */
int64_t integ_libc_mono_ns(void);

#endif
