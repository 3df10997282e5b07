/* The readers' own check of the lines against the kernel's clock, between
 * the refresh thread's looks. The thread looks every 80 ms, and the lines'
 * validity runs 120 ms: a slew that starts between two looks (chrony slews
 * at up to 83,333 ppm) parts the lines from the kernel's clock at its rate,
 * by 10 ms where the thread cannot run until they lapse, and every reader
 * answered by libc afterwards is held still by its clamp for as long. So
 * the process's reads from the counter have a short deadline of their own
 * too: past it, one careful read compares its CPU's line with libc's
 * CLOCK_MONOTONIC, and the deadline moves on by as long as the line stays
 * within CLOCK_CHECK_LIMIT_NS of it even if the kernel's rate moved by
 * CLOCK_CHECK_RATE_PPM. A line found further off answers nothing until a
 * check finds it within again. */
#ifndef FASTTIME_CLOCK_CHECK_H
#define FASTTIME_CLOCK_CHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "calib_line.h"

/* How far from the kernel's clock a line may answer: the refresh thread's
 * own budget (WATCH_LINE_BUDGET_NS), under the 1 ms the library promises. */
#define CLOCK_CHECK_LIMIT_NS 700000u
/* How fast the kernel's clock may part from a line between two checks: a
 * slew from none to chrony's fastest, or from one end of adjtimex's range
 * (+-10 %) to the middle, with room. A line that was right is checked
 * again 3.5 ms later. */
#define CLOCK_CHECK_RATE_PPM 200000u
/* The shortest time a check trusts a line for: a line closer to the limit
 * than the rate allows for this long is refused instead. */
#define CLOCK_CHECK_MIN_WINDOW_NS 100000u
/* How long a refused line answers nothing before a check looks again. */
#define CLOCK_CHECK_RETRY_NS 1000000u
/* A check whose two libc reads lie further apart was preempted between
 * them, and tells nothing. */
#define CLOCK_CHECK_WIDTH_MAX_NS 20000u

/* Whether the lines may answer at tsc, a reading past the fast read's
 * deadline: the check made lately, else made now with monotonic, the
 * CLOCK_MONOTONIC line of the CPU tsc was read on (a line of mult 0
 * cannot be checked, and answers unchecked: CLOCK_MONOTONIC_RAW's lines
 * on a CPU with none of the other kind, which no slew moves). Takes a
 * word that no other caller waits for: while another thread checks, this
 * one answers with libc. */
bool clock_check(uint64_t tsc, struct calib_line monotonic);

/* The deadline the page's judgement gives the process's reads
 * (service_page_rejudge; UINT64_MAX for the process's own lines, 0 to
 * judge again at the next read): the fast read's deadline is the sooner
 * of it and the check's. */
void clock_check_judged_until(uint64_t until);

/* The lines lapsed: what the thread publishes next (lines restarted where
 * its samples put them) is checked before it answers, whatever a check
 * found of the lines before. */
void clock_check_forget(void);

/* The counter reading until which the lines were last found right (0:
 * never, or refused), for the tests. */
uint64_t clock_check_until(void);

#endif
