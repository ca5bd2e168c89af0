/* device.c - the device threads (see device.h).
 *
 * Each device is a thread with a mutex, a condition variable and three
 * lanes, in the manner of Valkey's bio.c: the loop appends under the mutex
 * and signals; the thread pops, runs the item's step with the mutex
 * released, and hands an ended item to the post callback.  The thread is
 * created with every signal blocked (signals belong to the loop's uv_signal
 * handles) and named "wd:<device>" so it shows up in top/gdb.  The items'
 * run ops get the device's wv_dev handle and caps in a wd_run_ctx and call
 * the backend through workers/wvdev.h; nothing here knows what an item is,
 * and no pack: the device x pack state is jobs/packstate.c's.
 *
 * Fairness on the long lane: its items are grouped by owner (wd_work.owner,
 * the submitting client's key), and the groups form a ring.  Each step
 * takes the ring's first group and that group's first item; the item, if
 * it wants more, goes to the end of its group, and the group (if it still
 * has items) to the end of the ring.  So owners take turns one step (one
 * batch of a hash job) at a time, and an owner's items take turns among
 * themselves: a job of 2^64 nonces shares the device.  A lone item is
 * popped and pushed back between its steps under the mutex, with no wait:
 * back-to-back batches as before.  Pack preparation (the setup lane) has
 * its own FIFO, and its first item takes turns with the ring, step for
 * step (at start-up nothing else is queued yet; a reload's packs are
 * prepared while hash jobs run).
 *
 * The short lane (reductions) has owner groups of its own, keyed the same
 * way (the principal, daemon/net/principal.h), served by turns in the manner
 * of start-time fair queueing: a reduction's turn is the turn being served
 * when its owner had nothing queued (or the turn after that owner's last
 * one, if later), else the one after its owner's previous one; the earliest
 * turn goes first, ties in the order the owners queued.  A big one yields
 * between slices while another owner waits (WD_RUN_MORE), for its owner's
 * next turn.  So a client pipelining big sums delays another's by a slice,
 * not its backlog, and one sending one at a time gets one turn per turn.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/exec/device.h"
#include "daemon/log.h"
#include "core/base.h"
#include "core/thread.h"
#include "workers/health.h"
#include "workers/wvdev.h"

typedef struct dv_queue {
  wd_work *head, **tail;
  unsigned n;
} dv_queue;

/* One owner's items in one lane on this device (under mu).  A long-lane
 * group lives while any of its items has not ended (queued, running or
 * parked); a short-lane group while any of its items is queued. */
typedef struct dv_owner {
  struct dv_owner *next;      /* the ring, while it has queued items */
  struct dv_owner *all_next;  /* every group of the lane */
  uint64_t key;
  dv_queue q;                 /* its queued items, FIFO */
  unsigned members;           /* long: its items not ended; short: queued */
  int in_ring;
  uint64_t tag, finish;       /* short: its first item's turn, and the
                                 turn after its last one's */
} dv_owner;

/* A lane served in turns by owner: the ring of groups with items queued,
 * and every group. */
typedef struct dv_fair {
  dv_owner *ring, **ring_tail;
  dv_owner *owners;
  unsigned n;                 /* items queued in the ring */
  uint64_t now;               /* short: the turn being served */
} dv_fair;

struct wd_device {
  wd_device_cfg cfg;
  wv_device_config bcfg;
  unsigned index;             /* in the configuration */
  wv_dev dev;                 /* .be: any thread; .impl: device thread */
  wv_caps tcaps;              /* the device thread's own (wd_run_ctx) */
  wv_caps caps;               /* its copy for other threads, under mu */
  wd_run_ctx ctx;             /* what run ops get */
  unsigned long_slots;        /* limits.jobs_in_flight */

  wd_post_fn post;
  void *post_arg;

