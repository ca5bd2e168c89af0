/* conformance_merge.c - the exact merges of core/ against whole jobs.
 *
 * Reductions (core/partial.h).  Jobs of every dtype x op, with chunks of
 * edge sizes (0, 1, 255, 256, 257, 65535, 65536, 65537, ...) and random
 * ones, rows that make the float sum depend on its tree, NaN payloads,
 * +-inf, +-0.0 and subnormals, and masks chunked on their own boundaries
 * (empty mask chunks, a whole input chunk masked out, everything masked
 * out), are cut into the pieces of docs/reduction.md "Partials": per chunk
 * runs of P = 256^k rows from its start, with P the same for every chunk or
 * drawn per chunk, down to a piece per chunk.  Each piece is answered as a
 * one-chunk job, by the reference and by every device, the answers merge
 * with wv_partial_*, and the bits and count must equal the reference over
 * the whole job.  Devices answer the cuts of P >= 65536 only (a device
 * call per 256 rows would make the GPU runs crawl).  The 64-bit dtypes
 * (rows of 8 bytes) and argmin/argmax (pieces with their index offset)
 * are answered by the devices whose caps run them.
 *
 * Hash jobs (core/hashmerge.h).  Nonce ranges (from 0, across 2^20 and
 * 2^24, inside one segment, ending at 2^64 - 1, random) at segment sizes
 * 2^5, 2^13 and 2^20 are cut at segment boundaries (one piece, one per
 * segment, random runs of segments); every piece is folded alone, the
 * pieces merge in a shuffled order while the job fingerprint takes them in
 * nonce order (as the daemon holds back early finishers), and the segment
 * list, job fingerprint, winners, winner count, best and hashes must equal
 * one fold of the whole range.  The pieces are folded by the host
 * (wv_hash_fold, over outputs with many ties) and by every device's batch
 * (wv_hash_run_batch over pack "small"), against the reference outputs.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"
#include "core/base.h"
#include "core/hashmerge.h"
#include "core/partial.h"
#include "core/reduce.h"
#include "workers/hash/hash.h"
#include "workers/hash/pack.h"
#include "workers/hash/ref.h"

/* ---- reductions ------------------------------------------------------------ */

#define CM_CHUNKS 12
#define CM_MASKS 16
#define CM_MAX_ROWS 300000u

typedef struct cm_job {
  uint32_t *data, *mask;  /* data: rows of 4 or 8 bytes */
  wv_span in[CM_CHUNKS], mk[CM_MASKS];
  wv_reduce_job job;
  char what[200];
} cm_job;

static const uint64_t cm_edges[] = {0, 1, 2, 255, 256, 257, 511, 65535,
                                    65536, 65537, 131075};

/* kind 0: floats of magnitude 2^-8 .. 2^8 (every re-association shows);
 * 1: those with NaN payloads, +-inf, +-0.0, subnormals, extremes in a
 * quarter of the rows; 2: -0.0 with a +0.0 in about one row in 2^18 (a
 * wrong leaf, a wrong all-masked piece or a wrong zero order shows);
 * 3: NaN and +-inf with a positive finite row in about 3000 (pieces with
 * no finite row, whose +0.0 answer means "nothing", must not be the min). */
static uint32_t cm_float(uint64_t *rng, int kind)
{
  static const uint32_t sp[] = {
    0x7fc00000u, 0xffc00000u, 0x7fa00001u, 0x7f800000u, 0xff800000u,
    0x80000000u, 0x00000000u, 0x00000001u, 0x80000001u, 0x007fffffu,
    0x7f7fffffu, 0xff7fffffu};
  uint64_t r = conf_rng(rng);
  uint32_t hi = (uint32_t)(r >> 32);
  if (kind == 2)
    return r % (1u << 18) == 0 ? 0x00000000u : 0x80000000u;
  if ((kind == 1 && r % 4 == 0) || (kind == 3 && r % 3000 != 0))
    return sp[(r >> 8) % (kind == 3 ? 5 : sizeof sp / sizeof *sp)];
  if (kind == 3)
    hi &= 0x7fffffffu;
  return (hi & 0x807fffffu) | ((119u + (hi >> 23) % 16u) << 23);
}

