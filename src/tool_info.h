/* fasttime --info: what the CPU offers, how each CPU calibrates, and which
 * entry points would answer from the counter here, with their costs. */
#ifndef FASTTIME_TOOL_INFO_H
#define FASTTIME_TOOL_INFO_H

#include "settings.h"

/* Calibrates in this process with settings and prints the report; returns
 * the exit status (0, also when the fast path cannot run here). */
int tool_info_run(const struct settings *settings);

#endif
