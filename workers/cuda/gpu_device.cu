/* gpu_device.cu - the CUDA/HIP backend's device: open/close/caps and
 * reductions of jobs whose rows are in host memory.
 *
 * A job's rows are cut into slices of at most 2^24 rows.  Each slice is
 * copied into one of two pinned staging buffers (by a few helper threads,
 * gpu_pool.cu: one core copies far slower than a pinned DMA moves), sent
 * to the device on the copy stream and reduced on the compute stream, so
 * that filling slice k+1, copying slice k and reducing slice k-1 overlap.  Rows already
 * in pinned memory skip the host copy and are sent directly.  Nothing is
 * read back until the job's one small result.
 *
 *  - order-free ops: slices are consecutive logical rows, chunk boundaries
 *    ignored; each slice's kernel folds into the job's result on the device.
 *  - float sum: each chunk is cut into pieces at multiples of 2^24 of its
 *    own rows (gpu_internal.h says why that preserves the tree); pieces are
 *    packed into slices at 4-row-aligned offsets, described by a tile and a
 *    piece table that travel in the same staging buffer.  k_tsum writes one
 *    level-3 value per piece; k_tfinish folds pieces into chunk values and
 *    chunk values into the result.
 *  - the mask, chunked independently of the input, is gathered by logical
 *    row into the staging buffer's mask region, parallel to the rows.
 *  - shared-memory regions are pinned piece by piece (host_register, at
 *    the bottom); a span is cut at the pieces' edges, so what is pinned
 *    goes straight from the region and the rest through staging.
 *  - the copies' time is the job's transfer (wv_reduce_out.transfer_s):
 *    "the transfer" below.
 *
 * Every runtime call is checked: a failure is WAVE_EDEVICE with the
 * runtime's message, and the daemon marks the device faulted.  The slices
 * of the two kinds of job (reduce_stream, reduce_tree) are built in
 * gpu_wide_host.cu, for the 32-bit and the wide reducer alike.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "core/testhook.h"
#include "workers/cuda/gpu_internal.h"
#include "workers/cuda/gpu_api.h"
#include "workers/cuda/gpu_wide.h"
#include "workers/cuda/gpu_xsum.h"

namespace WVG_NS {

int dev_fail(wave_error *err, const char *what, cudaError_t e)
{
  return wv_seterr(err, WAVE_EDEVICE, "%s: %s: %s", WVG_VENDOR, what,
                   cudaGetErrorString(e));
}

#define CK(call)                                                               \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess)                                                     \
      return dev_fail(err, #call, e_);                                         \
  } while (0)

/* ---- open / close / caps ------------------------------------------------- */

static void dev_free(gdev *g)
{
  hash_fini(g);
  reducer_fini(&g->red);
  if (g->wide != NULL) {
    wreducer_fini(g->wide);
    free(g->wide);
  }
  if (g->xs != NULL) {
    xreducer_fini(g->xs);
    free(g->xs);
  }
  for (int i = 0; i < 2; i++) {
    if (g->slots[i].h != NULL)
      (void)cudaFreeHost(g->slots[i].h);
    if (g->slots[i].d != NULL)
      (void)cudaFree(g->slots[i].d);
    if (g->slots[i].copied != NULL)
      (void)cudaEventDestroy(g->slots[i].copied);
    if (g->slots[i].done != NULL)
      (void)cudaEventDestroy(g->slots[i].done);
    if (g->slots[i].sent0 != NULL)
      (void)cudaEventDestroy(g->slots[i].sent0);
    if (g->slots[i].sent1 != NULL)
      (void)cudaEventDestroy(g->slots[i].sent1);
  }
  if (g->h_res != NULL)
    (void)cudaFreeHost(g->h_res);
  if (g->h_seg != NULL)
    (void)cudaFreeHost(g->h_seg);
  if (g->copy != NULL)
    (void)cudaStreamDestroy(g->copy);
  if (g->compute != NULL)
    (void)cudaStreamDestroy(g->compute);
  (void)cudaGetLastError();
  free(g);
}

