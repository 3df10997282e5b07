/* The FASTTIME_* variables, read through a fake environment. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cpu.h"
#include "settings.h"
#include "unit.h"

#define SETTINGS_TEST_VARS     8
#define SETTINGS_TEST_WARNINGS 8

/* The fake environment and the warnings received, reset by each test. */
static struct {
	const char *name;
	const char *value;
} settings_test_env[SETTINGS_TEST_VARS];
static char settings_test_warnings[SETTINGS_TEST_WARNINGS][512];
static unsigned settings_test_warning_count;

static const char *settings_test_lookup(const char *name)
{
	for (unsigned i = 0; i < SETTINGS_TEST_VARS; i++)
		if (settings_test_env[i].name != NULL &&
		    strcmp(settings_test_env[i].name, name) == 0)
			return settings_test_env[i].value;
	return NULL;
}

static void settings_test_warn(const char *line)
{
	ck_assert_uint_lt(strlen(line), sizeof settings_test_warnings[0]);
	if (settings_test_warning_count < SETTINGS_TEST_WARNINGS)
		strcpy(settings_test_warnings[settings_test_warning_count], line);
	settings_test_warning_count++;
}

static void settings_test_clear(void)
{
	memset(settings_test_env, 0, sizeof settings_test_env);
	memset(settings_test_warnings, 0, sizeof settings_test_warnings);
	settings_test_warning_count = 0;
}

static void settings_test_set(const char *name, const char *value)
{
	for (unsigned i = 0; i < SETTINGS_TEST_VARS; i++) {
		if (settings_test_env[i].name == NULL ||
		    strcmp(settings_test_env[i].name, name) == 0) {
			settings_test_env[i].name = name;
			settings_test_env[i].value = value;
			return;
		}
	}
	ck_abort_msg("too many variables for the fake environment");
}

/* Loads settings from the fake environment, starting from garbage so that
 * every field must be written. */
static void settings_test_load(struct settings *settings)
{
	memset(settings, 0xa5, sizeof *settings);
	settings_load(settings, settings_test_lookup, settings_test_warn);
}

static void settings_check_defaults(const struct settings *settings)
{
	ck_assert(!settings->disabled);
	ck_assert(!settings->relaxed);
	ck_assert(!settings->debug);
	ck_assert_uint_eq(settings->interval_ms, SETTINGS_DEFAULT_INTERVAL_MS);
	ck_assert_uint_eq(settings->hidden_hwcaps, 0);
}

/* Checks that exactly one warning came, as one line naming the variable. */
static const char *settings_check_one_warning(const char *name)
{
	const char *line = settings_test_warnings[0];
	size_t len = strlen(line);

	ck_assert_uint_eq(settings_test_warning_count, 1);
	ck_assert_msg(strncmp(line, "fasttime: ", 10) == 0, "warning \"%s\"", line);
	ck_assert_msg(len > 0 && line[len - 1] == '\n', "warning \"%s\"", line);
	ck_assert_msg(strchr(line, '\n') == line + len - 1, "warning \"%s\"", line);
	ck_assert_msg(strstr(line, name) != NULL, "warning \"%s\" names no %s", line, name);
	return line;
}

/* With nothing set, every setting has its default and nothing is said. */
START_TEST(test_settings_defaults)
{
	struct settings settings;

	settings_test_clear();
	settings_test_load(&settings);
	settings_check_defaults(&settings);
	ck_assert_uint_eq(settings_test_warning_count, 0);
}
END_TEST

/* Each spelling of yes and no is accepted silently by both booleans. */
START_TEST(test_settings_booleans)
{
	static const char *const yes[] = { "1", "yes", "true", "on" };
	static const char *const no[] = { "0", "no", "false", "off" };
	struct settings settings;

	for (unsigned i = 0; i < 4; i++) {
		settings_test_clear();
		settings_test_set("FASTTIME_DISABLE", yes[i]);
		settings_test_set("FASTTIME_DEBUG", no[i]);
		settings_test_load(&settings);
		ck_assert(settings.disabled);
		ck_assert(!settings.debug);
		ck_assert_uint_eq(settings_test_warning_count, 0);

		settings_test_clear();
		settings_test_set("FASTTIME_DISABLE", no[i]);
		settings_test_set("FASTTIME_DEBUG", yes[i]);
		settings_test_load(&settings);
		ck_assert(!settings.disabled);
		ck_assert(settings.debug);
		ck_assert(!settings.relaxed);
		ck_assert_uint_eq(settings.interval_ms, SETTINGS_DEFAULT_INTERVAL_MS);
		ck_assert_uint_eq(settings_test_warning_count, 0);
	}
}
END_TEST