  pthread_t thread;
  int thread_started;
  pthread_mutex_t mu;
  pthread_cond_t cv;          /* work arrived, stop, or opened */
  dv_fair sq;                 /* short lane (reductions), by owner */
  dv_queue uq;                /* setup items (pack preparation) */
  dv_fair lq;                 /* long lane (hash job shares), by owner */
  unsigned long_n;            /* bounded long items not ended */
  unsigned long_all;          /* every long item not ended */
  int short_running;
  wd_work *ucur;              /* the setup item being stepped */
  int turn;                   /* ucur and the ring take turns */
  int opened, open_rc, stop;

  _Atomic int faulted;
  _Atomic int held;           /* wd_device_hold */
  unsigned sweep;             /* held: long items to run once (under mu) */
  int reopen;                 /* wd_device_reopen asked (under mu) */
  _Atomic uint64_t hashed;    /* wd_device_hashed */
  char fault[200];            /* under mu */
  _Atomic int running;
  _Atomic uint64_t done, failed, cancelled;
  _Atomic uint64_t busy_ns;  /* time in run, all items */
};

static _Atomic(wd_dev_close_fn) dv_close_hook;
static _Atomic(wd_dev_open_fn) dv_open_hook;

void wd_device_on_open(wd_dev_open_fn fn)
{
  atomic_store(&dv_open_hook, fn);
}

void wd_device_on_close(wd_dev_close_fn fn)
{
  atomic_store(&dv_close_hook, fn);
}

static double dv_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double wd_device_now(void) { return dv_now(); }

static void dv_push(dv_queue *q, wd_work *w)
{
  w->next = NULL;
  *q->tail = w;
  q->tail = &w->next;
  q->n++;
}

static void dv_push_front(dv_queue *q, wd_work *w)
{
  w->next = q->head;
  if (q->head == NULL)
    q->tail = &w->next;
  q->head = w;
  q->n++;
}

static wd_work *dv_pop(dv_queue *q)
{
  wd_work *w = q->head;
  if (w != NULL) {
    if ((q->head = w->next) == NULL)
      q->tail = &q->head;
    q->n--;
    w->next = NULL;
  }
  return w;
}

/* ---- owner groups (under mu) ---- */

static dv_owner *dv_owner_find(dv_fair *f, uint64_t key)
{
  for (dv_owner *g = f->owners; g != NULL; g = g->all_next)
    if (g->key == key)
      return g;
  return NULL;
}

/* key's group in f, made if it has none; NULL when out of memory. */
static dv_owner *dv_owner_get(dv_fair *f, uint64_t key)
{
  dv_owner *g = dv_owner_find(f, key);
  if (g == NULL && (g = calloc(1, sizeof *g)) != NULL) {
    g->key = key;
    g->q.tail = &g->q.head;
    g->all_next = f->owners;
    f->owners = g;
  }
  return g;
}

static void dv_ring_push(dv_fair *f, dv_owner *g, int front)
{
  if (g->in_ring)
    return;
  g->in_ring = 1;
  if (front) {
    g->next = f->ring;
    if (f->ring == NULL)
      f->ring_tail = &g->next;
    f->ring = g;
  } else {
    g->next = NULL;
    *f->ring_tail = g;
    f->ring_tail = &g->next;
  }
}

static void dv_ring_remove(dv_fair *f, dv_owner *g)
{
  if (!g->in_ring)
    return;
  for (dv_owner **pp = &f->ring; *pp != NULL; pp = &(*pp)->next)
    if (*pp == g) {
      *pp = g->next;
      if (f->ring_tail == &g->next)
        f->ring_tail = pp;
      break;
    }
  g->in_ring = 0;
  g->next = NULL;
}

/* One of g's members has ended or left: drop g with its last one. */
static void dv_owner_release(dv_fair *f, dv_owner *g)
{
  if (--g->members > 0)
    return;
  dv_ring_remove(f, g);
  for (dv_owner **pp = &f->owners; *pp != NULL; pp = &(*pp)->all_next)
    if (*pp == g) {
      *pp = g->all_next;
      break;
    }
  free(g);
}

