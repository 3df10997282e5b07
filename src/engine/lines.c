/* Every CPU's line as the engine keeps it, and the validity granted to
 * the lines (lines.h). The window a line may answer for comes from its
 * predicted error, the rates the kernel's clock ran at lately and the
 * budget (watch.h); the arithmetic is watch.c's and calib.c's. */
#include "config.h"

#include "lines.h"

#include <sys/mman.h>

#include "clock_check.h"
#include "debug.h"
#include "libc.h"
#include "offsets.h"
#include "placement.h"
#include "table.h"
#include "verdict.h"
#include "watch.h"

struct lines_cpu *lines_cpus;
/* The CPUs whose lines_cpus entry is allowed: the looks judge every line
 * (lines_window) by a walk of this mask, not of all CPU_MAX_CPUS entries,
 * a page of them apart, after each sleep. */
static unsigned long lines_allowed[PLACEMENT_MASK_WORDS];

/* What the lines' judgement remembers between rounds and looks. */
static struct lines_memory {
	/* The rates (slopes) the lines learned: the least and the most in
	 * the span of WATCH_RATE_MEMORY_NS that began at rates_since_ns [0]
	 * and in the one before [1], and the last one learned while the rate
	 * held still (lines_rate_ppm). */
	uint64_t rate_low[2], rate_high[2], rate_quiet;
	uint64_t rates_since_ns;
	/* When (monotonic ns) the validity last granted ends: the watch
	 * looks before then. */
	uint64_t valid_until_ns;
	/* CPUs with a line after the last round. */
	unsigned published;
} lines_state;

