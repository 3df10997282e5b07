/* The refresh thread stays within the program's CPUs, and serves every one
 * of them that a reader runs on. Latency setups keep CPUs free of
 * everything (isolcpus, nohz_full): a thread of ours must not wake there;
 * and they pin their pollers to CPUs of their own, where the clock must
 * still answer from the TSC.
 *
 * inherited: the program runs on one CPU of its own (as under taskset -c)
 *   from before its first time call; the refresh thread it starts must
 *   never be allowed on, nor be seen on, another.
 * moved: the program starts with all its CPUs, reads the clock, then moves
 *   every thread of the process to one CPU (as taskset -a -p does); the
 *   refresh thread must stay there from the next round on.
 * workers: the main thread runs on one CPU and makes the first time call;
 *   a worker pinned to a second CPU (a pinned poller) then reads the clock
 *   for about 1 s, and must be answered from the TSC there; the refresh
 *   thread must never be allowed on, nor be seen on, a third CPU, nor be
 *   allowed on two CPUs at once (between rounds it stays on its own).
 * worker-first: as workers, but the worker makes the first time call (the
 *   refresh thread inherits the worker's CPU), then the main thread must be
 *   answered from the TSC on its own CPU.
 *
 * The thread is looked at 100 times, 5 ms apart (in workers, until the
 * worker is done), with a 10 ms interval between its rounds (the .test
 * script): its allowed CPUs (sched_getaffinity of its id) and the CPU it
 * last ran on (field 39 of /proc/self/task/TID/stat). A thread that leaves
 * the program's CPUs does so in every round, which 100 looks see some 50
 * of. Skips with fewer than two CPUs. CPUs a task above ours owns (a
 * real-time loop beside the test) are left out (affinity_print_free).
 *
 * Usage: affinity inherited|moved|workers|worker-first|free */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "life.h"

#define AFFINITY_LOOKS 100u
/* How long a worker reads the clock, and in batches of how many reads. */
#define AFFINITY_WORKER_MS 1000u
#define AFFINITY_BATCH	   1000u

/* The CPU thread tid last ran on (field 39 of its stat), or -1. */
static int affinity_last_cpu(pid_t tid)
{
	char path[64], stat[1024], *at;
	int fd, field;
	ssize_t n;

	snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, stat, sizeof stat - 1);
	close(fd);
	if (n <= 0)
		return -1;
	stat[n] = '\0';
	/* The name, field 2, may hold spaces: count from its closing ')'. */
	at = strrchr(stat, ')');
	if (at == NULL)
		return -1;
	for (field = 2; field < 39 && at != NULL; field++)
		at = strchr(at + 1, ' ');
	return at != NULL ? atoi(at + 1) : -1;
}

/* Moves every thread of this process to cpu alone, as taskset -a -p does. */
static void affinity_move_all(int cpu)
{
	cpu_set_t one;
	struct dirent *entry;
	DIR *dir = opendir("/proc/self/task");

	if (dir == NULL)
		life_fail("opendir(/proc/self/task): %s", strerror(errno));
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	while ((entry = readdir(dir)) != NULL) {
		if (entry->d_name[0] == '.')
			continue;
		if (sched_setaffinity((pid_t)atoi(entry->d_name), sizeof one, &one) != 0 &&
		    errno != ESRCH)
			life_fail("sched_setaffinity(%s, %d): %s", entry->d_name, cpu,
				  strerror(errno));
	}
	closedir(dir);
}

/* Pins the calling thread to cpu alone. */
static void affinity_pin_self(int cpu)
{
	cpu_set_t one;

	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (sched_setaffinity(0, sizeof one, &one) != 0)
		life_fail("sched_setaffinity(%d): %s", cpu, strerror(errno));
}

