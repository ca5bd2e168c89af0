/* gpu_dsum.cu - the float64 sum in the fixed tree of docs/reduction.md,
 * and the wide reducer's buffers and device-resident entry point.
 *
 * The same kernels as gpu_reduce.cu's float32 tree, in binary64
 * (__dadd_rn, no contraction: the library builds with --fmad=false and
 * hipcc with -ffp-contract=off): a unit owns a group of 256 rows, lane j
 * loads rows 4j..4j+3 and 128+4j..128+4j+3 as four double2, adds the
 * halves (fold 128), folds 64..4 by xor-shuffles with lanes j^16..j^1 (a
 * double as two 32-bit halves) and 2 and 1 inside the lane.  A tile of
 * 256 groups is done by 8 blocks (small jobs) or 1 (large ones) and ends
 * in one level-2 value; the last tile of a piece folds the piece's level-2
 * values (level 3).  k_dfinish folds pieces into chunk values and those
 * into the result.  Host jobs (gpu_wide_host.cu) use one-tile pieces, cut
 * at multiples of 65536 rows of a chunk; k_dfinish then runs the levels
 * from level 3 on, which gives the same bits (gpu_internal.h).
 */
#include <string.h>

#include "workers/cuda/gpu_wide.h"

namespace WVG_NS {

#define WVG_DNEG0 (-0.0)

__device__ __forceinline__ double shfl_xor_d(double v, int m)
{
  unsigned long long b = (unsigned long long)__double_as_longlong(v);
  uint32_t lo = shfl_xor((uint32_t)b, m), hi = shfl_xor((uint32_t)(b >> 32), m);
  return __longlong_as_double((long long)(((unsigned long long)hi << 32) | lo));
}

/* Folds 64..1 given each lane's fold-128 values; every lane returns G. */
__device__ __forceinline__ double dtree_tail(double x0, double x1, double x2,
                                             double x3)
{
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) {
    x0 = __dadd_rn(x0, shfl_xor_d(x0, m));
    x1 = __dadd_rn(x1, shfl_xor_d(x1, m));
    x2 = __dadd_rn(x2, shfl_xor_d(x2, m));
    x3 = __dadd_rn(x3, shfl_xor_d(x3, m));
  }
  x0 = __dadd_rn(x0, x2);
  x1 = __dadd_rn(x1, x3);
  return __dadd_rn(x0, x1);
}

/* A lane's 8 leaves: lo = rows 4j..4j+3, hi = rows 128+4j..128+4j+3. */
struct d8 {
  double2 l0, l1, h0, h1;
};

__device__ __forceinline__ double dgroup(const d8 &v)
{
  return dtree_tail(__dadd_rn(v.l0.x, v.h0.x), __dadd_rn(v.l0.y, v.h0.y),
                    __dadd_rn(v.l1.x, v.h1.x), __dadd_rn(v.l1.y, v.h1.y));
}

__device__ __forceinline__ double dsel(double v, uint32_t m)
{
  return m != 0 ? v : WVG_DNEG0;
}

/* G over src[0 .. n) padded with -0.0, by one unit; cg: the values were
 * written by other blocks (read past the L1). */
template <bool CG>
__device__ __forceinline__ double unit_dg(const double *src, uint32_t n)
{
  const uint32_t j4 = lane_id() * 4;
  double v[8];
#pragma unroll
  for (int c = 0; c < 8; c++) {
    uint32_t i = j4 + (c & 3) + (c >= 4 ? 128u : 0u);
    v[c] = i < n ? (CG ? ld_cg(&src[i]) : src[i]) : WVG_DNEG0;
  }
  d8 x = {make_double2(v[0], v[1]), make_double2(v[2], v[3]),
          make_double2(v[4], v[5]), make_double2(v[6], v[7])};
  return dgroup(x);
}

/* The lane's 8 rows of the group at tile row r (buffer row base + r), of
 * which rows - r exist; masked and missing rows are -0.0.  Returns the
 * lane's selected rows. */
