/* worker.h - the backend interface: the only definition of what a device
 * backend is.
 *
 * A backend (cpu, cuda, hip, vulkan, ...) is one folder under workers/ that
 * fills one wv_backend with designated initializers, plus one line in
 * workers/registry.c.  The daemon gives every configured device its own
 * thread; that thread calls open(), then the job slots, then close(), and no
 * other thread ever touches the device's context, queues or buffers.
 *
 * Contract for every slot:
 *  - return 0 (WAVE_EOK) or a WAVE_E* code, with err filled by wv_seterr();
 *  - bad job input is rejected by the caller (wv_reduce_validate) before a
 *    backend sees it, so backends may assume a valid job;
 *  - WAVE_EDEVICE means the device itself failed (a driver call failed): the
 *    daemon marks the device faulted and fails its later jobs; any other
 *    code fails only the job at hand;
 *  - never abort() or exit(): one bad device must not take the daemon down.
 * Optional slots may be NULL: hash_prepare/hash NULL = no hash jobs.
 *
 * Callers outside workers/ never call these slots directly: workers/wvdev.h
 * wraps each one (with the default for a NULL slot), as ggml-backend.c
 * wraps its interface.
 */
#ifndef WV_WORKER_H
#define WV_WORKER_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "wave/error.h"
#include "wave/types.h"
#include "core/job.h"

/* The hash's register exchange path (docs/hash.md, docs/backends.md): what
 * a config asks for (AUTO, SHUFFLE, LOCAL) and what caps() reports (NONE,
 * LANES, SHUFFLE, LOCAL).  The config's words are daemon/config.c's
 * choices, in this order. */
typedef enum wv_exchange {
  WV_EXCHANGE_AUTO = 0,   /* config: the backend chooses */
  WV_EXCHANGE_NONE = 0,   /* caps: no hash jobs, or not reported */
  WV_EXCHANGE_SHUFFLE = 1, /* sub-group shuffles */
  WV_EXCHANGE_LOCAL = 2,  /* work-group local memory and barriers */
  WV_EXCHANGE_LANES = 3,  /* caps, cpu: a unit's lanes are arrays */
} wv_exchange;

/* caps' names, where they are printed or sent: "lanes", "shuffle",
 * "local", or "none". */
static inline const char *wv_exchange_name(wv_exchange x)
{
  switch (x) {
  case WV_EXCHANGE_LANES: return "lanes";
  case WV_EXCHANGE_SHUFFLE: return "shuffle";
  case WV_EXCHANGE_LOCAL: return "local";
  default: return "none";
  }
}

/* A config's word ("auto", "shuffle", "local") into *out; -1 for any other
 * (tools that take it on their command line). */
static inline int wv_exchange_parse(const char *s, wv_exchange *out)
{
  if (s == NULL || strcmp(s, "auto") == 0)
    *out = WV_EXCHANGE_AUTO;
  else if (strcmp(s, "shuffle") == 0)
    *out = WV_EXCHANGE_SHUFFLE;
  else if (strcmp(s, "local") == 0)
    *out = WV_EXCHANGE_LOCAL;
  else
    return -1;
  return 0;
}

/* One device entry of devices.yaml, as the backend sees it. */
typedef struct wv_device_config {
  const char *name;       /* unique device name, e.g. "cpu0" */
  const char *backend;    /* "cpu", "cuda", ... */
  int index;              /* ordinal among the backend's devices (GPUs) */
  int platform;           /* opencl: platform ordinal (without device_match) */
  const char *device_match; /* opencl: device or platform name contains this
                               (case-insensitive), over all platforms; NULL
                               or "" = by platform and index */
  unsigned threads;       /* CPU threads (cpu backend; 0 = all cores) */
  unsigned queue_depth;   /* jobs the daemon queues for the device */
  wv_exchange exchange;   /* hash exchange asked for: AUTO, SHUFFLE, LOCAL */
  unsigned group_units;   /* hash units (32 lanes) per work-group, 0 = auto */
} wv_device_config;

