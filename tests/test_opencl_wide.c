/* test_opencl_wide.c - the OpenCL backend's 64-bit dtypes and argmin/
 * argmax (workers/opencl/ocl_reduce.c; kernels/reduce.cl built with
 * WV_ROW64=1, kernels/arg.cl), on PoCL in CI.
 *
 * Every pair wv_reduce_is_wide names over sizes around the 16-byte vector,
 * the 256-row group and the staging windows, chunked and masked at random
 * (masks chunked differently; none, some, few or no rows selected), rows
 * full of NaN, +-inf, +-0.0, subnormals, integer extremes and ties,
 * compared with wv_reduce_reference() for bits, count and index: on the
 * default device, on tiny windows (chunks straddle windows and many
 * windows' partials meet), and with sub-group reductions off.  Then the
 * worked examples of docs/reduction.md, the device-resident entry point
 * the bench uses, the caps, and the float64 refusal of a device without
 * fp64 (simulated: PoCL has it).  Then the exact sum, op fsum
 * (ocl_xsum.c): its rules written out by hand, and a dynamic-range sweep,
 * cancellation, rows that flush the bin cache at every row, specials,
 * signed zeros and narrow rows, chunked and masked at random, against the
 * reference's bits, count and exact accumulator, on the default device and
 * on tiny windows (many launches into the groups' bins).
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workers/opencl/ocl.h"
#include "core/base.h"
#include "core/reduce.h"

static uint64_t tow_state;

static uint64_t tow_next(void)
{
  uint64_t z = (tow_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static uint64_t tow_below(uint64_t n) { return tow_next() % n; }

/* kind: 0 varied, 1 specials, 2 few distinct values (ties) */
static uint64_t tow_row(wave_dtype dt, int kind)
{
  static const uint64_t f64sp[] = {
    0x7ff8000000000000u, 0xfff0000000000001u, 0x7ff0000000000000u,
    0xfff0000000000000u, 0x8000000000000000u, 0, 1, 0x800fffffffffffffu,
    0x7fefffffffffffffu, 0xffefffffffffffffu};
  static const uint64_t f32sp[] = {
    0x7fc00000u, 0xff800001u, 0x7f800000u, 0xff800000u, 0x80000000u, 0, 1,
    0x807fffffu, 0x7f7fffffu, 0xff7fffffu};
  static const uint64_t isp[] = {
    0, 1, 0x7fffffffffffffffu, 0x8000000000000000u, UINT64_MAX,
    0xffffffffu, 0x80000000u, 0x7fffffffu};
  int f64 = dt == WAVE_F64, f32 = dt == WAVE_F32;
  uint64_t r = tow_next();
  if (kind == 2) {
    uint64_t q = tow_below(3);
    if (f64)
      return q == 0 ? 0x3ff0000000000000u : q == 1 ? 0xbff0000000000000u
                                                   : 0x7ff8000000000000u;
    if (f32)
      return q == 0 ? 0x3f800000u : q == 1 ? 0xbf800000u : 0x7f800000u;
    return q == 2 ? UINT64_MAX : q;
  }
  if (kind == 1 && tow_below(3) == 0) {
    if (f64)
      return f64sp[tow_below(10)];
    if (f32)
      return f32sp[tow_below(10)];
    return isp[tow_below(8)];
  }
  if (f64)
    return (r & 0x800fffffffffffffu) | ((1000 + tow_below(48)) << 52);
  if (f32)
    return (r & 0x807fffffu) | ((110u + tow_below(30)) << 23);
  return r;
}

typedef struct tow_job {
  wv_reduce_job job;
  unsigned char *rows;
  uint32_t *mask;
  wv_span in[80], mk[80];
} tow_job;

static size_t tow_split(uint64_t n, const unsigned char *base, unsigned size,
                       wv_span *c, int many)
{
  size_t k = 0;
  uint64_t at = 0;
  while (many && at < n && k < 70) {
    uint64_t left = n - at, len;
    switch (tow_below(5)) {
    case 0: len = 0; break;
    case 1: len = 1 + tow_below(3); break;
    case 2: len = 1 + tow_below(600); break;
    default: len = 1 + tow_next() % left; break;
    }
    len = len > left ? left : len;
    c[k++] = (wv_span){base + (size_t)size * at, len};
    at += len;
  }
  c[k++] = (wv_span){base + (size_t)size * at, n - at};
  return k;
}

