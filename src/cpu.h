/* What the processor offers: CPUID facts, TSC reads, TSC_AUX decoding and
 * the CPU id glibc keeps in the rseq area. */
#ifndef FASTTIME_CPU_H
#define FASTTIME_CPU_H

#include <stdbool.h>
#include <stdint.h>

/* Linux writes (node << 12 | cpu) into TSC_AUX; 12 bits of CPU id. */
#define CPU_AUX_CPU_MASK 0xfffu
#define CPU_MAX_CPUS	 4096u

/* Facts about this processor and kernel, gathered once at run time. */
struct cpu_facts {
	bool invariant_tsc;   /* CPUID 0x80000007 EDX bit 8 */
	bool has_rdtscp;      /* CPUID 0x80000001 EDX bit 27 */
	bool has_avx;	      /* 16-byte aligned loads are atomic */
	bool has_cmpxchg16b;  /* CPUID 1 ECX bit 13 */
	bool kernel_probed;   /* cpu_probe_kernel has run */
	bool kernel_uses_tsc; /* "tsc" is among the available clocksources */
	bool rseq_registered; /* glibc registered rseq for this thread */
	char vendor[13];
	char brand[49];
	char clocksource[64]; /* the current clocksource, for diagnostics */
};

/* Reads CPUID; touches no file. Clears the kernel facts. */
void cpu_probe_instructions(struct cpu_facts *facts);
/* Reads the kernel's clocksource files; opens and closes two files. */
void cpu_probe_kernel(struct cpu_facts *facts);
/* Decides whether the fast path may run; NULL when it may, else why not.
 * Before cpu_probe_kernel, only the processor's facts are judged. */
const char *cpu_unusable_reason(const struct cpu_facts *facts);

static inline uint64_t cpu_rdtsc(void)
{
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
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

#endif
