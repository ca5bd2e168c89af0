/* gpu_seg.cu - hash batches folded on the device: the hash_batch slot
 * (struct wv_hash_batch in core/segments.h, its host reference
 * wv_hash_fold in core/hashmerge.h; docs/hash.md "Segments").  Built for
 * CUDA and, by hipcc, for HIP.
 *
 * A batch is cut into sub-batches at absolute multiples of 2^24 nonces,
 * so a segment (at most 2^20 nonces, aligned at multiples of 2^s) never
 * straddles two.  For each sub-batch, k_hash (gpu_hash.cu) writes the
 * outputs into slot k % 2's device buffer on the compute stream; then, on
 * the fold stream:
 *   k_seg_fold     one thread per segment piece walks its outputs in nonce
 *                  order: FNV-1a-64, winner count, best (min output, first
 *                  index);
 *   k_seg_scan     one block: the exclusive prefix of the winner counts
 *                  over the whole batch so far (the running count lives on
 *                  the device, exact, 64 bits), and the best so far;
 *   k_seg_collect  one thread per segment whose winners start before
 *                  max_winners walks it again and stores them at their
 *                  rank, so the lowest-nonce max_winners are exact even when
 *                  every nonce wins;
 * and the segment fingerprints (plus the outputs when asked) go to pinned
 * memory.  The fold of sub-batch k runs while k + 1 hashes (events order
 * the slot's reuse).  At the end only the count, best and the first
 * min(count, max_winners) winners cross.
 *
 * FNV-1a-64 is a chain and cannot be split; the thread keeps the state as
 * two 32-bit halves: with P = 2^40 + 435, (hi:lo) * P is lo' = lo * 435,
 * hi' = hi * 435 + umulhi(lo, 435) + (lo << 8), so a byte costs one xor and
 * one multiply on the critical path.
 */
#include <stdio.h>
#include <string.h>

#include "workers/cuda/gpu_internal.h"
#include "workers/cuda/gpu_api.h"

extern "C" {
#include "workers/hash/hash.h"
}