static int dev_open(const wv_device_config *cfg, gdev **out, wave_error *err)
{
  /* Without a driver the count is left untouched: start from 0. */
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    const char *why = e != cudaSuccess ? cudaGetErrorString(e) : "none found";
    (void)cudaGetLastError();
    return wv_seterr(err, WAVE_ENODEV, "%s: no usable %s device (%s)",
                     cfg->name ? cfg->name : WVG_VENDOR, WVG_VENDOR, why);
  }
  if (cfg->index < 0 || cfg->index >= n)
    return wv_seterr(err, WAVE_ENODEV, "%s: %s device index %d, but %d found",
                     cfg->name ? cfg->name : WVG_VENDOR, WVG_VENDOR,
                     cfg->index, n);
  gdev *g = (gdev *)calloc(1, sizeof *g);
  if (g == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  g->index = cfg->index;
  g->hp_slot = -1;  /* taken by hash_init, given back by hash_fini */
  int rv = 0;
#define OCK(call)                                                              \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess) {                                                   \
      rv = dev_fail(err, #call, e_);                                           \
      goto fail;                                                               \
    }                                                                          \
  } while (0)
  {
    OCK(cudaSetDevice(g->index));
    cudaDeviceProp prop;
    OCK(cudaGetDeviceProperties(&prop, g->index));
    snprintf(g->name, sizeof g->name, "%s", prop.name);
    g->major = prop.major;
    g->minor = prop.minor;
    g->sms = prop.multiProcessorCount;
    g->warp = prop.warpSize;
    g->mem = prop.totalGlobalMem;
#if !defined(WV_GPU_HIP)  /* Debian 12's HIP props have no uuid */
    memcpy(g->uuid, &prop.uuid, sizeof g->uuid);
#endif
#if defined(WV_GPU_HIP)
    snprintf(g->name, sizeof g->name, "%s %s", prop.name, prop.gcnArchName);
#endif
    OCK(cudaStreamCreateWithFlags(&g->copy, cudaStreamNonBlocking));
    OCK(cudaStreamCreateWithFlags(&g->compute, cudaStreamNonBlocking));
    for (int i = 0; i < 2; i++) {
      slot *s = &g->slots[i];
      OCK(cudaHostAlloc((void **)&s->h, WVG_SLOT_BYTES, cudaHostAllocDefault));
      OCK(cudaMalloc((void **)&s->d, WVG_SLOT_BYTES));
      OCK(cudaEventCreateWithFlags(&s->copied, cudaEventDisableTiming));
      OCK(cudaEventCreateWithFlags(&s->done, cudaEventDisableTiming));
      OCK(cudaEventCreateWithFlags(&s->sent0, cudaEventDefault));
      OCK(cudaEventCreateWithFlags(&s->sent1, cudaEventDefault));
      /* Recorded once so that the first waits on them pass. */
      OCK(cudaEventRecord(s->copied, g->copy));
      OCK(cudaEventRecord(s->done, g->compute));
    }
    OCK(cudaHostAlloc((void **)&g->h_res, sizeof(result),
                      cudaHostAllocDefault));
    OCK(reducer_init(&g->red));
    OCK(cudaDeviceSynchronize());
  }
#undef OCK
  {
    /* Staging copy helpers: cfg->threads when given, else all but four
     * of the cores, at least half, at most 12 copiers (on the H200 host's
     * 16 cores a 1 GiB staged copy ran at 0.78x the pinned DMA with 8
     * memcpy threads, 0.88x with 12: wvbench-gpu-pin). */
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    long want = cores - 4 > cores / 2 ? cores - 4 : cores / 2;
    int helpers = cfg->threads > 0 ? (int)cfg->threads - 1
                                   : (int)(want < 12 ? want : 12) - 1;
    pool_start(&g->pool, helpers < 0 ? 0 : helpers);
  }
  hash_init(g, cfg);
  *out = g;
  return 0;
fail:
  dev_free(g);
  return rv;
}

/* ---- reductions from host memory ---------------------------------------- */

/* seg and cursor: gpu_wide.h. */

