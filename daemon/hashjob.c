/* hashjob.c - hash jobs (see hashjob.h for who owns what).
 *
 * The table is a list in creation order, touched only by the loop thread;
 * lookups scan it, which is fine for the few hundred jobs it holds
 * (limits.jobs_in_flight per device plus limits.keep_jobs finished ones).
 * Job ids start from the start-up time shifted left by 20 bits, so ids from
 * a restarted daemon do not collide with ids a client still remembers from
 * the previous run: those get NOJOB instead of someone else's job.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/hashjob.h"
#include "daemon/stats.h"
#include "daemon/log.h"
#include "proto/base.h"

struct wd_hjob {
  wd_work work;              /* first member: a wd_work * is a wd_hjob * */
  uint64_t id, client, req_id;
  const wv_pack *pack;
  size_t pack_index;
  uint64_t nonce, count, target;
  uint32_t max_winners;
  int want_outputs;
  wd_device *dev;

  /* progress, written by the device thread, read by the loop */
  _Atomic int state;         /* wave_job_state */
  _Atomic uint64_t done;
  _Atomic uint64_t t_start_ns;  /* 0 until the job starts */
  _Atomic int cancel;        /* 0, or the code to end with */

  /* the result: device thread until the end, then the loop */
  wv_hash_acc acc;
  uint64_t *outputs;         /* count slots when want_outputs */
  double seconds;
  char exchange[16];

  /* loop only */
  int ended;
  uint64_t ended_ns;
  void *waiters;
  wd_hjob *prev, *next;
};

struct wd_jobs {
  wd_limits lim;
  wd_hjob *head, *tail;
  size_t n_active, n_ended;
  uint64_t next_id;
};

static uint64_t hj_now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- device thread ------------------------------------------------------ */

size_t wd_hjob_pack_index(const wd_work *w)
{
  return ((const wd_hjob *)w)->pack_index;
}

static int hj_finish(wd_hjob *j)
{
  int rc = j->work.rc;
  uint64_t t0 = atomic_load(&j->t_start_ns);
  j->seconds = t0 ? (double)(hj_now_ns() - t0) * 1e-9 : 0.0;
  int st = rc == 0 ? WAVE__V1__JOB_STATE__DONE
           : rc == WAVE_ECANCELLED || rc == WAVE_ESHUTDOWN ? WAVE__V1__JOB_STATE__CANCELLED
                                                          : WAVE__V1__JOB_STATE__FAILED;
  atomic_store(&j->state, st);
  return 1;
}

void wd_hjob_abort(wd_work *w) { hj_finish((wd_hjob *)w); }

/* Re-check the winners this batch added (and a new best) on the CPU. */
static int hj_verify(wd_hjob *j, wd_hash_env *env, size_t from,
                     uint64_t first, uint64_t n)
{
  wave_error err = {0};
  for (size_t i = from; i <= j->acc.n_winners; i++) {
    uint64_t nonce, output, cpu;
    if (i < j->acc.n_winners) {
      nonce = j->acc.winners[i].nonce;
      output = j->acc.winners[i].output;
    } else if (j->acc.best_nonce >= first && j->acc.best_nonce - first < n) {
      nonce = j->acc.best_nonce;
      output = j->acc.best_output;
    } else {
      break;
    }
    int rc = wv_hash_verify(j->pack, nonce, &cpu, &err);
    if (rc != 0) {
      j->work.rc = wv_seterr(&j->work.err, rc, "verifying nonce %" PRIu64
                             ": %s", nonce, err.message);
      return rc;
    }
    if (cpu != output) {
      wd_error("device %s: hash mismatch (pack %s, nonce %" PRIu64
               "): device 0x%016" PRIx64 ", CPU 0x%016" PRIx64,
               env->device, wv_pack_name(j->pack), nonce, output, cpu);
      j->work.rc = wv_seterr(&j->work.err, WAVE_EMISMATCH,
                             "device %s: nonce %" PRIu64 " gave 0x%016" PRIx64
                             ", the CPU says 0x%016" PRIx64, env->device,
                             nonce, output, cpu);
      return WAVE_EMISMATCH;
    }
  }
  return 0;
}

