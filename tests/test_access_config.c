/* test_access_config.c - the config keys of tls+tcp:// listeners and tcp
 * authentication (daemon/config.c, daemon/net/auth.c, daemon/net/tls.c).
 *
 * Each case writes a config (and the token and PEM files it names) into a
 * temporary folder and loads it.  Bad files must fail with the exact
 * "file:line:column: key: what" message, line and column counted by hand
 * from the text here.  The certificates are made with the openssl CLI
 * (Debian's openssl package, .ci/deps.sh).  The limit on wrong tokens is
 * tested through wd_auth_check with given addresses and a given clock.
 */
#include <arpa/inet.h>
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/net/auth.h"
#include "daemon/token.h"
#include "daemon/config.h"
#include "daemon/log.h"

static char tac_dir[256];
static char tac_path[512];

static void tac_file(const char *name, const char *text, mode_t mode)
{
  char p[600];
  snprintf(p, sizeof p, "%s/%s", tac_dir, name);
  FILE *f = fopen(p, "w");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_ge(fputs(text, f), 0);
  ck_assert_int_eq(fclose(f), 0);
  ck_assert_int_eq(chmod(p, mode), 0);
}

static void tac_setup(void)
{
  snprintf(tac_dir, sizeof tac_dir, "/tmp/wave-access.XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(tac_dir));
  snprintf(tac_path, sizeof tac_path, "%s/c.yaml", tac_dir);
  tac_file("alice.token", "s3cr3t-alice-0123456789\n", 0600);
  tac_file("bob.token", "s3cr3t-bob-0123456789abc", 0400);
  tac_file("open.token", "s3cr3t-open-0123456789\n", 0644);
  tac_file("short.token", "tooshort\n", 0600);
  tac_file("blank.token", "has a blank 0123456789\n", 0600);
  /* 128 bits by auth.c's estimate, and just below */
  tac_file("aaaa.token", "aaaaaaaaaaaaaaaa\n", 0600);
  tac_file("long-a.token", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
          "aaaaaaaaaaaaaaaaaaaa\n", 0600);
  tac_file("hex31.token", "0f1e2d3c4b5a69788796a5b4c3d2e1f\n", 0600);
  tac_file("hex32.token", "0f1e2d3c4b5a69788796a5b4c3d2e1f0\n", 0600);
  tac_file("b64-21.token", "Zm9vYmFyYmF6cXV4MTIzN\n", 0600);
  tac_file("b64-22.token", "Zm9vYmFyYmF6cXV4MTIzNA\n", 0600);
  tac_file("print19.token", "p@ss!w0rd#q%r^s&t*u\n", 0600);
  tac_file("notpem.crt", "hello\n", 0644);
  char cmd[1200];
  snprintf(cmd, sizeof cmd,
           "cd %s && openssl req -x509 -newkey ec -pkeyopt "
           "ec_paramgen_curve:P-256 -nodes -keyout srv.key -out srv.crt "
           "-days 2 -subj /CN=localhost >/dev/null 2>&1 && "
           "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 "
           "-nodes -keyout other.key -out other.crt -days 2 -subj /CN=x "
           ">/dev/null 2>&1 && "
           /* a PEM block whose body is not a key */
           "printf -- '-----BEGIN PRIVATE KEY-----\\nAAAA\\n-----END PRIVATE "
           "KEY-----\\n' > junk.key",
           tac_dir);
  ck_assert_msg(system(cmd) == 0, "openssl failed: %s", cmd);
}

static void tac_teardown(void)
{
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tac_dir);
  ck_assert_int_eq(system(cmd), 0);
}

static wd_config *tac_ok(const char *text)
{
  tac_file("c.yaml", text, 0644);
  wd_config *c = NULL;
  wave_error err = {0};
  int rc = wd_config_load(tac_path, &c, &err);
  ck_assert_msg(rc == 0, "unexpected error: %s", err.message);
  return c;
}

