/* A calibration service's page forged after it was accepted, and what its
 * readers, and a service, make of it (forged.test, service-preload.test).
 * Every reference reading here is the raw system call: neither the
 * preload nor the tap beneath it can move it.
 *
 *   copy SRC DST AFTER_MS JUMP_NS RUN_MS   (without the preload) copies the
 *                     page SRC to DST every millisecond for RUN_MS, as its
 *                     owner; from AFTER_MS on, each line of the copy says
 *                     JUMP_NS more than the service's
 *   check PAGE RUN_MS (without the preload) for RUN_MS, while PAGE is
 *                     fresh, each CPU's line against the raw
 *                     CLOCK_MONOTONIC, and the realtime offset against the
 *                     raw CLOCK_REALTIME minus CLOCK_MONOTONIC: prints the
 *                     largest errors, exits 1 beyond 1 ms
 *   rewrite MODE PAGE (without the preload) maps the live PAGE read-write,
 *                     as its owner, and every 5 ms rewrites it until
 *                     killed: "slope" makes every line stand still (slope
 *                     1 of 2^64, at the time it first forged) with a
 *                     validity that never ends; "realtime" puts
 *                     CLOCK_REALTIME an hour ahead
 *   read MODE         (under the preload, served by FASTTIME_PAGE's page)
 *                     starts "rewrite MODE" on that page, then: for
 *                     "slope", waits 2 s of the preload's CLOCK_MONOTONIC,
 *                     each reading against the raw one; for "realtime",
 *                     samples CLOCK_REALTIME and gettimeofday for 3 s
 *                     against the raw ones. A watchdog fails the test when
 *                     it does not end within 20 s (a hang). Fails when a
 *                     reading from 1.5 s on is further than 1 ms from the
 *                     raw one, or when the page still serves at the end;
 *                     exits 75 when the page did not serve its first time
 *                     call.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "clock_table.h"
#include "service_page.h"
#include "table.h"

#define FORGED_NS_PER_MS 1000000ull
#define FORGED_NS_PER_S	 1000000000ull
/* The largest distance from the raw system call a settled reading may
 * have, and a page's line. */
#define FORGED_BOUND_NS (1 * FORGED_NS_PER_MS)
/* When readings are settled, from the forger's start. */
#define FORGED_SETTLED_NS (1500 * FORGED_NS_PER_MS)
#define FORGED_HOUR_NS	  (3600ull * FORGED_NS_PER_S)

/* The kernel's clock by the system call itself. */
static uint64_t forged_raw_ns(clockid_t id)
{
	struct timespec ts;

	syscall(SYS_clock_gettime, id, &ts);
	return (uint64_t)ts.tv_sec * FORGED_NS_PER_S + (uint64_t)ts.tv_nsec;
}

static uint64_t forged_distance(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

static void forged_sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000l };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static uint64_t forged_line_at(const struct table_record *record, uint64_t tsc)
{
	uint64_t mult = __atomic_load_n(&record->mult, __ATOMIC_RELAXED);
	uint64_t offset = __atomic_load_n(&record->offset, __ATOMIC_RELAXED);

	return (uint64_t)(((unsigned __int128)tsc * mult) >> 64) + offset;
}

/* The page at path, mapped (read-write with writable), or exits 1. */
/* The page's owner may rewrite it whatever its service made of it: a
 * published page is append-only (where the service may set that), and an
 * owner with the right to clears it first, as root can. */
static void forged_clear_append_only(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int flags;

	if (fd < 0)
		return;
	if (ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0 && (flags & FS_APPEND_FL)) {
		flags &= ~FS_APPEND_FL;
		(void)ioctl(fd, FS_IOC_SETFLAGS, &flags);
	}
	close(fd);
}

static struct table_page *forged_map(const char *path, bool writable)
{
	int fd;
	void *view;

	if (writable)
		forged_clear_append_only(path);
	fd = open(path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);

	if (fd < 0) {
		fprintf(stderr, "forged: cannot open %s: %s\n", path, strerror(errno));
		exit(1);
	}
	view = mmap(NULL, sizeof(struct table_page), writable ? PROT_READ | PROT_WRITE : PROT_READ,
		    MAP_SHARED, fd, 0);
	close(fd);
	if (view == MAP_FAILED) {
		fprintf(stderr, "forged: cannot map %s: %s\n", path, strerror(errno));
		exit(1);
	}
	return view;
}

