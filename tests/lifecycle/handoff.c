/* Two threads hand a CLOCK_MONOTONIC reading back and forth while each keeps
 * moving itself to a random CPU. The receiver reads the clock after it has
 * seen the sender's reading; a smaller answer is an inversion: time that ran
 * backwards between two threads that were ordered by a release/acquire pair.
 *
 * Ordered mode (default): no inversion, no step back within a thread.
 * Relaxed mode runs the exchange twice.
 *  - As programs write it: rdtsc may start before the load that saw the
 *    hand-off, so inversions happen. Their count, sizes and worst are
 *    printed, not judged: how early the CPU starts the read is the
 *    platform's (a bare rdtsc does the same), and on a loaded 2-vCPU guest
 *    single ones reached 2.7 and 19 us while ordered mode saw none.
 *  - With the receiver fencing (mfence; lfence) before each read, so that
 *    the read cannot start early: what is left is the library's own part (the
 *    lines of two CPUs, the CPU id check, the fallbacks), and there the
 *    bound libfasttime(7) states is ordered mode's: no inversion.
 * In every run: no step back within a thread.
 *
 * A hand-off where one of the two readings came from libc (the lines went
 * stale under load, or a CPU has none yet) is judged apart: libc's answer
 * is the kernel's clock, the other is a line's, and they agree only within
 * the line's distance from the kernel's clock, which the accuracy tests
 * bound (HANDOFF_MIXED_MAX_NS), not within a hand-off's time.
 *
 * Short: 10^6 hand-offs. Soak (FASTTIME_SOAK=1): 2 x 10^7. LIFE_HANDOFFS
 * overrides both. The first inversions are listed when a judged exchange
 * fails, and for the printed one too with LIFE_SHOW=1.
 *
 * LIFE_HANDOFF_PROCESSES=1: the two sides are two processes, forked for
 * each exchange, sharing the baton, their figures and the starved CPUs in
 * a MAP_SHARED mapping (the futex is then a shared one, not private).
 * Each calls the clock first in its child, where it is served by the page
 * its parent was given (FASTTIME_PAGE) or calibrates alone in a thread of
 * its own; this process reads no clock through the preload. Everything
 * else is as for threads; the figures end with how many threads named
 * fasttime each process had. LIFE_HANDOFF_UNJUDGED=1: the inversions
 * (and mixed ones) are printed, never judged: processes that calibrate
 * alone draw lines of their own, which need not agree. LIFE_HANDOFF_BARE=1:
 * each read is a bare rdtsc (fenced where the exchange fences), no
 * library in it, printed, never judged: how often the platform alone
 * inverts a hand-off, between threads and between processes. */
#include "config.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "life.h"

/* Each thread moves itself after this many of its own hand-offs. */
#define HANDOFF_PIN_EVERY 500u
/* How a waiter waits: it spins, then yields (the partner may share its CPU),
 * and sleeps only when that lasts (a busy machine). Spinning is what programs
 * do, and it is the hard case for relaxed mode: the read after the loop may
 * start before the load that ended it. */
#define HANDOFF_SPINS  200u
#define HANDOFF_YIELDS 1000u

/* One inversion, kept for the failure message. */
struct handoff_inversion {
	uint64_t k;
	uint64_t sent_ns, read_ns;
	int from_cpu, on_cpu;
};

#define HANDOFF_KEEP 8u
/* The most a hand-off between a line's reading and libc's may be inverted:
 * the largest error against the kernel's clock the accuracy tests allow. */
#define HANDOFF_MIXED_MAX_NS 5000u
/* Inversions are counted by size: up to 10, 25, 50, 100 ns, and beyond. */
#define HANDOFF_BINS 5u
static const uint64_t handoff_bin_limits[HANDOFF_BINS - 1] = { 10, 25, 50, 100 };

