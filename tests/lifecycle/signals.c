/* Signal handlers that read the clock.
 *
 * "signals first" (signals-first.test): the very first time call of a process
 * made inside a handler, while the interrupted main flow is busy in malloc:
 * the library starts its thread from there. Several short-lived children
 * each try it; one that hangs fails the test and shows where its threads wait.
 *
 * "signals" (signals.test): the main flow reads all five clocks in a loop while SIGALRM (an
 * interval timer) and SIGUSR1 (sent by another thread as fast as they are
 * handled) interrupt it, and the handlers, which may nest, read all five too.
 * Handlers run on the main thread, so main flow and handlers together must
 * never see a clock go back: every answer is checked against the largest this
 * thread had been given before the call began.
 *
 * Short: 20 children; 3 s. Soak (FASTTIME_SOAK=1): 200 children; 60 s.
 * "signals first N": N children. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "life.h"

enum signals_clock {
	SIGNALS_MONO,  /* clock_gettime(CLOCK_MONOTONIC), ns */
	SIGNALS_REAL,  /* clock_gettime(CLOCK_REALTIME), ns */
	SIGNALS_TOD,   /* gettimeofday, us */
	SIGNALS_TIME,  /* time, s */
	SIGNALS_TSGET, /* timespec_get(TIME_UTC), ns */
	SIGNALS_CLOCKS,
};

static const char *const signals_clock_names[SIGNALS_CLOCKS] = {
	"CLOCK_MONOTONIC", "CLOCK_REALTIME", "gettimeofday", "time", "timespec_get",
};

/* All touched by the main flow and by handlers on the same thread: lock-free
 * atomics, which are async-signal-safe, and signal fences for the order. */
static _Atomic uint64_t signals_seen[SIGNALS_CLOCKS];
static _Atomic uint64_t signals_backward[SIGNALS_CLOCKS];
static _Atomic uint64_t signals_worst_back[SIGNALS_CLOCKS];
static _Atomic uint64_t signals_handled[NSIG];
static _Atomic uint64_t signals_handler_reads, signals_main_reads, signals_failed_calls;
static _Atomic bool signals_stop;

/* Reads one clock through the preload, in its own unit. */
static uint64_t signals_read(enum signals_clock which)
{
	struct timespec ts;
	struct timeval tv;

	switch (which) {
	case SIGNALS_MONO:
		if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
			break;
		return life_ns(&ts);
	case SIGNALS_REAL:
		if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
			break;
		return life_ns(&ts);
	case SIGNALS_TOD:
		if (gettimeofday(&tv, NULL) != 0)
			break;
		return (uint64_t)tv.tv_sec * 1000000u + (uint64_t)tv.tv_usec;
	case SIGNALS_TIME: return (uint64_t)time(NULL);
	case SIGNALS_TSGET:
		if (timespec_get(&ts, TIME_UTC) != TIME_UTC)
			break;
		return life_ns(&ts);
	case SIGNALS_CLOCKS: break;
	}
	atomic_fetch_add(&signals_failed_calls, 1);
	return 0;
}

/* Raises *value to at least candidate; a handler may raise it meanwhile. */
static void signals_raise(_Atomic uint64_t *value, uint64_t candidate)
{
	uint64_t current = atomic_load_explicit(value, memory_order_relaxed);

	while (current < candidate &&
	       !atomic_compare_exchange_weak_explicit(value, &current, candidate,
						      memory_order_relaxed, memory_order_relaxed))
		;
}

/* Reads one clock; the answer may not be below what this thread saw before
 * the call began. A handler that interrupts between the read and the update
 * only weakens its own check (it compares with an older value): no false
 * alarm, and every completed read is counted before the next one starts. */
