/* The refresh thread's placement (placement.h). Its own affinity is the
 * only thing it changes; a mask it finds changed by someone else (taskset
 * -a, a program moving its threads) is taken as the program's and never
 * undone. A reader's rescue is one sched_setaffinity on the thread's id,
 * claimed by one compare-and-swap so that one reader at a time makes it. */
#include "config.h"

#include "placement.h"

#include <sched.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cpu.h"

/* How long the thread waits, at a visit's end, for a rescuer's system call
 * under way to return (it takes microseconds unless the rescuer is
 * preempted). */
#define PLACEMENT_RESCUE_WAIT_NS 100000000ull
/* The visit word's marks (visit_since_tsc). */
#define PLACEMENT_VISIT_MOVED  (1ull << 63)
#define PLACEMENT_VISIT_MOVING UINT64_MAX

static struct placement_state {
	/* The CPUs the thread found itself allowed when it started (its
	 * creator's), or as someone else set them since (taskset -a, a
	 * program that moves every thread of its own). */
	unsigned long start_mask[PLACEMENT_MASK_WORDS];
	/* What the thread last asked the kernel for itself (a pin, or the
	 * CPUs to run on between rounds): a mask found different was changed
	 * by someone else, and is never undone. */
	unsigned long own_mask[PLACEMENT_MASK_WORDS];
	/* Set when the thread found its mask changed by someone else in a
	 * round: the round stops pinning, and leaves the mask as it was set. */
	bool moved;
	/* The tools' rounds: every online CPU (placement_describe_machine). */
	bool whole_cpuset;
	/* The thread's own CPUs (start_mask narrowed to the main thread's)
	 * that the last round could pin to, or all of them when it could pin
	 * to none: where the thread runs between rounds. Never a CPU it
	 * visits only for other threads: a pinned poller's CPU gets a round's
	 * pin, not the watch's wake-ups. Also where a reader sends the thread
	 * when it is stuck on a CPU it pinned to: written by the thread word
	 * by word, read by readers. */
	unsigned long home_mask[PLACEMENT_MASK_WORDS];
	/* What the last round visited: a CPU reported since (table_wanted)
	 * that is not in it starts a round at the watch's next look. */
	unsigned long visit_mask[PLACEMENT_MASK_WORDS];
	/* The main thread's CPUs at the last round: a change is a move of
	 * the program, and the CPUs readers reported are forgotten. */
	unsigned long main_mask[PLACEMENT_MASK_WORDS];
	bool main_known;
	/* The refresh thread's id (placement_set_thread). */
	pid_t tid;
	/* The visit in progress: 0 between visits; else the counter when the
	 * thread began pinning to visit_cpu, or when a rescuer last tried to
	 * move it away (PLACEMENT_VISIT_MOVED set where that worked), or
	 * PLACEMENT_VISIT_MOVING while a rescuer makes the system call
	 * (placement_rescue). A rescue may come again PLACEMENT_VISIT_MAX_NS
	 * later: the thread may have undone the last one with its pin. */
	uint64_t visit_since_tsc;
	uint32_t visit_cpu;
	/* PLACEMENT_VISIT_MAX_NS in ticks (placement_set_visit_limit). */
	uint64_t visit_max_ticks;
} placement;

void placement_describe_machine(void)
{
	placement.whole_cpuset = true;
}

bool placement_whole_machine(void)
{
	return placement.whole_cpuset;
}

void placement_set_thread(pid_t tid)
{
	__atomic_store_n(&placement.tid, tid, __ATOMIC_RELAXED);
}

void placement_after_fork(void)
{
	__atomic_store_n(&placement.tid, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&placement.visit_since_tsc, 0, __ATOMIC_RELAXED);
}

void placement_set_visit_limit(uint64_t ticks)
{
	__atomic_store_n(&placement.visit_max_ticks, ticks, __ATOMIC_RELAXED);
}

bool placement_moved(void)
{
	return placement.moved;
}

