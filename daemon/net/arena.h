/* arena.h - a bump allocator for one decoded request (net/req.c hands it
 * to protobuf-c as its ProtobufCAllocator): items are cut from a few
 * blocks that double in size, an item of WD_ARENA_BIG bytes or more gets a
 * block of its own, and the whole is freed at once (wd_arena_free), a
 * handful of free() calls whatever the number of items.  See arena.c for
 * the bounds and what ASan sees.  Not thread-safe: one owner at a time
 * (the struct may be copied to move it: nothing points into it).
 */
#ifndef WD_NET_ARENA_H
#define WD_NET_ARENA_H

#include <stddef.h>

#define WD_ARENA_BIG ((size_t)64 << 10)  /* items this big: a block each */

struct wd_arena_blk;
struct wd_arena_big;

typedef struct wd_arena {
  struct wd_arena_blk *blk;  /* the blocks small items are cut from, newest
                              * first (items are cut from the newest) */
  struct wd_arena_big *big;  /* the items of a block of their own */
  size_t used;               /* bytes asked for and held: small items
                              * (given back only with the arena), big
                              * items until each is given back */
  size_t limit;              /* used never passes this */
  int refused;               /* an allocation would have passed limit */
} wd_arena;

/* An empty arena that holds at most limit bytes (wd_arena.used). */
void wd_arena_init(wd_arena *a, size_t limit);
/* size bytes aligned for any object of that size (16 at most, malloc's),
 * or NULL: out of memory, or past the limit (then a->refused is set). */
void *wd_arena_alloc(wd_arena *a, size_t size);
/* p, from wd_arena_alloc(a) (or NULL): a big item is freed now, a small
 * one stays until wd_arena_free. */
void wd_arena_give(wd_arena *a, void *p);
/* Free everything a holds; a is then empty, as wd_arena_init left it. */
void wd_arena_free(wd_arena *a);
/* The blocks a holds now (small-item blocks, big items), and their bytes
 * with headers: what wd_arena_free will give back (tests, benches). */
size_t wd_arena_blocks(const wd_arena *a, size_t *bytes);

#endif
