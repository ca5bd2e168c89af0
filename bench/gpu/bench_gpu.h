/* bench_gpu.h - what the CUDA benchmark programs share: a CUDA call check
 * that ends the program (a benchmark, unlike the daemon, may stop at the
 * first failure) and a monotonic host clock. */
#ifndef WV_BENCH_GPU_H
#define WV_BENCH_GPU_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CHECK(call)                                                            \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess) {                                                   \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,            \
              cudaGetErrorString(e_));                                         \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

static inline double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#endif
