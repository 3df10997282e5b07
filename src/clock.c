/* The read path's rare cases, out of line so the inline path stays short. */
#include "config.h"

#include "clock.h"

__thread struct clock_thread_state clock_thread __attribute__((tls_model("initial-exec")));

/* Two CPUs' lines disagree by a few nanoseconds, and a refresh may bend a
 * line under a reader: this thread keeps its last answer instead. */
uint64_t clock_clamp_backwards(uint64_t ns)
{
	(void)ns;
	return clock_thread.last_mono_ns;
}

/* The division the inline path avoids, once a second per thread; returns
 * the new second. */
int64_t clock_second_refill(struct clock_second *second, uint64_t ns)
{
	int64_t sec = (int64_t)(ns / CLOCK_NS_PER_SEC);

	second->sec = sec;
	return sec;
}
