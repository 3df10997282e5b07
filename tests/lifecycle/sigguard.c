/* The thread start and signal handlers (src/guard/signal_guard*.c).
 *
 * "sigguard workers": the server layout. main installs a SIGTERM handler
 * and starts two workers with every signal blocked; only the workers read
 * the clock. Their calls must start the refresh thread and be answered from
 * the TSC soon after (polled for up to 5 s).
 *
 * "sigguard nodefer" and "sigguard resethand": the process's first time
 * call is made in a handler installed with SA_NODEFER (its signal is not
 * blocked inside it) or SA_RESETHAND (its action reads SIG_DFL inside it)
 * that interrupts malloc and free in the main flow. Many short children:
 * none may hang (each has a watchdog), the handler must not start the
 * thread, and the main flow's first call afterwards must.
 *
 * "sigguard nosyscall": while the start is put off, a pass-through makes no
 * system call (until the library's next look, 500 ms on). A child installs a seccomp filter that
 * kills it on any system call but the clock's, write, exit_group and rt_sigreturn, then calls the
 * four functions many times: inside a handler ("handler"), and in the main flow while a handler the
 * library did not install has its signal blocked ("foreign").
 *
 * "sigguard semantics": the interposed sigaction, signal, sysv_signal and
 * sigset behave as libc's: old actions, flags, masks, SA_SIGINFO,
 * SA_RESETHAND, SA_NODEFER, return values and errno.
 *
 * "sigguard longjmp": a handler left by siglongjmp does not keep the
 * thread that left it from starting the refresh thread.
 *
 * "sigguard badptr": a bad act or old pointer given to sigaction faults
 * with the program's own mask, as in libc's, so that the program's SIGSEGV
 * handler recovers with siglongjmp; that signal's installs work afterwards.
 *
 * "sigguard probes": SIGSEGV probes left by siglongjmp before the first
 * clock read (a garbage collector's or a JIT's): 9, 16 and 40 of them, by a
 * handler installed with SA_SIGINFO|SA_NODEFER (its signal not blocked
 * inside it) or with no flag, made from main's own frame, from a function
 * it calls or each from a frame deeper than the last, handled on the main stack or on an alternate
 * stack inside the caller's frame (above the frames of the later calls). No depth of them may keep
 * the thread from starting. */
#include "config.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "debug.h"
#include "life.h"

/* Not declared by every glibc's headers. */
void (*sysv_signal(int sig, void (*handler)(int)))(int);
void (*sigset(int sig, void (*handler)(int)))(int);

/* How long any child may take before it counts as hung: far beyond what a
 * healthy one needs, even under a sanitizer on a busy machine. */
#define SIGGUARD_CHILD_LIMIT_S 30u

/* A child process for one run, stdout flushed first; fails the test when
 * none can be made. */
static pid_t sigguard_fork(void)
{
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		life_fail("fork: %s", strerror(errno));
	return pid;
}

/* --- workers --- */

/* FASTTIME_FORCE is on: the library answers from the TSC whatever libc costs. */
static bool sigguard_forced(void)
{
	const char *force = getenv("FASTTIME_FORCE");

	return force != NULL && *force != '\0' && strcmp(force, "0") != 0 &&
	       strcmp(force, "no") != 0;
}

static void sigguard_term_handler(int sig)
{
	(void)sig;
}

static atomic_uint sigguard_fast_workers;

static void *sigguard_worker_main(void *arg)
{
	(void)arg;
	if (life_wait_fast(5000))
		atomic_fetch_add(&sigguard_fast_workers, 1);
	return NULL;
}

static void sigguard_workers(void)
{
	struct sigaction term;
	sigset_t all, saved;
	pthread_t workers[2];

	memset(&term, 0, sizeof term);
	term.sa_handler = sigguard_term_handler;
	sigemptyset(&term.sa_mask);
	if (sigaction(SIGTERM, &term, NULL) != 0)
		life_fail("sigaction: %s", strerror(errno));
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &saved);
	for (int i = 0; i < 2; i++)
		if (pthread_create(&workers[i], NULL, sigguard_worker_main, NULL) != 0)
			life_fail("cannot start a worker");
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(workers[i], NULL);
	if (life_threads_named("fasttime") != 1) {
		life_list_threads();
		life_fail("no refresh thread after the workers' calls");
	}
	if (atomic_load(&sigguard_fast_workers) != 2 && !sigguard_forced())
		life_skip("the library chose libc for CLOCK_MONOTONIC (FASTTIME_FORCE is off)");
	if (atomic_load(&sigguard_fast_workers) != 2)
		life_fail("%u of 2 workers (every signal blocked, a SIGTERM handler installed) "
			  "answered from the TSC within 5 s of their first call",
			  atomic_load(&sigguard_fast_workers));
	life_say("2 workers with every signal blocked: refresh thread started, both answered "
		 "from the TSC");
}

/* --- first call in an SA_NODEFER or SA_RESETHAND handler --- */

