/* test_fdlimits.c - descriptors, connections that must end, the socket file
 * and the certificate dates, against the real wavedd (issue 22, findings 4,
 * 9 and 14; daemon/wdmain.c, connguard.c, listen.c, tls.c, metrics.c).
 *
 *  - the open-files limit: the daemon raises its soft limit to the hard one
 *    and StatusReply.max_files is the limit /proc/PID/limits shows, also
 *    after the limit is changed under it (prlimit);
 *  - 1,100 idle connections to the metrics port, and 1,100 TLS connections
 *    that send a record header and stop, with the daemon's limit lowered to
 *    256 (prlimit) so the test stays small: a new ipc client still gets its
 *    answer, a lone stalled connection is closed by the daemon, and a TLS
 *    client that finished its handshake keeps its connection;
 *  - a deleted socket file is made again and a new client connects;
 *  - an expired certificate fails --check-config, and one that ends soon is
 *    a warning.
 * Certificates are made with the openssl CLI (an expired one with `openssl
 * ca -startdate/-enddate`).  "Answered" and "closed" are bounded waits, never
 * measured times.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>
#include <nng/supplemental/tls/tls.h>

#include "daemon_harness.h"

#define FL_FLOOD 1100
#define FL_LIMIT 256        /* the daemon's RLIMIT_NOFILE in the floods */
#define FL_WAIT_TRIES 300   /* x 100 ms */

static void tfdl_sleep_ms(int ms)
{
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static int tfdl_sh(const char *dir, const char *script)
{
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "cd '%s' && { %s ; } >openssl.log 2>&1", dir,
           script);
  return system(cmd);
}

/* cert.pem / key.pem in dir, valid for days (days < 0: expired in 2020). */
static void tfdl_cert(const char *dir, int days)
{
  char s[2048];
  if (days > 0)
    snprintf(s, sizeof s,
             "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 "
             "-nodes -keyout key.pem -out cert.pem -days %d "
             "-subj /CN=localhost", days);
  else
    snprintf(s, sizeof s,
             "rm -rf ca && mkdir ca && touch ca/index.txt && echo 01 > "
             "ca/serial && printf '[ca]\\ndefault_ca=d\\n[d]\\ndatabase=ca/"
             "index.txt\\nnew_certs_dir=ca\\nserial=ca/serial\\ndefault_md="
             "sha256\\npolicy=p\\n[p]\\ncommonName=supplied\\n' > ca.cnf && "
             "openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
             "-keyout key.pem -out req.csr -subj /CN=localhost && "
             "openssl ca -batch -config ca.cnf -selfsign -keyfile key.pem "
             "-in req.csr -out cert.pem -startdate 20200101000000Z "
             "-enddate 20200102000000Z");
  ck_assert_msg(tfdl_sh(dir, s) == 0, "openssl could not make the certificate");
}

/* d's config, with extra (top-level YAML) and more limits. */
static void tfdl_config(td_daemon *d, const char *listen_more,
                      const char *limits, const char *extra)
{
  const char *src = getenv("WAVE_SOURCE_DIR");
  char text[4096];
  snprintf(text, sizeof text,
           "listen: [\"%s\"%s]\n"
           "ipc_mode: 0600\n"
           "log_level: debug\n"
           "limits:\n  contexts: 16\n%s"
           "%s"
           "packs:\n  dir: %s/config/packs\n  load: [closed, small]\n"
           "devices:\n  - {name: cpu0, backend: cpu, threads: 1}\n"
           "auth: none\n",
           d->ipc, listen_more, limits, extra, src ? src : ".");
  td_write(d->cfg, text);
}

/* A REQ socket on url that waits for its answer, not for the dial. */
static nng_socket tfdl_dial(const char *url, nng_tls_config *tls)
{
  nng_socket s;
  nng_dialer dl;
  ck_assert_int_eq(nng_req0_open(&s), 0);
  ck_assert_int_eq(nng_socket_set_ms(s, NNG_OPT_RECVTIMEO, 30000), 0);
  ck_assert_int_eq(nng_dialer_create(&dl, s, url), 0);
  if (tls != NULL)
    ck_assert_int_eq(nng_dialer_set_ptr(dl, NNG_OPT_TLS_CONFIG, tls), 0);
  ck_assert_int_eq(nng_dialer_start(dl, NNG_FLAG_NONBLOCK), 0);
  return s;
}

