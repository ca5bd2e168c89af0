/* hashjob.c - hash jobs on the loop thread (see hashjob.h for who owns
 * what, hashjob_int.h for a job's insides, hashrun.c for the device side).
 *
 * The table is a list in creation order, touched only by the loop thread;
 * lookups scan it, which is fine for the few hundred jobs it holds
 * (limits.jobs_in_flight per device plus limits.keep_jobs finished ones).
 * Ids are drawn from getrandom(2) for every job; the table is small, so a
 * scan for a clash costs nothing.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "daemon/jobs/hashjob_int.h"
#include "daemon/log.h"
#include "daemon/jobs/owner.h"
#include "daemon/net/principal.h"
#include "daemon/exec/pick.h"
#include "core/base.h"

struct wd_jobs {
  wd_limits lim;
  uint64_t instance;
  void (*ended)(void *arg, wd_hjob *j);
  void *arg;
  wv_qnode all;               /* wd_hjob.link, in submit order */
  size_t n_active, n_ended;
  uint64_t kept;              /* bytes ended jobs' results hold */
  wd_prepare_fn prepare;      /* a pack's preparation, on demand */
  void *prepare_arg;
  wd_packstate *ps;           /* device x pack (jobs/packstate.h) */
};

#define HJ_OF(n) WV_Q_ENTRY(n, wd_hjob, link)

static int hj_share_start(wd_jobs *t, wd_hjob *j, hj_part *pt,
                          wave_error *err);
static void hj_release_waiting(wd_hjob *j);

/* p waits for its pack (under j->mu: the job's other shares may be
 * running, and their states are written on their device threads). */
static int hj_is_waiting(wd_hjob *j, const hj_part *p)
{
  pthread_mutex_lock(&j->mu);
  int w = p->state == HP_WAITING;
  pthread_mutex_unlock(&j->mu);
  return w;
}

uint64_t wd_hj_now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int wd_jobs_new(const wd_limits *lim, uint64_t instance,
                void (*ended)(void *arg, wd_hjob *j), void *arg,
                wd_jobs **out)
{
  wd_jobs *t = calloc(1, sizeof *t);
  if (t == NULL)
    return WAVE_ENOMEM;
  t->lim = *lim;
  t->instance = instance;
  t->ended = ended;
  t->arg = arg;
  wv_q_init(&t->all);
  *out = t;
  return 0;
}

uint64_t wd_jobs_instance(const wd_jobs *t) { return t->instance; }

/* A fresh id: 64 random bits, not 0, not in the table.  getrandom(2) on
 * Linux >= 3.17 does not fail for 8 bytes once the pool is initialised;
 * if it ever does, the job is refused rather than given a guessable id. */
static int hj_new_id(const wd_jobs *t, uint64_t *id, wave_error *err)
{
  for (int tries = 0; tries < 8; tries++) {
    uint64_t r = 0;
    if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
      break;
    if (r == 0)
      continue;
    int taken = 0;
    wv_qnode *n;
    WV_Q_EACH(n, &t->all)
      taken |= HJ_OF(n)->id == r;
    if (!taken) {
      *id = r;
      return 0;
    }
  }
  return wv_seterr(err, WAVE_EINTERNAL, "no random job id (getrandom)");
}

/* The bytes an ended job's result holds. */
static uint64_t hj_result_bytes(const wd_hjob *j)
{
  uint64_t n = 0;
  if (j->outputs != NULL)
    n += j->count * sizeof *j->outputs;
  if (j->m.segments != NULL)
    n += j->seg_count * sizeof *j->m.segments;
  return n;
}

static void hj_free(wd_hjob *j)
{
  if (j == NULL)
    return;
  for (size_t i = 0; i < j->n_parts; i++) {
    free(j->parts[i].scratch);
    free(j->parts[i].win);
  }
  wv_qnode *n;
  while ((n = wv_q_pop(&j->returned)) != NULL)
    wd_hj_piece_free(HJ_PIECE(n));
  while ((n = wv_q_pop(&j->held)) != NULL)
    wd_hj_piece_free(HJ_PIECE(n));
  free(j->parts);
  free(j->dev_names);
  free(j->shares);
  free(j->m.segments);
  free(j->m.winners);
  free(j->m.tmp);
  free(j->outputs);
  pthread_mutex_destroy(&j->mu);
  free(j);
}

