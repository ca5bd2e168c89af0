/* server.c - requests in, replies out (see server.h).
 *
 * Threads and hand-offs:
 *  - nng's threads run sv_aio_cb, the state machine of each context in the
 *    manner of nng's demo/async/server.c: RECV -> (hand to the loop) ->
 *    SEND -> RECV.  The callback never decodes, waits or locks for long: it
 *    appends the context to the inbox and wakes the loop (uv_async_send).
 *  - the loop thread decodes (protobuf-c), validates, answers status and job
 *    queries itself, and queues reductions and hash jobs on a device thread;
 *  - device threads post finished work to the completion queue and wake the
 *    loop, which replies.  uv_async_send coalesces, so every wake drains both
 *    queues whole.
 * A context holds at most one request, so the context count
 * (limits.contexts) bounds the requests in flight; each owns its decoded
 * request, the job built from it and a timer for parked JobRequests.
 *
 * Oversized requests: nng closes the connection of a message above the
 * socket's NNG_OPT_RECVMAXSZ, which a client sees only as a timeout.  So the
 * socket accepts up to twice limits.max_request_bytes (at least the limit
 * plus 1 MiB) and the loop answers anything above the limit with TOOBIG;
 * only requests beyond that hard cap are dropped by nng.
 *
 * Reduction input is used in place: the spans point into the unpacked
 * request, which lives until the reply is packed.
 *
 * Stop (SIGINT/SIGTERM, as uv_signal callbacks): new reductions and hash
 * jobs are answered SHUTDOWN, hash jobs are cancelled, parked polls are
 * answered.  Once no reduction is on a device and no hash job is left, the
 * loop waits SV_LINGER_MS for the last replies to leave (nng 1.5 has no
 * linger), then closes contexts, socket, device threads and handles, and
 * uv_run returns.
 */
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>

#include "daemon/listen.h"
#include "daemon/log.h"
#include "daemon/server.h"
#include "daemon/stats.h"
#include "proto/base.h"
#include "proto/wave.pb-c.h"
#include "workers/reduce/reduce.h"

#define SV_LINGER_MS 100   /* after the last reply, before closing sockets */
#define SV_TICK_MS 1000    /* job table pruning */

enum { SC_IDLE, SC_RECV, SC_WORK, SC_SEND };

typedef struct sv_ctx sv_ctx;
struct sv_ctx {
  wd_server *srv;
  nng_ctx ctx;
  nng_aio *aio;
  int state;               /* SC_*; handed over through the inbox mutex */
  sv_ctx *next;            /* inbox link */
  nng_msg *msg;            /* the received request, until decoded */
  Wave__V1__Request *req;  /* decoded; alive until the reply is packed */
  ProtobufCAllocator pb;   /* decodes req within pb_budget bytes */
  size_t pb_used, pb_budget;
  int pb_refused;          /* the decode ran out of budget */
  uint64_t req_id;
  wv_span *spans;          /* reduction chunks, pointing into req */
  wd_work work;            /* the reduction */
  uv_timer_t timer;        /* parked JobRequest */
  wd_hjob *waiting;        /* parked on this job */
  sv_ctx *wait_next;
};

struct wd_server {
  uv_loop_t *loop;
  const wd_config *cfg;
  const wd_packs *packs;
  wd_device **devs;
  size_t n_devs;
  wd_jobs *jobs;

  uv_async_t wake;
  uv_signal_t sigint, sigterm;
  uv_timer_t tick;
  int handles;             /* wake, signals, tick initialised */

  pthread_mutex_t mu;      /* the two queues below */
  sv_ctx *inbox, **inbox_tail;
  wd_work *done, **done_tail;

  nng_socket sock;
  int sock_open;
  wd_listeners *lst;
  sv_ctx *ctxs;
  size_t n_ctxs;

  _Atomic int closing;     /* final close under way: nng callbacks stop */
  int stopping;            /* SIGTERM seen: no new work */
  int finishing, closed;
  unsigned reduce_inflight;
  uint64_t t0;
  uint64_t served, failed;
};

static void sv_maybe_finish(wd_server *s);

/* ---- nng side ------------------------------------------------------------ */

