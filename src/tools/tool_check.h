/* fasttime --check: do the CPUs' time-stamp counters agree? Each CPU's
 * counter is compared with the first CPU's through causally ordered reads. */
#ifndef FASTTIME_TOOL_CHECK_H
#define FASTTIME_TOOL_CHECK_H

#include <stdint.h>

/* Fills cpus with the ids of the CPUs this process may run on, in increasing
 * order, and returns how many there are (at most max); 0 on failure. */
unsigned tool_check_allowed_cpus(uint32_t *cpus, unsigned max);

/* Runs the test and prints the offsets; returns 0 when the counters are
 * consistent, 1 when they are not or the test cannot run. */
int tool_check_run(void);

#endif
