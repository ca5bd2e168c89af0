// argm.comp - argmin / argmax (docs/reduction.md): one level over rows
// (WV_LEVEL=0; 4-byte rows, or 8-byte ones with WV_ROW64=1) or over the
// partials of an earlier level (WV_LEVEL=1).  A partial is (key, index,
// count): the order key of the best row, its global index, and the rows
// considered (floats only: the finite ones; integer jobs leave it 0, the
// host knows their count).  Both ops are one problem: the lexicographic minimum of
// (key, index), with argmax keys inverted (~k), so that ties go to the
// lowest index.  "No row" is (~0, ~0): a real row with key ~0 still wins
// by its index.  That minimum is associative and commutative, so threads
// and levels combine in any order.
//
// Keys (OP >> 1): 0 unsigned, 1 signed (sign bit flipped), 2 float
// (x ^ (sign ? ~0 : top bit), so -0.0 < +0.0; NaN and +-inf are not
// considered: no key, not counted).  Each thread walks its rows in
// increasing index order and keeps the first strictly better one, in the
// row's own width (32-bit keys for 4-byte rows); the work-group combines in
// 64 bits: sub-group min and add (WV_SUBGROUP=1, needs 64-bit sub-group
// types, shaderSubgroupExtendedTypes) then shared memory, or a
// shared-memory tree.  One partial per work-group; the index is
// row0 + row in this window.
#version 450
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#if WV_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_shader_subgroup_extended_types_int64 : require
#endif

layout(local_size_x = 256) in;

// bit 0: argmax; bits 1-2: the key kind
layout(constant_id = 0) const uint OP = 0;
const bool ARGMAX = (OP & 1u) != 0u;
const uint KIND = OP >> 1;
const uint U = 8u;      // the host's WV_VK_UNROLL: reduce_int.comp's blocks
const uint64_t NONE = 0xffffffffffffffffUL;

struct Part { uint64_t key, idx, cnt, pad; };

#if WV_LEVEL
layout(set = 0, binding = 0, std430) readonly buffer In { Part pin[]; };
#elif WV_ROW64
layout(set = 0, binding = 0, std430) readonly buffer In { u64vec2 vin[]; };
#else
layout(set = 0, binding = 0, std430) readonly buffer In { uvec4 vin[]; };
#endif
layout(set = 0, binding = 1, std430) writeonly buffer Out { Part pout[]; };

layout(push_constant) uniform Push {
  uint n;          // rows (partials) in this input
  uint out_off;    // index of this dispatch's first partial
  uint row_lo;     // global index of row 0 of this window
  uint row_hi;
} pc;

void better(inout uint64_t k, inout uint64_t i, uint64_t k2, uint64_t i2)
{
  if (k2 < k || (k2 == k && i2 < i)) {
    k = k2;
    i = i2;
  }
}

#if !WV_LEVEL
#if WV_ROW64
#define ROWS 2u
#define KT uint64_t
const KT KNONE = NONE;
KT key_of(uint64_t x, out bool ok)
{
  ok = true;
  uint64_t k = x;
  if (KIND == 1u) k = x ^ 0x8000000000000000UL;
  if (KIND == 2u) {
    ok = (x & 0x7ff0000000000000UL) != 0x7ff0000000000000UL;
    k = x ^ (uint64_t(int64_t(x) >> 63) | 0x8000000000000000UL);
  }
  return ARGMAX ? ~k : k;
}
#else
#define ROWS 4u
#define KT uint
const KT KNONE = 0xffffffffu;
KT key_of(uint x, out bool ok)
{
  ok = true;
  uint k = x;
  if (KIND == 1u) k = x ^ 0x80000000u;
  if (KIND == 2u) {
    ok = (x & 0x7f800000u) != 0x7f800000u;
    k = x ^ (uint(int(x) >> 31) | 0x80000000u);
  }
  return ARGMAX ? ~k : k;
}
#endif

// Row r (in this window) with bits x: taken when considered and strictly
// better (rows come in increasing r, so the first of equal keys stays).
// A float's key is never KNONE (that would be a NaN), so non-finite rows
// become KNONE and one compare does; an integer's may be, hence the check
// of bi.  Only floats count: an integer job's count is the host's.
void take(KT x, uint r, inout KT bk, inout uint bi, inout uint cnt)
{
  bool ok;
  KT k = key_of(x, ok);
  if (KIND == 2u) {
    cnt += ok ? 1u : 0u;
    k = ok ? k : KNONE;
    if (k < bk) {
      bk = k;
      bi = r;
    }
  } else if (k < bk || bi == 0xffffffffu) {
    bk = k;
    bi = r;
  }
}

