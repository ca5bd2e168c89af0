/* listen.c - the listeners (one per configured URL) and a watchdog for the
 * ipc ones.
 *
 * nng 1.5.2, the version Debian ships, has a bug (nanomsg/nng#1518, fixed
 * in 1.6): a peer that closes before the listener wrote its SP header
 * leaves the listener deaf for good.  daemon/net/nngfix.c removes it at
 * its cause (libnng's EPIPE on that write reads as a reset, so nng accepts
 * again at once); with that on, the watchdog below only guards the socket
 * file.  Where the fix cannot be on (nng linked in statically, or our
 * sendmsg not the one libnng calls), the watchdog recovers instead, as
 * before the fix (ls_recover): nng's core counts the accept error in the
 * listener's "other" statistic, so the loop reads it every LS_TICK_MS (nng
 * counts each closed pipe's error there too, so what counts is a rise
 * beyond the listener's pipes gone, seen on two ticks).  On a rise we
 * start a fresh listener on a temporary name in the socket's folder and
 * rename(2) it over the configured path; the stuck one keeps serving the
 * pipes it already has until the last goes, then it is closed.  That
 * recovery has costs the fix does not: a client that connects between the
 * bug and the rename waits on the stuck listener until it closes
 * (LS_GRACE_MS at the earliest) and must redial; nng leaks what the stuck
 * listener held; and a peer's close after the header (NNG_ECONNSHUT, which
 * nng retries by itself after 100 ms) or a pipe that closes slowly under
 * load looks the same in the statistics, so it recovers when it need not.
 * Every ipc listener is bound on a temporary name, so no listener's close
 * ever unlinks the path (nng unlinks the name it bound); the path is
 * unlinked here, at the end, if it is still our socket.  A rise that comes
 * from the fd limit (nng retries those by itself) starts no recovery.
 * Where nng has no statistics, a probe connection every LS_PROBE_MS checks
 * that the listener attaches it.
 *
 * A socket file that someone removes (rm, a tmp cleaner) leaves the
 * listener accepting on a name nobody can reach.  So the tick also lstat()s
 * each path every LS_PATH_TICKS ticks and compares the inode with the one
 * we renamed there: when the path is gone, a fresh listener takes it as in
 * a recovery (logged at warning; connected clients stay).  When something
 * else is there now, it is not ours to replace (another wavedd may have
 * started on the path): that is logged at error, once, and new clients
 * cannot reach this daemon on the path until it is restarted.
 *
 * The listeners also feed connguard.c (the deadline of TLS connections
 * that are not pipes yet): the tls+tcp:// ports, and the peer address of
 * every pipe.
 *
 * Before listening on an ipc path: the folder and any file there pass
 * sockpath.c's checks, and when something accepts on the path it belongs
 * to a live process (another wavedd?) and we refuse to start.
 * tcp listeners are not affected (the error they see differs).
 *
 * Each ipc URL also gets its descriptor socket "<path>.fd" (fdpass.h),
 * opened after the listener with the same mode, closed and unlinked with
 * it; the watchdog's recoveries leave it alone (it is not nng's).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon/net/connguard.h"
#include "daemon/net/fdpass.h"
#include "daemon/net/listen.h"
#include "daemon/net/nngfix.h"
#include "daemon/log.h"
#include "daemon/net/sockpath.h"
#include "daemon/net/tls.h"
#include "core/base.h"

#define LS_TICK_MS 20
#define LS_GRACE_MS 1000    /* a retired listener lives at least this long */
#define LS_PROBE_MS 2000    /* without nng statistics only */
#define LS_DEADLINE_MS 3000
#define LS_SLOTS 16         /* one listener serving, the rest retiring */
#define LS_SPARE 32         /* URL slots beyond the start-up ones, for reloads */
#define LS_PATH_TICKS 10    /* the socket file is checked this often */


