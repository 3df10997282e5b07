/* A program whose own malloc reads the clock, as tracing allocators do:
 * every allocation, including those made by libc and the dynamic loader
 * while the library starts its refresh thread, calls clock_gettime or
 * gettimeofday. The program must finish: no deadlock (alarm(20) turns a hang
 * into a failure), no unbounded recursion, and the times it read in malloc
 * never go back within a thread. */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "integ.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)

/* The sanitizer's runtime owns malloc: a second allocator cannot be tested
 * under it. */
int main(void)
{
	printf("SKIP: a sanitizer owns malloc in this build\n");
	return INTEG_SKIP;
}

#else

#define MALLOC_HEAP_BYTES (64u << 20)
#define MALLOC_ALIGN	  16u
/* malloc -> clock -> thread start -> malloc -> clock is expected once; a
 * deeper nesting means the library keeps re-entering itself. */
#define MALLOC_MAX_DEPTH  4

#define MALLOC_EXPORT __attribute__((visibility("default")))

/* A bump allocator over a static buffer: usable from the first instruction
 * of the process, lock-free, and never freeing. Each block starts with its
 * size, for realloc. */
static _Alignas(64) unsigned char malloc_heap[MALLOC_HEAP_BYTES];
static size_t malloc_used;

static unsigned malloc_max_depth;
static unsigned long malloc_clock_reads;
static unsigned long malloc_backwards;
static __thread unsigned malloc_depth __attribute__((tls_model("initial-exec")));
static __thread int64_t malloc_last_ns __attribute__((tls_model("initial-exec")));

