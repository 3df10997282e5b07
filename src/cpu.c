/* What the processor offers, checked at run time: the build machine is not
 * the machine that runs the program. */
#include "config.h"

#include "cpu.h"

#include <cpuid.h>
#include <fcntl.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#ifdef HAVE_SYS_RSEQ_H
#include <sys/rseq.h>
#endif

long cpu_rseq_cpu_id_offset;

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
	facts->rseq_registered = cpu_rseq_init();
}

/* Reads a small sysfs file into buf without stdio (no allocation). */
static bool cpu_read_small_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return false;
	n = read(fd, buf, size - 1);
	close(fd);
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

void cpu_probe_kernel(struct cpu_facts *facts)
{
	static const char dir[] = "/sys/devices/system/clocksource/clocksource0/";
	char path[128];
	char available[256];

	facts->kernel_probed = true;
	strcpy(path, dir);
	strcat(path, "current_clocksource");
	if (!cpu_read_small_file(path, facts->clocksource, sizeof facts->clocksource))
		strcpy(facts->clocksource, "unknown");

	strcpy(path, dir);
	strcat(path, "available_clocksource");
	/* The kernel drops "tsc" from this list when its watchdog finds the TSC
	 * unstable. If the file cannot be read, trust the CPUID bit alone. */
	if (cpu_read_small_file(path, available, sizeof available))
		facts->kernel_uses_tsc = cpu_list_has_word(available, "tsc");
	else
		facts->kernel_uses_tsc = true;
}

const char *cpu_unusable_reason(const struct cpu_facts *facts)
{
	if (!facts->invariant_tsc)
		return "the CPU has no invariant TSC";
	if (!facts->has_rdtscp)
		return "the CPU has no rdtscp instruction";
	if (!facts->has_cmpxchg16b)
		return "the CPU has no cmpxchg16b instruction";
	if (!facts->has_avx)
		return "the CPU has no AVX, so 16-byte loads are not atomic";
	if (facts->kernel_probed && !facts->kernel_uses_tsc)
		return "the kernel has abandoned the TSC as a clocksource";
	return NULL;
}

bool cpu_rseq_init(void)
{
#if HAVE_DECL___RSEQ_OFFSET && HAVE_DECL___RSEQ_SIZE
	long offset;

	if (__rseq_size == 0)
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
