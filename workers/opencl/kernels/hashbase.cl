// hashbase.cl - the pack-independent kernels of the lottery hash
// (docs/hash.md): dataset items from the cache, and the device fold of one
// batch's outputs into segment fingerprints, winners and best (struct
// wv_hash_batch, workers/hash/hash.h).  Part of the base program, built at
// device open together with reduce.cl.

#define FNV_PRIME 0x100000001b3ul
#define FNV_OFFSET 0xcbf29ce484222325ul
#define HB_WG 256u        // work-group of the fold kernels (ocl.h)
#define HB_PER 16u        // outputs per work-item in the fold kernels

inline ulong hb_mix64(ulong x)
{
  x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ul;
  x ^= x >> 27; x *= 0x94d049bb133111ebul;
  x ^= x >> 31;
  return x;
}

// Items [first, first + n) of a memory pack: D[i] from the cache.
__kernel void hash_dataset(__global const ulong *cache, ulong cmask,
                           uint parents, ulong first, ulong n,
                           __global ulong *out)
{
  for (ulong k = get_global_id(0); k < n; k += get_global_size(0)) {
    ulong i = first + k;
    ulong x = hb_mix64(cache[i & cmask] ^ i);
    for (uint j = 0; j < parents; j++)
      x = hb_mix64(x + cache[x & cmask]);
    out[i] = x;
  }
}

// Fold step 1: block b (HB_WG * HB_PER consecutive outputs of out[0..n))
// writes its winner count (output < target) to cnt[b] and its best (the
// smallest output, ties to the lowest index) to best[b] = (output, index).
__kernel __attribute__((reqd_work_group_size(HB_WG, 1, 1)))
void hash_fold_count(__global const ulong *out, uint n, ulong target,
                     __global uint *cnt, __global ulong2 *best)
{
  __local uint lc[HB_WG];
  __local ulong lo[HB_WG];
  __local uint li[HB_WG];
  const uint lid = get_local_id(0);
  const uint base = get_group_id(0) * HB_WG * HB_PER;
  uint c = 0, bi = 0xffffffffu;
  ulong bo = 0xfffffffffffffffful;
  for (uint k = 0; k < HB_PER; k++) {
    uint i = base + k * HB_WG + lid;   // coalesced; the index keeps order
    if (i < n) {
      ulong o = out[i];
      c += o < target ? 1u : 0u;
      if (o < bo || (o == bo && i < bi)) {
        bo = o;
        bi = i;
      }
    }
  }
  lc[lid] = c;
  lo[lid] = bo;
  li[lid] = bi;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint h = HB_WG / 2; h > 0; h >>= 1) {
    if (lid < h) {
      lc[lid] += lc[lid + h];
      ulong o2 = lo[lid + h];
      uint i2 = li[lid + h];
      if (o2 < lo[lid] || (o2 == lo[lid] && i2 < li[lid])) {
        lo[lid] = o2;
        li[lid] = i2;
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) {
    cnt[get_group_id(0)] = lc[0];
    best[get_group_id(0)] = (ulong2)(lo[0], (ulong)li[0]);
  }
}

// Fold step 2, for blocks b0 + group id: write the block's winners, in
// index order, to win[first[b] + rank] while that is below max_w.  first[]
// is the exclusive prefix of cnt[] (the host's).  Work-item t owns the
// HB_PER consecutive outputs base + t * HB_PER ..; a scan of the items'
// counts in local memory gives each its first rank.
__kernel __attribute__((reqd_work_group_size(HB_WG, 1, 1)))
void hash_fold_winners(__global const ulong *out, uint n, ulong target,
                       uint b0, __global const uint *first, uint max_w,
                       __global ulong2 *win)
{
  __local uint sc[HB_WG];
  const uint lid = get_local_id(0);
  const uint b = b0 + get_group_id(0);
  const uint base = b * HB_WG * HB_PER + lid * HB_PER;
  uint c = 0;
  for (uint k = 0; k < HB_PER; k++)
    if (base + k < n && out[base + k] < target)
      c++;
  sc[lid] = c;
  barrier(CLK_LOCAL_MEM_FENCE);
  // Inclusive Hillis-Steele scan; two barriers per step.
  for (uint h = 1; h < HB_WG; h <<= 1) {
    uint v = lid >= h ? sc[lid - h] : 0u;
    barrier(CLK_LOCAL_MEM_FENCE);
    sc[lid] += v;
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  uint r = first[b] + sc[lid] - c;
  for (uint k = 0; k < HB_PER && r < max_w; k++) {
    uint i = base + k;
    if (i < n) {
      ulong o = out[i];
      if (o < target) {
        win[r] = (ulong2)((ulong)i, o);
        r++;
      }
    }
  }
}

// Fold step 3: segment k covers out[seg[k].x .. + seg[k].y); its
// fingerprint is FNV-1a-64 over those outputs as 8 little-endian bytes.
__kernel void hash_fold_segments(__global const ulong *out,
                                 __global const uint2 *seg, uint nseg,
                                 __global ulong *fp)
{
  for (uint k = get_global_id(0); k < nseg; k += get_global_size(0)) {
    uint2 s = seg[k];
    ulong h = FNV_OFFSET;
    for (uint i = 0; i < s.y; i++) {
      ulong o = out[s.x + i];
      for (uint b = 0; b < 8; b++) {
        h ^= (o >> (8 * b)) & 0xfful;
        h *= FNV_PRIME;
      }
    }
    fp[k] = h;
  }
}
