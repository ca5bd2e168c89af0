/* cpu_xsum.c - the CPU backend's fsum (issue 39; docs/reduction.md
 * "fsum"): the exact sum of float32 / float64 rows into core/xsum.h's
 * accumulator.
 *
 * Each pool worker owns a wv_cpu_xacc (its wv_xsum and the partial sums
 * below); an item's rows go to its worker's, and the workers' sums merge
 * in any order at the end (the answer has no order).
 *
 * float32 rows (float64: below) first try the double way, in blocks of
 * n <= 1024 rows: each row, converted to double (exact), goes to one of 32
 * double lanes (row i to lane i % 32), the lowest nonzero and highest
 * |row| kept beside; at the block's end the lanes are added in a tree
 * and the one double goes into X.  This is exact when the block has no
 * NaN, inf or subnormal row (under DAZ, a mode some -ffast-math libraries
 * set for a whole process, the conversion reads a subnormal as 0) and el,
 * eh (the lowest and highest biased exponent of its nonzero selected
 * rows) have eh - el <= 19 = CX_DSPAN; else the block's sums are dropped
 * and its rows go the ways below.  Proof: let u = 2^(el - 150).  A row of
 * exponent e is (2^23 + f) * 2^(e - 150), a whole multiple of u, and
 * |row| < 2^(e - 126) <=
 * 2^24 * 2^(eh - el) * u.  Every value the block's additions make (a
 * lane's partial sum, a node of the tree) is a sum of at most n <= 2^10
 * of its rows: a whole multiple of u under 2^(34 + eh - el) * u <=
 * 2^53 * u, a double exactly (53 significant bits; nonzero multiples of
 * u >= 2^-149 are no double subnormals, and nothing nears overflow).  An
 * IEEE addition whose exact result is a double returns it, so no addition
 * rounds, in any order, and the block's double is its rows' exact sum, a
 * whole number of 2^-149.  One more binade (eh - el = 20) breaks it: 1023
 * rows at the top of e + 20 and an odd one at e sum past 2^53 u, odd
 * (conformance_fsum's "span-edge" case).
 *
 * float64 rows take the same double way with two lanes a row: h, the row
 * with its significand's low 26 bits cleared, and x - h (exact: the low
 * bits).  With u = 2^(el - 1075), a row of exponent e is a multiple of
 * 2^(e - 1075) and under 2^(e - 1022) = 2^53 * 2^(e - 1075), so h is a
 * multiple of 2^26 u under 2^(27 + eh - el) * 2^26 u and x - h a
 * multiple of u under 2^(26 + eh - el) u.  Sums of at most 2^10 of them
 * stay exact when 10 + 27 + eh - el <= 53: eh - el <= 16 = CX_DSPAN64
 * (again one more binade rounds, and "span-edge" fails).  It also needs
 * el >= 54, so that every nonzero value met is at least u >= 2^-1021, no
 * double subnormal (which FTZ / DAZ would flush), and eh <= 2035: 2^10
 * rows under 2^(eh - 1022) stay under 2^1024 (the case's rows at the
 * largest finite value fail without it).
 *
 * The rest go in blocks of 256, each one of three ways, all exact:
 *
 *  - float32, no NaN, inf or subnormal in the block and the rows' double
 *    exponents' sixteenths (h = exponent / 16 of the row as a double)
 *    spanning at most 4 values (narrow data): each row, converted to
 *    double (exact), is added to the double lane of its h, 8 lanes side
 *    by side.  The rows of one h are multiples of 2^(16h - 1023 - 23) (a
 *    float32 has 24 significant bits) and under 2^(16h - 1023 + 16),
 *    2^39 ulps apart; a lane
 *    takes at most 8192 rows an item (2^16 rows, 8 lanes), so its sum
 *    stays under 2^52 of those units and every double addition is exact.
 *    At the item's end each lane is a whole number of 2^-149 and goes into
 *    X with wv_xsum_add_i64;
 *  - float64 blocks whose bins b / 16 span at most 4 values: the row's
 *    significand M (53 bits) is cut into its low 26 bits and its high 27,
 *    each shifted left by b % 16 and added to the int64 lane of b / 16
 *    (the high part's lane weighs 2^26 more).  One row adds under 2^42 to
 *    a lane, 8192 rows an item under 2^55, the 8 lanes' sum under 2^58;
 *  - any other block (and a run's tail): the scatter way, to one of
 *    eight tables of bins (row j of each eight to table j, so that runs
 *    of rows of one exponent do not wait on one memory location).  A
 *    float32 row adds +-M (under 2^24) to bin e; a float64 row its two
 *    parts above to bins b / 16 (under 2^42).  The bins are folded into X
 *    before R rows have gone in since the last fold, R = 2^24 (2^21), so
 *    a bin, or one index's sum over the tables, stays under 2^51 (2^63).
 *    After a block fails the vertical way's range test the next 1, 2, 4,
 *    .. 64 go straight to the scatter way (as for the double way below).
 *
 * Here M = f | implicit bit and b = e ? e - 1 : 0 for a row of biased
 * exponent e (xsum.h): the row is M * 2^b units.  The float64 high parts
 * of index 127 sit at bit 2058, in X's carry room: wv_xsum_add_i64 adds
 * there modulo X's width, which is exact since their total is a sum of
 * rows, which fits X.
 *
 * NaN and +-inf rows add nothing to the sums; an OR says one was seen,
 * and then the run is read again, only for the flags (rare).  An OR of
 * (row ^ -0.0) says a selected row other than -0.0 (WV_XSUM_NOT_NEGZERO).
 * A masked row adds 0 and sets nothing.  The vector code is GCC's vector
 * extensions (the double way: plain arrays of 32 lanes, which GCC
 * vectorizes), built for x86-64-v4, AVX2 and the baseline
 * (target_clones).
 */
