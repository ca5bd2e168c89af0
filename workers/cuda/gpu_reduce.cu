/* gpu_reduce.cu - the reduction kernels of the CUDA and HIP backends, on
 * rows already in device memory (docs/reduction.md is the contract).
 *
 * Two kernels do the work:
 *
 *  - k_int: every order-free op (integer sum/min/max/and/or/xor, and float
 *    min/max/extent through order-preserving integer keys).  A persistent
 *    grid streams 16-byte vectors, four in flight per thread, folds them per
 *    thread, then per 32-lane unit (redux.sync on sm_80+, a shuffle tree
 *    elsewhere), then per block; the last block to finish (ticket counter)
 *    folds the block partials and the job's running result.  One launch per
 *    slice, nothing to initialise, nothing read back until the job ends.
 *
 *  - k_fsum: the float sum in exactly the fixed tree.  A unit owns a group
 *    of 256 rows: lane j loads rows 4j..4j+3 and 128+4j..128+4j+3 as two
 *    float4, adds them (fold 128), then folds 64..4 by xor-shuffles with
 *    lanes j^16..j^1 and folds 2 and 1 inside the lane.  A tile of 256
 *    groups is done by 8 blocks (small jobs) or 1 (large ones); its level-1
 *    values end in one level-2 value, and the last tile of a piece folds the
 *    piece's level-2 values (level 3).  k_finish folds pieces into chunk
 *    values and chunk values into the result, in one block.
 *
 * Float keys: bits b with the sign set map to ~b, others to b | 2^31, so
 * unsigned order is numeric order with -0.0 < +0.0; NaN and inf are left
 * out (identity), and a min key of 0xffffffff (a NaN pattern, never made by
 * a finite value) means "no finite row".
 *
 * The reducer's host side that needs no kernel (kernel_op, the buffers'
 * growth, decode_result) is in gpu_reducer.cu.
 */
#include "workers/cuda/gpu_internal.h"

