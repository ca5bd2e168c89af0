/* hash.c - the host side of the lottery hash that every backend shares:
 * the cache, dataset generation in ranges, the job accumulator, the
 * known-answer self-check and CPU re-verification of winners
 * (docs/hash.md).  The hash itself lives in ref.c (plain), emu.c (as a GPU
 * runs it) and the backends.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base.h"
#include "workers/hash/hash.h"
#include "workers/hash/pack.h"
#include "workers/hash/ref.h"

/* ---- cache and dataset (docs/hash.md "Cache", "Dataset") ---------------- */

int wv_pack_cache_build(const wv_pack *p, uint64_t **cache, size_t *items,
                        wave_error *err)
{
  *cache = NULL;
  *items = 0;
  if (p->closed)
    return wv_seterr(err, WAVE_EARG, "pack %s is closed-form: no cache",
                     p->name);
  uint64_t m = p->cache_items, mask = m - 1;
  uint64_t *c = malloc(m * sizeof *c);
  if (c == NULL)
    return wv_seterr(err, WAVE_ENOMEM, "cache of pack %s (%llu bytes)",
                     p->name, (unsigned long long)(m * 8));
  c[0] = wv_mix64(p->seed ^ WV_TAG_CACHE);
  for (uint64_t k = 1; k < m; k++)
    c[k] = wv_mix64(c[k - 1] + WV_GAMMA);
  for (unsigned pass = 0; pass < WV_CACHE_PASSES; pass++)
    for (uint64_t k = 0; k < m; k++) {
      uint64_t prev = c[(k + m - 1) & mask];
      uint64_t other = c[c[k] & mask];
      c[k] = wv_mix64((prev ^ other) + c[k]);
    }
  *cache = c;
  *items = (size_t)m;
  return 0;
}

