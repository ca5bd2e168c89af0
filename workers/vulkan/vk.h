/* vk.h - the Vulkan backend's device context, shared by the files of
 * workers/vulkan/ (vk_open.c: instance, device choice, paths, the vtable;
 * vk_device.c: memory, pipelines, submission; vk_reduce.c and vk_rec.c:
 * reductions, the 64-bit dtypes and argmin/argmax among them;
 * vk_xsum.c: the exact sum fsum;
 * vk_hash.c: hash jobs; vk_seg.c: hash batches folded on the device;
 * vk_pin.c: host memory imported for the device, the host_register slot).
 *
 * The process shares one VkInstance (vk_open.c says why); everything else
 * belongs to one device.
 *
 * A device is one VkDevice with one compute queue, used by one device thread
 * only (workers/worker.h), so nothing here is locked.  Work is recorded into
 * one of two "slots" (command buffer + fence + descriptor pool + host-visible
 * staging buffer): while the device runs one slot the host fills the other.
 * Buffers are created once and grown on demand, never per job.
 *
 * Shared-memory regions (worker.h host_register) are imported in place
 * with VK_EXT_external_memory_host, one VkBuffer per registered piece
 * (vk_pin.c); a reduction binds windows of such a buffer directly where a
 * span lies in one and the binding rules allow, and stages the rest
 * through the windows as above (vk_reduce.c says which rules).
 *
 * Errors: every VkResult other than VK_SUCCESS met while running a job is
 * WAVE_EDEVICE with the result's name (vk_device.c: wv_vk_fail), which makes
 * the daemon mark the device faulted.
 */
#ifndef WV_VK_H
#define WV_VK_H

#include <stdint.h>
#include <vulkan/vulkan.h>

#include "workers/worker.h"

/* VK_KHR_shader_maximal_reconvergence postdates the Vulkan headers of
 * Debian 12 (1.3.239); its feature struct is small enough to state here. */
#ifndef VK_KHR_shader_maximal_reconvergence
#define WV_VK_MAXRECONV_EXT "VK_KHR_shader_maximal_reconvergence"
#define WV_VK_STYPE_MAXRECONV ((VkStructureType)1000434000)
typedef struct wv_vk_maxreconv_features {
  VkStructureType sType;
  void *pNext;
  VkBool32 shaderMaximalReconvergence;
} wv_vk_maxreconv_features;
#else
#define WV_VK_MAXRECONV_EXT VK_KHR_SHADER_MAXIMAL_RECONVERGENCE_EXTENSION_NAME
#define WV_VK_STYPE_MAXRECONV \
  VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_MAXIMAL_RECONVERGENCE_FEATURES_KHR
typedef VkPhysicalDeviceShaderMaximalReconvergenceFeaturesKHR
    wv_vk_maxreconv_features;
#endif

/* One buffer with its own memory; map is set for host-visible ones. */
typedef struct wv_vk_buf {
  VkBuffer buf;
  VkDeviceMemory mem;
  VkDeviceSize size;
  void *map;
} wv_vk_buf;

/* The compute programs, one per embedded SPIR-V module (vk_device.c). */
enum wv_vk_prog {
  WV_VK_REDUCE_INT_SG,   /* integer level, sub-group arithmetic */
  WV_VK_REDUCE_INT_SM,   /* integer level, shared-memory tree */
  WV_VK_SUM_F32_SH,      /* float-sum first level, sub-group shuffle */
  WV_VK_SUM_F32_SM,      /* float-sum first level, shared memory */
  WV_VK_SUM_F32_SH_DN,   /* the same two, declaring DenormPreserve */
  WV_VK_SUM_F32_SM_DN,
  WV_VK_TREE_F32,        /* float-sum later levels */
  WV_VK_TREE_F32_DN,
  WV_VK_STREAM,          /* bandwidth baseline (bench) */
  WV_VK_HASH_SH,         /* lottery hash, shuffle exchange */
  WV_VK_HASH_SH_MR,      /* the same, maximally reconverging */
  WV_VK_HASH_SM,         /* lottery hash, shared-memory exchange */
  WV_VK_DATASET,         /* dataset items from the cache */
  WV_VK_SEG,             /* hash batch fold: fold, scan, collect passes */
  WV_VK_RED64_SG,        /* 64-bit order-free level, 64-bit sub-group ops */
  WV_VK_RED64_SM,        /* the same, shared-memory tree */
  WV_VK_SUM_F64_SH,      /* float64-sum first level, sub-group shuffle */
  WV_VK_SUM_F64_SM,      /* float64-sum first level, shared memory */
  WV_VK_SUM_F64_SH_DN,   /* the same two, DenormPreserve for float64 */
  WV_VK_SUM_F64_SM_DN,
  WV_VK_TREE_F64,        /* float64-sum later levels */
  WV_VK_TREE_F64_DN,
  WV_VK_ARGM32_SG,       /* argmin/argmax over 4-byte rows */
  WV_VK_ARGM32_SM,
  WV_VK_ARGM64_SG,       /* argmin/argmax over 8-byte rows */
  WV_VK_ARGM64_SM,
  WV_VK_ARGML_SG,        /* argmin/argmax later levels */
  WV_VK_ARGML_SM,
  WV_VK_XSUM_F32,        /* the exact sum fsum, float32 rows */
  WV_VK_XSUM_F64,        /* the same, float64 rows */
  WV_VK_PROG_COUNT_
};

