/* bench_opencl.c - wvbench-opencl: the OpenCL backend's throughput, against
 * baselines measured in the same run.
 *
 *  1. Reductions on rows already on the device (2^28 rows on a GPU, 2^22
 *     on a CPU device), device time from the queue's profiling events,
 *     median of --reps, against a streaming read of the same buffer; every
 *     result checked against wv_reduce_reference.  These are the figures
 *     bench/device-run.sh sets beside the CUDA backend's kernels.
 *  2. The hash of one pack (main on a GPU, small on a CPU), the outputs
 *     kept on the device (kernel time, events), for the device's own
 *     exchange choice and for local memory at 1, 2 and 4 units per
 *     work-group; each set-up passes the pack's self-check first and one
 *     output is checked against the CPU's light evaluation.
 *
 *  3. The wide jobs (issue 23: 64-bit dtypes at the same bytes, half the
 *     rows; argmin/argmax), device-resident, against a streaming read of
 *     the same bytes in the same run; bits, count and index checked.
 *  4. The exact sum, op fsum (issue 39), float32 and float64 on narrow,
 *     full-range and cancelling rows, against the plain float sum of the
 *     same buffer in the same run; the bits checked.  Then small jobs
 *     (2^10..2^14 rows) from host rows: fsum's latency against the sum's.
 *
 *   wvbench-opencl [--platform N] [--index N] [--match TEXT] [--rows N]
 *                  [--reps R] [--pack NAME|PATH] [--nonces N] [--no-hash]
 *                  [--no-wide] [--wide-only] [--no-fsum] [--fsum-only]
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/base.h"
#include "workers/hash/hash.h"
#include "workers/hash/pack.h"
#include "workers/opencl/ocl.h"
#include "core/reduce.h"

static uint64_t bo_s = 42;
static uint32_t bo_rand(void)
{
  uint64_t z = (bo_s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return (uint32_t)(z ^ (z >> 31));
}

static int bo_cmp(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double bo_median(double *t, int n)
{
  qsort(t, (size_t)n, sizeof *t, bo_cmp);
  return t[n / 2];
}

static int bo_die(const char *what, const wave_error *e)
{
  fprintf(stderr, "wvbench-opencl: %s: %s\n", what, e->message);
  return 1;
}

static int bo_reduce(wv_device *d, uint64_t rows, int reps)
{
  uint32_t *u = malloc(rows * 4), *f = malloc(rows * 4);
  double *t = calloc((size_t)reps, sizeof *t);
  if (u == NULL || f == NULL || t == NULL)
    return 1;
  for (uint64_t i = 0; i < rows; i++) {
    u[i] = bo_rand();
    float x = (float)(int32_t)bo_rand() * 0x1p-20f;
    memcpy(&f[i], &x, 4);
  }
  cl_int ce;
  cl_mem mu = clCreateBuffer(d->ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                             rows * 4, u, &ce);
  cl_mem mf = clCreateBuffer(d->ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                             rows * 4, f, &ce);
  if (mu == NULL || mf == NULL) {
    fprintf(stderr, "wvbench-opencl: clCreateBuffer: %s\n",
            wv_ocl_errname(ce));
    return 1;
  }
  wave_error e = {0};
  double bytes = (double)rows * 4;
  /* Warm-up: the first passes pay for page mapping and clocks. */
  double w0 = 0, w1 = 0;
  for (int i = 0; i < 5; i++) {
    if (wv_ocl_stream_resident(d, mu, rows, i == 0 ? &w0 : &w1, &e) != 0)
      return bo_die("stream", &e);
  }
  for (int r = 0; r < reps; r++)
    if (wv_ocl_stream_resident(d, mu, rows, &t[r], &e) != 0)
      return bo_die("stream", &e);
  double ts = bo_median(t, reps);
  printf("reduce, device-resident: %" PRIu64 " rows (%.0f MiB), median of %d,"
         " device time (profiling events)\n", rows, bytes / 1048576, reps);
  printf("  warm-up: 5 streaming passes, first %.1f us, last %.1f us\n",
         w0 * 1e6, w1 * 1e6);
  printf("  %-22s %10.1f us  %8.1f GB/s  %6s\n", "stream read (baseline)",
         ts * 1e6, bytes / ts * 1e-9, "");
  static const struct {
    const char *label;
    wave_dtype dt;
    wave_op op;
    int fl;
  } cases[] = {
    {"u32 sum", WAVE_U32, WAVE_SUM, 0}, {"u32 max", WAVE_U32, WAVE_MAX, 0},
    {"u32 xor", WAVE_U32, WAVE_XOR, 0}, {"s32 extent", WAVE_S32, WAVE_EXTENT, 0},
    {"f32 sum", WAVE_F32, WAVE_SUM, 1}, {"f32 extent", WAVE_F32, WAVE_EXTENT, 1},
  };
  int failed = 0;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    wv_span sp = {cases[c].fl ? f : u, rows};
    wv_reduce_job job = {.dtype = cases[c].dt, .op = cases[c].op,
                         .input = &sp, .n_input = 1, .rows = rows};
    wv_reduce_out want, got;
    wv_reduce_reference(&job, &want, &e);
    int rc = 0;
    for (int r = 0; rc == 0 && r < reps; r++)
      rc = wv_ocl_reduce_resident(d, cases[c].fl ? mf : mu, rows,
                                  cases[c].dt, cases[c].op, &got, &t[r], &e);
    if (rc != 0 || got.bits[0] != want.bits[0] ||
        (want.n_values > 1 && got.bits[1] != want.bits[1])) {
      printf("  %-22s FAILED: %s (got %08x %08x, reference %08x %08x)\n",
             cases[c].label, rc ? e.message : "bits differ",
             (unsigned)got.bits[0], (unsigned)got.bits[1],
             (unsigned)want.bits[0], (unsigned)want.bits[1]);
      failed = 1;
      continue;
    }
    double tm = bo_median(t, reps);
    printf("  %-22s %10.1f us  %8.1f GB/s  %6.2f x stream\n", cases[c].label,
           tm * 1e6, bytes / tm * 1e-9, ts / tm);
  }
  clReleaseMemObject(mu);
  clReleaseMemObject(mf);
  free(u);
  free(f);
  free(t);
  return failed;
}

