/* server.c - requests in, replies out (see server.h): the lifecycle and
 * the loop's wake-up.  The wings it joins (net/, rq/, exec/, jobs/, bulk/)
 * are mapped in docs/hacking.md; this file also injects what net/ may not
 * call by name (a closed connection's regions and streams, the jobs tied
 * to it) and hands the device list to bulk/regionpin.c.
 *
 * Threads and hand-offs: nng's threads append received contexts to the
 * inbox; device threads append ended work items to the completion queue;
 * both wake the loop (uv_async_send, which coalesces, so every wake drains
 * both queues whole).  The loop runs each ended item's done op and each
 * received request's dispatch.
 *
 * Lifecycle: one state (wd_sv_state, server.h), moved only here:
 *   STARTING (wd_server_init) -> LISTENING (wd_server_listen) -> READY
 *   (sv_check_ready) -> STOPPING (wd_server_stop) -> LINGER
 *   (sv_maybe_finish) -> CLOSED (wd_server_close, from any state).
 *
 * Readiness: after the devices opened, with packs.prepare: startup every
 * device prepares and checks every pack (setup items, served between
 * reductions; the smallest datasets first, so that a 4 MiB pack does not
 * wait for a 1 GiB one).  Once all those came back (and the sockets
 * listen), StatusReply.ready turns true and READY=1 goes to the supervisor
 * (sd_notify).  With packs.prepare: first-use nothing is prepared at
 * start-up and READY=1 comes once the sockets listen (and, either way,
 * only once the metrics page and probes answer: wd_server_serving, after
 * reload.c's service started); the first hash job
 * on a pack and device queues its preparation (sv_prepare), and the job
 * waits for it in PREPARING (hashjob.h).  Either way, each preparation
 * that comes back starts the jobs that waited for it (wd_jobs_pack_ended).
 *
 * Signals (uv_signal callbacks on the loop): SIGUSR1 logs one status line
 * (sv_summary); SIGHUP (reload) and SIGQUIT (the same stop as SIGTERM) are
 * reload.c's.
 *
 * Stop (SIGINT/SIGTERM, and SIGQUIT through reload.c): new reductions and hash
 * jobs are answered SHUTDOWN, hash jobs are cancelled, parked polls are
 * answered.  Once no reduction is on a device and no hash job is left, the
 * loop lingers (LINGER): it keeps receiving, answers what still arrives
 * (work with SHUTDOWN), and closes only when every request received has
 * its reply out and none came in for SV_LINGER_MS (the pipes are drained:
 * a request pipelined before the stop is answered, never cut off with its
 * connection; issue 35, finding 4), or SV_LINGER_MAX_MS after LINGER
 * began (a client that keeps sending cannot hold the stop).  Then it
 * closes contexts, socket, device threads and handles, and uv_run
 * returns.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "daemon/bulk/filered.h"
#include "daemon/bulk/readers.h"
#include "daemon/bulk/regionpin.h"
#include "daemon/log.h"
#include "daemon/net/front.h"
#include "daemon/net/nngfix.h"
#include "daemon/net/req.h"
#include "daemon/rq/park.h"
#include "daemon/rq/route.h"
#include "daemon/server_int.h"
#include "daemon/stats.h"
#include "core/base.h"
#include "core/thread.h"
#include "workers/hash/pack.h"

#define SV_LINGER_MS 100   /* quiet after the last reply, before closing */
#define SV_LINGER_MAX_MS 5000  /* LINGER at most, however busy */
#define SV_TICK_MS 1000    /* job table pruning, hash-rate samples */

static void sv_maybe_finish(wd_server *s);

/* Device threads: an item has ended. */
static void sv_post(void *arg, wd_work *w)
{
  wd_server *s = arg;
  pthread_mutex_lock(&s->mu);
  wv_q_push(&s->done, &w->doneq);
  pthread_mutex_unlock(&s->mu);
  uv_async_send(&s->wake);
}

/* The watchers (wd_server_watch) hear of a state move. */
static void sv_moved(wd_server *s)
{
  atomic_store(&s->stopping, s->state >= WD_SV_STOPPING);
  for (size_t i = 0; i < WD_SV_WATCHERS; i++)
    if (s->watch[i].fn != NULL)
      s->watch[i].fn(s->watch[i].arg);
}

