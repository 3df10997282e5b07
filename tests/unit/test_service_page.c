/* A calibration service's page as a reader judges it: a page made here,
 * with a line that follows this machine's CLOCK_MONOTONIC, is accepted;
 * each field spoiled in turn is refused, with its reason. Then the file's
 * own checks (mode, size, kind, owner) through service_page_look_at. */
#include "config.h"

#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cpu.h"
#include "service_page.h"
#include "timespec_ns.h"
#include "unit.h"

/* CPUs given the line: every CPU this test may run on, on machines of up
 * to this many. */
#define SERVICE_PAGE_TEST_CPUS 64u

static struct table_page service_page_test_page;
static struct service_page_expect service_page_test_expect;
static char service_page_test_file[64];

static uint64_t service_page_test_clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return timespec_to_ns(&ts);
}

static uint64_t service_page_test_mono_ns(void)
{
	return service_page_test_clock_ns(CLOCK_MONOTONIC);
}

/* This machine's line for clock, from two readings 20 ms apart: good to
 * about ten nanoseconds per millisecond, far inside the reader's 1 ms. */
static struct calib_line service_page_test_line_of(clockid_t clock)
{
	const struct timespec pause = { 0, 20000000 };
	uint64_t tsc0 = cpu_rdtsc(), ns0 = service_page_test_clock_ns(clock), tsc1, ns1;
	struct calib_line line;

	nanosleep(&pause, NULL);
	tsc1 = cpu_rdtsc();
	ns1 = service_page_test_clock_ns(clock);
	line.mult = (uint64_t)(((unsigned __int128)(ns1 - ns0) << 64) / (tsc1 - tsc0));
	line.offset = ns1 - (uint64_t)(((unsigned __int128)tsc1 * line.mult) >> 64);
	return line;
}

static void service_page_test_setup(void)
{
	struct service_page_header header = {
		.magic = SERVICE_PAGE_MAGIC,
		.version = SERVICE_PAGE_VERSION,
		.size = SERVICE_PAGE_SIZE,
		.service_pid = (int32_t)getpid(),
		.interval_ms = SETTINGS_DEFAULT_INTERVAL_MS,
	};
	struct table_page *page = &service_page_test_page;
	struct calib_line line = service_page_test_line_of(CLOCK_MONOTONIC);
	struct timespec realtime;

	service_page_time_namespace(&header.time_ns_device, &header.time_ns_inode);
	memset(page, 0, sizeof *page);
	memcpy(page->header, &header, sizeof header);
	for (uint32_t cpu = 0; cpu < SERVICE_PAGE_TEST_CPUS; cpu++) {
		page->records[cpu].mult = line.mult;
		page->records[cpu].offset = line.offset;
		cpu_mask_set(page->calibrated, cpu);
	}
	clock_gettime(CLOCK_REALTIME, &realtime);
	page->shared.offset_ns[CLOCK_OFFSET_REALTIME] =
	    timespec_to_ns(&realtime) - service_page_test_mono_ns();
	page->shared.api_flags[TABLE_MODE_ORDERED] =
	    CLOCK_API_GETTIMEOFDAY | (1u << CLOCK_MONOTONIC);
	/* Fresh for 100 ms, within what the engine grants (WATCH_VALID_NS). */
	page->shared.valid_from_tsc = cpu_rdtsc();
	page->shared.valid_ticks = (uint64_t)(((unsigned __int128)100000000u << 64) / line.mult);

	memset(&service_page_test_expect, 0, sizeof service_page_test_expect);
	service_page_test_expect.uid = geteuid();
	service_page_test_expect.rseq_registered = true;
	service_page_test_expect.time_ns_device = header.time_ns_device;
	service_page_test_expect.time_ns_inode = header.time_ns_inode;
	service_page_test_file[0] = '\0';
}

static void service_page_test_teardown(void)
{
	if (service_page_test_file[0] != '\0')
		unlink(service_page_test_file);
}

/* The reader's verdict on the test's page contains want (NULL: serves). */
static void service_page_test_judged(const char *want)
{
	const char *got = service_page_judge(&service_page_test_page, &service_page_test_expect);

	if (want == NULL)
		ck_assert_msg(got == NULL, "refused: %s", got);
	else
		ck_assert_msg(got != NULL && strstr(got, want) != NULL,
			      "expected a refusal with \"%s\", got %s", want,
			      got != NULL ? got : "none");
}

