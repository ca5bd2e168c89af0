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
 *
 * Levels (wd_work.level: high, normal, low) come before all of that: each
 * lane is three such lanes, one per level, and the thread takes the
 * highest level that has anything queued, a reduction before a hash step
 * of the same level; the turns above hold within a level.  A big reduction
 * yields between slices to a higher level too, and a hash job yields
 * between pieces as it always does.  Each level has its own cap of queued
 * items (wd_work.level_cap, from the config).  An item whose deadline has
 * passed when it is popped, before its first step, ends WAVE_EDEADLINE
 * without running (a hash share whose job began elsewhere runs: its
 * ops->started says so).
 *
 * A held device (wd_device_hold) gives up its queued reductions that the
 * daemon picked it for and that have not begun (wd_device_shed, in turn
 * order); exec/pick.c's wd_pick_move queues them on other devices with
 * wd_device_take, or back here to wait.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/exec/device.h"
#include "daemon/exec/turns.h"
#include "daemon/log.h"
#include "core/base.h"
#include "core/thread.h"
#include "workers/health.h"
#include "workers/wvdev.h"

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
  wd_dev_hooks hooks;         /* opened, closing */

  pthread_t thread;
  int thread_started;
  pthread_mutex_t mu;
  pthread_cond_t cv;          /* work arrived, stop, or opened */
  wd_fair sq[WD_LEVEL_N];     /* short lane (reductions), by level (its
                                 rank: dv_rank) and owner */
  wd_fifo uq;                /* setup items (pack preparation) */
  wd_fair lq[WD_LEVEL_N];     /* long lane (hash job shares), likewise */
  int short_rank;             /* the running reduction's level rank */
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
  _Atomic uint64_t done, failed, cancelled, deadline;
  _Atomic uint64_t busy_ns;  /* time in run, all items */
};

static double dv_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double wd_device_now(void) { return dv_now(); }

void wd_work_level(wd_work *w, const wd_config *cfg, int level,
                   unsigned deadline_ms)
{
  if (level < 0 || level >= WD_LEVEL_N)
    level = WD_LEVEL_NORMAL;  /* net/level.c refused it already */
  w->level = level;
  w->level_cap = cfg->prio.max_queued[level];
  unsigned ms = deadline_ms ? deadline_ms : cfg->prio.deadline_ms[level];
  w->deadline = ms ? dv_now() + ms * 1e-3 : 0;
}

void wd_work_level_as(wd_work *w, const wd_work *like)
{
  if (like != NULL) {
    w->level = like->level;
    w->level_cap = like->level_cap;
    w->deadline = like->deadline;
  }
}

/* A level's place in the device's order: high 0, normal 1, low 2. */
static int dv_rank(int level)
{
  return level == WD_LEVEL_HIGH ? 0 : level == WD_LEVEL_LOW ? 2 : 1;
}

static const char *const dv_level_names[WD_LEVEL_N] = {"normal", "high",
                                                       "low"};

const char *wd_level_name(int level)
{
  return level >= 0 && level < WD_LEVEL_N ? dv_level_names[level] : "?";
}

/* ---- the short lane (under mu) ---- */

/* Reductions queued, every level. */
static unsigned dv_short_queued(const wd_device *d)
{
  unsigned n = 0;
  for (int r = 0; r < WD_LEVEL_N; r++)
    n += d->sq[r].n;
  return n;
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
                     : w->rc == WAVE_EDEADLINE ? &d->deadline
                         : &d->failed, 1);
  pthread_mutex_lock(&d->mu);
  if (w->ops->lane == WD_LANE_SHORT) {
    d->short_running = 0;
  } else {
    d->long_all--;
    if (w->ops->lane == WD_LANE_LONG) {
      d->long_n--;
      wd_fair *f = &d->lq[dv_rank(w->level)];
      wd_group *g = wd_group_find(f, w->owner);
      if (g != NULL)
        wd_group_release(f, g);
    }
  }
  pthread_mutex_unlock(&d->mu);
  w->t_end = dv_now();
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
    if (d->hooks.opened != NULL)
      d->hooks.opened(d->hooks.arg, &d->dev, &d->tcaps);
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

