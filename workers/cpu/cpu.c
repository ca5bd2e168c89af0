/* cpu.c - the CPU backend: device open/close/caps and the thread pool.
 *
 * The pool is persistent (threads start at open and live until close) so
 * that a small job costs a wake-up rather than thread creation.  One run at
 * a time: the device thread publishes a run (fn, arg, task count) under the
 * pool mutex and then works on it itself; workers that see the new
 * generation join the run, pull task numbers from an atomic counter and
 * leave.  The caller returns only after every worker that joined has left,
 * and unpublishes the run in the same critical section, so a late worker
 * can never pick up a task of a finished run (the run lives on the caller's
 * stack).
 *
 * Worker threads block all signals (signals belong to the daemon's loop)
 * and are named "<device>/<n>" for top and gdb.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/base.h"
#include "core/thread.h"
#include "workers/cpu/cpu.h"

#define CPU_MAX_THREADS 1024u

typedef struct cpu_run {
  void (*fn)(void *arg, size_t task, unsigned worker);
  void *arg;
  size_t n_tasks;
  atomic_size_t next;   /* next task number to hand out */
  unsigned busy;        /* workers inside the run (under the pool mutex) */
} cpu_run;

struct wv_cpu_pool {
  pthread_mutex_t mu;
  pthread_cond_t work;  /* a run was published, or stop */
  pthread_cond_t idle;  /* a worker left a run */
  cpu_run *run;         /* the published run, or NULL */
  unsigned long gen;    /* bumped for every published run */
  int stop;
  unsigned n_workers;   /* started threads (threads - 1 when complete) */
  pthread_t *tids;
  struct cpu_worker { struct wv_cpu_pool *pool; unsigned id; } *ws;
};

static void cpu_take_tasks(cpu_run *r, unsigned worker)
{
  for (;;) {
    size_t t = atomic_fetch_add_explicit(&r->next, 1, memory_order_relaxed);
    if (t >= r->n_tasks)
      return;
    r->fn(r->arg, t, worker);
  }
}

static void *cpu_worker_main(void *p)
{
  struct cpu_worker *w = p;
  struct wv_cpu_pool *pool = w->pool;
  unsigned long seen = 0;
  pthread_mutex_lock(&pool->mu);
  for (;;) {
    while (!pool->stop && (pool->run == NULL || pool->gen == seen))
      pthread_cond_wait(&pool->work, &pool->mu);
    if (pool->stop)
      break;
    seen = pool->gen;
    cpu_run *r = pool->run;
    r->busy++;
    pthread_mutex_unlock(&pool->mu);
    cpu_take_tasks(r, w->id);
    pthread_mutex_lock(&pool->mu);
    if (--r->busy == 0)
      pthread_cond_signal(&pool->idle);
  }
  pthread_mutex_unlock(&pool->mu);
  return NULL;
}

void wv_cpu_pool_run(wv_device *dev, size_t n_tasks,
                     void (*fn)(void *arg, size_t task, unsigned worker),
                     void *arg)
{
  struct wv_cpu_pool *pool = dev->pool;
  if (pool == NULL || n_tasks <= 1) {
    for (size_t t = 0; t < n_tasks; t++)
      fn(arg, t, 0);
    return;
  }
  cpu_run r = {.fn = fn, .arg = arg, .n_tasks = n_tasks, .busy = 0};
  atomic_init(&r.next, 0);
  pthread_mutex_lock(&pool->mu);
  pool->run = &r;
  pool->gen++;
  pthread_cond_broadcast(&pool->work);
  pthread_mutex_unlock(&pool->mu);

  cpu_take_tasks(&r, 0);

  pthread_mutex_lock(&pool->mu);
  while (r.busy > 0)
    pthread_cond_wait(&pool->idle, &pool->mu);
  pool->run = NULL;
  pthread_mutex_unlock(&pool->mu);
}

static void cpu_pool_free(struct wv_cpu_pool *pool)
{
  if (pool == NULL)
    return;
  pthread_mutex_lock(&pool->mu);
  pool->stop = 1;
  pthread_cond_broadcast(&pool->work);
  pthread_mutex_unlock(&pool->mu);
  for (unsigned i = 0; i < pool->n_workers; i++)
    pthread_join(pool->tids[i], NULL);
  pthread_cond_destroy(&pool->idle);
  pthread_cond_destroy(&pool->work);
  pthread_mutex_destroy(&pool->mu);
  free(pool->tids);
  free(pool->ws);
  free(pool);
}

