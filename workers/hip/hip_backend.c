/* hip_backend.c - the HIP backend's vtable.  Its code is workers/cuda's .cu
 * files compiled by hipcc with WV_GPU_HIP defined (hip_vendor.h maps the
 * CUDA names); docs/backends.md says what was built and what was run. */
#include "workers/worker.h"

#define WVG_C(name) wv_hip_##name
#include "workers/cuda/gpu_api.h"

const wv_backend wv_hip_backend = {
  .name = "hip",
  .open = wv_hip_open,
  .close = wv_hip_close,
  .caps = wv_hip_caps,
  .reduce = wv_hip_reduce,
  .hash_prepare = wv_hip_hash_prepare,
  .hash = wv_hip_hash,
  .host_register = wv_hip_host_register,
  .host_unregister = wv_hip_host_unregister,
  .hash_batch = wv_hip_hash_batch,
};
