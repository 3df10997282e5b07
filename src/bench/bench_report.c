/* fasttime-bench's table, CSV and trace file. The CSV's names and columns
 * are read by scripts/fasttime-compare and scripts/fasttime-benchmarks:
 * change them only together. */
#include "config.h"

#include "bench_report.h"

#include <inttypes.h>
#include <unistd.h>

#include "bench.h"
#include "bench_measure.h"
#include "entry_table.h"

static const char *const bench_report_source_names[BENCH_SOURCES] = { "libc", "ordered", "relaxed",
								      "process" };
/* The width of the tables' api column: the longest bench_name of the
 * entry table. */
#define BENCH_REPORT_API_WIDTH 28
static const char *const bench_report_bare_names[BENCH_BARES] = { "rdtsc", "rdtscp" };
static const char *const bench_report_library_state_names[] = { "ready", "absent", "busy",
								"served" };

/* Whether the engine's read path for api is compared with the floor: the
 * entry points that read the counter (time() does too, but libc answers it
 * from a coarse clock no read can match), where this run measured them. */
static bool bench_report_has_floor(enum entry_point api)
{
	return api != ENTRY_TIME && bench_measure_api_wanted(api);
}

/* One result's figures, every value in ns unless the metric says otherwise. */
static void bench_report_csv_result(const struct bench_result *r)
{
	/* Enough points for a percentile curve; the table picks its own. */
	static const double curve[] = {
		1,  5,	10, 20, 25, 30,	  40,	50,    60,    70,     75,
		80, 90, 95, 97, 99, 99.5, 99.9, 99.95, 99.99, 99.995, 99.999
	};
	const char *const clock_api[2] = { entry_table[ENTRY_MONOTONIC].bench_name,
					   entry_table[ENTRY_REALTIME].bench_name };

	printf("source,api,metric,value\n");
	for (unsigned s = 0; s < BENCH_SOURCES; s++) {
		const char *name = bench_report_source_names[s];
		const struct histogram *cost = &r->cost[s];

		if (!bench_measure_source_wanted(s))
			continue;
		for (unsigned i = 0; i < ENTRY_COUNT; i++) {
			enum entry_point a = bench_measure_order[i];

			if (bench_measure_api_wanted(a))
				printf("%s,%s,ns_per_call,%.2f\n", name, entry_table[a].bench_name,
				       r->best_ns[a][s]);
		}
		for (unsigned i = 0; i < sizeof curve / sizeof curve[0]; i++)
			printf("%s,%s,cost_p%g_ns,%.1f\n", name, clock_api[0], curve[i],
			       histogram_percentile(cost, curve[i]) / 10.0);
		printf("%s,%s,cost_max_ns,%.1f\n", name, clock_api[0], (double)cost->max / 10.0);
		printf("%s,%s,cost_mean_ns,%.1f\n", name, clock_api[0],
		       cost->total ? cost->sum / (double)cost->total / 10.0 : 0.0);
		printf("%s,%s,cost_batches,%" PRIu64 "\n", name, clock_api[0], cost->total);
		for (unsigned c = 0; c < 2; c++) {
			const struct histogram *error = &r->error[s][c];
			printf("%s,%s,error_p50_ns,%.0f\n", name, clock_api[c],
			       histogram_percentile(error, 50));
			printf("%s,%s,error_p99_ns,%.0f\n", name, clock_api[c],
			       histogram_percentile(error, 99));
			printf("%s,%s,error_max_ns,%" PRIu64 "\n", name, clock_api[c], error->max);
			printf("%s,%s,error_samples,%" PRIu64 "\n", name, clock_api[c],
			       error->total);
		}
		printf("%s,%s,backward_steps,%" PRIu64 "\n", name, clock_api[0], r->backward[s]);
		printf("%s,%s,lines_gave_up,%" PRIu64 "\n", name, clock_api[0], r->gave_up[s]);
	}
	if (bench_options.symbols)
		return;
	/* The floor, and each mode's distance from it and ratio to libc, all
	 * from this run's rounds. */
	for (unsigned b = 0; b < BENCH_BARES; b++)
		printf("%s,-,ns_per_call,%.2f\n", bench_report_bare_names[b], r->bare_ns[b]);
	for (unsigned i = 0; i < ENTRY_COUNT; i++) {
		enum entry_point a = bench_measure_order[i];

		if (!bench_report_has_floor(a))
			continue;
		printf("relaxed,%s,minus_rdtsc_ns,%.2f\n", entry_table[a].bench_name,
		       r->best_ns[a][BENCH_RELAXED] - r->bare_ns[BENCH_BARE_RDTSC]);
		printf("ordered,%s,minus_rdtscp_ns,%.2f\n", entry_table[a].bench_name,
		       r->best_ns[a][BENCH_ORDERED] - r->bare_ns[BENCH_BARE_RDTSCP]);
		for (unsigned s = BENCH_ORDERED; s <= BENCH_RELAXED; s++)
			printf("%s,%s,ratio_to_libc,%.3f\n", bench_report_source_names[s],
			       entry_table[a].bench_name,
			       r->best_ns[a][s] / r->best_ns[a][BENCH_LIBC]);
	}
}

