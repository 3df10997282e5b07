/* Nothing before the first time call: at main() the library's constructor
 * has run, yet the process still has one thread and no descriptor of the
 * library's, and can enter a user namespace as a sandbox would. The first call starts exactly one
 * thread named "fasttime" (never under FASTTIME_DISABLE=1), and the library holds no descriptor
 * then or later. */
#include "config.h"

#include <dirent.h>
#include <sched.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "integ.h"

#define STARTUP_MAX_FDS 256
/* No call sets this value: what errno holds afterwards is what the call did. */
#define STARTUP_ERRNO 4242
/* How long the thread may take to appear: generous, for a loaded machine. */
#define STARTUP_THREAD_WAIT_MS 5000
/* How long a thread that has appeared may take to get its name. */
#define STARTUP_NAME_WAIT_MS 500

struct startup_fd {
	int fd;
	char target[256];
};

struct startup_fds {
	unsigned count;
	struct startup_fd fds[STARTUP_MAX_FDS];
};

/* Reads the open descriptors and what each refers to, leaving out the one
 * used to list them. */
static void startup_list_fds(struct startup_fds *list)
{
	DIR *dir = opendir("/proc/self/fd");
	struct dirent *entry;

	list->count = 0;
	if (dir == NULL) {
		printf("ERROR: /proc/self/fd: %s\n", strerror(errno));
		exit(INTEG_ERROR);
	}
	while ((entry = readdir(dir)) != NULL && list->count < STARTUP_MAX_FDS) {
		struct startup_fd *item = &list->fds[list->count];
		char path[64];
		ssize_t n;

		if (entry->d_name[0] == '.')
			continue;
		item->fd = atoi(entry->d_name);
		if (item->fd == dirfd(dir))
			continue;
		snprintf(path, sizeof path, "/proc/self/fd/%d", item->fd);
		n = readlink(path, item->target, sizeof item->target - 1);
		item->target[n > 0 ? n : 0] = '\0';
		list->count++;
	}
	closedir(dir);
}

/* Proves none of the descriptors is one the library could have opened: a
 * timer, an event, a clocksource file or anything else under /sys. */
static void startup_no_library_fds(const char *when, const struct startup_fds *list)
{
	static const char *const suspects[] = { "timerfd",     "eventfd", "signalfd",
						"clocksource", "/sys/",	  "/proc/" };

	for (unsigned i = 0; i < list->count; i++)
		for (unsigned s = 0; s < sizeof suspects / sizeof suspects[0]; s++)
			if (strstr(list->fds[i].target, suspects[s]) != NULL)
				integ_fail("%s: descriptor %d refers to %s", when, list->fds[i].fd,
					   list->fds[i].target);
}

/* Proves the descriptors are the same ones, referring to the same things. */
static void startup_same_fds(const char *when, const struct startup_fds *before,
			     const struct startup_fds *after)
{
	bool same = before->count == after->count;

	for (unsigned i = 0; same && i < before->count; i++)
		same = before->fds[i].fd == after->fds[i].fd &&
		       strcmp(before->fds[i].target, after->fds[i].target) == 0;
	if (same)
		return;
	integ_fail("%s: the open descriptors changed", when);
	for (unsigned i = 0; i < before->count; i++)
		printf("  before: %d -> %s\n", before->fds[i].fd, before->fds[i].target);
	for (unsigned i = 0; i < after->count; i++)
		printf("  after:  %d -> %s\n", after->fds[i].fd, after->fds[i].target);
}

/* Counts this process's threads, and those named "fasttime" among them. */
static unsigned startup_count_threads(unsigned *named_fasttime)
{
	DIR *dir = opendir("/proc/self/task");
	struct dirent *entry;
	unsigned count = 0;

	*named_fasttime = 0;
	if (dir == NULL) {
		printf("ERROR: /proc/self/task: %s\n", strerror(errno));
		exit(INTEG_ERROR);
	}
	while ((entry = readdir(dir)) != NULL) {
		char path[PATH_MAX], comm[32] = "";
		FILE *file;

		if (entry->d_name[0] == '.')
			continue;
		count++;
		snprintf(path, sizeof path, "/proc/self/task/%s/comm", entry->d_name);
		file = fopen(path, "re");
		if (file == NULL)
			continue;
		if (fgets(comm, sizeof comm, file) != NULL && strcmp(comm, "fasttime\n") == 0)
			(*named_fasttime)++;
		fclose(file);
	}
	closedir(dir);
	return count;
}

