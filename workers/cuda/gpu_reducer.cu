/* gpu_reducer.cu - the host side of the CUDA/HIP reducer that needs no
 * kernel (gpu_reduce.cu has the kernels, their launches and
 * reducer_init): which kernel serves a dtype/op (kernel_op), the device
 * buffers the float sum's levels use, grown between jobs
 * (reducer_reserve, reducer_fini), and the job's result decoded from the
 * kernels' keys (decode_result; docs/reduction.md).  Built for CUDA and,
 * by hipcc, for HIP.
 */
#include <string.h>

#include "workers/cuda/gpu_internal.h"

namespace WVG_NS {

void kernel_op(wave_dtype d, wave_op op, int *kop_out, int *key_out)
{
  int k = K_SUM;
  switch (op) {
  case WAVE_SUM: k = d == WAVE_F32 ? K_FSUM : K_SUM; break;
  case WAVE_MIN: k = K_MIN; break;
  case WAVE_MAX: k = K_MAX; break;
  case WAVE_EXTENT: k = K_EXT; break;
  case WAVE_AND: k = K_AND; break;
  case WAVE_OR: k = K_OR; break;
  case WAVE_XOR: k = K_XOR; break;
  default: break;
  }
  *kop_out = k;
  *key_out = d == WAVE_F32 ? KEY_F32 : d == WAVE_S32 ? KEY_S32 : KEY_RAW;
}

void reducer_fini(reducer *r)
{
  (void)cudaFree(r->partials);
  (void)cudaFree(r->ticket);
  (void)cudaFree(r->res);
  (void)cudaFree(r->l1);
  (void)cudaFree(r->tile_ctr);
  (void)cudaFree(r->l2);
  (void)cudaFree(r->piece_ctr);
  (void)cudaFree(r->pieces);
  (void)cudaFree(r->seg);
  (void)cudaFree(r->scratch);
  memset(r, 0, sizeof *r);
}

/* Grow *p to at least n elements of size sz (contents are not kept; zeroed
 * when zero is set). */
static cudaError_t grow(void **p, size_t *cap, size_t n, size_t sz, int zero)
{
  if (n <= *cap)
    return cudaSuccess;
  size_t c = *cap ? *cap : 64;
  while (c < n)
    c *= 2;
  /* A grow happens between jobs: nothing in flight uses the old buffer
   * once the device is idle. */
  WVG_TRY(cudaDeviceSynchronize());
  (void)cudaFree(*p);
  *p = NULL;
  *cap = 0;
  WVG_TRY(cudaMalloc(p, c * sz));
  if (zero) {
    /* Kernels run on non-blocking streams: make the zeros land first. */
    WVG_TRY(cudaMemset(*p, 0, c * sz));
    WVG_TRY(cudaDeviceSynchronize());
  }
  *cap = c;
  return cudaSuccess;
}

cudaError_t reducer_reserve(reducer *r, size_t tiles, size_t pieces,
                            size_t job_pieces, size_t chunks)
{
  WVG_TRY(grow((void **)&r->l1, &r->l1_cap, tiles * 256, sizeof(float), 0));
  WVG_TRY(grow((void **)&r->tile_ctr, &r->tile_ctr_cap, tiles,
               sizeof(uint32_t), 1));
  WVG_TRY(grow((void **)&r->l2, &r->l2_cap, tiles, sizeof(float), 0));
  WVG_TRY(grow((void **)&r->piece_ctr, &r->piece_ctr_cap, pieces,
               sizeof(uint32_t), 1));
  WVG_TRY(grow((void **)&r->pieces, &r->pieces_cap, job_pieces, sizeof(float),
               0));
  WVG_TRY(grow((void **)&r->seg, &r->seg_cap, chunks + 1, sizeof(uint32_t),
               0));
  WVG_TRY(grow((void **)&r->scratch, &r->scratch_cap, 2 * chunks,
               sizeof(float), 0));
  return cudaSuccess;
}

static uint32_t f32_from_key(uint32_t k)
{
  return (k & 0x80000000u) ? (k & 0x7fffffffu) : ~k;
}

void decode_result(wave_dtype d, wave_op op, const result *res,
                   uint64_t count, wv_reduce_out *out)
{
  int kop, key;
  kernel_op(d, op, &kop, &key);
  out->n_values = op == WAVE_EXTENT ? 2 : 1;
  out->count = count;
  out->bits[0] = out->bits[1] = 0;
  if (count == 0)
    return;
  uint32_t a = res->a, b = res->b;
  if (kop == K_FSUM) {
    float s;
    memcpy(&s, &a, sizeof s);
    out->bits[0] = wv_f32_sum_finish(s, count);
    return;
  }
  if (key == KEY_S32 && (kop == K_MIN || kop == K_MAX || kop == K_EXT)) {
    a ^= 0x80000000u;
    b ^= 0x80000000u;
  } else if (key == KEY_F32) {
    /* No finite row: min stayed 0xffffffff / max stayed 0 -> +0.0. */
    if (kop == K_MAX)
      a = a == 0 ? 0 : f32_from_key(a);
    else
      a = a == 0xffffffffu ? 0 : f32_from_key(a);
    if (kop == K_EXT)
      b = res->a == 0xffffffffu ? 0 : f32_from_key(b);
  }
  out->bits[0] = a;
  out->bits[1] = kop == K_EXT ? b : 0;
}

} /* namespace WVG_NS */