void wd_jobs_free(wd_jobs *t)
{
  if (t == NULL)
    return;
  wv_qnode *n;
  while ((n = wv_q_pop(&t->all)) != NULL)
    hj_free(HJ_OF(n));
  free(t);
}

static int hj_validate(const wd_jobs *t, const wd_hash_submit *hs,
                       const wd_packs *packs, size_t *pi, unsigned *s,
                       wave_error *err)
{
  *pi = packs->n;
  for (size_t i = 0; i < packs->n; i++)
    if (strcmp(wv_pack_name(packs->list[i]), hs->pack) == 0)
      *pi = i;
  if (*pi == packs->n) {
    char names[160] = "";
    for (size_t i = 0; i < packs->n; i++) {
      strncat(names, i ? ", " : "", sizeof names - strlen(names) - 1);
      strncat(names, wv_pack_name(packs->list[i]),
              sizeof names - strlen(names) - 1);
    }
    return wv_seterr(err, WAVE_EPACK, "no pack named '%s' (loaded: %s)",
                     hs->pack, packs->n ? names : "none");
  }
  if (hs->count == 0)
    return wv_seterr(err, WAVE_ERANGE, "count must be at least 1");
  if (hs->nonce != 0 && hs->count > UINT64_MAX - hs->nonce + 1)
    return wv_seterr(err, WAVE_ERANGE,
                     "nonce %" PRIu64 " + count %" PRIu64 " is beyond 2^64",
                     hs->nonce, hs->count);
  *s = hs->segment_log2 ? hs->segment_log2 : WV_SEG_LOG2_DEFAULT;
  if (*s < WV_SEG_LOG2_MIN || *s > WV_SEG_LOG2_MAX)
    return wv_seterr(err, WAVE_EBADREQUEST, "segment_log2 %u is outside "
                     "%u..%u (0 means %u)", hs->segment_log2, WV_SEG_LOG2_MIN,
                     WV_SEG_LOG2_MAX, WV_SEG_LOG2_DEFAULT);
  if (hs->want_outputs && hs->count > t->lim.max_outputs)
    return wv_seterr(err, WAVE_EJOBSIZE,
                     "want_outputs needs count <= %u (limits.max_outputs); "
                     "got %" PRIu64, t->lim.max_outputs, hs->count);
  if (hs->max_winners > t->lim.max_winners)
    return wv_seterr(err, WAVE_EJOBSIZE,
                     "max_winners %u is above limits.max_winners %u",
                     hs->max_winners, t->lim.max_winners);
  uint64_t segs = wv_seg_count(hs->nonce, hs->count, *s);
  if (hs->want_segments && segs > t->lim.max_segments)
    return wv_seterr(err, WAVE_ETOOBIG,
                     "want_segments: the job touches %" PRIu64 " segments of "
                     "2^%u; this daemon keeps at most %u "
                     "(limits.max_segments)", segs, *s, t->lim.max_segments);
  return 0;
}

