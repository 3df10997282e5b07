/* The preloaded library's start, timed from the first time call. The
 * library says how far it got only through its FASTTIME_DEBUG lines, so
 * they are read through a pipe put on stderr before that call and stamped
 * with libc's own clock as they arrive (at most a few microseconds late:
 * the pipe is polled between short bursts of calls). Meanwhile this thread
 * keeps calling the clock, as a program that times things from its first
 * instruction would. */
#include "config.h"

#include "bench_startup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "bench_libc.h"
#include "bench_library.h"
#include "bench_proc.h"
#include "entry_table.h"
#include "settings.h"

#define BENCH_STARTUP_LINES	 64u
#define BENCH_STARTUP_TIMEOUT_NS 5000000000ull

/* One library debug line as the start-up timing saw it. */
struct bench_startup_line {
	double ms; /* since just before the first time call */
	char text[200];
};

/* One choice of entry points, as its debug lines told it: a line that opens
 * it, then one per entry point, decided (fast or libc) or left for a later
 * choice because its lines are not ready yet (CLOCK_MONOTONIC_RAW's may
 * come a round after the monotonic ones). */
struct bench_startup_choice {
	unsigned decided; /* entry points decided so far */
	unsigned waiting; /* entry points left for a later choice */
	unsigned fast;	  /* of those decided, the ones the library answers */
	char api[ENTRY_COUNT][64];
	bool is_fast[ENTRY_COUNT];
};

/* What the debug lines said, and when (ms after the first call, or -1). */
struct bench_startup_result {
	struct bench_startup_line lines[BENCH_STARTUP_LINES];
	unsigned nlines;
	unsigned allowed;     /* CPUs: the first lines to wait for */
	unsigned first_lines; /* seen so far */
	/* The choice whose lines are arriving; once one decides every entry
	 * point, that one, kept. */
	struct bench_startup_choice choice;
	struct bench_startup_choice first; /* the first, once all its lines came */
	uint64_t first_call_ns;
	double thread_ms, all_lines_ms, first_choice_ms, decision_ms;
	const char *outcome; /* "decided", "not started" or "timeout" */
};

/* "fasttime: API: libc X ns, fasttime Y ns: fast|libc", the library's
 * per-API decision: the API's name into api and whether it went fast. */
static bool bench_startup_decision(const char *text, char *api, size_t size, bool *fast)
{
	const char *libc = strstr(text, ": libc ");
	size_t n = strlen(text);

	if (strncmp(text, "fasttime: ", 10) != 0 || libc == NULL ||
	    strstr(libc, " ns, fasttime ") == NULL || n < 6)
		return false;
	if (strcmp(text + n - 6, ": fast") == 0)
		*fast = true;
	else if (strcmp(text + n - 6, ": libc") == 0)
		*fast = false;
	else
		return false;
	snprintf(api, size, "%.*s", (int)(libc - text - 10), text + 10);
	return true;
}

/* Counts line, arrived ms after the first call, into the choice it belongs
 * to. A line that leaves an entry point for later is no decision: the start
 * is decided by the first choice that decides every entry point. */
static void bench_startup_count(struct bench_startup_result *r, const char *line, double ms)
{
	struct bench_startup_choice *c = &r->choice;

	if (strstr(line, ": entry points chosen after round ") != NULL) {
		memset(c, 0, sizeof *c);
		return;
	}
	if (strstr(line, " ns, fasttime not measured: ") != NULL)
		c->waiting++;
	else if (c->decided < ENTRY_COUNT &&
		 bench_startup_decision(line, c->api[c->decided], sizeof c->api[0],
					&c->is_fast[c->decided])) {
		c->fast += c->is_fast[c->decided];
		c->decided++;
	} else
		return;
	if (c->decided + c->waiting == ENTRY_COUNT && r->first_choice_ms < 0) {
		r->first = *c;
		r->first_choice_ms = ms;
	}
	if (c->decided == ENTRY_COUNT) {
		r->decision_ms = ms;
		r->outcome = "decided";
	}
}

/* Keeps one complete line, arrived ms after the first call, and what it
 * tells of the start. */
