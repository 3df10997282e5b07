/* Running the engine as a calibration service. */
#include "config.h"

#include "service.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>

#include "cpu.h"
#include "placement.h"
#include "refresh.h"
#include "table.h"
#include "verdict.h"

/* The visits' watcher: readers of the page are in other processes and
 * cannot move the refresh thread back from a CPU a real-time thread owns;
 * this thread, in the service's own process, does, within
 * PLACEMENT_VISIT_MAX_NS of the visit's start (else the page went stale
 * for as long as the real-time throttle let the thread wait: up to 950 ms
 * in every second). It sleeps between visits, and ends with the process. */
static void *service_watch_visits(void *unused)
{
	uint32_t seen = 0;
	sigset_t all;

	(void)unused;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	prctl(PR_SET_NAME, "fasttime-watch", 0, 0, 0);
	for (;;)
		placement_tend_visit(&seen);
	return NULL;
}

/* Starts the watcher; without it (no thread to be had) the service runs
 * as readers of its own process would leave it: unrescued. */
static void service_start_watcher(void)
{
	pthread_attr_t attr;
	pthread_t watcher;

	placement_watch_visits();
	if (pthread_attr_init(&attr) != 0)
		return;
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_create(&watcher, &attr, service_watch_visits, NULL);
	pthread_attr_destroy(&attr);
}

bool service_start(struct service_page_writer *page, const char *path,
		   const struct settings *settings, char *error, size_t error_len)
{
	/* Before the engine writes anything: the page starts as a copy of
	 * the empty table, and the engine's writes land in it. */
	if (!service_page_create(page, path, settings, error, error_len))
		return false;
	refresh_configure(settings);
	/* Before the calibration: a thread's start may take long (under
	 * ThreadSanitizer, tens of milliseconds), and must not come between
	 * the calibration's last renewal of the lines and the page's
	 * publication (a first reader found the page stale, every time). */
	service_start_watcher();
	if (!refresh_calibrate_now()) {
		snprintf(error, error_len, "the fast path cannot run here: %s",
			 verdict.unusable != NULL ? verdict.unusable
						  : "no CPU could be calibrated");
		service_page_remove(page);
		return false;
	}
	refresh_start();
	if (!service_running()) {
		snprintf(error, error_len, "the refresh thread could not start%s%s",
			 verdict.unusable != NULL ? ": " : "",
			 verdict.unusable != NULL ? verdict.unusable : "");
		service_page_remove(page);
		return false;
	}
	if (!service_page_publish(page, error, error_len)) {
		service_stop(page);
		return false;
	}
	return true;
}

bool service_running(void)
{
	return __atomic_load_n(&refresh_state, __ATOMIC_ACQUIRE) == REFRESH_RUNNING;
}

void service_stop(struct service_page_writer *page)
{
	/* Stopped as for a restart, which leaves the entry points' flags as
	 * they are: a reader then tries the lines, finds them stale from now,
	 * asks libc (clamped to what its thread was given from the page),
	 * looks for a service started in this one's place (a restart:
	 * service_page_look_again), and, when none has come once the page
	 * has been stale for SERVICE_PAGE_ABANDON_NS, leaves it for a thread
	 * of its own (service_page_abandoned). Flags cleared would send every
	 * call straight to libc, and no reader would ever leave. */
	refresh_stop(REFRESH_STOP_RESTART);
	table_set_validity(cpu_rdtsc(), 0);
	service_page_remove(page);
}
