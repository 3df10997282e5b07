/* The host program's errno, kept where control enters the library from it.
 *
 * The library never changes the program's errno except as libc's own
 * function would: a time call that libc answers leaves libc's errno, any
 * other leaves the program's. Each place the program's code enters ours
 * (an exported function's slow path, an interposer, the constructor, a
 * fork handler, a resolver reached by a tail jump) takes the errno on
 * entry and gives it back on the way out; code inside, which may make
 * system calls or write a debug line, keeps no errno of its own. The
 * refresh thread has its own errno (it is thread-local). */
#ifndef FASTTIME_ERRNO_KEEP_H
#define FASTTIME_ERRNO_KEEP_H

#include <errno.h>

struct errno_keep {
	int value;
};

/* The errno the caller will see again: the program's on entry, or libc's
 * just after its function answered. */
static inline struct errno_keep errno_keep_take(void)
{
	return (struct errno_keep){ .value = errno };
}

/* Puts the kept errno back: on the way out, or before calling libc's
 * function, so that libc starts from the program's errno as it would
 * have without us. */
static inline void errno_keep_give(struct errno_keep keep)
{
	errno = keep.value;
}

#endif