static int is_pinned(const void *p)
{
  cudaPointerAttributes a;
  memset(&a, 0, sizeof a);
  cudaError_t e = cudaPointerGetAttributes(&a, p);
  if (e != cudaSuccess) {
    (void)cudaGetLastError(); /* HIP: unregistered memory is an error */
    return 0;
  }
#if defined(WV_GPU_HIP)
  return a.memoryType == hipMemoryTypeHost;
#else
  return a.type == cudaMemoryTypeHost;
#endif
}

/* Pinned host ranges, one per host_register call.  cudaHostRegister-
 * Portable makes a registration the whole process's: a second device
 * asking for the same piece must not register it again (the runtime
 * refuses), and must cut its spans at the first one's ranges (one copy
 * cannot cross two registrations).  So one table for the process, each
 * range counted by the devices that hold it, under one mutex. */
struct pin_range {
  uintptr_t lo, hi;
  unsigned refs;
};
static pthread_mutex_t pins_mu = PTHREAD_MUTEX_INITIALIZER;
static pin_range *pins;      /* sorted, disjoint */
static size_t npins, pins_cap;

/* The first range that ends after p (pins_mu held). */
static size_t pins_find(uintptr_t p)
{
  size_t a = 0, b = npins;
  while (a < b) {
    size_t m = a + (b - a) / 2;
    if (pins[m].hi <= p)
      a = m + 1;
    else
      b = m;
  }
  return a;
}

/* Is a whole span of rows in pinned memory that is not ours (cudaHostAlloc
 * or a registration of the caller's)?  A span that touches a range of
 * ours is cut at the ranges by add_seg instead: asking the driver about
 * its first byte would call all of it pinned once its first piece is, and
 * the rest would go by the driver's pageable copy (0.14x the DMA rate). */
int span_pinned(const void *data, uint64_t bytes)
{
  uintptr_t p = (uintptr_t)data, end = p + bytes;
  pthread_mutex_lock(&pins_mu);
  size_t i = pins_find(p);
  int ours = i < npins && pins[i].lo < end;
  pthread_mutex_unlock(&pins_mu);
  if (ours)
    return 0;
  /* Only large chunks are worth a driver query. */
  return bytes >= (1u << 20) ? is_pinned(data) : 0;
}

/* Grow one of the last two segs (a job's data and mask pieces alternate)
 * by [p, p + bytes) when it ends where that begins, in the staging buffer
 * and in memory: one copy instead of one per piece.  The caller knows
 * both lie in one registered range (a copy cannot cross two). */
static bool pins_grow_seg(std::vector<seg> *segs, size_t dst, uintptr_t p,
                          size_t bytes)
{
  size_t n = segs->size();
  for (size_t j = n; j > 0 && j + 2 > n; j--) {
    seg *x = &(*segs)[j - 1];
    if (x->pinned && x->off + x->bytes == dst &&
        (uintptr_t)x->src + x->bytes == p) {
      x->bytes += bytes;
      return true;
    }
  }
  return false;
}

/* Append [src, src + bytes) at staging offset dst: the parts inside
 * registered ranges as pinned segs, one per range (a copy cannot cross two
 * registrations), the parts between them staged.  A part that continues a
 * pinned seg of the same range grows it: the float64 tree's pieces are
 * one tile (512 KiB), and 2048 copies of 512 KiB ran at 0.75x of the
 * copy rate of a few big ones (docs/performance.md).  Memory outside every
 * range keeps the span's own answer (whole_pinned, from span_pinned: 0
 * for a span that touches a range). */
void add_seg(std::vector<seg> *segs, size_t dst, const void *src,
                    size_t bytes, int whole_pinned)
{
  uintptr_t p = (uintptr_t)src, end = p + bytes;
  pthread_mutex_lock(&pins_mu);
  size_t i = pins_find(p);
  if (i == npins || pins[i].lo >= end) {
    pthread_mutex_unlock(&pins_mu);
    seg x = {dst, src, bytes, whole_pinned};
    segs->push_back(x);
    return;
  }
  while (p < end) {
    uintptr_t q;
    int pinned = i < npins && pins[i].lo <= p;
    /* a seg that ends at p, inside a range that began before p, is in it */
    bool inside = pinned && pins[i].lo < p;
    if (pinned)
      q = std::min(end, pins[i++].hi);
    else
      q = i < npins ? std::min(end, pins[i].lo) : end;
    size_t at = dst + (size_t)(p - (uintptr_t)src);
    if (!(inside && pins_grow_seg(segs, at, p, (size_t)(q - p)))) {
      seg x = {at, (const void *)p, (size_t)(q - p), pinned};
      segs->push_back(x);
    }
    p = q;
  }
  pthread_mutex_unlock(&pins_mu);
}

