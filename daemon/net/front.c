/* front.c - the nng side: the REP socket, its contexts and their state
 * machine, in the manner of nng's demo/async/server.c: RECV -> (hand to
 * a decode thread, then the loop) -> SEND -> RECV.  The callback runs on
 * nng's threads and never decodes, waits or locks for long: it hands the
 * context to a decode thread (net/pool.h, net/req.c), which unpacks it and then
 * appends it to the inbox and wakes the loop (wd_front_inbox).  A closed
 * connection's regions and streams are dropped from nng's pipe callback,
 * through the hook server.c sets (s->pipe_gone): this side calls nothing
 * above it.  The reply primitives are here too (wd_reply, wd_reply_error):
 * a handler builds its Response, this file packs it (proto/wire.c), frees
 * the request (net/req.c) and sends.  Each request is stamped as nng, a
 * decode thread and the loop pass it on (req.h), and its reply's leaving
 * records the stages (wd_req_answered: the request histogram and the slow
 * request log).
 *
 * The receive pool: limits.contexts contexts receive at all times.  A
 * context holds at most one request, so that bounds the requests being
 * served; but a JobRequest that waits for its job (parks, up to
 * limits.max_wait_ms) would hold one for seconds, and 64 waiting clients
 * would stall everyone else.  So when a request parks, the loop opens a
 * fresh context in its place (wd_front_add), and a context whose reply
 * leaves the pool above its size retires after sending (RQ_RETIRE: the
 * loop closes and frees it).  limits.max_parked bounds the waiting
 * requests, and with them the extra contexts; beyond it a JobRequest is
 * answered at once.
 *
 * Oversized requests: nng closes the connection of a message above the
 * socket's NNG_OPT_RECVMAXSZ, which a client sees only as a timeout.  So the
 * socket accepts up to twice limits.max_request_bytes (at least the limit
 * plus 1 MiB) and a decode thread answers anything above the limit with
 * TOOBIG;
 * only requests beyond that hard cap are dropped by nng.
 *
 * Per connection (daemon/net/peer.c): each received request is counted on its
 * pipe.  A pipe holds at most its share (`cap`, wd_front_peer_cap) of the
 * pool: a request beyond it brings a fresh context into the pool (like a
 * parked one, RQ_RETIRE once answered), so its own requests pile up, not
 * everyone's; beyond 2 * cap it is answered BUSY (rq/route.c); a peer that
 * holds 4 * cap while cap of its replies wait to leave (pipelining, not
 * reading) has its pipe closed.  Every send has
 * a timeout (limits.send_timeout_ms): a reply that cannot leave within it
 * closes that pipe (nng_pipe_close), which frees every context queued on
 * it, so a peer that never reads loses its own connection, not everyone's
 * service.  A timer closes pipes that hold nothing and completed no message
 * for limits.idle_timeout_ms (a peer stalled inside a partial message), and
 * nng's pipe event closes pipes beyond limits.max_connections.
 *
 * The final close is bounded (ft_close_bounded): nng 1.5.2, Debian 12's,
 * races a pipe's close against a reply leaving on it (rep0 hands the next
 * queued reply to a send aio that its close has just stopped; nng's later
 * releases reworked this, nanomsg/nng#1543 and #1813).  Seen about once in
 * ten ASan runs of test_front's never-reading peer: the reaper waits for a
 * task that never starts, and nng_close with it.  The daemon gives the close
 * FT_CLOSE_WAIT_MS, then says so and stops without it.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>

#include "daemon/log.h"
#include "daemon/net/front.h"
#include "daemon/net/req.h"
#include "daemon/stats.h"
#include "core/base.h"
#include "core/testhook.h"
#include "core/thread.h"
#include "proto/wire.h"

/* The name of a Request's body field ("reduce"), static, for logs. */
static const char *ft_body_name(int body_case)
{
  const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(
      &wave__v1__request__descriptor, (unsigned)body_case);
  return f != NULL ? f->name : "request";
}

