/* arena.c - the bump allocator a request is decoded into (see arena.h).
 *
 * Why: protobuf-c allocates one block per element it decodes.  A request
 * of 4,194,304 one-row chunks (40 MB) took 4M mallocs to decode and 4M
 * frees after its reply (issue 35).  Here an item smaller than
 * WD_ARENA_BIG is cut from the newest block, aligned as an object of its
 * size needs (the lowest set bit of the size, 16 at most: malloc's
 * guarantee, max_align_t), and is never freed alone; blocks start at
 * AR_FIRST bytes and double up to AR_CAP, so a request takes about
 * log2(its decoded size / 4 KiB) of them.  An item of WD_ARENA_BIG or more
 * (a big chunk; protobuf-c's scan slabs of a many-field message, 32 bytes
 * a field, freed before the decode returns; a repeated field's array)
 * gets a malloc of its own, which wd_arena_give frees at once.
 *
 * The bound: `used` counts what the arena holds, and never passes
 * `limit` (net/req.c's decode budget).  A small item's bytes are held
 * until the whole arena goes, even once protobuf-c frees it: that is only
 * the small scan slabs (under 2 * WD_ARENA_BIG in all) and the values of a
 * singular field sent twice, which count against the limit (a request
 * repeating a field to make the decoder take and give back memory runs
 * into its budget instead).  `used` counts the bytes asked for, as
 * protobuf-c's own malloc would take them; the memory behind them: a small
 * item's padding is less than its alignment, so less than its size (at
 * most 2x, and none for the arrays, structs and 8-byte rows that make up
 * a many-chunk request); a block's tail left when an item does not fit is
 * under WD_ARENA_BIG; the newest block's free tail is at most as big as
 * every other block together (its pages mostly never touched); a big item
 * is its size plus a 32-byte header.  A 64 MiB request of
 * one 64 MiB chunk: one big item of 64 MiB and one 4 KiB block.
 *
 * What ASan sees (built with -fsanitize=address): a block is poisoned
 * when made, an item unpoisoned when cut, with a 16-byte poisoned
 * redzone after each small item, aligned to 8 at least (ASan's granule),
 * and a small item is poisoned again when protobuf-c gives it back.  So
 * overflows past a small item, reads of a block's free tail, and uses of
 * a small item after it was given back are still reported; a big item is
 * a malloc of its own, checked as any.  ASan no longer sees: a leak of
 * one item (the arena owns them all, and a leaked arena is reported as
 * its blocks), a double give of a small item (a no-op), and an overflow
 * of more than 16 bytes that lands inside the next small item.
 */
#include <stdint.h>
#include <stdlib.h>

#include "core/pages.h"
#include "daemon/net/arena.h"

#if defined(__SANITIZE_ADDRESS__)
#define AR_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AR_ASAN 1
#endif
#endif

#ifdef AR_ASAN
#include <sanitizer/asan_interface.h>
#define AR_RZ 16        /* poisoned bytes after each small item */
#define AR_MINALIGN 8   /* ASan's granule */
#define bump_poison(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define bump_unpoison(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define AR_RZ 0
#define AR_MINALIGN 1
#define bump_poison(p, n) ((void)(p), (void)(n))
#define bump_unpoison(p, n) ((void)(p), (void)(n))
#endif

#define AR_FIRST ((size_t)4 << 10)   /* the first block's bytes */
#define AR_CAP ((size_t)64 << 20)    /* blocks grow no larger */

struct wd_arena_blk {          /* 32 bytes: the items follow, 16-aligned */
  struct wd_arena_blk *next;   /* the next older block */
  size_t cap;                  /* bytes for items */
  size_t off;                  /* the first free one */
  size_t spare;
};

struct wd_arena_big {          /* 32 bytes: the item follows, 16-aligned */
  struct wd_arena_big *next, *prev;
  size_t size;
  size_t spare;
};

#define AR_DATA(b) ((unsigned char *)((b) + 1))

