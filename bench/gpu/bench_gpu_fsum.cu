/* bench_gpu_fsum.cu - wvbench-gpu-reduce's fsum part (issue 39): the exact
 * float sum (gpu_xsum.cu, reduce_device_xsum) on device-resident rows
 * against CUB's DeviceReduce::Sum (its default, non-deterministic) and
 * our plain float sum (the fixed tree), measured in the same run.
 *
 * Cases: float32 at 2^28 and 2^30 rows, float64 at 2^27 and 2^29, each on
 * three kinds of data: narrow (uniform [0, 1)), full (random exponents
 * over the whole finite range, subnormals included, random signs) and
 * cancel (pairs +x, -x with x in [2^10, 2^20), one pair in 16 replaced by
 * two uniform [0, 1) rows: the true sum is the small rows' only).  Then
 * small jobs, 2^10 .. 2^14 rows, fsum against the plain sum's latency.
 * CUDA events around each call, median of reps.  Every fsum result is
 * checked against the CPU reference (wv_reduce_reference, core/xsum) on a
 * host copy of the same rows: the accumulator, flags, count and bits;
 * the smaller size of each case is checked with a random mask too.
 *
 * WAVE_FSUM_CASE="f32 full 28" (dtype, data, log2 rows) runs that large
 * case alone and no small jobs: one case for a profiler (ncu -k
 * regex:k_xsum --launch-skip 3 --launch-count 1: past the warm-ups).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <thread>
#include <vector>

#include <cub/cub.cuh>

#include "workers/cuda/gpu_xsum.h"
#include "bench/gpu/bench_gpu.h"

using namespace wv_cuda;

#define FS_BYTES (4ull << 30)     /* the data buffer: 2^30 float32 */

__host__ __device__ static inline uint64_t bgf_mix(uint64_t x)
{
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* kind 0 narrow, 1 full, 2 cancel; mask: random 0/1 words instead. */
__global__ void k_fill_fs(void *d, uint64_t n, int f64, int kind,
                          uint64_t seed)
{
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
       i += (uint64_t)gridDim.x * blockDim.x) {
    uint64_t x = bgf_mix(i ^ seed), y = bgf_mix(x + 0x9e3779b97f4a7c15ull);
    if (kind == 2) {
      uint64_t j = i >> 1, xj = bgf_mix(j ^ seed ^ 0x5bd1e995ull);
      if ((j & 15) != 0) {
        /* +x, -x: exponent 10..19 above 1, random significand */
        uint64_t e = (xj >> 40) % 10;
        if (f64) {
          uint64_t b = (1033 + e) << 52 | (xj & 0xfffffffffffffull);
          ((uint64_t *)d)[i] = b | (i & 1) << 63;
        } else {
          uint32_t b = (uint32_t)(137 + e) << 23 | (uint32_t)(xj & 0x7fffff);
          ((uint32_t *)d)[i] = b | (uint32_t)(i & 1) << 31;
        }
        continue;
      }
      kind = 0;
    }
    if (kind == 0) {
      if (f64)
        ((double *)d)[i] = (double)(x >> 11) * 0x1p-53;
      else
        ((float *)d)[i] = (float)(uint32_t)(x >> 40) * 0x1p-24f;
    } else if (kind == 1) {
      if (f64) {
        uint64_t e = (y >> 32) % 2047;
        ((uint64_t *)d)[i] = (x >> 63) << 63 | e << 52 |
                             (x & 0xfffffffffffffull);
      } else {
        uint32_t e = (uint32_t)((y >> 32) % 255);
        ((uint32_t *)d)[i] = (uint32_t)(x >> 63) << 31 | e << 23 |
                             (uint32_t)(x & 0x7fffff);
      }
    } else {
      ((uint32_t *)d)[i] = (uint32_t)(x >> 17) & 1u;
    }
  }
}

struct bgf_timer {
  cudaEvent_t a, b;
  bgf_timer()
  {
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
  }
};

template <typename F>
static double bgf_time_us(bgf_timer &t, int reps, F fn)
{
  std::vector<float> ms;
  for (int w = 0; w < 3; w++)
    fn(w);
  for (int r = 0; r < reps; r++) {
    CHECK(cudaEventRecord(t.a));
    fn(r);
    CHECK(cudaEventRecord(t.b));
    CHECK(cudaEventSynchronize(t.b));
    float x;
    CHECK(cudaEventElapsedTime(&x, t.a, t.b));
    ms.push_back(x);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2] * 1e3;
}

