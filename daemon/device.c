/* device.c - the device threads (see device.h).
 *
 * Each device is a thread with a mutex, a condition variable and two FIFO
 * queues, in the manner of Valkey's bio.c: the loop appends under the mutex
 * and signals; the thread pops, runs the job with the mutex released, and
 * hands the finished work to the post callback.  The thread is created with
 * every signal blocked (signals belong to the loop's uv_signal handles) and
 * named "wd:<device>" so it shows up in top/gdb.  It is the only thread that
 * calls the backend: open, the pack self-checks, jobs, close.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/device.h"
#include "daemon/hashjob.h"
#include "daemon/log.h"
#include "daemon/region.h"
#include "proto/base.h"

#define DV_DEFAULT_BATCH (1u << 16)
#define DV_MAX_BATCH (1u << 24)  /* 128 MiB of outputs at most */

struct wd_device {
  wd_device_cfg cfg;
  wv_device_config bcfg;
  const wv_backend *backend;
  wv_device *bdev;            /* device thread only */
  wv_caps caps;               /* written before `opened`, then constant */
  unsigned hash_slots;        /* limits.jobs_in_flight */

  const wv_pack *const *packs;
  size_t n_packs;
  wd_pack_state *checks;      /* under mu */

  wd_post_fn post;
  void *post_arg;

  pthread_t thread;
  int thread_started;
  pthread_mutex_t mu;
  pthread_cond_t cv;          /* work arrived, stop, or opened */
  wd_work *rq_head, **rq_tail;   /* reductions */
  unsigned rq_n;
  wd_work *hq_head, **hq_tail;   /* hash jobs not started */
  unsigned hash_n;            /* hash jobs queued + running */
  int reduce_running;
  int opened, open_rc, stop;

  _Atomic int faulted;
  char fault[200];            /* under mu */
  _Atomic int running;
  _Atomic uint64_t done, failed;

  uint64_t *hbuf;             /* device thread: hash batch outputs */
  uint64_t hbatch;
  uint64_t steps;             /* device thread: reductions + hash batches */
  unsigned slot;              /* index among the daemon's devices */
  struct dv_unpin *unpins;    /* under mu: regions to unpin (region.h) */
  int joined;                 /* the thread has ended: unpin in place */
};

struct dv_unpin {
  struct dv_unpin *next;
  wd_region *r;
};

/* Device thread (or after it ended): unpin what was asked, in order. */
static void dv_unpin_all(wd_device *d, struct dv_unpin *u)
{
  while (u != NULL) {
    struct dv_unpin *nx = u->next;
    wd_region_unpin(u->r, d->slot, d->backend, d->joined ? NULL : d->bdev);
    free(u);
    u = nx;
  }
}

void wd_device_unpin(wd_device *d, wd_region *r)
{
  struct dv_unpin *u = calloc(1, sizeof *u);
  pthread_mutex_lock(&d->mu);
  if (u == NULL || d->joined) {
    pthread_mutex_unlock(&d->mu);
    free(u);
    /* no thread to do it (or no memory to ask): the context is gone or
     * going; drop the pin's bookkeeping and unmap */
    wd_region_unpin(r, d->slot, d->backend, NULL);
    return;
  }
  u->r = r;
  u->next = d->unpins;
  d->unpins = u;
  pthread_cond_broadcast(&d->cv);
  pthread_mutex_unlock(&d->mu);
}

static double dv_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Mark the device faulted (device thread).  The first fault's reason sticks. */
static void dv_fault(wd_device *d, const char *why)
{
  pthread_mutex_lock(&d->mu);
  if (!atomic_load(&d->faulted))
    snprintf(d->fault, sizeof d->fault, "%.199s", why);
  atomic_store(&d->faulted, 1);
  pthread_mutex_unlock(&d->mu);
  wd_error("device %s faulted: %s", d->cfg.name, why);
}

/* fault_after (a testing aid, docs/config.md): once the device has run
 * that many reductions and hash batches, the next one fails as a GPU that
 * died would (WAVE_EDEVICE), so the daemon's fault handling can be tested
 * on any machine.  Device thread. */
