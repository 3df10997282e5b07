/* One calibration round: the refresh thread pins itself in turn to every
 * CPU a thread of the program runs on (placement.h), takes sandwiches of
 * the kernel's clock of each kind of line (CLOCK_MONOTONIC, then
 * CLOCK_MONOTONIC_RAW: enum clock_lines) around a counter read taken the
 * way this CPU allows, aims the narrowest with the calibration arithmetic
 * (calib.h), and has lines.c draw and publish the lines that come out. */
#ifndef FASTTIME_ROUND_H
#define FASTTIME_ROUND_H

#include <stdbool.h>
#include <stdint.h>

#include "calib.h"
#include "cpu.h"
#include "lines.h"
#include "sandwich.h"

/* Sandwiches taken per CPU per round; the narrowest is kept. */
#define ROUND_SANDWICHES 15u
_Static_assert(ROUND_SANDWICHES <= SANDWICH_MAX_PER_VISIT, "a visit's sandwiches fit");
/* The first intervals are short, so that the fast path starts soon, and grow
 * by CALIB_INTERVAL_GROWTH until they reach the configured one; the first is
 * the shortest a calibration allows. */
#define ROUND_FIRST_INTERVAL_NS CALIB_MIN_INTERVAL_NS

/* A CPU whose counter agreed with the others at its last visit is visited
 * at least every this many rounds; between, a round carries its line on
 * the round's narrowest sample (round_visit_needed). */
#define ROUND_VISIT_EVERY 16u
/* How far beyond half of each sandwich two CPUs' samples may place the
 * kernel's clock and still count as agreeing (calib_sample_agrees). */
#define ROUND_AGREE_SLACK_NS 100u

/* What a round found. */
struct round_result {
	unsigned with_line; /* CPUs whose line answers readers */
	/* CPUs the round could pin to, or left to their validity (skipped) */
	unsigned usable;
	/* Every answering line continued within the clocksource's probation
	 * bounds (evidence_cpu_steady); false when none answers. */
	bool steady;
	uint64_t narrowest_ns;	   /* the narrowest sandwich; UINT64_MAX: none */
	uint64_t next_interval_ns; /* the next round is due this long after this one began */
};

/* Maps what rounds write, once: their samples and every CPU's lines
 * (lines_map). Called where lines are first calibrated (the refresh
 * thread's start, the tools' calibration): a process that never calibrates
 * maps none of it. False where the memory cannot be mapped; no round may
 * run then. */
bool round_map(void);

/* One pass over the CPUs a thread of the program runs on (the tools:
 * every online CPU), in the calling thread. The next round is due
 * scheduled_ns after it, or sooner where a line is paying back an error
 * (calib_next_interval_ns). restart: the counter and the kernel's clock
 * parted since the last (a look saw it): every line starts over at its
 * sample. */
struct round_result round_run(uint64_t scheduled_ns, bool restart);
/* The interval after round number round (0-based). */
uint64_t round_interval_after(unsigned round, uint64_t configured_ns);
/* When the next round is due: scheduled_ns, or sooner when a CPU without a
 * line can have its first one sooner (its anchor's sandwich over the
 * baseline the first-line rule needs, plus a tenth), or when a CPU whose
 * line a skipped visit withdrew may be visited again. */
uint64_t round_next_deadline(uint64_t scheduled_ns);
/* Whether a round visits the CPU whose state is c (pins the thread there
 * and samples it), rather than carry its line on the round's narrowest
 * sample: always the CPU the round begins on (here), which costs no move,
 * and every CPU unless carrying is allowed this round (may_carry: the
 * kernel itself reads the counter, no discontinuity to restart from);
 * else a CPU whose line does not answer, whose counter did not agree with
 * the others at its last visit (or a look found its line off since), or
 * that was carried ROUND_VISIT_EVERY - 1 rounds in a row. */
bool round_visit_needed(const struct lines_cpu *c, bool here, bool may_carry);
/* In a fork child: a round the fork cut short may have left a CPU's state
 * half-written; the calibration starts over rather than trust it. */
void round_after_fork(void);

#endif
