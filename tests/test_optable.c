/* test_optable.c - the op table (core/optable.c) against docs/reduction.md.
 *
 * Every row is pinned against a literal list transcribed here from the
 * page (not generated from the table): a changed row fails.  The columns
 * that follow from the dtype and op alone (row bytes, values, the float
 * flags, the identities) are checked against the rules as the page words
 * them.  Then the order keys: for every keyed row, key order is the
 * page's order (unsigned, two's complement, floats as numbers with -0.0
 * below +0.0) over edge values and a fixed pseudo-random stream, and
 * unkey undoes key; the fill of unselected rows leaves every answer as it
 * was; wave_op_check and wv_reduce_some_finite read the table.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/optable.h"
#include "core/reduce.h"
#include "core/xsum.h"
#include "wave/error.h"
#include "wave/types.h"

#define ISUM WV_PATH_ISUM
#define BITS WV_PATH_BITS
#define KEYS WV_PATH_KEYS
#define ARG WV_PATH_ARG
#define FSUM WV_PATH_FSUM
#define XSUM WV_PATH_XSUM
#define RAW WV_KEY_RAW
#define SGN WV_KEY_SIGNED
#define FLT WV_KEY_FLOAT
#define LO WV_HALF_LO
#define HI WV_HALF_HI
#define NZ32 0x80000000u
#define NZ64 0x8000000000000000u
#define NAN32 0x7fc00000u
#define NAN64 0x7ff8000000000000u
#define ONES32 0xffffffffu
#define ONES64 UINT64_MAX

/* dtype, op, rc, path, key, halves, fill bits, dup, ok, says_finite,
 * count_finite */
