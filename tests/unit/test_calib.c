/* The calibration arithmetic against a fake TSC and a fake kernel clock. Both
 * are exact integer models, so every expectation is computed, never measured. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "calib.h"
#include "unit.h"

#define NS_PER_SEC  1000000000ull
#define INTERVAL_NS (5 * NS_PER_SEC)
/* What rounding may add at one sample: the fake clock's floor, the line's
 * floor, the one-nanosecond grain of a sample and of the bend. */
#define ROUNDING_NS 4
/* Noise on the midpoint of a sandwich in the noise test. */
#define NOISE_NS 20

/* A kernel clock driven by a fake TSC running at hz ticks per second. The
 * current segment starts at (seg_tsc, seg_ns); within it the kernel advances
 * (1e9 + ppb) / hz ns per tick. A change of rate or a jump starts a segment. */
struct fake_clock {
	uint64_t hz;
	uint64_t tsc;
	uint64_t seg_tsc;
	uint64_t seg_ns;
	int64_t ppb;
};

/* A sample's line published at its own counter, without the machine's
 * slope: what most cases here take. */
static enum calib_outcome calib_cpu_update(struct calib_cpu *cpu, const struct calib_sample *sample,
					   uint64_t next_interval_ns)
{
	return calib_cpu_update_at(cpu, sample, next_interval_ns, 0, sample->tsc);
}

/* The same, with the machine's slope shared_mult. */
static enum calib_outcome calib_cpu_update_shared(struct calib_cpu *cpu,
						  const struct calib_sample *sample,
						  uint64_t next_interval_ns, uint64_t shared_mult)
{
	return calib_cpu_update_at(cpu, sample, next_interval_ns, shared_mult, sample->tsc);
}

static const uint64_t calib_test_hz[] = { 2000000000ull, 2600000000ull, 3700000000ull };
/* 3 TSC rates x 3 TSC starts x 2 kernel starts, for loop tests. */
#define CALIB_CASES 18

/* Sets up case index for a run of at most horizon_s seconds: the TSC starts
 * at 0, near 2^40 or so that it ends a few seconds short of 2^64; the kernel
 * starts near 0 or so that it crosses 2^63 halfway. */
static void fake_init(struct fake_clock *fake, int index, uint64_t horizon_s)
{
	memset(fake, 0, sizeof *fake);
	fake->hz = calib_test_hz[index % 3];
	switch ((index / 3) % 3) {
	case 0: fake->tsc = 0; break;
	case 1: fake->tsc = (1ull << 40) + 123457; break;
	default: fake->tsc = UINT64_MAX - (horizon_s + 3) * fake->hz; break;
	}
	fake->seg_tsc = fake->tsc;
	fake->seg_ns = index / 9 == 0 ? 1000 : (1ull << 63) - horizon_s / 2 * NS_PER_SEC;
}

/* The kernel clock at tsc, which must lie in the current segment. */
static uint64_t fake_kernel_at(const struct fake_clock *fake, uint64_t tsc)
{
	unsigned __int128 ticks = tsc - fake->seg_tsc;
	uint64_t rate = (uint64_t)((int64_t)NS_PER_SEC + fake->ppb);

	return fake->seg_ns + (uint64_t)(ticks * rate / fake->hz);
}

static uint64_t fake_now(const struct fake_clock *fake)
{
	return fake_kernel_at(fake, fake->tsc);
}

/* Lets the kernel clock advance by ns at the current rate. */
static void fake_advance(struct fake_clock *fake, uint64_t ns)
{
	unsigned __int128 ticks = (unsigned __int128)ns * fake->hz;
	uint64_t rate = (uint64_t)((int64_t)NS_PER_SEC + fake->ppb);
	uint64_t dticks = (uint64_t)(ticks / rate);

	ck_assert_msg(fake->tsc + dticks > fake->tsc, "the test's TSC wrapped: horizon too short");
	fake->tsc += dticks;
}

/* The kernel clock runs ppb parts per billion fast from now on (NTP slewing). */
static void fake_set_ppb(struct fake_clock *fake, int64_t ppb)
{
	fake->seg_ns = fake_now(fake);
	fake->seg_tsc = fake->tsc;
	fake->ppb = ppb;
}

/* The kernel clock jumps ahead by ns while the TSC stands still. */
static void fake_jump_kernel(struct fake_clock *fake, uint64_t ns)
{
	fake->seg_ns = fake_now(fake) + ns;
	fake->seg_tsc = fake->tsc;
}

/* The TSC jumps ahead by ticks while the kernel clock stands still (a resume). */
static void fake_jump_tsc(struct fake_clock *fake, uint64_t ticks)
{
	fake->seg_ns = fake_now(fake);
	fake->tsc += ticks;
	fake->seg_tsc = fake->tsc;
}

/* The TSC restarts from tsc while the kernel clock carries on (a reset). */
static void fake_reset_tsc(struct fake_clock *fake, uint64_t tsc)
{
	fake->seg_ns = fake_now(fake);
	fake->tsc = tsc;
	fake->seg_tsc = tsc;
}

/* A sandwich taken now whose midpoint is off by noise_ns. */
static struct calib_sample fake_sample(const struct fake_clock *fake, int64_t noise_ns,
				       uint64_t width_ns)
{
	struct calib_sample sample = {
		.tsc = fake->tsc,
		.ns = fake_now(fake) + (uint64_t)noise_ns,
		.width_ns = width_ns,
	};
	return sample;
}

/* The mult that describes the kernel's current rate exactly, rounded down. */
static uint64_t fake_ideal_mult(const struct fake_clock *fake)
{
	uint64_t rate = (uint64_t)((int64_t)NS_PER_SEC + fake->ppb);

	return (uint64_t)(((unsigned __int128)rate << 64) / fake->hz);
}

/* The line minus the kernel clock, now. */
static int64_t fake_line_error(const struct fake_clock *fake, struct calib_line line)
{
	return (int64_t)(calib_line_eval(line, fake->tsc) - fake_now(fake));
}

static bool calib_within_ppb(uint64_t mult, uint64_t ideal, uint64_t ppb)
{
	uint64_t diff = mult > ideal ? mult - ideal : ideal - mult;

	return (unsigned __int128)diff * NS_PER_SEC <= (unsigned __int128)ideal * ppb;
}

static uint64_t calib_abs(int64_t v)
{
	return v < 0 ? -(uint64_t)v : (uint64_t)v;
}