#include <stdlib.h>
#include <string.h>

#include "core/base.h"
#include "core/xsum.h"
#include "workers/cpu/cpu.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_THREAD__)
#define CX_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define CX_CLONES
#endif

#define CX_TABLES 8
#define CX_BINS64 128     /* b / 16 for b < 2046 */
#define CX_BINS 256       /* bins a table: float64's 2 x 128, float32's e */
#define CX_TABLE_AT {0, CX_BINS, 2 * CX_BINS, 3 * CX_BINS, 4 * CX_BINS, \
                     5 * CX_BINS, 6 * CX_BINS, 7 * CX_BINS}  /* table j */
#define CX_FOLD32 (1u << 24)
#define CX_FOLD64 (1u << 21)
#define CX_BLOCK 256      /* rows whose bin range picks the way */
#define CX_VERT 4         /* the vertical way for up to 4 indexes */
#define CX_DBLOCK 1024    /* float32 rows a block of the double way */
#define CX_DSPAN 19       /* its widest span of exponents: 29 - 10 */
#define CX_DSPAN64 16     /* float64's: 26 - 10 */
#define CX_DTOP64 2035    /* float64's highest exponent (no overflow) */
#define CX_AHEAD 16384    /* bytes it prefetches ahead */

typedef uint32_t cx_u8 __attribute__((vector_size(32)));
typedef int32_t cx_i8 __attribute__((vector_size(32)));
typedef int64_t cx_l8 __attribute__((vector_size(64)));
typedef uint64_t cx_q8 __attribute__((vector_size(64)));
typedef float cx_f8 __attribute__((vector_size(32)));
typedef double cx_d8 __attribute__((vector_size(64)));
#define CX_INLINE static inline __attribute__((always_inline))
/* The vector helpers are always inlined: no vector crosses a call, so
 * GCC's note that passing one without AVX changes the ABI is moot. */
#pragma GCC diagnostic ignored "-Wpsabi"

struct wv_cpu_xacc {
  int64_t bin[CX_TABLES][CX_BINS];  /* float64: low, then high */
  cx_l8 vacc[2 * CX_BINS64];  /* the vertical way: 8 lanes per index */
  cx_d8 facc[128];    /* float32's vertical way: by the double exponent */
  unsigned vlo, vhi;  /* the indexes of vacc in use: [vlo, vhi] */
  unsigned flo, fhi;  /* of facc */
  unsigned dskip, dback;  /* blocks to pass the double way by */
  unsigned vskip, vback;  /* and the vertical way */
  uint64_t since;     /* rows binned since the last fold */
  uint64_t special;   /* a NaN or inf row was seen in the current run */
  uint64_t notnz;     /* a selected row other than -0.0 */
  int scattered;      /* the bins hold rows since the last fold */
  wv_xsum x;
} __attribute__((aligned(64)));

static uint32_t cx_ld32(const unsigned char *p, size_t i)
{
  uint32_t x;
  memcpy(&x, p + 4 * i, 4);
  return x;
}

static uint64_t cx_ld64(const unsigned char *p, size_t i)
{
  uint64_t x;
  memcpy(&x, p + 8 * i, 8);
  return x;
}

/* Lane-wise a < b ? a : b and the other way, as bit selects. */
CX_INLINE cx_u8 cx_min(cx_u8 a, cx_u8 b)
{
  cx_u8 lt = (cx_u8)(a < b);
  return (a & lt) | (b & ~lt);
}

CX_INLINE cx_u8 cx_max(cx_u8 a, cx_u8 b)
{
  cx_u8 lt = (cx_u8)(a < b);
  return (b & lt) | (a & ~lt);
}

/* Eight mask rows at m (NULL: all selected) as all ones / zero lanes. */
CX_INLINE cx_u8 cx_sel(const unsigned char *m, size_t i)
{
  if (m == NULL)
    return (cx_u8){0} - 1;
  cx_u8 v;
  memcpy(&v, m + 4 * i, sizeof v);
  return (cx_u8)(v != 0);
}

/* The smallest and largest bin index (b / 16) of n rows at p, n a
 * multiple of 8 (rows4: float32). */
