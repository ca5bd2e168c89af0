/* connguard.c - see connguard.h.  Every connection ends.
 *
 * Why this exists: two kinds of TCP connection in the daemon are owned by
 * nng code that never ends them, and each one holds a descriptor, so a
 * peer that opens enough of them exhausts RLIMIT_NOFILE and every new ipc
 * client is locked out (issue 22, finding 4).
 *  - tls+tcp://: nng 1.5.2 gives a new connection 10 s to negotiate, but
 *    while the TLS handshake waits for bytes (a peer that sent a record
 *    header and stopped) the timeout cancels a send the TLS layer has not
 *    started, which cancels nothing: the connection stays for good.  Until
 *    the handshake and the SP header are done it is not a pipe, so the
 *    idle sweep (front.c) never sees it.
 *  - the metrics port (nng's HTTP server): a connection that never sends a
 *    request is kept for good, and there is no cap on their number; nng
 *    1.5.2 has no option for either (no timeout, no hook at accept).
 *
 * What we do: every WG_TICK_MS the loop lists /proc/self/fd (a directory
 * handle opened at start, so listing needs no new descriptor when they have
 * run out) and, for each TCP socket whose local port is a watched one,
 * notes when it was first seen (by socket inode).  Then:
 *  - TLS: a connection whose peer address is not a pipe's (pipes are
 *    recorded from nng's pipe callbacks) after limits.tls_handshake_ms is
 *    closed, and beyond limits.max_tls_handshakes such connections at
 *    once the oldest are closed;
 *  - metrics: a connection older than limits.metrics_max_age_ms is closed
 *    (the page is served with "Connection: close", so a scraper's own
 *    connection lasts one request), and beyond limits.metrics_connections
 *    the oldest are closed.
 * "Closed" is shutdown(2), never close(2): nng still owns the descriptor
 * and sees the end of the stream, fails what waits on it and closes it
 * itself, so no descriptor is ever closed under nng.  The inode is checked
 * again just before, so a number nng closed and reused meanwhile is left
 * alone.  What the rules cost a legitimate client: a TLS client must finish
 * its handshake within the deadline; a metrics connection lives at most its
 * age (Prometheus reconnects).  Between two ticks a flood can still use up
 * descriptors for a moment: nng retries its accepts, and the raised
 * RLIMIT_NOFILE (wdmain.c) makes that moment need tens of thousands of
 * connections.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/net/connguard.h"
#include "daemon/log.h"

#define WG_TICK_MS 250
#define WG_PORTS 64
#define WG_LOG_MS 10000     /* one warning line per kind this often at most */

typedef struct wg_addr {
  int family;               /* AF_INET, AF_INET6 */
  uint16_t port;            /* network order */
  uint8_t a[16];
} wg_addr;

typedef struct wg_pipe {
  uint32_t id;
  wg_addr peer;
} wg_pipe;

typedef struct wg_conn {
  ino_t ino;
  int fd;
  int kind;
  int piped;                /* its peer is a pipe's */
  uint64_t first;           /* loop time first seen */
} wg_conn;

struct wd_guard {
  uv_loop_t *loop;
  const wd_config *const *cfg;
  uv_timer_t timer;
  DIR *fds;
  struct { int kind, port; } ports[WG_PORTS];
  size_t n_ports;
  pthread_mutex_t mu;       /* pipes (nng's threads add and remove) */
  wg_pipe *pipes;
  size_t n_pipes, cap_pipes;
  wg_conn *conns;           /* the last tick's, sorted by inode */
  size_t n_conns;
  uint64_t open_files;
  uint64_t closed[2];
  uint64_t logged[2];       /* closed[] at the last warning */
  uint64_t log_at[2];
  int shut;                 /* wd_guard_close ran */
};

uint64_t wd_max_files(void)
{
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
    return 0;
  return rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
}

static int wg_from_sockaddr(const struct sockaddr_storage *ss, wg_addr *out)
{
  memset(out, 0, sizeof *out);
  if (ss->ss_family == AF_INET) {
    const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;
    out->family = AF_INET;
    out->port = s4->sin_port;
    memcpy(out->a, &s4->sin_addr, 4);
    return 0;
  }
  if (ss->ss_family == AF_INET6) {
    const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
    out->family = AF_INET6;
    out->port = s6->sin6_port;
    memcpy(out->a, &s6->sin6_addr, 16);
    return 0;
  }
  return -1;
}

static int wg_from_nng(const nng_sockaddr *sa, wg_addr *out)
{
  memset(out, 0, sizeof *out);
  if (sa->s_family == NNG_AF_INET) {
    out->family = AF_INET;
    out->port = sa->s_in.sa_port;
    memcpy(out->a, &sa->s_in.sa_addr, 4);
    return 0;
  }
  if (sa->s_family == NNG_AF_INET6) {
    out->family = AF_INET6;
    out->port = sa->s_in6.sa_port;
    memcpy(out->a, sa->s_in6.sa_addr, 16);
    return 0;
  }
  return -1;
}

static int wg_same(const wg_addr *x, const wg_addr *y)
{
  return x->family == y->family && x->port == y->port &&
         memcmp(x->a, y->a, 16) == 0;
}