static int dv_injected_fault(wd_device *d, wave_error *err)
{
  if (d->cfg.fault_after == 0 || d->steps < d->cfg.fault_after) {
    d->steps++;
    return 0;
  }
  return wv_seterr(err, WAVE_EDEVICE, "injected fault after %llu jobs "
                   "(fault_after)", (unsigned long long)d->steps);
}

static void dv_run_reduce(wd_device *d, wd_work *w)
{
  if (atomic_load(&d->faulted)) {
    pthread_mutex_lock(&d->mu);
    wv_seterr(&w->err, WAVE_EDEVFAULT, "device %s is faulted: %s", d->cfg.name,
              d->fault);
    pthread_mutex_unlock(&d->mu);
    w->rc = WAVE_EDEVFAULT;
    return;
  }
  memset(&w->out, 0, sizeof w->out);
  double t0 = dv_now();
  /* regions are pinned at their first use on this device (timed with it) */
  for (size_t i = 0; i < w->n_regions && d->backend->host_register; i++)
    wd_region_pin(w->regions[i], d->slot, d->backend, d->bdev);
  w->rc = dv_injected_fault(d, &w->err);
  if (w->rc == 0)
    w->rc = d->backend->reduce(d->bdev, &w->job, &w->out, &w->err);
  w->seconds = dv_now() - t0;
  if (w->rc == WAVE_EDEVICE) {
    dv_fault(d, w->err.message);
    w->rc = wv_seterr(&w->err, WAVE_EDEVFAULT, "device %s faulted: %s",
                      d->cfg.name, d->fault);
  }
}

/* The known-answer self-check of pack i.  The checks are the thread's first
 * hash work; reductions that arrive meanwhile go first (a pack's dataset can
 * take seconds to build on a CPU). */
static void dv_selfcheck(wd_device *d, size_t i)
{
  const wv_pack *p = d->packs[i];
  wd_pack_state st = {.state = WD_CHECK_OK};
  wave_error err = {0};
  /* wv_pack_selfcheck also runs the backend's hash_prepare (dataset) */
  int rc = wv_pack_selfcheck(d->backend, d->bdev, p, st.detail,
                             sizeof st.detail, &err);
  if (rc != 0) {
    st.state = WD_CHECK_FAILED;
    if (st.detail[0] == '\0')
      snprintf(st.detail, sizeof st.detail, "%.159s", err.message);
    if (rc == WAVE_EDEVICE)
      dv_fault(d, err.message);
    wd_warn("device %s: pack %s failed its self-check: %s", d->cfg.name,
            wv_pack_name(p), st.detail);
  } else {
    if (st.detail[0] == '\0')
      snprintf(st.detail, sizeof st.detail, "known answers reproduced");
    wd_info("device %s: pack %s self-check ok", d->cfg.name, wv_pack_name(p));
  }
  pthread_mutex_lock(&d->mu);
  d->checks[i] = st;
  pthread_mutex_unlock(&d->mu);
}

/* One hash batch of w; returns 1 when the job ended. */
static int dv_hash_step(wd_device *d, wd_work *w)
{
  if (d->hbuf == NULL && !atomic_load(&d->faulted)) {
    d->hbuf = malloc(d->hbatch * sizeof *d->hbuf);
    if (d->hbuf == NULL) {
      w->rc = wv_seterr(&w->err, WAVE_ENOMEM,
                        "device %s: no memory for a batch of %llu outputs",
                        d->cfg.name, (unsigned long long)d->hbatch);
      wd_hjob_abort(w);
      return 1;
    }
  }
  wave_error inj = {0};
  if (!atomic_load(&d->faulted) && dv_injected_fault(d, &inj) != 0)
    dv_fault(d, inj.message);
  wd_pack_state check;
  size_t pi = wd_hjob_pack_index(w);
  pthread_mutex_lock(&d->mu);
  check = d->checks[pi];
  pthread_mutex_unlock(&d->mu);
  wd_hash_env env = {
    .backend = d->backend,
    .bdev = d->bdev,
    .device = d->cfg.name,
    .exchange = d->caps.exchange,
    .batch = d->hbatch,
    .buf = d->hbuf,
    .verify = strcmp(d->backend->name, "cpu") != 0,
    .faulted = atomic_load(&d->faulted),
    .check = &check,
  };
  int ended = wd_hjob_step(w, &env);
  if (env.fault)
    dv_fault(d, env.fault_msg);
  return ended;
}