void wd_front_inbox(wd_front *s, wd_req *c)
{
  pthread_mutex_lock(&s->mu);
  wv_q_push(&s->inbox, &c->inq);
  pthread_mutex_unlock(&s->mu);
  uv_async_send(s->wake);
}

void wd_front_take(wd_front *s, wv_qnode *into)
{
  pthread_mutex_lock(&s->mu);
  wv_q_move(&s->inbox, into);
  pthread_mutex_unlock(&s->mu);
  uint64_t now = wd_req_now_ns();
  for (wv_qnode *n = into->next; n != into; n = n->next) {
    wd_req *c = WV_Q_ENTRY(n, wd_req, inq);
    c->t_ns[WD_RQT_LOOP] = now;
    c->what = c->req == NULL ? NULL
              : ft_body_name(c->req->body_case);
  }
}

int wd_front_retired(wd_req *c)
{
  if (c->state != RQ_RETIRE)
    return 0;
  wd_front_retire(c);
  return 1;
}

void wd_front_drop(wd_req *c)
{
  if (c->state == RQ_RETIRE)
    return;
  if (c->msg != NULL)
    nng_msg_free(c->msg);
  c->msg = NULL;
  wd_req_clear(c);
}

void wd_front_clear_all(wd_front *s)
{
  for (wv_qnode *n = s->reqs.next; n != &s->reqs; n = n->next)
    wd_req_clear(WD_REQ_OF(n));
}

