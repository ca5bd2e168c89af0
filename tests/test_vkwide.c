/* test_vkwide.c - the Vulkan backend's 64-bit dtypes and argmin/argmax
 * (workers/vulkan/vk_rec.c), bit for bit against wv_reduce_reference().
 *
 * tests/conformance_wide.c runs every pair on the default device set-up;
 * this suite reaches the paths a default lavapipe device never takes:
 * tiny staging windows (chunks and 256-row groups straddle windows, argmin
 * indices cross window bases), the shared-memory variants (force_local),
 * three work-groups (the GPU's loop over many blocks, several levels),
 * rows bound in place from imported host memory, device-resident data (the
 * benchmark's entry), and the refusals of a device without shaderFloat64
 * or shaderInt64 (wv_vk_options no_float64 / no_int64 stand in for one).
 *
 * Case fsum: the exact sum (vk_xsum.c), bits, count and exact partial
 * against the reference, over the dynamic-range sweep (every exponent of
 * both dtypes, with and without cancelling copies), cancellation, ties,
 * overflow, subnormal results, signed zeros, NaN and infinities (with
 * their answers written out, tvx_cases), masks and many chunkings, the
 * windowed, few-work-group, in-place and resident set-ups, and the
 * refusals (no_atomic64, no_int64).  About ten seconds on lavapipe.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base.h"
#include "core/reduce.h"
#include "workers/vulkan/vk.h"

static uint64_t tvw_state;

static uint64_t tvw_next(void)
{
  uint64_t z = (tvw_state += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

/* A row of dtype d: kind 0 random (floats of modest range), 1 with the
 * awkward values mixed in, 2 few distinct values (argmin/argmax ties). */
static uint64_t tvw_row(wave_dtype d, int kind)
{
  static const uint64_t f64sp[] = {
    0x7ff8000000000000u, 0xfff0000000000000u, 0x7ff0000000000000u,
    0x8000000000000000u, 0, 1, 0x800fffffffffffffu, 0x7fefffffffffffffu};
  static const uint64_t f32sp[] = {
    0x7fc00000u, 0xff800000u, 0x7f800000u, 0x80000000u, 0, 1, 0x807fffffu,
    0x7f7fffffu};
  static const uint64_t isp[] = {0, 1, 0x7fffffffffffffffu,
                                 0x8000000000000000u, UINT64_MAX,
                                 0xffffffffu, 0x80000000u, 0x7fffffffu};
  uint64_t r = tvw_next(), q = r >> 9;
  int sp = kind == 1 && r % 4 == 0;
  if (kind == 2)
    q %= 3;
  switch (d) {
  case WAVE_F64:
    if (kind == 2)
      return 0x3ff0000000000000u | q << 51 | (r & 1) << 63;
    return sp ? f64sp[q % 8]
              : (r & 0x800fffffffffffffu) | ((uint64_t)(1000 + q % 40) << 52);
  case WAVE_F32:
    if (kind == 2)
      return 0x3f800000u | (uint32_t)q << 22 | (uint32_t)(r & 1) << 31;
    return sp ? f32sp[q % 8] : (r & 0x807fffffu) | ((110u + q % 30u) << 23);
  default: {
    uint64_t x = sp ? isp[q % 8] : kind == 2 ? q : r;
    return wv_dtype_size(d) == 4 ? x & 0xffffffffu : x;
  }
  }
}

typedef struct tvw_job {
  unsigned char *rows;     /* 4 bytes in from a 16-byte aligned block */
  uint32_t *mask;
  wv_span in[16], mk[4];
  wv_reduce_job job;
} tvw_job;

/* n rows; chunked: a few chunks of random sizes with empty ones; mask: 0
 * none, 1 random, 2 nothing selected, 3 sparse. */
