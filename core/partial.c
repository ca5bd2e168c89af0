/* partial.c - the one exact merge of reduction partials (partial.h,
 * docs/reduction.md "Partials").
 *
 * Float sum.  A piece of P = 256^k rows answers exactly the chunk's level-k
 * partial for its rows (its levels 1..k are the chunk's, restricted to it),
 * and a shorter last piece stops once one value is left, which running the
 * remaining levels over one padded value would not change.  Two answers
 * are not the tree's value and are mapped back: a piece that selects no row
 * is answered +0.0 but its tree is -0.0 leaves, so it counts as -0.0; a NaN
 * is canonicalised, which never matters since the job's NaN is too.  A
 * chunk's value is then the levels over its pieces' values, and the job's
 * the levels over the values of its non-empty chunks (empty chunks give no
 * pieces), followed by the result rule (wv_f32_sum_finish).
 *
 * Other ops are order-free.  Pieces that select no row are skipped (an
 * `and` over nothing answers 0, not its identity); float min/max/extent
 * skip pieces with no selected finite row too (their +0.0 means
 * "nothing"), and compare under the total order (wv_f32_key).
 *
 * float64 follows the same rules with binary64 values (vals64).  argmin /
 * argmax pieces carry their index offset; the merge keeps the best value
 * and, among equal ones, the lowest global index, skipping pieces that
 * considered no row.
 *
 * fsum: a piece's exact sum (wv_partial.xsum) is added to the job's by
 * wv_xsum_merge, in any order and with no tree: the answer is the one
 * rounding of the total (core/xsum.h).
 *
 * Compiled with -ffp-contract=off (CMakeLists.txt): every float operation
 * is one binary32 (binary64) addition.
 */
#include <stdlib.h>
#include <string.h>

#include "core/base.h"
#include "core/pages.h"
#include "core/partial.h"
#include "core/reduce.h"

static float pt_f32(uint32_t b)
{
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
}

static double pt_f64(uint64_t b)
{
  double f;
  memcpy(&f, &b, sizeof f);
  return f;
}

static int pt_is_fsum(wave_dtype dt, wave_op op)
{
  return wv_op_plan_of(dt, op)->path == WV_PATH_FSUM;
}

void wv_partial_of(const wv_reduce_job *j, const wv_reduce_out *o,
                   size_t chunk, wv_partial *p)
{
  memset(p, 0, sizeof *p);
  p->chunk = chunk;
  p->bits[0] = o->bits[0];
  p->bits[1] = o->n_values > 1 ? o->bits[1] : 0;
  p->count = o->count;
  p->index = o->index;
  p->xsum = o->xsum;
  /* argmin/argmax: count > 0 says it (only finite rows are counted) */
  p->finite = wv_op_plan_of(j->dtype, j->op)->says_finite
                  ? wv_reduce_some_finite(j, o)
                  : o->count > 0;
}

int wv_partial_init(wv_partial_acc *a, wave_dtype dt, wave_op op,
                    size_t cap, wave_error *err)
{
  memset(a, 0, sizeof *a);
  a->dtype = dt;
  a->op = op;
  a->chunk = SIZE_MAX;
  if (op == WAVE_FSUM)
    wv_xsum_init(&a->xsum, dt);
  if (!pt_is_fsum(dt, op) || cap == 0)
    return 0;
  if (dt == WAVE_F32 ? (a->vals = malloc(cap * sizeof *a->vals)) == NULL
                     : (a->vals64 = malloc(cap * sizeof *a->vals64)) == NULL)
    return wv_seterr(err, WAVE_ENOMEM, "%zu partial values", cap);
  a->cap = cap;
  return 0;
}

void wv_partial_fini(wv_partial_acc *a)
{
  wv_free_big(a->vals);
  wv_free_big(a->vals64);
  a->vals = NULL;
  a->vals64 = NULL;
  a->cap = a->n_vals = a->n_chunks = 0;
}

/* The current chunk's pieces become its value, a[n_chunks]. */
static void pt_chunk_end(wv_partial_acc *a)
{
  if (a->n_vals > a->n_chunks) {
    size_t n = a->n_vals - a->n_chunks;
    if (a->dtype == WAVE_F32)
      a->vals[a->n_chunks] = wv_f32_levels(a->vals + a->n_chunks, n);
    else
      a->vals64[a->n_chunks] = wv_f64_levels(a->vals64 + a->n_chunks, n);
    a->n_chunks++;
  }
  a->n_vals = a->n_chunks;
}

static int pt_fsum_add(wv_partial_acc *a, const wv_partial *p,
                       wave_error *err)
{
  if (p->chunk != a->chunk) {
    pt_chunk_end(a);
    a->chunk = p->chunk;
  }
  if (a->n_vals == a->cap) {
    size_t cap = a->cap ? 2 * a->cap : 64;
    if (a->dtype == WAVE_F32) {
      float *v = realloc(a->vals, cap * sizeof *v);
      if (v == NULL)
        return wv_seterr(err, WAVE_ENOMEM, "%zu partial values", cap);
      a->vals = v;
    } else {
      double *v = realloc(a->vals64, cap * sizeof *v);
      if (v == NULL)
        return wv_seterr(err, WAVE_ENOMEM, "%zu partial values", cap);
      a->vals64 = v;
    }
    a->cap = cap;
  }
  /* all masked out: answered +0.0, but its tree value is -0.0 */
  if (a->dtype == WAVE_F32)
    a->vals[a->n_vals++] = p->count == 0 ? pt_f32(WV_F32_NEG_ZERO)
                                         : pt_f32((uint32_t)p->bits[0]);
  else
    a->vals64[a->n_vals++] = p->count == 0 ? pt_f64(WV_F64_NEG_ZERO)
                                           : pt_f64(p->bits[0]);
  return 0;
}

