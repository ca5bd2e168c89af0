/* decode.c - stream, region and extent requests on the decode threads (see
 * bulk/decode.h): the five bodies rq/route.c's table runs there once a
 * request passed its gates, and a reduction's extents (or the spans of
 * its many chunks by value), its rows counted and its job validated. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/bulk/decode.h"
#include "daemon/bulk/filered.h"
#include "daemon/log.h"
#include "daemon/net/fdpass.h"
#include "daemon/net/principal.h"
#include "core/base.h"
#include "core/reduce.h"
#include "proto/wire.h"

struct wd_bulk {
  wd_regions *regions;
  wd_streams *streams;
  wd_shares *shares;  /* each client's share of both (share.h) */
};

int wd_bulk_new(const wd_config *cfg, wd_readers *rd, wd_unpin_fn unpin,
                void *arg, wd_bulk **out, wave_error *err)
{
  wd_bulk *b = calloc(1, sizeof *b);
  if ((*out = b) == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  int rc;
  if ((b->shares = wd_shares_new(&cfg->limits)) == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  if ((rc = wd_regions_new(cfg, b->shares, rd, unpin, arg, &b->regions,
                           err)) != 0 ||
      (rc = wd_streams_new(&cfg->limits, b->shares, &b->streams, err)) != 0)
    return rc;
  return 0;
}

void wd_bulk_free(wd_bulk *b)
{
  if (b == NULL)
    return;
  wd_regions_free(b->regions);
  wd_streams_free(b->streams);
  wd_shares_free(b->shares);
  free(b);
}

static void bk_error(wd_bulk_req *out, uint64_t id, const wave_error *e)
{
  wd_debug("request %" PRIu64 ": %s: %s", id, wave_errname(e->code),
           e->message);
  out->reply = wv_wire_error(e->code, wave_errname(e->code),
                             e->message, id, out->version);
  out->failed = 1;
  out->fail_code = e->code;
}

static void bk_stream_reply(wd_bulk_req *out, uint64_t id,
                            const wd_stream_info *v)
{
  Wave__V1__StreamInfo si = WAVE__V1__STREAM_INFO__INIT;
  si.stream_id = v->stream_id;
  si.piece_bytes = v->piece_bytes;
  si.input_bytes = v->input_bytes;
  si.mask_bytes = v->mask_bytes;
  si.received_bytes = v->received_bytes;
  Wave__V1__Response r = WAVE__V1__RESPONSE__INIT;
  r.body_case = WAVE__V1__RESPONSE__BODY_STREAM;
  r.stream = &si;
  out->reply = wv_wire_response(&r, id, out->version);
}

/* RegionInfo of v; its name points into v. */
static void bk_region_info(const wd_region_info *v, Wave__V1__RegionInfo *ri)
{
  wave__v1__region_info__init(ri);
  ri->id = v->id;
  ri->bytes = v->bytes;
  ri->name = (char *)v->name;
  ri->owner_uid = v->owner_uid;
  ri->owner_pid = v->owner_pid;
  ri->jobs = v->jobs;
  ri->copied = v->copied;
  ri->file = v->file;
  ri->pinned_devices = v->pinned_devices;
}

static void bk_region_reply(wd_bulk_req *out, uint64_t id,
                            const wd_region_info *v)
{
  Wave__V1__RegionInfo ri;
  bk_region_info(v, &ri);
  Wave__V1__Response r = WAVE__V1__RESPONSE__INIT;
  r.body_case = WAVE__V1__RESPONSE__BODY_REGION;
  r.region = &ri;
  out->reply = wv_wire_response(&r, id, out->version);
}

/* Hold a reference to r in out (one per distinct region). */
static int bk_hold(wd_bulk_req *out, wd_region *r)
{
  for (size_t i = 0; i < out->n_regions; i++)
    if (out->regions[i] == r) {
      wd_region_put(r);
      return 0;
    }
  wd_region **nr = realloc(out->regions, (out->n_regions + 1) * sizeof *nr);
  if (nr == NULL) {
    wd_region_put(r);
    return WAVE_ENOMEM;
  }
  out->regions = nr;
  out->regions[out->n_regions++] = r;
  return 0;
}

/* One extent (named `what`, e.g. "input chunk 3") -> a span of rows of
 * `size_b` bytes, checked against the payload or its region (held in out):
 * the one set of checks of every extent, a reduction's chunk or a stream
 * piece's `from`.  *held: its rows are the daemon's own memory. */
static int bk_extent(wd_bulk *b, uint32_t pipe, const Wave__V1__Extent *e,
                     const uint8_t *payload, size_t plen, const char *what,
                     unsigned size_b, wv_span *span, wd_fsrc *src, int *held,
                     wd_bulk_req *out, wave_error *err)
{
  if (e->bytes % size_b != 0)
    return wv_seterr(err, WAVE_ELENGTH, "%s is %" PRIu64 " bytes, not a "
                     "multiple of %u", what, e->bytes, size_b);
  const uint8_t *base;
  uint64_t size;
  int fd = -1, fifo = 0;
  const wd_region *reg = NULL;
  *held = 1;  /* rows in the daemon's own memory */
  if (e->region == 0) {
    if (payload == NULL)
      return wv_seterr(err, WAVE_EBADREQUEST, "%s names the payload (region "
                       "0), but the request is not framed", what);
    base = payload;
    size = plen;
  } else {
    wd_region *r;
    int rc = wd_regions_get(b->regions, pipe, e->region, &r, err);
    if (rc != 0)
      return rc;
    if ((rc = bk_hold(out, r)) != 0)
      return wv_seterr(err, rc, NULL);
    base = wd_region_base(r);
    size = wd_region_bytes(r);
    reg = r;
    fd = wd_region_file(r);
    fifo = wd_region_fifo(r);
    *held = wd_region_copied(r);
  }
  if (fifo && (e->offset != 0 || e->bytes != size))
    return wv_seterr(err, WAVE_ERANGE, "%s: bytes [%" PRIu64 ", %" PRIu64
                     ") of pipe region %" PRIu64 ": a pipe is read once, "
                     "whole, so its extent is [0, %" PRIu64 ")", what,
                     e->offset, e->offset + e->bytes, e->region, size);
  if (e->offset > size || e->bytes > size - e->offset)
    return wv_seterr(err, WAVE_ERANGE, "%s: bytes [%" PRIu64 ", %" PRIu64
                     ") lie outside %s %" PRIu64 " of %" PRIu64 " bytes",
                     what, e->offset, e->offset + e->bytes,
                     e->region ? "region" : "the payload, region", e->region,
                     size);
  *src = (wd_fsrc){.fd = fd, .fifo = fifo, .off = e->offset,
                   .region = e->region, .reg = reg};
  span->rows = e->bytes / size_b;
  if (fd >= 0) {  /* a file region: read by the job (daemon/bulk/filered.h) */
    if (e->offset % 4 != 0)
      return wv_seterr(err, WAVE_ERANGE, "%s: offset %" PRIu64 " is not a "
                       "multiple of 4", what, e->offset);
    out->files = 1;
    return 0;
  }
  /* rows are read in place (wv_span): 4-aligned, also 8-byte rows */
  if (((uintptr_t)base + e->offset) % 4 != 0)
    return wv_seterr(err, WAVE_ERANGE, "%s: offset %" PRIu64 " is not a "
                     "multiple of 4%s", what, e->offset,
                     e->offset % 4 == 0 ? " from an aligned start (frame "
                     "header not padded to 8 bytes?)" : "");
  span->data = base + e->offset;
  /* a region's rows may move faster through the readers than through
   * the device's own staging (bulk/filered.h decides on the device) */
  if (reg != NULL)
    out->files = 1;
  return 0;
}

/* Extents -> spans of rows of `size` bytes (8: a 64-bit dtype's input). */
static int bk_extents(wd_bulk *b, uint32_t pipe, Wave__V1__Extent *const *ex,
                      size_t n, const uint8_t *payload, size_t plen,
                      const char *what, unsigned size_b, wv_span *spans,
                      wd_fsrc *src, uint64_t *mem_rows, wd_bulk_req *out,
                      wave_error *err)
{
  for (size_t i = 0; i < n; i++) {
    char name[48];
    int held = 0, rc;
    snprintf(name, sizeof name, "%s chunk %zu", what, i);
    if ((rc = bk_extent(b, pipe, ex[i], payload, plen, name, size_b,
                        &spans[i], &src[i], &held, out, err)) != 0)
      return rc;
    /* a pipe's one job takes it here, once its extent is known good */
    if (src[i].fifo && !wd_region_claim((wd_region *)src[i].reg))
      return wv_seterr(err, WAVE_EREGION, "%s names pipe region %" PRIu64
                       ", which an earlier job (or extent) has named: a pipe "
                       "is read once", name, ex[i]->region);
    if (held && mem_rows != NULL)
      *mem_rows += spans[i].rows;
  }
  return 0;
}

static int bk_reduce(wd_bulk *b, uint32_t pipe, const Wave__V1__ReduceRequest *rr,
                     const uint8_t *payload, size_t plen, wd_bulk_req *out,
                     wave_error *err)
{
  if (rr->n_input > 0 || rr->n_mask > 0)
    return wv_seterr(err, WAVE_EBADREQUEST, "a reduction gives its chunks "
                     "either by value (input/mask) or by place (input_at/"
                     "mask_at), not both");
  size_t n = rr->n_input_at + rr->n_mask_at;
  if ((out->spans = calloc(n + 1, sizeof *out->spans)) == NULL ||
      (out->src = calloc(n + 1, sizeof *out->src)) == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  int rc;
  if ((rc = bk_extents(b, pipe, rr->input_at, rr->n_input_at, payload, plen,
                       "input", wv_dtype_size((wave_dtype)rr->dtype),
                       out->spans, out->src, &out->mem_rows, out,
                       err)) != 0 ||
      (rc = bk_extents(b, pipe, rr->mask_at, rr->n_mask_at, payload, plen,
                       "mask", 4, out->spans + rr->n_input_at,
                       out->src + rr->n_input_at, NULL, out, err)) != 0)
    return rc;
  out->dtype = (wave_dtype)rr->dtype;
  out->op = (wave_op)rr->op;
  out->n_input = rr->n_input_at;
  out->n_mask = rr->n_mask_at;
  out->has_mask = rr->masked || rr->n_mask_at > 0;
  snprintf(out->device, sizeof out->device, "%s", rr->device ? rr->device : "");
  if (rr->device != NULL && strlen(rr->device) >= sizeof out->device)
    return wv_seterr(err, WAVE_ENODEV, "no device named '%.64s...'",
                     rr->device);
  out->ready = 1;
  return 0;
}

/* A reduction of many chunks by value: its spans made here, off the loop
 * (issue 35: the loop spent 0.8 s on the spans of 4M one-row chunks, and
 * every other client waited), and a chunk that is not whole rows refused
 * here too, as the loop would say it.  A dtype or op the loop refuses
 * first (rq/reduce.c, O(1)) is left to it, as are fewer chunks.
 * 0: prepared (out->ready), 1: the loop's, else the error's code. */
#define BK_BY_VALUE 4096  /* fewer chunks: the loop's, as cheap */

static int bk_values(const Wave__V1__ReduceRequest *rr, wd_bulk_req *out,
                     wave_error *err)
{
  size_t n = rr->n_input + rr->n_mask;
  unsigned size = wv_dtype_size((wave_dtype)rr->dtype);
  if (n < BK_BY_VALUE ||
      wave_op_check((wave_dtype)rr->dtype, (wave_op)rr->op) != 0)
    return 1;
  for (size_t i = 0; i < n; i++) {
    int in = i < rr->n_input;
    size_t len = in ? rr->input[i].len : rr->mask[i - rr->n_input].len;
    if (len % (in ? size : 4) != 0)
      return wv_seterr(err, WAVE_ELENGTH, "%s chunk %zu is %zu bytes, not a "
                       "multiple of %u", in ? "input" : "mask",
                       in ? i : i - rr->n_input, len, in ? size : 4);
  }
  if ((out->spans = calloc(n + 1, sizeof *out->spans)) == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  for (size_t i = 0; i < n; i++) {
    const ProtobufCBinaryData *c = i < rr->n_input ? &rr->input[i]
                                                  : &rr->mask[i - rr->n_input];
    out->spans[i].data = c->data;
    out->spans[i].rows = c->len / (i < rr->n_input ? size : 4);
    if (i < rr->n_input)
      out->mem_rows += out->spans[i].rows;
  }
  out->dtype = (wave_dtype)rr->dtype;
  out->op = (wave_op)rr->op;
  out->n_input = rr->n_input;
  out->n_mask = rr->n_mask;
  out->has_mask = rr->masked || rr->n_mask > 0;
  snprintf(out->device, sizeof out->device, "%s", rr->device ? rr->device : "");
  if (rr->device != NULL && strlen(rr->device) >= sizeof out->device)
    return wv_seterr(err, WAVE_ENODEV, "no device named '%.64s...'",
                     rr->device);
  out->ready = 1;
  return 0;
}

/* A prepared reduction's rows counted and its job validated here, not on
 * the loop (issue 35: both O(chunks)); rq/reduce.c takes out->rows as
 * they are.  A dtype or op the loop refuses first is left to it. */
static int bk_check(wd_bulk_req *out, wave_error *err)
{
  if (wave_op_check(out->dtype, out->op) != 0)
    return 0;
  wv_reduce_job job = {.dtype = out->dtype, .op = out->op,
                       .input = out->spans, .n_input = out->n_input,
                       .mask = out->spans + out->n_input,
                       .n_mask = out->n_mask, .has_mask = out->has_mask};
  for (size_t i = 0; i < out->n_input; i++)
    job.rows += out->spans[i].rows;
  int rc = out->files ? wd_file_validate(&job, err)  /* rows not here */
                      : wv_reduce_validate(&job, err);
  if (rc != 0)
    return rc;
  out->rows = job.rows;
  out->checked = 1;
  return 0;
}

static int bk_stream_open(wd_bulk *b, uint32_t pipe, uint64_t key,
                          const char *who,
                          const Wave__V1__StreamOpenRequest *so,
                          wd_stream_info *si, wave_error *err)
{
  wd_stream_spec spec = {
    .dtype = (int)so->dtype,
    .op = (int)so->op,
    .masked = so->masked,
    .device = so->device,
    .input_bytes = so->input_bytes,
    .mask_bytes = so->mask_bytes,
    .n_input_chunks = so->n_input_chunks,
    .input_chunks = so->input_chunks,
    .level = (int)so->priority,
    .deadline_ms = so->deadline_ms,
    .piece_bytes = so->piece_bytes,
  };
  return wd_streams_open(b->streams, pipe, key, who, &spec, si, err);
}

static int bk_commit(wd_bulk *b, uint32_t pipe,
                     const Wave__V1__StreamCommitRequest *cr, uint64_t id,
                     wd_bulk_req *out, wave_error *err)
{
  wd_stream_info si;
  wd_stream *s;
  int rc = wd_streams_commit(b->streams, pipe, cr->stream_id, cr->abort, &s,
                             &si, err);
  if (rc != 0)
    return rc;
  if (cr->abort) {
    bk_stream_reply(out, id, &si);
    return 0;
  }
  out->stream = s;
  const char *dev;
  if (wd_stream_job(s, &out->spans, &out->n_input, &out->n_mask, &out->dtype,
                    &out->op, &out->has_mask, &dev) != 0)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  snprintf(out->device, sizeof out->device, "%s", dev);
  out->stands_for = wd_stream_stands_for(s);
  wd_stream_level(s, &out->level, &out->deadline_ms);
  for (size_t i = 0; i < out->n_input; i++)
    out->mem_rows += out->spans[i].rows;  /* the stream's buffer is ours */
  out->ready = 1;
  return bk_check(out, err);
}

/* A body's end: on failure, what out holds goes and the error is its
 * reply. */
static void bk_done(wd_bulk_req *out, uint64_t id, int rc,
                    const wave_error *err)
{
  if (rc == 0)
    return;
  unsigned v = out->version;
  wd_bulk_clear(out);
  out->version = v;
  bk_error(out, id, err);
}

static uint32_t bk_pipe(nng_msg *m)
{
  return (uint32_t)nng_pipe_id(nng_msg_get_pipe(m));
}

/* whose share a stream or region draws on: "uid:N" on ipc, the connection
 * or its token on tcp (principal.h) */
void wd_bulk_stream_open(wd_bulk *b, const wd_bulk_in *in, wd_bulk_req *out)
{
  const Wave__V1__Request *rq = in->rq;
  wave_error err = {0};
  wd_stream_info si;
  out->version = rq->version;
  int rc = bk_stream_open(b, bk_pipe(*in->msg), wd_peer_key(in->who),
                          in->who, rq->stream_open, &si, &err);
  if (rc == 0)
    bk_stream_reply(out, rq->id, &si);
  bk_done(out, rq->id, rc, &err);
}

/* A piece by place (StreamPutRequest.from): the bytes of a mapped or
 * copy region of this connection, checked as a reduction's extent is;
 * the put reads them before the reply (the region held in out until
 * then), so the client may write them again once it has the reply. */
static int bk_put_from(wd_bulk *b, uint32_t pipe,
                       const Wave__V1__StreamPutRequest *sp,
                       wd_bulk_req *out, const uint8_t **data, size_t *len,
                       wave_error *err)
{
  char name[64];
  wv_span span = {0};
  wd_fsrc src = {.fd = -1};
  int held = 0;
  snprintf(name, sizeof name, "%s piece at offset %" PRIu64 ": `from`",
           sp->mask ? "mask" : "input", sp->offset);
  int rc = bk_extent(b, pipe, sp->from, NULL, 0, name, 4, &span, &src, &held,
                     out, err);
  if (rc != 0)
    return rc;
  if (src.fd >= 0)
    return wv_seterr(err, WAVE_EREGION, "%s names region %" PRIu64 ", a file "
                     "region (read by the jobs that name it): a piece comes "
                     "from a mapped or copy region", name, sp->from->region);
  *data = span.data;
  *len = (size_t)sp->from->bytes;
  return 0;
}

void wd_bulk_stream_put(wd_bulk *b, const wd_bulk_in *in, wd_bulk_req *out)
{
  const Wave__V1__Request *rq = in->rq;
  const Wave__V1__StreamPutRequest *sp = rq->stream_put;
  wave_error err = {0};
  wd_stream_info si;
  out->version = rq->version;
  const uint8_t *data = sp->data.data;
  size_t len = sp->data.len;
  uint32_t pipe = bk_pipe(*in->msg);
  int rc = 0;
  if (sp->from != NULL && (len > 0 || in->payload != NULL)) {
    rc = wv_seterr(&err, WAVE_EBADREQUEST, "a stream piece is one of `data`, "
                   "the frame's payload and `from`");
  } else if (sp->from != NULL) {
    rc = bk_put_from(b, pipe, sp, out, &data, &len, &err);
  } else if (in->payload != NULL && len == 0) {
    data = in->payload;
    len = in->plen;
  } else if (in->payload != NULL && in->plen > 0) {
    rc = wv_seterr(&err, WAVE_EBADREQUEST, "a stream piece is either "
                   "`data` or the frame's payload, not both");
  }
  /* a framed piece's message may be kept as the piece (stream.h) */
  int framed = sp->from == NULL && in->payload != NULL && data == in->payload;
  if (rc == 0)
    rc = wd_streams_put(b->streams, pipe, sp->stream_id, sp->mask,
                        sp->offset, data, len, framed ? in->msg : NULL, &si,
                        &err);
  if (rc == 0)
    bk_stream_reply(out, rq->id, &si);
  bk_done(out, rq->id, rc, &err);
}

void wd_bulk_stream_commit(wd_bulk *b, const wd_bulk_in *in,
                           wd_bulk_req *out)
{
  wave_error err = {0};
  out->version = in->rq->version;
  int rc = bk_commit(b, bk_pipe(*in->msg), in->rq->stream_commit, in->rq->id,
                     out, &err);
  bk_done(out, in->rq->id, rc, &err);
}

void wd_bulk_region_register(wd_bulk *b, const wd_bulk_in *in,
                             wd_bulk_req *out)
{
  const Wave__V1__RegionRegisterRequest *rr = in->rq->region_register;
  nng_pipe p = nng_msg_get_pipe(*in->msg);
  wave_error err = {0};
  wd_region_info ri;
  out->version = in->rq->version;
  uint64_t uid = 0, pid = 0;  /* nng 1.5: uint64 options, ipc only */
  int cred = nng_pipe_get_uint64(p, NNG_OPT_IPC_PEER_UID, &uid) == 0 &&
             nng_pipe_get_uint64(p, NNG_OPT_IPC_PEER_PID, &pid) == 0;
  int rc = wd_regions_add(b->regions, (uint32_t)nng_pipe_id(p),
                          wd_peer_key(in->who), in->who, cred, (uint32_t)uid,
                          (uint32_t)pid,
                          &(wd_region_spec){
                              .ticket = rr->fd_ticket.data,
                              .ticket_len = rr->fd_ticket.len,
                              .bytes = rr->bytes,
                              .name = rr->name,
                              .copy = rr->copy,
                              .file = rr->file,
                          },
                          &ri, &out->pin, &err);
  if (rc == 0)
    bk_region_reply(out, in->rq->id, &ri);
  bk_done(out, in->rq->id, rc, &err);
}

void wd_bulk_region_unregister(wd_bulk *b, const wd_bulk_in *in,
                               wd_bulk_req *out)
{
  wave_error err = {0};
  wd_region_info ri;
  out->version = in->rq->version;
  int rc = wd_regions_remove(b->regions, bk_pipe(*in->msg),
                             in->rq->region_unregister->region_id, &ri, &err);
  if (rc == 0)
    bk_region_reply(out, in->rq->id, &ri);
  bk_done(out, in->rq->id, rc, &err);
}

int wd_bulk_decode(wd_bulk *b, const wd_bulk_in *in, wd_bulk_req *out)
{
  const Wave__V1__Request *rq = in->rq;
  wave_error err = {0};
  int rc;
  out->version = rq->version;
  if (rq->body_case == WAVE__V1__REQUEST__BODY_REDUCE) {
    if (rq->reduce->n_input_at == 0 && rq->reduce->n_mask_at == 0 &&
        in->payload == NULL) {
      if ((rc = bk_values(rq->reduce, out, &err)) == 1)
        return 0;  /* the loop's */
    } else {
      rc = bk_reduce(b, bk_pipe(*in->msg), rq->reduce, in->payload, in->plen,
                     out, &err);
    }
    if (rc == 0)
      rc = bk_check(out, &err);
  } else {
    if (in->payload == NULL)
      return 0;
    rc = wv_seterr(&err, WAVE_EBADREQUEST, "a framed request must be a "
                   "reduction or a stream piece");
  }
  bk_done(out, rq->id, rc, &err);
  return 1;
}

void wd_bulk_clear(wd_bulk_req *out)
{
  if (out->reply != NULL)
    nng_msg_free(out->reply);
  for (size_t i = 0; i < out->n_regions; i++)
    wd_region_put(out->regions[i]);
  wd_region_put(out->pin);
  free(out->regions);
  wd_stream_put(out->stream);
  free(out->spans);
  free(out->src);
  if (out->keep != NULL)
    nng_msg_free(out->keep);
  memset(out, 0, sizeof *out);
}

wd_fdpass *wd_bulk_fdpass(wd_bulk *b)
{
  return b ? wd_regions_fdpass(b->regions) : NULL;
}

void wd_bulk_drop_pipe(wd_bulk *b, uint32_t pipe)
{
  wd_regions_drop_pipe(b->regions, pipe);
  wd_streams_drop_pipe(b->streams, pipe);
}

int wd_bulk_holds(void *arg, uint32_t pipe)
{
  wd_bulk *b = arg;
  return b != NULL && (wd_regions_held(b->regions, pipe) > 0 ||
                       wd_streams_held(b->streams, pipe) > 0);
}

_Static_assert(WD_SHARE_WHO == WD_PRINCIPAL_MAX, "a share names a principal");

#define BK_SIDE_UIDS 256  /* uids with side connections listed at most */

/* name's side connections (a "uid:N" principal's; 0 for the others). */
static unsigned bk_side_of(const char *name, const uint32_t *uid,
                           const unsigned *n, size_t k)
{
  unsigned long u;
  char *end;
  if (strncmp(name, "uid:", 4) != 0)
    return 0;
  u = strtoul(name + 4, &end, 10);
  for (size_t i = 0; *end == '\0' && i < k; i++)
    if (uid[i] == u)
      return n[i];
  return 0;
}

/* The shares who may see (its own always, held or not; root over ipc:
 * every principal's, as wd_peer_may decides for regions and jobs, and
 * every uid's with side connections open), each with its side
 * connections (daemon/net/fdpass.h). */
static void bk_shares_status(wd_bulk *b, const char *who,
                             Wave__V1__StatusReply *sr, wd_bulk_snap *snap)
{
  size_t n = 0;
  uint64_t max[WD_SHARE_KINDS];
  uint32_t uid[BK_SIDE_UIDS];
  unsigned side[BK_SIDE_UIDS], all;
  size_t n_uid = wd_fdpass_side(wd_bulk_fdpass(b), uid, side, BK_SIDE_UIDS,
                                &all);
  sr->fd_conns = all;
  sr->fd_limit = WD_FDPASS_SIDE_MAX;
  if (who == NULL ||
      wd_shares_list(b->shares, &snap->rows, &n, max) != 0)
    return;
  snap->shares = calloc(n + n_uid + 1, sizeof *snap->shares);
  snap->share_ptrs = calloc(n + n_uid + 1, sizeof *snap->share_ptrs);
  snap->side_names = calloc(n_uid + 1, sizeof *snap->side_names);
  if (snap->shares == NULL || snap->share_ptrs == NULL ||
      snap->side_names == NULL)
    return;
  for (size_t j = 0; j < n_uid; j++)
    snprintf(snap->side_names[j], sizeof snap->side_names[j],
             "uid:%" PRIu32, uid[j]);
  size_t k = 0, mine = n;  /* mine: the asker's row (n: none yet) */
  for (size_t i = 0; i <= n + n_uid; i++) {
    const char *name = i < n ? snap->rows[i].who
                       : i == n ? who : snap->side_names[i - n - 1];
    const uint64_t *used = i < n ? snap->rows[i].used : NULL;
    if (i < n && strcmp(name, who) == 0)
      mine = i;
    int listed = 0;  /* a side-only uid listed already (a row, or who's) */
    for (size_t j = 0; i > n && j < k && !listed; j++)
      listed = strcmp(snap->shares[j].principal, name) == 0;
    if ((i != n && !wd_peer_may(who, name)) || (i == n && mine < n) ||
        listed)
      continue;  /* another's; or listed already */
    Wave__V1__PrincipalShare *ps = &snap->shares[k];
    wave__v1__principal_share__init(ps);
    ps->principal = (char *)name;
    ps->region_bytes = used ? used[WD_SHARE_REGION] : 0;
    ps->region_limit = max[WD_SHARE_REGION];
    ps->stream_bytes = used ? used[WD_SHARE_BUF] : 0;
    ps->stream_limit = max[WD_SHARE_BUF];
    ps->fd_conns = bk_side_of(name, uid, side, n_uid);
    ps->fd_limit = WD_FDPASS_SIDE_PER_UID;
    ps->file_fds = used ? used[WD_SHARE_FILES] : 0;
    ps->file_fd_limit = max[WD_SHARE_FILES];
    snap->share_ptrs[k] = ps;
    k++;
  }
  sr->n_shares = k;
  sr->shares = snap->share_ptrs;
}

void wd_bulk_status(wd_bulk *b, const char *who, Wave__V1__StatusReply *sr,
                    wd_bulk_snap *snap)
{
  memset(snap, 0, sizeof *snap);
  if (wd_regions_snapshot(b->regions, who, &snap->regions) == 0) {
    size_t n = snap->regions.n;
    snap->infos = calloc(n + 1, sizeof *snap->infos);
    snap->ptrs = calloc(n + 1, sizeof *snap->ptrs);
    if (snap->infos != NULL && snap->ptrs != NULL) {
      for (size_t i = 0; i < n; i++) {
        bk_region_info(&snap->regions.infos[i], &snap->infos[i]);
        snap->ptrs[i] = &snap->infos[i];
      }
      sr->n_regions = n;
      sr->regions = snap->ptrs;
      sr->region_bytes = snap->regions.bytes;
    }
  }
  sr->streams = wd_streams_count(b->streams);
  bk_shares_status(b, who, sr, snap);
}

void wd_bulk_snap_free(wd_bulk_snap *snap)
{
  wd_region_snap_free(&snap->regions);
  free(snap->infos);
  free(snap->ptrs);
  free(snap->rows);
  free(snap->shares);
  free(snap->share_ptrs);
  free(snap->side_names);
  memset(snap, 0, sizeof *snap);
}
