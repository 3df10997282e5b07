/* Which process the refresh thread runs in, told apart from a process made
 * without fork() (_Fork, a raw clone), which runs no atfork handler but
 * inherits the library's memory: a word on a page the kernel zeroes in
 * such a child (MADV_WIPEONFORK, Linux 4.14), and does not zero in a vfork
 * or CLONE_VM child, which shares it. No system call to test it. */
#ifndef FASTTIME_PROCESS_MARK_H
#define FASTTIME_PROCESS_MARK_H

#include <stdbool.h>

/* Marks this process as the one the running thread belongs to: makes the
 * page the first time (one mmap, no descriptor), sets its word. Where the
 * page cannot be made, no child made without fork() is found, and such a
 * child answers with libc once its lines go stale. */
void process_mark_set(void);
/* Whether this is a new process made without fork(): the page exists and
 * the kernel zeroed its word. */
bool process_mark_wiped(void);

#endif