static void tvw_make(tvw_job *t, unsigned char *buf, wave_dtype d, wave_op op,
                    uint64_t n, int chunked, int mask, int kind)
{
  memset(t, 0, sizeof *t);
  const unsigned rs = wv_dtype_size(d);
  t->rows = buf;
  t->mask = malloc((n + 1) * 4);
  ck_assert_ptr_nonnull(t->mask);
  for (uint64_t i = 0; i < n; i++) {
    uint64_t x = tvw_row(d, kind);
    memcpy(t->rows + i * rs, &x, rs);
    uint64_t r = tvw_next();
    t->mask[i] = mask == 2 ? 0 : mask == 3 ? r % 300 == 0 : (r % 3 != 0) * 7u;
  }
  size_t k = 0;
  uint64_t at = 0;
  while (chunked && at < n && k < 14) {
    uint64_t len = tvw_next() % 4 == 0 ? 0 : tvw_next() % (n - at + 1);
    t->in[k++] = (wv_span){t->rows + at * rs, len};
    at += len;
  }
  t->in[k++] = (wv_span){t->rows + at * rs, n - at};
  t->mk[0] = (wv_span){t->mask, n / 2};
  t->mk[1] = (wv_span){t->mask + n / 2, n - n / 2};
  t->job = (wv_reduce_job){.dtype = d, .op = op, .input = t->in,
                           .n_input = k, .mask = t->mk, .n_mask = 2,
                           .has_mask = mask != 0, .rows = n};
}

static void tvw_check(wv_device *dev, const tvw_job *t, const char *what)
{
  wv_reduce_out want, got;
  wave_error e1 = {0}, e2 = {0};
  ck_assert_int_eq(wv_reduce_reference(&t->job, &want, &e1), 0);
  memset(&got, 0x5a, sizeof got);
  int rc = wv_vk_reduce(dev, &t->job, &got, &e2);
  ck_assert_msg(rc == 0, "%s: %s", what, e2.message);
  ck_assert_msg(got.n_values == want.n_values && got.count == want.count &&
                  got.index == want.index && got.bits[0] == want.bits[0] &&
                  (want.n_values < 2 || got.bits[1] == want.bits[1]),
                "%s %s/%s rows %llu chunks %zu mask %d: got %016llx %016llx "
                "count %llu index %lld, want %016llx %016llx count %llu "
                "index %lld", what, wave_dtype_name(t->job.dtype),
                wave_op_name(t->job.op), (unsigned long long)t->job.rows,
                t->job.n_input, t->job.has_mask,
                (unsigned long long)got.bits[0],
                (unsigned long long)got.bits[1],
                (unsigned long long)got.count, (long long)got.index,
                (unsigned long long)want.bits[0],
                (unsigned long long)want.bits[1],
                (unsigned long long)want.count, (long long)want.index);
}

/* Every wide (dtype, op) pair over sizes around groups and windows. */
static void tvw_sweep(wv_device *dev, uint64_t seed, const char *what)
{
  static const uint64_t sizes[] = {0, 1, 2, 3, 255, 256, 257, 511, 1025,
                                   4099, 20000};
  unsigned char *block = aligned_alloc(16, 20000 * 8 + 16);
  ck_assert_ptr_nonnull(block);
  tvw_state = seed;
  for (int d = WAVE_U32; d <= WAVE_F64; d++)
    for (int op = WAVE_SUM; op <= WAVE_ARGMAX; op++) {
      if (wave_op_check((wave_dtype)d, (wave_op)op) != 0 ||
          !wv_reduce_is_wide((wave_dtype)d, (wave_op)op))
        continue;
      for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        tvw_job t;
        tvw_make(&t, block + 4, (wave_dtype)d, (wave_op)op, sizes[s],
                (int)(s & 1), (int)(tvw_next() % 4), (int)(tvw_next() % 3));
        tvw_check(dev, &t, what);
        free(t.mask);
      }
    }
  free(block);
}

static wv_device *tvw_open(const wv_vk_options *opt)
{
  wv_device_config cfg = {.name = "vk0", .backend = "vulkan", .index = 0};
  wv_device *d = NULL;
  wave_error e = {0};
  int rc = wv_vk_open_ex(&cfg, opt, &d, &e);
  ck_assert_msg(rc == 0, "open: %s", e.message);
  return d;
}

START_TEST(test_wide_setups)
{
  const wv_vk_options opts[] = {
    {0},
    {.window_rows = 1024},
    {.window_rows = 1024, .force_local = 1},
    {.stream_groups = 3},
    {.stream_groups = 3, .force_local = 1},
  };
  static const char *const names[] = {"default", "windows", "windows, local",
                                      "3 groups", "3 groups, local"};
  int i = _i;
  wv_device *d = tvw_open(&opts[i]);
  wv_caps c;
  wv_vulkan_backend.caps(d, &c);
  ck_assert_msg(c.dtypes64 && c.argminmax, "lavapipe has shaderInt64 and "
                "shaderFloat64: %s", c.description);
  tvw_sweep(d, 100 + (uint64_t)i, names[i]);
  wv_vk_close(d);
}
END_TEST

