/* The report behind fasttime --info: the facts the library decides on,
 * gathered by running its engine in this process exactly as the library
 * would (same settings, same calibration, same per-API measurement). */
#include "config.h"

#include "tool_info.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "api_choice.h"
#include "calib.h"
#include "clock.h"
#include "cpu.h"
#include "evidence.h"
#include "libc.h"
#include "refresh.h"
#include "table.h"
#include "tool_check.h"
#include "tool_run.h"

/* 2^64: a line's mult is ns per tick as a 0.64 fixed-point fraction. */
#define TOOL_INFO_TWO_64 18446744073709551616.0
/* Measurements of the costs table; each takes a few milliseconds. */
#define TOOL_INFO_COST_ROUNDS 3u

/* A fact, as the report words it. */
static const char *tool_info_yes(bool value)
{
	return value ? "yes" : "no";
}

/* libc's CLOCK_MONOTONIC in ns: the clock the calibration times are on. */
static uint64_t tool_info_mono_ns(void)
{
	struct timespec ts;

	libc_clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * CLOCK_NS_PER_SEC + (uint64_t)ts.tv_nsec;
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
static void tool_info_print_facts(const struct cpu_facts *facts)
{
	struct tool_run_library library;
	char hidden[128];

	tool_run_find_library(&library);
	printf("fasttime %s\n\n", PACKAGE_VERSION);
	if (library.problem[0] == '\0')
		printf("library       %s (%s)\n", library.path, library.source);
	else
		printf("library       not usable: %s\n", library.problem);
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
static void tool_info_print_settings(const struct settings *settings, const struct cpu_facts *facts)
{
	printf("mode          %s\n", settings->relaxed ? "relaxed" : "ordered");
	tool_info_print_reading("reading", facts, settings->relaxed);
	printf("interval      %" PRIu32 " ms\n", settings->interval_ms);
	if (settings->disabled)
		printf("disabled      FASTTIME_DISABLE is set: every call would be answered "
		       "by libc\n");
}

/* One line per CPU the library would calibrate (every online CPU this
 * process may run on, whatever the caller's own affinity): its line, its
 * rate, how fresh and how good its calibration is. */
static void tool_info_print_cpus(const uint32_t *cpus, unsigned n, bool calibrated)
{
	uint64_t now_ns = tool_info_mono_ns(), tsc = cpu_rdtsc();
	const struct refresh_cpu *reference = NULL;
	uint32_t reference_cpu = n > 0 ? cpus[0] : 0;
	char versus_header[24];

	/* Lines are compared at one counter value: how far apart two CPUs'
	 * readings would be for the same tick. */
	for (unsigned i = 0; calibrated && i < n && reference == NULL; i++) {
		if (refresh_cpus[cpus[i]].calib.line.mult != 0) {
			reference = &refresh_cpus[cpus[i]];
			reference_cpu = cpus[i];
		}
	}
	snprintf(versus_header, sizeof versus_header, "vs cpu%" PRIu32, reference_cpu);
	printf("\nper-CPU calibration, done just now in this process (offset: ns at counter 0;\n"
	       "vs cpu%" PRIu32
	       ": this line minus that CPU's line at the current counter, in ns)\n",
	       reference_cpu);
	printf("%5s %4s %10s %20s %11s %12s %9s %9s  %s\n", "cpu", "node", "TSC GHz", "offset ns",
	       versus_header, "refreshed", "error ns", "sandwich", "status");
	for (unsigned i = 0; i < n; i++) {
		const struct refresh_cpu *c = &refresh_cpus[cpus[i]];
		bool visited = calibrated && c->last_sample_mono_ns != 0;
		bool has_line = calibrated && c->calib.line.mult != 0;
		char node[16] = "-", ghz[24] = "-", offset[32] = "-", versus[24] = "-";
		char refreshed[32] = "never", error[24] = "-", sandwich[24] = "-";
		const char *status = c->dropped ? "dropped" : has_line ? "fast" : "no line";

		if (visited) {
			snprintf(node, sizeof node, "%" PRIu32, c->node);
			snprintf(refreshed, sizeof refreshed, "%.1f ms ago",
				 (double)(int64_t)(now_ns - c->last_sample_mono_ns) / 1e6);
			snprintf(sandwich, sizeof sandwich, "%" PRIu64 " ns",
				 c->calib.narrowest_width_ns);
		}
		if (visited && c->calib.slope_mult != 0)
			snprintf(ghz, sizeof ghz, "%.6f",
				 TOOL_INFO_TWO_64 / (double)c->calib.slope_mult);
		if (has_line) {
			snprintf(offset, sizeof offset, "%+" PRId64, (int64_t)c->calib.line.offset);
			snprintf(versus, sizeof versus, "%+" PRId64,
				 (int64_t)(calib_line_eval(c->calib.line, tsc) -
					   calib_line_eval(reference->calib.line, tsc)));
			snprintf(error, sizeof error, "%+" PRId64, c->calib.last_error_ns);
		}
		printf("%5" PRIu32 " %4s %10s %20s %11s %12s %9s %9s  %s\n", cpus[i], node, ghz,
		       offset, versus, refreshed, error, sandwich, status);
	}
}

/* Which entry points the library would answer from the counter, from the
 * measurement it made when choosing, in the configured mode; when and on
 * what that measurement was made. */
static void tool_info_print_choice(bool relaxed, bool disabled)
{
	uint32_t chosen = refresh_choice.chosen;

	printf("\nentry points in %s mode, as the library would choose them%s (ns per call)\n",
	       relaxed ? "relaxed" : "ordered", disabled ? " without FASTTIME_DISABLE" : "");
	if (!refresh_apis_chosen) {
		printf("  not measured: every call would be answered by libc\n");
		return;
	}
	printf("  chosen after round %u, %.3f s after calibration started, measured on cpu %" PRIu32
	       " with lines on %u of %u CPUs%s\n",
	       refresh_choice.round, (double)refresh_choice.after_start_ns / 1e9,
	       refresh_choice.cpu, refresh_choice.cpus_with_line, refresh_choice.cpus_usable,
	       refresh_choice.rejected > 0 ? " (after measurements thrown away)" : "");
	printf("  %-32s %7s %8s  %s\n", "entry point", "libc", "fasttime", "answered by");
	for (unsigned a = 0; a < API_CHOICE_COUNT; a++) {
		const struct api_cost *cost = &refresh_api_costs[a];

		printf("  %-32s %7.1f %8.1f  %s\n", cost->name, cost->libc_ns, cost->fast_ns,
		       (chosen & cost->flag) ? "fasttime"
					     : "libc (the counter was not faster here)");
	}
}

/* Keeps the cheaper of each measured cost in best. */
static void tool_info_keep_best(struct api_cost best[API_CHOICE_COUNT],
				const struct api_cost costs[API_CHOICE_COUNT])
{
	for (unsigned a = 0; a < API_CHOICE_COUNT; a++) {
		best[a].name = costs[a].name;
		if (best[a].libc_ns == 0 || costs[a].libc_ns < best[a].libc_ns)
			best[a].libc_ns = costs[a].libc_ns;
		if (best[a].fast_ns == 0 || costs[a].fast_ns < best[a].fast_ns)
			best[a].fast_ns = costs[a].fast_ns;
	}
}

/* The CLOCK_READ_BITS of a mode here; false where it cannot read. */
static bool tool_info_mode_flags(const struct cpu_facts *facts, bool relaxed, uint32_t *flags)
{
	struct cpu_reading reading;

	if (cpu_choose_reading(facts, relaxed, &reading) != NULL)
		return false;
	*flags = clock_flags_for_reading(reading);
	return true;
}

/* Each entry point's cost from libc and from the counter in both modes,
 * measured now; the best of a few alternating measurements, as a shared
 * machine's noise only ever adds. */
static void tool_info_print_costs(const struct cpu_facts *facts)
{
	struct api_cost ordered[API_CHOICE_COUNT], relaxed[API_CHOICE_COUNT];
	struct api_cost costs[API_CHOICE_COUNT];
	uint32_t ordered_flags = 0, relaxed_flags = 0;
	bool can_order = tool_info_mode_flags(facts, false, &ordered_flags);
	unsigned fallbacks = 0, calls_fell_back = 0;

	tool_info_mode_flags(facts, true, &relaxed_flags);
	memset(ordered, 0, sizeof ordered);
	memset(relaxed, 0, sizeof relaxed);
	for (unsigned round = 0; round < TOOL_INFO_COST_ROUNDS; round++) {
		if (can_order) {
			memset(costs, 0, sizeof costs);
			api_choice_measure(ordered_flags, costs, &fallbacks,
					   refresh_renew_validity);
			calls_fell_back += fallbacks;
			tool_info_keep_best(ordered, costs);
		}
		memset(costs, 0, sizeof costs);
		api_choice_measure(relaxed_flags, costs, &fallbacks, refresh_renew_validity);
		calls_fell_back += fallbacks;
		tool_info_keep_best(relaxed, costs);
	}
	printf("\ncost on this machine, ns per call (best of %u measurements, just now)\n",
	       TOOL_INFO_COST_ROUNDS);
	if (calls_fell_back > 0)
		printf("(%u calls could not read the counter and went to libc: the figures may "
		       "be libc's)\n",
		       calls_fell_back);
	printf("  %-32s %7s %8s %8s\n", "entry point", "libc", "ordered", "relaxed");
	for (unsigned a = 0; a < API_CHOICE_COUNT; a++) {
		double libc_ns = relaxed[a].libc_ns;
		char ordered_ns[16] = "-";

		if (can_order) {
			if (ordered[a].libc_ns < libc_ns)
				libc_ns = ordered[a].libc_ns;
			snprintf(ordered_ns, sizeof ordered_ns, "%.1f", ordered[a].fast_ns);
		}
		printf("  %-32s %7.1f %8s %8.1f\n", relaxed[a].name, libc_ns, ordered_ns,
		       relaxed[a].fast_ns);
	}
}

/* The CPUs the engine visited (online, and its thread could run there);
 * where it did not run, the online ones. */
static unsigned tool_info_cpus(uint32_t *cpus, bool visited)
{
	static unsigned long online[CPU_MAX_CPUS / (8 * sizeof(unsigned long))];
	unsigned n = 0;
	bool have_online = cpu_online_mask(online, sizeof online / sizeof online[0]);

	for (uint32_t cpu = 0; cpu < CPU_MAX_CPUS; cpu++) {
		bool shown =
		    visited ? refresh_cpus[cpu].allowed : have_online && cpu_mask_has(online, cpu);
		if (shown)
			cpus[n++] = cpu;
	}
	if (n == 0)
		n = tool_check_allowed_cpus(cpus, CPU_MAX_CPUS);
	return n;
}

int tool_info_run(const struct settings *settings)
{
	static uint32_t cpus[CPU_MAX_CPUS];
	struct settings engine = *settings;
	struct cpu_facts facts;
	const char *reason;
	bool calibrated;
	unsigned n;

	cpu_probe_instructions(&facts);
	cpu_probe_kernel(&facts);
	tool_info_print_facts(&facts);
	tool_info_print_settings(settings, &facts);
	fflush(stdout);
	/* Calibrate even when FASTTIME_DISABLE is set: the facts are what was
	 * asked for. */
	engine.disabled = false;
	libc_resolve();
	refresh_configure(&engine);
	calibrated = refresh_calibrate_now();
	reason = refresh_verdict.unusable;
	if (reason == NULL && !calibrated)
		reason = "calibration gave no CPU a line";
	if (reason == NULL && !refresh_verdict.trusted)
		reason = "the lines did not pass their own checks against the kernel's clock";
	if (reason == NULL)
		printf("fast path     can run here\n");
	else
		printf("fast path     cannot run here: %s; every call would be answered by libc\n",
		       reason);
	n = tool_info_cpus(cpus, refresh_verdict.unusable == NULL);
	tool_info_print_cpus(cpus, n, calibrated);
	if (!calibrated)
		return 0;
	tool_info_print_choice(settings->relaxed, settings->disabled);
	tool_info_print_costs(&facts);
	return 0;
}
