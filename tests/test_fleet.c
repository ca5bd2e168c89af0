/* test_fleet.c - the fleet coordinator's merges (client/fleet_merge.c)
 * against the single-daemon definitions, without sockets.
 *
 * Reductions: a job is cut the way wave_fleet_reduce cuts it (runs of
 * 256^k rows per chunk, mask slices), each piece is answered by the
 * reference (what any daemon answers for a one-chunk job), the answers are
 * merged, and the bits must equal the reference over the whole job, for
 * every dtype/op, with empty chunks, all-masked chunks, NaN/inf/-0.0 rows
 * and float rows whose sum depends on the tree's order.
 *
 * Hash jobs: the outputs of a nonce range (any 64-bit values: the merge
 * never looks at how they were made) are folded as one batch by
 * wv_hash_fold, the host fold every backend must match; the same range cut
 * into fleet pieces, each folded alone, must merge to the same job
 * fingerprint, segment list, winners, winner count and best.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "client/fleet_merge.h"
#include "workers/hash/hash.h"
#include "core/reduce.h"

static uint64_t tfl_rng = 0x9e3779b97f4a7c15ull;

static uint64_t tfl_next(void)
{
  tfl_rng ^= tfl_rng << 13;
  tfl_rng ^= tfl_rng >> 7;
  tfl_rng ^= tfl_rng << 17;
  return tfl_rng;
}

/* ---- reductions --------------------------------------------------------- */

typedef struct tfl_job {
  size_t n_in, n_mask;
  uint32_t *in[8];
  uint64_t in_rows[8];
  uint32_t *mask[8];
  uint64_t mask_rows[8];
  int has_mask;
} tfl_job;

static uint32_t tfl_float_row(int kind)
{
  switch (tfl_next() % 16) {
  case 0: return 0x7fc00000u;                 /* NaN */
  case 1: return kind ? 0x7f800000u : 0x3f800000u;  /* +inf or 1 */
  case 2: return 0x80000000u;                 /* -0.0 */
  case 3: return 0x00000000u;
  case 4: return 0x33800000u;                 /* 2^-24: order matters */
  case 5: return 0x00000001u;                 /* subnormal */
  default: {
    float f = (float)((int64_t)(tfl_next() % 2000001) - 1000000) / 1024.0f;
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
  }
  }
}

/* Chunk sizes chosen to cross 256 and 65536; chunk 2 empty; chunk 3 all
 * masked out; the mask chunked on other boundaries. */
static void tfl_make(tfl_job *j, wave_dtype dt, int has_mask, int specials)
{
  static const uint64_t sizes[] = {70001, 300, 0, 513, 65536, 1, 131073};
  memset(j, 0, sizeof *j);
  j->n_in = sizeof sizes / sizeof sizes[0];
  uint64_t total = 0;
  for (size_t c = 0; c < j->n_in; c++) {
    j->in_rows[c] = sizes[c];
    j->in[c] = malloc((sizes[c] ? sizes[c] : 1) * 4);
    for (uint64_t r = 0; r < sizes[c]; r++)
      j->in[c][r] = dt == WAVE_F32 ? tfl_float_row(specials)
                                   : (uint32_t)tfl_next();
    total += sizes[c];
  }
  j->has_mask = has_mask;
  if (has_mask) {
    uint64_t cuts[] = {1000, 99999, 7, 0, 0};
    j->n_mask = 5;
    uint64_t used = 0;
    for (size_t m = 0; m < 4; m++)
      used += cuts[m];
    cuts[4] = total - used;
    uint64_t row = 0;
    uint64_t dead0 = sizes[0] + sizes[1] + sizes[2];  /* chunk 3 */
    for (size_t m = 0; m < j->n_mask; m++) {
      j->mask_rows[m] = cuts[m];
      j->mask[m] = malloc((cuts[m] ? cuts[m] : 1) * 4);
      for (uint64_t r = 0; r < cuts[m]; r++, row++)
        j->mask[m][r] = (row >= dead0 && row < dead0 + sizes[3])
                            ? 0 : (uint32_t)(tfl_next() % 3);
    }
  }
}

static void tfl_free(tfl_job *j)
{
  for (size_t c = 0; c < j->n_in; c++)
    free(j->in[c]);
  for (size_t m = 0; m < j->n_mask; m++)
    free(j->mask[m]);
}

