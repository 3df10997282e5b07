/* The installs: sigaction, signal and the like as the program sees them
 * (see signal_guard.h). A handler is written in the signal's free slot
 * (signal_guard_slots) and the kernel gets that slot's trampoline with the
 * program's flags and mask; the old action reports the program's handler.
 * No lock and no wait: each signal has an install flag, taken with one
 * exchange, and an install that finds it taken passes the program's
 * handler through untouched (a foreign handler until the signal is
 * installed again). Why this is enough: HACKING, "Starting the thread". */
#include "config.h"

#include "signal_guard_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "errno_keep.h"
#include "fork_handler.h"
#include "start_data.h"

typedef signal_guard_handler (*signal_guard_signal_fn)(int, signal_guard_handler);

/* The installs' own state: the next functions, each signal's current slot
 * and install flag, and the pass-through of a served process. */
static struct {
	/* libc's functions (or a sanitizer's, behind ours): found on first
	 * use, all together at the first install (signal_guard_resolve_all). */
	signal_guard_sigaction_fn next_sigaction;
	signal_guard_signal_fn next_signal[SIGNAL_GUARD_APIS];
	bool resolved;
	/* The slot of the last trampoline installed for each signal. */
	unsigned char current[NSIG];
	/* Each signal's install flag: held by one install at a time. */
	bool busy[NSIG];
	bool pass_through;
} signal_guard_installs START_DATA; /* read by every fork child */

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
	if (__atomic_load_n(&signal_guard_installs.resolved, __ATOMIC_ACQUIRE))
		return;
	signal_guard_next((void **)&signal_guard_installs.next_sigaction, "sigaction");
	for (unsigned api = 0; api < SIGNAL_GUARD_APIS; api++)
		signal_guard_next((void **)&signal_guard_installs.next_signal[api],
				  signal_guard_names[api]);
	__atomic_store_n(&signal_guard_installs.resolved, true, __ATOMIC_RELEASE);
}

/* The next sigaction, every next function looked up first. */
signal_guard_sigaction_fn signal_guard_real_sigaction(void)
{
	signal_guard_resolve_all();
	return (signal_guard_sigaction_fn)signal_guard_next(
	    (void **)&signal_guard_installs.next_sigaction, "sigaction");
}

/* Sends every install straight to the next function, or no longer. */
void signal_guard_set_pass_through(bool pass)
{
	if (pass)
		signal_guard_resolve_all();
	__atomic_store_n(&signal_guard_installs.pass_through, pass, __ATOMIC_RELEASE);
}

/* Signals whose installs go to the next function untouched: out of range,
 * or kept by glibc for itself (it refuses them before reading the action);
 * all of them in a served process. */
static bool signal_guard_passes(int sig)
{
	return sig <= 0 || sig >= NSIG || (sig >= 32 && sig < SIGRTMIN) ||
	       __atomic_load_n(&signal_guard_installs.pass_through, __ATOMIC_ACQUIRE);
}

/* Has libc run signal_guard_after_fork_in_child in every fork child from
 * now on; once. Late where libc allows it (start_data.h): at the first
 * install that takes a flag, for a process that installs no handler
 * through us has no flag for a child to free, and every process start
 * would otherwise pay libc's registration. */
void signal_guard_watch_forks(void)
{
	/* In the .data page: a shell installs handlers at its start. */
	static bool watching START_DATA;

	/* Never from inside a handler: the code it interrupted may hold
	 * libc's fork-handler lock (in pthread_atfork, or in fork), and a
	 * registration waits for that lock. An install outside any handler
	 * registers; until then a fork child keeps a flag another thread
	 * held, and its installs of that signal go to libc unwrapped. */
	if (signal_guard_thread.depth > 0)
		return;
	if (__atomic_load_n(&watching, __ATOMIC_ACQUIRE) ||
	    __atomic_exchange_n(&watching, true, __ATOMIC_ACQ_REL))
		return;
	fork_handler_register(signal_guard_after_fork_in_child);
}

/* Takes sig's install flag if no install holds it; never waits. */
static bool signal_guard_hold(int sig)
{
	if (START_FORK_HANDLERS_LATE)
		signal_guard_watch_forks();
	if (__atomic_exchange_n(&signal_guard_installs.busy[sig], true, __ATOMIC_ACQUIRE))
		return false;
	signal_guard_thread.held |= signal_guard_bit(sig);
	return true;
}

