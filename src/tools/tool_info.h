/* fasttime --info: what the CPU offers, how each CPU calibrates, and which
 * entry points would answer from the counter here, with their costs. */
#ifndef FASTTIME_TOOL_INFO_H
#define FASTTIME_TOOL_INFO_H

#include <stdbool.h>

#include "settings.h"

/* How the report is written: text for a person (the default), or one
 * key=value line per fact for a program (--format=keys, tool_info_keys.h). */
enum tool_info_format {
	TOOL_INFO_TEXT,
	TOOL_INFO_KEYS,
};

/* The format a --format value names ("text" or "keys"); false for any
 * other value. */
bool tool_info_parse_format(const char *name, enum tool_info_format *format);

/* Calibrates in this process with settings and prints the report in
 * format; returns the exit status (0, also when the fast path cannot run
 * here). */
int tool_info_run(const struct settings *settings, enum tool_info_format format);

#endif
