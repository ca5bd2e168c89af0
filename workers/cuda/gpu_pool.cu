/* gpu_pool.cu - the CUDA/HIP backend's copy pool: a few helper threads
 * that, with the calling thread, fill a pinned staging buffer from pageable
 * host memory (gpu_device.cu: one core copies far slower than a pinned DMA
 * moves).  pool_copy cuts the concatenated bytes of its copy_ops into
 * nthreads + 1 equal shares, one per participant, and returns when all are
 * done.  Host code only; built for CUDA and, by hipcc, for HIP.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "workers/cuda/gpu_internal.h"

namespace WVG_NS {

/* Participant `part` of `parts` copies its share of the concatenated
 * bytes of ops. */
static void pool_share(const copy_op *ops, size_t nops, size_t total,
                       int part, int parts)
{
  size_t lo = total * part / parts, hi = total * (part + 1) / parts, at = 0;
  for (size_t i = 0; i < nops && at < hi; i++) {
    size_t a = at, b = at + ops[i].len;
    at = b;
    if (b <= lo)
      continue;
    size_t s = a < lo ? lo - a : 0, e = (b > hi ? hi : b) - a;
    memcpy((char *)ops[i].dst + s, (const char *)ops[i].src + s, e - s);
  }
}

struct pool_arg {
  copy_pool *p;
  int part;
};

static void *pool_main(void *v)
{
  pool_arg *a = (pool_arg *)v;
  copy_pool *p = a->p;
  int part = a->part;
  free(a);
  unsigned long seen = 0;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->stop && p->gen == seen)
      pthread_cond_wait(&p->go, &p->mu);
    if (p->stop)
      break;
    seen = p->gen;
    const copy_op *ops = p->ops;
    size_t nops = p->nops, total = p->total;
    pthread_mutex_unlock(&p->mu);
    pool_share(ops, nops, total, part, p->nthreads + 1);
    pthread_mutex_lock(&p->mu);
    if (--p->pending == 0)
      pthread_cond_signal(&p->done);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

int pool_start(copy_pool *p, int nthreads)
{
  memset(p, 0, sizeof *p);
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->go, NULL);
  pthread_cond_init(&p->done, NULL);
  if (nthreads > 16)
    nthreads = 16;
  for (int i = 0; i < nthreads; i++) {
    pool_arg *a = (pool_arg *)malloc(sizeof *a);
    if (a == NULL)
      break;
    a->p = p;
    a->part = i + 1;
    if (pthread_create(&p->th[i], NULL, pool_main, a) != 0) {
      free(a);
      break;
    }
    p->nthreads++;
  }
  return 0;
}

void pool_stop(copy_pool *p)
{
  pthread_mutex_lock(&p->mu);
  p->stop = 1;
  pthread_cond_broadcast(&p->go);
  pthread_mutex_unlock(&p->mu);
  for (int i = 0; i < p->nthreads; i++)
    pthread_join(p->th[i], NULL);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->go);
  pthread_cond_destroy(&p->done);
}

void pool_copy(copy_pool *p, const copy_op *ops, size_t nops)
{
  size_t total = 0;
  for (size_t i = 0; i < nops; i++)
    total += ops[i].len;
  /* Waking helpers costs more than copying a few hundred KiB. */
  if (p->nthreads == 0 || total < (512u << 10)) {
    pool_share(ops, nops, total, 0, 1);
    return;
  }
  pthread_mutex_lock(&p->mu);
  p->ops = ops;
  p->nops = nops;
  p->total = total;
  p->pending = p->nthreads;
  p->gen++;
  pthread_cond_broadcast(&p->go);
  pthread_mutex_unlock(&p->mu);
  pool_share(ops, nops, total, 0, p->nthreads + 1);
  pthread_mutex_lock(&p->mu);
  while (p->pending > 0)
    pthread_cond_wait(&p->done, &p->mu);
  pthread_mutex_unlock(&p->mu);
}

} /* namespace WVG_NS */