/* Whether a rescuer moved, or is moving, the thread in this visit. */
static bool placement_rescue_seen(void)
{
	uint64_t since = __atomic_load_n(&placement.visit_since_tsc, __ATOMIC_ACQUIRE);

	return since != 0 && (since & PLACEMENT_VISIT_MOVED);
}

/* Whether someone else changed this thread's affinity since it last set it:
 * then what they set becomes the thread's own CPUs, and placement.moved says
 * so. The tools' rounds never ask. */
static bool placement_mask_moved(void)
{
	unsigned long found[PLACEMENT_MASK_WORDS];

	if (placement.whole_cpuset)
		return false;
	memset(found, 0, sizeof found);
	if (sched_getaffinity(0, sizeof found, (cpu_set_t *)found) != 0 ||
	    cpu_mask_equal(found, placement.own_mask, PLACEMENT_MASK_WORDS))
		return false;
	/* A rescuer moved this thread in the visit under way (placement_rescue):
	 * no move of the program's. */
	if (placement_rescue_seen()) {
		memcpy(placement.own_mask, found, sizeof found);
		return false;
	}
	memcpy(placement.start_mask, found, sizeof found);
	memcpy(placement.own_mask, found, sizeof found);
	placement.moved = true;
	/* The whole process was moved (taskset -a -p): the CPUs its threads
	 * ran on before say nothing of where they run now. */
	table_wanted_clear();
	return true;
}

/* Sets this thread's affinity, unless someone else changed it since the
 * thread last did (then it stays as they set it). */
static bool placement_set_own_mask(const unsigned long *mask)
{
	if (placement.moved || placement_mask_moved())
		return false;
	if (sched_setaffinity(0, PLACEMENT_MASK_WORDS * sizeof *mask, (const cpu_set_t *)mask) != 0)
		return false;
	memcpy(placement.own_mask, mask, sizeof placement.own_mask);
	return true;
}

bool placement_pin(uint32_t cpu)
{
	unsigned long one[PLACEMENT_MASK_WORDS];
	memset(one, 0, sizeof one);
	cpu_mask_set(one, cpu);
	return placement_set_own_mask(one);
}

/* Sets the home mask word by word: readers read it as they write it
 * (placement_free_stuck_thread). */
static void placement_set_home(const unsigned long *mask)
{
	for (unsigned w = 0; w < PLACEMENT_MASK_WORDS; w++)
		__atomic_store_n(&placement.home_mask[w], mask[w], __ATOMIC_RELAXED);
}

/* Runs the thread anywhere among its own CPUs that the last round could
 * pin to, so that its waiting and its measurements land on no one fixed
 * CPU, and on no CPU it visits only for other threads. */
void placement_unpin(void)
{
	placement_set_own_mask(placement.home_mask);
}

/* Begins a visit to cpu: readers may now see how long it lasts. */
void placement_visit_begin(uint32_t cpu)
{
	__atomic_store_n(&placement.visit_cpu, cpu, __ATOMIC_RELAXED);
	__atomic_store_n(&placement.visit_since_tsc, cpu_rdtsc(), __ATOMIC_RELEASE);
}

/* Closes the visit under way; true when a rescuer moved the thread in it
 * (then this thread's own mask is what the rescuer left). */
