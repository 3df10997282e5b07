/* The look before a thread start (signal_guard_may_start): whether a
 * handler may run on this thread. The trampolines' count answers without a
 * system call; handlers left by longjmp are forgotten by their frames, or
 * by a look at the alternate stack and the thread's mask; foreign handlers (installed around libc)
 * are looked for with system calls, at most every
 * SIGNAL_GUARD_LOOK_INTERVAL_NS per thread. Its only state is this
 * thread's signal_guard_thread. */
#include "config.h"

#include "signal_guard_internal.h"

#include <pthread.h>
#include <time.h>

#include "libc.h"
#include "timespec_ns.h"

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

/* Whether a trampoline frame was left: it lies below the caller's frame
 * here (the stack grows down, so the caller returned or jumped above it),
 * or on the alternate stack [alt_low, alt_high) while the caller is not on
 * it (a handler running there has the caller on it). */
static bool signal_guard_frame_left(uintptr_t frame, uintptr_t here, uintptr_t alt_low,
				    uintptr_t alt_high)
{
	return frame < here || (frame >= alt_low && frame < alt_high);
}

/* Whether every handler this thread entered was left, judged by their
 * frames: those in the ring one by one, those pushed out of it by their
 * range, which must lie below the caller's frame or on the alternate stack,
 * or span both where that stack reaches below the caller's frame. */
static bool signal_guard_all_left(uintptr_t here, uintptr_t alt_low, uintptr_t alt_high)
{
	const struct signal_guard_thread *t = &signal_guard_thread;
	unsigned depth = t->depth;
	unsigned first = depth > SIGNAL_GUARD_RING ? depth - SIGNAL_GUARD_RING : 0;

	for (unsigned i = first; i < depth; i++)
		if (!signal_guard_frame_left(t->frames[i % SIGNAL_GUARD_RING], here, alt_low,
					     alt_high))
			return false;
	if (first == 0)
		return true;
	if (t->beyond_high < here)
		return true;
	if (t->beyond_low >= alt_low && t->beyond_high < alt_high)
		return true;
	return alt_low <= here && t->beyond_high < alt_high;
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

/* The look at the handlers entered that their frames did not show left:
 * the alternate stack's range (the caller not on it), then, unless one had
 * SA_NODEFER, the signal mask. System calls. */
static bool signal_guard_left_by_look(uintptr_t here)
{
	stack_t stack;
	sigset_t blocked;

	if (sigaltstack(NULL, &stack) != 0 || (stack.ss_flags & SS_ONSTACK))
		return false;
	if (!(stack.ss_flags & SS_DISABLE) &&
	    signal_guard_all_left(here, (uintptr_t)stack.ss_sp,
				  (uintptr_t)stack.ss_sp + stack.ss_size))
		return true;
	if (signal_guard_thread.nodefer)
		return false;
	return pthread_sigmask(SIG_BLOCK, NULL, &blocked) == 0 &&
	       !signal_guard_entered_may_run(&blocked);
}

/* Whether this thread may create a thread now (signal_guard.h). */
bool signal_guard_may_start(void)
{
	struct signal_guard_thread *t = &signal_guard_thread;
	uintptr_t here = (uintptr_t)__builtin_frame_address(0);
	sigset_t blocked;
	bool maybe;

	if (t->depth > 0) {
		if (signal_guard_all_left(here, 0, 0))
			signal_guard_forget_all();
	} else if (t->depth_look_at_ns != 0) {
		/* The handlers returned: a later one waits its own interval. */
		t->depth_look_at_ns = 0;
	}
	if (t->depth > 0) {
		/* A handler runs, or one was left by longjmp: look only after
		 * the interval from the first call that saw it, so that a
		 * handler's own calls make no system call in their first
		 * half-second. */
		uint64_t now = signal_guard_now_ns();

		if (t->depth_look_at_ns == 0)
			t->depth_look_at_ns = now + SIGNAL_GUARD_LOOK_INTERVAL_NS;
		if (now < t->depth_look_at_ns)
			return false;
		t->depth_look_at_ns = now + SIGNAL_GUARD_LOOK_INTERVAL_NS;
		if (!signal_guard_left_by_look(here))
			return false;
		signal_guard_forget_all();
		if (pthread_sigmask(SIG_BLOCK, NULL, &blocked) != 0) {
			t->look_at_ns = signal_guard_now_ns() + SIGNAL_GUARD_LOOK_INTERVAL_NS;
			return false;
		}
	} else {
		if (t->look_at_ns != 0 && signal_guard_now_ns() < t->look_at_ns)
			return false;
		if (pthread_sigmask(SIG_BLOCK, NULL, &blocked) != 0) {
			t->look_at_ns = signal_guard_now_ns() + SIGNAL_GUARD_LOOK_INTERVAL_NS;
			return false;
		}
	}
	maybe = signal_guard_foreign_maybe(&blocked);
	t->look_at_ns = maybe ? signal_guard_now_ns() + SIGNAL_GUARD_LOOK_INTERVAL_NS : 0;
	return !maybe;
}
