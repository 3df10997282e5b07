/* Whether the TSC may answer for the kernel's clock: what the kernel's
 * clocksource says, and the library's own checks where it says nothing.
 *
 * A clocksource that is the TSC (tsc) or the hypervisor's scaling of it
 * (kvm-clock, xen, Hyper-V's TSC page) is evidence enough: the calibration
 * against CLOCK_MONOTONIC then proves each CPU's line at its first round. A
 * kernel on another counter (hpet, acpi_pm) says nothing about the TSC, so
 * the lines must first show it themselves: over EVIDENCE_PROBATION_ROUNDS
 * rounds in a row, every CPU's line predicts the kernel's clock within a
 * bound and keeps its rate. Pure arithmetic, for the tests' fake clocks.
 *
 * The clocksource is read once, before main() (no descriptor of ours while
 * the program runs). Its later health comes from the sandwiches: a kernel
 * whose watchdog drops the TSC moves to a counter its vDSO cannot read, so
 * clock_gettime becomes a system call and the narrowest sandwich of a round
 * widens many times over. After EVIDENCE_SLOW_ROUNDS such rounds in a row
 * the clocksource counts as one that says nothing about the TSC: the lines
 * answer only while they pass the probation. A TSC that misbehaves outright
 * parts its lines from the kernel's clock, which the watch sees (watch.h). */
#ifndef FASTTIME_EVIDENCE_H
#define FASTTIME_EVIDENCE_H

#include <stdbool.h>
#include <stdint.h>

#include "cpu.h"

/* Steady rounds in a row before lines on a clocksource that says nothing
 * about the TSC may answer. Two: the first rounds are short (10 ms growing
 * fourfold), so the second steady round ends within a second of the first
 * line. */
#define EVIDENCE_PROBATION_ROUNDS 2u
/* A prediction this far off the kernel's clock, beyond the sandwich's own
 * width, is not steady. */
#define EVIDENCE_MAX_ERROR_NS 2000
/* A rate that moves more than this between rounds is not steady (NTP
 * slews the kernel's clock by up to 500 ppm; a TSC that drifts against it
 * by more than a tenth of that is not one to trust blind). */
#define EVIDENCE_MAX_RATE_CHANGE_PPB 50000u

/* A round's narrowest sandwich this many times the narrowest seen before,
 * and wider by at least EVIDENCE_SLOW_MIN_NS, says the kernel's clock became
 * a system call (a vDSO read is tens of ns, a system call hundreds). */
#define EVIDENCE_SLOW_FACTOR 4u
#define EVIDENCE_SLOW_MIN_NS 300u
/* Rounds in a row that must say so: a loaded machine widens one round's
 * sandwiches now and then, a clocksource that left the TSC every round. */
#define EVIDENCE_SLOW_ROUNDS 2u

/* Whether a round whose narrowest sandwich was width_ns says the kernel's
 * clock became slow, given the narrowest seen in earlier rounds
 * (baseline_ns; 0 when none was seen). */
bool evidence_kernel_clock_slowed(uint64_t baseline_ns, uint64_t width_ns);

/* Whether one CPU's round was steady: its line's prediction was off by
 * error_ns at a sandwich width_ns wide, and its rate went from
 * slope_before to slope_after (ns per tick, 0.64 fixed point). */
bool evidence_cpu_steady(int64_t error_ns, uint64_t width_ns, uint64_t slope_before,
			 uint64_t slope_after);

/* Whether lines may answer, given the clocksource's kind and the count of
 * steady rounds in a row so far. */
bool evidence_trusted(enum cpu_clocksource_kind kind, unsigned steady_rounds);

/* The clocksource's kind in words, for --info and debug lines. */
const char *evidence_describe(enum cpu_clocksource_kind kind);

#endif
