/* fleet.c - the fleet coordinator (include/wave/fleet.h): the handle, and
 * the pool whose threads, one per daemon, pull the pieces.
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
 * When every daemon was dropped the call fails with IO naming them, or
 * with UNSUPPORTED when each refused the job so (no device of the fleet
 * runs its dtype or op).
 * The calling thread waits on the pool's condition variable, calls the
 * progress callback every 200 ms, and joins the threads.  Cancel is an
 * atomic flag every thread reads between exchanges (a hash poll waits at
 * most 200 ms on the daemon); a thread that sees it cancels its piece's
 * job on its daemon, so the cancel reaches every daemon with work.
 *
 * The hash calls are in fleet_hash.c, the reductions in fleet_reduce.c.
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

static void fl_pool_free(fl_pool *p)
{
  free(p->fifo);
  free(p->inflight);
  free(p->why);
  free(p->owner);
  free(p->first);
  free(p->last);
}

/* p for items 0..n-1 over f's daemons, nth threads: every index queued,
 * every member reset; 0 or WAVE_ENOMEM (nothing left allocated). */
static int fl_pool_init(fl_pool *p, wave_fleet *f, size_t n,
                        const uint64_t *work, size_t nth,
                        wave_fleet_member *members, wave_error *err)
{
  p->f = f;
  p->items = p->remaining = n;
  p->cap = n + 1;
  p->members = members;
  p->work = work;
  for (size_t i = 0; i < n; i++)
    p->total += work[i];
  atomic_init(&p->done, 0);
  p->fifo = calloc(p->cap, sizeof *p->fifo);
  p->inflight = calloc(nth, sizeof *p->inflight);
  p->why = calloc(nth, sizeof *p->why);
  p->owner = malloc((n ? n : 1) * sizeof *p->owner);
  p->first = calloc(f->n, sizeof *p->first);
  p->last = calloc(f->n, sizeof *p->last);
  if (p->fifo == NULL || p->inflight == NULL || p->first == NULL ||
      p->last == NULL || p->why == NULL || p->owner == NULL) {
    fl_pool_free(p);
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  }
  for (size_t i = 0; i < n; i++) {
    p->fifo[p->tail++] = i;
    p->owner[i] = SIZE_MAX;
  }
  for (size_t t = 0; t < nth; t++)
    atomic_init(&p->inflight[t], 0);
  for (size_t d = 0; d < f->n; d++) {
    memset(&members[d], 0, sizeof members[d]);
    members[d].url = f->urls[d];
    f->why[d] = WAVE_FLEET_KEPT;
    atomic_store(&f->gone[d], 0);
  }
  return 0;
}

/* Wait (p->mu held) until no thread runs, calling progress about every
 * 200 ms with the work done, the pieces in flight included. */
static void fl_pool_wait(fl_pool *p, size_t started, size_t daemons,
                         double t0, wave_fleet_progress_fn progress,
                         void *parg)
{
  while (p->running > 0) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += 200 * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    int w = pthread_cond_timedwait(&p->cv, &p->mu, &ts);
    if (p->alive == 0 && p->remaining > 0)
      pthread_cond_broadcast(&p->cv);
    if (w == ETIMEDOUT && progress != NULL) {
      wave_fleet_progress pr = {.total = p->total, .alive = p->alive,
                                .failed = daemons - p->alive,
                                .seconds = wv_fleet_now() - t0};
      pr.done = atomic_load(&p->done);
      for (size_t t = 0; t < started; t++)
        pr.done += atomic_load(&p->inflight[t]);
      pthread_mutex_unlock(&p->mu);
      progress(&pr, parg);
      pthread_mutex_lock(&p->mu);
    }
  }
}

/* The call's answer once the threads are joined: the job's error, a
 * cancel, every daemon dropped (each named with why), or 0. */
static int fl_pool_verdict(const fl_pool *p, wave_error *err)
{
  const wave_fleet *f = p->f;
  if (p->fatal != 0)
    return wv_seterr(err, p->fatal, "%s", p->fatal_err.message);
  if (atomic_load(&f->cancel) && p->remaining > 0)
    return wv_seterr(err, WAVE_ECANCELLED, "cancelled; every daemon's piece "
                     "was cancelled");
  if (p->remaining == 0)
    return 0;
  /* every daemon refused the job as UNSUPPORTED (a 64-bit dtype or
   * argmin/argmax on devices without them): the job's answer, as one
   * daemon's would be */
  size_t uns = 0;
  for (size_t d = 0; d < f->n; d++)
    uns += p->members[d].failed &&
           p->members[d].error.code == WAVE_EUNSUPPORTED;
  if (f->n > 0 && uns == f->n)
    return wv_seterr(err, WAVE_EUNSUPPORTED, "every daemon refused it: %s",
                     p->members[0].error.message);
  char msg[sizeof err->message];
  size_t o = (size_t)snprintf(msg, sizeof msg, "every daemon was dropped:");
  for (size_t d = 0; d < f->n && o < sizeof msg; d++)
    o += (size_t)snprintf(msg + o, sizeof msg - o, " %s (%s): %s;",
                          f->urls[d], wave_fleet_drop_name(f->why[d]),
                          p->members[d].error.message);
  return wv_seterr(err, WAVE_EIO, "%s", msg);
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
  p.run = run;
  p.ctx = ctx;
  if (depth == 0)
    depth = 2;
  size_t nth = f->n * depth;
  fl_thread *th = calloc(nth, sizeof *th);
  if (th == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  int rc = fl_pool_init(&p, f, n, work, nth, members, err);
  if (rc != 0) {
    free(th);
    return rc;
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
  fl_pool_wait(&p, started, daemons, t0, progress, parg);
  pthread_mutex_unlock(&p.mu);
  for (size_t d = 0; d < started; d++)
    pthread_join(th[d].th, NULL);
  if (progress != NULL) {
    wave_fleet_progress pr = {.done = atomic_load(&p.done), .total = p.total,
                              .alive = p.alive, .failed = daemons - p.alive,
                              .seconds = wv_fleet_now() - t0};
    progress(&pr, parg);
  }

  rc = fl_pool_verdict(&p, err);
  *retried = p.retried;
  for (size_t d = 0; d < f->n; d++)
    members[d].seconds = p.first[d] > 0 ? p.last[d] - p.first[d] : 0.0;
  pthread_cond_destroy(&p.cv);
  pthread_mutex_destroy(&p.mu);
  fl_pool_free(&p);
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
