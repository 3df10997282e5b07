/* What the processor offers: CPUID facts, TSC reads, TSC_AUX decoding, the
 * CPU id glibc keeps in the rseq area, and how the counter and the CPU id
 * are read on this machine. */
#ifndef FASTTIME_CPU_H
#define FASTTIME_CPU_H

#include <stdbool.h>
#include <stdint.h>

/* Linux writes (node << 12 | cpu) into TSC_AUX; 12 bits of CPU id. */
#define CPU_AUX_CPU_MASK 0xfffu
#define CPU_MAX_CPUS	 4096u

/* Features FASTTIME_HWCAPS can make the library treat as absent: for
 * tests, for comparisons, and for a hypervisor that advertises what it
 * should not. */
enum cpu_hwcap {
	CPU_HWCAP_RDTSCP = 1u << 0,
	CPU_HWCAP_RSEQ = 1u << 1,
	CPU_HWCAP_INVARIANT_TSC = 1u << 2,
	CPU_HWCAP_LFENCE_SERIALIZING = 1u << 3,
};

/* The FASTTIME_HWCAPS names of the features above, in bit order; NULL at
 * the end. */
extern const char *const cpu_hwcap_names[];

/* The features treated as absent; set before the first probe. */
extern __attribute__((visibility("hidden"))) uint32_t cpu_hidden_hwcaps;

/* What the kernel's current clocksource says about the TSC. */
enum cpu_clocksource_kind {
	CPU_CLOCKSOURCE_UNKNOWN,     /* not read yet, or unreadable */
	CPU_CLOCKSOURCE_TSC,	     /* the kernel reads the TSC itself */
	CPU_CLOCKSOURCE_TSC_DERIVED, /* the hypervisor's scaling of the TSC */
	CPU_CLOCKSOURCE_OTHER,	     /* another counter: hpet, acpi_pm, ... */
};

/* Facts about this processor and kernel, gathered once at run time. */
struct cpu_facts {
	bool invariant_tsc;	 /* CPUID 0x80000007 EDX bit 8 */
	bool has_rdtscp;	 /* CPUID 0x80000001 EDX bit 27 */
	bool lfence_serializing; /* lfence waits for every earlier instruction */
	bool has_avx;		 /* 16-byte aligned loads are atomic */
	bool has_cmpxchg16b;	 /* CPUID 1 ECX bit 13 */
	bool kernel_offers_tsc;	 /* "tsc" is among the available clocksources */
	bool rseq_registered;	 /* glibc registered rseq for this thread */
	enum cpu_clocksource_kind clocksource_kind;
	uint32_t hidden; /* cpu_hidden_hwcaps when probed */
	char vendor[13];
	char brand[49];
	char clocksource[64]; /* the current clocksource, for diagnostics */
};

/* How a reading is taken: the counter instruction and the source of the
 * CPU id that chooses the line. */
enum cpu_counter_read {
	CPU_READ_RDTSCP,       /* rdtscp: waits for earlier instructions */
	CPU_READ_LFENCE_RDTSC, /* lfence; rdtsc: the same, where lfence serializes */
	CPU_READ_RDTSC,	       /* rdtsc alone: relaxed mode */
};
enum cpu_id_source {
	CPU_ID_TSC_AUX, /* in the same rdtscp */
	CPU_ID_RSEQ,	/* glibc's rseq area, before and after the counter */
	CPU_ID_GETCPU,	/* sched_getcpu (the vDSO), before and after */
};
struct cpu_reading {
	enum cpu_counter_read counter;
	enum cpu_id_source cpu_id;
};

/* Reads CPUID; touches no file. Clears the kernel facts. */
void cpu_probe_instructions(struct cpu_facts *facts);
/* Reads the kernel's current clocksource; opens and closes one file. The
 * library does this once, in its constructor: while the program runs, an
 * open of ours could take the descriptor number the program expects next. */
void cpu_probe_clocksource(struct cpu_facts *facts);
/* The same, and whether the kernel offers the TSC at all (the available
 * clocksources); opens and closes two files. For the tools. */
void cpu_probe_kernel(struct cpu_facts *facts);
/* Decides whether the fast path may run; NULL when it may, else why not.
 * The clocksource is evidence, not the gate: only a kernel that dropped the
 * TSC after offering it (dropped_tsc) stops it here; a clocksource that says
 * nothing about the TSC is judged by the refresh thread's own checks. */
const char *cpu_unusable_reason(const struct cpu_facts *facts, bool dropped_tsc);
/* How readings are taken in the given mode; NULL when they can be, else
 * why not (ordered mode without rdtscp or a serializing lfence). */
const char *cpu_choose_reading(const struct cpu_facts *facts, bool relaxed,
			       struct cpu_reading *reading);
/* The reading in words, for --info and debug lines. */
const char *cpu_counter_read_name(enum cpu_counter_read counter);
const char *cpu_id_source_name(enum cpu_id_source source);
/* The kind of a clocksource, by its name in sysfs. */
enum cpu_clocksource_kind cpu_classify_clocksource(const char *name);

/* Parses a kernel CPU list ("0-3,8,10-11") into a bit mask of words words;
 * false when it is malformed (mask then undefined). */
