/* reduce_harness.c - the helpers of the reduction suites (test_reduce.c,
 * test_reduce_random.c): jobs over one concatenated buffer cut into
 * chunks, and t_expect(), the independent formulation the larger cases are
 * checked against (see test_reduce.c's comment).  Built with
 * -ffp-contract=off: t_tree's adds must be the IEEE adds, unfused.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reduce_harness.h"
#include "workers/cpu/cpu.h"

/* ---- helpers --------------------------------------------------------- */


uint64_t t_rng(uint64_t *s)  /* splitmix64 */
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}


void t_cut(wv_span **out, size_t *n_out, const uint32_t *base,
           const size_t *sizes, size_t n)
{
  wv_span *s = calloc(n ? n : 1, sizeof *s);
  ck_assert_ptr_nonnull(s);
  size_t off = 0;
  for (size_t i = 0; i < n; i++) {
    s[i].data = sizes[i] ? base + off : NULL;
    s[i].rows = sizes[i];
    off += sizes[i];
  }
  *out = s;
  *n_out = n;
}

/* rows of data (uninitialised, caller fills t->data / t->mask). */
void t_init(tjob *t, wave_dtype d, wave_op op, const size_t *in_sizes,
            size_t n_in, const size_t *mk_sizes, size_t n_mk, int has_mask)
{
  memset(t, 0, sizeof *t);
  for (size_t i = 0; i < n_in; i++)
    t->rows += in_sizes[i];
  t->alloc = calloc(t->rows + 2, 4);
  ck_assert_ptr_nonnull(t->alloc);
  t->data = t->alloc + 1;
  t_cut(&t->in, &t->job.n_input, t->data, in_sizes, n_in);
  if (has_mask) {
    t->malloc_ = calloc(t->rows + 2, 4);
    ck_assert_ptr_nonnull(t->malloc_);
    t->mask = t->malloc_ + 1;
    t_cut(&t->mk, &t->job.n_mask, t->mask, mk_sizes, n_mk);
  }
  t->job.dtype = d;
  t->job.op = op;
  t->job.input = t->in;
  t->job.mask = t->mk;
  t->job.has_mask = has_mask;
  t->job.rows = t->rows;
}

void t_one(tjob *t, wave_dtype d, wave_op op, size_t rows, int masked)
{
  t_init(t, d, op, &rows, 1, &rows, 1, masked);
}

void t_free(tjob *t)
{
  free(t->alloc);
  free(t->malloc_);
  free(t->in);
  free(t->mk);
}

int t_sel(const tjob *t, size_t i)
{
  return t->mask == NULL || t->mask[i] != 0;
}

/* ---- the independent expectation -------------------------------------- */

/* G(v) by folding halves = the pairwise tree that adds the fold of the
 * even-indexed values (stride 2s) to the fold of the odd ones. */
float t_pair(const float *v, size_t o, size_t s, size_t n)
{
  if (n == 1)
    return v[o];
  return t_pair(v, o, 2 * s, n / 2) + t_pair(v, o + s, 2 * s, n / 2);
}

static float t_tree(const float *x, size_t n)
{
  if (n == 1)
    return x[0];
  size_t m = (n + 255) / 256;
  float *p = malloc(m * sizeof *p);
  ck_assert_ptr_nonnull(p);
  for (size_t g = 0; g < m; g++) {
    float v[256];
    for (size_t j = 0; j < 256; j++)
      v[j] = 256 * g + j < n ? x[256 * g + j] : bitsf(0x80000000u);
    p[g] = t_pair(v, 0, 1, 256);
  }
  float r = t_tree(p, m);
  free(p);
  return r;
}

