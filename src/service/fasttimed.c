/* fasttimed: one calibration for the machine (or for one user). It runs
 * the engine's rounds, watch and per-API choice in its own thread and
 * publishes the lines in a page that every preloaded program maps
 * read-only at start: served programs run no thread of ours.
 *
 * It stays in the foreground and logs to standard error, as systemd
 * expects; SIGTERM, SIGINT or SIGHUP ends it: readers stop answering from
 * the page at once, and the page is removed. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "command_usage.h"
#include "cpu.h"
#include "debug.h"
#include "service.h"
#include "service_notify.h"
#include "service_page.h"
#include "settings.h"

/* How often the main thread looks whether the refresh thread still runs,
 * and whether a visit of it waits behind a real-time thread (more often
 * while one did lately: service_look_again_ns). */
#define FASTTIMED_CHECK_SECONDS 1

struct fasttimed_options {
	char page[PATH_MAX];
	uint32_t interval_ms; /* 0: the settings' */
	bool help;
	bool version;
};

static void fasttimed_usage(void)
{
	printf("Usage: fasttimed [--page PATH] [--interval MS]\n"
	       "Calibrate the time-stamp counter of every CPU and publish the lines in a page\n"
	       "that programs running with libfasttime.so read: they then start no thread of\n"
	       "their own and answer from the counter from their first call.\n"
	       "\n"
	       "  --page PATH      where to publish the page (default: %s as root,\n"
	       "                   $XDG_RUNTIME_DIR/%s/%s otherwise)\n"
	       "  --interval MS    recalibrate every MS milliseconds (%u to %u; default %u)\n"
	       "  -h, --help       show this help and exit\n"
	       "  -V, --version    show the version and exit\n"
	       "\n"
	       "The page serves programs of both reading modes, each by its own choice of\n"
	       "entry points: FASTTIME_MODE is ignored here. FASTTIME_FORCE and\n"
	       "FASTTIME_HWCAPS apply as they do to the library; a program is served only\n"
	       "when its own are the same. Stays in the foreground and logs to standard\n"
	       "error; SIGTERM ends it and removes the page.\n",
	       SERVICE_PAGE_SYSTEM_PATH, SERVICE_PAGE_USER_DIR, SERVICE_PAGE_NAME,
	       SETTINGS_MIN_INTERVAL_MS, SETTINGS_MAX_INTERVAL_MS, SETTINGS_DEFAULT_INTERVAL_MS);
}

/* The default page: the system's for root, the user's otherwise. */
static bool fasttimed_default_page(char page[PATH_MAX])
{
	if (geteuid() != 0)
		return service_page_user_path(page);
	snprintf(page, PATH_MAX, "%s", SERVICE_PAGE_SYSTEM_PATH);
	return true;
}

/* Why a user's service has no default page: its words for a usage error. */
static const char *fasttimed_no_default_page(void)
{
	const char *runtime = settings_secure_getenv("XDG_RUNTIME_DIR");

	if (runtime == NULL || runtime[0] == '\0')
		return "XDG_RUNTIME_DIR is not set";
	if (runtime[0] != '/')
		return "XDG_RUNTIME_DIR is not absolute";
	return "XDG_RUNTIME_DIR is too long";
}

/* clang-format off */
static const struct option fasttimed_longs[] = {
	{ "page", required_argument, NULL, 'p' },
	{ "interval", required_argument, NULL, 'i' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};
/* clang-format on */

static int fasttimed_parse(int argc, char **argv, struct fasttimed_options *options)
{
	int opt;

	memset(options, 0, sizeof *options);
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":hV", fasttimed_longs, NULL)) != -1) {
		switch (opt) {
		case 'p':
			if (optarg[0] == '\0' || snprintf(options->page, sizeof options->page, "%s",
							  optarg) >= (int)sizeof options->page)
				return command_bad_usage("fasttimed",
							 "--page wants a path, not '%s'", optarg);
			break;
		case 'i':
			if (!settings_parse_range(optarg, SETTINGS_MIN_INTERVAL_MS,
						  SETTINGS_MAX_INTERVAL_MS, &options->interval_ms))
				return command_bad_usage(
				    "fasttimed",
				    "--interval wants milliseconds from %u to %u, not '%s'",
				    SETTINGS_MIN_INTERVAL_MS, SETTINGS_MAX_INTERVAL_MS, optarg);
			break;
		case 'h': options->help = true; break;
		case 'V': options->version = true; break;
		case ':':
			return command_bad_usage("fasttimed", "option '%s' needs a value",
						 argv[optind - 1]);
		default:
			return command_bad_usage("fasttimed", "unknown option '%s'",
						 argv[optind - 1]);
		}
	}
	if (optind < argc)
		return command_bad_usage("fasttimed", "takes no argument, but '%s' was given",
					 argv[optind]);
	if (!options->help && !options->version && options->page[0] == '\0' &&
	    !fasttimed_default_page(options->page))
		return command_bad_usage("fasttimed", "%s: give --page PATH",
					 fasttimed_no_default_page());
	return 0;
}

