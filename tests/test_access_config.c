/* test_access_config.c - the config keys of tls+tcp:// listeners and tcp
 * authentication (daemon/config.c, daemon/auth.c, daemon/tls.c).
 *
 * Each case writes a config (and the token and PEM files it names) into a
 * temporary folder and loads it.  Bad files must fail with the exact
 * "file:line:column: key: what" message, line and column counted by hand
 * from the text here.  The certificates are made with the openssl CLI
 * (Debian's openssl package, .ci/deps.sh).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/auth.h"
#include "daemon/config.h"

static char ta_dir[256];
static char ta_path[512];

static void ta_file(const char *name, const char *text, mode_t mode)
{
  char p[600];
  snprintf(p, sizeof p, "%s/%s", ta_dir, name);
  FILE *f = fopen(p, "w");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_ge(fputs(text, f), 0);
  ck_assert_int_eq(fclose(f), 0);
  ck_assert_int_eq(chmod(p, mode), 0);
}

static void ta_setup(void)
{
  snprintf(ta_dir, sizeof ta_dir, "/tmp/wave-access.XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(ta_dir));
  snprintf(ta_path, sizeof ta_path, "%s/c.yaml", ta_dir);
  ta_file("alice.token", "s3cr3t-alice-0123456789\n", 0600);
  ta_file("bob.token", "s3cr3t-bob-0123456789abc", 0400);
  ta_file("open.token", "s3cr3t-open-0123456789\n", 0644);
  ta_file("short.token", "tooshort\n", 0600);
  ta_file("blank.token", "has a blank 0123456789\n", 0600);
  ta_file("notpem.crt", "hello\n", 0644);
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
           ta_dir);
  ck_assert_msg(system(cmd) == 0, "openssl failed: %s", cmd);
}

static void ta_teardown(void)
{
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf %s", ta_dir);
  ck_assert_int_eq(system(cmd), 0);
}

static wd_config *ta_ok(const char *text)
{
  ta_file("c.yaml", text, 0644);
  wd_config *c = NULL;
  wave_error err = {0};
  int rc = wd_config_load(ta_path, &c, &err);
  ck_assert_msg(rc == 0, "unexpected error: %s", err.message);
  return c;
}

static void ta_bad(const char *text, const char *where, const char *key,
                   const char *what)
{
  ta_file("c.yaml", text, 0644);
  wd_config *c = (wd_config *)1;
  wave_error err = {0};
  ck_assert_int_eq(wd_config_load(ta_path, &c, &err), WAVE_ECONFIG);
  ck_assert_ptr_null(c);
  char want[1024];
  snprintf(want, sizeof want, "%s:%s: %s: ", ta_path, where, key);
  ck_assert_msg(strncmp(err.message, want, strlen(want)) == 0,
                "message '%s' does not start with '%s'", err.message, want);
  ck_assert_msg(strstr(err.message + strlen(want), what) != NULL,
                "message '%s' does not say '%s'", err.message, what);
}

#define DEV "devices:\n  - {name: cpu0, backend: cpu}\n"
#define TLS "tls:\n  cert_file: srv.crt\n  key_file: srv.key\n"

START_TEST(tokens_and_tls_load)
{
  wd_config *c = ta_ok("listen: [\"tcp://127.0.0.1:7000\", "
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
  snprintf(want, sizeof want, "%s/srv.crt", ta_dir);  /* beside the config */
  ck_assert_str_eq(c->tls.cert_file, want);
  ck_assert_int_eq(c->tls.set, 1);
  ck_assert_int_eq(c->tls.verify, WD_TLS_VERIFY_NONE);
  ck_assert_int_eq(c->auth_none, 0);
  wd_config_free(c);
  /* open on purpose */
  c = ta_ok("listen: [\"tcp://127.0.0.1:7000\"]\nauth: none\n" DEV);
  ck_assert_int_eq(c->auth_none, 1);
  ck_assert_uint_eq(c->n_tokens, 0);
  wd_config_free(c);
  /* client certificates required: authenticated without tokens */
  c = ta_ok("listen: [\"tls+tcp://127.0.0.1:7001\"]\n"
            TLS "  ca_file: other.crt\n  verify: required\n" DEV);
  ck_assert_int_eq(c->tls.verify, WD_TLS_VERIFY_REQUIRED);
  wd_config_free(c);
  /* ${VAR} in a path (a job's token file under Slurm) */
  setenv("WAVE_TEST_TOKEN", "bob.token", 1);
  c = ta_ok("listen: [\"tcp://127.0.0.1:7000\"]\n"
            "auth: {tokens: [{name: job, file: \"${WAVE_TEST_TOKEN}\"}]}\n" DEV);
  ck_assert_str_eq(c->tokens[0].secret, "s3cr3t-bob-0123456789abc");
  wd_config_free(c);
  ta_bad("auth: {tokens: [{name: job, file: \"${WAVE_NO_SUCH_VAR}\"}]}\n" DEV,
         "1:35", "auth.tokens[0].file", "WAVE_NO_SUCH_VAR is not set");
  /* ipc only: no auth needed */
  c = ta_ok(DEV);
  ck_assert_uint_eq(c->n_tokens, 0);
  wd_config_free(c);
}
END_TEST

