/* A kernel clock that is a system call, preloaded beneath libfasttime.so.
 *
 * Where the kernel's clocksource cannot be read from user space (Xen PV,
 * hpet, acpi_pm, sandboxes without the vDSO), libc's clock_gettime is a
 * system call and costs about a microsecond. fasttime finds libc's functions
 * with dlsym(RTLD_NEXT); preloaded after it, this object is that next one,
 * so the library measures and calibrates against the system call as it
 * would on such a machine, while the rest of the process keeps libc's vDSO
 * (a test's own reference reads stay narrow).
 *
 * Each function answers as libc does, return value and errno included: the
 * syscall(2) wrapper already returns -1 and sets errno on failure. */
#include "config.h"

#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define SYSCALL_CLOCK_EXPORT __attribute__((visibility("default")))

/* libc's clock_gettime, without the vDSO. */
SYSCALL_CLOCK_EXPORT int clock_gettime(clockid_t id, struct timespec *ts)
{
	return (int)syscall(SYS_clock_gettime, id, ts);
}

/* libc's gettimeofday, without the vDSO; the kernel fills tz as libc does. */
SYSCALL_CLOCK_EXPORT int gettimeofday(struct timeval *tv, GETTIMEOFDAY_TZ_TYPE tz)
{
	return (int)syscall(SYS_gettimeofday, tv, tz);
}

/* libc's time, without the vDSO: the kernel stores into t when it is set. */
SYSCALL_CLOCK_EXPORT time_t time(time_t *t)
{
	return (time_t)syscall(SYS_time, t);
}

/* C11's timespec_get: TIME_UTC is the only base, any other gives 0, and so
 * does a failed read. */
SYSCALL_CLOCK_EXPORT int timespec_get(struct timespec *ts, int base)
{
	if (base != TIME_UTC)
		return 0;
	return syscall(SYS_clock_gettime, CLOCK_REALTIME, ts) == 0 ? base : 0;
}
