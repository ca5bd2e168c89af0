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
 * The token files are read (and generated) by daemon/token.c, the config's.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon/net/auth.h"
#include "daemon/log.h"
#include "core/base.h"
#include "core/tokenmode.h"

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

/* One peer address's bucket of wrong tokens. */
typedef struct au_peer {
  unsigned char key[17];      /* family (0 unknown, 4, 6), then the address
                                 (IPv4: 4 bytes; IPv6: its /64) */
  int used;
  unsigned credits;           /* wrong tokens it may still send */
  uint64_t stamp;             /* ms: credits were last refilled here */
  int logged;                 /* a warn line was written at logged_at */
  uint64_t logged_at;
  unsigned failed, refused;   /* since the last warn line */
} au_peer;

#define AU_SETS 256
#define AU_WAYS 4
static au_peer au_table[AU_SETS][AU_WAYS];
static pthread_mutex_t au_lock = PTHREAD_MUTEX_INITIALIZER;

static void au_key(const nng_sockaddr *sa, unsigned char key[17])
{
  memset(key, 0, 17);
  if (sa == NULL)
    return;
  if (sa->s_family == NNG_AF_INET) {
    key[0] = 4;
    memcpy(key + 1, &sa->s_in.sa_addr, 4);
  } else if (sa->s_family == NNG_AF_INET6) {
    key[0] = 6;
    memcpy(key + 1, sa->s_in6.sa_addr, 8);
  }
}

static void au_name(const unsigned char key[17], char *out, size_t n)
{
  char a[INET6_ADDRSTRLEN];
  if (key[0] == 4 && inet_ntop(AF_INET, key + 1, a, sizeof a) != NULL) {
    snprintf(out, n, "%s", a);
  } else if (key[0] == 6) {
    unsigned char full[16] = {0};
    memcpy(full, key + 1, 8);
    if (inet_ntop(AF_INET6, full, a, sizeof a) == NULL)
      snprintf(a, sizeof a, "?");
    snprintf(out, n, "%s/64", a);
  } else {
    snprintf(out, n, "an unknown address");
  }
}

/* Under au_lock: the peer's entry, made (full) when it has none.  A set
 * that is full gives up an entry whose bucket is full again, else the one
 * refilled longest ago. */
static au_peer *au_find(const unsigned char key[17], const wd_limits *l,
                        uint64_t now)
{
  uint32_t h = 2166136261u;  /* FNV-1a */
  for (int i = 0; i < 17; i++)
    h = (h ^ key[i]) * 16777619u;
  au_peer *set = au_table[h % AU_SETS], *e = NULL;
  for (int w = 0; w < AU_WAYS; w++)
    if (set[w].used && memcmp(set[w].key, key, 17) == 0) {
      e = &set[w];
      break;
    }
  if (e == NULL) {
    for (int w = 0; w < AU_WAYS && e == NULL; w++)
      if (!set[w].used || (set[w].credits >= l->auth_failures &&
                           set[w].failed == 0 && set[w].refused == 0))
        e = &set[w];
    if (e == NULL) {
      e = &set[0];
      for (int w = 1; w < AU_WAYS; w++)
        if (set[w].stamp < e->stamp)
          e = &set[w];
    }
    memset(e, 0, sizeof *e);
    memcpy(e->key, key, 17);
    e->used = 1;
    e->credits = l->auth_failures;
    e->stamp = now;
  }
  if (e->credits > l->auth_failures)  /* the limit went down at a reload */
    e->credits = l->auth_failures;
  uint64_t per = l->auth_failure_ms ? l->auth_failure_ms : 1;
  if (now > e->stamp) {
    uint64_t add = (now - e->stamp) / per;
    if (add >= l->auth_failures - e->credits) {
      e->credits = l->auth_failures;
      e->stamp = now;
    } else {
      e->credits += (unsigned)add;
      e->stamp += add * per;
    }
  }
  return e;
}

/* Under au_lock: count a wrong (refused: uncompared) token; 1 with the
 * counts in *f, *r when a warn line is due. */