START_TEST(network_needs_auth)
{
  ta_bad("listen:\n  - ipc:///tmp/a.sock\n  - tcp://0.0.0.0:7000\n" DEV,
         "3:5", "listen[1]", "without authentication: list auth.tokens, or "
         "say auth: none");
  ta_bad("listen: [\"tls+tcp://127.0.0.1:7001\"]\n" TLS DEV, "1:10",
         "listen[0]", "without authentication");
  /* optional client certificates are not authentication */
  ta_bad("listen: [\"tls+tcp://127.0.0.1:7001\"]\n"
         TLS "  ca_file: other.crt\n  verify: optional\n" DEV, "1:10",
         "listen[0]", "without authentication");
  ta_bad("listen: [\"tls+tcp://127.0.0.1:7001\"]\nauth: none\n" DEV, "1:10",
         "listen[0]", "needs a tls: section");
}
END_TEST

START_TEST(bad_auth_keys)
{
  ta_bad("auth: open\n" DEV, "1:7", "auth", "expected 'none' or a mapping");
  ta_bad("auth:\n  token: []\n" DEV, "2:3", "auth.token", "unknown key");
  ta_bad("auth:\n  tokens: []\n" DEV, "2:11", "auth.tokens",
         "at least one token");
  ta_bad("auth:\n  tokens:\n    - {name: alice}\n" DEV, "3:7",
         "auth.tokens[0]", "missing key 'file'");
  ta_bad("auth:\n  tokens:\n    - {name: alice, file: nothere.token}\n" DEV,
         "3:27", "auth.tokens[0].file", "No such file");
  ta_bad("auth:\n  tokens:\n    - {name: alice, file: open.token}\n" DEV,
         "3:27", "auth.tokens[0].file", "mode 0644: a token file must not be "
         "open to group or others");
  ta_bad("auth:\n  tokens:\n    - {name: alice, file: short.token}\n" DEV,
         "3:27", "auth.tokens[0].file", "one line of 16..255 bytes");
  ta_bad("auth:\n  tokens:\n    - {name: alice, file: blank.token}\n" DEV,
         "3:27", "auth.tokens[0].file", "without blanks");
  ta_bad("auth:\n  tokens:\n"
         "    - {name: alice, file: alice.token}\n"
         "    - {name: alice, file: bob.token}\n" DEV,
         "4:14", "auth.tokens[1].name", "already used by auth.tokens[0]");
  ta_bad("auth:\n  tokens:\n"
         "    - {name: alice, file: alice.token}\n"
         "    - {name: eve, file: alice.token}\n" DEV,
         "4:25", "auth.tokens[1].file", "the same token as auth.tokens[0]");
  ta_bad("auth:\n  tokens:\n    - {name: a/b, file: alice.token}\n" DEV,
         "3:14", "auth.tokens[0].name", "a token name is letters");
}
END_TEST

