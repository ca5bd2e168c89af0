/* ocl_wide.c - the 64-bit dtypes and argmin/argmax on an OpenCL device
 * (docs/reduction.md; kernels/reduce.cl built with WV_ROW64=1, and
 * kernels/arg.cl).
 *
 * The same shape as ocl_reduce.c: rows are copied from host memory into
 * the two pinned staging buffers in turn, the mask applied while copying
 * (walked by logical row beside the input), each window written without
 * blocking and reduced by one launch into the job's partials, then one
 * folding launch and an 8..32-byte read.  A 64-bit window holds half the
 * rows of a 32-bit one (the same bytes).
 *
 *  - Order-free ops on 64-bit rows: as ocl_reduce.c's, the chunks one
 *    stream; unselected rows become a value that cannot change the result
 *    (sum/or/xor 0, and all ones, min/max/extent a copy of the first
 *    selected row).
 *  - The float64 sum: ocl_reduce.c's layout (every non-empty chunk on a
 *    256-row boundary of a virtual row space, padded with -0.0) and its
 *    plan of later levels, with the double kernels.  Only this needs
 *    cl_khr_fp64; the caps' one bit for the three 64-bit dtypes is set only
 *    where it runs (docs/backends.md).
 *  - argmin/argmax, every dtype: the stream starts at the first selected
 *    row i0, so indices are i0 + the stream position.  An unselected row
 *    after it becomes, for the integers, a copy of row i0's value (it
 *    can only tie with i0, and loses: its index is higher), for the floats
 *    a NaN (never considered, never counted); the tail padding likewise.
 *    The count is the selected rows for the integers (taken in the walk)
 *    and the device's count of finite rows for the floats.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl.h"
#include "core/base.h"
#include "core/reduce.h"

#define OW_GROUPS_PER_CU 8u

extern const char wv_ocl_src_reduce[];
extern const char wv_ocl_src_arg[];

static const char *const ow_names[WV_OCLW_COUNT_] = {
  "red_sum", "red_and", "red_or", "red_xor", "red_umin", "red_umax",
  "red_smin", "red_smax", "red_fmin", "red_fmax", "red_uext", "red_sext",
  "red_fext", "red_finish",
  "arg_umin32", "arg_umax32", "arg_smin32", "arg_smax32", "arg_fmin32",
  "arg_fmax32", "arg_umin64", "arg_umax64", "arg_smin64", "arg_smax64",
  "arg_fmin64", "arg_fmax64", "arg_finish",
  "fsum_level1", "fsum_tree",
};

/* ---- open ---------------------------------------------------------------- */

void wv_ocl_wide_close(wv_device *d)
{
  for (unsigned i = 0; i < WV_OCLW_COUNT_; i++) {
    if (d->kw[i] != NULL)
      clReleaseKernel(d->kw[i]);
    d->kw[i] = NULL;
  }
  if (d->wide != NULL)
    clReleaseProgram(d->wide);
  d->wide = NULL;
}

static int ow_build(wv_device *d, int sg, int fp64, wave_error *err)
{
  char opts[160];
  snprintf(opts, sizeof opts, "-cl-std=CL%u.%u -DWV_ROW64=1 "
           "-DWV_SUBGROUPS=%d -DWV_FP64=%d", sg ? d->c_major : 1,
           sg ? d->c_minor : 2, sg, fp64);
  const char *src[2] = {wv_ocl_src_reduce, wv_ocl_src_arg};
  int rv = wv_ocl_build(d, src, 2, opts, &d->wide, err);
  if (rv != 0)
    return rv;
  unsigned n = fp64 ? WV_OCLW_COUNT_ : WV_OCLW_FSUM_LEVEL1;
  for (unsigned i = 0; i < n; i++) {
    cl_int e;
    d->kw[i] = clCreateKernel(d->wide, ow_names[i], &e);
    if (d->kw[i] == NULL)
      return wv_ocl_fail(err, e, ow_names[i]);
  }
  return 0;
}

/* The float64 sum of subnormals 3 ulp + -1 ulp must be 2 ulp, and of the
 * worked example's tree 1 + 2^-52 (docs/reduction.md). */