template <bool MASK>
__device__ __forceinline__ uint32_t dload(const double *data,
                                          const uint32_t *mask, uint64_t base,
                                          uint32_t r, uint32_t rows, d8 &x)
{
  const uint32_t j4 = lane_id() * 4;
  uint32_t cnt = 0;
  if (r + 256 <= rows) {
    const uint64_t p = base + r + j4;
    const double2 *q = (const double2 *)(data + p);
    x.l0 = q[0];
    x.l1 = q[1];
    x.h0 = q[64];
    x.h1 = q[65];
    if (MASK) {
      uint4 ml = *(const uint4 *)(mask + p), mh = *(const uint4 *)(mask + p + 128);
      x.l0.x = dsel(x.l0.x, ml.x); x.l0.y = dsel(x.l0.y, ml.y);
      x.l1.x = dsel(x.l1.x, ml.z); x.l1.y = dsel(x.l1.y, ml.w);
      x.h0.x = dsel(x.h0.x, mh.x); x.h0.y = dsel(x.h0.y, mh.y);
      x.h1.x = dsel(x.h1.x, mh.z); x.h1.y = dsel(x.h1.y, mh.w);
      cnt = (ml.x != 0) + (ml.y != 0) + (ml.z != 0) + (ml.w != 0) +
            (mh.x != 0) + (mh.y != 0) + (mh.z != 0) + (mh.w != 0);
    }
    return cnt;
  }
  double v[8];
#pragma unroll
  for (int c = 0; c < 8; c++) {
    uint32_t rr = r + j4 + (c & 3) + (c >= 4 ? 128u : 0u);
    v[c] = WVG_DNEG0;
    if (rr < rows) {
      uint32_t m = MASK ? mask[base + rr] : 1u;
      if (m != 0) {
        v[c] = data[base + rr];
        cnt++;
      }
    }
  }
  x.l0 = make_double2(v[0], v[1]);
  x.l1 = make_double2(v[2], v[3]);
  x.h0 = make_double2(v[4], v[5]);
  x.h1 = make_double2(v[6], v[7]);
  return cnt;
}

/* Where a block's tile lies (table or arithmetic mode, as k_fsum). */
struct dtile {
  uint64_t base;
  uint32_t rows, piece, first_tile, ntiles, out;
};

__device__ __forceinline__ dtile dtile_of(uint32_t t, uint64_t n,
                                          uint32_t ntiles_all,
                                          const tile_desc *tiles,
                                          const piece_desc *pieces)
{
  dtile d;
  if (tiles != NULL) {
    tile_desc td = tiles[t];
    piece_desc pd = pieces[td.piece];
    d.base = td.buf_row;
    d.rows = td.rows;
    d.piece = td.piece;
    d.first_tile = pd.first_tile;
    d.ntiles = pd.ntiles;
    d.out = pd.out;
  } else {
    d.base = (uint64_t)t * WVG_TILE_ROWS;
    uint64_t left = n - d.base;
    d.rows = left < WVG_TILE_ROWS ? (uint32_t)left : WVG_TILE_ROWS;
    d.piece = t / WVG_PIECE_TILES;
    d.first_tile = d.piece * WVG_PIECE_TILES;
    d.ntiles = min(WVG_PIECE_TILES, ntiles_all - d.first_tile);
    d.out = d.piece;
  }
  return d;
}

/* After level 2 (s2, in unit 0): the piece's value, or the level-3 fold by
 * the piece's last tile. */
__device__ __forceinline__ void dpiece(const dtile &d, uint32_t t, double s2,
                                       double *l2, uint32_t *piece_ctr,
                                       double *pieces_out)
{
  uint32_t lastp = 0;
  if (lane_id() == 0) {
    if (d.ntiles == 1) {
      pieces_out[d.out] = s2;  /* G of one value padded with -0.0 */
    } else {
      l2[t] = s2;
      __threadfence();
      lastp = atomicAdd(&piece_ctr[d.piece], 1u) == d.ntiles - 1;
    }
  }
  if (!shfl(lastp, 0))
    return;
  __threadfence();
  double s3 = unit_dg<true>(l2 + d.first_tile, d.ntiles);
  if (lane_id() == 0) {
    pieces_out[d.out] = s3;
    piece_ctr[d.piece] = 0;
  }
}

/* bpt blocks per tile; unit u does groups g0 + 32k + 8q + u, q = 0..3,
 * four groups in flight (k_fsum's layout). */
