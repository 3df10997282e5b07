/* The exported entry points: clock_gettime, gettimeofday, time and
 * timespec_get, and the constructor that prepares them.
 *
 * On glibc, time and gettimeofday do not go through clock_gettime, and
 * timespec_get calls glibc's internal clock: each needs its own entry point.
 * Each answers from the TSC when its bit in api_flags is set and the line is
 * fresh, and otherwise with libc's own function, return value and errno. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "clock.h"
#include "cpu.h"
#include "debug.h"
#include "errno_keep.h"
#include "libc.h"
#include "placement.h"
#include "preload_clamp.h"
#include "preload_step.h"
#include "refresh.h"
#include "sandbox.h"
#include "service_page.h"
#include "settings.h"
#include "stale_checks.h"
#include "verdict.h"

#define PRELOAD_EXPORT __attribute__((visibility("default")))

/* Keeps a pointer test that glibc's nonnull declarations would let the
 * compiler delete: a NULL pointer goes to libc, which decides what to do. */
static inline bool preload_is_null(const void *pointer)
{
	__asm__("" : "+r"(pointer));
	return pointer == NULL;
}

/* Defined, and exported, by the programs that run a calibration service
 * (service.c): the library preloaded into one (/etc/ld.so.preload, an
 * exported LD_PRELOAD) passes every call through. The service reads the
 * kernel's clocks beneath it, and no page may serve the process that
 * writes one, its own old page least of all; nor does it need a thread of
 * ours. Weak: NULL in every other program, at no cost beyond the dynamic
 * linker's one lookup. */
extern const char fasttime_service_process __attribute__((weak));

/* What the constructor (preload_init) prepares. Cheap facts only: no
 * thread, no waiting, no CPUID (under a hypervisor each one is a VM exit),
 * no symbol lookup and no file opened: all of that is paid by every
 * process start, even one that never reads the clock, as is every page it
 * touches (start_data.h). One system call of well under a microsecond,
 * prctl(PR_GET_SECCOMP) (sandbox.h), before the program can install a
 * filter of its own. A calibration service's page is only noted as to be
 * looked for: the first time call that would start the refresh thread
 * looks for it, maps it and is served from then on, with no thread of ours
 * (refresh_serve_wanted_page). What only a thread of our own needs waits
 * for that call too: the kernel's clocksource (refresh_start) and, where
 * libc takes them late, the fork handlers (refresh_watch_forks). libc's
 * functions are looked up by the first call that needs one; the refresh
 * thread checks the processor when it starts. */
static void preload_prepare(void)
{
	struct settings settings;
	bool rseq_registered;

	settings_load(&settings,
		      settings_environment_matters(environ) ? settings_secure_getenv
							    : settings_lookup_nothing,
		      debug_write_line);
	if (&fasttime_service_process != NULL)
		settings.disabled = true;
	debug_enabled = settings.debug;
	cpu_hidden_hwcaps = settings.hidden_hwcaps;
	if (settings.disabled) {
		refresh_configure(&settings);
		return;
	}
	/* Before any reader: the offset is written once. */
	rseq_registered = cpu_rseq_init();
	/* Before the program can install a filter of its own. */
	sandbox_record();
	refresh_watch_forks_of_this_process();
	refresh_serve_later(&settings, rseq_registered);
}

/* The constructor: preload_prepare, with the program's errno kept
 * (errno_keep.h): a warning line or a system call of its own is none of
 * the program's business. */
__attribute__((constructor)) static void preload_init(void)
{
	struct errno_keep keep = errno_keep_take();

	preload_prepare();
	errno_keep_give(keep);
}

/* What every slow path does first. It starts the refresh thread if one is
 * due: in a fork child, whose inherited lines keep the fast read answering
 * until they go stale, the careful read's first visit starts the child's
 * own thread. And before a thread's first reading from the TSC it seeds
 * the clamp of the lines that answer (clock_thread's, for CLOCK_MONOTONIC
 * or CLOCK_MONOTONIC_RAW): the thread's earlier answers came from libc,
 * which the clamp has not seen, and the line may run a few nanoseconds
 * behind the kernel. */
static void preload_slow_path_start(enum clock_lines lines)
{
	uint64_t *last = clock_lines_last(lines);
	struct timespec ts;

	refresh_ensure_started();
	if (*last != 0)
		return;
	if (libc_clock_gettime(lines == CLOCK_LINES_RAW ? CLOCK_MONOTONIC_RAW : CLOCK_MONOTONIC,
			       &ts) == 0)
		*last = timespec_to_ns(&ts);
}

