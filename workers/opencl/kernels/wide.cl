// wide.cl - the OpenCL backend's 64-bit reductions and argmin/argmax
// (docs/reduction.md; issue 23).  A program of its own, built once at
// device open (ocl_wide.c) with:
//   WV_SUBGROUPS=1  sub_group_reduce_{add,min,max} exist (as reduce.cl)
//   WV_FP64=1       the device has cl_khr_fp64: the float64 sum kernels
//                   are built (the other kernels need no double at all)
//
// Order-free ops on 64-bit rows (red64_*): one pass, any order, one
// partial per work-group, then red64_finish, exactly as reduce.cl does for
// 32-bit rows.  Keys: sint64 flips the sign bit; float64 maps a finite
// value to x | 2^63 (sign clear) or ~x (sign set), which orders -0.0 below
// +0.0, and NaN/inf to the op's identity.
//
// The float64 sum follows the fixed tree G exactly as fsum_level1 and
// fsum_tree of reduce.cl do, with double4 where they have float4: the
// same shapes, the same pairs, every addition with the lower index on the
// left, binary64 adds (contraction is off; additions only anyway).
//
// argmin/argmax (arg_*): every row becomes an (order key, global index)
// pair; a work-item keeps the first best of its rows (its indices only
// grow), the work-group and then arg_finish fold pairs lexicographically
// (the better key, then the lower index), so ties go to the lowest index
// whatever the schedule.  An unused pair is (identity, ~0).  Float rows
// that are NaN or +-inf get the identity key and are not counted; the
// count of the rest comes back with the pair (docs/reduction.md: the rows
// considered).
#pragma OPENCL FP_CONTRACT OFF

#ifndef WV_SUBGROUPS
#define WV_SUBGROUPS 0
#endif
#ifndef WV_FP64
#define WV_FP64 0
#endif
#if WV_SUBGROUPS && defined(cl_khr_subgroups)
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#endif
#if WV_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#define WG 256   // work-group size of every kernel here (ocl.h: WV_OCL_WG)
#define SIGN64 0x8000000000000000UL
#define EXP64 0x7ff0000000000000UL
#define NONE 0xffffffffffffffffUL

// ---- keys -----------------------------------------------------------------

#define KU(x) (x)
#define KS64(x) ((x) ^ SIGN64)
#define KS32(x) ((x) ^ 0x80000000u)
inline ulong kf64(ulong x, ulong id)
{
  if ((x & EXP64) == EXP64)
    return id;
  return (x & SIGN64) ? ~x : (x | SIGN64);
}
inline uint kf32(uint x, uint id)
{
  if ((x & 0x7f800000u) == 0x7f800000u)
    return id;
  return (x & 0x80000000u) ? ~x : (x | 0x80000000u);
}
#define KF64_MIN(x) kf64((x), NONE)
#define KF64_MAX(x) kf64((x), 0UL)
#define KF32_MIN(x) kf32((x), 0xffffffffu)
#define KF32_MAX(x) kf32((x), 0u)
// Whether a row counts (argmin/argmax): floats only when finite.
#define FIN_ALL(x) 1u
#define FIN64(x) (((x) & EXP64) != EXP64 ? 1u : 0u)
#define FIN32(x) (((x) & 0x7f800000u) != 0x7f800000u ? 1u : 0u)

#define C_SUM(a, b) ((a) + (b))
#define C_MIN(a, b) min((a), (b))
#define C_MAX(a, b) max((a), (b))
#define C_AND(a, b) ((a) & (b))
#define C_OR(a, b) ((a) | (b))
#define C_XOR(a, b) ((a) ^ (b))

