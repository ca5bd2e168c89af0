/* test_slices.c - a big reduction run in slices (daemon/rq/slices.c) has
 * the bits of the whole job, on every backend that opens here (cpu, the
 * fake, vulkan on lavapipe, opencl on PoCL; WAVE_CONFORMANCE_BACKENDS
 * picks among the built-in ones: CUDA and HIP are entry test_slices_gpu),
 * against the reference
 * (core/reduce.c wv_reduce_reference), for every dtype and op:
 *  - chunks of edge sizes (empty, 1, 5, 65535, 65537, a few pieces and a
 *    tail) so that slices end inside and at chunk boundaries;
 *  - masks in chunks of their own sizes, with whole slices masked out and
 *    everything masked out;
 *  - floats whose sum depends on the tree (exponents -30..30, signs mixed),
 *    NaN, +-inf and -0.0 rows, and all -0.0.
 * The float data is checked to be sensitive to where a slice begins: the
 * same job cut into pieces at a boundary that is not a multiple of 65536
 * (merged by the same core/partial.c) gives other bits, so a slicer that
 * cut there would fail the first test.  Slice sizes: 65536 and 196608
 * rows (the float sum's slice is then 65536: a power of 256).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base.h"
#include "core/partial.h"
#include "core/reduce.h"
#include "daemon/rq/slices.h"
#include "workers/fake/fake.h"
#include "workers/wvdev.h"
#include "skip.h"

#define TS_MAX_DEVS 8

typedef struct tsl_dev {
  const wv_backend *b;
  wv_dev dev;
} tsl_dev;

static tsl_dev tsl_devs[TS_MAX_DEVS];
static size_t tsl_n;

/* Is backend name among WAVE_CONFORMANCE_BACKENDS (unset: every one)? */
static int tsl_selected(const char *name)
{
  const char *l = getenv("WAVE_CONFORMANCE_BACKENDS");
  if (l == NULL || *l == '\0')
    return 1;
  size_t n = strlen(name);
  for (const char *p = l; *p != '\0';) {
    size_t len = strcspn(p, ",");
    if (len == n && strncmp(p, name, n) == 0)
      return 1;
    p += len + (p[len] == ',');
  }
  return 0;
}

static void tsl_open(const wv_backend *b)
{
  char name[32];
  snprintf(name, sizeof name, "%s0", b->name);
  wv_device_config cfg = {.name = name, .backend = b->name, .threads = 2,
                          .queue_depth = 16, .exchange = WV_EXCHANGE_AUTO};
  wv_dev dev = {.be = b};
  wave_error err = {0};
  if (wv_dev_open(&dev, &cfg, &err) != 0) {
    wvs_note("test_slices: %s does not open here (%s)", b->name,
             err.message);
    return;
  }
  printf("test_slices: %s\n", b->name);
  tsl_devs[tsl_n++] = (tsl_dev){b, dev};
}

static void tsl_setup(void)
{
  tsl_n = 0;
  for (size_t i = 0; wv_backends[i] != NULL && tsl_n < TS_MAX_DEVS - 1; i++)
    if (tsl_selected(wv_backends[i]->name))
      tsl_open(wv_backends[i]);
  tsl_open(&wv_fake_backend);
  ck_assert_uint_ge(tsl_n, 2);  /* cpu and the fake at least */
}

static void tsl_teardown(void)
{
  for (size_t i = 0; i < tsl_n; i++)
    wv_dev_close(&tsl_devs[i].dev);
  tsl_n = 0;
}

/* ---- data ---- */

static uint64_t tsl_rng = 0x9e3779b97f4a7c15ull;

static uint32_t tsl_rand(void)
{
  tsl_rng ^= tsl_rng << 13;
  tsl_rng ^= tsl_rng >> 7;
  tsl_rng ^= tsl_rng << 17;
  return (uint32_t)(tsl_rng >> 16);
}

static uint32_t tsl_fbits(float f)
{
  uint32_t b;
  memcpy(&b, &f, sizeof b);
  return b;
}

enum { TS_FINITE, TS_SPECIAL, TS_NEGZERO, TS_NAN_ONLY };

/* A float whose sums round differently by tree: a random mantissa, an
 * exponent in -30..30, either sign. */