/* wv_vk_buf_create flags */
#define WV_VK_HOST 1u    /* host-visible, coherent, mapped */
#define WV_VK_ADDR 2u    /* has a device address (shaders reach it by BDA) */
#define WV_VK_RING 4u    /* with WV_VK_HOST: written by host threads, read
                            by the device where it lies (host_alloc) */
#define WV_VK_SPEC_VARIANTS 8   /* spec-constant OP values per program */
/* reduce_int.comp and stream.comp: each invocation has WV_VK_UNROLL
 * independent 16-byte loads in flight (the shaders' constant U), so a
 * work-group's block is 256 x 4 x WV_VK_UNROLL rows. */
#define WV_VK_UNROLL 8u
#define WV_VK_BLOCK_ROWS (1024u * WV_VK_UNROLL)
/* Lanes per 256-row group in sum.comp (its constant L). */
#define WV_VK_SUM_LANES 8u
/* The same in sum.comp built for 8-byte rows (WV_ROW64). */
#define WV_VK_SUM64_LANES 16u

/* Knobs that tests and benchmarks set (wv_vk_open_ex); the daemon uses
 * the defaults (all zero). */
typedef struct wv_vk_options {
  uint32_t window_rows;   /* rows per staging window; 0 = from the device */
  int force_local;        /* never use sub-group ops (reduce) */
  uint32_t batch_units;   /* hash: units per batch; 0 = from the device */
  int no_maxreconv;       /* do not ask for maximal reconvergence */
  uint32_t stream_groups; /* reduce: work-groups per pass; 0 = from the
                             device (tests use few, so that a CPU driver
                             runs a GPU's loop over many blocks) */
  uint32_t seg_sub_log2;  /* hash_batch: sub-batches of 2^N nonces (at
                             least the segment); 0 = 23.  Tests use small
                             ones, so that a CPU driver reuses the slots */
  int no_host_import;     /* never import host memory (host_register
                             refuses: the copy path, for tests and bench) */
  uint32_t inplace_min_rows; /* reduce: shorter runs of imported rows are
                             staged; 0 = 16384 (tests use 1) */
  int no_float64;         /* act as if the device lacked shaderFloat64 (the
                             refusal of the 64-bit dtypes, for tests) */
  int no_int64;           /* the same for shaderInt64 (also argmin/argmax) */
  int no_atomic64;        /* the same for shaderSharedInt64Atomics (the
                             refusal of fsum, for tests) */
} wv_vk_options;

/* One piece of host memory imported for the device (vk_pin.c): the
 * aligned range [lo, hi) of a host_register call, bound whole to buf. */
typedef struct wv_vk_pin {
  const unsigned char *lo, *hi;
  VkBuffer buf;
  VkDeviceMemory mem;
} wv_vk_pin;

typedef struct wv_vk_slot {
  VkCommandBuffer cb;
  VkFence fence;
  VkDescriptorPool pool;
  wv_vk_buf stage;        /* host-visible input window */
  int busy;               /* submitted, fence not yet waited for */
} wv_vk_slot;