static void dv_fair_free(dv_fair *f)
{
  for (dv_owner *g = f->owners, *nx; g != NULL; g = nx) {
    nx = g->all_next;  /* parked items' groups, left at stop */
    free(g);
  }
  f->owners = NULL;
}

/* w (queued or parked before) into its group's queue. */
static void dv_fair_push(dv_fair *f, dv_owner *g, wd_work *w, int front)
{
  if (front)
    dv_push_front(&g->q, w);
  else
    dv_push(&g->q, w);
  f->n++;
  dv_ring_push(f, g, front);
}

/* The next item: the ring's first owner's first item; that owner goes to
 * the ring's end if it has more. */
static wd_work *dv_fair_pop(dv_fair *f)
{
  dv_owner *g = f->ring;
  if (g == NULL)
    return NULL;
  if ((f->ring = g->next) == NULL)
    f->ring_tail = &f->ring;
  g->in_ring = 0;
  g->next = NULL;
  wd_work *w = dv_pop(&g->q);
  f->n--;
  if (g->q.head != NULL)
    dv_ring_push(f, g, 0);
  return w;
}

/* ---- the short lane's turns (under mu) ---- */

/* w into its owner's queue.  An owner with nothing queued takes the turn
 * being served, or the one after its last item if that is later; each
 * further item the next turn (again, between slices: w goes first). */
static void dv_short_push(dv_fair *f, dv_owner *g, wd_work *w, int again)
{
  if (g->q.head == NULL) {
    g->tag = g->finish > f->now ? g->finish : f->now;
    g->finish = g->tag + 1;
  } else {
    g->finish++;
  }
  g->members++;
  dv_fair_push(f, g, w, again && g->q.head != NULL);
}

/* The queued reduction with the earliest turn (the ring's order among
 * equal ones); its owner's next item takes the next turn.  Owners with
 * nothing queued are forgotten once their last turn has come. */
static wd_work *dv_short_pop(dv_fair *f)
{
  dv_owner *g = NULL;
  for (dv_owner *o = f->ring; o != NULL; o = o->next)
    if (g == NULL || o->tag < g->tag)
      g = o;
  if (g == NULL)
    return NULL;
  dv_ring_remove(f, g);
  wd_work *w = dv_pop(&g->q);
  f->n--;
  g->members--;
  f->now = g->tag++;
  if (g->q.head != NULL)
    dv_ring_push(f, g, 0);
  for (dv_owner **pp = &f->owners; *pp != NULL;) {
    dv_owner *o = *pp;
    if (o->members == 0 && o->finish <= f->now) {
      *pp = o->all_next;
      free(o);
    } else {
      pp = &o->all_next;
    }
  }
  return w;
}

/* Mark the device faulted.  The first fault's reason sticks. */
static void dv_fault(wd_device *d, const char *why)
{
  pthread_mutex_lock(&d->mu);
  if (!atomic_load(&d->faulted))
    snprintf(d->fault, sizeof d->fault, "%.199s", why);
  atomic_store(&d->faulted, 1);
  pthread_mutex_unlock(&d->mu);
  wd_error("device %s faulted: %s", d->cfg.name, why);
}

static void dv_set_faulted_err(wd_device *d, wd_work *w, const char *verb)
{
  pthread_mutex_lock(&d->mu);
  w->rc = wv_seterr(&w->err, WAVE_EDEVFAULT, "device %s %s: %s", d->cfg.name,
                    verb, d->fault);
  pthread_mutex_unlock(&d->mu);
}

/* Read the caps again (device thread): its own copy, and the one other
 * threads read under mu. */
static void dv_read_caps(wd_device *d)
{
  wv_dev_caps(&d->dev, &d->tcaps);
  pthread_mutex_lock(&d->mu);
  d->caps = d->tcaps;
  pthread_mutex_unlock(&d->mu);
}

