/* The page a calibration service (fasttimed, or the fasttime command for
 * the programs it runs) publishes: the table (table.h) in a file (a
 * sealed memfd, for a service not run as root), which
 * the service maps over its own table, read-write, and a served process
 * maps over its own, read-only. The engine and the read path then run
 * unchanged on both sides; only the served process's engine never runs.
 *
 * A served process trusts nothing it has not checked: the file's owner,
 * mode and size, the header, and the values, the lines against its own
 * kernel's clock (service_page_judge). */
#ifndef FASTTIME_SERVICE_PAGE_H
#define FASTTIME_SERVICE_PAGE_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "settings.h"
#include "table.h"

/* "fasttime" in the first 8 bytes, little-endian; the version changes with
 * any change of struct table_page or of this header. */
#define SERVICE_PAGE_MAGIC   0x656d697474736166ull
#define SERVICE_PAGE_VERSION 3
#define SERVICE_PAGE_SIZE    ((uint32_t)sizeof(struct table_page))

/* The system's page, and the user's under $XDG_RUNTIME_DIR. */
#define SERVICE_PAGE_SYSTEM_PATH "/run/fasttime/page"
#define SERVICE_PAGE_USER_DIR	 "fasttime"
#define SERVICE_PAGE_NAME	 "page"

/* How far a page's line may be from the reader's own CLOCK_MONOTONIC (and
 * its realtime offset from CLOCK_REALTIME) when it is checked: far above
 * the lines' error (about a microsecond), far below what another boot or
 * another time namespace gives. */
#define SERVICE_PAGE_AGREE_NS 1000000ull
/* The longest validity a page may grant: the engine grants at most
 * WATCH_VALID_NS after each look (service_page_writer.c holds them so);
 * more is absurd. */
#define SERVICE_PAGE_MAX_VALID_NS 240000000ull
/* A served process whose page has been stale this long (its service is
 * gone, stopped, or starved) stops waiting for it: it leaves the page and
 * calibrates in its own thread (service_page_abandoned). Long beside the
 * validity: a service starved for a second or two on a loaded machine
 * costs its readers the fast path meanwhile, not their threadlessness. */
#define SERVICE_PAGE_ABANDON_SECONDS 5
#define SERVICE_PAGE_ABANDON_NS	     (SERVICE_PAGE_ABANDON_SECONDS * 1000000000ull)
#define SERVICE_PAGE_QUOTE(x)	     #x
#define SERVICE_PAGE_TEXT(x)	     SERVICE_PAGE_QUOTE(x)
/* A served process whose page has been stale this long looks at its path
 * again, at most this often, for a service started in the place of its
 * own (a restart): a new page there serves it from then on, with no
 * thread of ours (service_page_look_again). */
#define SERVICE_PAGE_LOOK_AGAIN_NS 200000000ull
/* The refusal of a page whose service stopped renewing it: a process that
 * found its page so at start looks at it again (service_page_take_up). */
#define SERVICE_PAGE_STALE_WHY "stale: the service stopped renewing it"
/* The reason a reader gives for leaving such a page, for FASTTIME_DEBUG. */
#define SERVICE_PAGE_ABANDONED_WHY                                                                 \
	"the calibration service's page has been stale for " SERVICE_PAGE_TEXT(                    \
	    SERVICE_PAGE_ABANDON_SECONDS) " s"

/* A served reader judges its page again at most this often (the whole
 * process), and no thread answers from the page longer than this after
 * the last judgement that found it right (service_page_rejudge): below
 * SERVICE_PAGE_MAX_VALID_NS, so a page never grants more. */
#define SERVICE_PAGE_REJUDGE_NS 100000000ull
/* How far a served page's lines may be from the kernel's clock at such a
 * judgement: a true page's lines run ahead or behind while its service
 * cannot run and a slew it has not seen begins (up to 10 %, the kernel's
 * range, over the longest validity a page may grant), and a reader that
 * left them for libc then would hold its clock still for their lead. A
 * forged line beyond it, a forged slope (the judgement's rate
 * check) or validity is still caught; offsets keep SERVICE_PAGE_AGREE_NS. */
