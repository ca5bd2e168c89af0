/* test_opencl.c - the OpenCL backend's own Check suite (PoCL in CI).
 *
 * Reductions: every dtype x op over sizes around the 4-row vector, the
 * 256-row group and the window edges, chunked and masked at random (masks
 * chunked differently from the input), floats full of NaN, +-inf, +-0.0
 * and subnormals, compared bit for bit with wv_reduce_reference(); each on
 * the default device, on tiny staging windows (chunks straddle windows and
 * the partials of many windows meet), and with sub-group reductions off.
 * The worked examples of docs/reduction.md, the device-resident entry
 * points, a build failure's log, the device choice by name and its errors.
 *
 * Hash: the packs' known answers with exchange auto and local, ragged
 * ranges up to nonce 2^64 - 1 against the reference (ref.c), exchange
 * shuffle refused with the failed condition where the device cannot, and
 * hash_batch against the host fold wv_hash_fold over ragged ranges,
 * segment sizes 2^5 .. 2^20, targets that select nothing, some, or
 * everything, with and without outputs.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workers/hash/hash.h"
#include "workers/hash/pack.h"
#include "workers/hash/ref.h"
#include "workers/opencl/ocl.h"
#include "core/reduce.h"
#include "skip.h"

static uint64_t to_state;

static uint64_t to_next(void)
{
  uint64_t z = (to_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static uint32_t to_below(uint32_t n) { return (uint32_t)(to_next() % n); }

static uint32_t to_row(wave_dtype dt, int nasty)
{
  uint32_t r = to_below(1000);
  if (dt != WAVE_F32) {
    switch (r & 3) {
    case 0: return to_below(16);
    case 1: return 0xffffffffu - to_below(16);
    case 2: return 0x80000000u ^ to_below(256);
    default: return (uint32_t)to_next();
    }
  }
  if (nasty && r < 5) return 0x7fc00000u | to_below(1u << 22);
  if (nasty && r < 10) return to_below(2) ? 0x7f800000u : 0xff800000u;
  if (nasty && r < 20) return (to_below(2) << 31) | 0x7f000000u | to_below(1u << 23);
  if (r < 100) return to_below(2) ? 0x80000000u : 0;
  if (r < 180) return (to_below(2) << 31) | (1 + to_below(0x7fffff));
  float f = (float)((double)(to_next() >> 11) / 9007199254740992.0 - 0.5);
  f *= (float)(1u << to_below(20));
  uint32_t b;
  memcpy(&b, &f, 4);
  return b;
}

typedef struct to_job {
  wv_reduce_job job;
  uint32_t *rows, *mask;
  wv_span in[80], mk[80];
} to_job;

static size_t to_split(uint64_t n, const uint32_t *base, wv_span *c, int many)
{
  size_t k = 0;
  uint64_t at = 0;
  while (many && at < n && k < 70) {
    uint64_t left = n - at, len;
    switch (to_below(5)) {
    case 0: len = 0; break;
    case 1: len = 1 + to_below(3); break;
    case 2: len = 1 + to_below(600); break;
    default: len = 1 + to_next() % left; break;
    }
    len = len > left ? left : len;
    c[k++] = (wv_span){base + at, len};
    at += len;
  }
  c[k++] = (wv_span){base + at, n - at};
  return k;
}

/* mask: 0 none, 1 random, 2 nothing selected, 3 sparse */
static void to_make(to_job *t, wave_dtype dt, wave_op op, uint64_t n,
                    int many, int mask)
{
  memset(t, 0, sizeof *t);
  t->rows = malloc((n ? n : 1) * 4);
  t->mask = malloc((n ? n : 1) * 4);
  ck_assert_ptr_nonnull(t->rows);
  ck_assert_ptr_nonnull(t->mask);
  int nasty = to_below(3) == 0;
  for (uint64_t i = 0; i < n; i++) {
    t->rows[i] = to_row(dt, nasty);
    int sel = mask == 2 ? 0 : mask == 3 ? to_below(500) == 0 : to_below(3) != 0;
    t->mask[i] = sel ? 1 + to_below(1000) : 0;
  }
  t->job = (wv_reduce_job){.dtype = dt, .op = op, .rows = n, .input = t->in};
  t->job.n_input = to_split(n, t->rows, t->in, many);
  if (mask) {
    t->job.has_mask = 1;
    t->job.mask = t->mk;
    t->job.n_mask = to_split(n, t->mask, t->mk, (int)to_below(2));
  }
}