struct handoff_side {
	const char *name;
	uint64_t first; /* 0 for A, 1 for B: whose turn is whose */
	unsigned seed;
	/* results */
	uint64_t reads;
	uint64_t fallthrough;
	uint64_t inversions;
	uint64_t cross_inversions; /* of which the sender was on another CPU */
	uint64_t worst_inversion_ns;
	/* Hand-offs where one of the readings came from libc, inverted */
	uint64_t mixed_inversions;
	uint64_t worst_mixed_ns;
	uint64_t backward;
	uint64_t worst_back_ns;
	uint64_t cross_cpu; /* hand-offs received from another CPU */
	uint64_t pins;
	uint64_t moves;		/* re-pins that changed the CPU */
	_Atomic int pinned_cpu; /* the CPU it last pinned itself to, or -1 */
	_Atomic pid_t tid;
	_Atomic bool done;
	uint64_t runs, ran_ns; /* times it was given a CPU, and for how long, at the last look */
	unsigned starved;      /* looks in a row that found it starved */
	struct handoff_inversion kept[HANDOFF_KEEP];
	uint64_t bins[HANDOFF_BINS];
};

/* What the two sides share: in this process's memory when they are
 * threads, in a shared mapping when they are processes. */
struct handoff_shared {
	/* The baton: how many hand-offs have been made, and the last sender's
	 * reading. */
	_Atomic uint64_t turn;
	_Atomic uint64_t stamp;
	_Atomic int stamp_cpu;
	/* Whether the last sender's reading came from libc (it passed the tap). */
	_Atomic bool stamp_libc;
	/* Waiters asleep on the turn's low 32 bits (a futex). */
	_Atomic uint32_t sleepers;
	/* A and B, on lines of their own, away from the baton. */
	_Alignas(64) struct handoff_side sides[2];
	/* CPUs where a side of the exchange, pinned there, got no time: a
	 * real-time thread beside the test owns them. No side moves there
	 * again. */
	_Atomic bool starved[CPU_SETSIZE];
	/* Processes: the sides whose first time call has answered from the
	 * TSC (they start together), and at each one's end the threads named
	 * fasttime its process had. */
	_Atomic unsigned ready;
	unsigned library_threads[2];
};
static struct handoff_shared handoff_here;
static struct handoff_shared *handoff = &handoff_here;

/* Who runs a side: a thread of this process, or a process of its own. */
struct handoff_runner {
	pthread_t thread;
	pid_t pid;  /* processes: the child, until it is reaped */
	int status; /* and how it ended */
	bool reaped;
};

static uint64_t handoff_total;
/* The sides are processes (LIFE_HANDOFF_PROCESSES). */
static bool handoff_processes;
/* The receiver fences before each read (the judged relaxed exchange). */
static bool handoff_fenced;
/* LIFE_HANDOFF_BARE: each read is a bare rdtsc, scaled by the TSC's rate
 * measured at start, with no library in it: the platform's own part of the
 * inversions, for the figures (never judged). */
static bool handoff_bare;
static double handoff_bare_ns_per_tick;
static int handoff_cpus[CPU_SETSIZE];
static int handoff_ncpus;
static unsigned handoff_rescues;

/* A side is starved on its CPU when, at each of HANDOFF_STARVED_LOOKS looks
 * HANDOFF_LOOK_MS apart, it has the turn and could run, and since the last
 * look the scheduler gave it the CPU fewer than HANDOFF_STARVED_RUNS times
 * for less than HANDOFF_STARVED_RAN_NS in all (its own counts). Beside a
 * real-time loop a side ran 0 to 16 times a look, 0 to 152 us in all (the
 * kernel's share for ordinary threads, in one burst a second); on a CPU
 * crowded with ordinary work, 120 to 190 times, 1.1 to 1.4 ms. */
#define HANDOFF_LOOK_MS	       500u
#define HANDOFF_STARVED_LOOKS  4u
#define HANDOFF_STARVED_RUNS   32u
#define HANDOFF_STARVED_RAN_NS 500000u

