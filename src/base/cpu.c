/* What the processor offers, checked at run time: the build machine is not
 * the machine that runs the program. */
#include "config.h"

#include "cpu.h"

#include <cpuid.h>
#include <fcntl.h>
#include <sched.h>
#include <stddef.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "raw_syscall.h"
#include "start_data.h"

#ifdef HAVE_SYS_RSEQ_H
#include <sys/rseq.h>
#endif

long cpu_rseq_cpu_id_offset START_DATA;
uint32_t cpu_hidden_hwcaps START_DATA;

const char *const cpu_hwcap_names[] = { "rdtscp", "rseq", "invariant_tsc", "lfence_serializing",
					NULL };

/* Copies the 12-byte vendor string and the 48-byte brand string. */
static void cpu_read_names(struct cpu_facts *facts)
{
	unsigned int a, b, c, d;

	memset(facts->vendor, 0, sizeof facts->vendor);
	memset(facts->brand, 0, sizeof facts->brand);
	if (__get_cpuid(0, &a, &b, &c, &d)) {
		memcpy(facts->vendor, &b, 4);
		memcpy(facts->vendor + 4, &d, 4);
		memcpy(facts->vendor + 8, &c, 4);
	}
	if (__get_cpuid_max(0x80000000u, NULL) >= 0x80000004u) {
		for (unsigned int leaf = 0; leaf < 3; leaf++) {
			unsigned int regs[4];
			__get_cpuid(0x80000002u + leaf, &regs[0], &regs[1], &regs[2], &regs[3]);
			memcpy(facts->brand + 16 * leaf, regs, 16);
		}
	}
}

void cpu_probe_instructions(struct cpu_facts *facts)
{
	unsigned int a, b, c, d;
	unsigned int max_extended = __get_cpuid_max(0x80000000u, NULL);

	memset(facts, 0, sizeof *facts);
	cpu_read_names(facts);
	facts->has_avx = false;
	facts->has_cmpxchg16b = false;
	if (__get_cpuid(1, &a, &b, &c, &d)) {
		facts->has_cmpxchg16b = (c >> 13) & 1;
		facts->has_avx = (c >> 28) & 1;
	}
	/* Any vendor: AMD and Intel both set the invariant-TSC bit here. */
	facts->invariant_tsc = false;
	if (max_extended >= 0x80000007u && __get_cpuid(0x80000007u, &a, &b, &c, &d))
		facts->invariant_tsc = (d >> 8) & 1;
	facts->has_rdtscp = false;
	if (max_extended >= 0x80000001u && __get_cpuid(0x80000001u, &a, &b, &c, &d))
		facts->has_rdtscp = (d >> 27) & 1;
	/* Intel documents lfence as waiting for every earlier instruction on
	 * all its CPUs. On AMD it does where CPUID 0x80000021 EAX bit 2 says
	 * so (Zen 3 on); older AMD CPUs need a bit in an MSR that only the
	 * kernel can read, so they count as not serializing. */
	if (strcmp(facts->vendor, "GenuineIntel") == 0)
		facts->lfence_serializing = true;
	else if ((strcmp(facts->vendor, "AuthenticAMD") == 0 ||
		  strcmp(facts->vendor, "HygonGenuine") == 0) &&
		 max_extended >= 0x80000021u && __get_cpuid(0x80000021u, &a, &b, &c, &d))
		facts->lfence_serializing = (a >> 2) & 1;
	facts->rseq_registered = cpu_rseq_init();
	facts->hidden = __atomic_load_n(&cpu_hidden_hwcaps, __ATOMIC_RELAXED);
	if (facts->hidden & CPU_HWCAP_RDTSCP)
		facts->has_rdtscp = false;
	if (facts->hidden & CPU_HWCAP_INVARIANT_TSC)
		facts->invariant_tsc = false;
	if (facts->hidden & CPU_HWCAP_LFENCE_SERIALIZING)
		facts->lfence_serializing = false;
}

/* Reads a small sysfs file into buf without stdio (no allocation), by the
 * system calls themselves: in the constructor of every process, libc's
 * wrappers would each cost a symbol lookup. */
