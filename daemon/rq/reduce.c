/* reduce.c - reductions on the loop and their device phase: ReduceRequest
 * (chunks in the message, framed, or in regions) and StreamCommit, the
 * work item's ops (checked and queued here on the loop, run on the device
 * thread, done and encoded back on the loop), and the ReduceResult.
 *
 * Reduction input is used in place: the spans point into the unpacked
 * request (or its bulk parts), which lives until the reply is packed.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/exec/pick.h"
#include "daemon/net/front.h"
#include "daemon/net/req.h"
#include "daemon/rq/reduce.h"
#include "daemon/rq/slices.h"
#include "daemon/server_int.h"
#include "daemon/stats.h"
#include "core/base.h"
#include "core/reduce.h"
#include "core/xsum.h"
#include "workers/wvdev.h"

/* Chunks of rows of `size` bytes (8: a 64-bit dtype's input) as spans. */
static int rr_spans(const ProtobufCBinaryData *chunks, size_t n, wv_span *out,
                    const char *what, unsigned size, uint64_t *rows,
                    wave_error *err)
{
  for (size_t i = 0; i < n; i++) {
    if (chunks[i].len % size != 0)
      return wv_seterr(err, WAVE_ELENGTH,
                       "%s chunk %zu is %zu bytes, not a multiple of %u", what,
                       i, chunks[i].len, size);
    out[i].data = chunks[i].data;
    out[i].rows = chunks[i].len / size;
    *rows += out[i].rows;
  }
  return 0;
}

/* WD_RUN_*, or -1 when the job runs whole.  A job bigger than the
 * device's slice runs a slice per step, and leaves
 * the device between two (WD_RUN_MORE) only while another client has a
 * reduction queued there; alone, it runs on within the one step.  The
 * slices merge to the bits of the whole job (rq/slices.h).  A float sum
 * of many chunks is planned first, in steps of a slice's cost, and
 * leaves the device between two of those the same way. */
/* ReduceResult.finite is said for float min/max/extent (the op table). */
static int rr_says_finite(const wv_reduce_job *j)
{
  return wv_op_plan_of(j->dtype, j->op)->says_finite;
}

static void rr_slices_free(wd_call *k)
{
  if (k->slices != NULL) {
    wd_slices_fini(k->slices);
    free(k->slices);
    k->slices = NULL;
  }
}

static int rr_sliced(wd_call *k, wd_work *w, const wd_run_ctx *x)
{
  if (k->slices == NULL) {
    if (k->job.rows <= 65536 && k->job.n_input <= 256 &&
        k->job.n_mask <= 256)  /* never sliced: spare the look-up */
      return -1;
    if ((k->slices = malloc(sizeof *k->slices)) == NULL) {
      w->rc = wv_seterr(&w->err, WAVE_ENOMEM, NULL);
      return WD_RUN_END;
    }
    wd_slices_begin(k->slices, &k->job, wd_slices_device_rows(
                                            wd_device_cfg_of(w->dev), x->caps));
  }
  if (!k->slices->started) {
    uint64_t p;
    while (!wd_slices_plan(k->slices, &p))
      if (wd_device_short_waiting(w->dev, w->owner))
        return WD_RUN_MORE;  /* planned on at its owner's next turn */
    if (p == 0 || (w->rc = wd_slices_start(k->slices, &w->err)) != 0) {
      rr_slices_free(k);
      return p == 0 ? -1 : WD_RUN_END;  /* -1: it runs whole */
    }
  }
  int last = 0;
  while (!last) {
    w->rc = wd_slices_step(k->slices, x->dev, &last, &w->err);
    if (w->rc != 0)
      return WD_RUN_END;
    if (!last && wd_device_short_waiting(w->dev, w->owner))
      return WD_RUN_MORE;
  }
  int some = 0;
  wd_slices_result(k->slices, &k->out, &some);
  /* freed here, not by the loop: for 4M chunks its buffers are 96 MiB of
   * mappings, whose unmapping took the loop 0.3-0.4 ms on the 2-core VM */
  rr_slices_free(k);
  if (rr_says_finite(&k->job))
    k->finite = some ? WAVE__V1__FINITE_ROWS__FINITE_SOME
                     : WAVE__V1__FINITE_ROWS__FINITE_NONE;
  return WD_RUN_END;
}

