/* Calibration arithmetic: fit, continue and bend per-CPU lines.
 *
 * Each refresh continues the published line at the sample's TSC value and
 * bends its slope so that the error measured now is paid back over the next
 * interval; readers therefore never see a jump. The slope itself comes from
 * two samples one interval apart, so a 25 ns sandwich over 5 s is ~5 ppb. */
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

uint64_t calib_ticks_for_ns(uint64_t mult, uint64_t ns)
{
	unsigned __int128 ticks;

	if (mult == 0)
		return 0;
	ticks = ((unsigned __int128)ns << 64) / mult;
	return ticks > UINT64_MAX ? UINT64_MAX : (uint64_t)ticks;
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

/* Forgets the line's history and starts again from sample, keeping the
 * measured slope: after a discontinuity the old anchor says nothing. */
static enum calib_outcome calib_cpu_step(struct calib_cpu *cpu, const struct calib_sample *sample)
{
	cpu->line = calib_line_through(cpu->slope_mult, sample->tsc, sample->ns);
	cpu->anchor = *sample;
	return CALIB_STEPPED;
}

enum calib_outcome calib_cpu_update(struct calib_cpu *cpu, const struct calib_sample *sample,
				    uint64_t next_interval_ns)
{
	return calib_cpu_update_shared(cpu, sample, next_interval_ns, 0);
}

bool calib_slope_estimate(const struct calib_cpu *cpu, const struct calib_sample *sample,
			  uint64_t *mult, uint64_t *uncertainty_ppb)
{
	uint64_t dns, measured;

	if (!cpu->has_anchor || sample->width_ns > CALIB_MAX_WIDTH_NS ||
	    sample->tsc <= cpu->anchor.tsc || sample->ns <= cpu->anchor.ns)
		return false;
	dns = sample->ns - cpu->anchor.ns;
	measured = calib_mult_from(dns, sample->tsc - cpu->anchor.tsc);
	if (measured == 0)
		return false;
	/* A slope that jumped since the last one is a discontinuity, not an
	 * estimate of the rate (calib_cpu_update steps such a line). */
	if (cpu->slope_mult != 0 &&
	    calib_relative_ppm(measured, cpu->slope_mult) > CALIB_MAX_SLOPE_CHANGE_PPM)
		return false;
	*mult = measured;
	*uncertainty_ppb =
	    (uint64_t)(((unsigned __int128)(cpu->anchor.width_ns + sample->width_ns) *
			1000000000u) /
		       dns);
	return true;
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

enum calib_outcome calib_cpu_update_shared(struct calib_cpu *cpu, const struct calib_sample *sample,
					   uint64_t next_interval_ns, uint64_t shared_mult)
{
	uint64_t measured, slope, predicted, next_ticks;
	int64_t error;
	unsigned __int128 bend;
	bool have_line = cpu->line.mult != 0;

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

	measured = calib_mult_from(sample->ns - cpu->anchor.ns, sample->tsc - cpu->anchor.tsc);
	if (measured == 0) {
		/* More nanoseconds than ticks since the anchor: the kernel's
		 * clock jumped ahead (or the TSC is slower than 1 GHz, and no
		 * line ever forms). */
		if (!have_line)
			return CALIB_REJECTED;
		return calib_cpu_step(cpu, sample);
	}

	if (!have_line) {
		uint64_t spread = (cpu->anchor.width_ns + sample->width_ns) / 2;

		if ((unsigned __int128)spread * 1000000000u >
		    (unsigned __int128)(sample->ns - cpu->anchor.ns) * CALIB_FIRST_LINE_MAX_PPB)
			return CALIB_NEED_MORE;
		cpu->slope_mult = measured;
		cpu->line = calib_line_through(calib_line_slope(measured, shared_mult), sample->tsc,
					       sample->ns);
		cpu->anchor = *sample;
		cpu->last_error_ns = 0;
		return CALIB_FIRST_LINE;
	}

	predicted = calib_line_eval(cpu->line, sample->tsc);
	error = (int64_t)(sample->ns - predicted);
	cpu->last_error_ns = error;

	/* The two clocks did not advance together since the anchor: keep the
	 * slope we trust and restart the line at this sample. The measured
	 * slope contains the jump, so it must not be kept. */
	if (calib_relative_ppm(measured, cpu->slope_mult) > CALIB_MAX_SLOPE_CHANGE_PPM)
		return calib_cpu_step(cpu, sample);

	/* Too large to pay back at a bounded slew rate over the next interval. */
	if ((uint64_t)(error < 0 ? -error : error) >
	    next_interval_ns / 1000000u * CALIB_MAX_SLEW_PPM)
		return calib_cpu_step(cpu, sample);
	cpu->slope_mult = measured;
	cpu->anchor = *sample;
	slope = calib_line_slope(measured, shared_mult);

	/* Continue from where readers are now, aiming at the kernel's clock one
	 * interval ahead: slope + error / next_ticks, where the slope is the
	 * machine's (calib.h) or this CPU's own. */
	next_ticks = calib_ticks_for_ns(slope, next_interval_ns);
	if (next_ticks == 0)
		return calib_cpu_step(cpu, sample);
	if (error >= 0) {
		bend = ((unsigned __int128)(uint64_t)error << 64) / next_ticks;
		if (bend > UINT64_MAX - slope)
			return calib_cpu_step(cpu, sample);
		cpu->line = calib_line_through(slope + (uint64_t)bend, sample->tsc, predicted);
	} else {
		bend = ((unsigned __int128)(uint64_t)(-error) << 64) / next_ticks;
		if (bend >= slope)
			return calib_cpu_step(cpu, sample);
		cpu->line = calib_line_through(slope - (uint64_t)bend, sample->tsc, predicted);
	}
	return CALIB_CONTINUED;
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

/* A sandwich wider than the threshold cannot tell a step of the threshold
 * from its own width: it judges nothing. */
enum calib_clock_set calib_realtime_check(const struct calib_offset_sample *samples, unsigned n,
					  uint64_t published_ns, uint64_t threshold_ns,
					  uint64_t *offset_ns, int64_t *moved_ns)
{
	uint64_t offset = 0, width = 0;
	int64_t moved;

	if (!calib_realtime_offset(samples, n, &offset, &width) || width > threshold_ns)
		return CALIB_CLOCK_UNMEASURED;
	moved = (int64_t)(offset - published_ns);
	*offset_ns = offset;
	*moved_ns = moved;
	if (moved > (int64_t)threshold_ns || moved < -(int64_t)threshold_ns)
		return CALIB_CLOCK_SET;
	return CALIB_CLOCK_UNCHANGED;
}