int wd_hjob_step(wd_work *w, wd_hash_env *env)
{
  wd_hjob *j = (wd_hjob *)w;
  if (env->faulted) {
    w->rc = wv_seterr(&w->err, WAVE_EDEVFAULT, "device %s is faulted",
                      env->device);
    return hj_finish(j);
  }
  uint64_t done = atomic_load(&j->done);
  int cancel = atomic_load(&j->cancel);
  if (cancel) {
    w->rc = wv_seterr(&w->err, cancel,
                      "job %" PRIu64 " cancelled after %" PRIu64 " of %" PRIu64
                      " nonces%s", j->id, done, j->count,
                      cancel == WAVE_ESHUTDOWN ? ": daemon is shutting down"
                                               : "");
    return hj_finish(j);
  }
  if (atomic_load(&j->state) == WAVE__V1__JOB_STATE__QUEUED) {
    if (env->check->state != WD_CHECK_OK) {
      w->rc = wv_seterr(&w->err, WAVE_ESELFCHECK,
                        "pack %s failed its self-check on device %s: %s",
                        wv_pack_name(j->pack), env->device,
                        env->check->detail);
      return hj_finish(j);
    }
    snprintf(j->exchange, sizeof j->exchange, "%s", env->exchange);
    atomic_store(&j->t_start_ns, hj_now_ns());
    atomic_store(&j->state, WAVE__V1__JOB_STATE__RUNNING);
  }
  uint64_t n = j->count - done;
  if (n > env->batch)
    n = env->batch;
  uint64_t first = j->nonce + done;
  wave_error err = {0};
  int rc = env->backend->hash(env->bdev, j->pack, first, n, env->buf, &err);
  if (rc == WAVE_EDEVICE) {
    env->fault = 1;
    snprintf(env->fault_msg, sizeof env->fault_msg, "%.199s", err.message);
    w->rc = wv_seterr(&w->err, WAVE_EDEVFAULT, "device %s faulted: %s",
                      env->device, err.message);
    return hj_finish(j);
  }
  if (rc != 0) {
    w->rc = wv_seterr(&w->err, rc, "%s", err.message);
    return hj_finish(j);
  }
  size_t before = j->acc.n_winners;
  wv_hash_acc_add(&j->acc, first, env->buf, n);
  if (j->outputs != NULL)
    memcpy(j->outputs + done, env->buf, n * sizeof *env->buf);
  if (env->verify && hj_verify(j, env, before, first, n) != 0)
    return hj_finish(j);
  atomic_store(&j->done, done + n);
  wd_stats_hashed(env->device, n);
  if (done + n == j->count) {
    w->rc = 0;
    return hj_finish(j);
  }
  return 0;
}

/* ---- loop thread -------------------------------------------------------- */

int wd_jobs_new(const wd_limits *lim, wd_jobs **out)
{
  wd_jobs *t = calloc(1, sizeof *t);
  if (t == NULL)
    return WAVE_ENOMEM;
  t->lim = *lim;
  t->next_id = ((uint64_t)time(NULL) << 20) + 1;
  *out = t;
  return 0;
}

static void hj_free(wd_hjob *j)
{
  wv_hash_acc_fini(&j->acc);
  free(j->outputs);
  free(j);
}

void wd_jobs_free(wd_jobs *t)
{
  if (t == NULL)
    return;
  for (wd_hjob *j = t->head, *nx; j != NULL; j = nx) {
    nx = j->next;
    hj_free(j);
  }
  free(t);
}