/* A new ipc client gets its StatusReply. */
static uint64_t tfdl_status_ipc(const td_daemon *d)
{
  nng_socket s = tfdl_dial(d->ipc, NULL);
  Wave__V1__Response *r = td_status(s, 9);
  uint64_t mf = r->status->max_files;
  wave__v1__response__free_unpacked(r, NULL);
  nng_close(s);
  return mf;
}

/* The soft and hard "Max open files" of pid. */
static void tfdl_proc_limits(pid_t pid, uint64_t *soft, uint64_t *hard)
{
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%ld/limits", (long)pid);
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  int found = 0;
  while (fgets(line, sizeof line, f) != NULL) {
    unsigned long long a, b;
    if (sscanf(line, "Max open files %llu %llu", &a, &b) == 2) {
      *soft = a;
      *hard = b;
      found = 1;
    }
  }
  fclose(f);
  ck_assert_msg(found, "no Max open files line in %s", path);
}

static void tfdl_limit_daemon(pid_t pid, rlim_t n)
{
  struct rlimit rl = {n, n};
  ck_assert_msg(prlimit(pid, RLIMIT_NOFILE, &rl, NULL) == 0, "prlimit: %s",
                strerror(errno));
}

static int tfdl_connect(int port)
{
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  ck_assert_int_ge(fd, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port),
                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  int rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
  ck_assert_msg(rc == 0 || errno == EINPROGRESS, "connect: %s",
                strerror(errno));
  return fd;
}

/* A TLS record header (a handshake record of 512 bytes), then nothing. */
static const uint8_t tfdl_record[5] = {0x16, 0x03, 0x01, 0x02, 0x00};

/* n connections to port; with stall, each sends tfdl_record once connected.
 * Returns how many sent it. */
static int tfdl_flood(int *fds, int n, int port, int stall)
{
  for (int i = 0; i < n; i++)
    fds[i] = tfdl_connect(port);
  if (!stall)
    return 0;
  int sent = 0;
  char *done = calloc((size_t)n, 1);
  struct pollfd *p = calloc((size_t)n, sizeof *p);
  for (int round = 0; round < 20 && sent < n; round++) {
    for (int i = 0; i < n; i++)
      p[i] = (struct pollfd){.fd = done[i] ? -1 : fds[i], .events = POLLOUT};
    if (poll(p, (nfds_t)n, 100) <= 0)
      continue;
    for (int i = 0; i < n; i++)
      if (!done[i] && (p[i].revents & POLLOUT) &&
          write(fds[i], tfdl_record, sizeof tfdl_record) == sizeof tfdl_record) {
        done[i] = 1;
        sent++;
      }
  }
  free(done);
  free(p);
  return sent;
}

/* 1 once the daemon has ended fd (EOF or reset), within the bounded wait. */
static int tfdl_closed_by_daemon(int fd)
{
  for (int i = 0; i < FL_WAIT_TRIES; i++) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 100) == 1) {
      char b[4096];
      ssize_t r = read(fd, b, sizeof b);
      if (r == 0 || (r < 0 && errno == ECONNRESET))
        return 1;
    }
  }
  return 0;
}

/* ---- the open-files limit ---------------------------------------------- */

