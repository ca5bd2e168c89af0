/* lswatch.c - the watchdog of the ipc listeners (listen.c starts and stops
 * them; listen_int.h holds their state).
 *
 * nng 1.5.2, the version Debian ships, has a bug (nanomsg/nng#1518, fixed
 * in 1.6): a peer that closes before the listener wrote its SP header
 * leaves the listener deaf for good.  daemon/net/nngfix.c removes it at
 * its cause (libnng's EPIPE on that write reads as a reset, so nng accepts
 * again at once); with that on, the watchdog below only guards the socket
 * file.  Where the fix cannot be on (nng linked in statically, or our
 * sendmsg not the one libnng calls), the watchdog recovers instead, as
 * before the fix (lw_recover): nng's core counts the accept error in the
 * listener's "other" statistic, so the loop reads it every LW_TICK_MS (nng
 * counts each closed pipe's error there too, so what counts is a rise
 * beyond the listener's pipes gone, seen on two ticks).  On a rise we
 * start a fresh listener on a temporary name in the socket's folder and
 * rename(2) it over the configured path; the stuck one keeps serving the
 * pipes it already has until the last goes, then it is closed.  That
 * recovery has costs the fix does not: a client that connects between the
 * bug and the rename waits on the stuck listener until it closes
 * (LW_GRACE_MS at the earliest) and must redial; nng leaks what the stuck
 * listener held; and a peer's close after the header (NNG_ECONNSHUT, which
 * nng retries by itself after 100 ms) or a pipe that closes slowly under
 * load looks the same in the statistics, so it recovers when it need not.
 * Every ipc listener is bound on a temporary name, so no listener's close
 * ever unlinks the path (nng unlinks the name it bound); the path is
 * unlinked by listen.c, at the end, if it is still our socket.  A rise that comes
 * from the fd limit (nng retries those by itself) starts no recovery.
 * Where nng has no statistics, a probe connection every LW_PROBE_MS checks
 * that the listener attaches it.
 *
 * A socket file that someone removes (rm, a tmp cleaner) leaves the
 * listener accepting on a name nobody can reach.  So the tick also lstat()s
 * each path every LW_PATH_TICKS ticks and compares the inode with the one
 * we renamed there: when the path is gone, a fresh listener takes it as in
 * a recovery (logged at warning; connected clients stay).  When something
 * else is there now, it is not ours to replace (another wavedd may have
 * started on the path): that is logged at error, once, and new clients
 * cannot reach this daemon on the path until it is restarted.
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>

#include "daemon/net/connguard.h"
#include "daemon/net/listen_int.h"
#include "daemon/log.h"
#include "daemon/net/sockpath.h"

#define LW_TICK_MS 20
#define LW_GRACE_MS 1000    /* a retired listener lives at least this long */
#define LW_PROBE_MS 2000    /* without nng statistics only */
#define LW_DEADLINE_MS 3000
#define LW_PATH_TICKS 10    /* the socket file is checked this often */

/* The scope of listener id in nng's statistics tree (nng 1.5.2's
 * nng_stat_find_listener returns the first listener's, whatever it is
 * asked). */
static nng_stat *lw_stat_scope(nng_stat *n, int id)
{
  for (; n != NULL; n = nng_stat_next(n)) {
    if (nng_stat_type(n) == NNG_STAT_SCOPE &&
        strcmp(nng_stat_name(n), "listener") == 0)
      for (nng_stat *c = nng_stat_child(n); c != NULL; c = nng_stat_next(c))
        if (strcmp(nng_stat_name(c), "id") == 0 &&
            nng_stat_value(c) == (uint64_t)id)
          return n;
    nng_stat *r = lw_stat_scope(nng_stat_child(n), id);
    if (r != NULL)
      return r;
  }
  return NULL;
}

uint64_t wd_lswatch_other(nng_listener l)
{
  nng_stat *st = NULL, *one, *v;
  uint64_t x = (uint64_t)-1;
  if (nng_stats_get(&st) != 0)
    return x;
  if ((one = lw_stat_scope(st, nng_listener_id(l))) != NULL &&
      (v = nng_stat_find(one, "other")) != NULL)
    x = nng_stat_value(v);
  nng_stats_free(st);
  return x;
}

/* A fresh listener on the path; the stuck one retires with its pipes.
 * nng_bug: the cause is nng#1518 (else the socket file was removed). */
