/* listen.c - the listeners (one per configured URL) and a watchdog for the
 * ipc ones.
 *
 * Why a watchdog: nng 1.5.2, the version Debian ships, has a bug
 * (nanomsg/nng#1518, fixed in 1.6) in its ipc transport: a peer that
 * connects and goes away before the 8-byte SP handshake makes the listener
 * stop accepting, for good.  A health check, a stray `nc -U`, or nng's own
 * stale-socket test run by a second wavedd started on the same path is
 * enough to make the daemon deaf on ipc.  Two defences:
 *  - before listening on an ipc path we try it ourselves, completing the
 *    handshake (harmless to an nng peer): when something accepts, the path
 *    belongs to a live process and we refuse to start, instead of letting
 *    nng's stale test (connect, then close) break the daemon that owns it;
 *  - every LS_PROBE_MS the loop opens a new connection to each ipc listener
 *    (libuv, never blocking) and sends the handshake.  A stuck listener
 *    still completes handshakes but never hands the connection to the
 *    socket, so the test is nng's pipe event: a healthy listener attaches
 *    the probe (NNG_PIPE_EV_ADD_POST for that listener) at once, whatever
 *    the daemon is busy with.  One that attaches nothing within
 *    LS_DEADLINE_MS is closed and created anew (its clients reconnect;
 *    nng's REQ resends what was in flight).
 * tcp listeners are not affected (the error they see differs) and are not
 * probed.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon/listen.h"
#include "daemon/log.h"
#include "daemon/tls.h"
#include "proto/base.h"

#define LS_PROBE_MS 2000
#define LS_DEADLINE_MS 3000
#define LS_SPARE 32   /* slots beyond the start-up URLs, for reloads */

/* The SP handshake a REQ (0x30) peer sends. */
static const uint8_t ls_hello[8] = {0, 'S', 'P', 0, 0x00, 0x30, 0, 0};

typedef struct ls_one {
  wd_listeners *ls;
  const char *url;          /* as configured */
  char bound[300];          /* as reported */
  nng_listener l;
  _Atomic int l_id;         /* l's id, read by the pipe callback */
  _Atomic uint64_t attached;/* pipes l handed to the socket */
  int started;              /* l is listening */
  int ipc;
  char path[108];
  /* the probe; the pipe handle exists while probing is set */
  uv_pipe_t pipe;
  uv_connect_t conn;
  uv_write_t wr;
  int probing, ending;
  uint64_t since, seen;     /* probe start: time, o->attached */
  int used;                 /* a configured URL's (not a removed one's) */
} ls_one;

struct wd_listeners {
  uv_loop_t *loop;
  nng_socket sock;
  const wd_config *cfg;
  size_t cap;
  ls_one *v;                /* never moved: nng's threads read it */
  size_t n, n_alloc;        /* slots ever used, allocated */
  char **urls;              /* the used slots' bound URLs */
  size_t n_urls;
  uv_timer_t timer;
  int timer_on;
};

static int ls_open(ls_one *o, wave_error *err)
{
  wd_listeners *ls = o->ls;
  int rv = nng_listener_create(&o->l, ls->sock, o->url);
  if (rv != 0)
    return wv_seterr(err, WAVE_EIO, "listen %s: %s", o->url, nng_strerror(rv));
  if ((rv = wd_tls_listener(o->l, o->url, &ls->cfg->tls, err)) != 0) {
    nng_listener_close(o->l);  /* tls+tcp://: its certificate (tls.c) */
    return rv;
  }
  nng_listener_set_size(o->l, NNG_OPT_RECVMAXSZ, ls->cap);
  if (o->ipc && ls->cfg->ipc_mode != 0 &&
      (rv = nng_listener_set_int(o->l, NNG_OPT_IPC_PERMISSIONS,
                                 (int)ls->cfg->ipc_mode)) != 0) {
    nng_listener_close(o->l);
    return wv_seterr(err, WAVE_EIO, "ipc_mode for %s: %s", o->url,
                     nng_strerror(rv));
  }
  if ((rv = nng_listener_start(o->l, 0)) != 0) {
    nng_listener_close(o->l);
    return wv_seterr(err, WAVE_EIO, "listen %s: %s", o->url, nng_strerror(rv));
  }
  atomic_store(&o->l_id, nng_listener_id(o->l));
  o->started = 1;
  return 0;
}

