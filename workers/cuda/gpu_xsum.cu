/* gpu_xsum.cu - the exact float sum, op fsum, of the CUDA and HIP
 * backends (issue 39; docs/reduction.md "fsum"): one kernel template over
 * float32 and float64 traits, its launches, and the jobs from host memory.
 *
 * A finite row is +-M * 2^b units (core/xsum.h: b = e - 1, or 0 for a
 * subnormal).  A persistent grid streams 16-byte vectors, four in flight per
 * thread (a unit), like k_int.
 *
 * Float32 (xs_unit32).  A thread keeps a window of XS_WIN32 = 18 binades,
 * e in [elo, elo + 18), and the sum w of its rows there in a double
 * register.  A unit's keys (x << 1, a row's magnitude in order) give its
 * least and largest; when every lane's rows lie in its window (the vote),
 * each row is converted to a double (exact) and added to w: one conversion
 * and one add a row, as in a plain sum.  Else every row of the unit goes to
 * the thread's double bins (below), one conversion and one load-add-store a
 * row, the same for every lane; a unit whose largest key is an inf or NaN
 * (on HIP every unit, for its subnormals) has each row looked at, and those
 * go to xs_rare32 after it (flags; HIP's subnormals built from M and b).
 * A thread whose rows missed its window but span at most 18 binades, with
 * no zero, subnormal, inf or NaN, flushes w and moves the window there, its
 * top one binade above the largest row; the first row sets the first
 * window.  So narrow data settles at its first unit, and data spread
 * wider (the whole range, cancelling clusters) takes the bins every unit
 * and never moves a window back and forth.  w is exact: rows of binades
 * elo .. elo + 17 are multiples of the grain 2^(elo - 1) units below
 * 2^(24 + 17) grains, and a thread's fewer than 2^12 rows keep every
 * partial sum below 2^53 grains.  A flush (xs_thread::w_flush) turns w into
 * the integer w * 2^(149 - lo8), lo8 = (elo - 1) & ~7, below 2^60 units of
 * 2^lo8, in 32-bit pieces at shared bins lo8 / 8 and lo8 / 8 + 4.  w and
 * the bins start at -0.0, which only -0.0 rows keep (a sum that cancels is
 * +0.0), so a thread's end reads "a row other than -0.0" off them.
 *
 * Float64.  Each thread keeps a register sum S of the rows whose b lies in
 * its window [lo, lo + 24) (lo a multiple of 8; it starts at the thread's
 * first row): a row adds +-M * 2^(b - lo), one multiply-add.  When a lane
 * meets any other row (outside the window, or a zero, subnormal, inf or
 * NaN), the warp's unit goes row by row, one branch a row: a hit by the
 * multiply-add, a miss (xs_miss64) straight into the shared bins, two
 * atomics (an inf or NaN a flag, a zero nothing).  A thread whose rows
 * missed its window but fit the one at their largest, lo = clamp((b & ~7)
 * - 8) (as xs_prep's keys say: the top word << 1, least and largest), with
 * no zero, subnormal, inf or NaN, flushes S into the shared bins and moves
 * the window there after the unit.  So data of up to about 16 binades
 * settles in one window per thread at its first unit, and neither data
 * spread over the whole range nor two clusters (cancelling data) move
 * windows back and forth.  A unit of a job without a mask in which every
 * lane's rows missed but for under a quarter of them (the whole range)
 * sends the warp's next 1, 2, 4, .. 32 units straight to the shared bins,
 * with no window test and no keys (xs_direct64), then tries the window
 * again.  M is kept as two parts, Ml = M mod 2^26 and Mh = M >> 26, in
 * two sums S = Sl + Sh * 2^26, so that every product fits in 64 bits.
 *
 * Float32's misses: double bins.  A thread has 16 doubles in shared memory,
 * [bucket][thread] (a thread's own words: a plain load, add and store, no
 * atomic, no bank conflict beyond a 64-bit access's two wavefronts), bucket
 * h = e / 16 of the exponent field.  A float32 row is exact as a double: a
 * finite row by conversion (CUDA: PTX's cvt.f64.f32 without .ftz, exact for
 * subnormals whatever the build's flags; HIP converts normal rows and zeros,
 * and xs_rare32 builds its subnormals from M and b, which no flush-to-zero
 * mode can touch).  The rows of bucket h are multiples
 * of 2^(16h - 1) units (h = 0: 1 unit) below 2^40 of them, so a bin adds up to
 * 2^13 rows exactly (XS_BIN_ROWS; a thread gets fewer than 2^12 in a launch,
 * below).  At the block's end, after a barrier, thread q < 256 takes bucket
 * q / 16 of 16 threads: each double times 2^(157 - 16h) (h = 0: 2^149) is an
 * exact integer below 2^59 of units 2^(16h - 8) (bin 2h - 1; h = 0: bin 0),
 * their low 32 bits summed (< 2^36) at that bin and their signed high parts
 * (|.| < 2^31) at 4 bins above (xs_bins_out).  Float64 has no such bins: its
 * 53-bit significand would need bins of at most 14 binades (2 parts of 27
 * bits, 12 bits of headroom), 147 buckets, far past shared memory.
 *
 * Shared bins: int64, bin k weighs 2^(8k) units, a positive and a negative
 * half (magnitudes, so that a piece is one 32-bit add: NVIDIA's shared atomics
 * are 32-bit, xs_shared_add adds the high word only on a carry), kept as
 * 32-bit words, the low words of all bins first and the high words after them
 * (uint32_t sb[4 * NB]: a warp's scattered low-word adds spread over all 32
 * banks, where an int64 array had them in the 16 even ones).  Float64's full
 * range adds two pieces a row there (xs_shared_add2: both atomics in flight
 * before either carry is looked at).  A flush cuts |S| into 32-bit pieces at
 * bins lo/8, lo/8 + 4 (and lo/8 + 8 for float64); a direct row is M << (b % 8)
 * at b/8 (float64: its high part at b/8 + 4).  At the end each block adds its
 * bins (positive less negative) into the job's result (global, int64, width 8
 * too), cut into a low 32-bit piece at k and the rest at k + 4; the host folds
 * the result (wv_xsum_add_bins) and rounds it once.  NaN, +-inf and "a row
 * other than -0.0" are flags (atomicOr); masked jobs count their selected rows
 * (an unselected row is -0.0: float32 adds it, float64 with a zero
 * multiplier).
 *
 * Bounds (nothing overflows its int64):
 *  - a launch gives a block at most 2^19 rows (grid >= n / 2^19), so a
 *    thread at most 2^11 + 8 < 2^12 rows;
 *  - float32: w stays below 2^53 grains and its flush below 2^60 (above);
 *    float64: |Ml * 2^d| < 2^49, |Mh * 2^d| < 2^50 (Mh < 2^27),
 *    so |Sl| < 2^61, |Sh| < 2^62;
 *  - float32 double bins: a bin's rows are below 2^40 of its grain and a
 *    thread has fewer than 2^12 rows, so every partial sum is an integer
 *    multiple of the grain below 2^52 of them: exact in a double;
 *  - every piece added to a shared bin by a flush or a direct row is
 *    below 2^32, and a bin gets at most one piece per flush or direct row;
 *    a block has at most one of those per row plus one flush per thread,
 *    and (float32) at most 16 parts below 2^36 and 16 below 2^31 from
 *    the double bins, so a shared half stays below
 *    2^32 * (2^19 + 2^9) + 2^41 < 2^52;
 *  - a result bin gets two pieces below 2^32 per block per launch, so it
 *    stays exact for fewer than 2^30 blocks in all the launches of a job.
 * Windows: float32 elo <= 254 - 17 = 237, so lo8 <= 232 and pieces reach
 * bin 232/8 + 4 = 33 (34 shared bins, 38 result bins); its keys [elo << 24,
 * (elo + 18) << 24) hold no zero, subnormal, inf or NaN.  Float64 b <= 2045
 * and lo <= 2024: bin 2024/8 + 8 = 261 (262 shared, 266 result bins); its
 * fast test is d = e - (lo + 1) < lim (unsigned), lim = min(24, EMAX - lo -
 * 1), which no exponent field of 0 (zero, subnormal) or EMAX (inf, NaN)
 * passes.
 */