static void to_free(to_job *t)
{
  free(t->rows);
  free(t->mask);
}

static void to_check(wv_device *d, const wv_reduce_job *job, const char *what)
{
  wv_reduce_out want, got;
  wave_error e1 = {0}, e2 = {0};
  ck_assert_int_eq(wv_reduce_reference(job, &want, &e1), 0);
  int rc = wv_ocl_reduce(d, job, &got, &e2);
  ck_assert_msg(rc == 0, "%s: %s", what, e2.message);
  ck_assert_msg(got.n_values == want.n_values && got.count == want.count &&
                  got.bits[0] == want.bits[0] &&
                  (want.n_values < 2 || got.bits[1] == want.bits[1]),
                "%s %s/%s rows %llu chunks %zu mask %d: got %08x %08x count "
                "%llu, want %08x %08x count %llu", what,
                wave_dtype_name(job->dtype), wave_op_name(job->op),
                (unsigned long long)job->rows, job->n_input, job->has_mask,
                (unsigned)got.bits[0], (unsigned)got.bits[1],
                (unsigned long long)got.count, (unsigned)want.bits[0],
                (unsigned)want.bits[1], (unsigned long long)want.count);
}

static wv_device *to_open(uint64_t window_rows, int force_local,
                          const char *exchange, unsigned group_units)
{
  wv_device_config cfg = {.name = "ocl0", .backend = "opencl",
                          .group_units = group_units};
  ck_assert_int_eq(wv_exchange_parse(exchange, &cfg.exchange), 0);
  wv_ocl_options opt = {.window_rows = window_rows,
                        .force_local = force_local};
  wv_device *d = NULL;
  wave_error e = {0};
  int rc = wv_ocl_open_ex(&cfg, &opt, &d, &e);
  ck_assert_msg(rc == 0, "open: %s", e.message);
  return d;
}

static const wave_dtype to_dtypes[] = {WAVE_U32, WAVE_S32, WAVE_F32};
static const wave_op to_ops[] = {WAVE_SUM, WAVE_MIN, WAVE_MAX, WAVE_EXTENT,
                                 WAVE_AND, WAVE_OR, WAVE_XOR};

static void to_sweep(wv_device *d, uint64_t seed, const char *what)
{
  static const uint64_t sizes[] = {0, 1, 2, 5, 255, 256, 257, 1023, 4097,
                                   70001};
  to_state = seed;
  for (size_t a = 0; a < 3; a++)
    for (size_t b = 0; b < 7; b++) {
      if (wave_op_check(to_dtypes[a], to_ops[b]) != 0)
        continue;
      for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        to_job t;
        to_make(&t, to_dtypes[a], to_ops[b], sizes[s], (int)(s & 1),
                (int)to_below(4));
        to_check(d, &t.job, what);
        to_free(&t);
      }
    }
}

/* ---- reductions ---------------------------------------------------------- */

START_TEST(test_reduce_default)
{
  wv_device *d = to_open(0, 0, "auto", 0);
  to_sweep(d, 1, "default");
  wv_ocl_close(d);
}
END_TEST

START_TEST(test_reduce_windows)
{
  wv_device *d = to_open(1024, 0, "auto", 0);
  ck_assert_uint_eq(d->window_rows, 1024);
  to_sweep(d, 2, "windows");
  /* Many chunks and several tree levels across windows. */
  for (int i = 0; i < 6; i++) {
    to_job t;
    to_make(&t, WAVE_F32, WAVE_SUM, 20000 + to_below(150000), 1,
            (int)to_below(2));
    to_check(d, &t.job, "fsum chunks");
    to_free(&t);
  }
  wv_ocl_close(d);
}
END_TEST

