/* Knowing whether this thread runs a signal handler (see signal_guard.h).
 *
 * Each handler the program installs through libc runs behind one of two
 * trampolines (plain, or SA_SIGINFO), which keeps the kernel's flags and
 * mask exactly as the program asked: SA_RESETHAND, SA_NODEFER, SA_ONSTACK
 * and SA_RESTART behave as without the library, and the trampoline counts
 * the handler whatever the signal mask or the action say meanwhile. The
 * program's handlers are kept per signal and kind; the kernel's action,
 * asked each time, says which (if any) is installed. */
#include "config.h"

#include "signal_guard.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

__thread struct signal_guard_thread signal_guard_thread;

typedef void (*signal_guard_info_handler)(int, siginfo_t *, void *);
typedef int (*signal_guard_sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef signal_guard_handler (*signal_guard_signal_fn)(int, signal_guard_handler);

/* The program's handlers, by signal: written under the lock, before the
 * kernel may run the trampoline that reads them. */
static signal_guard_handler signal_guard_plain[NSIG];
static signal_guard_info_handler signal_guard_info[NSIG];

/* The pid of the process whose thread holds the lock, or 0: a fork child
 * takes over a lock that its parent's other thread held. */
static pid_t signal_guard_lock_pid;

/* libc's functions (or a sanitizer's, behind ours): found on first use,
 * all together at the first install (signal_guard_resolve_all). */
static signal_guard_sigaction_fn signal_guard_next_sigaction;
static signal_guard_signal_fn signal_guard_next_signal[SIGNAL_GUARD_APIS];
static const char *const signal_guard_names[SIGNAL_GUARD_APIS] = {
	[SIGNAL_GUARD_SIGNAL] = "signal",
	[SIGNAL_GUARD_BSD_SIGNAL] = "bsd_signal",
	[SIGNAL_GUARD_SSIGNAL] = "ssignal",
	[SIGNAL_GUARD_SYSV_SIGNAL] = "sysv_signal",
	[SIGNAL_GUARD_SYSV_SIGNAL_INTERNAL] = "__sysv_signal",
};

/* The next definition of name after this library's, cached in slot. */
static void *signal_guard_next(void **slot, const char *name)
{
	void *fn = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

	if (fn == NULL) {
		fn = dlsym(RTLD_NEXT, name);
		__atomic_store_n(slot, fn, __ATOMIC_RELEASE);
	}
	return fn;
}

/* Looks every next function up at the first install of any kind: that one
 * is almost always made outside a handler, while a later first use of
 * another kind (signal(sig, SIG_DFL) in a handler installed by sigaction)
 * may come inside one, where dlsym must not run (it takes the loader's
 * lock, and may free an earlier error message). */
static void signal_guard_resolve_all(void)
{
	static bool resolved;

	if (__atomic_load_n(&resolved, __ATOMIC_ACQUIRE))
		return;
	signal_guard_next((void **)&signal_guard_next_sigaction, "sigaction");
	for (unsigned api = 0; api < SIGNAL_GUARD_APIS; api++)
		signal_guard_next((void **)&signal_guard_next_signal[api], signal_guard_names[api]);
	__atomic_store_n(&resolved, true, __ATOMIC_RELEASE);
}

static signal_guard_sigaction_fn signal_guard_real_sigaction(void)
{
	signal_guard_resolve_all();
	return (signal_guard_sigaction_fn)signal_guard_next((void **)&signal_guard_next_sigaction,
							    "sigaction");
}

/* Marks a handler as running on this thread. The depth goes up before the
 * frame is stored, so that a handler nesting in between takes the next
 * slot; leaving restores the depth seen on entry, which also forgets
 * handlers nested inside this one that were left by longjmp. */
static inline unsigned signal_guard_enter(uintptr_t frame)
{
	struct signal_guard_thread *t = &signal_guard_thread;
	unsigned depth = t->depth;

	t->depth = depth + 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (depth < SIGNAL_GUARD_FRAMES)
		t->frames[depth] = frame;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	return depth;
}

static inline void signal_guard_leave(unsigned depth)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	signal_guard_thread.depth = depth;
}

/* The kernel's entry for a plain handler. */
static void signal_guard_plain_trampoline(int sig)
{
	signal_guard_handler handler;
	unsigned depth;

	/* A program may call a handler it read with the system call itself. */
	if ((unsigned)sig >= NSIG)
		return;
	handler = __atomic_load_n(&signal_guard_plain[sig], __ATOMIC_ACQUIRE);
	depth = signal_guard_enter((uintptr_t)__builtin_frame_address(0));

	if (handler != NULL)
		handler(sig);
	signal_guard_leave(depth);
}

