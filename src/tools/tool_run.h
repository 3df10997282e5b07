/* fasttime COMMAND: runs a program with libfasttime.so preloaded (or, for an
 * A/B comparison, without it) and passes its exit status through. */
#ifndef FASTTIME_TOOL_RUN_H
#define FASTTIME_TOOL_RUN_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

/* Our own failures use the statuses env(1) and timeout(1) use. */
#define TOOL_RUN_EXIT_FAILED	 125 /* fasttime itself could not start the command */
#define TOOL_RUN_EXIT_CANNOT_RUN 126 /* the command exists but cannot be executed */
#define TOOL_RUN_EXIT_NOT_FOUND	 127 /* the command does not exist */

/* How the command is to be run; the strings are set in its environment. */
struct tool_run_options {
	bool native;	      /* without the library */
	bool debug;	      /* FASTTIME_DEBUG=1 */
	const char *mode;     /* FASTTIME_MODE, or NULL to leave it as it is */
	uint32_t interval_ms; /* FASTTIME_INTERVAL_MS, or 0 to leave it as it is */
};

/* The library that would be preloaded, and where it was found. */
struct tool_run_library {
	char path[PATH_MAX];	      /* absolute */
	const char *source;	      /* "FASTTIME_LIBRARY", "build tree" or "installed" */
	char problem[PATH_MAX + 128]; /* empty when the path can be preloaded */
};

/* Finds the library: FASTTIME_LIBRARY, else the build tree the command was
 * run from, else the installed one. */
void tool_run_find_library(struct tool_run_library *library);

/* Runs argv[0] with argv as its arguments and returns the status fasttime
 * should exit with: the command's own, 128 + n for a death by signal n, or
 * one of the TOOL_RUN_EXIT_* values. */
int tool_run_command(const struct tool_run_options *options, char *const argv[]);

#endif
