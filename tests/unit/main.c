/* Runs every unit suite. The table, clock and service page suites execute the TSC and
 * cmpxchg16b instructions, so they run only where the fast path could, and
 * with the CPU features the library would see: FASTTIME_HWCAPS and an
 * emulator's limits apply here as they do to the library. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "cpu.h"
#include "settings.h"
#include "unit.h"

static const char *unit_getenv(const char *name)
{
	return getenv(name);
}

/* The library warns about its settings itself; the runner stays quiet. */
static void unit_quiet(const char *line)
{
	(void)line;
}

int main(void)
{
	struct settings settings;
	struct cpu_facts facts;
	const char *reason;
	SRunner *runner;
	int failed;

	settings_load(&settings, unit_getenv, unit_quiet);
	cpu_hidden_hwcaps = settings.hidden_hwcaps;
	cpu_probe_instructions(&facts);
	reason = cpu_unusable_reason(&facts, false);

	runner = srunner_create(suite_calib());
	srunner_add_suite(runner, suite_histogram());
	srunner_add_suite(runner, suite_settings());
	srunner_add_suite(runner, suite_refresh());
	srunner_add_suite(runner, suite_cpu());
	srunner_add_suite(runner, suite_evidence());
	srunner_add_suite(runner, suite_watch());
	srunner_add_suite(runner, suite_clock_table());
	srunner_add_suite(runner, suite_service_notify());
	srunner_add_suite(runner, suite_stale_checks());
	srunner_add_suite(runner, suite_preload_clamp());
	if (reason == NULL) {
		srunner_add_suite(runner, suite_table());
		srunner_add_suite(runner, suite_clock());
		srunner_add_suite(runner, suite_service_page());
	} else {
		printf("SKIP: table and clock suites: %s\n", reason);
	}
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
