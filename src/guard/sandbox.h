/* Whether a seccomp filter may judge the thread the library creates.
 *
 * Filters are per thread and inherited at clone: the filter of the thread
 * that creates ours judges the clone, and then everything our thread does.
 * A filter installed before exec (a container's profile, systemd's
 * SystemCallFilter) is inherited by every thread of the program, which
 * was written to run under it and normally creates threads. The filters
 * that kill are those a program installs on itself (sshd's pre-auth child,
 * a sandbox): those installed through prctl or syscall() are seen by the
 * interposers (preload_sandbox.c), which stop the thread for good first;
 * one installed by a raw system call is seen here, at the start, as a
 * seccomp mode that changed since the constructor. */
#ifndef FASTTIME_SANDBOX_H
#define FASTTIME_SANDBOX_H

#include <stdbool.h>

/* Records the process's seccomp mode; for the constructor (one prctl). */
void sandbox_record(void);

/* Whether the thread may be created now: the seccomp mode of the calling
 * thread is still the constructor's. Where the process started under no
 * filter, one prctl that no filter then judges; where it started under
 * one, no system call and true: a filter stacked on it by a raw system
 * call leaves the mode as it was and cannot be seen (documented limit). */
bool sandbox_thread_allowed(void);

#endif
