/* gpu_xsum_rows.h - the exact float sum's rows through a thread's
 * accumulator (gpu_xsum_acc.h; gpu_xsum.cu has the design and the
 * bounds): float64's and float32's units of rows, a thread's rows of a
 * launch, and a block's bins out to the job's result.  Host and device
 * code alike, as gpu_xsum_acc.h (tests/cuda/test_cuda_xsum.cu).
 */
#ifndef WV_GPU_XSUM_ROWS_H
#define WV_GPU_XSUM_ROWS_H

#include "workers/cuda/gpu_xsum_acc.h"

namespace WVG_NS {

/* ---- float64's units ---------------------------------------------------- */

/* A float64 row the fast test did not pass: an inf or NaN becomes a flag,
 * a zero adds nothing, any other (normal or subnormal) goes straight into
 * the shared bins (X::direct: two atomics). */
WVG_XHD void xs_miss64(xs_thread<double> &t, unsigned long long x,
                       uint32_t *sb)
{
  typedef xs_traits<double> X;
  const uint32_t e = X::expo(x);
  if (e == X::EMAX)
    t.flag_inf_nan(x);
  else if (!X::is_zero(x))
    X::direct(sb, x, e != 0 ? e - 1 : 0, e != 0);
}

/* VR rows of a float64 vector (m: their mask words; unselected rows become
 * -0.0 with a zero multiplier).  Returns whether every row passed the fast
 * test; d[] gets their window offsets; mn and mx the least and largest key
 * of the selected rows (the top word << 1: a magnitude's order, its
 * exponent field at bit 21). */
template <typename T, bool MASK>
WVG_XHD bool xs_prep(xs_thread<T> &t, typename xs_traits<T>::U *r,
                     const uint32_t *m, uint32_t *d, uint32_t &mn,
                     uint32_t &mx)
{
  typedef xs_traits<T> X;
  bool ok = true;
XS_UNROLL
  for (uint32_t c = 0; c < X::VR; c++) {
    const bool on = !MASK || m[c] != 0;
    if (MASK) {
      t.cnt += on;
      r[c] = on ? r[c] : X::neg_zero();
    }
    t.nz |= r[c] ^ X::neg_zero();
    d[c] = X::expo(r[c]) - t.lo1;
    ok &= d[c] < t.lim || !on;
    const uint32_t k = (uint32_t)(r[c] >> 32) << 1;
    mn = on && k < mn ? k : mn;
    mx = on && k > mx ? k : mx;
  }
  return ok;
}

/* The rows of float64 vectors prepared by xs_prep: all by the fast add
 * when every row of the unit passed (all: the kernel's vote of ok), else
 * row by row, a hit by the fast add and a miss by xs_miss64 (one branch a
 * row, no window moved within the unit: d stays true).  Returns the rows
 * that went row by row and hit (0 when all). */
template <typename T, bool MASK, int NV>
WVG_XHD uint32_t xs_add(xs_thread<T> &t, typename xs_traits<T>::U (*r)[4],
                        const uint32_t (*m)[4], const uint32_t (*d)[4],
                        bool all, uint32_t *sb)
{
  typedef xs_traits<T> X;
  if (all) {
XS_UNROLL
    for (int v = 0; v < NV; v++)
XS_UNROLL
      for (uint32_t c = 0; c < X::VR; c++) {
        int p = 1 << (d[v][c] & 31u);
        X::add(t.a, r[v][c], MASK && m[v][c] == 0 ? 0 : p, true);
      }
    return 0;
  }
  uint32_t hits = 0;
XS_UNROLL
  for (int v = 0; v < NV; v++)
XS_UNROLL
    for (uint32_t c = 0; c < X::VR; c++) {
      /* An unselected row is -0.0 by now: xs_miss64 adds nothing. */
      if (d[v][c] < t.lim) {
        X::add(t.a, r[v][c], 1 << d[v][c], true);
        hits++;
      } else {
        xs_miss64(t, r[v][c], sb);
      }
    }
  return hits;
}

/* The host's tests count the units xs_direct64 took (host code only). */
inline uint32_t xs_direct_units = 0;

/* A float64 unit straight to the shared bins (xs_unit's runs of units
 * whose rows mostly miss every window: the whole range): per row "a row
 * other than -0.0" and xs_miss64, with no window test and no keys.  Jobs
 * without a mask only: the masked kernel, at its 64 registers, spills
 * with this path beside the other. */
template <int NV>
WVG_XHD void xs_direct64(xs_thread<double> &t,
                         const unsigned long long (*r)[4], uint32_t *sb)
{
  typedef xs_traits<double> X;
#if !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
  xs_direct_units++;
#endif
XS_UNROLL
  for (int v = 0; v < NV; v++)
XS_UNROLL
    for (uint32_t c = 0; c < X::VR; c++) {
      t.nz |= r[v][c] ^ X::neg_zero();
      xs_miss64(t, r[v][c], sb);
    }
}

/* The host's tests run one lane alone; with xs_veto_every = k > 0 every
 * k-th vote fails, as a GPU's fails for a lane whose rows fit where
 * another lane's did not (host code only: the device never reads it). */
inline uint32_t xs_veto_every = 0, xs_veto_n = 0;

/* The kernel's per-thread vote: whether every lane of the unit passed. */
WVG_XHD bool xs_all(bool ok)
{
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return unit_all(ok);
#else
  return ok && (xs_veto_every == 0 || ++xs_veto_n % xs_veto_every != 0);
#endif
}

/* The same vote with no veto (xs_unit's "few rows hit"). */
WVG_XHD bool xs_all_lanes(bool p)
{
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return unit_all(p);
#else
  return p;
#endif
}

/* ---- float32's units ---------------------------------------------------- */

/* A float32 row the bins' plain path leaves (X::special: inf, NaN; on HIP
 * a subnormal too): inf and NaN become flags, a subnormal goes to bucket
 * 0 built from M and b (X::miss), a zero adds nothing. */
WVG_XHD void xs_rare32(xs_thread<float> &t, uint32_t x, uint32_t *sb)
{
  typedef xs_traits<float> X;
  const uint32_t e = X::expo(x);
  if (e == X::EMAX)
    t.flag_inf_nan(x);
  else if (!X::is_zero(x))
    X::miss(sb, t.bin, x, e != 0 ? e - 1 : 0, e != 0);
}

/* A finite float32 row into its double bin, bucket e / 16 (bits 27..30):
 * one conversion and one load, add and store of the thread's own word.
 * A zero adds as it is: a bin still -0.0 stays so under a -0.0 row. */
WVG_XHD void xs_bin32(xs_thread<float> &t, uint32_t x)
{
  t.bin[((x >> 27) & 15u) * WVG_BLOCK] += xs_traits<float>::as_double(x);
}

/* A float32 unit of NV vectors, rows r[v][c] (m: their mask words;
 * unselected rows become -0.0).  A row's key x << 1 orders magnitudes;
 * mn and mx are the least and largest of the selected rows' keys.  When
 * every lane's rows lie in its window (the vote), they are added to w:
 * one conversion and one add a row.  Else every row goes to its double
 * bin (xs_bin32; a unit whose mx says it holds an inf or NaN, and every
 * unit on HIP, with each row looked at: xs_rare32), and a thread whose
 * rows missed its window but fit one, with no zero, subnormal, inf or
 * NaN among them, moves its window there.  So narrow data settles in its
 * window at its first unit, and data spread wider than 18 binades (the
 * whole range, two far clusters) never moves a window back and forth. */
template <bool MASK, int NV>
WVG_XHD void xs_unit32(xs_thread<float> &t, uint32_t (*r)[4],
                       const uint32_t (*m)[4], uint32_t *sb)
{
  typedef xs_traits<float> X;
  uint32_t mn = ~0u, mx = 0;
XS_UNROLL
  for (int v = 0; v < NV; v++)
XS_UNROLL
    for (uint32_t c = 0; c < 4; c++) {
      const uint32_t k = r[v][c] << 1;
      const bool on = !MASK || m[v][c] != 0;
      if (MASK) {
        t.cnt += on;
        r[v][c] = on ? r[v][c] : X::neg_zero();
      }
      mn = on && k < mn ? k : mn;
      mx = on && k > mx ? k : mx;
    }
  const bool ok = mn >= t.wl && mx < t.wh;
  if (xs_all(ok)) {
XS_UNROLL
    for (int v = 0; v < NV; v++)
XS_UNROLL
      for (uint32_t c = 0; c < 4; c++)
        t.w += X::as_double(r[v][c]);
    return;
  }
  if (!X::CAREFUL && mx < 0xff000000u) {
XS_UNROLL
    for (int v = 0; v < NV; v++)
XS_UNROLL
      for (uint32_t c = 0; c < 4; c++)
        xs_bin32(t, r[v][c]);
  } else {
    uint32_t rare = 0;            /* rows for xs_rare32, bit v * 4 + c */
XS_UNROLL
    for (int v = 0; v < NV; v++)
XS_UNROLL
      for (uint32_t c = 0; c < 4; c++) {
        const bool sp = X::special(r[v][c]);
        xs_bin32(t, sp ? 0u : r[v][c]);
        rare |= (uint32_t)sp << (v * 4 + c);
      }
    if (rare != 0)
XS_UNROLL
      for (int v = 0; v < NV; v++)
XS_UNROLL
        for (uint32_t c = 0; c < 4; c++)
          if ((rare >> (v * 4 + c)) & 1u)
            xs_rare32(t, r[v][c], sb);
  }
  if (!ok && mn <= mx && mn >= 1u << 24 && mx < 0xff000000u &&
      mn >> 24 >= xs_thread<float>::xs_win_low(mx >> 24))
    t.w_move(mx >> 24, sb);
}

/* A float32 row alone (a launch's last n % 4 rows): to its double bin. */
WVG_XHD void xs_row32(xs_thread<float> &t, uint32_t x, uint32_t *sb)
{
  const bool sp = xs_traits<float>::special(x);
  xs_bin32(t, sp ? 0u : x);
  if (sp)
    xs_rare32(t, x, sb);
}

/* A unit of NV vectors, rows r[v][c], mask words m[v][c]: float32's
 * (xs_unit32) or float64's (xs_prep, the vote, xs_add). */
template <typename T, bool MASK, int NV>
WVG_XHD void xs_unit(xs_thread<T> &t, typename xs_traits<T>::U (*r)[4],
                     uint32_t (*m)[4], uint32_t *sb)
{
  if constexpr (xs_traits<T>::BINS) {
    xs_unit32<MASK, NV>(t, r, m, sb);
  } else {
    typedef xs_traits<T> X;
    if (!MASK && (t.skip & 0xffu) != 0) {
      t.skip--;
      xs_direct64<NV>(t, r, sb);
      return;
    }
    uint32_t d[NV][4], mn = ~0u, mx = 0;
    bool ok = true;
XS_UNROLL
    for (int q = 0; q < NV; q++)
      ok &= xs_prep<T, MASK>(t, r[q], m[q], d[q], mn, mx);
    const bool all = xs_all(ok);
    const uint32_t hits = xs_add<T, MASK, NV>(t, r, m, d, all, sb);
    /* A unit (no mask) in which every lane's rows missed its window, but
     * for under a quarter of them (the whole range: about one row in 85
     * hits a 24-binade window), sends the next 1, 2, 4, .. XS_BACK_MAX
     * units straight to the bins (xs_direct64: no window test, no keys),
     * the run doubling while such units follow; any other unit ends it.
     * Votes only (warp-uniform), so a warp's lanes take the same way. */
    if (!MASK && !all && xs_all_lanes(4 * hits < NV * X::VR)) {
      const uint32_t back = t.skip >> 8;
      const uint32_t run = back == 0 ? 1u
                         : 2 * back < XS_BACK_MAX ? 2 * back : XS_BACK_MAX;
      t.skip = run << 8 | run;
    } else {
      t.skip = 0;
    }
    /* Rows that missed the window but fit the one at their largest
     * (move_to's: [(b & ~7) - 8, + 24)), with no zero, subnormal, inf or
     * NaN, move it there: narrow data settles at its first unit. */
    const uint32_t bl = (mn >> 21) - 1, bh = (mx >> 21) - 1;
    const uint32_t lo2 = (bh & ~7u) >= 8 ? (bh & ~7u) - 8 : 0;
    if (!ok && mn <= mx && bl < X::EMAX - 1 && bh < X::EMAX - 1 &&
        bl >= (lo2 < X::LOMAX ? lo2 : X::LOMAX))
      t.move_to(bh, sb);
  }
}

/* One thread's rows of a launch over rows [0, n): vectors i0, i0 +
 * stride, ... (four in flight), then, for tail < n % VR, row
 * nvec * VR + tail (tail: the lane of block 0, else ~0u). */
template <typename T, bool MASK>
WVG_XHD void xs_rows(xs_thread<T> &t, const uint4 *__restrict__ data,
                     const typename xs_traits<T>::MV *__restrict__ mask,
                     uint64_t n, uint64_t i0, uint64_t stride, uint32_t tail,
                     uint32_t *sb)
{
  typedef xs_traits<T> X;
  typedef typename X::U U;
  const uint64_t nvec = n / X::VR;
  uint64_t i = i0;
  const typename X::MV none = {};  /* unused without a mask */
  if (i < nvec) {                 /* the window at the first row's binade */
    U r0[4];
    X::rows(data[i], r0);
    uint32_t e = X::expo(r0[0]);
    if (e - 1 < X::EMAX - 1) {
      if constexpr (X::BINS)
        t.w_move(e, sb);
      else
        t.move_to(e - 1, sb);
    }
  }
  for (; i + 3 * stride < nvec; i += 4 * stride) {
    U r[4][4];
    uint32_t m[4][4];
    uint4 v[4];
    typename X::MV mv[4] = {none, none, none, none};
XS_UNROLL
    for (int q = 0; q < 4; q++) {
      v[q] = data[i + q * stride];
      if (MASK)
        mv[q] = mask[i + q * stride];
    }
XS_UNROLL
    for (int q = 0; q < 4; q++) {
      X::rows(v[q], r[q]);
      X::sel(mv[q], m[q]);
    }
    xs_unit<T, MASK, 4>(t, r, m, sb);
  }
  for (; i < nvec; i += stride) {
    U r[1][4];
    uint32_t m[1][4];
    X::rows(data[i], r[0]);
    X::sel(MASK ? mask[i] : none, m[0]);
    xs_unit<T, MASK, 1>(t, r, m, sb);
  }
  /* The last n % VR rows, one per thread of block 0. */
  if (tail < (uint32_t)(n % X::VR)) {
    uint64_t row = nvec * X::VR + tail;
    U x = ((const U *)data)[row];
    uint32_t sel = MASK ? ((const uint32_t *)mask)[row] : 1u;
    if (MASK)
      t.cnt += sel != 0;
    if constexpr (X::BINS) {
      if (sel != 0)
        xs_row32(t, x, sb);
    } else if (sel != 0) {
      t.nz |= x ^ X::neg_zero();
      uint32_t d = X::expo(x) - t.lo1;
      if (d < t.lim)
        X::add(t.a, x, 1 << d, true);
      else
        xs_miss64(t, x, sb);
    }
  }
}

static_assert(WVG_BLOCK == 256, "xs_bins_out's bounds count 16 threads "
              "a part and 16 parts a bucket");

/* Float32's double bins at a block's end, part q < XS_BUCKETS * 16:
 * bucket h = q / 16 of the threads s, s + 16, ... (s = q % 16; db:
 * [bucket][thread]), each an exact integer I = D * 2^(157 - 16h) (h = 0:
 * D * 2^149) of units 2^(16h - 8) (bin 2h - 1; h = 0: bin 0), summed as
 * 32-bit low parts and signed high parts into the shared bins at k and
 * k + 4. */
WVG_XHD void xs_bins_out(const double *db, uint32_t q,
                         uint32_t *sb)
{
  typedef xs_traits<float> X;
  const uint32_t h = q >> 4, s = q & 15u;
  const double sc = xs_pow2(h != 0 ? 157 - 16 * (int)h : 149);
  unsigned long long lo = 0;
  long long hi = 0;
  for (uint32_t j = s; j < WVG_BLOCK; j += 16) {
    long long v = (long long)(db[h * WVG_BLOCK + j] * sc);
    lo += (unsigned long long)v & 0xffffffffull;
    hi += v >> 32;
  }
  const uint32_t k = h != 0 ? 2 * h - 1 : 0;
  if (lo != 0)
    xs_shared_add<X::NB>(sb, k, lo);
  if (hi != 0)
    xs_shared_add<X::NB>(sb, (hi < 0 ? (uint32_t)X::NB : 0u) + k + 4,
                         hi < 0 ? 0ull - (unsigned long long)hi
                                : (unsigned long long)hi);
}

/* A block's shared bin k (its positive half less its negative half) into
 * the result: the low 32 bits at bin k, the rest at k + 4. */
template <typename T>
WVG_XHD void xs_bin_out(const uint32_t *sb, uint32_t k, xresult *res)
{
  const uint32_t nb = xs_traits<T>::NB;
  long long s = (long long)(xs_shared_get<nb>(sb, k) -
                            xs_shared_get<nb>(sb, nb + k));
  if (s == 0)
    return;
  xs_atomic_add(&res->bins[k], (unsigned long long)(s & 0xffffffffll));
  if ((s >> 32) != 0)
    xs_atomic_add(&res->bins[k + 4], (unsigned long long)(s >> 32));
}

} /* namespace WVG_NS */

#endif
