/* Output to stderr with write(2): no stdio buffer, no lock shared with the
 * host program, no allocation. */
#include "config.h"

#include "debug.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "start_data.h"

bool debug_enabled START_DATA;

void debug_write_line(const char *line)
{
	size_t len = strlen(line);

	while (len > 0) {
		ssize_t n = write(STDERR_FILENO, line, len);
		if (n <= 0)
			break;
		line += n;
		len -= (size_t)n;
	}
}

void debug_log(const char *format, ...)
{
	char line[320];
	va_list args;
	int n;

	if (!debug_enabled)
		return;
	memcpy(line, "fasttime: ", 10);
	va_start(args, format);
	n = vsnprintf(line + 10, sizeof line - 11, format, args);
	va_end(args);
	if (n < 0)
		return;
	n = n + 10 > (int)sizeof line - 2 ? (int)sizeof line - 2 : n + 10;
	line[n] = '\n';
	line[n + 1] = '\0';
	debug_write_line(line);
}
