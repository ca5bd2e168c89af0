/* bench_gpu_wide.cu - the CUDA backend's 64-bit dtypes and argmin/argmax
 * against CUB, measured in the same run (issue 23).
 *
 *   wvbench-gpu-wide [REPS]                      (default 30)
 *
 * First the bits: every measured reduction (device-resident rows, one
 * chunk, reduce_device_wide) is checked against the CPU reference
 * (wv_reduce_reference) on a host copy of the same rows; the backend
 * itself (wv_cuda_reduce: host memory, staging, several slices) runs
 * jobs of each case against the reference too: 2^25 + 12345 rows in
 * three chunks, and 6000 small chunks, each masked and not.  Then the
 * times: u64 sum and f64 sum at 2^27 rows and f32 argmax at 2^28 (the
 * targets: >= 0.95x, 0.95x and 0.9x CUB), and for information u64 min,
 * s64 max, f64 extent (CUB: Min then Max) and f64 argmin at 2^27.  CUDA
 * events around each call, median of REPS.  The f64 sum is our fixed tree
 * against CUB's own order, so its bits are not compared with CUB's.
 * Exit status 0 only when every check passed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include <cub/cub.cuh>

#include "workers/cuda/gpu_wide.h"
#include "workers/cuda/gpu_api.h"
#include "bench/gpu/bench_gpu.h"

using namespace wv_cuda;

__host__ __device__ static inline uint64_t mix(uint64_t x)
{
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* kind 0: any 64-bit pattern; 1: finite float64 of mixed sign over 16
 * binades; 2: finite float32 likewise (n counts 4-byte rows). */
__global__ void k_fill(void *d, uint64_t n, int kind, uint64_t seed)
{
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
       i += (uint64_t)gridDim.x * blockDim.x) {
    uint64_t x = mix(i ^ seed);
    if (kind == 0) {
      ((uint64_t *)d)[i] = x;
    } else if (kind == 1) {
      uint64_t e = 1015 + ((x >> 40) & 15);
      ((uint64_t *)d)[i] = (x >> 63) << 63 | e << 52 | (x & 0xfffffffffffffull);
    } else {
      uint32_t e = 112 + (uint32_t)((x >> 40) & 15);
      ((uint32_t *)d)[i] = (uint32_t)(x >> 63) << 31 | e << 23 |
                           (uint32_t)(x & 0x7fffff);
    }
  }
}

struct wcase {
  const char *name;
  wave_dtype dt;
  wave_op op;
  unsigned log2;
  int buf;          /* 0 u64, 1 f64, 2 f32 */
  double target;    /* 0: for information */
};

static const wcase cases[] = {
  {"u64 sum", WAVE_U64, WAVE_SUM, 27, 0, 0.95},
  {"f64 sum", WAVE_F64, WAVE_SUM, 27, 1, 0.95},
  {"f32 argmax", WAVE_F32, WAVE_ARGMAX, 28, 2, 0.90},
  {"u64 min", WAVE_U64, WAVE_MIN, 27, 0, 0},
  {"s64 max", WAVE_S64, WAVE_MAX, 27, 0, 0},
  {"f64 extent", WAVE_F64, WAVE_EXTENT, 27, 1, 0},
  {"f64 argmin", WAVE_F64, WAVE_ARGMIN, 27, 1, 0},
};
#define NCASES (sizeof cases / sizeof *cases)

struct bufs {
  void *d[3];
  std::vector<unsigned char> h[3];
  void *gwu_tmp;
  size_t gwu_bytes;
  void *gwu_out;    /* value (8 bytes), then the index (8 bytes) */
};

