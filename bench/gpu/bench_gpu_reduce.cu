/* bench_gpu_reduce.cu - the CUDA backend's reduction kernels on
 * device-resident data against cub::DeviceReduce and a plain streaming
 * read, measured in the same run.
 *
 *   wvbench-gpu-reduce [MIN_LOG2 [MAX_LOG2]]     (default 10 30)
 *   wvbench-gpu-reduce fsum [REPS]               (only the fsum part)
 *
 * For every size 2^k: u32 sum, u32 max and f32 sum, ours (reduce_device:
 * the whole job, one launch for integers, one or two for the float tree)
 * and CUB's, CUDA events around each call, median of many calls.  Calls
 * rotate through disjoint windows of a 4 GiB buffer so that sizes below
 * the L2 read DRAM, not the cache (both sides alike).  At 2^28 and 2^30,
 * the streaming-read kernel (uint4 loads, grid-stride, nothing else) gives
 * the bandwidth ceiling.  Results are checked: u32 bits against CUB's, f32
 * sum bits against the CPU reference (wv_reduce_reference) up to 2^24.
 * Prints one line per measurement, then a summary table.  With "fsum":
 * the exact sum instead, against CUB and the plain float sum
 * (bench_gpu_fsum.cu; REPS default 15).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include <cub/cub.cuh>

#include "workers/cuda/gpu_internal.h"
#include "bench/gpu/bench_gpu.h"

using namespace wv_cuda;

int bench_fsum(int reps);   /* bench_gpu_fsum.cu */


#define TOTAL_LOG2 30
static const uint64_t TOTAL = 1ull << TOTAL_LOG2;

__host__ __device__ static inline uint64_t mix(uint64_t x)
{
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

__global__ void k_fill_u32(uint32_t *d, uint64_t n, uint64_t seed)
{
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
       i += (uint64_t)gridDim.x * blockDim.x)
    d[i] = (uint32_t)mix(i ^ seed);
}

/* Finite floats of mixed sign over 16 binades: a sum that rounds a lot. */
__global__ void k_fill_f32(uint32_t *d, uint64_t n, uint64_t seed)
{
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
       i += (uint64_t)gridDim.x * blockDim.x) {
    uint64_t x = mix(i ^ seed);
    uint32_t e = 112 + (uint32_t)((x >> 40) & 15);
    d[i] = (uint32_t)(x >> 63) << 31 | e << 23 | (uint32_t)(x & 0x7fffff);
  }
}

/* The ceiling: read every byte once with 16-byte loads, four in flight. */
__global__ void __launch_bounds__(256)
k_stream(const uint4 *__restrict__ d, uint64_t nvec, uint32_t *sink)
{
  uint32_t acc = 0;
  const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
  for (; i + 3 * stride < nvec; i += 4 * stride) {
    uint4 a = d[i], b = d[i + stride], c = d[i + 2 * stride],
          e = d[i + 3 * stride];
    acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^
           c.w ^ e.x ^ e.y ^ e.z ^ e.w;
  }
  for (; i < nvec; i += stride) {
    uint4 a = d[i];
    acc ^= a.x ^ a.y ^ a.z ^ a.w;
  }
  if (acc == 0x9e3779b9u) /* practically never; keeps the loads alive */
    sink[0] = acc;
}

struct timer {
  cudaEvent_t a, b;
  timer()
  {
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
  }
};

/* Median time in microseconds of fn(window) over reps calls. */
template <typename F>
static double time_us(timer &t, int reps, F fn)
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

struct row {
  unsigned log2;
  const char *op;
  double ours, cub, ratio, gbs;
  int ok;
};

/* CUB's output and its temporary storage, sized for the largest of the
 * three reductions over TOTAL rows. */
static void cub_setup(const uint32_t *du, const uint32_t *df, void **tmp,
                      size_t *bytes, uint32_t **out)
{
  void *cub_tmp = NULL;
  size_t cub_bytes = 0, b1 = 0, b2 = 0, b3 = 0;
  uint32_t *cub_out;
  CHECK(cudaMalloc((void **)&cub_out, 64));
  CHECK(cub::DeviceReduce::Sum(NULL, b1, du, cub_out, (int)TOTAL));
  CHECK(cub::DeviceReduce::Max(NULL, b2, du, cub_out, (int)TOTAL));
  CHECK(cub::DeviceReduce::Sum(NULL, b3, (const float *)df, (float *)cub_out,
                               (int)TOTAL));
  cub_bytes = std::max(b1, std::max(b2, b3));
  CHECK(cudaMalloc(&cub_tmp, cub_bytes));
  *tmp = cub_tmp;
  *bytes = cub_bytes;
  *out = cub_out;
}

