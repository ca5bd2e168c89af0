/* test_xsum.c - the exact float sum's accumulator (core/xsum.c) against
 * the rules of docs/reduction.md "fsum".
 *
 * Each case names its rows and the bits the page's rules give, worked out
 * by hand (the edge rules, cancellation, ties, subnormals, overflow); the
 * float32 random cases check against a double sum, which is exact for
 * their rows (24-bit fractions within 2^-8..2^9, 2^12 rows: 53 bits) and so rounds once, as fsum must.  Then the carries and borrows
 * through the limbs, the merge in any order, the reference and the
 * partial merge of core/, and the wire form.  The exact rational reference
 * over every exponent is tests/fsum_ref.py.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/partial.h"
#include "core/reduce.h"
#include "core/xsum.h"
#include "wave/error.h"

static uint64_t txs_f32(float f)
{
  uint32_t b;
  memcpy(&b, &f, 4);
  return b;
}

static uint64_t txs_f64(double f)
{
  uint64_t b;
  memcpy(&b, &f, 8);
  return b;
}

/* The rounded sum of the n rows r of dtype dt, count n. */
static uint64_t txs_sum(wave_dtype dt, const uint64_t *r, size_t n)
{
  wv_xsum x;
  wv_xsum_init(&x, dt);
  for (size_t i = 0; i < n; i++)
    wv_xsum_add_row(&x, r[i]);
  return wv_xsum_round(&x, n);
}

#define TX_EQ(dt, want, ...)                                               \
  do {                                                                     \
    const uint64_t r_[] = {__VA_ARGS__};                                   \
    uint64_t got_ = txs_sum(dt, r_, sizeof r_ / sizeof r_[0]);              \
    ck_assert_msg(got_ == (uint64_t)(want), "%s: got %#llx want %#llx",    \
                  #__VA_ARGS__, (unsigned long long)got_,                  \
                  (unsigned long long)(want));                             \
  } while (0)

#define P32 0x7f800000u
#define N32 0xff800000u
#define NAN32 0x7fc00000u
#define MAX32 0x7f7fffffu
#define NZ32 0x80000000u
#define P64 0x7ff0000000000000u
#define N64 0xfff0000000000000u
#define NAN64 0x7ff8000000000000u
#define MAX64 0x7fefffffffffffffu
#define NZ64 0x8000000000000000u

START_TEST(nan_and_infinities)
{
  /* a NaN (any payload, either sign) gives the canonical NaN */
  TX_EQ(WAVE_F32, NAN32, txs_f32(1), 0xffc00001u, txs_f32(2));
  TX_EQ(WAVE_F32, NAN32, 0x7f800001u, P32);
  TX_EQ(WAVE_F64, NAN64, 0xfff0000000000001u, txs_f64(1));
  /* both infinities: NaN; one: it, whatever the finite rows */
  TX_EQ(WAVE_F32, NAN32, P32, N32);
  TX_EQ(WAVE_F64, NAN64, N64, txs_f64(3), P64);
  TX_EQ(WAVE_F32, P32, P32, txs_f32(-1e38f), MAX32 | NZ32, P32);
  TX_EQ(WAVE_F32, N32, txs_f32(1), N32);
  TX_EQ(WAVE_F64, P64, P64, MAX64 | NZ64);
  TX_EQ(WAVE_F64, N64, N64, MAX64, MAX64);
}
END_TEST

START_TEST(overflow_to_infinity)
{
  TX_EQ(WAVE_F32, P32, MAX32, MAX32);
  TX_EQ(WAVE_F32, N32, MAX32 | NZ32, MAX32 | NZ32);
  TX_EQ(WAVE_F64, P64, MAX64, MAX64);
  TX_EQ(WAVE_F64, N64, MAX64 | NZ64, MAX64 | NZ64);
  /* back under: exact */
  TX_EQ(WAVE_F64, MAX64, MAX64, MAX64, MAX64 | NZ64);
  /* the largest finite plus half its ulp: a tie, its fraction is odd, so
   * up, to +inf; less than half an ulp stays */
  TX_EQ(WAVE_F32, P32, MAX32, txs_f32(0x1p103f));
  TX_EQ(WAVE_F32, MAX32, MAX32, txs_f32(0x1p102f));
  TX_EQ(WAVE_F64, P64, MAX64, txs_f64(0x1p970));
  TX_EQ(WAVE_F64, MAX64, MAX64, txs_f64(0x1p969), txs_f64(0x1p969) - 1);
  TX_EQ(WAVE_F64, N64 , MAX64 | NZ64, txs_f64(-0x1p970));
}
END_TEST