START_TEST(test_reduce_local)
{
  wv_device *d = to_open(2048, 1, "auto", 0);
  wv_caps c;
  wv_opencl_backend.caps(d, &c);
  ck_assert_int_eq(c.native_wave_reduce, 0);
  to_sweep(d, 3, "local");
  wv_ocl_close(d);
}
END_TEST

/* docs/reduction.md, "Worked examples". */
START_TEST(test_reduce_examples)
{
  wv_device *d = to_open(0, 0, "auto", 0);
  uint32_t tree[256];
  for (int i = 0; i < 256; i++)
    tree[i] = 0x80000000u;
  tree[0] = 0x3f800000u;
  tree[1] = tree[129] = 0x33800000u;
  wv_span s1 = {tree, 256};
  wv_reduce_job j = {.dtype = WAVE_F32, .op = WAVE_SUM, .input = &s1,
                     .n_input = 1, .rows = 256};
  wv_reduce_out o;
  wave_error e = {0};
  ck_assert_int_eq(wv_ocl_reduce(d, &j, &o, &e), 0);
  ck_assert_uint_eq(o.bits[0], 0x3f800001u);
  /* Chunks change the bits: [1.0], [], [2^-24, 2^-24]. */
  uint32_t a = 0x3f800000u, bb[2] = {0x33800000u, 0x33800000u};
  wv_span ch[3] = {{&a, 1}, {bb, 0}, {bb, 2}};
  j = (wv_reduce_job){.dtype = WAVE_F32, .op = WAVE_SUM, .input = ch,
                      .n_input = 3, .rows = 3};
  ck_assert_int_eq(wv_ocl_reduce(d, &j, &o, &e), 0);
  ck_assert_uint_eq(o.bits[0], 0x3f800001u);
  /* Masked rows are -0.0; subnormals are kept; sNaN canonical. */
  uint32_t r4[4] = {0x7fc00000u, 0x80000000u, 0x7f800000u, 0x40000000u};
  uint32_t m4[4] = {0, 1, 0, 0};
  wv_span si = {r4, 4}, sm = {m4, 4};
  j = (wv_reduce_job){.dtype = WAVE_F32, .op = WAVE_SUM, .input = &si,
                      .n_input = 1, .mask = &sm, .n_mask = 1, .has_mask = 1,
                      .rows = 4};
  ck_assert_int_eq(wv_ocl_reduce(d, &j, &o, &e), 0);
  ck_assert_uint_eq(o.bits[0], 0x80000000u);
  ck_assert_uint_eq(o.count, 1);
  uint32_t sub[3] = {1, 1, 1};
  wv_span ss = {sub, 3};
  j = (wv_reduce_job){.dtype = WAVE_F32, .op = WAVE_SUM, .input = &ss,
                      .n_input = 1, .rows = 3};
  ck_assert_int_eq(wv_ocl_reduce(d, &j, &o, &e), 0);
  ck_assert_uint_eq(o.bits[0], 3);
  uint32_t snan = 0x7f800001u;
  wv_span sn = {&snan, 1};
  j.input = &sn;
  j.rows = 1;
  ck_assert_int_eq(wv_ocl_reduce(d, &j, &o, &e), 0);
  ck_assert_uint_eq(o.bits[0], 0x7fc00000u);
  /* Float extent: -0.0 below +0.0; integers as the page says. */
  uint32_t z[2] = {0x00000000u, 0x80000000u};
  wv_span sz = {z, 2};
  j = (wv_reduce_job){.dtype = WAVE_F32, .op = WAVE_EXTENT, .input = &sz,
                      .n_input = 1, .rows = 2};
  ck_assert_int_eq(wv_ocl_reduce(d, &j, &o, &e), 0);
  ck_assert_uint_eq(o.bits[0], 0x80000000u);
  ck_assert_uint_eq(o.bits[1], 0x00000000u);
  uint32_t iv[3] = {0xffffffffu, 2, 0x80000000u};
  wv_span sv = {iv, 3};
  j = (wv_reduce_job){.dtype = WAVE_S32, .op = WAVE_EXTENT, .input = &sv,
                      .n_input = 1, .rows = 3};
  ck_assert_int_eq(wv_ocl_reduce(d, &j, &o, &e), 0);
  ck_assert_uint_eq(o.bits[0], 0x80000000u);
  ck_assert_uint_eq(o.bits[1], 2);
  j.op = WAVE_XOR;
  ck_assert_int_eq(wv_ocl_reduce(d, &j, &o, &e), 0);
  ck_assert_uint_eq(o.bits[0], 0x7ffffffdu);
  wv_ocl_close(d);
}
END_TEST

