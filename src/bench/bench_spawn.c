/* What a preload costs processes that never read the clock: a machine-wide
 * preload (/etc/ld.so.preload, an exported LD_PRELOAD) puts the library in
 * every process, so every start pays its loading and its constructor, and
 * every fork its atfork work and the pages it writes. Each case runs once
 * under the library and once under a library that does nothing (loaded,
 * mapped and relocated as any other, with no constructor), in rounds that
 * alternate which comes first, so that a change in the machine's load
 * falls on both. The times are libc's own clock, which no preload answers.
 *
 *   spawn  posix_spawn and wait of /bin/true, the child preloaded
 *   fork   fork, the child's _exit and the wait, in a preloaded parent (this
 *          program run again under the library with --fork-loop)
 *   fork-reader  the same in a parent that read the clock once first, 0.2 s
 *          before (--fork-loop-reading): served where a page serves, else
 *          running its own refresh thread, and so paying its fork handler
 *   shell  sh -c 'for i in $(seq N); do /bin/true; done' under an exported
 *          LD_PRELOAD, per /bin/true */
#include "config.h"

#include "bench_spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "bench_libc.h"

/* Per library and round: spawns, forks, and the shell's loop (which runs
 * in twice as many rounds). */
#define BENCH_SPAWN_SPAWNS_PER_ROUND 50u
#define BENCH_SPAWN_FORKS_PER_ROUND  100u
#define BENCH_SPAWN_SHELL_LOOP	     25u
/* How long the fork-reader case's parent waits after its time call. */
#define BENCH_SPAWN_READER_SETTLE_NS 200000000l

#define BENCH_SPAWN_TRUE  "/bin/true"
#define BENCH_SPAWN_SHELL "/bin/sh"

extern char **environ;

/* The two sides of every comparison. */
enum bench_spawn_side { BENCH_SPAWN_LIBRARY, BENCH_SPAWN_EMPTY, BENCH_SPAWN_SIDES };

static const char *const bench_spawn_side_names[BENCH_SPAWN_SIDES] = { "library", "empty" };

/* One case: its samples on each side (ns), and each round's ratio of the
 * library's median to the empty library's. */
struct bench_spawn_case {
	const char *name;
	char what[128];
	uint64_t *ns[BENCH_SPAWN_SIDES];
	size_t count[BENCH_SPAWN_SIDES];
	double *round_ratio;
	unsigned rounds;
};

/* What every case needs: the two libraries, the environment each side's
 * processes get, and this program's own file. */
struct bench_spawn_setup {
	char path[BENCH_SPAWN_SIDES][PATH_MAX];
	char **env[BENCH_SPAWN_SIDES];
	char self[PATH_MAX];
};

/* The q-quantile (0..1) of n sorted values, interpolated between the two
 * nearest. */
static double bench_spawn_quantile(const uint64_t *sorted, size_t n, double q)
{
	double at = q * (double)(n - 1);
	size_t low = (size_t)at;

	if (n == 0)
		return 0;
	if (low + 1 >= n)
		return (double)sorted[n - 1];
	return (double)sorted[low] + (at - (double)low) * (double)(sorted[low + 1] - sorted[low]);
}

