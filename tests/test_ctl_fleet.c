/* test_ctl_fleet.c - wavectl's fleet options (client/ctl_fleet.c,
 * client/ctl_args.c): --fleet SPEC to URLs, the probe's readiness verdict,
 * and the usage errors, without a daemon or a Slurm job.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "client/ctl.h"

START_TEST(fleet_url_lists)
{
  char **u;
  size_t n;
  wave_error err = {0};
  ck_assert_int_eq(wv_fleet_urls("tcp://a:1,ipc:///tmp/b.sock,tcp://c:3", &u,
                                 &n, &err), 0);
  ck_assert_uint_eq(n, 3);
  ck_assert_str_eq(u[0], "tcp://a:1");
  ck_assert_str_eq(u[1], "ipc:///tmp/b.sock");
  ck_assert_str_eq(u[2], "tcp://c:3");
  wv_fleet_urls_free(u, n);
  ck_assert_int_eq(wv_fleet_urls("tcp://a:1,,tcp://c:3", &u, &n, &err),
                   WAVE_EARG);
  ck_assert_ptr_nonnull(strstr(err.message, "empty URL"));
  ck_assert_ptr_null(u);
  ck_assert_int_eq(wv_fleet_urls("tcp://a:1,", &u, &n, &err), WAVE_EARG);
  ck_assert_int_eq(wv_fleet_urls("", &u, &n, &err), WAVE_EARG);
  /* slurm outside a job, and malformed ports */
  unsetenv("SLURM_JOB_NODELIST");
  ck_assert_int_eq(wv_fleet_urls("slurm", &u, &n, &err), WAVE_EARG);
  ck_assert_ptr_nonnull(strstr(err.message, "SLURM_JOB_NODELIST is not set"));
  ck_assert_int_eq(wv_fleet_urls("slurm:70000", &u, &n, &err), WAVE_EARG);
  ck_assert_ptr_nonnull(strstr(err.message, "not 1..65535"));
  ck_assert_int_eq(wv_fleet_urls("slurm:x+", &u, &n, &err), WAVE_EARG);
  ck_assert_int_eq(wv_fleet_urls("slurmy", &u, &n, &err), 0);  /* a "URL" */
  wv_fleet_urls_free(u, n);
}
END_TEST

START_TEST(probe_verdict)
{
  wave_device_status d[2];
  memset(d, 0, sizeof d);
  wave_status s = {.n_devices = 2, .devices = d};
  wave_pack_check pc = {.pack = "p", .state = "pending"};
  d[0].n_packs = 1;
  d[0].packs = &pc;
  d[1].faulted = 1;
  /* protocol 2 (instance set): the daemon's word */
  s.instance = 42;
  s.ready = 1;
  ck_assert_int_eq(wv_status_ready(&s), 1);
  s.ready = 0;
  ck_assert_int_eq(wv_status_ready(&s), 0);
  /* before protocol 2: a device up and nothing pending */
  s.instance = 0;
  ck_assert_int_eq(wv_status_ready(&s), 0);
  pc.state = "ok";
  ck_assert_int_eq(wv_status_ready(&s), 1);
  d[0].faulted = 1;  /* every device faulted: not ready */
  ck_assert_int_eq(wv_status_ready(&s), 0);
}
END_TEST

static int tcf_parse(const char *line, wv_args *a, wave_error *err)
{
  char buf[512], *argv[32];
  int argc = 0;
  strcpy(buf, line);
  for (char *t = strtok(buf, " "); t && argc < 31; t = strtok(NULL, " "))
    argv[argc++] = t;
  argv[argc] = NULL;
  return wv_args_parse(argc, argv, a, err);
}

START_TEST(fleet_options)
{
  wv_args a;
  wave_error err = {0};
  ck_assert_int_eq(tcf_parse("wavectl submit hash --pack small --nonce 0 "
                            "--count 9 --fleet tcp://a:1 --piece 8192", &a,
                            &err), 0);
  ck_assert_str_eq(a.fleet, "tcp://a:1");
  ck_assert_uint_eq(a.piece, 8192);
  wv_args_fini(&a);
  ck_assert_int_eq(tcf_parse("wavectl status --probe --fleet slurm", &a, &err),
                   0);
  ck_assert_int_eq(a.probe, 1);
  wv_args_fini(&a);
  ck_assert_int_eq(tcf_parse("wavectl submit hash --pack small --nonce 0 "
                            "--count 9 --piece 8", &a, &err), WAVE_EARG);
  ck_assert_ptr_nonnull(strstr(err.message, "--piece needs --fleet"));
  wv_args_fini(&a);
  ck_assert_int_eq(tcf_parse("wavectl --url tcp://x:1 submit hash --pack small "
                            "--nonce 0 --count 9 --fleet tcp://a:1", &a, &err),
                   WAVE_EARG);
  ck_assert_ptr_nonnull(strstr(err.message, "drop --url"));
  wv_args_fini(&a);
  ck_assert_int_eq(tcf_parse("wavectl packs --probe", &a, &err), WAVE_EARG);
  wv_args_fini(&a);
  ck_assert_int_eq(tcf_parse("wavectl packs --fleet tcp://a:1", &a, &err),
                   WAVE_EARG);
  wv_args_fini(&a);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("ctl_fleet");
  TCase *t = tcase_create("ctl_fleet");
  tcase_add_test(t, fleet_url_lists);
  tcase_add_test(t, probe_verdict);
  tcase_add_test(t, fleet_options);
  suite_add_tcase(s, t);
  SRunner *r = srunner_create(s);
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