/* Pick the device for a job on pack pi; 0 or an error. */
static int hj_pick(const Wave__V1__HashRequest *hr, size_t pi,
                   const wv_pack *p, wd_device *const *devs, size_t n_devs,
                   wd_device **out, wave_error *err)
{
  wd_pack_state ck;
  if (hr->device != NULL && hr->device[0] != '\0') {
    for (size_t i = 0; i < n_devs; i++) {
      wd_device *d = devs[i];
      if (strcmp(wd_device_name(d), hr->device) != 0)
        continue;
      if (!wd_device_has_hash(d))
        return wv_seterr(err, WAVE_ENODEV,
                         "device %s (backend %s) does not run hash jobs",
                         hr->device, wd_device_cfg_of(d)->backend);
      if (wd_device_faulted(d))
        return wv_seterr(err, WAVE_EDEVFAULT, "device %s is faulted",
                         hr->device);
      wd_device_pack_check(d, pi, &ck);
      if (ck.state == WD_CHECK_FAILED)
        return wv_seterr(err, WAVE_ESELFCHECK,
                         "pack %s failed its self-check on device %s: %s",
                         wv_pack_name(p), hr->device, ck.detail);
      *out = d;
      return 0;
    }
    return wv_seterr(err, WAVE_ENODEV, "no device named '%s'", hr->device);
  }
  wd_device *best = NULL;
  unsigned best_load = 0;
  int any_hash = 0, any_failed_check = 0;
  for (size_t i = 0; i < n_devs; i++) {
    wd_device *d = devs[i];
    if (!wd_device_has_hash(d))
      continue;
    any_hash = 1;
    if (wd_device_faulted(d))
      continue;
    wd_device_pack_check(d, pi, &ck);
    if (ck.state == WD_CHECK_FAILED) {
      any_failed_check = 1;
      continue;
    }
    unsigned load = wd_device_hash_load(d);
    if (best == NULL || load < best_load) {
      best = d;
      best_load = load;
    }
  }
  if (best != NULL) {
    *out = best;
    return 0;
  }
  if (any_failed_check)
    return wv_seterr(err, WAVE_ESELFCHECK,
                     "pack %s failed its self-check on every device that "
                     "could run it", wv_pack_name(p));
  if (any_hash)
    return wv_seterr(err, WAVE_EDEVFAULT,
                     "every device that runs hash jobs is faulted");
  return wv_seterr(err, WAVE_ENODEV, "no device of this daemon runs hash jobs");
}

