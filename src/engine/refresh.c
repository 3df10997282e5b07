/* The refresh thread's life: started by the first time call, it runs
 * the rounds (round.h), and between them the watch's looks (look.h), then
 * the per-API choice after a round (api_choice.h); it stops for a program
 * that must be alone in its process (unshare, setns) or is about to
 * install a seccomp filter, and is started again in a fork child. The
 * thread opens no file: the call that starts it reads the clocksource
 * (verdict_read_kernel), or first looks for a calibration service's page,
 * and the CPUs come from sched_getaffinity and from the readers. A served process's changes of
 * state, which start no thread (a served start included), are refresh_served.c; the tools'
 * calibration, the same rounds in the caller's own thread, is refresh_tools.c. */
#include "config.h"

#include "refresh.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "api_choice.h"
#include "clock.h"
#include "debug.h"
#include "errno_keep.h"
#include "fork_handler.h"
#include "libc.h"
#include "look.h"
#include "placement.h"
#include "process_mark.h"
#include "raw_syscall.h"
#include "round.h"
#include "sandbox.h"
#include "service_page.h"
#include "signal_guard.h"
#include "start_data.h"
#include "table.h"
#include "timespec_ns.h"
#include "verdict.h"

int refresh_state = REFRESH_OFF;

/* The thread's life, and the settings it runs with. */
static struct refresh_life {
	/* The thread while the state is RUNNING or STOPPING: joinable, so
	 * that a program about to need one thread (unshare, setns) or to
	 * install a seccomp filter can wait until it has gone (refresh_stop). */
	pthread_t thread;
	/* A thread asked to stop and not joined (in a signal handler, or it
	 * outlasted the wait): the next start joins it first. */
	pthread_t unjoined_thread;
	bool has_unjoined;
	/* 0 while the thread may run; an enum refresh_stop_kind once asked
	 * to stop. The thread sleeps on this word (a futex), so a stop wakes
	 * it. */
	uint32_t stop_word;
	/* The process the library's memory belongs to, taken when it starts
	 * its thread, and by a fork child of a process that had started one.
	 * A vfork child shares the memory and is not it. 0 while no thread was
	 * ever started here: there is none to stop, and a stop for good
	 * (a seccomp filter) turns the library off in whichever process asks,
	 * a vfork child's parent included, which then answers with libc. */
	pid_t owner_pid;
	/* A thread was started in this memory once: a fork child has
	 * something of it to reset. */
	bool started;
	/* Shared with the tools' calibration (refresh_recorded_settings). */
	struct refresh_settings settings;
	/* A served process that installed a seccomp filter: it never leaves
	 * the page (an mmap, then a thread, which the filter may kill). */
	bool served_under_filter;
	/* unshare(CLONE_NEWTIME) succeeded: every child forked from now on
	 * lives in another time namespace, where these lines are wrong. */
	bool children_in_new_time_namespace;
} refresh = { .settings = { .configured_interval_ns = SETTINGS_DEFAULT_INTERVAL_MS * 1000000ull } };

/* Sets the state, and CLOCK_START_PENDING in api_flags while it is IDLE.
 * RUNNING marks the process it runs in first (refresh_check_process). */
void refresh_set_state(int state)
{
	if (state == REFRESH_RUNNING)
		process_mark_set();
	__atomic_store_n(&refresh_state, state, __ATOMIC_RELEASE);
	table_set_start_pending(state == REFRESH_IDLE);
}

void refresh_take_settings(const struct settings *settings)
{
	refresh.settings.configured_interval_ns = (uint64_t)settings->interval_ms * 1000000ull;
	refresh.settings.relaxed = settings->relaxed;
	refresh.settings.force_fast = settings->force;
	refresh.settings.both_modes = false;
	api_choice_for_both_modes(false);
	table_set_mode(settings->relaxed);
}

void refresh_serve_both_modes(void)
{
	refresh.settings.both_modes = true;
	api_choice_for_both_modes(true);
}

const char *refresh_prepare_verdict(void)
{
	const char *reason = verdict_prepare(refresh.settings.relaxed);

	if (reason != NULL && refresh.settings.both_modes &&
	    verdict_mode_reads(refresh.settings.relaxed ? TABLE_MODE_ORDERED : TABLE_MODE_RELAXED))
		reason = verdict_prepare(!refresh.settings.relaxed);
	return reason;
}