/* The device-resident entry points the bench uses. */
START_TEST(test_reduce_resident)
{
  wv_device *d = to_open(0, 0, "auto", 0);
  const uint64_t n = 1u << 18;
  uint32_t *rows = malloc(n * 4);
  ck_assert_ptr_nonnull(rows);
  to_state = 7;
  for (uint64_t i = 0; i < n; i++)
    rows[i] = to_row(WAVE_F32, 0);
  cl_int ce;
  cl_mem m = clCreateBuffer(d->ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                            n * 4, rows, &ce);
  ck_assert_ptr_nonnull(m);
  wv_span s = {rows, n};
  for (size_t a = 0; a < 3; a++)
    for (size_t b = 0; b < 7; b++) {
      if (wave_op_check(to_dtypes[a], to_ops[b]) != 0)
        continue;
      wv_reduce_job j = {.dtype = to_dtypes[a], .op = to_ops[b], .input = &s,
                         .n_input = 1, .rows = n};
      wv_reduce_out want, got;
      wave_error e = {0};
      double sec = -1;
      ck_assert_int_eq(wv_reduce_reference(&j, &want, &e), 0);
      ck_assert_msg(wv_ocl_reduce_resident(d, m, n, j.dtype, j.op, &got, &sec,
                                           &e) == 0, "%s", e.message);
      ck_assert_uint_eq(got.bits[0], want.bits[0]);
      ck_assert_uint_eq(got.bits[1] * (want.n_values - 1),
                        want.bits[1] * (want.n_values - 1));
      ck_assert(sec >= 0);
    }
  double sec = -1;
  wave_error e = {0};
  ck_assert_int_eq(wv_ocl_stream_resident(d, m, n, &sec, &e), 0);
  ck_assert(sec >= 0);
  clReleaseMemObject(m);
  free(rows);
  wv_ocl_close(d);
}
END_TEST

/* ---- devices, builds ----------------------------------------------------- */

START_TEST(test_open_errors)
{
  wv_device *d = NULL;
  wave_error e = {0};
  wv_device_config cfg = {.name = "oclx", .backend = "opencl", .index = 99};
  ck_assert_int_eq(wv_opencl_backend.open(&cfg, &d, &e), WAVE_ENODEV);
  ck_assert_ptr_null(d);
  ck_assert_msg(strstr(e.message, "no OpenCL device 99") != NULL, "%s",
                e.message);
  cfg = (wv_device_config){.name = "oclx", .backend = "opencl", .platform = 50};
  ck_assert_int_eq(wv_opencl_backend.open(&cfg, &d, &e), WAVE_ENODEV);
  cfg = (wv_device_config){.name = "oclx", .backend = "opencl",
                           .device_match = "no such device, surely"};
  ck_assert_int_eq(wv_opencl_backend.open(&cfg, &d, &e), WAVE_ENODEV);
  ck_assert_msg(strstr(e.message, "matching") != NULL, "%s", e.message);
  /* By name: the device open() gives at index 0 has a name that matches. */
  wv_device *d0 = to_open(0, 0, "auto", 0);
  char part[8];
  snprintf(part, sizeof part, "%.7s", d0->name);
  cfg = (wv_device_config){.name = "ocln", .backend = "opencl",
                           .device_match = part};
  ck_assert_msg(wv_opencl_backend.open(&cfg, &d, &e) == 0, "%s", e.message);
  ck_assert_str_eq(d->name, d0->name);
  wv_ocl_close(d);
  wv_ocl_close(d0);
}
END_TEST