#define SERVICE_PAGE_REJUDGE_LINES_NS (SERVICE_PAGE_AGREE_NS + SERVICE_PAGE_MAX_VALID_NS / 10)
/* Once the page disagrees, the process answers with libc and judges it
 * again at most this often, until it has agreed at every judgement for
 * SERVICE_PAGE_DOUBT_NS; a page that has disagreed at SERVICE_PAGE_DOUBTS
 * judgements spread over SERVICE_PAGE_DOUBT_NS is left
 * (service_page_condemned). A service's own page disagrees for a look of
 * its watch at most (a step of the clock it has not yet seen). */
#define SERVICE_PAGE_DOUBT_RETRY_NS 10000000ull
#define SERVICE_PAGE_DOUBT_NS	    1000000000ull
#define SERVICE_PAGE_DOUBTS	    3u

struct service_page_header {
	uint64_t magic;
	uint32_t version;
	uint32_t size;		/* of the whole page: SERVICE_PAGE_SIZE */
	int32_t service_pid;	/* in the service's PID namespace */
	uint32_t interval_ms;	/* the service's refresh interval */
	uint32_t hidden_hwcaps; /* the service's settings, which a reader must share */
	/* No mode: the page carries each mode's flags (table_shared), and
	 * serves readers of both. */
	uint8_t unused_mode;
	uint8_t force;
	uint8_t unused[2];
	/* The service's time namespace (/proc/self/ns/time); 0 where the
	 * kernel has none or /proc is not mounted. */
	uint64_t time_ns_device;
	uint64_t time_ns_inode;
};

_Static_assert(sizeof(struct service_page_header) <= TABLE_PAGE_HEADER_BYTES,
	       "the header fits the table's room for it");

/* What a reader must find in a page: its own user and settings. */
struct service_page_expect {
	uid_t uid;
	bool relaxed; /* the reader's mode: which of the page's flags it reads */
	bool force;
	uint32_t hidden_hwcaps;
	bool rseq_registered;
	uint64_t time_ns_device; /* as in the header; 0 until a page is found */
	uint64_t time_ns_inode;
};

/* This process's time namespace, or 0 and 0 where it cannot be told. */
void service_page_time_namespace(uint64_t *device, uint64_t *inode);

/* What a reader with these settings expects of a page; its time namespace
 * is left for when a page is found (service_page_look_at). */
void service_page_expect_from(struct service_page_expect *expect, const struct settings *settings,
			      bool rseq_registered);

/* NULL when page (a view of a whole page file) can serve a reader that
 * expects this, now; else why not, in a few words. Reads the TSC and the
 * kernel's clocks (raw system calls, no libc function). */
const char *service_page_judge(const struct table_page *page,
			       const struct service_page_expect *expect);
/* service_page_judge, and the line it judged the page by (where it
 * serves): its slope is the TSC's rate, which a served process keeps. */
const char *service_page_judge_by_line(const struct table_page *page,
				       const struct service_page_expect *expect,
				       const struct table_record **line);
/* The uid the kernel shows by default for a file whose owner the
 * reader's user namespace does not map (/proc/sys/kernel/overflowuid
 * says which it is here): never trusted as a page's owner. */
#define SERVICE_PAGE_OVERFLOW_UID 65534u
/* One past the highest CPU id the kernel can ever give this process, as
 * the last judge found it (CPU_MAX_CPUS until then): the judges read the
 * records below it only. */
uint32_t service_page_cpu_limit(void);
/* The kernel's clock by a raw system call: in a constructor no libc
 * function is looked up, nothing preloaded beneath the library can move
 * it, and a time namespace's offsets apply to it as they do to the vDSO's
 * answer. 0 when it fails. */
uint64_t service_page_kernel_ns(clockid_t clock);
struct stat;
/* NULL when the file st (a page's, as fstat saw it) may serve a reader
 * that expects this: regular, of the page's size, owned by root or the
 * reader's user as the reader's user namespace maps them (never by the
 * overflow uid), written by nobody else; else why not. */
const char *service_page_judge_file(const struct stat *st,
				    const struct service_page_expect *expect);
/* NULL when owner may own a page for a reader that expects this: root or
 * the reader's user, never the overflow uid; else why not. */
const char *service_page_judge_owner(uid_t owner, const struct service_page_expect *expect);

/* The page of a service not run as root is a memfd sealed against
 * shrinking, which its owner cannot truncate under its readers' mappings
 * (whose next read would be SIGBUS), published at the page's path as a
 * link to "/proc/PID/fd/N" (the service's pid and the memfd's descriptor):
 * the one link a reader follows. SERVICE_PAGE_LINK_MAX holds the longest
 * such link and its end. */
