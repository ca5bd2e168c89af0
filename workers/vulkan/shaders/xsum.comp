// xsum.comp - the exact float sum, op fsum (core/xsum.h, docs/reduction.md
// "fsum"): every selected row added exactly into signed 64-bit bins;
// float32 rows (WV_ROW64=0) or float64 (WV_ROW64=1).
//
// A finite row is M * 2^b units (core/xsum.h: the unit is the dtype's
// smallest subnormal); bin k weighs 2^(W k) units.
//  - float64 (W = 32, NB = 66 bins): b = 32 i + sh, sh < 32; M << sh (M <
//    2^53, so < 2^85), cut into unsigned 32-bit digits w0, w1, w2, adds
//    +-w_j to bin i + j (i <= 63);
//  - float32 (W = 16, NB = 18): b = 16 i + sh, sh < 16; the signed
//    +-M << sh (|M| < 2^24, so under 2^39) is one term of bin i (i <= 15).
// Each invocation keeps a window in registers, the bins c, c + 1 (float64:
// c .. c + 3, for the digits), which takes every row with i = c or
// i = c + 1 (and every zero row, which adds nothing).  A non-zero row
// outside the window flushes it (atomicAdd of its non-zero bins into the
// work-group's shared bins, one copy of them per invocation index mod C,
// so that the lanes of a sub-group never meet on one address; float32
// puts a window bin's low 32 bits into bin k and the rest, a >> 32, into
// bin k + 2) and moves it: up to i - 1, i, or down to i, i + 1.  Data
// within a factor of about 2^16 (float32; 2^32 float64), most real data,
// flushes once per invocation; full-range data about once a row.  After
// its blocks the work-group sums the copies, carry-normalises the bins
// (below) and adds the non-zero ones into the job's NO = NB + CB bins in
// device memory (atomicAdd), with its flags (atomicOr).  The host folds
// those into the exact accumulator (vk_xsum.c) and rounds once.
//
// No int64 can overflow (|x| <= 2^63 - 1 for every sum below).  The host
// dispatches at most n = 2^29 rows; an invocation reads at most n / 256 +
// 16 rows of them, a work-group R_wg <= n.
//  - float64: each row adds to any one bin at most one digit, |+-w_j| <
//    2^32 (its digits go to distinct bins).  A window bin, a shared bin's
//    copy and a shared bin hold sums over a subset of the rows of at most
//    one such term each: |x| < R_wg 2^32 <= 2^61;
//  - float32: a window bin holds at most one term (< 2^39) per row of its
//    invocation: |a| < (2^21 + 16) 2^39 < 2^61.  A flush puts into a bin
//    at most two values (a window bin's low 32 bits, and the high part
//    (|a >> 32| < 2^29) of the window bin two below), under 2^33 together,
//    and a work-group flushes at most R_wg + 256 times (each flush but an
//    invocation's last is caused by a row that then enters the window), so
//    a shared bin's copies and their sum stay under (2^29 + 256) 2^33 <
//    2^62 + 2^42;
//  - so the work-group's total T_k of bin k is under 2^62 + 2^42 either
//    way.  Normalised, the job's bin k gets lo32(T_k) + (T_(k-CB) >> 32),
//    with CB = 32 / W the bins a carry of 32 bits moves up (arithmetic
//    shift: the value sum_k T_k 2^(W k) is unchanged), so |bin| < 2^32 +
//    2^31 < 2^33, for k = 0 .. NO - 1 (the top CB bins: carries alone);
//  - the job's bins add one such value per work-group dispatched: the host
//    counts them and refuses a job of more than 2^29 (vk_xsum.c), so
//    |job bin| < 2^29 2^33 = 2^62.
// A window bin past NB - 1 (c = i at the top) never gets a non-zero term.
//
// Flags (core/xsum.h WV_XSUM_*): NaN, +inf, -inf (those rows add nothing),
// and "a row other than -0.0".  Rows past n, and rows the mask leaves out
// (the host stages them as -0.0, the op table's fill), are -0.0: they add
// nothing and set no flag, so masks, chunks and padding change nothing.
//
// Blocks: work-group w reads blocks w, w + groups, ... of 256 U 16-byte
// vectors, invocation l vectors l + 256 u of a block (each load of a
// sub-group one contiguous run), all U loads issued before any is used.
// Needs shaderInt64, shaderSharedInt64Atomics and shaderBufferInt64Atomics
// (the host checks them, vk_xsum.c).
#version 450
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_atomic_int64 : require

