/* What the signal guard's files share, and nothing else of the library
 * may use: signal_guard_trampoline.c (the trampolines, which count the
 * handlers running, and the program's handlers they call),
 * signal_guard.c (the installs) and signal_guard_look.c (the look before
 * a thread start). */
#ifndef FASTTIME_SIGNAL_GUARD_INTERNAL_H
#define FASTTIME_SIGNAL_GUARD_INTERNAL_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "signal_guard.h"

typedef void (*signal_guard_info_handler)(int, siginfo_t *, void *);
typedef int (*signal_guard_sigaction_fn)(int, const struct sigaction *, struct sigaction *);

/* Slots per signal for the program's handler, each behind its own
 * trampolines. */
#define SIGNAL_GUARD_SLOTS 2u

/* The program's handlers, by slot and signal, and whether the action made
 * with the slot's trampoline had SA_NODEFER. Defined in
 * signal_guard_trampoline.c. Written only by the install that holds the
 * signal's flag (signal_guard.c), in the slot the kernel's current
 * trampoline does not read, before the system call that lets the kernel
 * run the trampoline that reads it; put back as it was if the kernel
 * refused. Read by the trampolines, inside handlers on any thread, and by
 * the installs (the program's handler in place of a trampoline). No lock:
 * handlers are stored with release and loaded with acquire, the nodefer
 * flags relaxed; only the holder, the slot's one writer, reads it plainly
 * (what to put back). */
struct signal_guard_slots {
	signal_guard_handler plain[SIGNAL_GUARD_SLOTS][NSIG];
	signal_guard_info_handler info[SIGNAL_GUARD_SLOTS][NSIG];
	bool nodefer[SIGNAL_GUARD_SLOTS][NSIG];
};
extern __attribute__((visibility("hidden"))) struct signal_guard_slots signal_guard_slots;

/* sig's bit in a mask of signals (struct signal_guard_thread). */
static inline uint64_t signal_guard_bit(int sig)
{
	return 1ull << ((unsigned)sig - 1u);
}

/* signal_guard_trampoline.c: the trampoline of slot, plain or SA_SIGINFO. */
void *signal_guard_trampoline(unsigned slot, bool siginfo);
/* Whether the library wraps handler: a function, not a disposition. */
bool signal_guard_wraps(signal_guard_handler handler);
/* Whether handler is one of the library's trampolines. */
bool signal_guard_is_trampoline(const void *handler);
/* The program's handler in place of a trampoline the kernel reported. */
void *signal_guard_unwrap(int sig, void *handler);

/* signal_guard.c: the next sigaction (libc's, or an interposer's beneath
 * ours); NULL if there is none. */
signal_guard_sigaction_fn signal_guard_real_sigaction(void);

#endif
