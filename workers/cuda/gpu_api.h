/* gpu_api.h - the backend entry points that the workers/cuda .cu files export to the
 * C vtables (cuda_backend.c, workers/hip/hip_backend.c).  WVG_C(name) must be
 * defined by the includer: wv_cuda_##name or wv_hip_##name. */
#ifndef WV_GPU_API_H
#define WV_GPU_API_H

#include "workers/worker.h"

#ifdef __cplusplus
extern "C" {
#endif

int WVG_C(open)(const wv_device_config *cfg, wv_device **out, wave_error *err);
void WVG_C(close)(wv_device *dev);
void WVG_C(caps)(wv_device *dev, wv_caps *caps);
int WVG_C(reduce)(wv_device *dev, const wv_reduce_job *job,
                  wv_reduce_out *out, wave_error *err);
int WVG_C(hash_prepare)(wv_device *dev, const struct wv_pack *pack,
                        wave_error *err);
int WVG_C(hash)(wv_device *dev, const struct wv_pack *pack, uint64_t nonce,
                uint64_t count, uint64_t *out, wave_error *err);
int WVG_C(host_register)(wv_device *dev, const void *ptr, size_t bytes,
                         wave_error *err);
void WVG_C(host_unregister)(wv_device *dev, const void *ptr, size_t bytes);
int WVG_C(hash_batch)(wv_device *dev, const struct wv_pack *pack,
                      struct wv_hash_batch *batch, wave_error *err);
int WVG_C(list_uuids)(unsigned char (*out)[16], size_t max, wave_error *err);

#ifdef __cplusplus
}
#endif
#endif
