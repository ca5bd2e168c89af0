// hash.comp - the lottery hash (docs/hash.md), one work-item per lane,
// 32 lanes per unit, UNITS units per work-group.
//
// The pack's program is not interpreted: every instruction's fields are
// specialization constants (INSN below), so when the pipeline is created for
// a pack the driver sees straight-line code with constant register numbers,
// the register file stays in registers, and each step's switch folds away.
// The 64 steps are spelled out (STEP) rather than looped for the same
// reason; only the rounds loop remains.
//
// Exchanges (xchg) follow "Exchange paths" of docs/hash.md:
//  WV_SHUFFLE=1  subgroupShuffleXor of the two 32-bit halves; used only when
//                the pipeline's sub-group is exactly 32 full lanes (required
//                with VK_EXT_subgroup_size_control, or the device's only
//                size).  Lane = sub-group invocation, unit = sub-group, so a
//                unit is one sub-group whatever the local-id mapping.
//  WV_SHUFFLE=0  shared memory: buffers X0/X1 alternate by exchange number
//                (the host folds the parity, k & 1, into the op code: six
//                exchanges per round make it the same every round), one
//                barrier each.
//  WV_MAXRECONV=1 adds the MaximallyReconvergesKHR execution mode
//                (SPV_KHR_maximal_reconvergence; glslang of Debian 12 has no
//                GLSL syntax for it, hence the SPIR-V intrinsic) for devices
//                that offer VK_KHR_shader_maximal_reconvergence.
//
// Loads: the dataset and the cache are reached by buffer device address, so
// a 1 GiB dataset needs no binding larger than maxStorageBufferRange.  A
// closed-form pack computes D[i] = mix64(K ^ i) instead.  Work-items of
// units past the range still run (barriers need every work-item) and store
// nothing.
#version 450
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_buffer_reference : require
#if WV_SHUFFLE
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif
#if WV_MAXRECONV
#extension GL_EXT_spirv_intrinsics : require
spirv_execution_mode(extensions = ["SPV_KHR_maximal_reconvergence"], 6023);
#endif

layout(local_size_x_id = 0) in;           // 32 x UNITS
layout(constant_id = 1) const uint R = 16u;
layout(constant_id = 2) const uint ROUNDS = 8u;
layout(constant_id = 3) const uint CLOSED = 0u;
layout(constant_id = 4) const uint64_t SEED = 0ul;
layout(constant_id = 5) const uint64_t ITEM_MASK = 0ul;
layout(constant_id = 6) const uint64_t CLOSED_KEY = 0ul;

// Instruction i: OP_i = op | (exchange parity << 4), then dst, a, b, imm.
#define INSN(i) \
  layout(constant_id = 16 + 5 * i) const uint OP_##i = 0u; \
  layout(constant_id = 17 + 5 * i) const uint DST_##i = 0u; \
  layout(constant_id = 18 + 5 * i) const uint A_##i = 0u; \
  layout(constant_id = 19 + 5 * i) const uint B_##i = 0u; \
  layout(constant_id = 20 + 5 * i) const uint64_t IMM_##i = 0ul;
INSN(0) INSN(1) INSN(2) INSN(3) INSN(4) INSN(5) INSN(6) INSN(7)
INSN(8) INSN(9) INSN(10) INSN(11) INSN(12) INSN(13) INSN(14) INSN(15)
INSN(16) INSN(17) INSN(18) INSN(19) INSN(20) INSN(21) INSN(22) INSN(23)
INSN(24) INSN(25) INSN(26) INSN(27) INSN(28) INSN(29) INSN(30) INSN(31)
INSN(32) INSN(33) INSN(34) INSN(35) INSN(36) INSN(37) INSN(38) INSN(39)
INSN(40) INSN(41) INSN(42) INSN(43) INSN(44) INSN(45) INSN(46) INSN(47)
INSN(48) INSN(49) INSN(50) INSN(51) INSN(52) INSN(53) INSN(54) INSN(55)
INSN(56) INSN(57) INSN(58) INSN(59) INSN(60) INSN(61) INSN(62) INSN(63)

const uint64_t GAMMA = 0x9e3779b97f4a7c15ul;
const uint64_t M1 = 0xbf58476d1ce4e5b9ul;
const uint64_t M2 = 0x94d049bb133111ebul;
const uint64_t TAG_LANE = 0xa4093822299f31d0ul;
const uint64_t TAG_OUT = 0x082efa98ec4e6c89ul;

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer
Items { uint64_t v; };

layout(set = 0, binding = 1, std430) writeonly buffer Out { uint64_t vout[]; };

layout(push_constant) uniform Push {
  uint64_t dataset;    // device address of D[0] (memory packs)
  uint64_t unit0;      // first unit of this dispatch
  uint64_t last_unit;  // last unit of the whole request
  uint64_t lo;         // first requested nonce: out[n - lo]
  uint64_t count;      // requested nonces from lo
} pc;

