/* CLOCK_MONOTONIC_RAW's own lines. NTP never slews CLOCK_MONOTONIC_RAW, so
 * lines made from the monotonic ones would carry every slew into it: each
 * round samples it on every CPU it visits, right after that CPU's
 * monotonic sandwiches, draws the raw lines with their own machine slope,
 * aimed at their own narrowest sandwich (calib.h), and publishes them in
 * the table's raw records. lines.h keeps them beside the monotonic ones.
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
#include "placement.h"

/* What a round gathers of the raw lines, CPU by CPU. */
struct raw_lines_round {
	unsigned long sampled[PLACEMENT_MASK_WORDS];
	struct calib_sample narrowest;
	uint64_t shared_mult; /* the machine's raw slope this round; 0: none */
	uint64_t best_uncertainty;
};

void raw_lines_round_begin(struct raw_lines_round *round);
/* Takes cpu's raw sample, of n sandwiches, the caller pinned there. */
void raw_lines_visit(struct raw_lines_round *round, uint32_t cpu, unsigned n);
/* Aims each sample at the round's narrowest; returns the soonest any raw
 * line wants the next round, at most scheduled_ns (calib_next_interval_ns). */
uint64_t raw_lines_aim(struct raw_lines_round *round, uint64_t scheduled_ns, bool restart);
/* After cpu's monotonic line was renewed by the round: its raw line moves
 * on to its sample, or restarts on it (restart: a discontinuity, or its
 * readers had left it), and is published; withdrawn where it has no
 * sample or no line. */
void raw_lines_update(const struct raw_lines_round *round, uint32_t cpu, uint64_t next_interval_ns,
		      bool restart);
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
