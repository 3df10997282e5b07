/* The exported prctl and syscall: the two ways a program installs a
 * seccomp filter through libc (glibc has no seccomp() wrapper; libseccomp
 * uses one of these). Before an install the refresh thread is stopped and
 * joined, for good: a filter with SECCOMP_FILTER_FLAG_TSYNC would reach it
 * and could kill the process at its next system call, one without would
 * leave an unfiltered thread in a sandboxed process, and no thread may be
 * created after either (sandbox.h). Every other call goes to libc's own
 * function untouched, with its arguments, return value and errno.
 *
 * Both are defined with fixed arguments in place of libc's variadic ones:
 * on x86-64 a variadic call passes them in the same registers and stack
 * slots, so they reach libc exactly as the program passed them. syscall()
 * is a compare and a jump, in assembly: no frame of ours lies between the
 * program and libc, which matters to a raw clone that shares the stack. */
#include "config.h"

#include <dlfcn.h>
#include <linux/prctl.h>
#include <linux/seccomp.h>
#include <stdbool.h>
#include <sys/syscall.h>

#include "errno_keep.h"
#include "raw_syscall.h"
#include "refresh.h"

#define PRELOAD_SANDBOX_EXPORT	__attribute__((visibility("default")))
#define PRELOAD_SANDBOX_STR(x)	#x
#define PRELOAD_SANDBOX_XSTR(x) PRELOAD_SANDBOX_STR(x)
/* Built with -fcf-protection, the library says it is ready for indirect
 * branch tracking: every place reached by an indirect jump (syscall from
 * the program's PLT, the stub from the pointer) must then begin with an
 * endbr64, or the CPU faults there where the kernel enforces it. */
#if defined(__CET__) && (__CET__ & 1)
#define PRELOAD_SANDBOX_BRANCH_TARGET "	endbr64\n"
#else
#define PRELOAD_SANDBOX_BRANCH_TARGET ""
#endif

typedef long (*preload_sandbox_syscall_fn)(long, ...);
typedef int (*preload_sandbox_prctl_fn)(int, ...);

/* Used by the assembly below. */
void *preload_sandbox_resolve_syscall(void) __attribute__((used));
long preload_sandbox_seccomp(long number, long op, long a2, long a3, long a4, long a5, long a6)
    __attribute__((used));
void preload_sandbox_syscall_unresolved(void);

/* libc's syscall once found; until then the stub that finds it. */
preload_sandbox_syscall_fn preload_sandbox_next_syscall =
    (preload_sandbox_syscall_fn)preload_sandbox_syscall_unresolved;
static preload_sandbox_prctl_fn preload_sandbox_next_prctl;
static __thread bool preload_sandbox_resolving __attribute__((tls_model("initial-exec")));

/* syscall(): anything but SYS_seccomp jumps to libc's. The stub keeps the
 * argument registers across the lookup and jumps to what it found. */
__asm__(".text\n"
	".globl syscall\n"
	".type syscall, @function\n"
	"syscall:\n"
	".cfi_startproc\n" PRELOAD_SANDBOX_BRANCH_TARGET "	cmpq $" PRELOAD_SANDBOX_XSTR(
	    SYS_seccomp) ", %rdi\n"
			 "	je preload_sandbox_seccomp\n"
			 "	jmp *preload_sandbox_next_syscall(%rip)\n"
			 ".cfi_endproc\n"
			 ".size syscall, .-syscall\n"
			 "\n"
			 ".type preload_sandbox_syscall_unresolved, @function\n"
			 "preload_sandbox_syscall_unresolved:\n"
			 ".cfi_startproc\n" PRELOAD_SANDBOX_BRANCH_TARGET "	pushq %rdi\n"
			 "	.cfi_adjust_cfa_offset 8\n"
			 "	pushq %rsi\n"
			 "	.cfi_adjust_cfa_offset 8\n"
			 "	pushq %rdx\n"
			 "	.cfi_adjust_cfa_offset 8\n"
			 "	pushq %rcx\n"
			 "	.cfi_adjust_cfa_offset 8\n"
			 "	pushq %r8\n"
			 "	.cfi_adjust_cfa_offset 8\n"
			 "	pushq %r9\n"
			 "	.cfi_adjust_cfa_offset 8\n"
			 "	subq $8, %rsp\n"
			 "	.cfi_adjust_cfa_offset 8\n"
			 "	call preload_sandbox_resolve_syscall\n"
			 "	movq %rax, %r11\n"
			 "	addq $8, %rsp\n"
			 "	.cfi_adjust_cfa_offset -8\n"
			 "	popq %r9\n"
			 "	.cfi_adjust_cfa_offset -8\n"
			 "	popq %r8\n"
			 "	.cfi_adjust_cfa_offset -8\n"
			 "	popq %rcx\n"
			 "	.cfi_adjust_cfa_offset -8\n"
			 "	popq %rdx\n"
			 "	.cfi_adjust_cfa_offset -8\n"
			 "	popq %rsi\n"
			 "	.cfi_adjust_cfa_offset -8\n"
			 "	popq %rdi\n"
			 "	.cfi_adjust_cfa_offset -8\n"
			 "	jmp *%r11\n"
			 ".cfi_endproc\n"
			 ".size preload_sandbox_syscall_unresolved, "
			 ".-preload_sandbox_syscall_unresolved\n");

