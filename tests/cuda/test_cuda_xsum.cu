/* test_cuda_xsum.cu - the CUDA/HIP fsum kernel's arithmetic, without a GPU
 * (issue 39): the per-thread code of gpu_xsum_acc.h and gpu_xsum_rows.h (a
 * thread's window, row-by-row path and flushes, the block's bins into the
 * result) run on the CPU in the kernel's own order, for grids of a few
 * blocks of 256 threads, the block's atomics as plain additions, then the
 * host's fold (xsum_fold) against the reference (wv_reduce_reference): the
 * whole accumulator, the flags, the count and the bits must be equal.  The
 * data are chosen for the kernel's edges: narrow rows (one window), the full
 * range with subnormals, every exponent in turn, cancelling pairs (in one
 * thread, and across threads and blocks), a tie to even (checked by hand
 * too), NaN and infinities, -0.0 and zeros, a mask, a tail of n % 4 rows,
 * and the bounds' worst cases: 2^20 rows of the top binade (2048 a thread,
 * the most a launch gives one, in one window; the top bins of the result),
 * the same in one float32 double bin, and xs_grid's rows a thread against a
 * double bin's capacity.  Narrow rows must find their window (or the GPU
 * would run them on the bins), and float64 rows of the whole range must
 * run straight to the bins (or it would test each for a window).  What only a GPU shows (the vote, the
 * atomics, the launches) is checked by tests/conformance and
 * wvbench-gpu-reduce.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "workers/cuda/gpu_xsum_rows.h"

using namespace wv_cuda;

static uint64_t mix(uint64_t x)
{
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* One launch of k_xsum over rows[0, n) on a GPU of `blocks` resident
 * blocks, on the CPU, adding into res. */
template <typename T, bool MASK>
static void tcxe_launch(const void *rows, const uint32_t *mask, uint64_t n,
                       unsigned blocks, xresult *res)
{
  typedef xs_traits<T> X;
  const uint64_t grid = xs_grid<T>(n, blocks), stride = grid * WVG_BLOCK;
  for (uint64_t b = 0; b < grid; b++) {
    uint32_t sb[4 * X::NB];
    static double db[XS_BUCKETS * WVG_BLOCK];
    memset(sb, 0, sizeof sb);
    for (double &d : db)
      d = -0.0;                   /* as the kernel sets them */
    for (uint32_t tid = 0; tid < WVG_BLOCK; tid++) {
      xs_thread<T> t;
      t.init(X::BINS ? db + tid : NULL);
      xs_rows<T, MASK>(t, (const uint4 *)rows,
                       (const typename X::MV *)mask, n, b * WVG_BLOCK + tid,
                       stride, b == 0 ? tid : ~0u, sb);
      t.end(sb);
      res->flags |= t.flags | (t.nz != 0 ? WV_XSUM_NOT_NEGZERO : 0u);
      res->count += t.cnt;
    }
    if (X::BINS)
      for (uint32_t q = 0; q < XS_BUCKETS * 16; q++)
        xs_bins_out(db, q, sb);
    for (uint32_t k = 0; k < X::NB; k++)
      xs_bin_out<T>(sb, k, res);
  }
}

enum { NARROW, FULL, CANCEL, SPECIAL, ZEROS, EVERY, WIDECANCEL, TIES,
       HUGE_, HUGE_BINS, SUBS };

/* A random finite row of any exponent (subnormals and zeros included). */
static uint64_t any_row(int f64, uint64_t x, uint64_t y)
{
  uint64_t e = f64 ? (y >> 32) % 2047 : (y >> 32) % 255;
  return f64 ? (x >> 63) << 63 | e << 52 | (x & 0xfffffffffffffull)
             : (x >> 63) << 31 | e << 23 | (x & 0x7fffff);
}