/* LISTENING -> READY once the start-up preparations are all back. */
static void sv_check_ready(wd_server *s)
{
  if (s->state != WD_SV_LISTENING || s->preps_left > 0 || !s->serving)
    return;
  s->state = WD_SV_READY;
  s->was_ready = 1;
  sv_moved(s);  /* /readyz turns 200 before READY=1 goes out */
  if (s->cfg->packs_prepare == WD_PREPARE_FIRST_USE)
    wd_info("ready: packs are prepared on first use (packs.prepare)");
  else
    wd_info("ready: every device has prepared its packs");
  char state[96];
  snprintf(state, sizeof state, "READY=1\nSTATUS=serving %zu device(s)",
           s->n_devs);
  wd_notify(state);
}

/* A start-up preparation came back. */
static void sv_prep_ended(void *arg, wd_prep *p)
{
  wd_server *s = arg;
  s->preps_left--;
  wd_jobs_pack_ended(s->jobs, p->work.dev, p->index);
  sv_check_ready(s);
}

/* A preparation a job asked for came back. */
static void sv_demand_ended(void *arg, wd_prep *p)
{
  wd_server *s = arg;
  wd_jobs_pack_ended(s->jobs, p->work.dev, p->index);
  free(p);
}

/* hashjob.c: a job found `pack` pending on d with no preparation queued
 * (packs.prepare: first-use, or an earlier one could not be queued). */
