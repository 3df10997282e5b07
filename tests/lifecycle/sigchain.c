/* Installs of signal handlers beside one another, with a "next" sigaction
 * and signal() beneath the library (tests/lifecycle/sigshim.c) that can stop
 * a call inside itself, as libjsig's signal() waits while the JVM installs
 * its own handlers.
 *
 * "sigchain jsig": a thread's signal(SIGWINCH) is stopped inside the next
 * signal() until main's sigaction(SIGUSR2) has returned. It must return:
 * no install waits for another.
 *
 * "sigchain jsig-same": the same, but main installs SIGWINCH too while the
 * thread's install of it is stopped: main's returns, the kernel ends with
 * the last one's handler, and each call reports the one before it.
 *
 * "sigchain fork": a fork made while another thread's install is stopped
 * inside the next function: the child installs that signal behind the
 * trampoline all the same.
 *
 * "sigchain fifo": a thread stopped inside the next sigaction, and a
 * SCHED_FIFO thread on the same CPU installing the same signal and another:
 * the real-time thread's installs return while the other is still stopped.
 * Skips without CAP_SYS_NICE.
 *
 * "sigchain syscalls": installs and queries through sigaction and signal()
 * make no call of the library's own to the signal mask or the pid, and one
 * call each to the next function. */
#define _GNU_SOURCE
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "life.h"

/* As tests/lifecycle/sigshim.c counts. */
struct sigchain_counts {
	uint64_t sigaction, signal, sigmask, getpid;
};

/* The shim's controls, found at start. */
static void (*sigchain_gate_set)(int sig);
static bool (*sigchain_gate_holding)(void);
static void (*sigchain_gate_release)(void);
static bool (*sigchain_gate_timed_out)(void);
static void (*sigchain_get_counts)(struct sigchain_counts *counts);

static void sigchain_find_shim(void)
{
	sigchain_gate_set = (void (*)(int))dlsym(RTLD_DEFAULT, "sigshim_gate_set");
	sigchain_gate_holding = (bool (*)(void))dlsym(RTLD_DEFAULT, "sigshim_gate_holding");
	sigchain_gate_release = (void (*)(void))dlsym(RTLD_DEFAULT, "sigshim_gate_release");
	sigchain_gate_timed_out = (bool (*)(void))dlsym(RTLD_DEFAULT, "sigshim_gate_timed_out");
	sigchain_get_counts =
	    (void (*)(struct sigchain_counts *))dlsym(RTLD_DEFAULT, "sigshim_get_counts");
	if (sigchain_gate_set == NULL || sigchain_gate_holding == NULL ||
	    sigchain_gate_release == NULL || sigchain_gate_timed_out == NULL ||
	    sigchain_get_counts == NULL)
		life_fail("the shim (liblifesigshim.so) is not preloaded after libfasttime.so");
}

static atomic_uint sigchain_calls[NSIG];

static void sigchain_handler_a(int sig)
{
	atomic_fetch_add(&sigchain_calls[sig], 1);
}

static void sigchain_handler_b(int sig)
{
	atomic_fetch_add(&sigchain_calls[sig], 100);
}