/* ---- pipes (nng's threads) ------------------------------------------------ */

void wd_guard_pipe_added(wd_guard *g, nng_pipe p)
{
  nng_sockaddr sa;
  wg_addr a;
  if (g == NULL || nng_pipe_get_addr(p, NNG_OPT_REMADDR, &sa) != 0 ||
      wg_from_nng(&sa, &a) != 0)
    return;  /* ipc, or no address: never a TCP connection we watch */
  pthread_mutex_lock(&g->mu);
  if (g->n_pipes == g->cap_pipes) {
    size_t nc = g->cap_pipes ? 2 * g->cap_pipes : 64;
    wg_pipe *v = realloc(g->pipes, nc * sizeof *v);
    if (v != NULL) {
      g->pipes = v;
      g->cap_pipes = nc;
    }
  }
  if (g->n_pipes < g->cap_pipes)  /* else: seen as a handshake, closed */
    g->pipes[g->n_pipes++] = (wg_pipe){.id = nng_pipe_id(p), .peer = a};
  pthread_mutex_unlock(&g->mu);
}

void wd_guard_pipe_gone(wd_guard *g, nng_pipe p)
{
  if (g == NULL)
    return;
  uint32_t id = (uint32_t)nng_pipe_id(p);
  pthread_mutex_lock(&g->mu);
  for (size_t i = 0; i < g->n_pipes; i++)
    if (g->pipes[i].id == id) {
      g->pipes[i] = g->pipes[--g->n_pipes];
      break;
    }
  pthread_mutex_unlock(&g->mu);
}

/* ---- the tick (loop) ------------------------------------------------------ */

static int wg_kind_of(const wd_guard *g, uint16_t port_net)
{
  int port = ntohs(port_net);
  for (size_t i = 0; i < g->n_ports; i++)
    if (g->ports[i].port == port)
      return g->ports[i].kind;
  return -1;
}

static int wg_by_ino(const void *a, const void *b)
{
  ino_t x = ((const wg_conn *)a)->ino, y = ((const wg_conn *)b)->ino;
  return x < y ? -1 : x > y;
}

/* The watched connections open now, with when each was first seen. */
static size_t wg_scan(wd_guard *g, uint64_t now, wg_conn **out)
{
  size_t n = 0, cap = 0, files = 0;
  wg_conn *v = NULL;
  rewinddir(g->fds);
  struct dirent *de;
  int self = dirfd(g->fds);
  while ((de = readdir(g->fds)) != NULL) {
    if (de->d_name[0] < '0' || de->d_name[0] > '9')
      continue;
    files++;
    int fd = atoi(de->d_name);
    struct stat st;
    if (fd == self || fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode))
      continue;
    struct sockaddr_storage ls, ps;
    socklen_t ll = sizeof ls, pl = sizeof ps;
    wg_addr loc, peer;
    if (getsockname(fd, (struct sockaddr *)&ls, &ll) != 0 ||
        wg_from_sockaddr(&ls, &loc) != 0)
      continue;
    int kind = wg_kind_of(g, loc.port);
    if (kind < 0 || getpeername(fd, (struct sockaddr *)&ps, &pl) != 0 ||
        wg_from_sockaddr(&ps, &peer) != 0)
      continue;  /* not watched, or the listening socket itself */
    if (n == cap) {
      size_t nc = cap ? 2 * cap : 64;
      wg_conn *w = realloc(v, nc * sizeof *w);
      if (w == NULL)
        break;
      v = w;
      cap = nc;
    }
    wg_conn *c = &v[n++];
    *c = (wg_conn){.ino = st.st_ino, .fd = fd, .kind = kind, .first = now};
    if (kind == WD_GUARD_TLS) {
      pthread_mutex_lock(&g->mu);
      for (size_t i = 0; i < g->n_pipes && !c->piped; i++)
        c->piped = wg_same(&g->pipes[i].peer, &peer);
      pthread_mutex_unlock(&g->mu);
    }
  }
  g->open_files = files;
  if (n > 1)
    qsort(v, n, sizeof *v, wg_by_ino);
  /* carry the first sighting over from the last tick (both sorted) */
  for (size_t i = 0, j = 0; i < n && j < g->n_conns;) {
    if (v[i].ino == g->conns[j].ino) {
      v[i].first = g->conns[j].first;
      i++, j++;
    } else if (v[i].ino < g->conns[j].ino) {
      i++;
    } else {
      j++;
    }
  }
  *out = v;
  return n;
}

static void wg_shut(wd_guard *g, wg_conn *c)
{
  struct stat st;
  if (c->fd < 0 || fstat(c->fd, &st) != 0 || st.st_ino != c->ino)
    return;  /* nng closed it meanwhile (and may have reused the number) */
  if (shutdown(c->fd, SHUT_RDWR) == 0)
    g->closed[c->kind]++;
  c->fd = -1;
}

static int wg_by_age(const void *a, const void *b)
{
  const wg_conn *x = *(wg_conn *const *)a, *y = *(wg_conn *const *)b;
  return x->first < y->first ? -1 : x->first > y->first;
}

