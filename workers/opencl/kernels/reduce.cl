// reduce.cl - the OpenCL backend's reduction kernels (docs/reduction.md):
// one body, built twice at device open, for 32-bit and for 64-bit rows:
//   WV_ROW64=0      the base program (ocl_open.c, beside hashbase.cl):
//                   uint32/sint32/float32 rows, four to a 16-byte vector
//   WV_ROW64=1      the wide program (ocl_reduce.c, beside arg.cl): uint64/
//                   sint64/float64 rows, two to a 16-byte vector
// and with
//   WV_SUBGROUPS=1  sub_group_reduce_{add,min,max} exist (cl_khr_subgroups
//                   or OpenCL C 3.0 __opencl_c_subgroups): the integer wave
//                   step of sum/min/max is one call, else a local-memory tree
//   WV_DENORM=0     (32-bit) the device does not promise float32 denormals
//                   (CL_FP_DENORM): float-sum adds whose operands or result
//                   have a zero exponent field are redone in integer
//                   arithmetic (wv_fadd_soft, the same algorithm as the
//                   Vulkan backend's fadd.glsl)
//   WV_FP64=1       (64-bit) the device has cl_khr_fp64: the float64 sum
//                   kernels are built (nothing else here needs double);
//                   ocl_reduce.c runs them only where denormals are kept
//
// Order-free ops (integer ops; float min/max/extent as unsigned keys) are
// one pass over the rows, any order, one partial per work-group (red_*),
// then one work-group folds the partials (red_finish).  Keys (of the row's
// width): signed min/max flip the sign bit; a float maps a finite value to
// x | sign (sign clear) or ~x (sign set), which orders -0.0 below +0.0, and
// NaN/inf to the op's identity, i.e. leaves them out; a float min key of
// all ones (or max key 0) means "no finite row".
//
// The float sum follows the fixed tree G exactly: fsum_level1 gives one
// value per 256-row group (the host lays every chunk out on a 256-row
// boundary, padded with -0.0), fsum_tree folds listed runs of up to 256
// values of later levels; the 64-bit build has double4 where the 32-bit one
// has float4, the same shapes and pairs.  All float work is additions, so
// contraction cannot occur; FP_CONTRACT is off anyway.
//
// The exact sum (op fsum, ocl_xsum.c) is integer work only: xsum_bins adds
// each row's significand into per-work-group rows of 16-bit bins, xsum_fold
// sums the rows; its section below proves the bounds.
#pragma OPENCL FP_CONTRACT OFF

#ifndef WV_ROW64
#define WV_ROW64 0
#endif
#ifndef WV_SUBGROUPS
#define WV_SUBGROUPS 0
#endif
#ifndef WV_DENORM
#define WV_DENORM 1
#endif
#ifndef WV_FP64
#define WV_FP64 0
#endif
#if WV_SUBGROUPS && defined(cl_khr_subgroups)
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#endif
#if WV_ROW64 && WV_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#define WG 256   // work-group size of every kernel here (ocl.h: WV_OCL_WG)

// ---- keys -----------------------------------------------------------------

// KU: raw bits; KS: sign-biased; KF_MIN / KF_MAX: float order key,
// non-finite rows mapped to the identity of min (all ones) / max (0).  Both
// widths are named (arg.cl keys 32-bit rows in the 64-bit build); KS and
// KF_* without a width are the build's.
#define SIGN32 0x80000000u
#define EXP32 0x7f800000u
#define SIGN64 0x8000000000000000UL
#define EXP64 0x7ff0000000000000UL
inline uint kf32(uint x, uint id)
{
  if ((x & EXP32) == EXP32)
    return id;
  return (x & SIGN32) ? ~x : (x | SIGN32);
}
inline ulong kf64(ulong x, ulong id)
{
  if ((x & EXP64) == EXP64)
    return id;
  return (x & SIGN64) ? ~x : (x | SIGN64);
}
#define KU(x) (x)
#define KS32(x) ((x) ^ SIGN32)
#define KS64(x) ((x) ^ SIGN64)
#define KF32_MIN(x) kf32((x), 0xffffffffu)
#define KF32_MAX(x) kf32((x), 0u)
#define KF64_MIN(x) kf64((x), 0xffffffffffffffffUL)
#define KF64_MAX(x) kf64((x), 0UL)