/* What a device is and how it runs; filled by caps(). */
typedef struct wv_caps {
  char description[160];  /* "NVIDIA H200 sm_90, 132 SMs", "8 threads" */
  unsigned wave_width;    /* hardware sub-group size used (1 for scalar) */
  int native_wave_reduce; /* integer wave step is one instruction */
  wv_exchange exchange_mode; /* the path (wv_exchange_name: its name) */
  char exchange_reason[200];
  uint64_t hash_batch;    /* nonces per batch this backend suggests; may
                             change once a pack is prepared (measured).
                             The device's configured batch overrides it in
                             the daemon (jobs/packstate.c), not here */
  int reverify;           /* winners and best are re-verified on the CPU
                             (every backend but the CPU reference itself) */
  int reads_host_memory;  /* the device reads host memory where it lies
                             (the CPU): no transfer, so a reduction over a
                             file region reads it in small pieces */
  int stages_masks;       /* a masked reduction is copied through host
                             staging with the mask applied (wv_mask_fill),
                             never read in place: the daemon's file
                             readers apply it for the device instead */
  int has_uuid;           /* uuid names the physical device: two devices of
                             one GPU (cuda0 and vk0 on one card) share it */
  unsigned char uuid[16];
  /* Reductions beyond the 32-bit dtypes and the seven first ops (issue 23):
   * wv_dev_reduce refuses a job needing one the backend does not set. */
  int dtypes64;           /* uint64, sint64, float64 */
  int argminmax;          /* argmin, argmax */
  char wide_why[160];     /* where one of the two is 0 on a backend that
                             has them: what this device lacks ("" when not
                             said), for the refusal's message */
  /* The exact float sum (issue 39, op fsum; float64 also needs dtypes64):
   * wv_dev_reduce refuses it where this is 0, with fsum_why where the
   * backend says what the device lacks ("" when not said). */
  int fsum;
  char fsum_why[160];
} wv_caps;

typedef struct wv_device wv_device;  /* backend-private device context */
struct wv_pack;                      /* workers/hash/pack.h */
struct wv_health;                    /* workers/health.h */
struct wv_hash_batch;                /* core/segments.h */

