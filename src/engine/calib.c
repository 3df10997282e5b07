/* Calibration arithmetic: fit, continue and bend per-CPU lines.
 *
 * Each refresh continues the published line from where its readers are and
 * bends it so that the error measured now is paid back by the next sample;
 * readers therefore never see a jump. The slope itself comes from two
 * samples one interval apart, so a 25 ns sandwich over 5 s is ~5 ppb, and is
 * learned at every sample: the kernel's rate moves whenever NTP slews it. */
#include "config.h"

#include "calib.h"

#include <string.h>

unsigned calib_narrowest(const struct calib_sample *samples, unsigned n)
{
	unsigned best = 0;

	for (unsigned i = 1; i < n; i++)
		if (samples[i].width_ns < samples[best].width_ns)
			best = i;
	return best;
}

uint64_t calib_mult_from(uint64_t dns, uint64_t dticks)
{
	if (dticks == 0 || dns >= dticks)
		return 0;
	return (uint64_t)(((unsigned __int128)dns << 64) / dticks);
}

void calib_cpu_reset(struct calib_cpu *cpu)
{
	memset(cpu, 0, sizeof *cpu);
}

/* A line of slope mult through (tsc, ns). */
static struct calib_line calib_line_through(uint64_t mult, uint64_t tsc, uint64_t ns)
{
	struct calib_line line = { .mult = mult, .offset = 0 };

	line.offset = ns - calib_line_eval(line, tsc);
	return line;
}

/* |a - b| / b in parts per million, saturating. */
static uint64_t calib_relative_ppm(uint64_t a, uint64_t b)
{
	uint64_t diff = a > b ? a - b : b - a;

	if (b == 0)
		return UINT64_MAX;
	return (uint64_t)(((unsigned __int128)diff * 1000000u) / b);
}

/* |v|, for an error that may be negative. */
static uint64_t calib_abs_ns(int64_t v)
{
	return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
}

/* Forgets the line's history and starts again from sample, keeping the
 * learned slope: after a discontinuity the old anchor says nothing, and the
 * rate measured across the jump contains it. */
static enum calib_outcome calib_cpu_step(struct calib_cpu *cpu, const struct calib_sample *sample)
{
	cpu->line = calib_line_through(cpu->slope_mult, sample->tsc, sample->ns);
	cpu->anchor = *sample;
	return CALIB_STEPPED;
}

enum calib_outcome calib_cpu_restart(struct calib_cpu *cpu, const struct calib_sample *sample)
{
	if (sample->width_ns > CALIB_MAX_WIDTH_NS)
		return CALIB_REJECTED;
	if (cpu->line.mult == 0) {
		cpu->anchor = *sample;
		cpu->has_anchor = true;
		return CALIB_NEED_MORE;
	}
	cpu->last_error_ns = (int64_t)(sample->ns - calib_line_eval(cpu->line, sample->tsc));
	return calib_cpu_step(cpu, sample);
}

/* Whether the rate measured is one the kernel's clock can run at, given the
 * rate learned before: further away, the two clocks did not run together. */
static bool calib_rate_plausible(uint64_t measured, uint64_t learned)
{
	return learned == 0 || calib_relative_ppm(measured, learned) <= CALIB_MAX_RATE_CHANGE_PPM;
}

/* The rate from cpu's anchor to sample, or 0 when the pair says nothing
 * about it: the TSC went back or stood still, the kernel's clock did not
 * advance, or advanced by more nanoseconds than there were ticks. */
static uint64_t calib_measured_mult(const struct calib_cpu *cpu, const struct calib_sample *sample)
{
	if (!cpu->has_anchor || sample->tsc <= cpu->anchor.tsc || sample->ns <= cpu->anchor.ns)
		return 0;
	return calib_mult_from(sample->ns - cpu->anchor.ns, sample->tsc - cpu->anchor.tsc);
}