static void tfl_ref(const wv_span *in, size_t n_in, const wv_span *mk,
                   size_t n_mk, int has_mask, uint64_t rows, wave_dtype dt,
                   wave_op op, wv_reduce_out *out)
{
  wv_reduce_job job = {.dtype = dt, .op = op, .input = in, .n_input = n_in,
                       .mask = mk, .n_mask = n_mk, .has_mask = has_mask,
                       .rows = rows};
  wave_error err = {0};
  ck_assert_int_eq(wv_reduce_validate(&job, &err), 0);
  ck_assert_msg(wv_reduce_reference(&job, out, &err) == 0, "%s", err.message);
}

/* Cut, answer each piece with the reference, merge; compare. */
static void tfl_check(const tfl_job *j, wave_dtype dt, wave_op op, uint64_t P)
{
  wv_span in[8] = {{0}}, mk[8] = {{0}};
  uint64_t rows = 0;
  for (size_t c = 0; c < j->n_in; c++) {
    in[c] = (wv_span){j->in[c], j->in_rows[c]};
    rows += j->in_rows[c];
  }
  for (size_t m = 0; m < j->n_mask; m++)
    mk[m] = (wv_span){j->mask[m], j->mask_rows[m]};
  wv_reduce_out whole;
  tfl_ref(in, j->n_in, mk, j->n_mask, j->has_mask, rows, dt, op, &whole);

  /* the whole mask flattened, to slice it per piece */
  uint32_t *flat = malloc((rows ? rows : 1) * 4);
  uint64_t at = 0;
  for (size_t m = 0; m < j->n_mask; m++)
    for (uint64_t r = 0; r < j->mask_rows[m]; r++)
      flat[at++] = j->mask[m][r];

  wv_partial parts[4096];
  size_t n = 0;
  uint64_t row0 = 0;
  for (size_t c = 0; c < j->n_in; c++) {
    for (uint64_t a = 0; a < j->in_rows[c]; a += P) {
      uint64_t r = j->in_rows[c] - a < P ? j->in_rows[c] - a : P;
      wv_span pin = {j->in[c] + a, r};
      wv_span pmk = {flat + row0 + a, r};
      wv_reduce_out o;
      tfl_ref(&pin, 1, &pmk, j->has_mask, j->has_mask, r, dt, op, &o);
      ck_assert_uint_lt(n, 4096);
      parts[n].chunk = c;
      parts[n].bits[0] = o.bits[0];
      parts[n].bits[1] = o.n_values > 1 ? o.bits[1] : 0;
      parts[n].count = o.count;
      parts[n].finite = o.count > 0;
      if (dt == WAVE_F32 && op != WAVE_SUM && o.count > 0 &&
          parts[n].bits[0] == 0 && parts[n].bits[1] == 0) {
        wave_chunk wm = {flat + row0 + a, r * 4};
        parts[n].finite = wv_fleet_any_finite(WAVE_F32, j->in[c] + a, r,
                                              j->has_mask ? &wm : NULL, 1);
      }
      n++;
    }
    row0 += j->in_rows[c];
  }
  wave_reduce_result res;
  wave_error err = {0};
  ck_assert_int_eq(wv_fleet_reduce_merge(dt, op, parts, n, &res, &err), 0);
  ck_assert_uint_eq(res.count, whole.count);
  ck_assert_uint_eq(res.n_values, whole.n_values);
  for (unsigned v = 0; v < whole.n_values; v++)
    ck_assert_msg(res.bits[v] == whole.bits[v],
                  "%s %s P=%llu mask=%d: value %u is 0x%08x, one job gives "
                  "0x%08x", wave_op_name(op), wave_dtype_name(dt),
                  (unsigned long long)P, j->has_mask, v, (unsigned)res.bits[v],
                  (unsigned)whole.bits[v]);
  free(flat);
}