static bool cpu_read_small_file(const char *path, char *buf, size_t size)
{
	int fd = (int)raw_syscall(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_CLOEXEC, 0, 0, 0);
	ssize_t n;

	if (fd < 0)
		return false;
	n = (ssize_t)raw_syscall(SYS_read, fd, (long)buf, (long)(size - 1), 0, 0, 0);
	raw_syscall(SYS_close, fd, 0, 0, 0, 0, 0);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return true;
}

/* True when word appears as a whole space-separated word of list. */
static bool cpu_list_has_word(const char *list, const char *word)
{
	size_t len = strlen(word);

	for (const char *p = list; (p = strstr(p, word)) != NULL; p += len) {
		bool starts = p == list || p[-1] == ' ';
		bool ends = p[len] == '\0' || p[len] == ' ' || p[len] == '\n';
		if (starts && ends)
			return true;
	}
	return false;
}

enum cpu_clocksource_kind cpu_classify_clocksource(const char *name)
{
	/* Clocksources that are the TSC, scaled by the hypervisor for the
	 * guest (Linux: arch/x86/kernel/kvmclock.c, arch/x86/xen/time.c,
	 * drivers/clocksource/hyperv_timer.c). The calibration against
	 * CLOCK_MONOTONIC proves each CPU's line in any case. */
	static const char *const derived[] = { "kvm-clock", "xen", "hyperv_clocksource_tsc_page",
					       NULL };

	if (strcmp(name, "tsc") == 0 || strcmp(name, "tsc-early") == 0)
		return CPU_CLOCKSOURCE_TSC;
	for (const char *const *d = derived; *d != NULL; d++)
		if (strcmp(name, *d) == 0)
			return CPU_CLOCKSOURCE_TSC_DERIVED;
	if (strcmp(name, "unknown") == 0 || name[0] == '\0')
		return CPU_CLOCKSOURCE_UNKNOWN;
	return CPU_CLOCKSOURCE_OTHER;
}

#define CPU_CLOCKSOURCE_DIR "/sys/devices/system/clocksource/clocksource0/"

void cpu_probe_clocksource(struct cpu_facts *facts)
{
	if (!cpu_read_small_file(CPU_CLOCKSOURCE_DIR "current_clocksource", facts->clocksource,
				 sizeof facts->clocksource))
		strcpy(facts->clocksource, "unknown");
	facts->clocksource_kind = cpu_classify_clocksource(facts->clocksource);
}

void cpu_probe_kernel(struct cpu_facts *facts)
{
	char available[256];

	cpu_probe_clocksource(facts);
	/* The kernel drops "tsc" from this list when its watchdog finds the TSC
	 * unstable; a kernel booted with tsc=unstable never lists it. If the
	 * file cannot be read, this says nothing. */
	if (cpu_read_small_file(CPU_CLOCKSOURCE_DIR "available_clocksource", available,
				sizeof available))
		facts->kernel_offers_tsc = cpu_list_has_word(available, "tsc");
	else
		facts->kernel_offers_tsc = false;
}

const char *cpu_unusable_reason(const struct cpu_facts *facts, bool dropped_tsc)
{
	if (!facts->invariant_tsc)
		return (facts->hidden & CPU_HWCAP_INVARIANT_TSC)
			   ? "FASTTIME_HWCAPS hides the invariant TSC"
			   : "the CPU has no invariant TSC";
	if (!facts->has_cmpxchg16b)
		return "the CPU has no cmpxchg16b instruction";
	if (!facts->has_avx)
		return "the CPU has no AVX, so 16-byte loads are not atomic";
	if (dropped_tsc)
		return "the kernel's watchdog dropped the TSC as a clocksource";
	return NULL;
}

const char *cpu_choose_reading(const struct cpu_facts *facts, bool relaxed,
			       struct cpu_reading *reading)
{
	enum cpu_id_source id = facts->rseq_registered ? CPU_ID_RSEQ : CPU_ID_GETCPU;

	if (relaxed) {
		reading->counter = CPU_READ_RDTSC;
		reading->cpu_id = id;
		return NULL;
	}
	if (facts->has_rdtscp) {
		reading->counter = CPU_READ_RDTSCP;
		reading->cpu_id = CPU_ID_TSC_AUX;
		return NULL;
	}
	if (facts->lfence_serializing) {
		reading->counter = CPU_READ_LFENCE_RDTSC;
		reading->cpu_id = id;
		return NULL;
	}
	return "ordered reads need rdtscp, or an lfence that waits for earlier instructions; "
	       "this CPU has neither";
}

