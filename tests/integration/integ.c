/* Shared by the integration programs; see integ.h. */
#include "config.h"

#include "integ.h"

#include "machine.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct integ_libc integ_libc;

/* As the library names them in its FASTTIME_DEBUG lines. */
const char *const integ_api_names[INTEG_API_COUNT] = {
	"clock_gettime(CLOCK_MONOTONIC)",
	"clock_gettime(CLOCK_REALTIME)",
	"clock_gettime(CLOCK_BOOTTIME)",
	"clock_gettime(CLOCK_TAI)",
	"clock_gettime(CLOCK_MONOTONIC_RAW)",
	"gettimeofday",
	"time",
	"timespec_get(TIME_UTC)",
};

static unsigned integ_failure_count;
static int integ_saved_stderr = -1;
static int integ_capture_fd = -1;

/* The path of the loaded libfasttime, found through the loaded objects. */
static int integ_find_library(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	if (info->dlpi_name != NULL && strstr(info->dlpi_name, "libfasttime") != NULL) {
		*(const char **)data = info->dlpi_name;
		return 1;
	}
	return 0;
}

/* Fails the program unless calls to name reach libfasttime's definition:
 * directly, or through a sanitizer's interceptor, which must be loaded
 * first and forwards to the next definition, the library's. */
static void integ_check_preloaded(const char *name, void *address)
{
	const char *library = NULL;
	void *handle, *ours;
	Dl_info info;

	if (dl_iterate_phdr(integ_find_library, &library) == 0 || library == NULL ||
	    (handle = dlopen(library, RTLD_NOLOAD | RTLD_NOW)) == NULL ||
	    (ours = dlsym(handle, name)) == NULL) {
		printf("FAIL: libfasttime is not loaded or lacks %s: the preload is not in "
		       "effect\n",
		       name);
		exit(INTEG_FAIL);
	}
	if (address == ours && dlsym(RTLD_DEFAULT, name) == ours)
		return;
	if (dladdr(address, &info) != 0 && info.dli_fname != NULL &&
	    (strstr(info.dli_fname, "libasan") != NULL ||
	     strstr(info.dli_fname, "libtsan") != NULL))
		return;
	printf("FAIL: %s is defined in %s, not in %s: the preload is not in effect\n", name,
	       dladdr(address, &info) != 0 && info.dli_fname != NULL ? info.dli_fname : "(unknown)",
	       library);
	exit(INTEG_FAIL);
}

void integ_require_preload(void)
{
	integ_check_preloaded("clock_gettime", (void *)clock_gettime);
	integ_check_preloaded("gettimeofday", (void *)gettimeofday);
	integ_check_preloaded("time", (void *)time);
	integ_check_preloaded("timespec_get", (void *)timespec_get);
}

/* Looks name up in libc itself and makes sure it is not the preload's. */
static void *integ_libc_symbol(void *handle, const char *name)
{
	void *address = dlsym(handle, name);
	Dl_info info;

	if (address == NULL || dladdr(address, &info) == 0 || info.dli_fname == NULL ||
	    strstr(info.dli_fname, "libfasttime") != NULL) {
		printf("ERROR: cannot find libc's own %s\n", name);
		exit(INTEG_ERROR);
	}
	return address;
}

void integ_load_libc(void)
{
	/* RTLD_NOLOAD: the libc already mapped, never a second copy. */
	void *handle = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_NOW);

	if (handle == NULL) {
		printf("ERROR: dlopen(libc.so.6, RTLD_NOLOAD): %s\n", dlerror());
		exit(INTEG_ERROR);
	}
	integ_libc.clock_gettime =
	    (int (*)(clockid_t, struct timespec *))integ_libc_symbol(handle, "clock_gettime");
	integ_libc.gettimeofday =
	    (int (*)(struct timeval *, void *))integ_libc_symbol(handle, "gettimeofday");
	integ_libc.time = (time_t(*)(time_t *))integ_libc_symbol(handle, "time");
	integ_libc.timespec_get =
	    (int (*)(struct timespec *, int))integ_libc_symbol(handle, "timespec_get");
}

void integ_require_tsc(void)
{
	const char *reason = test_machine_unusable();

	if (reason != NULL) {
		printf("SKIP: %s: the library answers with libc here\n", reason);
		exit(INTEG_SKIP);
	}
}

bool integ_env_true(const char *name)
{
	const char *value = getenv(name);

	return value != NULL && (strcmp(value, "1") == 0 || strcmp(value, "yes") == 0 ||
				 strcmp(value, "true") == 0 || strcmp(value, "on") == 0);
}

void integ_fail(const char *format, ...)
{
	va_list args;

	integ_failure_count++;
	fputs("FAIL: ", stdout);
	va_start(args, format);
	vprintf(format, args);
	va_end(args);
	putchar('\n');
	fflush(stdout);
}

unsigned integ_failures(void)
{
	return integ_failure_count;
}