#include <stdlib.h>
#include <string.h>

#include "workers/cuda/gpu_xsum_rows.h"

namespace WVG_NS {

/* ---- the kernel --------------------------------------------------------- */

/* CUDA's second launch bound counts blocks an SM (xs_traits::MINB);
 * HIP's counts waves per SIMD, and is left out there. */
#ifdef WV_GPU_HIP
#define XS_BOUNDS(T) __launch_bounds__(WVG_BLOCK)
#else
#define XS_BOUNDS(T) __launch_bounds__(WVG_BLOCK, xs_traits<T>::MINB)
#endif

template <typename T, bool MASK>
__global__ void XS_BOUNDS(T)
k_xsum(const uint4 *__restrict__ data,
       const typename xs_traits<T>::MV *__restrict__ mask, uint64_t n,
       xresult *res, xresult *other)
{
  typedef xs_traits<T> X;
  __shared__ uint32_t sb[4 * X::NB];   /* + and - halves, xs_shared_add */
  /* float32's double bins, [bucket][thread] (float64: none) */
  __shared__ double db[X::BINS ? XS_BUCKETS * WVG_BLOCK : 1];
  for (uint32_t k = threadIdx.x; k < 4 * X::NB; k += WVG_BLOCK)
    sb[k] = 0;
  if (X::BINS)
    for (uint32_t h = 0; h < XS_BUCKETS; h++)
      db[h * WVG_BLOCK + threadIdx.x] = -0.0;   /* xs_thread::end */
  if (other != NULL && blockIdx.x == 0) {
    /* The next job's result (the previous job's, read back by now). */
    for (uint32_t k = threadIdx.x; k < X::NG; k += WVG_BLOCK)
      other->bins[k] = 0;
    if (threadIdx.x == 0) {
      other->count = 0;
      other->flags = 0;
    }
  }
  __syncthreads();

  xs_thread<T> t;
  t.init(X::BINS ? db + threadIdx.x : NULL);
  xs_rows<T, MASK>(t, data, mask, n,
                   (uint64_t)blockIdx.x * WVG_BLOCK + threadIdx.x,
                   (uint64_t)gridDim.x * WVG_BLOCK,
                   blockIdx.x == 0 ? threadIdx.x : ~0u, sb);
  t.end(sb);

  uint32_t f = unit_or(t.flags | (t.nz != 0 ? WV_XSUM_NOT_NEGZERO : 0u));
  if (lane_id() == 0 && f != 0)
    atomicOr(&res->flags, f);
  if (MASK) {
    uint32_t c = unit_add(t.cnt);
    if (lane_id() == 0 && c != 0)
      atomicAdd(&res->count, (unsigned long long)c);
  }
  __syncthreads();
  if (X::BINS) {
    for (uint32_t q = threadIdx.x; q < XS_BUCKETS * 16; q += WVG_BLOCK)
      xs_bins_out(db, q, sb);
    __syncthreads();
  }
  for (uint32_t k = threadIdx.x; k < X::NB; k += WVG_BLOCK)
    xs_bin_out<T>(sb, k, res);
}

/* ---- host side ---------------------------------------------------------- */

template <typename T, bool MASK>
static cudaError_t gx_blocks(int sms, unsigned *out)
{
  int per_sm = 0;
  WVG_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &per_sm, k_xsum<T, MASK>, WVG_BLOCK, 0));
  *out = (unsigned)(sms * (per_sm < 1 ? 1 : per_sm));
  return cudaSuccess;
}

