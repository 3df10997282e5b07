/* fasttime --info --format=keys: every fact of the report as one key=value
 * line (tool_info_keys.h lists the keys). The numbers are those the text
 * form shows, at the same precision, without signs, units or padding. */
#include "config.h"

#include "tool_info_keys.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "api_choice.h"
#include "entry_table.h"
#include "libc.h"
#include "verdict.h"

/* A line whose value is formatted: a number or one of the key's words. */
static void __attribute__((format(printf, 2, 3)))
tool_info_keys_put(const char *key, const char *format, ...)
{
	va_list args;

	printf("%s=", key);
	va_start(args, format);
	vprintf(format, args);
	va_end(args);
	putchar('\n');
}

/* A line whose value is free text, kept on its line. */
static void tool_info_keys_text(const char *key, const char *value)
{
	printf("%s=", key);
	for (const char *c = value; *c != '\0'; c++)
		putchar((unsigned char)*c < 0x20 || *c == 0x7f ? '?' : *c);
	putchar('\n');
}

/* A yes-or-no fact. */
static void tool_info_keys_yes(const char *key, bool value)
{
	tool_info_keys_put(key, "%s", value ? "yes" : "no");
}

/* A key of one CPU or one entry point: prefix.name.fact. */
static const char *tool_info_keys_name(char *out, size_t size, const char *prefix, const char *name,
				       const char *fact)
{
	snprintf(out, size, "%s.%s.%s", prefix, name, fact);
	return out;
}

/* Where the library was found, as a word (tool_run.h names the places). */
static const char *tool_info_keys_source(const char *source)
{
	if (source == NULL)
		return "";
	if (strcmp(source, "build tree") == 0)
		return "build_tree";
	if (strcmp(source, "FASTTIME_LIBRARY") == 0)
		return "fasttime_library";
	return "installed";
}

/* The kind of clocksource, as a word. */
static const char *tool_info_keys_clocksource_kind(enum cpu_clocksource_kind kind)
{
	switch (kind) {
	case CPU_CLOCKSOURCE_TSC: return "tsc";
	case CPU_CLOCKSOURCE_TSC_DERIVED: return "tsc_derived";
	case CPU_CLOCKSOURCE_OTHER: return "other";
	case CPU_CLOCKSOURCE_UNKNOWN: return "unknown";
	}
	return "unknown";
}

/* The counter instruction, as a word. */
static const char *tool_info_keys_counter(enum cpu_counter_read counter)
{
	switch (counter) {
	case CPU_READ_RDTSCP: return "rdtscp";
	case CPU_READ_LFENCE_RDTSC: return "lfence_rdtsc";
	case CPU_READ_RDTSC: return "rdtsc";
	}
	return "";
}

/* The source of the CPU id, as a word. */
static const char *tool_info_keys_cpu_id(enum cpu_id_source source)
{
	switch (source) {
	case CPU_ID_TSC_AUX: return "tsc_aux";
	case CPU_ID_RSEQ: return "rseq";
	case CPU_ID_GETCPU: return "getcpu";
	}
	return "";
}

/* The library, the processor and the kernel. */
static void tool_info_keys_facts(const struct tool_info_report *report)
{
	const struct cpu_facts *facts = &report->facts;
	bool usable = report->library.problem[0] == '\0';

	tool_info_keys_put("format_version", "1");
	tool_info_keys_put("version", "%s", PACKAGE_VERSION);
	tool_info_keys_text("library.path", usable ? report->library.path : "");
	tool_info_keys_put("library.source", "%s",
			   usable ? tool_info_keys_source(report->library.source) : "");
	tool_info_keys_text("library.problem", report->library.problem);
	tool_info_keys_text("processor.vendor", facts->vendor);
	tool_info_keys_text("processor.brand", facts->brand);
	tool_info_keys_yes("processor.invariant_tsc", facts->invariant_tsc);
	tool_info_keys_yes("processor.rdtscp", facts->has_rdtscp);
	tool_info_keys_yes("processor.lfence_serializing", facts->lfence_serializing);
	tool_info_keys_yes("processor.avx", facts->has_avx);
	tool_info_keys_yes("processor.cmpxchg16b", facts->has_cmpxchg16b);
	tool_info_keys_yes("rseq.registered", facts->rseq_registered);
	printf("hwcaps.hidden=");
	for (unsigned bit = 0, listed = 0; cpu_hwcap_names[bit] != NULL; bit++)
		if (facts->hidden & (1u << bit))
			printf("%s%s", listed++ > 0 ? "," : "", cpu_hwcap_names[bit]);
	putchar('\n');
	tool_info_keys_text("clocksource", facts->clocksource);
	tool_info_keys_put("clocksource_kind", "%s",
			   tool_info_keys_clocksource_kind(facts->clocksource_kind));
	tool_info_keys_yes("kernel_offers_tsc", facts->kernel_offers_tsc);
}