/* The wide jobs (issue 23) on `bytes` of rows kept on the device: the
 * 64-bit dtypes at bytes / 8 rows (2^27 on a GPU: the bytes of 2^28
 * uint32), argmin/argmax of 32-bit rows at bytes / 4, each against a
 * streaming read of the same buffer in the same run and checked against
 * wv_reduce_reference (bits, count and index). */
static int bo_wide(wv_device *d, uint64_t rows32, int reps)
{
  const uint64_t n64 = rows32 / 2, bytes = rows32 * 4;
  uint64_t *u = malloc(bytes), *f = malloc(bytes);
  uint32_t *g = malloc(bytes);
  double *t = calloc((size_t)reps, sizeof *t);
  if (u == NULL || f == NULL || g == NULL || t == NULL)
    return 1;
  for (uint64_t i = 0; i < n64; i++) {
    u[i] = (uint64_t)bo_rand() << 32 | bo_rand();
    double x = (double)(int32_t)bo_rand() * 0x1p-20 +
               (double)bo_rand() * 0x1p-60;
    memcpy(&f[i], &x, 8);
  }
  for (uint64_t i = 0; i < rows32; i++) {
    float x = (float)(int32_t)bo_rand() * 0x1p-20f;
    memcpy(&g[i], &x, 4);
  }
  cl_int ce;
  cl_mem mem[3];
  void *host[3] = {u, f, g};
  for (int i = 0; i < 3; i++)
    if ((mem[i] = clCreateBuffer(d->ctx, CL_MEM_READ_ONLY |
                                 CL_MEM_COPY_HOST_PTR, bytes, host[i],
                                 &ce)) == NULL) {
      fprintf(stderr, "wvbench-opencl: clCreateBuffer: %s\n",
              wv_ocl_errname(ce));
      return 1;
    }
  wave_error e = {0};
  for (int r = 0; r < reps + 5; r++)   /* 5 warm-up passes first */
    if (wv_ocl_stream_resident(d, mem[0], rows32, &t[r < 5 ? 0 : r - 5],
                               &e) != 0)
      return bo_die("stream", &e);
  double ts = bo_median(t, reps);
  printf("wide reductions, device-resident: %.0f MiB of rows, median of %d, "
         "device time\n", (double)bytes / 1048576, reps);
  printf("  %-22s %10.1f us  %8.1f GB/s\n", "stream read (baseline)",
         ts * 1e6, (double)bytes / ts * 1e-9);
  static const struct {
    const char *label;
    wave_dtype dt;
    wave_op op;
    int buf;   /* 0 u, 1 f, 2 g */
  } cases[] = {
    {"u64 sum", WAVE_U64, WAVE_SUM, 0}, {"s64 sum", WAVE_S64, WAVE_SUM, 0},
    {"u64 xor", WAVE_U64, WAVE_XOR, 0}, {"s64 extent", WAVE_S64, WAVE_EXTENT, 0},
    {"f64 sum", WAVE_F64, WAVE_SUM, 1}, {"f64 extent", WAVE_F64, WAVE_EXTENT, 1},
    {"f64 argmax", WAVE_F64, WAVE_ARGMAX, 1},
    {"s64 argmin", WAVE_S64, WAVE_ARGMIN, 0},
    {"f32 argmax", WAVE_F32, WAVE_ARGMAX, 2},
    {"u32 argmin", WAVE_U32, WAVE_ARGMIN, 2},
  };
  int failed = 0;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    uint64_t rows = wv_dtype_size(cases[c].dt) == 8 ? n64 : rows32;
    wv_span sp = {host[cases[c].buf], rows};
    wv_reduce_job job = {.dtype = cases[c].dt, .op = cases[c].op,
                         .input = &sp, .n_input = 1, .rows = rows};
    wv_reduce_out want, got;
    wv_reduce_reference(&job, &want, &e);
    int rc = 0;
    for (int r = 0; rc == 0 && r < reps; r++)
      rc = wv_ocl_reduce_resident(d, mem[cases[c].buf], rows, cases[c].dt,
                                  cases[c].op, &got, &t[r], &e);
    if (rc != 0 || got.bits[0] != want.bits[0] || got.index != want.index ||
        got.count != want.count ||
        (want.n_values > 1 && got.bits[1] != want.bits[1])) {
      printf("  %-22s FAILED: %s (got %016" PRIx64 " %016" PRIx64 " index %"
             PRId64 ", reference %016" PRIx64 " %016" PRIx64 " index %" PRId64
             ")\n", cases[c].label, rc ? e.message : "bits differ",
             got.bits[0], got.bits[1], got.index, want.bits[0], want.bits[1],
             want.index);
      failed = 1;
      continue;
    }
    double tm = bo_median(t, reps);
    printf("  %-22s %10.1f us  %8.1f GB/s  %6.2f x stream  (%" PRIu64
           " rows)\n", cases[c].label, tm * 1e6, (double)bytes / tm * 1e-9,
           ts / tm, rows);
  }
  for (int i = 0; i < 3; i++)
    clReleaseMemObject(mem[i]);
  free(u);
  free(f);
  free(g);
  free(t);
  return failed;
}