/* copy: a page that tells the truth until after_ms, then jump_ns more. */
static int forged_copy(const char *src, const char *dst, unsigned after_ms, uint64_t jump_ns,
		       unsigned run_ms)
{
	const struct table_page *from = forged_map(src, false);
	char temporary[4096];
	struct table_page *to;
	uint64_t start = forged_raw_ns(CLOCK_MONOTONIC);
	int fd;

	snprintf(temporary, sizeof temporary, "%s.forging", dst);
	fd = open(temporary, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || ftruncate(fd, sizeof(struct table_page)) != 0) {
		fprintf(stderr, "forged: cannot make %s: %s\n", temporary, strerror(errno));
		return 1;
	}
	to = mmap(NULL, sizeof(struct table_page), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (to == MAP_FAILED)
		return 1;
	for (bool named = false;; named = true) {
		uint64_t now = forged_raw_ns(CLOCK_MONOTONIC);

		memcpy(to, from, sizeof *to);
		if (now - start >= after_ms * FORGED_NS_PER_MS)
			for (unsigned cpu = 0; cpu < CPU_MAX_CPUS; cpu++) {
				if (to->records[cpu].mult != 0)
					to->records[cpu].offset += jump_ns;
				if (to->raw_records[cpu].mult != 0)
					to->raw_records[cpu].offset += jump_ns;
			}
		if (!named && rename(temporary, dst) != 0)
			return 1;
		if (now - start >= run_ms * FORGED_NS_PER_MS)
			return 0;
		forged_sleep_ms(1);
	}
}

/* check: the page's lines and realtime offset against the raw clocks. */
static int forged_check(const char *path, unsigned run_ms)
{
	const struct table_page *page = forged_map(path, false);
	uint64_t end = forged_raw_ns(CLOCK_MONOTONIC) + run_ms * FORGED_NS_PER_MS;
	uint64_t worst_line = 0, worst_real = 0, samples = 0;

	while (forged_raw_ns(CLOCK_MONOTONIC) < end) {
		uint64_t valid_from =
		    __atomic_load_n(&page->shared.valid_from_tsc, __ATOMIC_ACQUIRE);
		uint64_t valid_ticks = __atomic_load_n(&page->shared.valid_ticks, __ATOMIC_ACQUIRE);
		uint64_t before = forged_raw_ns(CLOCK_MONOTONIC);
		uint64_t real = forged_raw_ns(CLOCK_REALTIME);
		uint64_t tsc = __rdtsc();
		uint64_t after = forged_raw_ns(CLOCK_MONOTONIC);
		uint64_t offset = __atomic_load_n(&page->shared.offset_ns[CLOCK_OFFSET_REALTIME],
						  __ATOMIC_RELAXED);

		if (valid_ticks != 0 && tsc - valid_from <= valid_ticks) {
			for (unsigned cpu = 0; cpu < CPU_MAX_CPUS; cpu++) {
				uint64_t ns, error;

				if (page->records[cpu].mult == 0)
					continue;
				ns = forged_line_at(&page->records[cpu], tsc);
				error = ns < before ? before - ns : ns > after ? ns - after : 0;
				if (error > worst_line)
					worst_line = error;
			}
			if (forged_distance(offset, real - before) > worst_real)
				worst_real = forged_distance(offset, real - before);
			samples++;
		}
		forged_sleep_ms(1);
	}
	printf("check_samples=%llu\ncheck_line_error_ns=%llu\ncheck_realtime_error_ns=%llu\n",
	       (unsigned long long)samples, (unsigned long long)worst_line,
	       (unsigned long long)worst_real);
	return samples > 0 && worst_line <= FORGED_BOUND_NS && worst_real <= FORGED_BOUND_NS ? 0
											     : 1;
}

/* A record written whole, as the service writes it: a reader never sees
 * half of it. */
static void forged_store(struct table_record *record, uint64_t mult, uint64_t offset)
{
	__m128i v = _mm_set_epi64x((long long)offset, (long long)mult);

	__asm__ volatile("movdqa %1, %0" : "=m"(*record) : "x"(v));
}

/* rewrite slope: every line stands still at the time it first forged. */
static void forged_rewrite_slope(struct table_page *page, uint64_t *frozen)
{
	uint64_t tsc = __rdtsc();

	for (unsigned cpu = 0; cpu < CPU_MAX_CPUS; cpu++) {
		struct table_record *records[2] = { &page->records[cpu], &page->raw_records[cpu] };

		for (unsigned i = 0; i < 2; i++) {
			/* A line the service withdraws (it finds it wrong) is
			 * put back as forged. */
			if (records[i]->mult == 1 || (records[i]->mult == 0 && frozen[i] == 0))
				continue;
			if (frozen[i] == 0)
				frozen[i] = forged_line_at(records[i], tsc);
			forged_store(records[i], 1, frozen[i]);
		}
	}
	page->shared.valid_ticks = UINT64_MAX;
	/* The service, finding its lines wrong, stops answering from them:
	 * each mode's flags as they were are put back. */
	for (unsigned mode = 0; mode < TABLE_MODE_COUNT; mode++) {
		if (frozen[2 + mode] == 0)
			frozen[2 + mode] = page->shared.api_flags[mode] | (1ull << 63);
		page->shared.api_flags[mode] = (uint32_t)frozen[2 + mode];
	}
}

/* rewrite realtime: an hour ahead of whatever the service published. */
static void forged_rewrite_realtime(struct table_page *page, uint64_t *written)
{
	uint64_t *offset = &page->shared.offset_ns[CLOCK_OFFSET_REALTIME];

	if (*offset != *written)
		*written = *offset + FORGED_HOUR_NS;
	*offset = *written;
}

static __attribute__((noreturn)) void forged_rewrite(const char *mode, const char *path)
{
	struct table_page *page = forged_map(path, true);
	uint64_t state[2 + TABLE_MODE_COUNT] = { 0 };

	for (;;) {
		if (strcmp(mode, "slope") == 0)
			forged_rewrite_slope(page, state);
		else
			forged_rewrite_realtime(page, state);
		forged_sleep_ms(5);
	}
}

/* Whether this process maps path (its page, over the library's table). */
static bool forged_maps(const char *path)
{
	FILE *maps = fopen("/proc/self/maps", "re");
	char line[8192];
	struct stat st;
	bool found = false;

	/* By the file's identity: a page that a link names (a service not
	 * run as root publishes a memfd) is mapped under another name. */
	if (maps == NULL || stat(path, &st) != 0) {
		if (maps != NULL)
			fclose(maps);
		return false;
	}
	while (!found && fgets(line, sizeof line, maps) != NULL) {
		unsigned major, minor;
		unsigned long inode;

		found = sscanf(line, "%*s %*s %*s %x:%x %lu", &major, &minor, &inode) == 3 &&
			major == major(st.st_dev) && minor == minor(st.st_dev) &&
			inode == (unsigned long)st.st_ino;
	}
	fclose(maps);
	return found;
}

static void forged_hung(int sig)
{
	static const char message[] = "forged: FAIL: the reader did not end within 20 s (a hang)\n";

	(void)sig;
	if (write(STDOUT_FILENO, message, sizeof message - 1) < 0)
		_exit(2);
	_exit(1);
}

/* The forger, in a child without the preload. */
static pid_t forged_start(const char *self, const char *mode, const char *page)
{
	pid_t pid = fork();

	if (pid == 0) {
		unsetenv("LD_PRELOAD");
		execl("/proc/self/exe", self, "rewrite", mode, page, (char *)NULL);
		_exit(127);
	}
	return pid;
}

struct forged_track {
	uint64_t samples, settled, worst_ns, worst_settled_ns;
};

static void forged_track(struct forged_track *t, uint64_t error_ns, bool settled)
{
	t->samples++;
	if (error_ns > t->worst_ns)
		t->worst_ns = error_ns;
	if (settled) {
		t->settled++;
		if (error_ns > t->worst_settled_ns)
			t->worst_settled_ns = error_ns;
	}
}

static void forged_say(const char *name, const struct forged_track *t)
{
	printf("%s_samples=%llu\n%s_settled=%llu\n%s_max_error_ns=%llu\n"
	       "%s_settled_max_error_ns=%llu\n",
	       name, (unsigned long long)t->samples, name, (unsigned long long)t->settled, name,
	       (unsigned long long)t->worst_ns, name, (unsigned long long)t->worst_settled_ns);
}

/* The distance of a reading from the raw clock read around it. */
static uint64_t forged_error(uint64_t before, uint64_t ns, uint64_t after)
{
	return ns < before ? before - ns : ns > after ? ns - after : 0;
}

/* Whether the page's choice of entry points for this process's mode
 * (FASTTIME_MODE) answers any of api_bits from the lines. */
static bool forged_page_chose(const char *page, uint32_t api_bits)
{
	const char *mode = getenv("FASTTIME_MODE");
	const struct table_page *view = forged_map(page, false);
	enum table_mode which =
	    mode != NULL && strcmp(mode, "relaxed") == 0 ? TABLE_MODE_RELAXED : TABLE_MODE_ORDERED;
	bool chose =
	    (__atomic_load_n(&view->shared.api_flags[which], __ATOMIC_ACQUIRE) & api_bits) != 0;

	munmap((void *)view, sizeof *view);
	return chose;
}

static int forged_read(const char *self, const char *mode)
{
	const char *page = getenv("FASTTIME_PAGE");
	struct forged_track mono = { 0 }, real = { 0 }, tod = { 0 };
	uint64_t start;
	bool fail = false;
	int status;
	pid_t forger;
	struct timespec first_call;

	/* The first time call looks for the page and maps it. */
	clock_gettime(CLOCK_MONOTONIC, &first_call);
	if (page == NULL || !forged_maps(page)) {
		printf("forged: not served by %s at the first time call\n",
		       page ? page : "(no FASTTIME_PAGE)");
		return 75;
	}
	/* Where the library follows the service's choice (FASTTIME_FORCE=0,
	 * the chosen readings), that choice may leave the clocks read here
	 * to libc: nothing then reads the forged lines, or judges them. */
	if (getenv("FASTTIME_FORCE") != NULL && strcmp(getenv("FASTTIME_FORCE"), "0") == 0 &&
	    !forged_page_chose(page, strcmp(mode, "slope") == 0
					 ? CLOCK_API_MONOTONIC
					 : CLOCK_API_REALTIME | CLOCK_API_GETTIMEOFDAY)) {
		printf("forged: the service's choice leaves the clocks read here to libc: "
		       "nothing to forge\n");
		return 77;
	}
	signal(SIGALRM, forged_hung);
	alarm(20);
	forger = forged_start(self, mode, page);
	start = forged_raw_ns(CLOCK_MONOTONIC);
	if (strcmp(mode, "slope") == 0) {
		struct timespec ts;
		uint64_t first;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		first = (uint64_t)ts.tv_sec * FORGED_NS_PER_S + (uint64_t)ts.tv_nsec;
		for (;;) {
			uint64_t before = forged_raw_ns(CLOCK_MONOTONIC), ns, after;

			clock_gettime(CLOCK_MONOTONIC, &ts);
			after = forged_raw_ns(CLOCK_MONOTONIC);
			ns = (uint64_t)ts.tv_sec * FORGED_NS_PER_S + (uint64_t)ts.tv_nsec;
			forged_track(&mono, forged_error(before, ns, after),
				     before - start >= FORGED_SETTLED_NS);
			if (ns - first >= 2 * FORGED_NS_PER_S)
				break;
		}
		forged_say("mono", &mono);
		fail = mono.worst_settled_ns > FORGED_BOUND_NS;
	} else {
		while (forged_raw_ns(CLOCK_MONOTONIC) - start < 3 * FORGED_NS_PER_S) {
			uint64_t before = forged_raw_ns(CLOCK_REALTIME), after, ns;
			bool settled = forged_raw_ns(CLOCK_MONOTONIC) - start >= FORGED_SETTLED_NS;
			struct timespec ts;
			struct timeval tv;

			clock_gettime(CLOCK_REALTIME, &ts);
			after = forged_raw_ns(CLOCK_REALTIME);
			ns = (uint64_t)ts.tv_sec * FORGED_NS_PER_S + (uint64_t)ts.tv_nsec;
			forged_track(&real, forged_error(before, ns, after), settled);
			before = forged_raw_ns(CLOCK_REALTIME);
			gettimeofday(&tv, NULL);
			after = forged_raw_ns(CLOCK_REALTIME);
			ns = (uint64_t)tv.tv_sec * FORGED_NS_PER_S + (uint64_t)tv.tv_usec * 1000u;
			/* gettimeofday truncates to the microsecond. */
			forged_track(&tod, forged_error(before - before % 1000u, ns, after),
				     settled);
		}
		forged_say("real", &real);
		forged_say("tod", &tod);
		fail = real.worst_settled_ns > FORGED_BOUND_NS ||
		       tod.worst_settled_ns > FORGED_BOUND_NS;
	}
	alarm(0);
	kill(forger, SIGKILL);
	waitpid(forger, &status, 0);
	printf("served_at_end=%s\n", forged_maps(page) ? "yes" : "no");
	if (forged_maps(page))
		fail = true;
	printf("forged: %s\n", fail ? "FAIL" : "PASS");
	return fail ? 1 : 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 7 && strcmp(argv[1], "copy") == 0)
		return forged_copy(argv[2], argv[3], (unsigned)atoi(argv[4]),
				   strtoull(argv[5], NULL, 10), (unsigned)atoi(argv[6]));
	if (argc == 4 && strcmp(argv[1], "check") == 0)
		return forged_check(argv[2], (unsigned)atoi(argv[3]));
	if (argc == 4 && strcmp(argv[1], "rewrite") == 0)
		forged_rewrite(argv[2], argv[3]);
	if (argc == 3 && strcmp(argv[1], "read") == 0 &&
	    (strcmp(argv[2], "slope") == 0 || strcmp(argv[2], "realtime") == 0))
		return forged_read(argv[0], argv[2]);
	fprintf(stderr, "usage: forged copy SRC DST AFTER_MS JUMP_NS RUN_MS | check PAGE RUN_MS | "
			"rewrite slope|realtime PAGE | read slope|realtime\n");
	return 2;
}