static uint32_t cm_int(uint64_t *rng, int kind)
{
  static const uint32_t sp[] = {0, 1, 0x7fffffffu, 0x80000000u, 0xffffffffu,
                                0x80000001u, 0xfffffffeu};
  uint64_t r = conf_rng(rng);
  if (kind != 0 && r % 3 != 0)
    return sp[(r >> 8) % (sizeof sp / sizeof *sp)];
  return (uint32_t)(r >> 16);
}

/* The 64-bit rows: kinds as cm_float's, and integers as cm_int's spread
 * over 64 bits (wrapping sums, sign bits). */
static uint64_t cm_float64(uint64_t *rng, int kind)
{
  static const uint64_t sp[] = {
    0x7ff8000000000000u, 0xfff8000000000000u, 0x7ff4000000000001u,
    0x7ff0000000000000u, 0xfff0000000000000u, 0x8000000000000000u, 0, 1,
    0x8000000000000001u, 0x000fffffffffffffu, 0x7fefffffffffffffu,
    0xffefffffffffffffu};
  uint64_t r = conf_rng(rng);
  if (kind == 2)
    return r % (1u << 18) == 0 ? 0 : 0x8000000000000000u;
  if ((kind == 1 && r % 4 == 0) || (kind == 3 && r % 3000 != 0))
    return sp[(r >> 8) % (kind == 3 ? 5 : sizeof sp / sizeof *sp)];
  uint64_t x = conf_rng(rng);
  if (kind == 3)
    x &= 0x7fffffffffffffffu;
  return (x & 0x800fffffffffffffu) | ((1015u + (r >> 8) % 16u) << 52);
}

static uint64_t cm_int64(uint64_t *rng, int kind)
{
  uint64_t r = conf_rng(rng);
  if (kind == 2)
    return r % 5;  /* ties for argmin/argmax */
  return ((uint64_t)cm_int(rng, kind) << 32) | (uint32_t)(r >> 11);
}

/* Row counts of n parts that sum to total, some of them empty. */
static void cm_split(uint64_t *rng, uint64_t total, size_t n, uint64_t *out)
{
  uint64_t left = total;
  for (size_t i = 0; i + 1 < n; i++) {
    uint64_t r = conf_rng(rng);
    out[i] = r % 4 == 0 ? 0 : (r >> 8) % (2 * left / (n - i) + 1);
    if (out[i] > left)
      out[i] = left;
    left -= out[i];
  }
  out[n - 1] = left;
}

/* maskv 0: no mask; 1: a random mask; 2: one input chunk wholly masked
 * out; 3: every row masked out. */
