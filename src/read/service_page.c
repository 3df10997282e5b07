/* A reader's side of a calibration service's page: where it is looked
 * for, the look at a path (its judge is service_page_judge.c), the page
 * moved over the table, the look again while it is stale, the leave once
 * it is abandoned, and the time namespace it was judged for. The
 * service's side is service_page_writer.c. */
#include "config.h"

#include "service_page.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <linux/seccomp.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "cpu.h"
#include "debug.h"
#include "raw_syscall.h"
#include "start_data.h"

/* A served process's TSC rate (a line's slope), kept when it maps the
 * page: how long the page has been stale is told in ns even where the
 * service has withdrawn every line. It and the small variables below that
 * a served start writes are kept with the start's data (start_data.h). */
uint64_t service_page_rate START_DATA;

/* Where the page that serves this process was found, which file it was,
 * and what it was judged for: a reader looks there again while its page
 * is stale (service_page_look_again). The path is kept with the start's
 * data where it is short, as the system's and a user's are; a longer one
 * takes the large buffer, whose page of .bss a served start would
 * otherwise write. Empty while none serves. */
#define SERVICE_PAGE_SHORT_PATH 96u
static char service_page_served_short[SERVICE_PAGE_SHORT_PATH] START_DATA;
static char service_page_served_long[PATH_MAX];
static char *service_page_served_path START_DATA = service_page_served_short;
static dev_t service_page_served_device START_DATA;
static ino_t service_page_served_inode START_DATA;
/* The time namespace the serving page's header names (0: none named), kept
 * at its attach: a fork child compares its own with it without reading the
 * page (service_page_same_time_namespace). */
static uint64_t service_page_served_time_ns_device START_DATA;
static uint64_t service_page_served_time_ns_inode START_DATA;
static struct service_page_expect service_page_served_expect START_DATA;
/* The process (its id) found in that time namespace is in
 * wiped.words.time_ns_pid: the attaching one, or a fork child once its
 * first time call has looked (service_page_time_namespace_checked); a
 * fork child finds it zero (wiped.h), and a look under way
 * (wiped.words.time_ns_checking, taken, never waited for) nobody's.
 * Whether a process was found in another namespace: */
static bool service_page_time_ns_foreign START_DATA;
/* When the next look may be, in TSC ticks. */
static uint64_t service_page_next_look_tsc;
/* A page refused at start for being stale, which the refresh thread looks
 * at again (service_page_take_up), and what it was judged for; the path
 * is empty when none is awaited. Written by the first time call's look,
 * then by the refresh thread alone. */
static char service_page_awaited_path[PATH_MAX];
static struct service_page_expect service_page_awaited_expect;
/* Whoever changes what is mapped over the table once the process runs (a
 * look again, a leave) takes wiped.words.remapping, never waited for:
 * another caller (a thread beside it, a signal handler) finds it taken
 * and goes on. A fork child finds it zero (wiped.h). */

/* The file's status by a raw system call: open, fstat and close are
 * cancellation points in libc, and a served reader's look at its page runs
 * inside the program's time call, where a pending cancellation must not
 * act (x86-64's struct stat is the kernel's). */
static int service_page_fstat(int fd, struct stat *st)
{
	return (int)raw_syscall(SYS_fstat, fd, (long)st, 0, 0, 0, 0);
}

/* The ioctl that gives a process's time namespace from its pidfd (Linux
 * 6.11), where the headers are older. */
#ifndef PIDFD_GET_TIME_NAMESPACE
#define PIDFD_GET_TIME_NAMESPACE _IO(0xFF, 7)
#endif

/* This process's time namespace without /proc, which a mount namespace
 * can hide: from a pidfd of its own (raw system calls; the descriptors go
 * at once). False where the kernel cannot tell (older than 6.11, no time
 * namespaces, or a filter refuses the calls). */