/* CLOCK_BOOTTIME minus CLOCK_MONOTONIC here, now: from the narrowest of
 * a few brackets, so that a preemption cannot put it a millisecond off. */
static uint64_t service_page_test_boottime_offset(void)
{
	uint64_t best = 0, narrowest = UINT64_MAX;

	for (unsigned i = 0; i < 5; i++) {
		struct timespec boot;
		uint64_t before = service_page_test_mono_ns(), after;

		clock_gettime(CLOCK_BOOTTIME, &boot);
		after = service_page_test_mono_ns();
		if (after - before < narrowest) {
			narrowest = after - before;
			best = timespec_to_ns(&boot) - (before + (after - before) / 2);
		}
	}
	return best;
}

static struct service_page_header *service_page_test_header(void)
{
	return (struct service_page_header *)service_page_test_page.header;
}

START_TEST(test_fresh_page_serves)
{
	service_page_test_judged(NULL);
}
END_TEST

START_TEST(test_header_refused)
{
	service_page_test_header()->magic ^= 1;
	service_page_test_judged("magic");
	service_page_test_setup();
	service_page_test_header()->version = SERVICE_PAGE_VERSION + 1;
	service_page_test_judged("version");
	service_page_test_setup();
	service_page_test_header()->size = SERVICE_PAGE_SIZE - TABLE_PAGE_ALIGN;
	service_page_test_judged("size");
}
END_TEST

/* A reader whose settings differ from the service's would read otherwise
 * than the page's flags say: refused. */
START_TEST(test_other_settings_refused)
{
	service_page_test_expect.force = true;
	service_page_test_judged("FASTTIME_FORCE");
	service_page_test_setup();
	service_page_test_expect.hidden_hwcaps = CPU_HWCAP_RDTSCP;
	service_page_test_judged("hides");
}
END_TEST

/* One page serves readers of both modes, each by its own mode's flags: a
 * relaxed reader is served as an ordered one is, and judged by the relaxed
 * word (its rseq, its start), not the ordered one. */
START_TEST(test_both_modes_served)
{
	uint32_t *flags = service_page_test_page.shared.api_flags;

	flags[TABLE_MODE_RELAXED] = CLOCK_MODE_RELAXED | (1u << CLOCK_MONOTONIC);
	service_page_test_expect.relaxed = false;
	service_page_test_judged(NULL);
	service_page_test_expect.relaxed = true;
	service_page_test_judged(NULL);

	/* The relaxed word reads the CPU id from rseq: a relaxed reader
	 * without rseq is refused, an ordered one (rdtscp) is not. */
	service_page_test_expect.rseq_registered = false;
	service_page_test_judged("rseq");
	service_page_test_expect.relaxed = false;
	service_page_test_judged(NULL);
	/* Where the service itself read the CPU id by getcpu, it serves. */
	flags[TABLE_MODE_RELAXED] |= CLOCK_CPU_GETCPU;
	service_page_test_expect.relaxed = true;
	service_page_test_judged(NULL);

	/* An ordered word read with lfence and rseq refuses an ordered reader
	 * without rseq, and leaves the relaxed one alone. */
	service_page_test_setup();
	flags[TABLE_MODE_RELAXED] = CLOCK_MODE_RELAXED | CLOCK_CPU_GETCPU;
	flags[TABLE_MODE_ORDERED] |= CLOCK_READ_LFENCE;
	service_page_test_expect.rseq_registered = false;
	service_page_test_judged("rseq");
	service_page_test_expect.relaxed = true;
	service_page_test_judged(NULL);

	/* A start still due is judged in the reader's own word. */
	service_page_test_setup();
	flags[TABLE_MODE_RELAXED] = CLOCK_MODE_RELAXED | CLOCK_START_PENDING;
	service_page_test_expect.relaxed = true;
	service_page_test_judged("not started");
	service_page_test_expect.relaxed = false;
	service_page_test_judged(NULL);
}
END_TEST

/* A page an older service wrote (version 2, which carried one mode and
 * one flags word) is refused, and the refusal says so. */
START_TEST(test_old_version_refused)
{
	service_page_test_header()->version = 2;
	service_page_test_judged("another version");
	service_page_test_expect.relaxed = true;
	service_page_test_judged("another version");
}
END_TEST