namespace WVG_NS {

/* ---- integer / key reductions ------------------------------------------ */

template <int OP> __device__ __forceinline__ uint32_t ident_a()
{
  return (OP == K_MIN || OP == K_EXT || OP == K_AND) ? 0xffffffffu : 0u;
}

/* The key of one row, and whether it takes part (float: finite only). */
template <int OP, int KEY>
__device__ __forceinline__ uint32_t to_key(uint32_t x, bool *valid)
{
  if (KEY == KEY_S32 && (OP == K_MIN || OP == K_MAX || OP == K_EXT)) {
    *valid = true;
    return x ^ 0x80000000u;
  }
  if (KEY == KEY_F32) {
    *valid = (x & 0x7f800000u) != 0x7f800000u;
    return (x & 0x80000000u) ? ~x : (x | 0x80000000u);
  }
  *valid = true;
  return x;
}

template <int OP>
__device__ __forceinline__ void fold(uint32_t &a, uint32_t &b, uint32_t k)
{
  switch (OP) {
  case K_SUM: a += k; break;
  case K_MIN: a = min(a, k); break;
  case K_MAX: a = max(a, k); break;
  case K_EXT: a = min(a, k); b = max(b, k); break;
  case K_AND: a &= k; break;
  case K_OR: a |= k; break;
  case K_XOR: a ^= k; break;
  }
}

/* One row: fold its key unless masked out or not finite; count it when
 * selected. */
template <int OP, int KEY, bool MASK>
__device__ __forceinline__ void fold_row(uint32_t &a, uint32_t &b,
                                         uint32_t &cnt, uint32_t x,
                                         uint32_t m)
{
  bool valid;
  uint32_t k = to_key<OP, KEY>(x, &valid);
  bool sel = !MASK || m != 0;
  if (MASK)
    cnt += sel ? 1u : 0u;
  if (sel && valid)
    fold<OP>(a, b, k);
}

template <int OP, int KEY, bool MASK>
__device__ __forceinline__ void fold_vec(uint32_t &a, uint32_t &b,
                                         uint32_t &cnt, uint4 v, uint4 m)
{
  fold_row<OP, KEY, MASK>(a, b, cnt, v.x, m.x);
  fold_row<OP, KEY, MASK>(a, b, cnt, v.y, m.y);
  fold_row<OP, KEY, MASK>(a, b, cnt, v.z, m.z);
  fold_row<OP, KEY, MASK>(a, b, cnt, v.w, m.w);
}

template <int OP>
__device__ __forceinline__ void unit_fold(uint32_t &a, uint32_t &b)
{
  switch (OP) {
  case K_SUM: a = unit_add(a); break;
  case K_MIN: a = unit_min(a); break;
  case K_MAX: a = unit_max(a); break;
  case K_EXT: a = unit_min(a); b = unit_max(b); break;
  case K_AND: a = unit_and(a); break;
  case K_OR: a = unit_or(a); break;
  case K_XOR: a = unit_xor(a); break;
  }
}

/* Merge a partial (a2, b2) into (a, b).  For extent a is a min and b a max:
 * folding a2 into both, as for a row, would let the min identity
 * (0xffffffff) of an empty partial become the max. */
template <int OP>
__device__ __forceinline__ void combine(uint32_t &a, uint32_t &b, uint32_t a2,
                                        uint32_t b2)
{
  if (OP == K_EXT) {
    a = min(a, a2);
    b = max(b, b2);
  } else {
    fold<OP>(a, b, a2);
  }
}

__device__ __forceinline__ unsigned long long
unit_add64(unsigned long long v)
{
  for (int m = 16; m > 0; m >>= 1) {
    uint32_t lo = shfl_xor((uint32_t)v, m);
    uint32_t hi = shfl_xor((uint32_t)(v >> 32), m);
    v += ((unsigned long long)hi << 32) | lo;
  }
  return v;
}

/* Block-wide fold of (a, b, count); the block's values land in thread 0. */
template <int OP>
__device__ __forceinline__ void block_fold(uint32_t &a, uint32_t &b,
                                           unsigned long long &cnt)
{
  __shared__ uint32_t sa[WVG_BLOCK / 32], sb[WVG_BLOCK / 32];
  __shared__ unsigned long long sc[WVG_BLOCK / 32];
  unit_fold<OP>(a, b);
  cnt = unit_add64(cnt);
  if (lane_id() == 0) {
    sa[unit_id()] = a;
    sb[unit_id()] = b;
    sc[unit_id()] = cnt;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (unsigned u = 1; u < WVG_BLOCK / 32; u++) {
      combine<OP>(a, b, sa[u], sb[u]);
      cnt += sc[u];
    }
  }
}

template <int OP, int KEY, bool MASK>
__global__ void __launch_bounds__(WVG_BLOCK)
k_int(const uint4 *__restrict__ data, const uint4 *__restrict__ mask,
      uint64_t n, uint4 *partials, uint32_t *ticket, result *res, int first)
{
  uint32_t a = ident_a<OP>(), b = 0, cnt = 0;
  const uint64_t nvec = n >> 2;
  const uint64_t stride = (uint64_t)gridDim.x * WVG_BLOCK;
  uint64_t i = (uint64_t)blockIdx.x * WVG_BLOCK + threadIdx.x;
  const uint4 one = make_uint4(1, 1, 1, 1);

  /* Four independent 16-byte loads (eight with a mask) before any use. */
  for (; i + 3 * stride < nvec; i += 4 * stride) {
    uint4 v0 = data[i], v1 = data[i + stride];
    uint4 v2 = data[i + 2 * stride], v3 = data[i + 3 * stride];
    uint4 m0 = one, m1 = one, m2 = one, m3 = one;
    if (MASK) {
      m0 = mask[i];
      m1 = mask[i + stride];
      m2 = mask[i + 2 * stride];
      m3 = mask[i + 3 * stride];
    }
    fold_vec<OP, KEY, MASK>(a, b, cnt, v0, m0);
    fold_vec<OP, KEY, MASK>(a, b, cnt, v1, m1);
    fold_vec<OP, KEY, MASK>(a, b, cnt, v2, m2);
    fold_vec<OP, KEY, MASK>(a, b, cnt, v3, m3);
  }
  for (; i < nvec; i += stride)
    fold_vec<OP, KEY, MASK>(a, b, cnt, data[i], MASK ? mask[i] : one);
  /* The last n % 4 rows. */
  if (blockIdx.x == 0 && threadIdx.x < (n & 3u)) {
    uint64_t row = (nvec << 2) + threadIdx.x;
    const uint32_t *d32 = (const uint32_t *)data;
    const uint32_t *m32 = (const uint32_t *)mask;
    fold_row<OP, KEY, MASK>(a, b, cnt, d32[row], MASK ? m32[row] : 1u);
  }

  unsigned long long c64 = cnt;
  block_fold<OP>(a, b, c64);

  /* One block (small jobs): no partials, no ticket. */
  if (gridDim.x == 1) {
    if (threadIdx.x == 0) {
      if (!first) {
        combine<OP>(a, b, res->a, res->b);
        c64 += res->count;
      }
      res->a = a;
      res->b = b;
      res->count = c64;
    }
    return;
  }

  /* The last block to arrive folds every block's partial. */
  __shared__ bool last;
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = make_uint4(a, b, (uint32_t)c64,
                                      (uint32_t)(c64 >> 32));
    __threadfence();
    last = atomicAdd(ticket, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last)
    return;
  __threadfence();
  a = ident_a<OP>();
  b = 0;
  c64 = 0;
  for (uint32_t j = threadIdx.x; j < gridDim.x; j += WVG_BLOCK) {
    uint4 p = ld_cg(&partials[j]);
    combine<OP>(a, b, p.x, p.y);
    c64 += ((unsigned long long)p.w << 32) | p.z;
  }
  block_fold<OP>(a, b, c64);
  if (threadIdx.x == 0) {
    if (!first) {
      combine<OP>(a, b, res->a, res->b);
      c64 += res->count;
    }
    res->a = a;
    res->b = b;
    res->count = c64;
    *ticket = 0;
  }
}

/* ---- the float-sum tree ------------------------------------------------- */

/* Folds 64..1 of G, given each lane's fold-128 values x[c] = v[4j + c] +
 * v[128 + 4j + c].  Every lane returns G (the pairs are symmetric and IEEE
 * addition is commutative). */
__device__ __forceinline__ float tree_tail(float x0, float x1, float x2,
                                           float x3)
{
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) {
    x0 = __fadd_rn(x0, shfl_xor(x0, m));
    x1 = __fadd_rn(x1, shfl_xor(x1, m));
    x2 = __fadd_rn(x2, shfl_xor(x2, m));
    x3 = __fadd_rn(x3, shfl_xor(x3, m));
  }
  x0 = __fadd_rn(x0, x2);
  x1 = __fadd_rn(x1, x3);
  return __fadd_rn(x0, x1);
}

