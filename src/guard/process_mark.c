/* The process mark (process_mark.h). */
#include "config.h"

#include "process_mark.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK 18 /* Linux 4.14; older C library headers lack it */
#endif

/* The page's word: 1 while the thread that set it runs in this process;
 * NULL until the page is made, or where it could not be. */
static uint32_t *process_mark_word;

void process_mark_set(void)
{
	uint32_t *mark = __atomic_load_n(&process_mark_word, __ATOMIC_ACQUIRE);

	if (mark == NULL) {
		void *page =
		    mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (page == MAP_FAILED)
			return;
		if (madvise(page, 4096, MADV_WIPEONFORK) != 0) {
			munmap(page, 4096);
			return;
		}
		mark = page;
	}
	__atomic_store_n(mark, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&process_mark_word, mark, __ATOMIC_RELEASE);
}

bool process_mark_wiped(void)
{
	uint32_t *mark = __atomic_load_n(&process_mark_word, __ATOMIC_ACQUIRE);

	return mark != NULL && __atomic_load_n(mark, __ATOMIC_ACQUIRE) == 0;
}
