/* A seccomp filter that kills thread creation must not get the process
 * killed: the library never creates its thread under a filter the program
 * installed, and stops a running one before the install. Each case runs
 * in a child, whose end the parent judges:
 *   prctl     the child installs a filter that kills clone and clone3 with
 *             prctl(PR_SET_SECCOMP), then reads the clock
 *   syscall   the same with syscall(SYS_seccomp, ...), as libseccomp does
 *   raw       the same with the system call instruction itself, which no
 *             interposer sees
 *   sshd      the parent reads the clock first (its thread runs), its fork
 *             child installs the filter with prctl, then reads
 *   tsync     the child's own thread runs when it installs, with
 *             SECCOMP_FILTER_FLAG_TSYNC, a filter that also kills
 *             sched_setaffinity (which the thread calls each round), then
 *             reads and sleeps past several refresh intervals
 * Natively, reading the clock makes no system call: each child lives.
 *   passthrough  no filter: prctl and syscall() answer as libc's do (six
 *             arguments, the last on the stack; return values and errno),
 *             and seccomp calls that install nothing leave the thread
 *   exec PROGRAM ARGS...  runs PROGRAM under a filter that kills pidfd_open
 *             (served.test: a served start under it lives, and is served)
 *   served    under FASTTIME_PAGE, before any time call, installs with
 *             prctl a filter that kills thread creation, then reads: the
 *             interposer looked for the page first, so the process is
 *             served under the filter (the page mapped, no thread); exits
 *             75 where it is not (the page was stale then: served.test)
 *   nomap samples|lines  runs this program again (nomap-child) under a
 *             filter set before its start that makes mmap refuse, with
 *             ENOMEM, a private anonymous mapping the size of the refresh
 *             thread's samples (its first mapping) or of its lines (its
 *             second): its time calls get libc's answers, errno as the
 *             program left it, and no thread starts; then under a filter
 *             that refuses another size, where the thread starts */
#include "config.h"

#include "calib.h"
#include "life.h"
#include "lines.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_clone3
#define SYS_clone3 435
#endif

enum sandbox_install { SANDBOX_PRCTL, SANDBOX_SYSCALL, SANDBOX_RAW };

/* A filter that kills the process at any of the system calls listed, and
 * allows everything else (and every other architecture's calls). */
static void sandbox_filter(const long *killed, unsigned n, struct sock_filter *code,
			   struct sock_fprog *prog)
{
	unsigned i = 0;