static void tac_bad(const char *text, const char *where, const char *key,
                   const char *what)
{
  tac_file("c.yaml", text, 0644);
  wd_config *c = (wd_config *)1;
  wave_error err = {0};
  ck_assert_int_eq(wd_config_load(tac_path, &c, &err), WAVE_ECONFIG);
  ck_assert_ptr_null(c);
  char want[1024];
  snprintf(want, sizeof want, "%s:%s: %s: ", tac_path, where, key);
  ck_assert_msg(strncmp(err.message, want, strlen(want)) == 0,
                "message '%s' does not start with '%s'", err.message, want);
  ck_assert_msg(strstr(err.message + strlen(want), what) != NULL,
                "message '%s' does not say '%s'", err.message, what);
}

#define DEV "devices:\n  - {name: cpu0, backend: cpu}\n"
#define TLS "tls:\n  cert_file: srv.crt\n  key_file: srv.key\n"

START_TEST(tokens_and_tls_load)
{
  wd_config *c = tac_ok("listen: [\"tcp://127.0.0.1:7000\", "
                       "\"tls+tcp://127.0.0.1:7001\"]\n"
                       TLS
                       "auth:\n"
                       "  tokens:\n"
                       "    - {name: alice, file: alice.token}\n"
                       "    - {name: bob, file: bob.token}\n" DEV);
  ck_assert_uint_eq(c->n_tokens, 2);
  ck_assert_str_eq(c->tokens[0].name, "alice");
  ck_assert_str_eq(c->tokens[0].secret, "s3cr3t-alice-0123456789");
  ck_assert_uint_eq(c->tokens[0].len, 23);
  ck_assert_str_eq(c->tokens[1].secret, "s3cr3t-bob-0123456789abc");
  char want[600];
  snprintf(want, sizeof want, "%s/srv.crt", tac_dir);  /* beside the config */
  ck_assert_str_eq(c->tls.cert_file, want);
  ck_assert_int_eq(c->tls.set, 1);
  ck_assert_int_eq(c->tls.verify, WD_TLS_VERIFY_NONE);
  ck_assert_int_eq(c->auth_none, 0);
  wd_config_free(c);
  /* open on purpose */
  c = tac_ok("listen: [\"tcp://127.0.0.1:7000\"]\nauth: none\n" DEV);
  ck_assert_int_eq(c->auth_none, 1);
  ck_assert_uint_eq(c->n_tokens, 0);
  wd_config_free(c);
  /* client certificates required: authenticated without tokens */
  c = tac_ok("listen: [\"tls+tcp://127.0.0.1:7001\"]\n"
            TLS "  ca_file: other.crt\n  verify: required\n" DEV);
  ck_assert_int_eq(c->tls.verify, WD_TLS_VERIFY_REQUIRED);
  wd_config_free(c);
  /* ${VAR} in a path (a job's token file under Slurm) */
  setenv("WAVE_TEST_TOKEN", "bob.token", 1);
  c = tac_ok("listen: [\"tcp://127.0.0.1:7000\"]\n"
            "auth: {tokens: [{name: job, file: \"${WAVE_TEST_TOKEN}\"}]}\n" DEV);
  ck_assert_str_eq(c->tokens[0].secret, "s3cr3t-bob-0123456789abc");
  wd_config_free(c);
  tac_bad("auth: {tokens: [{name: job, file: \"${WAVE_NO_SUCH_VAR}\"}]}\n" DEV,
         "1:35", "auth.tokens[0].file", "WAVE_NO_SUCH_VAR is not set");
  /* ipc only: no auth needed */
  c = tac_ok(DEV);
  ck_assert_uint_eq(c->n_tokens, 0);
  wd_config_free(c);
}
END_TEST

START_TEST(network_needs_auth)
{
  tac_bad("listen:\n  - ipc:///tmp/a.sock\n  - tcp://0.0.0.0:7000\n" DEV,
         "3:5", "listen[1]", "without authentication: list auth.tokens, or "
         "say auth: none");
  tac_bad("listen: [\"tls+tcp://127.0.0.1:7001\"]\n" TLS DEV, "1:10",
         "listen[0]", "without authentication");
  /* optional client certificates are not authentication */
  tac_bad("listen: [\"tls+tcp://127.0.0.1:7001\"]\n"
         TLS "  ca_file: other.crt\n  verify: optional\n" DEV, "1:10",
         "listen[0]", "without authentication");
  tac_bad("listen: [\"tls+tcp://127.0.0.1:7001\"]\nauth: none\n" DEV, "1:10",
         "listen[0]", "needs a tls: section");
}
END_TEST

