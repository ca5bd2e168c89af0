/* vk_rec.c - recording a reduction on a Vulkan device (the design is in
 * vk_reduce.c's comment): the plan of an op (the shader variant, the key
 * that orders min and max, the fill of unselected rows), the first-level
 * dispatch over one window, the later levels (reduce_int.comp's, or the
 * float sum's listed groups, tree.comp), and the value(s) read back.
 * Also the device-resident entry points the benchmarks use, which record
 * the same steps over a device buffer.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/base.h"
#include "vk.h"
#include "vk_rec.h"

#define VR_UNITS (256u / WV_VK_SUM_LANES)  /* sum.comp: groups per WG */
#define VR_MAX_PARTIAL_BYTES (1ull << 30)

void wv_vkr_make_plan(wave_dtype dt, wave_op op, wv_vkr_plan *p)
{
  memset(p, 0, sizeof *p);
  if (wv_reduce_is_wide(dt, op)) {
    wv_vkw_make_plan(dt, op, p);
    return;
  }
  p->rs = p->es = 4;
  p->key = dt == WAVE_S32 ? VR_KEY_SIGNED : dt == WAVE_F32 ? VR_KEY_FLOAT
                                                          : VR_KEY_NONE;
  switch (op) {
  case WAVE_SUM:
    p->fsum = dt == WAVE_F32;
    p->variant = VR_ADD;
    p->fill = p->fsum ? WV_F32_NEG_ZERO : 0;
    break;
  case WAVE_MIN:    p->variant = VR_UMIN; p->fill_dup = 1; break;
  case WAVE_MAX:    p->variant = VR_UMAX; p->fill_dup = 1; break;
  case WAVE_EXTENT: p->variant = VR_EXTENT; p->fill_dup = 1; break;
  case WAVE_AND:    p->variant = VR_AND; p->fill = 0xffffffffu; break;
  case WAVE_OR:     p->variant = VR_OR; break;
  default:          p->variant = VR_XOR; break;
  }
  if (p->variant == VR_ADD || p->variant == VR_AND || p->variant == VR_OR ||
      p->variant == VR_XOR)
    p->key = VR_KEY_NONE;   /* keys only order min and max */
}

/* Back from a key to the row's bits. */
static uint32_t vr_unkey(uint32_t k, uint32_t key)
{
  if (key == VR_KEY_SIGNED)
    return k ^ 0x80000000u;
  if (key == VR_KEY_FLOAT)
    return (k & 0x80000000u) ? (k & 0x7fffffffu) : ~k;
  return k;
}

static uint64_t vr_round4(uint64_t a) { return (a + 3) & ~3ull; }

/* ---- recording ----------------------------------------------------------- */

static wv_vk_range vr_whole(const wv_vk_buf *b)
{
  return (wv_vk_range){b->buf, 0, b->size};
}

/* First-level partials per work-group: one per sub-group on the sub-group
 * path
 * (room for the most sub-groups a work-group of 256 can have), else one. */
uint32_t wv_vkr_slots(const wv_device *d)
{
  if (!d->red_sg)
    return 1;
  uint32_t m = d->sg_min > 0 ? d->sg_min : 1;
  return m >= 256 ? 1 : 256 / m;
}

