// stream.comp - the bandwidth baseline of bench_vulkan: read every 16-byte
// vector of the input once, with the same tiling as reduce_int.comp, and do
// nothing else of note (an xor per vector, written only if it equals a value
// the host chose, so the compiler cannot drop the loads).
#version 450

layout(local_size_x = 256) in;
layout(constant_id = 1) const uint ITERS = 4;

layout(set = 0, binding = 0, std430) readonly buffer In { uvec4 vin[]; };
layout(set = 0, binding = 1, std430) writeonly buffer Out { uint vout[]; };

layout(push_constant) uniform Push {
  uint n;          // rows
  uint magic;      // never equal to a result in practice
} pc;

void main()
{
  const uint lid = gl_LocalInvocationIndex;
  const uint tile_vec = ITERS * 256u;
  const uint nvec = (pc.n + 3u) / 4u;
  const uint tiles = (nvec + tile_vec - 1u) / tile_vec;
  uint acc = 0u;
  for (uint t = gl_WorkGroupID.x; t < tiles; t += gl_NumWorkGroups.x)
    for (uint it = 0u; it < ITERS; it++) {
      uint q = t * tile_vec + it * 256u + lid;
      if (q < nvec) {
        uvec4 v = vin[q];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
      }
    }
  if (acc == pc.magic)
    vout[0] = acc;
}
