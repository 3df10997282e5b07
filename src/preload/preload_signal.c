/* The exported functions that install signal handlers: each puts the
 * program's handler behind signal_guard's trampoline, so that the library
 * knows, without a system call, when a thread runs one (signal_guard.h).
 *
 * glibc's signal, bsd_signal, ssignal, sysv_signal, __sysv_signal and
 * sigset call its sigaction internally, not through the exported symbol:
 * each needs its own entry point. sigvec exists only as a compatibility
 * symbol since glibc 2.21 and is left alone; sigignore, sighold, sigrelse
 * and siginterrupt install no handler. */
#include "config.h"

#include <pthread.h>
#include <signal.h>

#include "errno_keep.h"
#include "signal_guard.h"
#include "start_data.h"

#define PRELOAD_SIGNAL_EXPORT __attribute__((visibility("default")))

/* Not all of them are declared by every glibc's headers. */
PRELOAD_SIGNAL_EXPORT int __sigaction(int sig, const struct sigaction *act, struct sigaction *old);
PRELOAD_SIGNAL_EXPORT signal_guard_handler bsd_signal(int sig, signal_guard_handler handler);
PRELOAD_SIGNAL_EXPORT signal_guard_handler ssignal(int sig, signal_guard_handler handler);
PRELOAD_SIGNAL_EXPORT signal_guard_handler sysv_signal(int sig, signal_guard_handler handler);
PRELOAD_SIGNAL_EXPORT signal_guard_handler __sysv_signal(int sig, signal_guard_handler handler);
PRELOAD_SIGNAL_EXPORT signal_guard_handler sigset(int sig, signal_guard_handler handler);

PRELOAD_SIGNAL_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	return signal_guard_sigaction(sig, act, old);
}

PRELOAD_SIGNAL_EXPORT int __sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	return signal_guard_sigaction(sig, act, old);
}

PRELOAD_SIGNAL_EXPORT signal_guard_handler signal(int sig, signal_guard_handler handler)
{
	return signal_guard_signal(SIGNAL_GUARD_SIGNAL, sig, handler);
}

PRELOAD_SIGNAL_EXPORT signal_guard_handler bsd_signal(int sig, signal_guard_handler handler)
{
	return signal_guard_signal(SIGNAL_GUARD_BSD_SIGNAL, sig, handler);
}

PRELOAD_SIGNAL_EXPORT signal_guard_handler ssignal(int sig, signal_guard_handler handler)
{
	return signal_guard_signal(SIGNAL_GUARD_SSIGNAL, sig, handler);
}

PRELOAD_SIGNAL_EXPORT signal_guard_handler sysv_signal(int sig, signal_guard_handler handler)
{
	return signal_guard_signal(SIGNAL_GUARD_SYSV_SIGNAL, sig, handler);
}

PRELOAD_SIGNAL_EXPORT signal_guard_handler __sysv_signal(int sig, signal_guard_handler handler)
{
	return signal_guard_signal(SIGNAL_GUARD_SYSV_SIGNAL_INTERNAL, sig, handler);
}

PRELOAD_SIGNAL_EXPORT signal_guard_handler sigset(int sig, signal_guard_handler handler)
{
	return signal_guard_sigset(sig, handler);
}

/* A fork child must not find a signal's install flag taken for ever by a
 * thread of its parent that fork did not copy. */
__attribute__((constructor)) static void preload_signal_init(void)
{
	struct errno_keep keep = errno_keep_take();

	if (!START_FORK_HANDLERS_LATE)
		signal_guard_watch_forks();
	errno_keep_give(keep);
}
