/* ocl_stage.c - getting rows to an OpenCL device for the reductions
 * (ocl_reduce.c; docs/reduction.md): the two pinned staging buffers, the
 * walk of a job's input and mask into them, and the float sum's plan of
 * later levels.
 *
 * Staging: a pinned host buffer (CL_MEM_ALLOC_HOST_PTR, mapped for the
 * device's life) and the device buffer it is written into without
 * blocking; the host fills one while the device copies and reduces the
 * other.  The walk goes by logical row over input and mask together, so
 * chunk boundaries never matter; an unselected row is written as the
 * walk's fill, and the selected rows are counted on the way.  The plan
 * lists, for every level after the first, runs of up to 256 values: each
 * chunk's levels, then the levels over the chunk values in chunk order,
 * all in one array, uploaded once, so the passes run back to back.
 *
 * A reduction's transfer (the daemon's `transfer` phase) is counted here,
 * where the windows are handed out and sent: the host's fill of each
 * window by the wall clock, and each write's device time from its event
 * (the queue profiles).  Both overlap the other window's work, and the
 * next fill overlaps a write, so the sum is busy time, not a span.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ocl.h"
#include "core/base.h"

/* ---- staging ------------------------------------------------------------- */

static double os_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Wait for stage s's last write and let its event go; count: add the
 * write's device time to the running job's transfer.  The wait's result. */
static cl_int os_settle(wv_device *d, wv_ocl_stage *st, int count)
{
  if (st->done == NULL)
    return CL_SUCCESS;
  cl_int e = clWaitForEvents(1, &st->done);
  cl_ulong t0 = 0, t1 = 0;
  if (e == CL_SUCCESS && count &&
      clGetEventProfilingInfo(st->done, CL_PROFILING_COMMAND_START,
                              sizeof t0, &t0, NULL) == CL_SUCCESS &&
      clGetEventProfilingInfo(st->done, CL_PROFILING_COMMAND_END,
                              sizeof t1, &t1, NULL) == CL_SUCCESS &&
      t1 > t0)
    d->xfer_ns += t1 - t0;
  clReleaseEvent(st->done);
  st->done = NULL;
  return e;
}

void wv_ocl_xfer_begin(wv_device *d)
{
  for (unsigned s = 0; s < 2; s++)
    (void)os_settle(d, &d->stage[s], 0);
  d->xfer_host = 0;
  d->xfer_ns = 0;
}

double wv_ocl_xfer_end(wv_device *d)
{
  for (unsigned s = 0; s < 2; s++)
    (void)os_settle(d, &d->stage[s], 1);
  return d->xfer_host + (double)d->xfer_ns * 1e-9;
}

/* Staging buffer s, its last write waited for, grown to bytes. */
static int os_get(wv_device *d, unsigned s, size_t bytes, void **map,
                        wave_error *err)
{
  wv_ocl_stage *st = &d->stage[s];
  cl_int e = os_settle(d, st, 1);
  if (e != CL_SUCCESS)
    return wv_ocl_fail(err, e, "clWaitForEvents(staging)");
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
  d->xfer_host += os_now() - d->fill_t0;  /* the fill since wv_ocl_window */
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

uint64_t wv_ocl_word(const void *data, uint64_t i, unsigned size)
{
  uint64_t v = 0;
  memcpy(&v, (const char *)data + (size_t)size * i, size);
  return v;
}

/* Put the walk at logical row `row` (input and mask). */
void wv_ocl_seek(wv_ocl_walk *w, uint64_t row)
{
  uint64_t r = row;
  w->c = 0;
  while (w->c < w->job->n_input && r >= w->job->input[w->c].rows)
    r -= w->job->input[w->c++].rows;
  w->off = r;
  r = row;
  w->mc = 0;
  while (w->job->has_mask && w->mc < w->job->n_mask &&
         r >= w->job->mask[w->mc].rows)
    r -= w->job->mask[w->mc++].rows;
  w->moff = r;
}

/* The first selected row and its value; 0 when none is selected. */
int wv_ocl_first_selected(const wv_reduce_job *job, unsigned size,
                             uint64_t *row, uint64_t *v)
{
  uint64_t at = 0;
  if (job->has_mask) {
    size_t c = 0;
    for (; c < job->n_mask; c++) {
      const wv_span *m = &job->mask[c];
      uint64_t j = 0;
      while (j < m->rows && wv_ocl_word(m->data, j, 4) == 0)
        j++;
      at += j;
      if (j < m->rows)
        break;
    }
    if (c == job->n_mask)
      return 0;
  }
  wv_ocl_walk w = {.job = job};
  wv_ocl_seek(&w, at);
  if (w.c == job->n_input)
    return 0;
  *row = at;
  *v = wv_ocl_word(job->input[w.c].data, w.off, size);
  return 1;
}

/* Copy n rows of the current chunk (n <= rows left in it) into dst,
 * applying the mask. */
static void os_copy(wv_ocl_walk *w, unsigned char *dst, uint64_t n)
{
  const unsigned sz = w->size;
  const wv_span *in = &w->job->input[w->c];
  const unsigned char *src = (const unsigned char *)in->data + sz * w->off;
  if (!w->job->has_mask) {
    memcpy(dst, src, (size_t)sz * n);
    w->selected += n;
    w->off += n;
    return;
  }
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
    const unsigned char *mp = (const unsigned char *)m->data + 4 * w->moff;
    uint64_t sel = 0;
    if (sz == 8) {
      for (uint64_t j = 0; j < k; j++) {
        uint32_t mv;
        uint64_t v;
        memcpy(&mv, mp + 4 * j, 4);
        memcpy(&v, src + 8 * (i + j), 8);
        v = mv != 0 ? v : w->fill;
        memcpy(dst + 8 * (i + j), &v, 8);
        sel += mv != 0;
      }
    } else {
      const uint32_t f = (uint32_t)w->fill;
      for (uint64_t j = 0; j < k; j++) {
        uint32_t mv, v;
        memcpy(&mv, mp + 4 * j, 4);
        memcpy(&v, src + 4 * (i + j), 4);
        v = mv != 0 ? v : f;
        memcpy(dst + 4 * (i + j), &v, 4);
        sel += mv != 0;
      }
    }
    w->selected += sel;
    w->moff += k;
    i += k;
  }
  w->off += n;
}