static wd_hjob *hj_alloc(const wd_hash_submit *hs, size_t n_parts,
                         unsigned s, uint64_t segs)
{
  wd_hjob *j = calloc(1, sizeof *j);
  if (j == NULL)
    return NULL;
  pthread_mutex_init(&j->mu, NULL);
  wv_q_init(&j->waiters);
  wv_q_init(&j->link);
  wv_q_init(&j->returned);
  wv_q_init(&j->held);
  j->parts = calloc(n_parts, sizeof *j->parts);
  j->dev_names = calloc(n_parts, sizeof *j->dev_names);
  j->shares = calloc(n_parts, sizeof *j->shares);
  int bad = !j->parts || !j->dev_names || !j->shares;
  if (hs->max_winners > 0) {
    j->m.winners = calloc(hs->max_winners, sizeof *j->m.winners);
    j->m.tmp = calloc(hs->max_winners, sizeof *j->m.tmp);
    bad = bad || !j->m.winners || !j->m.tmp;
  }
  if (hs->want_outputs &&
      (j->outputs = malloc(hs->count * sizeof *j->outputs)) == NULL)
    bad = 1;
  if (hs->want_segments &&
      (j->m.segments = calloc(segs, sizeof *j->m.segments)) == NULL)
    bad = 1;
  j->n_parts = n_parts;
  for (size_t i = 0; i < n_parts && !bad; i++)
    if (hs->max_winners > 0 &&
        (j->parts[i].win = calloc(hs->max_winners, sizeof(wv_hash_winner))) ==
            NULL)
      bad = 1;
  if (bad) {
    hj_free(j);
    return NULL;
  }
  return j;
}

/* A fresh job's fields from the submit: its id, owner (and job key when
 * the owner is only its connection), pack and range, and one share per
 * chosen device.  An error only when no random key was to be had. */
static int hj_fill(wd_jobs *t, wd_hjob *j, const wd_hash_submit *hs,
                   const char *who, uint64_t id, const wd_packs *packs,
                   size_t pi, wd_device *const *chosen, wave_error *err)
{
  j->table = t;
  j->id = id;
  snprintf(j->principal, sizeof j->principal, "%s", who);
  j->owner = wd_peer_key(who);
  if (wd_peer_anonymous(who)) {
    if (wd_job_key_new(j->key) != 0)
      return wv_seterr(err, WAVE_EINTERNAL, "no random job key (getrandom)");
    j->has_key = 1;
  }
  j->pipe = hs->pipe;
  j->detach = hs->detach != 0;
  j->level = hs->level != NULL ? hs->level->level : 0;
  j->deadline_ms = hs->deadline_ms;
  j->client = hs->client;
  j->req_id = hs->req_id;
  j->pack = packs->list[pi];
  j->pack_index = wd_packs_slot(packs, pi);
  j->packstate = j->table->ps;
  j->nonce = hs->nonce;
  j->count = hs->count;
  j->target = hs->target;
  j->max_winners = hs->max_winners;
  j->want_outputs = hs->want_outputs != 0;
  j->want_segments = hs->want_segments != 0;
  wv_hash_merge_init(&j->m, hs->nonce, j->seg_log2, hs->max_winners,
                     j->m.winners, j->m.tmp, j->m.segments);
  atomic_init(&j->state, WD_JOB_QUEUED);
  atomic_init(&j->cancel, 0);
  atomic_init(&j->done, 0);
  atomic_init(&j->t_start_ns, 0);
  j->t_made_ns = wd_hj_now_ns();
  for (size_t i = 0; i < j->n_parts; i++) {
    hj_part *pt = &j->parts[i];
    pt->work.ops = &wd_hj_part_ops;
    pt->work.owner = j->owner;
    wd_work_level_as(&pt->work, hs->level);
    pt->job = j;
    pt->dev = chosen[i];
    pt->state = HP_QUEUED;
    j->dev_names[i] = wd_device_name(chosen[i]);
  }
  return 0;
}

/* Queue every share, or let it wait for its device's preparation of the
 * pack; one that its device refuses (busy, faulted) is left out, unless
 * none is left: then the job is freed and the first refusal answered. */
static int hj_queue_shares(wd_jobs *t, wd_hjob *j, wave_error *err)
{
  int first_rc = 0;
  wave_error first_err = {0};
  for (size_t i = 0; i < j->n_parts; i++) {
    hj_part *pt = &j->parts[i];
    wave_error e = {0};
    int src = hj_share_start(t, j, pt, &e);
    if (src != 0) {
      pthread_mutex_lock(&j->mu);  /* other shares may be running */
      pt->state = HP_ENDED;  /* no device holds it */
      pthread_mutex_unlock(&j->mu);
      pt->work.rc = src;
      pt->work.err = e;
      if (first_rc == 0) {
        first_rc = src;
        first_err = e;
      }
    } else {
      j->live++;
    }
  }
  if (j->live == 0) {
    hj_free(j);
    *err = first_err;
    return first_rc;
  }
  return 0;
}

