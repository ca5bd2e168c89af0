/* gpu_wide.cu - the streaming kernels of the 64-bit dtypes and of
 * argmin/argmax, on rows already in device memory (docs/reduction.md).
 *
 *  - k_w64: sum/min/max/extent/and/or/xor on 64-bit rows, as k_int does on
 *    32-bit ones: a persistent grid streams 16-byte vectors (two rows),
 *    four in flight per thread, folds per thread, per 32-lane unit (64-bit
 *    shuffles as two 32-bit halves: redux.sync is 32-bit only), per block;
 *    the last block (ticket) folds the block partials and the job's
 *    running result.  float64 min/max compare order keys (below).
 *
 *  - k_arg: argmin/argmax on 4- or 8-byte rows.  A thread keeps a (key,
 *    index) pair; its rows come in increasing index, so a strictly better
 *    key replaces it and ties keep the first.  Pairs merge by key, then the
 *    lower index.  Float keys: the order key of float min/max, with NaN,
 *    +-inf and masked rows mapped to the worst key, which no finite row
 *    has, so one compare per row decides; integer keys use the whole
 *    range, so "no row yet" is the index.  Indices are 32-bit within a
 *    launch (the launch is cut below 2^31 rows) and global from the
 *    block fold on.
 *
 * Order keys: bits b with the sign set map to ~b, others to b | sign, so
 * unsigned order is numeric order with -0.0 < +0.0.  Finite float32 keys
 * lie in [0x00800000, 0xff7fffff], float64 ones in [2^52, 2^64 - 2^52 - 1];
 * 0 and all-ones are never finite.  Units are 32 lanes with width-32
 * shuffles (gpu.h), right on 32-lane warps and on 64-lane AMD waves.
 */
#include <string.h>

#include "workers/cuda/gpu_wide.h"

namespace WVG_NS {

__device__ __forceinline__ unsigned long long shfl_xor64(unsigned long long v,
                                                         int m)
{
  uint32_t lo = shfl_xor((uint32_t)v, m);
  uint32_t hi = shfl_xor((uint32_t)(v >> 32), m);
  return ((unsigned long long)hi << 32) | lo;
}

/* ---- order-free 64-bit ops ---------------------------------------------- */

template <int OP, int KEY, bool MASK>
__device__ __forceinline__ void row64(unsigned long long &a,
                                      unsigned long long &b, uint32_t &cnt,
                                      unsigned long long x, uint32_t m)
{
  bool valid;
  unsigned long long k = row_key<KEY>(x, &valid);
  bool sel = !MASK || m != 0;
  if (MASK)
    cnt += sel ? 1u : 0u;
  if (sel && valid)
    fold<OP>(a, b, k);
}

template <int OP, int KEY, bool MASK>
__device__ __forceinline__ void vec64(unsigned long long &a,
                                      unsigned long long &b, uint32_t &cnt,
                                      uint4 v, uint2 m)
{
  row64<OP, KEY, MASK>(a, b, cnt, ((unsigned long long)v.y << 32) | v.x, m.x);
  row64<OP, KEY, MASK>(a, b, cnt, ((unsigned long long)v.w << 32) | v.z, m.y);
}

/* Block-wide fold of (a, b, c); thread 0 ends with the block's. */
template <int OP>
__device__ __forceinline__ void block_fold64(unsigned long long &a,
                                             unsigned long long &b,
                                             unsigned long long &c)
{
  __shared__ unsigned long long sa[WVG_BLOCK / 32], sb[WVG_BLOCK / 32],
      sc[WVG_BLOCK / 32];
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) {
    combine<OP>(a, b, shfl_xor64(a, m), shfl_xor64(b, m));
    c += shfl_xor64(c, m);
  }
  if (lane_id() == 0) {
    sa[unit_id()] = a;
    sb[unit_id()] = b;
    sc[unit_id()] = c;
  }
  __syncthreads();
  if (threadIdx.x == 0)
    for (unsigned u = 1; u < WVG_BLOCK / 32; u++) {
      combine<OP>(a, b, sa[u], sb[u]);
      c += sc[u];
    }
}