static uint32_t tsl_float(int kind, uint64_t i)
{
  if (kind == TS_NEGZERO)
    return 0x80000000u;
  if (kind == TS_NAN_ONLY)
    return i % 2 ? 0x7fc00001u : 0xffc00000u;
  if (kind == TS_SPECIAL) {
    switch (i % 9973) {
    case 17: return 0x7f800000u;   /* +inf */
    case 4000: return 0xff800000u; /* -inf */
    case 9000: return 0x7fa00000u; /* a NaN */
    case 123: case 124: return 0x80000000u;
    default: break;
    }
  }
  float m = 1.0f + (float)(tsl_rand() & 0xffffff) / 16777216.0f;
  int e = (int)(tsl_rand() % 61) - 30;
  float f = ldexpf(m, e);
  return tsl_fbits(tsl_rand() & 1 ? -f : f);
}

typedef struct tsl_job {
  wv_span in[8], mask[8];
  uint32_t *buf;
  wv_reduce_job job;
} tsl_job;

static const uint64_t tsl_chunks[] = {200000, 0, 65537, 1, 65535, 5, 262144};
static const uint64_t tsl_mchunks[] = {70000, 3, 131072, 0, 100000, 226611,
                                      65536};

/* The job: rows by kind (floats) or random words; mask: 0 none, 1 random
 * with the rows [65536, 131072) and [200000, 265537) all masked out, 2
 * everything masked out. */
static void tsl_make(tsl_job *t, wave_dtype dt, wave_op op, int kind, int mask)
{
  size_t nin = sizeof tsl_chunks / sizeof tsl_chunks[0];
  size_t nm = sizeof tsl_mchunks / sizeof tsl_mchunks[0];
  uint64_t rows = 0, mrows = 0;
  for (size_t i = 0; i < nin; i++)
    rows += tsl_chunks[i];
  for (size_t i = 0; i < nm; i++)
    mrows += tsl_mchunks[i];
  ck_assert_uint_eq(rows, mrows);
  t->buf = malloc((size_t)(rows * 2) * 4);
  ck_assert_ptr_nonnull(t->buf);
  uint32_t *m = t->buf + rows;
  for (uint64_t i = 0; i < rows; i++) {
    t->buf[i] = dt == WAVE_F32 ? tsl_float(kind, i) : tsl_rand();
    int off = (i >= 65536 && i < 131072) || (i >= 200000 && i < 265537);
    m[i] = mask == 2 || off ? 0 : (tsl_rand() % 4 != 0) * (tsl_rand() | 1);
  }
  uint64_t at = 0;
  for (size_t i = 0; i < nin; i++) {
    t->in[i] = (wv_span){t->buf + at, tsl_chunks[i]};
    at += tsl_chunks[i];
  }
  at = 0;
  for (size_t i = 0; i < nm; i++) {
    t->mask[i] = (wv_span){m + at, tsl_mchunks[i]};
    at += tsl_mchunks[i];
  }
  t->job = (wv_reduce_job){.dtype = dt, .op = op, .input = t->in,
                           .n_input = nin, .mask = t->mask,
                           .n_mask = mask ? nm : 0, .has_mask = mask != 0,
                           .rows = rows};
  wave_error err = {0};
  ck_assert_msg(wv_reduce_validate(&t->job, &err) == 0, "%s", err.message);
}

/* The job in slices of slice_rows on dev, as the daemon runs it. */
static void tsl_sliced(const tsl_dev *d, const wv_reduce_job *job,
                      uint64_t slice_rows, wv_reduce_out *out, int *some)
{
  uint64_t p = wd_slices_rows(job, slice_rows);
  ck_assert_uint_ne(p, 0);  /* the job is big enough to be sliced */
  wd_slices s;
  wave_error err = {0};
  ck_assert_int_eq(wd_slices_init(&s, job, p, &err), 0);
  int last = 0, steps = 0;
  while (!last) {
    int rc = wd_slices_step(&s, &d->dev, &last, &err);
    ck_assert_msg(rc == 0, "%s: %s", d->b->name, err.message);
    steps++;
  }
  uint64_t want = 0;  /* slices of p rows, a float sum's within chunks */
  if (job->dtype == WAVE_F32 && job->op == WAVE_SUM)
    for (size_t i = 0; i < job->n_input; i++)
      want += (job->input[i].rows + p - 1) / p;
  else
    want = (job->rows + p - 1) / p;
  ck_assert_uint_eq((uint64_t)steps, want);
  wd_slices_result(&s, out, some);
  wd_slices_fini(&s);
}

