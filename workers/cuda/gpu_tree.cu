/* gpu_tree.cu - the float sum in the fixed tree of docs/reduction.md, one
 * template over a small float-traits type, built for float32 and float64
 * (the reducer's and the wide reducer's), with the tree's buffers and
 * their growth.
 *
 * A unit owns a group of 256 rows: lane j loads rows 4j..4j+3 and
 * 128+4j..128+4j+3 (float32: two float4; float64: four double2), adds the
 * halves (fold 128), folds 64..4 by xor-shuffles with lanes j^16..j^1 and
 * folds 2 and 1 inside the lane.  Every addition is the traits' add
 * (__fadd_rn / __dadd_rn; no contraction: the library builds with
 * --fmad=false and hipcc with -ffp-contract=off).  A tile of 256 groups
 * is done by 8 blocks (small jobs) or 1 (large ones); its level-1 values
 * end in one level-2 value, and the last tile of a piece folds the piece's
 * level-2 values (level 3).  k_tfinish folds pieces into chunk values and
 * chunk values into the result, in one block.  Host jobs cut float32
 * chunks into pieces of 2^24 rows and float64 ones into pieces of one tile
 * (gpu_wide_host.cu); k_tfinish runs the levels from there on, which gives
 * the same bits (gpu_internal.h).
 */
#include <string.h>

#include "workers/cuda/gpu_wide.h"

namespace WVG_NS {

/* ---- the float traits --------------------------------------------------- */

template <typename T> struct fsum_traits;

template <> struct fsum_traits<float> {
  static __device__ __forceinline__ float add(float a, float b)
  {
    return __fadd_rn(a, b);
  }
  /* Four consecutive rows, one 16-byte load. */
  static __device__ __forceinline__ void load4(const float *p, float v[4])
  {
    float4 x = *(const float4 *)p;
    v[0] = x.x; v[1] = x.y; v[2] = x.z; v[3] = x.w;
  }
  static __device__ __forceinline__ uint32_t bits(float v)
  {
    return __float_as_uint(v);
  }
};

template <> struct fsum_traits<double> {
  static __device__ __forceinline__ double add(double a, double b)
  {
    return __dadd_rn(a, b);
  }
  /* Four consecutive rows, two 16-byte loads. */
  static __device__ __forceinline__ void load4(const double *p, double v[4])
  {
    double2 x = ((const double2 *)p)[0], y = ((const double2 *)p)[1];
    v[0] = x.x; v[1] = x.y; v[2] = y.x; v[3] = y.y;
  }
  static __device__ __forceinline__ unsigned long long bits(double v)
  {
    return (unsigned long long)__double_as_longlong(v);
  }
};

/* ---- one group ---------------------------------------------------------- */

/* Folds 64..1 of G, given each lane's fold-128 values x[c] = v[4j + c] +
 * v[128 + 4j + c].  Every lane returns G (the pairs are symmetric and IEEE
 * addition is commutative). */
template <typename T>
__device__ __forceinline__ T tree_tail(T x0, T x1, T x2, T x3)
{
  typedef fsum_traits<T> F;
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) {
    x0 = F::add(x0, shfl_xor(x0, m));
    x1 = F::add(x1, shfl_xor(x1, m));
    x2 = F::add(x2, shfl_xor(x2, m));
    x3 = F::add(x3, shfl_xor(x3, m));
  }
  x0 = F::add(x0, x2);
  x1 = F::add(x1, x3);
  return F::add(x0, x1);
}

/* A lane's 8 leaves: lo = rows 4j..4j+3, hi = rows 128+4j..128+4j+3. */
template <typename T> struct leaves {
  T lo[4], hi[4];
};

/* G over v[0..255]: lane j holds v(4j..4j+3) and v(128+4j..128+4j+3). */
template <typename T> __device__ __forceinline__ T group_tree(const leaves<T> &v)
{
  typedef fsum_traits<T> F;
  return tree_tail<T>(F::add(v.lo[0], v.hi[0]), F::add(v.lo[1], v.hi[1]),
                      F::add(v.lo[2], v.hi[2]), F::add(v.lo[3], v.hi[3]));
}

template <typename T> __device__ __forceinline__ T sel(T v, uint32_t m)
{
  return m != 0 ? v : (T)-0.0;
}

/* Load the lane's 8 rows of a group starting at row r (tile-relative,
 * buffer row base + r), of which `rows - r` exist; masked and missing rows
 * read as -0.0.  Returns the selected-row count of the lane. */
