/* FASTTIME_DEBUG: calibration events on stderr, one line each. */
#ifndef FASTTIME_DEBUG_H
#define FASTTIME_DEBUG_H

#include <stdbool.h>

extern bool debug_enabled;

/* Formats into a stack buffer and writes one line to fd 2. */
void debug_log(const char *format, ...) __attribute__((format(printf, 1, 2)));
/* Writes a line to fd 2 unconditionally (configuration warnings). */
void debug_write_line(const char *line);

#endif