START_TEST(bad_tls_keys)
{
  ta_bad("tls:\n  cert_file: srv.crt\n" DEV, "2:3", "tls",
         "missing key 'key_file'");
  ta_bad("tls:\n  cert_file: nothere.crt\n  key_file: srv.key\n" DEV, "2:14",
         "tls.cert_file", "No such file");
  ta_bad("tls:\n  cert_file: .\n  key_file: srv.key\n" DEV, "2:14",
         "tls.cert_file", "not a regular file");
  ta_bad("tls:\n  cert_file: notpem.crt\n  key_file: srv.key\n" DEV, "2:3",
         "tls", "not a PEM file");
  ta_bad("tls:\n  cert_file: srv.crt\n  key_file: junk.key\n" DEV, "2:3",
         "tls", "key_file");
  ta_bad("tls:\n  cert_file: srv.crt\n  key_file: srv.key\n"
         "  verify: required\n" DEV, "2:3", "tls.verify",
         "give one");
  ta_bad("tls:\n  cert_file: srv.crt\n  key_file: srv.key\n"
         "  verify: maybe\n" DEV, "4:11", "tls.verify",
         "expected one of: none, optional, required");
  ta_bad("tls:\n  cert_file: srv.crt\n  key_file: srv.key\n"
         "  ca_file: notpem.crt\n" DEV, "2:3", "tls", "ca_file");
  ta_bad("tls:\n" DEV, "1:5", "tls", "expected a mapping");
  ta_bad("listen: [\"tls+tcp://127.0.0.1\"]\n" DEV, "1:10", "listen[0]",
         "needs a port");
}
END_TEST

START_TEST(token_compare)
{
  wd_config *c = ta_ok("auth:\n  tokens:\n"
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
 * wd_auth_generate (0600, 32 hex digits), then read like any token file. */
START_TEST(token_generate)
{
  char dir[600], file[700];
  snprintf(dir, sizeof dir, "%s/state", ta_dir);
  ck_assert_int_eq(mkdir(dir, 0700), 0);
  snprintf(file, sizeof file, "%s/gen.token", dir);
  const char *cfg = "listen: [\"tcp://127.0.0.1:7000\"]\n"
                    "auth: {tokens: [{file: state/gen.token, generate: true, "
                    "name: client}]}\n" DEV;
  wd_config *c = ta_ok(cfg);
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
  ck_assert_int_eq(wd_auth_generate(c, &err), 0);
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
  c = ta_ok(cfg);
  ck_assert_int_eq(c->tokens[0].pending, 0);
  ck_assert_str_eq(c->tokens[0].secret, secret);
  ck_assert_int_eq(wd_auth_generate(c, &err), 0);
  ck_assert_str_eq(c->tokens[0].secret, secret);
  wd_config_free(c);
  /* a second generation gives another secret */
  ck_assert_int_eq(unlink(file), 0);
  c = ta_ok(cfg);
  ck_assert_int_eq(wd_auth_generate(c, &err), 0);
  ck_assert_str_ne(c->tokens[0].secret, secret);
  wd_config_free(c);
  /* without generate: an absent file is an error, as before */
  ck_assert_int_eq(unlink(file), 0);
  ta_bad("auth: {tokens: [{name: c, file: state/gen.token}]}\n" DEV,
         "1:33", "auth.tokens[0].file", "No such file");
  /* generate into a folder that is not there */
  ta_bad("auth: {tokens: [{name: c, file: nodir/gen.token, generate: true}]}"
         "\n" DEV, "1:33", "auth.tokens[0].file", "folder");
  ta_bad("auth: {tokens: [{name: c, generate: yes, file: state/gen.token}]}"
         "\n" DEV, "1:37", "auth.tokens[0].generate",
         "expected one of: false, true");
}
END_TEST

int main(void)
{
  Suite *s = suite_create("access_config");
  TCase *t = tcase_create("keys");
  tcase_add_checked_fixture(t, ta_setup, ta_teardown);
  tcase_add_test(t, tokens_and_tls_load);
  tcase_add_test(t, network_needs_auth);
  tcase_add_test(t, bad_auth_keys);
  tcase_add_test(t, bad_tls_keys);
  tcase_add_test(t, token_compare);
  tcase_add_test(t, token_generate);
  suite_add_tcase(s, t);
  SRunner *r = srunner_create(s);
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
