/* health.c - see health.h.  One thread: read every device (outside the
 * lock: a reading may block), publish the round under the lock, wait
 * for the period or the stop on a condition variable (CLOCK_MONOTONIC).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/exec/health.h"
#include "core/base.h"
#include "core/thread.h"

struct wd_health {
  wd_device *const *devs;
  size_t n;
  pthread_t thread;
  pthread_mutex_t mu;     /* now[], stop */
  pthread_cond_t cv;
  int stop;
  wv_health *now;         /* the newest round */
  wv_health *next;        /* the thread's own, being read */
};

static void *hl_main(void *arg)
{
  wd_health *h = arg;
  pthread_mutex_lock(&h->mu);
  while (!h->stop) {
    pthread_mutex_unlock(&h->mu);
    for (size_t i = 0; i < h->n; i++)
      wd_device_health(h->devs[i], &h->next[i]);
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_sec += WD_HEALTH_PERIOD_MS / 1000;
    t.tv_nsec += (long)(WD_HEALTH_PERIOD_MS % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
      t.tv_sec++;
      t.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&h->mu);
    wv_health *x = h->now;
    h->now = h->next;
    h->next = x;
    while (!h->stop &&
           pthread_cond_timedwait(&h->cv, &h->mu, &t) != ETIMEDOUT) {
    }
  }
  pthread_mutex_unlock(&h->mu);
  return NULL;
}

int wd_health_start(wd_device *const *devs, size_t n, wd_health **out,
                    wave_error *err)
{
  *out = NULL;
  wd_health *h = calloc(1, sizeof *h);
  if (h == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  h->devs = devs;
  h->n = n;
  h->now = calloc(n + 1, sizeof *h->now);
  h->next = calloc(n + 1, sizeof *h->next);
  if (h->now == NULL || h->next == NULL) {
    free(h->now);
    free(h->next);
    free(h);
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  }
  for (size_t i = 0; i < n; i++)
    snprintf(h->now[i].why, sizeof h->now[i].why, "not read yet");
  pthread_mutex_init(&h->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&h->cv, &ca);
  pthread_condattr_destroy(&ca);
  int rc = wv_thread_start(&h->thread, "wd:health", hl_main, h);
  if (rc != 0) {
    pthread_cond_destroy(&h->cv);
    pthread_mutex_destroy(&h->mu);
    free(h->now);
    free(h->next);
    free(h);
    return wv_seterr(err, WAVE_EIO, "health thread: %s", strerror(rc));
  }
  *out = h;
  return 0;
}

void wd_health_get(wd_health *h, size_t i, wv_health *out)
{
  pthread_mutex_lock(&h->mu);
  *out = h->now[i];
  pthread_mutex_unlock(&h->mu);
}

void wd_health_stop(wd_health *h)
{
  if (h == NULL)
    return;
  pthread_mutex_lock(&h->mu);
  h->stop = 1;
  pthread_cond_signal(&h->cv);
  pthread_mutex_unlock(&h->mu);
  pthread_join(h->thread, NULL);
  pthread_cond_destroy(&h->cv);
  pthread_mutex_destroy(&h->mu);
  free(h->now);
  free(h->next);
  free(h);
}
