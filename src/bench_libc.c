/* libc's own time functions for the benchmark, from libc.so.6 itself. */
#include "config.h"

#include "bench_libc.h"

#include <dlfcn.h>

struct libc_time_functions bench_libc;

/* dlopen with RTLD_NOLOAD finds the libc already mapped, past any preload. */
bool bench_libc_find(void)
{
	void *libc = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_NOW);

	if (libc == NULL)
		return false;
	bench_libc.clock_gettime =
	    (int (*)(clockid_t, struct timespec *))dlsym(libc, "clock_gettime");
	bench_libc.gettimeofday = (int (*)(struct timeval *, void *))dlsym(libc, "gettimeofday");
	bench_libc.time = (time_t(*)(time_t *))dlsym(libc, "time");
	bench_libc.timespec_get = (int (*)(struct timespec *, int))dlsym(libc, "timespec_get");
	return bench_libc.clock_gettime && bench_libc.gettimeofday && bench_libc.time &&
	       bench_libc.timespec_get;
}
