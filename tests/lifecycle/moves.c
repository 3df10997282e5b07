/* The kernel's clock moves beneath the library. The tap (tap.c) sits where
 * fasttime finds libc, so what it answers is the kernel's clock as the
 * library sees it, and it can move that clock on demand.
 *
 *   moves step        CLOCK_REALTIME is set by +1 s, -1 s (a leap second),
 *                     +10 s, -10 s, +3 h and -3 h in turn: the library's
 *                     CLOCK_REALTIME, gettimeofday, timespec_get and
 *                     CLOCK_TAI follow each step (TAI keeping the kernel's
 *                     distance from REALTIME), and CLOCK_MONOTONIC never
 *                     goes back.
 *   moves step-slow   the same with every read of the kernel's clock made
 *                     1.2 us slow, as where it is a system call: the
 *                     library's sandwiches are wider than a microsecond.
 *   moves slew PPM    the clocks slewed by PPM parts per million for 3 s,
 *                     then not: the library's CLOCK_MONOTONIC,
 *                     CLOCK_BOOTTIME, CLOCK_REALTIME and CLOCK_TAI
 *                     follow the kernel's within
 *                     MOVES_SLEW_ERROR_NS while it slews, and within
 *                     MOVES_SETTLED_ERROR_NS from 2 s after the slew ends;
 *                     its CLOCK_MONOTONIC_RAW, which the kernel never
 *                     slews, stays within MOVES_SETTLED_ERROR_NS of the
 *                     kernel's throughout; none goes back, or stands still
 *                     for 1 ms while the lines answer.
 *   moves slew-under LOAD PPM
 *                     the same slew beside a load that keeps the refresh
 *                     thread from running: fifo-hop (a SCHED_FIFO busy
 *                     loop moving from CPU to CPU), fifo-all (one on every
 *                     CPU), held (the tap holds the thread) or held-visit
 *                     (the tap holds it in a round, on a visit to a CPU,
 *                     which is then left for a while: the lines of the
 *                     other CPUs answer from the TSC again within
 *                     MOVES_BACK_AFTER_HOLD_MS of the hold's end); the slew
 *                     stops under the load. Whoever answers (the lines or
 *                     libc), CLOCK_MONOTONIC, CLOCK_BOOTTIME,
 *                     CLOCK_REALTIME, CLOCK_TAI and CLOCK_MONOTONIC_RAW
 *                     never go back, never stand still
 *                     for 1 ms, and are off by no more than the slew test
 *                     allows while it slews, and than
 *                     MOVES_SETTLED_UNDER_LOAD_ERROR_NS once it settled.
 *   moves suspend     the machine resumes after 5 s, then after 30 s, of
 *                     suspend (the tap moves CLOCK_BOOTTIME, CLOCK_REALTIME
 *                     and CLOCK_TAI, not CLOCK_MONOTONIC): the library's
 *                     BOOTTIME, REALTIME (all three functions) and TAI
 *                     follow, BOOTTIME never goes back, and CLOCK_MONOTONIC
 *                     and CLOCK_MONOTONIC_RAW stay with the kernel's
 *                     throughout.
 *   moves fallback    the refresh thread's clock runs 300 us ahead of what
 *                     libc answers everyone else, so the lines do too; the
 *                     thread is then held until the lines go stale, and
 *                     each of the four functions (and CLOCK_BOOTTIME,
 *                     CLOCK_TAI and CLOCK_MONOTONIC_RAW), answered by libc,
 *                     must never go back in the reading thread.
 *   moves ahead-refused
 *                     the lines answer, then the refresh thread's clock
 *                     leaps 3 ms ahead of everyone's, and its lines with
 *                     it, as they run ahead when a fast slew begins while
 *                     the thread cannot look: the readers' own check of
 *                     the lines (clock_check.h) refuses them, and none of
 *                     the five tracked clocks answers further than
 *                     MOVES_AHEAD_ERROR_NS from the kernel's, goes back,
 *                     or stands still for 1 ms.
 *   moves fallback-set
 *                     lines 300 us ahead and stale, then CLOCK_REALTIME set
 *                     back by 50 ms: the library's CLOCK_REALTIME,
 *                     gettimeofday, timespec_get and CLOCK_TAI, answered by
 *                     libc, follow the set-back (at most the lead ahead of
 *                     the kernel's clock), and CLOCK_MONOTONIC does not go
 *                     back. A reader that sees the step over stale lines
 *                     may publish the new offset itself.
 *   moves fallback-set-slow
 *                     the same with every read of the kernel's clock made
 *                     1.2 us slow: no reader's sandwich is narrow enough to
 *                     publish the step, and the clamp alone must tell the
 *                     set-back from the lines' own lead.
 *
 * CLOCK_BOOTTIME, CLOCK_TAI and CLOCK_MONOTONIC_RAW are checked where the
 * library answers them from the TSC: the scripts force it
 * (FASTTIME_FORCE=1); where a reading lets the library choose and it chose
 * libc, their checks are left out, and the output says so.
 *
 * How long each step took to be followed is printed, not judged: the
 * machines are shared. A step not followed within 10 s fails.
 *
 * moves-served.test and moves-load.test run the same cases in a process
 * a calibration service serves (life.sh's life_run_served): the tap's
 * moves and its hold are shared with the service, and the process must be
 * served when it starts (life_require_fast). */
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "life.h"

/* The tap's controls (tap.c). */
static void (*moves_set_realtime)(int64_t ns);
static void (*moves_slow_reads)(uint64_t ns);
static void (*moves_lead_refresh)(int64_t ns);
static void (*moves_slew)(int64_t ppm);
static uint64_t (*moves_tap_realtime_ns)(void);
static uint64_t (*moves_tap_monotonic_ns)(void);
static void (*moves_hold_visiting)(bool hold);
static void (*moves_suspend)(int64_t ns);
static uint64_t (*moves_tap_clock_ns)(clockid_t id);

static void moves_find_tap(void)
{
	moves_set_realtime = (void (*)(int64_t))dlsym(RTLD_DEFAULT, "life_tap_set_realtime");
	moves_slow_reads = (void (*)(uint64_t))dlsym(RTLD_DEFAULT, "life_tap_slow_reads");
	moves_lead_refresh = (void (*)(int64_t))dlsym(RTLD_DEFAULT, "life_tap_lead_refresh");
	moves_slew = (void (*)(int64_t))dlsym(RTLD_DEFAULT, "life_tap_slew");
	moves_tap_realtime_ns = (uint64_t(*)(void))dlsym(RTLD_DEFAULT, "life_tap_realtime_ns");
	moves_tap_monotonic_ns = (uint64_t(*)(void))dlsym(RTLD_DEFAULT, "life_tap_monotonic_ns");
	moves_hold_visiting = (void (*)(bool))dlsym(RTLD_DEFAULT, "life_tap_hold_refresh_visiting");
	moves_suspend = (void (*)(int64_t))dlsym(RTLD_DEFAULT, "life_tap_suspend");
	moves_tap_clock_ns = (uint64_t(*)(clockid_t))dlsym(RTLD_DEFAULT, "life_tap_clock_ns");
	if (moves_set_realtime == NULL || moves_slow_reads == NULL || moves_lead_refresh == NULL ||
	    moves_slew == NULL || moves_tap_realtime_ns == NULL || moves_tap_monotonic_ns == NULL ||
	    moves_hold_visiting == NULL || moves_suspend == NULL || moves_tap_clock_ns == NULL)
		life_fail("the tap's clock controls are missing");
}

