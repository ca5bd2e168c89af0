// tree_f64.comp - the later levels of the float64 sum: G of
// docs/reduction.md over listed groups of up to 256 partials, binary64
// `precise` adds; tree_f32.comp's form (one fold per barrier), same group
// list (seg: first partial, count).
#version 450
#if WV_DENORM
#extension GL_EXT_spirv_intrinsics : require
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"],
                     capabilities = [4464], 4459, 64);
#endif

layout(local_size_x = 256) in;

layout(set = 0, binding = 0, std430) readonly buffer In { double vin[]; };
layout(set = 0, binding = 1, std430) writeonly buffer Out { double vout[]; };
layout(set = 0, binding = 2, std430) readonly buffer Seg { uvec2 seg[]; };

layout(push_constant) uniform Push {
  uint groups;     // groups in this dispatch
  uint seg_off;
  uint out_off;
} pc;

shared double v[256];

void main()
{
  const uint i = gl_LocalInvocationIndex;
  for (uint g = gl_WorkGroupID.x; g < pc.groups; g += gl_NumWorkGroups.x) {
    uvec2 d = seg[pc.seg_off + g];
    v[i] = i < d.y ? vin[d.x + i] : packDouble2x32(uvec2(0u, 0x80000000u));
    barrier();
    for (uint h = 128u; h >= 1u; h >>= 1) {
      if (i < h) {
        precise double s = v[i] + v[i + h];
        v[i] = s;
      }
      barrier();
    }
    if (i == 0u)
      vout[pc.out_off + g] = v[0];
    barrier();
  }
}
