/* The refresh thread and the calibration rounds it runs.
 *
 * Each round it pins itself in turn to every CPU of the program's (its own,
 * the main thread's, and those where readers found no line:
 * refresh_cpus_to_visit), takes sandwiches of the kernel's CLOCK_MONOTONIC
 * around a counter read taken the way this CPU allows, and hands the
 * narrowest to the calibration arithmetic; what comes out is published for
 * readers. Between rounds it runs wherever the scheduler puts it among its
 * own CPUs. It opens no file while the program runs: the clocksource was
 * read before main() (refresh_read_kernel), and the CPUs come from
 * sched_getaffinity, which leaves out offline ones, and from the readers. */
#include "config.h"

#include "refresh.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "debug.h"
#include "libc.h"
#include "raw_syscall.h"
#include "sandbox.h"
#include "signal_guard.h"
#include "table.h"

struct refresh_cpu refresh_cpus[CPU_MAX_CPUS];
struct api_cost refresh_api_costs[API_CHOICE_COUNT];
bool refresh_apis_chosen;
struct refresh_choice refresh_choice;
struct refresh_verdict refresh_verdict;

int refresh_state = REFRESH_OFF;
/* A page the kernel zeroes in a child process (MADV_WIPEONFORK, Linux 4.14)
 * but not in a vfork or CLONE_VM child, which shares it: its word is 1
 * while the thread that set it runs in this process (refresh_check_process).
 * NULL where it could not be made: then no child made without fork() is
 * found, and such a child answers with libc once its lines go stale. */
static uint32_t *refresh_process_mark;
#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK 18 /* Linux 4.14; older C library headers lack it */
#endif
/* The thread while the state is RUNNING or STOPPING: joinable, so that a
 * program about to need one thread (unshare, setns) or to install a
 * seccomp filter can wait until it has gone (refresh_stop). */
static pthread_t refresh_thread;
/* A thread asked to stop and not joined (in a signal handler, or it
 * outlasted the wait): the next start joins it first. */
static pthread_t refresh_unjoined_thread;
static bool refresh_has_unjoined;
/* 0 while the thread may run; an enum refresh_stop_kind once asked to
 * stop. The thread sleeps on this word (a futex), so a stop wakes it. */
static uint32_t refresh_stop_word;
/* The process the library's memory belongs to: the constructor's, then
 * each fork child's. A vfork child shares the memory and is not it. */
static pid_t refresh_owner_pid;
static uint64_t refresh_configured_interval_ns = SETTINGS_DEFAULT_INTERVAL_MS * 1000000ull;
static bool refresh_relaxed;
static bool refresh_force_fast;
/* CLOCK_READ_BITS for readers, and how the sandwiches read the counter:
 * ordered wherever the CPU allows it, whatever the readers' mode. */
static uint32_t refresh_mode_flags;
static struct cpu_reading refresh_sample_reading;
/* The kernel's clocksource, read before main() (refresh_read_kernel). */
static struct cpu_facts refresh_kernel_facts;
static bool refresh_kernel_read;
/* The narrowest sandwich of any round so far, and how many rounds in a row
 * have been many times wider (evidence_kernel_clock_slowed). */
static uint64_t refresh_narrowest_ever_ns;
static unsigned refresh_slow_rounds;
static bool refresh_in_round;
static bool refresh_realtime_known;
/* Set by the watch when the counter and the kernel's clock parted faster
 * than any rate the kernel can run at: the next round restarts every line. */
static bool refresh_discontinuity;
/* When the last round asked for the next (calib_next_interval_ns), ns. */
static uint64_t refresh_round_interval_ns;
static bool refresh_watch_look(void);
/* CPUs with a line after the last round. */
static unsigned refresh_lines_published;
/* Every CLOCK_API_* bit readers have been given since the thread started. */
static uint32_t refresh_apis_ever_published;
static uint64_t refresh_started_ns;

#define REFRESH_MASK_WORDS TABLE_WANTED_WORDS
/* The CPUs the thread found itself allowed when it started (its creator's),
 * or as someone else set them since (taskset -a, a program that moves
 * every thread of its own). */
static unsigned long refresh_start_mask[REFRESH_MASK_WORDS];
/* What the thread last asked the kernel for itself (a pin, or the CPUs to
 * run on between rounds): a mask found different was changed by someone
 * else, and is never undone. */
static unsigned long refresh_own_mask[REFRESH_MASK_WORDS];
/* Set when the thread found its mask changed by someone else in a round:
 * the round stops pinning, and leaves the mask as it was set. */
static bool refresh_moved;
/* The tools' rounds visit every online CPU their cpuset allows, whatever
 * the caller's own affinity: they describe the machine. The library's
 * thread visits only the program's CPUs. */
static bool refresh_whole_cpuset;
/* Those the last round could pin to. */
static unsigned long refresh_usable_mask[REFRESH_MASK_WORDS];
/* The thread's own CPUs (refresh_start_mask narrowed to the main thread's)
 * that the last round could pin to, or all of them when it could pin to
 * none: where the thread runs between rounds. Never a CPU it visits only
 * for other threads: a pinned poller's CPU gets a round's pin, not the
 * watch's wake-ups. Also where a reader sends the thread when it is stuck
 * on a CPU it pinned to (refresh_free_stuck_thread): written by the thread
 * word by word, read by readers. */
static unsigned long refresh_home_mask[REFRESH_MASK_WORDS];
/* What the last round visited: a CPU reported since (table_wanted) that is
 * not in it starts a round at the watch's next look. */
static unsigned long refresh_visit_mask[REFRESH_MASK_WORDS];
/* The main thread's CPUs at the last round: a change is a move of the
 * program, and the CPUs readers reported are forgotten. */
static unsigned long refresh_main_mask[REFRESH_MASK_WORDS];
static bool refresh_main_known;
/* The refresh thread's id, for a reader that moves it back; 0 where no
 * refresh thread runs (a fork child, the tools' own rounds). */
static pid_t refresh_tid;
/* The visit in progress: 0 between visits; else the counter when the
 * thread began pinning to refresh_visit_cpu, or when a rescuer last tried to
 * move it away (REFRESH_VISIT_MOVED set where that worked), or
 * REFRESH_VISIT_MOVING while a rescuer makes the system call
 * (refresh_rescue). A rescue may come again REFRESH_VISIT_MAX_NS later: the
 * thread may have undone the last one with its pin. */
static uint64_t refresh_visit_since_tsc;
static uint32_t refresh_visit_cpu;
#define REFRESH_VISIT_MOVED  (1ull << 63)
#define REFRESH_VISIT_MOVING UINT64_MAX
/* How long the thread waits, at a visit's end, for a rescuer's system call
 * under way to return (it takes microseconds unless the rescuer is
 * preempted). */
#define REFRESH_RESCUE_WAIT_NS 100000000ull
/* The soonest the watch looks again after a look. */
#define REFRESH_LOOK_SOONEST_NS 1000000ull
/* When (monotonic ns) the validity last granted ends: the watch looks
 * before then. */
static uint64_t refresh_valid_until_ns;
/* REFRESH_VISIT_MAX_NS in ticks, once a line says how fast they run. */
static uint64_t refresh_visit_max_ticks;
/* The rates (slopes) the lines learned: the least and the most in the
 * span of WATCH_RATE_MEMORY_NS that began at refresh_rates_since_ns [0]
 * and in the one before [1], and the last one learned while the rate held
 * still (refresh_rate_ppm). */
static uint64_t refresh_rate_low[2], refresh_rate_high[2], refresh_rate_quiet;
static uint64_t refresh_rates_since_ns;
static uint64_t refresh_rate_ppm(void);
/* One round's samples, taken before any line moves (too large for the
 * thread's stack on machines with thousands of CPUs). */
static struct calib_sample refresh_round_samples[CPU_MAX_CPUS];

static uint64_t refresh_mono_ns(void)
{
	struct timespec ts;

	libc_clock_gettime(CLOCK_MONOTONIC, &ts);
	return timespec_to_ns(&ts);
}

static uint64_t refresh_real_ns(void)
{
	struct timespec ts;

	libc_clock_gettime(CLOCK_REALTIME, &ts);
	return timespec_to_ns(&ts);
}

/* Marks this process as the one the running thread belongs to: makes the
 * page the first time (one mmap, no descriptor), sets its word. */
static void refresh_mark_process(void)
{
	uint32_t *mark = __atomic_load_n(&refresh_process_mark, __ATOMIC_ACQUIRE);

	if (mark == NULL) {
		void *page =
		    mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (page == MAP_FAILED)
			return;
		if (madvise(page, 4096, MADV_WIPEONFORK) != 0) {
			munmap(page, 4096);
			return;
		}
		mark = page;
	}
	__atomic_store_n(mark, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&refresh_process_mark, mark, __ATOMIC_RELEASE);
}

/* Sets the state, and CLOCK_START_PENDING in api_flags while it is IDLE.
 * RUNNING marks the process it runs in first (refresh_check_process). */
static void refresh_set_state(int state)
{
	if (state == REFRESH_RUNNING)
		refresh_mark_process();
	__atomic_store_n(&refresh_state, state, __ATOMIC_RELEASE);
	if (state == REFRESH_IDLE)
		__atomic_fetch_or(&table_shared.api_flags, CLOCK_START_PENDING, __ATOMIC_RELEASE);
	else
		__atomic_fetch_and(&table_shared.api_flags, ~(uint32_t)CLOCK_START_PENDING,
				   __ATOMIC_RELEASE);
}

void refresh_configure(const struct settings *settings)
{
	refresh_configured_interval_ns = (uint64_t)settings->interval_ms * 1000000ull;
	refresh_relaxed = settings->relaxed;
	refresh_force_fast = settings->force;
	refresh_owner_pid = getpid();
	refresh_set_state(settings->disabled ? REFRESH_OFF : REFRESH_IDLE);
}

