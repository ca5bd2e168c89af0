/* test_access.c - authenticated tcp and TLS against the real wavedd
 * (daemon/net/auth.c, daemon/net/tls.c, client/access.c, docs/security.md).
 *
 * The daemon listens on ipc, plain tcp and tls+tcp, with two tokens.  A
 * throwaway CA signs the server's certificate (CN and DNS name
 * "localhost"); a second, unrelated CA is the one an untrusting client
 * holds.  Both are made here with the openssl CLI.  Raw nng requests show
 * what the wire does (no token, a wrong one, the right one; ipc without
 * one); libwaveclient and wavectl show the client side (token files, TLS
 * with and without the CA, the fleet passing the token on).
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nng/nng.h>

#include "tests/daemon_harness.h"
#include "wave/client.h"
#include "wave/fleet.h"

static td_daemon g_d;
static char g_tls[96];       /* tls+tcp://localhost:PORT */
static char g_alice[300], g_bob[300], g_wrong[300], g_open[300];
static char g_tcp2[96];  /* g_d.tcp dialed from 127.0.0.2: another peer */
static char g_ca[300], g_other[300];

static void ta_path(char *out, size_t n, const char *name)
{
  snprintf(out, n, "%s/%s", g_d.dir, name);
}

static void ta_token(char *path, size_t n, const char *name, const char *text,
                     mode_t mode)
{
  ta_path(path, n, name);
  td_write(path, text);
  ck_assert_int_eq(chmod(path, mode), 0);
}

/* The folder, certificates, tokens and config (not started). */
static void ta_prepare(void)
{
  td_prepare(&g_d, NULL);
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "set -e; cd %s; q='>/dev/null 2>&1'\n"
           "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 "
           "-nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=wave-test-ca "
           ">/dev/null 2>&1\n"
           "openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
           "-keyout srv.key -out srv.csr -subj /CN=localhost >/dev/null 2>&1\n"
           "printf 'subjectAltName=DNS:localhost\\n' > ext\n"
           "openssl x509 -req -in srv.csr -CA ca.crt -CAkey ca.key "
           "-CAcreateserial -out srv.crt -days 2 -extfile ext >/dev/null 2>&1\n"
           "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 "
           "-nodes -keyout other.key -out other.crt -days 2 -subj /CN=other "
           ">/dev/null 2>&1\n",
           g_d.dir);
  ck_assert_msg(system(cmd) == 0, "openssl could not make the certificates");
  ta_path(g_ca, sizeof g_ca, "ca.crt");
  ta_path(g_other, sizeof g_other, "other.crt");
  ta_token(g_alice, sizeof g_alice, "alice.token",
           "alice-7f3e9c1b2a5d4e6f8091\n", 0600);
  ta_token(g_bob, sizeof g_bob, "bob.token", "bob-0a1b2c3d4e5f60718293", 0600);
  ta_token(g_wrong, sizeof g_wrong, "wrong.token",
           "alice-7f3e9c1b2a5d4e6f8092\n", 0600);
  ta_token(g_open, sizeof g_open, "open.token",
           "alice-7f3e9c1b2a5d4e6f8091\n", 0644);
  snprintf(g_tls, sizeof g_tls, "tls+tcp://localhost:%d", td_free_port());
  /* nng's "tcp://LOCAL;HOST:PORT": the dialer binds LOCAL first */
  snprintf(g_tcp2, sizeof g_tcp2, "tcp://127.0.0.2;%.63s",
           g_d.tcp + strlen("tcp://"));
  char text[2048];
  /* wrong tokens: 5 per peer address, then one an hour (none in a test) */
  snprintf(text, sizeof text,
           "listen: [\"%s\", \"%s\", \"%s\"]\n"
           "ipc_mode: 0600\n"
           "log_level: debug\n"
           "limits: {auth_failures: 5, auth_failure_ms: 3600000}\n"
           "tls:\n  cert_file: srv.crt\n  key_file: srv.key\n"
           "auth:\n  tokens:\n"
           "    - {name: alice, file: alice.token}\n"
           "    - {name: bob, file: bob.token}\n"
           "packs: {load: []}\n"
           "devices:\n  - {name: cpu0, backend: cpu, threads: 1}\n",
           g_d.ipc, g_d.tcp, g_tls);
  td_write(g_d.cfg, text);
}