/* A deterministic generator for the noise: splitmix64. */
static uint64_t calib_random(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Updates cpu with sample, checking what every outcome promises: a continued
 * line meets the old one at the sample (no jump, no step back across it); a
 * rejected sample changes nothing; a stepped line passes through the sample. */
static enum calib_outcome calib_update_checked(struct calib_cpu *cpu,
					       const struct calib_sample *sample, uint64_t hz)
{
	struct calib_cpu before;
	enum calib_outcome outcome;

	memcpy(&before, cpu, sizeof before);
	outcome = calib_cpu_update(cpu, sample, INTERVAL_NS);
	switch (outcome) {
	case CALIB_CONTINUED: {
		static const uint64_t steps[] = { 1, 1000 };
		uint64_t old_ns = calib_line_eval(before.line, sample->tsc);
		uint64_t new_ns = calib_line_eval(cpu->line, sample->tsc);

		ck_assert_msg(calib_abs((int64_t)(new_ns - old_ns)) <= 1,
			      "the line jumped by %lld ns at tsc %llu",
			      (long long)(new_ns - old_ns), (unsigned long long)sample->tsc);
		for (unsigned i = 0; i < 3; i++) {
			uint64_t d = i < 2 ? steps[i] : hz / 1000;
			uint64_t just_before = calib_line_eval(before.line, sample->tsc - d);
			uint64_t just_after = calib_line_eval(cpu->line, sample->tsc + d);

			ck_assert_msg((int64_t)(just_after - just_before) >= 0,
				      "time went back across the switch by %lld ns",
				      (long long)(just_before - just_after));
		}
		break;
	}
	case CALIB_REJECTED:
		ck_assert_msg(memcmp(&before, cpu, sizeof before) == 0,
			      "a rejected sample changed the state");
		break;
	case CALIB_STEPPED:
	case CALIB_FIRST_LINE:
		ck_assert_uint_eq(calib_line_eval(cpu->line, sample->tsc), sample->ns);
		break;
	case CALIB_NEED_MORE: ck_assert_uint_eq(cpu->line.mult, 0); break;
	}
	return outcome;
}

/* Takes the first two samples of a run, INTERVAL_NS apart, noise-free. */
static void calib_start(struct calib_cpu *cpu, struct fake_clock *fake)
{
	struct calib_sample sample;

	calib_cpu_reset(cpu);
	sample = fake_sample(fake, 0, 30);
	ck_assert_int_eq(calib_update_checked(cpu, &sample, fake->hz), CALIB_NEED_MORE);
	fake_advance(fake, INTERVAL_NS);
	sample = fake_sample(fake, 0, 30);
	ck_assert_int_eq(calib_update_checked(cpu, &sample, fake->hz), CALIB_FIRST_LINE);
}

/* The first sample only anchors; the second gives a line whose slope is right to 1 ppb. */
START_TEST(test_calib_first_line)
{
	struct fake_clock fake;
	struct calib_cpu cpu;
	struct calib_sample first, second;

	fake_init(&fake, _i, 10);
	calib_cpu_reset(&cpu);
	first = fake_sample(&fake, 0, 29);
	ck_assert_int_eq(calib_cpu_update(&cpu, &first, INTERVAL_NS), CALIB_NEED_MORE);
	ck_assert(cpu.has_anchor);
	ck_assert_uint_eq(cpu.line.mult, 0);

	fake_advance(&fake, INTERVAL_NS);
	second = fake_sample(&fake, 0, 31);
	ck_assert_int_eq(calib_cpu_update(&cpu, &second, INTERVAL_NS), CALIB_FIRST_LINE);
	ck_assert_msg(calib_within_ppb(cpu.line.mult, fake_ideal_mult(&fake), 1),
		      "slope %llx, expected %llx", (unsigned long long)cpu.line.mult,
		      (unsigned long long)fake_ideal_mult(&fake));
	ck_assert_uint_eq(cpu.slope_mult, cpu.line.mult);
	ck_assert_uint_eq(calib_line_eval(cpu.line, second.tsc), second.ns);
	ck_assert_uint_le(calib_abs((int64_t)(calib_line_eval(cpu.line, first.tsc) - first.ns)),
			  ROUNDING_NS);
	ck_assert_int_eq(cpu.last_error_ns, 0);
	ck_assert_uint_eq(cpu.narrowest_width_ns, 29);
}
END_TEST

/* Noise-free samples at a steady rate leave no error and keep the slope. */
START_TEST(test_calib_steady)
{
	struct fake_clock fake;
	struct calib_cpu cpu;

	fake_init(&fake, _i, 60);
	fake_set_ppb(&fake, 12345);
	calib_start(&cpu, &fake);
	for (unsigned k = 0; k < 10; k++) {
		struct calib_sample sample;

		fake_advance(&fake, INTERVAL_NS / 2);
		ck_assert_uint_le(calib_abs(fake_line_error(&fake, cpu.line)), ROUNDING_NS);
		fake_advance(&fake, INTERVAL_NS / 2);
		sample = fake_sample(&fake, 0, 30);
		ck_assert_int_eq(calib_update_checked(&cpu, &sample, fake.hz), CALIB_CONTINUED);
		ck_assert_uint_le(calib_abs(cpu.last_error_ns), ROUNDING_NS);
		ck_assert(calib_within_ppb(cpu.slope_mult, fake_ideal_mult(&fake), 1));
	}
}
END_TEST

/* The kernel's rate as NTP slews it, one entry per interval: the rate changes
 * at the interval's start or at its middle. */
struct calib_slew {
	int64_t ppb;
	bool at_middle;
};

/* clang-format off */
static const struct calib_slew calib_slews[] = {
	{ 0, false }, { 0, false }, { 0, false },
	{ 100000, true }, { 100000, false }, { 100000, false }, { 100000, false }, { 100000, false },
	{ -100000, false }, { -100000, false }, { -100000, false }, { -100000, false },
	{ 0, true }, { 0, false }, { 0, false }, { 0, false },
	{ 37000, false }, { 37000, false }, { 37000, false }, { 37000, false },
};
/* clang-format on */
#define CALIB_SLEW_COUNT (sizeof calib_slews / sizeof calib_slews[0])
/* The largest error the schedule can cause: 200 ppm over one interval. */
#define CALIB_SLEW_BOUND_NS (INTERVAL_NS / 5000u * 1001u / 1000u + ROUNDING_NS)

/* When the kernel's rate changes by 100 ppm the line follows without a step:
 * the error appears with the right sign and size, never grows while the rate
 * holds, and is gone once a whole interval has run at the new rate. */
START_TEST(test_calib_frequency_error)
{
	struct fake_clock fake;
	struct calib_cpu cpu;
	int64_t rate_before = 0;
	uint64_t previous_error = 0;
	bool previous_uniform = true;

	fake_init(&fake, _i, 10 + CALIB_SLEW_COUNT * 5);
	calib_start(&cpu, &fake);
	for (unsigned k = 0; k < CALIB_SLEW_COUNT; k++) {
		const struct calib_slew *slew = &calib_slews[k];
		bool changed = slew->ppb != rate_before;
		uint64_t at_new_rate = slew->at_middle ? INTERVAL_NS / 2 : INTERVAL_NS;
		struct calib_sample sample;
		uint64_t error;

		for (unsigned q = 0; q < 4; q++) {
			if (q == (slew->at_middle ? 2u : 0u))
				fake_set_ppb(&fake, slew->ppb);
			fake_advance(&fake, INTERVAL_NS / 4);
			ck_assert_uint_le(calib_abs(fake_line_error(&fake, cpu.line)),
					  CALIB_SLEW_BOUND_NS);
		}
		sample = fake_sample(&fake, 0, 30);
		ck_assert_int_eq(calib_update_checked(&cpu, &sample, fake.hz), CALIB_CONTINUED);
		error = calib_abs(cpu.last_error_ns);
		ck_assert_uint_le(error, CALIB_SLEW_BOUND_NS);
		if (changed) {
			/* Kernel ahead of the line when it speeds up, behind when it slows. */
			int64_t expected =
			    (int64_t)at_new_rate / 1000 * (slew->ppb - rate_before) / 1000000;

			ck_assert_msg((cpu.last_error_ns > 0) == (expected > 0),
				      "error %lld ns, expected about %lld",
				      (long long)cpu.last_error_ns, (long long)expected);
			ck_assert_uint_le(calib_abs(cpu.last_error_ns - expected),
					  calib_abs(expected) / 100 + ROUNDING_NS);
		} else {
			ck_assert_uint_le(error,
					  previous_error + previous_error / 1000 + ROUNDING_NS);
			if (previous_uniform)
				ck_assert_uint_le(error, ROUNDING_NS);
		}
		previous_uniform = !(changed && slew->at_middle);
		previous_error = error;
		rate_before = slew->ppb;
	}
	ck_assert_uint_le(previous_error, ROUNDING_NS);
	ck_assert(calib_within_ppb(cpu.slope_mult, fake_ideal_mult(&fake), 1));
}
END_TEST

/* Through noise, slews and both signs of error, every refresh continues the
 * line exactly where readers are, so time never jumps or goes back. */
START_TEST(test_calib_continuity)
{
	struct fake_clock fake;
	struct calib_cpu cpu;
	uint64_t seed = 0x5eed0000u + (uint64_t)_i;
	unsigned continued = 0;

	fake_init(&fake, _i, 10 + 60 * 5);
	calib_start(&cpu, &fake);
	for (unsigned k = 0; k < 60; k++) {
		int64_t noise = (int64_t)(calib_random(&seed) % 2001) - 1000;
		struct calib_sample sample;

		if (k % 7 == 3)
			fake_set_ppb(&fake, (int64_t)(calib_random(&seed) % 400001) - 200000);
		fake_advance(&fake, INTERVAL_NS - 1000 + calib_random(&seed) % 2001);
		sample = fake_sample(&fake, noise, 40);
		if (calib_update_checked(&cpu, &sample, fake.hz) == CALIB_CONTINUED)
			continued++;
	}
	/* The continuity checks above ran on (nearly) every sample. */
	ck_assert_uint_ge(continued, 55);
}
END_TEST

/* With +-20 ns of noise on each midpoint, the line stays within 3 x 20 ns of
 * the true clock at every sample and between them: the slope takes two noise
 * values and the bend one, L(k+1) = 2 e(k) - e(k-1), and the error between
 * two samples is linear. */
START_TEST(test_calib_noise)
{
	struct fake_clock fake;
	struct calib_cpu cpu;
	uint64_t seed = 0xfeedu + (uint64_t)_i;
	uint64_t worst = 0;
	const uint64_t bound = 3 * NOISE_NS + ROUNDING_NS + 2;

	fake_init(&fake, _i, 10 + 200 * 5);
	fake_set_ppb(&fake, -23000);
	calib_start(&cpu, &fake);
	for (unsigned k = 0; k < 200; k++) {
		int64_t noise = (int64_t)(calib_random(&seed) % (2 * NOISE_NS + 1)) - NOISE_NS;
		struct calib_sample sample;

		for (unsigned q = 0; q < 4; q++) {
			uint64_t error;

			fake_advance(&fake, INTERVAL_NS / 4);
			error = calib_abs(fake_line_error(&fake, cpu.line));
			ck_assert_uint_le(error, bound);
			worst = error > worst ? error : worst;
		}
		sample = fake_sample(&fake, noise, 2 * NOISE_NS);
		ck_assert_int_eq(calib_update_checked(&cpu, &sample, fake.hz), CALIB_CONTINUED);
	}
	/* The noise was there to be absorbed: the line did not stay exact. */
	ck_assert_uint_gt(worst, NOISE_NS / 2);
	/* Two noise values over one interval: at most 2 x 20 ns / 5 s = 8 ppb. */
	ck_assert(calib_within_ppb(cpu.slope_mult, fake_ideal_mult(&fake), 10));
}
END_TEST

/* A sandwich wider than CALIB_MAX_WIDTH_NS is rejected and leaves no trace,
 * whatever it says; one exactly that wide is used. */
START_TEST(test_calib_outlier)
{
	struct fake_clock fake;
	struct calib_cpu cpu;
	struct calib_sample sample;

	fake_init(&fake, _i, 40);
	calib_cpu_reset(&cpu);
	sample = fake_sample(&fake, 0, CALIB_MAX_WIDTH_NS + 1);
	ck_assert_int_eq(calib_update_checked(&cpu, &sample, fake.hz), CALIB_REJECTED);
	ck_assert(!cpu.has_anchor);
	calib_start(&cpu, &fake);

	fake_advance(&fake, INTERVAL_NS);
	sample = fake_sample(&fake, 1000000, CALIB_MAX_WIDTH_NS + 1);
	ck_assert_int_eq(calib_update_checked(&cpu, &sample, fake.hz), CALIB_REJECTED);
	sample = fake_sample(&fake, 0, UINT64_MAX);
	ck_assert_int_eq(calib_update_checked(&cpu, &sample, fake.hz), CALIB_REJECTED);
	ck_assert_uint_eq(cpu.narrowest_width_ns, 30);

	fake_advance(&fake, INTERVAL_NS);
	sample = fake_sample(&fake, 0, CALIB_MAX_WIDTH_NS);
	ck_assert_int_eq(calib_update_checked(&cpu, &sample, fake.hz), CALIB_CONTINUED);
	ck_assert_uint_le(calib_abs(cpu.last_error_ns), ROUNDING_NS);
	ck_assert(calib_within_ppb(cpu.slope_mult, fake_ideal_mult(&fake), 1));
}
END_TEST

/* After a step, the next sample at the normal rate continues the line with no
 * error and the trusted slope. */
static void calib_check_recovers(struct calib_cpu *cpu, struct fake_clock *fake)
{
	for (unsigned k = 0; k < 3; k++) {
		struct calib_sample sample;

		fake_advance(fake, INTERVAL_NS);
		sample = fake_sample(fake, 0, 30);
		ck_assert_int_eq(calib_update_checked(cpu, &sample, fake->hz), CALIB_CONTINUED);
		ck_assert_uint_le(calib_abs(cpu->last_error_ns), ROUNDING_NS);
		ck_assert(calib_within_ppb(cpu->slope_mult, fake_ideal_mult(fake), 1));
	}
}

/* The next interval's sample, with jump(fake, by) made halfway through it. */
static struct calib_sample calib_sample_after_jump(struct fake_clock *fake,
						   void (*jump)(struct fake_clock *, uint64_t),
						   uint64_t by)
{
	fake_advance(fake, INTERVAL_NS / 2);
	jump(fake, by);
	fake_advance(fake, INTERVAL_NS / 2);
	return fake_sample(fake, 0, 30);
}

/* A kernel clock that jumps ahead by 2 s within a 5 s interval (40 %, more
 * than its rate can move) is stepped to, not slewed: the line passes through
 * the new sample with the slope it had. A jump of 1 s there would be 20 %:
 * a rate the kernel may run at (the tick's +-10 %), followed as one. */
START_TEST(test_calib_kernel_jump)
{
	struct fake_clock fake;
	struct calib_cpu cpu;
	struct calib_sample sample;
	uint64_t trusted;

	fake_init(&fake, _i, 60);
	calib_start(&cpu, &fake);
	trusted = cpu.slope_mult;
	sample = calib_sample_after_jump(&fake, fake_jump_kernel, 2 * NS_PER_SEC);
	ck_assert_int_eq(calib_update_checked(&cpu, &sample, fake.hz), CALIB_STEPPED);
	ck_assert_uint_eq(calib_line_eval(cpu.line, sample.tsc), sample.ns);
	ck_assert_uint_eq(cpu.line.mult, trusted);
	calib_check_recovers(&cpu, &fake);
}
END_TEST

/* A resume (the TSC ran 100 s while the kernel's monotonic clock did not)
 * steps the line onto the new sample; the slope survives. */
START_TEST(test_calib_resume)
{
	struct fake_clock fake;
	struct calib_cpu cpu;
	struct calib_sample sample;
	uint64_t trusted;

	fake_init(&fake, _i, 160);
	calib_start(&cpu, &fake);
	trusted = cpu.slope_mult;
	sample = calib_sample_after_jump(&fake, fake_jump_tsc, 100 * fake.hz);
	ck_assert_int_eq(calib_update_checked(&cpu, &sample, fake.hz), CALIB_STEPPED);
	ck_assert_uint_eq(calib_line_eval(cpu.line, sample.tsc), sample.ns);
	ck_assert_uint_eq(cpu.line.mult, trusted);
	calib_check_recovers(&cpu, &fake);
}
END_TEST

/* A TSC that goes back (reset) re-anchors: before a line exists it waits for
 * another sample, afterwards it steps onto the new sample; either way the
 * calibration goes on. */
START_TEST(test_calib_tsc_backwards)
{
	struct fake_clock fake;
	struct calib_cpu cpu;
	struct calib_sample sample;
	uint64_t trusted;

	fake_init(&fake, _i, 80);
	calib_cpu_reset(&cpu);
	fake_advance(&fake, INTERVAL_NS);
	sample = fake_sample(&fake, 0, 30);
	ck_assert_int_eq(calib_update_checked(&cpu, &sample, fake.hz), CALIB_NEED_MORE);
	fake_advance(&fake, INTERVAL_NS);
	fake_reset_tsc(&fake, 1000);
	sample = fake_sample(&fake, 0, 30);
	ck_assert_int_eq(calib_update_checked(&cpu, &sample, fake.hz), CALIB_NEED_MORE);
	ck_assert_uint_eq(cpu.anchor.tsc, 1000);
	fake_advance(&fake, INTERVAL_NS);
	sample = fake_sample(&fake, 0, 30);
	ck_assert_int_eq(calib_update_checked(&cpu, &sample, fake.hz), CALIB_FIRST_LINE);
	ck_assert(calib_within_ppb(cpu.line.mult, fake_ideal_mult(&fake), 1));

	trusted = cpu.slope_mult;
	fake_advance(&fake, INTERVAL_NS);
	fake_reset_tsc(&fake, 5000);
	sample = fake_sample(&fake, 0, 30);
	ck_assert_int_eq(calib_update_checked(&cpu, &sample, fake.hz), CALIB_STEPPED);
	ck_assert_uint_eq(cpu.line.mult, trusted);
	calib_check_recovers(&cpu, &fake);

	/* A TSC that did not move at all is no basis for a slope either. */
	trusted = cpu.slope_mult;
	sample.ns += 1000;
	ck_assert_int_eq(calib_update_checked(&cpu, &sample, fake.hz), CALIB_STEPPED);
	ck_assert_uint_eq(cpu.line.mult, trusted);
}
END_TEST

/* A TSC at or below 1 GHz cannot be expressed as a 0.64 fraction: every
 * sample is rejected and no line ever appears; just above 1 GHz is fine. */
START_TEST(test_calib_slow_tsc)
{
	static const uint64_t slow[] = { 900000000ull, 1000000000ull };
	struct fake_clock fake;
	struct calib_cpu cpu;
	struct calib_sample sample;

	for (unsigned i = 0; i < 2; i++) {
		fake_init(&fake, 3, 40);
		fake.hz = slow[i];
		calib_cpu_reset(&cpu);
		sample = fake_sample(&fake, 0, 30);
		ck_assert_int_eq(calib_cpu_update(&cpu, &sample, INTERVAL_NS), CALIB_NEED_MORE);
		for (unsigned k = 0; k < 4; k++) {
			fake_advance(&fake, INTERVAL_NS);
			sample = fake_sample(&fake, 0, 30);
			ck_assert_int_eq(calib_cpu_update(&cpu, &sample, INTERVAL_NS),
					 CALIB_REJECTED);
			ck_assert_uint_eq(cpu.line.mult, 0);
		}
	}
	fake_init(&fake, 3, 40);
	fake.hz = 1000001000ull;
	calib_start(&cpu, &fake);
	ck_assert(calib_within_ppb(cpu.line.mult, fake_ideal_mult(&fake), 1));
}
END_TEST

/* A kernel jump of 3 ms within 5 s (600 ppm) cannot be told from a rate the
 * kernel may run at: it is followed as one, never stepped, and no sample
 * ever steps the line back. The rate learned across it is 600 ppm fast for
 * one interval; the sample after that finds the line ahead and pays it back
 * by running slower, and the next finds nothing left. */
START_TEST(test_calib_medium_kernel_jump)
{
	struct fake_clock fake;
	struct calib_cpu cpu;
	struct calib_sample sample;

	fake_init(&fake, _i, 60);
	calib_start(&cpu, &fake);
	fake_advance(&fake, INTERVAL_NS / 2);
	fake_jump_kernel(&fake, 3000000);
	fake_advance(&fake, INTERVAL_NS / 2);
	sample = fake_sample(&fake, 0, 30);
	ck_assert_int_eq(calib_update_checked(&cpu, &sample, fake.hz), CALIB_CONTINUED);
	for (unsigned k = 0; k < 3; k++) {
		struct calib_line old = cpu.line;
		int64_t moved;

		fake_advance(&fake, INTERVAL_NS);
		sample = fake_sample(&fake, 0, 30);
		ck_assert_int_eq(calib_update_checked(&cpu, &sample, fake.hz), CALIB_CONTINUED);
		moved = (int64_t)(calib_line_eval(cpu.line, sample.tsc) -
				  calib_line_eval(old, sample.tsc));
		ck_assert_msg(moved >= 0, "sample %u stepped the line back by %lld ns", k,
			      (long long)-moved);
	}
	ck_assert_uint_le(calib_abs(cpu.last_error_ns), ROUNDING_NS);
	ck_assert(calib_within_ppb(cpu.line.mult, fake_ideal_mult(&fake), 1));
}
END_TEST

/* A kernel clock that jumps further ahead than the TSC's ticks in the
 * interval can express (20 s in a 5 s interval) is a discontinuity like any
 * other: the line steps onto the sample at once rather than rejecting it
 * (more ns than ticks since the anchor is not a slower TSC here). */
START_TEST(test_calib_large_kernel_jump)
{
	struct fake_clock fake;
	struct calib_cpu cpu;
	struct calib_sample sample;

	fake_init(&fake, _i, 80);
	calib_start(&cpu, &fake);
	sample = calib_sample_after_jump(&fake, fake_jump_kernel, 20 * NS_PER_SEC);
	ck_assert_int_eq(calib_update_checked(&cpu, &sample, fake.hz), CALIB_STEPPED);
	calib_check_recovers(&cpu, &fake);
}
END_TEST

/* The narrowest sandwich wins; among equals, the first. */
START_TEST(test_calib_narrowest)
{
	struct calib_sample samples[] = {
		{ .width_ns = 30 },
		{ .width_ns = 20 },
		{ .width_ns = 25 },
		{ .width_ns = 20 },
	};
	struct calib_sample last[] = { { .width_ns = 9 }, { .width_ns = 8 }, { .width_ns = 7 } };

	ck_assert_uint_eq(calib_narrowest(samples, 4), 1);
	ck_assert_uint_eq(calib_narrowest(samples, 1), 0);
	ck_assert_uint_eq(calib_narrowest(last, 3), 2);
	ck_assert_uint_eq(calib_narrowest(last, 2), 1);
}
END_TEST

/* mult is ns per tick as a 0.64 fraction, rounded down; 0 for no line. */
START_TEST(test_calib_mult_from)
{
	ck_assert_uint_eq(calib_mult_from(1, 2), 1ull << 63);
	ck_assert_uint_eq(calib_mult_from(1, 4), 1ull << 62);
	ck_assert_uint_eq(calib_mult_from(3, 4), 3ull << 62);
	ck_assert_uint_eq(calib_mult_from(1, 3), 0x5555555555555555ull);
	ck_assert_uint_eq(calib_mult_from(5 * NS_PER_SEC, 13 * NS_PER_SEC),
			  (uint64_t)(((unsigned __int128)5 << 64) / 13));
	ck_assert_uint_eq(calib_mult_from(UINT64_MAX - 1, UINT64_MAX), UINT64_MAX - 1);
	ck_assert_uint_eq(calib_mult_from(7, 0), 0);
	ck_assert_uint_eq(calib_mult_from(0, 0), 0);
	ck_assert_uint_eq(calib_mult_from(5, 5), 0);
	ck_assert_uint_eq(calib_mult_from(6, 5), 0);
}
END_TEST

/* Ticks for a span of ns at mult's rate, rounded down, saturating. */
START_TEST(test_calib_line_ticks_for_ns)
{
	ck_assert_uint_eq(calib_line_ticks_for_ns(1ull << 63, NS_PER_SEC), 2 * NS_PER_SEC);
	ck_assert_uint_eq(calib_line_ticks_for_ns(1ull << 62, 5), 20);
	ck_assert_uint_eq(calib_line_ticks_for_ns(0x5555555555555555ull, 1), 3);
	ck_assert_uint_eq(calib_line_ticks_for_ns(1ull << 63, 0), 0);
	ck_assert_uint_eq(calib_line_ticks_for_ns(0, NS_PER_SEC), 0);
	ck_assert_uint_eq(calib_line_ticks_for_ns(1, UINT64_MAX), UINT64_MAX);
	ck_assert_uint_eq(calib_line_ticks_for_ns(1ull << 63, UINT64_MAX), UINT64_MAX);
	/* The quotient's edge: 2^64 - 1 ticks and just beyond. */
	ck_assert_uint_eq(calib_line_ticks_for_ns(1000, 999), 18428297329635842064ull);
	ck_assert_uint_eq(calib_line_ticks_for_ns(1000, 1000), UINT64_MAX);
	ck_assert_uint_eq(calib_line_ticks_for_ns(UINT64_MAX, UINT64_MAX - 1), UINT64_MAX - 1);
	for (unsigned i = 0; i < 3; i++) {
		uint64_t hz = calib_test_hz[i];
		uint64_t ticks =
		    calib_line_ticks_for_ns(calib_mult_from(NS_PER_SEC, hz), NS_PER_SEC);

		ck_assert_uint_ge(ticks, hz);
		ck_assert_uint_le(ticks, hz + 1);
	}
}
END_TEST

/* The realtime offset comes from the narrowest valid triple's midpoint; a
 * triple whose monotonic readings went back is ignored. */
START_TEST(test_calib_realtime_offset)
{
	const uint64_t real0 = 1700000000ull * NS_PER_SEC;
	struct calib_offset_sample samples[] = {
		{ 1000, real0 + 1050, 1100 },
		{ 2000, real0 + 2777, 2003 }, /* narrowest: width 3, midpoint 2001 */
		{ 3000, real0 + 3000, 2999 }, /* went back: ignored */
		{ 4000, real0 + 4001, 4003 }, /* as narrow as the second: not better */
	};
	struct calib_offset_sample backwards[] = { { 10, 5, 9 }, { 10, 5, 0 } };
	struct calib_offset_sample behind[] = { { 10, 5, 12 } };
	uint64_t offset = 42, width = 43;

	ck_assert(calib_realtime_offset(samples, 4, &offset, &width));
	ck_assert_uint_eq(offset, real0 + 776);
	ck_assert_uint_eq(width, 3);
	ck_assert(calib_realtime_offset(samples, 1, &offset, &width));
	ck_assert_uint_eq(offset, real0);
	ck_assert_uint_eq(width, 100);

	offset = 42;
	width = 43;
	ck_assert(!calib_realtime_offset(backwards, 2, &offset, &width));
	ck_assert(!calib_realtime_offset(samples, 0, &offset, &width));
	ck_assert_uint_eq(offset, 42);
	ck_assert_uint_eq(width, 43);

	/* Realtime behind monotonic: the offset is negative, modulo 2^64. */
	ck_assert(calib_realtime_offset(behind, 1, &offset, &width));
	ck_assert_uint_eq(offset, (uint64_t)-6);
	ck_assert_uint_eq(width, 2);
}
END_TEST

/* A first line waits until the sandwiches' widths leave at most 4 ppm of
 * slope error: wide sandwiches 10 ms apart keep the first anchor and publish
 * nothing; 200 ms apart they make the line. */
START_TEST(test_calib_first_line_waits_for_baseline)
{
	struct calib_cpu cpu;
	struct calib_sample first = { .tsc = 1000000, .ns = 5000000, .width_ns = 400 };
	struct calib_sample soon = { .tsc = 1000000 + 20000000,
				     .ns = 5000000 + 10000000,
				     .width_ns = 400 };
	struct calib_sample later = { .tsc = 1000000 + 400000000,
				      .ns = 5000000 + 200000000,
				      .width_ns = 400 };

	calib_cpu_reset(&cpu);
	ck_assert_int_eq(calib_cpu_update(&cpu, &first, 10000000), CALIB_NEED_MORE);
	ck_assert_int_eq(calib_cpu_update(&cpu, &soon, 40000000), CALIB_NEED_MORE);
	ck_assert_uint_eq(cpu.line.mult, 0);
	ck_assert_uint_eq(cpu.anchor.tsc, first.tsc);
	ck_assert_int_eq(calib_cpu_update(&cpu, &later, 160000000), CALIB_FIRST_LINE);
	ck_assert_uint_eq(calib_line_eval(cpu.line, later.tsc), later.ns);
}
END_TEST

/* A round called early (a reader on a CPU without a line) samples a line
 * 5 ms after its last sample, with sandwiches of 350 ns (a kernel clock
 * that is a system call) whose midpoint lies at an edge: the rate from
 * there is 35 ppm off, within what the widths explain, so the learned rate
 * and its anchor stay, and 40 ms on the line is still within the sample's
 * noise of the kernel's clock (at the measured rate it would be 1.4 us
 * off). A rate that moved beyond the noise (a slew of 5,000 ppm) is
 * learned from the same short baseline at once. */
START_TEST(test_calib_early_round_keeps_rate)
{
	struct fake_clock fake;
	struct calib_cpu cpu;
	struct calib_sample sample, regular;
	uint64_t learned;

	fake_init(&fake, _i, 30);
	calib_start(&cpu, &fake);
	fake_advance(&fake, INTERVAL_NS);
	regular = fake_sample(&fake, 0, 350);
	ck_assert_int_eq(calib_update_checked(&cpu, &regular, fake.hz), CALIB_CONTINUED);
	learned = cpu.slope_mult;
	ck_assert_uint_eq(cpu.anchor.tsc, regular.tsc);

	fake_advance(&fake, 5000000);
	sample = fake_sample(&fake, 175, 350);
	ck_assert_int_eq(calib_update_checked(&cpu, &sample, fake.hz), CALIB_CONTINUED);
	ck_assert_uint_eq(cpu.slope_mult, learned);
	ck_assert_uint_eq(cpu.anchor.tsc, regular.tsc);
	fake_advance(&fake, 40000000);
	ck_assert_msg(
	    calib_abs(fake_line_error(&fake, cpu.line)) <= 175 + ROUNDING_NS,
	    "an early round's rate moved the line %lld ns from the kernel's clock in 40 ms",
	    (long long)fake_line_error(&fake, cpu.line));

	fake_set_ppb(&fake, 5000000);
	fake_advance(&fake, 5000000);
	sample = fake_sample(&fake, 0, 350);
	ck_assert_int_eq(calib_update_checked(&cpu, &sample, fake.hz), CALIB_CONTINUED);
	ck_assert_uint_eq(cpu.anchor.tsc, sample.tsc);
	ck_assert_uint_ne(cpu.slope_mult, learned);
}
END_TEST

/* calib_first_line_due_ns says when the first line can come: a sample as
 * wide as the anchor's taken then makes it, one taken a nanosecond before
 * does not. With 1.2 us sandwiches (a kernel clock that is a system call)
 * that is 300 ms after the anchor. No anchor, or a line, gives 0. */
START_TEST(test_calib_first_line_due)
{
	const uint64_t width = 1200, hz_ticks_per_ns = 2;
	struct calib_sample first = { .tsc = 7000000, .ns = 3000000, .width_ns = width };
	struct calib_sample early, due;
	struct calib_cpu cpu;
	uint64_t at;

	calib_cpu_reset(&cpu);
	ck_assert_uint_eq(calib_first_line_due_ns(&cpu), 0);
	ck_assert_int_eq(calib_cpu_update(&cpu, &first, 10000000), CALIB_NEED_MORE);
	at = calib_first_line_due_ns(&cpu);
	ck_assert_uint_eq(at - first.ns, 300000000);

	early = first;
	early.ns = at - 1;
	early.tsc = first.tsc + (early.ns - first.ns) * hz_ticks_per_ns;
	ck_assert_int_eq(calib_cpu_update(&cpu, &early, 10000000), CALIB_NEED_MORE);
	ck_assert_uint_eq(calib_first_line_due_ns(&cpu), at);

	due = first;
	due.ns = at;
	due.tsc = first.tsc + (due.ns - first.ns) * hz_ticks_per_ns;
	ck_assert_int_eq(calib_cpu_update(&cpu, &due, 10000000), CALIB_FIRST_LINE);
	ck_assert_uint_eq(calib_first_line_due_ns(&cpu), 0);
}
END_TEST

/* Two CPUs' young lines, as the refresh thread draws them: each round both
 * are sampled, the least uncertain slope is the machine's, and both lines
 * use it. Their first samples carry opposite noise of half the sandwich,
 * which makes their own slopes 6.7 ppm apart; drawn with their own slopes the
 * two lines would part by about 300 ns within 40 ms, and a timestamp handed
 * from one CPU to the other would run backwards. Drawn with one slope they
 * disagree by no more than the sandwiches' noise, at every point of the
 * following interval. */
static void calib_shared_round(struct calib_cpu cpus[2], const struct calib_sample samples[2],
			       uint64_t next_interval_ns, enum calib_outcome expected)
{
	uint64_t shared = 0, best = UINT64_MAX;
	unsigned narrowest = samples[1].width_ns < samples[0].width_ns ? 1 : 0;

	for (unsigned i = 0; i < 2; i++) {
		uint64_t mult, uncertainty;

		if (calib_slope_estimate(&cpus[i], &samples[i], &mult, &uncertainty) &&
		    uncertainty < best) {
			best = uncertainty;
			shared = mult;
		}
	}
	for (unsigned i = 0; i < 2; i++) {
		struct calib_sample aimed =
		    calib_sample_toward(samples[i], samples[narrowest], shared);

		ck_assert_int_eq(
		    calib_cpu_update_shared(&cpus[i], &aimed, next_interval_ns, shared), expected);
	}
}

/* Over the next span (nine points, its ends included), the two CPUs' lines
 * never differ by more than bound_ns; the clock moves on by span. */
static void calib_assert_lines_agree(const struct calib_cpu cpus[2], struct fake_clock *fake,
				     uint64_t span, uint64_t bound_ns)
{
	for (unsigned step = 0; step <= 8; step++) {
		if (step > 0)
			fake_advance(fake, span / 8);
		ck_assert_uint_le(calib_abs((int64_t)(calib_line_eval(cpus[0].line, fake->tsc) -
						      calib_line_eval(cpus[1].line, fake->tsc))),
				  bound_ns);
	}
}

START_TEST(test_calib_shared_slope)
{
	const uint64_t width = 50, baseline = 15000000, next = 40000000, after = 160000000;
	const int64_t half = (int64_t)width / 2;
	struct fake_clock fake;
	struct calib_cpu cpus[2];
	struct calib_sample samples[2];

	fake_init(&fake, _i, 10);
	calib_cpu_reset(&cpus[0]);
	calib_cpu_reset(&cpus[1]);
	samples[0] = fake_sample(&fake, half, width);
	samples[1] = fake_sample(&fake, -half, width);
	calib_shared_round(cpus, samples, baseline, CALIB_NEED_MORE);
	fake_advance(&fake, baseline);
	samples[0] = fake_sample(&fake, -half, width);
	samples[1] = fake_sample(&fake, half, width);
	calib_shared_round(cpus, samples, next, CALIB_FIRST_LINE);
	ck_assert_uint_eq(cpus[0].line.mult, cpus[1].line.mult);
	ck_assert_uint_ne(cpus[0].slope_mult, cpus[1].slope_mult);

	calib_assert_lines_agree(cpus, &fake, next, width + ROUNDING_NS);
	samples[0] = fake_sample(&fake, 0, width);
	samples[1] = fake_sample(&fake, 0, width);
	calib_shared_round(cpus, samples, after, CALIB_CONTINUED);
	calib_assert_lines_agree(cpus, &fake, after, width + ROUNDING_NS);
}
END_TEST

/* A CPU whose sandwiches were all widened (preempted, a busy host) has a
 * midpoint far from the truth; aimed within its sandwich at the narrowest
 * one, its line still agrees with the other CPU's to within that one's
 * noise, not its own. Drawn through its own midpoint it would be 900 ns
 * off. */
START_TEST(test_calib_wide_sandwich_aimed)
{
	const uint64_t narrow = 40, wide = 2000, baseline = 20000000, next = 40000000;
	struct fake_clock fake;
	struct calib_cpu cpus[2];
	struct calib_sample samples[2];

	fake_init(&fake, _i, 10);
	calib_cpu_reset(&cpus[0]);
	calib_cpu_reset(&cpus[1]);
	samples[0] = fake_sample(&fake, 0, narrow);
	samples[1] = fake_sample(&fake, 0, narrow);
	calib_shared_round(cpus, samples, baseline, CALIB_NEED_MORE);
	fake_advance(&fake, baseline);
	samples[0] = fake_sample(&fake, 0, narrow);
	samples[1] = fake_sample(&fake, 0, narrow);
	calib_shared_round(cpus, samples, next, CALIB_FIRST_LINE);
	fake_advance(&fake, next);
	samples[0] = fake_sample(&fake, 5, narrow);
	fake_advance(&fake, 20000);
	samples[1] = fake_sample(&fake, 900, wide);
	calib_shared_round(cpus, samples, next, CALIB_CONTINUED);
	calib_assert_lines_agree(cpus, &fake, next, narrow + ROUNDING_NS);
}
END_TEST

/* Aiming moves a midpoint to the reference's value where the sandwich
 * contains it, to the sandwich's edge where it does not, backwards in the
 * counter as well as forwards, and not at all without a slope. */
START_TEST(test_calib_sample_toward)
{
	const uint64_t mult = 1ull << 63; /* 0.5 ns per tick */
	struct calib_sample reference = { .tsc = 1000000, .ns = 5000000, .width_ns = 30 };
	struct calib_sample sample = { .tsc = 1000200, .ns = 5000120, .width_ns = 100 };
	struct calib_sample moved;

	moved = calib_sample_toward(sample, reference, mult);
	ck_assert_uint_eq(moved.ns, 5000100);
	ck_assert_uint_eq(moved.tsc, sample.tsc);
	ck_assert_uint_eq(moved.width_ns, sample.width_ns);
	sample.ns = 5000400;
	ck_assert_uint_eq(calib_sample_toward(sample, reference, mult).ns, 5000350);
	sample.ns = 4999900;
	ck_assert_uint_eq(calib_sample_toward(sample, reference, mult).ns, 4999950);
	sample.tsc = 999800;
	sample.ns = 4999880;
	ck_assert_uint_eq(calib_sample_toward(sample, reference, mult).ns, 4999900);
	ck_assert_uint_eq(calib_sample_toward(sample, reference, 0).ns, 4999880);
}
END_TEST

/* Two samples agree where the reference, extended at the slope, lands
 * within half of each sandwich plus the slack of the sample's midpoint,
 * on either side and across the counter either way; not beyond, and never
 * without a slope. */
START_TEST(test_calib_sample_agrees)
{
	const uint64_t mult = 1ull << 63; /* 0.5 ns per tick */
	struct calib_sample reference = { .tsc = 1000000, .ns = 5000000, .width_ns = 30 };
	struct calib_sample sample = { .tsc = 1000200, .ns = 5000100, .width_ns = 50 };

	/* Exactly where the reference puts it, then at the edge (15 + 25 + 10). */
	ck_assert(calib_sample_agrees(sample, reference, mult, 10));
	sample.ns = 5000100 + 50;
	ck_assert(calib_sample_agrees(sample, reference, mult, 10));
	sample.ns = 5000100 + 51;
	ck_assert(!calib_sample_agrees(sample, reference, mult, 10));
	ck_assert(calib_sample_agrees(sample, reference, mult, 11));
	sample.ns = 5000100 - 50;
	ck_assert(calib_sample_agrees(sample, reference, mult, 10));
	sample.ns = 5000100 - 51;
	ck_assert(!calib_sample_agrees(sample, reference, mult, 10));
	/* A counter read before the reference's, and one a microsecond off. */
	sample.tsc = 999000;
	sample.ns = 4999500;
	ck_assert(calib_sample_agrees(sample, reference, mult, 0));
	sample.ns = 4999500 + 1000;
	ck_assert(!calib_sample_agrees(sample, reference, mult, 100));
	sample.ns = 4999500;
	ck_assert(!calib_sample_agrees(sample, reference, 0, 100));
}
END_TEST

/* A CPU whose own rate differs from the machine's by more than sandwich
 * noise explains keeps its own slope; one within it takes the machine's. */
START_TEST(test_calib_shared_slope_disagrees)
{
	struct fake_clock fake;
	struct calib_cpu cpu;
	struct calib_sample sample;
	uint64_t ideal, off, near;

	fake_init(&fake, _i, 20);
	calib_cpu_reset(&cpu);
	ideal = fake_ideal_mult(&fake);
	off = ideal + ideal / 1000000 * (CALIB_SHARED_SLOPE_MAX_PPM * 5);
	near = ideal + ideal / 1000000 * (CALIB_SHARED_SLOPE_MAX_PPM / 2);
	sample = fake_sample(&fake, 0, 30);
	ck_assert_int_eq(calib_cpu_update_shared(&cpu, &sample, INTERVAL_NS, off), CALIB_NEED_MORE);
	fake_advance(&fake, INTERVAL_NS);
	sample = fake_sample(&fake, 0, 30);
	ck_assert_int_eq(calib_cpu_update_shared(&cpu, &sample, INTERVAL_NS, off),
			 CALIB_FIRST_LINE);
	ck_assert_uint_eq(cpu.line.mult, cpu.slope_mult);
	ck_assert(calib_within_ppb(cpu.line.mult, ideal, 1));
	fake_advance(&fake, INTERVAL_NS);
	sample = fake_sample(&fake, 0, 30);
	ck_assert_int_eq(calib_cpu_update_shared(&cpu, &sample, INTERVAL_NS, near),
			 CALIB_CONTINUED);
	ck_assert(calib_within_ppb(cpu.line.mult, near, 10));
	ck_assert(calib_within_ppb(cpu.slope_mult, ideal, 1));
}
END_TEST

/* The slope estimate: none without an anchor or across a jump; otherwise
 * the slope from the anchor, uncertain by the two widths over the baseline. */
START_TEST(test_calib_slope_estimate)
{
	struct fake_clock fake;
	struct calib_cpu cpu;
	struct calib_sample sample;
	uint64_t mult = 0, uncertainty = 0;

	fake_init(&fake, _i, 20);
	calib_cpu_reset(&cpu);
	sample = fake_sample(&fake, 0, 40);
	ck_assert(!calib_slope_estimate(&cpu, &sample, &mult, &uncertainty));
	ck_assert_int_eq(calib_cpu_update(&cpu, &sample, INTERVAL_NS), CALIB_NEED_MORE);
	fake_advance(&fake, 20000000);
	sample = fake_sample(&fake, 0, 60);
	ck_assert(calib_slope_estimate(&cpu, &sample, &mult, &uncertainty));
	ck_assert(calib_within_ppb(mult, fake_ideal_mult(&fake), 1));
	ck_assert_uint_eq(uncertainty, 5000);
	sample.width_ns = CALIB_MAX_WIDTH_NS + 1;
	ck_assert(!calib_slope_estimate(&cpu, &sample, &mult, &uncertainty));

	ck_assert_int_eq(calib_cpu_update(&cpu, &(struct calib_sample){ sample.tsc, sample.ns, 60 },
					  INTERVAL_NS),
			 CALIB_FIRST_LINE);
	/* A 10 ms jump in 10 ms: no rate the kernel runs at. */
	fake_advance(&fake, 10000000);
	fake_jump_kernel(&fake, 10000000);
	sample = fake_sample(&fake, 0, 60);
	ck_assert(!calib_slope_estimate(&cpu, &sample, &mult, &uncertainty));
}
END_TEST

/* The kernel's rate through a run: initial_ppm from the start, then each
 * step's rate from its time on (ns since the first sample). */
struct calib_rate_step {
	uint64_t at_ns;
	int64_t ppm;
};
struct calib_profile {
	int64_t initial_ppm;
	unsigned steps;
	struct calib_rate_step step[4];
	uint64_t length_ns;
};

/* A slew of ppm that starts at 7.3 s, reverses at 21.1 s and stops at
 * 33.7 s (none at a sample time), or one already under way when the first
 * line forms that stops at 12.9 s. */
static struct calib_profile calib_slew_profile(int64_t ppm, bool from_start)
{
	struct calib_profile p = { 0 };

	if (from_start) {
		p.initial_ppm = ppm;
		p.steps = 1;
		p.step[0] = (struct calib_rate_step){ 12900000000ull, 0 };
		p.length_ns = 35 * NS_PER_SEC;
		return p;
	}
	p.steps = 3;
	p.step[0] = (struct calib_rate_step){ 7300000000ull, ppm };
	p.step[1] = (struct calib_rate_step){ 21100000000ull, -ppm };
	p.step[2] = (struct calib_rate_step){ 33700000000ull, 0 };
	p.length_ns = 55 * NS_PER_SEC;
	return p;
}

static int64_t calib_profile_ppm(const struct calib_profile *p, uint64_t at_ns)
{
	int64_t ppm = p->initial_ppm;

	for (unsigned i = 0; i < p->steps && p->step[i].at_ns <= at_ns; i++)
		ppm = p->step[i].ppm;
	return ppm;
}

/* How far apart (ppm) the kernel's rates lay between from_ns and to_ns. */
static uint64_t calib_profile_spread(const struct calib_profile *p, uint64_t from_ns,
				     uint64_t to_ns)
{
	int64_t low = calib_profile_ppm(p, from_ns), high = low;

	for (unsigned i = 0; i < p->steps; i++) {
		if (p->step[i].at_ns <= from_ns || p->step[i].at_ns > to_ns)
			continue;
		low = p->step[i].ppm < low ? p->step[i].ppm : low;
		high = p->step[i].ppm > high ? p->step[i].ppm : high;
	}
	/* Relative to the slowest rate: the spans are measured in kernel time,
	 * and a line wrong by high - low per tick errs by that much more per
	 * kernel nanosecond where the kernel runs slowly. */
	return (uint64_t)((high - low) * 1000000 / (1000000 + low)) + 1;
}

/* The refresh thread's fixed schedule: 10 ms, growing x4 up to 5 s. */
static uint64_t calib_schedule_ns(unsigned round)
{
	uint64_t interval = 10000000ull;

	for (unsigned i = 0; i < round && interval < INTERVAL_NS; i++)
		interval *= 4;
	return interval < INTERVAL_NS ? interval : INTERVAL_NS;
}

/* How a run samples: sandwich width, whether the midpoint wanders within it
 * (and the width itself between half and all of width_ns), whether the
 * thread wakes when calib_next_interval_ns asks or on its fixed schedule. */
struct calib_run {
	uint64_t width_ns;
	bool noisy;
	bool adaptive;
	uint64_t noise_ns; /* what noise may add to an error: allowed on top */
};

/* Readers of the published line, which the refresh thread replaces in their
 * midst: their answers, clamped as clock.c clamps them, must never go back
 * by more than a sandwich's width nor stand still for more than 1 ms. */
struct calib_reader {
	bool reading;
	uint64_t last;	      /* the clamped answer */
	uint64_t still_since; /* kernel ns at which last stopped moving */
	uint64_t width_ns;    /* the widest sandwich seen */
};

static void calib_reader_read(struct calib_reader *reader, uint64_t answer, uint64_t kernel_ns)
{
	if (!reader->reading) {
		*reader = (struct calib_reader){ true, answer, kernel_ns, reader->width_ns };
		return;
	}
	ck_assert_msg((int64_t)(answer - reader->last) >= -(int64_t)reader->width_ns,
		      "a reader's time went back by %lld ns", (long long)(reader->last - answer));
	if ((int64_t)(answer - reader->last) > 0) {
		reader->last = answer;
		reader->still_since = kernel_ns;
	}
	ck_assert_msg(kernel_ns - reader->still_since <= 1000000,
		      "a reader's time stood still for %llu ns",
		      (unsigned long long)(kernel_ns - reader->still_since));
}

/* How long after its sample the line is published: the round samples every
 * CPU before it draws any line. */
#define CALIB_PUBLISH_DELAY_NS 300000u
/* Readers read at least this often. */
#define CALIB_READ_EVERY_NS 250000u

/* What one run found, for the tests to judge. */
struct calib_run_result {
	uint64_t worst_ns;	   /* the largest error seen while a line answered */
	uint64_t worst_settled_ns; /* the largest from two samples after the last change */
	unsigned samples;
};

/* Lets the fake clocks run until kernel time until_ns, with the rate
 * changing exactly at the profile's steps, reading cpu's line (if any) as
 * readers would: every CALIB_READ_EVERY_NS just after a publish, where a
 * step back would show, and at least 64 times an interval after that. The
 * error must stay within R times (the time since since_ns plus the error
 * found then), R the spread of the profile's rates since from_ns, plus the
 * run's noise. */
static void calib_run_until(struct fake_clock *fake, const struct calib_profile *profile,
			    uint64_t start_ns, uint64_t until_ns, const struct calib_cpu *cpu,
			    const struct calib_run *run, struct calib_reader *reader,
			    struct calib_run_result *result, uint64_t from_ns, uint64_t since_ns,
			    uint64_t found_before_ns, bool settled)
{
	uint64_t began = fake_now(fake);

	for (;;) {
		uint64_t now = fake_now(fake), t = now - start_ns, step, spread, bound, error;
		int64_t signed_error;

		if (cpu->line.mult != 0) {
			signed_error = fake_line_error(fake, cpu->line);
			error = calib_abs(signed_error);
			spread = calib_profile_spread(profile, from_ns, t);
			bound = (uint64_t)((unsigned __int128)(t - since_ns + found_before_ns) *
					   spread / 1000000u) +
				run->noise_ns + ROUNDING_NS;
			ck_assert_msg(error <= bound,
				      "at %llu ns (the sample before last at %llu): error %lld ns, "
				      "bound %llu",
				      (unsigned long long)t, (unsigned long long)since_ns,
				      (long long)signed_error, (unsigned long long)bound);
			result->worst_ns = error > result->worst_ns ? error : result->worst_ns;
			if (settled && error > result->worst_settled_ns)
				result->worst_settled_ns = error;
			calib_reader_read(reader, calib_line_eval(cpu->line, fake->tsc), now);
		}
		if (now >= until_ns)
			return;
		step = CALIB_READ_EVERY_NS;
		if (now - began > 16 * CALIB_READ_EVERY_NS && (until_ns - began) / 64 > step)
			step = (until_ns - began) / 64;
		if (step > until_ns - now)
			step = until_ns - now;
		for (unsigned i = 0; i < profile->steps; i++)
			if (profile->step[i].at_ns > t && profile->step[i].at_ns < t + step)
				step = profile->step[i].at_ns - t;
		fake_advance(fake, step);
		if (fake_now(fake) == now)
			fake->tsc++;
		if (calib_profile_ppm(profile, fake_now(fake) - start_ns) * 1000 != fake->ppb)
			fake_set_ppb(fake,
				     calib_profile_ppm(profile, fake_now(fake) - start_ns) * 1000);
	}
}

/* Runs profile against the line with fake clocks, sampling as run says, and
 * checks at every read (each CALIB_READ_EVERY_NS and across every publish):
 * the error is within R x (t - the sample before last) + noise, where R is
 * the spread of the kernel's rate since the anchor of that sample's slope,
 * readers never go back by more than a width nor stand still. */
static struct calib_run_result calib_run_profile(int index, const struct calib_profile *profile,
						 const struct calib_run *run)
{
	struct fake_clock fake;
	struct calib_cpu cpu;
	struct calib_reader reader = { .width_ns = run->width_ns };
	struct calib_run_result result = { 0 };
	uint64_t seed = 0xca11bu + (uint64_t)index;
	uint64_t start_ns, last_change = 0;
	/* Kernel times (since start) of the current and previous updates'
	 * samples and anchors. */
	uint64_t sample_at[2] = { 0, 0 }, anchor_at[2] = { 0, 0 }, anchor_now = 0;
	/* The errors found at those samples. */
	uint64_t found[2] = { 0, 0 };
	unsigned lines = 0, after_change = 0;

	for (unsigned i = 0; i < profile->steps; i++)
		last_change = profile->step[i].at_ns;
	fake_init(&fake, index % CALIB_CASES, profile->length_ns / NS_PER_SEC + 10);
	start_ns = fake_now(&fake);
	fake_set_ppb(&fake, profile->initial_ppm * 1000);
	calib_cpu_reset(&cpu);

	for (unsigned round = 0;; round++) {
		uint64_t at = fake_now(&fake) - start_ns, width = run->width_ns;
		uint64_t scheduled = calib_schedule_ns(round), interval;
		int64_t noise = 0;
		struct calib_sample sample;
		enum calib_outcome outcome;

		if (at >= profile->length_ns)
			break;
		if (run->noisy) {
			width = width / 2 + calib_random(&seed) % (width / 2 + 1);
			noise = (int64_t)(calib_random(&seed) % (width + 1)) - (int64_t)(width / 2);
		}
		sample = fake_sample(&fake, noise, width);
		interval =
		    run->adaptive ? calib_next_interval_ns(&cpu, &sample, scheduled) : scheduled;
		ck_assert_uint_le(interval, scheduled);
		ck_assert_uint_gt(interval, 0);

		/* Readers go on with the old line until it is replaced. */
		calib_run_until(&fake, profile, start_ns, fake_now(&fake) + CALIB_PUBLISH_DELAY_NS,
				&cpu, run, &reader, &result, anchor_at[1], sample_at[1], found[1],
				after_change >= 3);
		outcome = calib_cpu_update_at(&cpu, &sample, interval, 0, fake.tsc);
		ck_assert_msg(outcome != CALIB_STEPPED && outcome != CALIB_REJECTED,
			      "round %u at %llu ns: outcome %d", round, (unsigned long long)at,
			      (int)outcome);
		result.samples++;
		if (outcome == CALIB_NEED_MORE) {
			if (cpu.anchor.tsc == sample.tsc)
				anchor_now = at;
		} else {
			anchor_at[1] = anchor_at[0];
			sample_at[1] = sample_at[0];
			found[1] = found[0];
			anchor_at[0] = anchor_now;
			sample_at[0] = at;
			found[0] = outcome == CALIB_CONTINUED ? calib_abs(cpu.last_error_ns) : 0;
			anchor_now = at;
			if (lines++ == 0) {
				anchor_at[1] = anchor_at[0];
				sample_at[1] = anchor_at[0];
				found[1] = 0;
			}
			if (at > last_change)
				after_change++;
		}
		calib_run_until(&fake, profile, start_ns, start_ns + at + interval, &cpu, run,
				&reader, &result, anchor_at[1], sample_at[1], found[1],
				after_change >= 3);
	}
	ck_assert_uint_gt(lines, 0);
	return result;
}

static const int64_t calib_slew_ppm[] = { 100, 500, 5000, 83333 };
/* Slew rates x (under way from the start or not) x (narrow or wide) x
 * (noisy or not) x (adaptive or fixed schedule). */
#define CALIB_SLEW_RUNS (4 * 2 * 2 * 2 * 2)

static struct calib_run calib_slew_run(int index)
{
	struct calib_run run = { 0 };

	run.width_ns = (index / 8) % 2 ? 2000 : 25;
	run.noisy = (index / 16) % 2;
	run.adaptive = (index / 32) % 2;
	/* Narrow sandwiches: the 1 us the issue allows. Noisy wide ones: the
	 * midpoints' noise, amplified by the slope of a short interval
	 * extended over one up to four times as long. */
	run.noise_ns = 1000;
	if (run.noisy && run.width_ns > 25)
		run.noise_ns += 6 * run.width_ns;
	return run;
}

/* Slews of 100, 500, 5,000 and 83,333 ppm that start, reverse and stop, or
 * that are under way when the first line forms: the line follows within
 * R x (time since the sample before last) + 1 us, readers never go back by
 * more than a sandwich nor stand still, and two samples after the kernel's
 * rate last changed the line is within 1 us again. */
START_TEST(test_calib_follows_slews)
{
	struct calib_profile profile = calib_slew_profile(calib_slew_ppm[_i % 4], (_i / 4) % 2);
	struct calib_run run = calib_slew_run(_i);
	struct calib_run_result result = calib_run_profile(_i, &profile, &run);

	ck_assert_uint_le(result.worst_settled_ns, run.noise_ns + ROUNDING_NS);
	/* The slew was there to be followed: the bound was not trivially met. */
	ck_assert_uint_gt(result.worst_ns, 0);
}
END_TEST

/* Rate changes of every size up to the kernel's whole range (+-10 %), at
 * random times: the same bounds hold, and no change is taken for a
 * discontinuity. */
START_TEST(test_calib_follows_any_rate)
{
	struct calib_profile profile = { 0 };
	uint64_t seed = 0x5a7e0000u + (uint64_t)_i;
	struct calib_run run = calib_slew_run(_i * 8);
	uint64_t at = 0;

	profile.initial_ppm = (int64_t)(calib_random(&seed) % 200001) - 100000;
	profile.steps = 4;
	for (unsigned i = 0; i < 4; i++) {
		at += 3 * NS_PER_SEC + calib_random(&seed) % (9 * NS_PER_SEC);
		profile.step[i].at_ns = at;
		profile.step[i].ppm = (int64_t)(calib_random(&seed) % 200001) - 100000;
	}
	profile.length_ns = at + 20 * NS_PER_SEC;
	calib_run_profile(_i, &profile, &run);
}
END_TEST

/* The wake-up calib_next_interval_ns asks for: the schedule while the line
 * is right; soon after an error, but not sooner than the error's pay-back
 * at CALIB_PAYBACK_PPM, nor than 10 ms; then growing by 4 each calm round. */
START_TEST(test_calib_next_interval)
{
	struct fake_clock fake;
	struct calib_cpu cpu;
	struct calib_sample sample;
	uint64_t interval;

	fake_init(&fake, _i, 60);
	calib_cpu_reset(&cpu);
	sample = fake_sample(&fake, 0, 30);
	ck_assert_uint_eq(calib_next_interval_ns(&cpu, &sample, INTERVAL_NS), INTERVAL_NS);
	calib_start(&cpu, &fake);
	fake_advance(&fake, INTERVAL_NS);
	sample = fake_sample(&fake, 0, 30);
	ck_assert_uint_eq(calib_next_interval_ns(&cpu, &sample, INTERVAL_NS), INTERVAL_NS);

	/* 25 ms behind: paid back at 10 % takes 250 ms. */
	sample = fake_sample(&fake, 25000000, 30);
	interval = calib_next_interval_ns(&cpu, &sample, INTERVAL_NS);
	ck_assert_uint_eq(interval, 250000000);
	/* 20 us: the shortest interval. */
	sample = fake_sample(&fake, -20000, 30);
	ck_assert_uint_eq(calib_next_interval_ns(&cpu, &sample, INTERVAL_NS), 10000000);
	/* Once the line is right, the interval grows by 4 at a time. */
	sample = fake_sample(&fake, 0, 30);
	ck_assert_int_eq(calib_cpu_update(&cpu, &sample, 10000000), CALIB_CONTINUED);
	fake_advance(&fake, 10000000);
	sample = fake_sample(&fake, 0, 30);
	ck_assert_uint_eq(calib_next_interval_ns(&cpu, &sample, INTERVAL_NS), 40000000);
	ck_assert_uint_eq(calib_next_interval_ns(&cpu, &sample, 20000000), 20000000);
	/* Wide sandwiches need a longer baseline for their slope. */
	sample.width_ns = 2000;
	sample.ns += 100000;
	ck_assert_uint_eq(calib_next_interval_ns(&cpu, &sample, INTERVAL_NS), 500000000);
	/* A jump no rate explains: sample again as soon as may be. */
	sample = fake_sample(&fake, 0, 30);
	sample.ns += 5000000;
	ck_assert_uint_eq(calib_next_interval_ns(&cpu, &sample, INTERVAL_NS), 10000000);
}
END_TEST

Suite *suite_calib(void)
{
	Suite *suite = suite_create("calib");
	TCase *tc;

	tc = tcase_create("helpers");
	tcase_add_test(tc, test_calib_narrowest);
	tcase_add_test(tc, test_calib_mult_from);
	tcase_add_test(tc, test_calib_line_ticks_for_ns);
	tcase_add_test(tc, test_calib_realtime_offset);
	suite_add_tcase(suite, tc);

	tc = tcase_create("lines");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_calib_first_line, 0, CALIB_CASES);
	tcase_add_loop_test(tc, test_calib_steady, 0, CALIB_CASES);
	tcase_add_loop_test(tc, test_calib_frequency_error, 0, CALIB_CASES);
	tcase_add_loop_test(tc, test_calib_continuity, 0, CALIB_CASES);
	tcase_add_loop_test(tc, test_calib_noise, 0, CALIB_CASES);
	suite_add_tcase(suite, tc);

	tc = tcase_create("disturbances");
	tcase_add_loop_test(tc, test_calib_outlier, 0, CALIB_CASES);
	tcase_add_loop_test(tc, test_calib_kernel_jump, 0, CALIB_CASES);
	tcase_add_loop_test(tc, test_calib_resume, 0, CALIB_CASES);
	tcase_add_loop_test(tc, test_calib_tsc_backwards, 0, CALIB_CASES);
	tcase_add_test(tc, test_calib_slow_tsc);
	tcase_add_test(tc, test_calib_first_line_waits_for_baseline);
	tcase_add_test(tc, test_calib_first_line_due);
	tcase_add_loop_test(tc, test_calib_early_round_keeps_rate, 0, CALIB_CASES);
	tcase_add_loop_test(tc, test_calib_shared_slope, 0, CALIB_CASES);
	tcase_add_loop_test(tc, test_calib_shared_slope_disagrees, 0, CALIB_CASES);
	tcase_add_loop_test(tc, test_calib_slope_estimate, 0, CALIB_CASES);
	tcase_add_loop_test(tc, test_calib_wide_sandwich_aimed, 0, CALIB_CASES);
	tcase_add_test(tc, test_calib_sample_toward);
	tcase_add_test(tc, test_calib_sample_agrees);
	tcase_add_loop_test(tc, test_calib_medium_kernel_jump, 0, CALIB_CASES);
	tcase_add_loop_test(tc, test_calib_large_kernel_jump, 0, CALIB_CASES);
	suite_add_tcase(suite, tc);

	tc = tcase_create("rates");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_calib_follows_slews, 0, CALIB_SLEW_RUNS);
	tcase_add_loop_test(tc, test_calib_follows_any_rate, 0, CALIB_CASES);
	tcase_add_loop_test(tc, test_calib_next_interval, 0, CALIB_CASES);
	suite_add_tcase(suite, tc);
	return suite;
}