bool calib_slope_estimate(const struct calib_cpu *cpu, const struct calib_sample *sample,
			  uint64_t *mult, uint64_t *uncertainty_ppb)
{
	uint64_t measured;

	if (sample->width_ns > CALIB_MAX_WIDTH_NS)
		return false;
	measured = calib_measured_mult(cpu, sample);
	/* A rate no kernel runs at is a discontinuity, not an estimate of the
	 * rate (calib_cpu_update_at steps such a line). */
	if (measured == 0 || !calib_rate_plausible(measured, cpu->slope_mult))
		return false;
	*mult = measured;
	*uncertainty_ppb =
	    (uint64_t)(((unsigned __int128)(cpu->anchor.width_ns + sample->width_ns) *
			1000000000u) /
		       (sample->ns - cpu->anchor.ns));
	return true;
}

/* Whether the rate measured from cpu's anchor to sample says nothing the
 * learned rate does not: its baseline is shorter than the sandwiches need
 * (a first line's, CALIB_FIRST_LINE_MAX_PPB) and it differs from the
 * learned rate by no more than their widths explain. A round called early
 * (a reader on a CPU without a line, a look that found a line off) samples
 * every CPU, some a few milliseconds after their last sample: with
 * sandwiches of a few hundred ns (a kernel clock that is a system call)
 * such a rate was seen 90 ppm off, and a line aimed a whole interval ahead
 * at it ran microseconds from the kernel's clock. A rate that moved
 * further than the noise (a slew) is learned at once. */
static bool calib_rate_within_noise(const struct calib_cpu *cpu, const struct calib_sample *sample,
				    uint64_t measured)
{
	uint64_t spread = (cpu->anchor.width_ns + sample->width_ns) / 2;
	uint64_t baseline = sample->ns - cpu->anchor.ns;
	uint64_t learned = cpu->slope_mult;
	uint64_t diff = measured > learned ? measured - learned : learned - measured;

	if (learned == 0 || (unsigned __int128)spread * 1000000000u <=
				(unsigned __int128)baseline * CALIB_FIRST_LINE_MAX_PPB)
		return false;
	/* diff / learned <= spread / baseline */
	return (unsigned __int128)diff * baseline <= (unsigned __int128)spread * learned;
}

/* The slope a line is drawn with: the machine's when it is given and agrees
 * with this CPU's own measurement within the sandwiches' noise, else the
 * CPU's own. */
static uint64_t calib_line_slope(uint64_t measured, uint64_t shared_mult)
{
	if (shared_mult == 0 ||
	    calib_relative_ppm(measured, shared_mult) > CALIB_SHARED_SLOPE_MAX_PPM)
		return measured;
	return shared_mult;
}

/* The span over which error is paid back: until the next round, due in
 * next_interval_ns, as late as the last one came (late_ns: a loaded
 * machine delays the thread's wake-ups and pins; a line still bent when a
 * late round comes has overshot, and the corrections would swing from
 * side to side), or longer where that would pay it back faster than
 * CALIB_MAX_PAYBACK_PPM. */
static uint64_t calib_payback_span_ns(uint64_t error_abs, uint64_t next_interval_ns,
				      uint64_t late_ns)
{
	unsigned __int128 span = (unsigned __int128)error_abs * 1000000u / CALIB_MAX_PAYBACK_PPM;
	unsigned __int128 until_next = (unsigned __int128)next_interval_ns + late_ns;

	if (until_next > span)
		span = until_next;
	return span > UINT64_MAX ? UINT64_MAX : (uint64_t)span;
}

/* Signed ticks times a 0.64 fraction: the product's high word. */
static int64_t calib_signed_ns(int64_t ticks, uint64_t mult)
{
	return (int64_t)(((__int128)ticks * (__int128)mult) >> 64);
}

/* A CPU's first line, through sample at the rate measured since its
 * anchor, once the two sandwiches' widths leave that rate certain enough
 * (CALIB_FIRST_LINE_MAX_PPB); until then the baseline grows. */