uint64_t refresh_interval_after(unsigned round, uint64_t configured_ns)
{
	uint64_t interval = REFRESH_FIRST_INTERVAL_NS;

	for (unsigned i = 0; i < round && interval < configured_ns; i++)
		interval *= CALIB_INTERVAL_GROWTH;
	return interval < configured_ns ? interval : configured_ns;
}

/* Whether a rescuer moved, or is moving, the thread in this visit. */
static bool refresh_rescue_seen(void)
{
	uint64_t since = __atomic_load_n(&refresh_visit_since_tsc, __ATOMIC_ACQUIRE);

	return since != 0 && (since & REFRESH_VISIT_MOVED);
}

/* Whether someone else changed this thread's affinity since it last set it:
 * then what they set becomes the thread's own CPUs, and refresh_moved says
 * so. The tools' rounds never ask. */
static bool refresh_mask_moved(void)
{
	unsigned long found[REFRESH_MASK_WORDS];

	if (refresh_whole_cpuset)
		return false;
	memset(found, 0, sizeof found);
	if (sched_getaffinity(0, sizeof found, (cpu_set_t *)found) != 0 ||
	    cpu_mask_equal(found, refresh_own_mask, REFRESH_MASK_WORDS))
		return false;
	/* A rescuer moved this thread in the visit under way (refresh_rescue):
	 * no move of the program's. */
	if (refresh_rescue_seen()) {
		memcpy(refresh_own_mask, found, sizeof found);
		return false;
	}
	memcpy(refresh_start_mask, found, sizeof found);
	memcpy(refresh_own_mask, found, sizeof found);
	refresh_moved = true;
	/* The whole process was moved (taskset -a -p): the CPUs its threads
	 * ran on before say nothing of where they run now. */
	table_wanted_clear();
	return true;
}

/* Sets this thread's affinity, unless someone else changed it since the
 * thread last did (then it stays as they set it). */
static bool refresh_set_own_mask(const unsigned long *mask)
{
	if (refresh_moved || refresh_mask_moved())
		return false;
	if (sched_setaffinity(0, REFRESH_MASK_WORDS * sizeof *mask, (const cpu_set_t *)mask) != 0)
		return false;
	memcpy(refresh_own_mask, mask, sizeof refresh_own_mask);
	return true;
}

static bool refresh_pin(uint32_t cpu)
{
	unsigned long one[REFRESH_MASK_WORDS];
	memset(one, 0, sizeof one);
	cpu_mask_set(one, cpu);
	return refresh_set_own_mask(one);
}

/* Whether cpu's line answers readers: the thread could run there, its
 * calibration has not been dropped, and it has a line. */
static bool refresh_cpu_answers(const struct refresh_cpu *c)
{
	return c->allowed && !c->dropped && !c->withdrawn && c->calib.line.mult != 0;
}

/* Sets the home mask word by word: readers read it as they write it
 * (refresh_free_stuck_thread). */
static void refresh_set_home(const unsigned long *mask)
{
	for (unsigned w = 0; w < REFRESH_MASK_WORDS; w++)
		__atomic_store_n(&refresh_home_mask[w], mask[w], __ATOMIC_RELAXED);
}

/* Runs the thread anywhere among its own CPUs that the last round could
 * pin to, so that its waiting and its measurements land on no one fixed
 * CPU, and on no CPU it visits only for other threads. */
static void refresh_unpin(void)
{
	refresh_set_own_mask(refresh_home_mask);
}

/* One sandwich: the kernel's monotonic clock, the counter read as the
 * sandwiches read it (with the CPU it was read on, in *stamp), the kernel's
 * clock again; false when the kernel's clock ran back between. */
static bool refresh_sandwich(struct calib_sample *sample, struct cpu_stamp *stamp)
{
	uint64_t before = refresh_mono_ns(), after;

	*stamp = cpu_read_stamp(refresh_sample_reading);
	after = refresh_mono_ns();
	if (after < before)
		return false;
	sample->tsc = stamp->tsc;
	sample->width_ns = after - before;
	sample->ns = before + sample->width_ns / 2;
	return true;
}

/* Takes sandwiches on the CPU this thread is pinned to; false when none was
 * taken there (the thread was moved each time). */
static bool refresh_sample_cpu(uint32_t cpu, struct calib_sample *best, uint32_t *node)
{
	struct calib_sample samples[REFRESH_SANDWICHES];
	unsigned n = 0;

	for (unsigned i = 0; i < REFRESH_SANDWICHES; i++) {
		struct cpu_stamp stamp;

		if (!refresh_sandwich(&samples[n], &stamp) || stamp.cpu != cpu)
			continue;
		*node = stamp.node;
		n++;
	}
	if (n == 0)
		return false;
	*best = samples[calib_narrowest(samples, n)];
	return true;
}

static const char *refresh_outcome_name(enum calib_outcome outcome)
{
	switch (outcome) {
	case CALIB_NEED_MORE: return "anchored";
	case CALIB_FIRST_LINE: return "first line";
	case CALIB_CONTINUED: return "continued";
	case CALIB_STEPPED: return "stepped";
	case CALIB_REJECTED: return "rejected";
	}
	return "?";
}

void refresh_cpu_failed(uint32_t cpu, struct refresh_cpu *state, uint64_t now)
{
	if (state->failing_since_ns == 0)
		state->failing_since_ns = now;
	if (!state->dropped && now - state->failing_since_ns >= REFRESH_DROP_AFTER_NS) {
		state->dropped = true;
		table_withdraw(cpu);
		debug_log("cpu %u: calibration failing for 15 s; answering with libc there", cpu);
	}
}

/* Takes this round's sample on cpu, pinned there; false (and the failure
 * noted) when none could be taken. */
static bool refresh_sample_one(uint32_t cpu, struct calib_sample *sample)
{
	struct refresh_cpu *state = &refresh_cpus[cpu];

	if (!refresh_sample_cpu(cpu, sample, &state->node)) {
		refresh_cpu_failed(cpu, state, refresh_mono_ns());
		return false;
	}
	return true;
}

/* Begins a visit to cpu: readers may now see how long it lasts. */
static void refresh_visit_begin(uint32_t cpu)
{
	__atomic_store_n(&refresh_visit_cpu, cpu, __ATOMIC_RELAXED);
	__atomic_store_n(&refresh_visit_since_tsc, cpu_rdtsc(), __ATOMIC_RELEASE);
}

/* Closes the visit under way; true when a rescuer moved the thread in it
 * (then this thread's own mask is what the rescuer left). */
