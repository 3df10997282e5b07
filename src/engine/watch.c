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
	uint64_t margin = calib_line_ticks_for_ns(mult, 1000000u);

	*valid_from_tsc = tsc - margin;
	*valid_ticks = calib_line_ticks_for_ns(mult, valid_ns) + margin;
}

/* The longest span s (ns) with slope_ppb * s <= room_ns, at most limit; a
 * slope of 0 or less never runs out. */
static uint64_t watch_span_within(int64_t room_ns, int64_t slope_ppb, uint64_t limit)
{
	unsigned __int128 span;

	if (room_ns < 0)
		return 0;
	if (slope_ppb <= 0)
		return limit;
	span = (unsigned __int128)room_ns * 1000000000u / (uint64_t)slope_ppb;
	return span < limit ? (uint64_t)span : limit;
}

uint64_t watch_trusted_ns(int64_t error_ns, int64_t drift_ppb, uint64_t since_ns, uint64_t rate_ppm,
			  uint64_t budget_ns)
{
	/* |error + drift s| + rate (since + s) <= budget, for s from 0: the
	 * left side is convex in s, so the two sides of the absolute value
	 * each give an end, and the nearer one is the window's. */
	int64_t rate_ppb = (int64_t)(rate_ppm * 1000u);
	unsigned __int128 grown = (unsigned __int128)since_ns * rate_ppm / 1000000u;
	uint64_t magnitude = error_ns < 0 ? 0 - (uint64_t)error_ns : (uint64_t)error_ns;
	uint64_t behind_end, ahead_end;
	int64_t room;

	/* A line already off by more than half the budget (the kernel's rate
	 * moved while the thread slept, and the lines learn a new rate over
	 * two samples) is not given up while it is paid back: given up now,
	 * its readers would be held by their clamp for as long as it is
	 * ahead. It may run half the budget further off. Only while paid back
	 * (the error and its drift of opposite signs): a line moving off would
	 * be granted half the budget more at every look, and run off without
	 * end. */
	bool paid_back = (error_ns > 0 && drift_ppb < 0) || (error_ns < 0 && drift_ppb > 0);

	if (magnitude > WATCH_VALID_NS || grown >= budget_ns)
		return 0;
	if (paid_back && magnitude + budget_ns / 2 + grown > budget_ns)
		budget_ns = magnitude + budget_ns / 2 + (uint64_t)grown;
	room = (int64_t)(budget_ns - (uint64_t)grown);
	/* The line behind the kernel's clock (a positive error), then ahead. */
	behind_end = watch_span_within(room - error_ns, drift_ppb + rate_ppb, WATCH_VALID_NS);
	ahead_end = watch_span_within(room + error_ns, rate_ppb - drift_ppb, WATCH_VALID_NS);
	return behind_end < ahead_end ? behind_end : ahead_end;
}
