// reduce_int.comp - one level of every order-free reduction: integer sum,
// min, max, extent, and, or, xor, and float min/max/extent (as integer keys).
//
// Tile t of the input (ITERS x 256 x 4 rows) becomes partial t of the
// output (or, at the first level of the sub-group path, partials
// t * slots .. t * slots + slots - 1, one per sub-group).  Each of the 256 threads folds ITERS 16-byte loads into its
// accumulator; the work-group then combines its threads with one sub-group
// instruction per sub-group (WV_SUBGROUP=1, GL_KHR_shader_subgroup_arithmetic)
// or with a shared-memory tree (WV_SUBGROUP=0, devices without arithmetic
// sub-group ops in compute).  These ops are associative and commutative on
// the bits, so the order is free (docs/reduction.md "Integer ops").
//
// Min and max work on unsigned keys (KEY_*): sint32 flips the sign bit,
// float32 maps finite values to an order-preserving key in which
// -0.0 < +0.0 and maps NaN and +-inf to the op's identity, i.e. ignores them.
// Only the first level applies keys; later levels reduce keys.
//
// Extent carries two accumulators (min key, max key).  Its partials are two
// halves of the output: mins at out_off + t, maxes at out_half + out_off + t;
// a later level reads the halves back from in_half (0 at the first level,
// where both accumulators read the same rows).
#version 450
#if WV_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

layout(local_size_x = 256) in;

// 0 add, 1 umin, 2 umax, 3 and, 4 or, 5 xor, 6 extent (umin + umax)
layout(constant_id = 0) const uint OP = 0;
layout(constant_id = 1) const uint ITERS = 4;

const uint KEY_NONE = 0, KEY_SIGNED = 1, KEY_FLOAT = 2;

layout(set = 0, binding = 0, std430) readonly buffer In { uvec4 vin[]; };
layout(set = 0, binding = 1, std430) writeonly buffer Out { uint vout[]; };

layout(push_constant) uniform Push {
  uint n;          // rows (per half for extent levels) in this input
  uint in_half;    // uvec4 index of the max half, 0 at the first level
  uint out_off;    // index of this dispatch's first partial
  uint out_half;   // extent: distance from a min partial to its max partial
  uint key;        // KEY_*
  uint slots;      // partials per tile: 1, or (sub-group path) one per
                   // sub-group, room for 256 / the smallest sub-group size
} pc;

uint ident0() { return OP == 1 || OP == 6 ? 0xffffffffu : OP == 3 ? 0xffffffffu : 0u; }

uint op0(uint a, uint b)
{
  if (OP == 0) return a + b;
  if (OP == 1 || OP == 6) return min(a, b);
  if (OP == 2) return max(a, b);
  if (OP == 3) return a & b;
  if (OP == 4) return a | b;
  return a ^ b;
}

// Key for a min (lo = true) or max accumulator; identity when ignored.
uint key_of(uint x, bool lo)
{
  if (pc.key == KEY_SIGNED)
    return x ^ 0x80000000u;
  if (pc.key == KEY_FLOAT) {
    if ((x & 0x7f800000u) == 0x7f800000u)      // NaN, +inf, -inf
      return lo ? 0xffffffffu : 0u;
    return (x & 0x80000000u) != 0u ? ~x : x | 0x80000000u;
  }
  return x;
}

#if WV_SUBGROUP
shared uint sg0[256], sg1[256];   // one slot per sub-group (at most 256)
#else
shared uint sm0[256], sm1[256];
#endif

