/* What fasttime --info finds, gathered once and shown in either form (the
 * text of tool_info.c, the key=value lines of tool_info_keys.c): the facts,
 * a calibration run in this process as the library would run it, and the
 * costs of each entry point measured just now. */
#ifndef FASTTIME_TOOL_INFO_REPORT_H
#define FASTTIME_TOOL_INFO_REPORT_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "api_choice.h"
#include "cpu.h"
#include "refresh.h"
#include "settings.h"
#include "tool_run.h"

/* Measurements of the costs table; each takes a few milliseconds. */
#define TOOL_INFO_COST_ROUNDS 3u

struct tool_info_report {
	const struct settings *settings; /* as the environment and options make them */
	struct cpu_facts facts;		 /* FASTTIME_HWCAPS applied */
	struct tool_run_library library;
	/* Why the fast path cannot run here; NULL when it can. */
	const char *unusable;
	bool calibrated; /* at least one CPU got a line */
	uint32_t *cpus;	 /* the CPUs shown, cpu_count of them */
	unsigned cpu_count;
	/* The costs table: measured only after a calibration. */
	bool costs_measured;
	bool can_order; /* ordered reads are possible here */
	unsigned calls_fell_back;
	struct api_cost ordered[ENTRY_COUNT], relaxed[ENTRY_COUNT];
	/* Whether a program started now would be served by a calibration
	 * service (service_page.h): the page's path and its service's pid;
	 * else, where a page exists, why it was refused. */
	bool served;
	char page[PATH_MAX];
	int service_pid;
	const char *page_refused;
	/* Where served: the page's flags for this reader's mode, which say
	 * which entry points it answers from the counter. */
	uint32_t served_flags;
};

/* One CPU's row of the per-CPU table, as numbers; a fact is known only
 * where its flag says so. */
struct tool_info_cpu_row {
	bool visited;  /* sampled: node, refreshed_ms_ago and sandwich_ns */
	bool has_rate; /* ghz */
	bool has_line; /* offset_ns, versus_ns and error_ns */
	uint32_t node;
	double ghz;
	double refreshed_ms_ago;
	uint64_t sandwich_ns;
	int64_t offset_ns; /* the line at counter 0 */
	int64_t versus_ns; /* this line minus the reference CPU's at the counter now */
	int64_t error_ns;
	bool dropped; /* its calibration kept failing: libc answers there */
};

/* Probes the processor and the kernel and finds the library: the facts
 * shown before the calibration. */
void tool_info_report_probe(struct tool_info_report *report, const struct settings *settings);
/* Calibrates in this process as the library would (even with
 * FASTTIME_DISABLE set: the facts are what was asked for), and finds the
 * CPUs to show, into cpus (room for CPU_MAX_CPUS). */
void tool_info_report_calibrate(struct tool_info_report *report, uint32_t *cpus);
/* Measures each entry point's cost from libc and from the counter in both
 * modes; only after a calibration that gave a line. */
void tool_info_report_measure_costs(struct tool_info_report *report);
/* The CPU the per-CPU table compares lines with: the first shown with a
 * line (the first shown when none has one). */
uint32_t tool_info_report_reference_cpu(const struct tool_info_report *report);
/* The row of one shown CPU, with now_ns (libc's CLOCK_MONOTONIC) and tsc
 * read just before. */
void tool_info_report_cpu_row(const struct tool_info_report *report, uint32_t cpu, uint64_t now_ns,
			      uint64_t tsc, struct tool_info_cpu_row *row);
/* libc's cost of entry point a: the cheaper of its two measurements. */
double tool_info_report_libc_ns(const struct tool_info_report *report, unsigned a);
/* Where clock_gettime finds the kernel's clock here, as the clocksource
 * decides: "the vDSO" or "a system call"; NULL where the clocksource is
 * not known. */
const char *tool_info_report_kernel_clock(const struct tool_info_report *report);

#endif