START_TEST(test_unstarted_or_stale_refused)
{
	service_page_test_page.shared.api_flags[TABLE_MODE_ORDERED] |= CLOCK_START_PENDING;
	service_page_test_judged("not started");
	service_page_test_setup();
	service_page_test_page.shared.valid_ticks = 0;
	service_page_test_judged("stale");
	service_page_test_setup();
	/* Written ahead of this TSC: another boot, or a counter gone back. */
	service_page_test_page.shared.valid_from_tsc = cpu_rdtsc() + (1ull << 40);
	service_page_test_judged("stale");
	service_page_test_setup();
	service_page_test_page.shared.valid_ticks *= 10;
	service_page_test_judged("absurd validity");
}
END_TEST

START_TEST(test_absurd_lines_refused)
{
	service_page_test_page.records[1].mult = 1000;
	service_page_test_judged("absurd slope");
	service_page_test_setup();
	memset(service_page_test_page.records, 0, sizeof service_page_test_page.records);
	service_page_test_judged("no CPU has a line");
}
END_TEST

/* What another boot or another time namespace looks like from here: the
 * lines, or the realtime offset, a second away from this kernel's. */
START_TEST(test_other_clock_refused)
{
	for (uint32_t cpu = 0; cpu < SERVICE_PAGE_TEST_CPUS; cpu++)
		service_page_test_page.records[cpu].offset += 1000000000ull;
	service_page_test_judged("CLOCK_MONOTONIC");
	service_page_test_setup();
	service_page_test_page.shared.offset_ns[CLOCK_OFFSET_REALTIME] += 1000000000ull;
	service_page_test_judged("CLOCK_REALTIME");
	/* A namespace that moves only CLOCK_BOOTTIME: caught where the page
	 * answers that clock. */
	service_page_test_setup();
	service_page_test_page.shared.api_flags[TABLE_MODE_ORDERED] |= 1u << CLOCK_BOOTTIME;
	service_page_test_page.shared.offset_ns[CLOCK_OFFSET_BOOTTIME] =
	    service_page_test_boottime_offset() + 86400000000000ull;
	service_page_test_judged("CLOCK_BOOTTIME");
	service_page_test_setup();
	service_page_test_page.shared.api_flags[TABLE_MODE_ORDERED] |= 1u << CLOCK_BOOTTIME;
	service_page_test_page.shared.offset_ns[CLOCK_OFFSET_BOOTTIME] =
	    service_page_test_boottime_offset();
	service_page_test_judged(NULL);
	/* And any namespace at all, where /proc names it. */
	service_page_test_setup();
	service_page_test_header()->time_ns_device = 1;
	service_page_test_header()->time_ns_inode = 1;
	service_page_test_expect.time_ns_device = 1;
	service_page_test_expect.time_ns_inode = 2;
	service_page_test_judged("another time namespace");
	/* Where one side cannot tell its namespace (no /proc, no pidfd's way
	 * to it), the reader may be in another: refused either way. */
	service_page_test_setup();
	service_page_test_header()->time_ns_inode = 1;
	service_page_test_expect.time_ns_device = 0;
	service_page_test_expect.time_ns_inode = 0;
	service_page_test_judged("cannot tell its time namespace");
	service_page_test_setup();
	service_page_test_header()->time_ns_device = 0;
	service_page_test_header()->time_ns_inode = 0;
	service_page_test_expect.time_ns_inode = 1;
	service_page_test_judged("could not tell its time namespace");
}
END_TEST

/* Every CPU's line is judged, not only the one the reader runs on: the
 * counters are one clock, and a line an hour off on a CPU the reader runs
 * on later would answer an hour off there. The last CPU the test gives a
 * line is one this process does not run on (below 64 CPUs). */
START_TEST(test_other_cpu_line_refused)
{
	const uint32_t other = SERVICE_PAGE_TEST_CPUS - 1;
	struct calib_line raw = service_page_test_line_of(CLOCK_MONOTONIC_RAW);

	service_page_test_page.records[other].offset += 3600000000000ull;
	service_page_test_judged("another CPU's line disagrees");
	service_page_test_setup();
	service_page_test_page.shared.api_flags[TABLE_MODE_ORDERED] |= CLOCK_API_MONOTONIC_RAW;
	for (uint32_t cpu = 0; cpu < SERVICE_PAGE_TEST_CPUS; cpu++)
		service_page_test_page.raw_records[cpu] =
		    (struct table_record){ .mult = raw.mult, .offset = raw.offset };
	service_page_test_judged(NULL);
	service_page_test_page.raw_records[other].offset -= 3600000000000ull;
	service_page_test_judged("CLOCK_MONOTONIC_RAW line disagrees");
}
END_TEST

