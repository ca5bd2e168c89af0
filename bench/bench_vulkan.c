/* bench_vulkan.c - the Vulkan backend's throughput, each figure against a
 * baseline measured in the same run on the same device.
 *
 *  1. Reductions on device-resident data (u32 sum, u32 max, f32 sum,
 *     f32 extent, and an f32 sum whose values are all below 2^-102, which
 *     sends every group through the float sum's exact path) against a plain
 *     Vulkan streaming-read shader over the same buffer (stream.comp: every
 *     16-byte vector read once, same tiling), after 2 s of back-to-back
 *     passes that bring the GPU's clocks up.  Device time from queue
 *     timestamps; a ratio near 1.0 means the reduction runs at the speed of
 *     reading its input.
 *  2. Whole jobs from host memory (what the daemon runs: staging copy plus
 *     device work) against a host memcpy of the same bytes.
 *  3. Hash rate of a pack (main on a GPU, small on a CPU driver) with the
 *     device's exchange path, against the shared-memory path on the same
 *     device (a second device context with exchange: local).  On the
 *     device's own path, hash_batch (hash + device fold into 2^13-nonce
 *     segment fingerprints, winners, best + copy-back) at the same size,
 *     checked against wv_hash_fold of hash()'s outputs, and on a GPU at
 *     2^26, 2^27 and 2^28 nonces, beside hash()'s rate.
 * Every result is checked once against the CPU reference, so a fast wrong
 * kernel cannot print a figure.  Reps alternate baseline and subject; the
 * median is printed.
 *
 *   wvbench-vulkan [--index N] [--rows N] [--reps R] [--pack NAME|PATH]
 *                [--nonces N] [--no-hash]
 *   defaults: GPU 2^28 rows (1 GiB), main pack, 2^24 nonces;
 *             CPU driver (lavapipe) 2^22 rows, small pack, 2^14 nonces.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/base.h"
#include "workers/hash/hash.h"
#include "workers/hash/pack.h"
#include "core/reduce.h"
#include "workers/vulkan/vk.h"

static double bv_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int bv_cmp(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double bv_median(double *v, int n)
{
  qsort(v, (size_t)n, sizeof *v, bv_cmp);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int bv_die(const char *what, const wave_error *e)
{
  fprintf(stderr, "wvbench-vulkan: %s: %s\n", what, e->message);
  return 1;
}

static uint64_t bv_rng = 0x853c49e6748fea9bull;
static uint32_t bv_rand(void)
{
  bv_rng = bv_rng * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(bv_rng >> 32);
}

typedef struct bv_case {
  const char *label;
  wave_dtype dt;
  wave_op op;
  int set;        /* data: 0 random u32, 1 floats, 2 tiny floats */
} bv_case;

static const bv_case bv_cases[] = {
  {"u32 sum", WAVE_U32, WAVE_SUM, 0},
  {"u32 max", WAVE_U32, WAVE_MAX, 0},
  {"f32 sum", WAVE_F32, WAVE_SUM, 1},
  {"f32 extent", WAVE_F32, WAVE_EXTENT, 1},
  /* Every |x| < 2^-102: every group takes the float sum's exact path
   * (sum.comp), the cost of that path where it is all there is. */
  {"f32 sum, tiny values", WAVE_F32, WAVE_SUM, 2},
};
#define BV_NSETS 3
#define BV_NCASES (sizeof bv_cases / sizeof bv_cases[0])

