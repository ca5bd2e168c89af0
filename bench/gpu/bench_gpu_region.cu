/* bench_gpu_region.cu - reductions of a registered shared-memory region on
 * a CUDA device of a running wavedd, against a pinned host->device copy of
 * the same bytes measured in the same run (issue 10).
 *
 *   wvbench-gpu-region URL DEVICE [LOG2_ROWS]      (default 2^28 rows)
 *
 * The baseline: cudaMemcpy from cudaHostAlloc'd memory to the device, best
 * of 5, in this process (then freed, so the daemon has the GPU's memory).
 * Then, through libwaveclient, two ways to meet a region, u32 sum and f32
 * sum each (the client wall times below never include the fill):
 *  - "fill, then register": create a region, fill it, register it; "first"
 *    is registration + the first reduction (which first pins whatever
 *    the daemon has not pinned yet: daemon/bulk/region.h), "next" the second
 *    one right after,
 *    "repeat" the best of 4 more, "settled" the best of 3 after 0.2 s idle
 *    (time for the device to finish pinning).
 *  - "register, then fill": create, register, fill, reduce; the daemon
 *    pins while the client writes, and "first" is the registration + the
 *    reduction after the fill (the fill itself is not timed).
 * Every reduction must give the first one's bits, in both ways, and cpu0's
 * (asked once after the timed ones).  Ratio =
 * the reduction's bytes/s over the copy's.  The same for the exact sum,
 * fsum (float32 and float64, over rows of every finite exponent, the
 * kernel's slowest data), beside the plain float sums of the same run:
 * end to end through the daemon, where the region's copy is the bound.
 *
 * Last, a bits check of the piecewise pinning: a region of 2^26 + 12,345
 * random rows (input chunks at odd offsets, a mask in the same region) is
 * reduced on DEVICE right after registration (partly pinned), and again
 * after it settled, with every op and dtype, and each answer must equal
 * the daemon's cpu0 on the same extents.
 */
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "wave/client.h"

static double grn_s(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double pinned_copy_rate(size_t bytes)
{
  void *h = NULL, *d = NULL;
  if (cudaHostAlloc(&h, bytes, cudaHostAllocDefault) != cudaSuccess ||
      cudaMalloc(&d, bytes) != cudaSuccess) {
    fprintf(stderr, "baseline: cannot allocate %zu bytes\n", bytes);
    exit(1);
  }
  memset(h, 1, bytes);
  double best = 1e30;
  for (int i = 0; i < 6; i++) {
    double t0 = grn_s();
    cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice);
    cudaDeviceSynchronize();
    double t = grn_s() - t0;
    if (i > 0 && t < best)  /* the first warms the clocks */
      best = t;
  }
  cudaFree(d);
  cudaFreeHost(h);
  return (double)bytes / best;
}

/* The same rows for both ways: a u32 pattern; small floats; or, for
 * "full", float bits of every finite exponent, subnormals among them
 * (the exponent's lowest bit cleared: never all ones). */
static void fill(void *base, size_t bytes, wave_dtype dt, int full)
{
  uint64_t x = 0x9e3779b97f4a7c15ull;
  if (dt == WAVE_F64) {
    uint64_t *p = (uint64_t *)base;
    for (size_t i = 0; i < bytes / 8; i++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      double d = (double)(i % 1000) * 0.5;
      if (full)
        p[i] = x & ~(1ull << 52);
      else
        memcpy(&p[i], &d, 8);
    }
    return;
  }
  uint32_t *p = (uint32_t *)base;
  for (size_t i = 0; i < bytes / 4; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    float f = (float)(i % 1000) * 0.5f;
    if (dt == WAVE_F32 && full)
      p[i] = (uint32_t)(x >> 32) & ~(1u << 23);
    else if (dt == WAVE_F32)
      memcpy(&p[i], &f, 4);
    else
      p[i] = (uint32_t)(i * 2654435761u);
  }
}

static int grr_on(wave_client *c, const wave_region_reduce *q0,
                     const char *dev, wave_reduce_result *r)
{
  wave_region_reduce q = *q0;
  q.device = dev;
  wave_error e;
  if (wave_reduce_region(c, &q, r, &e) != 0) {
    fprintf(stderr, "reduce on %s: %s\n", dev, e.message);
    return -1;
  }
  return 0;
}