static void sv_aio_cb(void *arg)
{
  sv_ctx *c = arg;
  wd_server *s = c->srv;
  int rv = nng_aio_result(c->aio);
  switch (c->state) {
  case SC_RECV:
    if (rv != 0) {
      if (rv == NNG_ECLOSED || rv == NNG_ECANCELED || atomic_load(&s->closing)) {
        c->state = SC_IDLE;
        return;
      }
      nng_ctx_recv(c->ctx, c->aio);  /* a transient error: keep serving */
      return;
    }
    if (atomic_load(&s->closing)) {
      nng_msg_free(nng_aio_get_msg(c->aio));
      c->state = SC_IDLE;
      return;
    }
    c->msg = nng_aio_get_msg(c->aio);
    c->state = SC_WORK;
    pthread_mutex_lock(&s->mu);
    c->next = NULL;
    *s->inbox_tail = c;
    s->inbox_tail = &c->next;
    pthread_mutex_unlock(&s->mu);
    uv_async_send(&s->wake);
    return;
  case SC_SEND:
    if (rv != 0)  /* the client went away: the reply is ours to free */
      nng_msg_free(nng_aio_get_msg(c->aio));
    if (atomic_load(&s->closing)) {
      c->state = SC_IDLE;
      return;
    }
    c->state = SC_RECV;
    nng_ctx_recv(c->ctx, c->aio);
    return;
  default:
    return;
  }
}

/* Device threads: a job is finished. */
static void sv_post(void *arg, wd_work *w)
{
  wd_server *s = arg;
  pthread_mutex_lock(&s->mu);
  w->next = NULL;
  *s->done_tail = w;
  s->done_tail = &w->next;
  pthread_mutex_unlock(&s->mu);
  uv_async_send(&s->wake);
}

/* ---- replies --------------------------------------------------------------- */

/* protobuf-c allocates while it decodes, and a request of many tiny chunks
 * decodes to many times its wire size (2 wire bytes per empty chunk, 16 in
 * the decoded array): without a bound, 64 requests in flight at the
 * default 64 MiB limit could take gigabytes.  Each context decodes through
 * this allocator, which refuses to go past pb_budget bytes in total. */
static void *sv_pb_alloc(void *data, size_t size)
{
  sv_ctx *c = data;
  if (size > c->pb_budget - c->pb_used) {
    c->pb_refused = 1;
    return NULL;
  }
  c->pb_used += size;
  return malloc(size);
}

static void sv_pb_free(void *data, void *ptr)
{
  (void)data;
  free(ptr);
}

/* Decoding may take this much: a request of one-row chunks decodes to
 * about 3.3 times its wire size (6 wire bytes to a 16-byte array entry and
 * a 4-byte copy), empty chunks to 8 times; 4 times plus room for the
 * envelope admits the first and refuses the second.  So a context never
 * holds more than about 4 x limits.max_request_bytes (docs/config.md). */
static size_t sv_pb_budget(size_t len)
{
  return 4 * len + ((size_t)64 << 10);
}

static void sv_ctx_clear(sv_ctx *c)
{
  if (c->req != NULL)
    wave__v1__request__free_unpacked(c->req, &c->pb);
  c->req = NULL;
  free(c->spans);
  c->spans = NULL;
}

static void sv_send(sv_ctx *c, Wave__V1__Response *r)
{
  r->version = 1;
  r->id = c->req_id;
  size_t n = wave__v1__response__get_packed_size(r);
  nng_msg *m = NULL;
  Wave__V1__Error e = WAVE__V1__ERROR__INIT;
  Wave__V1__Response er = WAVE__V1__RESPONSE__INIT;
  int rv = nng_msg_alloc(&m, n);
  if (rv != 0) {
    /* no memory for this reply: try a small error, else let REQ resend */
    e.code = WAVE_ENOMEM;
    e.name = (char *)wave_errname(WAVE_ENOMEM);
    e.message = (char *)"no memory for the reply";
    er.version = 1;
    er.id = c->req_id;
    er.body_case = WAVE__V1__RESPONSE__BODY_ERROR;
    er.error = &e;
    n = wave__v1__response__get_packed_size(&er);
    if (nng_msg_alloc(&m, n) != 0) {
      wd_error("no memory for a reply; dropping request %" PRIu64, c->req_id);
      sv_ctx_clear(c);
      c->state = SC_RECV;
      nng_ctx_recv(c->ctx, c->aio);
      return;
    }
    r = &er;
  }
  wave__v1__response__pack(r, nng_msg_body(m));
  sv_ctx_clear(c);
  c->state = SC_SEND;
  nng_aio_set_msg(c->aio, m);
  nng_ctx_send(c->ctx, c->aio);
}

static void sv_error(sv_ctx *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void sv_error(sv_ctx *c, int code, const char *fmt, ...)
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
  sv_send(c, &r);
}

static void sv_job_error(sv_ctx *c, const wave_error *err)
{
  c->srv->failed++;
  sv_error(c, err->code, "%s", err->message);
}

/* ---- reductions ------------------------------------------------------------ */

static wd_device *sv_find_device(wd_server *s, const char *name)
{
  for (size_t i = 0; i < s->n_devs; i++)
    if (strcmp(wd_device_name(s->devs[i]), name) == 0)
      return s->devs[i];
  return NULL;
}