START_TEST(bad_auth_keys)
{
  tac_bad("auth: open\n" DEV, "1:7", "auth", "expected 'none' or a mapping");
  tac_bad("auth:\n  token: []\n" DEV, "2:3", "auth.token", "unknown key");
  tac_bad("auth:\n  tokens: []\n" DEV, "2:11", "auth.tokens",
         "at least one token");
  tac_bad("auth:\n  tokens:\n    - {name: alice}\n" DEV, "3:7",
         "auth.tokens[0]", "missing key 'file'");
  tac_bad("auth:\n  tokens:\n    - {name: alice, file: nothere.token}\n" DEV,
         "3:27", "auth.tokens[0].file", "No such file");
  tac_bad("auth:\n  tokens:\n    - {name: alice, file: open.token}\n" DEV,
         "3:27", "auth.tokens[0].file", "mode 0644: a token file must not be "
         "open to others");
  tac_bad("auth:\n  tokens:\n    - {name: alice, file: short.token}\n" DEV,
         "3:27", "auth.tokens[0].file", "one line of 16..255 bytes");
  tac_bad("auth:\n  tokens:\n    - {name: alice, file: blank.token}\n" DEV,
         "3:27", "auth.tokens[0].file", "without blanks");
  tac_bad("auth:\n  tokens:\n"
         "    - {name: alice, file: alice.token}\n"
         "    - {name: alice, file: bob.token}\n" DEV,
         "4:14", "auth.tokens[1].name", "already used by auth.tokens[0]");
  tac_bad("auth:\n  tokens:\n"
         "    - {name: alice, file: alice.token}\n"
         "    - {name: eve, file: alice.token}\n" DEV,
         "4:25", "auth.tokens[1].file", "the same token as auth.tokens[0]");
  tac_bad("auth:\n  tokens:\n    - {name: a/b, file: alice.token}\n" DEV,
         "3:14", "auth.tokens[0].name", "a token name is letters");
}
END_TEST

/* Fewer than 128 bits (auth.c's estimate) is refused at load, with the
 * position of the file key; 32 hex digits and 22 base64 characters pass. */
START_TEST(weak_tokens)
{
  const char *weak[] = {"aaaa.token", "long-a.token", "hex31.token",
                        "b64-21.token", "print19.token"};
  char text[400];
  for (size_t i = 0; i < sizeof weak / sizeof *weak; i++) {
    snprintf(text, sizeof text, "auth:\n  tokens:\n"
             "    - {name: alice, file: %s}\n" DEV, weak[i]);
    tac_bad(text, "3:27", "auth.tokens[0].file", "at least 128 bits");
  }
  tac_bad("auth:\n  tokens:\n    - {name: alice, file: aaaa.token}\n" DEV,
         "3:27", "auth.tokens[0].file", "openssl rand -hex 16");
  const char *ok[] = {"hex32.token", "b64-22.token"};
  for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
    snprintf(text, sizeof text, "auth:\n  tokens:\n"
             "    - {name: alice, file: %s}\n" DEV, ok[i]);
    wd_config_free(tac_ok(text));
  }
}
END_TEST

/* docs/security.md, "Tokens": group read is allowed for a group of ours
 * (a Secret with defaultMode 0440 and the pod's fsGroup); others never,
 * group write never, and a group that is not ours is refused.  A foreign
 * group needs root to chown to: as another user that one case is not run
 * (and the test says so). */
