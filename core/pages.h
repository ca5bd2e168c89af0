/* core/pages.h - giving a big block back without stalling the process's
 * other threads (wvcore).
 *
 * free() of a block of many megabytes is one munmap (glibc serves such
 * blocks from mmap), which tears down every page under the process's
 * memory-map lock: a 256 MiB decoded request took 4-7 ms there on a
 * 16-core host, and meanwhile any thread that maps memory (malloc growing
 * an arena, realloc moving a block, a new thread's stack) waited, and the
 * loop thread behind a mutex such a thread held (issue 35: the light
 * client's wait at the moment a many-chunk job's reply left).  Giving the
 * pages back first with madvise(MADV_DONTNEED), one WV_PAGES_STEP at a
 * time, lets those threads in between the steps; the free() that follows
 * unmaps pages that are no longer there.
 */
#ifndef WV_PAGES_H
#define WV_PAGES_H

#include <stddef.h>

#define WV_PAGES_STEP ((size_t)2 << 20)   /* bytes given back per call: a
                                           * huge page, never split */
#define WV_PAGES_MIN ((size_t)4 << 20)    /* smaller blocks: plain free() */

/* From WV_PAGES_MIN bytes up: give back the whole pages of [p, p + bytes)
 * in steps (they read as zeros after).  For memory about to be freed by
 * a call that frees it at once (nng_msg_free of a big message). */
void wv_pages_release(void *p, size_t bytes);
/* free(p), p from malloc (or NULL), its pages given back first as above
 * when it is that big (its size from malloc_usable_size: never past it). */
void wv_free_big(void *p);

#endif