/* The two modes are accepted silently. */
START_TEST(test_settings_modes)
{
	struct settings settings;

	settings_test_clear();
	settings_test_set("FASTTIME_MODE", "relaxed");
	settings_test_load(&settings);
	ck_assert(settings.relaxed);
	ck_assert_uint_eq(settings_test_warning_count, 0);

	settings_test_clear();
	settings_test_set("FASTTIME_MODE", "ordered");
	settings_test_load(&settings);
	settings_check_defaults(&settings);
	ck_assert_uint_eq(settings_test_warning_count, 0);
}
END_TEST

/* Intervals from 10 ms to one hour are taken as given. */
START_TEST(test_settings_intervals)
{
	static const struct {
		const char *text;
		uint32_t ms;
	} good[] = {
		{ "10", 10 },	{ "250", 250 },		{ "5000", 5000 },
		{ "0010", 10 }, { "3600000", 3600000 },
	};
	struct settings settings;

	for (unsigned i = 0; i < sizeof good / sizeof good[0]; i++) {
		settings_test_clear();
		settings_test_set("FASTTIME_INTERVAL_MS", good[i].text);
		settings_test_load(&settings);
		ck_assert_uint_eq(settings.interval_ms, good[i].ms);
		ck_assert_uint_eq(settings_test_warning_count, 0);
	}
}
END_TEST

/* Unusable values, each expected to give one warning and the default. */
static const struct {
	const char *name;
	const char *value;
} settings_garbage[] = {
	{ "FASTTIME_MODE", "fast" },
	{ "FASTTIME_MODE", "Relaxed" },
	{ "FASTTIME_MODE", "relaxed " },
	{ "FASTTIME_INTERVAL_MS", "abc" },
	{ "FASTTIME_INTERVAL_MS", "5" },
	{ "FASTTIME_INTERVAL_MS", "9" },
	{ "FASTTIME_INTERVAL_MS", "0" },
	{ "FASTTIME_INTERVAL_MS", "3600001" },
	{ "FASTTIME_INTERVAL_MS", "99999999999" },
	{ "FASTTIME_INTERVAL_MS", "184467440737095516160" },
	{ "FASTTIME_INTERVAL_MS", "-1" },
	{ "FASTTIME_INTERVAL_MS", "+100" },
	{ "FASTTIME_INTERVAL_MS", " 100" },
	{ "FASTTIME_INTERVAL_MS", "100ms" },
	{ "FASTTIME_INTERVAL_MS", "1e3" },
	{ "FASTTIME_DISABLE", "maybe" },
	{ "FASTTIME_DISABLE", "2" },
	{ "FASTTIME_DISABLE", "YES" },
	{ "FASTTIME_DEBUG", "2" },
	{ "FASTTIME_DEBUG", "yes please" },
};
#define SETTINGS_GARBAGE_COUNT ((int)(sizeof settings_garbage / sizeof settings_garbage[0]))

/* An unusable value gets exactly one warning line, which names the variable
 * and quotes the value, and the setting keeps its default. */
START_TEST(test_settings_garbage)
{
	struct settings settings;
	const char *line;

	settings_test_clear();
	settings_test_set(settings_garbage[_i].name, settings_garbage[_i].value);
	settings_test_load(&settings);
	settings_check_defaults(&settings);
	line = settings_check_one_warning(settings_garbage[_i].name);
	ck_assert_msg(strstr(line, settings_garbage[_i].value) != NULL, "warning \"%s\"", line);
}
END_TEST

/* One unusable value does not spoil the others. */
START_TEST(test_settings_garbage_among_good)
{
	struct settings settings;

	settings_test_clear();
	settings_test_set("FASTTIME_DISABLE", "maybe");
	settings_test_set("FASTTIME_MODE", "relaxed");
	settings_test_set("FASTTIME_DEBUG", "on");
	settings_test_set("FASTTIME_INTERVAL_MS", "20");
	settings_test_load(&settings);
	ck_assert(!settings.disabled);
	ck_assert(settings.relaxed);
	ck_assert(settings.debug);
	ck_assert_uint_eq(settings.interval_ms, 20);
	settings_check_one_warning("FASTTIME_DISABLE");

	/* Two unusable values: two warnings, one each. */
	settings_test_clear();
	settings_test_set("FASTTIME_MODE", "fast");
	settings_test_set("FASTTIME_INTERVAL_MS", "abc");
	settings_test_load(&settings);
	settings_check_defaults(&settings);
	ck_assert_uint_eq(settings_test_warning_count, 2);
	ck_assert(strstr(settings_test_warnings[0], "FASTTIME_MODE") != NULL);
	ck_assert(strstr(settings_test_warnings[1], "FASTTIME_INTERVAL_MS") != NULL);
}
END_TEST

/* An empty value counts as unset: the default, silently. (The engine does
 * this on purpose for all four variables; the brief for this suite expected
 * a warning for FASTTIME_INTERVAL_MS="", see the report.) */
