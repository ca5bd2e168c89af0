/* vk_reduce.c - reductions on a Vulkan device (docs/reduction.md).
 *
 * The input arrives in host memory, in chunks.  It is copied into the two
 * host-visible staging windows in turn (the device reads window k while the
 * host fills window k + 1), and each window gets one first-level dispatch
 * that writes its partials into a device-local buffer; the later levels run
 * after the last window in the same command buffer, and only the final
 * value(s) come back.  A window is at most 16 MiB and never more than
 * maxStorageBufferRange, so inputs of any size are bound window by window.
 *
 * Rows in host memory imported for the device (a shared-memory region,
 * vk_pin.c) need no copy: the first-level dispatch binds a window of the
 * imported buffer in place instead of a staging window (vr_cut_chunk says
 * which runs qualify: the offset alignment, and the float sum's group
 * boundaries below), and whatever does not qualify is staged as before, in
 * the same logical order.  The shaders see the same rows either way, so
 * the bits are the same; only the order-free ops' partial counts differ,
 * which cannot change their results.  Jobs with a mask are always staged.
 *
 * The job's transfer (wv_reduce_out.transfer_s, the daemon's `transfer`
 * phase) is the host's copying into the staging windows, timed by the
 * wall clock around each window's fill (the mask applied, the float sum's
 * padding written): it overlaps the device's work on the other window.
 * Rows read in place add nothing; how the device then reads a window
 * (host-visible memory, over the bus on a discrete GPU) is its dispatch's
 * time, not the transfer's.
 *
 * The mask is applied while copying: a row the mask does not select is
 * written as a value that cannot change the result, so the device never
 * reads the mask (half the transfer) and the mask's chunk boundaries never
 * matter (it is walked by logical row index alongside the input):
 *  - sum, or, xor: 0; and: all ones; float sum: -0.0, the leaf the page
 *    prescribes for an unselected row;
 *  - min, max, extent: a copy of the first selected row.  These ops are
 *    idempotent, so one more copy of a selected value changes nothing, and
 *    it serves as identity for both halves of extent at once.
 * The count of selected rows is taken in the same loop.
 *
 * Order-free ops (everything but the float sum) and the exact sum fsum
 * (vk_xsum.c; its unselected rows are -0.0, which adds nothing) treat the
 * chunks as one stream.  The float sum keeps each chunk's own groups: in the staging
 * window every chunk starts on a 256-row boundary and its last group is
 * padded with -0.0, so the first level is uniform (partial p = rows
 * [256 p, 256 p + 256) of the padded stream) and chunk c owns partials
 * [s_c, s_c + m_c).  The later levels list their groups explicitly
 * (tree.comp): each chunk's levels, then the levels over the chunk
 * values in chunk order.  A level over a chunk that is already down to one
 * value still runs G on it, padded with -0.0: x + -0.0 == x for every x, so
 * this gives the bits of not running it (a NaN stays a NaN and is made
 * canonical at the end).
 *
 * Rows are 4 or 8 bytes (the 64-bit dtypes): everything here counts rows
 * of the plan's size, rs.  argmin/argmax fill unselected rows with NaN
 * (floats: not considered) or, for integers, with a copy of the first
 * selected row; a copy placed before that row could take the index, so the
 * index is raised to that row's afterwards (any other row with the same
 * value has a higher index).
 *
 * The plan (the op table's row), the levels and the read-back are
 * recorded by vk_rec.c, for every dtype and op; this file feeds the first
 * level from host memory.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/base.h"
#include "vk.h"
#include "vk_rec.h"
#include "core/reduce.h"

/* Runs of imported rows shorter than this are staged (vr_cut_chunk): each
 * in-place run is a window of its own (one submission), while short staged
 * runs share a window; 64 KiB is a few microseconds of copy. */
#define VR_MIN_INPLACE_ROWS 16384u

/* ---- walking chunks by logical row --------------------------------------- */

