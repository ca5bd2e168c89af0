// dataset.comp - dataset items [first, first + count) of a memory pack from
// its cache, one item per work-item (docs/hash.md "Dataset": items are
// independent).  Cache and dataset are reached by buffer device address.
#version 450
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_buffer_reference : require

layout(local_size_x = 256) in;

layout(buffer_reference, std430, buffer_reference_align = 8) buffer
Items { uint64_t v; };

layout(push_constant) uniform Push {
  uint64_t cache;      // device address of C[0]
  uint64_t dataset;    // device address of D[0]
  uint64_t first;
  uint64_t cmask;      // cache items - 1
  uint count;
  uint parents;
} pc;

uint64_t mix64(uint64_t x)
{
  x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ul;
  x ^= x >> 27; x *= 0x94d049bb133111ebul;
  x ^= x >> 31;
  return x;
}

uint64_t C(uint64_t k) { return Items(pc.cache + 8ul * k).v; }

void main()
{
  const uint stride = gl_NumWorkGroups.x * 256u;
  for (uint k = gl_GlobalInvocationID.x; k < pc.count; k += stride) {
    uint64_t i = pc.first + uint64_t(k);
    uint64_t x = mix64(C(i & pc.cmask) ^ i);
    for (uint j = 0u; j < pc.parents; j++)
      x = mix64(x + C(x & pc.cmask));
    Items(pc.dataset + 8ul * i).v = x;
  }
}