START_TEST(files_limit_raised_and_reported)
{
  struct rlimit mine, low;
  ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &mine), 0);
  ck_assert_msg(mine.rlim_max > 600, "the test needs a hard limit over 600");
  low = (struct rlimit){512, mine.rlim_max};
  ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);  /* the daemon's too */
  td_daemon d;
  td_prepare(&d, NULL);
  tfdl_config(&d, "", "", "");
  int started = td_start(&d);
  ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &mine), 0);
  ck_assert_msg(started == 0, "wavedd did not start: %s", td_stderr(&d));
  uint64_t soft, hard;
  tfdl_proc_limits(d.pid, &soft, &hard);
  ck_assert_uint_eq(soft, hard);  /* raised from the 512 it inherited */
  ck_assert_uint_eq(tfdl_status_ipc(&d), soft);
  ck_assert_msg(strstr(td_stderr(&d), "soft limit raised from 512") != NULL,
                "%s", td_stderr(&d));
  /* wavectl status prints it */
  char ctl[600], cmd[1200], out[8192], want[64];
  snprintf(ctl, sizeof ctl, "%s", td_wavedd());
  char *slash = strrchr(ctl, '/');
  snprintf(slash + 1, sizeof ctl - (size_t)(slash + 1 - ctl), "wavectl");
  snprintf(cmd, sizeof cmd, "'%s' --url '%s' status 2>&1", ctl, d.ipc);
  FILE *f = popen(cmd, "r");
  ck_assert_ptr_nonnull(f);
  size_t got = fread(out, 1, sizeof out - 1, f);
  out[got] = '\0';
  ck_assert_int_eq(pclose(f), 0);
  snprintf(want, sizeof want, "open files limit %llu\n",
           (unsigned long long)soft);
  ck_assert_msg(strstr(out, want) != NULL, "%s", out);
  /* the figure is the limit now, not the one at start */
  struct rlimit rl = {1000, hard};
  ck_assert_int_eq(prlimit(d.pid, RLIMIT_NOFILE, &rl, NULL), 0);
  tfdl_proc_limits(d.pid, &soft, &hard);
  ck_assert_uint_eq(soft, 1000);
  ck_assert_uint_eq(tfdl_status_ipc(&d), 1000);
  td_stop_ok(&d);
}
END_TEST

/* ---- connections that must end ------------------------------------------ */

START_TEST(metrics_idle_flood)
{
  td_daemon d;
  td_prepare(&d, NULL);
  int mport = td_free_port();
  char extra[128];
  snprintf(extra, sizeof extra, "metrics: http://127.0.0.1:%d\n", mport);
  tfdl_config(&d, "", "  metrics_max_age_ms: 1000\n  metrics_connections: 16\n",
            extra);
  ck_assert_msg(td_start(&d) == 0, "wavedd did not start: %s", td_stderr(&d));
  tfdl_limit_daemon(d.pid, FL_LIMIT);
  int *fds = calloc(FL_FLOOD, sizeof *fds);
  tfdl_flood(fds, FL_FLOOD, mport, 0);
  /* descriptors would be gone for good: a new ipc client is answered */
  ck_assert_uint_eq(tfdl_status_ipc(&d), FL_LIMIT);
  for (int i = 0; i < FL_FLOOD; i++)
    close(fds[i]);
  free(fds);
  /* one idle connection under the cap is closed too (its age) */
  int lone = tfdl_connect(mport);
  ck_assert_msg(tfdl_closed_by_daemon(lone), "an idle metrics connection "
                "stayed open");
  close(lone);
  /* and a scrape still works, with the limit on the page */
  int fd = tfdl_connect(mport);
  struct pollfd p = {.fd = fd, .events = POLLOUT};
  ck_assert_int_eq(poll(&p, 1, 10000), 1);
  const char *get = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
  ck_assert_int_eq(write(fd, get, strlen(get)), (ssize_t)strlen(get));
  char page[1 << 16];
  size_t got = 0;
  for (int i = 0; i < FL_WAIT_TRIES && got < sizeof page - 1; i++) {
    struct pollfd q = {.fd = fd, .events = POLLIN};
    if (poll(&q, 1, 100) != 1)
      continue;
    ssize_t r = read(fd, page + got, sizeof page - 1 - got);
    if (r <= 0)
      break;  /* Connection: close: the page ends with the connection */
    got += (size_t)r;
  }
  page[got] = '\0';
  char want[64];
  snprintf(want, sizeof want, "wavedd_max_files %d\n", FL_LIMIT);
  ck_assert_msg(strstr(page, want) != NULL, "%s", page);
  close(fd);
  td_stop_ok(&d);
}
END_TEST