template <int OP, int KEY, bool MASK>
__global__ void __launch_bounds__(WVG_BLOCK)
k_w64(const uint4 *__restrict__ data, const uint2 *__restrict__ mask,
      uint64_t n, wresult *partials, uint32_t *ticket, wresult *res, int first)
{
  unsigned long long a = ident<OP, unsigned long long>(), b = 0;
  uint32_t cnt = 0;
  const uint64_t nvec = n >> 1;
  const uint64_t stride = (uint64_t)gridDim.x * WVG_BLOCK;
  uint64_t i = (uint64_t)blockIdx.x * WVG_BLOCK + threadIdx.x;
  const uint2 one = make_uint2(1, 1);
  for (; i + 3 * stride < nvec; i += 4 * stride) {
    uint4 v0 = data[i], v1 = data[i + stride];
    uint4 v2 = data[i + 2 * stride], v3 = data[i + 3 * stride];
    uint2 m0 = one, m1 = one, m2 = one, m3 = one;
    if (MASK) {
      m0 = mask[i];
      m1 = mask[i + stride];
      m2 = mask[i + 2 * stride];
      m3 = mask[i + 3 * stride];
    }
    vec64<OP, KEY, MASK>(a, b, cnt, v0, m0);
    vec64<OP, KEY, MASK>(a, b, cnt, v1, m1);
    vec64<OP, KEY, MASK>(a, b, cnt, v2, m2);
    vec64<OP, KEY, MASK>(a, b, cnt, v3, m3);
  }
  for (; i < nvec; i += stride)
    vec64<OP, KEY, MASK>(a, b, cnt, data[i], MASK ? mask[i] : one);
  if (blockIdx.x == 0 && threadIdx.x == 0 && (n & 1u)) {
    const unsigned long long *d64 = (const unsigned long long *)data;
    const uint32_t *m32 = (const uint32_t *)mask;
    row64<OP, KEY, MASK>(a, b, cnt, d64[n - 1], MASK ? m32[n - 1] : 1u);
  }
  unsigned long long c = cnt;
  block_fold64<OP>(a, b, c);

  __shared__ bool last;
  if (gridDim.x == 1) {
    last = true;
  } else {
    if (threadIdx.x == 0) {
      wresult p = {a, b, c, 0};
      partials[blockIdx.x] = p;
      __threadfence();
      last = atomicAdd(ticket, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last)
      return;
    __threadfence();
    a = ident<OP, unsigned long long>();
    b = 0;
    c = 0;
    for (uint32_t j = threadIdx.x; j < gridDim.x; j += WVG_BLOCK) {
      combine<OP>(a, b, ld_cg(&partials[j].a), ld_cg(&partials[j].b));
      c += ld_cg(&partials[j].count);
    }
    block_fold64<OP>(a, b, c);
  }
  if (threadIdx.x == 0) {
    if (!first) {
      combine<OP>(a, b, res->a, res->b);
      c += res->count;
    }
    res->a = a;
    res->b = b;
    res->count = c;
    res->idx = 0;
    *ticket = 0;
  }
}

/* ---- argmin / argmax ---------------------------------------------------- */

/* Row width W (4 or 8): its key type, rows per 16-byte vector, and the
 * mask's vector of as many rows. */
template <int W> struct rw;
template <> struct rw<4> {
  typedef uint32_t K;
  typedef uint4 M;
  static const int ROWS = 4;
  static __device__ __forceinline__ M ones() { return make_uint4(1, 1, 1, 1); }
};
template <> struct rw<8> {
  typedef unsigned long long K;
  typedef uint2 M;
  static const int ROWS = 2;
  static __device__ __forceinline__ M ones() { return make_uint2(1, 1); }
};

template <int W, bool MAX>
__device__ __forceinline__ typename rw<W>::K worst()
{
  return MAX ? (typename rw<W>::K)0 : (typename rw<W>::K)~0ull;
}

template <int W, bool MAX>
__device__ __forceinline__ bool better(typename rw<W>::K k,
                                       typename rw<W>::K than)
{
  return MAX ? k > than : k < than;
}

/* One row at local index i into the thread's (bk, bi). */
template <int W, int KEY, bool MAX, bool MASK>
__device__ __forceinline__ void arg_row(typename rw<W>::K &bk, uint32_t &bi,
                                        uint32_t &cnt, typename rw<W>::K x,
                                        uint32_t m, uint32_t i)
{
  typedef typename rw<W>::K K;
  const bool fl = KEY == KEY_F32;
  bool ok;
  K k = row_key<KEY>(x, &ok);
  bool sel = !MASK || m != 0;
  if (fl) {
    ok = ok && sel;
    cnt += ok ? 1u : 0u;
    k = ok ? k : worst<W, MAX>();
    if (better<W, MAX>(k, bk)) {
      bk = k;
      bi = i;
    }
  } else {
    if (MASK)
      cnt += sel ? 1u : 0u;
    if (sel && (better<W, MAX>(k, bk) || bi == 0xffffffffu)) {
      bk = k;
      bi = i;
    }
  }
}

template <int W, int KEY, bool MAX, bool MASK>
__device__ __forceinline__ void arg_vec(typename rw<W>::K &bk, uint32_t &bi,
                                        uint32_t &cnt, uint4 v,
                                        typename rw<W>::M m, uint32_t i0)
{
  if constexpr (W == 4) {
    arg_row<W, KEY, MAX, MASK>(bk, bi, cnt, v.x, m.x, i0);
    arg_row<W, KEY, MAX, MASK>(bk, bi, cnt, v.y, m.y, i0 + 1);
    arg_row<W, KEY, MAX, MASK>(bk, bi, cnt, v.z, m.z, i0 + 2);
    arg_row<W, KEY, MAX, MASK>(bk, bi, cnt, v.w, m.w, i0 + 3);
  } else {
    arg_row<W, KEY, MAX, MASK>(bk, bi, cnt,
                               ((unsigned long long)v.y << 32) | v.x, m.x, i0);
    arg_row<W, KEY, MAX, MASK>(bk, bi, cnt,
                               ((unsigned long long)v.w << 32) | v.z, m.y,
                               i0 + 1);
  }
}

/* (k2, i2) into (k, i): the better key, on a tie the lower index; a pair
 * without a row (WVG_NOIDX) carries the worst key and never wins. */
template <bool MAX>
__device__ __forceinline__ void arg_merge(unsigned long long &k,
                                          unsigned long long &i,
                                          unsigned long long k2,
                                          unsigned long long i2)
{
  bool take = i2 != WVG_NOIDX &&
              ((MAX ? k2 > k : k2 < k) || (k2 == k && i2 < i));
  if (take) {
    k = k2;
    i = i2;
  }
}

template <bool MAX>
__device__ __forceinline__ void arg_block(unsigned long long &k,
                                          unsigned long long &i,
                                          unsigned long long &c)
{
  __shared__ unsigned long long sk[WVG_BLOCK / 32], si[WVG_BLOCK / 32],
      sc[WVG_BLOCK / 32];
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) {
    arg_merge<MAX>(k, i, shfl_xor64(k, m), shfl_xor64(i, m));
    c += shfl_xor64(c, m);
  }
  if (lane_id() == 0) {
    sk[unit_id()] = k;
    si[unit_id()] = i;
    sc[unit_id()] = c;
  }
  __syncthreads();
  if (threadIdx.x == 0)
    for (unsigned u = 1; u < WVG_BLOCK / 32; u++) {
      arg_merge<MAX>(k, i, sk[u], si[u]);
      c += sc[u];
    }
}