/* Moves the calling thread to a random allowed CPU. */
static void handoff_repin(struct handoff_side *side)
{
	int before = sched_getcpu();
	int cpu = handoff_cpus[rand_r(&side->seed) % (unsigned)handoff_ncpus];
	cpu_set_t set;
	int rc;

	/* Never to a CPU where the test's threads got no time. */
	for (unsigned tries = 0; atomic_load(&handoff->starved[cpu]) && tries < 64; tries++)
		cpu = handoff_cpus[rand_r(&side->seed) % (unsigned)handoff_ncpus];
	if (atomic_load(&handoff->starved[cpu]))
		return;
	atomic_store(&side->pinned_cpu, cpu);
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
	if (rc != 0)
		life_fail("%s: pthread_setaffinity_np(cpu %d): %s", side->name, cpu, strerror(rc));
	side->pins++;
	side->moves += sched_getcpu() != before;
}

/* The futex word: the low half of the turn (x86-64 is little-endian). */
static uint32_t *handoff_turn_word(void)
{
	return (uint32_t *)(void *)&handoff->turn;
}

/* A futex operation on the turn: private between threads, shared between
 * processes (the kernel then keys it on the mapping's page). */
static int handoff_futex_op(int op)
{
	return handoff_processes ? op : op | FUTEX_PRIVATE_FLAG;
}

/* Waits until the turn is k: spins, yields, then sleeps on the futex. */
static void handoff_wait(uint64_t k)
{
	for (unsigned spins = 0; spins < HANDOFF_SPINS; spins++) {
		if (atomic_load_explicit(&handoff->turn, memory_order_acquire) == k)
			return;
		__builtin_ia32_pause();
	}
	for (unsigned yields = 0; yields < HANDOFF_YIELDS; yields++) {
		if (atomic_load_explicit(&handoff->turn, memory_order_acquire) == k)
			return;
		sched_yield();
	}
	for (;;) {
		uint64_t turn = atomic_load_explicit(&handoff->turn, memory_order_acquire);

		if (turn == k)
			return;
		/* Announce first, then look again: the sender looks for sleepers
		 * after its store, so one of the two sees the other. */
		atomic_fetch_add(&handoff->sleepers, 1);
		if (atomic_load(&handoff->turn) != k)
			syscall(SYS_futex, handoff_turn_word(), handoff_futex_op(FUTEX_WAIT),
				(uint32_t)turn, NULL, NULL, 0);
		atomic_fetch_sub(&handoff->sleepers, 1);
	}
}

/* Passes the turn on, waking the other side if it sleeps. */
static void handoff_pass(uint64_t next)
{
	/* Sequentially consistent store and load: the waiter's announcement
	 * and this store cannot both go unseen (release alone would allow it). */
	atomic_store(&handoff->turn, next);
	if (atomic_load(&handoff->sleepers) != 0)
		syscall(SYS_futex, handoff_turn_word(), handoff_futex_op(FUTEX_WAKE), 1, NULL, NULL,
			0);
}

/* Keeps the counter read that follows from starting before the load that
 * saw the hand-off, the way the kernel orders its own reads: lfence waits
 * for every earlier instruction on Intel CPUs and on AMD CPUs that make it
 * serializing (Linux does, where it can); on the AMD CPUs where it cannot,
 * mfence is what orders rdtsc. cpuid would do it everywhere, but a
 * hypervisor traps it: tens of microseconds a hand-off on our guests. */
static void handoff_fence(void)
{
	__asm__ volatile("mfence\n\tlfence" : : : "memory");
}

/* Which size bin an inversion of ns falls in. */
static unsigned handoff_bin(uint64_t ns)
{
	unsigned bin = 0;

	while (bin < HANDOFF_BINS - 1 && ns > handoff_bin_limits[bin])
		bin++;
	return bin;
}

