/* access.c - libwaveclient's credentials: the bearer token every request
 * carries (Request.token) and the TLS side of tls+tcp:// dials.
 *
 * The token comes from wave_client_options (the string, or a file), else
 * from the file $WAVE_TOKEN_FILE names, else there is none.  A token file
 * must be a regular file not open to others, nor to a group we are not in
 * (core/tokenmode.h; as ssh treats keys): a token others can read is a
 * token others can use.  The token is sent on
 * every transport; an ipc daemon ignores it, and over plain tcp:// it
 * travels in the clear, so tls+tcp:// is the way across a network
 * (docs/security.md).
 *
 * tls+tcp:// dials get a client TLS config: the CAs from the options,
 * $WAVE_TLS_CA or the system's bundle, the server name from the options or
 * the URL's host, and verification required (nng's default for dialers).
 * A handshake that fails because the certificate is not trusted is
 * reported as such, not as a bare nng error.
 *
 * A dial that waits (wave_client_dial, options.dial) is bounded by the
 * client's timeout (options.timeout_ms).  nng's blocking dial has no bound
 * of its own: a daemon that accepts the connection but never answers the
 * handshake (stopped with SIGSTOP, or wedged) holds it for the transport's
 * negotiation timeout, 10 s on ipc.  So the blocking dial runs on a thread
 * of its own and the caller waits for it on a condition variable with a
 * deadline; past it the open fails TIMEDOUT, and wave_client_close (after
 * nng_close has aborted the dial) joins the thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/supplemental/tls/tls.h>

#include "client/client_int.h"
#include "client/fleet_int.h"
#include "core/base.h"
#include "core/tokenmode.h"

#define AC_TOKEN_MAX 256
#define AC_SYSTEM_CAS "/etc/ssl/certs/ca-certificates.crt"

static int ac_tls_url(const char *url)
{
  return strncmp(url, "tls+tcp://", 10) == 0 ||
         strncmp(url, "tls+tcp4://", 11) == 0 ||
         strncmp(url, "tls+tcp6://", 11) == 0;
}

/* The token in path: one line, trailing whitespace dropped. */
static int ac_read_token(const char *path, const char *what, char **out,
                         wave_error *err)
{
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return wv_seterr(err, WAVE_EARG, "%s %s: cannot open: %s", what, path,
                     strerror(errno));
  struct stat st;
  char buf[AC_TOKEN_MAX + 2], why[160];
  size_t got = 0;
  int code = 0;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    code = wv_seterr(err, WAVE_EARG, "%s %s: not a regular file", what, path);
  else if (wv_token_mode_ok(&st, why, sizeof why) != 0)
    code = wv_seterr(err, WAVE_EARG, "%s %s: %s", what, path, why);
  while (code == 0 && got < sizeof buf) {
    ssize_t r = read(fd, buf + got, sizeof buf - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      code = wv_seterr(err, WAVE_EARG, "%s %s: %s", what, path,
                       strerror(errno));
    if (r <= 0)
      break;
    got += (size_t)r;
  }
  close(fd);
  while (code == 0 && got > 0 &&
         (buf[got - 1] == '\n' || buf[got - 1] == '\r' ||
          buf[got - 1] == ' ' || buf[got - 1] == '\t'))
    got--;
  if (code == 0 && (got == 0 || got >= AC_TOKEN_MAX || memchr(buf, '\n', got)))
    code = wv_seterr(err, WAVE_EARG, "%s %s: expected one line of 1..%d "
                     "bytes", what, path, AC_TOKEN_MAX - 1);
  if (code == 0 && (*out = strndup(buf, got)) == NULL)
    code = wv_seterr(err, WAVE_ENOMEM, NULL);
  memset(buf, 0, sizeof buf);
  return code;
}

static int ac_token(wave_client *c, const wave_client_options *o,
                    wave_error *err)
{
  if (o != NULL && o->token != NULL) {
    if (o->token[0] == '\0' || strlen(o->token) >= AC_TOKEN_MAX)
      return wv_seterr(err, WAVE_EARG, "token: 1..%d bytes",
                       AC_TOKEN_MAX - 1);
    return (c->token = strdup(o->token)) ? 0
                                         : wv_seterr(err, WAVE_ENOMEM, NULL);
  }
  if (o != NULL && o->token_file != NULL)
    return ac_read_token(o->token_file, "token file", &c->token, err);
  const char *env = getenv("WAVE_TOKEN_FILE");
  if (env != NULL && env[0] != '\0')
    return ac_read_token(env, "WAVE_TOKEN_FILE", &c->token, err);
  return 0;
}

/* The dialer's TLS config; 0 or an nng error, why filled. */
static int ac_tls(nng_dialer d, const char *url, const wave_client_options *o,
                  char *why, size_t n)
{
  const char *ca = o && o->tls_ca_file ? o->tls_ca_file : getenv("WAVE_TLS_CA");
  if (ca == NULL || ca[0] == '\0')
    ca = AC_SYSTEM_CAS;
  nng_url *u = NULL;
  nng_tls_config *tc = NULL;
  int rv = nng_url_parse(&u, url);
  if (rv != 0) {
    snprintf(why, n, "cannot dial '%s': %s", url, nng_strerror(rv));
    return rv;
  }
  const char *name = o && o->tls_server_name ? o->tls_server_name
                                             : u->u_hostname;
  if ((rv = nng_tls_config_alloc(&tc, NNG_TLS_MODE_CLIENT)) != 0)
    snprintf(why, n, "%s: TLS: %s", url, nng_strerror(rv));
  else if ((rv = nng_tls_config_ca_file(tc, ca)) != 0)
    snprintf(why, n, "%s: TLS CA file %s: %s (PEM certificates; --tls-ca "
             "FILE, WAVE_TLS_CA)", url, ca, nng_strerror(rv));
  else if ((rv = nng_tls_config_server_name(tc, name)) != 0 ||
           (rv = nng_tls_config_auth_mode(tc, NNG_TLS_AUTH_MODE_REQUIRED)) != 0)
    snprintf(why, n, "%s: TLS: %s", url, nng_strerror(rv));
  else if ((rv = nng_dialer_set_ptr(d, NNG_OPT_TLS_CONFIG, tc)) != 0)
    snprintf(why, n, "%s: TLS config: %s", url, nng_strerror(rv));
  if (tc != NULL)
    nng_tls_config_free(tc);  /* the dialer holds its own reference */
  nng_url_free(u);
  return rv;
}

/* ---- the bounded dial ----------------------------------------------------- */

struct wv_dial {
  pthread_mutex_t mu;
  pthread_cond_t cv;  /* on CLOCK_MONOTONIC */
  pthread_t thread;
  nng_dialer d;
  int done, rv;
};

static void *ac_dial_main(void *arg)
{
  struct wv_dial *x = arg;
  int rv = nng_dialer_start(x->d, 0);
  pthread_mutex_lock(&x->mu);
  x->rv = rv;
  x->done = 1;
  pthread_cond_signal(&x->cv);
  pthread_mutex_unlock(&x->mu);
  return NULL;
}

static void ac_dial_free(struct wv_dial *x)
{
  pthread_cond_destroy(&x->cv);
  pthread_mutex_destroy(&x->mu);
  free(x);
}

/* nng_dialer_start(d, 0) for at most ms: its result, or NNG_ETIMEDOUT with
 * the dial still running (c->dial, joined by wv_client_access_fini). */
static int ac_dial_bounded(wave_client *c, nng_dialer d, int ms)
{
  struct wv_dial *x = calloc(1, sizeof *x);
  if (x == NULL)
    return NNG_ENOMEM;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_mutex_init(&x->mu, NULL);
  pthread_cond_init(&x->cv, &ca);
  pthread_condattr_destroy(&ca);
  x->d = d;
  if (pthread_create(&x->thread, NULL, ac_dial_main, x) != 0) {
    ac_dial_free(x);
    return nng_dialer_start(d, 0);  /* no thread: unbounded, as before */
  }
  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  until.tv_sec += ms / 1000;
  until.tv_nsec += (long)(ms % 1000) * 1000000L;
  if (until.tv_nsec >= 1000000000L) {
    until.tv_sec++;
    until.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&x->mu);
  while (!x->done &&
         pthread_cond_timedwait(&x->cv, &x->mu, &until) != ETIMEDOUT)
    ;
  int done = x->done, rv = x->rv;
  pthread_mutex_unlock(&x->mu);
  if (!done) {
    c->dial = x;
    return NNG_ETIMEDOUT;
  }
  pthread_join(x->thread, NULL);
  ac_dial_free(x);
  return rv;
}

void wv_client_access_fini(wave_client *c)
{
  if (c->dial == NULL)
    return;
  pthread_join(c->dial->thread, NULL);  /* nng_close ended the dial */
  ac_dial_free(c->dial);
  c->dial = NULL;
}

/* An ipc dial refused with EACCES: what the socket lets through, and to
 * whom (its group and mode, set by the config's ipc_mode), into why. */
static void ac_perm_hint(const char *path, char *why, size_t n)
{
  struct stat st;
  if (stat(path, &st) != 0) {
    int e = errno;
    const char *slash = strrchr(path, '/');
    int len = slash != NULL && slash != path ? (int)(slash - path) : 1;
    snprintf(why, n, "its folder %.*s is closed to you (%s); ask its admin "
             "(docs/service.md \"The socket\")", len, path, strerror(e));
    return;
  }
  struct group *g = getgrgid(st.st_gid);
  char gname[32];
  if (g != NULL)
    snprintf(gname, sizeof gname, "%s", g->gr_name);
  else
    snprintf(gname, sizeof gname, "%lu", (unsigned long)st.st_gid);
  snprintf(why, n, "the socket is uid %lu, group %s, mode %04o (the "
           "daemon's config key ipc_mode); ask its admin to add you to "
           "group %s (then log in again), or to widen ipc_mode",
           (unsigned long)st.st_uid, gname, (unsigned)(st.st_mode & 07777),
           gname);
}

int wv_client_access(wave_client *c, const char *url,
                     const wave_client_options *o, int now, wave_error *err)
{
  int code = ac_token(c, o, err);
  if (code != 0)
    return code;
  int tls = ac_tls_url(url);
  char why[300] = "";
  nng_dialer d;
  int rv = nng_dialer_create(&d, c->sock, url);
  if (rv == 0 && tls && (rv = ac_tls(d, url, o, why, sizeof why)) != 0)
    return wv_seterr(err, rv == NNG_ENOMEM ? WAVE_ENOMEM : WAVE_EARG, "%s",
                     why);
  int ms = o != NULL && o->timeout_ms > 0 ? o->timeout_ms
                                           : WV_CLIENT_TIMEOUT_MS;
  if (rv == 0)
    rv = now ? ac_dial_bounded(c, d, ms)
             : nng_dialer_start(d, NNG_FLAG_NONBLOCK);
  if (rv == 0)
    return 0;
  if (now && rv == NNG_ETIMEDOUT && c->dial != NULL)
    return wv_seterr(err, WAVE_ETIMEDOUT, "%s: not connected within %d ms "
                     "(--timeout): the daemon took the connection but did "
                     "not answer (stopped or overloaded?)", url, ms);
  /* a malformed URL (or no memory) is not about the daemon */
  int bad_url = rv == NNG_EADDRINVAL || rv == NNG_ENOTSUP ||
                rv == NNG_EINVAL || rv == NNG_ENOMEM;
  int refused = rv == NNG_ECONNREFUSED || rv == NNG_ENOENT;
  if (now && tls && (rv == NNG_EPEERAUTH || rv == NNG_ECRYPTO ||
                     rv == NNG_ECLOSED || rv == NNG_ECONNSHUT))
    return wv_seterr(err, WAVE_EIO, "%s: TLS handshake failed (%s): the "
                     "daemon's certificate is not signed by a CA we trust "
                     "(--tls-ca FILE, WAVE_TLS_CA) or does not name the host "
                     "we dialled", url, nng_strerror(rv));
  if (now && rv == NNG_EPERM && strncmp(url, "ipc://", 6) == 0) {
    ac_perm_hint(url + 6, why, sizeof why);
    return wv_seterr(err, WAVE_EIO, "%s: permission denied: %s", url, why);
  }
  if (now && refused)
    return wv_seterr(err, WAVE_EIO, "%s: connection refused: no wavedd "
                     "listens there (%s)", url, nng_strerror(rv));
  if (now && !bad_url)
    return wv_seterr(err, WAVE_EIO, "%s: cannot connect: %s", url,
                     nng_strerror(rv));
  return wv_seterr(err, rv == NNG_ENOMEM ? WAVE_ENOMEM : WAVE_EARG,
                   "cannot dial '%s': %s", url, nng_strerror(rv));
}

/* ---- the fleet's copy ----------------------------------------------------- */

static char *ac_put(char **at, const char *s)
{
  if (s == NULL)
    return NULL;
  char *p = *at;
  size_t n = strlen(s) + 1;
  memcpy(p, s, n);
  *at += n;
  return p;
}

int wave_fleet_set_client_options(wave_fleet *f,
                                  const wave_client_options *o,
                                  wave_error *err)
{
  if (f == NULL)
    return wv_seterr(err, WAVE_EARG, "wave_fleet_set_client_options: NULL");
  const char *strs[4] = {o ? o->token : NULL, o ? o->token_file : NULL,
                         o ? o->tls_ca_file : NULL,
                         o ? o->tls_server_name : NULL};
  size_t size = sizeof(wave_client_options);
  for (int i = 0; i < 4; i++)
    size += strs[i] ? strlen(strs[i]) + 1 : 0;
  wave_client_options *copy = NULL;
  if (o != NULL) {
    if ((copy = calloc(1, size)) == NULL)
      return wv_seterr(err, WAVE_ENOMEM, NULL);
    char *at = (char *)(copy + 1);
    copy->dial = 0;  /* the fleet's connections are lazy */
    copy->token = ac_put(&at, strs[0]);
    copy->token_file = ac_put(&at, strs[1]);
    copy->tls_ca_file = ac_put(&at, strs[2]);
    copy->tls_server_name = ac_put(&at, strs[3]);
    copy->timeout_ms = o->timeout_ms;
  }
  pthread_mutex_lock(&f->mu);
  free(f->copts);
  f->copts = copy;
  pthread_mutex_unlock(&f->mu);
  return 0;
}
