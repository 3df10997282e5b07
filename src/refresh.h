/* The refresh thread: calibrates each CPU the process may run on, publishes
 * the lines, and keeps them fresh. Started by the first time call. */
#ifndef FASTTIME_REFRESH_H
#define FASTTIME_REFRESH_H

#include <stdbool.h>
#include <stdint.h>

#include "api_choice.h"
#include "calib.h"
#include "cpu.h"
#include "evidence.h"
#include "settings.h"
#include "watch.h"

/* A CPU whose calibration keeps failing this long answers with libc. */
#define REFRESH_DROP_AFTER_NS (15ull * 1000000000ull)
/* A visit to a CPU (the pin and its sandwiches) that lasts longer than
 * this did not find the CPU free: the thread waited behind a thread of
 * higher priority there. A reader whose lines went stale meanwhile moves
 * the thread back (refresh_free_stuck_thread). */
#define REFRESH_VISIT_MAX_NS 50000000ull
/* How long rounds skip such a CPU after its first slow visit; doubled at
 * each one after, up to the last. */
#define REFRESH_UNREACHABLE_FIRST_NS 1000000000ull
#define REFRESH_UNREACHABLE_LAST_NS  16000000000ull
/* Sandwiches taken per CPU per round; the narrowest is kept. */
#define REFRESH_SANDWICHES 15u
/* Sandwiches each look of the watch takes; the narrowest is judged. */
#define REFRESH_WATCH_SANDWICHES 5u
/* The first intervals are short, so that the fast path starts soon, and grow
 * by CALIB_INTERVAL_GROWTH until they reach the configured one; the first is
 * the shortest a calibration allows. */
#define REFRESH_FIRST_INTERVAL_NS CALIB_MIN_INTERVAL_NS
/* What the refresh thread knows about one CPU, also shown by fasttime --info. */
struct refresh_cpu {
	bool allowed; /* online, and the refresh thread could run there last round */
	bool dropped; /* failed too long: answering with libc */
	struct calib_cpu calib;
	enum calib_outcome last_outcome;
	uint64_t last_sample_mono_ns;
	uint64_t last_width_ns;	      /* the last sample's sandwich */
	uint64_t previous_slope_mult; /* the slope before the last round */
	uint64_t failing_since_ns;    /* 0 while it succeeds */
	/* The error (kernel minus line) the last round or look found, and
	 * when: a look that finds it moved faster than the kernel's clock can
	 * slew saw a discontinuity (watch_parted). */
	int64_t look_error_ns;
	uint64_t look_mono_ns;
	uint32_t node;
	/* The line was taken from readers (a round could not sample it, or
	 * it lapsed): they answer with libc, and the next sample restarts it
	 * there (refresh_withdraw_unsampled). */
	bool withdrawn;
	/* A CPU the thread could not run on soon after pinning to it (a
	 * real-time thread owns it): rounds skip it until then, and wait
	 * twice as long after each such visit. */
	uint64_t unreachable_until_ns;
	uint64_t unreachable_backoff_ns;
};

extern struct refresh_cpu refresh_cpus[CPU_MAX_CPUS];
/* Costs measured when choosing the entry points, for diagnostics. */
extern struct api_cost refresh_api_costs[API_CHOICE_COUNT];
extern bool refresh_apis_chosen;

/* When and on what the entry points were last chosen, for --info and the
 * debug lines. */
struct refresh_choice {
	unsigned round;		 /* the refresh round after which it was made */
	uint64_t after_start_ns; /* since the refresh thread (or --info) started */
	uint32_t cpu;		 /* the CPU it was measured on, which had a line */
	unsigned cpus_with_line; /* of cpus_usable, at the time */
	unsigned cpus_usable;
	unsigned rejected; /* measurements thrown away: a call fell back */
	uint32_t chosen;   /* the CLOCK_API_* bits chosen */
};
extern struct refresh_choice refresh_choice;

/* What the refresh thread decided about this machine, for --info. */
struct refresh_verdict {
	struct cpu_facts facts;	    /* as last probed */
	struct cpu_reading reading; /* how readers read the counter and CPU id */
	const char *unusable;	    /* why the fast path cannot run; NULL if it can */
	unsigned steady_rounds;	    /* in a row, for the clocksource's probation */
	bool trusted;		    /* the lines may answer (evidence.h) */
};
extern struct refresh_verdict refresh_verdict;

/* Records the settings; cheap, called by the constructor. The processor
 * and the kernel are judged by the refresh thread when it starts. */
