/* A step of a clock seen by a reader (preload_step.h). */
#include "config.h"

#include "preload_step.h"

#include <stdint.h>

#include "calib.h"
#include "clock.h"
#include "cpu.h"
#include "offsets.h"
#include "refresh.h"
#include "table.h"
#include "watch.h"

/* Sandwiches a reader takes at most: the first that is narrow enough. */
#define PRELOAD_STEP_SANDWICHES 3u

bool preload_lines_stale(void)
{
	uint64_t valid_from = __atomic_load_n(&table_page.shared.valid_from_tsc, __ATOMIC_ACQUIRE);
	uint64_t valid_ticks = __atomic_load_n(&table_page.shared.valid_ticks, __ATOMIC_ACQUIRE);

	return cpu_rdtsc() - valid_from > valid_ticks;
}

void preload_follow_step_look(enum clock_offset_kind kind, bool stale_before)
{
	const struct clock_row *row = clock_table_row_for_offset(kind);
	uint64_t published = clock_offset(kind), offset;
	struct calib_offset_sample sample;
	int64_t moved;

	/* Only an offset the refresh thread has published: its clock's bit
	 * says so. */
	if (row == NULL || kind == CLOCK_OFFSET_NONE || !(table_api_flags() & row->entry_points) ||
	    !(stale_before || preload_lines_stale()))
		return;
	for (unsigned i = 0; i < PRELOAD_STEP_SANDWICHES; i++) {
		if (offsets_samples(row->id, &sample, 1) == 0)
			break;
		if (sample.mono_after < sample.mono_before ||
		    sample.mono_after - sample.mono_before > WATCH_READER_SANDWICH_MAX_NS)
			continue;
		if (watch_realtime_judge(&sample, 1, published, WATCH_STEP_THRESHOLD_NS, &offset,
					 &moved) == WATCH_REALTIME_SET)
			table_swap_offset(kind, published, offset);
		break;
	}
}
