/* A step of a clock seen by a reader. The refresh thread, preempted
 * between its look and its renewal of the lines, could bring them back
 * with an old offset and take back a step that a caller answered by libc
 * has already seen: the reader that sees the step over stale lines
 * publishes the new offset itself, before its caller gets libc's answer. */
#ifndef FASTTIME_PRELOAD_STEP_H
#define FASTTIME_PRELOAD_STEP_H

#include <stdbool.h>

#include "clock_table.h"
#include "refresh.h"

/* Whether the lines are past the validity the refresh thread last gave
 * them. */
bool preload_lines_stale(void);
/* After libc answered a call of the clock that is monotonic plus kind's
 * offset (CLOCK_REALTIME's for gettimeofday, time and timespec_get)
 * because the lines went stale (stale_before: they were, just before
 * libc's call; a renewal may come while libc answers): if the clock was set
 * since the refresh thread last looked, publishes the new offset. After
 * libc's answer, so that any step the answer shows is in the sandwiches.
 * Only while the refresh thread runs (preload_follow_step), the clock's
 * offset is published and the lines are stale: up to three monotonic /
 * clock / monotonic sandwiches, and a shared write only for a step. */
void preload_follow_step_look(enum clock_offset_kind kind, bool stale_before);

/* preload_follow_step_look where the refresh thread runs in this process:
 * a served process's offsets are its service's to publish. One load
 * otherwise, no call: a served reader over a stale page pays no more. */
static inline void preload_follow_step(enum clock_offset_kind kind, bool stale_before)
{
	if (__atomic_load_n(&refresh_state, __ATOMIC_RELAXED) == REFRESH_RUNNING)
		preload_follow_step_look(kind, stale_before);
}

#endif
