/* The log-linear histogram: bucket boundaries, percentiles, merging. */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "histogram.h"
#include "unit.h"

/* The values a bucket's range must hold: everything below 2^55 ns. */
#define HISTOGRAM_TEST_LIMIT (1ull << 55)

/* A deterministic generator for sample values: splitmix64. */
static uint64_t histogram_test_random(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Asserts that value lands in a bucket whose range holds it (without an
 * assertion per call: Check records each one, which is slow in a loop). */
static void histogram_check_value(uint64_t value)
{
	unsigned bucket = histogram_bucket_of(value);
	uint64_t lo, hi;

	if (bucket >= HISTOGRAM_BUCKETS)
		ck_abort_msg("%llu in bucket %u of %u", (unsigned long long)value, bucket,
			     HISTOGRAM_BUCKETS);
	histogram_bucket_range(bucket, &lo, &hi);
	if (value < lo || value > hi)
		ck_abort_msg("%llu in bucket %u [%llu, %llu]", (unsigned long long)value, bucket,
			     (unsigned long long)lo, (unsigned long long)hi);
}

/* Values below 128 each have a bucket of their own. */
START_TEST(test_histogram_small_values)
{
	for (uint64_t v = 0; v < 2 * HISTOGRAM_SUB_BUCKETS; v++) {
		uint64_t lo, hi;

		ck_assert_uint_eq(histogram_bucket_of(v), v);
		histogram_bucket_range((unsigned)v, &lo, &hi);
		ck_assert_uint_eq(lo, v);
		ck_assert_uint_eq(hi, v);
	}
	ck_assert_uint_eq(histogram_bucket_of(128), 128);
	ck_assert_uint_eq(histogram_bucket_of(129), 128);
	ck_assert_uint_eq(histogram_bucket_of(130), 129);
}
END_TEST

/* The buckets tile the line without gaps or overlaps, each at most 1/64 of
 * its lower bound wide, and each bound maps back to its own bucket. */
START_TEST(test_histogram_round_trip)
{
	uint64_t previous_hi = 0;

	for (unsigned b = 0; b < HISTOGRAM_BUCKETS; b++) {
		uint64_t lo, hi;

		histogram_bucket_range(b, &lo, &hi);
		ck_assert_uint_le(lo, hi);
		if (b > 0)
			ck_assert_uint_eq(lo, previous_hi + 1);
		ck_assert_uint_eq(histogram_bucket_of(lo), b);
		ck_assert_uint_eq(histogram_bucket_of(hi), b);
		if (lo >= 2 * HISTOGRAM_SUB_BUCKETS)
			ck_assert_uint_le(hi - lo + 1, lo / HISTOGRAM_SUB_BUCKETS);
		previous_hi = hi;
	}
	ck_assert_uint_eq(previous_hi, HISTOGRAM_TEST_LIMIT - 1);
}
END_TEST

/* Powers of two, their neighbours and random values fall inside their
 * bucket's range. */
START_TEST(test_histogram_values_in_range)
{
	uint64_t seed = 1234;

	for (unsigned shift = 0; shift < 55; shift++) {
		uint64_t p = 1ull << shift;

		histogram_check_value(p - 1);
		histogram_check_value(p);
		histogram_check_value(p + 1);
		histogram_check_value(p + p / 2);
	}
	histogram_check_value(0);
	histogram_check_value(127);
	histogram_check_value(128);
	histogram_check_value(HISTOGRAM_TEST_LIMIT - 1);
	for (unsigned i = 0; i < 100000; i++) {
		uint64_t r = histogram_test_random(&seed);

		/* Spread over all magnitudes, not just the largest. */
		histogram_check_value((r >> 9) >> (r % 55));
	}
}
END_TEST

/* Values too large for the last group are kept in the last bucket. */
START_TEST(test_histogram_clamped)
{
	ck_assert_uint_eq(histogram_bucket_of(HISTOGRAM_TEST_LIMIT - 1), HISTOGRAM_BUCKETS - 1);
	ck_assert_uint_eq(histogram_bucket_of(HISTOGRAM_TEST_LIMIT), HISTOGRAM_BUCKETS - 1);
	ck_assert_uint_eq(histogram_bucket_of(1ull << 63), HISTOGRAM_BUCKETS - 1);
	ck_assert_uint_eq(histogram_bucket_of(UINT64_MAX), HISTOGRAM_BUCKETS - 1);
	for (unsigned shift = 0; shift < 64; shift++)
		ck_assert_uint_lt(histogram_bucket_of(1ull << shift), HISTOGRAM_BUCKETS);
}
END_TEST

/* Adding keeps the count, the sum and the extremes. */
START_TEST(test_histogram_add)
{
	struct histogram h;
	unsigned long long total = 0;

	histogram_reset(&h);
	ck_assert_uint_eq(h.total, 0);
	for (uint64_t v = 3; v <= 3000; v += 3) {
		histogram_add(&h, v);
		total += v;
	}
	ck_assert_uint_eq(h.total, 1000);
	ck_assert_uint_eq(h.min, 3);
	ck_assert_uint_eq(h.max, 3000);
	ck_assert_double_eq(h.sum, (double)total);
	ck_assert_uint_eq(h.counts[histogram_bucket_of(3)], 1);
	histogram_add(&h, UINT64_MAX);
	ck_assert_uint_eq(h.counts[HISTOGRAM_BUCKETS - 1], 1);
	ck_assert_uint_eq(h.max, UINT64_MAX);
}
END_TEST

/* An empty histogram answers 0 for every percentile. */
START_TEST(test_histogram_empty)
{
	struct histogram h;

	histogram_reset(&h);
	ck_assert_double_eq(histogram_percentile(&h, 50), 0);
	ck_assert_double_eq(histogram_percentile(&h, 99.9), 0);
	ck_assert_double_eq(histogram_percentile(&h, 100), 0);
}
END_TEST

/* On 1..1000, each percentile is within one bucket's width of the exact
 * value, p100 is the maximum, and percentiles never decrease with p. */
START_TEST(test_histogram_percentile_uniform)
{
	struct histogram h;
	double previous = 0;

	histogram_reset(&h);
	for (uint64_t v = 1; v <= 1000; v++)
		histogram_add(&h, v);
	ck_assert_double_eq(histogram_percentile(&h, 100), 1000);
	for (unsigned p = 1; p <= 100; p++) {
		double value = histogram_percentile(&h, p);
		double exact = 10.0 * p;
		uint64_t lo, hi;

		histogram_bucket_range(histogram_bucket_of((uint64_t)exact), &lo, &hi);
		ck_assert_msg(value >= exact - (double)(hi - lo + 1) &&
				  value <= exact + (double)(hi - lo + 1),
			      "p%u = %f, expected %f", p, value, exact);
		ck_assert(value >= previous);
		ck_assert(value >= 1 && value <= 1000);
		previous = value;
	}
	ck_assert_double_eq_tol(histogram_percentile(&h, 50), 500, 4);
}
END_TEST

/* A single repeated value is every percentile exactly. */
START_TEST(test_histogram_percentile_single)
{
	struct histogram h;

	histogram_reset(&h);
	for (unsigned i = 0; i < 77; i++)
		histogram_add(&h, 12345);
	ck_assert_double_eq(histogram_percentile(&h, 0.1), 12345);
	ck_assert_double_eq(histogram_percentile(&h, 50), 12345);
	ck_assert_double_eq(histogram_percentile(&h, 99.99), 12345);
	ck_assert_double_eq(histogram_percentile(&h, 100), 12345);
}
END_TEST

/* Zeros are values like any other: they can be the median. */
START_TEST(test_histogram_percentile_zeros)
{
	struct histogram h;

	histogram_reset(&h);
	for (unsigned i = 0; i < 3; i++)
		histogram_add(&h, 0);
	histogram_add(&h, 100);
	ck_assert_uint_eq(h.min, 0);
	ck_assert(histogram_percentile(&h, 50) >= 0 && histogram_percentile(&h, 50) < 1);
	ck_assert_double_eq(histogram_percentile(&h, 100), 100);
}
END_TEST

/* Inside a bucket, counts are spread evenly over [lo, hi + 1): halfway
 * through a 16-wide bucket's counts is 8 past its start. */
START_TEST(test_histogram_percentile_interpolated)
{
	struct histogram h;
	uint64_t lo, hi;

	histogram_bucket_range(histogram_bucket_of(1024), &lo, &hi);
	ck_assert_uint_eq(lo, 1024);
	ck_assert_uint_eq(hi, 1039);
	histogram_reset(&h);
	for (unsigned i = 0; i < 10; i++) {
		histogram_add(&h, 1024 + i);
		histogram_add(&h, 1000000);
	}
	ck_assert_double_eq(histogram_percentile(&h, 25), 1032);
	ck_assert_double_eq_tol(histogram_percentile(&h, 10), 1024 + 16 * 0.2, 1e-9);
	ck_assert_double_eq(histogram_percentile(&h, 50), 1040);
}
END_TEST

/* Two clusters: percentiles below the split fall in the first, above it in
 * the second, each within its bucket. */
START_TEST(test_histogram_percentile_two_clusters)
{
	struct histogram h;
	uint64_t lo, hi;
	double p95;

	histogram_reset(&h);
	for (unsigned i = 0; i < 900; i++)
		histogram_add(&h, 20);
	for (unsigned i = 0; i < 100; i++)
		histogram_add(&h, 50000);
	ck_assert(histogram_percentile(&h, 50) >= 20 && histogram_percentile(&h, 50) < 21);
	ck_assert(histogram_percentile(&h, 90) >= 20 && histogram_percentile(&h, 90) <= 21);
	histogram_bucket_range(histogram_bucket_of(50000), &lo, &hi);
	p95 = histogram_percentile(&h, 95);
	ck_assert_msg(p95 >= (double)lo && p95 <= 50000, "p95 = %f", p95);
	ck_assert_double_eq(histogram_percentile(&h, 100), 50000);
}
END_TEST

/* Merging adds counts bucket by bucket and keeps the extremes of both;
 * merging an empty histogram changes nothing. */
START_TEST(test_histogram_merge)
{
	static struct histogram a, b, sum, empty, copy;

	histogram_reset(&a);
	histogram_reset(&b);
	histogram_reset(&sum);
	histogram_reset(&empty);
	for (uint64_t v = 100; v < 2000; v += 7)
		histogram_add(&a, v);
	for (uint64_t v = 50; v < 90000; v += 311)
		histogram_add(&b, v);
	histogram_add(&b, 0);
	histogram_merge(&sum, &a);
	histogram_merge(&sum, &b);
	for (unsigned i = 0; i < HISTOGRAM_BUCKETS; i++)
		ck_assert_uint_eq(sum.counts[i], a.counts[i] + b.counts[i]);
	ck_assert_uint_eq(sum.total, a.total + b.total);
	ck_assert_double_eq(sum.sum, a.sum + b.sum);
	ck_assert_uint_eq(sum.min, 0);
	ck_assert_uint_eq(sum.counts[0], 1);
	ck_assert_uint_eq(sum.max, b.max);

	memcpy(&copy, &a, sizeof copy);
	histogram_merge(&a, &empty);
	ck_assert(memcmp(&copy, &a, sizeof copy) == 0);
	histogram_merge(&empty, &a);
	ck_assert(memcmp(&copy, &empty, sizeof copy) == 0);
}
END_TEST

Suite *suite_histogram(void)
{
	Suite *suite = suite_create("histogram");
	TCase *tc;

	tc = tcase_create("buckets");
	tcase_add_test(tc, test_histogram_small_values);
	tcase_add_test(tc, test_histogram_round_trip);
	tcase_add_test(tc, test_histogram_values_in_range);
	tcase_add_test(tc, test_histogram_clamped);
	suite_add_tcase(suite, tc);

	tc = tcase_create("percentiles");
	tcase_add_test(tc, test_histogram_add);
	tcase_add_test(tc, test_histogram_empty);
	tcase_add_test(tc, test_histogram_percentile_uniform);
	tcase_add_test(tc, test_histogram_percentile_single);
	tcase_add_test(tc, test_histogram_percentile_interpolated);
	tcase_add_test(tc, test_histogram_percentile_zeros);
	tcase_add_test(tc, test_histogram_percentile_two_clusters);
	tcase_add_test(tc, test_histogram_merge);
	suite_add_tcase(suite, tc);
	return suite;
}
