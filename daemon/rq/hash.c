/* hash.c - hash jobs on the loop: HashRequest (submit), JobRequest (poll,
 * parked by rq/park.c when it waits), CancelRequest and JobsRequest, and
 * their replies (JobInfo, JobsReply) from the plain-C wd_job_view.
 *
 * A version-1 hash submit is answered VERSION: protocol 2 changed what a
 * hash job's fingerprint is (segment fingerprints), so a version-1 client
 * would misread the result.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/jobs/owner.h"
#include "daemon/net/front.h"
#include "daemon/rq/hash.h"
#include "daemon/rq/park.h"
#include "daemon/server_int.h"
#include "core/base.h"

#define HS_HELD_MAX 512

/* Into buf: the devices of a queued or running job that a guard or the
 * watchdog holds now, with why ("fk0 throttled: ..."; "; " between
 * them), or "" (JobInfo.held). */
static void hs_held(const wd_server *s, const wd_job_view *v, char *buf,
                    size_t n)
{
  buf[0] = '\0';
  if (v->state != WD_JOB_QUEUED && v->state != WD_JOB_RUNNING)
    return;
  size_t used = 0;
  for (size_t i = 0; i < s->n_devs; i++) {
    const char *name = wd_device_name(s->devs[i]);
    int mine = v->n_devices == 0 && v->device != NULL &&
               strcmp(v->device, name) == 0;
    for (size_t k = 0; k < v->n_devices && !mine; k++)
      mine = strcmp(v->devices[k], name) == 0;
    if (!mine)
      continue;
    wd_guard_view g;
    wd_server_guards(s, i, &g);
    if (strcmp(g.state, "throttled") != 0 && strcmp(g.state, "degraded") != 0)
      continue;
    int w = snprintf(buf + used, n - used, "%s%s %s: %s", used ? "; " : "",
                     name, g.state, g.reason);
    if (w < 0 || (size_t)w >= n - used)
      break;  /* cut at the bound: the rest would not fit */
    used += (size_t)w;
  }
}

