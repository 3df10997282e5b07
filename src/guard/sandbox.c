/* The seccomp mode at the constructor, and the look before the thread
 * starts (sandbox.h). */
#include "config.h"

#include "sandbox.h"

#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "raw_syscall.h"

/* What prctl(PR_GET_SECCOMP) said in the constructor: SECCOMP_MODE_DISABLED,
 * SECCOMP_MODE_FILTER (inherited across exec), or -1 (a kernel without
 * seccomp, or never recorded: the tools). */
static int sandbox_mode_at_start = -1;

/* By the system call itself: the program's prctl is the library's own
 * interposer (preload_sandbox.c), whose first call looks libc's up with
 * dlsym, a cost every process start would pay in the constructor. */
static int sandbox_mode_now(void)
{
	return (int)raw_syscall(SYS_prctl, PR_GET_SECCOMP, 0, 0, 0, 0, 0);
}

void sandbox_record(void)
{
	sandbox_mode_at_start = sandbox_mode_now();
}

bool sandbox_thread_allowed(void)
{
	/* Only from no filter can a new one show in the mode; and while
	 * there is none, the prctl below is judged by nothing. Where one was
	 * installed behind our back, the old library's clone, and its
	 * thread's own prctl(PR_SET_NAME), faced it as well. */
	if (sandbox_mode_at_start != SECCOMP_MODE_DISABLED)
		return true;
	return sandbox_mode_now() == SECCOMP_MODE_DISABLED;
}