/* n rows of kind k (dt's bits, 16-byte aligned storage). */
static std::vector<uint64_t> make_rows(wave_dtype dt, int k, uint64_t n,
                                       uint64_t seed)
{
  const int f64 = dt == WAVE_F64;
  std::vector<uint64_t> v((n * (f64 ? 8 : 4) + 15) / 8 + 2, 0);
  for (uint64_t i = 0; i < n; i++) {
    uint64_t x = mix(i ^ seed), y = mix(x + 1), bits;
    int kk = k;
    if (kk == CANCEL && ((i >> 1) & 15) != 0) {
      uint64_t xj = mix((i >> 1) ^ seed ^ 77);
      bits = f64 ? (1033 + (xj >> 40) % 10) << 52 | (xj & 0xfffffffffffffull) |
                       (i & 1) << 63
                 : (137 + (xj >> 40) % 10) << 23 | (xj & 0x7fffff) |
                       (i & 1) << 31;
    } else if (kk == HUGE_) {
      /* the top binade, random significands (a sum of equal rows keeps
       * few bits); float32: one row in 16 at the bottom binade of the
       * window there, whose grain the sum keeps (a window wider than
       * XS_WIN32's bound makes the sum round) */
      bits = f64 ? 0x7fe0000000000000ull | (x & 0xfffffffffffffull)
             : (uint64_t)((i & 15) == 5 ? 255 - XS_WIN32 : 254) << 23 |
                   (x & 0x7fffff);
    } else if (kk == HUGE_BINS) {
      /* the largest significand, all positive; three rows of a float32
       * vector at the top of bucket 14 (e 239: 2^39 of its grain less a
       * little), the fourth at e 1, so that every unit is one some row
       * misses and all its rows go to the double bins: 1536 rows of a
       * thread in one bin (float64: every other row at e 1) */
      bits = f64 ? ((i & 1) ? 1ull : 2046ull) << 52 | 0xfffffffffffffull
                 : ((i & 3) == 3 ? 1ull : 239ull) << 23 | 0x7fffff;
    } else if (kk == SUBS) {
      /* the most negative subnormal, one row in 4 +0.0: every row has
       * e = 0, so no window takes it (float32: by slow, built from M and
       * b; float64: straight into the shared bins) */
      bits = (i & 3) == 3 ? 0
             : f64 ? 0x800fffffffffffffull : 0x807fffffu;
    } else if (kk == EVERY) {
      /* every exponent in turn, subnormals included */
      uint64_t e = f64 ? i % 2047 : i % 255;
      bits = f64 ? (x >> 63) << 63 | e << 52 | (x & 0xfffffffffffffull)
                 : (x >> 63) << 31 | e << 23 | (x & 0x7fffff);
    } else if (kk == WIDECANCEL || kk == TIES) {
      /* x at row j < n / 2 and -x at row n - 1 - j, x of any exponent
       * (so that a pair meets only in the result); WIDECANCEL: one pair
       * in 16 is two narrow rows instead, the true sum; TIES: pair 0 is
       * 1 (or 1 + ulp) and half an ulp of 1: a tie, to even */
      uint64_t j = i < n / 2 ? i : n - 1 - i;
      uint64_t xj = mix(j ^ seed ^ 55), yj = mix(xj + 1);
      uint64_t one = f64 ? 0x3ff0000000000000ull : 0x3f800000u;
      uint64_t vv = (n >> 2) & 1;
      if (j == i && j == n - 1 - i)
        bits = 0;                                 /* the middle row */
      else if (kk == TIES && j == 0)
        bits = i == 0 ? one + vv
                      : (f64 ? 0x3ca0000000000000ull : 0x33800000u);
      else if (kk == WIDECANCEL && (j & 15) == 0)
        bits = f64 ? 0x3fe0000000000000ull | (y & 0xfffffffffffffull)
                   : 0x3f000000u | (y & 0x7fffff);
      else
        bits = any_row(f64, xj, yj) ^
               (i == j ? 0 : f64 ? 1ull << 63 : 1ull << 31);
    } else if (kk == FULL || (kk == SPECIAL && (x & 7) != 0) ||
               (kk == ZEROS && (x & 3) == 0)) {
      bits = any_row(f64, x, y);
    } else if (kk == SPECIAL) {
      static const uint64_t s32[] = {0x7f800000u, 0xff800000u, 0x7fc00000u,
                                     0x00000001u, 0x80000000u, 0u,
                                     0x7f7fffffu, 0xff7fffffu};
      static const uint64_t s64[] = {0x7ff0000000000000ull,
                                     0xfff0000000000000ull,
                                     0x7ff8000000000000ull, 1ull,
                                     0x8000000000000000ull, 0ull,
                                     0x7fefffffffffffffull,
                                     0xffefffffffffffffull};
      bits = (f64 ? s64 : s32)[(x >> 3) & 7];
    } else if (kk == ZEROS) {
      bits = f64 ? (x & 8) << 60 : (x & 8) << 28;  /* +0.0 or -0.0 */
    } else {                                        /* NARROW, CANCEL's */
      if (f64) {
        double dv = (double)(x >> 11) * 0x1p-53;
        memcpy(&bits, &dv, 8);
      } else {
        float fv = (float)(uint32_t)(x >> 40) * 0x1p-24f;
        uint32_t b32;
        memcpy(&b32, &fv, 4);
        bits = b32;
      }
    }
    if (f64)
      v[i] = bits;
    else
      ((uint32_t *)v.data())[i] = (uint32_t)bits;
  }
  return v;
}