static int rr_reduce_run(wd_work *w, const wd_run_ctx *x)
{
  wd_req *c = ((wd_call *)((char *)w - offsetof(wd_call, work)))->ctx;
  int fsome = 0;  /* a file job says it itself (its rows are not here) */
  int r;
  c->call->moves_input = !x->caps->reads_host_memory;
  /* in memory (a message, or regions a CPU device reads in place): big
   * jobs run in slices; what the readers read runs through them whole */
  int in_memory = !c->bulk.files ||
                  wd_file_reads_nothing(x->dev, x->caps, c->bulk.src,
                                        c->bulk.n_input + c->bulk.n_mask);
  if (in_memory && (r = rr_sliced(c->call, w, x)) >= 0)
    return r;  /* sliced: finite is set when it ended well */
  c->call->finite = WAVE__V1__FINITE_ROWS__FINITE_UNSPECIFIED;
  if (c->bulk.files)  /* read as reduced: daemon/bulk/filered.h */
    w->rc = wd_file_reduce(c->call->srv->readers, x->dev, x->caps,
                           &c->call->job, c->bulk.src,
                           c->call->srv->cfg->limits.region_read_timeout_ms,
                           &c->call->out, &fsome, &w->err);
  else
    w->rc = wv_dev_reduce(x->dev, &c->call->job, &c->call->out, &w->err);
  if (w->rc == 0 && rr_says_finite(&c->call->job)) {
    /* Only an answer of all +0.0 with rows selected leaves it open; then
     * one pass here, on the device thread, that stops at the first
     * selected finite row. */
    int some = c->bulk.files ? fsome :
               wv_reduce_some_finite(&c->call->job, &c->call->out);
    c->call->finite = some ? WAVE__V1__FINITE_ROWS__FINITE_SOME
                     : WAVE__V1__FINITE_ROWS__FINITE_NONE;
  }
  return WD_RUN_END;
}

static void rr_reply(wd_req *c)
{
  Wave__V1__ReduceResult rr = WAVE__V1__REDUCE_RESULT__INIT;
  rr.dtype = (Wave__V1__DType)c->call->job.dtype;  /* also for streams */
  rr.op = (Wave__V1__Op)c->call->job.op;
  /* the 64-bit dtypes' values in bits64, the 32-bit ones' in bits (as
   * before: an older client reads them there) */
  const wv_reduce_out *o = &c->call->out;
  uint32_t bits[2] = {(uint32_t)o->bits[0], (uint32_t)o->bits[1]};
  uint64_t bits64[2] = {o->bits[0], o->bits[1]};
  if (wv_dtype_size(c->call->job.dtype) == 8) {
    rr.n_bits64 = o->n_values;
    rr.bits64 = bits64;
  } else {
    rr.n_bits = o->n_values;
    rr.bits = bits;
  }
  rr.index = o->index;  /* argmin/argmax; 0 for the others */
  rr.count = c->call->out.count;
  rr.rows = c->call->job.rows;
  if (c->bulk.stands_for)  /* an online stream: its job is block values */
    rr.count = rr.rows = c->bulk.stands_for;
  rr.device = (char *)wd_device_name(c->call->work.dev);
  rr.seconds = c->call->work.seconds;
  rr.finite = (Wave__V1__FiniteRows)c->call->finite;
  /* fsum: the exact partial beside its rounding (docs/protocol.md "The
   * exact sum"); the merged accumulator of every slice and piece */
  uint8_t exact[8 * WV_XSUM_LIMBS];
  if (wv_op_plan_of(c->call->job.dtype, c->call->job.op)->path ==
      WV_PATH_XSUM) {
    wv_xsum_pack(&o->xsum, exact);
    rr.exact.data = exact;
    rr.exact.len = wv_xsum_wire_bytes(c->call->job.dtype);
    rr.exact_flags = o->xsum.flags;
  }
  Wave__V1__Response r = WAVE__V1__RESPONSE__INIT;
  r.body_case = WAVE__V1__RESPONSE__BODY_REDUCE;
  r.reduce = &rr;
  wd_reply(c, &r);
}

