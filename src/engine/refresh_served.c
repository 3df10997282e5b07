/* A process served by a calibration service's page (service_page.h):
 * its changes of state. The constructor only records that a page is to be
 * looked for; the first time call that would start the refresh thread
 * looks for it, maps it and is served from then on, with no thread of
 * ours (a process that never reads the clock opens no page). It leaves
 * the page for its own thread once the page is abandoned or no longer of
 * its time namespace, and while the page is stale it looks for a service
 * started in its service's place. A process that found its page stale at
 * its first time call is served once the page is fresh again, its own
 * thread ending then. */
#include "config.h"

#include "refresh.h"

#include <limits.h>
#include <string.h>

#include "debug.h"
#include "libc.h"
#include "sandbox.h"
#include "service_page.h"
#include "signal_guard.h"
#include "start_data.h"
#include "wiped.h"
#include "table.h"
#include "verdict.h"

/* The page the constructor asked the first time call to look for: the
 * settings it read, with FASTTIME_PAGE's path copied (a program may write
 * over its environment's strings, as those that set their process title
 * do); with the start's data (start_data.h), the long path's buffer apart
 * for the few paths that need it. Read and cleared by the one caller that
 * claimed the start (refresh_claim_start); a fork child
 * made before that looks for the page at its own first call. */
#define REFRESH_PAGE_SHORT_PATH 96u
static struct {
	bool pending;
	bool rseq_registered;
	struct settings settings;
	char short_path[REFRESH_PAGE_SHORT_PATH];
} refresh_page_wanted START_DATA;
static char refresh_page_long_path[PATH_MAX];

void refresh_serve_later(const struct settings *settings, bool rseq_registered)
{
	refresh_page_wanted.settings = *settings;
	refresh_page_wanted.rseq_registered = rseq_registered;
	if (settings->page != NULL) {
		size_t length = strlen(settings->page);
		char *kept = length < sizeof refresh_page_wanted.short_path
				 ? refresh_page_wanted.short_path
				 : refresh_page_long_path;

		/* One too long for any path is left where it is: its open
		 * fails as it would have in the constructor. */
		if (length < sizeof refresh_page_long_path) {
			memcpy(kept, settings->page, length + 1);
			refresh_page_wanted.settings.page = kept;
		}
	}
	__atomic_store_n(&refresh_page_wanted.pending, !settings_page_none(settings),
			 __ATOMIC_RELAXED);
	refresh_configure(settings);
}

/* Straight from STARTING to SERVED, never through IDLE: another thread's
 * call must not start a thread of ours meanwhile. */
bool refresh_serve_wanted_page(void)
{
	struct service_page_look look;

	if (!__atomic_load_n(&refresh_page_wanted.pending, __ATOMIC_RELAXED))
		return false;
	__atomic_store_n(&refresh_page_wanted.pending, false, __ATOMIC_RELAXED);
	/* Before the mapping: a fork child finds the words it must see zero
	 * zeroed by the kernel (wiped.h), and runs nothing of ours; where the
	 * kernel cannot, by the fork handler, registered here. A thread
	 * started instead registers it (refresh_prepare_thread). A child
	 * forked by another thread while the page is mapped stays STARTING,
	 * with no start of its own: it answers from the page, judged, where
	 * the mapping was made, else with libc. */
	if (!wiped_arm())
		refresh_watch_forks();
	if (!service_page_find(&refresh_page_wanted.settings, refresh_page_wanted.rseq_registered,
			       true, NULL, &look))
		return false;
	debug_log("calibration served by the page %s (service pid %d): no thread",
		  service_page_served(), (int)look.header.service_pid);
	signal_guard_set_pass_through(true);
	refresh_set_state(REFRESH_SERVED);
	return true;
}

void refresh_serve_before_filter(void)
{
	if (!__atomic_load_n(&refresh_page_wanted.pending, __ATOMIC_RELAXED) ||
	    !refresh_claim_start())
		return;
	/* Claimed as a start is: no thread starts meanwhile. */
	if (!sandbox_thread_allowed() || !refresh_serve_wanted_page())
		refresh_set_state(REFRESH_IDLE);
}

bool refresh_leave_service(const char *why, bool only_if_abandoned)
{
	int served = REFRESH_SERVED;

	if (__atomic_load_n(&refresh_state, __ATOMIC_ACQUIRE) != REFRESH_SERVED ||
	    refresh_served_under_filter() || !sandbox_thread_allowed() ||
	    !service_page_leave(only_if_abandoned))
		return false;
	/* Its own thread will judge the clocksource, which a process served
	 * from its start has not read. */
	verdict_read_kernel();
	/* From now on handlers are counted again; those installed while served
	 * are foreign to the guard, which looks for them before a start. */
	signal_guard_set_pass_through(false);
	if (__atomic_compare_exchange_n(&refresh_state, &served, REFRESH_IDLE, false,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		refresh_set_state(REFRESH_IDLE);
	debug_log("%s: served no more, calibrating alone", why);
	return true;
}

void refresh_look_for_service_again(void)
{
	/* The cheap gates first; under a seccomp filter a stat or an open
	 * may kill the process. */
	if (__atomic_load_n(&refresh_state, __ATOMIC_ACQUIRE) != REFRESH_SERVED ||
	    refresh_served_under_filter() || !service_page_look_due())
		return;
	/* A new page is judged for the namespace the old one was: a fork
	 * child's own is checked first. */
	if (sandbox_thread_allowed() && service_page_time_namespace_checked() &&
	    service_page_look_again())
		debug_log(
		    "calibration served again, by the page %s (service pid %d): no thread",
		    service_page_served(),
		    (int)((const struct service_page_header *)table_page.header)->service_pid);
}

/* The longest wait between two looks at an awaited page: the wait starts
 * at SERVICE_PAGE_LOOK_AGAIN_NS and doubles at each look that finds it
 * stale still, so that a page whose service died costs a look every 2 s. */
#define REFRESH_AWAITED_MAX_WAIT_NS 2000000000ull

/* When the refresh thread may look at an awaited page next (libc's
 * CLOCK_MONOTONIC, ns), and the wait after that look; the thread's alone. */
static uint64_t refresh_awaited_look_ns;
static uint64_t refresh_awaited_wait_ns = SERVICE_PAGE_LOOK_AGAIN_NS;

bool refresh_take_up_awaited_page(void)
{
	int running = REFRESH_RUNNING;
	uint64_t now;

	if (!service_page_awaited())
		return false;
	now = libc_monotonic_ns();
	if (now < refresh_awaited_look_ns)
		return false;
	refresh_awaited_look_ns = now + refresh_awaited_wait_ns;
	if (refresh_awaited_wait_ns < REFRESH_AWAITED_MAX_WAIT_NS / 2)
		refresh_awaited_wait_ns *= 2;
	else
		refresh_awaited_wait_ns = REFRESH_AWAITED_MAX_WAIT_NS;
	if (!service_page_awaited_serves())
		return false;
	/* Claimed as a stopper claims it: no stop, start or fork bookkeeping
	 * changes the state meanwhile, and this thread publishes nothing more. */
	if (!__atomic_compare_exchange_n(&refresh_state, &running, REFRESH_STOPPING, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return false;
	if (!service_page_take_up()) {
		refresh_set_state(REFRESH_RUNNING);
		return false;
	}
	signal_guard_set_pass_through(true);
	refresh_set_state(REFRESH_SERVED);
	debug_log("calibration served by the page %s (service pid %d), fresh again: the refresh "
		  "thread ends",
		  service_page_served(),
		  (int)((const struct service_page_header *)table_page.header)->service_pid);
	return true;
}