static void ta_setup(void)
{
  ta_prepare();
  if (td_start(&g_d) != 0) {
    fprintf(stderr, "wavedd did not start:\n%s\n", td_stderr(&g_d));
    ck_abort_msg("wavedd did not start");
  }
}

static void ta_teardown(void)
{
  int rc = td_stop(&g_d);  /* 0: a clean stop (and no leak under ASan) */
  if (rc != 0)
    fprintf(stderr, "wavedd exited %d:\n%s\n", rc, td_stderr(&g_d));
  td_cleanup(&g_d);
  ck_assert_int_eq(rc, 0);
}

static Wave__V1__Response *ta_status(nng_socket s, uint64_t id,
                                     const char *token)
{
  Wave__V1__StatusRequest st = WAVE__V1__STATUS_REQUEST__INIT;
  Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
  rq.version = 2;
  rq.id = id;
  if (token != NULL)
    rq.token = (char *)token;
  rq.body_case = WAVE__V1__REQUEST__BODY_STATUS;
  rq.status = &st;
  return td_call(s, &rq);
}

static uint64_t ta_served(nng_socket s)
{
  Wave__V1__Response *r = ta_status(s, 1, NULL);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_STATUS);
  uint64_t n = r->status->jobs_served;
  wave__v1__response__free_unpacked(r, NULL);
  return n;
}

START_TEST(tcp_needs_the_token)
{
  nng_socket t = td_dial(g_d.tcp), i = td_dial(g_d.ipc);
  uint64_t served = ta_served(i);  /* ipc: no token needed */
  td_expect_error(ta_status(t, 5, NULL), WAVE_EAUTH, 5);
  td_expect_error(ta_status(t, 6, "alice-7f3e9c1b2a5d4e6f8092"), WAVE_EAUTH, 6);
  td_expect_error(ta_status(t, 7, "alice-7f3e9c1b2a5d4e6f809"), WAVE_EAUTH, 7);
  td_expect_error(ta_status(t, 8, "alice-7f3e9c1b2a5d4e6f80911"), WAVE_EAUTH, 8);

  /* a refused reduction runs nothing */
  uint32_t rows[4] = {1, 2, 3, 4};
  ProtobufCBinaryData bin = {sizeof rows, (uint8_t *)rows};
  Wave__V1__ReduceRequest rr = WAVE__V1__REDUCE_REQUEST__INIT;
  rr.dtype = WAVE__V1__DTYPE__U32;
  rr.op = WAVE__V1__OP__SUM;
  rr.n_input = 1;
  rr.input = &bin;
  Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
  rq.version = 2;
  rq.id = 9;
  rq.body_case = WAVE__V1__REQUEST__BODY_REDUCE;
  rq.reduce = &rr;
  td_expect_error(td_call(t, &rq), WAVE_EAUTH, 9);
  /* nor does a stream (answered on the decode thread, after the check) */
  Wave__V1__StreamOpenRequest so = WAVE__V1__STREAM_OPEN_REQUEST__INIT;
  so.dtype = WAVE__V1__DTYPE__U32;
  so.op = WAVE__V1__OP__SUM;
  so.input_bytes = 16;
  Wave__V1__Request rs = WAVE__V1__REQUEST__INIT;
  rs.version = 2;
  rs.id = 10;
  rs.body_case = WAVE__V1__REQUEST__BODY_STREAM_OPEN;
  rs.stream_open = &so;
  td_expect_error(td_call(t, &rs), WAVE_EAUTH, 10);
  ck_assert_uint_eq(ta_served(i), served);

  /* the right token is served, for either name */
  rq.token = "bob-0a1b2c3d4e5f60718293";
  Wave__V1__Response *r = td_call(t, &rq);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_REDUCE);
  ck_assert_uint_eq(r->reduce->bits[0], 10);
  wave__v1__response__free_unpacked(r, NULL);
  r = ta_status(t, 11, "alice-7f3e9c1b2a5d4e6f8091");
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_STATUS);
  wave__v1__response__free_unpacked(r, NULL);
  ck_assert_uint_eq(ta_served(i), served + 1);
  nng_close(t);
  nng_close(i);
}
END_TEST

