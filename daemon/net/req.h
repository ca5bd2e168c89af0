/* req.h - a request context, net's half (net/front.c receives and sends
 * it, net/req.c decodes and clears it): the REP context, the received
 * bytes, the connection it came on, the decode budget and what the decode
 * made (the Request, its bulk parts).  The handler's half (what rq/
 * attaches: the reduction's work item, a parked poll's waiter) is
 * server_int.h's wd_call, reached through `call`: net/ never looks inside
 * it, and allocates it with the context (wd_front_up, front.h).
 */
#ifndef WD_NET_REQ_H
#define WD_NET_REQ_H

#include <stdint.h>

#include <nng/nng.h>
#include <protobuf-c/protobuf-c.h>
#include <uv.h>

#include "daemon/bulk/decode.h"
#include "daemon/net/arena.h"
#include "daemon/net/pool.h"
#include "daemon/net/principal.h"
#include "core/queue.h"
#include "proto/wave.pb-c.h"

/* The context whose wd_req.all is node n (wd_front.reqs). */
#define WD_REQ_OF(n) WV_Q_ENTRY(n, wd_req, all)

#define WD_PROTOCOL 2        /* Request.version this daemon speaks */

enum { RQ_IDLE, RQ_RECV, RQ_WORK, RQ_SEND, RQ_RETIRE };

/* The stages a request passes, stamped (CLOCK_MONOTONIC ns) for the
 * request histogram and the slow request log (wd_req_answered): nng
 * handed it over, a decode thread took it, its decode ended, the loop
 * took it. */
enum { WD_RQT_RECV, WD_RQT_DECODE, WD_RQT_DECODED, WD_RQT_LOOP, WD_RQT_N };
/* A reduction's stamps (wd_req.job_t): submitted to the device, began
 * there, its end handed to the loop, the loop took it. */
enum { WD_JT_SUBMIT, WD_JT_START, WD_JT_END, WD_JT_TAKEN, WD_JT_N };

typedef struct wd_front wd_front;
typedef struct wd_req wd_req;
struct wd_call;              /* the handler's half (server_int.h) */

struct wd_req {
  wd_front *fe;            /* the socket's state (front.h) */
  struct wd_call *call;    /* the handler's half, allocated with this */
  nng_ctx ctx;
  nng_aio *aio;
  int state;               /* RQ_*; handed over through the inbox mutex */
  int retire;              /* close this context once its reply is sent */
  uint32_t pipe;           /* the request's connection (0: none held) */
  int over;                /* its pipe holds more than its share: */
  int extra;               /* ... so it brought a context of its own */
  int sending;             /* its reply counts in the pipe's sending */
  wv_qnode inq;            /* inbox link */
  wv_qnode all;            /* every context (loop thread) */
  nng_msg *msg;            /* the received request, until decoded */
  Wave__V1__Request *req;  /* decoded; alive until the reply is packed */
  ProtobufCAllocator pb;   /* decodes req into arena ... */
  wd_arena arena;          /* ... which holds all of it, within its limit
                            * (the decode budget), freed whole */
  uint64_t req_id;
  unsigned version;        /* the request's protocol version */
  /* who sent it (daemon/net/principal.h), set on the decode thread before
   * dispatch: "uid:N" (ipc) or "pipe:N" (tcp); a request a token
   * authenticated gets "token:NAME" instead (auth.c) */
  char principal[WD_PRINCIPAL_MAX];
  uv_timer_t timer;        /* the context's loop timer (rq/park.c's wait),
                            * closed with it */
  wd_pool_item item;       /* decode thread hand-off (net/pool.h) */
  int dec_code;            /* the decode failed: this error ... */
  char dec_msg[200];       /* ... with this message */
  wd_bulk_req bulk;        /* framed, stream and region parts (bulk/decode.h) */
  uint64_t t_ns[WD_RQT_N]; /* when it passed each stage (0: not) */
  /* its reduction's WD_JT_* stamps, CLOCK_MONOTONIC s (rq/reduce.c; 0:
   * none), which split the serve stage in the slow request log */
  double job_t[WD_JT_N];
  uint64_t park_ns;        /* when it parked (rq/park.c; 0: not parked) */
  uint64_t parked_ns;      /* how long it was parked: the client asked to
                            * wait, so its stages leave that time out */
  const char *what;        /* its body's field name ("reduce"), set when the
                            * loop takes it; NULL: not decoded */
};

/* 1: the received message m is a big item for the decode pool (pool.h):
 * its protobuf part is 16 KiB or more, so its decode may take ms. */
int wd_req_big(nng_msg *m);

/* Decode thread: unpack, authenticate and take the bulk parts of the
 * received message (c->msg, freed or kept), or set c->dec_code.  Touches
 * only c and what is constant or locked (cfg, the bulk tables). */
void wd_req_decode(wd_req *c);
/* Free what the request holds (decoded message, bulk parts, and what the
 * handler's half holds: wd_front_up.clear): once its reply is packed, or
 * when nobody is left to answer. */
void wd_req_clear(wd_req *c);

/* Now, CLOCK_MONOTONIC ns: the stamps' clock. */
uint64_t wd_req_now_ns(void);
/* Loop, as c's reply leaves at now_ns: its stages into the request
 * histogram (wd_stats_request), and a warning line with the time in each
 * when it took slow_ms or more since nng handed it over (0: never), so an
 * operator sees where a slow answer waited. */
void wd_req_answered(const wd_req *c, unsigned slow_ms, uint64_t now_ns);

#endif