/* How much of each CPU a thread of ours gets: one thread pinned to each
 * spins for AFFINITY_PROBE_MS, all at once, and compares its CPU time with
 * the time that passed. A real-time loop (or any task above ours) that owns
 * a CPU leaves ours at most its throttled 50 ms a second there: a reader
 * on that CPU runs too seldom, and so does the refresh thread, for the TSC
 * to answer it, and the library rightly answers it with libc. The probe
 * runs long enough for that share to stay under AFFINITY_FREE_SHARE, which
 * a CPU merely shared with other work (four runnable tasks) still reaches. */
#define AFFINITY_PROBE_MS   400u
#define AFFINITY_FREE_SHARE 0.25
#define AFFINITY_PROBES_MAX 64u

struct affinity_probe {
	int cpu;
	double share;
};

static void *affinity_probe_main(void *arg)
{
	struct affinity_probe *probe = arg;
	struct timespec cpu_time;
	uint64_t start, end, now;

	affinity_pin_self(probe->cpu);
	/* Through libc, not the library: the process's own time calls come
	 * later. */
	start = life_libc_mono_ns();
	end = start + AFFINITY_PROBE_MS * LIFE_NS_PER_MS;
	do
		now = life_libc_mono_ns();
	while (now < end);
	if (syscall(SYS_clock_gettime, CLOCK_THREAD_CPUTIME_ID, &cpu_time) != 0)
		life_fail("clock_gettime(CLOCK_THREAD_CPUTIME_ID): %s", strerror(errno));
	probe->share = (double)life_ns(&cpu_time) / (double)(now - start);
	return NULL;
}

/* affinity free: prints the CPUs of this process that a thread of ours gets
 * at least AFFINITY_FREE_SHARE of (the .test script runs it once and hands
 * the list to every case in AFFINITY_FREE_CPUS), and says which it left out. */
static void affinity_print_free(const cpu_set_t *process)
{
	struct affinity_probe probes[AFFINITY_PROBES_MAX];
	pthread_t threads[AFFINITY_PROBES_MAX];
	unsigned count = 0;

	for (int cpu = 0; cpu < CPU_SETSIZE && count < AFFINITY_PROBES_MAX; cpu++) {
		if (!CPU_ISSET(cpu, process))
			continue;
		probes[count].cpu = cpu;
		if (pthread_create(&threads[count], NULL, affinity_probe_main, &probes[count]) != 0)
			life_fail("pthread_create failed");
		count++;
	}
	for (unsigned i = 0; i < count; i++)
		pthread_join(threads[i], NULL);
	for (unsigned i = 0; i < count; i++) {
		if (probes[i].share >= AFFINITY_FREE_SHARE)
			printf("%d ", probes[i].cpu);
		else
			fprintf(
			    stderr,
			    "affinity: CPU %d left out: a thread of ours got %.0f %% of it in %u "
			    "ms (a task above ours owns it)\n",
			    probes[i].cpu, probes[i].share * 100.0, AFFINITY_PROBE_MS);
	}
	printf("\n");
}

/* The CPUs the cases may use: AFFINITY_FREE_CPUS's (affinity_print_free)
 * among the process's, or all of the process's where it is not set. */
static void affinity_usable(const cpu_set_t *process, cpu_set_t *usable)
{
	const char *list = getenv("AFFINITY_FREE_CPUS");
	char *end;

	if (list == NULL) {
		*usable = *process;
		return;
	}
	CPU_ZERO(usable);
	for (;;) {
		long cpu = strtol(list, &end, 10);

		if (end == list)
			break;
		if (cpu >= 0 && cpu < CPU_SETSIZE && CPU_ISSET((int)cpu, process))
			CPU_SET((int)cpu, usable);
		list = end;
	}
}

/* A worker pinned to its own CPU. */
struct affinity_worker {
	int cpu;
	bool first;	       /* makes the process's first time call */
	uint64_t batches;      /* of AFFINITY_BATCH reads */
	uint64_t fast_batches; /* answered wholly from the TSC */
	uint64_t reads, fallthrough;
	atomic_bool done;
};