	code[i++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						 offsetof(struct seccomp_data, arch));
	code[i++] =
	    (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
	code[i++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	code[i++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						 offsetof(struct seccomp_data, nr));
	/* Each compare jumps to the kill at the end, past the compares left
	 * and the allow. */
	for (unsigned k = 0; k < n; k++)
		code[i++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
							 (unsigned)killed[k], (__u8)(n - k), 0);
	code[i++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	code[i++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	prog->len = (unsigned short)i;
	prog->filter = code;
}

static long sandbox_raw_seccomp(long op, long flags, const void *prog)
{
	long rc;

	__asm__ volatile("syscall"
			 : "=a"(rc)
			 : "0"((long)SYS_seccomp), "D"(op), "S"(flags), "d"(prog)
			 : "rcx", "r11", "memory");
	return rc;
}

/* Installs a filter killing clone, clone3 and, when also_affinity,
 * sched_setaffinity, the way asked; fails the child if it cannot. */
static void sandbox_install(enum sandbox_install how, bool tsync, bool also_affinity)
{
	static const long killed[] = { SYS_clone, SYS_clone3, SYS_sched_setaffinity };
	struct sock_filter code[16];
	struct sock_fprog prog;
	long rc;

	sandbox_filter(killed, also_affinity ? 3 : 2, code, &prog);
	/* Without CAP_SYS_ADMIN the kernel wants this first. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		life_fail("prctl(PR_SET_NO_NEW_PRIVS): %s", strerror(errno));
	switch (how) {
	case SANDBOX_PRCTL: rc = prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0); break;
	case SANDBOX_SYSCALL:
		rc = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
			     tsync ? SECCOMP_FILTER_FLAG_TSYNC : 0, &prog);
		break;
	default:
		rc = sandbox_raw_seccomp(SECCOMP_SET_MODE_FILTER, 0, &prog);
		if (rc < 0) {
			errno = (int)-rc;
			rc = -1;
		}
		break;
	}
	if (rc != 0)
		life_fail("installing the filter: %ld (%s)", rc, strerror(errno));
}

/* Runs program (a path, or a name looked up in PATH) with args under a
 * filter that kills pidfd_open, as a sandbox written before that call
 * would: a served start looks at its time namespace through /proc first
 * under any filter, and must live (served.test). */
static void sandbox_exec(char **args)
{
	static const long killed[] = { SYS_pidfd_open };
	struct sock_filter code[16];
	struct sock_fprog prog;
	long rc;

	if (args[0] == NULL)
		life_fail("exec: no program");
	sandbox_filter(killed, 1, code, &prog);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		life_fail("prctl(PR_SET_NO_NEW_PRIVS): %s", strerror(errno));
	rc = sandbox_raw_seccomp(SECCOMP_SET_MODE_FILTER, 0, &prog);
	if (rc != 0)
		life_fail("installing the filter: %s", strerror((int)-rc));
	execvp(args[0], args);
	life_fail("exec %s: %s", args[0], strerror(errno));
}

/* Reads both clocks through the preload for ms, against libc's. */
static void sandbox_read_for(unsigned ms)
{
	struct life_track mono = { 0 }, real = { 0 };

	life_sample_for(ms, &mono, &real);
	life_judge("monotonic", &mono);
	life_judge("realtime", &real);
}

/* The bytes the refresh thread's start maps (round_map): the round's
 * samples first, then the lines (lines_map). */
#define SANDBOX_SAMPLES_BYTES (CLOCK_LINES_COUNT * CPU_MAX_CPUS * sizeof(struct calib_sample))
#define SANDBOX_LINES_BYTES   (CPU_MAX_CPUS * sizeof(struct lines_cpu))

/* Runs this program again as nomap-child (refused: whether the filter
 * refuses a mapping of mapped bytes, or of a page more) under a filter
 * that makes mmap fail with ENOMEM for a private anonymous mapping of
 * that many bytes, and allows every other call; returns its status. */
static int sandbox_nomap_run(uint64_t mapped, bool refused)
{
	const uint64_t bytes = mapped + (refused ? 0 : 4096);
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 9),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mmap, 0, 7),
		/* The length's low and high words (little-endian). */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (__u32)bytes, 0, 5),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1]) + 4),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (__u32)(bytes >> 32), 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[3])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, MAP_PRIVATE | MAP_ANONYMOUS, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOMEM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof code / sizeof code[0], .filter = code };
	pid_t child = fork();

	if (child < 0)
		life_fail("fork: %s", strerror(errno));
	if (child == 0) {
		char *args[] = { (char *)"sandbox", (char *)"nomap-child",
				 (char *)(refused ? "refused" : "allowed"), NULL };

		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
			life_fail("prctl(PR_SET_NO_NEW_PRIVS): %s", strerror(errno));
		if (sandbox_raw_seccomp(SECCOMP_SET_MODE_FILTER, 0, &prog) != 0)
			life_fail("installing the filter");
		execv("/proc/self/exe", args);
		life_fail("exec /proc/self/exe: %s", strerror(errno));
	}
	return life_wait_child(child, 30);
}

/* nomap-child: the first time call starts no thread where the lines'
 * mapping is refused, keeps errno, and every call is answered by libc. */
static void sandbox_nomap_child(const char *refused)
{
	struct timespec ts;
	uint64_t before;
	int rc;

	if (strcmp(refused, "allowed") == 0) {
		life_require_fast();
		life_wait_refresh_thread();
		life_say("nomap: the thread starts under a filter that refuses another size");
		fflush(stdout);
		_exit(0);
	}
	errno = EILSEQ;
	rc = clock_gettime(CLOCK_MONOTONIC, &ts);
	if (rc != 0 || errno != EILSEQ)
		life_fail("nomap: the first clock_gettime gave %d, errno %s (libc: 0, errno kept)",
			  rc, strerror(errno));
	life_sleep_ms(100);
	if (life_threads_named("fasttime") != 0) {
		life_list_threads();
		life_fail("nomap: a fasttime thread runs although its mapping was refused");
	}
	before = life_fallthrough();
	for (int i = 0; i < 100; i++)
		clock_gettime(CLOCK_MONOTONIC, &ts);
	if (life_fallthrough() - before != 100)
		life_fail("nomap: %llu of 100 calls were passed to libc",
			  (unsigned long long)(life_fallthrough() - before));
	sandbox_read_for(100);
	if (life_threads_named("fasttime") != 0)
		life_fail("nomap: a fasttime thread started later");
	life_say("nomap: the mapping refused, no thread, libc answers, errno kept");
	fflush(stdout);
	_exit(0);
}