static void *dv_main(void *arg)
{
  wd_device *d = arg;
  char tname[16];  /* the kernel keeps 15 bytes of a thread name */
  snprintf(tname, sizeof tname, "wd:%.12s", d->cfg.name);
  pthread_setname_np(pthread_self(), tname);

  wave_error err = {0};
  int rc = d->backend->open(&d->bcfg, &d->bdev, &err);
  if (rc == 0) {
    d->backend->caps(d->bdev, &d->caps);
    /* The configured batch wins (docs/config.md), then the backend's. */
    d->hbatch = d->cfg.batch         ? d->cfg.batch
                : d->caps.hash_batch ? d->caps.hash_batch
                                     : DV_DEFAULT_BATCH;
    if (d->hbatch > DV_MAX_BATCH)
      d->hbatch = DV_MAX_BATCH;
    wd_info("device %s (%s) open: %s, wave width %u", d->cfg.name,
            d->backend->name, d->caps.description, d->caps.wave_width);
  } else {
    d->bdev = NULL;
    wd_error("device %s (%s) failed to open: %s", d->cfg.name,
             d->backend->name, err.message);
  }
  pthread_mutex_lock(&d->mu);
  d->opened = 1;
  d->open_rc = rc;
  if (rc != 0) {
    snprintf(d->fault, sizeof d->fault, "open failed: %.180s", err.message);
    atomic_store(&d->faulted, 1);
    for (size_t i = 0; i < d->n_packs; i++) {
      d->checks[i].state = WD_CHECK_FAILED;
      snprintf(d->checks[i].detail, sizeof d->checks[i].detail,
               "device did not open");
    }
  }
  pthread_cond_broadcast(&d->cv);
  pthread_mutex_unlock(&d->mu);

  /* the pack self-checks still to run (none without hash support) */
  size_t next_check = rc == 0 && d->backend->hash != NULL ? 0 : d->n_packs;
  wd_work *hcur = NULL;  /* the hash job being run, one batch per turn */
  for (;;) {
    pthread_mutex_lock(&d->mu);
    while (!d->stop && d->rq_head == NULL && next_check == d->n_packs &&
           hcur == NULL && d->hq_head == NULL && d->unpins == NULL)
      pthread_cond_wait(&d->cv, &d->mu);
    if (d->unpins != NULL) {
      struct dv_unpin *u = d->unpins;
      d->unpins = NULL;
      pthread_mutex_unlock(&d->mu);
      dv_unpin_all(d, u);
      continue;
    }
    if (d->stop && next_check < d->n_packs) {
      for (; next_check < d->n_packs; next_check++)
        snprintf(d->checks[next_check].detail,
                 sizeof d->checks[next_check].detail,
                 "not run: the daemon is stopping");
    }
    wd_work *w = d->rq_head;
    if (w != NULL) {
      if ((d->rq_head = w->next) == NULL)
        d->rq_tail = &d->rq_head;
      d->rq_n--;
      d->reduce_running = 1;
      pthread_mutex_unlock(&d->mu);
      atomic_store(&d->running, 1);
      dv_run_reduce(d, w);
      atomic_store(&d->running, 0);
      atomic_fetch_add(w->rc ? &d->failed : &d->done, 1);
      pthread_mutex_lock(&d->mu);
      d->reduce_running = 0;
      pthread_mutex_unlock(&d->mu);
      w->next = NULL;
      d->post(d->post_arg, w);
      continue;
    }
    if (next_check < d->n_packs) {
      pthread_mutex_unlock(&d->mu);
      atomic_store(&d->running, 1);
      dv_selfcheck(d, next_check++);
      atomic_store(&d->running, 0);
      continue;
    }
    if (hcur == NULL && d->hq_head != NULL) {
      hcur = d->hq_head;
      if ((d->hq_head = hcur->next) == NULL)
        d->hq_tail = &d->hq_head;
    }
    if (hcur == NULL) {  /* stop, and nothing left */
      pthread_mutex_unlock(&d->mu);
      break;
    }
    pthread_mutex_unlock(&d->mu);
    atomic_store(&d->running, 1);
    int ended = dv_hash_step(d, hcur);
    atomic_store(&d->running, 0);
    if (ended) {
      atomic_fetch_add(hcur->rc ? &d->failed : &d->done, 1);
      pthread_mutex_lock(&d->mu);
      d->hash_n--;
      pthread_mutex_unlock(&d->mu);
      hcur->next = NULL;
      d->post(d->post_arg, hcur);
      hcur = NULL;
    }
  }
  if (d->bdev != NULL)
    d->backend->close(d->bdev);
  d->bdev = NULL;
  free(d->hbuf);
  d->hbuf = NULL;
  return NULL;
}

