/* CLOCK_MONOTONIC_RAW's own lines (raw_lines.h). */
#include "config.h"

#include "raw_lines.h"

#include <time.h>

#include "debug.h"
#include "sandwich.h"
#include "watch.h"

bool raw_lines_cpu_answers(const struct lines_cpu *c)
{
	return lines_kind_answers(c, CLOCK_LINES_RAW);
}

bool raw_lines_ready(void)
{
	unsigned answering = 0;

	/* Before lines_map no CPU is allowed: no entry is read. */
	LINES_FOR_EACH_ALLOWED (cpu) {
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
	LINES_FOR_EACH_ALLOWED (other)
		if (lines_cpus[other].calib[CLOCK_LINES_RAW].line.mult != 0)
			lines_raw_withdraw(other);
	return false;
}
