/* vk_wide.c - the 64-bit dtypes (uint64, sint64, float64) and argmin /
 * argmax (every dtype) on a Vulkan device (docs/reduction.md).
 *
 * The jobs go through vk_reduce.c's feed (rows of 8 bytes, masks applied
 * while copying, imported regions bound in place) and vk_rec.c's run; this
 * file holds what differs: the plan, the first-level dispatch, the levels
 * and the result of a wide plan, and what the device must have.
 *
 *  - uint64/sint64 ops and float64 min/max/extent: reduce_int.comp built
 *    with WV_ROW64=1, its order-free levels on 64-bit rows and keys (one
 *    partial per work-group);
 *  - the float64 sum: sum.comp (WV_ROW64=1) for the first level (G over 256
 *    rows, 16 lanes a group) and tree.comp (WV_ROW64=1) for the listed
 *    later levels
 *    (vk_rec.c's wv_vkr_fsum_levels), so the tree is float32's exactly;
 *  - argmin/argmax: argm.comp, (key, index, count) partials, reduced as the
 *    lexicographic minimum of (key, index).
 *
 * Device features.  Every wide shader uses 64-bit integers (shaderInt64),
 * the float64 sum also 64-bit floats (shaderFloat64), enabled at device
 * creation (vk_open.c) only where the device has them.  caps dtypes64 is
 * set only when the device has both: a backend whose caps say dtypes64
 * runs every 64-bit pair; argminmax needs shaderInt64 alone.  Sub-group
 * arithmetic on 64-bit values (the _SG variants) is used only where the
 * device reports shaderSubgroupExtendedTypes, else the shared-memory
 * variants; the float64 sum exchanges its doubles as 32-bit words, so its
 * shuffle needs only what sum_f32's does.  Subnormals: the _DN variants
 * declare DenormPreserve for 64-bit floats where the device promises
 * shaderDenormPreserveFloat64; elsewhere open() sums two subnormals first
 * (as vk_open.c does for float32) and a device that flushes them gets no
 * dtypes64.  A refused job is WAVE_EUNSUPPORTED naming the device and the
 * missing feature; the description (caps) says it once per device.
 */
#include <stdio.h>
#include <string.h>

#include "core/base.h"
#include "vk.h"
#include "vk_rec.h"

#define VW_NONE UINT64_MAX
#define VW_SUM64_UNITS (256u / WV_VK_SUM64_LANES) /* groups per work-group */

enum { VW_KIND_U = 0, VW_KIND_S = 1, VW_KIND_F = 2 };

void wv_vkw_make_plan(wave_dtype dt, wave_op op, wv_vkr_plan *p)
{
  memset(p, 0, sizeof *p);
  p->wide = 1;
  p->rs = wv_dtype_size(dt);
  int is_f = dt == WAVE_F32 || dt == WAVE_F64;
  if (op == WAVE_ARGMIN || op == WAVE_ARGMAX) {
    p->argm = 1;
    p->es = 32;
    unsigned kind = is_f ? VW_KIND_F
                  : dt == WAVE_S32 || dt == WAVE_S64 ? VW_KIND_S : VW_KIND_U;
    p->variant = (op == WAVE_ARGMAX) | kind << 1;
    p->key = kind;
    /* Unselected rows: NaN is never considered; an integer has no such
     * value, so a copy of the first selected row (vk_reduce.c). */
    p->fill = p->rs == 8 ? WV_F64_CANON_NAN : WV_F32_CANON_NAN;
    p->fill_dup = !is_f;
    return;
  }
  p->es = 8;
  p->key = dt == WAVE_S64 ? VR_KEY_SIGNED : is_f ? VR_KEY_FLOAT : VR_KEY_NONE;
  switch (op) {
  case WAVE_SUM:
    p->fsum = is_f;
    p->variant = VR_ADD;
    p->fill = p->fsum ? WV_F64_NEG_ZERO : 0;
    p->key = VR_KEY_NONE;
    break;
  case WAVE_MIN:    p->variant = VR_UMIN; p->fill_dup = 1; break;
  case WAVE_MAX:    p->variant = VR_UMAX; p->fill_dup = 1; break;
  case WAVE_EXTENT: p->variant = VR_EXTENT; p->fill_dup = 1; break;
  case WAVE_AND:    p->variant = VR_AND; p->fill = UINT64_MAX; break;
  case WAVE_OR:     p->variant = VR_OR; break;
  default:          p->variant = VR_XOR; break;
  }
  if (p->variant == VR_AND || p->variant == VR_OR || p->variant == VR_XOR)
    p->key = VR_KEY_NONE;
}

