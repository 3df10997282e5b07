/* Calls that arrive before the library is ready get correct answers: from
 * this program's .preinit_array, which runs before any library's constructor
 * (so before the library has resolved libc's functions), from a constructor
 * that runs before main(), and at main(). The reference is the system call
 * itself: libc's own functions may not be reachable that early. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "integ.h"

#define EARLY_ERRNO	   4242
#define EARLY_TOLERANCE_NS 5000

/* What one stage saw; only numbers, since stdio may not be ready. */
struct early_stage {
	const char *name;
	unsigned checks;
	unsigned failures;
	const char *first_failure;
	long long detail[3];
};

static struct early_stage early_preinit_stage = { .name = "preinit_array" };
static struct early_stage early_constructor_stage = { .name = "constructor(101)" };
static struct early_stage early_main_stage = { .name = "main()" };

/* The kernel's own reading of clock id: the reference at any stage. */
static int64_t early_kernel_ns(clockid_t id)
{
	struct timespec ts;

	syscall(SYS_clock_gettime, id, &ts);
	return integ_ns(&ts);
}

/* Notes one check's outcome, keeping the first failure's numbers. */
static void early_check(struct early_stage *stage, bool ok, const char *what, long long a,
			long long b, long long c)
{
	stage->checks++;
	if (ok)
		return;
	if (stage->failures++ == 0) {
		stage->first_failure = what;
		stage->detail[0] = a;
		stage->detail[1] = b;
		stage->detail[2] = c;
	}
}

/* Proves a reading of clock id lies within the kernel's readings before and
 * after it, and that the call left errno alone. */
static void early_clock(struct early_stage *stage, clockid_t id, const char *what)
{
	struct timespec ts = { -1, -1 };
	int64_t before, after;
	int rc;

	before = early_kernel_ns(id);
	errno = EARLY_ERRNO;
	rc = clock_gettime(id, &ts);
	early_check(stage, rc == 0 && errno == EARLY_ERRNO, what, rc, errno, 0);
	after = early_kernel_ns(id);
	early_check(stage,
		    integ_ns(&ts) >= before - EARLY_TOLERANCE_NS &&
			integ_ns(&ts) <= after + EARLY_TOLERANCE_NS,
		    what, before, integ_ns(&ts), after);
}

/* Every entry point, valid and invalid arguments, as early as stage is. */
static void early_take(struct early_stage *stage)
{
	struct timespec ts = { -1, -1 };
	struct timeval tv = { -1, -1 };
	struct timezone tz = { -777, -777 };
	int64_t before, after;
	time_t t = -1, got;
	int rc;

	early_clock(stage, CLOCK_MONOTONIC, "clock_gettime(CLOCK_MONOTONIC)");
	early_clock(stage, CLOCK_REALTIME, "clock_gettime(CLOCK_REALTIME)");
	early_clock(stage, CLOCK_BOOTTIME, "clock_gettime(CLOCK_BOOTTIME)");

	errno = EARLY_ERRNO;
	rc = clock_gettime(100, &ts);
	early_check(stage, rc == -1 && errno == EINVAL && ts.tv_sec == -1,
		    "clock_gettime(100) must fail with EINVAL", rc, errno, ts.tv_sec);

	before = early_kernel_ns(CLOCK_REALTIME);
	errno = EARLY_ERRNO;
	rc = gettimeofday(&tv, &tz);
	early_check(stage, rc == 0 && errno == EARLY_ERRNO && tz.tz_minuteswest != -777,
		    "gettimeofday(tv, tz)", rc, errno, tz.tz_minuteswest);
	after = early_kernel_ns(CLOCK_REALTIME);
	early_check(
	    stage,
	    (int64_t)tv.tv_sec * 1000000 + tv.tv_usec >= (before - EARLY_TOLERANCE_NS) / 1000 &&
		(int64_t)tv.tv_sec * 1000000 + tv.tv_usec <= (after + EARLY_TOLERANCE_NS) / 1000,
	    "gettimeofday's value", before / 1000, (long long)tv.tv_sec * 1000000 + tv.tv_usec,
	    after / 1000);

	/* time() is a second: libc's lags the precise clock by up to a tick. */
	before = early_kernel_ns(CLOCK_REALTIME);
	got = time(&t);
	after = early_kernel_ns(CLOCK_REALTIME);
	early_check(stage,
		    got == t && got >= before / INTEG_NS_PER_SEC - 1 &&
			got <= (after + EARLY_TOLERANCE_NS) / INTEG_NS_PER_SEC,
		    "time(&t)", before / INTEG_NS_PER_SEC, got, t);

	before = early_kernel_ns(CLOCK_REALTIME);
	rc = timespec_get(&ts, TIME_UTC);
	after = early_kernel_ns(CLOCK_REALTIME);
	early_check(stage,
		    rc == TIME_UTC && integ_ns(&ts) >= before - EARLY_TOLERANCE_NS &&
			integ_ns(&ts) <= after + EARLY_TOLERANCE_NS,
		    "timespec_get(ts, TIME_UTC)", before, integ_ns(&ts), after);

	ts.tv_sec = -1;
	rc = timespec_get(&ts, 0);
	early_check(stage, rc == 0 && ts.tv_sec == -1, "timespec_get(ts, 0) must return 0", rc,
		    ts.tv_sec, 0);
}

/* The .preinit_array entry: the first code of the process after relocation. */
static void early_preinit(int argc, char **argv, char **envp)
{
	(void)argc;
	(void)argv;
	(void)envp;
	early_take(&early_preinit_stage);
}

/* Runs before every library's constructor, the preloaded one included. */
__attribute__((section(".preinit_array"),
	       used)) static void (*const early_preinit_entry)(int, char **,
							       char **) = early_preinit;

/* Runs after the libraries' constructors, before main(). */
__attribute__((constructor(101))) static void early_constructor(void)
{
	early_take(&early_constructor_stage);
}

/* Prints what stage saw; true when all its checks passed. */
static void early_report(const struct early_stage *stage)
{
	printf("%s: %u checks, %u failed\n", stage->name, stage->checks, stage->failures);
	if (stage->checks == 0)
		integ_fail("%s: never ran", stage->name);
	if (stage->failures > 0)
		integ_fail("%s: %s (%lld, %lld, %lld)", stage->name, stage->first_failure,
			   stage->detail[0], stage->detail[1], stage->detail[2]);
}

/* Takes the last set of readings and reports all three stages. */
int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	integ_require_preload();
	early_take(&early_main_stage);
	early_report(&early_preinit_stage);
	early_report(&early_constructor_stage);
	early_report(&early_main_stage);
	return integ_status();
}