static void hs_reply_job(wd_req *c, const wd_job_view *v)
{
  char held[HS_HELD_MAX];
  Wave__V1__JobInfo ji = WAVE__V1__JOB_INFO__INIT;
  Wave__V1__HashResult hr = WAVE__V1__HASH_RESULT__INIT;
  Wave__V1__Error e = WAVE__V1__ERROR__INIT;
  Wave__V1__Winner *w = NULL, **wp = NULL;
  Wave__V1__DeviceShare *sh = NULL, **shp = NULL;
  char errname[32];
  ji.job_id = v->id;
  ji.state = (Wave__V1__JobState)v->state;
  ji.done = v->done;
  ji.total = v->total;
  ji.seconds = v->seconds;
  ji.device = (char *)v->device;
  ji.instance = v->instance;
  ji.n_devices = v->n_devices;
  ji.devices = (char **)v->devices;
  ji.outputs_delivered = v->outputs_delivered != 0;
  ji.priority = (Wave__V1__Priority)v->level;
  ji.deadline_ms = v->deadline_ms;
  ji.waiting_pack = (char *)(v->wait_pack ? v->wait_pack : "");
  ji.waiting_device = (char *)(v->wait_device ? v->wait_device : "");
  ji.prepare_steps = v->prepare_steps;
  ji.prepare_steps_total = v->prepare_steps_total;
  ji.owner = (char *)(v->owner ? v->owner : "");
  hs_held(c->call->srv, v, held, sizeof held);
  ji.held = held;
  if (v->rc != 0) {
    e.code = (uint32_t)v->rc;
    snprintf(errname, sizeof errname, "%s", wave_errname(v->rc));
    e.name = errname;
    e.message = (char *)v->message;
    ji.error = &e;
  }
  if (v->n_shares > 0) {
    sh = calloc(v->n_shares, sizeof *sh);
    shp = calloc(v->n_shares, sizeof *shp);
    if (sh == NULL || shp == NULL)
      goto nomem;
    for (size_t i = 0; i < v->n_shares; i++) {
      wave__v1__device_share__init(&sh[i]);
      sh[i].device = (char *)v->shares[i].device;
      sh[i].hashes = v->shares[i].hashes;
      sh[i].seconds = v->shares[i].seconds;
      sh[i].faulted = v->shares[i].faulted != 0;
      shp[i] = &sh[i];
    }
  }
  if (v->state == WD_JOB_DONE) {
    hr.job_fingerprint = v->job_fingerprint;
    hr.segment_log2 = v->segment_log2;
    hr.segment_count = v->segment_count;
    hr.n_segments = v->n_segments;
    hr.segments = (uint64_t *)v->segments;
    hr.segment_offset = v->segment_offset;
    hr.winner_count = v->winner_count;
    hr.best_nonce = v->best_nonce;
    hr.best_output = v->best_output;
    hr.hashes = v->hashes;
    hr.seconds = v->seconds;
    hr.device = (char *)v->device;
    hr.exchange = (char *)v->exchange;
    hr.n_shares = v->n_shares;
    hr.shares = shp;
    if (v->n_winners > 0) {
      w = calloc(v->n_winners, sizeof *w);
      wp = calloc(v->n_winners, sizeof *wp);
      if (w == NULL || wp == NULL)
        goto nomem;
      for (size_t i = 0; i < v->n_winners; i++) {
        wave__v1__winner__init(&w[i]);
        w[i].nonce = v->winners[i].nonce;
        w[i].output = v->winners[i].output;
        wp[i] = &w[i];
      }
      hr.n_winners = v->n_winners;
      hr.winners = wp;
    }
    hr.n_outputs = v->n_outputs;
    hr.outputs = (uint64_t *)v->outputs;
    ji.result = &hr;
  }
  if (v->key_len > 0) {
    ji.key.data = (uint8_t *)v->key;
    ji.key.len = v->key_len;
  }
  Wave__V1__Response r = WAVE__V1__RESPONSE__INIT;
  r.body_case = WAVE__V1__RESPONSE__BODY_JOB;
  r.job = &ji;
  wd_reply(c, &r);
  goto out;
nomem:
  wd_reply_error(c, WAVE_ENOMEM, "no memory for the job reply");
out:
  free(w);
  free(wp);
  free(sh);
  free(shp);
}

/* JobsReply: per job its state and progress, without the result (ask
 * JobRequest for one job's). */
static void hs_reply_jobs(wd_req *c, const wd_job_view *v, size_t n)
{
  Wave__V1__JobInfo *ji = calloc(n + 1, sizeof *ji);
  Wave__V1__JobInfo **jp = calloc(n + 1, sizeof *jp);
  Wave__V1__Error *e = calloc(n + 1, sizeof *e);
  char (*names)[32] = calloc(n + 1, sizeof *names);
  char (*held)[HS_HELD_MAX] = calloc(n + 1, sizeof *held);
  if (ji == NULL || jp == NULL || e == NULL || names == NULL ||
      held == NULL) {
    wd_reply_error(c, WAVE_ENOMEM, "no memory for the jobs reply");
    goto out;
  }
  for (size_t i = 0; i < n; i++) {
    wave__v1__job_info__init(&ji[i]);
    ji[i].job_id = v[i].id;
    ji[i].state = (Wave__V1__JobState)v[i].state;
    ji[i].done = v[i].done;
    ji[i].total = v[i].total;
    ji[i].seconds = v[i].seconds;
    ji[i].device = (char *)v[i].device;
    ji[i].instance = v[i].instance;
    ji[i].n_devices = v[i].n_devices;
    ji[i].devices = (char **)v[i].devices;
    ji[i].waiting_pack = (char *)(v[i].wait_pack ? v[i].wait_pack : "");
    ji[i].waiting_device = (char *)(v[i].wait_device ? v[i].wait_device : "");
    ji[i].prepare_steps = v[i].prepare_steps;
    ji[i].prepare_steps_total = v[i].prepare_steps_total;
    ji[i].owner = (char *)(v[i].owner ? v[i].owner : "");
    hs_held(c->call->srv, &v[i], held[i], sizeof held[i]);
    ji[i].held = held[i];
    if (v[i].rc != 0) {
      wave__v1__error__init(&e[i]);
      e[i].code = (uint32_t)v[i].rc;
      snprintf(names[i], sizeof names[i], "%s", wave_errname(v[i].rc));
      e[i].name = names[i];
      e[i].message = (char *)v[i].message;
      ji[i].error = &e[i];
    }
    jp[i] = &ji[i];
  }
  Wave__V1__JobsReply jr = WAVE__V1__JOBS_REPLY__INIT;
  jr.n_jobs = n;
  jr.jobs = jp;
  Wave__V1__Response r = WAVE__V1__RESPONSE__INIT;
  r.body_case = WAVE__V1__RESPONSE__BODY_JOBS;
  r.jobs = &jr;
  wd_reply(c, &r);
out:
  free(ji);
  free(jp);
  free(e);
  free(names);
  free(held);
}