/* One step of w; returns WD_RUN_*.  The fault rule, once for every kind. */
static int dv_step(wd_device *d, wd_work *w)
{
  int stopping;
  pthread_mutex_lock(&d->mu);
  stopping = d->stop;
  pthread_mutex_unlock(&d->mu);
  if (atomic_load(&d->faulted) || (stopping && w->ops->abort != NULL)) {
    if (w->ops->abort != NULL) {
      w->ops->abort(w, &d->ctx);
    } else {
      dv_set_faulted_err(d, w, "is faulted");
    }
    return WD_RUN_END;
  }
  double t0 = dv_now();
  if (w->t_start == 0)
    w->t_start = t0;
  atomic_store(&d->running, 1);
  int r = w->ops->run(w, &d->ctx);
  atomic_store(&d->running, 0);
  double ran = dv_now() - t0;
  w->seconds += ran;
  atomic_fetch_add(&d->busy_ns, (uint64_t)(ran * 1e9));
  if (w->caps_changed) {
    w->caps_changed = 0;
    dv_read_caps(d);
  }
  if (r == WD_RUN_END && w->rc == WAVE_EDEVICE) {
    dv_fault(d, w->err.message);
    dv_set_faulted_err(d, w, "faulted");
  }
  return r;
}

static void dv_end(wd_device *d, wd_work *w)
{
  if (w->ops->lane != WD_LANE_SETUP)
    atomic_fetch_add(w->rc == 0 ? &d->done
                     : w->rc == WAVE_ECANCELLED || w->rc == WAVE_ESHUTDOWN
                         ? &d->cancelled
                         : &d->failed, 1);
  pthread_mutex_lock(&d->mu);
  if (w->ops->lane == WD_LANE_SHORT) {
    d->short_running = 0;
  } else {
    d->long_all--;
    if (w->ops->lane == WD_LANE_LONG) {
      d->long_n--;
      dv_owner *g = dv_owner_find(&d->lq, w->owner);
      if (g != NULL)
        dv_owner_release(&d->lq, g);
    }
  }
  pthread_mutex_unlock(&d->mu);
  w->next = NULL;
  if (w->ops->done != NULL)
    d->post(d->post_arg, w);
}

static void dv_open(wd_device *d)
{
  wave_error err = {0};
  int rc = wv_dev_open(&d->dev, &d->bcfg, &err);
  if (rc == 0) {
    dv_read_caps(d);
    wd_info("device %s (%s) open: %s, wave width %u", d->cfg.name,
            d->cfg.backend, d->tcaps.description, d->tcaps.wave_width);
    wd_dev_open_fn hook = atomic_load(&dv_open_hook);
    if (hook != NULL)
      hook(&d->dev, &d->tcaps);
  } else {
    wd_error("device %s (%s) failed to open: %s", d->cfg.name,
             d->cfg.backend, err.message);
  }
  pthread_mutex_lock(&d->mu);
  d->opened = 1;
  d->open_rc = rc;
  if (rc != 0) {
    snprintf(d->fault, sizeof d->fault, "open failed: %.180s", err.message);
    atomic_store(&d->faulted, 1);
  }
  pthread_cond_broadcast(&d->cv);
  pthread_mutex_unlock(&d->mu);
}

/* Work to do now (under mu); held: only long items poked (sweep). */
static int dv_may_step(wd_device *d)
{
  if (d->stop || d->reopen || d->ucur != NULL || d->uq.head != NULL)
    return 1;
  if (atomic_load(&d->held))
    return d->sweep > 0 && d->lq.ring != NULL;
  return d->sq.ring != NULL || d->lq.ring != NULL;
}

static void dv_close(wd_device *d)
{
  wd_dev_close_fn hook = atomic_load(&dv_close_hook);
  if (hook != NULL)
    hook(&d->dev);
  wv_dev_close(&d->dev);
}

