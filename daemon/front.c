/* front.c - the nng side: the REP socket, its contexts and their state
 * machine, in the manner of nng's demo/async/server.c: RECV -> (hand to
 * a decode thread, then the loop) -> SEND -> RECV.  The callback runs on
 * nng's threads and never decodes, waits or locks for long: it hands the
 * context to a decode thread (daemon/decode.h), which unpacks it and then
 * appends it to the inbox and wakes the loop (wd_front_inbox).  A closed
 * connection's regions and streams are dropped from nng's pipe callback.
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
 */
#include <signal.h>
#include <stdlib.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>

#include "daemon/log.h"
#include "daemon/server_int.h"
#include "proto/base.h"

void wd_front_inbox(wd_server *s, wd_req *c)
{
  pthread_mutex_lock(&s->mu);
  c->next = NULL;
  *s->inbox_tail = c;
  s->inbox_tail = &c->next;
  pthread_mutex_unlock(&s->mu);
  uv_async_send(&s->wake);
}

static void fr_aio_cb(void *arg)
{
  wd_req *c = arg;
  wd_server *s = c->srv;
  int rv = nng_aio_result(c->aio);
  switch (c->state) {
  case RQ_RECV:
    if (rv != 0) {
      if (rv == NNG_ECLOSED || rv == NNG_ECANCELED || atomic_load(&s->closing)) {
        c->state = RQ_IDLE;
        return;
      }
      nng_ctx_recv(c->ctx, c->aio);  /* a transient error: keep serving */
      return;
    }
    if (atomic_load(&s->closing)) {
      nng_msg_free(nng_aio_get_msg(c->aio));
      c->state = RQ_IDLE;
      return;
    }
    c->msg = nng_aio_get_msg(c->aio);
    c->state = RQ_WORK;
    wd_pool_push(s->pool, &c->item);  /* -> wd_decode_cb, then the loop */
    return;
  case RQ_SEND:
    if (rv != 0)  /* the client went away: the reply is ours to free */
      nng_msg_free(nng_aio_get_msg(c->aio));
    if (atomic_load(&s->closing)) {
      c->state = RQ_IDLE;
      return;
    }
    if (c->retire) {
      c->state = RQ_RETIRE;
      wd_front_inbox(s, c);
      return;
    }
    c->state = RQ_RECV;
    nng_ctx_recv(c->ctx, c->aio);
    return;
  default:
    return;
  }
}

static void fr_noop_close(uv_handle_t *h) { (void)h; }

/* nng: a connection went away (any nng thread): its regions and streams go
 * (a region in use by a job is unmapped after it), and the loop cancels
 * its attached hash jobs (daemon/peer.h). */
static void fr_pipe_gone(nng_pipe p, nng_pipe_ev ev, void *arg)
{
  (void)ev;
  wd_server *s = arg;
  wd_bulk_drop_pipe(s->bulk, (uint32_t)nng_pipe_id(p));
  if (!atomic_load(&s->closing) &&
      wd_gone_add(&s->gone, (uint32_t)nng_pipe_id(p)) == 0)
    uv_async_send(&s->wake);
}

static void fr_free_close(uv_handle_t *h) { free(h->data); }

/* A new context, linked in and receiving (when the socket is up). */
int wd_front_add(wd_server *s, wave_error *err)
{
  wd_req *c = calloc(1, sizeof *c);
  if (c == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  c->srv = s;
  c->item.fn = wd_decode_cb;
  int rv;
  if ((rv = nng_aio_alloc(&c->aio, fr_aio_cb, c)) != 0) {
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
  c->all_next = s->reqs;
  if (s->reqs != NULL)
    s->reqs->all_prev = c;
  s->reqs = c;
  s->n_reqs++;
  if (s->listening) {
    c->state = RQ_RECV;
    nng_ctx_recv(c->ctx, c->aio);
  }
  return 0;
}

void wd_front_send(wd_req *c, nng_msg *m)
{
  wd_server *s = c->srv;
  /* above the pool's size once parked requests are counted: retire */
  if (s->n_reqs > s->cfg->limits.contexts + s->n_parked) {
    c->retire = 1;
    s->n_reqs--;
  }
  c->state = RQ_SEND;
  nng_aio_set_msg(c->aio, m);
  nng_ctx_send(c->ctx, c->aio);
}

void wd_front_recv(wd_req *c)
{
  c->state = RQ_RECV;
  nng_ctx_recv(c->ctx, c->aio);
}

void wd_front_retire(wd_req *c)
{
  wd_server *s = c->srv;
  wd_req_clear(c);
  nng_ctx_close(c->ctx);
  nng_aio_free(c->aio);
  c->aio = NULL;
  if (c->all_prev)
    c->all_prev->all_next = c->all_next;
  else
    s->reqs = c->all_next;
  if (c->all_next)
    c->all_next->all_prev = c->all_prev;
  uv_close((uv_handle_t *)&c->timer, fr_free_close);
}

int wd_front_listen(wd_server *s, wave_error *err)
{
  const wd_limits *lim = &s->cfg->limits;
  size_t cap = lim->max_request_bytes +
               (lim->max_request_bytes > (1u << 20) ? lim->max_request_bytes
                                                    : (1u << 20));
  /* nng starts its threads here: they inherit a mask with every signal
   * blocked, so signals reach the loop's thread */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = 0, rv;
  if ((rv = nng_rep0_open(&s->sock)) != 0) {
    rc = wv_seterr(err, WAVE_EIO, "nng rep0 socket: %s", nng_strerror(rv));
    goto out;
  }
  s->sock_open = 1;
  nng_socket_set_size(s->sock, NNG_OPT_RECVMAXSZ, cap);
  nng_pipe_notify(s->sock, NNG_PIPE_EV_REM_POST, fr_pipe_gone, s);
  for (size_t i = 0; i < lim->contexts; i++)
    if ((rc = wd_front_add(s, err)) != 0)
      goto out;
  if ((rc = wd_listeners_start(s->loop, s->sock, s->cfg, cap, &s->lst,
                               err)) != 0)
    goto out;
  s->listening = 1;
  for (wd_req *c = s->reqs; c != NULL; c = c->all_next)
    wd_front_recv(c);
out:
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return rc;
}

void wd_front_close(wd_server *s)
{
  atomic_store(&s->closing, 1);
  wd_listeners_close(s->lst);  /* no more listener restarts */
  /* nng first: after nng_aio_stop no callback runs for that context */
  for (wd_req *c = s->reqs; c != NULL; c = c->all_next)
    if (c->aio != NULL)
      nng_aio_stop(c->aio);
  for (wd_req *c = s->reqs; c != NULL; c = c->all_next)
    nng_ctx_close(c->ctx);
  wd_pool_stop(s->pool);  /* what it still held is in the inbox now */
  if (s->sock_open)
    nng_close(s->sock);
  s->sock_open = 0;
  for (wd_req *c = s->reqs; c != NULL; c = c->all_next) {
    if (c->aio != NULL)
      nng_aio_free(c->aio);
    c->aio = NULL;
    if (s->handles)
      uv_close((uv_handle_t *)&c->timer, fr_noop_close);
  }
}

void wd_front_free(wd_server *s)
{
  for (wd_req *c = s->reqs, *nx; c != NULL; c = nx) {
    nx = c->all_next;
    wd_req_clear(c);
    free(c);
  }
  s->reqs = NULL;
  wd_listeners_free(s->lst);
}
