/* fleet_merge.c - the fleet coordinator's exact merges (fleet_merge.h).
 *
 * Reductions.  A piece is a run of 256^k rows of one chunk, starting at a
 * multiple of 256^k rows from the chunk's start (the last piece of a chunk
 * may be shorter): a partial of docs/reduction.md "Partials", merged by
 * core/partial.c, the same code the daemon's file reader uses; the 64-bit
 * values travel whole in the partials' bits, and an argmin/argmax piece
 * carries the job's row of its first row (offset) for a global index.  Float
 * min/max/extent answers of +0.0 are ambiguous ("no finite row"): the
 * piece carries `finite`, from the daemon (ReduceResult.finite) or, from
 * an older daemon, from wv_fleet_any_finite over the rows the coordinator
 * sent.  An fsum piece carries the daemon's exact partial (ReduceResult.
 * exact), which the merge adds as integers: the merged answer and its
 * exact partial are the whole job's, whatever the cut.
 *
 * Hash jobs.  Pieces of whole segments, in nonce order, merged by
 * core/hashmerge.c, the same code that merges a daemon's pieces over its
 * devices.  The cuts (even pieces, guided pieces) are the coordinator's
 * own.
 */
#include <stdlib.h>
#include <string.h>

#include "client/fleet_merge.h"
#include "core/base.h"
#include "core/hashmerge.h"
#include "core/reduce.h"
#include "core/xsum.h"
#include "wave/fleet.h"

int wv_fleet_any_finite(wave_dtype dt, const void *data, uint64_t rows,
                        const wave_chunk *mask, size_t n_mask)
{
  /* one job per mask chunk, over the input rows it covers */
  size_t n = mask != NULL ? n_mask : 1;
  uint64_t row = 0;
  unsigned z = wv_dtype_size(dt);
  for (size_t m = 0; m < n && row < rows; m++) {
    uint64_t k = mask != NULL ? mask[m].bytes / 4 : rows;
    if (k > rows - row)
      k = rows - row;
    wv_span in = {(const unsigned char *)data + z * row, k};
    wv_span mk = {mask ? mask[m].data : NULL, k};
    wv_reduce_job j = {.dtype = dt, .op = WAVE_MIN, .input = &in,
                       .n_input = 1, .mask = &mk, .n_mask = 1,
                       .has_mask = mask != NULL, .rows = k};
    if (k > 0 && wv_reduce_any_finite(&j))
      return 1;
    row += k;
  }
  return 0;
}

int wv_fleet_reduce_merge(wave_dtype dt, wave_op op, const wv_partial *p,
                          size_t n, wave_reduce_result *res,
                          wave_error *err)
{
  wv_reduce_out o;
  int rc = wv_partial_merge(dt, op, p, n, &o, NULL, err);
  if (rc != 0)
    return rc;
  res->dtype = dt;
  res->op = op;
  res->n_values = o.n_values;
  res->bits[0] = o.bits[0];
  res->bits[1] = o.bits[1];
  res->index = o.index;  /* argmin/argmax: global (each piece's offset) */
  res->count = o.count;
  res->exact_bytes = res->exact_flags = 0;
  if (op == WAVE_FSUM) {  /* the merged exact partial, as a daemon's */
    wv_xsum_pack(&o.xsum, res->exact);
    res->exact_bytes = (uint32_t)wv_xsum_wire_bytes(dt);
    res->exact_flags = o.xsum.flags;
  }
  return 0;
}

/* ---- hash jobs ---------------------------------------------------------- */

/* Pieces start at the job's nonce and then at multiples of the piece size
 * (a whole number of segments), counted in absolute nonce space, so no
 * segment is ever split between two pieces. */
static uint64_t fm_piece_size(unsigned s, uint64_t piece)
{
  uint64_t seg = 1ull << s;
  if (piece < seg)
    return seg;
  if (piece > UINT64_MAX - seg)
    return 1ull << 63;
  return (piece + seg - 1) / seg * seg;
}

uint64_t wv_fleet_hash_pieces(uint64_t nonce, uint64_t count, unsigned s,
                              uint64_t piece)
{
  uint64_t ps = fm_piece_size(s, piece);
  uint64_t last = nonce + (count - 1);
  return last / ps - nonce / ps + 1;
}