static int t_cmp_u(const void *a, const void *b)
{
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

static int t_cmp_s(const void *a, const void *b)
{
  int64_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  if (x >= 0x80000000ll) x -= 0x100000000ll;
  if (y >= 0x80000000ll) y -= 0x100000000ll;
  return x < y ? -1 : x > y;
}

static int t_cmp_f(const void *a, const void *b)
{
  float x = bitsf(*(const uint32_t *)a), y = bitsf(*(const uint32_t *)b);
  if (x != y)
    return x < y ? -1 : 1;
  return (signbit(y) != 0) - (signbit(x) != 0); /* -0.0 before +0.0 */
}

void t_expect(const tjob *t, wv_reduce_out *o)
{
  const wv_reduce_job *j = &t->job;
  memset(o, 0, sizeof *o);
  o->n_values = j->op == WAVE_EXTENT ? 2 : 1;
  uint32_t *sel = malloc((t->rows + 1) * 4);
  ck_assert_ptr_nonnull(sel);
  size_t n = 0;
  for (size_t i = 0; i < t->rows; i++)
    if (t_sel(t, i))
      sel[n++] = t->data[i];
  o->count = n;
  if (n == 0) {
    free(sel);
    return;
  }
  if (j->dtype == WAVE_F32 && j->op == WAVE_SUM) {
    float *leaves = malloc(t->rows * sizeof *leaves);
    float *vals = malloc(j->n_input * sizeof *vals);
    ck_assert(leaves != NULL && vals != NULL);
    size_t nv = 0, off = 0;
    for (size_t c = 0; c < j->n_input; c++) {
      size_t r = j->input[c].rows;
      if (r == 0)
        continue;
      for (size_t i = 0; i < r; i++)
        leaves[i] = t_sel(t, off + i) ? bitsf(t->data[off + i])
                                      : bitsf(0x80000000u);
      vals[nv++] = t_tree(leaves, r);
      off += r;
    }
    float s = t_tree(vals, nv);
    o->bits[0] = isnan(s) ? 0x7fc00000u : fbits(s);
    free(leaves);
    free(vals);
  } else if (j->op == WAVE_MIN || j->op == WAVE_MAX || j->op == WAVE_EXTENT) {
    size_t m = n;
    if (j->dtype == WAVE_F32) {
      m = 0;
      for (size_t i = 0; i < n; i++)
        if (isfinite(bitsf(sel[i])))
          sel[m++] = sel[i];
    }
    if (m > 0) {
      qsort(sel, m, 4, j->dtype == WAVE_U32 ? t_cmp_u
                       : j->dtype == WAVE_S32 ? t_cmp_s : t_cmp_f);
      uint32_t lo = sel[0], hi = sel[m - 1];
      o->bits[0] = j->op == WAVE_MAX ? hi : lo;
      o->bits[1] = j->op == WAVE_EXTENT ? hi : 0;
    }
  } else {
    uint32_t a = j->op == WAVE_AND ? 0xffffffffu : 0;
    for (size_t i = 0; i < n; i++)
      a = j->op == WAVE_SUM ? a + sel[i] : j->op == WAVE_AND ? a & sel[i]
        : j->op == WAVE_OR ? a | sel[i] : a ^ sel[i];
    o->bits[0] = a;
  }
  free(sel);
}

/* Every dtype/op pair. */
const t_dtop t_pairs[] = {
  {WAVE_U32, WAVE_SUM}, {WAVE_U32, WAVE_MIN}, {WAVE_U32, WAVE_MAX},
  {WAVE_U32, WAVE_EXTENT}, {WAVE_U32, WAVE_AND}, {WAVE_U32, WAVE_OR},
  {WAVE_U32, WAVE_XOR},
  {WAVE_S32, WAVE_SUM}, {WAVE_S32, WAVE_MIN}, {WAVE_S32, WAVE_MAX},
  {WAVE_S32, WAVE_EXTENT}, {WAVE_S32, WAVE_AND}, {WAVE_S32, WAVE_OR},
  {WAVE_S32, WAVE_XOR},
  {WAVE_F32, WAVE_SUM}, {WAVE_F32, WAVE_MIN}, {WAVE_F32, WAVE_MAX},
  {WAVE_F32, WAVE_EXTENT},
};
const size_t t_n_pairs = sizeof t_pairs / sizeof t_pairs[0];

/* test_reduce.c's fixture opens it for the "semantics" cases. */
wv_device *t_dev;

wv_reduce_out t_ref(const tjob *t)
{
  wv_reduce_out o, c;
  wave_error e;
  int rc = wv_reduce_reference(&t->job, &o, &e);
  ck_assert_msg(rc == 0, "reference: %s", e.message);
  if (t_dev != NULL) {
    ck_assert_int_eq(wv_cpu_backend.reduce(t_dev, &t->job, &c, &e), 0);
    T_SAME(c, o, "cpu backend vs reference");
  }
  return o;
}

/* Literal expectation for single-value results. */
void t_want(const tjob *t, uint32_t bits, uint64_t count)
{
  wv_reduce_out o = t_ref(t), w = {.n_values = 1, .bits = {bits, 0},
                                   .count = count};
  T_SAME(o, w, "reference");
}

void t_fill_floats(tjob *t, const float *v, size_t n)
{
  for (size_t i = 0; i < n; i++)
    t->data[i] = fbits(v[i]);
}
