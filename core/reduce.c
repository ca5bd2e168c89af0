/* reduce.c - validation and the reference evaluation of reduction jobs.
 *
 * wv_reduce_reference() is the yardstick every backend is compared against
 * bit for bit (tests/conformance.c), so it is written to be read next to
 * docs/reduction.md, not to be fast: one row at a time, explicit "have a
 * value yet" flags instead of identity tricks, the float-sum levels exactly
 * as the page states them (including "a level with n == 1 is not run").
 * The only concession to size is that the first level of the float sum is
 * built group by group from the input, so no copy of the input is made
 * (jobs of 2^28 rows run through it in the GPU conformance runs).
 * fsum is the exact accumulator of core/xsum.c, row by row.
 *
 * Input and mask chunks are only guaranteed to be 4-byte aligned and hold
 * bytes received from the wire, so rows are read with memcpy.  This file
 * is compiled with -ffp-contract=off (see CMakeLists.txt): every float
 * operation below is one IEEE binary32 (float64 jobs: binary64) addition
 * or comparison.  Values of every dtype travel as uint64_t bit patterns
 * (32-bit ones in the low half), compared under the dtype's order by
 * rd_less.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/base.h"
#include "core/reduce.h"

static uint32_t rd_row(const void *data, uint64_t i)
{
  uint32_t x;
  memcpy(&x, (const unsigned char *)data + 4 * i, sizeof x);
  return x;
}

/* Row i of a chunk of dtype d, as its bit pattern. */
static uint64_t rd_val(wave_dtype d, const void *data, uint64_t i)
{
  if (wv_dtype_size(d) == 4)
    return rd_row(data, i);
  uint64_t x;
  memcpy(&x, (const unsigned char *)data + 8 * i, sizeof x);
  return x;
}