template <typename T, bool MASK>
__device__ __forceinline__ uint32_t load_group(const T *data,
                                               const uint32_t *mask,
                                               uint64_t base, uint32_t r,
                                               uint32_t rows, leaves<T> &x)
{
  const uint32_t j4 = lane_id() * 4;
  uint32_t cnt = 0;
  if (r + 256 <= rows) {
    const uint64_t p = base + r + j4;
    fsum_traits<T>::load4(data + p, x.lo);
    fsum_traits<T>::load4(data + p + 128, x.hi);
    if (MASK) {
      uint4 ml = *(const uint4 *)(mask + p), mh = *(const uint4 *)(mask + p + 128);
      x.lo[0] = sel(x.lo[0], ml.x); x.lo[1] = sel(x.lo[1], ml.y);
      x.lo[2] = sel(x.lo[2], ml.z); x.lo[3] = sel(x.lo[3], ml.w);
      x.hi[0] = sel(x.hi[0], mh.x); x.hi[1] = sel(x.hi[1], mh.y);
      x.hi[2] = sel(x.hi[2], mh.z); x.hi[3] = sel(x.hi[3], mh.w);
      cnt = (ml.x != 0) + (ml.y != 0) + (ml.z != 0) + (ml.w != 0) +
            (mh.x != 0) + (mh.y != 0) + (mh.z != 0) + (mh.w != 0);
    }
    return cnt;
  }
  /* The partial last group of a tile: row by row, nothing read past it. */
#pragma unroll
  for (int c = 0; c < 8; c++) {
    uint32_t rr = r + j4 + (c & 3) + (c >= 4 ? 128u : 0u);
    T v = (T)-0.0;
    if (rr < rows) {
      uint32_t m = MASK ? mask[base + rr] : 1u;
      if (m != 0) {
        v = data[base + rr];
        cnt++;
      }
    }
    (c < 4 ? x.lo : x.hi)[c & 3] = v;
  }
  return cnt;
}

/* G over src[0 .. n) padded with -0.0 (n <= 256), by one unit; CG: the
 * values were written by other blocks before their fence (read past the
 * L1). */
template <typename T, bool CG>
__device__ __forceinline__ T unit_g(const T *src, uint32_t n)
{
  const uint32_t j4 = lane_id() * 4;
  leaves<T> x;
#pragma unroll
  for (int c = 0; c < 8; c++) {
    uint32_t i = j4 + (c & 3) + (c >= 4 ? 128u : 0u);
    (c < 4 ? x.lo : x.hi)[c & 3] =
        i < n ? (CG ? ld_cg(&src[i]) : src[i]) : (T)-0.0;
  }
  return group_tree(x);
}

/* ---- the tile kernel ---------------------------------------------------- */

/* bpt blocks per tile (1, 2, 4 or 8; table mode: 8), 256 / bpt groups per
 * block.  Unit u of a block does groups g0 + 32k + 8q + u, q = 0..3 (the
 * block reads one contiguous run per k, the four groups of a unit in
 * flight together), its level-1 values kept in shared memory.  A tile done
 * by one block folds them into its level-2 value right there; otherwise
 * unit 0 stores the block's values (one fence per block) and the last of
 * the tile's blocks (ticket) folds all 256.  The last tile of a piece folds
 * the piece's level-2 values into its level-3 value.  Many short blocks
 * suit small jobs (parallelism); one block per tile suits large ones (no
 * per-block fence and ticket, no tile-level pass). */
