/* test_ctl_top.c - the frames of `wavectl top` without a daemon: a status
 * and a job list made here, drawn by wv_top_frame and wv_top_json.  The
 * daemon and the terminal are tests/ctl_top_test.sh's.
 *
 * Covered here because a real daemon cannot be made to show them on
 * demand: a faulted device whose fault holds escape bytes, the busy share
 * not known yet ("-", JSON null), health read in part (temperature and
 * power only where their bits are set) and a throttled device, a job over several devices (its rate on
 * its row, not on a device; on each device's row from a daemon that
 * counts each device's hashes), a job waiting for its pack, ended jobs left
 * out, and a terminal too small for every row.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/ctl.h"
#include "jsonq.h"
#include "wave/client.h"

static wave_device_status tct_devs[3] = {
  {.name = "cpu0", .backend = "cpu", .description = "", .queue_depth = 2,
   .queue_capacity = 64, .running = 1, .fault = "", .exchange = "",
   .exchange_reason = ""},
  {.name = "vk0", .backend = "vulkan", .description = "", .queue_capacity = 8,
   .fault = "", .exchange = "", .exchange_reason = "", .health_source = "feed",
   .health_have = WAVE_HEALTH_TEMPERATURE | WAVE_HEALTH_POWER |
                  WAVE_HEALTH_POWER_LIMIT | WAVE_HEALTH_THROTTLE,
   .temperature_c = 63.4, .power_w = 215.4, .power_limit_w = 700,
   .throttle = "sw_power_cap"},
  {.name = "cl0", .backend = "opencl", .description = "", .queue_capacity = 8,
   .faulted = 1, .fault = "lost\033[2Jdevice", .exchange = "",
   .exchange_reason = "", .health_source = "feed",
   .health_have = WAVE_HEALTH_POWER, .power_w = 80, .throttle = ""},
};

static wave_status tct_status = {
  .version = "9.9.9", .uptime_ms = 185000, .jobs_served = 7,
  .jobs_failed = 1, .instance = 5, .ready = 1, .n_devices = 3,
  .jobs_cancelled = 2,
  .devices = tct_devs,
};

/* 1: cpu0 alone, 1000 of 4000 in 2 s (500 H/s); 2: cpu0 and 2 more,
 * 3000 in 1 s; 3: waiting for its pack; 4: done (not drawn) */
static const wave_job_info tct_jobs[4] = {
  {.job_id = 1, .state = WAVE_JOB_RUNNING, .done = 1000, .total = 4000,
   .seconds = 2.0, .device = "cpu0", .n_devices = 1, .waiting_pack = "",
   .waiting_device = "", .owner = "token:batch-nightly"},
  {.job_id = 2, .state = WAVE_JOB_RUNNING, .done = 3000, .total = 10000,
   .seconds = 1.0, .device = "cpu0", .n_devices = 3, .waiting_pack = "",
   .waiting_device = ""},
  {.job_id = 3, .state = WAVE_JOB_PREPARING, .total = 10, .device = "vk0",
   .n_devices = 1, .waiting_pack = "main", .waiting_device = "vk0",
   .prepare_steps = 3, .prepare_steps_total = 8},
  {.job_id = 4, .state = WAVE_JOB_DONE, .done = 5, .total = 5,
   .seconds = 1.0, .device = "vk0", .n_devices = 1, .waiting_pack = "",
   .waiting_device = ""},
};

static char *tct_draw(const wv_top_view *v, int json)
{
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  ck_assert_ptr_nonnull(f);
  if (json)
    wv_top_json(f, v);
  else
    wv_top_frame(f, v);
  fclose(f);
  return text;
}

/* The line of text that starts with head, copied (NULL: none). */
static char *tct_line(const char *text, const char *head)
{
  for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
    if (strncmp(p, head, strlen(head)) == 0)
      return strndup(p, strcspn(p, "\n"));
  return NULL;
}

