/* dispatch.c - a received request on the loop thread: decode (within a
 * memory budget), check the version, route to its handler, and the
 * handlers themselves (reductions, status, packs, hash jobs, polls,
 * cancels).  Replies are built by reply.c.
 *
 * Versions: this daemon speaks protocol 2.  A version-1 request is served
 * as before, except a version-1 hash submit: protocol 2 changed what a hash
 * job's fingerprint is (segment fingerprints), so it is answered VERSION
 * rather than with a result the client would misread.
 *
 * Reduction input is used in place: the spans point into the unpacked
 * request, which lives until the reply is packed.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/net/auth.h"
#include "daemon/log.h"
#include "daemon/stats.h"
#include "daemon/exec/pick.h"
#include "daemon/server_int.h"
#include "core/base.h"
#include "proto/frame.h"
#include "core/reduce.h"
#include "workers/wvdev.h"

/* protobuf-c allocates while it decodes, and a request of many tiny chunks
 * decodes to many times its wire size (2 wire bytes per empty chunk, 16 in
 * the decoded array).  While it scans a message it also holds 32 bytes per
 * field, in slabs that double (so up to 64), and frees them before it
 * returns.  Each context decodes through this allocator, which counts the
 * bytes live now (a header holds each block's size) and refuses to go past
 * pb_budget of them; what stays once decoded is checked against
 * dp_pb_kept. */
#define DP_PB_HDR 16  /* keeps malloc's alignment */

static void *dp_pb_alloc(void *data, size_t size)
{
  wd_req *c = data;
  if (size > c->pb_budget - c->pb_used) {
    c->pb_refused = 1;
    return NULL;
  }
  unsigned char *p = malloc(DP_PB_HDR + size);
  if (p == NULL)
    return NULL;
  memcpy(p, &size, sizeof size);
  c->pb_used += size;
  return p + DP_PB_HDR;
}

static void dp_pb_free(void *data, void *ptr)
{
  wd_req *c = data;
  if (ptr == NULL)
    return;
  unsigned char *p = (unsigned char *)ptr - DP_PB_HDR;
  size_t size;
  memcpy(&size, p, sizeof size);
  c->pb_used -= size;
  free(p);
}

/* A request of one-row chunks decodes to about 3.3 times its wire size,
 * empty chunks to 8 times; keeping 4 times plus room for the envelope
 * admits the first and refuses the second (docs/config.md).  While
 * decoding, the scan slabs come on top: one-row chunks peak below 15
 * times, so the budget of live bytes is 16 times (empty chunks reach it:
 * refused before they take more). */
static size_t dp_pb_kept(size_t len)
{
  return 4 * len + ((size_t)64 << 10);
}

static size_t dp_pb_budget(size_t len)
{
  return 16 * len + ((size_t)64 << 10);
}

void wd_req_clear(wd_req *c)
{
  if (c->req != NULL)
    wave__v1__request__free_unpacked(c->req, &c->pb);
  c->req = NULL;
  free(c->spans);
  c->spans = NULL;
  wd_bulk_clear(&c->bulk);
  c->dec_code = 0;
}

static void dp_fail(wd_req *c, const wave_error *err)
{
  c->srv->failed++;
  wd_reply_error(c, err->code, "%s", err->message);
}

/* ---- reductions ------------------------------------------------------------ */

static int dp_spans(const ProtobufCBinaryData *chunks, size_t n, wv_span *out,
                    const char *what, uint64_t *rows, wave_error *err)
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

static int dp_reduce_run(wd_work *w, wd_device *d)
{
  wd_req *c = (wd_req *)((char *)w - offsetof(wd_req, work));
  int fsome = 0;  /* a file job says it itself (its rows are not here) */
  if (c->bulk.files)  /* read as reduced: daemon/filered.h */
    w->rc = wd_file_reduce(wd_device_backend(d), wd_device_bdev(d), &c->job,
                           c->bulk.src,
                           c->srv->cfg->limits.region_read_timeout_ms,
                           &c->out, &fsome, &w->err);
  else
    w->rc = wv_dev_reduce(wd_device_backend(d), wd_device_bdev(d), &c->job,
                          &c->out, &w->err);
  c->finite = WAVE__V1__FINITE_ROWS__FINITE_UNSPECIFIED;
  if (w->rc == 0 && c->job.dtype == WAVE_F32 && c->job.op != WAVE_SUM) {
    /* Only an answer of all +0.0 with rows selected leaves it open; then
     * one pass here, on the device thread, that stops at the first
     * selected finite row. */
    int some = c->bulk.files ? fsome :
               c->out.count > 0 &&
               (c->out.bits[0] != 0 ||
                (c->out.n_values > 1 && c->out.bits[1] != 0) ||
                wv_reduce_any_finite(&c->job));
    c->finite = some ? WAVE__V1__FINITE_ROWS__FINITE_SOME
                     : WAVE__V1__FINITE_ROWS__FINITE_NONE;
  }
  return WD_RUN_END;
}

