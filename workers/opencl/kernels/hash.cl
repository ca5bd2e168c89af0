// hash.cl - the lottery hash kernel (docs/hash.md), one work-item per lane,
// 32 lanes per unit, WV_UNITS units per work-group.
//
// Built once per pack at hash_prepare (ocl_hash.c): the host puts the
// pack's constants in front of this text as #defines (WV_R, WV_ROUNDS,
// WV_SEED, WV_ITEM_MASK, WV_CLOSED, WV_CLOSED_KEY) and the program as one
// macro, WV_PROGRAM, a list of step macros with literal register numbers,
// so the compiler sees straight-line code and the registers r0..r31 stay
// in private registers; only the rounds loop remains.
//
// Exchanges follow "Exchange paths" of docs/hash.md and the wavefront-width
// seed's rule, chosen by WV_EXCHANGE:
//  0  local memory (the default, any sub-group size): two buffers X[2][G]
//     alternate by exchange number k (the host writes the parity k & 1 into
//     each S_XCHG: six exchanges a round make it the same every round), one
//     barrier(CLK_LOCAL_MEM_FENCE) per exchange;
//  1  sub_group_shuffle_xor (cl_khr_subgroup_shuffle),
//  2  intel_sub_group_shuffle_xor (cl_intel_subgroups): only for a
//     work-group of exactly 32 items whose kernel sub-group is 32 (the host
//     checks, ocl_open.c), so that one work-group is one unit and one
//     sub-group; the lane is the sub-group local id.  64-bit values are
//     shuffled as their two 32-bit halves.
// Work-items of units past the range still run (barriers need every
// work-item) and store nothing.
#pragma OPENCL FP_CONTRACT OFF
#if WV_EXCHANGE == 1
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#pragma OPENCL EXTENSION cl_khr_subgroup_shuffle : enable
#elif WV_EXCHANGE == 2
#pragma OPENCL EXTENSION cl_intel_subgroups : enable
#endif

#define GAMMA 0x9e3779b97f4a7c15ul
#define TAG_LANE 0xa4093822299f31d0ul
#define TAG_OUT 0x082efa98ec4e6c89ul
#define G (32 * WV_UNITS)

inline ulong mix64(ulong x)
{
  x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ul;
  x ^= x >> 27; x *= 0x94d049bb133111ebul;
  x ^= x >> 31;
  return x;
}

#if WV_CLOSED
#define ITEM(i) mix64(WV_CLOSED_KEY ^ (i))
#else
#define ITEM(i) dataset[i]
#endif

#if WV_EXCHANGE == 1
inline ulong xshuf(ulong v, uint m)
{
  uint2 h = as_uint2(v);
  return as_ulong((uint2)(sub_group_shuffle_xor(h.x, m),
                          sub_group_shuffle_xor(h.y, m)));
}
#elif WV_EXCHANGE == 2
inline ulong xshuf(ulong v, uint m)
{
  uint2 h = as_uint2(v);
  return as_ulong((uint2)(intel_sub_group_shuffle_xor(h.x, m),
                          intel_sub_group_shuffle_xor(h.y, m)));
}
#endif

#define S_ADD(d, a, b) r##d = r##a + r##b;
#define S_SUB(d, a, b) r##d = r##a - r##b;
#define S_XOR(d, a, b) r##d = r##a ^ r##b;
#define S_MUL(d, a, b) r##d = r##a * r##b;
#define S_ROTL(d, a, k) r##d = rotate(r##a, (ulong)(k));
#define S_XSHR(d, a, k) r##d = r##a ^ (r##a >> (k));
#define S_ADDI(d, a, imm) r##d = r##a + (imm);
#define S_MULI(d, a, imm) r##d = r##a * (imm);
#define S_LOAD(d, a) r##d ^= ITEM(r##a & WV_ITEM_MASK);
#if WV_EXCHANGE == 0
#define S_XCHG(d, a, m, par)                                                 \
  X[par][lid] = r##a;                                                        \
  barrier(CLK_LOCAL_MEM_FENCE);                                              \
  r##d = X[par][lid ^ (m)];
#else
#define S_XCHG(d, a, m, par) r##d = xshuf(r##a, (m));
#endif

#define INIT(j) ulong r##j = (j) < WV_R ? mix64(s + (ulong)((j) + 1) * GAMMA) : 0;
#define OUT(j) if ((j) < WV_R) h = mix64(h + r##j);

// Outputs of the nonces n with lo <= n < lo + count of units unit0 ..
// last_unit (this launch covers unit0 + 0 .. global units - 1) into
// out[n - lo].
__kernel __attribute__((reqd_work_group_size(G, 1, 1)))
void hash_units(__global const ulong *restrict dataset, ulong unit0,
                ulong last_unit, ulong lo, ulong count,
                __global ulong *restrict out)
{
#if WV_EXCHANGE == 0
  __local ulong X[2][G];
  const uint lid = get_local_id(0);
  const uint lane = lid & 31u;
  const ulong u = unit0 + (ulong)get_group_id(0) * WV_UNITS + (lid >> 5);
#else
  const uint lane = get_sub_group_local_id();
  const ulong u = unit0 + (ulong)get_group_id(0);
#endif
  const ulong n = u * 32ul + lane;
  const ulong s = mix64(n ^ WV_SEED ^ TAG_LANE);
  INIT(0) INIT(1) INIT(2) INIT(3) INIT(4) INIT(5) INIT(6) INIT(7)
  INIT(8) INIT(9) INIT(10) INIT(11) INIT(12) INIT(13) INIT(14) INIT(15)
  INIT(16) INIT(17) INIT(18) INIT(19) INIT(20) INIT(21) INIT(22) INIT(23)
  INIT(24) INIT(25) INIT(26) INIT(27) INIT(28) INIT(29) INIT(30) INIT(31)
  for (uint round = 0; round < WV_ROUNDS; round++) {
    WV_PROGRAM
  }
  ulong h = WV_SEED ^ TAG_OUT;
  OUT(0) OUT(1) OUT(2) OUT(3) OUT(4) OUT(5) OUT(6) OUT(7)
  OUT(8) OUT(9) OUT(10) OUT(11) OUT(12) OUT(13) OUT(14) OUT(15)
  OUT(16) OUT(17) OUT(18) OUT(19) OUT(20) OUT(21) OUT(22) OUT(23)
  OUT(24) OUT(25) OUT(26) OUT(27) OUT(28) OUT(29) OUT(30) OUT(31)
  if (u <= last_unit && n >= lo && n - lo < count)
    out[n - lo] = h;
}

#if WV_EXCHANGE != 0
// The probe (used only where the per-kernel sub-group query is missing):
// for a 32-item work-group, the sub-group size and whether the sub-group
// local id equals the local id for every item.
__kernel __attribute__((reqd_work_group_size(32, 1, 1)))
void hash_probe(__global uint *res)
{
  uint lid = get_local_id(0);
  ulong v = ((ulong)lid << 32) | (lid * 3u + 1u);
  ulong w = xshuf(v, 5u);
  ulong want = ((ulong)(lid ^ 5u) << 32) | ((lid ^ 5u) * 3u + 1u);
  if (lid == 0)
    res[0] = get_sub_group_size();
  res[1 + lid] = (get_sub_group_local_id() == lid ? 1u : 0u) |
                 (w == want ? 2u : 0u);
}
#endif
