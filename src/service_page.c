/* The calibration service's page: its checks, a reader's mapping of it,
 * and the service's making of it. */
#include "config.h"

#include "service_page.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "cpu.h"
#include "debug.h"
#include "raw_syscall.h"
#include "timespec_ns.h"

/* A served process's TSC rate (a line's slope), kept when it maps the
 * page: how long the page has been stale is told in ns even where the
 * service has withdrawn every line. */
static uint64_t service_page_rate;

/* Where the page that serves this process was found, which file it was,
 * and what it was judged for: a reader looks there again while its page
 * is stale (service_page_look_again). */
static char service_page_served_path[PATH_MAX];
static dev_t service_page_served_device;
static ino_t service_page_served_inode;
static struct service_page_expect service_page_served_expect;
/* When the next look may be, in TSC ticks. */
static uint64_t service_page_next_look_tsc;
/* Taken, never waited for, by whoever changes what is mapped over the
 * table once the process runs (a look again, a leave): another caller
 * (a thread beside it, a signal handler) finds it taken and goes on. */
static bool service_page_remapping;

/* A TSC between 1 and 20 GHz: a line's slope (ns per tick, as a 64-bit
 * fraction) is then below 1 and above 1/20. A slope of 1 or more cannot
 * be written in the record at all. */
#define SERVICE_PAGE_MIN_MULT (UINT64_MAX / 20u)

void service_page_time_namespace(uint64_t *device, uint64_t *inode)
{
	struct stat st;

	*device = 0;
	*inode = 0;
	if (stat("/proc/self/ns/time", &st) == 0) {
		*device = (uint64_t)st.st_dev;
		*inode = (uint64_t)st.st_ino;
	}
}

void service_page_expect_from(struct service_page_expect *expect, const struct settings *settings,
			      bool rseq_registered)
{
	expect->uid = geteuid();
	expect->relaxed = settings->relaxed;
	expect->force = settings->force;
	expect->hidden_hwcaps = settings->hidden_hwcaps;
	expect->rseq_registered = rseq_registered;
	/* Only once a page is found (service_page_look_at): a stat of /proc
	 * at every process start would be paid where no service runs. */
	expect->time_ns_device = 0;
	expect->time_ns_inode = 0;
}

/* The kernel's clock by a raw system call: in a constructor no libc
 * function is looked up, and a time namespace's offsets apply to it as
 * they do to the vDSO's answer. 0 when it fails. */
static uint64_t service_page_kernel_ns(clockid_t clock)
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

/* The settings a reader would read with must be the service's: the page's
 * flags say which entry points answer, in the service's mode. */
static const char *service_page_judge_header(const struct service_page_header *header,
					     const struct service_page_expect *expect)
{
	if (header->magic != SERVICE_PAGE_MAGIC)
		return "not a fasttime page (wrong magic)";
	if (header->version != SERVICE_PAGE_VERSION)
		return "a page of another version";
	if (header->size != SERVICE_PAGE_SIZE)
		return "a page of another size";
	if (header->relaxed != expect->relaxed)
		return "the service reads in another mode (FASTTIME_MODE)";
	if (header->force != expect->force)
		return "the service has another FASTTIME_FORCE";
	if (header->hidden_hwcaps != expect->hidden_hwcaps)
		return "the service hides other CPU features (FASTTIME_HWCAPS)";
	return NULL;
}

/* The reader's CLOCK_MONOTONIC at the TSC reading tsc: the kernel's clock
 * read just before and just after it, so that a preemption between the
 * reads widens the bracket instead of failing the check. */
struct service_page_bracket {
	uint64_t before_ns, tsc, after_ns;
};

static struct service_page_bracket service_page_bracket_now(void)
{
	struct service_page_bracket bracket;

	bracket.before_ns = service_page_kernel_ns(CLOCK_MONOTONIC);
	bracket.tsc = cpu_rdtsc();
	bracket.after_ns = service_page_kernel_ns(CLOCK_MONOTONIC);
	return bracket;
}