/* The preloaded clock id, in ns. */
static uint64_t moves_clock_ns(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts) != 0)
		life_fail("clock_gettime(%d) failed", (int)id);
	return life_ns(&ts);
}

/* The preloaded CLOCK_REALTIME, in ns. */
static uint64_t moves_real_ns(void)
{
	return moves_clock_ns(CLOCK_REALTIME);
}

/* Whether the library answers clock id from the TSC: a batch of reads
 * that the tap sees none of, within 3 s. Forced, it must; left to choose,
 * it may have chosen libc, and then the checks of that clock would test
 * libc: they are left out, and the output says so. */
static bool moves_clock_fast(clockid_t id, const char *name)
{
	if (life_wait_fast_clock(id, 3000))
		return true;
	if (life_forced())
		life_fail("%s not answered from the TSC 3 s after the first call, although "
			  "FASTTIME_FORCE=%s",
			  name, getenv("FASTTIME_FORCE"));
	life_say("%s: the library chose libc (FASTTIME_FORCE is off): its checks are left out",
		 name);
	return false;
}

/* Whether the library answers CLOCK_TAI from the TSC (moves_steps, moves_suspends),
 * and the kernel's CLOCK_TAI minus CLOCK_REALTIME, a whole number of
 * seconds (the TAI offset it was given; 0 where none was). */
static bool moves_tai_fast;
static int64_t moves_kernel_tai_minus_real;

/* The kernel's TAI offset, read from libc around the tap and the library:
 * CLOCK_TAI between two reads of CLOCK_REALTIME, read again while they lie
 * more than 20 us apart (this thread was preempted), and rounded to the
 * second against their middle. */
static int64_t moves_read_kernel_tai_offset(void)
{
	struct timespec real, tai, real_after;
	int64_t diff, gap;

	for (int attempt = 0; attempt < 8; attempt++) {
		if (life_libc.clock_gettime(CLOCK_REALTIME, &real) != 0 ||
		    life_libc.clock_gettime(CLOCK_TAI, &tai) != 0 ||
		    life_libc.clock_gettime(CLOCK_REALTIME, &real_after) != 0)
			life_skip("the kernel has no CLOCK_TAI");
		gap = (int64_t)life_ns(&real_after) - (int64_t)life_ns(&real);
		if (gap <= 20000)
			break;
	}
	diff = (int64_t)life_ns(&tai) - (int64_t)life_ns(&real) - gap / 2;
	return (diff + (int64_t)LIFE_NS_PER_SEC / 2) / (int64_t)LIFE_NS_PER_SEC *
	       (int64_t)LIFE_NS_PER_SEC;
}

/* The preloaded monotonic clock, which must never go back across steps. */
static uint64_t moves_last_mono;

static void moves_check_mono(void)
{
	uint64_t now = life_mono_ns();

	if (now < moves_last_mono)
		life_fail("CLOCK_MONOTONIC went back by %llu ns",
			  (unsigned long long)(moves_last_mono - now));
	moves_last_mono = now;
}

/* The preloaded CLOCK_BOOTTIME's last answer, which must never go back
 * (moves_boot_follows). */
static uint64_t moves_last_boot;
static bool moves_boot_fast;

/* The preloaded CLOCK_MONOTONIC_RAW, where the library answers it from the
 * TSC (moves_suspends). */
static bool moves_raw_fast;
static uint64_t moves_last_raw;

/* The preloaded clock id (name), which a suspend must leave with the
 * kernel's: within tolerance_ns of the tap's clock read around it, and
 * never back from *last. */
static void moves_check_unmoved(clockid_t id, const char *name, uint64_t *last,
				uint64_t tolerance_ns)
{
	uint64_t before = moves_tap_clock_ns(id);
	uint64_t answer = moves_clock_ns(id);
	uint64_t after = moves_tap_clock_ns(id);

	if (answer < *last)
		life_fail("%s went back by %llu ns", name, (unsigned long long)(*last - answer));
	*last = answer;
	if (answer + tolerance_ns < before || answer > after + tolerance_ns)
		life_fail("%s moved with the suspend: %+.6f s from the kernel's", name,
			  ((double)answer - (double)before) / 1e9);
}

/* CLOCK_MONOTONIC, and CLOCK_MONOTONIC_RAW where the library answers it
 * (the kernel counts no suspend in either), stay with the kernel's. */
static void moves_check_unmoved_clocks(uint64_t tolerance_ns)
{
	moves_check_unmoved(CLOCK_MONOTONIC, "CLOCK_MONOTONIC", &moves_last_mono, tolerance_ns);
	if (moves_raw_fast)
		moves_check_unmoved(CLOCK_MONOTONIC_RAW, "CLOCK_MONOTONIC_RAW", &moves_last_raw,
				    tolerance_ns);
}

/* What the last moves_follows found: which answer, how far off. */
static const char *moves_off_what = "";
static int64_t moves_off_by;

/* Whether an answer is within tolerance of the tap's clock, read just
 * before and just after it. */
static bool moves_near(const char *what, uint64_t before, uint64_t answer, uint64_t after,
		       uint64_t tolerance_ns)
{
	if (answer + tolerance_ns >= before && answer <= after + tolerance_ns)
		return true;
	moves_off_what = what;
	moves_off_by = (int64_t)(answer - before);
	return false;
}

/* Whether the library's CLOCK_TAI is within tolerance of the tap's, and
 * its distance from the library's CLOCK_REALTIME (read around it) is the
 * kernel's. */
static bool moves_tai_follows(uint64_t tolerance_ns)
{
	uint64_t before, answer, real_before, real_after;

	before = moves_tap_clock_ns(CLOCK_TAI);
	answer = moves_clock_ns(CLOCK_TAI);
	if (!moves_near("CLOCK_TAI", before, answer, moves_tap_clock_ns(CLOCK_TAI), tolerance_ns))
		return false;
	real_before = moves_real_ns();
	answer = moves_clock_ns(CLOCK_TAI) - (uint64_t)moves_kernel_tai_minus_real;
	real_after = moves_real_ns();
	return moves_near("CLOCK_TAI's distance from CLOCK_REALTIME", real_before, answer,
			  real_after, tolerance_ns);
}