/* Rows bound in place from imported memory, 4-byte and 8-byte rows. */
START_TEST(test_wide_inplace)
{
  wv_vk_options opt = {.window_rows = 4096, .inplace_min_rows = 1};
  wv_device *d = tvw_open(&opt);
  const size_t bytes = 1u << 20;
  unsigned char *block = aligned_alloc(4096, bytes);
  ck_assert_ptr_nonnull(block);
  wave_error e = {0};
  ck_assert_msg(wv_vk_host_register(d, block, bytes, &e) == 0, "%s",
                e.message);
  tvw_state = 7;
  static const wave_dtype dts[] = {WAVE_U64, WAVE_S64, WAVE_F64, WAVE_F32};
  static const wave_op ops[] = {WAVE_SUM, WAVE_EXTENT, WAVE_ARGMIN,
                                WAVE_ARGMAX};
  uint64_t before = d->inplace_rows;
  for (size_t a = 0; a < 4; a++)
    for (size_t b = 0; b < 4; b++) {
      tvw_job t;
      tvw_make(&t, block + 1024, dts[a], ops[b], 100000, 1, 0,
              (int)(b % 3));
      tvw_check(d, &t, "in place");
      free(t.mask);
    }
  ck_assert_uint_gt(d->inplace_rows, before);
  wv_vk_host_unregister(d, block, bytes);
  free(block);
  wv_vk_close(d);
}
END_TEST

/* More first-level partials than one later work-group takes (8192 for
 * argm.comp, one block's worth for reduce_int.comp's 8-byte rows): 1024-row
 * windows, one partial each, so the levels run several work-groups and levels. */
START_TEST(test_wide_levels)
{
  wv_vk_options opt = {.window_rows = 1024};
  wv_device *d = tvw_open(&opt);
  const uint64_t n = 8200 * 1024;
  unsigned char *block = aligned_alloc(16, n * 4 + 16);
  ck_assert_ptr_nonnull(block);
  static const wave_dtype dts[] = {WAVE_F32, WAVE_U32, WAVE_U64};
  static const wave_op ops[] = {WAVE_ARGMAX, WAVE_ARGMIN, WAVE_EXTENT};
  tvw_state = 21;
  for (size_t k = 0; k < 3; k++) {
    tvw_job t;
    const uint64_t rows = n * 4 / wv_dtype_size(dts[k]);
    tvw_make(&t, block + 4, dts[k], ops[k], rows, 0, k == 1 ? 3 : 0, 2);
    tvw_check(d, &t, "levels");
    free(t.mask);
  }
  free(block);
  wv_vk_close(d);
}
END_TEST

/* The benchmark's entry over a device buffer, several windows' worth of
 * work-groups. */
START_TEST(test_wide_resident)
{
  wv_vk_options opt = {.stream_groups = 5};
  wv_device *d = tvw_open(&opt);
  const uint64_t n = 300001;
  wv_vk_buf b;
  wave_error e = {0};
  ck_assert_int_eq(wv_vk_buf_create(d, n * 8 + 64, WV_VK_HOST, &b, &e), 0);
  static const wave_dtype dts[] = {WAVE_U64, WAVE_F64, WAVE_F32, WAVE_S64};
  static const wave_op ops[] = {WAVE_SUM, WAVE_SUM, WAVE_ARGMAX, WAVE_ARGMIN};
  tvw_state = 9;
  for (size_t k = 0; k < 4; k++) {
    const unsigned rs = wv_dtype_size(dts[k]);
    for (uint64_t i = 0; i < n; i++) {
      uint64_t x = tvw_row(dts[k], 1);
      memcpy((unsigned char *)b.map + i * rs, &x, rs);
    }
    wv_reduce_job job = {.dtype = dts[k], .op = ops[k],
                         .input = &(wv_span){b.map, n}, .n_input = 1,
                         .rows = n};
    wv_reduce_out want, got;
    double sec;
    ck_assert_int_eq(wv_reduce_reference(&job, &want, &e), 0);
    ck_assert_int_eq(wv_vk_reduce_resident(d, &b, n, job.dtype, job.op, &got,
                                           &sec, &e), 0);
    ck_assert_uint_eq(got.bits[0], want.bits[0]);
    ck_assert_uint_eq(got.count, want.count);
    ck_assert_int_eq(got.index, want.index);
  }
  wv_vk_buf_destroy(d, &b);
  wv_vk_close(d);
}
END_TEST