/* One row of the exact sum's data sets (issue 39): kind 0 narrow (as the
 * float sum's: integers times 2^-20), 1 the full finite range (every
 * exponent, both signs), 2 heavy cancellation (the second half negates
 * the first, which mixes 1.0 into magnitudes up to 2^100). */
static uint64_t bo_xrow(int f64, int kind, uint64_t i, uint64_t n,
                        const uint64_t *prev)
{
  uint64_t r = (uint64_t)bo_rand() << 32 | bo_rand();
  if (kind == 2 && i >= n / 2)
    return prev[i - n / 2] ^ (f64 ? 1ull << 63 : 1ull << 31);
  if (f64) {
    double x = (double)(int32_t)bo_rand() * 0x1p-20;
    uint64_t b;
    memcpy(&b, &x, 8);
    if (kind == 1)
      b = (r & 0x800fffffffffffffu) | ((1 + r % 2046) << 52);
    else if (kind == 2)
      b = i % 64 == 0 ? 0x3ff0000000000000u
                      : (r & 0x800fffffffffffffu) | ((923 + r % 200) << 52);
    return b;
  }
  float x = (float)(int32_t)bo_rand() * 0x1p-20f;
  uint32_t b;
  memcpy(&b, &x, 4);
  if (kind == 1)
    b = (uint32_t)((r & 0x807fffffu) | ((1 + (r >> 32) % 254) << 23));
  else if (kind == 2)
    b = i % 64 == 0 ? 0x3f800000u
                    : (uint32_t)((r & 0x807fffffu) |
                                 ((77 + (r >> 32) % 100) << 23));
  return b;
}