namespace WVG_NS {

#define WVG_SEG_SUB (1ull << WVG_SEG_SUB_LOG2)
/* Segments one sub-batch touches, at most (s = WV_SEG_LOG2_MIN). */
#define WVG_SEG_MAX (1u << (WVG_SEG_SUB_LOG2 - WV_SEG_LOG2_MIN))
#define WVG_SCAN_THREADS 1024u
#define WVG_FOLD_THREADS 128u

static_assert(WVG_SEG_SUB * 8 <= WVG_SLOT_BYTES,
              "a sub-batch's outputs fill one staging slot");
static_assert(WV_SEG_LOG2_MAX <= WVG_SEG_SUB_LOG2,
              "segments never straddle sub-batches");

/* The batch's running result on the device. */
struct sacc {
  unsigned long long count;
  uint64_t best_out, best_nonce;
};

struct hseg {
  cudaStream_t st;            /* the fold stream (highest priority) */
  uint64_t *d_fp, *d_bout;    /* per segment of a sub-batch */
  uint32_t *d_cnt, *d_pre, *d_bidx;
  sacc *d_acc, *h_acc;        /* h_acc pinned */
  uint64_t *h_fp[2];          /* pinned, per slot */
  wv_hash_winner *d_win, *h_win;  /* h_win pinned; win_cap slots each */
  size_t win_cap;
};

/* ---- kernels --------------------------------------------------------------- */

struct fnv32 {
  uint32_t lo, hi;
};

__device__ __forceinline__ void fnv_byte(fnv32 &h, uint32_t byte)
{
  const uint32_t x = h.lo ^ byte;
  h.hi = h.hi * 435u + __umulhi(x, 435u) + (x << 8);
  h.lo = x * 435u;
}

__device__ __forceinline__ void fnv_word(fnv32 &h, uint64_t w)
{
  const uint32_t a = (uint32_t)w, b = (uint32_t)(w >> 32);
#pragma unroll
  for (int k = 0; k < 32; k += 8)
    fnv_byte(h, (a >> k) & 0xffu);
#pragma unroll
  for (int k = 0; k < 32; k += 8)
    fnv_byte(h, (b >> k) & 0xffu);
}

__device__ __forceinline__ void prefetch_l1(const uint64_t *p)
{
#if defined(WV_GPU_HIP)
  (void)p;
#else
  asm volatile("prefetch.global.L1 [%0];" ::"l"(p));
#endif
}

__device__ __forceinline__ void prefetch_l2(const uint64_t *p)
{
#if defined(WV_GPU_HIP)
  (void)p;
#else
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
#endif
}

/* Piece t of the sub-batch [lo, last]: its first index and length. */
__device__ __forceinline__ void seg_piece(uint64_t lo, uint64_t last,
                                          unsigned s, uint32_t t,
                                          uint64_t *first, uint64_t *n)
{
  const uint64_t start = t == 0 ? lo : ((lo >> s) + t) << s;
  const uint64_t end_seg = start | ((1ull << s) - 1);
  const uint64_t end = end_seg < last ? end_seg : last;
  *first = start - lo;
  *n = end - start + 1;
}

__global__ void __launch_bounds__(WVG_FOLD_THREADS)
k_seg_fold(const uint64_t *__restrict__ out, uint64_t lo, uint64_t last,
           unsigned s, uint64_t target, uint32_t nseg, uint64_t *fp,
           uint32_t *cnt, uint64_t *bout, uint32_t *bidx)
{
  const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= nseg)
    return;
  uint64_t first, n;
  seg_piece(lo, last, s, t, &first, &n);
  const uint64_t *q = out + first;
  fnv32 h = {(uint32_t)WV_FNV_OFFSET, (uint32_t)(WV_FNV_OFFSET >> 32)};
  uint32_t c = 0, bi = 0;
  uint64_t best = ~0ull;
  /* Eight outputs in flight while the previous eight are folded: the
   * chain is long enough to cover an L2 (or HBM) round trip. */
  uint64_t i = 0;
  uint64_t v[8];
  if (n >= 8) {
#pragma unroll
    for (int k = 0; k < 8; k++)
      v[k] = __ldg(q + k);
  }
  for (; i + 8 <= n; i += 8) {
    /* Under a running hash kernel a load takes microseconds: lines 1 KiB
     * (128 outputs) ahead go to L1 and 4 KiB ahead to L2, so that the
     * loads below mostly hit (past the sub-batch they stay inside the
     * slot buffer, which is larger than 2^24 outputs). */
    if ((i & 15) == 0) {
      prefetch_l1(q + i + 128);
      prefetch_l2(q + i + 512);
    }
    uint64_t cur[8];
#pragma unroll
    for (int k = 0; k < 8; k++)
      cur[k] = v[k];
    if (i + 16 <= n) {
#pragma unroll
      for (int k = 0; k < 8; k++)
        v[k] = __ldg(q + i + 8 + k);
    }
#pragma unroll
    for (int k = 0; k < 8; k++) {
      const uint64_t o = cur[k];
      fnv_word(h, o);
      c += o < target;
      if (o < best) {
        best = o;
        bi = (uint32_t)(i + k);
      }
    }
  }
  for (; i < n; i++) {
    const uint64_t o = __ldg(q + i);
    fnv_word(h, o);
    c += o < target;
    if (o < best) {
      best = o;
      bi = (uint32_t)i;
    }
  }
  fp[t] = ((uint64_t)h.hi << 32) | h.lo;
  cnt[t] = c;
  bout[t] = best;
  bidx[t] = (uint32_t)first + bi;
}

__global__ void k_seg_init(sacc *acc, uint64_t nonce)
{
  acc->count = 0;
  acc->best_out = ~0ull;
  acc->best_nonce = nonce;
}

/* (o, n) before (bo, bn): smaller output, ties to the lower nonce. */
__device__ __forceinline__ bool seg_better(uint64_t o, uint64_t n,
                                           uint64_t bo, uint64_t bn)
{
  return o < bo || (o == bo && n < bn);
}

/* One block: pre[k] = min(count before segment k, maxw) over the batch,
 * count += the sub-batch's winners, best = min(best, the sub-batch's). */
