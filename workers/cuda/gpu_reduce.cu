/* gpu_reduce.cu - the reduction kernels of the CUDA and HIP backends, on
 * rows already in device memory (docs/reduction.md is the contract).
 *
 * k_int does every order-free op (integer sum/min/max/and/or/xor, and
 * float min/max/extent through order-preserving integer keys).  A
 * persistent grid streams 16-byte vectors, four in flight per thread,
 * folds them per thread, then per 32-lane unit (redux.sync on sm_80+, a
 * shuffle tree elsewhere), then per block; the last block to finish
 * (ticket counter) folds the block partials and the job's running result.
 * One launch per slice, nothing to initialise, nothing read back until the
 * job ends.  The float sum's tree is gpu_tree.cu's.
 *
 * Float keys: bits b with the sign set map to ~b, others to b | 2^31, so
 * unsigned order is numeric order with -0.0 < +0.0; NaN and inf are left
 * out (identity), and a min key of 0xffffffff (a NaN pattern, never made by
 * a finite value) means "no finite row".
 *
 * The reducer's host side that needs no kernel (kernel_op on the op
 * table, the buffers, the decoders) is in gpu_reducer.cu.
 */
#include "workers/cuda/gpu_internal.h"

namespace WVG_NS {

/* ---- integer / key reductions ------------------------------------------ */

/* One row: fold its key unless masked out or not finite; count it when
 * selected. */
template <int OP, int KEY, bool MASK>
__device__ __forceinline__ void fold_row(uint32_t &a, uint32_t &b,
                                         uint32_t &cnt, uint32_t x,
                                         uint32_t m)
{
  bool valid;
  uint32_t k = row_key<KEY>(x, &valid);
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
  uint32_t a = ident<OP, uint32_t>(), b = 0, cnt = 0;
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
  a = ident<OP, uint32_t>();
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

cudaError_t reduce_device(reducer *r, wave_dtype d, wave_op op,
                          const void *d_rows, const uint32_t *d_mask,
                          uint64_t n, cudaStream_t st)
{
  const wv_op_plan *p = wv_op_plan_of(d, op);
  int kop = kernel_op(p);
  if (kop != K_FSUM)
    return launch_int(r, kop, p->key, d_rows, d_mask, n, 1, st);
  return tree_device(&r->tree, r->res, (const float *)d_rows, d_mask, n, st);
}

} /* namespace WVG_NS */
