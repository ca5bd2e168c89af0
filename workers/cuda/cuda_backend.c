/* cuda_backend.c - the CUDA backend's vtable.  The work is in the .cu files
 * of this folder (also compiled by hipcc for workers/hip): gpu_device.cu
 * (device, staging, reductions), gpu_pool.cu (the staging copy threads),
 * gpu_reduce.cu (reduction kernels), gpu_reducer.cu (their host side),
 * gpu_hash.cu (lottery hash), gpu_seg.cu (hash batches folded on the
 * device).  docs/backends.md describes what it does. */
#include "workers/worker.h"

#define WVG_C(name) wv_cuda_##name
#include "workers/cuda/gpu_api.h"

const wv_backend wv_cuda_backend = {
  .name = "cuda",
  .counts_visible_devices = 1,
  .open = wv_cuda_open,
  .close = wv_cuda_close,
  .caps = wv_cuda_caps,
  .reduce = wv_cuda_reduce,
  .hash_prepare = wv_cuda_hash_prepare,
  .hash = wv_cuda_hash,
  .host_register = wv_cuda_host_register,
  .host_unregister = wv_cuda_host_unregister,
  .hash_batch = wv_cuda_hash_batch,
  .list_uuids = wv_cuda_list_uuids,
};