/* G over v[0..255] where v(i) is read by the caller: lane j needs
 * v(4j..4j+3) and v(128+4j..128+4j+3). */
__device__ __forceinline__ float group_tree(float4 lo, float4 hi)
{
  return tree_tail(__fadd_rn(lo.x, hi.x), __fadd_rn(lo.y, hi.y),
                   __fadd_rn(lo.z, hi.z), __fadd_rn(lo.w, hi.w));
}

#define WVG_NEG0 (-0.0f)

__device__ __forceinline__ float sel(float v, uint32_t m)
{
  return m != 0 ? v : WVG_NEG0;
}

/* Load the lane's 8 rows of a group starting at row r (tile-relative,
 * buffer row base + r), of which `rows - r` exist; masked and missing rows
 * read as -0.0.  Returns the selected-row count of the lane. */
template <bool MASK>
__device__ __forceinline__ uint32_t load_group(const float *data,
                                               const uint32_t *mask,
                                               uint64_t base, uint32_t r,
                                               uint32_t rows, float4 &lo,
                                               float4 &hi)
{
  const uint32_t j4 = lane_id() * 4;
  uint32_t cnt = 0;
  if (r + 256 <= rows) {
    const uint64_t p = base + r + j4;
    lo = *(const float4 *)(data + p);
    hi = *(const float4 *)(data + p + 128);
    if (MASK) {
      uint4 ml = *(const uint4 *)(mask + p), mh = *(const uint4 *)(mask + p + 128);
      lo.x = sel(lo.x, ml.x); lo.y = sel(lo.y, ml.y);
      lo.z = sel(lo.z, ml.z); lo.w = sel(lo.w, ml.w);
      hi.x = sel(hi.x, mh.x); hi.y = sel(hi.y, mh.y);
      hi.z = sel(hi.z, mh.z); hi.w = sel(hi.w, mh.w);
      cnt = (ml.x != 0) + (ml.y != 0) + (ml.z != 0) + (ml.w != 0) +
            (mh.x != 0) + (mh.y != 0) + (mh.z != 0) + (mh.w != 0);
    }
    return cnt;
  }
  /* The partial last group of a tile: row by row, nothing read past it. */
  float v[8];
#pragma unroll
  for (int c = 0; c < 8; c++) {
    uint32_t rr = r + j4 + (c & 3) + (c >= 4 ? 128u : 0u);
    v[c] = WVG_NEG0;
    if (rr < rows) {
      uint32_t m = MASK ? mask[base + rr] : 1u;
      if (m != 0) {
        v[c] = data[base + rr];
        cnt++;
      }
    }
  }
  lo = make_float4(v[0], v[1], v[2], v[3]);
  hi = make_float4(v[4], v[5], v[6], v[7]);
  return cnt;
}