/* What a slow path does once libc has answered a call the TSC could not: a
 * process made without fork() has no refresh thread, and its lines have
 * gone stale; it is found here, and gets its thread. A served process
 * whose service has stopped renewing its page looks for one started in
 * its place, and gets a thread of its own when none has come in time. A
 * refresh thread stuck on a CPU it cannot run on is moved back from here.
 * Once a period in the process (stale_checks_due, by now_ns), not at every
 * call: each check reads the counter. */
static void preload_tsc_did_not_answer(uint64_t now_ns)
{
	if (__builtin_expect(!stale_checks_due(now_ns), 1))
		return;
	if (__atomic_load_n(&refresh_state, __ATOMIC_RELAXED) == REFRESH_SERVED) {
		const char *condemned;

		if (service_page_time_namespace_foreign())
			refresh_leave_service("a fork child in another time namespace", false);
		else if (service_page_abandoned())
			refresh_leave_service(SERVICE_PAGE_ABANDONED_WHY, true);
		else if ((condemned = service_page_condemned()) != NULL)
			refresh_leave_service(condemned, false);
		else
			refresh_look_for_service_again();
	}
	refresh_check_process();
	refresh_ensure_started();
	placement_free_stuck_thread();
}

/* Each entry point tries the fast read inline (clock.h) and, when it gives
 * up, tail-calls the slow path below: the careful read, and libc when that
 * cannot answer either. A call the TSC does not answer goes straight to
 * libc, or through preload_libc when a thread start or the clamp is due.
 * The entry points call nothing on the fast path, so they save only the
 * registers the read itself needs; a pass-through is a test and a tail
 * jump to libc's function. */

/* The flags of this process's own mode (table_own_flags). The slow paths
 * load them again rather than take them: one argument fewer kept alive
 * across the fast read, which then fits in the registers a call may
 * clobber. */
static inline uint32_t preload_api_flags(void)
{
	return table_api_flags();
}

/* Which entry point a slow path answers for, and so in which form: the
 * place the caller gave (a timespec, a timeval, or time()'s time_t, which
 * may be NULL) and the return value (0, TIME_UTC, or time()'s seconds).
 * Each is numbered as its bit in api_flags (entry_table.def), so that
 * clock_gettime's are their clock ids and it passes its id. */
enum preload_entry {
#define ENTRY(id, form, clock, bit, bench_position, name, key, bench_name) PRELOAD_##id = (bit),
#include "entry_table.def"
#undef ENTRY
};

/* One return type for all four: time()'s seconds, the others' int. */
_Static_assert(sizeof(time_t) <= sizeof(long), "time()'s seconds fit a slow path's answer");

/* The api_flags bit that says an entry point answers from the TSC: for
 * clock_gettime's clock ids and the others alike, bit number entry. */
static inline uint32_t preload_entry_api(enum preload_entry entry)
{
	return 1u << entry;
}

/* The lines that answer the entry's clock. */
static inline enum clock_lines preload_entry_lines(enum preload_entry entry)
{
	return entry == PRELOAD_MONOTONIC_RAW ? CLOCK_LINES_RAW : CLOCK_LINES_MONOTONIC;
}

/* The offset the entry's clock adds to its lines. */
static inline enum clock_offset_kind preload_entry_offset(enum preload_entry entry)
{
	switch (entry) {
	case PRELOAD_MONOTONIC:
	case PRELOAD_MONOTONIC_RAW: return CLOCK_OFFSET_NONE;
	case PRELOAD_BOOTTIME: return CLOCK_OFFSET_BOOTTIME;
	case PRELOAD_TAI: return CLOCK_OFFSET_TAI;
	default: return CLOCK_OFFSET_REALTIME;
	}
}

/* What the caller gave libc beside the place of the answer. */
union preload_libc_arg {
	void *tz; /* gettimeofday's timezone */
	int base; /* timespec_get's */
};

#define PRELOAD_NO_ARG ((union preload_libc_arg){ .tz = NULL })

/* The careful read in the entry point's form; *rc is what the entry point
 * returns when it answers. */