/* x < y in the order of the plan's key (floats: finite ones). */
static int pt_less(const wv_op_plan *pl, uint64_t x, uint64_t y)
{
  return wv_key_of(pl->key, pl->row_bytes, x) <
         wv_key_of(pl->key, pl->row_bytes, y);
}

/* argmin/argmax: the piece's value x at global index i replaces the best
 * one if better, or equal at a lower index (pieces may come in any order). */
static void pt_arg_add(wv_partial_acc *a, const wv_partial *p)
{
  const wv_op_plan *pl = wv_op_plan_of(a->dtype, a->op);
  uint64_t x = p->bits[0], i = p->offset + (uint64_t)p->index;
  int better = !a->have ||
               (pl->halves == WV_HALF_LO ? pt_less(pl, x, a->lo)
                                         : pt_less(pl, a->lo, x)) ||
               (x == a->lo && i < a->index);
  if (better) {
    a->lo = x;
    a->index = i;
    a->have = 1;
  }
}

int wv_partial_add(wv_partial_acc *a, const wv_partial *p, wave_error *err)
{
  const wv_op_plan *pl = wv_op_plan_of(a->dtype, a->op);
  a->count += p->count;
  if (pl->path == WV_PATH_FSUM)
    return pt_fsum_add(a, p, err);
  if (pl->path == WV_PATH_XSUM) {
    wv_xsum_merge(&a->xsum, &p->xsum);
    return 0;
  }
  if (p->count == 0 || (pl->says_finite && !p->finite))
    return 0;
  if (pl->path == WV_PATH_ARG) {
    pt_arg_add(a, p);
    return 0;
  }
  uint64_t x = p->bits[0], y = a->op == WAVE_EXTENT ? p->bits[1] : x;
  if (!a->have) {
    a->lo = a->acc = x;
    a->hi = y;
    a->have = 1;
    return 0;
  }
  switch (a->op) {
  case WAVE_SUM: a->acc = (a->acc + x) & pl->ones; break;  /* wraps */
  case WAVE_AND: a->acc &= x; break;
  case WAVE_OR:  a->acc |= x; break;
  case WAVE_XOR: a->acc ^= x; break;
  default:       /* min, max, extent */
    if (pt_less(pl, x, a->lo))
      a->lo = x;
    if (pt_less(pl, a->hi, y))
      a->hi = y;
    break;
  }
  return 0;
}

void wv_partial_result(wv_partial_acc *a, wv_reduce_out *out,
                       int *some_finite)
{
  memset(out, 0, sizeof *out);
  out->n_values = wave_op_values(a->op);
  out->count = a->count;
  if (some_finite != NULL)
    *some_finite = a->have;
  if (a->dtype == WAVE_F32 && a->op == WAVE_SUM) {
    pt_chunk_end(a);
    float v = a->n_chunks > 0 ? wv_f32_levels(a->vals, a->n_chunks) : 0.0f;
    out->bits[0] = wv_f32_sum_finish(v, a->count);
    a->n_chunks = a->n_vals = 0;
    return;
  }
  if (a->dtype == WAVE_F64 && a->op == WAVE_SUM) {
    pt_chunk_end(a);
    double v = a->n_chunks > 0 ? wv_f64_levels(a->vals64, a->n_chunks) : 0.0;
    out->bits[0] = wv_f64_sum_finish(v, a->count);
    a->n_chunks = a->n_vals = 0;
    return;
  }
  if (wv_op_plan_of(a->dtype, a->op)->path == WV_PATH_XSUM) {
    out->xsum = a->xsum;
    out->bits[0] = wv_xsum_round(&a->xsum, a->count);
    return;
  }
  if (wv_op_plan_of(a->dtype, a->op)->path == WV_PATH_ARG) {
    out->index = a->have ? (int64_t)a->index : -1;
    out->bits[0] = a->have ? a->lo : 0;
    return;
  }
  if (a->count == 0 || !a->have)
    return;  /* nothing selected (float: nothing finite): zeros */
  switch (a->op) {
  case WAVE_MIN:    out->bits[0] = a->lo; break;
  case WAVE_MAX:    out->bits[0] = a->hi; break;
  case WAVE_EXTENT: out->bits[0] = a->lo; out->bits[1] = a->hi; break;
  default:          out->bits[0] = a->acc; break;
  }
}

int wv_partial_merge(wave_dtype dt, wave_op op, const wv_partial *p,
                     size_t n, wv_reduce_out *out, int *some_finite,
                     wave_error *err)
{
  wv_partial_acc a;
  int rc = wv_partial_init(&a, dt, op, n, err);
  for (size_t i = 0; rc == 0 && i < n; i++)
    rc = wv_partial_add(&a, &p[i], err);
  if (rc == 0)
    wv_partial_result(&a, out, some_finite);
  wv_partial_fini(&a);
  return rc;
}
