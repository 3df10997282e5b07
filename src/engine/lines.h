/* Every CPU's line as the engine keeps it, and how long readers may trust
 * the lines: the rates the kernel's clock ran at lately, each line's
 * predicted error, the window granted from a sample or a look, and the
 * moves that take a line from readers (withdrawn, left, dropped). Written
 * by the refresh thread only (or a tool calibrating in its own thread),
 * and by lines.c only: the round, the look and the raw lines read
 * lines_cpus[] and change it through the functions below. Readers see
 * what table.h publishes. */
#ifndef FASTTIME_LINES_H
#define FASTTIME_LINES_H

#include <stdbool.h>
#include <stdint.h>

#include "calib.h"
#include "clock_table.h"
#include "cpu.h"

/* A CPU whose calibration keeps failing this long answers with libc. */
#define LINES_DROP_AFTER_NS (15ull * 1000000000ull)
/* How long rounds skip a CPU after its first slow visit (a real-time
 * thread owns it); doubled at each one after, up to the last. The skips
 * start again from the first once the CPU has let every visit through for
 * FORGET: longer than the last skip and the visit that ends it, which a
 * throttled real-time thread may let through. */
#define LINES_UNREACHABLE_FIRST_NS  1000000000ull
#define LINES_UNREACHABLE_LAST_NS   16000000000ull
#define LINES_UNREACHABLE_FORGET_NS (2 * LINES_UNREACHABLE_LAST_NS)

/* What the engine knows about one CPU, also shown by fasttime --info. */
struct lines_cpu {
	/* online, and the refresh thread could run there last round; set by
	 * lines_cpu_allow and lines_cpu_leaves only (lines.c keeps a mask) */
	bool allowed;
	bool dropped; /* failed too long: answering with libc */
	/* Each kind of line here (enum clock_lines): CLOCK_MONOTONIC's, which
	 * answer the clocks the table offsets from it, and CLOCK_MONOTONIC_RAW's
	 * own (raw_lines.h). */
	struct calib_cpu calib[CLOCK_LINES_COUNT];
	enum calib_outcome last_outcome;
	uint64_t last_sample_mono_ns;
	uint64_t last_width_ns;	      /* the last sample's sandwich */
	uint64_t previous_slope_mult; /* the slope before the last round */
	uint64_t failing_since_ns;    /* 0 while it succeeds */
	/* The error (kernel minus line) the last round or look found, and
	 * when: a look that finds it moved faster than the kernel's clock can
	 * slew saw a discontinuity (watch_parted). */
	int64_t look_error_ns;
	uint64_t look_mono_ns;
	uint32_t node;
	/* Each kind's line was taken from readers: they answer with libc, and
	 * the next sample restarts it there. The monotonic line when a round
	 * could not sample it, or it lapsed (lines_withdraw_unsampled); the raw
	 * one when its sample failed, or a look found it off. */
	bool withdrawn[CLOCK_LINES_COUNT];
	/* A CPU the thread could not run on soon after pinning to it (a
	 * real-time thread owns it): rounds skip it until then, and wait
	 * twice as long after each such visit (lines_cpu_note_visit), until the CPU has
	 * been free since the last one (unreachable_last_ns) for
	 * LINES_UNREACHABLE_FORGET_NS. */
	uint64_t unreachable_until_ns;
	uint64_t unreachable_backoff_ns;
	uint64_t unreachable_last_ns;
	/* Its counter agreed with the round's narrowest sample, taken on
	 * another CPU, at its last visit, and no look found its line off
	 * since: rounds may carry its line on that sample instead of pinning
	 * the thread there (round.c), for carried_rounds rounds in a row at
	 * most ROUND_VISIT_EVERY - 1. */
	bool agrees;
	unsigned carried_rounds;
};

/* Every CPU's entry, CPU_MAX_CPUS of them: NULL until lines_map. A megabyte
 * that only a process calibrating lines writes, kept out of .bss, whose
 * mapping every process start under the preload would pay for. */
extern struct lines_cpu *lines_cpus;

/* Maps lines_cpus (zeroed), once: the memory stays for the process's life
 * and passes to its fork children. False where it cannot be mapped (errno
 * as mmap left it); no line may be drawn then. */
bool lines_map(void);

/* Whether c's line answers readers: the thread could run there, its
 * calibration has not been dropped or withdrawn, and it has a line. */
bool lines_cpu_answers(const struct lines_cpu *c);
/* Whether c's line of kind answers readers: c's monotonic line answers
 * (lines_cpu_answers), and its line of kind is drawn and not withdrawn. */
bool lines_kind_answers(const struct lines_cpu *c, enum clock_lines kind);
/* How many CPUs have a line that answers (none before lines_map). */
unsigned lines_answering(void);
/* The first CPU at or after cpu whose entry is allowed (lines_cpu_allow),
 * or CPU_MAX_CPUS. Only allowed entries have lines or state, and walks over
 * the CPUs visit those alone: an entry read is a page of the array mapped
 * in the process, and every fork copies those mappings and every exit
 * tears them down, so reading all CPU_MAX_CPUS entries made each fork of a
 * process with its own thread some 270 page-table entries dearer. */
uint32_t lines_allowed_next(uint32_t cpu);
/* Walks cpu over the allowed CPUs, in order (lines_allowed_next). */
#define LINES_FOR_EACH_ALLOWED(cpu)                                                                \
	for (uint32_t cpu = lines_allowed_next(0); cpu < CPU_MAX_CPUS;                             \
	     cpu = lines_allowed_next(cpu + 1))
