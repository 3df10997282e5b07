/* `fasttime COMMAND` serves the command's whole process tree: unless a
 * calibration service's page already serves it, the calibration runs in
 * the fasttime process for as long as COMMAND runs, in a page under a
 * private directory that FASTTIME_PAGE names in COMMAND's environment.
 * Every process COMMAND starts then answers from the TSC from its first
 * call, and none of them runs a thread of ours. */
#ifndef FASTTIME_TOOL_SERVE_H
#define FASTTIME_TOOL_SERVE_H

#include <limits.h>
#include <stdbool.h>

#include "service_page.h"

struct tool_serve {
	bool serving;
	char directory[PATH_MAX];
	struct service_page_writer page;
};

/* Called once COMMAND's environment is set (its FASTTIME_* settings are
 * read from it). Never fails the run: where it cannot serve (the fast
 * path cannot run here, FASTTIME_DISABLE, FASTTIME_PAGE=none), COMMAND's
 * processes calibrate alone, as without it; --debug says why. */
void tool_serve_start(struct tool_serve *serve);
/* After COMMAND has ended: readers left behind ask libc; the page and its
 * directory are removed. */
void tool_serve_stop(struct tool_serve *serve);

#endif
