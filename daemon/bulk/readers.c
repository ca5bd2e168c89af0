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

static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;     /* tasks queued, or the size changed */
  pthread_cond_t gone;   /* a thread ended */
  wv_qnode tasks;        /* wd_rtask.q */
  unsigned refs;         /* wd_readers_start calls not stopped */
  unsigned target;       /* threads to keep: size + replacements */
  unsigned live;         /* threads running */
  unsigned spare;        /* replacements outstanding (reads not returned) */
  int stopping;
} rp = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
        PTHREAD_COND_INITIALIZER, {&rp.tasks, &rp.tasks}, 0, 0, 0, 0, 0};

unsigned wd_readers_default(void)
{
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n > 12 ? 12 : (unsigned)n;
}

static void *rp_thread(void *arg)
{
  (void)arg;
  pthread_mutex_lock(&rp.mu);
  for (;;) {
    while (wv_q_empty(&rp.tasks) && !rp.stopping && rp.live <= rp.target)
      pthread_cond_wait(&rp.cv, &rp.mu);
    if (rp.stopping || rp.live > rp.target)
      break;  /* one over the size (a stuck read came back) ends here */
    wd_rtask *t = WV_Q_ENTRY(wv_q_pop(&rp.tasks), wd_rtask, q);
    pthread_mutex_unlock(&rp.mu);
    t->run(t);
    pthread_mutex_lock(&rp.mu);
  }
  rp.live--;
  pthread_cond_broadcast(&rp.gone);
  pthread_mutex_unlock(&rp.mu);
  return NULL;
}

/* Under rp.mu: threads up to rp.target; 0, or the error of the first that
 * did not start. */
static int rp_fill(void)
{
  while (rp.live < rp.target) {
    pthread_t t;
    int e = wv_thread_start(&t, "wv-reader", rp_thread, NULL);
    if (e != 0)
      return e;
    pthread_detach(t);
    rp.live++;
  }
  return 0;
}

int wd_readers_start(unsigned n, wave_error *err)
{
  if (n == 0)
    n = wd_readers_default();
  if (n > WD_READERS_MAX)
    n = WD_READERS_MAX;
  pthread_mutex_lock(&rp.mu);
  if (rp.refs++ == 0) {
    rp.stopping = 0;
    rp.target = n + rp.spare;
  }
  int e = rp_fill();
  unsigned live = rp.live;
  pthread_mutex_unlock(&rp.mu);
  if (e != 0 && live == 0) {
    wd_readers_stop();
    return wv_seterr(err, WAVE_ENOMEM, "cannot start a file reader thread: "
                     "%s", strerror(e));
  }
  if (e != 0)
    wd_warn("file readers: %u of %u started (%s)", live, n, strerror(e));
  return 0;
}

static void rn_free_all(void);

void wd_readers_stop(void)
{
  pthread_mutex_lock(&rp.mu);
  if (rp.refs == 0 || --rp.refs > 0) {
    pthread_mutex_unlock(&rp.mu);
    return;
  }
  rp.stopping = 1;
  pthread_cond_broadcast(&rp.cv);
  /* threads in a read that never returned stay; the others end now */
  struct timespec dl;
  clock_gettime(CLOCK_REALTIME, &dl);
  dl.tv_sec += 2;
  while (rp.live > rp.spare &&
         pthread_cond_timedwait(&rp.gone, &rp.mu, &dl) != ETIMEDOUT)
    ;
  rp.target = 0;
  pthread_mutex_unlock(&rp.mu);
  rn_free_all();
}

unsigned wd_readers_size(void)
{
  pthread_mutex_lock(&rp.mu);
  unsigned n = rp.refs > 0 ? rp.target : 0;
  pthread_mutex_unlock(&rp.mu);
  return n;
}

int wd_readers_post(wd_rtask *t, wave_error *err)
{
  pthread_mutex_lock(&rp.mu);
  int lazy = rp.refs == 0;
  pthread_mutex_unlock(&rp.mu);
  /* a daemon starts the pool with its config (wd_bulk_new); this is for
   * a caller without one, and stays for the process */
  if (lazy && wd_readers_start(0, err) != 0)
    return err->code;
  pthread_mutex_lock(&rp.mu);
  wv_q_push(&rp.tasks, &t->q);
  pthread_cond_signal(&rp.cv);
  pthread_mutex_unlock(&rp.mu);
  return 0;
}

void wd_readers_grow(unsigned k)
{
  pthread_mutex_lock(&rp.mu);
  rp.spare += k;
  if (rp.refs > 0) {
    rp.target += k;
    int e = rp_fill();
    if (e != 0)
      wd_warn("file readers: no replacement for a stuck reader (%s)",
              strerror(e));
  }
  pthread_mutex_unlock(&rp.mu);
}