/* mask: 0 none, 1 random, 2 nothing selected, 3 sparse */
static void tow_make(tow_job *t, wave_dtype dt, wave_op op, uint64_t n,
                    int many, int mask)
{
  unsigned size = wv_dtype_size(dt);
  memset(t, 0, sizeof *t);
  t->rows = malloc((n ? n : 1) * size);
  t->mask = malloc((n ? n : 1) * 4);
  ck_assert_ptr_nonnull(t->rows);
  ck_assert_ptr_nonnull(t->mask);
  int kind = (int)tow_below(3);
  for (uint64_t i = 0; i < n; i++) {
    uint64_t v = tow_row(dt, kind);
    memcpy(t->rows + (size_t)size * i, &v, size);
    int sel = mask == 2 ? 0 : mask == 3 ? tow_below(500) == 0
                                        : tow_below(3) != 0;
    t->mask[i] = sel ? 1 + (uint32_t)tow_below(1000) : 0;
  }
  t->job = (wv_reduce_job){.dtype = dt, .op = op, .rows = n, .input = t->in};
  t->job.n_input = tow_split(n, t->rows, size, t->in, many);
  if (mask) {
    t->job.has_mask = 1;
    t->job.mask = t->mk;
    t->job.n_mask = tow_split(n, (const unsigned char *)t->mask, 4, t->mk,
                             (int)tow_below(2));
  }
}

static void tow_free(tow_job *t)
{
  free(t->rows);
  free(t->mask);
}

static void tow_same(const wv_reduce_out *got, const wv_reduce_out *want,
                    const wv_reduce_job *job, const char *what)
{
  ck_assert_msg(got->n_values == want->n_values &&
                  got->count == want->count && got->index == want->index &&
                  got->bits[0] == want->bits[0] &&
                  (want->n_values < 2 || got->bits[1] == want->bits[1]),
                "%s %s/%s rows %llu chunks %zu mask %d: got %016llx %016llx "
                "count %llu index %lld, want %016llx %016llx count %llu "
                "index %lld", what, wave_dtype_name(job->dtype),
                wave_op_name(job->op), (unsigned long long)job->rows,
                job->n_input, job->has_mask,
                (unsigned long long)got->bits[0],
                (unsigned long long)got->bits[1],
                (unsigned long long)got->count, (long long)got->index,
                (unsigned long long)want->bits[0],
                (unsigned long long)want->bits[1],
                (unsigned long long)want->count, (long long)want->index);
}

static void tow_check(wv_device *d, const wv_reduce_job *job, const char *what)
{
  wv_reduce_out want, got;
  wave_error e1 = {0}, e2 = {0};
  ck_assert_int_eq(wv_reduce_reference(job, &want, &e1), 0);
  memset(&got, 0x5a, sizeof got);
  int rc = wv_ocl_reduce(d, job, &got, &e2);
  ck_assert_msg(rc == 0, "%s: %s", what, e2.message);
  tow_same(&got, &want, job, what);
}

static wv_device *tow_open(uint64_t window_rows, int force_local)
{
  wv_device_config cfg = {.name = "ocl0", .backend = "opencl"};
  wv_ocl_options opt = {.window_rows = window_rows,
                        .force_local = force_local};
  wv_device *d = NULL;
  wave_error e = {0};
  int rc = wv_ocl_open_ex(&cfg, &opt, &d, &e);
  ck_assert_msg(rc == 0, "open: %s", e.message);
  return d;
}

static void tow_sweep(wv_device *d, uint64_t seed, const char *what)
{
  static const uint64_t sizes[] = {1, 2, 3, 5, 255, 256, 257, 1023, 4097,
                                   70001};
  tow_state = seed;
  unsigned pairs = 0;
  for (int dt = WAVE_U32; dt <= WAVE_F64; dt++)
    for (int op = WAVE_SUM; op <= WAVE_ARGMAX; op++) {
      if (wave_op_check((wave_dtype)dt, (wave_op)op) != 0 ||
          !wv_reduce_is_wide((wave_dtype)dt, (wave_op)op))
        continue;
      pairs++;
      for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        tow_job t;
        tow_make(&t, (wave_dtype)dt, (wave_op)op, sizes[s], (int)(s & 1),
                (int)tow_below(4));
        tow_check(d, &t.job, what);
        tow_free(&t);
      }
    }
  ck_assert_uint_eq(pairs, 30);
}

