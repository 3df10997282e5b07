/* The preloaded library seen from inside the process it runs in: from the
 * dynamic linker (who defines clock_gettime) and from /proc (its thread). */
#include "config.h"

#include "bench_library.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "bench_libc.h"
#include "bench_proc.h"
#include "service_page.h"

/* The file whose clock_gettime this process calls: libc.so.6 natively,
 * libfasttime.so under fasttime, a sanitizer's runtime where it intercepts
 * the call. Comparing the address with libc's would take an interceptor for
 * the library. */
static const char *bench_library_owner(void)
{
	void *symbol = dlsym(RTLD_DEFAULT, "clock_gettime");
	const char *slash;
	Dl_info info;

	if (symbol == NULL || dladdr(symbol, &info) == 0 || info.dli_fname == NULL ||
	    info.dli_fname[0] == '\0')
		return "unknown";
	slash = strrchr(info.dli_fname, '/');
	return slash != NULL ? slash + 1 : info.dli_fname;
}

void bench_library_find(struct bench_library *library)
{
	library->owner = bench_library_owner();
	library->preloaded = strncmp(library->owner, "libfasttime", 11) == 0;
	library->state = BENCH_LIBRARY_ABSENT;
	library->waited_ms = 0;
}

uint64_t bench_library_first_call(void)
{
	uint64_t start = bench_libc_ns(CLOCK_MONOTONIC);
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	bench_consume((uint64_t)ts.tv_nsec);
	return start;
}

long bench_library_tid(void)
{
	DIR *tasks = opendir("/proc/self/task");
	struct dirent *task;
	long tid = 0;

	if (tasks == NULL)
		return 0;
	while (tid == 0 && (task = readdir(tasks)) != NULL) {
		char line[64];
		long id;

		if (task->d_name[0] == '.')
			continue;
		id = strtol(task->d_name, NULL, 10);
		if (bench_proc_task_line(id, "comm", line, sizeof line) &&
		    strcmp(line, "fasttime\n") == 0)
			tid = id;
	}
	closedir(tasks);
	return tid;
}

/* The state letter of the library's refresh thread from /proc, or 0 when
 * this process has no such thread. */
static char bench_library_thread_state(void)
{
	long tid = bench_library_tid();
	char line[512];
	const char *fields;

	if (tid == 0 || (fields = bench_proc_task_stat(tid, line, sizeof line)) == NULL)
		return 0;
	return fields[0];
}

/* Under the preload the process's functions answer with libc until the
 * library's refresh thread has calibrated the CPUs and chosen its entry
 * points: measuring that start would mix libc's cost into the library's.
 * The thread sleeps between rounds, so once it is seen asleep a few
 * milliseconds in a row its first round (and the choice) is over. No
 * thread, or one that ended: the library is off here and answers with libc
 * (fasttime --debug says why). A thread that never rests: measure anyway,
 * and say so. */
/* A served process maps the service's page read-only and shared, whole
 * (service_page.h): /proc/self/maps names it. */
bool bench_library_served(struct bench_library *library)
{
	FILE *maps = fopen("/proc/self/maps", "re");
	char line[512];
	bool served = false;

	if (maps == NULL)
		return false;
	while (!served && fgets(line, sizeof line, maps) != NULL) {
		unsigned long start, end;
		char perms[8];
		int path_at = 0;

		if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &start, &end, perms, &path_at) < 3 ||
		    path_at == 0 || strcmp(perms, "r--s") != 0 || end - start != SERVICE_PAGE_SIZE)
			continue;
		snprintf(library->page, sizeof library->page, "%s", line + path_at);
		library->page[strcspn(library->page, "\n")] = '\0';
		served = true;
	}
	fclose(maps);
	return served;
}

void bench_library_wait(struct bench_library *library)
{
	const struct timespec poll = { 0, 1000000 };
	uint64_t start = bench_library_first_call(), waited;
	unsigned asleep = 0;
	bool seen = false;

	if (bench_library_served(library)) {
		library->state = BENCH_LIBRARY_SERVED;
		library->waited_ms = (double)(bench_libc_ns(CLOCK_MONOTONIC) - start) / 1e6;
		return;
	}
	for (;;) {
		char state = bench_library_thread_state();

		waited = bench_libc_ns(CLOCK_MONOTONIC) - start;
		asleep = state == 'S' ? asleep + 1 : 0;
		if (asleep >= 3) {
			library->state = BENCH_LIBRARY_READY;
			break;
		}
		if (state == 0 && (seen || waited > 500000000u)) {
			library->state = BENCH_LIBRARY_ABSENT;
			break;
		}
		if (waited > 5000000000u) {
			library->state = BENCH_LIBRARY_BUSY;
			break;
		}
		seen = seen || state != 0;
		nanosleep(&poll, NULL);
	}
	library->waited_ms = (double)waited / 1e6;
}

/* Sleeps whole seconds and the rest, through interruptions. */
static void bench_library_sleep(double seconds)
{
	struct timespec left = { (time_t)seconds,
				 (long)((seconds - (double)(time_t)seconds) * 1e9) };

	while (nanosleep(&left, &left) != 0 && errno == EINTR)
		continue;
}

int bench_library_fork(struct bench_library *library, double seconds)
{
	pid_t child;
	int status;

	fflush(stdout);
	child = fork();
	if (child < 0) {
		fprintf(stderr, "fasttime-bench: cannot fork: %s\n", strerror(errno));
		return 1;
	}
	if (child == 0) {
		/* A child that reads the clock, as a forked server would, and
		 * then lives on for several refresh intervals. */
		bench_library_first_call();
		bench_library_sleep(seconds);
		if (library->preloaded)
			bench_library_wait(library);
		return -1;
	}
	while (waitpid(child, &status, 0) < 0)
		if (errno != EINTR)
			return 1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

/* getenv, as settings_load wants a lookup function. */
static const char *bench_library_getenv(const char *name)
{
	return getenv(name);
}

/* The library has warned about its settings already. */
static void bench_library_ignore_warning(const char *line)
{
	(void)line;
}

void bench_library_settings(struct settings *settings)
{
	settings_load(settings, bench_library_getenv, bench_library_ignore_warning);
}