START_TEST(reduce_merge_every_op)
{
  static const wave_dtype dts[] = {WAVE_U32, WAVE_S32, WAVE_F32};
  for (size_t d = 0; d < 3; d++)
    for (int op = WAVE_SUM; op <= WAVE_XOR; op++) {
      if (wave_op_check(dts[d], (wave_op)op) != 0)
        continue;
      for (int has_mask = 0; has_mask <= 1; has_mask++)
        for (int specials = 0; specials <= 1; specials++) {
          tfl_job j;
          tfl_make(&j, dts[d], has_mask, specials);
          tfl_check(&j, dts[d], (wave_op)op, 256);
          tfl_check(&j, dts[d], (wave_op)op, 65536);
          tfl_free(&j);
        }
    }
}
END_TEST

/* wv_reduce_any_finite (what a daemon tells a partial) and the
 * coordinator's own wv_fleet_any_finite agree, masked and not. */
START_TEST(any_finite)
{
  uint32_t rows[6] = {0x7fc00000u, 0x7f800000u, 0xff800000u, 0x00000000u,
                      0x7fc00001u, 0x40a00000u};
  uint32_t mask[6] = {1, 1, 1, 0, 1, 0};
  wv_span in[2] = {{rows, 3}, {rows + 3, 3}};
  wv_span mk[2] = {{mask, 2}, {mask + 2, 4}};
  wv_reduce_job job = {.dtype = WAVE_F32, .op = WAVE_MIN, .input = in,
                       .n_input = 2, .mask = mk, .n_mask = 2, .has_mask = 1,
                       .rows = 6};
  ck_assert_int_eq(wv_reduce_any_finite(&job), 0);  /* +0.0, 5.0 masked */
  wave_chunk wm[2] = {{mask, 8}, {mask + 2, 16}};
  ck_assert_int_eq(wv_fleet_any_finite(WAVE_F32, rows, 6, wm, 2), 0);
  mask[3] = 1;  /* the +0.0 row selected */
  ck_assert_int_eq(wv_reduce_any_finite(&job), 1);
  ck_assert_int_eq(wv_fleet_any_finite(WAVE_F32, rows, 6, wm, 2), 1);
  job.has_mask = 0;
  mask[3] = 0;
  ck_assert_int_eq(wv_reduce_any_finite(&job), 1);
  ck_assert_int_eq(wv_fleet_any_finite(WAVE_F32, rows, 6, NULL, 0), 1);
  ck_assert_int_eq(wv_fleet_any_finite(WAVE_F32, rows, 3, NULL, 0), 0);
}
END_TEST

/* The cases whose answer alone is ambiguous or not the tree's value. */
START_TEST(reduce_merge_edges)
{
  /* one piece all NaN/inf (min answers +0.0 with count > 0), one with 5.0:
   * the merge must ignore the first */
  wv_partial p[3] = {
      {.chunk = 0, .bits = {0, 0}, .count = 256, .finite = 0},
      {.chunk = 0, .bits = {0x40a00000u, 0}, .count = 3, .finite = 1},
      {.chunk = 1, .bits = {0, 0}, .count = 0, .finite = 0}};
  wave_reduce_result r;
  wave_error err = {0};
  ck_assert_int_eq(wv_fleet_reduce_merge(WAVE_F32, WAVE_MIN, p, 3, &r, &err), 0);
  ck_assert_uint_eq(r.bits[0], 0x40a00000u);
  ck_assert_uint_eq(r.count, 259);
  /* a real +0.0 minimum stays */
  p[0].finite = 1;
  ck_assert_int_eq(wv_fleet_reduce_merge(WAVE_F32, WAVE_MIN, p, 3, &r, &err), 0);
  ck_assert_uint_eq(r.bits[0], 0);
  /* nothing selected anywhere: zeros, count 0 */
  wv_partial q[2] = {{.chunk = 0, .count = 0}, {.chunk = 1, .count = 0}};
  ck_assert_int_eq(wv_fleet_reduce_merge(WAVE_F32, WAVE_SUM, q, 2, &r, &err), 0);
  ck_assert_uint_eq(r.bits[0], 0);
  ck_assert_uint_eq(r.count, 0);
  ck_assert_int_eq(wv_fleet_reduce_merge(WAVE_U32, WAVE_AND, q, 2, &r, &err), 0);
  ck_assert_uint_eq(r.bits[0], 0);
  /* an all-masked chunk is -0.0 in the sum: chunks [-0.0-only masked],
   * [x] give x's bits even when x is -0.0 */
  wv_partial s[2] = {{.chunk = 0, .bits = {0}, .count = 0},
                         {.chunk = 1, .bits = {0x80000000u}, .count = 1}};
  ck_assert_int_eq(wv_fleet_reduce_merge(WAVE_F32, WAVE_SUM, s, 2, &r, &err), 0);
  ck_assert_uint_eq(r.bits[0], 0x80000000u);
  /* docs/reduction.md's example, chunks [1.0], [], [2^-24, 2^-24], the
   * last cut in two pieces: its pieces fold to 2^-23 first, then the
   * chunk level gives 1 + 2^-23 (0x3f800001), where three chunk values
   * would give 0x3f800000 */
  wv_partial t[3] = {{.chunk = 0, .bits = {0x3f800000u}, .count = 1},
                         {.chunk = 2, .bits = {0x33800000u}, .count = 1},
                         {.chunk = 2, .bits = {0x33800000u}, .count = 1}};
  ck_assert_int_eq(wv_fleet_reduce_merge(WAVE_F32, WAVE_SUM, t, 3, &r, &err), 0);
  ck_assert_uint_eq(r.bits[0], 0x3f800001u);
}
END_TEST

