/* cpu.h - the CPU backend's device context, shared by the files of
 * workers/cpu/ (cpu.c: device and thread pool; cpu_reduce.c: reductions;
 * cpu_wide.c: 64-bit dtypes and argmin/argmax; cpu_hash.c: hash jobs; cpu_seg.c: hash batches folded on the pool).
 *
 * A CPU device is a persistent pool of `threads` threads, the calling device
 * thread included: wv_cpu_pool_run() hands out task numbers to all of them
 * and returns when every task has run.  Like every device context it is used
 * by one device thread only, so the pool never sees two runs at once.
 */
#ifndef WV_CPU_H
#define WV_CPU_H

#include <stddef.h>

#include "workers/worker.h"

struct wv_cpu_pool;  /* cpu.c */

struct wv_device {
  unsigned threads;             /* pool threads, the caller included */
  unsigned simd_lanes;          /* 32-bit lanes of the vector code in use */
  char name[64];
  struct wv_cpu_pool *pool;     /* NULL when threads == 1 */
  /* Owned by cpu_hash.c: freed in close with hash_state_free when set. */
  void *hash_state;
  void (*hash_state_free)(void *);
  uint64_t *seg_scratch;        /* cpu_seg.c: one chunk's outputs, or NULL */
};

/* Run fn(arg, task, worker) for every task in [0, n_tasks) across the
 * device's threads (worker in [0, threads), the caller is worker 0); returns
 * when all have finished.  Tasks are handed out in increasing order, one at
 * a time, to whichever thread is free. */
void wv_cpu_pool_run(wv_device *dev, size_t n_tasks,
                     void (*fn)(void *arg, size_t task, unsigned worker),
                     void *arg);

extern const wv_backend wv_cpu_backend;  /* cpu.c */

/* cpu_reduce.c */
int wv_cpu_reduce(wv_device *dev, const wv_reduce_job *job,
                  wv_reduce_out *out, wave_error *err);
unsigned wv_cpu_simd_lanes(void);  /* 8 with AVX2, 4 otherwise */
/* cpu_wide.c: the 64-bit dtypes and argmin/argmax (wv_reduce_is_wide) */
int wv_cpu_reduce_wide(wv_device *dev, const wv_reduce_job *job,
                       wv_reduce_out *out, wave_error *err);

/* cpu_hash.c */
struct wv_pack;
int wv_cpu_hash_prepare_step(wv_device *dev, const struct wv_pack *pack,
                             int *done, wave_error *err);
unsigned wv_cpu_hash_prepare_steps(wv_device *dev,
                                   const struct wv_pack *pack);
int wv_cpu_hash_prepare(wv_device *dev, const struct wv_pack *pack,
                        wave_error *err);
int wv_cpu_hash(wv_device *dev, const struct wv_pack *pack, uint64_t nonce,
                uint64_t count, uint64_t *out, wave_error *err);
void wv_cpu_hash_caps(wv_device *dev, wv_caps *caps);

/* cpu_seg.c: the hash_batch slot */
struct wv_hash_batch;
int wv_cpu_hash_batch(wv_device *dev, const struct wv_pack *pack,
                      struct wv_hash_batch *b, wave_error *err);

#endif
