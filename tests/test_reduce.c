/* test_reduce.c - reduction semantics (docs/reduction.md) and the CPU backend.
 *
 * Expectations never come from the code under test:
 *  - small cases are worked by hand, with literal bit patterns (the comment
 *    above each says how);
 *  - larger cases use t_expect(), an independent formulation written here:
 *    integer sum/and/or/xor as a loop over a concatenated copy, min/max by
 *    sorting the selected (finite) values with a comparator, and the float
 *    sum as a recursive pairwise tree (t_pair: G(v) = G(even) + G(odd),
 *    which is what folding halves computes) over explicitly padded groups;
 *  - the CPU backend is compared with both wv_reduce_reference() and
 *    t_expect(), at several thread counts.
 */
#include <check.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base.h"
#include "workers/cpu/cpu.h"
#include "core/reduce.h"

/* ---- helpers --------------------------------------------------------- */

static uint32_t fbits(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }
static float bitsf(uint32_t b) { float f; memcpy(&f, &b, 4); return f; }

static uint64_t t_rng(uint64_t *s)  /* splitmix64 */
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* A job over one concatenated buffer, cut into chunks.  Rows start one row
 * into the allocation, so the data is 4- but not 8-byte aligned. */
typedef struct tjob {
  uint32_t *alloc, *data;   /* data = alloc + 1 */
  uint32_t *malloc_, *mask; /* mask = malloc_ + 1, or NULL */
  size_t rows;
  wv_span *in, *mk;
  wv_reduce_job job;
} tjob;