/* A device without the feature: caps off, the description says so once,
 * and every such job is UNSUPPORTED naming the device and the feature. */
static void tvw_refused(wv_device *d, wave_dtype dt, wave_op op,
                       const char *feature)
{
  uint64_t rows[4] = {1, 2, 3, 4};
  wv_reduce_job job = {.dtype = dt, .op = op,
                       .input = &(wv_span){rows, 2}, .n_input = 1, .rows = 2};
  wv_reduce_out out;
  wave_error e = {0};
  ck_assert_int_eq(wv_vk_reduce(d, &job, &out, &e), WAVE_EUNSUPPORTED);
  ck_assert_msg(strstr(e.message, "vulkan") != NULL &&
                  strstr(e.message, d->props.deviceName) != NULL &&
                  strstr(e.message, feature) != NULL,
                "%s", e.message);
}

START_TEST(test_wide_refusals)
{
  wv_vk_options no_f64 = {.no_float64 = 1};
  wv_device *d = tvw_open(&no_f64);
  wv_caps c;
  wv_vulkan_backend.caps(d, &c);
  ck_assert(!c.dtypes64 && c.argminmax);
  ck_assert_msg(strstr(c.description, "no 64-bit dtypes") != NULL, "%s",
                c.description);
  /* what wv_dev_reduce's refusal names (workers/wvdev.c) */
  ck_assert_msg(strstr(c.wide_why, "shaderFloat64") != NULL, "%s",
                c.wide_why);
  tvw_refused(d, WAVE_U64, WAVE_SUM, "shaderFloat64");
  tvw_refused(d, WAVE_F64, WAVE_ARGMAX, "shaderFloat64");
  unsigned char *block = aligned_alloc(16, 4096 * 4 + 16);
  ck_assert_ptr_nonnull(block);
  tvw_job t;   /* 32-bit rows still run argmin/argmax */
  tvw_make(&t, block + 4, WAVE_F32, WAVE_ARGMAX, 4096, 1, 1, 1);
  tvw_check(d, &t, "no float64");
  free(t.mask);
  free(block);
  wv_vk_close(d);

  wv_vk_options no_i64 = {.no_int64 = 1};
  d = tvw_open(&no_i64);
  wv_vulkan_backend.caps(d, &c);
  ck_assert(!c.dtypes64 && !c.argminmax);
  ck_assert_msg(strstr(c.wide_why, "shaderInt64") != NULL, "%s", c.wide_why);
  tvw_refused(d, WAVE_S64, WAVE_MIN, "shaderInt64");
  tvw_refused(d, WAVE_U32, WAVE_ARGMIN, "shaderInt64");
  wv_vk_close(d);
}
END_TEST

/* ---- the exact sum fsum (vk_xsum.c, shaders/xsum.comp) ----------------- */

/* A float row of kind k: 0 narrow (one binade either side of 1), 1 full
 * range (every exponent, subnormals, both signs), 2 full range with NaN,
 * infinities and zeros mixed in, 3 cancelling (a large row, and later its
 * negation: tvx_fill pairs them). */
static uint64_t tvx_row(wave_dtype d, int k)
{
  uint64_t r = tvw_next(), s = r >> 63;
  int f64 = d == WAVE_F64;
  unsigned mb = f64 ? 52 : 23, emax = f64 ? 2046 : 254;
  uint64_t mant = r & ((1ull << mb) - 1), e;
  if (k == 2 && r % 8 == 0) {
    static const uint64_t sp32[] = {0x7fc00000u, 0x7f800000u, 0xff800000u,
                                    0x80000000u, 0, 0x7fa00001u};
    static const uint64_t sp64[] = {0x7ff8000000000000u, 0x7ff0000000000000u,
                                    0xfff0000000000000u, 0x8000000000000000u,
                                    0, 0x7ff0000000000001u};
    return f64 ? sp64[(r >> 8) % 6] : sp32[(r >> 8) % 6];
  }
  if (k == 0)
    e = (f64 ? 1022 : 126) + (r >> 40) % 3;
  else
    e = (r >> 40) % (emax + 1);
  return s << (f64 ? 63 : 31) | e << mb | mant;
}