/* nng's thread: a pipe joined the socket; count it for its listener. */
static void ls_pipe_added(nng_pipe p, nng_pipe_ev ev, void *arg)
{
  wd_listeners *ls = arg;
  (void)ev;
  int id = nng_listener_id(nng_pipe_listener(p));
  for (size_t i = 0; id > 0 && i < ls->n_alloc; i++)
    if (atomic_load(&ls->v[i].l_id) == id)
      atomic_fetch_add(&ls->v[i].attached, 1);
}

/* 1 when a live process accepts connections on path. */
static int ls_ipc_live(const char *path)
{
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return 0;
  int rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
  int live = rc == 0 || errno == EAGAIN;  /* EAGAIN: its backlog is full */
  if (rc == 0) {
    /* Finish the handshake so that an nng peer sees a proper client: once
     * its 8 bytes have arrived it has sent its half, and ours is in its
     * buffer, so closing now cannot break it. */
    uint8_t b[8];
    size_t got = 0;
    ssize_t w = write(fd, ls_hello, sizeof ls_hello);
    for (int i = 0; w == (ssize_t)sizeof ls_hello && got < sizeof b && i < 50;
         i++) {
      struct pollfd p = {.fd = fd, .events = POLLIN};
      if (poll(&p, 1, 100) != 1)
        continue;
      ssize_t r = read(fd, b + got, sizeof b - got);
      if (r <= 0)
        break;
      got += (size_t)r;
    }
  }
  close(fd);
  return live;
}

/* ---- the watchdog ------------------------------------------------------- */

static void ls_restart(ls_one *o, const char *why)
{
  wd_warn("listener %s %s; restarting it (nng 1.5 stops accepting on ipc "
          "after an aborted handshake)", o->bound, why);
  if (o->started)
    nng_listener_close(o->l);
  o->started = 0;
  wave_error err = {0};
  if (ls_open(o, &err) != 0)
    wd_error("%s (retrying)", err.message);
  else
    wd_info("listening on %s again", o->bound);
}

static void ls_probe_closed(uv_handle_t *h)
{
  ls_one *o = h->data;
  o->probing = 0;
  o->ending = 0;
}

static void ls_probe_done(ls_one *o, const char *why)
{
  if (o->ending)
    return;
  o->ending = 1;
  uv_close((uv_handle_t *)&o->pipe, ls_probe_closed);
  if (why != NULL)
    ls_restart(o, why);
}

static void ls_written(uv_write_t *w, int status)
{
  if (status < 0 && status != UV_ECANCELED)
    ls_probe_done(w->data, "refused the probe's handshake");
}

static void ls_connected(uv_connect_t *c, int status)
{
  ls_one *o = c->data;
  if (status == UV_ECANCELED)
    return;
  if (status < 0)  /* e.g. the socket file was removed */
    return ls_probe_done(o, "refused the probe connection");
  uv_buf_t b = uv_buf_init((char *)ls_hello, sizeof ls_hello);
  if (uv_write(&o->wr, (uv_stream_t *)&o->pipe, &b, 1, ls_written) != 0)
    ls_probe_done(o, "failed the probe connection");
}

static void ls_tick(uv_timer_t *t)
{
  wd_listeners *ls = t->data;
  uint64_t now = uv_now(ls->loop);
  for (size_t i = 0; i < ls->n; i++) {
    ls_one *o = &ls->v[i];
    if (!o->ipc)
      continue;
    if (o->probing) {
      if (o->ending)
        continue;
      if (atomic_load(&o->attached) != o->seen)
        ls_probe_done(o, NULL);  /* it attaches pipes: healthy */
      else if (now - o->since > LS_DEADLINE_MS)
        ls_probe_done(o, "did not take the probe connection");
      continue;
    }
    if (!o->started) {  /* a restart failed: try again */
      ls_restart(o, "is down");
      continue;
    }
    o->seen = atomic_load(&o->attached);
    o->since = now;
    o->probing = 1;
    uv_pipe_init(ls->loop, &o->pipe, 0);
    o->pipe.data = o->conn.data = o->wr.data = o;
    uv_pipe_connect(&o->conn, &o->pipe, o->path, ls_connected);
  }
}

/* ---- start and stop ------------------------------------------------------- */