static int ow_probe_fp64(wv_device *d, wave_error *err)
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
  int rv = ow_build(d, sg, d->fp64, err);
  if (rv != 0 && sg) {   /* as the base program: fall back to local memory */
    wv_ocl_wide_close(d);
    rv = ow_build(d, 0, d->fp64, err);
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
    rv = ow_probe_fp64(d, err);
  return rv;
}

/* ---- walking the input and the mask -------------------------------------- */

typedef struct ow_walk {
  const wv_reduce_job *job;
  unsigned size;     /* row bytes */
  size_t c;          /* input chunk */
  uint64_t off;      /* row within it */
  size_t mc;         /* mask chunk */
  uint64_t moff;
  uint64_t fill;     /* written for unselected rows (low bytes) */
  uint64_t selected;
} ow_walk;

static uint64_t ow_get(const void *data, uint64_t i, unsigned size)
{
  uint64_t v = 0;
  memcpy(&v, (const char *)data + (size_t)size * i, size);
  return v;
}

/* Put the walk at logical row `row` (input and mask). */
static void ow_seek(ow_walk *w, uint64_t row)
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
static int ow_first_selected(const wv_reduce_job *job, unsigned size,
                             uint64_t *row, uint64_t *v)
{
  uint64_t at = 0;
  if (job->has_mask) {
    size_t c = 0;
    for (; c < job->n_mask; c++) {
      const wv_span *m = &job->mask[c];
      uint64_t j = 0;
      while (j < m->rows && ow_get(m->data, j, 4) == 0)
        j++;
      at += j;
      if (j < m->rows)
        break;
    }
    if (c == job->n_mask)
      return 0;
  }
  ow_walk w = {.job = job};
  ow_seek(&w, at);
  if (w.c == job->n_input)
    return 0;
  *row = at;
  *v = ow_get(job->input[w.c].data, w.off, size);
  return 1;
}

/* Copy n rows of the current chunk (n <= rows left in it) into dst,
 * applying the mask. */
static void ow_copy(ow_walk *w, unsigned char *dst, uint64_t n)
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

static void ow_pad(unsigned char *dst, uint64_t n, uint64_t fill,
                   unsigned size)
{
  for (uint64_t i = 0; i < n; i++)
    memcpy(dst + (size_t)size * i, &fill, size);
}

/* The next n rows of the stream (chunks as one, from the walk's place),
 * padded with the fill past the last row. */
static void ow_stream(ow_walk *w, unsigned char *dst, uint64_t n)
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
    ow_copy(w, dst + (size_t)w->size * i, m);
    i += m;
  }
  ow_pad(dst + (size_t)w->size * i, n - i, w->fill, w->size);
}

/* Rows per staging window for rows of `size` bytes. */
static uint64_t ow_wrows(const wv_device *d, unsigned size)
{
  if (size == 4)
    return d->window_rows;
  uint64_t r = (d->window_rows / 2) & ~255ull;
  return r ? r : 256;
}

static uint32_t ow_groups(const wv_device *d, uint64_t nvec)
{
  uint64_t want = (nvec + 4 * WV_OCL_WG - 1) / (4 * WV_OCL_WG);
  uint64_t cap = (uint64_t)d->units * (d->gpu ? OW_GROUPS_PER_CU : 2);
  if (want > cap)
    want = cap;
  return want ? (uint32_t)want : 1;
}

/* ---- launches ------------------------------------------------------------ */

/* One pass of kernel k over nvec 16-byte vectors of in, one partial of
 * psize bytes per work-group at *np (advanced); base: the global index of
 * the first row (argmin/argmax kernels only, -1 for the others). */
