/* hash.h - the lottery hash as the rest of wavedd sees it (docs/hash.md is
 * the normative spec; pack.h has the pack's internals for backends).
 *
 * Who calls what:
 *  - the daemon loads the packs (wv_packset_load), runs each device's
 *    known-answer self-check at start-up (wv_pack_selfcheck), splits a hash
 *    job into pieces of whole segments, runs each as a batch
 *    (wv_hash_run_batch: the device fold, or the host fold wv_hash_fold),
 *    merges the pieces (core/hashmerge.h), and re-verifies every winner a
 *    GPU reports with wv_hash_verify() before replying;
 *  - backends read the pack (pack.h) to build their kernels' inputs.
 */
#ifndef WV_HASH_H
#define WV_HASH_H

#include <stddef.h>
#include <stdint.h>

#include "core/hashmerge.h"
#include "core/segments.h"
#include "workers/worker.h"

#define WV_UNIT_LANES 32u

typedef struct wv_pack wv_pack;
typedef struct wv_packset wv_packset;

/* Load every *.yaml pack in dir.  A malformed pack is an error naming
 * file:line:column (WAVE_EPACKFILE); the whole set is rejected. */
int wv_packset_load(const char *dir, wv_packset **out, wave_error *err);
/* Load one pack file (tests, tools). */
int wv_pack_load_file(const char *path, wv_pack **out, wave_error *err);
void wv_pack_free(wv_pack *p);
void wv_packset_free(wv_packset *s);
size_t wv_packset_count(const wv_packset *s);
const wv_pack *wv_packset_at(const wv_packset *s, size_t i);
const wv_pack *wv_packset_find(const wv_packset *s, const char *name);

const char *wv_pack_name(const wv_pack *p);
unsigned wv_pack_version(const wv_pack *p);
uint64_t wv_pack_dataset_bytes(const wv_pack *p);  /* 0: closed form */
const char *wv_pack_description(const wv_pack *p);
/* The same pack: every field its hash, dataset and known answers are made
 * of (pack.h), not the file it came from (path).  A reload keeps serving
 * such a pack as it is (daemon/reload.c). */
int wv_pack_equal(const wv_pack *p, const wv_pack *q);

/* The job accumulator: fold outputs of consecutive nonces, in nonce order,
 * into fingerprint, winners (output < target; the first max_winners kept,
 * lowest nonces first), winner count and best (smallest output, ties to the
 * lowest nonce). */
typedef struct wv_hash_acc {
  uint64_t target;
  uint64_t fingerprint;
  uint64_t hashes;
  uint64_t winner_count;
  uint64_t best_nonce, best_output;
  size_t n_winners, max_winners;
  wv_hash_winner *winners;        /* max_winners slots, owned */
} wv_hash_acc;

int wv_hash_acc_init(wv_hash_acc *a, uint64_t target, size_t max_winners);
void wv_hash_acc_add(wv_hash_acc *a, uint64_t nonce, const uint64_t *out,
                     uint64_t count);
void wv_hash_acc_fini(wv_hash_acc *a);

/* Segments, wv_hash_batch and the host fold wv_hash_fold: core/segments.h
 * and core/hashmerge.h (docs/hash.md "Segments"). */

/* Run one batch on a device: backend->hash_batch when the backend has it,
 * else backend->hash into b->outputs (or scratch, b->count slots, when
 * b->outputs is NULL) followed by wv_hash_fold(). */
int wv_hash_run_batch(const wv_backend *be, wv_device *dev, const wv_pack *p,
                      wv_hash_batch *b, uint64_t *scratch, wave_error *err);

/* Run pack p's known answers (every vector, then the batch fingerprint of
 * nonces [0, 2^13)) through backend b on device dev.  0 when all match;
 * WAVE_ESELFCHECK with what differed in detail/err otherwise. */
int wv_pack_selfcheck(const wv_backend *b, wv_device *dev, const wv_pack *p,
                      char *detail, size_t detail_len, wave_error *err);

/* The CPU's own answer for one nonce (evaluates its 32-lane unit from the
 * pack's cache, without the full dataset): used to re-verify winners. */
int wv_hash_verify(const wv_pack *p, uint64_t nonce, uint64_t *output,
                   wave_error *err);

#endif
