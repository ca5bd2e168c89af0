/* ref.h - the plain reference of the lottery hash (ref.c) and the GPU
 * emulator (emu.c), for the hash module, its tools and tests, and the CPU
 * backend.
 *
 * The reference models exactly one 32-lane unit and is written to be read
 * next to docs/hash.md; nothing in it is fast.  Its loads come from a
 * wv_hash_mem: a full dataset, or the cache with items computed on demand
 * ("light": what wv_hash_verify uses), or the closed form.
 */
#ifndef WV_HASH_REF_H
#define WV_HASH_REF_H

#include <stdint.h>

#include "workers/hash/hash.h"
#include "workers/hash/pack.h"

typedef struct wv_hash_mem {
  const wv_pack *pack;
  const uint64_t *dataset;   /* dataset_items items, or NULL */
  const uint64_t *cache;     /* cache_items items (memory packs) */
} wv_hash_mem;

/* Item at address i (i <= pack->item_mask). */
static inline uint64_t wv_hash_mem_item(const wv_hash_mem *m, uint64_t i)
{
  if (m->dataset != NULL)
    return m->dataset[i];
  return wv_pack_item(m->pack, m->cache, i);
}

/* The 32 outputs of unit u (nonces 32u .. 32u + 31). */
void wv_ref_unit(const wv_hash_mem *m, uint64_t u, uint64_t out[WV_LANES]);

/* Outputs of nonces [nonce, nonce + count) (partial units computed in
 * full, docs/hash.md "Units and lanes"). */
void wv_ref_range(const wv_hash_mem *m, uint64_t nonce, uint64_t count,
                  uint64_t *out);

/* ---- the emulator (emu.c) ------------------------------------------------ */

typedef enum wv_emu_exchange {
  WV_EMU_SHUFFLE = 0,     /* sub-group shuffle xor */
  WV_EMU_LOCAL = 1,       /* local memory, two buffers, one barrier */
  WV_EMU_LOCAL_1BUF = 2,  /* deliberately wrong: one buffer, one barrier
                           * (shows the emulator can see the race) */
} wv_emu_exchange;

typedef struct wv_emu_config {
  unsigned subgroup;      /* hardware sub-group size: 32 or 64 */
  unsigned workgroup;     /* work-items per work-group: 32, 64 or 128 */
  wv_emu_exchange exchange;
  uint64_t sched_seed;    /* order in which sub-groups run between barriers */
} wv_emu_config;

/* Outputs of [nonce, nonce + count) computed the way a GPU kernel would:
 * one work-item per lane, work-groups of cfg->workgroup items split into
 * sub-groups of cfg->subgroup (the last one partly inactive when the
 * work-group is smaller), sub-groups scheduled in a pseudo-random order
 * that only barriers constrain.  WAVE_EARG for an impossible configuration
 * (shuffle needs units inside sub-groups: any of the sizes above is fine),
 * WAVE_ENOMEM. */
int wv_emu_range(const wv_hash_mem *m, const wv_emu_config *cfg,
                 uint64_t nonce, uint64_t count, uint64_t *out,
                 wave_error *err);

#endif
