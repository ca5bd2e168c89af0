// stream.comp - the bandwidth baseline of bench_vulkan: read every 16-byte
// vector of the input once, in the same blocks as reduce_int.comp, and do
// nothing else of note (an xor per vector, written only if it equals a value
// the host chose, so the compiler cannot drop the loads).
//
// Work-group w reads blocks w, w + groups, ... of U x 256 vectors; in a
// block, invocation i reads vectors i, i + 256, ... (each load instruction
// of a sub-group is one contiguous run), all U loads issued before any is
// used, so U x 16 bytes per invocation are in flight.  The host dispatches
// only as many work-groups as fill the device (wv_vk_stream_groups).
#version 450

layout(local_size_x = 256) in;
const uint U = 8u;      // the host's WV_VK_UNROLL

layout(set = 0, binding = 0, std430) readonly buffer In { uvec4 vin[]; };
layout(set = 0, binding = 1, std430) writeonly buffer Out { uint vout[]; };

layout(push_constant) uniform Push {
  uint n;          // rows
  uint magic;      // never equal to a result in practice
} pc;

uint x4(uvec4 v) { return (v.x ^ v.y) ^ (v.z ^ v.w); }

void main()
{
  const uint lid = gl_LocalInvocationIndex;
  const uint bv = U * 256u;
  const uint nvec = (pc.n + 3u) / 4u;
  const uint full = nvec / bv;             // blocks read without checks
  const uint nblk = (nvec + bv - 1u) / bv;
  uint acc = 0u;
  for (uint b = gl_WorkGroupID.x; b < full; b += gl_NumWorkGroups.x) {
    const uint q = b * bv + lid;
    uvec4 v0 = vin[q],         v1 = vin[q + 256u];
    uvec4 v2 = vin[q + 512u],  v3 = vin[q + 768u];
    uvec4 v4 = vin[q + 1024u], v5 = vin[q + 1280u];
    uvec4 v6 = vin[q + 1536u], v7 = vin[q + 1792u];
    acc ^= (x4(v0) ^ x4(v1)) ^ (x4(v2) ^ x4(v3)) ^
           ((x4(v4) ^ x4(v5)) ^ (x4(v6) ^ x4(v7)));
  }
  for (uint b = full + gl_WorkGroupID.x; b < nblk; b += gl_NumWorkGroups.x)
    for (uint u = 0u; u < U; u++) {
      const uint q = b * bv + u * 256u + lid;
      if (q < nvec)
        acc ^= x4(vin[q]);
    }
  if (acc == pc.magic)
    vout[0] = acc;
}
