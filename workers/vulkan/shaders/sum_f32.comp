// sum_f32.comp - the first level of the float sum: every 256 rows (one
// group) become one partial by the tree G of docs/reduction.md, exactly.
//
// A group is handled by a unit of 32 lanes.  Lane j loads rows 4j..4j+3 and
// 128+4j..128+4j+3 as two 16-byte vectors:
//   h = 128      v[i] + v[i + 128] is the lane's own a + b (4 adds);
//   h = 64 .. 4  v[i] + v[i + h] pairs lane j with lane j ^ (h / 4), since
//                i + h for i = 4j + c is 4(j + h/4) + c; both lanes of a
//                pair compute the same sum (IEEE addition is commutative);
//   h = 2, 1     inside the lane again: (v0 + v2) + (v1 + v3).
// The exchange moves bits only; every addition is `precise` (no contraction,
// no reassociation).  WV_SHUFFLE=1 exchanges with subgroupShuffleXor and is
// used only on sub-groups of at least 32 full lanes, where lane ^ m (m < 32)
// stays inside the unit; WV_SHUFFLE=0 goes through shared memory, two
// alternating buffers and one barrier per exchange (a lane can overwrite
// buffer b only after the next barrier, which every lane reaches only after
// its read of b).
//
// Rows past n are -0.0, the exact identity of IEEE addition (the padding of
// the last group).  A work-group is 8 units; the loop over groups is uniform
// per work-group so that every thread reaches every barrier.
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
#if WV_SHUFFLE
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif

layout(local_size_x = 256) in;

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
    for (uint c = 1u; c < 4u; c++)
      if (4u * q + c >= pc.n)
        v[c] = NEG_ZERO;
  }
  return uintBitsToFloat(v);
}

#if !WV_SHUFFLE
shared vec4 xs[2][256];
#endif

void main()
{
#if WV_SHUFFLE
  const uint lane = gl_SubgroupInvocationID & 31u;
  const uint unit = gl_SubgroupID * (gl_SubgroupSize / 32u) +
                    (gl_SubgroupInvocationID >> 5);
#else
  const uint lid = gl_LocalInvocationIndex;
  const uint lane = lid & 31u;
  const uint unit = lid >> 5;
#endif
  const uint groups = (pc.n + 255u) / 256u;

  for (uint base = gl_WorkGroupID.x * 8u; base < groups;
       base += gl_NumWorkGroups.x * 8u) {
    const uint g = base + unit;
    precise vec4 v = load4(g * 64u + lane) + load4(g * 64u + 32u + lane);
    uint k = 0u;
    for (uint m = 16u; m >= 1u; m >>= 1, k++) {
#if WV_SHUFFLE
      vec4 w = subgroupShuffleXor(v, m);
#else
      xs[k & 1u][lid] = v;
      barrier();
      vec4 w = xs[k & 1u][lid ^ m];
#endif
      // Lower index on the left, as the page writes it (the bits are the
      // same either way; this keeps NaN payloads boring too).
      if ((lane & m) == 0u)
        v = v + w;
      else
        v = w + v;
    }
    precise float s = (v.x + v.z) + (v.y + v.w);
    if (lane == 0u && g < groups)
      vout[pc.out_off + g] = s;
#if !WV_SHUFFLE
    barrier();   // xs is rewritten by the next round's first exchange
#endif
  }
}
