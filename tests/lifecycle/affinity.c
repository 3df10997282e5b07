/* The refresh thread stays within the program's CPUs. Latency setups keep
 * CPUs free of everything (isolcpus, nohz_full, a pinned poller): a thread
 * of ours must not wake there.
 *
 * inherited: the program runs on one CPU of its own (as under taskset -c)
 *   from before its first time call; the refresh thread it starts must
 *   never be allowed on, nor be seen on, another.
 * moved: the program starts with all its CPUs, reads the clock, then moves
 *   every thread of the process to one CPU (as taskset -a -p does); the
 *   refresh thread must stay there from the next round on.
 *
 * The thread is looked at about 400 times, 5 ms apart, with a 10 ms
 * interval between its rounds (the .test script): its allowed CPUs
 * (sched_getaffinity of its id) and the CPU it last ran on (field 39 of
 * /proc/self/task/TID/stat). Skips with fewer than two CPUs.
 *
 * Usage: affinity inherited|moved */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "life.h"

#define AFFINITY_LOOKS 400u

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

int main(int argc, char **argv)
{
	cpu_set_t process, one, allowed;
	unsigned outside_allowed = 0, outside_ran = 0;
	int home = -1, last;
	pid_t tid = -1;
	bool moved;

	life_begin("affinity");
	if (argc != 2 || (strcmp(argv[1], "inherited") != 0 && strcmp(argv[1], "moved") != 0))
		life_fail("usage: affinity inherited|moved");
	moved = strcmp(argv[1], "moved") == 0;
	life_watchdog(60);
	CPU_ZERO(&process);
	if (sched_getaffinity(0, sizeof process, &process) != 0)
		life_fail("sched_getaffinity: %s", strerror(errno));
	if (CPU_COUNT(&process) < 2)
		life_skip("this process has one CPU: no other to stay away from");
	for (int cpu = 0; cpu < CPU_SETSIZE && home < 0; cpu++)
		if (CPU_ISSET(cpu, &process))
			home = cpu;
	CPU_ZERO(&one);
	CPU_SET(home, &one);

	if (!moved && sched_setaffinity(0, sizeof one, &one) != 0)
		life_fail("sched_setaffinity(%d): %s", home, strerror(errno));
	life_require_fast();
	for (unsigned i = 0; i < 300 && tid < 0; i++) {
		tid = life_thread_named("fasttime");
		if (tid < 0)
			life_sleep_ms(10);
	}
	if (tid < 0) {
		life_list_threads();
		life_fail("no thread named fasttime");
	}
	if (moved) {
		affinity_move_all(home);
		/* A round that was pinning the thread as it moved may finish
		 * on the CPU it was on; the next one must not leave. */
		life_sleep_ms(200);
	}

	for (unsigned i = 0; i < AFFINITY_LOOKS; i++) {
		CPU_ZERO(&allowed);
		if (sched_getaffinity(tid, sizeof allowed, &allowed) != 0)
			life_fail("sched_getaffinity(refresh thread): %s", strerror(errno));
		CPU_AND(&allowed, &allowed, &process);
		CPU_CLR(home, &allowed);
		if (CPU_COUNT(&allowed) > 0)
			outside_allowed++;
		last = affinity_last_cpu(tid);
		if (last >= 0 && last != home)
			outside_ran++;
		life_sleep_ms(5);
	}
	life_say("%s: program on CPU %d; refresh thread allowed elsewhere in %u of %u looks, "
		 "seen elsewhere in %u",
		 argv[1], home, outside_allowed, AFFINITY_LOOKS, outside_ran);
	if (outside_allowed > 0 || outside_ran > 0)
		life_fail("the refresh thread left the program's CPU %d", home);
	return 0;
}
