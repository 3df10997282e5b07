/* A shim beneath libfasttime's signal interposers, preloaded after it (and
 * after the tap) by the sigchain tests: it is the "next" sigaction and
 * signal the library calls.
 *
 * It can stop one call inside itself, as libjsig's signal() waits while the
 * JVM installs its own handlers: the gate, once set for a signal, holds the
 * first sigaction or signal() for that signal until the test opens it, or
 * for 10 s at most (then it says so: a test that needed it opened failed).
 * It also counts, per thread, the calls that reach it and the library's
 * calls that would be system calls of its own (the signal mask, the pid).
 * Not sigaltstack: ThreadSanitizer's runtime calls it before it can run
 * instrumented code such as ours. */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SIGSHIM_EXPORT __attribute__((visibility("default")))
/* The longest a held call waits for the gate to open. */
#define SIGSHIM_GATE_LIMIT_NS (10ull * 1000000000ull)

/* What this thread's calls through the shim were. */
struct sigshim_counts {
	uint64_t sigaction; /* sigaction calls that reached the shim */
	uint64_t signal;    /* signal() calls */
	uint64_t sigmask;   /* pthread_sigmask and sigprocmask */
	uint64_t getpid;
};

static __thread struct sigshim_counts sigshim_counts __attribute__((tls_model("initial-exec")));

SIGSHIM_EXPORT void sigshim_get_counts(struct sigshim_counts *counts);
SIGSHIM_EXPORT void sigshim_get_counts(struct sigshim_counts *counts)
{
	*counts = sigshim_counts;
}

/* The next definition after ours, found on first use. */
static void *sigshim_next(void **slot, const char *name)
{
	void *fn = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

	if (fn == NULL) {
		fn = dlsym(RTLD_NEXT, name);
		__atomic_store_n(slot, fn, __ATOMIC_RELEASE);
	}
	return fn;
}

static void *sigshim_sigaction_next, *sigshim_signal_next, *sigshim_pthread_sigmask_next,
    *sigshim_sigprocmask_next, *sigshim_getpid_next;

/* The gate: the signal it waits for (0: none), whether a call is inside,
 * whether it is open, and whether a held call gave up waiting. */
static int sigshim_gate_sig;
static bool sigshim_gate_inside, sigshim_gate_open, sigshim_gate_gave_up;

/* Holds the next sigaction or signal() for sig. */
SIGSHIM_EXPORT void sigshim_gate_set(int sig);
SIGSHIM_EXPORT void sigshim_gate_set(int sig)
{
	__atomic_store_n(&sigshim_gate_open, false, __ATOMIC_RELEASE);
	__atomic_store_n(&sigshim_gate_gave_up, false, __ATOMIC_RELEASE);
	__atomic_store_n(&sigshim_gate_inside, false, __ATOMIC_RELEASE);
	__atomic_store_n(&sigshim_gate_sig, sig, __ATOMIC_RELEASE);
}

/* Whether a call is held inside now. */
SIGSHIM_EXPORT bool sigshim_gate_holding(void);
SIGSHIM_EXPORT bool sigshim_gate_holding(void)
{
	return __atomic_load_n(&sigshim_gate_inside, __ATOMIC_ACQUIRE);
}

SIGSHIM_EXPORT void sigshim_gate_release(void);
SIGSHIM_EXPORT void sigshim_gate_release(void)
{
	__atomic_store_n(&sigshim_gate_open, true, __ATOMIC_RELEASE);
}

/* Whether the held call waited the whole limit: nobody opened the gate. */
SIGSHIM_EXPORT bool sigshim_gate_timed_out(void);
SIGSHIM_EXPORT bool sigshim_gate_timed_out(void)
{
	return __atomic_load_n(&sigshim_gate_gave_up, __ATOMIC_ACQUIRE);
}

/* The raw monotonic clock: neither the library's nor one it may count. */
static uint64_t sigshim_now_ns(void)
{
	struct timespec ts;

	syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The first call for the gate's signal waits here until the gate opens. */
static void sigshim_gate_pass(int sig)
{
	int expected = sig;
	uint64_t start;
	int saved = errno;

	if (sig == 0 || !__atomic_compare_exchange_n(&sigshim_gate_sig, &expected, 0, false,
						     __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&sigshim_gate_inside, true, __ATOMIC_RELEASE);
	start = sigshim_now_ns();
	while (!__atomic_load_n(&sigshim_gate_open, __ATOMIC_ACQUIRE)) {
		struct timespec ms = { 0, 1000000 };

		if (sigshim_now_ns() - start > SIGSHIM_GATE_LIMIT_NS) {
			__atomic_store_n(&sigshim_gate_gave_up, true, __ATOMIC_RELEASE);
			break;
		}
		nanosleep(&ms, NULL);
	}
	__atomic_store_n(&sigshim_gate_inside, false, __ATOMIC_RELEASE);
	errno = saved;
}

SIGSHIM_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	int (*next)(int, const struct sigaction *, struct sigaction *) =
	    (int (*)(int, const struct sigaction *, struct sigaction *))sigshim_next(
		&sigshim_sigaction_next, "sigaction");

	sigshim_counts.sigaction++;
	sigshim_gate_pass(sig);
	return next(sig, act, old);
}

SIGSHIM_EXPORT void (*signal(int sig, void (*handler)(int)))(int)
{
	void (*(*next)(int, void (*)(int)))(int) =
	    (void (*(*)(int, void (*)(int)))(int))sigshim_next(&sigshim_signal_next, "signal");

	sigshim_counts.signal++;
	sigshim_gate_pass(sig);
	return next(sig, handler);
}

SIGSHIM_EXPORT int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	int (*next)(int, const sigset_t *, sigset_t *) =
	    (int (*)(int, const sigset_t *, sigset_t *))sigshim_next(&sigshim_pthread_sigmask_next,
								     "pthread_sigmask");

	sigshim_counts.sigmask++;
	return next(how, set, old);
}

SIGSHIM_EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	int (*next)(int, const sigset_t *, sigset_t *) =
	    (int (*)(int, const sigset_t *, sigset_t *))sigshim_next(&sigshim_sigprocmask_next,
								     "sigprocmask");

	sigshim_counts.sigmask++;
	return next(how, set, old);
}

SIGSHIM_EXPORT pid_t getpid(void)
{
	pid_t (*next)(void) = (pid_t(*)(void))sigshim_next(&sigshim_getpid_next, "getpid");

	sigshim_counts.getpid++;
	return next();
}

/* With SIGSHIM_INSTALLER=1, a thread that installs SIGWINCH handlers for
 * up to 3 s from the start of the process, as a native library loaded into
 * a JVM may while the JVM installs its own (sigchain-jvm.test). */
static void sigshim_installer_handler(int sig)
{
	(void)sig;
}

static void *sigshim_installer_main(void *arg)
{
	uint64_t start = sigshim_now_ns();

	(void)arg;
	while (sigshim_now_ns() - start < 3000000000ull) {
		struct sigaction action;

		/* The program's own functions: the library's, then libjsig's. */
		signal(SIGWINCH, sigshim_installer_handler);
		action.sa_handler = SIG_DFL;
		sigemptyset(&action.sa_mask);
		action.sa_flags = 0;
		sigaction(SIGWINCH, &action, NULL);
	}
	return NULL;
}

__attribute__((constructor)) static void sigshim_init(void)
{
	const char *installer = getenv("SIGSHIM_INSTALLER");
	pthread_t thread;

	if (installer != NULL && installer[0] == '1' &&
	    pthread_create(&thread, NULL, sigshim_installer_main, NULL) == 0)
		pthread_detach(thread);
}