/* One first-level dispatch over rows [0, rows) of src. */
int wv_vkr_level1(wv_device *d, wv_vkr_run *run, wv_vk_slot *s,
                  wv_vk_range src, uint32_t rows, uint64_t out_base,
                  wave_error *err)
{
  VkPipeline p;
  int rc;
  if (run->plan.wide)
    return wv_vkw_level1(d, run, s, src, rows, out_base, err);
  if (run->plan.fsum) {
    enum wv_vk_prog prog =
      d->sum_shuffle ? (d->denorm ? WV_VK_SUM_F32_SH_DN : WV_VK_SUM_F32_SH)
                     : (d->denorm ? WV_VK_SUM_F32_SM_DN : WV_VK_SUM_F32_SM);
    if ((rc = wv_vk_pipeline(d, prog, 0, &p, err)) != 0)
      return rc;
    uint32_t push[3] = {rows, 0, (uint32_t)out_base};
    uint64_t rounds = wv_vkr_div(wv_vkr_div(rows, WV_GROUP), VR_UNITS);
    return wv_vk_dispatch(d, s, p, src, vr_whole(&d->part[0]),
                          (wv_vk_range){0}, push, sizeof push,
                          rounds < d->sum_groups ? rounds : d->sum_groups,
                          err);
  }
  enum wv_vk_prog prog = d->red_sg ? WV_VK_REDUCE_INT_SG : WV_VK_REDUCE_INT_SM;
  if ((rc = wv_vk_pipeline(d, prog, run->plan.variant, &p, err)) != 0)
    return rc;
  uint32_t push[6] = {rows, 0, (uint32_t)out_base, (uint32_t)run->half,
                      run->plan.key, run->slots};
  return wv_vk_dispatch(d, s, p, src, vr_whole(&d->part[0]), (wv_vk_range){0},
                        push, sizeof push, wv_vk_stream_groups(d, rows), err);
}

/* Partial buffers for a run: part[0] takes the first level, part[1] the
 * second, then they alternate with shrinking sizes. */
int wv_vkr_reserve(wv_device *d, wv_vkr_run *run, wave_error *err)
{
  uint64_t w0, w1;
  const uint64_t es = run->plan.es;
  if (run->plan.fsum) {
    w0 = run->partials;
    w1 = wv_vkr_div(run->partials, WV_GROUP) + run->n_segs;
  } else {
    int ext = run->plan.variant == VR_EXTENT && !run->plan.argm;
    run->half = ext ? vr_round4(run->partials) : 0;
    w0 = ext ? 2 * run->half : run->partials;
    w1 = 2 * vr_round4(run->plan.wide ? wv_vkw_next(d, &run->plan,
                                                    run->partials)
                                      : wv_vk_stream_groups(d, run->partials));
  }
  if (w0 * es > VR_MAX_PARTIAL_BYTES || run->partials > UINT32_MAX)
    return wv_seterr(err, WAVE_EJOBSIZE, "vulkan: %" PRIu64 " partials is "
                     "more than this backend stages", run->partials);
  int rc = wv_vk_buf_reserve(d, &d->part[0], (w0 + 4) * es, 0, err);
  if (rc == 0)
    rc = wv_vk_buf_reserve(d, &d->part[1], (w1 + 4) * es, 0, err);
  if (rc == 0 && run->plan.wide)   /* argm reads back 32 bytes */
    rc = wv_vk_buf_reserve(d, &d->result, 32, WV_VK_HOST, err);
  return rc;
}

/* Levels after the first, for the order-free ops: reduce_int.comp again on
 * the partials (keys already applied), until one value (pair) is left. */
static int vr_int_levels(wv_device *d, wv_vkr_run *run, wv_vk_slot *s,
                         wave_error *err)
{
  enum wv_vk_prog prog = d->red_sg ? WV_VK_REDUCE_INT_SG : WV_VK_REDUCE_INT_SM;
  VkPipeline p;
  int rc = wv_vk_pipeline(d, prog, run->plan.variant, &p, err);
  if (rc != 0)
    return rc;
  int ext = run->plan.variant == VR_EXTENT;
  uint64_t n = run->partials, half = run->half;
  unsigned src = 0;
  while (n > 1) {
    wv_vk_barrier(s);
    uint64_t m = wv_vk_stream_groups(d, n);
    uint64_t half2 = ext ? vr_round4(m) : 0;
    uint32_t push[6] = {(uint32_t)n, (uint32_t)(half / 4), 0,
                        (uint32_t)half2, VR_KEY_NONE, 1};
    rc = wv_vk_dispatch(d, s, p, vr_whole(&d->part[src]),
                        vr_whole(&d->part[src ^ 1]), (wv_vk_range){0}, push,
                        sizeof push, m, err);
    if (rc != 0)
      return rc;
    n = m;
    half = half2;
    src ^= 1;
  }
  run->final_buf = src;
  run->final_half = half;
  return 0;
}

