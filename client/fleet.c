/* fleet.c - the fleet coordinator (include/wave/fleet.h): pieces pulled by
 * one thread per daemon, merged by fleet_merge.c.
 *
 * The pool.  A call builds its pieces, puts their indices in one FIFO and
 * starts `depth` threads per daemon (2 by default: while one piece's
 * answer travels back, the daemon already has the next queued).  A thread
 * takes the next index, runs the piece on its daemon's wave_client (one
 * REQ socket per daemon, each call on its own nng context) and reports:
 *   - done: the piece's answer is stored in its slot;
 *   - daemon failure (the daemon is silent, shut down, restarted, lacks
 *     the pack, its devices fault, it answers AUTH, lies, stalls or hangs
 *     up: p->why says which): the index goes back at the head of
 *     the FIFO for the others and the daemon's threads end, the daemon
 *     marked failed with the reason;
 *   - BUSY: the index goes back and the thread pauses briefly;
 *   - anything else is the job's own error (bad input, a limit): the call
 *     ends with it.
 * The calling thread waits on the pool's condition variable, calls the
 * progress callback every 200 ms, and joins the threads.  Cancel is an
 * atomic flag every thread reads between exchanges (a hash poll waits at
 * most 200 ms on the daemon); a thread that sees it cancels its piece's
 * job on its daemon, so the cancel reaches every daemon with work.
 *
 * Hash pieces are guided by default (wv_fleet_hash_guided): each about a
 * 1/(4 daemons) share of the nonces left, so they shrink toward the end
 * and the last ones, held two per daemon, are small; with pieces of one
 * size the daemons' finishing times spread by up to two whole pieces.
 *
 * The hash pieces speak protocol 2 directly (segment_log2, want_segments,
 * segment paging, the daemon instance), through wv_fleet_call: the
 * exchange of wv_client_call, but one that nng's pipe-removed event
 * (nng_pipe_notify) aborts at once, so a daemon that hangs up while it
 * holds a piece loses it now rather than after the reply timeout.
 *
 * Members are not believed (docs/fleet.md, "Checks"): fl_hash_check
 * tests every DONE answer's ranges, counts and order, and, with the
 * caller's re-hash function, its winners, best and one random segment.
 * A liar is dropped and every piece it answered goes back in the queue
 * (fl_drop); a piece whose `done` stands still for the stall deadline is
 * cancelled there and moved, its daemon dropped.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/client_int.h"
#include "client/fleet_int.h"
#include "client/fleet_merge.h"
#include "core/base.h"
#include "wave/fleet.h"

double wv_fleet_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void fl_sleep_ms(unsigned ms)
{
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Which side an error is on. */
static int fl_class(int code)
{
  switch (code) {
  case WAVE_EOK: return FL_OK;
  case WAVE_EBUSY: return FL_AGAIN;
  case WAVE_EIO: case WAVE_ETIMEDOUT: case WAVE_ESHUTDOWN: case WAVE_ENOJOB:
  case WAVE_EDEVFAULT: case WAVE_EDEVICE: case WAVE_ENODEV:
  case WAVE_ESELFCHECK: case WAVE_EMISMATCH: case WAVE_EPACK:
  case WAVE_EVERSION: case WAVE_EUNSUPPORTED:
  case WAVE_EAUTH:  /* one daemon refusing the fleet's token is that
                       daemon's: the others may still take the job */
    return FL_DAEMON;
  default: return FL_JOB;
  }
}

/* ---- open / close ------------------------------------------------------- */

int wave_fleet_open(wave_fleet **out, const char *const *urls, size_t n,
                    wave_error *err)
{
  if (out == NULL || (n > 0 && urls == NULL))
    return wv_seterr(err, WAVE_EARG, "wave_fleet_open: NULL argument");
  *out = NULL;
  if (n == 0)
    return wv_seterr(err, WAVE_EARG, "a fleet needs at least one daemon");
  for (size_t i = 0; i < n; i++) {
    if (urls[i] == NULL || urls[i][0] == '\0')
      return wv_seterr(err, WAVE_EARG, "fleet URL %zu is empty", i);
    for (size_t j = 0; j < i; j++)
      if (strcmp(urls[i], urls[j]) == 0)
        return wv_seterr(err, WAVE_EARG, "fleet URL '%s' is listed twice",
                         urls[i]);
  }
  wave_fleet *f = calloc(1, sizeof *f);
  if (f != NULL)
    pthread_mutex_init(&f->mu, NULL);
  if (f == NULL || (f->c = calloc(n, sizeof *f->c)) == NULL ||
      (f->urls = calloc(n, sizeof *f->urls)) == NULL ||
      (f->why = calloc(n, sizeof *f->why)) == NULL ||
      (f->closes = calloc(n, sizeof *f->closes)) == NULL ||
      (f->gone = calloc(n, sizeof *f->gone)) == NULL) {
    wave_fleet_close(f);
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  }
  f->n = n;
  f->stall_ms = WAVE_FLEET_STALL_MS;
  atomic_init(&f->cancel, 0);
  for (size_t i = 0; i < n; i++) {
    atomic_init(&f->closes[i], 0);
    atomic_init(&f->gone[i], 0);
  }
  for (size_t i = 0; i < n; i++) {
    nng_url *u = NULL;
    int rv = nng_url_parse(&u, urls[i]);
    nng_url_free(u);
    if (rv != 0) {
      wave_fleet_close(f);
      return wv_seterr(err, WAVE_EARG, "fleet URL '%s': %s", urls[i],
                       nng_strerror(rv));
    }
    if ((f->urls[i] = strdup(urls[i])) == NULL) {
      wave_fleet_close(f);
      return wv_seterr(err, WAVE_ENOMEM, NULL);
    }
  }
  *out = f;
  return 0;
}

