/* The judge of a calibration service's page: whether a view of a page
 * file can serve this reader, now (its file, its header, its lines
 * against this process's own clocks, its offsets, its coverage of the
 * CPUs the reader may run on). Reads the TSC and the kernel's clocks by
 * raw system calls: it judges inside a program's time call (its first, or
 * a look again), which must not look up libc's functions for it. */
#include "config.h"

#include "service_page.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>

#include "clock.h"
#include "cpu.h"
#include "raw_syscall.h"
#include "timespec_ns.h"

/* A TSC between 1 and 20 GHz: a line's slope (ns per tick, as a 64-bit
 * fraction) is then below 1 and above 1/20. A slope of 1 or more cannot
 * be written in the record at all. */
#define SERVICE_PAGE_MIN_MULT (UINT64_MAX / 20u)

uint64_t service_page_kernel_ns(clockid_t clock)
{
	struct timespec ts;

	if (raw_syscall(SYS_clock_gettime, clock, (long)&ts, 0, 0, 0, 0) != 0)
		return 0;
	return timespec_to_ns(&ts);
}

/* How far apart two readings or offsets are, modulo 2^64: an offset near
 * 0 may be measured a few ns below it, and wraps. */
static uint64_t service_page_distance(uint64_t a, uint64_t b)
{
	int64_t d = (int64_t)(a - b);

	return d < 0 ? (uint64_t)0 - (uint64_t)d : (uint64_t)d;
}

/* The settings a reader would read with must be the service's (but for
 * the mode: the page has flags for each). */
static const char *service_page_judge_header(const struct service_page_header *header,
					     const struct service_page_expect *expect)
{
	if (header->magic != SERVICE_PAGE_MAGIC)
		return "not a fasttime page (wrong magic)";
	if (header->version != SERVICE_PAGE_VERSION)
		return "a page of another version (this library reads version " SERVICE_PAGE_TEXT(
		    SERVICE_PAGE_VERSION) "; restart the service with this fasttime)";
	if (header->size != SERVICE_PAGE_SIZE)
		return "a page of another size";
	if (header->force != expect->force)
		return "the service has another FASTTIME_FORCE";
	if (header->hidden_hwcaps != expect->hidden_hwcaps)
		return "the service hides other CPU features (FASTTIME_HWCAPS)";
	return NULL;
}

/* The reader's clock at the TSC reading tsc: the kernel's clock read just
 * before and just after it, so that a preemption between the reads widens
 * the bracket instead of failing the check. */
struct service_page_bracket {
	uint64_t before_ns, tsc, after_ns;
};

/* A TSC reading now, bracketed by the kernel's clock. */
static struct service_page_bracket service_page_bracket_now(clockid_t clock)
{
	struct service_page_bracket bracket;

	bracket.before_ns = service_page_kernel_ns(clock);
	bracket.tsc = cpu_rdtsc();
	bracket.after_ns = service_page_kernel_ns(clock);
	return bracket;
}

/* Whether ns lies within the agreement of the bracket. */
static bool service_page_agrees(const struct service_page_bracket *bracket, uint64_t ns)
{
	return bracket->before_ns != 0 && ns + SERVICE_PAGE_AGREE_NS >= bracket->before_ns &&
	       ns <= bracket->after_ns + SERVICE_PAGE_AGREE_NS;
}

/* Whether record's line says what the reader's own clock says now (a
 * second try after a preemption between the reads). */
static bool service_page_line_agrees(const struct table_record *record, clockid_t clock)
{
	for (unsigned attempt = 0; attempt < 2; attempt++) {
		struct service_page_bracket bracket = service_page_bracket_now(clock);
		struct calib_line line = table_load_record(record);

		if (service_page_agrees(&bracket,
					clock_mulhi(bracket.tsc, line.mult) + line.offset))
			return true;
	}
	return false;
}

/* Every present line of records (a CPU's monotonic or raw lines) says
 * what the reader's own clock says, all at the same TSC reading: the
 * CPUs' counters are one clock, so a line that disagrees would answer
 * wrong on its CPU, whichever CPU the reader runs on now (a second try
 * after a preemption between the reads). */
static bool service_page_every_line_agrees(const struct table_record *records, clockid_t clock,
					   uint32_t cpus)
{
	for (unsigned attempt = 0; attempt < 2; attempt++) {
		struct service_page_bracket bracket = service_page_bracket_now(clock);
		bool agree = true;

		for (uint32_t cpu = 0; cpu < cpus && agree; cpu++) {
			struct calib_line line = table_load_record(&records[cpu]);

			if (line.mult != 0)
				agree = service_page_agrees(
				    &bracket, clock_mulhi(bracket.tsc, line.mult) + line.offset);
		}
		if (agree)
			return true;
	}
	return false;
}