START_TEST(subnormals_are_exact)
{
  TX_EQ(WAVE_F32, 2, 1, 1);
  TX_EQ(WAVE_F32, 2, 3, 1 | NZ32);
  TX_EQ(WAVE_F32, 1 | NZ32, 3 | NZ32, 2);
  TX_EQ(WAVE_F32, 0x007fffffu, 0x00800000u, 1 | NZ32);  /* normal - tiny */
  TX_EQ(WAVE_F32, 0x00800000u, 0x007fffffu, 1);         /* into normals */
  TX_EQ(WAVE_F32, 0x00ffffffu, 0x007fffffu, 0x00800000u);
  TX_EQ(WAVE_F64, 2, 1, 1);
  TX_EQ(WAVE_F64, 0x000fffffffffffffu, 0x0010000000000000u, 1 | NZ64);
  TX_EQ(WAVE_F64, 0x0020000000000000u, 0x0010000000000000u,
        0x0010000000000000u);
  /* a big row cancelled leaves the tiny one, exactly */
  TX_EQ(WAVE_F64, 5, txs_f64(1e300), 5, txs_f64(-1e300));
  TX_EQ(WAVE_F32, 5 | NZ32, txs_f32(3e38f), 5 | NZ32, txs_f32(-3e38f));
}
END_TEST

START_TEST(signed_zeros)
{
  TX_EQ(WAVE_F32, NZ32, NZ32);
  TX_EQ(WAVE_F32, NZ32, NZ32, NZ32, NZ32);
  TX_EQ(WAVE_F32, 0, NZ32, 0);
  TX_EQ(WAVE_F32, 0, 0);
  TX_EQ(WAVE_F32, 0, txs_f32(1), txs_f32(-1));    /* an exact zero: +0.0 */
  TX_EQ(WAVE_F32, 0, 1 | NZ32, 1, NZ32);
  TX_EQ(WAVE_F64, NZ64, NZ64, NZ64);
  TX_EQ(WAVE_F64, 0, NZ64, txs_f64(2), txs_f64(-2));
  /* empty: +0.0; rows, none other than -0.0: -0.0 */
  wv_xsum x;
  for (int d = 0; d < 2; d++) {
    wv_xsum_init(&x, d ? WAVE_F64 : WAVE_F32);
    ck_assert_uint_eq(wv_xsum_round(&x, 0), 0);
    ck_assert_uint_eq(wv_xsum_round(&x, 3), d ? NZ64 : NZ32);
    wv_xsum_add_row(&x, d ? NZ64 : NZ32);
    ck_assert_uint_eq(wv_xsum_round(&x, 0), 0);  /* count 0 is empty */
    ck_assert_uint_eq(x.flags, 0);
    wv_xsum_add_row(&x, 0);
    ck_assert_uint_eq(x.flags, WV_XSUM_NOT_NEGZERO);
  }
}
END_TEST