/* Gives sig's install flag back. */
static void signal_guard_release(int sig)
{
	signal_guard_thread.held &= ~signal_guard_bit(sig);
	__atomic_store_n(&signal_guard_installs.busy[sig], false, __ATOMIC_RELEASE);
}

/* Frees, in a fork child, the flags only other threads held. A flag that
 * is already right is not written: the child's first write to a page
 * copies it, and a child that only execs or exits should copy none. */
void signal_guard_after_fork_in_child(void)
{
	uint64_t held = signal_guard_thread.held;

	for (int sig = 1; sig < NSIG; sig++) {
		bool busy = (held & signal_guard_bit(sig)) != 0;

		if (__atomic_load_n(&signal_guard_installs.busy[sig], __ATOMIC_RELAXED) != busy)
			__atomic_store_n(&signal_guard_installs.busy[sig], busy, __ATOMIC_RELAXED);
	}
}

/* What an install wrote in its slot, to put back if the kernel refused. */
struct signal_guard_written {
	bool wrote;
	unsigned slot;
	signal_guard_handler plain;
	signal_guard_info_handler info;
	bool nodefer;
};

/* Writes the program's handler in sig's free slot (the caller holds sig's
 * flag) and returns the trampoline to install in its place. */
static void *signal_guard_write_slot(int sig, void *handler, bool siginfo, bool nodefer,
				     struct signal_guard_written *written)
{
	unsigned slot = __atomic_load_n(&signal_guard_installs.current[sig], __ATOMIC_RELAXED) ^ 1u;

	*written = (struct signal_guard_written){ true, slot, signal_guard_slots.plain[slot][sig],
						  signal_guard_slots.info[slot][sig],
						  signal_guard_slots.nodefer[slot][sig] };
	__atomic_store_n(&signal_guard_slots.nodefer[slot][sig], nodefer, __ATOMIC_RELAXED);
	if (siginfo) {
		__atomic_store_n(&signal_guard_slots.info[slot][sig],
				 (signal_guard_info_handler)handler, __ATOMIC_RELEASE);
		return signal_guard_trampoline(slot, true);
	}
	__atomic_store_n(&signal_guard_slots.plain[slot][sig], (signal_guard_handler)handler,
			 __ATOMIC_RELEASE);
	return signal_guard_trampoline(slot, false);
}

/* After the next function's answer: the slot becomes current, or is put
 * back as it was. */
static void signal_guard_commit(int sig, const struct signal_guard_written *written, bool ok)
{
	if (!written->wrote)
		return;
	if (ok) {
		__atomic_store_n(&signal_guard_installs.current[sig], (unsigned char)written->slot,
				 __ATOMIC_RELAXED);
		return;
	}
	__atomic_store_n(&signal_guard_slots.plain[written->slot][sig], written->plain,
			 __ATOMIC_RELEASE);
	__atomic_store_n(&signal_guard_slots.info[written->slot][sig], written->info,
			 __ATOMIC_RELEASE);
	__atomic_store_n(&signal_guard_slots.nodefer[written->slot][sig], written->nodefer,
			 __ATOMIC_RELAXED);
}

/* The program's handler in place of the trampoline a holder's install
 * replaced: the slot it wrote held, before, what the kernel's old action
 * named (a trampoline the program had put back by hand may name it). */
static void *signal_guard_unwrap_old(int sig, void *handler,
				     const struct signal_guard_written *written)
{
	if (written->wrote) {
		if (handler == signal_guard_trampoline(written->slot, false))
			return (void *)written->plain;
		if (handler == signal_guard_trampoline(written->slot, true))
			return (void *)written->info;
	}
	return signal_guard_unwrap(sig, handler);
}

/* sigaction, the program's handler behind a trampoline. Where the
 * program's call enters the library (preload_signal.c): its errno is kept
 * (errno_keep.h) but where libc's sigaction fails. */