struct wv_device {
  VkInstance inst;
  VkPhysicalDevice phys;
  VkDevice dev;
  VkQueue queue;
  uint32_t qfam;
  VkPhysicalDeviceProperties props;
  uint32_t api;                     /* min(device, instance) API version */
  VkPhysicalDeviceMemoryProperties mem;
  uint32_t ts_valid_bits;           /* queue timestamps, 0 = none */
  uint32_t units;                   /* SMs (VK_NV_shader_sm_builtins), 0 = ? */
  uint32_t stream_groups;           /* work-groups for a streaming pass */
  uint32_t sum_groups;              /* the same for sum.comp */

  /* sub-groups */
  uint32_t sg_size;                 /* default sub-group size */
  uint32_t sg_min, sg_max;          /* size-control range (= sg_size w/o) */
  int sg_arith;                     /* arithmetic ops in compute */
  int sg_shuffle;                   /* shuffle ops in compute */
  int sg_require32;                 /* requiredSubgroupSize = 32 possible */
  int full_subgroups;               /* computeFullSubgroups enabled */
  int maxreconv;                    /* maximal reconvergence enabled */
  int int64;                        /* shaderInt64 enabled */
  int float64;                      /* shaderFloat64 enabled */
  int sg_ext;                       /* shaderSubgroupExtendedTypes enabled */
  int denorm64;                     /* float64 DenormPreserve variants usable */
  int sg64;                         /* 64-bit sub-group arithmetic path */
  int sum64_shuffle;                /* float64 sum: shuffle exchange */
  int wide_ok;                      /* caps dtypes64: uint64/sint64/float64 */
  int argm_ok;                      /* caps argminmax */
  char wide_why[120];               /* why not, when !wide_ok / !argm_ok */
  int bda;                          /* bufferDeviceAddress enabled */
  int denorm;                       /* DenormPreserve variants usable */
  int fsum_ok;                      /* float adds keep subnormals (probe) */
  char fsum_why[120];               /* why not, when !fsum_ok */
  int atom64_shared;                /* shaderSharedInt64Atomics enabled */
  int atom64_buffer;                /* shaderBufferInt64Atomics enabled */

  wv_vk_options opt;
  uint32_t window_rows;             /* rows per staging window in use */
  int red_sg;                       /* reduce: sub-group arithmetic path */
  int sum_shuffle;                  /* float sum: shuffle exchange */
  int hash_shuffle;                 /* hash: shuffle exchange */
  int hash_refused;                 /* exchange shuffle demanded, absent */
  unsigned hash_units;              /* hash units (32 lanes) per group */
  uint64_t hash_batch;              /* nonces per batch suggested */
  unsigned char uuid[16];           /* VkPhysicalDeviceIDProperties */

  VkCommandPool cmd_pool;
  VkDescriptorSetLayout dsl;        /* three storage buffers */
  VkPipelineLayout layout;          /* dsl + 64 bytes of push constants */
  VkPipelineCache cache;
  VkShaderModule modules[WV_VK_PROG_COUNT_];
  VkPipeline pipes[WV_VK_PROG_COUNT_][WV_VK_SPEC_VARIANTS];
  VkQueryPool qpool;                /* 2 timestamps, when ts_valid_bits */

  wv_vk_slot slot[2];
  unsigned cur;                     /* slot to record next */
  wv_vk_buf part[2];                /* device-local partials (ping-pong) */
  wv_vk_buf seg;                    /* host-visible float-tree groups */
  wv_vk_buf result;                 /* host-visible, 16 bytes */

  char description[160];
  wv_exchange exchange;              /* hash: the path caps report */
  char exchange_reason[200];

  /* host memory import (VK_EXT_external_memory_host, vk_pin.c) */
  int host_import;                  /* extension enabled, importable */
  char host_import_why[120];        /* why not, when !host_import */
  VkDeviceSize import_align;        /* minImportedHostPointerAlignment */
  PFN_vkGetMemoryHostPointerPropertiesEXT get_host_ptr_props;
  wv_vk_pin *pins;                  /* sorted by lo, disjoint */
  size_t n_pins, cap_pins;
  uint64_t inplace_rows;            /* rows reduce bound in place so far
                                       (tests and benchmarks read it) */
  int trace;                        /* WAVE_VK_TRACE=1: one stderr line per
                                       reduce (rows in place and staged,
                                       time), for the GPU machine's probes */

