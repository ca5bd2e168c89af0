/* fleet_call.c - the fleet coordinator's connections (fleet_int.h): each
 * daemon's wave_client, opened on first use, and the one exchange of a
 * hash piece's calls.
 *
 * Why not wv_client_call: when a daemon's connection closes, an nng REQ
 * socket keeps the request and resends it once it has redialled, so a
 * daemon that took a piece and hung up (or died, its port now refusing)
 * costs the whole reply timeout (30 s by default) before the piece moves.
 * nng says when a pipe goes (nng_pipe_notify, NNG_PIPE_EV_REM_POST, called
 * on nng's own thread: it only counts, in f->closes[d]).  wv_fleet_call is
 * wv_client_call's exchange, with its own aio whose completion it waits
 * for in 50 ms steps, looking at that count: one that moved since the
 * piece began aborts the exchange at once (NNG_ECLOSED), and the piece
 * runs elsewhere.  A close between two polls of the piece counts too, as
 * the count is taken when the piece starts.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "client/client_int.h"
#include "client/fleet_int.h"
#include "core/base.h"
#include "wave/fleet.h"

/* nng calls this on its own thread when one of daemon d's connections is
 * gone; wv_fleet_call watches the count. */
static void fc_pipe_gone(nng_pipe pipe, nng_pipe_ev ev, void *arg)
{
  (void)pipe;
  (void)ev;
  atomic_fetch_add((atomic_uint *)arg, 1);
}

/* Connections are made when a daemon's first piece is taken: a daemon the
 * call never needs is never dialled (closing a socket mid-handshake costs
 * the daemon work, and nng 1.5 leaks the half-made pipe). */
wave_client *wv_fleet_client(wave_fleet *f, size_t d, wave_error *err)
{
  pthread_mutex_lock(&f->mu);
  if (f->c[d] == NULL &&
      wave_client_open_with(&f->c[d], f->urls[d], f->copts, err) == 0) {
    if (f->timeout_ms > 0)
      wave_client_set_timeout(f->c[d], f->timeout_ms);
    nng_pipe_notify(f->c[d]->sock, NNG_PIPE_EV_REM_POST, fc_pipe_gone,
                    &f->closes[d]);
  }
  wave_client *c = f->c[d];
  pthread_mutex_unlock(&f->mu);
  return c;
}

typedef struct fc_wait {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int done;
} fc_wait;

static void fc_aio_done(void *arg)
{
  fc_wait *w = arg;
  pthread_mutex_lock(&w->mu);
  w->done = 1;
  pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

/* Wait for aio, polling f->closes[d] every 50 ms: a connection that went
 * away since gen aborts it (nng would otherwise wait for a reconnect and
 * resend until the reply timeout): 1 when it was aborted so, 2 when it was
 * aborted because the daemon was dropped meanwhile (f->gone[d]). */
static int fc_aio_watch(wave_fleet *f, size_t d, unsigned gen, nng_aio *aio,
                        fc_wait *w)
{
  int closed = 0;
  pthread_mutex_lock(&w->mu);
  while (!w->done) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += 50 * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&w->cv, &w->mu, &ts);
    if (!w->done && !closed && (atomic_load(&f->closes[d]) != gen ||
                                atomic_load(&f->gone[d]))) {
      closed = atomic_load(&f->gone[d]) ? 2 : 1;
      pthread_mutex_unlock(&w->mu);
      nng_aio_abort(aio, NNG_ECLOSED);
      pthread_mutex_lock(&w->mu);
    }
  }
  w->done = 0;
  pthread_mutex_unlock(&w->mu);
  return closed;
}

int wv_fleet_call(wave_fleet *f, size_t d, wave_client *c,
                  Wave__V1__Request *req, int want, unsigned extra_ms,
                  Wave__V1__Response **resp, unsigned gen, int *why,
                  wave_error *err)
{
  nng_msg *msg;
  *resp = NULL;
  int rc = wv_client_msg(c, req, 0, &msg, NULL, err);
  if (rc != 0)
    return rc;
  uint64_t id = req->id;
  uint64_t sum = (uint64_t)atomic_load(&c->timeout_ms) + extra_ms;
  nng_duration total = sum > INT32_MAX ? INT32_MAX : (nng_duration)sum;
  fc_wait w = {.done = 0};
  pthread_mutex_init(&w.mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&w.cv, &ca);
  pthread_condattr_destroy(&ca);
  nng_ctx ctx;
  nng_aio *aio = NULL;
  int rv = nng_ctx_open(&ctx, c->sock);
  if (rv != 0) {
    nng_msg_free(msg);
    rc = wv_seterr(err, WAVE_EIO, "%s: %s", c->url, nng_strerror(rv));
    goto out_w;
  }
  /* as wv_client_call: only a reconnect may resend */
  nng_ctx_set_ms(ctx, NNG_OPT_REQ_RESENDTIME, total);
  if ((rv = nng_aio_alloc(&aio, fc_aio_done, &w)) != 0) {
    nng_msg_free(msg);
    rc = wv_seterr(err, WAVE_ENOMEM, "%s", nng_strerror(rv));
    goto out_ctx;
  }
  /* one deadline for the whole exchange (nng counts it per operation) */
  double end = wv_fleet_now() + (double)total / 1e3;
  nng_aio_set_msg(aio, msg);
  nng_aio_set_timeout(aio, total);
  nng_ctx_send(ctx, aio);
  int closed = fc_aio_watch(f, d, gen, aio, &w);
  if ((rv = nng_aio_result(aio)) == 0) {
    double left = end - wv_fleet_now();
    nng_aio_set_timeout(aio, left < 0.001 ? 1 : (nng_duration)(left * 1e3));
    nng_ctx_recv(ctx, aio);
    closed = fc_aio_watch(f, d, gen, aio, &w);
    rv = nng_aio_result(aio);
  } else {
    nng_msg_free(nng_aio_get_msg(aio)); /* still ours when the send failed */
  }
  if (rv == 0) {
    rc = wv_client_reply(c, nng_aio_get_msg(aio), id, want, resp, err);
  } else if (closed == 2) {
    rc = wv_seterr(err, WAVE_EIO, "%s: dropped while this piece ran",
                   c->url);
  } else if (closed) {
    *why = WAVE_FLEET_CLOSED;
    rc = wv_seterr(err, WAVE_EIO, "%s: the connection closed while it held "
                   "a piece", c->url);
  } else if (rv == NNG_ETIMEDOUT) {
    rc = wv_seterr(err, WAVE_ETIMEDOUT, "no reply from %s within %d ms",
                   c->url, (int)total);
  } else {
    rc = wv_seterr(err, rv == NNG_ENOMEM ? WAVE_ENOMEM : WAVE_EIO, "%s: %s",
                   c->url, nng_strerror(rv));
  }
  nng_aio_free(aio);
out_ctx:
  nng_ctx_close(ctx);
out_w:
  pthread_cond_destroy(&w.cv);
  pthread_mutex_destroy(&w.mu);
  return rc;
}

