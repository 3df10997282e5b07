/* The watch: what the refresh thread decides at each short wake-up between
 * rounds. Pure arithmetic on samples, like calib.h, so that the unit tests
 * drive it with fake clocks: a step of CLOCK_REALTIME, a suspend or a paused
 * VM (the counter ran on while CLOCK_MONOTONIC stood still), and how long
 * readers may trust the lines after a look that found them right. */
#ifndef FASTTIME_WATCH_H
#define FASTTIME_WATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "calib.h"

/* Between rounds the thread wakes this often, on CLOCK_MONOTONIC: a sleep
 * on CLOCK_MONOTONIC is not lengthened when CLOCK_REALTIME is set back, as
 * an absolute CLOCK_REALTIME sleep would be. */
#define WATCH_PERIOD_NS 80000000ull
/* Readers trust the lines for this long after a look that found them right
 * (a round, or a wake-up of the watch): one period and half another for a
 * wake-up that comes late. After a suspend or a VM pause of D, no answer is
 * ahead of the kernel's clock by more than min(D, WATCH_VALID_NS), and no
 * thread's clock stands still for longer. */
#define WATCH_VALID_NS (WATCH_PERIOD_NS + WATCH_PERIOD_NS / 2)
/* CLOCK_REALTIME minus CLOCK_MONOTONIC moving by more than this beyond what
 * the sandwich's width allows is a step of the clock. */
#define WATCH_STEP_THRESHOLD_NS 1000u
/* A sandwich a reader may publish a step from (preload.c, over stale
 * lines) is at most this wide: its offset is then within the threshold of
 * the truth, so no later look of the refresh thread, however narrow its
 * own sandwich, judges it moved and corrects it by a step of the
 * library's own making. Wider ones leave the step to the thread's look. */
#define WATCH_READER_SANDWICH_MAX_NS (2 * WATCH_STEP_THRESHOLD_NS)
/* A line further than this from the kernel's clock, beyond the sandwich's
 * width, is not renewed: the thread runs a round at once. A line that is
 * right stays within a microsecond or two; this leaves room for a slew of
 * 10 % over the few hundred microseconds since the last look would not: a
 * larger slew is sampled more often, which is what it needs. */
#define WATCH_LINE_TOLERANCE_NS 50000u

/* What a look at CLOCK_REALTIME minus CLOCK_MONOTONIC says. */
enum watch_realtime {
	WATCH_REALTIME_UNMEASURED, /* no sandwich ran forward */
	WATCH_REALTIME_UNCHANGED,  /* within the threshold and the width */
	WATCH_REALTIME_SET,	   /* moved further: set, or a resume from suspend */
};

/* Judges the offset measured by samples (monotonic, realtime, monotonic)
 * against published_ns. The narrowest sandwich places the offset within its
 * width, so a move counts only beyond threshold_ns plus that width: a wide
 * sandwich (a kernel clock that is a system call) still sees any step
 * larger than itself, where refusing to judge it would see none. Fills
 * *offset_ns and *moved_ns (new minus published, modulo 2^64) unless the
 * answer is WATCH_REALTIME_UNMEASURED. */
enum watch_realtime watch_realtime_judge(const struct calib_offset_sample *samples, unsigned n,
					 uint64_t published_ns, uint64_t threshold_ns,
					 uint64_t *offset_ns, int64_t *moved_ns);

/* How far the kernel's clock (sample) is from line at the sample's counter
 * value, kernel minus line. */
int64_t watch_line_error(struct calib_line line, const struct calib_sample *sample);

/* Whether line still places sample's kernel clock within tolerance_ns plus
 * the sandwich's width: then the watch renews the lines' validity, else a
 * round is due now (the counter and the kernel's clock parted: a suspend, a
 * paused VM, a slew faster than the line follows). */
bool watch_line_holds(struct calib_line line, const struct calib_sample *sample,
		      uint64_t tolerance_ns);

/* How fast the error between a line and the kernel's clock can change
 * without a discontinuity, in parts per million of the time between looks:
 * the kernel's rate moves within +-10 % (adjtimex's tick), a line runs at
 * the rate it learned (as far off again when the rate just swung across
 * the range) and pays an error back at up to 20 % of that
 * (CALIB_MAX_PAYBACK_PPM): about 45 % at worst, and some room. */
#define WATCH_MAX_DRIFT_PPM 500000u

/* Whether the error found now (kernel minus line, at now_ns on the kernel's
 * monotonic clock, in a sandwich of width_ns) moved away from the one found
 * at the last look or round faster than rates can explain: a suspend or a
 * paused VM (the counter ran on, CLOCK_MONOTONIC did not), a counter that
 * jumped. A rate measured over a whole interval could take such a jump for
 * a slew and pay it back slowly, answering ahead of the kernel meanwhile;
 * the refresh thread restarts the lines instead (calib_cpu_restart). */
bool watch_parted(int64_t last_error_ns, uint64_t last_ns, int64_t error_ns, uint64_t now_ns,
		  uint64_t width_ns);

/* How far from the kernel's clock a line may have run when its validity
 * ends. Readers then answer with libc, which their clamp holds at their
 * last answer: a line ahead by this much stands their clock still for as
 * long. Under the 1 ms the library promises, with room for the sandwiches'
 * noise. */
#define WATCH_LINE_BUDGET_NS 700000u
/* The least the kernel's rate is assumed able to move within a validity
 * window, in parts per million: ntpd's largest slew. A move seen larger
 * (lines.c remembers it for WATCH_RATE_MEMORY_NS) is assumed instead:
 * chrony slews at up to 83,333 ppm, and a slew that starts or stops while
 * the refresh thread cannot run parts the lines from the kernel's clock at
 * that rate. */
#define WATCH_RATE_FLOOR_PPM 500u
/* How long a move of the kernel's rate shortens the windows: a slew at
 * chrony's fastest corrects up to a second in 12 s, and ends with a move
 * as large as its start. */
#define WATCH_RATE_MEMORY_NS (15ull * 1000000000ull)

/* How long (ns, at most WATCH_VALID_NS) a line may answer from now: error_ns
 * is the kernel's clock minus the line now as the samples predict it,
 * drift_ppb how fast that error moves (the line is bent to pay it back,
 * and may run past its aim), since_ns how long ago the kernel's clock was
 * last measured against the line (the prediction's uncertainty has grown
 * at rate_ppm since), rate_ppm how far the kernel's rate may move from the
 * one learned. The line stays within budget_ns of the kernel's clock for
 * that long, or, where it is off by more than half of it now and being
 * paid back (drift against error), within half of it further (such a line
 * converges); 0 when even that does not hold now, or the line is off by
 * more than WATCH_VALID_NS. */
uint64_t watch_trusted_ns(int64_t error_ns, int64_t drift_ppb, uint64_t since_ns, uint64_t rate_ppm,
			  uint64_t budget_ns);

/* The validity readers get from a look at counter value tsc: from a
 * millisecond before it (readers on other CPUs may be a little behind) to
 * valid_ns after it, in ticks at mult's rate. */
void watch_validity(uint64_t tsc, uint64_t mult, uint64_t valid_ns, uint64_t *valid_from_tsc,
		    uint64_t *valid_ticks);

#endif