bool cpu_parse_list(const char *text, unsigned long *mask, unsigned words);
/* The online CPUs, from sysfs; false when the file cannot be read. For the
 * tools: the library's thread opens no file. */
bool cpu_online_mask(unsigned long *mask, unsigned words);

/* Whether cpu's bit is set in a mask of unsigned longs (a cpu_set_t's
 * layout, as the kernel's CPU lists are parsed into). */
static inline bool cpu_mask_has(const unsigned long *mask, uint32_t cpu)
{
	const unsigned bits = 8 * sizeof(unsigned long);

	return (mask[cpu / bits] >> (cpu % bits)) & 1;
}

static inline void cpu_mask_set(unsigned long *mask, uint32_t cpu)
{
	const unsigned bits = 8 * sizeof(unsigned long);

	mask[cpu / bits] |= 1ul << (cpu % bits);
}

static inline void cpu_mask_clear(unsigned long *mask, uint32_t cpu)
{
	const unsigned bits = 8 * sizeof(unsigned long);

	mask[cpu / bits] &= ~(1ul << (cpu % bits));
}

/* Whether two masks of words words hold the same CPUs. */
static inline bool cpu_mask_equal(const unsigned long *a, const unsigned long *b, unsigned words)
{
	for (unsigned i = 0; i < words; i++)
		if (a[i] != b[i])
			return false;
	return true;
}

/* Keeps in into only the CPUs also in other; false when none is left
 * (into then holds nothing). */
static inline bool cpu_mask_and(unsigned long *into, const unsigned long *other, unsigned words)
{
	unsigned long any = 0;

	for (unsigned i = 0; i < words; i++) {
		into[i] &= other[i];
		any |= into[i];
	}
	return any != 0;
}

/* The first CPU at or after from whose bit is set in a mask of words
 * words; words * the bits of a word when there is none. Whole empty words
 * are skipped at once: masks are mostly empty on large machines. */
static inline uint32_t cpu_mask_next(const unsigned long *mask, unsigned words, uint32_t from)
{
	const unsigned bits = 8 * sizeof(unsigned long);

	for (uint32_t cpu = from; cpu < words * bits; cpu++) {
		if (mask[cpu / bits] == 0) {
			cpu |= bits - 1;
			continue;
		}
		if (cpu_mask_has(mask, cpu))
			return cpu;
	}
	return words * bits;
}

static inline uint64_t cpu_rdtsc(void)
{
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

/* lfence keeps rdtsc from running before earlier instructions have
 * finished, as rdtscp does; only where lfence serializes dispatch (every
 * Intel CPU; AMD where CPUID says so). */
static inline uint64_t cpu_rdtsc_fenced(void)
{
	uint32_t lo, hi;
	__asm__ volatile("lfence\n\trdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

/* rdtscp waits for earlier instructions, as the kernel's own clock read does,
 * and returns TSC_AUX alongside the counter. */
static inline uint64_t cpu_rdtscp(uint32_t *aux)
{
	uint32_t lo, hi;
	__asm__ volatile("rdtscp" : "=a"(lo), "=d"(hi), "=c"(*aux));
	return (uint64_t)hi << 32 | lo;
}

static inline uint32_t cpu_from_tsc_aux(uint32_t aux)
{
	return aux & CPU_AUX_CPU_MASK;
}

static inline uint32_t cpu_node_from_tsc_aux(uint32_t aux)
{
	return aux >> 12;
}

/* Offset of the rseq cpu_id field from the thread pointer, or 0 when glibc
 * has not registered rseq (then readers use rdtscp). Set by cpu_rseq_init. */
extern __attribute__((visibility("hidden"))) long cpu_rseq_cpu_id_offset;

/* Looks up glibc's rseq area; returns whether it is registered. */
bool cpu_rseq_init(void);

/* The CPU this thread runs on, as the kernel last wrote it into the rseq
 * area at offset (cpu_rseq_cpu_id_offset) from the thread pointer. Each call
 * is a fresh load, kept in order with the TSC reads around it. A negative
 * value in the area (unregistered) reads as a huge id. */
static inline uint32_t cpu_rseq_read(long offset)
{
	uint32_t cpu;
	__asm__ volatile("movl %%fs:(%1), %0" : "=r"(cpu) : "r"(offset) : "memory");
	return cpu;
}

static inline uint32_t cpu_rseq_current(void)
{
	return cpu_rseq_read(cpu_rseq_cpu_id_offset);
}

/* The CPU this thread runs on, from the given source (never TSC_AUX: that
 * comes with rdtscp); CPU_MAX_CPUS or more when it cannot be told. */
uint32_t cpu_current_id(enum cpu_id_source source);

/* A counter reading taken on one CPU, checked: the CPU id is read with the
 * counter (rdtscp) or before and after it, and must not change. */
struct cpu_stamp {
	uint64_t tsc;
	uint32_t cpu;  /* CPU_MAX_CPUS or more: moved, or not known */
	uint32_t node; /* from TSC_AUX where rdtscp is used, else 0 */
};
struct cpu_stamp cpu_read_stamp(struct cpu_reading reading);

#endif