/* One nng listener of a URL: the serving one or a stuck one retiring. */
typedef struct ls_lst {
  nng_listener l;
  _Atomic int id;           /* l's id, read by the pipe callbacks; 0: free */
  _Atomic int live;         /* its pipes open now */
  _Atomic uint64_t added;   /* pipes it handed to the socket, ever */
  _Atomic uint64_t removed; /* its pipes that have gone, ever */
  uint64_t other;           /* its "other" errors when opened */
  int suspect;              /* more of them than pipes gone, last tick */
  uint64_t retired;         /* when it stopped serving (loop time) */
} ls_lst;

typedef struct ls_one {
  wd_listeners *ls;
  const char *url;          /* as configured */
  char bound[300];          /* as reported */
  ls_lst s[LS_SLOTS];
  int cur;                  /* the serving slot; -1: none */
  int ipc;
  char path[108];
  dev_t dev;                /* path's socket, once renamed there */
  ino_t ino;
  int have_ino;
  unsigned gen;             /* temporary names */
  /* the probe (no statistics); the pipe handle exists while probing */
  uv_pipe_t pipe;
  uv_connect_t conn;
  uv_write_t wr;
  int probing, ending;
  uint64_t since, seen, last_probe;
  int used;                 /* a configured URL's (not a removed one's) */
  int guard_port;           /* tls+tcp://: the port connguard.c watches */
  int foreign;              /* the path holds a file not ours (logged) */
  int renew_failed;         /* remaking a removed path failed (logged) */
  wd_fdsock *side;          /* ipc: "<path>.fd", descriptors (fdpass.h) */
} ls_one;

struct wd_listeners {
  uv_loop_t *loop;
  wd_fdpass *fp;            /* where the side sockets keep descriptors */
  nng_socket sock;
  const wd_config *cfg;
  size_t cap;
  ls_one *v;                /* never moved: nng's threads read it */
  size_t n, n_alloc;        /* slots ever used, allocated */
  char **urls;              /* the used slots' bound URLs */
  size_t n_urls;
  uv_timer_t timer;
  int timer_on;
  int stats;                /* nng has statistics */
  int fixed;                /* nngfix.c is on: no stuck listener to detect */
  unsigned recoveries;
  unsigned ticks;
  wd_guard *guard;
};

static int ls_find(ls_one *o, int id)
{
  for (int k = 0; id > 0 && k < LS_SLOTS; k++)
    if (atomic_load(&o->s[k].id) == id)
      return k;
  return -1;
}

/* The scope of listener id in nng's statistics tree (nng 1.5.2's
 * nng_stat_find_listener returns the first listener's, whatever it is
 * asked). */
static nng_stat *ls_stat_scope(nng_stat *n, int id)
{
  for (; n != NULL; n = nng_stat_next(n)) {
    if (nng_stat_type(n) == NNG_STAT_SCOPE &&
        strcmp(nng_stat_name(n), "listener") == 0)
      for (nng_stat *c = nng_stat_child(n); c != NULL; c = nng_stat_next(c))
        if (strcmp(nng_stat_name(c), "id") == 0 &&
            nng_stat_value(c) == (uint64_t)id)
          return n;
    nng_stat *r = ls_stat_scope(nng_stat_child(n), id);
    if (r != NULL)
      return r;
  }
  return NULL;
}

/* The listener's "other" accept errors; (uint64_t)-1 when unknown. */
static uint64_t ls_other(nng_listener l)
{
  nng_stat *st = NULL, *one, *v;
  uint64_t x = (uint64_t)-1;
  if (nng_stats_get(&st) != 0)
    return x;
  if ((one = ls_stat_scope(st, nng_listener_id(l))) != NULL &&
      (v = nng_stat_find(one, "other")) != NULL)
    x = nng_stat_value(v);
  nng_stats_free(st);
  return x;
}

/* Start an nng listener for url in slot k; for ipc, bound on a temporary
 * name in the path's folder, given the mode, then renamed over the path. */
