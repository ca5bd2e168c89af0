/* pool.c - the decode threads (see pool.h).
 *
 * Two FIFOs under one mutex: small items, and big ones (a request whose
 * decode may take milliseconds, a big answered request to free).  A
 * thread takes a small item first; it takes a big one only while fewer
 * than big_max threads run big ones, and big_max is one less than the
 * threads, so one thread is always left for the small items (issue 35: a
 * 1-row sum's decode must not wait behind the 3 s decode of 4M chunks, or
 * behind a second one).  A pool asked for one thread starts two: one of
 * them takes small items only.
 */
#include <pthread.h>
#include <stdlib.h>

#include "daemon/net/pool.h"
#include "core/base.h"
#include "core/thread.h"

struct wd_pool {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  wv_qnode items;          /* wd_pool_item.q: the small ones */
  wv_qnode big;            /* ... the big ones */
  unsigned big_run, big_max;  /* threads running a big item, at most */
  int stop;
  pthread_t *threads;
  unsigned n;
};

/* The next item this thread may take (under mu), or NULL. */
static wd_pool_item *pl_take(wd_pool *p)
{
  wv_qnode *n = wv_q_pop(&p->items);
  if (n == NULL && p->big_run < p->big_max && (n = wv_q_pop(&p->big)) != NULL)
    p->big_run++;
  return n != NULL ? WV_Q_ENTRY(n, wd_pool_item, q) : NULL;
}

static void *pl_main(void *arg)
{
  wd_pool *p = arg;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    wd_pool_item *it = pl_take(p);
    if (it == NULL) {
      if (p->stop && wv_q_empty(&p->items) && wv_q_empty(&p->big))
        break;
      pthread_cond_wait(&p->cv, &p->mu);
      continue;
    }
    pthread_mutex_unlock(&p->mu);
    int big = it->big;  /* it may be freed by its fn */
    it->fn(it);
    pthread_mutex_lock(&p->mu);
    if (big) {
      p->big_run--;
      if (!wv_q_empty(&p->big))  /* a thread waiting may take it now */
        pthread_cond_signal(&p->cv);
    }
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

int wd_pool_start(unsigned threads, wd_pool **out, wave_error *err)
{
  *out = NULL;
  if (threads < 2)
    threads = 2;  /* one of them for small items only */
  wd_pool *p = calloc(1, sizeof *p);
  if (p == NULL || (p->threads = calloc(threads, sizeof *p->threads)) == NULL) {
    free(p);
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  }
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  wv_q_init(&p->items);
  wv_q_init(&p->big);
  p->big_max = threads - 1;
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
  wv_q_push(it->big ? &p->big : &p->items, &it->q);
  /* one is enough: the waiting threads follow the same rule, so if one
   * may not take a big item now, none may (one wakes when a big ends) */
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
