/* vk_rec.c - recording a reduction on a Vulkan device (the design is in
 * vk_reduce.c's comment), for every dtype and op: the plan (read off the op
 * table, core/optable.h), the first-level dispatch over one window, the
 * later levels and the value(s) read back; what a device must have for the
 * 64-bit dtypes and argmin/argmax; and the device-resident entry points
 * the benchmarks use, which record the same steps over a device buffer.
 *
 * One shader per kernel family, built for 4-byte and for 8-byte rows
 * (WV_ROW64, workers/vulkan/CMakeLists.txt); the plan's row bytes pick the
 * build:
 *  - the order-free ops (integer sum, min, max, extent, and, or, xor, float
 *    min/max/extent as keys): reduce_int.comp, its later levels too (keys
 *    already applied);
 *  - the float sum: sum.comp for the first level (G over 256 rows; 8 lanes
 *    a group, 16 for float64) and tree.comp for the listed later levels
 *    (wv_vkr_fsum_levels), so the tree is docs/reduction.md's exactly;
 *  - argmin/argmax: argm.comp, (key, index, count) partials, reduced as the
 *    lexicographic minimum of (key, index).
 *
 * Device features.  Every shader on 8-byte rows and argm.comp use 64-bit
 * integers (shaderInt64), the float64 sum also 64-bit floats
 * (shaderFloat64), enabled at device creation (vk_open.c) only where the
 * device has them.  caps dtypes64 is set only when the device has both: a
 * backend whose caps say dtypes64 runs every 64-bit pair; argminmax needs
 * shaderInt64 alone.  Sub-group arithmetic on 64-bit values (the 64-bit
 * _SG variants) is used only where the device reports
 * shaderSubgroupExtendedTypes, else the shared-memory variants; the
 * float64 sum exchanges its doubles as 32-bit words, so its shuffle needs
 * only what float32's does.  Subnormals: the _DN variants declare
 * DenormPreserve where the device promises shaderDenormPreserveFloat32
 * (Float64); elsewhere open() sums two float64 subnormals first (as
 * vk_open.c does for float32) and a device that flushes them gets no
 * dtypes64.  A refused job is WAVE_EUNSUPPORTED naming the device and the
 * missing feature; the description (caps) says it once per device.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/base.h"
#include "vk.h"
#include "vk_rec.h"

#define VR_MAX_PARTIAL_BYTES (1ull << 30)
#define VR_NONE UINT64_MAX   /* argm.comp: no row */

_Static_assert(WAVE_OR == WAVE_AND + 1 && WAVE_XOR == WAVE_AND + 2,
               "reduce_int.comp's bitwise OPs follow wave_op's order");

void wv_vkr_make_plan(wave_dtype dt, wave_op op, wv_vkr_plan *p)
{
  const wv_op_plan *o = wv_op_plan_of(dt, op);
  memset(p, 0, sizeof *p);
  p->op = o;
  p->rs = o->row_bytes;
  p->wide = wv_reduce_is_wide(dt, op);
  p->fsum = o->path == WV_PATH_FSUM;
  p->xsum = o->path == WV_PATH_XSUM;
  p->argm = o->path == WV_PATH_ARG;
  p->es = p->argm ? 32 : p->rs;
  p->key = o->key;   /* WV_KEY_RAW where nothing is ordered */
  /* Unselected rows: the table's fill; where it has none (the integer
   * argmin/argmax), a copy of the first selected row, whose index
   * vk_reduce.c puts right. */
  p->fill = o->fill.bits;
  p->fill_dup = o->fill.dup || !o->fill.ok;
  if (p->argm)   /* argm.comp's OP: bit 0 argmax, bits 1-2 the key kind */
    p->variant = (o->halves == WV_HALF_HI) | (unsigned)o->key << 1;
  else if (o->path == WV_PATH_KEYS)
    p->variant = o->halves == (WV_HALF_LO | WV_HALF_HI) ? VR_EXTENT
               : o->halves == WV_HALF_HI ? VR_UMAX : VR_UMIN;
  else if (o->path == WV_PATH_BITS)
    p->variant = VR_AND + (unsigned)(op - WAVE_AND);
  else
    p->variant = VR_ADD;
}

static uint64_t vrc_round4(uint64_t a) { return (a + 3) & ~3ull; }

/* ---- recording ----------------------------------------------------------- */

static wv_vk_range vrc_whole(const wv_vk_buf *b)
{
  return (wv_vk_range){b->buf, 0, b->size};
}

