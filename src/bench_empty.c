/* fasttime-bench-empty.so: the library fasttime-bench --spawn preloads
 * beside libfasttime.so, to tell what a preload costs at all from what
 * libfasttime's own start and fork cost. It has no constructor and exports
 * nothing the program calls; one function keeps the file a library. */
#include "config.h"

/* Never called: a library needs something in it. */
void bench_empty(void);
void bench_empty(void)
{
}
