/* The watch's decisions between rounds, with fake clocks: steps of
 * CLOCK_REALTIME seen in narrow and in wide sandwiches, lines that parted
 * from the kernel's clock (a suspend, a paused VM, a fast slew), and the
 * bound the validity window puts on answers after a suspend. */
#include "config.h"

#include "calib.h"
#include "unit.h"
#include "watch.h"

#define NS_PER_SEC 1000000000ull
#define NS_PER_MS  1000000ull

/* 0.4 ns per tick (a 2.5 GHz counter) as a 0.64 fraction. */
#define WATCH_TEST_MULT (UINT64_C(0x6666666666666666))

/* One monotonic / realtime / monotonic sandwich of the given width, the
 * realtime reading taken at position ns into it (0 .. width), realtime
 * being monotonic + offset. */
static struct calib_offset_sample watch_test_sandwich(uint64_t mono, uint64_t offset,
						      uint64_t width, uint64_t position)
{
	struct calib_offset_sample s = { mono, mono + position + offset, mono + width };

	return s;
}

/* Steps of a leap second, of ten seconds and of three hours, either way, are
 * seen whatever the width of the sandwich: 25 ns (the vDSO), 1.8 us (a
 * kernel clock that is a system call, 600 ns a read) and 2 us, wherever in
 * the sandwich the realtime reading fell. The move is measured within half
 * the width. */
START_TEST(test_watch_steps_seen)
{
	const uint64_t published = 1700000000ull * NS_PER_SEC + 987654321;
	const uint64_t mono = 86400 * NS_PER_SEC;
	const int64_t steps[] = {
		1 * (int64_t)NS_PER_SEC,	-1 * (int64_t)NS_PER_SEC,
		10 * (int64_t)NS_PER_SEC,	-10 * (int64_t)NS_PER_SEC,
		3 * 3600 * (int64_t)NS_PER_SEC, -3 * 3600 * (int64_t)NS_PER_SEC,
	};
	const uint64_t widths[] = { 25, 1800, 2000 };

	for (unsigned i = 0; i < sizeof steps / sizeof steps[0]; i++) {
		for (unsigned w = 0; w < sizeof widths / sizeof widths[0]; w++) {
			for (unsigned p = 0; p <= 2; p++) {
				uint64_t position = widths[w] * p / 2, offset = 0;
				struct calib_offset_sample s = watch_test_sandwich(
				    mono, published + (uint64_t)steps[i], widths[w], position);
				int64_t moved = 0, error;

				ck_assert_int_eq(watch_realtime_judge(&s, 1, published,
								      WATCH_STEP_THRESHOLD_NS,
								      &offset, &moved),
						 WATCH_REALTIME_SET);
				error = moved - steps[i];
				ck_assert_int_le(error < 0 ? -error : error,
						 (int64_t)(widths[w] / 2 + 1));
				ck_assert_uint_eq(offset, published + (uint64_t)moved);
			}
		}
	}
}
END_TEST

/* Where the realtime reading falls within the sandwich is noise, never a
 * step, however wide the sandwich; a step of the threshold plus twice the
 * width always is, either way. */
START_TEST(test_watch_width_is_noise)
{
	const uint64_t published = 1700000000ull * NS_PER_SEC;
	const uint64_t mono = 5 * NS_PER_SEC, threshold = WATCH_STEP_THRESHOLD_NS;
	const uint64_t widths[] = { 0, 25, 1000, 1800, 2000, 20000 };

	for (unsigned w = 0; w < sizeof widths / sizeof widths[0]; w++) {
		uint64_t width = widths[w], small_step = threshold + 2 * width + 1, offset;
		int64_t moved;

		for (unsigned p = 0; p <= 4; p++) {
			uint64_t position = width * p / 4;
			struct calib_offset_sample still =
			    watch_test_sandwich(mono, published - width / 2, width, position);
			struct calib_offset_sample ahead = watch_test_sandwich(
			    mono, published + small_step - width / 2, width, position);
			struct calib_offset_sample behind = watch_test_sandwich(
			    mono, published - small_step - width / 2, width, position);

			ck_assert_int_eq(
			    watch_realtime_judge(&still, 1, published, threshold, &offset, &moved),
			    WATCH_REALTIME_UNCHANGED);
			ck_assert_int_eq(
			    watch_realtime_judge(&ahead, 1, published, threshold, &offset, &moved),
			    WATCH_REALTIME_SET);
			ck_assert_int_eq(
			    watch_realtime_judge(&behind, 1, published, threshold, &offset, &moved),
			    WATCH_REALTIME_SET);
		}
	}
}
END_TEST