cudaError_t xreducer_init(xreducer *x)
{
  memset(x, 0, sizeof *x);
  int dev = 0, sms = 0;
  WVG_TRY(cudaGetDevice(&dev));
  WVG_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  /* One wave of each variant's resident blocks: a second, partial wave
   * would leave the GPU half idle for its turn. */
  WVG_TRY((gx_blocks<float, false>(sms, &x->blocks[0][0])));
  WVG_TRY((gx_blocks<float, true>(sms, &x->blocks[0][1])));
  WVG_TRY((gx_blocks<double, false>(sms, &x->blocks[1][0])));
  WVG_TRY((gx_blocks<double, true>(sms, &x->blocks[1][1])));
  WVG_TRY(cudaMalloc((void **)&x->res, 2 * sizeof(xresult)));
  WVG_TRY(cudaMemset(x->res, 0, 2 * sizeof(xresult)));
  WVG_TRY(cudaHostAlloc((void **)&x->h_res, sizeof(xresult),
                        cudaHostAllocDefault));
  return cudaSuccess;
}

void xreducer_fini(xreducer *x)
{
  (void)cudaFree(x->res);
  if (x->h_res != NULL)
    (void)cudaFreeHost(x->h_res);
  memset(x, 0, sizeof *x);
}

cudaError_t xsum_begin(xreducer *x, cudaStream_t st)
{
  x->cur ^= 1u;
  if (x->stale) {
    /* A job failed half-way: its first launch may not have run. */
    WVG_TRY(cudaMemsetAsync(x->res, 0, 2 * sizeof(xresult), st));
    x->stale = 0;
  }
  return cudaSuccess;
}

template <typename T>
static cudaError_t gx_go(xreducer *x, const void *rows, const uint32_t *mask,
                         uint64_t n, int first, cudaStream_t st)
{
  typedef xs_traits<T> X;
  uint64_t want = xs_grid<T>(n, x->blocks[X::VR == 2][mask != NULL]);
  xresult *cur = x->res + x->cur;
  xresult *other = first ? x->res + (x->cur ^ 1u) : NULL;
  if (mask != NULL)
    k_xsum<T, true><<<(unsigned)want, WVG_BLOCK, 0, st>>>(
        (const uint4 *)rows, (const typename X::MV *)mask, n, cur, other);
  else
    k_xsum<T, false><<<(unsigned)want, WVG_BLOCK, 0, st>>>(
        (const uint4 *)rows, NULL, n, cur, other);
  return cudaGetLastError();
}

