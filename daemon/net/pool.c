/* pool.c - the decode threads (see pool.h). */
#include <pthread.h>
#include <stdlib.h>

#include "daemon/net/pool.h"
#include "core/base.h"
#include "core/thread.h"

struct wd_pool {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  wv_qnode items;          /* wd_pool_item.q */
  int stop;
  pthread_t *threads;
  unsigned n;
};

static void *pl_main(void *arg)
{
  wd_pool *p = arg;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (wv_q_empty(&p->items) && !p->stop)
      pthread_cond_wait(&p->cv, &p->mu);
    wv_qnode *n = wv_q_pop(&p->items);
    if (n == NULL)
      break;
    wd_pool_item *it = WV_Q_ENTRY(n, wd_pool_item, q);
    pthread_mutex_unlock(&p->mu);
    it->fn(it);
    pthread_mutex_lock(&p->mu);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

int wd_pool_start(unsigned threads, wd_pool **out, wave_error *err)
{
  *out = NULL;
  wd_pool *p = calloc(1, sizeof *p);
  if (p == NULL || (p->threads = calloc(threads, sizeof *p->threads)) == NULL) {
    free(p);
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  }
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  wv_q_init(&p->items);
  *out = p;
  for (; p->n < threads; p->n++)
    if (wv_thread_start(&p->threads[p->n], "wd:decode", pl_main, p) != 0)
      return wv_seterr(err, WAVE_ENOMEM, "cannot start decode thread %u",
                       p->n);
  return 0;
}

void wd_pool_push(wd_pool *p, wd_pool_item *it)
{
  pthread_mutex_lock(&p->mu);
  wv_q_push(&p->items, &it->q);
  pthread_cond_signal(&p->cv);
  pthread_mutex_unlock(&p->mu);
}

void wd_pool_stop(wd_pool *p)
{
  if (p == NULL)
    return;
  pthread_mutex_lock(&p->mu);
  p->stop = 1;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
  for (unsigned i = 0; i < p->n; i++)
    pthread_join(p->threads[i], NULL);
  p->n = 0;
}

void wd_pool_free(wd_pool *p)
{
  if (p == NULL)
    return;
  wd_pool_stop(p);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->cv);
  free(p->threads);
  free(p);
}