/* Check window 0 (rows base[0 .. n)): ours against CUB (integers) or the
 * CPU tree (the float sum, up to 2^24 rows).  1 equal, 0 different, -1 not
 * checked, -2 the reference failed. */
static int grc_window(reducer *red, unsigned k, int opi,
                        const uint32_t *base, uint64_t n, void *cub_tmp,
                        size_t cub_bytes, uint32_t *cub_out)
{
  wave_dtype dt = opi == 2 ? WAVE_F32 : WAVE_U32;
  wave_op op = opi == 1 ? WAVE_MAX : WAVE_SUM;
  CHECK(reduce_device(red, dt, op, base, NULL, n, 0));
  result res;
  CHECK(cudaMemcpy(&res, red->res, sizeof res, cudaMemcpyDeviceToHost));
  wv_reduce_out got;
  decode_result(dt, op, &res, n, &got);
  int ok = -1; /* not checked */
  if (opi < 2) {
    size_t tb = cub_bytes;
    if (opi == 0)
      CHECK(cub::DeviceReduce::Sum(cub_tmp, tb, base, cub_out, (int)n));
    else
      CHECK(cub::DeviceReduce::Max(cub_tmp, tb, base, cub_out, (int)n));
    uint32_t want;
    CHECK(cudaMemcpy(&want, cub_out, 4, cudaMemcpyDeviceToHost));
    ok = got.bits[0] == want;
  } else if (k <= 24) {
    std::vector<uint32_t> h(n);
    CHECK(cudaMemcpy(h.data(), base, n * 4, cudaMemcpyDeviceToHost));
    wv_span sp = {h.data(), n};
    wv_reduce_job job;
    memset(&job, 0, sizeof job);
    job.dtype = dt;
    job.op = op;
    job.input = &sp;
    job.n_input = 1;
    job.rows = n;
    wv_reduce_out want;
    wave_error err;
    if (wv_reduce_reference(&job, &want, &err) != 0) {
      fprintf(stderr, "reference: %s\n", err.message);
      return -2;
    }
    ok = want.bits[0] == got.bits[0];
  }
  return ok;
}