static void rr_reduce_done(wd_work *w)
{
  wd_req *c = ((wd_call *)((char *)w - offsetof(wd_call, work)))->ctx;
  wd_server *s = c->call->srv;
  rr_slices_free(c->call);
  s->reduce_inflight--;
  double now = wd_device_now();
  int ran = w->t_start > 0;
  c->job_t[WD_JT_SUBMIT] = w->t_submit;
  c->job_t[WD_JT_START] = w->t_start;
  c->job_t[WD_JT_END] = w->t_end;
  c->job_t[WD_JT_TAKEN] = now;
  double ph[WD_PH_N] = {
    [WD_PH_QUEUE] = ran ? w->t_start - w->t_submit : -1.0,
    /* the backend's copies (core/job.h), on a device that makes them */
    [WD_PH_TRANSFER] = ran && c->call->moves_input ? c->call->out.transfer_s
                                                   : -1.0,
    [WD_PH_COMPUTE] = ran ? w->seconds : -1.0,
    [WD_PH_TOTAL] = now - w->t_submit,
  };
  uint64_t rows = c->bulk.stands_for ? c->bulk.stands_for
                                     : c->call->job.rows;
  wd_stats_job(WD_KIND_REDUCE, c->req_id, w->dev ? wd_device_name(w->dev) : NULL,
               ph, w->rc, rows, rows * wv_dtype_size(c->call->job.dtype));
  if (s->state == WD_SV_CLOSED) {  /* the socket is gone, nobody to answer */
    wd_req_clear(c);
    return;
  }
  if (w->rc == WAVE_EUNSUPPORTED && w->dev != NULL) {
    /* the backend refused the job (its caps: a 64-bit dtype, argmin/
     * argmax, fsum): say which device, the client may name another */
    wave_error e = w->err;
    wv_seterr(&w->err, WAVE_EUNSUPPORTED, "device %s: %s",
              wd_device_name(w->dev), e.message);
  }
  if (w->rc != 0)
    return wd_reply_job_fail(c, &w->err);
  s->served++;
  rr_reply(c);
}

static const wd_work_ops rr_reduce_ops = {
  .name = "reduction",
  .lane = WD_LANE_SHORT,
  .run = rr_reduce_run,
  .done = rr_reduce_done,
};