static bool preload_careful(enum preload_entry entry, uint32_t flags, void *out, long *rc)
{
	time_t seconds;

	*rc = 0;
	switch (entry) {
	case PRELOAD_MONOTONIC: return clock_careful_monotonic(flags, out);
	case PRELOAD_MONOTONIC_RAW: return clock_careful_raw(flags, out);
	case PRELOAD_GETTIMEOFDAY: return clock_careful_timeval(flags, out);
	case PRELOAD_TIME:
		if (!clock_careful_seconds(flags, &seconds))
			return false;
		*rc = seconds;
		return true;
	case PRELOAD_TIMESPEC_GET: *rc = TIME_UTC; return clock_careful_realtime(flags, out);
	default: return clock_careful_offset_clock(flags, preload_entry_offset(entry), out);
	}
}

/* libc's answer: its return value, and the rest through out. time()'s
 * seconds are its return value alone: they reach the caller's pointer only
 * once clamped (preload_give). */
static long preload_ask_libc(enum preload_entry entry, void *out, union preload_libc_arg arg)
{
	switch (entry) {
	case PRELOAD_GETTIMEOFDAY: return libc_gettimeofday(out, arg.tz);
	case PRELOAD_TIME: return libc_time_now(NULL);
	case PRELOAD_TIMESPEC_GET: return libc_timespec_get(out, arg.base);
	default: return libc_clock_gettime((clockid_t)entry, out);
	}
}

/* errno_keep_take and errno_keep_give for the slow path, out of line: the
 * kept errno then lives in the frame, not in a register, and the fast read
 * that shares a function with the slow path (preload_other_clock) keeps
 * the registers, and so the instructions, it had. */
static __attribute__((noinline)) void preload_errno_take(struct errno_keep *keep)
{
	*keep = errno_keep_take();
}

static __attribute__((noinline)) void preload_errno_give(const struct errno_keep *keep)
{
	errno_keep_give(*keep);
}

/* preload_ask_libc from a slow path, where the program's call entered the
 * library: libc starts from the errno in *keep, the program's, and leaves
 * its own there, which the caller gives back on its way out (errno_keep.h):
 * what the library does around libc's call changes no errno the program
 * sees. */
static long preload_ask_libc_kept(enum preload_entry entry, void *out, union preload_libc_arg arg,
				  struct errno_keep *keep)
{
	long rc;

	errno_keep_give(*keep);
	rc = preload_ask_libc(entry, out, arg);
	*keep = errno_keep_take();
	return rc;
}

/* libc's answer rc, raised where it is a little earlier than what this
 * thread was given from the TSC; a failure passes as libc gave it. */
static long preload_clamp(enum preload_entry entry, void *out, long rc)
{
	switch (entry) {
	case PRELOAD_MONOTONIC:
	case PRELOAD_MONOTONIC_RAW:
		if (rc == 0)
			preload_clamp_lines(preload_entry_lines(entry), out);
		return rc;
	case PRELOAD_GETTIMEOFDAY:
		if (rc == 0)
			preload_clamp_timeval(out);
		return rc;
	case PRELOAD_TIME: return preload_clamp_seconds((time_t)rc);
	case PRELOAD_TIMESPEC_GET:
		if (rc == TIME_UTC)
			preload_clamp_offset_clock(CLOCK_OFFSET_REALTIME, out);
		return rc;
	default:
		if (rc == 0)
			preload_clamp_offset_clock(preload_entry_offset(entry), out);
		return rc;
	}
}

/* The entry point's return value; time() stores its seconds through its
 * pointer as libc would. */
static long preload_give(enum preload_entry entry, void *out, long rc)
{
	if (entry == PRELOAD_TIME && out != NULL)
		*(time_t *)out = (time_t)rc;
	return rc;
}

/* Beside the answer, the fast read's callers gave no timezone and
 * TIME_UTC. */
static inline union preload_libc_arg preload_fast_read_arg(enum preload_entry entry)
{
	if (entry == PRELOAD_TIMESPEC_GET)
		return (union preload_libc_arg){ .base = TIME_UTC };
	return PRELOAD_NO_ARG;
}

/* After libc answered a clock with an offset (REALTIME, BOOTTIME, TAI, and
 * so gettimeofday and timespec_get; its lines stale, or none on this CPU):
 * this thread's monotonic floor is raised so that its next answer from the
 * TSC is not earlier than libc's (preload_clamp_after_libc), at once or,
 * where that answer can only come from a careful read, before it. time()'s
 * coarse seconds are never ahead of a later precise reading: nothing to
 * do, and no call. libc's errno is kept (preload_clamp_after_libc). */
