/* Bad usage of one of the project's commands (fasttime, fasttimed): the
 * same answer from each. */
#ifndef FASTTIME_COMMAND_USAGE_H
#define FASTTIME_COMMAND_USAGE_H

/* The status GNU tools and env(1) give for bad usage. */
#define COMMAND_EXIT_USAGE 2

/* Writes "COMMAND: <message>" and the way to more help on standard error;
 * returns COMMAND_EXIT_USAGE. */
int command_bad_usage(const char *command, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

#endif
