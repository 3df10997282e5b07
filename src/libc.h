/* libc's own time functions: the answer whenever fasttime is in doubt. */
#ifndef FASTTIME_LIBC_H
#define FASTTIME_LIBC_H

#include <sys/time.h>
#include <time.h>

struct libc_time_functions {
	int (*clock_gettime)(clockid_t, struct timespec *);
	int (*gettimeofday)(struct timeval *, void *);
	time_t (*time)(time_t *);
	int (*timespec_get)(struct timespec *, int);
};

/* Resolved by libc_resolve; a NULL entry means "not yet". */
extern struct libc_time_functions libc_time;

/* Resolves the next definitions after the caller's own (RTLD_NEXT). Safe to
 * call again; a call made while resolving on the same thread returns at once,
 * and the entry points then answer with the system call. */
void libc_resolve(void);

/* The same calls as libc makes them when its function is not yet known:
 * the system call, with libc's return value and errno convention. */
int libc_syscall_clock_gettime(clockid_t id, struct timespec *ts);
int libc_syscall_gettimeofday(struct timeval *tv, void *tz);
time_t libc_syscall_time(time_t *t);

/* The same, for a function not resolved yet: resolve, or make the call. */
int libc_unresolved_clock_gettime(clockid_t id, struct timespec *ts);
int libc_unresolved_gettimeofday(struct timeval *tv, void *tz);
time_t libc_unresolved_time(time_t *t);
int libc_unresolved_timespec_get(struct timespec *ts, int base);

/* Each libc_* below calls libc's own function: once resolved, one load and
 * a tail jump, so a pass-through call costs what libc's call costs. */
static inline int libc_clock_gettime(clockid_t id, struct timespec *ts)
{
	int (*fn)(clockid_t, struct timespec *) =
	    __atomic_load_n(&libc_time.clock_gettime, __ATOMIC_ACQUIRE);

	if (__builtin_expect(fn == NULL, 0))
		return libc_unresolved_clock_gettime(id, ts);
	return fn(id, ts);
}

static inline int libc_gettimeofday(struct timeval *tv, void *tz)
{
	int (*fn)(struct timeval *, void *) =
	    __atomic_load_n(&libc_time.gettimeofday, __ATOMIC_ACQUIRE);

	if (__builtin_expect(fn == NULL, 0))
		return libc_unresolved_gettimeofday(tv, tz);
	return fn(tv, tz);
}

static inline time_t libc_time_now(time_t *t)
{
	time_t (*fn)(time_t *) = __atomic_load_n(&libc_time.time, __ATOMIC_ACQUIRE);

	if (__builtin_expect(fn == NULL, 0))
		return libc_unresolved_time(t);
	return fn(t);
}

static inline int libc_timespec_get(struct timespec *ts, int base)
{
	int (*fn)(struct timespec *, int) =
	    __atomic_load_n(&libc_time.timespec_get, __ATOMIC_ACQUIRE);

	if (__builtin_expect(fn == NULL, 0))
		return libc_unresolved_timespec_get(ts, base);
	return fn(ts, base);
}

#endif