static void preload_after_libc(enum preload_entry entry, const void *out, long rc)
{
	switch (entry) {
	case PRELOAD_TIME: return;
	case PRELOAD_GETTIMEOFDAY:
		if (rc == 0)
			preload_clamp_after_libc(CLOCK_OFFSET_REALTIME,
						 timeval_to_ns((const struct timeval *)out));
		break;
	case PRELOAD_TIMESPEC_GET:
		if (rc == TIME_UTC)
			preload_clamp_after_libc(CLOCK_OFFSET_REALTIME, timespec_to_ns(out));
		break;
	default:
		if (rc == 0)
			preload_clamp_after_libc(preload_entry_offset(entry), timespec_to_ns(out));
		break;
	}
}

/* A CLOCK_MONOTONIC reading near now for the checks' period
 * (preload_tsc_did_not_answer): libc's answer rc, less its clock's
 * offset, where the entry has one in ns; the coarse clock's, which reads
 * no counter, for time() and CLOCK_MONOTONIC_RAW (which may be seconds
 * from CLOCK_MONOTONIC); 0 where libc failed. */
static uint64_t preload_now_ns(enum preload_entry entry, const void *out, long rc)
{
	struct timespec coarse;

	switch (entry) {
	case PRELOAD_TIME:
	case PRELOAD_MONOTONIC_RAW: break;
	case PRELOAD_GETTIMEOFDAY:
		return rc == 0 ? timeval_to_ns(out) - clock_offset(CLOCK_OFFSET_REALTIME) : 0;
	case PRELOAD_TIMESPEC_GET:
		return rc == TIME_UTC ? timespec_to_ns(out) - clock_offset(CLOCK_OFFSET_REALTIME)
				      : 0;
	default:
		return rc == 0 ? timespec_to_ns(out) - clock_offset(preload_entry_offset(entry))
			       : 0;
	}
	if (libc_clock_gettime(CLOCK_MONOTONIC_COARSE, &coarse) != 0)
		return 0;
	return timespec_to_ns(&coarse);
}

/* The slow path, for every entry point whose fast read gave up: the
 * careful read, and libc when that cannot answer either, with a step of
 * the clock followed and the clamp applied. Lines this thread found lapsed
 * under the validity the table still holds take no careful read: libc
 * answers at once (clock_lines_lapsed). The careful read comes after the
 * floor this thread's answers from libc owe (preload_clamp_settle). The
 * program's errno is kept (errno_keep.h): an answer from the TSC leaves
 * it, libc's leaves libc's. */
static inline __attribute__((always_inline)) long preload_slow_path(enum preload_entry entry,
								    void *out)
{
	bool stale = clock_lines_lapsed();
	struct errno_keep keep;
	uint32_t flags;
	long rc;

	preload_errno_take(&keep);
	preload_slow_path_start(preload_entry_lines(entry));
	/* After the start: a page it mapped is the table now. */
	flags = preload_api_flags();
	if (!stale) {
		preload_clamp_settle();
		if (preload_careful(entry, flags, out, &rc)) {
			preload_errno_give(&keep);
			return preload_give(entry, out, rc);
		}
	}
	/* The monotonic clocks have no step to follow. */
	if (entry == PRELOAD_MONOTONIC || entry == PRELOAD_MONOTONIC_RAW) {
		rc = preload_clamp(entry, out,
				   preload_ask_libc_kept(entry, out, PRELOAD_NO_ARG, &keep));
		preload_tsc_did_not_answer(preload_now_ns(entry, out, rc));
		preload_errno_give(&keep);
		return rc;
	}
	stale = stale || preload_lines_stale();
	rc = preload_ask_libc_kept(entry, out, preload_fast_read_arg(entry), &keep);
	preload_follow_step(preload_entry_offset(entry), stale);
	rc = preload_clamp(entry, out, rc);
	preload_after_libc(entry, out, rc);
	preload_tsc_did_not_answer(preload_now_ns(entry, out, rc));
	preload_errno_give(&keep);
	return preload_give(entry, out, rc);
}

static __attribute__((noinline)) int preload_slow(enum preload_entry entry, void *out);

/* refresh_ensure_started where libc answers next: the program's errno is
 * kept around a start, the one call there that may change it, and only
 * when one is due, so that a call left to libc pays nothing for it. */
