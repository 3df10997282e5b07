/* A tap between fasttime and libc, preloaded after libfasttime.so.
 *
 * fasttime finds libc's functions with dlsym(RTLD_NEXT), and the next object
 * after it in the search order is this one: every call fasttime passes on to
 * libc goes through here and is counted, per thread. A test can then tell an
 * answer from the TSC (count unchanged) from an answer by libc, which keeps
 * tests of the fast path from passing on the fallback alone.
 *
 * The tap can also hold the refresh thread (named "fasttime") at its next
 * call: a starved or dead refresh thread, on demand; or at its next call
 * made while it visits a CPU (pinned to that one CPU), so that the hold
 * lands inside a round. And it can move the
 * kernel's clock as fasttime sees it: set CLOCK_REALTIME (a step), slew
 * the clocks as NTP would (a rate), fake a resume from a suspend (CLOCK_BOOTTIME and
 * CLOCK_REALTIME jump, CLOCK_MONOTONIC does not), make each read slow (a kernel clock that is a
 * system call: wide sandwiches), or put the refresh thread's clock ahead of everyone else's (lines
 * that run a little ahead of what libc answers the readers). CLOCK_BOOTTIME and CLOCK_TAI move
 * as a kernel moves them: BOOTTIME with CLOCK_MONOTONIC plus the suspends, TAI with
 * CLOCK_REALTIME, each keeping its kernel's distance from that clock. CLOCK_MONOTONIC_RAW, as
 * the kernel's, is never slewed, set or moved by a suspend; only the refresh thread's lead moves
 * it. An absolute CLOCK_REALTIME sleep follows the tap's clock, as the kernel's follows a real
 * step.
 *
 * Where LIFE_TAP_SHARED names a file, the gate and the moves live there,
 * shared by every process whose tap names it: a calibration service run
 * with the tap and the processes it serves (tests/lifecycle/life.sh,
 * life_run_served). */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define TAP_EXPORT __attribute__((visibility("default")))

/* Static TLS: the tap is loaded at start-up, and a signal handler may count. */
static __thread uint64_t tap_calls __attribute__((tls_model("initial-exec")));

/* The next definition after ours, found on first use: fasttime's constructor
 * may run before ours, and dlsym of an existing symbol does not allocate. */
static void *tap_next(void **slot, const char *name)
{
	void *fn = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

	if (fn == NULL) {
		fn = dlsym(RTLD_NEXT, name);
		__atomic_store_n(slot, fn, __ATOMIC_RELEASE);
	}
	return fn;
}

static void *tap_clock_gettime_next, *tap_gettimeofday_next, *tap_time_next, *tap_timespec_get_next,
    *tap_clock_nanosleep_next;

/* How many calls this thread has made that reached libc through the tap. */
TAP_EXPORT uint64_t life_tap_calls(void);
TAP_EXPORT uint64_t life_tap_calls(void)
{
	return tap_calls;
}

/* What the tap's gate and its moves of the clock are: in this process
 * alone, or, where LIFE_TAP_SHARED names a file, in that file, mapped by
 * every process that names it. A calibration service and the processes it
 * serves then see one kernel clock move, as they would see a real one, and
 * a reader's hold stops the service's refresh thread. */
struct tap_state {
	bool gate_closed;
	/* The gate holds only a thread pinned to one CPU (one visiting a
	 * CPU in a round). */
	bool gate_visits_only;
	unsigned held; /* threads the gate holds now */
	/* How the tap moves the kernel's clock (all 0: it does not). The
	 * realtime shift (steps and suspends) moves CLOCK_REALTIME and
	 * CLOCK_TAI, the suspend shift CLOCK_BOOTTIME. */
	int64_t realtime_shift_ns;
	int64_t suspend_shift_ns;
	uint64_t read_cost_ns;
	int64_t refresh_lead_ns;
	/* A slew: from raw monotonic time slew_base_ns on, the clocks gain
	 * slew_ppm parts per million, on top of slew_carried_ns gained by
	 * earlier slews. Written under a sequence count: readers in other
	 * threads (and processes) retry a torn read. */
	unsigned slew_sequence;
	int64_t slew_ppm, slew_carried_ns;
	uint64_t slew_base_ns;
};

