/* How often the checks after a call the TSC could not answer run
 * (stale_checks.h). */
#include "config.h"

#include "stale_checks.h"

/* When the checks are next due, in CLOCK_MONOTONIC ns (0: at once). */
static uint64_t stale_checks_next_ns;

bool stale_checks_due(uint64_t now_ns)
{
	uint64_t next = __atomic_load_n(&stale_checks_next_ns, __ATOMIC_RELAXED);

	/* Not due from a period before the last due reading (another
	 * thread's reading a little behind it) to a period after it. */
	if (now_ns < next && next - now_ns <= 2 * STALE_CHECKS_PERIOD_NS)
		return false;
	/* One caller per period: another that read the same word finds it
	 * claimed and goes on. */
	return __atomic_compare_exchange_n(&stale_checks_next_ns, &next,
					   now_ns + STALE_CHECKS_PERIOD_NS, false, __ATOMIC_RELAXED,
					   __ATOMIC_RELAXED);
}