/* Counts the threads once they have settled at expected, of which
 * expected_named are named "fasttime", or after STARTUP_THREAD_WAIT_MS if
 * they never do. pthread_join returns when the kernel clears the thread's
 * id, a moment before the kernel drops it from /proc/self/task: a single
 * count right after a join sometimes still sees the joined thread. */
static unsigned startup_count_threads_settled(unsigned expected, unsigned expected_named,
					      unsigned *named_fasttime)
{
	int64_t since = integ_libc_mono_ns();
	unsigned count = startup_count_threads(named_fasttime);

	while ((count != expected || *named_fasttime != expected_named) &&
	       integ_libc_mono_ns() - since < STARTUP_THREAD_WAIT_MS * 1000000ll) {
		integ_sleep_ms(5);
		count = startup_count_threads(named_fasttime);
	}
	return count;
}

/* Reads every clock the library answers, from a thread of its own. */
static void *startup_reader(void *unused)
{
	struct timespec ts;
	struct timeval tv;

	(void)unused;
	for (unsigned i = 0; i < 1000; i++) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		clock_gettime(CLOCK_REALTIME, &ts);
		gettimeofday(&tv, NULL);
		time(NULL);
		timespec_get(&ts, TIME_UTC);
	}
	return NULL;
}

/* The lowest descriptor number not in list: the next open would take it. */
static int startup_lowest_free_fd(const struct startup_fds *list)
{
	for (int fd = 0;; fd++) {
		bool used = false;

		for (unsigned i = 0; i < list->count && !used; i++)
			used = list->fds[i].fd == fd;
		if (!used)
			return fd;
	}
}

/* Makes the first time call of the process and proves it leaves errno
 * alone. With no_fd, no descriptor can be opened meanwhile: the library must
 * not need one (issue 3: at no time does it hold a descriptor). */
static void startup_first_call(const struct startup_fds *at_entry, bool no_fd)
{
	struct rlimit saved, limited;
	struct timespec ts;
	int after;

	if (no_fd) {
		if (getrlimit(RLIMIT_NOFILE, &saved) != 0) {
			printf("ERROR: getrlimit: %s\n", strerror(errno));
			exit(INTEG_ERROR);
		}
		limited = saved;
		limited.rlim_cur = (rlim_t)startup_lowest_free_fd(at_entry);
		if (setrlimit(RLIMIT_NOFILE, &limited) != 0) {
			printf("ERROR: setrlimit: %s\n", strerror(errno));
			exit(INTEG_ERROR);
		}
	}
	errno = STARTUP_ERRNO;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	after = errno;
	if (no_fd)
		setrlimit(RLIMIT_NOFILE, &saved);
	if (after != STARTUP_ERRNO)
		integ_fail("the first call changed errno to %d (%s)%s", after, strerror(after),
			   no_fd ? " with no descriptor to spare" : "");
}

/* What a sandbox does before it reads the clock: unshare(CLONE_NEWUSER),
 * which the kernel refuses with EINVAL in a process with more than one
 * thread. Where user namespaces are not allowed at all (EPERM, ENOSPC), the
 * case is reported and not judged. */
static void startup_unshare_user(void)
{
	if (unshare(CLONE_NEWUSER) == 0) {
		printf("unshare(CLONE_NEWUSER) before the first time call: done, the "
		       "process was single-threaded\n");
		return;
	}
	if (errno == EINVAL)
		integ_fail("unshare(CLONE_NEWUSER) before the first time call: EINVAL, the "
			   "process is not single-threaded");
	else
		printf("unshare(CLONE_NEWUSER) not allowed here (%s): not judged\n",
		       strerror(errno));
}

/* Looks at threads and descriptors at main(), then after the first calls;
 * "startup no-fd" makes the first call with no descriptor to spare. */
