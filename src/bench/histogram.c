/* Log-linear histogram: each power of two split into 64 equal buckets, so
 * the relative error of any bucket is below 1/64 (1.6 %). */
#include "config.h"

#include "histogram.h"

#include <string.h>

void histogram_reset(struct histogram *h)
{
	memset(h, 0, sizeof *h);
	h->min = UINT64_MAX;
}

unsigned histogram_bucket_of(uint64_t value)
{
	unsigned msb, shift, bucket;

	if (value < 2 * HISTOGRAM_SUB_BUCKETS)
		return (unsigned)value;
	msb = 63u - (unsigned)__builtin_clzll(value);
	shift = msb - HISTOGRAM_SUB_BITS;
	bucket = (shift + 1) * HISTOGRAM_SUB_BUCKETS +
		 (unsigned)((value >> shift) & (HISTOGRAM_SUB_BUCKETS - 1));
	return bucket < HISTOGRAM_BUCKETS ? bucket : HISTOGRAM_BUCKETS - 1;
}

void histogram_bucket_range(unsigned bucket, uint64_t *min, uint64_t *max)
{
	unsigned group = bucket / HISTOGRAM_SUB_BUCKETS;
	uint64_t index = bucket % HISTOGRAM_SUB_BUCKETS;
	unsigned shift;

	if (group < 2) {
		*min = *max = bucket;
		return;
	}
	shift = group - 1;
	*min = (HISTOGRAM_SUB_BUCKETS + index) << shift;
	*max = *min + (1ull << shift) - 1;
}

void histogram_add(struct histogram *h, uint64_t value)
{
	h->counts[histogram_bucket_of(value)]++;
	h->total++;
	h->sum += (double)value;
	if (value > h->max)
		h->max = value;
	if (value < h->min)
		h->min = value;
}

void histogram_merge(struct histogram *into, const struct histogram *from)
{
	for (unsigned i = 0; i < HISTOGRAM_BUCKETS; i++)
		into->counts[i] += from->counts[i];
	into->total += from->total;
	into->sum += from->sum;
	if (from->max > into->max)
		into->max = from->max;
	if (from->min < into->min)
		into->min = from->min;
}

double histogram_percentile(const struct histogram *h, double p)
{
	double wanted, below = 0;

	if (h->total == 0)
		return 0;
	if (p >= 100)
		return (double)h->max;
	wanted = p / 100.0 * (double)h->total;
	for (unsigned i = 0; i < HISTOGRAM_BUCKETS; i++) {
		double here = (double)h->counts[i];
		uint64_t lo, hi;
		double fraction, value;

		if (here == 0 || below + here < wanted) {
			below += here;
			continue;
		}
		/* Treat the bucket's counts as spread evenly over its range. */
		histogram_bucket_range(i, &lo, &hi);
		fraction = (wanted - below) / here;
		value = (double)lo + fraction * (double)(hi + 1 - lo);
		if (value > (double)h->max)
			value = (double)h->max;
		if (value < (double)h->min)
			value = (double)h->min;
		return value;
	}
	return (double)h->max;
}