START_TEST(busy_share)
{
  /* no busy time reported (busy_ms 0): the samples */
  ck_assert_int_eq(wv_top_busy(0, 0, 0, 0, 0), -1);
  ck_assert_int_eq(wv_top_busy(1, 1, 0, 0, 1000), -1);  /* one says nothing */
  ck_assert_int_eq(wv_top_busy(0, 4, 0, 0, 1000), 0);
  ck_assert_int_eq(wv_top_busy(3, 4, 0, 0, 1000), 75);
  ck_assert_int_eq(wv_top_busy(1, 3, 0, 0, 1000), 33);
  ck_assert_int_eq(wv_top_busy(2, 3, 0, 0, 1000), 67);
  /* busy time: its growth over the uptime's, whatever the samples saw */
  ck_assert_int_eq(wv_top_busy(1, 4, 5000, 300, 1000), 30);
  ck_assert_int_eq(wv_top_busy(0, 4, 5000, 125, 1000), 13);
  ck_assert_int_eq(wv_top_busy(3, 4, 5000, 0, 1000), 0);
  /* a long piece credited as it ended: at most 100 */
  ck_assert_int_eq(wv_top_busy(0, 4, 9000, 8000, 1000), 100);
  /* running at every sample, its piece not ended yet: 100 */
  ck_assert_int_eq(wv_top_busy(4, 4, 5000, 0, 1000), 100);
  /* the daemon restarted (no uptime grown): the samples */
  ck_assert_int_eq(wv_top_busy(2, 4, 5000, 0, 0), 50);
}
END_TEST

START_TEST(frame_text)
{
  int busy[3] = {75, -1, 0};
  wv_top_view v = {.s = &tct_status, .url = "ipc:///x.sock", .jobs = tct_jobs,
                   .n_jobs = 4, .busy = busy, .clock = "12:34:56"};
  char *t = tct_draw(&v, 0);
  ck_assert_ptr_nonnull(strstr(t, "wavedd 9.9.9 at ipc:///x.sock  up 3m05s  "
                                  "ready  12:34:56\n"));
  ck_assert_ptr_nonnull(strstr(t, "hash jobs: 2 running, 0 queued, 1 "
                                  "preparing;  jobs served 7, failed 1, "
                                  "cancelled 2\n"));
  /* cpu0: only job 1's rate is its own; vk0: busy not known */
  char *l = tct_line(t, "cpu0 ");
  ck_assert_ptr_nonnull(l);
  ck_assert_str_eq(l, "cpu0   cpu     running      2/64  75%   500.00 H/s"
                      "     -         -");
  free(l);
  /* health: what the source read, and nothing else */
  l = tct_line(t, "vk0 ");
  ck_assert_str_eq(l, "vk0    vulkan  idle          0/8    -            -"
                      "   63C  215/700W");
  free(l);
  l = tct_line(t, "cl0 ");
  ck_assert_ptr_nonnull(strstr(l, " FAULTED "));
  ck_assert_ptr_nonnull(strstr(l, "    -       80W"));
  free(l);
  ck_assert_ptr_nonnull(strstr(t, "\n  vk0: throttled: sw_power_cap\n"));
  ck_assert_ptr_null(strstr(t, "cl0: throttled"));
  /* the fault, with no escape byte of the daemon's left */
  ck_assert_ptr_nonnull(strstr(t, "  cl0: lost?[2Jdevice\n"));
  ck_assert_ptr_null(strchr(t, '\033'));
  l = tct_line(t, "1 ");
  ck_assert_str_eq(l, "1   token:batch-nightly hash running   [##--------]  25.0%"
                      "  500.00 H/s     6s  cpu0");
  free(l);
  l = tct_line(t, "2 ");
  ck_assert_str_eq(l, "2   -                   hash running   [###-------]  30.0%"
                      "   3.00 kH/s     2s  cpu0+2");
  free(l);
  l = tct_line(t, "3 ");
  ck_assert_str_eq(l, "3   -                   hash preparing [----------]   0.0%"
                      "           -      -  vk0  waiting for pack main on "
                      "vk0: 3 of 8 steps");
  free(l);
  ck_assert_ptr_null(tct_line(t, "4 "));  /* done: not drawn */
  ck_assert_ptr_nonnull(strstr(t, "(NAME+N: a job over N more devices"));
  ck_assert_ptr_null(strstr(t, "q or Ctrl-C"));  /* not a terminal */
  free(t);

  /* no busy shares at all, and no live job */
  v.busy = NULL;
  v.n_jobs = 0;
  t = tct_draw(&v, 0);
  ck_assert_ptr_nonnull(strstr(t, "\nno hash jobs queued or running\n"));
  l = tct_line(t, "cpu0 ");
  ck_assert_ptr_nonnull(strstr(l, "2/64    - "));
  free(l);
  free(t);
}
END_TEST