int wd_device_start(const wd_device_cfg *cfg, unsigned slot,
                    unsigned hash_slots,
                    const wv_pack *const *packs, size_t n_packs,
                    wd_post_fn post, void *post_arg, wd_device **out,
                    wave_error *err)
{
  *out = NULL;
  const wv_backend *b = wv_backend_find(cfg->backend);
  if (b == NULL)  /* config validation catches this; be safe anyway */
    return wv_seterr(err, WAVE_ECONFIG, "backend '%s' not built into this wavedd",
                     cfg->backend);
  wd_device *d = calloc(1, sizeof *d);
  if (d == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  d->cfg = *cfg;
  d->bcfg = (wv_device_config){
    .name = d->cfg.name,
    .backend = d->cfg.backend,
    .index = (int)d->cfg.index,
    .threads = d->cfg.threads,
    .queue_depth = d->cfg.queue_depth,
    .exchange = d->cfg.exchange,
    .group_units = d->cfg.group_units,
    .batch = d->cfg.batch,
  };
  d->backend = b;
  d->slot = slot;
  d->hash_slots = b->hash != NULL ? hash_slots : 0;
  d->packs = packs;
  d->n_packs = n_packs;
  d->checks = calloc(n_packs ? n_packs : 1, sizeof *d->checks);
  if (d->checks == NULL) {
    free(d);
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  }
  for (size_t i = 0; i < n_packs; i++) {
    d->checks[i].state = b->hash != NULL ? WD_CHECK_PENDING : WD_CHECK_NONE;
    snprintf(d->checks[i].detail, sizeof d->checks[i].detail, "%s",
             b->hash != NULL ? "pending" : "backend has no hash support");
  }
  d->post = post;
  d->post_arg = post_arg;
  d->rq_tail = &d->rq_head;
  d->hq_tail = &d->hq_head;
  pthread_mutex_init(&d->mu, NULL);
  pthread_cond_init(&d->cv, NULL);

  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = pthread_create(&d->thread, NULL, dv_main, d);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) {
    pthread_mutex_destroy(&d->mu);
    pthread_cond_destroy(&d->cv);
    free(d->checks);
    free(d);
    return wv_seterr(err, WAVE_EINTERNAL, "device %s: cannot start thread: %s",
                     cfg->name, strerror(rc));
  }
  d->thread_started = 1;
  *out = d;
  return 0;
}

int wd_device_wait_open(wd_device *d)
{
  pthread_mutex_lock(&d->mu);
  while (!d->opened)
    pthread_cond_wait(&d->cv, &d->mu);
  int rc = d->open_rc;
  pthread_mutex_unlock(&d->mu);
  return rc;
}

