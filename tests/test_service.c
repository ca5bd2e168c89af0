/* test_service.c - wavedd as a service (daemon/reload.c, metrics.c,
 * stats.c): SIGHUP reloads all or nothing, signals never leave a stale
 * socket, the Prometheus page counts what was served (jobs, the duration
 * histogram, busy seconds, refusals, process_*), JobsRequest lists the
 * hash jobs, a cancel is counted apart from failures.  The real daemon (daemon_harness.h), spoken to with raw
 * nng + protobuf-c, its page fetched with nng's HTTP client.
 *
 * Reloads are awaited on the daemon's own log line ("reloaded" or "reload
 * failed", counted), never on a sleep; a scrape is repeated until the page
 * (rendered once a second) shows the count the test waits for, with a
 * bound on tries that only a daemon that never counts would reach.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nng/nng.h>

#include "daemon_harness.h"
#include "wave/error.h"

static void tsv_nap(void)
{
  struct timespec ts = {0, 50 * 1000 * 1000};
  nanosleep(&ts, NULL);
}

static size_t tsv_count(const char *hay, const char *needle)
{
  size_t n = 0;
  for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
    n++;
  return n;
}

/* Wait until the log holds `want` lines containing needle. */
static void tsv_wait_log(td_daemon *d, const char *needle, size_t want)
{
  for (int i = 0; i < 1200; i++) {
    if (tsv_count(td_stderr(d), needle) >= want)
      return;
    tsv_nap();
  }
  ck_abort_msg("no %zu x '%s' in the log:\n%s", want, needle, td_stderr(d));
}

/* The config file with `from` replaced by `to`. */
static void tsv_edit(td_daemon *d, const char *from, const char *to)
{
  FILE *f = fopen(d->cfg, "r");
  ck_assert_ptr_nonnull(f);
  static char text[8192], out[8192];
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  char *at = strstr(text, from);
  ck_assert_msg(at != NULL, "'%s' not in the config", from);
  snprintf(out, sizeof out, "%.*s%s%s", (int)(at - text), text, to,
           at + strlen(from));
  td_write(d->cfg, out);
}

static void tsv_reduce_rows(nng_socket s, uint32_t rows, int expect_err)
{
  static uint32_t v[64];
  for (uint32_t i = 0; i < rows; i++)
    v[i] = i + 1;
  td_chunk in = {v, rows * 4u};
  Wave__V1__Response *r = td_reduce(s, 9, WAVE__V1__DTYPE__U32,
                                    WAVE__V1__OP__SUM, &in, 1, NULL, 0, NULL);
  if (expect_err) {
    td_expect_error(r, expect_err, 9);
    return;
  }
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_REDUCE);
  ck_assert_uint_eq(r->reduce->bits[0], rows * (rows + 1) / 2);
  wave__v1__response__free_unpacked(r, NULL);
}