typedef struct vr_cursor {
  const wv_span *c;
  size_t n, i;        /* chunk i of n */
  uint64_t k;         /* row inside chunk i */
  unsigned rs;        /* bytes per row */
} vr_cursor;

/* Rows available contiguously at the cursor (skipping empty chunks). */
static uint64_t vr_avail(vr_cursor *cu, const uint32_t **p)
{
  while (cu->i < cu->n && cu->k >= cu->c[cu->i].rows) {
    cu->i++;
    cu->k = 0;
  }
  if (cu->i >= cu->n)
    return 0;
  *p = (const uint32_t *)cu->c[cu->i].data + cu->k * (cu->rs / 4);
  return cu->c[cu->i].rows - cu->k;
}

typedef struct vr_feed {
  vr_cursor in, mask;
  int has_mask;
  uint64_t fill;
  uint64_t count;     /* selected rows copied so far */
  uint64_t taken;     /* rows copied so far */
} vr_feed;

/* Masked copy of k rows of 8 bytes, as 32-bit halves (rows are only
 * 4-byte aligned); returns the rows selected. */
static uint64_t vr_mask8(uint32_t *dst, const uint32_t *src,
                         const uint32_t *m, uint64_t k, uint64_t fill)
{
  uint64_t cnt = 0;
  const uint32_t lo = (uint32_t)fill, hi = (uint32_t)(fill >> 32);
  for (uint64_t j = 0; j < k; j++) {
    uint32_t sel = m[j] != 0;
    dst[2 * j] = sel ? src[2 * j] : lo;
    dst[2 * j + 1] = sel ? src[2 * j + 1] : hi;
    cnt += sel;
  }
  return cnt;
}

/* Copy the next `rows` rows (they exist) into dst, masking as planned. */
static void vr_copy(vr_feed *f, uint32_t *dst, uint64_t rows)
{
  const unsigned w = f->in.rs / 4;   /* words per row */
  while (rows > 0) {
    const uint32_t *src = NULL, *m = NULL;  /* set: the rows exist */
    uint64_t k = vr_avail(&f->in, &src);
    if (k > rows)
      k = rows;
    if (!f->has_mask) {
      memcpy(dst, src, k * f->in.rs);
      f->count += k;
    } else {
      uint64_t km = vr_avail(&f->mask, &m);
      if (k > km)
        k = km;
      uint64_t cnt = 0;
      const uint32_t fill = (uint32_t)f->fill;
      if (w == 2)
        cnt = vr_mask8(dst, src, m, k, f->fill);
      else
        for (uint64_t j = 0; j < k; j++) {
          uint32_t sel = m[j] != 0;
          dst[j] = sel ? src[j] : fill;
          cnt += sel;
        }
      f->count += cnt;
      f->mask.k += k;
    }
    f->in.k += k;
    f->taken += k;
    dst += k * w;
    rows -= k;
  }
}

/* n rows of value v (rs bytes each) at dst. */
static void vr_fill_rows(uint32_t *dst, uint64_t n, uint64_t v, unsigned rs)
{
  if (rs == 4) {
    for (uint64_t j = 0; j < n; j++)
      dst[j] = (uint32_t)v;
    return;
  }
  for (uint64_t j = 0; j < n; j++) {
    dst[2 * j] = (uint32_t)v;
    dst[2 * j + 1] = (uint32_t)(v >> 32);
  }
}

/* Logical index of the first selected row, or rows when there is none. */
static uint64_t vr_first_selected(const wv_reduce_job *job)
{
  uint64_t base = 0;
  for (size_t i = 0; i < job->n_mask; i++) {
    const uint32_t *m = job->mask[i].data;
    for (uint64_t k = 0; k < job->mask[i].rows; k++)
      if (m[k] != 0)
        return base + k;
    base += job->mask[i].rows;
  }
  return job->rows;
}