int integ_status(void)
{
	if (integ_failure_count > 0) {
		printf("%u failure(s)\n", integ_failure_count);
		return INTEG_FAIL;
	}
	return INTEG_PASS;
}

bool integ_capture_begin(void)
{
	int fds[2];

	if (!integ_env_true("FASTTIME_DEBUG"))
		return false;
	if (pipe2(fds, O_CLOEXEC) != 0)
		return false;
	integ_saved_stderr = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
	if (integ_saved_stderr < 0 || dup2(fds[1], STDERR_FILENO) < 0) {
		close(fds[0]);
		close(fds[1]);
		return false;
	}
	close(fds[1]);
	integ_capture_fd = fds[0];
	return true;
}

/* The path the library chose for api, from its debug lines in text. */
static enum integ_path integ_parse_choice(const char *text, enum integ_api api)
{
	char prefix[64];
	const char *line, *end;

	snprintf(prefix, sizeof prefix, "fasttime: %s: ", integ_api_names[api]);
	for (line = text; line != NULL && *line != '\0'; line = end != NULL ? end + 1 : NULL) {
		end = strchr(line, '\n');
		if (end == NULL || strncmp(line, prefix, strlen(prefix)) != 0)
			continue;
		if (end - line >= 6 && strncmp(end - 6, ": fast", 6) == 0)
			return INTEG_PATH_FAST;
		if (end - line >= 6 && strncmp(end - 6, ": libc", 6) == 0)
			return INTEG_PATH_LIBC;
	}
	return INTEG_PATH_UNKNOWN;
}

/* Whether text holds the library's choice for every entry point. */
static bool integ_choice_complete(const char *text)
{
	for (unsigned a = 0; a < INTEG_API_COUNT; a++)
		if (integ_parse_choice(text, (enum integ_api)a) == INTEG_PATH_UNKNOWN)
			return false;
	return true;
}

void integ_capture_end(unsigned timeout_ms, enum integ_path paths[INTEG_API_COUNT])
{
	static char text[65536];
	size_t used = 0;
	int64_t deadline = integ_libc_mono_ns() + (int64_t)timeout_ms * 1000000;
	ssize_t n;

	for (unsigned a = 0; a < INTEG_API_COUNT; a++)
		paths[a] = INTEG_PATH_UNKNOWN;
	if (integ_capture_fd < 0)
		return;
	text[0] = '\0';
	while (!integ_choice_complete(text) && integ_libc_mono_ns() < deadline &&
	       used < sizeof text - 1) {
		struct pollfd pfd = { .fd = integ_capture_fd, .events = POLLIN };

		if (poll(&pfd, 1, 20) <= 0)
			continue;
		n = read(integ_capture_fd, text + used, sizeof text - 1 - used);
		if (n <= 0)
			break;
		used += (size_t)n;
		text[used] = '\0';
	}
	/* Give stderr back first, then take what was still in the pipe. */
	dup2(integ_saved_stderr, STDERR_FILENO);
	close(integ_saved_stderr);
	fcntl(integ_capture_fd, F_SETFL, O_NONBLOCK);
	while (used < sizeof text - 1 &&
	       (n = read(integ_capture_fd, text + used, sizeof text - 1 - used)) > 0)
		used += (size_t)n;
	text[used] = '\0';
	close(integ_capture_fd);
	integ_capture_fd = -1;
	if (write(STDERR_FILENO, text, used) < 0)
		perror("write");
	for (unsigned a = 0; a < INTEG_API_COUNT; a++)
		paths[a] = integ_parse_choice(text, (enum integ_api)a);
}

const char *integ_path_name(enum integ_path path)
{
	switch (path) {
	case INTEG_PATH_LIBC: return "libc";
	case INTEG_PATH_FAST: return "fast";
	case INTEG_PATH_UNKNOWN: break;
	}
	return "unknown";
}

void integ_check_forced(const enum integ_path paths[INTEG_API_COUNT])
{
	if (!integ_env_true("FASTTIME_FORCE") || !integ_env_true("FASTTIME_DEBUG") ||
	    test_machine_unusable() != NULL)
		return;
	/* A choice not seen within the capture (a slow machine, a sanitizer's
	 * pace) says nothing either way; one the library made against the
	 * setting does. */
	for (unsigned a = 0; a < INTEG_API_COUNT; a++)
		if (paths[a] == INTEG_PATH_LIBC)
			integ_fail("%s: path %s under FASTTIME_FORCE=1, not fast: the TSC path is "
				   "not under test",
				   integ_api_names[a], integ_path_name(paths[a]));
}

void integ_sleep_ms(unsigned ms)
{
	struct timespec rest = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	while (nanosleep(&rest, &rest) != 0 && errno == EINTR)
		;
}

int64_t integ_libc_mono_ns(void)
{
	struct timespec ts;

	integ_libc.clock_gettime(CLOCK_MONOTONIC, &ts);
	return integ_ns(&ts);
}