static void t_cut(wv_span **out, size_t *n_out, const uint32_t *base,
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
static void t_init(tjob *t, wave_dtype d, wave_op op, const size_t *in_sizes,
                   size_t n_in, const size_t *mk_sizes, size_t n_mk,
                   int has_mask)
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

static void t_one(tjob *t, wave_dtype d, wave_op op, size_t rows, int masked)
{
  t_init(t, d, op, &rows, 1, &rows, 1, masked);
}

static void t_free(tjob *t)
{
  free(t->alloc);
  free(t->malloc_);
  free(t->in);
  free(t->mk);
}

static int t_sel(const tjob *t, size_t i)
{
  return t->mask == NULL || t->mask[i] != 0;
}

/* ---- the independent expectation -------------------------------------- */

/* G(v) by folding halves = the pairwise tree that adds the fold of the
 * even-indexed values (stride 2s) to the fold of the odd ones. */
static float t_pair(const float *v, size_t o, size_t s, size_t n)
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

static void t_expect(const tjob *t, wv_reduce_out *o)
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

/* Compare an out with the expectation, with a readable message. */
#define T_SAME(got, want, what)                                                \
  do {                                                                         \
    ck_assert_msg((got).n_values == (want).n_values &&                         \
                      (got).bits[0] == (want).bits[0] &&                       \
                      ((want).n_values < 2 || (got).bits[1] == (want).bits[1]) && \
                      (got).count == (want).count,                             \
                  "%s: got %08x %08x count %llu, want %08x %08x count %llu",   \
                  what, (got).bits[0], (got).bits[1],                          \
                  (unsigned long long)(got).count, (want).bits[0],             \
                  (want).bits[1], (unsigned long long)(want).count);           \
  } while (0)

/* The "semantics" cases also run on this CPU device (fixture below), so
 * every hand-worked expectation pins the backend as well. */
static wv_device *t_dev;

static wv_reduce_out t_ref(const tjob *t)
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
static void t_want(const tjob *t, uint32_t bits, uint64_t count)
{
  wv_reduce_out o = t_ref(t), w = {.n_values = 1, .bits = {bits, 0},
                                   .count = count};
  T_SAME(o, w, "reference");
}

static void t_fill_floats(tjob *t, const float *v, size_t n)
{
  for (size_t i = 0; i < n; i++)
    t->data[i] = fbits(v[i]);
}

/* ---- hand-worked cases -------------------------------------------------- */

static void t_dev_open(void)
{
  wv_device_config cfg = {.name = "cpu-hand", .backend = "cpu", .threads = 2};
  wave_error e;
  ck_assert_int_eq(wv_cpu_backend.open(&cfg, &t_dev, &e), 0);
}

static void t_dev_close(void)
{
  wv_cpu_backend.close(t_dev);
  t_dev = NULL;
}

START_TEST(f32_sum_tree_order)
{
  /* v[0] = 1, v[1] = v[129] = 2^-24.  Fold 128 adds v[129] into v[1]
   * (2^-23, exact); the final fold adds it to 1: 1 + 2^-23 = 0x3f800001.
   * A left-to-right sum would round 1 + 2^-24 to 1 twice: 0x3f800000. */
  tjob t;
  t_one(&t, WAVE_F32, WAVE_SUM, 256, 0);
  for (int i = 0; i < 256; i++)
    t.data[i] = 0x80000000u;  /* -0.0: the identity */
  t.data[0] = 0x3f800000u;
  t.data[1] = t.data[129] = 0x33800000u;  /* 2^-24 */
  t_want(&t, 0x3f800001u, 256);
  t_free(&t);

  /* Three rows 1, 2^-24, 2^-24 in one chunk: fold 2 gives 1 + 2^-24 = 1
   * (tie to even) in v[0] and 2^-24 in v[1]; fold 1: 1 again. */
  t_one(&t, WAVE_F32, WAVE_SUM, 3, 0);
  t.data[0] = 0x3f800000u;
  t.data[1] = t.data[2] = 0x33800000u;
  t_want(&t, 0x3f800000u, 3);
  t_free(&t);
}
END_TEST

START_TEST(f32_sum_chunks_are_reduced_on_their_own)
{
  /* The same three rows as chunks [1] [2^-24, 2^-24]: the second chunk is
   * 2^-23, the merge 1 + 2^-23 = 0x3f800001 (not 0x3f800000 as unchunked).
   * A zero-row chunk in between changes nothing. */
  size_t sizes[] = {1, 0, 2};
  tjob t;
  t_init(&t, WAVE_F32, WAVE_SUM, sizes, 3, NULL, 0, 0);
  t.data[0] = 0x3f800000u;
  t.data[1] = t.data[2] = 0x33800000u;
  t_want(&t, 0x3f800001u, 3);
  t_free(&t);
}
END_TEST

START_TEST(f32_sum_special_values)
{
  tjob t;
  static const struct {
    uint32_t in[4];
    size_t n;
    uint32_t want;
    const char *why;
  } cases[] = {
    {{0x80000000u}, 1, 0x80000000u, "-0.0 alone stays -0.0"},
    {{0x80000000u, 0x80000000u}, 2, 0x80000000u, "-0 + -0 = -0"},
    {{0x80000000u, 0x00000000u}, 2, 0x00000000u, "-0 + +0 = +0"},
    {{0x7f800000u, 0xff800000u}, 2, 0x7fc00000u, "+inf + -inf: NaN"},
    {{0x7f800000u, 0x3f800000u}, 2, 0x7f800000u, "inf propagates"},
    {{0xff800000u}, 1, 0xff800000u, "-inf alone"},
    {{0x7f800001u}, 1, 0x7fc00000u, "signalling NaN row: canonical"},
    {{0xffc00123u, 0x3f800000u}, 2, 0x7fc00000u, "negative NaN: canonical"},
    {{0x00000001u, 0x00000001u, 0x00000001u}, 3, 0x00000003u,
     "subnormals are not flushed"},
    {{0x7f7fffffu, 0x7f7fffffu}, 2, 0x7f800000u, "overflow to +inf"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    t_one(&t, WAVE_F32, WAVE_SUM, cases[i].n, 0);
    memcpy(t.data, cases[i].in, cases[i].n * 4);
    wv_reduce_out o = t_ref(&t);
    ck_assert_msg(o.bits[0] == cases[i].want && o.count == cases[i].n,
                  "%s: got %08x", cases[i].why, o.bits[0]);
    t_free(&t);
  }
  /* Masked: a selected -0.0 row (count 1) keeps its sign; masked NaN and
   * inf rows are -0.0 leaves, so they do not poison the sum. */
  t_one(&t, WAVE_F32, WAVE_SUM, 4, 1);
  t.data[0] = 0x7fc00000u; t.mask[0] = 0;
  t.data[1] = 0x80000000u; t.mask[1] = 7;
  t.data[2] = 0x7f800000u; t.mask[2] = 0;
  t.data[3] = 0x40000000u; t.mask[3] = 0;
  t_want(&t, 0x80000000u, 1);
  t_free(&t);
  /* The same through whole groups: 600 rows, all masked out but row 300,
   * which is -0.0.  Masked leaves of +0.0 would give +0.0. */
  t_one(&t, WAVE_F32, WAVE_SUM, 600, 1);
  for (int i = 0; i < 600; i++) {
    t.data[i] = 0x3f800000u + (uint32_t)i;
    t.mask[i] = 0;
  }
  t.data[300] = 0x80000000u;
  t.mask[300] = 1;
  t_want(&t, 0x80000000u, 1);
  t_free(&t);
}
END_TEST

START_TEST(f32_min_max_order)
{
  tjob t;
  /* -0.0 < +0.0, in either row order. */
  for (int flip = 0; flip < 2; flip++) {
    t_one(&t, WAVE_F32, WAVE_EXTENT, 2, 0);
    t.data[flip] = 0x80000000u;
    t.data[1 - flip] = 0x00000000u;
    wv_reduce_out o = t_ref(&t);
    ck_assert_uint_eq(o.n_values, 2);
    ck_assert_uint_eq(o.bits[0], 0x80000000u);
    ck_assert_uint_eq(o.bits[1], 0x00000000u);
    t.job.op = WAVE_MIN;
    t_want(&t, 0x80000000u, 2);
    t.job.op = WAVE_MAX;
    t_want(&t, 0x00000000u, 2);
    t_free(&t);
  }
  /* NaN and infinities are ignored but still counted. */
  float v[] = {NAN, 5.0f, INFINITY, -INFINITY, -3.0f, -NAN};
  t_one(&t, WAVE_F32, WAVE_EXTENT, 6, 0);
  t_fill_floats(&t, v, 6);
  wv_reduce_out o = t_ref(&t);
  ck_assert_uint_eq(o.bits[0], 0xc0400000u);  /* -3.0 */
  ck_assert_uint_eq(o.bits[1], 0x40a00000u);  /* 5.0 */
  ck_assert_uint_eq(o.count, 6);
  t_free(&t);
  /* No finite row: +0.0, count still the selected rows. */
  float nf[] = {NAN, INFINITY, -INFINITY};
  t_one(&t, WAVE_F32, WAVE_MIN, 3, 0);
  t_fill_floats(&t, nf, 3);
  t_want(&t, 0, 3);
  t.job.op = WAVE_MAX;
  t_want(&t, 0, 3);
  t_free(&t);
  /* Subnormals and the extremes order as numbers. */
  t_one(&t, WAVE_F32, WAVE_EXTENT, 4, 0);
  t.data[0] = 0x00000001u; t.data[1] = 0x80000001u;
  t.data[2] = 0xff7fffffu; t.data[3] = 0x7f7fffffu;
  o = t_ref(&t);
  ck_assert_uint_eq(o.bits[0], 0xff7fffffu);
  ck_assert_uint_eq(o.bits[1], 0x7f7fffffu);
  t_free(&t);
}
END_TEST

START_TEST(int_ops_by_hand)
{
  tjob t;
  t_one(&t, WAVE_U32, WAVE_SUM, 3, 0);
  t.data[0] = 0xffffffffu; t.data[1] = 2; t.data[2] = 0x80000000u;
  t_want(&t, 0x80000001u, 3);       /* wraps modulo 2^32 */
  t.job.dtype = WAVE_S32;
  t_want(&t, 0x80000001u, 3);       /* same bits for sint32 */
  t.job.op = WAVE_MIN;
  t_want(&t, 0x80000000u, 3);       /* INT32_MIN */
  t.job.op = WAVE_MAX;
  t_want(&t, 2, 3);
  t.job.dtype = WAVE_U32;
  t.job.op = WAVE_MIN;
  t_want(&t, 2, 3);
  t.job.op = WAVE_MAX;
  t_want(&t, 0xffffffffu, 3);
  t.job.op = WAVE_AND;
  t_want(&t, 0x00000000u, 3);
  t.job.op = WAVE_OR;
  t_want(&t, 0xffffffffu, 3);
  t.job.op = WAVE_XOR;
  t_want(&t, 0x7ffffffdu, 3);       /* ~2 ^ 0x80000000 */
  t.job.dtype = WAVE_S32;
  t.job.op = WAVE_EXTENT;
  wv_reduce_out o = t_ref(&t);
  ck_assert_uint_eq(o.bits[0], 0x80000000u);
  ck_assert_uint_eq(o.bits[1], 2);
  t_free(&t);

  /* and with a mask: unselected rows do not clear bits. */
  t_one(&t, WAVE_U32, WAVE_AND, 3, 1);
  t.data[0] = 0xf0f0f0f0u; t.mask[0] = 1;
  t.data[1] = 0;           t.mask[1] = 0;
  t.data[2] = 0xff00ff00u; t.mask[2] = 0x80000000u;  /* any nonzero */
  t_want(&t, 0xf000f000u, 2);
  t_free(&t);
}
END_TEST

static const struct { wave_dtype d; wave_op op; } t_pairs[] = {
  {WAVE_U32, WAVE_SUM}, {WAVE_U32, WAVE_MIN}, {WAVE_U32, WAVE_MAX},
  {WAVE_U32, WAVE_EXTENT}, {WAVE_U32, WAVE_AND}, {WAVE_U32, WAVE_OR},
  {WAVE_U32, WAVE_XOR},
  {WAVE_S32, WAVE_SUM}, {WAVE_S32, WAVE_MIN}, {WAVE_S32, WAVE_MAX},
  {WAVE_S32, WAVE_EXTENT}, {WAVE_S32, WAVE_AND}, {WAVE_S32, WAVE_OR},
  {WAVE_S32, WAVE_XOR},
  {WAVE_F32, WAVE_SUM}, {WAVE_F32, WAVE_MIN}, {WAVE_F32, WAVE_MAX},
  {WAVE_F32, WAVE_EXTENT},
};
#define T_N_PAIRS (sizeof t_pairs / sizeof t_pairs[0])

START_TEST(empty_inputs_give_zero)
{
  size_t none[] = {0}, empties[] = {0, 0, 0}, three[] = {3};
  for (size_t p = 0; p < T_N_PAIRS; p++) {
    tjob t;
    /* no chunks at all */
    t_init(&t, t_pairs[p].d, t_pairs[p].op, none, 0, none, 0, 0);
    wv_reduce_out o = t_ref(&t), w = {.n_values = wave_op_values(t.job.op)};
    T_SAME(o, w, "no chunks");
    t_free(&t);
    /* only empty chunks, with a mask of zero chunks */
    t_init(&t, t_pairs[p].d, t_pairs[p].op, empties, 3, none, 0, 1);
    o = t_ref(&t);
    T_SAME(o, w, "empty chunks");
    t_free(&t);
    /* every row masked out (values that are not the op's identity) */
    t_init(&t, t_pairs[p].d, t_pairs[p].op, three, 1, three, 1, 1);
    t.data[0] = 0x3f800000u; t.data[1] = 0x12345678u; t.data[2] = 0x80000000u;
    o = t_ref(&t);
    T_SAME(o, w, "all masked");
    t_free(&t);
  }
}
END_TEST

START_TEST(bad_jobs_rejected)
{
  tjob t;
  wave_error e;
  wv_reduce_out o;
  size_t in[] = {1000, 24}, mk[] = {512, 488};
  t_init(&t, WAVE_U32, WAVE_SUM, in, 2, mk, 2, 1);
  ck_assert_int_eq(wv_reduce_validate(&t.job, &e), WAVE_EMASKLEN);
  ck_assert_int_eq(e.code, WAVE_EMASKLEN);
  ck_assert_str_eq(e.message, "mask has 1000 rows, input has 1024");
  ck_assert_int_eq(wv_reduce_reference(&t.job, &o, &e), WAVE_EMASKLEN);
  t.job.has_mask = 0;  /* without a mask the mask chunks do not matter */
  ck_assert_int_eq(wv_reduce_validate(&t.job, &e), 0);
  t.job.rows = 1000;   /* job->rows must be the chunks' total */
  ck_assert_int_eq(wv_reduce_validate(&t.job, &e), WAVE_EARG);
  t.job.rows = 1024;
  t.job.dtype = WAVE_F32;
  static const wave_op intonly[] = {WAVE_AND, WAVE_OR, WAVE_XOR};
  for (int i = 0; i < 3; i++) {
    t.job.op = intonly[i];
    ck_assert_int_eq(wv_reduce_validate(&t.job, &e), WAVE_EOPDTYPE);
    ck_assert_ptr_nonnull(strstr(e.message, wave_op_name(intonly[i])));
    ck_assert_int_eq(wv_reduce_reference(&t.job, &o, &e), WAVE_EOPDTYPE);
  }
  t.job.op = WAVE_OP_NONE;
  ck_assert_int_eq(wv_reduce_validate(&t.job, &e), WAVE_EOP);
  t.job.op = (wave_op)8;
  ck_assert_int_eq(wv_reduce_validate(&t.job, &e), WAVE_EOP);
  t.job.op = WAVE_SUM;
  t.job.dtype = WAVE_DTYPE_NONE;
  ck_assert_int_eq(wv_reduce_validate(&t.job, &e), WAVE_EDTYPE);
  t.job.dtype = (wave_dtype)9;
  ck_assert_int_eq(wv_reduce_validate(&t.job, &e), WAVE_EDTYPE);
  t.job.dtype = WAVE_U32;
  t.in[1].data = NULL;  /* rows without data */
  ck_assert_int_eq(wv_reduce_validate(&t.job, &e), WAVE_EARG);
  ck_assert_int_eq(wv_reduce_validate(NULL, &e), WAVE_EARG);
  t_free(&t);
}
END_TEST

START_TEST(helpers)
{
  /* wv_f32_group_tree against the pairwise formulation, random values. */
  uint64_t s = 42;
  for (int r = 0; r < 50; r++) {
    float v[256], w[256];
    for (int i = 0; i < 256; i++) {
      uint32_t b = (uint32_t)t_rng(&s);
      b = (b & 0x807fffffu) | ((100u + (b >> 23) % 60u) << 23);
      v[i] = w[i] = bitsf(b);
    }
    float want = t_pair(w, 0, 1, 256);
    ck_assert_uint_eq(fbits(wv_f32_group_tree(v)), fbits(want));
  }
  ck_assert_uint_eq(wv_f32_sum_finish(bitsf(0x7fc00001u), 3), 0x7fc00000u);
  ck_assert_uint_eq(wv_f32_sum_finish(bitsf(0xffffffffu), 1), 0x7fc00000u);
  ck_assert_uint_eq(wv_f32_sum_finish(bitsf(0x80000000u), 1), 0x80000000u);
  ck_assert_uint_eq(wv_f32_sum_finish(bitsf(0x80000000u), 0), 0);
  ck_assert_uint_eq(wv_f32_sum_finish(bitsf(0x7f800000u), 0), 0);
  ck_assert_uint_eq(wv_f32_sum_finish(bitsf(0x7f800000u), 9), 0x7f800000u);

  /* wv_mask_at across mask chunks, including empty ones. */
  size_t in[] = {10}, mk[] = {0, 4, 0, 6};
  tjob t;
  t_init(&t, WAVE_U32, WAVE_SUM, in, 1, mk, 4, 1);
  for (uint32_t i = 0; i < 10; i++)
    t.mask[i] = i * 3;
  for (uint32_t i = 0; i < 10; i++)
    ck_assert_uint_eq(wv_mask_at(&t.job, i), i * 3);
  t.job.has_mask = 0;
  ck_assert_uint_ne(wv_mask_at(&t.job, 5), 0);
  t_free(&t);
}
END_TEST

/* ---- random jobs: reference and CPU backend vs t_expect ---------------- */

typedef enum { TD_RANDOM, TD_SPECIAL } t_data;

static void t_fill(tjob *t, uint64_t *s, t_data kind, unsigned mask_pct)
{
  for (size_t i = 0; i < t->rows; i++) {
    uint32_t b = (uint32_t)t_rng(s);
    if (t->job.dtype == WAVE_F32) {
      /* magnitudes 2^-8 .. 2^8, either sign: many roundings, so the bits
       * depend on the order of the additions */
      b = (b & 0x807fffffu) | ((119u + (b >> 23) % 16u) << 23);
      if (kind == TD_SPECIAL) {
        static const uint32_t sp[] = {0x7fc00000u, 0xffc00001u, 0x7f800001u,
                                      0x7f800000u, 0xff800000u, 0x80000000u,
                                      0x00000000u, 0x00000001u, 0x807fffffu,
                                      0x7f7fffffu, 0xff7fffffu};
        uint64_t r = t_rng(s);
        if (r % 4 == 0)
          b = sp[(r >> 8) % (sizeof sp / sizeof sp[0])];
      }
    } else if (kind == TD_SPECIAL) {
      static const uint32_t sp[] = {0, 1, 0x7fffffffu, 0x80000000u,
                                    0xffffffffu, 0x80000001u};
      uint64_t r = t_rng(s);
      if (r % 2 == 0)
        b = sp[(r >> 8) % (sizeof sp / sizeof sp[0])];
    }
    t->data[i] = b;
    if (t->mask != NULL) {
      uint64_t r = t_rng(s);
      t->mask[i] = r % 100 < mask_pct ? (uint32_t)(r >> 32) | 1u : 0;
    }
  }
}

/* Random chunk sizes summing to rows: n pieces, some of them empty. */
static size_t t_split(uint64_t *s, size_t rows, size_t *sizes, size_t max)
{
  size_t n = 1 + t_rng(s) % max, left = rows;
  for (size_t i = 0; i + 1 < n; i++) {
    size_t r = t_rng(s) % 4 == 0 ? 0 : (size_t)(t_rng(s) % (left + 1));
    sizes[i] = r;
    left -= r;
  }
  sizes[n - 1] = left;
  return n;
}

static wv_device *t_open_cpu(unsigned threads)
{
  wv_device_config cfg = {.name = "cpu-test", .backend = "cpu",
                          .threads = threads};
  wv_device *dev = NULL;
  wave_error e;
  int rc = wv_cpu_backend.open(&cfg, &dev, &e);
  ck_assert_msg(rc == 0, "open: %s", e.message);
  return dev;
}

/* Check one job three ways; what says which job it was. */
static void t_check(const tjob *t, wv_device *dev, const char *what)
{
  wv_reduce_out want, ref, got;
  char msg[200];
  t_expect(t, &want);
  ref = t_ref(t);
  snprintf(msg, sizeof msg, "reference, %s %s %s", what,
           wave_dtype_name(t->job.dtype), wave_op_name(t->job.op));
  T_SAME(ref, want, msg);
  if (dev != NULL) {
    wave_error e;
    ck_assert_int_eq(wv_cpu_backend.reduce(dev, &t->job, &got, &e), 0);
    snprintf(msg, sizeof msg, "cpu, %s %s %s", what,
             wave_dtype_name(t->job.dtype), wave_op_name(t->job.op));
    T_SAME(got, want, msg);
  }
}

START_TEST(sizes_around_group_boundaries)
{
  static const size_t sizes[] = {1, 2, 31, 255, 256, 257, 511, 512, 513,
                                 65535, 65536, 65537, 65536 * 2 + 255};
  wv_device *dev = t_open_cpu(2);
  uint64_t s = 7;
  for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++)
    for (size_t p = 0; p < T_N_PAIRS; p++)
      for (int masked = 0; masked < 2; masked++) {
        tjob t;
        t_one(&t, t_pairs[p].d, t_pairs[p].op, sizes[z], masked);
        t_fill(&t, &s, TD_RANDOM, 60);
        char what[64];
        snprintf(what, sizeof what, "%zu rows%s", sizes[z],
                 masked ? " masked" : "");
        t_check(&t, dev, what);
        t_free(&t);
      }
  wv_cpu_backend.close(dev);
}
END_TEST

START_TEST(differently_chunked_masks)
{
  struct { size_t in[4], n_in, mk[4], n_mk; } shapes[] = {
    {{1000, 24}, 2, {512, 512}, 2},
    {{24, 1000}, 2, {512, 0, 512}, 3},
    {{300, 0, 300, 424}, 4, {1}, 0},   /* mask set below: one chunk */
    {{70000, 1}, 2, {256, 65535, 4210}, 3},
    {{1}, 1, {0, 1, 0}, 3},
  };
  wv_device *dev = t_open_cpu(3);
  uint64_t s = 11;
  for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
    size_t rows = 0;
    for (size_t i = 0; i < shapes[k].n_in; i++)
      rows += shapes[k].in[i];
    if (shapes[k].n_mk == 0) {
      shapes[k].mk[0] = rows;
      shapes[k].n_mk = 1;
    }
    for (size_t p = 0; p < T_N_PAIRS; p++)
      for (int kind = TD_RANDOM; kind <= TD_SPECIAL; kind++) {
        tjob t;
        t_init(&t, t_pairs[p].d, t_pairs[p].op, shapes[k].in, shapes[k].n_in,
               shapes[k].mk, shapes[k].n_mk, 1);
        t_fill(&t, &s, (t_data)kind, 50);
        char what[64];
        snprintf(what, sizeof what, "shape %zu kind %d", k, kind);
        t_check(&t, dev, what);
        t_free(&t);
      }
  }
  wv_cpu_backend.close(dev);
}
END_TEST