static int au_count(au_peer *e, int refused, uint64_t now, unsigned *f,
                    unsigned *r)
{
  if (refused)
    e->refused++;
  else
    e->failed++;
  if (e->logged && now - e->logged_at < WD_AUTH_LOG_MS)
    return 0;
  *f = e->failed;
  *r = e->refused;
  e->failed = e->refused = 0;
  e->logged = 1;
  e->logged_at = now;
  return 1;
}

static void au_warn(const unsigned char key[17], const wd_limits *l,
                    unsigned f, unsigned r)
{
  char who[INET6_ADDRSTRLEN + 8];
  au_name(key, who, sizeof who);
  wd_warn("auth: %u wrong token%s from %s and %u refused unchecked in the "
          "last %u s (limits.auth_failures %u, then one each %u ms)", f,
          f == 1 ? "" : "s", who, r, WD_AUTH_LOG_MS / 1000, l->auth_failures,
          l->auth_failure_ms);
}

int wd_auth_check(const wd_config *cfg, const nng_sockaddr *peer,
                  uint64_t now_ms, const char *token, char *principal,
                  size_t pn, char *why, size_t n)
{
  const wd_limits *l = &cfg->limits;
  unsigned char key[17];
  au_key(peer, key);
  unsigned f = 0, r = 0;
  int warn;
  pthread_mutex_lock(&au_lock);
  au_peer *e = au_find(key, l, now_ms);
  if (e->credits == 0) {
    uint64_t wait = e->stamp + l->auth_failure_ms - now_ms;
    warn = au_count(e, 1, now_ms, &f, &r);
    pthread_mutex_unlock(&au_lock);
    if (warn)
      au_warn(key, l, f, r);
    snprintf(why, n, "too many wrong tokens from this address: refused "
             "without looking at the token for %" PRIu64 " ms", wait);
    return WAVE_EAUTH;
  }
  pthread_mutex_unlock(&au_lock);
  size_t blen = token != NULL ? strnlen(token, WD_TOKEN_MAX) : 0;
  unsigned found = 0;
  size_t which = 0;
  for (size_t i = 0; i < cfg->n_tokens && blen > 0; i++) {
    /* a pending token (never generated) has no secret: it matches nothing */
    unsigned eq = au_equal(&cfg->tokens[i], token, blen) &
                  -(unsigned)!cfg->tokens[i].pending;
    which |= (size_t)(eq & ~found) & i;  /* the first match */
    found |= eq;
  }
  if (found) {
    snprintf(principal, pn, "token:%s", cfg->tokens[which].name);
    return 0;
  }
  if (blen == 0) {
    /* no token at all is a client not set up, not a guess: not counted */
    snprintf(why, n, "this daemon needs a token on tcp (wavectl "
             "--token-file FILE, WAVE_TOKEN_FILE)");
    return WAVE_EAUTH;
  }
  pthread_mutex_lock(&au_lock);
  e = au_find(key, l, now_ms);
  if (e->credits > 0)
    e->credits--;
  warn = au_count(e, 0, now_ms, &f, &r);
  pthread_mutex_unlock(&au_lock);
  if (warn)
    au_warn(key, l, f, r);
  snprintf(why, n, "wrong token");
  return WAVE_EAUTH;
}

int wd_auth_request(const wd_config *cfg, nng_pipe p, const char *token,
                    char *principal, size_t pn, char *why, size_t n)
{
  if (cfg->n_tokens == 0)
    return 0;
  nng_sockaddr sa;
  memset(&sa, 0, sizeof sa);
  if (nng_pipe_get_addr(p, NNG_OPT_REMADDR, &sa) != 0)
    sa.s_family = NNG_AF_UNSPEC;  /* unknown: treated as the network */
  if (sa.s_family == NNG_AF_IPC || sa.s_family == NNG_AF_ABSTRACT)
    return 0;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t now = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
  return wd_auth_check(cfg, &sa, now, token, principal, pn, why, n);
}