static void ls_bound(ls_one *o)
{
  snprintf(o->bound, sizeof o->bound, "%s", o->url);
  int port = 0;
  if (o->ipc || nng_listener_get_int(o->l, NNG_OPT_TCP_BOUND_PORT, &port) != 0)
    return;
  nng_url *u = NULL;
  if (nng_url_parse(&u, o->url) != 0)
    return;
  if (strcmp(u->u_port, "0") == 0)
    snprintf(o->bound, sizeof o->bound, "%s://%s:%d", u->u_scheme,
             u->u_hostname, port);
  nng_url_free(u);
}

int wd_listeners_start(uv_loop_t *loop, nng_socket sock,
                       const wd_config *cfg, size_t recv_cap,
                       wd_listeners **out, wave_error *err)
{
  *out = NULL;
  wd_listeners *ls = calloc(1, sizeof *ls);
  if (ls == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  *out = ls;
  ls->loop = loop;
  ls->sock = sock;
  ls->cfg = cfg;
  ls->cap = recv_cap;
  ls->n_alloc = cfg->n_listen + LS_SPARE;
  ls->v = calloc(ls->n_alloc, sizeof *ls->v);
  ls->urls = calloc(ls->n_alloc + 1, sizeof *ls->urls);
  if (ls->v == NULL || ls->urls == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  nng_pipe_notify(sock, NNG_PIPE_EV_ADD_POST, ls_pipe_added, ls);
  int any_ipc = 0;
  for (size_t i = 0; i < cfg->n_listen; i++) {
    ls_one *o = &ls->v[i];
    o->ls = ls;
    o->url = cfg->listen[i];
    o->ipc = strncmp(o->url, "ipc://", 6) == 0;
    if (o->ipc) {
      snprintf(o->path, sizeof o->path, "%s", o->url + 6);
      if (ls_ipc_live(o->path))
        return wv_seterr(err, WAVE_EIO, "listen %s: Address in use (a "
                         "running process, another wavedd?, accepts "
                         "connections there)", o->url);
      any_ipc = 1;
    }
    int rc = ls_open(o, err);
    if (rc != 0)
      return rc;
    ls->n = i + 1;
    o->used = 1;
    ls_bound(o);
    ls->urls[i] = o->bound;
    ls->n_urls = i + 1;
    wd_info("listening on %s", o->bound);
  }
  if (any_ipc) {
    uv_timer_init(loop, &ls->timer);
    ls->timer.data = ls;
    ls->timer_on = 1;
    uv_timer_start(&ls->timer, ls_tick, LS_PROBE_MS, LS_PROBE_MS);
  }
  return 0;
}

/* ---- a reload: listeners added and removed (wd_listeners_update) ------- */

static ls_one *ls_serving(wd_listeners *ls, const char *url)
{
  for (size_t i = 0; i < ls->n; i++)
    if (ls->v[i].used && strcmp(ls->v[i].url, url) == 0)
      return &ls->v[i];
  return NULL;
}

static int ls_wanted(const wd_config *cfg, const char *url)
{
  for (size_t i = 0; i < cfg->n_listen; i++)
    if (strcmp(cfg->listen[i], url) == 0)
      return 1;
  return 0;
}

/* A slot never used, or removed with its probe closed; NULL when none. */
static ls_one *ls_free_slot(wd_listeners *ls)
{
  for (size_t i = 0; i < ls->n_alloc; i++)
    if (!ls->v[i].used && !ls->v[i].probing)
      return &ls->v[i];
  return NULL;
}

/* Stop serving o's URL: the listener closes (and the connections it
 * accepted), its probe with it; the watchdog skips the slot (ipc 0). */
static void ls_drop(ls_one *o)
{
  o->used = 0;
  atomic_store(&o->l_id, 0);
  if (o->started)
    nng_listener_close(o->l);
  o->started = 0;
  o->ipc = 0;
  if (o->probing && !o->ending) {
    o->ending = 1;
    uv_close((uv_handle_t *)&o->pipe, ls_probe_closed);
  }
}

/* Start the listener of url in a free slot (the start-up checks and
 * creation: ls_ipc_live, ls_open). */
static int ls_add(wd_listeners *ls, const char *url, ls_one **out,
                  wave_error *err)
{
  ls_one *o = ls_free_slot(ls);
  if (o == NULL)
    return wv_seterr(err, WAVE_EIO, "listen %s: more than %zu listeners "
                     "at once (restart wavedd)", url, ls->n_alloc);
  o->ls = ls;
  o->url = url;
  o->bound[0] = '\0';
  o->started = 0;
  o->probing = o->ending = 0;
  atomic_store(&o->attached, 0);
  o->ipc = strncmp(url, "ipc://", 6) == 0;
  o->path[0] = '\0';
  if (o->ipc) {
    snprintf(o->path, sizeof o->path, "%s", url + 6);
    if (ls_ipc_live(o->path)) {
      o->ipc = 0;
      return wv_seterr(err, WAVE_EIO, "listen %s: Address in use (a running "
                       "process, another wavedd?, accepts connections "
                       "there)", url);
    }
  }
  int rc = ls_open(o, err);
  if (rc != 0) {
    o->ipc = 0;
    return rc;
  }
  o->used = 1;
  size_t i = (size_t)(o - ls->v);
  if (i >= ls->n)
    ls->n = i + 1;
  ls_bound(o);
  *out = o;
  return 0;
}

int wd_listeners_update(wd_listeners *ls, const wd_config *cfg,
                        size_t *failed, wave_error *err)
{
  *failed = cfg->n_listen;
  ls_one **added = calloc(cfg->n_listen + 1, sizeof *added);
  if (added == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  const wd_config *was = ls->cfg;
  ls->cfg = cfg;  /* the options new listeners are created with */
  size_t n_added = 0;
  int rc = 0;
  for (size_t i = 0; i < cfg->n_listen && rc == 0; i++)
    if (ls_serving(ls, cfg->listen[i]) == NULL) {
      if ((rc = ls_add(ls, cfg->listen[i], &added[n_added], err)) == 0)
        n_added++;
      else
        *failed = i;
    }
  if (rc != 0) {  /* all or nothing: the ones just started close again */
    for (size_t k = 0; k < n_added; k++)
      ls_drop(added[k]);
    ls->cfg = was;
    free(added);
    return rc;
  }
  for (size_t k = 0; k < n_added; k++)
    wd_info("listening on %s (reload)", added[k]->bound);
  int any_ipc = 0;
  size_t u = 0;
  for (size_t i = 0; i < ls->n; i++) {
    ls_one *o = &ls->v[i];
    if (o->used && !ls_wanted(cfg, o->url)) {
      wd_info("no longer listening on %s (reload)", o->bound);
      ls_drop(o);
    }
    if (o->used) {
      ls->urls[u++] = o->bound;
      any_ipc |= o->ipc;
    }
  }
  ls->urls[u] = NULL;
  ls->n_urls = u;
  if (any_ipc && !ls->timer_on) {
    uv_timer_init(ls->loop, &ls->timer);
    ls->timer.data = ls;
    ls->timer_on = 1;
    uv_timer_start(&ls->timer, ls_tick, LS_PROBE_MS, LS_PROBE_MS);
  }
  free(added);
  return 0;
}

void wd_listeners_set_cap(wd_listeners *ls, size_t recv_cap)
{
  if (ls == NULL)
    return;
  ls->cap = recv_cap;  /* restarted listeners take it too */
  for (size_t i = 0; i < ls->n; i++)
    if (ls->v[i].started)
      nng_listener_set_size(ls->v[i].l, NNG_OPT_RECVMAXSZ, recv_cap);
}

char **wd_listeners_urls(const wd_listeners *ls, size_t *n)
{
  *n = ls ? ls->n_urls : 0;
  return ls ? ls->urls : NULL;
}

void wd_listeners_close(wd_listeners *ls)
{
  if (ls == NULL)
    return;
  if (ls->timer_on)
    uv_close((uv_handle_t *)&ls->timer, NULL);
  ls->timer_on = 0;
  for (size_t i = 0; i < ls->n; i++)
    if (ls->v[i].probing && !ls->v[i].ending) {
      ls->v[i].ending = 1;
      uv_close((uv_handle_t *)&ls->v[i].pipe, ls_probe_closed);
    }
}

void wd_listeners_free(wd_listeners *ls)
{
  if (ls == NULL)
    return;
  free(ls->v);
  free(ls->urls);
  free(ls);
}
