/* The refresh thread and the calibration rounds it runs.
 *
 * It pins itself to each allowed CPU in turn, takes sandwiches of the
 * kernel's CLOCK_MONOTONIC around rdtscp, and hands the narrowest to the
 * calibration arithmetic; what comes out is published for readers. */
#include "config.h"

#include "refresh.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>

#include "clock.h"
#include "debug.h"
#include "libc.h"
#include "table.h"

struct refresh_cpu refresh_cpus[CPU_MAX_CPUS];
struct api_cost refresh_api_costs[API_CHOICE_COUNT];
bool refresh_apis_chosen;

int refresh_state = REFRESH_OFF;
static uint64_t refresh_configured_interval_ns = SETTINGS_DEFAULT_INTERVAL_MS * 1000000ull;
static uint32_t refresh_mode_flags;
static bool refresh_force_fast;
static int refresh_calls_until_retry;
/* The processor's and the kernel's facts, as the refresh thread last saw them. */
static struct cpu_facts refresh_facts;
static bool refresh_in_round;
static bool refresh_realtime_known;

#define REFRESH_MASK_WORDS (CPU_MAX_CPUS / (8 * sizeof(unsigned long)))
static unsigned long refresh_allowed_mask[REFRESH_MASK_WORDS];

static uint64_t refresh_mono_ns(void)
{
	struct timespec ts;

	libc_clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * CLOCK_NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

static uint64_t refresh_real_ns(void)
{
	struct timespec ts;

	libc_clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * CLOCK_NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* Sets the state, and CLOCK_START_PENDING in api_flags while it is IDLE. */
static void refresh_set_state(int state)
{
	__atomic_store_n(&refresh_state, state, __ATOMIC_RELEASE);
	if (state == REFRESH_IDLE)
		__atomic_fetch_or(&table_shared.api_flags, CLOCK_START_PENDING, __ATOMIC_RELEASE);
	else
		__atomic_fetch_and(&table_shared.api_flags, ~(uint32_t)CLOCK_START_PENDING,
				   __ATOMIC_RELEASE);
}

void refresh_configure(const struct settings *settings, const struct cpu_facts *facts)
{
	refresh_configured_interval_ns = (uint64_t)settings->interval_ms * 1000000ull;
	refresh_mode_flags = settings->relaxed && facts->rseq_registered ? CLOCK_MODE_RELAXED : 0;
	refresh_force_fast = settings->force;
	/* The processor and the kernel are judged by the thread when it starts. */
	refresh_set_state(settings->disabled ? REFRESH_OFF : REFRESH_IDLE);
}

uint64_t refresh_interval_after(unsigned round, uint64_t configured_ns)
{
	uint64_t interval = REFRESH_FIRST_INTERVAL_NS;

	for (unsigned i = 0; i < round && interval < configured_ns; i++)
		interval *= 4;
	return interval < configured_ns ? interval : configured_ns;
}

static bool refresh_pin(uint32_t cpu)
{
	unsigned long one[REFRESH_MASK_WORDS];
	const unsigned bits = 8 * sizeof(unsigned long);

	memset(one, 0, sizeof one);
	one[cpu / bits] = 1ul << (cpu % bits);
	return sched_setaffinity(0, sizeof one, (cpu_set_t *)one) == 0;
}

static bool refresh_is_allowed(uint32_t cpu)
{
	const unsigned bits = 8 * sizeof(unsigned long);

	return (refresh_allowed_mask[cpu / bits] >> (cpu % bits)) & 1;
}

/* Takes sandwiches on the CPU this thread is pinned to; false when none was
 * taken there (the thread was moved each time). */
static bool refresh_sample_cpu(uint32_t cpu, struct calib_sample *best, uint32_t *node)
{
	struct calib_sample samples[REFRESH_SANDWICHES];
	unsigned n = 0;

	for (unsigned i = 0; i < REFRESH_SANDWICHES; i++) {
		uint64_t before, after, tsc;
		uint32_t aux;

		before = refresh_mono_ns();
		tsc = cpu_rdtscp(&aux);
		after = refresh_mono_ns();
		if (cpu_from_tsc_aux(aux) != cpu || after < before)
			continue;
		*node = cpu_node_from_tsc_aux(aux);
		samples[n].tsc = tsc;
		samples[n].width_ns = after - before;
		samples[n].ns = before + samples[n].width_ns / 2;
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

/* Notes a failure; after REFRESH_DROP_AFTER_NS the CPU answers with libc. */
static void refresh_cpu_failed(uint32_t cpu, struct refresh_cpu *state, uint64_t now)
{
	if (state->failing_since_ns == 0)
		state->failing_since_ns = now;
	if (!state->dropped && now - state->failing_since_ns >= REFRESH_DROP_AFTER_NS) {
		state->dropped = true;
		table_withdraw(cpu);
		debug_log("cpu %u: calibration failing for 15 s; answering with libc there", cpu);
	}
}

static void refresh_one_cpu(uint32_t cpu, uint64_t next_interval_ns)
{
	struct refresh_cpu *state = &refresh_cpus[cpu];
	struct calib_sample sample;
	uint64_t now = refresh_mono_ns();

	if (!refresh_pin(cpu) || !refresh_sample_cpu(cpu, &sample, &state->node)) {
		refresh_cpu_failed(cpu, state, now);
		return;
	}
	state->last_outcome = calib_cpu_update(&state->calib, &sample, next_interval_ns);
	state->last_sample_mono_ns = sample.ns;
	if (state->last_outcome == CALIB_REJECTED) {
		refresh_cpu_failed(cpu, state, now);
		debug_log("cpu %u: sample rejected (sandwich %llu ns)", cpu,
			  (unsigned long long)sample.width_ns);
		return;
	}
	state->failing_since_ns = 0;
	state->dropped = false;
	if (state->calib.line.mult != 0)
		table_publish(cpu, state->calib.line);
	if (state->last_outcome != CALIB_NEED_MORE)
		debug_log("cpu %u: %s, %.6f ns/tick, error %+lld ns, sandwich %llu ns", cpu,
			  refresh_outcome_name(state->last_outcome),
			  (double)state->calib.line.mult / 18446744073709551616.0,
			  (long long)state->calib.last_error_ns,
			  (unsigned long long)sample.width_ns);
}

/* Fills samples with monotonic / realtime / monotonic sandwiches. */
static void refresh_offset_samples(struct calib_offset_sample *samples, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		samples[i].mono_before = refresh_mono_ns();
		samples[i].real = refresh_real_ns();
		samples[i].mono_after = refresh_mono_ns();
	}
}

/* CLOCK_REALTIME minus CLOCK_MONOTONIC changes only when the clock is set:
 * publish it the first time and whenever it moves by more than the noise. */
static void refresh_realtime_offset(void)
{
	struct calib_offset_sample samples[REFRESH_SANDWICHES];
	uint64_t offset, width;
	int64_t moved;

	refresh_offset_samples(samples, REFRESH_SANDWICHES);
	if (!refresh_realtime_known) {
		if (!calib_realtime_offset(samples, REFRESH_SANDWICHES, &offset, &width))
			return;
		__atomic_store_n(&table_shared.realtime_offset_ns, offset, __ATOMIC_RELEASE);
		refresh_realtime_known = true;
		return;
	}
	if (calib_realtime_check(samples, REFRESH_SANDWICHES, clock_realtime_offset(),
				 REFRESH_STEP_THRESHOLD_NS, &offset, &moved) == CALIB_CLOCK_SET) {
		__atomic_store_n(&table_shared.realtime_offset_ns, offset, __ATOMIC_RELEASE);
		debug_log("realtime clock was set: moved %+lld ns", (long long)moved);
	}
}

unsigned refresh_round(uint64_t next_interval_ns)
{
	const unsigned bits = 8 * sizeof(unsigned long);
	uint32_t aux;
	uint64_t round_start_tsc = cpu_rdtscp(&aux);
	uint64_t mult = 0;
	unsigned with_line = 0;

	__atomic_store_n(&refresh_in_round, true, __ATOMIC_RELAXED);
	refresh_realtime_offset();
	for (uint32_t cpu = 0; cpu < CPU_MAX_CPUS; cpu++) {
		if (refresh_allowed_mask[cpu / bits] == 0) {
			cpu += bits - 1;
			continue;
		}
		if (!refresh_is_allowed(cpu))
			continue;
		refresh_cpus[cpu].allowed = true;
		refresh_one_cpu(cpu, next_interval_ns);
		if (refresh_cpus[cpu].calib.line.mult != 0 && !refresh_cpus[cpu].dropped) {
			with_line++;
			mult = refresh_cpus[cpu].calib.slope_mult;
		}
	}
	/* Readers trust the lines until two intervals and a second from now;
	 * after that (a stopped or starved thread) they answer with libc. */
	if (with_line > 0) {
		uint64_t margin = calib_ticks_for_ns(mult, 1000000u);
		uint64_t window = calib_ticks_for_ns(mult, 2 * next_interval_ns + CLOCK_NS_PER_SEC);
		table_set_validity(round_start_tsc - margin, window + margin);
	}
	__atomic_store_n(&refresh_in_round, false, __ATOMIC_RELAXED);
	return with_line;
}

static bool refresh_read_affinity(void)
{
	memset(refresh_allowed_mask, 0, sizeof refresh_allowed_mask);
	return sched_getaffinity(0, sizeof refresh_allowed_mask,
				 (cpu_set_t *)refresh_allowed_mask) == 0;
}

static void refresh_choose_apis(void)
{
	uint32_t chosen = api_choice_measure(refresh_mode_flags, refresh_api_costs);

	if (refresh_force_fast)
		chosen = CLOCK_API_ALL;

	refresh_apis_chosen = true;
	for (unsigned a = 0; a < API_CHOICE_COUNT; a++)
		debug_log("%s: libc %.1f ns, fasttime %.1f ns: %s", refresh_api_costs[a].name,
			  refresh_api_costs[a].libc_ns, refresh_api_costs[a].fast_ns,
			  (chosen & refresh_api_costs[a].flag) ? "fast" : "libc");
	__atomic_store_n(&table_shared.api_flags, chosen | refresh_mode_flags, __ATOMIC_RELEASE);
}

/* Why the fast path cannot run, once the kernel has been asked too; NULL
 * when it can. Opens and closes two sysfs files. */
static const char *refresh_check_kernel(void)
{
	cpu_probe_instructions(&refresh_facts);
	cpu_probe_kernel(&refresh_facts);
	return cpu_unusable_reason(&refresh_facts);
}

/* The same each round, kernel only: the processor's answers cannot change,
 * and under a hypervisor each CPUID is a VM exit. */
static const char *refresh_recheck_kernel(void)
{
	cpu_probe_kernel(&refresh_facts);
	return cpu_unusable_reason(&refresh_facts);
}

static void refresh_sleep_until(uint64_t deadline_ns)
{
	struct timespec until = {
		.tv_sec = (time_t)(deadline_ns / CLOCK_NS_PER_SEC),
		.tv_nsec = (long)(deadline_ns % CLOCK_NS_PER_SEC),
	};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR)
		;
}

/* Whether CLOCK_REALTIME was set since the offset was published: one
 * monotonic / realtime / monotonic sandwich, trusted only when narrow. */
static bool refresh_realtime_was_set(void)
{
	struct calib_offset_sample sample;
	uint64_t offset;
	int64_t moved;

	if (!refresh_realtime_known)
		return false;
	refresh_offset_samples(&sample, 1);
	return calib_realtime_check(&sample, 1, clock_realtime_offset(), REFRESH_STEP_THRESHOLD_NS,
				    &offset, &moved) == CALIB_CLOCK_SET;
}

/* Sleeps until the monotonic deadline, or until the realtime clock is set. */
static void refresh_wait(uint64_t deadline_ns)
{
	for (;;) {
		uint64_t now = refresh_mono_ns(), step;
		uint64_t wake;
		struct timespec until;

		if (now >= deadline_ns)
			return;
		step = deadline_ns - now < REFRESH_STEP_WATCH_NS ? deadline_ns - now
								 : REFRESH_STEP_WATCH_NS;
		/* An absolute CLOCK_REALTIME sleep ends early when the clock is
		 * set forward: the kernel re-arms such timers on every step. */
		wake = refresh_real_ns() + step;
		until.tv_sec = (time_t)(wake / CLOCK_NS_PER_SEC);
		until.tv_nsec = (long)(wake % CLOCK_NS_PER_SEC);
		clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &until, NULL);
		if (refresh_realtime_was_set()) {
			debug_log("realtime clock was set: refreshing now");
			return;
		}
	}
}

static void *refresh_main(void *unused)
{
	const char *reason;
	(void)unused;

	/* Named from inside: pthread_setname_np on another thread opens a file
	 * in /proc from the caller's thread, which must not see a descriptor. */
	prctl(PR_SET_NAME, "fasttime", 0, 0, 0);
	libc_resolve();
	reason = refresh_check_kernel();

	if (reason != NULL || !refresh_read_affinity()) {
		debug_log("not starting: %s", reason != NULL ? reason : "no CPU affinity");
		refresh_set_state(REFRESH_OFF);
		return NULL;
	}
	debug_log("refresh thread started, interval %llu ms",
		  (unsigned long long)(refresh_configured_interval_ns / 1000000u));
	for (unsigned round = 0;; round++) {
		uint64_t start = refresh_mono_ns();
		uint64_t next = refresh_interval_after(round, refresh_configured_interval_ns);

		/* The kernel's watchdog may drop the TSC at any time (a VM
		 * migrated to a host whose TSC disagrees): from then on libc. */
		reason = round == 0 ? NULL : refresh_recheck_kernel();
		if (reason != NULL) {
			__atomic_store_n(&table_shared.api_flags, 0, __ATOMIC_RELEASE);
			table_set_validity(0, 0);
			debug_log("answering with libc from now on: %s", reason);
			refresh_set_state(REFRESH_OFF);
			return NULL;
		}
		if (refresh_round(next) > 0 && !refresh_apis_chosen)
			refresh_choose_apis();
		refresh_wait(start + next);
	}
	return NULL;
}

/* Whether this call may run inside a signal handler, where pthread_create
 * could wait forever on a lock the interrupted code holds (malloc's: the new
 * thread's TLS is allocated). A handler runs with its own signal blocked
 * (unless installed with SA_NODEFER), so a blocked signal that has a handler
 * means "perhaps"; the start then waits for a later call. A thread that
 * merely blocks signals it leaves at their defaults (for sigwait or a
 * signalfd) is not held back. */
static bool refresh_maybe_in_signal_handler(void)
{
	sigset_t blocked;

	if (pthread_sigmask(SIG_BLOCK, NULL, &blocked) != 0)
		return true;
	for (int sig = 1; sig < NSIG; sig++) {
		struct sigaction action;

		if (sigismember(&blocked, sig) != 1 || sigaction(sig, NULL, &action) != 0)
			continue;
		if ((action.sa_flags & SA_SIGINFO) ||
		    (action.sa_handler != SIG_DFL && action.sa_handler != SIG_IGN))
			return true;
	}
	return false;
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
	/* After a start put off, the next calls do not ask again at once:
	 * each asking costs system calls. */
	if (__atomic_load_n(&refresh_calls_until_retry, __ATOMIC_RELAXED) > 0) {
		__atomic_fetch_sub(&refresh_calls_until_retry, 1, __ATOMIC_RELAXED);
		return;
	}
	if (refresh_maybe_in_signal_handler()) {
		__atomic_store_n(&refresh_calls_until_retry, 1000, __ATOMIC_RELAXED);
		errno = saved_errno;
		return;
	}
	if (!__atomic_compare_exchange_n(&refresh_state, &expected, REFRESH_STARTING, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return;
	__atomic_fetch_and(&table_shared.api_flags, ~(uint32_t)CLOCK_START_PENDING,
			   __ATOMIC_RELEASE);
	/* The host's signals must never land on our thread: it starts with all
	 * of them blocked. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &saved);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	created = pthread_create(&thread, &attr, refresh_main, NULL);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	if (created != 0) {
		debug_log("cannot start the refresh thread (%s); answering with libc",
			  strerror(created));
		refresh_set_state(REFRESH_OFF);
	} else {
		refresh_set_state(REFRESH_RUNNING);
	}
	/* The caller asked for the time, not for our bookkeeping. */
	errno = saved_errno;
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
	if (state == REFRESH_RUNNING || state == REFRESH_STARTING)
		refresh_set_state(REFRESH_IDLE);
}

bool refresh_calibrate_now(void)
{
	unsigned long saved[REFRESH_MASK_WORDS];
	unsigned allowed = 0, with_line = 0;

	if (refresh_check_kernel() != NULL || !refresh_read_affinity())
		return false;
	memcpy(saved, refresh_allowed_mask, sizeof saved);
	for (uint32_t cpu = 0; cpu < CPU_MAX_CPUS; cpu++)
		allowed += refresh_is_allowed(cpu);
	for (unsigned round = 0; round < 6 && with_line < allowed; round++) {
		uint64_t start = refresh_mono_ns();
		uint64_t next = refresh_interval_after(round, refresh_configured_interval_ns);

		with_line = refresh_round(next);
		if (with_line < allowed)
			refresh_sleep_until(start + next);
	}
	if (with_line > 0)
		refresh_choose_apis();
	sched_setaffinity(0, sizeof saved, (cpu_set_t *)saved);
	return with_line > 0;
}