layout(local_size_x = 256) in;

#if WV_ROW64
const uint NB = 66u;    // shared bins (bins a row can reach)
const uint CB = 1u;     // bins a carry of 32 bits moves up
const uint R = 2u;      // rows per 16-byte vector
#else
const uint NB = 18u;
const uint CB = 2u;
const uint R = 4u;
#endif
const uint NO = NB + CB;  // the job's bins: the host's VX_NO32 / VX_NO64
const uint C = 32u;     // copies of the shared bins
const uint U = 4u;      // vectors in flight per invocation

const uint F_NAN = 1u, F_PINF = 2u, F_NINF = 4u, F_NOT_NEGZERO = 8u;

layout(set = 0, binding = 0, std430) readonly buffer In { uvec4 vin[]; };
layout(set = 0, binding = 1, std430) buffer Out {
  int64_t gbin[NO];        // the job's bins, zeroed by the host first
  uint gflags;
};

layout(push_constant) uniform Push {
  uint n;          // rows in this input, at most 2^29
} pc;

shared int64_t sbin[NB * C];   // bin k, copy j at k C + j
shared int64_t stot[NB];       // the work-group's totals T_k
shared uint sflags;

// The register window: bins c .. c + 3 (float32: c, c + 1).
int c = -2;                    // no window yet: every row misses
int64_t a0 = 0, a1 = 0;
#if WV_ROW64
int64_t a2 = 0, a3 = 0;
#endif
uint fl = 0u;

void put(uint k, int64_t v)
{
  if (v != 0)
    atomicAdd(sbin[k * C + gl_LocalInvocationIndex % C], v);
}

#if WV_ROW64
void flush()
{
  if (c < 0)
    return;
  const uint k = uint(c);
  put(k, a0); put(k + 1u, a1); put(k + 2u, a2); put(k + 3u, a3);
  a0 = 0; a1 = 0; a2 = 0; a3 = 0;
}

// Bin i gets +-w0, bin i + 1 +-w1, bin i + 2 +-w2.
// A zero row (all w 0: zeros, NaN, infinities) is in every window.
void add(int i, uint w0, uint w1, uint w2, bool neg)
{
  if (uint(i - c) > 1u && (w0 | w1 | w2) != 0u) {   // outside: flush, move
    flush();
    c = i > c ? max(i - 1, 0) : i;
  }
  const int64_t sg = neg ? -1l : 0l;
  const int64_t s0 = (int64_t(w0) ^ sg) - sg;
  const int64_t s1 = (int64_t(w1) ^ sg) - sg;
  const int64_t s2 = (int64_t(w2) ^ sg) - sg;
  const bool t = i != c;       // the row's bin is c + 1
  a0 += t ? 0l : s0;
  a1 += t ? s0 : s1;
  a2 += t ? s1 : s2;
  a3 += t ? s2 : 0l;
}
#else
// Accumulator a of bin k: its low 32 bits to bin k, the rest (a >> 32) to
// bin k + 2, two 16-bit bins up.
void put2(uint k, int64_t a)
{
  put(k, int64_t(uint(a & 0xffffffffl)));
  put(k + 2u, a >> 32);
}

void flush()
{
  if (c < 0)
    return;
  put2(uint(c), a0); put2(uint(c) + 1u, a1);
  a0 = 0; a1 = 0;
}

// Bin i gets sm << sh (|sm| < 2^24, sh < 16: under 2^39).  A zero row
// (zeros, NaN, infinities: sm = 0) is in every window.
void add(int i, int sm, uint sh)
{
  if (uint(i - c) > 1u && sm != 0) {   // outside: flush, move
    flush();
    c = i > c ? max(i - 1, 0) : i;
  }
  const int64_t v = int64_t(sm) << sh;
  const bool t = i != c;       // the row's bin is c + 1
  a0 += t ? 0l : v;
  a1 += t ? v : 0l;
}
#endif