/* n rows of kind k into buf; kind 3: a random full-range half, then its
 * negations in another order, and a few small rows. */
static void tvx_fill(unsigned char *buf, wave_dtype d, uint64_t n, int k)
{
  const unsigned rs = wv_dtype_size(d);
  for (uint64_t i = 0; i < n; i++) {
    uint64_t x = tvx_row(d, k == 3 ? (i % 64 == 0 ? 0 : 1) : k);
    if (k == 3 && n >= 2 && i >= n / 2 && i % 64 != 0) {
      uint64_t j = (n - 1 - i) % (n / 2);   /* a row of the first half */
      x = 0;
      memcpy(&x, buf + j * rs, rs);
      x ^= rs == 8 ? 0x8000000000000000u : 0x80000000u;
    }
    memcpy(buf + i * rs, &x, rs);
  }
}

/* out against the reference: the bits, the count, and the exact partial
 * (limbs and flags) that crosses chunks, devices and daemons. */
static void tvx_same(const wv_reduce_job *job, const wv_reduce_out *got,
                    const char *what)
{
  wv_reduce_out want;
  wave_error e = {0};
  ck_assert_int_eq(wv_reduce_reference(job, &want, &e), 0);
  ck_assert_msg(got->bits[0] == want.bits[0] && got->count == want.count,
                "%s %s rows %llu chunks %zu mask %d: got %016llx count %llu, "
                "want %016llx count %llu", what, wave_dtype_name(job->dtype),
                (unsigned long long)job->rows, job->n_input, job->has_mask,
                (unsigned long long)got->bits[0],
                (unsigned long long)got->count,
                (unsigned long long)want.bits[0],
                (unsigned long long)want.count);
  ck_assert_msg(got->xsum.n_limbs == want.xsum.n_limbs &&
                  got->xsum.flags == want.xsum.flags &&
                  memcmp(got->xsum.limb, want.xsum.limb,
                         sizeof want.xsum.limb) == 0,
                "%s %s rows %llu: the exact partial differs (flags %x, want "
                "%x)", what, wave_dtype_name(job->dtype),
                (unsigned long long)job->rows, got->xsum.flags,
                want.xsum.flags);
}

static void tvx_check(wv_device *dev, const tvw_job *t, const char *what)
{
  wv_reduce_out got;
  wave_error e = {0};
  memset(&got, 0x5a, sizeof got);
  int rc = wv_vk_reduce(dev, &t->job, &got, &e);
  ck_assert_msg(rc == 0, "%s: %s", what, e.message);
  tvx_same(&t->job, &got, what);
}

/* The rows of block + 4 (already filled) under chunking c (0 one chunk, 1
 * random chunks with empty ones, 2 chunks of 1 to 3 rows) and mask m
 * (tvw_make's). */
static void tvx_job(tvw_job *t, unsigned char *rows, wave_dtype d,
                   uint64_t n, int c, int m)
{
  memset(t, 0, sizeof *t);
  const unsigned rs = wv_dtype_size(d);
  t->rows = rows;
  t->mask = malloc((n + 1) * 4);
  ck_assert_ptr_nonnull(t->mask);
  for (uint64_t i = 0; i < n; i++) {
    uint64_t r = tvw_next();
    t->mask[i] = m == 2 ? 0 : m == 3 ? r % 300 == 0 : (r % 3 != 0) * 7u;
  }
  size_t k = 0;
  uint64_t at = 0;
  while (c != 0 && at < n && k < 15) {
    uint64_t len = c == 2 ? 1 + tvw_next() % 3
                 : tvw_next() % 4 == 0 ? 0 : tvw_next() % (n - at + 1);
    len = len < n - at ? len : n - at;
    t->in[k++] = (wv_span){rows + at * rs, len};
    at += len;
  }
  t->in[k++] = (wv_span){rows + at * rs, n - at};
  uint64_t cut = n ? tvw_next() % (n + 1) : 0;   /* the mask's own chunks */
  t->mk[0] = (wv_span){t->mask, cut};
  t->mk[1] = (wv_span){t->mask + cut, n - cut};
  t->job = (wv_reduce_job){.dtype = d, .op = WAVE_FSUM, .input = t->in,
                           .n_input = k, .mask = t->mk, .n_mask = 2,
                           .has_mask = m != 0, .rows = n};
}

