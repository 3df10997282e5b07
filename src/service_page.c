/* The calibration service's page: its checks, a reader's mapping of it,
 * and the service's making of it. */
#include "config.h"

#include "service_page.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* A TSC between 1 and 20 GHz: a line's slope (ns per tick, as a 64-bit
 * fraction) is then below 1 and above 1/20. A slope of 1 or more cannot
 * be written in the record at all. */
#define SERVICE_PAGE_MIN_MULT (UINT64_MAX / 20u)

void service_page_expect_from(struct service_page_expect *expect, const struct settings *settings,
			      bool rseq_registered)
{
	expect->uid = geteuid();
	expect->relaxed = settings->relaxed;
	expect->force = settings->force;
	expect->hidden_hwcaps = settings->hidden_hwcaps;
	expect->rseq_registered = rseq_registered;
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

static uint64_t service_page_distance(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
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

/* The lines: each present one has a sane slope, and the one of the CPU the
 * reader runs on (or the first, if that CPU has none) says what the
 * reader's own kernel says, now. */
static const char *service_page_judge_lines(const struct table_page *page)
{
	const struct table_record *chosen = NULL;
	uint32_t here = CPU_MAX_CPUS;
	uint64_t tsc, line_ns, kernel_ns, realtime_ns, offset;

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
	kernel_ns = service_page_kernel_ns(CLOCK_MONOTONIC);
	tsc = cpu_rdtsc();
	line_ns = clock_mulhi(tsc, __atomic_load_n(&chosen->mult, __ATOMIC_RELAXED)) +
		  __atomic_load_n(&chosen->offset, __ATOMIC_RELAXED);
	if (kernel_ns == 0 || service_page_distance(line_ns, kernel_ns) > SERVICE_PAGE_AGREE_NS)
		return "its lines disagree with this process's CLOCK_MONOTONIC "
		       "(another boot or another time namespace)";
	offset = __atomic_load_n(&page->shared.offset_ns[CLOCK_OFFSET_REALTIME], __ATOMIC_RELAXED);
	realtime_ns = service_page_kernel_ns(CLOCK_REALTIME);
	if (offset != 0 && realtime_ns != 0 &&
	    service_page_distance(line_ns + offset, realtime_ns) > SERVICE_PAGE_AGREE_NS)
		return "its realtime offset disagrees with this process's CLOCK_REALTIME";
	return NULL;
}

const char *service_page_judge(const struct table_page *page,
			       const struct service_page_expect *expect)
{
	const struct table_shared *shared = &page->shared;
	uint32_t flags = __atomic_load_n(&shared->api_flags, __ATOMIC_RELAXED);
	uint64_t valid_from = __atomic_load_n(&shared->valid_from_tsc, __ATOMIC_ACQUIRE);
	uint64_t valid_ticks = __atomic_load_n(&shared->valid_ticks, __ATOMIC_ACQUIRE);
	const struct table_record *any = NULL;
	const char *refused;

	refused =
	    service_page_judge_header((const struct service_page_header *)page->header, expect);
	if (refused != NULL)
		return refused;
	if (flags & CLOCK_START_PENDING)
		return "the service has not started";
	if ((flags & (CLOCK_MODE_RELAXED | CLOCK_READ_LFENCE)) && !expect->rseq_registered)
		return "the service reads the CPU id from rseq, which this process lacks";
	if (valid_ticks == 0 || cpu_rdtsc() - valid_from > valid_ticks)
		return "stale: the service stopped renewing it";
	refused = service_page_judge_lines(page);
	if (refused != NULL)
		return refused;
	for (uint32_t cpu = 0; cpu < CPU_MAX_CPUS && any == NULL; cpu++)
		if (page->records[cpu].mult != 0)
			any = &page->records[cpu];
	if (any != NULL && clock_mulhi(valid_ticks, any->mult) > SERVICE_PAGE_MAX_VALID_NS)
		return "an absurd validity";
	return NULL;
}

/* Not taken from the environment of a program running with more rights
 * than its caller's. */
static const char *service_page_getenv(const char *name)
{
#ifdef HAVE_SECURE_GETENV
	return secure_getenv(name);
#else
	return getenv(name);
#endif
}

unsigned service_page_default_paths(char paths[2][PATH_MAX])
{
	const char *runtime = service_page_getenv("XDG_RUNTIME_DIR");
	unsigned count = 0;
	int written;

	snprintf(paths[count++], PATH_MAX, "%s", SERVICE_PAGE_SYSTEM_PATH);
	if (geteuid() != 0 && runtime != NULL && runtime[0] == '/') {
		written = snprintf(paths[count], PATH_MAX, "%s/%s/%s", runtime,
				   SERVICE_PAGE_USER_DIR, SERVICE_PAGE_NAME);
		if (written > 0 && written < PATH_MAX)
			count++;
	}
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

void service_page_look_at(const char *path, const struct service_page_expect *expect, bool attach,
			  struct service_page_look *look)
{
	const struct table_page *view;
	struct stat st;
	int fd;

	memset(look, 0, sizeof *look);
	if (sysconf(_SC_PAGESIZE) != TABLE_PAGE_ALIGN) {
		look->refused = "this machine's pages are not the table's";
		return;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		look->refused = errno == ENOENT ? "no page" : "cannot be opened";
		return;
	}
	look->refused =
	    fstat(fd, &st) != 0 ? "cannot be examined" : service_page_judge_file(&st, expect);
	if (look->refused != NULL) {
		close(fd);
		return;
	}
	view = mmap(NULL, SERVICE_PAGE_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	if (view == MAP_FAILED) {
		look->refused = "cannot be mapped";
		close(fd);
		return;
	}
	look->refused = service_page_judge(view, expect);
	memcpy(&look->header, view->header, sizeof look->header);
	if (look->refused == NULL && attach) {
		/* Before the mapping: from now on no writer may touch the table. */
		__atomic_store_n(&table_read_only, true, __ATOMIC_RELEASE);
		if (mmap(&table_page, SERVICE_PAGE_SIZE, PROT_READ, MAP_SHARED | MAP_FIXED, fd,
			 0) == MAP_FAILED) {
			/* The table is still this process's own: nothing changed. */
			__atomic_store_n(&table_read_only, false, __ATOMIC_RELEASE);
			look->refused = "cannot be mapped over the table";
		}
	}
	munmap((void *)view, SERVICE_PAGE_SIZE);
	close(fd);
}

bool service_page_find(const struct settings *settings, bool rseq_registered, bool attach,
		       char path[PATH_MAX], struct service_page_look *look)
{
	struct service_page_expect expect;
	char paths[2][PATH_MAX];
	unsigned count;

	path[0] = '\0';
	memset(look, 0, sizeof *look);
	look->refused = "no page";
	if (settings_page_none(settings))
		return false;
	if (settings->page != NULL) {
		snprintf(paths[0], PATH_MAX, "%s", settings->page);
		count = 1;
	} else {
		count = service_page_default_paths(paths);
	}
	service_page_expect_from(&expect, settings, rseq_registered);
	for (unsigned i = 0; i < count; i++) {
		struct service_page_look this;

		service_page_look_at(paths[i], &expect, attach, &this);
		if (this.refused != NULL && strcmp(this.refused, "no page") == 0 &&
		    settings->page == NULL)
			continue;
		*look = this;
		memcpy(path, paths[i], PATH_MAX);
		if (this.refused == NULL)
			return true;
		debug_log("not served by the page %s: %s", paths[i], this.refused);
	}
	return false;
}

bool service_page_leave(void)
{
	if (!__atomic_load_n(&table_read_only, __ATOMIC_ACQUIRE))
		return true;
	if (mmap(&table_page, SERVICE_PAGE_SIZE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
		return false;
	__atomic_store_n(&table_read_only, false, __ATOMIC_RELEASE);
	return true;
}

/* Makes path's directory, one level, as the service's defaults need:
 * /run/fasttime for everyone to read, $XDG_RUNTIME_DIR/fasttime for its
 * user alone. */
static bool service_page_make_directory(const char *path, char *error, size_t error_len)
{
	char directory[PATH_MAX];
	char *slash;

	snprintf(directory, sizeof directory, "%s", path);
	slash = strrchr(directory, '/');
	if (slash == NULL || slash == directory)
		return true;
	*slash = '\0';
	if (mkdir(directory, geteuid() == 0 ? 0755 : 0700) == 0 || errno == EEXIST)
		return true;
	snprintf(error, error_len, "cannot make %s: %s", directory, strerror(errno));
	return false;
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

	memset(writer, 0, sizeof *writer);
	written = snprintf(writer->path, sizeof writer->path, "%s", path);
	if (written <= 0 || written >= (int)sizeof writer->path ||
	    snprintf(writer->temporary, sizeof writer->temporary, "%s.XXXXXX", path) >=
		(int)sizeof writer->temporary) {
		snprintf(error, error_len, "the page's path is too long");
		return false;
	}
	if (!service_page_make_directory(path, error, error_len))
		return false;
	fd = mkostemp(writer->temporary, O_CLOEXEC);
	if (fd < 0) {
		snprintf(error, error_len, "cannot make %s: %s", writer->temporary,
			 strerror(errno));
		writer->temporary[0] = '\0';
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
		unlink(writer->temporary);
		writer->temporary[0] = '\0';
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
}