/* Whether the three precise realtime answers (and CLOCK_TAI, where the
 * library answers it) are within tolerance of the tap's clock now. */
static bool moves_follows(uint64_t tolerance_ns)
{
	struct timespec spec;
	struct timeval tv;
	uint64_t before, answer;

	before = moves_tap_realtime_ns();
	answer = moves_real_ns();
	if (!moves_near("clock_gettime", before, answer, moves_tap_realtime_ns(), tolerance_ns))
		return false;
	before = moves_tap_realtime_ns();
	gettimeofday(&tv, NULL);
	answer = (uint64_t)tv.tv_sec * LIFE_NS_PER_SEC + (uint64_t)tv.tv_usec * 1000u;
	if (!moves_near("gettimeofday", before, answer + 999, moves_tap_realtime_ns(),
			tolerance_ns))
		return false;
	before = moves_tap_realtime_ns();
	timespec_get(&spec, TIME_UTC);
	if (!moves_near("timespec_get", before, life_ns(&spec), moves_tap_realtime_ns(),
			tolerance_ns))
		return false;
	return !moves_tai_fast || moves_tai_follows(tolerance_ns);
}

/* Whether the library's CLOCK_BOOTTIME (where it answers it) is within
 * tolerance of the tap's now; fails if it went back. */
static bool moves_boot_follows(uint64_t tolerance_ns)
{
	uint64_t before, answer;

	if (!moves_boot_fast)
		return true;
	before = moves_tap_clock_ns(CLOCK_BOOTTIME);
	answer = moves_clock_ns(CLOCK_BOOTTIME);
	if (answer < moves_last_boot)
		life_fail("CLOCK_BOOTTIME went back by %llu ns",
			  (unsigned long long)(moves_last_boot - answer));
	moves_last_boot = answer;
	return moves_near("CLOCK_BOOTTIME", before, answer, moves_tap_clock_ns(CLOCK_BOOTTIME),
			  tolerance_ns);
}

/* Sets the clock by step_ns and waits until the library follows. */
static void moves_one_step(int64_t step_ns, const char *name)
{
	const uint64_t tolerance = 100000; /* far below any step, far above an error */
	uint64_t start, seen = 0;

	moves_set_realtime(step_ns);
	start = life_libc_mono_ns();
	while (life_libc_mono_ns() - start < 10 * LIFE_NS_PER_SEC) {
		moves_check_mono();
		if (moves_follows(tolerance)) {
			seen = life_libc_mono_ns();
			break;
		}
	}
	if (seen == 0)
		life_fail("CLOCK_REALTIME set %s: not followed 10 s later (%s %+.6f s from the "
			  "kernel's)",
			  name, moves_off_what, (double)moves_off_by / 1e9);
	life_say("set %s: followed after %.1f ms", name, (double)(seen - start) / 1e6);
	/* And it stays followed. */
	for (int i = 0; i < 1000; i++) {
		moves_check_mono();
		if (!moves_follows(tolerance))
			life_fail(
			    "set %s: followed, then lost: %s %+lld ns from the kernel's clock",
			    name, moves_off_what, (long long)moves_off_by);
	}
}

static void moves_steps(void)
{
	const int64_t s = (int64_t)LIFE_NS_PER_SEC;

	moves_kernel_tai_minus_real = moves_read_kernel_tai_offset();
	moves_tai_fast = moves_clock_fast(CLOCK_TAI, "CLOCK_TAI");
	life_say("the kernel's CLOCK_TAI is CLOCK_REALTIME %+lld s%s",
		 (long long)(moves_kernel_tai_minus_real / s),
		 moves_tai_fast ? "; CLOCK_TAI answered from the TSC" : "");

	moves_one_step(s, "+1 s");
	moves_one_step(-s, "-1 s");
	moves_one_step(10 * s, "+10 s");
	moves_one_step(-10 * s, "-10 s");
	moves_one_step(3 * 3600 * s, "+3 h");
	moves_one_step(-3 * 3600 * s, "-3 h");
}

/* Fakes a resume after ns of suspend and waits until the library
 * follows: its CLOCK_BOOTTIME, CLOCK_REALTIME (all three functions) and
 * CLOCK_TAI within tolerance of the tap's, BOOTTIME never back, and
 * CLOCK_MONOTONIC with the kernel's all along. */
static void moves_one_suspend(int64_t ns, const char *name)
{
	const uint64_t tolerance = 100000; /* far below any suspend, far above an error */
	uint64_t start, seen = 0;

	moves_suspend(ns);
	start = life_libc_mono_ns();
	while (life_libc_mono_ns() - start < 10 * LIFE_NS_PER_SEC) {
		moves_check_unmoved_clocks(tolerance);
		if (moves_boot_follows(tolerance) && moves_follows(tolerance)) {
			seen = life_libc_mono_ns();
			break;
		}
	}
	if (seen == 0)
		life_fail("resumed after %s of suspend: not followed 10 s later (%s %+.6f s from "
			  "the kernel's)",
			  name, moves_off_what, (double)moves_off_by / 1e9);
	life_say("resumed after %s: followed after %.1f ms", name, (double)(seen - start) / 1e6);
	for (int i = 0; i < 1000; i++) {
		moves_check_unmoved_clocks(tolerance);
		if (!moves_boot_follows(tolerance) || !moves_follows(tolerance))
			life_fail("resumed after %s: followed, then lost: %s %+lld ns from the "
				  "kernel's clock",
				  name, moves_off_what, (long long)moves_off_by);
	}
}

static void moves_suspends(void)
{
	const int64_t s = (int64_t)LIFE_NS_PER_SEC;

	moves_kernel_tai_minus_real = moves_read_kernel_tai_offset();
	moves_boot_fast = moves_clock_fast(CLOCK_BOOTTIME, "CLOCK_BOOTTIME");
	moves_tai_fast = moves_clock_fast(CLOCK_TAI, "CLOCK_TAI");
	moves_raw_fast = moves_clock_fast(CLOCK_MONOTONIC_RAW, "CLOCK_MONOTONIC_RAW");
	life_say("CLOCK_BOOTTIME %s, CLOCK_TAI %s, CLOCK_MONOTONIC_RAW %s",
		 moves_boot_fast ? "from the TSC" : "left to libc",
		 moves_tai_fast ? "from the TSC" : "left to libc",
		 moves_raw_fast ? "from the TSC" : "left to libc");
	/* Each check holds before the first resume, or the test says nothing. */
	moves_last_mono = life_mono_ns();
	moves_check_unmoved_clocks(100000);
	if (!moves_boot_follows(100000) || !moves_follows(100000))
		life_fail("not with the kernel's clock before any suspend: %s %+lld ns",
			  moves_off_what, (long long)moves_off_by);
	moves_one_suspend(5 * s, "5 s");
	moves_one_suspend(30 * s, "30 s");
}

