/* The page a fork child finds zero (wiped.h). */
#include "config.h"

#include "wiped.h"

#include <sys/mman.h>

#include "start_data.h"

#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK 18 /* Linux 4.14; older C library headers lack it */
#endif

/* In a section of its own, which the library's link puts right after the
 * table (src/preload/libfasttime.ld): the page lies between the page a
 * served process maps over the table and .bss, so the wipe's mapping of
 * its own cuts no other mapping in two. Linked without the script (the
 * programs), .lbss puts it after .bss, still a page of its own. */
union wiped_page wiped __attribute__((section(".lbss.fasttime_wiped"), aligned(4096)));
bool wiped_armed START_DATA;

bool wiped_arm(void)
{
	if (__atomic_load_n(&wiped_armed, __ATOMIC_ACQUIRE))
		return true;
	/* Fails on a kernel before 4.14, under a filter that refuses
	 * madvise, or where the page is not private anonymous memory. */
	if (madvise(&wiped, sizeof wiped, MADV_WIPEONFORK) != 0)
		return false;
	__atomic_store_n(&wiped_armed, true, __ATOMIC_RELEASE);
	return true;
}

void wiped_zero(void)
{
	struct wiped_words *words = &wiped.words;

	if (__atomic_load_n(&words->judged_until_tsc, __ATOMIC_RELAXED) != 0)
		__atomic_store_n(&words->judged_until_tsc, 0, __ATOMIC_RELEASE);
	if (__atomic_load_n(&words->judged_until_given_tsc, __ATOMIC_RELAXED) != 0)
		__atomic_store_n(&words->judged_until_given_tsc, 0, __ATOMIC_RELEASE);
	if (__atomic_load_n(&words->checked_until_tsc, __ATOMIC_RELAXED) != 0)
		__atomic_store_n(&words->checked_until_tsc, 0, __ATOMIC_RELEASE);
	if (__atomic_load_n(&words->check_retry_tsc, __ATOMIC_RELAXED) != 0)
		__atomic_store_n(&words->check_retry_tsc, 0, __ATOMIC_RELEASE);
	if (__atomic_load_n(&words->time_ns_pid, __ATOMIC_RELAXED) != 0)
		__atomic_store_n(&words->time_ns_pid, 0, __ATOMIC_RELEASE);
	if (__atomic_load_n(&words->remapping, __ATOMIC_RELAXED))
		__atomic_store_n(&words->remapping, false, __ATOMIC_RELEASE);
	if (__atomic_load_n(&words->time_ns_checking, __ATOMIC_RELAXED))
		__atomic_store_n(&words->time_ns_checking, false, __ATOMIC_RELEASE);
	if (__atomic_load_n(&words->judging, __ATOMIC_RELAXED))
		__atomic_store_n(&words->judging, false, __ATOMIC_RELEASE);
	if (__atomic_load_n(&words->checking, __ATOMIC_RELAXED))
		__atomic_store_n(&words->checking, false, __ATOMIC_RELEASE);
}