/* w's deadline passed before its first step (device thread, w popped):
 * it ends WAVE_EDEADLINE, never run.  1 if so. */
static int dv_expired(wd_device *d, wd_work *w)
{
  if (w->deadline <= 0 || w->t_start != 0 || dv_now() <= w->deadline ||
      (w->ops->started != NULL && w->ops->started(w)))
    return 0;
  w->rc = wv_seterr(&w->err, WAVE_EDEADLINE, "%s waited past its deadline "
                    "(%.0f ms, %s) on device %s and did not run",
                    w->ops->name, (w->deadline - w->t_submit) * 1e3,
                    wd_level_name(w->level), d->cfg.name);
  return 1;
}

/* Work to do now (under mu); held: only long items poked (sweep). */
static int dv_may_step(wd_device *d)
{
  if (d->stop || d->reopen || d->ucur != NULL || d->uq.n > 0)
    return 1;
  int lr = wd_fair_top(d->lq, WD_LEVEL_N);
  if (atomic_load(&d->held))
    return d->sweep > 0 && lr < WD_LEVEL_N;
  return wd_fair_top(d->sq, WD_LEVEL_N) < WD_LEVEL_N || lr < WD_LEVEL_N;
}

static void dv_close(wd_device *d)
{
  if (d->hooks.closing != NULL)
    d->hooks.closing(d->hooks.arg, &d->dev);
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
    /* the highest level first; a reduction before a hash step of its own
     * level; a held device takes no reduction */
    int sr = wd_fair_top(d->sq, WD_LEVEL_N), lr = wd_fair_top(d->lq, WD_LEVEL_N);
    wd_work *w = !held && sr < WD_LEVEL_N && sr <= lr
                     ? wd_short_pop(&d->sq[sr])
                     : NULL;
    if (w != NULL) {  /* owners take turns, one step of a reduction each */
      d->short_running = 1;
      d->short_rank = sr;
      pthread_mutex_unlock(&d->mu);
      if (dv_expired(d, w)) {
        dv_end(d, w);
      } else if (dv_step(d, w) == WD_RUN_MORE) {  /* group stays till popped */
        pthread_mutex_lock(&d->mu);
        wd_short_push(&d->sq[sr], wd_group_find(&d->sq[sr], w->owner), w, 1);
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
      d->ucur = wd_fifo_pop(&d->uq);
    int ring = lr < WD_LEVEL_N && (!held || d->sweep > 0);
    int setup = d->ucur != NULL && (!ring || (d->turn ^= 1));
    if (!setup && ring && held)
      d->sweep--;
    w = setup ? d->ucur : ring ? wd_fair_pop(&d->lq[lr]) : NULL;
    pthread_mutex_unlock(&d->mu);
    if (w == NULL)  /* stop, and nothing left */
      break;
    int r = !setup && dv_expired(d, w) ? WD_RUN_END : dv_step(d, w);
    if (r == WD_RUN_MORE && setup)
      continue;  /* the setup item stays ucur until it ends */
    pthread_mutex_lock(&d->mu);
    if (setup) {
      d->ucur = NULL;
    } else if (r == WD_RUN_MORE) {  /* to the end of its owner's turn */
      wd_group *g = wd_group_find(&d->lq[lr], w->owner);
      wd_fair_push(&d->lq[lr], g, w, 0);
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
                    const wd_dev_hooks *hooks, wd_device **out,
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
  if (hooks != NULL)
    d->hooks = *hooks;
  for (int r = 0; r < WD_LEVEL_N; r++) {
    wd_fair_init(&d->sq[r]);
    wd_fair_init(&d->lq[r]);
  }
  wd_fifo_init(&d->uq);
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

/* Queue w on d: new (moved 0), moved here from a held device (1: it
 * keeps its t_submit), or back where it was (2: no check, it had its
 * place). */
static int dv_submit(wd_device *d, wd_work *w, int moved, wave_error *err)
{
  int rc = 0;
  int lane = w->ops->lane;
  int rk = dv_rank(w->level);
  wv_q_init(&w->q);
  w->dev = d;
  w->rc = 0;
  w->seconds = 0;
  if (!moved)
    w->t_submit = dv_now();
  w->t_start = w->t_end = 0;
  pthread_mutex_lock(&d->mu);
  if (moved == 2) {
    wd_group *g = wd_group_get(&d->sq[rk], w->owner);
    if (g == NULL)  /* no memory for its group: it ends, said so */
      rc = wv_seterr(err, WAVE_ENOMEM, NULL);
    else
      wd_short_push(&d->sq[rk], g, w, 0);
  } else if (d->stop) {
    rc = wv_seterr(err, WAVE_ESHUTDOWN, NULL);
  } else if (atomic_load(&d->faulted) && lane != WD_LANE_SETUP) {
    rc = wv_seterr(err, WAVE_EDEVFAULT, "device %s is faulted: %s",
                   d->cfg.name, d->fault);
  } else if (lane != WD_LANE_SETUP && w->level_cap > 0 &&
             d->sq[rk].n + d->lq[rk].n >= w->level_cap) {
    rc = wv_seterr(err, WAVE_EBUSY, "device %s has %u %s-priority jobs "
                   "queued (priority.%s_max_queued %u)", d->cfg.name,
                   d->sq[rk].n + d->lq[rk].n, wd_level_name(w->level),
                   wd_level_name(w->level), w->level_cap);
  } else if (lane == WD_LANE_SHORT) {
    wd_group *g = NULL;
    unsigned n = dv_short_queued(d);
    if (n >= d->cfg.queue_depth)
      rc = wv_seterr(err, WAVE_EBUSY, "device %s has %u reductions queued "
                     "(queue_depth %u)", d->cfg.name, n, d->cfg.queue_depth);
    else if ((g = wd_group_get(&d->sq[rk], w->owner)) == NULL)
      rc = wv_seterr(err, WAVE_ENOMEM, NULL);
    else
      wd_short_push(&d->sq[rk], g, w, 0);
  } else if (lane == WD_LANE_LONG && d->long_n >= d->long_slots) {
    rc = wv_seterr(err, WAVE_EBUSY, "device %s has %u hash jobs in flight "
                   "(limits.jobs_in_flight %u)", d->cfg.name, d->long_n,
                   d->long_slots);
  } else if (lane == WD_LANE_LONG) {
    wd_group *g = wd_group_get(&d->lq[rk], w->owner);
    if (g == NULL) {
      rc = wv_seterr(err, WAVE_ENOMEM, NULL);
    } else {
      g->members++;
      wd_fair_push(&d->lq[rk], g, w, 0);
      d->long_all++;
      d->long_n++;
    }
  } else {
    wd_fifo_push(&d->uq, w);
    d->long_all++;
  }
  if (rc == 0)
    pthread_cond_signal(&d->cv);
  pthread_mutex_unlock(&d->mu);
  return rc;
}

int wd_device_submit(wd_device *d, wd_work *w, wave_error *err)
{
  return dv_submit(d, w, 0, err);
}

/* A queued reduction that may leave: the daemon picked the device, and
 * it has not begun (a big one between its slices stays). */
static int dv_movable(const wd_work *w)
{
  return w->movable && w->t_start == 0;
}

void wd_device_shed(wd_device *d, wd_fifo *out)
{
  pthread_mutex_lock(&d->mu);
  if (atomic_load(&d->held) && !d->stop)
    for (int r = 0; r < WD_LEVEL_N; r++)
      wd_short_take(&d->sq[r], dv_movable, out);
  pthread_mutex_unlock(&d->mu);
}

int wd_device_take(wd_device *d, wd_work *w, int back, wave_error *err)
{
  int rc = dv_submit(d, w, back ? 2 : 1, err);
  if (rc != 0 && back) {  /* it ends here, failed, as a step would */
    w->rc = rc;
    w->err = *err;
    atomic_fetch_add(&d->failed, 1);
    if (w->ops->done != NULL)
      d->post(d->post_arg, w);
  }
  return rc;
}

void wd_device_resume(wd_device *d, wd_work *w)
{
  pthread_mutex_lock(&d->mu);
  wd_fair *f = &d->lq[dv_rank(w->level)];
  wd_group *g = w->ops->lane == WD_LANE_LONG ? wd_group_find(f, w->owner)
                                             : NULL;
  d->sweep += g != NULL && atomic_load(&d->held);  /* held: it runs once */
  if (g != NULL)  /* a parked item is still its group's member */
    wd_fair_push(f, g, w, 1);
  else
    wd_fifo_push_front(&d->uq, w);
  pthread_cond_signal(&d->cv);
  pthread_mutex_unlock(&d->mu);
}

int wd_device_unqueue(wd_device *d, wd_work *w)
{
  int found = 0;
  pthread_mutex_lock(&d->mu);
  wd_fair *f = &d->lq[dv_rank(w->level)];
  wd_group *g = w->ops->lane == WD_LANE_LONG ? wd_group_find(f, w->owner)
                                             : NULL;
  wd_fifo *q = g != NULL ? &g->q : &d->uq;
  if (wd_fifo_remove(q, w)) {
    d->long_all--;
    if (g != NULL) {
      f->n--;
      d->long_n--;
      if (g->q.n == 0)
        wd_fair_unring(f, g);
      wd_group_release(f, g);
    }
    found = 1;
  }
  pthread_mutex_unlock(&d->mu);
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
  for (int r = 0; r < WD_LEVEL_N; r++) {
    wd_fair_free(&d->lq[r]);
    wd_fair_free(&d->sq[r]);
  }
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
  unsigned n = dv_short_queued(d) + (unsigned)d->short_running;
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
  s->queued = d->uq.n;
  for (int l = 0; l < WD_LEVEL_N; l++) {
    int r = dv_rank(l);
    s->level_queued[l] = d->sq[r].n + d->lq[r].n;
    s->queued += s->level_queued[l];
  }
  s->capacity = d->cfg.queue_depth;
  s->faulted = atomic_load(&d->faulted);
  snprintf(s->fault, sizeof s->fault, "%s", s->faulted ? d->fault : "");
  pthread_mutex_unlock(&d->mu);
  s->running = atomic_load(&d->running);
  s->done = atomic_load(&d->done);
  s->failed = atomic_load(&d->failed);
  s->cancelled = atomic_load(&d->cancelled);
  s->deadline = atomic_load(&d->deadline);
  s->busy_s = (double)atomic_load(&d->busy_ns) * 1e-9;
}

/* Hold (op 0 or 1), poke (2: the sweep, + the one stepping now, if one
 * is; a hold starts none) or reopen (3), and wake the thread. */
static void dv_tell(wd_device *d, int op)
{
  pthread_mutex_lock(&d->mu);
  if (op <= 1)
    atomic_store(&d->held, op);
  unsigned long_n = 0;
  for (int r = 0; r < WD_LEVEL_N; r++)
    long_n += d->lq[r].n;
  d->sweep = op == 2 ? long_n + 1 : op <= 1 ? 0 : d->sweep;
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
  int me = d->short_rank;
  /* a higher level waits (either lane), or another owner at this one */
  int wait = wd_fair_top(d->sq, WD_LEVEL_N) < me ||
             wd_fair_top(d->lq, WD_LEVEL_N) < me;
  wv_qnode *n;
  WV_Q_EACH(n, &d->sq[me].ring)
    if (!wait)
      wait = WV_Q_ENTRY(n, wd_group, ring)->key != owner;
  pthread_mutex_unlock(&d->mu);
  return wait;
}