int wd_jobs_submit(wd_jobs *t, const wd_hash_submit *hs,
                   wd_device *const *devs, size_t n_devs,
                   const wd_packs *packs, wd_hjob **out, wave_error *err)
{
  *out = NULL;
  const char *who = hs->principal != NULL ? hs->principal : "";
  size_t mine = 0;
  wv_qnode *n;
  WV_Q_EACH(n, &t->all) {
    wd_hjob *j = HJ_OF(n);
    if (strcmp(j->principal, who) != 0)
      continue;
    if (hs->client != 0 && j->client == hs->client &&
        j->req_id == hs->req_id) {  /* a resend of a request we took */
      if (!j->ended)
        j->pipe = hs->pipe;  /* nng resends on a new connection */
      *out = j;
      return 0;
    }
    mine += !j->ended;
  }
  size_t pi = 0;
  unsigned s = WV_SEG_LOG2_DEFAULT;
  int rc = hj_validate(t, hs, packs, &pi, &s, err);
  if (rc != 0)
    return rc;
  if (mine >= t->lim.client_jobs)
    return wv_seterr(err, WAVE_EBUSY, "%zu of your hash jobs are queued or "
                     "running (limits.client_jobs %u)", mine,
                     t->lim.client_jobs);
  uint64_t id = 0;
  if ((rc = hj_new_id(t, &id, err)) != 0)
    return rc;
  const wv_pack *p = packs->list[pi];
  wd_device **chosen = calloc(n_devs ? n_devs : 1, sizeof *chosen);
  if (chosen == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  size_t n_chosen = 0;
  /* how the pack stands on each device, for the choice */
  size_t slot = wd_packs_slot(packs, pi), n_ix = 0;
  for (size_t i = 0; i < n_devs; i++)
    if (wd_device_index(devs[i]) + 1 > n_ix)
      n_ix = wd_device_index(devs[i]) + 1;
  wd_pick_pack *pp = calloc(n_ix ? n_ix : 1, sizeof *pp);
  wd_pack_state *st = calloc(n_ix ? n_ix : 1, sizeof *st);
  if (pp == NULL || st == NULL) {
    free(pp);
    free(st);
    free(chosen);
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  }
  for (size_t i = 0; i < n_devs; i++) {
    unsigned x = wd_device_index(devs[i]);
    st[x].state = WD_CHECK_FAILED;
    wd_packstate_get(t->ps, x, slot, &st[x]);
    pp[x] = (wd_pick_pack){.failed = st[x].state == WD_CHECK_FAILED,
                           .ready = st[x].state == WD_CHECK_OK,
                           .hash_rate = st[x].hash_rate,
                           .detail = st[x].detail};
  }
  wd_pick_req prq = {
    .kind = WD_PICK_HASH,
    .device = hs->device,
    .devices = hs->devices,
    .n_devices = hs->n_devices,
    .packs = pp,
    .pack_name = wv_pack_name(p),
  };
  rc = wd_pick(devs, n_devs, &prq, chosen, &n_chosen, err);
  free(pp);
  free(st);
  if (rc != 0) {
    free(chosen);
    return rc;
  }
  uint64_t segs = wv_seg_count(hs->nonce, hs->count, s);
  wd_hjob *j = hj_alloc(hs, n_chosen, s, segs);
  if (j == NULL) {
    free(chosen);
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  }
  j->seg_log2 = s;
  j->seg_count = segs;
  if ((rc = hj_fill(t, j, hs, who, id, packs, pi, chosen, err)) != 0) {
    hj_free(j);
    free(chosen);
    return rc;
  }
  free(chosen);
  if ((rc = hj_queue_shares(t, j, err)) != 0)
    return rc;
  wv_q_push(&t->all, &j->link);
  t->n_active++;
  wd_debug("hash job %" PRIu64 ": pack %s, nonces %" PRIu64 "+%" PRIu64
           " on %s%s", j->id, wv_pack_name(p), j->nonce, j->count,
           j->dev_names[0], j->n_parts > 1 ? " and others" : "");
  *out = j;
  return 0;
}

wd_hjob *wd_jobs_find(wd_jobs *t, uint64_t id, const char *who,
                      const uint8_t *key, size_t key_len)
{
  wv_qnode *n;
  WV_Q_EACH(n, &t->all)
    if (HJ_OF(n)->id == id)
      return wd_hjob_may(HJ_OF(n), who, key, key_len) ? HJ_OF(n) : NULL;
  return NULL;
}

size_t wd_jobs_drop_pipe(wd_jobs *t, uint32_t pipe)
{
  size_t n = 0;
  wv_qnode *q, *nx;
  WV_Q_EACH_SAFE(q, nx, &t->all) {
    /* the ended callback may run here; it drops nothing */
    wd_hjob *j = HJ_OF(q);
    if (j->ended || j->detach || j->pipe != pipe)
      continue;
    wd_info("hash job %" PRIu64 ": its connection closed; cancelled "
            "(submit it detached to keep it)", j->id);
    wd_jobs_cancel(t, j, WAVE_ECANCELLED);
    n++;
  }
  return n;
}

/* Every share has ended: the job's outcome. */
static void hj_finish(wd_hjob *j)
{
  wd_jobs *t = j->table;
  uint64_t t0 = atomic_load(&j->t_start_ns);
  j->seconds = t0 ? (double)(wd_hj_now_ns() - t0) * 1e-9 : 0.0;
  int cancel = atomic_load(&j->cancel);
  int st;
  if (j->abort_rc != 0) {
    st = WD_JOB_FAILED;
    j->rc = j->abort_rc;
    j->err = j->abort_err;
  } else if (j->m.folded == j->count) {
    st = WD_JOB_DONE;
    j->rc = 0;
  } else if (cancel) {
    st = WD_JOB_CANCELLED;
    j->rc = cancel;
    wv_seterr(&j->err, cancel, "job %" PRIu64 " cancelled after %" PRIu64
              " of %" PRIu64 " nonces%s", j->id, atomic_load(&j->done),
              j->count, cancel == WAVE_ESHUTDOWN
                            ? ": daemon is shutting down" : "");
  } else {
    st = WD_JOB_FAILED;
    j->rc = j->part_rc ? j->part_rc : WAVE_EINTERNAL;
    j->err = j->part_err;
    if (j->part_rc == 0)
      wv_seterr(&j->err, WAVE_EINTERNAL, "job %" PRIu64 " ended unfinished",
                j->id);
  }
  for (size_t i = 0; i < j->n_parts; i++) {
    hj_part *p = &j->parts[i];
    j->shares[i] = (wd_share_view){
      .device = j->dev_names[i],
      .hashes = p->hashes,
      .seconds = p->work.seconds,
      .faulted = p->faulted || p->work.rc == WAVE_EDEVFAULT,
    };
  }
  atomic_store(&j->state, st);
  j->ended = 1;
  j->ended_ns = wd_hj_now_ns();
  if (st != WD_JOB_DONE) {  /* no view shows them: free them now */
    free(j->outputs);
    free(j->m.segments);
    j->outputs = NULL;
    j->m.segments = NULL;
  }
  j->kept = hj_result_bytes(j);
  t->kept += j->kept;
  t->n_active--;
  t->n_ended++;
  wd_debug("hash job %" PRIu64 " ended: %s", j->id,
           j->rc ? j->err.message : "done");
  t->ended(t->arg, j);
}

void wd_hj_part_ended(hj_part *p)
{
  wd_hjob *j = p->job;
  pthread_mutex_lock(&j->mu);
  int waited = p->state == HP_WAITING;
  p->state = HP_ENDED;
  pthread_mutex_unlock(&j->mu);
  if (waited)
    j->waiting--;
  free(p->scratch);  /* a batch of outputs: not kept with the job */
  p->scratch = NULL;
  p->scratch_n = 0;
  int rc = p->work.rc;
  if (rc != 0 && rc != WAVE_ECANCELLED && rc != WAVE_ESHUTDOWN &&
      j->part_rc == 0) {
    j->part_rc = rc;
    j->part_err = p->work.err;
  }
  if (--j->live == 0)
    hj_finish(j);
  else
    hj_release_waiting(j);
}

void wd_jobs_cancel(wd_jobs *t, wd_hjob *j, int code)
{
  (void)t;
  if (j->ended)
    return;
  int zero = 0;
  atomic_compare_exchange_strong(&j->cancel, &zero, code);
  hj_part *off[j->n_parts ? j->n_parts : 1];
  size_t n_off = 0;
  pthread_mutex_lock(&j->mu);
  for (size_t i = 0; i < j->n_parts; i++) {
    hj_part *p = &j->parts[i];
    if (p->state == HP_QUEUED && wd_device_unqueue(p->dev, &p->work)) {
      p->work.rc = wv_seterr(&p->work.err, code, "job %" PRIu64 " cancelled",
                             j->id);
      off[n_off++] = p;
    } else if (p->state == HP_PARKED) {
      p->state = HP_QUEUED;
      wd_device_resume(p->dev, &p->work);  /* it sees the cancel */
    } else if (p->state == HP_ACTIVE) {
      wd_device_poke(p->dev);  /* held (exec/device.h): it runs to see it */
    }
  }
  pthread_mutex_unlock(&j->mu);
  for (size_t i = 0; i < n_off; i++)
    wd_hj_part_ended(off[i]);
  /* the shares still waiting for their pack never reached a device */
  wave_error e;
  wv_seterr(&e, code, "job %" PRIu64 " cancelled while its pack was being "
            "prepared", j->id);
  for (size_t i = 0; i < j->n_parts && !j->ended; i++)
    if (hj_is_waiting(j, &j->parts[i])) {
      j->parts[i].work.rc = code;
      j->parts[i].work.err = e;
      wd_hj_part_ended(&j->parts[i]);
    }
}

void wd_jobs_cancel_all(wd_jobs *t, int code)
{
  wv_qnode *n, *nx;
  WV_Q_EACH_SAFE(n, nx, &t->all)
    wd_jobs_cancel(t, HJ_OF(n), code);
}

void wd_jobs_prune(wd_jobs *t)
{
  uint64_t now = wd_hj_now_ns();
  uint64_t keep_ns = (uint64_t)t->lim.keep_seconds * 1000000000u;
  /* oldest first (the table is in submit order, which is near enough the
   * order they ended in) */
  wv_qnode *n, *nx;
  WV_Q_EACH_SAFE(n, nx, &t->all) {
    wd_hjob *j = HJ_OF(n);
    if (!j->ended || !wv_q_empty(&j->waiters))
      continue;
    if (t->n_ended <= t->lim.keep_jobs && now - j->ended_ns <= keep_ns &&
        (j->kept == 0 || t->kept <= t->lim.keep_result_bytes))
      continue;
    t->kept -= j->kept;
    wv_q_remove(&j->link);
    t->n_ended--;
    hj_free(j);
  }
}

size_t wd_jobs_active(const wd_jobs *t) { return t->n_active; }

void wd_jobs_set_limits(wd_jobs *t, const wd_limits *lim) { t->lim = *lim; }

wd_hjob *wd_jobs_next(wd_jobs *t, wd_hjob *j)
{
  wv_qnode *n = j == NULL ? t->all.next : j->link.next;
  return n == &t->all ? NULL : HJ_OF(n);
}

uint64_t wd_hjob_id(const wd_hjob *j) { return j->id; }

int wd_hjob_may(const wd_hjob *j, const char *who, const uint8_t *key,
                size_t key_len)
{
  return wd_peer_may(who, j->principal) ||
         (j->has_key && wd_job_key_equal(j->key, key, key_len));
}

const uint8_t *wd_hjob_key(const wd_hjob *j)
{
  return j->has_key ? j->key : NULL;
}

void wd_hjob_outputs_sent(wd_hjob *j)
{
  if (!j->ended || j->outputs == NULL)
    return;
  uint64_t n = j->count * sizeof *j->outputs;
  free(j->outputs);
  j->outputs = NULL;
  j->outputs_sent = 1;
  j->kept -= n;
  j->table->kept -= n;
}

int wd_hjob_is_ended(const wd_hjob *j) { return j->ended; }

int wd_hjob_state(const wd_hjob *j) { return atomic_load(&j->state); }

wv_qnode *wd_hjob_waiters(wd_hjob *j) { return &j->waiters; }

void wd_hjob_view(const wd_hjob *j, uint64_t seg_offset, uint32_t seg_limit,
                  wd_job_view *v)
{
  memset(v, 0, sizeof *v);
  v->id = j->id;
  v->instance = j->table->instance;
  v->total = j->count;
  v->done = atomic_load(&j->done);
  v->device = j->dev_names[0];
  v->owner = j->principal;
  v->devices = j->dev_names;
  v->n_devices = j->n_parts;
  v->level = j->level;
  v->deadline_ms = j->deadline_ms;
  uint64_t ts = atomic_load(&j->t_start_ns);
  v->queued = ts ? (double)(ts - j->t_made_ns) * 1e-9 : -1.0;
  int st = atomic_load(&j->state);
  if (!j->ended) {
    /* the devices may have finished; the loop has not seen it yet */
    if (j->waiting > 0 && j->waiting == j->live) {
      st = WD_JOB_PREPARING;
      for (size_t i = 0; i < j->n_parts; i++)
        if (j->parts[i].state == HP_WAITING) {
          wd_pack_state ck = {0};
          wd_packstate_get(j->packstate, wd_device_index(j->parts[i].dev),
                           j->pack_index, &ck);
          v->wait_pack = wv_pack_name(j->pack);
          v->wait_device = j->dev_names[i];
          v->prepare_steps = ck.steps;
          v->prepare_steps_total = ck.steps_total;
          break;
        }
    } else if (st != WD_JOB_QUEUED) {
      st = WD_JOB_RUNNING;
    }
    uint64_t t0 = atomic_load(&j->t_start_ns);
    v->seconds = t0 ? (double)(wd_hj_now_ns() - t0) * 1e-9 : 0.0;
    v->state = st;
    return;
  }
  v->state = st;
  v->seconds = j->seconds;
  v->shares = j->shares;
  v->n_shares = j->n_parts;
  if (st != WD_JOB_DONE) {
    v->rc = j->rc;
    v->message = j->err.message;
    return;
  }
  v->job_fingerprint = j->m.fingerprint;
  v->segment_log2 = j->seg_log2;
  v->segment_count = j->seg_count;
  if (j->m.segments != NULL && seg_offset < j->seg_count) {
    uint64_t n = j->seg_count - seg_offset;
    uint32_t lim = seg_limit == 0 || seg_limit > WD_SEGMENT_PAGE
                       ? WD_SEGMENT_PAGE : seg_limit;
    if (n > lim)
      n = lim;
    v->segments = j->m.segments + seg_offset;
    v->n_segments = (size_t)n;
  }
  v->segment_offset = seg_offset;
  v->winners = j->m.winners;
  v->n_winners = j->m.n_winners;
  v->winner_count = j->m.winner_count;
  v->best_nonce = j->m.best_nonce;
  v->best_output = j->m.best_output;
  v->hashes = j->m.hashes;
  v->exchange = j->exchange;
  if (j->outputs != NULL) {
    v->outputs = j->outputs;
    v->n_outputs = (size_t)j->count;
  }
  v->outputs_delivered = j->outputs_sent;
}

/* ---- shares waiting for their pack (hashjob.h "Packs being prepared") ---- */

void wd_jobs_set_prepare(wd_jobs *t, wd_prepare_fn prepare, void *arg)
{
  t->prepare = prepare;
  t->prepare_arg = arg;
}

void wd_jobs_set_packstate(wd_jobs *t, wd_packstate *ps) { t->ps = ps; }

/* Queue pt on its device, or let it wait there for the pack.  0, or why
 * it cannot run (the caller ends it). */
static int hj_share_start(wd_jobs *t, wd_hjob *j, hj_part *pt,
                          wave_error *err)
{
  if (wd_device_faulted(pt->dev))  /* its preparation did not run, either */
    return wv_seterr(err, WAVE_EDEVFAULT, "device %s is faulted",
                     wd_device_name(pt->dev));
  wd_pack_state ck = {.state = WD_CHECK_FAILED};
  wd_packstate_get(t->ps, wd_device_index(pt->dev), j->pack_index, &ck);
  if (ck.state == WD_CHECK_PENDING) {
    if (!ck.queued) {
      int rc = t->prepare != NULL
                   ? t->prepare(t->prepare_arg, pt->dev, j->pack,
                                j->pack_index, err)
                   : wv_seterr(err, WAVE_EINTERNAL, "pack %s is not "
                               "prepared on device %s", wv_pack_name(j->pack),
                               wd_device_name(pt->dev));
      if (rc != 0)
        return rc;
    }
    pthread_mutex_lock(&j->mu);  /* other shares may be running */
    pt->state = HP_WAITING;
    pthread_mutex_unlock(&j->mu);
    j->waiting++;
    return 0;
  }
  if (ck.state == WD_CHECK_FAILED)
    return wv_seterr(err, WAVE_ESELFCHECK,
                     "pack %s failed its self-check on device %s: %s",
                     wv_pack_name(j->pack), wd_device_name(pt->dev),
                     ck.detail);
  pthread_mutex_lock(&j->mu);  /* the device may run it at once */
  pt->state = HP_QUEUED;
  int rc = wd_device_submit(pt->dev, &pt->work, err);
  pthread_mutex_unlock(&j->mu);
  return rc;
}

/* Only waiting shares are left, and the others did the whole job (or it
 * failed): the waiting ones have nothing to do. */
static void hj_release_waiting(wd_hjob *j)
{
  if (j->ended || j->live != j->waiting ||
      (j->m.folded != j->count && j->abort_rc == 0))
    return;
  for (size_t i = 0; i < j->n_parts && !j->ended; i++)
    if (j->parts[i].state == HP_WAITING) {
      j->parts[i].work.rc = 0;
      wd_hj_part_ended(&j->parts[i]);
    }
}

void wd_jobs_pack_ended(wd_jobs *t, wd_device *d, size_t slot)
{
  wd_pack_state ck = {.state = WD_CHECK_FAILED};
  wd_packstate_get(t->ps, wd_device_index(d), slot, &ck);
  if (ck.state == WD_CHECK_PENDING)
    return;  /* a newer preparation is queued: wait for that one */
  wv_qnode *n;
  WV_Q_EACH(n, &t->all) {
    wd_hjob *j = HJ_OF(n);
    if (j->ended || j->waiting == 0 || j->pack_index != slot)
      continue;
    for (size_t i = 0; i < j->n_parts && !j->ended; i++) {
      hj_part *p = &j->parts[i];
      if (p->dev != d || !hj_is_waiting(j, p))
        continue;
      wave_error e = {0};
      j->waiting--;  /* hj_share_start queues it or says why not */
      int rc = hj_share_start(t, j, p, &e);
      if (rc == 0)
        continue;
      pthread_mutex_lock(&j->mu);
      p->state = HP_WAITING;  /* no device holds it: it ends as one */
      pthread_mutex_unlock(&j->mu);
      j->waiting++;
      p->work.rc = rc;
      p->work.err = e;
      wd_hj_part_ended(p);
    }
  }
}