/* The block's pairs folded; the last block folds the partials and the
 * running result. */
template <bool MAX>
__device__ __forceinline__ void arg_finish(unsigned long long k,
                                           unsigned long long i,
                                           unsigned long long c,
                                           unsigned long long wk,
                                           wresult *partials,
                                           uint32_t *ticket, wresult *res,
                                           int first)
{
  arg_block<MAX>(k, i, c);
  __shared__ bool last;
  if (gridDim.x > 1) {
    if (threadIdx.x == 0) {
      wresult p = {k, 0, c, i};
      partials[blockIdx.x] = p;
      __threadfence();
      last = atomicAdd(ticket, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last)
      return;
    __threadfence();
    k = wk;
    i = WVG_NOIDX;
    c = 0;
    for (uint32_t j = threadIdx.x; j < gridDim.x; j += WVG_BLOCK) {
      arg_merge<MAX>(k, i, ld_cg(&partials[j].a), ld_cg(&partials[j].idx));
      c += ld_cg(&partials[j].count);
    }
    arg_block<MAX>(k, i, c);
  }
  if (threadIdx.x == 0) {
    if (!first) {
      /* The running result's rows all come before this launch's. */
      unsigned long long rk = res->a, ri = res->idx;
      arg_merge<MAX>(rk, ri, k, i);
      k = rk;
      i = ri;
      c += res->count;
    }
    res->a = k;
    res->b = 0;
    res->idx = i;
    res->count = c;
    *ticket = 0;
  }
}

template <int W, int KEY, bool MAX, bool MASK>
__global__ void __launch_bounds__(WVG_BLOCK)
k_arg(const uint4 *__restrict__ data, const typename rw<W>::M *__restrict__ mask,
      uint32_t n, unsigned long long idx0, wresult *partials,
      uint32_t *ticket, wresult *res, int first)
{
  typedef typename rw<W>::K K;
  typedef typename rw<W>::M M;
  const int R = rw<W>::ROWS;
  K bk = worst<W, MAX>();
  uint32_t bi = 0xffffffffu, cnt = 0;
  const uint32_t nvec = n / R;
  const uint32_t stride = gridDim.x * WVG_BLOCK;
  uint32_t i = blockIdx.x * WVG_BLOCK + threadIdx.x;
  const M one = rw<W>::ones();
  for (; i + 3 * stride < nvec; i += 4 * stride) {
    uint4 v0 = data[i], v1 = data[i + stride];
    uint4 v2 = data[i + 2 * stride], v3 = data[i + 3 * stride];
    M m0 = one, m1 = one, m2 = one, m3 = one;
    if (MASK) {
      m0 = mask[i];
      m1 = mask[i + stride];
      m2 = mask[i + 2 * stride];
      m3 = mask[i + 3 * stride];
    }
    arg_vec<W, KEY, MAX, MASK>(bk, bi, cnt, v0, m0, i * R);
    arg_vec<W, KEY, MAX, MASK>(bk, bi, cnt, v1, m1, (i + stride) * R);
    arg_vec<W, KEY, MAX, MASK>(bk, bi, cnt, v2, m2, (i + 2 * stride) * R);
    arg_vec<W, KEY, MAX, MASK>(bk, bi, cnt, v3, m3, (i + 3 * stride) * R);
  }
  for (; i < nvec; i += stride)
    arg_vec<W, KEY, MAX, MASK>(bk, bi, cnt, data[i], MASK ? mask[i] : one,
                               i * R);
  /* The last n % R rows: by block 0, after its vectors (index order within
   * a thread is kept: thread t's vectors all come before row nvec * R). */
  if (blockIdx.x == 0 && threadIdx.x < n % R) {
    uint32_t row = nvec * R + threadIdx.x;
    const K *dk = (const K *)data;
    const uint32_t *m32 = (const uint32_t *)mask;
    arg_row<W, KEY, MAX, MASK>(bk, bi, cnt, dk[row], MASK ? m32[row] : 1u,
                               row);
  }
  unsigned long long k = bk, gi = bi == 0xffffffffu ? WVG_NOIDX : idx0 + bi;
  arg_finish<MAX>(k, gi, cnt, worst<W, MAX>(), partials, ticket, res, first);
}

/* ---- host side ---------------------------------------------------------- */

typedef void (*w64_kernel)(const uint4 *, const uint2 *, uint64_t, wresult *,
                           uint32_t *, wresult *, int);

template <int OP, int KEY> static w64_kernel pick64(bool mask)
{
  return mask ? k_w64<OP, KEY, true> : k_w64<OP, KEY, false>;
}

template <int OP> static w64_kernel pick64_key(int key, bool mask)
{
  return key == KEY_F64 ? pick64<OP, KEY_F64>(mask)
       : key == KEY_S64 ? pick64<OP, KEY_S64>(mask)
                        : pick64<OP, KEY_RAW>(mask);
}

static w64_kernel gw_pick_w64(int kop, int key, bool mask)
{
  switch (kop) {
  case K_SUM: return pick64<K_SUM, KEY_RAW>(mask);
  case K_AND: return pick64<K_AND, KEY_RAW>(mask);
  case K_OR: return pick64<K_OR, KEY_RAW>(mask);
  case K_XOR: return pick64<K_XOR, KEY_RAW>(mask);
  case K_MIN: return pick64_key<K_MIN>(key, mask);
  case K_MAX: return pick64_key<K_MAX>(key, mask);
  case K_EXT: return pick64_key<K_EXT>(key, mask);
  }
  return NULL;
}

static unsigned grid_for(const wreducer *w, uint64_t nvec)
{
  uint64_t want = (nvec + WVG_BLOCK - 1) / WVG_BLOCK;
  return want < 1 ? 1 : want > w->blocks ? w->blocks : (unsigned)want;
}

cudaError_t launch_w64(wreducer *w, int kop, int key, const void *d_rows,
                       const uint32_t *d_mask, uint64_t n, int first,
                       cudaStream_t st)
{
  w64_kernel k = gw_pick_w64(kop, key, d_mask != NULL);
  k<<<grid_for(w, n >> 1), WVG_BLOCK, 0, st>>>(
      (const uint4 *)d_rows, (const uint2 *)d_mask, n, w->partials, w->ticket,
      w->res, first);
  return cudaGetLastError();
}

template <int W, int KEY, bool MAX>
static cudaError_t arg_go(wreducer *w, const void *d_rows,
                          const uint32_t *d_mask, uint32_t n, uint64_t idx0,
                          int first, cudaStream_t st)
{
  typedef typename rw<W>::M M;
  unsigned grid = grid_for(w, n / rw<W>::ROWS);
  if (d_mask != NULL)
    k_arg<W, KEY, MAX, true><<<grid, WVG_BLOCK, 0, st>>>(
        (const uint4 *)d_rows, (const M *)d_mask, n, idx0, w->partials,
        w->ticket, w->res, first);
  else
    k_arg<W, KEY, MAX, false><<<grid, WVG_BLOCK, 0, st>>>(
        (const uint4 *)d_rows, (const M *)d_mask, n, idx0, w->partials,
        w->ticket, w->res, first);
  return cudaGetLastError();
}

/* The k_arg of plan p's row width and key kind. */
template <bool MAX>
static cudaError_t arg_plan(wreducer *w, const wv_op_plan *p, const void *rows,
                            const uint32_t *mask, uint32_t n, uint64_t idx0,
                            int first, cudaStream_t st)
{
  if (p->row_bytes == 4)
    return p->key == WV_KEY_FLOAT
               ? arg_go<4, KEY_F32, MAX>(w, rows, mask, n, idx0, first, st)
           : p->key == WV_KEY_SIGNED
               ? arg_go<4, KEY_S32, MAX>(w, rows, mask, n, idx0, first, st)
               : arg_go<4, KEY_RAW, MAX>(w, rows, mask, n, idx0, first, st);
  return p->key == WV_KEY_FLOAT
             ? arg_go<8, KEY_F64, MAX>(w, rows, mask, n, idx0, first, st)
         : p->key == WV_KEY_SIGNED
             ? arg_go<8, KEY_S64, MAX>(w, rows, mask, n, idx0, first, st)
             : arg_go<8, KEY_RAW, MAX>(w, rows, mask, n, idx0, first, st);
}

/* Cut below 2^31 rows (32-bit local indices), at a multiple of 4 rows so
 * every launch's rows stay 16-byte aligned. */
cudaError_t launch_arg(wreducer *w, const wv_op_plan *p, const void *d_rows,
                       const uint32_t *d_mask, uint64_t n, uint64_t idx0,
                       int first, cudaStream_t st)
{
  const uint64_t cut = 1ull << 30;
  const size_t rsz = p->row_bytes;
  uint64_t r0 = 0;
  do {
    uint64_t m = n - r0 < cut ? n - r0 : cut;
    const void *rows = (const unsigned char *)d_rows + r0 * rsz;
    const uint32_t *mask = d_mask != NULL ? d_mask + r0 : NULL;
    cudaError_t e = p->halves == WV_HALF_HI
        ? arg_plan<true>(w, p, rows, mask, (uint32_t)m, idx0 + r0, first, st)
        : arg_plan<false>(w, p, rows, mask, (uint32_t)m, idx0 + r0, first, st);
    if (e != cudaSuccess)
      return e;
    first = 0;
    r0 += m;
  } while (r0 < n);
  return cudaSuccess;
}

cudaError_t wreducer_init(wreducer *w)
{
  memset(w, 0, sizeof *w);
  int dev = 0, sms = 0, per_sm = 0;
  WVG_TRY(cudaGetDevice(&dev));
  WVG_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  WVG_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &per_sm, k_arg<8, KEY_F64, true, true>, WVG_BLOCK, 0));
  if (per_sm < 1)
    per_sm = 1;
  w->blocks = (unsigned)(sms * per_sm);
  WVG_TRY(cudaMalloc((void **)&w->partials, w->blocks * sizeof(wresult)));
  WVG_TRY(cudaMalloc((void **)&w->ticket, sizeof(uint32_t)));
  WVG_TRY(cudaMalloc((void **)&w->res, sizeof(wresult)));
  WVG_TRY(cudaMemset(w->ticket, 0, sizeof(uint32_t)));
  WVG_TRY(cudaMemset(w->res, 0, sizeof(wresult)));
  return wreducer_reserve(w, 4096, 256, 256, 64);
}