int wd_device_submit(wd_device *d, wd_work *w, wave_error *err)
{
  int rc = 0;
  w->next = NULL;
  w->dev = d;
  w->rc = 0;
  w->seconds = 0;
  pthread_mutex_lock(&d->mu);
  if (d->stop) {
    rc = wv_seterr(err, WAVE_ESHUTDOWN, NULL);
  } else if (atomic_load(&d->faulted)) {
    rc = wv_seterr(err, WAVE_EDEVFAULT, "device %s is faulted: %s",
                   d->cfg.name, d->fault);
  } else if (w->kind == WD_WORK_REDUCE) {
    if (d->rq_n >= d->cfg.queue_depth) {
      rc = wv_seterr(err, WAVE_EBUSY, "device %s has %u reductions queued "
                     "(queue_depth %u)", d->cfg.name, d->rq_n,
                     d->cfg.queue_depth);
    } else {
      *d->rq_tail = w;
      d->rq_tail = &w->next;
      d->rq_n++;
    }
  } else {
    if (d->hash_n >= d->hash_slots) {
      rc = wv_seterr(err, WAVE_EBUSY, "device %s has %u hash jobs in flight "
                     "(limits.jobs_in_flight %u)", d->cfg.name, d->hash_n,
                     d->hash_slots);
    } else {
      *d->hq_tail = w;
      d->hq_tail = &w->next;
      d->hash_n++;
    }
  }
  if (rc == 0)
    pthread_cond_signal(&d->cv);
  pthread_mutex_unlock(&d->mu);
  return rc;
}

int wd_device_unqueue(wd_device *d, wd_work *w)
{
  int found = 0;
  pthread_mutex_lock(&d->mu);
  for (wd_work **pp = &d->hq_head; *pp != NULL; pp = &(*pp)->next) {
    if (*pp == w) {
      *pp = w->next;
      if (d->hq_tail == &w->next)
        d->hq_tail = pp;
      d->hash_n--;
      found = 1;
      break;
    }
  }
  pthread_mutex_unlock(&d->mu);
  if (found)
    w->next = NULL;
  return found;
}

void wd_device_stop(wd_device *d)
{
  if (d == NULL || !d->thread_started)
    return;
  pthread_mutex_lock(&d->mu);
  d->stop = 1;
  pthread_cond_broadcast(&d->cv);
  pthread_mutex_unlock(&d->mu);
  pthread_join(d->thread, NULL);
  d->thread_started = 0;
  pthread_mutex_lock(&d->mu);
  d->joined = 1;
  struct dv_unpin *u = d->unpins;
  d->unpins = NULL;
  pthread_mutex_unlock(&d->mu);
  dv_unpin_all(d, u);
}

void wd_device_free(wd_device *d)
{
  if (d == NULL)
    return;
  wd_device_stop(d);
  pthread_mutex_destroy(&d->mu);
  pthread_cond_destroy(&d->cv);
  free(d->checks);
  free(d);
}

const char *wd_device_name(const wd_device *d) { return d->cfg.name; }

const wd_device_cfg *wd_device_cfg_of(const wd_device *d) { return &d->cfg; }

const wv_caps *wd_device_caps(const wd_device *d) { return &d->caps; }

int wd_device_has_hash(const wd_device *d) { return d->backend->hash != NULL; }

int wd_device_faulted(wd_device *d) { return atomic_load(&d->faulted); }

unsigned wd_device_load(wd_device *d)
{
  pthread_mutex_lock(&d->mu);
  unsigned n = d->rq_n + (unsigned)d->reduce_running;
  pthread_mutex_unlock(&d->mu);
  return n;
}

unsigned wd_device_hash_load(wd_device *d)
{
  pthread_mutex_lock(&d->mu);
  unsigned n = d->hash_n;
  pthread_mutex_unlock(&d->mu);
  return n;
}

int wd_device_pack_check(wd_device *d, size_t pack, wd_pack_state *out)
{
  if (pack >= d->n_packs)
    return -1;
  pthread_mutex_lock(&d->mu);
  *out = d->checks[pack];
  pthread_mutex_unlock(&d->mu);
  return 0;
}

void wd_device_snapshot(wd_device *d, wd_device_snap *s)
{
  pthread_mutex_lock(&d->mu);
  unsigned hq = 0;
  for (wd_work *w = d->hq_head; w != NULL; w = w->next)
    hq++;
  s->queued = d->rq_n + hq;
  s->capacity = d->cfg.queue_depth;
  s->faulted = atomic_load(&d->faulted);
  snprintf(s->fault, sizeof s->fault, "%s", s->faulted ? d->fault : "");
  pthread_mutex_unlock(&d->mu);
  s->running = atomic_load(&d->running);
  s->done = atomic_load(&d->done);
  s->failed = atomic_load(&d->failed);
}
