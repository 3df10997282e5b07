/* The refresh thread: calibrates each CPU the process may run on, publishes
 * the lines, and keeps them fresh. Started by the first time call. Its
 * life is here (refresh.c; a served process's changes of state in
 * refresh_served.c, the tools' calibration, in the caller's thread, in
 * refresh_tools.c); what it does is in round.h, look.h and api_choice.h,
 * what it knows in lines.h, placement.h and verdict.h. */
#ifndef FASTTIME_REFRESH_H
#define FASTTIME_REFRESH_H

#include <stdbool.h>
#include <stdint.h>

#include "settings.h"

/* Records the settings; cheap, called by the constructor. The processor
 * and the kernel are judged by the refresh thread when it starts. */
void refresh_configure(const struct settings *settings);
enum refresh_state {
	REFRESH_IDLE,	  /* no thread yet: the next time call starts one */
	REFRESH_STARTING, /* one caller is creating it */
	REFRESH_RUNNING,
	REFRESH_OFF,	  /* not wanted, not possible, or could not start */
	REFRESH_STOPPING, /* one caller is stopping it (refresh_stop) */
	REFRESH_SERVED,	  /* a calibration service's page is the table: no thread */
};
extern __attribute__((visibility("hidden"))) int refresh_state;

/* For the constructor of a process that may be served by a calibration
 * service (service_page.h): records the settings as refresh_configure
 * does (the state IDLE), and that the first time call that would start
 * the thread looks for the page first (service_page_find), without opening
 * anything now. rseq_registered is cpu_rseq_init's answer. */
void refresh_serve_later(const struct settings *settings, bool rseq_registered);
/* For the one caller that claimed the start (the state STARTING, no
 * signal handler, no filter in the way): looks for the page the
 * constructor asked for, once. Where one serves, it is mapped over the
 * table and the process is served from then on (the state SERVED): no
 * thread ever starts while it is; nothing is written to the table, which
 * is the service's, read-only, and the signal interposers pass straight
 * through. False, the state left to the caller, where none serves or
 * none was asked for. */
bool refresh_serve_wanted_page(void);
/* For the interposers, before the program installs a seccomp filter: a
 * process whose time call has not yet looked for its page looks now,
 * outside a signal handler, while the open and the mapping cannot be
 * what the filter kills; served, it stays served under the filter. */
void refresh_serve_before_filter(void);
/* Served no more: the table becomes this process's own again, empty
 * (service_page_leave; readers meanwhile ask libc), and the next time call
 * starts this process's own thread. why is for FASTTIME_DEBUG. With
 * only_if_abandoned, only if the page is still abandoned when the leave
 * holds the table (a look may have found a new page meanwhile). False
 * when the process was not served, or another caller is leaving. */
bool refresh_leave_service(const char *why, bool only_if_abandoned);
/* A served process whose page is stale looks for a service started in
 * its service's place, now and then (service_page_look_again), and is
 * served by it from then on: one debug line says so. */
void refresh_look_for_service_again(void);

/* For the refresh thread of a process that found its service's page stale
 * at start (service_page_awaited), between its rounds: a look at the page
 * at once, SERVICE_PAGE_LOOK_AGAIN_NS later, and then after twice the last
 * wait, up to 2 s; where it serves again,
 * the thread stops publishing, the page is mapped over the table and the
 * process is served from then on, as if it had been from the start (the
 * readers' clamps keep each thread's clock from going back across the
 * change of lines). True when it is: the thread then ends. */
bool refresh_take_up_awaited_page(void);

/* Claims the start of the thread for this caller (IDLE to STARTING), for
 * refresh_start and for a look for the page before a filter
 * (refresh_serve_before_filter): false where the state is not IDLE,
 * another caller claimed it first, or this may be a signal handler. The
 * claimer sets the state that follows. */
bool refresh_claim_start(void);
/* Starts the thread unless it runs, has failed or is not wanted. */
void refresh_start(void);

/* How long refresh_stop waits for the thread to end, and for a start or a
 * stop in progress elsewhere: a round in progress is finished first. */
#define REFRESH_STOP_WAIT_NS 2000000000ull
enum refresh_stop_kind {
	REFRESH_STOP_RESTART = 1, /* the next time call starts another */
	REFRESH_STOP_FOR_GOOD,	  /* never again in this process: libc answers */
};
enum refresh_stopped {
	REFRESH_STOPPED_NONE,	/* no thread of this process ran */
	REFRESH_STOPPED_JOINED, /* it ran, and has ended */
	REFRESH_STOPPED_ASKED,	/* it ran, and was asked to end, not waited for */
};
/* Stops the refresh thread of this process, for a program that needs to be
 * alone in it or that installs a seccomp filter. Waits for it (joins) up to
 * REFRESH_STOP_WAIT_NS, but never where signal_guard_may_start says this
 * may be a signal handler: the thread's exit may need a lock the
 * interrupted code holds. A thread not joined ends on its own soon after,
 * and a later start joins it first. Nothing happens, and nothing is
 * written, in a process that shares the library's memory without being the
 * one the thread runs in (a vfork or CLONE_VM child). */
