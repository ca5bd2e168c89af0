/* bench_hash_cpu - the CPU backend's hash rate against the machine's own
 * random-read roofline, measured in the same run with the same threads.
 *
 *   bench_hash_cpu [-p PACK.yaml] [-t THREADS] [-s SECONDS]
 *
 * The main pack does `loads` random 8-byte reads per hash into a 1 GiB
 * dataset, so no CPU can hash faster than (random 8-byte loads/s at that
 * size) / (loads per hash).  The baseline reads a buffer of the dataset's
 * size, allocated the same way (2 MiB aligned, huge pages requested), from
 * the same pool of threads, every load independent of every other (the
 * hash issues 128 lanes' independent loads per instruction per thread).  Printed: dataset
 * generation time, hashes/s, loads/s, and the ratio of the hash rate to the
 * roofline; also the closed-form pack (no memory: the compute side alone)
 * when it sits next to the pack.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "workers/cpu/cpu.h"
#include "workers/hash/hash.h"
#include "workers/hash/pack.h"

#ifndef WAVE_SOURCE_DIR
#define WAVE_SOURCE_DIR "."
#endif

static double bh_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- the roofline: random 8-byte loads ----------------------------------- */

#define BH_IDX 4096u              /* random indices per task, reused */
#define BH_PASSES 256u            /* passes over them, each xor-shifted */
#define BH_LOADS_PER_TASK (BH_IDX * BH_PASSES)

typedef struct bh_loads {
  const uint64_t *buf;
  uint64_t mask;
  uint64_t seed;
  _Atomic uint64_t sink;
} bh_loads;

/* Addresses come from an L1-resident table of random indices xor a random
 * per-pass offset (a permutation of the buffer), so a load costs one cached
 * read and two ALU ops besides itself, and no load depends on another: the
 * core keeps as many in flight as it can, which is the roofline. */
static void bh_load_task(void *arg, size_t task, unsigned worker)
{
  bh_loads *b = arg;
  uint64_t idx[BH_IDX], acc = 0;
  uint64_t s = b->seed + (uint64_t)task * (BH_IDX + BH_PASSES);
  for (unsigned i = 0; i < BH_IDX; i++)
    idx[i] = wv_mix64(s + i);
  for (unsigned p = 0; p < BH_PASSES; p++) {
    uint64_t off = wv_mix64(s + BH_IDX + p);
    for (unsigned i = 0; i < BH_IDX; i++)
      acc ^= b->buf[(idx[i] ^ off) & b->mask];
  }
  atomic_fetch_xor(&b->sink, acc);
}

static uint64_t *bh_buffer(uint64_t items)
{
  size_t bytes = (size_t)(items * 8), huge = 2u << 20;
  size_t alloc = (bytes + huge - 1) / huge * huge;
  uint64_t *buf = aligned_alloc(huge, alloc);
  if (buf == NULL)
    return NULL;
#ifdef MADV_HUGEPAGE
  madvise(buf, alloc, MADV_HUGEPAGE);  /* as cpu_hash.c does */
#endif
  for (uint64_t i = 0; i < items; i++)
    buf[i] = i * 0x9e3779b97f4a7c15ull;
  return buf;
}

static double bh_roofline(wv_device *dev, bh_loads *b, double seconds)
{
  size_t tasks = dev->threads * 2;
  uint64_t loads = 0;
  double t0 = bh_now(), t;
  do {
    b->seed += tasks * (BH_IDX + BH_PASSES);
    wv_cpu_pool_run(dev, tasks, bh_load_task, b);
    loads += (uint64_t)tasks * BH_LOADS_PER_TASK;
  } while ((t = bh_now() - t0) < seconds);
  return loads / t;
}

/* ---- the hash ------------------------------------------------------------ */

typedef struct bh_hash {
  wv_device *dev;
  const wv_pack *p;
  uint64_t batch, nonce;
  uint64_t *out;
} bh_hash;

static int bh_hash_init(bh_hash *h, wv_device *dev, const wv_pack *p,
                        double *prep_s)
{
  wave_error err;
  double t0 = bh_now();
  if (wv_cpu_backend.hash_prepare(dev, p, &err) != 0) {
    fprintf(stderr, "prepare %s: %s\n", p->name, err.message);
    return -1;
  }
  *prep_s = bh_now() - t0;
  wv_caps caps;
  wv_cpu_backend.caps(dev, &caps);
  h->dev = dev;
  h->p = p;
  h->batch = caps.hash_batch ? caps.hash_batch : 1u << 15;
  h->nonce = 1ull << 40;
  h->out = malloc(h->batch * 8);
  if (h->out == NULL)
    return -1;
  wv_cpu_backend.hash(dev, p, h->nonce, h->batch, h->out, &err); /* warm */
  return 0;
}

static double bh_hash_rate(bh_hash *h, double seconds)
{
  wave_error err;
  uint64_t done = 0;
  double t0 = bh_now(), t;
  do {
    if (wv_cpu_backend.hash(h->dev, h->p, h->nonce, h->batch, h->out,
                            &err) != 0) {
      fprintf(stderr, "hash %s: %s\n", h->p->name, err.message);
      return 0;
    }
    h->nonce += h->batch;
    done += h->batch;
  } while ((t = bh_now() - t0) < seconds);
  /* Sanity, not timing: the last batch's first output against the CPU's
   * light verification. */
  uint64_t v;
  if (wv_hash_verify(h->p, h->nonce - h->batch, &v, &err) != 0 ||
      v != h->out[0])
    fprintf(stderr, "WARNING: %s output does not verify\n", h->p->name);
  return done / t;
}

