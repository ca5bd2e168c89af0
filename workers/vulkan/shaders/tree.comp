// tree.comp - the later levels of the float sum: G of docs/reduction.md
// over arbitrary groups of up to 256 partials, float32 (WV_ROW64=0, every
// add by wv_fadd) or float64 (WV_ROW64=1, binary64 `precise` adds).
//
// Group g reads seg[seg_off + g] = (first partial, count) and writes its
// value to out_off + g.  The host lists the groups of every chunk's level
// (and of the final level over the chunk values), so chunks of any size and
// alignment share one dispatch per level.  Volume here is 1/256 of the
// input at most, so the plain shared-memory form of G is used: it is the
// page's loop, one fold per barrier.
#version 450
#extension GL_GOOGLE_include_directive : require
#if WV_ROW64
#define WV_FLOAT double
#define WV_FBITS 64
#define NEG_ZERO packDouble2x32(uvec2(0u, 0x80000000u))
#else
#define WV_FLOAT float
#define WV_FBITS 32
#define NEG_ZERO uintBitsToFloat(0x80000000u)
#endif
#if WV_DENORM
// DenormPreserve for the row's float width (SPV_KHR_float_controls): the
// page forbids flushing subnormals; the host uses this variant where the
// device promises shaderDenormPreserveFloat32 (or Float64) (4464 =
// capability DenormPreserve, 4459 = execution mode DenormPreserve).
#extension GL_EXT_spirv_intrinsics : require
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"],
                     capabilities = [4464], 4459, WV_FBITS);
#endif

#if !WV_ROW64
#include "fadd.glsl"
#endif

layout(local_size_x = 256) in;

layout(set = 0, binding = 0, std430) readonly buffer In { WV_FLOAT vin[]; };
layout(set = 0, binding = 1, std430) writeonly buffer Out { WV_FLOAT vout[]; };
layout(set = 0, binding = 2, std430) readonly buffer Seg { uvec2 seg[]; };

layout(push_constant) uniform Push {
  uint groups;     // groups in this dispatch
  uint seg_off;
  uint out_off;
} pc;

shared WV_FLOAT v[256];

void main()
{
  const uint i = gl_LocalInvocationIndex;
  for (uint g = gl_WorkGroupID.x; g < pc.groups; g += gl_NumWorkGroups.x) {
    uvec2 d = seg[pc.seg_off + g];
    v[i] = i < d.y ? vin[d.x + i] : NEG_ZERO;
    barrier();
    for (uint h = 128u; h >= 1u; h >>= 1) {
      if (i < h) {
#if WV_ROW64
        precise double s = v[i] + v[i + h];
#else
        float s = wv_fadd(v[i], v[i + h]);
#endif
        v[i] = s;
      }
      barrier();
    }
    if (i == 0u)
      vout[pc.out_off + g] = v[0];
    barrier();
  }
}