const struct refresh_settings *refresh_recorded_settings(void)
{
	return &refresh.settings;
}

bool refresh_served_under_filter(void)
{
	return refresh.served_under_filter;
}

void refresh_configure(const struct settings *settings)
{
	refresh_take_settings(settings);
	refresh_set_state(settings->disabled ? REFRESH_OFF : REFRESH_IDLE);
}

/* Whether refresh_stop asked the thread to end: its loop and sleeps end then. */
static bool refresh_stop_asked(void)
{
	return __atomic_load_n(&refresh.stop_word, __ATOMIC_ACQUIRE) != 0;
}

/* Sleeps until deadline_ns on the monotonic clock as the library reads it
 * (libc's function, or whatever is preloaded beneath it), or until a stop
 * is asked: the thread waits on the stop word, which refresh_stop sets and
 * wakes. The timeout is relative (futex measures it on CLOCK_MONOTONIC), so
 * that a clock read through another path than the kernel's timers (a
 * test's fake clock, moved ahead) cannot lengthen it. */
void refresh_sleep_until(uint64_t deadline_ns)
{
	for (;;) {
		uint64_t now = libc_monotonic_ns(), left;
		struct timespec span;

		if (now >= deadline_ns || refresh_stop_asked())
			return;
		left = deadline_ns - now;
		span = timespec_from_ns(left);
		/* Woken, interrupted or refused (the word is set): look again. */
		if (raw_syscall(SYS_futex, (long)&refresh.stop_word, FUTEX_WAIT_PRIVATE, 0,
				(long)&span, 0, 0) != 0 &&
		    errno == ETIMEDOUT)
			return;
	}
}

/* Sleeps on CLOCK_MONOTONIC until the deadline, looking every watch period;
 * returns early when a look finds a round due now, or a reader reported a
 * CPU without a line that the last round did not visit: its line then
 * comes within a watch period and a first line's wait, not a whole
 * interval later. */
static void refresh_wait(uint64_t deadline_ns)
{
	for (;;) {
		uint64_t now = libc_monotonic_ns();
		uint64_t look = look_next_ns(now);

		if (now >= deadline_ns)
			return;
		refresh_sleep_until(deadline_ns < look ? deadline_ns : look);
		if (refresh_stop_asked() || refresh_take_up_awaited_page())
			return;
		if (placement_wanted_new()) {
			debug_log("a reader runs on a CPU without a line: a round now");
			return;
		}
		if (libc_monotonic_ns() < deadline_ns && look_once() != LOOK_RENEWED)
			return;
	}
}

/* The thread runs as an ordinary thread whatever its creator runs: a
 * SCHED_FIFO first caller must not give ten wake-ups a second real-time
 * priority over the host's work, and a SCHED_IDLE or niced one must not
 * starve the calibration. Done from inside, best effort: an explicit policy
 * in the attributes would make pthread_create itself fail where the process
 * may not set it, and leaving SCHED_IDLE or a positive nice needs
 * CAP_SYS_NICE or RLIMIT_NICE. */
static void refresh_own_scheduling(void)
{
	struct sched_param ordinary = { .sched_priority = 0 };

	pthread_setschedparam(pthread_self(), SCHED_OTHER, &ordinary);
	setpriority(PRIO_PROCESS, (id_t)raw_syscall(SYS_gettid, 0, 0, 0, 0, 0, 0), 0);
}

/* The thread ends on its own (the fast path cannot run here): nobody will
 * join it, unless a stopper already waits for it. */