/* Every CPU the reader may run on is one the service calibrates: a reader
 * left on a CPU the service never visits would answer with libc for its
 * whole life, where its own thread would calibrate that CPU. A line the
 * service withdrew for a while (a real-time load kept it from the CPU)
 * comes back as it would for the reader's own thread. */
static const char *service_page_judge_coverage(const struct table_page *page,
					       const unsigned long mask[TABLE_CPU_MASK_WORDS])
{
	for (unsigned w = 0; w < TABLE_CPU_MASK_WORDS; w++)
		if (mask[w] & ~__atomic_load_n(&page->calibrated[w], __ATOMIC_RELAXED))
			return "a CPU this process may run on is not one the service calibrates";
	return NULL;
}

/* The CPU ids the kernel can give this process, now or after any change
 * of its affinity: below the size of the kernel's CPU masks (its
 * nr_cpu_ids, rounded up to a word), which sched_getaffinity returns.
 * Records at or beyond it are never read on the read path, so the judges
 * leave them unread: each page of the mapping first touched is a fault,
 * and a judge that read all CPU_MAX_CPUS records of both kinds touched 32
 * of them at every served process's start. */
static uint32_t service_page_cpus = CPU_MAX_CPUS;

uint32_t service_page_cpu_limit(void)
{
	return __atomic_load_n(&service_page_cpus, __ATOMIC_RELAXED);
}

/* The reader's affinity into mask (all zero where it cannot be asked), and
 * the CPU ids the kernel can ever give it (service_page_cpus). */
static void service_page_read_affinity(unsigned long mask[TABLE_CPU_MASK_WORDS])
{
	long bytes;

	/* The kernel writes the words of its own masks only. */
	memset(mask, 0, TABLE_CPU_MASK_WORDS * sizeof(unsigned long));
	bytes =
	    raw_syscall(SYS_sched_getaffinity, 0,
			(long)(TABLE_CPU_MASK_WORDS * sizeof(unsigned long)), (long)mask, 0, 0, 0);
	if (bytes <= 0) {
		memset(mask, 0, TABLE_CPU_MASK_WORDS * sizeof(unsigned long));
		return;
	}
	if ((unsigned long)bytes * 8 < CPU_MAX_CPUS)
		__atomic_store_n(&service_page_cpus, (uint32_t)bytes * 8, __ATOMIC_RELAXED);
}

/* Whether offset is clock minus CLOCK_MONOTONIC here, within the
 * agreement and the width of the reads; true where the kernel cannot be
 * asked. */
static bool service_page_offset_agrees(clockid_t clock, uint64_t offset)
{
	uint64_t before = service_page_kernel_ns(CLOCK_MONOTONIC);
	uint64_t clock_ns = service_page_kernel_ns(clock);
	uint64_t after = service_page_kernel_ns(CLOCK_MONOTONIC);

	if (before == 0 || clock_ns == 0 || after < before)
		return true;
	return service_page_distance(offset, clock_ns - (before + (after - before) / 2)) <=
	       SERVICE_PAGE_AGREE_NS + (after - before);
}

/* Each offset the page answers a clock with (its clock's bit set) against
 * the reader's own: that clock minus CLOCK_MONOTONIC, read side by side. */
static const char *service_page_judge_offsets(const struct table_page *page, uint32_t flags)
{
	static const char *const refusals[CLOCK_OFFSET_COUNT] = {
		[CLOCK_OFFSET_REALTIME] = "its realtime offset disagrees with this process's "
					  "CLOCK_REALTIME",
		[CLOCK_OFFSET_BOOTTIME] = "its boottime offset disagrees with this process's "
					  "CLOCK_BOOTTIME (another time namespace)",
		[CLOCK_OFFSET_TAI] = "its TAI offset disagrees with this process's CLOCK_TAI",
	};

	for (unsigned kind = CLOCK_OFFSET_NONE + 1; kind < CLOCK_OFFSET_COUNT; kind++) {
		const struct clock_row *row = clock_table_row_for_offset(kind);
		uint64_t offset;

		if (row == NULL || !(flags & row->entry_points))
			continue;
		offset = __atomic_load_n(&page->shared.offset_ns[kind], __ATOMIC_RELAXED);
		/* A second try after a preemption between the reads. */
		if (!service_page_offset_agrees(row->id, offset) &&
		    !service_page_offset_agrees(row->id, offset))
			return refusals[kind];
	}
	return NULL;
}