static void lw_renew(wd_lsurl *o, const char *why, int nng_bug)
{
  int k = -1;
  for (int i = 0; i < WD_LS_SLOTS && k < 0; i++)
    if (i != o->cur && atomic_load(&o->s[i].id) == 0)
      k = i;
  if (k < 0) {  /* every slot retiring: the oldest goes, with its clients */
    k = (o->cur + 1) % WD_LS_SLOTS;
    wd_warn("listener %s: %d stuck listeners still serve clients; closing "
            "one of them", o->bound, WD_LS_SLOTS - 1);
    atomic_store(&o->s[k].id, 0);
    nng_listener_close(o->s[k].l);
  }
  int old = o->cur;
  wave_error err = {0};
  if (wd_listeners_open_slot(o, k, &err) != 0) {
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

static void lw_recover(wd_lsurl *o, const char *why) { lw_renew(o, why, 1); }

/* Is the path still the socket we renamed there? */
static void lw_check_path(wd_lsurl *o)
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
    lw_renew(o, "the socket file was removed", 0);
  else if (!o->foreign) {
    wd_error("listener %s: %s: %s", o->bound, o->path, strerror(errno));
    o->foreign = 1;
  }
}

/* Close retired listeners whose last pipe has gone, LW_GRACE_MS after they
 * retired at the earliest: a client that connected to one in the moment
 * before the rename is waiting there, and its connection must have been
 * made before it is closed under it (its REQ socket then redials the path
 * and resends). */
static void lw_reap(wd_lsurl *o, uint64_t now)
{
  for (int k = 0; k < WD_LS_SLOTS; k++)
    if (k != o->cur && atomic_load(&o->s[k].id) != 0 &&
        atomic_load(&o->s[k].live) == 0 &&
        now - o->s[k].retired >= LW_GRACE_MS) {
      atomic_store(&o->s[k].id, 0);
      nng_listener_close(o->s[k].l);
      wd_debug("listener %s: a retired listener closed", o->bound);
    }
}

static void lw_probe_closed(uv_handle_t *h)
{
  wd_lsurl *o = h->data;
  o->probing = 0;
  o->ending = 0;
}

static void lw_probe_done(wd_lsurl *o, const char *why)
{
  if (o->ending)
    return;
  o->ending = 1;
  uv_close((uv_handle_t *)&o->pipe, lw_probe_closed);
  if (why != NULL)
    lw_recover(o, why);
}

static void lw_written(uv_write_t *w, int status)
{
  if (status < 0 && status != UV_ECANCELED)
    lw_probe_done(w->data, "refused the probe's handshake");
}

static void lw_connected(uv_connect_t *c, int status)
{
  wd_lsurl *o = c->data;
  if (status == UV_ECANCELED)
    return;
  if (status < 0)  /* e.g. the socket file was removed */
    return lw_probe_done(o, "refused the probe connection");
  uv_buf_t b = uv_buf_init((char *)wd_sp_hello, sizeof wd_sp_hello);
  if (uv_write(&o->wr, (uv_stream_t *)&o->pipe, &b, 1, lw_written) != 0)
    lw_probe_done(o, "failed the probe connection");
}

static void lw_probe(wd_lsurl *o, uint64_t now)
{
  wd_lsslot *t = &o->s[o->cur];
  if (o->probing) {
    if (o->ending)
      return;
    if (atomic_load(&t->added) != o->seen)
      lw_probe_done(o, NULL);  /* it attaches pipes: healthy */
    else if (now - o->since > LW_DEADLINE_MS)
      lw_probe_done(o, "did not take the probe connection");
    return;
  }
  if (now - o->last_probe < LW_PROBE_MS)
    return;
  o->last_probe = now;
  o->seen = atomic_load(&t->added);
  o->since = now;
  o->probing = 1;
  uv_pipe_init(o->ls->loop, &o->pipe, 0);
  o->pipe.data = o->conn.data = o->wr.data = o;
  uv_pipe_connect(&o->conn, &o->pipe, o->path, lw_connected);
}

static void lw_tick(uv_timer_t *t)
{
  wd_listeners *ls = t->data;
  uint64_t now = uv_now(ls->loop);
  int path_tick = ++ls->ticks % LW_PATH_TICKS == 0;
  for (size_t i = 0; i < ls->n; i++) {
    wd_lsurl *o = &ls->v[i];
    if (!o->ipc || !o->used)
      continue;
    lw_reap(o, now);
    if (o->cur < 0) {  /* a recovery failed: try again */
      lw_recover(o, "is down");
      continue;
    }
    if (path_tick)
      lw_check_path(o);
    if (ls->fixed)
      continue;
    if (!ls->stats) {
      lw_probe(o, now);
      continue;
    }
    /* nng counts a closed pipe's error in its listener's "other" too: only
     * errors beyond the pipes gone are accept errors, and one seen on two
     * ticks is not a pipe still closing */
    wd_lsslot *c = &o->s[o->cur];
    uint64_t x = wd_lswatch_other(c->l);
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
    lw_recover(o, "stopped accepting");
  }
}

void wd_lswatch_start(wd_listeners *ls)
{
  if (ls->timer_on)
    return;
  uv_timer_init(ls->loop, &ls->timer);
  ls->timer.data = ls;
  ls->timer_on = 1;
  uv_timer_start(&ls->timer, lw_tick, LW_TICK_MS, LW_TICK_MS);
}

void wd_lswatch_probe_stop(wd_lsurl *o)
{
  if (o->probing && !o->ending) {
    o->ending = 1;
    uv_close((uv_handle_t *)&o->pipe, lw_probe_closed);
  }
}
