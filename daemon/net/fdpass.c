/* fdpass.c - the ticket store and the side sockets that take region
 * descriptors by SCM_RIGHTS (see fdpass.h).
 *
 * The side socket is served like the rest of the loop's I/O: never a
 * blocking call.  Each accepted connection gets a uv_poll and is read with
 * a non-blocking recvmsg (MSG_CMSG_CLOEXEC, so a descriptor never leaks
 * into a child); a message that carries anything but exactly one
 * descriptor, or whose control data was truncated, is refused, and every
 * descriptor received and not kept is closed.  One descriptor per
 * connection: the reply goes out (a few bytes, into an empty socket
 * buffer, MSG_DONTWAIT) and the connection closes.
 *
 * The silent cannot hold it (issue 35, finding 1): a connection that has
 * sent no descriptor within FS_CONN_MS (a client sends at once) is closed;
 * each uid (SO_PEERCRED, read at accept) keeps at most FS_PER_UID open,
 * its next ones answered EBUSY and closed; and when all FS_MAX_CONNS are
 * open, a newcomer takes the oldest connection of the uid that holds the
 * most, if that uid holds more than the newcomer's.  So one uid at its
 * bound, or several, cannot refuse another uid.  The deadline runs on its
 * own timer, armed only while a connection is open.  The ticket store
 * (locked) also counts each uid's open side connections, for status.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "daemon/net/fdpass.h"
#include "daemon/log.h"
#include "daemon/net/sockpath.h"
#include "core/base.h"
#include "core/queue.h"

#define FS_MAX_CONNS WD_FDPASS_SIDE_MAX
#define FS_PER_UID WD_FDPASS_SIDE_PER_UID
#define FS_CONN_MS 250   /* to send the descriptor, from accept */
#define FS_TICK_MS 1000  /* ticket expiry */
#define FS_MAX_FDS 8   /* received at once before we refuse them all */

typedef struct fp_entry {
  uint8_t ticket[WD_FDPASS_TICKET];
  int fd;
  uint32_t uid, pid;
  uint64_t at;     /* ms, CLOCK_MONOTONIC */
} fp_entry;

typedef struct fp_side {
  uint32_t uid;
  unsigned n;      /* its open side connections, every side socket's */
} fp_side;

struct wd_fdpass {
  pthread_mutex_t mu;
  fp_entry v[WD_FDPASS_MAX];
  size_t n;
  fp_side *side;   /* the uids with side connections open (status) */
  size_t n_side, cap_side;
};

