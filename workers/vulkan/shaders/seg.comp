// seg.comp - a hash batch folded on the device (docs/hash.md "Segments";
// vk_seg.c drives it), one program with three passes chosen by the
// specialization constant PASS (wv_vk_pipeline's variant):
//  0 fold     one work-item per segment piece of the sub-batch walks its
//             outputs in nonce order: FNV-1a-64, winner count, best (the
//             smallest output, the first index of it);
//  1 scan     one work-group: each segment's rank among the batch's winners
//             (the exclusive prefix of the counts, starting from the
//             running count in the accumulator, capped at max_winners);
//             adds the sub-batch's count and best into the accumulator;
//  2 collect  one work-item per segment whose winners start below
//             max_winners stores them at their rank.
// Bindings: 0 the sub-batch's outputs, 1 its segment records, 2 the
// accumulator followed by the winner slots.
//
// FNV-1a-64 in 32-bit halves: with P = 2^40 + 435, (hi:lo) * P is
// lo' = lo * 435, hi' = hi * 435 + mulhi(lo, 435) + (lo << 8).
#version 450
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require

layout(local_size_x = 256) in;
layout(constant_id = 0) const uint PASS = 0u;

layout(set = 0, binding = 0, std430) readonly buffer Out { uint64_t outv[]; };

struct Seg {
  uint64_t fp, best_out;
  uint cnt, best_idx, pre, pad;
};
layout(set = 0, binding = 1, std430) buffer Segs { Seg seg[]; };

struct Winner {
  uint64_t nonce, value;
};
layout(set = 0, binding = 2, std430) buffer Acc {
  uint64_t count, best_out, best_nonce, pad;
  Winner win[];
} acc;

layout(push_constant) uniform Push {
  uint64_t lo;        // the sub-batch's first nonce: outv[n - lo]
  uint64_t last;      // its last nonce (inclusive)
  uint64_t target;    // output < target wins
  uint64_t maxw;      // winner slots (0: no collect)
  uint nseg;          // segments of the sub-batch
  uint s;             // segment_log2
} pc;

// Piece t of the sub-batch: first index into outv, and length.
void piece(uint t, out uint first, out uint n)
{
  uint64_t start = t == 0u ? pc.lo : ((pc.lo >> pc.s) + uint64_t(t)) << pc.s;
  uint64_t e = start | ((uint64_t(1) << pc.s) - 1ul);
  if (e > pc.last)
    e = pc.last;
  first = uint(start - pc.lo);
  n = uint(e - start) + 1u;
}

void fnv_byte(inout uint lo, inout uint hi, uint byte)
{
  uint x = lo ^ byte, mhi, mlo;
  umulExtended(x, 435u, mhi, mlo);
  hi = hi * 435u + mhi + (x << 8);
  lo = mlo;
}

// Outputs are read eight at a time, all eight loads issued before the
// chain uses the first, so that a work-item waits for memory once per
// eight outputs rather than once per output.
#define BATCH 8u

void fold_one(uint64_t o, uint i, inout uint lo, inout uint hi, inout uint c,
              inout uint64_t best, inout uint bi)
{
  uvec2 w = unpack32(o);
  fnv_byte(lo, hi, w.x & 0xffu);
  fnv_byte(lo, hi, (w.x >> 8) & 0xffu);
  fnv_byte(lo, hi, (w.x >> 16) & 0xffu);
  fnv_byte(lo, hi, w.x >> 24);
  fnv_byte(lo, hi, w.y & 0xffu);
  fnv_byte(lo, hi, (w.y >> 8) & 0xffu);
  fnv_byte(lo, hi, (w.y >> 16) & 0xffu);
  fnv_byte(lo, hi, w.y >> 24);
  if (o < pc.target)
    c++;
  if (o < best) {
    best = o;
    bi = i;
  }
}

