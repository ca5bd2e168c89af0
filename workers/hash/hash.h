/* hash.h - the lottery hash as the rest of wavedd sees it (docs/hash.md is
 * the normative spec; pack.h has the pack's internals for backends).
 *
 * Who calls what:
 *  - the daemon loads the packs (wv_packset_load), runs each device's
 *    known-answer self-check at start-up (wv_pack_selfcheck), splits a hash
 *    job into batches for backend->hash(), folds each batch into a
 *    wv_hash_acc in nonce order, and re-verifies every winner a GPU reports
 *    with wv_hash_verify() before replying;
 *  - backends read the pack (pack.h) to build their kernels' inputs.
 */
#ifndef WV_HASH_H
#define WV_HASH_H

#include <stddef.h>
#include <stdint.h>

#include "workers/worker.h"

#define WV_UNIT_LANES 32u
#define WV_FNV_OFFSET 0xcbf29ce484222325ull
#define WV_FNV_PRIME 0x100000001b3ull

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

/* FNV-1a-64 over n bytes, continuing from h (start with WV_FNV_OFFSET). */
uint64_t wv_fnv1a64(uint64_t h, const void *data, size_t n);

/* The job accumulator: fold outputs of consecutive nonces, in nonce order,
 * into fingerprint, winners (output < target; the first max_winners kept,
 * lowest nonces first), winner count and best (smallest output, ties to the
 * lowest nonce). */
typedef struct wv_hash_winner {
  uint64_t nonce, output;
} wv_hash_winner;

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

/* ---- segments (docs/hash.md "Segments") --------------------------------
 * Nonce space is cut at absolute multiples of 2^s.  A job [n0, n0 + count)
 * touches segments n0 >> s .. (n0 + count - 1) >> s; the fingerprint of
 * each is FNV-1a-64 over the outputs of the job's nonces inside it, in
 * nonce order (so a job's first and last segment may be partial).  The job
 * fingerprint is FNV-1a-64 over its segment fingerprints, in nonce order,
 * each as 8 little-endian bytes.  Segment [0, 2^13) of any job starting at
 * 0 is the pack's batch_fnv. */
#define WV_SEG_LOG2_DEFAULT 13u
#define WV_SEG_LOG2_MIN 5u       /* one unit */
#define WV_SEG_LOG2_MAX 20u

/* Number of segments of 2^s that [nonce, nonce + count) touches (count >= 1,
 * nonce + count <= 2^64). */
static inline uint64_t wv_seg_count(uint64_t nonce, uint64_t count,
                                    unsigned s)
{
  return ((nonce + (count - 1)) >> s) - (nonce >> s) + 1;
}

/* One batch of a hash job, reduced on the device: what crosses back to the
 * host is a segment fingerprint per touched segment, the batch's winners,
 * its winner count and its best, and the raw outputs only when asked. */
typedef struct wv_hash_batch {
  /* in */
  uint64_t nonce, count;     /* count >= 1, nonce + count <= 2^64 */
  unsigned seg_log2;         /* WV_SEG_LOG2_MIN .. WV_SEG_LOG2_MAX */
  uint64_t target;           /* output < target wins; 0: no winners */
  size_t max_winners;        /* slots in winners[] */
  uint64_t *outputs;         /* NULL, or count slots to receive outputs */
  uint64_t *seg_fp;          /* wv_seg_count(nonce, count, seg_log2) slots */
  wv_hash_winner *winners;   /* max_winners slots (NULL when 0) */
  /* out */
  size_t n_winners;          /* lowest-nonce winners, in nonce order */
  uint64_t winner_count;     /* exact */
  uint64_t best_nonce, best_output;  /* min output, ties to lowest nonce */
} wv_hash_batch;

/* The host fold: fill b's outputs (seg_fp, winners, counts, best) from the
 * batch's outputs out[0 .. b->count-1].  Every backend's device fold must
 * give exactly these values (the conformance suite compares them). */
void wv_hash_fold(wv_hash_batch *b, const uint64_t *out);

/* Run one batch on a device: backend->hash_batch when the backend has it,
 * else backend->hash into b->outputs (or scratch, b->count slots, when
 * b->outputs is NULL) followed by wv_hash_fold(). */
int wv_hash_run_batch(const wv_backend *be, wv_device *dev, const wv_pack *p,
                      wv_hash_batch *b, uint64_t *scratch, wave_error *err);

/* FNV-1a-64 over 64-bit values, each as 8 little-endian bytes, continuing
 * from h: the segment and job fingerprint step. */
uint64_t wv_fnv1a64_u64(uint64_t h, const uint64_t *v, size_t n);

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
