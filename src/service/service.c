/* Running the engine as a calibration service. */
#include "config.h"

#include "service.h"

#include <stdio.h>

#include "cpu.h"
#include "libc.h"
#include "placement.h"
#include "refresh.h"
#include "lines.h"
#include "table.h"
#include "verdict.h"

/* Exported by the programs that run a service (their link flags): a
 * fasttime library preloaded into them finds it and passes every call
 * through (preload.c). */
__attribute__((visibility("default"), used)) const char fasttime_service_process = 1;

bool service_start(struct service_page_writer *page, const char *path,
		   const struct settings *settings, char *error, size_t error_len)
{
	/* Before any clock is read: the engine calibrates against the
	 * kernel's clocks, whatever is preloaded. */
	libc_resolve_beneath_fasttime();
	/* Before the engine writes anything: the page starts as a copy of
	 * the empty table, and the engine's writes land in it. */
	if (!service_page_create(page, path, settings, error, error_len))
		return false;
	refresh_configure(settings);
	/* The page serves readers of either mode, whatever this process's. */
	refresh_serve_both_modes();
	if (!refresh_calibrate_now()) {
		snprintf(error, error_len, "the fast path cannot run here: %s",
			 verdict_unusable() != NULL ? verdict_unusable()
						    : "no CPU could be calibrated");
		service_page_remove(page);
		return false;
	}
	refresh_start();
	if (!service_running()) {
		snprintf(error, error_len, "the refresh thread could not start%s%s",
			 verdict_unusable() != NULL ? ": " : "",
			 verdict_unusable() != NULL ? verdict_unusable() : "");
		service_page_remove(page);
		return false;
	}
	if (!service_page_publish(page, error, error_len)) {
		service_stop(page);
		return false;
	}
	return true;
}

void service_free_stuck_thread(void)
{
	placement_free_stuck_thread();
}

uint64_t service_look_again_ns(uint64_t idle_ns)
{
	const uint64_t taken_ns = 100000000ull;

	return lines_visits_waited_lately(libc_monotonic_ns()) && taken_ns < idle_ns ? taken_ns
										     : idle_ns;
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
