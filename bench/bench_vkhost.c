/* bench_vkhost.c - reductions of a shared-memory region on a Vulkan
 * device: imported in place (VK_EXT_external_memory_host, vk_pin.c) against
 * the copy path through the staging windows, in the same run.
 *
 * The region is what the daemon has: a memfd, filled, mapped PROT_READ and
 * MAP_SHARED (daemon/bulk/region.c).  Two device contexts on the same physical
 * device: one that imported the mapping (wv_vk_host_register, timed) and
 * one that cannot import (wv_vk_options.no_host_import), i.e. the path
 * every region job took before.  Each rep runs the same whole job (what
 * the daemon's device thread runs: wv_vk_reduce over the mapping, host
 * clock; each job the whole region) on one then the other; the median of
 * each is printed, and the ratio copy / in place.  Every result is checked against the CPU
 * reference once, and both paths' bits against each other every rep.
 * A u32 sum over a span starting 4 bytes into the region shows the
 * unaligned head (staged) costing nothing.
 *
 * Where the driver refuses to import the read-only mapping (the doubtful
 * case on GPU drivers), it says so and tries a read-write mapping of the
 * same memfd, so one run tells whether the refusal is about the
 * protection; the in-place figures are then labelled "(rw mapping)".
 *
 *   wvbench-vkhost [--index N] [--mib N] [--reps R]
 *   defaults: GPU 1024 MiB, CPU driver (lavapipe) 256 MiB; 5 reps.
 * One line per figure:
 *   region: ... / import: ... / <case>: copy X ms (G GB/s), in place Y ms
 *   (H GB/s), copy/in-place R
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "core/base.h"
#include "core/reduce.h"
#include "workers/vulkan/vk.h"

static double bvh_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int bvh_cmp(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double bvh_median(double *v, int n)
{
  qsort(v, (size_t)n, sizeof *v, bvh_cmp);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static uint64_t bvh_rng = 0x853c49e6748fea9bull;
static uint32_t bvh_rand(void)
{
  bvh_rng = bvh_rng * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(bvh_rng >> 32);
}

/* A memfd of bytes, random floats of ordinary size (the float sum's fast
 * path; the u32 cases read the same bits). */
static int bvh_memfd(size_t bytes)
{
  int fd = memfd_create("wvbench-vkhost", MFD_CLOEXEC);
  if (fd < 0) {
    perror("wvbench-vkhost: memfd_create");
    return -1;
  }
  enum { CH = 1 << 22 };
  uint32_t *buf = malloc(CH * 4);
  if (buf == NULL)
    return -1;
  for (size_t at = 0; at < bytes; at += CH * 4) {
    size_t n = bytes - at < CH * 4 ? (bytes - at) / 4 : CH;
    for (size_t i = 0; i < n; i++) {
      float f = (float)(int32_t)bvh_rand() * 0x1p-20f;
      memcpy(&buf[i], &f, 4);
    }
    if (write(fd, buf, n * 4) != (ssize_t)(n * 4)) {
      perror("wvbench-vkhost: write");
      free(buf);
      return -1;
    }
  }
  free(buf);
  return fd;
}

typedef struct bvh_case {
  const char *label;
  wave_dtype dt;
  wave_op op;
  uint64_t skew;     /* rows past the region's start */
} bvh_case;

static const bvh_case bvh_cases[] = {
  {"u32 sum", WAVE_U32, WAVE_SUM, 0},
  {"u32 max", WAVE_U32, WAVE_MAX, 0},
  {"f32 sum", WAVE_F32, WAVE_SUM, 0},
  {"f32 extent", WAVE_F32, WAVE_EXTENT, 0},
  {"u32 sum, +4 bytes", WAVE_U32, WAVE_SUM, 1},
};
#define BH_NCASES (sizeof bvh_cases / sizeof bvh_cases[0])

static int bvh_open(int index, int no_import, wv_device **d)
{
  wv_device_config cfg = {.name = "vk", .backend = "vulkan", .index = index,
                          };
  wv_vk_options opt = {.no_host_import = no_import};
  wave_error e = {0};
  if (wv_vk_open_ex(&cfg, &opt, d, &e) != 0) {
    fprintf(stderr, "wvbench-vkhost: open: %s\n", e.message);
    return 1;
  }
  return 0;
}

static int bvh_same(const wv_reduce_out *a, const wv_reduce_out *b)
{
  return a->n_values == b->n_values && a->count == b->count &&
         a->bits[0] == b->bits[0] &&
         (a->n_values < 2 || a->bits[1] == b->bits[1]);
}

/* Import the region's mapping ro into dp (timed); where the driver
 * refuses the read-only mapping, a read-write mapping of the same memfd.
 * *base and *tag say which one the in-place figures are of. */