/* The least-loaded device that is not faulted (config order breaks ties). */
static wd_device *sv_pick_reduce(wd_server *s)
{
  wd_device *best = NULL;
  unsigned best_load = 0;
  for (size_t i = 0; i < s->n_devs; i++) {
    wd_device *d = s->devs[i];
    if (wd_device_faulted(d))
      continue;
    unsigned load = wd_device_load(d);
    if (best == NULL || load < best_load) {
      best = d;
      best_load = load;
    }
  }
  return best;
}

/* Chunks -> spans; 0, or a WAVE_E* code with err filled. */
static int sv_spans(const ProtobufCBinaryData *chunks, size_t n,
                    wv_span *out, const char *what, uint64_t *rows,
                    wave_error *err)
{
  for (size_t i = 0; i < n; i++) {
    if (chunks[i].len % 4 != 0)
      return wv_seterr(err, WAVE_ELENGTH,
                       "%s chunk %zu is %zu bytes, not a multiple of 4", what,
                       i, chunks[i].len);
    out[i].data = chunks[i].data;
    out[i].rows = chunks[i].len / 4;
    *rows += out[i].rows;
  }
  return 0;
}

static void sv_reduce(sv_ctx *c, const Wave__V1__ReduceRequest *r)
{
  wd_server *s = c->srv;
  wave_error err = {0};
  wave_dtype dt = (wave_dtype)r->dtype;
  wave_op op = (wave_op)r->op;
  switch (wave_op_check(dt, op)) {
  case 0:
    break;
  case WAVE_EDTYPE:
    wv_seterr(&err, WAVE_EDTYPE, "unknown dtype %d", (int)r->dtype);
    return sv_job_error(c, &err);
  case WAVE_EOP:
    wv_seterr(&err, WAVE_EOP, "unknown reduction op %d", (int)r->op);
    return sv_job_error(c, &err);
  default:
    wv_seterr(&err, WAVE_EOPDTYPE, "op %s is not defined for dtype %s",
              wave_op_name(op), wave_dtype_name(dt));
    return sv_job_error(c, &err);
  }
  c->spans = calloc(r->n_input + r->n_mask + 1, sizeof *c->spans);
  if (c->spans == NULL) {
    wv_seterr(&err, WAVE_ENOMEM, NULL);
    return sv_job_error(c, &err);
  }
  uint64_t rows = 0, mask_rows = 0;
  if (sv_spans(r->input, r->n_input, c->spans, "input", &rows, &err) ||
      sv_spans(r->mask, r->n_mask, c->spans + r->n_input, "mask", &mask_rows,
               &err))
    return sv_job_error(c, &err);
  if (rows > s->cfg->limits.max_job_rows) {
    wv_seterr(&err, WAVE_EJOBSIZE, "%" PRIu64 " rows; this daemon takes at "
              "most %" PRIu64 " (limits.max_job_rows)", rows,
              s->cfg->limits.max_job_rows);
    return sv_job_error(c, &err);
  }
  wd_work *w = &c->work;
  memset(w, 0, sizeof *w);
  w->kind = WD_WORK_REDUCE;
  w->owner = c;
  w->job = (wv_reduce_job){
    .dtype = dt,
    .op = op,
    .input = c->spans,
    .n_input = r->n_input,
    .mask = c->spans + r->n_input,
    .n_mask = r->n_mask,
    .has_mask = r->masked || r->n_mask > 0,
    .rows = rows,
  };
  int rc = wv_reduce_validate(&w->job, &err);
  if (rc != 0)
    return sv_job_error(c, &err);
  wd_device *d;
  if (r->device != NULL && r->device[0] != '\0') {
    if ((d = sv_find_device(s, r->device)) == NULL) {
      wv_seterr(&err, WAVE_ENODEV, "no device named '%s'", r->device);
      return sv_job_error(c, &err);
    }
  } else if ((d = sv_pick_reduce(s)) == NULL) {
    wv_seterr(&err, WAVE_EDEVFAULT, "every device is faulted");
    return sv_job_error(c, &err);
  }
  if ((rc = wd_device_submit(d, w, &err)) != 0)
    return sv_job_error(c, &err);
  s->reduce_inflight++;
}

