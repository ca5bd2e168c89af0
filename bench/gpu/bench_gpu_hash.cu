/* bench_gpu_hash.cu - the CUDA backend's lottery hash against the random
 * load roofline of the same dataset, measured in the same run.
 *
 *   wvbench-gpu-hash [PACK_DIR]     (default $WAVE_SOURCE_DIR/config/packs,
 *                                    else ./config/packs)
 *   wvbench-gpu-hash PACK_DIR --profile   one main-pack kernel of 2^24
 *                                    nonces, for Nsight Compute (ncu): the
 *                                    NVRTC kernel, the interpreter with
 *                                    WAVE_CUDA_NVRTC=0
 *
 * For each kernel (the interpreter k_hash, and the pack's own kernel compiled
 * by NVRTC, gpu_jit.cu, with the rounds unrolled or in a loop) and each
 * exchange path (shuffle, local): every pack's known-answer
 * self-check (wv_pack_selfcheck: vectors, a partial unit, the batch
 * fingerprint), then hashes per second on the pack "main" (1 GiB dataset):
 * kernel only (CUDA events, outputs left on the device) and end to end
 * (backend hash(): outputs copied to host memory).  The roofline: a kernel
 * doing nothing but per-lane random 8-byte loads over the same 1 GiB, as
 * loads per second; divided by the loads one hash makes (rounds x loads per
 * program) it is the hash rate no kernel can beat.
 *
 * Then, on the device's own exchange path, for both kernels, 2^26, 2^27 and 2^28 nonces of
 * main: the kernel alone beside hash_batch (kernel + device fold into
 * 2^13-nonce segment fingerprints, winners and best + copy-back, host
 * clock), and hash_batch at s = 20; the 2^26 batch's results are checked
 * against wv_hash_fold over the backend's hash() outputs first.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <algorithm>
#include <vector>

#include "workers/cuda/gpu_internal.h"
#include "bench/gpu/bench_gpu.h"

#define WV_HASH_FN static __host__ __device__ inline
extern "C" {
#include "workers/hash/hash.h"
#include "workers/hash/pack.h"
}

extern "C" const wv_backend wv_cuda_backend;

using namespace wv_cuda;



/* Random 8-byte loads, one lane at a time, over d[0..mask]: addresses from
 * a per-thread LCG (independent of the loaded values, so as many loads fly
 * as the hardware allows). */
__global__ void __launch_bounds__(256)
k_random(const uint64_t *__restrict__ d, uint64_t mask, int loads,
         uint64_t *sink)
{
  uint64_t x = (blockIdx.x * (uint64_t)blockDim.x + threadIdx.x) *
                   0x9e3779b97f4a7c15ull + 1;
  uint64_t acc = 0;
  for (int k = 0; k < loads; k++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    acc ^= __ldg(&d[(x >> 24) & mask]);
  }
  if (acc == 0x9e3779b97f4a7c15ull)
    sink[0] = acc;
}

