/* ocl_reduce.c - reductions on an OpenCL device (docs/reduction.md).
 *
 * Rows arrive in host memory.  They are copied into one of two pinned
 * staging buffers in turn (windows of window_rows rows, 2^24 by default),
 * each written to its device buffer without blocking, and each window gets
 * one first-level launch writing partials into a device buffer that holds
 * the whole job's partials; the host fills window k + 1 while the device
 * copies and reduces window k.  Only the result comes back (8 bytes).
 *
 * The mask is applied while copying, walked by logical row beside the
 * input, so its chunk boundaries never matter and the device never reads
 * it: an unselected row is written as a value that cannot change the
 * result (sum/or/xor 0, and all ones, float sum -0.0, which is the leaf of
 * an unselected row; min/max/extent a copy of the first selected row, since
 * those ops are idempotent).  The selected count is taken in the same walk;
 * a mask that selects nothing gives the empty result without device work.
 *
 * Order-free ops treat the chunks as one stream (padded at the end to whole
 * 16-byte vectors with the same fill); red_finish folds the partials.  The
 * float sum lays every non-empty chunk out on a 256-row boundary of a
 * virtual row space, padded with -0.0, so chunk c owns a contiguous run of
 * first-level values; later levels are fsum_tree passes over listed runs:
 * each chunk's levels, then the levels over the chunk values in chunk
 * order (a run of one value passes through: G of one value padded with
 * -0.0 is that value).
 *
 * Jobs that wv_reduce_is_wide names (64-bit dtypes, argmin/argmax) go to
 * ocl_wide.c, which shares the staging buffers and the level plan above.
 */
#include <stdlib.h>
#include <string.h>

#include "ocl.h"
#include "core/base.h"
#include "core/reduce.h"

#define OR_GROUPS_PER_CU 8u

/* ---- staging ------------------------------------------------------------- */

int wv_ocl_stage_get(wv_device *d, unsigned s, size_t bytes, void **map,
                        wave_error *err)
{
  wv_ocl_stage *st = &d->stage[s];
  cl_int e;
  if (st->done != NULL) {
    e = clWaitForEvents(1, &st->done);
    clReleaseEvent(st->done);
    st->done = NULL;
    if (e != CL_SUCCESS)
      return wv_ocl_fail(err, e, "clWaitForEvents(staging)");
  }
  if (st->size < bytes) {
    if (st->map != NULL)
      clEnqueueUnmapMemObject(d->q, st->host, st->map, 0, NULL, NULL);
    if (st->host != NULL)
      clReleaseMemObject(st->host);
    if (st->dev != NULL)
      clReleaseMemObject(st->dev);
    memset(st, 0, sizeof *st);
    st->host = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE |
                              CL_MEM_ALLOC_HOST_PTR, bytes, NULL, &e);
    if (st->host == NULL)
      return wv_ocl_fail(err, e, "clCreateBuffer(staging)");
    st->map = clEnqueueMapBuffer(d->q, st->host, CL_TRUE, CL_MAP_WRITE, 0,
                                 bytes, 0, NULL, NULL, &e);
    if (st->map == NULL)
      return wv_ocl_fail(err, e, "clEnqueueMapBuffer(staging)");
    st->dev = clCreateBuffer(d->ctx, CL_MEM_READ_ONLY, bytes, NULL, &e);
    if (st->dev == NULL)
      return wv_ocl_fail(err, e, "clCreateBuffer(window)");
    st->size = bytes;
  }
  *map = st->map;
  return 0;
}

/* Send `bytes` of stage s to its device buffer (no wait). */
int wv_ocl_stage_send(wv_device *d, unsigned s, size_t bytes,
                         wave_error *err)
{
  wv_ocl_stage *st = &d->stage[s];
  cl_int e = clEnqueueWriteBuffer(d->q, st->dev, CL_FALSE, 0, bytes, st->map,
                                  0, NULL, &st->done);
  if (e != CL_SUCCESS)
    return wv_ocl_fail(err, e, "clEnqueueWriteBuffer(window)");
  return 0;
}

