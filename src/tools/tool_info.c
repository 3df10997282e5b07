/* The report behind fasttime --info, as text for a person to read: the
 * facts the library decides on (gathered by tool_info_report.c), in
 * aligned lines and tables; --format=keys prints them as tool_info_keys.c
 * words them instead. */
#include "config.h"

#include "tool_info.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_choice.h"
#include "cpu.h"
#include "entry_table.h"
#include "evidence.h"
#include "libc.h"
#include "refresh.h"
#include "tool_info_keys.h"
#include "tool_info_report.h"

/* A fact, as the report words it. */
static const char *tool_info_yes(bool value)
{
	return value ? "yes" : "no";
}

/* The names FASTTIME_HWCAPS hid, as a comma-separated list. */
static void tool_info_hidden_names(uint32_t hidden, char *out, size_t size)
{
	out[0] = '\0';
	for (unsigned bit = 0; cpu_hwcap_names[bit] != NULL; bit++) {
		size_t used = strlen(out);
		if (hidden & (1u << bit))
			snprintf(out + used, size - used, "%s%s", used > 0 ? ", " : "",
				 cpu_hwcap_names[bit]);
	}
}

/* The library fasttime would preload, and the processor and kernel facts,
 * as the library sees them (FASTTIME_HWCAPS applied). */
static void tool_info_print_facts(const struct tool_info_report *report)
{
	const struct tool_run_library *library = &report->library;
	const struct cpu_facts *facts = &report->facts;
	char hidden[128];

	printf("fasttime %s\n\n", PACKAGE_VERSION);
	if (library->problem[0] == '\0')
		printf("library       %s (%s)\n", library->path, library->source);
	else
		printf("library       not usable: %s\n", library->problem);
	printf("cpu           %s (%s)\n", facts->brand[0] != '\0' ? facts->brand : "unknown",
	       facts->vendor[0] != '\0' ? facts->vendor : "unknown vendor");
	printf("flags         invariant TSC %s, rdtscp %s, lfence serializing %s, AVX %s, "
	       "cmpxchg16b %s, rseq registered %s\n",
	       tool_info_yes(facts->invariant_tsc), tool_info_yes(facts->has_rdtscp),
	       tool_info_yes(facts->lfence_serializing), tool_info_yes(facts->has_avx),
	       tool_info_yes(facts->has_cmpxchg16b), tool_info_yes(facts->rseq_registered));
	tool_info_hidden_names(facts->hidden, hidden, sizeof hidden);
	if (hidden[0] != '\0')
		printf("hidden        by FASTTIME_HWCAPS: %s\n", hidden);
	printf("clocksource   %s: %s (tsc offered by the kernel: %s)\n", facts->clocksource,
	       evidence_describe(facts->clocksource_kind), tool_info_yes(facts->kernel_offers_tsc));
}

/* How the configured mode reads the counter and the CPU id here. */
static void tool_info_print_reading(const char *mode, const struct cpu_facts *facts, bool relaxed)
{
	struct cpu_reading reading;
	const char *why = cpu_choose_reading(facts, relaxed, &reading);

	if (why != NULL)
		printf("%-13s cannot read here: %s\n", mode, why);
	else
		printf("%-13s counter %s, CPU id from %s\n", mode,
		       cpu_counter_read_name(reading.counter), cpu_id_source_name(reading.cpu_id));
}

/* The settings the library would run with, as the environment and the
 * options make them. */
static void tool_info_print_settings(const struct settings *settings,
				     const struct tool_info_report *report)
{
	const struct cpu_facts *facts = &report->facts;

	printf("mode          %s\n", settings->relaxed ? "relaxed" : "ordered");
	tool_info_print_reading("reading", facts, settings->relaxed);
	printf("interval      %" PRIu32 " ms\n", settings->interval_ms);
	if (settings->disabled)
		printf("disabled      FASTTIME_DISABLE is set: every call would be answered "
		       "by libc\n");
	if (report->served)
		printf("calibration   served by fasttimed (page %s, service pid %d): programs "
		       "run no thread of ours\n",
		       report->page, report->service_pid);
	else if (report->page_refused != NULL)
		printf("calibration   own thread (the page %s is refused: %s)\n", report->page,
		       report->page_refused);
	else
		printf("calibration   own thread (no calibration service's page)\n");
}

/* A cost as the report prints it, in tenths of a nanosecond: gains are
 * worked out from the printed figures, so that they add up for a reader
 * (and agree with fasttime-compare, which works from --format=keys). */
static long tool_info_tenths(double ns)
{
	char printed[32];

	snprintf(printed, sizeof printed, "%.1f", ns);
	return (long)(strtod(printed, NULL) * 10.0 + 0.5);
}

/* One mode's cost of a call and what it saves against libc's, or that it
 * saves nothing. */