/* CLOCK_MONOTONIC_RAW's lines, where the page answers that clock (its bit
 * in the flags): lines that follow this kernel's CLOCK_MONOTONIC_RAW serve,
 * as do none at all (libc answers it); lines a second off it, as in
 * another boot or time namespace, or one with an absurd slope, are
 * refused. Without the bit they are not looked at. */
START_TEST(test_raw_lines_judged)
{
	struct calib_line raw = service_page_test_line_of(CLOCK_MONOTONIC_RAW);
	struct table_shared *shared = &service_page_test_page.shared;

	shared->api_flags[TABLE_MODE_ORDERED] |= CLOCK_API_MONOTONIC_RAW;
	service_page_test_judged(NULL);
	for (uint32_t cpu = 0; cpu < SERVICE_PAGE_TEST_CPUS; cpu++) {
		service_page_test_page.raw_records[cpu].mult = raw.mult;
		service_page_test_page.raw_records[cpu].offset = raw.offset;
	}
	service_page_test_judged(NULL);
	for (uint32_t cpu = 0; cpu < SERVICE_PAGE_TEST_CPUS; cpu++)
		service_page_test_page.raw_records[cpu].offset += 1000000000ull;
	service_page_test_judged("CLOCK_MONOTONIC_RAW");
	shared->api_flags[TABLE_MODE_ORDERED] &= ~(uint32_t)CLOCK_API_MONOTONIC_RAW;
	service_page_test_judged(NULL);
	shared->api_flags[TABLE_MODE_ORDERED] |= CLOCK_API_MONOTONIC_RAW;
	for (uint32_t cpu = 0; cpu < SERVICE_PAGE_TEST_CPUS; cpu++)
		service_page_test_page.raw_records[cpu].offset -= 1000000000ull;
	service_page_test_page.raw_records[SERVICE_PAGE_TEST_CPUS + 1].mult = 1000;
	service_page_test_judged("CLOCK_MONOTONIC_RAW line with an absurd slope");
}
END_TEST

/* A CPU this process may run on that the service does not calibrate: its
 * readers there would answer with libc for ever. One it calibrates whose
 * line is withdrawn for a while (a real-time load) is no reason to refuse:
 * the line comes back. */
START_TEST(test_uncovered_cpu_refused)
{
	cpu_set_t allowed;
	int last = -1;

	ck_assert_int_eq(sched_getaffinity(0, sizeof allowed, &allowed), 0);
	for (int cpu = 0; cpu < (int)SERVICE_PAGE_TEST_CPUS; cpu++)
		if (CPU_ISSET(cpu, &allowed))
			last = cpu;
	ck_assert_int_ge(last, 0);
	cpu_mask_clear(service_page_test_page.calibrated, (uint32_t)last);
	service_page_test_judged("not one the service calibrates");
	cpu_mask_set(service_page_test_page.calibrated, (uint32_t)last);
	service_page_test_page.records[last].mult = 0;
	service_page_test_page.records[last].offset = 0;
	service_page_test_judged(NULL);
}
END_TEST

/* Writes the test's page to a file of this mode and looks at it. */
static const char *service_page_test_look(mode_t mode, off_t size)
{
	struct service_page_look look;
	int fd;

	snprintf(service_page_test_file, sizeof service_page_test_file,
		 "/tmp/fasttime-unit-page.XXXXXX");
	fd = mkstemp(service_page_test_file);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, &service_page_test_page, sizeof service_page_test_page),
			 (ssize_t)sizeof service_page_test_page);
	ck_assert_int_eq(ftruncate(fd, size), 0);
	ck_assert_int_eq(fchmod(fd, mode), 0);
	close(fd);
	service_page_look_at(service_page_test_file, &service_page_test_expect, false, &look);
	return look.refused;
}

