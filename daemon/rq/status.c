/* reply.c - every Response wavedd sends is built here, from the daemon's
 * plain C state (device snapshots, wd_job_view, reduction results), and
 * packed and handed to the context here.  Nothing else in the daemon fills
 * a protobuf message.
 *
 * Response.version echoes the request's version (1 or 2; 2 when it could
 * not be decoded), so a version-1 client sees the envelope it expects.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/net/connguard.h"
#include "daemon/log.h"
#include "daemon/stats.h"
#include "daemon/server_int.h"
#include "core/base.h"

void wd_reply(wd_req *c, Wave__V1__Response *r)
{
  r->version = c->version ? c->version : WD_PROTOCOL;
  r->id = c->req_id;
  size_t n = wave__v1__response__get_packed_size(r);
  nng_msg *m = NULL;
  Wave__V1__Error e = WAVE__V1__ERROR__INIT;
  Wave__V1__Response er = WAVE__V1__RESPONSE__INIT;
  if (nng_msg_alloc(&m, n) != 0) {
    /* no memory for this reply: try a small error, else let REQ resend */
    e.code = WAVE_ENOMEM;
    e.name = (char *)wave_errname(WAVE_ENOMEM);
    e.message = (char *)"no memory for the reply";
    er.version = r->version;
    er.id = c->req_id;
    er.body_case = WAVE__V1__RESPONSE__BODY_ERROR;
    er.error = &e;
    n = wave__v1__response__get_packed_size(&er);
    if (nng_msg_alloc(&m, n) != 0) {
      wd_error("no memory for a reply; dropping request %" PRIu64, c->req_id);
      wd_req_clear(c);
      wd_front_recv(c);
      return;
    }
    r = &er;
  }
  wave__v1__response__pack(r, nng_msg_body(m));
  wd_req_clear(c);
  wd_front_send(c, m);
}

void wd_reply_error(wd_req *c, int code, const char *fmt, ...)
{
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  wd_debug("request %" PRIu64 ": %s: %s", c->req_id, wave_errname(code), msg);
  wd_stats_request_error(code);
  Wave__V1__Error e = WAVE__V1__ERROR__INIT;
  e.code = (uint32_t)code;
  e.name = (char *)wave_errname(code);
  e.message = msg;
  Wave__V1__Response r = WAVE__V1__RESPONSE__INIT;
  r.body_case = WAVE__V1__RESPONSE__BODY_ERROR;
  r.error = &e;
  wd_reply(c, &r);
}

void wd_reply_reduce(wd_req *c)
{
  Wave__V1__ReduceResult rr = WAVE__V1__REDUCE_RESULT__INIT;
  rr.dtype = (Wave__V1__DType)c->job.dtype;  /* also for streams */
  rr.op = (Wave__V1__Op)c->job.op;
  rr.n_bits = c->out.n_values;
  rr.bits = c->out.bits;
  rr.count = c->out.count;
  rr.rows = c->job.rows;
  rr.device = (char *)wd_device_name(c->work.dev);
  rr.seconds = c->work.seconds;
  rr.finite = (Wave__V1__FiniteRows)c->finite;
  Wave__V1__Response r = WAVE__V1__RESPONSE__INIT;
  r.body_case = WAVE__V1__RESPONSE__BODY_REDUCE;
  r.reduce = &rr;
  wd_reply(c, &r);
}

/* Pack k's self-check state on device d as a PackCheck; its strings point
 * into st, the pack and the device, which outlive the reply. */
static void rp_pack_check(Wave__V1__PackCheck *pc, wd_pack_state *st,
                          wd_device *d, size_t k, const wv_pack *pack)
{
  wd_device_pack_check(d, k, st);
  wave__v1__pack_check__init(pc);
  pc->pack = (char *)wv_pack_name(pack);
  pc->device = (char *)wd_device_name(d);
  pc->ok = st->state == WD_CHECK_OK;
  pc->state = (char *)wd_check_state_name(st->state);
  pc->detail = st->detail;
  pc->hash_rate = st->hash_rate;
}

