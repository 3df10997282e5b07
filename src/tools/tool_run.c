/* The preload wrapper behind `fasttime COMMAND`: finds the library, puts it
 * first in LD_PRELOAD, runs the command in a child and reports its status
 * as a shell would. */
#include "config.h"

#include "tool_run.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tool_serve.h"

#define TOOL_RUN_LIBRARY_NAME "libfasttime.so"
/* ld.so splits LD_PRELOAD at either of these. */
#define TOOL_RUN_SEPARATORS " :"

/* Notes why library cannot be preloaded, if it cannot. */
static void tool_run_vet_path(struct tool_run_library *library)
{
	if (library->path[0] != '/')
		snprintf(library->problem, sizeof library->problem,
			 "the library path %s is not absolute", library->path);
	else if (strpbrk(library->path, TOOL_RUN_SEPARATORS) != NULL)
		snprintf(
		    library->problem, sizeof library->problem,
		    "the library path %s holds a space or a colon, which LD_PRELOAD cannot carry",
		    library->path);
}

/* The build tree's library, next to the running executable: libtool puts it
 * in .libs beside the .la file. False when this is not a build tree. */
static bool tool_run_find_in_build_tree(struct tool_run_library *library)
{
	char exe[PATH_MAX], candidate[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	char *slash;

	if (n <= 0)
		return false;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (slash == NULL)
		return false;
	*slash = '\0';
	/* An installed bindir never holds the .la file: its presence is what
	 * tells a build tree from an installation. */
	snprintf(candidate, sizeof candidate, "%s/libfasttime.la", exe);
	if (access(candidate, F_OK) != 0)
		return false;
	snprintf(candidate, sizeof candidate, "%s/.libs/" TOOL_RUN_LIBRARY_NAME, exe);
	if (strlen(candidate) >= sizeof library->path || access(candidate, R_OK) != 0)
		return false;
	strcpy(library->path, candidate);
	library->source = "build tree";
	return true;
}

void tool_run_find_library(struct tool_run_library *library)
{
	const char *override = getenv("FASTTIME_LIBRARY");

	library->problem[0] = '\0';
	if (override != NULL && *override != '\0') {
		library->source = "FASTTIME_LIBRARY";
		/* realpath makes a relative override absolute: the command may
		 * change directory before it loads anything. */
		if (realpath(override, library->path) == NULL) {
			snprintf(library->path, sizeof library->path, "%s", override);
			snprintf(library->problem, sizeof library->problem,
				 "FASTTIME_LIBRARY=%s: %s", override, strerror(errno));
			return;
		}
		tool_run_vet_path(library);
		return;
	}
	if (tool_run_find_in_build_tree(library)) {
		tool_run_vet_path(library);
		return;
	}
	library->source = "installed";
	snprintf(library->path, sizeof library->path, "%s/" TOOL_RUN_LIBRARY_NAME, FASTTIME_LIBDIR);
	if (access(library->path, R_OK) != 0) {
		snprintf(library->problem, sizeof library->problem,
			 "cannot find the library at %s (%s); set FASTTIME_LIBRARY to its path",
			 library->path, strerror(errno));
		return;
	}
	tool_run_vet_path(library);
}

/* True when the LD_PRELOAD entry of length len is a copy of our library,
 * wherever it lives. */
static bool tool_run_is_ours(const char *entry, size_t len)
{
	static const char name[] = TOOL_RUN_LIBRARY_NAME;
	const size_t name_len = sizeof name - 1;

	if (len < name_len || memcmp(entry + len - name_len, name, name_len) != 0)
		return false;
	return len == name_len || entry[len - name_len - 1] == '/';
}

/* True when the LD_PRELOAD value list names a copy of our library. */
static bool tool_run_list_has_ours(const char *list)
{
	for (const char *p = list; p != NULL && *p != '\0';) {
		size_t len = strcspn(p, TOOL_RUN_SEPARATORS);
		if (len > 0 && tool_run_is_ours(p, len))
			return true;
		p += len;
		p += strspn(p, TOOL_RUN_SEPARATORS);
	}
	return false;
}

/* Appends entry (len bytes) to the list being built at value..out. */
static char *tool_run_append(char *value, char *out, const char *entry, size_t len)
{
	if (out != value)
		*out++ = ':';
	memcpy(out, entry, len);
	return out + len;
}

/* Sets LD_PRELOAD to library (NULL: none of ours) followed by the entries
 * already there. The old value is kept as it is unless a copy of ours has
 * to leave it (a fasttime run under fasttime, or --native): then the other
 * entries are kept, in order. */
static bool tool_run_set_preload(const char *library)
{
	const char *old = getenv("LD_PRELOAD");
	size_t old_len = old != NULL ? strlen(old) : 0;
	char *value, *out;
	int rc;

	if (library == NULL && !tool_run_list_has_ours(old))
		return true;
	value = malloc((library != NULL ? strlen(library) : 0) + old_len + 2);
	if (value == NULL)
		return false;
	out = value;
	if (library != NULL)
		out = tool_run_append(value, out, library, strlen(library));
	if (!tool_run_list_has_ours(old)) {
		if (old_len > 0)
			out = tool_run_append(value, out, old, old_len);
	} else {
		for (const char *p = old; *p != '\0';) {
			size_t len = strcspn(p, TOOL_RUN_SEPARATORS);
			if (len > 0 && !tool_run_is_ours(p, len))
				out = tool_run_append(value, out, p, len);
			p += len;
			p += strspn(p, TOOL_RUN_SEPARATORS);
		}
	}
	*out = '\0';
	if (value[0] == '\0')
		rc = old != NULL ? unsetenv("LD_PRELOAD") : 0;
	else
		rc = setenv("LD_PRELOAD", value, 1);
	free(value);
	return rc == 0;
}

/* Puts the options into the command's environment. */
static bool tool_run_set_environment(const struct tool_run_options *options)
{
	char interval[16];

	if (options->mode != NULL && setenv("FASTTIME_MODE", options->mode, 1) != 0)
		return false;
	if (options->interval_ms != 0) {
		snprintf(interval, sizeof interval, "%u", (unsigned)options->interval_ms);
		if (setenv("FASTTIME_INTERVAL_MS", interval, 1) != 0)
			return false;
	}
	if (options->debug && setenv("FASTTIME_DEBUG", "1", 1) != 0)
		return false;
	return true;
}

/* The command's process, for the forwarding handler. */
static volatile pid_t tool_run_child;

/* SIGTERM and SIGHUP sent to fasttime reach the command, which decides
 * whether to die of them; fasttime then ends as it did, after removing
 * the page it served. */
static void tool_run_forward(int sig)
{
	int saved_errno = errno;

	if (tool_run_child > 0)
		kill(tool_run_child, sig);
	errno = saved_errno;
}

/* Forks, executes argv in the child and waits for it. Like time(1), the
 * parent ignores the terminal's SIGINT and SIGQUIT while it waits: they
 * reach the child too, and the child decides whether to die of them.
 * SIGTERM and SIGHUP are forwarded to it. The caller has blocked all four
 * (tool_run_held) since before its calibration: one that arrived meanwhile
 * is delivered here, once the child exists, and forwarded or ignored like
 * the others; original is the mask the child starts with. */
static int tool_run_spawn(char *const argv[], const sigset_t *original)
{
	struct sigaction ignore = { .sa_handler = SIG_IGN };
	struct sigaction forward = { .sa_handler = tool_run_forward, .sa_flags = SA_RESTART };
	struct sigaction defaults = { .sa_handler = SIG_DFL };
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "fasttime: cannot fork: %s\n", strerror(errno));
		return TOOL_RUN_EXIT_FAILED;
	}
	if (pid == 0) {
		int error;

		sigprocmask(SIG_SETMASK, original, NULL);
		execvp(argv[0], argv);
		error = errno;
		fprintf(stderr, "fasttime: cannot run '%s': %s\n", argv[0], strerror(error));
		_exit(error == ENOENT || error == ENOTDIR ? TOOL_RUN_EXIT_NOT_FOUND
							  : TOOL_RUN_EXIT_CANNOT_RUN);
	}
	tool_run_child = pid;
	sigaction(SIGINT, &ignore, NULL);
	sigaction(SIGQUIT, &ignore, NULL);
	sigaction(SIGTERM, &forward, NULL);
	sigaction(SIGHUP, &forward, NULL);
	sigprocmask(SIG_SETMASK, original, NULL);
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "fasttime: cannot wait for '%s': %s\n", argv[0],
				strerror(errno));
			status = -1;
			break;
		}
	}
	/* The child is reaped: its pid may be another process's from now on. */
	tool_run_child = 0;
	sigaction(SIGTERM, &defaults, NULL);
	sigaction(SIGHUP, &defaults, NULL);
	if (status == -1)
		return TOOL_RUN_EXIT_FAILED;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return TOOL_RUN_EXIT_FAILED;
}

