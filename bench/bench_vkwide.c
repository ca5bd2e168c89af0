/* bench_vkwide.c - the Vulkan backend's 64-bit dtypes and argmin/argmax
 * (issue 23), each figure against baselines measured in the same run on
 * the same device.
 *
 *  1. Device-resident reductions of the sizes, all 1 GiB by
 *     default: uint64 and float64 sum at 2^27 rows, float32 argmax at 2^28,
 *     and beside them sint64 min, float64 extent, uint64 argmin, float64
 *     argmax, and the uint32 sum at 2^28 (the 32-bit path this backend
 *     already had, for scale).  Baseline: the plain streaming-read shader
 *     over the same bytes (stream.comp), after 2 s of back-to-back passes
 *     that raise the GPU's clocks; device time from queue timestamps.  The
 *     "x stream" column is the fraction of the read speed each job gets;
 *     the CUDA backend's own bench prints the same jobs against its own
 *     read, so the two columns compare the backends (target: Vulkan >=
 *     0.85 x CUDA).
 *     The exact sum fsum (issue 39, vk_xsum.c) over float32 and float64
 *     on three kinds of data each: narrow range (the sets the plain sums
 *     read), the full range (every exponent) and heavy cancellation (each
 *     row's negation elsewhere); its "x sum" column is its time against the
 *     plain float sum of the same dtype (narrow data) in the same run.
 *  2. The same jobs from host memory (staging copy plus device work,
 *     what the daemon runs) against a host memcpy of the same bytes.
 * Every result is checked once against the CPU reference (value, count,
 * index), so a fast wrong kernel prints FAILED, not a figure.  Reps
 * alternate baseline and subject; medians are printed.
 *
 *   wvbench-vkwide [--index N] [--bytes N] [--reps R] [--no-host]
 *   defaults: GPU 1 GiB, CPU driver (lavapipe) 16 MiB; 9 reps.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/base.h"
#include "core/reduce.h"
#include "workers/vulkan/vk.h"

static double bw_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int bw_cmp(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double bw_median(double *v, int n)
{
  qsort(v, (size_t)n, sizeof *v, bw_cmp);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int bw_die(const char *what, const wave_error *e)
{
  fprintf(stderr, "wvbench-vkwide: %s: %s\n", what, e->message);
  return 1;
}

static uint64_t bw_rng = 0x853c49e6748fea9bull;
static uint64_t bw_rand(void)
{
  bw_rng = bw_rng * 6364136223846793005ull + 1442695040888963407ull;
  return bw_rng ^ (bw_rng >> 29);
}

typedef struct bw_case {
  const char *label;
  wave_dtype dt;
  wave_op op;
  int set;        /* data: 0 random bits, 1 float64 values, 2 float32, 3
                     float32 full range, 4 float64 full range, 5 float32
                     cancelling, 6 float64 cancelling (bw_fill) */
  int base;       /* fsum: the case of the plain sum it is set against */
} bw_case;

static const bw_case bw_cases[] = {
  {"u64 sum", WAVE_U64, WAVE_SUM, 0, -1},
  {"f64 sum", WAVE_F64, WAVE_SUM, 1, -1},
  {"f32 argmax", WAVE_F32, WAVE_ARGMAX, 2, -1},
  {"s64 min", WAVE_S64, WAVE_MIN, 0, -1},
  {"f64 extent", WAVE_F64, WAVE_EXTENT, 1, -1},
  {"u64 argmin", WAVE_U64, WAVE_ARGMIN, 0, -1},
  {"f64 argmax", WAVE_F64, WAVE_ARGMAX, 1, -1},
  {"u32 sum (32-bit path)", WAVE_U32, WAVE_SUM, 0, -1},
  {"f32 sum", WAVE_F32, WAVE_SUM, 2, -1},
  {"f32 fsum narrow", WAVE_F32, WAVE_FSUM, 2, 8},
  {"f32 fsum full range", WAVE_F32, WAVE_FSUM, 3, 8},
  {"f32 fsum cancelling", WAVE_F32, WAVE_FSUM, 5, 8},
  {"f64 fsum narrow", WAVE_F64, WAVE_FSUM, 1, 1},
  {"f64 fsum full range", WAVE_F64, WAVE_FSUM, 4, 1},
  {"f64 fsum cancelling", WAVE_F64, WAVE_FSUM, 6, 1},
};
#define BW_NSETS 7
#define BW_NCASES (sizeof bw_cases / sizeof bw_cases[0])