CX_INLINE void cx_range(const unsigned char *p, size_t n, int f64,
                        unsigned *lo, unsigned *hi)
{
  cx_u8 mn = (cx_u8){0} + 0xffffu, mx = (cx_u8){0};
  for (size_t i = 0; i < n; i += 8) {
    cx_u8 e;
    if (f64) {
      cx_q8 x;
      __builtin_prefetch((const void *)((uintptr_t)p + 8 * i + CX_AHEAD));
      memcpy(&x, p + 8 * i, sizeof x);
      e = __builtin_convertvector((x >> 52) & 0x7ff, cx_u8);
    } else {
      cx_u8 x;
      memcpy(&x, p + 4 * i, sizeof x);
      e = (x >> 23) & 0xff;
    }
    cx_u8 g = (e + (cx_u8)(e != 0)) >> 4;  /* b / 16: b = e - (e != 0) */
    mn = cx_min(mn, g);
    mx = cx_max(mx, g);
  }
  unsigned a = mn[0], b = mx[0];
  for (unsigned j = 1; j < 8; j++) {
    a = mn[j] < a ? mn[j] : a;
    b = mx[j] > b ? mx[j] : b;
  }
  *lo = a;
  *hi = b;
}

/* Whether the n float32 rows at p (a multiple of 8) have no NaN, inf or
 * subnormal (as in the double way, top) and their double exponents'
 * sixteenths span at most CX_VERT values, [*lo, *hi]: a float32 of
 * exponent e is a double of exponent e + 896 = e + 56 * 16; zeros add
 * nothing (min(|row| - 1) passes them by). */
CX_INLINE int cx_range32(const unsigned char *p, size_t n, unsigned *lo,
                         unsigned *hi)
{
  /* four chains of min / max, so that no one waits on the last */
  cx_u8 mn[4], mx[4];
  for (unsigned c = 0; c < 4; c++) {
    mn[c] = (cx_u8){0} - 1;
    mx[c] = (cx_u8){0};
  }
  for (size_t i = 0; i < n; i += 32)
    for (unsigned c = 0; c < 4; c++) {
      cx_u8 x;
      memcpy(&x, p + 4 * (i + 8 * c), sizeof x);
      x &= 0x7fffffffu;
      mn[c] = cx_min(mn[c], x - 1);
      mx[c] = cx_max(mx[c], x);
    }
  mn[0] = cx_min(cx_min(mn[0], mn[1]), cx_min(mn[2], mn[3]));
  mx[0] = cx_max(cx_max(mx[0], mx[1]), cx_max(mx[2], mx[3]));
  uint32_t a = mn[0][0], b = mx[0][0];
  for (unsigned j = 1; j < 8; j++) {
    a = mn[0][j] < a ? mn[0][j] : a;
    b = mx[0][j] > b ? mx[0][j] : b;
  }
  if (b >= 0x7f800000u || a + 1 < 0x00800000u)
    return 0;  /* NaN, inf, a subnormal row or only zeros */
  *lo = ((a + 1) >> 27) + 56;
  *hi = (b >> 27) + 56;
  return *hi - *lo < CX_VERT;
}

/* n float32 rows (a multiple of 8), none NaN or inf, whose rows' double
 * exponents' sixteenths lie in [lo, lo + 3], into the double lanes acc
 * (index: the sixteenth; float32 rows are exact as doubles, and each
 * lane's sum stays exact: see the top). */
CX_INLINE void cx_fvert32n(cx_d8 *acc, const unsigned char *p,
                           const unsigned char *m, size_t n, unsigned lo,
                           unsigned ng, cx_u8 *nz, cx_u8 *cnt)
{
  cx_d8 r0 = {0}, r1 = {0}, r2 = {0}, r3 = {0};
  for (size_t i = 0; i < n; i += 8) {
    cx_u8 x, sel = cx_sel(m, i);
    memcpy(&x, p + 4 * i, sizeof x);
    cx_f8 f = (cx_f8)(x & sel);  /* an unselected row adds +0.0 */
    cx_d8 d = __builtin_convertvector(f, cx_d8);
    cx_l8 h = (((cx_l8)d >> 56) & 0x7f) - (int64_t)lo;
    r0 += (cx_d8)((cx_l8)d & (h == 0));
    if (ng > 1)
      r1 += (cx_d8)((cx_l8)d & (h == 1));
    if (ng > 2)
      r2 += (cx_d8)((cx_l8)d & (h == 2));
    if (ng > 3)
      r3 += (cx_d8)((cx_l8)d & (h == 3));
    *nz |= (x ^ 0x80000000u) & sel;
    *cnt -= sel;
  }
  cx_d8 *r[4] = {&r0, &r1, &r2, &r3};
  for (unsigned k = 0; k < ng; k++)
    acc[lo + k] += *r[k];
}

/* cx_fvert32n with the number of indexes a constant in each copy. */
CX_INLINE void cx_fvert32(cx_d8 *acc, const unsigned char *p,
                          const unsigned char *m, size_t n, unsigned lo,
                          unsigned hi, cx_u8 *nz, cx_u8 *cnt)
{
  switch (hi - lo) {
  case 0: cx_fvert32n(acc, p, m, n, lo, 1, nz, cnt); break;
  case 1: cx_fvert32n(acc, p, m, n, lo, 2, nz, cnt); break;
  case 2: cx_fvert32n(acc, p, m, n, lo, 3, nz, cnt); break;
  default: cx_fvert32n(acc, p, m, n, lo, 4, nz, cnt); break;
  }
}