void fold(uint t)
{
  uint first, n;
  piece(t, first, n);
  uint lo = 0x84222325u, hi = 0xcbf29ce4u;
  uint c = 0u, bi = 0u;
  uint64_t best = ~0ul;
  uint i = 0u;
  for (; i + BATCH <= n; i += BATCH) {
    uint64_t v[BATCH];
    for (uint k = 0u; k < BATCH; k++)
      v[k] = outv[first + i + k];
    for (uint k = 0u; k < BATCH; k++)
      fold_one(v[k], i + k, lo, hi, c, best, bi);
  }
  for (; i < n; i++)
    fold_one(outv[first + i], i, lo, hi, c, best, bi);
  seg[t].fp = pack64(uvec2(lo, hi));
  seg[t].best_out = best;
  seg[t].cnt = c;
  seg[t].best_idx = first + bi;
}

shared uint64_t s_sum[256];
shared uint64_t s_bo[256];
shared uint64_t s_bn[256];

bool better(uint64_t o, uint64_t n, uint64_t bo, uint64_t bn)
{
  return o < bo || (o == bo && n < bn);
}

void scan(uint t)
{
  const uint T = 256u;
  uint per = (pc.nseg + T - 1u) / T;
  uint k0 = min(t * per, pc.nseg), k1 = min(k0 + per, pc.nseg);
  uint64_t c = 0ul, bo = ~0ul, bn = ~0ul;
  for (uint k = k0; k < k1; k++) {
    c += uint64_t(seg[k].cnt);
    uint64_t o = seg[k].best_out, n = pc.lo + uint64_t(seg[k].best_idx);
    if (better(o, n, bo, bn)) {
      bo = o;
      bn = n;
    }
  }
  s_sum[t] = c;
  s_bo[t] = bo;
  s_bn[t] = bn;
  barrier();
  const uint64_t base = acc.count;
  for (uint d = 1u; d < T; d <<= 1) {
    uint64_t add = t >= d ? s_sum[t - d] : 0ul;
    barrier();
    s_sum[t] += add;
    barrier();
  }
  uint64_t run = base + s_sum[t] - c;
  for (uint k = k0; k < k1; k++) {
    seg[k].pre = uint(min(run, pc.maxw));
    run += uint64_t(seg[k].cnt);
  }
  for (uint d = T / 2u; d > 0u; d >>= 1) {
    if (t < d && better(s_bo[t + d], s_bn[t + d], s_bo[t], s_bn[t])) {
      s_bo[t] = s_bo[t + d];
      s_bn[t] = s_bn[t + d];
    }
    barrier();
  }
  if (t == 0u) {
    acc.count = base + s_sum[T - 1u];
    if (better(s_bo[0], s_bn[0], acc.best_out, acc.best_nonce)) {
      acc.best_out = s_bo[0];
      acc.best_nonce = s_bn[0];
    }
  }
}

void collect(uint t)
{
  if (seg[t].cnt == 0u || uint64_t(seg[t].pre) >= pc.maxw)
    return;
  uint first, n;
  piece(t, first, n);
  // Stops once the segment's own winners are all found or the slots are
  // full; reads eight outputs at a time like fold.
  uint64_t pos = uint64_t(seg[t].pre);
  uint left = seg[t].cnt;
  for (uint i = 0u; i < n && pos < pc.maxw && left > 0u; i += BATCH) {
    uint64_t v[BATCH];
    uint m = min(BATCH, n - i);
    for (uint k = 0u; k < BATCH; k++)
      v[k] = k < m ? outv[first + i + k] : ~0ul;
    for (uint k = 0u; k < m; k++)
      if (v[k] < pc.target && pos < pc.maxw) {
        acc.win[uint(pos)].nonce = pc.lo + uint64_t(first + i + k);
        acc.win[uint(pos)].value = v[k];
        pos++;
        left--;
      }
  }
}

void main()
{
  const uint t = gl_GlobalInvocationID.x;
  if (PASS == 1u) {
    scan(gl_LocalInvocationID.x);
    return;
  }
  if (t >= pc.nseg)
    return;
  if (PASS == 0u)
    fold(t);
  else
    collect(t);
}
