/* fleet_merge.c - the fleet coordinator's exact merges (fleet_merge.h).
 *
 * Reductions.  A piece is a run of 256^k rows of one chunk, starting at a
 * multiple of 256^k rows from the chunk's start (the last piece of a chunk
 * may be shorter).  Its daemon answers the piece's own float-sum tree,
 * which is exactly the chunk's level-k partial for those rows: the piece's
 * levels 1..k are the chunk's levels 1..k restricted to it, and a shorter
 * last piece stops once one value is left, which equals running the
 * remaining levels over one padded value (docs/reduction.md, "running the
 * n == 1 level anyway is harmless").  Two answers are not the tree's
 * value and are mapped back: a piece whose rows are all masked out is
 * answered +0.0 (count 0) but its tree value is -0.0, and a NaN comes back
 * canonicalised (a NaN anywhere makes the job NaN, and the job's NaN is
 * canonicalised too, so the payload never matters).  The coordinator then
 * runs the chunk's upper levels over its pieces' values and the chunk
 * level over the chunk values, skipping empty chunks as the tree does.
 *
 * Float min/max/extent ignore non-finite rows and answer +0.0 when no
 * selected row is finite, so a piece's +0.0 is either a real +0.0 or
 * "nothing": the piece carries `finite` to tell them apart.  Integer ops
 * are associative and commutative; pieces selecting no row are skipped
 * (an `and` over nothing answers 0, which is not its identity).
 *
 * Compiled with -ffp-contract=off: every float operation is one binary32
 * addition.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "client/fleet_merge.h"
#include "core/base.h"
#include "wave/fleet.h"

#define FM_GROUP 256u
#define FM_FNV_OFFSET 0xcbf29ce484222325ull  /* FNV-1a-64, docs/hash.md */
#define FM_FNV_PRIME 0x100000001b3ull

static float fm_f32(uint32_t b)
{
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
}

static uint32_t fm_bits(float f)
{
  uint32_t b;
  memcpy(&b, &f, sizeof b);
  return b;
}

/* docs/reduction.md's order key: finite floats as unsigned integers. */
static uint32_t fm_key(uint32_t x)
{
  return x ^ ((x >> 31) ? 0xffffffffu : 0x80000000u);
}

static float fm_group(float v[FM_GROUP])
{
  for (unsigned h = FM_GROUP / 2; h >= 1; h /= 2)
    for (unsigned i = 0; i < h; i++)
      v[i] = v[i] + v[i + h];
  return v[0];
}

float wv_fleet_f32_levels(float *a, size_t n)
{
  while (n > 1) {
    size_t m = (n + FM_GROUP - 1) / FM_GROUP;
    for (size_t g = 0; g < m; g++) {
      float v[FM_GROUP];
      for (size_t j = 0; j < FM_GROUP; j++) {
        size_t k = g * FM_GROUP + j;
        v[j] = k < n ? a[k] : -0.0f;
      }
      a[g] = fm_group(v);
    }
    n = m;
  }
  return a[0];
}

int wv_fleet_any_finite(const uint32_t *data, uint64_t rows,
                        const wave_chunk *mask, size_t n_mask)
{
  size_t mc = 0;
  uint64_t mrow = 0;  /* row inside mask chunk mc */
  for (uint64_t i = 0; i < rows; i++) {
    int sel = 1;
    if (mask != NULL) {
      while (mc < n_mask && mrow >= mask[mc].bytes / 4) {
        mc++;
        mrow = 0;
      }
      if (mc == n_mask)
        return 0;  /* cannot happen for a validated job */
      uint32_t m;
      memcpy(&m, (const unsigned char *)mask[mc].data + 4 * mrow, 4);
      mrow++;
      sel = m != 0;
    }
    uint32_t x;
    memcpy(&x, (const unsigned char *)data + 4 * i, 4);
    if (sel && isfinite(fm_f32(x)))
      return 1;
  }
  return 0;
}

static int fm_float_sum(const wv_fleet_rpart *p, size_t n, uint64_t count,
                        wave_reduce_result *res, wave_error *err)
{
  res->bits[0] = 0;
  if (count == 0 || n == 0)
    return 0;  /* empty, or every row masked out: +0.0 */
  /* One buffer: the pieces' values, each chunk's run folded in place by
   * its upper levels, its value then moved down to a[chunks] (chunks <= i,
   * so nothing unread is overwritten) for the chunk level. */
  float *a = malloc(n * sizeof *a);
  if (a == NULL)
    return wv_seterr(err, WAVE_ENOMEM, "%zu piece values", n);
  for (size_t k = 0; k < n; k++)
    a[k] = p[k].count == 0 ? -0.0f : fm_f32(p[k].bits[0]);
  size_t chunks = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && p[j].chunk == p[i].chunk)
      j++;
    a[chunks++] = wv_fleet_f32_levels(a + i, j - i);
    i = j;
  }
  float s = wv_fleet_f32_levels(a, chunks);
  free(a);
  res->bits[0] = isnan(s) ? 0x7fc00000u : fm_bits(s);
  return 0;
}