static uint64_t fp_now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int wd_fdpass_new(wd_fdpass **out, wave_error *err)
{
  wd_fdpass *fp = calloc(1, sizeof *fp);
  if ((*out = fp) == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  pthread_mutex_init(&fp->mu, NULL);
  return 0;
}

void wd_fdpass_free(wd_fdpass *fp)
{
  if (fp == NULL)
    return;
  for (size_t i = 0; i < fp->n; i++)
    close(fp->v[i].fd);
  free(fp->side);
  pthread_mutex_destroy(&fp->mu);
  free(fp);
}

/* A side connection of uid opened (+1) or closed (-1), for status. */
static void fp_side_count(wd_fdpass *fp, uint32_t uid, int delta)
{
  pthread_mutex_lock(&fp->mu);
  size_t i = 0;
  while (i < fp->n_side && fp->side[i].uid != uid)
    i++;
  if (i == fp->n_side && delta > 0) {
    if (fp->n_side == fp->cap_side) {
      size_t cap = fp->cap_side ? 2 * fp->cap_side : 16;
      fp_side *v = realloc(fp->side, cap * sizeof *v);
      if (v == NULL) {  /* status misses it; serving does not */
        pthread_mutex_unlock(&fp->mu);
        return;
      }
      fp->side = v;
      fp->cap_side = cap;
    }
    fp->side[fp->n_side++] = (fp_side){uid, 0};
  }
  if (i < fp->n_side) {
    if (delta > 0)
      fp->side[i].n++;
    else if (fp->side[i].n > 0 && --fp->side[i].n == 0)
      fp->side[i] = fp->side[--fp->n_side];
  }
  pthread_mutex_unlock(&fp->mu);
}

size_t wd_fdpass_side(wd_fdpass *fp, uint32_t *uid, unsigned *n, size_t max,
                      unsigned *all)
{
  size_t k = 0;
  *all = 0;
  if (fp == NULL)
    return 0;
  pthread_mutex_lock(&fp->mu);
  for (size_t i = 0; i < fp->n_side; i++) {
    *all += fp->side[i].n;
    if (k < max) {
      uid[k] = fp->side[i].uid;
      n[k++] = fp->side[i].n;
    }
  }
  pthread_mutex_unlock(&fp->mu);
  return k;
}

/* Under mu: drop the entries older than the TTL (their fds into *drop). */
static void fp_expire_locked(wd_fdpass *fp, uint64_t now, int *drop,
                             size_t *n_drop)
{
  for (size_t i = 0; i < fp->n;) {
    if (now - fp->v[i].at >= WD_FDPASS_TTL_MS) {
      drop[(*n_drop)++] = fp->v[i].fd;
      fp->v[i] = fp->v[--fp->n];
    } else {
      i++;
    }
  }
}

size_t wd_fdpass_expire(wd_fdpass *fp)
{
  int drop[WD_FDPASS_MAX];
  size_t n_drop = 0, left;
  pthread_mutex_lock(&fp->mu);
  fp_expire_locked(fp, fp_now_ms(), drop, &n_drop);
  left = fp->n;
  pthread_mutex_unlock(&fp->mu);
  for (size_t i = 0; i < n_drop; i++)
    close(drop[i]);
  if (n_drop > 0)
    wd_debug("fdpass: %zu unclaimed region descriptors expired", n_drop);
  return left;
}

int wd_fdpass_put(wd_fdpass *fp, int fd, uint32_t uid, uint32_t pid,
                  uint8_t ticket[WD_FDPASS_TICKET], wave_error *err)
{
  uint8_t t[WD_FDPASS_TICKET];
  size_t got = 0;
  while (got < sizeof t) {
    ssize_t k = getrandom(t + got, sizeof t - got, 0);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0) {
      close(fd);
      return wv_seterr(err, WAVE_EINTERNAL, "no random bytes for a ticket: "
                       "%s", strerror(errno));
    }
    got += (size_t)k;
  }
  int drop[WD_FDPASS_MAX];
  size_t n_drop = 0, mine = 0;
  int rc = 0;
  pthread_mutex_lock(&fp->mu);
  fp_expire_locked(fp, fp_now_ms(), drop, &n_drop);
  for (size_t i = 0; i < fp->n; i++)
    mine += fp->v[i].uid == uid;
  if (mine >= WD_FDPASS_PER_UID)
    rc = wv_seterr(err, WAVE_EBUSY, "uid %" PRIu32 " has %zu descriptors "
                   "passed and not yet registered (at most %d; they expire "
                   "after %d ms)", uid, mine, WD_FDPASS_PER_UID,
                   WD_FDPASS_TTL_MS);
  else if (fp->n >= WD_FDPASS_MAX)
    rc = wv_seterr(err, WAVE_EBUSY, "%d descriptors passed and not yet "
                   "registered, the daemon's most (they expire after %d ms)",
                   WD_FDPASS_MAX, WD_FDPASS_TTL_MS);
  if (rc == 0) {
    fp_entry *e = &fp->v[fp->n++];
    memcpy(e->ticket, t, sizeof t);
    e->fd = fd;
    e->uid = uid;
    e->pid = pid;
    e->at = fp_now_ms();
    memcpy(ticket, t, sizeof t);
  }
  pthread_mutex_unlock(&fp->mu);
  if (rc != 0)
    close(fd);
  for (size_t i = 0; i < n_drop; i++)
    close(drop[i]);
  return rc;
}

int wd_fdpass_claim(wd_fdpass *fp, const uint8_t *ticket, size_t n,
                    uint32_t uid, uint32_t pid, int *fd, wave_error *err)
{
  *fd = -1;
  if (n != WD_FDPASS_TICKET)
    return wv_seterr(err, WAVE_EREGION, "fd_ticket is %zu bytes, not %d",
                     n, WD_FDPASS_TICKET);
  int drop[WD_FDPASS_MAX];
  size_t n_drop = 0;
  int rc = 0;
  pthread_mutex_lock(&fp->mu);
  fp_expire_locked(fp, fp_now_ms(), drop, &n_drop);
  size_t i = 0;
  while (i < fp->n && memcmp(fp->v[i].ticket, ticket, n) != 0)
    i++;
  if (i == fp->n)
    rc = wv_seterr(err, WAVE_EREGION, "no descriptor waits under this "
                   "fd_ticket (unknown, already registered, or expired "
                   "after %d ms)", WD_FDPASS_TTL_MS);
  else if (fp->v[i].uid != uid || fp->v[i].pid != pid)
    rc = wv_seterr(err, WAVE_EREGION, "the descriptor of this fd_ticket "
                   "was passed by uid %" PRIu32 " pid %" PRIu32 ", not by "
                   "this connection's uid %" PRIu32 " pid %" PRIu32,
                   fp->v[i].uid, fp->v[i].pid, uid, pid);
  if (rc == 0) {
    *fd = fp->v[i].fd;
    fp->v[i] = fp->v[--fp->n];
  }
  pthread_mutex_unlock(&fp->mu);
  for (size_t k = 0; k < n_drop; k++)
    close(drop[k]);
  return rc;
}