__global__ void __launch_bounds__(WVG_SCAN_THREADS)
k_seg_scan(uint32_t nseg, const uint32_t *cnt, const uint64_t *bout,
           const uint32_t *bidx, uint64_t lo, uint32_t *pre, sacc *acc,
           uint64_t maxw)
{
  __shared__ unsigned long long sum[WVG_SCAN_THREADS];
  __shared__ uint64_t so[WVG_SCAN_THREADS], sn[WVG_SCAN_THREADS];
  const uint32_t t = threadIdx.x, T = blockDim.x;
  const uint32_t per = (nseg + T - 1) / T;
  const uint32_t k0 = t * per < nseg ? t * per : nseg;
  const uint32_t k1 = k0 + per < nseg ? k0 + per : nseg;
  unsigned long long c = 0;
  uint64_t bo = ~0ull, bn = ~0ull;
  for (uint32_t k = k0; k < k1; k++) {
    c += cnt[k];
    const uint64_t o = bout[k], n = lo + bidx[k];
    if (seg_better(o, n, bo, bn)) {
      bo = o;
      bn = n;
    }
  }
  sum[t] = c;
  so[t] = bo;
  sn[t] = bn;
  __syncthreads();
  const unsigned long long base = acc->count;
  /* Inclusive scan of the per-thread sums (Hillis-Steele). */
  for (uint32_t d = 1; d < T; d <<= 1) {
    unsigned long long add = t >= d ? sum[t - d] : 0;
    __syncthreads();
    sum[t] += add;
    __syncthreads();
  }
  unsigned long long run = base + sum[t] - c;
  for (uint32_t k = k0; k < k1; k++) {
    pre[k] = (uint32_t)(run < maxw ? run : maxw);
    run += cnt[k];
  }
  /* Best of the block. */
  for (uint32_t d = T / 2; d > 0; d >>= 1) {
    if (t < d && seg_better(so[t + d], sn[t + d], so[t], sn[t])) {
      so[t] = so[t + d];
      sn[t] = sn[t + d];
    }
    __syncthreads();
  }
  if (t == 0) {
    acc->count = base + sum[T - 1];
    if (nseg > 0 && seg_better(so[0], sn[0], acc->best_out, acc->best_nonce)) {
      acc->best_out = so[0];
      acc->best_nonce = sn[0];
    }
    /* The first sub-batch's first output always sets best, even if it is
     * 2^64 - 1 (k_seg_init's nonce is the batch's first). */
  }
}

__global__ void __launch_bounds__(WVG_FOLD_THREADS)
k_seg_collect(const uint64_t *__restrict__ out, uint64_t lo, uint64_t last,
              unsigned s, uint64_t target, uint32_t nseg, const uint32_t *cnt,
              const uint32_t *pre, uint64_t maxw, wv_hash_winner *win)
{
  const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= nseg || cnt[t] == 0 || pre[t] >= maxw)
    return;
  uint64_t first, n;
  seg_piece(lo, last, s, t, &first, &n);
  uint64_t pos = pre[t];
  for (uint64_t i = 0; i < n && pos < maxw; i++) {
    const uint64_t o = __ldg(out + first + i);
    if (o < target) {
      win[pos].nonce = lo + first + i;
      win[pos].output = o;
      pos++;
    }
  }
}

/* ---- host side ------------------------------------------------------------- */

#define CK(call)                                                               \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess)                                                     \
      return dev_fail(err, #call, e_);                                         \
  } while (0)

void seg_fini(gdev *g)
{
  hseg *S = g->seg;
  if (S == NULL)
    return;
  if (S->st != NULL) {
    (void)cudaStreamSynchronize(S->st);
    (void)cudaStreamDestroy(S->st);
  }
  void *dev[] = {S->d_fp, S->d_bout, S->d_cnt, S->d_pre, S->d_bidx,
                 S->d_acc, S->d_win};
  for (void *p : dev)
    if (p != NULL)
      (void)cudaFree(p);
  void *host[] = {S->h_acc, S->h_fp[0], S->h_fp[1], S->h_win};
  for (void *p : host)
    if (p != NULL)
      (void)cudaFreeHost(p);
  (void)cudaGetLastError();
  free(S);
  g->seg = NULL;
}