static _Atomic uint64_t sigguard_handled;
static atomic_bool sigguard_stop;

/* The first time calls of the process, whatever the main flow holds. */
static void sigguard_first_handler(int sig)
{
	int saved = errno;
	struct timespec ts;
	struct timeval tv;

	(void)sig;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	gettimeofday(&tv, NULL);
	timespec_get(&ts, TIME_UTC);
	atomic_fetch_add(&sigguard_handled, 1);
	errno = saved;
}

struct sigguard_pinger {
	pthread_t target;
	unsigned signals; /* how many to send; 0: until told to stop */
};

/* Sends SIGUSR1 to the target, each after the last was handled (or after
 * a while), with a pause of a varying few microseconds first, so that the
 * signal lands at a different point of malloc each time. */
static void *sigguard_pinger_main(void *arg)
{
	struct sigguard_pinger *pinger = arg;
	unsigned seed = (unsigned)getpid();

	for (unsigned sent = 0; !atomic_load(&sigguard_stop); sent++) {
		uint64_t handled = atomic_load(&sigguard_handled);

		if (pinger->signals != 0 && sent == pinger->signals)
			break;
		for (unsigned spins = rand_r(&seed) % 20000u; spins > 0; spins--)
			__builtin_ia32_pause();
		pthread_kill(pinger->target, SIGUSR1);
		for (unsigned spins = 0;
		     spins < 200000u && atomic_load(&sigguard_handled) == handled; spins++)
			__builtin_ia32_pause();
	}
	return NULL;
}

/* One child: a handler with flags interrupts malloc; its status says how it went. */
static int sigguard_first_child(int flags, unsigned seed)
{
	struct sigguard_pinger pinger = { pthread_self(), (flags & SA_RESETHAND) ? 1u : 0u };
	unsigned wanted = (flags & SA_RESETHAND) ? 1u : 5u;
	struct sigaction action;
	bool churned;
	sigset_t all, saved;
	pthread_t thread;

	/* A hang ends the child (SIGALRM's default action), unless the hung
	 * thread blocks SIGALRM, as a start in pthread_create does: then the
	 * parent's limit ends it. */
	alarm(SIGGUARD_CHILD_LIMIT_S);
	memset(&action, 0, sizeof action);
	action.sa_handler = sigguard_first_handler;
	sigemptyset(&action.sa_mask);
	action.sa_flags = flags;
	if (sigaction(SIGUSR1, &action, NULL) != 0)
		return 2;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &saved);
	if (pthread_create(&thread, NULL, sigguard_pinger_main, &pinger) != 0)
		return 2;
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	churned = life_churn_malloc(&sigguard_handled, wanted, seed, 100000000u);
	atomic_store(&sigguard_stop, true);
	pthread_join(thread, NULL);
	if (!churned)
		return 2;
	if (atomic_load(&sigguard_handled) < wanted)
		return 3;
	/* Only handlers have read the clock: none may have started the thread. */
	if (life_threads_named("fasttime") != 0)
		return 4;
	/* The main flow's first call starts it. */
	life_mono_ns();
	for (int i = 0; i < 300 && life_threads_named("fasttime") == 0; i++)
		life_sleep_ms(10);
	return life_threads_named("fasttime") == 1 ? 0 : 5;
}

static const char *sigguard_first_status(int status)
{
	if (WIFSIGNALED(status))
		return WTERMSIG(status) == SIGALRM ? "hung (its watchdog fired)"
						   : strsignal(WTERMSIG(status));
	switch (WEXITSTATUS(status)) {
	case 2: return "setting up failed";
	case 3: return "too few signals handled";
	case 4: return "the refresh thread was started inside a handler";
	case 5: return "no refresh thread after the main flow's first call";
	case 66: return "a sanitizer report";
	}
	return "failed";
}

static void sigguard_first_calls(const char *name, int flags, unsigned children)
{
	for (unsigned c = 0; c < children; c++) {
		pid_t pid;
		int status;

		pid = sigguard_fork();
		if (pid == 0)
			_exit(sigguard_first_child(flags, c * 7919u + 1));
		status = life_wait_child(pid, SIGGUARD_CHILD_LIMIT_S + 5);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			life_fail("%s handler, child %u: status 0x%x (%s)", name, c, status,
				  sigguard_first_status(status));
	}
	life_say("first calls in an %s handler interrupting malloc: %u children, none hung, "
		 "the thread started outside the handler in each",
		 name, children);
}

/* --- no system call while the start is put off --- */

/* Kills the process on any system call but those listed (x86-64 only: the
 * library is). */
