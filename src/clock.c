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

void clock_second_refill(struct clock_second *second, uint64_t ns)
{
	uint64_t sec = ns / CLOCK_NS_PER_SEC;

	second->sec = (int64_t)sec;
	second->start_ns = sec * CLOCK_NS_PER_SEC;
}