/* The clocks the slew tests follow: CLOCK_MONOTONIC, CLOCK_BOOTTIME,
 * CLOCK_REALTIME and CLOCK_TAI, which the kernel slews with it (the
 * library answers them from the same lines, plus an offset; the two that
 * may be set are answered by libc through a clamp of their own, which must
 * hold the lines' lead as the monotonic one does), and CLOCK_MONOTONIC_RAW,
 * which it never slews (the library answers it from lines of its own): a
 * raw clock made from the monotonic lines would carry the slew. */
#define MOVES_TRACKED 5
static const struct {
	clockid_t id;
	const char *name;
	bool slewed;
} moves_tracked[MOVES_TRACKED] = {
	{ CLOCK_MONOTONIC, "CLOCK_MONOTONIC", true },
	{ CLOCK_BOOTTIME, "CLOCK_BOOTTIME", true },
	{ CLOCK_REALTIME, "CLOCK_REALTIME", true },
	{ CLOCK_TAI, "CLOCK_TAI", true },
	{ CLOCK_MONOTONIC_RAW, "CLOCK_MONOTONIC_RAW", false },
};

/* Which tracked clocks the library answers from the TSC here
 * (moves_require_tracked_fast): the others are left out. */
static bool moves_tracked_fast[MOVES_TRACKED];

/* How the library's clock kept up with a slewed kernel clock. */
struct moves_follow {
	uint64_t max_error_ns; /* outside the kernel's readings before and after */
	uint64_t backward, worst_back_ns;
	/* Steps back from an answer of libc to one from the TSC, and the
	 * other way round: which side gave the later, earlier answer. */
	uint64_t back_libc_to_tsc, back_tsc_to_libc;
	bool last_from_libc;
	uint64_t longest_still_ns; /* kernel time with the same answer */
	uint64_t libc_in_longest;  /* answers from libc during that time */
	/* The longest time the clock surely stood still, whoever answered:
	 * from the kernel's reading after one answer to its reading before
	 * a later equal one (a reader preempted within a read is not
	 * counted as a standstill). */
	uint64_t surely_still_ns;
	uint64_t reads, libc_reads; /* answers, and of them libc's */
	uint64_t last, still_since, still_libc, still_after;
};

/* Reads the library's clock c once between two of the kernel's (the
 * tap's), noting into track. */
static void moves_follow_once(unsigned c, struct moves_follow *track)
{
	uint64_t libc_before = life_fallthrough();
	uint64_t before = moves_tap_clock_ns(moves_tracked[c].id);
	uint64_t answer = moves_clock_ns(moves_tracked[c].id);
	uint64_t after = moves_tap_clock_ns(moves_tracked[c].id);
	uint64_t error = answer < before ? before - answer : answer > after ? answer - after : 0;
	/* The tap's reads are not counted: only the library's answer. */
	bool from_libc = life_fallthrough() != libc_before;

	track->reads++;
	track->libc_reads += from_libc;
	if (error > track->max_error_ns)
		track->max_error_ns = error;
	if (answer < track->last) {
		track->backward++;
		if (track->last - answer > track->worst_back_ns)
			track->worst_back_ns = track->last - answer;
		track->back_libc_to_tsc += track->last_from_libc && !from_libc;
		track->back_tsc_to_libc += !track->last_from_libc && from_libc;
	}
	if (answer != track->last || track->still_since == 0) {
		track->still_since = before;
		track->still_after = after;
		track->still_libc = track->libc_reads;
	} else {
		if (after - track->still_since > track->longest_still_ns) {
			track->longest_still_ns = after - track->still_since;
			track->libc_in_longest = track->libc_reads - track->still_libc;
		}
		if (before > track->still_after &&
		    before - track->still_after > track->surely_still_ns)
			track->surely_still_ns = before - track->still_after;
	}
	track->last = answer;
	track->last_from_libc = from_libc;
}

/* Reads each tracked clock of the library in turn, for ms of libc's time,
 * noting into tracks. */
static void moves_follow_for(unsigned ms, struct moves_follow tracks[MOVES_TRACKED])
{
	uint64_t end = life_libc_mono_ns() + ms * LIFE_NS_PER_MS;

	while (life_libc_mono_ns() < end)
		for (unsigned c = 0; c < MOVES_TRACKED; c++)
			if (moves_tracked_fast[c])
				moves_follow_once(c, &tracks[c]);
}

/* Starts new tracks that carry on from the last answers of earlier ones. */
static void moves_follow_from(struct moves_follow tracks[MOVES_TRACKED],
			      const struct moves_follow earlier[MOVES_TRACKED])
{
	for (unsigned c = 0; c < MOVES_TRACKED; c++)
		tracks[c] = (struct moves_follow){ .last = earlier[c].last };
}

/* Where the library leaves a slewed clock to libc (FASTTIME_FORCE off),
 * the slew tests would test libc: they require each answered from the
 * TSC. CLOCK_MONOTONIC_RAW left to libc is left out (and said so). */
static void moves_require_tracked_fast(void)
{
	for (unsigned c = 0; c < MOVES_TRACKED; c++) {
		moves_tracked_fast[c] =
		    moves_clock_fast(moves_tracked[c].id, moves_tracked[c].name);
		if (!moves_tracked_fast[c] && moves_tracked[c].slewed)
			life_skip("%s left to libc", moves_tracked[c].name);
	}
}

/* The bounds the slew test holds the library to: while the kernel slews
 * by 83,333 ppm, the readers' check (clock_check.h) keeps every answer
 * within 0.7 ms of the kernel's clock, whether or not the refresh thread
 * can run (a line ran 7 ms off before, over a look's period or a late
 * round's); the bound is the library's promise of 1 ms. 2 s after the slew
 * ends the lines have settled (under 1 us measured here). */
#define MOVES_SLEW_ERROR_NS    1000000u
#define MOVES_SETTLED_ERROR_NS 100000u
/* After a load that kept the refresh thread from its rounds, the settled
 * lines are held to the library's own promise instead: a CPU the rounds
 * skipped while the load held a visit there (1 s, then longer) gets its
 * line back when the skip ends, which may fall in the settled phase, at a
 * rate learned across the slew's end; the library lets such a line answer
 * while it stays within its budget (WATCH_LINE_BUDGET_NS, 700 us, under
 * the 1 ms it promises), and runs a round before it leaves it. Seen: up to
 * 175 us in runs beside other tests, 0-60 us alone. A line that kept the
 * slewed rate is off by 83 us a millisecond, and fails this at once. */
#define MOVES_SETTLED_UNDER_LOAD_ERROR_NS 1000000u

/* The bound a tracked clock is held to in a phase whose bound for the
 * slewed clocks is slewed_ns (UINT64_MAX: none): a clock the kernel does
 * not slew is held to the settled bound all along. */