/* The narrowest of several sandwiches judges; with none that ran forward
 * nothing is judged and nothing is filled in. */
START_TEST(test_watch_several_and_none)
{
	const uint64_t published = 1700000000ull * NS_PER_SEC, mono = 7 * NS_PER_SEC;
	struct calib_offset_sample several[3] = {
		watch_test_sandwich(mono, published + 4000, 50000, 0),
		watch_test_sandwich(mono + 100, published + 4000, 300, 150),
		watch_test_sandwich(mono + 900, published + 4000, 9000, 9000),
	};
	struct calib_offset_sample backwards[2] = { { 10, 5, 9 }, { 100, 5, 0 } };
	uint64_t offset = 7;
	int64_t moved = 8;

	ck_assert_int_eq(
	    watch_realtime_judge(several, 3, published, WATCH_STEP_THRESHOLD_NS, &offset, &moved),
	    WATCH_REALTIME_SET);
	ck_assert_int_eq(moved, 4000);
	offset = 7;
	moved = 8;
	ck_assert_int_eq(
	    watch_realtime_judge(backwards, 2, published, WATCH_STEP_THRESHOLD_NS, &offset, &moved),
	    WATCH_REALTIME_UNMEASURED);
	ck_assert_uint_eq(offset, 7);
	ck_assert_int_eq(moved, 8);
}
END_TEST

/* A step a reader publishes from a sandwich as wide as it may use
 * (WATCH_READER_SANDWICH_MAX_NS), wherever its realtime reading fell, is
 * never judged moved again by the refresh thread's next look, whatever
 * that look's width and wherever its reading fell: the library never
 * corrects its own readers' step by a second, smaller one. */
START_TEST(test_watch_reader_step_stands)
{
	const uint64_t old = 1700000000ull * NS_PER_SEC, mono = 9 * NS_PER_SEC;
	const uint64_t truth = old + 10 * NS_PER_SEC, reader_width = WATCH_READER_SANDWICH_MAX_NS;
	const uint64_t look_widths[] = { 0, 1, 25, 999, 1000, 1001, 2400, 20000 };

	for (unsigned r = 0; r <= 4; r++) {
		struct calib_offset_sample reader =
		    watch_test_sandwich(mono, truth, reader_width, reader_width * r / 4);
		uint64_t published = 0, offset;
		int64_t moved;

		ck_assert_int_eq(watch_realtime_judge(&reader, 1, old, WATCH_STEP_THRESHOLD_NS,
						      &published, &moved),
				 WATCH_REALTIME_SET);
		for (unsigned w = 0; w < sizeof look_widths / sizeof look_widths[0]; w++)
			for (unsigned p = 0; p <= 4; p++) {
				struct calib_offset_sample look =
				    watch_test_sandwich(mono + 80 * NS_PER_MS, truth,
							look_widths[w], look_widths[w] * p / 4);

				ck_assert_msg(
				    watch_realtime_judge(&look, 1, published,
							 WATCH_STEP_THRESHOLD_NS, &offset,
							 &moved) == WATCH_REALTIME_UNCHANGED,
				    "reader at %u/4 of %llu ns, look %llu ns wide at %u/4: "
				    "moved %lld ns",
				    r, (unsigned long long)reader_width,
				    (unsigned long long)look_widths[w], p, (long long)moved);
			}
	}
}
END_TEST

/* A line through (tsc0, ns0) at WATCH_TEST_MULT, and the counter value at
 * which the kernel's clock, running at the line's rate plus rate_ppm, has
 * advanced by elapsed_ns. */
static const uint64_t watch_test_tsc0 = 1000000000000ull, watch_test_ns0 = 50 * NS_PER_SEC;

static struct calib_line watch_test_line(void)
{
	struct calib_line line = { .mult = WATCH_TEST_MULT, .offset = 0 };

	line.offset = watch_test_ns0 - calib_line_eval(line, watch_test_tsc0);
	return line;
}

/* A sample taken when ticks_ns of the line's time have passed on the
 * counter and kernel_ns on the kernel's clock, the counter read at
 * position into a sandwich of width. */