/* First-level partials per work-group: one per sub-group on the sub-group
 * path of 4-byte rows (room for the most sub-groups a work-group of 256
 * can have), else one. */
uint32_t wv_vkr_slots(const wv_device *d)
{
  if (!d->red_sg)
    return 1;
  uint32_t m = d->sg_min > 0 ? d->sg_min : 1;
  return m >= 256 ? 1 : 256 / m;
}

/* The reduce_int.comp (argm: argm.comp) build for the plan's rows and the
 * device's sub-group arithmetic. */
static enum wv_vk_prog vrc_prog(const wv_device *d, const wv_vkr_plan *p,
                               int level)
{
  if (p->argm)
    return level ? (d->sg64 ? WV_VK_ARGML_SG : WV_VK_ARGML_SM)
         : p->rs == 8 ? (d->sg64 ? WV_VK_ARGM64_SG : WV_VK_ARGM64_SM)
                      : (d->sg64 ? WV_VK_ARGM32_SG : WV_VK_ARGM32_SM);
  if (p->rs == 8)
    return d->sg64 ? WV_VK_RED64_SG : WV_VK_RED64_SM;
  return d->red_sg ? WV_VK_REDUCE_INT_SG : WV_VK_REDUCE_INT_SM;
}

/* sum.comp's first level: one build per row width, shuffle and denorm. */
static int vrc_fsum_level1(wv_device *d, const wv_vkr_run *run,
                          wv_vk_slot *s, wv_vk_range src, uint32_t rows,
                          uint64_t out_base, wave_error *err)
{
  enum wv_vk_prog prog;
  uint32_t lanes;
  if (run->plan.rs == 8) {
    prog = d->sum64_shuffle ? (d->denorm64 ? WV_VK_SUM_F64_SH_DN
                                           : WV_VK_SUM_F64_SH)
                            : (d->denorm64 ? WV_VK_SUM_F64_SM_DN
                                           : WV_VK_SUM_F64_SM);
    lanes = WV_VK_SUM64_LANES;
  } else {
    prog = d->sum_shuffle ? (d->denorm ? WV_VK_SUM_F32_SH_DN
                                       : WV_VK_SUM_F32_SH)
                          : (d->denorm ? WV_VK_SUM_F32_SM_DN
                                       : WV_VK_SUM_F32_SM);
    lanes = WV_VK_SUM_LANES;
  }
  VkPipeline p;
  int rc = wv_vk_pipeline(d, prog, 0, &p, err);
  if (rc != 0)
    return rc;
  uint32_t push[3] = {rows, 0, (uint32_t)out_base};
  /* rounds of 256 / lanes groups a work-group */
  uint64_t rounds = wv_vkr_div(wv_vkr_div(rows, WV_GROUP), 256u / lanes);
  return wv_vk_dispatch(d, s, p, src, vrc_whole(&d->part[0]),
                        (wv_vk_range){0}, push, sizeof push,
                        rounds < d->sum_groups ? rounds : d->sum_groups, err);
}

/* One first-level dispatch over rows [0, rows) of src. */
int wv_vkr_level1(wv_device *d, wv_vkr_run *run, wv_vk_slot *s,
                  wv_vk_range src, uint32_t rows, uint64_t out_base,
                  wave_error *err)
{
  const wv_vkr_plan *pl = &run->plan;
  if (pl->fsum)
    return vrc_fsum_level1(d, run, s, src, rows, out_base, err);
  if (pl->xsum)
    return wv_vk_xsum_level1(d, run, s, src, rows, err);
  VkPipeline p;
  int rc = wv_vk_pipeline(d, vrc_prog(d, pl, 0), pl->variant, &p, err);
  if (rc != 0)
    return rc;
  /* The blocks of reduce_int.comp's bytes: one partial per work-group
   * (4-byte rows on the sub-group path: `slots`). */
  const uint64_t groups = wv_vk_stream_groups(d, (uint64_t)rows * pl->rs / 4);
  if (pl->argm) {
    uint32_t push[4] = {rows, (uint32_t)out_base, (uint32_t)run->row0,
                        (uint32_t)(run->row0 >> 32)};
    return wv_vk_dispatch(d, s, p, src, vrc_whole(&d->part[0]),
                          (wv_vk_range){0}, push, sizeof push, groups, err);
  }
  /* slots: read by the 4-byte build only */
  uint32_t push[6] = {rows, 0, (uint32_t)out_base, (uint32_t)run->half,
                      pl->key, run->slots};
  return wv_vk_dispatch(d, s, p, src, vrc_whole(&d->part[0]), (wv_vk_range){0},
                        push, sizeof push, groups, err);
}

