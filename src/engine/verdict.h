/* Whether the lines may answer on this machine: the processor (CPUID), the
 * kernel's clocksource as read before main(), how readers and sandwiches
 * read the counter, and the clocksource's probation, judged round after
 * round (evidence.h holds the rules). */
#ifndef FASTTIME_VERDICT_H
#define FASTTIME_VERDICT_H

#include <stdbool.h>
#include <stdint.h>

#include "cpu.h"
#include "table.h"

/* The verdict is verdict.c's own: only it writes it, and the rest of the
 * engine, the service and the tools read it through these. */
/* Why the fast path cannot run here; NULL if it can. */
const char *verdict_unusable(void);
/* Whether the lines may answer (evidence.h), as of the last round. */
bool verdict_trusted(void);
/* Whether the kernel's own clock reads the counter (clocksource tsc): it
 * checked that every CPU's counter agrees, and keeps checking. False once
 * the sandwiches saw the kernel's clock leave the counter. */
bool verdict_kernel_reads_counter(void);
/* How readers read the counter and the CPU id. */
struct cpu_reading verdict_reading(void);
/* How the sandwiches read them: ordered wherever the CPU allows it,
 * whatever the readers' mode. */
struct cpu_reading verdict_sample_reading(void);
/* Whether a reader of mode can read here at all (an ordered read needs
 * rdtscp or a serializing lfence): a service measures and publishes both. */
bool verdict_mode_reads(enum table_mode mode);
/* The CLOCK_READ_BITS (clock.h) of a reader of mode; 0 where it cannot
 * read here. */
uint32_t verdict_flags_of_mode(enum table_mode mode);

/* Reads the kernel's clocksource, once, for the refresh thread to judge
 * when it starts: called by the constructor, before main(), as the one file
 * the library opens. While the program runs, a descriptor of ours could
 * take the number the program expects from its next open, or be closed
 * under it by a program that closes what it does not know. A served
 * process needs it only if it leaves its page for a thread of its own, and
 * reads it then (refresh_leave_service), as its looks for a new page open
 * that page. */
void verdict_read_kernel(void);
/* The same for the tools, which may read files whenever they like, with
 * everything the kernel says of the counter. */
void verdict_probe_kernel_now(void);
/* Judges the processor and the kernel, and chooses the readings (relaxed:
 * the readers' mode); returns why the fast path cannot run, or NULL.
 * CPUID, and the kernel's facts as read before: no file. */
const char *verdict_prepare(bool relaxed);
/* After a round: the kernel's clock as its sandwiches saw it (the
 * narrowest, UINT64_MAX: none), and the clocksource's probation (steady:
 * every answering line continued within its bounds); returns whether the
 * lines are trusted. */
bool verdict_after_round(uint64_t narrowest_ns, bool steady);

#endif