void wd_arena_init(wd_arena *a, size_t limit)
{
  *a = (wd_arena){.limit = limit};
}

static void *bump_big(wd_arena *a, size_t size)
{
  if (size > a->limit - a->used) {
    a->refused = 1;
    return NULL;
  }
  if (size > SIZE_MAX - sizeof(struct wd_arena_big))
    return NULL;
  struct wd_arena_big *g = malloc(sizeof *g + size);
  if (g == NULL)
    return NULL;
  *g = (struct wd_arena_big){.next = a->big, .size = size};
  if (a->big != NULL)
    a->big->prev = g;
  a->big = g;
  a->used += size;
  return g + 1;
}

void *wd_arena_alloc(wd_arena *a, size_t size)
{
  if (size == 0)
    size = 1;
  if (size >= WD_ARENA_BIG)
    return bump_big(a, size);
  size_t al = size & -size;  /* an object of this size needs no more */
  if (al > 16)
    al = 16;
  if (al < AR_MINALIGN)
    al = AR_MINALIGN;
  struct wd_arena_blk *b = a->blk;
  size_t at = b != NULL ? (b->off + al - 1) & ~(al - 1) : 0;
  if (b == NULL || at + size + AR_RZ > b->cap) {
    size_t cap = b == NULL ? AR_FIRST : b->cap < AR_CAP ? 2 * b->cap : AR_CAP;
    while (cap < size + AR_RZ)
      cap *= 2;
    if (size > a->limit - a->used) {  /* refused before a block is made */
      a->refused = 1;
      return NULL;
    }
    struct wd_arena_blk *nb = malloc(sizeof *nb + cap);
    if (nb == NULL)
      return NULL;
    *nb = (struct wd_arena_blk){.next = b, .cap = cap};
    bump_poison(AR_DATA(nb), cap);
    a->blk = b = nb;
    at = 0;
  }
  if (size > a->limit - a->used) {
    a->refused = 1;
    return NULL;
  }
  unsigned char *p = AR_DATA(b) + at;
  b->off = at + size + AR_RZ;
  a->used += size;
  bump_unpoison(p, size);
  return p;
}

void wd_arena_give(wd_arena *a, void *p)
{
  if (p == NULL)
    return;
  unsigned char *q = p;
  for (struct wd_arena_blk *b = a->blk; b != NULL; b = b->next)
    if (q >= AR_DATA(b) && q < AR_DATA(b) + b->cap) {
#ifdef AR_ASAN  /* poisoned again up to its redzone */
      unsigned char *end = __asan_region_is_poisoned(q, AR_DATA(b) + b->cap - q);
      bump_poison(q, (size_t)((end != NULL ? end : AR_DATA(b) + b->cap) - q));
#endif
      return;  /* small: held until wd_arena_free */
    }
  struct wd_arena_big *g = (struct wd_arena_big *)p - 1;
  if (g->prev != NULL)
    g->prev->next = g->next;
  else
    a->big = g->next;
  if (g->next != NULL)
    g->next->prev = g->prev;
  a->used -= g->size;
  wv_free_big(g);
}

void wd_arena_free(wd_arena *a)
{
  while (a->blk != NULL) {
    struct wd_arena_blk *b = a->blk;
    a->blk = b->next;
    bump_unpoison(AR_DATA(b), b->cap);
    wv_free_big(b);
  }
  while (a->big != NULL) {
    struct wd_arena_big *g = a->big;
    a->big = g->next;
    wv_free_big(g);
  }
  a->used = 0;
  a->refused = 0;
}

size_t wd_arena_blocks(const wd_arena *a, size_t *bytes)
{
  size_t n = 0, sum = 0;
  for (const struct wd_arena_blk *b = a->blk; b != NULL; b = b->next, n++)
    sum += sizeof *b + b->cap;
  for (const struct wd_arena_big *g = a->big; g != NULL; g = g->next, n++)
    sum += sizeof *g + g->size;
  if (bytes != NULL)
    *bytes = sum;
  return n;
}
