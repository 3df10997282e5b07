/* The verdict on this machine (verdict.h). */
#include "config.h"

#include "verdict.h"

#include <string.h>

#include "clock.h"
#include "debug.h"
#include "evidence.h"
#include "start_data.h"

/* The verdict on this machine, for the engine and for --info; written
 * here alone. */
static struct verdict {
	struct cpu_facts facts;	    /* as last probed */
	struct cpu_reading reading; /* how readers read the counter and CPU id */
	/* How the sandwiches read it: ordered wherever the CPU allows it,
	 * whatever the readers' mode. */
	struct cpu_reading sample_reading;
	uint32_t mode_flags; /* CLOCK_READ_BITS for readers (clock.h) */
	/* The same for a reader of each mode, and whether that mode can
	 * read here at all (an ordered read needs rdtscp or a serializing
	 * lfence): a service measures and publishes both. */
	uint32_t flags_of_mode[TABLE_MODE_COUNT];
	bool mode_reads[TABLE_MODE_COUNT];
	const char *unusable;	/* why the fast path cannot run; NULL if it can */
	unsigned steady_rounds; /* in a row, for the clocksource's probation */
	bool trusted;		/* the lines may answer (evidence.h) */
} verdict;

/* The kernel's clocksource, read before main() (verdict_read_kernel). */
static struct cpu_facts verdict_kernel_facts START_DATA;
static bool verdict_kernel_read START_DATA;
/* The narrowest sandwich of any round so far, and how many rounds in a row
 * have been many times wider (evidence_kernel_clock_slowed). */
static uint64_t verdict_narrowest_ever_ns;
static unsigned verdict_slow_rounds;

void verdict_read_kernel(void)
{
	if (verdict_kernel_read)
		return;
	cpu_probe_clocksource(&verdict_kernel_facts);
	verdict_kernel_read = true;
}

/* The kernel's facts as read before (verdict_read_kernel), into facts:
 * "unknown" where they were not. */
static void verdict_recall_kernel(struct cpu_facts *facts)
{
	if (!verdict_kernel_read) {
		strcpy(facts->clocksource, "unknown");
		facts->clocksource_kind = CPU_CLOCKSOURCE_UNKNOWN;
		return;
	}
	memcpy(facts->clocksource, verdict_kernel_facts.clocksource, sizeof facts->clocksource);
	facts->clocksource_kind = verdict_kernel_facts.clocksource_kind;
	facts->kernel_offers_tsc = verdict_kernel_facts.kernel_offers_tsc;
}

/* The kernel's clock as the sandwiches see it: many times slower than it
 * was, round after round, it left the TSC (evidence.h); from then on the
 * clocksource says nothing, and the lines answer only after their
 * probation. No file is read: the thread opens none. */
static void verdict_judge_kernel_clock(uint64_t narrowest_ns)
{
	enum cpu_clocksource_kind *kind = &verdict.facts.clocksource_kind;

	if (narrowest_ns == UINT64_MAX)
		return;
	if (!evidence_kernel_clock_slowed(verdict_narrowest_ever_ns, narrowest_ns)) {
		verdict_slow_rounds = 0;
		if (verdict_narrowest_ever_ns == 0 || narrowest_ns < verdict_narrowest_ever_ns)
			verdict_narrowest_ever_ns = narrowest_ns;
		return;
	}
	if (++verdict_slow_rounds < EVIDENCE_SLOW_ROUNDS ||
	    (*kind != CPU_CLOCKSOURCE_TSC && *kind != CPU_CLOCKSOURCE_TSC_DERIVED))
		return;
	debug_log("the kernel's clock became slow (sandwiches %llu ns, were %llu ns): clocksource "
		  "%s left, the lines answer after their own checks",
		  (unsigned long long)narrowest_ns, (unsigned long long)verdict_narrowest_ever_ns,
		  verdict.facts.clocksource);
	*kind = CPU_CLOCKSOURCE_UNKNOWN;
	verdict.steady_rounds = 0;
}

const char *verdict_prepare(bool relaxed)
{
	struct cpu_facts *facts = &verdict.facts;
	const char *reason;

	cpu_probe_instructions(facts);
	verdict_recall_kernel(facts);
	verdict_narrowest_ever_ns = 0;
	verdict_slow_rounds = 0;
	reason = cpu_unusable_reason(facts, false);
	for (unsigned mode = 0; mode < TABLE_MODE_COUNT; mode++) {
		struct cpu_reading reading;

		verdict.mode_reads[mode] =
		    reason == NULL &&
		    cpu_choose_reading(facts, mode == TABLE_MODE_RELAXED, &reading) == NULL;
		verdict.flags_of_mode[mode] =
		    verdict.mode_reads[mode] ? clock_flags_for_reading(reading) : 0;
	}
	if (reason == NULL)
		reason = cpu_choose_reading(facts, relaxed, &verdict.reading);
	if (reason == NULL) {
		verdict.mode_flags = clock_flags_for_reading(verdict.reading);
		/* Sandwiches read the counter ordered where the CPU can;
		 * relaxed mode on a CPU that cannot has only its own read. */
		if (cpu_choose_reading(facts, false, &verdict.sample_reading) != NULL)
			verdict.sample_reading = verdict.reading;
		debug_log("reading the counter with %s, the CPU id from %s; clocksource %s: %s",
			  cpu_counter_read_name(verdict.reading.counter),
			  cpu_id_source_name(verdict.reading.cpu_id), facts->clocksource,
			  evidence_describe(facts->clocksource_kind));
	}
	verdict.unusable = reason;
	verdict.steady_rounds = 0;
	verdict.trusted = false;
	return reason;
}

bool verdict_after_round(uint64_t narrowest_ns, bool steady)
{
	bool trusted;

	verdict_judge_kernel_clock(narrowest_ns);
	verdict.steady_rounds = steady ? verdict.steady_rounds + 1 : 0;
	trusted = evidence_trusted(verdict.facts.clocksource_kind, verdict.steady_rounds);
	if (trusted != verdict.trusted)
		debug_log(trusted
			      ? "clocksource %s: the lines are trusted (%u steady rounds)"
			      : "clocksource %s: the lines are not trusted yet (%u steady rounds)",
			  verdict.facts.clocksource, verdict.steady_rounds);
	verdict.trusted = trusted;
	return trusted;
}

void verdict_probe_kernel_now(void)
{
	cpu_probe_kernel(&verdict_kernel_facts);
	verdict_kernel_read = true;
}

const char *verdict_unusable(void)
{
	return verdict.unusable;
}

bool verdict_trusted(void)
{
	return verdict.trusted;
}

bool verdict_kernel_reads_counter(void)
{
	return verdict.facts.clocksource_kind == CPU_CLOCKSOURCE_TSC;
}

struct cpu_reading verdict_reading(void)
{
	return verdict.reading;
}

struct cpu_reading verdict_sample_reading(void)
{
	return verdict.sample_reading;
}

bool verdict_mode_reads(enum table_mode mode)
{
	return verdict.mode_reads[mode];
}

uint32_t verdict_flags_of_mode(enum table_mode mode)
{
	return verdict.flags_of_mode[mode];
}