/* The exact sum (op fsum) against the plain float sum of the same rows on
 * the device in the same run, float32 at rows32 rows and float64 at half
 * as many (the same bytes), each data set of bo_xrow; fsum's bits checked
 * against wv_reduce_reference. */
static int bo_fsum(wv_device *d, uint64_t rows32, int reps)
{
  const size_t bytes = rows32 * 4;
  uint64_t *h = malloc(rows32 * 8);
  unsigned char *rows = malloc(bytes);
  double *t = calloc((size_t)reps, sizeof *t);
  if (h == NULL || rows == NULL || t == NULL)
    return 1;
  static const char *const kinds[3] = {"narrow", "full range",
                                       "cancellation"};
  printf("exact sum (fsum) vs float sum, device-resident: %.0f MiB of rows, "
         "median of %d, device time\n", (double)bytes / 1048576, reps);
  int failed = 0;
  for (int f64 = 0; f64 < 2; f64++)
    for (int kind = 0; kind < 3; kind++) {
      const wave_dtype dt = f64 ? WAVE_F64 : WAVE_F32;
      const unsigned sz = f64 ? 8 : 4;
      const uint64_t n = bytes / sz;
      for (uint64_t i = 0; i < n; i++) {
        h[i] = bo_xrow(f64, kind, i, n, h);
        memcpy(rows + (size_t)sz * i, &h[i], sz);
      }
      cl_int ce;
      cl_mem m = clCreateBuffer(d->ctx, CL_MEM_READ_ONLY |
                                CL_MEM_COPY_HOST_PTR, bytes, rows, &ce);
      if (m == NULL) {
        fprintf(stderr, "wvbench-opencl: clCreateBuffer: %s\n",
                wv_ocl_errname(ce));
        return 1;
      }
      wv_span sp = {rows, n};
      wv_reduce_job job = {.dtype = dt, .op = WAVE_FSUM, .input = &sp,
                           .n_input = 1, .rows = n};
      wv_reduce_out want, got;
      wave_error e = {0};
      double tm[2];
      int rc = wv_reduce_reference(&job, &want, &e);
      for (int op = 0; op < 2 && rc == 0; op++) {
        wave_op o = op ? WAVE_FSUM : WAVE_SUM;
        for (int r = 0; rc == 0 && r < reps + 1; r++)  /* one warm-up */
          rc = wv_ocl_reduce_resident(d, m, n, dt, o, &got,
                                      &t[r ? r - 1 : 0], &e);
        tm[op] = bo_median(t, reps);
      }
      if (rc == 0 && (got.bits[0] != want.bits[0] || got.count != n))
        rc = wv_seterr(&e, WAVE_EMISMATCH, "bits %016" PRIx64 " count %"
                       PRIu64 ", reference %016" PRIx64, got.bits[0],
                       got.count, want.bits[0]);
      if (rc != 0) {
        printf("  %s %-14s FAILED: %s\n", f64 ? "f64" : "f32", kinds[kind],
               e.message);
        failed = 1;
      } else {
        printf("  %s %-14s sum %9.1f us %7.1f GB/s   fsum %9.1f us %7.1f "
               "GB/s   fsum %5.2f x sum\n", f64 ? "f64" : "f32", kinds[kind],
               tm[0] * 1e6, (double)bytes / tm[0] * 1e-9, tm[1] * 1e6,
               (double)bytes / tm[1] * 1e-9, tm[0] / tm[1]);
      }
      clReleaseMemObject(m);
    }
  free(h);
  free(rows);
  free(t);
  return failed;
}

/* Small jobs (issue 39's target: fsum within 1.2x the plain sum's
 * latency at 2^10..2^14 rows): wall time of wv_ocl_reduce from host rows
 * (staging, launches, the read-back), median of 9 * reps, fsum and sum
 * alternating on the same rows. */