/* Notes that cpu's calibration failed at now (monotonic ns); once it has
 * failed for LINES_DROP_AFTER_NS without a success between, the CPU's
 * line is withdrawn and its readers answer with libc. A success clears
 * failing_since_ns. */
void lines_cpu_failed(uint32_t cpu, uint64_t now);

/* Counts slope among the rates the kernel's clock ran at lately (now). */
void lines_note_slope(uint64_t slope, uint64_t now);
/* Notes the rate c's last update learned: a line continued, or one
 * restarted at a rate measured across a lapse (relearned). */
void lines_note_rate(const struct lines_cpu *c, uint64_t now, bool relearned);
/* How far the kernel's rate may move within a window, in parts per
 * million, never less than WATCH_RATE_FLOOR_PPM. */
uint64_t lines_rate_ppm(void);
/* The kernel's clock minus c's line at tsc as c's last sample predicts it
 * at kernel_mult (0: c's own rate), and how fast that moves (ppb). */
int64_t lines_predicted_error(const struct lines_cpu *c, uint64_t tsc, uint64_t kernel_mult,
			      int64_t *drift_ppb);
/* The window every answering line may have from tsc (now_ns): after a
 * round (looked NULL) from each line's own sample; after a look at the
 * line of the CPU looked, from that look's deviation_ns. 0: none. */
uint64_t lines_window(uint64_t tsc, uint64_t now_ns, const struct lines_cpu *looked,
		      int64_t deviation_ns);
/* Whether the lines went past their validity since they were last
 * renewed (readers answer with libc). */
bool lines_lapsed(void);
/* Ends the validity granted to the old lines soon, before a round
 * publishes new ones (mult converts to ticks). */
void lines_shorten_validity(uint64_t mult);
/* After the lines lapsed: every answering line is withdrawn, to restart
 * at its next sample. True when they had lapsed. */
bool lines_relaunch_if_lapsed(void);
/* Withdraws every line with no bit in renewed (a round could not sample
 * it): its readers answer with libc until a sample restarts it. */
void lines_withdraw_unsampled(const unsigned long *renewed);
/* A CPU the thread could pin to: visited by the rounds from now on. */
void lines_cpu_allow(uint32_t cpu);
/* A CPU no longer visited: its line withdrawn, its calibration reset. */
void lines_cpu_leaves(uint32_t cpu);
/* Every CPU that had a line and has no bit in visit leaves. */
void lines_leave_others(const unsigned long *visit);
/* Trusts the lines for window_ns from tsc on (mult converts), after
 * publishing a moved offset (offsets.h); lapsed lines only where restarted. */
void lines_trust(uint64_t tsc, uint64_t mult, uint64_t window_ns, bool restarted);

/* How many CPUs had a line after the last round (set by it). */
void lines_set_published(unsigned count);
unsigned lines_published(void);
/* When (monotonic ns) the validity last granted ends. */
uint64_t lines_valid_until_ns(void);

/* Notes a visit to cpu that ended at now: free (the thread ran there
 * within PLACEMENT_VISIT_MAX_NS, and no reader moved it) or not. A visit
 * that was not free makes the rounds skip the CPU (LINES_UNREACHABLE_*);
 * returns the skip's length then, 0 after a free visit. */
uint64_t lines_cpu_note_visit(uint32_t cpu, bool was_free, uint64_t now);
/* Whether a visit waited (lines_cpu_note_visit) within LINES_UNREACHABLE_FORGET_NS
 * of now: a real-time thread took a CPU lately. Any thread may ask. */
bool lines_visits_waited_lately(uint64_t now);
/* Whether cpu's line of kind is one its readers left: it restarts on its
 * next sample (lines_cpu_update's left, asked before either line moves). */
bool lines_cpu_left(uint32_t cpu, enum clock_lines kind);
/* Moves cpu's line of kind on to its sample, drawn with the machine's
 * slope for that kind (shared_mult) toward next_interval_ns, from where its
 * readers are now, and publishes it; restart (a discontinuity) or left
 * (lines_cpu_left): steps it onto the sample. False when it was not
 * renewed (the sample rejected; a raw line without a line yet, withdrawn). */
bool lines_cpu_update(uint32_t cpu, enum clock_lines kind, const struct calib_sample *sample,
		      uint64_t next_interval_ns, uint64_t shared_mult, bool restart, bool left);
/* Starts every visited CPU's calibrations over (both kinds of line), in a
 * fork child of a round that may have left them half-written. */
void lines_restart_calibrations(void);
/* Notes the NUMA node cpu's last sandwich was taken on. */
void lines_cpu_set_node(uint32_t cpu, uint32_t node);
/* Notes what a look found on cpu's line: the kernel's clock minus the line
 * (error_ns) at mono_ns, which the next look compares with. */
void lines_cpu_note_look(uint32_t cpu, int64_t error_ns, uint64_t mono_ns);
/* A round's visit to cpu judged its sample against the round's narrowest
 * (agrees: calib_sample_agrees); its count of carried rounds starts over. */
void lines_cpu_note_agreement(uint32_t cpu, bool agrees);
/* A round carried cpu's line; returns how many rounds in a row it was. */
unsigned lines_cpu_note_carried(uint32_t cpu);
/* A look found cpu's line off: the next round visits it, not carry it. */
void lines_cpu_found_off(uint32_t cpu);
/* Takes cpu's CLOCK_MONOTONIC_RAW line from readers (raw_lines.h). */
void lines_raw_withdraw(uint32_t cpu);

#endif
