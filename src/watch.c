/* The watch's decisions between rounds (watch.h). */
#include "config.h"

#include "watch.h"

enum watch_realtime watch_realtime_judge(const struct calib_offset_sample *samples, unsigned n,
					 uint64_t published_ns, uint64_t threshold_ns,
					 uint64_t *offset_ns, int64_t *moved_ns)
{
	uint64_t offset = 0, width = 0, magnitude;
	int64_t moved;

	if (!calib_realtime_offset(samples, n, &offset, &width))
		return WATCH_REALTIME_UNMEASURED;
	moved = (int64_t)(offset - published_ns);
	*offset_ns = offset;
	*moved_ns = moved;
	magnitude = moved < 0 ? 0 - (uint64_t)moved : (uint64_t)moved;
	if (magnitude > threshold_ns + width)
		return WATCH_REALTIME_SET;
	return WATCH_REALTIME_UNCHANGED;
}

int64_t watch_line_error(struct calib_line line, const struct calib_sample *sample)
{
	return (int64_t)(sample->ns - calib_line_eval(line, sample->tsc));
}

bool watch_line_holds(struct calib_line line, const struct calib_sample *sample,
		      uint64_t tolerance_ns)
{
	int64_t error;
	uint64_t magnitude;

	if (line.mult == 0)
		return false;
	error = watch_line_error(line, sample);
	magnitude = error < 0 ? 0 - (uint64_t)error : (uint64_t)error;
	return magnitude <= tolerance_ns + sample->width_ns;
}

bool watch_parted(int64_t last_error_ns, uint64_t last_ns, int64_t error_ns, uint64_t now_ns,
		  uint64_t width_ns)
{
	uint64_t elapsed = now_ns > last_ns ? now_ns - last_ns : 0;
	uint64_t moved = error_ns > last_error_ns ? (uint64_t)error_ns - (uint64_t)last_error_ns
						  : (uint64_t)last_error_ns - (uint64_t)error_ns;
	unsigned __int128 allowed = (unsigned __int128)elapsed * WATCH_MAX_DRIFT_PPM / 1000000u +
				    2 * (unsigned __int128)width_ns + WATCH_LINE_TOLERANCE_NS;

	return moved > allowed;
}

void watch_validity(uint64_t tsc, uint64_t mult, uint64_t valid_ns, uint64_t *valid_from_tsc,
		    uint64_t *valid_ticks)
{
	uint64_t margin = calib_ticks_for_ns(mult, 1000000u);

	*valid_from_tsc = tsc - margin;
	*valid_ticks = calib_ticks_for_ns(mult, valid_ns) + margin;
}