/* ---- tests --------------------------------------------------------------- */

START_TEST(test_wide_caps)
{
  wv_device *d = tow_open(0, 0);
  wv_caps c;
  wv_opencl_backend.caps(d, &c);
  ck_assert_int_eq(c.argminmax, 1);
  ck_assert_int_eq(c.dtypes64, d->fp64);
  ck_assert_int_eq(c.fsum, 1);
  /* PoCL has cl_khr_fp64; a device without it is simulated: caps drop
   * the 64-bit dtypes, and a float64 sum that reaches the backend anyway
   * is refused naming the device and the reason. */
  ck_assert_msg(d->fp64, "PoCL without fp64: %s", d->fp64_note);
  d->fp64 = 0;
  snprintf(d->fp64_note, sizeof d->fp64_note, "no cl_khr_fp64");
  wv_opencl_backend.caps(d, &c);
  ck_assert_int_eq(c.dtypes64, 0);
  /* what wv_dev_reduce's refusal names (workers/wvdev.c) */
  ck_assert_msg(strstr(c.wide_why, d->name) != NULL &&
                strstr(c.wide_why, "cl_khr_fp64") != NULL, "%s", c.wide_why);
  uint64_t one = 0x3ff0000000000000u;
  wv_span s = {&one, 1};
  wv_reduce_job j = {.dtype = WAVE_F64, .op = WAVE_SUM, .input = &s,
                     .n_input = 1, .rows = 1};
  wv_reduce_out o;
  wave_error e = {0};
  ck_assert_int_eq(wv_ocl_reduce(d, &j, &o, &e), WAVE_EUNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(e.message, d->name));
  ck_assert_ptr_nonnull(strstr(e.message, "cl_khr_fp64"));
  ck_assert_ptr_nonnull(strstr(e.message, "float64"));
  wv_ocl_close(d);
}
END_TEST

START_TEST(test_wide_default)
{
  wv_device *d = tow_open(0, 0);
  tow_sweep(d, 11, "default");
  wv_ocl_close(d);
}
END_TEST

START_TEST(test_wide_windows)
{
  wv_device *d = tow_open(512, 0);
  tow_sweep(d, 12, "windows");
  /* Many chunks, several tree levels and argmin across many windows. */
  static const wave_dtype dts[] = {WAVE_F64, WAVE_F32, WAVE_S64};
  static const wave_op ops[] = {WAVE_SUM, WAVE_ARGMAX, WAVE_ARGMIN};
  for (int i = 0; i < 6; i++) {
    tow_job t;
    tow_make(&t, dts[i % 3], ops[i % 3], 20000 + tow_below(150000), 1,
            (int)tow_below(2));
    tow_check(d, &t.job, "many windows");
    tow_free(&t);
  }
  wv_ocl_close(d);
}
END_TEST

START_TEST(test_wide_local)
{
  wv_device *d = tow_open(2048, 1);
  tow_sweep(d, 13, "local");
  wv_ocl_close(d);
}
END_TEST

static void tow_expect(wv_device *d, wave_dtype dt, wave_op op,
                      const wv_span *in, size_t nin, const uint32_t *mask,
                      uint64_t rows, uint64_t bits, int64_t index,
                      uint64_t count)
{
  wv_span m = {mask, rows};
  wv_reduce_job j = {.dtype = dt, .op = op, .input = in, .n_input = nin,
                     .mask = &m, .n_mask = mask != NULL,
                     .has_mask = mask != NULL, .rows = rows};
  wv_reduce_out o;
  wave_error e = {0};
  ck_assert_msg(wv_ocl_reduce(d, &j, &o, &e) == 0, "%s", e.message);
  ck_assert_uint_eq(o.bits[0], bits);
  ck_assert_int_eq(o.index, index);
  ck_assert_uint_eq(o.count, count);
}