static void dp_reduce_done(wd_work *w)
{
  wd_req *c = (wd_req *)((char *)w - offsetof(wd_req, work));
  wd_server *s = c->srv;
  s->reduce_inflight--;
  wd_stats_job(WD_KIND_REDUCE, c->req_id, w->dev ? wd_device_name(w->dev) : NULL,
               w->seconds, w->rc, c->job.rows, c->job.rows * 4);
  if (s->closed) {  /* the socket is gone, nobody to answer */
    wd_req_clear(c);
    return;
  }
  if (w->rc != 0)
    return dp_fail(c, &w->err);
  s->served++;
  wd_reply_reduce(c);
}

static const wd_work_ops dp_reduce_ops = {
  .name = "reduction",
  .lane = WD_LANE_SHORT,
  .run = dp_reduce_run,
  .done = dp_reduce_done,
};

/* 0, or the dtype/op error answered. */
static int dp_check_op(wd_req *c, wave_dtype dt, wave_op op)
{
  wave_error err = {0};
  switch (wave_op_check(dt, op)) {
  case 0:
    return 0;
  case WAVE_EDTYPE:
    wv_seterr(&err, WAVE_EDTYPE, "unknown dtype %d", (int)dt);
    break;
  case WAVE_EOP:
    wv_seterr(&err, WAVE_EOP, "unknown reduction op %d", (int)op);
    break;
  default:
    wv_seterr(&err, WAVE_EOPDTYPE, "op %s is not defined for dtype %s",
              wave_op_name(op), wave_dtype_name(dt));
    break;
  }
  dp_fail(c, &err);
  return -1;
}

static void dp_reduce_spans(wd_req *c, wave_dtype dt, wave_op op,
                            const wv_span *spans, size_t n_input,
                            size_t n_mask, int has_mask, const char *device);

static void dp_reduce(wd_req *c, const Wave__V1__ReduceRequest *r)
{
  wave_error err = {0};
  wave_dtype dt = (wave_dtype)r->dtype;
  wave_op op = (wave_op)r->op;
  if (dp_check_op(c, dt, op) != 0)
    return;
  if (c->bulk.ready)  /* chunks by place: spans made on the decode thread */
    return dp_reduce_spans(c, dt, op, c->bulk.spans, c->bulk.n_input,
                           c->bulk.n_mask, c->bulk.has_mask, c->bulk.device);
  c->spans = calloc(r->n_input + r->n_mask + 1, sizeof *c->spans);
  if (c->spans == NULL) {
    wv_seterr(&err, WAVE_ENOMEM, NULL);
    return dp_fail(c, &err);
  }
  uint64_t rows = 0, mask_rows = 0;
  if (dp_spans(r->input, r->n_input, c->spans, "input", &rows, &err) ||
      dp_spans(r->mask, r->n_mask, c->spans + r->n_input, "mask", &mask_rows,
               &err))
    return dp_fail(c, &err);
  dp_reduce_spans(c, dt, op, c->spans, r->n_input, r->n_mask,
                  r->masked || r->n_mask > 0, r->device);
}

/* A reduction whose spans are ready (c->spans or c->bulk.spans): size,
 * validation, device, queue. */
