/* token.c - the token files of auth.tokens (docs/security.md
 * "Authentication and TLS"): a token file is read whole, checked for its
 * owner, mode (core/tokenmode.c), length, alphabet and estimated strength,
 * and its secret kept in the config (wd_token_cfg); net/auth.c compares
 * requests against what this read, so the config never reaches up into
 * net/.
 *
 * A token may be generated (auth.tokens[].generate: true), for a container
 * whose operator mounts nothing: when the file is absent at start (or at a
 * reload), wd_token_generate writes 128 bits from getrandom(2) as 32 hex
 * digits, created exclusively with mode 0600, and logs the secret once;
 * every later start reads the file like any other token file.  --check-config
 * only checks that the folder is writable (config.c): validating a config
 * must not write a secret.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/token.h"
#include "daemon/log.h"
#include "core/base.h"
#include "core/tokenmode.h"

/* The estimated bits of a token of len printable bytes: len times the
 * bits of its alphabet; 0 with fewer than 8 distinct characters. */
static unsigned tk_bits(const char *t, size_t len)
{
  unsigned char seen[128] = {0};
  unsigned distinct = 0, hex = 1, b64 = 1;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)t[i];
    if (c < 128 && !seen[c]++)
      distinct++;
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
          (c >= 'A' && c <= 'F')))
      hex = 0;
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
          (c >= 'A' && c <= 'Z') || c == '+' || c == '/' || c == '-' ||
          c == '_' || c == '='))
      b64 = 0;
  }
  if (distinct < 8)
    return 0;
  /* tenths of a bit per character: 94 printable characters are 6.55 */
  unsigned per = hex ? 40 : b64 ? 60 : 65;
  return (unsigned)(len * per / 10);
}

int wd_token_read(const char *path, char *secret, size_t cap,
                       size_t *len, char *why, size_t n)
{
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    int e = errno;
    /* a Secret mounted root:root 0400 for a daemon that is not root */
    snprintf(why, n, "%s: cannot open: %s%s", path, strerror(e),
             e == EACCES ? " (a mounted Secret: mode 0440 and a group of "
                           "ours, e.g. the pod's fsGroup)" : "");
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
  char mwhy[160];
  if (wv_token_mode_ok(&st, mwhy, sizeof mwhy) != 0) {
    snprintf(why, n, "%s: %s", path, mwhy);
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
  unsigned bits = tk_bits(buf, got);
  if (bits < 128) {
    snprintf(why, n, "%s: a token needs at least 128 bits; this one has "
             "about %u (make one with: openssl rand -hex 16)", path, bits);
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
static int tk_generate_one(wd_token_cfg *t, wave_error *err)
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

int wd_token_generate(wd_config *cfg, wave_error *err)
{
  for (size_t i = 0; i < cfg->n_tokens; i++) {
    wd_token_cfg *t = &cfg->tokens[i];
    if (!t->pending)
      continue;
    int rc = tk_generate_one(t, err);
    if (rc < 0 || rc > 1)
      return rc;
    if (rc == 1) {
      char why[256];
      if (wd_token_read(t->file, t->secret, sizeof t->secret, &t->len,
                             why, sizeof why))
        return wv_seterr(err, WAVE_ECONFIG, "auth.tokens %s: %s", t->name,
                         why);
      t->pending = 0;
    }
  }
  return 0;
}
