/* ocl_reduce.c - reductions on an OpenCL device, every dtype and op
 * (docs/reduction.md), planned on the op table (core/optable.h).
 *
 * Two programs of one body (kernels/reduce.cl): the base program holds
 * the 32-bit kernels (d->k, built by ocl_open.c), the wide program the
 * 64-bit ones and argmin/argmax of every dtype (d->kw, reduce.cl with
 * WV_ROW64=1 and arg.cl, built here), the reduce.cl kernels at the same
 * index in both.  A plan row gives the kernel (its path, key kind and
 * halves), the fill of unselected rows, and how the keys read back.
 *
 * Rows arrive in host memory.  They are copied into one of two pinned
 * staging buffers in turn (windows of window_rows 32-bit rows, 2^24 by
 * default, or as many bytes of 64-bit rows), each written to its device
 * buffer without blocking, and each window gets one first-level launch
 * writing partials into a device buffer that holds the whole job's
 * partials; the host fills window k + 1 while the device copies and
 * reduces window k.  Only the result comes back (8..32 bytes).  The
 * fills and the writes are the job's transfer (ocl_stage.c counts them).
 *
 * The mask is applied while copying, walked by logical row beside the
 * input, so its chunk boundaries never matter and the device never reads
 * it: an unselected row is written as the plan's fill (a constant, or for
 * min/max/extent a copy of the first selected row).  The selected count is
 * taken in the same walk.
 *
 *  - Order-free ops treat the chunks as one stream (padded at the end to
 *    whole 16-byte vectors with the fill); red_finish folds the partials.
 *  - The float sum lays every non-empty chunk out on a 256-row boundary of
 *    a virtual row space, padded with -0.0, so chunk c owns a contiguous
 *    run of first-level values; later levels are fsum_tree passes over
 *    listed runs: each chunk's levels, then the levels over the chunk
 *    values in chunk order (a run of one value passes through: G of one
 *    value padded with -0.0 is that value).  The float64 sum needs
 *    cl_khr_fp64 with denormals and round to nearest, and a probe at open.
 *  - The exact sum (op fsum) is ocl_xsum.c's: the stream of the order-free
 *    ops into bins of integers.
 *  - argmin/argmax: the stream starts at the first selected row i0, so
 *    indices are i0 + the stream position.  An unselected row after it
 *    becomes, for the integers, a copy of row i0's value (it can only tie
 *    with i0, and loses: its index is higher), for the floats the plan's
 *    NaN (never considered, never counted); the tail padding likewise.
 *    The count is the selected rows for the integers (taken in the walk)
 *    and the device's count of finite rows for the floats.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl.h"
#include "core/base.h"
#include "core/optable.h"
#include "core/reduce.h"

#define OR_GROUPS_PER_CU 8u

extern const char wv_ocl_src_reduce[];
extern const char wv_ocl_src_arg[];

static const char *const or_arg_names[WV_OCL_WIDE_COUNT_ - WV_OCL_ARG] = {
  "arg_umin32", "arg_umax32", "arg_smin32", "arg_smax32", "arg_fmin32",
  "arg_fmax32", "arg_umin64", "arg_umax64", "arg_smin64", "arg_smax64",
  "arg_fmin64", "arg_fmax64", "arg_finish",
};

/* ---- the wide program ---------------------------------------------------- */

void wv_ocl_wide_close(wv_device *d)
{
  for (unsigned i = 0; i < WV_OCL_WIDE_COUNT_; i++) {
    if (d->kw[i] != NULL)
      clReleaseKernel(d->kw[i]);
    d->kw[i] = NULL;
  }
  if (d->wide != NULL)
    clReleaseProgram(d->wide);
  d->wide = NULL;
}

