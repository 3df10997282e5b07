/* Finding libc's own time functions behind the preload, without malloc.
 *
 * dlsym(RTLD_NEXT) of a symbol that exists does not allocate; only its error
 * path does, and these four exist in every glibc we support. A time call
 * that arrives before resolution finishes (a constructor, a malloc that
 * reads the clock) is answered by the system call itself. */
#include "config.h"

#include "libc.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "errno_keep.h"

struct libc_time_functions libc_time = {
	.clock_gettime = libc_unresolved_clock_gettime,
	.gettimeofday = libc_unresolved_gettimeofday,
	.time = libc_unresolved_time,
	.timespec_get = libc_unresolved_timespec_get,
};

static __thread bool libc_resolving __attribute__((tls_model("initial-exec")));

/* Replaces an entry that still holds its resolver with libc's function;
 * leaves it when the lookup fails, so that calls keep making the system
 * call. */
#define LIBC_RESOLVE_ENTRY(entry, resolver, name)                                                  \
	do {                                                                                       \
		if (__atomic_load_n(&libc_time.entry, __ATOMIC_ACQUIRE) == (resolver)) {           \
			__typeof__(libc_time.entry) found =                                        \
			    (__typeof__(libc_time.entry))dlsym(RTLD_NEXT, name);                   \
			if (found != NULL)                                                         \
				__atomic_store_n(&libc_time.entry, found, __ATOMIC_RELEASE);       \
		}                                                                                  \
	} while (0)

void libc_resolve(void)
{
	if (libc_resolving)
		return;
	libc_resolving = true;
	LIBC_RESOLVE_ENTRY(clock_gettime, libc_unresolved_clock_gettime, "clock_gettime");
	LIBC_RESOLVE_ENTRY(gettimeofday, libc_unresolved_gettimeofday, "gettimeofday");
	LIBC_RESOLVE_ENTRY(time, libc_unresolved_time, "time");
	LIBC_RESOLVE_ENTRY(timespec_get, libc_unresolved_timespec_get, "timespec_get");
	libc_resolving = false;
}

void *fasttime_libc_beneath(const char *name)
{
	void *found = dlsym(RTLD_NEXT, name);
	void *(*next)(const char *) = (void *(*)(const char *))dlsym(RTLD_NEXT, LIBC_BENEATH);
	Dl_info at, marker;

	/* A definition in a fasttime library is skipped: that library's own
	 * lookup says what lies beneath it (a tap, another library, libc). */
	if (found != NULL && next != NULL && dladdr(found, &at) != 0 &&
	    dladdr((void *)next, &marker) != 0 && at.dli_fbase == marker.dli_fbase)
		return next(name);
	return found;
}

/* Stores the definition beneath every fasttime library in entry, where
 * one is found. */
#define LIBC_RESOLVE_BENEATH(entry, name)                                                          \
	do {                                                                                       \
		__typeof__(libc_time.entry) found =                                                \
		    (__typeof__(libc_time.entry))fasttime_libc_beneath(name);                      \
		if (found != NULL)                                                                 \
			__atomic_store_n(&libc_time.entry, found, __ATOMIC_RELEASE);               \
	} while (0)

void libc_resolve_beneath_fasttime(void)
{
	LIBC_RESOLVE_BENEATH(clock_gettime, "clock_gettime");
	LIBC_RESOLVE_BENEATH(gettimeofday, "gettimeofday");
	LIBC_RESOLVE_BENEATH(time, "time");
	LIBC_RESOLVE_BENEATH(timespec_get, "timespec_get");
}

int libc_syscall_clock_gettime(clockid_t id, struct timespec *ts)
{
	return (int)syscall(SYS_clock_gettime, id, ts);
}

int libc_syscall_gettimeofday(struct timeval *tv, void *tz)
{
	return (int)syscall(SYS_gettimeofday, tv, tz);
}

time_t libc_syscall_time(time_t *t)
{
	return (time_t)syscall(SYS_time, t);
}

/* libc_resolve where the program's call enters the library: a pass-through
 * jumps straight to a libc_unresolved_*. The lookup's own errors are none
 * of the caller's business. */
static void libc_resolve_keeping_errno(void)
{
	struct errno_keep keep = errno_keep_take();

	libc_resolve();
	errno_keep_give(keep);
}

/* Each libc_unresolved_* resolves libc's function, then calls it; before
 * resolution can succeed, it makes the system call itself. */
int libc_unresolved_clock_gettime(clockid_t id, struct timespec *ts)
{
	int (*fn)(clockid_t, struct timespec *);

	libc_resolve_keeping_errno();
	fn = __atomic_load_n(&libc_time.clock_gettime, __ATOMIC_ACQUIRE);
	if (fn == libc_unresolved_clock_gettime)
		return libc_syscall_clock_gettime(id, ts);
	return fn(id, ts);
}

int libc_unresolved_gettimeofday(struct timeval *tv, void *tz)
{
	int (*fn)(struct timeval *, void *);

	libc_resolve_keeping_errno();
	fn = __atomic_load_n(&libc_time.gettimeofday, __ATOMIC_ACQUIRE);
	if (fn == libc_unresolved_gettimeofday)
		return libc_syscall_gettimeofday(tv, tz);
	return fn(tv, tz);
}

time_t libc_unresolved_time(time_t *t)
{
	time_t (*fn)(time_t *);

	libc_resolve_keeping_errno();
	fn = __atomic_load_n(&libc_time.time, __ATOMIC_ACQUIRE);
	if (fn == libc_unresolved_time)
		return libc_syscall_time(t);
	return fn(t);
}

int libc_unresolved_timespec_get(struct timespec *ts, int base)
{
	int (*fn)(struct timespec *, int);

	libc_resolve_keeping_errno();
	fn = __atomic_load_n(&libc_time.timespec_get, __ATOMIC_ACQUIRE);
	if (fn == libc_unresolved_timespec_get) {
		/* C11: TIME_UTC is the only base; any other gives 0. */
		if (base != TIME_UTC)
			return 0;
		return libc_syscall_clock_gettime(CLOCK_REALTIME, ts) == 0 ? base : 0;
	}
	return fn(ts, base);
}
