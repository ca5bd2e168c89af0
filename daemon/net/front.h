/* front.h - the nng side of the request socket (net/front.c): the REP
 * contexts and their pool, and the reply primitives every handler answers
 * through.  Loop thread unless said otherwise.
 *
 * wd_front is what net/ keeps of the server: the socket, the contexts,
 * the connections, the inbox, and the few things server.c hands it (the
 * config, the decode pool, the bulk tables, the wake-up, the hooks).  It
 * sees nothing else of wd_server.
 */
#ifndef WD_NET_FRONT_H
#define WD_NET_FRONT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <nng/nng.h>
#include <uv.h>

#include "daemon/config.h"
#include "daemon/net/listen.h"
#include "daemon/net/peer.h"
#include "daemon/net/principal.h"
#include "daemon/net/req.h"
#include "proto/wave.pb-c.h"
#include "wave/error.h"

/* The handler's half of every context (server.c fills it): size bytes,
 * zeroed, allocated with the context; init when the context is made,
 * clear when wd_req_clear frees what the request holds.  decode: on the
 * decode thread, once c->req is unpacked and authenticated, the route's
 * side there (rq/route.c, wd_route_decode): the gates and body of a row
 * that runs there, or a reduction's extents; 1 when it took the request's
 * bulk parts, as wd_bulk_decode returns. */
typedef struct wd_front_up {
  size_t size;
  void (*init)(void *arg, wd_req *c);
  void (*clear)(wd_req *c);
  int (*decode)(wd_req *c, const wd_bulk_in *in);
  void *arg;
} wd_front_up;

struct wd_front {
  /* given by server.c (wd_front_new) */
  uv_loop_t *loop;
  const wd_config *cfg;    /* the serving config (wd_front_reconfigure) */
  wd_pool *pool;           /* decode threads */
  wd_bulk *bulk;           /* regions and streams */
  uv_async_t *wake;        /* the loop's wake-up: inbox and closed pipes */
  uint64_t *failed;        /* wd_reply_fail counts a failed request here */
  wd_front_up up;
  /* nng's thread, a connection closed: what it held above net/ goes
   * (regions, streams) */
  void (*pipe_gone)(void *arg, uint32_t pipe);
  void *pipe_gone_arg;

  pthread_mutex_t mu;      /* the inbox */
  wv_qnode inbox;          /* wd_req.inq */
  nng_socket sock;
  int sock_open;
  int listening;           /* the socket is up: new contexts receive */
  _Atomic int closing;     /* final close under way: nng callbacks stop */
  _Atomic int sock_stuck;  /* nng_close did not return (front.c): this
                              front stays allocated until the process ends */
  wd_listeners *lst;
  wd_gone gone;            /* closed connections, for the loop */
  wd_peers *peers;         /* per-connection records (daemon/net/peer.h) */
  uv_timer_t sweep;        /* closes idle connections */
  int sweep_on;
  wv_qnode reqs;           /* every context: wd_req.all (WD_REQ_OF) */
  size_t n_reqs;           /* contexts that are not retiring */
  size_t n_parked;         /* of them, parked on a job */
  size_t n_extra;          /* of them, beyond their connection's share */
  /* received and not yet answered (decoding, queued, served, or its reply
   * leaving), and when the last request came in: what a stop waits for
   * (wd_front_quiet) */
  _Atomic unsigned busy;
  _Atomic uint64_t last_in_ms;
  /* decoded bytes of big requests handed to a decode thread to be freed,
   * not freed yet (net/req.c) */
  _Atomic size_t trash;
};

/* A front with no socket yet; fe->failed, up, pipe_gone and pipe_gone_arg
 * are the caller's to set before wd_front_listen. */
int wd_front_new(uv_loop_t *loop, const wd_config *cfg, wd_pool *pool,
                 wd_bulk *bulk, uv_async_t *wake, wd_front **out,
                 wave_error *err);
int wd_front_listen(wd_front *fe, wave_error *err);
/* Serve with cfg's limits from now on (the socket's size cap too). */
void wd_front_reconfigure(wd_front *fe, const wd_config *cfg);
int wd_front_add(wd_front *fe, wave_error *err);  /* one more receiving ctx */
void wd_front_send(wd_req *c, nng_msg *m);
void wd_front_recv(wd_req *c);                    /* back to receiving */
void wd_front_extra(wd_req *c);    /* a context for one over its share */
void wd_front_unextra(wd_req *c);
void wd_front_retire(wd_req *c);                  /* close and free */
void wd_front_inbox(wd_front *fe, wd_req *c);     /* any thread: to the loop */
/* Loop: the contexts the inbox holds now to the tail of `into` (linked
 * by wd_req.inq); the inbox is empty after. */
void wd_front_take(wd_front *fe, wv_qnode *into);
/* Loop: one taken from the inbox.  A retiring one is closed and freed (1);
 * 0: a request to route. */
int wd_front_retired(wd_req *c);
/* Loop, after the close: nobody is left to answer c; drop what it holds. */
void wd_front_drop(wd_req *c);
/* Clear every context's request (before the devices go: a region released
 * here may ask its device to unpin it). */
void wd_front_clear_all(wd_front *fe);
void wd_front_close(wd_front *fe);
void wd_front_free(wd_front *fe);
/* The connection's ipc peer (uid, pid; -1 when unknown or not ipc):
 * 0, or -1 when the pipe is gone.  For job ownership. */
int wd_front_peer(wd_front *fe, uint32_t pipe, int *uid, int *pid);
/* Loop: no request received and unanswered, and none came in for the
 * last ms (the pipes are drained): a stopping daemon may close. */
int wd_front_quiet(const wd_front *fe, unsigned ms);
/* limits.max_peer_requests, bounded by a quarter of the pool */
unsigned wd_front_peer_cap(const wd_front *fe);

/* Pack r (its envelope: the request's id and version) and send it; the
 * request is cleared first (net/req.c). */
void wd_reply(wd_req *c, Wave__V1__Response *r);
void wd_reply_error(wd_req *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* wd_reply_error of err, counted as a failed request.  Both count the
 * reply as a refusal (wd_stats_request_error): nothing ran. */
void wd_reply_fail(wd_req *c, const wave_error *err);
/* The same for a job a device ran (or ended) that failed: counted as a
 * failed request and an error reply, not a refusal (the job's outcome is
 * counted by wd_stats_job). */
void wd_reply_job_fail(wd_req *c, const wave_error *err);

#endif