static struct calib_sample watch_test_sample(uint64_t ticks_ns, uint64_t kernel_ns, uint64_t width,
					     uint64_t position)
{
	struct calib_sample s;

	s.tsc = watch_test_tsc0 + calib_line_ticks_for_ns(WATCH_TEST_MULT, ticks_ns);
	s.width_ns = width;
	/* The counter was read at kernel_ns; the midpoint is where the
	 * sandwich's two readings put it. */
	s.ns = watch_test_ns0 + kernel_ns - position + width / 2;
	return s;
}

/* A line that agrees with the kernel's clock is renewed, in narrow and in
 * wide sandwiches, wherever the counter fell in them; one that parted from
 * it is not, and a round runs: a suspend or a paused VM (the counter ran
 * on, the kernel's monotonic clock did not), a slew of 83,333 ppm over one
 * watch period. A slew of 100 ppm over one period is followed by the
 * rounds, not by the watch. No line, no renewal. */
START_TEST(test_watch_line_holds)
{
	const uint64_t period = WATCH_PERIOD_NS, tolerance = WATCH_LINE_TOLERANCE_NS;
	const uint64_t widths[] = { 25, 2000 };
	const uint64_t suspends[] = { 200000, 150 * NS_PER_MS, NS_PER_SEC, 3600 * NS_PER_SEC };
	struct calib_line line = watch_test_line(), none = { 0, 0 };

	for (unsigned w = 0; w < 2; w++) {
		uint64_t width = widths[w];

		for (unsigned p = 0; p <= 2; p++) {
			struct calib_sample right =
			    watch_test_sample(period, period, width, width * p / 2);

			ck_assert(watch_line_holds(line, &right, tolerance));
			ck_assert(!watch_line_holds(none, &right, tolerance));
		}
		for (unsigned i = 0; i < sizeof suspends / sizeof suspends[0]; i++) {
			struct calib_sample resumed =
			    watch_test_sample(period + suspends[i], period, width, width / 2);

			ck_assert(!watch_line_holds(line, &resumed, tolerance));
			ck_assert_int_eq(watch_line_error(line, &resumed) / 1000,
					 -(int64_t)suspends[i] / 1000);
		}
		{
			struct calib_sample fast = watch_test_sample(
			    period, period + period / 1000000 * 83333, width, width / 2);
			struct calib_sample slow =
			    watch_test_sample(period, period - period / 1000000 * 83333, width, 0);
			struct calib_sample gentle =
			    watch_test_sample(period, period + period / 1000000 * 100, width, 0);

			ck_assert(!watch_line_holds(line, &fast, tolerance));
			ck_assert(!watch_line_holds(line, &slow, tolerance));
			ck_assert(watch_line_holds(line, &gentle, tolerance));
		}
	}
}
END_TEST

/* Whether a reader at counter value tsc may answer, as the read path
 * decides it (table.h). */
static bool watch_test_fresh(uint64_t valid_from, uint64_t valid_ticks, uint64_t tsc)
{
	return tsc - valid_from <= valid_ticks;
}

/* The bound after a suspend of D, or a VM paused for D: the last look
 * renewed the lines at counter value L, then the counter ran D further
 * while the kernel's monotonic clock stood still. A reader that comes back
 * either finds the lines stale (libc answers) or answers ahead of the
 * kernel's clock by D, never by more than WATCH_VALID_NS; and the next
 * look finds the line parted and runs a round. Readers on a CPU a little
 * behind the look's (a millisecond) still answer. */
START_TEST(test_watch_suspend_bound)
{
	const uint64_t pauses[] = { 1 * NS_PER_MS,	   50 * NS_PER_MS, WATCH_VALID_NS - 1000,
				    WATCH_VALID_NS + 1000, NS_PER_SEC,	   600 * NS_PER_SEC };
	struct calib_line line = watch_test_line();
	struct calib_sample look = watch_test_sample(0, 0, 25, 12);
	uint64_t valid_from, valid_ticks;
	unsigned answered = 0, stale = 0;

	watch_validity(look.tsc, line.mult, WATCH_VALID_NS, &valid_from, &valid_ticks);
	ck_assert(watch_test_fresh(valid_from, valid_ticks, look.tsc));
	ck_assert(watch_test_fresh(valid_from, valid_ticks,
				   look.tsc - calib_line_ticks_for_ns(line.mult, 900000)));
	for (unsigned i = 0; i < sizeof pauses / sizeof pauses[0]; i++) {
		uint64_t tsc = look.tsc + calib_line_ticks_for_ns(line.mult, pauses[i]);
		struct calib_sample resumed = watch_test_sample(pauses[i], 0, 25, 12);

		if (watch_test_fresh(valid_from, valid_ticks, tsc)) {
			/* The kernel's clock stood where the look found it. */
			uint64_t ahead = calib_line_eval(line, tsc) - watch_test_ns0;

			ck_assert_uint_le(ahead, pauses[i] + 1);
			ck_assert_uint_le(ahead, WATCH_VALID_NS);
			answered++;
		} else {
			ck_assert_uint_gt(pauses[i], WATCH_VALID_NS);
			stale++;
		}
		ck_assert(!watch_line_holds(line, &resumed, WATCH_LINE_TOLERANCE_NS));
	}
	ck_assert_uint_eq(answered, 3);
	ck_assert_uint_eq(stale, 3);
}
END_TEST