START_TEST(cpu_random_jobs)
{
  static const unsigned threads[] = {1, 2, 3};
  uint64_t s = 2024;
  for (size_t th = 0; th < 3; th++) {
    wv_device *dev = t_open_cpu(threads[th]);
    for (int r = 0; r < 40; r++) {
      size_t p = (size_t)(t_rng(&s) % T_N_PAIRS);
      size_t rows = (size_t)(t_rng(&s) % (r % 4 == 0 ? 300000 : 3000));
      size_t in[16], mk[16];
      size_t n_in = t_split(&s, rows, in, 16);
      size_t n_mk = t_split(&s, rows, mk, 16);
      int masked = (int)(t_rng(&s) % 2);
      tjob t;
      t_init(&t, t_pairs[p].d, t_pairs[p].op, in, n_in, mk, n_mk, masked);
      t_fill(&t, &s, (t_data)(t_rng(&s) % 2), (unsigned)(t_rng(&s) % 101));
      char what[96];
      snprintf(what, sizeof what, "threads %u job %d: %zu rows, %zu/%zu chunks",
               threads[th], r, rows, n_in, n_mk);
      t_check(&t, dev, what);
      t_free(&t);
    }
    wv_cpu_backend.close(dev);
  }
}
END_TEST

START_TEST(f32_sum_many_chunks)
{
  /* The merge of chunk values: hundreds of chunks, float sums whose bits
   * depend on the order (one wrong order can agree by chance; thirty
   * jobs do not). */
  wv_device *dev = t_open_cpu(2);
  uint64_t s = 31;
  for (int r = 0; r < 30; r++) {
    size_t rows = 500 + (size_t)(t_rng(&s) % 20000);
    size_t k = 50 + (size_t)(t_rng(&s) % 550), left = rows;
    size_t *in = malloc(k * sizeof *in), mk[] = {rows / 2, rows - rows / 2};
    ck_assert_ptr_nonnull(in);
    for (size_t i = 0; i + 1 < k; i++) {
      in[i] = t_rng(&s) % 6 == 0 ? 0
            : (size_t)(t_rng(&s) % (2 * left / (k - i) + 1));
      in[i] = in[i] < left ? in[i] : left;
      left -= in[i];
    }
    in[k - 1] = left;
    tjob t;
    t_init(&t, WAVE_F32, WAVE_SUM, in, k, mk, 2, r % 2);
    t_fill(&t, &s, TD_RANDOM, 80);
    char what[64];
    snprintf(what, sizeof what, "%zu rows in %zu chunks", rows, k);
    t_check(&t, dev, what);
    t_free(&t);
    free(in);
  }
  wv_cpu_backend.close(dev);
}
END_TEST