static bool service_page_time_namespace_by_pidfd(struct stat *st)
{
	int pidfd = (int)raw_syscall(
	    SYS_pidfd_open, (long)raw_syscall(SYS_getpid, 0, 0, 0, 0, 0, 0), 0, 0, 0, 0, 0);
	int nsfd;

	if (pidfd < 0)
		return false;
	nsfd = (int)raw_syscall(SYS_ioctl, pidfd, (long)PIDFD_GET_TIME_NAMESPACE, 0, 0, 0, 0);
	raw_syscall(SYS_close, pidfd, 0, 0, 0, 0, 0);
	if (nsfd < 0)
		return false;
	if (service_page_fstat(nsfd, st) != 0) {
		raw_syscall(SYS_close, nsfd, 0, 0, 0, 0, 0);
		return false;
	}
	raw_syscall(SYS_close, nsfd, 0, 0, 0, 0, 0);
	return true;
}

/* Whether no seccomp filter judges this process's system calls now. */
static bool service_page_unfiltered(void)
{
	return raw_syscall(SYS_prctl, PR_GET_SECCOMP, 0, 0, 0, 0, 0) == SECCOMP_MODE_DISABLED;
}

void service_page_time_namespace(uint64_t *device, uint64_t *inode)
{
	/* By the system call itself: every served fork child runs this, and
	 * each page of libc's code it touched would be a page fault of the
	 * child's own. The pidfd's way first where no filter judges the
	 * calls: a stat of /proc makes the kernel build this process's
	 * entries there (its pid's directory, its ns directory), and tear
	 * them down when the process is reaped, the dearest step of a served
	 * start, which a short-lived process pays for nothing else. Under a
	 * filter /proc's way first, as a stat of a path is allowed by filters
	 * that pidfd_open, newer than they are, may kill the process for. */
	bool pidfd_first = service_page_unfiltered();
	struct stat st;

	*device = 0;
	*inode = 0;
	if ((pidfd_first && service_page_time_namespace_by_pidfd(&st)) ||
	    raw_syscall(SYS_newfstatat, AT_FDCWD, (long)"/proc/self/ns/time", (long)&st, 0, 0, 0) ==
		0 ||
	    (!pidfd_first && service_page_time_namespace_by_pidfd(&st))) {
		*device = (uint64_t)st.st_dev;
		*inode = (uint64_t)st.st_ino;
	}
}