void wave_fleet_close(wave_fleet *f)
{
  if (f == NULL)
    return;
  for (size_t i = 0; i < f->n; i++) {
    if (f->c && f->c[i])
      wave_client_close(f->c[i]);
    if (f->urls)
      free(f->urls[i]);
  }
  pthread_mutex_destroy(&f->mu);
  free(f->why);
  free((void *)f->closes);
  free((void *)f->gone);
  free(f->copts);
  free(f->c);
  free(f->urls);
  free(f);
}

size_t wave_fleet_size(const wave_fleet *f) { return f ? f->n : 0; }

const char *wave_fleet_url(const wave_fleet *f, size_t i)
{
  return f && i < f->n ? f->urls[i] : NULL;
}

void wave_fleet_set_timeout(wave_fleet *f, int timeout_ms)
{
  if (f == NULL)
    return;
  pthread_mutex_lock(&f->mu);
  f->timeout_ms = timeout_ms > 0 ? timeout_ms : 1;
  for (size_t i = 0; i < f->n; i++)
    if (f->c[i])
      wave_client_set_timeout(f->c[i], f->timeout_ms);
  pthread_mutex_unlock(&f->mu);
}

void wave_fleet_cancel(wave_fleet *f)
{
  if (f)
    atomic_store(&f->cancel, 1);
}

void wave_fleet_set_stall(wave_fleet *f, int stall_ms)
{
  if (f)
    f->stall_ms = stall_ms > 0 ? stall_ms : WAVE_FLEET_STALL_MS;
}

void wave_fleet_set_rehash(wave_fleet *f, wave_fleet_rehash_fn fn, void *arg)
{
  if (f) {
    f->rehash = fn;
    f->rehash_arg = arg;
  }
}

int wave_fleet_member_why(const wave_fleet *f, size_t i)
{
  return f && i < f->n ? f->why[i] : WAVE_FLEET_KEPT;
}

const char *wave_fleet_drop_name(int why)
{
  switch (why) {
  case WAVE_FLEET_KEPT: return "kept";
  case WAVE_FLEET_FAILED: return "failed";
  case WAVE_FLEET_LIED: return "lied";
  case WAVE_FLEET_STALLED: return "stalled";
  case WAVE_FLEET_AUTH: return "auth";
  case WAVE_FLEET_CLOSED: return "closed";
  default: return "?";
  }
}

/* ---- the pool ----------------------------------------------------------- */

typedef struct fl_thread {
  fl_pool *p;
  size_t d, slot;             /* daemon, and this thread's inflight slot */
  pthread_t th;
} fl_thread;

static void fl_push_front(fl_pool *p, size_t i)
{
  p->head = (p->head + p->cap - 1) % p->cap;
  p->fifo[p->head] = i;
}

/* Daemon d is dropped (p->mu held).  A liar's answers so far are not
 * believed either: every piece it answered goes back in the queue. */
static void fl_drop(fl_pool *p, size_t d, int why, const wave_error *e)
{
  wave_fleet_member *m = &p->members[d];
  if (m->failed)
    return;
  m->failed = 1;
  m->error = *e;
  p->f->why[d] = why;
  p->alive--;
  /* its other piece: a liar's answer is not wanted, a staller's or an
   * AUTH refuser's would not come, and one that hung up has no connection
   * left to answer on (nng would wait for a redial until the timeout) */
  if (why != WAVE_FLEET_FAILED)
    atomic_store(&p->f->gone[d], 1);
  if (why != WAVE_FLEET_LIED)
    return;
  for (size_t i = 0; i < p->items; i++)
    if (p->owner[i] == d) {
      p->owner[i] = SIZE_MAX;
      fl_push_front(p, i);
      p->remaining++;
      p->retried++;
      atomic_fetch_sub(&p->done, p->work[i]);
    }
  m->pieces = 0;
  m->work = 0;
}