int wd_jobs_submit(wd_jobs *t, const Wave__V1__HashRequest *hr,
                   uint64_t req_id, wd_device *const *devs, size_t n_devs,
                   const wd_packs *packs, wd_hjob **out, wave_error *err)
{
  *out = NULL;
  if (hr->client != 0)  /* a resend of a request we already took */
    for (wd_hjob *j = t->head; j != NULL; j = j->next)
      if (j->client == hr->client && j->req_id == req_id) {
        *out = j;
        return 0;
      }
  size_t pi = packs->n;
  for (size_t i = 0; i < packs->n; i++)
    if (strcmp(wv_pack_name(packs->list[i]), hr->pack) == 0)
      pi = i;
  if (pi == packs->n) {
    char names[160] = "";
    for (size_t i = 0; i < packs->n; i++) {
      strncat(names, i ? ", " : "", sizeof names - strlen(names) - 1);
      strncat(names, wv_pack_name(packs->list[i]),
              sizeof names - strlen(names) - 1);
    }
    return wv_seterr(err, WAVE_EPACK, "no pack named '%s' (loaded: %s)",
                     hr->pack, packs->n ? names : "none");
  }
  const wv_pack *p = packs->list[pi];
  if (hr->count == 0)
    return wv_seterr(err, WAVE_ERANGE, "count must be at least 1");
  if (hr->nonce != 0 && hr->count > UINT64_MAX - hr->nonce + 1)
    return wv_seterr(err, WAVE_ERANGE,
                     "nonce %" PRIu64 " + count %" PRIu64 " is beyond 2^64",
                     hr->nonce, hr->count);
  if (hr->want_outputs && hr->count > t->lim.max_outputs)
    return wv_seterr(err, WAVE_EJOBSIZE,
                     "want_outputs needs count <= %u (limits.max_outputs); "
                     "got %" PRIu64, t->lim.max_outputs, hr->count);
  if (hr->max_winners > t->lim.max_winners)
    return wv_seterr(err, WAVE_EJOBSIZE,
                     "max_winners %u is above limits.max_winners %u",
                     hr->max_winners, t->lim.max_winners);
  wd_device *dev = NULL;
  int rc = hj_pick(hr, pi, p, devs, n_devs, &dev, err);
  if (rc)
    return rc;

  wd_hjob *j = calloc(1, sizeof *j);
  if (j == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  if (wv_hash_acc_init(&j->acc, hr->target, hr->max_winners) != 0 ||
      (hr->want_outputs &&
       (j->outputs = malloc(hr->count * sizeof *j->outputs)) == NULL)) {
    hj_free(j);
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  }
  j->work.kind = WD_WORK_HASH;
  j->work.owner = j;
  j->client = hr->client;
  j->req_id = req_id;
  j->pack = p;
  j->pack_index = pi;
  j->nonce = hr->nonce;
  j->count = hr->count;
  j->target = hr->target;
  j->max_winners = hr->max_winners;
  j->want_outputs = hr->want_outputs != 0;
  j->dev = dev;
  atomic_init(&j->state, WAVE__V1__JOB_STATE__QUEUED);
  atomic_init(&j->done, 0);
  atomic_init(&j->t_start_ns, 0);
  atomic_init(&j->cancel, 0);
  j->id = t->next_id;
  if ((rc = wd_device_submit(dev, &j->work, err)) != 0) {
    hj_free(j);
    return rc;
  }
  t->next_id++;
  j->prev = t->tail;
  if (t->tail)
    t->tail->next = j;
  else
    t->head = j;
  t->tail = j;
  t->n_active++;
  wd_debug("hash job %" PRIu64 ": pack %s, nonces %" PRIu64 "+%" PRIu64
           " on %s", j->id, wv_pack_name(p), j->nonce, j->count,
           wd_device_name(dev));
  *out = j;
  return 0;
}

wd_hjob *wd_jobs_find(wd_jobs *t, uint64_t id)
{
  for (wd_hjob *j = t->head; j != NULL; j = j->next)
    if (j->id == id)
      return j;
  return NULL;
}

static void hj_mark_ended(wd_jobs *t, wd_hjob *j)
{
  j->ended = 1;
  j->ended_ns = hj_now_ns();
  t->n_active--;
  t->n_ended++;
}

wd_hjob *wd_jobs_ended(wd_jobs *t, wd_work *w)
{
  wd_hjob *j = (wd_hjob *)w;
  hj_mark_ended(t, j);
  wd_debug("hash job %" PRIu64 " ended: %s", j->id,
           j->work.rc ? j->work.err.message : "done");
  return j;
}

int wd_jobs_cancel(wd_jobs *t, wd_hjob *j, int code)
{
  if (j->ended)
    return 0;
  int zero = 0;
  atomic_compare_exchange_strong(&j->cancel, &zero, code);
  if (!wd_device_unqueue(j->dev, &j->work))
    return 0;  /* running: the device thread ends it between batches */
  j->work.rc = wv_seterr(&j->work.err, code, "job %" PRIu64 " cancelled "
                         "before it started%s", j->id,
                         code == WAVE_ESHUTDOWN ? ": daemon is shutting down"
                                                : "");
  hj_finish(j);
  hj_mark_ended(t, j);
  return 1;
}

void wd_jobs_cancel_all(wd_jobs *t, int code,
                        void (*ended)(void *arg, wd_hjob *j), void *arg)
{
  for (wd_hjob *j = t->head; j != NULL; j = j->next)
    if (wd_jobs_cancel(t, j, code))
      ended(arg, j);
}

void wd_jobs_prune(wd_jobs *t)
{
  uint64_t now = hj_now_ns();
  uint64_t keep_ns = (uint64_t)t->lim.keep_seconds * 1000000000u;
  for (wd_hjob *j = t->head, *nx; j != NULL; j = nx) {
    nx = j->next;
    if (!j->ended || j->waiters != NULL)
      continue;
    if (t->n_ended <= t->lim.keep_jobs && now - j->ended_ns <= keep_ns)
      continue;
    if (j->prev)
      j->prev->next = j->next;
    else
      t->head = j->next;
    if (j->next)
      j->next->prev = j->prev;
    else
      t->tail = j->prev;
    t->n_ended--;
    hj_free(j);
  }
}

size_t wd_jobs_active(const wd_jobs *t) { return t->n_active; }

void wd_jobs_set_limits(wd_jobs *t, const wd_limits *lim) { t->lim = *lim; }

wd_hjob *wd_jobs_next(wd_jobs *t, wd_hjob *j)
{
  return j == NULL ? t->head : j->next;
}

uint64_t wd_hjob_id(const wd_hjob *j) { return j->id; }

int wd_hjob_is_ended(const wd_hjob *j) { return j->ended; }

int wd_hjob_state(const wd_hjob *j) { return atomic_load(&j->state); }

void **wd_hjob_waiters(wd_hjob *j) { return &j->waiters; }

int wd_hjob_info(const wd_hjob *j, Wave__V1__JobInfo *ji,
                 wd_jobinfo_scratch *s)
{
  memset(s, 0, sizeof *s);
  wave__v1__job_info__init(ji);
  ji->job_id = j->id;
  ji->total = j->count;
  ji->done = atomic_load(&j->done);
  ji->device = (char *)wd_device_name(j->dev);
  int st = atomic_load(&j->state);
  if (!j->ended) {
    /* the device may have finished; the loop has not seen it yet */
    if (st != WAVE__V1__JOB_STATE__QUEUED)
      st = WAVE__V1__JOB_STATE__RUNNING;
    uint64_t t0 = atomic_load(&j->t_start_ns);
    ji->seconds = t0 ? (double)(hj_now_ns() - t0) * 1e-9 : 0.0;
    ji->state = (Wave__V1__JobState)st;
    return 0;
  }
  ji->state = (Wave__V1__JobState)st;
  ji->seconds = j->seconds;
  if (st != WAVE__V1__JOB_STATE__DONE) {
    wave__v1__error__init(&s->error);
    s->error.code = (uint32_t)j->work.rc;
    snprintf(s->errname, sizeof s->errname, "%s", wave_errname(j->work.rc));
    s->error.name = s->errname;
    s->error.message = (char *)j->work.err.message;
    ji->error = &s->error;
    return 0;
  }
  Wave__V1__HashResult *r = &s->result;
  wave__v1__hash_result__init(r);
  r->fingerprint = j->acc.fingerprint;
  r->winner_count = j->acc.winner_count;
  r->best_nonce = j->acc.best_nonce;
  r->best_output = j->acc.best_output;
  r->hashes = j->acc.hashes;
  r->seconds = j->seconds;
  r->device = ji->device;
  r->exchange = (char *)j->exchange;
  size_t nw = j->acc.n_winners;
  if (nw > 0) {
    s->winners = calloc(nw, sizeof *s->winners);
    s->winner_ptrs = calloc(nw, sizeof *s->winner_ptrs);
    if (s->winners == NULL || s->winner_ptrs == NULL) {
      wd_jobinfo_done(s);
      return WAVE_ENOMEM;
    }
    for (size_t i = 0; i < nw; i++) {
      wave__v1__winner__init(&s->winners[i]);
      s->winners[i].nonce = j->acc.winners[i].nonce;
      s->winners[i].output = j->acc.winners[i].output;
      s->winner_ptrs[i] = &s->winners[i];
    }
    r->n_winners = nw;
    r->winners = s->winner_ptrs;
  }
  if (j->outputs != NULL) {
    r->n_outputs = j->count;
    r->outputs = j->outputs;
  }
  ji->result = r;
  return 0;
}

void wd_jobinfo_done(wd_jobinfo_scratch *s)
{
  free(s->winners);
  free(s->winner_ptrs);
  s->winners = NULL;
  s->winner_ptrs = NULL;
}