  void *hash_state;                 /* vk_hash.c */
  struct wv_vk_seg *seg_state;      /* vk_seg.c */
};

/* ---- vk_open.c ----------------------------------------------------------- */

extern const wv_backend wv_vulkan_backend;

int wv_vk_open_ex(const wv_device_config *cfg, const wv_vk_options *opt,
                  wv_device **out, wave_error *err);
void wv_vk_close(wv_device *d);

/* ---- vk_device.c --------------------------------------------------------- */

const char *wv_vk_result_name(VkResult r);
/* WAVE_EDEVICE "what: VK_ERROR_..." */
int wv_vk_fail(wave_error *err, VkResult r, const char *what);

/* flags WV_VK_*: without WV_VK_HOST, device-local memory is preferred. */
int wv_vk_buf_create(wv_device *d, VkDeviceSize size, unsigned flags,
                     wv_vk_buf *b, wave_error *err);
void wv_vk_buf_destroy(wv_device *d, wv_vk_buf *b);
/* Make b at least size bytes (contents are lost when it grows). */
int wv_vk_buf_reserve(wv_device *d, wv_vk_buf *b, VkDeviceSize size,
                      unsigned flags, wave_error *err);
VkDeviceAddress wv_vk_buf_addr(wv_device *d, const wv_vk_buf *b);

/* Copy bytes from host memory into dst at offset, through the staging
 * windows (waits until done). */
int wv_vk_upload(wv_device *d, wv_vk_buf *dst, VkDeviceSize offset,
                 const void *src, VkDeviceSize bytes, wave_error *err);

/* Pipeline of prog with spec constant OP = variant (created on first use,
 * kept until close). */
int wv_vk_pipeline(wv_device *d, enum wv_vk_prog prog, unsigned variant,
                   VkPipeline *out, wave_error *err);
/* A pipeline the caller owns: prog with specialization si.  sub:
 * WV_VK_FULL asks for full sub-groups, WV_VK_SIZE32 for a sub-group size of
 * exactly 32 (each only where the device can promise it). */
#define WV_VK_FULL 1
#define WV_VK_SIZE32 2
int wv_vk_pipeline_new(wv_device *d, enum wv_vk_prog prog,
                       const VkSpecializationInfo *si, int sub,
                       VkPipeline *out, wave_error *err);

/* Slots: begin waits for the slot's last submission, resets it and starts
 * recording; submit ends and submits it (no wait); wait_all waits for every
 * submitted slot. */
int wv_vk_slot_begin(wv_device *d, wv_vk_slot **out, wave_error *err);
int wv_vk_slot_submit(wv_device *d, wv_vk_slot *s, wave_error *err);
int wv_vk_wait_all(wv_device *d, wave_error *err);

/* Record into s: bind pipeline p with buffers b0, b1, b2 (ranges; b2 may be
 * VK_NULL_HANDLE, then b1 is bound there too), push constants, dispatch
 * groups work-groups (capped at the device limit; shaders loop). */
typedef struct wv_vk_range {
  VkBuffer buf;
  VkDeviceSize off, size;
} wv_vk_range;
int wv_vk_dispatch(wv_device *d, wv_vk_slot *s, VkPipeline p,
                   wv_vk_range b0, wv_vk_range b1, wv_vk_range b2,
                   const void *push, uint32_t push_bytes, uint64_t groups,
                   wave_error *err);
/* Work-groups a dispatch of `want` gets (wv_vk_dispatch clamps the same
 * way): shaders that loop over blocks and write one partial per work-group
 * use this to know how many partials there will be.  wv_vk_stream_groups:
 * the same for a pass over `rows` rows in blocks of WV_VK_BLOCK_ROWS, at
 * most d->stream_groups (enough to fill the device; more only adds
 * partials). */
uint32_t wv_vk_groups(const wv_device *d, uint64_t want);
uint32_t wv_vk_stream_groups(const wv_device *d, uint64_t rows);
/* Compute-to-compute (and to transfer) barrier on everything. */
void wv_vk_barrier(wv_vk_slot *s);

/* ---- vk_reduce.c, vk_rec.c ------------------------------------------------ */

int wv_vk_reduce(wv_device *d, const wv_reduce_job *job, wv_reduce_out *out,
                 wave_error *err);