START_TEST(reload_good_and_bad)
{
  td_daemon d;
  td_prepare(&d, NULL);
  ck_assert_int_eq(td_start(&d), 0);
  nng_socket s = td_dial(d.ipc);
  tsv_reduce_rows(s, 16, 0);

  /* a broken file: reported with file:line:column, the old one serves */
  tsv_edit(&d, "log_level: info\n", "log_level: info\nlimits: [\n");
  kill(d.pid, SIGHUP);
  tsv_wait_log(&d, "reload failed", 1);
  char where[300];
  snprintf(where, sizeof where, "%s:6:20: YAML syntax", d.cfg);
  ck_assert_msg(strstr(td_stderr(&d), where) != NULL, "no '%s' in:\n%s",
                where, td_stderr(&d));
  tsv_reduce_rows(s, 16, 0);
  tsv_edit(&d, "log_level: info\nlimits: [\n", "log_level: info\n");

  /* a value out of bounds: the key named, nothing applied */
  tsv_edit(&d, "max_job_rows: 8192", "max_job_rows: 0");
  kill(d.pid, SIGHUP);
  tsv_wait_log(&d, "reload failed", 2);
  ck_assert_ptr_nonnull(strstr(td_stderr(&d), "limits.max_job_rows"));
  tsv_reduce_rows(s, 16, 0);

  /* a good file: the new limit is what the next request meets */
  tsv_edit(&d, "max_job_rows: 0", "max_job_rows: 8");
  kill(d.pid, SIGHUP);
  tsv_wait_log(&d, "reloaded ", 1);
  tsv_reduce_rows(s, 8, 0);
  tsv_reduce_rows(s, 16, WAVE_EJOBSIZE);

  /* what a reload cannot change is refused whole: the limit stays 8 */
  tsv_edit(&d, "max_job_rows: 8", "max_job_rows: 100");
  tsv_edit(&d, "queue_depth: 8", "queue_depth: 9");
  kill(d.pid, SIGHUP);
  tsv_wait_log(&d, "reload failed", 3);
  ck_assert_ptr_nonnull(strstr(td_stderr(&d), "devices[1] (cpu1) changed"));
  tsv_reduce_rows(s, 16, WAVE_EJOBSIZE);

  /* SIGHUP after SIGHUP never kills; SIGTERM then exits 0, socket gone */
  tsv_edit(&d, "queue_depth: 9", "queue_depth: 8");
  kill(d.pid, SIGHUP);
  tsv_wait_log(&d, "reloaded ", 2);
  tsv_reduce_rows(s, 16, 0);

  /* the reload column (config.c): a start-only key is taken and the log
   * says when it applies; a refused one fails the reload, naming it */
  tsv_edit(&d, "max_job_rows: 100", "max_job_rows: 100\n  decode_threads: 3");
  kill(d.pid, SIGHUP);
  tsv_wait_log(&d, "reloaded ", 3);
  ck_assert_ptr_nonnull(strstr(td_stderr(&d), "limits.decode_threads "
                               "changed; the decode threads are started "
                               "once, so the new value takes effect when "
                               "wavedd restarts"));
  tsv_edit(&d, "contexts: 16", "contexts: 17");
  kill(d.pid, SIGHUP);
  tsv_wait_log(&d, "reload failed", 4);
  ck_assert_ptr_nonnull(strstr(td_stderr(&d), "limits.contexts changed; a "
                               "reload cannot resize the socket (restart "
                               "wavedd)"));
  tsv_reduce_rows(s, 16, 0);
  nng_close(s);
  ck_assert_int_eq(td_stop(&d), 0);
  struct stat st;
  ck_assert_int_ne(stat(d.ipc + 6, &st), 0);
  td_cleanup(&d);
}
END_TEST

START_TEST(sigquit_and_usr_signals_stop_cleanly)
{
  td_daemon d;
  td_prepare(&d, NULL);
  ck_assert_int_eq(td_start(&d), 0);
  kill(d.pid, SIGUSR1);  /* ignored */
  kill(d.pid, SIGUSR2);
  kill(d.pid, SIGPIPE);
  nng_socket s = td_dial(d.ipc);
  td_good(s);
  nng_close(s);
  kill(d.pid, SIGQUIT);
  waitpid(d.pid, &d.status, 0);
  d.pid = 0;
  ck_assert_msg(WIFEXITED(d.status) && WEXITSTATUS(d.status) == 0,
                "status %d:\n%s", d.status, td_stderr(&d));
  struct stat st;
  ck_assert_int_ne(stat(d.ipc + 6, &st), 0);
  /* SIGKILL cannot be caught: the file stays, and the next start takes
   * the path back (nothing accepts there) */
  ck_assert_int_eq(td_start(&d), 0);
  kill(d.pid, SIGKILL);
  waitpid(d.pid, &d.status, 0);
  d.pid = 0;
  ck_assert_int_eq(stat(d.ipc + 6, &st), 0);
  ck_assert_int_eq(td_start(&d), 0);
  s = td_dial(d.ipc);
  td_good(s);
  nng_close(s);
  ck_assert_int_eq(td_stop(&d), 0);
  td_cleanup(&d);
}
END_TEST