const char *cpu_counter_read_name(enum cpu_counter_read counter)
{
	switch (counter) {
	case CPU_READ_RDTSCP: return "rdtscp";
	case CPU_READ_LFENCE_RDTSC: return "lfence; rdtsc";
	case CPU_READ_RDTSC: return "rdtsc";
	}
	return "?";
}

const char *cpu_id_source_name(enum cpu_id_source source)
{
	switch (source) {
	case CPU_ID_TSC_AUX: return "TSC_AUX, from the same rdtscp";
	case CPU_ID_RSEQ: return "glibc's rseq area, before and after the counter";
	case CPU_ID_GETCPU: return "getcpu (vDSO), before and after the counter";
	}
	return "?";
}

bool cpu_parse_list(const char *text, unsigned long *mask, unsigned words)
{
	const unsigned bits = 8 * sizeof(unsigned long);
	const char *p = text;

	memset(mask, 0, words * sizeof *mask);
	while (*p != '\0' && *p != '\n') {
		unsigned long first = 0, last;

		if (*p < '0' || *p > '9')
			return false;
		while (*p >= '0' && *p <= '9' && first <= words * bits)
			first = first * 10 + (unsigned long)(*p++ - '0');
		last = first;
		if (*p == '-') {
			p++;
			if (*p < '0' || *p > '9')
				return false;
			last = 0;
			while (*p >= '0' && *p <= '9' && last <= words * bits)
				last = last * 10 + (unsigned long)(*p++ - '0');
		}
		if (last < first || last >= words * bits)
			return false;
		for (unsigned long cpu = first; cpu <= last; cpu++)
			cpu_mask_set(mask, (uint32_t)cpu);
		if (*p == ',')
			p++;
		else if (*p != '\0' && *p != '\n')
			return false;
	}
	return true;
}

bool cpu_online_mask(unsigned long *mask, unsigned words)
{
	char list[1024];

	return cpu_read_small_file("/sys/devices/system/cpu/online", list, sizeof list) &&
	       cpu_parse_list(list, mask, words);
}

uint32_t cpu_current_id(enum cpu_id_source source)
{
	int cpu;

	if (source == CPU_ID_RSEQ)
		return cpu_rseq_current();
	cpu = sched_getcpu();
	return cpu < 0 ? UINT32_MAX : (uint32_t)cpu;
}

struct cpu_stamp cpu_read_stamp(struct cpu_reading reading)
{
	struct cpu_stamp stamp = { .tsc = 0, .cpu = UINT32_MAX, .node = 0 };
	uint32_t aux, before;

	if (reading.cpu_id == CPU_ID_TSC_AUX) {
		stamp.tsc = cpu_rdtscp(&aux);
		stamp.cpu = cpu_from_tsc_aux(aux);
		stamp.node = cpu_node_from_tsc_aux(aux);
		return stamp;
	}
	before = cpu_current_id(reading.cpu_id);
	stamp.tsc = reading.counter == CPU_READ_RDTSC ? cpu_rdtsc() : cpu_rdtsc_fenced();
	if (cpu_current_id(reading.cpu_id) == before)
		stamp.cpu = before;
	return stamp;
}

bool cpu_rseq_init(void)
{
#if HAVE_DECL___RSEQ_OFFSET && HAVE_DECL___RSEQ_SIZE
	long offset;

	if (__rseq_size == 0 ||
	    (__atomic_load_n(&cpu_hidden_hwcaps, __ATOMIC_RELAXED) & CPU_HWCAP_RSEQ))
		return false;
	offset = (long)__rseq_offset + (long)offsetof(struct rseq, cpu_id);
	/* Written once, before any reader: later probes (the refresh thread's)
	 * find it set and leave it alone. */
	if (__atomic_load_n(&cpu_rseq_cpu_id_offset, __ATOMIC_RELAXED) != offset)
		__atomic_store_n(&cpu_rseq_cpu_id_offset, offset, __ATOMIC_RELAXED);
	/* glibc may have tried and failed (seccomp, old kernel): then the field
	 * holds a negative code, never a CPU id. */
	return (int32_t)cpu_rseq_current() >= 0;
#else
	return false;
#endif
}
