/* fasttime-bench-empty.so: the library fasttime-bench --spawn preloads
 * beside libfasttime.so, to tell what a preload costs at all from what
 * libfasttime's own start and fork cost. It has no constructor and exports
 * nothing the program calls. */
#include "config.h"

#include <stdlib.h>

/* Never called: a library needs something in it, and this one refers to
 * libc, so that it depends on libc as libfasttime.so does and the loader
 * treats both alike. */
void bench_empty(void);
void bench_empty(void)
{
	abort();
}