static void tsl_check(const wv_reduce_job *job, const char *what)
{
  wv_reduce_out want = {0};
  wave_error err = {0};
  ck_assert_int_eq(wv_reduce_reference(job, &want, &err), 0);
  int want_some = want.count > 0 && job->dtype == WAVE_F32 &&
                  wv_reduce_any_finite(job);
  static const uint64_t sizes[] = {65536, 196608};
  for (size_t di = 0; di < tsl_n; di++)
    for (size_t si = 0; si < 2; si++) {
      wv_reduce_out got;
      int some = -1;
      tsl_sliced(&tsl_devs[di], job, sizes[si], &got, &some);
      ck_assert_msg(got.n_values == want.n_values && got.count == want.count &&
                        got.bits[0] == want.bits[0] &&
                        (want.n_values < 2 || got.bits[1] == want.bits[1]),
                    "%s %s/%s %s, slices of %llu: got %08x %08x count %llu, "
                    "whole job %08x %08x count %llu", tsl_devs[di].b->name,
                    wave_dtype_name(job->dtype), wave_op_name(job->op), what,
                    (unsigned long long)sizes[si], (unsigned)got.bits[0],
                    (unsigned)got.bits[1], (unsigned long long)got.count,
                    (unsigned)want.bits[0], (unsigned)want.bits[1],
                    (unsigned long long)want.count);
      if (job->dtype == WAVE_F32 && job->op != WAVE_SUM)
        ck_assert_int_eq(some, want_some);
    }
}

static const wave_dtype tsl_dtypes[] = {WAVE_U32, WAVE_S32, WAVE_F32};
static const wave_op tsl_ops[] = {WAVE_SUM, WAVE_MIN, WAVE_MAX, WAVE_EXTENT,
                                 WAVE_AND, WAVE_OR, WAVE_XOR};

/* Every dtype and op, without a mask, with one, all masked out. */
START_TEST(every_dtype_and_op)
{
  static const char *masks[] = {"unmasked", "masked", "all masked out"};
  for (size_t a = 0; a < 3; a++)
    for (size_t o = 0; o < sizeof tsl_ops / sizeof tsl_ops[0]; o++) {
      if (wave_op_check(tsl_dtypes[a], tsl_ops[o]) != 0)
        continue;
      for (int mk = 0; mk < 3; mk++) {
        tsl_job t;
        tsl_make(&t, tsl_dtypes[a], tsl_ops[o], TS_FINITE, mk);
        tsl_check(&t.job, masks[mk]);
        free(t.buf);
      }
    }
}
END_TEST

/* Float rows with NaN, +-inf and -0.0; all -0.0; only NaNs. */
START_TEST(float_specials)
{
  static const int kinds[] = {TS_SPECIAL, TS_NEGZERO, TS_NAN_ONLY};
  static const char *names[] = {"nan/inf/-0", "all -0.0", "only NaN"};
  for (size_t k = 0; k < 3; k++)
    for (size_t o = 0; o < 4; o++)
      for (int mk = 0; mk < 2; mk++) {
        tsl_job t;
        tsl_make(&t, WAVE_F32, tsl_ops[o], kinds[k], mk);
        tsl_check(&t.job, names[k]);
        free(t.buf);
      }
}
END_TEST

/* The float data above is sensitive to where slices begin: cut its first
 * chunk at a row that is not a multiple of 65536 and merge exactly as the
 * slicer does, and the bits differ from the whole job's, so a slicer whose
 * boundaries were not aligned would fail every_dtype_and_op. */
START_TEST(unaligned_cut_would_differ)
{
  tsl_job t;
  tsl_make(&t, WAVE_F32, WAVE_SUM, TS_FINITE, 0);
  wv_span one = t.in[0];  /* 200000 rows */
  wv_reduce_job whole = {.dtype = WAVE_F32, .op = WAVE_SUM, .input = &one,
                         .n_input = 1, .rows = one.rows};
  wv_reduce_out want = {0}, got = {0};
  wave_error err = {0};
  ck_assert_int_eq(wv_reduce_reference(&whole, &want, &err), 0);
  /* pieces [0, 1000), [1000, 66536), ...: shifted by 1000 rows */
  wv_partial parts[8];
  size_t n = 0;
  for (uint64_t a = 0; a < one.rows; n++) {
    uint64_t r = a == 0 ? 1000 : 65536;
    if (r > one.rows - a)
      r = one.rows - a;
    wv_span s = {(const uint32_t *)one.data + a, r};
    wv_reduce_job pj = {.dtype = WAVE_F32, .op = WAVE_SUM, .input = &s,
                        .n_input = 1, .rows = r};
    wv_reduce_out po = {0};
    ck_assert_int_eq(wv_reduce_reference(&pj, &po, &err), 0);
    wv_partial_of(&pj, &po, 0, &parts[n]);
    a += r;
  }
  ck_assert_int_eq(wv_partial_merge(WAVE_F32, WAVE_SUM, parts, n, &got, NULL,
                                    &err), 0);
  ck_assert_msg(got.bits[0] != want.bits[0],
                "the test data does not show a misaligned cut (%08x)",
                (unsigned)want.bits[0]);
  free(t.buf);
}
END_TEST