bool lines_map(void)
{
	void *memory;

	if (lines_cpus != NULL)
		return true;
	/* Not malloc: the start may come from a time call in any context
	 * a thread may start from, and anonymous memory is zeroed. */
	memory = mmap(NULL, CPU_MAX_CPUS * sizeof *lines_cpus, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (memory == MAP_FAILED)
		return false;
	lines_cpus = memory;
	return true;
}

void lines_set_published(unsigned count)
{
	lines_state.published = count;
}

unsigned lines_published(void)
{
	return lines_state.published;
}

uint64_t lines_valid_until_ns(void)
{
	return lines_state.valid_until_ns;
}

/* Whether cpu's line answers readers: the thread could run there, its
 * calibration has not been dropped, and it has a line. */
bool lines_cpu_answers(const struct lines_cpu *c)
{
	return c->allowed && !c->dropped && !c->withdrawn[CLOCK_LINES_MONOTONIC] &&
	       c->calib[CLOCK_LINES_MONOTONIC].line.mult != 0;
}

bool lines_kind_answers(const struct lines_cpu *c, enum clock_lines kind)
{
	return lines_cpu_answers(c) && !c->withdrawn[kind] && c->calib[kind].line.mult != 0;
}

uint32_t lines_allowed_next(uint32_t cpu)
{
	return cpu_mask_next(lines_allowed, PLACEMENT_MASK_WORDS, cpu);
}

unsigned lines_answering(void)
{
	unsigned count = 0;

	/* Before lines_map no CPU is allowed: no entry is read. */
	LINES_FOR_EACH_ALLOWED (cpu)
		count += lines_cpu_answers(&lines_cpus[cpu]);
	return count;
}

void lines_cpu_failed(uint32_t cpu, uint64_t now)
{
	struct lines_cpu *state = &lines_cpus[cpu];

	if (state->failing_since_ns == 0)
		state->failing_since_ns = now;
	if (!state->dropped && now - state->failing_since_ns >= LINES_DROP_AFTER_NS) {
		state->dropped = true;
		table_withdraw(cpu);
		debug_log("cpu %u: calibration failing for 15 s; answering with libc there", cpu);
	}
}

/* Counts slope among the rates the kernel's clock ran at lately (now). */
void lines_note_slope(uint64_t slope, uint64_t now)
{
	if (lines_state.rates_since_ns == 0 ||
	    now - lines_state.rates_since_ns > WATCH_RATE_MEMORY_NS) {
		lines_state.rate_low[1] = lines_state.rate_low[0];
		lines_state.rate_high[1] = lines_state.rate_high[0];
		lines_state.rate_low[0] = lines_state.rate_high[0] = slope;
		lines_state.rates_since_ns = now;
	}
	if (slope < lines_state.rate_low[0])
		lines_state.rate_low[0] = slope;
	if (slope > lines_state.rate_high[0])
		lines_state.rate_high[0] = slope;
}

/* Notes the rate c's last update learned (lines_rate_ppm): a line
 * continued, or one restarted at a rate measured across the lapse (relearned):
 * under a load that stops the thread, every update may be a restart, and a
 * slew learned only there must still shorten the windows. */
void lines_note_rate(const struct lines_cpu *c, uint64_t now, bool relearned)
{
	uint64_t slope = c->calib[CLOCK_LINES_MONOTONIC].slope_mult;

	if (slope == 0 || (c->last_outcome != CALIB_CONTINUED && !relearned))
		return;
	lines_note_slope(slope, now);
	/* While the rate holds still, it is the one a slew returns to. */
	if (lines_state.rate_quiet == 0 || lines_rate_ppm() <= WATCH_RATE_FLOOR_PPM)
		lines_state.rate_quiet = slope;
}

/* How far the kernel's rate may move within a window, in parts per
 * million: across the rates learned lately (the last two spans of
 * WATCH_RATE_MEMORY_NS) and the rate it held while still, for a slew
 * ends by going back to it however long it lasted; never less than the
 * floor (watch.h). */
uint64_t lines_rate_ppm(void)
{
	uint64_t low = lines_state.rate_quiet, high = lines_state.rate_quiet, ppm;

	for (unsigned i = 0; i < 2; i++) {
		if (lines_state.rate_low[i] == 0)
			continue;
		if (low == 0 || lines_state.rate_low[i] < low)
			low = lines_state.rate_low[i];
		if (lines_state.rate_high[i] > high)
			high = lines_state.rate_high[i];
	}
	if (low == 0)
		return WATCH_RATE_FLOOR_PPM;
	ppm = (uint64_t)((unsigned __int128)(high - low) * 1000000u / low);
	return ppm > WATCH_RATE_FLOOR_PPM ? ppm : WATCH_RATE_FLOOR_PPM;
}

/* The rate c's line is judged at: kernel_mult where the caller knows the
 * kernel's rate better (a look just found it on another CPU's line), else
 * the rate c learned, else its line's own. */
static uint64_t lines_judging_rate(const struct lines_cpu *c, uint64_t kernel_mult)
{
	if (kernel_mult != 0)
		return kernel_mult;
	return c->calib[CLOCK_LINES_MONOTONIC].slope_mult != 0
		   ? c->calib[CLOCK_LINES_MONOTONIC].slope_mult
		   : c->calib[CLOCK_LINES_MONOTONIC].line.mult;
}

/* The kernel's clock minus c's line at tsc, as c's last sample and the
 * kernel's rate (lines_judging_rate) predict it, and how fast that moves
 * (parts per billion): a bent line pays an error back until its aim, then
 * runs on past it. */
int64_t lines_predicted_error(const struct lines_cpu *c, uint64_t tsc, uint64_t kernel_mult,
			      int64_t *drift_ppb)
{
	const struct calib_cpu *k = &c->calib[CLOCK_LINES_MONOTONIC];
	uint64_t slope = lines_judging_rate(c, kernel_mult);
	int64_t ticks = (int64_t)(tsc - k->anchor.tsc);
	uint64_t kernel =
	    k->anchor.ns + (uint64_t)(int64_t)(((__int128)ticks * (__int128)slope) >> 64);

	*drift_ppb =
	    (int64_t)(((__int128)slope - (__int128)k->line.mult) * 1000000000 / (__int128)slope);
	return (int64_t)(kernel - calib_line_eval(k->line, tsc));
}

/* How long c's line may answer from tsc: its predicted error (at
 * kernel_mult, lines_judging_rate) plus deviation_ns (what a look just
 * measured beyond the prediction), grown since since_ns ago at the rate the
 * kernel's may move, within the budget less the sandwiches' noise
 * (watch_trusted_ns). */
static uint64_t lines_cpu_trusted_ns(const struct lines_cpu *c, uint64_t tsc, uint64_t kernel_mult,
				     int64_t deviation_ns, uint64_t since_ns)
{
	uint64_t noise = 2 * c->last_width_ns + 1000u;
	int64_t drift, error = lines_predicted_error(c, tsc, kernel_mult, &drift) + deviation_ns;

	if (noise >= WATCH_LINE_BUDGET_NS)
		return 0;
	return watch_trusted_ns(error, drift, since_ns, lines_rate_ppm(),
				WATCH_LINE_BUDGET_NS - noise);
}

/* The window every answering line may have from tsc (now_ns): the least of
 * theirs. After a round (looked NULL), each from its own sample at the
 * rate it learned; after a look at the line of the CPU looked, from the
 * look, whose deviation from that line's prediction is the kernel's own and
 * so holds for every line, and at the rate that prediction just proved.
 * Not at each line's own learned rate: a line restarted at a rate learned
 * across a slew's end (its CPU was left unvisited meanwhile) parts from
 * the kernel's clock at the difference, and a look elsewhere would renew
 * it round after round on its own wrong prediction. */
uint64_t lines_window(uint64_t tsc, uint64_t now_ns, const struct lines_cpu *looked,
		      int64_t deviation_ns)
{
	uint64_t window = WATCH_VALID_NS;
	uint64_t kernel_mult = looked != NULL ? lines_judging_rate(looked, 0) : 0;

	for (uint32_t cpu = cpu_mask_next(lines_allowed, PLACEMENT_MASK_WORDS, 0);
	     cpu < CPU_MAX_CPUS;
	     cpu = cpu_mask_next(lines_allowed, PLACEMENT_MASK_WORDS, cpu + 1)) {
		const struct lines_cpu *c = &lines_cpus[cpu];
		uint64_t since, trusted;

		if (!lines_cpu_answers(c))
			continue;
		since = looked != NULL || now_ns < c->last_sample_mono_ns
			    ? 0
			    : now_ns - c->last_sample_mono_ns;
		trusted = lines_cpu_trusted_ns(c, tsc, kernel_mult,
					       looked != NULL ? deviation_ns : 0, since);
		if (trusted < window)
			window = trusted;
	}
	return window;
}

/* Whether the lines went past their validity (readers answer with libc)
 * since they were last renewed. */
bool lines_lapsed(void)
{
	uint64_t valid_from = __atomic_load_n(&table_page.shared.valid_from_tsc, __ATOMIC_ACQUIRE);
	uint64_t valid_ticks = __atomic_load_n(&table_page.shared.valid_ticks, __ATOMIC_ACQUIRE);

	return lines_state.published > 0 && cpu_rdtsc() - valid_from > valid_ticks;
}

/* Before a round publishes its lines: the validity granted for the old
 * ones ends soon, so that a new line, bent however it is, cannot run
 * further than the budget under it if the thread stops before it grants
 * the new lines theirs (WATCH_MAX_DRIFT_PPM bounds how fast a line and the
 * kernel's clock can part). mult converts to ticks. */
void lines_shorten_validity(uint64_t mult)
{
	uint64_t valid_from = __atomic_load_n(&table_page.shared.valid_from_tsc, __ATOMIC_ACQUIRE);
	uint64_t valid_ticks = __atomic_load_n(&table_page.shared.valid_ticks, __ATOMIC_ACQUIRE);
	uint64_t soon = cpu_rdtsc() - valid_from +
			calib_line_ticks_for_ns(mult, (uint64_t)WATCH_LINE_BUDGET_NS * 1000000u /
							  WATCH_MAX_DRIFT_PPM);

	if (mult != 0 && soon < valid_ticks)
		table_set_validity(valid_from, soon);
}

/* After the lines went stale (the thread could not run, or not soon
 * enough), their readers answer with libc, the kernel's clock: each line
 * starts again on its next sample, there, rather than continue from where
 * it ran to meanwhile. True when they did. */
bool lines_relaunch_if_lapsed(void)
{
	if (!lines_lapsed())
		return false;
	LINES_FOR_EACH_ALLOWED (cpu)
		if (lines_cpu_answers(&lines_cpus[cpu]))
			lines_cpus[cpu].withdrawn[CLOCK_LINES_MONOTONIC] = true;
	debug_log("the lines went stale before this round: restarting them at its samples");
	return true;
}

/* Takes from readers each line the round could not sample (the CPU was
 * skipped, not free, or its sandwiches failed): nothing says where it is
 * now, and the validity the round grants is earned by the lines it
 * sampled. Its readers answer with libc until a sample restarts it. */
void lines_withdraw_unsampled(const unsigned long *renewed)
{
	LINES_FOR_EACH_ALLOWED (cpu) {
		struct lines_cpu *c = &lines_cpus[cpu];

		if (!c->allowed || c->dropped || c->calib[CLOCK_LINES_MONOTONIC].line.mult == 0 ||
		    cpu_mask_has(renewed, cpu))
			continue;
		if (!c->withdrawn[CLOCK_LINES_MONOTONIC])
			debug_log("cpu %u: not sampled this round: answering with libc there "
				  "until it is",
				  cpu);
		c->withdrawn[CLOCK_LINES_MONOTONIC] = true;
		table_withdraw(cpu);
	}
}

void lines_cpu_allow(uint32_t cpu)
{
	if (!lines_cpus[cpu].allowed)
		table_set_calibrated(cpu, true);
	lines_cpus[cpu].allowed = true;
	cpu_mask_set(lines_allowed, cpu);
}

/* A CPU the thread does not visit (any more): its line is withdrawn, so
 * that readers there answer with libc rather than from a line nobody
 * renews, and its calibration starts over if it comes back. */
void lines_cpu_leaves(uint32_t cpu)
{
	struct lines_cpu *c = &lines_cpus[cpu];

	if (c->allowed || c->calib[CLOCK_LINES_MONOTONIC].line.mult != 0 ||
	    c->calib[CLOCK_LINES_RAW].line.mult != 0) {
		table_withdraw(cpu);
		calib_cpu_reset(&c->calib[CLOCK_LINES_MONOTONIC]);
		calib_cpu_reset(&c->calib[CLOCK_LINES_RAW]);
		c->withdrawn[CLOCK_LINES_RAW] = false;
		c->failing_since_ns = 0;
		c->dropped = false;
		c->withdrawn[CLOCK_LINES_MONOTONIC] = false;
		c->unreachable_until_ns = 0;
		c->unreachable_backoff_ns = 0;
		c->unreachable_last_ns = 0;
		c->agrees = false;
		c->carried_rounds = 0;
	}
	if (c->allowed)
		table_set_calibrated(cpu, false);
	c->allowed = false;
	cpu_mask_clear(lines_allowed, cpu);
}

/* The CPUs that had a line and are not to be visited now leave. */
void lines_leave_others(const unsigned long *visit)
{
	LINES_FOR_EACH_ALLOWED (cpu)
		if (lines_cpus[cpu].allowed && !cpu_mask_has(visit, cpu))
			lines_cpu_leaves(cpu);
}

/* Trusts the lines for the watch's window from tsc on, after publishing a
 * moved offset (offsets.h). In this order, at every renewal: while the lines
 * were stale their readers answered with libc, and a step of the clock
 * they saw there must not be taken back by lines that come back with the
 * old offset (a round or the per-API measurement lasts long enough on a
 * loaded machine for the lines to go stale within it). */
void lines_trust(uint64_t tsc, uint64_t mult, uint64_t window_ns, bool restarted)
{
	uint64_t valid_from, valid_ticks;

	offsets_renew(true);
	/* Lines that went stale meanwhile (the thread was preempted) are not
	 * brought back as they are: their readers answered with libc, and a
	 * line behind the kernel's clock would hold them by their clamp for
	 * as long as it is behind. The next round restarts them there
	 * (lines_relaunch_if_lapsed). */
	if (!restarted && lines_lapsed())
		return;
	watch_validity(tsc, mult, window_ns, &valid_from, &valid_ticks);
	table_set_validity(valid_from, valid_ticks);
	lines_state.valid_until_ns = libc_monotonic_ns() + window_ns;
	placement_set_visit_limit(calib_line_ticks_for_ns(mult, PLACEMENT_VISIT_MAX_NS));
}

/* An outcome as the debug lines word it. */
static const char *lines_outcome_name(enum calib_outcome outcome)
{
	switch (outcome) {
	case CALIB_NEED_MORE: return "anchored";
	case CALIB_FIRST_LINE: return "first line";
	case CALIB_CONTINUED: return "continued";
	case CALIB_STEPPED: return "stepped";
	case CALIB_REJECTED: return "rejected";
	}
	return "?";
}

/* When the last visit that waited ended (lines_visits_waited_lately); 0:
 * none yet. */
static uint64_t lines_last_wait_ns;

bool lines_visits_waited_lately(uint64_t now)
{
	uint64_t last = __atomic_load_n(&lines_last_wait_ns, __ATOMIC_RELAXED);

	return last != 0 && now - last < LINES_UNREACHABLE_FORGET_NS;
}

uint64_t lines_cpu_note_visit(uint32_t cpu, bool was_free, uint64_t now)
{
	struct lines_cpu *c = &lines_cpus[cpu];

	if (was_free) {
		c->unreachable_until_ns = 0;
		/* Not at once: a real-time thread that the kernel throttles
		 * (95 % of each second) lets through the visit that ends a skip
		 * of a whole second, and the next one waits again; forgotten
		 * at each free visit, the skips would never grow. */
		if (now - c->unreachable_last_ns > LINES_UNREACHABLE_FORGET_NS)
			c->unreachable_backoff_ns = 0;
		return 0;
	}
	c->unreachable_backoff_ns = c->unreachable_backoff_ns == 0 ? LINES_UNREACHABLE_FIRST_NS
				    : c->unreachable_backoff_ns >= LINES_UNREACHABLE_LAST_NS
					? LINES_UNREACHABLE_LAST_NS
					: 2 * c->unreachable_backoff_ns;
	c->unreachable_until_ns = now + c->unreachable_backoff_ns;
	c->unreachable_last_ns = now;
	__atomic_store_n(&lines_last_wait_ns, now, __ATOMIC_RELAXED);
	return c->unreachable_backoff_ns;
}

/* Learns the rate before c's line restarts at sample: the round's rate
 * (round_mult, learned on the CPUs whose lines answered until now), the
 * kernel's clock being one for every CPU; else the rate from c's last
 * sample to sample, where the pair says it (calib_slope_estimate). Not
 * c's own first where another is fresher: c's last sample may be seconds
 * old (its CPU was skipped, or its line lapsed), and a rate learned across
 * a slew's start or end is neither, parting from the kernel's clock at
 * the difference as soon as the line restarts. */
static bool lines_relearn_rate(struct lines_cpu *c, const struct calib_sample *sample,
			       uint64_t round_mult)
{
	uint64_t mult = round_mult, uncertainty;

	if (mult == 0 &&
	    !calib_slope_estimate(&c->calib[CLOCK_LINES_MONOTONIC], sample, &mult, &uncertainty))
		return false;
	c->calib[CLOCK_LINES_MONOTONIC].slope_mult = mult;
	return true;
}

/* Whether cpu's line of kind is one its readers left (they answer with
 * libc there): it restarts on its next sample. A monotonic line while
 * withdrawn; a raw line whenever it does not answer, which it does not
 * where the CPU's monotonic line does not either. */
bool lines_cpu_left(uint32_t cpu, enum clock_lines kind)
{
	const struct lines_cpu *c = &lines_cpus[cpu];

	if (c->calib[kind].line.mult == 0)
		return false;
	return kind == CLOCK_LINES_MONOTONIC ? c->withdrawn[kind] : !lines_kind_answers(c, kind);
}

/* Draws cpu's line of kind on sample: stepped onto it (restart), or moved
 * on toward it with the machine's slope (shared_mult) from where its
 * readers are when it is published (calib_cpu_update_at). */
static enum calib_outcome lines_draw(uint32_t cpu, enum clock_lines kind,
				     const struct calib_sample *sample, uint64_t next_interval_ns,
				     uint64_t shared_mult, bool restart)
{
	struct calib_cpu *k = &lines_cpus[cpu].calib[kind];

	if (restart)
		return calib_cpu_restart(k, sample);
	return calib_cpu_update_at(k, sample, next_interval_ns, shared_mult,
				   cpu_read_stamp(verdict_sample_reading()).tsc);
}

/* Hands cpu's line of kind to its readers (table.h). */
static void lines_publish(uint32_t cpu, enum clock_lines kind)
{
	struct lines_cpu *c = &lines_cpus[cpu];

	c->withdrawn[kind] = false;
	if (kind == CLOCK_LINES_RAW)
		table_publish_raw(cpu, c->calib[kind].line);
	else
		table_publish(cpu, c->calib[kind].line);
}

/* Notes what the watch compares its next look with, after cpu's monotonic
 * line was drawn on sample: the kernel's clock minus the line now drawn, at
 * the sample (a line restarted there is on it, whatever the old one's
 * error). */
static void lines_note_sample(struct lines_cpu *state, const struct calib_sample *sample)
{
	const struct calib_cpu *k = &state->calib[CLOCK_LINES_MONOTONIC];

	state->look_error_ns = k->line.mult != 0 && state->last_outcome != CALIB_REJECTED
				   ? (int64_t)(sample->ns - calib_line_eval(k->line, sample->tsc))
				   : k->last_error_ns;
	state->look_mono_ns = sample->ns;
	state->last_sample_mono_ns = sample->ns;
	state->last_width_ns = sample->width_ns;
}

/* Moves cpu's monotonic line on to its sample (lines_cpu_update). */
static bool lines_monotonic_update(uint32_t cpu, const struct calib_sample *sample,
				   uint64_t next_interval_ns, uint64_t shared_mult, bool restart,
				   bool left)
{
	struct lines_cpu *state = &lines_cpus[cpu];
	const struct calib_cpu *k = &state->calib[CLOCK_LINES_MONOTONIC];
	bool relearned = false;

	state->previous_slope_mult = k->slope_mult;
	/* A line its readers left (they answer with libc, the kernel's own
	 * clock) starts again on the sample, where they are, at the rate
	 * measured since its last sample: lines that lapse round after round
	 * would otherwise keep a rate the kernel's clock left long ago. */
	if (!restart && left)
		relearned = lines_relearn_rate(state, sample, shared_mult);
	state->last_outcome = lines_draw(cpu, CLOCK_LINES_MONOTONIC, sample, next_interval_ns,
					 shared_mult, restart || left);
	lines_note_sample(state, sample);
	if (state->last_outcome == CALIB_REJECTED) {
		lines_cpu_failed(cpu, libc_monotonic_ns());
		debug_log("cpu %u: sample rejected (sandwich %llu ns)", cpu,
			  (unsigned long long)sample->width_ns);
		return false;
	}
	state->failing_since_ns = 0;
	state->dropped = false;
	lines_note_rate(state, sample->ns, relearned);
	if (k->line.mult != 0) {
		lines_publish(cpu, CLOCK_LINES_MONOTONIC);
		/* A line stepped onto the sample jumped: this process's
		 * readers check it before it answers, whatever they found of
		 * the old one (a page's readers, in other processes, check it
		 * at their grant's end). */
		if (state->last_outcome == CALIB_STEPPED)
			clock_check_forget();
	}
	if (state->last_outcome != CALIB_NEED_MORE)
		debug_log("cpu %u: %s, %.6f ns/tick, error %+lld ns, sandwich %llu ns", cpu,
			  lines_outcome_name(state->last_outcome),
			  (double)k->line.mult / 18446744073709551616.0,
			  (long long)k->last_error_ns, (unsigned long long)sample->width_ns);
	return true;
}

/* In a fork child of a round: every visited CPU's calibrations start over,
 * as the round may have left them half-written. */
void lines_restart_calibrations(void)
{
	LINES_FOR_EACH_ALLOWED (cpu)
		if (lines_cpus[cpu].allowed) {
			calib_cpu_reset(&lines_cpus[cpu].calib[CLOCK_LINES_MONOTONIC]);
			calib_cpu_reset(&lines_cpus[cpu].calib[CLOCK_LINES_RAW]);
		}
}

/* Notes the NUMA node of cpu's last sandwich (fasttime --info shows it). */
void lines_cpu_set_node(uint32_t cpu, uint32_t node)
{
	lines_cpus[cpu].node = node;
}

/* Notes what a look found on cpu's line, for the next look to compare with
 * (watch_parted). */
void lines_cpu_note_look(uint32_t cpu, int64_t error_ns, uint64_t mono_ns)
{
	lines_cpus[cpu].look_error_ns = error_ns;
	lines_cpus[cpu].look_mono_ns = mono_ns;
}

/* Notes whether cpu's sample agreed with the round's narrowest. */
void lines_cpu_note_agreement(uint32_t cpu, bool agrees)
{
	lines_cpus[cpu].agrees = agrees;
	lines_cpus[cpu].carried_rounds = 0;
}

/* Counts one more round that carried cpu's line. */
unsigned lines_cpu_note_carried(uint32_t cpu)
{
	return ++lines_cpus[cpu].carried_rounds;
}

/* Has the next round visit cpu, whose line a look found off. */
void lines_cpu_found_off(uint32_t cpu)
{
	lines_cpus[cpu].agrees = false;
}

/* Takes cpu's raw line from readers: they answer CLOCK_MONOTONIC_RAW with
 * libc there until a sample restarts it. */
void lines_raw_withdraw(uint32_t cpu)
{
	lines_cpus[cpu].withdrawn[CLOCK_LINES_RAW] = true;
	table_withdraw_raw(cpu);
}

/* Moves cpu's raw line on to its sample (lines_cpu_update); withdraws it
 * where the sample was rejected or it has no line yet. */
static bool lines_raw_update(uint32_t cpu, const struct calib_sample *sample,
			     uint64_t next_interval_ns, uint64_t shared_mult, bool restart)
{
	const struct calib_cpu *k = &lines_cpus[cpu].calib[CLOCK_LINES_RAW];
	enum calib_outcome outcome =
	    lines_draw(cpu, CLOCK_LINES_RAW, sample, next_interval_ns, shared_mult, restart);

	if (outcome == CALIB_REJECTED || k->line.mult == 0) {
		lines_raw_withdraw(cpu);
		return false;
	}
	if (outcome != CALIB_CONTINUED)
		debug_log("cpu %u: CLOCK_MONOTONIC_RAW line %s, error %+lld ns, sandwich %llu ns",
			  cpu, outcome == CALIB_FIRST_LINE ? "first" : "restarted",
			  (long long)k->last_error_ns, (unsigned long long)sample->width_ns);
	lines_publish(cpu, CLOCK_LINES_RAW);
	return true;
}

bool lines_cpu_update(uint32_t cpu, enum clock_lines kind, const struct calib_sample *sample,
		      uint64_t next_interval_ns, uint64_t shared_mult, bool restart, bool left)
{
	if (kind == CLOCK_LINES_RAW)
		return lines_raw_update(cpu, sample, next_interval_ns, shared_mult,
					restart || left);
	return lines_monotonic_update(cpu, sample, next_interval_ns, shared_mult, restart, left);
}