void wv_ocl_reduce_free(wv_device *d)
{
  for (unsigned s = 0; s < 2; s++) {
    wv_ocl_stage *st = &d->stage[s];
    if (st->done != NULL) {
      clWaitForEvents(1, &st->done);
      clReleaseEvent(st->done);
    }
    if (st->map != NULL)
      clEnqueueUnmapMemObject(d->q, st->host, st->map, 0, NULL, NULL);
    if (d->q != NULL)
      clFinish(d->q);
    if (st->host != NULL)
      clReleaseMemObject(st->host);
    if (st->dev != NULL)
      clReleaseMemObject(st->dev);
    memset(st, 0, sizeof *st);
  }
  wv_ocl_buf_free(&d->part);
  wv_ocl_buf_free(&d->part2);
  wv_ocl_buf_free(&d->desc);
  wv_ocl_buf_free(&d->result);
}

/* ---- walking the input and the mask -------------------------------------- */

typedef struct or_walk {
  const wv_reduce_job *job;
  size_t c;          /* input chunk */
  uint64_t off;      /* row within it */
  size_t mc;         /* mask chunk */
  uint64_t moff;
  uint32_t fill;     /* written for unselected rows */
  uint64_t selected;
} or_walk;

static uint32_t or_row(const void *data, uint64_t i)
{
  uint32_t v;
  memcpy(&v, (const char *)data + 4 * i, 4);
  return v;
}

/* Copy n rows of the current chunk (n <= rows left in it) into dst,
 * applying the mask. */
static void or_copy(or_walk *w, uint32_t *dst, uint64_t n)
{
  const wv_span *in = &w->job->input[w->c];
  const char *src = (const char *)in->data + 4 * w->off;
  if (!w->job->has_mask) {
    memcpy(dst, src, 4 * n);
    w->selected += n;
  } else {
    uint64_t i = 0;
    while (i < n) {
      while (w->moff == w->job->mask[w->mc].rows) {
        w->mc++;
        w->moff = 0;
      }
      const wv_span *m = &w->job->mask[w->mc];
      uint64_t k = m->rows - w->moff;
      if (k > n - i)
        k = n - i;
      const char *mp = (const char *)m->data + 4 * w->moff;
      for (uint64_t j = 0; j < k; j++) {
        uint32_t mv, v;
        memcpy(&mv, mp + 4 * j, 4);
        memcpy(&v, src + 4 * (i + j), 4);
        dst[i + j] = mv != 0 ? v : w->fill;
        w->selected += mv != 0;
      }
      w->moff += k;
      i += k;
    }
  }
  w->off += n;
}

/* The first selected row's value (order-free ops' fill for min/max/
 * extent); 0 when no row is selected. */
static int or_first_selected(const wv_reduce_job *job, uint32_t *v)
{
  uint64_t row = 0;
  for (size_t c = 0; c < job->n_mask; c++) {
    const wv_span *m = &job->mask[c];
    for (uint64_t j = 0; j < m->rows; j++, row++)
      if (or_row(m->data, j) != 0) {
        uint64_t r = row;
        for (size_t i = 0; i < job->n_input; i++) {
          if (r < job->input[i].rows) {
            *v = or_row(job->input[i].data, r);
            return 1;
          }
          r -= job->input[i].rows;
        }
      }
  }
  return 0;
}

/* ---- order-free ops ------------------------------------------------------ */

static int or_kernel(wave_dtype dt, wave_op op)
{
  switch (op) {
  case WAVE_SUM: return WV_OCL_RED_SUM;
  case WAVE_AND: return WV_OCL_RED_AND;
  case WAVE_OR: return WV_OCL_RED_OR;
  case WAVE_XOR: return WV_OCL_RED_XOR;
  case WAVE_MIN: return dt == WAVE_U32 ? WV_OCL_RED_UMIN
                      : dt == WAVE_S32 ? WV_OCL_RED_SMIN : WV_OCL_RED_FMIN;
  case WAVE_MAX: return dt == WAVE_U32 ? WV_OCL_RED_UMAX
                      : dt == WAVE_S32 ? WV_OCL_RED_SMAX : WV_OCL_RED_FMAX;
  default: return dt == WAVE_U32 ? WV_OCL_RED_UEXT
                : dt == WAVE_S32 ? WV_OCL_RED_SEXT : WV_OCL_RED_FEXT;
  }
}