void main()
{
  const uint lid = gl_LocalInvocationIndex;
  const uint tile_vec = ITERS * 256u;            // uvec4 per tile
  const uint nvec = (pc.n + 3u) / 4u;
  const uint tiles = (nvec + tile_vec - 1u) / tile_vec;
  const bool lo0 = OP != 2;                      // acc0 is a min for 1 and 6
  const bool keyed = OP == 1 || OP == 2 || OP == 6;

  // A grid-stride loop over tiles: uniform per work-group, so every thread
  // reaches every barrier.
  for (uint t = gl_WorkGroupID.x; t < tiles; t += gl_NumWorkGroups.x) {
    uint a0 = ident0(), a1 = 0u;
    // No early exits: the sub-group step below wants every invocation of
    // the sub-group back together, which plain if/merge guarantees.
    for (uint it = 0u; it < ITERS; it++) {
      uint q = t * tile_vec + it * 256u + lid;
      if (q < nvec) {
        const uvec4 raw = vin[q];
        uvec4 v = raw;
        // Components past n take the identity; only the last vector of
        // the input can have any.
        const bool partial = 4u * q + 4u > pc.n;
        const bvec4 in_range = lessThan(uvec4(4u * q) + uvec4(0u, 1u, 2u, 3u),
                                        uvec4(pc.n));
        if (keyed)
          v = uvec4(key_of(v.x, lo0), key_of(v.y, lo0), key_of(v.z, lo0),
                    key_of(v.w, lo0));
        if (partial)
          v = mix(uvec4(ident0()), v, in_range);
        a0 = op0(op0(a0, v.x), op0(v.y, op0(v.z, v.w)));
        if (OP == 6) {
          uvec4 w = pc.in_half != 0u ? vin[pc.in_half + q] : raw;
          w = uvec4(key_of(w.x, false), key_of(w.y, false),
                    key_of(w.z, false), key_of(w.w, false));
          if (partial)
            w = mix(uvec4(0u), w, in_range);
          a1 = max(a1, max(max(w.x, w.y), max(w.z, w.w)));
        }
      }
    }
#if WV_SUBGROUP
    uint r0, r1 = 0u;
    if (OP == 0) r0 = subgroupAdd(a0);
    else if (OP == 1 || OP == 6) r0 = subgroupMin(a0);
    else if (OP == 2) r0 = subgroupMax(a0);
    else if (OP == 3) r0 = subgroupAnd(a0);
    else if (OP == 4) r0 = subgroupOr(a0);
    else r0 = subgroupXor(a0);
    if (OP == 6) r1 = subgroupMax(a1);
    if (pc.slots > 1u) {
      // One partial per sub-group, no barrier: the first level, where
      // partials are 1/16384 of the input and a barrier per tile would
      // cost more (a CPU driver runs work-groups as fibers).  Slots that
      // no sub-group of this size fills get the identity.
      const uint o = pc.out_off + t * pc.slots;
      if (subgroupElect()) {
        vout[o + gl_SubgroupID] = r0;
        if (OP == 6) vout[pc.out_half + o + gl_SubgroupID] = r1;
        if (gl_SubgroupID == 0u)
          for (uint k = gl_NumSubgroups; k < pc.slots; k++) {
            vout[o + k] = ident0();
            if (OP == 6) vout[pc.out_half + o + k] = 0u;
          }
      }
      continue;
    }
    if (subgroupElect()) {
      sg0[gl_SubgroupID] = r0;
      sg1[gl_SubgroupID] = r1;
    }
    barrier();
    if (lid == 0u) {
      uint b0 = sg0[0], b1 = sg1[0];
      for (uint s = 1u; s < gl_NumSubgroups; s++) {
        b0 = op0(b0, sg0[s]);
        b1 = max(b1, sg1[s]);
      }
      vout[pc.out_off + t] = b0;
      if (OP == 6) vout[pc.out_half + pc.out_off + t] = b1;
    }
    barrier();   // slots are rewritten by the next tile
#else
    sm0[lid] = a0;
    sm1[lid] = a1;
    barrier();
    for (uint h = 128u; h >= 1u; h >>= 1) {
      if (lid < h) {
        sm0[lid] = op0(sm0[lid], sm0[lid + h]);
        if (OP == 6) sm1[lid] = max(sm1[lid], sm1[lid + h]);
      }
      barrier();
    }
    if (lid == 0u) {
      vout[pc.out_off + t] = sm0[0];
      if (OP == 6) vout[pc.out_half + pc.out_off + t] = sm1[0];
    }
    barrier();
#endif
  }
}