/* docs/reduction.md, "Worked examples": the float64 tree and argmin. */
START_TEST(test_wide_examples)
{
  wv_device *d = tow_open(0, 0);
  uint64_t tree[256];
  for (int i = 0; i < 256; i++)
    tree[i] = 0x8000000000000000u;
  tree[0] = 0x3ff0000000000000u;
  tree[1] = tree[129] = 0x3ca0000000000000u;
  wv_span s1 = {tree, 256};
  tow_expect(d, WAVE_F64, WAVE_SUM, &s1, 1, NULL, 256, 0x3ff0000000000001u, 0,
            256);
  uint64_t r3[3] = {0x3ff0000000000000u, 0x3ca0000000000000u,
                    0x3ca0000000000000u};
  wv_span one = {r3, 3};
  tow_expect(d, WAVE_F64, WAVE_SUM, &one, 1, NULL, 3, 0x3ff0000000000000u, 0,
            3);
  wv_span ch[3] = {{r3, 1}, {r3 + 1, 0}, {r3 + 1, 2}};
  tow_expect(d, WAVE_F64, WAVE_SUM, ch, 3, NULL, 3, 0x3ff0000000000001u, 0, 3);
  uint64_t i3[3] = {UINT64_MAX, 2, 0x8000000000000000u};
  wv_span si = {i3, 3};
  tow_expect(d, WAVE_U64, WAVE_SUM, &si, 1, NULL, 3, 0x8000000000000001u, 0,
            3);
  tow_expect(d, WAVE_S64, WAVE_MIN, &si, 1, NULL, 3, 0x8000000000000000u, 0,
            3);
  tow_expect(d, WAVE_U64, WAVE_XOR, &si, 1, NULL, 3, 0x7ffffffffffffffdu, 0,
            3);
  /* argmin: uint32 5, 1, 7, 1, 7; float32 NaN, +0, -0, +inf, -0, 2. */
  uint32_t u5[5] = {5, 1, 7, 1, 7};
  wv_span su = {u5, 5};
  tow_expect(d, WAVE_U32, WAVE_ARGMIN, &su, 1, NULL, 5, 1, 1, 5);
  tow_expect(d, WAVE_U32, WAVE_ARGMAX, &su, 1, NULL, 5, 7, 2, 5);
  uint32_t f6[6] = {0x7fc00000u, 0, 0x80000000u, 0x7f800000u, 0x80000000u,
                    0x40000000u};
  wv_span sf = {f6, 6};
  tow_expect(d, WAVE_F32, WAVE_ARGMIN, &sf, 1, NULL, 6, 0x80000000u, 2, 4);
  tow_expect(d, WAVE_F32, WAVE_ARGMAX, &sf, 1, NULL, 6, 0x40000000u, 5, 4);
  /* Chunks [3, 9], [], [9, 1]; rows 4, 2, 8, 2 with mask 1, 0, 1, 1. */
  uint32_t c4[4] = {3, 9, 9, 1};
  wv_span cc[3] = {{c4, 2}, {c4 + 2, 0}, {c4 + 2, 2}};
  tow_expect(d, WAVE_U32, WAVE_ARGMAX, cc, 3, NULL, 4, 9, 1, 4);
  tow_expect(d, WAVE_U32, WAVE_ARGMIN, cc, 3, NULL, 4, 1, 3, 4);
  uint32_t m4[4] = {1, 0, 1, 1}, r4[4] = {4, 2, 8, 2};
  wv_span s4 = {r4, 4};
  tow_expect(d, WAVE_U32, WAVE_ARGMIN, &s4, 1, m4, 4, 2, 3, 3);
  /* No finite row: index -1, value 0, count 0. */
  uint64_t nf[2] = {0x7ff8000000000000u, 0xfff0000000000000u};
  wv_span sn = {nf, 2};
  tow_expect(d, WAVE_F64, WAVE_ARGMAX, &sn, 1, NULL, 2, 0, -1, 0);
  wv_ocl_close(d);
}
END_TEST

