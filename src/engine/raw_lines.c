/* CLOCK_MONOTONIC_RAW's own lines (raw_lines.h). */
#include "config.h"

#include "raw_lines.h"

#include <string.h>
#include <time.h>

#include "debug.h"
#include "sandwich.h"
#include "watch.h"

/* One round's raw samples, by CPU (too large for the thread's stack). */
static struct calib_sample raw_lines_samples[CPU_MAX_CPUS];

void raw_lines_round_begin(struct raw_lines_round *round)
{
	memset(round->sampled, 0, sizeof round->sampled);
	round->narrowest = (struct calib_sample){ .width_ns = UINT64_MAX };
	round->shared_mult = 0;
	round->best_uncertainty = UINT64_MAX;
}

bool raw_lines_cpu_answers(const struct lines_cpu *c)
{
	return lines_cpu_answers(c) && !c->withdrawn[CLOCK_LINES_RAW] &&
	       c->calib[CLOCK_LINES_RAW].line.mult != 0;
}

void raw_lines_visit(struct raw_lines_round *round, uint32_t cpu, unsigned n)
{
	struct calib_sample *sample = &raw_lines_samples[cpu];
	const struct lines_cpu *c = &lines_cpus[cpu];
	uint64_t estimate, uncertainty;
	uint32_t node;

	if (!sandwich_narrowest_on(CLOCK_MONOTONIC_RAW, cpu, n, sample, &node))
		return;
	cpu_mask_set(round->sampled, cpu);
	if (sample->width_ns < round->narrowest.width_ns)
		round->narrowest = *sample;
	/* The machine's slope from lines that answered until now, as for
	 * the monotonic lines (round.c). */
	if (raw_lines_cpu_answers(c) &&
	    calib_slope_estimate(&c->calib[CLOCK_LINES_RAW], sample, &estimate, &uncertainty) &&
	    uncertainty < round->best_uncertainty) {
		round->best_uncertainty = uncertainty;
		round->shared_mult = estimate;
	}
}

uint64_t raw_lines_aim(struct raw_lines_round *round, uint64_t scheduled_ns, bool restart)
{
	uint64_t next_interval_ns = scheduled_ns;

	for (uint32_t cpu = cpu_mask_next(round->sampled, PLACEMENT_MASK_WORDS, 0);
	     cpu < CPU_MAX_CPUS;
	     cpu = cpu_mask_next(round->sampled, PLACEMENT_MASK_WORDS, cpu + 1)) {
		uint64_t wanted;

		raw_lines_samples[cpu] = calib_sample_toward(raw_lines_samples[cpu],
							     round->narrowest, round->shared_mult);
		wanted = restart ? CALIB_MIN_INTERVAL_NS
				 : calib_next_interval_ns(&lines_cpus[cpu].calib[CLOCK_LINES_RAW],
							  &raw_lines_samples[cpu], scheduled_ns);
		if (wanted < next_interval_ns)
			next_interval_ns = wanted;
	}
	return next_interval_ns;
}

void raw_lines_update(const struct raw_lines_round *round, uint32_t cpu, uint64_t next_interval_ns,
		      bool restart)
{
	if (!cpu_mask_has(round->sampled, cpu)) {
		lines_raw_withdraw(cpu);
		return;
	}
	lines_raw_update(cpu, &raw_lines_samples[cpu], next_interval_ns, round->shared_mult,
			 restart);
}

bool raw_lines_ready(void)
{
	unsigned answering = 0;

	for (uint32_t cpu = 0; cpu < CPU_MAX_CPUS; cpu++) {
		const struct lines_cpu *c = &lines_cpus[cpu];

		if (!lines_cpu_answers(c))
			continue;
		if (!raw_lines_cpu_answers(c))
			return false;
		answering++;
	}
	return answering > 0;
}

bool raw_lines_look(uint32_t cpu, unsigned n)
{
	const struct lines_cpu *c = &lines_cpus[cpu];
	struct calib_sample sample;
	uint32_t node;

	if (!raw_lines_cpu_answers(c) ||
	    !sandwich_narrowest_on(CLOCK_MONOTONIC_RAW, cpu, n, &sample, &node) ||
	    watch_line_holds(c->calib[CLOCK_LINES_RAW].line, &sample, WATCH_LINE_TOLERANCE_NS))
		return true;
	debug_log("watch: cpu %u's CLOCK_MONOTONIC_RAW line is %+lld ns from the kernel's "
		  "(sandwich %llu ns): raw lines withdrawn until the next round",
		  cpu, (long long)watch_line_error(c->calib[CLOCK_LINES_RAW].line, &sample),
		  (unsigned long long)sample.width_ns);
	for (uint32_t other = 0; other < CPU_MAX_CPUS; other++)
		if (lines_cpus[other].calib[CLOCK_LINES_RAW].line.mult != 0)
			lines_raw_withdraw(other);
	return false;
}
