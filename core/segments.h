/* segments.h - the fingerprints of hash jobs as every program sees them
 * (docs/hash.md "Segments"): FNV-1a-64 and its constants (the one place
 * they are written), segment counts, and one folded batch of a hash job
 * (wv_hash_batch, wv_hash_winner).  Plain data; no pack, no device, so the
 * client, the daemon and every backend share it.  The fold and the merge
 * over these types are core/hashmerge.h.
 */
#ifndef WV_SEGMENTS_H
#define WV_SEGMENTS_H

#include <stddef.h>
#include <stdint.h>

#define WV_FNV_OFFSET 0xcbf29ce484222325ull  /* FNV-1a-64, docs/hash.md */
#define WV_FNV_PRIME 0x100000001b3ull

/* FNV-1a-64 over n bytes, continuing from h (start with WV_FNV_OFFSET). */
static inline uint64_t wv_fnv1a64(uint64_t h, const void *data, size_t n)
{
  const unsigned char *b = (const unsigned char *)data;
  for (size_t i = 0; i < n; i++)
    h = (h ^ b[i]) * WV_FNV_PRIME;
  return h;
}

/* FNV-1a-64 over 64-bit values, each as 8 little-endian bytes (any host
 * order), continuing from h: the segment and job fingerprint step. */
static inline uint64_t wv_fnv1a64_u64(uint64_t h, const uint64_t *v,
                                      size_t n)
{
  for (size_t i = 0; i < n; i++)
    for (unsigned k = 0; k < 8; k++)
      h = (h ^ ((v[i] >> (8 * k)) & 0xff)) * WV_FNV_PRIME;
  return h;
}

/* Nonce space is cut at absolute multiples of 2^s.  A job [n0, n0 + count)
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

typedef struct wv_hash_winner {
  uint64_t nonce, output;
} wv_hash_winner;

/* One batch of a hash job, reduced on the device: what crosses back to the
 * host is a segment fingerprint per touched segment, the batch's winners,
 * its winner count and its best, and the raw outputs only when asked.  The
 * same struct is the answer of one piece of a job when pieces merge
 * (core/hashmerge.h). */
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

#endif