static void cm_make(cm_job *j, wave_dtype dt, wave_op op, int kind,
                    int maskv, uint64_t seed)
{
  uint64_t rng = seed;
  memset(j, 0, sizeof *j);
  size_t n_in = 1 + (size_t)(conf_rng(&rng) % CM_CHUNKS);
  uint64_t rows[CM_CHUNKS], total = 0;
  for (size_t c = 0; c < n_in; c++) {
    uint64_t r = conf_rng(&rng);
    rows[c] = r % 2 ? cm_edges[(r >> 8) % (sizeof cm_edges / 8)]
                    : (r >> 8) % 70000;
    if (total + rows[c] > CM_MAX_ROWS)
      rows[c] = CM_MAX_ROWS - total;
    total += rows[c];
  }
  unsigned size = wv_dtype_size(dt);
  j->data = malloc((total + 1) * size);
  j->mask = malloc((total + 1) * 4);
  ck_assert(j->data != NULL && j->mask != NULL);
  for (uint64_t i = 0; i < total; i++) {
    if (size == 8) {
      uint64_t x = dt == WAVE_F64 ? cm_float64(&rng, kind)
                                  : cm_int64(&rng, kind);
      memcpy((unsigned char *)j->data + 8 * i, &x, 8);
    } else {
      j->data[i] = dt == WAVE_F32 ? cm_float(&rng, kind) : cm_int(&rng, kind);
    }
  }
  size_t dead = (size_t)(conf_rng(&rng) % n_in);
  uint64_t off = 0;
  for (size_t c = 0; c < n_in; c++) {
    j->in[c] = (wv_span){rows[c] ? (unsigned char *)j->data + size * off
                                 : NULL, rows[c]};
    for (uint64_t i = 0; i < rows[c]; i++) {
      uint64_t r = conf_rng(&rng);
      uint32_t m = r % 2 ? (uint32_t)(r >> 16) | 0x100u : 0;
      if (r % 16 == 3)
        m = 0x80000000u;
      j->mask[off + i] = maskv == 3 || (maskv == 2 && c == dead) ? 0 : m;
    }
    off += rows[c];
  }
  size_t n_mk = 1 + (size_t)(conf_rng(&rng) % CM_MASKS);
  uint64_t mrows[CM_MASKS];
  cm_split(&rng, total, n_mk, mrows);
  off = 0;
  for (size_t m = 0; m < n_mk; m++) {
    j->mk[m] = (wv_span){mrows[m] ? j->mask + off : NULL, mrows[m]};
    off += mrows[m];
  }
  j->job = (wv_reduce_job){.dtype = dt, .op = op, .input = j->in,
                           .n_input = n_in, .mask = j->mk,
                           .n_mask = maskv ? n_mk : 0, .has_mask = maskv != 0,
                           .rows = total};
  snprintf(j->what, sizeof j->what, "%s %s, %zu chunks, %" PRIu64 " rows, "
           "data %d, mask %d (seed %" PRIx64 ")", wave_dtype_name(dt),
           wave_op_name(op), n_in, total, kind, maskv, seed);
}

static void cm_free(cm_job *j)
{
  free(j->data);
  free(j->mask);
}

/* The mask spans of logical rows [row, row + n), over the job's chunks. */
static size_t cm_mask_slice(const wv_reduce_job *job, uint64_t row,
                            uint64_t n, wv_span *out)
{
  size_t k = 0;
  uint64_t base = 0;
  for (size_t m = 0; m < job->n_mask && n > 0; m++) {
    uint64_t end = base + job->mask[m].rows;
    if (end > row) {
      uint64_t take = end - row < n ? end - row : n;
      ck_assert_uint_lt(k, CM_MASKS);
      out[k++] = (wv_span){(const uint32_t *)job->mask[m].data +
                               (row - base), take};
      row += take;
      n -= take;
    }
    base = end;
  }
  return k;
}

/* The job cut with piece size P[c] in chunk c, each piece answered by the
 * reference (d NULL) or device d, merged.  stream: an accumulator with no
 * reserve (its buffer grows), else wv_partial_merge over all pieces. */
