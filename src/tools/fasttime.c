/* The fasttime command: reads the options and hands over to the tool that
 * does the work (tool_run, tool_info or tool_check). */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command_usage.h"
#include "cpu.h"
#include "debug.h"
#include "settings.h"
#include "tool_check.h"
#include "tool_info.h"
#include "tool_run.h"

enum fasttime_action {
	FASTTIME_RUN,
	FASTTIME_INFO,
	FASTTIME_CHECK,
	FASTTIME_HELP,
	FASTTIME_VERSION
};

struct fasttime_options {
	enum fasttime_action action;
	struct tool_run_options run;
	enum tool_info_format info_format;
	int first_argument; /* argv index of COMMAND */
};

/* The usage text for --help. */
static void fasttime_usage(void)
{
	printf("Usage: fasttime [OPTION]... [--] COMMAND [ARGUMENT]...\n"
	       "  or:  fasttime [--relaxed | --ordered] [--interval MS] --info [--format FORMAT]\n"
	       "  or:  fasttime --check\n"
	       "Run COMMAND with libfasttime.so preloaded: clock_gettime, gettimeofday, time and\n"
	       "timespec_get answer from the CPU's time-stamp counter where that is faster than\n"
	       "libc and as correct, and from libc otherwise.\n"
	       "\n"
	       "  --ordered        read the counter with rdtscp: ordered like the kernel's clock\n"
	       "                   (the default)\n"
	       "  --relaxed        read it with rdtsc: faster; readings handed between threads\n"
	       "                   may be out of order by a few tens of nanoseconds\n"
	       "  --interval MS    recalibrate every MS milliseconds (%u to %u; default %u)\n"
	       "  --debug          report calibration events on standard error\n"
	       "  --native         run COMMAND without the library, for comparison\n"
	       "  --info           show the CPU, the calibration of each CPU and which calls\n"
	       "                   would be fast here, and what each costs\n"
	       "  --format FORMAT  how --info writes: text (the default), or keys: one\n"
	       "                   key=value line per fact, for programs (see fasttime(1))\n"
	       "  --check          test whether the CPUs' counters agree; exit 0 if they do,\n"
	       "                   1 if not\n"
	       "  -h, --help       show this help and exit\n"
	       "  -V, --version    show the version and exit\n"
	       "\n"
	       "Exit status: COMMAND's own, 128+N if it was killed by signal N, 125 if fasttime\n"
	       "failed, 126 if COMMAND cannot be executed, 127 if it cannot be found, 2 for bad\n"
	       "usage. See fasttime(1) and libfasttime(7).\n",
	       SETTINGS_MIN_INTERVAL_MS, SETTINGS_MAX_INTERVAL_MS, SETTINGS_DEFAULT_INTERVAL_MS);
}

/* Reports an --interval value out of the library's bounds. */
static int fasttime_bad_interval(const char *value)
{
	return command_bad_usage("fasttime",
				 "--interval wants milliseconds from %u to %u, not '%s'",
				 SETTINGS_MIN_INTERVAL_MS, SETTINGS_MAX_INTERVAL_MS, value);
}

/* The long options; each maps to the letter its case in fasttime_parse
 * handles. Kept one a line, which clang-format would pack. */