/* Every kind of data, sizes around blocks and windows, every chunking and
 * mask, both dtypes. */
static void tvx_sweep(wv_device *dev, uint64_t seed, const char *what)
{
  static const uint64_t sizes[] = {0, 1, 3, 17, 1023, 1024, 4097, 20000,
                                   70001};
  unsigned char *block = aligned_alloc(16, 70002 * 8 + 16);   /* 16 | size */
  ck_assert_ptr_nonnull(block);
  tvw_state = seed;
  for (int d = 0; d < 2; d++)
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
      const wave_dtype dt = d ? WAVE_F64 : WAVE_F32;
      tvx_fill(block + 4, dt, sizes[s], (int)(s % 4));
      for (int v = 0; v < 3; v++) {
        tvw_job t;
        tvx_job(&t, block + 4, dt, sizes[s], v, (int)((s + v) % 4));
        tvx_check(dev, &t, what);
        free(t.mask);
      }
    }
  free(block);
}

START_TEST(test_fsum_setups)
{
  const wv_vk_options opts[] = {
    {0},
    {.window_rows = 1024},
    {.stream_groups = 3},
  };
  static const char *const names[] = {"fsum default", "fsum windows",
                                      "fsum 3 groups"};
  int i = _i;
  wv_device *d = tvw_open(&opts[i]);
  wv_caps c;
  wv_vulkan_backend.caps(d, &c);
  ck_assert_msg(c.fsum, "lavapipe has shaderInt64 and 64-bit atomics: %s",
                c.fsum_why);
  tvx_sweep(d, 300 + (uint64_t)i, names[i]);
  wv_vk_close(d);
}
END_TEST

/* The dynamic-range sweep: rows at every exponent from the smallest
 * subnormal to the largest finite, in a random order, with and without a
 * cancelling copy of each. */
START_TEST(test_fsum_range)
{
  wv_device *d = tvw_open(&(wv_vk_options){.stream_groups = 5});
  unsigned char *block = aligned_alloc(16, 2047 * 6 * 8 + 16);
  ck_assert_ptr_nonnull(block);
  tvw_state = 55;
  for (int f = 0; f < 2; f++) {
    const wave_dtype dt = f ? WAVE_F64 : WAVE_F32;
    const unsigned rs = f ? 8 : 4, mb = f ? 52 : 23;
    const uint64_t ne = f ? 2047 : 255;
    for (int neg = 0; neg < 2; neg++) {
      uint64_t n = 0;
      for (uint64_t e = 0; e < ne; e++)
        for (int j = 0; j < 3; j++) {
          uint64_t m = tvw_next() & ((1ull << mb) - 1);
          uint64_t x = (tvw_next() & 1) << (rs * 8 - 1) | e << mb | m;
          memcpy(block + 4 + n++ * rs, &x, rs);
          if (neg) {   /* its negation: the sum is the other rows' */
            x ^= 1ull << (rs * 8 - 1);
            if (j != 0)
              memcpy(block + 4 + n++ * rs, &x, rs);
          }
        }
      for (uint64_t i = n - 1; i > 0; i--) {   /* shuffle */
        uint64_t j = tvw_next() % (i + 1), a = 0, b = 0;
        memcpy(&a, block + 4 + i * rs, rs);
        memcpy(&b, block + 4 + j * rs, rs);
        memcpy(block + 4 + i * rs, &b, rs);
        memcpy(block + 4 + j * rs, &a, rs);
      }
      for (int v = 0; v < 3; v++) {
        tvw_job t;
        tvx_job(&t, block + 4, dt, n, v, v == 2 ? 1 : 0);
        tvx_check(d, &t, "range");
        free(t.mask);
      }
    }
  }
  free(block);
  wv_vk_close(d);
}
END_TEST

/* The rules with their answers: cancellation, ties to even, overflow,
 * subnormal results, signed zeros, NaN and infinities, masks. */
typedef struct tvx_case {
  int f64;
  unsigned n;
  uint64_t rows[4];
  uint32_t mask;     /* bit i: row i selected; 0 = no mask */
  uint64_t want;
} tvx_case;