/* GET url: 200 and the Prometheus text type; the body (static buffer). */
static const char *tsv_get(const char *url)
{
  const char *body, *ct;
  ck_assert_uint_eq(td_http_get(url, &body, &ct), 200);
  ck_assert_ptr_nonnull(strstr(ct, "text/plain; version=0.0.4"));
  return body;
}

static void tsv_wait_page(const char *url, const char *line)
{
  for (int i = 0; i < 600; i++) {
    if (strstr(tsv_get(url), line) != NULL)
      return;
    tsv_nap();
  }
  ck_abort_msg("no '%s' on the page:\n%s", line, tsv_get(url));
}

/* The request histogram on page: at least `least` requests answered (the
 * harness's readiness polls count too), each seen in every stage. */
static void tsv_request_histogram(const char *page, unsigned long long least)
{
  unsigned long long nreq = 0, nst, inf;
  const char *rt = strstr(page, "wavedd_request_duration_seconds_count{"
                          "stage=\"total\"} ");
  ck_assert_msg(rt != NULL && sscanf(strchr(rt, '}') + 2, "%llu", &nreq) == 1
                && nreq >= least, "%.300s", rt ? rt : "no request histogram");
  static const char *const stages[] = {"decode_wait", "decode", "loop_wait",
                                       "serve", "total"};
  for (size_t i = 0; i < 5; i++) {
    char key[120];
    snprintf(key, sizeof key, "wavedd_request_duration_seconds_count{stage="
             "\"%s\"} ", stages[i]);
    const char *p = strstr(page, key);
    ck_assert_msg(p != NULL && sscanf(p + strlen(key), "%llu", &nst) == 1 &&
                  nst == nreq, "%s: %.100s", key, p ? p : "missing");
    snprintf(key, sizeof key, "wavedd_request_duration_seconds_bucket{stage="
             "\"%s\",le=\"+Inf\"} ", stages[i]);
    p = strstr(page, key);
    ck_assert_msg(p != NULL && sscanf(p + strlen(key), "%llu", &inf) == 1 &&
                  inf == nreq, "%s: %.100s", key, p ? p : "missing");
  }
}

