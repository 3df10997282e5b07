/* A plain program for config.pre: it uses every entry point, prints only
 * what does not depend on the moment it runs, and exits with the status it
 * is given, so that its stdout and status can be compared between a run with
 * and a run without the library.
 *
 *   probe WAIT_MS STATUS   (the wait follows the first time call, so that
 *                           the refresh thread has run before the exit) */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* 2020-01-01: any clock that answers earlier than this is wrong. */
#define PROBE_SANE_SECONDS 1577836800

/* Prints the outcome of each entry point, then exits with STATUS. */
int main(int argc, char **argv)
{
	struct timespec mono, real, later, utc;
	struct timeval tv;
	unsigned wait_ms;
	time_t now;

	if (argc != 3) {
		fprintf(stderr, "usage: %s WAIT_MS STATUS\n", argv[0]);
		return 99;
	}
	wait_ms = (unsigned)atoi(argv[1]);
	printf("clock_gettime(CLOCK_MONOTONIC): %d\n", clock_gettime(CLOCK_MONOTONIC, &mono));
	if (wait_ms > 0)
		usleep(wait_ms * 1000);
	printf("clock_gettime(CLOCK_REALTIME): %d, sane %d\n", clock_gettime(CLOCK_REALTIME, &real),
	       real.tv_sec > PROBE_SANE_SECONDS);
	printf("gettimeofday: %d, sane %d\n", gettimeofday(&tv, NULL),
	       tv.tv_sec > PROBE_SANE_SECONDS);
	now = time(NULL);
	printf("time: sane %d\n", now > PROBE_SANE_SECONDS);
	printf("timespec_get: %d, sane %d\n", timespec_get(&utc, TIME_UTC),
	       utc.tv_sec > PROBE_SANE_SECONDS);
	printf("clock_gettime(100): %d\n", clock_gettime(100, &later));
	clock_gettime(CLOCK_MONOTONIC, &later);
	printf("monotonic did not go back: %d\n",
	       later.tv_sec > mono.tv_sec ||
		   (later.tv_sec == mono.tv_sec && later.tv_nsec >= mono.tv_nsec));
	return atoi(argv[2]);
}