/* The system call itself (raw_syscall.h): while libc's function is being
 * looked up on this thread, or cannot be found. */
static long preload_sandbox_raw_syscall(long number, long a1, long a2, long a3, long a4, long a5,
					long a6)
{
	return raw_syscall(number, a1, a2, a3, a4, a5, a6);
}

static int preload_sandbox_raw_prctl(int option, ...)
{
	__builtin_va_list args;
	unsigned long a[4];

	__builtin_va_start(args, option);
	for (unsigned i = 0; i < 4; i++)
		a[i] = __builtin_va_arg(args, unsigned long);
	__builtin_va_end(args);
	return (int)preload_sandbox_raw_syscall(SYS_prctl, option, (long)a[0], (long)a[1],
						(long)a[2], (long)a[3], 0);
}

/* dlsym(RTLD_NEXT) of a symbol that exists allocates nothing. NULL while
 * this thread is already looking one up. */
static void *preload_sandbox_lookup(const char *name)
{
	void *found;

	if (preload_sandbox_resolving)
		return NULL;
	preload_sandbox_resolving = true;
	found = dlsym(RTLD_NEXT, name);
	preload_sandbox_resolving = false;
	return found;
}

/* Called by the syscall stub, where the program's call enters the library:
 * the program's errno is kept (errno_keep.h), as in the others below. */
void *preload_sandbox_resolve_syscall(void)
{
	struct errno_keep keep = errno_keep_take();
	void *found = preload_sandbox_lookup("syscall");

	errno_keep_give(keep);
	if (found == NULL)
		return (void *)preload_sandbox_raw_syscall;
	__atomic_store_n(&preload_sandbox_next_syscall, (preload_sandbox_syscall_fn)found,
			 __ATOMIC_RELEASE);
	return found;
}

static preload_sandbox_prctl_fn preload_sandbox_prctl_next(void)
{
	preload_sandbox_prctl_fn next =
	    __atomic_load_n(&preload_sandbox_next_prctl, __ATOMIC_ACQUIRE);

	if (next != NULL)
		return next;
	next = (preload_sandbox_prctl_fn)preload_sandbox_lookup("prctl");
	if (next == NULL)
		return preload_sandbox_raw_prctl;
	__atomic_store_n(&preload_sandbox_next_prctl, next, __ATOMIC_RELEASE);
	return next;
}

/* A filter is about to be installed: the thread stops for good, joined
 * unless this may be a signal handler (refresh_stop). */
static void preload_sandbox_before_install(void)
{
	refresh_stop(REFRESH_STOP_FOR_GOOD);
}

long preload_sandbox_seccomp(long number, long op, long a2, long a3, long a4, long a5, long a6)
{
	preload_sandbox_syscall_fn next =
	    __atomic_load_n(&preload_sandbox_next_syscall, __ATOMIC_ACQUIRE);
	struct errno_keep keep = errno_keep_take();

	if (op == SECCOMP_SET_MODE_STRICT || op == SECCOMP_SET_MODE_FILTER)
		preload_sandbox_before_install();
	errno_keep_give(keep);
	if (next == (preload_sandbox_syscall_fn)preload_sandbox_syscall_unresolved)
		next = (preload_sandbox_syscall_fn)preload_sandbox_resolve_syscall();
	return next(number, op, a2, a3, a4, a5, a6);
}

PRELOAD_SANDBOX_EXPORT int preload_sandbox_prctl(int option, unsigned long a2, unsigned long a3,
						 unsigned long a4,
						 unsigned long a5) __asm__("prctl");

PRELOAD_SANDBOX_EXPORT int preload_sandbox_prctl(int option, unsigned long a2, unsigned long a3,
						 unsigned long a4, unsigned long a5)
{
	struct errno_keep keep = errno_keep_take();
	preload_sandbox_prctl_fn next;

	if (option == PR_SET_SECCOMP && (a2 == SECCOMP_MODE_STRICT || a2 == SECCOMP_MODE_FILTER))
		preload_sandbox_before_install();
	next = preload_sandbox_prctl_next();
	errno_keep_give(keep);
	return next(option, a2, a3, a4, a5);
}
