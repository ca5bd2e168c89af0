/* gpu_xsum.h - the CUDA/HIP backend's exact float sum, op fsum (issue 39;
 * docs/reduction.md "fsum"), shared by its files and the GPU benchmarks.
 *
 * gpu_xsum.cu has the kernel (one template over float32 and float64
 * traits), its launches, and the jobs from host memory: slices of
 * consecutive logical rows through gpu_wide_host.cu's reduce_stream
 * (fsum is order-free, so chunk boundaries do not matter), the result
 * read back once and folded into a wv_xsum on the host
 * (wv_xsum_add_bins), then rounded (wv_xsum_round).
 *
 * The device result is a set of signed int64 bins of width 8 bits of the
 * accumulator (bin k weighs 2^(8k) units of the dtype's smallest
 * subnormal), the flags (core/xsum.h's WV_XSUM_*) and the selected-row
 * count.  Two results alternate between jobs: a job's first launch zeroes
 * the other one, which the previous job's read-back has finished with
 * (the same stream), so no job waits on a memset.
 */
#ifndef WV_GPU_XSUM_H
#define WV_GPU_XSUM_H

#include "workers/cuda/gpu_wide.h"

extern "C" {
#include "core/xsum.h"
}

namespace WVG_NS {

/* Bins of a result: float32 38, float64 266 (gpu_xsum.cu proves them). */
#define WVG_XS_BINS_F32 38u
#define WVG_XS_BINS_F64 266u

struct xresult {
  unsigned long long count;   /* selected rows (masked jobs) */
  uint32_t flags;             /* WV_XSUM_* */
  uint32_t pad;
  unsigned long long bins[WVG_XS_BINS_F64];
};

struct xreducer {
  unsigned blocks[2][2];      /* the persistent grid, [float64][masked] */
  xresult *res;               /* [2], alternating between jobs */
  unsigned cur;               /* the result of the job under way */
  int stale;                  /* a job failed: zero both at the next */
  xresult *h_res;             /* pinned, the read-back */
};

cudaError_t xreducer_init(xreducer *x);
void xreducer_fini(xreducer *x);

/* Start a job: the next result becomes the current one (its zeros were
 * written by the previous job's first launch, or at init; after a failed
 * job both are zeroed on st). */
cudaError_t xsum_begin(xreducer *x, cudaStream_t st);
/* One launch over rows [0, n) of d_rows (float32 or float64, 16-byte
 * aligned) and d_mask (or NULL), adding into the current result; first:
 * the job's first launch (it zeroes the other result). */
cudaError_t launch_xsum(xreducer *x, wave_dtype d, const void *d_rows,
                        const uint32_t *d_mask, uint64_t n, int first,
                        cudaStream_t st);
/* A whole job of n device-resident rows (begin + one launch), no host
 * synchronisation (benchmarks time this). */
cudaError_t reduce_device_xsum(xreducer *x, wave_dtype d, const void *d_rows,
                               const uint32_t *d_mask, uint64_t n,
                               cudaStream_t st);
/* The read-back current result (h: the bins of d) folded into xs; count:
 * the selected rows where the kernel counted them (masked jobs). */
void xsum_fold(wave_dtype d, const xresult *h, wv_xsum *xs);
/* Benchmarks: read the current result back (synchronous), fold it and
 * round it into out (count: rows of an unmasked job). */
cudaError_t xsum_read(xreducer *x, wave_dtype d, int has_mask, uint64_t rows,
                      wv_reduce_out *out);

/* A fsum job from host memory, read back and decoded (the device's
 * xreducer is made on its first one). */
int reduce_xsum_job(gdev *g, const wv_reduce_job *job, wv_reduce_out *out,
                    wave_error *err);

} /* namespace WVG_NS */

#endif