/* Each thread's own ns per call, beside the merged figures: whether two
 * threads reading at once each pay what one pays alone. */
static void bench_report_csv_threads(const struct bench_result *results, unsigned n)
{
	for (unsigned t = 0; t < n; t++) {
		for (unsigned s = 0; s < BENCH_SOURCES; s++) {
			if (!bench_measure_source_wanted(s))
				continue;
			for (unsigned i = 0; i < ENTRY_COUNT; i++) {
				enum entry_point a = bench_measure_order[i];

				if (bench_measure_api_wanted(a))
					printf("%s,%s,thread%u_ns_per_call,%.2f\n",
					       bench_report_source_names[s],
					       entry_table[a].bench_name, t + 1,
					       results[t].best_ns[a][s]);
			}
		}
	}
}

void bench_report_csv(const struct bench_result *merged, const struct bench_result *results,
		      unsigned n, const struct bench_library *library)
{
	bench_report_csv_result(merged);
	if (n > 1)
		bench_report_csv_threads(results, n);
	printf("bench,-,threads,%u\n", n);
	printf("bench,-,seconds,%g\n", bench_options.seconds);
	printf("bench,-,rounds,%u\n", merged->rounds);
	printf("bench,-,loop_calls,%u\n", BENCH_MEASURE_LOOP_CALLS);
	printf("bench,-,batch_calls,%u\n", BENCH_MEASURE_BATCH);
	if (bench_options.symbols) {
		printf("bench,-,preloaded,%d\n", library->preloaded);
		printf("bench,-,clock_gettime_from,%s\n", library->owner);
		printf("bench,-,library_thread,%s\n",
		       library->preloaded ? bench_report_library_state_names[library->state]
					  : "none");
		printf("bench,-,warmup_ms,%.1f\n", library->waited_ms);
		if (bench_options.after_fork > 0)
			printf("bench,-,after_fork_s,%.1f\n", bench_options.after_fork);
	}
}

/* One thread's tables: ns per call, the distance from the bare instruction,
 * the per-call cost percentiles and the error against libc. */
static void bench_report_table_result(const struct bench_result *r)
{
	enum bench_source fast[2];
	unsigned nfast = 0;

	for (unsigned s = BENCH_ORDERED; s < BENCH_SOURCES; s++)
		if (bench_measure_source_wanted(s))
			fast[nfast++] = s;

	printf("\nns per call (best loop of %u calls; ratio to libc in this run)\n",
	       BENCH_MEASURE_LOOP_CALLS);
	printf("%-*s %8s", BENCH_REPORT_API_WIDTH, "api", "libc");
	for (unsigned f = 0; f < nfast; f++)
		printf(" %10s %6s", bench_report_source_names[fast[f]], "ratio");
	printf("\n");
	for (unsigned i = 0; i < ENTRY_COUNT; i++) {
		enum entry_point a = bench_measure_order[i];

		if (!bench_measure_api_wanted(a))
			continue;
		printf("%-*s %8.2f", BENCH_REPORT_API_WIDTH, entry_table[a].bench_name,
		       r->best_ns[a][BENCH_LIBC]);
		for (unsigned f = 0; f < nfast; f++)
			printf(" %10.2f %6.2f", r->best_ns[a][fast[f]],
			       r->best_ns[a][fast[f]] / r->best_ns[a][BENCH_LIBC]);
		printf("\n");
	}

	if (!bench_options.symbols) {
		printf("\nagainst the bare instruction (best loop of each, same rounds): "
		       "rdtsc %.2f ns, %s %.2f ns\n",
		       r->bare_ns[BENCH_BARE_RDTSC], bench_measure_ordered_instruction(),
		       r->bare_ns[BENCH_BARE_RDTSCP]);
		printf("%-*s %14s %14s\n", BENCH_REPORT_API_WIDTH, "api", "relaxed-rdtsc",
		       "ordered-instr");
		for (unsigned i = 0; i < ENTRY_COUNT; i++) {
			enum entry_point a = bench_measure_order[i];

			if (bench_report_has_floor(a))
				printf("%-*s %14.2f %14.2f\n", BENCH_REPORT_API_WIDTH,
				       entry_table[a].bench_name,
				       r->best_ns[a][BENCH_RELAXED] - r->bare_ns[BENCH_BARE_RDTSC],
				       r->best_ns[a][BENCH_ORDERED] -
					   r->bare_ns[BENCH_BARE_RDTSCP]);
		}
	}

	printf("\nper-call cost of clock_gettime(MONOTONIC), ns (batches of %u)\n",
	       BENCH_MEASURE_BATCH);
	printf("%-10s %8s %8s %8s %8s %8s %8s\n", "source", "p50", "p90", "p99", "p99.9", "p99.99",
	       "max");
	for (unsigned s = 0; s < BENCH_SOURCES; s++) {
		if (!bench_measure_source_wanted(s))
			continue;
		printf("%-10s %8.1f %8.1f %8.1f %8.1f %8.1f %8.1f\n", bench_report_source_names[s],
		       histogram_percentile(&r->cost[s], 50) / 10.0,
		       histogram_percentile(&r->cost[s], 90) / 10.0,
		       histogram_percentile(&r->cost[s], 99) / 10.0,
		       histogram_percentile(&r->cost[s], 99.9) / 10.0,
		       histogram_percentile(&r->cost[s], 99.99) / 10.0,
		       (double)r->cost[s].max / 10.0);
	}

	printf("\nerror against libc, ns (|reading - libc sandwich midpoint|; 0 inside the "
	       "sandwich)\n");
	printf("%-10s %-10s %8s %8s %8s %10s %9s\n", "source", "clock", "p50", "p99", "max",
	       "samples", "backward");
	for (unsigned s = 0; s < BENCH_SOURCES; s++) {
		if (!bench_measure_source_wanted(s))
			continue;
		for (unsigned c = 0; c < 2; c++)
			printf("%-10s %-10s %8.0f %8.0f %8" PRIu64 " %10" PRIu64 " %9s\n",
			       bench_report_source_names[s], c ? "REALTIME" : "MONOTONIC",
			       histogram_percentile(&r->error[s][c], 50),
			       histogram_percentile(&r->error[s][c], 99), r->error[s][c].max,
			       r->error[s][c].total, c ? "-" : "");
		printf("%-10s %-10s %48" PRIu64 "\n", "", "backward steps", r->backward[s]);
		if (r->gave_up[s] > 0)
			printf("%-10s %-10s %48" PRIu64 "\n", "", "lines gave up", r->gave_up[s]);
	}
	for (unsigned s = 0; s < BENCH_SOURCES; s++)
		if (bench_measure_source_wanted(s) && r->gave_up[s] > 0) {
			printf("\nWarning: the engine's lines gave up on some readings (the "
			       "refresh thread\ncould not keep them fresh): libc answered those, "
			       "and the ns per call above\ninclude libc's cost, as a preloaded "
			       "process would pay it.\n");
			break;
		}
}