/* Pins itself, then either makes the first time call (and waits until the
 * TSC answers it) or reads the clock in batches for AFFINITY_WORKER_MS,
 * counting the batches the TSC answered alone. */
static void *affinity_worker_main(void *arg)
{
	struct affinity_worker *w = arg;
	uint64_t end, before;

	affinity_pin_self(w->cpu);
	if (w->first) {
		life_require_fast();
		atomic_store(&w->done, true);
		return NULL;
	}
	before = life_fallthrough();
	end = life_libc_mono_ns() + AFFINITY_WORKER_MS * LIFE_NS_PER_MS;
	while (life_libc_mono_ns() < end) {
		uint64_t batch_before = life_fallthrough();

		for (unsigned i = 0; i < AFFINITY_BATCH; i++)
			life_mono_ns();
		w->batches++;
		w->reads += AFFINITY_BATCH;
		w->fast_batches += life_fallthrough() == batch_before;
		/* A poller would spin; a short sleep leaves the shared
		 * machine some room and changes nothing the test looks at. */
		life_sleep_ms(1);
	}
	w->fallthrough = life_fallthrough() - before;
	atomic_store(&w->done, true);
	return NULL;
}

/* What the looks at the refresh thread found. */
struct affinity_looks {
	unsigned looks, outside_allowed, outside_ran, widened;
};

/* Looks at the refresh thread AFFINITY_LOOKS times, or, when until is
 * given, until *until is set and at least AFFINITY_LOOKS times: allowed on,
 * or seen on, a CPU of the process outside program; allowed on more than
 * one CPU at once. */
static void affinity_watch(pid_t tid, const cpu_set_t *process, const cpu_set_t *program,
			   atomic_bool *until, struct affinity_looks *found)
{
	memset(found, 0, sizeof *found);
	for (unsigned i = 0;; i++) {
		cpu_set_t allowed, outside;
		int last;

		if (i >= AFFINITY_LOOKS && (until == NULL || atomic_load(until)))
			break;
		CPU_ZERO(&allowed);
		if (sched_getaffinity(tid, sizeof allowed, &allowed) != 0)
			life_fail("sched_getaffinity(refresh thread): %s", strerror(errno));
		CPU_AND(&allowed, &allowed, process);
		if (CPU_COUNT(&allowed) > 1)
			found->widened++;
		CPU_XOR(&outside, &allowed, program);
		CPU_AND(&outside, &outside, &allowed);
		if (CPU_COUNT(&outside) > 0)
			found->outside_allowed++;
		last = affinity_last_cpu(tid);
		if (last >= 0 && last < CPU_SETSIZE && CPU_ISSET(last, process) &&
		    !CPU_ISSET(last, program))
			found->outside_ran++;
		found->looks++;
		life_sleep_ms(5);
	}
}

/* inherited and moved: the whole program on home alone. */
static void affinity_one_cpu(bool moved, int home, const cpu_set_t *process)
{
	struct affinity_looks found;
	cpu_set_t one;
	pid_t tid;

	CPU_ZERO(&one);
	CPU_SET(home, &one);
	if (!moved)
		affinity_pin_self(home);
	life_require_fast();
	tid = life_wait_refresh_thread();
	if (moved) {
		affinity_move_all(home);
		/* A round that was pinning the thread as it moved may finish
		 * on the CPU it was on; the next one must not leave. */
		life_sleep_ms(200);
	}
	affinity_watch(tid, process, &one, NULL, &found);
	life_say("%s: program on CPU %d; refresh thread allowed elsewhere in %u of %u looks, "
		 "seen elsewhere in %u",
		 moved ? "moved" : "inherited", home, found.outside_allowed, found.looks,
		 found.outside_ran);
	if (found.outside_allowed > 0 || found.outside_ran > 0)
		life_fail("the refresh thread left the program's CPU %d", home);
}

