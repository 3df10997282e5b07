/* A shim beneath libfasttime.so that counts the descriptors made while a
 * test asks it to: open, openat, fopen and their 64-bit and fortified
 * names, socket, pipe and pipe2. The library's calls reach these before
 * libc's (the shim comes after it in LD_PRELOAD, libc after both), so an
 * open the refresh thread makes while the program runs is seen, however
 * short-lived: the test need not win a race against it. Calls from the
 * lifecycle watchdog, which reads /proc, are not counted. */
#include "config.h"

/* The fortified open of a -D_FORTIFY_SOURCE build is an inline function of
 * the header's, which would clash with the definitions here. */
#undef _FORTIFY_SOURCE

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

#define OPENS_EXPORT __attribute__((visibility("default")))

static bool opens_counting;
static uint64_t opens_seen;
/* What the first counted call opened, and its thread's name. */
static char opens_first[160];

/* The next definition after ours, found on first use (dlsym of an existing
 * symbol does not allocate). */
static void *opens_next(void **slot, const char *name)
{
	void *fn = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

	if (fn == NULL) {
		fn = dlsym(RTLD_NEXT, name);
		__atomic_store_n(slot, fn, __ATOMIC_RELEASE);
	}
	return fn;
}

/* Counts one call that makes a descriptor, while counting is on. */
static void opens_note(const char *call, const char *what)
{
	char name[16] = "";
	int saved = errno;

	if (!__atomic_load_n(&opens_counting, __ATOMIC_ACQUIRE))
		return;
	prctl(PR_GET_NAME, name);
	errno = saved;
	if (strcmp(name, "watchdog") == 0)
		return;
	if (__atomic_fetch_add(&opens_seen, 1, __ATOMIC_ACQ_REL) == 0)
		snprintf(opens_first, sizeof opens_first, "%s(%s) in thread %s", call,
			 what != NULL ? what : "", name);
	errno = saved;
}

/* Counts from now on, or pauses; the count goes on from where it was. */
OPENS_EXPORT void life_opens_count(bool on);
OPENS_EXPORT void life_opens_count(bool on)
{
	__atomic_store_n(&opens_counting, on, __ATOMIC_RELEASE);
}

/* How many were counted, and the first one ("" when none). */
OPENS_EXPORT uint64_t life_opens_seen(const char **first);
OPENS_EXPORT uint64_t life_opens_seen(const char **first)
{
	*first = opens_first;
	return __atomic_load_n(&opens_seen, __ATOMIC_ACQUIRE);
}

/* The mode argument is there only with O_CREAT or O_TMPFILE. */
#define OPENS_MODE(flags, mode)                                                                    \
	do {                                                                                       \
		if ((flags) & (O_CREAT | O_TMPFILE)) {                                             \
			va_list args;                                                              \
			va_start(args, flags);                                                     \
			mode = va_arg(args, int);                                                  \
			va_end(args);                                                              \
		}                                                                                  \
	} while (0)

#define OPENS_PATH_CALL(name)                                                                      \
	OPENS_EXPORT int name(const char *path, int flags, ...);                                   \
	OPENS_EXPORT int name(const char *path, int flags, ...)                                    \
	{                                                                                          \
		static void *next;                                                                 \
		int mode = 0;                                                                      \
                                                                                                   \
		OPENS_MODE(flags, mode);                                                           \
		opens_note(#name, path);                                                           \
		return ((int (*)(const char *, int, ...))opens_next(&next, #name))(path, flags,    \
										   mode);          \
	}

#define OPENS_AT_CALL(name)                                                                        \
	OPENS_EXPORT int name(int dir, const char *path, int flags, ...);                          \
	OPENS_EXPORT int name(int dir, const char *path, int flags, ...)                           \
	{                                                                                          \
		static void *next;                                                                 \
		int mode = 0;                                                                      \
                                                                                                   \
		OPENS_MODE(flags, mode);                                                           \
		opens_note(#name, path);                                                           \
		return ((int (*)(int, const char *, int, ...))opens_next(&next, #name))(           \
		    dir, path, flags, mode);                                                       \
	}

OPENS_PATH_CALL(open)
OPENS_PATH_CALL(open64)
OPENS_AT_CALL(openat)
OPENS_AT_CALL(openat64)

OPENS_EXPORT int __open_2(const char *path, int flags);
OPENS_EXPORT int __open_2(const char *path, int flags)
{
	static void *next;

	opens_note("__open_2", path);
	return ((int (*)(const char *, int))opens_next(&next, "__open_2"))(path, flags);
}

OPENS_EXPORT int __openat_2(int dir, const char *path, int flags);
OPENS_EXPORT int __openat_2(int dir, const char *path, int flags)
{
	static void *next;

	opens_note("__openat_2", path);
	return ((int (*)(int, const char *, int))opens_next(&next, "__openat_2"))(dir, path, flags);
}

OPENS_EXPORT FILE *fopen(const char *path, const char *how);
OPENS_EXPORT FILE *fopen(const char *path, const char *how)
{
	static void *next;

	opens_note("fopen", path);
	return ((FILE * (*)(const char *, const char *)) opens_next(&next, "fopen"))(path, how);
}

OPENS_EXPORT FILE *fopen64(const char *path, const char *how);
OPENS_EXPORT FILE *fopen64(const char *path, const char *how)
{
	static void *next;

	opens_note("fopen64", path);
	return ((FILE * (*)(const char *, const char *)) opens_next(&next, "fopen64"))(path, how);
}

OPENS_EXPORT int socket(int domain, int type, int protocol);
OPENS_EXPORT int socket(int domain, int type, int protocol)
{
	static void *next;

	opens_note("socket", NULL);
	return ((int (*)(int, int, int))opens_next(&next, "socket"))(domain, type, protocol);
}

OPENS_EXPORT int pipe(int fds[2]);
OPENS_EXPORT int pipe(int fds[2])
{
	static void *next;

	opens_note("pipe", NULL);
	return ((int (*)(int[2]))opens_next(&next, "pipe"))(fds);
}

OPENS_EXPORT int pipe2(int fds[2], int flags);
OPENS_EXPORT int pipe2(int fds[2], int flags)
{
	static void *next;

	opens_note("pipe2", NULL);
	return ((int (*)(int[2], int))opens_next(&next, "pipe2"))(fds, flags);
}