/* The device-resident entry point the bench uses. */
START_TEST(test_wide_resident)
{
  wv_device *d = tow_open(0, 0);
  const uint64_t n = 1u << 17;
  for (int dt = WAVE_U32; dt <= WAVE_F64; dt++) {
    unsigned size = wv_dtype_size((wave_dtype)dt);
    unsigned char *rows = malloc(n * size);
    ck_assert_ptr_nonnull(rows);
    tow_state = 70 + (uint64_t)dt;
    for (uint64_t i = 0; i < n; i++) {
      uint64_t v = tow_row((wave_dtype)dt, 1);
      memcpy(rows + size * i, &v, size);
    }
    cl_int ce;
    cl_mem m = clCreateBuffer(d->ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                              n * size, rows, &ce);
    ck_assert_ptr_nonnull(m);
    wv_span s = {rows, n};
    for (int op = WAVE_SUM; op <= WAVE_ARGMAX; op++) {
      if (wave_op_check((wave_dtype)dt, (wave_op)op) != 0 ||
          !wv_reduce_is_wide((wave_dtype)dt, (wave_op)op))
        continue;
      wv_reduce_job j = {.dtype = (wave_dtype)dt, .op = (wave_op)op,
                         .input = &s, .n_input = 1, .rows = n};
      wv_reduce_out want, got;
      wave_error e = {0};
      double sec = -1;
      ck_assert_int_eq(wv_reduce_reference(&j, &want, &e), 0);
      ck_assert_msg(wv_ocl_reduce_resident(d, m, n, j.dtype, j.op, &got, &sec,
                                           &e) == 0, "%s", e.message);
      tow_same(&got, &want, &j, "resident");
      ck_assert(sec >= 0);
    }
    clReleaseMemObject(m);
    free(rows);
  }
  wv_ocl_close(d);
}
END_TEST

/* ---- the exact sum, op fsum (ocl_xsum.c; reduce.cl's xsum_*) ------------- */

/* Bits of a row of dtype dt with biased exponent e, fraction f, sign s. */
static uint64_t tox_make(int f64, uint64_t s, uint64_t e, uint64_t f)
{
  return f64 ? s << 63 | e << 52 | (f & 0xfffffffffffffu)
             : s << 31 | e << 23 | (f & 0x7fffffu);
}

/* Rows of the exact sum's cases (kind):
 *  0 the dynamic-range sweep: every exponent, subnormals to the largest
 *    finite, random fractions and signs;
 *  1 heavy cancellation: x, small, -x triples at random magnitudes;
 *  2 adversarial bins: the largest fraction at exponents that alternate
 *    between neighbouring bins (every row flushes the cache), one sign;
 *  3 specials: NaN, +-inf, +-0.0 mixed into small values;
 *  4 signed zeros only; 5 narrow range (as the plain sum's data);
 *  6 the largest finite, negative, in every row (the bins past the
 *    largest row's top bit, and a negative X). */
static void tox_fill(unsigned char *rows, uint64_t n, int f64, int kind)
{
  const uint64_t emax = f64 ? 2046 : 254, sz = f64 ? 8 : 4;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t r = tow_next(), v;
    switch (kind) {
    case 0:
      v = tox_make(f64, r >> 63, i % (emax + 1), tow_next());
      break;
    case 1: {
      uint64_t k = i % 3, e = 1 + (i / 3 * 7919) % (emax - 1);
      if (k == 1)
        v = tox_make(f64, r >> 63, r % 40, r);
      else {
        uint64_t base;
        memcpy(&base, rows + sz * (i - k), sz);
        v = k == 0 ? tox_make(f64, r >> 63, e, r)
                   : base ^ (f64 ? 1ull << 63 : 1ull << 31);
      }
      break;
    }
    case 2:
      v = tox_make(f64, 0, (f64 ? 1000 : 120) + 16 * (i & 1) + (r & 1),
                  ~0ull);
      break;
    case 3: {
      static const uint64_t sp64[] = {0x7ff8000000000000u, 0xfff0000000000000u,
                                      0x7ff0000000000000u,
                                      0x8000000000000000u, 0};
      static const uint64_t sp32[] = {0x7fc00000u, 0xff800000u, 0x7f800000u,
                                      0x80000000u, 0};
      v = r % 50 == 0 ? (f64 ? sp64 : sp32)[tow_below(5)]
                      : tox_make(f64, r >> 63, (f64 ? 1020 : 124) + r % 8, r);
      break;
    }
    case 4:
      v = r % 97 == 0 ? 0 : tox_make(f64, 1, 0, 0);
      break;
    case 5:
      v = tox_make(f64, r >> 63, (f64 ? 1013 : 117) + r % 20, r);
      break;
    default:
      v = tox_make(f64, 1, emax, ~0ull);
      break;
    }
    memcpy(rows + sz * i, &v, sz);
  }
}