static uint64_t moves_bound_for(unsigned c, uint64_t slewed_ns)
{
	return moves_tracked[c].slewed || slewed_ns < MOVES_SETTLED_ERROR_NS
		   ? slewed_ns
		   : MOVES_SETTLED_ERROR_NS;
}

/* Prints one phase of a slew and fails on a step back, or on a standstill
 * of 1 ms or more that no answer from libc explains: a correction of the
 * line held the clock. (Lines gone stale on a starved machine hand the
 * thread to libc, whose answer its clamp may hold; that is reported.) */
static void moves_report(int64_t ppm, const char *phase, const struct moves_follow tracks[])
{
	for (unsigned c = 0; c < MOVES_TRACKED; c++) {
		const struct moves_follow *track = &tracks[c];
		const char *name = moves_tracked[c].name;

		if (!moves_tracked_fast[c])
			continue;
		life_say("%s, slew %+lld ppm, %s: max error %llu ns, longest standstill %llu ns "
			 "(%llu answers from libc in it), %llu steps back",
			 name, (long long)ppm, phase, (unsigned long long)track->max_error_ns,
			 (unsigned long long)track->longest_still_ns,
			 (unsigned long long)track->libc_in_longest,
			 (unsigned long long)track->backward);
		if (track->backward != 0)
			life_fail(
			    "%s went back (%s): %llu times, by up to %llu ns (%llu from libc's "
			    "answer to the TSC's, %llu from the TSC's to libc's)",
			    name, phase, (unsigned long long)track->backward,
			    (unsigned long long)track->worst_back_ns,
			    (unsigned long long)track->back_libc_to_tsc,
			    (unsigned long long)track->back_tsc_to_libc);
		if (track->longest_still_ns >= LIFE_NS_PER_MS && track->libc_in_longest == 0)
			life_fail("%s stood still for %llu ns with the lines in use (%s)", name,
				  (unsigned long long)track->longest_still_ns, phase);
	}
}

/* Fails where a track is off by more than its bound in a phase whose
 * slewed clocks may be off by max_error_ns (moves_bound_for). */
static void moves_bound(const struct moves_follow tracks[], uint64_t max_error_ns, const char *when)
{
	for (unsigned c = 0; c < MOVES_TRACKED; c++)
		if (moves_tracked_fast[c] &&
		    tracks[c].max_error_ns > moves_bound_for(c, max_error_ns))
			life_fail("%s off by %llu ns %s", moves_tracked[c].name,
				  (unsigned long long)tracks[c].max_error_ns, when);
}

static void moves_slew_test(int64_t ppm)
{
	struct moves_follow during[MOVES_TRACKED] = { 0 }, after[MOVES_TRACKED],
			    settled[MOVES_TRACKED];

	moves_require_tracked_fast();
	moves_follow_for(1000, during);
	moves_follow_from(during, during);
	moves_slew(ppm);
	moves_follow_for(3000, during);
	moves_slew(0);
	moves_follow_from(after, during);
	moves_follow_for(2000, after);
	moves_follow_from(settled, after);
	moves_follow_for(2000, settled);
	moves_report(ppm, "while it slewed", during);
	moves_report(ppm, "in the 2 s after", after);
	moves_report(ppm, "from then on", settled);
	moves_bound(during, MOVES_SLEW_ERROR_NS, "while the kernel slewed");
	moves_bound(after, UINT64_MAX, "in the 2 s after the slew");
	moves_bound(settled, MOVES_SETTLED_ERROR_NS, "2 s after the slew ended");
}

/* What competes with the refresh thread in moves_slew_under. */
enum moves_load {
	MOVES_LOAD_FIFO_HOP,   /* a SCHED_FIFO loop on one CPU, moving to the next */
	MOVES_LOAD_FIFO_ALL,   /* a SCHED_FIFO loop on every CPU */
	MOVES_LOAD_HELD,       /* the refresh thread stopped (the tap holds it) */
	MOVES_LOAD_HELD_VISIT, /* stopped on a visit to a CPU, in a round */
};

/* How long a SCHED_FIFO loop stays on one CPU before the next. */
#define MOVES_HOP_MS 400u

/* The load's children: one SCHED_FIFO loop, or one per CPU. */
static pid_t moves_loops[64];
static unsigned moves_loop_count;

/* Starts the load, for up to seconds whatever happens to this process. */
static void moves_load_begin(enum moves_load load, unsigned seconds)
{
	int cpus[64];
	unsigned n = life_cpus(cpus, 64);

	if (load == MOVES_LOAD_HELD)
		life_hold_refresh(true);
	else if (load == MOVES_LOAD_HELD_VISIT)
		moves_hold_visiting(true);
	else if (load == MOVES_LOAD_FIFO_HOP)
		moves_loops[moves_loop_count++] = life_fifo_loop(cpus, n, MOVES_HOP_MS, seconds);
	else
		for (unsigned i = 0; i < n; i++)
			moves_loops[moves_loop_count++] =
			    life_fifo_loop(&cpus[i], 1, 1000, seconds);
}

/* Ends the load. */
static void moves_load_end(enum moves_load load)
{
	if (load == MOVES_LOAD_HELD)
		life_hold_refresh(false);
	else if (load == MOVES_LOAD_HELD_VISIT)
		moves_hold_visiting(false);
	while (moves_loop_count > 0)
		life_load_stop(moves_loops[--moves_loop_count]);
}

/* Fails unless the clock kept the promises under load: never back, never
 * still for 1 ms whoever answered (libc's answers included: a line that
 * ran ahead and went stale holds its readers at its last answer), and off
 * by no more than a slew explains. */
static void moves_judge_under(const char *load, int64_t ppm, const char *phase,
			      const struct moves_follow tracks[], uint64_t max_error_ns)
{
	for (unsigned c = 0; c < MOVES_TRACKED; c++) {
		const struct moves_follow *track = &tracks[c];
		const char *name = moves_tracked[c].name;

		if (!moves_tracked_fast[c])
			continue;
		life_say("%s, %s, slew %+lld ppm, %s: max error %llu ns, surely still for %llu "
			 "ns, %llu steps back, %llu of %llu answers from libc",
			 name, load, (long long)ppm, phase, (unsigned long long)track->max_error_ns,
			 (unsigned long long)track->surely_still_ns,
			 (unsigned long long)track->backward, (unsigned long long)track->libc_reads,
			 (unsigned long long)track->reads);
		if (track->backward != 0)
			life_fail("%s went back (%s, %s): %llu times, by up to %llu ns (%llu from "
				  "libc's answer to the TSC's, %llu from the TSC's to libc's)",
				  name, load, phase, (unsigned long long)track->backward,
				  (unsigned long long)track->worst_back_ns,
				  (unsigned long long)track->back_libc_to_tsc,
				  (unsigned long long)track->back_tsc_to_libc);
		if (track->surely_still_ns >= LIFE_NS_PER_MS)
			life_fail("%s stood still for %llu ns (%s, %s)", name,
				  (unsigned long long)track->surely_still_ns, load, phase);
		if (track->max_error_ns > moves_bound_for(c, max_error_ns))
			life_fail("%s off by %llu ns (%s, %s)", name,
				  (unsigned long long)track->max_error_ns, load, phase);
	}
}

