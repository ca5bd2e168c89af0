/* route.c - a decoded request on the loop thread: the route table (body ->
 * handler + flags) and the gates, applied once, before any handler runs:
 * the decode's own answer, the version, the connection's share of the
 * contexts (BUSY), and stopping (SHUTDOWN for work).  The handlers are one
 * file per feature: rq/reduce.c, rq/hash.c (with rq/park.c), rq/status.c.
 *
 * Versions: this daemon speaks protocol 2 (WD_PROTOCOL).  A version-1
 * request is served as before, except a version-1 hash submit (rq/hash.c).
 */
#include <stddef.h>

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
  RT_WORK = 1 << 0,  /* queues device work: refused SHUTDOWN once stopping */
  RT_POLL = 1 << 1,  /* a JobRequest: with wait_ms it parks, freeing its
                      * context, so it is not held to the connection's
                      * share */
};

typedef struct rt_route {
  Wave__V1__Request__BodyCase body;
  unsigned flags;
  void (*handle)(wd_req *c, const Wave__V1__Request *rq);
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

/* The bodies the loop handles.  Stream and region requests are answered
 * on the decode threads (bulk/decode.c) and arrive with bulk.reply set. */
static const rt_route rt_table[] = {
  {WAVE__V1__REQUEST__BODY_REDUCE, RT_WORK, rt_reduce},
  {WAVE__V1__REQUEST__BODY_STATUS, 0, rt_status},
  {WAVE__V1__REQUEST__BODY_HASH, RT_WORK, rt_hash},
  {WAVE__V1__REQUEST__BODY_JOB, RT_POLL, rt_job},
  {WAVE__V1__REQUEST__BODY_CANCEL, 0, rt_cancel},
  {WAVE__V1__REQUEST__BODY_PACKS, 0, rt_packs},
  {WAVE__V1__REQUEST__BODY_JOBS, 0, rt_jobs},
  {WAVE__V1__REQUEST__BODY_STREAM_COMMIT, RT_WORK, rt_stream_commit},
};

static const rt_route *rt_find(Wave__V1__Request__BodyCase body)
{
  for (size_t i = 0; i < sizeof rt_table / sizeof rt_table[0]; i++)
    if (rt_table[i].body == body)
      return &rt_table[i];
  return NULL;
}

/* A request the decode thread answered (a stream or region request): send
 * it; a registration's pins start once its answer is on its way. */
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
  if (c->bulk.reply != NULL)  /* answered on the decode thread */
    return rt_send_decoded(c);
  const Wave__V1__Request *rq = c->req;
  c->req_id = rq->id;
  if (rq->version != 1 && rq->version != WD_PROTOCOL) {
    s->failed++;
    return wd_reply_error(c, WAVE_EVERSION, "protocol version %u; this "
                          "daemon speaks version %u (and version 1 without "
                          "hash submits)", rq->version, WD_PROTOCOL);
  }
  c->version = rq->version;
  const rt_route *rt = rt_find(rq->body_case);
  unsigned flags = rt != NULL ? rt->flags : 0;
  /* its connection holds its share of the contexts already (front.c,
   * peer.c); a poll that will park frees its context */
  int parks = (flags & RT_POLL) && rq->job != NULL && rq->job->wait_ms > 0;
  wd_front_extra(c);
  if (!parks && c->over &&
      wd_peers_held(s->fe->peers, c->pipe) > 2 * wd_front_peer_cap(s->fe)) {
    s->failed++;
    return wd_reply_error(c, WAVE_EBUSY, "this connection has more than %u "
                          "requests in flight (2 x limits.max_peer_requests);"
                          " wait for their replies",
                          2 * wd_front_peer_cap(s->fe));
  }
  if ((flags & RT_WORK) && s->state >= WD_SV_STOPPING) {
    s->failed++;
    return wd_reply_error(c, WAVE_ESHUTDOWN, "wavedd is shutting down");
  }
  if (rt == NULL)
    return rt_unknown(c, rq);
  rt->handle(c, rq);
}