/* Levels after the first, for the float sum: the groups of every level
 * are listed (first partial, count) in d->seg, then one tree_f32 (float64:
 * tree_f64) dispatch per level. */
int wv_vkr_fsum_levels(wv_device *d, wv_vkr_run *run, wv_vk_slot *s,
                       wave_error *err)
{
  size_t ns = run->n_segs, cap = 0, used = 0;
  uint64_t *off = malloc(ns * sizeof *off), *n = malloc(ns * sizeof *n);
  uint32_t *desc = NULL;
  /* levels: first descriptor, group count */
  uint64_t lv_first[80], lv_groups[80];
  unsigned nlv = 0;
  int rc = 0, final_stage = 0;
  if (off == NULL || n == NULL) {
    rc = wv_seterr(err, WAVE_ENOMEM, NULL);
    goto out;
  }
  memcpy(off, run->seg_off, ns * sizeof *off);
  memcpy(n, run->seg_n, ns * sizeof *n);
  for (;;) {
    int more = 0;
    for (size_t i = 0; i < ns; i++)
      more |= n[i] > 1;
    if (!more) {
      /* Chunk values lie at 0 .. ns-1 in chunk order (see the top). */
      if (final_stage || ns == 1)
        break;
      final_stage = 1;
      off[0] = 0;
      n[0] = ns;
      ns = 1;
      if (n[0] <= 1)
        break;
    }
    if (nlv == sizeof lv_first / sizeof lv_first[0]) {
      rc = wv_seterr(err, WAVE_EINTERNAL, "vulkan: float-sum level overflow");
      goto out;
    }
    lv_first[nlv] = used;
    uint64_t pos = 0;
    for (size_t i = 0; i < ns; i++) {
      uint64_t g = wv_vkr_div(n[i], WV_GROUP);
      for (uint64_t j = 0; j < g; j++) {
        if (used == cap) {
          cap = cap ? 2 * cap : 1024;
          uint32_t *nd = realloc(desc, cap * 2 * sizeof *nd);
          if (nd == NULL) {
            rc = wv_seterr(err, WAVE_ENOMEM, NULL);
            goto out;
          }
          desc = nd;
        }
        uint64_t left = n[i] - j * WV_GROUP;
        desc[2 * used] = (uint32_t)(off[i] + j * WV_GROUP);
        desc[2 * used + 1] = (uint32_t)(left < WV_GROUP ? left : WV_GROUP);
        used++;
      }
      off[i] = pos;
      n[i] = g;
      pos += g;
    }
    lv_groups[nlv] = used - lv_first[nlv];
    nlv++;
  }

  unsigned src = 0;
  if (nlv > 0) {
    if ((rc = wv_vk_buf_reserve(d, &d->seg, used * 8 + 16, WV_VK_HOST, err)) != 0)
      goto out;
    memcpy(d->seg.map, desc, used * 8);
    VkPipeline p;
    enum wv_vk_prog tp =
      run->plan.rs == 8 ? (d->denorm64 ? WV_VK_TREE_F64_DN : WV_VK_TREE_F64)
                        : (d->denorm ? WV_VK_TREE_F32_DN : WV_VK_TREE_F32);
    if ((rc = wv_vk_pipeline(d, tp, 0, &p, err)) != 0)
      goto out;
    for (unsigned l = 0; l < nlv; l++) {
      wv_vk_barrier(s);
      uint32_t push[3] = {(uint32_t)lv_groups[l], (uint32_t)lv_first[l], 0};
      rc = wv_vk_dispatch(d, s, p, vr_whole(&d->part[src]),
                          vr_whole(&d->part[src ^ 1]), vr_whole(&d->seg),
                          push, sizeof push, lv_groups[l], err);
      if (rc != 0)
        goto out;
      src ^= 1;
    }
  }
  run->final_buf = src;
  run->final_half = 0;
out:
  free(off);
  free(n);
  free(desc);
  return rc;
}

/* After the last first-level dispatch: the levels, then the value(s) into
 * d->result, visible to the host once the slot's fence signals. */