/* Eight float64 rows at p, selected by sel: their two parts (the top:
 * +-(M mod 2^26) << b % 16 and +-(M >> 26) << b % 16; 0 for a row not
 * selected, inf or NaN) in *vl and *vh, the run's flags and count
 * updated; returns each row's b / 16. */
CX_INLINE cx_q8 cx_parts64(const unsigned char *p, cx_u8 sel, cx_l8 *vl,
                           cx_l8 *vh, cx_u8 *sp, cx_u8 *nz, cx_u8 *cnt)
{
  cx_q8 x;
  memcpy(&x, p, sizeof x);
  cx_q8 e = (x >> 52) & 0x7ff, norm = (cx_q8)(e != 0);
  cx_q8 spm = (cx_q8)(e == 0x7ff), b = e + norm;  /* norm: 0 or -1 */
  cx_q8 sel8 = (cx_q8)__builtin_convertvector((cx_i8)sel, cx_l8);
  cx_q8 mm = (x & 0xfffffffffffffull) | (norm & (1ull << 52));
  cx_l8 s = (cx_l8)x >> 63, keep = (cx_l8)(sel8 & ~spm);
  cx_l8 tl = (cx_l8)((mm & 0x3ffffff) << (b & 15));
  cx_l8 th = (cx_l8)((mm >> 26) << (b & 15));
  *vl = ((tl ^ s) - s) & keep;
  *vh = ((th ^ s) - s) & keep;
  *sp |= (cx_u8)__builtin_convertvector((cx_l8)(spm & sel8), cx_i8);
  *nz |= (cx_u8)__builtin_convertvector(
      (cx_l8)(((x ^ 0x8000000000000000ull) & sel8) != 0), cx_i8);
  *cnt -= sel;
  return b >> 4;
}

/* The same for float64 rows: acc[k] the low parts, acc[CX_BINS64 + k]
 * the high ones. */
CX_INLINE void cx_vert64(cx_l8 *acc, const unsigned char *p,
                         const unsigned char *m, size_t n, unsigned lo,
                         unsigned hi, cx_u8 *sp, cx_u8 *nz, cx_u8 *cnt)
{
  cx_l8 l0 = {0}, l1 = {0}, l2 = {0}, l3 = {0};
  cx_l8 h0 = {0}, h1 = {0}, h2 = {0}, h3 = {0};
  for (size_t i = 0; i < n; i += 8) {
    cx_l8 vl, vh;
    cx_l8 g = (cx_l8)cx_parts64(p + 8 * i, cx_sel(m, i), &vl, &vh, sp, nz,
                                cnt) - (int64_t)lo;
    cx_l8 i0 = g == 0, i1 = g == 1, i2 = g == 2, i3 = g == 3;
    l0 += vl & i0;
    h0 += vh & i0;
    l1 += vl & i1;
    h1 += vh & i1;
    l2 += vl & i2;
    h2 += vh & i2;
    l3 += vl & i3;
    h3 += vh & i3;
  }
  cx_l8 *r[8] = {&l0, &l1, &l2, &l3, &h0, &h1, &h2, &h3};
  for (unsigned k = lo; k <= hi; k++) {
    acc[k] += *r[k - lo];
    acc[CX_BINS64 + k] += *r[4 + k - lo];
  }
}

/* Lane sums of the vertical accumulators, into the run's flags. */
CX_INLINE uint64_t cx_lanes(wv_cpu_xacc *a, cx_u8 sp, cx_u8 nz, cx_u8 cnt)
{
  uint64_t c = 0;
  for (unsigned j = 0; j < 8; j++) {
    a->special |= sp[j];
    a->notnz |= nz[j];
    c += cnt[j];
  }
  return c;
}

/* n float32 rows at p (mask m, or NULL) into the bins (the scatter
 * way: any exponents); returns the rows selected.  Values and indexes
 * are made eight rows at a time in vectors: a row then costs a load and
 * an addition to memory. */