/* CUB's call for case c over n rows (bytes == NULL: the size query). */
static cudaError_t gwu_call(const wcase &c, bufs &b, size_t *bytes, void *tmp,
                            uint64_t n)
{
  const void *in = b.d[c.buf];
  int64_t *idx = (int64_t *)((char *)b.gwu_out + 8);
  switch (c.buf * 16 + c.op) {
  case 0 * 16 + WAVE_SUM:
    return cub::DeviceReduce::Sum(tmp, *bytes, (const uint64_t *)in,
                                  (uint64_t *)b.gwu_out, (int64_t)n);
  case 0 * 16 + WAVE_MIN:
    return cub::DeviceReduce::Min(tmp, *bytes, (const uint64_t *)in,
                                  (uint64_t *)b.gwu_out, (int64_t)n);
  case 0 * 16 + WAVE_MAX:
    return cub::DeviceReduce::Max(tmp, *bytes, (const int64_t *)in,
                                  (int64_t *)b.gwu_out, (int64_t)n);
  case 1 * 16 + WAVE_SUM:
    return cub::DeviceReduce::Sum(tmp, *bytes, (const double *)in,
                                  (double *)b.gwu_out, (int64_t)n);
  case 1 * 16 + WAVE_EXTENT: {
    cudaError_t e = cub::DeviceReduce::Min(tmp, *bytes, (const double *)in,
                                           (double *)b.gwu_out, (int64_t)n);
    if (e != cudaSuccess || tmp == NULL)
      return e;
    return cub::DeviceReduce::Max(tmp, *bytes, (const double *)in,
                                  (double *)b.gwu_out + 1, (int64_t)n);
  }
  case 1 * 16 + WAVE_ARGMIN:
    return cub::DeviceReduce::ArgMin(tmp, *bytes, (const double *)in,
                                     (double *)b.gwu_out, idx, (int64_t)n);
  case 2 * 16 + WAVE_ARGMAX:
    return cub::DeviceReduce::ArgMax(tmp, *bytes, (const float *)in,
                                     (float *)b.gwu_out, idx, (int64_t)n);
  }
  return cudaErrorInvalidValue;
}

struct timer {
  cudaEvent_t a, b;
};

template <typename F> static double time_us(timer &t, int reps, F fn)
{
  std::vector<float> ms;
  for (int w = 0; w < 3; w++)
    fn();
  for (int r = 0; r < reps; r++) {
    CHECK(cudaEventRecord(t.a));
    fn();
    CHECK(cudaEventRecord(t.b));
    CHECK(cudaEventSynchronize(t.b));
    float x;
    CHECK(cudaEventElapsedTime(&x, t.a, t.b));
    ms.push_back(x);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2] * 1e3;
}

static int same(const wv_reduce_out &a, const wv_reduce_out &b)
{
  return a.n_values == b.n_values && a.count == b.count &&
         a.index == b.index && a.bits[0] == b.bits[0] &&
         (a.n_values < 2 || a.bits[1] == b.bits[1]);
}

static void show(const char *what, const wv_reduce_out &o)
{
  printf("  %s: [%016llx %016llx] count %llu index %lld\n", what,
         (unsigned long long)o.bits[0], (unsigned long long)o.bits[1],
         (unsigned long long)o.count, (long long)o.index);
}

/* Device-resident result of case c against the reference. */
static int gwc_device(wreducer *w, const wcase &c, bufs &b)
{
  uint64_t n = 1ull << c.log2;
  CHECK(reduce_device_wide(w, c.dt, c.op, b.d[c.buf], NULL, n, 0));
  wresult res;
  CHECK(cudaMemcpy(&res, w->res, sizeof res, cudaMemcpyDeviceToHost));
  wv_reduce_out got, want;
  memset(&got, 0, sizeof got);
  decode_wide(c.dt, c.op, &res, wide_counts(c.dt, c.op, 0) ? res.count : n,
              &got);
  wv_span sp = {b.h[c.buf].data(), n};
  wv_reduce_job job = {c.dt, c.op, &sp, 1, NULL, 0, 0, n};
  wave_error err;
  if (wv_reduce_reference(&job, &want, &err) != 0) {
    fprintf(stderr, "reference: %s\n", err.message);
    exit(1);
  }
  int ok = same(got, want);
  printf("bits %-10s 2^%u device-resident: %s\n", c.name, c.log2,
         ok ? "equal to the CPU reference" : "DIFFER");
  if (!ok) {
    show("ours", got);
    show("reference", want);
  }
  return ok;
}

