/* What fasttime --info shows, gathered by running the library's engine in
 * this process exactly as the library would (same settings, same
 * calibration, same per-API measurement). */
#include "config.h"

#include "tool_info_report.h"

#include "service_page.h"

#include <string.h>
#include <time.h>

#include "api_choice.h"
#include "calib.h"
#include "clock.h"
#include "libc.h"
#include "lines.h"
#include "tool_check.h"
#include "verdict.h"

/* 2^64: a line's mult is ns per tick as a 0.64 fixed-point fraction. */
#define TOOL_INFO_TWO_64 18446744073709551616.0

/* Looks for the page a program would be served by, as the library does
 * at start, without mapping it. */
static void tool_info_report_service(struct tool_info_report *report)
{
	struct service_page_look look;

	report->served = !report->settings->disabled &&
			 service_page_find(report->settings, report->facts.rseq_registered, false,
					   report->page, &look);
	report->service_pid = report->served ? look.header.service_pid : 0;
	report->served_flags = report->served ? look.api_flags : 0;
	report->page_refused = !report->served && report->page[0] != '\0' ? look.refused : NULL;
}

void tool_info_report_probe(struct tool_info_report *report, const struct settings *settings)
{
	memset(report, 0, sizeof *report);
	report->settings = settings;
	cpu_probe_instructions(&report->facts);
	cpu_probe_kernel(&report->facts);
	tool_run_find_library(&report->library);
	tool_info_report_service(report);
}

/* The CPUs the engine visited (online, and its thread could run there);
 * where it did not run, the online ones. */
static unsigned tool_info_report_cpus(uint32_t *cpus, bool visited)
{
	static unsigned long online[CPU_MAX_CPUS / (8 * sizeof(unsigned long))];
	unsigned n = 0;
	bool have_online = cpu_online_mask(online, sizeof online / sizeof online[0]);

	for (uint32_t cpu = 0; cpu < CPU_MAX_CPUS; cpu++) {
		bool shown =
		    visited ? lines_cpus[cpu].allowed : have_online && cpu_mask_has(online, cpu);
		if (shown)
			cpus[n++] = cpu;
	}
	if (n == 0)
		n = tool_check_allowed_cpus(cpus, CPU_MAX_CPUS);
	return n;
}

void tool_info_report_calibrate(struct tool_info_report *report, uint32_t *cpus)
{
	struct settings engine = *report->settings;
	const char *reason;

	engine.disabled = false;
	libc_resolve();
	refresh_configure(&engine);
	report->calibrated = refresh_calibrate_now();
	reason = verdict_unusable();
	if (reason == NULL && !report->calibrated)
		reason = "calibration gave no CPU a line";
	if (reason == NULL && !verdict_trusted())
		reason = "the lines did not pass their own checks against the kernel's clock";
	report->unusable = reason;
	report->cpus = cpus;
	/* No lines to show where the calibration could not map them. */
	report->cpu_count =
	    tool_info_report_cpus(cpus, verdict_unusable() == NULL && lines_cpus != NULL);
}

/* Keeps the cheaper of each measured cost in best. */
static void tool_info_report_keep_best(struct api_cost best[ENTRY_COUNT],
				       const struct api_cost costs[ENTRY_COUNT])
{
	for (unsigned a = 0; a < ENTRY_COUNT; a++) {
		best[a].name = costs[a].name;
		if (best[a].libc_ns == 0 || costs[a].libc_ns < best[a].libc_ns)
			best[a].libc_ns = costs[a].libc_ns;
		if (best[a].fast_ns == 0 || costs[a].fast_ns < best[a].fast_ns)
			best[a].fast_ns = costs[a].fast_ns;
	}
}

/* The CLOCK_READ_BITS of a mode here; false where it cannot read. */
static bool tool_info_report_mode_flags(const struct cpu_facts *facts, bool relaxed,
					uint32_t *flags)
{
	struct cpu_reading reading;

	if (cpu_choose_reading(facts, relaxed, &reading) != NULL)
		return false;
	*flags = clock_flags_for_reading(reading);
	return true;
}

/* The best of a few alternating measurements, as a shared machine's noise
 * only ever adds. */