#define SIGCHAIN_EXPECT(condition)                                                                 \
	do {                                                                                       \
		if (!(condition))                                                                  \
			life_fail("line %d: %s", __LINE__, #condition);                            \
	} while (0)

static void sigchain_action(struct sigaction *action, void (*handler)(int))
{
	memset(action, 0, sizeof *action);
	action->sa_handler = handler;
	sigemptyset(&action->sa_mask);
}

/* The handler sigaction reports for sig now. */
static void (*sigchain_query(int sig))(int)
{
	struct sigaction now;

	SIGCHAIN_EXPECT(sigaction(sig, NULL, &now) == 0);
	return now.sa_handler;
}

/* Waits (up to 10 s) until the shim holds a call inside. */
static void sigchain_wait_held(const char *who)
{
	for (int i = 0; i < 1000 && !sigchain_gate_holding(); i++)
		life_sleep_ms(10);
	if (!sigchain_gate_holding())
		life_fail("%s never reached the next function", who);
}

/* --- jsig --- */

struct sigchain_installer {
	int sig;
	void (*handler)(int);
	void (*previous)(int);
	bool use_sigaction;
};

static void *sigchain_installer_main(void *arg)
{
	struct sigchain_installer *installer = arg;

	if (installer->use_sigaction) {
		struct sigaction action, old;

		sigchain_action(&action, installer->handler);
		installer->previous =
		    sigaction(installer->sig, &action, &old) == 0 ? old.sa_handler : SIG_ERR;
	} else {
		installer->previous = signal(installer->sig, installer->handler);
	}
	return NULL;
}

/* Starts a thread whose install of sig is stopped in the next function. */
static pthread_t sigchain_start_held(struct sigchain_installer *installer)
{
	pthread_t thread;

	sigchain_gate_set(installer->sig);
	if (pthread_create(&thread, NULL, sigchain_installer_main, installer) != 0)
		life_fail("cannot start a thread");
	sigchain_wait_held("the held install");
	return thread;
}

static void sigchain_jsig(bool same)
{
	struct sigchain_installer held = { SIGWINCH, sigchain_handler_a, NULL, false };
	int other = same ? SIGWINCH : SIGUSR2;
	struct sigaction action, old;
	pthread_t thread;
	bool still_held;

	thread = sigchain_start_held(&held);
	/* The JVM's install, while the thread's signal() waits for it. */
	sigchain_action(&action, sigchain_handler_b);
	SIGCHAIN_EXPECT(sigaction(other, &action, &old) == 0);
	still_held = sigchain_gate_holding();
	sigchain_gate_release();
	pthread_join(thread, NULL);
	if (!still_held || sigchain_gate_timed_out())
		life_fail("an install of %s waited for the thread stopped inside the next "
			  "signal(SIGWINCH): the held call gave up after 10 s",
			  same ? "the same signal" : "another signal");
	SIGCHAIN_EXPECT(old.sa_handler == SIG_DFL);
	/* The kernel ordered the two: main's, then the thread's. */
	SIGCHAIN_EXPECT(held.previous == (same ? sigchain_handler_b : SIG_DFL));
	SIGCHAIN_EXPECT(sigchain_query(SIGWINCH) == sigchain_handler_a);
	raise(SIGWINCH);
	SIGCHAIN_EXPECT(atomic_load(&sigchain_calls[SIGWINCH]) == 1);
	if (!same) {
		raise(SIGUSR2);
		SIGCHAIN_EXPECT(atomic_load(&sigchain_calls[SIGUSR2]) == 100);
	}
	/* And the signal is the library's again at the next install. */
	SIGCHAIN_EXPECT(signal(SIGWINCH, sigchain_handler_b) == sigchain_handler_a);
	raise(SIGWINCH);
	SIGCHAIN_EXPECT(atomic_load(&sigchain_calls[SIGWINCH]) == 101);
	life_say("an install of %s returned while another thread's signal(SIGWINCH) was stopped "
		 "inside the next signal()",
		 same ? "SIGWINCH" : "SIGUSR2");
}

/* --- fifo --- */

struct sigchain_fifo {
	atomic_bool done;
	void (*previous)(int);
	bool ok;
};

/* The real-time installer: the held signal, then another, then lets the
 * held one go. */
static void *sigchain_fifo_main(void *arg)
{
	struct sigchain_fifo *fifo = arg;
	struct sigaction action, old;
	bool ok = true;

	sigchain_action(&action, sigchain_handler_b);
	ok &= sigaction(SIGUSR1, &action, &old) == 0;
	fifo->previous = old.sa_handler;
	ok &= sigaction(SIGUSR2, &action, NULL) == 0;
	ok &= signal(SIGUSR2, sigchain_handler_a) == sigchain_handler_b;
	ok &= sigaction(SIGUSR1, NULL, &old) == 0 && old.sa_handler == sigchain_handler_b;
	fifo->ok = ok;
	/* Still held: nothing here waited for it. */
	atomic_store(&fifo->done, sigchain_gate_holding());
	sigchain_gate_release();
	return NULL;
}

static void sigchain_fifo(void)
{
	struct sigchain_installer held = { SIGUSR1, sigchain_handler_a, NULL, true };
	struct sigchain_fifo fifo = { .ok = false };
	struct sched_param param = { .sched_priority = 1 };
	pthread_attr_t attr;
	cpu_set_t one;
	pthread_t thread, rt;
	int cpu = -1, rc;

	CPU_ZERO(&one);
	if (sched_getaffinity(0, sizeof one, &one) != 0)
		life_fail("sched_getaffinity: %s", strerror(errno));
	for (int c = 0; c < CPU_SETSIZE && cpu < 0; c++)
		if (CPU_ISSET(c, &one))
			cpu = c;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	thread = sigchain_start_held(&held);
	if (pthread_setaffinity_np(thread, sizeof one, &one) != 0)
		life_fail("cannot pin the held thread");
	pthread_attr_init(&attr);
	pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&attr, SCHED_FIFO);
	pthread_attr_setschedparam(&attr, &param);
	pthread_attr_setaffinity_np(&attr, sizeof one, &one);
	rc = pthread_create(&rt, &attr, sigchain_fifo_main, &fifo);
	pthread_attr_destroy(&attr);
	if (rc == EPERM) {
		sigchain_gate_release();
		pthread_join(thread, NULL);
		life_skip("SCHED_FIFO needs CAP_SYS_NICE");
	}
	if (rc != 0)
		life_fail("cannot start the SCHED_FIFO thread: %s", strerror(rc));
	pthread_join(rt, NULL);
	pthread_join(thread, NULL);
	if (sigchain_gate_timed_out() || !atomic_load(&fifo.done))
		life_fail("a SCHED_FIFO thread's installs waited for an ordinary thread stopped "
			  "inside the next sigaction on the same CPU (%s)",
			  sigchain_gate_timed_out() ? "the held call gave up after 10 s"
						    : "it returned only after the hold");
	SIGCHAIN_EXPECT(fifo.ok);
	SIGCHAIN_EXPECT(fifo.previous == SIG_DFL);
	SIGCHAIN_EXPECT(held.previous == sigchain_handler_b);
	SIGCHAIN_EXPECT(sigchain_query(SIGUSR1) == sigchain_handler_a);
	life_say("a SCHED_FIFO thread installed SIGUSR1 and SIGUSR2 on CPU %d while an ordinary "
		 "thread there was stopped inside the next sigaction(SIGUSR1)",
		 cpu);
}