/* Section 1: device-resident reductions against the streaming read. */
static int bv_resident(wv_device *d, uint32_t *const *sets, uint64_t rows,
                       int reps)
{
  wave_error e = {0};
  wv_vk_buf buf[BV_NSETS];
  const VkDeviceSize bytes = rows * 4;
  for (int k = 0; k < BV_NSETS; k++)
    if (wv_vk_buf_create(d, bytes + 16, 0, &buf[k], &e) != 0 ||
        wv_vk_upload(d, &buf[k], 0, sets[k], bytes, &e) != 0)
      return bv_die("upload", &e);

  /* Correctness first, once per case; a failed case is reported and
   * left out of the timing. */
  int ok[BV_NCASES], failed = 0;
  for (size_t c = 0; c < BV_NCASES; c++) {
    const bv_case *bc = &bv_cases[c];
    wv_span in = {sets[bc->set], rows};
    wv_reduce_job job = {.dtype = bc->dt, .op = bc->op, .input = &in,
                         .n_input = 1, .rows = rows};
    wv_reduce_out want, got;
    double s;
    ok[c] = wv_reduce_reference(&job, &want, &e) == 0 &&
            wv_vk_reduce_resident(d, &buf[bc->set], rows, bc->dt,
                                  bc->op, &got, &s, &e) == 0;
    if (!ok[c])
      fprintf(stderr, "wvbench-vulkan: %s: %s\n", bc->label, e.message);
    else if (got.bits[0] != want.bits[0] || got.bits[1] != want.bits[1]) {
      fprintf(stderr, "wvbench-vulkan: %s: %08x %08x, reference %08x %08x\n",
              bc->label, (unsigned)got.bits[0], (unsigned)got.bits[1],
              (unsigned)want.bits[0], (unsigned)want.bits[1]);
      ok[c] = 0;
    }
    failed |= !ok[c];
  }

  double *base = calloc((size_t)reps, sizeof *base);
  double *t = calloc((size_t)reps * BV_NCASES, sizeof *t);
  if (base == NULL || t == NULL)
    return 1;
  double s;
  wv_reduce_out o;
  /* Warm-up: pipelines, caches, clocks.  A GPU left idle for seconds (the
   * CPU reference above) comes back at low clocks, and single passes with a
   * host wait between them do not raise them again: on the H200 every pass
   * ran 2.3x slower until the GPU had been kept busy for a while.  So the
   * passes run back to back for 2 s first (0.2 s on a CPU driver). */
  const double warm = d->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU
                        ? 0.2 : 2.0;
  double first = 0, t0 = bv_now();
  int passes = 0;
  do {
    if (wv_vk_stream_resident(d, &buf[0], rows, &s, &e) != 0)
      return bv_die("stream", &e);
    if (passes++ == 0)
      first = s;
  } while (bv_now() - t0 < warm);
  for (int r = 0; r < reps; r++) {
    if (wv_vk_stream_resident(d, &buf[0], rows, &base[r], &e) != 0)
      return bv_die("stream", &e);
    for (size_t c = 0; c < BV_NCASES; c++) {
      const bv_case *bc = &bv_cases[c];
      if (ok[c] &&
          wv_vk_reduce_resident(d, &buf[bc->set], rows, bc->dt, bc->op,
                                &o, &t[c * (size_t)reps + (size_t)r], &e) != 0)
        return bv_die(bc->label, &e);
    }
  }
  double b = bv_median(base, reps);
  printf("reduce, device-resident: %" PRIu64 " rows (%.0f MiB), median of %d, "
         "%s\n", rows, (double)bytes / (1 << 20), reps,
         d->qpool != VK_NULL_HANDLE ? "queue timestamps" : "host clock");
  printf("  warm-up: %d streaming passes, first %.1f us, last %.1f us\n",
         passes, first * 1e6, s * 1e6);
  printf("  %-22s %10.1f us  %8.1f GB/s  %6s\n", "stream read (baseline)",
         b * 1e6, (double)bytes / b * 1e-9, "1.00");
  for (size_t c = 0; c < BV_NCASES; c++) {
    if (!ok[c]) {
      printf("  %-22s FAILED\n", bv_cases[c].label);
      continue;
    }
    double m = bv_median(&t[c * (size_t)reps], reps);
    printf("  %-22s %10.1f us  %8.1f GB/s  %6.2f x stream\n",
           bv_cases[c].label, m * 1e6, (double)bytes / m * 1e-9, b / m);
  }
  free(base);
  free(t);
  for (int k = 0; k < BV_NSETS; k++)
    wv_vk_buf_destroy(d, &buf[k]);
  return failed;
}

