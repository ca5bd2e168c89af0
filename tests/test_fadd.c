/* test_fadd.c - the integer float addition of workers/vulkan/shaders/
 * fadd.glsl (used where a GPU flushes float32 subnormals) against the CPU's
 * IEEE addition, which keeps subnormals.  The function below is a line-for-
 * line C transcription of wv_fadd_soft; the GLSL itself is held to the same
 * bits by the conformance suite on every Vulkan device. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

static float fadd_soft(uint32_t ua, uint32_t ub)
{
  uint32_t ma = ua & 0x7fffffffu, mb = ub & 0x7fffffffu;
  if (ma < mb) {
    uint32_t t = ua; ua = ub; ub = t;
    t = ma; ma = mb; mb = t;
  }
  if (mb == 0u)
    return u2f(ma == 0u ? (ua & ub) : ua);
  uint32_t ea = ma >> 23, eb = mb >> 23;
  uint32_t fa = ma & 0x7fffffu, fb = mb & 0x7fffffu;
  if (ea != 0u) fa |= 0x800000u; else ea = 1u;
  if (eb != 0u) fb |= 0x800000u; else eb = 1u;
  fa <<= 3; fb <<= 3;
  uint32_t d = ea - eb;
  if (d >= 27u)
    fb = 1u;
  else if (d > 0u)
    fb = (fb >> d) | ((fb & ((1u << d) - 1u)) != 0u ? 1u : 0u);
  uint32_t f = ((ua ^ ub) & 0x80000000u) != 0u ? fa - fb : fa + fb;
  if (f == 0u)
    return 0.0f;
  uint32_t e = ea;
  if (f >= (1u << 27)) {
    f = (f >> 1) | (f & 1u);
    e += 1u;
  } else {
    while (f < (1u << 26) && e > 1u) {
      f <<= 1;
      e -= 1u;
    }
  }
  uint32_t low = f & 7u;
  f >>= 3;
  if (low > 4u || (low == 4u && (f & 1u) != 0u))
    f += 1u;
  if (f >= (1u << 24)) {
    f >>= 1;
    e += 1u;
  }
  uint32_t sign = ua & 0x80000000u;
  if (f < (1u << 23))
    return u2f(sign | f);
  if (e >= 255u)
    return u2f(sign | 0x7f800000u);
  return u2f(sign | (e << 23) | (f & 0x7fffffu));
}

static uint64_t rng(uint64_t *s)
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* A finite float, biased towards the awkward: zeros, subnormals, the
 * smallest normals, equal exponents, neighbours of the other operand. */
static uint32_t pick(uint64_t *s, uint32_t other)
{
  uint32_t r = (uint32_t)rng(s), sign = r & 0x80000000u;
  switch (rng(s) % 8) {
  case 0: return sign;                                    /* +-0 */
  case 1: return sign | (r & 0x7fffffu);                  /* subnormal */
  case 2: return sign | ((1u + (r >> 28)) << 23) | (r & 0x7fffffu);
  case 3: return (other ^ 0x80000000u) + (r % 5) - 2;     /* near -other */
  case 4: return other + (r % 5) - 2;                     /* near other */
  case 5: return sign | (0xfeu << 23) | (r & 0x7fffffu);  /* huge */
  default: {
    uint32_t u = r & 0x7f7fffffu;                         /* any finite */
    return (u & 0x7f800000u) == 0x7f800000u ? sign : u | sign;
  }
  }
}

static int finite_bits(uint32_t u) { return (u & 0x7f800000u) != 0x7f800000u; }

START_TEST(soft_add_matches_ieee)
{
  uint64_t s = 1234;
  unsigned long n = 0;
  for (long i = 0; i < 4000000; i++) {
    uint32_t a = pick(&s, 0);
    uint32_t b = pick(&s, a);
    if (!finite_bits(a) || !finite_bits(b))
      continue;
    volatile float fa = u2f(a), fb = u2f(b);
    uint32_t want = f2u(fa + fb), got = f2u(fadd_soft(a, b));
    ck_assert_msg(got == want, "%08x + %08x: want %08x, got %08x", a, b,
                  want, got);
    n++;
  }
  ck_assert_uint_gt(n, 3000000);
}
END_TEST

START_TEST(soft_add_exhaustive_small)
{
  /* Every pair of the 2^10 smallest magnitudes of both signs. */
  for (uint32_t i = 0; i < 2048; i++)
    for (uint32_t j = 0; j < 2048; j++) {
      uint32_t a = (i & 1023u) | ((i >> 10) << 31);
      uint32_t b = ((j & 1023u) << 13) | ((j >> 10) << 31);
      volatile float fa = u2f(a), fb = u2f(b);
      uint32_t want = f2u(fa + fb), got = f2u(fadd_soft(a, b));
      ck_assert_msg(got == want, "%08x + %08x: want %08x, got %08x", a, b,
                    want, got);
    }
}
END_TEST

int main(void)
{
  Suite *s = suite_create("fadd");
  TCase *tc = tcase_create("soft");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, soft_add_matches_ieee);
  tcase_add_test(tc, soft_add_exhaustive_small);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