#define SERVICE_PAGE_LINK_MAX 32
/* Opens the page at path read-only, and gives its status: the file named
 * path itself, never one a link leads to, but for a link of that one form,
 * to a regular file no directory names (a memfd), judged before it is
 * opened: with expect, by the owner rule (the link's owner too) and as a
 * page file (service_page_judge_file). *linked says it was such a link.
 * Otherwise -1, with *found false where there is nothing at path (or it
 * cannot be opened), and why in *refused. Raw system calls. */
int service_page_open(const char *path, const struct service_page_expect *expect, struct stat *st,
		      bool *linked, bool *found, const char **refused);
/* Whether the file fd is sealed against shrinking (F_SEAL_SHRINK, which
 * no one can take off): a page whose owner is not root, or that a link
 * leads to, must be. */
bool service_page_sealed(int fd);

/* The user's page, $XDG_RUNTIME_DIR/fasttime/page; false without an
 * absolute XDG_RUNTIME_DIR. */
bool service_page_user_path(char path[PATH_MAX]);

/* What a look at a page found: the page's header when it serves. */
struct service_page_look {
	bool found;	     /* a file was there */
	const char *refused; /* NULL when it serves */
	struct service_page_header header;
	uint32_t api_flags; /* the page's flags for the reader's mode, as judged */
};

/* Opens path and checks the file and its contents; the descriptor is
 * closed before it returns. With attach, a page that serves is mapped
 * read-only over this process's table (table_read_only is set). */
void service_page_look_at(const char *path, const struct service_page_expect *expect, bool attach,
			  struct service_page_look *look);

/* The page a process with these settings is served by: FASTTIME_PAGE's,
 * or the first default one that serves; none when FASTTIME_PAGE is "" or
 * "none". True when one serves (mapped over the table with attach); path
 * is then its path. Otherwise look says why the last page that exists was
 * refused (path is that page's, or empty when none exists). path may be
 * NULL: the serving page's path is service_page_served()'s too. Each
 * refusal is one line under FASTTIME_DEBUG. */
bool service_page_find(const struct settings *settings, bool rseq_registered, bool attach,
		       char path[PATH_MAX], struct service_page_look *look);

/* For a served process about to answer from its page: true when it is in
 * the time namespace the page was judged for. A fork child (a parent's raw
 * unshare of its time namespace is seen by no interposer) finds it out
 * here, at its first time call rather than at the fork, with one stat of
 * /proc; from then on, and in the process that mapped the page, it costs
 * a getpid. False while another thread of the child looks, or once the
 * child was found in another namespace (service_page_time_namespace_foreign),
 * where the page's lines tell another time. Not under a seccomp filter. */
bool service_page_time_namespace_checked(void);
/* Whether this process was found in another time namespace than its
 * page's: it is to leave the page. */
bool service_page_time_namespace_foreign(void);

/* A served process about to leave what the page was judged for (another
 * time namespace), or, with only_if_abandoned, a page found abandoned
 * (judged again here, where no look can put a new page in place
 * meanwhile): the table becomes this process's own again, empty. Readers
 * meanwhile see no line and ask libc. */
bool service_page_leave(bool only_if_abandoned);

/* For a served process whose lines did not answer: true once the page has
 * been stale for SERVICE_PAGE_ABANDON_NS, by its own lines' rate (its
 * service stopped, or died, or was replaced by another whose page did not
 * serve this process in time). Loads and one TSC read. */
bool service_page_abandoned(void);

/* For a served process whose lines did not answer: true, for one caller,
 * once its page has been stale for SERVICE_PAGE_LOOK_AGAIN_NS and no look
 * was due to another within that period. Loads, a TSC read, one
 * compare-and-swap: the cheap gate before service_page_look_again. */
bool service_page_look_due(void);

/* Looks at the path the page was found at (a stat(2) by a raw system
 * call, never a cancellation point). Where another file is there (a
 * service started in the place of a stopped or dead one), it is judged as
 * at start and, where it serves, moved over the table in place of the old
 * page: the process is served by it from then on. True when it is. One
 * caller at a time; another finds the look taken and returns false. */
bool service_page_look_again(void);

