/* test_probes.c - the HTTP probes on the metrics listener (daemon/
 * metrics.c): /livez and /readyz through a wavedd-test's life.
 *
 * - Starting: the fake backend holds the pack's preparation (hold_prepare,
 *   workers/fake/fake.c), so the daemon listens but is not ready: /readyz
 *   answers 503 with the reason, /livez 200, the page says wavedd_ready 0.
 *   Let go, the daemon logs "ready:" right after READY=1's state move, and
 *   /readyz must answer 200 at the first try after that line: the probe
 *   is told of the move before READY=1 goes out, no tick involved.
 * - Stopping: a reduction held on the device keeps a SIGTERM'd daemon in
 *   STOPPING; /readyz answers 503 "stopping", /livez still 200.
 * - Faults: two fake devices that fault after one step each.  One
 *   faulted: still ready.  Both: 503 "every device is faulted".  The
 *   page (rendered after the probe's state at each tick) is awaited first,
 *   so no sleep decides anything.
 * - Connections per listener (issue 36), on the same daemon: it listens on
 *   ipc and on tcp (loopback, auth: none); with k connections open on the
 *   one and m on the other, wavedd_connections{listener} and the status's
 *   listen_connections say k and m per URL, and 0 on tcp once they close.
 */
#include <check.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <nng/nng.h>

#include "daemon_harness.h"
#include "wave/error.h"

static void tpr_nap(void)
{
  struct timespec ts = {0, 20 * 1000 * 1000};
  nanosleep(&ts, NULL);
}

/* GET base+path: the status; the body into a static buffer (*body). */
static unsigned tpr_get(const char *base, const char *path, const char **body)
{
  char url[200];
  snprintf(url, sizeof url, "%s%s", base, path);
  return td_http_get(url, body, NULL);
}

static void tpr_expect(const char *base, const char *path, unsigned status,
                      const char *body)
{
  const char *got;
  unsigned st = tpr_get(base, path, &got);
  ck_assert_msg(st == status && strcmp(got, body) == 0,
                "%s: %u '%s', not %u '%s'", path, st, got, status, body);
}

/* Until the page holds line (rendered once a second). */
static void tpr_wait_page(const char *base, const char *line)
{
  const char *page = "";
  for (int i = 0; i < 1500; i++) {
    tpr_get(base, "/metrics", &page);
    if (strstr(page, line) != NULL)
      return;
    tpr_nap();
  }
  /* the page may be longer than check's message: its end, at most */
  size_t n = strlen(page);
  ck_abort_msg("no '%s' on the page; it ends:\n%s", line,
               page + (n > 2000 ? n - 2000 : 0));
}

static void tpr_wait_log(td_daemon *d, const char *needle)
{
  for (int i = 0; i < 1500; i++) {
    if (strstr(td_stderr(d), needle) != NULL)
      return;
    tpr_nap();
  }
  ck_abort_msg("no '%s' in the log:\n%s", needle, td_stderr(d));
}

/* A config: metrics on a free port (its base URL into base), the closed
 * pack prepared at start-up, and the device lines; tcp (not NULL): a
 * second listener, without tokens. */
static void tpr_config(td_daemon *d, char *base, size_t n, const char *devs,
                      const char *tcp)
{
  char text[2048], more[200] = "";
  int port = td_free_port();
  snprintf(base, n, "http://127.0.0.1:%d", port);
  if (tcp != NULL)
    snprintf(more, sizeof more, ", \"%s\"]\nauth: none\n", tcp);
  snprintf(text, sizeof text, "listen: [\"%s\"%slog_level: info\n"
           "metrics: %s\n"
           "packs: {dir: %s/config/packs, load: [closed], prepare: startup}\n"
           "devices:\n%s", d->ipc, tcp != NULL ? more : "]\n", base,
           getenv("WAVE_SOURCE_DIR"), devs);
  td_write(d->cfg, text);
  d->fake = 1;
}

static void tpr_touch(const char *dir, const char *name, int on)
{
  char path[300];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  if (on)
    td_write(path, "held by test_probes\n");
  else
    ck_assert_int_eq(unlink(path), 0);
}

typedef struct tpr_call {
  const char *ipc;
  Wave__V1__Response *r;
} tpr_call;

