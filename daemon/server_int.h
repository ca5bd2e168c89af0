/* server_int.h - the request side's shared state: the server and its
 * request contexts, for server.c (lifecycle, the loop's wake-up), net/
 * (front.c: nng contexts and replies; req.c: decode) and rq/ (route and
 * the handlers).  Nobody else includes it (docs/hacking.md).
 */
#ifndef WD_SERVER_INT_H
#define WD_SERVER_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <nng/nng.h>
#include <protobuf-c/protobuf-c.h>
#include <uv.h>

#include "daemon/bulk/decode.h"
#include "daemon/config.h"
#include "daemon/net/pool.h"
#include "daemon/exec/device.h"
#include "daemon/jobs/hashjob.h"
#include "daemon/net/listen.h"
#include "daemon/jobs/packprep.h"
#include "daemon/net/peer.h"
#include "daemon/net/principal.h"
#include "daemon/rq/park.h"
#include "daemon/server.h"
#include "daemon/exec/work.h"
#include "proto/wave.pb-c.h"
#include "workers/worker.h"

#define WD_PROTOCOL 2        /* Request.version this daemon speaks */

enum { RQ_IDLE, RQ_RECV, RQ_WORK, RQ_SEND, RQ_RETIRE };

typedef struct wd_req wd_req;
struct wd_req {
  wd_server *srv;
  nng_ctx ctx;
  nng_aio *aio;
  int state;               /* RQ_*; handed over through the inbox mutex */
  int retire;              /* close this context once its reply is sent */
  uint32_t pipe;           /* the request's connection (0: none held) */
  int over;                /* its pipe holds more than its share: */
  int extra;               /* ... so it brought a context of its own */
  int sending;             /* its reply counts in the pipe's sending */
  wd_req *next;            /* inbox link */
  wd_req *all_prev, *all_next;  /* every context (loop thread) */
  nng_msg *msg;            /* the received request, until decoded */
  Wave__V1__Request *req;  /* decoded; alive until the reply is packed */
  ProtobufCAllocator pb;   /* decodes req within pb_budget bytes */
  size_t pb_used, pb_budget;
  int pb_refused;          /* the decode ran out of budget */
  uint64_t req_id;
  unsigned version;        /* the request's protocol version */
  /* who sent it (daemon/net/principal.h), set on the decode thread before dispatch:
   * "uid:N" (ipc) or "pipe:N" (tcp); a request a token authenticated gets
   * "token:NAME" instead (auth.c) */
  char principal[WD_PRINCIPAL_MAX];
  wv_span *spans;          /* reduction chunks, pointing into req */
  wd_work work;            /* the reduction ... */
  wv_reduce_job job;
  wv_reduce_out out;       /* ... and its result */
  int finite;              /* ReduceResult.finite (FINITE_*) */
  struct wd_slices *slices; /* a big reduction's slices (rq/reduce.c) */
  uv_timer_t timer;        /* parked JobRequest (rq/park.c) */
  wd_waiter wait;          /* parked: on which job, how to answer */
  wd_pool_item item;       /* decode thread hand-off (net/pool.h) */
  int dec_code;            /* the decode failed: this error ... */
  char dec_msg[200];       /* ... with this message */
  wd_bulk_req bulk;        /* framed, stream and region parts (bulk/decode.h) */
};

struct wd_server {
  uv_loop_t *loop;
  const wd_config *cfg;
  const wd_packs *packs;
  wd_device **devs;
  size_t n_devs;
  wd_jobs *jobs;
  wd_pool *pool;           /* decode threads */
  wd_bulk *bulk;           /* regions and streams */
  uint64_t instance;       /* random per start (getrandom) */
  wd_prep *preps;          /* n_devs * packs->n */
  size_t preps_left;       /* not yet come back */
  int ready, listening;

  uv_async_t wake;
  uv_signal_t sigint, sigterm, sigusr1;
  uv_timer_t tick;
  int handles;             /* wake, signals, tick initialised */

  pthread_mutex_t mu;      /* the two queues below */
  wd_req *inbox, **inbox_tail;
  wd_work *done, **done_tail;

  nng_socket sock;
  int sock_open;
  wd_listeners *lst;
  wd_gone gone;            /* closed connections, for the loop */
  /* nng's thread, a connection closed: what it held above net/ goes
   * (regions, streams); set by server.c */
  void (*pipe_gone)(void *arg, uint32_t pipe);
  void *pipe_gone_arg;
  wd_peers *peers;         /* per-connection records (daemon/net/peer.h) */
  uv_timer_t sweep;        /* closes idle connections */
  int sweep_on;
  wd_req *reqs;            /* every context */
  size_t n_reqs;           /* contexts that are not retiring */
  size_t n_parked;         /* of them, parked on a job */
  size_t n_extra;          /* of them, beyond their connection's share */

  _Atomic int closing;     /* final close under way: nng callbacks stop */
  int stopping;            /* SIGTERM seen: no new work */
  int finishing, closed;
  unsigned reduce_inflight;
  uint64_t t0;
  uint64_t served, failed;
};

#endif
