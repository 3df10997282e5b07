/* The refresh thread's own scheduling, whatever its creator runs. The first
 * time call comes from a thread that runs SCHED_IDLE, SCHED_FIFO (where this
 * process may) or SCHED_OTHER at nice 5 (the case named by the argument);
 * the refresh thread it starts must run SCHED_OTHER at nice 0, and between
 * rounds it must not stay pinned to one CPU: its affinity is every CPU it
 * visited. The case neighbour starts from SCHED_OTHER beside a SCHED_FIFO
 * busy loop on this process's last CPU (where one may run): the visits
 * there wait behind it, and the rounds then skip that CPU for a while;
 * between rounds the thread must still not rest pinned to one CPU, where
 * a real-time thread that takes that CPU later would hold it with no
 * reader able to move it (a reader moves it only out of a visit).
 *
 * Between rounds is when the thread sleeps: a look counts only where the
 * thread was asleep (state S) and did not run while its affinity was read.
 * A look inside a round (a visit pins it, and may wait behind a real-time
 * thread) says nothing of where it rests.
 *
 * Usage: sched idle|fifo|nice|neighbour */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "life.h"

static const char *sched_policy_name(int policy)
{
	switch (policy) {
	case SCHED_OTHER: return "SCHED_OTHER";
	case SCHED_BATCH: return "SCHED_BATCH";
	case SCHED_IDLE: return "SCHED_IDLE";
	case SCHED_FIFO: return "SCHED_FIFO";
	case SCHED_RR: return "SCHED_RR";
	}
	return "?";
}

/* How long the looks at the thread's affinity go on, and how many looks at
 * it asleep suffice. Beside a real-time loop a visit may wait up to the
 * kernel's throttling period (1 s) and the CPU is then skipped for 1 s. */
#define SCHED_LOOK_MS	  3000u
#define SCHED_LOOK_EVERY  25u
#define SCHED_ASLEEP_WANT 20u

/* What one look at the refresh thread found. */
enum sched_look { SCHED_LOOK_BUSY, SCHED_LOOK_PINNED, SCHED_LOOK_FREE };

/* A small /proc file of the thread tid, whole, into buf; false where it
 * cannot be read. */
