/* The calibration arithmetic: samples in, lines out. No system calls and no
 * hardware access, so tests drive it with a fake TSC and a fake kernel clock. */
#ifndef FASTTIME_CALIB_H
#define FASTTIME_CALIB_H

#include <stdbool.h>
#include <stdint.h>

/* ns = mulhi64(tsc, mult) + offset, all modulo 2^64. mult is nanoseconds per
 * tick as a 0.64 fixed-point fraction: one multiply gives the product's high
 * word with no shift, and the fraction has 64 bits of precision. It requires
 * a TSC faster than 1 GHz, which every invariant TSC we know of is. A mult of
 * zero means "no line": readers answer with libc. */
struct calib_line {
	uint64_t mult;
	uint64_t offset;
};

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
};

enum calib_outcome {
	CALIB_NEED_MORE,  /* first sample kept as anchor; no line yet */
	CALIB_FIRST_LINE, /* a line exists for the first time */
	CALIB_CONTINUED,  /* the line continues, bent to absorb the error */
	CALIB_STEPPED,	  /* the error was too large to absorb: the line jumps */
	CALIB_REJECTED,	  /* the sample was unusable; the line and anchor are unchanged */
};

/* The largest rate at which an error is paid back, in parts per million:
 * larger errors are stepped, not slewed (NTP's own limit is 500 ppm). */
#define CALIB_MAX_SLEW_PPM 500
/* A slope that moves by more than this between samples means the two clocks
 * did not run together (suspend, a stopped VM): re-anchor instead of fitting. */
#define CALIB_MAX_SLOPE_CHANGE_PPM 1000
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

/* Ticks that fit in ns at mult's rate. */
uint64_t calib_ticks_for_ns(uint64_t mult, uint64_t ns);

/* mult for dns nanoseconds over dticks ticks; 0 when the rate is not below
 * one nanosecond per tick, or dticks is 0. */
uint64_t calib_mult_from(uint64_t dns, uint64_t dticks);

void calib_cpu_reset(struct calib_cpu *cpu);

/* Takes the next sample. next_interval_ns is how long until the following
 * sample: the error found now is paid back over that span. */
enum calib_outcome calib_cpu_update(struct calib_cpu *cpu, const struct calib_sample *sample,
				    uint64_t next_interval_ns);

/* The same, with the machine's slope for this round (0 for none): every
 * CPU's TSC ticks at one rate, so lines drawn with one slope disagree only
 * by their offsets, which do not grow between rounds. Per-CPU slopes carry
 * each CPU's sandwich noise: a young line's few ppm, times a round's
 * length, put two CPUs' lines hundreds of nanoseconds apart, and a
 * timestamp handed between threads would run backwards. The CPU's own
 * measurement is still kept (slope_mult) and used when it disagrees with
 * the machine's by more than CALIB_SHARED_SLOPE_MAX_PPM. */
enum calib_outcome calib_cpu_update_shared(struct calib_cpu *cpu, const struct calib_sample *sample,
					   uint64_t next_interval_ns, uint64_t shared_mult);

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

/* When (kernel ns) a CPU that has an anchor but no line can have its first
 * line, if the next sandwich is as wide as the anchor's; 0 when it has a
 * line or no anchor. Wide sandwiches (a kernel clock that is a system
 * call) need a longer baseline, and the refresh thread wakes for it rather
 * than wait out its fixed schedule. */
uint64_t calib_first_line_due_ns(const struct calib_cpu *cpu);

/* The realtime offset (CLOCK_REALTIME minus CLOCK_MONOTONIC) from readings
 * taken as monotonic, realtime, monotonic: the midpoint of the narrowest. */
struct calib_offset_sample {
	uint64_t mono_before;
	uint64_t real;
	uint64_t mono_after;
};
bool calib_realtime_offset(const struct calib_offset_sample *samples, unsigned n,
			   uint64_t *offset_ns, uint64_t *width_ns);

/* What a new measurement of the offset says about the published one. */
enum calib_clock_set {
	CALIB_CLOCK_UNMEASURED, /* no valid sandwich, or none narrow enough to judge */
	CALIB_CLOCK_UNCHANGED,	/* within threshold_ns of the published offset */
	CALIB_CLOCK_SET,	/* moved further: the clock was set, or the machine
				 * resumed (CLOCK_MONOTONIC stops in suspend) */
};

/* Measures the offset from samples and compares it with published_ns,
 * modulo 2^64; fills *offset_ns and *moved_ns (new minus published) unless
 * the answer is CALIB_CLOCK_UNMEASURED. */
enum calib_clock_set calib_realtime_check(const struct calib_offset_sample *samples, unsigned n,
					  uint64_t published_ns, uint64_t threshold_ns,
					  uint64_t *offset_ns, int64_t *moved_ns);

#endif