/* G over src[0 .. n) padded with -0.0 (n <= 256), by one unit; the
 * values were written by other blocks before their fence. */
__device__ __forceinline__ float unit_g_cg(const float *src, uint32_t n)
{
  const uint32_t j4 = lane_id() * 4;
  float v[8];
#pragma unroll
  for (int c = 0; c < 8; c++) {
    uint32_t i = j4 + (c & 3) + (c >= 4 ? 128u : 0u);
    v[c] = i < n ? ld_cg(&src[i]) : WVG_NEG0;
  }
  return group_tree(make_float4(v[0], v[1], v[2], v[3]),
                    make_float4(v[4], v[5], v[6], v[7]));
}

/* G over the first n (<= 256) values of shared sl1, padded with -0.0. */
__device__ __forceinline__ float unit_g_smem(const float *sl1, uint32_t n)
{
  const uint32_t j4 = lane_id() * 4;
  float v[8];
#pragma unroll
  for (int c = 0; c < 8; c++) {
    uint32_t i = j4 + (c & 3) + (c >= 4 ? 128u : 0u);
    v[c] = i < n ? sl1[i] : WVG_NEG0;
  }
  return group_tree(make_float4(v[0], v[1], v[2], v[3]),
                    make_float4(v[4], v[5], v[6], v[7]));
}

/* bpt blocks per tile (1, 2, 4 or 8; table mode: 8), 256 / bpt groups per
 * block.  Unit u of a block does groups g0 + 32k + 8q + u, q = 0..3 (the
 * block reads one contiguous 32 KiB per k, the four groups of a unit in
 * flight together), its level-1 values kept in shared memory.  A tile done
 * by one block folds them into its level-2 value right there; otherwise
 * unit 0 stores the block's values (one fence per block) and the last of
 * the tile's blocks (ticket) folds all 256.  The last tile of a piece folds
 * the piece's level-2 values into its level-3 value.  Many short blocks
 * suit small jobs (parallelism); one block per tile suits large ones (no
 * per-block fence and ticket, no tile-level pass). */