/* One side of the exchange: wait for the turn, read, compare, pass on. */
static void *handoff_main(void *arg)
{
	struct handoff_side *side = arg;
	uint64_t last = 0, tap_before = life_fallthrough();

	atomic_store(&side->tid, (pid_t)syscall(SYS_gettid));
	for (uint64_t k = side->first; k < handoff_total; k += 2) {
		uint64_t in, now, tap;
		int in_cpu, cpu;
		bool in_libc, from_libc;

		handoff_wait(k);
		in = atomic_load_explicit(&handoff->stamp, memory_order_relaxed);
		in_cpu = atomic_load_explicit(&handoff->stamp_cpu, memory_order_relaxed);
		in_libc = atomic_load_explicit(&handoff->stamp_libc, memory_order_relaxed);
		/* Move now, so that the read below is the first on the new CPU. */
		if (handoff_ncpus > 1 &&
		    (k / 2) % HANDOFF_PIN_EVERY == side->first * (HANDOFF_PIN_EVERY / 2))
			handoff_repin(side);

		if (handoff_fenced)
			handoff_fence();
		tap = life_fallthrough();
		now = handoff_bare
			  ? (uint64_t)((double)__builtin_ia32_rdtsc() * handoff_bare_ns_per_tick)
			  : life_mono_ns();
		from_libc = life_fallthrough() != tap;
		cpu = sched_getcpu();
		side->reads++;
		if (k > 0) {
			if (now < in && (in_libc || from_libc)) {
				side->mixed_inversions++;
				if (in - now > side->worst_mixed_ns)
					side->worst_mixed_ns = in - now;
			} else if (now < in) {
				if (side->inversions < HANDOFF_KEEP)
					side->kept[side->inversions] =
					    (struct handoff_inversion){ k, in, now, in_cpu, cpu };
				side->inversions++;
				side->cross_inversions += cpu != in_cpu;
				side->bins[handoff_bin(in - now)]++;
				if (in - now > side->worst_inversion_ns)
					side->worst_inversion_ns = in - now;
			}
			side->cross_cpu += cpu != in_cpu;
		}
		if (now < last) {
			side->backward++;
			if (last - now > side->worst_back_ns)
				side->worst_back_ns = last - now;
		}
		last = now;

		atomic_store_explicit(&handoff->stamp, now, memory_order_relaxed);
		atomic_store_explicit(&handoff->stamp_cpu, cpu, memory_order_relaxed);
		atomic_store_explicit(&handoff->stamp_libc, from_libc, memory_order_relaxed);
		handoff_pass(k + 1);
	}
	side->fallthrough = life_fallthrough() - tap_before;
	atomic_store(&side->done, true);
	return NULL;
}

/* A side's process, as a thread of it like the threads' (the library
 * calibrates on the CPUs of its main thread, which stays unpinned): its
 * first time call (served by the page, or its own calibration), then the
 * two start together; at the end, the threads named fasttime it had.
 * Exits 0, or as life_require_fast makes it. */
static void __attribute__((noreturn)) handoff_process_main(struct handoff_side *side, pid_t parent)
{
	pthread_t thread;

	/* Never outlives the test (a watchdog's abort, a failure). */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
		_exit(1);
	life_require_fast();
	atomic_fetch_add(&handoff->ready, 1);
	while (atomic_load(&handoff->ready) < 2)
		life_sleep_ms(1);
	if (pthread_create(&thread, NULL, handoff_main, side) != 0)
		life_fail("pthread_create failed");
	pthread_join(thread, NULL);
	handoff->library_threads[side->first] = life_threads_named("fasttime");
	_exit(0);
}

/* Starts a side: a thread, or a process. */
static void handoff_start(struct handoff_side *side, struct handoff_runner *runner)
{
	pid_t parent;

	if (!handoff_processes) {
		if (pthread_create(&runner->thread, NULL, handoff_main, side) != 0)
			life_fail("pthread_create failed");
		return;
	}
	parent = getpid();
	runner->pid = fork();
	if (runner->pid < 0)
		life_fail("fork: %s", strerror(errno));
	if (runner->pid == 0)
		handoff_process_main(side, parent);
}