/* 0, or the dtype/op error answered. */
static int rr_check_op(wd_req *c, wave_dtype dt, wave_op op)
{
  wave_error err = {0};
  switch (wave_op_check(dt, op)) {
  case 0:  /* the device's caps decide the 64-bit dtypes, argmin/argmax */
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
  wd_reply_fail(c, &err);
  return -1;
}

static void rr_reduce_spans(wd_req *c, wave_dtype dt, wave_op op,
                            const wv_span *spans, size_t n_input,
                            size_t n_mask, int has_mask, const char *device,
                            int level, unsigned deadline_ms);

void wd_rq_reduce(wd_req *c, const Wave__V1__ReduceRequest *r)
{
  wave_error err = {0};
  wave_dtype dt = (wave_dtype)r->dtype;
  wave_op op = (wave_op)r->op;
  if (rr_check_op(c, dt, op) != 0)
    return;
  if (c->bulk.ready)  /* spans made on the decode thread: chunks by place,
                         or many by value (bulk/decode.c) */
    return rr_reduce_spans(c, dt, op, c->bulk.spans, c->bulk.n_input,
                           c->bulk.n_mask, c->bulk.has_mask, c->bulk.device,
                           (int)r->priority, r->deadline_ms);
  c->call->spans = calloc(r->n_input + r->n_mask + 1, sizeof *c->call->spans);
  if (c->call->spans == NULL) {
    wv_seterr(&err, WAVE_ENOMEM, NULL);
    return wd_reply_fail(c, &err);
  }
  uint64_t rows = 0, mask_rows = 0;
  if (rr_spans(r->input, r->n_input, c->call->spans, "input",
               wv_dtype_size(dt), &rows, &err) ||
      rr_spans(r->mask, r->n_mask, c->call->spans + r->n_input, "mask", 4,
               &mask_rows, &err))
    return wd_reply_fail(c, &err);
  rr_reduce_spans(c, dt, op, c->call->spans, r->n_input, r->n_mask,
                  r->masked || r->n_mask > 0, r->device, (int)r->priority,
                  r->deadline_ms);
}

/* A reduction whose spans are ready (c->call->spans or c->bulk.spans): size,
 * validation, device, queue. */
static void rr_reduce_spans(wd_req *c, wave_dtype dt, wave_op op,
                            const wv_span *spans, size_t n_input,
                            size_t n_mask, int has_mask, const char *device,
                            int level, unsigned deadline_ms)
{
  wd_server *s = c->call->srv;
  wave_error err = {0};
  /* spans the decode thread made come counted and validated (issue 35:
   * nothing per chunk on the loop); the loop's own are fewer than 4,096 */
  int checked = spans == c->bulk.spans && c->bulk.checked;
  uint64_t rows = checked ? c->bulk.rows : 0;
  for (size_t i = 0; !checked && i < n_input; i++)
    rows += spans[i].rows;
  /* the limit is on rows held in the daemon's memory: a mapped or file
   * region's rows are the client's (docs/config.md "limits") */
  uint64_t held = spans == c->bulk.spans ? c->bulk.mem_rows : rows;
  if (held > s->cfg->limits.max_job_rows) {
    wv_seterr(&err, WAVE_EJOBSIZE, "%" PRIu64 " rows in the daemon's memory; "
              "this daemon takes at most %" PRIu64 " (limits.max_job_rows)",
              held, s->cfg->limits.max_job_rows);
    return wd_reply_fail(c, &err);
  }
  memset(&c->call->work, 0, sizeof c->call->work);
  memset(&c->call->out, 0, sizeof c->call->out);
  c->call->slices = NULL;
  c->call->finite = WAVE__V1__FINITE_ROWS__FINITE_UNSPECIFIED;
  c->call->work.ops = &rr_reduce_ops;
  c->call->work.owner = wd_peer_key(c->principal);  /* clients take turns */
  wd_work_level(&c->call->work, s->cfg, level, deadline_ms);
  c->call->job = (wv_reduce_job){
    .dtype = dt,
    .op = op,
    .input = spans,
    .n_input = n_input,
    .mask = spans + n_input,
    .n_mask = n_mask,
    .has_mask = has_mask,
    .rows = rows,
  };
  int rc = checked ? 0
           : c->bulk.files && spans == c->bulk.spans
               ? wd_file_validate(&c->call->job, &err)  /* rows not here */
               : wv_reduce_validate(&c->call->job, &err);
  if (rc != 0)
    return wd_reply_fail(c, &err);
  wd_device *d;
  size_t n;
  wd_pick_req prq = {.kind = WD_PICK_REDUCE, .device = device,
                     .needs64 = wv_dtype_size(dt) == 8,
                     .needs_arg = op == WAVE_ARGMIN || op == WAVE_ARGMAX,
                     .needs_fsum = op == WAVE_FSUM};
  if ((rc = wd_pick(s->devs, s->n_devs, &prq, &d, &n, &err)) != 0)
    return wd_reply_fail(c, &err);
  /* the daemon's pick may move if a guard holds the device (pick.h) */
  c->call->work.movable = device == NULL || device[0] == '\0';
  c->call->work.needs = (prq.needs64 ? WD_NEEDS_64 : 0) |
                        (prq.needs_arg ? WD_NEEDS_ARG : 0) |
                        (prq.needs_fsum ? WD_NEEDS_FSUM : 0);
  if ((rc = wd_device_submit(d, &c->call->work, &err)) != 0)
    return wd_reply_fail(c, &err);
  s->reduce_inflight++;
}

void wd_rq_stream_commit(wd_req *c)
{
  if (rr_check_op(c, c->bulk.dtype, c->bulk.op) != 0)
    return;
  rr_reduce_spans(c, c->bulk.dtype, c->bulk.op, c->bulk.spans,
                  c->bulk.n_input, c->bulk.n_mask, c->bulk.has_mask,
                  c->bulk.device, c->bulk.level, c->bulk.deadline_ms);
}