bool placement_visit_close(void)
{
	uint64_t since = __atomic_load_n(&placement.visit_since_tsc, __ATOMIC_ACQUIRE);
	struct timespec pause = { 0, 50000 };
	bool rescued;

	/* A rescuer's system call under way: let it land first, so that the
	 * mask taken below is the one it leaves. */
	for (uint64_t waited = 0;; waited += (uint64_t)pause.tv_nsec) {
		if (since == PLACEMENT_VISIT_MOVING && waited < PLACEMENT_RESCUE_WAIT_NS) {
			nanosleep(&pause, NULL);
			since = __atomic_load_n(&placement.visit_since_tsc, __ATOMIC_ACQUIRE);
			continue;
		}
		if (since == PLACEMENT_VISIT_MOVING ||
		    __atomic_compare_exchange_n(&placement.visit_since_tsc, &since, 0, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			break;
	}
	rescued =
	    since == PLACEMENT_VISIT_MOVING || (since != 0 && (since & PLACEMENT_VISIT_MOVED));
	/* A rescuer set this thread's mask: that is no move of the program's
	 * (placement_mask_moved), and the mask is what the kernel now holds. */
	if (rescued) {
		memset(placement.own_mask, 0, sizeof placement.own_mask);
		sched_getaffinity(0, sizeof placement.own_mask, (cpu_set_t *)placement.own_mask);
	}
	return rescued;
}

/* Moves the refresh thread off the CPU of a visit that lasted
 * PLACEMENT_VISIT_MAX_NS (or, forced, of any visit: a stopper waiting to join
 * it, where no line may yet say how fast the counter runs), to its home
 * CPUs less that one. One rescuer at a time; a failed system call is
 * tried again only as late as a new visit would be. */
void placement_rescue(bool forced)
{
	uint64_t since = __atomic_load_n(&placement.visit_since_tsc, __ATOMIC_ACQUIRE);
	uint64_t max_ticks = __atomic_load_n(&placement.visit_max_ticks, __ATOMIC_RELAXED);
	unsigned long home[PLACEMENT_MASK_WORDS];
	pid_t tid = __atomic_load_n(&placement.tid, __ATOMIC_RELAXED);
	uint32_t cpu = __atomic_load_n(&placement.visit_cpu, __ATOMIC_RELAXED);
	bool any = false;
	int rc;

	if (since == 0 || since == PLACEMENT_VISIT_MOVING || tid == 0)
		return;
	if (!forced &&
	    (max_ticks == 0 || cpu_rdtsc() - (since & ~PLACEMENT_VISIT_MOVED) < max_ticks))
		return;
	for (unsigned w = 0; w < PLACEMENT_MASK_WORDS; w++)
		home[w] = __atomic_load_n(&placement.home_mask[w], __ATOMIC_RELAXED);
	if (cpu < CPU_MAX_CPUS)
		cpu_mask_clear(home, cpu);
	for (unsigned w = 0; w < PLACEMENT_MASK_WORDS; w++)
		any = any || home[w] != 0;
	if (!any ||
	    !__atomic_compare_exchange_n(&placement.visit_since_tsc, &since, PLACEMENT_VISIT_MOVING,
					 false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return;
	rc = sched_setaffinity(tid, sizeof home, (cpu_set_t *)home);
	/* Only the rescuer writes the word while it says MOVING. */
	__atomic_store_n(&placement.visit_since_tsc,
			 (cpu_rdtsc() & ~PLACEMENT_VISIT_MOVED) |
			     (rc == 0 ? PLACEMENT_VISIT_MOVED : 0),
			 __ATOMIC_RELEASE);
}

void placement_free_stuck_thread(void)
{
	placement_rescue(false);
}

/* The main thread's CPUs into main_cpus; false (and none) when they cannot
 * be had. A change since the last round moved the program (the main thread
 * alone, or every thread with the change to this one lost): the CPUs
 * readers reported are forgotten, and those still without a line report
 * again. */
static bool placement_main_cpus(unsigned long *main_cpus)
{
	memset(main_cpus, 0, PLACEMENT_MASK_WORDS * sizeof *main_cpus);
	if (sched_getaffinity(getpid(), PLACEMENT_MASK_WORDS * sizeof *main_cpus,
			      (cpu_set_t *)main_cpus) != 0)
		return false;
	if (placement.main_known &&
	    !cpu_mask_equal(main_cpus, placement.main_mask, PLACEMENT_MASK_WORDS))
		table_wanted_clear();
	memcpy(placement.main_mask, main_cpus, sizeof placement.main_mask);
	placement.main_known = true;
	return true;
}

/* The CPUs this round visits, and the thread's own among them (home). The
 * library's thread visits every CPU a thread of the program is known to run
 * on, and no other: its own CPUs (placement.start_mask, as someone else may
 * have changed them since), narrowed to the main thread's where the two
 * overlap; the main thread's; and those where readers found no line
 * (table_wanted: a worker pinned to a CPU of its own). The narrowing keeps
 * a whole process moved at run time within its new CPUs even where the
 * change to this thread was lost (made between its look and its pin, which
 * then undid it): the main thread shows the move. sched_getaffinity leaves
 * out offline CPUs, and the pin refuses them and those outside the cpuset.
 * The tools: every online CPU their cpuset lets them pin to (sysfs). */
static void placement_round_cpus(unsigned long *visit, unsigned long *home)
{
	unsigned long main_cpus[PLACEMENT_MASK_WORDS], narrowed[PLACEMENT_MASK_WORDS];
	unsigned long wanted[PLACEMENT_MASK_WORDS];

	if (placement.whole_cpuset) {
		if (!cpu_online_mask(visit, PLACEMENT_MASK_WORDS))
			memcpy(visit, placement.start_mask, sizeof placement.start_mask);
		memcpy(home, visit, sizeof placement.home_mask);
		return;
	}
	/* A change since the last round is taken in here; it is no reason
	 * to stop this round's walk. */
	placement_mask_moved();
	placement.moved = false;
	memcpy(home, placement.start_mask, sizeof placement.start_mask);
	if (placement_main_cpus(main_cpus)) {
		memcpy(narrowed, home, sizeof narrowed);
		if (cpu_mask_and(narrowed, main_cpus, PLACEMENT_MASK_WORDS))
			memcpy(home, narrowed, sizeof narrowed);
	}
	/* Read after any clearing above: a report made since stays. */
	table_wanted_copy(wanted);
	for (unsigned i = 0; i < PLACEMENT_MASK_WORDS; i++)
		visit[i] = home[i] | main_cpus[i] | wanted[i];
}

/* Whether a reader reported a CPU the last round did not visit. */
bool placement_wanted_new(void)
{
	unsigned long wanted[PLACEMENT_MASK_WORDS];

	table_wanted_copy(wanted);
	for (unsigned i = 0; i < PLACEMENT_MASK_WORDS; i++)
		if (wanted[i] & ~placement.visit_mask[i])
			return true;
	return false;
}

/* The CPUs this thread may run on as it starts: its creator's. */
bool placement_read_affinity(void)
{
	memset(placement.start_mask, 0, sizeof placement.start_mask);
	if (sched_getaffinity(0, sizeof placement.start_mask, (cpu_set_t *)placement.start_mask) !=
	    0)
		return false;
	memcpy(placement.own_mask, placement.start_mask, sizeof placement.own_mask);
	placement_set_home(placement.start_mask);
	memcpy(placement.visit_mask, placement.start_mask, sizeof placement.visit_mask);
	placement.moved = false;
	placement.main_known = false;
	return true;
}

void placement_round_begin(unsigned long *visit, unsigned long *home)
{
	placement_round_cpus(visit, home);
	memcpy(placement.visit_mask, visit, sizeof placement.visit_mask);
}

void placement_round_end(const unsigned long *home, const unsigned long *usable, bool any_usable)
{
	unsigned long resting[PLACEMENT_MASK_WORDS];

	/* Home is never empty: start_mask, which it comes from, holds the
	 * CPU the thread runs on. */
	memcpy(resting, home, sizeof resting);
	if (!cpu_mask_and(resting, any_usable ? usable : placement.start_mask,
			  PLACEMENT_MASK_WORDS))
		memcpy(resting, home, sizeof resting);
	placement_set_home(resting);
	placement_unpin();
}

bool placement_home_has(uint32_t cpu)
{
	const unsigned bits = 8 * sizeof(unsigned long);

	return cpu < CPU_MAX_CPUS &&
	       ((__atomic_load_n(&placement.home_mask[cpu / bits], __ATOMIC_RELAXED) >>
		 (cpu % bits)) &
		1);
}
