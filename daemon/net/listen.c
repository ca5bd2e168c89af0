/* listen.c - the listeners: one per configured URL, started, changed by a
 * reload and stopped here (the watchdog of the ipc ones is lswatch.c;
 * listen_int.h holds the state the two share).
 *
 * Each URL keeps up to WD_LS_SLOTS nng listeners: the serving one and the
 * stuck ones the watchdog retired, still serving their pipes.  Every pipe
 * is counted for its listener here, from front.c's pipe callbacks on nng's
 * threads: ADD_PRE, before the pipe can carry a request (at ADD_POST a
 * request could be answered before its pipe was counted), and REM_POST,
 * which nng runs for every pipe that ran ADD_PRE, so the counts balance
 * even for pipes front.c refuses.  The watchdog reads the counts, status
 * and the metrics report them per URL (wd_listeners_conns).
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
#include "daemon/net/listen_int.h"
#include "daemon/net/nngfix.h"
#include "daemon/log.h"
#include "daemon/net/sockpath.h"
#include "daemon/net/tls.h"
#include "core/base.h"

#define LS_SPARE 32         /* URL slots beyond the start-up ones, for reloads */


static int ls_find(wd_lsurl *o, int id)
{
  for (int k = 0; id > 0 && k < WD_LS_SLOTS; k++)
    if (atomic_load(&o->s[k].id) == id)
      return k;
  return -1;
}

/* Start an nng listener for url in slot k; for ipc, bound on a temporary
 * name in the path's folder, given the mode, then renamed over the path. */
int wd_listeners_open_slot(wd_lsurl *o, int k, wave_error *err)
{
  wd_listeners *ls = o->ls;
  wd_lsslot *t = &o->s[k];
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
  t->other = ls->stats ? wd_lswatch_other(t->l) : 0;
  o->cur = k;
  return 0;
}

void wd_listeners_pipe_added(wd_listeners *ls, nng_pipe p)
{
  if (ls == NULL)
    return;
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

/* ---- start and stop ------------------------------------------------------- */

/* The descriptor socket beside an ipc path (fdpass.h).  A path with no
 * room for ".fd" serves no descriptors: said once, regions are refused. */
static int ls_side_open(wd_lsurl *o, wave_error *err)
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

static void ls_side_close(wd_lsurl *o)
{
  wd_fdsock_close(o->side);
  o->side = NULL;
}

/* nng unlinks only the temporary names it bound: the path is ours to
 * remove, when it is still our socket. */
static void ls_unlink(wd_lsurl *o)
{
  ls_side_close(o);
  struct stat st;
  if (o->ipc && o->have_ino && lstat(o->path, &st) == 0 &&
      st.st_dev == o->dev && st.st_ino == o->ino)
    unlink(o->path);
  o->have_ino = 0;
}

static void ls_bound(wd_lsurl *o)
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
  int any_ipc = 0;
  for (size_t i = 0; i < cfg->n_listen; i++) {
    wd_lsurl *o = &ls->v[i];
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
    if ((rc = wd_listeners_open_slot(o, 0, err)) != 0)
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
  if (any_ipc)
    wd_lswatch_start(ls);
  return 0;
}

/* ---- a reload: listeners added and removed (wd_listeners_update) ------- */

static wd_lsurl *ls_serving(wd_listeners *ls, const char *url)
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
static wd_lsurl *ls_free_slot(wd_listeners *ls)
{
  for (size_t i = 0; i < ls->n_alloc; i++)
    if (!ls->v[i].used && !ls->v[i].probing)
      return &ls->v[i];
  return NULL;
}

/* Stop serving o's URL: its listeners close (the serving one and any
 * retiring ones, with the connections they accepted), its probe with it,
 * its socket path goes; the watchdog skips the slot (ipc 0). */
static void ls_drop(wd_lsurl *o)
{
  o->used = 0;
  for (int k = 0; k < WD_LS_SLOTS; k++)
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
  wd_lswatch_probe_stop(o);
}

/* Start the listener of url in a free slot (the start-up checks and
 * creation: wd_sockpath_prepare, wd_sockpath_live, wd_listeners_open_slot). */
static int ls_add(wd_listeners *ls, const char *url, wd_lsurl **out,
                  wave_error *err)
{
  wd_lsurl *o = ls_free_slot(ls);
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
  int rc = wd_listeners_open_slot(o, 0, err);
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
  wd_lsurl **added = calloc(cfg->n_listen + 1, sizeof *added);
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
    wd_lsurl *o = &ls->v[i];
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
  if (any_ipc)
    wd_lswatch_start(ls);
  free(added);
  return 0;
}

void wd_listeners_set_cap(wd_listeners *ls, size_t recv_cap)
{
  if (ls == NULL)
    return;
  ls->cap = recv_cap;  /* fresh listeners take it too */
  for (size_t i = 0; i < ls->n; i++)
    for (int k = 0; k < WD_LS_SLOTS; k++)
      if (atomic_load(&ls->v[i].s[k].id) != 0)
        nng_listener_set_size(ls->v[i].s[k].l, NNG_OPT_RECVMAXSZ, recv_cap);
}

char **wd_listeners_urls(const wd_listeners *ls, size_t *n)
{
  *n = ls ? ls->n_urls : 0;
  return ls ? ls->urls : NULL;
}

uint64_t wd_listeners_conns(const wd_listeners *ls, size_t i)
{
  size_t u = 0;
  for (size_t j = 0; ls != NULL && j < ls->n; j++) {
    const wd_lsurl *o = &ls->v[j];
    if (!o->used || u++ != i)
      continue;
    uint64_t n = 0;
    for (int k = 0; k < WD_LS_SLOTS; k++)
      if (atomic_load(&o->s[k].id) != 0)
        n += (uint64_t)atomic_load(&o->s[k].live);
    return n;
  }
  return 0;
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
    wd_lsurl *o = &ls->v[i];
    wd_lswatch_probe_stop(o);
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
