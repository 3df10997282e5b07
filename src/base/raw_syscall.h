/* A system call made with the instruction itself, with libc's convention
 * (-1 and errno on failure).
 *
 * The library exports syscall() (preload_sandbox.c), so its own calls to
 * syscall() would reach that stub, whose first use looks libc's function
 * up with dlsym: not safe in a signal handler, where refresh_stop may run.
 * The library's own system calls that have no libc wrapper come here. */
#ifndef FASTTIME_RAW_SYSCALL_H
#define FASTTIME_RAW_SYSCALL_H

#include <errno.h>

static inline long raw_syscall(long number, long a1, long a2, long a3, long a4, long a5, long a6)
{
	register long r10 __asm__("r10") = a4;
	register long r8 __asm__("r8") = a5;
	register long r9 __asm__("r9") = a6;
	long rc;

	__asm__ volatile("syscall"
			 : "=a"(rc)
			 : "0"(number), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	if ((unsigned long)rc > -4096ul) {
		errno = (int)-rc;
		return -1;
	}
	return rc;
}

#endif