/* Section 2: jobs from host memory against memcpy of the same bytes. */
static int bv_host(wv_device *d, uint32_t *const *sets, uint64_t rows,
                   int reps)
{
  wave_error e = {0};
  const size_t bytes = (size_t)rows * 4;
  uint32_t *dst = malloc(bytes);
  double *base = calloc((size_t)reps, sizeof *base);
  double *t = calloc((size_t)reps * BV_NCASES, sizeof *t);
  if (dst == NULL || base == NULL || t == NULL)
    return 1;
  memcpy(dst, sets[0], bytes);   /* fault the pages in */
  for (int r = 0; r < reps; r++) {
    double t0 = bv_now();
    memcpy(dst, sets[r & 1], bytes);
    base[r] = bv_now() - t0;
    for (size_t c = 0; c < BV_NCASES; c++) {
      const bv_case *bc = &bv_cases[c];
      if (bc->set == 2)
        continue;   /* the exact path is a device matter */
      wv_span in = {sets[bc->set], rows};
      wv_reduce_job job = {.dtype = bc->dt, .op = bc->op, .input = &in,
                           .n_input = 1, .rows = rows};
      wv_reduce_out o;
      t0 = bv_now();
      if (wv_vk_reduce(d, &job, &o, &e) != 0) {
        fprintf(stderr, "wvbench-vulkan: host %s: %s\n", bc->label, e.message);
        t[c * (size_t)reps + (size_t)r] = 1e30;   /* shows as ~0 GB/s */
        continue;
      }
      t[c * (size_t)reps + (size_t)r] = bv_now() - t0;
    }
  }
  double b = bv_median(base, reps);
  printf("reduce jobs from host memory (staging windows of %u rows), "
         "host clock\n", d->window_rows);
  printf("  %-22s %10.1f us  %8.1f GB/s  %6s\n", "memcpy (baseline)",
         b * 1e6, (double)bytes / b * 1e-9, "1.00");
  for (size_t c = 0; c < BV_NCASES; c++) {
    if (bv_cases[c].set == 2)
      continue;
    double m = bv_median(&t[c * (size_t)reps], reps);
    printf("  %-22s %10.1f us  %8.1f GB/s  %6.2f x memcpy\n",
           bv_cases[c].label, m * 1e6, (double)bytes / m * 1e-9, b / m);
  }
  free(dst);
  free(base);
  free(t);
  return 0;
}

/* hash_batch at s = 13: at [nonce, +nonces) checked against the host fold
 * of out (hash()'s outputs there), then timed at that size and, on a GPU,
 * at 2^26..2^28 nonces. */