/* The CPU reference of rows h[0 .. n) (mask m or NULL): the exact sums of
 * slices on all cores, merged (the merge is exact, so this is the
 * reference of the whole). */
static int bgf_reference(wave_dtype dt, const void *h, const uint32_t *m,
                        uint64_t n, wv_xsum *xs, uint64_t *count)
{
  unsigned nt = std::max(1u, std::min(32u, std::thread::hardware_concurrency()));
  std::vector<wv_reduce_out> outs(nt);
  std::vector<int> rc(nt, 0);
  std::vector<std::thread> th;
  size_t rsz = dt == WAVE_F64 ? 8 : 4;
  for (unsigned k = 0; k < nt; k++)
    th.emplace_back([&, k]() {
      uint64_t a = n * k / nt, b = n * (k + 1) / nt;
      wv_span sp = {(const char *)h + a * rsz, b - a};
      wv_span ms = {m + a, b - a};
      wv_reduce_job job;
      memset(&job, 0, sizeof job);
      job.dtype = dt;
      job.op = WAVE_FSUM;
      job.input = &sp;
      job.n_input = 1;
      job.rows = b - a;
      if (m != NULL) {
        job.mask = &ms;
        job.n_mask = 1;
        job.has_mask = 1;
      }
      wave_error err;
      rc[k] = wv_reduce_reference(&job, &outs[k], &err);
      if (rc[k] != 0)
        fprintf(stderr, "reference: %s\n", err.message);
    });
  for (auto &x : th)
    x.join();
  wv_xsum_init(xs, dt);
  *count = 0;
  for (unsigned k = 0; k < nt; k++) {
    if (rc[k] != 0)
      return -1;
    wv_xsum_merge(xs, &outs[k].xsum);
    *count += outs[k].count;
  }
  return 0;
}

/* fsum of rows d[0 .. n) (and mask dm) on the device against the
 * reference: 1 equal, 0 different. */
static int bgf_check(xreducer *xr, wave_dtype dt, const void *d,
                    const uint32_t *dm, uint64_t n, std::vector<char> &h,
                    std::vector<uint32_t> &hm)
{
  size_t rsz = dt == WAVE_F64 ? 8 : 4;
  CHECK(reduce_device_xsum(xr, dt, d, dm, n, 0));
  wv_reduce_out got;
  CHECK(xsum_read(xr, dt, dm != NULL, n, &got));
  h.resize(n * rsz);
  CHECK(cudaMemcpy(h.data(), d, n * rsz, cudaMemcpyDeviceToHost));
  if (dm != NULL) {
    hm.resize(n);
    CHECK(cudaMemcpy(hm.data(), dm, n * 4, cudaMemcpyDeviceToHost));
  }
  wv_xsum want;
  uint64_t count;
  if (bgf_reference(dt, h.data(), dm ? hm.data() : NULL, n, &want, &count))
    return 0;
  uint64_t bits = wv_xsum_round(&want, count);
  int ok = got.bits[0] == bits && got.count == count &&
           got.xsum.flags == want.flags &&
           memcmp(got.xsum.limb, want.limb, sizeof want.limb) == 0;
  if (!ok)
    fprintf(stderr, "fsum %s n=%llu%s: got %016llx count %llu flags %x, "
            "want %016llx count %llu flags %x\n", dt == WAVE_F64 ? "f64" : "f32",
            (unsigned long long)n, dm ? " masked" : "",
            (unsigned long long)got.bits[0], (unsigned long long)got.count,
            got.xsum.flags, (unsigned long long)bits,
            (unsigned long long)count, want.flags);
  return ok;
}

struct bgf_row {
  const char *dt, *data;
  unsigned log2;
  double fsum, cub, plain;
  int ok;
};

static const char *const bgf_kinds[3] = {"narrow", "full", "cancel"};

/* What every case uses: the data buffer, a mask, CUB's storage, our three
 * reducers, a timer and host copies for the reference. */
struct bgf_ctx {
  void *d, *cub_tmp, *cub_out;
  size_t cub_bytes;
  uint32_t *dm;
  xreducer xr;
  reducer red;
  wreducer wr;
  bgf_timer t;
  std::vector<char> h;
  std::vector<uint32_t> hm;
};

