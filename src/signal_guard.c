/* Knowing whether this thread runs a signal handler (see signal_guard.h).
 *
 * Each handler the program installs through libc runs behind a trampoline
 * (plain, or SA_SIGINFO), which keeps the kernel's flags and mask exactly
 * as the program asked: SA_RESETHAND, SA_NODEFER, SA_ONSTACK and
 * SA_RESTART behave as without the library, and the trampoline counts the
 * handler whatever the signal mask or the action say meanwhile.
 *
 * The program's handlers are kept per signal in two slots, each with its
 * own pair of trampolines, and an install writes the slot the kernel's
 * current trampoline does not read. So a signal delivered while an install
 * is under way runs the handler the kernel's action was made for, with
 * that action's flags, and the trampoline an action names (the kernel's
 * old action, say) tells which install it came from.
 *
 * Installs and the signals' race (why no lock is needed):
 * Each signal has a flag that one install at a time holds, taken with one
 * exchange and never waited for. The holder writes the free slot, calls
 * the next sigaction (libc's, or an interposer's beneath ours) with the
 * slot's trampoline, and on success makes that slot the current one. An
 * install that finds the flag taken (another thread installs the same
 * signal, a handler interrupted an install on this thread, or the next
 * sigaction calls the exported one back, as a sanitizer's signal() and
 * libjsig's do) writes nothing shared: it passes the program's own handler
 * to the next sigaction, where it is a foreign handler (looked for by
 * signal_guard_may_start's system calls) until the program installs that
 * signal again. The kernel orders the two system calls as it orders any
 * two: the last one's action stays, with the handler its program asked
 * for, as without the library. The old action each call reports is the
 * kernel's, and a trampoline in it is read through its slot, which no
 * install writes while the kernel's action names it: a holder writes only
 * the other slot, so that an old action names the slot of the install
 * that made it. Only an install, completed, and a second one begun on the
 * same signal between a call's system call and its next few instructions
 * could rewrite that slot first (then that call reports the later handler).
 * Nothing waits: a real-time thread, a thread stopped in the next
 * sigaction, or one killed there never keeps another from installing. */
#include "config.h"

#include "signal_guard.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "libc.h"
#include "timespec_ns.h"

__thread struct signal_guard_thread signal_guard_thread;