static double rd_f64(uint64_t bits)
{
  double f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

static uint64_t rd_bits64(double f)
{
  uint64_t b;
  memcpy(&b, &f, sizeof b);
  return b;
}

static float rd_f32(uint32_t bits)
{
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

static uint32_t rd_bits(float f)
{
  uint32_t b;
  memcpy(&b, &f, sizeof b);
  return b;
}

static int32_t rd_s32(uint32_t bits)
{
  int32_t s;
  memcpy(&s, &bits, sizeof s);
  return s;
}

/* Sum of the rows of n chunks of rows of `size` bytes; 0 with *total
 * set, or an error. */
static int rd_total(const wv_span *c, size_t n, const char *what,
                    unsigned size, uint64_t *total, wave_error *err)
{
  uint64_t t = 0;
  if (n > 0 && c == NULL)
    return wv_seterr(err, WAVE_EARG, "%s: %zu chunks but no chunk array",
                     what, n);
  for (size_t i = 0; i < n; i++) {
    if (c[i].rows > 0 && c[i].data == NULL)
      return wv_seterr(err, WAVE_EARG, "%s chunk %zu has %" PRIu64
                       " rows but no data", what, i, c[i].rows);
    /* Rows are addressed in bytes (4 or 8 per row) somewhere downstream. */
    if (c[i].rows > (UINT64_MAX / size - t))
      return wv_seterr(err, WAVE_ETOOBIG, "%s: more than 2^%d rows", what,
                       size == 8 ? 61 : 62);
    t += c[i].rows;
  }
  *total = t;
  return 0;
}

int wv_reduce_validate(const wv_reduce_job *job, wave_error *err)
{
  if (job == NULL)
    return wv_seterr(err, WAVE_EARG, "no job");
  int rc = wave_op_check(job->dtype, job->op);
  if (rc == WAVE_EDTYPE)
    return wv_seterr(err, rc, "unknown dtype %d", (int)job->dtype);
  if (rc == WAVE_EOP)
    return wv_seterr(err, rc, "unknown reduction op %d", (int)job->op);
  if (rc != 0)
    return wv_seterr(err, rc, "op %s is not defined for %s",
                     wave_op_name(job->op), wave_dtype_name(job->dtype));

  uint64_t in_rows = 0, mask_rows = 0;
  if ((rc = rd_total(job->input, job->n_input, "input",
                     wv_dtype_size(job->dtype), &in_rows, err)) != 0)
    return rc;
  if (in_rows != job->rows)
    return wv_seterr(err, WAVE_EARG, "job says %" PRIu64 " rows, its input "
                     "chunks hold %" PRIu64, job->rows, in_rows);
  if (!job->has_mask)
    return 0;
  if ((rc = rd_total(job->mask, job->n_mask, "mask", 4, &mask_rows,
                     err)) != 0)
    return rc;
  if (mask_rows != in_rows)
    return wv_seterr(err, WAVE_EMASKLEN, "mask has %" PRIu64 " rows, input "
                     "has %" PRIu64, mask_rows, in_rows);
  return 0;
}

uint32_t wv_mask_at(const wv_reduce_job *job, uint64_t row)
{
  if (!job->has_mask)
    return 1;
  for (size_t i = 0; i < job->n_mask; i++) {
    if (row < job->mask[i].rows)
      return rd_row(job->mask[i].data, row);
    row -= job->mask[i].rows;
  }
  return 0; /* past the end: a caller bug, but selecting nothing is safe */
}

/* Walks the mask alongside the input in increasing row order, so that the
 * reference costs O(rows) rather than O(rows x mask chunks). */
typedef struct rd_mask {
  const wv_reduce_job *job;
  size_t chunk;   /* mask chunk holding rows [base, base + rows) */
  uint64_t base;
} rd_mask;

static int rd_selected(rd_mask *m, uint64_t row)
{
  const wv_reduce_job *job = m->job;
  if (!job->has_mask)
    return 1;
  while (row - m->base >= job->mask[m->chunk].rows) {
    m->base += job->mask[m->chunk].rows;
    m->chunk++;
  }
  return rd_row(job->mask[m->chunk].data, row - m->base) != 0;
}

uint32_t wv_f32_sum_finish(float sum, uint64_t count)
{
  if (count == 0)
    return 0; /* +0.0 */
  if (isnan(sum))
    return WV_F32_CANON_NAN;
  return rd_bits(sum);
}

uint64_t wv_f64_sum_finish(double sum, uint64_t count)
{
  if (count == 0)
    return 0; /* +0.0 */
  if (isnan(sum))
    return WV_F64_CANON_NAN;
  return rd_bits64(sum);
}

/* GCC's function clones on x86-64 (an ifunc picks one at load); none
 * under ThreadSanitizer, which instruments the resolvers before it is set
 * up. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_THREAD__)
#define RD_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define RD_CLONES
#endif

/* The float sum's fixed tree, once for both widths (T the float type, P
 * the name prefix, NEGZ -0.0 as T: the padding, which adds nothing):
 *  - P_group_tree: a group of 256 values at v (rows or leaves, read
 *    only), halves added pairwise (v[i] += v[i + h], h = 128 ... 1), on
 *    vectors of 32 bytes while h spans whole vectors (each lane's add is
 *    the same IEEE add, so the same bits, 2-4x as fast), then across the
 *    first vector's lanes; cloned for AVX2 (RD_CLONES), where it runs
 *    at a third of the generic build's time, so the CPU backend's float64
 *    sum uses this one too;
 *  - P_levels: the levels over n values, in place (value g of a level
 *    only overwrites a[g], which that level has read);
 *  - P_block: a block's groups straight from the rows (the last one
 *    padded), then the levels over them: P_chunk_sum without a mask, and
 *    with at most 256 groups, so no allocation.  A level with n == 1 is
 *    not run, so one row is its own value. */
#define RD_FLOAT_TREE(T, P, NEGZ)                                            \
  typedef T P##_vec __attribute__((vector_size(32)));                        \
  RD_CLONES T P##_group_tree(const void *v)                                  \
  {                                                                          \
    enum { L = 32 / sizeof(T), N = WV_GROUP / L };                           \
    P##_vec a[N];                                                            \
    memcpy(a, v, sizeof a);                                                  \
    for (unsigned h = N / 2; h >= 1; h /= 2)                                 \
      for (unsigned i = 0; i < h; i++)                                       \
        a[i] = a[i] + a[i + h];                                              \
    T w[L];                                                                  \
    memcpy(w, &a[0], sizeof w);                                              \
    for (unsigned h = L / 2; h >= 1; h /= 2)                                 \
      for (unsigned i = 0; i < h; i++)                                       \
        w[i] = w[i] + w[i + h];                                              \
    return w[0];                                                             \
  }                                                                          \
                                                                             \
  T P##_levels(T *a, size_t n)                                               \
  {                                                                          \
    while (n > 1) {                                                          \
      size_t m = (n + WV_GROUP - 1) / WV_GROUP;                              \
      for (size_t g = 0; g < m; g++) {                                       \
        T v[WV_GROUP];                                                       \
        for (size_t j = 0; j < WV_GROUP; j++) {                              \
          size_t k = g * WV_GROUP + j;                                       \
          v[j] = k < n ? a[k] : (NEGZ);                                      \
        }                                                                    \
        a[g] = P##_group_tree(v);                                            \
      }                                                                      \
      n = m;                                                                 \
    }                                                                        \
    return a[0];                                                             \
  }                                                                          \
                                                                             \
  T P##_block(const void *rows, size_t n)                                    \
  {                                                                          \
    if (n == 1) {                                                            \
      T x;                                                                   \
      memcpy(&x, rows, sizeof x);                                            \
      return x;                                                              \
    }                                                                        \
    T a[WV_GROUP];                                                           \
    size_t groups = (n + WV_GROUP - 1) / WV_GROUP;                           \
    for (size_t g = 0; g < groups; g++) {                                    \
      size_t k = n - g * WV_GROUP < WV_GROUP ? n - g * WV_GROUP : WV_GROUP;  \
      if (k == WV_GROUP) { /* a whole group: the tree on the rows */         \
        a[g] = P##_group_tree((const uint8_t *)rows + g * sizeof a);         \
        continue;                                                            \
      }                                                                      \
      T v[WV_GROUP];                                                         \
      memcpy(v, (const uint8_t *)rows + g * WV_GROUP * sizeof v[0],          \
             k * sizeof v[0]);                                               \
      for (size_t j = k; j < WV_GROUP; j++)                                  \
        v[j] = (NEGZ);                                                       \
      a[g] = P##_group_tree(v);                                              \
    }                                                                        \
    return P##_levels(a, groups);                                            \
  }

RD_FLOAT_TREE(float, wv_f32, rd_f32(WV_F32_NEG_ZERO))
RD_FLOAT_TREE(double, wv_f64, rd_f64(WV_F64_NEG_ZERO))

/* The float sum of docs/reduction.md, once for both widths (T, P as in
 * RD_FLOAT_TREE; LEAF(data, k): row k of a chunk as T; FINISH: the
 * result rule):
 *  - P_chunk_sum: one non-empty chunk, its leaves (padding and masked
 *    rows -0.0), then its levels; the first level is built here from the
 *    leaves, group by group;
 *  - P_float_sum: every non-empty chunk's value (an empty chunk is
 *    skipped entirely), then the levels over those values. */
#define RD_FLOAT_SUM(T, P, LEAF, FINISH)                                     \
  static int P##_chunk_sum(const wv_span *c, uint64_t first_row, rd_mask *m, \
                           T *out, wave_error *err)                          \
  {                                                                          \
    if (c->rows == 1) { /* a level with n == 1 is not run */                 \
      *out = rd_selected(m, first_row) ? LEAF(c->data, 0) : (T)-0.0;        \
      return 0;                                                              \
    }                                                                        \
    size_t groups = (size_t)((c->rows + WV_GROUP - 1) / WV_GROUP);           \
    T *a = malloc(groups * sizeof *a);                                       \
    if (a == NULL)                                                           \
      return wv_seterr(err, WAVE_ENOMEM, "reference: %zu partials", groups); \
    for (size_t g = 0; g < groups; g++) {                                    \
      T v[WV_GROUP];                                                         \
      for (size_t j = 0; j < WV_GROUP; j++) {                                \
        uint64_t k = (uint64_t)g * WV_GROUP + j;                             \
        if (k >= c->rows)                                                    \
          v[j] = (T)-0.0;                   /* padding */                    \
        else if (!rd_selected(m, first_row + k))                             \
          v[j] = (T)-0.0;                   /* masked leaf */                \
        else                                                                 \
          v[j] = LEAF(c->data, k);                                           \
      }                                                                      \
      a[g] = P##_group_tree(v);                                              \
    }                                                                        \
    *out = P##_levels(a, groups);                                            \
    free(a);                                                                 \
    return 0;                                                                \
  }                                                                          \
                                                                             \
  static int P##_float_sum(const wv_reduce_job *job, uint64_t count,         \
                           uint64_t *bits, wave_error *err)                  \
  {                                                                          \
    size_t nonempty = 0;                                                     \
    for (size_t i = 0; i < job->n_input; i++)                                \
      nonempty += job->input[i].rows > 0;                                    \
    if (nonempty == 0) {                                                     \
      *bits = 0;                                                             \
      return 0;                                                              \
    }                                                                        \
    T *vals = malloc(nonempty * sizeof *vals);                               \
    if (vals == NULL)                                                        \
      return wv_seterr(err, WAVE_ENOMEM, "reference: %zu chunk values",      \
                       nonempty);                                            \
    rd_mask m = {job, 0, 0};                                                 \
    uint64_t row = 0;                                                        \
    size_t k = 0;                                                            \
    for (size_t i = 0; i < job->n_input; i++) {                              \
      const wv_span *c = &job->input[i];                                     \
      if (c->rows == 0)                                                      \
        continue;                                                            \
      int rc = P##_chunk_sum(c, row, &m, &vals[k++], err);                   \
      if (rc != 0) {                                                         \
        free(vals);                                                          \
        return rc;                                                           \
      }                                                                      \
      row += c->rows;                                                        \
    }                                                                        \
    T sum = P##_levels(vals, nonempty);                                      \
    free(vals);                                                              \
    *bits = FINISH(sum, count);                                              \
    return 0;                                                                \
  }