static int or_build_wide(wv_device *d, int sg, int fp64, wave_error *err)
{
  char opts[160];
  snprintf(opts, sizeof opts, "-cl-std=CL%u.%u -DWV_ROW64=1 "
           "-DWV_SUBGROUPS=%d -DWV_FP64=%d", sg ? d->c_major : 1,
           sg ? d->c_minor : 2, sg, fp64);
  const char *src[2] = {wv_ocl_src_reduce, wv_ocl_src_arg};
  int rv = wv_ocl_build(d, src, 2, opts, &d->wide, err);
  for (unsigned i = 0; i < WV_OCL_WIDE_COUNT_ && rv == 0; i++) {
    if (!fp64 && (i == WV_OCL_FSUM_LEVEL1 || i == WV_OCL_FSUM_TREE))
      continue;
    const char *name = i < WV_OCL_ARG ? wv_ocl_kernel_names[i]
                                      : or_arg_names[i - WV_OCL_ARG];
    cl_int e;
    d->kw[i] = clCreateKernel(d->wide, name, &e);
    if (d->kw[i] == NULL)
      rv = wv_ocl_fail(err, e, name);
  }
  return rv;
}

/* The float64 sum of subnormals 3 ulp + -1 ulp must be 2 ulp, and of the
 * worked example's tree 1 + 2^-52 (docs/reduction.md). */
