/* server_int.h - the request side's shared state, for server.c (lifecycle,
 * the loop's wake-up) and rq/ (route and the handlers): the server and the
 * handler's half of a request context (wd_call).  net/ sees neither: it
 * has its own state (wd_front, net/front.h) and its half of each context
 * (wd_req, net/req.h), and wd_call rides along with it, opaque there.
 * Nobody else includes it (docs/hacking.md).
 */
#ifndef WD_SERVER_INT_H
#define WD_SERVER_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <uv.h>

#include "daemon/config.h"
#include "daemon/exec/device.h"
#include "daemon/exec/health.h"
#include "daemon/exec/work.h"
#include "daemon/jobs/hashjob.h"
#include "daemon/jobs/packprep.h"
#include "daemon/rq/park.h"
#include "daemon/server.h"
#include "workers/worker.h"
#include "core/queue.h"

typedef struct wd_front wd_front;
typedef struct wd_pool wd_pool;
typedef struct wd_bulk wd_bulk;
typedef struct wd_readers wd_readers;
typedef struct wd_req wd_req;

/* The handler's half of a request context: what rq/ attaches to a
 * request.  Allocated, zeroed, with its wd_req (c->call); server.c sets
 * srv and ctx. */
typedef struct wd_call {
  wd_server *srv;
  wd_req *ctx;             /* its net half */
  wv_span *spans;          /* reduction chunks, pointing into the request */
  wd_work work;            /* the reduction ... */
  wv_reduce_job job;
  wv_reduce_out out;       /* ... and its result */
  int finite;              /* ReduceResult.finite (FINITE_*) */
  int moves_input;         /* its device moves the input (caps without
                              reads_host_memory): out.transfer_s is its
                              transfer phase (rq/reduce.c) */
  struct wd_slices *slices; /* a big reduction's slices (rq/reduce.c) */
  wd_waiter wait;          /* parked: on which job, how to answer */
} wd_call;

struct wd_server {
  uv_loop_t *loop;
  const wd_config *cfg;
  const wd_packs *packs;
  wd_device **devs;
  size_t n_devs;
  wd_jobs *jobs;
  wd_packstate *packstate; /* device x pack (jobs/packstate.h) */
  wd_pool *pool;           /* decode threads */
  wd_bulk *bulk;           /* regions and streams */
  wd_readers *readers;     /* the reader pool and the devices' staging
                              rings (bulk/readers.h): the file jobs' and
                              the copy regions' reads */
  wd_dev_hooks dev_hooks;  /* the devices' open and close: the rings */
  wd_front *fe;            /* the socket, its contexts and connections */
  uint64_t instance;       /* random per start (getrandom) */
  wd_prep *preps;          /* n_devs * packs->n */
  size_t preps_left;       /* not yet come back */
  int serving;             /* wd_server_serving: the probes answer */
  wd_sv_state state;       /* the lifecycle (server.h); loop thread */
  _Atomic int stopping;    /* state >= STOPPING, for the gates on the
                            * decode threads (rq/route.c) */
  struct sv_watch {         /* wd_server_watch: each state move */
    void (*fn)(void *arg);
    void *arg;
  } watch[WD_SV_WATCHERS];
  int was_ready;           /* WD_SV_READY was reached: StatusReply.ready
                            * stays true while stopping, as it always did */

  uv_async_t wake;
  uv_signal_t sigint, sigterm, sigusr1;
  uv_timer_t tick;
  uint64_t linger_at;        /* uv_now when LINGER began */
  int handles;             /* wake, signals, tick initialised */

  pthread_mutex_t mu;      /* the completion queue */
  wv_qnode done;           /* ended items: wd_work.doneq (sv_post) */

  unsigned reduce_inflight;
  uint64_t t0;
  uint64_t served, failed, cancelled;
  wd_health *health;       /* the health thread (exec/health.h) */
};

#endif