#define RD_LEAF32(data, k) rd_f32(rd_row((data), (k)))
#define RD_LEAF64(data, k) rd_f64(rd_val(WAVE_F64, (data), (k)))
RD_FLOAT_SUM(float, wv_f32, RD_LEAF32, wv_f32_sum_finish)
RD_FLOAT_SUM(double, wv_f64, RD_LEAF64, wv_f64_sum_finish)

/* The float order of docs/reduction.md: numeric, and -0.0 < +0.0. */
static int rd_f32_less(float a, float b)
{
  return a < b || (a == b && signbit(a) && !signbit(b));
}

static int rd_f64_less(double a, double b)
{
  return a < b || (a == b && signbit(a) && !signbit(b));
}

/* x < y in the order of dtype d (floats: finite ones). */
static int rd_less(wave_dtype d, uint64_t x, uint64_t y)
{
  switch (d) {
  case WAVE_U32: return (uint32_t)x < (uint32_t)y;
  case WAVE_S32: return rd_s32((uint32_t)x) < rd_s32((uint32_t)y);
  case WAVE_F32: return rd_f32_less(rd_f32((uint32_t)x), rd_f32((uint32_t)y));
  case WAVE_U64: return x < y;
  case WAVE_S64: {
    int64_t a, b;
    memcpy(&a, &x, sizeof a);
    memcpy(&b, &y, sizeof b);
    return a < b;
  }
  default: return rd_f64_less(rd_f64(x), rd_f64(y));
  }
}

