/* bench_gpu_copy.cu - the baseline of bench/device-files.sh: a pinned
 * host->device copy of N bytes (cudaMallocHost, one cudaMemcpy), best of
 * 5, as one line the script reads:
 *
 *   wvbench-gpu-copy [LOG2_BYTES]   (default 30: 1 GiB)
 *   -> "pinned copy 1024 MiB: 19.70 ms (54.5 GB/s)"
 */
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define CHECK(x)                                                              \
  do {                                                                        \
    cudaError_t e_ = (x);                                                     \
    if (e_ != cudaSuccess) {                                                  \
      fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));                \
      return 1;                                                               \
    }                                                                         \
  } while (0)

int main(int argc, char **argv)
{
  int lg = argc > 1 ? atoi(argv[1]) : 30;
  if (lg < 10 || lg > 36) {
    fprintf(stderr, "usage: wvbench-gpu-copy [LOG2_BYTES 10..36]\n");
    return 2;
  }
  size_t bytes = (size_t)1 << lg;
  void *host, *dev;
  CHECK(cudaMallocHost(&host, bytes));
  CHECK(cudaMalloc(&dev, bytes));
  memset(host, 1, bytes);
  CHECK(cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice));  /* warm */
  double best = 1e9;
  for (int i = 0; i < 5; i++) {
    double t0 = now_s();
    CHECK(cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice));
    CHECK(cudaDeviceSynchronize());
    double t = now_s() - t0;
    best = t < best ? t : best;
  }
  printf("pinned copy %zu MiB: %.2f ms (%.1f GB/s)\n", bytes >> 20,
         best * 1e3, (double)bytes / best * 1e-9);
  cudaFree(dev);
  cudaFreeHost(host);
  return 0;
}