void wv_fleet_hash_piece(uint64_t nonce, uint64_t count, unsigned s,
                         uint64_t piece, uint64_t i, uint64_t *p_nonce,
                         uint64_t *p_count)
{
  uint64_t ps = fm_piece_size(s, piece);
  uint64_t last = nonce + (count - 1);
  uint64_t first_block = nonce / ps;
  uint64_t a = i == 0 ? nonce : (first_block + i) * ps;
  uint64_t b_last = (first_block + i) * ps + (ps - 1); /* may exceed last */
  if (b_last > last || b_last < a)
    b_last = last;
  *p_nonce = a;
  *p_count = b_last - a + 1;
}

/* Counted in segments: segment k of the job is absolute segment
 * (nonce >> s) + k; a piece is the segments [k, k + len), clipped to the
 * job's first and last nonce.  Segment indices stay below 2^59, so none
 * of the arithmetic wraps, also for a job that ends at 2^64 - 1. */
uint64_t wv_fleet_hash_guided(uint64_t nonce, uint64_t count, unsigned s,
                              size_t daemons, uint64_t *nonces,
                              uint64_t *counts)
{
  uint64_t last = nonce + (count - 1);
  uint64_t first_seg = nonce >> s;
  uint64_t nseg = (last >> s) - first_seg + 1;
  uint64_t d = daemons ? (uint64_t)daemons : 1;
  uint64_t least = nseg / (128 * d);
  if (least == 0)
    least = 1;
  uint64_t k = 0, n = 0;
  while (k < nseg) {
    uint64_t len = (nseg - k) / (4 * d);
    if (len < least)
      len = least;
    if (len > nseg - k)
      len = nseg - k;
    uint64_t a = k == 0 ? nonce : (first_seg + k) << s;
    uint64_t b = ((first_seg + k + len - 1) << s) | ((1ull << s) - 1);
    if (b > last)
      b = last;
    if (nonces != NULL)
      nonces[n] = a;
    if (counts != NULL)
      counts[n] = b - a + 1;
    k += len;
    n++;
  }
  return n;
}

int wv_fleet_hash_merge(const wv_fleet_hpart *p, size_t n, unsigned s,
                        uint32_t max_winners, int want_segments,
                        wave_fleet_hash_result *res, wave_error *err)
{
  uint64_t nseg = 0;
  for (size_t i = 0; i < n; i++)
    nseg += p[i].n_segments;
  res->segments = NULL;
  res->winners = NULL;
  res->n_winners = 0;
  wv_hash_winner *win = NULL, *tmp = NULL;
  if (want_segments && nseg > 0 &&
      (res->segments = malloc(nseg * sizeof *res->segments)) == NULL)
    return wv_seterr(err, WAVE_ENOMEM, "%llu segment fingerprints",
                     (unsigned long long)nseg);
  if (max_winners > 0 &&
      ((res->winners = calloc(max_winners, sizeof *res->winners)) == NULL ||
       (win = calloc(max_winners, sizeof *win)) == NULL ||
       (tmp = calloc(max_winners, sizeof *tmp)) == NULL)) {
    free(res->segments);
    free(res->winners);
    free(win);
    res->segments = NULL;
    res->winners = NULL;
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  }
  wv_hash_merge m;
  wv_hash_merge_init(&m, n > 0 ? p[0].nonce : 0, s, max_winners, win, tmp,
                     res->segments);
  for (size_t i = 0; i < n; i++) {
    wv_hash_batch b = {
      .nonce = p[i].nonce, .count = p[i].count, .seg_log2 = s,
      .seg_fp = p[i].segments, .winners = p[i].winners,
      .n_winners = p[i].n_winners, .winner_count = p[i].winner_count,
      .best_nonce = p[i].best_nonce, .best_output = p[i].best_output};
    wv_hash_merge_add(&m, &b);
    wv_hash_merge_fold(&m, p[i].segments, (size_t)p[i].n_segments,
                       p[i].count);
  }
  for (size_t w = 0; w < m.n_winners; w++)
    res->winners[w] = (wave_winner){m.winners[w].nonce, m.winners[w].output};
  res->n_winners = m.n_winners;
  res->best_nonce = m.best_nonce;
  res->best_output = m.best_output;
  res->job_fingerprint = m.fingerprint;
  res->segment_count = nseg;
  res->winner_count = m.winner_count;
  res->hashes = m.hashes;
  free(win);
  free(tmp);
  return 0;
}