START_TEST(metrics_count_what_was_served)
{
  td_daemon d;
  td_prepare(&d, NULL);
  char url[80], line[120];
  int port = td_free_port();
  snprintf(url, sizeof url, "http://127.0.0.1:%d/metrics", port);
  snprintf(line, sizeof line, "log_level: info\nmetrics: http://127.0.0.1:%d\n",
           port);
  tsv_edit(&d, "log_level: info\n", line);
  ck_assert_int_eq(td_start(&d), 0);
  nng_socket s = td_dial(d.ipc);
  tsv_reduce_rows(s, 16, 0);
  tsv_reduce_rows(s, 16, 0);
  /* and one of 16 zero rows on cpu1 */
  static uint32_t v[16];
  td_chunk in = {v, sizeof v};
  Wave__V1__Response *r = td_reduce(s, 3, WAVE__V1__DTYPE__U32,
                                    WAVE__V1__OP__SUM, &in, 1, NULL, 0,
                                    "cpu1");
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_REDUCE);
  wave__v1__response__free_unpacked(r, NULL);
  /* a bad request: an error reply, counted by code */
  td_expect_error(td_reduce(s, 4, 77, WAVE__V1__OP__SUM, &in, 1, NULL, 0,
                            NULL), WAVE_EDTYPE, 4);
  /* refused: no such device */
  td_expect_error(td_reduce(s, 10, WAVE__V1__DTYPE__U32, WAVE__V1__OP__SUM,
                            &in, 1, NULL, 0, "nope"), WAVE_ENODEV, 10);
  /* one hash job of 5000 nonces on cpu1 */
  r = td_hash(s, 5, "closed", 0, 5000, 0, 0, 0, 0, "cpu1");
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
  uint64_t job = r->job->job_id;
  wave__v1__response__free_unpacked(r, NULL);
  r = td_wait_job(s, job);
  ck_assert_int_eq(r->job->state, WAVE__V1__JOB_STATE__DONE);
  wave__v1__response__free_unpacked(r, NULL);

  /* JobsRequest lists it */
  Wave__V1__JobsRequest jq = WAVE__V1__JOBS_REQUEST__INIT;
  Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
  rq.version = 1;
  rq.id = 6;
  rq.body_case = WAVE__V1__REQUEST__BODY_JOBS;
  rq.jobs = &jq;
  r = td_call(s, &rq);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOBS);
  ck_assert_uint_eq(r->jobs->n_jobs, 1);
  ck_assert_uint_eq(r->jobs->jobs[0]->job_id, job);
  ck_assert_int_eq(r->jobs->jobs[0]->state, WAVE__V1__JOB_STATE__DONE);
  ck_assert_uint_eq(r->jobs->jobs[0]->done, 5000);
  wave__v1__response__free_unpacked(r, NULL);
  nng_close(s);

  tsv_wait_page(url, "wavedd_hashes_total{device=\"cpu1\"} 5000\n");
  const char *page = tsv_get(url);
  ck_assert_ptr_nonnull(strstr(page,
      "wavedd_jobs_total{device=\"cpu1\",kind=\"hash\",outcome=\"ok\"} 1\n"));
  ck_assert_ptr_nonnull(strstr(page,
      "wavedd_jobs_total{device=\"cpu1\",kind=\"reduce\",outcome=\"ok\"} 1\n"));
  ck_assert_ptr_nonnull(strstr(page, "wavedd_error_replies_total{code=\"DTYPE\"} 1\n"));
  ck_assert_ptr_nonnull(strstr(page, "wavedd_rows_reduced_total{device=\"cpu1\"} 16\n"));
  ck_assert_ptr_nonnull(strstr(page, "wavedd_bytes_reduced_total{device=\"cpu1\"} 64\n"));
  ck_assert_ptr_nonnull(strstr(page,
      "wavedd_pack_state{device=\"cpu0\",pack=\"closed\",state=\"ok\"} 1\n"));
  ck_assert_ptr_nonnull(strstr(page, "wavedd_hash_rate{device=\"cpu1\",window=\"15m\"} "));
  ck_assert_ptr_nonnull(strstr(page, "wavedd_queue_depth{device=\"cpu0\",queue=\"reduce\"} 0\n"));
  /* the duration histogram: one reduction and one hash job on cpu1, each
   * phase but transfer observed once; a refusal counted by code; busy
   * seconds, the process_* families, the connections */
  static const char *const phases[] = {"queue", "compute", "total"};
  for (size_t p = 0; p < 3; p++) {
    char hl[200];
    snprintf(hl, sizeof hl, "wavedd_job_duration_seconds_count{device=\"cpu1\","
             "kind=\"hash\",phase=\"%s\"} 1\n", phases[p]);
    ck_assert_msg(strstr(page, hl) != NULL, "no '%s' in:\n%s", hl, page);
    snprintf(hl, sizeof hl, "wavedd_job_duration_seconds_bucket{device=\"cpu1\","
             "kind=\"reduce\",phase=\"%s\",le=\"+Inf\"} 1\n", phases[p]);
    ck_assert_msg(strstr(page, hl) != NULL, "no '%s' in:\n%s", hl, page);
  }
  ck_assert_ptr_nonnull(strstr(page, "wavedd_job_duration_seconds_bucket{"
      "device=\"cpu0\",kind=\"reduce\",phase=\"total\",le=\"14400\"} 2\n"));
  /* no transfer: a CPU device reads host memory where it lies, and a hash
   * job moves no input (test_bulk_vulkan and integ_opencl see the phase) */
  const char *tr = strstr(page, "phase=\"transfer\"");
  ck_assert_msg(tr == NULL, "a transfer series: %.200s", tr - 60);
  const char *rf = strstr(page, "wavedd_requests_refused_total");
  ck_assert_msg(strstr(page, "wavedd_requests_refused_total{code=\"NODEV\"} 1\n")
                != NULL, "%.300s", rf ? rf : "no refusals");
  ck_assert_ptr_nonnull(strstr(page, "wavedd_device_busy_seconds_total{device=\"cpu1\"} "));
  ck_assert_ptr_null(strstr(page, "wavedd_device_busy_seconds_total{device=\"cpu1\"} 0.000000\n"));
  ck_assert_ptr_nonnull(strstr(page, "\nprocess_resident_memory_bytes "));
  ck_assert_ptr_nonnull(strstr(page, "\nprocess_cpu_seconds_total "));
  ck_assert_ptr_nonnull(strstr(page, "\nprocess_start_time_seconds 1"));
  ck_assert_ptr_nonnull(strstr(page, "\nprocess_open_fds "));
  ck_assert_ptr_nonnull(strstr(page, "\nwavedd_connections{listener=\""));
  tsv_request_histogram(page, 7);
  /* the per-job log lines: id, kind, device, duration, outcome */
  char want[120];
  snprintf(want, sizeof want, "job hash %llu on cpu1: ok in ",
           (unsigned long long)job);
  ck_assert_ptr_nonnull(strstr(td_stderr(&d), want));
  ck_assert_ptr_nonnull(strstr(td_stderr(&d), "job reduce 3 on cpu1: ok in "));
  ck_assert_int_eq(td_stop(&d), 0);
  td_cleanup(&d);
}
END_TEST