static void *fl_worker(void *arg)
{
  fl_thread *t = arg;
  fl_pool *p = t->p;
  wave_fleet_member *m = &p->members[t->d];
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (p->head == p->tail && p->remaining > 0 && p->fatal == 0 &&
           !m->failed && !atomic_load(&p->f->cancel))
      pthread_cond_wait(&p->cv, &p->mu);
    if (p->remaining == 0 || p->fatal != 0 || m->failed ||
        atomic_load(&p->f->cancel))
      break;
    size_t i = p->fifo[p->head];
    p->head = (p->head + 1) % p->cap;
    double t0 = wv_fleet_now();
    if (p->first[t->d] == 0)
      p->first[t->d] = t0;
    pthread_mutex_unlock(&p->mu);

    wave_error e = {0};
    p->why[t->slot] = 0;
    int rc = p->run(p, t->d, t->slot, i, &e);
    double t1 = wv_fleet_now();
    atomic_store(&p->inflight[t->slot], 0);

    pthread_mutex_lock(&p->mu);
    p->last[t->d] = t1;
    int cls = fl_class(rc);
    int why = p->why[t->slot];
    if (rc == WAVE_EAUTH)
      why = WAVE_FLEET_AUTH;
    if (rc != 0 && why != 0)
      cls = FL_DAEMON;
    if (rc == WAVE_ECANCELLED && atomic_load(&p->f->cancel))
      cls = FL_JOB;
    if (cls == FL_OK && m->failed && p->f->why[t->d] == WAVE_FLEET_LIED) {
      fl_push_front(p, i);  /* a liar's answer, however whole */
      p->retried++;
    } else if (cls == FL_OK) {  /* a whole answer counts even from a daemon
                                   that failed meanwhile on its other piece */
      p->remaining--;
      p->owner[i] = t->d;
      m->pieces++;
      m->work += p->work[i];
      atomic_fetch_add(&p->done, p->work[i]);
    } else if (cls == FL_AGAIN) {
      fl_push_front(p, i);
      pthread_mutex_unlock(&p->mu);
      fl_sleep_ms(50);
      pthread_mutex_lock(&p->mu);
    } else if (cls == FL_DAEMON) {
      fl_push_front(p, i);
      p->retried++;
      fl_drop(p, t->d, why ? why : WAVE_FLEET_FAILED, &e);
    } else if (p->fatal == 0) {
      p->fatal = rc;
      p->fatal_err = e;
    }
    pthread_cond_broadcast(&p->cv);
  }
  p->running--;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

/* Run items 0..n-1 (work[i] each) over the fleet.  0 when every item is
 * done; the first job error; WAVE_ECANCELLED; or, when every daemon
 * failed, WAVE_EIO naming them. */