START_TEST(cpu_many_tiny_chunks)
{
  /* 3000 chunks of 0..5 rows: items are batched into tasks. */
  enum { N = 3000 };
  size_t *in = malloc(N * sizeof *in), *mk = malloc(N * sizeof *mk);
  ck_assert(in != NULL && mk != NULL);
  uint64_t s = 5, rows = 0;
  for (size_t i = 0; i < N; i++) {
    in[i] = (size_t)(t_rng(&s) % 6);
    rows += in[i];
  }
  mk[0] = (size_t)rows / 3;
  mk[1] = (size_t)rows - mk[0];
  wv_device *dev = t_open_cpu(2);
  for (size_t p = 0; p < T_N_PAIRS; p++) {
    tjob t;
    t_init(&t, t_pairs[p].d, t_pairs[p].op, in, N, mk, 2, (int)(p % 2));
    t_fill(&t, &s, TD_RANDOM, 70);
    t_check(&t, dev, "3000 tiny chunks");
    t_free(&t);
  }
  wv_cpu_backend.close(dev);
  free(in);
  free(mk);
}
END_TEST

START_TEST(cpu_large_multi_item)
{
  /* 2^20 + 3 rows in two chunks, mask cut mid-group: many items/tasks. */
  size_t in[] = {(1u << 19) + 1, (1u << 19) + 2};
  size_t mk[] = {100003, (1u << 20) + 3 - 100003};
  wv_device *dev = t_open_cpu(0);
  uint64_t s = 99;
  static const struct { wave_dtype d; wave_op op; } few[] = {
    {WAVE_F32, WAVE_SUM}, {WAVE_F32, WAVE_EXTENT}, {WAVE_S32, WAVE_EXTENT},
    {WAVE_U32, WAVE_SUM}};
  for (size_t p = 0; p < 4; p++)
    for (int masked = 0; masked < 2; masked++) {
      tjob t;
      t_init(&t, few[p].d, few[p].op, in, 2, mk, 2, masked);
      t_fill(&t, &s, TD_RANDOM, 50);
      t_check(&t, dev, "2^20 + 3 rows");
      t_free(&t);
    }
  wv_cpu_backend.close(dev);
}
END_TEST