/* Append `rows` rows from the cursor to segs at byte offset dst. */
void gather(cursor *c, uint64_t rows, size_t dst, std::vector<seg> *segs)
{
  while (rows > 0) {
    const wv_span *s = &c->spans[c->i];
    if (c->off >= s->rows) {
      c->i++;
      c->off = 0;
      continue;
    }
    uint64_t take = s->rows - c->off;
    if (take > rows)
      take = rows;
    if (c->pinned[c->i] < 0)
      c->pinned[c->i] = (signed char)span_pinned(s->data, s->rows * c->rsz);
    add_seg(segs, dst, (const char *)s->data + c->off * c->rsz,
            (size_t)take * c->rsz, c->pinned[c->i]);
    dst += (size_t)take * c->rsz;
    c->off += take;
    rows -= take;
  }
}

/* ---- the transfer: wv_reduce_out.transfer_s ------------------------------
 *
 * A job's transfer is the host's copying into pinned staging (pool_copy,
 * by the wall clock: the device thread waits for it) plus the H2D copies'
 * time on their stream, between a timed event pair recorded around each
 * slice's copies (sent0, sent1).  The pair is read once the copies are
 * known to be over, where the code already waits: in submit, when the
 * slot comes round again (after its `copied` event), and at the job's end
 * (after the compute stream's synchronisation, which waited for every
 * `copied`).  So the count adds no synchronisation; it costs two event
 * records per slice.  Slices overlap (fill k + 1, copy k, reduce k - 1),
 * so the sum is the copy engine's and the helpers' busy time, not a span
 * of the job, and a part of its compute phase.  A slice sending less than
 * WVG_XFER_TIMED_MIN bytes records no pair: on a tiny job the pair costs
 * more than the copy it would time (about 2.4 us of a 1024-row job's 20),
 * so such a slice counts only the host's staging. */

/* copying 1 MiB takes 19 us or more: the pair is a few percent of it */
#define WVG_XFER_TIMED_MIN (1u << 20)

static double xfer_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Slot s's last copies are over: add their time (count), or drop it. */
static void xfer_slot(gdev *g, slot *s, bool count)
{
  float ms = 0;
  if (s->timed && count &&
      cudaEventElapsedTime(&ms, s->sent0, s->sent1) == cudaSuccess)
    g->xfer_dev += ms * 1e-3;
  s->timed = 0;
}

/* A job begins: nothing counted yet (a failed job's pairs are dropped). */
static void xfer_begin(gdev *g)
{
  for (int i = 0; i < 2; i++)
    xfer_slot(g, &g->slots[i], false);
  g->xfer_host = g->xfer_dev = 0;
}

/* A job ended: its transfer in seconds.  ok: it ended well, so its
 * copies are over (its end synchronised); else only the host's part. */
static double xfer_end(gdev *g, bool ok)
{
  for (int i = 0; i < 2; i++)
    xfer_slot(g, &g->slots[i], ok);
  return g->xfer_host + g->xfer_dev;
}

/* Send the slice described by segs (plus `table_bytes` of tables already
 * written into the staging buffer at WVG_TILES_OFF) into slot k % 2, then
 * launch `kernel` on it.  direct: the job's only slice; everything goes on
 * the compute stream, without the cross-stream events that only pay when
 * slices overlap (they cost a small job several microseconds). */