static int cpu_pool_start(wv_device *dev, wave_error *err)
{
  unsigned n = dev->threads - 1;
  struct wv_cpu_pool *pool = calloc(1, sizeof *pool);
  if (pool == NULL)
    return wv_seterr(err, WAVE_ENOMEM, "%s: thread pool", dev->name);
  pool->tids = calloc(n, sizeof *pool->tids);
  pool->ws = calloc(n, sizeof *pool->ws);
  if (pool->tids == NULL || pool->ws == NULL) {
    free(pool->tids);
    free(pool->ws);
    free(pool);
    return wv_seterr(err, WAVE_ENOMEM, "%s: thread pool", dev->name);
  }
  pthread_mutex_init(&pool->mu, NULL);
  pthread_cond_init(&pool->work, NULL);
  pthread_cond_init(&pool->idle, NULL);
  dev->pool = pool;

  int rc = 0;
  for (unsigned i = 0; i < n; i++) {
    pool->ws[i] = (struct cpu_worker){pool, i + 1};
    char tname[16];
    snprintf(tname, sizeof tname, "%.10s/%u", dev->name, (i + 1) % 10000u);
    rc = wv_thread_start(&pool->tids[i], tname, cpu_worker_main,
                         &pool->ws[i]);
    if (rc != 0)
      break;
    pool->n_workers++;
  }
  if (rc != 0) {
    /* The caller is thread 1; worker k (from 0) is thread k + 2. */
    unsigned failed = pool->n_workers + 2;
    cpu_pool_free(pool);
    dev->pool = NULL;
    return wv_seterr(err, WAVE_EDEVICE, "%s: starting thread %u of %u: %s",
                     dev->name, failed, dev->threads, strerror(rc));
  }
  return 0;
}

static int cpu_open(const wv_device_config *cfg, wv_device **out,
                    wave_error *err)
{
  unsigned threads = cfg->threads;
  if (threads == 0) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    threads = n > 0 ? (unsigned)n : 1;
    if (threads > CPU_MAX_THREADS)
      threads = CPU_MAX_THREADS;
  }
  if (threads > CPU_MAX_THREADS)
    return wv_seterr(err, WAVE_ECONFIG, "%s: threads %u is more than %u",
                     cfg->name ? cfg->name : "cpu", threads, CPU_MAX_THREADS);
  wv_device *dev = calloc(1, sizeof *dev);
  if (dev == NULL)
    return wv_seterr(err, WAVE_ENOMEM, "cpu device");
  dev->threads = threads;
  dev->simd_lanes = wv_cpu_simd_lanes();
  snprintf(dev->name, sizeof dev->name, "%s", cfg->name ? cfg->name : "cpu");
  if (threads > 1) {
    int rc = cpu_pool_start(dev, err);
    if (rc != 0) {
      free(dev);
      return rc;
    }
  }
  *out = dev;
  return 0;
}

static void cpu_close(wv_device *dev)
{
  if (dev == NULL)
    return;
  if (dev->hash_state != NULL && dev->hash_state_free != NULL)
    dev->hash_state_free(dev->hash_state);
  free(dev->seg_scratch);
  cpu_pool_free(dev->pool);
  free(dev);
}

static void cpu_caps(wv_device *dev, wv_caps *caps)
{
  memset(caps, 0, sizeof *caps);
  snprintf(caps->description, sizeof caps->description,
           "cpu, %u thread%s, %u-lane SIMD", dev->threads,
           dev->threads == 1 ? "" : "s", dev->simd_lanes);
  caps->wave_width = dev->simd_lanes;
  caps->native_wave_reduce = 0;
  caps->dtypes64 = 1;   /* cpu_wide.c */
  caps->argminmax = 1;
  caps->fsum = 1;       /* cpu_xsum.c */
  caps->reads_host_memory = 1;  /* the fake backend's caps are these too */
  wv_cpu_hash_caps(dev, caps);  /* exchange, exchange_reason, hash_batch */
}

const wv_backend wv_cpu_backend = {
  .name = "cpu",
  .open = cpu_open,
  .close = cpu_close,
  .caps = cpu_caps,
  .reduce = wv_cpu_reduce,
  .hash_prepare = wv_cpu_hash_prepare,
  .hash_prepare_step = wv_cpu_hash_prepare_step,
  .hash_prepare_steps = wv_cpu_hash_prepare_steps,
  .hash = wv_cpu_hash,
  .hash_batch = wv_cpu_hash_batch,
};
