/* gpu_xsum_acc.h - the per-thread accumulator of the exact float sum
 * (gpu_xsum.cu has the design and the bounds): the shared bins' adds,
 * the float traits and a thread's state (its window, its flushes);
 * gpu_xsum_rows.h takes rows through it.
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
#define XS_BACK_MAX 32u           /* float64: units straight to the bins
                                   * between two tries of the window, at
                                   * most (xs_unit) */

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
  uint32_t skip;                  /* float64: units left to go straight to
                                   * the bins (bits 0..7), and the last
                                   * such run's length (bits 8..15;
                                   * xs_unit): one register */
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
    skip = 0;
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

} /* namespace WVG_NS */

#endif