/* The /proc file of a side's thread tid: of this process, or (processes)
 * of the side's. */
static void handoff_task_path(char *path, size_t size, const struct handoff_runner *runner,
			      pid_t tid, const char *file)
{
	if (handoff_processes)
		snprintf(path, size, "/proc/%d/task/%d/%s", (int)runner->pid, (int)tid, file);
	else
		snprintf(path, size, "/proc/self/task/%d/%s", (int)tid, file);
}

/* How many times a side's thread tid was given a CPU and for how long in
 * all, and whether it is running or may run now (not asleep), from the
 * kernel's statistics; false where they cannot be read. */
static bool handoff_sched_look(const struct handoff_runner *runner, pid_t tid, uint64_t *runs,
			       uint64_t *ran_ns, bool *runnable)
{
	char path[64], line[512];
	unsigned long long ran = 0, waited = 0, count = 0;
	const char *fields;
	bool read;
	FILE *f;

	handoff_task_path(path, sizeof path, runner, tid, "schedstat");
	f = fopen(path, "r");
	if (f == NULL)
		return false;
	read = fgets(line, sizeof line, f) != NULL &&
	       sscanf(line, "%llu %llu %llu", &ran, &waited, &count) == 3;
	fclose(f);
	handoff_task_path(path, sizeof path, runner, tid, "stat");
	f = fopen(path, "r");
	if (f == NULL)
		return false;
	/* The state follows the name, which may hold spaces and parentheses. */
	read = read && fgets(line, sizeof line, f) != NULL &&
	       (fields = strrchr(line, ')')) != NULL && fields[1] == ' ';
	fclose(f);
	*runs = count;
	*ran_ns = ran;
	*runnable = read && fields[2] == 'R';
	return read;
}

/* Moves a side starved on the CPU it pinned itself to onto the CPUs where
 * the test's threads do run, and marks that CPU. */
static void handoff_rescue(struct handoff_side *side, const struct handoff_runner *runner)
{
	int cpu = atomic_load(&side->pinned_cpu);
	cpu_set_t set;

	if (cpu < 0)
		return;
	atomic_store(&handoff->starved[cpu], true);
	CPU_ZERO(&set);
	for (int i = 0; i < handoff_ncpus; i++)
		if (!atomic_load(&handoff->starved[handoff_cpus[i]]))
			CPU_SET(handoff_cpus[i], &set);
	if (CPU_COUNT(&set) == 0)
		life_skip("every CPU starved the test's threads (a real-time thread on each?)");
	if (handoff_processes)
		sched_setaffinity(atomic_load(&side->tid), sizeof set, &set);
	else
		pthread_setaffinity_np(runner->thread, sizeof set, &set);
	atomic_store(&side->pinned_cpu, -1);
	handoff_rescues++;
	life_say("%s: starved for %u ms on cpu %d (another thread owns it): moved off it, "
		 "and no side goes there again",
		 side->name, HANDOFF_LOOK_MS * HANDOFF_STARVED_LOOKS, cpu);
}

/* One look at a side, whose turn it is when has_turn: true when it has
 * been starved for long enough. The side waiting for its turn is not
 * judged: it yields its CPU on purpose. */
static bool handoff_starving(struct handoff_side *side, const struct handoff_runner *runner,
			     bool has_turn)
{
	pid_t tid = atomic_load(&side->tid);
	uint64_t runs, ran;
	bool runnable;

	if (tid == 0 || atomic_load(&side->done) ||
	    !handoff_sched_look(runner, tid, &runs, &ran, &runnable))
		return false;
	if (has_turn && runnable && runs - side->runs < HANDOFF_STARVED_RUNS &&
	    ran - side->ran_ns < HANDOFF_STARVED_RAN_NS)
		side->starved++;
	else
		side->starved = 0;
	side->runs = runs;
	side->ran_ns = ran;
	return side->starved >= HANDOFF_STARVED_LOOKS;
}