#if WV_ROW64
#define VT u64vec2
#else
#define VT uvec4
#endif

void take_vec(VT v, uint q, inout KT bk, inout uint bi, inout uint cnt,
              bool edge)
{
  const uint r = ROWS * q;
#if WV_ROW64
  take(v.x, r, bk, bi, cnt);
  if (!edge || r + 1u < pc.n) take(v.y, r + 1u, bk, bi, cnt);
#else
  take(v.x, r, bk, bi, cnt);
  if (!edge || r + 1u < pc.n) take(v.y, r + 1u, bk, bi, cnt);
  if (!edge || r + 2u < pc.n) take(v.z, r + 2u, bk, bi, cnt);
  if (!edge || r + 3u < pc.n) take(v.w, r + 3u, bk, bi, cnt);
#endif
}
#endif

shared uint64_t sk[256], si[256], sc[256];

void main()
{
  const uint lid = gl_LocalInvocationIndex;
  const uint wg = gl_WorkGroupID.x;
  uint64_t k64 = NONE, i64 = NONE, c64 = 0UL;
#if WV_LEVEL
  for (uint p = wg * 256u + lid; p < pc.n; p += gl_NumWorkGroups.x * 256u) {
    Part a = pin[p];
    better(k64, i64, a.key, a.idx);
    c64 += a.cnt;
  }
#else
  const uint bv = U * 256u;
  const uint nvec = (pc.n + ROWS - 1u) / ROWS;
  const uint full = (pc.n / ROWS) / bv;
  const uint nblk = (nvec + bv - 1u) / bv;
  KT bk = KNONE;
  uint bi = 0xffffffffu, cnt = 0u;
  // All U loads of a block are issued before any is used (as in
  // reduce_int.comp); the rows are then taken in increasing order.
  for (uint b = wg; b < full; b += gl_NumWorkGroups.x) {
    const uint q = b * bv + lid;
    VT v0 = vin[q],         v1 = vin[q + 256u];
    VT v2 = vin[q + 512u],  v3 = vin[q + 768u];
    VT v4 = vin[q + 1024u], v5 = vin[q + 1280u];
    VT v6 = vin[q + 1536u], v7 = vin[q + 1792u];
    take_vec(v0, q, bk, bi, cnt, false);
    take_vec(v1, q + 256u, bk, bi, cnt, false);
    take_vec(v2, q + 512u, bk, bi, cnt, false);
    take_vec(v3, q + 768u, bk, bi, cnt, false);
    take_vec(v4, q + 1024u, bk, bi, cnt, false);
    take_vec(v5, q + 1280u, bk, bi, cnt, false);
    take_vec(v6, q + 1536u, bk, bi, cnt, false);
    take_vec(v7, q + 1792u, bk, bi, cnt, false);
  }
  for (uint b = full + wg; b < nblk; b += gl_NumWorkGroups.x)
    for (uint u = 0u; u < U; u++) {
      const uint q = b * bv + u * 256u + lid;
      if (q < nvec)
        take_vec(vin[q], q, bk, bi, cnt, ROWS * q + ROWS > pc.n);
    }
  if (bi != 0xffffffffu) {
    k64 = uint64_t(bk);
    i64 = (uint64_t(pc.row_hi) << 32 | uint64_t(pc.row_lo)) + uint64_t(bi);
  }
  c64 = uint64_t(cnt);
#endif

#if WV_SUBGROUP
  uint64_t rk = subgroupMin(k64);
  uint64_t ri = subgroupMin(k64 == rk ? i64 : NONE);
  uint64_t rc = subgroupAdd(c64);
  if (subgroupElect()) {
    sk[gl_SubgroupID] = rk;
    si[gl_SubgroupID] = ri;
    sc[gl_SubgroupID] = rc;
  }
  barrier();
  if (lid == 0u) {
    uint64_t bk2 = sk[0], bi2 = si[0], bc = sc[0];
    for (uint s = 1u; s < gl_NumSubgroups; s++) {
      better(bk2, bi2, sk[s], si[s]);
      bc += sc[s];
    }
    pout[pc.out_off + wg] = Part(bk2, bi2, bc, 0UL);
  }
#else
  sk[lid] = k64;
  si[lid] = i64;
  sc[lid] = c64;
  barrier();
  for (uint h = 128u; h >= 1u; h >>= 1) {
    if (lid < h) {
      uint64_t a = sk[lid], b = si[lid];
      better(a, b, sk[lid + h], si[lid + h]);
      sk[lid] = a;
      si[lid] = b;
      sc[lid] += sc[lid + h];
    }
    barrier();
  }
  if (lid == 0u)
    pout[pc.out_off + wg] = Part(sk[0], si[0], sc[0], 0UL);
#endif
}