void wreducer_fini(wreducer *w)
{
  (void)cudaFree(w->partials);
  (void)cudaFree(w->ticket);
  (void)cudaFree(w->res);
  tree_free(&w->tree);
  if (w->h_res != NULL)
    (void)cudaFreeHost(w->h_res);
  memset(w, 0, sizeof *w);
}

cudaError_t wreducer_reserve(wreducer *w, size_t tiles, size_t pieces,
                             size_t job_pieces, size_t chunks)
{
  return tree_reserve(&w->tree, tiles, pieces, job_pieces, chunks);
}

cudaError_t reduce_device_wide(wreducer *w, wave_dtype d, wave_op op,
                               const void *d_rows, const uint32_t *d_mask,
                               uint64_t n, cudaStream_t st)
{
  const wv_op_plan *p = wv_op_plan_of(d, op);
  int kop = kernel_op(p);
  if (kop == K_ARGMIN || kop == K_ARGMAX)
    return launch_arg(w, p, d_rows, d_mask, n, 0, 1, st);
  if (kop != K_FSUM)
    return launch_w64(w, kop, p->key, d_rows, d_mask, n, 1, st);
  return tree_device(&w->tree, w->res, (const double *)d_rows, d_mask, n,
                     st);
}

} /* namespace WVG_NS */