/* The backend on a host job over the case's rows: three chunks (one
 * empty) and a mask of two chunks on other boundaries, then unmasked. */
static int gwc_backend(wv_device *dev, const wcase &c, bufs &b,
                         const uint32_t *mask)
{
  const uint64_t n = (1ull << 25) + 12345;
  const size_t rs = wv_dtype_size(c.dt);
  const unsigned char *rows = b.h[c.buf].data() + 4;  /* 4-byte aligned */
  uint64_t a = n / 3 + 1, z = n - a;
  wv_span in[3] = {{rows, a}, {NULL, 0}, {rows + a * rs, z}};
  wv_span mk[2] = {{mask, n / 2 + 7}, {mask + n / 2 + 7, n - n / 2 - 7}};
  int ok = 1;
  for (int masked = 1; masked >= 0; masked--) {
    wv_reduce_job job = {c.dt, c.op, in, 3, mk, (size_t)(masked ? 2 : 0),
                         masked, n};
    wv_reduce_out got, want;
    wave_error err;
    memset(&got, 0x5a, sizeof got);
    int rc = wv_cuda_reduce(dev, &job, &got, &err);
    if (rc != 0) {
      printf("backend %s: error %s\n", c.name, err.message);
      return 0;
    }
    if (wv_reduce_reference(&job, &want, &err) != 0) {
      fprintf(stderr, "reference: %s\n", err.message);
      exit(1);
    }
    int eq = same(got, want);
    printf("bits %-10s backend, %llu rows in 3 chunks%s: %s\n", c.name,
           (unsigned long long)n, masked ? ", masked" : "",
           eq ? "equal to the CPU reference" : "DIFFER");
    if (!eq) {
      show("ours", got);
      show("reference", want);
    }
    ok &= eq;
  }
  return ok;
}

/* Thousands of small chunks (some empty) and a masked and an unmasked
 * run: the float64 sum's piece tables overflow one slice (4096 pieces)
 * and its chunk values take the levels of k_dfinish. */
static int gwc_many(wv_device *dev, const wcase &c, bufs &b,
                      const uint32_t *mask)
{
  const size_t nch = 6000;
  const size_t rs = wv_dtype_size(c.dt);
  std::vector<wv_span> in(nch);
  uint64_t n = 0;
  for (size_t i = 0; i < nch; i++) {
    uint64_t len = i % 7 == 3 ? 0 : mix(i * 31 + 5) % 700;
    in[i].data = len ? b.h[c.buf].data() + 4 + n * rs : NULL;
    in[i].rows = len;
    n += len;
  }
  wv_span mk = {mask, n};
  int ok = 1;
  for (int masked = 1; masked >= 0; masked--) {
    wv_reduce_job job = {c.dt, c.op, in.data(), nch, &mk,
                         (size_t)masked, masked, n};
    wv_reduce_out got, want;
    wave_error err;
    memset(&got, 0x5a, sizeof got);
    if (wv_cuda_reduce(dev, &job, &got, &err) != 0) {
      printf("backend %s: error %s\n", c.name, err.message);
      return 0;
    }
    if (wv_reduce_reference(&job, &want, &err) != 0) {
      fprintf(stderr, "reference: %s\n", err.message);
      exit(1);
    }
    int eq = same(got, want);
    printf("bits %-10s backend, %llu rows in %zu chunks%s: %s\n", c.name,
           (unsigned long long)n, nch, masked ? ", masked" : "",
           eq ? "equal to the CPU reference" : "DIFFER");
    if (!eq) {
      show("ours", got);
      show("reference", want);
    }
    ok &= eq;
  }
  return ok;
}

