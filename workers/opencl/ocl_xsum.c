/* ocl_xsum.c - the exact float sum (op fsum; core/xsum.h, docs/reduction.md
 * "fsum") on an OpenCL device, float32 and float64.
 *
 * The kernels are reduce.cl's xsum_bins and xsum_fold (its design comment
 * proves the bounds), in the base program for float32 and in the wide one
 * (WV_ROW64=1) for float64: integer work only, with 32-bit local atomics
 * (core OpenCL C), so every device that opens can run it; float64 needs
 * the wide program, not cl_khr_fp64.
 *
 * Rows travel as the order-free ops' do (ocl_stage.c): the chunks as one
 * stream through the two staging windows, the mask applied while copying
 * (an unselected row becomes -0.0, which adds nothing and sets no flag),
 * padded to whole 16-byte vectors with -0.0, the selected rows counted on
 * the way.  Every window is one xsum_bins launch over the same number of
 * work-groups, each adding into its own row of 16-bit bins kept in d->part
 * across launches (d->part2: its flags); one xsum_fold launch sums the rows
 * and only XNB + 1 longs come back, which the host adds into the exact
 * accumulator (wv_xsum_add_bins) and rounds once.
 */
#include <stdlib.h>
#include <string.h>

#include "ocl.h"
#include "core/base.h"
#include "core/optable.h"
#include "core/reduce.h"
#include "core/xsum.h"

#define OX_F32_BINS 20u  /* reduce.cl's XNB (bin j weighs 2^(16 j)), base */
#define OX_F64_BINS 136u /* the same, wide program */
#define OX_ROWS_PER_ITEM 64u  /* a work-item's rows before more groups */

static unsigned ox_bins(unsigned row_bytes)
{
  return row_bytes == 8 ? OX_F64_BINS : OX_F32_BINS;
}

/* Work-groups for a launch of up to nvec vectors: enough to fill the
 * device, never more than the rows give work for. */
static uint32_t ox_groups(const wv_device *d, uint64_t nvec, unsigned per)
{
  uint64_t want = (nvec * per + (uint64_t)OX_ROWS_PER_ITEM * WV_OCL_WG - 1) /
                  ((uint64_t)OX_ROWS_PER_ITEM * WV_OCL_WG);
  uint64_t cap = (uint64_t)d->units * (d->gpu ? 8 : 2);
  if (want > cap)
    want = cap;
  return want ? (uint32_t)want : 1;
}

/* Zeroed rows of bins and flags for g groups. */
static int ox_start(wv_device *d, unsigned nb, uint32_t g, wave_error *err)
{
  int rv = wv_ocl_buf_reserve(d, &d->part, (size_t)g * nb * 8, err);
  if (rv == 0)
    rv = wv_ocl_buf_reserve(d, &d->part2, (size_t)g * 4, err);
  if (rv == 0)
    rv = wv_ocl_buf_reserve(d, &d->result, (size_t)(nb + 1) * 8, err);
  if (rv != 0)
    return rv;
  static const cl_long zero = 0;
  cl_int e = clEnqueueFillBuffer(d->q, d->part.mem, &zero, sizeof zero, 0,
                                 (size_t)g * nb * 8, 0, NULL, NULL);
  if (e == CL_SUCCESS)
    e = clEnqueueFillBuffer(d->q, d->part2.mem, &zero, 4, 0, (size_t)g * 4,
                            0, NULL, NULL);
  return e == CL_SUCCESS ? 0 : wv_ocl_fail(err, e, "clEnqueueFillBuffer");
}

/* One xsum_bins launch over nvec vectors of in, g groups. */
static int ox_bins_launch(wv_device *d, cl_kernel k, cl_mem in, uint64_t nvec,
                          uint32_t g, cl_event *ev, wave_error *err)
{
  cl_ulong nv = nvec;
  clSetKernelArg(k, 0, sizeof in, &in);
  clSetKernelArg(k, 1, sizeof nv, &nv);
  clSetKernelArg(k, 2, sizeof d->part.mem, &d->part.mem);
  clSetKernelArg(k, 3, sizeof d->part2.mem, &d->part2.mem);
  return wv_ocl_launch(d, k, (size_t)g * WV_OCL_WG, WV_OCL_WG, ev, err);
}

