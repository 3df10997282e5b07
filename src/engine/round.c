/* One calibration round (round.h). First every CPU's sample, then the
 * machine's slope from the least uncertain of them, then every line drawn
 * with it and aimed, within its own sandwich, at the round's narrowest
 * sandwich (calib.h); then the validity the samples earn (lines.h). */
#include "config.h"

#include "round.h"

#include <sched.h>
#include <string.h>
#include <sys/mman.h>

#include "debug.h"
#include "evidence.h"
#include "libc.h"
#include "lines.h"
#include "offsets.h"
#include "placement.h"
#include "raw_lines.h"
#include "sandwich.h"
#include "start_data.h"
#include "table.h"
#include "verdict.h"

/* One round's samples of each kind of line, taken before any line moves
 * (too large for the thread's stack on machines with thousands of CPUs):
 * CLOCK_LINES_COUNT rows, mapped by round_map, as lines_cpus is. */
static struct calib_sample (*round_samples)[CPU_MAX_CPUS];
/* The kernel's clock each kind of line follows. */
static const clockid_t round_clocks[CLOCK_LINES_COUNT] = {
	[CLOCK_LINES_MONOTONIC] = CLOCK_MONOTONIC,
	[CLOCK_LINES_RAW] = CLOCK_MONOTONIC_RAW,
};
/* Set while a round runs: a fork child of a round resets what it touched.
 * Every fork child reads it. */
static bool round_in_progress START_DATA;