static enum calib_outcome calib_cpu_first_line(struct calib_cpu *cpu,
					       const struct calib_sample *sample, uint64_t measured,
					       uint64_t shared_mult)
{
	uint64_t spread = (cpu->anchor.width_ns + sample->width_ns) / 2;

	if ((unsigned __int128)spread * 1000000000u >
	    (unsigned __int128)(sample->ns - cpu->anchor.ns) * CALIB_FIRST_LINE_MAX_PPB)
		return CALIB_NEED_MORE;
	cpu->slope_mult = measured;
	cpu->line =
	    calib_line_through(calib_line_slope(measured, shared_mult), sample->tsc, sample->ns);
	cpu->anchor = *sample;
	cpu->last_error_ns = 0;
	return CALIB_FIRST_LINE;
}

/* How much later than asked sample came (0 when on time or early: the
 * watch may call a round before it is due). */
static uint64_t calib_late_ns(const struct calib_cpu *cpu, const struct calib_sample *sample)
{
	uint64_t since = sample->ns - cpu->anchor.ns;

	if (cpu->asked_interval_ns == 0 || since <= cpu->asked_interval_ns)
		return 0;
	return since - cpu->asked_interval_ns;
}

/* The rate cpu's line continues at: the learned one where measured is
 * within the noise of it, else measured, learned from a new anchor; and
 * when the next sample is asked for. */
static uint64_t calib_cpu_learn_rate(struct calib_cpu *cpu, const struct calib_sample *sample,
				     uint64_t measured, uint64_t next_interval_ns)
{
	if (calib_rate_within_noise(cpu, sample, measured)) {
		/* The learned rate and its anchor stay: the next sample measures
		 * over the longer baseline, and is asked for as if from here. */
		cpu->asked_interval_ns = sample->ns - cpu->anchor.ns + next_interval_ns;
		return cpu->slope_mult;
	}
	cpu->asked_interval_ns = next_interval_ns;
	cpu->slope_mult = measured;
	cpu->anchor = *sample;
	return measured;
}

/* Bends cpu's line toward where the kernel's clock will be, at slope, span
 * ns after sample, from where its readers are at publish_tsc; steps it onto
 * sample where no such line can be drawn. */
static enum calib_outcome calib_cpu_bend(struct calib_cpu *cpu, const struct calib_sample *sample,
					 uint64_t slope, uint64_t span, uint64_t publish_tsc)
{
	uint64_t span_ticks = calib_line_ticks_for_ns(slope, span);
	uint64_t from_tsc, from_ns, aim_tsc, aim_ns, mult;

	/* However late the publish (a loaded machine delays the round's other
	 * pins), the line starts where readers are then: starting it at the
	 * sample would step them back by the change of slope times the delay. */
	from_tsc = (int64_t)(publish_tsc - sample->tsc) > 0 ? publish_tsc : sample->tsc;
	from_ns = calib_line_eval(cpu->line, from_tsc);
	/* A line cannot run past the counter's last value (a TSC that started
	 * near it, as tests make): the aim comes no later. */
	if (span_ticks > UINT64_MAX - from_tsc)
		span_ticks = UINT64_MAX - from_tsc;
	aim_tsc = from_tsc + span_ticks;
	aim_ns = sample->ns + (uint64_t)calib_signed_ns((int64_t)(aim_tsc - sample->tsc), slope);
	if (span_ticks == 0 || aim_tsc <= from_tsc || (int64_t)(aim_ns - from_ns) <= 0)
		return calib_cpu_step(cpu, sample);
	mult = calib_mult_from(aim_ns - from_ns, aim_tsc - from_tsc);
	if (mult == 0)
		return calib_cpu_step(cpu, sample);
	cpu->line = calib_line_through(mult, from_tsc, from_ns);
	return CALIB_CONTINUED;
}

/* Continues cpu's line after sample, measured at measured since its
 * anchor: the error it finds paid back by a bend, or the line stepped onto
 * the sample where the rate is not plausible. */