/* ---- hash jobs ---------------------------------------------------------- */

/* piece 0: the guided cut for `daemons` daemons (the coordinator's
 * default), else pieces of `piece` nonces. */
static void tfl_hash_case2(uint64_t nonce, uint64_t count, unsigned s,
                          uint64_t piece, size_t max_winners, size_t daemons)
{
  uint64_t *out = malloc(count * sizeof *out);
  for (uint64_t i = 0; i < count; i++)
    out[i] = tfl_next();
  uint64_t target = UINT64_MAX / 1000;  /* about 1 in 1000 wins */

  uint64_t nseg = wv_seg_count(nonce, count, s);
  uint64_t *seg = malloc(nseg * sizeof *seg);
  wv_hash_winner *win = calloc(max_winners + 1, sizeof *win);
  wv_hash_batch whole = {.nonce = nonce, .count = count, .seg_log2 = s,
                         .target = target, .max_winners = max_winners,
                         .seg_fp = seg, .winners = win};
  wv_hash_fold(&whole, out);
  uint64_t fp = wv_fnv1a64_u64(WV_FNV_OFFSET, seg, nseg);

  uint64_t n = piece ? wv_fleet_hash_pieces(nonce, count, s, piece)
             : wv_fleet_hash_guided(nonce, count, s, daemons, NULL, NULL);
  wv_fleet_hpart *parts = calloc(n, sizeof *parts);
  uint64_t *gn = calloc(n, sizeof *gn), *gc = calloc(n, sizeof *gc);
  if (piece == 0) {
    ck_assert_uint_eq(wv_fleet_hash_guided(nonce, count, s, daemons, gn, gc),
                      n);
    /* guided: at most about 18 pieces per daemon (4d ln 32 + 4d) */
    ck_assert_uint_le(n, 20 * (daemons ? daemons : 1) + 2);
  }
  uint64_t next = nonce;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t a, c;
    if (piece) {
      wv_fleet_hash_piece(nonce, count, s, piece, i, &a, &c);
    } else {
      a = gn[i];
      c = gc[i];
      /* shrinking: no inner piece holds more segments than the one
       * before it (the first may be cut short by the job's start) */
      if (i >= 2 && i + 1 < n)
        ck_assert_uint_le(wv_seg_count(a, c, s),
                          wv_seg_count(gn[i - 1], gc[i - 1], s));
    }
    ck_assert_uint_eq(a, next);  /* contiguous, in order, no gaps */
    ck_assert_uint_ge(c, 1);
    if (i + 1 < n)  /* inner boundaries on whole segments */
      ck_assert_uint_eq((a + c) % (1ull << s), 0);
    next = a + c;
    parts[i].nonce = a;
    parts[i].count = c;
    parts[i].n_segments = wv_seg_count(a, c, s);
    parts[i].segments = malloc(parts[i].n_segments * 8);
    parts[i].winners = calloc(max_winners + 1, sizeof *parts[i].winners);
    wv_hash_winner *pw = calloc(max_winners + 1, sizeof *pw);
    wv_hash_batch b = {.nonce = a, .count = c, .seg_log2 = s,
                       .target = target, .max_winners = max_winners,
                       .seg_fp = parts[i].segments, .winners = pw};
    wv_hash_fold(&b, out + (a - nonce));
    for (size_t w = 0; w < b.n_winners; w++) {
      parts[i].winners[w].nonce = pw[w].nonce;
      parts[i].winners[w].output = pw[w].output;
    }
    parts[i].n_winners = b.n_winners;
    parts[i].winner_count = b.winner_count;
    parts[i].best_nonce = b.best_nonce;
    parts[i].best_output = b.best_output;
    free(pw);
  }
  ck_assert_uint_eq(next, nonce + count);

  wave_fleet_hash_result res;
  memset(&res, 0, sizeof res);
  wave_error err = {0};
  ck_assert_int_eq(wv_fleet_hash_merge(parts, n, s, (uint32_t)max_winners, 1,
                                       &res, &err), 0);
  ck_assert_uint_eq(res.job_fingerprint, fp);
  ck_assert_uint_eq(res.segment_count, nseg);
  for (uint64_t i = 0; i < nseg; i++)
    ck_assert_uint_eq(res.segments[i], seg[i]);
  ck_assert_uint_eq(res.winner_count, whole.winner_count);
  ck_assert_uint_eq(res.n_winners, whole.n_winners);
  for (size_t w = 0; w < whole.n_winners; w++) {
    ck_assert_uint_eq(res.winners[w].nonce, win[w].nonce);
    ck_assert_uint_eq(res.winners[w].output, win[w].output);
  }
  ck_assert_uint_eq(res.best_nonce, whole.best_nonce);
  ck_assert_uint_eq(res.best_output, whole.best_output);
  ck_assert_uint_eq(res.hashes, count);
  free(res.segments);
  free(res.winners);
  for (uint64_t i = 0; i < n; i++) {
    free(parts[i].segments);
    free(parts[i].winners);
  }
  free(parts);
  free(gn);
  free(gc);
  free(seg);
  free(win);
  free(out);
}