/* Takes size bytes at align from the heap with one compare-and-swap. */
static void *malloc_bump(size_t size, size_t align)
{
	size_t start, end, used = __atomic_load_n(&malloc_used, __ATOMIC_RELAXED);

	if (align < MALLOC_ALIGN)
		align = MALLOC_ALIGN;
	do {
		start = (used + sizeof(size_t) + align - 1) & ~(align - 1);
		end = start + size;
		if (size > MALLOC_HEAP_BYTES || end > MALLOC_HEAP_BYTES) {
			errno = ENOMEM;
			return NULL;
		}
	} while (!__atomic_compare_exchange_n(&malloc_used, &used, end, true, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	memcpy(malloc_heap + start - sizeof(size_t), &size, sizeof size);
	return malloc_heap + start;
}

/* Reads the clock the way a tracing allocator would, and checks it. */
static void malloc_read_clock(void)
{
	unsigned depth = ++malloc_depth;
	unsigned seen = __atomic_load_n(&malloc_max_depth, __ATOMIC_RELAXED);
	struct timespec ts;
	int saved = errno;
	int64_t ns;

	while (depth > seen && !__atomic_compare_exchange_n(&malloc_max_depth, &seen, depth, true,
							    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	if (depth <= MALLOC_MAX_DEPTH) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ns = integ_ns(&ts);
		if (ns < malloc_last_ns)
			__atomic_add_fetch(&malloc_backwards, 1, __ATOMIC_RELAXED);
		malloc_last_ns = ns;
		if (malloc_clock_reads % 2 == 0) {
			struct timeval tv;
			gettimeofday(&tv, NULL);
		}
		__atomic_add_fetch(&malloc_clock_reads, 1, __ATOMIC_RELAXED);
	}
	malloc_depth--;
	errno = saved;
}

MALLOC_EXPORT void *malloc(size_t size)
{
	malloc_read_clock();
	return malloc_bump(size, MALLOC_ALIGN);
}

MALLOC_EXPORT void free(void *pointer)
{
	(void)pointer;
}

MALLOC_EXPORT void *calloc(size_t count, size_t size)
{
	void *pointer;

	if (size != 0 && count > MALLOC_HEAP_BYTES / size) {
		errno = ENOMEM;
		return NULL;
	}
	malloc_read_clock();
	pointer = malloc_bump(count * size, MALLOC_ALIGN);
	if (pointer != NULL)
		memset(pointer, 0, count * size);
	return pointer;
}

MALLOC_EXPORT void *realloc(void *old, size_t size)
{
	size_t old_size = 0;
	void *pointer;

	malloc_read_clock();
	pointer = malloc_bump(size, MALLOC_ALIGN);
	if (pointer != NULL && old != NULL) {
		memcpy(&old_size, (unsigned char *)old - sizeof(size_t), sizeof old_size);
		memcpy(pointer, old, old_size < size ? old_size : size);
	}
	return pointer;
}

MALLOC_EXPORT void *memalign(size_t align, size_t size)
{
	malloc_read_clock();
	return malloc_bump(size, align);
}

MALLOC_EXPORT void *aligned_alloc(size_t align, size_t size)
{
	return memalign(align, size);
}

MALLOC_EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
	void *pointer = memalign(align, size);

	if (pointer == NULL)
		return ENOMEM;
	*out = pointer;
	return 0;
}

MALLOC_EXPORT void *valloc(size_t size)
{
	return memalign(4096, size);
}

MALLOC_EXPORT void *pvalloc(size_t size)
{
	return memalign(4096, (size + 4095) & ~(size_t)4095);
}

MALLOC_EXPORT size_t malloc_usable_size(void *pointer)
{
	size_t size = 0;

	if (pointer != NULL)
		memcpy(&size, (unsigned char *)pointer - sizeof(size_t), sizeof size);
	return size;
}

/* An allocation before any library's constructor, the preloaded one's too. */
static void malloc_preinit(int argc, char **argv, char **envp)
{
	(void)argc;
	(void)argv;
	(void)envp;
	free(malloc(24));
}

__attribute__((section(".preinit_array"),
	       used)) static void (*const malloc_preinit_entry)(int, char **,
								char **) = malloc_preinit;

/* Allocates and reads the clock from a thread of its own. */
static void *malloc_worker(void *unused)
{
	(void)unused;
	for (unsigned i = 0; i < 2000; i++) {
		char *text = malloc(32 + i % 64);
		struct timespec ts;

		if (text == NULL)
			abort();
		snprintf(text, 32, "%u", i);
		text = realloc(text, 200);
		if (text == NULL || strtoul(text, NULL, 10) != i)
			abort();
		clock_gettime(CLOCK_REALTIME, &ts);
		free(text);
	}
	return NULL;
}

/* Allocates in every way libc does while the library starts and runs. */
int main(void)
{
	pthread_t workers[4];
	char *copy;
	void *handle;

	/* A hang is a failure, not a stuck run. */
	signal(SIGALRM, SIG_DFL);
	alarm(20);
	setvbuf(stdout, NULL, _IOLBF, 0);
	integ_require_preload();
	integ_load_libc();

	/* Allocations in libc (stdio, the loader, thread stacks and TLS) while
	 * the first time calls start the refresh thread. */
	copy = strdup("fasttime");
	printf("first allocation done: %s\n", copy);
	for (unsigned i = 0; i < 4; i++)
		if (pthread_create(&workers[i], NULL, malloc_worker, NULL) != 0) {
			printf("ERROR: pthread_create\n");
			return INTEG_ERROR;
		}
	handle = dlopen("libm.so.6", RTLD_NOW);
	if (handle != NULL && dlsym(handle, "fasttime_no_such_symbol") == NULL)
		(void)dlerror();
	setenv("FASTTIME_TEST_ALLOCATES", "yes", 1);
	for (unsigned i = 0; i < 4; i++)
		pthread_join(workers[i], NULL);
	/* Let the refresh thread calibrate and choose, with allocations going
	 * on, then allocate on the fast path too. */
	for (int64_t start = integ_libc_mono_ns(); integ_libc_mono_ns() - start < 300000000;) {
		free(malloc(64));
		integ_sleep_ms(1);
	}
	malloc_worker(NULL);

	printf("clock reads inside malloc: %lu, deepest nesting %u, backward steps %lu\n",
	       malloc_clock_reads, malloc_max_depth, malloc_backwards);
	if (malloc_max_depth > MALLOC_MAX_DEPTH)
		integ_fail("malloc was re-entered %u deep through the clock", malloc_max_depth);
	if (malloc_backwards > 0)
		integ_fail("%lu backward steps of CLOCK_MONOTONIC within a thread",
			   malloc_backwards);
	if (malloc_clock_reads == 0)
		integ_fail("malloc never read the clock");
	return integ_status();
}

#endif