// ---- order-free ops on 64-bit rows ----------------------------------------

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
#define SG_FOLD(C, SGF, v, lm)                                               \
  do {                                                                       \
    v = SGF(v);                                                              \
    uint ns = get_num_sub_groups();                                          \
    if (get_sub_group_local_id() == 0)                                       \
      lm[get_sub_group_id()] = v;                                            \
    barrier(CLK_LOCAL_MEM_FENCE);                                            \
    if (lid == 0) {                                                          \
      ulong acc = lm[0];                                                     \
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

// One pass of one op over nvec 16-byte vectors (two rows each), four
// vectors in flight per work-item; partial of work-group g to part[part0+g].
#define RED1(NAME, K, C, FOLD, ID)                                           \
  __kernel __attribute__((reqd_work_group_size(WG, 1, 1)))                   \
  void NAME(__global const ulong2 *in, ulong nvec, __global ulong2 *part,    \
            uint part0)                                                      \
  {                                                                          \
    __local ulong lm[WG];                                                    \
    const uint lid = get_local_id(0);                                        \
    const ulong stride = get_global_size(0);                                 \
    ulong acc = ID;                                                          \
    ulong i = get_global_id(0);                                              \
    for (; i + 3 * stride < nvec; i += 4 * stride) {                         \
      ulong2 a = in[i], b = in[i + stride], c = in[i + 2 * stride],          \
             d = in[i + 3 * stride];                                         \
      acc = C(acc, C(C(K(a.x), K(a.y)), C(K(b.x), K(b.y))));                 \
      acc = C(acc, C(C(K(c.x), K(c.y)), C(K(d.x), K(d.y))));                 \
    }                                                                        \
    for (; i < nvec; i += stride) {                                          \
      ulong2 a = in[i];                                                      \
      acc = C(acc, C(K(a.x), K(a.y)));                                       \
    }                                                                        \
    FOLD(acc, lm);                                                           \
    if (lid == 0)                                                            \
      part[part0 + get_group_id(0)] = (ulong2)(lm[0], 0UL);                  \
  }

#define RED2(NAME, KMIN, KMAX)                                               \
  __kernel __attribute__((reqd_work_group_size(WG, 1, 1)))                   \
  void NAME(__global const ulong2 *in, ulong nvec, __global ulong2 *part,    \
            uint part0)                                                      \
  {                                                                          \
    __local ulong lm[WG];                                                    \
    const uint lid = get_local_id(0);                                        \
    const ulong stride = get_global_size(0);                                 \
    ulong lo = NONE, hi = 0UL;                                               \
    ulong i = get_global_id(0);                                              \
    for (; i + stride < nvec; i += 2 * stride) {                             \
      ulong2 a = in[i], b = in[i + stride];                                  \
      lo = min(lo, min(min(KMIN(a.x), KMIN(a.y)), min(KMIN(b.x), KMIN(b.y))));\
      hi = max(hi, max(max(KMAX(a.x), KMAX(a.y)), max(KMAX(b.x), KMAX(b.y))));\
    }                                                                        \
    for (; i < nvec; i += stride) {                                          \
      ulong2 a = in[i];                                                      \
      lo = min(lo, min(KMIN(a.x), KMIN(a.y)));                               \
      hi = max(hi, max(KMAX(a.x), KMAX(a.y)));                               \
    }                                                                        \
    FOLD_MIN(lo, lm);                                                        \
    ulong rlo = lm[0];                                                       \
    barrier(CLK_LOCAL_MEM_FENCE);                                            \
    FOLD_MAX(hi, lm);                                                        \
    if (lid == 0)                                                            \
      part[part0 + get_group_id(0)] = (ulong2)(rlo, lm[0]);                  \
  }

RED1(red64_sum, KU, C_SUM, FOLD_SUM, 0UL)
RED1(red64_and, KU, C_AND, FOLD_AND, NONE)
RED1(red64_or, KU, C_OR, FOLD_OR, 0UL)
RED1(red64_xor, KU, C_XOR, FOLD_XOR, 0UL)
RED1(red64_umin, KU, C_MIN, FOLD_MIN, NONE)
RED1(red64_umax, KU, C_MAX, FOLD_MAX, 0UL)
RED1(red64_smin, KS64, C_MIN, FOLD_MIN, NONE)
RED1(red64_smax, KS64, C_MAX, FOLD_MAX, 0UL)
RED1(red64_fmin, KF64_MIN, C_MIN, FOLD_MIN, NONE)
RED1(red64_fmax, KF64_MAX, C_MAX, FOLD_MAX, 0UL)
RED2(red64_uext, KU, KU)
RED2(red64_sext, KS64, KS64)
RED2(red64_fext, KF64_MIN, KF64_MAX)

// Fold n partials into out[0], one work-group.  op: 0 sum, 1 min, 2 max,
// 3 and, 4 or, 5 xor, 6 extent (x min, y max).
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void red64_finish(__global const ulong2 *part, uint n, uint op,
                  __global ulong2 *out)
{
  __local ulong lm[WG];
  const uint lid = get_local_id(0);
  ulong x = (op == 1 || op == 3 || op == 6) ? NONE : 0UL, y = 0UL;
  for (uint i = lid; i < n; i += WG) {
    ulong2 p = part[i];
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
  ulong rx = lm[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  if (op == 6)
    WG_FOLD(C_MAX, y, lm);
  if (lid == 0)
    out[0] = (ulong2)(rx, op == 6 ? lm[0] : 0UL);
}

// ---- float64 sum ----------------------------------------------------------

#if WV_FP64
// Level 1: value of every 256-row group of in[] (ngroups groups, each
// fully present) into part[part0 + g]: fsum_level1 of reduce.cl with
// double4 for float4.  A group is 64 double4, held by 8 work-items, item j
// holding vectors j + 8k (k = 0..7): folds 128, 64, 32 pair k with k + 4,
// k + 2, k + 1 inside the item; one item per group then does folds 16, 8,
// 4 (vectors q and q + 4, + 2, + 1) and 2, 1 (inside the double4).
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void fsum64_level1(__global const double4 *in, ulong ngroups,
                   __global double *part, ulong part0)
{
  __local double4 lm[WG];
  const uint lid = get_local_id(0);
  const uint j = lid & 7u, gl = lid >> 3;
  const ulong step = get_num_groups(0);
  ulong p = get_group_id(0);
  double4 a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0;
  if (p * 32 + gl < ngroups) {
    __global const double4 *v = in + (p * 32 + gl) * 64 + j;
    a0 = v[0]; a1 = v[8]; a2 = v[16]; a3 = v[24];
    a4 = v[32]; a5 = v[40]; a6 = v[48]; a7 = v[56];
  }
  for (; p * 32 < ngroups; p += step) {
    a0 = a0 + a4;
    a1 = a1 + a5;
    a2 = a2 + a6;
    a3 = a3 + a7;
    a0 = a0 + a2;
    a1 = a1 + a3;
    double4 c = a0 + a1;
    ulong pn = p + step;
    if (pn * 32 + gl < ngroups) {
      __global const double4 *v = in + (pn * 32 + gl) * 64 + j;
      a0 = v[0]; a1 = v[8]; a2 = v[16]; a3 = v[24];
      a4 = v[32]; a5 = v[40]; a6 = v[48]; a7 = v[56];
    }
    lm[lid] = c;   // garbage past ngroups is never read
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < 32 && p * 32 + lid < ngroups) {
      __local const double4 *q = lm + lid * 8;
      double4 d0 = q[0] + q[4], d1 = q[1] + q[5];
      double4 d2 = q[2] + q[6], d3 = q[3] + q[7];
      d0 = d0 + d2;
      d1 = d1 + d3;
      d0 = d0 + d1;
      double s0 = d0.x + d0.z, s1 = d0.y + d0.w;
      part[part0 + p * 32 + lid] = s0 + s1;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}

// Later levels: output d is G of src[e.x .. + e.y), e = desc[desc0 + d]
// (1..256 values, padded with -0.0).
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void fsum64_tree(__global const double *src, __global const uint2 *desc,
                 uint desc0, uint ndesc, __global double *dst)
{
  __local double lm[WG];
  const uint lid = get_local_id(0);
  for (uint d = get_group_id(0); d < ndesc; d += get_num_groups(0)) {
    uint2 e = desc[desc0 + d];
    lm[lid] = lid < e.y ? src[e.x + lid] : -0.0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint h = WG / 2; h > 0; h >>= 1) {
      if (lid < h)
        lm[lid] = lm[lid] + lm[lid + h];
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
      dst[d] = lm[0];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}
#endif

// ---- argmin / argmax ------------------------------------------------------

// BETTER(k, b): key k beats key b (strictly).
#define LT(a, b) ((a) < (b))
#define GT(a, b) ((a) > (b))

// (k, i) against (bk, bi): lexicographic, keeps the lower index on ties.
#define ARG_TAKE(BETTER, k, i, bk, bi)                                       \
  do {                                                                       \
    if (BETTER(k, bk) || ((k) == (bk) && (i) < (bi))) {                      \
      bk = k;                                                                \
      bi = i;                                                                \
    }                                                                        \
  } while (0)

// The work-group's best pair and count into part[part0 + g]: sub-groups
// take the best key, then the lowest index holding it, then local memory;
// without sub-groups a local-memory tree of pairs.  lk, li, lc: the
// kernel's local arrays (declared at kernel scope, as OpenCL C demands).
#if WV_SUBGROUPS
#define ARG_FOLD(BETTER, SGBEST, bk, bi, cnt, part, part0)                   \
  do {                                                                       \
    ulong m = SGBEST(bk);                                                    \
    ulong mi = sub_group_reduce_min(bk == m ? bi : NONE);                    \
    uint mc = sub_group_reduce_add(cnt);                                     \
    uint ns = get_num_sub_groups();                                          \
    if (get_sub_group_local_id() == 0) {                                     \
      lk[get_sub_group_id()] = m;                                            \
      li[get_sub_group_id()] = mi;                                           \
      lc[get_sub_group_id()] = mc;                                           \
    }                                                                        \
    barrier(CLK_LOCAL_MEM_FENCE);                                            \
    if (lid == 0) {                                                          \
      ulong k = lk[0], x = li[0];                                            \
      uint c = lc[0];                                                        \
      for (uint s = 1; s < ns; s++) {                                        \
        ARG_TAKE(BETTER, lk[s], li[s], k, x);                                \
        c += lc[s];                                                          \
      }                                                                      \
      part[part0 + get_group_id(0)] = (ulong4)(k, x, (ulong)c, 0UL);         \
    }                                                                        \
  } while (0)
#else
#define ARG_FOLD(BETTER, SGBEST, bk, bi, cnt, part, part0)                   \
  do {                                                                       \
    lk[lid] = bk;                                                            \
    li[lid] = bi;                                                            \
    lc[lid] = cnt;                                                           \
    barrier(CLK_LOCAL_MEM_FENCE);                                            \
    for (uint h = WG / 2; h > 0; h >>= 1) {                                  \
      if (lid < h) {                                                         \
        ulong k = lk[lid], x = li[lid];                                      \
        ARG_TAKE(BETTER, lk[lid + h], li[lid + h], k, x);                    \
        lk[lid] = k;                                                         \
        li[lid] = x;                                                         \
        lc[lid] += lc[lid + h];                                              \
      }                                                                      \
      barrier(CLK_LOCAL_MEM_FENCE);                                          \
    }                                                                        \
    if (lid == 0)                                                            \
      part[part0 + get_group_id(0)] =                                        \
          (ulong4)(lk[0], li[0], (ulong)lc[0], 0UL);                         \
  } while (0)
#endif

// Best of two neighbouring rows (a before b): b only when strictly better.
#define PICK(BETTER, ka, ia, kb, ib, ko, io)                                 \
  do {                                                                       \
    int t_ = BETTER(kb, ka);                                                 \
    ko = t_ ? (kb) : (ka);                                                   \
    io = t_ ? (ib) : (ia);                                                   \
  } while (0)

// The best row of one vector (rows in order, a later one only when
// strictly better) as key ko and global index io; its rows counted.
#define V32(K, FIN, BETTER, a, vi, ko, io)                                   \
  do {                                                                       \
    uint k0 = K(a.x), k1 = K(a.y), k2 = K(a.z), k3 = K(a.w), kx, ky;         \
    uint i0_, i1_, ix_;                                                      \
    cnt += FIN(a.x) + FIN(a.y) + FIN(a.z) + FIN(a.w);                        \
    PICK(BETTER, k0, 0u, k1, 1u, kx, i0_);                                   \
    PICK(BETTER, k2, 2u, k3, 3u, ky, i1_);                                   \
    PICK(BETTER, kx, i0_, ky, i1_, ko, ix_);                                 \
    io = base + 4 * (vi) + ix_;                                              \
  } while (0)
#define V64(K, FIN, BETTER, a, vi, ko, io)                                   \
  do {                                                                       \
    ulong k0 = K(a.x), k1 = K(a.y);                                          \
    cnt += FIN(a.x) + FIN(a.y);                                              \
    int t_ = BETTER(k1, k0);                                                 \
    ko = t_ ? k1 : k0;                                                       \
    io = base + 2 * (vi) + (ulong)t_;                                        \
  } while (0)

// One pass over nvec 16-byte vectors (VT: uint4 of 32-bit rows or ulong2
// of 64-bit ones; V: V32 or V64), four vectors in flight per work-item:
// vector i + j * stride holds later rows than vector i, so the four bests
// meet in order and then the item's best so far, which only a strictly
// better key replaces (a first pair always, even at the identity key).
#define ARGK(NAME, VT, KT, V, K, BETTER, SGBEST, ID, FIN)                    \
  __kernel __attribute__((reqd_work_group_size(WG, 1, 1)))                   \
  void NAME(__global const VT *in, ulong nvec, ulong base,                   \
            __global ulong4 *part, uint part0)                               \
  {                                                                          \
    __local ulong lk[WG], li[WG];                                            \
    __local uint lc[WG];                                                     \
    const uint lid = get_local_id(0);                                        \
    const ulong stride = get_global_size(0);                                 \
    KT bk = ID;                                                              \
    ulong bi = NONE;                                                         \
    uint cnt = 0;                                                            \
    ulong i = get_global_id(0);                                              \
    for (; i + 3 * stride < nvec; i += 4 * stride) {                         \
      VT a = in[i], b = in[i + stride], c = in[i + 2 * stride],              \
         d = in[i + 3 * stride];                                             \
      KT ka, kb, kc, kd;                                                     \
      ulong ia, ib, ic, idd;                                                 \
      V(K, FIN, BETTER, a, i, ka, ia);                                       \
      V(K, FIN, BETTER, b, i + stride, kb, ib);                              \
      V(K, FIN, BETTER, c, i + 2 * stride, kc, ic);                          \
      V(K, FIN, BETTER, d, i + 3 * stride, kd, idd);                         \
      PICK(BETTER, ka, ia, kb, ib, ka, ia);                                  \
      PICK(BETTER, kc, ic, kd, idd, kc, ic);                                 \
      PICK(BETTER, ka, ia, kc, ic, ka, ia);                                  \
      if (BETTER(ka, bk) || bi == NONE) {                                    \
        bk = ka;                                                             \
        bi = ia;                                                             \
      }                                                                      \
    }                                                                        \
    for (; i < nvec; i += stride) {                                          \
      VT a = in[i];                                                          \
      KT ka;                                                                 \
      ulong ia;                                                              \
      V(K, FIN, BETTER, a, i, ka, ia);                                       \
      if (BETTER(ka, bk) || bi == NONE) {                                    \
        bk = ka;                                                             \
        bi = ia;                                                             \
      }                                                                      \
    }                                                                        \
    ulong bk64 = bk;                                                         \
    ARG_FOLD(BETTER, SGBEST, bk64, bi, cnt, part, part0);                    \
  }
#define ARG32(NAME, K, BETTER, SGBEST, ID, FIN)                              \
  ARGK(NAME, uint4, uint, V32, K, BETTER, SGBEST, ID, FIN)
#define ARG64(NAME, K, BETTER, SGBEST, ID, FIN)                              \
  ARGK(NAME, ulong2, ulong, V64, K, BETTER, SGBEST, ID, FIN)

#if WV_SUBGROUPS
#define SG_MIN sub_group_reduce_min
#define SG_MAX sub_group_reduce_max
#else
#define SG_MIN
#define SG_MAX
#endif

ARG32(arg_umin32, KU, LT, SG_MIN, 0xffffffffu, FIN_ALL)
ARG32(arg_umax32, KU, GT, SG_MAX, 0u, FIN_ALL)
ARG32(arg_smin32, KS32, LT, SG_MIN, 0xffffffffu, FIN_ALL)
ARG32(arg_smax32, KS32, GT, SG_MAX, 0u, FIN_ALL)
ARG32(arg_fmin32, KF32_MIN, LT, SG_MIN, 0xffffffffu, FIN32)
ARG32(arg_fmax32, KF32_MAX, GT, SG_MAX, 0u, FIN32)
ARG64(arg_umin64, KU, LT, SG_MIN, NONE, FIN_ALL)
ARG64(arg_umax64, KU, GT, SG_MAX, 0UL, FIN_ALL)
ARG64(arg_smin64, KS64, LT, SG_MIN, NONE, FIN_ALL)
ARG64(arg_smax64, KS64, GT, SG_MAX, 0UL, FIN_ALL)
ARG64(arg_fmin64, KF64_MIN, LT, SG_MIN, NONE, FIN64)
ARG64(arg_fmax64, KF64_MAX, GT, SG_MAX, 0UL, FIN64)

// Fold n partial pairs (and their counts) into out[0], one work-group.
// max: 1 for argmax.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void arg_finish(__global const ulong4 *part, uint n, uint max,
                __global ulong4 *out)
{
  __local ulong lk[WG], li[WG], lc[WG];
  const uint lid = get_local_id(0);
  ulong k = max ? 0UL : NONE, x = NONE, c = 0;
  for (uint i = lid; i < n; i += WG) {
    ulong4 p = part[i];
    if (max)
      ARG_TAKE(GT, p.x, p.y, k, x);
    else
      ARG_TAKE(LT, p.x, p.y, k, x);
    c += p.z;
  }
  lk[lid] = k;
  li[lid] = x;
  lc[lid] = c;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint h = WG / 2; h > 0; h >>= 1) {
    if (lid < h) {
      k = lk[lid];
      x = li[lid];
      if (max)
        ARG_TAKE(GT, lk[lid + h], li[lid + h], k, x);
      else
        ARG_TAKE(LT, lk[lid + h], li[lid + h], k, x);
      lk[lid] = k;
      li[lid] = x;
      lc[lid] += lc[lid + h];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0)
    out[0] = (ulong4)(lk[0], li[0], lc[0], 0UL);
}