START_TEST(token_group_rule)
{
  static const struct { const char *name; mode_t mode; const char *bad; } m[] = {
    {"g440.token", 0440, NULL},
    {"g640.token", 0640, NULL},
    {"g460.token", 0460, "nor writable by group"},
    {"g470.token", 0470, "nor writable by group"},
    {"g444.token", 0444, "open to others"},
    {"g404.token", 0404, "open to others"},
  };
  char text[400], p[600];
  for (size_t i = 0; i < sizeof m / sizeof *m; i++) {
    tac_file(m[i].name, "0f1e2d3c4b5a69788796a5b4c3d2e1f0\n", m[i].mode);
    snprintf(p, sizeof p, "%s/%s", tac_dir, m[i].name);
    ck_assert_int_eq(chown(p, (uid_t)-1, getegid()), 0);
    snprintf(text, sizeof text, "auth:\n  tokens:\n"
             "    - {name: alice, file: %s}\n" DEV, m[i].name);
    if (m[i].bad == NULL)
      wd_config_free(tac_ok(text));
    else
      tac_bad(text, "3:27", "auth.tokens[0].file", m[i].bad);
  }
  if (geteuid() != 0) {
    printf("token_group_rule: not root: a group that is not ours not tried\n");
    return;
  }
  /* a gid this process is not in */
  gid_t groups[256], other = 4242;
  int k = getgroups(256, groups);
  for (int again = 1; again;) {
    again = other == getegid();
    for (int i = 0; i < k; i++)
      again |= groups[i] == other;
    other += (gid_t)again;
  }
  tac_file("g440x.token", "0f1e2d3c4b5a69788796a5b4c3d2e1f0\n", 0440);
  snprintf(p, sizeof p, "%s/g440x.token", tac_dir);
  ck_assert_int_eq(chown(p, (uid_t)-1, other), 0);
  tac_bad("auth:\n  tokens:\n    - {name: alice, file: g440x.token}\n" DEV,
         "3:27", "auth.tokens[0].file", "which is not ours");
  /* and 0400 of that group is fine: the group bits are what counts */
  ck_assert_int_eq(chmod(p, 0400), 0);
  wd_config_free(tac_ok("auth:\n  tokens:\n"
                       "    - {name: alice, file: g440x.token}\n" DEV));
}
END_TEST

static nng_sockaddr tac_ip4(const char *dotted)
{
  nng_sockaddr sa;
  memset(&sa, 0, sizeof sa);
  sa.s_in.sa_family = NNG_AF_INET;
  ck_assert_int_eq(inet_pton(AF_INET, dotted, &sa.s_in.sa_addr), 1);
  return sa;
}

static int tac_try(wd_config *c, const nng_sockaddr *sa, uint64_t now,
                  const char *token, char *why, size_t n)
{
  char who[64] = "";
  return wd_auth_check(c, sa, now, token, who, sizeof who, why, n);
}

#define RIGHT "s3cr3t-alice-0123456789"
#define WRONG "s3cr3t-alice-0123456780"
#define LIMITED "auth:\n  tokens:\n    - {name: alice, file: alice.token}\n" \
  "limits: {auth_failures: 3, auth_failure_ms: 1000}\n" DEV

/* After auth_failures wrong tokens a peer's next attempts are refused
 * without a look, the right token included, until a refill period has
 * passed; another address is served meanwhile.  The clock is given, so no
 * timing is measured. */