CX_INLINE uint64_t cx_scat32(wv_cpu_xacc *a, const unsigned char *p,
                             const unsigned char *m, size_t n)
{
  const cx_u8 table = CX_TABLE_AT;
  int64_t *bin = &a->bin[0][0];
  cx_u8 sp = {0}, nz = {0}, cnt = {0};
  size_t i = 0;
  for (; i + CX_TABLES <= n; i += CX_TABLES) {
    cx_u8 x, sel = cx_sel(m, i);
    memcpy(&x, p + 4 * i, sizeof x);
    cx_u8 e = (x >> 23) & 0xff, spm = (cx_u8)(e == 0xff);
    cx_i8 s = (cx_i8)x >> 31;
    cx_i8 mm = (cx_i8)((x & 0x7fffffu) | ((cx_u8)(e != 0) & 0x800000u));
    cx_u8 v = (cx_u8)((mm ^ s) - s) & sel & ~spm;
    cx_u8 ix = e + table;
    int32_t vs[CX_TABLES];
    uint32_t is[CX_TABLES];
    memcpy(vs, &v, sizeof v);
    memcpy(is, &ix, sizeof ix);
    for (unsigned j = 0; j < CX_TABLES; j++)
      bin[is[j]] += vs[j];
    sp |= spm & sel;
    nz |= (x ^ 0x80000000u) & sel;
    cnt -= sel;
  }
  uint64_t count = cx_lanes(a, sp, nz, cnt);
  for (; i < n; i++)  /* the last few rows, the reference's way */
    if (m == NULL || cx_ld32(m, i) != 0) {
      wv_xsum_add_row(&a->x, cx_ld32(p, i));
      count++;
    }
  a->scattered = 1;
  return count;
}

/* The same for float64 rows: two parts (the top) to bins b / 16 + 0, 128. */
CX_INLINE uint64_t cx_scat64(wv_cpu_xacc *a, const unsigned char *p,
                             const unsigned char *m, size_t n)
{
  const cx_q8 table = CX_TABLE_AT;
  int64_t *bin = &a->bin[0][0];
  cx_u8 sp = {0}, nz = {0}, cnt = {0};
  size_t i = 0;
  for (; i + CX_TABLES <= n; i += CX_TABLES) {
    cx_l8 vl, vh;
    cx_q8 g = cx_parts64(p + 8 * i, cx_sel(m, i), &vl, &vh, &sp, &nz, &cnt);
    cx_u8 ix = __builtin_convertvector(g + table, cx_u8);
    int64_t ls[CX_TABLES], hs[CX_TABLES];
    uint32_t is[CX_TABLES];
    memcpy(ls, &vl, sizeof vl);
    memcpy(hs, &vh, sizeof vh);
    memcpy(is, &ix, sizeof ix);
    for (unsigned j = 0; j < CX_TABLES; j++) {
      bin[is[j]] += ls[j];
      bin[is[j] + CX_BINS64] += hs[j];
    }
  }
  uint64_t count = cx_lanes(a, sp, nz, cnt);
  for (; i < n; i++)
    if (m == NULL || cx_ld32(m, i) != 0) {
      wv_xsum_add_row(&a->x, cx_ld64(p, i));
      count++;
    }
  a->scattered = 1;
  return count;
}

/* A hint to fetch the 128 bytes CX_AHEAD past p + at (past the rows'
 * end it is only a hint: a prefetch does not fault).  Without it the
 * double way read memory at about 0.6x of a plain loop's speed (thread
 * CPU time, this VM), with it about 0.9x. */
CX_INLINE void cx_prefetch(const unsigned char *p, size_t at)
{
  uintptr_t q = (uintptr_t)p + at + CX_AHEAD;
  __builtin_prefetch((const void *)q);
  __builtin_prefetch((const void *)(q + 64));
}

/* X += d, a whole number of X's units: d = +-M * 2^(E - 1075) (E = 0: a
 * subnormal, +-M * 2^-1074) is M * 2^(E - 1) units of 2^-1074 (E = 0:
 * M), M * 2^(E - 926) of 2^-149 (M shifted right, exactly, if E < 926). */
static void cx_add_double(wv_xsum *x, double d, int f64)
{
  uint64_t bits;
  memcpy(&bits, &d, 8);
  uint64_t e = (bits >> 52) & 0x7ff, mm = bits & 0xfffffffffffffull;
  if (e == 0 && mm == 0)
    return;  /* +-0.0 */
  mm |= e ? 1ull << 52 : 0;
  int sh = f64 ? (e ? (int)e - 1 : 0) : (int)e - 926;
  int64_t v = (int64_t)(sh < 0 ? mm >> -sh : mm);
  wv_xsum_add_i64(x, bits >> 63 ? -v : v, sh < 0 ? 0 : (unsigned)sh);
}

/* The double way (float32): n rows at p (mask m, or NULL), n a multiple
 * of 32 and at most CX_DBLOCK, summed in 32 double lanes as they come,
 * the lowest and highest |row| beside.  If no row is NaN or inf and the
 * exponents span at most CX_DSPAN (the bound at the top), every addition
 * was exact: the lanes' total goes into X, the flags and *count are set,
 * and it returns 1.  Else it returns 0 having changed nothing, and the
 * caller takes the rows another way. */