/* Rows of kind k, n of them, emulated in `launches` launches (slices of a
 * host job) on `blocks` blocks, with a mask when masked (all selected but
 * every third row when masked == 2: only -0.0 rows left, say). */
static void tcxc_case(wave_dtype dt, int k, uint64_t n, unsigned blocks,
                       int masked, int launches)
{
  const int f64 = dt == WAVE_F64;
  const size_t rsz = f64 ? 8 : 4;
  std::vector<uint64_t> rows = make_rows(dt, k, n, 1234 + k);
  std::vector<uint32_t> mask(n + 4);
  for (uint64_t i = 0; i < n; i++)
    mask[i] = (mix(i ^ 99) & 3) != 0 ? (uint32_t)(mix(i) | 1) : 0u;

  xresult *res = (xresult *)calloc(1, sizeof *res);
  uint64_t per = (n / launches + 3) & ~3ull;
  for (uint64_t r0 = 0; r0 < n; r0 += per) {
    uint64_t m = n - r0 < per ? n - r0 : per;
    const char *p = (const char *)rows.data() + r0 * rsz;
    const uint32_t *mk = masked ? mask.data() + r0 : NULL;
    if (f64)
      masked ? tcxe_launch<double, true>(p, mk, m, blocks, res)
             : tcxe_launch<double, false>(p, mk, m, blocks, res);
    else
      masked ? tcxe_launch<float, true>(p, mk, m, blocks, res)
             : tcxe_launch<float, false>(p, mk, m, blocks, res);
  }
  wv_xsum got;
  xsum_fold(dt, res, &got);
  uint64_t count = masked ? res->count : n;
  free(res);

  wv_span sp = {rows.data(), n}, ms = {mask.data(), n};
  wv_reduce_job job;
  memset(&job, 0, sizeof job);
  job.dtype = dt;
  job.op = WAVE_FSUM;
  job.input = &sp;
  job.n_input = 1;
  job.rows = n;
  if (masked) {
    job.mask = &ms;
    job.n_mask = 1;
    job.has_mask = 1;
  }
  wv_reduce_out want;
  wave_error err;
  ck_assert_msg(wv_reduce_reference(&job, &want, &err) == 0, "%s",
                err.message);
  ck_assert_uint_eq(count, want.count);
  ck_assert_uint_eq(got.flags, want.xsum.flags);
  for (unsigned i = 0; i < WV_XSUM_LIMBS; i++)
    ck_assert_msg(got.limb[i] == want.xsum.limb[i],
                  "%s kind %d n %llu mask %d: limb %u %016llx, want %016llx",
                  f64 ? "f64" : "f32", k, (unsigned long long)n, masked, i,
                  (unsigned long long)got.limb[i],
                  (unsigned long long)want.xsum.limb[i]);
  ck_assert_uint_eq(wv_xsum_round(&got, count), want.bits[0]);
  if (k == TIES && !masked) {     /* the tie's answer, by hand */
    uint64_t vv = (n >> 2) & 1;
    ck_assert_uint_eq(want.bits[0],
                      f64 ? 0x3ff0000000000000ull + 2 * vv
                          : 0x3f800000u + 2 * vv);
  }
}

