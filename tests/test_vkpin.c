/* test_vkpin.c - Check suite for host memory imported into a Vulkan device
 * (vk_pin.c) and reductions that bind it in place (vk_reduce.c).
 *
 * The region is what the daemon has (daemon/region.c): a memfd, filled,
 * then mapped PROT_READ and MAP_SHARED.  Its first half holds integer rows,
 * its second float rows (ordinary values, subnormals, +-0; no NaN, so that
 * float sums show the order of their additions in the low bits).  Every
 * job is reduced on two devices opened alike, one with the region imported
 * and one that cannot import (wv_vk_options.no_host_import: the copy path
 * every job took before), and both are compared bit for bit with
 * wv_reduce_reference().  d->inplace_rows tells how many rows were bound in
 * place, so each case also asserts that the path it means to test was the
 * one taken: all rows for aligned spans, all but the unaligned head for
 * integer ops, none for a mask or after unregistering.
 *
 * Small windows (WINDOW rows) make every job cross several in-place and
 * staging windows without inputs of hundreds of MiB; one case runs with
 * the device's own window sizes.  Needs a Vulkan device with
 * VK_EXT_external_memory_host (lavapipe in CI).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/reduce.h"
#include "workers/vulkan/vk.h"

#define TP_ROWS (1u << 20)            /* rows per half */
#define TP_BYTES (2u * TP_ROWS * 4u)  /* 8 MiB, a multiple of the page */
#define TP_WINDOW 4096u

/* ---- data ---------------------------------------------------------------- */

static uint64_t tvp_state;