static wv_vk_range vw_whole(const wv_vk_buf *b)
{
  return (wv_vk_range){b->buf, 0, b->size};
}

static enum wv_vk_prog vw_argm_prog(const wv_device *d, unsigned rs)
{
  if (rs == 8)
    return d->sg64 ? WV_VK_ARGM64_SG : WV_VK_ARGM64_SM;
  return d->sg64 ? WV_VK_ARGM32_SG : WV_VK_ARGM32_SM;
}

int wv_vkw_level1(wv_device *d, wv_vkr_run *run, wv_vk_slot *s,
                  wv_vk_range src, uint32_t rows, uint64_t out_base,
                  wave_error *err)
{
  const wv_vkr_plan *pl = &run->plan;
  wv_vk_range dst = vw_whole(&d->part[0]);
  VkPipeline p;
  int rc;
  if (pl->fsum) {
    enum wv_vk_prog prog =
      d->sum64_shuffle ? (d->denorm64 ? WV_VK_SUM_F64_SH_DN : WV_VK_SUM_F64_SH)
                       : (d->denorm64 ? WV_VK_SUM_F64_SM_DN : WV_VK_SUM_F64_SM);
    if ((rc = wv_vk_pipeline(d, prog, 0, &p, err)) != 0)
      return rc;
    uint32_t push[3] = {rows, 0, (uint32_t)out_base};
    uint64_t rounds = wv_vkr_div(wv_vkr_div(rows, WV_GROUP), VW_SUM64_UNITS);
    return wv_vk_dispatch(d, s, p, src, dst, (wv_vk_range){0}, push,
                          sizeof push,
                          rounds < d->sum_groups ? rounds : d->sum_groups,
                          err);
  }
  /* One partial per work-group, the blocks of reduce_int.comp's bytes. */
  const uint64_t groups = wv_vk_stream_groups(d, (uint64_t)rows * pl->rs / 4);
  if (pl->argm) {
    if ((rc = wv_vk_pipeline(d, vw_argm_prog(d, pl->rs), pl->variant, &p,
                             err)) != 0)
      return rc;
    uint32_t push[4] = {rows, (uint32_t)out_base, (uint32_t)run->row0,
                        (uint32_t)(run->row0 >> 32)};
    return wv_vk_dispatch(d, s, p, src, dst, (wv_vk_range){0}, push,
                          sizeof push, groups, err);
  }
  if ((rc = wv_vk_pipeline(d, d->sg64 ? WV_VK_RED64_SG : WV_VK_RED64_SM,
                           pl->variant, &p, err)) != 0)
    return rc;
  uint32_t push[5] = {rows, 0, (uint32_t)out_base, (uint32_t)run->half,
                      pl->key};
  return wv_vk_dispatch(d, s, p, src, dst, (wv_vk_range){0}, push,
                        sizeof push, groups, err);
}

uint64_t wv_vkw_next(const wv_device *d, const wv_vkr_plan *p, uint64_t n)
{
  if (p->argm) {   /* argm.comp levels: up to 256 x 32 partials a group, so
                      a GPU's first-level partials (16 per SM) take one */
    uint64_t g = wv_vkr_div(n, 8192);
    return wv_vk_groups(d, g < d->stream_groups ? g : d->stream_groups);
  }
  return wv_vk_stream_groups(d, n * 2);   /* n 8-byte partials */
}

static uint64_t vw_round4(uint64_t a) { return (a + 3) & ~3ull; }