/* The lines: each present one has a sane slope; every CPU the reader may
 * run on has one; the one of the CPU it runs on now (or the first) says
 * what its own kernel says, now (a second try after a preemption), and so
 * does every other present one, whether or not the reader may run there
 * now: its affinity may change. */
static const char *service_page_judge_lines(const struct table_page *page,
					    const struct table_record **line_out)
{
	const struct table_record *chosen = NULL;
	unsigned long mask[TABLE_CPU_MASK_WORDS];
	uint32_t here = CPU_MAX_CPUS, cpus;
	const char *refused;

	service_page_read_affinity(mask);
	cpus = service_page_cpu_limit();
	if (raw_syscall(SYS_getcpu, (long)&here, 0, 0, 0, 0, 0) != 0)
		here = CPU_MAX_CPUS;
	for (uint32_t cpu = 0; cpu < cpus; cpu++) {
		const struct table_record *record = &page->records[cpu];
		uint64_t mult = __atomic_load_n(&record->mult, __ATOMIC_RELAXED);

		if (mult == 0)
			continue;
		if (mult < SERVICE_PAGE_MIN_MULT)
			return "a line with an absurd slope";
		if (chosen == NULL || cpu == here)
			chosen = record;
	}
	if (chosen == NULL)
		return "no CPU has a line";
	*line_out = chosen;
	refused = service_page_judge_coverage(page, mask);
	if (refused != NULL)
		return refused;
	if (!service_page_line_agrees(chosen, CLOCK_MONOTONIC))
		return "its lines disagree with this process's CLOCK_MONOTONIC "
		       "(another boot or another time namespace)";
	if (!service_page_every_line_agrees(page->records, CLOCK_MONOTONIC, cpus))
		return "another CPU's line disagrees with this process's CLOCK_MONOTONIC";
	return NULL;
}

/* CLOCK_MONOTONIC_RAW's lines, where the page answers that clock: each
 * present one has a sane slope, and says what the reader's own
 * CLOCK_MONOTONIC_RAW says (the one of the CPU the monotonic lines were
 * judged by, cpu, first). A CPU without one answers it with libc. */
static const char *service_page_judge_raw_lines(const struct table_page *page, uint32_t cpu,
						uint32_t flags)
{
	if (!(flags & CLOCK_API_MONOTONIC_RAW))
		return NULL;
	uint32_t cpus = service_page_cpu_limit();

	for (uint32_t other = 0; other < cpus; other++) {
		uint64_t mult = __atomic_load_n(&page->raw_records[other].mult, __ATOMIC_RELAXED);

		if (mult != 0 && mult < SERVICE_PAGE_MIN_MULT)
			return "a CLOCK_MONOTONIC_RAW line with an absurd slope";
	}
	if (__atomic_load_n(&page->raw_records[cpu].mult, __ATOMIC_RELAXED) != 0 &&
	    !service_page_line_agrees(&page->raw_records[cpu], CLOCK_MONOTONIC_RAW))
		return "its CLOCK_MONOTONIC_RAW lines disagree with this process's";
	if (!service_page_every_line_agrees(page->raw_records, CLOCK_MONOTONIC_RAW, cpus))
		return "another CPU's CLOCK_MONOTONIC_RAW line disagrees with this process's";
	return NULL;
}

/* The reader's time namespace must be the service's. Where one side can
 * tell its own and the other cannot (no /proc, which a mount namespace
 * can hide, and a kernel without the pidfd's way to it), the kernel has
 * time namespaces and the reader may be in another: an offset below the
 * lines' agreement would go unseen, so the page is refused. */
static const char *service_page_judge_time_namespace(const struct service_page_header *header,
						     const struct service_page_expect *expect)
{
	if (header->time_ns_inode == 0 && expect->time_ns_inode == 0)
		return NULL;
	if (expect->time_ns_inode == 0)
		return "this process cannot tell its time namespace (no /proc)";
	if (header->time_ns_inode == 0)
		return "the service could not tell its time namespace";
	if (header->time_ns_inode != expect->time_ns_inode ||
	    header->time_ns_device != expect->time_ns_device)
		return "written in another time namespace";
	return NULL;
}

/* The judge, and the line it judged the page by (where it serves): its
 * slope is the TSC's rate, which a served process keeps. */
