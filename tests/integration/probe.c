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
	/* Zero, so that a call that fails prints "sane 0" whatever the stack
	 * held. */
	struct timespec mono = { 0 }, real = { 0 }, later = { 0 }, utc = { 0 };
	struct timeval tv = { 0 };
	unsigned wait_ms;
	time_t now;
	int rc;

	if (argc != 3) {
		fprintf(stderr, "usage: %s WAIT_MS STATUS\n", argv[0]);
		return 99;
	}
	wait_ms = (unsigned)atoi(argv[1]);
	printf("clock_gettime(CLOCK_MONOTONIC): %d\n", clock_gettime(CLOCK_MONOTONIC, &mono));
	if (wait_ms > 0)
		usleep(wait_ms * 1000);
	/* Each call before the printf that shows what it wrote: a function's
	 * arguments are evaluated in no set order, and gcc 13 read the
	 * timespec before the call that fills it, printing whatever the stack
	 * held there, which differs with a library loaded, even a disabled one. */
	rc = clock_gettime(CLOCK_REALTIME, &real);
	printf("clock_gettime(CLOCK_REALTIME): %d, sane %d\n", rc,
	       real.tv_sec > PROBE_SANE_SECONDS);
	rc = gettimeofday(&tv, NULL);
	printf("gettimeofday: %d, sane %d\n", rc, tv.tv_sec > PROBE_SANE_SECONDS);
	now = time(NULL);
	printf("time: sane %d\n", now > PROBE_SANE_SECONDS);
	rc = timespec_get(&utc, TIME_UTC);
	printf("timespec_get: %d, sane %d\n", rc, utc.tv_sec > PROBE_SANE_SECONDS);
	printf("clock_gettime(100): %d\n", clock_gettime(100, &later));
	clock_gettime(CLOCK_MONOTONIC, &later);
	printf("monotonic did not go back: %d\n",
	       later.tv_sec > mono.tv_sec ||
		   (later.tv_sec == mono.tv_sec && later.tv_nsec >= mono.tv_nsec));
	return atoi(argv[2]);
}
