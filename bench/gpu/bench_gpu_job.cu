/* bench_gpu_job.cu - whole reduction jobs from host memory through the CUDA
 * backend (wv_cuda_backend.reduce: staging, overlapped copies, kernels, one
 * read-back) against a plain pinned host-to-device copy of the same bytes,
 * in the same run; and a tiny job's latency against CUB's sum of 1024
 * values plus a 4-byte copy back.
 *
 *   wvbench-gpu-job [LOG2]          (default 28: 1 GiB of rows)
 *   wvbench-gpu-job --check         random jobs vs the CPU reference only
 *
 * Every job's answer is compared with wv_reduce_reference.  --check runs a
 * matrix the conformance suite does not: thousands of tiny chunks (slice
 * packing, the piece-table limit), pieces that straddle slices, and masks
 * chunked unlike the input, for every dtype and op.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <algorithm>
#include <vector>

#include <cub/cub.cuh>

#include "workers/cuda/gpu_internal.h"
#include "bench/gpu/bench_gpu.h"

extern "C" const wv_backend wv_cuda_backend;



static uint64_t rng(uint64_t *s)
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static const wave_dtype DTYPES[] = {WAVE_U32, WAVE_S32, WAVE_F32};
static const wave_op OPS[] = {WAVE_SUM, WAVE_MIN, WAVE_MAX, WAVE_EXTENT,
                              WAVE_AND, WAVE_OR,  WAVE_XOR};

static int same(const wv_reduce_out *a, const wv_reduce_out *b)
{
  return a->n_values == b->n_values && a->count == b->count &&
         a->bits[0] == b->bits[0] &&
         (a->n_values < 2 || a->bits[1] == b->bits[1]);
}

/* Run job on the device and the reference; print and count a mismatch. */
static int run_check(wv_device *dev, wv_reduce_job *job, const char *what)
{
  wv_reduce_out got, want;
  wave_error err;
  memset(&got, 0, sizeof got);
  if (wv_reduce_reference(job, &want, &err) != 0) {
    fprintf(stderr, "reference: %s\n", err.message);
    exit(1);
  }
  int rv = wv_cuda_backend.reduce(dev, job, &got, &err);
  if (rv != 0) {
    printf("FAIL %s %s/%s: %s\n", what, wave_dtype_name(job->dtype),
           wave_op_name(job->op), err.message);
    return 1;
  }
  if (!same(&got, &want)) {
    printf("FAIL %s %s/%s: got %08x %08x count %llu, want %08x %08x count "
           "%llu\n", what, wave_dtype_name(job->dtype),
           wave_op_name(job->op), got.bits[0], got.bits[1],
           (unsigned long long)got.count, want.bits[0], want.bits[1],
           (unsigned long long)want.count);
    return 1;
  }
  return 0;
}

/* Values with NaN, inf, -0.0, subnormals and integer extremes mixed in. */
static uint32_t value(uint64_t *s, wave_dtype d)
{
  uint64_t x = rng(s);
  if ((x & 63) == 0) {
    static const uint32_t special[] = {0x7fc00000u, 0x7f800000u, 0xff800000u,
                                       0x80000000u, 0x00000000u, 0x00000001u,
                                       0x80000001u, 0x7fffffffu, 0xffffffffu};
    return special[(x >> 8) % 9];
  }
  if (d == WAVE_F32) {
    uint32_t e = 100 + (uint32_t)((x >> 40) & 31);
    return (uint32_t)(x >> 63) << 31 | e << 23 | (uint32_t)(x & 0x7fffff);
  }
  return (uint32_t)(x >> 16);
}

/* Split rows into chunks: sizes from sizes[] cycling, the rest last. */
static void chunk(std::vector<uint32_t> &buf, uint64_t rows, uint64_t *s,
                  uint64_t max_chunk, int empties, std::vector<wv_span> &out)
{
  out.clear();
  uint64_t at = 0;
  while (at < rows) {
    uint64_t n = 1 + rng(s) % max_chunk;
    if (n > rows - at)
      n = rows - at;
    if (empties && rng(s) % 5 == 0)
      out.push_back(wv_span{buf.data() + at, 0});
    out.push_back(wv_span{buf.data() + at, n});
    at += n;
  }
}