/* Past limits.auth_failures wrong tokens, a peer address gets AUTH even
 * with the right token, without it being compared; another address
 * (127.0.0.2) is served; the log says so at warn. */
START_TEST(tcp_wrong_tokens_limited)
{
  nng_socket t = td_dial(g_d.tcp), u = td_dial(g_tcp2);
  Wave__V1__Response *r = ta_status(t, 1, "bob-0a1b2c3d4e5f60718293");
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_STATUS);
  wave__v1__response__free_unpacked(r, NULL);
  for (uint64_t id = 2; id < 7; id++) {
    r = ta_status(t, id, "bob-0a1b2c3d4e5f60718294");
    ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_ERROR);
    ck_assert_str_eq(r->error->message, "wrong token");
    td_expect_error(r, WAVE_EAUTH, id);
  }
  /* a new connection from the same address is the same peer */
  nng_close(t);
  t = td_dial(g_d.tcp);
  r = ta_status(t, 7, "bob-0a1b2c3d4e5f60718293");
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_ERROR);
  ck_assert_msg(strstr(r->error->message, "too many wrong tokens"), "%s",
                r->error->message);
  td_expect_error(r, WAVE_EAUTH, 7);
  r = ta_status(u, 8, "bob-0a1b2c3d4e5f60718293");
  ck_assert_msg(r->body_case == WAVE__V1__RESPONSE__BODY_STATUS, "%s",
                r->error->message);
  wave__v1__response__free_unpacked(r, NULL);
  const char *log = td_stderr(&g_d);
  ck_assert_msg(strstr(log, "warn: auth: 1 wrong token from 127.0.0.1 and 0 "
                "refused unchecked"), "%s", log);
  nng_close(t);
  nng_close(u);
}
END_TEST

static int ta_sum(wave_client *c, uint32_t *out, wave_error *err)
{
  uint32_t rows[5] = {3, 1, 4, 1, 5};
  wave_chunk ch = {rows, sizeof rows};
  wave_reduce_request rq = {.dtype = WAVE_U32, .op = WAVE_SUM, .input = &ch,
                            .n_input = 1};
  wave_reduce_result res;
  int rc = wave_reduce(c, &rq, &res, err);
  *out = rc == 0 ? res.bits[0] : 0;
  return rc;
}

START_TEST(tls_end_to_end)
{
  wave_error err = {0};
  wave_client *c = NULL;
  uint32_t sum = 0;
  wave_client_options o = {.dial = 1, .token_file = g_alice,
                           .tls_ca_file = g_ca};
  ck_assert_msg(wave_client_open_with(&c, g_tls, &o, &err) == 0, "%s",
                err.message);
  ck_assert_msg(ta_sum(c, &sum, &err) == 0, "%s", err.message);
  ck_assert_uint_eq(sum, 14);
  wave_client_close(c);

  /* TLS without the token: the daemon still wants it */
  o.token_file = NULL;
  unsetenv("WAVE_TOKEN_FILE");
  ck_assert_int_eq(wave_client_open_with(&c, g_tls, &o, &err), 0);
  ck_assert_int_eq(ta_sum(c, &sum, &err), WAVE_EAUTH);
  wave_client_close(c);

  /* a client that trusts another CA refuses the daemon, and says why */
  o.token_file = g_alice;
  o.tls_ca_file = g_other;
  ck_assert_int_eq(wave_client_open_with(&c, g_tls, &o, &err), WAVE_EIO);
  ck_assert_ptr_null(c);
  ck_assert_msg(strstr(err.message, "TLS handshake failed") &&
                strstr(err.message, "--tls-ca"), "%s", err.message);
  /* ... as does one that expects another name on the certificate */
  o.tls_ca_file = g_ca;
  o.tls_server_name = "wavedd.example";
  ck_assert_int_eq(wave_client_open_with(&c, g_tls, &o, &err), WAVE_EIO);
  ck_assert_msg(strstr(err.message, "TLS handshake failed"), "%s",
                err.message);
  /* and WAVE_TLS_CA / WAVE_TOKEN_FILE are the defaults */
  setenv("WAVE_TLS_CA", g_ca, 1);
  setenv("WAVE_TOKEN_FILE", g_bob, 1);
  ck_assert_msg(wave_client_dial(&c, g_tls, &err) == 0, "%s", err.message);
  ck_assert_msg(ta_sum(c, &sum, &err) == 0, "%s", err.message);
  ck_assert_uint_eq(sum, 14);
  wave_client_close(c);
  unsetenv("WAVE_TLS_CA");
  unsetenv("WAVE_TOKEN_FILE");
}
END_TEST

