/* Which entry points are faster from the TSC than from libc: measured on a
 * CPU that has a line when the first calibration is good (and again when
 * more CPUs have lines), decided, remembered, and published to readers as
 * the api_flags bits (clock.h). */
#ifndef FASTTIME_API_CHOICE_H
#define FASTTIME_API_CHOICE_H

#include <stdbool.h>
#include <stdint.h>

#include "entry_table.h"
#include "round.h"
#include "table.h"

/* An entry point's cost; arrays of them are indexed by enum entry_point. */
struct api_cost {
	const char *name;
	uint32_t flag;	/* its CLOCK_API_* bit */
	double libc_ns; /* per call, the best of several rounds */
	double fast_ns; /* 0: not measured (the lines cannot answer it yet) */
};

/* The fast path must win by this factor: a tie measured on a noisy machine
 * must not send an entry point through the library for nothing. */
#define API_CHOICE_MARGIN 0.97

/* Measures each entry point's fast path (read as mode_flags, the
 * CLOCK_READ_BITS of clock.h, say) against libc's, alternating, and returns
 * the CLOCK_API_* bits of those that were clearly faster (API_CHOICE_MARGIN). The
 * table must be valid. An entry point the lines cannot answer yet (a
 * clock whose offset or lines are not published) is measured on libc's
 * side only. *fallbacks counts the calls the counter could not
 * answer: any at all, and the fast figures are libc's, not the counter's.
 * Between the timed runs a look of the watch renews the lines' validity
 * (look_once): over a slow kernel clock the measurement outlasts it. */
uint32_t api_choice_measure(uint32_t mode_flags, struct api_cost costs[ENTRY_COUNT],
			    unsigned *fallbacks);

/* When and on what the entry points were last chosen, for --info and the
 * debug lines. */
struct api_choice_record {
	unsigned round;		 /* the refresh round after which it was made */
	uint64_t after_start_ns; /* since the engine began (api_choice_begin) */
	uint32_t cpu;		 /* the CPU it was measured on, which had a line */
	unsigned cpus_with_line; /* of cpus_usable, at the time */
	unsigned cpus_usable;
	unsigned rejected; /* measurements thrown away: a call fell back */
	uint32_t chosen;   /* the CLOCK_API_* bits chosen, in this process's mode */
	/* The same for a reader of each mode: a service chooses for both. */
	uint32_t chosen_by_mode[TABLE_MODE_COUNT];
	uint32_t answerable; /* the CLOCK_API_* bits the lines could answer */
};
extern struct api_choice_record api_choice_last;
/* Costs measured when choosing the entry points, in this process's mode,
 * for diagnostics. */
extern struct api_cost api_choice_costs[ENTRY_COUNT];
/* Whether a choice stands (api_choice_last.chosen). */
extern bool api_choice_made;

/* Whether the engine chooses for readers of both modes (a calibration
 * service, whose page serves both) or of this process's own only. */
void api_choice_for_both_modes(bool both);
/* The engine begins at now_ns: the choice's age counts from there. */
void api_choice_begin(uint64_t now_ns);
/* Forgets the choice: the tools, before calibrating anew. */
void api_choice_forget(void);
/* After a round: chooses if it is due (with_line > 0, trusted lines), then
 * publishes the flags readers use: the chosen entry points while the
 * lines are trusted, none while they are not. force: every entry point,
 * whatever the measurement says (FASTTIME_FORCE). */
void api_choice_after_round(unsigned round, const struct round_result *result, bool trusted,
			    bool force);
/* Measures and chooses again now, with_line CPUs having lines (and round,
 * unless NULL, just run), and publishes; false when the measurement was
 * thrown away. */
bool api_choice_again(unsigned with_line, const struct round_result *round, bool force);
/* The api_flags bits (less CLOCK_START_PENDING) of a reader of mode for
 * apis answering from the TSC: once an entry point has answered from the
 * TSC in that mode and stops, CLOCK_LIBC_CLAMPED, for the rest of the
 * engine's life. */
uint32_t api_choice_flags_for(enum table_mode mode, uint32_t apis);
/* Each mode's flags when the lines stop answering for good: none but
 * CLOCK_LIBC_CLAMPED, where an entry point of that mode has answered from
 * the TSC. */
void api_choice_stopped_flags(uint32_t flags[TABLE_MODE_COUNT]);

#endif
