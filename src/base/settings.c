#include "config.h"

/* Parsing of the FASTTIME_* variables: strict, with one warning line for a
 * value that cannot be used, and never an allocation (this runs in a
 * constructor, possibly before malloc is usable). */
#include "settings.h"

#include "cpu.h"
#include "start_data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool settings_equals_any(const char *value, const char *const *words)
{
	for (; *words != NULL; words++)
		if (strcmp(value, *words) == 0)
			return true;
	return false;
}

/* Copies value for display: at most 40 characters, unprintables as '?'. */
static void settings_printable(char *out, size_t size, const char *value)
{
	size_t i;

	for (i = 0; i + 1 < size && i < 40 && value[i] != '\0'; i++) {
		unsigned char c = (unsigned char)value[i];
		out[i] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
	}
	out[i] = '\0';
	if (value[i] != '\0' && i + 4 < size)
		strcpy(out + i, "...");
}

static void settings_warn_value(settings_warn_fn warn, const char *name, const char *value,
				const char *expected, const char *using)
{
	char shown[48];
	char line[256];

	settings_printable(shown, sizeof shown, value);
	snprintf(line, sizeof line, "fasttime: ignoring %s=\"%s\": expected %s; using %s\n", name,
		 shown, expected, using);
	warn(line);
}

/* Booleans: 1/0, yes/no, true/false, on/off; unset or empty is false. */
static bool settings_bool(settings_lookup_fn lookup, settings_warn_fn warn, const char *name)
{
	static const char *const yes[] = { "1", "yes", "true", "on", NULL };
	static const char *const no[] = { "0", "no", "false", "off", "", NULL };
	const char *value = lookup(name);

	if (value == NULL || settings_equals_any(value, no))
		return false;
	if (settings_equals_any(value, yes))
		return true;
	settings_warn_value(warn, name, value, "1 or 0", "0");
	return false;
}

bool settings_parse_range(const char *value, uint32_t min, uint32_t max, uint32_t *out)
{
	uint64_t n = 0;

	if (*value == '\0')
		return false;
	for (const char *p = value; *p != '\0'; p++) {
		if (*p < '0' || *p > '9')
			return false;
		n = n * 10 + (uint64_t)(*p - '0');
		if (n > max)
			return false;
	}
	if (n < min)
		return false;
	*out = (uint32_t)n;
	return true;
}

uint32_t settings_parse_hwcaps(const char *value, const char **bad, size_t *bad_len)
{
	uint32_t hidden = 0;
	const char *item = value;

	*bad = NULL;
	*bad_len = 0;
	while (*item != '\0') {
		size_t len = strcspn(item, ",");
		bool known = false;

		for (unsigned bit = 0; len > 1 && item[0] == '-' && cpu_hwcap_names[bit] != NULL;
		     bit++) {
			if (strlen(cpu_hwcap_names[bit]) == len - 1 &&
			    strncmp(item + 1, cpu_hwcap_names[bit], len - 1) == 0) {
				hidden |= 1u << bit;
				known = true;
			}
		}
		if (!known && *bad == NULL) {
			*bad = item;
			*bad_len = len;
		}
		item += len;
		if (*item == ',')
			item++;
	}
	return hidden;
}

/* The warning for the first item of FASTTIME_HWCAPS it cannot use. Apart,
 * and never inlined: its initialised buffer, copied from the read-only data
 * at the function's entry, would otherwise be copied at every process
 * start. */
__attribute__((noinline)) static void settings_warn_hwcaps(settings_warn_fn warn, const char *bad,
							   size_t bad_len)
{
	char item[48], expected[160] = "a comma-separated list of";

	snprintf(item, sizeof item, "%.*s", (int)(bad_len < 40 ? bad_len : 40), bad);
	for (unsigned bit = 0; cpu_hwcap_names[bit] != NULL; bit++) {
		size_t used = strlen(expected);
		snprintf(expected + used, sizeof expected - used, "%s -%s", bit == 0 ? "" : ",",
			 cpu_hwcap_names[bit]);
	}
	settings_warn_value(warn, "FASTTIME_HWCAPS", item, expected, "the others");
}

/* One warning line for the first item of FASTTIME_HWCAPS it cannot use; the
 * items it knows still apply. */