static enum calib_outcome calib_cpu_continue(struct calib_cpu *cpu,
					     const struct calib_sample *sample, uint64_t measured,
					     uint64_t next_interval_ns, uint64_t shared_mult,
					     uint64_t publish_tsc)
{
	int64_t error = (int64_t)(sample->ns - calib_line_eval(cpu->line, sample->tsc));
	uint64_t late, span;

	cpu->last_error_ns = error;
	if (!calib_rate_plausible(measured, cpu->slope_mult))
		return calib_cpu_step(cpu, sample);
	late = calib_late_ns(cpu, sample);
	measured = calib_cpu_learn_rate(cpu, sample, measured, next_interval_ns);
	/* The line starts from where readers of the old line are when it is
	 * published: it meets the old line there, so readers see neither a jump
	 * nor a step back. It aims at where the kernel's clock will be, at the
	 * rate just learned, one pay-back span after that: long enough that
	 * the next round, even a late one, comes before the bend overshoots
	 * (calib_payback_span_ns). */
	span = calib_payback_span_ns(calib_abs_ns(error), next_interval_ns, late);
	return calib_cpu_bend(cpu, sample, calib_line_slope(measured, shared_mult), span,
			      publish_tsc);
}

enum calib_outcome calib_cpu_update_at(struct calib_cpu *cpu, const struct calib_sample *sample,
				       uint64_t next_interval_ns, uint64_t shared_mult,
				       uint64_t publish_tsc)
{
	bool have_line = cpu->line.mult != 0;
	uint64_t measured;

	if (sample->width_ns > CALIB_MAX_WIDTH_NS)
		return CALIB_REJECTED;
	if (cpu->narrowest_width_ns == 0 || sample->width_ns < cpu->narrowest_width_ns)
		cpu->narrowest_width_ns = sample->width_ns;

	if (!cpu->has_anchor) {
		cpu->anchor = *sample;
		cpu->has_anchor = true;
		return CALIB_NEED_MORE;
	}
	/* The TSC went backwards (reset on resume) or did not move. */
	if (sample->tsc <= cpu->anchor.tsc || sample->ns <= cpu->anchor.ns) {
		if (!have_line) {
			cpu->anchor = *sample;
			return CALIB_NEED_MORE;
		}
		return calib_cpu_step(cpu, sample);
	}
	measured = calib_measured_mult(cpu, sample);
	if (measured == 0) {
		/* More nanoseconds than ticks since the anchor: the kernel's
		 * clock jumped ahead (or the TSC is slower than 1 GHz, and no
		 * line ever forms). */
		if (!have_line)
			return CALIB_REJECTED;
		return calib_cpu_step(cpu, sample);
	}
	if (!have_line)
		return calib_cpu_first_line(cpu, sample, measured, shared_mult);
	return calib_cpu_continue(cpu, sample, measured, next_interval_ns, shared_mult,
				  publish_tsc);
}