static void bench_startup_take(struct bench_startup_result *r, const char *line, double ms)
{
	if (r->nlines < BENCH_STARTUP_LINES) {
		r->lines[r->nlines].ms = ms;
		snprintf(r->lines[r->nlines].text, sizeof r->lines[r->nlines].text, "%s", line);
		r->nlines++;
	}
	if (strstr(line, ": refresh thread started") != NULL && r->thread_ms < 0)
		r->thread_ms = ms;
	if (strstr(line, ": first line, ") != NULL && ++r->first_lines == r->allowed)
		r->all_lines_ms = ms;
	if (r->decision_ms < 0)
		bench_startup_count(r, line, ms);
	if (strstr(line, "not starting") != NULL || strstr(line, "cannot start") != NULL ||
	    strstr(line, "answering with libc from now on") != NULL)
		r->outcome = "not started";
}

/* After the first call (made at start), keeps calling, reading the
 * library's lines from fd, until it has decided, has not started, or the
 * timeout. */
static void bench_startup_watch(struct bench_startup_result *r, int fd, uint64_t start)
{
	char buffer[4096];
	size_t used = 0;

	for (;;) {
		struct timespec ts;
		ssize_t n;
		char *line, *newline;
		double ms;

		for (unsigned i = 0; i < 64; i++) {
			clock_gettime(CLOCK_MONOTONIC, &ts);
			bench_consume((uint64_t)ts.tv_nsec);
		}
		if (bench_libc_ns(CLOCK_MONOTONIC) - start > BENCH_STARTUP_TIMEOUT_NS)
			break;
		n = read(fd, buffer + used, sizeof buffer - 1 - used);
		if (n <= 0)
			continue;
		ms = (double)(bench_libc_ns(CLOCK_MONOTONIC) - start) / 1e6;
		used += (size_t)n;
		buffer[used] = '\0';
		line = buffer;
		while ((newline = strchr(line, '\n')) != NULL) {
			*newline = '\0';
			bench_startup_take(r, line, ms);
			line = newline + 1;
		}
		/* A partial line waits for its end; a line longer than the
		 * buffer is dropped. */
		used = strlen(line);
		memmove(buffer, line, used + 1);
		if (used == sizeof buffer - 1)
			used = 0;
		if (strcmp(r->outcome, "timeout") != 0)
			break;
	}
}

/* The result as source,api,metric,value lines; the decisions are those of
 * the choice that decided every entry point (else of the last one seen). */
static void bench_startup_csv(const struct bench_startup_result *r)
{
	printf("source,api,metric,value\n");
	printf("startup,-,first_call_us,%.1f\n", (double)r->first_call_ns / 1e3);
	printf("startup,-,allowed_cpus,%u\n", r->allowed);
	if (r->thread_ms >= 0)
		printf("startup,-,thread_started_ms,%.3f\n", r->thread_ms);
	if (r->all_lines_ms >= 0)
		printf("startup,-,all_first_lines_ms,%.3f\n", r->all_lines_ms);
	for (unsigned i = 0; i < r->nlines; i++) {
		char cpu[32];
		/* sscanf counts conversions, not the text matched after them:
		 * every "cpu N: " line would pass without the strstr. */
		if (strstr(r->lines[i].text, ": first line, ") != NULL &&
		    sscanf(r->lines[i].text, "fasttime: cpu %31[0-9]: ", cpu) == 1)
			printf("startup,cpu%s,first_line_ms,%.3f\n", cpu, r->lines[i].ms);
	}
	for (unsigned a = 0; a < r->choice.decided; a++)
		printf("startup,%s,decision,%s\n", r->choice.api[a],
		       r->choice.is_fast[a] ? "fast" : "libc");
	if (r->first_choice_ms >= 0) {
		printf("startup,-,first_choice_ms,%.3f\n", r->first_choice_ms);
		printf("startup,-,first_choice_waiting,%u\n", r->first.waiting);
	}
	if (r->decision_ms >= 0)
		printf("startup,-,decision_ms,%.3f\n", r->decision_ms);
	printf("startup,-,fast_apis,%u\n", r->choice.fast);
	printf("startup,-,outcome,%s\n", r->outcome);
}