static uint64_t vr_row_at(const wv_reduce_job *job, uint64_t row)
{
  const unsigned rs = wv_dtype_size(job->dtype);
  for (size_t i = 0; i < job->n_input; i++) {
    if (row < job->input[i].rows) {
      uint64_t v = 0;   /* little-endian: the low bytes */
      memcpy(&v, (const unsigned char *)job->input[i].data + row * rs, rs);
      return v;
    }
    row -= job->input[i].rows;
  }
  return 0;
}

/* ---- jobs from host memory ----------------------------------------------- */

/* The input as pieces, in logical row order: runs of rows staged through
 * the windows, and runs bound in place from an imported buffer (vk_pin.c),
 * each of the latter at most one window of the device and inside one
 * chunk.  Staged runs next to each other are merged. */
typedef struct vr_piece {
  VkBuffer buf;        /* VK_NULL_HANDLE: staged */
  VkDeviceSize off;    /* in place: byte offset of the first row in buf */
  uint64_t rows;
} vr_piece;

typedef struct vr_pieces {
  vr_piece *p;
  size_t n, cap;
} vr_pieces;

static int vr_push(vr_pieces *ps, VkBuffer buf, VkDeviceSize off,
                   uint64_t rows, wave_error *err)
{
  if (rows == 0)
    return 0;
  if (buf == VK_NULL_HANDLE && ps->n > 0 &&
      ps->p[ps->n - 1].buf == VK_NULL_HANDLE) {
    ps->p[ps->n - 1].rows += rows;
    return 0;
  }
  if (ps->n == ps->cap) {
    size_t cap = ps->cap ? 2 * ps->cap : 16;
    vr_piece *np = realloc(ps->p, cap * sizeof *np);
    if (np == NULL)
      return wv_seterr(err, WAVE_ENOMEM, NULL);
    ps->p = np;
    ps->cap = cap;
  }
  ps->p[ps->n++] = (vr_piece){buf, off, rows};
  return 0;
}

/* Rows per in-place window: on a GPU as large as the device binds, up to
 * 2^28 rows (as vr_resident_window, vk_rec.c), fewer dispatch tails; on a CPU
 * driver, and in tests, the staging window's size (lavapipe, 256 MiB
 * region, against the same run's copy path: f32 sum 0.85-0.95 with 2^25-row
 * windows, 1.11-1.17 with 2^22; the integer ops gained either way).  A
 * multiple of 1024 rows (4 KiB), so that a window that follows another
 * inside one piece starts aligned and on a 256-row group boundary. */
uint64_t wv_vk_inplace_window(const wv_device *d)
{
  if (d->opt.window_rows != 0 ||
      d->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU)
    return d->window_rows;
  uint64_t w = d->props.limits.maxStorageBufferRange / 4;
  if (w > (1u << 28))
    w = 1u << 28;
  w = w / 1024 * 1024;
  return w < 1024 ? 1024 : w;
}

/* Cut chunk c into pieces.  A run is bound in place where its rows lie in
 * one imported piece and:
 *  - its first row's offset in the piece's buffer is a multiple of
 *    minStorageBufferOffsetAlignment (and of 16: the shaders read 16-byte
 *    vectors);
 *  - float sum: it starts on a 256-row group boundary of its chunk, and
 *    ends on one or at the chunk's end (a group straddling a piece's end
 *    is staged: the staging window gives it a group of its own);
 * everything else is staged: unaligned heads, rows in no piece, a
 * float-sum chunk whose groups all start off the alignment (a chunk
 * starting at a misaligned address, when the alignment divides 1 KiB), and
 * runs shorter than VR_MIN_INPLACE_ROWS (so that a job of many small chunks
 * is not one submission per chunk: staged, they share windows). */