static atomic_int tfdl_pipes_gone;
static void tfdl_pipe_gone(nng_pipe p, nng_pipe_ev ev, void *arg)
{
  (void)p, (void)ev, (void)arg;
  atomic_fetch_add(&tfdl_pipes_gone, 1);
}

START_TEST(tls_stalled_handshakes)
{
  td_daemon d;
  td_prepare(&d, NULL);
  tfdl_cert(d.dir, 365);
  int tport = td_free_port();
  char more[96], extra[512];
  snprintf(more, sizeof more, ", \"tls+tcp://127.0.0.1:%d\"", tport);
  snprintf(extra, sizeof extra, "tls:\n  cert_file: %s/cert.pem\n"
           "  key_file: %s/key.pem\n", d.dir, d.dir);
  tfdl_config(&d, more, "  tls_handshake_ms: 1500\n  max_tls_handshakes: 64\n",
            extra);
  ck_assert_msg(td_start(&d) == 0, "wavedd did not start: %s", td_stderr(&d));
  /* a client that finished its handshake, idle past the deadline after */
  char url[96], ca[300];
  snprintf(url, sizeof url, "tls+tcp://localhost:%d", tport);
  snprintf(ca, sizeof ca, "%s/cert.pem", d.dir);
  nng_tls_config *tc;
  ck_assert_int_eq(nng_tls_config_alloc(&tc, NNG_TLS_MODE_CLIENT), 0);
  ck_assert_int_eq(nng_tls_config_ca_file(tc, ca), 0);
  ck_assert_int_eq(nng_tls_config_server_name(tc, "localhost"), 0);
  nng_socket good = tfdl_dial(url, tc);
  ck_assert_int_eq(nng_pipe_notify(good, NNG_PIPE_EV_REM_POST, tfdl_pipe_gone,
                                   NULL), 0);
  Wave__V1__Response *r = td_status(good, 1);
  wave__v1__response__free_unpacked(r, NULL);

  tfdl_limit_daemon(d.pid, FL_LIMIT);
  int *fds = calloc(FL_FLOOD, sizeof *fds);
  int sent = tfdl_flood(fds, FL_FLOOD, tport, 1);
  ck_assert_int_gt(sent, 0);
  ck_assert_uint_eq(tfdl_status_ipc(&d), FL_LIMIT);
  for (int i = 0; i < FL_FLOOD; i++)
    close(fds[i]);
  free(fds);
  /* one stalled handshake, under the cap: the deadline ends it */
  int lone = tfdl_connect(tport);
  struct pollfd p = {.fd = lone, .events = POLLOUT};
  ck_assert_int_eq(poll(&p, 1, 10000), 1);
  ck_assert_int_eq(write(lone, tfdl_record, sizeof tfdl_record), 5);
  ck_assert_msg(tfdl_closed_by_daemon(lone), "a stalled TLS handshake stayed "
                "open");
  close(lone);
  /* the finished one kept its connection through all of it */
  r = td_status(good, 2);
  wave__v1__response__free_unpacked(r, NULL);
  ck_assert_int_eq(atomic_load(&tfdl_pipes_gone), 0);
  ck_assert_msg(strstr(td_stderr(&d), "did not finish their handshake") !=
                NULL, "%s", td_stderr(&d));
  nng_close(good);
  nng_tls_config_free(tc);
  td_stop_ok(&d);
}
END_TEST

/* ---- the socket file --------------------------------------------------- */