static void signals_check(enum signals_clock which)
{
	uint64_t before, now;

	before = atomic_load_explicit(&signals_seen[which], memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
	now = signals_read(which);
	atomic_signal_fence(memory_order_seq_cst);
	if (now < before) {
		atomic_fetch_add_explicit(&signals_backward[which], 1, memory_order_relaxed);
		signals_raise(&signals_worst_back[which], before - now);
	}
	signals_raise(&signals_seen[which], now);
}

/* What each handler does: all five clocks, errno left as it was. */
static void signals_handler(int sig)
{
	int saved = errno;

	for (int which = 0; which < SIGNALS_CLOCKS; which++)
		signals_check((enum signals_clock)which);
	atomic_fetch_add_explicit(&signals_handler_reads, SIGNALS_CLOCKS, memory_order_relaxed);
	atomic_fetch_add_explicit(&signals_handled[sig], 1, memory_order_relaxed);
	errno = saved;
}

struct signals_pinger {
	pthread_t target;
	unsigned max_spins;
};

/* Sends SIGUSR1 to the target thread again as soon as it has handled the
 * previous one (or after a while: a signal sent while one is pending merges). */
static void *signals_pinger_main(void *arg)
{
	struct signals_pinger *pinger = arg;

	while (!atomic_load_explicit(&signals_stop, memory_order_relaxed)) {
		uint64_t handled = atomic_load(&signals_handled[SIGUSR1]);

		pthread_kill(pinger->target, SIGUSR1);
		for (unsigned spins = 0;
		     spins < pinger->max_spins && atomic_load(&signals_handled[SIGUSR1]) == handled;
		     spins++)
			__builtin_ia32_pause();
	}
	return NULL;
}

/* Starts a pinger with every signal blocked, so that SIGALRM finds the main thread. */
static pthread_t signals_start_pinger(struct signals_pinger *pinger)
{
	sigset_t all, saved;
	pthread_t thread;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &saved);
	if (pthread_create(&thread, NULL, signals_pinger_main, pinger) != 0)
		life_fail("cannot start the pinger thread");
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	return thread;
}

/* Installs handler for sig, restarting interrupted system calls. */
static void signals_install(int sig, void (*handler)(int))
{
	struct sigaction action;

	memset(&action, 0, sizeof action);
	action.sa_handler = handler;
	/* No sa_mask: SIGALRM and SIGUSR1 handlers may nest, which is harder. */
	sigemptyset(&action.sa_mask);
	action.sa_flags = SA_RESTART;
	if (sigaction(sig, &action, NULL) != 0)
		life_fail("sigaction: %s", strerror(errno));
}

static _Atomic uint64_t signals_first_reads;

/* The first-call children's handler: reads the clock, whatever the
 * interrupted main flow holds. */
static void signals_first_handler(int sig)
{
	int saved = errno;
	struct timespec ts;

	(void)sig;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	time(NULL);
	atomic_fetch_add_explicit(&signals_first_reads, 1, memory_order_relaxed);
	errno = saved;
}

/* One child of the first-call test: its first time call is made in a handler
 * that interrupts malloc (sizes too large for the per-thread cache take the
 * arena lock each time). Returns the exit status for the child. */
static int signals_first_call_child(unsigned seed)
{
	struct signals_pinger pinger = { pthread_self(), 20000 };
	pthread_t thread;
	bool churned;

	signals_install(SIGUSR1, signals_first_handler);
	atomic_store(&signals_stop, false);
	thread = signals_start_pinger(&pinger);
	churned = life_churn_malloc(&signals_first_reads, 2000, seed, 50000000u);
	atomic_store(&signals_stop, true);
	pthread_join(thread, NULL);
	if (!churned)
		return 2;
	if (atomic_load(&signals_first_reads) < 2000)
		return 3;
	/* The thread the handler asked for must be there, or come soon. */
	for (int i = 0; i < 300 && life_threads_named("fasttime") == 0; i++) {
		life_mono_ns();
		life_sleep_ms(10);
	}
	return life_threads_named("fasttime") == 1 ? 0 : 4;
}

/* What a first-call child's status means. */
static const char *signals_first_status(int status)
{
	if (WIFSIGNALED(status))
		return strsignal(WTERMSIG(status));
	switch (WEXITSTATUS(status)) {
	case 2: return "malloc failed";
	case 3: return "too few signals handled";
	case 4: return "no refresh thread afterwards";
	case 66: return "a sanitizer report";
	}
	return "failed";
}