static const tvx_case tvx_cases[] = {
  {0, 3, {0x7149f2cau, 0x3f800000u, 0xf149f2cau}, 0, 0x3f800000u},
  {0, 2, {0x3f800000u, 0x33800000u}, 0, 0x3f800000u},        /* tie, even */
  {0, 2, {0x3f800001u, 0x33800000u}, 0, 0x3f800002u},        /* tie, up */
  {0, 3, {0x3f800000u, 0x33800000u, 0x00000001u}, 0, 0x3f800001u},
  {0, 2, {0x7f7fffffu, 0x73000000u}, 0, 0x7f800000u},        /* overflow */
  {0, 2, {0x7f7fffffu, 0x72800000u}, 0, 0x7f7fffffu},
  {0, 2, {0xff7fffffu, 0xff7fffffu}, 0, 0xff800000u},
  {0, 2, {0x00000003u, 0x80000001u}, 0, 0x00000002u},        /* subnormal */
  {0, 2, {0x00800000u, 0x80000001u}, 0, 0x007fffffu},
  {0, 2, {0x80000000u, 0x80000000u}, 0, 0x80000000u},        /* zeros */
  {0, 2, {0x80000000u, 0x00000000u}, 0, 0x00000000u},
  {0, 2, {0x3f800000u, 0xbf800000u}, 0, 0x00000000u},
  {0, 3, {0x80000000u, 0x3f800000u, 0x80000000u}, 5, 0x80000000u},
  {0, 3, {0x80000000u, 0x3f800000u, 0x80000000u}, 0x10, 0},  /* none */
  {0, 2, {0x7f800000u, 0x3f800000u}, 0, 0x7f800000u},        /* inf, NaN */
  {0, 2, {0xff800000u, 0x7f7fffffu}, 0, 0xff800000u},
  {0, 2, {0x7f800000u, 0xff800000u}, 0, 0x7fc00000u},
  {0, 2, {0x7fa00001u, 0x3f800000u}, 0, 0x7fc00000u},
  {0, 3, {0x7fa00001u, 0x3f800000u, 0x40000000u}, 6, 0x40400000u},
  {1, 3, {0x7e37e43c8800759cu, 0x3ff0000000000000u, 0xfe37e43c8800759cu}, 0,
   0x3ff0000000000000u},
  {1, 2, {0x3ff0000000000000u, 0x3ca0000000000000u}, 0, 0x3ff0000000000000u},
  {1, 2, {0x3ff0000000000001u, 0x3ca0000000000000u}, 0, 0x3ff0000000000002u},
  {1, 2, {0x7fefffffffffffffu, 0x7c90000000000000u}, 0, 0x7ff0000000000000u},
  {1, 2, {0x7fefffffffffffffu, 0x7c80000000000000u}, 0, 0x7fefffffffffffffu},
  {1, 2, {3, 0x8000000000000001u}, 0, 2},
  {1, 2, {0x8000000000000000u, 0x8000000000000000u}, 0, 0x8000000000000000u},
  {1, 2, {0x8000000000000000u, 0}, 0, 0},
  {1, 2, {0x7ff0000000000000u, 0xfff0000000000000u}, 0, 0x7ff8000000000000u},
  {1, 2, {0xfff0000000000000u, 0x3ff0000000000000u}, 0, 0xfff0000000000000u},
  {1, 2, {0x7ff0000000000001u, 0x3ff0000000000000u}, 0, 0x7ff8000000000000u},
};

START_TEST(test_fsum_rules)
{
  wv_device *d = tvw_open(&(wv_vk_options){0});
  for (size_t i = 0; i < sizeof tvx_cases / sizeof *tvx_cases; i++) {
    const tvx_case *c = &tvx_cases[i];
    _Alignas(16) unsigned char rows[64];
    uint32_t mask[4];
    const unsigned rs = c->f64 ? 8 : 4;
    for (unsigned j = 0; j < c->n; j++) {
      memcpy(rows + j * rs, &c->rows[j], rs);
      mask[j] = c->mask >> j & 1;
    }
    wv_reduce_job job = {.dtype = c->f64 ? WAVE_F64 : WAVE_F32,
                         .op = WAVE_FSUM, .input = &(wv_span){rows, c->n},
                         .n_input = 1, .mask = &(wv_span){mask, c->n},
                         .n_mask = 1, .has_mask = c->mask != 0, .rows = c->n};
    wv_reduce_out got;
    wave_error e = {0};
    ck_assert_msg(wv_vk_reduce(d, &job, &got, &e) == 0, "%s", e.message);
    ck_assert_msg(got.bits[0] == c->want, "case %zu: got %016llx, want "
                  "%016llx", i, (unsigned long long)got.bits[0],
                  (unsigned long long)c->want);
    tvx_same(&job, &got, "rules");
  }
  wv_vk_close(d);
}
END_TEST