int submit(gdev *g, unsigned k, const std::vector<seg> &segs,
           size_t table_bytes, bool direct, const slot_kernel &kernel,
           wave_error *err)
{
  slot *s = &g->slots[k & 1];
  cudaStream_t cs = direct ? g->compute : g->copy;
  /* The staging buffer is free once its previous copy has finished. */
  CK(cudaEventSynchronize(s->copied));
  xfer_slot(g, s, true);
  std::vector<copy_op> ops;
  for (const seg &x : segs)
    if (!x.pinned) {
      copy_op o = {s->h + x.off, x.src, x.bytes};
      ops.push_back(o);
    }
  double t0 = xfer_now();
  pool_copy(&g->pool, ops.data(), ops.size());
  g->xfer_host += xfer_now() - t0;
  /* The device buffer is free once the kernels that read it are done. */
  if (!direct)
    CK(cudaStreamWaitEvent(cs, s->done, 0));
  size_t sent = table_bytes;
  for (const seg &x : segs)
    sent += x.bytes;
  bool timed = sent >= WVG_XFER_TIMED_MIN;
  if (timed)
    CK(cudaEventRecord(s->sent0, cs));
  /* In offset order, staged pieces merge into runs (4-row alignment gaps
   * ride along); a piece sent straight from pinned memory ends a run, so
   * that no run copies staging garbage over it. */
  std::vector<seg> sorted(segs);
  std::sort(sorted.begin(), sorted.end(),
            [](const seg &a, const seg &b) { return a.off < b.off; });
  size_t run_off = 0, run_end = 0;
  for (const seg &x : sorted) {
    if (!x.pinned && run_end > run_off && x.off >= run_end &&
        x.off <= run_end + 16) {
      run_end = x.off + x.bytes;
      continue;
    }
    if (run_end > run_off)
      CK(cudaMemcpyAsync(s->d + run_off, s->h + run_off, run_end - run_off,
                         cudaMemcpyHostToDevice, cs));
    run_off = run_end = 0;
    if (x.pinned) {
      CK(cudaMemcpyAsync(s->d + x.off, x.src, x.bytes, cudaMemcpyHostToDevice,
                         cs));
      continue;
    }
    run_off = x.off;
    run_end = x.off + x.bytes;
  }
  if (run_end > run_off)
    CK(cudaMemcpyAsync(s->d + run_off, s->h + run_off, run_end - run_off,
                       cudaMemcpyHostToDevice, cs));
  if (table_bytes > 0)
    CK(cudaMemcpyAsync(s->d + WVG_TILES_OFF, s->h + WVG_TILES_OFF, table_bytes,
                       cudaMemcpyHostToDevice, cs));
  if (timed)
    CK(cudaEventRecord(s->sent1, cs));
  s->timed = timed;
  if (!direct) {
    CK(cudaEventRecord(s->copied, cs));
    CK(cudaStreamWaitEvent(g->compute, s->copied, 0));
  }
  CK(kernel(s->d));
  if (!direct)
    CK(cudaEventRecord(s->done, g->compute));
  return 0;
}

static int dev_reduce(gdev *g, const wv_reduce_job *job, wv_reduce_out *out,
                      wave_error *err)
{
  if (wv_op_plan_of(job->dtype, job->op)->path == WV_PATH_XSUM)
    return reduce_xsum_job(g, job, out, err);
  if (wv_reduce_is_wide(job->dtype, job->op))
    return reduce_wide_job(g, job, out, err);
  result zero = {0, 0, 0};
  if (job->rows == 0) {
    decode_result(job->dtype, job->op, &zero, 0, out);
    return 0;
  }
  CK(cudaSetDevice(g->index));
  const wv_op_plan *p = wv_op_plan_of(job->dtype, job->op);
  int kop = kernel_op(p), rv;
  rv = kop == K_FSUM
           ? reduce_tree(g, job, &g->red.tree, g->red.res, WVG_PIECE_ROWS, err)
           : reduce_stream(g, job, p, err);
  if (rv != 0)
    return rv;
  CK(cudaMemcpyAsync(g->h_res, g->red.res, sizeof(result),
                     cudaMemcpyDeviceToHost, g->compute));
  CK(cudaStreamSynchronize(g->compute));
  CK(cudaGetLastError());
  uint64_t count = job->has_mask ? g->h_res->count : job->rows;
  decode_result(job->dtype, job->op, g->h_res, count, out);
  return 0;
}

} /* namespace WVG_NS */