static int grg_bits(wave_client *c, const char *dev)
{
  const size_t rows = ((size_t)1 << 26) + 12345, n = 2 * rows + 64;
  wave_region *rg;
  wave_error e;
  if (wave_region_create(&rg, n * 4, "bits", &e) != 0 ||
      wave_region_register(c, rg, &e) != 0) {
    fprintf(stderr, "bits region: %s\n", e.message);
    return 1;
  }
  uint32_t *p = (uint32_t *)wave_region_data(rg);
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    p[i] = (uint32_t)(x >> 16);
    if (i % 7 == 0)  /* some floats of every size, some not finite */
      p[i] = (uint32_t)(x >> 32);
  }
  /* input: three chunks at odd row offsets; mask: rows + 16 onwards */
  size_t c1 = 1000003, c2 = rows / 2 + 17, c3 = rows - c1 - c2;
  wave_extent in[3] = {{rg, 4 * 5, c1 * 4},
                       {rg, 4 * (5 + c1), c2 * 4},
                       {rg, 4 * (5 + c1 + c2), c3 * 4}};
  wave_extent mk = {rg, 4 * (rows + 16), rows * 4};
  static const struct { wave_dtype dt; wave_op op; } jobs[] = {
    {WAVE_U32, WAVE_SUM}, {WAVE_S32, WAVE_MAX}, {WAVE_U32, WAVE_XOR},
    {WAVE_F32, WAVE_SUM}, {WAVE_F32, WAVE_EXTENT}, {WAVE_U32, WAVE_MIN},
    {WAVE_F32, WAVE_FSUM}};
  int bad = 0, runs = 0;
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1)
      usleep(300000);  /* settled: all pinned */
    for (size_t j = 0; j < sizeof jobs / sizeof jobs[0]; j++)
      for (int m = 0; m < 2; m++) {
        wave_region_reduce q;
        memset(&q, 0, sizeof q);
        q.dtype = jobs[j].dt;
        q.op = jobs[j].op;
        q.input = in;
        q.n_input = 3;
        q.mask = &mk;
        q.n_mask = 1;
        q.has_mask = m;
        wave_reduce_result a, b;
        if (grr_on(c, &q, dev, &a) != 0 || grr_on(c, &q, "cpu0", &b) != 0)
          return 1;
        runs++;
        if (a.bits[0] != b.bits[0] || a.n_values != b.n_values ||
            (a.n_values > 1 && a.bits[1] != b.bits[1]) || a.count != b.count) {
          fprintf(stderr, "bits: %s %s mask %d pass %d: %s 0x%llx, cpu0 "
                  "0x%llx\n", wave_dtype_name(q.dtype), wave_op_name(q.op), m,
                  pass, dev, (unsigned long long)a.bits[0],
                  (unsigned long long)b.bits[0]);
          bad++;
        }
      }
  }
  printf("bits of a region pinned piece by piece, %s vs cpu0: %d of %d "
         "equal\n", dev, runs - bad, runs);
  wave_region_unregister(c, rg, &e);
  wave_region_close(rg);
  return bad != 0;
}

/* The timed cases, in order: op, dtype and rows (full: every finite
 * exponent). */
typedef struct {
  wave_dtype dt;
  wave_op op;
  int full;
  const char *name;
} grb_case;

static const grb_case ops[] = {
    {WAVE_U32, WAVE_SUM, 0, "u32 sum"},
    {WAVE_F32, WAVE_SUM, 0, "f32 sum"},
    {WAVE_F32, WAVE_SUM, 1, "f32 sum, full range"},
    {WAVE_F32, WAVE_FSUM, 1, "f32 fsum, full range"},
    {WAVE_F64, WAVE_SUM, 1, "f64 sum, full range"},
    {WAVE_F64, WAVE_FSUM, 1, "f64 fsum, full range"}};

/* One case one way (early: register, then fill): nine timed reductions
 * of a fresh region of bytes, checked against the first's bits (*want,
 * set by the first way) and cpu0's, and the table's row.  -1: a call
 * failed; 1: bits differ. */