static inline void preload_ensure_started(void)
{
	struct errno_keep keep;

	if (__builtin_expect(!refresh_start_due(), 1))
		return;
	keep = errno_keep_take();
	refresh_start();
	errno_keep_give(keep);
}

/* A call left to libc (the TSC does not answer this entry point, yet or any
 * more, or not this call: a NULL pointer, a timezone, another base) while
 * a thread start or the clamp is due: libc, once the refresh thread is on
 * its way, and clamped where this thread may have had answers from the
 * TSC. A start that mapped a calibration service's page answers this very
 * call from it, as the slow path does. The program's errno is kept where
 * work of ours may change it: around a start, and around a clamp that may
 * read a clock; time()'s clamp calls nothing. */
static inline __attribute__((always_inline)) long
preload_libc_path(enum preload_entry entry, void *out, union preload_libc_arg arg)
{
	uint32_t flags, api;
	struct errno_keep keep;
	long rc;

	/* time() comes here only for the clamp, and starts no thread. */
	if (entry == PRELOAD_TIME)
		return preload_give(entry, out,
				    preload_clamp(entry, out, preload_ask_libc(entry, out, arg)));
	flags = preload_api_flags();
	api = preload_entry_api(entry);
	preload_ensure_started();
	/* No place for the answer, or another base: libc's alone. */
	if (preload_is_null(out) || (entry == PRELOAD_TIMESPEC_GET && arg.base != TIME_UTC))
		return preload_ask_libc(entry, out, arg);
	/* The start made the TSC answer this entry point; a timezone is still
	 * libc's business, but its answer is clamped. */
	if ((entry != PRELOAD_GETTIMEOFDAY || arg.tz == NULL) && !(flags & api) &&
	    (preload_api_flags() & api))
		return preload_slow(entry, out);
	if (!(flags & (CLOCK_LIBC_CLAMPED | api)))
		return preload_ask_libc(entry, out, arg);
	rc = preload_ask_libc(entry, out, arg);
	/* The monotonic clocks' clamp calls nothing; another's may read
	 * libc's CLOCK_MONOTONIC (preload_clamp_offset_clock): libc's errno
	 * is kept across it. */
	if (entry == PRELOAD_MONOTONIC || entry == PRELOAD_MONOTONIC_RAW)
		return preload_clamp(entry, out, rc);
	keep = errno_keep_take();
	rc = preload_clamp(entry, out, rc);
	errno_keep_give(keep);
	return preload_give(entry, out, rc);
}

/* The two paths out of line, each in two flavours only for the return
 * type, so that the entry points reach them by a tail jump: time()'s
 * seconds, the others' int. time()'s way to libc stays inline, as it was:
 * out of line, it measured a little slower on time()'s fast read. */
static __attribute__((noinline)) int preload_slow(enum preload_entry entry, void *out)
{
	return (int)preload_slow_path(entry, out);
}

static __attribute__((noinline)) time_t preload_slow_time(time_t *t)
{
	return (time_t)preload_slow_path(PRELOAD_TIME, t);
}

static __attribute__((noinline)) int preload_libc(enum preload_entry entry, void *out,
						  union preload_libc_arg arg)
{
	return (int)preload_libc_path(entry, out, arg);
}

static time_t preload_libc_time(time_t *t)
{
	return (time_t)preload_libc_path(PRELOAD_TIME, t, PRELOAD_NO_ARG);
}

/* clock_gettime of any clock id but MONOTONIC and REALTIME: the table's
 * other clocks (BOOTTIME, TAI, MONOTONIC_RAW) answered as those two are,
 * every other id left to libc. Out of line, so that MONOTONIC and REALTIME
 * keep their straight run of instructions, as short as before the table
 * had more. */
static __attribute__((noinline)) int preload_other_clock(clockid_t id, struct timespec *ts)
{
	uint32_t flags = preload_api_flags();
	enum preload_entry entry = (enum preload_entry)id;

	/* Left to libc (by choice, or not calibrated yet): libc's own answers
	 * need no clamp, so nothing but the start check, and that only while
	 * a start is due. */
	if (!((flags >> id) & 1)) {
		if (__builtin_expect(!(flags & (CLOCK_START_PENDING | CLOCK_LIBC_CLAMPED)), 1))
			return libc_clock_gettime(id, ts);
		return preload_libc(entry, ts, PRELOAD_NO_ARG);
	}
	if (preload_is_null(ts))
		return preload_libc(entry, ts, PRELOAD_NO_ARG);
	if (entry == PRELOAD_MONOTONIC_RAW
		? clock_fast_raw(flags, ts)
		: clock_fast_offset_clock(flags, preload_entry_offset(entry), ts))
		return 0;
	return (int)preload_slow_path(entry, ts);
}