/* Processes: reaps a side's process if it has ended (blocking: waits for
 * it); true when it has, its status in the runner. */
static bool handoff_reap(struct handoff_runner *runner, bool block)
{
	pid_t done;

	if (runner->reaped)
		return true;
	while ((done = waitpid(runner->pid, &runner->status, block ? 0 : WNOHANG)) < 0 &&
	       errno == EINTR)
		;
	if (done < 0)
		life_fail("waitpid(%d): %s", (int)runner->pid, strerror(errno));
	runner->reaped = done == runner->pid;
	return runner->reaped;
}

/* Processes: a side's process that ended otherwise than by finishing its
 * part (it skipped or failed before the exchange, or died in it) ends the
 * test, its partner killed first: that one would wait for it for ever. */
static void handoff_check_ended(const struct handoff_side *side, struct handoff_runner *runner,
				struct handoff_runner *partner)
{
	int status;

	if (!handoff_reap(runner, false))
		return;
	status = runner->status;
	if (atomic_load(&side->done) && WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return;
	if (!partner->reaped) {
		kill(partner->pid, SIGKILL);
		handoff_reap(partner, true);
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == LIFE_EXIT_SKIP)
		life_skip("side %s's process (pid %d) skipped", side->name, (int)runner->pid);
	if (WIFSIGNALED(status))
		life_fail("side %s's process (pid %d) was killed by signal %d", side->name,
			  (int)runner->pid, WTERMSIG(status));
	life_fail("side %s's process (pid %d) ended with status %d%s", side->name, (int)runner->pid,
		  WIFEXITED(status) ? WEXITSTATUS(status) : -1,
		  atomic_load(&side->done) ? "" : " before its part was done");
}

/* Waits for both sides. A real-time neighbour may starve a side on the CPU
 * it pinned itself to (the test's own doing, not the library's: the same
 * happens without it, and the watchdog then fails the test): such a side is
 * moved off that CPU, which no side visits again. */
static void handoff_wait_for(struct handoff_side *a, struct handoff_runner *ra,
			     struct handoff_side *b, struct handoff_runner *rb)
{
	while (!atomic_load(&a->done) || !atomic_load(&b->done)) {
		bool a_turn;

		life_sleep_ms(HANDOFF_LOOK_MS);
		if (handoff_processes) {
			handoff_check_ended(a, ra, rb);
			handoff_check_ended(b, rb, ra);
		}
		a_turn = atomic_load(&handoff->turn) % 2 == a->first;
		if (handoff_starving(a, ra, a_turn)) {
			handoff_rescue(a, ra);
			a->starved = 0;
		}
		if (handoff_starving(b, rb, !a_turn)) {
			handoff_rescue(b, rb);
			b->starved = 0;
		}
	}
	if (!handoff_processes) {
		pthread_join(ra->thread, NULL);
		pthread_join(rb->thread, NULL);
		return;
	}
	/* Each has only to count its threads and exit. */
	handoff_reap(ra, true);
	handoff_reap(rb, true);
	handoff_check_ended(a, ra, rb);
	handoff_check_ended(b, rb, ra);
}

/* Prints the first inversions one side saw. */
static void handoff_show(const struct handoff_side *side, uint64_t started_mono_ns)
{
	for (uint64_t i = 0; i < side->inversions && i < HANDOFF_KEEP; i++) {
		const struct handoff_inversion *inv = &side->kept[i];

		life_say("  hand-off %llu to %s at +%.3f s: sent %llu on cpu %d, read %llu on "
			 "cpu %d: %llu ns back",
			 (unsigned long long)inv->k, side->name,
			 (double)(inv->read_ns - started_mono_ns) / 1e9,
			 (unsigned long long)inv->sent_ns, inv->from_cpu,
			 (unsigned long long)inv->read_ns, inv->on_cpu,
			 (unsigned long long)(inv->sent_ns - inv->read_ns));
	}
}

/* Lists the CPUs this process may run on. */
static void handoff_read_cpus(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof set, &set) != 0)
		life_fail("sched_getaffinity: %s", strerror(errno));
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &set))
			handoff_cpus[handoff_ncpus++] = cpu;
}