static void dp_reduce_spans(wd_req *c, wave_dtype dt, wave_op op,
                            const wv_span *spans, size_t n_input,
                            size_t n_mask, int has_mask, const char *device)
{
  wd_server *s = c->srv;
  wave_error err = {0};
  uint64_t rows = 0;
  for (size_t i = 0; i < n_input; i++)
    rows += spans[i].rows;
  /* the limit is on rows held in the daemon's memory: a mapped or file
   * region's rows are the client's (docs/config.md "limits") */
  uint64_t held = spans == c->bulk.spans ? c->bulk.mem_rows : rows;
  if (held > s->cfg->limits.max_job_rows) {
    wv_seterr(&err, WAVE_EJOBSIZE, "%" PRIu64 " rows in the daemon's memory; "
              "this daemon takes at most %" PRIu64 " (limits.max_job_rows)",
              held, s->cfg->limits.max_job_rows);
    return dp_fail(c, &err);
  }
  memset(&c->work, 0, sizeof c->work);
  memset(&c->out, 0, sizeof c->out);
  c->work.ops = &dp_reduce_ops;
  c->work.owner = wd_peer_key(c->principal);  /* clients take turns */
  c->job = (wv_reduce_job){
    .dtype = dt,
    .op = op,
    .input = spans,
    .n_input = n_input,
    .mask = spans + n_input,
    .n_mask = n_mask,
    .has_mask = has_mask,
    .rows = rows,
  };
  int rc = c->bulk.files && spans == c->bulk.spans
               ? wd_file_validate(&c->job, &err)  /* rows not here */
               : wv_reduce_validate(&c->job, &err);
  if (rc != 0)
    return dp_fail(c, &err);
  wd_device *d;
  size_t n;
  wd_pick_req prq = {.kind = WD_PICK_REDUCE, .device = device};
  if ((rc = wd_pick(s->devs, s->n_devs, &prq, &d, &n, &err)) != 0)
    return dp_fail(c, &err);
  if ((rc = wd_device_submit(d, &c->work, &err)) != 0)
    return dp_fail(c, &err);
  s->reduce_inflight++;
}

/* ---- pinning and unpinning regions --------------------------------------- */

/* A region's business on the device of one slot (a pin or an unpin). */
typedef struct dp_region_work {
  wd_work work;
  wd_region *r;
  unsigned slot;
} dp_region_work;

/* A region registered: each device that can pin it gets a setup item that
 * pins one piece per step (daemon/region.h), so the short lane's jobs run
 * between pieces.  The item holds a reference to the region until done. */
static int dp_pin_run(wd_work *w, wd_device *d)
{
  dp_region_work *p = (dp_region_work *)w;
  int more = wd_region_pin_step(p->r, p->slot, wd_device_backend(d),
                                wd_device_bdev(d));
  return more ? WD_RUN_MORE : WD_RUN_END;
}

static void dp_pin_abort(wd_work *w, wd_device *d)
{
  (void)w;
  (void)d;  /* faulted or stopping: the region stays as pinned as it is */
}

static void dp_pin_done(wd_work *w)
{
  dp_region_work *p = (dp_region_work *)w;
  wd_region_put(p->r);
  free(p);
}

static const wd_work_ops dp_pin_ops = {
  .name = "region pin",
  .lane = WD_LANE_SETUP,
  .run = dp_pin_run,
  .abort = dp_pin_abort,
  .done = dp_pin_done,
};

static void dp_pin_start(wd_server *s, wd_region *r)
{
  for (size_t i = 0; i < s->n_devs && i < WD_REGION_SLOTS; i++) {
    if (!wv_dev_can_pin(wd_device_backend(s->devs[i])))
      continue;
    dp_region_work *p = calloc(1, sizeof *p);
    wave_error err;
    if (p == NULL)
      return;  /* only slower: the region is staged */
    p->work.ops = &dp_pin_ops;
    p->r = r;
    p->slot = (unsigned)i;
    wd_region_ref(r);
    if (wd_device_submit(s->devs[i], &p->work, &err) != 0) {
      wd_region_put(r);
      free(p);
    }
  }
}

/* A region pinned on device slot is released: that device's thread unpins
 * it (a short item), then the region is unmapped.  A device that cannot
 * take the item (faulted, queue full) leaves the pin to its context's end:
 * the region's bookkeeping is dropped and it is unmapped now. */
static int dp_unpin_run(wd_work *w, wd_device *d)
{
  dp_region_work *u = (dp_region_work *)w;
  wd_region_unpin(u->r, u->slot, wd_device_backend(d), wd_device_bdev(d));
  u->r = NULL;
  return WD_RUN_END;
}

static void dp_unpin_done(wd_work *w)
{
  dp_region_work *u = (dp_region_work *)w;
  if (u->r != NULL)  /* ended without running (faulted device) */
    wd_region_unpin(u->r, u->slot, NULL, NULL);
  free(u);
}