static const struct tq_want {
  wave_dtype dt;
  wave_op op;
  int rc;
  wv_op_path path;
  wv_key_kind key;
  unsigned halves;
  uint64_t fill;
  int dup, ok, says, cfin;
} tq_want[] = {
  {WAVE_U32, WAVE_SUM, 0, ISUM, RAW, 0, 0, 0, 1, 0, 0},
  {WAVE_U32, WAVE_MIN, 0, KEYS, RAW, LO, 0, 1, 1, 0, 0},
  {WAVE_U32, WAVE_MAX, 0, KEYS, RAW, HI, 0, 1, 1, 0, 0},
  {WAVE_U32, WAVE_EXTENT, 0, KEYS, RAW, LO | HI, 0, 1, 1, 0, 0},
  {WAVE_U32, WAVE_AND, 0, BITS, RAW, 0, ONES32, 0, 1, 0, 0},
  {WAVE_U32, WAVE_OR, 0, BITS, RAW, 0, 0, 0, 1, 0, 0},
  {WAVE_U32, WAVE_XOR, 0, BITS, RAW, 0, 0, 0, 1, 0, 0},
  {WAVE_U32, WAVE_ARGMIN, 0, ARG, RAW, LO, 0, 0, 0, 0, 0},
  {WAVE_U32, WAVE_ARGMAX, 0, ARG, RAW, HI, 0, 0, 0, 0, 0},
  {WAVE_U32, WAVE_FSUM, WAVE_EOPDTYPE, 0, 0, 0, 0, 0, 0, 0, 0},
  {WAVE_S32, WAVE_SUM, 0, ISUM, RAW, 0, 0, 0, 1, 0, 0},
  {WAVE_S32, WAVE_MIN, 0, KEYS, SGN, LO, 0, 1, 1, 0, 0},
  {WAVE_S32, WAVE_MAX, 0, KEYS, SGN, HI, 0, 1, 1, 0, 0},
  {WAVE_S32, WAVE_EXTENT, 0, KEYS, SGN, LO | HI, 0, 1, 1, 0, 0},
  {WAVE_S32, WAVE_AND, 0, BITS, RAW, 0, ONES32, 0, 1, 0, 0},
  {WAVE_S32, WAVE_OR, 0, BITS, RAW, 0, 0, 0, 1, 0, 0},
  {WAVE_S32, WAVE_XOR, 0, BITS, RAW, 0, 0, 0, 1, 0, 0},
  {WAVE_S32, WAVE_ARGMIN, 0, ARG, SGN, LO, 0, 0, 0, 0, 0},
  {WAVE_S32, WAVE_ARGMAX, 0, ARG, SGN, HI, 0, 0, 0, 0, 0},
  {WAVE_S32, WAVE_FSUM, WAVE_EOPDTYPE, 0, 0, 0, 0, 0, 0, 0, 0},
  {WAVE_F32, WAVE_SUM, 0, FSUM, RAW, 0, NZ32, 0, 1, 0, 0},
  {WAVE_F32, WAVE_MIN, 0, KEYS, FLT, LO, 0, 1, 1, 1, 0},
  {WAVE_F32, WAVE_MAX, 0, KEYS, FLT, HI, 0, 1, 1, 1, 0},
  {WAVE_F32, WAVE_EXTENT, 0, KEYS, FLT, LO | HI, 0, 1, 1, 1, 0},
  {WAVE_F32, WAVE_AND, WAVE_EOPDTYPE, 0, 0, 0, 0, 0, 0, 0, 0},
  {WAVE_F32, WAVE_OR, WAVE_EOPDTYPE, 0, 0, 0, 0, 0, 0, 0, 0},
  {WAVE_F32, WAVE_XOR, WAVE_EOPDTYPE, 0, 0, 0, 0, 0, 0, 0, 0},
  {WAVE_F32, WAVE_ARGMIN, 0, ARG, FLT, LO, NAN32, 0, 1, 0, 1},
  {WAVE_F32, WAVE_ARGMAX, 0, ARG, FLT, HI, NAN32, 0, 1, 0, 1},
  {WAVE_F32, WAVE_FSUM, 0, XSUM, RAW, 0, NZ32, 0, 1, 0, 0},
  {WAVE_U64, WAVE_SUM, 0, ISUM, RAW, 0, 0, 0, 1, 0, 0},
  {WAVE_U64, WAVE_MIN, 0, KEYS, RAW, LO, 0, 1, 1, 0, 0},
  {WAVE_U64, WAVE_MAX, 0, KEYS, RAW, HI, 0, 1, 1, 0, 0},
  {WAVE_U64, WAVE_EXTENT, 0, KEYS, RAW, LO | HI, 0, 1, 1, 0, 0},
  {WAVE_U64, WAVE_AND, 0, BITS, RAW, 0, ONES64, 0, 1, 0, 0},
  {WAVE_U64, WAVE_OR, 0, BITS, RAW, 0, 0, 0, 1, 0, 0},
  {WAVE_U64, WAVE_XOR, 0, BITS, RAW, 0, 0, 0, 1, 0, 0},
  {WAVE_U64, WAVE_ARGMIN, 0, ARG, RAW, LO, 0, 0, 0, 0, 0},
  {WAVE_U64, WAVE_ARGMAX, 0, ARG, RAW, HI, 0, 0, 0, 0, 0},
  {WAVE_U64, WAVE_FSUM, WAVE_EOPDTYPE, 0, 0, 0, 0, 0, 0, 0, 0},
  {WAVE_S64, WAVE_SUM, 0, ISUM, RAW, 0, 0, 0, 1, 0, 0},
  {WAVE_S64, WAVE_MIN, 0, KEYS, SGN, LO, 0, 1, 1, 0, 0},
  {WAVE_S64, WAVE_MAX, 0, KEYS, SGN, HI, 0, 1, 1, 0, 0},
  {WAVE_S64, WAVE_EXTENT, 0, KEYS, SGN, LO | HI, 0, 1, 1, 0, 0},
  {WAVE_S64, WAVE_AND, 0, BITS, RAW, 0, ONES64, 0, 1, 0, 0},
  {WAVE_S64, WAVE_OR, 0, BITS, RAW, 0, 0, 0, 1, 0, 0},
  {WAVE_S64, WAVE_XOR, 0, BITS, RAW, 0, 0, 0, 1, 0, 0},
  {WAVE_S64, WAVE_ARGMIN, 0, ARG, SGN, LO, 0, 0, 0, 0, 0},
  {WAVE_S64, WAVE_ARGMAX, 0, ARG, SGN, HI, 0, 0, 0, 0, 0},
  {WAVE_S64, WAVE_FSUM, WAVE_EOPDTYPE, 0, 0, 0, 0, 0, 0, 0, 0},
  {WAVE_F64, WAVE_SUM, 0, FSUM, RAW, 0, NZ64, 0, 1, 0, 0},
  {WAVE_F64, WAVE_MIN, 0, KEYS, FLT, LO, 0, 1, 1, 1, 0},
  {WAVE_F64, WAVE_MAX, 0, KEYS, FLT, HI, 0, 1, 1, 1, 0},
  {WAVE_F64, WAVE_EXTENT, 0, KEYS, FLT, LO | HI, 0, 1, 1, 1, 0},
  {WAVE_F64, WAVE_AND, WAVE_EOPDTYPE, 0, 0, 0, 0, 0, 0, 0, 0},
  {WAVE_F64, WAVE_OR, WAVE_EOPDTYPE, 0, 0, 0, 0, 0, 0, 0, 0},
  {WAVE_F64, WAVE_XOR, WAVE_EOPDTYPE, 0, 0, 0, 0, 0, 0, 0, 0},
  {WAVE_F64, WAVE_ARGMIN, 0, ARG, FLT, LO, NAN64, 0, 1, 0, 1},
  {WAVE_F64, WAVE_ARGMAX, 0, ARG, FLT, HI, NAN64, 0, 1, 0, 1},
  {WAVE_F64, WAVE_FSUM, 0, XSUM, RAW, 0, NZ64, 0, 1, 0, 0},
};
#define TQ_N (sizeof tq_want / sizeof tq_want[0])

