/* test_reduce64.c - the 64-bit dtypes and argmin/argmax (docs/reduction.md,
 * issue 23 part 1): the reference and the CPU backend.
 *
 * Expectations never come from the code under test:
 *  - the worked examples of docs/reduction.md, with literal bit patterns,
 *    each run on the reference and on a CPU device;
 *  - random jobs (chunks across the CPU backend's 65536-row items, masks
 *    chunked on their own boundaries, NaN/inf/-0.0, ties, wrapping sums),
 *    where the CPU device at two thread counts and the reference must both
 *    equal w_expect(), an independent formulation: selected rows gathered
 *    first, argmin/argmax as "the extreme value, then the first row that
 *    has it", the float64 sum as a recursive pairwise tree;
 *  - the merge of argmin/argmax partials by hand (index offsets);
 *  - backends without the caps bits refuse such jobs through wv_dev_reduce
 *    with WAVE_EUNSUPPORTED naming the backend and the dtype or op (the
 *    fake backend stands in for the GPU ones, which refuse the same way).
 * Rows start 4 bytes into their allocation, so 8-byte rows are not 8-byte
 * aligned (as rows off the wire need not be).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base.h"
#include "core/partial.h"
#include "core/reduce.h"
#include "workers/cpu/cpu.h"
#include "workers/fake/fake.h"
#include "workers/wvdev.h"

#define W_MAX_CHUNKS 16

static wv_device *w_cpu, *w_cpu1;  /* 3 threads, 1 thread */

typedef struct wjob {
  unsigned char *alloc, *data;
  uint32_t *malloc_, *mask;
  size_t rows;
  unsigned size;
  wv_span in[W_MAX_CHUNKS], mk[W_MAX_CHUNKS];
  wv_reduce_job job;
} wjob;

static void w_init(wjob *w, wave_dtype d, wave_op op, const size_t *in,
                   size_t n_in, const size_t *mk, size_t n_mk, int has_mask)
{
  memset(w, 0, sizeof *w);
  ck_assert(n_in <= W_MAX_CHUNKS && n_mk <= W_MAX_CHUNKS);
  w->size = wv_dtype_size(d);
  for (size_t i = 0; i < n_in; i++)
    w->rows += in[i];
  w->alloc = calloc(w->rows + 2, 8);
  w->malloc_ = calloc(w->rows + 2, 4);
  ck_assert(w->alloc != NULL && w->malloc_ != NULL);
  w->data = w->alloc + 4;
  w->mask = w->malloc_ + 1;
  size_t off = 0;
  for (size_t i = 0; i < n_in; i++) {
    w->in[i] = (wv_span){in[i] ? w->data + w->size * off : NULL, in[i]};
    off += in[i];
  }
  off = 0;
  for (size_t i = 0; has_mask && i < n_mk; i++) {
    w->mk[i] = (wv_span){mk[i] ? w->mask + off : NULL, mk[i]};
    off += mk[i];
  }
  w->job = (wv_reduce_job){.dtype = d, .op = op, .input = w->in,
                           .n_input = n_in, .mask = w->mk,
                           .n_mask = has_mask ? n_mk : 0,
                           .has_mask = has_mask, .rows = w->rows};
}

static void w_free(wjob *w)
{
  free(w->alloc);
  free(w->malloc_);
}

static void w_set(wjob *w, size_t i, uint64_t x)
{
  if (w->size == 4) {
    uint32_t v = (uint32_t)x;
    memcpy(w->data + 4 * i, &v, 4);
  } else {
    memcpy(w->data + 8 * i, &x, 8);
  }
}

static uint64_t w_get(const wjob *w, size_t i)
{
  if (w->size == 4) {
    uint32_t v;
    memcpy(&v, w->data + 4 * i, 4);
    return v;
  }
  uint64_t x;
  memcpy(&x, w->data + 8 * i, 8);
  return x;
}

/* One chunk of n rows; mask NULL: no mask. */
static void w_rows(wjob *w, wave_dtype d, wave_op op, const uint64_t *rows,
                   size_t n, const uint32_t *mask)
{
  w_init(w, d, op, &n, 1, &n, 1, mask != NULL);
  for (size_t i = 0; i < n; i++) {
    w_set(w, i, rows[i]);
    if (mask != NULL)
      w->mask[i] = mask[i];
  }
}