START_TEST(test_settings_empty)
{
	static const char *const names[] = { "FASTTIME_DISABLE", "FASTTIME_DEBUG", "FASTTIME_MODE",
					     "FASTTIME_INTERVAL_MS" };
	struct settings settings;

	for (unsigned i = 0; i < 4; i++) {
		settings_test_clear();
		settings_test_set(names[i], "");
		settings_test_load(&settings);
		settings_check_defaults(&settings);
		ck_assert_uint_eq(settings_test_warning_count, 0);
	}
}
END_TEST

/* Unprintable bytes in a value are shown as '?', so the warning stays one
 * clean line. */
START_TEST(test_settings_unprintable)
{
	struct settings settings;
	const char *line;

	settings_test_clear();
	settings_test_set("FASTTIME_MODE", "ab\x01\n\x7f\xff\tcd");
	settings_test_load(&settings);
	settings_check_defaults(&settings);
	line = settings_check_one_warning("FASTTIME_MODE");
	ck_assert_msg(strstr(line, "\"ab?????cd\"") != NULL, "warning \"%s\"", line);
	for (const char *p = line; *p != '\n'; p++)
		ck_assert_msg(*p >= 0x20 && *p < 0x7f, "byte %#x in the warning", (unsigned)*p);
}
END_TEST

/* A long value is cut to 40 characters and marked with "..."; one of exactly
 * 40 is shown whole. */
START_TEST(test_settings_long_value)
{
	char value[301], shown[64];
	struct settings settings;
	const char *line;

	memset(value, '7', 300);
	value[300] = '\0';
	settings_test_clear();
	settings_test_set("FASTTIME_INTERVAL_MS", value);
	settings_test_load(&settings);
	settings_check_defaults(&settings);
	line = settings_check_one_warning("FASTTIME_INTERVAL_MS");
	snprintf(shown, sizeof shown, "\"%.40s...\"", value);
	ck_assert_msg(strstr(line, shown) != NULL, "warning \"%s\"", line);
	ck_assert_uint_lt(strlen(line), 200);

	value[40] = '\0';
	settings_test_clear();
	settings_test_set("FASTTIME_INTERVAL_MS", value);
	settings_test_load(&settings);
	line = settings_check_one_warning("FASTTIME_INTERVAL_MS");
	snprintf(shown, sizeof shown, "\"%.40s\"", value);
	ck_assert_msg(strstr(line, shown) != NULL, "warning \"%s\"", line);
	ck_assert(strstr(line, "...") == NULL);
}
END_TEST

/* FASTTIME_HWCAPS: each known name, in any order and number, hides its
 * feature silently; an empty value hides nothing. */
START_TEST(test_settings_hwcaps)
{
	static const char valgrind[] = "/usr/libexec/valgrind/vgpreload_core-amd64-linux.so";
	static const struct {
		const char *value;
		const char *preload; /* LD_PRELOAD, or NULL */
		uint32_t hidden;
	} cases[] = {
		{ "", NULL, 0 },
		{ "-rdtscp", NULL, CPU_HWCAP_RDTSCP },
		{ "-rseq", NULL, CPU_HWCAP_RSEQ },
		{ "-invariant_tsc", NULL, CPU_HWCAP_INVARIANT_TSC },
		{ "-lfence_serializing", NULL, CPU_HWCAP_LFENCE_SERIALIZING },
		{ "-rseq,-rdtscp", NULL, CPU_HWCAP_RSEQ | CPU_HWCAP_RDTSCP },
		{ "-rdtscp,-rdtscp,", NULL, CPU_HWCAP_RDTSCP },
		{ "-rdtscp,-rseq,-invariant_tsc,-lfence_serializing", NULL, 0xf },
		/* Under valgrind (its core library preloaded) rdtscp is absent
		 * too: its synthetic CPUID advertises what it cannot run. */
		{ "", valgrind, CPU_HWCAP_RDTSCP },
		{ "-rseq",
		  "/usr/lib/libfasttime.so /usr/libexec/valgrind/vgpreload_core-amd64-linux.so",
		  CPU_HWCAP_RDTSCP | CPU_HWCAP_RSEQ },
		{ "", "/usr/lib/libfasttime.so", 0 },
	};
	struct settings settings;

	for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		settings_test_clear();
		settings_test_set("FASTTIME_HWCAPS", cases[i].value);
		if (cases[i].preload != NULL)
			settings_test_set("LD_PRELOAD", cases[i].preload);
		settings_test_load(&settings);
		ck_assert_msg(settings.hidden_hwcaps == cases[i].hidden,
			      "\"%s\" (LD_PRELOAD %s) hid %#x", cases[i].value,
			      cases[i].preload ? cases[i].preload : "unset",
			      settings.hidden_hwcaps);
		ck_assert_uint_eq(settings_test_warning_count, 0);
	}
}
END_TEST