void bench_report_table(const struct cpu_facts *facts, const struct bench_result *results,
			unsigned n, const struct bench_library *library)
{
	printf("fasttime-bench %s: %s, %ld CPUs, clocksource %s, %u thread(s), %.1f s\n",
	       PACKAGE_VERSION, facts->brand, sysconf(_SC_NPROCESSORS_ONLN), facts->clocksource, n,
	       bench_options.seconds);
	if (bench_options.symbols && !library->preloaded)
		printf("measuring this process's symbols: %s's (fasttime not preloaded)\n",
		       library->owner);
	else if (bench_options.symbols && library->state == BENCH_LIBRARY_READY)
		printf("measuring this process's symbols: preloaded; the library's "
		       "first round was over after %.0f ms\n",
		       library->waited_ms);
	else if (bench_options.symbols && library->state == BENCH_LIBRARY_SERVED)
		printf("measuring this process's symbols: preloaded, served by the page %s "
		       "(no thread of the library's)\n",
		       library->page);
	else if (bench_options.symbols && library->state == BENCH_LIBRARY_ABSENT)
		printf("measuring this process's symbols: preloaded, but the library "
		       "runs no thread: it answers with libc\n");
	else if (bench_options.symbols)
		printf("measuring this process's symbols: preloaded, but the library's "
		       "thread was not seen at rest after %.0f ms\n",
		       library->waited_ms);
	if (bench_options.after_fork > 0)
		printf("measured in a child process, %.1f s after fork() (its library "
		       "restarted its own thread: %s)\n",
		       bench_options.after_fork,
		       library->state == BENCH_LIBRARY_READY ? "yes" : "no");
	for (unsigned t = 0; t < n; t++) {
		if (n > 1)
			printf("\n== thread %u\n", t + 1);
		bench_report_table_result(&results[t]);
	}
}

bool bench_report_trace(FILE *f, const struct bench_trace *trace)
{
	fprintf(f,
		"# fasttime-bench %s: clock_gettime(MONOTONIC) against libc, first thread\n"
		"# one line per round and source; ns; offset: median of reading - libc\n"
		"# sandwich midpoint; error: largest distance outside a sandwich\n"
		"# seconds source offset_ns error_ns\n",
		PACKAGE_VERSION);
	for (size_t i = 0; i < trace->count; i++) {
		const struct bench_trace_point *point = &trace->points[i];
		fprintf(f, "%.6f %s %.1f %" PRIu64 "\n", point->seconds,
			bench_report_source_names[point->source], point->offset_ns,
			point->error_ns);
	}
	if (trace->full)
		fprintf(f, "# out of memory: the rest of the run is not recorded\n");
	return fflush(f) == 0 && !ferror(f);
}
