/* hip_vendor.h - the CUDA names the shared kernel sources use, mapped onto
 * HIP, so that the .cu files of workers/cuda compile unchanged with hipcc (the way ggml
 * builds ggml-hip from ggml-cuda's sources).
 *
 * Only what workers/cuda uses is mapped; a new CUDA call in those sources
 * fails the HIP build until it is added here, which is the point: every
 * mapping is a decision.  Warp-level differences are not hidden here but in
 * workers/cuda/gpu.h (no redux.sync, no lane masks, 64-lane waves).
 */
#ifndef WV_HIP_VENDOR_H
#define WV_HIP_VENDOR_H

#include <hip/hip_runtime.h>

/* Types and constants. */
#define cudaError_t hipError_t
#define cudaSuccess hipSuccess
#define cudaErrorNotReady hipErrorNotReady
#define cudaErrorNotSupported hipErrorNotSupported
#define cudaStream_t hipStream_t
#define cudaEvent_t hipEvent_t
#define cudaDeviceProp hipDeviceProp_t
#define cudaMemcpyHostToDevice hipMemcpyHostToDevice
#define cudaMemcpyDeviceToHost hipMemcpyDeviceToHost
#define cudaMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define cudaStreamNonBlocking hipStreamNonBlocking
#define cudaEventDisableTiming hipEventDisableTiming
#define cudaEventDefault hipEventDefault
#define cudaHostAllocDefault hipHostMallocDefault
#define cudaDevAttrMultiProcessorCount hipDeviceAttributeMultiprocessorCount
#define cudaDevAttrWarpSize hipDeviceAttributeWarpSize

/* Runtime calls. */
#define cudaGetErrorString hipGetErrorString
#define cudaGetLastError hipGetLastError
#define cudaGetDeviceCount hipGetDeviceCount
#define cudaGetDevice hipGetDevice
#define cudaMemset hipMemset
#define cudaEventElapsedTime hipEventElapsedTime
#define cudaPointerAttributes hipPointerAttribute_t
#define cudaPointerGetAttributes hipPointerGetAttributes
#define cudaSetDevice hipSetDevice
#define cudaGetDeviceProperties hipGetDeviceProperties
#define cudaDeviceGetAttribute hipDeviceGetAttribute
#define cudaDeviceSynchronize hipDeviceSynchronize
#define cudaMalloc hipMalloc
#define cudaFree hipFree
#define cudaHostAlloc hipHostMalloc
#define cudaFreeHost hipHostFree
#define cudaHostRegister hipHostRegister
#define cudaHostUnregister hipHostUnregister
#define cudaHostRegisterPortable hipHostRegisterPortable
/* Debian 12's HIP (ROCm 5.2) has no read-only registration flag; newer
 * ROCm defines hipHostRegisterReadOnly.  Without it a read-only region may
 * be refused, and a refused region is staged like any host memory. */
#ifdef hipHostRegisterReadOnly
#define cudaHostRegisterReadOnly hipHostRegisterReadOnly
#else
#define cudaHostRegisterReadOnly hipHostRegisterDefault
#endif
#define cudaMemcpy hipMemcpy
#define cudaMemcpyAsync hipMemcpyAsync
#define cudaMemsetAsync hipMemsetAsync
#define cudaStreamCreateWithFlags hipStreamCreateWithFlags
#define cudaStreamCreateWithPriority hipStreamCreateWithPriority
#define cudaDeviceGetStreamPriorityRange hipDeviceGetStreamPriorityRange
#define cudaStreamDestroy hipStreamDestroy
#define cudaStreamSynchronize hipStreamSynchronize
#define cudaStreamWaitEvent hipStreamWaitEvent
#define cudaEventCreateWithFlags hipEventCreateWithFlags
#define cudaEventRecord hipEventRecord
#define cudaEventSynchronize hipEventSynchronize
#define cudaEventQuery hipEventQuery
#define cudaEventDestroy hipEventDestroy
#define cudaOccupancyMaxActiveBlocksPerMultiprocessor \
  hipOccupancyMaxActiveBlocksPerMultiprocessor
/* Constant memory is addressed through HIP_SYMBOL on AMD. */
#define cudaMemcpyToSymbolAsync(sym, src, n, off, kind, st) \
  hipMemcpyToSymbolAsync(HIP_SYMBOL(sym), src, n, off, kind, st)

/* Device side.  AMD waves execute in lock step and HIP's cross-lane calls
 * take no lane mask: the mask argument is dropped. */
#define __shfl_xor_sync(mask, v, m, w) __shfl_xor((v), (m), (w))
#define __shfl_sync(mask, v, l, w) __shfl((v), (l), (w))
/* A wave is one instruction stream; what __syncwarp adds on CUDA is the
 * memory ordering among its lanes, here a wavefront-scope fence. */
#define __syncwarp()                                                           \
  do {                                                                         \
    __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "wavefront");                     \
    __builtin_amdgcn_wave_barrier();                                           \
    __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "wavefront");                     \
  } while (0)

#endif
