/* route.c - a decoded request: the route table (body -> handler + flags)
 * and the gates, applied once, before any handler runs: the decode's own
 * answer (its size, its bytes, the raw version, authentication), the
 * version, the connection's share of the contexts (BUSY), and stopping
 * (SHUTDOWN for work).  Most rows run on the loop thread (wd_route); a row
 * marked RT_DECODED (stream open, put and commit, region register and
 * unregister) runs its decode body on the decode thread (wd_route_decode, through
 * net/req.c's hook), so that no loop thread copies a piece or pins a
 * region: its request passes the same gates, in the same order, there,
 * and the loop only sends the answer (or, for a commit, queues the
 * reduction).  The handlers are one file per feature: rq/reduce.c,
 * rq/hash.c (with rq/park.c), rq/status.c; the decode bodies are
 * bulk/decode.c's.
 *
 * Versions: this daemon speaks protocol 2 (WD_PROTOCOL).  A version-1
 * request is served as before, except a version-1 hash submit (rq/hash.c).
 */
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>

#include "daemon/bulk/regionpin.h"
#include "daemon/net/front.h"
#include "daemon/net/req.h"
#include "daemon/rq/hash.h"
#include "daemon/rq/reduce.h"
#include "daemon/rq/route.h"
#include "daemon/rq/status.h"
#include "daemon/server_int.h"
#include "daemon/stats.h"

enum {
  RT_WORK = 1 << 0,  /* queues device work, or opens or changes what the
                      * daemon holds (streams, regions): refused SHUTDOWN
                      * once stopping */
  RT_POLL = 1 << 1,  /* a JobRequest: with wait_ms it parks, freeing its
                      * context, so it is not held to the connection's
                      * share */
  RT_DECODED = 1 << 2,  /* gated and run on the decode thread (its decode
                         * body, wd_route_decode); the loop sends it */
};

typedef struct rt_route {
  Wave__V1__Request__BodyCase body;
  unsigned flags;
  /* loop thread; for a row with a decode body, only a prepared reduction
   * (a commit's) comes here */
  void (*handle)(wd_req *c, const Wave__V1__Request *rq);
  /* RT_DECODED: on the decode thread, once the gates passed
   * (bulk/decode.h); it answers (bulk.reply) or prepares a reduction
   * (bulk.ready) */
  void (*decode)(wd_bulk *b, const wd_bulk_in *in, wd_bulk_req *out);
} rt_route;

static void rt_reduce(wd_req *c, const Wave__V1__Request *rq)
{
  wd_rq_reduce(c, rq->reduce);
}

static void rt_status(wd_req *c, const Wave__V1__Request *rq)
{
  (void)rq;
  wd_rq_status(c);
}

static void rt_hash(wd_req *c, const Wave__V1__Request *rq)
{
  wd_rq_hash(c, rq->hash);
}

static void rt_job(wd_req *c, const Wave__V1__Request *rq)
{
  wd_rq_job(c, rq->job);
}

static void rt_cancel(wd_req *c, const Wave__V1__Request *rq)
{
  wd_rq_cancel(c, rq->cancel);
}

static void rt_packs(wd_req *c, const Wave__V1__Request *rq)
{
  (void)rq;
  wd_rq_packs(c);
}

static void rt_jobs(wd_req *c, const Wave__V1__Request *rq)
{
  wd_rq_jobs(c, rq->jobs);
}

static void rt_stream_commit(wd_req *c, const Wave__V1__Request *rq)
{
  (void)rq;
  wd_rq_stream_commit(c);
}

/* Every body.  The last five are RT_DECODED: they run on the decode
 * thread (their decode body), the rest on the loop. */
static const rt_route rt_table[] = {
  {WAVE__V1__REQUEST__BODY_REDUCE, RT_WORK, rt_reduce, NULL},
  {WAVE__V1__REQUEST__BODY_STATUS, 0, rt_status, NULL},
  {WAVE__V1__REQUEST__BODY_HASH, RT_WORK, rt_hash, NULL},
  {WAVE__V1__REQUEST__BODY_JOB, RT_POLL, rt_job, NULL},
  {WAVE__V1__REQUEST__BODY_CANCEL, 0, rt_cancel, NULL},
  {WAVE__V1__REQUEST__BODY_PACKS, 0, rt_packs, NULL},
  {WAVE__V1__REQUEST__BODY_JOBS, 0, rt_jobs, NULL},
  {WAVE__V1__REQUEST__BODY_STREAM_OPEN, RT_WORK | RT_DECODED, NULL,
   wd_bulk_stream_open},
  {WAVE__V1__REQUEST__BODY_STREAM_PUT, RT_WORK | RT_DECODED, NULL,
   wd_bulk_stream_put},
  {WAVE__V1__REQUEST__BODY_STREAM_COMMIT, RT_WORK | RT_DECODED,
   rt_stream_commit, wd_bulk_stream_commit},
  {WAVE__V1__REQUEST__BODY_REGION_REGISTER, RT_WORK | RT_DECODED, NULL,
   wd_bulk_region_register},
  {WAVE__V1__REQUEST__BODY_REGION_UNREGISTER, RT_WORK | RT_DECODED, NULL,
   wd_bulk_region_unregister},
};

static const rt_route *rt_find(Wave__V1__Request__BodyCase body)
{
  for (size_t i = 0; i < sizeof rt_table / sizeof rt_table[0]; i++)
    if (rt_table[i].body == body)
      return &rt_table[i];
  return NULL;
}