int wv_vkr_finish(wv_device *d, wv_vkr_run *run, wv_vk_slot *s,
                  wave_error *err)
{
  int rc = run->plan.fsum ? wv_vkr_fsum_levels(d, run, s, err)
           : run->plan.wide ? wv_vkw_levels(d, run, s, err)
                            : vr_int_levels(d, run, s, err);
  if (rc != 0)
    return rc;
  wv_vk_barrier(s);
  const VkDeviceSize es = run->plan.es;
  VkBufferCopy cp[2] = {
    {0, 0, es},
    {run->final_half * es, es, es},
  };
  vkCmdCopyBuffer(s->cb, d->part[run->final_buf].buf, d->result.buf,
                  run->plan.variant == VR_EXTENT && !run->plan.fsum &&
                    !run->plan.argm ? 2 : 1,
                  cp);
  wv_vk_barrier(s);
  return 0;
}

void wv_vkr_result(const wv_vkr_run *run, const wv_device *d,
                   uint64_t count, wv_reduce_out *out)
{
  if (run->plan.wide) {
    wv_vkw_result(run, d, count, out);
    return;
  }
  const uint32_t *r = d->result.map;
  out->count = count;
  out->bits[0] = out->bits[1] = 0;
  if (count == 0)
    return;
  if (run->plan.fsum) {
    float f;
    memcpy(&f, &r[0], sizeof f);
    out->bits[0] = wv_f32_sum_finish(f, count);
    return;
  }
  uint32_t key = run->plan.key;
  switch (run->plan.variant) {
  case VR_UMIN:
    if (key == VR_KEY_FLOAT && r[0] == 0xffffffffu)
      return;   /* no finite value */
    out->bits[0] = vr_unkey(r[0], key);
    break;
  case VR_UMAX:
    if (key == VR_KEY_FLOAT && r[0] == 0)
      return;
    out->bits[0] = vr_unkey(r[0], key);
    break;
  case VR_EXTENT:
    if (key == VR_KEY_FLOAT && r[0] == 0xffffffffu)
      return;
    out->bits[0] = vr_unkey(r[0], key);
    out->bits[1] = vr_unkey(r[1], key);
    break;
  default:
    out->bits[0] = r[0];
    break;
  }
}

uint64_t wv_vkr_window_partials(const wv_device *d, const wv_vkr_run *run,
                                uint64_t rows)
{
  if (run->plan.fsum)
    return wv_vkr_div(rows, WV_GROUP);
  return (uint64_t)wv_vk_stream_groups(d, rows * run->plan.rs / 4) *
         run->slots;
}

/* ---- device-resident data (benchmarks) ----------------------------------- */

/* Rows per window over a device buffer: as large as the device binds, up
 * to 2^28 rows (1 GiB; the shaders' 32-bit row and vector indices stay far
 * from overflow).  Fewer windows mean fewer dispatch tails. */
static uint64_t vr_resident_window(const wv_device *d)
{
  uint64_t w = d->props.limits.maxStorageBufferRange / 4;
  if (w > (1u << 28))
    w = 1u << 28;
  return w / 1024 * 1024;
}

static void vr_ts(wv_device *d, wv_vk_slot *s, uint32_t q)
{
  if (d->qpool == VK_NULL_HANDLE)
    return;
  if (q == 0)
    vkCmdResetQueryPool(s->cb, d->qpool, 0, 2);
  vkCmdWriteTimestamp(s->cb, q == 0 ? VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT
                                    : VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
                      d->qpool, q);
}