// kt: a row's key; vt: a 16-byte vector of rows; pt: a partial (min, max);
// VFOLD: a vector's rows keyed with K and combined with C.
#if WV_ROW64
typedef ulong kt;
typedef ulong2 vt;
typedef ulong2 pt;
#define KS KS64
#define KF_MIN KF64_MIN
#define KF_MAX KF64_MAX
#define VFOLD(C, K, a) C(K((a).x), K((a).y))
#else
typedef uint kt;
typedef uint4 vt;
typedef uint2 pt;
#define KS KS32
#define KF_MIN KF32_MIN
#define KF_MAX KF32_MAX
#define VFOLD(C, K, a) C(C(K((a).x), K((a).y)), C(K((a).z), K((a).w)))
#endif
#define ONES ((kt)~(kt)0)
#define ZERO ((kt)0)

// ---- float addition -------------------------------------------------------

// ft / ft4: the float sum's value and vector; FADD / FADD4 its additions.
// WV_FSUM: whether this build has the float sum.
#if WV_ROW64
#define WV_FSUM WV_FP64
#if WV_FP64
typedef double ft;
typedef double4 ft4;
#endif
#define FADD(a, b) ((a) + (b))
#define FADD4(a, b) ((a) + (b))
#else
#define WV_FSUM 1
typedef float ft;
typedef float4 ft4;

// Float addition with subnormals kept (WV_DENORM=0).
float wv_fadd_soft(uint ua, uint ub)
{
  uint ma = ua & 0x7fffffffu, mb = ub & 0x7fffffffu;
  if (ma < mb) {
    uint t = ua; ua = ub; ub = t;
    t = ma; ma = mb; mb = t;
  }
  if (mb == 0u)
    return as_float(ma == 0u ? (ua & ub) : ua);
  uint ea = ma >> 23, eb = mb >> 23;
  uint fa = ma & 0x7fffffu, fb = mb & 0x7fffffu;
  if (ea != 0u) fa |= 0x800000u; else ea = 1u;
  if (eb != 0u) fb |= 0x800000u; else eb = 1u;
  fa <<= 3; fb <<= 3;
  uint d = ea - eb;
  if (d >= 27u)
    fb = 1u;
  else if (d > 0u)
    fb = (fb >> d) | ((fb & ((1u << d) - 1u)) != 0u ? 1u : 0u);
  uint f = ((ua ^ ub) & 0x80000000u) != 0u ? fa - fb : fa + fb;
  if (f == 0u)
    return 0.0f;
  uint e = ea;
  if (f >= (1u << 27)) {
    f = (f >> 1) | (f & 1u);
    e += 1u;
  } else {
    while (f < (1u << 26) && e > 1u) {
      f <<= 1;
      e -= 1u;
    }
  }
  uint low = f & 7u;
  f >>= 3;
  if (low > 4u || (low == 4u && (f & 1u) != 0u))
    f += 1u;
  if (f >= (1u << 24)) {
    f >>= 1;
    e += 1u;
  }
  uint sign = ua & 0x80000000u;
  if (f < (1u << 23))
    return as_float(sign | f);
  if (e >= 255u)
    return as_float(sign | 0x7f800000u);
  return as_float(sign | (e << 23) | (f & 0x7fffffu));
}

#if WV_DENORM
#define FADD(a, b) ((a) + (b))
#define FADD4(a, b) ((a) + (b))
#else
float wv_fadd(float a, float b)
{
  float r = a + b;
  uint ua = as_uint(a), ub = as_uint(b);
  uint xa = ua & 0x7f800000u, xb = ub & 0x7f800000u;
  uint xr = as_uint(r) & 0x7f800000u;
  if ((xa == 0u || xb == 0u || xr == 0u) && xa != 0x7f800000u &&
      xb != 0x7f800000u)
    return wv_fadd_soft(ua, ub);
  return r;
}
float4 wv_fadd4(float4 a, float4 b)
{
  return (float4)(wv_fadd(a.x, b.x), wv_fadd(a.y, b.y), wv_fadd(a.z, b.z),
                  wv_fadd(a.w, b.w));
}
#define FADD(a, b) wv_fadd((a), (b))
#define FADD4(a, b) wv_fadd4((a), (b))
#endif
#endif   // WV_ROW64