static void sv_reduce_done(wd_server *s, wd_work *w)
{
  sv_ctx *c = w->owner;
  s->reduce_inflight--;
  wd_stats_job(WD_KIND_REDUCE, c->req_id, wd_device_name(w->dev), w->seconds,
               w->rc, w->job.rows, w->job.rows * 4);
  if (w->rc != 0)
    return sv_job_error(c, &w->err);
  const Wave__V1__ReduceRequest *rq = c->req->reduce;
  Wave__V1__ReduceResult rr = WAVE__V1__REDUCE_RESULT__INIT;
  rr.dtype = rq->dtype;
  rr.op = rq->op;
  rr.n_bits = w->out.n_values;
  rr.bits = w->out.bits;
  rr.count = w->out.count;
  rr.rows = w->job.rows;
  rr.device = (char *)wd_device_name(w->dev);
  rr.seconds = w->seconds;
  Wave__V1__Response r = WAVE__V1__RESPONSE__INIT;
  r.body_case = WAVE__V1__RESPONSE__BODY_REDUCE;
  r.reduce = &rr;
  s->served++;
  sv_send(c, &r);
}

/* ---- status and packs ---------------------------------------------------------- */

/* Pack k's self-check state on device d as a PackCheck; its strings point
 * into st, the pack and the device, which outlive the reply. */
static void sv_pack_check(Wave__V1__PackCheck *pc, wd_pack_state *st,
                          wd_device *d, size_t k, const wv_pack *pack)
{
  wd_device_pack_check(d, k, st);
  wave__v1__pack_check__init(pc);
  pc->pack = (char *)wv_pack_name(pack);
  pc->device = (char *)wd_device_name(d);
  pc->ok = st->state == WD_CHECK_OK;
  pc->state = (char *)wd_check_state_name(st->state);
  pc->detail = st->detail;
}