static int sv_prepare(void *arg, wd_device *d, const wv_pack *pack,
                      size_t slot, wave_error *err)
{
  wd_server *s = arg;
  wd_prep *p = calloc(1, sizeof *p);
  if (p == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  p->pack = pack;
  p->index = slot;
  p->ended = sv_demand_ended;
  p->arg = s;
  int rc = wd_prep_submit(s->packstate, d, p, err);
  if (rc != 0) {
    free(p);
    return rc;
  }
  wd_info("device %s: preparing pack %s for its first job", wd_device_name(d),
          wv_pack_name(pack));
  return 0;
}

/* Dataset bytes: the order start-up prepares packs in. */
static uint64_t sv_pack_bytes(const wv_pack *p)
{
  return p->closed ? 0 : p->dataset_items * sizeof(uint64_t);
}

/* Loop: cancel the jobs of the connections that closed since last time. */
static void sv_pipes_gone(wd_server *s)
{
  uint32_t *ids;
  size_t n;
  wd_gone_take(&s->fe->gone, &ids, &n);
  for (size_t i = 0; i < n && s->state != WD_SV_CLOSED; i++)
    wd_jobs_drop_pipe(s->jobs, ids[i]);
  free(ids);
}

/* nng's thread (net/front.c's hook): a closed connection's regions and
 * streams go (a region in use by a job is unmapped after it). */
static void sv_pipe_gone(void *arg, uint32_t pipe)
{
  wd_server *s = arg;
  wd_bulk_drop_pipe(s->bulk, pipe);
}

/* bulk/region.h's unpin callback: the device of that slot unpins. */
static void sv_unpin(void *arg, wd_region *r, unsigned slot)
{
  wd_server *s = arg;
  wd_regionpin_unpin(s->devs, s->n_devs, r, slot);
}

/* net/front.c's hooks: each context's handler half (wd_call). */
/* Device threads: a device's staging ring made as it opens
 * (limits.staging_rings: startup), and given back as it closes. */
static void sv_dev_opened(void *arg, const wv_dev *dev, const wv_caps *caps)
{
  wd_file_ring_prepare(((wd_server *)arg)->readers, dev, caps);
}

static void sv_dev_closing(void *arg, const wv_dev *dev)
{
  wd_ring_forget(((wd_server *)arg)->readers, dev);
}

/* The file readers, sized once (limits.file_readers; readers.h), and
 * the devices' hooks for their rings. */
static int sv_readers_new(wd_server *s, wave_error *err)
{
  int rc = wd_readers_new(s->cfg->limits.file_readers, &s->readers, err);
  if (rc != 0)
    return rc;
  wd_info("%u file readers (limits.file_readers)",
          wd_readers_size(s->readers));
  s->dev_hooks = (wd_dev_hooks){
      .opened = s->cfg->limits.staging_rings == WD_PREPARE_STARTUP
                    ? sv_dev_opened : NULL,
      .closing = sv_dev_closing, .arg = s};
  return 0;
}

static void sv_call_init(void *arg, wd_req *c)
{
  c->call->srv = arg;
  c->call->ctx = c;
}

static void sv_call_clear(wd_req *c)
{
  free(c->call->spans);
  c->call->spans = NULL;
}

static void sv_wake_cb(uv_async_t *h)
{
  wd_server *s = h->data;
  pthread_mutex_lock(&s->mu);
  wv_qnode done, in;
  wv_q_init(&done);
  wv_q_init(&in);
  wv_q_move(&s->done, &done);
  pthread_mutex_unlock(&s->mu);
  wd_front_take(s->fe, &in);
  sv_pipes_gone(s);  /* before this round's requests: see peer.h */
  for (wv_qnode *n; (n = wv_q_pop(&done)) != NULL;) {
    wd_work *w = WV_Q_ENTRY(n, wd_work, doneq);
    w->ops->done(w);
  }
  for (wv_qnode *n; (n = wv_q_pop(&in)) != NULL;) {
    wd_req *c = WV_Q_ENTRY(n, wd_req, inq);
    if (s->state == WD_SV_CLOSED)  /* drained after close: nobody to answer */
      wd_front_drop(c);
    else if (!wd_front_retired(c))
      wd_route(c);
  }
  sv_maybe_finish(s);
}

/* ---- stop ----------------------------------------------------------------- */

static void sv_tick(uv_timer_t *t)
{
  wd_server *s = t->data;
  if (s->state != WD_SV_LINGER)  /* status's and the metrics' rates */
    wd_stats_sample();
  if (s->state == WD_SV_LINGER) {
    if (!wd_front_quiet(s->fe, SV_LINGER_MS) &&
        uv_now(s->loop) - s->linger_at < SV_LINGER_MAX_MS) {
      uv_timer_start(&s->tick, sv_tick, SV_LINGER_MS / 4, 0);
      return;  /* requests still arrive or are answered */
    }
    wd_server_close(s);
    return;
  }
  wd_jobs_prune(s->jobs);
}

/* STOPPING -> LINGER once nothing is in flight. */
static void sv_maybe_finish(wd_server *s)
{
  if (s->state != WD_SV_STOPPING || s->reduce_inflight > 0 ||
      wd_jobs_active(s->jobs) > 0)
    return;
  s->state = WD_SV_LINGER;
  s->linger_at = uv_now(s->loop);
  wd_info("in-flight work done; closing once every request is answered");
  /* the last replies are queued on their pipes; give them time to leave
   * (nng 1.5 has no linger) */
  uv_timer_start(&s->tick, sv_tick, SV_LINGER_MS, 0);
}

void wd_server_stop(wd_server *s)
{
  if (s->state >= WD_SV_STOPPING) {
    wd_info("already stopping: %u reductions, %zu hash jobs in flight",
            s->reduce_inflight, wd_jobs_active(s->jobs));
    return;
  }
  s->state = WD_SV_STOPPING;
  sv_moved(s);
  wd_notify("STOPPING=1");
  wd_info("stopping: no new work; finishing %u reductions, cancelling %zu "
          "hash jobs", s->reduce_inflight, wd_jobs_active(s->jobs));
  wd_jobs_cancel_all(s->jobs, WAVE_ESHUTDOWN);
  wd_park_answer_all(s);
  sv_maybe_finish(s);
}

static void sv_signal(uv_signal_t *h, int signum)
{
  wd_server *s = h->data;
  wd_info("%s received", signum == SIGINT ? "SIGINT" : "SIGTERM");
  wd_server_stop(s);
}

/* SIGUSR1: one line that says how the daemon is doing. */
static void sv_summary(uv_signal_t *h, int signum)
{
  (void)signum;
  wd_server *s = h->data;
  wd_info("status: up %" PRIu64 " s, %s, %zu device(s), %zu connection(s), "
          "%zu context(s), %zu parked poll(s), %u reduction(s) and %zu hash "
          "job(s) in flight, %" PRIu64 " served, %" PRIu64 " failed, %u "
          "ipc listener recovery(ies), %" PRIu64 " aborted handshake(s) "
          "defused (nng#1518)",
          (uv_hrtime() - s->t0) / 1000000000u,
          s->state >= WD_SV_STOPPING ? "stopping"
          : s->state == WD_SV_READY  ? "ready"
                                     : "starting",
          s->n_devs, s->fe->peers ? wd_peers_count(s->fe->peers) : 0,
          s->fe->n_reqs, s->fe->n_parked, s->reduce_inflight,
          wd_jobs_active(s->jobs), s->served, s->failed,
          wd_listeners_recoveries(s->fe->lst), wd_nngfix_count());
}

static void sv_noop_close(uv_handle_t *h) { (void)h; }

void wd_server_close(wd_server *s)
{
  if (s->state == WD_SV_CLOSED)
    return;
  s->state = WD_SV_CLOSED;
  sv_moved(s);
  wd_health_stop(s->health);  /* before the devices go */
  s->health = NULL;
  wd_front_close(s->fe);
  /* then the devices: whatever they still hold comes back through post */
  for (size_t i = 0; i < s->n_devs; i++)
    wd_device_stop(s->devs[i]);
  if (s->handles) {
    sv_wake_cb(&s->wake);  /* drain: frees what arrived meanwhile */
    uv_close((uv_handle_t *)&s->wake, sv_noop_close);
    uv_close((uv_handle_t *)&s->sigint, sv_noop_close);
    uv_close((uv_handle_t *)&s->sigterm, sv_noop_close);
    uv_close((uv_handle_t *)&s->sigusr1, sv_noop_close);
    uv_close((uv_handle_t *)&s->tick, sv_noop_close);
  }
  wd_info("closed");
}

/* ---- start ---------------------------------------------------------------- */

static uint64_t sv_instance(void)
{
  uint64_t r = 0;
  while (r == 0) {
    if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
      r = uv_hrtime() ^ ((uint64_t)getpid() << 32);
    r &= (1ull << 53) - 1;  /* exact in JSON numbers */
  }
  return r;
}

int wd_server_init(uv_loop_t *loop, const wd_config *cfg,
                   const wd_packs *packs, wd_server **out, wave_error *err)
{
  *out = NULL;
  wd_server *s = calloc(1, sizeof *s);
  if (s == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  s->loop = loop;
  s->cfg = cfg;
  s->packs = packs;
  s->t0 = uv_hrtime();
  s->instance = sv_instance();
  wv_q_init(&s->done);
  pthread_mutex_init(&s->mu, NULL);
  *out = s;
  int rc;
  if ((rc = wd_jobs_new(&cfg->limits, s->instance, wd_park_job_ended, s,
                        &s->jobs)) != 0)
    return wv_seterr(err, rc, NULL);
  if ((rc = sv_readers_new(s, err)) != 0 ||
      (rc = wd_bulk_new(cfg, s->readers, sv_unpin, s, &s->bulk, err)) != 0 ||
      (rc = wd_pool_start(cfg->limits.decode_threads, &s->pool, err)) != 0 ||
      (rc = wd_front_new(loop, cfg, s->pool, s->bulk, &s->wake, &s->fe,
                         err)) != 0)
    return rc;
  s->fe->failed = &s->failed;
  s->fe->up = (wd_front_up){.size = sizeof(wd_call), .init = sv_call_init,
                            .clear = sv_call_clear,
                            .decode = wd_route_decode, .arg = s};
  s->fe->pipe_gone = sv_pipe_gone;
  s->fe->pipe_gone_arg = s;
  uv_async_init(loop, &s->wake, sv_wake_cb);
  uv_signal_init(loop, &s->sigint);
  uv_signal_init(loop, &s->sigterm);
  uv_signal_init(loop, &s->sigusr1);
  uv_timer_init(loop, &s->tick);
  s->wake.data = s->sigint.data = s->sigterm.data = s->tick.data = s;
  s->sigusr1.data = s;
  s->handles = 1;
  uv_signal_start(&s->sigint, sv_signal, SIGINT);
  uv_signal_start(&s->sigterm, sv_signal, SIGTERM);
  uv_signal_start(&s->sigusr1, sv_summary, SIGUSR1);
  uv_timer_start(&s->tick, sv_tick, SV_TICK_MS, SV_TICK_MS);

  if ((s->devs = calloc(cfg->n_devices, sizeof *s->devs)) == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  for (size_t i = 0; i < cfg->n_devices; i++) {
    rc = wd_device_start(&cfg->devices[i], (unsigned)i,
                         cfg->limits.jobs_in_flight, sv_post, s,
                         &s->dev_hooks, &s->devs[i], err);
    if (rc != 0)
      return rc;
    s->n_devs = i + 1;
  }
  size_t opened = 0;
  for (size_t i = 0; i < s->n_devs; i++)
    if (wd_device_wait_open(s->devs[i]) == 0)
      opened++;
  if (opened == 0)
    return wv_seterr(err, WAVE_EDEVICE, "no device opened (of %zu configured)",
                     s->n_devs);
  if (opened < s->n_devs)
    wd_warn("%zu of %zu devices opened; serving those", opened, s->n_devs);
  if ((rc = wd_health_start(s->devs, s->n_devs, &s->health, err)) != 0)
    return rc;
  if ((rc = wd_packstate_new(s->devs, s->n_devs, packs->n, &s->packstate,
                             err)) != 0)
    return rc;
  wd_jobs_set_packstate(s->jobs, s->packstate);
  wd_jobs_set_prepare(s->jobs, sv_prepare, s);
  /* every device prepares every pack, in steps, between its reductions,
   * the smallest dataset first (a device builds one at a time) */
  s->preps = calloc(s->n_devs * packs->n + 1, sizeof *s->preps);
  size_t *order = calloc(packs->n + 1, sizeof *order);
  if (s->preps == NULL || order == NULL) {
    free(order);
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  }
  for (size_t k = 0; k < packs->n; k++) {  /* insertion sort: a few packs */
    size_t m = k;
    while (m > 0 &&
           sv_pack_bytes(packs->list[order[m - 1]]) >
               sv_pack_bytes(packs->list[k])) {
      order[m] = order[m - 1];
      m--;
    }
    order[m] = k;
  }
  int first_use = cfg->packs_prepare == WD_PREPARE_FIRST_USE;
  for (size_t i = 0; i < s->n_devs && rc == 0; i++) {
    if (!wd_device_has_hash(s->devs[i]))
      continue;
    for (size_t n = 0; n < packs->n && rc == 0; n++) {
      size_t k = order[n];
      if (first_use) {
        wd_pack_state st = {.state = WD_CHECK_PENDING};
        snprintf(st.detail, sizeof st.detail, "not prepared yet: "
                 "packs.prepare is first-use, the first job prepares it");
        wd_packstate_set(s->packstate, (unsigned)i, k, &st);
        continue;
      }
      wd_prep *p = &s->preps[i * packs->n + k];
      p->pack = packs->list[k];
      p->index = k;
      p->ended = sv_prep_ended;
      p->arg = s;
      if ((rc = wd_prep_submit(s->packstate, s->devs[i], p, err)) == 0)
        s->preps_left++;
    }
  }
  free(order);
  return rc;
}

int wd_server_listen(wd_server *s, wave_error *err)
{
  int rc = wd_front_listen(s->fe, err);
  if (rc == 0)
    s->state = WD_SV_LISTENING;
  return rc;
}

void wd_server_serving(wd_server *s)
{
  s->serving = 1;
  sv_check_ready(s);
}

/* READY, or stopping after it was: StatusReply.ready says what it said
 * when the stop began (a stop before READY never turns it true). */
int wd_server_ready(const wd_server *s)
{
  return s->state == WD_SV_READY ||
         (s->state > WD_SV_READY && s->was_ready);
}

wd_sv_state wd_server_state(const wd_server *s) { return s->state; }

int wd_server_readiness(const wd_server *s, char *why, size_t n)
{
  if (s->state == WD_SV_STARTING) {
    snprintf(why, n, "starting: the sockets are not up yet");
    return 0;
  }
  if (s->state == WD_SV_LISTENING) {
    if (s->preps_left > 0)
      snprintf(why, n, "starting: %zu pack preparation(s) not back yet",
               s->preps_left);
    else
      snprintf(why, n, "starting: the metrics and signals are not up yet");
    return 0;
  }
  if (s->state != WD_SV_READY) {
    snprintf(why, n, "stopping");
    return 0;
  }
  size_t faulted = 0;
  for (size_t i = 0; i < s->n_devs; i++)
    faulted += wd_device_faulted(s->devs[i]) != 0;
  if (s->n_devs > 0 && faulted == s->n_devs) {
    snprintf(why, n, "every device is faulted (%zu)", faulted);
    return 0;
  }
  snprintf(why, n, "ready");
  return 1;
}

int wd_server_watch(wd_server *s, void (*fn)(void *arg), void *arg)
{
  for (size_t i = 0; i < WD_SV_WATCHERS; i++)
    if (s->watch[i].fn == NULL) {
      s->watch[i].fn = fn;
      s->watch[i].arg = arg;
      return 0;
    }
  return -1;
}

void wd_server_unwatch(wd_server *s, void *arg)
{
  for (size_t i = 0; i < WD_SV_WATCHERS; i++)
    if (s->watch[i].arg == arg)
      s->watch[i].fn = NULL, s->watch[i].arg = NULL;
}

void wd_server_free(wd_server *s)
{
  if (s == NULL)
    return;
  wd_server_close(s);
  wd_pool_free(s->pool);
  /* before the devices go: a region released here may ask its device to
   * unpin it */
  if (s->fe != NULL)
    wd_front_clear_all(s->fe);
  for (size_t i = 0; i < s->n_devs; i++)
    wd_device_free(s->devs[i]);
  free(s->devs);
  free(s->preps);
  wd_packstate_free(s->packstate);
  wd_front_free(s->fe);
  wd_bulk_free(s->bulk);
  /* last: the devices are closed and the decode threads joined, so no
   * read of the pool's is waited for */
  wd_readers_free(s->readers);
  wd_jobs_free(s->jobs);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

/* ---- for metrics.c and reload.c (loop thread) ----------------------------- */

wd_packstate *wd_server_packstate(const wd_server *s) { return s->packstate; }

wd_device *const *wd_server_devices(const wd_server *s, size_t *n)
{
  *n = s->n_devs;
  return s->devs;
}

const wd_packs *wd_server_packs(const wd_server *s) { return s->packs; }

const wd_config *wd_server_config(const wd_server *s) { return s->cfg; }

void wd_server_guards(const wd_server *s, size_t i, wd_guard_view *out)
{
  if (s->health != NULL) {
    wd_health_guard(s->health, i, out);
    return;
  }
  memset(out, 0, sizeof *out);
  out->state = "off";
}

void wd_server_health(const wd_server *s, size_t i, wv_health *out)
{
  if (s->health != NULL) {
    wd_health_get(s->health, i, out);
    return;
  }
  memset(out, 0, sizeof *out);
  snprintf(out->why, sizeof out->why, "not read: the daemon is closing");
}

struct wd_listeners *wd_server_listeners(const wd_server *s)
{
  return s->fe ? s->fe->lst : NULL;
}

struct wd_guard *wd_server_guard(const wd_server *s)
{
  return s->fe ? wd_listeners_guard(s->fe->lst) : NULL;
}

int wd_server_stopping(const wd_server *s)
{
  return s->state != WD_SV_LISTENING && s->state != WD_SV_READY;
}

int wd_server_relisten(wd_server *s, const wd_config *cfg, size_t *failed,
                       wave_error *err)
{
  *failed = cfg->n_listen;
  if (s->fe->lst == NULL)
    return wv_seterr(err, WAVE_ESHUTDOWN, "not listening");
  /* as in wd_front_listen: threads nng may start get no signals */
  int rc;
  WV_MASKED(rc = wd_listeners_update(s->fe->lst, cfg, failed, err));
  return rc;
}

void wd_server_set_packs(wd_server *s, const wd_packs *packs)
{
  s->packs = packs;
}

void wd_server_reconfigure(wd_server *s, const wd_config *cfg)
{
  s->cfg = cfg;
  if (s->health != NULL && cfg->n_devices == s->n_devs)
    wd_health_set_limits(s->health, cfg->devices, cfg->n_devices);
  wd_jobs_set_limits(s->jobs, &cfg->limits);
  wd_front_reconfigure(s->fe, cfg);
}
