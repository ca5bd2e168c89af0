/* gpu_wide.h - the CUDA/HIP backend's 64-bit dtypes and argmin/argmax
 * (issue 23; docs/reduction.md is the contract), shared by its files and
 * the GPU benchmarks.
 *
 *  - gpu_wide.cu: the streaming kernels: every order-free op on 64-bit rows
 *    (k_w64) and argmin/argmax on 4- and 8-byte rows (k_arg);
 *  - gpu_tree.cu: the float64 sum, the float32 tree's template in binary64;
 *  - gpu_wide_host.cu: jobs whose rows are in host memory, sliced through
 *    the device's staging buffers (gpu_device.cu's gather/submit), and the
 *    result decoded.
 *
 * The scratch lives in its own struct (wreducer), made on a device's first
 * wide job, so 32-bit jobs see no change.
 */
#ifndef WV_GPU_WIDE_H
#define WV_GPU_WIDE_H

#include <functional>
#include <vector>

#include "workers/cuda/gpu_internal.h"

namespace WVG_NS {

/* The 64-bit rows' names of the key kinds (enum kkey: the same kinds). */
constexpr int KEY_S64 = KEY_S32, KEY_F64 = KEY_F32;

/* The job's result in device memory.  Order-free ops: a (min key for
 * extent), b (max key); argmin/argmax: a = the key, idx = the global row
 * (WVG_NOIDX: none); float64 sum: a = the bits.  count: selected rows
 * (argmin/argmax: rows considered), kept only where the host cannot
 * know it. */
struct wresult {
  unsigned long long a, b, count, idx;
};

/* Device scratch of the wide kernels, grown on demand. */
struct wreducer {
  unsigned blocks;            /* grid of the streaming kernels */
  wresult *partials;          /* [blocks] */
  uint32_t *ticket;           /* last-block counter, 0 between launches */
  wresult *res;
  tree_bufs<double> tree;     /* the float64 sum's (gpu_tree.cu) */
  wresult *h_res;             /* pinned, the read-back (host jobs only) */
};

cudaError_t wreducer_init(wreducer *w);
void wreducer_fini(wreducer *w);
cudaError_t wreducer_reserve(wreducer *w, size_t tiles, size_t pieces,
                             size_t job_pieces, size_t chunks);

/* One launch of an order-free 64-bit op (k_w64) or of argmin/argmax
 * (k_arg, any row size) over rows [0, n) of d_rows (16-byte aligned) and
 * d_mask (or NULL); first: start the result, else fold into it.  idx0: the
 * global index of row 0 (argmin/argmax). */
cudaError_t launch_w64(wreducer *w, int kop, int key, const void *d_rows,
                       const uint32_t *d_mask, uint64_t n, int first,
                       cudaStream_t st);
cudaError_t launch_arg(wreducer *w, const wv_op_plan *p, const void *d_rows,
                       const uint32_t *d_mask, uint64_t n, uint64_t idx0,
                       int first, cudaStream_t st);

/* Reduce n device-resident rows (one chunk) into w->res on st, no host
 * synchronisation (benchmarks time this).  A float64 sum of more than
 * 2^24 rows needs wreducer_reserve for its tiles and pieces first. */
cudaError_t reduce_device_wide(wreducer *w, wave_dtype d, wave_op op,
                               const void *d_rows, const uint32_t *d_mask,
                               uint64_t n, cudaStream_t st);

/* The read-back result as output bits (keys decoded, empty and NaN
 * rules).  count: the selected rows where the kernel did not count them
 * (no mask; not argmin/argmax of a float). */
void decode_wide(wave_dtype d, wave_op op, const wresult *res, uint64_t count,
                 wv_reduce_out *out);
/* Whether the kernels count the job's rows themselves. */
int wide_counts(wave_dtype d, wave_op op, int has_mask);

/* ---- staging, shared with gpu_device.cu --------------------------------- */

/* A piece of a copy into the current slot: dst offset, source, bytes. */
struct seg {
  size_t off;
  const void *src;
  size_t bytes;
  int pinned;
};

/* Walks a chunked array (input or mask) in logical row order; rows of
 * rsz bytes. */
struct cursor {
  const wv_span *spans;
  size_t n, i;
  uint64_t off;               /* rows into spans[i] */
  std::vector<signed char> pinned; /* per span: -1 unknown, 0, 1 */
  unsigned rsz = 4;
};

typedef std::function<cudaError_t(unsigned char *)> slot_kernel;

int span_pinned(const void *data, uint64_t bytes);
void add_seg(std::vector<seg> *segs, size_t dst, const void *src,
             size_t bytes, int whole_pinned);
void gather(cursor *c, uint64_t rows, size_t dst, std::vector<seg> *segs);
int submit(gdev *g, unsigned k, const std::vector<seg> &segs,
           size_t table_bytes, bool direct, const slot_kernel &kernel,
           wave_error *err);

/* An order-free op or argmin/argmax from host memory, into the reducer's
 * result (32-bit rows) or the wide reducer's (gpu_wide_host.cu). */
int reduce_stream(gdev *g, const wv_reduce_job *job, const wv_op_plan *p,
                  wave_error *err);
/* A float sum from host memory into res (gpu_wide_host.cu; T float with
 * R result, or double with R wresult): each chunk is cut into pieces of
 * piece_rows rows of its own (a multiple of 65536: float32 2^24, float64
 * one tile), packed into slices at 4-row-aligned offsets with tile and
 * piece tables; launch_tree_finish folds the pieces where there are
 * several.  Nothing is read back. */
template <typename T, typename R>
int reduce_tree(gdev *g, const wv_reduce_job *job, tree_bufs<T> *tb, R *res,
                uint32_t piece_rows, wave_error *err);

/* A wide job from host memory, result read back and decoded
 * (gpu_wide_host.cu; the device's wreducer is made on its first one). */
int reduce_wide_job(gdev *g, const wv_reduce_job *job, wv_reduce_out *out,
                    wave_error *err);

} /* namespace WVG_NS */

#endif