/* One reader of the settled phase, pinned to one CPU: each CPU's line is
 * judged by a reader on it (a line left unvisited for a while comes back
 * on its own, and a reader elsewhere would not see it). */
struct moves_pinned_reader {
	int cpu;
	unsigned ms;
	struct moves_follow tracks[MOVES_TRACKED];
};

static void *moves_follow_pinned(void *arg)
{
	struct moves_pinned_reader *reader = arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(reader->cpu, &set);
	if (sched_setaffinity(0, sizeof set, &set) != 0)
		life_fail("cannot pin a reader to cpu %d", reader->cpu);
	moves_follow_for(reader->ms, reader->tracks);
	return NULL;
}

/* Follows the clock for ms from a reader on every CPU at once, judging
 * each against max_error_ns. */
static void moves_follow_every_cpu(const char *load, int64_t ppm, unsigned ms,
				   uint64_t max_error_ns)
{
	int cpus[64];
	unsigned n = life_cpus(cpus, 64);
	struct moves_pinned_reader readers[64];
	pthread_t threads[64];
	char phase[80];

	for (unsigned i = 0; i < n; i++) {
		readers[i] = (struct moves_pinned_reader){ .cpu = cpus[i], .ms = ms };
		if (pthread_create(&threads[i], NULL, moves_follow_pinned, &readers[i]) != 0)
			life_fail("cannot start a reader");
	}
	for (unsigned i = 0; i < n; i++)
		pthread_join(threads[i], NULL);
	for (unsigned i = 0; i < n; i++) {
		snprintf(phase, sizeof phase, "from 0.7 s after the load ended, on cpu %d",
			 readers[i].cpu);
		moves_judge_under(load, ppm, phase, readers[i].tracks, max_error_ns);
	}
}

/* How long after the tap let go of a visit it held the lines of the other
 * CPUs must answer again: well before the rounds visit the held CPU again
 * (ROUND_UNREACHABLE_FIRST_NS in round.h, 1 s), which is what a round that
 * left them unsampled would wait for. */
#define MOVES_BACK_AFTER_HOLD_MS 700u

/* One reader after a held visit, pinned to one CPU: whether the library
 * answered it from the TSC within MOVES_BACK_AFTER_HOLD_MS, and when. */
struct moves_back_reader {
	int cpu;
	uint64_t released_ns;
	uint64_t back_ns; /* 0: never */
};

static void *moves_back_read(void *arg)
{
	struct moves_back_reader *reader = arg;
	uint64_t end = reader->released_ns + MOVES_BACK_AFTER_HOLD_MS * LIFE_NS_PER_MS;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(reader->cpu, &set);
	if (sched_setaffinity(0, sizeof set, &set) != 0)
		life_fail("cannot pin a reader to cpu %d", reader->cpu);
	while (life_libc_mono_ns() < end) {
		uint64_t before = life_fallthrough();
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		if (life_fallthrough() == before) {
			reader->back_ns = life_libc_mono_ns() - reader->released_ns;
			break;
		}
		life_sleep_ms(1);
	}
	return NULL;
}

/* Once the tap lets go of the visit it held, the lines of every CPU but
 * the one the visit was to answer again from the TSC, soon: the round that
 * was held goes on to the CPUs it had not sampled, rather than leave them
 * all to libc until the held CPU may be visited again, and then restart
 * them at a rate learned across the slew's end. Runs beside the phase that
 * follows the load's end (readers on every CPU, each stopping at its first
 * answer from the TSC). */
struct moves_back {
	unsigned n;
	struct moves_back_reader readers[64];
	pthread_t threads[64];
};

static void moves_back_begin(struct moves_back *back)
{
	int cpus[64];
	uint64_t now = life_libc_mono_ns();

	back->n = life_cpus(cpus, 64);
	for (unsigned i = 0; i < back->n; i++) {
		back->readers[i] = (struct moves_back_reader){ .cpu = cpus[i], .released_ns = now };
		if (pthread_create(&back->threads[i], NULL, moves_back_read, &back->readers[i]) !=
		    0)
			life_fail("cannot start a reader");
	}
}

static void moves_back_end(struct moves_back *back)
{
	unsigned answered = 0;

	for (unsigned i = 0; i < back->n; i++) {
		pthread_join(back->threads[i], NULL);
		if (back->readers[i].back_ns != 0) {
			answered++;
			life_say("after the held visit, cpu %d answered from the TSC %.1f ms after "
				 "the hold ended",
				 back->readers[i].cpu, (double)back->readers[i].back_ns / 1e6);
		} else {
			life_say("after the held visit, cpu %d answered only with libc for %u ms",
				 back->readers[i].cpu, MOVES_BACK_AFTER_HOLD_MS);
		}
	}
	if (back->n >= 2 && answered + 1 < back->n)
		life_fail("%u of %u CPUs answered only with libc for %u ms after the held visit "
			  "ended: the round left the CPUs it did not visit unsampled",
			  back->n - answered, back->n, MOVES_BACK_AFTER_HOLD_MS);
}

/* The slew test beside a load: the kernel's clock slews, the load begins,
 * the slew stops 1 s later while the load runs (a line that learned the
 * slewed rate then parts from the kernel's clock), and the load ends 1 s
 * after that. The soak runs the loaded part five times longer. */