/* Close kind's candidates older than max_age_ms (0: no age), then the
 * oldest beyond cap. */
static void wg_apply(wd_guard *g, wg_conn *v, size_t n, int kind,
                     uint64_t now, uint64_t max_age_ms, size_t cap)
{
  wg_conn **live = malloc((n + 1) * sizeof *live);
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    wg_conn *c = &v[i];
    if (c->kind != kind || c->piped)
      continue;
    if (max_age_ms > 0 && now - c->first >= max_age_ms)
      wg_shut(g, c);
    else if (live != NULL)
      live[k++] = c;
  }
  if (live != NULL && k > cap) {
    qsort(live, k, sizeof *live, wg_by_age);
    for (size_t i = 0; i < k - cap; i++)
      wg_shut(g, live[i]);
  }
  free(live);
}

static void wg_report(wd_guard *g, int kind, uint64_t now)
{
  static const char *const what[2] = {
    "TLS connection(s) that did not finish their handshake in time "
    "(limits.tls_handshake_ms) or were over limits.max_tls_handshakes",
    "metrics connection(s) past limits.metrics_max_age_ms or over "
    "limits.metrics_connections",
  };
  uint64_t d = g->closed[kind] - g->logged[kind];
  if (d == 0 || now - g->log_at[kind] < WG_LOG_MS)
    return;
  if (kind == WD_GUARD_TLS)
    wd_warn("closed %" PRIu64 " %s", d, what[kind]);
  else  /* a scraper's old connection is routine */
    wd_debug("closed %" PRIu64 " %s", d, what[kind]);
  g->logged[kind] = g->closed[kind];
  g->log_at[kind] = now;
}

static void wg_tick(uv_timer_t *t)
{
  wd_guard *g = t->data;
  if (g->n_ports == 0 || g->fds == NULL)
    return;
  const wd_limits *lim = &(*g->cfg)->limits;
  uint64_t now = uv_now(g->loop);
  wg_conn *v = NULL;
  size_t n = wg_scan(g, now, &v);
  wg_apply(g, v, n, WD_GUARD_TLS, now, lim->tls_handshake_ms,
           lim->max_tls_handshakes);
  wg_apply(g, v, n, WD_GUARD_METRICS, now, lim->metrics_max_age_ms,
           lim->metrics_connections);
  free(g->conns);
  g->conns = v;
  g->n_conns = n;
  wg_report(g, WD_GUARD_TLS, now);
  wg_report(g, WD_GUARD_METRICS, now);
}

/* ---- life ----------------------------------------------------------------- */

wd_guard *wd_guard_new(uv_loop_t *loop, const wd_config *const *cfg)
{
  wd_guard *g = calloc(1, sizeof *g);
  if (g == NULL)
    return NULL;
  g->loop = loop;
  g->cfg = cfg;
  g->open_files = (uint64_t)-1;
  pthread_mutex_init(&g->mu, NULL);
  if ((g->fds = opendir("/proc/self/fd")) == NULL)
    wd_warn("/proc/self/fd: %s: stalled TLS handshakes and idle metrics "
            "connections are not closed", strerror(errno));
  uv_timer_init(loop, &g->timer);
  g->timer.data = g;
  uv_timer_start(&g->timer, wg_tick, WG_TICK_MS, WG_TICK_MS);
  uv_unref((uv_handle_t *)&g->timer);
  return g;
}

void wd_guard_port(wd_guard *g, wd_guard_kind kind, int port, int on)
{
  if (g == NULL || port <= 0)
    return;
  for (size_t i = 0; i < g->n_ports; i++)
    if (g->ports[i].port == port && g->ports[i].kind == (int)kind) {
      if (!on)
        g->ports[i] = g->ports[--g->n_ports];
      return;
    }
  if (on && g->n_ports < WG_PORTS) {
    g->ports[g->n_ports].kind = kind;
    g->ports[g->n_ports].port = port;
    g->n_ports++;
  }
}

uint64_t wd_guard_open_files(const wd_guard *g)
{
  return g ? g->open_files : (uint64_t)-1;
}

uint64_t wd_guard_closed(const wd_guard *g, wd_guard_kind kind)
{
  return g ? g->closed[kind] : 0;
}

void wd_guard_close(wd_guard *g)
{
  if (g == NULL || g->shut)
    return;
  g->shut = 1;
  uv_close((uv_handle_t *)&g->timer, NULL);
  if (g->fds != NULL)
    closedir(g->fds);
  g->fds = NULL;
}

void wd_guard_free(wd_guard *g)
{
  if (g == NULL)
    return;
  free(g->pipes);
  free(g->conns);
  pthread_mutex_destroy(&g->mu);
  free(g);
}

/* 1 when this process cannot open one more file (nng then retries its
 * accept by itself after 100 ms: nothing to recover). */
int wd_at_fd_limit(void)
{
  int fd = dup(STDERR_FILENO);
  if (fd >= 0) {
    close(fd);
    return 0;
  }
  return errno == EMFILE || errno == ENFILE;
}