static int check_matrix(wv_device *dev)
{
  struct shape {
    uint64_t rows, in_chunk, mask_chunk;
    int mask, empties;
    const char *name;
  } shapes[] = {
      {1, 1, 1, 0, 0, "1 row"},
      {257, 300, 300, 1, 0, "257 rows masked"},
      {65537, 1u << 20, 1000, 1, 0, "65537 rows, mask in 1000s"},
      {200000, 40, 97, 1, 1, "5000 tiny chunks + empties, masked"},
      {300000, 20, 1u << 20, 0, 1, "15000 tiny chunks (piece limit)"},
      {(1u << 24) + 5, 1u << 25, 777777, 1, 0, "2^24+5 rows one chunk"},
      {(3u << 24) + 17, 20000000, 3000001, 1, 1, "3x2^24 rows, big chunks"},
      {(1u << 25) + 3, 1u << 26, 1u << 26, 0, 0, "2^25+3 rows one chunk"},
  };
  uint64_t s = 42;
  int fails = 0, jobs = 0;
  for (const shape &sh : shapes) {
    std::vector<uint32_t> mask(sh.rows);
    for (uint64_t i = 0; i < sh.rows; i++)
      mask[i] = rng(&s) % 3 != 0 ? (uint32_t)rng(&s) | 1u : 0u;
    for (wave_dtype d : DTYPES) {
      std::vector<uint32_t> data(sh.rows);
      for (uint64_t i = 0; i < sh.rows; i++)
        data[i] = value(&s, d);
      std::vector<wv_span> in, mk;
      chunk(data, sh.rows, &s, sh.in_chunk, sh.empties, in);
      chunk(mask, sh.rows, &s, sh.mask_chunk, 0, mk);
      for (wave_op op : OPS) {
        if (wave_op_check(d, op) != 0)
          continue;
        wv_reduce_job job;
        memset(&job, 0, sizeof job);
        job.dtype = d;
        job.op = op;
        job.input = in.data();
        job.n_input = in.size();
        job.rows = sh.rows;
        if (sh.mask) {
          job.has_mask = 1;
          job.mask = mk.data();
          job.n_mask = mk.size();
        }
        fails += run_check(dev, &job, sh.name);
        jobs++;
      }
    }
    printf("check: %s (%zu rows) done\n", sh.name, (size_t)sh.rows);
    fflush(stdout);
  }
  printf("check: %d jobs, %d mismatches\n", jobs, fails);
  return fails;
}