template <bool MASK>
__global__ void __launch_bounds__(WVG_BLOCK)
k_dsum(const double *__restrict__ data, const uint32_t *__restrict__ mask,
       uint64_t n, uint32_t ntiles_all, uint32_t bpt_arith,
       const tile_desc *tiles, const piece_desc *pieces, double *l1g,
       uint32_t *tile_ctr, double *l2, uint32_t *piece_ctr,
       double *pieces_out, wresult *res)
{
  __shared__ __align__(16) double sl1[256];
  __shared__ uint32_t scnt[WVG_BLOCK / 32];
  const uint32_t bpt = tiles != NULL ? WVG_TILE_BLOCKS : bpt_arith;
  const uint32_t t = blockIdx.x / bpt, part = blockIdx.x % bpt;
  const dtile d = dtile_of(t, n, ntiles_all, tiles, pieces);
  const uint32_t ngroups = (d.rows + 255) / 256;
  const uint32_t gpb = 256 / bpt, g0 = part * gpb;
  const uint32_t nblocks = tiles != NULL ? bpt : (ngroups + gpb - 1) / gpb;
  const uint32_t u = unit_id();
  uint32_t cnt = 0;
  for (uint32_t k = 0; k < gpb; k += 32) {
    d8 x[4];
#pragma unroll
    for (int q = 0; q < 4; q++) {
      uint32_t g = g0 + k + q * 8 + u;
      if (g < ngroups)
        cnt += dload<MASK>(data, mask, d.base, g * 256, d.rows, x[q]);
    }
#pragma unroll
    for (int q = 0; q < 4; q++) {
      uint32_t g = g0 + k + q * 8 + u;
      if (g < ngroups) {
        double v = dgroup(x[q]);
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
  if (MASK && lane_id() == 0) {
    uint32_t c = 0;
    for (unsigned w = 0; w < WVG_BLOCK / 32; w++)
      c += scnt[w];
    if (c != 0)
      atomicAdd(&res->count, (unsigned long long)c);
  }
  double s2;
  if (nblocks == 1) {
    s2 = unit_dg<false>(sl1, ngroups);
  } else {
    double *l1 = l1g + (size_t)t * 256;
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
    s2 = unit_dg<true>(l1, ngroups);
  }
  if (lane_id() == 0)
    tile_ctr[t] = 0;
  dpiece(d, t, s2, l2, piece_ctr, pieces_out);
}

/* The levels over a[0..len) by one unit, in place (unit_levels). */
__device__ double unit_dlevels(double *a, uint32_t len)
{
  while (len > 1) {
    uint32_t ng = (len + 255) / 256;
    for (uint32_t g = 0; g < ng; g++) {
      uint32_t m = len - g * 256;
      double s = unit_dg<false>(a + g * 256, m < 256 ? m : 256);
      __syncwarp();
      if (lane_id() == 0)
        a[g] = s;
      __syncwarp();
    }
    len = ng;
  }
  return a[0];
}

/* One block: chunk values (a unit per chunk), then the levels over them,
 * ping-ponging between the two halves of scratch (k_finish). */
__global__ void __launch_bounds__(WVG_BLOCK)
k_dfinish(double *pieces, const uint32_t *seg, uint32_t nchunks,
          uint32_t npieces, double *scratch, wresult *res)
{
  const uint32_t u = unit_id(), nu = WVG_BLOCK / 32;
  double *cur = scratch, *nxt = scratch + nchunks;
  for (uint32_t c = u; c < nchunks; c += nu) {
    uint32_t p0 = seg != NULL ? seg[c] : 0;
    uint32_t p1 = seg != NULL ? seg[c + 1] : npieces;
    double s = unit_dlevels(pieces + p0, p1 - p0);
    if (lane_id() == 0)
      cur[c] = s;
  }
  __syncthreads();
  uint32_t len = nchunks;
  while (len > 1) {
    uint32_t ng = (len + 255) / 256;
    for (uint32_t g = u; g < ng; g += nu) {
      uint32_t m = len - g * 256;
      double s = unit_dg<false>(cur + g * 256, m < 256 ? m : 256);
      if (lane_id() == 0)
        nxt[g] = s;
    }
    __syncthreads();
    double *tmp = cur;
    cur = nxt;
    nxt = tmp;
    len = ng;
  }
  if (threadIdx.x == 0)
    res->a = (unsigned long long)__double_as_longlong(cur[0]);
}

/* ---- host side ---------------------------------------------------------- */

void wide_op(wave_dtype d, wave_op op, int *kop, int *key)
{
  int k = K_SUM;
  switch (op) {
  case WAVE_SUM: k = d == WAVE_F64 ? K_DSUM : K_SUM; break;
  case WAVE_MIN: k = K_MIN; break;
  case WAVE_MAX: k = K_MAX; break;
  case WAVE_EXTENT: k = K_EXT; break;
  case WAVE_AND: k = K_AND; break;
  case WAVE_OR: k = K_OR; break;
  case WAVE_XOR: k = K_XOR; break;
  case WAVE_ARGMIN: k = K_ARGMIN; break;
  case WAVE_ARGMAX: k = K_ARGMAX; break;
  default: break;
  }
  *kop = k;
  *key = d == WAVE_F64 ? KEY_F64 : d == WAVE_S64 ? KEY_S64
       : d == WAVE_F32 ? KEY_F32 : d == WAVE_S32 ? KEY_S32 : KEY_RAW;
}

void wreducer_fini(wreducer *w)
{
  (void)cudaFree(w->partials);
  (void)cudaFree(w->ticket);
  (void)cudaFree(w->res);
  (void)cudaFree(w->l1);
  (void)cudaFree(w->tile_ctr);
  (void)cudaFree(w->l2);
  (void)cudaFree(w->piece_ctr);
  (void)cudaFree(w->pieces);
  (void)cudaFree(w->seg);
  (void)cudaFree(w->scratch);
  if (w->h_res != NULL)
    (void)cudaFreeHost(w->h_res);
  memset(w, 0, sizeof *w);
}

/* Grow *p to n elements of sz bytes, between jobs (gpu_reducer.cu's). */
static cudaError_t wgrow(void **p, size_t *cap, size_t n, size_t sz, int zero)
{
  if (n <= *cap)
    return cudaSuccess;
  size_t c = *cap ? *cap : 64;
  while (c < n)
    c *= 2;
  WVG_TRY(cudaDeviceSynchronize());
  (void)cudaFree(*p);
  *p = NULL;
  *cap = 0;
  WVG_TRY(cudaMalloc(p, c * sz));
  if (zero) {
    WVG_TRY(cudaMemset(*p, 0, c * sz));
    WVG_TRY(cudaDeviceSynchronize());
  }
  *cap = c;
  return cudaSuccess;
}

cudaError_t wreducer_reserve(wreducer *w, size_t tiles, size_t pieces,
                             size_t job_pieces, size_t chunks)
{
  WVG_TRY(wgrow((void **)&w->l1, &w->l1_cap, tiles * 256, sizeof(double), 0));
  WVG_TRY(wgrow((void **)&w->tile_ctr, &w->tile_ctr_cap, tiles,
                sizeof(uint32_t), 1));
  WVG_TRY(wgrow((void **)&w->l2, &w->l2_cap, tiles, sizeof(double), 0));
  WVG_TRY(wgrow((void **)&w->piece_ctr, &w->piece_ctr_cap, pieces,
                sizeof(uint32_t), 1));
  WVG_TRY(wgrow((void **)&w->pieces, &w->pieces_cap, job_pieces,
                sizeof(double), 0));
  WVG_TRY(wgrow((void **)&w->seg, &w->seg_cap, chunks + 1, sizeof(uint32_t),
                0));
  WVG_TRY(wgrow((void **)&w->scratch, &w->scratch_cap, 2 * chunks,
                sizeof(double), 0));
  return cudaSuccess;
}

cudaError_t launch_dsum(wreducer *w, const double *d_rows,
                        const uint32_t *d_mask, uint64_t n,
                        const tile_desc *tiles, uint32_t ntiles,
                        const piece_desc *pieces, double *pieces_out,
                        cudaStream_t st)
{
  unsigned grid, bpt = WVG_TILE_BLOCKS;
  if (tiles == NULL) {
    if (n == 0)
      return cudaSuccess;
    ntiles = (uint32_t)((n + WVG_TILE_ROWS - 1) / WVG_TILE_ROWS);
    /* As the float32 tree: one block per tile once there are enough. */
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
    k_dsum<true><<<grid, WVG_BLOCK, 0, st>>>(
        d_rows, d_mask, n, ntiles, bpt, tiles, pieces, w->l1, w->tile_ctr,
        w->l2, w->piece_ctr, pieces_out, w->res);
  else
    k_dsum<false><<<grid, WVG_BLOCK, 0, st>>>(
        d_rows, d_mask, n, ntiles, bpt, tiles, pieces, w->l1, w->tile_ctr,
        w->l2, w->piece_ctr, pieces_out, w->res);
  return cudaGetLastError();
}

cudaError_t launch_dfinish(wreducer *w, const uint32_t *seg, uint32_t nchunks,
                           uint32_t npieces, cudaStream_t st)
{
  k_dfinish<<<1, WVG_BLOCK, 0, st>>>(w->pieces, seg, nchunks, npieces,
                                     w->scratch, w->res);
  return cudaGetLastError();
}

cudaError_t reduce_device_wide(wreducer *w, wave_dtype d, wave_op op,
                               const void *d_rows, const uint32_t *d_mask,
                               uint64_t n, cudaStream_t st)
{
  int kop, key;
  wide_op(d, op, &kop, &key);
  if (kop == K_ARGMIN || kop == K_ARGMAX)
    return launch_arg(w, d, kop, d_rows, d_mask, n, 0, 1, st);
  if (kop != K_DSUM)
    return launch_w64(w, kop, key, d_rows, d_mask, n, 1, st);
  uint64_t ntiles = (n + WVG_TILE_ROWS - 1) / WVG_TILE_ROWS;
  uint64_t npieces = (ntiles + WVG_PIECE_TILES - 1) / WVG_PIECE_TILES;
  WVG_TRY(wreducer_reserve(w, ntiles, npieces, npieces, 1));
  if (d_mask != NULL)
    WVG_TRY(cudaMemsetAsync(&w->res->count, 0, sizeof w->res->count, st));
  double *out = npieces == 1 ? (double *)&w->res->a : w->pieces;
  WVG_TRY(launch_dsum(w, (const double *)d_rows, d_mask, n, NULL, 0, NULL,
                      out, st));
  if (npieces > 1)
    WVG_TRY(launch_dfinish(w, NULL, 1, (uint32_t)npieces, st));
  return cudaSuccess;
}

} /* namespace WVG_NS */
