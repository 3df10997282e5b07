/* No descriptor opened while the program runs: a daemon that closes 0 and
 * opens /dev/null expects fd 0, and a server that closes every descriptor
 * it does not know must not close one of ours under us, or have its own
 * taken by one of ours. After the first time call, with the refresh thread
 * running round after round (the .test script sets a 10 ms interval), the
 * shim beneath the library (opens.c) counts every descriptor made by any
 * thread but the watchdog; there must be none. The program meanwhile also
 * does what the daemon does, close(0) and open("/dev/null"), uncounted,
 * and must get 0 each time.
 *
 * Usage: nofd */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "life.h"

/* How long the rounds are watched: some 100 of them at 10 ms. A thread
 * that opens a descriptor in its rounds does so round after round, and the
 * shim sees every one, however short-lived. */
#define NOFD_WATCH_MS 1000u

int main(void)
{
	void (*count)(bool on);
	uint64_t (*seen)(const char **first);
	const char *first;
	uint64_t opens, start, reads = 0, not_zero = 0, daemon_opens = 0;

	life_begin("nofd");
	life_watchdog(60);
	count = (void (*)(bool))dlsym(RTLD_DEFAULT, "life_opens_count");
	seen = (uint64_t(*)(const char **))dlsym(RTLD_DEFAULT, "life_opens_seen");
	if (count == NULL || seen == NULL)
		life_fail("the opens shim is not preloaded (life_opens_count missing)");
	life_require_fast();
	if (life_thread_named("fasttime") < 0)
		life_fail("no thread named fasttime after the first time call");

	start = life_libc_mono_ns();
	count(true);
	while (life_libc_mono_ns() - start < NOFD_WATCH_MS * LIFE_NS_PER_MS) {
		int fd;

		(void)life_mono_ns();
		reads++;
		/* The daemon's own open, not counted: it is the program's
		 * (the count pauses for it). */
		count(false);
		close(0);
		fd = open("/dev/null", O_RDONLY);
		count(true);
		daemon_opens++;
		if (fd != 0) {
			not_zero++;
			if (fd > 0)
				close(fd);
		}
		life_sleep_ms(1);
	}
	count(false);
	opens = seen(&first);
	life_say("%llu descriptors made by the process's threads in %u ms after the first time "
		 "call (%llu clock reads)%s%s",
		 (unsigned long long)opens, NOFD_WATCH_MS, (unsigned long long)reads,
		 opens > 0 ? "; the first: " : "", first);
	life_say("close(0), open(\"/dev/null\"): not fd 0 in %llu of %llu",
		 (unsigned long long)not_zero, (unsigned long long)daemon_opens);
	if (opens > 0)
		life_fail("a descriptor was made while the program ran: %s", first);
	if (not_zero > 0)
		life_fail("open after close(0) did not return 0 in %llu of %llu",
			  (unsigned long long)not_zero, (unsigned long long)daemon_opens);
	return 0;
}