/* One exchange of handoff_total hand-offs between two new threads (or
 * processes); prints its figures under label. Fails if a thread's own time
 * went back, or if judged and any hand-off was inverted. */
static void handoff_exchange(const char *label, bool judged)
{
	struct handoff_side *a = &handoff->sides[0], *b = &handoff->sides[1];
	struct handoff_runner ra = { .pid = 0 }, rb = { .pid = 0 };
	uint64_t started, inversions, worst, reads, fallthrough;

	*a = (struct handoff_side){ .name = "A", .first = 0, .seed = 12345, .pinned_cpu = -1 };
	*b = (struct handoff_side){ .name = "B", .first = 1, .seed = 67890, .pinned_cpu = -1 };
	atomic_store(&handoff->turn, 0);
	atomic_store(&handoff->stamp, 0);
	atomic_store(&handoff->stamp_libc, false);
	atomic_store(&handoff->ready, 0);
	started = life_libc_mono_ns();
	handoff_start(a, &ra);
	handoff_start(b, &rb);
	handoff_wait_for(a, &ra, b, &rb);

	inversions = a->inversions + b->inversions;
	worst = a->worst_inversion_ns > b->worst_inversion_ns ? a->worst_inversion_ns
							      : b->worst_inversion_ns;
	reads = a->reads + b->reads;
	fallthrough = a->fallthrough + b->fallthrough;
	life_say("%s: %llu hand-offs in %.1f s, %llu across CPUs, %llu re-pins "
		 "(%llu moved), %.3f%% answered from the TSC",
		 label, (unsigned long long)handoff_total,
		 (double)(life_libc_mono_ns() - started) / 1e9,
		 (unsigned long long)(a->cross_cpu + b->cross_cpu),
		 (unsigned long long)(a->pins + b->pins), (unsigned long long)(a->moves + b->moves),
		 reads ? 100.0 * (double)(reads - fallthrough) / (double)reads : 0.0);
	life_say("%s: inversions %llu (A->B %llu, B->A %llu; %llu across CPUs), "
		 "worst %llu ns; backward steps A %llu, B %llu",
		 label, (unsigned long long)inversions, (unsigned long long)b->inversions,
		 (unsigned long long)a->inversions,
		 (unsigned long long)(a->cross_inversions + b->cross_inversions),
		 (unsigned long long)worst, (unsigned long long)a->backward,
		 (unsigned long long)b->backward);
	if (handoff_processes)
		life_say("%s: threads named fasttime: process A (pid %d) %u, process B (pid %d) %u",
			 label, (int)ra.pid, handoff->library_threads[0], (int)rb.pid,
			 handoff->library_threads[1]);

	if (inversions != 0)
		life_say("%s: inversions by size: <=10 ns %llu, <=25 ns %llu, <=50 ns %llu, "
			 "<=100 ns %llu, more %llu",
			 label, (unsigned long long)(a->bins[0] + b->bins[0]),
			 (unsigned long long)(a->bins[1] + b->bins[1]),
			 (unsigned long long)(a->bins[2] + b->bins[2]),
			 (unsigned long long)(a->bins[3] + b->bins[3]),
			 (unsigned long long)(a->bins[4] + b->bins[4]));
	if (a->mixed_inversions + b->mixed_inversions != 0)
		life_say("%s: between a line's reading and libc's: %llu inversions, worst %llu ns",
			 label, (unsigned long long)(a->mixed_inversions + b->mixed_inversions),
			 (unsigned long long)(a->worst_mixed_ns > b->worst_mixed_ns
						  ? a->worst_mixed_ns
						  : b->worst_mixed_ns));
	if (judged &&
	    (a->worst_mixed_ns > HANDOFF_MIXED_MAX_NS || b->worst_mixed_ns > HANDOFF_MIXED_MAX_NS))
		life_fail("%s: a hand-off between a line's reading and libc's was inverted by "
			  "more than %u ns",
			  label, HANDOFF_MIXED_MAX_NS);
	if (a->backward != 0 || b->backward != 0)
		life_fail("%s: a thread saw its own time go back (worst %llu ns)", label,
			  (unsigned long long)(a->worst_back_ns > b->worst_back_ns
						   ? a->worst_back_ns
						   : b->worst_back_ns));
	if (handoff_ncpus > 1 && a->cross_cpu + b->cross_cpu == 0) {
		if (handoff_rescues > 0)
			life_skip("no hand-off crossed CPUs: only one CPU gave the test's threads "
				  "time");
		life_fail("no hand-off crossed CPUs: the migrations did not happen");
	}
	if (inversions != 0 && (judged || getenv("LIFE_SHOW") != NULL)) {
		handoff_show(a, started);
		handoff_show(b, started);
	}
	if (judged && inversions != 0)
		life_fail("%s: %llu inversions, worst %llu ns", label,
			  (unsigned long long)inversions, (unsigned long long)worst);
}