int main(int argc, char **argv)
{
  if (argc > 1 && strcmp(argv[1], "fsum") == 0)
    return bench_fsum(argc > 2 ? atoi(argv[2]) : 15);
  unsigned lo = argc > 1 ? (unsigned)atoi(argv[1]) : 10;
  unsigned hi = argc > 2 ? (unsigned)atoi(argv[2]) : TOTAL_LOG2;
  if (hi > TOTAL_LOG2)
    hi = TOTAL_LOG2;
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  printf("device: %s sm_%d%d, %d SMs\n", prop.name, prop.major, prop.minor,
         prop.multiProcessorCount);

  uint32_t *du, *df, *sink;
  CHECK(cudaMalloc((void **)&du, TOTAL * 4));
  CHECK(cudaMalloc((void **)&df, TOTAL * 4));
  CHECK(cudaMalloc((void **)&sink, 64));
  k_fill_u32<<<4096, 256>>>(du, TOTAL, 1);
  k_fill_f32<<<4096, 256>>>(df, TOTAL, 2);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());

  reducer red;
  CHECK(reducer_init(&red));
  /* Room for the largest f32 job up front (no allocation while timing). */
  CHECK(reducer_reserve(&red, TOTAL / WVG_TILE_ROWS, TOTAL / WVG_PIECE_ROWS,
                        TOTAL / WVG_PIECE_ROWS, 1));
  void *cub_tmp;
  size_t cub_bytes;
  uint32_t *cub_out;
  cub_setup(du, df, &cub_tmp, &cub_bytes, &cub_out);

  timer t;
  std::vector<row> rows;
  int all_ok = 1;
  for (unsigned k = lo; k <= hi; k++) {
    const uint64_t n = 1ull << k;
    const uint64_t windows = TOTAL / n;
    const int reps = k <= 20 ? 200 : k <= 26 ? 50 : 15;
    for (int opi = 0; opi < 3; opi++) {
      const uint32_t *base = opi == 2 ? df : du;
      wave_dtype dt = opi == 2 ? WAVE_F32 : WAVE_U32;
      wave_op op = opi == 1 ? WAVE_MAX : WAVE_SUM;
      const char *name = opi == 0 ? "u32 sum" : opi == 1 ? "u32 max"
                                                         : "f32 sum";
      auto win = [&](int r) { return base + (uint64_t)(r % windows) * n; };
      double ours = time_us(t, reps, [&](int r) {
        CHECK(reduce_device(&red, dt, op, win(r), NULL, n, 0));
      });
      double cub = time_us(t, reps, [&](int r) {
        size_t tb = cub_bytes;
        if (opi == 0)
          CHECK(cub::DeviceReduce::Sum(cub_tmp, tb, win(r), cub_out, (int)n));
        else if (opi == 1)
          CHECK(cub::DeviceReduce::Max(cub_tmp, tb, win(r), cub_out, (int)n));
        else
          CHECK(cub::DeviceReduce::Sum(cub_tmp, tb, (const float *)win(r),
                                       (float *)cub_out, (int)n));
      });
      /* Check window 0: ours against CUB (integers) or the CPU tree. */
      int ok = grc_window(&red, k, opi, base, n, cub_tmp, cub_bytes,
                            cub_out);
      if (ok == -2)
        return 1;
      if (ok == 0)
        all_ok = 0;
      row rw = {k, name, ours, cub, cub / ours, n * 4 / (ours * 1e3), ok};
      rows.push_back(rw);
      printf("2^%-2u %-8s ours %10.2f us  cub %10.2f us  ratio %.3f  "
             "%7.1f GB/s  %s\n", k, name, ours, cub, cub / ours, rw.gbs,
             ok < 0 ? "(unchecked)" : ok ? "bits ok" : "BITS DIFFER");
      fflush(stdout);
    }
  }

  /* Ours vs a plain streaming read of the same bytes. */
  printf("\nstreaming read vs ours (u32 sum, u32 max, f32 sum):\n");
  std::vector<row> srows;
  for (unsigned k : {28u, 30u}) {
    if (k < lo || k > hi)
      continue;
    const uint64_t n = 1ull << k, windows = TOTAL / n;
    int grid = red.int_blocks;
    double s = time_us(t, 15, [&](int r) {
      k_stream<<<grid, 256>>>((const uint4 *)(du + (r % windows) * n), n / 4,
                              sink);
    });
    for (int opi = 0; opi < 3; opi++) {
      const uint32_t *base = opi == 2 ? df : du;
      wave_dtype dt = opi == 2 ? WAVE_F32 : WAVE_U32;
      wave_op op = opi == 1 ? WAVE_MAX : WAVE_SUM;
      double ours = time_us(t, 15, [&](int r) {
        CHECK(reduce_device(&red, dt, op, base + (r % windows) * n, NULL, n, 0));
      });
      row rw = {k, opi == 0 ? "u32 sum" : opi == 1 ? "u32 max" : "f32 sum",
                ours, s, s / ours, n * 4 / (s * 1e3), 1};
      srows.push_back(rw);
      printf("2^%u %-8s ours %9.2f us, stream %9.2f us (%.1f GB/s): %.1f%% of "
             "streaming read\n", k, rw.op, ours, s, rw.gbs, 100 * s / ours);
    }
  }
  CHECK(cudaGetLastError());

  printf("\n| size | op | ours us | CUB us | CUB/ours | ours GB/s | bits |\n");
  printf("|---|---|---|---|---|---|---|\n");
  for (const row &r : rows)
    if (r.log2 % 2 == 0 || r.log2 == hi)
      printf("| 2^%u | %s | %.1f | %.1f | %.3f | %.0f | %s |\n", r.log2, r.op,
             r.ours, r.cub, r.ratio, r.gbs,
             r.ok < 0 ? "-" : r.ok ? "ok" : "DIFFER");
  for (const row &r : srows)
    printf("| 2^%u | %s vs stream | %.1f | %.1f (stream) | %.3f | | |\n",
           r.log2, r.op, r.ours, r.cub, r.ratio);
  printf("reduce bench: %s\n", all_ok ? "all checked results equal"
                                      : "RESULT MISMATCH");
  return all_ok ? 0 : 1;
}
