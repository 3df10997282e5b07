/* The trampolines: each handler the program installs through libc runs
 * behind one (plain, or SA_SIGINFO) that counts, in this thread's
 * signal_guard_thread, the handlers running, whatever the signal mask or
 * the action say meanwhile; the kernel keeps the program's own flags and
 * mask. Two slots per signal, each with its own pair of trampolines, hold
 * the program's handlers (signal_guard_slots, written by the installs in
 * signal_guard.c), so that the trampoline an action names tells which
 * install made it. Runs inside handlers: no lock, no system call. */
#include "config.h"

#include "signal_guard_internal.h"

/* Initial-exec, as signal_guard.h declares it: the trampolines read it
 * inside handlers, where a dynamic TLS lookup (__tls_get_addr) has no place. */
__thread struct signal_guard_thread signal_guard_thread __attribute__((tls_model("initial-exec")));
struct signal_guard_slots signal_guard_slots;

/* What a trampoline saw on entry, put back when it leaves. */
struct signal_guard_entry {
	unsigned depth;
	bool nodefer;
	uint64_t running;
	uintptr_t frame; /* what the ring held where this entry's frame goes */
	uintptr_t beyond_low, beyond_high;
};

/* Marks a handler for sig as running on this thread, its trampoline frame
 * at frame. A top entry whose frame is the same one was left (two handlers
 * running cannot share a frame): this one takes its place, so that probes
 * left by siglongjmp from one place do not pile up. The frame is stored
 * before the depth goes up, so that a handler nesting in between, which
 * puts back what it found, leaves the ring as it was. Leaving restores
 * what was seen on entry, which also forgets handlers nested inside this
 * one that were left by longjmp. */
static inline struct signal_guard_entry signal_guard_enter(int sig, unsigned slot, uintptr_t frame)
{
	struct signal_guard_thread *t = &signal_guard_thread;
	unsigned depth = t->depth;
	bool replaces = depth > 0 && t->frames[(depth - 1) % SIGNAL_GUARD_RING] == frame;
	struct signal_guard_entry entry;

	if (replaces)
		depth--;
	entry = (struct signal_guard_entry){ depth,	    t->nodefer,
					     t->running,    t->frames[depth % SIGNAL_GUARD_RING],
					     t->beyond_low, t->beyond_high };
	/* The first handler of a thread that seemed to run none: its own
	 * calls wait a whole interval before any look. */
	if (depth == 0)
		t->depth_look_at_ns = 0;
	t->running = entry.running | signal_guard_bit(sig);
	t->nodefer = entry.nodefer ||
		     __atomic_load_n(&signal_guard_slots.nodefer[slot][sig], __ATOMIC_RELAXED);
	/* The entry whose frame this one's pushes out of the ring is summed
	 * up by the range of such frames. */
	if (!replaces && depth >= SIGNAL_GUARD_RING) {
		if (depth == SIGNAL_GUARD_RING || entry.frame < t->beyond_low)
			t->beyond_low = entry.frame;
		if (depth == SIGNAL_GUARD_RING || entry.frame > t->beyond_high)
			t->beyond_high = entry.frame;
	}
	t->frames[depth % SIGNAL_GUARD_RING] = frame;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->depth = depth + 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	return entry;
}

/* Marks the handler entered with entry as returned. The ring is put back
 * before the depth comes down, so that a handler nesting in between finds
 * this entry still counted and uses the next place. */
static inline void signal_guard_leave(const struct signal_guard_entry *entry)
{
	struct signal_guard_thread *t = &signal_guard_thread;

	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->frames[entry->depth % SIGNAL_GUARD_RING] = entry->frame;
	t->beyond_low = entry->beyond_low;
	t->beyond_high = entry->beyond_high;
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
	handler = __atomic_load_n(&signal_guard_slots.plain[slot][sig], __ATOMIC_ACQUIRE);
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
	handler = __atomic_load_n(&signal_guard_slots.info[slot][sig], __ATOMIC_ACQUIRE);
	entry = signal_guard_enter(sig, slot, frame);
	if (handler != NULL)
		handler(sig, info, context);
	signal_guard_leave(&entry);
}

/* The trampoline for a plain handler in slot 0. */
static void signal_guard_plain_0(int sig)
{
	signal_guard_run_plain(0, sig, (uintptr_t)__builtin_frame_address(0));
}

/* The trampoline for a plain handler in slot 1. */
static void signal_guard_plain_1(int sig)
{
	signal_guard_run_plain(1, sig, (uintptr_t)__builtin_frame_address(0));
}

/* The trampoline for an SA_SIGINFO handler in slot 0. */
static void signal_guard_info_0(int sig, siginfo_t *info, void *context)
{
	signal_guard_run_info(0, sig, info, context, (uintptr_t)__builtin_frame_address(0));
}

/* The trampoline for an SA_SIGINFO handler in slot 1. */
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

/* The trampoline an install puts in the kernel's action for slot. */
void *signal_guard_trampoline(unsigned slot, bool siginfo)
{
	if (siginfo)
		return (void *)signal_guard_info_trampolines[slot];
	return (void *)signal_guard_plain_trampolines[slot];
}

/* A handler the library wraps: a function, not a disposition (SIG_DFL,
 * SIG_IGN, SIG_HOLD) nor SIG_ERR, which go to libc untouched. */
bool signal_guard_wraps(signal_guard_handler handler)
{
	return handler != SIG_ERR && (uintptr_t)handler > 2u;
}

/* Whether handler is one of ours, which no install wraps again. */
bool signal_guard_is_trampoline(const void *handler)
{
	for (unsigned slot = 0; slot < SIGNAL_GUARD_SLOTS; slot++)
		if (handler == (const void *)signal_guard_plain_trampolines[slot] ||
		    handler == (const void *)signal_guard_info_trampolines[slot])
			return true;
	return false;
}

/* The program's handler in place of a trampoline the kernel reported. */
void *signal_guard_unwrap(int sig, void *handler)
{
	for (unsigned slot = 0; slot < SIGNAL_GUARD_SLOTS; slot++) {
		if (handler == (void *)signal_guard_plain_trampolines[slot])
			return (void *)__atomic_load_n(&signal_guard_slots.plain[slot][sig],
						       __ATOMIC_ACQUIRE);
		if (handler == (void *)signal_guard_info_trampolines[slot])
			return (void *)__atomic_load_n(&signal_guard_slots.info[slot][sig],
						       __ATOMIC_ACQUIRE);
	}
	return handler;
}