static void w_same(const wv_reduce_out *got, const wv_reduce_out *want,
                   const char *who, const char *what)
{
  ck_assert_msg(got->n_values == want->n_values &&
                    got->bits[0] == want->bits[0] &&
                    got->bits[1] == want->bits[1] &&
                    got->count == want->count && got->index == want->index,
                "%s: %s: got %016llx %016llx count %llu index %lld, want "
                "%016llx %016llx count %llu index %lld", what, who,
                (unsigned long long)got->bits[0],
                (unsigned long long)got->bits[1],
                (unsigned long long)got->count, (long long)got->index,
                (unsigned long long)want->bits[0],
                (unsigned long long)want->bits[1],
                (unsigned long long)want->count, (long long)want->index);
}

/* The reference and both CPU devices must all give want. */
static void w_check(const wjob *w, const wv_reduce_out *want, const char *what)
{
  wv_reduce_out o;
  wave_error e = {0};
  ck_assert_msg(wv_reduce_reference(&w->job, &o, &e) == 0, "%s", e.message);
  w_same(&o, want, "reference", what);
  wv_device *devs[2] = {w_cpu, w_cpu1};
  for (int k = 0; k < 2; k++) {
    memset(&o, 0x5a, sizeof o);
    ck_assert_msg(wv_dev_reduce(&(wv_dev){&wv_cpu_backend, devs[k]}, &w->job, &o, &e)
                      == 0, "%s", e.message);
    w_same(&o, want, k ? "cpu (1 thread)" : "cpu (3 threads)", what);
  }
}

static void w_want(const wjob *w, uint64_t b0, uint64_t b1, uint64_t count,
                   int64_t index, const char *what)
{
  wv_reduce_out want = {.bits = {b0, b1}, .count = count, .index = index,
                        .n_values = wave_op_values(w->job.op)};
  w_check(w, &want, what);
}

/* A one-chunk job of rows, checked against one literal answer. */
static void w_case(wave_dtype d, wave_op op, const uint64_t *rows, size_t n,
                   const uint32_t *mask, uint64_t b0, uint64_t b1,
                   uint64_t count, int64_t index, const char *what)
{
  wjob w;
  w_rows(&w, d, op, rows, n, mask);
  char buf[160];
  snprintf(buf, sizeof buf, "%s %s: %s", wave_dtype_name(d), wave_op_name(op),
           what);
  w_want(&w, b0, b1, count, index, buf);
  w_free(&w);
}

static void w_open(void)
{
  wv_device_config c3 = {.name = "cpu-w3", .backend = "cpu", .threads = 3};
  wv_device_config c1 = {.name = "cpu-w1", .backend = "cpu", .threads = 1};
  wave_error e;
  ck_assert_int_eq(wv_cpu_backend.open(&c3, &w_cpu, &e), 0);
  ck_assert_int_eq(wv_cpu_backend.open(&c1, &w_cpu1, &e), 0);
}