void service_page_expect_from(struct service_page_expect *expect, const struct settings *settings,
			      bool rseq_registered)
{
	/* By the system call itself: every process start runs this, and
	 * libc's wrapper is a page of code it would not touch otherwise. */
	expect->uid = (uid_t)raw_syscall(SYS_geteuid, 0, 0, 0, 0, 0, 0);
	expect->relaxed = settings->relaxed;
	expect->force = settings->force;
	expect->hidden_hwcaps = settings->hidden_hwcaps;
	expect->rseq_registered = rseq_registered;
	/* Only once a page is found (service_page_look_at): a stat of /proc
	 * at every process start would be paid where no service runs. */
	expect->time_ns_device = 0;
	expect->time_ns_inode = 0;
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

/* How long a page taken up in the process's run waits for readers writing
 * the table: far beyond a write's few instructions, unless the writer was
 * preempted or stopped (the page is looked at again later). */
#define SERVICE_PAGE_WRITERS_WAIT_MS 100u

/* Keeps path (length bytes) as the serving page's: it may be the kept
 * path itself (a look again). */
static void service_page_keep_path(const char *path, size_t length)
{
	char *kept = length < sizeof service_page_served_short ? service_page_served_short
							       : service_page_served_long;

	memmove(kept, path, length + 1);
	service_page_served_path = kept;
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
	const struct service_page_header *header;
	size_t length = strlen(path);

	if (length >= sizeof service_page_served_long)
		return "a path too long";
	/* Before the mapping: a fork child made from now on, by any means,
	 * finds the fast read's deadline and the flags zero (wiped.h). Where
	 * the kernel cannot, the fork handler zeroes them (the start that
	 * found this page registered it: refresh_serve_wanted_page). */
	wiped_arm();
	/* Before the mapping: from now on no writer may touch the table; a
	 * reader that was writing it (a table of our own, its thread running)
	 * has gone before the page comes. */
	__atomic_store_n(&table_read_only, true, __ATOMIC_SEQ_CST);
	if (!again && !table_writers_gone(SERVICE_PAGE_WRITERS_WAIT_MS)) {
		__atomic_store_n(&table_read_only, false, __ATOMIC_RELEASE);
		return "a reader was writing the table";
	}
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
	service_page_rejudge_reset(cpu_rdtsc(), rate);
	service_page_keep_path(path, length);
	service_page_served_device = st->st_dev;
	service_page_served_inode = st->st_ino;
	service_page_served_expect = *expect;
	/* The view is the table now. */
	header = (const struct service_page_header *)table_page.header;
	service_page_served_time_ns_device = header->time_ns_device;
	service_page_served_time_ns_inode = header->time_ns_inode;
	/* Judged for this process's namespace (a look again comes only once
	 * a fork child has checked its own: service_page_look_again). */
	__atomic_store_n(&service_page_time_ns_foreign, false, __ATOMIC_RELAXED);
	__atomic_store_n(&wiped.words.time_ns_pid, (pid_t)raw_syscall(SYS_getpid, 0, 0, 0, 0, 0, 0),
			 __ATOMIC_RELEASE);
	return NULL;
}

/* The end of a decimal number at text[at] (at most ten digits, no
 * leading zero), or -1 where there is none. */
static long service_page_number_end(const char *text, long at, long length)
{
	long end = at;

	while (end < length && end - at <= 10 && text[end] >= '0' && text[end] <= '9')
		end++;
	if (end == at || end - at > 10 || (text[at] == '0' && end - at > 1))
		return -1;
	return end;
}

/* Whether the length bytes of text are "/proc/PID/fd/N": the one link a
 * reader follows. */
static bool service_page_link_form(const char *text, long length)
{
	long at;

	if (length < 6 || memcmp(text, "/proc/", 6) != 0)
		return false;
	at = service_page_number_end(text, 6, length);
	if (at < 0 || length - at < 4 || memcmp(text + at, "/fd/", 4) != 0)
		return false;
	return service_page_number_end(text, at + 4, length) == length;
}

/* The memfd a page's link leads to, opened once judged (service_page_open
 * has found path a link). Never for a secure process (AT_SECURE), which
 * trusts root's page only: root's is a file. */
static int service_page_open_link(const char *path, const struct service_page_expect *expect,
				  struct stat *st, const char **refused)
{
	char target[SERVICE_PAGE_LINK_MAX];
	struct stat link;
	long length;
	int fd;

	if (expect != NULL && getauxval(AT_SECURE) != 0) {
		*refused = "a link, which a secure process never follows";
		return -1;
	}
	if (raw_syscall(SYS_newfstatat, AT_FDCWD, (long)path, (long)&link, AT_SYMLINK_NOFOLLOW, 0,
			0) != 0) {
		*refused = "cannot be examined";
		return -1;
	}
	if (expect != NULL && (*refused = service_page_judge_owner(link.st_uid, expect)) != NULL)
		return -1;
	length =
	    raw_syscall(SYS_readlinkat, AT_FDCWD, (long)path, (long)target, sizeof target, 0, 0);
	if (length <= 0 || length >= (long)sizeof target ||
	    !service_page_link_form(target, length)) {
		*refused = "a link, but not to a service's page (/proc/PID/fd/N)";
		return -1;
	}
	target[length] = '\0';
	/* Judged before it is opened: the link may outlive its service, and
	 * its pid be another process's now. */
	if (raw_syscall(SYS_newfstatat, AT_FDCWD, (long)target, (long)&link, 0, 0, 0) != 0) {
		*refused = errno == ENOENT
			       ? "its link leads nowhere (its service is gone, or "
				 "this /proc shows another PID namespace)"
			       : "its link cannot be followed (a service of another user, or of "
				 "another user namespace)";
		return -1;
	}
	if (!S_ISREG(link.st_mode) || link.st_nlink != 0) {
		*refused = "a link to a named file, not to a service's memfd";
		return -1;
	}
	if (expect != NULL && (*refused = service_page_judge_file(&link, expect)) != NULL)
		return -1;
	fd = (int)raw_syscall(SYS_openat, AT_FDCWD, (long)target,
			      O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0, 0, 0);
	if (fd < 0) {
		*refused = "cannot be opened";
		return -1;
	}
	if (service_page_fstat(fd, st) != 0 || st->st_dev != link.st_dev ||
	    st->st_ino != link.st_ino) {
		raw_syscall(SYS_close, fd, 0, 0, 0, 0, 0);
		*refused = "its link changed while it was opened";
		return -1;
	}
	return fd;
}

int service_page_open(const char *path, const struct service_page_expect *expect, struct stat *st,
		      bool *linked, bool *found, const char **refused)
{
	/* Never through a link but the service's own form: a link in a
	 * page's directory would send every reader, root's programs among
	 * them, to open whatever it names. */
	int fd =
	    (int)raw_syscall(SYS_openat, AT_FDCWD, (long)path,
			     O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK, 0, 0, 0);

	*linked = false;
	*found = true;
	*refused = NULL;
	if (fd < 0 && errno == ELOOP) {
		*linked = true;
		return service_page_open_link(path, expect, st, refused);
	}
	if (fd < 0) {
		*found = false;
		*refused = errno == ENOENT ? "no page" : "cannot be opened";
		return -1;
	}
	if (service_page_fstat(fd, st) != 0) {
		raw_syscall(SYS_close, fd, 0, 0, 0, 0, 0);
		*refused = "cannot be examined";
		return -1;
	}
	return fd;
}

bool service_page_sealed(int fd)
{
	long seals = raw_syscall(SYS_fcntl, fd, F_GET_SEALS, 0, 0, 0, 0);

	return seals >= 0 && (seals & F_SEAL_SHRINK) != 0;
}

void service_page_look_at(const char *path, const struct service_page_expect *expect, bool attach,
			  struct service_page_look *look)
{
	struct service_page_expect here = *expect;
	const struct table_record *line = NULL;
	const struct table_page *view;
	struct stat st;
	bool linked;
	int fd;

	memset(look, 0, sizeof *look);
	fd = service_page_open(path, expect, &st, &linked, &look->found, &look->refused);
	if (fd < 0)
		return;
	/* Once there is a page: where there is none, as in most processes
	 * of a machine without a service, nothing more is paid. The page
	 * size the loader was given, by getpagesize: sysconf's switch reads a
	 * page of libc's data that nothing else at start touches. */
	if ((unsigned long)getpagesize() != TABLE_PAGE_ALIGN) {
		look->refused = "this machine's pages are not the table's";
	} else {
		/* A secure process (setuid, setgid, file capabilities:
		 * AT_SECURE) was started by a user who must not choose its
		 * time: it trusts a page of root's only, even where its
		 * effective user owns the page. */
		if (st.st_uid != 0 && getauxval(AT_SECURE) != 0)
			here.uid = 0;
		look->refused = service_page_judge_file(&st, &here);
		/* A page its owner could shrink under its readers' mappings
		 * (SIGBUS at their next read) is trusted from root alone, who
		 * makes it append-only (service_page_publish): any other
		 * owner's must be a sealed memfd. */
		if (look->refused == NULL && (st.st_uid != 0 || linked) && !service_page_sealed(fd))
			look->refused = "its owner could shrink it (not a sealed memfd)";
	}
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
	look->api_flags = __atomic_load_n(
	    &view->shared.api_flags[here.relaxed ? TABLE_MODE_RELAXED : TABLE_MODE_ORDERED],
	    __ATOMIC_RELAXED);
	if (look->refused == NULL && attach) {
		look->refused = service_page_attach(view, &st, path, &here, line->mult);
		if (look->refused == NULL)
			return; /* the view is the table now */
	}
	munmap((void *)view, SERVICE_PAGE_SIZE);
}

/* Copies source, cut at PATH_MAX - 1 bytes, into path: by strlen and
 * memcpy, whose pages of libc's code a served start touches anyway (a
 * page of code first run is a page fault of every process). */
static void service_page_copy_path(char path[PATH_MAX], const char *source)
{
	size_t length = strlen(source);

	if (length >= PATH_MAX)
		length = PATH_MAX - 1;
	memcpy(path, source, length);
	path[length] = '\0';
}

/* One place service_page_find looks: true when its page serves. A page
 * not found at a default place (named false) leaves look as it was. */
static bool service_page_find_at(const char *at, bool named,
				 const struct service_page_expect *expect, bool attach,
				 char path[PATH_MAX], struct service_page_look *look)
{
	struct service_page_look this;

	service_page_look_at(at, expect, attach, &this);
	if (!this.found && !named)
		return false;
	*look = this;
	if (path != NULL)
		service_page_copy_path(path, at);
	if (this.refused == NULL)
		return true;
	debug_log("not served by the page %s: %s", at, this.refused);
	/* Stale only: fresh again, it serves (service_page_take_up). Copied
	 * by its own length: FASTTIME_PAGE's string may end at the top of the
	 * stack, where reading PATH_MAX bytes would fault; a path too long for
	 * the buffer is not awaited. */
	if (attach && service_page_awaited_path[0] == '\0' &&
	    strcmp(this.refused, SERVICE_PAGE_STALE_WHY) == 0 &&
	    strlen(at) < sizeof service_page_awaited_path) {
		service_page_copy_path(service_page_awaited_path, at);
		service_page_awaited_expect = *expect;
	}
	return false;
}

/* The user's page, for a process not run by root. Apart, and never
 * inlined: its path's buffer would otherwise lengthen the stack of every
 * process start by a page, each page of stack first touched being a page
 * fault. */
__attribute__((noinline)) static bool
service_page_find_user(const struct service_page_expect *expect, bool attach, char path[PATH_MAX],
		       struct service_page_look *look)
{
	char user[PATH_MAX];

	return service_page_user_path(user) &&
	       service_page_find_at(user, false, expect, attach, path, look);
}

/* The system's page, where a process without FASTTIME_PAGE looks: its
 * path is read by the kernel at every such start, and kept with the
 * start's variables (start_data.h), not among the read-only data, whose
 * first page read would be a page fault of its own. */
static char service_page_system_path[] START_DATA = SERVICE_PAGE_SYSTEM_PATH;

bool service_page_find(const struct settings *settings, bool rseq_registered, bool attach,
		       char path[PATH_MAX], struct service_page_look *look)
{
	struct service_page_expect expect;

	service_page_expect_from(&expect, settings, rseq_registered);
	if (path != NULL)
		path[0] = '\0';
	memset(look, 0, sizeof *look);
	look->refused = "no page";
	if (settings_page_none(settings))
		return false;
	/* The named page; else the system's, then, but for root, the
	 * user's. */
	if (settings->page != NULL)
		return service_page_find_at(settings->page, true, &expect, attach, path, look);
	if (service_page_find_at(service_page_system_path, false, &expect, attach, path, look))
		return true;
	return expect.uid != 0 && service_page_find_user(&expect, attach, path, look);
}

bool service_page_leave(bool only_if_abandoned)
{
	/* One caller maps the table back; another (a thread beside it, a
	 * signal handler) finds it done or being done, and leaves it be. */
	if (!__atomic_load_n(&table_read_only, __ATOMIC_ACQUIRE) ||
	    __atomic_exchange_n(&wiped.words.remapping, true, __ATOMIC_ACQ_REL))
		return false;
	/* Under the flag, again: a look may have put a new page in place
	 * between the caller's judgement and now. */
	if (!__atomic_load_n(&table_read_only, __ATOMIC_ACQUIRE) ||
	    (only_if_abandoned && !service_page_abandoned()) ||
	    mmap(&table_page, SERVICE_PAGE_SIZE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) {
		__atomic_store_n(&wiped.words.remapping, false, __ATOMIC_RELEASE);
		return false;
	}
	service_page_served_path[0] = '\0';
	__atomic_store_n(&table_read_only, false, __ATOMIC_RELEASE);
	__atomic_store_n(&wiped.words.remapping, false, __ATOMIC_RELEASE);
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

	if (__atomic_exchange_n(&wiped.words.remapping, true, __ATOMIC_ACQ_REL))
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
	__atomic_store_n(&wiped.words.remapping, false, __ATOMIC_RELEASE);
	return served;
}

bool service_page_awaited(void)
{
	return service_page_awaited_path[0] != '\0' &&
	       !__atomic_load_n(&table_read_only, __ATOMIC_ACQUIRE);
}

bool service_page_awaited_serves(void)
{
	struct service_page_look look;

	if (!service_page_awaited())
		return false;
	service_page_look_at(service_page_awaited_path, &service_page_awaited_expect, false, &look);
	if (look.refused == NULL)
		return true;
	/* A service stopped a while, gone or starting may yet serve; one
	 * that refuses for another reason will not. */
	if (look.found && strcmp(look.refused, SERVICE_PAGE_STALE_WHY) != 0 &&
	    strcmp(look.refused, "the service has not started") != 0) {
		debug_log("not served by the page %s: %s; no longer looked at",
			  service_page_awaited_path, look.refused);
		service_page_awaited_path[0] = '\0';
	}
	return false;
}

bool service_page_take_up(void)
{
	struct service_page_look look;
	bool served = false;

	if (!service_page_awaited() ||
	    __atomic_exchange_n(&wiped.words.remapping, true, __ATOMIC_ACQ_REL))
		return false;
	service_page_look_at(service_page_awaited_path, &service_page_awaited_expect, true, &look);
	served = look.refused == NULL;
	if (served)
		service_page_awaited_path[0] = '\0';
	else
		debug_log("not served by the page %s: %s", service_page_awaited_path, look.refused);
	__atomic_store_n(&wiped.words.remapping, false, __ATOMIC_RELEASE);
	return served;
}

void service_page_after_fork_in_child(void)
{
	/* A look, a leave or a judgement in another thread of the parent (or
	 * in this one, under a handler) happened whole or not at all for the
	 * child's mapping: the flag it held is nobody's here; the child's
	 * reads from the page are judged, its time namespace first. Where the
	 * kernel wiped the page, nothing is left to do, and nothing written. */
	if (!__atomic_load_n(&wiped_armed, __ATOMIC_RELAXED))
		wiped_zero();
}

/* Whether this process is in the time namespace the serving page's header
 * names (or either is unknown). One stat of /proc. */
static bool service_page_same_time_namespace(void)
{
	uint64_t device, inode;

	service_page_time_namespace(&device, &inode);
	return service_page_served_time_ns_inode == 0 || inode == 0 ||
	       (service_page_served_time_ns_inode == inode &&
		service_page_served_time_ns_device == device);
}

bool service_page_time_namespace_checked(void)
{
	bool same;
	pid_t pid;

	if (__atomic_load_n(&service_page_time_ns_foreign, __ATOMIC_ACQUIRE))
		return false;
	pid = (pid_t)raw_syscall(SYS_getpid, 0, 0, 0, 0, 0, 0);
	if (pid == __atomic_load_n(&wiped.words.time_ns_pid, __ATOMIC_ACQUIRE))
		return true;
	if (__atomic_exchange_n(&wiped.words.time_ns_checking, true, __ATOMIC_ACQ_REL))
		return false;
	same = service_page_same_time_namespace();
	if (same)
		__atomic_store_n(&wiped.words.time_ns_pid, pid, __ATOMIC_RELEASE);
	else
		__atomic_store_n(&service_page_time_ns_foreign, true, __ATOMIC_RELEASE);
	__atomic_store_n(&wiped.words.time_ns_checking, false, __ATOMIC_RELEASE);
	return same;
}

bool service_page_time_namespace_foreign(void)
{
	return __atomic_load_n(&service_page_time_ns_foreign, __ATOMIC_ACQUIRE);
}