START_TEST(token_failures_limited)
{
  wd_config *c = tac_ok(LIMITED);
  nng_sockaddr a = tac_ip4("127.0.0.1"), b = tac_ip4("127.0.0.2");
  char why[200];
  uint64_t t = 5000;
  ck_assert_int_eq(tac_try(c, &a, t, RIGHT, why, sizeof why), 0);
  for (int i = 0; i < 3; i++) {
    ck_assert_int_eq(tac_try(c, &a, t, WRONG, why, sizeof why), WAVE_EAUTH);
    ck_assert_str_eq(why, "wrong token");
  }
  /* a success does not give tries back; the fourth attempt is refused */
  ck_assert_int_eq(tac_try(c, &a, t, RIGHT, why, sizeof why), WAVE_EAUTH);
  ck_assert_msg(strstr(why, "too many wrong tokens") != NULL, "%s", why);
  ck_assert_int_eq(tac_try(c, &a, t + 999, RIGHT, why, sizeof why),
                   WAVE_EAUTH);
  ck_assert_msg(strstr(why, "for 1 ms") != NULL, "%s", why);
  /* another peer has its own bucket */
  ck_assert_int_eq(tac_try(c, &b, t + 999, RIGHT, why, sizeof why), 0);
  ck_assert_int_eq(tac_try(c, &b, t + 999, WRONG, why, sizeof why),
                   WAVE_EAUTH);
  ck_assert_str_eq(why, "wrong token");
  /* one refill period: one more try, right or wrong */
  ck_assert_int_eq(tac_try(c, &a, t + 1000, RIGHT, why, sizeof why), 0);
  ck_assert_int_eq(tac_try(c, &a, t + 1000, WRONG, why, sizeof why),
                   WAVE_EAUTH);
  ck_assert_str_eq(why, "wrong token");
  ck_assert_int_eq(tac_try(c, &a, t + 1000, RIGHT, why, sizeof why),
                   WAVE_EAUTH);
  ck_assert_msg(strstr(why, "too many") != NULL, "%s", why);
  /* a long quiet time fills the bucket, never beyond auth_failures */
  t += 1000000;
  for (int i = 0; i < 3; i++)
    ck_assert_int_eq(tac_try(c, &a, t, WRONG, why, sizeof why), WAVE_EAUTH);
  ck_assert_int_eq(tac_try(c, &a, t, RIGHT, why, sizeof why), WAVE_EAUTH);
  ck_assert_msg(strstr(why, "too many") != NULL, "%s", why);
  /* no token at all is not a guess: not counted */
  ck_assert_int_eq(tac_try(c, &b, t, "", why, sizeof why), WAVE_EAUTH);
  ck_assert_int_eq(tac_try(c, &b, t, "", why, sizeof why), WAVE_EAUTH);
  ck_assert_int_eq(tac_try(c, &b, t, "", why, sizeof why), WAVE_EAUTH);
  ck_assert_int_eq(tac_try(c, &b, t, RIGHT, why, sizeof why), 0);
  /* IPv6: one /64 is one peer */
  nng_sockaddr x, y, z;
  memset(&x, 0, sizeof x);
  x.s_in6.sa_family = NNG_AF_INET6;
  y = z = x;
  ck_assert_int_eq(inet_pton(AF_INET6, "2001:db8:1:2::1", x.s_in6.sa_addr),
                   1);
  ck_assert_int_eq(inet_pton(AF_INET6, "2001:db8:1:2:ffff::9",
                             y.s_in6.sa_addr), 1);
  ck_assert_int_eq(inet_pton(AF_INET6, "2001:db8:1:3::1", z.s_in6.sa_addr),
                   1);
  for (int i = 0; i < 3; i++)
    ck_assert_int_eq(tac_try(c, &x, t, WRONG, why, sizeof why), WAVE_EAUTH);
  ck_assert_int_eq(tac_try(c, &y, t, RIGHT, why, sizeof why), WAVE_EAUTH);
  ck_assert_int_eq(tac_try(c, &z, t, RIGHT, why, sizeof why), 0);
  wd_config_free(c);
}
END_TEST

/* Wrong tokens are logged at warn, one line per peer per WD_AUTH_LOG_MS
 * with the counts since the last line. */
START_TEST(token_failures_logged)
{
  wd_config *c = tac_ok(LIMITED);
  char log[700];
  snprintf(log, sizeof log, "%s/log", tac_dir);
  fflush(stderr);
  int keep = dup(2), fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(dup2(fd, 2), 2);
  close(fd);
  wd_log_set_level(WD_LOG_WARN);
  nng_sockaddr a = tac_ip4("127.0.0.1"), b = tac_ip4("127.0.0.2");
  char why[200];
  uint64_t t = 7000;
  for (int i = 0; i < 5; i++)  /* 3 compared, 2 refused */
    tac_try(c, &a, t, WRONG, why, sizeof why);
  tac_try(c, &b, t, WRONG, why, sizeof why);
  for (int i = 0; i < 6; i++)  /* 6 refused, no refill yet: no line */
    tac_try(c, &a, t + 500, WRONG, why, sizeof why);
  /* the bucket is full again: compared, and the interval is over */
  tac_try(c, &a, t + WD_AUTH_LOG_MS, WRONG, why, sizeof why);
  fflush(stderr);
  ck_assert_int_eq(dup2(keep, 2), 2);
  close(keep);
  FILE *f = fopen(log, "r");
  ck_assert_ptr_nonnull(f);
  char line[4][600];
  int n = 0;
  while (n < 4 && fgets(line[n], sizeof line[n], f) != NULL)
    n++;
  fclose(f);
  ck_assert_int_eq(n, 3);
  ck_assert_msg(strstr(line[0], "warn") && strstr(line[0], "auth: 1 wrong "
                "token from 127.0.0.1 and 0 refused unchecked in the last "
                "10 s"), "%s", line[0]);
  ck_assert_msg(strstr(line[1], "auth: 1 wrong token from 127.0.0.2 and 0 "),
                "%s", line[1]);
  /* 2 compared and 8 refused since the first line, and this one */
  ck_assert_msg(strstr(line[2], "auth: 3 wrong tokens from 127.0.0.1 and 8 "
                "refused unchecked"), "%s", line[2]);
  wd_config_free(c);
}
END_TEST