static int ls_open_slot(ls_one *o, int k, wave_error *err)
{
  wd_listeners *ls = o->ls;
  ls_lst *t = &o->s[k];
  char url[160], tmp[108] = "";
  int rv;
  snprintf(url, sizeof url, "%s", o->url);
  if (o->ipc) {
    char dir[108];
    snprintf(dir, sizeof dir, "%s", o->path);
    char *sl = strrchr(dir, '/');
    if (sl != NULL)
      sl[1] = '\0';
    else
      dir[0] = '\0';
    int w = snprintf(tmp, sizeof tmp, "%s.wavedd-%ld-%u.sock", dir,
                     (long)getpid(), o->gen++);
    if (w < 0 || (size_t)w >= sizeof tmp)
      tmp[0] = '\0';  /* no room for a temporary name: bind the path */
    else
      snprintf(url, sizeof url, "ipc://%s", tmp);
  }
  if ((rv = nng_listener_create(&t->l, ls->sock, url)) != 0)
    return wv_seterr(err, WAVE_EIO, "listen %s: %s", o->url, nng_strerror(rv));
  if ((rv = wd_tls_listener(t->l, o->url, &ls->cfg->tls, err)) != 0) {
    nng_listener_close(t->l);  /* tls+tcp://: its certificate (tls.c) */
    return rv;
  }
  nng_listener_set_size(t->l, NNG_OPT_RECVMAXSZ, ls->cap);
  atomic_store(&t->live, 0);
  atomic_store(&t->added, 0);
  atomic_store(&t->removed, 0);
  t->suspect = 0;
  atomic_store(&t->id, nng_listener_id(t->l));
  if ((rv = nng_listener_start(t->l, 0)) != 0) {
    atomic_store(&t->id, 0);
    nng_listener_close(t->l);
    return wv_seterr(err, WAVE_EIO, "listen %s: %s", o->url, nng_strerror(rv));
  }
  const char *at = tmp[0] ? tmp : o->path;
  struct stat st;
  if (o->ipc && (chmod(at, (mode_t)ls->cfg->ipc_mode) != 0 ||
                 (tmp[0] && rename(tmp, o->path) != 0) ||
                 lstat(o->path, &st) != 0)) {
    int e = errno;
    atomic_store(&t->id, 0);
    nng_listener_close(t->l);
    if (tmp[0])
      unlink(tmp);
    return wv_seterr(err, WAVE_EIO, "listen %s: %s: %s", o->url, at,
                     strerror(e));
  }
  if (o->ipc) {
    o->dev = st.st_dev;
    o->ino = st.st_ino;
    o->have_ino = tmp[0] != '\0';  /* else nng unlinks it on close */
  }
  t->other = ls->stats ? ls_other(t->l) : 0;
  o->cur = k;
  return 0;
}

/* nng's thread: a pipe joined the socket; count it for its listener. */
static void ls_pipe_added(nng_pipe p, nng_pipe_ev ev, void *arg)
{
  wd_listeners *ls = arg;
  (void)ev;
  int id = nng_listener_id(nng_pipe_listener(p));
  for (size_t i = 0; id > 0 && i < ls->n_alloc; i++) {
    int k = ls_find(&ls->v[i], id);
    if (k >= 0) {
      atomic_fetch_add(&ls->v[i].s[k].live, 1);
      atomic_fetch_add(&ls->v[i].s[k].added, 1);
    }
  }
  wd_guard_pipe_added(ls->guard, p);
}

void wd_listeners_pipe_gone(wd_listeners *ls, nng_pipe p)
{
  if (ls == NULL)
    return;
  wd_guard_pipe_gone(ls->guard, p);
  int id = nng_listener_id(nng_pipe_listener(p));
  for (size_t i = 0; id > 0 && i < ls->n_alloc; i++) {
    int k = ls_find(&ls->v[i], id);
    if (k >= 0) {
      atomic_fetch_add(&ls->v[i].s[k].removed, 1);
      if (atomic_load(&ls->v[i].s[k].live) > 0)
        atomic_fetch_sub(&ls->v[i].s[k].live, 1);
    }
  }
}