static void moves_slew_under(const char *name, int64_t ppm)
{
	unsigned scale = life_soak() ? 5 : 1;
	struct moves_follow before[MOVES_TRACKED] = { 0 }, during[MOVES_TRACKED],
			    after[MOVES_TRACKED];
	struct moves_back back;
	enum moves_load load;

	if (strcmp(name, "fifo-hop") == 0)
		load = MOVES_LOAD_FIFO_HOP;
	else if (strcmp(name, "fifo-all") == 0)
		load = MOVES_LOAD_FIFO_ALL;
	else if (strcmp(name, "held") == 0)
		load = MOVES_LOAD_HELD;
	else if (strcmp(name, "held-visit") == 0)
		load = MOVES_LOAD_HELD_VISIT;
	else
		life_fail("unknown load %s", name);
	if (load == MOVES_LOAD_FIFO_HOP || load == MOVES_LOAD_FIFO_ALL) {
		const char *why = life_fifo_unavailable();

		if (why != NULL)
			life_skip("%s", why);
	}
	life_require_fast();
	moves_require_tracked_fast();
	moves_follow_for(300, before);
	moves_follow_from(during, before);
	moves_slew(ppm);
	/* The thread sees the slew begin, then the load comes: a change of
	 * the kernel's rate that no look saw parts a line from it by up to
	 * the rate times the validity (watch.h), whatever the library does. */
	moves_follow_for(300, during);
	moves_load_begin(load, 2 * scale + 5);
	/* The thread visits a CPU at its next round, which the slew brings
	 * within a look or two: the slew goes on until it is held there. */
	for (unsigned waited = 0; load == MOVES_LOAD_HELD_VISIT && life_refresh_held() == 0;
	     waited += 50) {
		if (waited >= 10000)
			life_fail("the refresh thread made no round in 10 s of a slew");
		moves_follow_for(50, during);
	}
	moves_follow_for(1000 * scale, during);
	moves_slew(0);
	moves_follow_from(after, during);
	moves_follow_for(1000 * scale, after);
	moves_load_end(load);
	if (load == MOVES_LOAD_HELD_VISIT)
		moves_back_begin(&back);
	moves_follow_for(700, after);
	if (load == MOVES_LOAD_HELD_VISIT)
		moves_back_end(&back);
	moves_judge_under(name, ppm, "while it slewed", during, MOVES_SLEW_ERROR_NS);
	moves_judge_under(name, ppm, "after it, until the load ended", after, MOVES_SLEW_ERROR_NS);
	/* Long enough for a CPU the rounds skipped after a stuck visit (1 s,
	 * LINES_UNREACHABLE_FIRST_NS in lines.h) to have its line again. */
	moves_follow_every_cpu(name, ppm, 1500, MOVES_SETTLED_UNDER_LOAD_ERROR_NS);
}

/* One function's answers in this thread, as ns, and how often they went
 * back. */
struct moves_series {
	const char *name;
	uint64_t last;
	uint64_t backward;
	uint64_t worst_ns;
};

static void moves_note(struct moves_series *series, uint64_t ns)
{
	if (ns < series->last) {
		series->backward++;
		if (series->last - ns > series->worst_ns)
			series->worst_ns = series->last - ns;
	}
	series->last = ns;
}

/* Reads the four functions (and CLOCK_BOOTTIME, CLOCK_TAI and
 * CLOCK_MONOTONIC_RAW) in turn, for ms. */
#define MOVES_SERIES 7
static void moves_read_all(struct moves_series series[MOVES_SERIES], unsigned ms)
{
	uint64_t end = life_libc_mono_ns() + ms * LIFE_NS_PER_MS;

	while (life_libc_mono_ns() < end) {
		struct timespec ts;
		struct timeval tv;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		moves_note(&series[0], life_ns(&ts));
		clock_gettime(CLOCK_REALTIME, &ts);
		moves_note(&series[1], life_ns(&ts));
		gettimeofday(&tv, NULL);
		moves_note(&series[2],
			   (uint64_t)tv.tv_sec * LIFE_NS_PER_SEC + (uint64_t)tv.tv_usec * 1000u);
		timespec_get(&ts, TIME_UTC);
		moves_note(&series[3], life_ns(&ts));
		moves_note(&series[4], moves_clock_ns(CLOCK_BOOTTIME));
		moves_note(&series[5], moves_clock_ns(CLOCK_TAI));
		moves_note(&series[6], moves_clock_ns(CLOCK_MONOTONIC_RAW));
	}
}

/* How far ahead of everyone else's the refresh thread's clock runs in
 * moves fallback and fallback-set (the tap's lead), and in moves
 * ahead-refused: further than readers let lines answer (clock_check.h,
 * 0.7 ms), as lines run ahead while a fast slew starts and the thread
 * cannot look. */
#define MOVES_LEAD_NS	  300000u
#define MOVES_FAR_LEAD_NS 3000000u
/* How far from the kernel's clock an answer may be in moves
 * ahead-refused: the library's promise of 1 ms. */
#define MOVES_AHEAD_ERROR_NS 1000000u

/* Waits until the lines answer at least half the lead ahead of libc: a
 * calibration service that was running before the lead was set takes it
 * at its next look, a thread of the library's own from its first round. */
static void moves_wait_lines_ahead(unsigned lead_ns)
{
	for (unsigned waited = 0; waited < 10000; waited += 10) {
		uint64_t answer = life_mono_ns();

		if (answer > life_libc_mono_ns() + lead_ns / 2)
			return;
		life_sleep_ms(10);
	}
	life_fail("the lines never ran %u ns ahead of libc in 10 s: the lead was not taken",
		  lead_ns / 2);
}

/* Lines ahead of libc by lead_ns, then stale: libc answers, never behind
 * what the TSC answered this thread, in any of the seven, whatever the
 * lead: the clock was not set. */
static void moves_fallback(unsigned lead_ns)
{
	struct moves_series series[MOVES_SERIES] = {
		{ .name = "clock_gettime(CLOCK_MONOTONIC)" },
		{ .name = "clock_gettime(CLOCK_REALTIME)" },
		{ .name = "gettimeofday" },
		{ .name = "timespec_get" },
		{ .name = "clock_gettime(CLOCK_BOOTTIME)" },
		{ .name = "clock_gettime(CLOCK_TAI)" },
		{ .name = "clock_gettime(CLOCK_MONOTONIC_RAW)" },
	};
	uint64_t fell_back = 0;

	moves_wait_lines_ahead(lead_ns);
	for (int round = 0; round < 4; round++) {
		uint64_t before;

		/* Without FASTTIME_FORCE, the choice made again after a hold
		 * may be libc's where the two cost about the same (the CPU id
		 * from getcpu): that is the library's to make, as at start. */
		if (!life_wait_fast(5000)) {
			if (!life_forced())
				life_skip("the library chose libc after the hold "
					  "(FASTTIME_FORCE is off)");
			life_fail("the TSC does not answer again after the hold");
		}
		moves_read_all(series, 50);
		before = life_fallthrough();
		life_hold_refresh(true);
		moves_read_all(series, (unsigned)(life_window_ns() / LIFE_NS_PER_MS) + 300);
		fell_back += life_fallthrough() - before;
		life_hold_refresh(false);
	}
	if (fell_back == 0)
		life_fail("the lines never went stale: nothing was tested");
	for (int i = 0; i < MOVES_SERIES; i++) {
		life_say("%s: %llu steps back, worst %llu ns", series[i].name,
			 (unsigned long long)series[i].backward,
			 (unsigned long long)series[i].worst_ns);
		if (series[i].backward != 0)
			life_fail("%s went back when libc answered", series[i].name);
	}
	life_say("%llu answers from libc while the lines were stale",
		 (unsigned long long)fell_back);
}

/* The lines answer; then the refresh thread's clock leaps ahead by
 * lead_ns, and its lines follow at its next look: readers must refuse
 * them, whatever their own thread or their service does, for 1.5 s. */
