/* readers.c - the reader pool and the staging rings (see readers.h). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "daemon/bulk/readers.h"
#include "daemon/log.h"
#include "core/base.h"
#include "core/testhook.h"
#include "core/thread.h"
#include "workers/wvdev.h"

/* ---- the pool ------------------------------------------------------------ */

enum { RN_FREE, RN_USED, RN_LENT };

typedef struct rn_buf {
  wv_qnode q;            /* wd_readers.all */
  wv_device *bdev;       /* whose ring; NULL once that device closed */
  uint8_t *p;
  size_t bytes;
  int state;
  int pinned;            /* our pages, pinned with host_register */
  int devmem;            /* the device's own memory (host_alloc): it goes
                            with the device */
} rn_buf;

struct wd_readers {
  pthread_mutex_t mu;
  pthread_cond_t cv;     /* tasks queued, or the size changed */
  pthread_cond_t gone;   /* a thread ended */
  wv_qnode tasks;        /* wd_rtask.q */
  unsigned target;       /* threads to keep: size + replacements */
  unsigned live;         /* threads running; each holds r's memory */
  unsigned spare;        /* replacements outstanding (reads not returned) */
  int stopping;          /* wd_readers_free was called: the last thread
                            out frees r */
  /* the rings */
  pthread_mutex_t rn_mu;
  wv_qnode all;          /* every buffer, newest first */
  const void *said[32];  /* devices told of a refused pin (rn_warned) */
  unsigned n_said;
};

unsigned wd_readers_default(void)
{
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n > 12 ? 12 : (unsigned)n;
}

static void rn_free_all(wd_readers *r, int lent_too);

static void rp_destroy(wd_readers *r)
{
  rn_free_all(r, 1);
  pthread_cond_destroy(&r->gone);
  pthread_cond_destroy(&r->cv);
  pthread_mutex_destroy(&r->rn_mu);
  pthread_mutex_destroy(&r->mu);
  free(r);
}

static void *rp_thread(void *arg)
{
  wd_readers *r = arg;
  pthread_mutex_lock(&r->mu);
  for (;;) {
    while (wv_q_empty(&r->tasks) && !r->stopping && r->live <= r->target)
      pthread_cond_wait(&r->cv, &r->mu);
    if (r->stopping || r->live > r->target)
      break;  /* one over the size (a stuck read came back) ends here */
    wd_rtask *t = WV_Q_ENTRY(wv_q_pop(&r->tasks), wd_rtask, q);
    pthread_mutex_unlock(&r->mu);
    t->run(t);
    pthread_mutex_lock(&r->mu);
  }
  int last = --r->live == 0 && r->stopping == 2;
  pthread_cond_broadcast(&r->gone);
  pthread_mutex_unlock(&r->mu);
  if (last)  /* the pool was freed while this read was stuck */
    rp_destroy(r);
  return NULL;
}

/* Under r->mu: threads up to r->target; 0, or the error of the first
 * that did not start. */
static int rp_fill(wd_readers *r)
{
  while (r->live < r->target) {
    pthread_t t;
    int e = wv_thread_start(&t, "wv-reader", rp_thread, r);
    if (e != 0)
      return e;
    pthread_detach(t);
    r->live++;
  }
  return 0;
}