static int vr_cut_chunk(const wv_device *d, const wv_span *c, int fsum,
                        unsigned rs, vr_pieces *ps, wave_error *err)
{
  uint64_t A = d->props.limits.minStorageBufferOffsetAlignment;
  if (A < 16)
    A = 16;
  const uint64_t Wd = wv_vk_inplace_window(d) * 4 / rs, n = c->rows;
  const uint64_t min_rows = d->opt.inplace_min_rows != 0
                              ? d->opt.inplace_min_rows : VR_MIN_INPLACE_ROWS;
  const unsigned char *base = c->data;
  uint64_t at = 0;
  int rc = 0;
  while (at < n && rc == 0) {
    const unsigned char *p = base + at * rs, *next;
    const wv_vk_pin *pin = wv_vk_pin_find(d, p, &next);
    uint64_t stage = 0, direct = 0;
    if (pin == NULL) {
      uint64_t to_next = next != NULL ? (uint64_t)(next - p + rs - 1) / rs
                                      : n;
      stage = to_next < n - at ? to_next : n - at;
    } else {
      const VkDeviceSize off = (VkDeviceSize)(p - pin->lo);
      const uint64_t in_pin = (uint64_t)(pin->hi - p) / rs;
      uint64_t t = in_pin < n - at ? in_pin : n - at;
      if (!fsum) {
        if (off % A != 0) {
          uint64_t to_aligned = (A - off % A + rs - 1) / rs;
          stage = to_aligned < t ? to_aligned : t;
        } else {
          direct = t;
        }
      } else if (at % WV_GROUP != 0) {
        uint64_t to_group = WV_GROUP - at % WV_GROUP;
        stage = to_group < n - at ? to_group : n - at;
      } else if (off % A != 0) {
        stage = WV_GROUP * rs % A == 0
                  ? n - at : (WV_GROUP < n - at ? WV_GROUP : n - at);
      } else {
        direct = at + t < n ? t / WV_GROUP * WV_GROUP : t;
        if (direct == 0)
          stage = WV_GROUP < n - at ? WV_GROUP : n - at;
      }
      if (direct > 0 && direct < min_rows) {
        stage = direct;   /* a short run: a copy costs less than a window */
        direct = 0;
      }
      for (uint64_t u = 0; u < direct && rc == 0; u += Wd)
        rc = vr_push(ps, pin->buf, off + u * rs,
                     direct - u < Wd ? direct - u : Wd, err);
    }
    if (rc == 0)
      rc = vr_push(ps, VK_NULL_HANDLE, 0, stage, err);
    at += stage + direct;
  }
  return rc;
}

/* The whole job's pieces: one staged run when nothing is imported or the
 * job has a mask (the mask is applied while copying). */
static int vr_plan_pieces(const wv_device *d, const wv_reduce_job *job,
                          int fsum, vr_pieces *ps, wave_error *err)
{
  if (job->has_mask || d->n_pins == 0)
    return vr_push(ps, VK_NULL_HANDLE, 0, job->rows, err);
  int rc = 0;
  const unsigned rs = wv_dtype_size(job->dtype);
  for (size_t i = 0; i < job->n_input && rc == 0; i++)
    rc = vr_cut_chunk(d, &job->input[i], fsum, rs, ps, err);
  return rc;
}

/* The feed past `rows` rows bound in place (one chunk, no mask). */
static int vr_skip(vr_feed *f, uint64_t rows, wave_error *err)
{
  const uint32_t *p;
  if (vr_avail(&f->in, &p) < rows)
    return wv_seterr(err, WAVE_EINTERNAL, "vulkan: an in-place window "
                     "crosses its chunk");
  f->in.k += rows;
  f->taken += rows;
  f->count += rows;
  return 0;
}

/* Fill one float-sum window with up to lim rows: whole chunks (or their
 * next part), each from a 256-row boundary, last groups padded with -0.0.
 * A stop at lim is on a group boundary of its chunk (vr_cut_chunk), so the
 * window still holds whole groups.  Returns the rows written. */