/* ---- the C entry points --------------------------------------------------- */

using namespace WVG_NS;

extern "C" int WVG_C(open)(const wv_device_config *cfg, wv_device **out,
                           wave_error *err)
{
  gdev *g = NULL;
  int rv = dev_open(cfg, &g, err);
  *out = (wv_device *)g;
  return rv;
}

extern "C" void WVG_C(close)(wv_device *dev)
{
  gdev *g = (gdev *)dev;
  if (g == NULL)
    return;
  (void)cudaSetDevice(g->index);
  (void)cudaDeviceSynchronize();
  pool_stop(&g->pool);
  dev_free(g);
}

extern "C" void WVG_C(caps)(wv_device *dev, wv_caps *caps)
{
  gdev *g = (gdev *)dev;
  memset(caps, 0, sizeof *caps);
#if defined(WV_GPU_HIP)
  snprintf(caps->description, sizeof caps->description,
           "%.100s, %d CUs, wave%d, %.0f GiB", g->name, g->sms, g->warp,
           g->mem / 1073741824.0);
  caps->native_wave_reduce = 0;
#else
  snprintf(caps->description, sizeof caps->description,
           "%.100s sm_%d%d, %d SMs, %.0f GiB", g->name, g->major, g->minor,
           g->sms, g->mem / 1073741824.0);
  caps->native_wave_reduce = g->major >= 8; /* redux.sync */
#endif
  caps->wave_width = (unsigned)g->warp;
  caps->exchange_mode = g->local ? WV_EXCHANGE_LOCAL : WV_EXCHANGE_SHUFFLE;
  caps->reverify = 1;
  caps->dtypes64 = 1;   /* gpu_wide.cu, gpu_tree.cu */
  caps->argminmax = 1;
  caps->fsum = 1;       /* gpu_xsum.cu */
  snprintf(caps->exchange_reason, sizeof caps->exchange_reason, "%.90s; %.100s",
           g->exchange_reason, g->jit_note);
  caps->hash_batch = hash_batch(g);
#if !defined(WV_GPU_HIP)
  caps->has_uuid = 1;
  memcpy(caps->uuid, g->uuid, sizeof caps->uuid);
#endif
}

extern "C" int WVG_C(reduce)(wv_device *dev, const wv_reduce_job *job,
                             wv_reduce_out *out, wave_error *err)
{
  gdev *g = (gdev *)dev;
  xfer_begin(g);
  int rv = dev_reduce(g, job, out, err);
  out->transfer_s = xfer_end(g, rv == 0);
  return rv;
}

extern "C" int WVG_C(hash_prepare)(wv_device *dev, const struct wv_pack *pack,
                                   wave_error *err)
{
  return hash_prepare((gdev *)dev, pack, err);
}

extern "C" int WVG_C(hash)(wv_device *dev, const struct wv_pack *pack,
                           uint64_t nonce, uint64_t count, uint64_t *out,
                           wave_error *err)
{
  return hash_run((gdev *)dev, pack, nonce, count, out, err);
}

/* Shared-memory regions (worker.h host_register): each call pins one
 * piece in place and records its range, so the reduction's gather
 * (add_seg) sends what lies in a piece straight from the region and
 * stages the rest.  The mapping is read-only, hence
 * cudaHostRegisterReadOnly.  A refusal is not a device fault.
 *
 * Measured on the H200 host (wvbench-gpu-pin, device-region.sh): pinning
 * 1 GiB costs 37-54 ms, about twice the copy itself, and does not get
 * faster from several threads pinning disjoint pieces (the driver
 * serialises them); a pin on another thread stalls the staged copies of a
 * job meanwhile, and one copy cannot cross two registrations.  So the
 * daemon pins a region in pieces on this device's own thread, between
 * jobs (daemon/region.h), from its registration on.  WAVE_CUDA_PIN=off
 * never pins (every use staged; for measurements). */