#if WV_ROW64
// One float64 row, its 32-bit words lo, hi.
// Branch-free but for add's flush: NaN and infinities set a flag and add
// zero digits.
void row(uint lo, uint hi)
{
  const uint e = (hi >> 20) & 0x7ffu;
  uint mh = hi & 0xfffffu;
  fl |= (hi != 0x80000000u || lo != 0u) ? F_NOT_NEGZERO : 0u;
  const bool special = e == 0x7ffu;
  fl |= !special ? 0u : (mh | lo) != 0u ? F_NAN
      : (hi >> 31) != 0u ? F_NINF : F_PINF;
  mh = special ? 0u : e != 0u ? mh | 0x100000u : mh;
  lo = special ? 0u : lo;
  const uint b = max(e, 1u) - 1u, sh = b & 31u;
  // M << sh = w2 2^64 + w1 2^32 + w0; (x >> 1) >> (31 - sh) is
  // x >> (32 - sh), also for sh = 0
  add(int(b >> 5), lo << sh, (mh << sh) | ((lo >> 1) >> (31u - sh)),
      (mh >> 1) >> (31u - sh), (hi >> 31) != 0u);
}

void vec(uvec4 v)
{
  row(v.x, v.y);
  row(v.z, v.w);
}

const uvec4 NEG_ZERO_V = uvec4(0u, 0x80000000u, 0u, 0x80000000u);
#else
void row(uint u)
{
  const uint e = (u >> 23) & 0xffu;
  uint m = u & 0x7fffffu;
  fl |= u != 0x80000000u ? F_NOT_NEGZERO : 0u;
  const bool special = e == 0xffu;
  fl |= !special ? 0u : m != 0u ? F_NAN : (u >> 31) != 0u ? F_NINF : F_PINF;
  m = special ? 0u : e != 0u ? m | 0x800000u : m;
  const uint b = max(e, 1u) - 1u;
  const int s = -int(u >> 31);   // 0 or -1
  add(int(b >> 4), (int(m) ^ s) - s, b & 15u);
}

void vec(uvec4 v)
{
  row(v.x);
  row(v.y);
  row(v.z);
  row(v.w);
}

const uvec4 NEG_ZERO_V = uvec4(0x80000000u);
#endif

// Vector q with the rows past n as -0.0.
uvec4 load(uint q)
{
  uvec4 v = NEG_ZERO_V;
  if (R * q < pc.n) {
    v = vin[q];
#if WV_ROW64
    if (2u * q + 1u >= pc.n)
      v.zw = NEG_ZERO_V.zw;
#else
    uvec4 r = uvec4(4u * q) + uvec4(0u, 1u, 2u, 3u);
    v = mix(NEG_ZERO_V, v, lessThan(r, uvec4(pc.n)));
#endif
  }
  return v;
}

void main()
{
  const uint lid = gl_LocalInvocationIndex;
  for (uint k = lid; k < NB * C; k += 256u)
    sbin[k] = 0;
  if (lid == 0u)
    sflags = 0u;
  barrier();

  const uint nvec = (pc.n + R - 1u) / R, B = 256u * U;
  for (uint blk = gl_WorkGroupID.x; blk * B < nvec;
       blk += gl_NumWorkGroups.x) {
    const uint q = blk * B + lid;
    uvec4 v0, v1, v2, v3;
    if ((blk + 1u) * B * R <= pc.n) {   // the block is whole
      v0 = vin[q];         v1 = vin[q + 256u];
      v2 = vin[q + 512u];  v3 = vin[q + 768u];
    } else {
      v0 = load(q);        v1 = load(q + 256u);
      v2 = load(q + 512u); v3 = load(q + 768u);
    }
    vec(v0); vec(v1); vec(v2); vec(v3);
  }
  flush();
  if (fl != 0u)
    atomicOr(sflags, fl);
  barrier();

  // The copies' totals, then normalised bins into the job's (see the top).
  if (lid < NB) {
    int64_t t = 0;
    for (uint j = 0u; j < C; j++)
      t += sbin[lid * C + j];
    stot[lid] = t;
  }
  barrier();
  if (lid < NO) {
    int64_t v = lid < NB ? int64_t(uint(stot[lid] & 0xffffffffl)) : 0l;
    if (lid >= CB)
      v += stot[lid - CB] >> 32;
    if (v != 0)
      atomicAdd(gbin[lid], v);
  }
  if (lid == 0u && sflags != 0u)
    atomicOr(gflags, sflags);
}