/* Whether environment variable name is set on (not empty, "0" or "no"). */
static bool handoff_env_on(const char *name)
{
	const char *value = getenv(name);

	return value != NULL && *value != '\0' && strcmp(value, "0") != 0 &&
	       strcmp(value, "no") != 0;
}

/* The sides share a mapping, which the processes forked for each exchange
 * inherit. */
static void handoff_share(void)
{
	void *shared =
	    mmap(NULL, sizeof *handoff, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (shared == MAP_FAILED)
		life_fail("mmap(MAP_SHARED | MAP_ANONYMOUS): %s", strerror(errno));
	handoff = shared;
}

/* Ordered mode: one judged exchange. Relaxed mode: one as programs write it,
 * printed, then one with the receiver fencing, judged. LIFE_HANDOFF_UNJUDGED:
 * none judged. */
int main(void)
{
	const char *override = getenv("LIFE_HANDOFFS");
	bool relaxed = life_relaxed(), judged;

	life_begin("handoff");
	handoff_processes = handoff_env_on("LIFE_HANDOFF_PROCESSES");
	judged = !handoff_env_on("LIFE_HANDOFF_UNJUDGED");
	handoff_bare = handoff_env_on("LIFE_HANDOFF_BARE");
	if (handoff_bare) {
		uint64_t ns0 = life_libc_mono_ns(), tsc0 = __builtin_ia32_rdtsc();

		life_sleep_ms(200);
		handoff_bare_ns_per_tick =
		    (double)(life_libc_mono_ns() - ns0) / (double)(__builtin_ia32_rdtsc() - tsc0);
		judged = false;
		life_say("bare rdtsc reads, %.4f ns per tick: never judged",
			 handoff_bare_ns_per_tick);
	}
	handoff_total = life_soak() ? 20000000ull : 1000000ull;
	if (override != NULL && *override != '\0')
		handoff_total = strtoull(override, NULL, 10);
	life_watchdog((relaxed ? 2u : 1u) * ((unsigned)(handoff_total / 20000u) + 120u));
	handoff_read_cpus();

	/* Processes: each side's own first call, in its child. */
	if (handoff_processes)
		handoff_share();
	else
		life_require_fast();
	if (handoff_ncpus < 2)
		life_say("one CPU allowed: no migrations, the hand-offs stay on CPU %d",
			 handoff_cpus[0]);

	if (!relaxed) {
		handoff_exchange(handoff_processes ? "ordered mode, two processes" : "ordered mode",
				 judged);
		return 0;
	}
	handoff_exchange(handoff_processes ? "relaxed mode, two processes" : "relaxed mode", false);
	handoff_fenced = true;
	handoff_exchange(handoff_processes ? "relaxed mode, receiver fenced, two processes"
					   : "relaxed mode, receiver fenced",
			 judged);
	return 0;
}