/* Between two looks 80 ms apart the error can move by what rates explain:
 * a slew at the kernel's limit (10 %) while the line pays an error back at
 * its own (20 %), from a rate learned at the other end of the range. A suspend or a paused VM moves
 * it by the whole pause in no monotonic time at all: parted, and the line restarted onto the
 * kernel's clock, its rate kept. */
START_TEST(test_watch_parted_restarts)
{
	const uint64_t period = WATCH_PERIOD_NS, t0 = 1000 * NS_PER_SEC;
	const uint64_t pauses[] = { 200000, 150 * NS_PER_MS, 30 * NS_PER_SEC };
	struct calib_cpu cpu;
	struct calib_sample resumed;

	ck_assert(!watch_parted(0, t0, 0, t0 + period, 25));
	ck_assert(!watch_parted(-500, t0, (int64_t)(period / 10) - 500, t0 + period, 25));
	ck_assert(!watch_parted(20000, t0, 20000 - (int64_t)(period * 3 / 10), t0 + period, 25));
	ck_assert(!watch_parted(0, 0, 5 * (int64_t)NS_PER_SEC, t0, 25));
	for (unsigned i = 0; i < sizeof pauses / sizeof pauses[0]; i++) {
		ck_assert(watch_parted(0, t0, -(int64_t)pauses[i], t0 + 1000, 25));
		ck_assert(watch_parted(-30, t0, -(int64_t)pauses[i], t0 + 1000, 2000));
	}
	ck_assert(!watch_parted(0, t0, (int64_t)(period * 45 / 100), t0 + period, 25));
	ck_assert(watch_parted(0, t0, (int64_t)(period * 6 / 10), t0 + period, 25));

	/* The restart: after a pause of 30 s in which the kernel's monotonic
	 * clock stood still, the line answers the kernel's time at once. */
	calib_cpu_reset(&cpu);
	cpu.line = watch_test_line();
	cpu.slope_mult = WATCH_TEST_MULT;
	cpu.has_anchor = true;
	cpu.anchor = watch_test_sample(0, 0, 25, 12);
	resumed = watch_test_sample(period + 30 * NS_PER_SEC, period, 25, 12);
	ck_assert_int_eq(calib_cpu_restart(&cpu, &resumed), CALIB_STEPPED);
	ck_assert_uint_eq(cpu.line.mult, WATCH_TEST_MULT);
	ck_assert_int_le(watch_line_error(cpu.line, &resumed), 1);
	ck_assert_int_ge(watch_line_error(cpu.line, &resumed), -1);
	ck_assert_int_le(cpu.last_error_ns / 1000, -30 * (int64_t)NS_PER_SEC / 1000 + 1);
}
END_TEST

/* The bound watch_trusted_ns promises, at s ns into the window. */
static uint64_t watch_test_bound_at(int64_t error, int64_t drift_ppb, uint64_t since,
				    uint64_t rate_ppm, uint64_t s)
{
	int64_t at = error + (int64_t)((__int128)drift_ppb * (__int128)s / 1000000000);
	uint64_t magnitude = at < 0 ? 0 - (uint64_t)at : (uint64_t)at;

	return magnitude + (uint64_t)((unsigned __int128)(since + s) * rate_ppm / 1000000u);
}

/* A line on the kernel's clock is trusted for the whole validity while the
 * kernel's rate holds still; while it has been seen to move at chrony's
 * fastest, for as long as that rate keeps the line within the budget (8.4
 * ms). A line being paid back is trusted past its aim, until it is the
 * budget beyond; one that is not yet within the budget may run half the
 * budget further off while it is paid back, never more; one moving off is
 * held to the budget itself, however far off a look finds it (granted
 * half the budget more at every look, it would run off without end).
 * Throughout each window the bound holds, and just after a window shorter
 * than the validity it does not. */