START_TEST(rows_are_the_pages)
{
  ck_assert_uint_eq(TQ_N, 6 * 10);  /* every dtype and op, once */
  for (size_t i = 0; i < TQ_N; i++) {
    const struct tq_want *w = &tq_want[i];
    const wv_op_plan *p = wv_op_plan_of(w->dt, w->op);
    const char *what = wave_op_name(w->op), *dt = wave_dtype_name(w->dt);
    ck_assert_ptr_nonnull(p);
    ck_assert_msg(p->rc == w->rc && p->dtype == w->dt && p->op == w->op,
                  "%s %s: rc %d", dt, what, p->rc);
    if (w->rc != 0)
      continue;
    ck_assert_msg(p->path == w->path && p->key == w->key &&
                      p->halves == w->halves,
                  "%s %s: path %d key %d halves %u", dt, what, (int)p->path,
                  (int)p->key, p->halves);
    ck_assert_msg(p->fill.bits == w->fill && p->fill.dup == w->dup &&
                      p->fill.ok == w->ok,
                  "%s %s: fill %#llx dup %d ok %d", dt, what,
                  (unsigned long long)p->fill.bits, p->fill.dup, p->fill.ok);
    ck_assert_msg(p->says_finite == w->says && p->count_finite == w->cfin,
                  "%s %s: says_finite %d count_finite %d", dt, what,
                  p->says_finite, p->count_finite);
    /* the columns that follow from the dtype and op */
    int w8 = w->dt == WAVE_U64 || w->dt == WAVE_S64 || w->dt == WAVE_F64;
    int fl = w->dt == WAVE_F32 || w->dt == WAVE_F64;
    ck_assert_uint_eq(p->row_bytes, w8 ? 8 : 4);
    ck_assert_uint_eq(p->n_values, w->op == WAVE_EXTENT ? 2 : 1);
    ck_assert_int_eq(p->is_float, fl);
    ck_assert_int_eq(p->keyed, w->path == KEYS || w->path == ARG);
    ck_assert_int_eq(p->finite_only, fl && p->keyed);
    ck_assert_uint_eq(p->ones, w8 ? ONES64 : ONES32);
    ck_assert_uint_eq(p->acc_init, w->op == WAVE_AND ? p->ones : 0);
    ck_assert_int_eq(p->acc, w->op == WAVE_SUM ? WV_ACC_ADD
                             : w->op == WAVE_AND ? WV_ACC_AND
                             : w->op == WAVE_OR ? WV_ACC_OR
                             : w->op == WAVE_XOR ? WV_ACC_XOR : WV_ACC_NONE);
  }
}
END_TEST

START_TEST(undefined_rows_say_why)
{
  static const int dts[] = {0, -1, 7, 1000};
  for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++) {
    ck_assert_int_eq(wv_op_plan_of((wave_dtype)dts[i], WAVE_SUM)->rc,
                     WAVE_EDTYPE);
    ck_assert_int_eq(wv_op_plan_of((wave_dtype)dts[i], (wave_op)99)->rc,
                     WAVE_EDTYPE);  /* the dtype is checked first */
  }
  static const int ops[] = {0, -1, 11, 1000};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    ck_assert_int_eq(wv_op_plan_of(WAVE_U32, (wave_op)ops[i])->rc, WAVE_EOP);
  /* wave_op_check (the public OPDTYPE rule) reads the table */
  for (int d = -1; d <= 8; d++)
    for (int o = -1; o <= 12; o++)
      ck_assert_int_eq(wave_op_check((wave_dtype)d, (wave_op)o),
                       wv_op_plan_of((wave_dtype)d, (wave_op)o)->rc);
}
END_TEST