int main(int argc, char **argv)
{
  int reps = argc > 1 ? atoi(argv[1]) : 30;
  if (reps < 3)
    reps = 3;
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  printf("device: %s sm_%d%d, %d SMs\n", prop.name, prop.major, prop.minor,
         prop.multiProcessorCount);
  const size_t bytes = (size_t)1 << 30;   /* each buffer: 1 GiB */
  bufs b;
  for (int i = 0; i < 3; i++) {
    CHECK(cudaMalloc(&b.d[i], bytes));
    k_fill<<<4096, 256>>>(b.d[i], i == 2 ? bytes / 4 : bytes / 8, i, 11 + i);
    CHECK(cudaGetLastError());
    b.h[i].resize(bytes);
    CHECK(cudaMemcpy(b.h[i].data(), b.d[i], bytes, cudaMemcpyDeviceToHost));
  }
  CHECK(cudaMalloc(&b.gwu_out, 64));
  b.gwu_bytes = 0;
  for (size_t i = 0; i < NCASES; i++) {
    size_t q = 0;
    CHECK(gwu_call(cases[i], b, &q, NULL, 1ull << cases[i].log2));
    b.gwu_bytes = std::max(b.gwu_bytes, q);
  }
  CHECK(cudaMalloc(&b.gwu_tmp, b.gwu_bytes));

  wreducer w;
  CHECK(wreducer_init(&w));
  CHECK(wreducer_reserve(&w, (1u << 28) / WVG_TILE_ROWS,
                         (1u << 28) / WVG_PIECE_ROWS,
                         (1u << 28) / WVG_PIECE_ROWS, 1));
  int all_ok = 1;
  for (size_t i = 0; i < NCASES; i++)
    all_ok &= gwc_device(&w, cases[i], b);

  wv_device_config cfg = {};
  cfg.name = "cuda0";
  cfg.backend = "cuda";
  cfg.queue_depth = 4;
  wv_device *dev = NULL;
  wave_error err;
  if (wv_cuda_open(&cfg, &dev, &err) != 0) {
    printf("cuda0: %s\n", err.message);
    return 1;
  }
  std::vector<uint32_t> mask((1u << 25) + 12345);
  for (size_t i = 0; i < mask.size(); i++)
    mask[i] = (uint32_t)(mix(i + 99) % 5 != 0) << (i % 32);
  for (size_t i = 0; i < NCASES; i++) {
    all_ok &= gwc_backend(dev, cases[i], b, mask.data());
    all_ok &= gwc_many(dev, cases[i], b, mask.data());
  }
  wv_cuda_close(dev);

  timer t;
  CHECK(cudaEventCreate(&t.a));
  CHECK(cudaEventCreate(&t.b));
  printf("\n| case | rows | ours us | CUB us | CUB/ours | ours GB/s | target "
         "|\n|---|---|---|---|---|---|---|\n");
  int all_met = 1;
  for (size_t i = 0; i < NCASES; i++) {
    const wcase &c = cases[i];
    uint64_t n = 1ull << c.log2;
    double ours = time_us(t, reps, [&] {
      CHECK(reduce_device_wide(&w, c.dt, c.op, b.d[c.buf], NULL, n, 0));
    });
    double cub = time_us(t, reps, [&] {
      size_t tb = b.gwu_bytes;
      CHECK(gwu_call(c, b, &tb, b.gwu_tmp, n));
    });
    double ratio = cub / ours;
    int met = c.target == 0 || ratio >= c.target;
    all_met &= met;
    char tg[32];
    if (c.target > 0)
      snprintf(tg, sizeof tg, ">= %.2f %s", c.target, met ? "met" : "MISSED");
    else
      snprintf(tg, sizeof tg, "(information)");
    printf("| %s | 2^%u | %.1f | %.1f | %.3f | %.0f | %s |\n", c.name, c.log2,
           ours, cub, ratio, n * wv_dtype_size(c.dt) / (ours * 1e3), tg);
  }
  CHECK(cudaGetLastError());
  printf("wide bench: %s; %s\n",
         all_ok ? "all bits equal to the CPU reference" : "BITS DIFFER",
         all_met ? "targets met" : "a target MISSED");
  return all_ok ? 0 : 1;
}