static int seg_state(gdev *g, size_t max_winners, hseg **out,
                     wave_error *err)
{
  hseg *S = g->seg;
  if (S == NULL) {
    if ((S = (hseg *)calloc(1, sizeof *S)) == NULL)
      return wv_seterr(err, WAVE_ENOMEM, NULL);
    g->seg = S; /* freed by seg_fini from here on, whole or not */
    int lo_prio = 0, hi_prio = 0;
    CK(cudaDeviceGetStreamPriorityRange(&lo_prio, &hi_prio));
    CK(cudaStreamCreateWithPriority(&S->st, cudaStreamNonBlocking, hi_prio));
    CK(cudaMalloc((void **)&S->d_fp, WVG_SEG_MAX * 8));
    CK(cudaMalloc((void **)&S->d_bout, WVG_SEG_MAX * 8));
    CK(cudaMalloc((void **)&S->d_cnt, WVG_SEG_MAX * 4));
    CK(cudaMalloc((void **)&S->d_pre, WVG_SEG_MAX * 4));
    CK(cudaMalloc((void **)&S->d_bidx, WVG_SEG_MAX * 4));
    CK(cudaMalloc((void **)&S->d_acc, sizeof(sacc)));
    CK(cudaHostAlloc((void **)&S->h_acc, sizeof(sacc), cudaHostAllocDefault));
    for (int i = 0; i < 2; i++)
      CK(cudaHostAlloc((void **)&S->h_fp[i], WVG_SEG_MAX * 8,
                       cudaHostAllocDefault));
  }
  if (max_winners > S->win_cap) {
    size_t cap = S->win_cap > 0 ? S->win_cap : 64;
    while (cap < max_winners)
      cap *= 2;
    CK(cudaStreamSynchronize(S->st));
    if (S->d_win != NULL)
      (void)cudaFree(S->d_win);
    if (S->h_win != NULL)
      (void)cudaFreeHost(S->h_win);
    S->d_win = NULL;
    S->h_win = NULL;
    S->win_cap = 0;
    CK(cudaMalloc((void **)&S->d_win, cap * sizeof(wv_hash_winner)));
    CK(cudaHostAlloc((void **)&S->h_win, cap * sizeof(wv_hash_winner),
                     cudaHostAllocDefault));
    S->win_cap = cap;
  }
  *out = S;
  return 0;
}

/* A sub-batch whose results are on their way to pinned memory. */
struct seg_pend {
  uint64_t pos, n;            /* nonces */
  uint64_t seg0;              /* index of its first segment in the batch */
  uint32_t nseg;
};

/* Move sub-batch `pd` (slot si) from pinned memory into b, once its
 * copies have landed. */
static int seg_drain(gdev *g, hseg *S, const seg_pend *pd, unsigned si,
                     wv_hash_batch *b, wave_error *err)
{
  CK(cudaEventSynchronize(g->slots[si].copied));
  memcpy(b->seg_fp + pd->seg0, S->h_fp[si], (size_t)pd->nseg * 8);
  if (b->outputs != NULL)
    memcpy(b->outputs + (pd->pos - b->nonce), g->slots[si].h,
           (size_t)pd->n * 8);
  return 0;
}