int wv_fleet_pool_run(wave_fleet *f, size_t n, const uint64_t *work,
                      unsigned depth, fl_run_fn run, void *ctx,
                      wave_fleet_member *members, uint64_t *retried,
                      wave_fleet_progress_fn progress, void *parg,
                      wave_error *err)
{
  fl_pool p;
  memset(&p, 0, sizeof p);
  p.f = f;
  p.run = run;
  p.ctx = ctx;
  p.items = p.remaining = n;
  p.cap = n + 1;
  p.members = members;
  p.work = work;
  for (size_t i = 0; i < n; i++)
    p.total += work[i];
  atomic_init(&p.done, 0);
  if (depth == 0)
    depth = 2;
  size_t nth = f->n * depth;
  p.fifo = calloc(p.cap, sizeof *p.fifo);
  p.inflight = calloc(nth, sizeof *p.inflight);
  p.why = calloc(nth, sizeof *p.why);
  p.owner = malloc((n ? n : 1) * sizeof *p.owner);
  p.first = calloc(f->n, sizeof *p.first);
  p.last = calloc(f->n, sizeof *p.last);
  fl_thread *th = calloc(nth, sizeof *th);
  if (p.fifo == NULL || p.inflight == NULL || th == NULL || p.first == NULL ||
      p.last == NULL || p.why == NULL || p.owner == NULL) {
    free(p.fifo);
    free(p.inflight);
    free(p.why);
    free(p.owner);
    free(p.first);
    free(p.last);
    free(th);
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  }
  for (size_t i = 0; i < n; i++) {
    p.fifo[p.tail++] = i;
    p.owner[i] = SIZE_MAX;
  }
  for (size_t t = 0; t < nth; t++)
    atomic_init(&p.inflight[t], 0);
  for (size_t d = 0; d < f->n; d++) {
    memset(&members[d], 0, sizeof members[d]);
    members[d].url = f->urls[d];
    f->why[d] = WAVE_FLEET_KEPT;
    atomic_store(&f->gone[d], 0);
  }
  pthread_mutex_init(&p.mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&p.cv, &ca);
  pthread_condattr_destroy(&ca);

  double t0 = wv_fleet_now();
  pthread_mutex_lock(&p.mu);
  /* depth threads per daemon: while one piece's answer travels back, the
   * daemon already has the next one queued */
  size_t started = 0;
  for (size_t t = 0; t < nth && n > 0; t++) {
    th[t] = (fl_thread){.p = &p, .d = t % f->n, .slot = t};
    if (pthread_create(&th[t].th, NULL, fl_worker, &th[t]) != 0)
      break;
    started++;
  }
  p.running = started;
  p.alive = started < f->n ? started : f->n;
  size_t daemons = p.alive;
  if (started == 0 && n > 0) {
    p.fatal = WAVE_ENOMEM;
    wv_seterr(&p.fatal_err, WAVE_ENOMEM, "cannot start fleet threads");
  }
  while (p.running > 0) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += 200 * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    int w = pthread_cond_timedwait(&p.cv, &p.mu, &ts);
    if (p.alive == 0 && p.remaining > 0)
      pthread_cond_broadcast(&p.cv);
    if (w == ETIMEDOUT && progress != NULL) {
      wave_fleet_progress pr = {.total = p.total, .alive = p.alive,
                                .failed = daemons - p.alive,
                                .seconds = wv_fleet_now() - t0};
      pr.done = atomic_load(&p.done);
      for (size_t t = 0; t < started; t++)
        pr.done += atomic_load(&p.inflight[t]);
      pthread_mutex_unlock(&p.mu);
      progress(&pr, parg);
      pthread_mutex_lock(&p.mu);
    }
  }
  pthread_mutex_unlock(&p.mu);
  for (size_t d = 0; d < started; d++)
    pthread_join(th[d].th, NULL);
  if (progress != NULL) {
    wave_fleet_progress pr = {.done = atomic_load(&p.done), .total = p.total,
                              .alive = p.alive, .failed = daemons - p.alive,
                              .seconds = wv_fleet_now() - t0};
    progress(&pr, parg);
  }

  int rc = 0;
  if (p.fatal != 0) {
    rc = wv_seterr(err, p.fatal, "%s", p.fatal_err.message);
  } else if (atomic_load(&f->cancel) && p.remaining > 0) {
    rc = wv_seterr(err, WAVE_ECANCELLED, "cancelled; every daemon's piece "
                   "was cancelled");
  } else if (p.remaining > 0) {
    char msg[sizeof err->message];
    size_t o = (size_t)snprintf(msg, sizeof msg, "every daemon was "
                                "dropped:");
    for (size_t d = 0; d < f->n && o < sizeof msg; d++)
      o += (size_t)snprintf(msg + o, sizeof msg - o, " %s (%s): %s;",
                            f->urls[d], wave_fleet_drop_name(f->why[d]),
                            members[d].error.message);
    rc = wv_seterr(err, WAVE_EIO, "%s", msg);
  }
  *retried = p.retried;
  for (size_t d = 0; d < f->n; d++)
    members[d].seconds = p.first[d] > 0 ? p.last[d] - p.first[d] : 0.0;
  pthread_cond_destroy(&p.cv);
  pthread_mutex_destroy(&p.mu);
  free(p.fifo);
  free(p.inflight);
  free(p.why);
  free(p.owner);
  free(p.first);
  free(p.last);
  free(th);
  return rc;
}

size_t wv_fleet_count_failed(const wave_fleet_member *m, size_t n)
{
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    k += m[i].failed != 0;
  return k;
}

/* ---- hash --------------------------------------------------------------- */

typedef struct fl_hash {
  const wave_hash_request *req;
  unsigned s;
  uint64_t piece;
  wv_fleet_hpart *parts;
} fl_hash;

/* The exchange of one piece's calls: daemon d, its connection, the close
 * count when the piece began, and where a close is reported. */
typedef struct fl_link {
  wave_fleet *f;
  size_t d;
  wave_client *c;
  unsigned gen;
  int *why;
} fl_link;

