/* xsum.c - the exact accumulator of op fsum (xsum.h, docs/reduction.md
 * "fsum").
 *
 * X is a two's complement integer of n_limbs 64-bit limbs; every addition
 * carries (or borrows) through the limbs above it, so X is exact as long
 * as |X| < 2^(64 * n_limbs - 1), which the 64 bits of carry room above the
 * largest row's top bit hold for 2^63 rows and more.
 *
 * Rounding (wv_xsum_round) takes |X|, finds its top bit t, and keeps the
 * p = 24 (53) significant bits from t down, with the guard bit below them
 * and a sticky OR of the rest, rounding half to even.  Since X counts the
 * dtype's smallest subnormal, a float's bits are continuous in X: for
 * |X| < 2^p the bits are |X| itself (subnormals, and the first binade of
 * normals), and above, m * 2^s units (m of p bits, top bit set) has the
 * bits (s << (p - 1)) + m; a rounding carry to m = 2^p lands on the next
 * exponent by the same sum.  Bits at or past +inf's are +-inf.
 */
#include <string.h>

#include "core/base.h"
#include "core/xsum.h"

#define XS_F32_P 24u
#define XS_F64_P 53u

static int xs_is_f32(const wv_xsum *x) { return x->n_limbs == WV_XSUM_F32_LIMBS; }

void wv_xsum_init(wv_xsum *x, wave_dtype dt)
{
  memset(x, 0, sizeof *x);
  x->n_limbs = dt == WAVE_F32 ? WV_XSUM_F32_LIMBS : WV_XSUM_LIMBS;
}

/* v * 2^bit spans limbs q and q + 1 (the second, when there is one); above
 * them, its sign extension; what passes the top limb is dropped (the
 * modulo). */
void wv_xsum_add_i64(wv_xsum *x, int64_t v, unsigned bit)
{
  if (v == 0)
    return;
  unsigned q = bit / 64, r = bit % 64, n = x->n_limbs;
  uint64_t u = (uint64_t)v, ext = v < 0 ? UINT64_MAX : 0;
  uint64_t lo = u << r;
  uint64_t hi = r ? (u >> (64 - r)) | (ext << r) : ext;
  uint64_t t = x->limb[q] + lo;
  unsigned c = t < lo;
  x->limb[q] = t;
  if (q + 1 >= n)
    return;
  uint64_t s = x->limb[q + 1] + hi;
  unsigned c2 = s < hi;
  s += c;
  c2 |= s < c;
  x->limb[q + 1] = s;
  c = c2;
  /* the limbs above take ext (all ones or 0) plus the carry c */
  if (ext == 0) {
    for (unsigned i = q + 2; c && i < n; i++)
      c = ++x->limb[i] == 0;
  } else if (!c) {          /* all ones + carry 1 leaves them as they are */
    for (unsigned i = q + 2; i < n; i++)
      if (x->limb[i]-- != 0)
        break;
  }
}

void wv_xsum_add_bins(wv_xsum *x, const int64_t *bins, size_t n,
                      unsigned width)
{
  for (size_t i = 0; i < n; i++)
    wv_xsum_add_i64(x, bins[i], (unsigned)(i * width));
}

void wv_xsum_add_row(wv_xsum *x, uint64_t row)
{
  int f32 = xs_is_f32(x);
  unsigned fb = f32 ? 23 : 52;
  uint64_t emax = f32 ? 0xff : 0x7ff;
  if (f32)
    row &= 0xffffffffu;
  uint64_t neg = row >> (f32 ? 31 : 63);
  uint64_t e = (row >> fb) & emax, f = row & ((1ull << fb) - 1);
  if (row != 1ull << (f32 ? 31 : 63))  /* not -0.0 */
    x->flags |= WV_XSUM_NOT_NEGZERO;
  if (e == emax) {
    x->flags |= f ? WV_XSUM_NAN : neg ? WV_XSUM_NINF : WV_XSUM_PINF;
    return;
  }
  uint64_t m = f | (e ? 1ull << fb : 0);
  wv_xsum_add_i64(x, neg ? -(int64_t)m : (int64_t)m,
                  (unsigned)(e ? e - 1 : 0));
}

void wv_xsum_merge(wv_xsum *x, const wv_xsum *y)
{
  unsigned c = 0;
  for (unsigned i = 0; i < x->n_limbs; i++) {
    uint64_t a = x->limb[i], s = a + y->limb[i];
    unsigned c2 = s < a;
    s += c;
    c2 |= s < c;
    x->limb[i] = s;
    c = c2;
  }
  x->flags |= y->flags;
}