static double bo_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int bo_fsum_small(wv_device *d, int reps)
{
  const int n = 9 * reps;
  uint64_t *h = malloc((1u << 14) * 8);
  double *t[2] = {calloc((size_t)n, sizeof(double)),
                  calloc((size_t)n, sizeof(double))};
  if (h == NULL || t[0] == NULL || t[1] == NULL)
    return 1;
  printf("small jobs from host rows (wv_ocl_reduce, wall time), median of "
         "%d\n", n);
  int failed = 0;
  for (int f64 = 0; f64 < 2; f64++)
    for (unsigned lg = 10; lg <= 14; lg += 2) {
      const uint64_t rows = 1ull << lg;
      const unsigned sz = f64 ? 8 : 4;
      unsigned char *b = (unsigned char *)h;
      for (uint64_t i = 0; i < rows; i++) {
        uint64_t v = bo_xrow(f64, 0, i, rows, h);
        memcpy(b + sz * i, &v, sz);
      }
      wv_span sp = {b, rows};
      wave_error e = {0};
      int rc = 0;
      for (int r = 0; r < n + 2 && rc == 0; r++)   /* 2 warm-ups */
        for (int op = 0; op < 2 && rc == 0; op++) {
          wv_reduce_job job = {.dtype = f64 ? WAVE_F64 : WAVE_F32,
                               .op = op ? WAVE_FSUM : WAVE_SUM,
                               .input = &sp, .n_input = 1, .rows = rows};
          wv_reduce_out o;
          double t0 = bo_now();
          rc = wv_ocl_reduce(d, &job, &o, &e);
          if (r >= 2)
            t[op][r - 2] = bo_now() - t0;
        }
      if (rc != 0) {
        printf("  %s 2^%u FAILED: %s\n", f64 ? "f64" : "f32", lg, e.message);
        failed = 1;
        continue;
      }
      double ts = bo_median(t[0], n), tf = bo_median(t[1], n);
      printf("  %s 2^%-2u rows   sum %8.1f us   fsum %8.1f us   fsum "
             "latency %5.2f x sum\n", f64 ? "f64" : "f32", lg, ts * 1e6,
             tf * 1e6, tf / ts);
    }
  free(h);
  free(t[0]);
  free(t[1]);
  return failed;
}

static int bo_hash(wv_device_config *cfg, const char *pack_arg,
                   uint64_t nonces, int reps)
{
  wave_error e = {0};
  char path[600];
  if (strchr(pack_arg, '/') != NULL || strstr(pack_arg, ".yaml") != NULL) {
    snprintf(path, sizeof path, "%s", pack_arg);
  } else {
    const char *src = getenv("WAVE_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/config/packs/%s.yaml",
             src != NULL ? src : WAVE_BENCH_SOURCE_DIR, pack_arg);
  }
  wv_pack *p;
  if (wv_pack_load_file(path, &p, &e) != 0)
    return bo_die(path, &e);
  double *t = calloc((size_t)reps, sizeof *t);
  uint64_t *chk = malloc(64 * 8);
  if (t == NULL || chk == NULL)
    return 1;
  static const struct {
    const char *exchange;
    unsigned units;
    const char *label;
  } setups[] = {
    {"auto", 0, "device's choice"}, {"local", 1, "local, 1 unit/group"},
    {"local", 2, "local, 2 units/group"}, {"local", 4, "local, 4 units/group"},
  };
  printf("hash, pack %s (%s), %" PRIu64 " nonces a run, outputs kept on the "
         "device, median of %d, device time\n", p->name,
         p->closed ? "closed form" : "dataset generated on the device",
         nonces, reps);
  int failed = 0;
  for (size_t k = 0; k < sizeof setups / sizeof setups[0]; k++) {
    wv_device_config c = *cfg;
    if (wv_exchange_parse(setups[k].exchange, &c.exchange) != 0)
      return 1;  /* a typo in the table above */
    c.group_units = setups[k].units;
    wv_device *d;
    if (wv_opencl_backend.open(&c, &d, &e) != 0) {
      fprintf(stderr, "wvbench-opencl: open: %s\n", e.message);
      failed = 1;
      continue;
    }
    char detail[200] = "";
    int rc = wv_pack_selfcheck(&wv_opencl_backend, d, p, detail,
                               sizeof detail, &e);
    for (int r = 0; rc == 0 && r < reps; r++)
      rc = wv_ocl_hash_resident(d, p, nonces, &t[r], &e);
    uint64_t n0 = nonces / 3, want;
    if (rc == 0 && (rc = wv_ocl_hash(d, p, n0, 64, chk, &e)) == 0 &&
        (rc = wv_hash_verify(p, n0 + 17, &want, &e)) == 0 && want != chk[17])
      rc = wv_seterr(&e, WAVE_EMISMATCH, "nonce %" PRIu64 " differs from the "
                     "CPU's", n0 + 17);
    if (rc != 0) {
      printf("  exchange %-8s FAILED (%s): %s\n", wv_exchange_name(d->exchange),
             setups[k].label, e.message);
      failed = 1;
    } else {
      double rate = (double)nonces / bo_median(t, reps);
      printf("  exchange %-8s %10.2f Mhash/s  %7.2f G dataset loads/s  "
             "(%s, %u units/group: %s)\n", wv_exchange_name(d->exchange),
             rate * 1e-6,
             rate * p->loads * p->rounds * 1e-9, setups[k].label,
             d->hash_units, d->exchange_reason);
    }
    wv_opencl_backend.close(d);
  }
  free(t);
  free(chk);
  wv_pack_free(p);
  return failed;
}

