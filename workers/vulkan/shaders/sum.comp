// sum.comp - the first level of the float sum: every 256 rows (one group)
// become one partial by the tree G of docs/reduction.md, exactly; float32
// rows (WV_ROW64=0) or float64 rows (WV_ROW64=1, shaderFloat64).
//
// A group is handled by L lanes (8 for float32, 16 for float64).  Lane j
// holds the 8 16-byte vectors number j + L k (k < 8), i.e. rows
// R (j + L k) + c, with R rows to a vector (4, or 2).  The fold
// v[i] + v[i + h] pairs vector q = j + L k with q + h/R, so
//   h = 128 .. R L  stays inside the lane: vector k with vector k + h/(R L);
//   h = L R/2 .. R  pairs lane j with lane j ^ (h/R), the same component c;
//                   both lanes of a pair compute the same sum (IEEE
//                   addition is commutative);
//   h < R           inside the lane again: (v0 + v2) + (v1 + v3), or
//                   v0 + v1.
// The page's 32-lane picture is L = 32.  Fewer lanes per group mean more
// of the tree inside a lane (fewer exchanges and barriers, more loads in
// flight per lane) and let shuffles work in sub-groups of only L lanes.
// The in-lane part is written out in full, in plain variables: left as
// loops over an array, Mesa keeps the array in scratch memory (5x slower
// on lavapipe), and no compiler should have to be trusted to unroll it.
//
// Every add is `precise` (no contraction, no reassociation).  Subnormals:
// the host uses the WV_DENORM variant (DenormPreserve for the row's float
// width) where the device promises it.  Float64 sums run elsewhere only
// after a probe showed that the device keeps float64 subnormals
// (vk_rec.c).  Float32 is exact also where the device flushes subnormals
// (NVIDIA's Vulkan driver does, and does not offer DenormPreserve): a
// flush changes a hardware add only if an operand or the exact sum is
// subnormal.  That cannot happen in a group none of whose rows is `tiny`
// (non-zero, |x| < 2^-103): such rows are multiples of 2^-126 (their ulp is
// at least that), and so is every sum of them, exact or rounded (below
// 2^-103 multiples of 2^-126 are representable; above, the spacing is a
// multiple of 2^-126), and a non-zero multiple of 2^-126 is normal.  So
// the float32 fast path only checks its rows (one integer min per row),
// passes the flag along the exchanges, and a group with a tiny row is
// summed again by one lane with wv_fadd (fadd.glsl: hardware add, integer
// redo of zero-exponent cases) in the same tree order (group_exact).
// Zeros, NaN and infinities are not tiny; data that is may run at a few
// percent of the fast path's speed.
//
// WV_SHUFFLE=1 exchanges with subgroupShuffleXor (float64: the bits as
// 32-bit words, no 64-bit sub-group types needed); the host uses it only
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
// DenormPreserve (SPV_KHR_float_controls) for 32- or 64-bit floats: the
// page forbids flushing subnormals (4464 = capability DenormPreserve,
// 4459 = execution mode DenormPreserve).
#extension GL_EXT_spirv_intrinsics : require
#if WV_ROW64
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"],
                     capabilities = [4464], 4459, 64);
#else
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"],
                     capabilities = [4464], 4459, 32);
#endif
#endif
#extension GL_GOOGLE_include_directive : require
#if WV_SHUFFLE
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif

layout(local_size_x = 256) in;

// FV: one 16-byte vector as floats; UV: as loaded (float32: the bits,
// which the tiny flag reads too); XV: the form the exchanges move.
#if WV_ROW64
#define FV dvec2
#define UV dvec2
#define XV uvec4
#define FLOAT double
const uint L = 16u;     // lanes per group: the host's WV_VK_SUM64_LANES
const uint R = 2u;      // rows per vector
#else
#include "fadd.glsl"
#define FV vec4
#define UV uvec4
#define XV vec4
#define FLOAT float
const uint L = 8u;      // lanes per group: the host's WV_VK_SUM_LANES
const uint R = 4u;
#endif

layout(set = 0, binding = 0, std430) readonly buffer In { uvec4 vin[]; };
layout(set = 0, binding = 1, std430) writeonly buffer Out { FLOAT vout[]; };

layout(push_constant) uniform Push {
  uint n;          // rows in this input
  uint pad0;
  uint out_off;    // index of this dispatch's first partial
} pc;

#if WV_ROW64
const uvec4 NEG_ZERO_V = uvec4(0u, 0x80000000u, 0u, 0x80000000u);

FV fv(uvec4 u)
{
  return dvec2(packDouble2x32(u.xy), packDouble2x32(u.zw));
}

