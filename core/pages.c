/* core/pages.c - big blocks given back in steps (see pages.h). */
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/pages.h"

void wv_pages_release(void *p, size_t bytes)
{
  if (p != NULL && bytes >= WV_PAGES_MIN) {
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = ((uintptr_t)p + page - 1) & ~(page - 1);
    uintptr_t hi = ((uintptr_t)p + bytes) & ~(page - 1);
    /* whole pages inside the block only: malloc's header before p and
     * the next chunk's after it are left alone */
    for (uintptr_t at = lo; at < hi; at += WV_PAGES_STEP) {
      size_t n = hi - at < WV_PAGES_STEP ? hi - at : WV_PAGES_STEP;
      madvise((void *)at, n, MADV_DONTNEED);  /* a hint: errors are moot */
    }
  }
}

void wv_free_big(void *p)
{
  if (p != NULL)
    wv_pages_release(p, malloc_usable_size(p));
  free(p);
}
