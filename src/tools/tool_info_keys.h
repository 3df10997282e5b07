/* fasttime --info --format=keys: the report as one key=value line per fact,
 * for programs (scripts/fasttime-compare reads it). An interface: keys keep
 * their names and meanings; format_version goes up if one ever changes.
 *
 * Keys are lower case, dotted, without spaces; no key is also the prefix
 * of another (the lines map onto nested objects). A key whose fact is
 * measured names its unit (_ns, _ms, _s, ghz); the value has no unit. The
 * value is the rest of the line: a control character in it is written as
 * '?'. Every key below is printed, once, in this order; an empty value
 * means the fact is not known here (the text form's "-").
 *
 *   format_version            integer: 1
 *   version                   fasttime's version
 *   library.path              text: the library fasttime would preload
 *   library.source            build_tree, fasttime_library or installed
 *   library.problem           text: why it cannot be preloaded (empty if it can)
 *   processor.vendor          text
 *   processor.brand           text
 *   processor.invariant_tsc   yes or no, as the library sees it (FASTTIME_HWCAPS
 *   processor.rdtscp            applied)
 *   processor.lfence_serializing
 *   processor.avx
 *   processor.cmpxchg16b
 *   rseq.registered           yes or no: glibc registered rseq
 *   hwcaps.hidden             list: the names FASTTIME_HWCAPS hides
 *   clocksource               text: the kernel's current clocksource
 *   clocksource_kind          tsc, tsc_derived, other or unknown
 *   kernel_offers_tsc         yes or no
 *   mode                      ordered or relaxed
 *   reading.counter           rdtscp, lfence_rdtsc or rdtsc
 *   reading.cpu_id            tsc_aux, rseq or getcpu
 *   reading.problem           text: why the mode cannot read here
 *   interval_ms               integer
 *   disabled                  yes or no: FASTTIME_DISABLE
 *   fast_path                 yes or no
 *   fast_path_problem         text: why not
 *   cpus                      list of integers: the CPUs below
 *   reference_cpu             integer: the CPU vs_reference_ns compares with
 *   cpu.N.node                integer
 *   cpu.N.ghz                 number: the counter's rate
 *   cpu.N.offset_ns           integer: the line at counter 0
 *   cpu.N.vs_reference_ns     integer: this line minus reference_cpu's, now
 *   cpu.N.refreshed_ms_ago    number
 *   cpu.N.error_ns            integer: found at the last calibration
 *   cpu.N.sandwich_ns         integer: the narrowest sandwich
 *   cpu.N.status              fast, no_line or dropped
 *   calibration.chosen        yes or no: the entry points were measured
 *   calibration.chosen_after_round    integer
 *   calibration.chosen_after_s        number: after calibration started
 *   calibration.measured_on_cpu       integer
 *   calibration.cpus_with_line        integer
 *   calibration.cpus_usable           integer
 *   calibration.rejected              integer: measurements thrown away
 *   api.API.libc_ns           number: libc's cost in that measurement
 *   api.API.fasttime_ns       number: the counter's
 *   api.API.answered_by       fasttime or libc, in mode, FASTTIME_DISABLE aside
 *   api.API.cost_libc_ns      number: the costs measured just now, best of
 *   api.API.cost_ordered_ns     costs.rounds
 *   api.API.cost_relaxed_ns
 *   costs.rounds              integer
 *   costs.calls_fell_back     integer: calls the counter could not answer
 *
 * N: each CPU of cpus. API: clock_gettime_monotonic, clock_gettime_realtime,
 * gettimeofday, time, timespec_get_utc (the function, and the clock without
 * its CLOCK_ or TIME_ prefix). A list is comma-separated, without spaces. */
#ifndef FASTTIME_TOOL_INFO_KEYS_H
#define FASTTIME_TOOL_INFO_KEYS_H

#include "tool_info_report.h"

/* Prints the report as key=value lines on standard output. */
void tool_info_keys_print(const struct tool_info_report *report);

#endif