static bool sigguard_seccomp(void)
{
	static const int allowed[] = { SYS_clock_gettime, SYS_gettimeofday, SYS_time,
				       SYS_write,	  SYS_exit_group,   SYS_rt_sigreturn };
	struct sock_filter filter[4 + sizeof allowed / sizeof allowed[0] + 2];
	struct sock_fprog program = { .filter = filter };
	unsigned n = 0, count = sizeof allowed / sizeof allowed[0];

	filter[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						   offsetof(struct seccomp_data, arch));
	filter[n++] =
	    (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
	filter[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	filter[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						   offsetof(struct seccomp_data, nr));
	for (unsigned i = 0; i < count; i++)
		filter[n++] = (struct sock_filter)BPF_JUMP(
		    BPF_JMP | BPF_JEQ | BPF_K, (unsigned)allowed[i], (uint8_t)(count - i), 0);
	filter[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	/* Every match jumps here. */
	filter[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	program.len = (unsigned short)n;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return false;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program, 0, 0) == 0;
}

/* Ends the process with exit_group itself: a sanitizer's _exit makes
 * system calls of its own (its leak check), which seccomp would punish. */
static __attribute__((noreturn)) void sigguard_exit(int status)
{
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

/* Calls the four functions rounds times; false if one failed. */
static bool sigguard_call_all(unsigned rounds)
{
	struct timespec ts;
	struct timeval tv;
	bool ok = true;

	for (unsigned i = 0; i < rounds; i++) {
		ok &= clock_gettime(CLOCK_MONOTONIC, &ts) == 0;
		ok &= clock_gettime(CLOCK_REALTIME, &ts) == 0;
		ok &= gettimeofday(&tv, NULL) == 0;
		ok &= time(NULL) > 0;
		ok &= timespec_get(&ts, TIME_UTC) == TIME_UTC;
	}
	return ok;
}

/* Exit statuses of the nosyscall children. */
#define SIGGUARD_NO_SECCOMP  3
#define SIGGUARD_CALL_FAILED 4

/* In the handler: one call to find libc's functions (no filter yet), then
 * the filter, then many calls; the handler exits the child. */
static void sigguard_nosyscall_handler(int sig)
{
	(void)sig;
	if (!sigguard_call_all(1))
		_exit(SIGGUARD_CALL_FAILED);
	if (!sigguard_seccomp())
		_exit(SIGGUARD_NO_SECCOMP);
	/* Beyond the 1000 calls after which the shared countdown of old asked
	 * the kernel again; a few milliseconds, well within the 500 ms after
	 * the handler's first call in which the library makes no look. */
	if (!sigguard_call_all(5000))
		sigguard_exit(SIGGUARD_CALL_FAILED);
	debug_write_line("sigguard: nosyscall: 25000 calls in a handler under seccomp\n");
	sigguard_exit(0);
}

static void sigguard_foreign_handler(int sig)
{
	(void)sig;
}

/* The kernel's struct sigaction on x86-64. */
struct sigguard_kernel_action {
	void *handler;
	unsigned long flags;
	void *restorer;
	uint64_t mask;
};

/* Installs sigguard_foreign_handler for sig behind the library's back, with
 * the system call and libc's restorer. */
static bool sigguard_install_foreign(int sig)
{
	struct sigaction action;
	struct sigguard_kernel_action kernel;

	memset(&action, 0, sizeof action);
	action.sa_handler = sigguard_foreign_handler;
	sigemptyset(&action.sa_mask);
	if (sigaction(sig, &action, NULL) != 0 ||
	    syscall(SYS_rt_sigaction, sig, NULL, &kernel, sizeof kernel.mask) != 0)
		return false;
	kernel.handler = (void *)sigguard_foreign_handler;
	return syscall(SYS_rt_sigaction, sig, &kernel, NULL, sizeof kernel.mask) == 0;
}

static int sigguard_nosyscall_child(bool foreign)
{
	alarm(SIGGUARD_CHILD_LIMIT_S);
	if (foreign) {
		sigset_t usr2;

		/* A foreign handler whose signal is blocked: the first call puts
		 * the start off and looks again only 500 ms later. */
		if (!sigguard_install_foreign(SIGUSR2))
			return 2;
		sigemptyset(&usr2);
		sigaddset(&usr2, SIGUSR2);
		pthread_sigmask(SIG_BLOCK, &usr2, NULL);
		if (!sigguard_call_all(1))
			return SIGGUARD_CALL_FAILED;
		if (!sigguard_seccomp())
			return SIGGUARD_NO_SECCOMP;
		/* 900 calls more, a millisecond or so: well before the thread
		 * asks the kernel again, whichever of them check the start. */
		if (!sigguard_call_all(180))
			sigguard_exit(SIGGUARD_CALL_FAILED);
		debug_write_line("sigguard: nosyscall: 900 calls with a foreign handler's signal "
				 "blocked, under seccomp\n");
		sigguard_exit(0);
	} else {
		struct sigaction action;

		memset(&action, 0, sizeof action);
		action.sa_handler = sigguard_nosyscall_handler;
		sigemptyset(&action.sa_mask);
		if (sigaction(SIGUSR1, &action, NULL) != 0)
			return 2;
		raise(SIGUSR1);
	}
	return 2;
}

static void sigguard_nosyscall(void)
{
	static const char *const names[] = { "handler", "foreign" };

#ifdef __SANITIZE_THREAD__
	/* Its runtime runs handlers from its own code and makes system calls
	 * of its own around them: not the library's to answer for. */
	life_skip("ThreadSanitizer makes system calls of its own around handlers");
#endif

	for (int foreign = 0; foreign < 2; foreign++) {
		pid_t pid;
		int status;

		pid = sigguard_fork();
		if (pid == 0)
			_exit(sigguard_nosyscall_child(foreign));
		status = life_wait_child(pid, SIGGUARD_CHILD_LIMIT_S + 5);
		if (WIFEXITED(status) && WEXITSTATUS(status) == SIGGUARD_NO_SECCOMP)
			life_skip("seccomp filters are not available here");
		if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS)
			life_fail("%s: a pass-through call made a system call while the start "
				  "was put off (killed by seccomp)",
				  names[foreign]);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			life_fail("%s: child status 0x%x", names[foreign], status);
	}
	life_say("no system call from pass-through calls while the start is put off");
}

/* --- sigaction's semantics --- */

static atomic_uint sigguard_plain_calls, sigguard_info_calls, sigguard_reset_calls;
static atomic_int sigguard_info_value, sigguard_info_signo;
static atomic_bool sigguard_info_context, sigguard_blocked_inside, sigguard_reset_default;

static void sigguard_plain_a(int sig)
{
	(void)sig;
	atomic_fetch_add(&sigguard_plain_calls, 1);
}

static void sigguard_plain_b(int sig)
{
	(void)sig;
	atomic_fetch_add(&sigguard_plain_calls, 100);
}

static void sigguard_info_handler(int sig, siginfo_t *info, void *context)
{
	atomic_store(&sigguard_info_signo, info->si_signo == sig ? sig : -1);
	atomic_store(&sigguard_info_value, info->si_value.sival_int);
	atomic_store(&sigguard_info_context, context != NULL);
	atomic_fetch_add(&sigguard_info_calls, 1);
}

/* Notes whether its own signal is blocked inside it, and what its action
 * reads there. */
static void sigguard_inspect_handler(int sig)
{
	sigset_t blocked;
	struct sigaction now;

	pthread_sigmask(SIG_BLOCK, NULL, &blocked);
	atomic_store(&sigguard_blocked_inside, sigismember(&blocked, sig) == 1);
	sigaction(sig, NULL, &now);
	atomic_store(&sigguard_reset_default, now.sa_handler == SIG_DFL);
	atomic_fetch_add(&sigguard_reset_calls, 1);
}

/* The kernel's handler for sig, around the library. */
static void *sigguard_kernel_handler(int sig)
{
	struct sigguard_kernel_action kernel;

	if (syscall(SYS_rt_sigaction, sig, NULL, &kernel, sizeof kernel.mask) != 0)
		life_fail("rt_sigaction: %s", strerror(errno));
	return kernel.handler;
}

#define SIGGUARD_EXPECT(condition)                                                                 \
	do {                                                                                       \
		if (!(condition))                                                                  \
			life_fail("line %d: %s", __LINE__, #condition);                            \
	} while (0)

static void sigguard_install(int sig, void (*handler)(int), int flags, int masked)
{
	struct sigaction action;

	memset(&action, 0, sizeof action);
	action.sa_handler = handler;
	sigemptyset(&action.sa_mask);
	if (masked != 0)
		sigaddset(&action.sa_mask, masked);
	action.sa_flags = flags;
	SIGGUARD_EXPECT(sigaction(sig, &action, NULL) == 0);
}

static void sigguard_semantics(void)
{
	const int kept = SA_RESTART | SA_ONSTACK | SA_NODEFER | SA_RESETHAND | SA_SIGINFO;
	struct sigaction action, old;
	union sigval value = { .sival_int = 4242 };
	sigset_t blocked;

	/* Round trip: the old action is the program's handler, flags, mask. */
	sigguard_install(SIGUSR1, sigguard_plain_a, SA_RESTART | SA_ONSTACK, SIGUSR2);
	SIGGUARD_EXPECT(sigaction(SIGUSR1, NULL, &old) == 0);
	SIGGUARD_EXPECT(old.sa_handler == sigguard_plain_a);
	SIGGUARD_EXPECT((old.sa_flags & kept) == (SA_RESTART | SA_ONSTACK));
	SIGGUARD_EXPECT(sigismember(&old.sa_mask, SIGUSR2) == 1);
	SIGGUARD_EXPECT(sigismember(&old.sa_mask, SIGINT) == 0);
	/* The kernel runs the trampoline, not the handler itself. */
	SIGGUARD_EXPECT(sigguard_kernel_handler(SIGUSR1) != (void *)sigguard_plain_a);
	raise(SIGUSR1);
	SIGGUARD_EXPECT(atomic_load(&sigguard_plain_calls) == 1);
	/* Replacing reports the one before; SIG_DFL and SIG_IGN pass through. */
	memset(&action, 0, sizeof action);
	action.sa_handler = sigguard_plain_b;
	SIGGUARD_EXPECT(sigaction(SIGUSR1, &action, &old) == 0);
	SIGGUARD_EXPECT(old.sa_handler == sigguard_plain_a);
	raise(SIGUSR1);
	SIGGUARD_EXPECT(atomic_load(&sigguard_plain_calls) == 101);
	action.sa_handler = SIG_IGN;
	SIGGUARD_EXPECT(sigaction(SIGUSR1, &action, &old) == 0);
	SIGGUARD_EXPECT(old.sa_handler == sigguard_plain_b);
	SIGGUARD_EXPECT(sigguard_kernel_handler(SIGUSR1) == (void *)SIG_IGN);
	SIGGUARD_EXPECT(sigaction(SIGUSR1, NULL, &old) == 0 && old.sa_handler == SIG_IGN);

	/* SA_SIGINFO: the handler gets the siginfo and the context. */
	memset(&action, 0, sizeof action);
	action.sa_sigaction = sigguard_info_handler;
	action.sa_flags = SA_SIGINFO;
	SIGGUARD_EXPECT(sigaction(SIGUSR2, &action, NULL) == 0);
	SIGGUARD_EXPECT(sigaction(SIGUSR2, NULL, &old) == 0);
	SIGGUARD_EXPECT(old.sa_sigaction == sigguard_info_handler);
	SIGGUARD_EXPECT((old.sa_flags & kept) == SA_SIGINFO);
	SIGGUARD_EXPECT(sigqueue(getpid(), SIGUSR2, value) == 0);
	SIGGUARD_EXPECT(atomic_load(&sigguard_info_calls) == 1);
	SIGGUARD_EXPECT(atomic_load(&sigguard_info_signo) == SIGUSR2);
	SIGGUARD_EXPECT(atomic_load(&sigguard_info_value) == 4242);
	SIGGUARD_EXPECT(atomic_load(&sigguard_info_context));

	/* SA_RESETHAND: SIG_DFL inside the handler and after; the signal is
	 * blocked inside it (no SA_NODEFER). */
	sigguard_install(SIGURG, sigguard_inspect_handler, SA_RESETHAND, 0);
	raise(SIGURG);
	SIGGUARD_EXPECT(atomic_load(&sigguard_reset_calls) == 1);
	SIGGUARD_EXPECT(atomic_load(&sigguard_reset_default));
	SIGGUARD_EXPECT(atomic_load(&sigguard_blocked_inside));
	SIGGUARD_EXPECT(sigaction(SIGURG, NULL, &old) == 0 && old.sa_handler == SIG_DFL);
	/* SA_NODEFER: not blocked inside, and the action stays. */
	sigguard_install(SIGURG, sigguard_inspect_handler, SA_NODEFER, 0);
	raise(SIGURG);
	SIGGUARD_EXPECT(atomic_load(&sigguard_reset_calls) == 2);
#ifndef __SANITIZE_THREAD__
	/* ThreadSanitizer runs handlers later, from its own code, with every
	 * signal blocked: with or without the library. */
	SIGGUARD_EXPECT(!atomic_load(&sigguard_blocked_inside));
#endif
	SIGGUARD_EXPECT(!atomic_load(&sigguard_reset_default));
	SIGGUARD_EXPECT(sigaction(SIGURG, NULL, &old) == 0);
	SIGGUARD_EXPECT(old.sa_handler == sigguard_inspect_handler);
	SIGGUARD_EXPECT((old.sa_flags & kept) == SA_NODEFER);

	/* signal(): the previous handler back, SA_RESTART set as libc sets it. */
	SIGGUARD_EXPECT(signal(SIGWINCH, sigguard_plain_a) == SIG_DFL);
	SIGGUARD_EXPECT(signal(SIGWINCH, sigguard_plain_b) == sigguard_plain_a);
	SIGGUARD_EXPECT(sigaction(SIGWINCH, NULL, &old) == 0);
	SIGGUARD_EXPECT(old.sa_handler == sigguard_plain_b);
#ifndef __SANITIZE_THREAD__
	/* ThreadSanitizer's signal() sets no flags, with or without us. */
	SIGGUARD_EXPECT(old.sa_flags & SA_RESTART);
#endif
	SIGGUARD_EXPECT(sigguard_kernel_handler(SIGWINCH) != (void *)sigguard_plain_b);
	SIGGUARD_EXPECT(signal(SIGWINCH, SIG_DFL) == sigguard_plain_b);
	/* A handler installed with SA_SIGINFO comes back from signal() too. */
	SIGGUARD_EXPECT((void *)signal(SIGUSR2, SIG_DFL) == (void *)sigguard_info_handler);
	/* sysv_signal: reset at delivery. sigset: the previous one back.
	 * ThreadSanitizer does not intercept sysv_signal, whose install then
	 * goes around its runtime: with or without us, not comparable. */
#ifndef __SANITIZE_THREAD__
	SIGGUARD_EXPECT(sysv_signal(SIGURG, sigguard_inspect_handler) == sigguard_inspect_handler);
	raise(SIGURG);
	SIGGUARD_EXPECT(atomic_load(&sigguard_reset_calls) == 3 &&
			atomic_load(&sigguard_reset_default));
#else
	sigguard_install(SIGURG, SIG_DFL, 0, 0);
#endif
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
	SIGGUARD_EXPECT(sigset(SIGURG, sigguard_plain_a) == SIG_DFL);
	SIGGUARD_EXPECT(sigset(SIGURG, SIG_DFL) == sigguard_plain_a);
	/* SIG_HOLD blocks the signal; the next disposition unblocks it. */
	SIGGUARD_EXPECT(sigset(SIGURG, SIG_HOLD) == SIG_DFL);
	SIGGUARD_EXPECT(pthread_sigmask(SIG_BLOCK, NULL, &blocked) == 0);
	SIGGUARD_EXPECT(sigismember(&blocked, SIGURG) == 1);
	SIGGUARD_EXPECT(sigset(SIGURG, sigguard_plain_a) == SIG_HOLD);
	SIGGUARD_EXPECT(pthread_sigmask(SIG_BLOCK, NULL, &blocked) == 0);
	SIGGUARD_EXPECT(sigismember(&blocked, SIGURG) == 0);
	SIGGUARD_EXPECT(sigset(SIGURG, SIG_DFL) == sigguard_plain_a);
#pragma GCC diagnostic pop

	/* errno: untouched on success; libc's on failure, with nothing changed. */
	errno = 1234;
	sigguard_install(SIGUSR1, sigguard_plain_a, 0, 0);
	SIGGUARD_EXPECT(errno == 1234);
	SIGGUARD_EXPECT(sigaction(0, &action, NULL) == -1 && errno == EINVAL);
	action.sa_handler = sigguard_plain_b;
	errno = 0;
	SIGGUARD_EXPECT(sigaction(SIGKILL, &action, &old) == -1 && errno == EINVAL);
	SIGGUARD_EXPECT(signal(SIGKILL, sigguard_plain_b) == SIG_ERR && errno == EINVAL);
	SIGGUARD_EXPECT(signal(SIGUSR1, SIG_DFL) == sigguard_plain_a);
	life_say("sigaction, signal, sysv_signal and sigset behave as libc's");
}

/* --- a handler left by siglongjmp --- */

static sigjmp_buf sigguard_jump;

static void sigguard_jump_handler(int sig)
{
	struct timespec ts;

	(void)sig;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	siglongjmp(sigguard_jump, 1);
}

static void sigguard_longjmp(void)
{
	sigguard_install(SIGUSR1, sigguard_jump_handler, 0, 0);
	if (sigsetjmp(sigguard_jump, 1) == 0) {
		raise(SIGUSR1);
		life_fail("the handler did not jump");
	}
	if (life_threads_named("fasttime") != 0)
		life_fail("the refresh thread was started inside the handler");
	if (!life_wait_fast(5000))
		life_fail("not answered from the TSC after a handler was left by siglongjmp");
	life_say("a handler left by siglongjmp: the thread started afterwards");
}

/* --- bad pointers --- */

static sigjmp_buf sigguard_fault_jump;
static atomic_uint sigguard_faults;

static void sigguard_fault_handler(int sig)
{
	(void)sig;
	atomic_fetch_add(&sigguard_faults, 1);
	siglongjmp(sigguard_fault_jump, 1);
}

/* An address no mapping holds: the first page. */
static void *sigguard_bad_pointer(void)
{
	void *bad = (void *)16;

	__asm__("" : "+r"(bad));
	return bad;
}

/* Calls sigaction(sig, act, old) where one of them is bad; true when the
 * SIGSEGV handler jumped back. */
static bool sigguard_faulting_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (sigsetjmp(sigguard_fault_jump, 1) == 0) {
		sigaction(sig, act, old);
		return false;
	}
	return true;
}

static int sigguard_badptr_child(void)
{
	struct sigaction action;
	unsigned faults;

	alarm(SIGGUARD_CHILD_LIMIT_S);
	sigguard_install(SIGSEGV, sigguard_fault_handler, 0, 0);
	sigguard_install(SIGBUS, sigguard_fault_handler, 0, 0);
	/* A bad act: nothing changes. */
	if (!sigguard_faulting_sigaction(SIGUSR1, sigguard_bad_pointer(), NULL))
		return 3;
	faults = atomic_load(&sigguard_faults);
	/* A bad old: the action changes, then the copy faults. */
	memset(&action, 0, sizeof action);
	action.sa_handler = sigguard_plain_a;
	sigemptyset(&action.sa_mask);
	if (!sigguard_faulting_sigaction(SIGUSR1, &action, sigguard_bad_pointer()))
		return 4;
	if (atomic_load(&sigguard_faults) != faults + 1)
		return 5;
	/* The action the bad old came with is in place, behind the trampoline. */
	SIGGUARD_EXPECT(sigguard_kernel_handler(SIGUSR1) != (void *)sigguard_plain_a);
	raise(SIGUSR1);
	SIGGUARD_EXPECT(atomic_load(&sigguard_plain_calls) == 1);
	/* Installs of the signal work as before. */
	sigguard_install(SIGUSR1, sigguard_plain_b, 0, 0);
	SIGGUARD_EXPECT(sigguard_kernel_handler(SIGUSR1) != (void *)sigguard_plain_b);
	SIGGUARD_EXPECT(signal(SIGUSR1, sigguard_plain_a) == sigguard_plain_b);
	raise(SIGUSR1);
	SIGGUARD_EXPECT(atomic_load(&sigguard_plain_calls) == 2);
	/* And so do SIGSEGV's own, faulted in twice. */
	SIGGUARD_EXPECT(signal(SIGSEGV, SIG_DFL) == sigguard_fault_handler);
	return 0;
}

static void sigguard_badptr(void)
{
	static const char *const why[] = {
		[3] = "a bad act pointer did not fault",
		[4] = "a bad old pointer did not fault",
		[5] = "the faults were not handled once each",
	};
	pid_t pid = sigguard_fork();
	int status;

	if (pid == 0)
		_exit(sigguard_badptr_child());
	status = life_wait_child(pid, SIGGUARD_CHILD_LIMIT_S + 5);
	if (WIFSIGNALED(status))
		life_fail("a bad pointer to sigaction killed the program (%s): its SIGSEGV handler "
			  "could not run",
			  strsignal(WTERMSIG(status)));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		life_fail("child status 0x%x (%s)", status,
			  WIFEXITED(status) && WEXITSTATUS(status) < 6 && why[WEXITSTATUS(status)]
			      ? why[WEXITSTATUS(status)]
			      : "failed");
	life_say("bad act and old pointers: the program's SIGSEGV handler recovered, and the "
		 "signal's installs work");
}

/* --- probes left by siglongjmp --- */

static sigjmp_buf sigguard_probe_jump;

static void sigguard_probe_handler(int sig)
{
	(void)sig;
	siglongjmp(sigguard_probe_jump, 1);
}

/* The same, installed with SA_SIGINFO. */
static void sigguard_probe_info_handler(int sig, siginfo_t *info, void *context)
{
	(void)sig;
	(void)info;
	(void)context;
	siglongjmp(sigguard_probe_jump, 1);
}

/* Touches the first page, as a probe of an address does; true when the
 * handler jumped back. */
static __attribute__((noinline)) bool sigguard_probe(void)
{
	if (sigsetjmp(sigguard_probe_jump, 1) == 0) {
		*(volatile char *)sigguard_bad_pointer() = 1;
		return false;
	}
	return true;
}

/* Reads the clock from a frame below the caller's until the refresh thread
 * runs, for up to 5 s; true when it does. */
static __attribute__((noinline)) bool sigguard_thread_follows(void)
{
	for (int i = 0; i < 500; i++) {
		life_mono_ns();
		if (life_threads_named("fasttime") == 1)
			return true;
		life_sleep_ms(10);
	}
	return false;
}

/* Where a run's probes are made: in the child's own frame, in a function
 * it calls, or each one a frame deeper than the last (each handler's frame
 * then lies elsewhere). */
enum { SIGGUARD_FROM_MAIN, SIGGUARD_FROM_HELPER, SIGGUARD_FROM_DEEPER, SIGGUARD_FROMS };

/* Makes probes probes, the first from a frame depth frames below this one
 * and each next one a frame deeper; true when each was handled and left. */
static __attribute__((noinline)) bool sigguard_probe_deeper(unsigned probes, unsigned depth)
{
	volatile char pad[64];

	pad[0] = 0;
	if (depth > 0)
		return sigguard_probe_deeper(probes, depth - 1) && pad[0] == 0;
	if (probes == 0)
		return true;
	return sigguard_probe() && sigguard_probe_deeper(probes - 1, 1) && pad[0] == 0;
}

/* One run of probes: how many, the handler's flags, and where they are
 * taken from and handled on. */
struct sigguard_probe_run {
	unsigned probes;
	int flags;		 /* SA_SIGINFO | SA_NODEFER, or 0 */
	unsigned from;		 /* SIGGUARD_FROM_* */
	bool on_alternate_stack; /* handled on an alternate stack in the child's frame */
};

/* The run's SIGSEGV probes; true when each was handled and left. */
static bool sigguard_probes_make(const struct sigguard_probe_run *run)
{
	if (run->from == SIGGUARD_FROM_DEEPER)
		return sigguard_probe_deeper(run->probes, 0);
	for (volatile unsigned i = 0; i < run->probes; i++) {
		if (run->from == SIGGUARD_FROM_HELPER) {
			if (!sigguard_probe())
				return false;
		} else if (sigsetjmp(sigguard_probe_jump, 1) == 0) {
			*(volatile char *)sigguard_bad_pointer() = 1;
			return false;
		}
	}
	return true;
}

/* One run in a child: 0 when the refresh thread started afterwards, 2 when
 * a probe went wrong, 3 when the thread started too soon, 4 when it never
 * did. */
static int sigguard_probes_child(const struct sigguard_probe_run *run)
{
	char alternate[64 * 1024] __attribute__((aligned(16)));
	stack_t stack = { .ss_sp = alternate, .ss_size = sizeof alternate };
	struct sigaction action;

	alarm(SIGGUARD_CHILD_LIMIT_S);
	if (run->on_alternate_stack && sigaltstack(&stack, NULL) != 0)
		return 2;
	memset(&action, 0, sizeof action);
	sigemptyset(&action.sa_mask);
	action.sa_flags = run->flags | (run->on_alternate_stack ? SA_ONSTACK : 0);
	if (run->flags & SA_SIGINFO)
		action.sa_sigaction = sigguard_probe_info_handler;
	else
		action.sa_handler = sigguard_probe_handler;
	if (sigaction(SIGSEGV, &action, NULL) != 0)
		return 2;
	if (!sigguard_probes_make(run))
		return 2;
	if (life_threads_named("fasttime") != 0)
		return 3;
	return sigguard_thread_follows() ? 0 : 4;
}

static void sigguard_probes(void)
{
	static const unsigned counts[] = { 9, 16, 40 };
	static const int flags[] = { SA_SIGINFO | SA_NODEFER, 0 };
	unsigned failed = 0, runs = 0;

	/* This process's own refresh thread runs before the first fork: one
	 * starting meanwhile (the watchdog's first time call starts it) holds
	 * AddressSanitizer's allocator lock while it sets itself up, and GCC
	 * 12's runtime does not take that lock around fork(): a child forked
	 * then inherits it held, and its own refresh thread waits on it for
	 * ever (seen: 5 runs of 5 on one machine, in the first child). */
	life_mono_ns();
	life_wait_refresh_thread();
	/* Each run says how it went: all are worth knowing. */
	for (unsigned c = 0; c < sizeof counts / sizeof counts[0]; c++)
		for (unsigned f = 0; f < sizeof flags / sizeof flags[0]; f++)
			for (unsigned where = 0; where < 2 * SIGGUARD_FROMS; where++) {
				static const char *const froms[SIGGUARD_FROMS] = {
					"main", "a helper", "ever deeper frames"
				};
				struct sigguard_probe_run run = { counts[c], flags[f],
								  where % SIGGUARD_FROMS,
								  where >= SIGGUARD_FROMS };
				char what[160];
				pid_t pid;
				int status;

				snprintf(what, sizeof what,
					 "%u SIGSEGV probes left by siglongjmp, flags %s, from %s, "
					 "handled on %s",
					 run.probes, run.flags != 0 ? "SA_SIGINFO|SA_NODEFER" : "0",
					 froms[run.from],
					 run.on_alternate_stack
					     ? "an alternate stack in main's frame"
					     : "the main stack");
				runs++;
				pid = sigguard_fork();
				if (pid == 0)
					_exit(sigguard_probes_child(&run));
				status = life_wait_child(pid, SIGGUARD_CHILD_LIMIT_S + 5);
				if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
					life_say("%s: the refresh thread started after them", what);
					continue;
				}
				failed++;
				if (WIFEXITED(status) && WEXITSTATUS(status) == 4)
					life_say("%s: no refresh thread 5 s after the first clock "
						 "read",
						 what);
				else
					life_say("%s: child status 0x%x", what, status);
			}
	if (failed != 0)
		life_fail("%u of %u runs without a refresh thread", failed, runs);
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";
	/* The children of nodefer and resethand: 1000, 5000 when soaking, or
	 * as many as the second argument says. */
	unsigned children = argc > 2 ? (unsigned)atoi(argv[2]) : life_soak() ? 5000 : 1000;

	life_begin("sigguard");
	if (strcmp(what, "workers") == 0) {
		life_watchdog(60);
		sigguard_workers();
	} else if (strcmp(what, "nodefer") == 0) {
		sigguard_first_calls("SA_NODEFER", SA_NODEFER, children);
	} else if (strcmp(what, "resethand") == 0) {
		sigguard_first_calls("SA_RESETHAND", SA_RESETHAND, children);
	} else if (strcmp(what, "nosyscall") == 0) {
		sigguard_nosyscall();
	} else if (strcmp(what, "semantics") == 0) {
		life_watchdog(60);
		sigguard_semantics();
	} else if (strcmp(what, "longjmp") == 0) {
		life_watchdog(60);
		sigguard_longjmp();
	} else if (strcmp(what, "badptr") == 0) {
		life_watchdog(60);
		sigguard_badptr();
	} else if (strcmp(what, "probes") == 0) {
		/* Thirty-six children, each waiting up to 5 s where it fails. */
		life_watchdog(300);
		sigguard_probes();
	} else {
		life_fail("usage: sigguard "
			  "workers|nodefer|resethand|nosyscall|semantics|longjmp|badptr|probes");
	}
	return 0;
}