static void *dv_main(void *arg)
{
  wd_device *d = arg;
  dv_open(d);
  for (;;) {
    pthread_mutex_lock(&d->mu);
    while (!dv_may_step(d))
      pthread_cond_wait(&d->cv, &d->mu);
    if (d->reopen && !d->stop) {  /* the rate watchdog's restart */
      d->reopen = 0;
      pthread_mutex_unlock(&d->mu);
      wd_warn("device %s: closing and opening it again (the rate watchdog)",
              d->cfg.name);
      dv_close(d);
      dv_open(d);  /* a failed open faults it */
      continue;
    }
    int held = atomic_load(&d->held) && !d->stop;
    d->ctx.held = held;
    wd_work *w = held ? NULL : dv_short_pop(&d->sq);
    if (w != NULL) {  /* owners take turns, one step of a reduction each */
      d->short_running = 1;
      pthread_mutex_unlock(&d->mu);
      if (dv_step(d, w) == WD_RUN_MORE) {  /* its group stays till popped */
        pthread_mutex_lock(&d->mu);
        dv_short_push(&d->sq, dv_owner_find(&d->sq, w->owner), w, 1);
        d->short_running = 0;
        pthread_mutex_unlock(&d->mu);
      } else {
        dv_end(d, w);
      }
      continue;
    }
    /* A setup item (a pack being prepared, at start-up or by a reload)
     * takes turns, step by step, with the ring's long items, so that a
     * reload does not wait for the hash jobs running here to end. */
    if (d->ucur == NULL)
      d->ucur = dv_pop(&d->uq);
    int ring = d->lq.ring != NULL && (!held || d->sweep > 0);
    int setup = d->ucur != NULL && (!ring || (d->turn ^= 1));
    if (!setup && ring && held)
      d->sweep--;
    w = setup ? d->ucur : ring ? dv_fair_pop(&d->lq) : NULL;
    pthread_mutex_unlock(&d->mu);
    if (w == NULL)  /* stop, and nothing left */
      break;
    int r = dv_step(d, w);
    if (r == WD_RUN_MORE && setup)
      continue;  /* the setup item stays ucur until it ends */
    pthread_mutex_lock(&d->mu);
    if (setup) {
      d->ucur = NULL;
    } else if (r == WD_RUN_MORE) {  /* to the end of its owner's turn */
      dv_owner *g = dv_owner_find(&d->lq, w->owner);
      dv_fair_push(&d->lq, g, w, 0);
    }
    pthread_mutex_unlock(&d->mu);
    if (r == WD_RUN_MORE)
      continue;
    if (r == WD_RUN_END)
      dv_end(d, w);
    /* WD_RUN_PARK: its owner holds it and resumes it */
  }
  dv_close(d);
  return NULL;
}