static void sv_status(sv_ctx *c)
{
  wd_server *s = c->srv;
  size_t nd = s->n_devs, np = s->packs->n;
  Wave__V1__DeviceStatus *ds = calloc(nd, sizeof *ds);
  Wave__V1__DeviceStatus **dp = calloc(nd, sizeof *dp);
  wd_device_snap *snap = calloc(nd, sizeof *snap);
  Wave__V1__PackCheck *pc = calloc(nd * np + 1, sizeof *pc);
  Wave__V1__PackCheck **pp = calloc(nd * np + 1, sizeof *pp);
  wd_pack_state *st = calloc(nd * np + 1, sizeof *st);
  if (!ds || !dp || !snap || !pc || !pp || !st) {
    sv_error(c, WAVE_ENOMEM, "no memory for the status reply");
    goto out;
  }
  for (size_t i = 0; i < nd; i++) {
    wd_device *d = s->devs[i];
    const wv_caps *caps = wd_device_caps(d);
    wd_device_snapshot(d, &snap[i]);
    wave__v1__device_status__init(&ds[i]);
    ds[i].name = (char *)wd_device_name(d);
    ds[i].backend = (char *)wd_device_cfg_of(d)->backend;
    ds[i].description = (char *)caps->description;
    ds[i].queue_depth = snap[i].queued;
    ds[i].queue_capacity = snap[i].capacity;
    ds[i].jobs_done = snap[i].done;
    ds[i].jobs_failed = snap[i].failed;
    ds[i].faulted = snap[i].faulted;
    ds[i].fault = snap[i].fault;
    ds[i].running = snap[i].running;
    ds[i].wave_width = caps->wave_width;
    ds[i].exchange = (char *)caps->exchange;
    ds[i].exchange_reason = (char *)caps->exchange_reason;
    ds[i].n_packs = np;
    ds[i].packs = pp + i * np;
    for (size_t k = 0; k < np; k++) {
      size_t x = i * np + k;
      sv_pack_check(&pc[x], &st[x], d, k, s->packs->list[k]);
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
  Wave__V1__Response r = WAVE__V1__RESPONSE__INIT;
  r.body_case = WAVE__V1__RESPONSE__BODY_STATUS;
  r.status = &sr;
  sv_send(c, &r);
out:
  free(ds);
  free(dp);
  free(snap);
  free(pc);
  free(pp);
  free(st);
}

static void sv_packs(sv_ctx *c)
{
  wd_server *s = c->srv;
  size_t nd = s->n_devs, np = s->packs->n;
  Wave__V1__PackInfo *pi = calloc(np + 1, sizeof *pi);
  Wave__V1__PackInfo **pip = calloc(np + 1, sizeof *pip);
  Wave__V1__PackCheck *pc = calloc(nd * np + 1, sizeof *pc);
  Wave__V1__PackCheck **pp = calloc(nd * np + 1, sizeof *pp);
  wd_pack_state *st = calloc(nd * np + 1, sizeof *st);
  if (!pi || !pip || !pc || !pp || !st) {
    sv_error(c, WAVE_ENOMEM, "no memory for the packs reply");
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
      sv_pack_check(&pc[x], &st[x], s->devs[i], k, p);
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
  sv_send(c, &r);
out:
  free(pi);
  free(pip);
  free(pc);
  free(pp);
  free(st);
}

/* ---- hash jobs ------------------------------------------------------------ */

static void sv_reply_job(sv_ctx *c, wd_hjob *j)
{
  Wave__V1__JobInfo ji;
  wd_jobinfo_scratch scratch;
  if (wd_hjob_info(j, &ji, &scratch) != 0)
    return sv_error(c, WAVE_ENOMEM, "no memory for the job reply");
  Wave__V1__Response r = WAVE__V1__RESPONSE__INIT;
  r.body_case = WAVE__V1__RESPONSE__BODY_JOB;
  r.job = &ji;
  sv_send(c, &r);
  wd_jobinfo_done(&scratch);
}

static void sv_unpark(sv_ctx *c)
{
  void **head = wd_hjob_waiters(c->waiting);
  for (sv_ctx **pp = (sv_ctx **)head; *pp != NULL; pp = &(*pp)->wait_next)
    if (*pp == c) {
      *pp = c->wait_next;
      break;
    }
  uv_timer_stop(&c->timer);
  c->wait_next = NULL;
  c->waiting = NULL;
}

static void sv_wait_timeout(uv_timer_t *t)
{
  sv_ctx *c = t->data;
  wd_hjob *j = c->waiting;
  sv_unpark(c);
  sv_reply_job(c, j);
}

/* A hash job ended: answer whoever waits for it. */
static void sv_job_ended(void *arg, wd_hjob *j)
{
  wd_server *s = arg;
  Wave__V1__JobInfo ji;
  wd_jobinfo_scratch scratch;
  if (wd_hjob_info(j, &ji, &scratch) == 0) {
    wd_stats_job(WD_KIND_HASH, ji.job_id, ji.device, ji.seconds,
                 ji.error != NULL ? (int)ji.error->code : 0, 0, 0);
    wd_jobinfo_done(&scratch);
  }
  void **head = wd_hjob_waiters(j);
  while (*head != NULL) {
    sv_ctx *c = *head;
    sv_unpark(c);
    sv_reply_job(c, j);
  }
  if (wd_hjob_state(j) == WAVE__V1__JOB_STATE__DONE)
    s->served++;
  else
    s->failed++;
}

static void sv_hash(sv_ctx *c, const Wave__V1__HashRequest *hr)
{
  wd_server *s = c->srv;
  wave_error err = {0};
  wd_hjob *j;
  if (wd_jobs_submit(s->jobs, hr, c->req_id, s->devs, s->n_devs, s->packs, &j,
                     &err) != 0)
    return sv_job_error(c, &err);
  sv_reply_job(c, j);
}

static void sv_job(sv_ctx *c, const Wave__V1__JobRequest *jr)
{
  wd_server *s = c->srv;
  wd_hjob *j = wd_jobs_find(s->jobs, jr->job_id);
  if (j == NULL)
    return sv_error(c, WAVE_ENOJOB, "no job %" PRIu64 " (finished jobs are "
                    "kept for %u s, at most %u of them)", jr->job_id,
                    s->cfg->limits.keep_seconds, s->cfg->limits.keep_jobs);
  unsigned wait = jr->wait_ms;
  if (wait > s->cfg->limits.max_wait_ms)
    wait = s->cfg->limits.max_wait_ms;
  if (wait == 0 || wd_hjob_is_ended(j) || s->stopping)
    return sv_reply_job(c, j);
  /* park: answered by sv_job_ended or by the timer, whichever comes first */
  void **head = wd_hjob_waiters(j);
  c->waiting = j;
  c->wait_next = *head;
  *head = c;
  uv_timer_start(&c->timer, sv_wait_timeout, wait, 0);
}

static void sv_cancel(sv_ctx *c, const Wave__V1__CancelRequest *cr)
{
  wd_server *s = c->srv;
  wd_hjob *j = wd_jobs_find(s->jobs, cr->job_id);
  if (j == NULL)
    return sv_error(c, WAVE_ENOJOB, "no job %" PRIu64, cr->job_id);
  if (wd_jobs_cancel(s->jobs, j, WAVE_ECANCELLED))
    sv_job_ended(s, j);
  sv_reply_job(c, j);
}

/* Every job the table holds, without outputs or segment pages. */
static void sv_jobs(sv_ctx *c)
{
  wd_server *s = c->srv;
  size_t n = 0;
  for (wd_hjob *j = wd_jobs_next(s->jobs, NULL); j; j = wd_jobs_next(s->jobs, j))
    n++;
  Wave__V1__JobInfo *ji = calloc(n + 1, sizeof *ji);
  Wave__V1__JobInfo **jp = calloc(n + 1, sizeof *jp);
  wd_jobinfo_scratch *sc = calloc(n + 1, sizeof *sc);
  size_t k = 0;
  if (ji == NULL || jp == NULL || sc == NULL) {
    sv_error(c, WAVE_ENOMEM, "no memory for the jobs reply");
    goto out;
  }
  for (wd_hjob *j = wd_jobs_next(s->jobs, NULL); j && k < n;
       j = wd_jobs_next(s->jobs, j)) {
    if (wd_hjob_info(j, &ji[k], &sc[k]) != 0) {
      sv_error(c, WAVE_ENOMEM, "no memory for the jobs reply");
      goto out;
    }
    if (ji[k].result != NULL) {
      ji[k].result->n_outputs = 0;
      ji[k].result->n_segments = 0;
    }
    jp[k] = &ji[k];
    k++;
  }
  Wave__V1__JobsReply jr = WAVE__V1__JOBS_REPLY__INIT;
  jr.n_jobs = k;
  jr.jobs = jp;
  Wave__V1__Response r = WAVE__V1__RESPONSE__INIT;
  r.body_case = WAVE__V1__RESPONSE__BODY_JOBS;
  r.jobs = &jr;
  sv_send(c, &r);
out:
  for (size_t i = 0; sc != NULL && i < k; i++)
    wd_jobinfo_done(&sc[i]);
  free(ji);
  free(jp);
  free(sc);
}

/* ---- dispatch ------------------------------------------------------------- */

static void sv_request(sv_ctx *c)
{
  wd_server *s = c->srv;
  nng_msg *m = c->msg;
  c->msg = NULL;
  c->req_id = 0;
  size_t len = nng_msg_len(m);
  if (len > s->cfg->limits.max_request_bytes) {
    nng_msg_free(m);
    s->failed++;
    return sv_error(c, WAVE_ETOOBIG, "request is %zu bytes; this daemon takes "
                    "at most %" PRIu64 " (limits.max_request_bytes)", len,
                    s->cfg->limits.max_request_bytes);
  }
  c->pb = (ProtobufCAllocator){.alloc = sv_pb_alloc, .free = sv_pb_free,
                               .allocator_data = c};
  c->pb_used = 0;
  c->pb_refused = 0;
  c->pb_budget = sv_pb_budget(len);
  c->req = wave__v1__request__unpack(&c->pb, len, nng_msg_body(m));
  nng_msg_free(m);
  if (c->req == NULL && c->pb_refused) {
    s->failed++;
    return sv_error(c, WAVE_ETOOBIG, "request of %zu bytes takes more than "
                    "%zu bytes to decode (too many chunks?)", len,
                    c->pb_budget);
  }
  if (c->req == NULL) {
    s->failed++;
    return sv_error(c, WAVE_EBADREQUEST, "%zu bytes that are not a "
                    "wave.v1.Request", len);
  }
  const Wave__V1__Request *rq = c->req;
  c->req_id = rq->id;
  if (rq->version != 1) {
    s->failed++;
    return sv_error(c, WAVE_EVERSION, "protocol version %u; this daemon "
                    "speaks version 1", rq->version);
  }
  int work = rq->body_case == WAVE__V1__REQUEST__BODY_REDUCE ||
             rq->body_case == WAVE__V1__REQUEST__BODY_HASH;
  if (work && s->stopping) {
    s->failed++;
    return sv_error(c, WAVE_ESHUTDOWN, "wavedd is shutting down");
  }
  switch (rq->body_case) {
  case WAVE__V1__REQUEST__BODY_REDUCE:
    return sv_reduce(c, rq->reduce);
  case WAVE__V1__REQUEST__BODY_STATUS:
    return sv_status(c);
  case WAVE__V1__REQUEST__BODY_HASH:
    return sv_hash(c, rq->hash);
  case WAVE__V1__REQUEST__BODY_JOB:
    return sv_job(c, rq->job);
  case WAVE__V1__REQUEST__BODY_CANCEL:
    return sv_cancel(c, rq->cancel);
  case WAVE__V1__REQUEST__BODY_PACKS:
    return sv_packs(c);
  case WAVE__V1__REQUEST__BODY_JOBS:
    return sv_jobs(c);
  default: {
    /* a body this daemon does not know arrives as an unknown field */
    unsigned tag = rq->base.n_unknown_fields ? rq->base.unknown_fields[0].tag
                                             : 0;
    s->failed++;
    if (tag)
      return sv_error(c, WAVE_EUNSUPPORTED, "request body field %u is not "
                      "known to wavedd %s", tag, WAVE_VERSION);
    return sv_error(c, WAVE_EUNSUPPORTED, "request has no body");
  }
  }
}

static void sv_wake_cb(uv_async_t *h)
{
  wd_server *s = h->data;
  pthread_mutex_lock(&s->mu);
  wd_work *done = s->done;
  sv_ctx *in = s->inbox;
  s->done = NULL;
  s->done_tail = &s->done;
  s->inbox = NULL;
  s->inbox_tail = &s->inbox;
  pthread_mutex_unlock(&s->mu);
  for (wd_work *w = done, *nx; w != NULL; w = nx) {
    nx = w->next;
    if (w->kind == WD_WORK_HASH)
      sv_job_ended(s, wd_jobs_ended(s->jobs, w));
    else if (!s->closed)
      sv_reduce_done(s, w);
    else  /* closed: the socket is gone, nobody to answer */
      sv_ctx_clear(w->owner);
  }
  for (sv_ctx *c = in, *nx; c != NULL; c = nx) {
    nx = c->next;
    if (s->closed) {  /* drained after close: nobody to answer */
      nng_msg_free(c->msg);
      c->msg = NULL;
      continue;
    }
    sv_request(c);
  }
  sv_maybe_finish(s);
}

/* ---- stop ----------------------------------------------------------------- */

static void sv_tick(uv_timer_t *t)
{
  wd_server *s = t->data;
  if (s->finishing) {
    wd_server_close(s);
    return;
  }
  wd_jobs_prune(s->jobs);
}

static void sv_maybe_finish(wd_server *s)
{
  if (!s->stopping || s->finishing || s->reduce_inflight > 0 ||
      wd_jobs_active(s->jobs) > 0)
    return;
  s->finishing = 1;
  wd_info("in-flight work done; closing");
  /* the last replies are queued on their pipes; give them time to leave
   * (nng 1.5 has no linger) */
  uv_timer_start(&s->tick, sv_tick, SV_LINGER_MS, 0);
}

void wd_server_stop(wd_server *s)
{
  if (s->stopping) {
    wd_info("already stopping: %u reductions, %zu hash jobs in flight",
            s->reduce_inflight, wd_jobs_active(s->jobs));
    return;
  }
  s->stopping = 1;
  wd_notify("STOPPING=1");
  wd_info("stopping: no new work; finishing %u reductions, cancelling %zu "
          "hash jobs", s->reduce_inflight, wd_jobs_active(s->jobs));
  wd_jobs_cancel_all(s->jobs, WAVE_ESHUTDOWN, sv_job_ended, s);
  for (size_t i = 0; i < s->n_ctxs; i++)
    if (s->ctxs[i].waiting != NULL) {
      sv_ctx *c = &s->ctxs[i];
      wd_hjob *j = c->waiting;
      sv_unpark(c);
      sv_reply_job(c, j);
    }
  sv_maybe_finish(s);
}

static void sv_signal(uv_signal_t *h, int signum)
{
  wd_server *s = h->data;
  wd_info("%s received", signum == SIGINT ? "SIGINT" : "SIGTERM");
  wd_server_stop(s);
}

static void sv_noop_close(uv_handle_t *h) { (void)h; }

void wd_server_close(wd_server *s)
{
  if (s->closed)
    return;
  s->closed = 1;
  atomic_store(&s->closing, 1);
  wd_listeners_close(s->lst);  /* no more listener restarts */
  /* nng first: after nng_aio_stop no callback runs for that context */
  for (size_t i = 0; i < s->n_ctxs; i++)
    if (s->ctxs[i].aio != NULL)
      nng_aio_stop(s->ctxs[i].aio);
  for (size_t i = 0; i < s->n_ctxs; i++)
    nng_ctx_close(s->ctxs[i].ctx);
  if (s->sock_open)
    nng_close(s->sock);
  s->sock_open = 0;
  for (size_t i = 0; i < s->n_ctxs; i++) {
    sv_ctx *c = &s->ctxs[i];
    if (c->aio != NULL)
      nng_aio_free(c->aio);
    c->aio = NULL;
  }
  /* then the devices: whatever they still hold comes back through post */
  for (size_t i = 0; i < s->n_devs; i++)
    wd_device_stop(s->devs[i]);
  if (s->handles) {
    sv_wake_cb(&s->wake);  /* drain: frees what arrived meanwhile */
    uv_close((uv_handle_t *)&s->wake, sv_noop_close);
    uv_close((uv_handle_t *)&s->sigint, sv_noop_close);
    uv_close((uv_handle_t *)&s->sigterm, sv_noop_close);
    uv_close((uv_handle_t *)&s->tick, sv_noop_close);
    for (size_t i = 0; i < s->n_ctxs; i++)
      uv_close((uv_handle_t *)&s->ctxs[i].timer, sv_noop_close);
  }
  wd_info("closed");
}

/* ---- start ---------------------------------------------------------------- */

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
  s->inbox_tail = &s->inbox;
  s->done_tail = &s->done;
  pthread_mutex_init(&s->mu, NULL);
  *out = s;
  int rc;
  if ((rc = wd_jobs_new(&cfg->limits, &s->jobs)) != 0)
    return wv_seterr(err, rc, NULL);
  uv_async_init(loop, &s->wake, sv_wake_cb);
  uv_signal_init(loop, &s->sigint);
  uv_signal_init(loop, &s->sigterm);
  uv_timer_init(loop, &s->tick);
  s->wake.data = s->sigint.data = s->sigterm.data = s->tick.data = s;
  s->handles = 1;
  uv_signal_start(&s->sigint, sv_signal, SIGINT);
  uv_signal_start(&s->sigterm, sv_signal, SIGTERM);
  uv_timer_start(&s->tick, sv_tick, SV_TICK_MS, SV_TICK_MS);

  if ((s->devs = calloc(cfg->n_devices, sizeof *s->devs)) == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  for (size_t i = 0; i < cfg->n_devices; i++) {
    rc = wd_device_start(&cfg->devices[i], cfg->limits.jobs_in_flight,
                         packs->list, packs->n, sv_post, s, &s->devs[i], err);
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
  return 0;
}

int wd_server_listen(wd_server *s, wave_error *err)
{
  const wd_limits *lim = &s->cfg->limits;
  size_t cap = lim->max_request_bytes +
               (lim->max_request_bytes > (1u << 20) ? lim->max_request_bytes
                                                    : (1u << 20));
  /* nng starts its threads here: they inherit a mask with every signal
   * blocked, so signals reach the loop's thread */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = 0, rv;
  if ((rv = nng_rep0_open(&s->sock)) != 0) {
    rc = wv_seterr(err, WAVE_EIO, "nng rep0 socket: %s", nng_strerror(rv));
    goto out;
  }
  s->sock_open = 1;
  nng_socket_set_size(s->sock, NNG_OPT_RECVMAXSZ, cap);
  s->n_ctxs = lim->contexts;
  s->ctxs = calloc(s->n_ctxs, sizeof *s->ctxs);
  if (s->ctxs == NULL) {
    s->n_ctxs = 0;
    rc = wv_seterr(err, WAVE_ENOMEM, NULL);
    goto out;
  }
  for (size_t i = 0; i < s->n_ctxs; i++) {
    sv_ctx *c = &s->ctxs[i];
    c->srv = s;
    uv_timer_init(s->loop, &c->timer);  /* all of them: close closes all */
    c->timer.data = c;
  }
  for (size_t i = 0; i < s->n_ctxs; i++) {
    sv_ctx *c = &s->ctxs[i];
    if ((rv = nng_aio_alloc(&c->aio, sv_aio_cb, c)) != 0 ||
        (rv = nng_ctx_open(&c->ctx, s->sock)) != 0) {
      rc = wv_seterr(err, WAVE_EIO, "nng context: %s", nng_strerror(rv));
      goto out;
    }
  }
  if ((rc = wd_listeners_start(s->loop, s->sock, s->cfg, cap, &s->lst,
                               err)) != 0)
    goto out;
  for (size_t i = 0; i < s->n_ctxs; i++) {
    s->ctxs[i].state = SC_RECV;
    nng_ctx_recv(s->ctxs[i].ctx, s->ctxs[i].aio);
  }
out:
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return rc;
}

void wd_server_free(wd_server *s)
{
  if (s == NULL)
    return;
  wd_server_close(s);
  for (size_t i = 0; i < s->n_devs; i++)
    wd_device_free(s->devs[i]);
  free(s->devs);
  for (size_t i = 0; i < s->n_ctxs; i++)
    sv_ctx_clear(&s->ctxs[i]);
  free(s->ctxs);
  wd_listeners_free(s->lst);
  wd_jobs_free(s->jobs);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

/* ---- for metrics.c and reload.c (loop thread) ----------------------------- */

wd_device *const *wd_server_devices(const wd_server *s, size_t *n)
{
  *n = s->n_devs;
  return s->devs;
}

const wd_packs *wd_server_packs(const wd_server *s) { return s->packs; }

const wd_config *wd_server_config(const wd_server *s) { return s->cfg; }

void wd_server_reconfigure(wd_server *s, const wd_config *cfg)
{
  const wd_limits *lim = &cfg->limits;
  size_t cap = lim->max_request_bytes +
               (lim->max_request_bytes > (1u << 20) ? lim->max_request_bytes
                                                    : (1u << 20));
  s->cfg = cfg;
  wd_jobs_set_limits(s->jobs, lim);
  if (s->sock_open)
    nng_socket_set_size(s->sock, NNG_OPT_RECVMAXSZ, cap);
  wd_listeners_set_cap(s->lst, cap);
}
