/* libc's own time functions for the benchmark, from libc.so.6 itself. */
#include "config.h"

#include "bench_libc.h"

#include <dlfcn.h>

struct libc_time_functions bench_libc;
struct libc_time_functions bench_process;

/* The four functions as handle finds them; false when one is missing. */
static bool bench_libc_lookup(void *handle, struct libc_time_functions *functions)
{
	functions->clock_gettime =
	    (int (*)(clockid_t, struct timespec *))dlsym(handle, "clock_gettime");
	functions->gettimeofday = (int (*)(struct timeval *, void *))dlsym(handle, "gettimeofday");
	functions->time = (time_t(*)(time_t *))dlsym(handle, "time");
	functions->timespec_get = (int (*)(struct timespec *, int))dlsym(handle, "timespec_get");
	return functions->clock_gettime && functions->gettimeofday && functions->time &&
	       functions->timespec_get;
}

/* dlopen with RTLD_NOLOAD finds the libc already mapped, past any preload;
 * RTLD_DEFAULT finds what the program's own calls reach. */
bool bench_libc_find(void)
{
	void *libc = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_NOW);

	return libc != NULL && bench_libc_lookup(libc, &bench_libc) &&
	       bench_libc_lookup(RTLD_DEFAULT, &bench_process);
}