static void bgf_open(bgf_ctx *c)
{
  CHECK(cudaMalloc(&c->d, FS_BYTES));
  CHECK(cudaMalloc((void **)&c->dm, (1ull << 28) * 4));
  CHECK(cudaMalloc(&c->cub_out, 64));
  size_t b32 = 0, b64 = 0;
  CHECK(cub::DeviceReduce::Sum(NULL, b32, (const float *)c->d,
                               (float *)c->cub_out, (int)(FS_BYTES / 4)));
  CHECK(cub::DeviceReduce::Sum(NULL, b64, (const double *)c->d,
                               (double *)c->cub_out, (int)(FS_BYTES / 8)));
  c->cub_bytes = std::max(b32, b64);
  CHECK(cudaMalloc(&c->cub_tmp, c->cub_bytes));
  k_fill_fs<<<4096, 256>>>(c->dm, 1ull << 28, 0, 3, 7);
  CHECK(cudaGetLastError());
  CHECK(xreducer_init(&c->xr));
  CHECK(reducer_init(&c->red));
  CHECK(reducer_reserve(&c->red, (1u << 30) / WVG_TILE_ROWS,
                        (1u << 30) / WVG_PIECE_ROWS,
                        (1u << 30) / WVG_PIECE_ROWS, 1));
  CHECK(wreducer_init(&c->wr));
  CHECK(wreducer_reserve(&c->wr, (1u << 29) / WVG_TILE_ROWS,
                         (1u << 29) / WVG_PIECE_ROWS,
                         (1u << 29) / WVG_PIECE_ROWS, 1));
}

static void bgf_close(bgf_ctx *c)
{
  xreducer_fini(&c->xr);
  reducer_fini(&c->red);
  wreducer_fini(&c->wr);
  CHECK(cudaFree(c->d));
  CHECK(cudaFree(c->dm));
  CHECK(cudaFree(c->cub_tmp));
  CHECK(cudaFree(c->cub_out));
}

/* Median times of fsum, CUB's Sum and the plain sum over n rows at
 * win(r) (call r of reps). */
template <typename W>
static bgf_row bgf_times(bgf_ctx *c, wave_dtype dt, uint64_t n, int reps, W win)
{
  const int f64 = dt == WAVE_F64;
  bgf_row rw;
  memset(&rw, 0, sizeof rw);
  rw.dt = f64 ? "f64" : "f32";
  rw.fsum = bgf_time_us(c->t, reps, [&](int r) {
    CHECK(reduce_device_xsum(&c->xr, dt, win(r), NULL, n, 0));
  });
  rw.cub = bgf_time_us(c->t, reps, [&](int r) {
    size_t tb = c->cub_bytes;
    if (f64)
      CHECK(cub::DeviceReduce::Sum(c->cub_tmp, tb, (const double *)win(r),
                                   (double *)c->cub_out, (int)n));
    else
      CHECK(cub::DeviceReduce::Sum(c->cub_tmp, tb, (const float *)win(r),
                                   (float *)c->cub_out, (int)n));
  });
  rw.plain = bgf_time_us(c->t, reps, [&](int r) {
    if (f64)
      CHECK(reduce_device_wide(&c->wr, WAVE_F64, WAVE_SUM, win(r), NULL, n,
                               0));
    else
      CHECK(reduce_device(&c->red, WAVE_F32, WAVE_SUM, win(r), NULL, n, 0));
  });
  return rw;
}

struct bgf_set {
  wave_dtype dt;
  unsigned lo, hi;
};
static const bgf_set bgf_sets[2] = {{WAVE_F32, 28, 30}, {WAVE_F64, 27, 29}};