static const wd_work_ops dp_unpin_ops = {
  .name = "region unpin",
  .lane = WD_LANE_SHORT,
  .run = dp_unpin_run,
  .done = dp_unpin_done,
};

void wd_unpin(void *arg, wd_region *r, unsigned slot)
{
  wd_server *s = arg;
  dp_region_work *u = calloc(1, sizeof *u);
  wave_error err;
  if (u != NULL && slot < s->n_devs) {
    u->work.ops = &dp_unpin_ops;
    u->r = r;
    u->slot = slot;
    if (wd_device_submit(s->devs[slot], &u->work, &err) == 0)
      return;
  }
  free(u);
  wd_region_unpin(r, slot, NULL, NULL);
}

/* ---- hash jobs ------------------------------------------------------------ */

/* The JobInfo of j.  An answer to a poll (JobRequest) that carries a DONE
 * job's outputs delivers them: they are dropped (docs/protocol.md "Job
 * results"); a submit's or cancel's answer keeps them for the poll. */
static void dp_answer_job(wd_req *c, wd_hjob *j, uint64_t seg_offset,
                          uint32_t seg_limit, int poll)
{
  wd_job_view v;
  wd_hjob_view(j, seg_offset, seg_limit, &v);
  wd_reply_job(c, &v);
  if (poll && v.state == WD_JOB_DONE && v.n_outputs > 0)
    wd_hjob_outputs_sent(j);  /* packed into the reply */
}

static void dp_reply_job(wd_req *c, wd_hjob *j, uint64_t seg_offset,
                         uint32_t seg_limit)
{
  dp_answer_job(c, j, seg_offset, seg_limit, 1);
}

void wd_pipes_gone(wd_server *s)
{
  uint32_t *ids;
  size_t n;
  wd_gone_take(&s->gone, &ids, &n);
  for (size_t i = 0; i < n && !s->closed; i++)
    wd_jobs_drop_pipe(s->jobs, ids[i]);
  free(ids);
}

void wd_unpark(wd_req *c)
{
  void **head = wd_hjob_waiters(c->waiting);
  for (wd_req **pp = (wd_req **)head; *pp != NULL; pp = &(*pp)->wait_next)
    if (*pp == c) {
      *pp = c->wait_next;
      break;
    }
  uv_timer_stop(&c->timer);
  c->wait_next = NULL;
  c->waiting = NULL;
  c->srv->n_parked--;
  wd_peers_unpark(c->srv->peers, c->pipe);
}

static void dp_wait_timeout(uv_timer_t *t)
{
  wd_req *c = t->data;
  wd_hjob *j = c->waiting;
  wd_unpark(c);
  dp_reply_job(c, j, c->seg_offset, c->seg_limit);
}

void wd_job_ended(void *arg, wd_hjob *j)
{
  wd_server *s = arg;
  wd_job_view v;
  wd_hjob_view(j, 0, 0, &v);
  wd_stats_job(WD_KIND_HASH, v.id, v.device, v.seconds, v.rc, 0, 0);
  void **head = wd_hjob_waiters(j);
  while (*head != NULL) {
    wd_req *c = *head;
    wd_unpark(c);
    dp_reply_job(c, j, c->seg_offset, c->seg_limit);
  }
  if (wd_hjob_state(j) == WD_JOB_DONE)
    s->served++;
  else
    s->failed++;
}

void wd_answer_parked(wd_server *s)
{
  for (wd_req *c = s->reqs; c != NULL; c = c->all_next)
    if (c->waiting != NULL) {
      wd_hjob *j = c->waiting;
      wd_unpark(c);
      dp_reply_job(c, j, c->seg_offset, c->seg_limit);
    }
}

static void dp_hash(wd_req *c, const Wave__V1__HashRequest *hr)
{
  wd_server *s = c->srv;
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
  if (!hs.detach && wd_gone_recent(&s->gone, c->pipe)) {
    s->failed++;  /* nobody to answer; nobody to run it for */
    return wd_reply_error(c, WAVE_ECANCELLED, "the connection closed before "
                          "the job was queued");
  }
  wd_jobs_prune(s->jobs);  /* room for this one's result */
  wd_hjob *j;
  if (wd_jobs_submit(s->jobs, &hs, s->devs, s->n_devs, s->packs, &j,
                     &err) != 0)
    return dp_fail(c, &err);
  /* the one reply that carries the job key: the submitter's */
  wd_job_view v;
  wd_hjob_view(j, 0, 0, &v);
  v.key = wd_hjob_key(j);
  v.key_len = v.key != NULL ? WD_JOB_KEY_BYTES : 0;
  wd_reply_job(c, &v);
}

