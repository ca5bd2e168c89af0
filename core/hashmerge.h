/* hashmerge.h - the host fold of a hash batch and the one merge of a hash
 * job's pieces (docs/hash.md "Segments"), shared by the workers (the host
 * fold every device fold is held to), the daemon (pieces over devices) and
 * the fleet coordinator (pieces over daemons).
 *
 * A job [n0, n0 + count) cut at segment boundaries into pieces merges
 * exactly, whatever order the pieces finish in:
 *  - winners: the lowest-nonce max_winners of the union (every piece
 *    reports its own lowest max_winners, in nonce order);
 *  - winner count and hashes: sums;
 *  - best: the minimum (output, nonce);
 *  - segment fingerprints: each piece's land at their index in the job;
 *  - job fingerprint: FNV-1a-64 over the segment fingerprints in nonce
 *    order, so it is folded piece by piece in nonce order
 *    (wv_hash_merge_fold), by callers that hold early finishers back.
 */
#ifndef WV_HASHMERGE_H
#define WV_HASHMERGE_H

#include <stddef.h>
#include <stdint.h>

#include "core/segments.h"

/* The host fold: fill b's outputs (seg_fp, winners, counts, best) from the
 * batch's outputs out[0 .. b->count-1].  Every backend's device fold must
 * give exactly these values (the conformance suite compares them). */
void wv_hash_fold(wv_hash_batch *b, const uint64_t *out);

/* (output o, nonce n) is a better best than (bo, bn). */
static inline int wv_hash_beats(uint64_t o, uint64_t n, uint64_t bo,
                                uint64_t bn)
{
  return o < bo || (o == bo && n < bn);
}

typedef struct wv_hash_merge {
  uint64_t nonce;            /* the job's first nonce */
  unsigned seg_log2;
  size_t max_winners;
  wv_hash_winner *winners;   /* max_winners slots: the kept winners */
  wv_hash_winner *tmp;       /* max_winners slots of scratch */
  size_t n_winners;
  uint64_t winner_count, hashes;
  int have_best;             /* best_*: none before the first piece */
  uint64_t best_nonce, best_output;
  uint64_t *segments;        /* NULL, or one slot per segment of the job */
  uint64_t fingerprint;      /* job fingerprint over the folded prefix */
  uint64_t folded;           /* nonces folded into it */
} wv_hash_merge;

/* An empty merge of the job starting at nonce; winners and tmp have
 * max_winners slots (NULL when 0), segments NULL or the job's
 * wv_seg_count slots; all stay the caller's. */
void wv_hash_merge_init(wv_hash_merge *m, uint64_t nonce, unsigned seg_log2,
                        size_t max_winners, wv_hash_winner *winners,
                        wv_hash_winner *tmp, uint64_t *segments);

/* Merge one finished piece b of the job, in any order: its winners,
 * winner count, best, hashes, and its segment fingerprints into their
 * slots.  b->seg_fp holds wv_seg_count(b->nonce, b->count, m->seg_log2). */
void wv_hash_merge_add(wv_hash_merge *m, const wv_hash_batch *b);

/* Fold the next piece in nonce order into the job fingerprint: its n_seg
 * segment fingerprints, and its count nonces (it starts at
 * m->nonce + m->folded). */
void wv_hash_merge_fold(wv_hash_merge *m, const uint64_t *seg, size_t n_seg,
                        uint64_t count);

/* What of a piece can still change the merge: a winner at a nonce above
 * the returned cut never will (the kept set is full with lower nonces;
 * UINT64_MAX while there is room), and a best only if it beats m's. */
uint64_t wv_hash_merge_cut(const wv_hash_merge *m);
int wv_hash_merge_better(const wv_hash_merge *m, uint64_t output,
                         uint64_t nonce);

#endif