static void tool_info_print_gain(const char *mode, double libc_ns, double fast_ns,
				 const char *per_call)
{
	long libc = tool_info_tenths(libc_ns), fast = tool_info_tenths(fast_ns);
	long gain = libc - fast;

	printf(" %s %ld.%ld ns (", mode, fast / 10, fast % 10);
	if (gain > 0)
		printf("%ld.%ld ns saved%s)", gain / 10, gain % 10, per_call);
	else if (gain == 0)
		printf("no gain%s)", per_call);
	else
		printf("no gain: %ld.%ld ns lost%s)", -gain / 10, -gain % 10, per_call);
}

/* In one line, what this machine offers a clock_gettime(CLOCK_MONOTONIC):
 * the kernel's clock and its cost, the counter's in each mode, and so the
 * gain to expect per call; worded as fasttime-compare words its "expect"
 * line, so that the two agree. */
static void tool_info_print_expect(const struct tool_info_report *report)
{
	const char *kernel = tool_info_report_kernel_clock(report);
	const struct api_cost *ordered = &report->ordered[ENTRY_MONOTONIC];
	const struct api_cost *relaxed = &report->relaxed[ENTRY_MONOTONIC];
	bool has_ordered = report->costs_measured && report->can_order && ordered->fast_ns > 0;
	bool has_relaxed = report->costs_measured && relaxed->fast_ns > 0;
	double libc_ns = tool_info_report_libc_ns(report, ENTRY_MONOTONIC);
	char how[128];

	if (kernel == NULL)
		snprintf(how, sizeof how, "the vDSO or a system call");
	else
		snprintf(how, sizeof how, "%s, clocksource %s", kernel, report->facts.clocksource);
	if (report->unusable != NULL) {
		printf("expect        no gain here: clock_gettime comes from %s, and fasttime "
		       "cannot run its fast path (%s)\n",
		       how, report->unusable);
		return;
	}
	if (!has_ordered && !has_relaxed) {
		printf("expect        clock_gettime comes from %s here; fasttime --info measured "
		       "no cost per call\n",
		       how);
		return;
	}
	printf("expect        clock_gettime(MONOTONIC) %.1f ns from %s; fasttime", libc_ns, how);
	if (has_ordered)
		tool_info_print_gain("ordered", libc_ns, ordered->fast_ns, " per call");
	if (has_ordered && has_relaxed)
		putchar(',');
	if (has_relaxed)
		tool_info_print_gain("relaxed", libc_ns, relaxed->fast_ns,
				     has_ordered ? "" : " per call");
	putchar('\n');
}

/* One line per CPU the library would calibrate (every online CPU this
 * process may run on, whatever the caller's own affinity): its line, its
 * rate, how fresh and how good its calibration is. */
static void tool_info_print_cpus(const struct tool_info_report *report)
{
	uint64_t now_ns = libc_monotonic_ns(), tsc = cpu_rdtsc();
	uint32_t reference_cpu = tool_info_report_reference_cpu(report);
	char versus_header[24];

	snprintf(versus_header, sizeof versus_header, "vs cpu%" PRIu32, reference_cpu);
	printf("\nper-CPU calibration, done just now in this process (offset: ns at counter 0;\n"
	       "vs cpu%" PRIu32
	       ": this line minus that CPU's line at the current counter, in ns)\n",
	       reference_cpu);
	printf("%5s %4s %10s %20s %11s %12s %9s %9s  %s\n", "cpu", "node", "TSC GHz", "offset ns",
	       versus_header, "refreshed", "error ns", "sandwich", "status");
	for (unsigned i = 0; i < report->cpu_count; i++) {
		struct tool_info_cpu_row row;
		char node[16] = "-", ghz[24] = "-", offset[32] = "-", versus[24] = "-";
		char refreshed[32] = "never", error[24] = "-", sandwich[24] = "-";
		const char *status;

		tool_info_report_cpu_row(report, report->cpus[i], now_ns, tsc, &row);
		status = row.dropped ? "dropped" : row.has_line ? "fast" : "no line";
		if (row.visited) {
			snprintf(node, sizeof node, "%" PRIu32, row.node);
			snprintf(refreshed, sizeof refreshed, "%.1f ms ago", row.refreshed_ms_ago);
			snprintf(sandwich, sizeof sandwich, "%" PRIu64 " ns", row.sandwich_ns);
		}
		if (row.has_rate)
			snprintf(ghz, sizeof ghz, "%.6f", row.ghz);
		if (row.has_line) {
			snprintf(offset, sizeof offset, "%+" PRId64, row.offset_ns);
			snprintf(versus, sizeof versus, "%+" PRId64, row.versus_ns);
			snprintf(error, sizeof error, "%+" PRId64, row.error_ns);
		}
		printf("%5" PRIu32 " %4s %10s %20s %11s %12s %9s %9s  %s\n", report->cpus[i], node,
		       ghz, offset, versus, refreshed, error, sandwich, status);
	}
}

/* Which entry points the library would answer from the counter, from the
 * measurement it made when choosing, in the configured mode; when and on
 * what that measurement was made. */