int main(int argc, char **argv)
{
  wv_device_config cfg = {.name = "ocl", .backend = "opencl",
                          };
  uint64_t rows = 0, nonces = 0;
  int reps = 9, no_hash = 0, wide = 1, narrow = 1, fsum = 1;
  const char *pack = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--index") == 0 && i + 1 < argc)
      cfg.index = atoi(argv[++i]);
    else if (strcmp(argv[i], "--platform") == 0 && i + 1 < argc)
      cfg.platform = atoi(argv[++i]);
    else if (strcmp(argv[i], "--match") == 0 && i + 1 < argc)
      cfg.device_match = argv[++i];
    else if (strcmp(argv[i], "--rows") == 0 && i + 1 < argc)
      rows = strtoull(argv[++i], NULL, 0);
    else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (strcmp(argv[i], "--pack") == 0 && i + 1 < argc)
      pack = argv[++i];
    else if (strcmp(argv[i], "--nonces") == 0 && i + 1 < argc)
      nonces = strtoull(argv[++i], NULL, 0);
    else if (strcmp(argv[i], "--no-hash") == 0)
      no_hash = 1;
    else if (strcmp(argv[i], "--no-wide") == 0)
      wide = 0;
    else if (strcmp(argv[i], "--wide-only") == 0)
      narrow = 0, no_hash = 1, fsum = 0;
    else if (strcmp(argv[i], "--no-fsum") == 0)
      fsum = 0;
    else if (strcmp(argv[i], "--fsum-only") == 0)
      narrow = 0, no_hash = 1, wide = 0;
    else {
      fprintf(stderr, "usage: %s [--platform N] [--index N] [--match TEXT] "
              "[--rows N] [--reps R] [--pack NAME|PATH] [--nonces N] "
              "[--no-hash] [--no-wide] [--wide-only] [--no-fsum] "
              "[--fsum-only]\n", argv[0]);
      return 2;
    }
  }
  if (reps < 1)
    reps = 1;
  wv_device *d;
  wave_error e = {0};
  if (wv_opencl_backend.open(&cfg, &d, &e) != 0)
    return bo_die("open", &e);
  if (rows == 0)
    rows = d->gpu ? 1u << 28 : 1u << 22;
  rows &= ~255ull;
  if (nonces == 0)
    nonces = d->gpu ? 1u << 24 : 1u << 14;
  if (pack == NULL)
    pack = d->gpu ? "main" : "small";
  printf("device: %s\n", d->description);
  printf("paths: reduce %s, float sum %s adds, hash %s (%s)\n",
         d->subgroups ? "sub_group_reduce" : "local-memory tree",
         d->denorm ? "hardware" : "subnormal-exact integer",
         wv_exchange_name(d->exchange),
         d->exchange_reason);
  int rc = narrow ? bo_reduce(d, rows, reps) : 0;
  if (wide) {
    wv_caps caps;
    wv_opencl_backend.caps(d, &caps);
    if (caps.dtypes64 && caps.argminmax)
      rc |= bo_wide(d, rows, reps);
    else
      printf("wide reductions: not run (%s)\n", d->fp64_note);
  }
  if (fsum) {
    wv_caps caps;
    wv_opencl_backend.caps(d, &caps);
    if (caps.dtypes64)
      rc |= bo_fsum(d, rows, reps) | bo_fsum_small(d, reps);
    else
      printf("exact sum: not run (%s)\n", d->fp64_note);
  }
  wv_opencl_backend.close(d);
  if (!no_hash)
    rc |= bo_hash(&cfg, pack, nonces, reps < 5 ? reps : 5);
  return rc;
}
