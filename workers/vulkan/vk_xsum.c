/* vk_xsum.c - the exact float sum, op fsum (core/xsum.h, docs/reduction.md
 * "fsum"), on a Vulkan device: what a device needs for it, and the steps
 * vk_rec.c records for it (the plan's path WV_PATH_XSUM).
 *
 * One shader source, shaders/xsum.comp, built for float32 and float64 rows
 * (WV_ROW64); its comment has the design and the bounds that keep every
 * int64 from overflowing.  A job is one stream of rows: the answer depends
 * on no chunking, so chunks are no groups here (unlike the float sum) and
 * rows are staged or bound in place as for the order-free ops; a mask is
 * applied while staging, unselected rows written as -0.0 (the op table's
 * fill), which adds nothing and sets no flag.
 *  - The job's bins, NO signed int64 (float32: 20 of 16 bits' weight;
 *    float64: 67 of 32 bits') and a flags word, live in part[0]
 *    (device-local), zeroed before the first window;
 *  - every window is one dispatch of xsum.comp, whose work-groups each add
 *    their carry-normalised bins and flags atomically;
 *  - after the last window the bins are copied to the host-visible result
 *    buffer; the host adds them into the exact accumulator
 *    (wv_xsum_add_bins) and rounds once (wv_xsum_round) with the
 *    count of selected rows, which the host knows (vk_reduce.c's feed).
 * Bounds the host keeps (xsum.comp's proof uses them): at most 2^29 rows a
 * dispatch (windows are far smaller: 2^28 rows at most), and at most 2^29
 * work-groups a job; a job that would need more is WAVE_EJOBSIZE.
 *
 * Device features: shaderInt64, shaderSharedInt64Atomics and
 * shaderBufferInt64Atomics (enabled at open where present, vk_open.c).  A
 * device without one has caps fsum 0, fsum_why naming what is missing, and
 * refuses fsum jobs with WAVE_EUNSUPPORTED naming the device and feature.
 */
#include <stdio.h>
#include <string.h>

#include "core/base.h"
#include "core/xsum.h"
#include "vk.h"
#include "vk_rec.h"

#define VX_NO32 20u                 /* xsum.comp's NO (job bins), float32 */
#define VX_NO64 67u                 /* float64 */
#define VX_W32 16u                  /* bits between bins, float32 */
#define VX_W64 32u                  /* float64 */
#define VX_MAX_ROWS (1u << 29)      /* a dispatch (xsum.comp's proof) */
#define VX_MAX_GROUPS (1ull << 29)  /* work-groups a job */
#define VX_BLOCK_VECS 1024u         /* xsum.comp: 256 invocations x U = 4 */

/* The job's bins and flags word in part[0] and the result: NO bins, then
 * the flags in the low half of one more int64 slot. */
static uint64_t vx_bytes(unsigned rs)
{
  return ((rs == 8 ? VX_NO64 : VX_NO32) + 1u) * 8u;
}

/* What the device lacks for fsum, or "" when nothing. */
static void vx_missing(const wv_device *d, char *why, size_t n)
{
  why[0] = 0;
  if (!d->int64)
    snprintf(why, n, "the device has no shaderInt64");
  else if (!d->atom64_shared || !d->atom64_buffer)
    snprintf(why, n, "the device has no %s%s%s",
             d->atom64_shared ? "" : "shaderSharedInt64Atomics",
             !d->atom64_shared && !d->atom64_buffer ? " and no " : "",
             d->atom64_buffer ? "" : "shaderBufferInt64Atomics");
}

void wv_vk_xsum_caps(const wv_device *d, wv_caps *caps)
{
  vx_missing(d, caps->fsum_why, sizeof caps->fsum_why);
  caps->fsum = caps->fsum_why[0] == 0;
}

int wv_vk_xsum_check(const wv_device *d, wave_error *err)
{
  char why[120];
  vx_missing(d, why, sizeof why);
  if (why[0] == 0)
    return 0;
  return wv_seterr(err, WAVE_EUNSUPPORTED, "vulkan: %.48s does not run "
                   "fsum: %s", d->props.deviceName, why);
}