/* Whether the row bits x of dtype d take part in min/max/argmin/argmax:
 * every integer, and the finite floats. */
static int rd_finite(wave_dtype d, uint64_t x)
{
  if (d == WAVE_F32)
    return isfinite(rd_f32((uint32_t)x));
  if (d == WAVE_F64)
    return isfinite(rd_f64(x));
  return 1;
}

/* argmin/argmax: the first selected row whose value no other considered
 * row beats (strictly less / greater: a later equal value never wins). */
static void rd_arg(const wv_reduce_job *job, wv_reduce_out *out)
{
  rd_mask m = {job, 0, 0};
  uint64_t row = 0, best = 0;
  out->index = -1;
  for (size_t i = 0; i < job->n_input; i++) {
    const wv_span *c = &job->input[i];
    for (uint64_t k = 0; k < c->rows; k++, row++) {
      if (!rd_selected(&m, row))
        continue;
      uint64_t x = rd_val(job->dtype, c->data, k);
      if (!rd_finite(job->dtype, x))
        continue;  /* NaN, +-inf: not considered, not counted */
      out->count++;
      int better = job->op == WAVE_ARGMIN ? rd_less(job->dtype, x, best)
                                          : rd_less(job->dtype, best, x);
      if (out->index < 0 || better) {
        best = x;
        out->index = (int64_t)row;
      }
    }
  }
  out->bits[0] = out->index < 0 ? 0 : best;
}

/* fsum: every selected row into the exact accumulator, in row order
 * (any order gives the same X), rounded once (core/xsum.h). */