void tool_info_report_measure_costs(struct tool_info_report *report)
{
	struct api_cost costs[ENTRY_COUNT];
	uint32_t ordered_flags = 0, relaxed_flags = 0;
	unsigned fallbacks = 0;

	report->can_order = tool_info_report_mode_flags(&report->facts, false, &ordered_flags);
	tool_info_report_mode_flags(&report->facts, true, &relaxed_flags);
	memset(report->ordered, 0, sizeof report->ordered);
	memset(report->relaxed, 0, sizeof report->relaxed);
	report->calls_fell_back = 0;
	for (unsigned round = 0; round < TOOL_INFO_COST_ROUNDS; round++) {
		if (report->can_order) {
			memset(costs, 0, sizeof costs);
			api_choice_measure(ordered_flags, costs, &fallbacks);
			report->calls_fell_back += fallbacks;
			tool_info_report_keep_best(report->ordered, costs);
		}
		memset(costs, 0, sizeof costs);
		api_choice_measure(relaxed_flags, costs, &fallbacks);
		report->calls_fell_back += fallbacks;
		tool_info_report_keep_best(report->relaxed, costs);
	}
	report->costs_measured = true;
}

double tool_info_report_libc_ns(const struct tool_info_report *report, unsigned a)
{
	double libc_ns = report->relaxed[a].libc_ns;

	if (report->can_order && report->ordered[a].libc_ns < libc_ns)
		libc_ns = report->ordered[a].libc_ns;
	return libc_ns;
}

const char *tool_info_report_kernel_clock(const struct tool_info_report *report)
{
	/* The clocksources whose reading the kernel shares with user space
	 * through the vDSO; with any other, each call enters the kernel.
	 * fasttime-compare's "expect" line names the same ones. */
	static const char *const vdso[] = { "tsc", "kvm-clock", "hyperv_clocksource_tsc_page",
					    "arch_sys_counter", NULL };
	const char *source = report->facts.clocksource;

	if (report->facts.clocksource_kind == CPU_CLOCKSOURCE_UNKNOWN)
		return NULL;
	for (const char *const *v = vdso; *v != NULL; v++)
		if (strcmp(source, *v) == 0)
			return "the vDSO";
	return "a system call";
}

uint32_t tool_info_report_reference_cpu(const struct tool_info_report *report)
{
	for (unsigned i = 0; report->calibrated && i < report->cpu_count; i++)
		if (lines_cpus[report->cpus[i]].calib[CLOCK_LINES_MONOTONIC].line.mult != 0)
			return report->cpus[i];
	return report->cpu_count > 0 ? report->cpus[0] : 0;
}

void tool_info_report_cpu_row(const struct tool_info_report *report, uint32_t cpu, uint64_t now_ns,
			      uint64_t tsc, struct tool_info_cpu_row *row)
{
	const struct lines_cpu *c, *reference;

	memset(row, 0, sizeof *row);
	if (lines_cpus == NULL)
		return;
	c = &lines_cpus[cpu];
	reference = &lines_cpus[tool_info_report_reference_cpu(report)];
	row->visited = report->calibrated && c->last_sample_mono_ns != 0;
	row->has_line = report->calibrated && c->calib[CLOCK_LINES_MONOTONIC].line.mult != 0;
	row->has_rate = row->visited && c->calib[CLOCK_LINES_MONOTONIC].slope_mult != 0;
	row->dropped = c->dropped;
	if (row->visited) {
		row->node = c->node;
		row->refreshed_ms_ago = (double)(int64_t)(now_ns - c->last_sample_mono_ns) / 1e6;
		row->sandwich_ns = c->calib[CLOCK_LINES_MONOTONIC].narrowest_width_ns;
	}
	if (row->has_rate)
		row->ghz = TOOL_INFO_TWO_64 / (double)c->calib[CLOCK_LINES_MONOTONIC].slope_mult;
	if (row->has_line) {
		/* Lines are compared at one counter value: how far apart two
		 * CPUs' readings would be for the same tick. */
		row->offset_ns = (int64_t)c->calib[CLOCK_LINES_MONOTONIC].line.offset;
		row->versus_ns =
		    (int64_t)(calib_line_eval(c->calib[CLOCK_LINES_MONOTONIC].line, tsc) -
			      calib_line_eval(reference->calib[CLOCK_LINES_MONOTONIC].line, tsc));
		row->error_ns = c->calib[CLOCK_LINES_MONOTONIC].last_error_ns;
	}
}