static int fl_hash_submit(const fl_link *l, const fl_hash *h, uint64_t nonce,
                          uint64_t count, uint64_t *job, uint64_t *inst,
                          wave_error *err)
{
  wave_client *c = l->c;
  static char all[] = "all";
  char *devs[1] = {all};
  Wave__V1__HashRequest hr = WAVE__V1__HASH_REQUEST__INIT;
  hr.pack = (char *)(h->req->pack ? h->req->pack : "");
  hr.nonce = nonce;
  hr.count = count;
  hr.target = h->req->target;
  hr.max_winners = h->req->max_winners;
  hr.client = c->tag;
  hr.segment_log2 = h->s;
  hr.want_segments = 1;
  if (h->req->n_devices > 0) {  /* the caller's device list, as given */
    hr.device = (char *)"";
    hr.n_devices = h->req->n_devices;
    hr.devices = (char **)h->req->devices;
  } else if (h->req->device && h->req->device[0]) {
    hr.device = (char *)h->req->device;
  } else {
    hr.device = (char *)"";
    hr.n_devices = 1;
    hr.devices = devs;
  }
  Wave__V1__Request r = WAVE__V1__REQUEST__INIT;
  r.body_case = WAVE__V1__REQUEST__BODY_HASH;
  r.hash = &hr;
  Wave__V1__Response *resp;
  int rv = wv_fleet_call(l->f, l->d, c, &r, WAVE__V1__RESPONSE__BODY_JOB, 0,
                         &resp, l->gen, l->why, err);
  if (rv != 0)
    return rv;
  if (resp->job == NULL || resp->job->job_id == 0) {
    wave__v1__response__free_unpacked(resp, NULL);
    return wv_seterr(err, WAVE_EIO, "%s: hash submit reply without a job id",
                     c->url);
  }
  *job = resp->job->job_id;
  *inst = resp->job->instance;
  wave__v1__response__free_unpacked(resp, NULL);
  return 0;
}

static int fl_job_call(const fl_link *l, uint64_t job, uint64_t inst,
                       unsigned wait_ms, uint64_t seg_off, int cancel,
                       Wave__V1__Response **resp, wave_error *err)
{
  wave_client *c = l->c;
  Wave__V1__Request r = WAVE__V1__REQUEST__INIT;
  Wave__V1__JobRequest jr = WAVE__V1__JOB_REQUEST__INIT;
  Wave__V1__CancelRequest cr = WAVE__V1__CANCEL_REQUEST__INIT;
  if (cancel) {
    cr.job_id = job;
    cr.instance = inst;
    r.body_case = WAVE__V1__REQUEST__BODY_CANCEL;
    r.cancel = &cr;
  } else {
    jr.job_id = job;
    jr.instance = inst;
    jr.wait_ms = wait_ms;
    jr.segment_offset = seg_off;
    r.body_case = WAVE__V1__REQUEST__BODY_JOB;
    r.job = &jr;
  }
  int rv = wv_fleet_call(l->f, l->d, c, &r, WAVE__V1__RESPONSE__BODY_JOB,
                         wait_ms, resp, l->gen, l->why, err);
  if (rv == 0 && (*resp)->job == NULL) {
    wave__v1__response__free_unpacked(*resp, NULL);
    *resp = NULL;
    return wv_seterr(err, WAVE_EIO, "%s: empty job reply", c->url);
  }
  return rv;
}