static int bvh_import(wv_device *dp, const uint32_t *ro, int fd, size_t bytes,
                     uint64_t mib, const uint32_t **base, const char **tag)
{
  *base = ro;
  *tag = "";
  wave_error e = {0};
  double t0 = bvh_now();
  int rc = wv_vk_host_register(dp, ro, bytes, &e);
  double t_reg = bvh_now() - t0;
  if (rc != 0) {
    printf("import: PROT_READ mapping refused (%s): %s\n",
           wave_errname(rc), e.message);
    void *rw = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (rw == MAP_FAILED) {
      perror("wvbench-vkhost: mmap rw");
      return 1;
    }
    e = (wave_error){0};
    t0 = bvh_now();
    rc = wv_vk_host_register(dp, rw, bytes, &e);
    t_reg = bvh_now() - t0;
    if (rc != 0) {
      printf("import: PROT_READ|PROT_WRITE mapping refused too (%s): %s\n",
             wave_errname(rc), e.message);
      return 1;
    }
    printf("import: PROT_READ|PROT_WRITE mapping of the same memfd accepted\n");
    *base = rw;
    *tag = " (rw mapping)";
  }
  printf("import: host_register %" PRIu64 " MiB in %.2f ms (%.1f ms/GiB), "
         "alignment %" PRIu64 "\n", mib, t_reg * 1e3,
         t_reg * 1e3 * 1024.0 / (double)mib, (uint64_t)dp->import_align);
  return 0;
}

/* What else the driver takes, besides the region (issue 21: the daemon's
 * staging rings): an import of fresh and of touched anonymous pages, and
 * memory of the device's own (wv_vk_host_alloc), each 64 MiB, the latter
 * reduced in place (a u32 sum, best of 3, against the reference).  Run
 * before and after the memfd import, so a refusal there that spoils later
 * imports shows. */
static void bvh_probe(wv_device *dp, const char *when)
{
  const size_t bytes = (size_t)64 << 20;
  for (int touch = 0; touch < 2; touch++) {
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
      return;
    if (touch)
      memset(p, 1, bytes);
    wave_error e = {0};
    int rc = wv_vk_host_register(dp, p, bytes, &e);
    printf("probe %s: import of 64 MiB of %s anonymous pages: %s%s\n", when,
           touch ? "touched" : "fresh", rc == 0 ? "accepted" : "refused: ",
           rc == 0 ? "" : e.message);
    if (rc == 0)
      wv_vk_host_unregister(dp, p, bytes);
    munmap(p, bytes);
  }
  void *p = NULL;
  wave_error e = {0};
  if (wv_vk_host_alloc(dp, bytes, &p, &e) != 0) {
    printf("probe %s: host_alloc of 64 MiB refused: %s\n", when, e.message);
    return;
  }
  for (size_t i = 0; i < bytes / 4; i++)
    ((uint32_t *)p)[i] = bvh_rand();
  wv_span in = {p, bytes / 4};
  wv_reduce_job job = {.dtype = WAVE_U32, .op = WAVE_SUM, .input = &in,
                       .n_input = 1, .rows = bytes / 4};
  wv_reduce_out want, got;
  wv_reduce_reference(&job, &want, &e);
  double best = 1e30;
  int same = 1;
  uint64_t before = dp->inplace_rows;
  for (int r = 0; r < 3; r++) {
    double t0 = bvh_now();
    if (wv_vk_reduce(dp, &job, &got, &e) != 0) {
      printf("probe %s: reduce from host_alloc memory: %s\n", when,
             e.message);
      break;
    }
    double t = bvh_now() - t0;
    best = t < best ? t : best;
    same &= got.bits[0] == want.bits[0];
  }
  printf("probe %s: host_alloc 64 MiB, u32 sum %.2f ms (%.1f GB/s), %" PRIu64
         " rows in place, bits %s\n", when, best * 1e3, bytes / best / 1e9,
         (dp->inplace_rows - before) / 3, same ? "= reference" : "WRONG");
  wv_vk_host_free(dp, p, bytes);
}

/* One case: checked against the reference, then reps timed jobs on the
 * copy path (dc) and in place (dp), their medians printed.  *bad is set
 * on a wrong answer.  Returns 0 to go on with the next case, 1 to stop
 * (the reps were skipped or one failed), -1 where the bench cannot go on. */
