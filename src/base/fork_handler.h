/* Registering a fork handler. glibc's pthread_atfork is a small function
 * that every object links statically (libc_nonshared) and the linker puts
 * after all of ours, at the far end of the library's code: a served start,
 * or a shell's first signal install, would take a page fault there for its
 * one call. It passes the calling object's handle to libc's registration,
 * which is called here directly where libc exports it. */
#ifndef FASTTIME_FORK_HANDLER_H
#define FASTTIME_FORK_HANDLER_H

#include <pthread.h>
#include <stddef.h>

#ifdef HAVE___REGISTER_ATFORK
/* libc's registration, behind its pthread_atfork, and the handle of the
 * object it is called from (crtbegin's), which tells libc whose handlers
 * these are. */
extern int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void),
			     void *dso_handle);
extern void *__dso_handle __attribute__((weak, visibility("hidden")));
#endif

/* Registers child to run in each fork child, as pthread_atfork(NULL,
 * NULL, child) does; its result. */
static inline int fork_handler_register(void (*child)(void))
{
#ifdef HAVE___REGISTER_ATFORK
	return __register_atfork(NULL, NULL, child, &__dso_handle == NULL ? NULL : __dso_handle);
#else
	return pthread_atfork(NULL, NULL, child);
#endif
}

#endif
