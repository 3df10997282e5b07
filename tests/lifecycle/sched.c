/* The refresh thread's own scheduling, whatever its creator runs. The first
 * time call comes from a thread that runs SCHED_IDLE, SCHED_FIFO (where this
 * process may) or SCHED_OTHER at nice 5 (the case named by the argument);
 * the refresh thread it starts must run SCHED_OTHER at nice 0, and between
 * rounds it must not stay pinned to one CPU: its affinity is every CPU it
 * visited.
 *
 * Usage: sched idle|fifo|nice */
#define _GNU_SOURCE
#include <errno.h>
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
	} else {
		life_fail("unknown case %s", what);
	}
	if (sched_setscheduler(0, policy, &param) != 0) {
		if (errno == EPERM)
			life_skip("this process may not run %s", sched_policy_name(policy));
		life_fail("sched_setscheduler(%s): %s", sched_policy_name(policy), strerror(errno));
	}
}

int main(int argc, char **argv)
{
	cpu_set_t process, thread;
	pid_t tid;
	int policy, nice_value, unpinned = 0;

	life_begin("sched");
	if (argc != 2)
		life_fail("usage: sched idle|fifo|nice");
	life_watchdog(30);
	CPU_ZERO(&process);
	if (sched_getaffinity(0, sizeof process, &process) != 0)
		life_fail("sched_getaffinity: %s", strerror(errno));
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

	/* A round pins the thread to each CPU in turn for microseconds; between
	 * rounds (10 ms, 40 ms, 160 ms... apart) it may run on any it visited. */
	if (CPU_COUNT(&process) < 2) {
		life_say("one CPU: nothing to learn from the refresh thread's affinity");
		return 0;
	}
	for (unsigned i = 0; i < 20; i++) {
		CPU_ZERO(&thread);
		if (sched_getaffinity(tid, sizeof thread, &thread) == 0 && CPU_COUNT(&thread) >= 2)
			unpinned++;
		life_sleep_ms(25);
	}
	life_say("the refresh thread could run on more than one CPU in %d of 20 looks", unpinned);
	if (unpinned == 0)
		life_fail("the refresh thread stayed pinned to one CPU between rounds");
	return 0;
}
