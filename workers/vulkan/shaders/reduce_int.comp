// reduce_int.comp - one level of every order-free reduction: integer sum,
// min, max, extent, and, or, xor, and float min/max/extent (as integer keys),
// on 4-byte rows (WV_ROW64=0) or 8-byte rows (WV_ROW64=1, shaderInt64).
//
// Work-group w folds blocks w, w + groups, ... of U x 256 16-byte vectors
// (four rows each, or two) (invocation i: vectors i, i + 256, ... of a
// block, so each load of a sub-group is one contiguous run) into its
// accumulators and writes its partial(s) once at the end: one per
// work-group, or (the first level of the 4-byte sub-group path) one per
// sub-group, `slots` of them per work-group.  The U loads of a block are
// all issued before any is used (written out in plain variables: no
// compiler has to be trusted to hoist loads past the bounds checks, which
// only the one partial block at the end has).  The host dispatches only as
// many work-groups as fill the device (wv_vk_stream_groups) and counts
// partials from that number.  The work-group then combines its threads
// with one sub-group instruction per sub-group (WV_SUBGROUP=1,
// GL_KHR_shader_subgroup_arithmetic; 8-byte rows also need
// shaderSubgroupExtendedTypes) or with a shared-memory tree (WV_SUBGROUP=0,
// devices without arithmetic sub-group ops in compute).  These ops are
// associative and commutative on the bits, so the order is free
// (docs/reduction.md "Integer ops").
//
// Min and max work on unsigned keys (KEY_*): signed rows flip the sign bit,
// float rows map finite values to the order key of docs/reduction.md
// (k = x ^ (sign ? all ones : top bit), so -0.0 < +0.0) and map NaN and
// +-inf to the op's identity, i.e. ignore them.  Only the first level
// applies keys; later levels reduce keys.
//
// Extent carries two accumulators (min key, max key).  Its partials are two
// halves of the output: mins at out_off + p, maxes at out_half + out_off + p;
// a later level reads the halves back from in_half (0 at the first level,
// where both accumulators read the same rows).
#version 450
#if WV_ROW64
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#endif
#if WV_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#if WV_ROW64
#extension GL_EXT_shader_subgroup_extended_types_int64 : require
#endif
#endif

layout(local_size_x = 256) in;

// 0 add, 1 umin, 2 umax, 3 and, 4 or, 5 xor, 6 extent (umin + umax)
layout(constant_id = 0) const uint OP = 0;
const uint U = 8u;      // the host's WV_VK_UNROLL

const uint KEY_NONE = 0, KEY_SIGNED = 1, KEY_FLOAT = 2;

// T: one row; V: one 16-byte vector of R rows.
#if WV_ROW64
#define T uint64_t
#define V u64vec2
#define IV i64vec2
#define BV bvec2
const uint R = 2u;
#define SHIFT 63
const uint64_t ONES = 0xffffffffffffffffUL;
const uint64_t TOP = 0x8000000000000000UL;
const uint64_t EXPM = 0x7ff0000000000000UL;
const uint64_t ZERO = 0UL;
#else
#define T uint
#define V uvec4
#define IV ivec4
#define BV bvec4
const uint R = 4u;
#define SHIFT 31
const uint ONES = 0xffffffffu;
const uint TOP = 0x80000000u;
const uint EXPM = 0x7f800000u;
const uint ZERO = 0u;
#endif

layout(set = 0, binding = 0, std430) readonly buffer In { V vin[]; };
layout(set = 0, binding = 1, std430) writeonly buffer Out { T vout[]; };

layout(push_constant) uniform Push {
  uint n;          // rows (per half for extent levels) in this input
  uint in_half;    // V index of the max half, 0 at the first level
  uint out_off;    // index of this dispatch's first partial
  uint out_half;   // extent: distance from a min partial to its max partial
  uint key;        // KEY_*
#if !WV_ROW64
  uint slots;      // partials per work-group: 1, or (sub-group path) one
                   // per sub-group, room for 256 / the smallest sub-group size
#endif
} pc;

T ident0() { return OP == 1 || OP == 6 || OP == 3 ? ONES : ZERO; }

T op0(T a, T b)
{
  if (OP == 0) return a + b;
  if (OP == 1 || OP == 6) return min(a, b);
  if (OP == 2) return max(a, b);
  if (OP == 3) return a & b;
  if (OP == 4) return a | b;
  return a ^ b;
}

// Keys of a vector's rows for a min (lo = true) or max accumulator; the
// identity for rows that are ignored.
V keys(V x, bool lo)
{
  if (pc.key == KEY_SIGNED)
    return x ^ V(TOP);
  if (pc.key == KEY_FLOAT) {
    V k = x ^ (V(IV(x) >> SHIFT) | V(TOP));
    BV skip = equal(x & V(EXPM), V(EXPM));
    return mix(k, V(lo ? ONES : ZERO), skip);
  }
  return x;
}

#if WV_ROW64
T foldv(V v) { return op0(v.x, v.y); }
T maxv(V v) { return max(v.x, v.y); }
#else
T foldv(V v) { return op0(op0(v.x, v.y), op0(v.z, v.w)); }
T maxv(V v) { return max(max(v.x, v.y), max(v.z, v.w)); }
#endif