/* The JobInfo of j.  An answer to a poll (JobRequest) that carries a DONE
 * job's outputs delivers them: they are dropped (docs/protocol.md "Job
 * results"); a submit's or cancel's answer keeps them for the poll. */
static void hs_answer_job(wd_req *c, wd_hjob *j, uint64_t seg_offset,
                          uint32_t seg_limit, int poll)
{
  wd_job_view v;
  wd_hjob_view(j, seg_offset, seg_limit, &v);
  hs_reply_job(c, &v);
  if (poll && v.state == WD_JOB_DONE && v.n_outputs > 0)
    wd_hjob_outputs_sent(j);  /* packed into the reply */
}

static void hs_reply_job_poll(wd_req *c, wd_hjob *j, uint64_t seg_offset,
                              uint32_t seg_limit)
{
  hs_answer_job(c, j, seg_offset, seg_limit, 1);
}

void wd_rq_hash(wd_req *c, const Wave__V1__HashRequest *hr)
{
  wd_server *s = c->call->srv;
  wave_error err = {0};
  if (c->version < 2) {
    s->failed++;
    return wd_reply_error(c, WAVE_EVERSION, "a hash job needs protocol "
                          "version 2: version 2 replaced the job's "
                          "fingerprint by segment fingerprints "
                          "(docs/protocol.md, \"Changes in protocol 2\")");
  }
  wd_hash_submit hs = {
    .pack = hr->pack,
    .nonce = hr->nonce,
    .count = hr->count,
    .target = hr->target,
    .max_winners = hr->max_winners,
    .want_outputs = hr->want_outputs,
    .want_segments = hr->want_segments,
    .segment_log2 = hr->segment_log2,
    .device = hr->device,
    .devices = hr->devices,
    .n_devices = hr->n_devices,
    .client = hr->client,
    .req_id = c->req_id,
    .principal = c->principal,
    .pipe = c->pipe,
    .detach = hr->detach,
  };
  /* its level; the deadline is on its first piece (hashrun.c) */
  wd_work lw = {0};
  int lv = (int)hr->priority;
  hs.deadline_ms = hr->deadline_ms ? hr->deadline_ms
                   : lv >= 0 && lv < WD_LEVEL_N ? s->cfg->prio.deadline_ms[lv]
                                                : 0;
  wd_work_level(&lw, s->cfg, lv, hs.deadline_ms);
  hs.level = &lw;
  if (!hs.detach && wd_gone_recent(&s->fe->gone, c->pipe)) {
    s->failed++;  /* nobody to answer; nobody to run it for */
    return wd_reply_error(c, WAVE_ECANCELLED, "the connection closed before "
                          "the job was queued");
  }
  wd_jobs_prune(s->jobs);  /* room for this one's result */
  wd_hjob *j;
  if (wd_jobs_submit(s->jobs, &hs, s->devs, s->n_devs, s->packs, &j,
                     &err) != 0)
    return wd_reply_fail(c, &err);
  /* the one reply that carries the job key: the submitter's */
  wd_job_view v;
  wd_hjob_view(j, 0, 0, &v);
  v.key = wd_hjob_key(j);
  v.key_len = v.key != NULL ? WD_JOB_KEY_BYTES : 0;
  hs_reply_job(c, &v);
}

