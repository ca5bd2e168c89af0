/* test_reduce_random.c - the reduction suite's random jobs (the reference
 * and the CPU backend against t_expect, reduce_harness.c) and the CPU
 * device's own cases (its pool, open/caps/close); their TCases join the
 * "reduce" suite of test_reduce.c.
 */
#include <check.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base.h"
#include "reduce_harness.h"
#include "workers/cpu/cpu.h"
#include "core/reduce.h"

TCase *reduce_random_tcase(void);
TCase *reduce_cpu_tcase(void);

/* ---- random jobs: reference and CPU backend vs t_expect ---------------- */

typedef enum { TD_RANDOM, TD_SPECIAL } trr_data;

static void trr_fill(tjob *t, uint64_t *s, trr_data kind, unsigned mask_pct)
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
      /* selected rows' words of every shape: odd, even, one high bit, any
       * (the rule is "nonzero selects", every bit of the word) */
      static const uint32_t shapes[] = {1u, 0x100u, 0x80000000u};
      uint64_t r = t_rng(s);
      uint32_t k = (uint32_t)(r >> 8) % 4;
      t->mask[i] = r % 100 >= mask_pct ? 0
                   : k < 3 ? shapes[k] : (uint32_t)(r >> 32);
    }
  }
}

/* Random chunk sizes summing to rows: n pieces, some of them empty. */
static size_t trr_split(uint64_t *s, size_t rows, size_t *sizes, size_t max)
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

static wv_device *trr_open_cpu(unsigned threads)
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
static void trr_check(const tjob *t, wv_device *dev, const char *what)
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
  wv_device *dev = trr_open_cpu(2);
  uint64_t s = 7;
  for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++)
    for (size_t p = 0; p < T_N_PAIRS; p++)
      for (int masked = 0; masked < 2; masked++) {
        tjob t;
        t_one(&t, t_pairs[p].d, t_pairs[p].op, sizes[z], masked);
        trr_fill(&t, &s, TD_RANDOM, 60);
        char what[64];
        snprintf(what, sizeof what, "%zu rows%s", sizes[z],
                 masked ? " masked" : "");
        trr_check(&t, dev, what);
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
  wv_device *dev = trr_open_cpu(3);
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
        trr_fill(&t, &s, (trr_data)kind, 50);
        char what[64];
        snprintf(what, sizeof what, "shape %zu kind %d", k, kind);
        trr_check(&t, dev, what);
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
    wv_device *dev = trr_open_cpu(threads[th]);
    for (int r = 0; r < 40; r++) {
      size_t p = (size_t)(t_rng(&s) % T_N_PAIRS);
      size_t rows = (size_t)(t_rng(&s) % (r % 4 == 0 ? 300000 : 3000));
      size_t in[16], mk[16];
      size_t n_in = trr_split(&s, rows, in, 16);
      size_t n_mk = trr_split(&s, rows, mk, 16);
      int masked = (int)(t_rng(&s) % 2);
      tjob t;
      t_init(&t, t_pairs[p].d, t_pairs[p].op, in, n_in, mk, n_mk, masked);
      trr_fill(&t, &s, (trr_data)(t_rng(&s) % 2), (unsigned)(t_rng(&s) % 101));
      char what[96];
      snprintf(what, sizeof what, "threads %u job %d: %zu rows, %zu/%zu chunks",
               threads[th], r, rows, n_in, n_mk);
      trr_check(&t, dev, what);
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
  wv_device *dev = trr_open_cpu(2);
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
    trr_fill(&t, &s, TD_RANDOM, 80);
    char what[64];
    snprintf(what, sizeof what, "%zu rows in %zu chunks", rows, k);
    trr_check(&t, dev, what);
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
  wv_device *dev = trr_open_cpu(2);
  for (size_t p = 0; p < T_N_PAIRS; p++) {
    tjob t;
    t_init(&t, t_pairs[p].d, t_pairs[p].op, in, N, mk, 2, (int)(p % 2));
    trr_fill(&t, &s, TD_RANDOM, 70);
    trr_check(&t, dev, "3000 tiny chunks");
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
  wv_device *dev = trr_open_cpu(0);
  uint64_t s = 99;
  static const struct { wave_dtype d; wave_op op; } few[] = {
    {WAVE_F32, WAVE_SUM}, {WAVE_F32, WAVE_EXTENT}, {WAVE_S32, WAVE_EXTENT},
    {WAVE_U32, WAVE_SUM}};
  for (size_t p = 0; p < 4; p++)
    for (int masked = 0; masked < 2; masked++) {
      tjob t;
      t_init(&t, few[p].d, few[p].op, in, 2, mk, 2, masked);
      trr_fill(&t, &s, TD_RANDOM, 50);
      trr_check(&t, dev, "2^20 + 3 rows");
      t_free(&t);
    }
  wv_cpu_backend.close(dev);
}
END_TEST


/* ---- the CPU device itself ------------------------------------------------ */

typedef struct { atomic_uint *hits; unsigned threads; atomic_uint bad; } trr_pool;

static void trr_pool_fn(void *arg, size_t task, unsigned worker)
{
  trr_pool *p = arg;
  atomic_fetch_add(&p->hits[task], 1);
  if (worker >= p->threads)
    atomic_fetch_add(&p->bad, 1);
}

START_TEST(cpu_pool_runs_every_task_once)
{
  static const unsigned threads[] = {1, 2, 4};
  for (size_t th = 0; th < 3; th++) {
    wv_device *dev = trr_open_cpu(threads[th]);
    ck_assert_uint_eq(dev->threads, threads[th]);
    for (size_t n = 0; n < 300; n += 1 + n / 2) {
      for (int rep = 0; rep < 20; rep++) {
        trr_pool p = {.threads = threads[th]};
        p.hits = calloc(n + 1, sizeof *p.hits);
        atomic_init(&p.bad, 0);
        wv_cpu_pool_run(dev, n, trr_pool_fn, &p);
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

static int trr_freed;
static void trr_hash_free(void *p) { trr_freed++; free(p); }

START_TEST(cpu_open_caps_close)
{
  wv_device *dev = trr_open_cpu(0);
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
  dev->hash_state_free = trr_hash_free;
  trr_freed = 0;
  wv_cpu_backend.close(dev);
  ck_assert_int_eq(trr_freed, 1);
}
END_TEST

TCase *reduce_random_tcase(void)
{
  TCase *tc = tcase_create("random");
  tcase_add_test(tc, sizes_around_group_boundaries);
  tcase_add_test(tc, differently_chunked_masks);
  tcase_add_test(tc, cpu_random_jobs);
  tcase_add_test(tc, f32_sum_many_chunks);
  tcase_add_test(tc, cpu_many_tiny_chunks);
  tcase_add_test(tc, cpu_large_multi_item);
  return tc;
}

TCase *reduce_cpu_tcase(void)
{
  TCase *tc = tcase_create("cpu");
  tcase_add_test(tc, cpu_pool_runs_every_task_once);
  tcase_add_test(tc, cpu_open_caps_close);
  return tc;
}