START_TEST(deleted_socket_comes_back)
{
  td_daemon d;
  td_prepare(&d, NULL);
  tfdl_config(&d, "", "", "");
  ck_assert_msg(td_start(&d) == 0, "wavedd did not start: %s", td_stderr(&d));
  const char *path = d.ipc + strlen("ipc://");
  nng_socket kept = tfdl_dial(d.ipc, NULL);
  Wave__V1__Response *r = td_status(kept, 1);
  wave__v1__response__free_unpacked(r, NULL);
  ck_assert_int_eq(unlink(path), 0);
  int back = 0;
  for (int i = 0; i < FL_WAIT_TRIES && !back; i++) {
    back = access(path, F_OK) == 0;
    if (!back)
      tfdl_sleep_ms(100);
  }
  ck_assert_msg(back, "the socket file was not made again: %s",
                td_stderr(&d));
  ck_assert_msg(strstr(td_stderr(&d), "the socket file was removed") != NULL,
                "%s", td_stderr(&d));
  tfdl_status_ipc(&d);  /* a new client connects */
  r = td_status(kept, 2);  /* and the old one still works */
  wave__v1__response__free_unpacked(r, NULL);
  nng_close(kept);
  td_stop_ok(&d);
}
END_TEST

/* ---- certificate dates ------------------------------------------------- */

/* wavedd --check-config on d's config: its exit status and stderr. */
static int tfdl_check(const td_daemon *d, char *out, size_t n)
{
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "'%s' --check-config --config '%s' 2>&1",
           td_wavedd(), d->cfg);
  FILE *f = popen(cmd, "r");
  ck_assert_ptr_nonnull(f);
  size_t got = fread(out, 1, n - 1, f);
  out[got] = '\0';
  int st = pclose(f);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

START_TEST(certificate_dates)
{
  td_daemon d;
  td_prepare(&d, NULL);
  int tport = td_free_port();
  char more[96], extra[512], out[4096];
  snprintf(more, sizeof more, ", \"tls+tcp://127.0.0.1:%d\"", tport);
  snprintf(extra, sizeof extra, "tls:\n  cert_file: %s/cert.pem\n"
           "  key_file: %s/key.pem\n", d.dir, d.dir);
  tfdl_config(&d, more, "", extra);
  /* expired: --check-config fails and says why */
  tfdl_cert(d.dir, -1);
  ck_assert_int_eq(tfdl_check(&d, out, sizeof out), 2);
  ck_assert_msg(strstr(out, "expired on 2020-01-02") != NULL, "%s", out);
  /* ... and the daemon serves it with an error in its log */
  ck_assert_msg(td_start(&d) == 0, "wavedd did not start: %s", td_stderr(&d));
  ck_assert_msg(strstr(td_stderr(&d), "expired on 2020-01-02") != NULL, "%s",
                td_stderr(&d));
  td_stop_ok(&d);
  /* five days left: valid, with a warning */
  td_prepare(&d, NULL);
  snprintf(extra, sizeof extra, "tls:\n  cert_file: %s/cert.pem\n"
           "  key_file: %s/key.pem\n", d.dir, d.dir);
  tfdl_config(&d, more, "", extra);
  tfdl_cert(d.dir, 5);
  ck_assert_int_eq(tfdl_check(&d, out, sizeof out), 0);
  ck_assert_msg(strstr(out, "warning") && strstr(out, "expires on"), "%s",
                out);
  /* a year left: nothing to say */
  tfdl_cert(d.dir, 365);
  ck_assert_int_eq(tfdl_check(&d, out, sizeof out), 0);
  ck_assert_msg(strstr(out, "warning") == NULL, "%s", out);
  td_cleanup(&d);
}
END_TEST

static Suite *tfdl_suite(void)
{
  Suite *s = suite_create("fdlimits");
  TCase *t = tcase_create("fdlimits");
  tcase_set_timeout(t, 300);
  tcase_add_test(t, files_limit_raised_and_reported);
  tcase_add_test(t, metrics_idle_flood);
  tcase_add_test(t, tls_stalled_handshakes);
  tcase_add_test(t, deleted_socket_comes_back);
  tcase_add_test(t, certificate_dates);
  suite_add_tcase(s, t);
  return s;
}

int main(void)
{
  signal(SIGPIPE, SIG_IGN);
  /* the floods hold FL_FLOOD descriptors in this process: take the soft
   * limit up to the hard one, as wavedd does (a user's session often
   * starts at 1024 while root's here is higher) */
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  SRunner *r = srunner_create(tfdl_suite());
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