template <typename T, typename R, bool MASK>
__global__ void __launch_bounds__(WVG_BLOCK)
k_tsum(const T *__restrict__ data, const uint32_t *__restrict__ mask,
       uint64_t n, uint32_t ntiles_all, uint32_t bpt_arith,
       const tile_desc *tiles, const piece_desc *pieces, T *l1g,
       uint32_t *tile_ctr, T *l2, uint32_t *piece_ctr, T *pieces_out, R *res)
{
  __shared__ __align__(16) T sl1[256];
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
    leaves<T> x[4];
#pragma unroll
    for (int q = 0; q < 4; q++) {
      uint32_t g = g0 + k + q * 8 + u;
      if (g < ngroups)
        cnt += load_group<T, MASK>(data, mask, base, g * 256, rows, x[q]);
    }
#pragma unroll
    for (int q = 0; q < 4; q++) {
      uint32_t g = g0 + k + q * 8 + u;
      if (g < ngroups) {
        T v = group_tree(x[q]);
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
  T s2;
  if (nblocks == 1) {
    /* The whole tile was this block's. */
    s2 = unit_g<T, false>(sl1, ngroups);
  } else {
    T *l1 = l1g + (size_t)t * 256;
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
    s2 = unit_g<T, true>(l1, ngroups);
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
  T s3 = unit_g<T, true>(l2 + first_tile, ntiles);
  if (lane_id() == 0) {
    pieces_out[out] = s3;
    piece_ctr[piece] = 0;
  }
}

/* ---- the finish --------------------------------------------------------- */

/* The levels of docs/reduction.md over a[0..len) by one unit, in place:
 * group g is read whole before a[g] is written, and a[g] (g < 256 g') is
 * never read by a later group g'.  Returns the single value left. */
template <typename T> __device__ T unit_levels(T *a, uint32_t len)
{
  while (len > 1) {
    uint32_t ng = (len + 255) / 256;
    for (uint32_t g = 0; g < ng; g++) {
      uint32_t m = len - g * 256;
      T s = unit_g<T, false>(a + g * 256, m < 256 ? m : 256);
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
template <typename T, typename R>
__global__ void __launch_bounds__(WVG_BLOCK)
k_tfinish(T *pieces, const uint32_t *seg, uint32_t nchunks, uint32_t npieces,
          T *scratch, R *res)
{
  const uint32_t u = unit_id(), nu = WVG_BLOCK / 32;
  T *cur = scratch, *nxt = scratch + nchunks;
  for (uint32_t c = u; c < nchunks; c += nu) {
    uint32_t p0 = seg != NULL ? seg[c] : 0;
    uint32_t p1 = seg != NULL ? seg[c + 1] : npieces;
    T s = unit_levels(pieces + p0, p1 - p0);
    if (lane_id() == 0)
      cur[c] = s;
  }
  __syncthreads();
  uint32_t len = nchunks;
  while (len > 1) {
    uint32_t ng = (len + 255) / 256;
    for (uint32_t g = u; g < ng; g += nu) {
      uint32_t m = len - g * 256;
      T s = unit_g<T, false>(cur + g * 256, m < 256 ? m : 256);
      if (lane_id() == 0)
        nxt[g] = s;
    }
    __syncthreads();
    T *tmp = cur;
    cur = nxt;
    nxt = tmp;
    len = ng;
  }
  if (threadIdx.x == 0)
    res->a = fsum_traits<T>::bits(cur[0]);
}

/* ---- host side ---------------------------------------------------------- */

/* Grow *p to at least n elements of size sz (contents are not kept; zeroed
 * when zero is set). */
static cudaError_t grow(void **p, size_t *cap, size_t n, size_t sz, int zero)
{
  if (n <= *cap)
    return cudaSuccess;
  size_t c = *cap ? *cap : 64;
  while (c < n)
    c *= 2;
  /* A grow happens between jobs: nothing in flight uses the old buffer
   * once the device is idle. */
  WVG_TRY(cudaDeviceSynchronize());
  (void)cudaFree(*p);
  *p = NULL;
  *cap = 0;
  WVG_TRY(cudaMalloc(p, c * sz));
  if (zero) {
    /* Kernels run on non-blocking streams: make the zeros land first. */
    WVG_TRY(cudaMemset(*p, 0, c * sz));
    WVG_TRY(cudaDeviceSynchronize());
  }
  *cap = c;
  return cudaSuccess;
}

template <typename T>
cudaError_t tree_reserve(tree_bufs<T> *b, size_t tiles, size_t pieces,
                         size_t job_pieces, size_t chunks)
{
  WVG_TRY(grow((void **)&b->l1, &b->l1_cap, tiles * 256, sizeof(T), 0));
  WVG_TRY(grow((void **)&b->tile_ctr, &b->tile_ctr_cap, tiles,
               sizeof(uint32_t), 1));
  WVG_TRY(grow((void **)&b->l2, &b->l2_cap, tiles, sizeof(T), 0));
  WVG_TRY(grow((void **)&b->piece_ctr, &b->piece_ctr_cap, pieces,
               sizeof(uint32_t), 1));
  WVG_TRY(grow((void **)&b->pieces, &b->pieces_cap, job_pieces, sizeof(T),
               0));
  WVG_TRY(grow((void **)&b->seg, &b->seg_cap, chunks + 1, sizeof(uint32_t),
               0));
  WVG_TRY(grow((void **)&b->scratch, &b->scratch_cap, 2 * chunks, sizeof(T),
               0));
  return cudaSuccess;
}

template <typename T> void tree_free(tree_bufs<T> *b)
{
  (void)cudaFree(b->l1);
  (void)cudaFree(b->tile_ctr);
  (void)cudaFree(b->l2);
  (void)cudaFree(b->piece_ctr);
  (void)cudaFree(b->pieces);
  (void)cudaFree(b->seg);
  (void)cudaFree(b->scratch);
  memset(b, 0, sizeof *b);
}

template <typename T, typename R>
cudaError_t launch_tree(tree_bufs<T> *b, R *res, const T *d_rows,
                        const uint32_t *d_mask, uint64_t n,
                        const tile_desc *tiles, uint32_t ntiles,
                        const piece_desc *pieces, T *pieces_out,
                        cudaStream_t st)
{
  unsigned grid, bpt = WVG_TILE_BLOCKS;
  if (tiles == NULL) {
    if (n == 0)
      return cudaSuccess;
    ntiles = (uint32_t)((n + WVG_TILE_ROWS - 1) / WVG_TILE_ROWS);
    /* One block per tile once there are enough tiles to fill the GPU a
     * few times over (measured on an H200, float32: better from 2^26
     * rows), eight below that. */
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
    k_tsum<T, R, true><<<grid, WVG_BLOCK, 0, st>>>(
        d_rows, d_mask, n, ntiles, bpt, tiles, pieces, b->l1, b->tile_ctr,
        b->l2, b->piece_ctr, pieces_out, res);
  else
    k_tsum<T, R, false><<<grid, WVG_BLOCK, 0, st>>>(
        d_rows, d_mask, n, ntiles, bpt, tiles, pieces, b->l1, b->tile_ctr,
        b->l2, b->piece_ctr, pieces_out, res);
  return cudaGetLastError();
}

template <typename T, typename R>
cudaError_t launch_tree_finish(tree_bufs<T> *b, R *res, const uint32_t *seg,
                               uint32_t nchunks, uint32_t npieces,
                               cudaStream_t st)
{
  k_tfinish<T, R><<<1, WVG_BLOCK, 0, st>>>(b->pieces, seg, nchunks, npieces,
                                           b->scratch, res);
  return cudaGetLastError();
}

template <typename T, typename R>
cudaError_t tree_device(tree_bufs<T> *b, R *res, const T *d_rows,
                        const uint32_t *d_mask, uint64_t n, cudaStream_t st)
{
  uint64_t ntiles = (n + WVG_TILE_ROWS - 1) / WVG_TILE_ROWS;
  uint64_t npieces = (ntiles + WVG_PIECE_TILES - 1) / WVG_PIECE_TILES;
  WVG_TRY(tree_reserve(b, ntiles, npieces, npieces, 1));
  if (d_mask != NULL)
    WVG_TRY(cudaMemsetAsync(&res->count, 0, sizeof res->count, st));
  T *out = npieces == 1 ? (T *)&res->a : b->pieces;
  WVG_TRY(launch_tree(b, res, d_rows, d_mask, n, NULL, 0, NULL, out, st));
  if (npieces > 1)
    WVG_TRY(launch_tree_finish(b, res, NULL, 1, (uint32_t)npieces, st));
  return cudaSuccess;
}

/* The two trees: float32 into the reducer's result, float64 into the wide
 * reducer's. */
#define WVG_TREE(T, R)                                                         \
  template cudaError_t tree_reserve(tree_bufs<T> *, size_t, size_t, size_t,  \
                                    size_t);                                   \
  template void tree_free(tree_bufs<T> *);                                     \
  template cudaError_t launch_tree(tree_bufs<T> *, R *, const T *,             \
                                   const uint32_t *, uint64_t,                 \
                                   const tile_desc *, uint32_t,                \
                                   const piece_desc *, T *, cudaStream_t);     \
  template cudaError_t launch_tree_finish(tree_bufs<T> *, R *,                 \
                                          const uint32_t *, uint32_t,          \
                                          uint32_t, cudaStream_t);             \
  template cudaError_t tree_device(tree_bufs<T> *, R *, const T *,             \
                                   const uint32_t *, uint64_t, cudaStream_t);
WVG_TREE(float, result)
WVG_TREE(double, wresult)

} /* namespace WVG_NS */
