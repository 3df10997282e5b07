/* The watch's look (look.h). */
#include "config.h"

#include "look.h"

#include "calib.h"
#include "debug.h"
#include "lines.h"
#include "offsets.h"
#include "raw_lines.h"
#include "sandwich.h"
#include "watch.h"

/* Set by a look that saw the counter and the kernel's clock part; taken by
 * the next round (look_take_discontinuity), which restarts every line. */
static bool look_discontinuity;

bool look_take_discontinuity(void)
{
	bool seen = look_discontinuity;

	look_discontinuity = false;
	return seen;
}

/* The narrowest of a few sandwiches of the counter, on whichever CPU the
 * thread is on, whose CPU has a line; false when none was taken on such a
 * CPU. */
static bool look_sample(struct calib_sample *best, uint32_t *cpu_out)
{
	bool found = false;

	for (unsigned i = 0; i < LOOK_SANDWICHES; i++) {
		struct calib_sample sample;
		struct cpu_stamp stamp;

		if (!sandwich_take(CLOCK_MONOTONIC, &sample, &stamp) || stamp.cpu >= CPU_MAX_CPUS ||
		    !lines_cpu_answers(&lines_cpus[stamp.cpu]))
			continue;
		if (found && sample.width_ns >= best->width_ns)
			continue;
		*best = sample;
		*cpu_out = stamp.cpu;
		found = true;
	}
	return found;
}

/* A look that finds c's line parted from the kernel's clock since the last
 * look (or sample) by more than its bend and the sandwiches explain saw the
 * kernel's rate move: the move counts among the rates of late at once, so
 * that the windows shorten now. A round learns a new rate only over two
 * samples, and a line kept meanwhile on a long window runs ahead of a
 * slowed kernel clock by the move times the window: if the thread is then
 * stopped, its readers fall back to libc and their clamp holds them still
 * for that long. */
static void look_note_seen_move(const struct lines_cpu *c, const struct calib_sample *sample,
				int64_t error)
{
	uint64_t slope = c->calib[CLOCK_LINES_MONOTONIC].slope_mult != 0
			     ? c->calib[CLOCK_LINES_MONOTONIC].slope_mult
			     : c->calib[CLOCK_LINES_MONOTONIC].line.mult;
	uint64_t span, magnitude, noise, ppm, delta;
	int64_t drift, moved;

	if (slope == 0 || c->look_mono_ns == 0 || sample->ns <= c->look_mono_ns)
		return;
	span = sample->ns - c->look_mono_ns;
	(void)lines_predicted_error(c, sample->tsc, 0, &drift);
	moved = error - c->look_error_ns - (int64_t)((__int128)drift * (__int128)span / 1000000000);
	magnitude = moved < 0 ? 0 - (uint64_t)moved : (uint64_t)moved;
	/* Both looks' sandwiches, the earlier one's as wide as the round's. */
	noise = 2 * sample->width_ns + c->last_width_ns + 1000u;
	if (magnitude <= noise)
		return;
	ppm = (uint64_t)((unsigned __int128)(magnitude - noise) * 1000000u / span);
	if (ppm <= WATCH_RATE_FLOOR_PPM)
		return;
	if (ppm > CALIB_MAX_RATE_CHANGE_PPM)
		ppm = CALIB_MAX_RATE_CHANGE_PPM;
	delta = (uint64_t)((unsigned __int128)slope * ppm / 1000000u);
	lines_note_slope(moved > 0 ? slope + delta : slope - delta, sample->ns);
}

/* Renews the lines' validity after a look that found c's line error_ns
 * from the kernel's clock at sample: only while the line is where its last
 * sample predicted (a slew being paid back as planned) and for as long as
 * every line then stays within the budget (lines_window). A line
 * that is off, or moving off, is not renewed: renewed, it would answer far
 * from the kernel's clock until the next round, and readers falling back
 * to libc when it lapses at last would be held by their clamp for as long
 * as it ran ahead. False when nothing was renewed: a round is due. */
static bool look_renew(const struct lines_cpu *c, const struct calib_sample *sample, int64_t error)
{
	int64_t drift, deviation = error - lines_predicted_error(c, sample->tsc, 0, &drift);
	uint64_t window, magnitude = deviation < 0 ? 0 - (uint64_t)deviation : (uint64_t)deviation;

	if (magnitude > WATCH_LINE_TOLERANCE_NS + sample->width_ns)
		return false;
	window = lines_window(sample->tsc, sample->ns, c, deviation);
	if (window == 0)
		return false;
	lines_trust(sample->tsc, c->calib[CLOCK_LINES_MONOTONIC].line.mult, window, false);
	return true;
}

enum look_verdict look_once(void)
{
	struct calib_sample sample;
	uint32_t cpu = 0;
	struct calib_line line;
	const struct lines_cpu *c;
	int64_t error;

	if (!look_sample(&sample, &cpu)) {
		offsets_renew(true);
		return lines_published() > 0 ? LOOK_ROUND_DUE : LOOK_RENEWED;
	}
	line = lines_cpus[cpu].calib[CLOCK_LINES_MONOTONIC].line;
	c = &lines_cpus[cpu];
	error = watch_line_error(line, &sample);
	if (watch_parted(c->look_error_ns, c->look_mono_ns, error, sample.ns, sample.width_ns)) {
		debug_log("watch: cpu %u's line moved %+lld ns against the kernel's clock in %llu "
			  "ns: restarting the lines",
			  cpu, (long long)(error - c->look_error_ns),
			  (unsigned long long)(sample.ns - c->look_mono_ns));
		look_discontinuity = true;
		return LOOK_ROUND_DUE;
	}
	look_note_seen_move(c, &sample, error);
	lines_cpu_note_look(cpu, error, sample.ns);
	/* Stale lines are not brought back as they are: their readers answer
	 * with libc, and the round due now restarts each line there. */
	if (lines_lapsed())
		return LOOK_ROUND_DUE;
	/* A line found off is visited by the round due now, not carried on
	 * another CPU's sample (round_visit_needed). */
	if (!look_renew(c, &sample, error)) {
		lines_cpu_found_off(cpu);
		return LOOK_ROUND_DUE;
	}
	if (!watch_line_holds(line, &sample, WATCH_LINE_TOLERANCE_NS)) {
		debug_log("watch: cpu %u's line is %+lld ns from the kernel's clock (sandwich %llu "
			  "ns): refreshing now",
			  cpu, (long long)error, (unsigned long long)sample.width_ns);
		lines_cpu_found_off(cpu);
		return LOOK_ROUND_DUE;
	}
	if (!raw_lines_look(cpu, LOOK_SANDWICHES))
		return LOOK_ROUND_DUE;
	return LOOK_RENEWED;
}

/* When the watch looks next, from now: a period on, or sooner, a quarter
 * of the window before the validity last granted ends (a short window: a
 * line bent to pay an error back, a kernel rate that moved lately). Not
 * sooner than 1 ms from now, nor before the validity's end where it has
 * ended (the look then finds it lapsed and a round runs). */
uint64_t look_next_ns(uint64_t now)
{
	uint64_t until = lines_valid_until_ns(), look = now + WATCH_PERIOD_NS, early;

	if (lines_published() == 0)
		return look;
	if (until <= now)
		return now + LOOK_SOONEST_NS;
	early = until - (until - now) / 4;
	if (early < now + LOOK_SOONEST_NS)
		early = now + LOOK_SOONEST_NS;
	return early < look ? early : look;
}
