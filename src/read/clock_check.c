/* The readers' own check of the lines (clock_check.h). */
#include "config.h"

#include "clock_check.h"

#include <time.h>

#include "clock.h"
#include "cpu.h"
#include "debug.h"
#include "libc.h"
#include "timespec_ns.h"
#include "wiped.h"

/* The fast read's deadline, the sooner of the judgement's and the check's,
 * stored again while either moved meanwhile: two threads storing at once
 * leave the later values, not the earlier. */
static void clock_check_publish(void)
{
	struct wiped_words *words = &wiped.words;
	uint64_t judged, checked;

	do {
		judged = __atomic_load_n(&words->judged_until_given_tsc, __ATOMIC_SEQ_CST);
		checked = __atomic_load_n(&words->checked_until_tsc, __ATOMIC_SEQ_CST);
		__atomic_store_n(&words->judged_until_tsc, judged < checked ? judged : checked,
				 __ATOMIC_SEQ_CST);
	} while (__atomic_load_n(&words->judged_until_given_tsc, __ATOMIC_SEQ_CST) != judged ||
		 __atomic_load_n(&words->checked_until_tsc, __ATOMIC_SEQ_CST) != checked);
}

void clock_check_judged_until(uint64_t until)
{
	__atomic_store_n(&wiped.words.judged_until_given_tsc, until, __ATOMIC_SEQ_CST);
	clock_check_publish();
}

void clock_check_forget(void)
{
	if (__atomic_load_n(&wiped.words.checked_until_tsc, __ATOMIC_RELAXED) == 0)
		return;
	__atomic_store_n(&wiped.words.checked_until_tsc, 0, __ATOMIC_SEQ_CST);
	clock_check_publish();
}

uint64_t clock_check_until(void)
{
	return __atomic_load_n(&wiped.words.checked_until_tsc, __ATOMIC_RELAXED);
}

/* The line's distance from libc's CLOCK_MONOTONIC, at most: libc's
 * reading lies between the line's values at the counter readings taken
 * around it where the line is right. One call to libc, where two around a
 * counter reading would cost twice. False when libc fails, or the thread
 * was preempted around it twice. */
static bool clock_check_distance(struct calib_line line, uint64_t *tsc_out, uint64_t *distance_ns)
{
	for (unsigned attempt = 0; attempt < 2; attempt++) {
		struct timespec kernel_ts;
		uint64_t first, last, kernel, tsc;

		tsc = cpu_rdtsc_fenced();
		if (libc_clock_gettime(CLOCK_MONOTONIC, &kernel_ts) != 0)
			return false;
		first = clock_mulhi(tsc, line.mult) + line.offset;
		last = clock_mulhi(cpu_rdtsc_fenced(), line.mult) + line.offset;
		if (last < first || last - first > CLOCK_CHECK_WIDTH_MAX_NS)
			continue;
		kernel = timespec_to_ns(&kernel_ts);
		/* The line's further end from the kernel's reading. */
		*distance_ns = kernel >= last			? kernel - first
			       : kernel <= first		? last - kernel
			       : kernel - first > last - kernel ? kernel - first
								: last - kernel;
		*tsc_out = tsc;
		return true;
	}
	return false;
}

/* No answer from the lines until a check a retry's time from tsc: the
 * line was found off, or the check could not tell (libc failed, or the
 * thread was preempted around it twice), which a loaded machine or a slow
 * libc may make so again at once. */
static void clock_check_retry_later(struct calib_line line, uint64_t tsc)
{
	__atomic_store_n(&wiped.words.check_retry_tsc,
			 tsc + calib_line_ticks_for_ns(line.mult, CLOCK_CHECK_RETRY_NS),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&wiped.words.checked_until_tsc, 0, __ATOMIC_SEQ_CST);
	clock_check_publish();
}

/* The check itself, by the one caller holding wiped.words.checking. */
static bool clock_check_held(uint64_t tsc, struct calib_line line)
{
	uint64_t distance, room, window_ns;

	if (!clock_check_distance(line, &tsc, &distance)) {
		clock_check_retry_later(line, tsc);
		return false;
	}
	room = distance < CLOCK_CHECK_LIMIT_NS ? CLOCK_CHECK_LIMIT_NS - distance : 0;
	if (room < (uint64_t)CLOCK_CHECK_MIN_WINDOW_NS * CLOCK_CHECK_RATE_PPM / 1000000u) {
		if (__atomic_load_n(&wiped.words.checked_until_tsc, __ATOMIC_RELAXED) != 0)
			debug_log("a line is %llu ns off the kernel's clock: answering with libc "
				  "until it is back within %u ns",
				  (unsigned long long)distance, CLOCK_CHECK_LIMIT_NS);
		clock_check_retry_later(line, tsc);
		return false;
	}
	window_ns = room * 1000000u / CLOCK_CHECK_RATE_PPM;
	__atomic_store_n(&wiped.words.checked_until_tsc,
			 tsc + calib_line_ticks_for_ns(line.mult, window_ns), __ATOMIC_SEQ_CST);
	clock_check_publish();
	return true;
}

bool clock_check(uint64_t tsc, struct calib_line monotonic)
{
	uint64_t until = __atomic_load_n(&wiped.words.checked_until_tsc, __ATOMIC_RELAXED);
	uint64_t longest;
	bool right;

	if (monotonic.mult == 0)
		return true;
	/* Checked by another thread meanwhile; a deadline further than any
	 * window is one from before the counter was reset. */
	longest = calib_line_ticks_for_ns(monotonic.mult,
					  CLOCK_CHECK_LIMIT_NS * 1000000ull / CLOCK_CHECK_RATE_PPM);
	if (tsc < until && until - tsc <= longest) {
		clock_check_publish();
		return true;
	}
	if (until == 0 &&
	    (int64_t)(tsc - __atomic_load_n(&wiped.words.check_retry_tsc, __ATOMIC_RELAXED)) < 0)
		return false;
	if (__atomic_exchange_n(&wiped.words.checking, true, __ATOMIC_ACQ_REL))
		return false;
	right = clock_check_held(tsc, monotonic);
	__atomic_store_n(&wiped.words.checking, false, __ATOMIC_RELEASE);
	return right;
}