/* _i: dtype (bit 0), mask (bit 1), kind (the rest).  Then again with
 * every third vote failed (xs_veto_every), as a GPU's fails for lanes
 * whose rows fit their window where another lane's did not. */
START_TEST(kernel_equals_reference)
{
  wave_dtype dt = (_i & 1) ? WAVE_F64 : WAVE_F32;
  int masked = (_i >> 1) & 1, k = _i >> 2;
  for (uint32_t veto : {0u, 3u}) {
    xs_veto_every = veto;
    tcxc_case(dt, k, 100003, 3, masked, 1);   /* tail rows, 3 blocks */
    tcxc_case(dt, k, 4099, 1, masked, 2);     /* one block, two slices */
    tcxc_case(dt, k, 7, 4, masked, 1);        /* the tail alone */
  }
  xs_veto_every = 0;
}
END_TEST

/* The bounds' worst case: a GPU of one block (xs_grid gives n / 2^19 =
 * 2), 2^20 rows of the top binade (float32: one in 16 at its window's
 * bottom), all in one window (_i / 2 =
 * 0), or of the largest significand, three in four in one float32
 * double bin (_i / 2 = 1): 2048 rows a thread, the sums of threads and
 * blocks at their limits, the result's top bins (folded by xsum_fold's
 * 128-bit path); or (_i / 2 = 2) of the most negative subnormal and
 * zeros, all in float32's bucket 0, float64's in its shared bins. */
START_TEST(largest_rows_at_the_bounds)
{
  static const int kinds[] = {HUGE_, HUGE_BINS, SUBS};
  wave_dtype dt = (_i & 1) ? WAVE_F64 : WAVE_F32;
  tcxc_case(dt, kinds[_i >> 1], 1u << 20, 1, 0, 1);
}
END_TEST

/* Narrow data finds its window, so that it runs on the fast add, not the
 * bins: every thread of a block over rows uniform in [0, 1) (b 100..125,
 * most in the block of 8 at 120) after a first unit of rows near 2^20
 * (where the thread's window starts: xs_rows takes its first row's
 * binade) ends with its window at the narrow rows, moved there by its
 * first narrow unit (it missed the window and fits one): float64 at lo =
 * 112; float32 at binades 110..127 (18 binades, the top one above the
 * rows' 126), and only that unit's rows (16, each below 1) went to its
 * double bins: the first unit's rows went to the window. */
START_TEST(narrow_rows_settle_in_a_window)
{
  const int f64 = _i;
  const uint64_t n = 1u << 16;
  std::vector<uint64_t> rows = make_rows(f64 ? WAVE_F64 : WAVE_F32, NARROW,
                                         n, 5);
  const uint64_t first = WVG_BLOCK * 4 * (f64 ? 2 : 4);   /* one unit */
  for (uint64_t i = 0; i < first; i++)
    if (f64)
      rows[i] = 0x4138000000000000ull + i;                /* 1.5 * 2^20 */
    else
      ((uint32_t *)rows.data())[i] = 0x49c00000u + (uint32_t)i;
  static double db[XS_BUCKETS * WVG_BLOCK];
  for (double &d : db)
    d = -0.0;
  uint32_t sb[4 * 262] = {0};
  for (uint32_t tid = 0; tid < WVG_BLOCK; tid++) {
    uint32_t lo = 1008;
    if (f64) {
      xs_thread<double> t;
      t.init(NULL);
      xs_rows<double, false>(t, (const uint4 *)rows.data(), NULL, n, tid,
                             WVG_BLOCK, ~0u, sb);
      lo = t.lo;
    } else {
      xs_thread<float> t;
      t.init(db + tid);
      xs_rows<float, false>(t, (const uint4 *)rows.data(), NULL, n, tid,
                            WVG_BLOCK, ~0u, sb);
      ck_assert_msg(t.wl == 110u << 24 && t.wh == 128u << 24,
                    "f32 thread %u: window %u..%u", tid, t.wl >> 24,
                    (t.wh >> 24) - 1);
      double inbins = 0;
      for (uint32_t h = 0; h < XS_BUCKETS; h++)
        inbins += db[h * WVG_BLOCK + tid];
      ck_assert_msg(inbins < 16.0, "f32 thread %u: %g in the bins", tid,
                    inbins);
    }
    ck_assert_msg(lo == 1008u, "%s thread %u: lo %u",
                  f64 ? "f64" : "f32", tid, lo);
  }
}
END_TEST