uint64_t calib_next_interval_ns(const struct calib_cpu *cpu, const struct calib_sample *sample,
				uint64_t scheduled_ns)
{
	uint64_t measured, since, shortest, error_abs, settled, wanted;
	unsigned __int128 payback;

	if (cpu->line.mult == 0 || sample->width_ns > CALIB_MAX_WIDTH_NS)
		return scheduled_ns;
	/* The baseline a first line would need with sandwiches this wide: a
	 * shorter interval's slope is noisier than a young line's. */
	shortest = (uint64_t)(((unsigned __int128)sample->width_ns * 1000000000u +
			       CALIB_FIRST_LINE_MAX_PPB - 1) /
			      CALIB_FIRST_LINE_MAX_PPB);
	if (shortest < CALIB_MIN_INTERVAL_NS)
		shortest = CALIB_MIN_INTERVAL_NS;
	measured = calib_measured_mult(cpu, sample);
	if (measured == 0 || !calib_rate_plausible(measured, cpu->slope_mult))
		return shortest < scheduled_ns ? shortest : scheduled_ns;

	since = sample->ns - cpu->anchor.ns;
	error_abs = calib_abs_ns((int64_t)(sample->ns - calib_line_eval(cpu->line, sample->tsc)));
	settled = CALIB_SETTLED_NS + 2 * (sample->width_ns + cpu->anchor.width_ns);
	if (error_abs <= settled) {
		unsigned __int128 grown = (unsigned __int128)since * CALIB_INTERVAL_GROWTH;

		wanted = grown > UINT64_MAX ? UINT64_MAX : (uint64_t)grown;
	} else {
		payback = (unsigned __int128)error_abs * 1000000u / CALIB_PAYBACK_PPM;
		wanted = payback > UINT64_MAX ? UINT64_MAX : (uint64_t)payback;
	}
	if (wanted < shortest)
		wanted = shortest;
	return wanted < scheduled_ns ? wanted : scheduled_ns;
}

struct calib_sample calib_sample_toward(struct calib_sample sample, struct calib_sample reference,
					uint64_t mult)
{
	int64_t ticks = (int64_t)(sample.tsc - reference.tsc);
	int64_t below = (int64_t)(sample.width_ns / 2);
	int64_t above = (int64_t)(sample.width_ns - sample.width_ns / 2);
	int64_t move;
	uint64_t aimed;

	if (mult == 0)
		return sample;
	/* Signed ticks times the 0.64 fraction: the product's high word. */
	aimed = reference.ns + (uint64_t)(int64_t)(((__int128)ticks * (__int128)mult) >> 64);
	move = (int64_t)(aimed - sample.ns);
	if (move < -below)
		move = -below;
	if (move > above)
		move = above;
	sample.ns += (uint64_t)move;
	return sample;
}

bool calib_sample_agrees(struct calib_sample sample, struct calib_sample reference, uint64_t mult,
			 uint64_t slack_ns)
{
	int64_t ticks = (int64_t)(sample.tsc - reference.tsc);
	uint64_t aimed, apart;

	if (mult == 0)
		return false;
	/* Both midpoints, as calib_sample_toward aims them. */
	aimed = reference.ns + (uint64_t)(int64_t)(((__int128)ticks * (__int128)mult) >> 64);
	apart = aimed > sample.ns ? aimed - sample.ns : sample.ns - aimed;
	return apart <= sample.width_ns / 2 + reference.width_ns / 2 + slack_ns;
}

uint64_t calib_first_line_due_ns(const struct calib_cpu *cpu)
{
	unsigned __int128 baseline;

	if (!cpu->has_anchor || cpu->line.mult != 0)
		return 0;
	/* The first-line rule below, solved for the baseline: spread (the
	 * anchor's width, for a sandwich as wide) over the baseline at most
	 * CALIB_FIRST_LINE_MAX_PPB; rounded up. */
	baseline =
	    ((unsigned __int128)cpu->anchor.width_ns * 1000000000u + CALIB_FIRST_LINE_MAX_PPB - 1) /
	    CALIB_FIRST_LINE_MAX_PPB;
	return cpu->anchor.ns + (uint64_t)baseline;
}

bool calib_realtime_offset(const struct calib_offset_sample *samples, unsigned n,
			   uint64_t *offset_ns, uint64_t *width_ns)
{
	bool found = false;
	uint64_t best_width = UINT64_MAX;

	for (unsigned i = 0; i < n; i++) {
		const struct calib_offset_sample *s = &samples[i];
		uint64_t width, mid;

		if (s->mono_after < s->mono_before)
			continue;
		width = s->mono_after - s->mono_before;
		if (width >= best_width)
			continue;
		mid = s->mono_before + width / 2;
		best_width = width;
		*offset_ns = s->real - mid;
		found = true;
	}
	if (found)
		*width_ns = best_width;
	return found;
}