/* An answer the decode thread made: a row's (stream, region), or its
 * refusal of a reduction's extents or of a framed request that is not a
 * reduction (the decode's own answer).  Send it; a registration's pins
 * start once its answer is on its way. */
static void rt_send_decoded(wd_req *c)
{
  wd_server *s = c->call->srv;
  nng_msg *m = c->bulk.reply;
  wd_region *pin = c->bulk.pin;
  c->bulk.reply = NULL;
  c->bulk.pin = NULL;
  if (c->bulk.failed) {
    s->failed++;
    wd_stats_request_error(c->bulk.fail_code, 1);
  }
  wd_req_clear(c);
  wd_front_send(c, m);
  if (pin != NULL) {
    wd_regionpin_start(s->devs, s->n_devs, pin);
    wd_region_put(pin);
  }
}

/* A row with a decode body, back on the loop: it passed the gates on the
 * decode thread (wd_route_decode), so it is sent, or a commit's prepared
 * reduction queued like any other. */
static void rt_decoded(wd_req *c, const rt_route *rt)
{
  if (c->bulk.reply != NULL)
    return rt_send_decoded(c);
  if (c->bulk.ready && rt->handle != NULL) {
    wd_front_extra(c);
    return rt->handle(c, c->req);
  }
  c->call->srv->failed++;  /* its answer could not be packed */
  wd_reply_error(c, WAVE_ENOMEM, "no memory for the reply");
}

/* A body this daemon does not know arrives as an unknown field. */
static void rt_unknown(wd_req *c, const Wave__V1__Request *rq)
{
  unsigned tag = rq->base.n_unknown_fields ? rq->base.unknown_fields[0].tag
                                           : 0;
  c->call->srv->failed++;
  if (tag)
    return wd_reply_error(c, WAVE_EUNSUPPORTED, "request body field %u is "
                          "not known to wavedd %s", tag, WAVE_VERSION);
  wd_reply_error(c, WAVE_EUNSUPPORTED, "request has no body");
}

/* The gates after the decode's own, in order: 0, or the refusal's code
 * and its message in msg.  on_loop: a request beyond its connection's
 * share brings a context of its own (wd_front_extra, loop only). */
static int rt_gate(wd_req *c, const rt_route *rt, int on_loop, char *msg,
                   size_t n)
{
  wd_server *s = c->call->srv;
  const Wave__V1__Request *rq = c->req;
  if (rq->version != 1 && rq->version != WD_PROTOCOL) {
    snprintf(msg, n, "protocol version %u; this daemon speaks version %u "
             "(and version 1 without hash submits)", rq->version,
             WD_PROTOCOL);
    return WAVE_EVERSION;
  }
  c->version = rq->version;
  unsigned flags = rt != NULL ? rt->flags : 0;
  /* its connection holds its share of the contexts already (front.c,
   * peer.c); a poll that will park frees its context */
  int parks = (flags & RT_POLL) && rq->job != NULL && rq->job->wait_ms > 0;
  if (on_loop)
    wd_front_extra(c);
  if (!parks && c->over &&
      wd_peers_held(s->fe->peers, c->pipe) > 2 * wd_front_peer_cap(s->fe)) {
    snprintf(msg, n, "this connection has more than %u requests in flight "
             "(2 x limits.max_peer_requests); wait for their replies",
             2 * wd_front_peer_cap(s->fe));
    return WAVE_EBUSY;
  }
  if ((flags & RT_WORK) && atomic_load(&s->stopping)) {
    snprintf(msg, n, "wavedd is shutting down");
    return WAVE_ESHUTDOWN;
  }
  return 0;
}

int wd_route_decode(wd_req *c, const wd_bulk_in *in)
{
  wd_bulk *b = c->call->srv->bulk;
  const rt_route *rt = rt_find(c->req->body_case);
  if (rt != NULL && (rt->flags & RT_DECODED)) {
    if ((c->dec_code = rt_gate(c, rt, 0, c->dec_msg,
                               sizeof c->dec_msg)) != 0)
      return 0;  /* the loop answers it */
    rt->decode(b, in, &c->bulk);
    return 1;
  }
  if (c->req->version != 1 && c->req->version != WD_PROTOCOL)
    return 0;  /* refused on the loop, its extents unread */
  return wd_bulk_decode(b, in, &c->bulk);
}

void wd_route(wd_req *c)
{
  wd_server *s = c->call->srv;
  if (c->dec_code != 0) {
    s->failed++;
    return wd_reply_error(c, c->dec_code, "%s", c->dec_msg);
  }
  if (c->req == NULL) {  /* decoded while closing: nobody to answer */
    wd_req_clear(c);
    return wd_front_recv(c);
  }
  const Wave__V1__Request *rq = c->req;
  c->req_id = rq->id;
  const rt_route *rt = rt_find(rq->body_case);
  if (rt != NULL && (rt->flags & RT_DECODED))
    return rt_decoded(c, rt);
  if (c->bulk.reply != NULL)  /* refused on the decode thread */
    return rt_send_decoded(c);
  char msg[200];
  int code = rt_gate(c, rt, 1, msg, sizeof msg);
  if (code != 0) {
    s->failed++;
    return wd_reply_error(c, code, "%s", msg);
  }
  if (rt == NULL)
    return rt_unknown(c, rq);
  rt->handle(c, rq);
}