uint64_t mix64(uint64_t x)
{
  x ^= x >> 30; x *= M1;
  x ^= x >> 27; x *= M2;
  x ^= x >> 31;
  return x;
}

uint64_t item(uint64_t i)
{
  if (CLOSED != 0u)
    return mix64(CLOSED_KEY ^ i);
  return Items(pc.dataset + 8ul * i).v;
}

uint64_t r[32];
uint lid;

#if !WV_SHUFFLE
shared uint64_t X0[gl_WorkGroupSize.x];
shared uint64_t X1[gl_WorkGroupSize.x];
#endif

void step(uint op, uint dst, uint a, uint b, uint64_t imm)
{
  uint kind = op & 15u;
  if (kind == 9u) {                        // xchg: read old r[a] of l ^ b
#if WV_SHUFFLE
    r[dst] = pack64(subgroupShuffleXor(unpack32(r[a]), b));
#else
    if ((op >> 4) == 0u) {
      X0[lid] = r[a];
      barrier();
      r[dst] = X0[lid ^ b];
    } else {
      X1[lid] = r[a];
      barrier();
      r[dst] = X1[lid ^ b];
    }
#endif
    return;
  }
  uint64_t va = r[a], v;
  switch (kind) {
  case 0u: v = va + r[b & 31u]; break;
  case 1u: v = va - r[b & 31u]; break;
  case 2u: v = va ^ r[b & 31u]; break;
  case 3u: v = va * r[b & 31u]; break;
  case 4u: v = (va << b) | (va >> (64u - b)); break;
  case 5u: v = va ^ (va >> b); break;
  case 6u: v = va + imm; break;
  case 7u: v = va * imm; break;
  default: v = r[dst] ^ item(va & ITEM_MASK); break;   // 8: load
  }
  r[dst] = v;
}

#define STEP(i) step(OP_##i, DST_##i, A_##i, B_##i, IMM_##i);
#define INIT(j) if (j < R) r[j] = mix64(s + uint64_t(j + 1) * GAMMA);
#define OUT(j) if (j < R) h = mix64(h + r[j]);

void main()
{
  lid = gl_LocalInvocationIndex;
#if WV_SHUFFLE
  const uint lane = gl_SubgroupInvocationID;
  const uint unit = gl_SubgroupID;
#else
  const uint lane = lid & 31u;
  const uint unit = lid >> 5;
#endif
  const uint64_t u = pc.unit0 +
    uint64_t(gl_WorkGroupID.x * (gl_WorkGroupSize.x / 32u) + unit);
  const uint64_t n = u * 32ul + uint64_t(lane);

  uint64_t s = mix64(n ^ SEED ^ TAG_LANE);
  INIT(0) INIT(1) INIT(2) INIT(3) INIT(4) INIT(5) INIT(6) INIT(7)
  INIT(8) INIT(9) INIT(10) INIT(11) INIT(12) INIT(13) INIT(14) INIT(15)
  INIT(16) INIT(17) INIT(18) INIT(19) INIT(20) INIT(21) INIT(22) INIT(23)
  INIT(24) INIT(25) INIT(26) INIT(27) INIT(28) INIT(29) INIT(30) INIT(31)
  for (uint round = 0u; round < ROUNDS; round++) {
      STEP(0) STEP(1) STEP(2) STEP(3) STEP(4) STEP(5) STEP(6) STEP(7)
      STEP(8) STEP(9) STEP(10) STEP(11) STEP(12) STEP(13) STEP(14) STEP(15)
      STEP(16) STEP(17) STEP(18) STEP(19) STEP(20) STEP(21) STEP(22) STEP(23)
      STEP(24) STEP(25) STEP(26) STEP(27) STEP(28) STEP(29) STEP(30) STEP(31)
      STEP(32) STEP(33) STEP(34) STEP(35) STEP(36) STEP(37) STEP(38) STEP(39)
      STEP(40) STEP(41) STEP(42) STEP(43) STEP(44) STEP(45) STEP(46) STEP(47)
      STEP(48) STEP(49) STEP(50) STEP(51) STEP(52) STEP(53) STEP(54) STEP(55)
      STEP(56) STEP(57) STEP(58) STEP(59) STEP(60) STEP(61) STEP(62) STEP(63)
  }
  uint64_t h = SEED ^ TAG_OUT;
  OUT(0) OUT(1) OUT(2) OUT(3) OUT(4) OUT(5) OUT(6) OUT(7)
  OUT(8) OUT(9) OUT(10) OUT(11) OUT(12) OUT(13) OUT(14) OUT(15)
  OUT(16) OUT(17) OUT(18) OUT(19) OUT(20) OUT(21) OUT(22) OUT(23)
  OUT(24) OUT(25) OUT(26) OUT(27) OUT(28) OUT(29) OUT(30) OUT(31)
  if (u <= pc.last_unit && n >= pc.lo && n - pc.lo < pc.count)
    vout[uint(n - pc.lo)] = h;
}