int wd_device_start(const wd_device_cfg *cfg, unsigned index,
                    unsigned long_slots, wd_post_fn post, void *post_arg,
                    wd_device **out, wave_error *err)
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
    .platform = (int)d->cfg.platform,
    .device_match = d->cfg.device,
    .threads = d->cfg.threads,
    .queue_depth = d->cfg.queue_depth,
    .exchange = (wv_exchange)d->cfg.exchange,
    .group_units = d->cfg.group_units,
  };
  d->index = index;
  d->dev.be = b;
  d->ctx = (wd_run_ctx){.dev = &d->dev, .caps = &d->tcaps,
                        .name = d->cfg.name, .index = index};
  d->long_slots = long_slots;
  d->post = post;
  d->post_arg = post_arg;
  d->sq.ring_tail = &d->sq.ring;
  d->uq.tail = &d->uq.head;
  d->lq.ring_tail = &d->lq.ring;
  pthread_mutex_init(&d->mu, NULL);
  pthread_cond_init(&d->cv, NULL);

  char tname[16];  /* the kernel keeps 15 bytes of a thread name */
  snprintf(tname, sizeof tname, "wd:%.12s", cfg->name);
  int rc = wv_thread_start(&d->thread, tname, dv_main, d);
  if (rc != 0) {
    pthread_mutex_destroy(&d->mu);
    pthread_cond_destroy(&d->cv);
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
  int lane = w->ops->lane;
  w->next = NULL;
  w->dev = d;
  w->rc = 0;
  w->seconds = 0;
  w->t_submit = dv_now();
  w->t_start = 0;
  pthread_mutex_lock(&d->mu);
  if (d->stop) {
    rc = wv_seterr(err, WAVE_ESHUTDOWN, NULL);
  } else if (atomic_load(&d->faulted) && lane != WD_LANE_SETUP) {
    rc = wv_seterr(err, WAVE_EDEVFAULT, "device %s is faulted: %s",
                   d->cfg.name, d->fault);
  } else if (lane == WD_LANE_SHORT) {
    dv_owner *g = NULL;
    if (d->sq.n >= d->cfg.queue_depth)
      rc = wv_seterr(err, WAVE_EBUSY, "device %s has %u reductions queued "
                     "(queue_depth %u)", d->cfg.name, d->sq.n,
                     d->cfg.queue_depth);
    else if ((g = dv_owner_get(&d->sq, w->owner)) == NULL)
      rc = wv_seterr(err, WAVE_ENOMEM, NULL);
    else
      dv_short_push(&d->sq, g, w, 0);
  } else if (lane == WD_LANE_LONG && d->long_n >= d->long_slots) {
    rc = wv_seterr(err, WAVE_EBUSY, "device %s has %u hash jobs in flight "
                   "(limits.jobs_in_flight %u)", d->cfg.name, d->long_n,
                   d->long_slots);
  } else if (lane == WD_LANE_LONG) {
    dv_owner *g = dv_owner_get(&d->lq, w->owner);
    if (g == NULL) {
      rc = wv_seterr(err, WAVE_ENOMEM, NULL);
    } else {
      g->members++;
      dv_fair_push(&d->lq, g, w, 0);
      d->long_all++;
      d->long_n++;
    }
  } else {
    dv_push(&d->uq, w);
    d->long_all++;
  }
  if (rc == 0)
    pthread_cond_signal(&d->cv);
  pthread_mutex_unlock(&d->mu);
  return rc;
}

void wd_device_resume(wd_device *d, wd_work *w)
{
  pthread_mutex_lock(&d->mu);
  dv_owner *g = w->ops->lane == WD_LANE_LONG
                    ? dv_owner_find(&d->lq, w->owner)
                    : NULL;
  d->sweep += g != NULL && atomic_load(&d->held);  /* held: it runs once */
  if (g != NULL)  /* a parked item is still its group's member */
    dv_fair_push(&d->lq, g, w, 1);
  else
    dv_push_front(&d->uq, w);
  pthread_cond_signal(&d->cv);
  pthread_mutex_unlock(&d->mu);
}