START_TEST(heavy_cancellation)
{
  /* every order of 1e30, 1, -1e30: 1 */
  static const int perm[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                 {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  uint64_t r32[3] = {txs_f32(1e30f), txs_f32(1), txs_f32(-1e30f)};
  uint64_t r64[3] = {txs_f64(1e30), txs_f64(1), txs_f64(-1e30)};
  for (int i = 0; i < 6; i++) {
    uint64_t a[3], b[3];
    for (int k = 0; k < 3; k++) {
      a[k] = r32[perm[i][k]];
      b[k] = r64[perm[i][k]];
    }
    ck_assert_uint_eq(txs_sum(WAVE_F32, a, 3), txs_f32(1));
    ck_assert_uint_eq(txs_sum(WAVE_F64, b, 3), txs_f64(1));
  }
  /* the largest against the smallest, across every limb */
  TX_EQ(WAVE_F64, 1, MAX64, 1, MAX64 | NZ64);
  TX_EQ(WAVE_F64, 1 | NZ64, MAX64 | NZ64, 1 | NZ64, MAX64);
  TX_EQ(WAVE_F32, txs_f32(-0x1p-140f), MAX32, txs_f32(-0x1p-140f),
        MAX32 | NZ32);
}
END_TEST

START_TEST(ties_to_even)
{
  /* 1 + 2^-24: halfway between 1 (even) and 1 + 2^-23: down */
  TX_EQ(WAVE_F32, txs_f32(1), txs_f32(1), txs_f32(0x1p-24f));
  /* 1 + 2^-23 + 2^-24: halfway, 1 + 2^-23 is odd: up to 1 + 2^-22 */
  TX_EQ(WAVE_F32, txs_f32(1 + 0x1p-22f), txs_f32(1 + 0x1p-23f),
        txs_f32(0x1p-24f));
  /* the same negated */
  TX_EQ(WAVE_F32, txs_f32(-1), txs_f32(-1), txs_f32(-0x1p-24f));
  TX_EQ(WAVE_F32, txs_f32(-1 - 0x1p-22f), txs_f32(-1 - 0x1p-23f),
        txs_f32(-0x1p-24f));
  /* a sticky bit far below breaks the tie: up */
  TX_EQ(WAVE_F32, txs_f32(1 + 0x1p-23f), txs_f32(1), txs_f32(0x1p-24f), 1);
  TX_EQ(WAVE_F32, txs_f32(1), txs_f32(1), txs_f32(0x1p-24f), 1 | NZ32);
  /* float64 the same way */
  TX_EQ(WAVE_F64, txs_f64(1), txs_f64(1), txs_f64(0x1p-53));
  TX_EQ(WAVE_F64, txs_f64(1 + 0x1p-51), txs_f64(1 + 0x1p-52), txs_f64(0x1p-53));
  TX_EQ(WAVE_F64, txs_f64(1 + 0x1p-52), txs_f64(1), txs_f64(0x1p-53), 1);
  TX_EQ(WAVE_F64, txs_f64(-1 - 0x1p-51), txs_f64(-1 - 0x1p-52),
        txs_f64(-0x1p-53));
  /* a rounding carry into the next binade: 2 - 2^-24 + 2^-25 -> 2 */
  TX_EQ(WAVE_F32, txs_f32(2), txs_f32(2 - 0x1p-23f), txs_f32(0x1p-24f));
}
END_TEST

static uint64_t txs_next(uint64_t *s)
{
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* float32 rows of 2^-8..2^9 of either sign, up to 2^12 of them: every
 * partial sum is a multiple of 2^-31 under 2^22, 53 bits, so their double
 * sum is exact and (float) of it the one rounding fsum must give. */
START_TEST(float32_against_exact_double)
{
  uint64_t s = 88172645463325252u;
  static uint64_t r[4096];
  for (int t = 0; t < 200; t++) {
    size_t n = 1 + txs_next(&s) % 4096;
    double d = 0;
    for (size_t i = 0; i < n; i++) {
      uint64_t v = txs_next(&s);
      uint32_t e = 127 - 8 + (uint32_t)(v % 17);
      r[i] = ((v >> 8) & 0x80000000u) | (e << 23) | ((v >> 20) & 0x7fffffu);
      float f;
      uint32_t b = (uint32_t)r[i];
      memcpy(&f, &b, 4);
      d += f;
    }
    uint64_t got = txs_sum(WAVE_F32, r, n), want = txs_f32((float)d);
    if (d == 0)
      want = 0;
    ck_assert_msg(got == want, "case %d: %zu rows: %#llx, want %#llx", t, n,
                  (unsigned long long)got, (unsigned long long)want);
  }
}
END_TEST

/* Carries and borrows through every limb. */
START_TEST(carry_and_borrow)
{
  wv_xsum x;
  wv_xsum_init(&x, WAVE_F64);
  wv_xsum_add_i64(&x, -1, 0);           /* X = -1: every limb all ones */
  for (unsigned i = 0; i < WV_XSUM_LIMBS; i++)
    ck_assert_uint_eq(x.limb[i], UINT64_MAX);
  ck_assert_uint_eq(wv_xsum_round(&x, 1), 1 | NZ64);
  wv_xsum_add_i64(&x, 1, 0);            /* carry out of every limb */
  for (unsigned i = 0; i < WV_XSUM_LIMBS; i++)
    ck_assert_uint_eq(x.limb[i], 0);
  /* 2^63 - 1 at every offset, then the same negated */
  for (unsigned b = 0; b + 64 <= 64 * (WV_XSUM_LIMBS - 1); b += 7)
    wv_xsum_add_i64(&x, INT64_MAX, b);
  for (unsigned b = 0; b + 64 <= 64 * (WV_XSUM_LIMBS - 1); b += 7)
    wv_xsum_add_i64(&x, -INT64_MAX, b);
  for (unsigned i = 0; i < WV_XSUM_LIMBS; i++)
    ck_assert_uint_eq(x.limb[i], 0);
  /* INT64_MIN at a limb edge and one bit past it */
  wv_xsum_add_i64(&x, INT64_MIN, 64);
  wv_xsum_add_i64(&x, INT64_MIN, 65);
  ck_assert_uint_eq(x.limb[0], 0);
  ck_assert_uint_eq(x.limb[1], 0x8000000000000000u);
  ck_assert_uint_eq(x.limb[2], 0xfffffffffffffffeu);
  ck_assert_uint_eq(x.limb[3], UINT64_MAX);
  /* -(2^127 + 2^128) units: bits (2^127 + 2^128) * 2^-1074 */
  ck_assert_uint_eq(wv_xsum_round(&x, 1),
                    NZ64 | txs_f64(0x1.8p-946));
  /* bins: 3 * 2^0 + 5 * 2^40 - 2 * 2^80 */
  int64_t bins[3] = {3, 5, -2};
  wv_xsum_init(&x, WAVE_F64);
  wv_xsum_add_bins(&x, bins, 3, 40);
  ck_assert_uint_eq(x.limb[0], 3 + (5ull << 40));
  ck_assert_uint_eq(x.limb[1], (0ull - (2ull << 16)));
  ck_assert_uint_eq(x.limb[2], UINT64_MAX);
  /* 2^20 times the largest float64, then as many negated: exact */
  wv_xsum_init(&x, WAVE_F64);
  for (int i = 0; i < (1 << 20); i++)
    wv_xsum_add_row(&x, MAX64);
  ck_assert_uint_eq(wv_xsum_round(&x, 1), P64);
  for (int i = 0; i < (1 << 20) - 1; i++)
    wv_xsum_add_row(&x, MAX64 | NZ64);
  ck_assert_uint_eq(wv_xsum_round(&x, 1), MAX64);
}
END_TEST

/* Adds at the top limb and past it are modulo X's width: a row's value
 * cut into 16-bit digits, each added as a bin at its own weight (the
 * Vulkan and OpenCL hosts' way, whose top bins reach the top limb), gives
 * row by row's limbs; a value at the top limb's first bit and its negation
 * leave X as it was and nothing past it is written. */
START_TEST(bins_reach_the_top_limb)
{
  uint64_t s = 0x9e3779b97f4a7c15u;
  for (int d = 0; d < 2; d++) {
    wave_dtype dt = d ? WAVE_F64 : WAVE_F32;
    unsigned fb = d ? 52 : 23, emax = d ? 0x7ff : 0xff;
    enum { N = 3000, NB = 4 * WV_XSUM_LIMBS };
    static int64_t bins[NB];
    memset(bins, 0, sizeof bins);
    wv_xsum whole, byb;
    wv_xsum_init(&whole, dt);
    wv_xsum_init(&byb, dt);
    for (int i = 0; i < N; i++) {
      uint64_t row = txs_next(&s);
      if (!d)
        row &= 0xffffffffu;
      uint64_t e = (row >> fb) & emax;
      if (i % 3 == 0)  /* many at the largest exponents */
        e = emax - 1 - (uint64_t)(i % 5);
      row = (row & ~((uint64_t)emax << fb)) | (e << fb);
      if (e == emax)
        continue;
      wv_xsum_add_row(&whole, row);
      uint64_t m = (row & ((1ull << fb) - 1)) | (e ? 1ull << fb : 0);
      unsigned b = e ? (unsigned)e - 1 : 0;
      int neg = (row >> (d ? 63 : 31)) & 1;
      for (unsigned k = 0; k < 64 && (m >> k) != 0; k += 16) {
        int64_t v = (int64_t)(((m >> k) & 0xffff) << ((b + k) % 16));
        bins[(b + k) / 16] += neg ? -v : v;
      }
    }
    wv_xsum_add_bins(&byb, bins, NB, 16);
    for (unsigned i = 0; i < WV_XSUM_LIMBS; i++)
      ck_assert_uint_eq(byb.limb[i], whole.limb[i]);
    unsigned top = 64 * (whole.n_limbs - 1), n = whole.n_limbs;
    wv_xsum_add_i64(&byb, INT64_MIN, top);
    wv_xsum_add_i64(&byb, 0x123456789abcdefll, top + 7);
    wv_xsum_add_i64(&byb, INT64_MIN, top);
    wv_xsum_add_i64(&byb, -0x123456789abcdefll, top + 7);
    ck_assert_uint_eq(byb.n_limbs, n);
    for (unsigned i = 0; i < WV_XSUM_LIMBS; i++)
      ck_assert_uint_eq(byb.limb[i], whole.limb[i]);
    ck_assert_uint_eq(wv_xsum_round(&byb, N), wv_xsum_round(&whole, N));
  }
}
END_TEST

/* Random rows of every exponent, split into pieces merged in a shuffled
 * order: the same limbs as row by row. */
START_TEST(merge_in_any_order)
{
  uint64_t s = 0x2545f4914f6cdd1du;
  for (int d = 0; d < 2; d++) {
    wave_dtype dt = d ? WAVE_F64 : WAVE_F32;
    enum { N = 5000, K = 37 };
    static uint64_t r[N];
    wv_xsum whole, piece[K], m;
    wv_xsum_init(&whole, dt);
    for (int k = 0; k < K; k++)
      wv_xsum_init(&piece[k], dt);
    for (int i = 0; i < N; i++) {
      r[i] = txs_next(&s);
      if (!d)
        r[i] &= 0xffffffffu;
      if ((r[i] & (d ? P64 : P32)) == (d ? P64 : P32))
        r[i] ^= d ? 1ull << 62 : 1u << 30;  /* finite rows */
      wv_xsum_add_row(&whole, r[i]);
      wv_xsum_add_row(&piece[txs_next(&s) % K], r[i]);
    }
    wv_xsum_init(&m, dt);
    for (int k = 0; k < K; k++)
      wv_xsum_merge(&m, &piece[(k * 11) % K]);
    ck_assert_mem_eq(m.limb, whole.limb, sizeof m.limb);
    ck_assert_uint_eq(m.flags, whole.flags);
    ck_assert_uint_eq(wv_xsum_round(&m, N), wv_xsum_round(&whole, N));
  }
}
END_TEST

/* The reference (core/reduce.c) and the partial merge (core/partial.c). */
START_TEST(reference_and_partials)
{
  float rows[6] = {1e30f, 1, 0x1p-24f, -1e30f, 5, 7};
  uint32_t mask[6] = {1, 1, 1, 1, 0, 1};
  wv_span in[2] = {{rows, 4}, {rows + 4, 2}}, mk = {mask, 6};
  wv_reduce_job j = {.dtype = WAVE_F32, .op = WAVE_FSUM, .input = in,
                     .n_input = 2, .mask = &mk, .n_mask = 1, .has_mask = 1,
                     .rows = 6};
  wave_error err = {0};
  wv_reduce_out o;
  ck_assert_int_eq(wv_reduce_reference(&j, &o, &err), 0);
  ck_assert_uint_eq(o.count, 5);
  ck_assert_uint_eq(o.bits[0], txs_f32(8 + 0x1p-24f));  /* exact */
  ck_assert_uint_eq(o.n_values, 1);
  ck_assert_uint_eq(o.bits[0], wv_xsum_round(&o.xsum, o.count));
  /* pieces, each a one-chunk job, merged in reverse order */
  wv_partial p[3];
  wv_reduce_out po;
  for (int i = 0; i < 3; i++) {
    wv_span c = {rows + 2 * i, 2}, cm = {mask + 2 * i, 2};
    wv_reduce_job pj = j;
    pj.input = &c;
    pj.n_input = 1;
    pj.mask = &cm;
    pj.rows = 2;
    ck_assert_int_eq(wv_reduce_reference(&pj, &po, &err), 0);
    wv_partial_of(&pj, &po, (size_t)(2 - i), &p[2 - i]);
  }
  wv_reduce_out mo;
  ck_assert_int_eq(wv_partial_merge(WAVE_F32, WAVE_FSUM, p, 3, &mo, NULL,
                                    &err), 0);
  ck_assert_uint_eq(mo.bits[0], o.bits[0]);
  ck_assert_uint_eq(mo.count, 5);
  ck_assert_mem_eq(mo.xsum.limb, o.xsum.limb, sizeof o.xsum.limb);
  /* all masked: +0.0, count 0 */
  uint32_t none[6] = {0};
  mk.data = none;
  ck_assert_int_eq(wv_reduce_reference(&j, &o, &err), 0);
  ck_assert_uint_eq(o.bits[0], 0);
  ck_assert_uint_eq(o.count, 0);
  /* integer dtypes: OPDTYPE */
  j.dtype = WAVE_U32;
  ck_assert_int_eq(wv_reduce_reference(&j, &o, &err), WAVE_EOPDTYPE);
  ck_assert_int_eq(wave_op_check(WAVE_S64, WAVE_FSUM), WAVE_EOPDTYPE);
  ck_assert_int_eq(wave_op_parse("fsum"), WAVE_FSUM);
  ck_assert_str_eq(wave_op_name(WAVE_FSUM), "fsum");
  ck_assert_uint_eq(wave_op_values(WAVE_FSUM), 1);
}
END_TEST

START_TEST(wire_form)
{
  uint64_t s = 7;
  for (int d = 0; d < 2; d++) {
    wave_dtype dt = d ? WAVE_F64 : WAVE_F32;
    size_t n = wv_xsum_wire_bytes(dt);
    ck_assert_uint_eq(n, d ? 272 : 48);
    wv_xsum x, y;
    wv_xsum_init(&x, dt);
    for (int i = 0; i < 100; i++)
      wv_xsum_add_row(&x, txs_next(&s) &
                             (d ? 0xffefffffffffffffu : 0xff7fffffu));
    x.flags = WV_XSUM_PINF | WV_XSUM_NOT_NEGZERO;
    uint8_t buf[8 * WV_XSUM_LIMBS + 1];
    wv_xsum_pack(&x, buf);
    wave_error err = {0};
    ck_assert_int_eq(wv_xsum_unpack(&y, dt, buf, n, x.flags, &err), 0);
    ck_assert_mem_eq(&x, &y, sizeof x);
    /* little-endian */
    ck_assert_uint_eq(buf[0], x.limb[0] & 0xff);
    ck_assert_uint_eq(buf[9], (x.limb[1] >> 8) & 0xff);
    /* wrong lengths, unknown flags, a dtype without fsum */
    ck_assert_int_eq(wv_xsum_unpack(&y, dt, buf, n - 8, 0, &err),
                     WAVE_EBADREQUEST);
    ck_assert_ptr_nonnull(strstr(err.message, "bytes"));
    ck_assert_int_eq(wv_xsum_unpack(&y, dt, buf, n + 1, 0, &err),
                     WAVE_EBADREQUEST);
    ck_assert_int_eq(wv_xsum_unpack(&y, dt, buf, 0, 0, &err),
                     WAVE_EBADREQUEST);
    ck_assert_int_eq(wv_xsum_unpack(&y, dt, buf, n, 16, &err),
                     WAVE_EBADREQUEST);
    ck_assert_ptr_nonnull(strstr(err.message, "flags"));
  }
  wave_error err = {0};
  wv_xsum y;
  uint8_t buf[48] = {0};
  ck_assert_uint_eq(wv_xsum_wire_bytes(WAVE_U32), 0);
  ck_assert_int_eq(wv_xsum_unpack(&y, WAVE_U32, buf, 48, 0, &err),
                   WAVE_EBADREQUEST);
  ck_assert_int_eq(wv_xsum_unpack(&y, WAVE_F64, buf, 48, 0, &err),
                   WAVE_EBADREQUEST);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("xsum");
  TCase *tc = tcase_create("rules");
  tcase_add_test(tc, nan_and_infinities);
  tcase_add_test(tc, overflow_to_infinity);
  tcase_add_test(tc, subnormals_are_exact);
  tcase_add_test(tc, signed_zeros);
  tcase_add_test(tc, heavy_cancellation);
  tcase_add_test(tc, ties_to_even);
  tcase_add_test(tc, float32_against_exact_double);
  tcase_add_test(tc, carry_and_borrow);
  tcase_add_test(tc, bins_reach_the_top_limb);
  tcase_add_test(tc, merge_in_any_order);
  tcase_add_test(tc, reference_and_partials);
  tcase_add_test(tc, wire_form);
  tcase_set_timeout(tc, 60);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? 0 : 1;
}