/* Waits for a signal that ends the service, or for the refresh thread to
 * quit on its own; returns the signal, or 0 for the latter. Meanwhile,
 * frees the refresh thread from a visit that waits behind a real-time
 * thread: no reader of the page can, and where the kernel does not
 * throttle real-time threads it would wait there for ever, the page stale. */
static int fasttimed_wait(const sigset_t *ending)
{
	while (service_running()) {
		uint64_t wait_ns = service_look_again_ns(FASTTIMED_CHECK_SECONDS * 1000000000ull);
		struct timespec check = { (time_t)(wait_ns / 1000000000u),
					  (long)(wait_ns % 1000000000u) };
		int sig = sigtimedwait(ending, NULL, &check);

		if (sig > 0)
			return sig;
		service_free_stuck_thread();
	}
	return 0;
}

/* The environment as the service reads it: FASTTIME_MODE hidden, since
 * the page serves both modes. */
static const char *fasttimed_getenv(const char *name)
{
	if (strcmp(name, "FASTTIME_MODE") == 0)
		return NULL;
	return settings_secure_getenv(name);
}

/* One line where FASTTIME_MODE is set, whatever its value: the service
 * takes no mode, and a user who set one should know it does nothing. */
static void fasttimed_warn_mode(void)
{
	const char *mode = settings_secure_getenv("FASTTIME_MODE");

	if (mode != NULL && mode[0] != '\0')
		fprintf(stderr, "fasttimed: FASTTIME_MODE is ignored: the page serves readers of "
				"both modes\n");
}

int main(int argc, char **argv)
{
	struct fasttimed_options options;
	struct service_page_writer page;
	struct settings settings;
	char error[PATH_MAX + 128];
	sigset_t ending;
	int status = fasttimed_parse(argc, argv, &options), sig;

	if (status != 0)
		return status;
	if (options.help || options.version) {
		if (options.help)
			fasttimed_usage();
		else
			printf("fasttimed %s\n", PACKAGE_VERSION);
		return fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
	}
	fasttimed_warn_mode();
	settings_load(&settings, fasttimed_getenv, debug_write_line);
	if (options.interval_ms != 0)
		settings.interval_ms = options.interval_ms;
	debug_enabled = settings.debug;
	cpu_hidden_hwcaps = settings.hidden_hwcaps;
	cpu_rseq_init();

	/* Blocked in every thread (the refresh thread starts with all of them
	 * blocked): taken only by the wait below. */
	sigemptyset(&ending);
	sigaddset(&ending, SIGTERM);
	sigaddset(&ending, SIGINT);
	sigaddset(&ending, SIGHUP);
	sigprocmask(SIG_BLOCK, &ending, NULL);

	if (!service_start(&page, options.page, &settings, error, sizeof error)) {
		fprintf(stderr, "fasttimed: %s\n", error);
		return 1;
	}
	fprintf(stderr,
		"fasttimed: serving %s (pid %d, ordered and relaxed readers, every %u ms)\n",
		options.page, (int)getpid(), settings.interval_ms);
	/* Under systemd's Type=notify, "started" means the page is published. */
	if (service_notify(SERVICE_NOTIFY_READY) < 0)
		fprintf(stderr, "fasttimed: cannot tell the service manager: %s\n",
			strerror(errno));
	sig = fasttimed_wait(&ending);
	service_notify(SERVICE_NOTIFY_STOPPING);
	service_stop(&page);
	if (sig == 0) {
		fprintf(stderr,
			"fasttimed: the fast path cannot run here any more; page removed\n");
		return 1;
	}
	fprintf(stderr, "fasttimed: %s: page removed\n", strsignal(sig));
	return 0;
}