/* The large cases; the smaller size of each is checked masked too. */
static int bgf_large(bgf_ctx *c, int reps, std::vector<bgf_row> *rows)
{
  int all_ok = 1;
  const char *only = getenv("WAVE_FSUM_CASE");
  for (const bgf_set &s : bgf_sets) {
    const int f64 = s.dt == WAVE_F64;
    for (int kind = 0; kind < 3; kind++)
      for (unsigned k = s.lo; k <= s.hi; k += 2) {
        const uint64_t n = 1ull << k;
        char name[32];
        snprintf(name, sizeof name, "%s %s %u", f64 ? "f64" : "f32",
                 bgf_kinds[kind], k);
        if (only != NULL && strcmp(only, name) != 0)
          continue;
        k_fill_fs<<<4096, 256>>>(c->d, n, f64, kind, 11 + kind);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        bgf_row rw = bgf_times(c, s.dt, n, reps, [&](int) { return c->d; });
        rw.data = bgf_kinds[kind];
        rw.log2 = k;
        rw.ok = bgf_check(&c->xr, s.dt, c->d, NULL, n, c->h, c->hm);
        if (rw.ok && k == s.lo)
          rw.ok = bgf_check(&c->xr, s.dt, c->d, c->dm, n, c->h, c->hm);
        all_ok &= rw.ok;
        rows->push_back(rw);
        printf("fsum %s 2^%u %-6s fsum %9.1f us  cub %9.1f us (%.3fx)  "
               "plain %9.1f us (%.3fx)  %6.0f GB/s  %s\n", rw.dt, k,
               rw.data, rw.fsum, rw.cub, rw.cub / rw.fsum, rw.plain,
               rw.plain / rw.fsum, n * (f64 ? 8 : 4) / (rw.fsum * 1e3),
               rw.ok ? "bits ok" : "BITS DIFFER");
        fflush(stdout);
      }
  }
  return all_ok;
}

/* Small jobs: latency against the plain sum's, narrow data, windows
 * rotating through the buffer so that no call reads another's rows. */
static int bgf_small(bgf_ctx *c, std::vector<bgf_row> *rows)
{
  int all_ok = 1;
  for (const bgf_set &s : bgf_sets) {
    const int f64 = s.dt == WAVE_F64;
    const size_t rsz = f64 ? 8 : 4;
    k_fill_fs<<<4096, 256>>>(c->d, FS_BYTES / rsz, f64, 0, 5);
    CHECK(cudaGetLastError());
    for (unsigned k = 10; k <= 14; k++) {
      const uint64_t n = 1ull << k, windows = 4096;
      auto win = [&](int r) {
        return (const void *)((const char *)c->d +
                              (uint64_t)(r % windows) * n * rsz);
      };
      bgf_row rw = bgf_times(c, s.dt, n, 200, win);
      rw.data = "narrow";
      rw.log2 = k;
      rw.ok = bgf_check(&c->xr, s.dt, win(1), NULL, n, c->h, c->hm);
      all_ok &= rw.ok;
      rows->push_back(rw);
      printf("fsum %s 2^%u small  fsum %7.2f us  plain %7.2f us (fsum/plain "
             "%.3f)  cub %7.2f us  %s\n", rw.dt, k, rw.fsum, rw.plain,
             rw.fsum / rw.plain, rw.cub, rw.ok ? "bits ok" : "BITS DIFFER");
      fflush(stdout);
    }
  }
  return all_ok;
}

int bench_fsum(int reps)
{
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  printf("fsum: %s sm_%d%d, %d SMs\n", prop.name, prop.major, prop.minor,
         prop.multiProcessorCount);
  bgf_ctx *c = new bgf_ctx();
  bgf_open(c);
  std::vector<bgf_row> rows, small;
  int all_ok = bgf_large(c, reps, &rows);
  if (getenv("WAVE_FSUM_CASE") == NULL)
    all_ok &= bgf_small(c, &small);
  CHECK(cudaGetLastError());

  printf("\n| dtype | rows | data | fsum us | CUB us | CUB/fsum | plain sum us "
         "| plain/fsum | bits |\n|---|---|---|---|---|---|---|---|---|\n");
  for (const bgf_row &r : rows)
    printf("| %s | 2^%u | %s | %.1f | %.1f | %.3f | %.1f | %.3f | %s |\n",
           r.dt, r.log2, r.data, r.fsum, r.cub, r.cub / r.fsum, r.plain,
           r.plain / r.fsum, r.ok ? "ok" : "DIFFER");
  printf("\n| dtype | rows | fsum us | plain sum us | fsum/plain | CUB us "
         "| bits |\n|---|---|---|---|---|---|---|\n");
  for (const bgf_row &r : small)
    printf("| %s | 2^%u | %.2f | %.2f | %.3f | %.2f | %s |\n", r.dt, r.log2,
           r.fsum, r.plain, r.fsum / r.plain, r.cub, r.ok ? "ok" : "DIFFER");
  printf("fsum bench: %s\n", all_ok ? "every result equals the reference"
                                    : "RESULT MISMATCH");
  bgf_close(c);
  delete c;
  return all_ok ? 0 : 1;
}