int wd_readers_new(unsigned n, wd_readers **out, wave_error *err)
{
  *out = NULL;
  if (n == 0)
    n = wd_readers_default();
  if (n > WD_READERS_MAX)
    n = WD_READERS_MAX;
  wd_readers *r = calloc(1, sizeof *r);
  if (r == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  pthread_mutex_init(&r->mu, NULL);
  pthread_mutex_init(&r->rn_mu, NULL);
  pthread_cond_init(&r->cv, NULL);
  pthread_cond_init(&r->gone, NULL);
  wv_q_init(&r->tasks);
  wv_q_init(&r->all);
  pthread_mutex_lock(&r->mu);
  r->target = n;
  int e = rp_fill(r);
  unsigned live = r->live;
  pthread_mutex_unlock(&r->mu);
  if (e != 0 && live == 0) {
    wd_readers_free(r);
    return wv_seterr(err, WAVE_ENOMEM, "cannot start a file reader thread: "
                     "%s", strerror(e));
  }
  if (e != 0)
    wd_warn("file readers: %u of %u started (%s)", live, n, strerror(e));
  *out = r;
  return 0;
}

void wd_readers_free(wd_readers *r)
{
  if (r == NULL)
    return;
  pthread_mutex_lock(&r->mu);
  r->stopping = 1;
  pthread_cond_broadcast(&r->cv);
  /* threads in a read that never returned stay; the others end now */
  struct timespec dl;
  clock_gettime(CLOCK_REALTIME, &dl);
  dl.tv_sec += 2;
  while (r->live > r->spare &&
         pthread_cond_timedwait(&r->gone, &r->mu, &dl) != ETIMEDOUT)
    ;
  pthread_mutex_unlock(&r->mu);
  rn_free_all(r, 0);
  pthread_mutex_lock(&r->mu);
  r->stopping = 2;  /* from here the last thread out frees r */
  int last = r->live == 0;
  pthread_mutex_unlock(&r->mu);
  if (last)
    rp_destroy(r);
}

unsigned wd_readers_size(wd_readers *r)
{
  pthread_mutex_lock(&r->mu);
  unsigned n = r->target;
  pthread_mutex_unlock(&r->mu);
  return n;
}

unsigned wd_readers_stuck(wd_readers *r)
{
  pthread_mutex_lock(&r->mu);
  unsigned n = r->spare;
  pthread_mutex_unlock(&r->mu);
  return n;
}

void wd_readers_post(wd_readers *r, wd_rtask *t)
{
  pthread_mutex_lock(&r->mu);
  wv_q_push(&r->tasks, &t->q);
  pthread_cond_signal(&r->cv);
  pthread_mutex_unlock(&r->mu);
}

void wd_readers_grow(wd_readers *r, unsigned k)
{
  pthread_mutex_lock(&r->mu);
  r->spare += k;
  if (!r->stopping) {
    r->target += k;
    int e = rp_fill(r);
    if (e != 0)
      wd_warn("file readers: no replacement for a stuck reader (%s)",
              strerror(e));
  }
  pthread_mutex_unlock(&r->mu);
}

void wd_readers_shrink(wd_readers *r, unsigned k)
{
  pthread_mutex_lock(&r->mu);
  k = k < r->spare ? k : r->spare;
  r->spare -= k;
  r->target = r->target > k ? r->target - k : 0;
  pthread_cond_broadcast(&r->cv);  /* one over the size ends */
  pthread_mutex_unlock(&r->mu);
}

/* ---- the rings ----------------------------------------------------------- */

#define RN_OF(n) WV_Q_ENTRY(n, rn_buf, q)

/* Whether a ring pin refusal was said for dev already (said once at warn
 * level per device: a driver that refuses one buffer refuses them all). */
static int rn_warned(wd_readers *r, const wv_dev *dev)
{
  int seen = 0;
  pthread_mutex_lock(&r->rn_mu);
  for (unsigned i = 0; i < r->n_said && !seen; i++)
    seen = r->said[i] == dev->impl;
  if (!seen && r->n_said < 32)
    r->said[r->n_said++] = dev->impl;
  pthread_mutex_unlock(&r->rn_mu);
  return seen;
}

/* Device thread: g's memory back (the device is open). */
static void rn_release(const wv_dev *dev, rn_buf *g)
{
  if (g->devmem) {
    wv_dev_host_free(dev, g->p, g->bytes);
  } else {
    if (g->pinned)
      wv_dev_host_unregister(dev, g->p, g->bytes);
    munmap(g->p, g->bytes);
  }
  free(g);
}

/* A new buffer for dev: the device's own memory where its backend gives
 * it (host_alloc; WAVED_RING_ALLOC=0, for tests, says no), else our pages,
 * pinned where the backend can. */
static rn_buf *rn_make(wd_readers *r, const wv_dev *dev, size_t bytes)
{
  rn_buf *g = calloc(1, sizeof *g);
  if (g == NULL)
    return NULL;
  *g = (rn_buf){.bdev = dev->impl, .bytes = bytes, .state = RN_USED};
  const char *env = wv_test_hook("WAVED_RING_ALLOC");
  void *p = NULL;
  wave_error e = {0};
  if (env == NULL || strcmp(env, "0") != 0) {
    if (wv_dev_host_alloc(dev, bytes, &p, &e) == 0) {
      g->p = p;
      g->devmem = 1;
      return g;
    }
    if (e.code != WAVE_EUNSUPPORTED)  /* the slot is there and said no */
      wd_debug("%s: no staging ring buffer of the device's own (%s); our "
               "pages instead", dev->be->name, e.message);
    e = (wave_error){0};
  }
  p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
           -1, 0);
  if (p == MAP_FAILED) {
    free(g);
    return NULL;
  }
  g->p = p;
  /* once per buffer, kept: DMA straight from it for every job after */
  if (wv_dev_can_pin(dev) && wv_dev_host_register(dev, p, bytes, &e) == 0)
    g->pinned = 1;
  else if (wv_dev_can_pin(dev))  /* the device copies each slot: slower */
    wd_log(rn_warned(r, dev) ? WD_LOG_DEBUG : WD_LOG_WARN, "%s: a staging "
           "ring buffer of %zu bytes cannot be pinned (%s); the device "
           "copies each slot itself", dev->be->name, bytes, e.message);
  return g;
}