static uint64_t tvp_next(void)
{
  uint64_t z = (tvp_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static uint32_t tvp_below(uint32_t n) { return (uint32_t)(tvp_next() % n); }

static uint32_t tvp_int_row(void)
{
  switch (tvp_below(4)) {
  case 0: return tvp_below(16);
  case 1: return 0xffffffffu - tvp_below(16);
  case 2: return 0x80000000u ^ tvp_below(1u << 8);
  default: return (uint32_t)tvp_next();
  }
}

static uint32_t tvp_float_row(void)
{
  uint32_t r = tvp_below(1000);
  if (r < 100) return tvp_below(2) ? 0x80000000u : 0;                 /* +-0 */
  if (r < 180) return (tvp_below(2) << 31) | (1 + tvp_below(0x7fffff)); /* sub */
  float f = (float)((double)(tvp_next() >> 11) / 9007199254740992.0 - 0.5);
  f *= (float)(1u << tvp_below(20));
  uint32_t b;
  memcpy(&b, &f, 4);
  return b;
}

/* The region: a memfd filled through write(), mapped read-only. */
static const uint32_t *tvp_region;
static wv_device *tvp_pin, *tvp_copy;

static const uint32_t *tvp_map_region(void)
{
  int fd = memfd_create("test_vkpin", MFD_CLOEXEC);
  ck_assert_int_ge(fd, 0);
  uint32_t *buf = malloc(TP_BYTES);
  ck_assert_ptr_nonnull(buf);
  tvp_state = 42;
  for (uint32_t i = 0; i < TP_ROWS; i++)
    buf[i] = tvp_int_row();
  for (uint32_t i = TP_ROWS; i < 2 * TP_ROWS; i++)
    buf[i] = tvp_float_row();
  ck_assert_int_eq(write(fd, buf, TP_BYTES), (ssize_t)TP_BYTES);
  free(buf);
  void *p = mmap(NULL, TP_BYTES, PROT_READ, MAP_SHARED, fd, 0);
  ck_assert_ptr_ne(p, MAP_FAILED);
  close(fd);
  return p;
}

static wv_device *tvp_open(uint32_t window, int no_import)
{
  wv_device_config cfg = {.name = "vk0", .backend = "vulkan", .index = 0};
  /* every run in place, however short (the default stages runs under
   * 64 KiB; test_default_windows checks that) */
  wv_vk_options opt = {.window_rows = window, .no_host_import = no_import,
                       .inplace_min_rows = window ? 1 : 0};
  wv_device *d = NULL;
  wave_error e = {0};
  int rc = wv_vk_open_ex(&cfg, &opt, &d, &e);
  ck_assert_msg(rc == 0, "open: %s", e.message);
  return d;
}

static void tvp_setup_window(uint32_t window)
{
  tvp_region = tvp_map_region();
  tvp_pin = tvp_open(window, 0);
  tvp_copy = tvp_open(window, 1);
  ck_assert_msg(tvp_pin->host_import, "this device cannot import host "
                "memory: %s", tvp_pin->host_import_why);
}

static void tvp_setup(void) { tvp_setup_window(TP_WINDOW); }
static void tvp_setup_default(void) { tvp_setup_window(0); }

static void tvp_teardown(void)
{
  wv_vk_host_unregister(tvp_pin, tvp_region, TP_BYTES);
  wv_vk_close(tvp_pin);
  wv_vk_close(tvp_copy);
  munmap((void *)tvp_region, TP_BYTES);
}

static void tvp_register(size_t from, size_t bytes)
{
  wave_error e = {0};
  int rc = wv_vk_host_register(tvp_pin, (const unsigned char *)tvp_region + from,
                               bytes, &e);
  ck_assert_msg(rc == 0, "host_register [%zu, +%zu): %s", from, bytes,
                e.message);
}

/* ---- checking ------------------------------------------------------------ */

static const wave_dtype tvp_dtypes[] = {WAVE_U32, WAVE_S32, WAVE_F32};
static const wave_op tvp_ops[] = {WAVE_SUM, WAVE_MIN, WAVE_MAX, WAVE_EXTENT,
                                 WAVE_AND, WAVE_OR, WAVE_XOR};

/* Rows of the dtype's half, from row `at` of it. */
static const uint32_t *tvp_rows(wave_dtype dt, uint64_t at)
{
  return tvp_region + (dt == WAVE_F32 ? TP_ROWS : 0) + at;
}

/* Reduce job on both devices and the reference; the rows bound in place on
 * the importing device. */
static uint64_t tvp_check(const wv_reduce_job *job, const char *what)
{
  wv_reduce_out want, got, copy;
  wave_error e = {0};
  ck_assert_int_eq(wv_reduce_reference(job, &want, &e), 0);
  uint64_t before = tvp_pin->inplace_rows;
  int rc = wv_vk_reduce(tvp_pin, job, &got, &e);
  ck_assert_msg(rc == 0, "%s: %s", what, e.message);
  uint64_t inplace = tvp_pin->inplace_rows - before;
  rc = wv_vk_reduce(tvp_copy, job, &copy, &e);
  ck_assert_msg(rc == 0, "%s (copy): %s", what, e.message);
  ck_assert_uint_eq(tvp_copy->inplace_rows, 0);
  for (int k = 0; k < 2; k++) {
    const wv_reduce_out *o = k ? &copy : &got;
    ck_assert_msg(o->n_values == want.n_values && o->count == want.count &&
                    o->bits[0] == want.bits[0] &&
                    (want.n_values < 2 || o->bits[1] == want.bits[1]),
                  "%s (%s) %s/%s rows %llu chunks %zu mask %d: got %08x %08x "
                  "count %llu, want %08x %08x count %llu", what,
                  k ? "copy path" : "in place", wave_dtype_name(job->dtype),
                  wave_op_name(job->op), (unsigned long long)job->rows,
                  job->n_input, job->has_mask, (unsigned)o->bits[0],
                  (unsigned)o->bits[1], (unsigned long long)o->count,
                  (unsigned)want.bits[0], (unsigned)want.bits[1],
                  (unsigned long long)want.count);
  }
  return inplace;
}

/* One chunk of n rows from row `at` of the dtype's half. */
static uint64_t tvp_one(wave_dtype dt, wave_op op, uint64_t at, uint64_t n,
                       const char *what)
{
  wv_span in = {tvp_rows(dt, at), n};
  wv_reduce_job job = {.dtype = dt, .op = op, .input = &in, .n_input = 1,
                       .rows = n};
  return tvp_check(&job, what);
}

/* Combination c (0 .. 20) of dtype x op; 0 when it is not a valid job. */
static int tvp_combo(int c, wave_dtype *dt, wave_op *op)
{
  *dt = tvp_dtypes[c / 7];
  *op = tvp_ops[c % 7];
  return wave_op_check(*dt, *op) == 0;
}

#define TP_EACH(dt, op)                                                       \
  for (int c_ = 0; c_ < 21; c_++)                                             \
    if (tvp_combo(c_, &dt, &op))

/* ---- cases --------------------------------------------------------------- */

/* Aligned spans: every row in place, every window size the job crosses. */
START_TEST(test_aligned)
{
  tvp_register(0, TP_BYTES);
  static const uint64_t sizes[] = {1, 5, 255, 256, 257, 4097, 30001,
                                   TP_ROWS};
  wave_dtype dt;
  wave_op op;
  TP_EACH(dt, op) {
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
      uint64_t n = sizes[s];
      uint64_t at = s & 1 ? TP_ROWS - n : 0;   /* also ending at the half */
      at &= ~(uint64_t)3;
      ck_assert_uint_eq(tvp_one(dt, op, at, n, "aligned"), n);
    }
  }
}
END_TEST

/* Spans starting 4, 8, 12 bytes past a 16-byte boundary: the integer ops
 * stage the head up to the boundary and bind the rest; the float sum's
 * groups are all misaligned, so its chunk is staged whole. */
START_TEST(test_unaligned)
{
  tvp_register(0, TP_BYTES);
  wave_dtype dt;
  wave_op op;
  TP_EACH(dt, op) {
    for (uint64_t skew = 1; skew < 4; skew++) {
      uint64_t n = 70001 + 1000 * skew;
      uint64_t got = tvp_one(dt, op, 4096 + skew, n, "unaligned");
      uint64_t want = dt == WAVE_F32 && op == WAVE_SUM ? 0 : n - (4 - skew);
      ck_assert_msg(got == want, "%s/%s skew %llu: %llu rows in place, "
                    "want %llu", wave_dtype_name(dt), wave_op_name(op),
                    (unsigned long long)skew, (unsigned long long)got,
                    (unsigned long long)want);
    }
  }
}
END_TEST

/* Many chunks at random places and of random sizes (some empty, some
 * tiny, some unaligned), and one chunk outside the region: in place where
 * the rules allow, staged elsewhere, in the order of the chunks. */
START_TEST(test_chunks)
{
  tvp_register(0, TP_BYTES);
  static uint32_t outside[1000];
  for (size_t i = 0; i < 1000; i++)
    outside[i] = (uint32_t)(i * 2654435761u);
  tvp_state = 7;
  wave_dtype dt;
  wave_op op;
  TP_EACH(dt, op) {
    for (int rep = 0; rep < 3; rep++) {
      wv_span in[40];
      size_t k = 0;
      uint64_t rows = 0;
      while (k < 39) {
        uint64_t len;
        switch (tvp_below(5)) {
        case 0: len = 0; break;
        case 1: len = 1 + tvp_below(3); break;
        case 2: len = 1 + tvp_below(600); break;
        default: len = 1 + tvp_below(40000); break;
        }
        /* fsum chunks on 1 KiB boundaries half the time, so that some
         * run in place */
        uint64_t at = tvp_below(TP_ROWS - (uint32_t)len);
        if (tvp_below(2))
          at &= ~(uint64_t)255;
        in[k++] = (wv_span){tvp_rows(dt, at), len};
        rows += len;
      }
      if (dt != WAVE_F32) {
        in[k++] = (wv_span){outside, 1000};
        rows += 1000;
      }
      wv_reduce_job job = {.dtype = dt, .op = op, .input = in, .n_input = k,
                           .rows = rows};
      (void)tvp_check(&job, "chunks");
    }
  }
}
END_TEST

/* Float sums of several chunks, each on a group boundary, of sizes that
 * are not multiples of 256: every chunk in place, across several in-place
 * windows, next to a chunk staged because it is misaligned. */
START_TEST(test_fsum_chunks)
{
  tvp_register(0, TP_BYTES);
  tvp_state = 11;
  for (int rep = 0; rep < 6; rep++) {
    wv_span in[8];
    uint64_t rows = 0, aligned = 0;
    for (size_t k = 0; k < 8; k++) {
      uint64_t len = 1 + tvp_below(30000);
      uint64_t at = tvp_below(TP_ROWS - 30001) & ~(uint64_t)255;
      if (k == 3)
        at += 1;   /* misaligned: staged whole */
      else
        aligned += len;
      in[k] = (wv_span){tvp_rows(WAVE_F32, at), len};
      rows += len;
    }
    wv_reduce_job job = {.dtype = WAVE_F32, .op = WAVE_SUM, .input = in,
                         .n_input = 8, .rows = rows};
    ck_assert_uint_eq(tvp_check(&job, "fsum chunks"), aligned);
  }
}
END_TEST

/* A mask is applied while copying: masked jobs take the copy path. */
START_TEST(test_mask)
{
  tvp_register(0, TP_BYTES);
  const uint64_t n = 50000;
  uint32_t *mask = malloc(n * 4);
  ck_assert_ptr_nonnull(mask);
  tvp_state = 13;
  for (uint64_t i = 0; i < n; i++)
    mask[i] = tvp_below(3) != 0;
  wave_dtype dt;
  wave_op op;
  TP_EACH(dt, op) {
    wv_span in = {tvp_rows(dt, 0), n}, mk = {mask, n};
    wv_reduce_job job = {.dtype = dt, .op = op, .input = &in, .n_input = 1,
                         .mask = &mk, .n_mask = 1, .has_mask = 1, .rows = n};
    ck_assert_uint_eq(tvp_check(&job, "mask"), 0);
  }
  free(mask);
}
END_TEST

/* Three adjacent pieces, the first boundary inside a page: the page that
 * straddles it belongs to neither import and is staged; spans crossing
 * the pieces are reduced right. */
START_TEST(test_pieces)
{
  const size_t b1 = (1u << 20) + 12345, b2 = 3u << 20;
  tvp_register(0, b1);
  tvp_register(b1, b2 - b1);
  tvp_register(b2, TP_BYTES - b2);
  ck_assert_uint_eq(tvp_pin->n_pins, 3);
  wave_dtype dt;
  wave_op op;
  TP_EACH(dt, op) {
    /* the whole half: [0, 4 MiB) or [4 MiB, 8 MiB) */
    uint64_t got = tvp_one(dt, op, 0, TP_ROWS, "pieces");
    uint64_t want = dt == WAVE_F32 ? TP_ROWS : TP_ROWS - 1024;
    ck_assert_uint_eq(got, want);
    /* a span across the first two pieces of the integer half */
    if (dt != WAVE_F32) {
      got = tvp_one(dt, op, 200000, 400000, "pieces across");
      ck_assert_uint_eq(got, 400000 - 1024);
    }
  }
  /* A float-sum chunk across the straddling page: the groups that overlap
   * it are staged, the ones before and after are in place. */
  wv_span in = {tvp_region + 200000, 400000};
  wv_reduce_job job = {.dtype = WAVE_F32, .op = WAVE_SUM, .input = &in,
                       .n_input = 1, .rows = 400000};
  /* groups 254 .. 258 of the chunk overlap the page */
  ck_assert_uint_eq(tvp_check(&job, "pieces fsum"), 400000 - 5 * 256);
}
END_TEST

/* Unregistering the whole range drops every piece; the same jobs then
 * take the copy path and give the same bits. */
START_TEST(test_unregister)
{
  tvp_register(0, TP_BYTES / 2);
  tvp_register(TP_BYTES / 2, TP_BYTES / 2);
  ck_assert_uint_eq(tvp_pin->n_pins, 2);
  wave_dtype dt;
  wave_op op;
  TP_EACH(dt, op)
    ck_assert_uint_eq(tvp_one(dt, op, 0, 100000, "before"), 100000);
  wv_vk_host_unregister(tvp_pin, tvp_region, TP_BYTES);
  ck_assert_uint_eq(tvp_pin->n_pins, 0);
  TP_EACH(dt, op)
    ck_assert_uint_eq(tvp_one(dt, op, 0, 100000, "after"), 0);
  /* and again, unregistering only part of it */
  tvp_register(0, TP_BYTES / 2);
  tvp_register(TP_BYTES / 2, TP_BYTES / 2);
  wv_vk_host_unregister(tvp_pin, tvp_region, TP_BYTES / 2);
  ck_assert_uint_eq(tvp_pin->n_pins, 1);
  ck_assert_uint_eq(tvp_one(WAVE_U32, WAVE_SUM, 0, 2 * TP_ROWS, "half"),
                    TP_ROWS);
}
END_TEST

/* Refusals are clean and change nothing: a device that cannot import,
 * an overlap, and a piece too small to hold one aligned page. */
START_TEST(test_refusals)
{
  wave_error e = {0};
  ck_assert_int_eq(wv_vk_host_register(tvp_copy, tvp_region, TP_BYTES, &e),
                   WAVE_EUNSUPPORTED);
  ck_assert_msg(strstr(e.message, "switched off") != NULL, "%s", e.message);
  ck_assert_uint_eq(tvp_copy->n_pins, 0);

  tvp_register(4096, 8192);
  e = (wave_error){0};
  ck_assert_int_eq(wv_vk_host_register(tvp_pin, tvp_region, TP_BYTES, &e),
                   WAVE_EARG);
  ck_assert_msg(strstr(e.message, "overlaps") != NULL, "%s", e.message);
  e = (wave_error){0};
  ck_assert_int_eq(wv_vk_host_register(tvp_pin, tvp_region, 0, &e), WAVE_EARG);
  ck_assert_uint_eq(tvp_pin->n_pins, 1);
  tvp_register(20000, 3000);   /* no whole page inside: nothing imported */
  ck_assert_uint_eq(tvp_pin->n_pins, 1);
  /* [4096, 12288) is in place, the rest staged */
  ck_assert_uint_eq(tvp_one(WAVE_U32, WAVE_XOR, 0, 10000, "refusals"), 2048);
}
END_TEST

/* Memory of the device's own (host_alloc, what the daemon's staging rings
 * are made of): bound in place on a device that cannot import, too (as
 * NVIDIA's Vulkan, which refuses every import), with the reference's bits;
 * host_free drops it from the pins, and close() frees what is left. */
START_TEST(test_host_alloc)
{
  const size_t bytes = 3u << 20;    /* 786,432 rows */
  const uint64_t n = bytes / 4;
  wv_device *devs[2] = {tvp_pin, tvp_copy};
  for (int k = 0; k < 2; k++) {
    wv_device *d = devs[k];
    void *p = NULL, *q = NULL;
    wave_error e = {0};
    ck_assert_msg(wv_vk_host_alloc(d, bytes, &p, &e) == 0, "%s", e.message);
    ck_assert_msg(wv_vk_host_alloc(d, bytes, &q, &e) == 0, "%s", e.message);
    ck_assert_uint_eq(d->n_pins, 2);
    /* written by another thread's memcpy in the daemon; here, by this one */
    memcpy(p, tvp_rows(WAVE_U32, 0), bytes);
    memcpy(q, tvp_rows(WAVE_F32, 0), bytes);
    wave_dtype dt;
    wave_op op;
    TP_EACH(dt, op) {
      wv_span in = {dt == WAVE_F32 ? q : p, n};
      wv_reduce_job job = {.dtype = dt, .op = op, .input = &in,
                           .n_input = 1, .rows = n};
      wv_reduce_out want, got;
      ck_assert_int_eq(wv_reduce_reference(&job, &want, &e), 0);
      uint64_t before = d->inplace_rows;
      ck_assert_msg(wv_vk_reduce(d, &job, &got, &e) == 0, "%s", e.message);
      ck_assert_uint_eq(d->inplace_rows - before, n);
      ck_assert_msg(got.bits[0] == want.bits[0] &&
                      got.bits[1] == want.bits[1] && got.count == want.count,
                    "host_alloc %s/%s: got %08x %08x, want %08x %08x",
                    wave_dtype_name(dt), wave_op_name(op),
                    (unsigned)got.bits[0], (unsigned)got.bits[1],
                    (unsigned)want.bits[0], (unsigned)want.bits[1]);
    }
    wv_vk_host_free(d, p, bytes);
    ck_assert_uint_eq(d->n_pins, 1);
    /* q is left to close() (tvp_teardown) */
    e = (wave_error){0};
    ck_assert_int_eq(wv_vk_host_alloc(d, 0, &p, &e), WAVE_EARG);
  }
  tvp_copy->inplace_rows = 0;  /* the copy device's own check in tvp_check */
}
END_TEST

/* The device's own window sizes (on lavapipe 2^22 rows, in place as
 * staged: the half is one window) and the default minimum run. */
START_TEST(test_default_windows)
{
  tvp_register(0, TP_BYTES);
  wave_dtype dt;
  wave_op op;
  TP_EACH(dt, op)
    ck_assert_uint_eq(tvp_one(dt, op, 0, TP_ROWS, "default windows"), TP_ROWS);
  /* a run under 16384 rows is staged; one of 16384 is not */
  ck_assert_uint_eq(tvp_one(WAVE_U32, WAVE_SUM, 0, 16383, "short"), 0);
  ck_assert_uint_eq(tvp_one(WAVE_U32, WAVE_SUM, 0, 16384, "short"), 16384);
  wv_span in[200];
  for (size_t k = 0; k < 200; k++)
    in[k] = (wv_span){tvp_rows(WAVE_U32, 4096 * k), 1000};
  wv_reduce_job job = {.dtype = WAVE_U32, .op = WAVE_XOR, .input = in,
                       .n_input = 200, .rows = 200000};
  ck_assert_uint_eq(tvp_check(&job, "many small chunks"), 0);
}
END_TEST

static Suite *tvp_suite(void)
{
  Suite *s = suite_create("vkpin");
  TCase *tc = tcase_create("pin");
  tcase_add_checked_fixture(tc, tvp_setup, tvp_teardown);
  tcase_add_test(tc, test_aligned);
  tcase_add_test(tc, test_unaligned);
  tcase_add_test(tc, test_chunks);
  tcase_add_test(tc, test_fsum_chunks);
  tcase_add_test(tc, test_mask);
  tcase_add_test(tc, test_pieces);
  tcase_add_test(tc, test_unregister);
  tcase_add_test(tc, test_refusals);
  tcase_add_test(tc, test_host_alloc);
  suite_add_tcase(s, tc);
  TCase *td = tcase_create("default");
  tcase_add_checked_fixture(td, tvp_setup_default, tvp_teardown);
  tcase_add_test(td, test_default_windows);
  suite_add_tcase(s, td);
  return s;
}

int main(void)
{
  SRunner *sr = srunner_create(tvp_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