static bool refresh_visit_close(void)
{
	uint64_t since = __atomic_load_n(&refresh_visit_since_tsc, __ATOMIC_ACQUIRE);
	struct timespec pause = { 0, 50000 };
	bool rescued;

	/* A rescuer's system call under way: let it land first, so that the
	 * mask taken below is the one it leaves. */
	for (uint64_t waited = 0;; waited += (uint64_t)pause.tv_nsec) {
		if (since == REFRESH_VISIT_MOVING && waited < REFRESH_RESCUE_WAIT_NS) {
			nanosleep(&pause, NULL);
			since = __atomic_load_n(&refresh_visit_since_tsc, __ATOMIC_ACQUIRE);
			continue;
		}
		if (since == REFRESH_VISIT_MOVING ||
		    __atomic_compare_exchange_n(&refresh_visit_since_tsc, &since, 0, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			break;
	}
	rescued = since == REFRESH_VISIT_MOVING || (since != 0 && (since & REFRESH_VISIT_MOVED));
	/* A rescuer set this thread's mask: that is no move of the program's
	 * (refresh_mask_moved), and the mask is what the kernel now holds. */
	if (rescued) {
		memset(refresh_own_mask, 0, sizeof refresh_own_mask);
		sched_getaffinity(0, sizeof refresh_own_mask, (cpu_set_t *)refresh_own_mask);
	}
	return rescued;
}

/* Ends the visit to cpu begun at start_ns; false when the CPU was not
 * free: a reader moved the thread away, or it waited more than
 * REFRESH_VISIT_MAX_NS. Rounds then skip the CPU for a while (its line is
 * withdrawn: refresh_withdraw_unsampled), so that a CPU a real-time thread
 * owns costs one bounded wait now and then, not one each round. */
static bool refresh_visit_end(uint32_t cpu, uint64_t start_ns)
{
	struct refresh_cpu *c = &refresh_cpus[cpu];
	bool rescued = refresh_visit_close();
	uint64_t now = refresh_mono_ns();

	if (!rescued && now - start_ns <= REFRESH_VISIT_MAX_NS) {
		c->unreachable_backoff_ns = 0;
		return true;
	}
	c->unreachable_backoff_ns = c->unreachable_backoff_ns == 0 ? REFRESH_UNREACHABLE_FIRST_NS
				    : c->unreachable_backoff_ns >= REFRESH_UNREACHABLE_LAST_NS
					? REFRESH_UNREACHABLE_LAST_NS
					: 2 * c->unreachable_backoff_ns;
	c->unreachable_until_ns = now + c->unreachable_backoff_ns;
	debug_log("cpu %u: the thread %s after %.1f ms there; skipping it for %.0f s", cpu,
		  rescued ? "was stuck and moved back by a reader" : "ran only",
		  (double)(now - start_ns) / 1e6, (double)c->unreachable_backoff_ns / 1e9);
	return false;
}

/* Whether this round skips cpu: it was not free lately. The CPU the thread
 * is on is never skipped: it is running there. */
static bool refresh_visit_skipped(uint32_t cpu, uint64_t now)
{
	return refresh_cpus[cpu].unreachable_until_ns > now && (unsigned)sched_getcpu() != cpu;
}

/* Moves the refresh thread off the CPU of a visit that lasted
 * REFRESH_VISIT_MAX_NS (or, forced, of any visit: a stopper waiting to join
 * it, where no line may yet say how fast the counter runs), to its home
 * CPUs less that one. One rescuer at a time; a failed system call is
 * tried again only as late as a new visit would be. */
static void refresh_rescue(bool forced)
{
	uint64_t since = __atomic_load_n(&refresh_visit_since_tsc, __ATOMIC_ACQUIRE);
	uint64_t max_ticks = __atomic_load_n(&refresh_visit_max_ticks, __ATOMIC_RELAXED);
	unsigned long home[REFRESH_MASK_WORDS];
	pid_t tid = __atomic_load_n(&refresh_tid, __ATOMIC_RELAXED);
	uint32_t cpu = __atomic_load_n(&refresh_visit_cpu, __ATOMIC_RELAXED);
	bool any = false;
	int saved_errno, rc;

	if (since == 0 || since == REFRESH_VISIT_MOVING || tid == 0)
		return;
	if (!forced && (max_ticks == 0 || cpu_rdtsc() - (since & ~REFRESH_VISIT_MOVED) < max_ticks))
		return;
	for (unsigned w = 0; w < REFRESH_MASK_WORDS; w++)
		home[w] = __atomic_load_n(&refresh_home_mask[w], __ATOMIC_RELAXED);
	if (cpu < CPU_MAX_CPUS)
		cpu_mask_clear(home, cpu);
	for (unsigned w = 0; w < REFRESH_MASK_WORDS; w++)
		any = any || home[w] != 0;
	if (!any ||
	    !__atomic_compare_exchange_n(&refresh_visit_since_tsc, &since, REFRESH_VISIT_MOVING,
					 false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return;
	saved_errno = errno;
	rc = sched_setaffinity(tid, sizeof home, (cpu_set_t *)home);
	errno = saved_errno;
	/* Only the rescuer writes the word while it says MOVING. */
	__atomic_store_n(&refresh_visit_since_tsc,
			 (cpu_rdtsc() & ~REFRESH_VISIT_MOVED) | (rc == 0 ? REFRESH_VISIT_MOVED : 0),
			 __ATOMIC_RELEASE);
}

void refresh_free_stuck_thread(void)
{
	refresh_rescue(false);
}

/* Notes the rate c's last update learned (refresh_rate_ppm): a line
 * continued, or one restarted at a rate measured across the lapse (relearned):
 * under a load that stops the thread, every update may be a restart, and a
 * slew learned only there must still shorten the windows. */
/* Counts slope among the rates the kernel's clock ran at lately (now). */
static void refresh_note_slope(uint64_t slope, uint64_t now)
{
	if (refresh_rates_since_ns == 0 || now - refresh_rates_since_ns > WATCH_RATE_MEMORY_NS) {
		refresh_rate_low[1] = refresh_rate_low[0];
		refresh_rate_high[1] = refresh_rate_high[0];
		refresh_rate_low[0] = refresh_rate_high[0] = slope;
		refresh_rates_since_ns = now;
	}
	if (slope < refresh_rate_low[0])
		refresh_rate_low[0] = slope;
	if (slope > refresh_rate_high[0])
		refresh_rate_high[0] = slope;
}

static void refresh_note_rate(const struct refresh_cpu *c, uint64_t now, bool relearned)
{
	uint64_t slope = c->calib.slope_mult;

	if (slope == 0 || (c->last_outcome != CALIB_CONTINUED && !relearned))
		return;
	refresh_note_slope(slope, now);
	/* While the rate holds still, it is the one a slew returns to. */
	if (refresh_rate_quiet == 0 || refresh_rate_ppm() <= WATCH_RATE_FLOOR_PPM)
		refresh_rate_quiet = slope;
}

/* How far the kernel's rate may move within a window, in parts per
 * million: across the rates learned lately (the last two spans of
 * WATCH_RATE_MEMORY_NS) and the rate it held while still, for a slew
 * ends by going back to it however long it lasted; never less than the
 * floor (watch.h). */
static uint64_t refresh_rate_ppm(void)
{
	uint64_t low = refresh_rate_quiet, high = refresh_rate_quiet, ppm;

	for (unsigned i = 0; i < 2; i++) {
		if (refresh_rate_low[i] == 0)
			continue;
		if (low == 0 || refresh_rate_low[i] < low)
			low = refresh_rate_low[i];
		if (refresh_rate_high[i] > high)
			high = refresh_rate_high[i];
	}
	if (low == 0)
		return WATCH_RATE_FLOOR_PPM;
	ppm = (uint64_t)((unsigned __int128)(high - low) * 1000000u / low);
	return ppm > WATCH_RATE_FLOOR_PPM ? ppm : WATCH_RATE_FLOOR_PPM;
}

/* The rate c's line is judged at: kernel_mult where the caller knows the
 * kernel's rate better (a look just found it on another CPU's line), else
 * the rate c learned, else its line's own. */
static uint64_t refresh_judging_rate(const struct refresh_cpu *c, uint64_t kernel_mult)
{
	if (kernel_mult != 0)
		return kernel_mult;
	return c->calib.slope_mult != 0 ? c->calib.slope_mult : c->calib.line.mult;
}

/* The kernel's clock minus c's line at tsc, as c's last sample and the
 * kernel's rate (refresh_judging_rate) predict it, and how fast that moves
 * (parts per billion): a bent line pays an error back until its aim, then
 * runs on past it. */
static int64_t refresh_predicted_error(const struct refresh_cpu *c, uint64_t tsc,
				       uint64_t kernel_mult, int64_t *drift_ppb)
{
	const struct calib_cpu *k = &c->calib;
	uint64_t slope = refresh_judging_rate(c, kernel_mult);
	int64_t ticks = (int64_t)(tsc - k->anchor.tsc);
	uint64_t kernel =
	    k->anchor.ns + (uint64_t)(int64_t)(((__int128)ticks * (__int128)slope) >> 64);

	*drift_ppb =
	    (int64_t)(((__int128)slope - (__int128)k->line.mult) * 1000000000 / (__int128)slope);
	return (int64_t)(kernel - calib_line_eval(k->line, tsc));
}

/* How long c's line may answer from tsc: its predicted error (at
 * kernel_mult, refresh_judging_rate) plus deviation_ns (what a look just
 * measured beyond the prediction), grown since since_ns ago at the rate the
 * kernel's may move, within the budget less the sandwiches' noise
 * (watch_trusted_ns). */
static uint64_t refresh_cpu_trusted_ns(const struct refresh_cpu *c, uint64_t tsc,
				       uint64_t kernel_mult, int64_t deviation_ns,
				       uint64_t since_ns)
{
	uint64_t noise = 2 * c->last_width_ns + 1000u;
	int64_t drift, error = refresh_predicted_error(c, tsc, kernel_mult, &drift) + deviation_ns;

	if (noise >= WATCH_LINE_BUDGET_NS)
		return 0;
	return watch_trusted_ns(error, drift, since_ns, refresh_rate_ppm(),
				WATCH_LINE_BUDGET_NS - noise);
}

/* The window every answering line may have from tsc (now_ns): the least of
 * theirs. After a round (looked NULL), each from its own sample at the
 * rate it learned; after a look at the line of the CPU looked, from the
 * look, whose deviation from that line's prediction is the kernel's own and
 * so holds for every line, and at the rate that prediction just proved.
 * Not at each line's own learned rate: a line restarted at a rate learned
 * across a slew's end (its CPU was left unvisited meanwhile) parts from
 * the kernel's clock at the difference, and a look elsewhere would renew
 * it round after round on its own wrong prediction. */
static uint64_t refresh_lines_window(uint64_t tsc, uint64_t now_ns,
				     const struct refresh_cpu *looked, int64_t deviation_ns)
{
	uint64_t window = WATCH_VALID_NS;
	uint64_t kernel_mult = looked != NULL ? refresh_judging_rate(looked, 0) : 0;

	for (uint32_t cpu = 0; cpu < CPU_MAX_CPUS; cpu++) {
		const struct refresh_cpu *c = &refresh_cpus[cpu];
		uint64_t since, trusted;

		if (!refresh_cpu_answers(c))
			continue;
		since = looked != NULL || now_ns < c->last_sample_mono_ns
			    ? 0
			    : now_ns - c->last_sample_mono_ns;
		trusted = refresh_cpu_trusted_ns(c, tsc, kernel_mult,
						 looked != NULL ? deviation_ns : 0, since);
		if (trusted < window)
			window = trusted;
	}
	return window;
}

/* Whether the lines went past their validity (readers answer with libc)
 * since they were last renewed. */
static bool refresh_lines_lapsed(void)
{
	uint64_t valid_from = __atomic_load_n(&table_shared.valid_from_tsc, __ATOMIC_ACQUIRE);
	uint64_t valid_ticks = __atomic_load_n(&table_shared.valid_ticks, __ATOMIC_ACQUIRE);

	return refresh_lines_published > 0 && cpu_rdtsc() - valid_from > valid_ticks;
}

/* Leaves out of this round's lines the samples a later visit made old (it
 * waited to run on its CPU): a line drawn through one would be off by the
 * kernel's rate change times that wait. Their lines are withdrawn, and the
 * next round, which skips the CPU that was not free, samples them again. */
static void refresh_forget_old_samples(unsigned long *sampled)
{
	uint64_t now = refresh_mono_ns();

	for (uint32_t cpu = cpu_mask_next(sampled, REFRESH_MASK_WORDS, 0); cpu < CPU_MAX_CPUS;
	     cpu = cpu_mask_next(sampled, REFRESH_MASK_WORDS, cpu + 1))
		if (now - refresh_round_samples[cpu].ns > REFRESH_VISIT_MAX_NS)
			cpu_mask_clear(sampled, cpu);
}

/* Before a round publishes its lines: the validity granted for the old
 * ones ends soon, so that a new line, bent however it is, cannot run
 * further than the budget under it if the thread stops before it grants
 * the new lines theirs (WATCH_MAX_DRIFT_PPM bounds how fast a line and the
 * kernel's clock can part). mult converts to ticks. */
static void refresh_shorten_validity(uint64_t mult)
{
	uint64_t valid_from = __atomic_load_n(&table_shared.valid_from_tsc, __ATOMIC_ACQUIRE);
	uint64_t valid_ticks = __atomic_load_n(&table_shared.valid_ticks, __ATOMIC_ACQUIRE);
	uint64_t soon = cpu_rdtsc() - valid_from +
			calib_ticks_for_ns(mult, (uint64_t)WATCH_LINE_BUDGET_NS * 1000000u /
						     WATCH_MAX_DRIFT_PPM);

	if (mult != 0 && soon < valid_ticks)
		table_set_validity(valid_from, soon);
}

/* After the lines went stale (the thread could not run, or not soon
 * enough), their readers answer with libc, the kernel's clock: each line
 * starts again on its next sample, there, rather than continue from where
 * it ran to meanwhile. True when they did. */
static bool refresh_relaunch_if_lapsed(void)
{
	if (!refresh_lines_lapsed())
		return false;
	for (uint32_t cpu = 0; cpu < CPU_MAX_CPUS; cpu++)
		if (refresh_cpu_answers(&refresh_cpus[cpu]))
			refresh_cpus[cpu].withdrawn = true;
	debug_log("the lines went stale before this round: restarting them at its samples");
	return true;
}

/* Takes from readers each line the round could not sample (the CPU was
 * skipped, not free, or its sandwiches failed): nothing says where it is
 * now, and the validity the round grants is earned by the lines it
 * sampled. Its readers answer with libc until a sample restarts it. */
static void refresh_withdraw_unsampled(const unsigned long *renewed)
{
	for (uint32_t cpu = 0; cpu < CPU_MAX_CPUS; cpu++) {
		struct refresh_cpu *c = &refresh_cpus[cpu];

		if (!c->allowed || c->dropped || c->calib.line.mult == 0 ||
		    cpu_mask_has(renewed, cpu))
			continue;
		if (!c->withdrawn)
			debug_log("cpu %u: not sampled this round: answering with libc there "
				  "until it is",
				  cpu);
		c->withdrawn = true;
		table_withdraw(cpu);
	}
}

/* Learns the rate before c's line restarts at sample: the round's rate
 * (round_mult, learned on the CPUs whose lines answered until now), the
 * kernel's clock being one for every CPU; else the rate from c's last
 * sample to sample, where the pair says it (calib_slope_estimate). Not
 * c's own first where another is fresher: c's last sample may be seconds
 * old (its CPU was skipped, or its line lapsed), and a rate learned across
 * a slew's start or end is neither, parting from the kernel's clock at
 * the difference as soon as the line restarts. */
static bool refresh_relearn_rate(struct refresh_cpu *c, const struct calib_sample *sample,
				 uint64_t round_mult)
{
	uint64_t mult = round_mult, uncertainty;

	if (mult == 0 && !calib_slope_estimate(&c->calib, sample, &mult, &uncertainty))
		return false;
	c->calib.slope_mult = mult;
	return true;
}

/* Moves cpu's line on to its sample, drawn with the machine's slope, from
 * where its readers are now; or, after a discontinuity the watch saw, steps
 * it onto the sample. */
static bool refresh_update_one(uint32_t cpu, const struct calib_sample *sample,
			       uint64_t next_interval_ns, uint64_t shared_mult, bool restart)
{
	struct refresh_cpu *state = &refresh_cpus[cpu];
	bool relearned = false;

	state->previous_slope_mult = state->calib.slope_mult;
	/* A line its readers left (they answer with libc, the kernel's own
	 * clock) starts again on the sample, where they are, at the rate
	 * measured since its last sample: lines that lapse round after round
	 * would otherwise keep a rate the kernel's clock left long ago. */
	if (!restart && state->withdrawn && state->calib.line.mult != 0)
		relearned = refresh_relearn_rate(state, sample, shared_mult);
	if (restart || (state->withdrawn && state->calib.line.mult != 0))
		state->last_outcome = calib_cpu_restart(&state->calib, sample);
	else
		state->last_outcome =
		    calib_cpu_update_at(&state->calib, sample, next_interval_ns, shared_mult,
					cpu_read_stamp(refresh_sample_reading).tsc);
	/* What the watch compares its next look with: the kernel's clock
	 * minus the line now drawn, at the sample (a line restarted there is
	 * on it, whatever the old one's error). */
	state->look_error_ns =
	    state->calib.line.mult != 0 && state->last_outcome != CALIB_REJECTED
		? (int64_t)(sample->ns - calib_line_eval(state->calib.line, sample->tsc))
		: state->calib.last_error_ns;
	state->look_mono_ns = sample->ns;
	state->last_sample_mono_ns = sample->ns;
	state->last_width_ns = sample->width_ns;
	if (state->last_outcome == CALIB_REJECTED) {
		refresh_cpu_failed(cpu, state, refresh_mono_ns());
		debug_log("cpu %u: sample rejected (sandwich %llu ns)", cpu,
			  (unsigned long long)sample->width_ns);
		return false;
	}
	state->failing_since_ns = 0;
	state->dropped = false;
	refresh_note_rate(state, sample->ns, relearned);
	if (state->calib.line.mult != 0) {
		state->withdrawn = false;
		table_publish(cpu, state->calib.line);
	}
	if (state->last_outcome != CALIB_NEED_MORE)
		debug_log("cpu %u: %s, %.6f ns/tick, error %+lld ns, sandwich %llu ns", cpu,
			  refresh_outcome_name(state->last_outcome),
			  (double)state->calib.line.mult / 18446744073709551616.0,
			  (long long)state->calib.last_error_ns,
			  (unsigned long long)sample->width_ns);
	return true;
}

void refresh_offset_samples(struct calib_offset_sample *samples, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		samples[i].mono_before = refresh_mono_ns();
		samples[i].real = refresh_real_ns();
		samples[i].mono_after = refresh_mono_ns();
	}
}

/* CLOCK_REALTIME minus CLOCK_MONOTONIC changes only when the clock is set
 * (or the machine resumes: CLOCK_MONOTONIC stops in suspend): publishes it
 * the first time and whenever it moves by more than the sandwich can
 * explain. True when it moved. */
static bool refresh_realtime_offset(void)
{
	struct calib_offset_sample samples[REFRESH_SANDWICHES];
	/* Loaded before the samples: a reader that publishes a step while
	 * they are taken (preload_follow_realtime_step) is newer than they
	 * are, and the swap below then leaves its offset in place. */
	uint64_t published = clock_realtime_offset();
	uint64_t offset, width;
	int64_t moved;

	refresh_offset_samples(samples, REFRESH_SANDWICHES);
	if (!refresh_realtime_known) {
		if (!calib_realtime_offset(samples, REFRESH_SANDWICHES, &offset, &width))
			return false;
		__atomic_store_n(&table_shared.realtime_offset_ns, offset, __ATOMIC_RELEASE);
		refresh_realtime_known = true;
		return false;
	}
	if (watch_realtime_judge(samples, REFRESH_SANDWICHES, published, WATCH_STEP_THRESHOLD_NS,
				 &offset, &moved) != WATCH_REALTIME_SET)
		return false;
	if (!__atomic_compare_exchange_n(&table_shared.realtime_offset_ns, &published, offset,
					 false, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		return false;
	debug_log("realtime clock was set: moved %+lld ns", (long long)moved);
	return true;
}

/* Trusts the lines for the watch's window from tsc on, after publishing a
 * moved realtime offset. In this order, at every renewal: while the lines
 * were stale their readers answered with libc, and a step of the clock
 * they saw there must not be taken back by lines that come back with the
 * old offset (a round or the per-API measurement lasts long enough on a
 * loaded machine for the lines to go stale within it). */
static void refresh_trust_lines(uint64_t tsc, uint64_t mult, uint64_t window_ns, bool restarted)
{
	uint64_t valid_from, valid_ticks;

	if (refresh_realtime_known)
		refresh_realtime_offset();
	/* Lines that went stale meanwhile (the thread was preempted) are not
	 * brought back as they are: their readers answered with libc, and a
	 * line behind the kernel's clock would hold them by their clamp for
	 * as long as it is behind. The next round restarts them there
	 * (refresh_relaunch_if_lapsed). */
	if (!restarted && refresh_lines_lapsed())
		return;
	watch_validity(tsc, mult, window_ns, &valid_from, &valid_ticks);
	table_set_validity(valid_from, valid_ticks);
	refresh_valid_until_ns = refresh_mono_ns() + window_ns;
	__atomic_store_n(&refresh_visit_max_ticks, calib_ticks_for_ns(mult, REFRESH_VISIT_MAX_NS),
			 __ATOMIC_RELAXED);
}

/* Whether a CPU's last round counts toward the clocksource's probation. */
static bool refresh_cpu_steady(const struct refresh_cpu *c)
{
	return c->last_outcome == CALIB_CONTINUED &&
	       evidence_cpu_steady(c->calib.last_error_ns, c->last_width_ns, c->previous_slope_mult,
				   c->calib.slope_mult);
}

/* The main thread's CPUs into main_cpus; false (and none) when they cannot
 * be had. A change since the last round moved the program (the main thread
 * alone, or every thread with the change to this one lost): the CPUs
 * readers reported are forgotten, and those still without a line report
 * again. */
static bool refresh_main_cpus(unsigned long *main_cpus)
{
	memset(main_cpus, 0, REFRESH_MASK_WORDS * sizeof *main_cpus);
	if (sched_getaffinity(getpid(), REFRESH_MASK_WORDS * sizeof *main_cpus,
			      (cpu_set_t *)main_cpus) != 0)
		return false;
	if (refresh_main_known && !cpu_mask_equal(main_cpus, refresh_main_mask, REFRESH_MASK_WORDS))
		table_wanted_clear();
	memcpy(refresh_main_mask, main_cpus, sizeof refresh_main_mask);
	refresh_main_known = true;
	return true;
}

/* The CPUs this round visits, and the thread's own among them (home). The
 * library's thread visits every CPU a thread of the program is known to run
 * on, and no other: its own CPUs (refresh_start_mask, as someone else may
 * have changed them since), narrowed to the main thread's where the two
 * overlap; the main thread's; and those where readers found no line
 * (table_wanted: a worker pinned to a CPU of its own). The narrowing keeps
 * a whole process moved at run time within its new CPUs even where the
 * change to this thread was lost (made between its look and its pin, which
 * then undid it): the main thread shows the move. sched_getaffinity leaves
 * out offline CPUs, and the pin refuses them and those outside the cpuset.
 * The tools: every online CPU their cpuset lets them pin to (sysfs). */
static void refresh_cpus_to_visit(unsigned long *visit, unsigned long *home)
{
	unsigned long main_cpus[REFRESH_MASK_WORDS], narrowed[REFRESH_MASK_WORDS];
	unsigned long wanted[REFRESH_MASK_WORDS];

	if (refresh_whole_cpuset) {
		if (!cpu_online_mask(visit, REFRESH_MASK_WORDS))
			memcpy(visit, refresh_start_mask, sizeof refresh_start_mask);
		memcpy(home, visit, sizeof refresh_home_mask);
		return;
	}
	/* A change since the last round is taken in here; it is no reason
	 * to stop this round's walk. */
	refresh_mask_moved();
	refresh_moved = false;
	memcpy(home, refresh_start_mask, sizeof refresh_start_mask);
	if (refresh_main_cpus(main_cpus)) {
		memcpy(narrowed, home, sizeof narrowed);
		if (cpu_mask_and(narrowed, main_cpus, REFRESH_MASK_WORDS))
			memcpy(home, narrowed, sizeof narrowed);
	}
	/* Read after any clearing above: a report made since stays. */
	table_wanted_copy(wanted);
	for (unsigned i = 0; i < REFRESH_MASK_WORDS; i++)
		visit[i] = home[i] | main_cpus[i] | wanted[i];
}

/* Whether a reader reported a CPU the last round did not visit. */
static bool refresh_wanted_new(void)
{
	unsigned long wanted[REFRESH_MASK_WORDS];

	table_wanted_copy(wanted);
	for (unsigned i = 0; i < REFRESH_MASK_WORDS; i++)
		if (wanted[i] & ~refresh_visit_mask[i])
			return true;
	return false;
}

/* A CPU the thread does not visit (any more): its line is withdrawn, so
 * that readers there answer with libc rather than from a line nobody
 * renews, and its calibration starts over if it comes back. */
static void refresh_cpu_leaves(uint32_t cpu)
{
	struct refresh_cpu *c = &refresh_cpus[cpu];

	if (c->allowed || c->calib.line.mult != 0) {
		table_withdraw(cpu);
		calib_cpu_reset(&c->calib);
		c->failing_since_ns = 0;
		c->dropped = false;
		c->withdrawn = false;
		c->unreachable_until_ns = 0;
		c->unreachable_backoff_ns = 0;
	}
	c->allowed = false;
}

/* The CPUs that had a line and are not to be visited now leave. */
static void refresh_leave_others(const unsigned long *visit)
{
	for (uint32_t cpu = 0; cpu < CPU_MAX_CPUS; cpu++)
		if (refresh_cpus[cpu].allowed && !cpu_mask_has(visit, cpu))
			refresh_cpu_leaves(cpu);
}

/* The kernel's clock as the sandwiches see it: many times slower than it
 * was, round after round, it left the TSC (evidence.h); from then on the
 * clocksource says nothing, and the lines answer only after their
 * probation. No file is read: the thread opens none. */
static void refresh_judge_kernel_clock(uint64_t narrowest_ns)
{
	enum cpu_clocksource_kind *kind = &refresh_verdict.facts.clocksource_kind;

	if (narrowest_ns == UINT64_MAX)
		return;
	if (!evidence_kernel_clock_slowed(refresh_narrowest_ever_ns, narrowest_ns)) {
		refresh_slow_rounds = 0;
		if (refresh_narrowest_ever_ns == 0 || narrowest_ns < refresh_narrowest_ever_ns)
			refresh_narrowest_ever_ns = narrowest_ns;
		return;
	}
	if (++refresh_slow_rounds < EVIDENCE_SLOW_ROUNDS ||
	    (*kind != CPU_CLOCKSOURCE_TSC && *kind != CPU_CLOCKSOURCE_TSC_DERIVED))
		return;
	debug_log("the kernel's clock became slow (sandwiches %llu ns, were %llu ns): clocksource "
		  "%s left, the lines answer after their own checks",
		  (unsigned long long)narrowest_ns, (unsigned long long)refresh_narrowest_ever_ns,
		  refresh_verdict.facts.clocksource);
	*kind = CPU_CLOCKSOURCE_UNKNOWN;
	refresh_verdict.steady_rounds = 0;
}

unsigned refresh_round(uint64_t scheduled_ns)
{
	uint64_t next_interval_ns = scheduled_ns;
	bool restart = refresh_discontinuity;
	unsigned long visit[REFRESH_MASK_WORDS], home[REFRESH_MASK_WORDS];
	unsigned long resting[REFRESH_MASK_WORDS];
	unsigned long sampled[REFRESH_MASK_WORDS], renewed[REFRESH_MASK_WORDS];
	struct calib_sample narrowest = { .width_ns = UINT64_MAX };
	uint64_t mult = 0, shared_mult = 0, best_uncertainty = UINT64_MAX;
	uint64_t round_start_ns = refresh_mono_ns();
	unsigned with_line = 0, usable = 0;
	bool steady = true, relaunched;

	__atomic_store_n(&refresh_in_round, true, __ATOMIC_RELAXED);
	refresh_realtime_offset();
	refresh_cpus_to_visit(visit, home);
	memcpy(refresh_visit_mask, visit, sizeof refresh_visit_mask);
	refresh_leave_others(visit);
	memset(refresh_usable_mask, 0, sizeof refresh_usable_mask);
	memset(sampled, 0, sizeof sampled);
	memset(renewed, 0, sizeof renewed);
	/* First every CPU's sample, then the machine's slope from the least
	 * uncertain of them, then every line drawn with it and aimed, within
	 * its own sandwich, at the round's narrowest sandwich (calib.h). */
	for (uint32_t cpu = cpu_mask_next(visit, REFRESH_MASK_WORDS, 0); cpu < CPU_MAX_CPUS;
	     cpu = cpu_mask_next(visit, REFRESH_MASK_WORDS, cpu + 1)) {
		struct refresh_cpu *c = &refresh_cpus[cpu];
		uint64_t estimate, uncertainty, visit_start;
		bool taken = false;

		/* A CPU that was not free lately is left to its validity. */
		if (refresh_visit_skipped(cpu, round_start_ns)) {
			usable++;
			continue;
		}
		visit_start = refresh_mono_ns();
		refresh_visit_begin(cpu);
		/* Outside this process's cpuset the kernel refuses the pin:
		 * no thread of the process can run there either. Moved by
		 * someone else meanwhile: the mask stays as they set it. */
		if (!refresh_pin(cpu)) {
			refresh_visit_end(cpu, visit_start);
			if (refresh_moved)
				break;
			refresh_cpu_leaves(cpu);
			continue;
		}
		c->allowed = true;
		cpu_mask_set(refresh_usable_mask, cpu);
		usable++;
		taken = refresh_sample_one(cpu, &refresh_round_samples[cpu]);
		if (!refresh_visit_end(cpu, visit_start) || !taken)
			continue;
		cpu_mask_set(sampled, cpu);
		if (refresh_round_samples[cpu].width_ns < narrowest.width_ns)
			narrowest = refresh_round_samples[cpu];
		/* Only from lines that answered until now: a line withdrawn
		 * meanwhile learns from the others (refresh_relearn_rate). */
		if (!c->withdrawn &&
		    calib_slope_estimate(&c->calib, &refresh_round_samples[cpu], &estimate,
					 &uncertainty) &&
		    uncertainty < best_uncertainty) {
			best_uncertainty = uncertainty;
			shared_mult = estimate;
		}
	}
	refresh_forget_old_samples(sampled);
	/* Each sample aimed, and the next round as soon as any CPU's line
	 * needs it (calib_next_interval_ns): every CPU pays its error back over
	 * the same span. */
	for (uint32_t cpu = cpu_mask_next(sampled, REFRESH_MASK_WORDS, 0); cpu < CPU_MAX_CPUS;
	     cpu = cpu_mask_next(sampled, REFRESH_MASK_WORDS, cpu + 1)) {
		uint64_t wanted;

		refresh_round_samples[cpu] =
		    calib_sample_toward(refresh_round_samples[cpu], narrowest, shared_mult);
		wanted = restart
			     ? CALIB_MIN_INTERVAL_NS
			     : calib_next_interval_ns(&refresh_cpus[cpu].calib,
						      &refresh_round_samples[cpu], scheduled_ns);
		if (wanted < next_interval_ns)
			next_interval_ns = wanted;
	}
	relaunched = refresh_relaunch_if_lapsed();
	refresh_shorten_validity(shared_mult);
	for (uint32_t cpu = cpu_mask_next(sampled, REFRESH_MASK_WORDS, 0); cpu < CPU_MAX_CPUS;
	     cpu = cpu_mask_next(sampled, REFRESH_MASK_WORDS, cpu + 1))
		if (refresh_update_one(cpu, &refresh_round_samples[cpu], next_interval_ns,
				       shared_mult, restart))
			cpu_mask_set(renewed, cpu);
	refresh_withdraw_unsampled(renewed);
	if (restart)
		debug_log("the counter and the kernel's clock parted between rounds (a suspend, a "
			  "paused VM): lines restarted at their samples");
	refresh_discontinuity = false;
	refresh_round_interval_ns = next_interval_ns;
	refresh_judge_kernel_clock(narrowest.width_ns);
	for (uint32_t cpu = cpu_mask_next(refresh_usable_mask, REFRESH_MASK_WORDS, 0);
	     cpu < CPU_MAX_CPUS;
	     cpu = cpu_mask_next(refresh_usable_mask, REFRESH_MASK_WORDS, cpu + 1)) {
		struct refresh_cpu *c = &refresh_cpus[cpu];

		if (refresh_cpu_answers(c)) {
			with_line++;
			mult = c->calib.slope_mult;
			steady = steady && refresh_cpu_steady(c);
		}
	}
	if (usable == 0)
		memcpy(refresh_usable_mask, refresh_start_mask, sizeof refresh_usable_mask);
	/* Home is never empty: refresh_start_mask, which it comes from, holds
	 * the CPU the thread runs on. */
	memcpy(resting, home, sizeof resting);
	if (!cpu_mask_and(resting, refresh_usable_mask, REFRESH_MASK_WORDS))
		memcpy(resting, home, sizeof resting);
	refresh_set_home(resting);
	refresh_unpin();
	/* Readers trust the lines for as long as they stay within the budget
	 * of the kernel's clock (watch.h), and the watch looks before then;
	 * after that (a stopped or starved thread, a suspend) they answer with
	 * libc. From now, not from the round's start: each line's window
	 * counts from its own sample. */
	if (with_line > 0) {
		uint64_t tsc = cpu_rdtsc(), now = refresh_mono_ns();

		refresh_trust_lines(tsc, mult, refresh_lines_window(tsc, now, NULL, 0),
				    restart || relaunched);
	}
	refresh_verdict.steady_rounds =
	    with_line > 0 && steady ? refresh_verdict.steady_rounds + 1 : 0;
	refresh_choice.cpus_usable = usable;
	refresh_lines_published = with_line;
	__atomic_store_n(&refresh_in_round, false, __ATOMIC_RELAXED);
	return with_line;
}

/* The CPUs this thread may run on as it starts: its creator's. */
static bool refresh_read_affinity(void)
{
	memset(refresh_start_mask, 0, sizeof refresh_start_mask);
	if (sched_getaffinity(0, sizeof refresh_start_mask, (cpu_set_t *)refresh_start_mask) != 0)
		return false;
	memcpy(refresh_own_mask, refresh_start_mask, sizeof refresh_own_mask);
	memcpy(refresh_usable_mask, refresh_start_mask, sizeof refresh_usable_mask);
	refresh_set_home(refresh_start_mask);
	memcpy(refresh_visit_mask, refresh_start_mask, sizeof refresh_visit_mask);
	refresh_moved = false;
	refresh_main_known = false;
	return true;
}

/* The next CPU after the last choice's that has a line: the measurement
 * needs one, and moves from CPU to CPU rather than load one. One of the
 * thread's own CPUs where it can: a CPU visited only for other threads (a
 * pinned poller's) gets a round's pin, not the measurement too. */
static bool refresh_cpu_for_choice(uint32_t *cpu_out)
{
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t i = 1; i <= CPU_MAX_CPUS; i++) {
			uint32_t cpu = (refresh_choice.cpu + i) % CPU_MAX_CPUS;

			if (pass == 0 && !cpu_mask_has(refresh_home_mask, cpu))
				continue;
			if (refresh_cpu_answers(&refresh_cpus[cpu])) {
				*cpu_out = cpu;
				return true;
			}
		}
	}
	return false;
}

/* Whether the entry points should be measured (again): never yet, or more
 * CPUs have lines than when they were (the first round that covers every
 * CPU, a CPU that joined), or the last measurement was thrown away. */
static bool refresh_choice_due(unsigned with_line)
{
	return !refresh_apis_chosen || with_line > refresh_choice.cpus_with_line;
}

uint32_t refresh_flags_for(uint32_t apis)
{
	uint32_t flags = apis | refresh_mode_flags;

	refresh_apis_ever_published |= apis;
	if (refresh_apis_ever_published & ~apis)
		flags |= CLOCK_LIBC_CLAMPED;
	return flags;
}

/* Publishes what readers use: the chosen entry points while the lines are
 * trusted, none (libc answers) while they are not. */
static void refresh_publish_flags(void)
{
	uint32_t apis = refresh_verdict.trusted && refresh_apis_chosen ? refresh_choice.chosen : 0;
	uint32_t flags = refresh_flags_for(apis);
	uint32_t seen = __atomic_load_n(&table_shared.api_flags, __ATOMIC_RELAXED);

	/* A stopper may set CLOCK_START_PENDING meanwhile (refresh_set_state):
	 * it must not be lost. */
	while (!__atomic_compare_exchange_n(&table_shared.api_flags, &seen,
					    flags | (seen & CLOCK_START_PENDING), false,
					    __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
}

/* Measures each entry point against libc on a CPU that has a line, and
 * chooses. A measurement in which any call fell back (the thread was on a
 * CPU without a line, or the lines went stale) says nothing: it is thrown
 * away, and the next round measures again. */
static void refresh_choose_apis(unsigned round, unsigned with_line)
{
	struct api_cost costs[API_CHOICE_COUNT];
	unsigned fallbacks = 0;
	uint32_t cpu, chosen;

	if (!refresh_cpu_for_choice(&cpu))
		return;
	/* A visit like a round's: a real-time thread that takes the CPU
	 * meanwhile gets the thread moved back by a reader. */
	refresh_visit_begin(cpu);
	if (!refresh_pin(cpu)) {
		refresh_visit_close();
		return;
	}
	chosen = api_choice_measure(refresh_mode_flags, costs, &fallbacks, refresh_renew_validity);
	if (refresh_visit_close())
		fallbacks++;
	refresh_unpin();
	if (fallbacks > 0) {
		refresh_choice.rejected++;
		refresh_choice.cpu = cpu;
		debug_log("entry points: measurement on cpu %u thrown away: %u calls fell back "
			  "to libc; measuring again next round",
			  cpu, fallbacks);
		return;
	}
	if (refresh_force_fast)
		chosen = CLOCK_API_ALL;
	memcpy(refresh_api_costs, costs, sizeof costs);
	refresh_choice.round = round;
	refresh_choice.after_start_ns = refresh_mono_ns() - refresh_started_ns;
	refresh_choice.cpu = cpu;
	refresh_choice.cpus_with_line = with_line;
	refresh_choice.chosen = chosen;
	refresh_apis_chosen = true;
	debug_log("entry points chosen after round %u, %.3f s after start, measured on cpu %u "
		  "with lines on %u of %u CPUs",
		  round, (double)refresh_choice.after_start_ns / 1e9, cpu, with_line,
		  refresh_choice.cpus_usable);
	for (unsigned a = 0; a < API_CHOICE_COUNT; a++)
		debug_log("%s: libc %.1f ns, fasttime %.1f ns: %s", refresh_api_costs[a].name,
			  refresh_api_costs[a].libc_ns, refresh_api_costs[a].fast_ns,
			  (chosen & refresh_api_costs[a].flag) ? "fast" : "libc");
}

bool refresh_choose_now(void)
{
	unsigned with_line = 0, rejected = refresh_choice.rejected;

	for (uint32_t cpu = 0; cpu < CPU_MAX_CPUS; cpu++)
		with_line += refresh_cpu_answers(&refresh_cpus[cpu]);
	if (with_line == 0)
		return false;
	/* The caller may come long after the last round: the lines' validity
	 * is renewed as the watch would, or a round runs. */
	if (refresh_watch_look())
		refresh_round(refresh_configured_interval_ns);
	refresh_apis_chosen = false;
	refresh_choose_apis(refresh_choice.round, with_line);
	refresh_publish_flags();
	return refresh_apis_chosen && refresh_choice.rejected == rejected;
}

/* After a round: the clocksource's verdict, the choice if it is due, and
 * the flags readers see. */
static void refresh_after_round(unsigned round, unsigned with_line)
{
	bool trusted =
	    evidence_trusted(refresh_verdict.facts.clocksource_kind, refresh_verdict.steady_rounds);

	if (trusted != refresh_verdict.trusted)
		debug_log(trusted
			      ? "clocksource %s: the lines are trusted (%u steady rounds)"
			      : "clocksource %s: the lines are not trusted yet (%u steady rounds)",
			  refresh_verdict.facts.clocksource, refresh_verdict.steady_rounds);
	refresh_verdict.trusted = trusted;
	if (with_line > 0 && trusted && refresh_choice_due(with_line))
		refresh_choose_apis(round, with_line);
	refresh_publish_flags();
}

void refresh_read_kernel(void)
{
	int saved_errno = errno;

	cpu_probe_clocksource(&refresh_kernel_facts);
	refresh_kernel_read = true;
	errno = saved_errno;
}

/* The kernel's facts as read before (refresh_read_kernel), into facts:
 * "unknown" where they were not. */
static void refresh_recall_kernel(struct cpu_facts *facts)
{
	if (!refresh_kernel_read) {
		strcpy(facts->clocksource, "unknown");
		facts->clocksource_kind = CPU_CLOCKSOURCE_UNKNOWN;
		return;
	}
	memcpy(facts->clocksource, refresh_kernel_facts.clocksource, sizeof facts->clocksource);
	facts->clocksource_kind = refresh_kernel_facts.clocksource_kind;
	facts->kernel_offers_tsc = refresh_kernel_facts.kernel_offers_tsc;
}

/* Judges the processor and the kernel, and chooses the readings; returns
 * why the fast path cannot run, or NULL. CPUID, and the kernel's facts as
 * read before main(): no file. */
static const char *refresh_prepare(void)
{
	struct cpu_facts *facts = &refresh_verdict.facts;
	const char *reason;

	cpu_probe_instructions(facts);
	refresh_recall_kernel(facts);
	refresh_narrowest_ever_ns = 0;
	refresh_slow_rounds = 0;
	reason = cpu_unusable_reason(facts, false);
	if (reason == NULL)
		reason = cpu_choose_reading(facts, refresh_relaxed, &refresh_verdict.reading);
	if (reason == NULL) {
		refresh_mode_flags = clock_flags_for_reading(refresh_verdict.reading);
		/* Sandwiches read the counter ordered where the CPU can;
		 * relaxed mode on a CPU that cannot has only its own read. */
		if (cpu_choose_reading(facts, false, &refresh_sample_reading) != NULL)
			refresh_sample_reading = refresh_verdict.reading;
		debug_log("reading the counter with %s, the CPU id from %s; clocksource %s: %s",
			  cpu_counter_read_name(refresh_verdict.reading.counter),
			  cpu_id_source_name(refresh_verdict.reading.cpu_id), facts->clocksource,
			  evidence_describe(facts->clocksource_kind));
	}
	refresh_verdict.unusable = reason;
	refresh_verdict.steady_rounds = 0;
	refresh_verdict.trusted = false;
	refresh_started_ns = refresh_mono_ns();
	return reason;
}

static bool refresh_stop_asked(void)
{
	return __atomic_load_n(&refresh_stop_word, __ATOMIC_ACQUIRE) != 0;
}

/* Sleeps until deadline_ns on the monotonic clock as the library reads it
 * (libc's function, or whatever is preloaded beneath it), or until a stop
 * is asked: the thread waits on the stop word, which refresh_stop sets and
 * wakes. The timeout is relative (futex measures it on CLOCK_MONOTONIC), so
 * that a clock read through another path than the kernel's timers (a
 * test's fake clock, moved ahead) cannot lengthen it. */
static void refresh_sleep_until(uint64_t deadline_ns)
{
	for (;;) {
		uint64_t now = refresh_mono_ns(), left;
		struct timespec span;

		if (now >= deadline_ns || refresh_stop_asked())
			return;
		left = deadline_ns - now;
		span = timespec_from_ns(left);
		/* Woken, interrupted or refused (the word is set): look again. */
		if (raw_syscall(SYS_futex, (long)&refresh_stop_word, FUTEX_WAIT_PRIVATE, 0,
				(long)&span, 0, 0) != 0 &&
		    errno == ETIMEDOUT)
			return;
	}
}

/* The narrowest of a few sandwiches of the counter, on whichever CPU the
 * thread is on, whose CPU has a line; false when none was taken on such a
 * CPU. */
static bool refresh_watch_sample(struct calib_sample *best, uint32_t *cpu_out)
{
	bool found = false;

	for (unsigned i = 0; i < REFRESH_WATCH_SANDWICHES; i++) {
		struct calib_sample sample;
		struct cpu_stamp stamp;

		if (!refresh_sandwich(&sample, &stamp) || stamp.cpu >= CPU_MAX_CPUS ||
		    !refresh_cpu_answers(&refresh_cpus[stamp.cpu]))
			continue;
		if (found && sample.width_ns >= best->width_ns)
			continue;
		*best = sample;
		*cpu_out = stamp.cpu;
		found = true;
	}
	return found;
}

/* A look that finds c's line parted from the kernel's clock since the last
 * look (or sample) by more than its bend and the sandwiches explain saw the
 * kernel's rate move: the move counts among the rates of late at once, so
 * that the windows shorten now. A round learns a new rate only over two
 * samples, and a line kept meanwhile on a long window runs ahead of a
 * slowed kernel clock by the move times the window: if the thread is then
 * stopped, its readers fall back to libc and their clamp holds them still
 * for that long. */
static void refresh_note_seen_move(const struct refresh_cpu *c, const struct calib_sample *sample,
				   int64_t error)
{
	uint64_t slope = c->calib.slope_mult != 0 ? c->calib.slope_mult : c->calib.line.mult;
	uint64_t span, magnitude, noise, ppm, delta;
	int64_t drift, moved;

	if (slope == 0 || c->look_mono_ns == 0 || sample->ns <= c->look_mono_ns)
		return;
	span = sample->ns - c->look_mono_ns;
	(void)refresh_predicted_error(c, sample->tsc, 0, &drift);
	moved = error - c->look_error_ns - (int64_t)((__int128)drift * (__int128)span / 1000000000);
	magnitude = moved < 0 ? 0 - (uint64_t)moved : (uint64_t)moved;
	/* Both looks' sandwiches, the earlier one's as wide as the round's. */
	noise = 2 * sample->width_ns + c->last_width_ns + 1000u;
	if (magnitude <= noise)
		return;
	ppm = (uint64_t)((unsigned __int128)(magnitude - noise) * 1000000u / span);
	if (ppm <= WATCH_RATE_FLOOR_PPM)
		return;
	if (ppm > CALIB_MAX_RATE_CHANGE_PPM)
		ppm = CALIB_MAX_RATE_CHANGE_PPM;
	delta = (uint64_t)((unsigned __int128)slope * ppm / 1000000u);
	refresh_note_slope(moved > 0 ? slope + delta : slope - delta, sample->ns);
}

/* Renews the lines' validity after a look that found c's line error_ns
 * from the kernel's clock at sample: only while the line is where its last
 * sample predicted (a slew being paid back as planned) and for as long as
 * every line then stays within the budget (refresh_lines_window). A line
 * that is off, or moving off, is not renewed: renewed, it would answer far
 * from the kernel's clock until the next round, and readers falling back
 * to libc when it lapses at last would be held by their clamp for as long
 * as it ran ahead. False when nothing was renewed: a round is due. */
static bool refresh_watch_renew(const struct refresh_cpu *c, const struct calib_sample *sample,
				int64_t error)
{
	int64_t drift, deviation = error - refresh_predicted_error(c, sample->tsc, 0, &drift);
	uint64_t window, magnitude = deviation < 0 ? 0 - (uint64_t)deviation : (uint64_t)deviation;

	if (magnitude > WATCH_LINE_TOLERANCE_NS + sample->width_ns)
		return false;
	window = refresh_lines_window(sample->tsc, sample->ns, c, deviation);
	if (window == 0)
		return false;
	refresh_trust_lines(sample->tsc, c->calib.line.mult, window, false);
	return true;
}

/* One look of the watch, between rounds (watch.h): publishes a moved
 * realtime offset, and renews the lines' validity when the line of the CPU
 * the caller is on still agrees with the kernel's clock. True when a round
 * is due now: the line did not agree, or no CPU the caller could sample on
 * has a line while some CPU has one. */
static bool refresh_watch_look(void)
{
	struct calib_sample sample;
	uint32_t cpu = 0;
	struct calib_line line;
	struct refresh_cpu *c;
	int64_t error;

	if (!refresh_watch_sample(&sample, &cpu)) {
		if (refresh_realtime_known)
			refresh_realtime_offset();
		return refresh_lines_published > 0;
	}
	line = refresh_cpus[cpu].calib.line;
	c = &refresh_cpus[cpu];
	error = watch_line_error(line, &sample);
	if (watch_parted(c->look_error_ns, c->look_mono_ns, error, sample.ns, sample.width_ns)) {
		debug_log("watch: cpu %u's line moved %+lld ns against the kernel's clock in %llu "
			  "ns: restarting the lines",
			  cpu, (long long)(error - c->look_error_ns),
			  (unsigned long long)(sample.ns - c->look_mono_ns));
		refresh_discontinuity = true;
		return true;
	}
	refresh_note_seen_move(c, &sample, error);
	c->look_error_ns = error;
	c->look_mono_ns = sample.ns;
	/* Stale lines are not brought back as they are: their readers answer
	 * with libc, and the round due now restarts each line there. */
	if (refresh_lines_lapsed())
		return true;
	if (!refresh_watch_renew(c, &sample, error))
		return true;
	if (!watch_line_holds(line, &sample, WATCH_LINE_TOLERANCE_NS)) {
		debug_log("watch: cpu %u's line is %+lld ns from the kernel's clock (sandwich %llu "
			  "ns): refreshing now",
			  cpu, (long long)error, (unsigned long long)sample.width_ns);
		return true;
	}
	return false;
}

void refresh_renew_validity(void)
{
	refresh_watch_look();
}

/* When the watch looks next, from now: a period on, or sooner, a quarter
 * of the window before the validity last granted ends (a short window: a
 * line bent to pay an error back, a kernel rate that moved lately). Not
 * sooner than 1 ms from now, nor before the validity's end where it has
 * ended (the look then finds it lapsed and a round runs). */
static uint64_t refresh_next_look_ns(uint64_t now)
{
	uint64_t until = refresh_valid_until_ns, look = now + WATCH_PERIOD_NS, early;

	if (refresh_lines_published == 0)
		return look;
	if (until <= now)
		return now + REFRESH_LOOK_SOONEST_NS;
	early = until - (until - now) / 4;
	if (early < now + REFRESH_LOOK_SOONEST_NS)
		early = now + REFRESH_LOOK_SOONEST_NS;
	return early < look ? early : look;
}

/* Sleeps on CLOCK_MONOTONIC until the deadline, looking every watch period;
 * returns early when a look finds a round due now, or a reader reported a
 * CPU without a line that the last round did not visit: its line then
 * comes within a watch period and a first line's wait, not a whole
 * interval later. */
static void refresh_wait(uint64_t deadline_ns)
{
	for (;;) {
		uint64_t now = refresh_mono_ns();
		uint64_t look = refresh_next_look_ns(now);

		if (now >= deadline_ns)
			return;
		refresh_sleep_until(deadline_ns < look ? deadline_ns : look);
		if (refresh_stop_asked())
			return;
		if (refresh_wanted_new()) {
			debug_log("a reader runs on a CPU without a line: a round now");
			return;
		}
		if (refresh_mono_ns() < deadline_ns && refresh_watch_look())
			return;
	}
}

/* The scheduled deadline, or sooner when a CPU without a line can have its
 * first one sooner: with sandwiches a microsecond wide (a kernel clock that
 * is a system call) the fixed schedule would give the first line only in
 * its fifth round, 850 ms in; this gives it about 300 ms in. */
uint64_t refresh_next_deadline(uint64_t scheduled_ns)
{
	uint64_t deadline = scheduled_ns;

	for (uint32_t cpu = 0; cpu < CPU_MAX_CPUS; cpu++) {
		const struct refresh_cpu *c = &refresh_cpus[cpu];
		uint64_t due;

		if (!c->allowed || c->dropped)
			continue;
		due = calib_first_line_due_ns(&c->calib);
		if (due == 0)
			continue;
		/* A tenth more, as the next sandwich may be a little wider. */
		due += (due - c->calib.anchor.ns) / 10;
		if (due < deadline)
			deadline = due;
	}
	return deadline;
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
			__atomic_store_n(&refresh_tid, 0, __ATOMIC_RELAXED);
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
	if (__atomic_load_n(&refresh_stop_word, __ATOMIC_ACQUIRE) != REFRESH_STOP_FOR_GOOD)
		return;
	__atomic_store_n(&table_shared.api_flags,
			 refresh_apis_ever_published ? CLOCK_LIBC_CLAMPED : 0, __ATOMIC_RELEASE);
	table_set_validity(0, 0);
	debug_log("refresh thread stopped for good (a seccomp filter): answering with libc");
}

static void *refresh_main(void *unused)
{
	const char *reason;
	(void)unused;

	/* Named from inside: pthread_setname_np on another thread opens a file
	 * in /proc from the caller's thread, which must not see a descriptor. */
	prctl(PR_SET_NAME, "fasttime", 0, 0, 0);
	__atomic_store_n(&refresh_tid, (pid_t)raw_syscall(SYS_gettid, 0, 0, 0, 0, 0, 0),
			 __ATOMIC_RELAXED);
	refresh_own_scheduling();
	libc_resolve();
	reason = refresh_prepare();

	if (reason != NULL || !refresh_read_affinity()) {
		debug_log("not starting: %s", reason != NULL ? reason : "no CPU affinity");
		refresh_quit();
		return NULL;
	}
	debug_log("refresh thread started, interval %llu ms",
		  (unsigned long long)(refresh_configured_interval_ns / 1000000u));
	for (unsigned round = 0; !refresh_stop_asked(); round++) {
		uint64_t start = refresh_mono_ns();
		uint64_t next = refresh_interval_after(round, refresh_configured_interval_ns);

		refresh_after_round(round, refresh_round(next));
		refresh_wait(refresh_next_deadline(start + refresh_round_interval_ns));
	}
	refresh_stopped();
	/* No reader may move a thread that has left (its id may be reused). */
	__atomic_store_n(&refresh_tid, 0, __ATOMIC_RELAXED);
	return NULL;
}

void refresh_start(void)
{
	int saved_errno = errno;
	int expected = REFRESH_IDLE;
	pthread_attr_t attr;
	pthread_t thread;
	sigset_t all, saved;
	int created;

	if (__atomic_load_n(&refresh_state, __ATOMIC_ACQUIRE) != REFRESH_IDLE)
		return;
	/* Never from a signal handler: pthread_create allocates, and the
	 * interrupted code may hold malloc's lock. A later call outside it
	 * starts the thread; until then this thread's calls pass to libc
	 * with no system call and no shared write (signal_guard.h): a
	 * process without a running thread publishes no realtime step
	 * (preload_follow_realtime_step). */
	if (!signal_guard_may_start())
		return;
	if (!__atomic_compare_exchange_n(&refresh_state, &expected, REFRESH_STARTING, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return;
	/* A thread stopped earlier without a join must be gone first: until
	 * then, the start waits for a later call. */
	if (refresh_has_unjoined) {
		if (pthread_tryjoin_np(refresh_unjoined_thread, NULL) != 0) {
			refresh_set_state(REFRESH_IDLE);
			errno = saved_errno;
			return;
		}
		refresh_has_unjoined = false;
	}
	/* Never under a seccomp filter the program installed behind our
	 * interposers: creating the thread may be what it kills. */
	if (!sandbox_thread_allowed()) {
		debug_log("a seccomp filter was installed: not starting; answering with libc");
		refresh_set_state(REFRESH_OFF);
		errno = saved_errno;
		return;
	}
	__atomic_fetch_and(&table_shared.api_flags, ~(uint32_t)CLOCK_START_PENDING,
			   __ATOMIC_RELEASE);
	__atomic_store_n(&refresh_stop_word, 0, __ATOMIC_RELEASE);
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
	} else {
		/* Unless the thread has already quit (and detached itself). */
		refresh_thread = thread;
		refresh_mark_process();
		expected = REFRESH_STARTING;
		__atomic_compare_exchange_n(&refresh_state, &expected, REFRESH_RUNNING, false,
					    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	}
	/* The caller asked for the time, not for our bookkeeping. */
	errno = saved_errno;
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
		if (waited >= REFRESH_VISIT_MAX_NS)
			refresh_rescue(true);
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

enum refresh_stopped refresh_stop(enum refresh_stop_kind kind)
{
	int saved_errno = errno;
	enum refresh_stopped stopped = REFRESH_STOPPED_ASKED;
	bool may_join;

	/* getpid is a system call: only where the library could be on. */
	if (__atomic_load_n(&refresh_state, __ATOMIC_ACQUIRE) == REFRESH_OFF ||
	    getpid() != refresh_owner_pid) {
		errno = saved_errno;
		return REFRESH_STOPPED_NONE;
	}
	may_join = signal_guard_may_start();
	if (!refresh_claim_stop(kind, may_join)) {
		errno = saved_errno;
		return REFRESH_STOPPED_NONE;
	}
	__atomic_store_n(&refresh_stop_word, (uint32_t)kind, __ATOMIC_RELEASE);
	raw_syscall(SYS_futex, (long)&refresh_stop_word, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0);
	if (may_join && refresh_join(refresh_thread)) {
		stopped = REFRESH_STOPPED_JOINED;
	} else if (may_join && kind == REFRESH_STOP_FOR_GOOD) {
		/* It ends on its own; nobody will start another to join it. */
		pthread_detach(refresh_thread);
	} else {
		refresh_unjoined_thread = refresh_thread;
		refresh_has_unjoined = true;
	}
	/* Under the filter about to go in, no reader may move the thread: a
	 * sched_setaffinity the filter forbids would kill the program. */
	if (kind == REFRESH_STOP_FOR_GOOD)
		__atomic_store_n(&refresh_tid, 0, __ATOMIC_RELAXED);
	refresh_set_state(kind == REFRESH_STOP_FOR_GOOD ? REFRESH_OFF : REFRESH_IDLE);
	debug_log(
	    "refresh thread %s%s", stopped == REFRESH_STOPPED_JOINED ? "stopped" : "asked to stop",
	    kind == REFRESH_STOP_FOR_GOOD ? " for good" : "; the next time call starts another");
	errno = saved_errno;
	return stopped;
}

void refresh_after_fork_in_child(void)
{
	int state = __atomic_load_n(&refresh_state, __ATOMIC_RELAXED);

	/* A round cut short by fork may have left a CPU's state half-written:
	 * start the calibration over rather than trust it. */
	if (__atomic_load_n(&refresh_in_round, __ATOMIC_RELAXED)) {
		for (uint32_t cpu = 0; cpu < CPU_MAX_CPUS; cpu++)
			if (refresh_cpus[cpu].allowed)
				calib_cpu_reset(&refresh_cpus[cpu].calib);
		refresh_in_round = false;
	}
	/* The thread, stopping or not, stayed in the parent: nothing here to
	 * join, or to tell to stop. */
	refresh_owner_pid = getpid();
	refresh_has_unjoined = false;
	/* The CPUs the parent's other threads ran on: none of them is here. */
	table_wanted_clear();
	__atomic_store_n(&refresh_stop_word, 0, __ATOMIC_RELAXED);
	/* The thread a reader would move is the parent's. */
	__atomic_store_n(&refresh_tid, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&refresh_visit_since_tsc, 0, __ATOMIC_RELAXED);
	if (state == REFRESH_RUNNING || state == REFRESH_STARTING || state == REFRESH_STOPPING)
		refresh_set_state(REFRESH_IDLE);
}

void refresh_check_process(void)
{
	uint32_t *mark = __atomic_load_n(&refresh_process_mark, __ATOMIC_ACQUIRE);

	if (__atomic_load_n(&refresh_state, __ATOMIC_ACQUIRE) != REFRESH_RUNNING || mark == NULL ||
	    __atomic_load_n(mark, __ATOMIC_ACQUIRE) != 0)
		return;
	debug_log("a new process made without fork(): starting its own refresh thread");
	refresh_after_fork_in_child();
}

bool refresh_calibrate_now(void)
{
	unsigned long saved[REFRESH_MASK_WORDS];
	unsigned with_line = 0;

	memset(&refresh_choice, 0, sizeof refresh_choice);
	refresh_apis_chosen = false;
	/* The tools: they may read files, and describe every CPU. */
	cpu_probe_kernel(&refresh_kernel_facts);
	refresh_kernel_read = true;
	refresh_whole_cpuset = true;
	if (refresh_prepare() != NULL || !refresh_read_affinity())
		return false;
	memcpy(saved, refresh_start_mask, sizeof saved);
	for (unsigned round = 0; round < 8; round++) {
		uint64_t start = refresh_mono_ns();
		uint64_t next = refresh_interval_after(round, refresh_configured_interval_ns);

		with_line = refresh_round(next);
		refresh_after_round(round, with_line);
		if (with_line == refresh_choice.cpus_usable && refresh_apis_chosen)
			break;
		refresh_sleep_until(refresh_next_deadline(start + refresh_round_interval_ns));
	}
	sched_setaffinity(0, sizeof saved, (cpu_set_t *)saved);
	return with_line > 0;
}