int wv_vk_xsum_reserve(wv_device *d, const wv_vkr_run *run, wave_error *err)
{
  const uint64_t bytes = vx_bytes(run->plan.rs);
  int rc = wv_vk_buf_reserve(d, &d->part[0], bytes, 0, err);
  if (rc == 0)
    rc = wv_vk_buf_reserve(d, &d->result, bytes, WV_VK_HOST, err);
  return rc;
}

/* Work-groups for a dispatch over `rows` rows (blocks of 1024 vectors):
 * on a GPU up to the device's streaming count, enough to fill it.  A CPU
 * driver (lavapipe) runs a work-group's invocations a few at a time, each
 * few through the whole loop, so there a work-group reads one block and
 * stays in cache (on lavapipe 2^22 float32 rows took about 60 ms so, over
 * 250 ms in 64 work-groups looping over blocks 64 apart); tests that ask
 * for a few work-groups (stream_groups) get a GPU's loop. */
static uint64_t vx_groups(const wv_device *d, uint64_t rows, unsigned rs)
{
  uint64_t vecs = wv_vkr_div(rows * rs, 16);
  uint64_t blocks = wv_vkr_div(vecs, VX_BLOCK_VECS);
  uint64_t cap = d->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU &&
                 d->opt.stream_groups == 0 ? UINT32_MAX : d->stream_groups;
  uint64_t g = blocks < cap ? blocks : cap;
  return wv_vk_groups(d, g > 0 ? g : 1);
}

int wv_vk_xsum_level1(wv_device *d, wv_vkr_run *run, wv_vk_slot *s,
                      wv_vk_range src, uint32_t rows, wave_error *err)
{
  const unsigned rs = run->plan.rs;
  const uint64_t bytes = vx_bytes(rs);
  if (!run->xsum_zeroed) {   /* the first window: the job's bins to 0 */
    vkCmdFillBuffer(s->cb, d->part[0].buf, 0, bytes, 0);
    wv_vk_barrier(s);
    run->xsum_zeroed = 1;
  }
  if (rows > VX_MAX_ROWS)
    return wv_seterr(err, WAVE_EINTERNAL, "vulkan: fsum window of %u rows",
                     rows);
  const uint64_t groups = vx_groups(d, rows, rs);
  run->xsum_groups += groups;
  if (run->xsum_groups > VX_MAX_GROUPS)
    return wv_seterr(err, WAVE_EJOBSIZE, "vulkan: fsum over more than "
                     "2^29 work-groups (rows in too many small windows)");
  VkPipeline p;
  int rc = wv_vk_pipeline(d, rs == 8 ? WV_VK_XSUM_F64 : WV_VK_XSUM_F32, 0,
                          &p, err);
  if (rc != 0)
    return rc;
  uint32_t push[1] = {rows};
  return wv_vk_dispatch(d, s, p, src, (wv_vk_range){d->part[0].buf, 0, bytes},
                        (wv_vk_range){0}, push, sizeof push, groups, err);
}

int wv_vk_xsum_finish(wv_device *d, wv_vkr_run *run, wv_vk_slot *s)
{
  wv_vk_barrier(s);
  VkBufferCopy cp = {0, 0, vx_bytes(run->plan.rs)};
  vkCmdCopyBuffer(s->cb, d->part[0].buf, d->result.buf, 1, &cp);
  wv_vk_barrier(s);
  return 0;
}

void wv_vk_xsum_result(const wv_vkr_run *run, const wv_device *d,
                       uint64_t count, wv_reduce_out *out)
{
  const wave_dtype dt = run->plan.rs == 8 ? WAVE_F64 : WAVE_F32;
  const unsigned nb = run->plan.rs == 8 ? VX_NO64 : VX_NO32;
  int64_t bins[VX_NO64 + 1];
  wv_xsum_init(&out->xsum, dt);
  if (run->xsum_zeroed) {   /* a window ran: the device's bins */
    memcpy(bins, d->result.map, (nb + 1u) * sizeof bins[0]);
    /* bin k weighs 2^(w k) units, |bin| < 2^62; the float64 ones reach
     * the top limb (bit 32 x 66), which wv_xsum_add_bins adds modulo X's
     * width: exact, as their total is a sum of rows */
    wv_xsum_add_bins(&out->xsum, bins, nb,
                     run->plan.rs == 8 ? VX_W64 : VX_W32);
    out->xsum.flags = (uint32_t)bins[nb];
  }
  out->count = count;
  out->bits[0] = wv_xsum_round(&out->xsum, count);
}
