/* auth.c - bearer tokens on tcp (docs/security.md "Authentication and TLS").
 *
 * The model is xmrig's HTTP API access token: the operator writes a secret
 * into a file only the daemon can read, names it in the config
 * (auth.tokens: [{name, file}]), and gives the same file to the clients
 * (wavectl --token-file, WAVE_TOKEN_FILE).  Every Request carries it in
 * `token` (field 3).  A request that arrived over tcp:// or tls+tcp://
 * without one of the configured secrets is answered AUTH and nothing else
 * happens: the check runs on the decode thread right after unpacking,
 * before any bulk part (streams, regions) is looked at and before the loop
 * sees the request.  ipc needs no token: the socket file's mode and the
 * peer's uid guard it.
 *
 * The comparison takes the same time whatever the bytes: every configured
 * secret is compared over WD_TOKEN_MAX bytes, and the match is picked out
 * with masks, never a branch on secret data.  Configs without tokens are
 * only accepted (config.c) when every tcp listener is open on purpose
 * (auth: none) or demands a client certificate.
 *
 * A token may be generated (auth.tokens[].generate: true), for a container
 * whose operator mounts nothing: when the file is absent at start (or at a
 * reload), wd_auth_generate writes 128 bits from getrandom(2) as 32 hex
 * digits, created exclusively with mode 0600, and logs the secret once;
 * every later start reads the file like any other token file.  --check-config
 * only checks that the folder is writable (config.c): validating a config
 * must not write a secret.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/auth.h"
#include "daemon/log.h"
#include "proto/base.h"

int wd_auth_read_token(const char *path, char *secret, size_t cap,
                       size_t *len, char *why, size_t n)
{
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    snprintf(why, n, "%s: cannot open: %s", path, strerror(errno));
    return -1;
  }
  struct stat st;
  int rc = -1;
  char buf[WD_TOKEN_MAX + 2];
  if (fstat(fd, &st) != 0) {
    snprintf(why, n, "%s: %s", path, strerror(errno));
    goto out;
  }
  if (!S_ISREG(st.st_mode)) {
    snprintf(why, n, "%s: not a regular file", path);
    goto out;
  }
  if ((st.st_mode & 077) != 0) {
    snprintf(why, n, "%s: mode %04o: a token file must not be open to "
             "group or others (chmod 600)", path,
             (unsigned)(st.st_mode & 07777));
    goto out;
  }
  if (st.st_uid != geteuid() && st.st_uid != 0) {
    snprintf(why, n, "%s: owned by uid %u: a token file must be ours "
             "(uid %u) or root's", path, (unsigned)st.st_uid,
             (unsigned)geteuid());
    goto out;
  }
  size_t got = 0;
  for (;;) {
    ssize_t r = read(fd, buf + got, sizeof buf - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      snprintf(why, n, "%s: %s", path, strerror(errno));
      goto out;
    }
    if (r == 0 || (got += (size_t)r) == sizeof buf)
      break;
  }
  while (got > 0 && (buf[got - 1] == '\n' || buf[got - 1] == '\r' ||
                     buf[got - 1] == ' ' || buf[got - 1] == '\t'))
    got--;
  if (got < 16 || got >= WD_TOKEN_MAX || got >= cap) {
    snprintf(why, n, "%s: a token is one line of 16..%d bytes (this one "
             "has %s%zu)", path, WD_TOKEN_MAX - 1,
             got >= sizeof buf - 2 ? "more than " : "", got);
    goto out;
  }
  for (size_t i = 0; i < got; i++)
    if (buf[i] <= ' ' || buf[i] > '~') {
      snprintf(why, n, "%s: a token is printable ASCII without blanks "
               "(byte %zu is 0x%02x)", path, i, (unsigned char)buf[i]);
      goto out;
    }
  memcpy(secret, buf, got);
  secret[got] = '\0';
  *len = got;
  rc = 0;
out:
  memset(buf, 0, sizeof buf);
  close(fd);
  return rc;
}

/* Make t->file: 128 random bits as one line of hex, created exclusively
 * (O_EXCL: never over a file someone else just made), mode 0600. */
