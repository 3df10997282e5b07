/* The calibration arithmetic: samples in, lines out. No system calls and no
 * hardware access, so tests drive it with a fake TSC and a fake kernel clock. */
#ifndef FASTTIME_CALIB_H
#define FASTTIME_CALIB_H

#include <stdbool.h>
#include <stdint.h>

#include "calib_line.h"

/* One sandwich: kernel clock, TSC, kernel clock. ns is the midpoint of the two
 * kernel readings; width is the distance between them. */
struct calib_sample {
	uint64_t tsc;
	uint64_t ns;
	uint64_t width_ns;
};

/* The state of one CPU's calibration, owned by the refresh thread. */
struct calib_cpu {
	bool has_anchor; /* a previous sample to measure a slope from */
	struct calib_sample anchor;
	uint64_t slope_mult;	     /* the measured ns per tick, as in calib_line */
	struct calib_line line;	     /* what is published for readers */
	int64_t last_error_ns;	     /* kernel minus line at the last sample */
	uint64_t narrowest_width_ns; /* the narrowest sandwich ever seen here */
	uint64_t asked_interval_ns;  /* the next_interval_ns of the last update */
};

enum calib_outcome {
	CALIB_NEED_MORE,  /* first sample kept as anchor; no line yet */
	CALIB_FIRST_LINE, /* a line exists for the first time */
	CALIB_CONTINUED,  /* the line continues, bent to pay the error back */
	CALIB_STEPPED,	  /* the clocks did not run together: the line jumps */
	CALIB_REJECTED,	  /* the sample was unusable; the line and anchor are unchanged */
};

/* Following the kernel's rate.
 *
 * The kernel runs CLOCK_MONOTONIC at the TSC's rate times its frequency
 * correction, which the tick (adjtimex) can move anywhere within +-10 %:
 * chrony slews at up to 83,333 ppm, ntpd at 500 ppm. Every update learns the
 * rate from the anchor to the sample, whatever the outcome (except where the
 * baseline is too short for the sandwiches and the rate is within their
 * noise of the learned one: that rate and its anchor stay), and continues the
 * line from where readers are, bent so that the error found now is paid back
 * by the next sample. A backward error is paid back by running the line
 * slower (never stopped: at least 80 % of the rate), never by stepping it
 * back, so a reader's clamp never holds time still.
 *
 * Only a rate change beyond CALIB_MAX_RATE_CHANGE_PPM is a discontinuity
 * (suspend, a paused VM, a TSC reset): the two clocks did not advance
 * together, the measured rate contains the jump, and the line steps onto the
 * sample with the rate it had.
 *
 * Bounds. Let t1 < t2 be the last two samples and t > t2 now; e1 the error
 * found at t1; R the spread of the kernel's rate since the anchor of t1's
 * slope, as a fraction of its slowest rate there; n the sandwiches' noise.
 * Then
 *   |line - kernel| <= R x (t - t1 + |e1|) + n,
 * that is, while the kernel slews at R from a steady rate, R times the time
 * since the sample before last (the R x |e1| term is the pay-back's own
 * error: it converts the span to ticks at the rate just learned, which is
 * off by up to R; 0.5 % of e1 for a 5,000 ppm slew). n is 1 us with
 * sandwiches of 25 ns, and with sandwiches of 2 us whose midpoints lie
 * anywhere within them, 1 us + 6 widths (a short interval's slope, extended
 * over one four times as long). This holds as long as each error is paid
 * back within the interval after it: calib_next_interval_ns asks for such
 * intervals (up to errors of CALIB_MAX_PAYBACK_PPM x the schedule); a fixed
 * schedule gives them while intervals do not shrink, for every change
 * within the kernel's range. Once the rate holds still, the error is back
 * within n from the second sample after the first one that follows the
 * change (that one's rate mixes the old and the new). Readers' time never
 * goes back at a publish (calib_cpu_update_at) and never stands still: the
 * line runs at 80 % of the rate or more. A discontinuity steps the line
 * onto its sample, back too if the TSC ran on while the kernel did not. */

/* A measured rate that moved further than this from the learned one means
 * the two clocks did not run together: the kernel's whole range (+-10 %,
 * 200,000 ppm end to end) plus a margin for a short interval's noise. */
#define CALIB_MAX_RATE_CHANGE_PPM 250000
/* The fastest an error is paid back, as a fraction of the rate: a change
 * across the kernel's whole range is paid back within one interval as long
 * as the intervals do not shrink, and the line still runs at 80 % or more. */
#define CALIB_MAX_PAYBACK_PPM 200000
/* The pay-back rate calib_next_interval_ns aims for: sample again when the
 * error would be paid back at this rate, half the limit. */
#define CALIB_PAYBACK_PPM 100000
/* The shortest interval calib_next_interval_ns asks for (the refresh
 * thread's first interval); sandwiches wide enough to need a longer
 * baseline for their slope get the first line's baseline instead. */
#define CALIB_MIN_INTERVAL_NS 10000000ull
/* An error within this (plus the two sandwiches' widths, twice) is noise,
 * not a rate change: the interval may grow again. */
#define CALIB_SETTLED_NS 1000
/* How much longer each interval may be than the last while the line
 * settles: the slope of a short interval is noisier, and the noise grows
 * with the span it is extended over. The refresh schedule's own growth. */
#define CALIB_INTERVAL_GROWTH 4
/* A first line is published only when the two sandwiches' widths leave its
 * slope uncertain by at most this many parts per billion; until then the
 * baseline grows (under load, sandwiches widen and the wait lengthens). */
#define CALIB_FIRST_LINE_MAX_PPB 4000
/* A CPU whose own slope differs from the machine's by more than this keeps
 * its own: sandwich noise explains a few ppm in a young line, not more. */