static uint64_t bw_rows(const bw_case *c, uint64_t bytes)
{
  return bytes / wv_dtype_size(c->dt);
}

static int bw_same(const wv_reduce_out *a, const wv_reduce_out *b)
{
  return a->bits[0] == b->bits[0] && a->bits[1] == b->bits[1] &&
         a->count == b->count && a->index == b->index;
}

/* Once per case: the device's answer against the reference. */
static int bw_verify(wv_device *d, const wv_vk_buf *buf, void *const *sets,
                     uint64_t bytes, int *ok)
{
  int failed = 0;
  for (size_t c = 0; c < BW_NCASES; c++) {
    const bw_case *bc = &bw_cases[c];
    wave_error e = {0};
    const uint64_t rows = bw_rows(bc, bytes);
    wv_span in = {sets[bc->set], rows};
    wv_reduce_job job = {.dtype = bc->dt, .op = bc->op, .input = &in,
                         .n_input = 1, .rows = rows};
    wv_reduce_out want, got, host;
    double s;
    ok[c] = wv_reduce_reference(&job, &want, &e) == 0 &&
            wv_vk_reduce_resident(d, &buf[bc->set], rows, bc->dt, bc->op,
                                  &got, &s, &e) == 0 &&
            wv_vk_reduce(d, &job, &host, &e) == 0;
    if (!ok[c])
      fprintf(stderr, "wvbench-vkwide: %s: %s\n", bc->label, e.message);
    else if (!bw_same(&got, &want) || !bw_same(&host, &want)) {
      fprintf(stderr, "wvbench-vkwide: %s: resident %016" PRIx64 " #%" PRId64
              ", from host %016" PRIx64 " #%" PRId64 ", reference %016"
              PRIx64 " #%" PRId64 "\n", bc->label, got.bits[0], got.index,
              host.bits[0], host.index, want.bits[0], want.index);
      ok[c] = 0;
    }
    failed |= !ok[c];
  }
  return failed;
}

/* Section 1: device-resident jobs against the streaming read. */
static int bw_resident(wv_device *d, const wv_vk_buf *buf, uint64_t bytes,
                       const int *ok, int reps)
{
  wave_error e = {0};
  double *base = calloc((size_t)reps, sizeof *base);
  double *t = calloc((size_t)reps * BW_NCASES, sizeof *t);
  if (base == NULL || t == NULL)
    return 1;
  const double warm = d->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU
                        ? 0.2 : 2.0;
  double s, t0 = bw_now();
  wv_reduce_out o;
  do {
    if (wv_vk_stream_resident(d, &buf[0], bytes / 4, &s, &e) != 0)
      return bw_die("stream", &e);
  } while (bw_now() - t0 < warm);
  for (int r = 0; r < reps; r++) {
    if (wv_vk_stream_resident(d, &buf[0], bytes / 4, &base[r], &e) != 0)
      return bw_die("stream", &e);
    for (size_t c = 0; c < BW_NCASES; c++) {
      const bw_case *bc = &bw_cases[c];
      if (ok[c] &&
          wv_vk_reduce_resident(d, &buf[bc->set], bw_rows(bc, bytes), bc->dt,
                                bc->op, &o, &t[c * (size_t)reps + (size_t)r],
                                &e) != 0)
        return bw_die(bc->label, &e);
    }
  }
  double b = bw_median(base, reps);
  printf("wide reduce, device-resident: %.0f MiB each, median of %d, %s\n",
         (double)bytes / (1 << 20), reps,
         d->qpool != VK_NULL_HANDLE ? "queue timestamps" : "host clock");
  printf("  %-24s %-11s %10.1f us  %8.1f GB/s  %6s\n",
         "stream read (baseline)", "", b * 1e6, (double)bytes / b * 1e-9,
         "1.00");
  for (size_t c = 0; c < BW_NCASES; c++) {
    char rows[24];
    snprintf(rows, sizeof rows, "2^%d rows",
             63 - __builtin_clzll(bw_rows(&bw_cases[c], bytes)));
    if (!ok[c]) {
      printf("  %-24s %-11s FAILED\n", bw_cases[c].label, rows);
      continue;
    }
    double m = bw_median(&t[c * (size_t)reps], reps);
    printf("  %-24s %-11s %10.1f us  %8.1f GB/s  %6.2f x stream",
           bw_cases[c].label, rows, m * 1e6, (double)bytes / m * 1e-9, b / m);
    const int k = bw_cases[c].base;
    if (k >= 0 && ok[k])
      printf("  %5.2f x sum", bw_median(&t[(size_t)k * (size_t)reps], reps) / m);
    printf("\n");
  }
  free(base);
  free(t);
  return 0;
}