static int au_generate_one(wd_token_cfg *t, wave_error *err)
{
  unsigned char raw[16];
  size_t got = 0;
  while (got < sizeof raw) {
    ssize_t r = getrandom(raw + got, sizeof raw - got, 0);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return wv_seterr(err, WAVE_EIO, "auth.tokens %s: getrandom: %s",
                       t->name, strerror(errno));
    got += (size_t)r;
  }
  char line[2 * sizeof raw + 2];
  for (size_t i = 0; i < sizeof raw; i++)
    snprintf(line + 2 * i, 3, "%02x", raw[i]);
  memset(raw, 0, sizeof raw);
  line[2 * sizeof raw] = '\n';
  line[2 * sizeof raw + 1] = '\0';
  int fd = open(t->file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                0600);
  if (fd < 0) {
    int e = errno;
    memset(line, 0, sizeof line);
    if (e == EEXIST)
      return 1;  /* made meanwhile: read it as any token file */
    return wv_seterr(err, WAVE_ECONFIG, "auth.tokens %s: cannot generate %s: "
                     "%s", t->name, t->file, strerror(e));
  }
  size_t len = 2 * sizeof raw + 1, done = 0;
  int rc = 0;
  while (done < len) {
    ssize_t w = write(fd, line + done, len - done);
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0) {
      rc = wv_seterr(err, WAVE_EIO, "auth.tokens %s: %s: %s", t->name,
                     t->file, strerror(errno));
      break;
    }
    done += (size_t)w;
  }
  if (rc == 0 && fsync(fd) != 0)
    rc = wv_seterr(err, WAVE_EIO, "auth.tokens %s: %s: %s", t->name, t->file,
                   strerror(errno));
  close(fd);
  if (rc != 0) {
    unlink(t->file);
    memset(line, 0, sizeof line);
    return rc;
  }
  memcpy(t->secret, line, 2 * sizeof raw);
  t->secret[2 * sizeof raw] = '\0';
  t->len = 2 * sizeof raw;
  t->pending = 0;
  memset(line, 0, sizeof line);
  /* once: the next start reads the file and logs nothing about it */
  wd_info("auth: generated token '%s' (128 random bits) in %s: %s", t->name,
          t->file, t->secret);
  return 0;
}

int wd_auth_generate(wd_config *cfg, wave_error *err)
{
  for (size_t i = 0; i < cfg->n_tokens; i++) {
    wd_token_cfg *t = &cfg->tokens[i];
    if (!t->pending)
      continue;
    int rc = au_generate_one(t, err);
    if (rc < 0 || rc > 1)
      return rc;
    if (rc == 1) {
      char why[256];
      if (wd_auth_read_token(t->file, t->secret, sizeof t->secret, &t->len,
                             why, sizeof why))
        return wv_seterr(err, WAVE_ECONFIG, "auth.tokens %s: %s", t->name,
                         why);
      t->pending = 0;
    }
  }
  return 0;
}

/* 1 when the pipe is an ipc (unix socket) connection. */
static int au_is_ipc(nng_pipe p)
{
  nng_sockaddr sa;
  memset(&sa, 0, sizeof sa);
  if (nng_pipe_get_addr(p, NNG_OPT_REMADDR, &sa) != 0)
    return 0;  /* unknown: treated as the network */
  return sa.s_family == NNG_AF_IPC || sa.s_family == NNG_AF_ABSTRACT;
}

/* All ones when a[0..WD_TOKEN_MAX) equals b, which has blen bytes, in a
 * time that depends on neither. */
static unsigned au_equal(const wd_token_cfg *t, const char *b, size_t blen)
{
  unsigned diff = (unsigned)(t->len ^ blen) | (blen >= WD_TOKEN_MAX);
  for (size_t i = 0; i < WD_TOKEN_MAX; i++) {
    /* bytes past blen read as 0, as do the secret's past its length */
    unsigned bi = i < blen ? (unsigned char)b[i] : 0;
    diff |= (unsigned)(unsigned char)t->secret[i] ^ bi;
  }
  /* diff == 0 -> all ones, else 0 */
  return (unsigned)((((uint64_t)diff | (uint64_t)-(int64_t)diff) >> 63) - 1);
}

int wd_auth_request(const wd_config *cfg, nng_pipe p, const char *token,
                    char *principal, size_t pn, char *why, size_t n)
{
  if (cfg->n_tokens == 0 || au_is_ipc(p))
    return 0;
  if (token == NULL || token[0] == '\0') {
    snprintf(why, n, "this daemon needs a token on tcp (wavectl "
             "--token-file FILE, WAVE_TOKEN_FILE)");
    return WAVE_EAUTH;
  }
  size_t blen = strnlen(token, WD_TOKEN_MAX);
  unsigned found = 0;
  size_t which = 0;
  for (size_t i = 0; i < cfg->n_tokens; i++) {
    /* a pending token (never generated) has no secret: it matches nothing */
    unsigned eq = au_equal(&cfg->tokens[i], token, blen) &
                  -(unsigned)!cfg->tokens[i].pending;
    which |= (size_t)(eq & ~found) & i;  /* the first match */
    found |= eq;
  }
  if (!found) {
    snprintf(why, n, "wrong token");
    return WAVE_EAUTH;
  }
  snprintf(principal, pn, "token:%s", cfg->tokens[which].name);
  return 0;
}
