/* The calibration's one measurement: a kernel clock read on each side of a
 * counter read, the counter read the way this machine's readers read it
 * (verdict_sample_reading). Rounds (round.c, raw_lines.c) and the watch's
 * looks (look.c) take them; calib.c and watch.c judge them. */
#ifndef FASTTIME_SANDWICH_H
#define FASTTIME_SANDWICH_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "calib.h"
#include "cpu.h"

/* The most sandwiches one visit takes. */
#define SANDWICH_MAX_PER_VISIT 16u

/* One sandwich of the counter between two reads of clock, on whichever
 * CPU the caller is (in *stamp); false when the clock ran back between, or
 * could not be read (a kernel without it). */
bool sandwich_take(clockid_t clock, struct calib_sample *sample, struct cpu_stamp *stamp);
/* The narrowest of n sandwiches (n at most SANDWICH_MAX_PER_VISIT) taken
 * on cpu, where the caller is pinned, and the node the counter named;
 * false when none was taken there (the caller was moved each time). */
bool sandwich_narrowest_on(clockid_t clock, uint32_t cpu, unsigned n, struct calib_sample *best,
			   uint32_t *node);

#endif
