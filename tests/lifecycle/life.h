/* Shared by the lifecycle tests: proof that the preload is in effect, libc's
 * own clock for comparison, the tap's count of answers fasttime left to libc,
 * thread listings and a watchdog. Nothing here reads the clock through the
 * preload unless its name says so: some tests need their first time call to
 * happen at a moment of their choosing. */
#ifndef LIFE_H
#define LIFE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/time.h>
#include <sys/types.h>
#include <time.h>

/* The exit code of a skipped test. */
#define LIFE_EXIT_SKIP 77
/* The exit code of a test that was to be served by a calibration
 * service's page and was not at its start (life.sh runs it again). */
#define LIFE_EXIT_NOT_SERVED 75

#define LIFE_NS_PER_SEC 1000000000ull
#define LIFE_NS_PER_MS	1000000ull

/* libc's own functions, reached around the preload. */
struct life_libc {
	int (*clock_gettime)(clockid_t, struct timespec *);
	int (*gettimeofday)(struct timeval *, void *);
	time_t (*time)(time_t *);
	int (*timespec_get)(struct timespec *, int);
};
extern struct life_libc life_libc;

/* Skips without the CPU features the fast path needs, fails unless
 * libfasttime answers the time functions and the tap sits behind it, and
 * resolves libc's functions. Reads no clock through the preload. */
void life_begin(const char *name);
/* Prints "name: FAIL: ..." and exits 1. */
void life_fail(const char *format, ...) __attribute__((noreturn, format(printf, 1, 2)));
/* Prints "name: SKIP: ..." and exits 77. */
void life_skip(const char *format, ...) __attribute__((noreturn, format(printf, 1, 2)));
/* Prints "name: ..." on stdout and flushes it (a fork may follow). */
void life_say(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* FASTTIME_SOAK is set to a true value: run the long version. */
bool life_soak(void);
/* FASTTIME_MODE=relaxed. */
bool life_relaxed(void);
/* FASTTIME_INTERVAL_MS as the library reads it (5000 when unset). */
uint64_t life_interval_ns(void);
/* How long the library trusts its lines after a look of its watch (watch.h). */
uint64_t life_window_ns(void);

uint64_t life_ns(const struct timespec *ts);
/* libc's CLOCK_MONOTONIC and CLOCK_REALTIME, in ns. */
uint64_t life_libc_mono_ns(void);
uint64_t life_libc_real_ns(void);
/* The preloaded CLOCK_MONOTONIC, in ns. */
uint64_t life_mono_ns(void);
/* Sleeps without reading any clock through the preload. */
void life_sleep_ms(unsigned ms);

/* Calls this thread has made that fasttime passed on to libc. */
uint64_t life_fallthrough(void);
/* Makes the tap hold the refresh thread at its next call into libc, or lets
 * it go; and how many threads it holds now. */
void life_hold_refresh(bool hold);
unsigned life_refresh_held(void);

/* Threads of this process, and those whose name is comm. */
unsigned life_thread_count(void);
unsigned life_threads_named(const char *comm);
/* The id of a thread whose name is comm, or -1. */
pid_t life_thread_named(const char *comm);
/* Lists the threads' names on stdout, for a failure message. */
void life_list_threads(void);
/* The refresh thread's id ("fasttime"), waiting up to 3 s for it; fails
 * the test, listing the threads, when none comes. */
pid_t life_wait_refresh_thread(void);

/* Reads clock id through the preload until a batch of reads is answered
 * entirely from the TSC or max_ms pass; true when it was. */
bool life_wait_fast_clock(clockid_t id, unsigned max_ms);
/* The same for CLOCK_MONOTONIC. */
bool life_wait_fast(unsigned max_ms);
/* Whether FASTTIME_FORCE is set on (not empty, "0" or "no"): the library
 * answers every entry point from the TSC, and a test may require it. */
bool life_forced(void);
/* Whether the test runs served (LIFE_SERVED=1, set by life.sh's
 * life_run_served): its lines must come from a calibration service. */
bool life_served(void);
/* Makes the first time call and waits up to 3 s for the TSC to answer: a
 * test of the fast path has nothing to test otherwise. Fails if it does not
 * (the scripts set FASTTIME_FORCE=1, so libc is never chosen for speed);
 * skips if FASTTIME_FORCE was turned off and the library chose libc. A
 * test run served exits LIFE_EXIT_NOT_SERVED where the TSC answers from a
 * thread of the library's own: the page was refused at start. */
void life_require_fast(void);
/* Whether the library's own per-API choice, as it stands now in this
 * process (its api_choice_last, read from the library's memory through
 * its file's symbol table), leaves every entry point of api_bits (CLOCK_API_*
 * bits) to libc. False where no choice was made yet, or where the library
 * keeps no symbol table: only a choice seen may excuse a test. */
bool life_chosen_libc(uint32_t api_bits);

/* Accuracy against libc: each sample is a sandwich libc, preload, libc; the
 * error is how far the answer lies outside the sandwich. */
struct life_track {
	uint64_t samples;
	uint64_t fast;	   /* answered from the TSC (the tap saw nothing) */
	uint64_t backward; /* steps back from this track's previous answer */
	uint64_t worst_back_ns;
	uint64_t max_error_ns;
	uint64_t last_ns;
};
void life_sample_mono(struct life_track *track);
void life_sample_real(struct life_track *track);
void life_sample_boot(struct life_track *track);
/* Samples both clocks, alternating, for ms milliseconds. */
void life_sample_for(unsigned ms, struct life_track *mono, struct life_track *real);
/* The bound on |answer - libc| the issues set for the fast path. */
#define LIFE_MAX_ERROR_NS 5000u
/* Prints a track and fails on a step back or an error beyond the bound. */
void life_judge(const char *what, const struct life_track *track);

/* Frees and allocates blocks of 2 to 62 KiB in turn (too large for the
 * per-thread cache: each takes malloc's arena lock), for a signal handler
 * to interrupt, until *count reaches target or max_rounds pass; false when
 * malloc failed. */
bool life_churn_malloc(_Atomic uint64_t *count, uint64_t target, unsigned seed,
		       unsigned max_rounds);

/* Why no SCHED_FIFO busy loop may run here, or NULL: one runs only where
 * the kernel throttles real-time threads (sched_rt_runtime_us is not -1:
 * ordinary threads keep a share of the CPU, and the machine survives) and
 * this process may use SCHED_FIFO (root or CAP_SYS_NICE). */
const char *life_fifo_unavailable(void);
/* Starts a child process that spins at SCHED_FIFO priority 1, pinned to
 * cpus[0] for hop_ms, then cpus[1], and so on round the list, for at most
 * seconds (an alarm ends it even if this process dies first); stop it with
 * life_load_stop. It reads no clock through the preload. */
pid_t life_fifo_loop(const int *cpus, unsigned n, unsigned hop_ms, unsigned seconds);
/* Kills and reaps a load child. */
void life_load_stop(pid_t pid);
/* The CPUs this process may run on, up to max; how many. */
unsigned life_cpus(int *cpus, unsigned max);

/* Aborts the process if it is still running after seconds and neither its
 * threads nor its children use CPU any more (a loaded machine gets up to 4
 * times as long): a deadlock must fail the test, not hang it. The thread
 * blocks every signal. */
void life_watchdog(unsigned seconds);
/* Waits for a child up to seconds, longer while its threads still use CPU
 * (up to 4 times as long); a child still running then is shown (its threads
 * and what they wait in) and killed, and the test fails. */
int life_wait_child(pid_t pid, unsigned seconds);

#endif