static int cm_merge(conf_dev *d, const wv_reduce_job *job, const uint64_t *P,
                    int stream, wv_reduce_out *out, wave_error *err)
{
  size_t cap = 0, n = 0;
  for (size_t c = 0; c < job->n_input; c++)
    cap += (size_t)((job->input[c].rows + P[c] - 1) / P[c]);
  wv_partial *pt = malloc((cap + 1) * sizeof *pt);
  ck_assert_ptr_nonnull(pt);
  uint64_t row = 0;
  int rc = 0;
  for (size_t c = 0; rc == 0 && c < job->n_input; c++) {
    const wv_span *ch = &job->input[c];
    for (uint64_t a = 0; rc == 0 && a < ch->rows; a += P[c]) {
      uint64_t r = ch->rows - a < P[c] ? ch->rows - a : P[c];
      wv_span in = {(const unsigned char *)ch->data +
                        wv_dtype_size(job->dtype) * a, r}, mk[CM_MASKS];
      size_t nm = job->has_mask ? cm_mask_slice(job, row + a, r, mk) : 0;
      wv_reduce_job pj = {.dtype = job->dtype, .op = job->op, .input = &in,
                          .n_input = 1, .mask = mk, .n_mask = nm,
                          .has_mask = job->has_mask, .rows = r};
      wv_reduce_out o;
      rc = d == NULL ? wv_reduce_reference(&pj, &o, err)
                     : d->backend->reduce(d->dev, &pj, &o, err);
      if (rc == 0) {
        wv_partial_of(&pj, &o, c, &pt[n]);
        pt[n++].offset = row + a;  /* argmin/argmax: its global index */
      }
    }
    row += ch->rows;
  }
  if (rc == 0 && !stream) {
    rc = wv_partial_merge(job->dtype, job->op, pt, n, out, NULL, err);
  } else if (rc == 0) {
    wv_partial_acc acc;
    rc = wv_partial_init(&acc, job->dtype, job->op, 0, err);
    for (size_t i = 0; rc == 0 && i < n; i++)
      rc = wv_partial_add(&acc, &pt[i], err);
    if (rc == 0)
      wv_partial_result(&acc, out, NULL);
    wv_partial_fini(&acc);
  }
  free(pt);
  return rc;
}

static int cm_same(const wv_reduce_out *a, const wv_reduce_out *b)
{
  return a->n_values == b->n_values && a->count == b->count &&
         a->bits[0] == b->bits[0] && a->index == b->index &&
         (a->n_values < 2 || a->bits[1] == b->bits[1]);
}

static void cm_fmt(char *buf, size_t len, int rc, const wave_error *e,
                   const wv_reduce_out *o)
{
  if (rc != 0)
    snprintf(buf, len, "error %s: %s", wave_errname(rc), e->message);
  else
    snprintf(buf, len, "[%08" PRIx64 " %08" PRIx64 "] count %" PRIu64
             " index %" PRId64, o->bits[0], o->n_values > 1 ? o->bits[1] : 0,
             o->count, o->index);
}

/* Whether device d runs the job's dtype and op (its caps). */
static int cm_runs(const conf_dev *d, const wv_reduce_job *job)
{
  if (wv_dtype_size(job->dtype) == 8 && !d->dtypes64)
    return 0;
  return (job->op != WAVE_ARGMIN && job->op != WAVE_ARGMAX) || d->argminmax;
}

/* One job: cut 0: P = 256, 1: 65536, 2: a piece per chunk, 3: P drawn
 * per chunk from 256^1..3; devices answer cuts 1 and 2 (and 3 when no
 * chunk draws 256). */
static void cm_job_run(conf_set *set, conf_dev *refd, const cm_job *j,
                       uint64_t seed)
{
  wave_error err = {0};
  wv_reduce_out want, got;
  ck_assert_msg(wv_reduce_reference(&j->job, &want, &err) == 0, "%s: %s",
                j->what, err.message);
  char ws[64], gs[320], what[300];
  cm_fmt(ws, sizeof ws, 0, NULL, &want);
  uint64_t rng = seed ^ 0x6d65726765ull;
  for (int cut = 0; cut < 4; cut++) {
    uint64_t P[CM_CHUNKS];
    int small = cut == 0;
    for (size_t c = 0; c < j->job.n_input; c++) {
      P[c] = cut == 0 ? 256 : cut == 1 ? 65536 : (uint64_t)1 << 24;
      if (cut == 3) {
        P[c] = (uint64_t)1 << (8 * (1 + conf_rng(&rng) % 3));
        small |= P[c] == 256 && j->job.input[c].rows > 256;
      }
    }
    for (size_t i = 0; i <= set->n; i++) {
      conf_dev *d = i < set->n ? &set->devs[i] : NULL;
      if (d != NULL && (small || !cm_runs(d, &j->job)))
        continue;
      int rc = cm_merge(d, &j->job, P, (int)((seed + cut) % 2), &got, &err);
      int same = rc == 0 && cm_same(&got, &want);
      snprintf(what, sizeof what, "%s, cut %d", j->what, cut);
      if (!same)
        cm_fmt(gs, sizeof gs, rc, &err, &got);
      conf_count(d != NULL ? d : refd, same, what, ws, same ? "" : gs);
    }
  }
}