void wd_readers_shrink(unsigned k)
{
  pthread_mutex_lock(&rp.mu);
  k = k < rp.spare ? k : rp.spare;
  rp.spare -= k;
  rp.target = rp.target > k ? rp.target - k : 0;
  pthread_cond_broadcast(&rp.cv);  /* one over the size ends */
  pthread_mutex_unlock(&rp.mu);
}

/* ---- the rings ----------------------------------------------------------- */

enum { RN_FREE, RN_USED, RN_LENT };

typedef struct rn_buf {
  wv_qnode q;            /* rn_all */
  wv_device *bdev;       /* whose ring; NULL once that device closed */
  uint8_t *p;
  size_t bytes;
  int state;
  int pinned;            /* our pages, pinned with host_register */
  int devmem;            /* the device's own memory (host_alloc): it goes
                            with the device */
} rn_buf;

static pthread_mutex_t rn_mu = PTHREAD_MUTEX_INITIALIZER;
static wv_qnode rn_all = {&rn_all, &rn_all};  /* every buffer, newest first */

#define RN_OF(n) WV_Q_ENTRY(n, rn_buf, q)

/* Whether a ring pin refusal was said for dev already (said once at warn
 * level per device: a driver that refuses one buffer refuses them all). */
static int rn_warned(const wv_dev *dev)
{
  static const void *said[32];
  static unsigned n_said;
  int seen = 0;
  pthread_mutex_lock(&rn_mu);
  for (unsigned i = 0; i < n_said && !seen; i++)
    seen = said[i] == dev->impl;
  if (!seen && n_said < 32)
    said[n_said++] = dev->impl;
  pthread_mutex_unlock(&rn_mu);
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
static rn_buf *rn_make(const wv_dev *dev, size_t bytes)
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
    wd_log(rn_warned(dev) ? WD_LOG_DEBUG : WD_LOG_WARN, "%s: a staging "
           "ring buffer of %zu bytes cannot be pinned (%s); the device "
           "copies each slot itself", dev->be->name, bytes, e.message);
  return g;
}

int wd_ring_take(const wv_dev *dev, size_t bytes,
                 unsigned n, uint8_t **bufs, wave_error *err)
{
  unsigned got = 0;
  wv_qnode drop, *q, *nx;
  wv_q_init(&drop);
  pthread_mutex_lock(&rn_mu);
  WV_Q_EACH_SAFE(q, nx, &rn_all) {
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
  pthread_mutex_unlock(&rn_mu);
  while ((q = wv_q_pop(&drop)) != NULL)
    rn_release(dev, RN_OF(q));
  while (got < n) {
    rn_buf *g = rn_make(dev, bytes);
    if (g == NULL) {
      wd_ring_give(dev->impl, bufs, NULL, got);
      return wv_seterr(err, WAVE_ENOMEM, "file region buffers (%u x %zu "
                       "bytes)", n, bytes);
    }
    pthread_mutex_lock(&rn_mu);
    wv_q_push_head(&rn_all, &g->q);
    pthread_mutex_unlock(&rn_mu);
    bufs[got++] = g->p;
  }
  return 0;
}

void wd_ring_give(wv_device *bdev, uint8_t *const *bufs, const int *lent,
                  unsigned n)
{
  pthread_mutex_lock(&rn_mu);
  wv_qnode *q;
  for (unsigned i = 0; i < n; i++)
    WV_Q_EACH(q, &rn_all) {
      rn_buf *g = RN_OF(q);
      if (g->p == bufs[i] && g->bdev == bdev) {
        g->state = lent != NULL && lent[i] ? RN_LENT : RN_FREE;
        break;
      }
    }
  pthread_mutex_unlock(&rn_mu);
}

void wd_ring_return(uint8_t *buf)
{
  wv_qnode *q;
  pthread_mutex_lock(&rn_mu);
  WV_Q_EACH(q, &rn_all)
    if (RN_OF(q)->p == buf && RN_OF(q)->state == RN_LENT) {
      RN_OF(q)->state = RN_FREE;
      break;
    }
  pthread_mutex_unlock(&rn_mu);
}

void wd_ring_forget(const wv_dev *dev)
{
  wv_qnode drop, *q, *nx;
  wv_q_init(&drop);
  pthread_mutex_lock(&rn_mu);
  WV_Q_EACH_SAFE(q, nx, &rn_all) {
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
  pthread_mutex_unlock(&rn_mu);
  while ((q = wv_q_pop(&drop)) != NULL)
    rn_release(dev, RN_OF(q));
}

/* The pool stopped and the devices are closed (wd_ring_forget gave back
 * their buffers): every buffer not lent to a read still out goes. */
static void rn_free_all(void)
{
  wv_qnode *q, *nx;
  pthread_mutex_lock(&rn_mu);
  WV_Q_EACH_SAFE(q, nx, &rn_all) {
    rn_buf *g = RN_OF(q);
    if (g->state == RN_LENT)
      continue;
    wv_q_remove(q);
    if (!g->devmem)
      munmap(g->p, g->bytes);
    free(g);
  }
  pthread_mutex_unlock(&rn_mu);
}