/* n rows of kind under random chunkings and masks, compared with the
 * reference's bits, count and accumulator each time. */
static void tox_case(wv_device *d, int f64, int kind, uint64_t n, int tries)
{
  const wave_dtype dt = f64 ? WAVE_F64 : WAVE_F32;
  const unsigned sz = f64 ? 8 : 4;
  for (int t = 0; t < tries; t++) {
    tow_job j;
    tow_make(&j, dt, WAVE_FSUM, n, t % 2, (t + kind) % 4);
    tox_fill(j.rows, n, f64, kind);
    char what[64];
    snprintf(what, sizeof what, "fsum kind %d try %d", kind, t);
    wv_reduce_out want, got;
    wave_error e1 = {0}, e2 = {0};
    ck_assert_int_eq(wv_reduce_reference(&j.job, &want, &e1), 0);
    int rc = wv_ocl_reduce(d, &j.job, &got, &e2);
    ck_assert_msg(rc == 0, "%s: %s", what, e2.message);
    tow_same(&got, &want, &j.job, what);
    ck_assert_msg(memcmp(&got.xsum, &want.xsum, sizeof got.xsum) == 0,
                  "%s: the accumulators differ", what);
    tow_free(&j);
  }
  (void)sz;
}

static void tox_all(wv_device *d, uint64_t seed)
{
  static const uint64_t sizes[] = {1, 3, 4, 255, 257, 4099, 70001};
  tow_state = seed;
  for (int f64 = 0; f64 < 2; f64++)
    for (int kind = 0; kind < 7; kind++)
      for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        tox_case(d, f64, kind, sizes[s], 3);
}

START_TEST(test_fsum_default)
{
  wv_device *d = tow_open(0, 0);
  tox_all(d, 21);
  /* 10^6 rows of the sweep and of cancellation, many chunkings. */
  for (int f64 = 0; f64 < 2; f64++) {
    tox_case(d, f64, 0, 1000000, 2);
    tox_case(d, f64, 1, 1000000, 1);
  }
  wv_ocl_close(d);
}
END_TEST

START_TEST(test_fsum_windows)
{
  /* tiny windows: many launches add into the groups' rows */
  wv_device *d = tow_open(512, 0);
  tox_all(d, 22);
  for (int f64 = 0; f64 < 2; f64++)
    tox_case(d, f64, 2, 300000, 2);
  wv_ocl_close(d);
}
END_TEST

static void tox_expect(wv_device *d, int f64, const uint64_t *v, size_t n,
                      const uint32_t *mask, uint64_t bits, uint64_t count)
{
  uint32_t r32[16];
  for (size_t i = 0; i < n; i++)
    r32[i] = (uint32_t)v[i];
  wv_span s = {f64 ? (const void *)v : (const void *)r32, n};
  wv_span m = {mask, n};
  wv_reduce_job j = {.dtype = f64 ? WAVE_F64 : WAVE_F32, .op = WAVE_FSUM,
                     .input = &s, .n_input = 1, .rows = n, .mask = &m,
                     .n_mask = mask != NULL, .has_mask = mask != NULL};
  wv_reduce_out o;
  wave_error e = {0};
  ck_assert_msg(wv_ocl_reduce(d, &j, &o, &e) == 0, "%s", e.message);
  ck_assert_msg(o.bits[0] == bits && o.count == count, "rows %zu: got %"
                PRIx64 " count %" PRIu64 ", want %" PRIx64 " count %" PRIu64,
                n, o.bits[0], o.count, bits, count);
}