PRELOAD_EXPORT int clock_gettime(clockid_t id, struct timespec *ts)
{
	uint32_t flags = preload_api_flags();

	if (__builtin_expect((unsigned)id > CLOCK_MONOTONIC, 0)) {
		/* A clock id the table does not answer, or one left to libc
		 * with no start or clamp due: libc's, untouched, as directly
		 * as MONOTONIC's and REALTIME's pass-through. */
		if ((unsigned)id >= CLOCK_ID_BITS || !((CLOCK_API_CLOCK_IDS >> id) & 1) ||
		    (!((flags >> id) & 1) && !(flags & (CLOCK_START_PENDING | CLOCK_LIBC_CLAMPED))))
			return libc_clock_gettime(id, ts);
		return preload_other_clock(id, ts);
	}
	/* Left to libc (by choice, or not calibrated yet): libc's own
	 * answers need no clamp, so nothing but the start check, and that
	 * only while a start is due. */
	if (!((flags >> id) & 1)) {
		if (__builtin_expect(!(flags & (CLOCK_START_PENDING | CLOCK_LIBC_CLAMPED)), 1))
			return libc_clock_gettime(id, ts);
		return preload_libc((enum preload_entry)id, ts, PRELOAD_NO_ARG);
	}
	if (preload_is_null(ts))
		return preload_libc((enum preload_entry)id, ts, PRELOAD_NO_ARG);
	/* Each branch passes its clock id as a constant, so that the id need
	 * not stay in a register across the counter read. */
	if (id == CLOCK_MONOTONIC) {
		if (clock_fast_monotonic(flags, ts))
			return 0;
		return preload_slow(PRELOAD_MONOTONIC, ts);
	}
	if (clock_fast_realtime(flags, ts))
		return 0;
	return preload_slow(PRELOAD_REALTIME, ts);
}

PRELOAD_EXPORT int gettimeofday(struct timeval *tv, GETTIMEOFDAY_TZ_TYPE tz)
{
	uint32_t flags = preload_api_flags();

	if (__builtin_expect(
		!(flags & (CLOCK_API_GETTIMEOFDAY | CLOCK_START_PENDING | CLOCK_LIBC_CLAMPED)), 0))
		return libc_gettimeofday(tv, tz);
	/* A timezone request is libc's business: answer it exactly. */
	if (!(flags & CLOCK_API_GETTIMEOFDAY) || tz != NULL || preload_is_null(tv))
		return preload_libc(PRELOAD_GETTIMEOFDAY, tv, (union preload_libc_arg){ .tz = tz });
	if (clock_fast_timeval(flags, tv))
		return 0;
	return preload_slow(PRELOAD_GETTIMEOFDAY, tv);
}

PRELOAD_EXPORT time_t time(time_t *t)
{
	uint32_t flags = preload_api_flags();
	time_t now;

	/* No thread start from here: libc answers time() from the vDSO's
	 * coarse clock, cheaper than any TSC read, so a program that only
	 * calls time() gains nothing from one. */
	if (__builtin_expect(!(flags & (CLOCK_API_TIME | CLOCK_LIBC_CLAMPED)), 1))
		return libc_time_now(t);
	if (!(flags & CLOCK_API_TIME))
		return preload_libc_time(t);
	if (!clock_fast_seconds(flags, &now))
		return preload_slow_time(t);
	if (t != NULL)
		*t = now;
	return now;
}

PRELOAD_EXPORT int timespec_get(struct timespec *ts, int base)
{
	uint32_t flags = preload_api_flags();

	if (__builtin_expect(
		!(flags & (CLOCK_API_TIMESPEC_GET | CLOCK_START_PENDING | CLOCK_LIBC_CLAMPED)), 0))
		return libc_timespec_get(ts, base);
	if (base != TIME_UTC || !(flags & CLOCK_API_TIMESPEC_GET) || preload_is_null(ts))
		return preload_libc(PRELOAD_TIMESPEC_GET, ts,
				    (union preload_libc_arg){ .base = base });
	if (clock_fast_realtime(flags, ts))
		return TIME_UTC;
	return preload_slow(PRELOAD_TIMESPEC_GET, ts);
}