/* The kernel's entry for an SA_SIGINFO handler: the same siginfo and
 * context, so that a handler that edits the context still resumes where it
 * says. */
static void signal_guard_info_trampoline(int sig, siginfo_t *info, void *context)
{
	signal_guard_info_handler handler;
	unsigned depth;

	if ((unsigned)sig >= NSIG)
		return;
	handler = __atomic_load_n(&signal_guard_info[sig], __ATOMIC_ACQUIRE);
	depth = signal_guard_enter((uintptr_t)__builtin_frame_address(0));

	if (handler != NULL)
		handler(sig, info, context);
	signal_guard_leave(depth);
}

/* A handler the library wraps: a function, not a disposition (SIG_DFL,
 * SIG_IGN, SIG_HOLD) nor SIG_ERR, which go to libc untouched. */
static bool signal_guard_wraps(signal_guard_handler handler)
{
	return handler != SIG_ERR && (uintptr_t)handler > 2u;
}

static bool signal_guard_is_trampoline(const void *handler)
{
	return handler == (const void *)signal_guard_plain_trampoline ||
	       handler == (const void *)signal_guard_info_trampoline;
}

/* Serialises the installs, so that the handler a trampoline calls is the
 * one installed last: every signal is blocked meanwhile (a handler that
 * installs one cannot interrupt the holder on its own thread). What is
 * called under it must not depend on the thread's mask (sigset does). The
 * next signal may be built on the exported sigaction (a sanitizer's is):
 * a call made while this thread holds the lock goes straight through. */