// Fold vector q (raw: its rows; all in range) into the accumulators.
void take(V raw, uint q, inout T a0, inout T a1)
{
  const bool keyed = OP == 1u || OP == 2u || OP == 6u;
  a0 = op0(a0, foldv(keyed ? keys(raw, OP != 2u) : raw));
  if (OP == 6u) {
    // A later level's max half; at the first level the same rows (an if,
    // not ?:, which compilers may turn into a second load).
    V w = raw;
    if (pc.in_half != 0u)
      w = vin[pc.in_half + q];
    a1 = max(a1, maxv(keys(w, false)));
  }
}

// The same for the one vector that holds the last rows: rows past n take
// the identity (8-byte rows: n is odd, the vector's second row is past n).
void take_last(V raw, uint q, inout T a0, inout T a1)
{
  const bool keyed = OP == 1u || OP == 2u || OP == 6u;
  V v = keyed ? keys(raw, OP != 2u) : raw;
#if WV_ROW64
  a0 = op0(a0, v.x);
#else
  const bvec4 in_range = lessThan(uvec4(4u * q) + uvec4(0u, 1u, 2u, 3u),
                                  uvec4(pc.n));
  a0 = op0(a0, foldv(mix(uvec4(ident0()), v, in_range)));
#endif
  if (OP == 6u) {
    V w = raw;
    if (pc.in_half != 0u)
      w = vin[pc.in_half + q];
#if WV_ROW64
    a1 = max(a1, keys(w, false).x);
#else
    a1 = max(a1, maxv(mix(uvec4(0u), keys(w, false), in_range)));
#endif
  }
}

shared T s0[256], s1[256];   // sub-group path: one slot per sub-group

void main()
{
  const uint lid = gl_LocalInvocationIndex;
  const uint wg = gl_WorkGroupID.x;
  const uint bv = U * 256u;                      // vectors per block
  const uint nvec = (pc.n + R - 1u) / R;
  const uint full = (pc.n / R) / bv;             // blocks without checks
  const uint nblk = (nvec + bv - 1u) / bv;
  T a0 = ident0(), a1 = ZERO;

  // Both loops are uniform per work-group, so every invocation reaches the
  // sub-group step and the barriers below together.
  for (uint b = wg; b < full; b += gl_NumWorkGroups.x) {
    const uint q = b * bv + lid;
    V v0 = vin[q],         v1 = vin[q + 256u];
    V v2 = vin[q + 512u],  v3 = vin[q + 768u];
    V v4 = vin[q + 1024u], v5 = vin[q + 1280u];
    V v6 = vin[q + 1536u], v7 = vin[q + 1792u];
    take(v0, q, a0, a1);          take(v1, q + 256u, a0, a1);
    take(v2, q + 512u, a0, a1);   take(v3, q + 768u, a0, a1);
    take(v4, q + 1024u, a0, a1);  take(v5, q + 1280u, a0, a1);
    take(v6, q + 1536u, a0, a1);  take(v7, q + 1792u, a0, a1);
  }
  for (uint b = full + wg; b < nblk; b += gl_NumWorkGroups.x)
    for (uint u = 0u; u < U; u++) {
      const uint q = b * bv + u * 256u + lid;
      if (q < nvec) {
        if (R * q + R > pc.n)
          take_last(vin[q], q, a0, a1);
        else
          take(vin[q], q, a0, a1);
      }
    }

#if WV_SUBGROUP
  T r0, r1 = ZERO;
  if (OP == 0) r0 = subgroupAdd(a0);
  else if (OP == 1 || OP == 6) r0 = subgroupMin(a0);
  else if (OP == 2) r0 = subgroupMax(a0);
  else if (OP == 3) r0 = subgroupAnd(a0);
  else if (OP == 4) r0 = subgroupOr(a0);
  else r0 = subgroupXor(a0);
  if (OP == 6) r1 = subgroupMax(a1);
#if !WV_ROW64
  if (pc.slots > 1u) {
    // One partial per sub-group, no barrier (a CPU driver runs work-groups
    // as fibers, where a barrier costs).  Slots that no sub-group of this
    // size fills get the identity.
    const uint o = pc.out_off + wg * pc.slots;
    if (subgroupElect()) {
      vout[o + gl_SubgroupID] = r0;
      if (OP == 6) vout[pc.out_half + o + gl_SubgroupID] = r1;
      if (gl_SubgroupID == 0u)
        for (uint k = gl_NumSubgroups; k < pc.slots; k++) {
          vout[o + k] = ident0();
          if (OP == 6) vout[pc.out_half + o + k] = 0u;
        }
    }
    return;
  }
#endif
  if (subgroupElect()) {
    s0[gl_SubgroupID] = r0;
    s1[gl_SubgroupID] = r1;
  }
  barrier();
  if (lid == 0u) {
    T b0 = s0[0], b1 = s1[0];
    for (uint s = 1u; s < gl_NumSubgroups; s++) {
      b0 = op0(b0, s0[s]);
      b1 = max(b1, s1[s]);
    }
    vout[pc.out_off + wg] = b0;
    if (OP == 6) vout[pc.out_half + pc.out_off + wg] = b1;
  }
#else
  s0[lid] = a0;
  s1[lid] = a1;
  barrier();
  for (uint h = 128u; h >= 1u; h >>= 1) {
    if (lid < h) {
      s0[lid] = op0(s0[lid], s0[lid + h]);
      if (OP == 6) s1[lid] = max(s1[lid], s1[lid + h]);
    }
    barrier();
  }
  if (lid == 0u) {
    vout[pc.out_off + wg] = s0[0];
    if (OP == 6) vout[pc.out_half + pc.out_off + wg] = s1[0];
  }
#endif
}