typedef void (*signal_guard_info_handler)(int, siginfo_t *, void *);
typedef int (*signal_guard_sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef signal_guard_handler (*signal_guard_signal_fn)(int, signal_guard_handler);

#define SIGNAL_GUARD_SLOTS 2u

/* The program's handlers, by slot and signal, and whether the action made
 * with the slot's trampoline had SA_NODEFER: written by the install that
 * holds the signal's flag, before the kernel may run the trampoline that
 * reads them. */
static signal_guard_handler signal_guard_plain[SIGNAL_GUARD_SLOTS][NSIG];
static signal_guard_info_handler signal_guard_info[SIGNAL_GUARD_SLOTS][NSIG];
static bool signal_guard_nodefer[SIGNAL_GUARD_SLOTS][NSIG];
/* The slot of the last trampoline installed for each signal. */
static unsigned char signal_guard_current[NSIG];
/* Each signal's install flag (see the top of this file). */
static bool signal_guard_busy[NSIG];

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

static uint64_t signal_guard_bit(int sig)
{
	return 1ull << ((unsigned)sig - 1u);
}

/* Marks a handler for sig as running on this thread. The signal and the
 * depth go up before the frame is stored, so that a handler nesting in
 * between takes the next slot and sees this one counted; leaving restores
 * what was seen on entry, which also forgets handlers nested inside this
 * one that were left by longjmp. */
struct signal_guard_entry {
	unsigned depth;
	bool nodefer;
	uint64_t running;
};

static inline struct signal_guard_entry signal_guard_enter(int sig, unsigned slot, uintptr_t frame)
{
	struct signal_guard_thread *t = &signal_guard_thread;
	struct signal_guard_entry entry = { t->depth, t->nodefer, t->running };

	/* The first handler of a thread that seemed to run none: its own
	 * calls wait a whole interval before any look. */
	if (entry.depth == 0)
		t->depth_look_at_ns = 0;
	t->running = entry.running | signal_guard_bit(sig);
	t->nodefer =
	    entry.nodefer || __atomic_load_n(&signal_guard_nodefer[slot][sig], __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->depth = entry.depth + 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (entry.depth < SIGNAL_GUARD_FRAMES)
		t->frames[entry.depth] = frame;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	return entry;
}

static inline void signal_guard_leave(const struct signal_guard_entry *entry)
{
	struct signal_guard_thread *t = &signal_guard_thread;

	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->depth = entry->depth;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->running = entry->running;
	t->nodefer = entry->nodefer;
}

/* The kernel's entry for a plain handler in slot. */
static inline __attribute__((always_inline)) void signal_guard_run_plain(unsigned slot, int sig,
									 uintptr_t frame)
{
	signal_guard_handler handler;
	struct signal_guard_entry entry;

	/* A program may call a handler it read with the system call itself. */
	if (sig <= 0 || sig >= NSIG)
		return;
	handler = __atomic_load_n(&signal_guard_plain[slot][sig], __ATOMIC_ACQUIRE);
	entry = signal_guard_enter(sig, slot, frame);
	if (handler != NULL)
		handler(sig);
	signal_guard_leave(&entry);
}

/* The kernel's entry for an SA_SIGINFO handler in slot: the same siginfo
 * and context, so that a handler that edits the context still resumes
 * where it says. */
static inline __attribute__((always_inline)) void
signal_guard_run_info(unsigned slot, int sig, siginfo_t *info, void *context, uintptr_t frame)
{
	signal_guard_info_handler handler;
	struct signal_guard_entry entry;

	if (sig <= 0 || sig >= NSIG)
		return;
	handler = __atomic_load_n(&signal_guard_info[slot][sig], __ATOMIC_ACQUIRE);
	entry = signal_guard_enter(sig, slot, frame);
	if (handler != NULL)
		handler(sig, info, context);
	signal_guard_leave(&entry);
}

static void signal_guard_plain_0(int sig)
{
	signal_guard_run_plain(0, sig, (uintptr_t)__builtin_frame_address(0));
}

static void signal_guard_plain_1(int sig)
{
	signal_guard_run_plain(1, sig, (uintptr_t)__builtin_frame_address(0));
}

static void signal_guard_info_0(int sig, siginfo_t *info, void *context)
{
	signal_guard_run_info(0, sig, info, context, (uintptr_t)__builtin_frame_address(0));
}

static void signal_guard_info_1(int sig, siginfo_t *info, void *context)
{
	signal_guard_run_info(1, sig, info, context, (uintptr_t)__builtin_frame_address(0));
}

static const signal_guard_handler signal_guard_plain_trampolines[SIGNAL_GUARD_SLOTS] = {
	signal_guard_plain_0,
	signal_guard_plain_1,
};
static const signal_guard_info_handler signal_guard_info_trampolines[SIGNAL_GUARD_SLOTS] = {
	signal_guard_info_0,
	signal_guard_info_1,
};

/* A handler the library wraps: a function, not a disposition (SIG_DFL,
 * SIG_IGN, SIG_HOLD) nor SIG_ERR, which go to libc untouched. */
static bool signal_guard_wraps(signal_guard_handler handler)
{
	return handler != SIG_ERR && (uintptr_t)handler > 2u;
}

static bool signal_guard_is_trampoline(const void *handler)
{
	for (unsigned slot = 0; slot < SIGNAL_GUARD_SLOTS; slot++)
		if (handler == (const void *)signal_guard_plain_trampolines[slot] ||
		    handler == (const void *)signal_guard_info_trampolines[slot])
			return true;
	return false;
}

/* The program's handler in place of a trampoline the kernel reported. */
static void *signal_guard_unwrap(int sig, void *handler)
{
	for (unsigned slot = 0; slot < SIGNAL_GUARD_SLOTS; slot++) {
		if (handler == (void *)signal_guard_plain_trampolines[slot])
			return (void *)__atomic_load_n(&signal_guard_plain[slot][sig],
						       __ATOMIC_ACQUIRE);
		if (handler == (void *)signal_guard_info_trampolines[slot])
			return (void *)__atomic_load_n(&signal_guard_info[slot][sig],
						       __ATOMIC_ACQUIRE);
	}
	return handler;
}

static bool signal_guard_pass_through;

void signal_guard_set_pass_through(bool pass)
{
	if (pass)
		signal_guard_resolve_all();
	__atomic_store_n(&signal_guard_pass_through, pass, __ATOMIC_RELEASE);
}

/* Signals whose installs go to the next function untouched: out of range,
 * or kept by glibc for itself (it refuses them before reading the action);
 * all of them in a served process. */
static bool signal_guard_passes(int sig)
{
	return sig <= 0 || sig >= NSIG || (sig >= 32 && sig < SIGRTMIN) ||
	       __atomic_load_n(&signal_guard_pass_through, __ATOMIC_ACQUIRE);
}

/* Takes sig's install flag if no install holds it; never waits. */
static bool signal_guard_hold(int sig)
{
	if (__atomic_exchange_n(&signal_guard_busy[sig], true, __ATOMIC_ACQUIRE))
		return false;
	signal_guard_thread.held |= signal_guard_bit(sig);
	return true;
}

static void signal_guard_release(int sig)
{
	signal_guard_thread.held &= ~signal_guard_bit(sig);
	__atomic_store_n(&signal_guard_busy[sig], false, __ATOMIC_RELEASE);
}

void signal_guard_after_fork_in_child(void)
{
	uint64_t held = signal_guard_thread.held;

	for (int sig = 1; sig < NSIG; sig++)
		__atomic_store_n(&signal_guard_busy[sig], (held & signal_guard_bit(sig)) != 0,
				 __ATOMIC_RELAXED);
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
	unsigned slot = __atomic_load_n(&signal_guard_current[sig], __ATOMIC_RELAXED) ^ 1u;

	*written = (struct signal_guard_written){ true, slot, signal_guard_plain[slot][sig],
						  signal_guard_info[slot][sig],
						  signal_guard_nodefer[slot][sig] };
	__atomic_store_n(&signal_guard_nodefer[slot][sig], nodefer, __ATOMIC_RELAXED);
	if (siginfo) {
		__atomic_store_n(&signal_guard_info[slot][sig], (signal_guard_info_handler)handler,
				 __ATOMIC_RELEASE);
		return (void *)signal_guard_info_trampolines[slot];
	}
	__atomic_store_n(&signal_guard_plain[slot][sig], (signal_guard_handler)handler,
			 __ATOMIC_RELEASE);
	return (void *)signal_guard_plain_trampolines[slot];
}

/* After the next function's answer: the slot becomes current, or is put
 * back as it was. */
static void signal_guard_commit(int sig, const struct signal_guard_written *written, bool ok)
{
	if (!written->wrote)
		return;
	if (ok) {
		__atomic_store_n(&signal_guard_current[sig], (unsigned char)written->slot,
				 __ATOMIC_RELAXED);
		return;
	}
	__atomic_store_n(&signal_guard_plain[written->slot][sig], written->plain, __ATOMIC_RELEASE);
	__atomic_store_n(&signal_guard_info[written->slot][sig], written->info, __ATOMIC_RELEASE);
	__atomic_store_n(&signal_guard_nodefer[written->slot][sig], written->nodefer,
			 __ATOMIC_RELAXED);
}

/* The program's handler in place of the trampoline a holder's install
 * replaced: the slot it wrote held, before, what the kernel's old action
 * named (a trampoline the program had put back by hand may name it). */
static void *signal_guard_unwrap_old(int sig, void *handler,
				     const struct signal_guard_written *written)
{
	if (written->wrote) {
		if (handler == (void *)signal_guard_plain_trampolines[written->slot])
			return (void *)written->plain;
		if (handler == (void *)signal_guard_info_trampolines[written->slot])
			return (void *)written->info;
	}
	return signal_guard_unwrap(sig, handler);
}

int signal_guard_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	signal_guard_sigaction_fn next = signal_guard_real_sigaction();
	struct signal_guard_written written = { .wrote = false };
	struct sigaction program, wrapped, reported;
	int saved_errno = errno, rc, error;

	if (next == NULL) {
		errno = ENOSYS;
		return -1;
	}
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
	errno = saved_errno;
	return 0;
}

/* sysv_signal's actions reset and do not block their signal (glibc). */
static bool signal_guard_api_nodefer(enum signal_guard_api api)
{
	return api == SIGNAL_GUARD_SYSV_SIGNAL || api == SIGNAL_GUARD_SYSV_SIGNAL_INTERNAL;
}

signal_guard_handler signal_guard_signal(enum signal_guard_api api, int sig,
					 signal_guard_handler handler)
{
	signal_guard_signal_fn next;
	struct signal_guard_written written = { .wrote = false };
	signal_guard_handler previous;
	int saved_errno = errno, error;

	signal_guard_resolve_all();
	next = (signal_guard_signal_fn)signal_guard_next((void **)&signal_guard_next_signal[api],
							 signal_guard_names[api]);

	if (next == NULL) {
		errno = ENOSYS;
		return SIG_ERR;
	}
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
		errno = saved_errno;
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

/* The look for foreign handlers, given the thread's mask: system calls. */
static bool signal_guard_foreign_maybe(const sigset_t *blocked)
{
	signal_guard_sigaction_fn next = signal_guard_real_sigaction();
	stack_t stack;

	/* On the alternate stack, a handler runs: none of ours (the depth
	 * would say), so a foreign one. */
	if (sigaltstack(NULL, &stack) != 0 || (stack.ss_flags & SS_ONSTACK))
		return true;
	/* A foreign handler runs with its signal blocked, unless SA_NODEFER:
	 * that one cannot be told from a thread that blocks it. */
	if (next == NULL)
		return true;
	for (int sig = 1; sig < NSIG; sig++) {
		struct sigaction action;

		if (sigismember(blocked, sig) != 1 || next(sig, NULL, &action) != 0)
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
 * the caller's is kept, and so are frames beyond SIGNAL_GUARD_FRAMES: the
 * look decides for those. */
static void signal_guard_forget_left(uintptr_t here)
{
	struct signal_guard_thread *t = &signal_guard_thread;
	unsigned depth = t->depth;

	while (depth > 0 && depth <= SIGNAL_GUARD_FRAMES && t->frames[depth - 1] < here)
		depth--;
	t->depth = depth;
}

/* Forgets every handler this thread entered: none runs. */
static void signal_guard_forget_all(void)
{
	struct signal_guard_thread *t = &signal_guard_thread;

	t->depth = 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->running = 0;
	t->nodefer = false;
	t->depth_look_at_ns = 0;
}

/* libc's coarse monotonic clock, read without a system call (vDSO). */
static uint64_t signal_guard_now_ns(void)
{
	struct timespec ts = { 0, 0 };

	libc_clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return timespec_to_ns(&ts);
}

/* Whether a handler entered through a trampoline may still run on this
 * thread. The kernel blocks a handler's signal while it runs (unless
 * SA_NODEFER, which this thread then waits on for ever), and siglongjmp
 * to a sigsetjmp(env, 1) restores the mask: with none of the entered
 * signals blocked, none of their handlers runs. A plain longjmp that
 * leaves one blocked keeps the thread waiting, which is safe. */
static bool signal_guard_entered_may_run(const sigset_t *blocked)
{
	uint64_t running = signal_guard_thread.running;

	for (int sig = 1; sig < NSIG; sig++)
		if ((running & signal_guard_bit(sig)) && sigismember(blocked, sig) == 1)
			return true;
	return false;
}

bool signal_guard_may_start(void)
{
	struct signal_guard_thread *t = &signal_guard_thread;
	int saved_errno;
	sigset_t blocked;
	bool maybe;

	if (t->depth > 0) {
		signal_guard_forget_left((uintptr_t)__builtin_frame_address(0));
		if (t->depth == 0) {
			signal_guard_forget_all();
		} else if (t->nodefer) {
			return false;
		}
	} else if (t->depth_look_at_ns != 0) {
		/* The handlers returned: a later one waits its own interval. */
		t->depth_look_at_ns = 0;
	}
	saved_errno = errno;
	if (t->depth > 0) {
		/* A handler runs, or one was left by longjmp: look only after
		 * the interval from the first call that saw it, so that a
		 * handler's own calls make no system call in their first
		 * half-second. */
		uint64_t now = signal_guard_now_ns();

		if (t->depth_look_at_ns == 0)
			t->depth_look_at_ns = now + SIGNAL_GUARD_LOOK_INTERVAL_NS;
		if (now < t->depth_look_at_ns) {
			errno = saved_errno;
			return false;
		}
		t->depth_look_at_ns = now + SIGNAL_GUARD_LOOK_INTERVAL_NS;
		if (pthread_sigmask(SIG_BLOCK, NULL, &blocked) != 0 ||
		    signal_guard_entered_may_run(&blocked)) {
			errno = saved_errno;
			return false;
		}
		signal_guard_forget_all();
	} else {
		if (t->look_at_ns != 0 && signal_guard_now_ns() < t->look_at_ns) {
			errno = saved_errno;
			return false;
		}
		if (pthread_sigmask(SIG_BLOCK, NULL, &blocked) != 0) {
			t->look_at_ns = signal_guard_now_ns() + SIGNAL_GUARD_LOOK_INTERVAL_NS;
			errno = saved_errno;
			return false;
		}
	}
	maybe = signal_guard_foreign_maybe(&blocked);
	t->look_at_ns = maybe ? signal_guard_now_ns() + SIGNAL_GUARD_LOOK_INTERVAL_NS : 0;
	errno = saved_errno;
	return !maybe;
}