static int bh_cmp(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
  const char *path = WAVE_SOURCE_DIR "/config/packs/main.yaml";
  unsigned threads = 0;
  double seconds = 5;
  int opt;
  while ((opt = getopt(argc, argv, "p:t:s:")) != -1) {
    if (opt == 'p')
      path = optarg;
    else if (opt == 't')
      threads = (unsigned)atoi(optarg);
    else if (opt == 's')
      seconds = atof(optarg);
    else {
      fprintf(stderr, "usage: bench_hash_cpu [-p PACK.yaml] [-t THREADS] "
                      "[-s SECONDS]\n");
      return 2;
    }
  }
  wave_error err;
  wv_pack *p, *closed = NULL;
  if (wv_pack_load_file(path, &p, &err) != 0) {
    fprintf(stderr, "%s\n", err.message);
    return 1;
  }
  char cpath[600];
  snprintf(cpath, sizeof cpath, "%.*s/closed.yaml",
           (int)(strrchr(path, '/') ? strrchr(path, '/') - path : 1),
           strrchr(path, '/') ? path : ".");
  if (wv_pack_load_file(cpath, &closed, &err) != 0)
    closed = NULL;
  wv_device_config cfg = {.name = "cpu-bench", .backend = "cpu",
                          .threads = threads};
  wv_device *dev;
  if (wv_cpu_backend.open(&cfg, &dev, &err) != 0) {
    fprintf(stderr, "%s\n", err.message);
    return 1;
  }
  wv_caps caps;
  wv_cpu_backend.caps(dev, &caps);
  unsigned loads = p->loads * p->rounds;
  printf("pack %s: dataset %llu MiB, %u loads/hash; device: %s; "
         "exchange %s\n", p->name,
         (unsigned long long)(wv_pack_dataset_bytes(p) >> 20), loads,
         caps.description, wv_exchange_name(caps.exchange_mode));

  /* The box is shared: hash and roofline alternate in short slices, so
   * both see the same background load; the ratio is taken per slice and
   * the median reported, with the best slice of each beside it. */
  enum { SLICES = 7 };
  double prep = 0, hps[SLICES], lps[SLICES], ratio[SLICES];
  bh_hash h;
  if (bh_hash_init(&h, dev, p, &prep) != 0)
    return 1;
  if (!p->closed)
    printf("dataset generation: %.2f s (%.1f M items/s, %u parents, %u "
           "threads)\n", prep, p->dataset_items / prep / 1e6, p->parents,
           dev->threads);
  bh_loads b = {.mask = p->item_mask, .seed = 1};
  atomic_init(&b.sink, 0);
  if (!p->closed && (b.buf = bh_buffer(p->dataset_items)) == NULL) {
    fprintf(stderr, "no memory for the roofline buffer\n");
    return 1;
  }
  for (int i = 0; i < SLICES; i++) {
    hps[i] = bh_hash_rate(&h, seconds / SLICES);
    lps[i] = p->closed ? 0 : bh_roofline(dev, &b, seconds / SLICES);
    ratio[i] = p->closed ? 0 : hps[i] / (lps[i] / loads);
    printf("  slice %d: hash %9.0f/s  loads %6.1f M/s  ratio %.2f\n", i,
           hps[i], lps[i] / 1e6, ratio[i]);
  }
  free((void *)b.buf);
  free(h.out);
  qsort(ratio, SLICES, sizeof *ratio, bh_cmp);
  qsort(hps, SLICES, sizeof *hps, bh_cmp);
  qsort(lps, SLICES, sizeof *lps, bh_cmp);
  printf("hash:      %10.0f hashes/s median, %.0f best  (%.1f M loads/s "
         "median)\n", hps[SLICES / 2], hps[SLICES - 1],
         hps[SLICES / 2] * loads / 1e6);
  if (!p->closed) {
    printf("roofline:  %10.0f hashes/s median, %.0f best  (%.1f M random "
           "8-byte loads/s over %llu MiB, %u threads)\n",
           lps[SLICES / 2] / loads, lps[SLICES - 1] / loads,
           lps[SLICES / 2] / 1e6,
           (unsigned long long)(p->dataset_items >> 17), dev->threads);
    printf("ratio:     %.2f of the random-load roofline (median of slices; "
           "best/best %.2f)\n", ratio[SLICES / 2],
           hps[SLICES - 1] / (lps[SLICES - 1] / loads));
  }
  if (closed != NULL) {
    bh_hash hc;
    if (bh_hash_init(&hc, dev, closed, &prep) == 0) {
      double chps = bh_hash_rate(&hc, seconds / SLICES);
      printf("closed:    %10.0f hashes/s  (pack %s, no memory: the compute "
             "side; main/closed %.2f)\n", chps, closed->name,
             hps[SLICES / 2] / chps);
      free(hc.out);
    }
    wv_pack_free(closed);
  }
  wv_cpu_backend.close(dev);
  wv_pack_free(p);
  return 0;
}
