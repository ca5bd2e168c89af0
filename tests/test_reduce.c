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
 * The helpers and t_expect() are in reduce_harness.c; the random jobs and
 * the CPU device's own cases in test_reduce_random.c; this file holds the
 * hand-worked cases and the suite.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base.h"
#include "reduce_harness.h"
#include "workers/cpu/cpu.h"
#include "core/reduce.h"

/* test_reduce_random.c */
TCase *reduce_random_tcase(void);
TCase *reduce_cpu_tcase(void);

/* ---- hand-worked cases -------------------------------------------------- */

static void trd_dev_open(void)
{
  wv_device_config cfg = {.name = "cpu-hand", .backend = "cpu", .threads = 2};
  wave_error e;
  ck_assert_int_eq(wv_cpu_backend.open(&cfg, &t_dev, &e), 0);
}

static void trd_dev_close(void)
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
                  "%s: got %08x", cases[i].why, (unsigned)o.bits[0]);
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

/* Masked min, max and extent where the only selecting words are
 * 0x80000000 and 0x100 (nothing in the low 16 bits of the first, nothing
 * in the low byte of either): rows 1 and 3 are selected, the unselected
 * rows hold what would win.  s32: min(-5, 7) = -5, max 7; f32: min(-2.5,
 * 1.0) = -2.5, max 1.0.  t_ref and t_want hold the CPU device (t_dev) to
 * the same bits. */
START_TEST(masks_high_bits_select)
{
  tjob t;
  t_one(&t, WAVE_S32, WAVE_MIN, 4, 1);
  t.data[0] = 0x80000000u; t.mask[0] = 0;            /* INT32_MIN, out */
  t.data[1] = 0xfffffffbu; t.mask[1] = 0x80000000u;  /* -5, in */
  t.data[2] = 0x7fffffffu; t.mask[2] = 0;            /* INT32_MAX, out */
  t.data[3] = 0x00000007u; t.mask[3] = 0x100u;       /* 7, in */
  t_want(&t, 0xfffffffbu, 2);
  t.job.op = WAVE_MAX;
  t_want(&t, 7, 2);
  t.job.op = WAVE_EXTENT;
  wv_reduce_out o = t_ref(&t);
  ck_assert_uint_eq(o.n_values, 2);
  ck_assert_uint_eq(o.bits[0], 0xfffffffbu);
  ck_assert_uint_eq(o.bits[1], 7);
  ck_assert_uint_eq(o.count, 2);
  t_free(&t);
  t_one(&t, WAVE_F32, WAVE_EXTENT, 4, 1);
  t.data[0] = 0xc2c80000u; t.mask[0] = 0;            /* -100.0, out */
  t.data[1] = 0xc0200000u; t.mask[1] = 0x80000000u;  /* -2.5, in */
  t.data[2] = 0x42c80000u; t.mask[2] = 0;            /* 100.0, out */
  t.data[3] = 0x3f800000u; t.mask[3] = 0x80000000u;  /* 1.0, in */
  o = t_ref(&t);
  ck_assert_uint_eq(o.bits[0], 0xc0200000u);
  ck_assert_uint_eq(o.bits[1], 0x3f800000u);
  ck_assert_uint_eq(o.count, 2);
  t.job.op = WAVE_MIN;
  t_want(&t, 0xc0200000u, 2);
  t.job.op = WAVE_MAX;
  t_want(&t, 0x3f800000u, 2);
  t_free(&t);
}
END_TEST

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
  t.job.op = (wave_op)11;
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


int main(void)
{
  Suite *s = suite_create("reduce");
  TCase *tc = tcase_create("semantics");
  tcase_add_checked_fixture(tc, trd_dev_open, trd_dev_close);
  tcase_add_test(tc, f32_sum_tree_order);
  tcase_add_test(tc, f32_sum_chunks_are_reduced_on_their_own);
  tcase_add_test(tc, f32_sum_special_values);
  tcase_add_test(tc, f32_min_max_order);
  tcase_add_test(tc, int_ops_by_hand);
  tcase_add_test(tc, masks_high_bits_select);
  tcase_add_test(tc, empty_inputs_give_zero);
  tcase_add_test(tc, bad_jobs_rejected);
  tcase_add_test(tc, helpers);
  suite_add_tcase(s, tc);
  suite_add_tcase(s, reduce_random_tcase());
  suite_add_tcase(s, reduce_cpu_tcase());
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
