/* libc's own time functions: the answer whenever fasttime is in doubt. */
#ifndef FASTTIME_LIBC_H
#define FASTTIME_LIBC_H

#include <stdint.h>
#include <sys/time.h>
#include <time.h>

#include "timespec_ns.h"

struct libc_time_functions {
	int (*clock_gettime)(clockid_t, struct timespec *);
	int (*gettimeofday)(struct timeval *, void *);
	time_t (*time)(time_t *);
	int (*timespec_get)(struct timespec *, int);
};

/* libc's functions once libc_resolve has found them; until then each entry
 * is the matching libc_unresolved_* below, so a caller never tests it. */
extern __attribute__((visibility("hidden"))) struct libc_time_functions libc_time;

/* Resolves the next definitions after the caller's own (RTLD_NEXT). Safe to
 * call again; a call made while resolving on the same thread returns at once,
 * and the entry points then answer with the system call. */
void libc_resolve(void);

/* For a calibration service, once, before it reads any clock: each entry
 * becomes the definition beneath every fasttime library preloaded into
 * the process (LD_PRELOAD, /etc/ld.so.preload), so that the service
 * calibrates against the kernel's clocks (libc's, the vDSO's), never
 * against a library's answers, which a page, its own old one included,
 * may give. A preloaded shim beneath the library (the tests' tap) is
 * kept: it stands for the kernel. Looks up symbols that may be missing,
 * whose error path allocates: never from a time call. */
void libc_resolve_beneath_fasttime(void);

/* The name a fasttime library exports its fasttime_libc_beneath under: a
 * lookup of it also tells a fasttime library from any other object. */
#define LIBC_BENEATH "fasttime_libc_beneath"
/* The definition of name in the first object after the caller's that is
 * not a fasttime library (RTLD_NEXT, skipping each such library by asking
 * it in turn), or NULL. Exported by libfasttime.so. */
void *fasttime_libc_beneath(const char *name) __attribute__((visibility("default")));

/* The same calls as libc makes them when its function is not yet known:
 * the system call, with libc's return value and errno convention. */
int libc_syscall_clock_gettime(clockid_t id, struct timespec *ts);
int libc_syscall_gettimeofday(struct timeval *tv, void *tz);
time_t libc_syscall_time(time_t *t);

/* The entries before resolution: resolve, then call libc's function, or
 * make the system call while it cannot be found. */
int libc_unresolved_clock_gettime(clockid_t id, struct timespec *ts);
int libc_unresolved_gettimeofday(struct timeval *tv, void *tz);
time_t libc_unresolved_time(time_t *t);
int libc_unresolved_timespec_get(struct timespec *ts, int base);

/* Each libc_* below calls libc's own function: one load and a tail jump,
 * so a pass-through call costs what libc's call costs. */
static inline int libc_clock_gettime(clockid_t id, struct timespec *ts)
{
	return __atomic_load_n(&libc_time.clock_gettime, __ATOMIC_ACQUIRE)(id, ts);
}

static inline int libc_gettimeofday(struct timeval *tv, void *tz)
{
	return __atomic_load_n(&libc_time.gettimeofday, __ATOMIC_ACQUIRE)(tv, tz);
}

static inline time_t libc_time_now(time_t *t)
{
	return __atomic_load_n(&libc_time.time, __ATOMIC_ACQUIRE)(t);
}

static inline int libc_timespec_get(struct timespec *ts, int base)
{
	return __atomic_load_n(&libc_time.timespec_get, __ATOMIC_ACQUIRE)(ts, base);
}

/* libc's clock id in nanoseconds: the engine's own reads of the kernel's
 * clocks (whatever is preloaded beneath us). */
static inline uint64_t libc_clock_ns(clockid_t id)
{
	struct timespec ts;

	libc_clock_gettime(id, &ts);
	return timespec_to_ns(&ts);
}

static inline uint64_t libc_monotonic_ns(void)
{
	return libc_clock_ns(CLOCK_MONOTONIC);
}

static inline uint64_t libc_realtime_ns(void)
{
	return libc_clock_ns(CLOCK_REALTIME);
}

#endif