static int bvh_case_run(wv_device *dp, wv_device *dc, const bvh_case *bc,
                       const uint32_t *base, uint64_t region_rows, int reps,
                       double *tc, double *tp, const char *tag, int *bad)
{
  wave_error e = {0};
  double t0;
  int rc;
  uint64_t rows = region_rows - bc->skew;
  wv_span in = {base + bc->skew, rows};
  wv_reduce_job job = {.dtype = bc->dt, .op = bc->op, .input = &in,
                       .n_input = 1, .rows = rows};
  wv_reduce_out want, oc, op;
  if (wv_reduce_reference(&job, &want, &e) != 0) {
    fprintf(stderr, "wvbench-vkhost: reference: %s\n", e.message);
    return -1;
  }
  uint64_t inplace0 = dp->inplace_rows;
  /* one untimed job each: pipelines, partial buffers */
  if (wv_vk_reduce(dc, &job, &oc, &e) != 0 ||
      wv_vk_reduce(dp, &job, &op, &e) != 0) {
    fprintf(stderr, "wvbench-vkhost: %s: %s\n", bc->label, e.message);
    return -1;
  }
  uint64_t inplace = dp->inplace_rows - inplace0;
  if (!bvh_same(&oc, &want) || !bvh_same(&op, &want)) {
    printf("%s: WRONG: copy %08x %08x, in place %08x %08x, reference "
           "%08x %08x\n", bc->label, (unsigned)oc.bits[0],
           (unsigned)oc.bits[1], (unsigned)op.bits[0], (unsigned)op.bits[1],
           (unsigned)want.bits[0], (unsigned)want.bits[1]);
    *bad = 1;
    return 0;
  }
  for (int r = 0; r < reps && !*bad; r++) {
    t0 = bvh_now();
    rc = wv_vk_reduce(dc, &job, &oc, &e);
    tc[r] = bvh_now() - t0;
    t0 = bvh_now();
    rc |= wv_vk_reduce(dp, &job, &op, &e);
    tp[r] = bvh_now() - t0;
    if (rc != 0 || !bvh_same(&oc, &op)) {
      printf("%s: rep %d: %s\n", bc->label, r,
             rc != 0 ? e.message : "the two paths differ");
      *bad = 1;
    }
  }
  if (*bad)
    return 1;
  double mc = bvh_median(tc, reps), mp = bvh_median(tp, reps);
  double gb = (double)rows * 4 * 1e-9;
  printf("%s: copy %.2f ms (%.2f GB/s), in place%s %.2f ms (%.2f GB/s), "
         "copy/in-place %.2f; %" PRIu64 " of %" PRIu64 " rows in place\n",
         bc->label, mc * 1e3, gb / mc, tag, mp * 1e3, gb / mp, mc / mp,
         inplace, rows);
  return 0;
}

int main(int argc, char **argv)
{
  int index = 0, reps = 5;
  uint64_t mib = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--index") == 0 && i + 1 < argc)
      index = atoi(argv[++i]);
    else if (strcmp(argv[i], "--mib") == 0 && i + 1 < argc)
      mib = strtoull(argv[++i], NULL, 0);
    else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
      reps = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: %s [--index N] [--mib N] [--reps R]\n",
              argv[0]);
      return 2;
    }
  }
  if (reps < 1)
    reps = 1;
  wv_device *dp, *dc;
  if (bvh_open(index, 0, &dp) != 0 || bvh_open(index, 1, &dc) != 0)
    return 1;
  int cpu = dp->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
  if (mib == 0)
    mib = cpu ? 256 : 1024;
  const size_t bytes = (size_t)mib << 20;
  const uint64_t region_rows = bytes / 4;
  printf("device: %s\n", dp->description);
  int fd = bvh_memfd(bytes);
  if (fd < 0)
    return 1;
  const uint32_t *ro = mmap(NULL, bytes, PROT_READ, MAP_SHARED, fd, 0);
  if (ro == MAP_FAILED) {
    perror("wvbench-vkhost: mmap");
    return 1;
  }
  printf("region: %" PRIu64 " MiB memfd, mapped PROT_READ MAP_SHARED; "
         "staging windows %u rows, in-place windows up to %" PRIu64
         " rows (maxStorageBufferRange %u)\n", mib, dc->window_rows,
         wv_vk_inplace_window(dp), dp->props.limits.maxStorageBufferRange);
  if (!dp->host_import) {
    printf("import: refused: %s\n", dp->host_import_why);
    return 1;
  }
  /* Fault the pages in once, as the first job would. */
  volatile uint32_t sink = 0;
  for (size_t i = 0; i < bytes / 4; i += 1024)
    sink += ro[i];
  (void)sink;

  const uint32_t *base;
  const char *tag;
  bvh_probe(dp, "before");
  int refused = bvh_import(dp, ro, fd, bytes, mib, &base, &tag);
  bvh_probe(dp, "after the region's import");
  if (refused)
    return 1;

  int bad = 0;
  double *tc = calloc((size_t)reps, sizeof *tc);
  double *tp = calloc((size_t)reps, sizeof *tp);
  if (tc == NULL || tp == NULL)
    return 1;
  for (size_t c = 0; c < BH_NCASES; c++) {
    int rc = bvh_case_run(dp, dc, &bvh_cases[c], base, region_rows, reps, tc,
                         tp, tag, &bad);
    if (rc < 0)
      return 1;
    if (rc > 0)
      break;
  }
  double t0 = bvh_now();
  wv_vk_host_unregister(dp, base, bytes);
  printf("import: host_unregister in %.2f ms\n", (bvh_now() - t0) * 1e3);
  free(tc);
  free(tp);
  wv_vk_close(dp);
  wv_vk_close(dc);
  return bad;
}