/* The rules of docs/reduction.md "fsum", written out by hand. */
START_TEST(test_fsum_rules)
{
  wv_device *d = tow_open(0, 0);
  /* 1e30, 1, -1e30 (float64) and 2^100, 1, -2^100 (float32): 1.0 */
  uint64_t c64[3] = {0x46293e5939a08ceau, 0x3ff0000000000000u,
                     0xc6293e5939a08ceau};
  tox_expect(d, 1, c64, 3, NULL, 0x3ff0000000000000u, 3);
  uint64_t c32[3] = {0x71800000u, 0x3f800000u, 0xf1800000u};
  tox_expect(d, 0, c32, 3, NULL, 0x3f800000u, 3);
  /* ties to even: 1 + 2^-24 is 1; 1 + 3 2^-24 is 1 + 2^-22; 1 + 2^-24 +
   * 2^-60 rounds up */
  uint64_t t1[2] = {0x3f800000u, 0x33800000u};
  tox_expect(d, 0, t1, 2, NULL, 0x3f800000u, 2);
  uint64_t t2[2] = {0x3f800000u, 0x34400000u};
  tox_expect(d, 0, t2, 2, NULL, 0x3f800002u, 2);
  uint64_t t3[3] = {0x3f800000u, 0x33800000u, 0x21800000u};
  tox_expect(d, 0, t3, 3, NULL, 0x3f800001u, 3);
  uint64_t t4[2] = {0x3ff0000000000000u, 0x3ca0000000000000u};
  tox_expect(d, 1, t4, 2, NULL, 0x3ff0000000000000u, 2);
  /* subnormals exact: 3 ulp - 1 ulp; overflow to +-inf */
  uint64_t s1[2] = {3, 0x80000001u};
  tox_expect(d, 0, s1, 2, NULL, 2, 2);
  uint64_t o1[2] = {0x7f7fffffu, 0x7f7fffffu};
  tox_expect(d, 0, o1, 2, NULL, 0x7f800000u, 2);
  uint64_t o2[2] = {0xffefffffffffffffu, 0xffefffffffffffffu};
  tox_expect(d, 1, o2, 2, NULL, 0xfff0000000000000u, 2);
  /* signed zeros: all -0.0 is -0.0; any other row makes +0.0 */
  uint64_t z1[3] = {0x80000000u, 0x80000000u, 0x80000000u};
  tox_expect(d, 0, z1, 3, NULL, 0x80000000u, 3);
  uint64_t z2[3] = {0x80000000u, 0, 0x80000000u};
  tox_expect(d, 0, z2, 3, NULL, 0, 3);
  uint64_t z3[2] = {0x3ff0000000000000u, 0xbff0000000000000u};
  tox_expect(d, 1, z3, 2, NULL, 0, 2);
  /* NaN, both infinities: the canonical NaN; one infinity: it */
  uint64_t n1[3] = {0x3f800000u, 0xffc00001u, 0x3f800000u};
  tox_expect(d, 0, n1, 3, NULL, 0x7fc00000u, 3);
  uint64_t n2[3] = {0x7ff0000000000000u, 1, 0xfff0000000000000u};
  tox_expect(d, 1, n2, 3, NULL, 0x7ff8000000000000u, 3);
  uint64_t n3[3] = {0xff800000u, 0x7f7fffffu, 0x7f7fffffu};
  tox_expect(d, 0, n3, 3, NULL, 0xff800000u, 3);
  /* masks: the NaN and +0.0 left out; nothing selected is +0.0, count 0 */
  uint32_t m1[3] = {1, 0, 1}, m0[3] = {0, 0, 0};
  tox_expect(d, 0, n1, 3, m1, 0x40000000u, 2);
  tox_expect(d, 0, z2, 3, m1, 0x80000000u, 2);
  tox_expect(d, 0, n1, 3, m0, 0, 0);
  /* float64 needs the wide program: without it, UNSUPPORTED saying so */
  cl_program wide = d->wide;
  d->wide = NULL;
  wv_span s = {c64, 3};
  wv_reduce_job j = {.dtype = WAVE_F64, .op = WAVE_FSUM, .input = &s,
                     .n_input = 1, .rows = 3};
  wv_reduce_out o;
  wave_error e = {0};
  ck_assert_int_eq(wv_ocl_reduce(d, &j, &o, &e), WAVE_EUNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(e.message, "no wide program"));
  d->wide = wide;
  wv_ocl_close(d);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("opencl_wide");
  TCase *tc = tcase_create("wide");
  tcase_set_timeout(tc, 900);
  tcase_add_test(tc, test_wide_caps);
  tcase_add_test(tc, test_wide_default);
  tcase_add_test(tc, test_wide_windows);
  tcase_add_test(tc, test_wide_local);
  tcase_add_test(tc, test_wide_examples);
  tcase_add_test(tc, test_wide_resident);
  tcase_add_test(tc, test_fsum_rules);
  tcase_add_test(tc, test_fsum_default);
  tcase_add_test(tc, test_fsum_windows);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? 0 : 1;
}