/* A daemon that counts each device's hashes: a device's rate is the
 * interval's, else the daemon's over 10 s, with a job over several
 * devices in each one's (cpu0 and vk0 here, not on job 1 alone), and the
 * note no longer says its rate is on its row only. */
START_TEST(frame_device_rates)
{
  wave_status s = tct_status;
  uint64_t hashes[3] = {9000, 4000, 0};
  double daemon_rate[3] = {2800, 1200, 0}, interval[3] = {2500, 0, 0};
  s.device_hashes = hashes;
  s.device_hash_rate = daemon_rate;
  wv_top_view v = {.s = &s, .url = "ipc:///x.sock", .jobs = tct_jobs,
                   .n_jobs = 4, .rate = interval};
  char *t = tct_draw(&v, 0);
  char *l = tct_line(t, "cpu0 ");
  ck_assert_ptr_nonnull(strstr(l, " 2.50 kH/s "));  /* the interval's */
  free(l);
  l = tct_line(t, "vk0 ");
  ck_assert_ptr_nonnull(strstr(l, " 1.20 kH/s "));  /* none: the daemon's */
  free(l);
  l = tct_line(t, "cl0 ");
  ck_assert_ptr_nonnull(strstr(l, "     -  "));      /* no hashes at all */
  free(l);
  ck_assert_ptr_nonnull(strstr(t, "\n(NAME+N: a job over N more devices)\n"));
  ck_assert_ptr_null(strstr(t, "its rate is on its row only"));
  free(t);
  t = tct_draw(&v, 1);
  jq_node *root = jq_parse(t);
  ck_assert_msg(root != NULL, "not JSON: %s", t);
  const jq_node *devs = jq_get(root, "devices");
  ck_assert(jq_get(jq_at(devs, 0), "hash_rate")->num == 2500);
  ck_assert(jq_get(jq_at(devs, 1), "hash_rate")->num == 1200);
  ck_assert_int_eq(jq_get(jq_at(devs, 2), "hash_rate")->type, JQ_NULL);
  jq_free(root);
  free(t);
}
END_TEST

/* A terminal of 60 x 16: lines cut at 60, the job rows that fit and a
 * line for the rest, the footer at the bottom. */