extern "C" int WVG_C(host_register)(wv_device *dev, const void *ptr,
                                    size_t bytes, wave_error *err)
{
  gdev *g = (gdev *)dev;
  const char *mode = wv_test_hook("WAVE_CUDA_PIN");
  if (mode != NULL && strcmp(mode, "off") == 0)
    return wv_seterr(err, WAVE_EUNSUPPORTED, "WAVE_CUDA_PIN=off");
  uintptr_t lo = (uintptr_t)ptr, hi = lo + bytes;
  int rv = 0;
  pthread_mutex_lock(&pins_mu);
  size_t i = pins_find(lo);
  if (bytes > 0 && i < npins && pins[i].lo == lo && pins[i].hi == hi) {
    pins[i].refs++;  /* another device's, and so ours too */
    goto out;
  }
  if (bytes == 0 || (i < npins && pins[i].lo < hi)) {
    rv = wv_seterr(err, WAVE_EARG, "%s: host range of %zu bytes is empty or "
                   "overlaps one pinned already", WVG_VENDOR, bytes);
    goto out;
  }
  if (npins == pins_cap) {
    size_t cap = pins_cap ? 2 * pins_cap : 64;
    pin_range *p = (pin_range *)realloc(pins, cap * sizeof *p);
    if (p == NULL) {
      rv = wv_seterr(err, WAVE_ENOMEM, NULL);
      goto out;
    }
    pins = p;
    pins_cap = cap;
  }
  {
    cudaError_t e = cudaSetDevice(g->index);
    if (e == cudaSuccess)
      e = cudaHostRegister((void *)ptr, bytes,
                           cudaHostRegisterPortable | cudaHostRegisterReadOnly);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      rv = wv_seterr(err, WAVE_EARG, "%s: cudaHostRegister of %zu bytes: %s",
                     WVG_VENDOR, bytes, cudaGetErrorString(e));
      goto out;
    }
  }
  memmove(&pins[i + 1], &pins[i], (npins - i) * sizeof *pins);
  pins[i].lo = lo;
  pins[i].hi = hi;
  pins[i].refs = 1;
  npins++;
out:
  pthread_mutex_unlock(&pins_mu);
  return rv;
}

extern "C" void WVG_C(host_unregister)(wv_device *dev, const void *ptr,
                                       size_t bytes)
{
  gdev *g = (gdev *)dev;
  uintptr_t lo = (uintptr_t)ptr, hi = lo + bytes;
  pthread_mutex_lock(&pins_mu);
  if (cudaSetDevice(g->index) != cudaSuccess)
    (void)cudaGetLastError();
  size_t kept = pins_find(lo);
  for (size_t j = kept; j < npins; j++) {
    if (pins[j].lo >= lo && pins[j].hi <= hi && --pins[j].refs == 0) {
      if (cudaHostUnregister((void *)pins[j].lo) != cudaSuccess)
        (void)cudaGetLastError();
      continue;  /* dropped */
    }
    pins[kept++] = pins[j];
  }
  npins = kept;
  pthread_mutex_unlock(&pins_mu);
}

/* The visible devices' UUIDs (worker.h list_uuids), by runtime index: the
 * runtime applies CUDA_VISIBLE_DEVICES, so entry i is the i-th granted
 * GPU.  No driver: 0 devices.  Debian 12's HIP has no UUID in its device
 * properties, so the hip build cannot say (and registers no slot). */
extern "C" int WVG_C(list_uuids)(unsigned char (*out)[16], size_t max,
                                 wave_error *err)
{
#if defined(WV_GPU_HIP)
  (void)out;
  (void)max;
  wv_seterr(err, WAVE_EUNSUPPORTED, "%s: no device UUIDs", WVG_VENDOR);
  return -1;
#else
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n <= 0) {
    (void)cudaGetLastError();
    return 0;
  }
  for (int i = 0; i < n && (size_t)i < max; i++) {
    cudaDeviceProp prop;
    cudaError_t e = cudaGetDeviceProperties(&prop, i);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      wv_seterr(err, WAVE_EDEVICE, "%s: cudaGetDeviceProperties(%d): %s",
                WVG_VENDOR, i, cudaGetErrorString(e));
      return -1;
    }
    memcpy(out[i], &prop.uuid, sizeof out[i]);
  }
  return n;
#endif
}