/* ---- the CPU device itself ------------------------------------------------ */

typedef struct { atomic_uint *hits; unsigned threads; atomic_uint bad; } t_pool;

static void t_pool_fn(void *arg, size_t task, unsigned worker)
{
  t_pool *p = arg;
  atomic_fetch_add(&p->hits[task], 1);
  if (worker >= p->threads)
    atomic_fetch_add(&p->bad, 1);
}

START_TEST(cpu_pool_runs_every_task_once)
{
  static const unsigned threads[] = {1, 2, 4};
  for (size_t th = 0; th < 3; th++) {
    wv_device *dev = t_open_cpu(threads[th]);
    ck_assert_uint_eq(dev->threads, threads[th]);
    for (size_t n = 0; n < 300; n += 1 + n / 2) {
      for (int rep = 0; rep < 20; rep++) {
        t_pool p = {.threads = threads[th]};
        p.hits = calloc(n + 1, sizeof *p.hits);
        atomic_init(&p.bad, 0);
        wv_cpu_pool_run(dev, n, t_pool_fn, &p);
        for (size_t i = 0; i < n; i++)
          ck_assert_uint_eq(atomic_load(&p.hits[i]), 1);
        ck_assert_uint_eq(atomic_load(&p.bad), 0);
        free(p.hits);
      }
    }
    wv_cpu_backend.close(dev);
  }
}
END_TEST