int wv_vkw_levels(wv_device *d, wv_vkr_run *run, wv_vk_slot *s,
                  wave_error *err)
{
  const wv_vkr_plan *pl = &run->plan;
  enum wv_vk_prog prog =
    pl->argm ? (d->sg64 ? WV_VK_ARGML_SG : WV_VK_ARGML_SM)
             : (d->sg64 ? WV_VK_RED64_SG : WV_VK_RED64_SM);
  VkPipeline p;
  int rc = wv_vk_pipeline(d, prog, pl->variant, &p, err);
  if (rc != 0)
    return rc;
  int ext = pl->variant == VR_EXTENT && !pl->argm;
  uint64_t n = run->partials, half = run->half;
  unsigned src = 0;
  while (n > 1) {
    wv_vk_barrier(s);
    uint64_t m = wv_vkw_next(d, pl, n);
    uint64_t half2 = ext ? vw_round4(m) : 0;
    uint32_t push[5] = {(uint32_t)n, (uint32_t)(half / 2), 0,
                        (uint32_t)half2, VR_KEY_NONE};
    if (pl->argm) {   /* argm.comp: n, out_off, row0 (unused) */
      push[1] = push[2] = push[3] = 0;
    }
    rc = wv_vk_dispatch(d, s, p, vw_whole(&d->part[src]),
                        vw_whole(&d->part[src ^ 1]), (wv_vk_range){0}, push,
                        pl->argm ? 16 : sizeof push, m, err);
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

/* Back from a key (64-bit) to the row's bits. */
static uint64_t vw_unkey(uint64_t k, uint32_t key)
{
  if (key == VR_KEY_SIGNED)
    return k ^ 0x8000000000000000u;
  if (key == VR_KEY_FLOAT)
    return (k & 0x8000000000000000u) ? (k & 0x7fffffffffffffffu) : ~k;
  return k;
}

/* argm.comp's key (argmax inverted) back to the row's bits, in the row's
 * own width. */
static uint64_t vw_unkey_arg(const wv_vkr_plan *p, uint64_t k)
{
  uint64_t top = p->rs == 8 ? 0x8000000000000000u : 0x80000000u;
  uint64_t mask = p->rs == 8 ? UINT64_MAX : 0xffffffffu;
  if (p->variant & 1)
    k = ~k & mask;
  if (p->key == VW_KIND_S)
    return k ^ top;
  if (p->key == VW_KIND_F)
    return (k & top) ? (k & ~top) : (~k & mask);
  return k;
}

void wv_vkw_result(const wv_vkr_run *run, const wv_device *d,
                   uint64_t count, wv_reduce_out *out)
{
  const uint64_t *r = d->result.map;
  const wv_vkr_plan *p = &run->plan;
  out->bits[0] = out->bits[1] = 0;
  out->count = count;
  if (p->argm) {
    out->index = -1;
    /* floats: the rows considered, counted by the shader (fills are NaN);
     * integers: every selected row (fills are copies) */
    if (count == 0 || r[1] == VW_NONE) {
      out->count = 0;
      return;
    }
    if (p->key == VW_KIND_F)
      out->count = r[2];
    out->index = (int64_t)r[1];
    out->bits[0] = vw_unkey_arg(p, r[0]);
    return;
  }
  if (count == 0)
    return;
  if (p->fsum) {
    double f;
    memcpy(&f, &r[0], sizeof f);
    out->bits[0] = wv_f64_sum_finish(f, count);
    return;
  }
  uint32_t key = p->key;
  switch (p->variant) {
  case VR_UMIN:
  case VR_EXTENT:
    if (key == VR_KEY_FLOAT && r[0] == UINT64_MAX)
      return;   /* no finite value */
    out->bits[0] = vw_unkey(r[0], key);
    if (p->variant == VR_EXTENT)
      out->bits[1] = vw_unkey(r[1], key);
    break;
  case VR_UMAX:
    if (key == VR_KEY_FLOAT && r[0] == 0)
      return;
    out->bits[0] = vw_unkey(r[0], key);
    break;
  default:
    out->bits[0] = r[0];
    break;
  }
}

/* ---- open and refusals ---------------------------------------------------- */

/* Sum two float64 subnormals: 3 ulp + (-1 ulp) is 2 ulp; a device that
 * flushes inputs or output gives 0. */
static int vw_probe64(wv_device *d, int *keeps, wave_error *err)
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
  int rc = vw_probe64(d, &keeps, err);
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
  int arg = job->op == WAVE_ARGMIN || job->op == WAVE_ARGMAX;
  if (wv_dtype_size(job->dtype) == 8 && !d->wide_ok)
    return wv_seterr(err, WAVE_EUNSUPPORTED, "vulkan: %.48s does not reduce "
                     "%s: %s", d->props.deviceName,
                     wave_dtype_name(job->dtype), d->wide_why);
  if (arg && !d->argm_ok)
    return wv_seterr(err, WAVE_EUNSUPPORTED, "vulkan: %.48s does not run "
                     "%s: %s", d->props.deviceName, wave_op_name(job->op),
                     d->wide_why);
  return 0;
}