typedef struct wv_backend {
  const char *name;
  /* Its device ordinals are the entries of the visible-devices list a job
   * is granted (CUDA_VISIBLE_DEVICES renumbers CUDA's devices from 0), so
   * list_uuids()[i] is entry i's UUID: `devices: auto` matches Vulkan
   * devices to the grant by it (daemon/autodev.c).  0: entries are matched
   * by the UUIDs they spell out, if any. */
  int counts_visible_devices;
  /* Open the device described by cfg, on the calling (device) thread.  A
   * machine without the driver or device must give an error, not crash. */
  int (*open)(const wv_device_config *cfg, wv_device **out, wave_error *err);
  void (*close)(wv_device *dev);
  void (*caps)(wv_device *dev, wv_caps *caps);
  /* Reduce a validated job; bit-exact with wv_reduce_reference(). */
  int (*reduce)(wv_device *dev, const wv_reduce_job *job, wv_reduce_out *out,
                wave_error *err);
  /* Optional.  Make pack ready on the device (dataset generation); called
   * once per pack before the first hash() with it. */
  int (*hash_prepare)(wv_device *dev, const struct wv_pack *pack,
                      wave_error *err);
  /* Optional.  hash_prepare in bounded steps (each about 0.1 s of work),
   * so the daemon can serve reductions between them: *done is set once the
   * pack is ready.  NULL = hash_prepare in one call. */
  int (*hash_prepare_step)(wv_device *dev, const struct wv_pack *pack,
                           int *done, wave_error *err);
  /* Optional.  How many hash_prepare_step calls preparing pack takes in
   * all, for progress reports ("22 of 64 steps"); NULL or 0 = unknown. */
  unsigned (*hash_prepare_steps)(wv_device *dev, const struct wv_pack *pack);
  /* Optional.  Outputs of nonces [nonce, nonce + count) into out[count]. */
  int (*hash)(wv_device *dev, const struct wv_pack *pack, uint64_t nonce,
              uint64_t count, uint64_t *out, wave_error *err);
  /* Optional (needs hash).  One batch folded on the device into segment
   * fingerprints, winners and best (struct wv_hash_batch, workers/hash/
   * hash.h); NULL = the host folds hash()'s outputs (wv_hash_run_batch). */
  int (*hash_batch)(wv_device *dev, const struct wv_pack *pack,
                    struct wv_hash_batch *batch, wave_error *err);
  /* Optional.  Pin [ptr, ptr + bytes) of host memory (a shared-memory
   * region, mapped read-only) for DMA, so that reductions whose spans lie
   * in it are sent without a staging copy; NULL = the device reads host
   * memory as it is (CPU) or stages it.  The daemon pins a region in
   * adjacent pieces, one call each, while the device is idle, so a span
   * may lie across several pieces, or partly in none: the backend sends
   * what is pinned directly and stages the rest.  A refusal is not a
   * device fault: the rest of the region is then used unpinned.
   * host_unregister undoes every piece inside [ptr, ptr + bytes) before
   * the memory is unmapped.  Device thread only. */
  int (*host_register)(wv_device *dev, const void *ptr, size_t bytes,
                       wave_error *err);
  void (*host_unregister)(wv_device *dev, const void *ptr, size_t bytes);
  /* Optional.  bytes of host memory, writable by any thread, that the
   * device reads where it lies (as if pinned by host_register), into *out:
   * the daemon's staging rings (daemon/bulk/readers.h), which the reader
   * pool fills while the device reduces the slots already full.  For a
   * driver that allocates such memory itself but refuses to pin memory it
   * did not allocate (NVIDIA's Vulkan: every VK_EXT_external_memory_host
   * import).  NULL, or a refusal: the rings are the daemon's own pages,
   * pinned with host_register where it works.  host_free gives it back;
   * close() frees whatever is left.  Device thread only. */
  int (*host_alloc)(wv_device *dev, size_t bytes, void **out,
                    wave_error *err);
  void (*host_free)(wv_device *dev, void *p, size_t bytes);
  /* Optional.  The UUIDs of this backend's devices (those its open() can
   * reach, by index: entry i is cfg->index i), the same 16 bytes caps()
   * reports as uuid, into out[0 .. max-1]; returns how many devices there
   * are (0 when none, or no driver), or -1 with err filled.  Opens no
   * device.  Called by `devices: auto` (daemon/autodev.c) in a short-lived
   * child process, so the daemon itself never starts a GPU runtime before
   * it detaches; NULL = the backend cannot say. */
  int (*list_uuids)(unsigned char (*out)[16], size_t max, wave_error *err);
  /* Optional.  The device's health now (workers/health.h), read on the
   * daemon's health thread, never the device's: so no device context
   * (the device thread may be inside a job), only the device's config and
   * caps.  May block.  NULL = wv_health_gpu: the GPU the caps' UUID names,
   * through NVML or amdgpu. */
  void (*health)(const wv_device_config *cfg, const wv_caps *caps,
                 struct wv_health *out);
} wv_backend;

/* The registry (workers/registry.c): the backends built into this binary,
 * NULL-terminated, and lookup by name. */
extern const wv_backend *const wv_backends[];
const wv_backend *wv_backend_find(const char *name);
/* One more backend, found by name from now on: test programs only (the
 * fake backend of wavedd-test), called in main before any thread starts.
 * -1 when one was already added or the name is taken. */
int wv_backend_add(const wv_backend *b);

/* Backends compiled in but not here would be listed by name only, so that
 * a config naming one says "built without vulkan" rather than "unknown". */
int wv_backend_known(const char *name);

#endif