int wd_fdpass_path(const char *ipc_path, char *out, size_t n)
{
  struct sockaddr_un sa;
  int w = snprintf(out, n, "%s.fd", ipc_path);
  if (w < 0 || (size_t)w >= n || (size_t)w >= sizeof sa.sun_path)
    return -1;
  return 0;
}

/* ---- the side socket ------------------------------------------------------ */

typedef struct fs_conn {
  uv_poll_t poll;
  int fd;
  uint32_t uid;
  uint64_t since;
  wv_qnode q;         /* wd_fdsock.conns, newest first */
  wd_fdsock *s;
} fs_conn;

struct wd_fdsock {
  wd_fdpass *fp;
  uv_loop_t *loop;
  uv_poll_t poll;
  uv_timer_t timer;
  uv_timer_t dead;    /* FS_CONN_MS deadlines, while conns != NULL */
  int fd;
  char path[108];
  dev_t dev;
  ino_t ino;
  wv_qnode conns;     /* fs_conn.q (FS_OF) */
  unsigned n_conns;
  unsigned pending;   /* handles whose close callback has not run */
  int closing;
};

#define FS_OF(n) WV_Q_ENTRY(n, fs_conn, q)

static void fs_maybe_free(wd_fdsock *s)
{
  if (s->closing && s->pending == 0)
    free(s);
}

static void fs_conn_closed(uv_handle_t *h)
{
  fs_conn *c = h->data;
  wd_fdsock *s = c->s;
  close(c->fd);
  free(c);
  s->pending--;
  fs_maybe_free(s);
}

static void fs_conn_close(fs_conn *c)
{
  wd_fdsock *s = c->s;
  wv_q_remove(&c->q);
  s->n_conns--;
  fp_side_count(s->fp, c->uid, -1);
  uv_poll_stop(&c->poll);
  uv_close((uv_handle_t *)&c->poll, fs_conn_closed);
}

/* Reply: byte 0 the error code (0: ok), then the ticket or a message. */
static void fs_reply(fs_conn *c, int code, const uint8_t *ticket,
                     const char *msg)
{
  uint8_t b[1 + 200];
  size_t n = 1;
  b[0] = (uint8_t)code;
  if (code == 0) {
    memcpy(b + 1, ticket, WD_FDPASS_TICKET);
    n += WD_FDPASS_TICKET;
  } else {
    size_t m = strlen(msg);
    if (m > sizeof b - 1)
      m = sizeof b - 1;
    memcpy(b + 1, msg, m);
    n += m;
  }
  if (send(c->fd, b, n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
    wd_debug("fdpass: reply not sent: %s", strerror(errno));
}

static void fs_conn_read(uv_poll_t *h, int status, int events)
{
  fs_conn *c = h->data;
  (void)events;
  if (status < 0)
    return fs_conn_close(c);
  uint8_t data[16];
  union {
    struct cmsghdr align;
    char buf[CMSG_SPACE(FS_MAX_FDS * sizeof(int))];
  } ctl;
  struct iovec iov = {data, sizeof data};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1,
                     .msg_control = ctl.buf, .msg_controllen = sizeof ctl.buf};
  ssize_t k = recvmsg(c->fd, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  if (k < 0 && (errno == EAGAIN || errno == EINTR))
    return;
  if (k <= 0)
    return fs_conn_close(c);
  int fds[FS_MAX_FDS];
  size_t n_fds = 0;
  int other = 0;
  for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m); cm != NULL;
       cm = CMSG_NXTHDR(&m, cm)) {
    if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) {
      other = 1;
      continue;
    }
    size_t nb = cm->cmsg_len - CMSG_LEN(0);
    for (size_t j = 0; j < nb / sizeof(int) && n_fds < FS_MAX_FDS; j++)
      memcpy(&fds[n_fds++], CMSG_DATA(cm) + j * sizeof(int), sizeof(int));
  }
  const char *why = NULL;
  if (m.msg_flags & (MSG_CTRUNC | MSG_TRUNC))
    why = "message or control data truncated: send one byte and one "
          "descriptor";
  else if (other || n_fds != 1)
    why = "send exactly one descriptor (SCM_RIGHTS) per message";
  else if (k != 1 || data[0] != WD_FDPASS_HELLO)
    why = "unknown side-socket message (protocol version?)";
  struct ucred cr;
  socklen_t cl = sizeof cr;
  if (why == NULL &&
      getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) != 0)
    why = "no peer credentials";
  if (why != NULL) {
    for (size_t j = 0; j < n_fds; j++)
      close(fds[j]);
    wd_debug("fdpass: refused a side-socket message: %s", why);
    fs_reply(c, WAVE_EREGION, NULL, why);
    return fs_conn_close(c);
  }
  uint8_t ticket[WD_FDPASS_TICKET];
  wave_error e = {0};
  if (wd_fdpass_put(c->s->fp, fds[0], (uint32_t)cr.uid, (uint32_t)cr.pid,
                    ticket, &e) != 0)
    fs_reply(c, e.code, NULL, e.message);
  else
    fs_reply(c, 0, ticket, NULL);
  fs_conn_close(c);
}

