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

int libc_clock_gettime(clockid_t id, struct timespec *ts);
int libc_gettimeofday(struct timeval *tv, void *tz);
time_t libc_time_now(time_t *t);
int libc_timespec_get(struct timespec *ts, int base);

#endif