/* job in slices of p rows on every device that runs its dtype: at least
 * min_steps steps, and the whole job's bits and count (want). */
static void tsl_all_devices(const wv_reduce_job *job, uint64_t p,
                            const wv_reduce_out *want, int min_steps,
                            int masked)
{
  wave_error err = {0};
  for (size_t di = 0; di < tsl_n; di++) {
    wv_caps caps;
    wv_dev_caps(&tsl_devs[di].dev, &caps);
    if (wv_dtype_size(job->dtype) == 8 && !caps.dtypes64)
      continue;
    wd_slices s;
    ck_assert_int_eq(wd_slices_init(&s, job, p, &err), 0);
    int last = 0, steps = 0;
    while (!last) {
      int rc = wd_slices_step(&s, &tsl_devs[di].dev, &last, &err);
      ck_assert_msg(rc == 0, "%s: %s", tsl_devs[di].b->name, err.message);
      steps++;
    }
    wv_reduce_out got = {0};
    wd_slices_result(&s, &got, NULL);
    wd_slices_fini(&s);
    ck_assert_int_ge(steps, min_steps);  /* no step past its slice */
    ck_assert_msg(got.count == want->count && got.bits[0] == want->bits[0],
                  "%s %s/%s masked %d: got %016llx count %llu, whole job "
                  "%016llx count %llu", tsl_devs[di].b->name,
                  wave_dtype_name(job->dtype), wave_op_name(job->op), masked,
                  (unsigned long long)got.bits[0],
                  (unsigned long long)got.count,
                  (unsigned long long)want->bits[0],
                  (unsigned long long)want->count);
  }
}

/* A float sum mixing long chunks (over a 256th of a slice, some of several
 * pieces) with very many short ones (issue 35): sliced, in blocks of 256
 * whole chunks whose long ones are reduced first and stand in as their
 * values, with the whole job's bits on every device; float32 and float64,
 * long chunks next to each other, one all masked out (its value -0.0:
 * rows of all -0.0 show it), and with a mask; and an order-free op on the
 * same chunks. */