/* Bits [s, s + 64) of the n limbs a (0 past the top). */
static uint64_t xs_window(const uint64_t *a, unsigned n, unsigned s)
{
  unsigned q = s / 64, r = s % 64;
  uint64_t lo = q < n ? a[q] >> r : 0;
  uint64_t hi = (r && q + 1 < n) ? a[q + 1] << (64 - r) : 0;
  return lo | hi;
}

/* Whether a bit below bit s of a is set. */
static int xs_any_below(const uint64_t *a, unsigned s)
{
  unsigned q = s / 64, r = s % 64;
  for (unsigned i = 0; i < q; i++)
    if (a[i])
      return 1;
  return r && (a[q] & ((1ull << r) - 1)) != 0;
}

uint64_t wv_xsum_round(const wv_xsum *x, uint64_t count)
{
  int f32 = xs_is_f32(x);
  uint64_t sign = f32 ? 0x80000000u : 0x8000000000000000u;
  uint64_t inf = f32 ? 0x7f800000u : 0x7ff0000000000000u;
  unsigned p = f32 ? XS_F32_P : XS_F64_P, n = x->n_limbs;
  uint32_t fl = x->flags;
  if ((fl & WV_XSUM_NAN) ||
      (fl & (WV_XSUM_PINF | WV_XSUM_NINF)) == (WV_XSUM_PINF | WV_XSUM_NINF))
    return f32 ? 0x7fc00000u : 0x7ff8000000000000u;
  if (fl & WV_XSUM_PINF)
    return inf;
  if (fl & WV_XSUM_NINF)
    return sign | inf;

  uint64_t a[WV_XSUM_LIMBS];
  int neg = (x->limb[n - 1] >> 63) != 0;
  unsigned c = 1;
  for (unsigned i = 0; i < n; i++) {  /* |X|: negate by ~X + 1 */
    a[i] = neg ? ~x->limb[i] + c : x->limb[i];
    if (neg)
      c = c && a[i] == 0;
  }
  int top = -1;
  for (int i = (int)n - 1; i >= 0 && top < 0; i--)
    if (a[i])
      top = i * 64 + 63 - __builtin_clzll(a[i]);
  if (top < 0)  /* an exact zero */
    return count > 0 && !(fl & WV_XSUM_NOT_NEGZERO) ? sign : 0;

  uint64_t bits;
  if ((unsigned)top < p) {
    bits = a[0];  /* exact: a subnormal or the first normal binade */
  } else {
    unsigned s = (unsigned)top - (p - 1);
    uint64_t m = xs_window(a, n, s) & ((1ull << p) - 1);
    uint64_t guard = (xs_window(a, n, s - 1) & 1);
    int sticky = xs_any_below(a, s - 1);
    if (guard && (sticky || (m & 1)))
      m++;
    bits = ((uint64_t)s << (p - 1)) + m;
    if (bits >= inf)
      bits = inf;
  }
  return (neg ? sign : 0) | bits;
}

size_t wv_xsum_wire_bytes(wave_dtype dt)
{
  return dt == WAVE_F32 ? 8 * WV_XSUM_F32_LIMBS
         : dt == WAVE_F64 ? 8 * WV_XSUM_LIMBS : 0;
}

void wv_xsum_pack(const wv_xsum *x, uint8_t *out)
{
  for (unsigned i = 0; i < x->n_limbs; i++)
    for (unsigned b = 0; b < 8; b++)
      out[8 * i + b] = (uint8_t)(x->limb[i] >> (8 * b));
}

int wv_xsum_unpack(wv_xsum *x, wave_dtype dt, const uint8_t *in, size_t n,
                   uint32_t flags, wave_error *err)
{
  size_t want = wv_xsum_wire_bytes(dt);
  if (want == 0)
    return wv_seterr(err, WAVE_EBADREQUEST, "an exact sum of %s: fsum is "
                     "for float32 and float64", wave_dtype_name(dt));
  if (n != want)
    return wv_seterr(err, WAVE_EBADREQUEST, "an exact %s sum is %zu bytes, "
                     "not %zu", wave_dtype_name(dt), want, n);
  uint32_t known = WV_XSUM_NAN | WV_XSUM_PINF | WV_XSUM_NINF |
                   WV_XSUM_NOT_NEGZERO;
  if (flags & ~known)
    return wv_seterr(err, WAVE_EBADREQUEST, "exact sum flags 0x%x: unknown "
                     "bits 0x%x", flags, flags & ~known);
  wv_xsum_init(x, dt);
  for (unsigned i = 0; i < x->n_limbs; i++)
    for (unsigned b = 0; b < 8; b++)
      x->limb[i] |= (uint64_t)in[8 * i + b] << (8 * b);
  x->flags = flags;
  return 0;
}