START_TEST(bad_tls_keys)
{
  tac_bad("tls:\n  cert_file: srv.crt\n" DEV, "2:3", "tls",
         "missing key 'key_file'");
  tac_bad("tls:\n  cert_file: nothere.crt\n  key_file: srv.key\n" DEV, "2:14",
         "tls.cert_file", "No such file");
  tac_bad("tls:\n  cert_file: .\n  key_file: srv.key\n" DEV, "2:14",
         "tls.cert_file", "not a regular file");
  tac_bad("tls:\n  cert_file: notpem.crt\n  key_file: srv.key\n" DEV, "2:3",
         "tls", "not a PEM file");
  tac_bad("tls:\n  cert_file: srv.crt\n  key_file: junk.key\n" DEV, "2:3",
         "tls", "key_file");
  tac_bad("tls:\n  cert_file: srv.crt\n  key_file: srv.key\n"
         "  verify: required\n" DEV, "2:3", "tls.verify",
         "give one");
  tac_bad("tls:\n  cert_file: srv.crt\n  key_file: srv.key\n"
         "  verify: maybe\n" DEV, "4:11", "tls.verify",
         "expected one of: none, optional, required");
  tac_bad("tls:\n  cert_file: srv.crt\n  key_file: srv.key\n"
         "  ca_file: notpem.crt\n" DEV, "2:3", "tls", "ca_file");
  tac_bad("tls:\n" DEV, "1:5", "tls", "expected a mapping");
  tac_bad("listen: [\"tls+tcp://127.0.0.1\"]\n" DEV, "1:10", "listen[0]",
         "needs a port");
}
END_TEST

START_TEST(token_compare)
{
  wd_config *c = tac_ok("auth:\n  tokens:\n"
                       "    - {name: alice, file: alice.token}\n"
                       "    - {name: bob, file: bob.token}\n" DEV);
  /* pipe 0 (no connection) is not ipc: treated as the network */
  nng_pipe p = NNG_PIPE_INITIALIZER;
  char who[64] = "", why[200];
  ck_assert_int_eq(wd_auth_request(c, p, "", who, sizeof who, why,
                                   sizeof why), WAVE_EAUTH);
  ck_assert_int_eq(wd_auth_request(c, p, "s3cr3t-alice-012345678", who,
                                   sizeof who, why, sizeof why), WAVE_EAUTH);
  ck_assert_int_eq(wd_auth_request(c, p, "s3cr3t-alice-01234567890", who,
                                   sizeof who, why, sizeof why), WAVE_EAUTH);
  ck_assert_str_eq(who, "");
  ck_assert_int_eq(wd_auth_request(c, p, "s3cr3t-bob-0123456789abc", who,
                                   sizeof who, why, sizeof why), 0);
  ck_assert_str_eq(who, "token:bob");
  ck_assert_int_eq(wd_auth_request(c, p, "s3cr3t-alice-0123456789", who,
                                   sizeof who, why, sizeof why), 0);
  ck_assert_str_eq(who, "token:alice");
  wd_config_free(c);
}
END_TEST

/* generate: true - an absent file is pending at load, made by
 * wd_token_generate (0600, 32 hex digits), then read like any token file. */
