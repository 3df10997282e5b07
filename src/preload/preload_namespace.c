/* The exported unshare and setns: a program about to enter a namespace
 * that the kernel lets only a single-threaded process enter (a user
 * namespace; a mount or time namespace by setns) would find the refresh
 * thread there and fail with EINVAL (EUSERS for a time namespace). Before
 * such a call the thread is stopped and joined; the next time call
 * starts another (in the new namespaces, as any thread the program makes
 * would be). Other namespaces are entered beside it, as they would be
 * beside any thread of the program's.
 *
 * The answer is libc's own: its return value and errno. A call that would
 * fail without the library fails the same way. */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "debug.h"
#include "errno_keep.h"
#include "raw_syscall.h"
#include "refresh.h"

#define PRELOAD_NAMESPACE_EXPORT __attribute__((visibility("default")))

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080 /* Linux 5.6; older C library headers lack it */
#endif

/* unshare flags the kernel refuses to a process with other threads
 * (CLONE_NEWUSER implies CLONE_THREAD; CLONE_VM, CLONE_SIGHAND too), and
 * CLONE_NEWNS, which our thread would otherwise survive in the old mount
 * namespace, keeping it and its mounts alive. */
#define PRELOAD_NAMESPACE_UNSHARE_ALONE                                                            \
	(CLONE_NEWUSER | CLONE_NEWNS | CLONE_THREAD | CLONE_SIGHAND | CLONE_VM)
/* setns types that need a process alone; 0 (any type: the descriptor
 * says) is taken as one of them. */
#define PRELOAD_NAMESPACE_SETNS_ALONE (CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWTIME)

/* After a join, the kernel may count the thread a moment longer (the join
 * returns when it clears the thread's id, before it leaves the group):
 * retries, 20 us apart and doubling, up to about 40 ms. Where the thread
 * could not be joined (a signal handler), it ends on its own once it runs:
 * up to REFRESH_STOP_WAIT_NS. */
#define PRELOAD_NAMESPACE_FIRST_RETRY_NS 20000u
#define PRELOAD_NAMESPACE_MAX_RETRY_NS	 10000000u
#define PRELOAD_NAMESPACE_JOINED_WAIT_NS 40000000u

static int (*preload_namespace_next_unshare)(int);
static int (*preload_namespace_next_setns)(int, int);

static int preload_namespace_raw_unshare(int flags)
{
	return (int)raw_syscall(SYS_unshare, flags, 0, 0, 0, 0, 0);
}

static int preload_namespace_raw_setns(int fd, int nstype)
{
	return (int)raw_syscall(SYS_setns, fd, nstype, 0, 0, 0, 0);
}

/* libc's function (dlsym of a symbol that exists allocates nothing), or
 * the system call where it cannot be found. */
static void *preload_namespace_next(void **slot, const char *name, void *raw)
{
	void *next = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

	if (next != NULL)
		return next;
	next = dlsym(RTLD_NEXT, name);
	if (next == NULL)
		return raw;
	__atomic_store_n(slot, next, __ATOMIC_RELEASE);
	return next;
}

/* Whether a failed call may have failed because the thread was still
 * there. */
static bool preload_namespace_may_retry(int rc)
{
	return rc == -1 && (errno == EINVAL || errno == EUSERS);
}

/* Stops the thread if it runs in this process; returns how long a call
 * that fails as if it were still there is retried, in ns (0: not at all). */
static uint64_t preload_namespace_stop_thread(void)
{
	switch (refresh_stop(REFRESH_STOP_RESTART)) {
	case REFRESH_STOPPED_JOINED: return PRELOAD_NAMESPACE_JOINED_WAIT_NS;
	case REFRESH_STOPPED_ASKED: return REFRESH_STOP_WAIT_NS;
	case REFRESH_STOPPED_NONE: break;
	}
	return 0;
}

/* For FASTTIME_DEBUG: how long the kernel still counted the thread. */
static void preload_namespace_note(const char *call, int rc, uint64_t waited)
{
	if (waited > 0)
		debug_log("%s %s after %llu us of retries", call, rc == 0 ? "succeeded" : "failed",
			  (unsigned long long)(waited / 1000u));
}

/* Sleeps *pause_ns and doubles it, up to the maximum; returns the time
 * slept. nanosleep: safe in a signal handler. */
static uint64_t preload_namespace_pause(uint64_t *pause_ns)
{
	struct timespec span = { 0, (long)*pause_ns };
	uint64_t slept = *pause_ns;

	nanosleep(&span, NULL);
	if (*pause_ns < PRELOAD_NAMESPACE_MAX_RETRY_NS)
		*pause_ns *= 2;
	return slept;
}

/* Each interposer keeps the program's errno (errno_keep.h): libc's call
 * starts from it, and the caller gets libc's errno after it. */
PRELOAD_NAMESPACE_EXPORT int unshare(int flags)
{
	struct errno_keep keep = errno_keep_take();
	int (*next)(int) =
	    (int (*)(int))preload_namespace_next((void **)&preload_namespace_next_unshare,
						 "unshare", (void *)preload_namespace_raw_unshare);
	uint64_t retry_ns = 0, waited = 0, pause = PRELOAD_NAMESPACE_FIRST_RETRY_NS;
	int rc;

	if (flags & PRELOAD_NAMESPACE_UNSHARE_ALONE)
		retry_ns = preload_namespace_stop_thread();
	errno_keep_give(keep);
	rc = next(flags);
	while (waited < retry_ns && preload_namespace_may_retry(rc)) {
		waited += preload_namespace_pause(&pause);
		errno_keep_give(keep);
		rc = next(flags);
	}
	keep = errno_keep_take();
	preload_namespace_note("unshare", rc, waited);
	/* The children it starts now live in another time namespace: the
	 * page's lines tell the time of this one. */
	if (rc == 0 && (flags & CLONE_NEWTIME)) {
		refresh_leave_service("unshare(CLONE_NEWTIME)", false);
		refresh_note_new_time_namespace_for_children();
	}
	errno_keep_give(keep);
	return rc;
}

PRELOAD_NAMESPACE_EXPORT int setns(int fd, int nstype)
{
	struct errno_keep keep = errno_keep_take();
	int (*next)(int, int) = (int (*)(int, int))preload_namespace_next(
	    (void **)&preload_namespace_next_setns, "setns", (void *)preload_namespace_raw_setns);
	uint64_t retry_ns = 0, waited = 0, pause = PRELOAD_NAMESPACE_FIRST_RETRY_NS;
	int rc;

	if (nstype == 0 || (nstype & PRELOAD_NAMESPACE_SETNS_ALONE))
		retry_ns = preload_namespace_stop_thread();
	errno_keep_give(keep);
	rc = next(fd, nstype);
	while (waited < retry_ns && preload_namespace_may_retry(rc)) {
		waited += preload_namespace_pause(&pause);
		errno_keep_give(keep);
		rc = next(fd, nstype);
	}
	keep = errno_keep_take();
	preload_namespace_note("setns", rc, waited);
	/* Perhaps another time namespace (the descriptor says, for type 0):
	 * the page's lines tell the time of the old one. setns into one needs
	 * a lone thread: no other thread reads the page meanwhile. */
	if (rc == 0 && (nstype == 0 || (nstype & CLONE_NEWTIME)))
		refresh_leave_service("setns into a time namespace", false);
	errno_keep_give(keep);
	return rc;
}