int main(int argc, char **argv)
{
	/* First of all, before anything this program does could add to them. */
	unsigned named, threads_at_entry = startup_count_threads(&named);
	static struct startup_fds at_entry, after;
	bool disabled = integ_env_true("FASTTIME_DISABLE");
	bool no_fd = argc > 1 && strcmp(argv[1], "no-fd") == 0;
	pthread_t readers[4];
	unsigned threads = 0;
	struct timespec ts;
	int64_t called;

	startup_list_fds(&at_entry);
	setvbuf(stdout, NULL, _IOLBF, 0);
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
	/* TSan runs a thread of its own; ASan's allocator reads the clock
	 * through the interposed symbol, so its first malloc is the first time
	 * call. */
	printf("SKIP: the sanitizer's runtime calls the clock itself\n");
	return INTEG_SKIP;
#endif
	integ_require_preload();
	integ_load_libc();
	if (!disabled)
		integ_require_tsc();
	printf("mode: %s%s\n", disabled ? "disabled" : "default",
	       no_fd ? ", first call with no descriptor to spare" : "");
	printf("at main(): %u thread(s), %u descriptor(s)\n", threads_at_entry, at_entry.count);
	for (unsigned i = 0; i < at_entry.count; i++)
		printf("  %d -> %s\n", at_entry.fds[i].fd, at_entry.fds[i].target);
	if (threads_at_entry != 1)
		integ_fail("at main(): %u threads, expected 1", threads_at_entry);
	startup_no_library_fds("at main()", &at_entry);
	if (!no_fd)
		startup_unshare_user();

	/* The first time call of the process. */
	called = integ_libc_mono_ns();
	startup_first_call(&at_entry, no_fd);
	if (disabled) {
		struct timeval tv;

		gettimeofday(&tv, NULL);
		time(NULL);
		timespec_get(&ts, TIME_UTC);
		integ_sleep_ms(500);
		threads = startup_count_threads(&named);
		printf("disabled, 0.5 s after the first calls: %u thread(s)\n", threads);
		if (threads != 1)
			integ_fail("FASTTIME_DISABLE=1, yet the process has %u threads", threads);
	} else {
		for (int64_t waited = 0; waited < STARTUP_THREAD_WAIT_MS * 1000000ll;
		     waited = integ_libc_mono_ns() - called) {
			threads = startup_count_threads(&named);
			/* An unnamed thread that stays unnamed is an answer too. */
			if (named > 0 || (threads > 1 && waited > STARTUP_NAME_WAIT_MS * 1000000ll))
				break;
			integ_sleep_ms(5);
		}
		printf(
		    "after the first call: %u thread(s), %u named fasttime, seen within %.0f ms\n",
		    threads, named, (double)(integ_libc_mono_ns() - called) / 1e6);
		if (named != 1 || threads != 2)
			integ_fail(
			    "after the first call: %u threads, %u named fasttime; expected 2 "
			    "and 1",
			    threads, named);
		/* Calibration and the choice of entry points take tens of ms. */
		integ_sleep_ms(500);
	}
	startup_list_fds(&after);
	startup_same_fds("0.5 s after the first call", &at_entry, &after);
	startup_no_library_fds("0.5 s after the first call", &after);

	/* More callers, from more threads: still one refresh thread at most. */
	for (unsigned i = 0; i < 4; i++)
		if (pthread_create(&readers[i], NULL, startup_reader, NULL) != 0) {
			printf("ERROR: pthread_create\n");
			return INTEG_ERROR;
		}
	for (unsigned i = 0; i < 4; i++)
		pthread_join(readers[i], NULL);
	threads = startup_count_threads_settled(disabled ? 1u : 2u, disabled ? 0u : 1u, &named);
	printf("after four more threads read the clock: %u thread(s), %u named fasttime\n", threads,
	       named);
	if (named != (disabled ? 0u : 1u) || threads != (disabled ? 1u : 2u))
		integ_fail("after more callers: %u threads, %u named fasttime", threads, named);
	startup_list_fds(&after);
	startup_same_fds("after more callers", &at_entry, &after);
	return integ_status();
}