// ---- order-free ops -------------------------------------------------------

#define C_SUM(a, b) ((a) + (b))
#define C_MIN(a, b) min((a), (b))
#define C_MAX(a, b) max((a), (b))
#define C_AND(a, b) ((a) & (b))
#define C_OR(a, b) ((a) | (b))
#define C_XOR(a, b) ((a) ^ (b))

// Work-group fold of v with combine C into lm[0].
#define WG_FOLD(C, v, lm)                                                    \
  do {                                                                       \
    lm[lid] = v;                                                             \
    barrier(CLK_LOCAL_MEM_FENCE);                                            \
    for (uint h = WG / 2; h > 0; h >>= 1) {                                  \
      if (lid < h)                                                           \
        lm[lid] = C(lm[lid], lm[lid + h]);                                   \
      barrier(CLK_LOCAL_MEM_FENCE);                                          \
    }                                                                        \
  } while (0)

#if WV_SUBGROUPS
// Sub-group step (SGF: the sub-group reduction for combine C), then one
// value per sub-group through local memory.
#define SG_FOLD(C, SGF, v, lm)                                               \
  do {                                                                       \
    v = SGF(v);                                                              \
    uint ns = get_num_sub_groups();                                          \
    if (get_sub_group_local_id() == 0)                                       \
      lm[get_sub_group_id()] = v;                                            \
    barrier(CLK_LOCAL_MEM_FENCE);                                            \
    if (lid == 0) {                                                          \
      kt acc = lm[0];                                                        \
      for (uint s = 1; s < ns; s++)                                          \
        acc = C(acc, lm[s]);                                                 \
      lm[0] = acc;                                                           \
    }                                                                        \
    barrier(CLK_LOCAL_MEM_FENCE);                                            \
  } while (0)
#define FOLD_SUM(v, lm) SG_FOLD(C_SUM, sub_group_reduce_add, v, lm)
#define FOLD_MIN(v, lm) SG_FOLD(C_MIN, sub_group_reduce_min, v, lm)
#define FOLD_MAX(v, lm) SG_FOLD(C_MAX, sub_group_reduce_max, v, lm)
#else
#define FOLD_SUM(v, lm) WG_FOLD(C_SUM, v, lm)
#define FOLD_MIN(v, lm) WG_FOLD(C_MIN, v, lm)
#define FOLD_MAX(v, lm) WG_FOLD(C_MAX, v, lm)
#endif
#define FOLD_AND(v, lm) WG_FOLD(C_AND, v, lm)
#define FOLD_OR(v, lm) WG_FOLD(C_OR, v, lm)
#define FOLD_XOR(v, lm) WG_FOLD(C_XOR, v, lm)

// One pass of a single op over nvec 16-byte vectors: a grid-stride loop,
// four vectors in flight per work-item, then the work-group fold; partial
// g of the work-group goes to part[part0 + g].
#define RED1(NAME, K, C, FOLD, ID)                                           \
  __kernel __attribute__((reqd_work_group_size(WG, 1, 1)))                   \
  void NAME(__global const vt *in, ulong nvec, __global pt *part,            \
            uint part0)                                                      \
  {                                                                          \
    __local kt lm[WG];                                                       \
    const uint lid = get_local_id(0);                                        \
    const ulong stride = get_global_size(0);                                 \
    kt acc = ID;                                                             \
    ulong i = get_global_id(0);                                              \
    for (; i + 3 * stride < nvec; i += 4 * stride) {                         \
      vt a = in[i], b = in[i + stride], c = in[i + 2 * stride],              \
         d = in[i + 3 * stride];                                             \
      acc = C(acc, VFOLD(C, K, a));                                          \
      acc = C(acc, VFOLD(C, K, b));                                          \
      acc = C(acc, VFOLD(C, K, c));                                          \
      acc = C(acc, VFOLD(C, K, d));                                          \
    }                                                                        \
    for (; i < nvec; i += stride) {                                          \
      vt a = in[i];                                                          \
      acc = C(acc, VFOLD(C, K, a));                                          \
    }                                                                        \
    FOLD(acc, lm);                                                           \
    if (lid == 0)                                                            \
      part[part0 + get_group_id(0)] = (pt)(lm[0], ZERO);                     \
  }

