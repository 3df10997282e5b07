/* The watch's look, between rounds: the narrowest of a few sandwiches on
 * whichever CPU the thread is on, compared with that CPU's line (watch.h
 * holds the rules; this file is the only driver of watch.c's line checks).
 * A line that still agrees renews every line's validity; one that does
 * not, or a counter that parted from the kernel's clock, calls a round. */
#ifndef FASTTIME_LOOK_H
#define FASTTIME_LOOK_H

#include <stdbool.h>
#include <stdint.h>

/* Sandwiches each look takes; the narrowest is judged. */
#define LOOK_SANDWICHES 5u
/* The soonest the watch looks again after a look. */
#define LOOK_SOONEST_NS 1000000ull

enum look_verdict {
	LOOK_RENEWED,	/* the line agrees: the validity renewed, no round due */
	LOOK_ROUND_DUE, /* a round is due now */
};

/* One look: publishes a moved offset (offsets.h), then renews the lines'
 * validity when the line of the CPU the caller is on still agrees with
 * the kernel's clock. A round is due when the line did not agree (the
 * counter parted from the kernel's clock too: look_take_discontinuity), or
 * when no CPU the caller could sample on has a line while some CPU has one. */
enum look_verdict look_once(void);
/* Whether a look saw a discontinuity since this was last asked: the
 * counter and the kernel's clock parted faster than any rate the kernel
 * can run at (a suspend, a paused VM), and the next round restarts every
 * line. The one way that news travels: a look answers only that a round
 * is due, for the news must reach the next round wherever it runs, after
 * the per-API measurement's looks (which cannot act on it), in the tools'
 * calibration, in a thread started after a stop or in a fork child. */
bool look_take_discontinuity(void);
/* When the watch looks next, from now (monotonic ns): a period on, or
 * sooner, before the validity last granted ends. */
uint64_t look_next_ns(uint64_t now);

#endif
