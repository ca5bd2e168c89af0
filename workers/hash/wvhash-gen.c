/* wvhash-gen - compute a pack's known answers from the plain reference.
 *
 *   wvhash-gen [-w] [-t THREADS] PACK.yaml
 *
 * Prints the `known:` section (docs/hash.md "Pack files") for PACK.yaml:
 * the cache fingerprint, the batch fingerprint of nonces [0, 2^13),
 * three vectors (units at nonces 0, 2^20 * 32 and 2^63 - 32) and the job
 * fingerprint of a job of four segments (nonce 7, count 3 * 2^13 + 50),
 * folded here from the definition (docs/hash.md "Segments").  With -w the
 * section replaces everything from the file's top-level `known:` line on
 * (or is appended).  Only ref.c computes the answers, over a dataset built
 * by wv_item_from_cache() item by item (memory packs), so what the packs
 * record never comes from a fast path under test.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/base.h"
#include "workers/hash/hash.h"
#include "workers/hash/pack.h"
#include "workers/hash/ref.h"

static const uint64_t gen_vector_nonces[3] = {
  0, (1ull << 20) * WV_LANES, (1ull << 63) - WV_LANES,
};

/* known.job: starts and ends inside segments of 2^13 */
#define GEN_JOB_NONCE 7u
#define GEN_JOB_COUNT (3u * 8192u + 50u)

/* The job fingerprint of out[0 .. count-1], the outputs of nonces n0 ..:
 * FNV-1a-64 of each segment's outputs (8 little-endian bytes each; this
 * tool runs on little-endian hosts), then FNV-1a-64 over those, in nonce
 * order. */
static uint64_t gen_job_fp(const uint64_t *out, uint64_t n0, size_t count)
{
  uint64_t job = WV_FNV_OFFSET;
  for (size_t i = 0; i < count;) {
    size_t j = i + 1;
    while (j < count && ((n0 + j) >> 13) == ((n0 + i) >> 13))
      j++;
    uint64_t seg = wv_fnv1a64(WV_FNV_OFFSET, out + i, (j - i) * 8);
    job = wv_fnv1a64(job, &seg, 8);
    i = j;
  }
  return job;
}

typedef struct gen_job {
  const wv_pack *p;
  const uint64_t *cache;
  uint64_t *dataset;
  uint64_t first, count;
} gen_job;

static void *gen_items(void *arg)
{
  gen_job *j = arg;
  for (uint64_t i = 0; i < j->count; i++)
    j->dataset[j->first + i] =
        wv_item_from_cache(j->cache, j->p->cache_items, j->p->parents,
                           j->first + i);
  return NULL;
}

static double gen_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int gen_dataset(const wv_pack *p, const uint64_t *cache,
                       unsigned threads, uint64_t **out)
{
  uint64_t n = p->dataset_items;
  uint64_t *d = malloc(n * sizeof *d);
  if (d == NULL)
    return WAVE_ENOMEM;
  pthread_t tid[64];
  gen_job jobs[64];
  if (threads > 64)
    threads = 64;
  for (unsigned t = 0; t < threads; t++) {
    jobs[t] = (gen_job){p, cache, d, n * t / threads,
                        n * (t + 1) / threads - n * t / threads};
    if (pthread_create(&tid[t], NULL, gen_items, &jobs[t]) != 0) {
      gen_items(&jobs[t]);
      tid[t] = 0;
    }
  }
  for (unsigned t = 0; t < threads; t++)
    if (tid[t])
      pthread_join(tid[t], NULL);
  *out = d;
  return 0;
}

static int gen_write(const char *path, const char *known)
{
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    return -1;
  char *text = NULL;
  size_t len = 0, cap = 0;
  char line[4096];
  while (fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, "known:", 6) == 0)
      break;
    size_t l = strlen(line);
    if (len + l + 1 > cap) {
      cap = (len + l + 1) * 2;
      char *t = realloc(text, cap);
      if (t == NULL) {
        free(text);
        fclose(f);
        return -1;
      }
      text = t;
    }
    memcpy(text + len, line, l + 1);
    len += l;
  }
  fclose(f);
  if ((f = fopen(path, "wb")) == NULL) {
    free(text);
    return -1;
  }
  if (len)
    fwrite(text, 1, len, f);
  fputs(known, f);
  free(text);
  return fclose(f);
}