static wd_hjob *dp_find_job(wd_req *c, uint64_t id, uint64_t instance,
                            ProtobufCBinaryData key)
{
  wd_server *s = c->srv;
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

static void dp_job(wd_req *c, const Wave__V1__JobRequest *jr)
{
  wd_server *s = c->srv;
  wd_hjob *j = dp_find_job(c, jr->job_id, jr->instance, jr->key);
  if (j == NULL)
    return;
  unsigned wait = jr->wait_ms;
  if (wait > s->cfg->limits.max_wait_ms)
    wait = s->cfg->limits.max_wait_ms;
  if (wait == 0 || wd_hjob_is_ended(j) || s->stopping ||
      s->n_parked >= s->cfg->limits.max_parked ||
      wd_peers_park(s->peers, c->pipe, s->cfg->limits.max_peer_parked) != 0)
    return dp_reply_job(c, j, jr->segment_offset, jr->segment_limit);
  /* park: answered by wd_job_ended or by the timer, whichever comes first;
   * a fresh context takes this one's place in the receive pool */
  wave_error err = {0};
  if (wd_front_add(s, &err) != 0) {
    wd_peers_unpark(s->peers, c->pipe);
    wd_warn("cannot open a context for a parked poll: %s", err.message);
    return dp_reply_job(c, j, jr->segment_offset, jr->segment_limit);
  }
  void **head = wd_hjob_waiters(j);
  c->waiting = j;
  c->seg_offset = jr->segment_offset;
  c->seg_limit = jr->segment_limit;
  c->wait_next = *head;
  *head = c;
  s->n_parked++;
  uv_timer_start(&c->timer, dp_wait_timeout, wait, 0);
}

static void dp_cancel(wd_req *c, const Wave__V1__CancelRequest *cr)
{
  wd_server *s = c->srv;
  wd_hjob *j = dp_find_job(c, cr->job_id, cr->instance, cr->key);
  if (j == NULL)
    return;
  wd_jobs_cancel(s->jobs, j, WAVE_ECANCELLED);
  dp_answer_job(c, j, 0, 0, 0);
}

/* ---- dispatch ------------------------------------------------------------- */

/* JobsRequest: every job of the table the requester may see, and the one
 * its key opens (the key itself is never listed: wd_hjob_view leaves it
 * out). */
static void dp_jobs(wd_req *c, const Wave__V1__JobsRequest *jq)
{
  wd_server *s = c->srv;
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
  wd_reply_jobs(c, v, k);
  free(v);
}

/* The raw value of Request.version (field 1, a varint), as sent: protobuf-c
 * keeps the low 32 bits of a uint32, so version 2^32 + 1 would read as 1.
 * The last occurrence counts, as in protobuf; 0 when absent or when the
 * bytes are not a message (protobuf-c then says so). */
static uint64_t dp_raw_version(const uint8_t *p, size_t len)
{
  uint64_t version = 0;
  size_t i = 0;
  while (i < len) {
    uint64_t key = 0, v = 0;
    for (unsigned sh = 0;; sh += 7) {  /* the tag */
      if (i >= len || sh > 63)
        return version;
      key |= (uint64_t)(p[i] & 0x7f) << sh;
      if (!(p[i++] & 0x80))
        break;
    }
    switch (key & 7) {
    case 0:  /* varint */
      for (unsigned sh = 0;; sh += 7) {
        if (i >= len || sh > 63)
          return version;
        v |= (uint64_t)(p[i] & 0x7f) << sh;
        if (!(p[i++] & 0x80))
          break;
      }
      if (key >> 3 == 1)
        version = v;
      break;
    case 1: i += 8; break;
    case 5: i += 4; break;
    case 2:
      for (unsigned sh = 0;; sh += 7) {
        if (i >= len || sh > 63)
          return version;
        v |= (uint64_t)(p[i] & 0x7f) << sh;
        if (!(p[i++] & 0x80))
          break;
      }
      if (v > len - i)
        return version;
      i += (size_t)v;
      break;
    default:
      return version;
    }
  }
  return version;
}

/* Decode thread: unpack c->msg into c->req (or set dec_code), and handle
 * the request's bulk parts (daemon/bulk.h).  Touches only c and what is
 * constant or locked (cfg, the bulk tables). */
static void dp_decode(wd_req *c)
{
  wd_server *s = c->srv;
  nng_msg *m = c->msg;
  c->msg = NULL;
  uint32_t pipe;  /* c->pipe, which front.c has set from the same message */
  wd_peer_identify(m, &pipe, c->principal, sizeof c->principal);
  c->req_id = 0;
  c->version = 0;
  c->dec_code = 0;
  size_t len = nng_msg_len(m);
  if (len > s->cfg->limits.max_request_bytes) {
    nng_msg_free(m);
    c->dec_code = WAVE_ETOOBIG;
    snprintf(c->dec_msg, sizeof c->dec_msg, "request is %zu bytes; this "
             "daemon takes at most %" PRIu64 " (limits.max_request_bytes; "
             "larger jobs: streams or regions)", len,
             s->cfg->limits.max_request_bytes);
    return;
  }
  const uint8_t *body = nng_msg_body(m), *hdr = body, *payload = NULL;
  size_t hlen = len, plen = 0;
  int framed = wv_frame_split(body, len, &hdr, &hlen, &payload, &plen);
  if (framed < 0) {
    nng_msg_free(m);
    c->dec_code = WAVE_EBADREQUEST;
    snprintf(c->dec_msg, sizeof c->dec_msg, "framed request of %zu bytes "
             "whose header length runs past its end", len);
    return;
  }
  c->pb = (ProtobufCAllocator){.alloc = dp_pb_alloc, .free = dp_pb_free,
                               .allocator_data = c};
  c->pb_used = 0;
  c->pb_refused = 0;
  c->pb_budget = dp_pb_budget(hlen);
  c->req = wave__v1__request__unpack(&c->pb, hlen, hdr);
  if (c->req != NULL && c->pb_used > dp_pb_kept(hlen)) {
    wave__v1__request__free_unpacked(c->req, &c->pb);
    c->req = NULL;
    c->pb_refused = 1;
  }
  if (c->req == NULL) {
    nng_msg_free(m);
    c->dec_code = c->pb_refused ? WAVE_ETOOBIG : WAVE_EBADREQUEST;
    if (c->pb_refused)
      snprintf(c->dec_msg, sizeof c->dec_msg, "request of %zu bytes takes "
               "more than %zu bytes to decode (too many chunks?)", len,
               dp_pb_kept(hlen));
    else
      snprintf(c->dec_msg, sizeof c->dec_msg, "%zu bytes that are not a "
               "wave.v1.Request", len);
    return;
  }
  c->req_id = c->req->id;
  uint64_t raw = dp_raw_version(hdr, hlen);
  if (raw > UINT32_MAX) {  /* not version raw & 0xffffffff */
    nng_msg_free(m);
    wave__v1__request__free_unpacked(c->req, &c->pb);
    c->req = NULL;
    c->dec_code = WAVE_EVERSION;
    snprintf(c->dec_msg, sizeof c->dec_msg, "protocol version %" PRIu64
             "; this daemon speaks version %u (and version 1 without hash "
             "submits)", raw, WD_PROTOCOL);
    return;
  }
  /* tcp needs a token (auth.c): without one nothing else is looked at;
   * with one, "token:NAME" replaces the principal "pipe:N" */
  if ((c->dec_code = wd_auth_request(s->cfg, nng_msg_get_pipe(m),
                                     c->req->token, c->principal,
                                     sizeof c->principal, c->dec_msg,
                                     sizeof c->dec_msg)) != 0) {
    nng_msg_free(m);
    return;
  }
  if (c->req->version != 1 && c->req->version != WD_PROTOCOL) {
    nng_msg_free(m);  /* the loop answers VERSION */
    return;
  }
  /* a framed payload stays in the received message, used in place; a
   * stream may keep the message as its piece (m set to NULL) */
  if (wd_bulk_decode(s->bulk, c->req, c->principal, &m,
                     framed ? payload : NULL, plen, &c->bulk) &&
      c->bulk.ready && framed)
    c->bulk.keep = m;
  else if (m != NULL)
    nng_msg_free(m);
}

void wd_decode_cb(wd_pool_item *it)
{
  wd_req *c = (wd_req *)((char *)it - offsetof(wd_req, item));
  wd_server *s = c->srv;
  if (!atomic_load(&s->closing))
    dp_decode(c);
  wd_front_inbox(s, c);
}

/* Loop thread: a decoded request. */
void wd_dispatch(wd_req *c)
{
  wd_server *s = c->srv;
  if (c->dec_code != 0) {
    s->failed++;
    return wd_reply_error(c, c->dec_code, "%s", c->dec_msg);
  }
  if (c->req == NULL) {  /* decoded while closing: nobody to answer */
    wd_req_clear(c);
    return wd_front_recv(c);
  }
  if (c->bulk.reply != NULL) {  /* answered on the decode thread */
    nng_msg *m = c->bulk.reply;
    wd_region *pin = c->bulk.pin;
    c->bulk.reply = NULL;
    c->bulk.pin = NULL;
    if (c->bulk.failed)
      s->failed++;
    wd_req_clear(c);
    wd_front_send(c, m);
    if (pin != NULL) {  /* a registration: its answer first, then the pins */
      dp_pin_start(s, pin);
      wd_region_put(pin);
    }
    return;
  }
  const Wave__V1__Request *rq = c->req;
  c->req_id = rq->id;
  if (rq->version != 1 && rq->version != WD_PROTOCOL) {
    s->failed++;
    return wd_reply_error(c, WAVE_EVERSION, "protocol version %u; this "
                          "daemon speaks version %u (and version 1 without "
                          "hash submits)", rq->version, WD_PROTOCOL);
  }
  c->version = rq->version;
  /* its connection holds its share of the contexts already (front.c,
   * peer.c); a poll that will park frees its context */
  int parks = rq->body_case == WAVE__V1__REQUEST__BODY_JOB && rq->job != NULL &&
              rq->job->wait_ms > 0;
  wd_front_extra(c);
  if (!parks && c->over &&
      wd_peers_held(s->peers, c->pipe) > 2 * wd_front_peer_cap(s)) {
    s->failed++;
    return wd_reply_error(c, WAVE_EBUSY, "this connection has more than %u "
                          "requests in flight (2 x limits.max_peer_requests);"
                          " wait for their replies", 2 * wd_front_peer_cap(s));
  }
  int work = rq->body_case == WAVE__V1__REQUEST__BODY_REDUCE ||
             rq->body_case == WAVE__V1__REQUEST__BODY_HASH ||
             rq->body_case == WAVE__V1__REQUEST__BODY_STREAM_COMMIT;
  if (work && s->stopping) {
    s->failed++;
    return wd_reply_error(c, WAVE_ESHUTDOWN, "wavedd is shutting down");
  }
  switch (rq->body_case) {
  case WAVE__V1__REQUEST__BODY_REDUCE:
    return dp_reduce(c, rq->reduce);
  case WAVE__V1__REQUEST__BODY_STATUS:
    return wd_reply_status(c);
  case WAVE__V1__REQUEST__BODY_HASH:
    return dp_hash(c, rq->hash);
  case WAVE__V1__REQUEST__BODY_JOB:
    return dp_job(c, rq->job);
  case WAVE__V1__REQUEST__BODY_CANCEL:
    return dp_cancel(c, rq->cancel);
  case WAVE__V1__REQUEST__BODY_PACKS:
    return wd_reply_packs(c);
  case WAVE__V1__REQUEST__BODY_JOBS:
    return dp_jobs(c, rq->jobs);
  case WAVE__V1__REQUEST__BODY_STREAM_COMMIT:
    if (dp_check_op(c, c->bulk.dtype, c->bulk.op) != 0)
      return;
    return dp_reduce_spans(c, c->bulk.dtype, c->bulk.op, c->bulk.spans,
                           c->bulk.n_input, c->bulk.n_mask, c->bulk.has_mask,
                           c->bulk.device);
  default: {
    /* a body this daemon does not know arrives as an unknown field */
    unsigned tag = rq->base.n_unknown_fields ? rq->base.unknown_fields[0].tag
                                             : 0;
    s->failed++;
    if (tag)
      return wd_reply_error(c, WAVE_EUNSUPPORTED, "request body field %u is "
                            "not known to wavedd %s", tag, WAVE_VERSION);
    return wd_reply_error(c, WAVE_EUNSUPPORTED, "request has no body");
  }
  }
}