START_TEST(frame_small_terminal)
{
  wv_top_view v = {.s = &tct_status, .url = "ipc:///x.sock", .jobs = tct_jobs,
                   .n_jobs = 4, .width = 60, .height = 16, .tty = 1};
  char *t = tct_draw(&v, 0);
  size_t lines = 0;
  for (char *p = t, *nl; (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
    ck_assert_uint_le((size_t)(nl - p), 60);
    lines++;
  }
  ck_assert_uint_eq(lines, 16);
  char *l = tct_line(t, "1 ");
  ck_assert_ptr_nonnull(l);
  free(l);
  ck_assert_ptr_null(tct_line(t, "2 "));
  ck_assert_ptr_nonnull(strstr(t, "\n... and 2 more (wavectl jobs lists them"));
  ck_assert_ptr_nonnull(strstr(t, "\nq or Ctrl-C: quit"));
  free(t);
}
END_TEST

START_TEST(frame_json)
{
  int busy[3] = {75, -1, 0};
  wv_top_view v = {.s = &tct_status, .url = "ipc:///x.sock", .jobs = tct_jobs,
                   .n_jobs = 4, .busy = busy};
  char *t = tct_draw(&v, 1);
  jq_node *root = jq_parse(t);
  ck_assert_msg(root != NULL, "not JSON: %s", t);
  uint64_t u;
  ck_assert_int_eq(jq_u64(jq_get(root, "jobs_cancelled"), &u), 0);
  ck_assert_uint_eq(u, 2);
  const jq_node *devs = jq_get(root, "devices");
  ck_assert_uint_eq(devs->n, 3);
  const jq_node *cpu0 = jq_at(devs, 0), *vk0 = jq_at(devs, 1);
  ck_assert_str_eq(jq_get(cpu0, "state")->text, "running");
  ck_assert(jq_get(cpu0, "busy_percent")->num == 75);
  ck_assert(jq_get(cpu0, "hash_rate")->num == 500);
  ck_assert_int_eq(jq_get(cpu0, "temperature_c")->type, JQ_NULL);
  ck_assert_int_eq(jq_get(cpu0, "power_w")->type, JQ_NULL);
  ck_assert_int_eq(jq_get(cpu0, "power_limit_w")->type, JQ_NULL);
  ck_assert_int_eq(jq_get(cpu0, "throttle")->type, JQ_NULL);
  ck_assert(jq_get(vk0, "temperature_c")->num == 63.4);
  ck_assert(jq_get(vk0, "power_w")->num == 215.4);
  ck_assert(jq_get(vk0, "power_limit_w")->num == 700);
  ck_assert_str_eq(jq_get(vk0, "throttle")->text, "sw_power_cap");
  ck_assert(jq_get(jq_at(devs, 2), "power_w")->num == 80);
  ck_assert_int_eq(jq_get(jq_at(devs, 2), "temperature_c")->type, JQ_NULL);
  ck_assert_int_eq(jq_get(vk0, "busy_percent")->type, JQ_NULL);
  ck_assert_int_eq(jq_get(vk0, "hash_rate")->type, JQ_NULL);
  ck_assert_str_eq(jq_get(jq_at(devs, 2), "fault")->text, "lost\033[2Jdevice");
  const jq_node *jobs = jq_get(root, "jobs");
  ck_assert_uint_eq(jobs->n, 3);  /* the done one left out */
  const jq_node *j1 = jq_at(jobs, 0), *j3 = jq_at(jobs, 2);
  ck_assert_int_eq(jq_u64(jq_get(j1, "done"), &u), 0);
  ck_assert_uint_eq(u, 1000);
  ck_assert(jq_get(j1, "eta_seconds")->num == 6);
  ck_assert_str_eq(jq_get(j1, "owner")->text, "token:batch-nightly");
  ck_assert_int_eq(jq_get(j3, "owner")->type, JQ_NULL);  /* older daemon */
  ck_assert_str_eq(jq_get(j1, "kind")->text, "hash");
  ck_assert_str_eq(jq_get(j3, "state")->text, "preparing");
  ck_assert_int_eq(jq_get(j3, "rate")->type, JQ_NULL);
  ck_assert_int_eq(jq_get(j3, "eta_seconds")->type, JQ_NULL);
  jq_free(root);
  free(t);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("ctl_top");
  TCase *t = tcase_create("frame");
  tcase_add_test(t, busy_share);
  tcase_add_test(t, frame_text);
  tcase_add_test(t, frame_small_terminal);
  tcase_add_test(t, frame_device_rates);
  tcase_add_test(t, frame_json);
  suite_add_tcase(s, t);
  SRunner *r = srunner_create(s);
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
