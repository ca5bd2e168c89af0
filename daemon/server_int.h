/* server_int.h - the request side's shared state: the server and its
 * request contexts, for server.c (lifecycle, the loop's wake-up), front.c
 * (nng contexts), dispatch.c (decode, route, the handlers) and reply.c
 * (building Responses).  Nobody outside those four includes it.
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
  /* who sent it (daemon/principal.h), set on the decode thread before dispatch:
   * "uid:N" (ipc) or "pipe:N" (tcp); a request a token authenticated gets
   * "token:NAME" instead (auth.c) */
  char principal[WD_PRINCIPAL_MAX];
  wv_span *spans;          /* reduction chunks, pointing into req */
  wd_work work;            /* the reduction ... */
  wv_reduce_job job;
  wv_reduce_out out;       /* ... and its result */
  int finite;              /* ReduceResult.finite (FINITE_*) */
  uv_timer_t timer;        /* parked JobRequest */
  wd_hjob *waiting;        /* parked on this job */
  uint64_t seg_offset;     /* the parked request's segment page */
  uint32_t seg_limit;
  wd_req *wait_next;
  wd_pool_item item;       /* decode thread hand-off (daemon/decode.h) */
  int dec_code;            /* the decode failed: this error ... */
  char dec_msg[200];       /* ... with this message */
  wd_bulk_req bulk;        /* framed, stream and region parts (bulk.h) */
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
  wd_peers *peers;         /* per-connection records (daemon/peer.h) */
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

/* front.c */
int wd_front_listen(wd_server *s, wave_error *err);
int wd_front_add(wd_server *s, wave_error *err);  /* one more receiving ctx */
void wd_front_send(wd_req *c, nng_msg *m);
void wd_front_recv(wd_req *c);                    /* back to receiving */
void wd_front_extra(wd_req *c);    /* loop: a context for one over its share */
void wd_front_unextra(wd_req *c);
void wd_front_retire(wd_req *c);                  /* loop: close and free */
void wd_front_close(wd_server *s);
void wd_front_free(wd_server *s);
void wd_front_inbox(wd_server *s, wd_req *c);     /* any thread: to the loop */
void wd_req_clear(wd_req *c);
/* The connection's ipc peer (uid, pid; -1 when unknown or not ipc):
 * 0, or -1 when the pipe is gone.  For job ownership. */
int wd_front_peer(wd_server *s, uint32_t pipe, int *uid, int *pid);
/* limits.max_peer_requests, bounded by a quarter of the pool */
unsigned wd_front_peer_cap(const wd_server *s);

/* dispatch.c */
void wd_decode_cb(wd_pool_item *it);              /* decode thread, then loop */
void wd_dispatch(wd_req *c);
void wd_unpin(void *arg, wd_region *r, unsigned slot);  /* region.h's */
void wd_job_ended(void *arg, wd_hjob *j);         /* answer its waiters */
void wd_unpark(wd_req *c);
void wd_answer_parked(wd_server *s);              /* stop: answer them all */
void wd_pipes_gone(wd_server *s);   /* loop: cancel closed connections' jobs */

/* reply.c */
void wd_reply(wd_req *c, Wave__V1__Response *r);
void wd_reply_error(wd_req *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void wd_reply_reduce(wd_req *c);
void wd_reply_status(wd_req *c);
void wd_reply_packs(wd_req *c);
void wd_reply_job(wd_req *c, const wd_job_view *v);
void wd_reply_jobs(wd_req *c, const wd_job_view *v, size_t n);

#endif