/* Partials of the level after one of n partials (order-free and argm). */
static uint64_t vrc_next(const wv_device *d, const wv_vkr_plan *p, uint64_t n)
{
  if (p->argm) {   /* argm.comp levels: up to 256 x 32 partials a group, so
                      a GPU's first-level partials (16 per SM) take one */
    uint64_t g = wv_vkr_div(n, 8192);
    return wv_vk_groups(d, g < d->stream_groups ? g : d->stream_groups);
  }
  return wv_vk_stream_groups(d, n * p->rs / 4);   /* n partials of rs */
}

/* Partial buffers for a run: part[0] takes the first level, part[1] the
 * second, then they alternate with shrinking sizes. */
int wv_vkr_reserve(wv_device *d, wv_vkr_run *run, wave_error *err)
{
  uint64_t w0, w1;
  const uint64_t es = run->plan.es;
  if (run->plan.xsum)
    return wv_vk_xsum_reserve(d, run, err);
  if (run->plan.fsum) {
    w0 = run->partials;
    w1 = wv_vkr_div(run->partials, WV_GROUP) + run->n_segs;
  } else {
    int ext = run->plan.variant == VR_EXTENT && !run->plan.argm;
    run->half = ext ? vrc_round4(run->partials) : 0;
    w0 = ext ? 2 * run->half : run->partials;
    w1 = 2 * vrc_round4(vrc_next(d, &run->plan, run->partials));
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

/* Levels after the first, for the order-free ops and argm: the same shader
 * again on the partials (keys already applied; argm.comp's level build),
 * until one value (pair) is left. */
static int vrc_levels(wv_device *d, wv_vkr_run *run, wv_vk_slot *s,
                     wave_error *err)
{
  const wv_vkr_plan *pl = &run->plan;
  VkPipeline p;
  int rc = wv_vk_pipeline(d, vrc_prog(d, pl, 1), pl->variant, &p, err);
  if (rc != 0)
    return rc;
  int ext = pl->variant == VR_EXTENT && !pl->argm;
  uint64_t n = run->partials, half = run->half;
  unsigned src = 0;
  while (n > 1) {
    wv_vk_barrier(s);
    uint64_t m = vrc_next(d, pl, n);
    uint64_t half2 = ext ? vrc_round4(m) : 0;
    /* in_half counts 16-byte vectors; argm.comp reads n alone (out_off 0,
     * row0 unused at a level) */
    uint32_t push[6] = {(uint32_t)n, (uint32_t)(half * pl->rs / 16), 0,
                        (uint32_t)half2, WV_KEY_RAW, 1};
    if (pl->argm)
      push[1] = push[2] = push[3] = 0;
    rc = wv_vk_dispatch(d, s, p, vrc_whole(&d->part[src]),
                        vrc_whole(&d->part[src ^ 1]), (wv_vk_range){0}, push,
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
 * are listed (first partial, count) in d->seg, then one tree.comp dispatch
 * per level (the build of the plan's row width). */
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
      rc = wv_vk_dispatch(d, s, p, vrc_whole(&d->part[src]),
                          vrc_whole(&d->part[src ^ 1]), vrc_whole(&d->seg),
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
  if (run->plan.xsum)
    return wv_vk_xsum_finish(d, run, s);
  int rc = run->plan.fsum ? wv_vkr_fsum_levels(d, run, s, err)
                          : vrc_levels(d, run, s, err);
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

/* argm.comp's answer: (key, index, count), the key inverted for argmax, in
 * the row's own width. */
static void vrc_result_arg(const wv_vkr_plan *p, const uint64_t *r,
                          uint64_t count, wv_reduce_out *out)
{
  out->index = -1;
  /* floats: the rows considered, counted by the shader (fills are NaN);
   * integers: every selected row (fills are copies) */
  if (count == 0 || r[1] == VR_NONE) {
    out->count = 0;
    return;
  }
  if (p->op->count_finite)
    out->count = r[2];
  out->index = (int64_t)r[1];
  uint64_t k = r[0];
  if (p->op->halves == WV_HALF_HI)
    k = ~k & p->op->ones;
  out->bits[0] = wv_unkey_of(p->op->key, p->rs, k);
}

void wv_vkr_result(const wv_vkr_run *run, const wv_device *d,
                   uint64_t count, wv_reduce_out *out)
{
  const wv_vkr_plan *p = &run->plan;
  const wv_op_plan *o = p->op;
  out->count = count;
  out->bits[0] = out->bits[1] = 0;
  if (p->argm) {
    vrc_result_arg(p, d->result.map, count, out);
    return;
  }
  if (p->xsum) {
    wv_vk_xsum_result(run, d, count, out);
    return;
  }
  if (count == 0)
    return;
  uint64_t r[2];
  if (p->rs == 8) {
    memcpy(r, d->result.map, sizeof r);
  } else {
    const uint32_t *r32 = d->result.map;
    r[0] = r32[0];
    r[1] = r32[1];
  }
  if (p->fsum) {
    if (p->rs == 8) {
      double f;
      memcpy(&f, &r[0], sizeof f);
      out->bits[0] = wv_f64_sum_finish(f, count);
    } else {
      float f;
      uint32_t b = (uint32_t)r[0];
      memcpy(&f, &b, sizeof f);
      out->bits[0] = wv_f32_sum_finish(f, count);
    }
    return;
  }
  if (o->path != WV_PATH_KEYS) {
    out->bits[0] = r[0];
    return;
  }
  /* No finite float: the first accumulator kept its identity. */
  if (o->finite_only && r[0] == (o->halves & WV_HALF_LO ? o->ones : 0))
    return;
  out->bits[0] = wv_unkey_of(o->key, p->rs, r[0]);
  if (o->n_values == 2)
    out->bits[1] = wv_unkey_of(o->key, p->rs, r[1]);
}

uint64_t wv_vkr_window_partials(const wv_device *d, const wv_vkr_run *run,
                                uint64_t rows)
{
  if (run->plan.fsum)
    return wv_vkr_div(rows, WV_GROUP);
  if (run->plan.xsum)
    return 0;   /* one set of bins a job, added to atomically */
  return (uint64_t)wv_vk_stream_groups(d, rows * run->plan.rs / 4) *
         run->slots;
}

/* ---- device-resident data (benchmarks) ----------------------------------- */

/* Rows per window over a device buffer: as large as the device binds, up
 * to 2^28 rows (1 GiB; the shaders' 32-bit row and vector indices stay far
 * from overflow).  Fewer windows mean fewer dispatch tails. */
static uint64_t vrc_resident_window(const wv_device *d)
{
  uint64_t w = d->props.limits.maxStorageBufferRange / 4;
  if (w > (1u << 28))
    w = 1u << 28;
  return w / 1024 * 1024;
}

static void vrc_ts(wv_device *d, wv_vk_slot *s, uint32_t q)
{
  if (d->qpool == VK_NULL_HANDLE)
    return;
  if (q == 0)
    vkCmdResetQueryPool(s->cb, d->qpool, 0, 2);
  vkCmdWriteTimestamp(s->cb, q == 0 ? VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT
                                    : VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
                      d->qpool, q);
}

static double vrc_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Submit s, wait, and measure: device timestamps when there are any. */
static int vrc_submit_timed(wv_device *d, wv_vk_slot *s, double *seconds,
                           wave_error *err)
{
  double t0 = vrc_now();
  int rc = wv_vk_slot_submit(d, s, err);
  if (rc == 0)
    rc = wv_vk_wait_all(d, err);
  double t1 = vrc_now();
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
  wv_vkr_run run;
  memset(&run, 0, sizeof run);
  wv_vkr_make_plan(dtype, op, &run.plan);
  if (run.plan.xsum) {
    int rx = wv_vk_xsum_check(d, err);
    if (rx != 0 || rows == 0) {
      wv_vk_xsum_result(&run, d, 0, out);
      return rx;
    }
  }
  if (rows == 0)
    return 0;
  const uint64_t W = vrc_resident_window(d) * 4 / run.plan.rs;
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
  vrc_ts(d, s, 0);
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
  vrc_ts(d, s, 1);
  if ((rc = vrc_submit_timed(d, s, seconds, err)) != 0)
    return rc;
  wv_vkr_result(&run, d, rows, out);
  return 0;
}

int wv_vk_stream_resident(wv_device *d, const wv_vk_buf *data, uint64_t rows,
                          double *seconds, wave_error *err)
{
  *seconds = 0;
  const uint64_t W = vrc_resident_window(d);
  VkPipeline p;
  wv_vk_slot *s;
  int rc = wv_vk_buf_reserve(d, &d->part[0], 4096, 0, err);
  if (rc != 0 || (rc = wv_vk_pipeline(d, WV_VK_STREAM, 0, &p, err)) != 0 ||
      (rc = wv_vk_slot_begin(d, &s, err)) != 0)
    return rc;
  vrc_ts(d, s, 0);
  for (uint64_t r = 0; r < rows; r += W) {
    uint64_t n = rows - r < W ? rows - r : W;
    uint32_t push[2] = {(uint32_t)n, 0x9e3779b9u};
    rc = wv_vk_dispatch(d, s, p, (wv_vk_range){data->buf, r * 4, n * 4},
                        vrc_whole(&d->part[0]), (wv_vk_range){0}, push,
                        sizeof push, wv_vk_stream_groups(d, n), err);
    if (rc != 0)
      return rc;
  }
  vrc_ts(d, s, 1);
  return vrc_submit_timed(d, s, seconds, err);
}

/* ---- open and refusals ---------------------------------------------------- */

/* Float sums must keep subnormals (docs/reduction.md: no flush).  Where
 * the device promises DenormPreserve the shaders declare it; elsewhere one
 * small sum whose leaves and result are subnormal shows what the device
 * does: 3 ulp + (-1 ulp) is 2 ulp, and flushing inputs or output gives 0.
 * A device that flushes refuses float sums rather than answer wrongly. */
int wv_vk_probe_denormals(wv_device *d, wave_error *err)
{
  d->fsum_ok = 1;
  if (d->denorm)
    return 0;
  static const uint32_t rows[2] = {0x00000003u, 0x80000001u};
  wv_span in = {rows, 2};
  wv_reduce_job job = {.dtype = WAVE_F32, .op = WAVE_SUM, .input = &in,
                       .n_input = 1, .rows = 2};
  wv_reduce_out out;
  int rc = wv_vk_reduce(d, &job, &out, err);
  if (rc != 0)
    return rc;
  if (out.bits[0] != 0x00000002u) {
    d->fsum_ok = 0;
    snprintf(d->fsum_why, sizeof d->fsum_why, "the device flushes float32 "
             "subnormals (probe 3 ulp + -1 ulp gave %08x)",
             (unsigned)out.bits[0]);
  }
  return 0;
}

/* Sum two float64 subnormals: 3 ulp + (-1 ulp) is 2 ulp; a device that
 * flushes inputs or output gives 0. */
static int vrc_probe64(wv_device *d, int *keeps, wave_error *err)
{
  static const uint64_t rows[2] = {3, 0x8000000000000001u};
  wv_span in = {rows, 2};
  wv_reduce_job job = {.dtype = WAVE_F64, .op = WAVE_SUM, .input = &in,
                       .n_input = 1, .rows = 2};
  wv_reduce_out out;
  int rc = wv_vk_reduce(d, &job, &out, err);
  *keeps = rc == 0 && out.bits[0] == 2;
  return rc;
}

int wv_vk_wide_setup(wv_device *d, wave_error *err)
{
  d->sg64 = d->red_sg && d->sg_ext && d->int64;
  d->sum64_shuffle = !d->opt.force_local && d->sg_shuffle &&
                     d->full_subgroups && d->sg_min >= WV_VK_SUM64_LANES;
  d->argm_ok = d->int64;
  d->wide_ok = d->int64 && d->float64;
  d->wide_why[0] = 0;
  if (!d->int64 || !d->float64) {
    snprintf(d->wide_why, sizeof d->wide_why, "the device has no %s%s%s",
             d->int64 ? "" : "shaderInt64", !d->int64 && !d->float64
             ? " and no " : "", d->float64 ? "" : "shaderFloat64");
    return 0;
  }
  if (d->denorm64)
    return 0;
  int keeps = 0;
  int rc = vrc_probe64(d, &keeps, err);
  if (rc != 0)
    return rc;
  if (!keeps) {
    d->wide_ok = 0;
    snprintf(d->wide_why, sizeof d->wide_why, "the device flushes float64 "
             "subnormals (no shaderDenormPreserveFloat64)");
  }
  return 0;
}

int wv_vk_wide_check(const wv_device *d, const wv_reduce_job *job,
                     wave_error *err)
{
  const wv_op_plan *o = wv_op_plan_of(job->dtype, job->op);
  if (o->row_bytes == 8 && !d->wide_ok)
    return wv_seterr(err, WAVE_EUNSUPPORTED, "vulkan: %.48s does not reduce "
                     "%s: %s", d->props.deviceName,
                     wave_dtype_name(job->dtype), d->wide_why);
  if (o->path == WV_PATH_ARG && !d->argm_ok)
    return wv_seterr(err, WAVE_EUNSUPPORTED, "vulkan: %.48s does not run "
                     "%s: %s", d->props.deviceName, wave_op_name(job->op),
                     d->wide_why);
  return 0;
}