cudaError_t launch_xsum(xreducer *x, wave_dtype d, const void *d_rows,
                        const uint32_t *d_mask, uint64_t n, int first,
                        cudaStream_t st)
{
  return d == WAVE_F64 ? gx_go<double>(x, d_rows, d_mask, n, first, st)
                       : gx_go<float>(x, d_rows, d_mask, n, first, st);
}

cudaError_t reduce_device_xsum(xreducer *x, wave_dtype d, const void *d_rows,
                               const uint32_t *d_mask, uint64_t n,
                               cudaStream_t st)
{
  WVG_TRY(xsum_begin(x, st));
  return launch_xsum(x, d, d_rows, d_mask, n, 1, st);
}

static size_t gx_bytes(wave_dtype d)
{
  unsigned ng = d == WAVE_F64 ? WVG_XS_BINS_F64 : WVG_XS_BINS_F32;
  return offsetof(xresult, bins) + ng * sizeof(unsigned long long);
}

void xsum_fold(wave_dtype d, const xresult *h, wv_xsum *xs)
{
  unsigned ng = d == WAVE_F64 ? WVG_XS_BINS_F64 : WVG_XS_BINS_F32;
  wv_xsum_init(xs, d);
  /* wv_xsum_add_i64 takes a value whose low bit lies below the top limb
   * (it writes the limb above the value's): bins up to bit B =
   * 64 * (n_limbs - 2) go as they are, the few above B (they hold the top
   * of a huge sum) are summed first as a 128-bit T (|T| < 2^114: |X| <
   * 2^2162 units) and added at B in two pieces. */
  const unsigned top = 8u * (xs->n_limbs - 2);   /* bin at bit B */
  const int64_t *b = (const int64_t *)h->bins;
  wv_xsum_add_bins(xs, b, top, 8);
  __int128 t = 0;
  for (unsigned i = ng; i-- > top;)
    t = t * 256 + b[i];
  wv_xsum_add_i64(xs, (int64_t)(t & 0xffffffff), 8u * top);
  wv_xsum_add_i64(xs, (int64_t)(t >> 32), 8u * top + 32);
  xs->flags = h->flags;
}

/* The answer of an exact sum xs over count selected rows. */
static void gx_out(wave_dtype d, const wv_xsum *xs, uint64_t count,
                   wv_reduce_out *out)
{
  out->n_values = 1;
  out->count = count;
  out->index = 0;
  out->bits[0] = wv_xsum_round(xs, count);
  out->bits[1] = 0;
  out->xsum = *xs;
}

cudaError_t xsum_read(xreducer *x, wave_dtype d, int has_mask, uint64_t rows,
                      wv_reduce_out *out)
{
  WVG_TRY(cudaMemcpy(x->h_res, x->res + x->cur, gx_bytes(d),
                     cudaMemcpyDeviceToHost));
  wv_xsum xs;
  xsum_fold(d, x->h_res, &xs);
  gx_out(d, &xs, has_mask ? x->h_res->count : rows, out);
  return cudaSuccess;
}

#define CK(call)                                                               \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess)                                                     \
      return dev_fail(err, #call, e_);                                         \
  } while (0)

int reduce_xsum_job(gdev *g, const wv_reduce_job *job, wv_reduce_out *out,
                    wave_error *err)
{
  if (job->rows == 0) {
    wv_xsum xs;
    wv_xsum_init(&xs, job->dtype);
    gx_out(job->dtype, &xs, 0, out);
    return 0;
  }
  CK(cudaSetDevice(g->index));
  if (g->xs == NULL) {
    xreducer *x = (xreducer *)calloc(1, sizeof *x);
    if (x == NULL)
      return wv_seterr(err, WAVE_ENOMEM, NULL);
    cudaError_t e = xreducer_init(x);
    if (e != cudaSuccess) {
      xreducer_fini(x);
      free(x);
      return dev_fail(err, "xreducer_init", e);
    }
    g->xs = x;
  }
  xreducer *x = g->xs;
  CK(xsum_begin(x, g->compute));
  x->stale = 1;                   /* until the job's result is read */
  int rv = reduce_stream(g, job, wv_op_plan_of(job->dtype, job->op), err);
  if (rv != 0)
    return rv;
  CK(cudaMemcpyAsync(x->h_res, x->res + x->cur, gx_bytes(job->dtype),
                     cudaMemcpyDeviceToHost, g->compute));
  CK(cudaStreamSynchronize(g->compute));
  CK(cudaGetLastError());
  x->stale = 0;
  wv_xsum xs;
  xsum_fold(job->dtype, x->h_res, &xs);
  gx_out(job->dtype, &xs, job->has_mask ? x->h_res->count : job->rows, out);
  return 0;
}

} /* namespace WVG_NS */
