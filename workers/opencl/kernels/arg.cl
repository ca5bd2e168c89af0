// arg.cl - the OpenCL backend's argmin/argmax (docs/reduction.md; issue
// 23), every dtype.  Part of the wide program, built after reduce.cl with
// WV_ROW64=1 (ocl_reduce.c): it uses reduce.cl's keys of both widths, WG and
// WV_SUBGROUPS.
//
// Every row becomes an (order key, global index) pair; a work-item keeps
// the first best of its rows (its indices only grow), the work-group and
// then arg_finish fold pairs lexicographically (the better key, then the
// lower index), so ties go to the lowest index whatever the schedule.  An
// unused pair is (identity, ~0).  Float rows that are NaN or +-inf get the
// identity key and are not counted; the count of the rest comes back with
// the pair (docs/reduction.md: the rows considered).

#define NONE 0xffffffffffffffffUL
// Whether a row counts: floats only when finite.
#define FIN_ALL(x) 1u
#define FIN64(x) (((x) & EXP64) != EXP64 ? 1u : 0u)
#define FIN32(x) (((x) & EXP32) != EXP32 ? 1u : 0u)

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