/* Float64 rows of the whole range take runs of units straight to the
 * shared bins (xs_unit: after a unit in which every lane's rows missed
 * but for under a quarter of them, runs of 1, 2, 4, .. 32 units): one
 * thread over 2^13 rows in turn, 1024 units, of which at least 15 in 16
 * go straight (the runs alone would take 991).  Narrow rows (in the
 * window) and two far clusters (CANCEL: a unit in 4 has two rows that
 * miss, the other six hit) take at most 1 in 32 (the first unit's
 * window may be the wrong one), and a masked job none.  (The sums are
 * kernel_equals_reference's.) */
START_TEST(float64_wide_rows_run_straight_to_the_bins)
{
  static const struct { int kind; bool mask; bool runs; } cases[] = {
    {FULL, false, true}, {EVERY, false, true}, {NARROW, false, false},
    {CANCEL, false, false}, {FULL, true, false},
  };
  const uint64_t n = 1u << 13, units = n / 8;
  for (const auto &c : cases) {
    std::vector<uint64_t> rows = make_rows(WAVE_F64, c.kind, n, 9);
    std::vector<uint32_t> mask(n, 1);
    uint32_t sb[4 * 262] = {0};
    xs_thread<double> t;
    t.init(NULL);
    xs_direct_units = 0;
    if (c.mask)
      xs_rows<double, true>(t, (const uint4 *)rows.data(),
                            (const uint2 *)mask.data(), n, 0, 1, ~0u, sb);
    else
      xs_rows<double, false>(t, (const uint4 *)rows.data(), NULL, n, 0, 1,
                             ~0u, sb);
    ck_assert_msg(c.runs ? 16 * xs_direct_units >= 15 * units
                  : c.mask ? xs_direct_units == 0
                           : 32 * xs_direct_units <= units,
                  "kind %d mask %d: %u of %llu units straight to the bins",
                  c.kind, (int)c.mask, xs_direct_units,
                  (unsigned long long)units);
  }
}
END_TEST

/* The launch bound the double bins rely on: whatever the rows and the
 * GPU, xs_grid gives no thread more rows than a bin holds exactly
 * (XS_BIN_ROWS; every launch folds its bins at its end). */
START_TEST(grid_keeps_rows_in_a_bin)
{
  static const uint64_t ns[] = {1, 7, 1u << 19, (1u << 19) + 1,
                                (1ull << 30) - 3, 1ull << 34,
                                (1ull << 36) + 12345};
  static const unsigned gpus[] = {1, 3, 132 * 7, 1056};
  for (uint64_t n : ns)
    for (unsigned g : gpus) {
      uint64_t grid = xs_grid<float>(n, g), threads = grid * WVG_BLOCK;
      uint64_t nvec = n / 4, most = (nvec + threads - 1) / threads * 4 + 1;
      ck_assert_msg(most <= XS_BIN_ROWS, "n %llu on %u blocks: %llu rows a "
                    "thread", (unsigned long long)n, g,
                    (unsigned long long)most);
    }
}
END_TEST

int main(void)
{
  Suite *s = suite_create("cuda_xsum");
  TCase *tc = tcase_create("emulated");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, kernel_equals_reference, 0, 4 * (HUGE_ + 0));
  tcase_add_loop_test(tc, largest_rows_at_the_bounds, 0, 6);
  tcase_add_test(tc, grid_keeps_rows_in_a_bin);
  tcase_add_loop_test(tc, narrow_rows_settle_in_a_window, 0, 2);
  tcase_add_test(tc, float64_wide_rows_run_straight_to_the_bins);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? 0 : 1;
}
