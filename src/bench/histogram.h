/* A log-linear histogram of non-negative integers (nanoseconds), with
 * percentiles interpolated within a bucket: fio's bucket scheme (64 equal
 * buckets per power of two) and fiologparser_hist's interpolation. */
#ifndef FASTTIME_HISTOGRAM_H
#define FASTTIME_HISTOGRAM_H

#include <stdint.h>

#define HISTOGRAM_SUB_BITS    6u
#define HISTOGRAM_SUB_BUCKETS (1u << HISTOGRAM_SUB_BITS)
/* Groups 0 and 1 are one unit wide; each later group doubles: 50 groups
 * reach past 2^55 ns, longer than any run. */
#define HISTOGRAM_GROUPS  50u
#define HISTOGRAM_BUCKETS (HISTOGRAM_GROUPS * HISTOGRAM_SUB_BUCKETS)

struct histogram {
	uint64_t counts[HISTOGRAM_BUCKETS];
	uint64_t total;
	uint64_t max;
	uint64_t min;
	double sum;
};

void histogram_reset(struct histogram *h);
void histogram_add(struct histogram *h, uint64_t value);
/* Adds every count of from into into. */
void histogram_merge(struct histogram *into, const struct histogram *from);
/* The bucket a value falls in, and the values a bucket covers [min, max]. */
unsigned histogram_bucket_of(uint64_t value);
void histogram_bucket_range(unsigned bucket, uint64_t *min, uint64_t *max);
/* The p-th percentile (0 < p <= 100), interpolated inside its bucket; the
 * largest value seen for p = 100. 0 when empty. */
double histogram_percentile(const struct histogram *h, double p);

#endif
