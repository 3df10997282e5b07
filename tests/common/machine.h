/* What the tests ask before they test the counter path: whether the library
 * would read the counter here, under this process's FASTTIME_* settings,
 * by the library's own rule (cpu.h), not a copy of it. */
#ifndef FASTTIME_TEST_MACHINE_H
#define FASTTIME_TEST_MACHINE_H

/* Why the library answers every call with libc on this machine with these
 * settings (FASTTIME_MODE, FASTTIME_HWCAPS); NULL when it reads the counter. */
const char *test_machine_unusable(void);

#endif