template <bool MASK>
__global__ void __launch_bounds__(WVG_BLOCK)
k_fsum(const float *__restrict__ data, const uint32_t *__restrict__ mask,
       uint64_t n, uint32_t ntiles_all, uint32_t bpt_arith,
       const tile_desc *tiles, const piece_desc *pieces, float *l1g,
       uint32_t *tile_ctr, float *l2, uint32_t *piece_ctr, float *pieces_out,
       result *res)
{
  __shared__ __align__(16) float sl1[256];
  __shared__ uint32_t scnt[WVG_BLOCK / 32];
  const uint32_t bpt = tiles != NULL ? WVG_TILE_BLOCKS : bpt_arith;
  const uint32_t t = blockIdx.x / bpt;
  const uint32_t part = blockIdx.x % bpt;
  uint64_t base;
  uint32_t rows, piece, first_tile, ntiles, out;
  if (tiles != NULL) {
    tile_desc td = tiles[t];
    piece_desc pd = pieces[td.piece];
    base = td.buf_row;
    rows = td.rows;
    piece = td.piece;
    first_tile = pd.first_tile;
    ntiles = pd.ntiles;
    out = pd.out;
  } else {
    base = (uint64_t)t * WVG_TILE_ROWS;
    uint64_t left = n - base;
    rows = left < WVG_TILE_ROWS ? (uint32_t)left : WVG_TILE_ROWS;
    piece = t / WVG_PIECE_TILES;
    first_tile = piece * WVG_PIECE_TILES;
    ntiles = min(WVG_PIECE_TILES, ntiles_all - first_tile);
    out = piece;
  }
  const uint32_t ngroups = (rows + 255) / 256;
  const uint32_t gpb = 256 / bpt;           /* groups per block */
  const uint32_t g0 = part * gpb;
  /* Arithmetic mode launches only the blocks the last tile needs. */
  const uint32_t nblocks = tiles != NULL ? bpt : (ngroups + gpb - 1) / gpb;

  const uint32_t u = unit_id();
  uint32_t cnt = 0;
  for (uint32_t k = 0; k < gpb; k += 32) {
    float4 lo[4], hi[4];
#pragma unroll
    for (int q = 0; q < 4; q++) {
      uint32_t g = g0 + k + q * 8 + u;
      if (g < ngroups)
        cnt += load_group<MASK>(data, mask, base, g * 256, rows, lo[q], hi[q]);
    }
#pragma unroll
    for (int q = 0; q < 4; q++) {
      uint32_t g = g0 + k + q * 8 + u;
      if (g < ngroups) {
        float v = group_tree(lo[q], hi[q]);
        if (lane_id() == 0)
          sl1[g - g0] = v;
      }
    }
  }
  if (MASK) {
    cnt = unit_add(cnt);
    if (lane_id() == 0)
      scnt[u] = cnt;
  }
  __syncthreads();
  if (u != 0)
    return;

  /* Unit 0 from here on. */
  if (MASK && lane_id() == 0) {
    uint32_t c = 0;
    for (unsigned w = 0; w < WVG_BLOCK / 32; w++)
      c += scnt[w];
    if (c != 0)
      atomicAdd(&res->count, (unsigned long long)c);
  }
  float s2;
  if (nblocks == 1) {
    /* The whole tile was this block's. */
    s2 = unit_g_smem(sl1, ngroups);
  } else {
    float *l1 = l1g + (size_t)t * 256;
    uint32_t nloc = ngroups > g0 ? min(gpb, ngroups - g0) : 0;
    for (uint32_t i = lane_id(); i < nloc; i += 32)
      l1[g0 + i] = sl1[i];
    __threadfence();
    uint32_t lastt = 0;
    if (lane_id() == 0)
      lastt = atomicAdd(&tile_ctr[t], 1u) == nblocks - 1;
    if (!shfl(lastt, 0))
      return;
    __threadfence();
    s2 = unit_g_cg(l1, ngroups);
  }

  /* Level 2 done (groups past the tile's rows were padding, -0.0). */
  uint32_t lastp = 0;
  if (lane_id() == 0) {
    tile_ctr[t] = 0;
    if (ntiles == 1) {
      /* G of one value padded with -0.0 is that value. */
      pieces_out[out] = s2;
    } else {
      l2[t] = s2;
      __threadfence();
      lastp = atomicAdd(&piece_ctr[piece], 1u) == ntiles - 1;
    }
  }
  if (!shfl(lastp, 0))
    return;
  /* Level 3: the piece's level-2 values, padded with -0.0. */
  __threadfence();
  float s3 = unit_g_cg(l2 + first_tile, ntiles);
  if (lane_id() == 0) {
    pieces_out[out] = s3;
    piece_ctr[piece] = 0;
  }
}

/* The levels of docs/reduction.md over a[0..len) by one unit, in place:
 * group g is read whole before a[g] is written, and a[g] (g < 256 g') is
 * never read by a later group g'.  Returns the single value left. */
__device__ float unit_levels(float *a, uint32_t len)
{
  const uint32_t j4 = lane_id() * 4;
  while (len > 1) {
    uint32_t ng = (len + 255) / 256;
    for (uint32_t g = 0; g < ng; g++) {
      float v[8];
#pragma unroll
      for (int c = 0; c < 8; c++) {
        uint32_t i = g * 256 + j4 + (c & 3) + (c >= 4 ? 128u : 0u);
        v[c] = i < len ? a[i] : WVG_NEG0;
      }
      float s = group_tree(make_float4(v[0], v[1], v[2], v[3]),
                           make_float4(v[4], v[5], v[6], v[7]));
      __syncwarp();
      if (lane_id() == 0)
        a[g] = s;
      __syncwarp();
    }
    len = ng;
  }
  return a[0];
}

