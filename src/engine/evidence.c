/* The clocksource as evidence about the TSC, and the probation for the
 * clocksources that give none (see evidence.h). */
#include "config.h"

#include "evidence.h"

bool evidence_cpu_steady(int64_t error_ns, uint64_t width_ns, uint64_t slope_before,
			 uint64_t slope_after)
{
	uint64_t off = error_ns < 0 ? (uint64_t)0 - (uint64_t)error_ns : (uint64_t)error_ns;
	uint64_t change;

	if (off > EVIDENCE_MAX_ERROR_NS + width_ns || slope_before == 0 || slope_after == 0)
		return false;
	change =
	    slope_after > slope_before ? slope_after - slope_before : slope_before - slope_after;
	return (unsigned __int128)change * 1000000000u <=
	       (unsigned __int128)slope_before * EVIDENCE_MAX_RATE_CHANGE_PPB;
}

bool evidence_kernel_clock_slowed(uint64_t baseline_ns, uint64_t width_ns)
{
	if (baseline_ns == 0 || width_ns <= baseline_ns)
		return false;
	return width_ns / EVIDENCE_SLOW_FACTOR >= baseline_ns &&
	       width_ns - baseline_ns >= EVIDENCE_SLOW_MIN_NS;
}

bool evidence_trusted(enum cpu_clocksource_kind kind, unsigned steady_rounds)
{
	if (kind == CPU_CLOCKSOURCE_TSC || kind == CPU_CLOCKSOURCE_TSC_DERIVED)
		return true;
	return steady_rounds >= EVIDENCE_PROBATION_ROUNDS;
}

const char *evidence_describe(enum cpu_clocksource_kind kind)
{
	switch (kind) {
	case CPU_CLOCKSOURCE_TSC: return "the TSC itself";
	case CPU_CLOCKSOURCE_TSC_DERIVED: return "the TSC, scaled by the hypervisor";
	case CPU_CLOCKSOURCE_OTHER:
		return "another counter: the TSC answers after its own checks pass";
	case CPU_CLOCKSOURCE_UNKNOWN: return "not known: the TSC answers after its own checks pass";
	}
	return "?";
}