static void refresh_quit(void)
{
	int state = __atomic_load_n(&refresh_state, __ATOMIC_ACQUIRE);

	while (state == REFRESH_RUNNING || state == REFRESH_STARTING) {
		if (__atomic_compare_exchange_n(&refresh_state, &state, REFRESH_OFF, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			refresh_set_state(REFRESH_OFF);
			placement_set_thread(0);
			pthread_detach(pthread_self());
			return;
		}
	}
}

/* The thread was asked to stop: for good, the lines stop answering now
 * (readers go to libc, clamped where they had answers from the counter);
 * for a restart, they answer until they go stale, as in a fork child, and
 * the next thread continues them. */
static void refresh_stopped(void)
{
	uint32_t flags[TABLE_MODE_COUNT];

	if (__atomic_load_n(&refresh.stop_word, __ATOMIC_ACQUIRE) != REFRESH_STOP_FOR_GOOD)
		return;
	api_choice_stopped_flags(flags);
	table_stop_answering(flags);
	debug_log("refresh thread stopped for good: answering with libc");
}

/* After a round: the clocksource's verdict, then the choice of entry
 * points if it is due, and the flags readers see. */
void refresh_after_round(unsigned round, const struct round_result *result)
{
	bool trusted = verdict_after_round(result->narrowest_ns, result->steady);

	api_choice_after_round(round, result, trusted, refresh.settings.force_fast);
}

/* The thread's first steps, from inside: its name, its id for readers
 * to move, its scheduling, libc, and the verdict on the machine; returns
 * why the fast path cannot run, or NULL. */
static const char *refresh_main_begin(void)
{
	const char *reason;

	/* Named from inside: pthread_setname_np on another thread opens a file
	 * in /proc from the caller's thread, which must not see a descriptor. */
	prctl(PR_SET_NAME, "fasttime", 0, 0, 0);
	placement_set_thread((pid_t)raw_syscall(SYS_gettid, 0, 0, 0, 0, 0, 0));
	refresh_own_scheduling();
	libc_resolve();
	reason = refresh_prepare_verdict();
	api_choice_begin(libc_monotonic_ns());
	return reason;
}

/* The thread: judges the machine once, then runs rounds and looks until asked to stop. */
static void *refresh_main(void *unused)
{
	const char *reason = refresh_main_begin();
	(void)unused;

	if (reason != NULL || !placement_read_affinity()) {
		debug_log("not starting: %s", reason != NULL ? reason : "no CPU affinity");
		refresh_quit();
		return NULL;
	}
	debug_log("refresh thread started, interval %llu ms",
		  (unsigned long long)(refresh.settings.configured_interval_ns / 1000000u));
	for (unsigned round = 0; !refresh_stop_asked(); round++) {
		uint64_t start = libc_monotonic_ns();
		uint64_t next =
		    round_interval_after(round, refresh.settings.configured_interval_ns);

		struct round_result result = round_run(next, look_take_discontinuity());

		refresh_after_round(round, &result);
		refresh_wait(round_next_deadline(start + result.next_interval_ns));
		/* Served by a page fresh again: nobody joins this thread. */
		if (__atomic_load_n(&refresh_state, __ATOMIC_ACQUIRE) == REFRESH_SERVED) {
			placement_set_thread(0);
			pthread_detach(pthread_self());
			return NULL;
		}
	}
	refresh_stopped();
	/* No reader may move a thread that has left (its id may be reused). */
	placement_set_thread(0);
	return NULL;
}

bool refresh_claim_start(void)
{
	int expected = REFRESH_IDLE;

	if (__atomic_load_n(&refresh_state, __ATOMIC_ACQUIRE) != REFRESH_IDLE)
		return false;
	/* Never from a signal handler: pthread_create allocates, and the
	 * interrupted code may hold malloc's lock. A later call outside it
	 * starts the thread; until then this thread's calls pass to libc
	 * with no system call and no shared write (signal_guard.h): a
	 * process without a running thread publishes no step of a clock
	 * (preload_follow_step). */
	if (!signal_guard_may_start())
		return false;
	return __atomic_compare_exchange_n(&refresh_state, &expected, REFRESH_STARTING, false,
					   __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

/* Whether a claimed start may make a thread: an earlier one stopped without
 * a join is gone, and no filter forbids it. Otherwise the state is set to
 * what comes next: IDLE (a later call tries again) or OFF. */
static bool refresh_start_allowed(void)
{
	/* A thread stopped earlier without a join must be gone first: until
	 * then, the start waits for a later call. */
	if (refresh.has_unjoined) {
		if (pthread_tryjoin_np(refresh.unjoined_thread, NULL) != 0) {
			refresh_set_state(REFRESH_IDLE);
			return false;
		}
		refresh.has_unjoined = false;
	}
	/* Never under a seccomp filter the program installed behind our
	 * interposers: creating the thread may be what it kills. */
	if (!sandbox_thread_allowed()) {
		debug_log("a seccomp filter was installed: not starting; answering with libc");
		refresh_set_state(REFRESH_OFF);
		return false;
	}
	return true;
}

/* What the thread needs before it exists, in the time call that starts
 * it: the fork handlers, the kernel's clocksource, and who owns it. */
static void refresh_prepare_thread(void)
{
	/* A fork child has something to reset from now on (refresh.started). */
	refresh_watch_forks();
	/* The kernel's clocksource, which a process that never reads the
	 * clock need not pay for: read here, in the time call that starts
	 * the thread, by raw system calls, the descriptor closed before the
	 * call returns (and never by the thread, which opens none). */
	verdict_read_kernel();
	table_set_start_pending(false);
	__atomic_store_n(&refresh.stop_word, 0, __ATOMIC_RELEASE);
	/* Before the thread exists: whoever stops it asks whose it is. */
	refresh.owner_pid = getpid();
	__atomic_store_n(&refresh.started, true, __ATOMIC_RELAXED);
}

/* Creates the thread, and sets the state to RUNNING, or to OFF where it
 * cannot be created. */
static void refresh_create_thread(void)
{
	int expected = REFRESH_STARTING;
	pthread_attr_t attr;
	pthread_t thread;
	sigset_t all, saved;
	int created;

	/* The host's signals must never land on our thread: it starts with all
	 * of them blocked. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &saved);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	created = pthread_create(&thread, &attr, refresh_main, NULL);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	if (created != 0) {
		/* The number, not strerror: its translation may open a
		 * message catalogue. */
		debug_log("cannot start the refresh thread (error %d); answering with libc",
			  created);
		refresh_set_state(REFRESH_OFF);
		return;
	}
	/* Unless the thread has already quit (and detached itself). */
	refresh.thread = thread;
	process_mark_set();
	__atomic_compare_exchange_n(&refresh_state, &expected, REFRESH_RUNNING, false,
				    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

/* The memory the thread's rounds write, mapped by the call that starts it
 * (a process that never starts one maps none); where it cannot be, the
 * state is OFF and libc answers, as where the thread cannot be created. */
static bool refresh_map_memory(void)
{
	if (round_map())
		return true;
	debug_log("cannot map the refresh thread's memory; answering with libc");
	refresh_set_state(REFRESH_OFF);
	return false;
}

void refresh_start(void)
{
	if (!refresh_claim_start())
		return;
	/* A calibration service's page, looked for by the first call that
	 * would start a thread, at the same gates: served, no thread. */
	if (refresh_start_allowed() && !refresh_serve_wanted_page() && refresh_map_memory()) {
		refresh_prepare_thread();
		refresh_create_thread();
	}
}

/* Sleeps a millisecond: waiting for another thread's start or stop. */
static void refresh_pause(void)
{
	struct timespec ms = { 0, 1000000 };

	nanosleep(&ms, NULL);
}

/* Joins the thread within REFRESH_STOP_WAIT_NS, whatever the realtime
 * clock (which pthread_timedjoin_np's deadline is on) does meanwhile:
 * in slices of 10 ms, counted. */
static bool refresh_join(pthread_t thread)
{
	for (uint64_t waited = 0; waited < REFRESH_STOP_WAIT_NS; waited += 10000000u) {
		struct timespec deadline;

		libc_clock_gettime(CLOCK_REALTIME, &deadline);
		deadline.tv_nsec += 10000000;
		if (deadline.tv_nsec >= (long)CLOCK_NS_PER_SEC) {
			deadline.tv_sec++;
			deadline.tv_nsec -= (long)CLOCK_NS_PER_SEC;
		}
		if (pthread_timedjoin_np(thread, NULL, &deadline) != ETIMEDOUT)
			return true;
		/* Stuck behind a real-time thread on a CPU it pinned to, the
		 * thread could not even see the stop. */
		if (waited >= PLACEMENT_VISIT_MAX_NS)
			placement_rescue(true);
	}
	return false;
}

/* Takes the state from RUNNING to STOPPING, so that this caller alone
 * stops the thread; from IDLE to OFF when stopping for good. Waits
 * (sleeping, bounded) for a start or stop in progress elsewhere, but never
 * in a handler, which may have interrupted it. False when there is no
 * thread to stop. */
static bool refresh_claim_stop(enum refresh_stop_kind kind, bool may_join)
{
	for (uint64_t waited = 0;; waited += 1000000u) {
		int state = __atomic_load_n(&refresh_state, __ATOMIC_ACQUIRE);

		switch (state) {
		case REFRESH_RUNNING:
			if (__atomic_compare_exchange_n(&refresh_state, &state, REFRESH_STOPPING,
							false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
				return true;
			continue;
		case REFRESH_IDLE:
			if (kind != REFRESH_STOP_FOR_GOOD)
				return false;
			if (__atomic_compare_exchange_n(&refresh_state, &state, REFRESH_OFF, false,
							__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
				refresh_set_state(REFRESH_OFF);
				return false;
			}
			continue;
		case REFRESH_STARTING:
		case REFRESH_STOPPING:
			if (!may_join || waited >= REFRESH_STOP_WAIT_NS)
				return false;
			refresh_pause();
			continue;
		default: return false;
		}
	}
}

/* Tells the thread to stop, and joins it where the caller may (within
 * REFRESH_STOP_WAIT_NS); else leaves it to end on its own, or to be joined
 * before the next start. Returns whether it was joined. */
static bool refresh_end_thread(enum refresh_stop_kind kind, bool may_join)
{
	bool joined = false;

	__atomic_store_n(&refresh.stop_word, (uint32_t)kind, __ATOMIC_RELEASE);
	raw_syscall(SYS_futex, (long)&refresh.stop_word, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0);
	if (may_join && refresh_join(refresh.thread)) {
		joined = true;
	} else if (may_join && kind == REFRESH_STOP_FOR_GOOD) {
		/* It ends on its own; nobody will start another to join it. */
		pthread_detach(refresh.thread);
	} else {
		refresh.unjoined_thread = refresh.thread;
		refresh.has_unjoined = true;
	}
	return joined;
}

/* The thread told to stop (and joined or not, as stopped says): its state
 * from now on, and the debug line. */
static void refresh_stop_record(enum refresh_stop_kind kind, enum refresh_stopped stopped)
{
	/* Under the filter about to go in, no reader may move the thread: a
	 * sched_setaffinity the filter forbids would kill the program. */
	if (kind == REFRESH_STOP_FOR_GOOD)
		placement_set_thread(0);
	refresh_set_state(kind == REFRESH_STOP_FOR_GOOD ? REFRESH_OFF : REFRESH_IDLE);
	debug_log(
	    "refresh thread %s%s", stopped == REFRESH_STOPPED_JOINED ? "stopped" : "asked to stop",
	    kind == REFRESH_STOP_FOR_GOOD ? " for good" : "; the next time call starts another");
}

enum refresh_stopped refresh_stop(enum refresh_stop_kind kind)
{
	enum refresh_stopped stopped = REFRESH_STOPPED_ASKED;
	bool may_join;

	int state;

	/* Served by a page not yet looked for, the process stays served
	 * under the filter about to go in. */
	if (kind == REFRESH_STOP_FOR_GOOD)
		refresh_serve_before_filter();
	/* getpid is a system call: only where the library could be on. A
	 * served process has no thread to stop. */
	state = __atomic_load_n(&refresh_state, __ATOMIC_ACQUIRE);

	if (state == REFRESH_SERVED && kind == REFRESH_STOP_FOR_GOOD)
		refresh.served_under_filter = true;
	if (state == REFRESH_OFF || state == REFRESH_SERVED ||
	    (refresh.owner_pid != 0 && getpid() != refresh.owner_pid))
		return REFRESH_STOPPED_NONE;
	may_join = signal_guard_may_start();
	if (!refresh_claim_stop(kind, may_join))
		return REFRESH_STOPPED_NONE;
	if (refresh_end_thread(kind, may_join))
		stopped = REFRESH_STOPPED_JOINED;
	refresh_stop_record(kind, stopped);
	return stopped;
}

/* A fork child of a served process, or of one whose thread was taking a
 * page up: its state from the page; false for any other child. */
static bool refresh_after_fork_served(int state)
{
	/* A served child is served as its parent was: the page is mapped in
	 * it too, and nothing here is its own; unless the parent made another
	 * time namespace for it by a raw system call, no interposer seeing it,
	 * which the child's first time call finds out (no system call here:
	 * most children only exec or exit). */
	/* Made while the parent's thread took a page up (its table read-only,
	 * the process not yet served): served where the page was mapped by
	 * then (its path is set only once it is); else, unsure whether the
	 * mapping was made, this child writes nothing and answers with libc. */
	if (state != REFRESH_SERVED && __atomic_load_n(&table_read_only, __ATOMIC_ACQUIRE)) {
		service_page_after_fork_in_child();
		if (service_page_served() != NULL) {
			signal_guard_set_pass_through(true);
			refresh_set_state(REFRESH_SERVED);
		} else {
			refresh_set_state(REFRESH_OFF);
		}
		return true;
	}
	if (state == REFRESH_SERVED) {
		service_page_after_fork_in_child();
		return true;
	}
	return false;
}

/* A fork child of a process whose thread started: the process is its
 * own, with nothing of the parent's thread to join, stop or move. */
static void refresh_after_fork_own(int state)
{
	/* The thread, stopping or not, stayed in the parent: nothing here to
	 * join, or to tell to stop. */
	refresh.owner_pid = getpid();
	refresh.has_unjoined = false;
	/* The CPUs the parent's other threads ran on: none of them is here. */
	table_wanted_clear();
	__atomic_store_n(&refresh.stop_word, 0, __ATOMIC_RELAXED);
	/* The thread a reader would move, and its visit, are the parent's. */
	placement_after_fork();
	if (state == REFRESH_RUNNING || state == REFRESH_STARTING || state == REFRESH_STOPPING)
		refresh_set_state(REFRESH_IDLE);
}

/* A fork child's reset of the thread's life (refresh_after_fork_in_child). */
static void refresh_after_fork_reset(void)
{
	int state = __atomic_load_n(&refresh_state, __ATOMIC_RELAXED);

	if (refresh_after_fork_served(state))
		return;
	/* The parent's lines tell the time of the parent's namespace: this
	 * child answers with libc until its own thread has lines. */
	if (refresh.children_in_new_time_namespace) {
		refresh.children_in_new_time_namespace = false;
		table_set_validity(0, 0);
	}
	round_after_fork();
	/* A parent that never started a thread (a process that never read
	 * the clock, or reads it only through libc) left nothing to reset:
	 * the child writes nothing, for every page it writes is copied, and
	 * most children only exec or exit. Its thread, if it ever starts
	 * one, takes the process as its own then (refresh_start). */
	if (!__atomic_load_n(&refresh.started, __ATOMIC_RELAXED) && state != REFRESH_RUNNING &&
	    state != REFRESH_STARTING && state != REFRESH_STOPPING)
		return;
	refresh_after_fork_own(state);
}

/* The fork handler itself, where libc's fork enters the library: the
 * child's errno is the program's. */
void refresh_after_fork_in_child(void)
{
	struct errno_keep keep = errno_keep_take();

	refresh_after_fork_reset();
	errno_keep_give(keep);
}

/* Set by the preloaded library's constructor: a calibration service's
 * own fork children (the command it runs) must not run the handler, which
 * would write in the page the service publishes. */
static bool refresh_forks_to_watch START_DATA;

void refresh_watch_forks_of_this_process(void)
{
	refresh_forks_to_watch = true;
	if (!START_FORK_HANDLERS_LATE)
		refresh_watch_forks();
}

void refresh_watch_forks(void)
{
	/* With the start's data (start_data.h): a served start sets it, and
	 * a page of .bss first read then written costs two faults. */
	static bool watching START_DATA;

	if (!refresh_forks_to_watch || __atomic_load_n(&watching, __ATOMIC_ACQUIRE) ||
	    __atomic_exchange_n(&watching, true, __ATOMIC_ACQ_REL))
		return;
	fork_handler_register(refresh_after_fork_in_child);
}

void refresh_note_new_time_namespace_for_children(void)
{
	refresh_watch_forks();
	refresh.children_in_new_time_namespace = true;
}

void refresh_check_process(void)
{
	if (__atomic_load_n(&refresh_state, __ATOMIC_ACQUIRE) != REFRESH_RUNNING ||
	    !process_mark_wiped())
		return;
	debug_log("a new process made without fork(): starting its own refresh thread");
	refresh_after_fork_reset();
}