static cl_uint or_finish_op(wave_op op)
{
  switch (op) {
  case WAVE_SUM: return 0;
  case WAVE_MIN: return 1;
  case WAVE_MAX: return 2;
  case WAVE_AND: return 3;
  case WAVE_OR: return 4;
  case WAVE_XOR: return 5;
  default: return 6;
  }
}

static uint32_t or_groups(const wv_device *d, uint64_t nvec)
{
  uint64_t want = (nvec + 4 * WV_OCL_WG - 1) / (4 * WV_OCL_WG);
  uint64_t cap = (uint64_t)d->units * (d->gpu ? OR_GROUPS_PER_CU : 2);
  if (want > cap)
    want = cap;
  return want ? (uint32_t)want : 1;
}

/* One first-level pass over nvec vectors of in, partials at part0; adds
 * the partials written to *np. */
static int or_pass(wv_device *d, cl_kernel k, cl_mem in, uint64_t nvec,
                   cl_uint *np, cl_event *ev, wave_error *err)
{
  uint32_t g = or_groups(d, nvec);
  int rv;
  if ((size_t)(*np + g) * 8 > d->part.size)   /* the caller reserves */
    return wv_seterr(err, WAVE_EINTERNAL, "opencl: partials overflow");
  cl_ulong nv = nvec;
  clSetKernelArg(k, 0, sizeof in, &in);
  clSetKernelArg(k, 1, sizeof nv, &nv);
  clSetKernelArg(k, 2, sizeof d->part.mem, &d->part.mem);
  clSetKernelArg(k, 3, sizeof *np, np);
  if ((rv = wv_ocl_launch(d, k, (size_t)g * WV_OCL_WG, WV_OCL_WG, ev, err)))
    return rv;
  *np += g;
  return 0;
}

/* Fold np partials and read the two key words back. */
static int or_finish(wv_device *d, cl_uint np, wave_op op, uint32_t keys[2],
                     cl_event *ev, wave_error *err)
{
  int rv = wv_ocl_buf_reserve(d, &d->result, 16, err);
  if (rv != 0)
    return rv;
  cl_kernel k = d->k[WV_OCL_RED_FINISH];
  cl_uint fop = or_finish_op(op);
  clSetKernelArg(k, 0, sizeof d->part.mem, &d->part.mem);
  clSetKernelArg(k, 1, sizeof np, &np);
  clSetKernelArg(k, 2, sizeof fop, &fop);
  clSetKernelArg(k, 3, sizeof d->result.mem, &d->result.mem);
  if ((rv = wv_ocl_launch(d, k, WV_OCL_WG, WV_OCL_WG, ev, err)) != 0)
    return rv;
  cl_int e = clEnqueueReadBuffer(d->q, d->result.mem, CL_TRUE, 0, 8, keys, 0,
                                 NULL, NULL);
  if (e != CL_SUCCESS)
    return wv_ocl_fail(err, e, "clEnqueueReadBuffer(result)");
  return 0;
}

/* Result bits from the keys (docs/reduction.md; ocl.h for the keys). */
static void or_decode(wave_dtype dt, wave_op op, const uint32_t keys[2],
                      wv_reduce_out *out)
{
  out->n_values = op == WAVE_EXTENT ? 2 : 1;
  out->bits[0] = keys[0];
  out->bits[1] = keys[1];
  if (op != WAVE_MIN && op != WAVE_MAX && op != WAVE_EXTENT)
    return;
  for (unsigned i = 0; i < out->n_values; i++) {
    uint32_t k = keys[i];
    int is_min = op == WAVE_MIN || (op == WAVE_EXTENT && i == 0);
    if (dt == WAVE_S32) {
      out->bits[i] = k ^ 0x80000000u;
    } else if (dt == WAVE_F32) {
      if ((is_min && k == 0xffffffffu) || (!is_min && k == 0))
        out->bits[i] = 0;   /* no finite row */
      else
        out->bits[i] = (k & 0x80000000u) ? (k & 0x7fffffffu) : ~k;
    }
  }
}