CX_INLINE int cx_dbl32(wv_cpu_xacc *a, const unsigned char *p,
                       const unsigned char *m, int masked, size_t n,
                       uint64_t *count)
{
  /* lane j takes rows j, j + 32, ...: plain arrays, which GCC vectorizes
   * better here than its vector types (one vcvtps2pd a 16 rows) */
  double s[32] = {0};
  uint32_t mn[32], mx[32] = {0}, nz[32] = {0}, cnt[32] = {0};
  for (unsigned j = 0; j < 32; j++)
    mn[j] = ~0u;
  for (size_t i = 0; i < n; i += 32) {
    cx_prefetch(p, 4 * i);
    if (masked)
      cx_prefetch(m, 4 * i);
    for (unsigned j = 0; j < 32; j++) {
      uint32_t x = cx_ld32(p, i + j), sel = ~0u;
      if (masked) {
        /* all ones where the mask row is nonzero, with no compare: GCC
         * then loads rows unmasked (a masked load waits on the mask) */
        uint32_t k = cx_ld32(m, i + j);
        sel = (uint32_t)((int32_t)(k | (0u - k)) >> 31);
      }
      x &= sel;  /* an unselected row adds +0.0 and sets nothing */
      /* |row| - 1: a zero row wraps to the top and is no lowest */
      uint32_t ab = x & 0x7fffffffu, l = ab - 1;
      mn[j] = l < mn[j] ? l : mn[j];
      mx[j] = ab > mx[j] ? ab : mx[j];
      nz[j] |= (x ^ 0x80000000u) & sel;
      cnt[j] -= sel;
      float f;
      memcpy(&f, &x, 4);
      s[j] += f;
    }
  }
  uint32_t lo = ~0u, hi = 0, z = 0;
  uint64_t c = 0;
  for (unsigned j = 0; j < 32; j++) {
    lo = mn[j] < lo ? mn[j] : lo;
    hi = mx[j] > hi ? mx[j] : hi;
    z |= nz[j];
    c += cnt[j];
  }
  if (hi >= 0x7f800000u)
    return 0;  /* a NaN or inf row */
  if (hi != 0) {  /* some nonzero row: lo + 1 the lowest nonzero |row| */
    uint32_t el = (lo + 1) >> 23, eh = hi >> 23;
    if (el == 0 || eh - el > CX_DSPAN)
      return 0;  /* a subnormal row (see the top), or too wide */
    for (unsigned w = 16; w > 0; w /= 2)  /* a tree: any order is exact */
      for (unsigned j = 0; j < w; j++)
        s[j] += s[j + w];
    cx_add_double(&a->x, s[0], 0);
  }
  a->notnz |= z;
  *count = masked ? c : n;
  return 1;
}

/* The double way for float64 rows (the bound at the top): each row x,
 * selected, is cut into h, x with its significand's low 26 bits cleared,
 * and x - h (exact), each added to a double lane of its own. */
CX_INLINE int cx_dbl64(wv_cpu_xacc *a, const unsigned char *p,
                       const unsigned char *m, int masked, size_t n,
                       uint64_t *count)
{
  double sh[16] = {0}, sl[16] = {0};
  uint64_t mn[16], mx[16] = {0}, nz[16] = {0}, cnt[16] = {0};
  for (unsigned j = 0; j < 16; j++)
    mn[j] = ~0ull;
  for (size_t i = 0; i < n; i += 16) {
    cx_prefetch(p, 8 * i);
    if (masked)
      cx_prefetch(m, 4 * i);
    for (unsigned j = 0; j < 16; j++) {
      uint64_t x = cx_ld64(p, i + j), sel = ~0ull;
      if (masked) {  /* as in cx_dbl32 */
        uint32_t k = cx_ld32(m, i + j);
        sel = (uint64_t)(int64_t)((int32_t)(k | (0u - k)) >> 31);
      }
      x &= sel;
      uint64_t ab = x & 0x7fffffffffffffffull, l = ab - 1;
      mn[j] = l < mn[j] ? l : mn[j];
      mx[j] = ab > mx[j] ? ab : mx[j];
      nz[j] |= (x ^ 0x8000000000000000ull) & sel;
      cnt[j] -= sel;
      uint64_t hb = x & ~0x3ffffffull;
      double d, h;
      memcpy(&d, &x, 8);
      memcpy(&h, &hb, 8);
      sh[j] += h;
      sl[j] += d - h;
    }
  }
  uint64_t lo = ~0ull, hi = 0, z = 0, c = 0;
  for (unsigned j = 0; j < 16; j++) {
    lo = mn[j] < lo ? mn[j] : lo;
    hi = mx[j] > hi ? mx[j] : hi;
    z |= nz[j];
    c += cnt[j];
  }
  if (hi >= 0x7ff0000000000000ull)
    return 0;  /* a NaN or inf row */
  if (hi != 0) {
    uint64_t el = (lo + 1) >> 52, eh = hi >> 52;
    if (el < 54 || eh - el > CX_DSPAN64 || eh > CX_DTOP64)
      return 0;
    for (unsigned w = 8; w > 0; w /= 2)
      for (unsigned j = 0; j < w; j++) {
        sh[j] += sh[j + w];
        sl[j] += sl[j + w];
      }
    cx_add_double(&a->x, sh[0], 1);
    cx_add_double(&a->x, sl[0], 1);
  }
  a->notnz |= z;
  *count = masked ? c : n;
  return 1;
}

/* n rows at p (mask m, or NULL) of float32 (f64 = 0) or float64 in blocks
 * of CX_BLOCK: blocks whose bin indexes span fewer than CX_VERT go the
 * vertical way, the rest (and the tail) the scatter way.  Returns the
 * rows selected. */