int main(int argc, char **argv)
{
  int write = 0, opt;
  unsigned threads = (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
  while ((opt = getopt(argc, argv, "wt:")) != -1) {
    if (opt == 'w')
      write = 1;
    else if (opt == 't')
      threads = (unsigned)atoi(optarg);
    else
      goto usage;
  }
  if (optind + 1 != argc)
    goto usage;
  if (threads == 0)
    threads = 1;
  const char *path = argv[optind];
  wave_error err;
  wv_pack *p;
  if (wv_pack_load_file(path, &p, &err) != 0) {
    fprintf(stderr, "wvhash-gen: %s\n", err.message);
    return 1;
  }
  wv_hash_mem m = {.pack = p};
  uint64_t *cache = NULL, *dataset = NULL;
  size_t items = 0;
  double t0 = gen_now();
  if (!p->closed) {
    if (wv_pack_cache_build(p, &cache, &items, &err) != 0) {
      fprintf(stderr, "wvhash-gen: %s\n", err.message);
      return 1;
    }
    /* gen_dataset() does not fill err: say what failed ourselves. */
    if (gen_dataset(p, cache, threads, &dataset) != 0) {
      fprintf(stderr, "wvhash-gen: %s: dataset of %llu bytes: %s\n",
              p->name, (unsigned long long)(p->dataset_items * 8),
              wave_strerror(WAVE_ENOMEM));
      return 1;
    }
    m.cache = cache;
    m.dataset = dataset;
  }
  fprintf(stderr, "wvhash-gen: %s: cache + dataset %.2f s\n", p->name,
          gen_now() - t0);

  char *known = malloc(16384);
  size_t k = 0, cap = 16384;
  if (known == NULL)
    return 1;
#define GEN_PUT(...) k += (size_t)snprintf(known + k, cap - k, __VA_ARGS__)
  GEN_PUT("known:\n");
  if (!p->closed)
    GEN_PUT("  cache_fnv: 0x%016llx\n", (unsigned long long)wv_fnv1a64(
                WV_FNV_OFFSET, cache, items * sizeof *cache));
  const uint64_t nb = 1ull << WV_CHECK_BATCH_LOG2;
  uint64_t *out = malloc(nb * sizeof *out);
  if (out == NULL)
    return 1;
  t0 = gen_now();
  wv_ref_range(&m, 0, nb, out);
  wv_hash_acc acc;
  wv_hash_acc_init(&acc, 0, 0);
  wv_hash_acc_add(&acc, 0, out, nb);
  GEN_PUT("  batch_fnv: 0x%016llx     # nonces [0, 2^%u)\n",
          (unsigned long long)acc.fingerprint, WV_CHECK_BATCH_LOG2);
  fprintf(stderr, "wvhash-gen: %s: 2^%u reference hashes %.2f s\n", p->name,
          WV_CHECK_BATCH_LOG2, gen_now() - t0);
  GEN_PUT("  vectors:\n");
  for (unsigned v = 0; v < 3; v++) {
    uint64_t o[WV_LANES];
    wv_ref_unit(&m, gen_vector_nonces[v] / WV_LANES, o);
    GEN_PUT("    - nonce: 0x%016llx\n      outputs:\n",
            (unsigned long long)gen_vector_nonces[v]);
    for (unsigned l = 0; l < WV_LANES; l++)
      GEN_PUT("        - 0x%016llx\n", (unsigned long long)o[l]);
  }
  wv_hash_acc_fini(&acc);
  uint64_t *jo = malloc(GEN_JOB_COUNT * sizeof *jo);
  if (jo == NULL)
    return 1;
  wv_ref_range(&m, GEN_JOB_NONCE, GEN_JOB_COUNT, jo);
  GEN_PUT("  job: {nonce: %u, count: %u, fingerprint: 0x%016llx}\n",
          GEN_JOB_NONCE, GEN_JOB_COUNT,
          (unsigned long long)gen_job_fp(jo, GEN_JOB_NONCE, GEN_JOB_COUNT));
  free(jo);
  int rc = 0;
  if (write) {
    if (gen_write(path, known) != 0) {
      perror(path);
      rc = 1;
    }
  } else {
    fputs(known, stdout);
  }
  free(known);
  free(out);
  free(cache);
  free(dataset);
  wv_pack_free(p);
  return rc;
usage:
  fprintf(stderr, "usage: wvhash-gen [-w] [-t THREADS] PACK.yaml\n");
  return 2;
}
