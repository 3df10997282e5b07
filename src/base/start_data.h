/* Where the variables every process start writes are kept. */
#ifndef FASTTIME_START_DATA_H
#define FASTTIME_START_DATA_H

#include <features.h>

/* Under a machine-wide preload every process runs the constructor, and
 * most never read the clock. The dynamic linker writes the library's .data
 * page anyway (its relocations and lazily bound calls), so the few
 * variables the constructor writes or reads are kept there, not in .bss
 * among the large tables: each page of those first touched costs a page
 * fault of its own, at every process start. */
#define START_DATA __attribute__((section(".data.fasttime_start")))

/* Whether a fork handler may be registered late, at the first thing a fork
 * child would have to reset, rather than by every process start: glibc
 * 2.36 and later let go of their fork handlers' lock while a handler runs,
 * so a registration from inside one (a program's handler that reads the
 * clock first) neither deadlocks nor runs in the fork under way. Older
 * ones hold it, and the constructor registers there. */
#ifdef __GLIBC_PREREQ
#if __GLIBC_PREREQ(2, 36)
#define START_FORK_HANDLERS_LATE 1
#endif
#endif
#ifndef START_FORK_HANDLERS_LATE
#define START_FORK_HANDLERS_LATE 0
#endif

#endif