/* The settings, the reading they make, and the verdict. */
static void tool_info_keys_settings(const struct tool_info_report *report)
{
	const struct settings *settings = report->settings;
	struct cpu_reading reading;
	const char *problem = cpu_choose_reading(&report->facts, settings->relaxed, &reading);

	tool_info_keys_put("mode", "%s", settings->relaxed ? "relaxed" : "ordered");
	tool_info_keys_put("reading.counter", "%s",
			   problem == NULL ? tool_info_keys_counter(reading.counter) : "");
	tool_info_keys_put("reading.cpu_id", "%s",
			   problem == NULL ? tool_info_keys_cpu_id(reading.cpu_id) : "");
	tool_info_keys_text("reading.problem", problem != NULL ? problem : "");
	tool_info_keys_put("interval_ms", "%" PRIu32, settings->interval_ms);
	tool_info_keys_yes("disabled", settings->disabled);
	tool_info_keys_yes("fast_path", report->unusable == NULL);
	tool_info_keys_text("fast_path_problem", report->unusable != NULL ? report->unusable : "");
	char pid[16] = "";

	if (report->served)
		snprintf(pid, sizeof pid, "%d", report->service_pid);
	tool_info_keys_put("calibration_source", "%s", report->served ? "served" : "own_thread");
	tool_info_keys_text("service.page", report->page);
	tool_info_keys_put("service.pid", "%s", pid);
	tool_info_keys_text("service.page_problem",
			    report->page_refused != NULL ? report->page_refused : "");
}

/* A line whose fact may be unknown here: then its value is empty. */
static void __attribute__((format(printf, 3, 4)))
tool_info_keys_maybe(const char *key, bool known, const char *format, ...)
{
	va_list args;

	printf("%s=", key);
	if (known) {
		va_start(args, format);
		vprintf(format, args);
		va_end(args);
	}
	putchar('\n');
}

/* The per-CPU table, one key per cell. */
static void tool_info_keys_cpus(const struct tool_info_report *report)
{
	uint64_t now_ns = libc_monotonic_ns(), tsc = cpu_rdtsc();
	char key[64], cpu[16];

	printf("cpus=");
	for (unsigned i = 0; i < report->cpu_count; i++)
		printf("%s%" PRIu32, i > 0 ? "," : "", report->cpus[i]);
	putchar('\n');
	tool_info_keys_put("reference_cpu", "%" PRIu32, tool_info_report_reference_cpu(report));
	for (unsigned i = 0; i < report->cpu_count; i++) {
		struct tool_info_cpu_row row;

		tool_info_report_cpu_row(report, report->cpus[i], now_ns, tsc, &row);
		snprintf(cpu, sizeof cpu, "%" PRIu32, report->cpus[i]);
		tool_info_keys_maybe(tool_info_keys_name(key, sizeof key, "cpu", cpu, "node"),
				     row.visited, "%" PRIu32, row.node);
		tool_info_keys_maybe(tool_info_keys_name(key, sizeof key, "cpu", cpu, "ghz"),
				     row.has_rate, "%.6f", row.ghz);
		tool_info_keys_maybe(tool_info_keys_name(key, sizeof key, "cpu", cpu, "offset_ns"),
				     row.has_line, "%" PRId64, row.offset_ns);
		tool_info_keys_maybe(
		    tool_info_keys_name(key, sizeof key, "cpu", cpu, "vs_reference_ns"),
		    row.has_line, "%" PRId64, row.versus_ns);
		tool_info_keys_maybe(
		    tool_info_keys_name(key, sizeof key, "cpu", cpu, "refreshed_ms_ago"),
		    row.visited, "%.1f", row.refreshed_ms_ago);
		tool_info_keys_maybe(tool_info_keys_name(key, sizeof key, "cpu", cpu, "error_ns"),
				     row.has_line, "%" PRId64, row.error_ns);
		tool_info_keys_maybe(
		    tool_info_keys_name(key, sizeof key, "cpu", cpu, "sandwich_ns"), row.visited,
		    "%" PRIu64, row.sandwich_ns);
		tool_info_keys_put(tool_info_keys_name(key, sizeof key, "cpu", cpu, "status"), "%s",
				   row.dropped	  ? "dropped"
				   : row.has_line ? "fast"
						  : "no_line");
	}
}