static void tool_info_print_choice(bool relaxed, bool disabled)
{
	uint32_t chosen = api_choice_last.chosen;

	printf("\nentry points in %s mode, as the library would choose them%s (ns per call)\n",
	       relaxed ? "relaxed" : "ordered", disabled ? " without FASTTIME_DISABLE" : "");
	if (!api_choice_made) {
		printf("  not measured: every call would be answered by libc\n");
		return;
	}
	printf("  chosen after round %u, %.3f s after calibration started, measured on cpu %" PRIu32
	       " with lines on %u of %u CPUs%s\n",
	       api_choice_last.round, (double)api_choice_last.after_start_ns / 1e9,
	       api_choice_last.cpu, api_choice_last.cpus_with_line, api_choice_last.cpus_usable,
	       api_choice_last.rejected > 0 ? " (after measurements thrown away)" : "");
	printf("  %-35s %7s %8s  %s\n", "entry point", "libc", "fasttime", "answered by");
	for (unsigned a = 0; a < ENTRY_COUNT; a++) {
		const struct api_cost *cost = &api_choice_costs[a];
		char fast_ns[16] = "-";

		if (cost->fast_ns > 0)
			snprintf(fast_ns, sizeof fast_ns, "%.1f", cost->fast_ns);
		printf("  %-35s %7.1f %8s  %s\n", cost->name, cost->libc_ns, fast_ns,
		       (chosen & cost->flag) ? "fasttime"
		       : cost->fast_ns > 0   ? "libc (the counter was not faster here)"
					     : "libc (no lines for it yet)");
	}
}

/* Which entry points the service's page answers from the counter for a
 * reader of the configured mode: what a program started now would get. */
static void tool_info_print_served_choice(const struct tool_info_report *report, bool relaxed)
{
	printf("\nentry points in %s mode, as the service's page answers them\n",
	       relaxed ? "relaxed" : "ordered");
	for (unsigned a = 0; a < ENTRY_COUNT; a++)
		printf("  %-35s %s\n", entry_table[a].name,
		       (report->served_flags & entry_table[a].api) ? "fasttime" : "libc");
}

/* Each entry point's cost from libc and from the counter in both modes,
 * measured just now. */
static void tool_info_print_costs(const struct tool_info_report *report)
{
	printf("\ncost on this machine, ns per call (best of %u measurements, just now)\n",
	       TOOL_INFO_COST_ROUNDS);
	if (report->calls_fell_back > 0)
		printf("(%u calls could not read the counter and went to libc: the figures may "
		       "be libc's)\n",
		       report->calls_fell_back);
	printf("  %-35s %7s %8s %8s\n", "entry point", "libc", "ordered", "relaxed");
	for (unsigned a = 0; a < ENTRY_COUNT; a++) {
		char ordered_ns[16] = "-", relaxed_ns[16] = "-";

		if (report->can_order && report->ordered[a].fast_ns > 0)
			snprintf(ordered_ns, sizeof ordered_ns, "%.1f", report->ordered[a].fast_ns);
		if (report->relaxed[a].fast_ns > 0)
			snprintf(relaxed_ns, sizeof relaxed_ns, "%.1f", report->relaxed[a].fast_ns);
		printf("  %-35s %7.1f %8s %8s\n", report->relaxed[a].name,
		       tool_info_report_libc_ns(report, a), ordered_ns, relaxed_ns);
	}
}

bool tool_info_parse_format(const char *name, enum tool_info_format *format)
{
	if (strcmp(name, "text") == 0)
		*format = TOOL_INFO_TEXT;
	else if (strcmp(name, "keys") == 0)
		*format = TOOL_INFO_KEYS;
	else
		return false;
	return true;
}

int tool_info_run(const struct settings *settings, enum tool_info_format format)
{
	static uint32_t cpus[CPU_MAX_CPUS];
	struct tool_info_report report;
	bool text = format == TOOL_INFO_TEXT;

	tool_info_report_probe(&report, settings);
	/* The facts come out before the calibration, which may take a while
	 * over a slow kernel clock. */
	if (text) {
		tool_info_print_facts(&report);
		tool_info_print_settings(settings, &report);
		fflush(stdout);
	}
	tool_info_report_calibrate(&report, cpus);
	if (report.calibrated)
		tool_info_report_measure_costs(&report);
	if (text) {
		if (report.unusable == NULL)
			printf("fast path     can run here\n");
		else
			printf("fast path     cannot run here: %s; every call would be answered by "
			       "libc\n",
			       report.unusable);
		tool_info_print_expect(&report);
		tool_info_print_cpus(&report);
	}
	if (!text) {
		tool_info_keys_print(&report);
		return 0;
	}
	if (report.served)
		tool_info_print_served_choice(&report, settings->relaxed);
	if (report.calibrated) {
		tool_info_print_choice(settings->relaxed, settings->disabled);
		tool_info_print_costs(&report);
	}
	return 0;
}
