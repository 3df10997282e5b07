/* The fasttime command's calibration service for the command it runs. */
#include "config.h"

#include "tool_serve.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu.h"
#include "debug.h"
#include "service.h"
#include "settings.h"

/* A directory only this user can enter: under $XDG_RUNTIME_DIR (a tmpfs
 * of the user's own) where there is one, else under $TMPDIR or /tmp. */
static bool tool_serve_make_directory(struct tool_serve *serve)
{
	const char *base = getenv("XDG_RUNTIME_DIR");
	int written;

	if (base == NULL || base[0] != '/' || access(base, W_OK | X_OK) != 0)
		base = getenv("TMPDIR");
	if (base == NULL || base[0] != '/' || access(base, W_OK | X_OK) != 0)
		base = "/tmp";
	written =
	    snprintf(serve->directory, sizeof serve->directory, "%s/fasttime-run.XXXXXX", base);
	if (written <= 0 || written >= (int)sizeof serve->directory ||
	    mkdtemp(serve->directory) == NULL) {
		debug_log("not serving the command: no private directory under %s: %s", base,
			  strerror(errno));
		serve->directory[0] = '\0';
		return false;
	}
	return true;
}

void tool_serve_start(struct tool_serve *serve)
{
	struct service_page_look look;
	struct settings settings;
	char path[PATH_MAX + 16], error[PATH_MAX + 128];
	bool rseq_registered;

	memset(serve, 0, sizeof *serve);
	settings_load(&settings, settings_secure_getenv, debug_write_line);
	debug_enabled = settings.debug;
	cpu_hidden_hwcaps = settings.hidden_hwcaps;
	if (settings.disabled || settings_page_none(&settings))
		return;
	rseq_registered = cpu_rseq_init();
	if (service_page_find(&settings, rseq_registered, false, path, &look)) {
		debug_log("the command is served by the page %s (fasttimed, pid %d)", path,
			  (int)look.header.service_pid);
		return;
	}
	if (!tool_serve_make_directory(serve))
		return;
	snprintf(path, sizeof path, "%s/%s", serve->directory, SERVICE_PAGE_NAME);
	if (!service_start(&serve->page, path, &settings, error, sizeof error)) {
		debug_log("not serving the command: %s", error);
		rmdir(serve->directory);
		return;
	}
	if (setenv("FASTTIME_PAGE", path, 1) != 0) {
		service_stop(&serve->page);
		rmdir(serve->directory);
		return;
	}
	serve->serving = true;
	debug_log("serving the command's processes from %s", path);
}

void tool_serve_stop(struct tool_serve *serve)
{
	if (!serve->serving)
		return;
	service_stop(&serve->page);
	rmdir(serve->directory);
	serve->serving = false;
}