/* One block: chunk values from their pieces (a unit per chunk), then the
 * levels over chunk values, ping-ponging between two scratch halves so that
 * units working on one level in parallel never overwrite what another is
 * reading. */
__global__ void __launch_bounds__(WVG_BLOCK)
k_finish(float *pieces, const uint32_t *seg, uint32_t nchunks,
         uint32_t npieces, float *scratch, result *res)
{
  const uint32_t u = unit_id(), nu = WVG_BLOCK / 32;
  float *cur = scratch, *nxt = scratch + nchunks;
  for (uint32_t c = u; c < nchunks; c += nu) {
    uint32_t p0 = seg != NULL ? seg[c] : 0;
    uint32_t p1 = seg != NULL ? seg[c + 1] : npieces;
    float s = unit_levels(pieces + p0, p1 - p0);
    if (lane_id() == 0)
      cur[c] = s;
  }
  __syncthreads();
  uint32_t len = nchunks;
  const uint32_t j4 = lane_id() * 4;
  while (len > 1) {
    uint32_t ng = (len + 255) / 256;
    for (uint32_t g = u; g < ng; g += nu) {
      float v[8];
#pragma unroll
      for (int c = 0; c < 8; c++) {
        uint32_t i = g * 256 + j4 + (c & 3) + (c >= 4 ? 128u : 0u);
        v[c] = i < len ? cur[i] : WVG_NEG0;
      }
      float s = group_tree(make_float4(v[0], v[1], v[2], v[3]),
                           make_float4(v[4], v[5], v[6], v[7]));
      if (lane_id() == 0)
        nxt[g] = s;
    }
    __syncthreads();
    float *tmp = cur;
    cur = nxt;
    nxt = tmp;
    len = ng;
  }
  if (threadIdx.x == 0)
    res->a = __float_as_uint(cur[0]);
}

/* ---- host side ---------------------------------------------------------- */

typedef void (*int_kernel)(const uint4 *, const uint4 *, uint64_t, uint4 *,
                           uint32_t *, result *, int);

template <int OP, int KEY> static int_kernel pick_mask(bool mask)
{
  return mask ? k_int<OP, KEY, true> : k_int<OP, KEY, false>;
}

/* The instantiations that exist: bitwise ops and sum only on raw bits,
 * min/max/extent on each key. */
static int_kernel pick_int(int kop, int key, bool mask)
{
  switch (kop) {
  case K_SUM: return pick_mask<K_SUM, KEY_RAW>(mask);
  case K_AND: return pick_mask<K_AND, KEY_RAW>(mask);
  case K_OR: return pick_mask<K_OR, KEY_RAW>(mask);
  case K_XOR: return pick_mask<K_XOR, KEY_RAW>(mask);
  case K_MIN:
    return key == KEY_F32 ? pick_mask<K_MIN, KEY_F32>(mask)
         : key == KEY_S32 ? pick_mask<K_MIN, KEY_S32>(mask)
                          : pick_mask<K_MIN, KEY_RAW>(mask);
  case K_MAX:
    return key == KEY_F32 ? pick_mask<K_MAX, KEY_F32>(mask)
         : key == KEY_S32 ? pick_mask<K_MAX, KEY_S32>(mask)
                          : pick_mask<K_MAX, KEY_RAW>(mask);
  case K_EXT:
    return key == KEY_F32 ? pick_mask<K_EXT, KEY_F32>(mask)
         : key == KEY_S32 ? pick_mask<K_EXT, KEY_S32>(mask)
                          : pick_mask<K_EXT, KEY_RAW>(mask);
  }
  return NULL;
}

cudaError_t reducer_init(reducer *r)
{
  memset(r, 0, sizeof *r);
  int dev = 0, sms = 0, per_sm = 0;
  WVG_TRY(cudaGetDevice(&dev));
  WVG_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  WVG_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &per_sm, k_int<K_EXT, KEY_F32, true>, WVG_BLOCK, 0));
  if (per_sm < 1)
    per_sm = 1;
  r->sms = sms;
  r->int_blocks = (unsigned)(sms * per_sm);
  WVG_TRY(cudaMalloc((void **)&r->partials, r->int_blocks * sizeof(uint4)));
  WVG_TRY(cudaMalloc((void **)&r->ticket, sizeof(uint32_t)));
  WVG_TRY(cudaMalloc((void **)&r->res, sizeof(result)));
  WVG_TRY(cudaMemset(r->ticket, 0, sizeof(uint32_t)));
  return reducer_reserve(r, 4096, 64, 64, 64);
}