CX_INLINE uint64_t cx_blocks(wv_cpu_xacc *a, const unsigned char *p,
                             const unsigned char *m, size_t n, int f64)
{
  cx_u8 sp = {0}, nz = {0}, cnt = {0};
  uint64_t count = 0;
  unsigned rb = f64 ? 8 : 4;
  size_t i = 0;
  for (; i + CX_BLOCK <= n; i += CX_BLOCK) {
    const unsigned char *pm = m ? m + 4 * i : NULL;
    unsigned lo, hi;
    if (a->vskip > 0) {  /* wide data: no range pass for a few blocks */
      a->vskip--;
      count += f64 ? cx_scat64(a, p + rb * i, pm, CX_BLOCK)
                   : cx_scat32(a, p + rb * i, pm, CX_BLOCK);
      continue;
    }
    if (!f64 && cx_range32(p + rb * i, CX_BLOCK, &lo, &hi)) {
      a->vback = 0;
      if (pm)
        cx_fvert32(a->facc, p + rb * i, pm, CX_BLOCK, lo, hi, &nz, &cnt);
      else
        cx_fvert32(a->facc, p + rb * i, NULL, CX_BLOCK, lo, hi, &nz, &cnt);
      a->flo = lo < a->flo ? lo : a->flo;
      a->fhi = hi > a->fhi ? hi : a->fhi;
      continue;
    }
    if (f64)
      cx_range(p + rb * i, CX_BLOCK, f64, &lo, &hi);
    if (!f64 || hi - lo >= CX_VERT) {
      a->vback = a->vback ? (a->vback < 64 ? 2 * a->vback : 64) : 1;
      a->vskip = a->vback;
      count += f64 ? cx_scat64(a, p + rb * i, pm, CX_BLOCK)
                   : cx_scat32(a, p + rb * i, pm, CX_BLOCK);
      continue;
    }
    a->vback = 0;
    /* one copy each with and without a mask */
    if (pm)
      cx_vert64(a->vacc, p + rb * i, pm, CX_BLOCK, lo, hi, &sp, &nz, &cnt);
    else
      cx_vert64(a->vacc, p + rb * i, NULL, CX_BLOCK, lo, hi, &sp, &nz, &cnt);
    a->vlo = lo < a->vlo ? lo : a->vlo;
    a->vhi = hi > a->vhi ? hi : a->vhi;
  }
  const unsigned char *pm = m ? m + 4 * i : NULL;
  count += f64 ? cx_scat64(a, p + rb * i, pm, n - i)
               : cx_scat32(a, p + rb * i, pm, n - i);
  return count + cx_lanes(a, sp, nz, cnt);
}

/* n rows (f64: float64, else float32): blocks of up to CX_DBLOCK the
 * double way where they qualify, else cx_blocks; after a failed try the
 * next 1, 2, 4, .. 64 blocks (doubling while tries fail; per worker)
 * skip it, so that wide data pays little for the tries. */
CX_INLINE uint64_t cx_rund(wv_cpu_xacc *a, const unsigned char *p,
                           const unsigned char *m, size_t n, int f64)
{
  uint64_t count = 0, c;
  unsigned rb = f64 ? 8 : 4;
  size_t i = 0;
  while (i + 32 <= n) {
    size_t b = n - i >= CX_DBLOCK ? CX_DBLOCK : (n - i) & ~(size_t)31;
    const unsigned char *pm = m ? m + 4 * i : NULL;
    const unsigned char *pi = p + rb * i;
    if (a->dskip == 0 &&
        (f64 ? (pm ? cx_dbl64(a, pi, pm, 1, b, &c)
                   : cx_dbl64(a, pi, NULL, 0, b, &c))
             : (pm ? cx_dbl32(a, pi, pm, 1, b, &c)
                   : cx_dbl32(a, pi, NULL, 0, b, &c)))) {
      count += c;  /* one copy each with and without a mask */
      a->dback = 0;
      i += b;
      continue;
    }
    if (a->dskip == 0) {  /* it failed: this block, then a few more */
      a->dback = a->dback ? (a->dback < 64 ? 2 * a->dback : 64) : 1;
      a->dskip = a->dback + 1;
    }
    size_t r = (n - i) / CX_DBLOCK;
    r = r < a->dskip ? r : a->dskip;
    a->dskip -= r ? (unsigned)r : 1;
    r = r ? r * CX_DBLOCK : b;
    count += cx_blocks(a, pi, pm, r, f64);
    i += r;
  }
  return count + cx_blocks(a, p + rb * i, m ? m + 4 * i : NULL, n - i, f64);
}

CX_CLONES static uint64_t cx_run32(wv_cpu_xacc *a, const unsigned char *p,
                                   const unsigned char *m, size_t n)
{
  return cx_rund(a, p, m, n, 0);
}

CX_CLONES static uint64_t cx_run64(wv_cpu_xacc *a, const unsigned char *p,
                                   const unsigned char *m, size_t n)
{
  return cx_rund(a, p, m, n, 1);
}