/* The result for a person: every line with its time, then the verdict. */
static void bench_startup_table(const struct bench_startup_result *r)
{
	printf("fasttime-bench %s: the library's start, timed from the first "
	       "clock_gettime(MONOTONIC) (this thread calls it in a loop)\n",
	       PACKAGE_VERSION);
	printf("first call: %.1f us\n", (double)r->first_call_ns / 1e3);
	for (unsigned i = 0; i < r->nlines; i++)
		printf("%9.3f ms  %s\n", r->lines[i].ms, r->lines[i].text);
	if (r->first_choice_ms >= 0 && r->first.waiting > 0)
		printf("first choice %.3f ms after the first call: %u of %u entry points fast, "
		       "%u left until their lines are ready\n",
		       r->first_choice_ms, r->first.fast, (unsigned)ENTRY_COUNT, r->first.waiting);
	if (r->decision_ms >= 0 && r->choice.fast > 0)
		printf("fast path active %.3f ms after the first call, for %u of %u entry "
		       "points\n",
		       r->decision_ms, r->choice.fast, (unsigned)ENTRY_COUNT);
	else if (r->decision_ms >= 0)
		printf("decided %.3f ms after the first call: libc answers every entry "
		       "point here\n",
		       r->decision_ms);
	else if (strcmp(r->outcome, "timeout") == 0)
		printf("no decision within %.0f s\n", BENCH_STARTUP_TIMEOUT_NS / 1e9);
	else
		printf("the library did not start its fast path\n");
}

/* Catches the library's debug lines (FASTTIME_DEBUG) in a pipe, from
 * before the first call: *saved is the real stderr, or -1 when nothing is
 * caught. False when it cannot. */
static bool bench_startup_catch(bool debug, int fds[2], int *saved)
{
	*saved = -1;
	if (!debug)
		return true;
	if (pipe(fds) != 0 || fcntl(fds[0], F_SETFL, O_NONBLOCK) != 0 ||
	    (*saved = dup(STDERR_FILENO)) < 0 || dup2(fds[1], STDERR_FILENO) < 0) {
		fprintf(stderr, "fasttime-bench: cannot catch the library's output: %s\n",
			strerror(errno));
		return false;
	}
	close(fds[1]);
	return true;
}

/* Puts stderr back, first passing on what was caught and not read. */
static void bench_startup_release(int fds[2], int saved)
{
	char buffer[4096];
	ssize_t n;

	if (saved < 0)
		return;
	dup2(saved, STDERR_FILENO);
	close(saved);
	while ((n = read(fds[0], buffer, sizeof buffer)) > 0)
		if (write(STDERR_FILENO, buffer, (size_t)n) != n)
			break;
	close(fds[0]);
}

/* A served process: its page is looked for, mapped and read by its first
 * call, and no start follows it (tests/lifecycle/served.test shows that
 * call is answered from the TSC). */
static int bench_startup_served(const struct bench_library *library, uint64_t first_call_ns)
{
	if (bench_options.csv)
		printf("source,api,metric,value\nstartup,-,first_call_us,%.1f\n"
		       "startup,-,outcome,served\n",
		       (double)first_call_ns / 1e3);
	else
		printf("fasttime-bench %s: served by the page %s: the first call mapped it, no "
		       "thread starts\nfirst call: %.1f us\n",
		       PACKAGE_VERSION, library->page, (double)first_call_ns / 1e3);
	return 0;
}

int bench_startup_run(void)
{
	struct bench_startup_result result = {
		.allowed = bench_proc_allowed_cpus(),
		.thread_ms = -1,
		.all_lines_ms = -1,
		.first_choice_ms = -1,
		.decision_ms = -1,
		.outcome = "timeout",
	};
	struct bench_library library;
	struct settings settings;
	int fds[2], saved;
	uint64_t start;

	bench_library_find(&library);
	bench_library_settings(&settings);
	if (!library.preloaded) {
		fprintf(stderr, "fasttime-bench: --startup wants the library preloaded "
				"(fasttime --debug fasttime-bench --startup)\n");
		return 2;
	}
	/* Caught from before the first call, which may start the thread. */
	if (!bench_startup_catch(settings.debug, fds, &saved))
		return 1;
	start = bench_library_first_call();
	result.first_call_ns = bench_libc_ns(CLOCK_MONOTONIC) - start;
	if (bench_library_served(&library)) {
		bench_startup_release(fds, saved);
		return bench_startup_served(&library, result.first_call_ns);
	}
	if (!settings.debug) {
		fprintf(stderr, "fasttime-bench: --startup reads the library's debug lines: "
				"run it with FASTTIME_DEBUG=1 (fasttime --debug)\n");
		return 2;
	}
	bench_startup_watch(&result, fds[0], start);
	/* Later debug lines go where fasttime --debug sends them. */
	dup2(saved, STDERR_FILENO);
	close(saved);
	close(fds[0]);

	if (bench_options.csv)
		bench_startup_csv(&result);
	else
		bench_startup_table(&result);
	return 0;
}
