/* The FASTTIME_* environment variables, parsed without allocation. */
#ifndef FASTTIME_SETTINGS_H
#define FASTTIME_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SETTINGS_DEFAULT_INTERVAL_MS 5000u
#define SETTINGS_MIN_INTERVAL_MS     10u
#define SETTINGS_MAX_INTERVAL_MS     3600000u

struct settings {
	bool disabled;		/* FASTTIME_DISABLE: pure pass-through */
	bool relaxed;		/* FASTTIME_MODE=relaxed */
	bool debug;		/* FASTTIME_DEBUG: calibration events on stderr */
	bool force;		/* FASTTIME_FORCE: the TSC even where libc measured faster */
	uint32_t interval_ms;	/* FASTTIME_INTERVAL_MS */
	uint32_t hidden_hwcaps; /* CPU_HWCAP_* bits treated as absent: FASTTIME_HWCAPS,
				 * and rdtscp under valgrind (its CPUID is synthetic) */
	/* FASTTIME_PAGE: the calibration service's page to be served by;
	 * NULL to look in the default places, "" or "none" for no service. */
	const char *page;
};

/* getenv, but nothing from the environment of a program running with more
 * rights than its caller's (secure_getenv where the C library has it): the
 * library's lookup for settings_load, and for the paths it opens. */
const char *settings_secure_getenv(const char *name);

/* Whether settings->page asks for no service at all. */
bool settings_page_none(const struct settings *settings);

/* Looks up one variable; secure_getenv in the library, a table in tests. */
typedef const char *(*settings_lookup_fn)(const char *name);
/* Receives one complete warning line, newline included. */
typedef void (*settings_warn_fn)(const char *line);

/* A decimal integer in [min, max], digits only: the library's rule for
 * numbers, shared with the fasttime command's options. */
bool settings_parse_range(const char *value, uint32_t min, uint32_t max, uint32_t *out);

/* Parses a FASTTIME_HWCAPS value ("-rdtscp,-rseq"): the bits of the names
 * it knows; *bad is the first item it cannot use (NULL when none). */
uint32_t settings_parse_hwcaps(const char *value, const char **bad, size_t *bad_len);

/* Whether env (an environ array) holds anything settings_load would read:
 * a FASTTIME_* variable, or an LD_PRELOAD naming valgrind's preload. Where
 * it holds none, settings_load may be given settings_lookup_nothing: the
 * defaults come out the same, and a process start looks nothing up in
 * libc (whose getenv and string functions are pages of code that process
 * would not touch otherwise). Compares by hand, calling no function. */
bool settings_environment_matters(char *const *env);

/* A lookup that finds nothing: settings_load's defaults. */
const char *settings_lookup_nothing(const char *name);

/* Fills settings from lookup; each value it cannot use gets one warning line
 * and its default. */
void settings_load(struct settings *settings, settings_lookup_fn lookup, settings_warn_fn warn);

#endif
