/* The library's own judgement of this machine, for the tests' skips. */
#include "config.h"

#include "machine.h"

#include <stdlib.h>

#include "cpu.h"
#include "settings.h"

static const char *test_machine_getenv(const char *name)
{
	return getenv(name);
}

/* The library itself warns about settings it cannot use. */
static void test_machine_quiet(const char *line)
{
	(void)line;
}

const char *test_machine_unusable(void)
{
	struct settings settings;
	struct cpu_facts facts;
	struct cpu_reading reading;
	const char *reason;

	settings_load(&settings, test_machine_getenv, test_machine_quiet);
	cpu_hidden_hwcaps = settings.hidden_hwcaps;
	cpu_probe_instructions(&facts);
	reason = cpu_unusable_reason(&facts, false);
	if (reason == NULL)
		reason = cpu_choose_reading(&facts, settings.relaxed, &reading);
	return reason;
}