static int t_freed;
static void t_hash_free(void *p) { t_freed++; free(p); }

START_TEST(cpu_open_caps_close)
{
  wv_device *dev = t_open_cpu(0);
  ck_assert_uint_ge(dev->threads, 1);
  wv_caps caps;
  memset(&caps, 0x5a, sizeof caps);
  wv_cpu_backend.caps(dev, &caps);
  char want[64];
  snprintf(want, sizeof want, "cpu, %u thread", dev->threads);
  ck_assert_msg(strncmp(caps.description, want, strlen(want)) == 0,
                "description \"%s\"", caps.description);
  ck_assert(caps.wave_width == 4 || caps.wave_width == 8);
  ck_assert_str_eq(wv_cpu_backend.name, "cpu");
  /* hash_state is freed in close */
  dev->hash_state = malloc(16);
  dev->hash_state_free = t_hash_free;
  t_freed = 0;
  wv_cpu_backend.close(dev);
  ck_assert_int_eq(t_freed, 1);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("reduce");
  TCase *tc = tcase_create("semantics");
  tcase_add_checked_fixture(tc, t_dev_open, t_dev_close);
  tcase_add_test(tc, f32_sum_tree_order);
  tcase_add_test(tc, f32_sum_chunks_are_reduced_on_their_own);
  tcase_add_test(tc, f32_sum_special_values);
  tcase_add_test(tc, f32_min_max_order);
  tcase_add_test(tc, int_ops_by_hand);
  tcase_add_test(tc, empty_inputs_give_zero);
  tcase_add_test(tc, bad_jobs_rejected);
  tcase_add_test(tc, helpers);
  suite_add_tcase(s, tc);
  tc = tcase_create("random");
  tcase_add_test(tc, sizes_around_group_boundaries);
  tcase_add_test(tc, differently_chunked_masks);
  tcase_add_test(tc, cpu_random_jobs);
  tcase_add_test(tc, f32_sum_many_chunks);
  tcase_add_test(tc, cpu_many_tiny_chunks);
  tcase_add_test(tc, cpu_large_multi_item);
  suite_add_tcase(s, tc);
  tc = tcase_create("cpu");
  tcase_add_test(tc, cpu_pool_runs_every_task_once);
  tcase_add_test(tc, cpu_open_caps_close);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
