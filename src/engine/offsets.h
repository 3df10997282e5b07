/* The offsets that make the table's other clocks out of the monotonic
 * lines (clock_table.h): CLOCK_REALTIME, CLOCK_BOOTTIME and CLOCK_TAI, each
 * minus CLOCK_MONOTONIC, as the refresh thread measures them and publishes
 * them (table_page.shared.offset_ns). Each changes only when its clock steps:
 * REALTIME when the clock is set and at a leap second (through which TAI
 * runs on), TAI when the clock is set or the kernel's TAI offset is
 * (adjtimex ADJ_TAI), and all three when the machine resumes from a
 * suspend, which CLOCK_MONOTONIC does not count. */
#ifndef FASTTIME_OFFSETS_H
#define FASTTIME_OFFSETS_H

#include <stdbool.h>

#include "calib.h"
#include "clock_table.h"

/* Fills samples with monotonic / id / monotonic sandwiches of libc's
 * clocks: the refresh thread's, and a reader's over stale lines. Returns
 * how many it took: none where the kernel has no such clock. */
unsigned offsets_samples(clockid_t id, struct calib_offset_sample *samples, unsigned n);
/* Measures the offsets: publishes each the first time (unless known_only),
 * and after that whenever it moved by more than the sandwiches explain.
 * True when one moved. */
bool offsets_renew(bool known_only);
/* Whether kind's offset has been published (CLOCK_OFFSET_NONE: always). */
bool offsets_known(enum clock_offset_kind kind);

#endif