// Extent: min and max keys together, two vectors in flight.
#define RED2(NAME, KMIN, KMAX)                                               \
  __kernel __attribute__((reqd_work_group_size(WG, 1, 1)))                   \
  void NAME(__global const vt *in, ulong nvec, __global pt *part,            \
            uint part0)                                                      \
  {                                                                          \
    __local kt lm[WG];                                                       \
    const uint lid = get_local_id(0);                                        \
    const ulong stride = get_global_size(0);                                 \
    kt lo = ONES, hi = ZERO;                                                 \
    ulong i = get_global_id(0);                                              \
    for (; i + stride < nvec; i += 2 * stride) {                             \
      vt a = in[i], b = in[i + stride];                                      \
      lo = min(lo, VFOLD(C_MIN, KMIN, a));                                   \
      hi = max(hi, VFOLD(C_MAX, KMAX, a));                                   \
      lo = min(lo, VFOLD(C_MIN, KMIN, b));                                   \
      hi = max(hi, VFOLD(C_MAX, KMAX, b));                                   \
    }                                                                        \
    for (; i < nvec; i += stride) {                                          \
      vt a = in[i];                                                          \
      lo = min(lo, VFOLD(C_MIN, KMIN, a));                                   \
      hi = max(hi, VFOLD(C_MAX, KMAX, a));                                   \
    }                                                                        \
    FOLD_MIN(lo, lm);                                                        \
    kt rlo = lm[0];                                                          \
    barrier(CLK_LOCAL_MEM_FENCE);                                            \
    FOLD_MAX(hi, lm);                                                        \
    if (lid == 0)                                                            \
      part[part0 + get_group_id(0)] = (pt)(rlo, lm[0]);                      \
  }

RED1(red_sum, KU, C_SUM, FOLD_SUM, ZERO)
RED1(red_and, KU, C_AND, FOLD_AND, ONES)
RED1(red_or, KU, C_OR, FOLD_OR, ZERO)
RED1(red_xor, KU, C_XOR, FOLD_XOR, ZERO)
RED1(red_umin, KU, C_MIN, FOLD_MIN, ONES)
RED1(red_umax, KU, C_MAX, FOLD_MAX, ZERO)
RED1(red_smin, KS, C_MIN, FOLD_MIN, ONES)
RED1(red_smax, KS, C_MAX, FOLD_MAX, ZERO)
RED1(red_fmin, KF_MIN, C_MIN, FOLD_MIN, ONES)
RED1(red_fmax, KF_MAX, C_MAX, FOLD_MAX, ZERO)
RED2(red_uext, KU, KU)
RED2(red_sext, KS, KS)
RED2(red_fext, KF_MIN, KF_MAX)