START_TEST(partial_merge)
{
  conf_set set;
  conf_open_all(&set);
  /* the reference's own pieces are counted under a row of their own */
  static const wv_backend refb = {.name = "reference"};
  conf_dev refd = {.backend = &refb};
  unsigned long seq = 0;
  for (int d = WAVE_U32; d <= WAVE_F64; d++)
    for (int op = WAVE_SUM; op <= WAVE_ARGMAX; op++) {
      if (wave_op_check((wave_dtype)d, (wave_op)op) != WAVE_EOK)
        continue;
      for (int v = 0; v < 16; v++, seq++) {  /* data kind x mask kind */
        cm_job j;
        uint64_t seed = 0x5eed0100u + seq * 7919u;
        cm_make(&j, (wave_dtype)d, (wave_op)op, v % 4, v / 4, seed);
        cm_job_run(&set, &refd, &j, seed);
        cm_free(&j);
      }
    }
  printf("conformance: partials: reference %lu merges, %lu mismatches\n",
         refd.jobs, refd.mismatches);
  ck_assert_msg(refd.mismatches == 0, "partials: %lu reference mismatches",
                refd.mismatches);
  conf_report(&set, "partials");
  conf_close_all(&set);
}
END_TEST

/* ---- hash pieces ----------------------------------------------------------- */

#define CM_MAX_PIECES 4096

typedef struct cm_whole {
  wv_hash_batch b;
  uint64_t *seg;
  wv_hash_winner *win;
  uint64_t nseg, fp;
} cm_whole;

/* Starts of the pieces of [nonce, nonce + count) at segment boundaries:
 * kind 0 one piece, 1 one per segment, 2 random runs of 1..9 segments. */
static size_t cm_cut(uint64_t nonce, uint64_t count, unsigned s, int kind,
                     uint64_t *rng, uint64_t *start)
{
  uint64_t first = nonce >> s, nseg = wv_seg_count(nonce, count, s);
  size_t n = 0;
  for (uint64_t k = 0; k < nseg && n < CM_MAX_PIECES;) {
    start[n++] = k == 0 ? nonce : (first + k) << s;
    uint64_t len = kind == 0 ? nseg : kind == 1 ? 1
                 : 1 + conf_rng(rng) % 9;
    k += len < nseg - k ? len : nseg - k;
  }
  ck_assert_uint_lt(n, CM_MAX_PIECES);
  return n;
}

static void cm_whole_fold(cm_whole *w, uint64_t nonce, uint64_t count,
                          unsigned s, uint64_t target, size_t slots,
                          const uint64_t *out)
{
  w->nseg = wv_seg_count(nonce, count, s);
  w->seg = malloc(w->nseg * sizeof *w->seg);
  w->win = malloc((slots + 1) * sizeof *w->win);
  ck_assert(w->seg != NULL && w->win != NULL);
  w->b = (wv_hash_batch){.nonce = nonce, .count = count, .seg_log2 = s,
                         .target = target, .max_winners = slots,
                         .seg_fp = w->seg, .winners = w->win};
  wv_hash_fold(&w->b, out);
  w->fp = wv_fnv1a64_u64(WV_FNV_OFFSET, w->seg, (size_t)w->nseg);
}