/* --- fork --- */

/* The kernel's handler for sig, around the library. */
static void *sigchain_kernel_handler(int sig)
{
	struct {
		void *handler;
		unsigned long flags;
		void *restorer;
		uint64_t mask;
	} kernel;

	if (syscall(SYS_rt_sigaction, sig, NULL, &kernel, sizeof kernel.mask) != 0)
		life_fail("rt_sigaction: %s", strerror(errno));
	return kernel.handler;
}

/* A fork made while another thread's install of SIGUSR1 is stopped: the
 * child, which has no such thread, installs SIGUSR1 behind the trampoline. */
static void sigchain_fork(void)
{
	struct sigchain_installer held = { SIGUSR1, sigchain_handler_a, NULL, false };
	pthread_t thread;
	pid_t pid;
	int status;

	thread = sigchain_start_held(&held);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		life_fail("fork: %s", strerror(errno));
	if (pid == 0) {
		struct sigaction action;

		alarm(30);
		sigchain_action(&action, sigchain_handler_b);
		if (sigaction(SIGUSR1, &action, NULL) != 0)
			_exit(2);
		_exit(sigchain_kernel_handler(SIGUSR1) == (void *)sigchain_handler_b ? 3 : 0);
	}
	status = life_wait_child(pid, 35);
	sigchain_gate_release();
	pthread_join(thread, NULL);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
		life_fail(
		    "a fork child's install of a signal that another thread of its parent was "
		    "installing did not go behind the trampoline");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		life_fail("fork child: status 0x%x", status);
	life_say("a fork child installs behind the trampoline a signal its parent's other thread "
		 "was installing");
}

/* --- system calls --- */

static void sigchain_syscalls(void)
{
	struct sigchain_counts before, after;
	struct sigaction action, old;
	unsigned rounds = 1000, sigactions = 0, signals = 0;

	/* The first calls find the next functions (dlsym). */
	sigchain_action(&action, sigchain_handler_a);
	SIGCHAIN_EXPECT(sigaction(SIGUSR1, &action, NULL) == 0);
	SIGCHAIN_EXPECT(signal(SIGUSR2, sigchain_handler_a) != SIG_ERR);
	sigchain_get_counts(&before);
	for (unsigned i = 0; i < rounds; i++) {
		sigchain_action(&action, (i & 1) ? sigchain_handler_a : sigchain_handler_b);
		SIGCHAIN_EXPECT(sigaction(SIGUSR1, &action, &old) == 0);
		SIGCHAIN_EXPECT(sigaction(SIGUSR1, NULL, &old) == 0);
		SIGCHAIN_EXPECT(old.sa_handler == action.sa_handler);
		SIGCHAIN_EXPECT(signal(SIGUSR2, action.sa_handler) != SIG_ERR);
		sigchain_action(&action, SIG_DFL);
		SIGCHAIN_EXPECT(sigaction(SIGURG, &action, NULL) == 0);
		sigactions += 3;
		signals++;
	}
	sigchain_get_counts(&after);
	printf("sigchain: %u sigaction and %u signal() calls: %llu and %llu reached the next "
	       "functions; the library made %llu signal-mask and %llu getpid calls\n",
	       sigactions, signals, (unsigned long long)(after.sigaction - before.sigaction),
	       (unsigned long long)(after.signal - before.signal),
	       (unsigned long long)(after.sigmask - before.sigmask),
	       (unsigned long long)(after.getpid - before.getpid));
	if (after.sigmask != before.sigmask || after.getpid != before.getpid)
		life_fail("installs and queries made calls of the library's own that are system "
			  "calls");
#ifdef __SANITIZE_THREAD__
	/* ThreadSanitizer's signal() calls the exported sigaction, with or
	 * without the library: one more each. */
	sigactions += signals;
#endif
	if (after.sigaction - before.sigaction != sigactions ||
	    after.signal - before.signal != signals)
		life_fail("installs and queries did not call the next function once each");
	life_say("%u installs and queries: one call each to the next function, none of the "
		 "library's own",
		 sigactions + signals);
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";

	life_begin("sigchain");
	sigchain_find_shim();
	life_watchdog(60);
	if (strcmp(what, "jsig") == 0)
		sigchain_jsig(false);
	else if (strcmp(what, "jsig-same") == 0)
		sigchain_jsig(true);
	else if (strcmp(what, "fifo") == 0)
		sigchain_fifo();
	else if (strcmp(what, "fork") == 0)
		sigchain_fork();
	else if (strcmp(what, "syscalls") == 0)
		sigchain_syscalls();
	else
		life_fail("usage: sigchain jsig|jsig-same|fork|fifo|syscalls");
	return 0;
}
