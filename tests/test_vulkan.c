/* test_vulkan.c - the Vulkan backend's own Check suite.
 *
 * Every reduction is compared bit for bit with wv_reduce_reference(), the
 * CPU transcription of docs/reduction.md: random jobs over every dtype and
 * op, chunkings with empty and tiny chunks, masks chunked differently from
 * the input, floats full of the awkward values (NaN, +-inf, +-0.0,
 * subnormals).  Each job runs on three device set-ups: the defaults, tiny
 * staging windows (so that chunks straddle windows and the windowed binding
 * is exercised without 128 MiB inputs), and tiny windows with sub-group
 * operations switched off (the shared-memory paths, which lavapipe would
 * otherwise never take).  tests/conformance.c covers the same ground across
 * backends; this suite is the one that can reach the backend's internals.
 *
 * Needs a Vulkan device (lavapipe in CI); a machine without one fails the
 * open test with the message, which is the point of running it in CI.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workers/hash/ref.h"
#include "core/reduce.h"
#include "workers/vulkan/vk.h"
#include "skip.h"

/* ---- a small deterministic generator (splitmix64) ------------------------ */

static uint64_t tv_state;

static uint64_t tv_next(void)
{
  uint64_t z = (tv_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static uint32_t tv_below(uint32_t n) { return (uint32_t)(tv_next() % n); }

static uint32_t tv_f32_bits(float f)
{
  uint32_t b;
  memcpy(&b, &f, 4);
  return b;
}

/* A float row: ordinary numbers of mixed size, +-0.0 and subnormals; when
 * nasty, also NaN, +-inf and values near the top of the range (whose sums
 * overflow).  Plain jobs keep float sums finite, so that they show the
 * order of the additions in their low bits. */
static uint32_t tv_float_row(int nasty)
{
  uint32_t r = tv_below(1000);
  if (nasty && r < 5) return 0x7fc00000u | tv_below(1u << 22);    /* NaN */
  if (nasty && r < 10) return tv_below(2) ? 0x7f800000u : 0xff800000u;
  if (nasty && r < 20)
    return (tv_below(2) << 31) | 0x7f000000u | tv_below(1u << 23);
  if (r < 100) return tv_below(2) ? 0x80000000u : 0;               /* +-0 */
  if (r < 180) return (tv_below(2) << 31) | (1 + tv_below(0x7fffff)); /* sub */
  float f = (float)((double)(tv_next() >> 11) / 9007199254740992.0 - 0.5);
  f *= (float)(1u << tv_below(20));
  return tv_f32_bits(f);
}

static uint32_t tv_int_row(void)
{
  switch (tv_below(4)) {
  case 0: return tv_below(16);
  case 1: return 0xffffffffu - tv_below(16);
  case 2: return 0x80000000u ^ tv_below(1u << 8);
  default: return (uint32_t)tv_next();
  }
}

/* ---- jobs ---------------------------------------------------------------- */

typedef struct tv_job {
  wv_reduce_job job;
  uint32_t *rows, *mask;
  wv_span in[64], mk[64];
} tv_job;

/* Split n rows into chunks: one, or up to 63 of random sizes (some
 * empty, some tiny). */
static size_t tv_split(uint64_t n, const uint32_t *base, wv_span *c, int many)
{
  size_t k = 0;
  uint64_t at = 0;
  if (!many) {
    c[0] = (wv_span){base, n};
    return 1;
  }
  while (at < n && k < 62) {
    uint64_t left = n - at, len;
    switch (tv_below(5)) {
    case 0: len = 0; break;
    case 1: len = 1 + tv_below(3); break;
    case 2: len = 1 + tv_below(300); break;
    default: len = 1 + tv_next() % left; break;
    }
    if (len > left)
      len = left;
    c[k++] = (wv_span){base + at, len};
    at += len;
  }
  c[k++] = (wv_span){base + at, n - at};   /* the rest, maybe empty */
  return k;
}

static void tv_make(tv_job *t, wave_dtype dt, wave_op op, uint64_t n,
                    int many, int mask_kind)
{
  memset(t, 0, sizeof *t);
  t->rows = malloc((n ? n : 1) * 4);
  t->mask = malloc((n ? n : 1) * 4);
  ck_assert_ptr_nonnull(t->rows);
  ck_assert_ptr_nonnull(t->mask);
  int nasty = tv_below(3) == 0;
  for (uint64_t i = 0; i < n; i++) {
    t->rows[i] = dt == WAVE_F32 ? tv_float_row(nasty) : tv_int_row();
    /* mask_kind: 1 random, 2 none selected, 3 sparse */
    uint32_t sel = mask_kind == 2 ? 0
                 : mask_kind == 3 ? tv_below(500) == 0
                                  : tv_below(3) != 0;
    t->mask[i] = sel ? 1 + tv_below(1000) : 0;
  }
  t->job.dtype = dt;
  t->job.op = op;
  t->job.rows = n;
  t->job.input = t->in;
  t->job.n_input = tv_split(n, t->rows, t->in, many);
  if (mask_kind) {
    t->job.has_mask = 1;
    t->job.mask = t->mk;
    t->job.n_mask = tv_split(n, t->mask, t->mk, tv_below(2));
  }
}

static void tv_free(tv_job *t)
{
  free(t->rows);
  free(t->mask);
}

static void tv_check(wv_device *d, const tv_job *t, const char *what)
{
  wv_reduce_out want, got;
  wave_error e1 = {0}, e2 = {0};
  ck_assert_int_eq(wv_reduce_reference(&t->job, &want, &e1), 0);
  int rc = wv_vk_reduce(d, &t->job, &got, &e2);
  ck_assert_msg(rc == 0, "%s: %s", what, e2.message);
  ck_assert_msg(got.n_values == want.n_values && got.count == want.count &&
                  got.bits[0] == want.bits[0] &&
                  (want.n_values < 2 || got.bits[1] == want.bits[1]),
                "%s %s/%s rows %llu chunks %zu mask %d: got %08x %08x "
                "count %llu, want %08x %08x count %llu", what,
                wave_dtype_name(t->job.dtype), wave_op_name(t->job.op),
                (unsigned long long)t->job.rows, t->job.n_input,
                t->job.has_mask, (unsigned)got.bits[0],
                (unsigned)got.bits[1], (unsigned long long)got.count,
                (unsigned)want.bits[0], (unsigned)want.bits[1],
                (unsigned long long)want.count);
}

static const wave_dtype tv_dtypes[] = {WAVE_U32, WAVE_S32, WAVE_F32};
static const wave_op tv_ops[] = {WAVE_SUM, WAVE_MIN, WAVE_MAX, WAVE_EXTENT,
                                 WAVE_AND, WAVE_OR, WAVE_XOR};

static wv_device *tv_open_ex(uint32_t window_rows, int force_local,
                             const char *exchange, uint32_t batch_units)
{
  wv_device_config cfg = {.name = "vk0", .backend = "vulkan", .index = 0};
  ck_assert_int_eq(wv_exchange_parse(exchange, &cfg.exchange), 0);
  wv_vk_options opt = {.window_rows = window_rows,
                       .force_local = force_local,
                       .batch_units = batch_units};
  wv_device *d = NULL;
  wave_error e = {0};
  int rc = wv_vk_open_ex(&cfg, &opt, &d, &e);
  ck_assert_msg(rc == 0, "open: %s", e.message);
  return d;
}

static wv_device *tv_open(uint32_t window_rows, int force_local)
{
  return tv_open_ex(window_rows, force_local, "auto", 0);
}

/* Every dtype x op, over sizes around the group and tile edges. */
static void tv_sweep(wv_device *d, uint64_t seed, const char *what)
{
  static const uint64_t sizes[] = {0, 1, 2, 5, 255, 256, 257, 1023, 4097,
                                   70000};
  tv_state = seed;
  for (size_t a = 0; a < 3; a++)
    for (size_t b = 0; b < 7; b++) {
      if (wave_op_check(tv_dtypes[a], tv_ops[b]) != 0)
        continue;
      for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        tv_job t;
        tv_make(&t, tv_dtypes[a], tv_ops[b], sizes[s], (int)(s & 1),
                (int)tv_below(4));
        tv_check(d, &t, what);
        tv_free(&t);
      }
    }
}

START_TEST(test_default)
{
  wv_device *d = tv_open(0, 0);
  tv_sweep(d, 1, "default");
  wv_vk_close(d);
}
END_TEST

START_TEST(test_windows)
{
  wv_device *d = tv_open(1024, 0);
  ck_assert_uint_eq(d->window_rows, 1024);
  tv_sweep(d, 2, "windows");
  wv_vk_close(d);
}
END_TEST

START_TEST(test_local)
{
  wv_device *d = tv_open(2048, 1);
  ck_assert_int_eq(d->red_sg, 0);
  ck_assert_int_eq(d->sum_shuffle, 0);
  tv_sweep(d, 3, "local");
  wv_vk_close(d);
}
END_TEST

/* Many chunks of many sizes, float sums: the chunk tree is where the
 * float sum can go wrong, and it only shows with several levels. */
START_TEST(test_fsum_chunks)
{
  wv_device *d = tv_open(1024, 0);
  tv_state = 4;
  for (int i = 0; i < 12; i++) {
    tv_job t;
    tv_make(&t, WAVE_F32, WAVE_SUM, 20000 + tv_below(200000), 1,
            (int)tv_below(2));
    tv_check(d, &t, "fsum chunks");
    tv_free(&t);
  }
  wv_vk_close(d);
}
END_TEST

/* Special values one at a time: the rules of docs/reduction.md that a
 * random job may miss. */
START_TEST(test_float_rules)
{
  wv_device *d = tv_open(0, 0);
  static const uint32_t rows[][4] = {
    {0x80000000u, 0x00000000u, 0x80000000u, 0x00000000u},  /* -0 < +0 */
    {0x7fc00000u, 0x7f800000u, 0xff800000u, 0x7fc00001u},  /* none finite */
    {0x7f800000u, 0xff800000u, 0x3f800000u, 0x7fc00000u},  /* inf - inf */
    {0x00000001u, 0x00000001u, 0x80000003u, 0x00800000u},  /* subnormals */
    {0x7f7fffffu, 0x7f7fffffu, 0xff7fffffu, 0x00000000u},  /* overflow */
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    for (size_t b = 0; b < 4; b++) {
      tv_job t;
      memset(&t, 0, sizeof t);
      t.job.dtype = WAVE_F32;
      t.job.op = tv_ops[b];
      t.job.rows = 4;
      t.in[0] = (wv_span){rows[i], 4};
      t.job.input = t.in;
      t.job.n_input = 1;
      tv_check(d, &t, "float rules");
    }
  wv_vk_close(d);
}
END_TEST

/* The benchmarks' path: one resident chunk, windows over a device buffer.
 * Rows past n hold a large value that would change every result: the
 * shaders must not read them as rows, also where a pass of whole groups
 * ends within 256 rows past n (n = 8000: sum.comp's first round of 32
 * groups ends at 8192).  lavapipe reads past a binding as zeros, so there
 * the sum of n rows of -0.0 is what shows such a read: +0.0 instead of
 * -0.0. */
static void tv_resident(wv_device *d)
{
  tv_state = 5;
  static const uint64_t ns[] = {300001, 8000};
  const uint64_t tail = 8192;
  for (size_t c = 0; c < sizeof ns / sizeof ns[0]; c++) {
    const uint64_t n = ns[c];
    wv_vk_buf b;
    wave_error e = {0};
    ck_assert_int_eq(wv_vk_buf_create(d, (n + tail) * 4, WV_VK_HOST, &b, &e),
                     0);
    uint32_t *p = b.map;
    for (uint64_t i = n; i < n + tail; i++)
      p[i] = 0x7f000000u;   /* 1.7e38 as a float */
    for (size_t a = 0; a < 3; a++)
      for (size_t k = 0; k < 4; k++) {
        for (uint64_t i = 0; i < n; i++)
          p[i] = tv_dtypes[a] == WAVE_F32 ? tv_float_row(0) : tv_int_row();
        wv_reduce_job job = {.dtype = tv_dtypes[a], .op = tv_ops[k],
                             .input = &(wv_span){p, n}, .n_input = 1,
                             .rows = n};
        wv_reduce_out want, got;
        double sec;
        ck_assert_int_eq(wv_reduce_reference(&job, &want, &e), 0);
        ck_assert_int_eq(wv_vk_reduce_resident(d, &b, n, job.dtype, job.op,
                                               &got, &sec, &e), 0);
        ck_assert_uint_eq(got.bits[0], want.bits[0]);
        ck_assert_uint_eq(got.bits[1], want.bits[1]);
        ck_assert_uint_eq(got.count, want.count);
      }
    for (uint64_t i = 0; i < n; i++)
      p[i] = 0x80000000u;
    wv_reduce_out got;
    double sec;
    ck_assert_int_eq(wv_vk_reduce_resident(d, &b, n, WAVE_F32, WAVE_SUM, &got,
                                           &sec, &e), 0);
    ck_assert_uint_eq(got.bits[0], 0x80000000u);
    ck_assert_int_eq(wv_vk_stream_resident(d, &b, n, &sec, &e), 0);
    wv_vk_buf_destroy(d, &b);
  }
}

START_TEST(test_resident)
{
  wv_device *d = tv_open(0, 0);
  tv_resident(d);
  wv_vk_close(d);
}
END_TEST

/* A GPU dispatches only enough work-groups to fill it, each looping over
 * many blocks; a CPU driver gets one block per work-group.  Three
 * work-groups give lavapipe the GPU's loops (blocks per work-group, the
 * partial block on a work-group other than the first), on both exchange
 * paths. */
static wv_device *tv_open_groups(uint32_t groups, int force_local)
{
  wv_device_config cfg = {.name = "vk0", .backend = "vulkan", .index = 0,
                          };
  wv_vk_options opt = {.force_local = force_local, .stream_groups = groups};
  wv_device *d = NULL;
  wave_error e = {0};
  int rc = wv_vk_open_ex(&cfg, &opt, &d, &e);
  ck_assert_msg(rc == 0, "open: %s", e.message);
  return d;
}

START_TEST(test_few_groups)
{
  for (int local = 0; local < 2; local++) {
    wv_device *d = tv_open_groups(3, local);
    ck_assert_uint_eq(d->stream_groups, 3);
    tv_sweep(d, 11 + (uint64_t)local, local ? "3 groups, local" : "3 groups");
    tv_resident(d);
    wv_vk_close(d);
  }
}
END_TEST

START_TEST(test_caps)
{
  wv_device *d = tv_open(0, 0);
  wv_caps c;
  wv_vulkan_backend.caps(d, &c);
  ck_assert_uint_ge(c.wave_width, 1);
  ck_assert_uint_eq(c.wave_width & (c.wave_width - 1), 0);
  ck_assert_msg(c.exchange_mode == WV_EXCHANGE_SHUFFLE ||
                    c.exchange_mode == WV_EXCHANGE_LOCAL,
                "%s", wv_exchange_name(c.exchange_mode));
  ck_assert_msg(c.exchange_reason[0] != 0, "no exchange reason");
  ck_assert_msg(c.description[0] != 0, "no description");
  wv_vk_close(d);
}
END_TEST

/* A machine with the loader but no driver: open() reports it.  Runs in
 * Check's forked child, so the environment change stays there. */
START_TEST(test_no_driver)
{
  setenv("VK_DRIVER_FILES", "/nonexistent/wave_icd.json", 1);
  setenv("VK_ICD_FILENAMES", "/nonexistent/wave_icd.json", 1);
  wv_device_config cfg = {.name = "vk0", .backend = "vulkan", .index = 0};
  wv_device *d = (wv_device *)1;
  wave_error e = {0};
  int rc = wv_vulkan_backend.open(&cfg, &d, &e);
  ck_assert_int_eq(rc, WAVE_ENODEV);
  ck_assert_ptr_null(d);
  ck_assert_msg(strstr(e.message, "vulkan") != NULL, "%s", e.message);
}
END_TEST

START_TEST(test_bad_index)
{
  wv_device_config cfg = {.name = "vk9", .backend = "vulkan", .index = 99};
  wv_device *d = NULL;
  wave_error e = {0};
  ck_assert_int_eq(wv_vulkan_backend.open(&cfg, &d, &e), WAVE_ENODEV);
  ck_assert_ptr_null(d);
}
END_TEST

/* ---- hash ---------------------------------------------------------------- */

static wv_pack *tv_pack(const char *name)
{
  const char *src = getenv("WAVE_SOURCE_DIR");
  char path[512];
  snprintf(path, sizeof path, "%s/config/packs/%s.yaml",
           src != NULL ? src : ".", name);
  wv_pack *p = NULL;
  wave_error e = {0};
  int rc = wv_pack_load_file(path, &p, &e);
  ck_assert_msg(rc == 0, "%s: %s", path, e.message);
  return p;
}

/* The daemon's start-up check: cache, vectors, a partial unit, the batch
 * fingerprint of [0, 2^13), on both exchange settings. */
static void tv_selfcheck(const char *pack, const char *exchange)
{
  wv_pack *p = tv_pack(pack);
  wv_device *d = tv_open_ex(0, 0, exchange, 0);
  char detail[200];
  wave_error e = {0};
  int rc = wv_pack_selfcheck(&wv_vulkan_backend, d, p, detail, sizeof detail,
                             &e);
  ck_assert_msg(rc == 0, "%s/%s: %s", pack, exchange, e.message);
  wv_vk_close(d);
  wv_pack_free(p);
}

START_TEST(test_hash_small)   { tv_selfcheck("small", "auto"); }
END_TEST
START_TEST(test_hash_closed)  { tv_selfcheck("closed", "auto"); }
END_TEST
START_TEST(test_hash_local)   { tv_selfcheck("small", "local"); }
END_TEST

/* Ranges that start and end inside units, split over many small batches
 * (3 units each), against the plain reference (ref.c) from the cache. */
START_TEST(test_hash_ranges)
{
  wv_pack *p = tv_pack("small");
  wv_device *d = tv_open_ex(0, 0, "auto", 3);
  wv_hash_mem m = {.pack = p};
  wave_error e = {0};
  ck_assert_int_eq(wv_pack_cache_get(p, &m.cache, &e), 0);
  static const struct { uint64_t nonce, count; } r[] = {
    {5, 1}, {31, 2}, {64, 32}, {1000, 517}, {(1ull << 40) + 7, 200},
    {UINT64_MAX - 99, 100},   /* the last nonces there are */
  };
  for (size_t i = 0; i < sizeof r / sizeof r[0]; i++) {
    uint64_t *got = calloc(r[i].count, 8), *want = calloc(r[i].count, 8);
    ck_assert_int_eq(wv_vk_hash(d, p, r[i].nonce, r[i].count, got, &e), 0);
    wv_ref_range(&m, r[i].nonce, r[i].count, want);
    for (uint64_t k = 0; k < r[i].count; k++)
      ck_assert_msg(got[k] == want[k], "nonce %llu: %016llx != %016llx",
                    (unsigned long long)(r[i].nonce + k),
                    (unsigned long long)got[k], (unsigned long long)want[k]);
    free(got);
    free(want);
  }
  /* Between hash jobs a reduction still works (they share the slots). */
  tv_state = 9;
  tv_job t;
  tv_make(&t, WAVE_F32, WAVE_SUM, 5000, 1, 1);
  tv_check(d, &t, "after hash");
  tv_free(&t);
  wv_vk_close(d);
  wv_pack_free(p);
}
END_TEST

/* hash_batch in sub-batches of 2^10 nonces, so that both slots are reused
 * several times and winners and the best span sub-batches: the device fold
 * against wv_hash_fold over the reference outputs; a reduction between
 * batches; bad batches are errors. */
START_TEST(test_hash_batch_pieces)
{
  wv_pack *p = tv_pack("small");
  wv_device_config cfg = {.name = "vk0", .backend = "vulkan", .index = 0,
                          };
  wv_vk_options opt = {.seg_sub_log2 = 10};
  wv_device *d = NULL;
  wave_error e = {0};
  ck_assert_msg(wv_vk_open_ex(&cfg, &opt, &d, &e) == 0, "%s", e.message);
  wv_hash_mem m = {.pack = p};
  ck_assert_int_eq(wv_pack_cache_get(p, &m.cache, &e), 0);
  const uint64_t nonce = 3 * 1024 - 77, count = 5000;
  uint64_t *ref = calloc(count, 8), *out = calloc(count, 8);
  uint64_t *fw = calloc(count, 8), *fg = calloc(count, 8);
  wv_hash_winner *ww = calloc(4000, sizeof *ww), *wg = calloc(4000, sizeof *wg);
  wv_ref_range(&m, nonce, count, ref);
  static const struct { unsigned s; uint64_t target; size_t slots; int out; }
  c[] = {{5, UINT64_MAX, 3000, 0}, {10, (uint64_t)1 << 60, 4000, 1},
         {5, 0, 8, 1}, {10, UINT64_MAX, 1, 0}};
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    wv_hash_batch w = {.nonce = nonce, .count = count, .seg_log2 = c[i].s,
                       .target = c[i].target, .max_winners = c[i].slots,
                       .seg_fp = fw, .winners = ww};
    wv_hash_batch g = w;
    g.seg_fp = fg;
    g.winners = wg;
    g.outputs = c[i].out ? out : NULL;
    memset(out, 0, count * 8);
    wv_hash_fold(&w, ref);
    ck_assert_msg(wv_vk_hash_batch_run(d, p, &g, &e) == 0, "%s", e.message);
    uint64_t nseg = wv_seg_count(nonce, count, c[i].s);
    ck_assert_uint_gt(nseg, 4);
    for (uint64_t k = 0; k < nseg; k++)
      ck_assert_msg(fg[k] == fw[k], "case %zu: segment %llu", i,
                    (unsigned long long)k);
    ck_assert_uint_eq(g.winner_count, w.winner_count);
    ck_assert_uint_eq(g.n_winners, w.n_winners);
    for (size_t k = 0; k < w.n_winners; k++) {
      ck_assert_uint_eq(wg[k].nonce, ww[k].nonce);
      ck_assert_uint_eq(wg[k].output, ww[k].output);
    }
    ck_assert_uint_eq(g.best_nonce, w.best_nonce);
    ck_assert_uint_eq(g.best_output, w.best_output);
    if (c[i].out)
      ck_assert_int_eq(memcmp(out, ref, count * 8), 0);
    tv_state = 11 + i;
    tv_job t;
    tv_make(&t, WAVE_U32, WAVE_SUM, 3000, 1, 1);
    tv_check(d, &t, "between hash batches");
    tv_free(&t);
  }
  wv_hash_batch bad = {.nonce = 0, .count = 10, .seg_log2 = 4,
                       .seg_fp = fg};
  ck_assert_int_eq(wv_vk_hash_batch_run(d, p, &bad, &e), WAVE_EARG);
  bad.seg_log2 = 21;
  ck_assert_int_eq(wv_vk_hash_batch_run(d, p, &bad, &e), WAVE_EARG);
  bad.seg_log2 = 13;
  bad.nonce = UINT64_MAX - 5;
  ck_assert_int_eq(wv_vk_hash_batch_run(d, p, &bad, &e), WAVE_ERANGE);
  free(ref);
  free(out);
  free(fw);
  free(fg);
  free(ww);
  free(wg);
  wv_vk_close(d);
  wv_pack_free(p);
}
END_TEST

/* exchange: shuffle on a device that cannot: packs are refused, saying why
 * (docs/hash.md "Selection"); a device that can must take the shuffle. */
START_TEST(test_hash_demand_shuffle)
{
  wv_pack *p = tv_pack("closed");
  wv_device *d = tv_open_ex(0, 0, "shuffle", 0);
  wave_error e = {0};
  wv_caps c;
  wv_vulkan_backend.caps(d, &c);
  int rc = wv_vk_hash_prepare(d, p, &e);
  if (d->hash_shuffle) {
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(c.exchange_mode, WV_EXCHANGE_SHUFFLE);
  } else {
    ck_assert_int_eq(rc, WAVE_EUNSUPPORTED);
    ck_assert_msg(strstr(e.message, "!= 32") != NULL, "%s", e.message);
    ck_assert_int_eq(c.exchange_mode, WV_EXCHANGE_NONE);
  }
  wv_vk_close(d);
  wv_pack_free(p);
}
END_TEST

/* The shuffle exchange itself: the packs' start-up check (known answers,
 * batch fingerprint) on that path, where the device can take it; skipped,
 * saying why, where it cannot (lavapipe: sub-groups of 4-16 lanes).
 * Entry test_vulkan_shuffle (tests/skips.txt: CI has no GPU). */
START_TEST(test_hash_shuffle_runs)
{
  wv_pack *p = tv_pack("closed");
  wv_device *d = tv_open_ex(0, 0, "shuffle", 0);
  wave_error e = {0};
  int can = d->hash_shuffle;
  int rc = wv_vk_hash_prepare(d, p, &e);
  wv_vk_close(d);
  wv_pack_free(p);
  if (!can)
    WVS_SKIP("the shuffle exchange cannot run on this device: %s",
             e.message);
  ck_assert_msg(rc == 0, "%s", e.message);
  tv_selfcheck("small", "shuffle");
  tv_selfcheck("closed", "shuffle");
}
END_TEST

int main(void)
{
  Suite *s = suite_create("vulkan");
  TCase *tc = tcase_create("reduce");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_default);
  tcase_add_test(tc, test_windows);
  tcase_add_test(tc, test_local);
  tcase_add_test(tc, test_fsum_chunks);
  tcase_add_test(tc, test_float_rules);
  tcase_add_test(tc, test_resident);
  tcase_add_test(tc, test_few_groups);
  tcase_add_test(tc, test_caps);
  tcase_add_test(tc, test_no_driver);
  tcase_add_test(tc, test_bad_index);
  suite_add_tcase(s, tc);
  TCase *th = tcase_create("hash");
  tcase_set_timeout(th, 600);
  tcase_add_test(th, test_hash_small);
  tcase_add_test(th, test_hash_closed);
  tcase_add_test(th, test_hash_local);
  tcase_add_test(th, test_hash_ranges);
  tcase_add_test(th, test_hash_demand_shuffle);
  tcase_add_test(th, test_hash_batch_pieces);
  suite_add_tcase(s, th);
  TCase *sh = wvs_tcase("shuffle", 600);
  tcase_add_test(sh, test_hash_shuffle_runs);
  suite_add_tcase(s, sh);
  return wvs_run(s, CK_NORMAL);
}