/* Copy the DONE result of a piece, fetching every page of its segments. */
static int fl_hash_collect(const fl_link *l, uint64_t job, uint64_t inst,
                           const Wave__V1__HashResult *hr, unsigned s,
                           wv_fleet_hpart *pt, wave_error *err)
{
  wave_client *c = l->c;
  uint64_t want = wv_seg_count(pt->nonce, pt->count, s);
  if (hr->segment_log2 != s || hr->segment_count != want ||
      hr->hashes != pt->count)
    return wv_seterr(err, WAVE_EVERSION,
                     "%s: piece [%llu, +%llu) came back with %llu segments "
                     "of 2^%u and %llu hashes, not %llu of 2^%u: the daemon "
                     "does not serve protocol-2 segments", c->url,
                     (unsigned long long)pt->nonce,
                     (unsigned long long)pt->count,
                     (unsigned long long)hr->segment_count, hr->segment_log2,
                     (unsigned long long)hr->hashes,
                     (unsigned long long)want, s);
  pt->segments = malloc(want * sizeof *pt->segments);
  if (pt->segments == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  pt->n_segments = 0;
  pt->winner_count = hr->winner_count;
  pt->best_nonce = hr->best_nonce;
  pt->best_output = hr->best_output;
  if (hr->n_winners > 0) {
    pt->winners = calloc(hr->n_winners, sizeof *pt->winners);
    if (pt->winners == NULL)
      return wv_seterr(err, WAVE_ENOMEM, NULL);
    for (size_t i = 0; i < hr->n_winners; i++)
      if (hr->winners[i]) {
        pt->winners[pt->n_winners].nonce = hr->winners[i]->nonce;
        pt->winners[pt->n_winners].output = hr->winners[i]->output;
        pt->n_winners++;
      }
  }
  const Wave__V1__HashResult *page = hr;
  Wave__V1__Response *resp = NULL;
  int rc = 0;
  for (;;) {
    if (page->segment_offset != pt->n_segments ||
        page->n_segments > want - pt->n_segments ||
        (page->n_segments == 0 && pt->n_segments < want)) {
      rc = wv_seterr(err, WAVE_EIO, "%s: segment page at %llu with %zu "
                     "entries, expected the page at %llu", c->url,
                     (unsigned long long)page->segment_offset,
                     page->n_segments, (unsigned long long)pt->n_segments);
      break;
    }
    memcpy(pt->segments + pt->n_segments, page->segments,
           page->n_segments * sizeof *page->segments);
    pt->n_segments += page->n_segments;
    if (resp)
      wave__v1__response__free_unpacked(resp, NULL);
    resp = NULL;
    if (pt->n_segments == want)
      break;
    if ((rc = fl_job_call(l, job, inst, 0, pt->n_segments, 0, &resp, err)))
      break;
    if (resp->job->state != WAVE__V1__JOB_STATE__DONE ||
        resp->job->result == NULL) {
      rc = wv_seterr(err, WAVE_EIO, "%s: job %llu no longer done while its "
                     "segments were read", c->url, (unsigned long long)job);
      break;
    }
    page = resp->job->result;
  }
  if (resp)
    wave__v1__response__free_unpacked(resp, NULL);
  return rc;
}

/* A lie: the daemon is dropped and all it answered runs again. */
static int fl_lie(const fl_link *l, wave_error *err, const char *what,
                  const wv_fleet_hpart *pt, uint64_t nonce)
{
  *l->why = WAVE_FLEET_LIED;
  return wv_seterr(err, WAVE_EMISMATCH, "%s: piece [%llu, +%llu): %s "
                   "(nonce %llu); the daemon is not believed", l->c->url,
                   (unsigned long long)pt->nonce,
                   (unsigned long long)pt->count, what,
                   (unsigned long long)nonce);
}

/* The coordinator's checks of one piece's answer (docs/fleet.md,
 * "Checks"): what needs no hash, then, with f->rehash, every winner, the
 * best and one segment re-hashed here. */
static int fl_hash_check(const fl_link *l, const fl_hash *h,
                         const wv_fleet_hpart *pt, size_t item,
                         wave_error *err)
{
  const wave_hash_request *req = h->req;
  uint64_t lo = pt->nonce, hi = pt->nonce + (pt->count - 1);
  uint64_t target = req->target;
  if (pt->n_winners > req->max_winners || pt->n_winners > pt->winner_count ||
      pt->winner_count > pt->count)
    return fl_lie(l, err, "winner counts do not add up", pt,
                  pt->winner_count);
  if (pt->winner_count > pt->n_winners && pt->n_winners < req->max_winners)
    return fl_lie(l, err, "fewer winners listed than counted", pt,
                  pt->winner_count);
  if (pt->best_nonce < lo || pt->best_nonce > hi)
    return fl_lie(l, err, "the best lies outside the piece", pt,
                  pt->best_nonce);
  if ((pt->best_output < target) != (pt->winner_count > 0))
    return fl_lie(l, err, "the best and the winner count disagree", pt,
                  pt->best_nonce);
  for (size_t j = 0; j < pt->n_winners; j++) {
    const wv_hash_winner *w = &pt->winners[j];
    if (w->nonce < lo || w->nonce > hi)
      return fl_lie(l, err, "a winner lies outside the piece", pt, w->nonce);
    if (j > 0 && w->nonce <= pt->winners[j - 1].nonce)
      return fl_lie(l, err, "winners out of nonce order", pt, w->nonce);
    if (w->output >= target)
      return fl_lie(l, err, "a winner does not meet the target", pt,
                    w->nonce);
    if (w->output < pt->best_output ||
        (w->output == pt->best_output && w->nonce < pt->best_nonce))
      return fl_lie(l, err, "a winner beats the best", pt, w->nonce);
  }
  wave_fleet *f = l->f;
  if (f->rehash == NULL)
    return 0;
  const char *pack = req->pack ? req->pack : "";
  uint64_t out;
  int rc;
  for (size_t j = 0; j < pt->n_winners; j++) {
    if ((rc = f->rehash(f->rehash_arg, pack, pt->winners[j].nonce, 1, &out,
                        err)) != 0)
      return rc;
    if (out != pt->winners[j].output)
      return fl_lie(l, err, "a winner's output is not its hash", pt,
                    pt->winners[j].nonce);
  }
  if ((rc = f->rehash(f->rehash_arg, pack, pt->best_nonce, 1, &out, err)))
    return rc;
  if (out != pt->best_output)
    return fl_lie(l, err, "the best's output is not its hash", pt,
                  pt->best_nonce);
  /* One segment in full, picked at random so a daemon cannot know which:
   * a made-up fingerprint list fails it for sure, one bad segment with
   * odds 1/segments.  Only for segments of at most 2^13 nonces and at most
   * 1/64 of the piece: the CPU reference is slow (0.2 s for 2^13 nonces of
   * pack main on one core, docs/fleet.md), and the check must stay small
   * beside the piece it checks. */
  if (h->s > 13 || pt->n_segments == 0 || (pt->count >> 6) < (1ull << h->s))
    return 0;
  uint64_t x = l->c->tag ^ ((uint64_t)item * 0x9e3779b97f4a7c15ull) ^
               (uint64_t)(wv_fleet_now() * 1e9);
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  uint64_t k = x % pt->n_segments;
  uint64_t a = ((lo >> h->s) + k) << h->s, b = a | ((1ull << h->s) - 1);
  if (a < lo)
    a = lo;
  if (b > hi)
    b = hi;
  uint64_t *o = malloc((size_t)(b - a + 1) * sizeof *o);
  if (o == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  rc = f->rehash(f->rehash_arg, pack, a, b - a + 1, o, err);
  uint64_t fp = rc == 0 ? wv_fnv1a64_u64(WV_FNV_OFFSET, o, (size_t)(b - a + 1))
                        : 0;
  free(o);
  if (rc != 0)
    return rc;
  if (fp != pt->segments[k])
    return fl_lie(l, err, "a segment fingerprint is not its outputs' (spot "
                  "check)", pt, a);
  return 0;
}

static int fl_hash_run(fl_pool *p, size_t d, size_t slot, size_t i,
                       wave_error *err)
{
  fl_hash *h = p->ctx;
  wave_client *c = wv_fleet_client(p->f, d, err);
  if (c == NULL)
    return err->code;
  fl_link l = {.f = p->f, .d = d, .c = c, .why = &p->why[slot],
               .gen = atomic_load(&p->f->closes[d])};
  wv_fleet_hpart *pt = &h->parts[i];
  free(pt->segments);
  free(pt->winners);
  uint64_t nonce = pt->nonce, count = pt->count;
  memset(pt, 0, sizeof *pt);
  pt->nonce = nonce;
  pt->count = count;

  uint64_t job = 0, inst = 0;
  int rc = fl_hash_submit(&l, h, nonce, count, &job, &inst, err);
  if (rc != 0)
    return rc;
  /* the progress deadline: `done` must grow within stall_ms */
  uint64_t seen = 0;
  double moved = wv_fleet_now(), stall = (double)p->f->stall_ms / 1e3;
  for (;;) {
    Wave__V1__Response *resp;
    if (atomic_load(&p->f->cancel)) {
      wave_error ce;
      if (fl_job_call(&l, job, inst, 0, 0, 1, &resp, &ce) == 0)
        wave__v1__response__free_unpacked(resp, NULL);
      return wv_seterr(err, WAVE_ECANCELLED, NULL);
    }
    if ((rc = fl_job_call(&l, job, inst, 200, 0, 0, &resp, err)) != 0)
      return rc;
    const Wave__V1__JobInfo *ji = resp->job;
    atomic_store(&p->inflight[slot], ji->done <= count ? ji->done : count);
    if (ji->state == WAVE__V1__JOB_STATE__DONE) {
      rc = ji->result ? fl_hash_collect(&l, job, inst, ji->result, h->s, pt,
                                        err)
                      : wv_seterr(err, WAVE_EIO, "%s: job done without a "
                                  "result", c->url);
      wave__v1__response__free_unpacked(resp, NULL);
      if (rc == 0)
        rc = fl_hash_check(&l, h, pt, i, err);
      return rc;
    }
    if (ji->state == WAVE__V1__JOB_STATE__FAILED ||
        ji->state == WAVE__V1__JOB_STATE__CANCELLED) {
      int code = ji->error && ji->error->code ? (int)ji->error->code
                 : ji->state == WAVE__V1__JOB_STATE__CANCELLED
                     ? WAVE_ESHUTDOWN  /* cancelled by someone else */
                     : WAVE_EINTERNAL;
      rc = wv_seterr(err, code, "%s: piece [%llu, +%llu): %s", c->url,
                     (unsigned long long)nonce, (unsigned long long)count,
                     ji->error && ji->error->message ? ji->error->message
                                                     : "job ended");
      wave__v1__response__free_unpacked(resp, NULL);
      return rc;
    }
    uint64_t done = ji->done;
    wave__v1__response__free_unpacked(resp, NULL);
    double now = wv_fleet_now();
    if (done > seen && done <= count) {
      seen = done;
      moved = now;
    } else if (now - moved > stall) {
      wave_error ce;  /* let it go: the piece runs elsewhere */
      if (fl_job_call(&l, job, inst, 0, 0, 1, &resp, &ce) == 0)
        wave__v1__response__free_unpacked(resp, NULL);
      *l.why = WAVE_FLEET_STALLED;
      return wv_seterr(err, WAVE_ETIMEDOUT, "%s: piece [%llu, +%llu) made "
                       "no progress for %.1f s (stall deadline; %llu of "
                       "%llu done)", c->url, (unsigned long long)nonce,
                       (unsigned long long)count, now - moved,
                       (unsigned long long)seen, (unsigned long long)count);
    }
  }
}

int wave_fleet_hash(wave_fleet *f, const wave_hash_request *req,
                    const wave_fleet_options *opt,
                    wave_fleet_hash_result *res,
                    wave_fleet_progress_fn progress, void *arg,
                    wave_error *err)
{
  if (f == NULL || req == NULL || res == NULL)
    return wv_seterr(err, WAVE_EARG, "wave_fleet_hash: NULL argument");
  memset(res, 0, sizeof *res);
  if (req->want_outputs)
    return wv_seterr(err, WAVE_EARG, "a fleet hash job does not return "
                     "outputs (ask one daemon)");
  if (req->count == 0 || req->nonce + (req->count - 1) < req->nonce)
    return wv_seterr(err, WAVE_ERANGE, "nonce range [%llu, +%llu) is empty "
                     "or passes 2^64", (unsigned long long)req->nonce,
                     (unsigned long long)req->count);
  unsigned s = opt && opt->segment_log2 ? opt->segment_log2
               : req->segment_log2 ? req->segment_log2 : WV_SEG_LOG2_DEFAULT;
  int want_segments = (opt && opt->want_segments) || req->want_segments;
  if (s < WV_SEG_LOG2_MIN || s > WV_SEG_LOG2_MAX)
    return wv_seterr(err, WAVE_EARG, "segment_log2 %u is outside %u..%u", s,
                     WV_SEG_LOG2_MIN, WV_SEG_LOG2_MAX);
  /* piece 0: guided pieces, shrinking toward the end (fleet_merge.h) */
  uint64_t piece = opt ? opt->piece : 0;
  uint64_t n = piece ? wv_fleet_hash_pieces(req->nonce, req->count, s, piece)
                     : wv_fleet_hash_guided(req->nonce, req->count, s, f->n,
                                            NULL, NULL);
  if (n > (1u << 24))
    return wv_seterr(err, WAVE_EARG, "%llu pieces: give a larger piece",
                     (unsigned long long)n);
  atomic_store(&f->cancel, 0);
  fl_hash h = {.req = req, .s = s, .piece = piece};
  uint64_t *work = calloc(n, sizeof *work);
  h.parts = calloc(n, sizeof *h.parts);
  res->members = calloc(f->n, sizeof *res->members);
  int rc = 0;
  if (work == NULL || h.parts == NULL || res->members == NULL) {
    rc = wv_seterr(err, WAVE_ENOMEM, NULL);
    goto out;
  }
  if (piece == 0) {  /* work[] holds the starts for a moment */
    wv_fleet_hash_guided(req->nonce, req->count, s, f->n, work, NULL);
    for (uint64_t i = 0; i < n; i++)
      h.parts[i].nonce = work[i];
    wv_fleet_hash_guided(req->nonce, req->count, s, f->n, NULL, work);
  }
  for (uint64_t i = 0; i < n; i++) {
    if (piece != 0)
      wv_fleet_hash_piece(req->nonce, req->count, s, piece, i,
                          &h.parts[i].nonce, &h.parts[i].count);
    else
      h.parts[i].count = work[i];
    work[i] = h.parts[i].count;
  }
  res->n_members = f->n;
  double t0 = wv_fleet_now();
  rc = wv_fleet_pool_run(f, (size_t)n, work, opt ? opt->depth : 0,
                         fl_hash_run, &h, res->members, &res->retried,
                         progress, arg, err);
  res->seconds = wv_fleet_now() - t0;
  res->n_failed = wv_fleet_count_failed(res->members, f->n);
  res->pieces = n;
  res->segment_log2 = s;
  if (rc == 0)
    rc = wv_fleet_hash_merge(h.parts, (size_t)n, s, req->max_winners,
                             want_segments, res, err);
out:
  for (uint64_t i = 0; h.parts && i < n; i++) {
    free(h.parts[i].segments);
    free(h.parts[i].winners);
  }
  free(h.parts);
  free(work);
  if (rc != 0) {  /* members stay: the caller still learns who failed */
    free(res->segments);
    free(res->winners);
    res->segments = NULL;
    res->winners = NULL;
    res->n_winners = 0;
  }
  return rc;
}

void wave_fleet_hash_result_free(wave_fleet_hash_result *res)
{
  if (res == NULL)
    return;
  free(res->segments);
  free(res->winners);
  free(res->members);
  memset(res, 0, sizeof *res);
}