START_TEST(test_file_checks)
{
	struct service_page_look look;
	const char *refused;

	refused = service_page_test_look(0644, SERVICE_PAGE_SIZE);
	ck_assert_msg(refused == NULL, "a good file refused: %s", refused);
	unlink(service_page_test_file);
	refused = service_page_test_look(0664, SERVICE_PAGE_SIZE);
	ck_assert_msg(refused != NULL && strstr(refused, "writable") != NULL, "group-writable: %s",
		      refused != NULL ? refused : "served");
	unlink(service_page_test_file);
	refused = service_page_test_look(0646, SERVICE_PAGE_SIZE);
	ck_assert_msg(refused != NULL && strstr(refused, "writable") != NULL,
		      "writable by others: %s", refused != NULL ? refused : "served");
	unlink(service_page_test_file);
	refused = service_page_test_look(0644, SERVICE_PAGE_SIZE - 1);
	ck_assert_msg(refused != NULL && strstr(refused, "size") != NULL, "short: %s",
		      refused != NULL ? refused : "served");
	/* Another user's page: the test's uid is not the file's. */
	unlink(service_page_test_file);
	service_page_test_expect.uid = geteuid() + 1;
	refused = service_page_test_look(0644, SERVICE_PAGE_SIZE);
	ck_assert_msg(geteuid() == 0 ? refused == NULL
				     : refused != NULL && strstr(refused, "another user") != NULL,
		      "another user's: %s", refused != NULL ? refused : "served");
	/* An owner this user namespace does not map shows as the overflow
	 * uid: never trusted, even by a reader running as that uid. */
	{
		struct stat st = { .st_mode = S_IFREG | 0644,
				   .st_uid = SERVICE_PAGE_OVERFLOW_UID,
				   .st_size = SERVICE_PAGE_SIZE };

		service_page_test_expect.uid = SERVICE_PAGE_OVERFLOW_UID;
		refused = service_page_judge_file(&st, &service_page_test_expect);
		ck_assert_msg(refused != NULL && strstr(refused, "overflow uid") != NULL,
			      "an unmapped owner: %s", refused != NULL ? refused : "served");
		st.st_uid = 0;
		refused = service_page_judge_file(&st, &service_page_test_expect);
		ck_assert_msg(refused == NULL, "root's: %s", refused);
		st.st_uid = 1234;
		service_page_test_expect.uid = 1234;
		refused = service_page_judge_file(&st, &service_page_test_expect);
		ck_assert_msg(refused == NULL, "the reader's own: %s", refused);
	}
	service_page_look_at("/tmp", &service_page_test_expect, false, &look);
	ck_assert_msg(look.refused != NULL && strstr(look.refused, "regular") != NULL,
		      "a directory: %s", look.refused != NULL ? look.refused : "served");
	service_page_look_at("/nonexistent/fasttime/page", &service_page_test_expect, false, &look);
	ck_assert_msg(look.refused != NULL && strcmp(look.refused, "no page") == 0,
		      "a missing page: %s", look.refused != NULL ? look.refused : "served");
}
END_TEST

/* The time namespace a reader compares with its page's, whichever way the
 * kernel is asked (the pidfd's, where no filter judges the calls), is the
 * one /proc shows, where /proc is mounted. */
START_TEST(test_time_namespace_is_procs)
{
	uint64_t device, inode;
	struct stat st;

	if (stat("/proc/self/ns/time", &st) != 0) {
		fprintf(stderr, "no /proc/self/ns/time here: the time namespace not compared\n");
		return;
	}
	service_page_time_namespace(&device, &inode);
	ck_assert_uint_eq(inode, (uint64_t)st.st_ino);
	ck_assert_uint_eq(device, (uint64_t)st.st_dev);
}
END_TEST

Suite *suite_service_page(void)
{
	Suite *s = suite_create("service_page");
	TCase *tc = tcase_create("judge");

	tcase_add_checked_fixture(tc, service_page_test_setup, service_page_test_teardown);
	tcase_add_test(tc, test_fresh_page_serves);
	tcase_add_test(tc, test_header_refused);
	tcase_add_test(tc, test_other_settings_refused);
	tcase_add_test(tc, test_both_modes_served);
	tcase_add_test(tc, test_old_version_refused);
	tcase_add_test(tc, test_unstarted_or_stale_refused);
	tcase_add_test(tc, test_absurd_lines_refused);
	tcase_add_test(tc, test_other_clock_refused);
	tcase_add_test(tc, test_uncovered_cpu_refused);
	tcase_add_test(tc, test_raw_lines_judged);
	tcase_add_test(tc, test_other_cpu_line_refused);
	tcase_add_test(tc, test_file_checks);
	tcase_add_test(tc, test_time_namespace_is_procs);
	suite_add_tcase(s, tc);
	return s;
}