START_TEST(client_token_files)
{
  wave_error err = {0};
  wave_client *c = NULL;
  uint32_t sum = 0;
  wave_client_options o = {.token_file = g_open};
  ck_assert_int_eq(wave_client_open_with(&c, g_d.tcp, &o, &err), WAVE_EARG);
  ck_assert_msg(strstr(err.message, "chmod 600"), "%s", err.message);
  o.token_file = "/nonexistent/token";
  ck_assert_int_eq(wave_client_open_with(&c, g_d.tcp, &o, &err), WAVE_EARG);
  o.token_file = g_wrong;
  ck_assert_int_eq(wave_client_open_with(&c, g_d.tcp, &o, &err), 0);
  ck_assert_int_eq(ta_sum(c, &sum, &err), WAVE_EAUTH);
  ck_assert_msg(strstr(err.message, "wrong token"), "%s", err.message);
  wave_client_close(c);
  o.token_file = NULL;
  o.token = "alice-7f3e9c1b2a5d4e6f8091";
  ck_assert_int_eq(wave_client_open_with(&c, g_d.tcp, &o, &err), 0);
  ck_assert_msg(ta_sum(c, &sum, &err) == 0, "%s", err.message);
  ck_assert_uint_eq(sum, 14);
  wave_client_close(c);

  /* the fleet passes the same token to every daemon */
  wave_fleet *f = NULL;
  const char *urls[2] = {g_d.tcp, g_tls};
  ck_assert_int_eq(wave_fleet_open(&f, urls, 2, &err), 0);
  wave_client_options fo = {.token_file = g_alice, .tls_ca_file = g_ca};
  ck_assert_int_eq(wave_fleet_set_client_options(f, &fo, &err), 0);
  static uint32_t rows[1 << 17];
  uint64_t want = 0;
  for (uint32_t k = 0; k < (1u << 17); k++)
    want += rows[k] = k * 2654435761u;
  wave_chunk ch = {rows, sizeof rows};
  wave_reduce_request rq = {.dtype = WAVE_U32, .op = WAVE_SUM, .input = &ch,
                            .n_input = 1};
  wave_fleet_options fopt = {.piece = 65536};
  wave_fleet_reduce_result res;
  ck_assert_msg(wave_fleet_reduce(f, &rq, &fopt, &res, &err) == 0, "%s",
                err.message);
  ck_assert_uint_eq(res.value.bits[0], (uint32_t)want);
  ck_assert_uint_eq(res.n_failed, 0);
  wave_fleet_reduce_result_free(&res);
  wave_fleet_close(f);
}
END_TEST