/* Section 2: the same jobs from host memory against memcpy. */
static int bw_host(wv_device *d, void *const *sets, uint64_t bytes,
                   const int *ok, int reps)
{
  wave_error e = {0};
  unsigned char *dst = malloc(bytes);
  double *base = calloc((size_t)reps, sizeof *base);
  double *t = calloc((size_t)reps * BW_NCASES, sizeof *t);
  if (dst == NULL || base == NULL || t == NULL)
    return 1;
  memcpy(dst, sets[0], bytes);   /* fault the pages in */
  for (int r = 0; r < reps; r++) {
    double t0 = bw_now();
    memcpy(dst, sets[r & 1], bytes);
    base[r] = bw_now() - t0;
    for (size_t c = 0; c < BW_NCASES; c++) {
      const bw_case *bc = &bw_cases[c];
      wv_span in = {sets[bc->set], bw_rows(bc, bytes)};
      wv_reduce_job job = {.dtype = bc->dt, .op = bc->op, .input = &in,
                           .n_input = 1, .rows = in.rows};
      wv_reduce_out o;
      t0 = bw_now();
      if (!ok[c] || wv_vk_reduce(d, &job, &o, &e) != 0) {
        t[c * (size_t)reps + (size_t)r] = 1e30;   /* shows as ~0 GB/s */
        continue;
      }
      t[c * (size_t)reps + (size_t)r] = bw_now() - t0;
    }
  }
  double b = bw_median(base, reps);
  printf("wide reduce jobs from host memory, host clock\n");
  printf("  %-24s %10.1f us  %8.1f GB/s  %6s\n", "memcpy (baseline)",
         b * 1e6, (double)bytes / b * 1e-9, "1.00");
  for (size_t c = 0; c < BW_NCASES; c++) {
    double m = bw_median(&t[c * (size_t)reps], reps);
    printf("  %-24s %10.1f us  %8.1f GB/s  %6.2f x memcpy",
           bw_cases[c].label, m * 1e6, (double)bytes / m * 1e-9, b / m);
    const int k = bw_cases[c].base;
    if (k >= 0)
      printf("  %5.2f x sum", bw_median(&t[(size_t)k * (size_t)reps], reps) / m);
    printf("\n");
  }
  free(dst);
  free(base);
  free(t);
  return 0;
}

/* A finite float32 (float64) of any exponent and sign, as bits. */
static uint32_t bw_any32(void)
{
  uint32_t x = (uint32_t)bw_rand();
  return ((x >> 23) & 0xffu) == 0xffu ? x ^ 0x00800000u : x;
}

static uint64_t bw_any64(void)
{
  uint64_t x = bw_rand();
  return ((x >> 52) & 0x7ffu) == 0x7ffu ? x ^ 0x0010000000000000u : x;
}

/* The data sets (bw_case.set): random bits, float64 values, float32
 * values, then for fsum the full range of float32 and float64, and the
 * same cancelling: row i of the second half is row (i * 7) mod half of
 * the first, negated. */