/* Rows bound in place from imported memory; the benchmark's entry over a
 * device buffer. */
START_TEST(test_fsum_inplace_resident)
{
  wv_vk_options opt = {.window_rows = 4096, .inplace_min_rows = 1,
                       .stream_groups = 4};
  wv_device *d = tvw_open(&opt);
  const size_t bytes = 1u << 20;
  unsigned char *block = aligned_alloc(4096, bytes);
  ck_assert_ptr_nonnull(block);
  wave_error e = {0};
  ck_assert_msg(wv_vk_host_register(d, block, bytes, &e) == 0, "%s",
                e.message);
  tvw_state = 17;
  uint64_t before = d->inplace_rows;
  for (int k = 0; k < 4; k++) {
    const wave_dtype dt = k % 2 ? WAVE_F64 : WAVE_F32;
    tvx_fill(block + 1024, dt, 100000, k);
    tvw_job t;
    tvx_job(&t, block + 1024, dt, 100000, 1, 0);
    tvx_check(d, &t, "fsum in place");
    free(t.mask);
  }
  ck_assert_uint_gt(d->inplace_rows, before);
  wv_vk_host_unregister(d, block, bytes);
  free(block);

  const uint64_t n = 300001;
  wv_vk_buf b;
  ck_assert_int_eq(wv_vk_buf_create(d, n * 8 + 64, WV_VK_HOST, &b, &e), 0);
  for (int k = 0; k < 4; k++) {
    const wave_dtype dt = k % 2 ? WAVE_F64 : WAVE_F32;
    tvx_fill(b.map, dt, n, k);
    wv_reduce_job job = {.dtype = dt, .op = WAVE_FSUM,
                         .input = &(wv_span){b.map, n}, .n_input = 1,
                         .rows = n};
    wv_reduce_out got;
    double sec;
    ck_assert_int_eq(wv_vk_reduce_resident(d, &b, n, dt, WAVE_FSUM, &got,
                                           &sec, &e), 0);
    tvx_same(&job, &got, "fsum resident");
  }
  wv_vk_buf_destroy(d, &b);
  wv_vk_close(d);
}
END_TEST

/* A device without 64-bit integers or 64-bit shared atomics: caps fsum 0,
 * the reason said, every fsum job UNSUPPORTED naming device and feature. */
START_TEST(test_fsum_refusals)
{
  static const struct { wv_vk_options opt; const char *feature; } no[] = {
    {{.no_atomic64 = 1}, "shaderSharedInt64Atomics"},
    {{.no_int64 = 1}, "shaderInt64"},
  };
  for (size_t i = 0; i < 2; i++) {
    wv_device *d = tvw_open(&no[i].opt);
    wv_caps c;
    wv_vulkan_backend.caps(d, &c);
    ck_assert(!c.fsum);
    ck_assert_msg(strstr(c.fsum_why, no[i].feature) != NULL, "%s",
                  c.fsum_why);
    tvw_refused(d, WAVE_F32, WAVE_FSUM, no[i].feature);
    tvw_refused(d, WAVE_F64, WAVE_FSUM, no[i].feature);
    wv_vk_close(d);
  }
}
END_TEST

int main(void)
{
  Suite *s = suite_create("vkwide");
  TCase *tc = tcase_create("wide");
  tcase_set_timeout(tc, 900);
  tcase_add_loop_test(tc, test_wide_setups, 0, 5);
  tcase_add_test(tc, test_wide_inplace);
  tcase_add_test(tc, test_wide_levels);
  tcase_add_test(tc, test_wide_resident);
  tcase_add_test(tc, test_wide_refusals);
  suite_add_tcase(s, tc);
  TCase *tf = tcase_create("fsum");
  tcase_set_timeout(tf, 900);
  tcase_add_loop_test(tf, test_fsum_setups, 0, 3);
  tcase_add_test(tf, test_fsum_range);
  tcase_add_test(tf, test_fsum_rules);
  tcase_add_test(tf, test_fsum_inplace_resident);
  tcase_add_test(tf, test_fsum_refusals);
  suite_add_tcase(s, tf);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
