/* Exit while the clock is being read: reader threads keep calling all four
 * entry points in tight loops while the process ends, and an atexit handler
 * and a destructor read the clock too. The process must end with status 0
 * and both handlers must have finished (exit.test checks their lines).
 *
 *   exit return    main returns after a random 0-20 ms
 *   exit exit      main calls exit() after a random 0-20 ms
 *   exit thread    a reader thread calls exit() while main reads
 *   exit instant   main returns at once: exit races the refresh thread's start
 *   exit late      no time call before exit: the atexit handler's is the
 *                  first, and starts the refresh thread during exit
 *
 * A reader that sees its own time go back ends the process with status 3. */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "life.h"

#define EXIT_READERS 4

/* Reads each entry point once; ends the process if this thread's monotonic
 * time went back. */
static void exit_read_all(uint64_t *last_mono)
{
	struct timespec ts;
	struct timeval tv;
	uint64_t now;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = life_ns(&ts);
	if (now < *last_mono) {
		char line[128];
		int n = snprintf(line, sizeof line,
				 "exit: FAIL: CLOCK_MONOTONIC went back %llu ns in one thread\n",
				 (unsigned long long)(*last_mono - now));

		if (write(STDOUT_FILENO, line, (size_t)n) != n)
			_exit(3);
		_exit(3);
	}
	*last_mono = now;
	clock_gettime(CLOCK_REALTIME, &ts);
	gettimeofday(&tv, NULL);
	time(NULL);
	timespec_get(&ts, TIME_UTC);
}

/* Reads a burst from a handler that runs during exit, and says it finished. */
static void exit_handler_burst(const char *who)
{
	uint64_t last = 0;
	char line[64];
	int n;

	for (int i = 0; i < 10000; i++)
		exit_read_all(&last);
	n = snprintf(line, sizeof line, "exit: %s: ok\n", who);
	if (write(STDOUT_FILENO, line, (size_t)n) != n)
		_exit(4);
}

/* Reads during exit, from an atexit handler (in "late", the first reads). */
static void exit_atexit(void)
{
	exit_handler_burst("atexit");
}

/* Reads during exit, from a destructor, after the atexit handlers. */
__attribute__((destructor)) static void exit_destructor(void)
{
	exit_handler_burst("destructor");
}

struct exit_reader {
	bool calls_exit;
	unsigned seed;
};

/* A reader: tight loop until the process ends (or ends it, if asked to). */
static void *exit_reader_main(void *arg)
{
	struct exit_reader *reader = arg;
	unsigned stop_after = 1000 + rand_r(&reader->seed) % 50000u;
	uint64_t last = 0;

	for (unsigned i = 0;; i++) {
		exit_read_all(&last);
		if (reader->calls_exit && i == stop_after)
			exit(0);
	}
	return NULL;
}

/* Starts the readers and ends the process the way argv[1] says. */
int main(int argc, char **argv)
{
	static struct exit_reader readers[EXIT_READERS];
	const char *mode = argc > 1 ? argv[1] : "return";
	unsigned seed = (unsigned)getpid();
	uint64_t last = 0;
	pthread_t thread;

	life_begin("exit");
	life_watchdog(30);
	atexit(exit_atexit);
	if (strcmp(mode, "late") == 0)
		return 0;

	for (int i = 0; i < EXIT_READERS; i++) {
		readers[i].calls_exit = strcmp(mode, "thread") == 0 && i == 0;
		readers[i].seed = seed + (unsigned)i;
		if (pthread_create(&thread, NULL, exit_reader_main, &readers[i]) != 0)
			life_fail("pthread_create failed");
		pthread_detach(thread);
	}
	if (strcmp(mode, "instant") == 0)
		return 0;
	if (strcmp(mode, "thread") == 0)
		for (;;)
			exit_read_all(&last);

	life_sleep_ms(rand_r(&seed) % 21u);
	if (strcmp(mode, "exit") == 0)
		exit(0);
	if (strcmp(mode, "return") != 0)
		life_fail("usage: exit return|exit|thread|instant|late");
	return 0;
}
