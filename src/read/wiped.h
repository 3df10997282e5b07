/* The words a fork child must find zero, on one page that the kernel
 * zeroes in every child (MADV_WIPEONFORK, Linux 4.14) once a page serves
 * the process: a served child then runs nothing of the library's at its
 * fork, and still judges its time namespace and its page before its first
 * answer. A child made without fork() (_Fork, a raw clone) runs no atfork
 * handler, and gets the same. Zero means: judge again, nothing in
 * progress, no namespace checked, lines never checked. Where the kernel cannot wipe the page,
 * the library's fork handler zeroes the words itself (wiped_zero). */
#ifndef FASTTIME_WIPED_H
#define FASTTIME_WIPED_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct wiped_words {
	/* The counter reading from which the process's table must be judged
	 * again before it answers (service_page_rejudge): 0 at first and in
	 * a fork child, UINT64_MAX where the table is the process's own. The
	 * fast read compares the counter with it. */
	uint64_t judged_until_tsc;
	/* The two deadlines it is the sooner of (clock_check.h): the one
	 * the page's judgement gave, and the one the lines' check gave. */
	uint64_t judged_until_given_tsc;
	uint64_t checked_until_tsc;
	/* The earliest a line refused by a check is checked again. */
	uint64_t check_retry_tsc;
	/* The process found in the serving page's time namespace
	 * (service_page_time_namespace_checked). */
	pid_t time_ns_pid;
	/* Taken, never waited for: a change of what is mapped over the
	 * table, a look at the time namespace, a judgement of the page. */
	bool remapping;
	bool time_ns_checking;
	bool judging;
	bool checking;
};

/* A page of its own, placed beside the table by the library's link
 * (src/preload/libfasttime.ld): the fast read addresses it directly, and
 * the wipe splits off this page alone. */
union wiped_page {
	struct wiped_words words;
	char page[4096];
};

extern union wiped_page wiped __attribute__((visibility("hidden")));

/* Whether the kernel wipes the page in fork children (wiped_arm). */
extern bool wiped_armed __attribute__((visibility("hidden")));

/* The deadline the careful read compares the counter with. */
static inline uint64_t wiped_judged_until(void)
{
	return __atomic_load_n(&wiped.words.judged_until_tsc, __ATOMIC_RELAXED);
}

/* Whether tsc has reached the deadline, for the fast read: one compare
 * with the word in memory, as it was when the deadline was the thread's
 * own; a relaxed atomic load gets a register and a move of its own. A
 * word's load is atomic on x86-64 anyway. Under ThreadSanitizer, the load
 * it sees. */
static inline __attribute__((always_inline)) bool wiped_judged_past(uint64_t tsc)
{
#ifdef __SANITIZE_THREAD__
	return tsc >= wiped_judged_until();
#else
	bool past;

	__asm__("cmp %[until], %[tsc]"
		: "=@ccae"(past)
		: [tsc] "r"(tsc), [until] "m"(wiped.words.judged_until_tsc));
	return past;
#endif
}

/* Has the kernel zero the page in every fork child from now on; once.
 * True when it does (from this or an earlier call). */
bool wiped_arm(void);

/* In a fork child the kernel did not wipe the page for: the words zeroed
 * by hand, each written only where it is set. */
void wiped_zero(void);

#endif
