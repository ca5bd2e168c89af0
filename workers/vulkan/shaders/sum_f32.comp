// sum_f32.comp - the first level of the float sum: every 256 rows (one
// group) become one partial by the tree G of docs/reduction.md, exactly.
//
// A group is handled by L = 8 lanes.  Lane j holds the K = 64 / L = 8
// 16-byte vectors number j + L k (k < K), i.e. rows 4 (j + L k) + c.  The fold v[i] + v[i + h] pairs vector q = j + L k
// with q + h/4, so
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
// Exchanges move bits only; every addition is wv_fadd (fadd.glsl): a
// `precise` hardware add (no contraction, no reassociation), redone in
// integer arithmetic when a zero or subnormal is involved, so the bits are
// IEEE's also on devices that flush subnormals.  WV_SHUFFLE=1 exchanges with subgroupShuffleXor; the
// host uses it only with full sub-groups of at least L lanes, where an
// aligned block of L lanes lies inside one sub-group and lane ^ m (m < L)
// stays inside the block.  WV_SHUFFLE=0 goes through shared memory: two
// alternating buffers and one barrier per exchange (a lane can overwrite
// buffer b only after the next barrier, which every lane reaches only after
// its read of b).
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

vec4 load4(uint q)
{
  uvec4 v = uvec4(NEG_ZERO);
  if (4u * q < pc.n) {
    v = vin[q];
    if (4u * q + 4u > pc.n) {   // the last, partial vector
      uvec4 row = uvec4(4u * q) + uvec4(0u, 1u, 2u, 3u);
      v = mix(uvec4(NEG_ZERO), v, lessThan(row, uvec4(pc.n)));
    }
  }
  return uintBitsToFloat(v);
}

#if !WV_SHUFFLE
shared vec4 xs[2][256];
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
    precise vec4 a0 = load4(q),       a1 = load4(q + 8u);
    precise vec4 a2 = load4(q + 16u), a3 = load4(q + 24u);
    precise vec4 a4 = load4(q + 32u), a5 = load4(q + 40u);
    precise vec4 a6 = load4(q + 48u), a7 = load4(q + 56u);
    a0 = wv_fadd4(a0, a4); a1 = wv_fadd4(a1, a5);             // h = 128
    a2 = wv_fadd4(a2, a6); a3 = wv_fadd4(a3, a7);
    a0 = wv_fadd4(a0, a2); a1 = wv_fadd4(a1, a3);             // h = 64
    vec4 v = wv_fadd4(a0, a1);                                // h = 32
    uint x = 0u;
    for (uint m = L / 2u; m >= 1u; m >>= 1, x++) {  // h = 2L .. 4
#if WV_SHUFFLE
      vec4 w = subgroupShuffleXor(v, m);
#else
      xs[x & 1u][lid] = v;
      barrier();
      vec4 w = xs[x & 1u][lid ^ m];
#endif
      // Lower index on the left, as the page writes it (the bits are the
      // same either way; this keeps NaN payloads boring too).  Operands
      // are selected, not the call: one wv_fadd4 for the whole sub-group
      // instead of two divergent ones.
      const bool low = (lane & m) == 0u;
      v = wv_fadd4(low ? v : w, low ? w : v);
    }
    float s = wv_fadd(wv_fadd(v.x, v.z), wv_fadd(v.y, v.w));  // h = 2, 1
    if (lane == 0u && g < groups)
      vout[pc.out_off + g] = s;
#if !WV_SHUFFLE
    barrier();   // xs is rewritten by the next round's first exchange
#endif
  }
}
