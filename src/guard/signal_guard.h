/* Whether the calling thread may be inside a signal handler, known without
 * a system call for every handler the program installs through libc.
 *
 * pthread_create must not run in a handler: it allocates the new thread's
 * TLS, and the interrupted code may hold malloc's lock. The exported
 * sigaction, signal and the like (preload_signal.c) install each handler
 * behind a trampoline that counts, per thread, the handlers running.
 * Handlers installed around them (a raw system call, a sanitizer's
 * runtime) are foreign: they are looked for with system calls, now and then
 * per thread (signal_guard_may_start). */
#ifndef FASTTIME_SIGNAL_GUARD_H
#define FASTTIME_SIGNAL_GUARD_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

/* The least time between two looks of one thread (system calls): after a
 * look that said "wait", and from the first call made while a handler
 * seemed to run. Well under a second, so that the thread starts within a
 * second of the first call outside every handler. */
#define SIGNAL_GUARD_LOOK_INTERVAL_NS 500000000ull
/* The trampoline frames kept per thread: the innermost handlers entered.
 * Not a limit on depth: the frames of outer ones pushed out of the ring are
 * summed up by their lowest and highest address (see signal_guard_may_start). */
#define SIGNAL_GUARD_RING 16u

/* One thread's handlers: how many may run now (entered through a
 * trampoline, not known to be left), where each one's trampoline frame is,
 * and which signals they were entered for. Initial-exec TLS: a handler may
 * read it at any moment. */
struct signal_guard_thread {
	unsigned depth;
	bool nodefer;		   /* one of them ran with its signal unblocked */
	uint64_t running;	   /* their signals, bit sig - 1; kept while depth > 0 */
	uint64_t held;		   /* signals whose install this thread holds (fork) */
	uint64_t look_at_ns;	   /* a look for foreign handlers is due (0: now) */
	uint64_t depth_look_at_ns; /* a look with depth > 0 is due (0: not set) */
	/* The frame of entry i (0 the outermost) at i % SIGNAL_GUARD_RING, for
	 * the last SIGNAL_GUARD_RING entries; those before lie between
	 * beyond_low and beyond_high (set while depth > SIGNAL_GUARD_RING). */
	uintptr_t frames[SIGNAL_GUARD_RING];
	uintptr_t beyond_low, beyond_high;
};
extern __thread struct signal_guard_thread signal_guard_thread
    __attribute__((tls_model("initial-exec"), visibility("hidden")));

/* Whether this thread may create a thread now: no handler installed through
 * the library runs on it, and none of the foreign ones seems to (a foreign
 * handler whose signal is blocked, or the alternate signal stack in use).
 * A handler left by longjmp is taken for left once the caller's frame lies
 * above its trampoline's on the same stack, or, failing that, by a look
 * (system calls, at most every SIGNAL_GUARD_LOOK_INTERVAL_NS): its frame on
 * the alternate stack while the caller is not on it, or none of the signals
 * of the handlers entered blocked (unless one had SA_NODEFER). Writes only
 * this thread's state. */
bool signal_guard_may_start(void);

/* A process served by a calibration service runs no thread of ours, so
 * whether a handler runs never matters: with pass set, every install goes
 * straight to the next function (libc's), with no lock and no system call
 * of ours. Setting it looks the next functions up at once (the served
 * start calls it, never in a signal handler), so that no install takes
 * the loader's lock later. */
void signal_guard_set_pass_through(bool pass);

/* sigaction as the program sees it: a handler is installed behind the
 * trampoline with the caller's flags and mask exactly; the old action
 * reports the program's handler, never the trampoline. No lock, no wait,
 * no system call of its own: see signal_guard.c. */
int signal_guard_sigaction(int sig, const struct sigaction *act, struct sigaction *old);

/* The functions that install a plain handler with libc's own flags and
 * mask; each is called through, with the trampoline in the handler's place. */
enum signal_guard_api {
	SIGNAL_GUARD_SIGNAL,
	SIGNAL_GUARD_BSD_SIGNAL,
	SIGNAL_GUARD_SSIGNAL,
	SIGNAL_GUARD_SYSV_SIGNAL,
	SIGNAL_GUARD_SYSV_SIGNAL_INTERNAL, /* __sysv_signal */
	SIGNAL_GUARD_APIS,
};
typedef void (*signal_guard_handler)(int);
signal_guard_handler signal_guard_signal(enum signal_guard_api api, int sig,
					 signal_guard_handler handler);
/* sigset, made of signal_guard_sigaction and the thread's mask as libc
 * makes it: libc's would see the mask the install is made under. */
signal_guard_handler signal_guard_sigset(int sig, signal_guard_handler disposition);

/* In a fork child: an install another thread of the parent was making
 * never ends here, so its signal is free again. */
void signal_guard_after_fork_in_child(void);

/* Registers signal_guard_after_fork_in_child with libc, once: from the
 * constructor where libc cannot take a fork handler late (start_data.h),
 * else at the first install that takes a flag. */
void signal_guard_watch_forks(void);

#endif