static int bv_batches(wv_device *d, const wv_pack *p, uint64_t nonce,
                      uint64_t nonces, const uint64_t *out, int reps,
                      wave_error *e)
{
  const int gpu = d->props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU;
  const uint64_t most = gpu ? 1ull << 28 : nonces;
  const size_t slots = 4096;
  uint64_t *seg = malloc((most >> 13) * 8 + 16), *segw = malloc((nonces >> 13) * 8 + 16);
  wv_hash_winner *win = calloc(slots, sizeof *win), *ww = calloc(slots, sizeof *ww);
  double *t = calloc((size_t)reps, sizeof *t);
  int rc = 0;
  if (seg == NULL || segw == NULL || win == NULL || ww == NULL || t == NULL) {
    rc = wv_seterr(e, WAVE_ENOMEM, NULL);
    goto out;
  }
  wv_hash_batch w = {.nonce = nonce, .count = nonces, .seg_log2 = 13,
                     .target = 1ull << 52, .max_winners = slots,
                     .seg_fp = segw, .winners = ww};
  wv_hash_batch b = w;
  b.seg_fp = seg;
  b.winners = win;
  wv_hash_fold(&w, out);
  if ((rc = wv_vk_hash_batch_run(d, p, &b, e)) != 0)
    goto out;
  uint64_t nseg = wv_seg_count(nonce, nonces, 13);
  if (memcmp(seg, segw, nseg * 8) != 0 || b.winner_count != w.winner_count ||
      b.n_winners != w.n_winners ||
      memcmp(win, ww, w.n_winners * sizeof *ww) != 0 ||
      b.best_nonce != w.best_nonce || b.best_output != w.best_output) {
    rc = wv_seterr(e, WAVE_EMISMATCH, "hash_batch differs from the host fold");
    goto out;
  }
  printf("  hash_batch s=13: %" PRIu64 " segments, %" PRIu64 " winners, "
         "best %016" PRIx64 ": same as the host fold of hash()\n", nseg,
         b.winner_count, b.best_output);
  for (uint64_t n = nonces; n <= most; n = n == nonces && gpu ? 1ull << 26 : n * 2) {
    for (int r = 0; r < reps && rc == 0; r++) {
      b.nonce = (uint64_t)r << 40;
      b.count = n;
      double t0 = bv_now();
      rc = wv_vk_hash_batch_run(d, p, &b, e);
      t[r] = bv_now() - t0;
    }
    if (rc != 0)
      goto out;
    printf("  hash_batch s=13 %12" PRIu64 " nonces %10.2f Mhash/s\n", n,
           (double)n / bv_median(t, reps) * 1e-6);
    if (n == most)
      break;
  }
out:
  free(seg);
  free(segw);
  free(win);
  free(ww);
  free(t);
  return rc;
}

/* Section 3: hash rate of each exchange set-up the device has: its own
 * choice, the same without maximal reconvergence (where it has that), and
 * shared memory.  A set-up that fails is reported and the others run. */
static int bv_hash(const wv_device_config *cfg, const char *pack_arg,
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
    return bv_die(path, &e);
  uint64_t *out = malloc(nonces * 8);
  double *t = calloc((size_t)reps, sizeof *t);
  if (out == NULL || t == NULL)
    return 1;
  static const struct {
    const char *exchange;
    int no_mr;
    const char *label;
  } setups[3] = {
    {"auto", 0, "device's choice"},
    {"auto", 1, "without maximal reconvergence"},
    {"local", 0, "forced local"},
  };
  double rate[3] = {0, 0, 0};
  int failed = 0, have_mr = 0;
  printf("hash, pack %s (%s), %" PRIu64 " nonces a run, median of %d, "
         "host clock\n", p->name,
         p->closed ? "closed form" : "dataset generated on the device",
         nonces, reps);
  for (int k = 0; k < 3; k++) {
    if (k == 1 && !have_mr)
      continue;
    wv_device_config c = *cfg;
    if (wv_exchange_parse(setups[k].exchange, &c.exchange) != 0)
      return 1;  /* a typo in the table above */
    wv_vk_options opt = {.no_maxreconv = setups[k].no_mr};
    wv_device *d;
    if (wv_vk_open_ex(&c, &opt, &d, &e) != 0) {
      fprintf(stderr, "wvbench-vulkan: open: %s\n", e.message);
      failed = 1;
      continue;
    }
    if (k == 0)
      have_mr = d->maxreconv && d->hash_shuffle;
    char detail[200];
    double t0 = bv_now();
    int rc = wv_pack_selfcheck(&wv_vulkan_backend, d, p, detail,
                               sizeof detail, &e);
    double prep = bv_now() - t0;
    for (int r = 0; rc == 0 && r < reps; r++) {
      t0 = bv_now();
      rc = wv_vk_hash(d, p, (uint64_t)r << 40, nonces, out, &e);
      t[r] = bv_now() - t0;
    }
    /* One spot check against the CPU's light evaluation. */
    uint64_t want, n = ((uint64_t)(reps - 1) << 40) + nonces / 3;
    if (rc == 0 && (rc = wv_hash_verify(p, n, &want, &e)) == 0 &&
        want != out[nonces / 3])
      rc = wv_seterr(&e, WAVE_EMISMATCH, "nonce %" PRIu64 " differs from "
                     "the CPU's", n);
    if (rc == 0 && k == 0)
      rc = bv_batches(d, p, (uint64_t)(reps - 1) << 40, nonces, out, reps,
                      &e);
    if (rc != 0) {
      printf("  exchange %-8s FAILED (%s): %s\n", wv_exchange_name(d->exchange),
             setups[k].label, e.message);
      failed = 1;
    } else {
      rate[k] = (double)nonces / bv_median(t, reps);
      printf("  exchange %-8s %10.2f Mhash/s  %7.2f G dataset loads/s  "
             "self-check+prepare %.2f s  (%s: %s)\n",
             wv_exchange_name(d->exchange),
             rate[k] * 1e-6, rate[k] * p->loads * p->rounds * 1e-9, prep,
             setups[k].label, d->exchange_reason);
    }
    wv_vulkan_backend.close(d);
  }
  if (rate[0] > 0 && rate[2] > 0)
    printf("  device's choice / local: %.2f\n", rate[0] / rate[2]);
  if (rate[0] > 0 && rate[1] > 0)
    printf("  with / without maximal reconvergence: %.2f\n",
           rate[0] / rate[1]);
  free(out);
  free(t);
  wv_pack_free(p);
  return failed;
}