static void os_pad(unsigned char *dst, uint64_t n, uint64_t fill,
                   unsigned size)
{
  for (uint64_t i = 0; i < n; i++)
    memcpy(dst + (size_t)size * i, &fill, size);
}

/* The next n rows of the stream (chunks as one, from the walk's place),
 * padded with the fill past the last row. */
void wv_ocl_stream(wv_ocl_walk *w, unsigned char *dst, uint64_t n)
{
  uint64_t i = 0;
  while (i < n && w->c < w->job->n_input) {
    uint64_t left = w->job->input[w->c].rows - w->off;
    if (left == 0) {
      w->c++;
      w->off = 0;
      continue;
    }
    uint64_t m = left < n - i ? left : n - i;
    os_copy(w, dst + (size_t)w->size * i, m);
    i += m;
  }
  os_pad(dst + (size_t)w->size * i, n - i, w->fill, w->size);
}

/* Virtual rows [at, at + n) of the float sum's layout into dst: the
 * current chunk's rows, its padding up to 256, the next non-empty chunk. */
void wv_ocl_fsum_window(wv_ocl_walk *w, unsigned char *dst, uint64_t n)
{
  const wv_reduce_job *job = w->job;
  const unsigned sz = w->size;
  uint64_t i = 0;
  while (i < n) {
    while (w->c < job->n_input && job->input[w->c].rows == 0)
      w->c++;
    const uint64_t rows = job->input[w->c].rows;
    const uint64_t padded = (rows + 255) & ~255ull;
    uint64_t m;
    if (w->off < rows) {
      m = rows - w->off < n - i ? rows - w->off : n - i;
      os_copy(w, dst + sz * i, m);
    } else {
      m = padded - w->off < n - i ? padded - w->off : n - i;
      os_pad(dst + sz * i, m, w->fill, sz);
      w->off += m;
    }
    i += m;
    if (w->off == padded) {
      w->c++;
      w->off = 0;
    }
  }
}

/* Rows per staging window for rows of `size` bytes. */
uint64_t wv_ocl_wrows(const wv_device *d, unsigned size)
{
  if (size == 4)
    return d->window_rows;
  uint64_t r = (d->window_rows / 2) & ~255ull;
  return r ? r : 256;
}

/* The next staging window: its buffer in *dst (bytes of `bytes`). */
int wv_ocl_window(wv_device *d, size_t bytes, unsigned *s,
                     unsigned char **dst, wave_error *err)
{
  *s = d->cur;
  d->cur ^= 1;
  int rv = os_get(d, *s, bytes, (void **)dst, err);
  d->fill_t0 = os_now();  /* the caller fills it, then sends it */
  return rv;
}

/* ---- the float sum's plan of later levels ------------------------------ */

int wv_ocl_plan_make(wv_ocl_plan *pl, wv_ocl_seg *segs, size_t n,
                     wave_error *err)
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
