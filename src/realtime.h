/* CLOCK_REALTIME minus CLOCK_MONOTONIC, as the refresh thread measures and
 * publishes it (table_shared.realtime_offset_ns): it changes only when the
 * clock is set, or the machine resumes from a suspend. */
#ifndef FASTTIME_REALTIME_H
#define FASTTIME_REALTIME_H

#include <stdbool.h>

#include "calib.h"

/* Fills samples with monotonic / realtime / monotonic sandwiches of libc's
 * clocks: the refresh thread's, and a reader's over stale lines. */
void realtime_offset_samples(struct calib_offset_sample *samples, unsigned n);
/* Measures the offset: publishes it the first time, and after that
 * whenever it moved by more than the sandwiches explain. True when it
 * moved. */
bool realtime_renew_offset(void);
/* Whether the offset has been published once. */
bool realtime_offset_known(void);

#endif
