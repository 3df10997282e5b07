/* The per-API choice cannot be fooled by the CPU it is made from.
 *
 * The engine is calibrated in this process (no preload: the choice is the
 * engine's), then the choice is made 100 times, each time from a caller
 * pinned to a CPU whose line has just been taken away, as the first time
 * call of a program can run on a CPU that has no line yet. A choice
 * measured there would time libc behind a failed counter read and leave
 * every entry point on libc. The engine must measure on a CPU that has a
 * line: wherever the counter wins by more than 10 % (measured here first,
 * on a CPU with a line), no choice may leave every entry point on libc.
 *
 * FASTTIME_MODE chooses the mode; FASTTIME_HWCAPS applies. Exit 0 pass,
 * 1 fail, 77 skip (the machine cannot run the fast path in this mode). */
#include "config.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_choice.h"
#include "clock.h"
#include "libc.h"
#include "lines.h"
#include "machine.h"
#include "refresh.h"
#include "table.h"
#include "verdict.h"

#define CHOICE_RUNS 100
/* Choices that must be made, not thrown away: measured where the caller
 * has no line, none would be. */
#define CHOICE_MIN_MADE 10
/* The counter must win by this much for "every entry point on libc" to be
 * a wrong choice rather than a close call on a noisy machine. */
#define CHOICE_CLEAR_WIN	0.90
#define CHOICE_REFERENCE_ROUNDS 5

static const char *choice_getenv(const char *name)
{
	return getenv(name);
}

static void choice_warn(const char *line)
{
	fputs(line, stderr);
}

static bool choice_pin(uint32_t cpu)
{
	cpu_set_t one;

	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	return sched_setaffinity(0, sizeof one, &one) == 0;
}

/* The entry points the counter beats by CHOICE_CLEAR_WIN, measured from
 * a CPU with a line: the best of a few measurements, none with a call that
 * fell back. */
static uint32_t choice_clear_winners(uint32_t cpu, uint32_t mode_flags)
{
	double libc_ns[ENTRY_COUNT], fast_ns[ENTRY_COUNT];
	struct api_cost costs[ENTRY_COUNT];
	uint32_t winners = 0;
	unsigned fallbacks;

	for (unsigned a = 0; a < ENTRY_COUNT; a++)
		libc_ns[a] = fast_ns[a] = 1e30;
	if (!choice_pin(cpu))
		return 0;
	for (unsigned r = 0; r < CHOICE_REFERENCE_ROUNDS; r++) {
		api_choice_measure(mode_flags, costs, &fallbacks);
		if (fallbacks > 0)
			continue;
		for (unsigned a = 0; a < ENTRY_COUNT; a++) {
			libc_ns[a] = costs[a].libc_ns < libc_ns[a] ? costs[a].libc_ns : libc_ns[a];
			fast_ns[a] = costs[a].fast_ns < fast_ns[a] ? costs[a].fast_ns : fast_ns[a];
		}
	}
	for (unsigned a = 0; a < ENTRY_COUNT; a++) {
		bool wins = fast_ns[a] < libc_ns[a] * CHOICE_CLEAR_WIN;

		printf("reference on cpu %u: %-32s libc %7.1f ns, counter %7.1f ns%s\n", cpu,
		       costs[a].name, libc_ns[a], fast_ns[a], wins ? ": a clear win" : "");
		if (wins)
			winners |= costs[a].flag;
	}
	return winners;
}

int main(void)
{
	static uint32_t lined[CPU_MAX_CPUS];
	struct settings settings;
	const char *reason = test_machine_unusable();
	unsigned n = 0, all_libc = 0, rejected = 0, elsewhere = 0;
	uint32_t winners;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (reason != NULL) {
		printf("SKIP: %s\n", reason);
		return 77;
	}
	settings_load(&settings, choice_getenv, choice_warn);
	cpu_hidden_hwcaps = settings.hidden_hwcaps;
	settings.force = false;
	libc_resolve();
	refresh_configure(&settings);
	if (!refresh_calibrate_now() || !verdict_trusted()) {
		printf("SKIP: calibration gave no trusted line here\n");
		return 77;
	}
	/* The choices take longer than the lines' validity window, which no
	 * refresh thread renews here: keep the lines fresh for the test. */
	table_set_validity(0, UINT64_MAX);
	for (uint32_t cpu = 0; cpu < CPU_MAX_CPUS; cpu++)
		if (lines_cpus[cpu].allowed &&
		    lines_cpus[cpu].calib[CLOCK_LINES_MONOTONIC].line.mult != 0)
			lined[n++] = cpu;
	printf("mode %s, reading %s with the CPU id from %s, %u CPU(s) with a line\n",
	       settings.relaxed ? "relaxed" : "ordered",
	       cpu_counter_read_name(verdict_reading().counter),
	       cpu_id_source_name(verdict_reading().cpu_id), n);
	winners = choice_clear_winners(lined[0], clock_flags_for_reading(verdict_reading()));

	for (unsigned run = 0; run < CHOICE_RUNS; run++) {
		uint32_t caller = lined[run % n];
		struct calib_cpu saved = lines_cpus[caller].calib[CLOCK_LINES_MONOTONIC];
		bool made;

		/* The caller's CPU loses its line (with one CPU, it keeps it:
		 * there is nowhere else to measure). */
		if (n > 1) {
			calib_cpu_reset(&lines_cpus[caller].calib[CLOCK_LINES_MONOTONIC]);
			table_withdraw(caller);
		}
		if (!choice_pin(caller)) {
			printf("FAIL: cannot pin to cpu %u\n", caller);
			return 1;
		}
		made = refresh_choose_now();
		if (n > 1) {
			lines_cpus[caller].calib[CLOCK_LINES_MONOTONIC] = saved;
			table_publish(caller, saved.line);
		}
		if (!made) {
			rejected++;
			continue;
		}
		if (api_choice_last.cpu != caller)
			elsewhere++;
		if (winners != 0 && (api_choice_last.chosen & CLOCK_API_ALL) == 0)
			all_libc++;
	}
	printf("%d choices from a caller on a CPU %s: %u measured on another CPU, %u thrown "
	       "away, %u left every entry point on libc\n",
	       CHOICE_RUNS, n > 1 ? "without a line" : "(the only one)", elsewhere, rejected,
	       all_libc);
	if (winners == 0) {
		printf("note: the counter wins by %.0f %% nowhere here in this mode: no choice "
		       "can be judged wrong\n",
		       (1 - CHOICE_CLEAR_WIN) * 100);
		return 0;
	}
	/* A measurement is thrown away when any of its calls fell back: made
	 * where there is no line, all are (the fault this test is for); on a
	 * loaded machine a preemption longer than the lines' validity (120 ms)
	 * throws away a few more. */
	if (all_libc > 0 || CHOICE_RUNS - rejected < CHOICE_MIN_MADE) {
		printf("FAIL: where the counter clearly wins, %u choices left every entry point "
		       "on libc and %u of %d were thrown away\n",
		       all_libc, rejected, CHOICE_RUNS);
		return 1;
	}
	printf("PASS\n");
	return 0;
}