START_TEST(mixed_long_and_short_chunks)
{
  enum { N = 3000 };
  static const struct { size_t at; uint64_t rows; } longs[] = {
      {5, 300},     {255, 1000},   {256, 65536}, {257, 257},
      {700, 70000}, {701, 140000}, {1500, 4096}, {2999, 131073}};
  const size_t n_longs = sizeof longs / sizeof longs[0];
  uint64_t len[N], rows = 0, masked_at = 0;
  for (size_t i = 0; i < N; i++) {
    len[i] = i % 97 == 0 ? 0 : 1 + i % 2;  /* empty, 1 or 2 rows */
    for (size_t k = 0; k < n_longs; k++)
      if (longs[k].at == i)
        len[i] = longs[k].rows;
    if (i == 701)
      masked_at = rows;  /* this long chunk is all masked out */
    rows += len[i];
  }
  wv_span *in = calloc(N, sizeof *in), mspan[3];
  uint64_t *buf = calloc(rows, sizeof *buf);
  uint32_t *p32 = calloc(rows, 4), *mk = calloc(rows, sizeof *mk);
  uint32_t *nz = calloc(rows, 4);  /* all -0.0: the masked long chunk's
                                    * value must be -0.0, not +0.0 */
  for (uint64_t i = 0; i < rows; i++) {
    nz[i] = WV_F32_NEG_ZERO;
    uint32_t f = tsl_float(TS_FINITE, i);
    float x;
    memcpy(&x, &f, 4);
    p32[i] = f;
    double d = (double)x * ldexp(1.0, (int)(tsl_rand() % 200) - 100);
    memcpy(&buf[i], &d, 8);
    mk[i] = (i < masked_at || i >= masked_at + 140000) &&
            tsl_rand() % 5 != 0;
  }
  mspan[0] = (wv_span){mk, 1000};
  mspan[1] = (wv_span){mk + 1000, rows - 2000};
  mspan[2] = (wv_span){mk + rows - 1000, 1000};
  static const wave_dtype dts[] = {WAVE_F32, WAVE_F64, WAVE_U32, WAVE_F32};
  for (size_t q = 0; q < 4; q++)
    for (int masked = 0; masked < 2; masked++) {
      unsigned size = dts[q] == WAVE_F64 ? 8 : 4;
      const uint8_t *base = size == 8 ? (const uint8_t *)buf
                            : q == 3  ? (const uint8_t *)nz
                                      : (const uint8_t *)p32;
      uint64_t at = 0;
      for (size_t i = 0; i < N; i++) {
        in[i] = (wv_span){base + at * size, len[i]};
        at += len[i];
      }
      wv_reduce_job job = {.dtype = dts[q], .op = WAVE_SUM, .input = in,
                           .n_input = N, .mask = mspan,
                           .n_mask = masked ? 3 : 0, .has_mask = masked,
                           .rows = rows};
      wave_error err = {0};
      ck_assert_msg(wv_reduce_validate(&job, &err) == 0, "%s", err.message);
      wv_reduce_out want = {0};
      ck_assert_int_eq(wv_reduce_reference(&job, &want, &err), 0);
      uint64_t p = wd_slices_rows(&job, 65536);
      ck_assert_msg(p != 0, "a %s sum of long and short chunks runs whole",
                    wave_dtype_name(job.dtype));
      tsl_all_devices(&job, p, &want, (int)(rows / 65536), masked);
    }
  free(in);
  free(buf);
  free(p32);
  free(nz);
  free(mk);
}
END_TEST

/* Which jobs are sliced, and in slices of how many rows. */
START_TEST(slice_sizes)
{
  wv_span big = {NULL, 1u << 20}, small[40];
  wv_reduce_job j = {.dtype = WAVE_U32, .op = WAVE_SUM, .input = &big,
                     .n_input = 1, .rows = big.rows};
  ck_assert_uint_eq(wd_slices_rows(&j, 0), 0);
  ck_assert_uint_eq(wd_slices_rows(&j, 100000), 65536);  /* rounded down */
  ck_assert_uint_eq(wd_slices_rows(&j, 1000), 65536);    /* at least */
  ck_assert_uint_eq(wd_slices_rows(&j, 262144), 262144);
  ck_assert_uint_eq(wd_slices_rows(&j, 1u << 20), 0);    /* fits in one */
  j.dtype = WAVE_F32;
  j.op = WAVE_MIN;
  ck_assert_uint_eq(wd_slices_rows(&j, 262144), 262144); /* not a sum */
  j.op = WAVE_SUM;
  ck_assert_uint_eq(wd_slices_rows(&j, 262144), 65536);  /* 256^2 */
  ck_assert_uint_eq(wd_slices_rows(&j, (1u << 24) - 1), 65536);
  big.rows = 1u << 26;
  j.rows = big.rows;
  ck_assert_uint_eq(wd_slices_rows(&j, 1u << 24), 1u << 24);  /* 256^3 */
  /* a float sum of chunks shorter than a slice but longer than a 256th
   * of it: blocks, each chunk reduced first (it ran whole before) */
  for (size_t i = 0; i < 40; i++)
    small[i] = (wv_span){NULL, 10000};
  j.input = small;
  j.n_input = 40;
  j.rows = 400000;
  ck_assert_uint_eq(wd_slices_rows(&j, 65536), 65536);
  j.n_input = 6;  /* one call of at most a slice: whole */
  j.rows = 60000;
  ck_assert_uint_eq(wd_slices_rows(&j, 65536), 0);
  j.n_input = 40;
  j.rows = 400000;
  j.dtype = WAVE_U32;  /* order-free: slices across chunks */
  ck_assert_uint_eq(wd_slices_rows(&j, 65536), 65536);
  /* the devices' defaults, and the key over them */
  wd_device_cfg cfg = {.threads = 1};
  wv_caps caps = {.reads_host_memory = 1};  /* the CPU backend */
  ck_assert_uint_eq(wd_slices_device_rows(&cfg, &caps), 1u << 18);
  cfg.threads = 4;
  ck_assert_uint_eq(wd_slices_device_rows(&cfg, &caps), 1u << 24);
  caps.reads_host_memory = 0;  /* a GPU */
  ck_assert_uint_eq(wd_slices_device_rows(&cfg, &caps), 1ull << 32);
  cfg.reduce_slice_rows = 3u << 16;
  ck_assert_uint_eq(wd_slices_device_rows(&cfg, &caps), 3u << 16);
}
END_TEST