int wd_front_new(uv_loop_t *loop, const wd_config *cfg, wd_pool *pool,
                 wd_bulk *bulk, uv_async_t *wake, wd_front **out,
                 wave_error *err)
{
  wd_front *s = calloc(1, sizeof *s);
  if ((*out = s) == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  s->loop = loop;
  s->cfg = cfg;
  s->pool = pool;
  s->bulk = bulk;
  s->wake = wake;
  wv_q_init(&s->inbox);
  wv_q_init(&s->reqs);
  pthread_mutex_init(&s->mu, NULL);
  wd_gone_init(&s->gone);
  return 0;
}

/* The socket's size cap: twice limits.max_request_bytes, at least the
 * limit plus 1 MiB (see "Oversized requests" above). */
static size_t ft_recv_cap(const wd_limits *lim)
{
  return lim->max_request_bytes +
         (lim->max_request_bytes > (1u << 20) ? lim->max_request_bytes
                                              : (1u << 20));
}

void wd_front_reconfigure(wd_front *s, const wd_config *cfg)
{
  size_t cap = ft_recv_cap(&cfg->limits);
  s->cfg = cfg;
  if (s->sock_open)
    nng_socket_set_size(s->sock, NNG_OPT_RECVMAXSZ, cap);
  wd_listeners_set_cap(s->lst, cap);
}

static uint64_t ft_now_ms(void)
{
  return wd_req_now_ns() / 1000000u;  /* the request stamps' clock */
}

/* nng's threads: the loop closes it (ft_sweep). */
static void ft_doom_pipe(wd_front *s, uint32_t id)
{
  wd_peers_doom(s->peers, id);
}

static void ft_close_pipe(uint32_t id)
{
  nng_pipe p = NNG_PIPE_INITIALIZER;
  p.id = id;
  nng_pipe_close(p);
}

unsigned wd_front_peer_cap(const wd_front *s)
{
  const wd_limits *lim = &s->cfg->limits;
  unsigned q = lim->contexts / 2 > 2 ? lim->contexts / 2 : 2;
  return lim->max_peer_requests < q ? lim->max_peer_requests : q;
}

int wd_front_peer(wd_front *s, uint32_t pipe, int *uid, int *pid)
{
  return wd_peers_who(s->peers, pipe, uid, pid);
}

static void ft_recv(wd_req *c)
{
  c->state = RQ_RECV;
  nng_aio_set_timeout(c->aio, NNG_DURATION_INFINITE);
  nng_ctx_recv(c->ctx, c->aio);
}

/* A reply has left (or failed): the context no longer counts on its pipe;
 * one that could not leave in time closes that pipe. */
static void ft_sent(wd_req *c, int rv)
{
  wd_front *s = c->fe;
  if (c->pipe == 0)
    return;

  if (rv == NNG_ETIMEDOUT) {
    wd_warn("closing connection %u: a reply could not leave in %u ms "
            "(limits.send_timeout_ms; the peer does not read)", c->pipe,
            s->cfg->limits.send_timeout_ms);
    ft_doom_pipe(s, c->pipe);
  }
  wd_peers_end(s->peers, c->pipe, c->sending, ft_now_ms());
  c->sending = 0;
  c->pipe = 0;
}

/* Loop: a request beyond its connection's share gets a context of its own
 * in the pool (so the others keep theirs). */
void wd_front_extra(wd_req *c)
{
  wd_front *s = c->fe;
  if (!c->over || c->extra)
    return;
  wave_error err = {0};
  if (wd_front_add(s, &err) != 0)
    return;
  c->extra = 1;
  s->n_extra++;
}

void wd_front_unextra(wd_req *c)
{
  if (c->extra)
    c->fe->n_extra--;
  c->extra = 0;
}

static void ft_aio_cb(void *arg)
{
  wd_req *c = arg;
  wd_front *s = c->fe;
  int rv = nng_aio_result(c->aio);
  switch (c->state) {
  case RQ_RECV:
    if (rv != 0) {
      if (rv == NNG_ECLOSED || rv == NNG_ECANCELED || atomic_load(&s->closing)) {
        c->state = RQ_IDLE;
        return;
      }
      ft_recv(c);  /* a transient error: keep serving */
      return;
    }
    if (atomic_load(&s->closing)) {
      nng_msg_free(nng_aio_get_msg(c->aio));
      c->state = RQ_IDLE;
      return;
    }
    c->msg = nng_aio_get_msg(c->aio);
    memset(c->t_ns, 0, sizeof c->t_ns);
    memset(c->job_t, 0, sizeof c->job_t);
    c->park_ns = c->parked_ns = 0;
    c->t_ns[WD_RQT_RECV] = wd_req_now_ns();
    uint64_t now_ms = c->t_ns[WD_RQT_RECV] / 1000000u;
    atomic_fetch_add(&s->busy, 1);  /* until its reply has left */
    atomic_store(&s->last_in_ms, now_ms);
    c->pipe = (uint32_t)nng_pipe_id(nng_msg_get_pipe(c->msg));
    wd_peers_begin(s->peers, c->pipe, now_ms);
    c->over = 0;
    {
      unsigned held = wd_peers_held(s->peers, c->pipe);
      unsigned cap = wd_front_peer_cap(s);
      if (held > 4 * cap && wd_peers_sending(s->peers, c->pipe) >= cap) {
        wd_warn("closing connection %u: %u requests in flight and %u "
                "replies it does not read", c->pipe, held,
                wd_peers_sending(s->peers, c->pipe));
        nng_msg_free(c->msg);
        c->msg = NULL;
        ft_doom_pipe(s, c->pipe);
        ft_sent(c, 0);
        atomic_fetch_sub(&s->busy, 1);  /* its pipe closes unanswered */
        ft_recv(c);
        return;
      }
      c->over = held > cap;  /* the loop adds a context for it */
    }
    c->state = RQ_WORK;
    c->item.big = wd_req_big(c->msg);  /* never ahead of a small one */
    wd_pool_push(s->pool, &c->item);  /* -> ft_decode_cb, then the loop */
    return;
  case RQ_SEND:
    if (rv != 0)  /* the client went away: the reply is ours to free */
      nng_msg_free(nng_aio_get_msg(c->aio));
    ft_sent(c, rv);
    atomic_fetch_sub(&s->busy, 1);
    if (atomic_load(&s->closing)) {
      c->state = RQ_IDLE;
      return;
    }
    if (c->retire) {
      c->state = RQ_RETIRE;
      wd_front_inbox(s, c);
      return;
    }
    ft_recv(c);
    return;
  default:
    return;
  }
}

static void ft_noop_close(uv_handle_t *h) { (void)h; }

/* nng: a connection went away (any nng thread): its regions and streams go
 * (a region in use by a job is unmapped after it), and the loop cancels
 * its attached hash jobs (daemon/net/principal.h). */
static void ft_pipe_gone(nng_pipe p, nng_pipe_ev ev, void *arg)
{
  (void)ev;
  wd_front *s = arg;
  if (atomic_load(&s->sock_stuck))  /* the server above is gone */
    return;
  wd_peers_remove(s->peers, (uint32_t)nng_pipe_id(p));
  if (s->pipe_gone != NULL)  /* its regions and streams (server.c) */
    s->pipe_gone(s->pipe_gone_arg, (uint32_t)nng_pipe_id(p));
  if (!atomic_load(&s->closing) &&
      wd_gone_add(&s->gone, (uint32_t)nng_pipe_id(p)) == 0)
    uv_async_send(s->wake);
  wd_listeners_pipe_gone(s->lst, p);
}

/* nng: a connection is joining; beyond limits.max_connections it goes. */
static void ft_pipe_new(nng_pipe p, nng_pipe_ev ev, void *arg)
{
  (void)ev;
  wd_front *s = arg;
  uint64_t u = 0, v = 0;
  int uid = -1, pid = -1;
  wd_listeners_pipe_added(s->lst, p);  /* REM_POST takes it off again */
  if (nng_pipe_get_uint64(p, NNG_OPT_IPC_PEER_UID, &u) == 0 && u <= INT32_MAX)
    uid = (int)u;
  if (nng_pipe_get_uint64(p, NNG_OPT_IPC_PEER_PID, &v) == 0 && v <= INT32_MAX)
    pid = (int)v;
  if (wd_peers_add(s->peers, (uint32_t)nng_pipe_id(p), uid, pid,
                   s->cfg->limits.max_connections, ft_now_ms()) != 0) {
    wd_warn("refusing a connection: %u are open (limits.max_connections)",
            s->cfg->limits.max_connections);
    nng_pipe_close(p);
  }
}

/* Loop: close connections that hold nothing (no request, no region, no
 * open stream) and sent nothing for limits.idle_timeout_ms. */
static void ft_sweep(uv_timer_t *t)
{
  wd_front *s = t->data;
  unsigned idle = s->cfg->limits.idle_timeout_ms;
  if (atomic_load(&s->closing))
    return;
  uint32_t ids[64];
  size_t n = wd_peers_idle(s->peers, ft_now_ms(), idle, ids, 64);
  for (size_t i = 0; i < n; i++) {
    wd_info("closing connection %u: marked above, or no complete message "
            "for %u ms (limits.idle_timeout_ms)", ids[i], idle);
    ft_close_pipe(ids[i]);
    wd_peers_remove(s->peers, ids[i]);  /* once, even before nng's event */
  }
}

static void ft_free_close(uv_handle_t *h) { free(h->data); }

/* Decode thread (a context's pool item): decode it (net/req.c), then hand
 * it to the loop. */
static void ft_decode_cb(wd_pool_item *it)
{
  wd_req *c = (wd_req *)((char *)it - offsetof(wd_req, item));
  wd_front *s = c->fe;
  c->t_ns[WD_RQT_DECODE] = wd_req_now_ns();
  if (!atomic_load(&s->closing))
    wd_req_decode(c);
  c->t_ns[WD_RQT_DECODED] = wd_req_now_ns();
  wd_front_inbox(s, c);
}

/* A new context, linked in and receiving (when the socket is up). */
int wd_front_add(wd_front *s, wave_error *err)
{
  /* the handler's half follows, at its alignment */
  size_t at = (sizeof(wd_req) + _Alignof(max_align_t) - 1) &
              ~(_Alignof(max_align_t) - 1);
  wd_req *c = calloc(1, at + s->up.size);
  if (c == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  c->fe = s;
  c->call = (struct wd_call *)((char *)c + at);
  c->item.fn = ft_decode_cb;
  int rv;
  if ((rv = nng_aio_alloc(&c->aio, ft_aio_cb, c)) != 0) {
    free(c);
    return wv_seterr(err, WAVE_EIO, "nng aio: %s", nng_strerror(rv));
  }
  if ((rv = nng_ctx_open(&c->ctx, s->sock)) != 0) {
    nng_aio_free(c->aio);
    free(c);
    return wv_seterr(err, WAVE_EIO, "nng context: %s", nng_strerror(rv));
  }
  uv_timer_init(s->loop, &c->timer);
  c->timer.data = c;
  if (s->up.init != NULL)
    s->up.init(s->up.arg, c);
  wv_q_push_head(&s->reqs, &c->all);
  s->n_reqs++;
  if (s->listening)
    ft_recv(c);
  return 0;
}

void wd_front_send(wd_req *c, nng_msg *m)
{
  wd_front *s = c->fe;
  /* above the pool's size once parked requests are counted: retire */
  if (s->n_reqs > s->cfg->limits.contexts + s->n_parked + s->n_extra) {
    c->retire = 1;
    s->n_reqs--;
  }
  wd_front_unextra(c);
  if (c->pipe != 0) {
    wd_peers_send(s->peers, c->pipe);
    c->sending = 1;
  }
  c->state = RQ_SEND;
  wd_req_answered(c, s->cfg->limits.slow_request_ms, wd_req_now_ns());
  nng_aio_set_timeout(c->aio, (nng_duration)s->cfg->limits.send_timeout_ms);
  nng_aio_set_msg(c->aio, m);
  nng_ctx_send(c->ctx, c->aio);
}

int wd_front_quiet(const wd_front *s, unsigned ms)
{
  return atomic_load(&s->busy) == 0 &&
         ft_now_ms() - atomic_load(&s->last_in_ms) >= ms;
}

void wd_front_recv(wd_req *c)
{
  atomic_fetch_sub(&c->fe->busy, 1);
  /* no reply for this request (decoded while closing) */
  if (c->pipe != 0)
    wd_peers_end(c->fe->peers, c->pipe, 0, ft_now_ms());
  c->pipe = 0;
  wd_front_unextra(c);
  ft_recv(c);
}

void wd_front_retire(wd_req *c)
{
  wd_req_clear(c);
  nng_ctx_close(c->ctx);
  nng_aio_free(c->aio);
  c->aio = NULL;
  wv_q_remove(&c->all);
  uv_close((uv_handle_t *)&c->timer, ft_free_close);
}

int wd_front_listen(wd_front *s, wave_error *err)
{
  const wd_limits *lim = &s->cfg->limits;
  size_t cap = ft_recv_cap(lim);
  /* nng starts its threads here: they inherit a mask with every signal
   * blocked, so signals reach the loop's thread */
  sigset_t old;
  wv_sigmask_block(&old);
  int rc = 0, rv;
  if ((rv = nng_rep0_open(&s->sock)) != 0) {
    rc = wv_seterr(err, WAVE_EIO, "nng rep0 socket: %s", nng_strerror(rv));
    goto out;
  }
  s->sock_open = 1;
  if (s->peers == NULL && (s->peers = wd_peers_new()) == NULL) {
    rc = wv_seterr(err, WAVE_ENOMEM, NULL);
    goto out;
  }
  /* a connection holding regions or streams is not idle (peer.h) */
  wd_peers_set_holds(s->peers, wd_bulk_holds, s->bulk);
  nng_socket_set_size(s->sock, NNG_OPT_RECVMAXSZ, cap);
  nng_pipe_notify(s->sock, NNG_PIPE_EV_ADD_PRE, ft_pipe_new, s);
  nng_pipe_notify(s->sock, NNG_PIPE_EV_REM_POST, ft_pipe_gone, s);
  uv_timer_init(s->loop, &s->sweep);
  s->sweep.data = s;
  s->sweep_on = 1;
  uv_timer_start(&s->sweep, ft_sweep, 250, 250);
  for (size_t i = 0; i < lim->contexts; i++)
    if ((rc = wd_front_add(s, err)) != 0)
      goto out;
  if ((rc = wd_listeners_start(s->loop, s->sock, s->cfg, cap,
                               wd_bulk_fdpass(s->bulk), &s->lst, err)) != 0)
    goto out;
  s->listening = 1;
  for (wv_qnode *n = s->reqs.next; n != &s->reqs; n = n->next)
    ft_recv(WD_REQ_OF(n));
out:
  wv_sigmask_restore(&old);
  return rc;
}

/* ---- the bounded final close ---------------------------------------------- */

#define FT_CLOSE_WAIT_MS 5000u

typedef struct ft_closer {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  nng_socket sock;
  int done;       /* nng_close returned */
  int abandoned;  /* the loop stopped waiting: the closer frees itself */
} ft_closer;

static void ft_closer_free(ft_closer *c)
{
  pthread_cond_destroy(&c->cv);
  pthread_mutex_destroy(&c->mu);
  free(c);
}

static void *ft_close_main(void *arg)
{
  ft_closer *c = arg;
  const char *stall = wv_test_hook("WAVED_CLOSE_STALL_MS");
  if (stall != NULL) {  /* test_front: nng_close as if it hung */
    unsigned ms = (unsigned)strtoul(stall, NULL, 10);
    struct timespec ts = {ms / 1000u, (long)(ms % 1000u) * 1000000L};
    nanosleep(&ts, NULL);
  }
  nng_close(c->sock);
  pthread_mutex_lock(&c->mu);
  c->done = 1;
  int abandoned = c->abandoned;
  pthread_cond_signal(&c->cv);
  pthread_mutex_unlock(&c->mu);
  if (abandoned)
    ft_closer_free(c);
  return NULL;
}

/* nng_close(sock) on a thread of its own, awaited up to ms: 1 when it
 * returned in time (or ran here, when no thread could start). */
static int ft_close_bounded(nng_socket sock, unsigned ms)
{
  ft_closer *c = calloc(1, sizeof *c);
  pthread_condattr_t ca;
  pthread_t t;
  if (c == NULL) {
    nng_close(sock);
    return 1;
  }
  pthread_mutex_init(&c->mu, NULL);
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&c->cv, &ca);
  pthread_condattr_destroy(&ca);
  c->sock = sock;
  sigset_t old;
  wv_sigmask_block(&old);  /* signals stay the loop's */
  int rc = pthread_create(&t, NULL, ft_close_main, c);
  wv_sigmask_restore(&old);
  if (rc != 0) {
    ft_closer_free(c);
    nng_close(sock);
    return 1;
  }
  pthread_detach(t);
  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  until.tv_sec += ms / 1000u;
  until.tv_nsec += (long)(ms % 1000u) * 1000000L;
  if (until.tv_nsec >= 1000000000L) {
    until.tv_sec++;
    until.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&c->mu);
  while (!c->done &&
         pthread_cond_timedwait(&c->cv, &c->mu, &until) != ETIMEDOUT)
    ;
  int done = c->done;
  c->abandoned = !done;
  pthread_mutex_unlock(&c->mu);
  if (done)
    ft_closer_free(c);
  return done;
}

/* A front whose socket never closed: kept here, reachable, for nng's threads
 * that may still hold it (and for LeakSanitizer, which then sees no leak). */
static wd_front *ft_stuck_front;

void wd_front_close(wd_front *s)
{
  if (s == NULL)
    return;
  atomic_store(&s->closing, 1);
  wd_listeners_close(s->lst);  /* no more listener restarts */
  if (s->sweep_on)
    uv_close((uv_handle_t *)&s->sweep, ft_noop_close);
  s->sweep_on = 0;
  /* nng first: after nng_aio_stop no callback runs for that context */
  for (wv_qnode *n = s->reqs.next; n != &s->reqs; n = n->next) {
    wd_req *c = WD_REQ_OF(n);
    if (c->aio != NULL)
      nng_aio_stop(c->aio);
  }
  for (wv_qnode *n = s->reqs.next; n != &s->reqs; n = n->next)
    nng_ctx_close(WD_REQ_OF(n)->ctx);
  wd_pool_stop(s->pool);  /* what it still held is in the inbox now */
  if (s->sock_open && !ft_close_bounded(s->sock, FT_CLOSE_WAIT_MS)) {
    wd_warn("the nng socket did not close within %u ms (nng 1.5.2 can wait "
            "forever for a connection closed while a reply was leaving: "
            "nanomsg/nng#1543); stopping without it", FT_CLOSE_WAIT_MS);
    atomic_store(&s->sock_stuck, 1);
  }
  s->sock_open = 0;
  for (wv_qnode *n = s->reqs.next; n != &s->reqs; n = n->next) {
    wd_req *c = WD_REQ_OF(n);
    if (c->aio != NULL && !atomic_load(&s->sock_stuck)) {
      nng_aio_free(c->aio);
      c->aio = NULL;
    }
    uv_close((uv_handle_t *)&c->timer, ft_noop_close);
  }
}

void wd_front_free(wd_front *s)
{
  if (s == NULL)
    return;
  if (atomic_load(&s->sock_stuck)) {  /* nng's threads may still call us */
    ft_stuck_front = s;
    return;
  }
  for (wv_qnode *n; (n = wv_q_pop(&s->reqs)) != NULL;) {
    wd_req *c = WD_REQ_OF(n);
    wd_req_clear(c);
    free(c);
  }
  wd_listeners_free(s->lst);
  s->lst = NULL;
  wd_peers_free(s->peers);
  s->peers = NULL;
  wd_gone_free(&s->gone);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

/* ---- replies --------------------------------------------------------------- */

void wd_reply(wd_req *c, Wave__V1__Response *r)
{
  unsigned version = c->version ? c->version : WD_PROTOCOL;
  nng_msg *m = wv_wire_response(r, c->req_id, version);
  /* no memory for this reply: try a small error, else let REQ resend */
  if (m == NULL &&
      (m = wv_wire_error(WAVE_ENOMEM, wave_errname(WAVE_ENOMEM),
                         "no memory for the reply", c->req_id, version)) == NULL) {
    wd_error("no memory for a reply; dropping request %" PRIu64, c->req_id);
    wd_req_clear(c);
    wd_front_recv(c);
    return;
  }
  wd_req_clear(c);
  wd_front_send(c, m);
}

/* An Error reply; refused: the request never became a job that ran
 * (counted apart from a job's failure). */
static void ft_error(wd_req *c, int code, int refused, const char *msg)
{
  wd_debug("request %" PRIu64 ": %s: %s", c->req_id, wave_errname(code), msg);
  wd_stats_request_error(code, refused);
  Wave__V1__Error e = WAVE__V1__ERROR__INIT;
  e.code = (uint32_t)code;
  e.name = (char *)wave_errname(code);
  e.message = (char *)msg;
  Wave__V1__Response r = WAVE__V1__RESPONSE__INIT;
  r.body_case = WAVE__V1__RESPONSE__BODY_ERROR;
  r.error = &e;
  wd_reply(c, &r);
}

void wd_reply_error(wd_req *c, int code, const char *fmt, ...)
{
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ft_error(c, code, 1, msg);
}

void wd_reply_fail(wd_req *c, const wave_error *err)
{
  (*c->fe->failed)++;
  ft_error(c, err->code, 1, err->message);
}

void wd_reply_job_fail(wd_req *c, const wave_error *err)
{
  (*c->fe->failed)++;
  ft_error(c, err->code, 0, err->message);
}