/* ---- the watchdog ------------------------------------------------------- */

/* A fresh listener on the path; the stuck one retires with its pipes.
 * nng_bug: the cause is nng#1518 (else the socket file was removed). */
static void ls_renew(ls_one *o, const char *why, int nng_bug)
{
  int k = -1;
  for (int i = 0; i < LS_SLOTS && k < 0; i++)
    if (i != o->cur && atomic_load(&o->s[i].id) == 0)
      k = i;
  if (k < 0) {  /* every slot retiring: the oldest goes, with its clients */
    k = (o->cur + 1) % LS_SLOTS;
    wd_warn("listener %s: %d stuck listeners still serve clients; closing "
            "one of them", o->bound, LS_SLOTS - 1);
    atomic_store(&o->s[k].id, 0);
    nng_listener_close(o->s[k].l);
  }
  int old = o->cur;
  wave_error err = {0};
  if (ls_open_slot(o, k, &err) != 0) {
    if (nng_bug || !o->renew_failed)  /* a removed folder: said once */
      wd_error("listener %s %s; a fresh one failed: %s (retrying)",
               o->bound, why, err.message);
    o->renew_failed = !nng_bug;
    return;
  }
  o->renew_failed = 0;
  o->ls->recoveries++;
  if (old >= 0)
    o->s[old].retired = uv_now(o->ls->loop);
  if (nng_bug)
    wd_warn("listener %s %s (nng 1.5 stops accepting on ipc after an "
            "aborted handshake); a fresh listener took the path, connected "
            "clients stay on the old one", o->bound, why);
  else
    wd_warn("listener %s: %s; a fresh listener made it again, connected "
            "clients stay on the old one", o->bound, why);
}

static void ls_recover(ls_one *o, const char *why) { ls_renew(o, why, 1); }

/* Is the path still the socket we renamed there? */
static void ls_check_path(ls_one *o)
{
  if (!o->have_ino || o->cur < 0)
    return;  /* bound on the path itself (nng owns it), or down */
  struct stat st;
  if (lstat(o->path, &st) == 0) {
    if (st.st_dev == o->dev && st.st_ino == o->ino) {
      o->foreign = 0;
      return;
    }
    if (!o->foreign)
      wd_error("listener %s: %s is no longer our socket (another file is "
               "there now; not replaced): new clients cannot reach this "
               "daemon there until it restarts", o->bound, o->path);
    o->foreign = 1;
    return;
  }
  if (errno == ENOENT)
    ls_renew(o, "the socket file was removed", 0);
  else if (!o->foreign) {
    wd_error("listener %s: %s: %s", o->bound, o->path, strerror(errno));
    o->foreign = 1;
  }
}

/* Close retired listeners whose last pipe has gone, LS_GRACE_MS after they
 * retired at the earliest: a client that connected to one in the moment
 * before the rename is waiting there, and its connection must have been
 * made before it is closed under it (its REQ socket then redials the path
 * and resends). */
static void ls_reap(ls_one *o, uint64_t now)
{
  for (int k = 0; k < LS_SLOTS; k++)
    if (k != o->cur && atomic_load(&o->s[k].id) != 0 &&
        atomic_load(&o->s[k].live) == 0 &&
        now - o->s[k].retired >= LS_GRACE_MS) {
      atomic_store(&o->s[k].id, 0);
      nng_listener_close(o->s[k].l);
      wd_debug("listener %s: a retired listener closed", o->bound);
    }
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
    ls_recover(o, why);
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
  uv_buf_t b = uv_buf_init((char *)wd_sp_hello, sizeof wd_sp_hello);
  if (uv_write(&o->wr, (uv_stream_t *)&o->pipe, &b, 1, ls_written) != 0)
    ls_probe_done(o, "failed the probe connection");
}