START_TEST(test_build_log)
{
  wv_device *d = to_open(0, 0, "auto", 0);
  const char *src[1] = {"__kernel void k(__global int *x) { x[0] = "
                        "wv_undeclared_thing; }\n"};
  cl_program p = (cl_program)1;
  wave_error e = {0};
  ck_assert_int_eq(wv_ocl_build(d, src, 1, "", &p, &e), WAVE_EDEVICE);
  ck_assert_ptr_null(p);
  ck_assert_msg(strstr(e.message, "CL_BUILD_PROGRAM_FAILURE") != NULL &&
                  strstr(e.message, "wv_undeclared_thing") != NULL,
                "%s", e.message);
  wv_ocl_close(d);
}
END_TEST

/* ---- hash ---------------------------------------------------------------- */

static wv_packset *to_packs(void)
{
  const char *src = getenv("WAVE_SOURCE_DIR");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/config/packs", src ? src : ".");
  wv_packset *s = NULL;
  wave_error e = {0};
  ck_assert_msg(wv_packset_load(dir, &s, &e) == 0, "%s", e.message);
  return s;
}

static void to_hash_pack(wv_device *d, const wv_pack *p)
{
  char detail[256];
  wave_error e = {0};
  ck_assert_msg(wv_pack_selfcheck(&wv_opencl_backend, d, p, detail,
                                  sizeof detail, &e) == 0, "%s: %s",
                wv_pack_name(p), detail);
  wv_hash_mem mem = {.pack = p};
  if (!p->closed)
    ck_assert_int_eq(wv_pack_cache_get(p, &mem.cache, &e), 0);
  static const uint64_t r[][2] = {{0, 1}, {31, 2}, {33, 999},
                                  {UINT64_MAX - 40, 41}, {1ull << 40, 64}};
  uint64_t want[1000], got[1000];
  for (size_t i = 0; i < sizeof r / sizeof r[0]; i++) {
    wv_ref_range(&mem, r[i][0], r[i][1], want);
    memset(got, 0x5a, sizeof got);
    ck_assert_msg(wv_ocl_hash(d, p, r[i][0], r[i][1], got, &e) == 0, "%s",
                  e.message);
    for (uint64_t k = 0; k < r[i][1]; k++)
      ck_assert_msg(got[k] == want[k], "pack %s nonce %llu", wv_pack_name(p),
                    (unsigned long long)(r[i][0] + k));
  }
}

START_TEST(test_hash_auto_local)
{
  wv_packset *s = to_packs();
  const char *modes[2] = {"auto", "local"};
  for (int m = 0; m < 2; m++) {
    wv_device *d = to_open(0, 0, modes[m], m == 1 ? 2 : 0);
    wv_caps c;
    wv_opencl_backend.caps(d, &c);
    printf("test_opencl: exchange %s: %s (%s)\n", modes[m],
           wv_exchange_name(c.exchange_mode),
           c.exchange_reason);
    if (m == 1)
      ck_assert_int_eq(c.exchange_mode, WV_EXCHANGE_LOCAL);
    ck_assert(c.exchange_reason[0] != '\0');
    to_hash_pack(d, wv_packset_find(s, "small"));
    to_hash_pack(d, wv_packset_find(s, "closed"));
    wv_ocl_close(d);
  }
  wv_packset_free(s);
}
END_TEST

/* exchange shuffle: where a condition fails the device says which and
 * refuses packs; where all hold, the packs pass on the shuffle path. */