void refresh_configure(const struct settings *settings);
/* Reads the kernel's clocksource, for the refresh thread to judge when it
 * starts: called by the constructor, before main(), as the one file the
 * library opens. While the program runs, a descriptor of ours could take
 * the number the program expects from its next open, or be closed under
 * it by a program that closes what it does not know. */
void refresh_read_kernel(void);
enum refresh_state {
	REFRESH_IDLE,	  /* no thread yet: the next time call starts one */
	REFRESH_STARTING, /* one caller is creating it */
	REFRESH_RUNNING,
	REFRESH_OFF,	  /* not wanted, not possible, or could not start */
	REFRESH_STOPPING, /* one caller is stopping it (refresh_stop) */
};
extern __attribute__((visibility("hidden"))) int refresh_state;

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
 * one the thread runs in (a vfork or CLONE_VM child). errno is kept. */
enum refresh_stopped refresh_stop(enum refresh_stop_kind kind);

/* The check every slow call makes: one load, and a call only the first time. */
static inline void refresh_ensure_started(void)
{
	if (__builtin_expect(__atomic_load_n(&refresh_state, __ATOMIC_RELAXED) == REFRESH_IDLE, 0))
		refresh_start();
}
/* In a fork child: the thread is gone; the next slow call starts another. */
void refresh_after_fork_in_child(void);

/* A process made without fork() (_Fork, a raw clone) runs no atfork
 * handler: its state still says RUNNING, but the thread stayed in the
 * parent, and its inherited lines go stale within the watch's validity.
 * The slow paths call this when the TSC could not answer: a word the
 * kernel zeroed in the new process (MADV_WIPEONFORK) says so, and it does
 * what the atfork handler does. A vfork or CLONE_VM child shares the word,
 * still set, and is left alone: starting a thread there would start it in
 * the parent's memory. No system call. */
void refresh_check_process(void);

/* One pass over the online CPUs this thread can run on, in the calling
 * thread (the tools call it directly). Returns the number of CPUs that have
 * a line. The next round is due scheduled_ns after it, or sooner where a
 * line is paying back an error (calib_next_interval_ns). */
unsigned refresh_round(uint64_t scheduled_ns);
/* Calibrates synchronously in the calling thread until every usable CPU has
 * a line and the lines are trusted, then chooses the entry points; restores
 * the thread's affinity. Returns false when the fast path cannot run here
 * (refresh_verdict.unusable says why). */
bool refresh_calibrate_now(void);
/* Measures the entry points and chooses again now, as the refresh thread
 * does after a round, from whatever CPU the caller is on; for the tools and
 * the tests, after refresh_calibrate_now. False when the measurement was
 * thrown away or no CPU has a line. */
bool refresh_choose_now(void);
/* When the refresh thread next wakes: scheduled_ns, or sooner when a CPU
 * without a line can have its first one sooner (its anchor's sandwich
 * over the baseline the first-line rule needs, plus a tenth); from
 * refresh_cpus. */
uint64_t refresh_next_deadline(uint64_t scheduled_ns);
/* Notes that cpu's calibration failed at now (monotonic ns); once it has
 * failed for REFRESH_DROP_AFTER_NS without a success between, the CPU's
 * line is withdrawn and its readers answer with libc. A success clears
 * failing_since_ns. */
void refresh_cpu_failed(uint32_t cpu, struct refresh_cpu *state, uint64_t now);
/* The api_flags bits (less CLOCK_START_PENDING) for apis answering from
 * the TSC: once an entry point has answered from the TSC and stops,
 * CLOCK_LIBC_CLAMPED, for the rest of the process's life. */
uint32_t refresh_flags_for(uint32_t apis);
/* One look of the watch, its verdict not needed, for api_choice_measure
 * between its runs: publishes a moved realtime offset, then renews the
 * validity unless the line parted or the caller's CPU has no line to
 * compare (then nothing is renewed: a round is due). */
void refresh_renew_validity(void);
/* For a reader whose lines went stale (a slow path, about to call libc):
 * when the refresh thread has been stuck for REFRESH_VISIT_MAX_NS on a CPU
 * it pinned itself to, as behind a real-time thread that owns that CPU
 * (with the kernel's real-time throttling off it would wait for ever),
 * moves it back to the other CPUs it runs on, once; the round then goes
 * on without that CPU, whose line lapses. One atomic load otherwise. */
void refresh_free_stuck_thread(void);
/* Fills samples with monotonic / realtime / monotonic sandwiches of libc's
 * clocks: the refresh thread's, and a reader's over stale lines. */
void refresh_offset_samples(struct calib_offset_sample *samples, unsigned n);
/* The interval after round number round (0-based). */
uint64_t refresh_interval_after(unsigned round, uint64_t configured_ns);

#endif