/* The library's choice of entry points in the configured mode, when it was
 * made, and the costs measured just now. */
static void tool_info_keys_choice(const struct tool_info_report *report)
{
	const struct api_choice_record *choice = &api_choice_last;
	bool chosen = report->calibrated && api_choice_made;
	bool costs = report->costs_measured;
	char key[96];

	tool_info_keys_yes("calibration.chosen", chosen);
	tool_info_keys_maybe("calibration.chosen_after_round", chosen, "%u", choice->round);
	tool_info_keys_maybe("calibration.chosen_after_s", chosen, "%.3f",
			     (double)choice->after_start_ns / 1e9);
	tool_info_keys_maybe("calibration.measured_on_cpu", chosen, "%" PRIu32, choice->cpu);
	tool_info_keys_maybe("calibration.cpus_with_line", chosen, "%u", choice->cpus_with_line);
	tool_info_keys_maybe("calibration.cpus_usable", chosen, "%u", choice->cpus_usable);
	tool_info_keys_maybe("calibration.rejected", chosen, "%u", choice->rejected);
	for (unsigned a = 0; a < ENTRY_COUNT; a++) {
		const char *api = entry_table[a].key;
		const struct api_cost *cost = &api_choice_costs[a];

		tool_info_keys_maybe(tool_info_keys_name(key, sizeof key, "api", api, "libc_ns"),
				     chosen, "%.1f", cost->libc_ns);
		tool_info_keys_maybe(
		    tool_info_keys_name(key, sizeof key, "api", api, "fasttime_ns"),
		    chosen && cost->fast_ns > 0, "%.1f", cost->fast_ns);
		tool_info_keys_put(tool_info_keys_name(key, sizeof key, "api", api, "answered_by"),
				   "%s",
				   chosen && (choice->chosen & cost->flag) ? "fasttime" : "libc");
		tool_info_keys_maybe(
		    tool_info_keys_name(key, sizeof key, "api", api, "served_by"), report->served,
		    "%s", (report->served_flags & entry_table[a].api) ? "fasttime" : "libc");
		tool_info_keys_maybe(
		    tool_info_keys_name(key, sizeof key, "api", api, "cost_libc_ns"), costs, "%.1f",
		    tool_info_report_libc_ns(report, a));
		tool_info_keys_maybe(
		    tool_info_keys_name(key, sizeof key, "api", api, "cost_ordered_ns"),
		    costs && report->can_order && report->ordered[a].fast_ns > 0, "%.1f",
		    report->ordered[a].fast_ns);
		tool_info_keys_maybe(
		    tool_info_keys_name(key, sizeof key, "api", api, "cost_relaxed_ns"),
		    costs && report->relaxed[a].fast_ns > 0, "%.1f", report->relaxed[a].fast_ns);
	}
	tool_info_keys_maybe("costs.rounds", costs, "%u", TOOL_INFO_COST_ROUNDS);
	tool_info_keys_maybe("costs.calls_fell_back", costs, "%u", report->calls_fell_back);
}

void tool_info_keys_print(const struct tool_info_report *report)
{
	tool_info_keys_facts(report);
	tool_info_keys_settings(report);
	tool_info_keys_cpus(report);
	tool_info_keys_choice(report);
}