static void w_close(void)
{
  wv_cpu_backend.close(w_cpu);
  wv_cpu_backend.close(w_cpu1);
  w_cpu = w_cpu1 = NULL;
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* ---- docs/reduction.md, worked examples --------------------------------- */

START_TEST(int64_by_hand)
{
  /* "64-bit integers": the 32-bit example at 64 bits. */
  static const uint64_t r[] = {0xffffffffffffffffu, 2, 0x8000000000000000u};
  for (int d = WAVE_U64; d <= WAVE_S64; d++) {
    w_case(d, WAVE_SUM, r, 3, NULL, 0x8000000000000001u, 0, 3, 0, "wraps");
    w_case(d, WAVE_AND, r, 3, NULL, 0, 0, 3, 0, "and");
    w_case(d, WAVE_OR, r, 3, NULL, 0xffffffffffffffffu, 0, 3, 0, "or");
    w_case(d, WAVE_XOR, r, 3, NULL, 0x7ffffffffffffffdu, 0, 3, 0, "xor");
  }
  w_case(WAVE_U64, WAVE_MIN, r, 3, NULL, 2, 0, 3, 0, "unsigned");
  w_case(WAVE_U64, WAVE_MAX, r, 3, NULL, 0xffffffffffffffffu, 0, 3, 0, "");
  w_case(WAVE_U64, WAVE_EXTENT, r, 3, NULL, 2, 0xffffffffffffffffu, 3, 0, "");
  w_case(WAVE_S64, WAVE_MIN, r, 3, NULL, 0x8000000000000000u, 0, 3, 0, "");
  w_case(WAVE_S64, WAVE_MAX, r, 3, NULL, 2, 0, 3, 0, "signed");
  w_case(WAVE_S64, WAVE_EXTENT, r, 3, NULL, 0x8000000000000000u, 2, 3, 0, "");
  /* the 64-bit sum does not wrap at 32 bits */
  static const uint64_t s[] = {0xffffffffu, 1};
  w_case(WAVE_U64, WAVE_SUM, s, 2, NULL, 0x100000000u, 0, 2, 0, "no 2^32 wrap");
  /* an and over rows all masked out is 0 (empty), not all ones */
  static const uint32_t none[] = {0, 0, 0};
  w_case(WAVE_U64, WAVE_AND, r, 3, none, 0, 0, 0, 0, "all masked");
}
END_TEST

#define F64_ONE 0x3ff0000000000000u
#define F64_2M53 0x3ca0000000000000u  /* 2^-53 */
#define F64_NZ 0x8000000000000000u

START_TEST(f64_sum_by_hand)
{
  /* "The float64 tree": fold 128 makes v[1] = 2^-52, the last fold
   * 1 + 2^-52; left to right would round 1 + 2^-53 to 1 twice. */
  wjob w;
  size_t n = 256;
  w_init(&w, WAVE_F64, WAVE_SUM, &n, 1, NULL, 0, 0);
  for (size_t i = 0; i < 256; i++)
    w_set(&w, i, F64_NZ);
  w_set(&w, 0, F64_ONE);
  w_set(&w, 1, F64_2M53);
  w_set(&w, 129, F64_2M53);
  w_want(&w, 0x3ff0000000000001u, 0, 256, 0, "tree order");
  w_free(&w);

  static const uint64_t three[] = {F64_ONE, F64_2M53, F64_2M53};
  w_case(WAVE_F64, WAVE_SUM, three, 3, NULL, F64_ONE, 0, 3, 0, "one chunk");
  size_t ch[] = {1, 0, 2};
  w_init(&w, WAVE_F64, WAVE_SUM, ch, 3, NULL, 0, 0);
  for (size_t i = 0; i < 3; i++)
    w_set(&w, i, three[i]);
  w_want(&w, 0x3ff0000000000001u, 0, 3, 0, "chunks [1] [] [2^-53 2^-53]");
  w_free(&w);

  /* "float64 specials" */
  static const uint64_t infs[] = {0x7ff0000000000000u, 0xfff0000000000000u};
  w_case(WAVE_F64, WAVE_SUM, infs, 2, NULL, 0x7ff8000000000000u, 0, 2, 0,
         "+inf + -inf");
  static const uint64_t snan[] = {0x7ff0000000000001u};
  w_case(WAVE_F64, WAVE_SUM, snan, 1, NULL, 0x7ff8000000000000u, 0, 1, 0,
         "signalling NaN");
  static const uint64_t sub[] = {1, 1, 1};
  w_case(WAVE_F64, WAVE_SUM, sub, 3, NULL, 3, 0, 3, 0, "subnormals");
  static const uint64_t big[] = {0x7fefffffffffffffu, 0x7fefffffffffffffu};
  w_case(WAVE_F64, WAVE_SUM, big, 2, NULL, 0x7ff0000000000000u, 0, 2, 0,
         "overflow");
  static const uint64_t mix[] = {0x7ff8000000000000u, F64_NZ,
                                 0x7ff0000000000000u, 0x4000000000000000u};
  static const uint32_t sel1[] = {0, 7, 0, 0};
  w_case(WAVE_F64, WAVE_SUM, mix, 4, sel1, F64_NZ, 0, 1, 0,
         "masked rows are -0.0");
  static const uint32_t none[] = {0, 0, 0, 0};
  w_case(WAVE_F64, WAVE_SUM, mix, 4, none, 0, 0, 0, 0, "all masked: +0.0");
}
END_TEST

START_TEST(f64_min_max_by_hand)
{
  static const uint64_t z1[] = {F64_NZ, 0}, z2[] = {0, F64_NZ};
  w_case(WAVE_F64, WAVE_EXTENT, z1, 2, NULL, F64_NZ, 0, 2, 0, "-0 < +0");
  w_case(WAVE_F64, WAVE_EXTENT, z2, 2, NULL, F64_NZ, 0, 2, 0, "+0 > -0");
  /* NaN, 5, +inf, -inf, -3, -NaN: [-3, 5], count 6 */
  static const uint64_t r[] = {0x7ff8000000000000u, 0x4014000000000000u,
                               0x7ff0000000000000u, 0xfff0000000000000u,
                               0xc008000000000000u, 0xfff8000000000000u};
  w_case(WAVE_F64, WAVE_EXTENT, r, 6, NULL, 0xc008000000000000u,
         0x4014000000000000u, 6, 0, "ignored rows count");
  w_case(WAVE_F64, WAVE_MIN, r, 6, NULL, 0xc008000000000000u, 0, 6, 0, "");
  w_case(WAVE_F64, WAVE_MAX, r, 6, NULL, 0x4014000000000000u, 0, 6, 0, "");
  static const uint64_t nf[] = {0x7ff8000000000000u, 0xfff0000000000000u};
  w_case(WAVE_F64, WAVE_MIN, nf, 2, NULL, 0, 0, 2, 0, "no finite row");
  ck_assert_uint_eq(wv_f64_key(F64_NZ), 0x7fffffffffffffffu);
  ck_assert_uint_eq(wv_f64_key(0), 0x8000000000000000u);
  ck_assert_uint_eq(wv_f64_unkey(wv_f64_key(0xc008000000000000u)),
                    0xc008000000000000u);
}
END_TEST

START_TEST(argminmax_by_hand)
{
  static const uint64_t a[] = {5, 1, 7, 1, 7};
  w_case(WAVE_U32, WAVE_ARGMIN, a, 5, NULL, 1, 0, 5, 1, "first of ties");
  w_case(WAVE_U32, WAVE_ARGMAX, a, 5, NULL, 7, 0, 5, 2, "first of ties");
  w_case(WAVE_U64, WAVE_ARGMAX, a, 5, NULL, 7, 0, 5, 2, "first of ties");
  static const uint64_t b[] = {0xffffffffu, 3};
  w_case(WAVE_S32, WAVE_ARGMIN, b, 2, NULL, 0xffffffffu, 0, 2, 0, "signed");
  w_case(WAVE_U32, WAVE_ARGMIN, b, 2, NULL, 3, 0, 2, 1, "unsigned");
  static const uint64_t c[] = {0x8000000000000000u, 0x7fffffffffffffffu};
  w_case(WAVE_S64, WAVE_ARGMIN, c, 2, NULL, c[0], 0, 2, 0, "");
  w_case(WAVE_S64, WAVE_ARGMAX, c, 2, NULL, c[1], 0, 2, 1, "");
  w_case(WAVE_U64, WAVE_ARGMIN, c, 2, NULL, c[1], 0, 2, 1, "");
  w_case(WAVE_U64, WAVE_ARGMAX, c, 2, NULL, c[0], 0, 2, 0, "");
  /* NaN, +0.0, -0.0, +inf, -0.0, 2.0: -0.0 at 2, 2.0 at 5, count 4 */
  static const uint64_t f[] = {0x7fc00000u, 0, 0x80000000u, 0x7f800000u,
                               0x80000000u, 0x40000000u};
  w_case(WAVE_F32, WAVE_ARGMIN, f, 6, NULL, 0x80000000u, 0, 4, 2, "-0 < +0");
  w_case(WAVE_F32, WAVE_ARGMAX, f, 6, NULL, 0x40000000u, 0, 4, 5, "");
  static const uint64_t g[] = {0x7ff8000000000000u, 0, F64_NZ,
                               0x7ff0000000000000u, F64_NZ,
                               0x4000000000000000u};
  w_case(WAVE_F64, WAVE_ARGMIN, g, 6, NULL, F64_NZ, 0, 4, 2, "-0 < +0");
  w_case(WAVE_F64, WAVE_ARGMAX, g, 6, NULL, 0x4000000000000000u, 0, 4, 5, "");
  /* mask: 4, 2, 8, 2 with 1, 0, 1, 1: 2 at index 3, count 3 */
  static const uint64_t m[] = {4, 2, 8, 2};
  static const uint32_t mk[] = {1, 0, 1, 1};
  w_case(WAVE_U32, WAVE_ARGMIN, m, 4, mk, 2, 0, 3, 3, "mask");
  /* no answer: index -1, value 0, count 0 */
  static const uint64_t nf[] = {0x7fc00000u, 0xff800000u};
  w_case(WAVE_F32, WAVE_ARGMIN, nf, 2, NULL, 0, 0, 0, -1, "no finite row");
  w_case(WAVE_F32, WAVE_ARGMAX, nf, 2, NULL, 0, 0, 0, -1, "no finite row");
  static const uint32_t none[] = {0, 0, 0, 0};
  w_case(WAVE_S64, WAVE_ARGMAX, m, 4, none, 0, 0, 0, -1, "all masked");
  /* chunks [3, 9] [] [9, 1]: the index runs on over chunks */
  size_t ch[] = {2, 0, 2};
  static const uint64_t v[] = {3, 9, 9, 1};
  for (int op = WAVE_ARGMIN; op <= WAVE_ARGMAX; op++) {
    wjob w;
    w_init(&w, WAVE_U32, op, ch, 3, NULL, 0, 0);
    for (size_t i = 0; i < 4; i++)
      w_set(&w, i, v[i]);
    if (op == WAVE_ARGMAX)
      w_want(&w, 9, 0, 4, 1, "argmax over chunks");
    else
      w_want(&w, 1, 0, 4, 3, "argmin over chunks");
    w_free(&w);
  }
  /* empty job */
  wjob w;
  w_init(&w, WAVE_F64, WAVE_ARGMIN, NULL, 0, NULL, 0, 0);
  w_want(&w, 0, 0, 0, -1, "no rows");
  w_free(&w);
}
END_TEST

START_TEST(arg_partials_by_hand)
{
  /* docs "Partials": [7, 3] (offset 0) and [3, 3] (offset 2) merge to 3
   * at index 1, in either order; a count-0 piece is skipped. */
  wv_partial p[3] = {
    {.chunk = 0, .bits = {3}, .count = 2, .index = 1, .offset = 0},
    {.chunk = 0, .bits = {3}, .count = 2, .index = 0, .offset = 2},
    {.chunk = 1, .bits = {0}, .count = 0, .index = -1, .offset = 4},
  };
  wv_reduce_out o;
  wave_error e;
  ck_assert_int_eq(wv_partial_merge(WAVE_U32, WAVE_ARGMIN, p, 3, &o, NULL,
                                    &e), 0);
  ck_assert(o.bits[0] == 3 && o.index == 1 && o.count == 4);
  wv_partial q[3] = {p[2], p[1], p[0]};
  ck_assert_int_eq(wv_partial_merge(WAVE_U32, WAVE_ARGMIN, q, 3, &o, NULL,
                                    &e), 0);
  ck_assert(o.bits[0] == 3 && o.index == 1 && o.count == 4);
  ck_assert_int_eq(wv_partial_merge(WAVE_F64, WAVE_ARGMAX, p + 2, 1, &o,
                                    NULL, &e), 0);
  ck_assert(o.bits[0] == 0 && o.index == -1 && o.count == 0);
  /* float64 sum: an all-masked piece is -0.0, so [x masked] [-0.0] is
   * -0.0, as float32's */
  wv_partial s[2] = {{.chunk = 0, .bits = {0}, .count = 0},
                     {.chunk = 1, .bits = {F64_NZ}, .count = 1}};
  ck_assert_int_eq(wv_partial_merge(WAVE_F64, WAVE_SUM, s, 2, &o, NULL, &e),
                   0);
  ck_assert_uint_eq(o.bits[0], F64_NZ);
  /* 64-bit sums wrap at 2^64, 32-bit ones at 2^32 */
  wv_partial t[2] = {{.chunk = 0, .bits = {0xffffffffu}, .count = 1},
                     {.chunk = 1, .bits = {1}, .count = 1}};
  ck_assert_int_eq(wv_partial_merge(WAVE_U64, WAVE_SUM, t, 2, &o, NULL, &e),
                   0);
  ck_assert_uint_eq(o.bits[0], 0x100000000u);
  ck_assert_int_eq(wv_partial_merge(WAVE_U32, WAVE_SUM, t, 2, &o, NULL, &e),
                   0);
  ck_assert_uint_eq(o.bits[0], 0);
}
END_TEST

/* ---- the refusal of the other backends ---------------------------------- */

START_TEST(other_backends_refuse)
{
  wv_device_config cfg = {.name = "fake-w", .backend = "fake", .threads = 1};
  wv_device *fk;
  wave_error e = {0};
  ck_assert_int_eq(wv_fake_backend.open(&cfg, &fk, &e), 0);
  static const uint64_t r[] = {1, 2, 3};
  static const struct { wave_dtype d; wave_op op; const char *name; } t[] = {
    {WAVE_U64, WAVE_SUM, "uint64"}, {WAVE_S64, WAVE_MIN, "sint64"},
    {WAVE_F64, WAVE_SUM, "float64"}, {WAVE_U32, WAVE_ARGMIN, "argmin"},
    {WAVE_F32, WAVE_ARGMAX, "argmax"}, {WAVE_F64, WAVE_ARGMAX, "float64"},
  };
  for (size_t i = 0; i < N(t); i++) {
    wjob w;
    w_rows(&w, t[i].d, t[i].op, r, 3, NULL);
    wv_reduce_out o;
    memset(&e, 0, sizeof e);
    ck_assert_int_eq(wv_dev_reduce(&(wv_dev){&wv_fake_backend, fk}, &w.job, &o, &e),
                     WAVE_EUNSUPPORTED);
    ck_assert_msg(strstr(e.message, "fake") != NULL &&
                  strstr(e.message, t[i].name) != NULL, "%s", e.message);
    /* the CPU runs it through the same wrapper */
    ck_assert_int_eq(wv_dev_reduce(&(wv_dev){&wv_cpu_backend, w_cpu}, &w.job, &o, &e),
                     0);
    w_free(&w);
  }
  /* a 32-bit job of the first seven ops still runs there */
  wjob w;
  w_rows(&w, WAVE_U32, WAVE_SUM, r, 3, NULL);
  wv_reduce_out o;
  ck_assert_int_eq(wv_dev_reduce(&(wv_dev){&wv_fake_backend, fk}, &w.job, &o, &e), 0);
  ck_assert_uint_eq(o.bits[0], 6);
  w_free(&w);
  wv_caps c;
  wv_dev_caps(&(wv_dev){&wv_cpu_backend, w_cpu}, &c);
  ck_assert(c.dtypes64 && c.argminmax);
  wv_fake_backend.close(fk);
}
END_TEST

/* ---- random jobs against the independent expectation -------------------- */

static uint64_t w_rng(uint64_t *s)  /* splitmix64 */
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static double w_d(uint64_t b) { double f; memcpy(&f, &b, 8); return f; }
static uint64_t w_b(double f) { uint64_t b; memcpy(&b, &f, 8); return b; }

static int w_isfloat(wave_dtype d) { return d == WAVE_F32 || d == WAVE_F64; }

/* The value of row bits x as a double (exact for float32) or, for
 * integers, as ordered 128-bit-safe pair: ints compare by w_icmp. */
static int w_finite(wave_dtype d, uint64_t x)
{
  if (d == WAVE_F32) {
    float f;
    uint32_t b = (uint32_t)x;
    memcpy(&f, &b, 4);
    return isfinite(f);
  }
  return d == WAVE_F64 ? isfinite(w_d(x)) : 1;
}

static double w_num(wave_dtype d, uint64_t x)
{
  if (d == WAVE_F32) {
    float f;
    uint32_t b = (uint32_t)x;
    memcpy(&f, &b, 4);
    return f;
  }
  return w_d(x);
}

/* -1, 0, 1: the order of docs/reduction.md (floats: finite ones). */
static int w_cmp(wave_dtype d, uint64_t x, uint64_t y)
{
  if (w_isfloat(d)) {
    double a = w_num(d, x), b = w_num(d, y);
    if (a != b)
      return a < b ? -1 : 1;
    return (signbit(a) != 0) == (signbit(b) != 0) ? 0 : signbit(a) ? -1 : 1;
  }
  if (d == WAVE_S32 || d == WAVE_S64) {
    int64_t a = d == WAVE_S32 ? (int64_t)(int32_t)(uint32_t)x : (int64_t)x;
    int64_t b = d == WAVE_S32 ? (int64_t)(int32_t)(uint32_t)y : (int64_t)y;
    return a < b ? -1 : a > b;
  }
  return x < y ? -1 : x > y;
}

/* G by the pairwise formulation (even-indexed fold + odd-indexed fold). */
static double w_pair(const double *v, size_t o, size_t s, size_t n)
{
  if (n == 1)
    return v[o];
  return w_pair(v, o, 2 * s, n / 2) + w_pair(v, o + s, 2 * s, n / 2);
}

static double w_tree(double *x, size_t n)
{
  while (n > 1) {
    size_t m = (n + 255) / 256;
    for (size_t g = 0; g < m; g++) {
      double v[256];
      for (size_t j = 0; j < 256; j++)
        v[j] = 256 * g + j < n ? x[256 * g + j] : -0.0;
      x[g] = w_pair(v, 0, 1, 256);
    }
    n = m;
  }
  return x[0];
}

static void w_expect(const wjob *w, wv_reduce_out *o)
{
  const wv_reduce_job *j = &w->job;
  wave_dtype d = j->dtype;
  memset(o, 0, sizeof *o);
  o->n_values = wave_op_values(j->op);
  int arg = j->op == WAVE_ARGMIN || j->op == WAVE_ARGMAX;
  if (arg)
    o->index = -1;
  if (d == WAVE_F64 && j->op == WAVE_SUM) {
    double *cv = malloc((j->n_input + 1) * sizeof *cv), s = 0;
    double *leaf = malloc((w->rows + 1) * sizeof *leaf);
    ck_assert(cv != NULL && leaf != NULL);
    size_t nc = 0, row = 0;
    for (size_t c = 0; c < j->n_input; c++) {
      if (j->input[c].rows == 0)
        continue;
      for (size_t k = 0; k < j->input[c].rows; k++, row++) {
        int sel = !j->has_mask || w->mask[row] != 0;
        o->count += (uint64_t)sel;
        leaf[k] = sel ? w_d(w_get(w, row)) : -0.0;
      }
      cv[nc++] = w_tree(leaf, j->input[c].rows);
    }
    if (nc > 0)
      s = w_tree(cv, nc);
    o->bits[0] = o->count == 0 ? 0 : isnan(s) ? WV_F64_CANON_NAN : w_b(s);
    free(cv);
    free(leaf);
    return;
  }
  /* gather the selected rows (for orders: the finite ones) */
  uint64_t *v = malloc((w->rows + 1) * sizeof *v), n = 0, sel = 0;
  size_t *at = malloc((w->rows + 1) * sizeof *at);
  ck_assert(v != NULL && at != NULL);
  for (size_t i = 0; i < w->rows; i++) {
    if (j->has_mask && w->mask[i] == 0)
      continue;
    sel++;
    uint64_t x = w_get(w, i);
    if ((j->op != WAVE_SUM && j->op < WAVE_AND) || arg)
      if (!w_finite(d, x))
        continue;
    v[n] = x;
    at[n++] = i;
  }
  o->count = arg ? n : sel;
  uint64_t wrap = w->size == 4 ? 0xffffffffu : UINT64_MAX;
  if (n > 0) {
    uint64_t lo = v[0], hi = v[0], acc = v[0];
    for (uint64_t i = 1; i < n; i++) {
      if (w_cmp(d, v[i], lo) < 0) lo = v[i];
      if (w_cmp(d, v[i], hi) > 0) hi = v[i];
      switch (j->op) {
      case WAVE_SUM: acc = (acc + v[i]) & wrap; break;
      case WAVE_AND: acc &= v[i]; break;
      case WAVE_OR: acc |= v[i]; break;
      case WAVE_XOR: acc ^= v[i]; break;
      default: break;
      }
    }
    switch (j->op) {
    case WAVE_MIN: o->bits[0] = lo; break;
    case WAVE_MAX: o->bits[0] = hi; break;
    case WAVE_EXTENT: o->bits[0] = lo; o->bits[1] = hi; break;
    case WAVE_ARGMIN:
    case WAVE_ARGMAX: {
      uint64_t best = j->op == WAVE_ARGMIN ? lo : hi;
      for (uint64_t i = 0; o->index < 0; i++)  /* its first occurrence */
        if (v[i] == best)
          o->index = (int64_t)at[i];
      o->bits[0] = best;
      break;
    }
    default: o->bits[0] = acc; break;
    }
  }
  free(v);
  free(at);
}

static uint64_t w_value(wave_dtype d, uint64_t *s, int kind)
{
  static const uint64_t f64sp[] = {
    0x7ff8000000000000u, 0xfff8000000000000u, 0x7ff4000000000001u,
    0x7ff0000000000000u, 0xfff0000000000000u, F64_NZ, 0, 1,
    0x8000000000000001u, 0x000fffffffffffffu, 0x7fefffffffffffffu,
    0xffefffffffffffffu};
  static const uint64_t f32sp[] = {
    0x7fc00000u, 0xffc00000u, 0x7f800000u, 0xff800000u, 0x80000000u, 0,
    1, 0x7f7fffffu, 0xff7fffffu};
  static const uint64_t isp[] = {
    0, 1, 0x7fffffffffffffffu, 0x8000000000000000u, 0xffffffffffffffffu,
    0xffffffffu, 0x80000000u, 0x7fffffffu};
  uint64_t r = w_rng(s), q = r >> 8;
  if (kind == 2)  /* ties: few distinct values */
    return w_isfloat(d) ? (d == WAVE_F64 ? w_b((double)(q % 5) - 2.0)
                                         : (uint64_t)(q % 5) << 28)
                        : q % 4;
  int special = kind == 1 ? r % 4 == 0 : kind == 3 ? r % 500 != 0 : 0;
  if (d == WAVE_F64) {
    if (special)
      return f64sp[q % (kind == 3 ? 5 : N(f64sp))];
    /* magnitudes 2^-8 .. 2^8: every re-association shows */
    return (r & 0x800fffffffffffffu) | ((uint64_t)(1015 + q % 16) << 52);
  }
  if (d == WAVE_F32)
    return special ? f32sp[q % (kind == 3 ? 4 : N(f32sp))]
                   : ((r & 0x807fffffu) | ((119u + q % 16u) << 23));
  uint64_t x = special ? isp[q % N(isp)] : r;
  return wv_dtype_size(d) == 4 ? x & 0xffffffffu : x;
}

static const uint64_t w_edges[] = {0, 1, 255, 256, 257, 65535, 65536, 65537,
                                   131073};

/* A random job of d/op: up to 6 chunks (edge sizes across the CPU's
 * 65536-row items, or random), data kind 0..3, mask 0 none, 1 random
 * (chunked on its own boundaries), 2 all masked out. */
static void w_random(wjob *w, wave_dtype d, wave_op op, int kind, int maskv,
                     uint64_t seed)
{
  uint64_t s = seed;
  size_t nc = 1 + (size_t)(w_rng(&s) % 6), in[6], mk[5], total = 0;
  for (size_t c = 0; c < nc; c++) {
    uint64_t r = w_rng(&s);
    in[c] = r % 2 ? (size_t)w_edges[(r >> 8) % N(w_edges)]
                  : (size_t)((r >> 8) % 3000);
    if (total + in[c] > 200000)
      in[c] = 0;
    total += in[c];
  }
  size_t left = total;
  for (size_t m = 0; m < 4; m++) {
    mk[m] = (size_t)(w_rng(&s) % (left + 1));
    left -= mk[m];
  }
  mk[4] = left;
  w_init(w, d, op, in, nc, mk, 5, maskv != 0);
  for (size_t i = 0; i < total; i++) {
    w_set(w, i, w_value(d, &s, kind));
    w->mask[i] = maskv == 2 ? 0 : (w_rng(&s) % 3 == 0 ? 0 : 0x80000000u >> (i % 32));
  }
}

START_TEST(random_jobs)
{
  unsigned long jobs = 0;
  uint64_t seq = 0;
  for (int d = WAVE_U32; d <= WAVE_F64; d++)
    for (int op = WAVE_SUM; op <= WAVE_ARGMAX; op++) {
      if (wave_op_check((wave_dtype)d, (wave_op)op) != 0 ||
          !wv_reduce_is_wide((wave_dtype)d, (wave_op)op))
        continue;
      for (int v = 0; v < 12; v++, seq++) {  /* data kind x mask kind */
        wjob w;
        uint64_t seed = 0x64b17u + seq * 104729u;
        w_random(&w, (wave_dtype)d, (wave_op)op, v % 4, v / 4, seed);
        wv_reduce_out want;
        w_expect(&w, &want);
        char what[160];
        snprintf(what, sizeof what, "%s %s, %zu chunks, %zu rows, kind %d, "
                 "mask %d (seed %llx)", wave_dtype_name((wave_dtype)d),
                 wave_op_name((wave_op)op), w.job.n_input, w.rows, v % 4,
                 v / 4, (unsigned long long)seed);
        w_check(&w, &want, what);
        w_free(&w);
        jobs++;
      }
    }
  ck_assert_uint_eq(jobs, 12u * (3 * 2 + 2 * 9 + 6));  /* pairs: 30 */
}
END_TEST

START_TEST(arg_across_items)
{
  /* the best value twice, in different 65536-row items of one chunk and
   * in the next chunk: the first occurrence wins at every thread count */
  for (int d = WAVE_U32; d <= WAVE_F64; d++) {
    size_t ch[] = {140000, 5000};
    wjob w;
    w_init(&w, (wave_dtype)d, WAVE_ARGMAX, ch, 2, NULL, 0, 0);
    uint64_t one = d == WAVE_F32 ? 0x3f800000u : d == WAVE_F64 ? F64_ONE : 1;
    uint64_t two = d == WAVE_F32 ? 0x40000000u
                 : d == WAVE_F64 ? 0x4000000000000000u : 2;
    for (size_t i = 0; i < w.rows; i++)
      w_set(&w, i, one);
    w_set(&w, 131072 + 5, two);
    w_set(&w, 65536 * 2 + 9, two);
    w_set(&w, 140000 + 7, two);
    w_want(&w, two, 0, w.rows, 131072 + 5, wave_dtype_name((wave_dtype)d));
    w.job.op = WAVE_ARGMIN;
    w_want(&w, one, 0, w.rows, 0, wave_dtype_name((wave_dtype)d));
    w_free(&w);
  }
}
END_TEST

int main(void)
{
  Suite *s = suite_create("reduce64");
  TCase *tc = tcase_create("wide");
  tcase_add_checked_fixture(tc, w_open, w_close);
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, int64_by_hand);
  tcase_add_test(tc, f64_sum_by_hand);
  tcase_add_test(tc, f64_min_max_by_hand);
  tcase_add_test(tc, argminmax_by_hand);
  tcase_add_test(tc, arg_partials_by_hand);
  tcase_add_test(tc, other_backends_refuse);
  tcase_add_test(tc, random_jobs);
  tcase_add_test(tc, arg_across_items);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