/* The signals held from before the calibration until the child runs: one
 * arriving meanwhile would otherwise end fasttime with its page left
 * behind. */
static void tool_run_held(sigset_t *held)
{
	sigemptyset(held);
	sigaddset(held, SIGINT);
	sigaddset(held, SIGQUIT);
	sigaddset(held, SIGTERM);
	sigaddset(held, SIGHUP);
}

int tool_run_command(const struct tool_run_options *options, char *const argv[])
{
	struct tool_run_library library;
	struct tool_serve serve = { .serving = false };
	sigset_t held, original;
	int status;

	if (options->native) {
		if (!tool_run_set_preload(NULL))
			goto no_environment;
	} else {
		tool_run_find_library(&library);
		if (library.problem[0] != '\0') {
			fprintf(stderr, "fasttime: %s\n", library.problem);
			return TOOL_RUN_EXIT_FAILED;
		}
		if (!tool_run_set_preload(library.path))
			goto no_environment;
	}
	if (!tool_run_set_environment(options))
		goto no_environment;
	tool_run_held(&held);
	sigprocmask(SIG_BLOCK, &held, &original);
	if (!options->native)
		tool_serve_start(&serve);
	status = tool_run_spawn(argv, &original);
	/* Held again while the page is removed: a SIGTERM now ends fasttime
	 * once it is gone (the default action, when unblocked below). */
	sigprocmask(SIG_BLOCK, &held, NULL);
	tool_serve_stop(&serve);
	sigprocmask(SIG_SETMASK, &original, NULL);
	return status;

no_environment:
	fprintf(stderr, "fasttime: cannot set the environment: %s\n", strerror(errno));
	return TOOL_RUN_EXIT_FAILED;
}
