// sum_f32.comp - the first level of the float sum: every 256 rows (one
// group) become one partial by the tree G of docs/reduction.md, exactly.
//
// A group is handled by L = 8 lanes.  Lane j holds the K = 64 / L = 8
// 16-byte vectors number j + L k (k < K), i.e. rows 4 (j + L k) + c.  The
// fold v[i] + v[i + h] pairs vector q = j + L k with q + h/4, so
//   h = 128 .. 4L  stays inside the lane: vector k with vector k + h/(4L);
//   h = 2L .. 4    pairs lane j with lane j ^ (h/4), the same component c;
//                  both lanes of a pair compute the same sum (IEEE addition
//                  is commutative);
//   h = 2, 1       inside the lane again: (v0 + v2) + (v1 + v3).
// The page's 32-lane picture is L = 32.  Fewer lanes per group mean more
// of the tree inside a lane (fewer exchanges and barriers, more loads in
// flight per lane) and let shuffles work in sub-groups of only L lanes.
// The in-lane part is written out in full, in plain variables: left as
// loops over an array, Mesa keeps the array in scratch memory (5x slower
// on lavapipe), and no compiler should have to be trusted to unroll it.
//
// Exactness where the device flushes subnormals (NVIDIA's Vulkan driver
// does, and does not offer DenormPreserve).  The adds are `precise`
// hardware adds (no contraction, no reassociation); a flush changes one
// only if an operand or the exact sum is subnormal.  That cannot happen in
// a group none of whose rows is `tiny` (non-zero, |x| < 2^-103): such rows
// are multiples of 2^-126 (their ulp is at least that), and so is every
// sum of them, exact or rounded (below 2^-103 multiples of 2^-126 are
// representable; above, the spacing is a multiple of 2^-126), and a
// non-zero multiple of 2^-126 is normal.  So the fast path only checks its
// rows (one integer min per row), passes the flag along the exchanges, and
// a group with a tiny row is summed again by one lane with wv_fadd
// (fadd.glsl: hardware add, integer redo of zero-exponent cases) in the
// same tree order (group_exact).  Zeros, NaN and infinities are not tiny;
// data that is may run at a few percent of the fast path's speed.
//
// WV_SHUFFLE=1 exchanges with subgroupShuffleXor; the host uses it only
// with full sub-groups of at least L lanes, where an aligned block of L
// lanes lies inside one sub-group and lane ^ m (m < L) stays inside the
// block.  WV_SHUFFLE=0 goes through shared memory: two alternating buffers
// and one barrier per exchange (a lane can overwrite buffer b only after
// the next barrier, which every lane reaches only after its read of b).
//
// Rows past n are -0.0, the exact identity of IEEE addition (the padding of
// the last group).  The loop over groups is uniform per work-group so that
// every thread reaches every barrier.
#version 450
#if WV_DENORM
// DenormPreserve for 32-bit floats (SPV_KHR_float_controls): the page
// forbids flushing subnormals; the host uses this variant where the device
// promises shaderDenormPreserveFloat32 (4464 = capability DenormPreserve,
// 4459 = execution mode DenormPreserve).
#extension GL_EXT_spirv_intrinsics : require
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"],
                     capabilities = [4464], 4459, 32);
#endif
#extension GL_GOOGLE_include_directive : require
#if WV_SHUFFLE
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif

#include "fadd.glsl"

layout(local_size_x = 256) in;
const uint L = 8u;      // lanes per group: the host's WV_VK_SUM_LANES

layout(set = 0, binding = 0, std430) readonly buffer In { uvec4 vin[]; };
layout(set = 0, binding = 1, std430) writeonly buffer Out { float vout[]; };

layout(push_constant) uniform Push {
  uint n;          // rows in this input
  uint pad0;
  uint out_off;    // index of this dispatch's first partial
} pc;

const uint NEG_ZERO = 0x80000000u;

// key(x) < TINY_KEY <=> x is tiny: the key drops the sign, sends +-0 to the
// top of the range and orders the rest by magnitude, so one min per row
// keeps the flag.  0x0c000000 is the magnitude of 2^-103.
const uint TINY_KEY = (0x0c000000u << 1) - 2u;
uint key4(uvec4 v)
{
  uvec4 k = (v << 1) - uvec4(2u);
  return min(min(k.x, k.y), min(k.z, k.w));
}

uvec4 load4(uint q)
{
  uvec4 v = uvec4(NEG_ZERO);
  if (4u * q < pc.n) {
    v = vin[q];
    if (4u * q + 4u > pc.n) {   // the last, partial vector
      uvec4 row = uvec4(4u * q) + uvec4(0u, 1u, 2u, 3u);
      v = mix(uvec4(NEG_ZERO), v, lessThan(row, uvec4(pc.n)));
    }
  }
  return v;
}