int signal_guard_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct errno_keep keep = errno_keep_take();
	signal_guard_sigaction_fn next = signal_guard_real_sigaction();
	struct signal_guard_written written = { .wrote = false };
	struct sigaction program, wrapped, reported;
	int rc, error;

	if (next == NULL) {
		errno = ENOSYS;
		return -1;
	}
	/* The lookup's errors are not libc's. */
	errno_keep_give(keep);
	if (signal_guard_passes(sig)) {
		rc = next(sig, act, old);
		/* A handler installed before the process was served runs behind
		 * its trampoline still: reported as the program's (a read). */
		if (rc == 0 && old != NULL && sig > 0 && sig < NSIG)
			old->sa_handler =
			    (signal_guard_handler)signal_guard_unwrap(sig, (void *)old->sa_handler);
		return rc;
	}
	/* As libc's own: a bad act faults here, with the program's mask and
	 * nothing held; a bad old below, once the action has changed. */
	if (act != NULL) {
		program = *act;
		act = &program;
	}
	if (signal_guard_hold(sig)) {
		if (act != NULL && signal_guard_wraps(program.sa_handler) &&
		    !signal_guard_is_trampoline((const void *)program.sa_handler)) {
			void *trampoline;
			bool siginfo = (program.sa_flags & SA_SIGINFO) != 0;

			wrapped = program;
			trampoline =
			    signal_guard_write_slot(sig, (void *)program.sa_handler, siginfo,
						    (program.sa_flags & SA_NODEFER) != 0, &written);
			if (siginfo)
				wrapped.sa_sigaction = (signal_guard_info_handler)trampoline;
			else
				wrapped.sa_handler = (signal_guard_handler)trampoline;
			act = &wrapped;
		}
		rc = next(sig, act, old != NULL ? &reported : NULL);
		error = errno;
		signal_guard_commit(sig, &written, rc == 0);
		if (rc == 0 && old != NULL)
			reported.sa_handler = (signal_guard_handler)signal_guard_unwrap_old(
			    sig, (void *)reported.sa_handler, &written);
		signal_guard_release(sig);
	} else {
		rc = next(sig, act, old != NULL ? &reported : NULL);
		error = errno;
		if (rc == 0 && old != NULL)
			reported.sa_handler = (signal_guard_handler)signal_guard_unwrap(
			    sig, (void *)reported.sa_handler);
	}
	if (rc != 0) {
		errno = error;
		return rc;
	}
	if (old != NULL)
		*old = reported;
	errno_keep_give(keep);
	return 0;
}

/* sysv_signal's actions reset and do not block their signal (glibc). */
static bool signal_guard_api_nodefer(enum signal_guard_api api)
{
	return api == SIGNAL_GUARD_SYSV_SIGNAL || api == SIGNAL_GUARD_SYSV_SIGNAL_INTERNAL;
}

/* signal and its kin, the program's handler behind a trampoline; errno as
 * signal_guard_sigaction's. */
signal_guard_handler signal_guard_signal(enum signal_guard_api api, int sig,
					 signal_guard_handler handler)
{
	struct errno_keep keep = errno_keep_take();
	signal_guard_signal_fn next;
	struct signal_guard_written written = { .wrote = false };
	signal_guard_handler previous;
	int error;

	signal_guard_resolve_all();
	next = (signal_guard_signal_fn)signal_guard_next(
	    (void **)&signal_guard_installs.next_signal[api], signal_guard_names[api]);

	if (next == NULL) {
		errno = ENOSYS;
		return SIG_ERR;
	}
	errno_keep_give(keep);
	if (signal_guard_passes(sig)) {
		previous = next(sig, handler);
		if (previous != SIG_ERR && sig > 0 && sig < NSIG)
			previous = (signal_guard_handler)signal_guard_unwrap(sig, (void *)previous);
		return previous;
	}
	if (!signal_guard_hold(sig)) {
		/* Beside an install of the same signal: see the top of this file. */
		previous = next(sig, handler);
		error = errno;
		if (previous == SIG_ERR) {
			errno = error;
			return SIG_ERR;
		}
		previous = (signal_guard_handler)signal_guard_unwrap(sig, (void *)previous);
		errno_keep_give(keep);
		return previous;
	}
	if (signal_guard_wraps(handler) && !signal_guard_is_trampoline((const void *)handler))
		handler = (signal_guard_handler)signal_guard_write_slot(
		    sig, (void *)handler, false, signal_guard_api_nodefer(api), &written);
	previous = next(sig, handler);
	error = errno;
	signal_guard_commit(sig, &written, previous != SIG_ERR);
	if (previous != SIG_ERR)
		previous =
		    (signal_guard_handler)signal_guard_unwrap_old(sig, (void *)previous, &written);
	signal_guard_release(sig);
	if (previous == SIG_ERR)
		errno = error;
	else
		errno_keep_give(keep);
	return previous;
}

/* sigset, made of signal_guard_sigaction and the thread's mask. */
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