/* x < y in the page's order for dtype dt (floats: finite). */
static int tq_less(wave_dtype dt, uint64_t x, uint64_t y)
{
  switch (dt) {
  case WAVE_U32: return (uint32_t)x < (uint32_t)y;
  case WAVE_S32: return (int32_t)(uint32_t)x < (int32_t)(uint32_t)y;
  case WAVE_U64: return x < y;
  case WAVE_S64: return (int64_t)x < (int64_t)y;
  case WAVE_F32: {
    float a, b;
    uint32_t xa = (uint32_t)x, yb = (uint32_t)y;
    memcpy(&a, &xa, sizeof a);
    memcpy(&b, &yb, sizeof b);
    return a < b || (a == b && signbit(a) && !signbit(b));
  }
  default: {
    double a, b;
    memcpy(&a, &x, sizeof a);
    memcpy(&b, &y, sizeof b);
    return a < b || (a == b && signbit(a) && !signbit(b));
  }
  }
}

static uint64_t tq_next(uint64_t *s)
{
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static int tq_finite(wave_dtype dt, uint64_t x)
{
  if (dt == WAVE_F32)
    return (x & 0x7f800000u) != 0x7f800000u;
  if (dt == WAVE_F64)
    return (x & 0x7ff0000000000000u) != 0x7ff0000000000000u;
  return 1;
}

START_TEST(keys_order_as_the_page_says)
{
  static const uint64_t edge[] = {
    0, 1, 0x7fffffffu, 0x80000000u, 0x80000001u, 0xffffffffu,
    0x3f800000u, 0xbf800000u, 0x00000001u, 0x80800000u, 0x7f7fffffu,
    0xff7fffffu, 0x7f800000u, 0x7fc00000u, NZ64, NZ64 + 1,
    0x7fffffffffffffffu, UINT64_MAX, 0x3ff0000000000000u,
    0xbff0000000000000u, 0x7fefffffffffffffu, 0xffefffffffffffffu,
    0x7ff0000000000000u, 0x7ff8000000000000u};
  const size_t ne = sizeof edge / sizeof edge[0];
  for (size_t i = 0; i < TQ_N; i++) {
    const wv_op_plan *p = wv_op_plan_of(tq_want[i].dt, tq_want[i].op);
    if (p->rc != 0 || !p->keyed)
      continue;
    uint64_t s = 0x9e3779b97f4a7c15u + i;
    for (size_t n = 0; n < 20000; n++) {
      uint64_t x = n < ne * ne ? edge[n / ne] : tq_next(&s);
      uint64_t y = n < ne * ne ? edge[n % ne] : tq_next(&s);
      x &= p->ones;
      y &= p->ones;
      uint64_t k = wv_key_of(p->key, p->row_bytes, x);
      if (wv_row_ok(p, x) != (tq_finite(p->dtype, x) ? UINT64_MAX : 0) ||
          wv_unkey_of(p->key, p->row_bytes, k) != x || k > p->ones)
        ck_abort_msg("%s: row %#llx: ok, key or unkey wrong",
                     wave_dtype_name(p->dtype), (unsigned long long)x);
      if (!tq_finite(p->dtype, x) || !tq_finite(p->dtype, y))
        continue;
      int kl = k < wv_key_of(p->key, p->row_bytes, y);
      if (kl != tq_less(p->dtype, x, y))
        ck_abort_msg("%s: %#llx < %#llx", wave_dtype_name(p->dtype),
                     (unsigned long long)x, (unsigned long long)y);
    }
  }
  /* the float keys the page writes out (docs/reduction.md, worked
   * examples): -0.0 just below +0.0 */
  ck_assert_uint_eq(wv_f32_key(NZ32), 0x7fffffffu);
  ck_assert_uint_eq(wv_f32_key(0), 0x80000000u);
  ck_assert_uint_eq(wv_f64_key(NZ64), 0x7fffffffffffffffu);
  ck_assert_uint_eq(wv_f64_key(0), NZ64);
  /* the combines: sum wraps at the row's width */
  ck_assert_uint_eq(wv_acc_combine(WV_ACC_ADD, ONES32, ONES32, 2), 1);
  ck_assert_uint_eq(wv_acc_combine(WV_ACC_ADD, ONES64, ONES32, 2),
                    0x100000001u);
  ck_assert_uint_eq(wv_acc_combine(WV_ACC_ADD, ONES64, ONES64, 2), 1);
  ck_assert_uint_eq(wv_acc_combine(WV_ACC_AND, ONES32, 0xc, 0xa), 0x8);
  ck_assert_uint_eq(wv_acc_combine(WV_ACC_OR, ONES32, 0xc, 0xa), 0xe);
  ck_assert_uint_eq(wv_acc_combine(WV_ACC_XOR, ONES32, 0xc, 0xa), 0x6);
}
END_TEST

/* Whether the fill f in place of an unselected row next to the row x
 * leaves the answer as it was. */
static int tq_fill_keeps(const wv_op_plan *p, uint64_t x, uint64_t f)
{
  switch (p->path) {
  case WV_PATH_ISUM:
  case WV_PATH_BITS:  /* the identity of the combine, at the row's width */
    return f == p->acc_init && wv_acc_combine(p->acc, p->ones, x, f) == x &&
           wv_acc_combine(p->acc, p->ones, f, x) == x;
  case WV_PATH_FSUM:
    if (p->row_bytes == 4) {
      float a, b, c;
      uint32_t xa = (uint32_t)x, fb = (uint32_t)f, cb;
      memcpy(&a, &xa, 4);
      memcpy(&b, &fb, 4);
      c = a + b;
      memcpy(&cb, &c, 4);
      return isnan(a) || cb == xa;
    } else {
      double a, b, c;
      uint64_t cb;
      memcpy(&a, &x, 8);
      memcpy(&b, &f, 8);
      c = a + b;
      memcpy(&cb, &c, 8);
      return isnan(a) || cb == x;
    }
  case WV_PATH_XSUM: {  /* the exact sum of x, and of x and f, rounded */
    wv_xsum a, b;
    wv_xsum_init(&a, p->dtype);
    wv_xsum_add_row(&a, x);
    b = a;
    wv_xsum_add_row(&b, f);
    return wv_xsum_round(&a, 1) == wv_xsum_round(&b, 1) &&
           wv_xsum_round(&b, 1) == wv_xsum_round(&b, 2);
  }
  default:  /* float argmin/argmax: a row never considered */
    return wv_row_ok(p, f) == 0;
  }
}

/* The fill of an unselected row changes no answer: the identity of the
 * accumulator, the float sum's (and fsum's) -0.0, and a float argmin/argmax row
 * that is never considered. */
START_TEST(fills_change_nothing)
{
  uint64_t s = 12345;
  for (size_t i = 0; i < TQ_N; i++) {
    const wv_op_plan *p = wv_op_plan_of(tq_want[i].dt, tq_want[i].op);
    if (p->rc != 0 || !p->fill.ok || p->fill.dup)
      continue;
    for (int n = 0; n < 1000; n++) {
      uint64_t x = tq_next(&s) & p->ones, f = p->fill.bits;
      if (!tq_fill_keeps(p, x, f))
        ck_abort_msg("%s %s: fill %#llx changes %#llx",
                     wave_dtype_name(p->dtype), wave_op_name(p->op),
                     (unsigned long long)f, (unsigned long long)x);
    }
  }
}
END_TEST

START_TEST(some_finite_reads_the_table)
{
  uint32_t rows[2] = {0x7f800000u, 0};  /* +inf, +0.0 */
  wv_span in = {rows, 2};
  wv_reduce_job j = {.dtype = WAVE_F32, .op = WAVE_MIN, .input = &in,
                     .n_input = 1, .rows = 2};
  wv_reduce_out o = {.n_values = 1, .count = 2};
  ck_assert_int_eq(wv_reduce_some_finite(&j, &o), 1);   /* the +0.0 row */
  in.rows = 1;
  j.rows = 1;
  o.count = 1;
  ck_assert_int_eq(wv_reduce_some_finite(&j, &o), 0);   /* +inf only */
  o.bits[0] = 0x3f800000u;
  ck_assert_int_eq(wv_reduce_some_finite(&j, &o), 1);   /* a value */
  o.count = 0;
  ck_assert_int_eq(wv_reduce_some_finite(&j, &o), 0);   /* none selected */
  j.op = WAVE_SUM;  /* said only for float min/max/extent */
  o.count = 1;
  ck_assert_int_eq(wv_reduce_some_finite(&j, &o), 0);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("optable");
  TCase *tc = tcase_create("table");
  tcase_add_test(tc, rows_are_the_pages);
  tcase_add_test(tc, undefined_rows_say_why);
  tcase_add_test(tc, keys_order_as_the_page_says);
  tcase_add_test(tc, fills_change_nothing);
  tcase_add_test(tc, some_finite_reads_the_table);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? 0 : 1;
}