/* Whether ns lies within the agreement of the bracket. */
static bool service_page_agrees(const struct service_page_bracket *bracket, uint64_t ns)
{
	return bracket->before_ns != 0 && ns + SERVICE_PAGE_AGREE_NS >= bracket->before_ns &&
	       ns <= bracket->after_ns + SERVICE_PAGE_AGREE_NS;
}

/* Every CPU the reader may run on has a line: a reader left on a CPU the
 * service does not calibrate would answer with libc for its whole life,
 * where its own thread would calibrate that CPU. */
static const char *service_page_judge_coverage(const struct table_page *page)
{
	unsigned long mask[TABLE_WANTED_WORDS] = { 0 };
	long bytes = raw_syscall(SYS_sched_getaffinity, 0, (long)sizeof mask, (long)mask, 0, 0, 0);

	if (bytes <= 0)
		return NULL;
	for (uint32_t cpu = 0; cpu < CPU_MAX_CPUS; cpu++)
		if (cpu_mask_has(mask, cpu) && page->records[cpu].mult == 0)
			return "a CPU this process may run on has no line in it";
	return NULL;
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
 * what its own kernel says, now (a second try after a preemption). */
static const char *service_page_judge_lines(const struct table_page *page,
					    const struct table_record **line_out)
{
	const struct table_record *chosen = NULL;
	uint32_t here = CPU_MAX_CPUS;
	const char *refused;

	if (raw_syscall(SYS_getcpu, (long)&here, 0, 0, 0, 0, 0) != 0)
		here = CPU_MAX_CPUS;
	for (uint32_t cpu = 0; cpu < CPU_MAX_CPUS; cpu++) {
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
	refused = service_page_judge_coverage(page);
	if (refused != NULL)
		return refused;
	for (unsigned attempt = 0;; attempt++) {
		struct service_page_bracket bracket = service_page_bracket_now();
		struct calib_line line = table_load_record(chosen);

		if (service_page_agrees(&bracket,
					clock_mulhi(bracket.tsc, line.mult) + line.offset))
			return NULL;
		if (attempt == 1)
			return "its lines disagree with this process's CLOCK_MONOTONIC "
			       "(another boot or another time namespace)";
	}
}

/* The judge, and the line it judged the page by (where it serves): its
 * slope is the TSC's rate, which a served process keeps. */
static const char *service_page_judge_by_line(const struct table_page *page,
					      const struct service_page_expect *expect,
					      const struct table_record **line)
{
	const struct table_shared *shared = &page->shared;
	uint32_t flags = __atomic_load_n(&shared->api_flags, __ATOMIC_RELAXED);
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
	 * gives it (then the service itself had no rseq). */
	if ((flags & (CLOCK_MODE_RELAXED | CLOCK_READ_LFENCE)) && !(flags & CLOCK_CPU_GETCPU) &&
	    !expect->rseq_registered)
		return "the service reads the CPU id from rseq, which this process lacks";
	if (valid_ticks == 0 || cpu_rdtsc() - valid_from > valid_ticks)
		return "stale: the service stopped renewing it";
	if (header->time_ns_inode != 0 && expect->time_ns_inode != 0 &&
	    (header->time_ns_inode != expect->time_ns_inode ||
	     header->time_ns_device != expect->time_ns_device))
		return "written in another time namespace";
	refused = service_page_judge_lines(page, line);
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

bool service_page_user_path(char path[PATH_MAX])
{
	const char *runtime = settings_secure_getenv("XDG_RUNTIME_DIR");
	int written;

	if (runtime == NULL || runtime[0] != '/')
		return false;
	written =
	    snprintf(path, PATH_MAX, "%s/%s/%s", runtime, SERVICE_PAGE_USER_DIR, SERVICE_PAGE_NAME);
	return written > 0 && written < PATH_MAX;
}

unsigned service_page_default_paths(uid_t uid, char paths[2][PATH_MAX])
{
	unsigned count = 0;

	snprintf(paths[count++], PATH_MAX, "%s", SERVICE_PAGE_SYSTEM_PATH);
	if (uid != 0 && service_page_user_path(paths[count]))
		count++;
	return count;
}

/* The file: a regular one, of the page's size, owned by root or by the
 * reader's user, and written by nobody else. */
static const char *service_page_judge_file(const struct stat *st,
					   const struct service_page_expect *expect)
{
	if (!S_ISREG(st->st_mode))
		return "not a regular file";
	if (st->st_uid != 0 && st->st_uid != expect->uid)
		return "owned by another user";
	if (st->st_mode & (S_IWGRP | S_IWOTH))
		return "writable by group or others";
	if (st->st_size != (off_t)SERVICE_PAGE_SIZE)
		return "of the wrong size";
	return NULL;
}

/* Moves the view of a page that serves (the file st, judged through that
 * view) over the table, read-only: one mremap, which readers see as the
 * old table until it is done and the new page from then on; the file is
 * never mapped again by its descriptor, which another thread of the
 * program could have closed and reused meanwhile. NULL when done (the view
 * is then the table), else why not (the view is still the caller's). */
static const char *service_page_attach(const struct table_page *view, const struct stat *st,
				       const char *path, const struct service_page_expect *expect,
				       uint64_t rate)
{
	bool again = __atomic_load_n(&table_read_only, __ATOMIC_ACQUIRE);
	size_t length = strlen(path);

	if (length >= sizeof service_page_served_path)
		return "a path too long";
	/* Before the mapping: from now on no writer may touch the table. */
	__atomic_store_n(&table_read_only, true, __ATOMIC_RELEASE);
	if (mremap((void *)view, SERVICE_PAGE_SIZE, SERVICE_PAGE_SIZE,
		   MREMAP_MAYMOVE | MREMAP_FIXED, &table_page) == MAP_FAILED) {
		/* The kernel may have unmapped the table already. Never served
		 * before, it becomes this process's own again, empty, as it
		 * was; served before, it stays read-only, and empty: the
		 * process finds it abandoned and leaves it. */
		if (mmap(&table_page, SERVICE_PAGE_SIZE, again ? PROT_READ : PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED &&
		    !again)
			__atomic_store_n(&table_read_only, false, __ATOMIC_RELEASE);
		return "cannot be mapped over the table";
	}
	__atomic_store_n(&service_page_rate, rate, __ATOMIC_RELAXED);
	/* path may be service_page_served_path itself (a look again). */
	memmove(service_page_served_path, path, length + 1);
	service_page_served_device = st->st_dev;
	service_page_served_inode = st->st_ino;
	service_page_served_expect = *expect;
	return NULL;
}

/* The file's status by a raw system call: open, fstat and close are
 * cancellation points in libc, and a served reader's look at its page runs
 * inside the program's time call, where a pending cancellation must not
 * act (x86-64's struct stat is the kernel's). */
static int service_page_fstat(int fd, struct stat *st)
{
	return (int)raw_syscall(SYS_fstat, fd, (long)st, 0, 0, 0, 0);
}

void service_page_look_at(const char *path, const struct service_page_expect *expect, bool attach,
			  struct service_page_look *look)
{
	struct service_page_expect here = *expect;
	const struct table_record *line = NULL;
	const struct table_page *view;
	struct stat st;
	int fd;

	memset(look, 0, sizeof *look);
	if (sysconf(_SC_PAGESIZE) != TABLE_PAGE_ALIGN) {
		look->refused = "this machine's pages are not the table's";
		return;
	}
	fd = (int)raw_syscall(SYS_openat, AT_FDCWD, (long)path,
			      O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK, 0, 0, 0);
	if (fd < 0) {
		look->refused = errno == ENOENT ? "no page" : "cannot be opened";
		return;
	}
	look->found = true;
	look->refused = service_page_fstat(fd, &st) != 0 ? "cannot be examined"
							 : service_page_judge_file(&st, expect);
	view = look->refused != NULL ? MAP_FAILED
				     : mmap(NULL, SERVICE_PAGE_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	/* The mapping keeps the file: the descriptor goes at once. */
	raw_syscall(SYS_close, fd, 0, 0, 0, 0, 0);
	if (look->refused != NULL)
		return;
	if (view == MAP_FAILED) {
		look->refused = "cannot be mapped";
		return;
	}
	if (here.time_ns_inode == 0)
		service_page_time_namespace(&here.time_ns_device, &here.time_ns_inode);
	look->refused = service_page_judge_by_line(view, &here, &line);
	memcpy(&look->header, view->header, sizeof look->header);
	if (look->refused == NULL && attach) {
		look->refused = service_page_attach(view, &st, path, &here, line->mult);
		if (look->refused == NULL)
			return; /* the view is the table now */
	}
	munmap((void *)view, SERVICE_PAGE_SIZE);
}

bool service_page_find(const struct settings *settings, bool rseq_registered, bool attach,
		       char path[PATH_MAX], struct service_page_look *look)
{
	struct service_page_expect expect;
	char paths[2][PATH_MAX];
	unsigned count;

	service_page_expect_from(&expect, settings, rseq_registered);
	path[0] = '\0';
	memset(look, 0, sizeof *look);
	look->refused = "no page";
	if (settings_page_none(settings))
		return false;
	if (settings->page != NULL) {
		snprintf(paths[0], PATH_MAX, "%s", settings->page);
		count = 1;
	} else {
		count = service_page_default_paths(expect.uid, paths);
	}
	for (unsigned i = 0; i < count; i++) {
		struct service_page_look this;

		service_page_look_at(paths[i], &expect, attach, &this);
		if (!this.found && settings->page == NULL)
			continue;
		*look = this;
		memcpy(path, paths[i], PATH_MAX);
		if (this.refused == NULL)
			return true;
		debug_log("not served by the page %s: %s", paths[i], this.refused);
	}
	return false;
}

bool service_page_leave(bool only_if_abandoned)
{
	/* One caller maps the table back; another (a thread beside it, a
	 * signal handler) finds it done or being done, and leaves it be. */
	if (!__atomic_load_n(&table_read_only, __ATOMIC_ACQUIRE) ||
	    __atomic_exchange_n(&service_page_remapping, true, __ATOMIC_ACQ_REL))
		return false;
	/* Under the flag, again: a look may have put a new page in place
	 * between the caller's judgement and now. */
	if (!__atomic_load_n(&table_read_only, __ATOMIC_ACQUIRE) ||
	    (only_if_abandoned && !service_page_abandoned()) ||
	    mmap(&table_page, SERVICE_PAGE_SIZE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) {
		__atomic_store_n(&service_page_remapping, false, __ATOMIC_RELEASE);
		return false;
	}
	service_page_served_path[0] = '\0';
	__atomic_store_n(&table_read_only, false, __ATOMIC_RELEASE);
	__atomic_store_n(&service_page_remapping, false, __ATOMIC_RELEASE);
	return true;
}

/* A counter read on a CPU a little behind the service's, just after the
 * validity began, is that far from fresh, not 2^64 ticks stale; one
 * further back than this (a counter reset by a resume) is stale. */
#define SERVICE_PAGE_SKEW_NS 1000000ull

/* How long a served process's page has been stale, in ns by its lines'
 * rate (0: it is fresh, or the process is not served). The page of a
 * service that ended is stale from its end (service_stop). */
static uint64_t service_page_stale_ns(uint64_t tsc)
{
	const struct table_shared *shared = &table_page.shared;
	uint64_t valid_from, valid_ticks, stale_ticks;
	uint64_t mult = __atomic_load_n(&service_page_rate, __ATOMIC_RELAXED);

	if (!__atomic_load_n(&table_read_only, __ATOMIC_ACQUIRE))
		return 0;
	valid_from = __atomic_load_n(&shared->valid_from_tsc, __ATOMIC_ACQUIRE);
	valid_ticks = __atomic_load_n(&shared->valid_ticks, __ATOMIC_ACQUIRE);
	stale_ticks = tsc - valid_from;
	if ((int64_t)stale_ticks < 0)
		return clock_mulhi(valid_from - tsc, mult) < SERVICE_PAGE_SKEW_NS ? 0 : UINT64_MAX;
	if (stale_ticks <= valid_ticks)
		return 0;
	return clock_mulhi(stale_ticks - valid_ticks, mult);
}

bool service_page_abandoned(void)
{
	return service_page_stale_ns(cpu_rdtsc()) > SERVICE_PAGE_ABANDON_NS;
}

bool service_page_look_due(void)
{
	uint64_t tsc = cpu_rdtsc();
	uint64_t next = __atomic_load_n(&service_page_next_look_tsc, __ATOMIC_RELAXED);
	uint64_t mult = __atomic_load_n(&service_page_rate, __ATOMIC_RELAXED);
	uint64_t period_ticks;

	if (mult == 0 || service_page_stale_ns(tsc) < SERVICE_PAGE_LOOK_AGAIN_NS)
		return false;
	/* Ticks for the period: ns / (mult / 2^64); mult is a line's slope,
	 * below 1 ns per tick, so the quotient fits. */
	period_ticks = (uint64_t)(((unsigned __int128)SERVICE_PAGE_LOOK_AGAIN_NS << 64) / mult);
	/* Not yet, unless the counter went back beyond a period (a resume
	 * that reset it): then now. */
	if ((int64_t)(tsc - next) < 0 && next - tsc <= period_ticks)
		return false;
	return __atomic_compare_exchange_n(&service_page_next_look_tsc, &next, tsc + period_ticks,
					   false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

const char *service_page_served(void)
{
	return __atomic_load_n(&table_read_only, __ATOMIC_ACQUIRE) ? service_page_served_path
								   : NULL;
}

bool service_page_look_again(void)
{
	struct service_page_look look;
	struct stat st;
	bool served = false;

	if (__atomic_exchange_n(&service_page_remapping, true, __ATOMIC_ACQ_REL))
		return false;
	/* Under the flag: a leave may have come between. */
	if (__atomic_load_n(&table_read_only, __ATOMIC_ACQUIRE) &&
	    service_page_served_path[0] != '\0' &&
	    raw_syscall(SYS_newfstatat, AT_FDCWD, (long)service_page_served_path, (long)&st, 0, 0,
			0) == 0 &&
	    (st.st_dev != service_page_served_device || st.st_ino != service_page_served_inode)) {
		service_page_look_at(service_page_served_path, &service_page_served_expect, true,
				     &look);
		served = look.refused == NULL;
		if (!served)
			debug_log("not served by the page %s: %s", service_page_served_path,
				  look.refused);
	}
	__atomic_store_n(&service_page_remapping, false, __ATOMIC_RELEASE);
	return served;
}

void service_page_after_fork_in_child(void)
{
	/* A look or a leave in another thread of the parent (or in this one,
	 * under a handler) happened whole or not at all for the child's
	 * mapping: the flag it held is nobody's here. */
	__atomic_store_n(&service_page_remapping, false, __ATOMIC_RELEASE);
}

bool service_page_same_time_namespace(void)
{
	const struct service_page_header *header =
	    (const struct service_page_header *)table_page.header;
	uint64_t device, inode;

	service_page_time_namespace(&device, &inode);
	return header->time_ns_inode == 0 || inode == 0 ||
	       (header->time_ns_inode == inode && header->time_ns_device == device);
}

/* Makes path's directory, one level, as the service's defaults need:
 * /run/fasttime for everyone to read, $XDG_RUNTIME_DIR/fasttime for its
 * user alone. */
static bool service_page_make_directory(const char *path, char *error, size_t error_len)
{
	mode_t mode = geteuid() == 0 ? 0755 : 0700;
	char directory[PATH_MAX];
	char *slash;

	snprintf(directory, sizeof directory, "%s", path);
	slash = strrchr(directory, '/');
	if (slash == NULL || slash == directory)
		return true;
	*slash = '\0';
	if (mkdir(directory, mode) != 0) {
		if (errno == EEXIST)
			return true;
		snprintf(error, error_len, "cannot make %s: %s", directory, strerror(errno));
		return false;
	}
	/* Set again: mkdir's mode is cut by the umask, and every reader of
	 * the system's page must be able to enter its directory. */
	if (chmod(directory, mode) != 0) {
		snprintf(error, error_len, "cannot set the mode of %s: %s", directory,
			 strerror(errno));
		return false;
	}
	return true;
}

/* One service per page: a lock file beside it, held for the service's
 * life. A second service on the same path would rename its page over the
 * first's, which would go on calibrating for nobody. */
static bool service_page_lock(struct service_page_writer *writer, char *error, size_t error_len)
{
	writer->lock_fd = open(writer->lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (writer->lock_fd < 0) {
		snprintf(error, error_len, "cannot open %s: %s", writer->lock, strerror(errno));
		return false;
	}
	if (flock(writer->lock_fd, LOCK_EX | LOCK_NB) != 0) {
		snprintf(error, error_len, "another service publishes %s (%s is locked)",
			 writer->path, writer->lock);
		close(writer->lock_fd);
		writer->lock_fd = -1;
		return false;
	}
	return true;
}

bool service_page_create(struct service_page_writer *writer, const char *path,
			 const struct settings *settings, char *error, size_t error_len)
{
	struct service_page_header header = {
		.magic = SERVICE_PAGE_MAGIC,
		.version = SERVICE_PAGE_VERSION,
		.size = SERVICE_PAGE_SIZE,
		.service_pid = (int32_t)getpid(),
		.interval_ms = settings->interval_ms,
		.hidden_hwcaps = settings->hidden_hwcaps,
		.relaxed = settings->relaxed,
		.force = settings->force,
	};
	struct stat st;
	int fd, written;

	service_page_time_namespace(&header.time_ns_device, &header.time_ns_inode);
	memset(writer, 0, sizeof *writer);
	writer->lock_fd = -1;
	written = snprintf(writer->path, sizeof writer->path, "%s", path);
	if (written <= 0 || written >= (int)sizeof writer->path ||
	    snprintf(writer->temporary, sizeof writer->temporary, "%s.XXXXXX", path) >=
		(int)sizeof writer->temporary ||
	    snprintf(writer->lock, sizeof writer->lock, "%s.lock", path) >=
		(int)sizeof writer->lock) {
		snprintf(error, error_len, "the page's path is too long");
		return false;
	}
	if (!service_page_make_directory(path, error, error_len) ||
	    !service_page_lock(writer, error, error_len))
		return false;
	fd = mkostemp(writer->temporary, O_CLOEXEC);
	if (fd < 0) {
		snprintf(error, error_len, "cannot make %s: %s", writer->temporary,
			 strerror(errno));
		writer->temporary[0] = '\0';
		service_page_remove(writer);
		return false;
	}
	memcpy(table_page.header, &header, sizeof header);
	if (fchmod(fd, 0644) != 0 ||
	    write(fd, &table_page, SERVICE_PAGE_SIZE) != (ssize_t)SERVICE_PAGE_SIZE ||
	    fstat(fd, &st) != 0 ||
	    mmap(&table_page, SERVICE_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd,
		 0) == MAP_FAILED) {
		snprintf(error, error_len, "cannot write %s: %s", writer->temporary,
			 strerror(errno));
		close(fd);
		service_page_remove(writer);
		return false;
	}
	writer->device = st.st_dev;
	writer->inode = st.st_ino;
	close(fd);
	return true;
}

bool service_page_publish(struct service_page_writer *writer, char *error, size_t error_len)
{
	if (rename(writer->temporary, writer->path) != 0) {
		snprintf(error, error_len, "cannot name the page %s: %s", writer->path,
			 strerror(errno));
		return false;
	}
	writer->temporary[0] = '\0';
	writer->published = true;
	return true;
}

void service_page_remove(struct service_page_writer *writer)
{
	struct stat st;

	if (writer->temporary[0] != '\0')
		unlink(writer->temporary);
	if (writer->published && stat(writer->path, &st) == 0 && st.st_dev == writer->device &&
	    st.st_ino == writer->inode)
		unlink(writer->path);
	writer->published = false;
	writer->temporary[0] = '\0';
	/* Unlinked while held: a service starting meanwhile makes its own. */
	if (writer->lock_fd >= 0) {
		unlink(writer->lock);
		close(writer->lock_fd);
		writer->lock_fd = -1;
	}
}
