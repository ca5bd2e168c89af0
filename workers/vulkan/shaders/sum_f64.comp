// sum_f64.comp - the first level of the float64 sum: every 256 rows (one
// group) become one partial by the tree G of docs/reduction.md, with
// binary64 additions (shaderFloat64), exactly.
//
// sum_f32.comp's shape for 8-byte rows.  A group is 128 16-byte vectors
// (two rows each), handled by L = 16 lanes; lane j holds the K = 8 vectors
// j + 16 k, i.e. rows 2 (j + 16 k) + c.  The fold v[i] + v[i + h] pairs
// vector q with q + h/2, the same component c, so
//   h = 128, 64, 32  stay inside the lane: vector k with k + h/32;
//   h = 16 .. 2      pair lane j with lane j ^ (h/2) (both lanes of a pair
//                    compute the same sum: IEEE addition is commutative);
//   h = 1            inside the lane: v.x + v.y.
// Every add is `precise` (no contraction, no reassociation).  Subnormals:
// the host uses the WV_DENORM variant (DenormPreserve for 64-bit floats)
// where the device promises shaderDenormPreserveFloat64, and elsewhere
// runs float64 sums only after a probe showed that the device keeps them
// (vk_wide.c).
//
// WV_SHUFFLE=1 exchanges the bits as 32-bit words with subgroupShuffleXor
// (no 64-bit sub-group types needed); the host uses it only with full
// sub-groups of at least L lanes.  WV_SHUFFLE=0 goes through shared memory
// with two alternating buffers and one barrier per exchange.  Rows past n
// are -0.0.  The loop over groups is uniform per work-group.
#version 450
#if WV_DENORM
// 4464 = capability DenormPreserve, 4459 = execution mode DenormPreserve.
#extension GL_EXT_spirv_intrinsics : require
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"],
                     capabilities = [4464], 4459, 64);
#endif
#if WV_SHUFFLE
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif

layout(local_size_x = 256) in;
const uint L = 16u;     // lanes per group: the host's WV_VK_SUM64_LANES

layout(set = 0, binding = 0, std430) readonly buffer In { uvec4 vin[]; };
layout(set = 0, binding = 1, std430) writeonly buffer Out { double vout[]; };

layout(push_constant) uniform Push {
  uint n;          // rows in this input
  uint pad0;
  uint out_off;    // index of this dispatch's first partial
} pc;

const uvec4 NEG_ZERO2 = uvec4(0u, 0x80000000u, 0u, 0x80000000u);

dvec2 bits2(uvec4 u)
{
  return dvec2(packDouble2x32(u.xy), packDouble2x32(u.zw));
}

uvec4 unbits2(dvec2 v)
{
  return uvec4(unpackDouble2x32(v.x), unpackDouble2x32(v.y));
}

dvec2 load2(uint q)
{
  uvec4 v = NEG_ZERO2;
  if (2u * q < pc.n) {
    v = vin[q];
    if (2u * q + 1u >= pc.n)   // the last, half vector
      v.zw = NEG_ZERO2.zw;
  }
  return bits2(v);
}

dvec2 add2(dvec2 a, dvec2 b)
{
  precise dvec2 r = a + b;
  return r;
}

#if !WV_SHUFFLE
shared uvec4 xs[2][256];
#endif

void main()
{
#if WV_SHUFFLE
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
    const uint q = g * 128u + lane;
    dvec2 u0, u1, u2, u3, u4, u5, u6, u7;
    if ((base + per_wg) * 256u <= pc.n) {   // the work-group's rows all in
      u0 = bits2(vin[q]);        u1 = bits2(vin[q + 16u]);
      u2 = bits2(vin[q + 32u]);  u3 = bits2(vin[q + 48u]);
      u4 = bits2(vin[q + 64u]);  u5 = bits2(vin[q + 80u]);
      u6 = bits2(vin[q + 96u]);  u7 = bits2(vin[q + 112u]);
    } else {
      u0 = load2(q);        u1 = load2(q + 16u);
      u2 = load2(q + 32u);  u3 = load2(q + 48u);
      u4 = load2(q + 64u);  u5 = load2(q + 80u);
      u6 = load2(q + 96u);  u7 = load2(q + 112u);
    }
    dvec2 a0 = add2(u0, u4), a1 = add2(u1, u5);    // h = 128
    dvec2 a2 = add2(u2, u6), a3 = add2(u3, u7);
    a0 = add2(a0, a2); a1 = add2(a1, a3);          // h = 64
    dvec2 v = add2(a0, a1);                        // h = 32
    uint x = 0u;
    for (uint m = L / 2u; m >= 1u; m >>= 1, x++) { // h = 16 .. 2
#if WV_SHUFFLE
      dvec2 w = bits2(subgroupShuffleXor(unbits2(v), m));
#else
      xs[x & 1u][lid] = unbits2(v);
      barrier();
      dvec2 w = bits2(xs[x & 1u][lid ^ m]);
#endif
      const bool low = (lane & m) == 0u;
      v = add2(low ? v : w, low ? w : v);
    }
    precise double s = v.x + v.y;                  // h = 1
    if (lane == 0u && g < groups)
      vout[pc.out_off + g] = s;
#if !WV_SHUFFLE
    barrier();   // xs is rewritten by the next round's first exchange
#endif
  }
}
