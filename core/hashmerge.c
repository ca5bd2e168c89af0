/* hashmerge.c - the host fold of a hash batch and the merge of a job's
 * pieces (hashmerge.h, docs/hash.md "Segments"). */
#include <string.h>

#include "core/hashmerge.h"

void wv_hash_fold(wv_hash_batch *b, const uint64_t *out)
{
  const unsigned s = b->seg_log2;
  uint64_t i = 0, k = 0;
  b->n_winners = 0;
  b->winner_count = 0;
  b->best_output = UINT64_MAX;
  b->best_nonce = b->nonce;
  while (i < b->count) {
    /* The segment of nonce b->nonce + i ends at the next multiple of 2^s
     * (or at the batch's end); computed without overflow near 2^64. */
    uint64_t n = b->nonce + i;
    uint64_t left = (((n >> s) + 1) << s) - n;  /* 0 when it wraps to 2^64 */
    uint64_t len = b->count - i;
    if (left != 0 && left < len)
      len = left;
    b->seg_fp[k++] = wv_fnv1a64_u64(WV_FNV_OFFSET, out + i, (size_t)len);
    i += len;
  }
  for (i = 0; i < b->count; i++) {
    uint64_t o = out[i];
    if (o < b->best_output || i == 0) {  /* in nonce order: ties keep the
                                            lowest nonce */
      b->best_output = o;
      b->best_nonce = b->nonce + i;
    }
    if (o < b->target) {
      if (b->n_winners < b->max_winners) {
        b->winners[b->n_winners].nonce = b->nonce + i;
        b->winners[b->n_winners].output = o;
        b->n_winners++;
      }
      b->winner_count++;
    }
  }
}

void wv_hash_merge_init(wv_hash_merge *m, uint64_t nonce, unsigned seg_log2,
                        size_t max_winners, wv_hash_winner *winners,
                        wv_hash_winner *tmp, uint64_t *segments)
{
  memset(m, 0, sizeof *m);
  m->nonce = nonce;
  m->seg_log2 = seg_log2;
  m->max_winners = max_winners;
  m->winners = winners;
  m->tmp = tmp;
  m->segments = segments;
  m->best_nonce = nonce;
  m->best_output = UINT64_MAX;
  m->fingerprint = WV_FNV_OFFSET;
}

void wv_hash_merge_add(wv_hash_merge *m, const wv_hash_batch *b)
{
  /* winners: the lowest-nonce max_winners of both sorted lists */
  size_t a = 0, c = 0, n = 0;
  while (n < m->max_winners && (a < m->n_winners || c < b->n_winners)) {
    if (c == b->n_winners ||
        (a < m->n_winners && m->winners[a].nonce < b->winners[c].nonce))
      m->tmp[n++] = m->winners[a++];
    else
      m->tmp[n++] = b->winners[c++];
  }
  if (n > 0)
    memcpy(m->winners, m->tmp, n * sizeof *m->winners);
  m->n_winners = n;
  m->winner_count += b->winner_count;
  if (b->count > 0 && wv_hash_merge_better(m, b->best_output,
                                           b->best_nonce)) {
    m->best_output = b->best_output;
    m->best_nonce = b->best_nonce;
    m->have_best = 1;
  }
  m->hashes += b->count;
  if (m->segments != NULL && b->count > 0) {
    const unsigned s = m->seg_log2;
    uint64_t k = (b->nonce >> s) - (m->nonce >> s);
    memcpy(m->segments + k, b->seg_fp,
           (size_t)wv_seg_count(b->nonce, b->count, s) * sizeof *b->seg_fp);
  }
}

void wv_hash_merge_fold(wv_hash_merge *m, const uint64_t *seg, size_t n_seg,
                        uint64_t count)
{
  m->fingerprint = wv_fnv1a64_u64(m->fingerprint, seg, n_seg);
  m->folded += count;
}

uint64_t wv_hash_merge_cut(const wv_hash_merge *m)
{
  if (m->n_winners < m->max_winners)
    return UINT64_MAX;
  return m->n_winners > 0 ? m->winners[m->n_winners - 1].nonce : 0;
}

int wv_hash_merge_better(const wv_hash_merge *m, uint64_t output,
                         uint64_t nonce)
{
  return !m->have_best ||
         wv_hash_beats(output, nonce, m->best_output, m->best_nonce);
}