static void rd_fsum(const wv_reduce_job *job, wv_reduce_out *out)
{
  rd_mask m = {job, 0, 0};
  uint64_t row = 0;
  wv_xsum_init(&out->xsum, job->dtype);
  for (size_t i = 0; i < job->n_input; i++) {
    const wv_span *c = &job->input[i];
    for (uint64_t k = 0; k < c->rows; k++, row++) {
      if (!rd_selected(&m, row))
        continue;
      out->count++;
      wv_xsum_add_row(&out->xsum, rd_val(job->dtype, c->data, k));
    }
  }
  out->bits[0] = wv_xsum_round(&out->xsum, out->count);
}

int wv_reduce_reference(const wv_reduce_job *job, wv_reduce_out *out,
                        wave_error *err)
{
  int rc = wv_reduce_validate(job, err);
  if (rc != 0)
    return rc;
  memset(out, 0, sizeof *out);
  out->n_values = wave_op_values(job->op);
  wave_dtype dt = job->dtype;

  if (job->op == WAVE_ARGMIN || job->op == WAVE_ARGMAX) {
    rd_arg(job, out);
    return 0;
  }
  if (job->op == WAVE_FSUM) {
    rd_fsum(job, out);
    return 0;
  }
  if ((dt == WAVE_F32 || dt == WAVE_F64) && job->op == WAVE_SUM) {
    rd_mask m = {job, 0, 0};
    for (uint64_t r = 0; r < job->rows; r++)
      out->count += rd_selected(&m, r);
    return dt == WAVE_F32
               ? wv_f32_float_sum(job, out->count, &out->bits[0], err)
               : wv_f64_float_sum(job, out->count, &out->bits[0], err);
  }

  /* Every other op: one pass over the rows in order. */
  int is_float = dt == WAVE_F32 || dt == WAVE_F64;
  uint64_t wrap = wv_dtype_size(dt) == 4 ? 0xffffffffu : UINT64_MAX;
  rd_mask m = {job, 0, 0};
  uint64_t row = 0, count = 0;
  uint64_t acc = 0, lo = 0, hi = 0;
  int have = 0;     /* lo/hi/acc hold a value (float: a finite one) */
  for (size_t i = 0; i < job->n_input; i++) {
    const wv_span *c = &job->input[i];
    for (uint64_t k = 0; k < c->rows; k++, row++) {
      if (!rd_selected(&m, row))
        continue;
      count++;
      uint64_t x = rd_val(dt, c->data, k);
      if (is_float) {
        if (!rd_finite(dt, x))
          continue;
        if (!have || rd_less(dt, x, lo))
          lo = x;
        if (!have || rd_less(dt, hi, x))
          hi = x;
        have = 1;
        continue;
      }
      switch (job->op) {
      case WAVE_SUM: acc = (acc + x) & wrap; break;  /* wraps at 2^32/2^64 */
      case WAVE_AND: acc = have ? (acc & x) : x; break;
      case WAVE_OR:  acc |= x; break;
      case WAVE_XOR: acc ^= x; break;
      default:       /* min, max, extent */
        if (!have || rd_less(dt, x, lo)) lo = x;
        if (!have || rd_less(dt, hi, x)) hi = x;
        break;
      }
      have = 1;
    }
  }
  out->count = count;
  if (count == 0 || !have)  /* empty, or no finite float: zero(s) */
    return 0;
  switch (job->op) {
  case WAVE_MIN:    out->bits[0] = lo; break;
  case WAVE_MAX:    out->bits[0] = hi; break;
  case WAVE_EXTENT: out->bits[0] = lo; out->bits[1] = hi; break;
  default:          out->bits[0] = acc; break;
  }
  return 0;
}

int wv_reduce_any_finite(const wv_reduce_job *job)
{
  rd_mask m = {job, 0, 0};
  uint64_t row = 0;
  for (size_t i = 0; i < job->n_input; i++) {
    const wv_span *c = &job->input[i];
    for (uint64_t r = 0; r < c->rows; r++, row++)
      if (rd_selected(&m, row) &&
          rd_finite(job->dtype, rd_val(job->dtype, c->data, r)))
        return 1;
  }
  return 0;
}

int wv_reduce_some_finite(const wv_reduce_job *job, const wv_reduce_out *out)
{
  if (!wv_op_plan_of(job->dtype, job->op)->says_finite || out->count == 0)
    return 0;
  return out->bits[0] != 0 || (out->n_values > 1 && out->bits[1] != 0) ||
         wv_reduce_any_finite(job);
}