static uint64_t vr_fill_fsum(vr_feed *f, uint32_t *dst, uint64_t cap,
                             uint64_t lim)
{
  uint64_t used = 0, took = 0;
  const unsigned rs = f->in.rs, w = rs / 4;
  while (used < cap && took < lim) {
    const uint32_t *p;
    uint64_t avail = vr_avail(&f->in, &p);  /* rest of the chunk */
    if (avail == 0)
      break;
    uint64_t k = avail < cap - used ? avail : cap - used;
    if (k > lim - took)
      k = lim - took;
    vr_copy(f, dst + used * w, k);
    used += k;
    took += k;
    if (k == avail) {
      uint64_t pad = (WV_GROUP - used % WV_GROUP) % WV_GROUP;
      vr_fill_rows(dst + used * w, pad,
                   rs == 8 ? WV_F64_NEG_ZERO : WV_F32_NEG_ZERO, rs);
      used += pad;
    }
  }
  return used;
}

/* The run's first-level partials: the float sum's per chunk (seg_off,
 * seg_n), else those of the windows of wv_vk_reduce's loop, counted the
 * same way. */
static int vr_count_partials(const wv_device *d, const wv_reduce_job *job,
                             const vr_pieces *ps, uint64_t W, wv_vkr_run *run,
                             wave_error *err)
{
  if (!run->plan.fsum) {
    run->slots = run->plan.wide ? 1 : wv_vkr_slots(d);
    for (size_t i = 0; i < ps->n; i++) {
      uint64_t step = ps->p[i].buf != VK_NULL_HANDLE ? ps->p[i].rows : W;
      for (uint64_t r = 0; r < ps->p[i].rows; r += step) {
        uint64_t k = ps->p[i].rows - r < step ? ps->p[i].rows - r : step;
        run->partials += wv_vkr_window_partials(d, run, k);
      }
    }
    return 0;
  }
  for (size_t i = 0; i < job->n_input; i++)
    run->n_segs += job->input[i].rows > 0;
  run->seg_off = malloc(run->n_segs * sizeof *run->seg_off);
  run->seg_n = malloc(run->n_segs * sizeof *run->seg_n);
  if (run->seg_off == NULL || run->seg_n == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  size_t k = 0;
  for (size_t i = 0; i < job->n_input; i++) {
    if (job->input[i].rows == 0)
      continue;
    run->seg_off[k] = run->partials;
    run->seg_n[k] = wv_vkr_div(job->input[i].rows, WV_GROUP);
    run->partials += run->seg_n[k++];
  }
  return 0;
}

static double vr_now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int wv_vk_reduce(wv_device *d, const wv_reduce_job *job, wv_reduce_out *out,
                 wave_error *err)
{
  const double trace_t0 = d->trace ? vr_now_ms() : 0;
  const uint64_t inplace0 = d->inplace_rows;
  memset(out, 0, sizeof *out);
  out->n_values = wave_op_values(job->op);
  wv_vkr_run run;
  memset(&run, 0, sizeof run);
  wv_vkr_make_plan(job->dtype, job->op, &run.plan);
  if (run.plan.argm)
    out->index = -1;
  if (run.plan.xsum)   /* the empty sum, until windows run */
    wv_vk_xsum_result(&run, d, 0, out);
  int rw = run.plan.xsum ? wv_vk_xsum_check(d, err)
         : run.plan.wide ? wv_vk_wide_check(d, job, err) : 0;
  if (rw != 0)
    return rw;
  if (job->rows == 0)
    return 0;
  if (run.plan.fsum && !run.plan.wide && !d->fsum_ok)
    return wv_seterr(err, WAVE_EUNSUPPORTED, "vulkan: float sum: %s",
                     d->fsum_why);
  const unsigned rs = run.plan.rs;
  vr_feed feed = {
    .in = {job->input, job->n_input, 0, 0, rs},
    .mask = {job->mask, job->n_mask, 0, 0, 4},
    .has_mask = job->has_mask,
    .fill = run.plan.fill,
  };
  uint64_t first = 0;
  if (job->has_mask) {
    first = vr_first_selected(job);
    if (first == job->rows)
      return 0;   /* nothing selected: zeros, count 0 */
    if (run.plan.fill_dup)
      feed.fill = vr_row_at(job, first);
  }

  const uint64_t W = (uint64_t)d->window_rows * 4 / rs;
  vr_pieces ps = {0};
  int rc = vr_plan_pieces(d, job, run.plan.fsum, &ps, err);
  if (rc != 0 || (rc = vr_count_partials(d, job, &ps, W, &run, err)) != 0 ||
      (rc = wv_vkr_reserve(d, &run, err)) != 0)
    goto out;

  uint64_t base = 0;
  double xfer_ms = 0;   /* the staging copies' time: out->transfer_s */
  for (size_t i = 0; i < ps.n; i++) {
    const vr_piece *pc = &ps.p[i];
    uint64_t left = pc->rows;
    while (left > 0) {
      wv_vk_slot *s;
      if ((rc = wv_vk_slot_begin(d, &s, err)) != 0)
        goto out;
      uint64_t rows, took;
      wv_vk_range src = {s->stage.buf, 0, 0};
      run.row0 = feed.taken;
      if (pc->buf != VK_NULL_HANDLE) {
        rows = took = left;   /* one window (vr_cut_chunk) */
        if ((rc = vr_skip(&feed, rows, err)) != 0)
          goto out;
        src = (wv_vk_range){pc->buf, pc->off, rows * rs};
        d->inplace_rows += rows;
      } else if (run.plan.fsum) {
        uint64_t t0 = feed.taken;
        double c0 = vr_now_ms();
        rows = vr_fill_fsum(&feed, s->stage.map, W, left);
        xfer_ms += vr_now_ms() - c0;
        took = feed.taken - t0;
      } else {
        rows = took = left < W ? left : W;
        double c0 = vr_now_ms();
        vr_copy(&feed, s->stage.map, rows);
        xfer_ms += vr_now_ms() - c0;
      }
      if (took == 0 || took > left) {
        rc = wv_seterr(err, WAVE_EINTERNAL, "vulkan: reduce pieces out of "
                       "step with the input");
        goto out;
      }
      left -= took;
      if (pc->buf == VK_NULL_HANDLE)
        src.size = rows * rs;
      if ((rc = wv_vkr_level1(d, &run, s, src, (uint32_t)rows, base,
                              err)) != 0)
        goto out;
      base += wv_vkr_window_partials(d, &run, rows);
      if (feed.taken == job->rows &&
          (rc = wv_vkr_finish(d, &run, s, err)) != 0)
        goto out;
      if ((rc = wv_vk_slot_submit(d, s, err)) != 0)
        goto out;
    }
  }
  if ((rc = wv_vk_wait_all(d, err)) != 0)
    goto out;
  wv_vkr_result(&run, d, job->has_mask ? feed.count : job->rows, out);
  if (run.plan.argm && run.plan.fill_dup && job->has_mask &&
      out->index >= 0 && (uint64_t)out->index < first)
    out->index = (int64_t)first;   /* a fill copy before the first row */
  out->transfer_s = xfer_ms / 1e3;
out:
  if (d->trace)
    fprintf(stderr, "vulkan trace: %" PRIu64 " rows%s in %zu chunks: %zu "
            "pieces, %" PRIu64 " rows in place, %" PRIu64 " staged, "
            "%.2f ms (rc %d)\n", job->rows, job->has_mask ? " masked" : "",
            job->n_input, ps.n, d->inplace_rows - inplace0,
            job->rows - (d->inplace_rows - inplace0), vr_now_ms() - trace_t0, rc);
  free(ps.p);
  free(run.seg_off);
  free(run.seg_n);
  return rc;
}