static struct tap_state tap_private_state;
static struct tap_state *tap_shared_state;

/* The file LIFE_TAP_SHARED names, mapped (made, zeroed, where it is new);
 * a test that asked for it and cannot have it must not run on a private
 * state that no other process sees. */
static struct tap_state *tap_map_shared(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	struct stat st;
	void *map = MAP_FAILED;

	if (fd >= 0 && fstat(fd, &st) == 0 &&
	    (st.st_size >= (off_t)sizeof(struct tap_state) ||
	     ftruncate(fd, sizeof(struct tap_state)) == 0))
		map =
		    mmap(NULL, sizeof(struct tap_state), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (fd >= 0)
		close(fd);
	if (map == MAP_FAILED) {
		static const char why[] = "liblifetap: cannot map LIFE_TAP_SHARED\n";

		if (write(2, why, sizeof why - 1) < 0) {
			/* about to abort anyway */
		}
		abort();
	}
	return map;
}

/* The state this process reads and writes: found at the first call (the
 * library's constructor may come before ours). */
static struct tap_state *tap_state(void)
{
	struct tap_state *state = __atomic_load_n(&tap_shared_state, __ATOMIC_ACQUIRE);
	struct tap_state *expected = NULL;
	const char *path;
	int saved;

	if (state != NULL)
		return state;
	saved = errno;
	path = getenv("LIFE_TAP_SHARED");
	state = path != NULL && *path != '\0' ? tap_map_shared(path) : &tap_private_state;
	if (!__atomic_compare_exchange_n(&tap_shared_state, &expected, state, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		if (state != &tap_private_state)
			munmap(state, sizeof *state);
		state = expected;
	}
	errno = saved;
	return state;
}

/* Closes or opens the gate for the refresh thread. */
TAP_EXPORT void life_tap_hold_refresh(bool hold);
TAP_EXPORT void life_tap_hold_refresh(bool hold)
{
	__atomic_store_n(&tap_state()->gate_closed, hold, __ATOMIC_RELEASE);
}

/* Closes or opens the gate for the refresh thread while it visits a CPU:
 * it is held at its first call made while pinned to one CPU, and stays
 * held wherever a reader moves it until the gate opens. */
TAP_EXPORT void life_tap_hold_refresh_visiting(bool hold);
TAP_EXPORT void life_tap_hold_refresh_visiting(bool hold)
{
	__atomic_store_n(&tap_state()->gate_visits_only, hold, __ATOMIC_RELEASE);
	__atomic_store_n(&tap_state()->gate_closed, hold, __ATOMIC_RELEASE);
}

/* Whether the calling thread may run on one CPU only. */
static bool tap_pinned(void)
{
	cpu_set_t set;

	return sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) == 1;
}

/* How many threads the gate holds now. */
TAP_EXPORT unsigned life_tap_held(void);
TAP_EXPORT unsigned life_tap_held(void)
{
	return __atomic_load_n(&tap_state()->held, __ATOMIC_ACQUIRE);
}

/* While the gate is closed, the refresh thread waits here; others pass. */
static void tap_gate(void)
{
	char name[16] = "";
	int saved;

	if (!__atomic_load_n(&tap_state()->gate_closed, __ATOMIC_ACQUIRE))
		return;
	saved = errno;
	if (prctl(PR_GET_NAME, name) == 0 && strcmp(name, "fasttime") == 0 &&
	    (!__atomic_load_n(&tap_state()->gate_visits_only, __ATOMIC_ACQUIRE) || tap_pinned())) {
		struct timespec ms = { 0, 1000000 };

		__atomic_add_fetch(&tap_state()->held, 1, __ATOMIC_ACQ_REL);
		while (__atomic_load_n(&tap_state()->gate_closed, __ATOMIC_ACQUIRE))
			nanosleep(&ms, NULL);
		__atomic_sub_fetch(&tap_state()->held, 1, __ATOMIC_ACQ_REL);
	}
	errno = saved;
}

/* Adds ns to every CLOCK_REALTIME answer from now on: the clock is set. */
TAP_EXPORT void life_tap_set_realtime(int64_t ns);
TAP_EXPORT void life_tap_set_realtime(int64_t ns)
{
	__atomic_add_fetch(&tap_state()->realtime_shift_ns, ns, __ATOMIC_ACQ_REL);
}

/* A resume after ns of suspend: from now on CLOCK_BOOTTIME, CLOCK_REALTIME
 * and CLOCK_TAI answer ns later, CLOCK_MONOTONIC as before (the kernel's
 * monotonic clock does not count a suspend). BOOTTIME moves first: a reader
 * between the two sees it ahead of REALTIME for a moment, no worse than a
 * kernel whose clocks are read one after the other. */
TAP_EXPORT void life_tap_suspend(int64_t ns);
TAP_EXPORT void life_tap_suspend(int64_t ns)
{
	__atomic_add_fetch(&tap_state()->suspend_shift_ns, ns, __ATOMIC_ACQ_REL);
	__atomic_add_fetch(&tap_state()->realtime_shift_ns, ns, __ATOMIC_ACQ_REL);
}

/* Makes every clock_gettime through the tap take at least ns more, half
 * before the clock is read and half after, as a system call would. */
TAP_EXPORT void life_tap_slow_reads(uint64_t ns);
TAP_EXPORT void life_tap_slow_reads(uint64_t ns)
{
	__atomic_store_n(&tap_state()->read_cost_ns, ns, __ATOMIC_RELEASE);
}

/* Puts the refresh thread's clocks ns ahead of everyone else's. */
TAP_EXPORT void life_tap_lead_refresh(int64_t ns);
TAP_EXPORT void life_tap_lead_refresh(int64_t ns)
{
	__atomic_store_n(&tap_state()->refresh_lead_ns, ns, __ATOMIC_RELEASE);
}

/* libc's own CLOCK_MONOTONIC, in ns. */
static uint64_t tap_raw_monotonic_ns(void)
{
	int (*next)(clockid_t, struct timespec *) = (int (*)(clockid_t, struct timespec *))tap_next(
	    &tap_clock_gettime_next, "clock_gettime");
	struct timespec ts;

	next(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* What the slews have added by raw monotonic time raw_ns. */
static int64_t tap_slew_shift(uint64_t raw_ns)
{
	for (;;) {
		unsigned before = __atomic_load_n(&tap_state()->slew_sequence, __ATOMIC_ACQUIRE);
		/* Acquire loads keep the second read of the count after them
		 * (ThreadSanitizer supports no standalone fence). */
		int64_t ppm = __atomic_load_n(&tap_state()->slew_ppm, __ATOMIC_ACQUIRE);
		int64_t carried = __atomic_load_n(&tap_state()->slew_carried_ns, __ATOMIC_ACQUIRE);
		uint64_t base = __atomic_load_n(&tap_state()->slew_base_ns, __ATOMIC_ACQUIRE);
		int64_t since = raw_ns > base ? (int64_t)(raw_ns - base) : 0;

		if ((before & 1) == 0 &&
		    __atomic_load_n(&tap_state()->slew_sequence, __ATOMIC_ACQUIRE) == before)
			return carried + since / 1000000 * ppm + since % 1000000 * ppm / 1000000;
	}
}

/* From now on the clocks gain ppm parts per million (0: the slew ends,
 * and what it gained stays). One caller at a time. */
TAP_EXPORT void life_tap_slew(int64_t ppm);
TAP_EXPORT void life_tap_slew(int64_t ppm)
{
	uint64_t now = tap_raw_monotonic_ns();
	int64_t carried = tap_slew_shift(now);

	__atomic_add_fetch(&tap_state()->slew_sequence, 1, __ATOMIC_ACQ_REL);
	__atomic_store_n(&tap_state()->slew_carried_ns, carried, __ATOMIC_RELEASE);
	__atomic_store_n(&tap_state()->slew_base_ns, now, __ATOMIC_RELEASE);
	__atomic_store_n(&tap_state()->slew_ppm, ppm, __ATOMIC_RELEASE);
	__atomic_add_fetch(&tap_state()->slew_sequence, 1, __ATOMIC_ACQ_REL);
}

/* What the slews add to an answer read when libc's CLOCK_MONOTONIC read
 * raw_ns (0: now). */
static int64_t tap_slew_at(uint64_t raw_ns)
{
	if (__atomic_load_n(&tap_state()->slew_sequence, __ATOMIC_ACQUIRE) == 0)
		return 0;
	return tap_slew_shift(raw_ns != 0 ? raw_ns : tap_raw_monotonic_ns());
}

/* Whether this thread is fasttime's refresh thread: asked once per thread
 * (the thread names itself before it reads any clock). */
static bool tap_in_refresh_thread(void)
{
	static __thread int known __attribute__((tls_model("initial-exec")));
	char name[16] = "";
	int saved = errno;

	if (known == 0) {
		known = prctl(PR_GET_NAME, name) == 0 && strcmp(name, "fasttime") == 0 ? 1 : -1;
		errno = saved;
	}
	return known == 1;
}

/* The clocks the tap moves: the kernel's own distances between them (TAI
 * minus REALTIME, BOOTTIME minus MONOTONIC) stay as they are, so every move
 * of REALTIME moves TAI and every move of MONOTONIC moves BOOTTIME.
 * MONOTONIC_RAW moves only with the refresh thread's lead. */
static bool tap_moves(clockid_t id)
{
	return id == CLOCK_REALTIME || id == CLOCK_MONOTONIC || id == CLOCK_BOOTTIME ||
	       id == CLOCK_TAI || id == CLOCK_MONOTONIC_RAW;
}

/* What the tap adds to clock id's answers in this thread, for an answer
 * read when libc's CLOCK_MONOTONIC read raw_ns (0: now). */
static int64_t tap_shift_at(clockid_t id, uint64_t raw_ns)
{
	int64_t shift = 0;

	if (!tap_moves(id))
		return 0;
	if (id == CLOCK_REALTIME || id == CLOCK_TAI)
		shift += __atomic_load_n(&tap_state()->realtime_shift_ns, __ATOMIC_ACQUIRE);
	if (id == CLOCK_BOOTTIME)
		shift += __atomic_load_n(&tap_state()->suspend_shift_ns, __ATOMIC_ACQUIRE);
	if (__atomic_load_n(&tap_state()->refresh_lead_ns, __ATOMIC_ACQUIRE) != 0 &&
	    tap_in_refresh_thread())
		shift += __atomic_load_n(&tap_state()->refresh_lead_ns, __ATOMIC_ACQUIRE);
	if (id != CLOCK_MONOTONIC_RAW)
		shift += tap_slew_at(raw_ns);
	return shift;
}

/* The same for an answer read now. */
static int64_t tap_shift_for(clockid_t id)
{
	return tap_shift_at(id, 0);
}

static void tap_shift_timespec(struct timespec *ts, int64_t shift)
{
	int64_t ns = (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec + shift;

	ts->tv_sec = (time_t)(ns / 1000000000);
	ts->tv_nsec = (long)(ns % 1000000000);
}

/* Spins for ns on libc's monotonic clock. */
static void tap_spin(int (*next)(clockid_t, struct timespec *), uint64_t ns)
{
	struct timespec start, now;

	if (ns == 0)
		return;
	next(CLOCK_MONOTONIC, &start);
	do
		next(CLOCK_MONOTONIC, &now);
	while ((uint64_t)((now.tv_sec - start.tv_sec) * 1000000000 +
			  (now.tv_nsec - start.tv_nsec)) < ns);
}

static uint64_t tap_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000u + (uint64_t)ts->tv_nsec;
}

static struct timespec tap_timespec(uint64_t ns)
{
	return (struct timespec){ .tv_sec = (time_t)(ns / 1000000000u),
				  .tv_nsec = (long)(ns % 1000000000u) };
}

#define TAP_SAME_MOMENT_NS 20000u

/* The kernel's CLOCK_BOOTTIME minus its CLOCK_MONOTONIC (0: not measured
 * yet). It changes only when the machine resumes from a real suspend: the
 * tap keeps the value it measured and takes a new one only when a narrow
 * sandwich finds it moved by more than TAP_BOOT_MOVED_NS. Measuring it at
 * every read would give each answer the sandwich's error, and the tap's
 * CLOCK_BOOTTIME, unlike the kernel's, could go back by a few hundred ns. */
#define TAP_BOOT_MOVED_NS 1000000
static int64_t tap_boot_minus_mono_ns;

/* libc's CLOCK_BOOTTIME as the tap's moves need it: libc's CLOCK_MONOTONIC,
 * read into *raw_ns, plus the kernel's distance between the two. */
static int tap_read_boottime(int (*next)(clockid_t, struct timespec *), struct timespec *ts,
			     uint64_t *raw_ns)
{
	int64_t known = __atomic_load_n(&tap_boot_minus_mono_ns, __ATOMIC_ACQUIRE);
	int rc = 0;

	for (int attempt = 0; attempt < 8; attempt++) {
		struct timespec boot;
		uint64_t before = tap_raw_monotonic_ns(), after;
		int64_t measured;

		rc = next(CLOCK_BOOTTIME, &boot);
		after = tap_raw_monotonic_ns();
		if (rc != 0)
			return rc;
		*raw_ns = after;
		measured = (int64_t)(tap_ns(&boot) - (before + (after - before) / 2));
		if (after - before > TAP_SAME_MOMENT_NS && (known != 0 || attempt < 7))
			continue;
		if (known == 0 || measured - known > TAP_BOOT_MOVED_NS ||
		    known - measured > TAP_BOOT_MOVED_NS) {
			known = measured != 0 ? measured : 1;
			__atomic_store_n(&tap_boot_minus_mono_ns, known, __ATOMIC_RELEASE);
		}
		break;
	}
	*ts = tap_timespec((uint64_t)((int64_t)*raw_ns + known));
	return rc;
}

/* libc's clock id into ts, and into *raw_ns libc's CLOCK_MONOTONIC at the
 * same moment, for the slew: a thread preempted between the two (a
 * real-time load) would otherwise get a slew's shift for another moment
 * than its reading, off by the slew's rate times the preemption. A read of
 * CLOCK_REALTIME is taken again while the monotonic reads around it lie
 * more than TAP_SAME_MOMENT_NS apart (a few times at most). CLOCK_BOOTTIME
 * is made from CLOCK_MONOTONIC (tap_read_boottime), CLOCK_TAI from
 * CLOCK_REALTIME plus the kernel's TAI offset (a whole number of seconds,
 * read again, as CLOCK_REALTIME is, while the REALTIME reads around it lie
 * more than TAP_SAME_MOMENT_NS apart), so that each keeps its kernel's
 * distance from the clock it moves with. */
static int tap_read_at(int (*next)(clockid_t, struct timespec *), clockid_t id, struct timespec *ts,
		       uint64_t *raw_ns)
{
	int rc = 0;

	/* No slew reaches MONOTONIC_RAW: no moment to note for one. */
	if (ts == NULL || !tap_moves(id) || id == CLOCK_MONOTONIC_RAW)
		return next(id, ts);
	if (id == CLOCK_MONOTONIC) {
		rc = next(id, ts);
		if (rc == 0)
			*raw_ns = tap_ns(ts);
		return rc;
	}
	if (id == CLOCK_BOOTTIME)
		return tap_read_boottime(next, ts, raw_ns);
	if (id == CLOCK_TAI) {
		struct timespec tai, real_after;
		uint64_t middle, tai_offset;

		for (int attempt = 0; attempt < 8; attempt++) {
			rc = tap_read_at(next, CLOCK_REALTIME, ts, raw_ns);
			if (rc == 0)
				rc = next(CLOCK_TAI, &tai);
			if (rc == 0)
				rc = next(CLOCK_REALTIME, &real_after);
			if (rc != 0)
				return rc;
			if (tap_ns(&real_after) - tap_ns(ts) <= TAP_SAME_MOMENT_NS)
				break;
		}
		/* The offset is a whole number of seconds: TAI rounded against
		 * the middle of the REALTIME reads around it. A thread
		 * preempted for half a second or more between the first of
		 * them and TAI's would otherwise be given a second more, and
		 * its next answer would go back by that second less the
		 * preemption. */
		middle = tap_ns(ts) + (tap_ns(&real_after) - tap_ns(ts)) / 2;
		tai_offset = (tap_ns(&tai) - middle + 500000000u) / 1000000000u * 1000000000u;
		*ts = tap_timespec(tap_ns(ts) + tai_offset);
		return 0;
	}
	for (int attempt = 0; attempt < 8; attempt++) {
		uint64_t before = tap_raw_monotonic_ns(), after;

		rc = next(id, ts);
		after = tap_raw_monotonic_ns();
		*raw_ns = before + (after - before) / 2;
		if (after - before <= TAP_SAME_MOMENT_NS)
			break;
	}
	return rc;
}

/* The kernel's clock as the tap answers it, without counting. */
static int tap_read(clockid_t id, struct timespec *ts)
{
	int (*next)(clockid_t, struct timespec *) = (int (*)(clockid_t, struct timespec *))tap_next(
	    &tap_clock_gettime_next, "clock_gettime");
	uint64_t cost = __atomic_load_n(&tap_state()->read_cost_ns, __ATOMIC_ACQUIRE);
	uint64_t raw = 0;
	int64_t shift;
	int rc;

	tap_spin(next, cost / 2);
	rc = tap_read_at(next, id, ts, &raw);
	tap_spin(next, cost - cost / 2);
	shift = tap_shift_at(id, raw);
	if (rc == 0 && ts != NULL && shift != 0)
		tap_shift_timespec(ts, shift);
	return rc;
}

/* CLOCK_MONOTONIC as the tap answers it now, in ns: the test's reference. */
TAP_EXPORT uint64_t life_tap_monotonic_ns(void);
TAP_EXPORT uint64_t life_tap_monotonic_ns(void)
{
	struct timespec ts;

	tap_read(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CLOCK_REALTIME as the tap answers it now, in ns: the test's reference. */
TAP_EXPORT uint64_t life_tap_realtime_ns(void);
TAP_EXPORT uint64_t life_tap_realtime_ns(void)
{
	struct timespec ts;

	tap_read(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Clock id as the tap answers it now, in ns (0 where the kernel has no such
 * clock): the test's reference for CLOCK_BOOTTIME and CLOCK_TAI. */
TAP_EXPORT uint64_t life_tap_clock_ns(clockid_t id);
TAP_EXPORT uint64_t life_tap_clock_ns(clockid_t id)
{
	struct timespec ts;

	if (tap_read(id, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Counts, then answers as libc does, the clock moved as asked. */
TAP_EXPORT int clock_gettime(clockid_t id, struct timespec *ts)
{
	tap_calls++;
	tap_gate();
	return tap_read(id, ts);
}

/* Counts, then answers as libc does, the clock moved as asked. */
TAP_EXPORT int gettimeofday(struct timeval *tv, GETTIMEOFDAY_TZ_TYPE tz)
{
	int (*next)(struct timeval *, void *) =
	    (int (*)(struct timeval *, void *))tap_next(&tap_gettimeofday_next, "gettimeofday");
	int64_t shift = tap_shift_for(CLOCK_REALTIME);
	int rc;

	tap_calls++;
	tap_gate();
	rc = next(tv, tz);
	if (rc == 0 && shift != 0) {
		int64_t us = (int64_t)tv->tv_sec * 1000000 + tv->tv_usec + shift / 1000;

		tv->tv_sec = (time_t)(us / 1000000);
		tv->tv_usec = (suseconds_t)(us % 1000000);
	}
	return rc;
}

/* Counts, then answers as libc does, the clock moved as asked. */
TAP_EXPORT time_t time(time_t *t)
{
	time_t (*next)(time_t *) = (time_t(*)(time_t *))tap_next(&tap_time_next, "time");
	int64_t shift = tap_shift_for(CLOCK_REALTIME);
	time_t now;

	tap_calls++;
	tap_gate();
	now = next(NULL);
	if (now != (time_t)-1 && shift != 0)
		now = (time_t)(((int64_t)now * 1000000000 + shift) / 1000000000);
	if (t != NULL)
		*t = now;
	return now;
}

/* Counts, then answers as libc does, the clock moved as asked. */
TAP_EXPORT int timespec_get(struct timespec *ts, int base)
{
	int (*next)(struct timespec *, int) =
	    (int (*)(struct timespec *, int))tap_next(&tap_timespec_get_next, "timespec_get");
	int64_t shift = tap_shift_for(CLOCK_REALTIME);
	int rc;

	tap_calls++;
	tap_gate();
	rc = next(ts, base);
	if (rc == TIME_UTC && base == TIME_UTC && shift != 0)
		tap_shift_timespec(ts, shift);
	return rc;
}

/* An absolute CLOCK_REALTIME sleep as the kernel runs it, on the tap's
 * clock: it ends when the tap's CLOCK_REALTIME reaches the deadline, so a
 * step the tap makes meanwhile lengthens or shortens it, as a real step
 * does (a library that slept so, set back 10 s, slept 10 s longer). In
 * slices of a millisecond on libc's CLOCK_MONOTONIC; a signal ends it with
 * EINTR, as the kernel's would. Every other sleep goes to libc as it is. */
TAP_EXPORT int clock_nanosleep(clockid_t id, int flags, const struct timespec *request,
			       struct timespec *remain)
{
	int (*next)(clockid_t, int, const struct timespec *, struct timespec *) =
	    (int (*)(clockid_t, int, const struct timespec *, struct timespec *))tap_next(
		&tap_clock_nanosleep_next, "clock_nanosleep");
	int (*read)(clockid_t, struct timespec *) = (int (*)(clockid_t, struct timespec *))tap_next(
	    &tap_clock_gettime_next, "clock_gettime");
	int64_t deadline;

	if (id != CLOCK_REALTIME || !(flags & TIMER_ABSTIME) || request == NULL)
		return next(id, flags, request, remain);
	deadline = (int64_t)request->tv_sec * 1000000000 + request->tv_nsec;
	for (;;) {
		struct timespec now, slice = { 0, 1000000 };
		int64_t left;
		int rc;

		read(CLOCK_REALTIME, &now);
		left = deadline - ((int64_t)now.tv_sec * 1000000000 + now.tv_nsec +
				   tap_shift_for(CLOCK_REALTIME));
		if (left <= 0)
			return 0;
		if (left < slice.tv_nsec)
			slice.tv_nsec = (long)left;
		rc = next(CLOCK_MONOTONIC, 0, &slice, NULL);
		if (rc != 0)
			return rc;
	}
}
