/* integ_ctl.c - the integration suite's wavectl checks besides
 * reductions (test_integration.c has those): status and packs as JSON and
 * text on both transports, an unreachable daemon, --help.  The tests join
 * test_integration.c's "wavectl" TCase (wv_it_ctl_add_tests).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "integ.h"
#include "jsonq.h"
#include "wave/client.h"

/* ---- wavectl: status, packs, reachability ----------------------------- */

START_TEST(ctl_status)
{
  for (int t = 0; t < 2; t++) {
    wv_it_out o;
    wv_it_ctl(&o, "status", "--json", "--url", wv_it_urls[t], NULL);
    ck_assert_msg(o.status == 0, "exit %d: %s", o.status, o.err);
    jq_node *n = jq_parse(o.out);
    ck_assert_msg(n != NULL, "not JSON: %s", o.out);
    const jq_node *devs = jq_get(n, "devices");
    ck_assert_ptr_nonnull(devs);
    ck_assert_uint_eq(devs->n, 2);
    int seen = 0;
    for (size_t i = 0; i < devs->n; i++) {
      const jq_node *d = jq_at(devs, i);
      const char *name = jq_get(d, "name")->text;
      seen |= strcmp(name, "cpu0") == 0 ? 1 : strcmp(name, "cpu1") == 0 ? 2
                                                                          : 0;
      ck_assert_str_eq(jq_get(d, "backend")->text, "cpu");
      ck_assert_int_eq(jq_get(d, "faulted")->type, JQ_BOOL);
      ck_assert_int_eq(jq_get(d, "faulted")->b, 0);
      uint64_t cap;
      ck_assert_int_eq(jq_u64(jq_get(d, "queue_capacity"), &cap), 0);
      ck_assert_uint_gt(cap, 0);
      ck_assert_int_eq(jq_get(d, "packs")->type, JQ_ARR);
    }
    ck_assert_int_eq(seen, 3);
    ck_assert_ptr_nonnull(jq_get(n, "jobs_served"));
    /* the listen URLs as bound: both of the config's */
    const jq_node *ls = jq_get(n, "listen");
    ck_assert_ptr_nonnull(ls);
    ck_assert_uint_eq(ls->n, 2);
    ck_assert_str_eq(jq_at(ls, 0)->text, wv_it_urls[0]);
    ck_assert_str_eq(jq_at(ls, 1)->text, wv_it_urls[1]);
    jq_free(n);
    wv_it_out_free(&o);

    /* the text form, and agreement with the library on jobs served after
     * one more job (monotonic: other tests do not run concurrently) */
    wv_it_ctl(&o, "status", "--url", wv_it_urls[t], NULL);
    ck_assert_int_eq(o.status, 0);
    ck_assert_ptr_nonnull(strstr(o.out, "cpu0"));
    ck_assert_ptr_nonnull(strstr(o.out, "cpu1"));
    ck_assert_ptr_nonnull(strstr(o.out, "listening on "));
    wv_it_out_free(&o);
  }
  wave_client *c = wv_it_open(0);
  wave_status *s1, *s2;
  wave_error e = {0};
  ck_assert_int_eq(wave_status_get(c, &s1, &e), 0);
  wv_it_alive(); /* two reduce jobs */
  ck_assert_int_eq(wave_status_get(c, &s2, &e), 0);
  ck_assert_uint_ge(s2->jobs_served, s1->jobs_served + 2);
  ck_assert_uint_ge(s2->uptime_ms, s1->uptime_ms);
  wave_status_free(s1);
  wave_status_free(s2);
  wave_client_close(c);
}
END_TEST

START_TEST(ctl_packs)
{
  wv_it_out o;
  wv_it_ctl(&o, "packs", "--json", "--url", wv_it_urls[1], NULL);
  ck_assert_msg(o.status == 0, "exit %d: %s", o.status, o.err);
  jq_node *n = jq_parse(o.out);
  ck_assert_msg(n != NULL, "not JSON: %s", o.out);
  const jq_node *packs = jq_get(n, "packs");
  ck_assert_ptr_nonnull(packs);
  ck_assert_int_eq(packs->type, JQ_ARR);
  for (size_t i = 0; i < packs->n; i++) {
    ck_assert_int_eq(jq_get(jq_at(packs, i), "name")->type, JQ_STR);
    ck_assert_int_eq(jq_get(jq_at(packs, i), "devices")->type, JQ_ARR);
  }
  jq_free(n);
  wv_it_out_free(&o);
}
END_TEST

START_TEST(ctl_unreachable)
{
  char url[300], sock[260];
  wv_it_path(sock, sizeof sock, "nobody.sock");
  snprintf(url, sizeof url, "ipc://%s", sock);
  wv_it_out o;
  /* refused at once (the default 30 s timeout would say TIMEDOUT) */
  wv_it_ctl(&o, "status", "--url", url, NULL);
  wv_it_ctl_bad(&o, 3, "IO");
  ck_assert_ptr_nonnull(strstr(o.err, "connection refused"));
  wv_it_out_free(&o);
  wv_it_ctl(&o, "jobs", "--url", "tcp://127.0.0.1:1", NULL);
  wv_it_ctl_bad(&o, 3, "IO");
  ck_assert_ptr_nonnull(strstr(o.err, "connection refused"));
  wv_it_out_free(&o);
  /* a malformed URL is a usage error */
  wv_it_ctl(&o, "status", "--url", "bogus://x", NULL);
  wv_it_ctl_bad(&o, 2, "ARG");
  wv_it_out_free(&o);
}
END_TEST

START_TEST(ctl_help)
{
  static const char *const cmds[][2] = {{"submit", "reduce"},
                                        {"submit", "hash"},
                                        {"status", NULL},
                                        {"packs", NULL}};
  for (size_t i = 0; i < 4; i++) {
    wv_it_out o;
    if (cmds[i][1])
      wv_it_ctl(&o, cmds[i][0], cmds[i][1], "--help", NULL);
    else
      wv_it_ctl(&o, cmds[i][0], "--help", NULL);
    ck_assert_int_eq(o.status, 0);
    ck_assert_ptr_nonnull(strstr(o.out, "usage: wavectl"));
    wv_it_out_free(&o);
  }
}
END_TEST

void wv_it_ctl_add_tests(TCase *t)
{
  tcase_add_test(t, ctl_status);
  tcase_add_test(t, ctl_packs);
  tcase_add_test(t, ctl_unreachable);
  tcase_add_test(t, ctl_help);
}