/* wavectl ARGS... with env; its exit status, stderr in err. */
static int ta_ctl(const char *env, const char *args, char *err, size_t n)
{
  char cmd[2048], errf[300];
  ta_path(errf, sizeof errf, "ctl.err");
  snprintf(cmd, sizeof cmd, "%s %s/wavectl %s >/dev/null 2>%s",
           env ? env : "", getenv("WAVE_BINARY_DIR"), args, errf);
  int st = system(cmd);
  FILE *f = fopen(errf, "r");
  size_t got = f ? fread(err, 1, n - 1, f) : 0;
  err[got] = '\0';
  if (f)
    fclose(f);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

START_TEST(wavectl_flags)
{
  char args[1500], env[700], e[2000];
  snprintf(args, sizeof args, "--url %s status", g_d.tcp);
  ck_assert_int_ne(ta_ctl("", args, e, sizeof e), 0);
  ck_assert_msg(strstr(e, "AUTH"), "%s", e);
  snprintf(args, sizeof args, "--url %s --token-file %s status", g_d.tcp,
           g_alice);
  ck_assert_msg(ta_ctl("", args, e, sizeof e) == 0, "%s", e);
  snprintf(args, sizeof args, "--url %s --token-file %s --tls-ca %s status",
           g_tls, g_alice, g_ca);
  ck_assert_msg(ta_ctl("", args, e, sizeof e) == 0, "%s", e);
  snprintf(args, sizeof args, "--url %s --token-file %s --tls-ca %s status",
           g_tls, g_alice, g_other);
  ck_assert_int_ne(ta_ctl("", args, e, sizeof e), 0);
  ck_assert_msg(strstr(e, "TLS handshake failed"), "%s", e);
  snprintf(env, sizeof env, "WAVE_TOKEN_FILE=%s WAVE_TLS_CA=%s", g_bob, g_ca);
  snprintf(args, sizeof args, "--url %s status", g_tls);
  ck_assert_msg(ta_ctl(env, args, e, sizeof e) == 0, "%s", e);
  /* --fleet: the same token for every daemon */
  char v[300];
  ta_path(v, sizeof v, "v.txt");
  td_write(v, "3 1 4 1 5\n");
  snprintf(args, sizeof args, "submit reduce --op sum --dtype uint32 "
           "--format text --input %s --fleet %s,%s", v, g_d.tcp, g_tls);
  ck_assert_int_ne(ta_ctl("WAVE_TLS_CA=x", args, e, sizeof e), 0);
  ck_assert_msg(ta_ctl(env, args, e, sizeof e) == 0, "%s", e);
}
END_TEST

/* A token is rotated by rewriting its file and reloading (SIGHUP). */
START_TEST(tokens_reload)
{
  nng_socket t = td_dial(g_d.tcp);
  Wave__V1__Response *r = ta_status(t, 3, "alice-7f3e9c1b2a5d4e6f8091");
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_STATUS);
  wave__v1__response__free_unpacked(r, NULL);
  td_write(g_alice, "alice-rotated-55aa66bb77cc\n");
  kill(g_d.pid, SIGHUP);
  for (int i = 0; i < 2000 && !strstr(td_stderr(&g_d), "reloaded "); i++)
    usleep(10000);  /* a bound on the reload, not a timing check */
  ck_assert_msg(strstr(td_stderr(&g_d), "reloaded "), "%s", td_stderr(&g_d));
  td_expect_error(ta_status(t, 4, "alice-7f3e9c1b2a5d4e6f8091"), WAVE_EAUTH, 4);
  r = ta_status(t, 5, "alice-rotated-55aa66bb77cc");
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_STATUS);
  wave__v1__response__free_unpacked(r, NULL);
  nng_close(t);
}
END_TEST

/* Not started by the fixture: configs the daemon must refuse. */
START_TEST(refuses_open_tcp)
{
  ta_prepare();
  char text[600];
  snprintf(text, sizeof text, "listen: [\"%s\", \"%s\"]\n"
           "packs: {load: []}\n"
           "devices:\n  - {name: cpu0, backend: cpu, threads: 1}\n",
           g_d.ipc, g_d.tcp);
  td_write(g_d.cfg, text);
  const char *args[] = {"--config", g_d.cfg, "--foreground", NULL};
  ck_assert_int_eq(td_spawn(&g_d, args, 1), -1);
  ck_assert(WIFEXITED(g_d.status) && WEXITSTATUS(g_d.status) != 0);
  ck_assert_msg(strstr(td_stderr(&g_d), "listen[1]: ") &&
                strstr(td_stderr(&g_d), "without authentication"), "%s",
                td_stderr(&g_d));
  td_cleanup(&g_d);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("access");
  TCase *t = tcase_create("served");
  tcase_add_checked_fixture(t, ta_setup, ta_teardown);
  tcase_set_timeout(t, 120);
  tcase_add_test(t, tcp_needs_the_token);
  tcase_add_test(t, tcp_wrong_tokens_limited);
  tcase_add_test(t, tls_end_to_end);
  tcase_add_test(t, client_token_files);
  tcase_add_test(t, wavectl_flags);
  tcase_add_test(t, tokens_reload);
  suite_add_tcase(s, t);
  TCase *r = tcase_create("refused");
  tcase_add_test(r, refuses_open_tcp);
  suite_add_tcase(s, r);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