#define CALIB_SHARED_SLOPE_MAX_PPM 10
/* A sandwich wider than this cannot place the TSC reading precisely. */
#define CALIB_MAX_WIDTH_NS 20000

/* ns for tsc on line; the read path's arithmetic, here for the tests. */
static inline uint64_t calib_line_eval(struct calib_line line, uint64_t tsc)
{
	return (uint64_t)(((unsigned __int128)tsc * line.mult) >> 64) + line.offset;
}

/* Index of the narrowest of n samples (n > 0). */
unsigned calib_narrowest(const struct calib_sample *samples, unsigned n);

/* mult for dns nanoseconds over dticks ticks; 0 when the rate is not below
 * one nanosecond per tick, or dticks is 0. */
uint64_t calib_mult_from(uint64_t dns, uint64_t dticks);

void calib_cpu_reset(struct calib_cpu *cpu);

/* Takes the next sample. next_interval_ns is how long until the following
 * sample: the error found now is paid back over that span, or over a longer
 * one where that would mean paying back faster than CALIB_MAX_PAYBACK_PPM.
 *
 * shared_mult is the machine's slope for this round (0 for none): every
 * CPU's TSC ticks at one rate, so lines drawn with one slope disagree only
 * by their offsets, which do not grow between rounds. Per-CPU slopes carry
 * each CPU's sandwich noise: a young line's few ppm, times a round's
 * length, put two CPUs' lines hundreds of nanoseconds apart, and a
 * timestamp handed between threads would run backwards. The CPU's own
 * measurement is still kept (slope_mult) and used when it disagrees with
 * the machine's by more than CALIB_SHARED_SLOPE_MAX_PPM.
 *
 * The line is published only when the TSC reads publish_tsc (after the
 * round's other samples): the new line starts from where readers of the
 * old one are then, not at the sample, so that a change of slope does not
 * step readers back by the slopes' difference times the delay. A
 * publish_tsc before the sample's counter means the sample's. */
enum calib_outcome calib_cpu_update_at(struct calib_cpu *cpu, const struct calib_sample *sample,
				       uint64_t next_interval_ns, uint64_t shared_mult,
				       uint64_t publish_tsc);

/* Forgets the anchor and steps the line onto sample, keeping the learned
 * rate (or, without a line, anchors there): for a discontinuity the
 * refresh thread saw between rounds (watch.h), which a rate measured over a
 * whole interval could take for a slew. */
enum calib_outcome calib_cpu_restart(struct calib_cpu *cpu, const struct calib_sample *sample);

/* How soon (ns after sample) the sample after this one is needed, at most
 * scheduled_ns, for cpu about to take sample: when the error sample finds
 * would be paid back at CALIB_PAYBACK_PPM (never sooner than
 * CALIB_MIN_INTERVAL_NS, or the baseline sample's width needs for its
 * slope), and while the line settles after a rate change no more than
 * CALIB_INTERVAL_GROWTH times the interval that ended at sample. After a
 * discontinuity, the shortest. The refresh thread passes the least of its
 * CPUs' answers to every update of the round and wakes after it. */
uint64_t calib_next_interval_ns(const struct calib_cpu *cpu, const struct calib_sample *sample,
				uint64_t scheduled_ns);

/* This CPU's slope from its anchor to sample, and how uncertain the
 * sandwiches' widths leave it (parts per billion); false when the pair says
 * nothing about the rate (no anchor, a jump, a rejected sample). The
 * refresh thread takes the least uncertain as the machine's slope. */
bool calib_slope_estimate(const struct calib_cpu *cpu, const struct calib_sample *sample,
			  uint64_t *mult, uint64_t *uncertainty_ppb);

/* sample, with its midpoint moved as close as its own sandwich allows to
 * where reference's sample, extended at mult, puts the kernel's clock at
 * sample's counter value. A sandwich only says that the kernel's clock lay
 * somewhere between its two readings; within that, every CPU's line is
 * aimed at the value of the round's narrowest sandwich, so that a CPU
 * whose sandwiches were all widened (a preemption, a busy host) still
 * agrees with the others, and lines part only where the CPUs' counters
 * really differ by more than a sandwich. Unchanged when mult is 0. */
struct calib_sample calib_sample_toward(struct calib_sample sample, struct calib_sample reference,
					uint64_t mult);
/* Whether reference's sample, extended at mult to sample's counter value,
 * puts the kernel's clock within half of each sandwich plus slack_ns of
 * sample's midpoint: the counter sample was read from agrees with the one
 * reference was read from, as far as the two sandwiches can tell. False
 * when mult is 0. */
bool calib_sample_agrees(struct calib_sample sample, struct calib_sample reference, uint64_t mult,
			 uint64_t slack_ns);

/* When (kernel ns) a CPU that has an anchor but no line can have its first
 * line, if the next sandwich is as wide as the anchor's; 0 when it has a
 * line or no anchor. Wide sandwiches (a kernel clock that is a system
 * call) need a longer baseline, and the refresh thread wakes for it rather
 * than wait out its fixed schedule. */
uint64_t calib_first_line_due_ns(const struct calib_cpu *cpu);

/* A clock's offset (CLOCK_REALTIME, CLOCK_BOOTTIME or CLOCK_TAI minus
 * CLOCK_MONOTONIC) from readings taken as monotonic, that clock (in real,
 * named for the first of them), monotonic: the midpoint of the narrowest. */
struct calib_offset_sample {
	uint64_t mono_before;
	uint64_t real;
	uint64_t mono_after;
};
bool calib_realtime_offset(const struct calib_offset_sample *samples, unsigned n,
			   uint64_t *offset_ns, uint64_t *width_ns);

#endif