/* Fold the g groups' rows and read them into x (flags included). */
static int ox_finish(wv_device *d, cl_kernel *ks, unsigned nb, uint32_t g,
                     wv_xsum *x, cl_event *ev, wave_error *err)
{
  cl_kernel k = ks[WV_OCL_XSUM_FOLD];
  cl_uint ng = g;
  clSetKernelArg(k, 0, sizeof d->part.mem, &d->part.mem);
  clSetKernelArg(k, 1, sizeof ng, &ng);
  clSetKernelArg(k, 2, sizeof d->part2.mem, &d->part2.mem);
  clSetKernelArg(k, 3, sizeof d->result.mem, &d->result.mem);
  int rv = wv_ocl_launch(d, k, WV_OCL_WG, WV_OCL_WG, ev, err);
  if (rv != 0)
    return rv;
  int64_t bins[OX_F64_BINS + 1];
  cl_int e = clEnqueueReadBuffer(d->q, d->result.mem, CL_TRUE, 0,
                                 (size_t)(nb + 1) * 8, bins, 0, NULL, NULL);
  if (e != CL_SUCCESS)
    return wv_ocl_fail(err, e, "clEnqueueReadBuffer(xsum)");
  if ((uint64_t)bins[nb] & ~(uint64_t)(WV_XSUM_NAN | WV_XSUM_PINF |
                                       WV_XSUM_NINF | WV_XSUM_NOT_NEGZERO))
    return wv_seterr(err, WAVE_EDEVICE, "opencl: %s: fsum flags %llx",
                     d->name, (unsigned long long)bins[nb]);
  /* bin j weighs 2^(16 j); the top ones reach X's top limb, where
   * wv_xsum_add_bins adds modulo X's width: exact, as their total is a
   * sum of rows */
  wv_xsum_add_bins(x, bins, nb, 16);
  x->flags |= (uint32_t)bins[nb];
  return 0;
}

static void ox_answer(wave_dtype dt, const wv_xsum *x, uint64_t count,
                      wv_reduce_out *out)
{
  out->xsum = *x;
  out->count = count;
  out->bits[0] = wv_xsum_round(x, count);
  (void)dt;
}

int wv_ocl_xsum(wv_device *d, const wv_reduce_job *job, const wv_op_plan *p,
                wv_reduce_out *out, wave_error *err)
{
  const unsigned sz = p->row_bytes, per = 16 / sz, nb = ox_bins(sz);
  cl_kernel *ks = sz == 8 ? d->kw : d->k;
  wv_ocl_walk w = {.job = job, .size = sz, .fill = 1ull << (8 * sz - 1)};
  wv_ocl_seek(&w, 0);
  const uint64_t wr = wv_ocl_wrows(d, sz);
  const uint64_t vrows = (job->rows + per - 1) / per * per;
  const uint32_t g = ox_groups(d, (vrows < wr ? vrows : wr) / per, per);
  wv_xsum x;
  wv_xsum_init(&x, job->dtype);
  int rv = ox_start(d, nb, g, err);
  for (uint64_t at = 0; at < vrows && rv == 0; at += wr) {
    uint64_t n = vrows - at < wr ? vrows - at : wr;
    unsigned s;
    unsigned char *dst;
    if ((rv = wv_ocl_window(d, (size_t)wr * sz, &s, &dst, err)) != 0)
      break;
    wv_ocl_stream(&w, dst, n);
    if ((rv = wv_ocl_stage_send(d, s, (size_t)n * sz, err)) == 0)
      rv = ox_bins_launch(d, ks[WV_OCL_XSUM_BINS], d->stage[s].dev, n / per,
                          g, NULL, err);
  }
  if (rv == 0)
    rv = ox_finish(d, ks, nb, g, &x, NULL, err);
  if (rv == 0)
    ox_answer(job->dtype, &x, w.selected, out);
  return rv;
}

int wv_ocl_xsum_resident(wv_device *d, cl_mem data, uint64_t rows,
                         const wv_op_plan *p, wv_reduce_out *out,
                         cl_event *e0, cl_event *e1, wave_error *err)
{
  const unsigned sz = p->row_bytes, per = 16 / sz, nb = ox_bins(sz);
  cl_kernel *ks = sz == 8 ? d->kw : d->k;
  const uint32_t g = ox_groups(d, rows / per, per);
  wv_xsum x;
  wv_xsum_init(&x, p->dtype);
  int rv = ox_start(d, nb, g, err);
  if (rv == 0)
    rv = ox_bins_launch(d, ks[WV_OCL_XSUM_BINS], data, rows / per, g, e0,
                        err);
  if (rv == 0)
    rv = ox_finish(d, ks, nb, g, &x, e1, err);
  if (rv == 0)
    ox_answer(p->dtype, &x, rows, out);
  return rv;
}
