// fadd.glsl - IEEE binary32 addition, round to nearest even, subnormals
// kept, on devices whose shaders flush float32 subnormals.
//
// docs/reduction.md forbids flushing, but a Vulkan device may flush 32-bit
// subnormals unless it promises shaderDenormPreserveFloat32 (NVIDIA's
// driver does not).  Flushing changes a hardware add only when an operand or
// the result has a zero exponent field (zero or subnormal); in every other
// case the hardware bits are the IEEE bits.  So wv_fadd uses the hardware
// add and redoes the rare zero-exponent cases in integer arithmetic
// (wv_fadd_soft, guard/round/sticky bits), which is exact on any device.
// NaN and infinity operands stay on the hardware path (a subnormal beside
// them cannot change the result; NaN payloads are canonicalised later).
// tests/test_fadd.c holds a C transcription of wv_fadd_soft to the CPU's
// own additions over millions of operand pairs.

float wv_fadd_soft(uint ua, uint ub)
{
  uint ma = ua & 0x7fffffffu, mb = ub & 0x7fffffffu;
  if (ma < mb) {          // a: the operand of larger magnitude
    uint t = ua; ua = ub; ub = t;
    t = ma; ma = mb; mb = t;
  }
  if (mb == 0u)           // b is +-0: a, except (-0) + (-0) = -0 only
    return uintBitsToFloat(ma == 0u ? (ua & ub) : ua);
  uint ea = ma >> 23, eb = mb >> 23;
  uint fa = ma & 0x7fffffu, fb = mb & 0x7fffffu;
  if (ea != 0u) fa |= 0x800000u; else ea = 1u;
  if (eb != 0u) fb |= 0x800000u; else eb = 1u;
  fa <<= 3; fb <<= 3;     // guard, round, sticky
  uint d = ea - eb;
  if (d >= 27u)
    fb = 1u;              // only the sticky bit is left of b
  else if (d > 0u)
    fb = (fb >> d) | ((fb & ((1u << d) - 1u)) != 0u ? 1u : 0u);
  uint f = ((ua ^ ub) & 0x80000000u) != 0u ? fa - fb : fa + fb;
  if (f == 0u)
    return 0.0;           // exact cancellation is +0 under round to nearest
  uint e = ea;
  if (f >= (1u << 27)) {  // carry out: one bit right, keep the sticky
    f = (f >> 1) | (f & 1u);
    e += 1u;
  } else {
    while (f < (1u << 26) && e > 1u) {
      f <<= 1;
      e -= 1u;
    }
  }
  uint low = f & 7u;
  f >>= 3;
  if (low > 4u || (low == 4u && (f & 1u) != 0u))
    f += 1u;
  if (f >= (1u << 24)) {
    f >>= 1;
    e += 1u;
  }
  uint sign = ua & 0x80000000u;
  if (f < (1u << 23))     // subnormal (or zero): exponent field 0
    return uintBitsToFloat(sign | f);
  if (e >= 255u)
    return uintBitsToFloat(sign | 0x7f800000u);
  return uintBitsToFloat(sign | (e << 23) | (f & 0x7fffffu));
}

float wv_fadd(float a, float b)
{
  precise float r = a + b;
  uint ua = floatBitsToUint(a), ub = floatBitsToUint(b);
  uint xa = ua & 0x7f800000u, xb = ub & 0x7f800000u;
  uint xr = floatBitsToUint(r) & 0x7f800000u;
  if ((xa == 0u || xb == 0u || xr == 0u) && xa != 0x7f800000u &&
      xb != 0x7f800000u)
    return wv_fadd_soft(ua, ub);
  return r;
}

vec4 wv_fadd4(vec4 a, vec4 b)
{
  return vec4(wv_fadd(a.x, b.x), wv_fadd(a.y, b.y), wv_fadd(a.z, b.z),
              wv_fadd(a.w, b.w));
}