cudaError_t launch_int(reducer *r, int kop, int key, const void *d_rows,
                       const uint32_t *d_mask, uint64_t n, int first,
                       cudaStream_t st)
{
  int_kernel k = pick_int(kop, key, d_mask != NULL);
  uint64_t want = ((n >> 2) + WVG_BLOCK - 1) / WVG_BLOCK;
  unsigned grid = want < 1 ? 1 : want > r->int_blocks ? r->int_blocks
                                                      : (unsigned)want;
  k<<<grid, WVG_BLOCK, 0, st>>>((const uint4 *)d_rows, (const uint4 *)d_mask,
                                n, r->partials, r->ticket, r->res, first);
  return cudaGetLastError();
}

cudaError_t launch_fsum(reducer *r, const float *d_rows,
                        const uint32_t *d_mask, uint64_t n,
                        const tile_desc *tiles, uint32_t ntiles,
                        const piece_desc *pieces, float *pieces_out,
                        cudaStream_t st)
{
  unsigned grid, bpt = WVG_TILE_BLOCKS;
  if (tiles == NULL) {
    if (n == 0)
      return cudaSuccess;
    ntiles = (uint32_t)((n + WVG_TILE_ROWS - 1) / WVG_TILE_ROWS);
    /* One block per tile once there are enough tiles to fill the GPU a
     * few times over (measured on an H200: better from 2^26 rows), eight
     * below that. */
    bpt = ntiles >= 512 ? 1 : WVG_TILE_BLOCKS;
    uint32_t gpb = 256 / bpt;
    uint64_t last_rows = n - (uint64_t)(ntiles - 1) * WVG_TILE_ROWS;
    uint32_t last_groups = (uint32_t)((last_rows + 255) / 256);
    grid = (ntiles - 1) * bpt + (last_groups + gpb - 1) / gpb;
  } else {
    if (ntiles == 0)
      return cudaSuccess;
    grid = ntiles * WVG_TILE_BLOCKS;
  }
  if (d_mask != NULL)
    k_fsum<true><<<grid, WVG_BLOCK, 0, st>>>(
        d_rows, d_mask, n, ntiles, bpt, tiles, pieces, r->l1, r->tile_ctr,
        r->l2, r->piece_ctr, pieces_out, r->res);
  else
    k_fsum<false><<<grid, WVG_BLOCK, 0, st>>>(
        d_rows, d_mask, n, ntiles, bpt, tiles, pieces, r->l1, r->tile_ctr,
        r->l2, r->piece_ctr, pieces_out, r->res);
  return cudaGetLastError();
}

cudaError_t launch_finish(reducer *r, const uint32_t *seg, uint32_t nchunks,
                          uint32_t npieces, cudaStream_t st)
{
  k_finish<<<1, WVG_BLOCK, 0, st>>>(r->pieces, seg, nchunks, npieces,
                                    r->scratch, r->res);
  return cudaGetLastError();
}

cudaError_t reduce_device(reducer *r, wave_dtype d, wave_op op,
                          const void *d_rows, const uint32_t *d_mask,
                          uint64_t n, cudaStream_t st)
{
  int kop, key;
  kernel_op(d, op, &kop, &key);
  if (kop != K_FSUM)
    return launch_int(r, kop, key, d_rows, d_mask, n, 1, st);
  uint64_t ntiles = (n + WVG_TILE_ROWS - 1) / WVG_TILE_ROWS;
  uint64_t npieces = (ntiles + WVG_PIECE_TILES - 1) / WVG_PIECE_TILES;
  WVG_TRY(reducer_reserve(r, ntiles, npieces, npieces, 1));
  if (d_mask != NULL)
    WVG_TRY(cudaMemsetAsync(&r->res->count, 0, sizeof r->res->count, st));
  float *out = npieces == 1 ? (float *)&r->res->a : r->pieces;
  WVG_TRY(launch_fsum(r, (const float *)d_rows, d_mask, n, NULL, 0, NULL, out,
                      st));
  if (npieces > 1)
    WVG_TRY(launch_finish(r, NULL, 1, (uint32_t)npieces, st));
  return cudaSuccess;
}

} /* namespace WVG_NS */