int wd_device_unqueue(wd_device *d, wd_work *w)
{
  int found = 0;
  pthread_mutex_lock(&d->mu);
  dv_owner *g = w->ops->lane == WD_LANE_LONG
                    ? dv_owner_find(&d->lq, w->owner)
                    : NULL;
  dv_queue *q = g != NULL ? &g->q : &d->uq;
  for (wd_work **pp = &q->head; *pp != NULL; pp = &(*pp)->next) {
    if (*pp == w) {
      *pp = w->next;
      if (q->tail == &w->next)
        q->tail = pp;
      q->n--;
      d->long_all--;
      if (g != NULL) {
        d->lq.n--;
        d->long_n--;
        if (g->q.head == NULL)
          dv_ring_remove(&d->lq, g);
        dv_owner_release(&d->lq, g);
      }
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
}

void wd_device_free(wd_device *d)
{
  if (d == NULL)
    return;
  wd_device_stop(d);
  dv_fair_free(&d->lq);
  dv_fair_free(&d->sq);
  pthread_mutex_destroy(&d->mu);
  pthread_cond_destroy(&d->cv);
  free(d);
}

/* ---- any thread ---------------------------------------------------------- */

const char *wd_device_name(const wd_device *d) { return d->cfg.name; }

unsigned wd_device_index(const wd_device *d) { return d->index; }

const wd_device_cfg *wd_device_cfg_of(const wd_device *d) { return &d->cfg; }

void wd_device_caps(wd_device *d, wv_caps *out)
{
  pthread_mutex_lock(&d->mu);
  *out = d->caps;
  pthread_mutex_unlock(&d->mu);
}

void wd_device_health(wd_device *d, wv_health *out)
{
  wv_caps caps;
  pthread_mutex_lock(&d->mu);
  int opened = d->opened && d->open_rc == 0;
  caps = d->caps;
  pthread_mutex_unlock(&d->mu);
  if (!opened) {
    memset(out, 0, sizeof *out);
    snprintf(out->why, sizeof out->why, "no health source: the device did "
             "not open");
    return;
  }
  wv_dev_health(d->dev.be, &d->bcfg, &caps, out);
}

int wd_device_has_hash(const wd_device *d) { return wv_dev_has_hash(&d->dev); }

int wd_device_can_pin(const wd_device *d) { return wv_dev_can_pin(&d->dev); }

int wd_device_faulted(wd_device *d) { return atomic_load(&d->faulted); }

unsigned wd_device_load(wd_device *d)
{
  pthread_mutex_lock(&d->mu);
  unsigned n = d->sq.n + (unsigned)d->short_running;
  pthread_mutex_unlock(&d->mu);
  return n;
}

unsigned wd_device_long_load(wd_device *d)
{
  pthread_mutex_lock(&d->mu);
  unsigned n = d->long_n;
  pthread_mutex_unlock(&d->mu);
  return n;
}

void wd_device_snapshot(wd_device *d, wd_device_snap *s)
{
  pthread_mutex_lock(&d->mu);
  s->queued = d->sq.n + d->uq.n + d->lq.n;
  s->capacity = d->cfg.queue_depth;
  s->faulted = atomic_load(&d->faulted);
  snprintf(s->fault, sizeof s->fault, "%s", s->faulted ? d->fault : "");
  pthread_mutex_unlock(&d->mu);
  s->running = atomic_load(&d->running);
  s->done = atomic_load(&d->done);
  s->failed = atomic_load(&d->failed);
  s->cancelled = atomic_load(&d->cancelled);
  s->busy_s = (double)atomic_load(&d->busy_ns) * 1e-9;
}

/* Hold (op 0 or 1), poke (2: the sweep, + the one stepping now, if one
 * is; a hold starts none) or reopen (3), and wake the thread. */
static void dv_tell(wd_device *d, int op)
{
  pthread_mutex_lock(&d->mu);
  if (op <= 1)
    atomic_store(&d->held, op);
  d->sweep = op == 2 ? d->lq.n + 1 : op <= 1 ? 0 : d->sweep;
  d->reopen |= op == 3;
  pthread_cond_signal(&d->cv);
  pthread_mutex_unlock(&d->mu);
}

void wd_device_hold(wd_device *d, int held) { dv_tell(d, held != 0); }
int wd_device_held(wd_device *d) { return atomic_load(&d->held); }
void wd_device_poke(wd_device *d) { dv_tell(d, 2); }
void wd_device_reopen(wd_device *d) { dv_tell(d, 3); }
void wd_device_hashed(wd_device *d, uint64_t n) { d->hashed += n; }
uint64_t wd_device_hashes(wd_device *d) { return atomic_load(&d->hashed); }

int wd_device_short_waiting(wd_device *d, uint64_t owner)
{
  pthread_mutex_lock(&d->mu);
  dv_owner *g = d->sq.ring;
  while (g != NULL && g->key == owner)
    g = g->next;
  pthread_mutex_unlock(&d->mu);
  return g != NULL;
}