static void ls_probe(ls_one *o, uint64_t now)
{
  ls_lst *t = &o->s[o->cur];
  if (o->probing) {
    if (o->ending)
      return;
    if (atomic_load(&t->added) != o->seen)
      ls_probe_done(o, NULL);  /* it attaches pipes: healthy */
    else if (now - o->since > LS_DEADLINE_MS)
      ls_probe_done(o, "did not take the probe connection");
    return;
  }
  if (now - o->last_probe < LS_PROBE_MS)
    return;
  o->last_probe = now;
  o->seen = atomic_load(&t->added);
  o->since = now;
  o->probing = 1;
  uv_pipe_init(o->ls->loop, &o->pipe, 0);
  o->pipe.data = o->conn.data = o->wr.data = o;
  uv_pipe_connect(&o->conn, &o->pipe, o->path, ls_connected);
}

static void ls_tick(uv_timer_t *t)
{
  wd_listeners *ls = t->data;
  uint64_t now = uv_now(ls->loop);
  int path_tick = ++ls->ticks % LS_PATH_TICKS == 0;
  for (size_t i = 0; i < ls->n; i++) {
    ls_one *o = &ls->v[i];
    if (!o->ipc || !o->used)
      continue;
    ls_reap(o, now);
    if (o->cur < 0) {  /* a recovery failed: try again */
      ls_recover(o, "is down");
      continue;
    }
    if (path_tick)
      ls_check_path(o);
    if (ls->fixed)
      continue;
    if (!ls->stats) {
      ls_probe(o, now);
      continue;
    }
    /* nng counts a closed pipe's error in its listener's "other" too: only
     * errors beyond the pipes gone are accept errors, and one seen on two
     * ticks is not a pipe still closing */
    ls_lst *c = &o->s[o->cur];
    uint64_t x = ls_other(c->l);
    if (x == (uint64_t)-1)
      continue;
    uint64_t gone = atomic_load(&c->removed);
    int excess = x > c->other && x - c->other > gone;
    if (!excess || !c->suspect) {
      c->suspect = excess;
      continue;
    }
    if (wd_at_fd_limit()) {
      c->other = x - gone;  /* nng retries those itself */
      c->suspect = 0;
      wd_warn("listener %s: out of file descriptors (nng retries the "
              "accept)", o->bound);
      continue;
    }
    ls_recover(o, "stopped accepting");
  }
}

/* ---- start and stop ------------------------------------------------------- */

/* The descriptor socket beside an ipc path (fdpass.h).  A path with no
 * room for ".fd" serves no descriptors: said once, regions are refused. */
static int ls_side_open(ls_one *o, wave_error *err)
{
  char side[108];
  if (o->ls->fp == NULL)
    return 0;
  if (wd_fdpass_path(o->path, side, sizeof side) != 0) {
    wd_warn("listener %s: no room for its descriptor socket %s.fd (a socket "
            "address holds 107 bytes): regions cannot be registered there",
            o->url, o->path);
    return 0;
  }
  return wd_fdsock_open(o->ls->fp, o->ls->loop, o->path,
                        o->ls->cfg->ipc_mode, &o->side, err);
}

static void ls_side_close(ls_one *o)
{
  wd_fdsock_close(o->side);
  o->side = NULL;
}

/* nng unlinks only the temporary names it bound: the path is ours to
 * remove, when it is still our socket. */
static void ls_unlink(ls_one *o)
{
  ls_side_close(o);
  struct stat st;
  if (o->ipc && o->have_ino && lstat(o->path, &st) == 0 &&
      st.st_dev == o->dev && st.st_ino == o->ino)
    unlink(o->path);
  o->have_ino = 0;
}

static void ls_bound(ls_one *o)
{
  snprintf(o->bound, sizeof o->bound, "%s", o->url);
  int port = 0;
  if (o->ipc || nng_listener_get_int(o->s[o->cur].l, NNG_OPT_TCP_BOUND_PORT, &port) != 0)
    return;
  if (wd_tls_url(o->url)) {
    o->guard_port = port;
    wd_guard_port(o->ls->guard, WD_GUARD_TLS, port, 1);
  }
  nng_url *u = NULL;
  if (nng_url_parse(&u, o->url) != 0)
    return;
  if (strcmp(u->u_port, "0") == 0)
    snprintf(o->bound, sizeof o->bound, "%s://%s:%d", u->u_scheme,
             u->u_hostname, port);
  nng_url_free(u);
}