START_TEST(test_hash_shuffle_demanded)
{
  wv_packset *s = to_packs();
  const wv_pack *p = wv_packset_find(s, "closed");
  wv_device *d = to_open(0, 0, "shuffle", 0);
  wv_caps c;
  wv_opencl_backend.caps(d, &c);
  printf("test_opencl: exchange shuffle: %s (%s)\n",
         wv_exchange_name(c.exchange_mode),
         c.exchange_reason);
  wave_error e = {0};
  if (c.exchange_mode == WV_EXCHANGE_SHUFFLE) {
    to_hash_pack(d, p);
  } else {
    ck_assert_int_eq(c.exchange_mode, WV_EXCHANGE_NONE);
    ck_assert(strstr(c.exchange_reason, "configured shuffle") != NULL);
    ck_assert_int_eq(wv_ocl_hash_prepare(d, p, &e), WAVE_EUNSUPPORTED);
    ck_assert(strstr(e.message, "cannot") != NULL);
  }
  wv_ocl_close(d);
  /* group_units 2 is a work-group of 64: never the shuffle path. */
  d = to_open(0, 0, "shuffle", 2);
  wv_opencl_backend.caps(d, &c);
  ck_assert_int_eq(c.exchange_mode, WV_EXCHANGE_NONE);
  wv_ocl_close(d);
  wv_packset_free(s);
}
END_TEST

/* The shuffle exchange itself: both packs on that path, where the device
 * can take it; skipped, saying which condition fails, where it cannot
 * (PoCL: no sub-group shuffle extension).  Entry test_opencl_shuffle
 * (tests/skips.txt: CI has no GPU). */
START_TEST(test_hash_shuffle_runs)
{
  wv_packset *s = to_packs();
  wv_device *d = to_open(0, 0, "shuffle", 0);
  wv_caps c;
  wv_opencl_backend.caps(d, &c);
  if (c.exchange_mode != WV_EXCHANGE_SHUFFLE) {
    char why[sizeof c.exchange_reason];
    snprintf(why, sizeof why, "%s", c.exchange_reason);
    wv_ocl_close(d);
    wv_packset_free(s);
    WVS_SKIP("the shuffle exchange cannot run on this device: %s", why);
  }
  to_hash_pack(d, wv_packset_find(s, "small"));
  to_hash_pack(d, wv_packset_find(s, "closed"));
  wv_ocl_close(d);
  wv_packset_free(s);
}
END_TEST

static void to_batch_case(wv_device *d, const wv_pack *p, uint64_t nonce,
                          uint64_t count, unsigned sl, uint64_t target,
                          size_t max_w, int with_outputs)
{
  uint64_t nseg = wv_seg_count(nonce, count, sl);
  uint64_t *out = malloc(count * 8), *out2 = malloc(count * 8);
  uint64_t *fa = malloc(nseg * 8), *fb = malloc(nseg * 8);
  wv_hash_winner *wa = calloc(max_w + 1, sizeof *wa);
  wv_hash_winner *wb = calloc(max_w + 1, sizeof *wb);
  ck_assert(out && out2 && fa && fb && wa && wb);
  wave_error e = {0};
  ck_assert_int_eq(wv_ocl_hash(d, p, nonce, count, out, &e), 0);
  wv_hash_batch host = {.nonce = nonce, .count = count, .seg_log2 = sl,
                        .target = target, .max_winners = max_w,
                        .seg_fp = fa, .winners = wa};
  wv_hash_fold(&host, out);
  wv_hash_batch dev = host;
  dev.seg_fp = fb;
  dev.winners = wb;
  dev.outputs = with_outputs ? out2 : NULL;
  dev.n_winners = 12345;
  ck_assert_msg(wv_ocl_hash_batch(d, p, &dev, &e) == 0, "%s", e.message);
  char what[160];
  snprintf(what, sizeof what, "batch [%llu, +%llu) s %u target %llx max %zu",
           (unsigned long long)nonce, (unsigned long long)count, sl,
           (unsigned long long)target, max_w);
  ck_assert_msg(dev.winner_count == host.winner_count, "%s: count %llu/%llu",
                what, (unsigned long long)dev.winner_count,
                (unsigned long long)host.winner_count);
  ck_assert_msg(dev.n_winners == host.n_winners, "%s: kept %zu/%zu", what,
                dev.n_winners, host.n_winners);
  for (size_t i = 0; i < host.n_winners; i++)
    ck_assert_msg(wb[i].nonce == wa[i].nonce && wb[i].output == wa[i].output,
                  "%s: winner %zu", what, i);
  ck_assert_msg(dev.best_nonce == host.best_nonce &&
                  dev.best_output == host.best_output, "%s: best", what);
  for (uint64_t k = 0; k < nseg; k++)
    ck_assert_msg(fa[k] == fb[k], "%s: segment %llu", what,
                  (unsigned long long)k);
  if (with_outputs)
    ck_assert_msg(memcmp(out, out2, count * 8) == 0, "%s: outputs", what);
  free(out); free(out2); free(fa); free(fb); free(wa); free(wb);
}