/* The vertical accumulators of an item into a->x, and empty again: lanes
 * under 2^52 (2^55) each by the bound above, their sum under 2^58. */
static void cx_vfold(wv_cpu_xacc *a, int f64)
{
  for (unsigned k = a->vlo; k <= a->vhi && a->vlo <= a->vhi; k++)
    for (unsigned h = 0; h < (f64 ? 2u : 1u); h++) {
      cx_l8 *v = &a->vacc[h * CX_BINS64 + k];
      int64_t s = 0;
      for (unsigned j = 0; j < 8; j++)
        s += (*v)[j];
      *v = (cx_l8){0};
      wv_xsum_add_i64(&a->x, s, 16 * k + 26 * h);
    }
  a->vlo = CX_BINS64;
  a->vhi = 0;
  for (unsigned k = a->flo; k <= a->fhi && a->flo <= a->fhi; k++) {
    for (unsigned j = 0; j < 8; j++)
      cx_add_double(&a->x, a->facc[k][j], 0);  /* whole 2^-149s */
    a->facc[k] = (cx_d8){0};
  }
  a->flo = 128;
  a->fhi = 0;
}

/* The bins into a->x, and empty again: float32's bin e weighs 2^b units
 * (b = e ? e - 1 : 0), float64's k 2^(16 k), its k + 128 2^(16 k + 26). */
static void cx_fold(wv_cpu_xacc *a, int f64)
{
  a->since = 0;
  if (!a->scattered)
    return;
  a->scattered = 0;
  for (unsigned i = 0; i < CX_BINS; i++) {
    int64_t s = 0;  /* under 2^63 by the bound above */
    for (unsigned t = 0; t < CX_TABLES; t++) {
      s += a->bin[t][i];
      a->bin[t][i] = 0;
    }
    if (s == 0)
      continue;
    unsigned k = i % CX_BINS64, bit = 16 * k + (i >= CX_BINS64 ? 26 : 0);
    wv_xsum_add_i64(&a->x, s, f64 ? bit : (i ? i - 1 : 0));
  }
}

/* The flags of the NaN / inf rows of n rows at p (mask m, or NULL). */
static void cx_specials(wv_cpu_xacc *a, const unsigned char *p,
                        const unsigned char *m, size_t n, int f64)
{
  for (size_t i = 0; i < n; i++) {
    if (m != NULL && cx_ld32(m, i) == 0)
      continue;
    uint64_t x = f64 ? cx_ld64(p, i) : cx_ld32(p, i);
    int inf_nan = f64 ? ((x >> 52) & 0x7ff) == 0x7ff
                      : ((x >> 23) & 0xff) == 0xff;
    if (inf_nan)
      wv_xsum_add_row(&a->x, x);  /* flags only: it adds nothing */
  }
}

void wv_cpu_xsum_item(const wv_cpu_job *c, wv_cpu_item *it,
                      unsigned worker)
{
  wv_cpu_xacc *a = &c->xacc[worker];
  const wv_reduce_job *job = c->job;
  int f64 = c->plan->row_bytes == 8;
  unsigned rb = c->plan->row_bytes;
  const unsigned char *p =
      (const unsigned char *)job->input[it->chunk].data + rb * it->start;
  if (a->since + it->rows > (f64 ? CX_FOLD64 : CX_FOLD32))
    cx_fold(a, f64);
  a->since += it->rows;
  it->count = 0;
  size_t k = 0;
  for (uint64_t off = 0; off < it->rows;) {
    uint64_t avail = it->rows - off;
    const unsigned char *m = NULL;
    if (job->has_mask)
      m = wv_cpu_mask_run(c, it->lrow + off, &k, &avail);
    size_t n = avail < it->rows - off ? (size_t)avail : it->rows - off;
    a->special = 0;
    it->count += f64 ? cx_run64(a, p + rb * off, m, n)
                     : cx_run32(a, p + rb * off, m, n);
    if (a->special)
      cx_specials(a, p + rb * off, m, n, f64);
    off += n;
  }
  cx_vfold(a, f64);
  if (a->notnz)
    a->x.flags |= WV_XSUM_NOT_NEGZERO;
}

wv_cpu_xacc *wv_cpu_xacc_new(unsigned n, wave_dtype dt)
{
  wv_cpu_xacc *a = aligned_alloc(64, n * sizeof *a);
  if (a == NULL)
    return NULL;
  memset(a, 0, n * sizeof *a);
  for (unsigned i = 0; i < n; i++) {
    wv_xsum_init(&a[i].x, dt);
    a[i].vlo = CX_BINS64;
    a[i].flo = 128;
  }
  return a;
}

void wv_cpu_xacc_result(wv_cpu_xacc *a, unsigned n, int f64, wv_xsum *out)
{
  for (unsigned i = 0; i < n; i++) {
    cx_fold(&a[i], f64);
    if (i == 0)
      *out = a[0].x;
    else
      wv_xsum_merge(out, &a[i].x);
  }
}