static void *tpr_reduce(void *arg)
{
  tpr_call *c = arg;
  nng_socket s = td_dial(c->ipc);
  td_chunk in = {(uint32_t[4]){1, 2, 3, 4}, 16};
  c->r = td_reduce(s, 5, WAVE__V1__DTYPE__U32, WAVE__V1__OP__SUM, &in, 1,
                   NULL, 0, NULL);
  nng_close(s);
  return NULL;
}

START_TEST(probes_follow_start_and_stop)
{
  td_daemon d;
  td_prepare(&d, NULL);
  char hold[200], base[64], devs[400];
  snprintf(hold, sizeof hold, "%s/hold", d.dir);
  ck_assert_int_eq(mkdir(hold, 0700), 0);
  snprintf(devs, sizeof devs, "  - {name: fk0, backend: fake, threads: 1, "
           "device: \"hold_prepare=%s\"}\n", hold);
  tpr_config(&d, base, sizeof base, devs, NULL);
  tpr_touch(hold, "closed", 1);
  ck_assert_int_eq(td_start_listening(&d), 0);

  tpr_expect(base, "/livez", 200, "ok\n");
  tpr_expect(base, "/readyz", 503,
            "not ready: starting: 1 pack preparation(s) not back yet\n");
  tpr_wait_page(base, "\nwavedd_ready 0\n");
  ck_assert_ptr_null(strstr(td_stderr(&d), "ready: every device"));

  tpr_touch(hold, "closed", 0);
  tpr_wait_log(&d, "ready: every device has prepared its packs");
  tpr_expect(base, "/readyz", 200, "ready\n");
  tpr_wait_page(base, "\nwavedd_ready 1\n");

  /* a reduction held on fk0 keeps the stop in STOPPING */
  tpr_touch(hold, ".reduce", 1);
  tpr_call c = {d.ipc, NULL};
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, tpr_reduce, &c), 0);
  tpr_wait_log(&d, "fake fk0: reduction held");
  kill(d.pid, SIGTERM);
  tpr_wait_log(&d, "stopping: no new work");
  tpr_expect(base, "/readyz", 503, "not ready: stopping\n");
  tpr_expect(base, "/livez", 200, "ok\n");
  tpr_touch(hold, ".reduce", 0);
  pthread_join(t, NULL);
  ck_assert_int_eq(c.r->body_case, WAVE__V1__RESPONSE__BODY_REDUCE);
  wave__v1__response__free_unpacked(c.r, NULL);
  td_stop_ok(&d);
}
END_TEST

/* Until the status (asked on s) says ipc and tcp hold these connections. */
static void tpr_wait_conns(nng_socket s, const char *ipc, const char *tcp,
                          uint64_t n_ipc, uint64_t n_tcp)
{
  uint64_t got[2] = {(uint64_t)-1, (uint64_t)-1};
  for (int i = 0; i < 1500; i++) {
    Wave__V1__Response *r = td_status(s, 9);
    ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_STATUS);
    const Wave__V1__StatusReply *st = r->status;
    ck_assert_uint_eq(st->n_listen, 2);
    ck_assert_uint_eq(st->n_listen_connections, 2);
    ck_assert_str_eq(st->listen[0], ipc);
    ck_assert_str_eq(st->listen[1], tcp);
    got[0] = st->listen_connections[0];
    got[1] = st->listen_connections[1];
    wave__v1__response__free_unpacked(r, NULL);
    if (got[0] == n_ipc && got[1] == n_tcp)
      return;
    tpr_nap();
  }
  ck_abort_msg("status: %" PRIu64 " connections on ipc, %" PRIu64 " on tcp, "
               "not %" PRIu64 " and %" PRIu64, got[0], got[1], n_ipc, n_tcp);
}

/* Reduce on dev; expect ok or the device's fault. */
static void tpr_step(nng_socket s, const char *dev, int fault)
{
  td_chunk in = {(uint32_t[2]){1, 2}, 8};
  Wave__V1__Response *r = td_reduce(s, 7, WAVE__V1__DTYPE__U32,
                                    WAVE__V1__OP__SUM, &in, 1, NULL, 0, dev);
  if (fault) {
    td_expect_error(r, WAVE_EDEVFAULT, 7);
    return;
  }
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_REDUCE);
  wave__v1__response__free_unpacked(r, NULL);
}

