/* A served reader judging its page again, as long as it is served: a
 * page's owner can rewrite it at any time after the reader accepted it
 * (service_page_judge.c), so the reader judges it as it judges its own
 * lines. The process's reads from the TSC are bounded by a deadline in
 * ticks (wiped.h: the kernel zeroes it in a fork child), which the fast
 * read compares with the counter; past it, the careful read asks here.
 * At most once a SERVICE_PAGE_REJUDGE_NS for the whole process, the
 * page's validity, its lines' slopes and its lines and offsets against
 * the kernel's clocks are judged again; where they disagree, the
 * process's reads go to libc until the page agrees again, and a page
 * that keeps disagreeing is left (service_page_condemned, for
 * preload.c). */
#include "config.h"

#include "service_page.h"

#include <sys/syscall.h>

#include "calib_line.h"
#include "clock.h"
#include "clock_check.h"
#include "cpu.h"
#include "debug.h"
#include "libc.h"
#include "raw_syscall.h"
#include "refresh.h"
#include "start_data.h"

/* Until when (TSC ticks) the page was last found right; 0 while it
 * disagrees. Unlike the fast read's deadline, a fork child keeps it: it
 * answers by it once its time namespace is checked. What a served start
 * writes (the page's acceptance, service_page_rejudge_reset) is kept with
 * the start's data (start_data.h). */
static uint64_t service_page_judged_until_tsc START_DATA;
/* The first and the last judgement of the present disagreement (0:
 * none), how many judgements have disagreed since, and why the last one
 * did. */
static uint64_t service_page_doubted_since_tsc START_DATA;
static uint64_t service_page_last_doubt_tsc;
static uint32_t service_page_doubts START_DATA;
static const char *service_page_doubt_why;
/* The earliest the page is judged again while it disagrees. */
static uint64_t service_page_next_judge_tsc;
/* Who judges takes wiped.words.judging, never waited for: any other
 * caller answers with libc this time. A judgement in progress in a fork's
 * parent is nobody's in the child, which finds the word zero (wiped.h). */

/* The kernel's clock id as libc answers the process (the vDSO, or what
 * is preloaded beneath the library). 0 when it fails. */
static uint64_t service_page_rejudge_libc_ns(clockid_t id)
{
	struct timespec ts;

	if (libc_clock_gettime(id, &ts) != 0)
		return 0;
	return timespec_to_ns(&ts);
}

/* How a judgement reads the kernel's clocks. */
typedef uint64_t (*service_page_rejudge_clock_fn)(clockid_t id);

/* Whether ns is within slack_ns of [before, after]. */
static bool service_page_rejudge_within(uint64_t before, uint64_t ns, uint64_t after,
					uint64_t slack_ns)
{
	return ns + slack_ns >= before && ns <= after + slack_ns;
}

/* Every present line of records: a slope within half the rate the reader
 * accepted (room for any slew a kernel makes, 10 %, and for the bend by
 * which a service pays an error back, up to 20 % more), and the time it
 * gives within SERVICE_PAGE_REJUDGE_LINES_NS of the kernel's clock id. Two
 * tries, for a preemption between the reads. */
static const char *service_page_rejudge_lines(const struct table_record *records, clockid_t id,
					      uint64_t rate, service_page_rejudge_clock_fn now)
{
	for (unsigned attempt = 0; attempt < 2; attempt++) {
		uint64_t before = now(id);
		uint64_t tsc = cpu_rdtsc();
		uint64_t after = now(id);
		bool agree = true;

		for (uint32_t cpu = 0; cpu < service_page_cpu_limit(); cpu++) {
			struct calib_line line = table_load_record(&records[cpu]);

			if (line.mult == 0)
				continue;
			/* Told as a distance: rate + rate / 2 overflows for a
			 * TSC a little above 1 GHz. */
			if ((line.mult > rate ? line.mult - rate : rate - line.mult) > rate / 2)
				return "a line's slope is not the TSC's rate";
			if (!service_page_rejudge_within(before,
							 clock_mulhi(tsc, line.mult) + line.offset,
							 after, SERVICE_PAGE_REJUDGE_LINES_NS))
				agree = false;
		}
		if (agree)
			return NULL;
	}
	return "its lines disagree with the kernel's clock";
}