/* An item it cannot use (unknown, without its minus, a prefix of a known
 * name) gets one warning line naming it, whatever else is wrong, and the
 * known items around it still apply. */
START_TEST(test_settings_hwcaps_unusable)
{
	static const struct {
		const char *value;
		const char *named;
		uint32_t hidden;
	} cases[] = {
		{ "-avx512", "-avx512", 0 },
		{ "rdtscp", "rdtscp", 0 },
		{ "-rdtsc", "-rdtsc", 0 },
		{ "-rdtscpx,-rseq", "-rdtscpx", CPU_HWCAP_RSEQ },
		{ "-rseq,+rdtscp,-bogus", "+rdtscp", CPU_HWCAP_RSEQ },
		{ "-", "-", 0 },
		{ ",,-rdtscp", "", CPU_HWCAP_RDTSCP },
	};
	struct settings settings;

	for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *line;
		char quoted[64];

		settings_test_clear();
		settings_test_set("FASTTIME_HWCAPS", cases[i].value);
		settings_test_load(&settings);
		ck_assert_msg(settings.hidden_hwcaps == cases[i].hidden, "\"%s\" hid %#x",
			      cases[i].value, settings.hidden_hwcaps);
		line = settings_check_one_warning("FASTTIME_HWCAPS");
		snprintf(quoted, sizeof quoted, "\"%s\"", cases[i].named);
		ck_assert_msg(strstr(line, quoted) != NULL, "warning \"%s\" for \"%s\"", line,
			      cases[i].value);
	}
}
END_TEST

/* Which environments make the constructor look its settings up: any
 * FASTTIME_* variable, or valgrind's preload; no other, so that a process
 * start without them calls nothing in libc for its settings. */
START_TEST(test_settings_environment_matters)
{
	char *none[] = { "PATH=/bin", "LD_PRELOAD=/usr/lib/fasttime/libfasttime.so", NULL };
	char *near[] = { "FASTTIME=1", "XFASTTIME_DEBUG=1", "fasttime_debug=1", "FASTTIM", NULL };
	char *empty[] = { NULL };
	char *one[] = { "HOME=/root", "FASTTIME_DEBUG=1", NULL };
	char *bare[] = { "FASTTIME_", NULL };
	char *valgrind[] = { "LD_PRELOAD=/usr/libexec/valgrind/vgpreload_core-amd64-linux.so",
			     NULL };
	char *other_preload[] = { "LD_PRELOAD_X=vgpreload_core", NULL };

	ck_assert(!settings_environment_matters(NULL));
	ck_assert(!settings_environment_matters(empty));
	ck_assert(!settings_environment_matters(none));
	ck_assert(!settings_environment_matters(near));
	ck_assert(!settings_environment_matters(other_preload));
	ck_assert(settings_environment_matters(one));
	ck_assert(settings_environment_matters(bare));
	ck_assert(settings_environment_matters(valgrind));
}
END_TEST

/* Where the environment does not matter, the lookup that finds nothing
 * gives settings_load's defaults, with no warning. */
START_TEST(test_settings_lookup_nothing)
{
	struct settings settings;

	settings_test_clear();
	settings_load(&settings, settings_lookup_nothing, settings_test_warn);
	ck_assert(!settings.disabled && !settings.debug && !settings.force && !settings.relaxed);
	ck_assert_uint_eq(settings.hidden_hwcaps, 0);
	ck_assert_ptr_null(settings.page);
	ck_assert_uint_eq(settings.interval_ms, SETTINGS_DEFAULT_INTERVAL_MS);
	ck_assert_uint_eq(settings_test_warning_count, 0);
}
END_TEST

Suite *suite_settings(void)
{
	Suite *suite = suite_create("settings");
	TCase *tc;

	tc = tcase_create("values");
	tcase_add_test(tc, test_settings_defaults);
	tcase_add_test(tc, test_settings_booleans);
	tcase_add_test(tc, test_settings_modes);
	tcase_add_test(tc, test_settings_intervals);
	tcase_add_test(tc, test_settings_empty);
	tcase_add_test(tc, test_settings_environment_matters);
	tcase_add_test(tc, test_settings_lookup_nothing);
	suite_add_tcase(suite, tc);

	tc = tcase_create("warnings");
	tcase_add_loop_test(tc, test_settings_garbage, 0, SETTINGS_GARBAGE_COUNT);
	tcase_add_test(tc, test_settings_garbage_among_good);
	tcase_add_test(tc, test_settings_unprintable);
	tcase_add_test(tc, test_settings_long_value);
	tcase_add_test(tc, test_settings_hwcaps);
	tcase_add_test(tc, test_settings_hwcaps_unusable);
	suite_add_tcase(suite, tc);
	return suite;
}