/* Whether a page was refused at start for being stale only (its service
 * held by a real-time thread, or stopped a while), and is still awaited:
 * the process's own refresh thread looks at it again now and then. */
bool service_page_awaited(void);
/* Whether the awaited page serves now: looked at, not mapped. A page
 * refused for another reason than being stale, missing or not started is
 * awaited no more (one line under FASTTIME_DEBUG). */
bool service_page_awaited_serves(void);
/* Maps the awaited page over this process's own table, read-only, once it
 * serves, as at start: its readers read the service's lines from then on,
 * and the engine writes nothing more (table_read_only). Only for the
 * refresh thread, which alone writes the table, once it has stopped
 * publishing; waits a little for readers that write it (table_writers_gone).
 * True when the process is served. */
bool service_page_take_up(void);
/* A served process's TSC rate (the slope of the line its page was
 * accepted by); 0 where it was never served. */
extern __attribute__((visibility("hidden"))) uint64_t service_page_rate;

/* For the careful read, once this thread's reads from the TSC have reached
 * the process's deadline (wiped.h) at tsc: true when the table may answer,
 * with the deadline moved on. A process's own table always may; a served
 * process's page is judged again (at most every SERVICE_PAGE_REJUDGE_NS
 * for the process, through libc's clocks, no lock, no allocation): its
 * validity, its lines' slopes against the rate it was accepted by, its
 * lines and offsets against the kernel's clocks. False while it
 * disagrees: the caller asks libc. */
bool service_page_rejudge(uint64_t tsc);
/* A page mapped over the table was judged right at tsc (its acceptance),
 * at the TSC's rate rate. */
void service_page_rejudge_reset(uint64_t tsc, uint64_t rate);
/* Why the page that serves this process is to be left (it has disagreed
 * with the kernel's clocks for SERVICE_PAGE_DOUBT_NS), or NULL. Loads and
 * a TSC read. */
const char *service_page_condemned(void);

/* The path of the page that serves this process, or NULL. */
const char *service_page_served(void);

/* In a fork child: a look, a leave or a judgement the parent had in
 * progress is nobody's in the child, and its next read from the page is
 * judged, its time namespace first (service_page_time_namespace_checked,
 * unless under a seccomp filter of the program's). Nothing to do where
 * the kernel wiped the words (wiped.h). */
void service_page_after_fork_in_child(void);

/* The service's side. */
struct service_page_writer {
	char path[PATH_MAX];
	char temporary[PATH_MAX];
	char lock[PATH_MAX]; /* path.lock, held while the service runs */
	int lock_fd;
	/* The page's own descriptor, kept: it holds a write lock on the page
	 * (how a service starting on the same path, whatever became of
	 * path.lock, tells a live one's page) and sets its append-only flag. */
	int page_fd;
	dev_t device;
	ino_t inode;
	bool published;
	bool append_only; /* the page's flag set: nobody can shrink it */
	/* A service not run as root: the page is a sealed memfd (page_fd),
	 * and its name a link to it, link. */
	bool sealed;
	char link[SERVICE_PAGE_LINK_MAX];
};

/* Makes the file beside path under a temporary name (for a service not run
 * as root, a sealed memfd, and a link to it there), with the table's
 * present contents and the header, and maps it over this process's table,
 * read-write: from then on the engine writes the page. Makes path's
 * directory if it is missing; refuses one that another user owns or that
 * others may write, and a path whose page a live service holds. False
 * with a message in error. */
bool service_page_create(struct service_page_writer *writer, const char *path,
			 const struct settings *settings, char *error, size_t error_len);
/* Gives the page its name: readers may find it from now on. Where this
 * service may (CAP_LINUX_IMMUTABLE, a file system that has the flag), the
 * page is then made append-only: no one, root included, can truncate it,
 * write it by a descriptor, remove it or rename over it until the flag is
 * taken off (service_page_remove does), so that no mistake makes its
 * readers' mapping shorter than the page (SIGBUS). */
bool service_page_publish(struct service_page_writer *writer, char *error, size_t error_len);
/* Removes the page's name (and a temporary one), unless another page has
 * taken the name since, and releases the lock. The mapping stays: readers that have it see what
 * the engine last wrote (table_stop_answering ends its validity first). */
void service_page_remove(struct service_page_writer *writer);

#endif