/* Each offset the page answers a clock with, against that clock minus
 * CLOCK_MONOTONIC read beside it (two tries). */
static const char *service_page_rejudge_offsets(uint32_t flags, service_page_rejudge_clock_fn now)
{
	for (unsigned kind = CLOCK_OFFSET_NONE + 1; kind < CLOCK_OFFSET_COUNT; kind++) {
		const struct clock_row *row = clock_table_row_for_offset(kind);
		bool agree = false;

		if (row == NULL || !(flags & row->entry_points))
			continue;
		for (unsigned attempt = 0; attempt < 2 && !agree; attempt++) {
			uint64_t before = now(CLOCK_MONOTONIC);
			uint64_t ns = now(row->id);
			uint64_t after = now(CLOCK_MONOTONIC);
			uint64_t offset =
			    __atomic_load_n(&table_page.shared.offset_ns[kind], __ATOMIC_RELAXED);

			/* ns - offset is the page's CLOCK_MONOTONIC for it. */
			agree = after >= before &&
				service_page_rejudge_within(before, ns - offset, after,
							    SERVICE_PAGE_AGREE_NS);
		}
		if (!agree)
			return "its offset of a clock disagrees with the kernel's";
	}
	return NULL;
}

/* NULL when the page (the table, mapped read-only), which the caller
 * found fresh, is right now by the clocks now reads. */
static const char *service_page_rejudge_by(uint64_t rate, service_page_rejudge_clock_fn now)
{
	uint32_t flags = table_api_flags();
	const char *refused;

	refused = service_page_rejudge_lines(table_page.records, CLOCK_MONOTONIC, rate, now);
	if (refused == NULL && (flags & CLOCK_API_MONOTONIC_RAW))
		refused = service_page_rejudge_lines(table_page.raw_records, CLOCK_MONOTONIC_RAW,
						     rate, now);
	if (refused == NULL)
		refused = service_page_rejudge_offsets(flags, now);
	return refused;
}

/* The page's validity, then its lines and offsets: by the system call
 * where the process may make one (no seccomp filter of its own), which a
 * judgement inside a program's time call leaves unseen by anything
 * preloaded; else, or where they disagree, by libc's clocks, which are
 * the kernel's too (and, in the tests, the clocks a tap beneath the
 * library moves for the service and its readers alike). */
static const char *service_page_rejudge_now(uint64_t rate)
{
	uint64_t valid_ticks = __atomic_load_n(&table_page.shared.valid_ticks, __ATOMIC_ACQUIRE);

	if (clock_mulhi(valid_ticks, rate) > SERVICE_PAGE_MAX_VALID_NS)
		return "an absurd validity";
	if (!refresh_served_under_filter() &&
	    service_page_rejudge_by(rate, service_page_kernel_ns) == NULL)
		return NULL;
	return service_page_rejudge_by(rate, service_page_rejudge_libc_ns);
}

/* The judgement, by the one caller that holds wiped.words.judging. A
 * page that disagreed answers again only once it has agreed at every
 * judgement for SERVICE_PAGE_DOUBT_NS: a forger that leaves the service's
 * values in place now and then never wins back the fast path. */