/* Of the open connections: how many uid holds, and the oldest connection
 * of the uid that holds the most (*most: how many). */
static unsigned fs_count(const wd_fdsock *s, uint32_t uid, fs_conn **oldest,
                         unsigned *most)
{
  unsigned mine = 0;
  *oldest = NULL;
  *most = 0;
  const wv_qnode *cq, *oq;
  WV_Q_EACH(cq, &s->conns) {
    fs_conn *c = FS_OF(cq);
    unsigned k = 0;
    fs_conn *first = c;
    WV_Q_EACH(oq, &s->conns) {
      fs_conn *o = FS_OF(oq);
      if (o->uid == c->uid) {
        k++;
        if (o->since < first->since)
          first = o;
      }
    }
    if (k > *most) {
      *most = k;
      *oldest = first;
    }
    mine += c->uid == uid;
  }
  return mine;
}

static void fs_deadline(uv_timer_t *t);

/* A refused newcomer: why, in the reply's form, and closed. */
static void fs_refuse(int fd, uint32_t uid, unsigned mine)
{
  char msg[160];
  int n = snprintf(msg + 1, sizeof msg - 1, "uid %" PRIu32 " has %u side "
                   "connections open, its most; send rows instead",
                   uid, mine);
  msg[0] = (char)WAVE_EBUSY;
  if (n > 0)
    (void)!send(fd, msg, 1 + (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
  close(fd);
}

static void fs_accept(uv_poll_t *h, int status, int events)
{
  wd_fdsock *s = h->data;
  (void)events;
  if (status < 0 || s->closing)
    return;
  for (int i = 0; i < 16; i++) {
    int fd = accept4(s->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
        wd_debug("fdpass: accept: %s", strerror(errno));
      return;
    }
    struct ucred cr;
    socklen_t cl = sizeof cr;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) != 0) {
      close(fd);
      continue;
    }
    fs_conn *old;
    unsigned most, mine = fs_count(s, (uint32_t)cr.uid, &old, &most);
    if (mine >= FS_PER_UID) {
      fs_refuse(fd, (uint32_t)cr.uid, mine);
      continue;
    }
    if (s->n_conns >= FS_MAX_CONNS) {
      if (old == NULL || most <= mine + 1) {
        fs_refuse(fd, (uint32_t)cr.uid, mine);  /* a fair split already */
        continue;
      }
      wd_debug("fdpass: side connections full: uid %" PRIu32 "'s oldest "
               "closed for uid %" PRIu32, old->uid, (uint32_t)cr.uid);
      fs_conn_close(old);
    }
    fs_conn *c = calloc(1, sizeof *c);
    if (c == NULL) {
      close(fd);
      continue;
    }
    c->fd = fd;
    c->s = s;
    c->uid = (uint32_t)cr.uid;
    c->since = uv_now(s->loop);
    if (uv_poll_init(s->loop, &c->poll, fd) != 0) {
      close(fd);
      free(c);
      continue;
    }
    c->poll.data = c;
    if (wv_q_empty(&s->conns))
      uv_timer_start(&s->dead, fs_deadline, FS_CONN_MS / 5, FS_CONN_MS / 5);
    wv_q_push_head(&s->conns, &c->q);
    s->n_conns++;
    fp_side_count(s->fp, c->uid, +1);
    s->pending++;
    uv_poll_start(&c->poll, UV_READABLE | UV_DISCONNECT, fs_conn_read);
  }
}