static wd_hjob *hs_find_job(wd_req *c, uint64_t id, uint64_t instance,
                            ProtobufCBinaryData key)
{
  wd_server *s = c->call->srv;
  wd_hjob *j = NULL;
  if (instance != 0 && instance != s->instance) {
    wd_reply_error(c, WAVE_ENOJOB, "job %" PRIu64 " belongs to daemon "
                   "instance %" PRIu64 "; this is instance %" PRIu64
                   " (restarted?)", id, instance, s->instance);
    return NULL;
  }
  /* someone else's job answers exactly as an unknown one */
  if ((j = wd_jobs_find(s->jobs, id, c->principal, key.data,
                        key.len)) == NULL)
    wd_reply_error(c, WAVE_ENOJOB, "no job %" PRIu64 " (finished jobs are "
                   "kept for %u s, at most %u of them)", id,
                   s->cfg->limits.keep_seconds, s->cfg->limits.keep_jobs);
  return j;
}

void wd_rq_job(wd_req *c, const Wave__V1__JobRequest *jr)
{
  wd_server *s = c->call->srv;
  wd_hjob *j = hs_find_job(c, jr->job_id, jr->instance, jr->key);
  if (j == NULL)
    return;
  unsigned wait = jr->wait_ms;
  if (wait > s->cfg->limits.max_wait_ms)
    wait = s->cfg->limits.max_wait_ms;
  /* park: answered by the job's end or by the timer, whichever comes
   * first (rq/park.c) */
  if (wait == 0 || wd_park(c, j, wait, jr->segment_offset, jr->segment_limit,
                           hs_reply_job_poll) != 0)
    hs_reply_job_poll(c, j, jr->segment_offset, jr->segment_limit);
}

void wd_rq_cancel(wd_req *c, const Wave__V1__CancelRequest *cr)
{
  wd_server *s = c->call->srv;
  wd_hjob *j = hs_find_job(c, cr->job_id, cr->instance, cr->key);
  if (j == NULL)
    return;
  wd_jobs_cancel(s->jobs, j, WAVE_ECANCELLED);
  hs_answer_job(c, j, 0, 0, 0);
}

/* JobsRequest: every job of the table the requester may see, and the one
 * its key opens (the key itself is never listed: wd_hjob_view leaves it
 * out). */
void wd_rq_jobs(wd_req *c, const Wave__V1__JobsRequest *jq)
{
  wd_server *s = c->call->srv;
  const uint8_t *key = jq != NULL ? jq->key.data : NULL;
  size_t key_len = jq != NULL ? jq->key.len : 0;
  size_t n = 0;
  for (wd_hjob *j = wd_jobs_next(s->jobs, NULL); j; j = wd_jobs_next(s->jobs, j))
    n += wd_hjob_may(j, c->principal, key, key_len);
  wd_job_view *v = calloc(n + 1, sizeof *v);
  if (v == NULL)
    return wd_reply_error(c, WAVE_ENOMEM, "no memory for the jobs reply");
  size_t k = 0;
  for (wd_hjob *j = wd_jobs_next(s->jobs, NULL); j && k < n;
       j = wd_jobs_next(s->jobs, j))
    if (wd_hjob_may(j, c->principal, key, key_len))
      wd_hjob_view(j, 0, 0, &v[k++]);
  hs_reply_jobs(c, v, k);
  free(v);
}