/* nomap: the refused mapping (which: samples or lines), then the control
 * with another size. */
static void sandbox_nomap(const char *which)
{
	uint64_t mapped = strcmp(which, "lines") == 0 ? SANDBOX_LINES_BYTES : SANDBOX_SAMPLES_BYTES;
	int status;

	life_say("nomap: the %s' mapping (%llu bytes) refused", which, (unsigned long long)mapped);
	status = sandbox_nomap_run(mapped, true);
	if (WIFEXITED(status) && WEXITSTATUS(status) == LIFE_EXIT_SKIP)
		exit(LIFE_EXIT_SKIP);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		life_fail("nomap: the child under the refusing filter ended with status %d",
			  status);
	status = sandbox_nomap_run(mapped, false);
	if (WIFEXITED(status) && WEXITSTATUS(status) == LIFE_EXIT_SKIP)
		exit(LIFE_EXIT_SKIP);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		life_fail("nomap: the child under the other filter ended with status %d", status);
	life_say("nomap: PASS");
	exit(0);
}

static void sandbox_child(const char *mode)
{
	if (strcmp(mode, "prctl") == 0 || strcmp(mode, "sshd") == 0) {
		sandbox_install(SANDBOX_PRCTL, false, false);
		sandbox_read_for(300);
	} else if (strcmp(mode, "syscall") == 0) {
		sandbox_install(SANDBOX_SYSCALL, false, false);
		sandbox_read_for(300);
	} else if (strcmp(mode, "raw") == 0) {
		sandbox_install(SANDBOX_RAW, false, false);
		sandbox_read_for(300);
	} else if (strcmp(mode, "tsync") == 0) {
		/* Our thread must run when the filter comes. */
		life_require_fast();
		if (life_threads_named("fasttime") != 1)
			life_fail("no fasttime thread before the install");
		sandbox_install(SANDBOX_SYSCALL, true, true);
		sandbox_read_for(100);
		life_sleep_ms((unsigned)(8 * life_interval_ns() / LIFE_NS_PER_MS));
		sandbox_read_for(100);
	} else {
		life_fail("unknown case %s", mode);
	}
	if (life_threads_named("fasttime") != 0) {
		life_list_threads();
		life_fail("a fasttime thread runs under the filter");
	}
	life_say("child read the clock under the filter and lives");
	/* _exit: no exit handler (a sanitizer's leak check makes a thread). */
	fflush(stdout);
	_exit(0);
}

/* The interposers pass every other call to libc untouched. */
static void sandbox_passthrough(void)
{
	static const char marker[] = "page two";
	__u32 action = SECCOMP_RET_KILL_PROCESS;
	char name[16] = "";
	int fd = (int)syscall(SYS_memfd_create, "sandbox", 0);
	long rc;
	void *page;

	life_require_fast();
	if (fd < 0 || ftruncate(fd, 8192) != 0 || pwrite(fd, marker, sizeof marker, 4096) < 0)
		life_fail("memfd: %s", strerror(errno));
	/* mmap's offset is syscall()'s sixth argument: on the stack. */
	page = (void *)syscall(SYS_mmap, NULL, 4096, PROT_READ, MAP_SHARED, fd, 4096);
	if (page == MAP_FAILED || memcmp(page, marker, sizeof marker) != 0)
		life_fail("syscall(SYS_mmap, ..., offset 4096) did not map the second page");
	munmap(page, 4096);
	close(fd);
	if (syscall(SYS_getpid) != getpid())
		life_fail("syscall(SYS_getpid) is not getpid()");
	errno = 0;
	rc = syscall(SYS_close, -1);
	if (rc != -1 || errno != EBADF)
		life_fail("syscall(SYS_close, -1): %ld, %s (libc: -1, EBADF)", rc, strerror(errno));
	errno = 0;
	rc = syscall(SYS_seccomp, 99, 0, NULL);
	if (rc != -1 || errno != EINVAL)
		life_fail("syscall(SYS_seccomp, 99): %ld, %s (libc: -1, EINVAL)", rc,
			  strerror(errno));
	if (syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) != 0)
		life_fail("SECCOMP_GET_ACTION_AVAIL: %s", strerror(errno));
	if (prctl(PR_GET_NAME, name, 0, 0, 0) != 0 || name[0] == '\0')
		life_fail("prctl(PR_GET_NAME): %s", strerror(errno));
	errno = 0;
	rc = prctl(-1, 0, 0, 0, 0);
	if (rc != -1 || errno != EINVAL)
		life_fail("prctl(-1): %ld, %s (libc: -1, EINVAL)", rc, strerror(errno));
	/* A query installs nothing. */
	if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) != 0)
		life_fail("prctl(PR_GET_SECCOMP) is not 0");
	life_sleep_ms(50);
	if (life_threads_named("fasttime") != 1) {
		life_list_threads();
		life_fail("the thread stopped for a seccomp call that installs nothing");
	}
	life_say("passthrough: PASS");
	exit(0);
}