/* The first difference of the merge m from the whole fold w, or "". */
static void cm_hash_diff(const cm_whole *w, const wv_hash_merge *m,
                         char *ws, size_t wl, char *gs, size_t gl)
{
  ws[0] = gs[0] = '\0';
  for (uint64_t k = 0; k < w->nseg; k++)
    if (m->segments[k] != w->seg[k]) {
      snprintf(ws, wl, "segment %" PRIu64 " %016" PRIx64, k, w->seg[k]);
      snprintf(gs, gl, "%016" PRIx64, m->segments[k]);
      return;
    }
  int same = m->fingerprint == w->fp && m->folded == w->b.count &&
             m->hashes == w->b.count &&
             m->winner_count == w->b.winner_count &&
             m->n_winners == w->b.n_winners &&
             m->best_nonce == w->b.best_nonce &&
             m->best_output == w->b.best_output;
  for (size_t k = 0; same && k < w->b.n_winners; k++)
    same = m->winners[k].nonce == w->win[k].nonce &&
           m->winners[k].output == w->win[k].output;
  if (same)
    return;
  snprintf(ws, wl, "fp %016" PRIx64 " %" PRIu64 " winners (%zu kept) best "
           "%" PRIu64 "/%016" PRIx64, w->fp, w->b.winner_count,
           w->b.n_winners, w->b.best_nonce, w->b.best_output);
  snprintf(gs, gl, "fp %016" PRIx64 " %" PRIu64 " winners (%zu kept) best "
           "%" PRIu64 "/%016" PRIx64 ", %" PRIu64 " hashes", m->fingerprint,
           m->winner_count, m->n_winners, m->best_nonce, m->best_output,
           m->hashes);
}

/* Fold every piece (device d's batch with pack p, or, p NULL, the host
 * fold over out, counted under d), merge them shuffled, fold the
 * fingerprint in nonce order; compare with w. */
static void cm_hash_pieces(conf_dev *d, const wv_pack *p, const cm_whole *w,
                           const uint64_t *start, size_t n, uint64_t *rng,
                           const uint64_t *out, const char *what)
{
  const wv_hash_batch *wb = &w->b;
  wv_hash_batch *pc = calloc(n, sizeof *pc);
  size_t *order = malloc(n * sizeof *order);
  int *done = calloc(n, sizeof *done);
  uint64_t *segs = malloc(w->nseg * sizeof *segs);
  uint64_t *mseg = malloc(w->nseg * sizeof *mseg);
  wv_hash_winner *win = calloc(n * wb->max_winners + 1, sizeof *win);
  wv_hash_winner *kept = calloc(wb->max_winners + 1, sizeof *kept);
  wv_hash_winner *tmp = calloc(wb->max_winners + 1, sizeof *tmp);
  ck_assert(pc && order && done && segs && mseg && win && kept && tmp);
  uint64_t *scratch = malloc(wb->count * sizeof *scratch);
  ck_assert_ptr_nonnull(scratch);
  int rc = 0;
  wave_error err = {0};
  uint64_t used = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    uint64_t end = i + 1 < n ? start[i + 1] : wb->nonce + wb->count;
    pc[i] = (wv_hash_batch){.nonce = start[i], .count = end - start[i],
                            .seg_log2 = wb->seg_log2, .target = wb->target,
                            .max_winners = wb->max_winners,
                            .seg_fp = segs + used,
                            .winners = win + i * wb->max_winners};
    used += wv_seg_count(pc[i].nonce, pc[i].count, wb->seg_log2);
    if (p == NULL)
      wv_hash_fold(&pc[i], out + (start[i] - wb->nonce));
    else
      rc = wv_hash_run_batch(d->backend, d->dev, p, &pc[i], scratch, &err);
    order[i] = i;
  }
  for (size_t i = n; i > 1; i--) {  /* finish in any order */
    size_t k = (size_t)(conf_rng(rng) % i), t = order[i - 1];
    order[i - 1] = order[k];
    order[k] = t;
  }
  wv_hash_merge m;
  memset(mseg, 0x5a, w->nseg * sizeof *mseg);
  wv_hash_merge_init(&m, wb->nonce, wb->seg_log2, wb->max_winners, kept, tmp,
                     mseg);
  size_t next = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    wv_hash_merge_add(&m, &pc[order[i]]);
    done[order[i]] = 1;
    for (; next < n && done[next]; next++)  /* held until in order */
      wv_hash_merge_fold(&m, pc[next].seg_fp,
                         (size_t)wv_seg_count(pc[next].nonce, pc[next].count,
                                              wb->seg_log2),
                         pc[next].count);
  }
  char ws[160] = "", gs[300] = "";
  if (rc != 0)
    snprintf(gs, sizeof gs, "error %s: %s", wave_errname(rc), err.message);
  else
    cm_hash_diff(w, &m, ws, sizeof ws, gs, sizeof gs);
  conf_count(d, rc == 0 && gs[0] == '\0', what, ws, gs);
  free(pc);
  free(order);
  free(done);
  free(segs);
  free(mseg);
  free(win);
  free(kept);
  free(tmp);
  free(scratch);
}