static void moves_ahead_refused(unsigned lead_ns)
{
	struct moves_follow before[MOVES_TRACKED] = { 0 }, ahead[MOVES_TRACKED];

	moves_require_tracked_fast();
	moves_follow_for(300, before);
	moves_follow_from(ahead, before);
	moves_lead_refresh(lead_ns);
	moves_follow_for(1500, ahead);
	moves_lead_refresh(0);
	for (unsigned c = 0; c < MOVES_TRACKED; c++) {
		const struct moves_follow *track = &ahead[c];
		const char *name = moves_tracked[c].name;

		if (!moves_tracked_fast[c])
			continue;
		life_say("%s, lines %u ns ahead: max error %llu ns, surely still for %llu ns, "
			 "%llu steps back, %llu of %llu answers from libc",
			 name, lead_ns, (unsigned long long)track->max_error_ns,
			 (unsigned long long)track->surely_still_ns,
			 (unsigned long long)track->backward, (unsigned long long)track->libc_reads,
			 (unsigned long long)track->reads);
		if (track->backward != 0)
			life_fail("%s went back %llu times, by up to %llu ns", name,
				  (unsigned long long)track->backward,
				  (unsigned long long)track->worst_back_ns);
		if (track->surely_still_ns >= LIFE_NS_PER_MS)
			life_fail("%s stood still for %llu ns", name,
				  (unsigned long long)track->surely_still_ns);
		/* Every clock the lines answer is led alike, the raw one too. */
		if (track->max_error_ns > MOVES_AHEAD_ERROR_NS)
			life_fail("%s answered %llu ns from the kernel's clock: lines %u ns ahead "
				  "were let answer",
				  name, (unsigned long long)track->max_error_ns, lead_ns);
	}
}

/* How far CLOCK_REALTIME is set back in moves fallback-set: far beyond
 * the lead, and far below a round's interval. */
#define MOVES_SET_BACK_NS 50000000u

/* Lines lead_ns ahead of libc, held until stale, then CLOCK_REALTIME set
 * back: libc's answers show it, and the clamp must let them stand, where
 * with the clock not set it holds the same drop as the lines' own lead
 * (moves fallback). The answers that follow the set-back are within
 * the lead of the kernel's clock (and 0.1 ms for the reads around them):
 * the reader that saw the step over stale lines may have published the new
 * offset, and then the lead alone is held. CLOCK_MONOTONIC never goes
 * back. */
static void moves_fallback_set(unsigned lead_ns)
{
	uint64_t real_before, real_after, start, fell_back, seen = 0, before_at, after_at;

	moves_kernel_tai_minus_real = moves_read_kernel_tai_offset();
	moves_tai_fast = moves_clock_fast(CLOCK_TAI, "CLOCK_TAI");
	moves_wait_lines_ahead(lead_ns);
	if (!life_wait_fast(5000)) {
		if (!life_forced())
			life_skip("the library chose libc (FASTTIME_FORCE is off)");
		life_fail("the TSC does not answer");
	}
	moves_check_mono();
	before_at = life_libc_mono_ns();
	real_before = moves_real_ns();
	fell_back = life_fallthrough();
	life_hold_refresh(true);
	/* Set back as soon as libc answers, while its answers are held at
	 * the lead. */
	start = life_libc_mono_ns();
	while (life_fallthrough() == fell_back) {
		if (life_libc_mono_ns() - start > 10 * LIFE_NS_PER_SEC)
			life_fail("the lines never went stale with the thread held");
		moves_check_mono();
		before_at = life_libc_mono_ns();
		real_before = moves_real_ns();
	}
	moves_set_realtime(-(int64_t)MOVES_SET_BACK_NS);
	start = life_libc_mono_ns();
	while (life_libc_mono_ns() - start < LIFE_NS_PER_SEC) {
		moves_check_mono();
		if (moves_follows(lead_ns + 100000u)) {
			seen = life_libc_mono_ns();
			break;
		}
	}
	real_after = moves_real_ns();
	after_at = life_libc_mono_ns();
	life_hold_refresh(false);
	if (seen == 0)
		life_fail("CLOCK_REALTIME set back by %u ns over stale lines %u ns ahead: not "
			  "followed (%s %+.6f s from the kernel's)",
			  MOVES_SET_BACK_NS, lead_ns, moves_off_what, (double)moves_off_by / 1e9);
	life_say("set back by %u ns over stale lines %u ns ahead: followed after %.3f ms, "
		 "CLOCK_REALTIME went back by %.3f ms in %.3f ms",
		 MOVES_SET_BACK_NS, lead_ns, (double)(seen - start) / 1e6,
		 ((double)real_before - (double)real_after) / 1e6,
		 (double)(after_at - before_at) / 1e6);
	/* The two answers lie after_at - before_at apart at most (a
	 * preemption between them included), which the drop must cover. */
	if (real_after + MOVES_SET_BACK_NS - lead_ns - 1000000u >
	    real_before + (after_at - before_at))
		life_fail(
		    "CLOCK_REALTIME went back by only %.3f ms in %.3f ms when set back by %u ns",
		    ((double)real_before - (double)real_after) / 1e6,
		    (double)(after_at - before_at) / 1e6, MOVES_SET_BACK_NS);
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";

	life_begin("moves");
	moves_find_tap();
	life_watchdog(180);
	if (strcmp(what, "step") == 0 || strcmp(what, "step-slow") == 0) {
		if (strcmp(what, "step-slow") == 0)
			moves_slow_reads(1200);
		life_require_fast();
		moves_steps();
	} else if (strcmp(what, "slew") == 0 && argc > 2) {
		life_require_fast();
		moves_slew_test(strtoll(argv[2], NULL, 10));
	} else if (strcmp(what, "slew-under") == 0 && argc > 3) {
		moves_slew_under(argv[2], strtoll(argv[3], NULL, 10));
	} else if (strcmp(what, "suspend") == 0) {
		life_require_fast();
		moves_suspends();
	} else if (strcmp(what, "fallback") == 0) {
		moves_lead_refresh(MOVES_LEAD_NS);
		life_require_fast();
		moves_fallback(MOVES_LEAD_NS);
	} else if (strcmp(what, "ahead-refused") == 0) {
		life_require_fast();
		moves_ahead_refused(MOVES_FAR_LEAD_NS);
	} else if (strcmp(what, "fallback-set") == 0 || strcmp(what, "fallback-set-slow") == 0) {
		if (strcmp(what, "fallback-set-slow") == 0)
			moves_slow_reads(1200);
		moves_lead_refresh(MOVES_LEAD_NS);
		life_require_fast();
		moves_fallback_set(MOVES_LEAD_NS);
	} else {
		life_fail("usage: moves step|step-slow|slew PPM|slew-under "
			  "fifo-hop|fifo-all|held|held-visit "
			  "PPM|suspend|fallback|ahead-refused|fallback-set|fallback-set-slow");
	}
	return 0;
}