static int or_probe_fp64(wv_device *d, wave_error *err)
{
  static const uint64_t sub[2] = {3, 0x8000000000000001u};
  uint64_t *tree = calloc(256, 8);
  if (tree == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  for (unsigned i = 0; i < 256; i++)
    tree[i] = WV_F64_NEG_ZERO;
  tree[0] = 0x3ff0000000000000u;
  tree[1] = tree[129] = 0x3ca0000000000000u;
  wv_span in[2] = {{sub, 2}, {tree, 256}};
  uint64_t want[2] = {2, 0x3ff0000000000001u};
  int rv = 0;
  for (unsigned i = 0; i < 2 && rv == 0 && d->fp64; i++) {
    wv_reduce_job job = {.dtype = WAVE_F64, .op = WAVE_SUM, .input = &in[i],
                         .n_input = 1, .rows = in[i].rows};
    wv_reduce_out out;
    rv = wv_ocl_reduce(d, &job, &out, err);
    if (rv == 0 && out.bits[0] != want[i]) {
      d->fp64 = 0;
      snprintf(d->fp64_note, sizeof d->fp64_note, "float64 probe sum gave "
               "%016llx, not %016llx", (unsigned long long)out.bits[0],
               (unsigned long long)want[i]);
    }
  }
  free(tree);
  return rv;
}

int wv_ocl_wide_open(wv_device *d, wave_error *err)
{
  cl_device_fp_config fp = 0;
  clGetDeviceInfo(d->id, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp, &fp, NULL);
  const cl_device_fp_config need = CL_FP_DENORM | CL_FP_INF_NAN |
                                   CL_FP_ROUND_TO_NEAREST;
  d->fp64 = (fp & need) == need;
  if (fp == 0)
    snprintf(d->fp64_note, sizeof d->fp64_note, "no cl_khr_fp64");
  else if (!d->fp64)
    snprintf(d->fp64_note, sizeof d->fp64_note, "cl_khr_fp64 without "
             "denormals or round-to-nearest");
  int sg = d->subgroups && !d->opt.force_local;
  int rv = or_build_wide(d, sg, d->fp64, err);
  if (rv != 0 && sg) {   /* as the base program: fall back to local memory */
    wv_ocl_wide_close(d);
    rv = or_build_wide(d, 0, d->fp64, err);
  }
  if (rv != 0) {
    /* The device still runs the 32-bit jobs: caps drop the wide ones, the
     * description and stderr (the build log) say why. */
    fprintf(stderr, "opencl: %s: the wide program did not build (%s): no "
            "64-bit dtypes, no argmin/argmax\n", d->name, err->message);
    wv_ocl_wide_close(d);
    d->fp64 = 0;
    snprintf(d->fp64_note, sizeof d->fp64_note, "the wide program did not "
             "build");
    memset(err, 0, sizeof *err);
    return 0;
  }
  if (d->fp64)
    rv = or_probe_fp64(d, err);
  return rv;
}

/* ---- launches ------------------------------------------------------------ */

static uint32_t or_groups(const wv_device *d, uint64_t nvec)
{
  uint64_t want = (nvec + 4 * WV_OCL_WG - 1) / (4 * WV_OCL_WG);
  uint64_t cap = (uint64_t)d->units * (d->gpu ? OR_GROUPS_PER_CU : 2);
  if (want > cap)
    want = cap;
  return want ? (uint32_t)want : 1;
}

/* The kernels plan p runs: the wide program's for 64-bit rows and for
 * argmin/argmax, else the base program's. */
static cl_kernel *or_set(wv_device *d, const wv_op_plan *p)
{
  return p->row_bytes == 8 || p->path == WV_PATH_ARG ? d->kw : d->k;
}

/* The first-level kernel of an order-free op or argmin/argmax (ocl.h says
 * where each sits). */
static cl_kernel or_kernel(wv_device *d, const wv_op_plan *p)
{
  unsigned i;
  if (p->path == WV_PATH_ARG)
    i = WV_OCL_ARG + 6 * (p->row_bytes == 8) + 2 * p->key +
        (p->halves == WV_HALF_HI);
  else if (p->path == WV_PATH_KEYS)
    i = WV_OCL_RED_UMIN + 3 * (p->halves - 1) + p->key;
  else if (p->path == WV_PATH_BITS)
    i = WV_OCL_RED_AND + (unsigned)(p->op - WAVE_AND);
  else
    i = WV_OCL_RED_SUM;
  return or_set(d, p)[i];
}

/* red_finish's op: 0 sum, 1 min, 2 max, 3 and, 4 or, 5 xor, 6 extent. */
static cl_uint or_finish_op(const wv_op_plan *p)
{
  if (p->path == WV_PATH_KEYS)
    return p->halves == (WV_HALF_LO | WV_HALF_HI) ? 6 : p->halves;
  if (p->path == WV_PATH_BITS)
    return 3 + (cl_uint)(p->op - WAVE_AND);
  return 0;
}

/* One pass of kernel k over nvec 16-byte vectors of in, one partial of
 * psize bytes per work-group at *np (advanced); base: the global index of
 * the first row (argmin/argmax kernels only, -1 for the others). */
static int or_pass(wv_device *d, cl_kernel k, cl_mem in, uint64_t nvec,
                   int64_t base, size_t psize, cl_uint *np, cl_event *ev,
                   wave_error *err)
{
  uint32_t g = or_groups(d, nvec);
  if ((size_t)(*np + g) * psize > d->part.size)   /* the caller reserves */
    return wv_seterr(err, WAVE_EINTERNAL, "opencl: partials overflow");
  cl_ulong nv = nvec, b = (cl_ulong)base;
  cl_uint a = 0;
  clSetKernelArg(k, a++, sizeof in, &in);
  clSetKernelArg(k, a++, sizeof nv, &nv);
  if (base >= 0)
    clSetKernelArg(k, a++, sizeof b, &b);
  clSetKernelArg(k, a++, sizeof d->part.mem, &d->part.mem);
  clSetKernelArg(k, a++, sizeof *np, np);
  int rv = wv_ocl_launch(d, k, (size_t)g * WV_OCL_WG, WV_OCL_WG, ev, err);
  if (rv == 0)
    *np += g;
  return rv;
}

/* Fold np partials of plan p (red_finish, or arg_finish) and read the
 * result as words of the row's width (argmin/argmax: 64-bit key, index,
 * count) into res. */
static int or_finish(wv_device *d, const wv_op_plan *p, cl_uint np,
                     uint64_t res[4], cl_event *ev, wave_error *err)
{
  const int arg = p->path == WV_PATH_ARG;
  const unsigned wsz = arg ? 8 : p->row_bytes, nw = arg ? 4 : 2;
  cl_kernel k = or_set(d, p)[arg ? WV_OCL_ARG_FINISH : WV_OCL_RED_FINISH];
  cl_uint op = arg ? p->halves == WV_HALF_HI : or_finish_op(p);
  unsigned char raw[32];
  int rv = wv_ocl_buf_reserve(d, &d->result, 32, err);
  if (rv != 0)
    return rv;
  clSetKernelArg(k, 0, sizeof d->part.mem, &d->part.mem);
  clSetKernelArg(k, 1, sizeof np, &np);
  clSetKernelArg(k, 2, sizeof op, &op);
  clSetKernelArg(k, 3, sizeof d->result.mem, &d->result.mem);
  if ((rv = wv_ocl_launch(d, k, WV_OCL_WG, WV_OCL_WG, ev, err)) != 0)
    return rv;
  cl_int e = clEnqueueReadBuffer(d->q, d->result.mem, CL_TRUE, 0, wsz * nw,
                                 raw, 0, NULL, NULL);
  if (e != CL_SUCCESS)
    return wv_ocl_fail(err, e, "clEnqueueReadBuffer(result)");
  for (unsigned i = 0; i < nw; i++)
    res[i] = wv_ocl_word(raw, i, wsz);
  return 0;
}

/* Result bits from the folded keys of an order-free op. */
static void or_decode(const wv_op_plan *p, const uint64_t keys[2],
                      wv_reduce_out *out)
{
  out->n_values = p->n_values;
  for (unsigned i = 0; i < p->n_values; i++) {
    int lo = i == 0 && p->halves != WV_HALF_HI;
    if (p->path != WV_PATH_KEYS)
      out->bits[i] = keys[i];
    else if (p->finite_only && keys[i] == (lo ? p->ones : 0))
      out->bits[i] = 0;   /* no finite row: the key stayed the identity */
    else
      out->bits[i] = wv_unkey_of(p->key, p->row_bytes, keys[i]);
  }
}

/* The argmin/argmax answer from the folded (key, index, count) and the
 * walk's count. */
static void or_arg_answer(const wv_op_plan *p, const uint64_t res[4],
                          uint64_t selected, wv_reduce_out *out)
{
  uint64_t count = p->count_finite ? res[2] : selected;
  if (count == 0)
    return;   /* out is already the empty answer */
  out->count = count;
  out->index = (int64_t)res[1];
  out->bits[0] = wv_unkey_of(p->key, p->row_bytes, res[0]);
}

/* ---- jobs ---------------------------------------------------------------- */

/* Order-free ops (start 0) and argmin/argmax (from the first selected row):
 * the stream of rows through the staging windows, one pass a window. */
static int or_streamed(wv_device *d, const wv_reduce_job *job,
                       const wv_op_plan *p, wv_reduce_out *out,
                       wave_error *err)
{
  const int arg = p->path == WV_PATH_ARG;
  const unsigned sz = p->row_bytes, per = 16 / sz, psize = arg ? 32 : 2 * sz;
  wv_ocl_walk w = {.job = job, .size = sz, .fill = p->fill.bits};
  uint64_t i0 = 0, v0 = 0;
  if ((arg || p->fill.dup) && !wv_ocl_first_selected(job, sz, &i0, &v0))
    return 0;   /* nothing selected: the empty result */
  if (p->fill.dup || !p->fill.ok)
    w.fill = v0;
  if (!arg)
    i0 = 0;
  wv_ocl_seek(&w, i0);
  cl_kernel k = or_kernel(d, p);
  const uint64_t wr = wv_ocl_wrows(d, sz);
  const uint64_t vrows = (job->rows - i0 + per - 1) / per * per;
  uint64_t nwin = (vrows + wr - 1) / wr;
  cl_uint np = 0;
  int rv = wv_ocl_buf_reserve(d, &d->part, (size_t)nwin *
                              or_groups(d, wr / per) * psize, err);
  for (uint64_t at = 0; at < vrows && rv == 0; at += wr) {
    uint64_t n = vrows - at < wr ? vrows - at : wr;
    unsigned s;
    unsigned char *dst;
    if ((rv = wv_ocl_window(d, (size_t)wr * sz, &s, &dst, err)) != 0)
      break;
    wv_ocl_stream(&w, dst, n);
    if ((rv = wv_ocl_stage_send(d, s, (size_t)n * sz, err)) == 0)
      rv = or_pass(d, k, d->stage[s].dev, n / per,
                   arg ? (int64_t)(i0 + at) : -1, psize, &np, NULL, err);
  }
  uint64_t res[4];
  if (rv != 0 || (!arg && (out->count = w.selected) == 0))
    return rv;
  if ((rv = or_finish(d, p, np, res, NULL, err)) != 0)
    return rv;
  if (arg)
    or_arg_answer(p, res, w.selected, out);
  else
    or_decode(p, res, out);
  return 0;
}

/* The float sum's first level: ngroups 256-row groups of in into d->part
 * from value part0. */
static int or_level1(wv_device *d, cl_kernel *ks, cl_mem in,
                     uint64_t ngroups, uint64_t part0, size_t esize,
                     cl_event *ev, wave_error *err)
{
  if ((size_t)(part0 + ngroups) * esize > d->part.size)  /* reserved */
    return wv_seterr(err, WAVE_EINTERNAL, "opencl: partials overflow");
  cl_kernel k = ks[WV_OCL_FSUM_LEVEL1];
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

/* The float sum's answer from the tree's value v (esize bytes). */
static uint64_t or_fsum_bits(const unsigned char *v, size_t esize,
                             uint64_t selected)
{
  if (esize == 8) {
    double x;
    memcpy(&x, v, 8);
    return wv_f64_sum_finish(x, selected);
  }
  float x;
  memcpy(&x, v, 4);
  return wv_f32_sum_finish(x, selected);
}

static int or_fsum(wv_device *d, const wv_reduce_job *job,
                   const wv_op_plan *p, wv_reduce_out *out, wave_error *err)
{
  const unsigned sz = p->row_bytes;
  cl_kernel *ks = or_set(d, p);
  size_t nseg = 0;
  for (size_t c = 0; c < job->n_input; c++)
    nseg += job->input[c].rows > 0;
  if (nseg == 0)
    return 0;
  wv_ocl_seg *segs = malloc(nseg * sizeof *segs);
  if (segs == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  uint64_t vtotal = 0;
  for (size_t c = 0, i = 0; c < job->n_input; c++) {
    uint64_t r = job->input[c].rows, g = (r + 255) / 256;
    if (r == 0)
      continue;
    segs[i++] = (wv_ocl_seg){(uint32_t)(vtotal / 256), (uint32_t)g};
    vtotal += 256 * g;
  }
  wv_ocl_walk w = {.job = job, .size = sz, .fill = p->fill.bits};
  wv_ocl_plan pl;
  int rv = wv_ocl_plan_make(&pl, segs, nseg, err);
  free(segs);
  if (rv != 0)
    return rv;
  const uint64_t wr = wv_ocl_wrows(d, sz);
  if ((rv = wv_ocl_buf_reserve(d, &d->part, (size_t)(vtotal / 256) * sz,
                               err)) == 0)
    rv = wv_ocl_plan_send(d, &pl, sz, err);
  for (uint64_t at = 0; at < vtotal && rv == 0; at += wr) {
    uint64_t n = vtotal - at < wr ? vtotal - at : wr;
    unsigned s;
    unsigned char *dst;
    if ((rv = wv_ocl_window(d, (size_t)wr * sz, &s, &dst, err)) != 0)
      break;
    wv_ocl_fsum_window(&w, dst, n);
    if ((rv = wv_ocl_stage_send(d, s, (size_t)n * sz, err)) == 0)
      rv = or_level1(d, ks, d->stage[s].dev, n / 256, at / 256, sz, NULL,
                     err);
  }
  out->count = w.selected;
  unsigned char v[8];
  if (rv == 0 && w.selected > 0)
    rv = wv_ocl_plan_run(d, &pl, ks[WV_OCL_FSUM_TREE], sz, v, NULL, err);
  free(pl.desc);
  if (rv == 0 && w.selected > 0)
    out->bits[0] = or_fsum_bits(v, sz, w.selected);
  return rv;
}

/* Whether plan p runs on d; its error if not. */
static int or_runs(const wv_device *d, const wv_op_plan *p, wave_error *err)
{
  if (p->rc != 0)
    return wv_seterr(err, p->rc, NULL);
  if ((p->row_bytes == 8 || p->path == WV_PATH_ARG) && d->wide == NULL)
    return wv_seterr(err, WAVE_EUNSUPPORTED, "opencl: %s: no wide program",
                     d->name);
  if (p->path == WV_PATH_FSUM && p->row_bytes == 8 && !d->fp64)
    return wv_seterr(err, WAVE_EUNSUPPORTED, "opencl: %s: float64 sums "
                     "refused: %s", d->name, d->fp64_note);
  return 0;
}

int wv_ocl_reduce(wv_device *d, const wv_reduce_job *job, wv_reduce_out *out,
                  wave_error *err)
{
  const wv_op_plan *p = wv_op_plan_of(job->dtype, job->op);
  memset(out, 0, sizeof *out);
  if (p->rc != 0)
    return wv_seterr(err, p->rc, NULL);
  out->n_values = p->n_values;
  out->index = p->path == WV_PATH_ARG ? -1 : 0;
  if (p->path == WV_PATH_XSUM)
    wv_xsum_init(&out->xsum, job->dtype);
  if (job->rows == 0)
    return 0;
  int rv = or_runs(d, p, err);
  if (rv != 0)
    return rv;
  wv_ocl_xfer_begin(d);
  if (p->path == WV_PATH_FSUM)
    rv = or_fsum(d, job, p, out, err);
  else if (p->path == WV_PATH_XSUM)
    rv = wv_ocl_xsum(d, job, p, out, err);
  else
    rv = or_streamed(d, job, p, out, err);
  out->transfer_s = wv_ocl_xfer_end(d);  /* ocl_stage.c */
  return rv;
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
  const wv_op_plan *p = wv_op_plan_of(dtype, op);
  const unsigned sz = p->row_bytes, per = sz ? 16 / sz : 1;
  memset(out, 0, sizeof *out);
  out->n_values = p->n_values;
  out->count = rows;
  cl_event e0 = NULL, e1 = NULL;
  cl_uint np = 0;
  uint64_t res[4];
  int rv = or_runs(d, p, err);
  if (rv == 0)
    rv = wv_ocl_buf_reserve(d, &d->part, rows / 256 * sz + (size_t)
                            or_groups(d, rows / per) * 32, err);
  if (rv == 0 && p->path == WV_PATH_FSUM) {
    cl_kernel *ks = or_set(d, p);
    wv_ocl_seg seg = {0, (uint32_t)(rows / 256)};
    wv_ocl_plan pl;
    if ((rv = wv_ocl_plan_make(&pl, &seg, 1, err)) != 0)
      return rv;
    unsigned char v[8];
    if ((rv = wv_ocl_plan_send(d, &pl, sz, err)) == 0 &&
        (rv = or_level1(d, ks, data, rows / 256, 0, sz, &e0, err)) == 0)
      rv = wv_ocl_plan_run(d, &pl, ks[WV_OCL_FSUM_TREE], sz, v, &e1, err);
    free(pl.desc);
    if (rv == 0)
      out->bits[0] = or_fsum_bits(v, sz, rows);
  } else if (rv == 0 && p->path == WV_PATH_XSUM) {
    rv = wv_ocl_xsum_resident(d, data, rows, p, out, &e0, &e1, err);
  } else if (rv == 0) {
    const int arg = p->path == WV_PATH_ARG;
    if (arg) {
      out->count = 0;
      out->index = -1;
    }
    if ((rv = or_pass(d, or_kernel(d, p), data, rows / per, arg ? 0 : -1,
                      arg ? 32 : 2 * sz, &np, &e0, err)) == 0 &&
        (rv = or_finish(d, p, np, res, &e1, err)) == 0) {
      if (arg)
        or_arg_answer(p, res, rows, out);
      else
        or_decode(p, res, out);
    }
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
    rv = or_pass(d, d->k[WV_OCL_STREAM], data, rows / 4, -1, 8, &np, &e0,
                 err);
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