static int or_orderfree(wv_device *d, const wv_reduce_job *job,
                        wv_reduce_out *out, wave_error *err)
{
  or_walk w = {.job = job};
  switch (job->op) {
  case WAVE_AND: w.fill = 0xffffffffu; break;
  case WAVE_MIN: case WAVE_MAX: case WAVE_EXTENT:
    if (job->has_mask) {
      if (!or_first_selected(job, &w.fill))
        return 0;  /* nothing selected: the empty result */
    } else {
      for (size_t c = 0; c < job->n_input; c++)
        if (job->input[c].rows > 0) {
          w.fill = or_row(job->input[c].data, 0);
          break;
        }
    }
    break;
  default: w.fill = 0; break;
  }
  cl_kernel k = d->k[or_kernel(job->dtype, job->op)];
  const uint64_t vrows = (job->rows + 3) & ~3ull;
  cl_uint np = 0;
  uint64_t nwin = (vrows + d->window_rows - 1) / d->window_rows;
  int rv = wv_ocl_buf_reserve(d, &d->part, (size_t)nwin *
                              or_groups(d, d->window_rows / 4) * 8, err);
  if (rv != 0)
    return rv;
  for (uint64_t at = 0; at < vrows; at += d->window_rows) {
    uint64_t n = vrows - at < d->window_rows ? vrows - at : d->window_rows;
    unsigned s = d->cur;
    d->cur ^= 1;
    uint32_t *dst;
    if ((rv = wv_ocl_stage_get(d, s, (size_t)d->window_rows * 4, (void **)&dst,
                           err)) != 0)
      return rv;
    uint64_t i = 0;
    while (i < n && w.c < job->n_input) {
      uint64_t left = job->input[w.c].rows - w.off;
      if (left == 0) {
        w.c++;
        w.off = 0;
        continue;
      }
      uint64_t m = left < n - i ? left : n - i;
      or_copy(&w, dst + i, m);
      i += m;
    }
    for (; i < n; i++)
      dst[i] = w.fill;   /* the tail to a whole vector */
    if ((rv = wv_ocl_stage_send(d, s, (size_t)n * 4, err)) != 0 ||
        (rv = or_pass(d, k, d->stage[s].dev, n / 4, &np, NULL, err)) != 0)
      return rv;
  }
  out->count = w.selected;
  if (w.selected == 0)
    return 0;
  uint32_t keys[2];
  if ((rv = or_finish(d, np, job->op, keys, NULL, err)) != 0)
    return rv;
  or_decode(job->dtype, job->op, keys, out);
  return 0;
}

/* ---- float sum ----------------------------------------------------------- */

static int or_level1(wv_device *d, cl_mem in, uint64_t ngroups,
                     uint64_t part0, cl_event *ev, wave_error *err)
{
  if ((size_t)(part0 + ngroups) * 4 > d->part.size)  /* the caller reserves */
    return wv_seterr(err, WAVE_EINTERNAL, "opencl: partials overflow");
  cl_kernel k = d->k[WV_OCL_FSUM_LEVEL1];
  uint64_t want = (ngroups + 31) / 32;
  uint64_t cap = (uint64_t)d->units * (d->gpu ? 4 * OR_GROUPS_PER_CU : 2);
  if (want > cap)
    want = cap;
  cl_ulong ng = ngroups, p0 = part0;
  clSetKernelArg(k, 0, sizeof in, &in);
  clSetKernelArg(k, 1, sizeof ng, &ng);
  clSetKernelArg(k, 2, sizeof d->part.mem, &d->part.mem);
  clSetKernelArg(k, 3, sizeof p0, &p0);
  return wv_ocl_launch(d, k, (size_t)want * WV_OCL_WG, WV_OCL_WG, ev, err);
}