/* Close the connections past FS_CONN_MS; stop when none is left. */
static void fs_deadline(uv_timer_t *t)
{
  wd_fdsock *s = t->data;
  uint64_t now = uv_now(s->loop);
  wv_qnode *q, *nx;
  WV_Q_EACH_SAFE(q, nx, &s->conns)
    if (now - FS_OF(q)->since >= FS_CONN_MS)
      fs_conn_close(FS_OF(q));
  if (wv_q_empty(&s->conns))
    uv_timer_stop(t);
}

static void fs_tick(uv_timer_t *t)
{
  wd_fdsock *s = t->data;
  wd_fdpass_expire(s->fp);
}

static void fs_closed(uv_handle_t *h)
{
  wd_fdsock *s = h->data;
  if ((uv_handle_t *)&s->poll == h)
    close(s->fd);
  s->pending--;
  fs_maybe_free(s);
}

int wd_fdsock_open(wd_fdpass *fp, uv_loop_t *loop, const char *ipc_path,
                   unsigned mode, wd_fdsock **out, wave_error *err)
{
  *out = NULL;
  char path[108], tmp[108];
  if (wd_fdpass_path(ipc_path, path, sizeof path) != 0)
    return wv_seterr(err, WAVE_EIO, "socket path %s is too long for its "
                     "descriptor socket %s.fd", ipc_path, ipc_path);
  int rc = wd_sockpath_prepare(path, err);
  if (rc != 0)
    return rc;
  char dir[108];
  snprintf(dir, sizeof dir, "%s", path);
  char *sl = strrchr(dir, '/');
  if (sl != NULL)
    sl[1] = '\0';
  else
    dir[0] = '\0';
  static unsigned gen;
  int w = snprintf(tmp, sizeof tmp, "%s.wavedd-%ld-fd%u.sock", dir,
                   (long)getpid(), gen++);
  if (w < 0 || (size_t)w >= sizeof tmp)
    snprintf(tmp, sizeof tmp, "%s", path);  /* no room: bind the path */
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return wv_seterr(err, WAVE_EIO, "descriptor socket %s: %s", path,
                     strerror(errno));
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", tmp);
  unlink(tmp);  /* a temporary name of ours, or a stale socket that
                   wd_sockpath_prepare found ours */
  struct stat st;
  if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
      chmod(tmp, (mode_t)mode) != 0 || listen(fd, 64) != 0 ||
      (strcmp(tmp, path) != 0 && rename(tmp, path) != 0) ||
      lstat(path, &st) != 0) {
    int e = errno;
    close(fd);
    unlink(tmp);
    return wv_seterr(err, WAVE_EIO, "descriptor socket %s: %s", path,
                     strerror(e));
  }
  wd_fdsock *s = calloc(1, sizeof *s);
  if (s == NULL) {
    close(fd);
    unlink(path);
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  }
  s->fp = fp;
  s->loop = loop;
  s->fd = fd;
  wv_q_init(&s->conns);
  snprintf(s->path, sizeof s->path, "%s", path);
  s->dev = st.st_dev;
  s->ino = st.st_ino;
  uv_poll_init(loop, &s->poll, fd);
  s->poll.data = s;
  uv_timer_init(loop, &s->timer);
  s->timer.data = s;
  uv_timer_init(loop, &s->dead);
  s->dead.data = s;
  s->pending = 3;
  uv_poll_start(&s->poll, UV_READABLE, fs_accept);
  uv_timer_start(&s->timer, fs_tick, FS_TICK_MS, FS_TICK_MS);
  *out = s;
  return 0;
}

void wd_fdsock_close(wd_fdsock *s)
{
  if (s == NULL || s->closing)
    return;
  s->closing = 1;
  struct stat st;
  if (lstat(s->path, &st) == 0 && st.st_dev == s->dev && st.st_ino == s->ino)
    unlink(s->path);
  while (!wv_q_empty(&s->conns))
    fs_conn_close(FS_OF(s->conns.next));
  uv_poll_stop(&s->poll);
  uv_timer_stop(&s->timer);
  uv_timer_stop(&s->dead);
  uv_close((uv_handle_t *)&s->poll, fs_closed);
  uv_close((uv_handle_t *)&s->timer, fs_closed);
  uv_close((uv_handle_t *)&s->dead, fs_closed);
}