static uint32_t settings_hwcaps(settings_lookup_fn lookup, settings_warn_fn warn)
{
	const char *value = lookup("FASTTIME_HWCAPS"), *bad;
	size_t bad_len;
	uint32_t hidden;

	if (value == NULL)
		return 0;
	hidden = settings_parse_hwcaps(value, &bad, &bad_len);
	if (bad != NULL)
		settings_warn_hwcaps(warn, bad, bad_len);
	return hidden;
}

/* Features to treat as absent because an emulator runs the program:
 * valgrind shows its client a synthetic CPUID that advertises rdtscp even
 * on hosts whose CPU lacks it, and its emulator then stops the program with
 * SIGILL at the first rdtscp. It preloads its vgpreload_core library into
 * every client, which is how it is recognised. */
static uint32_t settings_emulator_hwcaps(settings_lookup_fn lookup)
{
	const char *preload = lookup("LD_PRELOAD");

	if (preload != NULL && strstr(preload, "vgpreload_core") != NULL)
		return CPU_HWCAP_RDTSCP;
	return 0;
}

void settings_load(struct settings *settings, settings_lookup_fn lookup, settings_warn_fn warn)
{
	const char *mode, *interval;

	settings->disabled = settings_bool(lookup, warn, "FASTTIME_DISABLE");
	settings->debug = settings_bool(lookup, warn, "FASTTIME_DEBUG");
	settings->force = settings_bool(lookup, warn, "FASTTIME_FORCE");
	settings->hidden_hwcaps = settings_hwcaps(lookup, warn) | settings_emulator_hwcaps(lookup);

	settings->page = lookup("FASTTIME_PAGE");

	settings->relaxed = false;
	mode = lookup("FASTTIME_MODE");
	if (mode != NULL && strcmp(mode, "relaxed") == 0)
		settings->relaxed = true;
	else if (mode != NULL && strcmp(mode, "ordered") != 0 && *mode != '\0')
		settings_warn_value(warn, "FASTTIME_MODE", mode, "ordered or relaxed", "ordered");

	settings->interval_ms = SETTINGS_DEFAULT_INTERVAL_MS;
	interval = lookup("FASTTIME_INTERVAL_MS");
	if (interval != NULL && *interval != '\0' &&
	    !settings_parse_range(interval, SETTINGS_MIN_INTERVAL_MS, SETTINGS_MAX_INTERVAL_MS,
				  &settings->interval_ms)) {
		char expected[64], fallback[16];
		snprintf(expected, sizeof expected, "milliseconds from %u to %u",
			 SETTINGS_MIN_INTERVAL_MS, SETTINGS_MAX_INTERVAL_MS);
		snprintf(fallback, sizeof fallback, "%u", SETTINGS_DEFAULT_INTERVAL_MS);
		settings_warn_value(warn, "FASTTIME_INTERVAL_MS", interval, expected, fallback);
	}
}

bool settings_page_none(const struct settings *settings)
{
	return settings->page != NULL &&
	       (settings->page[0] == '\0' || strcmp(settings->page, "none") == 0);
}

/* Whether entry begins with prefix. */
static bool settings_begins_with(const char *entry, const char *prefix)
{
	for (; *prefix != '\0'; entry++, prefix++)
		if (*entry != *prefix)
			return false;
	return true;
}

/* Whether word occurs in text. */
static bool settings_contains(const char *text, const char *word)
{
	for (; *text != '\0'; text++)
		if (settings_begins_with(text, word))
			return true;
	return false;
}

/* The words every process start looks for in its environment. Kept with
 * the start's variables (start_data.h), not among the read-only data: the
 * constructor of a process without FASTTIME_* variables then reads no
 * page of those, and the first read of one is a page fault of every
 * process start. */
static char settings_prefix[] START_DATA = "FASTTIME_";
static char settings_preload[] START_DATA = "LD_PRELOAD=";
static char settings_valgrind[] START_DATA = "vgpreload_core";

bool settings_environment_matters(char *const *env)
{
	if (env == NULL)
		return false;
	for (; *env != NULL; env++) {
		if (settings_begins_with(*env, settings_prefix))
			return true;
		if (settings_begins_with(*env, settings_preload) &&
		    settings_contains(*env, settings_valgrind))
			return true;
	}
	return false;
}

const char *settings_lookup_nothing(const char *name)
{
	(void)name;
	return NULL;
}

const char *settings_secure_getenv(const char *name)
{
#ifdef HAVE_SECURE_GETENV
	return secure_getenv(name);
#else
	return getenv(name);
#endif
}
