/* The preloaded program of systemd-unit.sh: reads every entry point the
 * library answers, twenty times a second, until it is killed, so that
 * whichever the page's choice answers from the counter keeps it watching
 * the page (a restarted service's page is found from those reads). */
#include <sys/time.h>
#include <time.h>

int main(void)
{
	static const clockid_t clocks[] = { CLOCK_MONOTONIC, CLOCK_REALTIME, CLOCK_BOOTTIME,
					    CLOCK_TAI, CLOCK_MONOTONIC_RAW };
	const struct timespec pause = { 0, 50000000 };
	struct timespec ts;
	struct timeval tv;

	for (;;) {
		for (unsigned i = 0; i < sizeof clocks / sizeof clocks[0]; i++)
			clock_gettime(clocks[i], &ts);
		gettimeofday(&tv, NULL);
		timespec_get(&ts, TIME_UTC);
		(void)time(NULL);
		nanosleep(&pause, NULL);
	}
}
