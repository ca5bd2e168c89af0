/* integ_ctl.c - the integration suite's wavectl checks besides
 * reductions (test_integration.c has those): status and packs as JSON and
 * text on both transports, an unreachable daemon, --help; and the 64-bit
 * dtypes and argmin/argmax (issue 23) end to end: text beyond 2^53, .npy
 * '<i8', raw float64 under a mask, each over tcp (messages) and ipc (file
 * regions of 8-byte rows), with the value, bits and "index" of --json.
 * The tests join test_integration.c's "wavectl" TCase
 * (wv_it_ctl_add_tests).
 */
#include <check.h>
#include <stdint.h>
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
    /* per listener (issue 36): wavectl's own connection is on urls[t] */
    const jq_node *lc = jq_get(n, "listen_connections");
    ck_assert_ptr_nonnull(lc);
    ck_assert_uint_eq(lc->n, 2);
    ck_assert_uint_ge(strtoull(jq_at(lc, t)->text, NULL, 10), 1);
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
  ck_assert_ptr_nonnull(s1->listen_connections);  /* c is on urls[0] */
  ck_assert_uint_ge(s1->listen_connections[0], 1);
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

/* ---- wavectl: 64-bit dtypes, argmin/argmax ----------------------------- */

/* An .npy version 1 file of n '<i8' rows. */
static void ic_npy_i8(const char *path, const int64_t *v, size_t n)
{
  char img[128 + 8 * 8];
  int h = snprintf(img + 10, 118, "{'descr': '<i8', 'fortran_order': False, "
                   "'shape': (%zu,), }", n);
  size_t hl = 128 - 10;  /* 10 + hl is a multiple of 64 */
  ck_assert_int_lt(h, (int)hl);
  ck_assert_uint_le(n, 8);
  memcpy(img, "\x93NUMPY\x01\x00", 8);
  img[8] = (char)hl;
  img[9] = 0;
  memset(img + 10 + h, ' ', hl - (size_t)h);
  img[127] = '\n';
  for (size_t i = 0; i < n; i++)
    for (int b = 0; b < 8; b++)
      img[128 + 8 * i + b] = (char)((uint64_t)v[i] >> (8 * b));
  wv_it_write(path, img, 128 + 8 * n);
}

/* One --json reduce: exit 0, and its result, bits and index (INT64_MIN
 * when it has none). */
static void ic_json64(const wv_it_out *o, const char *result, const char *bits,
                      int64_t index, uint64_t count)
{
  ck_assert_msg(o->status == 0, "exit %d: %s", o->status, o->err);
  jq_node *n = jq_parse(o->out);
  ck_assert_msg(n != NULL, "not JSON: %s", o->out);
  ck_assert_msg(strstr(o->out, result) != NULL, "'%s' lacks '%s'", o->out,
                result);
  ck_assert_str_eq(jq_at(jq_get(n, "bits"), 0)->text, bits);
  const jq_node *ix = jq_get(n, "index");
  if (index == INT64_MIN) {
    ck_assert_ptr_null(ix);
  } else {
    ck_assert_ptr_nonnull(ix);
    ck_assert_int_eq(ix->type, JQ_NUM);
    ck_assert_int_eq((int64_t)ix->num, index);
  }
  uint64_t u;
  ck_assert_int_eq(jq_u64(jq_get(n, "count"), &u), 0);
  ck_assert_uint_eq(u, count);
  jq_free(n);
}

START_TEST(ctl_reduce64)
{
  char txt[300], npy1[300], npy2[300], raw[300], mask[300];
  /* 2^64 - 1 + 2 + (2^53 + 1) wraps to 2^53 + 2; a double would have
   * rounded 2^53 + 1 on the way in */
  wv_it_path(txt, sizeof txt, "u64.txt");
  wv_it_write(txt, "18446744073709551615\n2, 9007199254740993\n", 41);
  /* sint64 in two .npy chunks: -5 | 7, -9223372036854775808, 7 */
  wv_it_path(npy1, sizeof npy1, "a.npy");
  wv_it_path(npy2, sizeof npy2, "b.npy");
  ic_npy_i8(npy1, (const int64_t[]){-5}, 1);
  ic_npy_i8(npy2, (const int64_t[]){7, INT64_MIN, 7}, 3);
  /* float64 2.5, -1.0, -1.0, 0.5 under the mask 1, 0, 1, 1 */
  const double f[4] = {2.5, -1.0, -1.0, 0.5};
  const uint32_t m[4] = {1, 0, 1, 1};
  wv_it_path(raw, sizeof raw, "f64.raw");
  wv_it_write(raw, f, sizeof f);
  wv_it_path(mask, sizeof mask, "f64.mask");
  wv_it_write(mask, m, sizeof m);
  for (int t = 0; t < 2; t++) {
    const char *u = wv_it_urls[t];
    wv_it_out o;
    wv_it_ctl(&o, "submit", "reduce", "--url", u, "--op", "sum", "--dtype",
              "uint64", "--format", "text", "--input", txt, "--json", NULL);
    ic_json64(&o, "\"result\": [9007199254740994]", "0x0020000000000002",
              INT64_MIN, 3);
    wv_it_out_free(&o);
    wv_it_ctl(&o, "submit", "reduce", "--url", u, "--op", "argmax", "--dtype",
              "u64", "--format", "text", "--input", txt, "--json", NULL);
    ic_json64(&o, "\"result\": [18446744073709551615]",
              "0xffffffffffffffff", 0, 3);
    wv_it_out_free(&o);
    wv_it_ctl(&o, "submit", "reduce", "--url", u, "--op", "argmax", "--dtype",
              "int64", "--input", npy1, "--input", npy2, "--json", NULL);
    ic_json64(&o, "\"result\": [7]", "0x0000000000000007", 1, 4);
    wv_it_out_free(&o);
    wv_it_ctl(&o, "submit", "reduce", "--url", u, "--op", "argmin", "--dtype",
              "i64", "--input", npy1, "--input", npy2, "--json", NULL);
    ic_json64(&o, "\"result\": [-9223372036854775808]",
              "0x8000000000000000", 2, 4);
    wv_it_out_free(&o);
    wv_it_ctl(&o, "submit", "reduce", "--url", u, "--op", "argmin", "--dtype",
              "double", "--input", raw, "--mask", mask, "--json", NULL);
    ic_json64(&o, "\"result\": [-1]", "0xbff0000000000000", 2, 3);
    wv_it_out_free(&o);
    /* the text form: the value, then its index */
    wv_it_ctl(&o, "submit", "reduce", "--url", u, "--op", "argmax", "--dtype",
              "f64", "--input", raw, "--mask", mask, NULL);
    ck_assert_msg(o.status == 0, "exit %d: %s", o.status, o.err);
    ck_assert_msg(strstr(o.out, "argmax float64 = 2.5  (bits "
                         "0x4004000000000000)\nindex: 0\n") != NULL, "%s",
                  o.out);
    wv_it_out_free(&o);
    /* a .npy of sint64 given as float64 */
    wv_it_ctl(&o, "submit", "reduce", "--url", u, "--op", "max", "--dtype",
              "f64", "--input", npy1, NULL);
    wv_it_ctl_bad(&o, 1, "DTYPE");
    ck_assert_ptr_nonnull(strstr(o.err, "'<i8'"));
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
  tcase_add_test(t, ctl_reduce64);
}