START_TEST(test_watch_trusted_window)
{
	const uint64_t budget = WATCH_LINE_BUDGET_NS;
	const int64_t errors[] = { 0, 300000, -300000, 650000, -650000, 2000000, -2000000 };
	const int64_t drifts[] = { 0, 50000000, -50000000, 200000000, -200000000 };
	const uint64_t rates[] = { WATCH_RATE_FLOOR_PPM, 10000, 83333, 200000 };
	const uint64_t sinces[] = { 0, 1000, 1000000 };

	ck_assert_uint_eq(watch_trusted_ns(0, 0, 0, WATCH_RATE_FLOOR_PPM, budget), WATCH_VALID_NS);
	ck_assert_uint_le(watch_trusted_ns(0, 0, 0, 83333, budget), budget * 12 + 1000);
	ck_assert_uint_ge(watch_trusted_ns(0, 0, 0, 83333, budget), budget * 12 - 1000);
	/* 300 us behind, caught up at 10 %: trusted until 700 us ahead. */
	ck_assert_uint_ge(watch_trusted_ns(300000, -100000000, 0, WATCH_RATE_FLOOR_PPM, budget),
			  9 * NS_PER_MS);
	ck_assert_uint_eq(watch_trusted_ns((int64_t)WATCH_VALID_NS + 1, 0, 0, 500, budget), 0);
	ck_assert_uint_eq(watch_trusted_ns(0, 0, NS_PER_SEC, 83333, budget), 0);
	/* A line restarted at a rate 2.7 % off (learned across a slew's end),
	 * found 355 us and then 650 us ahead by later looks: each window ends
	 * at the budget, and none is left at 700 us. */
	ck_assert_uint_le(watch_trusted_ns(-355000, -27339056, 0, 83336, budget),
			  (budget - 355000) * 1000u / 110 + 1000);
	ck_assert_uint_le(watch_trusted_ns(-650000, -27339056, 0, 83336, budget),
			  (budget - 650000) * 1000u / 110 + 1000);
	ck_assert_uint_eq(watch_trusted_ns(-(int64_t)budget, -27339056, 0, 83336, budget), 0);
	for (unsigned e = 0; e < sizeof errors / sizeof errors[0]; e++)
		for (unsigned d = 0; d < sizeof drifts / sizeof drifts[0]; d++)
			for (unsigned r = 0; r < sizeof rates / sizeof rates[0]; r++)
				for (unsigned i = 0; i < sizeof sinces / sizeof sinces[0]; i++) {
					int64_t error = errors[e], drift = drifts[d];
					uint64_t rate = rates[r], since = sinces[i];
					uint64_t magnitude =
					    error < 0 ? 0 - (uint64_t)error : (uint64_t)error;
					uint64_t grown = since * rate / 1000000u;
					bool paid_back =
					    (error > 0 && drift < 0) || (error < 0 && drift > 0);
					uint64_t allowed =
					    paid_back && magnitude + budget / 2 + grown > budget
						? magnitude + budget / 2 + grown
						: budget;
					uint64_t window =
					    watch_trusted_ns(error, drift, since, rate, budget);

					ck_assert_uint_le(window, WATCH_VALID_NS);
					/* Already past what it may be: no window. */
					if (magnitude + grown > allowed)
						ck_assert_uint_eq(window, 0);
					for (unsigned k = 0; window > 0 && k <= 16; k++)
						ck_assert_uint_le(
						    watch_test_bound_at(error, drift, since, rate,
									window * k / 16),
						    allowed + 1);
					if (window > 0 && window < WATCH_VALID_NS)
						ck_assert_uint_gt(watch_test_bound_at(
								      error, drift, since, rate,
								      window + window / 50 + 1000),
								  allowed);
				}
}
END_TEST

Suite *suite_watch(void)
{
	Suite *s = suite_create("watch");
	TCase *tc = tcase_create("between rounds");

	tcase_add_test(tc, test_watch_steps_seen);
	tcase_add_test(tc, test_watch_width_is_noise);
	tcase_add_test(tc, test_watch_several_and_none);
	tcase_add_test(tc, test_watch_reader_step_stands);
	tcase_add_test(tc, test_watch_line_holds);
	tcase_add_test(tc, test_watch_suspend_bound);
	tcase_add_test(tc, test_watch_parted_restarts);
	tcase_add_test(tc, test_watch_trusted_window);
	suite_add_tcase(s, tc);
	return s;
}