typedef struct cm_range {
  uint64_t nonce, count;
} cm_range;

/* The ranges: fixed edges, then four random ones. */
static size_t cm_ranges(cm_range *r, uint64_t *rng)
{
  static const cm_range fixed[] = {
    {0, 1}, {0, 4096}, {33, 1000}, {100, 5},
    {((uint64_t)1 << 20) - 1000, 3000}, {((uint64_t)1 << 24) - 1500, 3000},
    {((uint64_t)7 << 40) + 8191, 2}, {UINT64_MAX - 40, 41},
    {UINT64_MAX - 2998, 2999}};
  size_t n = sizeof fixed / sizeof *fixed;
  memcpy(r, fixed, sizeof fixed);
  for (int i = 0; i < 4; i++) {
    uint64_t count = 1 + conf_rng(rng) % 3000, nonce = conf_rng(rng);
    r[n++] = (cm_range){nonce > UINT64_MAX - count ? UINT64_MAX - count
                                                   : nonce, count};
  }
  return n;
}

/* Target, winner slots: none win; 1 in 16 (all kept); every nonce wins
 * (37 kept, or none); outputs below 64 with many ties, below 8 win. */
static const struct { uint64_t target; size_t slots; int ties; } cm_tg[] = {
  {0, 16, 0}, {(uint64_t)1 << 60, 4096, 0}, {UINT64_MAX, 37, 0},
  {UINT64_MAX, 0, 0}, {8, 5, 1},
};

/* Host-folded pieces over outputs of any value. */
static void cm_hash_host(conf_dev *hostd, uint64_t *rng)
{
  cm_range r[16];
  size_t nr = cm_ranges(r, rng);
  static const unsigned sl[] = {WV_SEG_LOG2_MIN, WV_SEG_LOG2_DEFAULT,
                                WV_SEG_LOG2_MAX};
  uint64_t *out = malloc(4096 * sizeof *out), start[CM_MAX_PIECES];
  ck_assert_ptr_nonnull(out);
  for (size_t k = 0; k < nr; k++)
    for (size_t t = 0; t < sizeof cm_tg / sizeof *cm_tg; t++) {
      for (uint64_t i = 0; i < r[k].count; i++)
        out[i] = cm_tg[t].ties ? conf_rng(rng) % 64 : conf_rng(rng);
      for (size_t si = 0; si < 3; si++)
        for (int kind = 0; kind < 3; kind++) {
          cm_whole w;
          cm_whole_fold(&w, r[k].nonce, r[k].count, sl[si], cm_tg[t].target,
                        cm_tg[t].slots, out);
          size_t n = cm_cut(r[k].nonce, r[k].count, sl[si], kind, rng, start);
          char what[200];
          snprintf(what, sizeof what, "host pieces of [%" PRIu64 ", +%" PRIu64
                   ") s=%u target %" PRIx64 " slots %zu cut %d (%zu pieces)",
                   r[k].nonce, r[k].count, sl[si], cm_tg[t].target,
                   cm_tg[t].slots, kind, n);
          cm_hash_pieces(hostd, NULL, &w, start, n, rng, out, what);
          free(w.seg);
          free(w.win);
        }
    }
  free(out);
}