static bool service_page_rejudge_held(uint64_t tsc, uint64_t rate)
{
	uint64_t period = calib_line_ticks_for_ns(rate, SERVICE_PAGE_REJUDGE_NS);
	uint64_t since = __atomic_load_n(&service_page_doubted_since_tsc, __ATOMIC_RELAXED);
	const char *refused;

	if (since != 0 &&
	    (int64_t)(tsc - __atomic_load_n(&service_page_next_judge_tsc, __ATOMIC_RELAXED)) < 0)
		return false;
	refused = service_page_rejudge_now(rate);
	if (since != 0)
		__atomic_store_n(&service_page_next_judge_tsc,
				 tsc + calib_line_ticks_for_ns(rate, SERVICE_PAGE_DOUBT_RETRY_NS),
				 __ATOMIC_RELAXED);
	if (refused == NULL) {
		if (since != 0 && clock_mulhi(tsc - __atomic_load_n(&service_page_last_doubt_tsc,
								    __ATOMIC_RELAXED),
					      rate) < SERVICE_PAGE_DOUBT_NS)
			return false;
		__atomic_store_n(&service_page_doubted_since_tsc, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&service_page_doubts, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&service_page_judged_until_tsc, tsc + period, __ATOMIC_RELEASE);
		clock_check_judged_until(tsc + period);
		return true;
	}
	if (since == 0) {
		debug_log("the page %s: %s; answering with libc while it does",
			  service_page_served(), refused);
		__atomic_store_n(&service_page_judged_until_tsc, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&service_page_next_judge_tsc,
				 tsc + calib_line_ticks_for_ns(rate, SERVICE_PAGE_DOUBT_RETRY_NS),
				 __ATOMIC_RELAXED);
		__atomic_store_n(&service_page_doubted_since_tsc, tsc, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&service_page_last_doubt_tsc, tsc, __ATOMIC_RELAXED);
	__atomic_store_n(&service_page_doubt_why, refused, __ATOMIC_RELAXED);
	__atomic_add_fetch(&service_page_doubts, 1, __ATOMIC_RELAXED);
	return false;
}

bool service_page_rejudge(uint64_t tsc)
{
	uint64_t rate = __atomic_load_n(&service_page_rate, __ATOMIC_RELAXED);
	uint64_t until;
	bool read_only, right;

	read_only = __atomic_load_n(&table_read_only, __ATOMIC_SEQ_CST);
	if (!read_only || rate == 0) {
		/* The process's own lines: nothing to judge again. Unless a
		 * page was mapped over them meanwhile, whose acceptance set a
		 * deadline after the table became read-only (both in one
		 * order with these: service_page_rejudge_reset). */
		clock_check_judged_until(UINT64_MAX);
		if (!read_only && __atomic_load_n(&table_read_only, __ATOMIC_SEQ_CST))
			clock_check_judged_until(0);
		return true;
	}
	/* A fork child's first judgement looks at its time namespace. */
	if (!refresh_served_under_filter() && !service_page_time_namespace_checked())
		return false;
	until = __atomic_load_n(&service_page_judged_until_tsc, __ATOMIC_ACQUIRE);
	if ((int64_t)(until - tsc) > 0 &&
	    until - tsc <= calib_line_ticks_for_ns(rate, SERVICE_PAGE_REJUDGE_NS)) {
		clock_check_judged_until(until);
		return true;
	}
	if (__atomic_exchange_n(&wiped.words.judging, true, __ATOMIC_ACQ_REL))
		return false;
	right = service_page_rejudge_held(tsc, rate);
	__atomic_store_n(&wiped.words.judging, false, __ATOMIC_RELEASE);
	return right;
}

void service_page_rejudge_reset(uint64_t tsc, uint64_t rate)
{
	__atomic_store_n(&service_page_doubted_since_tsc, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&service_page_doubts, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&service_page_judged_until_tsc,
			 tsc + calib_line_ticks_for_ns(rate, SERVICE_PAGE_REJUDGE_NS),
			 __ATOMIC_RELEASE);
	__atomic_store_n(&wiped.words.judging, false, __ATOMIC_RELEASE);
	/* Every thread's reads, own lines' included, now go by the page's
	 * judgement: after the table became read-only, in one order with
	 * service_page_rejudge's own-lines branch. */
	clock_check_judged_until(__atomic_load_n(&service_page_judged_until_tsc, __ATOMIC_RELAXED));
}

const char *service_page_condemned(void)
{
	uint64_t since = __atomic_load_n(&service_page_doubted_since_tsc, __ATOMIC_RELAXED);
	uint64_t rate = __atomic_load_n(&service_page_rate, __ATOMIC_RELAXED);

	if (since == 0 || rate == 0 || !__atomic_load_n(&table_read_only, __ATOMIC_ACQUIRE) ||
	    __atomic_load_n(&service_page_doubts, __ATOMIC_RELAXED) < SERVICE_PAGE_DOUBTS ||
	    clock_mulhi(__atomic_load_n(&service_page_last_doubt_tsc, __ATOMIC_RELAXED) - since,
			rate) < SERVICE_PAGE_DOUBT_NS)
		return NULL;
	return __atomic_load_n(&service_page_doubt_why, __ATOMIC_RELAXED);
}