/* Whether path is mapped in this process (/proc/self/maps), by the file's
 * identity (a page that a link names, as a service not run as root
 * publishes, is mapped under the memfd's name), found at the first call:
 * the later one runs under a filter. */
static bool sandbox_maps(const char *path)
{
	static struct stat st;
	static bool known;
	char line[4608];
	bool found = false;
	FILE *maps;

	if (!known && stat(path, &st) != 0)
		life_fail("%s: %s", path, strerror(errno));
	known = true;
	maps = fopen("/proc/self/maps", "r");
	if (maps == NULL)
		life_fail("/proc/self/maps: %s", strerror(errno));
	while (!found && fgets(line, sizeof line, maps) != NULL) {
		unsigned major, minor;
		unsigned long inode;

		found = sscanf(line, "%*s %*s %*s %x:%x %lu", &major, &minor, &inode) == 3 &&
			major == major(st.st_dev) && minor == minor(st.st_dev) &&
			inode == (unsigned long)st.st_ino;
	}
	fclose(maps);
	return found;
}

/* A served process whose first time call comes after it installs a filter:
 * served under it, reading from the page with no thread. */
static void sandbox_served(void)
{
	const char *page = getenv("FASTTIME_PAGE");

	if (page == NULL || page[0] != '/')
		life_fail("served: FASTTIME_PAGE names no page");
	if (sandbox_maps(page))
		life_fail("served: the page was mapped before the first time call");
	sandbox_install(SANDBOX_PRCTL, false, false);
	sandbox_read_for(300);
	if (life_threads_named("fasttime") != 0) {
		life_list_threads();
		life_fail("served: a fasttime thread runs under the filter");
	}
	/* _exit: no exit handler (a sanitizer's leak check makes a thread,
	 * which the filter kills). */
	if (!sandbox_maps(page)) {
		life_say("served: not served under the filter (the page unmapped)");
		fflush(stdout);
		_exit(LIFE_EXIT_NOT_SERVED);
	}
	life_say("served: served by the page under a filter installed before the first time call");
	fflush(stdout);
	_exit(0);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "prctl";
	pid_t child;
	int status;

	life_begin("sandbox");
	/* Under the filter its parent set (nomap). */
	if (strcmp(mode, "nomap-child") == 0)
		sandbox_nomap_child(argc > 2 ? argv[2] : "refused");
	if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) != 0)
		life_skip("already under a seccomp filter: the kernel's answer to the test's own "
			  "would not be the test's");
	if (strcmp(mode, "passthrough") == 0)
		sandbox_passthrough();
	if (strcmp(mode, "exec") == 0)
		sandbox_exec(argv + 2);
	if (strcmp(mode, "served") == 0)
		sandbox_served();
	if (strcmp(mode, "nomap") == 0)
		sandbox_nomap(argc > 2 ? argv[2] : "samples");
	if (strcmp(mode, "sshd") == 0) {
		/* The parent's thread runs, and its lines are inherited. */
		life_require_fast();
	}
	life_say("%s: the child installs a filter that kills thread creation, then reads", mode);
	child = fork();
	if (child < 0)
		life_fail("fork: %s", strerror(errno));
	if (child == 0)
		sandbox_child(mode);
	status = life_wait_child(child, 20);
	if (WIFSIGNALED(status))
		life_fail("%s: child killed by signal %d (%s)", mode, WTERMSIG(status),
			  strsignal(WTERMSIG(status)));
	/* The child said why it skipped (tsync: the library chose libc). */
	if (WIFEXITED(status) && WEXITSTATUS(status) == LIFE_EXIT_SKIP)
		exit(LIFE_EXIT_SKIP);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		life_fail("%s: child exited with %d", mode, WEXITSTATUS(status));
	if (strcmp(mode, "sshd") == 0) {
		/* The parent's clock, whose thread the child never touched. */
		sandbox_read_for(100);
	}
	life_say("%s: PASS", mode);
	return 0;
}