static bool sched_read_task_file(pid_t tid, const char *name, char *buf, size_t size)
{
	char path[64];
	ssize_t got;
	int fd;

	snprintf(path, sizeof path, "/proc/self/task/%d/%s", (int)tid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	got = read(fd, buf, size - 1);
	close(fd);
	if (got <= 0)
		return false;
	buf[got] = '\0';
	return true;
}

/* The thread's state letter, from its stat line (after the name, which may
 * hold spaces and parentheses); '?' where it cannot be had. */
static char sched_task_state(pid_t tid)
{
	char line[1024];
	const char *end;

	if (!sched_read_task_file(tid, "stat", line, sizeof line))
		return '?';
	end = strrchr(line, ')');
	return end != NULL && end[1] == ' ' ? end[2] : '?';
}

/* Looks at the thread's affinity where it sleeps: its schedstat (time run,
 * time waited, times run) is the same on each side of the look, so the
 * mask read is the one it went to sleep with. */
static enum sched_look sched_look_at(pid_t tid)
{
	char before[128], after[128];
	cpu_set_t thread;
	char state;
	int rc;

	if (!sched_read_task_file(tid, "schedstat", before, sizeof before))
		life_skip("no /proc/self/task/%d/schedstat (a kernel without CONFIG_SCHED_INFO)",
			  (int)tid);
	state = sched_task_state(tid);
	CPU_ZERO(&thread);
	rc = sched_getaffinity(tid, sizeof thread, &thread);
	if (!sched_read_task_file(tid, "schedstat", after, sizeof after))
		life_fail("the refresh thread's schedstat went away");
	if (rc != 0)
		life_fail("sched_getaffinity(%d): %s", (int)tid, strerror(errno));
	if (state != 'S' || strcmp(before, after) != 0)
		return SCHED_LOOK_BUSY;
	return CPU_COUNT(&thread) >= 2 ? SCHED_LOOK_FREE : SCHED_LOOK_PINNED;
}

/* Gives this (the main) thread the scheduling of the case; skips where the
 * process may not take it. */
static void sched_become(const char *what)
{
	struct sched_param param = { .sched_priority = 0 };
	int policy;

	if (strcmp(what, "idle") == 0) {
		policy = SCHED_IDLE;
	} else if (strcmp(what, "fifo") == 0) {
		policy = SCHED_FIFO;
		param.sched_priority = 1;
	} else if (strcmp(what, "nice") == 0) {
		if (setpriority(PRIO_PROCESS, 0, 5) != 0)
			life_fail("setpriority: %s", strerror(errno));
		return;
	} else if (strcmp(what, "neighbour") == 0) {
		return;
	} else {
		life_fail("unknown case %s", what);
	}
	if (sched_setscheduler(0, policy, &param) != 0) {
		if (errno == EPERM)
			life_skip("this process may not run %s", sched_policy_name(policy));
		life_fail("sched_setscheduler(%s): %s", sched_policy_name(policy), strerror(errno));
	}
}

/* Starts the neighbour case's SCHED_FIFO loop on the last of the
 * process's CPUs (it ends by itself after seconds); skips where none may
 * run, or where the process has one CPU. */
static pid_t sched_start_neighbour(unsigned seconds)
{
	int cpus[CPU_SETSIZE];
	unsigned n = life_cpus(cpus, CPU_SETSIZE);
	const char *why = life_fifo_unavailable();

	if (why != NULL)
		life_skip("%s", why);
	if (n < 2)
		life_skip("one CPU: no other for the refresh thread to rest on");
	life_say("a SCHED_FIFO busy loop on cpu %d", cpus[n - 1]);
	return life_fifo_loop(&cpus[n - 1], 1, 1000u * seconds, seconds);
}

int main(int argc, char **argv)
{
	cpu_set_t process;
	pid_t tid, neighbour = 0;
	int policy, nice_value;
	unsigned free_looks = 0, pinned_looks = 0, looks = 0;

	life_begin("sched");
	if (argc != 2)
		life_fail("usage: sched idle|fifo|nice|neighbour");
	life_watchdog(30);
	CPU_ZERO(&process);
	if (sched_getaffinity(0, sizeof process, &process) != 0)
		life_fail("sched_getaffinity: %s", strerror(errno));
	if (strcmp(argv[1], "neighbour") == 0)
		neighbour = sched_start_neighbour(10);
	sched_become(argv[1]);
	(void)life_mono_ns();
	/* Back to the default now that the first call has started the thread;
	 * where this thread may not, neither could the refresh thread. */
	{
		struct sched_param param = { .sched_priority = 0 };

		if (sched_setscheduler(0, SCHED_OTHER, &param) != 0 ||
		    setpriority(PRIO_PROCESS, 0, 0) != 0)
			life_skip("this process may not return from %s to SCHED_OTHER at nice 0",
				  argv[1]);
	}
	life_require_fast();
	tid = life_wait_refresh_thread();

	policy = sched_getscheduler(tid);
	errno = 0;
	nice_value = getpriority(PRIO_PROCESS, (id_t)tid);
	life_say("%s first caller: the refresh thread runs %s at nice %d", argv[1],
		 sched_policy_name(policy), nice_value);
	if (policy != SCHED_OTHER)
		life_fail("the refresh thread runs %s, not SCHED_OTHER", sched_policy_name(policy));
	if (nice_value != 0)
		life_fail("the refresh thread runs at nice %d, not 0", nice_value);

	/* A round pins the thread to each CPU in turn for microseconds (or as
	 * long as a real-time thread keeps it from one); between rounds (10 ms,
	 * 40 ms, 160 ms... apart) it sleeps, and may run on any CPU it rests
	 * on: never one alone. */
	if (CPU_COUNT(&process) < 2) {
		life_say("one CPU: nothing to learn from the refresh thread's affinity");
		return 0;
	}
	for (; looks < SCHED_LOOK_MS / SCHED_LOOK_EVERY &&
	       free_looks + pinned_looks < SCHED_ASLEEP_WANT;
	     looks++) {
		switch (sched_look_at(tid)) {
		case SCHED_LOOK_BUSY: break;
		case SCHED_LOOK_PINNED: pinned_looks++; break;
		case SCHED_LOOK_FREE: free_looks++; break;
		}
		life_sleep_ms(SCHED_LOOK_EVERY);
	}
	if (neighbour != 0)
		life_load_stop(neighbour);
	life_say("the refresh thread, asleep between rounds, could run on more than one CPU in %u "
		 "of %u looks (%u looks found it in a round)",
		 free_looks, free_looks + pinned_looks, looks - free_looks - pinned_looks);
	if (pinned_looks > 0)
		life_fail("the refresh thread rested pinned to one CPU between rounds");
	if (free_looks == 0)
		life_fail("the refresh thread was never seen asleep between rounds in %u ms",
			  SCHED_LOOK_MS);
	return 0;
}