enum refresh_stopped refresh_stop(enum refresh_stop_kind kind);

/* Whether a start is due (the state is IDLE): one load. */
static inline bool refresh_start_due(void)
{
	return __atomic_load_n(&refresh_state, __ATOMIC_RELAXED) == REFRESH_IDLE;
}

/* The check every slow call makes: one load, and a call only the first time. */
static inline void refresh_ensure_started(void)
{
	if (__builtin_expect(refresh_start_due(), 0))
		refresh_start();
}
/* unshare(CLONE_NEWTIME) succeeded: children forked from now on start
 * with no lines (they answer with libc until their own thread has some). */
void refresh_note_new_time_namespace_for_children(void);
/* In a fork child: the thread is gone; the next slow call starts another. */
void refresh_after_fork_in_child(void);

/* Has libc run refresh_after_fork_in_child in every fork child from now
 * on; once, and only in a process whose constructor asked for it
 * (refresh_watch_forks_of_this_process). Called by whatever first leaves a
 * child something to reset: a thread start, a page that serves where the
 * kernel cannot wipe the words a child must find zero (wiped.h), a new
 * time namespace for children. A process that never reads the clock then
 * pays no registration, and its fork children run nothing of ours. */
void refresh_watch_forks(void);
/* For the preloaded library's constructor: this process's fork children
 * are to be watched; at once where libc cannot take a fork handler late
 * (start_data.h). */
void refresh_watch_forks_of_this_process(void);

/* A process made without fork() (_Fork, a raw clone) runs no atfork
 * handler: its state still says RUNNING, but the thread stayed in the
 * parent, and its inherited lines go stale within the watch's validity.
 * The slow paths call this when the TSC could not answer: a word the
 * kernel zeroed in the new process (MADV_WIPEONFORK) says so, and it does
 * what the atfork handler does. A vfork or CLONE_VM child shares the word,
 * still set, and is left alone: starting a thread there would start it in
 * the parent's memory. No system call. */
void refresh_check_process(void);

/* How long refresh_calibrate_now keeps calibrating a machine whose CPUs
 * do not all have lines yet: on a loaded machine (a calibration service
 * started at boot, beside a build) sandwiches widen and the first lines
 * come late; a few rounds would give up on a machine that is only busy. */
#define REFRESH_CALIBRATE_PATIENCE_NS (10ull * 1000000000ull)
/* Calibrates synchronously in the calling thread until every usable CPU has
 * a line (CLOCK_MONOTONIC_RAW's too) and the lines are trusted, then
 * chooses the entry points; at least 8 rounds, and no longer than
 * REFRESH_CALIBRATE_PATIENCE_NS after that; restores the thread's
 * affinity. Returns false when the fast path cannot run here
 * (verdict_unusable says why) or no CPU could be given a line. */
bool refresh_calibrate_now(void);
/* Measures the entry points and chooses again now, as the refresh thread
 * does after a round, from whatever CPU the caller is on; for the tools and
 * the tests, after refresh_calibrate_now. False when the measurement was
 * thrown away or no CPU has a line. */
bool refresh_choose_now(void);

/* What refresh.c shares with a served process's changes of state
 * (refresh_served.c) and the tools' calibration (refresh_tools.c), and with
 * nobody else; the state stays in refresh.c, in one struct. */
struct round_result;
/* The settings the thread runs with, as refresh_configure recorded them. */
struct refresh_settings {
	uint64_t configured_interval_ns;
	bool relaxed;
	bool force_fast;
	bool both_modes; /* a service: choose for readers of both modes */
};
/* Records the settings and this process as the thread's owner. */
void refresh_take_settings(const struct settings *settings);
/* After refresh_configure, for a calibration service: the engine chooses
 * the entry points for readers of both modes, whose page serves both. */
void refresh_serve_both_modes(void);
/* Judges the machine for the engine (verdict_prepare) in the recorded
 * mode; a service, whose own mode reads nothing, in the other where that
 * one can read. */
const char *refresh_prepare_verdict(void);
/* The settings recorded last, read-only: the tools calibrate with them. */
const struct refresh_settings *refresh_recorded_settings(void);
/* Whether a served process installed a seccomp filter: it never leaves its
 * page then. */
bool refresh_served_under_filter(void);
/* Sets refresh_state, and CLOCK_START_PENDING in api_flags while IDLE. */
void refresh_set_state(int state);
/* Sleeps until deadline_ns on the library's monotonic clock, or until a
 * stop is asked. */
void refresh_sleep_until(uint64_t deadline_ns);
/* After a round: the clocksource's verdict, then the choice of entry
 * points if it is due. */
void refresh_after_round(unsigned round, const struct round_result *result);
#endif