static int grb_way(wave_client *c, const char *dev, const grb_case *oc,
                   int early, size_t bytes, double copy, uint64_t *want)
{
  wave_error e;
  int rc = 0;
  wave_region *rg;
  if (wave_region_create(&rg, bytes, "bench", &e) != 0) {
    fprintf(stderr, "%s\n", e.message);
    return -1;
  }
  double treg = 0, t0;
  if (early) {
    t0 = grn_s();
    if (wave_region_register(c, rg, &e) != 0) {
      fprintf(stderr, "register: %s\n", e.message);
      return -1;
    }
    treg = grn_s() - t0;
  }
  double tf0 = grn_s();
  fill(wave_region_data(rg), bytes, oc->dt, oc->full);
  double tfill = grn_s() - tf0;
  if (!early) {
    t0 = grn_s();
    if (wave_region_register(c, rg, &e) != 0) {
      fprintf(stderr, "register: %s\n", e.message);
      return -1;
    }
    treg = grn_s() - t0;
  }
  wave_extent x = {rg, 0, bytes};
  wave_region_reduce q;
  memset(&q, 0, sizeof q);
  q.dtype = oc->dt;
  q.op = oc->op;
  q.input = &x;
  q.n_input = 1;
  q.device = dev;
  wave_reduce_result r;
  double t[9];  /* first, next, 4 repeats, 3 settled */
  for (int i = 0; i < 9; i++) {
    if (i == 6)
      usleep(200000);
    t0 = grn_s();
    if (wave_reduce_region(c, &q, &r, &e) != 0) {
      fprintf(stderr, "reduce: %s\n", e.message);
      return -1;
    }
    t[i] = grn_s() - t0;
    if (early == 0 && i == 0)
      *want = r.bits[0];
    if (r.bits[0] != *want) {
      fprintf(stderr, "%s: %s reduction %d gave 0x%llx, the first 0x%llx\n",
              oc->name, early ? "early" : "late", i,
              (unsigned long long)r.bits[0], (unsigned long long)*want);
      rc = 1;
    }
  }
  wave_reduce_result ref;  /* and cpu0's bits for the same region */
  if (grr_on(c, &q, "cpu0", &ref) != 0)
    return -1;
  if (ref.bits[0] != r.bits[0]) {
    fprintf(stderr, "%s: %s gave 0x%llx, cpu0 0x%llx\n", oc->name,
            dev, (unsigned long long)r.bits[0],
            (unsigned long long)ref.bits[0]);
    rc = 1;
  }
  t[0] += treg;  /* registration included, either way */
  double rep = t[2], set = t[6];
  for (int i = 3; i < 6; i++)
    rep = t[i] < rep ? t[i] : rep;
  for (int i = 7; i < 9; i++)
    set = t[i] < set ? t[i] : set;
  printf("| %s | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | "
         "%.2f |\n", oc->name,
         early ? "register, then fill" : "fill, then register",
         t[0] * 1e3, bytes / t[0] / copy, t[1] * 1e3, bytes / t[1] / copy,
         rep * 1e3, bytes / rep / copy, set * 1e3, bytes / set / copy);
  printf("   (%s on %s: register %.2f ms, fill %.0f ms not timed, last "
         "device time %.2f ms)\n", oc->name, r.device, treg * 1e3,
         tfill * 1e3, r.seconds * 1e3);
  wave_region_unregister(c, rg, &e);
  wave_region_close(rg);
  /* the daemon unpins and unmaps it now (a 1 GiB teardown takes tens
   * of ms, its mmap lock held): keep that out of the next one's
   * registration */
  usleep(500000);
  return rc;
}

int main(int argc, char **argv)
{
  if (argc < 3) {
    fprintf(stderr, "usage: %s URL DEVICE [LOG2_ROWS]\n", argv[0]);
    return 2;
  }
  const char *url = argv[1], *dev = argv[2];
  int lg = argc > 3 ? atoi(argv[3]) : 28;
  size_t rows = (size_t)1 << lg, bytes = rows * 4;
  double copy = pinned_copy_rate(bytes);
  printf("pinned host->device copy: %zu bytes at %.2f GB/s\n", bytes,
         copy / 1e9);

  wave_client *c;
  wave_error e;
  if (wave_client_open(&c, url, &e) != 0) {
    fprintf(stderr, "%s\n", e.message);
    return 1;
  }
  wave_client_set_timeout(c, 120000);
  int rc = 0;
  printf("| op | way | first ms | x copy | next ms | x copy | repeat ms | "
         "x copy | settled ms | x copy |\n");
  printf("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  /* WAVE_REGION_OPS=N: only the first N rows of ops (the table's order) */
  const char *only = getenv("WAVE_REGION_OPS");
  int n_ops = (int)(sizeof ops / sizeof ops[0]);
  if (only != NULL && atoi(only) > 0 && atoi(only) < n_ops)
    n_ops = atoi(only);
  for (int k = 0; k < n_ops; k++) {
    uint64_t want = 0;
    for (int early = 0; early < 2; early++) {
      int w = grb_way(c, dev, &ops[k], early, bytes, copy, &want);
      if (w < 0)
        return 1;
      rc |= w;
    }
  }
  rc |= grg_bits(c, dev);
  wave_client_close(c);
  return rc;
}