// Fold n partials (keys already) into out[0], one work-group.  op: 0 sum,
// 1 min, 2 max, 3 and, 4 or, 5 xor, 6 extent (x min, y max).
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void red_finish(__global const pt *part, uint n, uint op, __global pt *out)
{
  __local kt lm[WG];
  const uint lid = get_local_id(0);
  kt x = (op == 1 || op == 3 || op == 6) ? ONES : ZERO, y = ZERO;
  for (uint i = lid; i < n; i += WG) {
    pt p = part[i];
    switch (op) {
    case 0: x = x + p.x; break;
    case 1: x = min(x, p.x); break;
    case 2: x = max(x, p.x); break;
    case 3: x = x & p.x; break;
    case 4: x = x | p.x; break;
    case 5: x = x ^ p.x; break;
    default: x = min(x, p.x); y = max(y, p.y); break;
    }
  }
  switch (op) {
  case 0: WG_FOLD(C_SUM, x, lm); break;
  case 1: WG_FOLD(C_MIN, x, lm); break;
  case 2: WG_FOLD(C_MAX, x, lm); break;
  case 3: WG_FOLD(C_AND, x, lm); break;
  case 4: WG_FOLD(C_OR, x, lm); break;
  case 5: WG_FOLD(C_XOR, x, lm); break;
  default: WG_FOLD(C_MIN, x, lm); break;
  }
  kt rx = lm[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  if (op == 6)
    WG_FOLD(C_MAX, y, lm);
  if (lid == 0)
    out[0] = (pt)(rx, op == 6 ? lm[0] : ZERO);
}

// ---- float sum ------------------------------------------------------------

#if WV_FSUM
// Level 1: value of every 256-row group of in[] (ngroups groups, each
// fully present) into part[part0 + g].  A group is 64 vectors of four
// values; a work-group takes 32 groups per pass; a group is held by 8
// work-items, item j holding the vectors j + 8k (k = 0..7): folds 128, 64,
// 32 pair k with k + 4, k + 2, k + 1 inside the item; the 8 results go
// through local memory and one item per group does folds 16, 8, 4 (vectors
// q and q + 4, + 2, + 1) and 2, 1 (inside the vector).  Every addition has
// the lower index on the left, as G says.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void fsum_level1(__global const ft4 *in, ulong ngroups, __global ft *part,
                 ulong part0)
{
  __local ft4 lm[WG];
  const uint lid = get_local_id(0);
  const uint j = lid & 7u, gl = lid >> 3;
  const ulong step = get_num_groups(0);
  ulong p = get_group_id(0);
  // The next pass's eight vectors are loaded before this pass's barriers
  // and in-group folds, so the loads stay in flight across them.
  ft4 a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0;
  if (p * 32 + gl < ngroups) {
    __global const ft4 *v = in + (p * 32 + gl) * 64 + j;
    a0 = v[0]; a1 = v[8]; a2 = v[16]; a3 = v[24];
    a4 = v[32]; a5 = v[40]; a6 = v[48]; a7 = v[56];
  }
  for (; p * 32 < ngroups; p += step) {
    a0 = FADD4(a0, a4);
    a1 = FADD4(a1, a5);
    a2 = FADD4(a2, a6);
    a3 = FADD4(a3, a7);
    a0 = FADD4(a0, a2);
    a1 = FADD4(a1, a3);
    ft4 c = FADD4(a0, a1);
    ulong pn = p + step;
    if (pn * 32 + gl < ngroups) {
      __global const ft4 *v = in + (pn * 32 + gl) * 64 + j;
      a0 = v[0]; a1 = v[8]; a2 = v[16]; a3 = v[24];
      a4 = v[32]; a5 = v[40]; a6 = v[48]; a7 = v[56];
    }
    lm[lid] = c;   // garbage past ngroups is never read
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < 32 && p * 32 + lid < ngroups) {
      __local const ft4 *q = lm + lid * 8;
      ft4 d0 = FADD4(q[0], q[4]), d1 = FADD4(q[1], q[5]);
      ft4 d2 = FADD4(q[2], q[6]), d3 = FADD4(q[3], q[7]);
      d0 = FADD4(d0, d2);
      d1 = FADD4(d1, d3);
      d0 = FADD4(d0, d1);
      ft s0 = FADD(d0.x, d0.z), s1 = FADD(d0.y, d0.w);
      part[part0 + p * 32 + lid] = FADD(s0, s1);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}

// Later levels: output d is G of src[e.x .. + e.y), e = desc[desc0 + d]
// (1..256 values, padded with -0.0).
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void fsum_tree(__global const ft *src, __global const uint2 *desc,
               uint desc0, uint ndesc, __global ft *dst)
{
  __local ft lm[WG];
  const uint lid = get_local_id(0);
  for (uint d = get_group_id(0); d < ndesc; d += get_num_groups(0)) {
    uint2 e = desc[desc0 + d];
    lm[lid] = lid < e.y ? src[e.x + lid] : (ft)-0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint h = WG / 2; h > 0; h >>= 1) {
      if (lid < h)
        lm[lid] = FADD(lm[lid], lm[lid + h]);
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
      dst[d] = lm[0];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}
#endif   // WV_FSUM

// ---- exact float sum (op fsum, core/xsum.h) -------------------------------
//
// xsum_bins: every work-group adds its rows into its own row of XNB signed
// 64-bit bins in gb[] (bin j weighs 2^(16 j) units of the dtype's smallest
// subnormal), accumulating over launches; xsum_fold sums the groups' rows.
// A finite row is M * 2^b units (M < 2^24 or 2^53, b = max(e, 1) - 1); with
// b = 16 i + s it is M << s at bin i.  Float64 splits M = Mh 2^32 + Ml, so
// Ml << s sits at bin i and Mh << s at bin i + 2 (32 bits = two bins).
//
// A work item keeps a private cache: one bin index ci and a long per part
// (f32: acc; f64: acl at ci, ach at ci + 2).  A row at another bin flushes
// the cache (a row of value zero never does) into the group's local bins:
// xs_put splits a long into four 16-bit pieces at bins ci .. ci + 3 and
// adds each nonzero piece with a 32-bit local atomic (core OpenCL C: no
// 64-bit atomics needed); items spread over XCOPIES copies of the bins.
// Every tile (XTILE loop turns of four 16-byte vectors) ends with a
// barrier, items lid < XNB drain bin lid of every copy into a private long
// tot and zero it, and a barrier.  At the end the caches flush, the bins
// drain once more, and item 0 adds the group's totals into its row of gb
// with carries, leaving bins 0 .. XNB-2 in [0, 2^16) and the top one
// signed.  Flags (WV_XSUM_*) are ORed per item, per group, per fold.
//
// Bounds (no long or int can overflow):
//  - a row's part: f32 |M << s| < 2^24 2^15 = 2^39; f64 |Ml << s| < 2^47,
//    |Mh << s| < 2^36.  The caches are flushed at least every XCAP + 1
//    tiles: f32 2^16 tiles of 64 rows (2^22 adds, |acc| < 2^61), f64 2^9
//    tiles of 32 rows (2^14 adds, |acl| < 2^61).
//  - a local 32-bit bin between two drains: every flush adds at most one
//    piece (|piece| < 2^16) to a given bin; an item flushes at most
//    parts * (rows per tile + 1) times a tile (a switch per row, the forced
//    flush): f32 1 * 65, f64 2 * 33 = 66 < 2^7; 256 items: |bin| < 2^8 2^7
//    2^16 = 2^31, in all copies together.
//  - tot: under 2^31 a tile, so under 2^63 for any launch under 2^32 tiles;
//    gb's carries then stay far inside a long, and the fold adds at most
//    ngroups values under 2^16 (the top bin's under 2^14) per bin.
//  - reach: f32 b <= 253, i <= 15, pieces to bin 18 < XNB = 20; f64
//    b <= 2045, i <= 127, Mh's pieces to bin 132 < XNB = 136.
#define XTILE 4
#define XCOPIES 8
#define XPIECE 0xffffL
#if WV_ROW64
#define XNB 136
#define XCAP 511u
#define XNEGZ ((vt)(SIGN64))
#else
#define XNB 20
#define XCAP 65535u
#define XNEGZ ((vt)(SIGN32))
#endif

inline void xs_put(volatile __local int *lb, uint i, long a)
{
  int p = (int)(a & XPIECE);
  if (p != 0)
    atomic_add(lb + i, p);
  p = (int)((a >> 16) & XPIECE);
  if (p != 0)
    atomic_add(lb + i + 1, p);
  p = (int)((a >> 32) & XPIECE);
  if (p != 0)
    atomic_add(lb + i + 2, p);
  p = (int)(a >> 48);
  if (p != 0)
    atomic_add(lb + i + 3, p);
}

#if WV_ROW64
#define XFRAC 0xfffffffffffffUL
#define XROW(u)                                                              \
  do {                                                                       \
    const ulong u_ = (u);                                                    \
    const uint e_ = (uint)(u_ >> 52) & 0x7ffu;                               \
    const int sp_ = e_ == 0x7ffu, neg_ = (u_ >> 63) != 0;                    \
    fl |= (sp_ ? ((u_ & XFRAC) ? 1u : neg_ ? 4u : 2u) : 0u) |               \
          (u_ != SIGN64 ? 8u : 0u);                                          \
    const ulong m_ = sp_ ? 0UL : (u_ & XFRAC) | (e_ ? 1UL << 52 : 0UL);     \
    const uint b_ = e_ ? e_ - 1u : 0u, i_ = b_ >> 4, s_ = b_ & 15u;         \
    long lo_ = (long)((m_ & 0xffffffffUL) << s_);                            \
    long hi_ = (long)((m_ >> 32) << s_);                                     \
    if (neg_) {                                                              \
      lo_ = -lo_;                                                            \
      hi_ = -hi_;                                                            \
    }                                                                        \
    if (m_ != 0 && i_ != ci) {                                               \
      xs_put(lb, ci, acl);                                                   \
      xs_put(lb, ci + 2u, ach);                                              \
      ci = i_;                                                               \
      acl = 0;                                                               \
      ach = 0;                                                               \
    }                                                                        \
    acl += lo_;                                                              \
    ach += hi_;                                                              \
  } while (0)
#define XROWS(a) do { XROW((a).x); XROW((a).y); } while (0)
#define XFLUSH()                                                             \
  do {                                                                       \
    xs_put(lb, ci, acl);                                                     \
    xs_put(lb, ci + 2u, ach);                                                \
    acl = 0;                                                                 \
    ach = 0;                                                                 \
  } while (0)
#else
#define XROW(u)                                                              \
  do {                                                                       \
    const uint u_ = (u);                                                     \
    const uint e_ = (u_ >> 23) & 0xffu;                                      \
    const int sp_ = e_ == 0xffu, neg_ = (u_ >> 31) != 0;                     \
    fl |= (sp_ ? ((u_ & 0x7fffffu) ? 1u : neg_ ? 4u : 2u) : 0u) |           \
          (u_ != SIGN32 ? 8u : 0u);                                          \
    const uint m_ = sp_ ? 0u : (u_ & 0x7fffffu) | (e_ ? 0x800000u : 0u);    \
    const uint b_ = e_ ? e_ - 1u : 0u, i_ = b_ >> 4;                         \
    long v_ = (long)m_ << (b_ & 15u);                                        \
    if (neg_)                                                                \
      v_ = -v_;                                                              \
    if (m_ != 0u && i_ != ci) {                                              \
      xs_put(lb, ci, acc);                                                   \
      ci = i_;                                                               \
      acc = 0;                                                               \
    }                                                                        \
    acc += v_;                                                               \
  } while (0)
#define XROWS(a)                                                             \
  do { XROW((a).x); XROW((a).y); XROW((a).z); XROW((a).w); } while (0)
#define XFLUSH()                                                             \
  do {                                                                       \
    xs_put(lb, ci, acc);                                                     \
    acc = 0;                                                                 \
  } while (0)
#endif

// Items lid < XNB move bin lid of every copy into tot.
#define XDRAIN()                                                             \
  do {                                                                       \
    barrier(CLK_LOCAL_MEM_FENCE);                                            \
    if (lid < XNB)                                                           \
      for (uint c_ = 0; c_ < XCOPIES; c_++) {                                \
        tot += lbin[c_ * XNB + lid];                                         \
        lbin[c_ * XNB + lid] = 0;                                            \
      }                                                                      \
    barrier(CLK_LOCAL_MEM_FENCE);                                            \
  } while (0)

// nvec 16-byte vectors of rows (padded with -0.0) into group g's row
// gb[g * XNB ..] and its flags gf[g], both kept from earlier launches.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void xsum_bins(__global const vt *in, ulong nvec, __global long *gb,
               __global uint *gf)
{
  volatile __local int lbin[XCOPIES * XNB];
  __local long ltot[XNB];
  volatile __local uint lfl;
  const uint lid = get_local_id(0);
  for (uint j = lid; j < XCOPIES * XNB; j += WG)
    lbin[j] = 0;
  if (lid == 0)
    lfl = 0u;
  barrier(CLK_LOCAL_MEM_FENCE);
  volatile __local int *lb = lbin + (lid % XCOPIES) * XNB;
  const ulong stride = get_global_size(0);
  const ulong ntile = (nvec + XTILE * 4 * stride - 1) / (XTILE * 4 * stride);
  ulong i = get_global_id(0);
  uint ci = 0u, fl = 0u;
  long tot = 0;
#if WV_ROW64
  long acl = 0, ach = 0;
#else
  long acc = 0;
#endif
  for (ulong t = 0; t < ntile; t++) {
    for (uint k = 0; k < XTILE; k++, i += 4 * stride) {
      vt a = i < nvec ? in[i] : XNEGZ;
      vt b = i + stride < nvec ? in[i + stride] : XNEGZ;
      vt c = i + 2 * stride < nvec ? in[i + 2 * stride] : XNEGZ;
      vt d = i + 3 * stride < nvec ? in[i + 3 * stride] : XNEGZ;
      XROWS(a);
      XROWS(b);
      XROWS(c);
      XROWS(d);
    }
    if (((uint)t & XCAP) == XCAP)
      XFLUSH();
    XDRAIN();
  }
  XFLUSH();
  XDRAIN();
  if (lid < XNB)
    ltot[lid] = tot;
  atomic_or(&lfl, fl);
  barrier(CLK_LOCAL_MEM_FENCE);
  if (lid == 0) {
    __global long *row = gb + (ulong)get_group_id(0) * XNB;
    long carry = 0;
    for (uint j = 0; j + 1 < XNB; j++) {
      long v = row[j] + ltot[j] + carry;
      row[j] = v & XPIECE;
      carry = v >> 16;
    }
    row[XNB - 1] += ltot[XNB - 1] + carry;
    gf[get_group_id(0)] |= lfl;
  }
}

// out[j] = the sum of bin j over ngroups rows of gb; out[XNB] the flags.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void xsum_fold(__global const long *gb, uint ngroups,
               __global const uint *gf, __global long *out)
{
  const uint lid = get_local_id(0);
  if (lid < XNB) {
    long s = 0;
    for (uint g = 0; g < ngroups; g++)
      s += gb[(ulong)g * XNB + lid];
    out[lid] = s;
  } else if (lid == XNB) {
    uint f = 0u;
    for (uint g = 0; g < ngroups; g++)
      f |= gf[g];
    out[XNB] = (long)f;
  }
}

#if !WV_ROW64
// The bench's streaming-read baseline: every 16-byte vector read once.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void stream_read(__global const uint4 *in, ulong nvec, __global uint2 *part)
{
  __local uint lm[WG];
  const uint lid = get_local_id(0);
  const ulong stride = get_global_size(0);
  uint acc = 0;
  ulong i = get_global_id(0);
  for (; i + 3 * stride < nvec; i += 4 * stride) {
    uint4 a = in[i], b = in[i + stride], c = in[i + 2 * stride],
          d = in[i + 3 * stride];
    uint4 x = a ^ b ^ c ^ d;
    acc ^= x.x ^ x.y ^ x.z ^ x.w;
  }
  for (; i < nvec; i += stride) {
    uint4 a = in[i];
    acc ^= a.x ^ a.y ^ a.z ^ a.w;
  }
  WG_FOLD(C_XOR, acc, lm);
  if (lid == 0)
    part[get_group_id(0)] = (uint2)(lm[0], 0u);
}
#endif