const char *service_page_judge_by_line(const struct table_page *page,
				       const struct service_page_expect *expect,
				       const struct table_record **line)
{
	const struct table_shared *shared = &page->shared;
	/* The reader's own mode's flags: what its entry points will read. */
	uint32_t flags = __atomic_load_n(
	    &shared->api_flags[expect->relaxed ? TABLE_MODE_RELAXED : TABLE_MODE_ORDERED],
	    __ATOMIC_RELAXED);
	uint64_t valid_from = __atomic_load_n(&shared->valid_from_tsc, __ATOMIC_ACQUIRE);
	uint64_t valid_ticks = __atomic_load_n(&shared->valid_ticks, __ATOMIC_ACQUIRE);
	const struct service_page_header *header = (const struct service_page_header *)page->header;
	const char *refused;

	refused = service_page_judge_header(header, expect);
	if (refused != NULL)
		return refused;
	if (flags & CLOCK_START_PENDING)
		return "the service has not started";
	/* Relaxed and fenced reads take the CPU id from rseq, unless getcpu
	 * gives it (then the service itself had no rseq): as the service
	 * read it for this reader's mode. */
	if ((flags & (CLOCK_MODE_RELAXED | CLOCK_READ_LFENCE)) && !(flags & CLOCK_CPU_GETCPU) &&
	    !expect->rseq_registered)
		return "the service reads the CPU id from rseq, which this process lacks";
	/* Before freshness: a page of another namespace is refused for that,
	 * whether or not its service is busy at this moment. */
	refused = service_page_judge_time_namespace(header, expect);
	if (refused != NULL)
		return refused;
	if (valid_ticks == 0 || cpu_rdtsc() - valid_from > valid_ticks)
		return SERVICE_PAGE_STALE_WHY;
	refused = service_page_judge_lines(page, line);
	if (refused == NULL)
		refused =
		    service_page_judge_raw_lines(page, (uint32_t)(*line - page->records), flags);
	if (refused == NULL)
		refused = service_page_judge_offsets(page, flags);
	if (refused != NULL)
		return refused;
	if (clock_mulhi(valid_ticks, (*line)->mult) > SERVICE_PAGE_MAX_VALID_NS)
		return "an absurd validity";
	return NULL;
}

const char *service_page_judge(const struct table_page *page,
			       const struct service_page_expect *expect)
{
	const struct table_record *line;

	return service_page_judge_by_line(page, expect, &line);
}

/* The uid the kernel shows for an owner this process's user namespace
 * does not map (/proc/sys/kernel/overflowuid; its default where that
 * cannot be read). Read by raw system calls, as the rest of the judge. */
static uid_t service_page_overflow_uid(void)
{
	char text[16] = { 0 };
	unsigned long uid = 0;
	long got = -1;
	int fd = (int)raw_syscall(SYS_openat, AT_FDCWD, (long)"/proc/sys/kernel/overflowuid",
				  O_RDONLY | O_CLOEXEC | O_NOCTTY, 0, 0, 0);

	if (fd >= 0) {
		got = raw_syscall(SYS_read, fd, (long)text, sizeof text - 1, 0, 0, 0);
		raw_syscall(SYS_close, fd, 0, 0, 0, 0, 0);
	}
	for (long i = 0; i < got && text[i] >= '0' && text[i] <= '9'; i++)
		uid = uid * 10 + (unsigned long)(text[i] - '0');
	return got > 0 && text[0] >= '0' && text[0] <= '9' && uid <= UINT32_MAX
		   ? (uid_t)uid
		   : SERVICE_PAGE_OVERFLOW_UID;
}

/* The owner rule: root, or the reader's user as this process's user
 * namespace sees them. An owner the namespace does not map shows as the
 * overflow uid, which may be the reader's own (nobody, in many
 * containers): such a file is another user's, whoever the reader is. */
const char *service_page_judge_owner(uid_t owner, const struct service_page_expect *expect)
{
	if (owner != 0 && owner != expect->uid)
		return "owned by another user";
	if (owner != 0 &&
	    (owner == SERVICE_PAGE_OVERFLOW_UID || owner == service_page_overflow_uid()))
		return "owned by a user this user namespace does not map (the overflow uid)";
	return NULL;
}

/* The file: a regular one, of the page's size, owned as the owner rule
 * allows, and written by nobody else. */
const char *service_page_judge_file(const struct stat *st, const struct service_page_expect *expect)
{
	const char *owner;

	if (!S_ISREG(st->st_mode))
		return "not a regular file";
	owner = service_page_judge_owner(st->st_uid, expect);
	if (owner != NULL)
		return owner;
	if (st->st_mode & (S_IWGRP | S_IWOTH))
		return "writable by group or others";
	if (st->st_size != (off_t)SERVICE_PAGE_SIZE)
		return "of the wrong size";
	return NULL;
}
