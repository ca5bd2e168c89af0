/* wvdev.h - the one door to a backend's slots for code outside workers/.
 *
 * One function per slot of wv_backend (workers/worker.h), each supplying
 * the default where a backend leaves an optional slot NULL, in the manner
 * of ggml-backend.c's wrappers: the daemon never reads the vtable itself.
 * Every call runs on the device's own thread (worker.h's contract).
 */
#ifndef WV_WVDEV_H
#define WV_WVDEV_H

#include <stddef.h>
#include <stdint.h>

#include "workers/hash/hash.h"
#include "workers/worker.h"

/* One device as the code outside workers/ holds it: the backend and its
 * private context, always together.  be is set before the device opens
 * (the backend-wide queries need only it); impl by wv_dev_open. */
typedef struct wv_dev {
  const wv_backend *be;
  wv_device *impl;
} wv_dev;

/* Open cfg's device with backend d->be (set by the caller) into d->impl
 * (NULL on failure).  Writes only d->impl: other threads may read d->be. */
int wv_dev_open(wv_dev *d, const wv_device_config *cfg, wave_error *err);
void wv_dev_close(wv_dev *d);  /* a device that did not open: no-op */
/* caps() into *caps (zeroed first). */
void wv_dev_caps(const wv_dev *d, wv_caps *caps);
/* The backend runs hash jobs (has a hash slot). */
int wv_dev_has_hash(const wv_dev *d);
/* The UUIDs of the backend's devices by index (worker.h's list_uuids):
 * the device count, or -1 with err filled (WAVE_EUNSUPPORTED when the
 * backend cannot say).  Unlike the other wrappers, no device thread: any
 * thread of a process that may start the backend's runtime. */
int wv_dev_list_uuids(const wv_backend *be, unsigned char (*out)[16],
                      size_t max, wave_error *err);
/* The device's health (health.h) through the backend's health slot, or
 * wv_health_gpu without one.  Unlike the slots above, no device thread:
 * the daemon's health thread, with the device's config and a copy of its
 * caps. */
struct wv_health;
void wv_dev_health(const wv_backend *be, const wv_device_config *cfg,
                   const wv_caps *caps, struct wv_health *out);
/* wv_hash_run_batch needs a scratch buffer of batch->count outputs (the
 * host fold) when the backend has no hash_batch slot. */
int wv_dev_batch_needs_scratch(const wv_dev *d);
/* A 64-bit dtype or argmin/argmax on a backend whose caps lack
 * dtypes64/argminmax: WAVE_EUNSUPPORTED naming the backend and the dtype/op. */
int wv_dev_reduce(const wv_dev *d, const wv_reduce_job *job,
                  wv_reduce_out *out, wave_error *err);
/* One step of preparing pack p; *done once it is ready.  Without a
 * hash_prepare_step slot, the whole hash_prepare (or nothing) in one step. */
int wv_dev_prepare_step(const wv_dev *d, const wv_pack *p, int *done,
                        wave_error *err);
/* How many steps preparing p takes (0: the backend does not say). */
unsigned wv_dev_prepare_steps(const wv_dev *d, const wv_pack *p);
/* The pack's known answers (wv_pack_selfcheck) once it is prepared. */
int wv_dev_selfcheck(const wv_dev *d, const wv_pack *p, char *detail,
                     size_t detail_len, wave_error *err);
/* One folded hash batch (wv_hash_run_batch). */
int wv_dev_hash_batch(const wv_dev *d, const wv_pack *p, wv_hash_batch *b,
                      uint64_t *scratch, wave_error *err);

/* Shared-memory regions (host_register): the backend pins host memory;
 * without the slot, WAVE_EUNSUPPORTED (the region is used unpinned).
 * Unregister is a no-op without the slot, the backend or the device. */
int wv_dev_can_pin(const wv_dev *d);
int wv_dev_host_register(const wv_dev *d, const void *ptr, size_t bytes,
                         wave_error *err);
void wv_dev_host_unregister(const wv_dev *d, const void *ptr, size_t bytes);
/* Host memory the device reads in place (host_alloc): WAVE_EUNSUPPORTED
 * without the slot; free is a no-op without it. */
int wv_dev_host_alloc(const wv_dev *d, size_t bytes, void **out,
                      wave_error *err);
void wv_dev_host_free(const wv_dev *d, void *p, size_t bytes);

#endif
