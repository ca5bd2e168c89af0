/* gpu_reducer.cu - the host side of the CUDA/HIP reducer that needs no
 * kernel (gpu_reduce.cu has the kernels, their launches and
 * reducer_init): which kernel serves an op-table plan (kernel_op), the
 * reducer's buffers (reducer_reserve, reducer_fini; the tree's growth is
 * gpu_tree.cu's), and the job's result decoded from the
 * kernels' keys on the plan, for the reducer and the wide reducer
 * (decode_plan; docs/reduction.md).  Built for CUDA and,
 * by hipcc, for HIP.
 */
#include <string.h>

#include "workers/cuda/gpu_wide.h"

namespace WVG_NS {

int kernel_op(const wv_op_plan *p)
{
  if (p->path == WV_PATH_FSUM)
    return K_FSUM;
  if (p->path == WV_PATH_XSUM)
    return K_XSUM;
  if (p->path == WV_PATH_ARG)
    return p->halves == WV_HALF_HI ? K_ARGMAX : K_ARGMIN;
  if (p->path == WV_PATH_KEYS)
    return p->halves == (WV_HALF_LO | WV_HALF_HI) ? K_EXT
         : p->halves == WV_HALF_HI ? K_MAX : K_MIN;
  return p->acc == WV_ACC_AND ? K_AND : p->acc == WV_ACC_OR ? K_OR
       : p->acc == WV_ACC_XOR ? K_XOR : K_SUM;
}

void reducer_fini(reducer *r)
{
  (void)cudaFree(r->partials);
  (void)cudaFree(r->ticket);
  (void)cudaFree(r->res);
  tree_free(&r->tree);
  memset(r, 0, sizeof *r);
}

cudaError_t reducer_reserve(reducer *r, size_t tiles, size_t pieces,
                            size_t job_pieces, size_t chunks)
{
  return tree_reserve(&r->tree, tiles, pieces, job_pieces, chunks);
}

void decode_plan(const wv_op_plan *p, uint64_t a, uint64_t b, uint64_t idx,
                 uint64_t count, wv_reduce_out *out)
{
  const int arg = p->path == WV_PATH_ARG;
  out->n_values = p->n_values;
  out->count = count;
  out->bits[0] = out->bits[1] = 0;
  out->index = arg ? -1 : 0;
  if (count == 0 || (arg && idx == WVG_NOIDX)) {
    out->count = 0;
    return;
  }
  if (p->path == WV_PATH_FSUM) {
    if (p->row_bytes == 8) {
      double s;
      memcpy(&s, &a, sizeof s);
      out->bits[0] = wv_f64_sum_finish(s, count);
    } else {
      uint32_t a32 = (uint32_t)a;
      float s;
      memcpy(&s, &a32, sizeof s);
      out->bits[0] = wv_f32_sum_finish(s, count);
    }
    return;
  }
  if (arg) {
    out->bits[0] = wv_unkey_of(p->key, p->row_bytes, a);
    out->index = (int64_t)idx;
    return;
  }
  if (p->path == WV_PATH_KEYS) {
    /* No finite row: min stayed all ones / max stayed 0 -> +0.0. */
    int none = p->finite_only &&
               a == (p->halves & WV_HALF_LO ? p->ones : 0);
    a = none ? 0 : wv_unkey_of(p->key, p->row_bytes, a);
    b = none ? 0 : wv_unkey_of(p->key, p->row_bytes, b);
  }
  out->bits[0] = a;
  out->bits[1] = p->n_values == 2 ? b : 0;
}

void decode_result(wave_dtype d, wave_op op, const result *res,
                   uint64_t count, wv_reduce_out *out)
{
  decode_plan(wv_op_plan_of(d, op), res->a, res->b, 0, count, out);
}

void decode_wide(wave_dtype d, wave_op op, const wresult *res, uint64_t count,
                 wv_reduce_out *out)
{
  decode_plan(wv_op_plan_of(d, op), res->a, res->b, res->idx, count, out);
}

int wide_counts(wave_dtype d, wave_op op, int has_mask)
{
  return has_mask || wv_op_plan_of(d, op)->count_finite;
}

} /* namespace WVG_NS */