static void bw_fill(void *const *sets, uint64_t bytes)
{
  uint64_t *u = sets[0];
  double *f = sets[1];
  float *g = sets[2];
  uint32_t *a32 = sets[3], *c32 = sets[5];
  uint64_t *a64 = sets[4], *c64 = sets[6];
  for (uint64_t i = 0; i < bytes / 8; i++) {
    u[i] = bw_rand();
    f[i] = (double)(int64_t)bw_rand() * 0x1p-40;
    g[2 * i] = (float)(int32_t)bw_rand() * 0x1p-20f;
    g[2 * i + 1] = (float)(int32_t)bw_rand() * 0x1p-20f;
    a32[2 * i] = bw_any32();
    a32[2 * i + 1] = bw_any32();
    a64[i] = bw_any64();
  }
  const uint64_t h32 = bytes / 8, h64 = bytes / 16;
  for (uint64_t i = 0; i < h32; i++)
    c32[i] = bw_any32();
  for (uint64_t i = 0; i < h32; i++)
    c32[h32 + i] = c32[i * 7 % h32] ^ 0x80000000u;
  for (uint64_t i = 0; i < h64; i++)
    c64[i] = bw_any64();
  for (uint64_t i = 0; i < h64; i++)
    c64[h64 + i] = c64[i * 7 % h64] ^ 0x8000000000000000u;
}

int main(int argc, char **argv)
{
  wv_device_config cfg = {.name = "vk", .backend = "vulkan", .index = 0};
  uint64_t bytes = 0;
  int reps = 9, no_host = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--index") == 0 && i + 1 < argc)
      cfg.index = atoi(argv[++i]);
    else if (strcmp(argv[i], "--bytes") == 0 && i + 1 < argc)
      bytes = strtoull(argv[++i], NULL, 0);
    else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (strcmp(argv[i], "--no-host") == 0)
      no_host = 1;
    else {
      fprintf(stderr, "usage: %s [--index N] [--bytes N] [--reps R] "
              "[--no-host]\n", argv[0]);
      return 2;
    }
  }
  if (reps < 1)
    reps = 1;
  wv_device *d;
  wave_error e = {0};
  if (wv_vulkan_backend.open(&cfg, &d, &e) != 0)
    return bw_die("open", &e);
  int cpu = d->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
  if (bytes == 0)
    bytes = cpu ? 1u << 24 : 1u << 30;
  bytes = bytes / 4096 * 4096;
  if (bytes == 0)
    bytes = 4096;
  printf("device: %s\n", d->description);
  printf("paths: 64-bit sub-group ops %s, float64 sum %s%s\n",
         d->sg64 ? "yes" : "no (shared memory)",
         d->sum64_shuffle ? "shuffle" : "shared memory",
         d->denorm64 ? ", DenormPreserve" : "");
  if (!d->wide_ok || !d->argm_ok) {
    fprintf(stderr, "wvbench-vkwide: refused: %s\n", d->wide_why);
    wv_vulkan_backend.close(d);
    return 1;
  }

  void *sets[BW_NSETS];
  wv_vk_buf buf[BW_NSETS];
  for (int k = 0; k < BW_NSETS; k++)
    if ((sets[k] = malloc(bytes)) == NULL)
      return 1;
  bw_fill(sets, bytes);
  for (int k = 0; k < BW_NSETS; k++)
    if (wv_vk_buf_create(d, bytes + 16, 0, &buf[k], &e) != 0 ||
        wv_vk_upload(d, &buf[k], 0, sets[k], bytes, &e) != 0)
      return bw_die("upload", &e);
  int ok[BW_NCASES];
  int rc = bw_verify(d, buf, sets, bytes, ok);
  rc |= bw_resident(d, buf, bytes, ok, reps);
  if (!no_host)
    rc |= bw_host(d, sets, bytes, ok, reps < 5 ? reps : 5);
  for (int k = 0; k < BW_NSETS; k++) {
    wv_vk_buf_destroy(d, &buf[k]);
    free(sets[k]);
  }
  wv_vulkan_backend.close(d);
  return rc;
}
