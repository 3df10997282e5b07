/* Runs every unit suite. The table and clock suites execute the TSC and
 * cmpxchg16b instructions, so they run only where the fast path could. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "cpu.h"
#include "unit.h"

int main(void)
{
	struct cpu_facts facts;
	const char *reason;
	SRunner *runner;
	int failed;

	cpu_probe_instructions(&facts);
	reason = cpu_unusable_reason(&facts, false);

	runner = srunner_create(suite_calib());
	srunner_add_suite(runner, suite_histogram());
	srunner_add_suite(runner, suite_settings());
	srunner_add_suite(runner, suite_refresh());
	srunner_add_suite(runner, suite_cpu());
	srunner_add_suite(runner, suite_evidence());
	if (reason == NULL) {
		srunner_add_suite(runner, suite_table());
		srunner_add_suite(runner, suite_clock());
	} else {
		printf("SKIP: table and clock suites: %s\n", reason);
	}
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
