/* Bad usage of a command: one line, and where help is. */
#include "config.h"

#include "command_usage.h"

#include <stdarg.h>
#include <stdio.h>

int command_bad_usage(const char *command, const char *format, ...)
{
	va_list args;

	fprintf(stderr, "%s: ", command);
	va_start(args, format);
	vfprintf(stderr, format, args);
	va_end(args);
	fprintf(stderr, "\nTry '%s --help' for more information.\n", command);
	return COMMAND_EXIT_USAGE;
}
