/* gpu_xsum_acc.h - the per-thread accumulator of the exact float sum
 * (gpu_xsum.cu has the design and the bounds): the float traits, a
 * thread's windows, its misses, its float32 double bins and flushes.
 * Host and device code alike, so that tests/cuda/test_cuda_xsum.cu runs
 * the same arithmetic on the CPU against the reference (atomics become
 * plain additions there).
 */
#ifndef WV_GPU_XSUM_ACC_H
#define WV_GPU_XSUM_ACC_H

#include <string.h>

#include "workers/cuda/gpu_xsum.h"

#define WVG_XHD __host__ __device__ __forceinline__
/* Unrolled on the device (the rows stay in registers); gcc knows no such
 * pragma. */
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define XS_UNROLL _Pragma("unroll")
#else
#define XS_UNROLL
#endif

namespace WVG_NS {

/* *p += v: an atomic on the device, a plain addition on the host. */
WVG_XHD void xs_atomic_add(unsigned long long *p, unsigned long long v)
{
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  atomicAdd(p, v);
#else
  *p += v;
#endif
}

/* The shared bins, uint32_t sb[4 * NB]: slot i (bin k of the positive
 * half: i = k; of the negative half: i = NB + k) is an int64 kept as two
 * 32-bit words, its low word at sb[i] and its high word at sb[2 * NB + i],
 * so that the low words of neighbouring slots lie in neighbouring banks
 * (an int64 array would put every low word in an even bank: twice the
 * conflicts of a warp's scattered adds).  NVIDIA's shared-memory atomics
 * add 32 bits natively (a 64-bit add is a compare-and-swap loop): add the
 * low word, and the high word with the low add's carry where that is not
 * 0; every add's carry comes from the value it saw, so the pair is the
 * exact 64-bit sum (AMD's LDS adds 32 bits natively too).  On the host
 * (tests) the atomics are plain adds. */
WVG_XHD uint32_t xs_atomic_add32(uint32_t *p, uint32_t v)
{
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return atomicAdd(p, v);
#else
  uint32_t old = *p;
  *p = old + v;
  return old;
#endif
}

/* Slot i += v. */
template <uint32_t NB>
WVG_XHD void xs_shared_add(uint32_t *sb, uint32_t i, unsigned long long v)
{
  uint32_t lo = (uint32_t)v, hi = (uint32_t)(v >> 32);
  uint32_t old = xs_atomic_add32(&sb[i], lo);
  hi += (uint32_t)(old + lo < old);
  if (hi != 0)
    xs_atomic_add32(&sb[2 * NB + i], hi);
}

/* Slot i += a and slot i + 4 += c (a, c < 2^32): both adds in flight
 * before either carry is looked at. */
template <uint32_t NB>
WVG_XHD void xs_shared_add2(uint32_t *sb, uint32_t i, uint32_t a, uint32_t c)
{
  uint32_t o0 = xs_atomic_add32(&sb[i], a);
  uint32_t o1 = xs_atomic_add32(&sb[i + 4], c);
  if (o0 + a < o0)
    xs_atomic_add32(&sb[2 * NB + i], 1u);
  if (o1 + c < o1)
    xs_atomic_add32(&sb[2 * NB + i + 4], 1u);
}

/* Slot i's value (after the block's barrier). */
template <uint32_t NB>
WVG_XHD unsigned long long xs_shared_get(const uint32_t *sb, uint32_t i)
{
  return (unsigned long long)sb[i] |
         (unsigned long long)sb[2 * NB + i] << 32;
}

#define XS_WIN 24u                /* float64's window, in steps of b */
#define XS_WIN32 18u              /* float32's window, in binades */
#define XS_BLOCK_ROWS (1u << 19)  /* rows per block and launch, at most */
#define XS_BUCKETS 16u            /* float32 double bins a thread */
#define XS_BIN_ROWS (1u << 13)    /* rows a double bin holds exactly */

/* 2^k as a double, -1022 <= k <= 1023, from its bits (no library call,
 * no rounding mode, the same on host and device). */
WVG_XHD double xs_pow2(int k)
{
  unsigned long long u = (unsigned long long)(k + 1023) << 52;
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __longlong_as_double((long long)u);
#else
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
#endif
}

/* A double's bits (no rounding, the same on host and device). */
WVG_XHD unsigned long long xs_dbits(double d)
{
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return (unsigned long long)__double_as_longlong(d);
#else
  unsigned long long u;
  memcpy(&u, &d, sizeof u);
  return u;
#endif
}

#define XS_NEGZERO_D 0x8000000000000000ull   /* -0.0's bits */

/* ---- the float traits --------------------------------------------------- */

template <typename T> struct xs_traits;

/* MINB: the kernel's resident blocks an SM, at least (its launch bound,
 * the most without a spill: float32 3 on sm_90, where 4 spills, and 2
 * before it; float64 4). */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define XS_MINB_F32 2
#else
#define XS_MINB_F32 3
#endif
/* CAREFUL: float32's bins path looks at every row for a special (HIP:
 * its subnormals are special too); CUDA and the host look only in a
 * unit whose largest key says it holds an inf or NaN. */
#if defined(__HIP_DEVICE_COMPILE__)
#define XS_CAREFUL_F32 1
#else
#define XS_CAREFUL_F32 0
#endif
template <> struct xs_traits<float> {
  typedef uint32_t U;
  typedef uint4 MV;               /* the mask of one vector */
  enum : uint32_t { VR = 4, EMAX = 255, LOMAX = 232, NB = 34,
                    NG = WVG_XS_BINS_F32, BINS = 1,
                    MINB = XS_MINB_F32, CAREFUL = XS_CAREFUL_F32 };
  struct acc {
    long long s;
  };
  static WVG_XHD uint32_t expo(U x)
  {
    return (x >> 23) & 0xffu;
  }
  static WVG_XHD U neg_zero() { return 0x80000000u; }
  static WVG_XHD bool is_zero(U x) { return (x << 1) == 0; }
  static WVG_XHD bool frac_nonzero(U x)
  {
    return (x & 0x7fffffu) != 0;
  }
  static WVG_XHD bool negative(U x) { return (x >> 31) != 0; }
  /* S * 2^lo into the shared bins, k = lo / 8 (S: the window's sum w as
   * an integer, xs_thread::w_flush): |S| in 32-bit pieces at k, k + 4 of
   * the positive or negative half (slots k or NB + k on). */
  static WVG_XHD void flush(const acc &a, uint32_t *sb, uint32_t k)
  {
    unsigned long long m = a.s < 0 ? 0ull - (unsigned long long)a.s
                                   : (unsigned long long)a.s;
    k += a.s < 0 ? (uint32_t)NB : 0u;
    xs_shared_add<NB>(sb, k, m & 0xffffffffull);
    if ((m >> 32) != 0)
      xs_shared_add<NB>(sb, k + 4, m >> 32);
  }
  /* A row +-M * 2^b units built as a double, M * 2^(b - 149) (HIP's
   * subnormals, which its conversion may flush), into the thread's double
   * bin of bucket e / 16, bin[h * WVG_BLOCK]. */
  static WVG_XHD void miss(uint32_t *sb, double *bin, U x,
                           uint32_t b, bool normal)
  {
    (void)sb;
    int m = (int)((x & 0x7fffffu) | (normal ? 0x800000u : 0u));
    uint32_t h = normal ? (b + 1) >> 4 : 0u;
    bin[h * WVG_BLOCK] += (double)(negative(x) ? -m : m) *
                          xs_pow2((int)b - 149);
  }
  /* A row the bins' path leaves to xs_rare32: an inf or NaN, and on HIP
   * a subnormal too (CUDA converts subnormals exactly: as_double). */
  static WVG_XHD bool special(U x)
  {
#if defined(__HIP_DEVICE_COMPILE__)
    uint32_t ax = x & 0x7fffffffu;
    return ax - 1u < 0x7fffffu || ax >= 0x7f800000u;
#else
    return expo(x) == EMAX;
#endif
  }
  /* A finite row's exact value as a double.  CUDA: the PTX conversion
   * without .ftz, which keeps subnormals whatever the build's
   * flush-to-zero flags; HIP: a normal row or a zero (its conversion
   * follows the device's denormal mode, so special sends subnormals to
   * xs_rare32, which builds them from M and b); the host: C's conversion
   * (the tests set no DAZ). */
  static WVG_XHD double as_double(U x)
  {
#if defined(__CUDA_ARCH__)
    double d;
    asm("cvt.f64.f32 %0, %1;" : "=d"(d) : "f"(__uint_as_float(x)));
    return d;
#elif defined(__HIP_DEVICE_COMPILE__)
    return (double)__uint_as_float(x);
#else
    float f;
    memcpy(&f, &x, sizeof f);
    return (double)f;
#endif
  }
  static WVG_XHD void rows(uint4 v, U r[VR])
  {
    r[0] = v.x; r[1] = v.y; r[2] = v.z; r[3] = v.w;
  }
  static WVG_XHD void sel(MV m, uint32_t s[VR])
  {
    s[0] = m.x; s[1] = m.y; s[2] = m.z; s[3] = m.w;
  }
};

template <> struct xs_traits<double> {
  typedef unsigned long long U;
  typedef uint2 MV;
  enum : uint32_t { VR = 2, EMAX = 2047, LOMAX = 2024, NB = 262,
                    NG = WVG_XS_BINS_F64, BINS = 0, MINB = 4 };
  struct acc {
    long long l, h;               /* S = l + h * 2^26 */
  };
  static WVG_XHD uint32_t expo(U x)
  {
    return (uint32_t)(x >> 52) & 0x7ffu;
  }
  static WVG_XHD U neg_zero() { return 1ull << 63; }
  static WVG_XHD bool is_zero(U x) { return (x << 1) == 0; }
  static WVG_XHD bool frac_nonzero(U x)
  {
    return (x & 0xfffffffffffffull) != 0;
  }
  static WVG_XHD bool negative(U x) { return (x >> 63) != 0; }
  static WVG_XHD void add(acc &a, U x, int p, bool normal)
  {
    U m = (x & 0xfffffffffffffull) | (normal ? 1ull << 52 : 0ull);
    int sp = (int)(((uint32_t)((int)(x >> 32) >> 31) | 1u) * (uint32_t)p);
    a.l += (long long)(int)((uint32_t)m & 0x3ffffffu) * sp;
    a.h += (long long)(int)(uint32_t)(m >> 26) * sp;
  }
  static WVG_XHD bool empty(const acc &a)
  {
    return (a.l | a.h) == 0;
  }
  static WVG_XHD void clear(acc &a) { a.l = a.h = 0; }
  /* S as 128 bits, hi:lo = l + h * 2^26; |S| cut into 32-bit pieces at
   * k, k + 4, k + 8 of the positive or negative half. */
  static WVG_XHD void flush(const acc &a, uint32_t *sb, uint32_t k)
  {
    unsigned long long lo = (unsigned long long)a.l +
                            ((unsigned long long)a.h << 26);
    long long hi = (a.l >> 63) + (a.h >> 38) +
                   (lo < (unsigned long long)a.l ? 1 : 0);
    if (hi < 0) {                 /* |S|: ~S + 1 over the two words */
      lo = ~lo + 1;
      hi = ~hi + (lo == 0 ? 1 : 0);
      k += NB;
    }
    if ((lo & 0xffffffffull) != 0)
      xs_shared_add<NB>(sb, k, lo & 0xffffffffull);
    if ((lo >> 32) != 0)
      xs_shared_add<NB>(sb, k + 4, lo >> 32);
    if (hi != 0)
      xs_shared_add<NB>(sb, k + 8, (unsigned long long)hi);
  }
  /* One row: M << (b % 8) < 2^61 in two pieces at b / 8 and b / 8 + 4,
   * the two atomics in flight together (xs_shared_add2). */
  static WVG_XHD void direct(uint32_t *sb, U x, uint32_t b,
                             bool normal)
  {
    U m = ((x & 0xfffffffffffffull) | (normal ? 1ull << 52 : 0ull))
          << (b & 7);
    xs_shared_add2<NB>(sb, (b >> 3) + (negative(x) ? (uint32_t)NB : 0u),
                       (uint32_t)m, (uint32_t)(m >> 32));
  }
  static WVG_XHD void rows(uint4 v, U r[VR])
  {
    r[0] = ((U)v.y << 32) | v.x;
    r[1] = ((U)v.w << 32) | v.z;
  }
  static WVG_XHD void sel(MV m, uint32_t s[VR])
  {
    s[0] = m.x; s[1] = m.y;
  }
};

/* The grid of a launch over n rows: a vector per thread up to `blocks`
 * (one wave of resident blocks), and at least n / 2^19 blocks (the
 * bounds), then in whole waves (blocks do equal shares: a partial last
 * wave would leave most of the GPU idle for its turn). */
template <typename T> WVG_XHD uint64_t xs_grid(uint64_t n, unsigned blocks)
{
  uint64_t want = (n / xs_traits<T>::VR + WVG_BLOCK - 1) / WVG_BLOCK;
  uint64_t least = (n + XS_BLOCK_ROWS - 1) / XS_BLOCK_ROWS;
  if (want > blocks)
    want = blocks;
  if (want < least)
    want = (least + blocks - 1) / blocks * blocks;
  return want < 1 ? 1 : want;
}

/* ---- one thread's state ------------------------------------------------- */

template <typename T> struct xs_thread {
  typedef xs_traits<T> X;
  typename X::acc a;               /* float64: the window's sum S */
  uint32_t lo;                    /* float64: the window [lo, lo + 24) */
  uint32_t lo1, lim;              /* float64's fast test: e - lo1 < lim */
  typename X::U nz;               /* nonzero: a row other than -0.0 */
  uint32_t flags;                 /* WV_XSUM_NAN, _PINF, _NINF */
  uint32_t cnt;                   /* selected rows (masked jobs) */
  double *bin;                    /* float32: bucket h at bin[h * BLOCK] */
  double w;                       /* float32: the window's sum (-0.0: none
                                   * but -0.0 rows since it was flushed) */
  uint32_t wl, wh;                /* float32: the window, keys [wl, wh) */

  /* An empty state; bin: the thread's first double bin (float32; set to
   * -0.0 by the caller), else NULL. */
  WVG_XHD void init(double *b0)
  {
    bin = b0;
    w = -0.0;
    wl = wh = 0;                  /* float32: no window (no key < 0) */
    a = typename X::acc();
    lo = 0;                       /* a window at the bottom to start */
    lo1 = 1;
    lim = XS_WIN;
    nz = 0;
    flags = 0;
    cnt = 0;
  }

  /* The thread's end: S (float32: w) into the shared bins; float32 reads
   * "a row other than -0.0" off w and its bins (below). */
  WVG_XHD void end(uint32_t *sb)
  {
    if constexpr (X::BINS) {
      w_flush(sb);
      for (uint32_t h = 0; h < XS_BUCKETS; h++)
        nz |= xs_dbits(bin[h * WVG_BLOCK]) != XS_NEGZERO_D;
    } else if (!X::empty(a)) {
      X::flush(a, sb, lo >> 3);
    }
  }

  /* Float32: w into the shared bins, and w back to -0.0.  A sum of rows
   * of binades elo .. elo + 17 is a multiple of their grain 2^(elo - 1)
   * units below 2^53 of them (gpu_xsum.cu), so I = w * 2^(149 - lo8),
   * lo8 = (elo - 1) & ~7, is an exact integer below 2^60 of units
   * 2^lo8: S at bin lo8 / 8.  -0.0 and +0.0 (the only zeros a sum of
   * rows other than -0.0 comes to) add nothing; +0.0 and any other value
   * say that a row other than -0.0 was seen (nz). */
  WVG_XHD void w_flush(uint32_t *sb)
  {
    if (xs_dbits(w) == XS_NEGZERO_D)
      return;
    nz = 1;
    if (w != 0.0) {
      const uint32_t lo8 = ((wl >> 24) - 1) & ~7u;
      typename X::acc s;
      s.s = (long long)(w * xs_pow2(149 - (int)lo8));
      X::flush(s, sb, lo8 >> 3);
    }
    w = -0.0;
  }

  /* An inf or NaN row: its flag (X::special says which rows are rare). */
  WVG_XHD void flag_inf_nan(typename X::U x)
  {
    flags |= X::frac_nonzero(x) ? WV_XSUM_NAN
           : X::negative(x) ? WV_XSUM_NINF : WV_XSUM_PINF;
  }

  /* Float32: flush w and move the window to the XS_WIN32 binades whose
   * top is one above binade e (the rows' largest, with one binade of
   * room above it), clamped to the finite binades 1 .. 254. */
  WVG_XHD void w_move(uint32_t e, uint32_t *sb)
  {
    w_flush(sb);
    const uint32_t lo = xs_win_low(e);
    wl = lo << 24;
    wh = (lo + XS_WIN32) << 24;
  }

  /* Float32: the window's low binade for rows whose largest binade is e. */
  static WVG_XHD uint32_t xs_win_low(uint32_t e)
  {
    const uint32_t top = e + 1 < X::EMAX - 1 ? e + 1 : X::EMAX - 1;
    return top >= XS_WIN32 ? top - (XS_WIN32 - 1) : 1u;
  }

  /* Flush S and move the window to the block of b. */
  WVG_XHD void move_to(uint32_t b, uint32_t *sb)
  {
    if (!X::empty(a))
      X::flush(a, sb, lo >> 3);
    X::clear(a);
    uint32_t l = (b & ~7u) >= 8 ? (b & ~7u) - 8 : 0;
    lo = l < X::LOMAX ? l : X::LOMAX;
    lo1 = lo + 1;
    lim = X::EMAX - lo1 < XS_WIN ? X::EMAX - lo1 : XS_WIN;
  }
};

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
 * row, no window moved within the unit: d stays true). */
template <typename T, bool MASK, int NV>
WVG_XHD void xs_add(xs_thread<T> &t, typename xs_traits<T>::U (*r)[4],
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
    return;
  }
XS_UNROLL
  for (int v = 0; v < NV; v++)
XS_UNROLL
    for (uint32_t c = 0; c < X::VR; c++) {
      /* An unselected row is -0.0 by now: xs_miss64 adds nothing. */
      if (d[v][c] < t.lim)
        X::add(t.a, r[v][c], 1 << d[v][c], true);
      else
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
    uint32_t d[NV][4], mn = ~0u, mx = 0;
    bool ok = true;
XS_UNROLL
    for (int q = 0; q < NV; q++)
      ok &= xs_prep<T, MASK>(t, r[q], m[q], d[q], mn, mx);
    xs_add<T, MASK, NV>(t, r, m, d, xs_all(ok), sb);
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