/* Many tiny chunks (issue 35, finding 2): sliced (at most 1024 chunks a
 * slice of 65536 rows; a float sum in blocks of 256 whole chunks), with
 * the whole job's bits, on every device; float32 and float64 sums, with
 * empty chunks and a mask; and order-free ops. */
START_TEST(many_tiny_chunks)
{
  enum { N = 70001 };
  wv_span *in = calloc(N, sizeof *in), mspan[3];
  uint64_t *buf = calloc(2 * N, sizeof *buf);
  uint32_t *mk = calloc(3 * N, sizeof *mk);
  uint64_t rows = 0;
  for (size_t i = 0; i < N; i++)
    rows += i % 97 == 0 ? 0 : 1 + i % 2;  /* empty, 1 or 2 rows */
  uint32_t *p32 = calloc(2 * N, 4);  /* float32 rows (tree-sensitive) */
  for (uint64_t i = 0; i < rows; i++) {
    uint32_t f = tsl_float(TS_FINITE, i);
    float x;
    memcpy(&x, &f, 4);
    p32[i] = f;
    double d = (double)x * ldexp(1.0, (int)(tsl_rand() % 200) - 100);
    memcpy(&buf[i], &d, 8);
    mk[i] = tsl_rand() % 5 != 0;
  }
  mspan[0] = (wv_span){mk, 1000};
  mspan[1] = (wv_span){mk + 1000, rows - 2000};
  mspan[2] = (wv_span){mk + rows - 1000, 1000};
  static const struct { wave_dtype dt; wave_op op; } jobs[] = {
      {WAVE_F32, WAVE_SUM}, {WAVE_F64, WAVE_SUM}, {WAVE_U32, WAVE_SUM},
      {WAVE_F32, WAVE_MIN}, {WAVE_U32, WAVE_XOR}};
  for (size_t q = 0; q < sizeof jobs / sizeof jobs[0]; q++)
    for (int masked = 0; masked < 2; masked++) {
      unsigned size = jobs[q].dt == WAVE_F64 ? 8 : 4;
      const uint8_t *base = (const uint8_t *)buf;
      uint64_t at = 0;
      if (size == 4)
        base = (const uint8_t *)p32;
      for (size_t i = 0; i < N; i++) {
        uint64_t r = i % 97 == 0 ? 0 : 1 + i % 2;
        in[i] = (wv_span){base + at * size, r};
        at += r;
      }
      wv_reduce_job job = {.dtype = jobs[q].dt, .op = jobs[q].op,
                           .input = in, .n_input = N, .mask = mspan,
                           .n_mask = masked ? 3 : 0, .has_mask = masked,
                           .rows = rows};
      wave_error err = {0};
      ck_assert_msg(wv_reduce_validate(&job, &err) == 0, "%s", err.message);
      wv_reduce_out want = {0};
      ck_assert_int_eq(wv_reduce_reference(&job, &want, &err), 0);
      uint64_t p = wd_slices_rows(&job, 65536);
      ck_assert_msg(p != 0, "%s/%s of %d tiny chunks runs whole",
                    wave_dtype_name(job.dtype), wave_op_name(job.op), N);
      /* at most 1024 chunks a slice */
      tsl_all_devices(&job, p, &want, N / 1024, masked);
    }
  free(in);
  free(buf);
  free(p32);
  free(mk);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("slices");
  TCase *tc = tcase_create("bits");
  tcase_add_checked_fixture(tc, tsl_setup, tsl_teardown);
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, every_dtype_and_op);
  tcase_add_test(tc, float_specials);
  tcase_add_test(tc, unaligned_cut_would_differ);
  tcase_add_test(tc, slice_sizes);
  tcase_add_test(tc, many_tiny_chunks);
  tcase_add_test(tc, mixed_long_and_short_chunks);
  suite_add_tcase(s, tc);
  return wvs_run(s, CK_NORMAL);
}