/* Children whose first time call is made inside a signal handler. */
static void signals_first_calls(unsigned children)
{
	for (unsigned c = 0; c < children; c++) {
		pid_t pid;
		int status;

		fflush(stdout);
		pid = fork();
		if (pid < 0)
			life_fail("fork: %s", strerror(errno));
		if (pid == 0)
			_exit(signals_first_call_child(c * 7919u + 1));
		/* A deadlock never ends; 30 s leaves room for a slow
		 * sanitizer build on a busy machine. */
		status = life_wait_child(pid, 30);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			life_fail("first call in a handler, child %u: status 0x%x (%s)", c, status,
				  signals_first_status(status));
	}
	life_say("first call inside a handler, interrupting malloc: %u children, none hung",
		 children);
}

/* Main flow and nested handlers, all five clocks, for seconds. */
static void signals_steady(unsigned seconds)
{
	struct signals_pinger pinger = { pthread_self(), 2000 };
	struct itimerval timer = { { 0, 50 }, { 0, 50 } };
	uint64_t end, tap_before, tap_total, all_reads;
	pthread_t thread;
	bool failed = false;

	/* The process's first time call belongs to signals-first.test: here the
	 * refresh thread is started before any handler reads the clock. */
	life_mono_ns();
	signals_install(SIGUSR1, signals_handler);
	signals_install(SIGALRM, signals_handler);
	atomic_store(&signals_stop, false);
	tap_before = life_fallthrough();
	thread = signals_start_pinger(&pinger);
	if (setitimer(ITIMER_REAL, &timer, NULL) != 0)
		life_fail("setitimer: %s", strerror(errno));

	end = life_libc_mono_ns() + seconds * LIFE_NS_PER_SEC;
	while (life_libc_mono_ns() < end) {
		for (int i = 0; i < 1000; i++)
			for (int which = 0; which < SIGNALS_CLOCKS; which++)
				signals_check((enum signals_clock)which);
		atomic_fetch_add_explicit(&signals_main_reads, 1000 * SIGNALS_CLOCKS,
					  memory_order_relaxed);
	}

	timer = (struct itimerval){ { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &timer, NULL);
	atomic_store(&signals_stop, true);
	pthread_join(thread, NULL);
	tap_total = life_fallthrough() - tap_before;
	all_reads = atomic_load(&signals_main_reads) + atomic_load(&signals_handler_reads);

	life_say("%s mode, %u s: %llu SIGALRM and %llu SIGUSR1 handled, %llu reads in handlers, "
		 "%llu in the main flow, %.1f%% answered from the TSC",
		 life_relaxed() ? "relaxed" : "ordered", seconds,
		 (unsigned long long)atomic_load(&signals_handled[SIGALRM]),
		 (unsigned long long)atomic_load(&signals_handled[SIGUSR1]),
		 (unsigned long long)atomic_load(&signals_handler_reads),
		 (unsigned long long)atomic_load(&signals_main_reads),
		 100.0 * (double)(all_reads - tap_total) / (double)all_reads);
	for (int which = 0; which < SIGNALS_CLOCKS; which++) {
		uint64_t back = atomic_load(&signals_backward[which]);

		life_say("  %-16s backward steps %llu (worst %llu)", signals_clock_names[which],
			 (unsigned long long)back,
			 (unsigned long long)atomic_load(&signals_worst_back[which]));
		failed |= back != 0;
	}
	if (atomic_load(&signals_failed_calls) != 0)
		life_fail("%llu time calls failed",
			  (unsigned long long)atomic_load(&signals_failed_calls));
	if (failed)
		life_fail("a clock went back between the main flow and its handlers");
	if (atomic_load(&signals_handled[SIGALRM]) == 0 ||
	    atomic_load(&signals_handled[SIGUSR1]) == 0)
		life_fail("the handlers did not run: the test proved nothing");
}

/* "signals first" runs the first-call children; "signals" the steady part. */
int main(int argc, char **argv)
{
	bool soak = life_soak();
	unsigned seconds = soak ? 60 : 3;

	life_begin("signals");
	if (argc > 1 && strcmp(argv[1], "first") == 0) {
		/* No time call before: the children must make their first one in a
		 * handler. Each child has its own time limit. A third argument
		 * says how many children (signals-first.test). */
		signals_first_calls(argc > 2 ? (unsigned)atoi(argv[2]) : soak ? 200 : 20);
		return 0;
	}
	/* Alarm-independent: a thread that sleeps, then aborts. */
	life_watchdog(seconds + 30);
	signals_steady(seconds);
	return 0;
}