int main(int argc, char **argv)
{
  wv_device_config cfg = {.name = "vk", .backend = "vulkan", .index = 0,
                          };
  uint64_t rows = 0, nonces = 0;
  int reps = 9, no_hash = 0;
  const char *pack = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--index") == 0 && i + 1 < argc)
      cfg.index = atoi(argv[++i]);
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
    else {
      fprintf(stderr, "usage: %s [--index N] [--rows N] [--reps R] "
              "[--pack NAME|PATH] [--nonces N] [--no-hash]\n", argv[0]);
      return 2;
    }
  }
  if (reps < 1)
    reps = 1;
  wv_device *d;
  wave_error e = {0};
  if (wv_vulkan_backend.open(&cfg, &d, &e) != 0)
    return bv_die("open", &e);
  int cpu = d->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
  if (rows == 0)
    rows = cpu ? 1u << 22 : 1u << 28;
  if (nonces == 0)
    nonces = cpu ? 1u << 14 : 1u << 24;
  if (pack == NULL)
    pack = cpu ? "small" : "main";
  printf("device: %s\n", d->description);
  printf("paths: reduce %s, float sum %s, hash %s\n",
         d->red_sg ? "sub-group arithmetic" : "shared-memory tree",
         d->sum_shuffle ? "shuffle" : "shared memory",
         wv_exchange_name(d->exchange));

  uint32_t *sets[BV_NSETS];
  for (int k = 0; k < BV_NSETS; k++)
    if ((sets[k] = malloc(rows * 4)) == NULL)
      return 1;
  for (uint64_t i = 0; i < rows; i++) {
    sets[0][i] = bv_rand();
    int32_t x = (int32_t)bv_rand();
    float f = (float)x * 0x1p-20f, tiny = (float)x * 0x1p-140f;
    memcpy(&sets[1][i], &f, 4);
    memcpy(&sets[2][i], &tiny, 4);
  }
  /* Sections are independent: one that fails does not hide the others. */
  int rc = bv_resident(d, sets, rows, reps);
  rc |= bv_host(d, sets, rows, reps < 5 ? reps : 5);
  wv_vulkan_backend.close(d);
  for (int k = 0; k < BV_NSETS; k++)
    free(sets[k]);
  if (!no_hash)
    rc |= bv_hash(&cfg, pack, nonces, reps < 5 ? reps : 5);
  return rc;
}