/* Device-folded pieces over pack p, against the reference outputs. */
static void cm_hash_devices(conf_set *set, const wv_pack *p, uint64_t *rng)
{
  wv_hash_mem mem = {.pack = p};
  wave_error err = {0};
  if (!p->closed)
    ck_assert_msg(wv_pack_cache_get(p, &mem.cache, &err) == 0, "%s",
                  err.message);
  cm_range r[16];
  size_t nr = cm_ranges(r, rng);
  uint64_t *out = malloc(4096 * sizeof *out), start[CM_MAX_PIECES];
  ck_assert_ptr_nonnull(out);
  for (size_t i = 0; i < set->n; i++) {
    conf_dev *d = &set->devs[i];
    if (d->backend->hash == NULL)
      continue;
    int rc = d->backend->hash_prepare != NULL
                 ? d->backend->hash_prepare(d->dev, p, &err) : 0;
    conf_count(d, rc == 0, "merge: pack prepare", "ok", err.message);
    for (size_t k = 0; rc == 0 && k < nr; k++) {
      wv_ref_range(&mem, r[k].nonce, r[k].count, out);
      for (unsigned s = WV_SEG_LOG2_MIN; s <= WV_SEG_LOG2_DEFAULT; s += 8)
        for (size_t t = 1; t <= 2; t++) {
          cm_whole w;
          cm_whole_fold(&w, r[k].nonce, r[k].count, s, cm_tg[t].target,
                        cm_tg[t].slots, out);
          size_t n = cm_cut(r[k].nonce, r[k].count, s, 2, rng, start);
          char what[200];
          snprintf(what, sizeof what, "pack %s pieces of [%" PRIu64 ", +%"
                   PRIu64 ") s=%u slots %zu (%zu pieces)", wv_pack_name(p),
                   r[k].nonce, r[k].count, s, cm_tg[t].slots, n);
          cm_hash_pieces(d, p, &w, start, n, rng, out, what);
          free(w.seg);
          free(w.win);
        }
    }
  }
  free(out);
}

START_TEST(hash_merge)
{
  uint64_t rng = 0x5eed0200u;
  static const wv_backend hostb = {.name = "host fold"};
  conf_dev hostd = {.backend = &hostb};
  cm_hash_host(&hostd, &rng);
  printf("conformance: hash pieces: host fold %lu merges, %lu mismatches\n",
         hostd.jobs, hostd.mismatches);
  ck_assert_msg(hostd.mismatches == 0, "hash pieces: %lu host mismatches",
                hostd.mismatches);

  const char *src = getenv("WAVE_SOURCE_DIR");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/config/packs",
           src != NULL ? src : WAVE_SOURCE_DIR_DEFAULT);
  wv_packset *packs = NULL;
  wave_error err = {0};
  ck_assert_msg(wv_packset_load(dir, &packs, &err) == 0, "%s", err.message);
  const wv_pack *p = wv_packset_find(packs, "small");
  ck_assert_msg(p != NULL, "no pack small in %s", dir);
  conf_set set;
  conf_open_all(&set);
  cm_hash_devices(&set, p, &rng);
  conf_report(&set, "hash pieces");
  conf_close_all(&set);
  wv_packset_free(packs);
}
END_TEST

TCase *conf_merge_tcase(void)
{
  TCase *tc = tcase_create("merge");
  tcase_set_timeout(tc, 3600);
  tcase_add_test(tc, partial_merge);
  tcase_add_test(tc, hash_merge);
  return tc;
}
