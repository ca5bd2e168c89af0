/* gpu.h - what the shared CUDA/HIP sources of workers/cuda need from their
 * vendor, and the 32-lane building blocks every kernel uses.
 *
 * The same .cu files are compiled twice: by nvcc into libwvcuda and by hipcc
 * (with WV_GPU_HIP defined) into libwvhip.  Both libraries can be linked into
 * one program, so every name with linkage lives in a vendor namespace
 * (WVG_NS: wv_cuda / wv_hip) or carries a vendor prefix (WVG_C(open) ->
 * wv_cuda_open / wv_hip_open); otherwise the linker would silently merge the
 * CUDA and HIP instantiations of the same template.
 *
 * The unit of work is a 32-lane "unit": a CUDA warp, half of a 64-lane AMD
 * wave (wave64: gfx9), or a whole 32-lane wave (gfx10+).  32-lane cross-lane
 * operations use explicit width 32, which is exact in all three cases.
 */
#ifndef WV_GPU_H
#define WV_GPU_H

#include <stdint.h>

#if defined(WV_GPU_HIP)
#include "workers/hip/hip_vendor.h"
#define WVG_NS wv_hip
#define WVG_C(name) wv_hip_##name
#define WVG_VENDOR "hip"
#else
#include <cuda_runtime.h>
#define WVG_NS wv_cuda
#define WVG_C(name) wv_cuda_##name
#define WVG_VENDOR "cuda"
#endif

/* redux.sync: one instruction for a 32-lane integer reduction, sm_80+. */
#if !defined(WV_GPU_HIP) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define WVG_REDUX 1
#else
#define WVG_REDUX 0
#endif

#define WVG_UNIT 32u         /* lanes per unit */
#define WVG_FULL 0xffffffffu /* all 32 lanes */

namespace WVG_NS {

#if defined(__CUDACC__) || defined(__HIPCC__)

__device__ __forceinline__ uint32_t lane_id() { return threadIdx.x & 31u; }
__device__ __forceinline__ uint32_t unit_id() { return threadIdx.x >> 5; }

/* A load that sees other blocks' writes made before their __threadfence():
 * it must not hit a stale L1 line (CUDA: ld.global.cg; HIP: volatile word
 * loads, which the AMD backend issues with glc, bypassing the L1). */
template <typename T> __device__ __forceinline__ T ld_cg(const T *p)
{
#if defined(WV_GPU_HIP)
  T v;
  const volatile uint32_t *q = (const volatile uint32_t *)p;
  uint32_t *o = (uint32_t *)&v;
  for (unsigned i = 0; i < sizeof(T) / 4; i++)
    o[i] = q[i];
  return v;
#else
  return __ldcg(p);
#endif
}

__device__ __forceinline__ uint32_t shfl_xor(uint32_t v, int m)
{
  return __shfl_xor_sync(WVG_FULL, v, m, 32);
}
__device__ __forceinline__ uint32_t shfl(uint32_t v, int lane)
{
  return __shfl_sync(WVG_FULL, v, lane, 32);
}
__device__ __forceinline__ float shfl_xor(float v, int m)
{
  return __shfl_xor_sync(WVG_FULL, v, m, 32);
}
/* A double crosses lanes as two 32-bit halves. */
__device__ __forceinline__ double shfl_xor(double v, int m)
{
  unsigned long long b = (unsigned long long)__double_as_longlong(v);
  uint32_t lo = shfl_xor((uint32_t)b, m), hi = shfl_xor((uint32_t)(b >> 32), m);
  return __longlong_as_double((long long)(((unsigned long long)hi << 32) | lo));
}

/* Whether p holds in every active lane of the unit (HIP: of the wave,
 * which is as good for a branch that only has to be uniform).  Active
 * lanes, not all 32: a grid-stride loop's last turn may hold only some. */
__device__ __forceinline__ bool unit_all(bool p)
{
#if defined(WV_GPU_HIP)
  return __all(p);
#else
  return __all_sync(__activemask(), p);
#endif
}

/* 32-lane integer reductions; every lane gets the result. */
__device__ __forceinline__ uint32_t unit_add(uint32_t v)
{
#if WVG_REDUX
  return __reduce_add_sync(WVG_FULL, v);
#else
  for (int m = 16; m > 0; m >>= 1)
    v += shfl_xor(v, m);
  return v;
#endif
}
__device__ __forceinline__ uint32_t unit_min(uint32_t v)
{
#if WVG_REDUX
  return __reduce_min_sync(WVG_FULL, v);
#else
  for (int m = 16; m > 0; m >>= 1)
    v = min(v, shfl_xor(v, m));
  return v;
#endif
}
__device__ __forceinline__ uint32_t unit_max(uint32_t v)
{
#if WVG_REDUX
  return __reduce_max_sync(WVG_FULL, v);
#else
  for (int m = 16; m > 0; m >>= 1)
    v = max(v, shfl_xor(v, m));
  return v;
#endif
}
__device__ __forceinline__ uint32_t unit_and(uint32_t v)
{
#if WVG_REDUX
  return __reduce_and_sync(WVG_FULL, v);
#else
  for (int m = 16; m > 0; m >>= 1)
    v &= shfl_xor(v, m);
  return v;
#endif
}
__device__ __forceinline__ uint32_t unit_or(uint32_t v)
{
#if WVG_REDUX
  return __reduce_or_sync(WVG_FULL, v);
#else
  for (int m = 16; m > 0; m >>= 1)
    v |= shfl_xor(v, m);
  return v;
#endif
}
__device__ __forceinline__ uint32_t unit_xor(uint32_t v)
{
#if WVG_REDUX
  return __reduce_xor_sync(WVG_FULL, v);
#else
  for (int m = 16; m > 0; m >>= 1)
    v ^= shfl_xor(v, m);
  return v;
#endif
}

#endif /* device compiler */

} /* namespace WVG_NS */

#endif