XV xput(FV v) { return uvec4(unpackDouble2x32(v.x), unpackDouble2x32(v.y)); }
#define xget(u) fv(u)
#define ld(u) fv(u)
#define uf(u) (u)
#else
const uint NEG_ZERO = 0x80000000u;
const uvec4 NEG_ZERO_V = uvec4(NEG_ZERO);

// Macros, not functions: with DenormPreserve glslc leaves a function's
// copies in the code.
#define xput(v) (v)
#define xget(u) (u)
#define ld(u) (u)
#define uf(u) uintBitsToFloat(u)

// key(x) < TINY_KEY <=> x is tiny: the key drops the sign, sends +-0 to the
// top of the range and orders the rest by magnitude, so one min per row
// keeps the flag.  0x0c000000 is the magnitude of 2^-103.
const uint TINY_KEY = (0x0c000000u << 1) - 2u;
uint key4(uvec4 v)
{
  uvec4 k = (v << 1) - uvec4(2u);
  return min(min(k.x, k.y), min(k.z, k.w));
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
#endif

// Vector q, rows past n as -0.0.
UV load(uint q)
{
  uvec4 v = NEG_ZERO_V;
  if (R * q < pc.n) {
    v = vin[q];
#if WV_ROW64
    if (2u * q + 1u >= pc.n)    // the last, half vector
      v.zw = NEG_ZERO_V.zw;
#else
    if (4u * q + 4u > pc.n) {   // the last, partial vector
      uvec4 row = uvec4(4u * q) + uvec4(0u, 1u, 2u, 3u);
      v = mix(NEG_ZERO_V, v, lessThan(row, uvec4(pc.n)));
    }
#endif
  }
  return ld(v);
}

FV add(FV a, FV b)
{
  precise FV r = a + b;
  return r;
}

#if !WV_SHUFFLE
shared XV xs[2][256];
#if !WV_ROW64
shared uint xm[2][256];
#endif
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
    const uint q = g * (8u * L) + lane;
    UV u0, u1, u2, u3, u4, u5, u6, u7;
    if ((base + per_wg) * 256u <= pc.n) {   // the work-group's rows all in
      u0 = ld(vin[q]);          u1 = ld(vin[q + L]);
      u2 = ld(vin[q + 2u * L]); u3 = ld(vin[q + 3u * L]);
      u4 = ld(vin[q + 4u * L]); u5 = ld(vin[q + 5u * L]);
      u6 = ld(vin[q + 6u * L]); u7 = ld(vin[q + 7u * L]);
    } else {
      u0 = load(q);          u1 = load(q + L);
      u2 = load(q + 2u * L); u3 = load(q + 3u * L);
      u4 = load(q + 4u * L); u5 = load(q + 5u * L);
      u6 = load(q + 6u * L); u7 = load(q + 7u * L);
    }
#if !WV_ROW64
    uint tiny = min(min(min(key4(u0), key4(u1)), min(key4(u2), key4(u3))),
                    min(min(key4(u4), key4(u5)), min(key4(u6), key4(u7))));
#endif
    FV a0 = add(uf(u0), uf(u4));                   // h = 128
    FV a1 = add(uf(u1), uf(u5));
    FV a2 = add(uf(u2), uf(u6));
    FV a3 = add(uf(u3), uf(u7));
    a0 = add(a0, a2); a1 = add(a1, a3);            // h = 64
    FV v = add(a0, a1);                            // h = 32
    uint x = 0u;
    for (uint m = L / 2u; m >= 1u; m >>= 1, x++) { // h = L R/2 .. R
#if WV_SHUFFLE
      FV w = xget(subgroupShuffleXor(xput(v), m));
#if !WV_ROW64
      tiny = min(tiny, subgroupShuffleXor(tiny, m));
#endif
#else
      xs[x & 1u][lid] = xput(v);
#if !WV_ROW64
      xm[x & 1u][lid] = tiny;
#endif
      barrier();
      FV w = xget(xs[x & 1u][lid ^ m]);
#if !WV_ROW64
      tiny = min(tiny, xm[x & 1u][lid ^ m]);
#endif
#endif
      // Lower index on the left, as the page writes it (the bits are the
      // same either way; this keeps NaN payloads boring too).  Operands
      // are selected, not the call.
      const bool low = (lane & m) == 0u;
      v = add(low ? v : w, low ? w : v);
    }
    // The last folds, inside the lane.  Every lane of the block now holds
    // the same values (and, float32, the block's flag).
#if WV_ROW64
    precise double s = v.x + v.y;
    if (lane == 0u && g < groups)
      vout[pc.out_off + g] = s;
#else
    precise float s = (v.x + v.z) + (v.y + v.w);
    if (lane == 0u && g < groups)
      vout[pc.out_off + g] = tiny < TINY_KEY ? group_exact(g) : s;
#endif
#if !WV_SHUFFLE
    barrier();   // xs is rewritten by the next round's first exchange
#endif
  }
}