int wv_fleet_reduce_merge(wave_dtype dt, wave_op op,
                          const wv_fleet_rpart *p, size_t n,
                          wave_reduce_result *res, wave_error *err)
{
  uint64_t count = 0;
  for (size_t i = 0; i < n; i++)
    count += p[i].count;
  res->dtype = dt;
  res->op = op;
  res->n_values = op == WAVE_EXTENT ? 2 : 1;
  res->bits[0] = res->bits[1] = 0;
  res->count = count;
  if (dt == WAVE_F32 && op == WAVE_SUM)
    return fm_float_sum(p, n, count, res, err);
  int have = 0;
  uint32_t lo = 0, hi = 0, acc = 0;
  for (size_t i = 0; i < n; i++) {
    if (p[i].count == 0 || (dt == WAVE_F32 && !p[i].finite))
      continue;
    uint32_t a = p[i].bits[0];
    uint32_t b = op == WAVE_EXTENT ? p[i].bits[1] : a;
    if (!have) {
      lo = a, hi = b, acc = a, have = 1;
      continue;
    }
    switch (op) {
    case WAVE_SUM: acc += a; break;
    case WAVE_AND: acc &= a; break;
    case WAVE_OR: acc |= a; break;
    case WAVE_XOR: acc ^= a; break;
    default:
      if (dt == WAVE_F32) {
        if (fm_key(a) < fm_key(lo)) lo = a;
        if (fm_key(b) > fm_key(hi)) hi = b;
      } else if (dt == WAVE_S32) {
        if ((int32_t)a < (int32_t)lo) lo = a;
        if ((int32_t)b > (int32_t)hi) hi = b;
      } else {
        if (a < lo) lo = a;
        if (b > hi) hi = b;
      }
    }
  }
  if (!have)
    return 0;  /* nothing selected (float: nothing finite): zeros */
  switch (op) {
  case WAVE_MIN: res->bits[0] = lo; break;
  case WAVE_MAX: res->bits[0] = hi; break;
  case WAVE_EXTENT: res->bits[0] = lo; res->bits[1] = hi; break;
  default: res->bits[0] = acc; break;
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

int wv_fleet_hash_merge(const wv_fleet_hpart *p, size_t n,
                        uint32_t max_winners, int want_segments,
                        wave_fleet_hash_result *res, wave_error *err)
{
  uint64_t nseg = 0, fp = FM_FNV_OFFSET, wc = 0, hashes = 0;
  for (size_t i = 0; i < n; i++) {
    nseg += p[i].n_segments;
    wc += p[i].winner_count;
    hashes += p[i].count;
  }
  res->segments = NULL;
  res->winners = NULL;
  res->n_winners = 0;
  if (want_segments && nseg > 0 &&
      (res->segments = malloc(nseg * sizeof *res->segments)) == NULL)
    return wv_seterr(err, WAVE_ENOMEM, "%llu segment fingerprints",
                     (unsigned long long)nseg);
  if (max_winners > 0 &&
      (res->winners = calloc(max_winners, sizeof *res->winners)) == NULL) {
    free(res->segments);
    res->segments = NULL;
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  }
  uint64_t k = 0;
  int have_best = 0;
  for (size_t i = 0; i < n; i++) {
    for (uint64_t j = 0; j < p[i].n_segments; j++) {
      uint64_t v = p[i].segments[j];
      for (unsigned b = 0; b < 8; b++) {  /* 8 little-endian bytes */
        fp ^= (v >> (8 * b)) & 0xff;
        fp *= FM_FNV_PRIME;
      }
      if (res->segments)
        res->segments[k++] = v;
    }
    for (size_t j = 0; j < p[i].n_winners && res->n_winners < max_winners;
         j++)
      res->winners[res->n_winners++] = p[i].winners[j];
    if (p[i].count > 0 &&
        (!have_best || p[i].best_output < res->best_output ||
         (p[i].best_output == res->best_output &&
          p[i].best_nonce < res->best_nonce))) {
      res->best_output = p[i].best_output;
      res->best_nonce = p[i].best_nonce;
      have_best = 1;
    }
  }
  res->job_fingerprint = fp;
  res->segment_count = nseg;
  res->winner_count = wc;
  res->hashes = hashes;
  return 0;
}