void wd_reply_status(wd_req *c)
{
  wd_server *s = c->srv;
  size_t nd = s->n_devs, np = s->packs->n;
  Wave__V1__DeviceStatus *ds = calloc(nd + 1, sizeof *ds);
  Wave__V1__DeviceStatus **dp = calloc(nd + 1, sizeof *dp);
  wd_device_snap *snap = calloc(nd + 1, sizeof *snap);
  wv_caps *caps = calloc(nd + 1, sizeof *caps);
  Wave__V1__PackCheck *pc = calloc(nd * np + 1, sizeof *pc);
  Wave__V1__PackCheck **pp = calloc(nd * np + 1, sizeof *pp);
  wd_pack_state *st = calloc(nd * np + 1, sizeof *st);
  if (!ds || !dp || !snap || !caps || !pc || !pp || !st) {
    wd_reply_error(c, WAVE_ENOMEM, "no memory for the status reply");
    goto out;
  }
  for (size_t i = 0; i < nd; i++) {
    wd_device *d = s->devs[i];
    wd_device_caps(d, &caps[i]);
    wd_device_snapshot(d, &snap[i]);
    wave__v1__device_status__init(&ds[i]);
    ds[i].name = (char *)wd_device_name(d);
    ds[i].backend = (char *)wd_device_cfg_of(d)->backend;
    ds[i].description = caps[i].description;
    ds[i].queue_depth = snap[i].queued;
    ds[i].queue_capacity = snap[i].capacity;
    ds[i].jobs_done = snap[i].done;
    ds[i].jobs_failed = snap[i].failed;
    ds[i].faulted = snap[i].faulted;
    ds[i].fault = snap[i].fault;
    ds[i].running = snap[i].running;
    ds[i].wave_width = caps[i].wave_width;
    ds[i].exchange = caps[i].exchange;
    ds[i].exchange_reason = caps[i].exchange_reason;
    ds[i].n_packs = np;
    ds[i].packs = pp + i * np;
    for (size_t k = 0; k < np; k++) {
      size_t x = i * np + k;
      rp_pack_check(&pc[x], &st[x], d, wd_packs_slot(s->packs, k),
                    s->packs->list[k]);
      pp[x] = &pc[x];
    }
    dp[i] = &ds[i];
  }
  Wave__V1__StatusReply sr = WAVE__V1__STATUS_REPLY__INIT;
  sr.version = (char *)WAVE_VERSION;
  sr.uptime_ms = (uv_hrtime() - s->t0) / 1000000u;
  sr.jobs_served = s->served;
  sr.jobs_failed = s->failed;
  sr.n_devices = nd;
  sr.devices = dp;
  sr.listen = wd_listeners_urls(s->lst, &sr.n_listen);
  sr.instance = s->instance;
  sr.ready = s->ready != 0;
  sr.max_files = wd_max_files();
  wd_region_snap rsnap;
  /* regions: the asker's own only (root over ipc: all) */
  wd_bulk_status(s->bulk, c->principal, &sr, &rsnap);
  Wave__V1__Response r = WAVE__V1__RESPONSE__INIT;
  r.body_case = WAVE__V1__RESPONSE__BODY_STATUS;
  r.status = &sr;
  wd_reply(c, &r);
  wd_region_snap_free(&rsnap);
out:
  free(ds);
  free(dp);
  free(snap);
  free(caps);
  free(pc);
  free(pp);
  free(st);
}

void wd_reply_packs(wd_req *c)
{
  wd_server *s = c->srv;
  size_t nd = s->n_devs, np = s->packs->n;
  Wave__V1__PackInfo *pi = calloc(np + 1, sizeof *pi);
  Wave__V1__PackInfo **pip = calloc(np + 1, sizeof *pip);
  Wave__V1__PackCheck *pc = calloc(nd * np + 1, sizeof *pc);
  Wave__V1__PackCheck **pp = calloc(nd * np + 1, sizeof *pp);
  wd_pack_state *st = calloc(nd * np + 1, sizeof *st);
  if (!pi || !pip || !pc || !pp || !st) {
    wd_reply_error(c, WAVE_ENOMEM, "no memory for the packs reply");
    goto out;
  }
  for (size_t k = 0; k < np; k++) {
    const wv_pack *p = s->packs->list[k];
    wave__v1__pack_info__init(&pi[k]);
    pi[k].name = (char *)wv_pack_name(p);
    pi[k].version = wv_pack_version(p);
    pi[k].dataset_bytes = wv_pack_dataset_bytes(p);
    pi[k].description = (char *)wv_pack_description(p);
    pi[k].n_devices = nd;
    pi[k].devices = pp + k * nd;
    for (size_t i = 0; i < nd; i++) {
      size_t x = k * nd + i;
      rp_pack_check(&pc[x], &st[x], s->devs[i], wd_packs_slot(s->packs, k),
                    p);
      pp[x] = &pc[x];
    }
    pip[k] = &pi[k];
  }
  Wave__V1__PacksReply pr = WAVE__V1__PACKS_REPLY__INIT;
  pr.n_packs = np;
  pr.packs = pip;
  Wave__V1__Response r = WAVE__V1__RESPONSE__INIT;
  r.body_case = WAVE__V1__RESPONSE__BODY_PACKS;
  r.packs = &pr;
  wd_reply(c, &r);
out:
  free(pi);
  free(pip);
  free(pc);
  free(pp);
  free(st);
}

void wd_reply_job(wd_req *c, const wd_job_view *v)
{
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
  ji.waiting_pack = (char *)(v->wait_pack ? v->wait_pack : "");
  ji.waiting_device = (char *)(v->wait_device ? v->wait_device : "");
  ji.prepare_steps = v->prepare_steps;
  ji.prepare_steps_total = v->prepare_steps_total;
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
void wd_reply_jobs(wd_req *c, const wd_job_view *v, size_t n)
{
  Wave__V1__JobInfo *ji = calloc(n + 1, sizeof *ji);
  Wave__V1__JobInfo **jp = calloc(n + 1, sizeof *jp);
  Wave__V1__Error *e = calloc(n + 1, sizeof *e);
  char (*names)[32] = calloc(n + 1, sizeof *names);
  if (ji == NULL || jp == NULL || e == NULL || names == NULL) {
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
}
