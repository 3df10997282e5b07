/* How often a process whose lines the TSC could not answer from (stale,
 * or none on this CPU) runs the checks that follow such a call: a served
 * process's page abandoned or condemned, a look for a new service, a
 * process made without fork(), a refresh thread stuck on a CPU. Each reads
 * the counter or the kernel's clock, and a program that reads the clock in
 * a loop while its lines are stale would pay them all on every call, at
 * several times libc's cost; their own periods are tens of milliseconds and
 * more, so once a millisecond is as prompt. */
#ifndef FASTTIME_STALE_CHECKS_H
#define FASTTIME_STALE_CHECKS_H

#include <stdbool.h>
#include <stdint.h>

/* The checks run at most once per this, in the whole process. */
#define STALE_CHECKS_PERIOD_NS 1000000ull

/* Whether the checks are due now (now_ns: CLOCK_MONOTONIC, or any reading
 * near it, such as libc's answer to the call): true for one caller once a
 * period has passed since the last that was; true at once where now_ns is
 * more than a period before it (a fork child in another time namespace, a
 * reading of another clock), so that no reading can hold the checks off;
 * not for one a little before it (another thread's).
 * No lock, no call: one load, and a compare-and-swap when due. */
bool stale_checks_due(uint64_t now_ns);

#endif