static int ow_pass(wv_device *d, cl_kernel k, cl_mem in, uint64_t nvec,
                   int64_t base, size_t psize, cl_uint *np, cl_event *ev,
                   wave_error *err)
{
  uint32_t g = ow_groups(d, nvec);
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

/* Fold np partials with kernel k (its third argument `op`) and read
 * `bytes` of the result into res. */
static int ow_finish(wv_device *d, cl_kernel k, cl_uint np, cl_uint op,
                     void *res, size_t bytes, cl_event *ev, wave_error *err)
{
  int rv = wv_ocl_buf_reserve(d, &d->result, 32, err);
  if (rv != 0)
    return rv;
  clSetKernelArg(k, 0, sizeof d->part.mem, &d->part.mem);
  clSetKernelArg(k, 1, sizeof np, &np);
  clSetKernelArg(k, 2, sizeof op, &op);
  clSetKernelArg(k, 3, sizeof d->result.mem, &d->result.mem);
  if ((rv = wv_ocl_launch(d, k, WV_OCL_WG, WV_OCL_WG, ev, err)) != 0)
    return rv;
  cl_int e = clEnqueueReadBuffer(d->q, d->result.mem, CL_TRUE, 0, bytes, res,
                                 0, NULL, NULL);
  if (e != CL_SUCCESS)
    return wv_ocl_fail(err, e, "clEnqueueReadBuffer(result)");
  return 0;
}

/* ---- order-free ops on 64-bit rows --------------------------------------- */

static int ow_kernel(wave_dtype dt, wave_op op)
{
  switch (op) {
  case WAVE_SUM: return WV_OCLW_SUM;
  case WAVE_AND: return WV_OCLW_AND;
  case WAVE_OR: return WV_OCLW_OR;
  case WAVE_XOR: return WV_OCLW_XOR;
  case WAVE_MIN: return dt == WAVE_U64 ? WV_OCLW_UMIN
                      : dt == WAVE_S64 ? WV_OCLW_SMIN : WV_OCLW_FMIN;
  case WAVE_MAX: return dt == WAVE_U64 ? WV_OCLW_UMAX
                      : dt == WAVE_S64 ? WV_OCLW_SMAX : WV_OCLW_FMAX;
  default: return dt == WAVE_U64 ? WV_OCLW_UEXT
                : dt == WAVE_S64 ? WV_OCLW_SEXT : WV_OCLW_FEXT;
  }
}

static cl_uint ow_finish_op(wave_op op)
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

/* Result bits from 64-bit keys (reduce.cl for the keys). */
static void ow_decode(wave_dtype dt, wave_op op, const uint64_t keys[2],
                      wv_reduce_out *out)
{
  out->n_values = op == WAVE_EXTENT ? 2 : 1;
  out->bits[0] = keys[0];
  out->bits[1] = op == WAVE_EXTENT ? keys[1] : 0;
  if (op != WAVE_MIN && op != WAVE_MAX && op != WAVE_EXTENT)
    return;
  for (unsigned i = 0; i < out->n_values; i++) {
    uint64_t k = keys[i];
    int is_min = op == WAVE_MIN || (op == WAVE_EXTENT && i == 0);
    if (dt == WAVE_S64) {
      out->bits[i] = k ^ WV_F64_NEG_ZERO;
    } else if (dt == WAVE_F64) {
      if ((is_min && k == UINT64_MAX) || (!is_min && k == 0))
        out->bits[i] = 0;   /* no finite row */
      else
        out->bits[i] = (k & WV_F64_NEG_ZERO) ? (k & ~WV_F64_NEG_ZERO) : ~k;
    }
  }
}

static int ow_orderfree(wv_device *d, const wv_reduce_job *job,
                        wv_reduce_out *out, wave_error *err)
{
  ow_walk w = {.job = job, .size = 8};
  uint64_t row0 = 0;
  if (job->op == WAVE_AND)
    w.fill = UINT64_MAX;
  else if ((job->op == WAVE_MIN || job->op == WAVE_MAX ||
            job->op == WAVE_EXTENT) &&
           !ow_first_selected(job, 8, &row0, &w.fill))
    return 0;   /* nothing selected: the empty result */
  cl_kernel k = d->kw[ow_kernel(job->dtype, job->op)];
  const uint64_t wr = ow_wrows(d, 8), vrows = (job->rows + 1) & ~1ull;
  uint64_t nwin = (vrows + wr - 1) / wr;
  cl_uint np = 0;
  int rv = wv_ocl_buf_reserve(d, &d->part, (size_t)nwin *
                              ow_groups(d, wr / 2) * 16, err);
  for (uint64_t at = 0; at < vrows && rv == 0; at += wr) {
    uint64_t n = vrows - at < wr ? vrows - at : wr;
    unsigned s = d->cur;
    d->cur ^= 1;
    unsigned char *dst;
    if ((rv = wv_ocl_stage_get(d, s, (size_t)wr * 8, (void **)&dst,
                               err)) != 0)
      break;
    ow_stream(&w, dst, n);
    if ((rv = wv_ocl_stage_send(d, s, (size_t)n * 8, err)) == 0)
      rv = ow_pass(d, k, d->stage[s].dev, n / 2, -1, 16, &np, NULL, err);
  }
  if (rv != 0)
    return rv;
  out->count = w.selected;
  if (w.selected == 0)
    return 0;
  uint64_t keys[2];
  if ((rv = ow_finish(d, d->kw[WV_OCLW_FINISH], np, ow_finish_op(job->op),
                      keys, 16, NULL, err)) != 0)
    return rv;
  ow_decode(job->dtype, job->op, keys, out);
  return 0;
}

/* ---- argmin / argmax ----------------------------------------------------- */

static int ow_arg_kernel(wave_dtype dt, wave_op op)
{
  int mx = op == WAVE_ARGMAX;
  switch (dt) {
  case WAVE_U32: return mx ? WV_OCLW_ARG_UMAX32 : WV_OCLW_ARG_UMIN32;
  case WAVE_S32: return mx ? WV_OCLW_ARG_SMAX32 : WV_OCLW_ARG_SMIN32;
  case WAVE_F32: return mx ? WV_OCLW_ARG_FMAX32 : WV_OCLW_ARG_FMIN32;
  case WAVE_U64: return mx ? WV_OCLW_ARG_UMAX64 : WV_OCLW_ARG_UMIN64;
  case WAVE_S64: return mx ? WV_OCLW_ARG_SMAX64 : WV_OCLW_ARG_SMIN64;
  default: return mx ? WV_OCLW_ARG_FMAX64 : WV_OCLW_ARG_FMIN64;
  }
}

/* The value whose order key (reduce.cl) is k. */
static uint64_t ow_arg_value(wave_dtype dt, uint64_t k)
{
  switch (dt) {
  case WAVE_S32: return (k ^ 0x80000000u) & 0xffffffffu;
  case WAVE_S64: return k ^ WV_F64_NEG_ZERO;
  case WAVE_F32:
    return (k & 0x80000000u) ? (k & 0x7fffffffu) : (~k & 0xffffffffu);
  case WAVE_F64:
    return (k & WV_F64_NEG_ZERO) ? (k & ~WV_F64_NEG_ZERO) : ~k;
  default: return k;
  }
}

/* The answer from the folded (key, index, count) and the walk's count. */
static void ow_arg_answer(wave_dtype dt, const uint64_t res[4],
                          uint64_t selected, wv_reduce_out *out)
{
  int isf = dt == WAVE_F32 || dt == WAVE_F64;
  uint64_t count = isf ? res[2] : selected;
  if (count == 0)
    return;   /* out is already the empty answer */
  out->count = count;
  out->index = (int64_t)res[1];
  out->bits[0] = ow_arg_value(dt, res[0]);
}

static int ow_arg(wv_device *d, const wv_reduce_job *job, wv_reduce_out *out,
                  wave_error *err)
{
  const unsigned sz = wv_dtype_size(job->dtype), per = 16 / sz;
  const int isf = job->dtype == WAVE_F32 || job->dtype == WAVE_F64;
  ow_walk w = {.job = job, .size = sz};
  uint64_t i0 = 0, v0 = 0;
  out->index = -1;
  if (!ow_first_selected(job, sz, &i0, &v0))
    return 0;
  w.fill = !isf ? v0 : sz == 4 ? WV_F32_CANON_NAN : WV_F64_CANON_NAN;
  ow_seek(&w, i0);
  cl_kernel k = d->kw[ow_arg_kernel(job->dtype, job->op)];
  const uint64_t wr = ow_wrows(d, sz);
  const uint64_t vrows = (job->rows - i0 + per - 1) / per * per;
  uint64_t nwin = (vrows + wr - 1) / wr;
  cl_uint np = 0;
  int rv = wv_ocl_buf_reserve(d, &d->part, (size_t)nwin *
                              ow_groups(d, wr / per) * 32, err);
  for (uint64_t at = 0; at < vrows && rv == 0; at += wr) {
    uint64_t n = vrows - at < wr ? vrows - at : wr;
    unsigned s = d->cur;
    d->cur ^= 1;
    unsigned char *dst;
    if ((rv = wv_ocl_stage_get(d, s, (size_t)wr * sz, (void **)&dst,
                               err)) != 0)
      break;
    ow_stream(&w, dst, n);
    if ((rv = wv_ocl_stage_send(d, s, (size_t)n * sz, err)) == 0)
      rv = ow_pass(d, k, d->stage[s].dev, n / per, (int64_t)(i0 + at), 32,
                   &np, NULL, err);
  }
  uint64_t res[4];
  if (rv == 0)
    rv = ow_finish(d, d->kw[WV_OCLW_ARG_FINISH], np,
                   job->op == WAVE_ARGMAX, res, 32, NULL, err);
  if (rv == 0)
    ow_arg_answer(job->dtype, res, w.selected, out);
  return rv;
}

/* ---- float64 sum --------------------------------------------------------- */

static int ow_level1(wv_device *d, cl_mem in, uint64_t ngroups,
                     uint64_t part0, cl_event *ev, wave_error *err)
{
  if ((size_t)(part0 + ngroups) * 8 > d->part.size)  /* the caller reserves */
    return wv_seterr(err, WAVE_EINTERNAL, "opencl: partials overflow");
  cl_kernel k = d->kw[WV_OCLW_FSUM_LEVEL1];
  uint64_t want = (ngroups + 31) / 32;
  uint64_t cap = (uint64_t)d->units * (d->gpu ? 4 * OW_GROUPS_PER_CU : 2);
  if (want > cap)
    want = cap;
  cl_ulong ng = ngroups, p0 = part0;
  clSetKernelArg(k, 0, sizeof in, &in);
  clSetKernelArg(k, 1, sizeof ng, &ng);
  clSetKernelArg(k, 2, sizeof d->part.mem, &d->part.mem);
  clSetKernelArg(k, 3, sizeof p0, &p0);
  return wv_ocl_launch(d, k, (size_t)want * WV_OCL_WG, WV_OCL_WG, ev, err);
}

/* Virtual rows [at, at + n) of the float sum's layout into dst: the
 * current chunk's rows, its padding up to 256, the next non-empty chunk. */
static void ow_fsum_window(ow_walk *w, unsigned char *dst, uint64_t n)
{
  const wv_reduce_job *job = w->job;
  uint64_t i = 0;
  while (i < n) {
    while (w->c < job->n_input && job->input[w->c].rows == 0)
      w->c++;
    const uint64_t rows = job->input[w->c].rows;
    const uint64_t padded = (rows + 255) & ~255ull;
    uint64_t m;
    if (w->off < rows) {
      m = rows - w->off < n - i ? rows - w->off : n - i;
      ow_copy(w, dst + 8 * i, m);
    } else {
      m = padded - w->off < n - i ? padded - w->off : n - i;
      ow_pad(dst + 8 * i, m, WV_F64_NEG_ZERO, 8);
      w->off += m;
    }
    i += m;
    if (w->off == padded) {
      w->c++;
      w->off = 0;
    }
  }
}

static int ow_fsum(wv_device *d, const wv_reduce_job *job, wv_reduce_out *out,
                   wave_error *err)
{
  if (!d->fp64)
    return wv_seterr(err, WAVE_EUNSUPPORTED, "opencl: %s: float64 sums "
                     "refused: %s", d->name, d->fp64_note);
  size_t nseg = 0;
  for (size_t c = 0; c < job->n_input; c++)
    nseg += job->input[c].rows > 0;
  wv_ocl_seg *segs = malloc((nseg ? nseg : 1) * sizeof *segs);
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
  ow_walk w = {.job = job, .size = 8, .fill = WV_F64_NEG_ZERO};
  wv_ocl_plan pl;
  int rv = wv_ocl_plan_make(&pl, segs, nseg, err);
  free(segs);
  if (rv != 0)
    return rv;
  const uint64_t wr = ow_wrows(d, 8);
  if ((rv = wv_ocl_buf_reserve(d, &d->part, (size_t)(vtotal / 256) * 8,
                               err)) == 0)
    rv = wv_ocl_plan_send(d, &pl, 8, err);
  for (uint64_t at = 0; at < vtotal && rv == 0; at += wr) {
    uint64_t n = vtotal - at < wr ? vtotal - at : wr;
    unsigned s = d->cur;
    d->cur ^= 1;
    unsigned char *dst;
    if ((rv = wv_ocl_stage_get(d, s, (size_t)wr * 8, (void **)&dst,
                               err)) != 0)
      break;
    ow_fsum_window(&w, dst, n);
    if ((rv = wv_ocl_stage_send(d, s, (size_t)n * 8, err)) == 0)
      rv = ow_level1(d, d->stage[s].dev, n / 256, at / 256, NULL, err);
  }
  out->count = w.selected;
  double v = 0;
  if (rv == 0 && w.selected > 0)
    rv = wv_ocl_plan_run(d, &pl, d->kw[WV_OCLW_FSUM_TREE], 8, &v, NULL, err);
  free(pl.desc);
  if (rv == 0 && w.selected > 0)
    out->bits[0] = wv_f64_sum_finish(v, w.selected);
  return rv;
}

int wv_ocl_wide_reduce(wv_device *d, const wv_reduce_job *job,
                       wv_reduce_out *out, wave_error *err)
{
  if (d->wide == NULL)
    return wv_seterr(err, WAVE_EUNSUPPORTED, "opencl: %s: no wide program",
                     d->name);
  if (job->op == WAVE_ARGMIN || job->op == WAVE_ARGMAX)
    return ow_arg(d, job, out, err);
  if (job->dtype == WAVE_F64 && job->op == WAVE_SUM)
    return ow_fsum(d, job, out, err);
  return ow_orderfree(d, job, out, err);
}

/* ---- device-resident (bench) --------------------------------------------- */

int wv_ocl_wide_resident(wv_device *d, cl_mem data, uint64_t rows,
                         wave_dtype dtype, wave_op op, wv_reduce_out *out,
                         double *seconds, wave_error *err)
{
  memset(out, 0, sizeof *out);
  out->n_values = op == WAVE_EXTENT ? 2 : 1;
  out->count = rows;
  const unsigned sz = wv_dtype_size(dtype), per = 16 / sz;
  const int arg = op == WAVE_ARGMIN || op == WAVE_ARGMAX;
  cl_event e0 = NULL, e1 = NULL;
  cl_uint np = 0;
  int rv = wv_ocl_buf_reserve(d, &d->part, rows / 256 * 8 + (size_t)
                              ow_groups(d, rows / per) * 32, err);
  if (rv == 0 && dtype == WAVE_F64 && op == WAVE_SUM) {
    if (!d->fp64)
      return wv_seterr(err, WAVE_EUNSUPPORTED, "opencl: %s: %s", d->name,
                       d->fp64_note);
    wv_ocl_seg seg = {0, (uint32_t)(rows / 256)};
    wv_ocl_plan pl;
    if ((rv = wv_ocl_plan_make(&pl, &seg, 1, err)) != 0)
      return rv;
    double v = 0;
    if ((rv = wv_ocl_plan_send(d, &pl, 8, err)) == 0 &&
        (rv = ow_level1(d, data, rows / 256, 0, &e0, err)) == 0)
      rv = wv_ocl_plan_run(d, &pl, d->kw[WV_OCLW_FSUM_TREE], 8, &v, &e1,
                           err);
    free(pl.desc);
    if (rv == 0)
      out->bits[0] = wv_f64_sum_finish(v, rows);
  } else if (rv == 0 && arg) {
    uint64_t res[4];
    out->count = 0;
    out->index = -1;
    if ((rv = ow_pass(d, d->kw[ow_arg_kernel(dtype, op)], data, rows / per,
                      0, 32, &np, &e0, err)) == 0 &&
        (rv = ow_finish(d, d->kw[WV_OCLW_ARG_FINISH], np, op == WAVE_ARGMAX,
                        res, 32, &e1, err)) == 0)
      ow_arg_answer(dtype, res, rows, out);
  } else if (rv == 0) {
    uint64_t keys[2];
    if ((rv = ow_pass(d, d->kw[ow_kernel(dtype, op)], data, rows / 2, -1, 16,
                      &np, &e0, err)) == 0 &&
        (rv = ow_finish(d, d->kw[WV_OCLW_FINISH], np, ow_finish_op(op), keys,
                        16, &e1, err)) == 0)
      ow_decode(dtype, op, keys, out);
  }
  if (rv == 0 && seconds != NULL)
    *seconds = wv_ocl_span(e0, e1 != NULL ? e1 : e0);
  if (e0 != NULL)
    clReleaseEvent(e0);
  if (e1 != NULL)
    clReleaseEvent(e1);
  return rv;
}