int wv_ocl_plan_make(wv_ocl_plan *pl, wv_ocl_seg *segs, size_t n, wave_error *err)
{
  memset(pl, 0, sizeof *pl);
  int merged = n == 1;
  for (;;) {
    int more = 0;
    for (size_t i = 0; i < n; i++)
      more |= segs[i].len > 1;
    if (!more && merged)
      break;
    if (!more) {   /* every chunk is one value: merge them, in order */
      segs[0] = (wv_ocl_seg){segs[0].off, (uint32_t)n};
      n = 1;
      merged = 1;
      continue;
    }
    size_t nd = 0;
    for (size_t i = 0; i < n; i++)
      nd += (segs[i].len + 255) / 256;
    if (pl->n + nd > pl->cap) {
      size_t cap = 2 * (pl->n + nd);
      uint32_t *x = realloc(pl->desc, cap * 2 * sizeof *x);
      if (x == NULL) {
        free(pl->desc);
        return wv_seterr(err, WAVE_ENOMEM, NULL);
      }
      pl->desc = x;
      pl->cap = cap;
    }
    if (pl->passes == 16) {
      free(pl->desc);
      return wv_seterr(err, WAVE_EINTERNAL, "opencl: too many tree levels");
    }
    pl->pass_at[pl->passes] = pl->n;
    pl->pass_n[pl->passes++] = nd;
    size_t k = 0;
    uint32_t *dsc = pl->desc + 2 * pl->n;
    for (size_t i = 0; i < n; i++) {
      uint32_t first = (uint32_t)k;
      for (uint32_t o = 0; o < segs[i].len; o += 256, k++) {
        dsc[2 * k] = segs[i].off + o;
        dsc[2 * k + 1] = segs[i].len - o < 256 ? segs[i].len - o : 256;
      }
      segs[i] = (wv_ocl_seg){first, (uint32_t)k - first};
    }
    pl->n += nd;
    if (nd > pl->max_out)
      pl->max_out = nd;
  }
  pl->result = segs[0].off;
  return 0;
}

/* Upload the plan's descriptors (blocking; before the first launch). */
int wv_ocl_plan_send(wv_device *d, const wv_ocl_plan *pl, size_t esize,
                     wave_error *err)
{
  if (pl->passes == 0)
    return 0;
  int rv;
  if ((rv = wv_ocl_buf_reserve(d, &d->desc, pl->n * 8, err)) != 0 ||
      (rv = wv_ocl_buf_reserve(d, &d->part2, pl->max_out * esize,
                                err)) != 0)
    return rv;
  cl_int e = clEnqueueWriteBuffer(d->q, d->desc.mem, CL_TRUE, 0, pl->n * 8,
                                  pl->desc, 0, NULL, NULL);
  if (e != CL_SUCCESS)
    return wv_ocl_fail(err, e, "clEnqueueWriteBuffer(levels)");
  return 0;
}

/* Run the plan's passes over the first-level values in d->part (which the
 * plan's outputs never outgrow) and read the result into *v. */
int wv_ocl_plan_run(wv_device *d, const wv_ocl_plan *pl, cl_kernel kt,
                    size_t esize, void *v, cl_event *ev, wave_error *err)
{
  wv_ocl_buf *src = &d->part, *dst = &d->part2;
  for (size_t p = 0; p < pl->passes; p++) {
    cl_uint d0 = (cl_uint)pl->pass_at[p], nd = (cl_uint)pl->pass_n[p];
    clSetKernelArg(kt, 0, sizeof src->mem, &src->mem);
    clSetKernelArg(kt, 1, sizeof d->desc.mem, &d->desc.mem);
    clSetKernelArg(kt, 2, sizeof d0, &d0);
    clSetKernelArg(kt, 3, sizeof nd, &nd);
    clSetKernelArg(kt, 4, sizeof dst->mem, &dst->mem);
    size_t g = nd < 4096 ? nd : 4096;
    if (ev != NULL && *ev != NULL)
      clReleaseEvent(*ev);
    if (ev != NULL)
      *ev = NULL;
    int rv = wv_ocl_launch(d, kt, g * WV_OCL_WG, WV_OCL_WG, ev, err);
    if (rv != 0)
      return rv;
    wv_ocl_buf *t = src;
    src = dst;
    dst = t;
  }
  cl_int e = clEnqueueReadBuffer(d->q, src->mem, CL_TRUE,
                                 esize * (size_t)pl->result, esize, v, 0,
                                 NULL, NULL);
  if (e != CL_SUCCESS)
    return wv_ocl_fail(err, e, "clEnqueueReadBuffer(sum)");
  return 0;
}