/* workers and worker-first: main on home, a worker pinned to other. */
static void affinity_workers(bool worker_first, int home, int other, const cpu_set_t *process)
{
	struct affinity_worker worker = { .cpu = other, .first = worker_first };
	struct affinity_looks found;
	cpu_set_t program;
	pthread_t thread;
	pid_t tid;

	CPU_ZERO(&program);
	CPU_SET(home, &program);
	CPU_SET(other, &program);
	affinity_pin_self(home);
	if (!worker_first)
		life_require_fast();
	if (pthread_create(&thread, NULL, affinity_worker_main, &worker) != 0)
		life_fail("pthread_create failed");
	if (worker_first) {
		pthread_join(thread, NULL);
		tid = life_wait_refresh_thread();
		/* The main thread's CPU was never the refresh thread's: its
		 * calls must be answered from the TSC all the same. */
		life_mono_ns();
		if (!life_wait_fast(3000))
			life_fail("worker-first: the main thread on CPU %d was never answered from "
				  "the TSC (the refresh thread started on the worker's CPU %d)",
				  home, other);
		affinity_watch(tid, process, &program, NULL, &found);
	} else {
		tid = life_wait_refresh_thread();
		affinity_watch(tid, process, &program, &worker.done, &found);
		pthread_join(thread, NULL);
		life_say("workers: worker on CPU %d: %llu of %llu batches of %u reads answered "
			 "from the TSC alone, %llu of %llu reads passed to libc",
			 other, (unsigned long long)worker.fast_batches,
			 (unsigned long long)worker.batches, AFFINITY_BATCH,
			 (unsigned long long)worker.fallthrough, (unsigned long long)worker.reads);
	}
	life_say("%s: main on CPU %d, worker on CPU %d; refresh thread allowed elsewhere in %u "
		 "of %u looks, seen elsewhere in %u, allowed on two CPUs at once in %u",
		 worker_first ? "worker-first" : "workers", home, other, found.outside_allowed,
		 found.looks, found.outside_ran, found.widened);
	if (found.outside_allowed > 0 || found.outside_ran > 0)
		life_fail("the refresh thread left the program's CPUs %d and %d", home, other);
	if (found.widened > 0)
		life_fail("between rounds the refresh thread was allowed beyond its own CPU");
	if (!worker_first && worker.fast_batches == 0)
		life_fail("workers: the worker pinned to CPU %d was never answered from the TSC",
			  other);
}

int main(int argc, char **argv)
{
	static const char *const cases[] = { "inherited", "moved", "workers", "worker-first",
					     "free" };
	cpu_set_t process, usable;
	int home = -1, other = -1;
	unsigned which = 0;

	life_begin("affinity");
	while (argc == 2 && which < 5 && strcmp(argv[1], cases[which]) != 0)
		which++;
	if (argc != 2 || which == 5)
		life_fail("usage: affinity inherited|moved|workers|worker-first|free");
	life_watchdog(60);
	CPU_ZERO(&process);
	if (sched_getaffinity(0, sizeof process, &process) != 0)
		life_fail("sched_getaffinity: %s", strerror(errno));
	if (which == 4) {
		affinity_print_free(&process);
		return 0;
	}
	if (CPU_COUNT(&process) < 2)
		life_skip("this process has one CPU: no other to stay away from");
	affinity_usable(&process, &usable);
	if (CPU_COUNT(&usable) < (which < 2 ? 1 : 2))
		life_skip("fewer CPUs than this case needs are free of tasks above ours");
	for (int cpu = 0; cpu < CPU_SETSIZE && other < 0; cpu++) {
		if (!CPU_ISSET(cpu, &usable))
			continue;
		if (home < 0)
			home = cpu;
		else
			other = cpu;
	}
	if (which < 2)
		affinity_one_cpu(which == 1, home, &process);
	else
		affinity_workers(which == 3, home, other, &process);
	return 0;
}