int wv_pack_cache_get(const wv_pack *p, const uint64_t **cache,
                      wave_error *err)
{
  /* The cache is logically part of the (immutable) pack; building it on
   * first use behind the pack's lock keeps pack loading cheap. */
  wv_pack *mp = (wv_pack *)p;
  int rv = 0;
  *cache = NULL;
  if (p->closed)
    return 0;
  pthread_mutex_lock(&mp->lock_);
  if (mp->cache_ == NULL) {
    size_t items;
    rv = wv_pack_cache_build(p, &mp->cache_, &items, err);
  }
  *cache = mp->cache_;
  pthread_mutex_unlock(&mp->lock_);
  return rv;
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define HS_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define HS_CLONES
#endif

HS_CLONES
void wv_pack_dataset_range(const wv_pack *p, const uint64_t *cache,
                           uint64_t first, uint64_t count, uint64_t *out)
{
  /* 32 items advance together through their parent chains: each chain is
   * a sequence of dependent cache reads, 32 chains overlap, and the loop
   * over them vectorizes (AVX-512 has the 64-bit multiply and the gather).
   * About 4x the item-at-a-time rate on a Zen 4 core. */
  enum { W = 32 };
  const uint64_t cmask = p->cache_items - 1;
  const unsigned parents = p->parents;
  uint64_t i = 0;
  for (; i + W <= count; i += W) {
    uint64_t x[W];
    for (unsigned t = 0; t < W; t++) {
      uint64_t idx = first + i + t;
      x[t] = wv_mix64(cache[idx & cmask] ^ idx);
    }
    for (unsigned j = 0; j < parents; j++)
      for (unsigned t = 0; t < W; t++)
        x[t] = wv_mix64(x[t] + cache[x[t] & cmask]);
    memcpy(out + i, x, sizeof x);
  }
  for (; i < count; i++)
    out[i] = wv_item_from_cache(cache, p->cache_items, parents, first + i);
}

/* ---- the job accumulator ----------------------------------------------- */

int wv_hash_acc_init(wv_hash_acc *a, uint64_t target, size_t max_winners)
{
  memset(a, 0, sizeof *a);
  a->target = target;
  a->fingerprint = WV_FNV_OFFSET;
  a->best_output = UINT64_MAX;
  a->max_winners = max_winners;
  if (max_winners > 0) {
    a->winners = calloc(max_winners, sizeof *a->winners);
    if (a->winners == NULL)
      return WAVE_ENOMEM;
  }
  return 0;
}

void wv_hash_acc_add(wv_hash_acc *a, uint64_t nonce, const uint64_t *out,
                     uint64_t count)
{
  a->fingerprint = wv_fnv1a64_u64(a->fingerprint, out, (size_t)count);
  for (uint64_t i = 0; i < count; i++) {
    uint64_t o = out[i];
    /* Outputs arrive in nonce order, so a strict < keeps the lowest nonce
     * among equal outputs; the first output of a job always sets best. */
    if (o < a->best_output || a->hashes + i == 0) {
      a->best_output = o;
      a->best_nonce = nonce + i;
    }
    if (o < a->target) {
      a->winner_count++;
      if (a->n_winners < a->max_winners) {
        a->winners[a->n_winners].nonce = nonce + i;
        a->winners[a->n_winners].output = o;
        a->n_winners++;
      }
    }
  }
  a->hashes += count;
}

void wv_hash_acc_fini(wv_hash_acc *a)
{
  free(a->winners);
  a->winners = NULL;
  a->n_winners = a->max_winners = 0;
}

/* ---- batches (the fold itself: core/hashmerge.c) ------------------------- */

int wv_hash_run_batch(const wv_backend *be, wv_device *dev, const wv_pack *p,
                      wv_hash_batch *b, uint64_t *scratch, wave_error *err)
{
  if (be->hash_batch != NULL)
    return be->hash_batch(dev, p, b, err);
  if (be->hash == NULL)
    return wv_seterr(err, WAVE_EUNSUPPORTED, "backend %s has no hash jobs",
                     be->name);
  uint64_t *out = b->outputs != NULL ? b->outputs : scratch;
  int rv = be->hash(dev, p, b->nonce, b->count, out, err);
  if (rv == 0)
    wv_hash_fold(b, out);
  return rv;
}

/* ---- self-check and verification --------------------------------------- */

static int hh_check_fail(char *detail, size_t len, wave_error *err,
                         const wv_pack *p, const char *what)
{
  if (detail != NULL && len > 0)
    snprintf(detail, len, "%s", what);
  return wv_seterr(err, WAVE_ESELFCHECK, "pack %s: %s", p->name, what);
}

static int hh_compare(const wv_pack *p, const char *label, uint64_t nonce,
                      const uint64_t *got, const uint64_t *want, size_t n,
                      char *detail, size_t len, wave_error *err)
{
  for (size_t i = 0; i < n; i++)
    if (got[i] != want[i]) {
      char what[200];
      snprintf(what, sizeof what,
               "%s: nonce %llu: output %016llx, known answer %016llx", label,
               (unsigned long long)(nonce + i), (unsigned long long)got[i],
               (unsigned long long)want[i]);
      return hh_check_fail(detail, len, err, p, what);
    }
  return 0;
}

int wv_pack_selfcheck(const wv_backend *b, wv_device *dev, const wv_pack *p,
                      char *detail, size_t detail_len, wave_error *err)
{
  char what[200];
  int rv;
  if (detail != NULL && detail_len > 0)
    detail[0] = '\0';
  if (b->hash == NULL)
    return wv_seterr(err, WAVE_EUNSUPPORTED, "backend %s has no hash jobs",
                     b->name);
  if (!p->has_known)
    return hh_check_fail(detail, detail_len, err, p, "no known answers");
  if (!p->closed) {
    const uint64_t *cache;
    if ((rv = wv_pack_cache_get(p, &cache, err)) != 0)
      return rv;
    uint64_t h = wv_fnv1a64_u64(WV_FNV_OFFSET, cache, (size_t)p->cache_items);
    if (h != p->cache_fnv) {
      snprintf(what, sizeof what, "cache fingerprint %016llx, known %016llx",
               (unsigned long long)h, (unsigned long long)p->cache_fnv);
      return hh_check_fail(detail, detail_len, err, p, what);
    }
  }
  if (b->hash_prepare != NULL && (rv = b->hash_prepare(dev, p, err)) != 0) {
    if (detail != NULL && detail_len > 0)
      snprintf(detail, detail_len, "prepare: %s",
               err ? err->message : wave_strerror(rv));
    return rv;
  }
  uint64_t got[WV_LANES];
  for (size_t v = 0; v < p->n_vectors; v++) {
    const wv_pack_vector *vec = &p->vectors[v];
    if ((rv = b->hash(dev, p, vec->nonce, WV_LANES, got, err)) != 0)
      return rv;
    if ((rv = hh_compare(p, "vector", vec->nonce, got, vec->outputs,
                         WV_LANES, detail, detail_len, err)) != 0)
      return rv;
  }
  /* A partial unit: lanes 3..23 of the first vector's unit alone. */
  const wv_pack_vector *v0 = &p->vectors[0];
  if ((rv = b->hash(dev, p, v0->nonce + 3, 21, got, err)) != 0)
    return rv;
  if ((rv = hh_compare(p, "partial unit", v0->nonce + 3, got,
                       v0->outputs + 3, 21, detail, detail_len, err)) != 0)
    return rv;

  const uint64_t n = 1ull << WV_CHECK_BATCH_LOG2;
  uint64_t *out = malloc(n * sizeof *out);
  if (out == NULL)
    return wv_seterr(err, WAVE_ENOMEM, "self-check batch");
  rv = b->hash(dev, p, 0, n, out, err);
  uint64_t h = wv_fnv1a64_u64(WV_FNV_OFFSET, out, (size_t)n);
  free(out);
  if (rv != 0)
    return rv;
  if (h != p->batch_fnv) {
    snprintf(what, sizeof what,
             "batch [0, 2^%u) fingerprint %016llx, known %016llx",
             WV_CHECK_BATCH_LOG2, (unsigned long long)h,
             (unsigned long long)p->batch_fnv);
    return hh_check_fail(detail, detail_len, err, p, what);
  }
  if (detail != NULL && detail_len > 0)
    snprintf(detail, detail_len, "ok: %s%zu vectors, partial unit, batch "
             "%016llx", p->closed ? "" : "cache, ", p->n_vectors,
             (unsigned long long)h);
  return 0;
}

int wv_hash_verify(const wv_pack *p, uint64_t nonce, uint64_t *output,
                   wave_error *err)
{
  wv_hash_mem m = {.pack = p};
  int rv = wv_pack_cache_get(p, &m.cache, err);
  if (rv != 0)
    return rv;
  uint64_t out[WV_LANES];
  wv_ref_unit(&m, nonce / WV_LANES, out);
  *output = out[nonce % WV_LANES];
  return 0;
}