template <typename F> static double median_s(int reps, F fn)
{
  std::vector<double> t;
  fn();
  for (int r = 0; r < reps; r++) {
    double a = now();
    fn();
    t.push_back(now() - a);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

/* Latency of a tiny job: 1024 rows of pageable end to end, vs CUB sum of
 * 1024 device-resident values (dbuf) + 4-byte copy back + sync.  Returns
 * the job's check (1: mismatch). */
static int small_job(wv_device *dev, uint32_t *pageable, void *dbuf,
                     double *t_job, double *t_cub)
{
  wave_error err;
  wv_span small = {pageable, 1024};
  wv_reduce_job sj;
  memset(&sj, 0, sizeof sj);
  sj.dtype = WAVE_U32;
  sj.op = WAVE_SUM;
  sj.input = &small;
  sj.n_input = 1;
  sj.rows = 1024;
  wv_reduce_out so;
  *t_job = median_s(200, [&] {
    if (wv_cuda_backend.reduce(dev, &sj, &so, &err) != 0)
      exit(1);
  });
  void *tmp = NULL;
  size_t tb = 0;
  uint32_t *dout, hout;
  CHECK(cudaMalloc((void **)&dout, 4));
  CHECK(cub::DeviceReduce::Sum(NULL, tb, (uint32_t *)dbuf, dout, 1024));
  CHECK(cudaMalloc(&tmp, tb));
  *t_cub = median_s(200, [&] {
    size_t b = tb;
    CHECK(cub::DeviceReduce::Sum(tmp, b, (uint32_t *)dbuf, dout, 1024));
    CHECK(cudaMemcpy(&hout, dout, 4, cudaMemcpyDeviceToHost));
  });
  return run_check(dev, &sj, "small job");
}

int main(int argc, char **argv)
{
  int check_only = argc > 1 && strcmp(argv[1], "--check") == 0;
  unsigned lg = argc > 1 && !check_only ? (unsigned)atoi(argv[1]) : 28;
  wv_device_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.name = "cuda0";
  cfg.backend = "cuda";
  cfg.exchange = WV_EXCHANGE_AUTO;
  wv_device *dev;
  wave_error err;
  if (wv_cuda_backend.open(&cfg, &dev, &err) != 0) {
    fprintf(stderr, "open: %s\n", err.message);
    return 1;
  }
  wv_caps caps;
  wv_cuda_backend.caps(dev, &caps);
  printf("device: %s\n", caps.description);
  if (check_only) {
    int f = check_matrix(dev);
    wv_cuda_backend.close(dev);
    return f ? 1 : 0;
  }

  const uint64_t n = 1ull << lg;
  const size_t bytes = n * 4;
  uint32_t *pinned, *pageable = (uint32_t *)malloc(bytes);
  CHECK(cudaMallocHost((void **)&pinned, bytes));
  void *dbuf;
  CHECK(cudaMalloc(&dbuf, bytes));
  uint64_t s = 7;
  for (uint64_t i = 0; i < n; i++) {
    uint32_t v = value(&s, WAVE_U32);
    /* Finite floats for the float sum; the same bits serve the integers. */
    uint64_t x = rng(&s);
    v = (uint32_t)(x >> 63) << 31 | (uint32_t)(112 + ((x >> 40) & 15)) << 23 |
        (uint32_t)(x & 0x7fffff);
    pinned[i] = pageable[i] = v;
  }

  /* Baselines: plain host-to-device copies of the same bytes. */
  double t_pin = median_s(5, [&] {
    CHECK(cudaMemcpy(dbuf, pinned, bytes, cudaMemcpyHostToDevice));
  });
  double t_page = median_s(3, [&] {
    CHECK(cudaMemcpy(dbuf, pageable, bytes, cudaMemcpyHostToDevice));
  });
  printf("H2D copy %zu MiB: pinned %.2f ms (%.1f GB/s), pageable %.2f ms "
         "(%.1f GB/s)\n", bytes >> 20, t_pin * 1e3, bytes / t_pin / 1e9,
         t_page * 1e3, bytes / t_page / 1e9);

  struct res {
    const char *what;
    double t;
    int ok;
  };
  std::vector<res> out;
  int fails = 0;
  for (int src = 0; src < 2; src++)
    for (int opi = 0; opi < 3; opi++) {
      wave_dtype d = opi == 2 ? WAVE_F32 : WAVE_U32;
      wave_op op = opi == 1 ? WAVE_MAX : WAVE_SUM;
      wv_span sp = {src == 0 ? pinned : pageable, n};
      wv_reduce_job job;
      memset(&job, 0, sizeof job);
      job.dtype = d;
      job.op = op;
      job.input = &sp;
      job.n_input = 1;
      job.rows = n;
      wv_reduce_out got;
      double t = median_s(5, [&] {
        if (wv_cuda_backend.reduce(dev, &job, &got, &err) != 0) {
          fprintf(stderr, "reduce: %s\n", err.message);
          exit(1);
        }
      });
      int bad = run_check(dev, &job, "bench job");
      fails += bad;
      static char names[6][48];
      snprintf(names[src * 3 + opi], 48, "%s %s/%s",
               src == 0 ? "pinned" : "pageable", wave_dtype_name(d),
               wave_op_name(op));
      out.push_back(res{names[src * 3 + opi], t, !bad});
      printf("job %-26s %.2f ms  %.1f GB/s  %.2fx pinned H2D copy  %s\n",
             names[src * 3 + opi], t * 1e3, bytes / t / 1e9, t_pin / t,
             bad ? "MISMATCH" : "ok");
      fflush(stdout);
    }

  double t_job, t_cub;
  fails += small_job(dev, pageable, dbuf, &t_job, &t_cub);
  printf("1024-row job: %.1f us end to end (host data); CUB sum of 1024 "
         "device values + copy back: %.1f us\n", t_job * 1e6, t_cub * 1e6);

  printf("\n| job (2^%u rows, %zu MiB) | ms | GB/s | vs pinned H2D copy |\n",
         lg, bytes >> 20);
  printf("|---|---|---|---|\n");
  printf("| pinned H2D copy (baseline) | %.2f | %.1f | 1.00 |\n", t_pin * 1e3,
         bytes / t_pin / 1e9);
  printf("| pageable H2D copy | %.2f | %.1f | %.2f |\n", t_page * 1e3,
         bytes / t_page / 1e9, t_pin / t_page);
  for (const res &r : out)
    printf("| %s%s | %.2f | %.1f | %.2f |\n", r.what, r.ok ? "" : " MISMATCH",
           r.t * 1e3, bytes / r.t / 1e9, t_pin / r.t);
  printf("| 1024-row job, host clock | %.1f us | | CUB+copy %.1f us |\n",
         t_job * 1e6, t_cub * 1e6);
  wv_cuda_backend.close(dev);
  printf("job bench: %s\n", fails ? "RESULT MISMATCH" : "all results equal");
  return fails ? 1 : 0;
}