/* clang-format off */
static const struct option fasttime_longs[] = {
	{ "relaxed", no_argument, NULL, 'r' },
	{ "ordered", no_argument, NULL, 'o' },
	{ "interval", required_argument, NULL, 'i' },
	{ "debug", no_argument, NULL, 'd' },
	{ "native", no_argument, NULL, 'n' },
	{ "info", no_argument, NULL, 'I' },
	{ "format", required_argument, NULL, 'f' },
	{ "check", no_argument, NULL, 'C' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};
/* clang-format on */

/* Reports the option getopt_long refused: argument is its argv element. */
static int fasttime_bad_option(const char *argument)
{
	size_t length = strcspn(argument, "=");
	unsigned matches = 0;

	if (strncmp(argument, "--", 2) != 0)
		return command_bad_usage("fasttime", "unknown option '-%c'", optopt);
	/* A known long option given a value it does not take. */
	if (optopt != 0)
		return command_bad_usage("fasttime", "option '%.*s' takes no value", (int)length,
					 argument);
	for (const struct option *o = fasttime_longs; o->name != NULL; o++)
		matches += strncmp(o->name, argument + 2, length - 2) == 0;
	if (matches > 1)
		return command_bad_usage("fasttime", "ambiguous option '%.*s'", (int)length,
					 argument);
	return command_bad_usage("fasttime", "unknown option '%s'", argument);
}

/* Parses argv into options; returns 0, or the status to exit with. */
static int fasttime_parse(int argc, char **argv, struct fasttime_options *options)
{
	bool help = false, version = false, info = false, check = false, format = false;
	int opt;

	memset(options, 0, sizeof *options);
	opterr = 0;
	/* '+': the options end at COMMAND, whose own options are its business;
	 * ':': a missing value is told apart from an unknown option. */
	while ((opt = getopt_long(argc, argv, "+:hV", fasttime_longs, NULL)) != -1) {
		switch (opt) {
		case 'r': options->run.mode = "relaxed"; break;
		case 'o': options->run.mode = "ordered"; break;
		case 'd': options->run.debug = true; break;
		case 'n': options->run.native = true; break;
		case 'I': info = true; break;
		case 'C': check = true; break;
		case 'h': help = true; break;
		case 'V': version = true; break;
		case 'i':
			if (!settings_parse_range(optarg, SETTINGS_MIN_INTERVAL_MS,
						  SETTINGS_MAX_INTERVAL_MS,
						  &options->run.interval_ms))
				return fasttime_bad_interval(optarg);
			break;
		case 'f':
			if (!tool_info_parse_format(optarg, &options->info_format))
				return command_bad_usage(
				    "fasttime", "--format wants text or keys, not '%s'", optarg);
			format = true;
			break;
		case ':':
			return command_bad_usage("fasttime", "option '%s' needs a value",
						 argv[optind - 1]);
		default: return fasttime_bad_option(argv[optind - 1]);
		}
	}
	options->first_argument = optind;
	/* Help and version win over everything else, as usual. */
	if (help || version) {
		options->action = help ? FASTTIME_HELP : FASTTIME_VERSION;
		return 0;
	}
	if (format && !info)
		return command_bad_usage("fasttime", "--format applies only to --info");
	if (!info && !check) {
		if (optind >= argc)
			return command_bad_usage("fasttime", "no command given");
		options->action = FASTTIME_RUN;
		return 0;
	}
	if (info && check)
		return command_bad_usage("fasttime", "--info and --check cannot be combined");
	if (optind < argc)
		return command_bad_usage("fasttime", "%s takes no command, but '%s' follows it",
					 info ? "--info" : "--check", argv[optind]);
	if (options->run.native)
		return command_bad_usage("fasttime", "--native applies only to running a command");
	options->action = info ? FASTTIME_INFO : FASTTIME_CHECK;
	return 0;
}

/* What --info shows: the library's settings, as the environment and the
 * options given with --info would make them. */
static void fasttime_info_settings(const struct fasttime_options *options,
				   struct settings *settings)
{
	settings_load(settings, settings_secure_getenv, debug_write_line);
	if (options->run.mode != NULL)
		settings->relaxed = strcmp(options->run.mode, "relaxed") == 0;
	if (options->run.interval_ms != 0)
		settings->interval_ms = options->run.interval_ms;
	if (options->run.debug)
		settings->debug = true;
}

/* Reports a failure to write what was asked for (a full disk, a closed pipe). */
static int fasttime_finish_output(int status)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "fasttime: cannot write the output\n");
		return status == 0 ? 1 : status;
	}
	return status;
}

/* Does what the options ask: help, version, --info, --check, or COMMAND. */
int main(int argc, char **argv)
{
	struct fasttime_options options;
	struct settings settings;
	int status = fasttime_parse(argc, argv, &options);

	if (status != 0)
		return status;
	if (options.action == FASTTIME_HELP) {
		fasttime_usage();
		return fasttime_finish_output(0);
	}
	if (options.action == FASTTIME_VERSION) {
		printf("fasttime %s\n", PACKAGE_VERSION);
		return fasttime_finish_output(0);
	}
	if (options.action == FASTTIME_INFO) {
		fasttime_info_settings(&options, &settings);
		debug_enabled = settings.debug;
		cpu_hidden_hwcaps = settings.hidden_hwcaps;
		return fasttime_finish_output(tool_info_run(&settings, options.info_format));
	}
	if (options.action == FASTTIME_CHECK) {
		/* The check reads the counter as the library would: with the
		 * features FASTTIME_HWCAPS hides treated as absent. */
		settings_load(&settings, settings_secure_getenv, debug_write_line);
		cpu_hidden_hwcaps = settings.hidden_hwcaps;
		return fasttime_finish_output(tool_check_run());
	}
	return tool_run_command(&options.run, argv + options.first_argument);
}