/* A user's cancel is no failure: in StatusReply, the device's counts and
 * the page's outcomes. */
START_TEST(cancel_is_not_a_failure)
{
  td_daemon d;
  td_prepare(&d, NULL);
  char url[80], line[120];
  int port = td_free_port();
  snprintf(url, sizeof url, "http://127.0.0.1:%d/metrics", port);
  snprintf(line, sizeof line, "log_level: info\nmetrics: http://127.0.0.1:%d\n",
           port);
  tsv_edit(&d, "log_level: info\n", line);
  ck_assert_int_eq(td_start(&d), 0);
  nng_socket s = td_dial(d.ipc);
  /* a job far too long to end by itself, on cpu0, cancelled */
  Wave__V1__Response *r = td_hash(s, 5, "closed", 0, 1ull << 40, 0, 0, 0, 0,
                                  "cpu0");
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
  uint64_t job = r->job->job_id;
  wave__v1__response__free_unpacked(r, NULL);
  wave__v1__response__free_unpacked(td_job(s, job, 0, 1), NULL);
  r = td_wait_job(s, job);
  ck_assert_int_eq(r->job->state, WAVE__V1__JOB_STATE__CANCELLED);
  wave__v1__response__free_unpacked(r, NULL);
  r = td_status(s, 8);
  ck_assert_uint_eq(r->status->jobs_cancelled, 1);
  ck_assert_uint_eq(r->status->jobs_failed, 0);
  ck_assert_str_eq(r->status->devices[0]->name, "cpu0");
  ck_assert_uint_eq(r->status->devices[0]->jobs_failed, 0);
  ck_assert_uint_ge(r->status->devices[0]->jobs_cancelled, 1);
  wave__v1__response__free_unpacked(r, NULL);
  nng_close(s);
  tsv_wait_page(url, "wavedd_jobs_total{device=\"cpu0\",kind=\"hash\","
               "outcome=\"cancelled\"} 1\n");
  ck_assert_ptr_nonnull(strstr(tsv_get(url), "wavedd_jobs_total{device="
      "\"cpu0\",kind=\"hash\",outcome=\"failed\"} 0\n"));
  ck_assert_int_eq(td_stop(&d), 0);
  td_cleanup(&d);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("service");
  TCase *tc = tcase_create("service");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, reload_good_and_bad);
  tcase_add_test(tc, sigquit_and_usr_signals_stop_cleanly);
  tcase_add_test(tc, metrics_count_what_was_served);
  tcase_add_test(tc, cancel_is_not_a_failure);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