vec4 add4(vec4 a, vec4 b)
{
  precise vec4 r = a + b;
  return r;
}

// Row r of this input, -0.0 past the end.
float row(uint r)
{
  return r < pc.n ? uintBitsToFloat(vin[r >> 2][r & 3u])
                  : uintBitsToFloat(NEG_ZERO);
}

// G over group g by one lane, every add by wv_fadd.  The fold-halves tree
// is the pairwise tree over the rows in bit-reversed order (the first fold
// pairs rows that differ in bit 7, the last those that differ in bit 0), so
// it is evaluated with a stack of partial sums, the lower-index operand on
// the left as in the fast path.
float group_exact(uint g)
{
  float st[8];
  uint depth = 0u;
  for (uint j = 0u; j < 256u; j++) {
    float x = row(g * 256u + (bitfieldReverse(j) >> 24));
    for (uint t = j; (t & 1u) != 0u; t >>= 1) {
      depth--;
      x = wv_fadd(st[depth], x);
    }
    st[depth] = x;
    depth++;
  }
  return st[0];
}

#if !WV_SHUFFLE
shared vec4 xs[2][256];
shared uint xm[2][256];
#endif

void main()
{
#if WV_SHUFFLE
  // Lanes numbered within the sub-group, so a block of L is one group
  // whatever the mapping from local ids to sub-group lanes.
  const uint li = gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID;
#else
  const uint lid = gl_LocalInvocationIndex;
  const uint li = lid;
#endif
  const uint lane = li % L;
  const uint unit = li / L;
  const uint per_wg = 256u / L;                  // groups per round
  const uint groups = (pc.n + 255u) / 256u;

  for (uint base = gl_WorkGroupID.x * per_wg; base < groups;
       base += gl_NumWorkGroups.x * per_wg) {
    const uint g = base + unit;
    const uint q = g * 64u + lane;
    uvec4 u0, u1, u2, u3, u4, u5, u6, u7;
    if ((base + per_wg) * 256u <= pc.n) {   // the work-group's rows all in
      u0 = vin[q];       u1 = vin[q + 8u];
      u2 = vin[q + 16u]; u3 = vin[q + 24u];
      u4 = vin[q + 32u]; u5 = vin[q + 40u];
      u6 = vin[q + 48u]; u7 = vin[q + 56u];
    } else {
      u0 = load4(q);       u1 = load4(q + 8u);
      u2 = load4(q + 16u); u3 = load4(q + 24u);
      u4 = load4(q + 32u); u5 = load4(q + 40u);
      u6 = load4(q + 48u); u7 = load4(q + 56u);
    }
    uint tiny = min(min(min(key4(u0), key4(u1)), min(key4(u2), key4(u3))),
                    min(min(key4(u4), key4(u5)), min(key4(u6), key4(u7))));
    vec4 a0 = add4(uintBitsToFloat(u0), uintBitsToFloat(u4));  // h = 128
    vec4 a1 = add4(uintBitsToFloat(u1), uintBitsToFloat(u5));
    vec4 a2 = add4(uintBitsToFloat(u2), uintBitsToFloat(u6));
    vec4 a3 = add4(uintBitsToFloat(u3), uintBitsToFloat(u7));
    a0 = add4(a0, a2); a1 = add4(a1, a3);                      // h = 64
    vec4 v = add4(a0, a1);                                     // h = 32
    uint x = 0u;
    for (uint m = L / 2u; m >= 1u; m >>= 1, x++) {  // h = 2L .. 4
#if WV_SHUFFLE
      vec4 w = subgroupShuffleXor(v, m);
      tiny = min(tiny, subgroupShuffleXor(tiny, m));
#else
      xs[x & 1u][lid] = v;
      xm[x & 1u][lid] = tiny;
      barrier();
      vec4 w = xs[x & 1u][lid ^ m];
      tiny = min(tiny, xm[x & 1u][lid ^ m]);
#endif
      // Lower index on the left, as the page writes it (the bits are the
      // same either way; this keeps NaN payloads boring too).  Operands
      // are selected, not the call.
      const bool low = (lane & m) == 0u;
      v = add4(low ? v : w, low ? w : v);
    }
    // h = 2, 1.  Every lane of the block now holds the same values and
    // the block's flag.
    precise float s = (v.x + v.z) + (v.y + v.w);
    if (lane == 0u && g < groups)
      vout[pc.out_off + g] = tiny < TINY_KEY ? group_exact(g) : s;
#if !WV_SHUFFLE
    barrier();   // xs is rewritten by the next round's first exchange
#endif
  }
}
