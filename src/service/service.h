/* A calibration service: this process's engine, with its table mapped to
 * a page file that other processes map read-only (service_page.h). Run by
 * fasttimed for the machine (or a user), and by the fasttime command for
 * the programs it runs. */
#ifndef FASTTIME_SERVICE_H
#define FASTTIME_SERVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "service_page.h"
#include "settings.h"

/* Makes the page at path, calibrates every CPU this process may run on
 * (synchronously, a few tens of milliseconds), starts the refresh thread
 * and only then gives the page its name: a reader never finds a page
 * without lines. False with a message in error; nothing is left behind. */
bool service_start(struct service_page_writer *page, const char *path,
		   const struct settings *settings, char *error, size_t error_len);

/* False once the refresh thread has quit on its own (the fast path can no
 * longer run here: the clocksource or the processor changed its verdict). */
bool service_running(void);

/* For a thread of the service's own that waits (fasttimed's main): moves
 * the refresh thread off a CPU where a visit has waited
 * PLACEMENT_VISIT_MAX_NS or more (a real-time thread owns it), as a reader's
 * time call does in a preloaded program. No reader of the page can: it is
 * in another process. One atomic load otherwise. */
void service_free_stuck_thread(void);
/* How long such a thread may wait before it looks again: a tenth of a
 * second while a visit waited lately (a real-time thread takes a CPU of
 * the service's), so that the next such visit is cut short soon after
 * PLACEMENT_VISIT_MAX_NS; otherwise idle_ns. */
uint64_t service_look_again_ns(uint64_t idle_ns);

/* Stops the thread, ends every reader's answers from the page at once
 * (they ask libc, then leave the page for a thread of their own) and
 * removes the page's name. */
void service_stop(struct service_page_writer *page);

#endif
