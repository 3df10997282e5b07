/* Where the variables every process start writes are kept. */
#ifndef FASTTIME_START_DATA_H
#define FASTTIME_START_DATA_H

/* Under a machine-wide preload every process runs the constructor, and
 * most never read the clock. The dynamic linker writes the library's .data
 * page anyway (its relocations and lazily bound calls), so the few
 * variables the constructor writes or reads are kept there, not in .bss
 * among the large tables: each page of those first touched costs a page
 * fault of its own, at every process start. */
#define START_DATA __attribute__((section(".data.fasttime_start")))

#endif