/* Rows per window bound in place from an imported region (vk_pin.c). */
uint64_t wv_vk_inplace_window(const wv_device *d);

/* Benchmarks: reduce / stream-read rows already in device buffer data
 * (no mask, one chunk); *seconds is device time (timestamps) when the
 * queue has them, else host time around submit + wait. */
int wv_vk_reduce_resident(wv_device *d, const wv_vk_buf *data, uint64_t rows,
                          wave_dtype dtype, wave_op op, wv_reduce_out *out,
                          double *seconds, wave_error *err);
int wv_vk_stream_resident(wv_device *d, const wv_vk_buf *data, uint64_t rows,
                          double *seconds, wave_error *err);

/* ---- vk_rec.c: the 64-bit dtypes and argmin/argmax ---------------------- */

/* After the device exists (open): the 64-bit paths, the probe of float64
 * subnormals, and wide_ok / argm_ok with the reason for a no. */
int wv_vk_wide_setup(wv_device *d, wave_error *err);
/* 0 when the device runs job's dtype and op, else WAVE_EUNSUPPORTED naming
 * the device and the missing feature. */
int wv_vk_wide_check(const wv_device *d, const wv_reduce_job *job,
                     wave_error *err);
/* open(): whether float32 sums keep subnormals (fsum_ok, fsum_why). */
int wv_vk_probe_denormals(wv_device *d, wave_error *err);

/* ---- vk_xsum.c: the exact sum fsum --------------------------------------- */

/* caps->fsum, and caps->fsum_why where the device lacks a feature of it. */
void wv_vk_xsum_caps(const wv_device *d, wv_caps *caps);

/* ---- vk_pin.c ----------------------------------------------------------- */

/* open(): whether shared-memory regions can be imported (host_import), and
 * the reason for a no. */
void wv_vk_host_import_check(wv_device *d, int has_ext, VkDeviceSize align);

/* The host_register / host_unregister slots (workers/worker.h). */
int wv_vk_host_register(wv_device *d, const void *ptr, size_t bytes,
                        wave_error *err);
void wv_vk_host_unregister(wv_device *d, const void *ptr, size_t bytes);
/* The host_alloc / host_free slots: host-visible, coherent memory of the
 * device's own, mapped and kept among the pins (so reductions bind it in
 * place); host_free is host_unregister of it. */
int wv_vk_host_alloc(wv_device *d, size_t bytes, void **out,
                     wave_error *err);
void wv_vk_host_free(wv_device *d, void *p, size_t bytes);
void wv_vk_pins_free(wv_device *d);        /* close() */
/* The imported piece holding byte p, or NULL; *next (when not NULL) gets
 * the start of the first piece above p (NULL when there is none). */
const wv_vk_pin *wv_vk_pin_find(const wv_device *d, const void *p,
                                const unsigned char **next);

/* ---- vk_hash.c ----------------------------------------------------------- */

int wv_vk_hash_prepare(wv_device *d, const struct wv_pack *pack,
                       wave_error *err);
int wv_vk_hash(wv_device *d, const struct wv_pack *pack, uint64_t nonce,
               uint64_t count, uint64_t *out, wave_error *err);
uint64_t wv_vk_hash_batch(wv_device *d);   /* nonces per batch for caps */
void wv_vk_hash_free(wv_device *d);        /* close(): the hash's buffers */
/* For vk_seg.c: pack's hash pipeline (prepared when needed), its dataset's
 * address and the units one dispatch may cover; slot's host-visible output
 * buffer, at least `nonces` outputs. */
int wv_vk_hash_pipe(wv_device *d, const struct wv_pack *pack,
                    VkPipeline *pipe, VkDeviceAddress *dataset,
                    uint64_t *units_per_dispatch, wave_error *err);
int wv_vk_hash_outbuf(wv_device *d, unsigned slot, uint64_t nonces,
                      wv_vk_buf **out, wave_error *err);

/* ---- vk_seg.c ------------------------------------------------------------ */

struct wv_hash_batch;
/* The hash_batch slot: hash and fold on the device (docs/hash.md
 * "Segments"). */
int wv_vk_hash_batch_run(wv_device *d, const struct wv_pack *pack,
                         struct wv_hash_batch *b, wave_error *err);
void wv_vk_seg_free(wv_device *d);         /* close() */

#endif
