// reduce_int64.comp - one level of every order-free reduction on 64-bit
// rows: uint64/sint64 sum, min, max, extent, and, or, xor, and float64
// min/max/extent (as integer keys).  reduce_int.comp's shape with 64-bit
// rows (shaderInt64): work-group w folds blocks w, w + groups, ... of
// U x 256 16-byte vectors (two rows each) and writes ONE partial per
// work-group.  The work-group combines its threads with 64-bit sub-group
// ops (WV_SUBGROUP=1: arithmetic sub-groups and
// shaderSubgroupExtendedTypes), one value per sub-group through shared
// memory, or with a shared-memory tree (WV_SUBGROUP=0).
//
// Keys (first level only, KEY_*): sint64 flips the sign bit; float64 maps
// finite x to x ^ (sign ? ~0 : 1 << 63) (so -0.0 < +0.0) and NaN, +-inf to
// the op's identity.  Extent: mins at out_off + p, maxes at
// out_half + out_off + p; a later level reads the max half from in_half
// (a u64vec2 index; 0 at the first level).
#version 450
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#if WV_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_shader_subgroup_extended_types_int64 : require
#endif

layout(local_size_x = 256) in;

// 0 add, 1 umin, 2 umax, 3 and, 4 or, 5 xor, 6 extent (umin + umax)
layout(constant_id = 0) const uint OP = 0;
const uint U = 8u;      // the host's WV_VK_UNROLL: a block is the
                        // bytes of reduce_int.comp's

const uint KEY_NONE = 0, KEY_SIGNED = 1, KEY_FLOAT = 2;
const uint64_t ONES = 0xffffffffffffffffUL;
const uint64_t TOP = 0x8000000000000000UL;
const uint64_t EXPM = 0x7ff0000000000000UL;

layout(set = 0, binding = 0, std430) readonly buffer In { u64vec2 vin[]; };
layout(set = 0, binding = 1, std430) writeonly buffer Out { uint64_t vout[]; };

layout(push_constant) uniform Push {
  uint n;          // rows (per half for extent levels) in this input
  uint in_half;    // u64vec2 index of the max half, 0 at the first level
  uint out_off;    // index of this dispatch's first partial
  uint out_half;   // extent: distance from a min partial to its max partial
  uint key;        // KEY_*
} pc;

uint64_t ident0() { return OP == 1 || OP == 6 || OP == 3 ? ONES : 0UL; }

uint64_t op0(uint64_t a, uint64_t b)
{
  if (OP == 0) return a + b;
  if (OP == 1 || OP == 6) return min(a, b);
  if (OP == 2) return max(a, b);
  if (OP == 3) return a & b;
  if (OP == 4) return a | b;
  return a ^ b;
}

u64vec2 keys(u64vec2 x, bool lo)
{
  if (pc.key == KEY_SIGNED)
    return x ^ u64vec2(TOP);
  if (pc.key == KEY_FLOAT) {
    u64vec2 k = x ^ (u64vec2(i64vec2(x) >> 63) | u64vec2(TOP));
    bvec2 skip = equal(x & u64vec2(EXPM), u64vec2(EXPM));
    return mix(k, u64vec2(lo ? ONES : 0UL), skip);
  }
  return x;
}

void take(u64vec2 raw, uint q, inout uint64_t a0, inout uint64_t a1)
{
  const bool keyed = OP == 1u || OP == 2u || OP == 6u;
  u64vec2 v = keyed ? keys(raw, OP != 2u) : raw;
  a0 = op0(a0, op0(v.x, v.y));
  if (OP == 6u) {
    u64vec2 w = raw;
    if (pc.in_half != 0u)
      w = vin[pc.in_half + q];
    w = keys(w, false);
    a1 = max(a1, max(w.x, w.y));
  }
}

// The vector holding the last row when n is odd: its second row is past n.
void take_last(u64vec2 raw, uint q, inout uint64_t a0, inout uint64_t a1)
{
  const bool keyed = OP == 1u || OP == 2u || OP == 6u;
  u64vec2 v = keyed ? keys(raw, OP != 2u) : raw;
  a0 = op0(a0, v.x);
  if (OP == 6u) {
    u64vec2 w = raw;
    if (pc.in_half != 0u)
      w = vin[pc.in_half + q];
    a1 = max(a1, keys(w, false).x);
  }
}

shared uint64_t s0[256], s1[256];

void main()
{
  const uint lid = gl_LocalInvocationIndex;
  const uint wg = gl_WorkGroupID.x;
  const uint bv = U * 256u;                      // u64vec2 per block
  const uint nvec = (pc.n + 1u) / 2u;
  const uint full = (pc.n / 2u) / bv;            // blocks without checks
  const uint nblk = (nvec + bv - 1u) / bv;
  uint64_t a0 = ident0(), a1 = 0UL;

  for (uint b = wg; b < full; b += gl_NumWorkGroups.x) {
    const uint q = b * bv + lid;
    u64vec2 v0 = vin[q],        v1 = vin[q + 256u];
    u64vec2 v2 = vin[q + 512u], v3 = vin[q + 768u];
    u64vec2 v4 = vin[q + 1024u], v5 = vin[q + 1280u];
    u64vec2 v6 = vin[q + 1536u], v7 = vin[q + 1792u];
    take(v0, q, a0, a1);          take(v1, q + 256u, a0, a1);
    take(v2, q + 512u, a0, a1);   take(v3, q + 768u, a0, a1);
    take(v4, q + 1024u, a0, a1);  take(v5, q + 1280u, a0, a1);
    take(v6, q + 1536u, a0, a1);  take(v7, q + 1792u, a0, a1);
  }
  for (uint b = full + wg; b < nblk; b += gl_NumWorkGroups.x)
    for (uint u = 0u; u < U; u++) {
      const uint q = b * bv + u * 256u + lid;
      if (q < nvec) {
        if (2u * q + 2u > pc.n)
          take_last(vin[q], q, a0, a1);
        else
          take(vin[q], q, a0, a1);
      }
    }

#if WV_SUBGROUP
  uint64_t r0, r1 = 0UL;
  if (OP == 0) r0 = subgroupAdd(a0);
  else if (OP == 1 || OP == 6) r0 = subgroupMin(a0);
  else if (OP == 2) r0 = subgroupMax(a0);
  else if (OP == 3) r0 = subgroupAnd(a0);
  else if (OP == 4) r0 = subgroupOr(a0);
  else r0 = subgroupXor(a0);
  if (OP == 6) r1 = subgroupMax(a1);
  if (subgroupElect()) {
    s0[gl_SubgroupID] = r0;
    s1[gl_SubgroupID] = r1;
  }
  barrier();
  if (lid == 0u) {
    uint64_t b0 = s0[0], b1 = s1[0];
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
