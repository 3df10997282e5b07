/* CLOCK_MONOTONIC_RAW's own lines. NTP never slews CLOCK_MONOTONIC_RAW, so
 * lines made from the monotonic ones would carry every slew into it: each
 * round (round.c, the same steps for both kinds of line, enum clock_lines)
 * samples it on every CPU it visits, right after that CPU's monotonic
 * sandwiches, draws the raw lines with their own machine slope, aimed at
 * their own narrowest sandwich (calib.h), and lines.c publishes them in the
 * table's raw records. This file holds what only the raw lines ask: whether
 * they answer, whether CLOCK_MONOTONIC_RAW may be chosen, the look.
 *
 * They answer under the monotonic lines' validity, and only where the
 * CPU's monotonic line answers: what ends that validity (a suspend, a
 * paused VM, a starved thread) parts the counter from both kernel clocks
 * at once, and a raw line restarts whenever its readers left it. The
 * kernel never moves CLOCK_MONOTONIC_RAW's rate, so between rounds a raw
 * line keeps within its sandwiches' noise; each look checks it anyway. */
#ifndef FASTTIME_RAW_LINES_H
#define FASTTIME_RAW_LINES_H

#include <stdbool.h>
#include <stdint.h>

#include "calib.h"
#include "lines.h"

/* Whether c's raw line answers readers. */
bool raw_lines_cpu_answers(const struct lines_cpu *c);
/* Whether every CPU whose monotonic line answers has a raw line that
 * answers: only then may CLOCK_MONOTONIC_RAW be chosen (api_choice.c). */
bool raw_lines_ready(void);
/* The watch's look at cpu's raw line, of n sandwiches taken where the
 * caller is: false when it is off CLOCK_MONOTONIC_RAW by more than the
 * watch's tolerance, and then every raw line is withdrawn until the round
 * due restarts it. */
bool raw_lines_look(uint32_t cpu, unsigned n);

#endif
