/* Where the refresh thread runs: the CPUs it may use (the program's, as
 * changed at run time), its pins to one CPU for a visit, where it rests
 * between rounds, and the rescue by which a reader moves it off a CPU it
 * pinned itself to and cannot run on (a real-time thread owns it). */
#ifndef FASTTIME_PLACEMENT_H
#define FASTTIME_PLACEMENT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "table.h"

#define PLACEMENT_MASK_WORDS TABLE_WANTED_WORDS
/* A visit to a CPU (the pin and its sandwiches) that lasts longer than
 * this did not find the CPU free: the thread waited behind a thread of
 * higher priority there. A reader whose lines went stale meanwhile moves
 * the thread back (placement_free_stuck_thread). */
#define PLACEMENT_VISIT_MAX_NS 50000000ull

/* The CPUs this thread may run on as it starts: its creator's. False when
 * they cannot be had. */
bool placement_read_affinity(void);
/* The tools' rounds visit every online CPU their cpuset allows, whatever
 * the caller's own affinity: they describe the machine. */
void placement_describe_machine(void);
/* Whether the rounds describe the machine (the tools), every CPU as it is. */
bool placement_whole_machine(void);
/* The refresh thread's id, for a reader that moves it back; 0 where none
 * runs (it left, a fork child, the tools' own rounds). */
void placement_set_thread(pid_t tid);
/* In a fork child: the thread and its visit stayed in the parent. */
void placement_after_fork(void);

/* The CPUs a round visits, and the thread's own among them (home); the
 * start of the round's walk. */
void placement_round_begin(unsigned long *visit, unsigned long *home);
/* Whether someone else changed the thread's affinity during the round: it
 * stops pinning, and the mask stays as they set it. */
bool placement_moved(void);
/* Pins the thread to cpu, unless someone else moved it; false when the
 * kernel refused (offline, outside the cpuset) or it was moved. */
bool placement_pin(uint32_t cpu);
/* Runs the thread anywhere among its home CPUs again. */
void placement_unpin(void);
/* The round's end: the thread rests on its home CPUs that the round could
 * pin to or skipped as taken lately (usable; none usable: its start CPUs),
 * or on all of home. */
void placement_round_end(const unsigned long *home, const unsigned long *usable, bool any_usable);
/* Whether cpu is among the thread's home CPUs (where it rests). */
bool placement_home_has(uint32_t cpu);
/* Whether a reader reported a CPU the last round did not visit. */
bool placement_wanted_new(void);

/* A visit: begun before the pin, closed after the sandwiches. Close
 * returns true when a rescuer moved the thread during it. */
void placement_visit_begin(uint32_t cpu);
bool placement_visit_close(void);
/* PLACEMENT_VISIT_MAX_NS in ticks, once a line says how fast they run. */
void placement_set_visit_limit(uint64_t ticks);
/* Moves the thread off the CPU of its visit: when forced (a stopper that
 * waits to join it), or when the visit lasted PLACEMENT_VISIT_MAX_NS. */
void placement_rescue(bool forced);
/* For a reader whose lines went stale (a slow path, about to call libc):
 * when the refresh thread has been stuck for PLACEMENT_VISIT_MAX_NS on a
 * CPU it pinned itself to, as behind a real-time thread that owns that
 * CPU (with the kernel's real-time throttling off it would wait for ever),
 * moves it back to the other CPUs it runs on, once; the round then goes
 * on without that CPU, whose line lapses. One atomic load otherwise. */
void placement_free_stuck_thread(void);

#endif