int wd_listeners_start(uv_loop_t *loop, nng_socket sock,
                       const wd_config *cfg, size_t recv_cap, wd_fdpass *fp,
                       wd_listeners **out, wave_error *err)
{
  *out = NULL;
  wd_listeners *ls = calloc(1, sizeof *ls);
  if (ls == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  *out = ls;
  ls->loop = loop;
  ls->fp = fp;
  ls->sock = sock;
  ls->cfg = cfg;
  ls->cap = recv_cap;
  ls->v = calloc(cfg->n_listen + LS_SPARE, sizeof *ls->v);
  ls->urls = calloc(cfg->n_listen + LS_SPARE + 1, sizeof *ls->urls);
  if (ls->v == NULL || ls->urls == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  if ((ls->guard = wd_guard_new(loop, &ls->cfg)) == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  nng_stat *st = NULL;
  ls->stats = nng_stats_get(&st) == 0;
  if (st != NULL)
    nng_stats_free(st);
  char why[120];
  if ((ls->fixed = wd_nngfix_init(why, sizeof why)) != 0)
    wd_debug("nng %s: its aborted-handshake bug (nng#1518) is fixed at the "
             "cause (daemon/net/nngfix.c)", nng_version());
  else
    wd_debug("nng %s: no nng#1518 fix (%s); the ipc watchdog recovers "
             "stuck listeners", nng_version(), why);
  nng_pipe_notify(sock, NNG_PIPE_EV_ADD_POST, ls_pipe_added, ls);
  int any_ipc = 0;
  for (size_t i = 0; i < cfg->n_listen; i++) {
    ls_one *o = &ls->v[i];
    o->ls = ls;
    o->url = cfg->listen[i];
    o->cur = -1;
    o->ipc = strncmp(o->url, "ipc://", 6) == 0;
    int rc;
    if (o->ipc) {
      snprintf(o->path, sizeof o->path, "%s", o->url + 6);
      if ((rc = wd_sockpath_prepare(o->path, err)) != 0)
        return rc;
      if (wd_sockpath_live(o->path))
        return wv_seterr(err, WAVE_EIO, "listen %s: Address in use (a "
                         "running process, another wavedd?, accepts "
                         "connections there)", o->url);
      any_ipc = 1;
    }
    ls->n_alloc = i + 1;  /* the pipe callbacks look at it from here on */
    if ((rc = ls_open_slot(o, 0, err)) != 0)
      return rc;
    ls->n = i + 1;
    o->used = 1;
    if (o->ipc && (rc = ls_side_open(o, err)) != 0)
      return rc;
    ls_bound(o);
    ls->urls[i] = o->bound;
    ls->n_urls = i + 1;
    wd_info("listening on %s", o->bound);
  }
  ls->n_alloc = cfg->n_listen + LS_SPARE;
  if (any_ipc) {
    uv_timer_init(loop, &ls->timer);
    ls->timer.data = ls;
    ls->timer_on = 1;
    uv_timer_start(&ls->timer, ls_tick, LS_TICK_MS, LS_TICK_MS);
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

/* Stop serving o's URL: its listeners close (the serving one and any
 * retiring ones, with the connections they accepted), its probe with it,
 * its socket path goes; the watchdog skips the slot (ipc 0). */
static void ls_drop(ls_one *o)
{
  o->used = 0;
  for (int k = 0; k < LS_SLOTS; k++)
    if (atomic_load(&o->s[k].id) != 0) {
      atomic_store(&o->s[k].id, 0);
      nng_listener_close(o->s[k].l);
    }
  o->cur = -1;
  ls_unlink(o);
  o->ipc = 0;
  if (o->guard_port > 0)
    wd_guard_port(o->ls->guard, WD_GUARD_TLS, o->guard_port, 0);
  o->guard_port = 0;
  if (o->probing && !o->ending) {
    o->ending = 1;
    uv_close((uv_handle_t *)&o->pipe, ls_probe_closed);
  }
}

/* Start the listener of url in a free slot (the start-up checks and
 * creation: wd_sockpath_prepare, wd_sockpath_live, ls_open_slot). */
static int ls_add(wd_listeners *ls, const char *url, ls_one **out,
                  wave_error *err)
{
  ls_one *o = ls_free_slot(ls);
  if (o == NULL)
    return wv_seterr(err, WAVE_EIO, "listen %s: more than %zu listeners "
                     "at once (restart wavedd)", url, ls->n_alloc);
  memset(o->s, 0, sizeof o->s);
  o->ls = ls;
  o->url = url;
  o->bound[0] = '\0';
  o->cur = -1;
  o->probing = o->ending = 0;
  o->have_ino = 0;
  o->guard_port = 0;
  o->foreign = 0;
  o->renew_failed = 0;
  o->ipc = strncmp(url, "ipc://", 6) == 0;
  o->path[0] = '\0';
  if (o->ipc) {
    snprintf(o->path, sizeof o->path, "%s", url + 6);
    int rc = wd_sockpath_prepare(o->path, err);
    if (rc == 0 && wd_sockpath_live(o->path))
      rc = wv_seterr(err, WAVE_EIO, "listen %s: Address in use (a running "
                     "process, another wavedd?, accepts connections "
                     "there)", url);
    if (rc != 0) {
      o->ipc = 0;
      return rc;
    }
  }
  int rc = ls_open_slot(o, 0, err);
  if (rc == 0 && o->ipc && (rc = ls_side_open(o, err)) != 0) {
    atomic_store(&o->s[o->cur].id, 0);
    nng_listener_close(o->s[o->cur].l);
    o->cur = -1;
    ls_unlink(o);
  }
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
    uv_timer_start(&ls->timer, ls_tick, LS_TICK_MS, LS_TICK_MS);
  }
  free(added);
  return 0;
}

void wd_listeners_set_cap(wd_listeners *ls, size_t recv_cap)
{
  if (ls == NULL)
    return;
  ls->cap = recv_cap;  /* fresh listeners take it too */
  for (size_t i = 0; i < ls->n; i++)
    for (int k = 0; k < LS_SLOTS; k++)
      if (atomic_load(&ls->v[i].s[k].id) != 0)
        nng_listener_set_size(ls->v[i].s[k].l, NNG_OPT_RECVMAXSZ, recv_cap);
}

char **wd_listeners_urls(const wd_listeners *ls, size_t *n)
{
  *n = ls ? ls->n_urls : 0;
  return ls ? ls->urls : NULL;
}

unsigned wd_listeners_recoveries(const wd_listeners *ls)
{
  return ls ? ls->recoveries : 0;
}

wd_guard *wd_listeners_guard(const wd_listeners *ls)
{
  return ls ? ls->guard : NULL;
}

void wd_listeners_close(wd_listeners *ls)
{
  if (ls == NULL)
    return;
  if (ls->timer_on)
    uv_close((uv_handle_t *)&ls->timer, NULL);
  ls->timer_on = 0;
  wd_guard_close(ls->guard);
  for (size_t i = 0; i < ls->n; i++) {
    ls_one *o = &ls->v[i];
    if (o->probing && !o->ending) {
      o->ending = 1;
      uv_close((uv_handle_t *)&o->pipe, ls_probe_closed);
    }
    ls_unlink(o);
  }
}

void wd_listeners_free(wd_listeners *ls)
{
  if (ls == NULL)
    return;
  wd_guard_free(ls->guard);
  free(ls->v);
  free(ls->urls);
  free(ls);
}