static int or_fsum(wv_device *d, const wv_reduce_job *job, wv_reduce_out *out,
                   wave_error *err)
{
  size_t nseg = 0;
  for (size_t c = 0; c < job->n_input; c++)
    nseg += job->input[c].rows > 0;
  out->n_values = 1;
  if (nseg == 0)
    return 0;
  wv_ocl_seg *segs = malloc(nseg * sizeof *segs);
  if (segs == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  uint64_t vtotal = 0;
  for (size_t c = 0, i = 0; c < job->n_input; c++) {
    uint64_t r = job->input[c].rows;
    if (r == 0)
      continue;
    uint64_t g = (r + 255) / 256;
    segs[i++] = (wv_ocl_seg){(uint32_t)(vtotal / 256), (uint32_t)g};
    vtotal += 256 * g;
  }
  or_walk w = {.job = job, .fill = 0x80000000u};
  wv_ocl_plan pl;
  int rv = wv_ocl_plan_make(&pl, segs, nseg, err);
  free(segs);
  if (rv != 0)
    return rv;
  if ((rv = wv_ocl_buf_reserve(d, &d->part, (size_t)(vtotal / 256) * 4,
                               err)) == 0)
    rv = wv_ocl_plan_send(d, &pl, 4, err);
  for (uint64_t at = 0; at < vtotal && rv == 0; at += d->window_rows) {
    uint64_t n = vtotal - at < d->window_rows ? vtotal - at : d->window_rows;
    unsigned s = d->cur;
    d->cur ^= 1;
    uint32_t *dst;
    if ((rv = wv_ocl_stage_get(d, s, (size_t)d->window_rows * 4, (void **)&dst,
                           err)) != 0)
      break;
    /* Virtual rows [at, at + n): the current chunk's rows, then its
     * padding up to 256, then the next non-empty chunk. */
    uint64_t i = 0;
    while (i < n) {
      while (w.c < job->n_input && job->input[w.c].rows == 0)
        w.c++;
      const uint64_t rows = job->input[w.c].rows;
      const uint64_t padded = (rows + 255) & ~255ull;
      if (w.off < rows) {
        uint64_t m = rows - w.off < n - i ? rows - w.off : n - i;
        or_copy(&w, dst + i, m);
        i += m;
      } else {
        uint64_t m = padded - w.off < n - i ? padded - w.off : n - i;
        for (uint64_t j = 0; j < m; j++)
          dst[i + j] = 0x80000000u;
        i += m;
        w.off += m;
      }
      if (w.off == padded) {
        w.c++;
        w.off = 0;
      }
    }
    if ((rv = wv_ocl_stage_send(d, s, (size_t)n * 4, err)) != 0)
      break;
    rv = or_level1(d, d->stage[s].dev, n / 256, at / 256, NULL, err);
  }
  out->count = w.selected;
  float v = 0;
  if (rv == 0 && w.selected > 0)
    rv = wv_ocl_plan_run(d, &pl, d->k[WV_OCL_FSUM_TREE], 4, &v, NULL,
                         err);
  free(pl.desc);
  if (rv != 0 || w.selected == 0)
    return rv;
  out->bits[0] = wv_f32_sum_finish(v, w.selected);
  return 0;
}

int wv_ocl_reduce(wv_device *d, const wv_reduce_job *job, wv_reduce_out *out,
                  wave_error *err)
{
  memset(out, 0, sizeof *out);
  out->n_values = job->op == WAVE_EXTENT ? 2 : 1;
  if (job->rows == 0) {
    out->index = job->op == WAVE_ARGMIN || job->op == WAVE_ARGMAX ? -1 : 0;
    return 0;
  }
  if (wv_reduce_is_wide(job->dtype, job->op))
    return wv_ocl_wide_reduce(d, job, out, err);
  if (job->dtype == WAVE_F32 && job->op == WAVE_SUM)
    return or_fsum(d, job, out, err);
  return or_orderfree(d, job, out, err);
}

/* ---- device-resident (bench) --------------------------------------------- */

double wv_ocl_span(cl_event a, cl_event b)
{
  cl_ulong t0 = 0, t1 = 0;
  clGetEventProfilingInfo(a, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL);
  clGetEventProfilingInfo(b, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
  return (double)(t1 - t0) * 1e-9;
}

int wv_ocl_reduce_resident(wv_device *d, cl_mem data, uint64_t rows,
                           wave_dtype dtype, wave_op op, wv_reduce_out *out,
                           double *seconds, wave_error *err)
{
  memset(out, 0, sizeof *out);
  out->n_values = op == WAVE_EXTENT ? 2 : 1;
  out->count = rows;
  cl_event e0 = NULL, e1 = NULL;
  int rv;
  if ((rv = wv_ocl_buf_reserve(d, &d->part, rows / 256 * 4 + (size_t)
                                or_groups(d, rows / 4) * 8, err)) != 0)
    return rv;
  if (dtype == WAVE_F32 && op == WAVE_SUM) {
    wv_ocl_seg seg = {0, (uint32_t)(rows / 256)};
    wv_ocl_plan pl;
    if ((rv = wv_ocl_plan_make(&pl, &seg, 1, err)) != 0)
      return rv;
    float v = 0;
    if ((rv = wv_ocl_plan_send(d, &pl, 4, err)) == 0 &&
        (rv = or_level1(d, data, rows / 256, 0, &e0, err)) == 0)
      rv = wv_ocl_plan_run(d, &pl, d->k[WV_OCL_FSUM_TREE], 4, &v, &e1,
                         err);
    free(pl.desc);
    if (rv == 0)
      out->bits[0] = wv_f32_sum_finish(v, rows);
  } else {
    cl_uint np = 0;
    uint32_t keys[2];
    if ((rv = or_pass(d, d->k[or_kernel(dtype, op)], data, rows / 4, &np, &e0,
                      err)) != 0)
      return rv;
    rv = or_finish(d, np, op, keys, &e1, err);
    if (rv == 0)
      or_decode(dtype, op, keys, out);
  }
  if (rv == 0 && seconds != NULL)
    *seconds = wv_ocl_span(e0, e1 != NULL ? e1 : e0);
  if (e0 != NULL)
    clReleaseEvent(e0);
  if (e1 != NULL)
    clReleaseEvent(e1);
  return rv;
}

int wv_ocl_stream_resident(wv_device *d, cl_mem data, uint64_t rows,
                           double *seconds, wave_error *err)
{
  cl_uint np = 0;
  cl_event e0 = NULL;
  int rv = wv_ocl_buf_reserve(d, &d->part, (size_t)or_groups(d, rows / 4) * 8,
                              err);
  if (rv == 0)
    rv = or_pass(d, d->k[WV_OCL_STREAM], data, rows / 4, &np, &e0, err);
  if (rv == 0) {
    cl_int e = clWaitForEvents(1, &e0);
    if (e != CL_SUCCESS)
      rv = wv_ocl_fail(err, e, "clWaitForEvents(stream)");
    else if (seconds != NULL)
      *seconds = wv_ocl_span(e0, e0);
  }
  if (e0 != NULL)
    clReleaseEvent(e0);
  return rv;
}