int hash_fold_batch(gdev *g, const wv_pack *p, wv_hash_batch *b,
                    wave_error *err)
{
  const unsigned s = b->seg_log2;
  if (b->count == 0 || b->nonce + (b->count - 1) < b->nonce)
    return wv_seterr(err, WAVE_ERANGE, "hash batch [%llu, +%llu): empty or "
                     "past 2^64", (unsigned long long)b->nonce,
                     (unsigned long long)b->count);
  if (s < WV_SEG_LOG2_MIN || s > WV_SEG_LOG2_MAX)
    return wv_seterr(err, WAVE_EARG, "segment_log2 %u is outside %u..%u", s,
                     WV_SEG_LOG2_MIN, WV_SEG_LOG2_MAX);
  if (b->seg_fp == NULL || (b->max_winners > 0 && b->winners == NULL))
    return wv_seterr(err, WAVE_EARG, "hash batch without result arrays");
  if (b->max_winners > 0x7fffffffu)
    return wv_seterr(err, WAVE_EARG, "max_winners %zu is too large",
                     b->max_winners);
  hseg *S = NULL;
  int rv;
  CK(cudaSetDevice(g->index));
  if ((rv = seg_state(g, b->max_winners, &S, err)) != 0)
    return rv;
  const uint64_t last = b->nonce + (b->count - 1);
  const uint64_t maxw = b->target != 0 ? b->max_winners : 0;
  k_seg_init<<<1, 1, 0, S->st>>>(S->d_acc, b->nonce);
  CK(cudaGetLastError());

  seg_pend pend[2];
  uint64_t pos = b->nonce, seg0 = 0;
  unsigned k = 0;
  for (;;) {
    const uint64_t room = WVG_SEG_SUB - (pos & (WVG_SEG_SUB - 1));
    const uint64_t n = last - pos < room - 1 ? last - pos + 1 : room;
    const unsigned si = k & 1;
    slot *sl = &g->slots[si];
    uint64_t *d_out = (uint64_t *)sl->d;
    /* The slot's last fold and copies are done before it is rewritten. */
    CK(cudaStreamWaitEvent(g->compute, sl->copied, 0));
    if ((rv = hash_device(g, p, pos, n, d_out, err)) != 0)
      return rv;
    CK(cudaEventRecord(sl->done, g->compute));
    CK(cudaStreamWaitEvent(S->st, sl->done, 0));
    const uint32_t nseg = (uint32_t)wv_seg_count(pos, n, s);
    const unsigned blocks = (nseg + WVG_FOLD_THREADS - 1) / WVG_FOLD_THREADS;
    const uint64_t plast = pos + (n - 1);
    k_seg_fold<<<blocks, WVG_FOLD_THREADS, 0, S->st>>>(
        d_out, pos, plast, s, b->target, nseg, S->d_fp, S->d_cnt, S->d_bout,
        S->d_bidx);
    CK(cudaGetLastError());
    k_seg_scan<<<1, WVG_SCAN_THREADS, 0, S->st>>>(
        nseg, S->d_cnt, S->d_bout, S->d_bidx, pos, S->d_pre, S->d_acc, maxw);
    CK(cudaGetLastError());
    if (maxw > 0) {
      k_seg_collect<<<blocks, WVG_FOLD_THREADS, 0, S->st>>>(
          d_out, pos, plast, s, b->target, nseg, S->d_cnt, S->d_pre, maxw,
          S->d_win);
      CK(cudaGetLastError());
    }
    CK(cudaMemcpyAsync(S->h_fp[si], S->d_fp, (size_t)nseg * 8,
                       cudaMemcpyDeviceToHost, S->st));
    if (b->outputs != NULL)
      CK(cudaMemcpyAsync(sl->h, d_out, (size_t)n * 8, cudaMemcpyDeviceToHost,
                         S->st));
    CK(cudaEventRecord(sl->copied, S->st));
    /* While this one hashes and folds, the previous one lands. */
    if (k > 0 && (rv = seg_drain(g, S, &pend[si ^ 1], si ^ 1, b, err)) != 0)
      return rv;
    pend[si] = (seg_pend){pos, n, seg0, nseg};
    seg0 += nseg;
    k++;
    if (plast == last)
      break;
    pos = plast + 1;
  }
  CK(cudaMemcpyAsync(S->h_acc, S->d_acc, sizeof(sacc), cudaMemcpyDeviceToHost,
                     S->st));
  CK(cudaStreamSynchronize(S->st));
  if ((rv = seg_drain(g, S, &pend[(k - 1) & 1], (k - 1) & 1, b, err)) != 0)
    return rv;
  b->winner_count = S->h_acc->count;
  b->best_output = S->h_acc->best_out;
  b->best_nonce = S->h_acc->best_nonce;
  b->n_winners = (size_t)(b->winner_count < maxw ? b->winner_count : maxw);
  if (b->n_winners > 0) {
    CK(cudaMemcpyAsync(S->h_win, S->d_win,
                       b->n_winners * sizeof(wv_hash_winner),
                       cudaMemcpyDeviceToHost, S->st));
    CK(cudaStreamSynchronize(S->st));
    memcpy(b->winners, S->h_win, b->n_winners * sizeof(wv_hash_winner));
  }
  CK(cudaGetLastError());
  return 0;
}

} /* namespace WVG_NS */

using namespace WVG_NS;

extern "C" int WVG_C(hash_batch)(wv_device *dev, const struct wv_pack *pack,
                                 struct wv_hash_batch *batch, wave_error *err)
{
  return hash_fold_batch((gdev *)dev, pack, batch, err);
}