static void signal_guard_lock(sigset_t *saved)
{
	sigset_t all;
	pid_t self;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, saved);
	self = getpid();
	for (unsigned spins = 0;; spins++) {
		pid_t holder = 0;

		if (__atomic_compare_exchange_n(&signal_guard_lock_pid, &holder, self, false,
						__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			break;
		if (holder != self &&
		    __atomic_compare_exchange_n(&signal_guard_lock_pid, &holder, self, false,
						__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			break;
		if (spins < 100)
			__builtin_ia32_pause();
		else
			sched_yield();
	}
	signal_guard_thread.installing = true;
}

static void signal_guard_unlock(const sigset_t *saved)
{
	signal_guard_thread.installing = false;
	__atomic_store_n(&signal_guard_lock_pid, 0, __ATOMIC_RELEASE);
	pthread_sigmask(SIG_SETMASK, saved, NULL);
}

/* The handlers that were current for sig, to report or put back. */
struct signal_guard_saved {
	signal_guard_handler plain;
	signal_guard_info_handler info;
};

static struct signal_guard_saved signal_guard_save(int sig)
{
	return (struct signal_guard_saved){ signal_guard_plain[sig], signal_guard_info[sig] };
}

static void signal_guard_restore(int sig, const struct signal_guard_saved *saved)
{
	__atomic_store_n(&signal_guard_plain[sig], saved->plain, __ATOMIC_RELEASE);
	__atomic_store_n(&signal_guard_info[sig], saved->info, __ATOMIC_RELEASE);
}

/* The program's handler in place of a trampoline the kernel reported. */
static void *signal_guard_unwrap(void *handler, const struct signal_guard_saved *saved)
{
	if (handler == (void *)signal_guard_plain_trampoline)
		return (void *)saved->plain;
	if (handler == (void *)signal_guard_info_trampoline)
		return (void *)saved->info;
	return handler;
}

int signal_guard_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	signal_guard_sigaction_fn next = signal_guard_real_sigaction();
	struct signal_guard_saved saved;
	struct sigaction wrapped;
	sigset_t mask;
	int saved_errno = errno, rc, error;

	if (next == NULL) {
		errno = ENOSYS;
		return -1;
	}
	if (sig <= 0 || sig >= NSIG || signal_guard_thread.installing)
		return next(sig, act, old);
	signal_guard_lock(&mask);
	saved = signal_guard_save(sig);
	if (act != NULL && signal_guard_wraps(act->sa_handler)) {
		wrapped = *act;
		if (act->sa_flags & SA_SIGINFO) {
			__atomic_store_n(&signal_guard_info[sig], act->sa_sigaction,
					 __ATOMIC_RELEASE);
			wrapped.sa_sigaction = signal_guard_info_trampoline;
		} else {
			__atomic_store_n(&signal_guard_plain[sig], act->sa_handler,
					 __ATOMIC_RELEASE);
			wrapped.sa_handler = signal_guard_plain_trampoline;
		}
		act = &wrapped;
	}
	rc = next(sig, act, old);
	error = errno;
	if (rc != 0)
		signal_guard_restore(sig, &saved);
	else if (old != NULL)
		old->sa_handler =
		    (signal_guard_handler)signal_guard_unwrap((void *)old->sa_handler, &saved);
	signal_guard_unlock(&mask);
	errno = rc != 0 ? error : saved_errno;
	return rc;
}

signal_guard_handler signal_guard_signal(enum signal_guard_api api, int sig,
					 signal_guard_handler handler)
{
	signal_guard_signal_fn next;
	struct signal_guard_saved saved;
	signal_guard_handler previous;
	sigset_t mask;
	int saved_errno = errno, error;

	signal_guard_resolve_all();
	next = (signal_guard_signal_fn)signal_guard_next((void **)&signal_guard_next_signal[api],
							 signal_guard_names[api]);

	if (next == NULL) {
		errno = ENOSYS;
		return SIG_ERR;
	}
	if (sig <= 0 || sig >= NSIG || signal_guard_thread.installing)
		return next(sig, handler);
	signal_guard_lock(&mask);
	saved = signal_guard_save(sig);
	if (signal_guard_wraps(handler)) {
		__atomic_store_n(&signal_guard_plain[sig], handler, __ATOMIC_RELEASE);
		handler = signal_guard_plain_trampoline;
	}
	previous = next(sig, handler);
	error = errno;
	if (previous == SIG_ERR)
		signal_guard_restore(sig, &saved);
	else
		previous = (signal_guard_handler)signal_guard_unwrap((void *)previous, &saved);
	signal_guard_unlock(&mask);
	errno = previous == SIG_ERR ? error : saved_errno;
	return previous;
}

signal_guard_handler signal_guard_sigset(int sig, signal_guard_handler disposition)
{
	struct sigaction action, old;
	sigset_t only, before;

	if (sig <= 0 || sig >= NSIG) {
		errno = EINVAL;
		return SIG_ERR;
	}
	sigemptyset(&only);
	sigaddset(&only, sig);
	if (disposition == SIG_HOLD) {
		if (pthread_sigmask(SIG_BLOCK, &only, &before) != 0 ||
		    signal_guard_sigaction(sig, NULL, &old) != 0)
			return SIG_ERR;
	} else {
		memset(&action, 0, sizeof action);
		action.sa_handler = disposition;
		sigemptyset(&action.sa_mask);
		if (signal_guard_sigaction(sig, &action, &old) != 0 ||
		    pthread_sigmask(SIG_UNBLOCK, &only, &before) != 0)
			return SIG_ERR;
	}
	return sigismember(&before, sig) == 1 ? SIG_HOLD : old.sa_handler;
}

/* The look for foreign handlers alone: system calls, for every call. */
static bool signal_guard_foreign_maybe(void)
{
	signal_guard_sigaction_fn next = signal_guard_real_sigaction();
	sigset_t blocked;
	stack_t stack;

	/* On the alternate stack, a handler runs: none of ours (the depth
	 * would say), so a foreign one. */
	if (sigaltstack(NULL, &stack) != 0 || (stack.ss_flags & SS_ONSTACK))
		return true;
	/* A foreign handler runs with its signal blocked, unless SA_NODEFER:
	 * that one cannot be told from a thread that blocks it. */
	if (next == NULL || pthread_sigmask(SIG_BLOCK, NULL, &blocked) != 0)
		return true;
	for (int sig = 1; sig < NSIG; sig++) {
		struct sigaction action;

		if (sigismember(&blocked, sig) != 1 || next(sig, NULL, &action) != 0)
			continue;
		if (signal_guard_wraps(action.sa_handler) &&
		    !signal_guard_is_trampoline((const void *)action.sa_handler))
			return true;
	}
	return false;
}

/* Forgets the handlers this thread left by longjmp: a trampoline frame
 * below the caller's on the stack has returned or been jumped out of. A
 * frame on another stack (the alternate one) may lie anywhere: one above
 * the caller's is kept, which only makes the thread wait. */
static void signal_guard_forget_left(uintptr_t here)
{
	struct signal_guard_thread *t = &signal_guard_thread;
	unsigned depth = t->depth;

	while (depth > 0 && depth <= SIGNAL_GUARD_FRAMES && t->frames[depth - 1] < here)
		depth--;
	t->depth = depth;
}

bool signal_guard_may_start(void)
{
	struct signal_guard_thread *t = &signal_guard_thread;
	int saved_errno;
	bool maybe;

	if (t->depth > 0) {
		signal_guard_forget_left((uintptr_t)__builtin_frame_address(0));
		if (t->depth > 0)
			return false;
	}
	if (t->retry_countdown > 0) {
		t->retry_countdown--;
		return false;
	}
	saved_errno = errno;
	maybe = signal_guard_foreign_maybe();
	errno = saved_errno;
	if (maybe)
		t->retry_countdown = SIGNAL_GUARD_RETRY_CALLS;
	return !maybe;
}