START_TEST(test_hash_batch)
{
  wv_packset *s = to_packs();
  const wv_pack *p = wv_packset_find(s, "closed");
  wv_device *d = to_open(0, 0, "auto", 0);
  /* The known segment: [0, 2^13) at s = 13 is the pack's batch_fnv. */
  uint64_t fp = 0;
  wv_hash_batch k = {.nonce = 0, .count = 8192, .seg_log2 = 13,
                     .seg_fp = &fp};
  wave_error e = {0};
  ck_assert_int_eq(wv_ocl_hash_batch(d, p, &k, &e), 0);
  ck_assert_uint_eq(fp, p->batch_fnv);
  to_batch_case(d, p, 0, 8192, 13, 0, 0, 0);
  to_batch_case(d, p, 5, 3000, 5, 1ull << 60, 7, 1);
  to_batch_case(d, p, 1000, 70000, 13, 1ull << 62, 100, 0);
  to_batch_case(d, p, 33, 5000, 10, UINT64_MAX, 4096, 1);  /* all win */
  to_batch_case(d, p, 77, 9000, 6, UINT64_MAX, 10, 0);
  to_batch_case(d, p, (1ull << 20) - 300, 2000, 20, 1ull << 63, 50, 0);
  to_batch_case(d, p, UINT64_MAX - 999, 1000, 7, 1ull << 61, 3, 1);
  /* A batch that crosses a piece boundary (2^20 nonces on a CPU). */
  to_batch_case(d, p, (1ull << 20) - 4000, 9000, 11, 1ull << 58, 20, 0);
  wv_ocl_close(d);
  wv_packset_free(s);
}
END_TEST

Suite *to_suite(void)
{
  Suite *s = suite_create("opencl");
  TCase *r = tcase_create("reduce");
  tcase_set_timeout(r, 900);
  tcase_add_test(r, test_reduce_default);
  tcase_add_test(r, test_reduce_windows);
  tcase_add_test(r, test_reduce_local);
  tcase_add_test(r, test_reduce_examples);
  tcase_add_test(r, test_reduce_resident);
  tcase_add_test(r, test_open_errors);
  tcase_add_test(r, test_build_log);
  suite_add_tcase(s, r);
  TCase *h = tcase_create("hash");
  tcase_set_timeout(h, 900);
  tcase_add_test(h, test_hash_auto_local);
  tcase_add_test(h, test_hash_shuffle_demanded);
  tcase_add_test(h, test_hash_batch);
  suite_add_tcase(s, h);
  TCase *sh = wvs_tcase("shuffle", 900);
  tcase_add_test(sh, test_hash_shuffle_runs);
  suite_add_tcase(s, sh);
  return s;
}

int main(void)
{
  return wvs_run(to_suite(), CK_NORMAL);
}