bool round_map(void)
{
	void *memory;

	if (round_samples == NULL) {
		memory = mmap(NULL, CLOCK_LINES_COUNT * sizeof *round_samples,
			      PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (memory == MAP_FAILED)
			return false;
		round_samples = memory;
	}
	return lines_map();
}

void round_after_fork(void)
{
	if (!__atomic_load_n(&round_in_progress, __ATOMIC_RELAXED))
		return;
	lines_restart_calibrations();
	round_in_progress = false;
}

uint64_t round_interval_after(unsigned round, uint64_t configured_ns)
{
	uint64_t interval = ROUND_FIRST_INTERVAL_NS;

	for (unsigned i = 0; i < round && interval < configured_ns; i++)
		interval *= CALIB_INTERVAL_GROWTH;
	return interval < configured_ns ? interval : configured_ns;
}

/* Takes this round's sample of kind's clock on cpu, pinned there; false
 * when none could be taken. */
static bool round_sample(uint32_t cpu, enum clock_lines kind, uint32_t *node)
{
	return sandwich_narrowest_on(round_clocks[kind], cpu, ROUND_SANDWICHES,
				     &round_samples[kind][cpu], node);
}

/* Takes this round's monotonic sample on cpu, pinned there; false (and
 * the failure noted) when none could be taken. */
static bool round_sample_one(uint32_t cpu)
{
	uint32_t node;

	if (!round_sample(cpu, CLOCK_LINES_MONOTONIC, &node)) {
		lines_cpu_failed(cpu, libc_monotonic_ns());
		return false;
	}
	lines_cpu_set_node(cpu, node);
	return true;
}

/* Ends the visit to cpu begun at start_ns; false when the CPU was not
 * free: a reader moved the thread away, or it waited more than
 * PLACEMENT_VISIT_MAX_NS. Rounds then skip the CPU for a while (its line is
 * withdrawn: lines_withdraw_unsampled), so that a CPU a real-time thread
 * owns costs one bounded wait now and then, not one each round. */
static bool round_visit_end(uint32_t cpu, uint64_t start_ns)
{
	bool rescued = placement_visit_close();
	uint64_t now = libc_monotonic_ns();
	uint64_t skip =
	    lines_cpu_note_visit(cpu, !rescued && now - start_ns <= PLACEMENT_VISIT_MAX_NS, now);

	if (skip == 0)
		return true;
	debug_log("cpu %u: the thread %s after %.1f ms there; skipping it for %.0f s", cpu,
		  rescued ? "was stuck and moved back by a reader" : "ran only",
		  (double)(now - start_ns) / 1e6, (double)skip / 1e9);
	return false;
}

/* Whether this round skips cpu: it was not free lately. The CPU the thread
 * is on is never skipped: it is running there. */
static bool round_visit_skipped(uint32_t cpu, uint64_t now)
{
	return lines_cpus[cpu].unreachable_until_ns > now && (unsigned)sched_getcpu() != cpu;
}

bool round_visit_needed(const struct lines_cpu *c, bool here, bool may_carry)
{
	return here || !may_carry || !raw_lines_cpu_answers(c) || !c->agrees ||
	       c->carried_rounds + 1 >= ROUND_VISIT_EVERY;
}

/* Whether this round may carry lines rather than visit their CPUs: the
 * kernel reads the counter itself (it checked that every CPU's counter
 * agrees, and keeps checking), the round begins on one of the CPUs it
 * visits (its sample is taken without a move), no discontinuity asks
 * every line to start over, and the round is the library's own (the
 * tools describe every CPU as it is). */
static bool round_may_carry(const unsigned long *visit, uint32_t here, bool restart)
{
	return !restart && here < CPU_MAX_CPUS && cpu_mask_has(visit, here) &&
	       verdict_kernel_reads_counter() && !placement_whole_machine();
}

/* Leaves out of this round's lines the samples a later visit made old (it
 * waited to run on its CPU): a line drawn through one would be off by the
 * kernel's rate change times that wait. Their lines are withdrawn, and the
 * next round, which skips the CPU that was not free, samples them again. */
static void round_forget_old_samples(unsigned long *sampled)
{
	uint64_t now = libc_monotonic_ns();

	for (uint32_t cpu = cpu_mask_next(sampled, PLACEMENT_MASK_WORDS, 0); cpu < CPU_MAX_CPUS;
	     cpu = cpu_mask_next(sampled, PLACEMENT_MASK_WORDS, cpu + 1))
		if (now - round_samples[CLOCK_LINES_MONOTONIC][cpu].ns > PLACEMENT_VISIT_MAX_NS)
			cpu_mask_clear(sampled, cpu);
}

/* Whether a CPU's last round counts toward the clocksource's probation. */
static bool round_cpu_steady(const struct lines_cpu *c)
{
	return c->last_outcome == CALIB_CONTINUED &&
	       evidence_cpu_steady(c->calib[CLOCK_LINES_MONOTONIC].last_error_ns, c->last_width_ns,
				   c->previous_slope_mult,
				   c->calib[CLOCK_LINES_MONOTONIC].slope_mult);
}

/* What a round gathers of one kind of line. */
struct round_kind {
	unsigned long sampled[PLACEMENT_MASK_WORDS]; /* the CPUs with a sample */
	struct calib_sample narrowest;
	/* The machine's slope this round, from the least uncertain estimate;
	 * 0: none. */
	uint64_t shared_mult, best_uncertainty;
};

/* What a round gathers as it goes, from its visits to its published lines. */
struct round_pass {
	/* The CPUs to visit, and where the thread rests after the round. */
	unsigned long visit[PLACEMENT_MASK_WORDS], home[PLACEMENT_MASK_WORDS];
	/* The CPUs pinned to, and those the thread may rest on after. */
	unsigned long usable_cpus[PLACEMENT_MASK_WORDS], resting_cpus[PLACEMENT_MASK_WORDS];
	/* The CPUs whose monotonic line the round renewed. */
	unsigned long renewed[PLACEMENT_MASK_WORDS];
	/* The CPUs whose lines the round carries on its narrowest samples
	 * rather than visit (round_carry). */
	unsigned long carried[PLACEMENT_MASK_WORDS];
	struct round_kind kinds[CLOCK_LINES_COUNT];
	uint64_t start_ns;
	unsigned usable; /* CPUs pinned to, or left to their validity */
	uint32_t here;	 /* the CPU the round began on; CPU_MAX_CPUS: unknown */
	bool may_carry;	 /* round_may_carry */
	bool moved;	 /* someone else moved the thread: no more visits */
};

/* Begins a round: the other clocks' offsets renewed, the CPUs to visit
 * chosen (those no longer to be visited leave), nothing gathered yet. */
static void round_begin(struct round_pass *r)
{
	r->start_ns = libc_monotonic_ns();
	int on = sched_getcpu();

	r->here = on < 0 ? CPU_MAX_CPUS : (uint32_t)on;
	__atomic_store_n(&round_in_progress, true, __ATOMIC_RELAXED);
	offsets_renew(false);
	placement_round_begin(r->visit, r->home);
	lines_leave_others(r->visit);
	memset(r->usable_cpus, 0, sizeof r->usable_cpus);
	memset(r->resting_cpus, 0, sizeof r->resting_cpus);
	memset(r->renewed, 0, sizeof r->renewed);
	memset(r->carried, 0, sizeof r->carried);
	r->moved = false;
	for (enum clock_lines kind = 0; kind < CLOCK_LINES_COUNT; kind++) {
		struct round_kind *k = &r->kinds[kind];

		memset(k->sampled, 0, sizeof k->sampled);
		k->narrowest = (struct calib_sample){ .width_ns = UINT64_MAX };
		k->shared_mult = 0;
		k->best_uncertainty = UINT64_MAX;
	}
	r->usable = 0;
}

/* Whether c's line of kind may teach the round the machine's slope: only
 * a line that answered until now (a monotonic line withdrawn meanwhile
 * learns from the others: lines_relearn_rate). */
static bool round_line_teaches(const struct lines_cpu *c, enum clock_lines kind)
{
	return kind == CLOCK_LINES_MONOTONIC ? !c->withdrawn[kind] : raw_lines_cpu_answers(c);
}

/* Counts cpu's sample of kind, just taken, toward the round's narrowest
 * sandwich of that kind and its machine's slope. */
static void round_gather(struct round_pass *r, enum clock_lines kind, uint32_t cpu)
{
	const struct lines_cpu *c = &lines_cpus[cpu];
	const struct calib_sample *sample = &round_samples[kind][cpu];
	struct round_kind *k = &r->kinds[kind];
	uint64_t estimate, uncertainty;

	cpu_mask_set(k->sampled, cpu);
	if (sample->width_ns < k->narrowest.width_ns)
		k->narrowest = *sample;
	if (round_line_teaches(c, kind) &&
	    calib_slope_estimate(&c->calib[kind], sample, &estimate, &uncertainty) &&
	    uncertainty < k->best_uncertainty) {
		k->best_uncertainty = uncertainty;
		k->shared_mult = estimate;
	}
}

/* Visits cpu: pins the thread there and takes its samples (both kinds of
 * line). False when someone else moved the thread meanwhile: the round
 * visits no more CPUs. */
static bool round_visit(struct round_pass *r, uint32_t cpu)
{
	uint64_t visit_start;
	uint32_t node;
	bool taken;

	/* A CPU that was not free lately is left to its validity. The
	 * thread still rests there too: resting on the other CPUs alone
	 * (one, on two CPUs) would pin it where a real-time thread that
	 * takes that CPU later holds it, and no reader moves a thread
	 * between rounds (placement_rescue frees visits only). */
	if (round_visit_skipped(cpu, r->start_ns)) {
		cpu_mask_set(r->resting_cpus, cpu);
		r->usable++;
		return true;
	}
	/* A CPU whose counter agrees with the others costs no move: its
	 * line is carried (round_carry). */
	if (!round_visit_needed(&lines_cpus[cpu], cpu == r->here, r->may_carry)) {
		cpu_mask_set(r->carried, cpu);
		return true;
	}
	visit_start = libc_monotonic_ns();
	placement_visit_begin(cpu);
	/* Outside this process's cpuset the kernel refuses the pin:
	 * no thread of the process can run there either. Moved by
	 * someone else meanwhile: the mask stays as they set it. */
	if (!placement_pin(cpu)) {
		round_visit_end(cpu, visit_start);
		if (placement_moved()) {
			r->moved = true;
			return false;
		}
		lines_cpu_leaves(cpu);
		return true;
	}
	lines_cpu_allow(cpu);
	cpu_mask_set(r->usable_cpus, cpu);
	cpu_mask_set(r->resting_cpus, cpu);
	r->usable++;
	taken = round_sample_one(cpu);
	if (taken && round_sample(cpu, CLOCK_LINES_RAW, &node))
		round_gather(r, CLOCK_LINES_RAW, cpu);
	if (round_visit_end(cpu, visit_start) && taken)
		round_gather(r, CLOCK_LINES_MONOTONIC, cpu);
	return true;
}

/* Whether lines can be carried on the round's narrowest sample: there is
 * one, the machine's rate is known, and no later visit made it old (it
 * waited to run on its CPU: round_forget_old_samples). */
static bool round_carry_possible(const struct round_pass *r)
{
	const struct round_kind *mono = &r->kinds[CLOCK_LINES_MONOTONIC];

	return mono->narrowest.width_ns != UINT64_MAX && mono->shared_mult != 0 &&
	       libc_monotonic_ns() - mono->narrowest.ns <= PLACEMENT_VISIT_MAX_NS;
}

/* Visits the CPUs of the round, or carries their lines. Lines are carried
 * only on a fresh sample at a known rate. Without one (the visit here was
 * held until its sample was old, or its line had just restarted), the CPUs
 * meant to be carried are visited in this round after all: left
 * unsampled, every line would be withdrawn until the next round, which may
 * be a second away, and then restart at a rate learned across whatever the
 * kernel's clock did meanwhile. */
static void round_visit_all(struct round_pass *r, bool restart)
{
	unsigned long again[PLACEMENT_MASK_WORDS];
	const unsigned long *pass = r->visit;

	r->may_carry = round_may_carry(r->visit, r->here, restart);
	for (;;) {
		for (uint32_t cpu = cpu_mask_next(pass, PLACEMENT_MASK_WORDS, 0);
		     cpu < CPU_MAX_CPUS; cpu = cpu_mask_next(pass, PLACEMENT_MASK_WORDS, cpu + 1))
			if (!round_visit(r, cpu))
				break;
		if (!r->may_carry || r->moved || round_carry_possible(r))
			break;
		memcpy(again, r->carried, sizeof again);
		memset(r->carried, 0, sizeof r->carried);
		pass = again;
		r->may_carry = false;
	}
	/* The carried CPUs count as pinned to: the thread may rest there. */
	for (uint32_t cpu = cpu_mask_next(r->carried, PLACEMENT_MASK_WORDS, 0); cpu < CPU_MAX_CPUS;
	     cpu = cpu_mask_next(r->carried, PLACEMENT_MASK_WORDS, cpu + 1)) {
		cpu_mask_set(r->usable_cpus, cpu);
		cpu_mask_set(r->resting_cpus, cpu);
		r->usable++;
	}
}

/* Notes, for each CPU the round sampled itself, whether its sample agreed
 * with the round's narrowest (calib_sample_agrees): whether later rounds
 * may carry its line. Before the samples are aimed. */
static void round_judge_agreement(const struct round_pass *r)
{
	const struct round_kind *mono = &r->kinds[CLOCK_LINES_MONOTONIC];

	for (uint32_t cpu = cpu_mask_next(mono->sampled, PLACEMENT_MASK_WORDS, 0);
	     cpu < CPU_MAX_CPUS; cpu = cpu_mask_next(mono->sampled, PLACEMENT_MASK_WORDS, cpu + 1))
		lines_cpu_note_agreement(
		    cpu,
		    calib_sample_agrees(round_samples[CLOCK_LINES_MONOTONIC][cpu], mono->narrowest,
					mono->shared_mult, ROUND_AGREE_SLACK_NS));
}

/* Carries the line of each CPU in r->carried on the round's narrowest
 * sample of each kind: drawn from it as if taken there, which is what that
 * CPU's own sample found at its last visit, within the two sandwiches.
 * None is carried without a fresh narrowest sample and the machine's rate:
 * those lines are left unsampled, withdrawn, and visited next round. A raw
 * line is carried where the round has a raw sample at all. */
static void round_carry(struct round_pass *r)
{
	struct round_kind *mono = &r->kinds[CLOCK_LINES_MONOTONIC];
	struct round_kind *raw = &r->kinds[CLOCK_LINES_RAW];

	if (!round_carry_possible(r))
		return;
	for (uint32_t cpu = cpu_mask_next(r->carried, PLACEMENT_MASK_WORDS, 0); cpu < CPU_MAX_CPUS;
	     cpu = cpu_mask_next(r->carried, PLACEMENT_MASK_WORDS, cpu + 1)) {
		unsigned in_a_row = lines_cpu_note_carried(cpu);

		round_samples[CLOCK_LINES_MONOTONIC][cpu] = mono->narrowest;
		cpu_mask_set(mono->sampled, cpu);
		if (raw->narrowest.width_ns != UINT64_MAX) {
			round_samples[CLOCK_LINES_RAW][cpu] = raw->narrowest;
			cpu_mask_set(raw->sampled, cpu);
		}
		debug_log("cpu %u: carried on the round's narrowest sample (%u in a row)", cpu,
			  in_a_row);
	}
}

/* Aims each sample of kind at the round's narrowest sandwich of kind,
 * within its own (calib_sample_toward); returns when the next round is due:
 * scheduled_ns, or as soon as any CPU's line needs it
 * (calib_next_interval_ns), so that every CPU pays its error back over the
 * same span. */
static uint64_t round_aim(struct round_pass *r, enum clock_lines kind, uint64_t scheduled_ns,
			  bool restart)
{
	struct round_kind *k = &r->kinds[kind];
	uint64_t next_interval_ns = scheduled_ns;

	for (uint32_t cpu = cpu_mask_next(k->sampled, PLACEMENT_MASK_WORDS, 0); cpu < CPU_MAX_CPUS;
	     cpu = cpu_mask_next(k->sampled, PLACEMENT_MASK_WORDS, cpu + 1)) {
		struct calib_sample *sample = &round_samples[kind][cpu];
		uint64_t wanted;

		*sample = calib_sample_toward(*sample, k->narrowest, k->shared_mult);
		wanted = restart ? CALIB_MIN_INTERVAL_NS
				 : calib_next_interval_ns(&lines_cpus[cpu].calib[kind], sample,
							  scheduled_ns);
		if (wanted < next_interval_ns)
			next_interval_ns = wanted;
	}
	return next_interval_ns;
}

/* Draws every sampled CPU's lines (both kinds) and publishes them; the
 * lines it could not renew are withdrawn. A CPU's raw line is drawn only
 * where its monotonic line was, under whose validity it answers. True when
 * the lines had lapsed before (lines_relaunch_if_lapsed): every line
 * restarted. */
static bool round_draw(struct round_pass *r, uint64_t next_interval_ns, bool restart)
{
	const struct round_kind *mono = &r->kinds[CLOCK_LINES_MONOTONIC];
	const struct round_kind *raw = &r->kinds[CLOCK_LINES_RAW];
	bool relaunched = lines_relaunch_if_lapsed();

	lines_shorten_validity(mono->shared_mult);
	for (uint32_t cpu = cpu_mask_next(mono->sampled, PLACEMENT_MASK_WORDS, 0);
	     cpu < CPU_MAX_CPUS;
	     cpu = cpu_mask_next(mono->sampled, PLACEMENT_MASK_WORDS, cpu + 1)) {
		/* Before either line moves: a raw line whose readers left it
		 * (as they do where the monotonic line does not answer)
		 * restarts on its sample. */
		bool raw_left = lines_cpu_left(cpu, CLOCK_LINES_RAW);

		if (!lines_cpu_update(cpu, CLOCK_LINES_MONOTONIC,
				      &round_samples[CLOCK_LINES_MONOTONIC][cpu], next_interval_ns,
				      mono->shared_mult, restart,
				      lines_cpu_left(cpu, CLOCK_LINES_MONOTONIC)))
			continue;
		cpu_mask_set(r->renewed, cpu);
		if (!cpu_mask_has(raw->sampled, cpu))
			lines_raw_withdraw(cpu);
		else
			lines_cpu_update(cpu, CLOCK_LINES_RAW, &round_samples[CLOCK_LINES_RAW][cpu],
					 next_interval_ns, raw->shared_mult, restart, raw_left);
	}
	lines_withdraw_unsampled(r->renewed);
	if (restart)
		debug_log("the counter and the kernel's clock parted between rounds (a suspend, a "
			  "paused VM): lines restarted at their samples");
	return relaunched;
}

/* How many of the CPUs pinned to have a line that answers; *mult: the
 * last one's slope, *steady: whether each counts toward the clocksource's
 * probation (round_cpu_steady). */
static unsigned round_count_lines(const struct round_pass *r, uint64_t *mult, bool *steady)
{
	unsigned with_line = 0;

	*mult = 0;
	*steady = true;
	for (uint32_t cpu = cpu_mask_next(r->usable_cpus, PLACEMENT_MASK_WORDS, 0);
	     cpu < CPU_MAX_CPUS;
	     cpu = cpu_mask_next(r->usable_cpus, PLACEMENT_MASK_WORDS, cpu + 1)) {
		const struct lines_cpu *c = &lines_cpus[cpu];

		if (lines_cpu_answers(c)) {
			with_line++;
			*mult = c->calib[CLOCK_LINES_MONOTONIC].slope_mult;
			*steady = *steady && round_cpu_steady(c);
		}
	}
	return with_line;
}

/* Ends the round: the thread back where it rests, the lines trusted. */
static void round_end(const struct round_pass *r, unsigned with_line, uint64_t mult, bool restarted)
{
	placement_round_end(r->home, r->resting_cpus, r->usable > 0);
	/* Readers trust the lines for as long as they stay within the budget
	 * of the kernel's clock (watch.h), and the watch looks before then;
	 * after that (a stopped or starved thread, a suspend) they answer with
	 * libc. From now, not from the round's start: each line's window
	 * counts from its own sample. */
	if (with_line > 0) {
		uint64_t tsc = cpu_rdtsc(), now = libc_monotonic_ns();

		lines_trust(tsc, mult, lines_window(tsc, now, NULL, 0), restarted);
	}
	lines_set_published(with_line);
	__atomic_store_n(&round_in_progress, false, __ATOMIC_RELAXED);
}

/* First every CPU's sample, then the machine's slope from the least
 * uncertain of them, then every line drawn with it and aimed, within its
 * own sandwich, at the round's narrowest sandwich (calib.h). */
struct round_result round_run(uint64_t scheduled_ns, bool restart)
{
	struct round_pass r;
	uint64_t next_interval_ns, raw_wanted, mult;
	unsigned with_line;
	bool steady, relaunched;

	round_begin(&r);
	round_visit_all(&r, restart);
	/* The monotonic samples only: a raw line is drawn only where the
	 * monotonic one is (round_draw). */
	round_forget_old_samples(r.kinds[CLOCK_LINES_MONOTONIC].sampled);
	round_judge_agreement(&r);
	round_carry(&r);
	next_interval_ns = round_aim(&r, CLOCK_LINES_MONOTONIC, scheduled_ns, restart);
	raw_wanted = round_aim(&r, CLOCK_LINES_RAW, scheduled_ns, restart);
	if (raw_wanted < next_interval_ns)
		next_interval_ns = raw_wanted;
	relaunched = round_draw(&r, next_interval_ns, restart);
	with_line = round_count_lines(&r, &mult, &steady);
	round_end(&r, with_line, mult, restart || relaunched);
	return (struct round_result){ .with_line = with_line,
				      .usable = r.usable,
				      .steady = with_line > 0 && steady,
				      .narrowest_ns =
					  r.kinds[CLOCK_LINES_MONOTONIC].narrowest.width_ns,
				      .next_interval_ns = next_interval_ns };
}

/* The scheduled deadline, or sooner when a CPU without a line can have its
 * first one sooner: with sandwiches a microsecond wide (a kernel clock that
 * is a system call) the fixed schedule would give the first line only in
 * its fifth round, 850 ms in; this gives it about 300 ms in. And a CPU
 * whose line was withdrawn because a round could not visit it (a real-time
 * thread owned it) is visited again as soon as its skip ends: on the fixed
 * schedule its readers would answer with libc for up to an interval after
 * the real-time load has gone (seen: 2.2 s and more, beside a SCHED_FIFO
 * loop, in a process a calibration service serves, which no reader's
 * rescue can reach). Only a skip still to come counts, so that a CPU
 * whose skip has passed unvisited never makes the rounds run back to
 * back. */
uint64_t round_next_deadline(uint64_t scheduled_ns)
{
	uint64_t deadline = scheduled_ns, now = libc_monotonic_ns();

	LINES_FOR_EACH_ALLOWED (cpu) {
		const struct lines_cpu *c = &lines_cpus[cpu];
		uint64_t due;

		if (!c->allowed || c->dropped)
			continue;
		if (c->unreachable_backoff_ns != 0 && !lines_cpu_answers(c) &&
		    c->unreachable_until_ns > now && c->unreachable_until_ns < deadline)
			deadline = c->unreachable_until_ns;
		due = calib_first_line_due_ns(&c->calib[CLOCK_LINES_MONOTONIC]);
		if (due == 0)
			continue;
		/* A tenth more, as the next sandwich may be a little wider. */
		due += (due - c->calib[CLOCK_LINES_MONOTONIC].anchor.ns) / 10;
		if (due < deadline)
			deadline = due;
	}
	return deadline;
}