int wd_ring_take(wd_readers *r, const wv_dev *dev, size_t bytes,
                 unsigned n, uint8_t **bufs, wave_error *err)
{
  unsigned got = 0;
  wv_qnode drop, *q, *nx;
  wv_q_init(&drop);
  pthread_mutex_lock(&r->rn_mu);
  WV_Q_EACH_SAFE(q, nx, &r->all) {
    rn_buf *g = RN_OF(q);
    if (g->bdev == dev->impl && g->state == RN_FREE && g->bytes >= bytes &&
        got < n) {
      g->state = RN_USED;
      bufs[got++] = g->p;
    } else if (g->bdev == dev->impl && g->state == RN_FREE &&
               g->bytes < bytes) {
      /* too small (a job of 8-byte rows after 4-byte ones, or
       * WAVED_FILE_LEVELS): not kept; larger ones serve every job */
      wv_q_remove(q);
      wv_q_push(&drop, q);
    }
  }
  pthread_mutex_unlock(&r->rn_mu);
  while ((q = wv_q_pop(&drop)) != NULL)
    rn_release(dev, RN_OF(q));
  while (got < n) {
    rn_buf *g = rn_make(r, dev, bytes);
    if (g == NULL) {
      wd_ring_give(r, dev->impl, bufs, NULL, got);
      return wv_seterr(err, WAVE_ENOMEM, "file region buffers (%u x %zu "
                       "bytes)", n, bytes);
    }
    pthread_mutex_lock(&r->rn_mu);
    wv_q_push_head(&r->all, &g->q);
    pthread_mutex_unlock(&r->rn_mu);
    bufs[got++] = g->p;
  }
  return 0;
}

void wd_ring_give(wd_readers *r, wv_device *bdev, uint8_t *const *bufs,
                  const int *lent, unsigned n)
{
  pthread_mutex_lock(&r->rn_mu);
  wv_qnode *q;
  for (unsigned i = 0; i < n; i++)
    WV_Q_EACH(q, &r->all) {
      rn_buf *g = RN_OF(q);
      if (g->p == bufs[i] && g->bdev == bdev) {
        g->state = lent != NULL && lent[i] ? RN_LENT : RN_FREE;
        break;
      }
    }
  pthread_mutex_unlock(&r->rn_mu);
}

void wd_ring_return(wd_readers *r, uint8_t *buf)
{
  wv_qnode *q;
  pthread_mutex_lock(&r->rn_mu);
  WV_Q_EACH(q, &r->all)
    if (RN_OF(q)->p == buf && RN_OF(q)->state == RN_LENT) {
      RN_OF(q)->state = RN_FREE;
      break;
    }
  pthread_mutex_unlock(&r->rn_mu);
}

void wd_ring_forget(wd_readers *r, const wv_dev *dev)
{
  wv_qnode drop, *q, *nx;
  wv_q_init(&drop);
  pthread_mutex_lock(&r->rn_mu);
  WV_Q_EACH_SAFE(q, nx, &r->all) {
    rn_buf *g = RN_OF(q);
    if (g->bdev != dev->impl)
      continue;
    if (g->state != RN_LENT || g->devmem) {
      /* a lent buffer of the device's memory goes with the device all the
       * same: the read still inside it gets EFAULT (the kernel's copy),
       * and its wd_ring_return finds nothing */
      wv_q_remove(q);
      wv_q_push(&drop, q);
      continue;
    }
    if (g->pinned)  /* lent pages stay until rn_free_all, unpinned */
      wv_dev_host_unregister(dev, g->p, g->bytes);
    g->pinned = 0;
    g->bdev = NULL;
  }
  pthread_mutex_unlock(&r->rn_mu);
  while ((q = wv_q_pop(&drop)) != NULL)
    rn_release(dev, RN_OF(q));
}

/* The pool stopped and the devices are closed (wd_ring_forget gave back
 * their buffers): every buffer goes, but those lent to a read still out
 * unless lent_too (the last reader ended). */
static void rn_free_all(wd_readers *r, int lent_too)
{
  wv_qnode *q, *nx;
  pthread_mutex_lock(&r->rn_mu);
  WV_Q_EACH_SAFE(q, nx, &r->all) {
    rn_buf *g = RN_OF(q);
    if (g->state == RN_LENT && !lent_too)
      continue;
    wv_q_remove(q);
    if (!g->devmem)
      munmap(g->p, g->bytes);
    free(g);
  }
  pthread_mutex_unlock(&r->rn_mu);
}