START_TEST(token_generate)
{
  char dir[600], file[700];
  snprintf(dir, sizeof dir, "%s/state", tac_dir);
  ck_assert_int_eq(mkdir(dir, 0700), 0);
  snprintf(file, sizeof file, "%s/gen.token", dir);
  const char *cfg = "listen: [\"tcp://127.0.0.1:7000\"]\n"
                    "auth: {tokens: [{file: state/gen.token, generate: true, "
                    "name: client}]}\n" DEV;
  wd_config *c = tac_ok(cfg);
  ck_assert_int_eq(c->tokens[0].pending, 1);
  ck_assert_int_eq(c->tokens[0].generate, 1);
  ck_assert_uint_eq(c->tokens[0].len, 0);
  ck_assert_int_eq(access(file, F_OK), -1);  /* loading writes nothing */
  nng_pipe p = NNG_PIPE_INITIALIZER;
  char who[64] = "", why[200];
  /* pending: nothing matches, not even an empty secret */
  ck_assert_int_eq(wd_auth_request(c, p, "x", who, sizeof who, why,
                                   sizeof why), WAVE_EAUTH);
  wave_error err = {0};
  ck_assert_int_eq(wd_token_generate(c, &err), 0);
  ck_assert_int_eq(c->tokens[0].pending, 0);
  ck_assert_uint_eq(c->tokens[0].len, 32);
  struct stat st;
  ck_assert_int_eq(stat(file, &st), 0);
  ck_assert_uint_eq(st.st_mode & 07777, 0600);
  char secret[WD_TOKEN_MAX];
  snprintf(secret, sizeof secret, "%s", c->tokens[0].secret);
  ck_assert_uint_eq(strspn(secret, "0123456789abcdef"), 32);
  ck_assert_int_eq(wd_auth_request(c, p, secret, who, sizeof who, why,
                                   sizeof why), 0);
  ck_assert_str_eq(who, "token:client");
  wd_config_free(c);
  /* the next load reads the file: the same secret, nothing pending */
  c = tac_ok(cfg);
  ck_assert_int_eq(c->tokens[0].pending, 0);
  ck_assert_str_eq(c->tokens[0].secret, secret);
  ck_assert_int_eq(wd_token_generate(c, &err), 0);
  ck_assert_str_eq(c->tokens[0].secret, secret);
  wd_config_free(c);
  /* a second generation gives another secret */
  ck_assert_int_eq(unlink(file), 0);
  c = tac_ok(cfg);
  ck_assert_int_eq(wd_token_generate(c, &err), 0);
  ck_assert_str_ne(c->tokens[0].secret, secret);
  wd_config_free(c);
  /* without generate: an absent file is an error, as before */
  ck_assert_int_eq(unlink(file), 0);
  tac_bad("auth: {tokens: [{name: c, file: state/gen.token}]}\n" DEV,
         "1:33", "auth.tokens[0].file", "No such file");
  /* generate into a folder that is not there */
  tac_bad("auth: {tokens: [{name: c, file: nodir/gen.token, generate: true}]}"
         "\n" DEV, "1:33", "auth.tokens[0].file", "folder");
  tac_bad("auth: {tokens: [{name: c, generate: yes, file: state/gen.token}]}"
         "\n" DEV, "1:37", "auth.tokens[0].generate",
         "expected one of: false, true");
}
END_TEST

int main(void)
{
  Suite *s = suite_create("access_config");
  TCase *t = tcase_create("keys");
  tcase_add_checked_fixture(t, tac_setup, tac_teardown);
  tcase_add_test(t, tokens_and_tls_load);
  tcase_add_test(t, network_needs_auth);
  tcase_add_test(t, bad_auth_keys);
  tcase_add_test(t, bad_tls_keys);
  tcase_add_test(t, token_compare);
  tcase_add_test(t, token_generate);
  tcase_add_test(t, weak_tokens);
  tcase_add_test(t, token_group_rule);
  tcase_add_test(t, token_failures_limited);
  tcase_add_test(t, token_failures_logged);
  suite_add_tcase(s, t);
  SRunner *r = srunner_create(s);
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
