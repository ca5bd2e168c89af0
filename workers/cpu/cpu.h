/* cpu.h - the CPU backend's device context, shared by the files of
 * workers/cpu/ (cpu.c: device and thread pool; cpu_items.c: a reduction
 * cut into items, planned on the op table, and their merge; cpu_reduce.c:
 * the 32-bit item kernels; cpu_wide.c: the 64-bit ones and argmin/argmax;
 * cpu_xsum.c: fsum, the exact float sum;
 * cpu_hash.c: hash jobs; cpu_seg.c: hash batches folded on the pool).
 *
 * A CPU device is a persistent pool of `threads` threads, the calling device
 * thread included: wv_cpu_pool_run() hands out task numbers to all of them
 * and returns when every task has run.  Like every device context it is used
 * by one device thread only, so the pool never sees two runs at once.
 */
#ifndef WV_CPU_H
#define WV_CPU_H

#include <stddef.h>
#include <stdint.h>

#include "core/optable.h"
#include "core/xsum.h"
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

/* cpu_items.c: the reduce slot.  Every non-empty input chunk is cut into
 * items of WV_CPU_ITEM_ROWS rows from its first row (a chunk's last item
 * may be shorter), batched into pool tasks of at least as many rows; one
 * kernel, picked by the op table's plan, fills each item's partial. */
int wv_cpu_reduce(wv_device *dev, const wv_reduce_job *job,
                  wv_reduce_out *out, wave_error *err);

#define WV_CPU_ITEM_ROWS 65536u  /* WV_GROUP * WV_GROUP: one level-2 group */

typedef struct wv_cpu_item {
  size_t chunk;      /* input chunk */
  uint64_t start;    /* first row within the chunk, a multiple of 65536 */
  uint64_t rows;     /* <= WV_CPU_ITEM_ROWS */
  uint64_t lrow;     /* global (logical) row of start: mask and index */
  uint64_t a, b;     /* accumulator; lo/hi keys (none: lo > hi); (arg) the
                        best key; (float sum) the level-2 value's bits */
  uint64_t index;    /* arg: global index of the best key */
  uint64_t count;    /* rows selected (arg: considered) */
} wv_cpu_item;

typedef struct wv_cpu_job {
  const wv_reduce_job *job;
  const wv_op_plan *plan;   /* the op table's row of the job */
  wv_cpu_item *items;
  size_t n_items;
  size_t *task_first;  /* task t = items [task_first[t], task_first[t+1]) */
  size_t n_tasks;
  uint64_t *mbase;     /* mask chunk i = logical rows [mbase[i], mbase[i+1]) */
  struct wv_cpu_xacc *xacc;  /* fsum: one accumulator per pool worker */
} wv_cpu_job;

/* Mask rows from logical row `row`: a pointer into the mask chunk holding
 * it and, in *avail, how many rows of that chunk are left from there.  *k
 * is the caller's cursor (a chunk index, start 0), tried before a binary
 * search. */
const unsigned char *wv_cpu_mask_run(const wv_cpu_job *c, uint64_t row,
                                     size_t *k, uint64_t *avail);
/* n contiguous mask rows from `row`; copied into buf (4 n bytes) only when
 * they straddle mask chunks. */
const unsigned char *wv_cpu_mask_rows(const wv_cpu_job *c, uint64_t row,
                                      size_t n, size_t *k,
                                      unsigned char *buf);

/* The item kernels.  cpu_reduce.c: the 32-bit accumulating and keyed ops
 * (vectorized, AVX2 clones) and the float32 sum; cpu_wide.c: the 64-bit
 * ones, the float64 sum, and argmin/argmax of every width. */
void wv_cpu_scan32(const wv_cpu_job *c, wv_cpu_item *it);
void wv_cpu_fsum32(const wv_cpu_job *c, wv_cpu_item *it);
void wv_cpu_scan64(const wv_cpu_job *c, wv_cpu_item *it);
void wv_cpu_fsum64(const wv_cpu_job *c, wv_cpu_item *it);
unsigned wv_cpu_simd_lanes(void);  /* cpu_reduce.c: 8 with AVX2, else 4 */

/* cpu_xsum.c: fsum.  An item's rows go into the accumulator of the pool
 * worker running it (c->xacc, one per worker; its count into the item);
 * the n workers' accumulators then give the job's exact sum. */
typedef struct wv_cpu_xacc wv_cpu_xacc;
wv_cpu_xacc *wv_cpu_xacc_new(unsigned n, wave_dtype dt);  /* free() */
void wv_cpu_xsum_item(const wv_cpu_job *c, wv_cpu_item *it,
                      unsigned worker);
void wv_cpu_xacc_result(wv_cpu_xacc *a, unsigned n, int f64, wv_xsum *out);

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