static void tfl_hash_case(uint64_t nonce, uint64_t count, unsigned s,
                         uint64_t piece, size_t max_winners)
{
  tfl_hash_case2(nonce, count, s, piece, max_winners, 0);
}

START_TEST(hash_merge)
{
  tfl_hash_case(12345, 100000, 13, 0, 16);         /* piece 2^13 */
  tfl_hash_case(12345, 100000, 13, 30000, 1000);   /* rounded up to 4 segs */
  tfl_hash_case(0, 1u << 16, 13, 1u << 14, 0);     /* aligned, no winners */
  tfl_hash_case(7, 5000, 5, 33, 3);                /* tiny segments */
  tfl_hash_case(100, 50, 13, 1, 5);                /* one piece, inside one */
  /* a job ending at 2^64 - 1: the last piece's end must not wrap */
  tfl_hash_case(UINT64_MAX - 70000, 70001, 13, 1u << 15, 8);
  ck_assert_uint_eq(wv_fleet_hash_pieces(10, 2, 5, 1), 1);
  /* the guided cut (piece 0), for 1, 3 and 7 daemons */
  tfl_hash_case2(12345, 1u << 20, 13, 0, 16, 3);   /* 128 segments */
  tfl_hash_case2(0, 1u << 22, 5, 0, 64, 3);        /* 2^17 segments */
  tfl_hash_case2(7, 5000, 5, 0, 3, 1);
  tfl_hash_case2(7, 5000, 5, 0, 3, 7);
  tfl_hash_case2(100, 50, 13, 0, 5, 3);            /* inside one segment */
  tfl_hash_case2(UINT64_MAX - 70000, 70001, 13, 0, 8, 3);
  ck_assert_uint_eq(wv_fleet_hash_guided(0, 1, 13, 3, NULL, NULL), 1);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("fleet");
  TCase *t = tcase_create("merge");
  tcase_set_timeout(t, 120);
  tcase_add_test(t, reduce_merge_every_op);
  tcase_add_test(t, reduce_merge_edges);
  tcase_add_test(t, any_finite);
  tcase_add_test(t, hash_merge);
  suite_add_tcase(s, t);
  SRunner *r = srunner_create(s);
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