static double vr_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Submit s, wait, and measure: device timestamps when there are any. */
static int vr_submit_timed(wv_device *d, wv_vk_slot *s, double *seconds,
                           wave_error *err)
{
  double t0 = vr_now();
  int rc = wv_vk_slot_submit(d, s, err);
  if (rc == 0)
    rc = wv_vk_wait_all(d, err);
  double t1 = vr_now();
  if (rc != 0)
    return rc;
  *seconds = t1 - t0;
  if (d->qpool != VK_NULL_HANDLE) {
    uint64_t ts[2];
    VkResult r = vkGetQueryPoolResults(d->dev, d->qpool, 0, 2, sizeof ts, ts,
                                       8, VK_QUERY_RESULT_64_BIT |
                                          VK_QUERY_RESULT_WAIT_BIT);
    if (r != VK_SUCCESS)
      return wv_vk_fail(err, r, "vkGetQueryPoolResults");
    uint64_t mask = d->ts_valid_bits >= 64 ? ~0ull
                                           : (1ull << d->ts_valid_bits) - 1;
    *seconds = (double)((ts[1] - ts[0]) & mask) *
               d->props.limits.timestampPeriod * 1e-9;
  }
  return 0;
}

int wv_vk_reduce_resident(wv_device *d, const wv_vk_buf *data, uint64_t rows,
                          wave_dtype dtype, wave_op op, wv_reduce_out *out,
                          double *seconds, wave_error *err)
{
  memset(out, 0, sizeof *out);
  out->n_values = wave_op_values(op);
  *seconds = 0;
  if (rows == 0)
    return 0;
  wv_vkr_run run;
  memset(&run, 0, sizeof run);
  wv_vkr_make_plan(dtype, op, &run.plan);
  const uint64_t W = vr_resident_window(d) * 4 / run.plan.rs;
  uint64_t seg0 = 0, segn = 0;
  if (run.plan.fsum) {
    run.partials = segn = wv_vkr_div(rows, WV_GROUP);
    run.n_segs = 1;
    run.seg_off = &seg0;
    run.seg_n = &segn;
  } else {
    run.slots = run.plan.wide ? 1 : wv_vkr_slots(d);
    for (uint64_t r = 0; r < rows; r += W)
      run.partials += wv_vkr_window_partials(d, &run,
                                             rows - r < W ? rows - r : W);
  }
  int rc = wv_vkr_reserve(d, &run, err);
  wv_vk_slot *s;
  if (rc != 0 || (rc = wv_vk_slot_begin(d, &s, err)) != 0)
    return rc;
  vr_ts(d, s, 0);
  uint64_t base = 0;
  for (uint64_t r = 0; r < rows; r += W) {
    uint64_t n = rows - r < W ? rows - r : W;
    wv_vk_range src = {data->buf, r * run.plan.rs, n * run.plan.rs};
    run.row0 = r;
    if ((rc = wv_vkr_level1(d, &run, s, src, (uint32_t)n, base,
                            err)) != 0)
      return rc;
    base += wv_vkr_window_partials(d, &run, n);
  }
  if ((rc = wv_vkr_finish(d, &run, s, err)) != 0)
    return rc;
  vr_ts(d, s, 1);
  if ((rc = vr_submit_timed(d, s, seconds, err)) != 0)
    return rc;
  wv_vkr_result(&run, d, rows, out);
  return 0;
}

int wv_vk_stream_resident(wv_device *d, const wv_vk_buf *data, uint64_t rows,
                          double *seconds, wave_error *err)
{
  *seconds = 0;
  const uint64_t W = vr_resident_window(d);
  VkPipeline p;
  wv_vk_slot *s;
  int rc = wv_vk_buf_reserve(d, &d->part[0], 4096, 0, err);
  if (rc != 0 || (rc = wv_vk_pipeline(d, WV_VK_STREAM, 0, &p, err)) != 0 ||
      (rc = wv_vk_slot_begin(d, &s, err)) != 0)
    return rc;
  vr_ts(d, s, 0);
  for (uint64_t r = 0; r < rows; r += W) {
    uint64_t n = rows - r < W ? rows - r : W;
    uint32_t push[2] = {(uint32_t)n, 0x9e3779b9u};
    rc = wv_vk_dispatch(d, s, p, (wv_vk_range){data->buf, r * 4, n * 4},
                        vr_whole(&d->part[0]), (wv_vk_range){0}, push,
                        sizeof push, wv_vk_stream_groups(d, n), err);
    if (rc != 0)
      return rc;
  }
  vr_ts(d, s, 1);
  return vr_submit_timed(d, s, seconds, err);
}