START_TEST(readyz_fails_only_when_every_device_faulted)
{
  td_daemon d;
  td_prepare(&d, NULL);
  char base[64], tcp[64], line[700];
  snprintf(tcp, sizeof tcp, "tcp://127.0.0.1:%d", td_free_port());
  tpr_config(&d, base, sizeof base,
            "  - {name: fk0, backend: fake, threads: 1, "
            "device: \"fault_after=1\"}\n"
            "  - {name: fk1, backend: fake, threads: 1, "
            "device: \"fault_after=1\"}\n", tcp);
  ck_assert_int_eq(td_start(&d), 0);
  tpr_expect(base, "/readyz", 200, "ready\n");
  nng_socket s = td_dial(d.ipc);

  /* connections per listener: s and one more on ipc, 3 on tcp */
  enum { TP_IPC = 1, TP_TCP = 3 };
  nng_socket more[TP_IPC + TP_TCP];
  for (int i = 0; i < TP_IPC + TP_TCP; i++)
    more[i] = td_dial(i < TP_IPC ? d.ipc : tcp);
  tpr_wait_conns(s, d.ipc, tcp, 1 + TP_IPC, TP_TCP);
  snprintf(line, sizeof line, "\nwavedd_connections{listener=\"%s\"} %d\n"
           "wavedd_connections{listener=\"%s\"} %d\n", d.ipc, 1 + TP_IPC,
           tcp, TP_TCP);
  tpr_wait_page(base, line);
  for (int i = TP_IPC; i < TP_IPC + TP_TCP; i++)
    nng_close(more[i]);
  tpr_wait_conns(s, d.ipc, tcp, 1 + TP_IPC, 0);
  snprintf(line, sizeof line, "\nwavedd_connections{listener=\"%s\"} %d\n"
           "wavedd_connections{listener=\"%s\"} 0\n", d.ipc, 1 + TP_IPC,
           tcp);
  tpr_wait_page(base, line);
  for (int i = 0; i < TP_IPC; i++)
    nng_close(more[i]);
  tpr_step(s, "fk0", 0);
  tpr_step(s, "fk0", 1);
  tpr_wait_page(base, "wavedd_device_faulted{device=\"fk0\"} 1\n");
  tpr_expect(base, "/readyz", 200, "ready\n");
  tpr_step(s, "fk1", 0);
  tpr_step(s, "fk1", 1);
  tpr_wait_page(base, "wavedd_device_faulted{device=\"fk1\"} 1\n");
  tpr_expect(base, "/readyz", 503,
            "not ready: every device is faulted (2)\n");
  tpr_wait_page(base, "\nwavedd_ready 0\n");
  tpr_expect(base, "/livez", 200, "ok\n");
  nng_close(s);
  td_stop_ok(&d);
}
END_TEST

/* READY=1 goes out only once the probes answer: a daemon with nothing
 * to prepare got ready while its metrics page was still starting, and a
 * GET right after READY=1 was refused (test_health's first page, once). */
START_TEST(ready_only_once_the_probes_answer)
{
  for (int round = 0; round < 10; round++) {
    td_daemon d;
    td_prepare(&d, NULL);
    char base[64], text[1024];
    snprintf(base, sizeof base, "http://127.0.0.1:%d", td_free_port());
    snprintf(text, sizeof text, "listen: [\"%s\"]\nlog_level: info\n"
             "metrics: %s\npacks: {load: []}\ndevices:\n"
             "  - {name: fk0, backend: fake, threads: 1}\n", d.ipc, base);
    td_write(d.cfg, text);
    d.fake = 1;
    ck_assert_msg(td_start(&d) == 0, "%s", td_stderr(&d));
    tpr_expect(base, "/readyz", 200, "ready\n");
    td_stop_ok(&d);
  }
}
END_TEST

int main(void)
{
  Suite *s = suite_create("probes");
  TCase *tc = tcase_create("probes");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, probes_follow_start_and_stop);
  tcase_add_test(tc, readyz_fails_only_when_every_device_faulted);
  tcase_add_test(tc, ready_only_once_the_probes_answer);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