static int bench_spawn_compare(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* The median of n values, which it sorts. */
static double bench_spawn_median(uint64_t *values, size_t n)
{
	qsort(values, n, sizeof *values, bench_spawn_compare);
	return bench_spawn_quantile(values, n, 0.5);
}

/* This program's environment with LD_PRELOAD set to library alone: the
 * benchmark may itself run under a preload, which its children must not
 * inherit. NULL when memory runs out. */
static char **bench_spawn_environment(const char *library)
{
	size_t n = 0, used = 0;
	char **env;

	while (environ[n] != NULL)
		n++;
	env = calloc(n + 2, sizeof *env);
	if (env == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0)
			env[used++] = environ[i];
	if (asprintf(&env[used], "LD_PRELOAD=%s", library) < 0) {
		free(env);
		return NULL;
	}
	return env;
}

/* This program's own file, which the fork case runs again. */
static bool bench_spawn_self(struct bench_spawn_setup *setup)
{
	ssize_t n = readlink("/proc/self/exe", setup->self, sizeof setup->self - 1);

	if (n <= 0)
		return false;
	setup->self[n] = '\0';
	return true;
}

/* A library's path: the option's, else beside this program in a build
 * tree (libtool's .libs), else where it is installed. */
static bool bench_spawn_find(const struct bench_spawn_setup *setup, const char *given,
			     const char *name, const char *installed, char path[PATH_MAX])
{
	const char *slash = strrchr(setup->self, '/');

	if (given != NULL) {
		snprintf(path, PATH_MAX, "%s", given);
	} else {
		snprintf(path, PATH_MAX, "%.*s/.libs/%s",
			 slash != NULL ? (int)(slash - setup->self) : 1,
			 slash != NULL ? setup->self : ".", name);
		if (access(path, R_OK) != 0)
			snprintf(path, PATH_MAX, "%s/%s", installed, name);
	}
	if (access(path, R_OK) == 0)
		return true;
	fprintf(stderr, "fasttime-bench: cannot read %s: %s (--library and --empty name them)\n",
		path, strerror(errno));
	return false;
}

/* Spawns argv[0] with env, its standard output on out (or this
 * program's, if out is -1; out is closed here), and waits for it; false, with a message, if it
 * could not be run or did not exit 0. */
static bool bench_spawn_wait(char *const argv[], char **env, int out)
{
	posix_spawn_file_actions_t actions;
	int status, rc;
	pid_t pid;

	posix_spawn_file_actions_init(&actions);
	if (out >= 0)
		posix_spawn_file_actions_adddup2(&actions, out, STDOUT_FILENO);
	rc = posix_spawn(&pid, argv[0], &actions, NULL, argv, env);
	posix_spawn_file_actions_destroy(&actions);
	if (out >= 0)
		close(out);
	if (rc != 0) {
		fprintf(stderr, "fasttime-bench: cannot run %s: %s\n", argv[0], strerror(rc));
		return false;
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return false;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return true;
	fprintf(stderr, "fasttime-bench: %s %s with %d\n", argv[0],
		WIFEXITED(status) ? "exited" : "was killed",
		WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	return false;
}

/* One round's spawns of /bin/true on one side, each timed with its wait. */
static bool bench_spawn_spawns(const struct bench_spawn_setup *setup, enum bench_spawn_side side,
			       uint64_t *ns)
{
	char *argv[] = { (char *)BENCH_SPAWN_TRUE, NULL };

	for (unsigned i = 0; i < BENCH_SPAWN_SPAWNS_PER_ROUND; i++) {
		uint64_t start = bench_libc_ns(CLOCK_MONOTONIC);

		if (!bench_spawn_wait(argv, setup->env[side], -1))
			return false;
		ns[i] = bench_libc_ns(CLOCK_MONOTONIC) - start;
	}
	return true;
}

/* One round's forks on one side: this program again, preloaded, run with
 * option (--fork-loop or --fork-loop-reading), forking and timing each
 * fork itself; its times come back through a pipe. */
static bool bench_spawn_forks_with(const struct bench_spawn_setup *setup,
				   enum bench_spawn_side side, const char *option, uint64_t *ns)
{
	char count[16];
	char *argv[] = { (char *)setup->self, (char *)option, count, NULL };
	size_t want = BENCH_SPAWN_FORKS_PER_ROUND * sizeof *ns, got = 0;
	int fds[2];
	bool ran;

	snprintf(count, sizeof count, "%u", BENCH_SPAWN_FORKS_PER_ROUND);
	if (pipe2(fds, O_CLOEXEC) != 0)
		return false;
	/* The pipe holds every time (800 bytes): the loop never waits on it. */
	ran = bench_spawn_wait(argv, setup->env[side], fds[1]);
	while (ran && got < want) {
		ssize_t n = read(fds[0], (char *)ns + got, want - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fds[0]);
	if (ran && got != want)
		fprintf(stderr, "fasttime-bench: the fork loop gave %zu bytes of %zu\n", got, want);
	return ran && got == want;
}

static bool bench_spawn_forks(const struct bench_spawn_setup *setup, enum bench_spawn_side side,
			      uint64_t *ns)
{
	return bench_spawn_forks_with(setup, side, "--fork-loop", ns);
}

static bool bench_spawn_forks_reading(const struct bench_spawn_setup *setup,
				      enum bench_spawn_side side, uint64_t *ns)
{
	return bench_spawn_forks_with(setup, side, "--fork-loop-reading", ns);
}

/* One round's shell on one side: its time per /bin/true. */
static bool bench_spawn_shell(const struct bench_spawn_setup *setup, enum bench_spawn_side side,
			      uint64_t *ns)
{
	char script[96];
	char *argv[] = { (char *)BENCH_SPAWN_SHELL, (char *)"-c", script, NULL };
	uint64_t start;

	snprintf(script, sizeof script, "for i in $(seq %u); do " BENCH_SPAWN_TRUE "; done",
		 BENCH_SPAWN_SHELL_LOOP);
	start = bench_libc_ns(CLOCK_MONOTONIC);
	if (!bench_spawn_wait(argv, setup->env[side], -1))
		return false;
	*ns = (bench_libc_ns(CLOCK_MONOTONIC) - start) / BENCH_SPAWN_SHELL_LOOP;
	return true;
}

typedef bool (*bench_spawn_round_fn)(const struct bench_spawn_setup *, enum bench_spawn_side,
				     uint64_t *);

/* Runs a case's rounds, each side once a round, the first side taking
 * turns; per round and side, per_round samples. */
static bool bench_spawn_case_run(const struct bench_spawn_setup *setup, struct bench_spawn_case *c,
				 bench_spawn_round_fn round, unsigned per_round)
{
	uint64_t *scratch = calloc(per_round, sizeof *scratch);

	c->round_ratio = calloc(c->rounds, sizeof *c->round_ratio);
	for (int s = 0; s < BENCH_SPAWN_SIDES; s++) {
		c->ns[s] = calloc((size_t)c->rounds * per_round, sizeof *c->ns[s]);
		c->count[s] = 0;
	}
	if (scratch == NULL || c->round_ratio == NULL || c->ns[0] == NULL || c->ns[1] == NULL)
		return false;
	for (unsigned r = 0; r < c->rounds; r++) {
		double median[BENCH_SPAWN_SIDES];

		for (int i = 0; i < BENCH_SPAWN_SIDES; i++) {
			enum bench_spawn_side side = (enum bench_spawn_side)(i ^ (int)(r & 1));
			uint64_t *out = c->ns[side] + c->count[side];

			if (!round(setup, side, out))
				return false;
			c->count[side] += per_round;
			memcpy(scratch, out, per_round * sizeof *scratch);
			median[side] = bench_spawn_median(scratch, per_round);
		}
		c->round_ratio[r] = median[BENCH_SPAWN_EMPTY] > 0
					? median[BENCH_SPAWN_LIBRARY] / median[BENCH_SPAWN_EMPTY]
					: 0;
	}
	free(scratch);
	return true;
}

/* What a case's figures are, computed from its samples (which it sorts). */
struct bench_spawn_figures {
	double p10[BENCH_SPAWN_SIDES], median[BENCH_SPAWN_SIDES], p90[BENCH_SPAWN_SIDES];
	double ratio, round_min, round_median, round_max;
};

static void bench_spawn_figures(struct bench_spawn_case *c, struct bench_spawn_figures *f)
{
	uint64_t *ratios = calloc(c->rounds, sizeof *ratios);

	for (int s = 0; s < BENCH_SPAWN_SIDES; s++) {
		qsort(c->ns[s], c->count[s], sizeof *c->ns[s], bench_spawn_compare);
		f->p10[s] = bench_spawn_quantile(c->ns[s], c->count[s], 0.1) / 1e3;
		f->median[s] = bench_spawn_quantile(c->ns[s], c->count[s], 0.5) / 1e3;
		f->p90[s] = bench_spawn_quantile(c->ns[s], c->count[s], 0.9) / 1e3;
	}
	f->ratio = f->median[BENCH_SPAWN_EMPTY] > 0
		       ? f->median[BENCH_SPAWN_LIBRARY] / f->median[BENCH_SPAWN_EMPTY]
		       : 0;
	f->round_min = f->round_median = f->round_max = 0;
	if (ratios == NULL)
		return;
	/* The ratios in millionths, to share the sort and the quantile. */
	for (unsigned r = 0; r < c->rounds; r++)
		ratios[r] = (uint64_t)(c->round_ratio[r] * 1e6 + 0.5);
	qsort(ratios, c->rounds, sizeof *ratios, bench_spawn_compare);
	f->round_min = (double)ratios[0] / 1e6;
	f->round_median = bench_spawn_quantile(ratios, c->rounds, 0.5) / 1e6;
	f->round_max = (double)ratios[c->rounds - 1] / 1e6;
	free(ratios);
}

/* One case's figures, as CSV lines or for a person. */
static void bench_spawn_print(struct bench_spawn_case *c)
{
	struct bench_spawn_figures f;

	bench_spawn_figures(c, &f);
	if (bench_options.csv) {
		for (int s = 0; s < BENCH_SPAWN_SIDES; s++)
			printf("spawn,%s,%s_p10_us,%.1f\nspawn,%s,%s_median_us,%.1f\n"
			       "spawn,%s,%s_p90_us,%.1f\n",
			       c->name, bench_spawn_side_names[s], f.p10[s], c->name,
			       bench_spawn_side_names[s], f.median[s], c->name,
			       bench_spawn_side_names[s], f.p90[s]);
		printf("spawn,%s,samples,%zu\n", c->name, c->count[BENCH_SPAWN_LIBRARY]);
		printf("spawn,%s,ratio,%.3f\n", c->name, f.ratio);
		printf("spawn,%s,round_ratio_min,%.3f\n", c->name, f.round_min);
		printf("spawn,%s,round_ratio_median,%.3f\n", c->name, f.round_median);
		printf("spawn,%s,round_ratio_max,%.3f\n", c->name, f.round_max);
		return;
	}
	printf("\n%s: %s\n", c->name, c->what);
	for (int s = 0; s < BENCH_SPAWN_SIDES; s++)
		printf("  %-8s p10 %8.1f us   median %8.1f us   p90 %8.1f us   (%zu)\n",
		       bench_spawn_side_names[s], f.p10[s], f.median[s], f.p90[s], c->count[s]);
	printf("  ratio    %.3f (medians); by round: min %.3f, median %.3f, max %.3f\n", f.ratio,
	       f.round_min, f.round_median, f.round_max);
}

/* The paths and environments of both sides; false, with a message, where
 * one is missing. */
static bool bench_spawn_setup(struct bench_spawn_setup *setup)
{
	if (!bench_spawn_self(setup)) {
		fprintf(stderr, "fasttime-bench: cannot find its own file\n");
		return false;
	}
	if (!bench_spawn_find(setup, bench_options.library, "libfasttime.so", FASTTIME_PKGLIBDIR,
			      setup->path[BENCH_SPAWN_LIBRARY]) ||
	    !bench_spawn_find(setup, bench_options.empty, "fasttime-bench-empty.so",
			      FASTTIME_PKGLIBDIR, setup->path[BENCH_SPAWN_EMPTY]))
		return false;
	for (int s = 0; s < BENCH_SPAWN_SIDES; s++)
		if ((setup->env[s] = bench_spawn_environment(setup->path[s])) == NULL)
			return false;
	if (access(BENCH_SPAWN_TRUE, X_OK) != 0 || access(BENCH_SPAWN_SHELL, X_OK) != 0) {
		fprintf(stderr, "fasttime-bench: --spawn runs " BENCH_SPAWN_TRUE
				" and " BENCH_SPAWN_SHELL ", and one is missing\n");
		return false;
	}
	return true;
}

int bench_spawn_run(void)
{
	struct bench_spawn_setup setup;
	struct bench_spawn_case cases[4] = {
		{ .name = "spawn" },
		{ .name = "fork" },
		{ .name = "shell" },
		{ .name = "fork-reader" },
	};
	unsigned rounds = bench_options.rounds;

	if (!bench_spawn_setup(&setup))
		return 1;
	snprintf(cases[0].what, sizeof cases[0].what,
		 "posix_spawn and wait of " BENCH_SPAWN_TRUE
		 ", preloaded, by a parent that is not");
	snprintf(cases[1].what, sizeof cases[1].what,
		 "fork, the child's _exit and the wait, in a preloaded parent");
	snprintf(cases[2].what, sizeof cases[2].what,
		 BENCH_SPAWN_SHELL " -c 'for i in $(seq %u); do " BENCH_SPAWN_TRUE
				   "; done', preloaded, per " BENCH_SPAWN_TRUE,
		 BENCH_SPAWN_SHELL_LOOP);
	snprintf(cases[3].what, sizeof cases[3].what,
		 "the same forks in a preloaded parent that read the clock once first");
	/* The shell's runs are short, and each is one sample: twice as many
	 * rounds of them, for as many spawns as the first case. */
	for (unsigned i = 0; i < 4; i++)
		cases[i].rounds = i == 2 ? 2 * rounds : rounds;
	if (bench_options.csv)
		printf("source,api,metric,value\nspawn,-,rounds,%u\n", rounds);
	else
		printf("fasttime-bench %s: process start and fork, preloaded, in %u rounds "
		       "alternating\n  library  %s\n  empty    %s (a library that does nothing)\n",
		       PACKAGE_VERSION, rounds, setup.path[BENCH_SPAWN_LIBRARY],
		       setup.path[BENCH_SPAWN_EMPTY]);
	fflush(stdout);
	if (!bench_spawn_case_run(&setup, &cases[0], bench_spawn_spawns,
				  BENCH_SPAWN_SPAWNS_PER_ROUND) ||
	    !bench_spawn_case_run(&setup, &cases[1], bench_spawn_forks,
				  BENCH_SPAWN_FORKS_PER_ROUND) ||
	    !bench_spawn_case_run(&setup, &cases[2], bench_spawn_shell, 1) ||
	    !bench_spawn_case_run(&setup, &cases[3], bench_spawn_forks_reading,
				  BENCH_SPAWN_FORKS_PER_ROUND))
		return 1;
	for (unsigned i = 0; i < 4; i++)
		bench_spawn_print(&cases[i]);
	return fflush(stdout) == 0 ? 0 : 1;
}

int bench_spawn_fork_loop(unsigned count)
{
	uint64_t *ns = calloc(count, sizeof *ns);
	size_t want = count * sizeof *ns, done = 0;

	if (ns == NULL)
		return 1;
	if (bench_options.fork_loop_reads) {
		/* Through whatever is preloaded: the library answers it, and
		 * is served or starts its thread, whose first rounds (10 ms
		 * apart, growing) are let pass: the forks are those of a
		 * process that has run a while. */
		struct timespec now, settle = { .tv_nsec = BENCH_SPAWN_READER_SETTLE_NS };

		clock_gettime(CLOCK_MONOTONIC, &now);
		while (nanosleep(&settle, &settle) != 0 && errno == EINTR)
			;
	}
	for (unsigned i = 0; i < count; i++) {
		uint64_t start = bench_libc_ns(CLOCK_MONOTONIC);
		pid_t pid = fork();
		int status;

		if (pid == 0)
			_exit(0);
		if (pid < 0)
			return 1;
		while (waitpid(pid, &status, 0) < 0)
			if (errno != EINTR)
				return 1;
		ns[i] = bench_libc_ns(CLOCK_MONOTONIC) - start;
	}
	while (done < want) {
		ssize_t n = write(STDOUT_FILENO, (char *)ns + done, want - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 1;
		done += (size_t)n;
	}
	free(ns);
	return 0;
}