template <typename F> static float median_ms(int reps, F fn)
{
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  std::vector<float> t;
  fn();
  for (int r = 0; r < reps; r++) {
    CHECK(cudaEventRecord(a, 0));
    fn();
    CHECK(cudaEventRecord(b, 0));
    CHECK(cudaEventSynchronize(b));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

/* hash_batch beside the kernel alone, one size. */
struct brow {
  unsigned log2n, s;
  double kernel, batch;
};

/* hash_batch of main: its results at 2^26 against the host fold of hash(),
 * then its rate beside the kernel's at 2^26..2^28 (s = 13) and at 2^28
 * with s = 20.  Returns the number of failures. */
static int bench_batches(wv_device *dev, const wv_pack *p, struct brow *out,
                         int *nout)
{
  gdev *g = (gdev *)dev;
  wave_error err;
  const uint64_t big = 1ull << 28, nonce = 12345;
  const size_t slots = 4096;
  const uint64_t target = 1ull << 44;   /* about 2^-20 of the nonces win */
  uint64_t *d_big;
  CHECK(cudaMalloc((void **)&d_big, big * 8));
  std::vector<uint64_t> seg(big >> 5), segw(big >> 5);
  std::vector<wv_hash_winner> win(slots), winw(slots);
  int fails = 0;
  {
    const uint64_t n = 1ull << 26;
    std::vector<uint64_t> outs(n);
    if (wv_cuda_backend.hash(dev, p, nonce, n, outs.data(), &err) != 0) {
      fprintf(stderr, "hash: %s\n", err.message);
      exit(1);
    }
    for (unsigned s : {5u, 13u, 20u}) {
      wv_hash_batch w = {}, b = {};
      w.nonce = nonce;
      w.count = n;
      w.seg_log2 = s;
      w.target = s == 5 ? ~0ull : target;   /* s = 5: every nonce wins */
      w.max_winners = slots;
      w.seg_fp = segw.data();
      w.winners = winw.data();
      b = w;
      b.seg_fp = seg.data();
      b.winners = win.data();
      wv_hash_fold(&w, outs.data());
      if (wv_cuda_backend.hash_batch(dev, p, &b, &err) != 0) {
        fprintf(stderr, "hash_batch: %s\n", err.message);
        exit(1);
      }
      uint64_t nseg = wv_seg_count(nonce, n, s);
      int same = memcmp(seg.data(), segw.data(), nseg * 8) == 0 &&
                 b.winner_count == w.winner_count &&
                 b.n_winners == w.n_winners &&
                 memcmp(win.data(), winw.data(),
                        w.n_winners * sizeof(wv_hash_winner)) == 0 &&
                 b.best_nonce == w.best_nonce &&
                 b.best_output == w.best_output;
      printf("hash_batch 2^26 nonces s=%u: %llu segments, %llu winners (%zu "
             "kept), best %016llx at %llu: %s the host fold\n", s,
             (unsigned long long)nseg, (unsigned long long)b.winner_count,
             b.n_winners, (unsigned long long)b.best_output,
             (unsigned long long)b.best_nonce,
             same ? "same as" : "DIFFERENT from");
      fails += !same;
    }
  }
  for (unsigned k = 26; k <= 29; k++) {
    const unsigned log2n = k <= 28 ? k : 28, s = k <= 28 ? 13 : 20;
    const uint64_t n = 1ull << log2n;
    brow *r = &out[(*nout)++];
    r->log2n = log2n;
    r->s = s;
    float ms = median_ms(3, [&] {
      if (hash_device(g, p, nonce, n, d_big, &err) != 0) {
        fprintf(stderr, "hash: %s\n", err.message);
        exit(1);
      }
      CHECK(cudaStreamSynchronize(g->compute));
    });
    r->kernel = n / (ms * 1e-3);
    std::vector<double> t;
    for (int rep = 0; rep < 4; rep++) {
      wv_hash_batch b = {};
      b.nonce = nonce;
      b.count = n;
      b.seg_log2 = s;
      b.target = target;
      b.max_winners = slots;
      b.seg_fp = seg.data();
      b.winners = win.data();
      double a = now();
      if (wv_cuda_backend.hash_batch(dev, p, &b, &err) != 0) {
        fprintf(stderr, "hash_batch: %s\n", err.message);
        exit(1);
      }
      if (rep > 0)
        t.push_back(now() - a);
    }
    std::sort(t.begin(), t.end());
    r->batch = n / t[t.size() / 2];
    printf("2^%u nonces: kernel %.1f M hashes/s, hash_batch s=%u %.1f M "
           "hashes/s (%.3f)\n", log2n, r->kernel / 1e6, s, r->batch / 1e6,
           r->batch / r->kernel);
  }
  CHECK(cudaFree(d_big));
  return fails;
}

/* The kernels side by side: WAVE_CUDA_NVRTC(_UNROLL) as hash_init reads
 * them at open. */
struct kcfg {
  const char *exchange, *kernel, *nvrtc, *unroll, *minblocks;
  int batches;
};
static const kcfg kc[] = {
    {"auto", "interpreter", "0", "1", "0", 1},
    {"auto", "nvrtc", "1", "1", "0", 1},
    {"auto", "nvrtc, round loop", "1", "0", "0", 0},
    {"auto", "nvrtc, 10 blocks/SM", "1", "1", "10", 0},
    {"auto", "nvrtc, round loop, 12 blocks/SM", "1", "0", "12", 0},
    {"local", "interpreter", "0", "1", "0", 0},
    {"local", "nvrtc", "1", "1", "0", 0},
};
#define NK ((int)(sizeof kc / sizeof kc[0]))

/* hash_batch's rows of one kernel configuration. */
struct bset {
  const char *kernel;
  brow b[4];
  int n;
};

/* What one kernel configuration measured. */
struct krow {
  const char *path, *kernel;
  double kernel_rate, e2e;
  int selfcheck_ok;
  char exch[16], reason[200];
  uint64_t batch;
};

static const char *const names[] = {"small", "closed", "main"};

/* --profile: one kernel of 2^24 nonces of pack main, for a profiler. */
static int profile(wv_pack *mainp)
{
  wave_error err;
  wv_device_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.name = "cuda0";
  cfg.backend = "cuda";
  wv_device *dev;
  uint64_t *d_o;
  if (wv_cuda_backend.open(&cfg, &dev, &err) != 0 ||
      wv_cuda_backend.hash_prepare(dev, mainp, &err) != 0) {
    fprintf(stderr, "%s\n", err.message);
    return 1;
  }
  CHECK(cudaMalloc((void **)&d_o, (1u << 24) * 8));
  if (hash_device((gdev *)dev, mainp, 0, 1u << 24, d_o, &err) != 0) {
    fprintf(stderr, "%s\n", err.message);
    return 1;
  }
  CHECK(cudaDeviceSynchronize());
  printf("profile: one kernel of 2^24 nonces, pack main\n");
  wv_cuda_backend.close(dev);
  return 0;
}

/* Every pack's self-check on dev, its caps into r, and whether a row that
 * asked for NVRTC got it.  Returns the number of failures. */
static int kc_selfcheck(wv_device *dev, const kcfg *k, wv_pack **packs,
                        krow *r)
{
  wave_error err;
  int fails = 0;
  r->selfcheck_ok = 1;
  for (int i = 0; i < 3; i++) {
    char detail[256];
    double t0 = now();
    int rv = wv_pack_selfcheck(&wv_cuda_backend, dev, packs[i], detail,
                               sizeof detail, &err);
    printf("exchange %s, %s: pack %-6s self-check %s (%.2f s): %s\n",
           k->exchange, k->kernel, names[i], rv == 0 ? "ok" : "FAILED", now() - t0,
           rv == 0 ? detail : err.message);
    if (rv != 0) {
      r->selfcheck_ok = 0;
      fails++;
    }
  }
  wv_caps caps;
  wv_cuda_backend.caps(dev, &caps);
  snprintf(r->exch, sizeof r->exch, "%s", wv_exchange_name(caps.exchange_mode));
  snprintf(r->reason, sizeof r->reason, "%s", caps.exchange_reason);
  r->batch = caps.hash_batch;
  printf("caps: %s; exchange %s (%s); hash_batch %llu\n", caps.description,
         wv_exchange_name(caps.exchange_mode), caps.exchange_reason,
         (unsigned long long)caps.hash_batch);
  /* A row that asked for NVRTC must have got it. */
  if (strcmp(k->nvrtc, "0") != 0 &&
      strstr(caps.exchange_reason, "kernel: nvrtc") == NULL) {
    printf("%s: the NVRTC kernel was asked for but not used\n", k->kernel);
    r->selfcheck_ok = 0;
    fails++;
  }
  return fails;
}

/* The kernel's rate on every pack (n nonces into d_out), and pack main end
 * to end through hash() into h_out, spot-checked against the CPU.  Returns
 * the number of failures, -1 where hash() failed. */
static int kc_rates(wv_device *dev, const kcfg *k, wv_pack **packs,
                    uint64_t N, uint64_t *h_out, uint64_t *d_out, krow *r)
{
  wave_error err;
  wv_pack *mainp = packs[2];
  int fails = 0;
  gdev *g = (gdev *)dev;
  for (int i = 0; i < 3; i++) {
    float ms = median_ms(3, [&] {
      if (hash_device(g, packs[i], 1000, N, d_out, &err) != 0) {
        fprintf(stderr, "hash: %s\n", err.message);
        exit(1);
      }
      CHECK(cudaStreamSynchronize(g->compute));
    });
    double rate = N / (ms * 1e-3);
    printf("exchange %s, %s: pack %-6s kernel %.2f ms for 2^25 nonces: "
           "%.1f M hashes/s\n", k->exchange, k->kernel, names[i], ms,
           rate / 1e6);
    if (i == 2)
      r->kernel_rate = rate;
  }
  /* End to end: the backend's hash(), outputs into host memory. */
  std::vector<double> t;
  for (int rep = 0; rep < 4; rep++) {
    double a = now();
    if (wv_cuda_backend.hash(dev, mainp, 1000, N, h_out, &err) != 0) {
      fprintf(stderr, "hash: %s\n", err.message);
      return -1;
    }
    if (rep > 0)
      t.push_back(now() - a);
  }
  std::sort(t.begin(), t.end());
  r->e2e = N / t[t.size() / 2];
  /* Spot-check outputs of the timed range against the CPU. */
  for (uint64_t j = 0; j < 64; j++) {
    uint64_t i = (j * 0x9e3779b97f4a7c15ull) % N, want;
    if (wv_hash_verify(mainp, 1000 + i, &want, &err) != 0 ||
        want != h_out[i]) {
      printf("exchange %s, %s: nonce %llu differs from the CPU\n",
             k->exchange, k->kernel, (unsigned long long)(1000 + i));
      fails++;
      break;
    }
  }
  printf("exchange %s, %s: pack main end to end %.1f M hashes/s\n",
         k->exchange, k->kernel, r->e2e / 1e6);
  return fails;
}

/* The roofline over a 1 GiB buffer like main's dataset: random 8-byte
 * loads per second, and the hash rate they allow. */
static void roofline(const wv_pack *mainp, double *lps_out, double *roof_out)
{
  const uint64_t loads_per_hash = (uint64_t)mainp->loads * mainp->rounds;
  uint64_t items = mainp->dataset_items, *d_set, *sink;
  CHECK(cudaMalloc((void **)&d_set, items * 8));
  CHECK(cudaMalloc((void **)&sink, 8));
  CHECK(cudaMemset(d_set, 0x5a, items * 8));
  const int loads = 104;
  const unsigned blocks = 16384;
  float ms = median_ms(5, [&] {
    k_random<<<blocks, 256>>>(d_set, items - 1, loads, sink);
  });
  CHECK(cudaGetLastError());
  double lps = (double)blocks * 256 * loads / (ms * 1e-3);
  double roof = lps / loads_per_hash;
  printf("roofline: %.1f G random 8-byte loads/s over %llu MiB -> %.1f M "
         "hashes/s at %llu loads/hash\n", lps / 1e9,
         (unsigned long long)(items * 8 >> 20), roof / 1e6,
         (unsigned long long)loads_per_hash);
  *lps_out = lps;
  *roof_out = roof;
}

/* The summary table and the kernels' notes. */
static void print_table(const krow *rows, const bset *bsets, int nbsets,
                        double lps, double roof, uint64_t loads_per_hash)
{
  printf("\n| hash (pack main) | M hashes/s | G loads/s | vs roofline |\n");
  printf("|---|---|---|---|\n");
  printf("| random-load roofline | %.1f | %.1f | 1.00 |\n", roof / 1e6,
         lps / 1e9);
  for (int x = 0; x < NK; x++) {
    const krow *r = &rows[x];
    printf("| %s (%s), %s, kernel | %.1f | %.1f | %.2f |\n", r->exch,
           r->path, r->kernel, r->kernel_rate / 1e6,
           r->kernel_rate * loads_per_hash / 1e9, r->kernel_rate / roof);
    printf("| %s (%s), %s, end to end | %.1f | | %.2f |\n", r->exch, r->path,
           r->kernel, r->e2e / 1e6, r->e2e / roof);
  }
  for (int k = 0; k < nbsets; k++)
    for (int i = 0; i < bsets[k].n; i++) {
      const brow *b = &bsets[k].b[i];
      printf("| %s, %s, 2^%u nonces, kernel | %.1f | | %.2f |\n",
             rows[0].exch, bsets[k].kernel, b->log2n, b->kernel / 1e6,
             b->kernel / roof);
      printf("| %s, %s, 2^%u nonces, hash_batch s=%u | %.1f | | %.2f (%.3f "
             "of the kernel) |\n", rows[0].exch, bsets[k].kernel, b->log2n,
             b->s, b->batch / 1e6, b->batch / roof, b->batch / b->kernel);
    }
  int all_ok = 1;
  for (int x = 0; x < NK; x++)
    all_ok &= rows[x].selfcheck_ok;
  printf("self-checks: %s; hash_batch %llu\n", all_ok ? "all ok" : "FAILED",
         (unsigned long long)rows[0].batch);
  for (int x = 0; x < NK; x++)
    printf("kernel %s/%s: %s\n", rows[x].path, rows[x].kernel,
           rows[x].reason);
  if (rows[1].kernel_rate > 0 && rows[0].kernel_rate > 0)
    printf("nvrtc / interpreter, shuffle path, kernel: %.3f\n",
           rows[1].kernel_rate / rows[0].kernel_rate);
}

int main(int argc, char **argv)
{
  char dir[512];
  const char *src = getenv("WAVE_SOURCE_DIR");
  if (argc > 1)
    snprintf(dir, sizeof dir, "%s", argv[1]);
  else
    snprintf(dir, sizeof dir, "%s/config/packs", src ? src : ".");
  wv_pack *packs[3];
  wave_error err;
  for (int i = 0; i < 3; i++) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s.yaml", dir, names[i]);
    if (wv_pack_load_file(path, &packs[i], &err) != 0) {
      fprintf(stderr, "%s: %s\n", path, err.message);
      return 1;
    }
  }
  wv_pack *mainp = packs[2];
  if (argc > 2 && strcmp(argv[2], "--profile") == 0)
    return profile(mainp);
  const uint64_t loads_per_hash = (uint64_t)mainp->loads * mainp->rounds;
  const uint64_t N = 1ull << 25;
  uint64_t *h_out = (uint64_t *)malloc(N * 8), *d_out;
  CHECK(cudaMalloc((void **)&d_out, N * 8));

  bset bsets[2];
  int nbsets = 0;
  krow rows[NK];
  int fails = 0;
  for (int x = 0; x < NK; x++) {
    wv_device_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.name = "cuda0";
    cfg.backend = "cuda";
    if (wv_exchange_parse(kc[x].exchange, &cfg.exchange) != 0)
      return 1;  /* a typo in the table above */
    setenv("WAVE_CUDA_NVRTC", kc[x].nvrtc, 1);
    setenv("WAVE_CUDA_NVRTC_UNROLL", kc[x].unroll, 1);
    setenv("WAVE_CUDA_NVRTC_MINBLOCKS", kc[x].minblocks, 1);
    wv_device *dev;
    if (wv_cuda_backend.open(&cfg, &dev, &err) != 0) {
      fprintf(stderr, "open: %s\n", err.message);
      return 1;
    }
    krow *r = &rows[x];
    r->path = kc[x].exchange;
    r->kernel = kc[x].kernel;
    fails += kc_selfcheck(dev, &kc[x], packs, r);
    int rf = kc_rates(dev, &kc[x], packs, N, h_out, d_out, r);
    if (rf < 0)
      return 1;
    fails += rf;
    if (kc[x].batches) {
      bset *bs = &bsets[nbsets++];
      bs->kernel = kc[x].kernel;
      bs->n = 0;
      fails += bench_batches(dev, mainp, bs->b, &bs->n);
    }
    wv_cuda_backend.close(dev);
  }

  double lps, roof;
  roofline(mainp, &lps, &roof);
  print_table(rows, bsets, nbsets, lps, roof, loads_per_hash);
  for (int i = 0; i < 3; i++)
    wv_pack_free(packs[i]);
  printf("hash bench: %s\n", fails ? "FAILURES" : "ok");
  return fails ? 1 : 0;
}
