/* The tools' calibration (the fasttime command, fasttimed, the benchmark,
 * the tests): the refresh thread's rounds and choice of entry points, run
 * in the caller's own thread, synchronously, with the settings
 * refresh_configure recorded. */
#include "config.h"

#include "refresh.h"

#include <sched.h>
#include <string.h>

#include "api_choice.h"
#include "clock_table.h"
#include "libc.h"
#include "lines.h"
#include "look.h"
#include "placement.h"
#include "round.h"
#include "verdict.h"

/* Whether the calibration is done: every usable CPU has a line, and its
 * raw line, and the entry points are chosen with every clock answerable. */
static bool refresh_tools_calibrated(unsigned with_line)
{
	return with_line == api_choice_last.cpus_usable && api_choice_made &&
	       (api_choice_last.answerable & CLOCK_API_MONOTONIC_RAW) != 0;
}

bool refresh_calibrate_now(void)
{
	const struct refresh_settings *settings = refresh_recorded_settings();
	unsigned long saved[PLACEMENT_MASK_WORDS];
	unsigned with_line = 0;
	uint64_t began;

	api_choice_forget();
	/* The tools: they may read files, and describe every CPU. */
	verdict_probe_kernel_now();
	placement_describe_machine();
	memset(saved, 0, sizeof saved);
	if (!round_map() || sched_getaffinity(0, sizeof saved, (cpu_set_t *)saved) != 0 ||
	    refresh_prepare_verdict() != NULL || !placement_read_affinity())
		return false;
	began = libc_monotonic_ns();
	api_choice_begin(began);
	for (unsigned round = 0;; round++) {
		uint64_t start = libc_monotonic_ns();
		uint64_t next = round_interval_after(round, settings->configured_interval_ns);
		struct round_result result = round_run(next, look_take_discontinuity());

		with_line = result.with_line;
		refresh_after_round(round, &result);
		if (refresh_tools_calibrated(with_line) || verdict_unusable() != NULL ||
		    (round >= 7 && start - began >= REFRESH_CALIBRATE_PATIENCE_NS))
			break;
		refresh_sleep_until(round_next_deadline(start + result.next_interval_ns));
	}
	sched_setaffinity(0, sizeof saved, (cpu_set_t *)saved);
	return with_line > 0;
}

bool refresh_choose_now(void)
{
	const struct refresh_settings *settings = refresh_recorded_settings();
	unsigned with_line = lines_answering();

	if (with_line == 0)
		return false;
	/* The caller may come long after the last round: the lines' validity
	 * is renewed as the watch would, or a round runs, judged as the
	 * thread judges its own (the clocksource's verdict too). */
	if (look_once() != LOOK_RENEWED) {
		struct round_result result =
		    round_run(settings->configured_interval_ns, look_take_discontinuity());

		verdict_after_round(result.narrowest_ns, result.steady);
		return api_choice_again(with_line, &result, settings->force_fast);
	}
	return api_choice_again(with_line, NULL, settings->force_fast);
}
