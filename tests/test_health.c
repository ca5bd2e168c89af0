/* test_health.c - device health (workers/health.h, daemon/exec/health.c)
 * through every path the daemon has, on wavedd-test: a fake device whose
 * "telemetry=FILE" feed the test writes, and a CPU device (no source).
 *
 * The feed goes through the same code as NVML's and amdgpu's readings
 * from wv_health on: the health thread, StatusReply's fields and their
 * have-bits, the metrics families, wavectl's text and JSON.  Each state
 * (every field; some fields only; throttling by hex bits; a bad line; no
 * file) is written to the file and awaited on the page, whose health
 * series only a new reading changes, then checked everywhere; no sleep
 * decides anything.  The NVML and amdgpu readers themselves cannot run
 * here (no GPU).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nng/nng.h>

#include "daemon_harness.h"

static char th_base[64];

static void th_nap(void)
{
  struct timespec ts = {0, 50 * 1000 * 1000};
  nanosleep(&ts, NULL);
}

/* GET /metrics into a static buffer. */
static const char *th_page(void)
{
  char url[120];
  snprintf(url, sizeof url, "%s/metrics", th_base);
  const char *body;
  td_http_get(url, &body, NULL);
  return body;
}

/* Until the page holds `has` and lacks `lacks` (either may be NULL). */
static const char *th_wait(const char *has, const char *lacks)
{
  for (int i = 0; i < 600; i++) {
    const char *p = th_page();
    if ((has == NULL || strstr(p, has) != NULL) &&
        (lacks == NULL || strstr(p, lacks) == NULL))
      return p;
    th_nap();
  }
  ck_abort_msg("the page never held '%s' without '%s'", has ? has : "",
               lacks ? lacks : "");
  return NULL;
}

/* wavectl ARGS against d: its stdout (static). */
static const char *th_ctl(const td_daemon *d, const char *args)
{
  static char out[1 << 16];
  char cmd[600];
  snprintf(cmd, sizeof cmd, "%s/wavectl --url %s %s",
           getenv("WAVE_BINARY_DIR"), d->ipc, args);
  FILE *p = popen(cmd, "r");
  ck_assert_ptr_nonnull(p);
  size_t n = fread(out, 1, sizeof out - 1, p);
  out[n] = '\0';
  ck_assert_int_eq(pclose(p), 0);
  return out;
}

/* The StatusReply's device i. */
static Wave__V1__Response *th_status(nng_socket s)
{
  Wave__V1__Response *r = td_status(s, 3);
  ck_assert_uint_eq(r->status->n_devices, 2);
  return r;
}

#define TH_FULL                                                             \
  "# a GPU at work\ntemp_c 71.5\npower_w 250.25\npower_limit_w 300\n"       \
  "sm_mhz 1980\nmem_mhz 2619\nthrottle sw_power_cap,hw_thermal\n"           \
  "mem_used 10737418240\nmem_total 85899345920\nutil_pct 87\n"

START_TEST(health_from_the_feed_everywhere)
{
  td_daemon d;
  td_prepare(&d, NULL);
  char feed[200], text[1024];
  snprintf(feed, sizeof feed, "%s/feed", d.dir);
  snprintf(th_base, sizeof th_base, "http://127.0.0.1:%d", td_free_port());
  snprintf(text, sizeof text, "listen: [\"%s\"]\nlog_level: info\n"
           "metrics: %s\npacks: {dir: %s/config/packs, load: [small]}\n"
           "devices:\n  - {name: fk0, backend: fake, threads: 1, "
           "device: \"telemetry=%s\"}\n"
           "  - {name: cpu0, backend: cpu, threads: 1}\n", d.ipc, th_base,
           getenv("WAVE_SOURCE_DIR"), feed);
  td_write(d.cfg, text);
  d.fake = 1;
  td_write(feed, TH_FULL);
  ck_assert_int_eq(td_start(&d), 0);
  nng_socket s = td_dial(d.ipc);

  /* every field */
  const char *p = th_wait("wavedd_device_utilization_ratio{device=\"fk0\"} 0.87\n",
                          NULL);
  static const char *const full[] = {
    "wavedd_device_health_source{device=\"fk0\",source=\"feed\"} 1\n",
    "wavedd_device_health_source{device=\"cpu0\",source=\"none\"} 1\n",
    "wavedd_device_temperature_celsius{device=\"fk0\"} 71.5\n",
    "wavedd_device_power_watts{device=\"fk0\"} 250.25\n",
    "wavedd_device_power_limit_watts{device=\"fk0\"} 300\n",
    "wavedd_device_clock_hertz{device=\"fk0\",clock=\"sm\"} 1980000000\n",
    "wavedd_device_clock_hertz{device=\"fk0\",clock=\"memory\"} 2619000000\n",
    "wavedd_device_throttled{device=\"fk0\",reason=\"sw_power_cap\"} 1\n",
    "wavedd_device_throttled{device=\"fk0\",reason=\"hw_thermal\"} 1\n",
    "wavedd_device_throttled{device=\"fk0\",reason=\"idle\"} 0\n",
    "wavedd_device_memory_used_bytes{device=\"fk0\"} 10737418240\n",
    "wavedd_device_memory_total_bytes{device=\"fk0\"} 85899345920\n",
  };
  for (size_t i = 0; i < sizeof full / sizeof full[0]; i++)
    ck_assert_msg(strstr(p, full[i]) != NULL, "no %s", full[i]);
  /* the CPU device has no source and no series at all */
  ck_assert_ptr_null(strstr(p, "temperature_celsius{device=\"cpu0\""));
  ck_assert_ptr_null(strstr(p, "throttled{device=\"cpu0\""));
  Wave__V1__Response *r = th_status(s);
  const Wave__V1__DeviceStatus *fk = r->status->devices[0];
  const Wave__V1__DeviceStatus *cpu = r->status->devices[1];
  ck_assert_str_eq(fk->health_source, "feed");
  ck_assert_uint_eq(fk->health_have, 0x1ff);
  ck_assert(fk->temperature_c == 71.5 && fk->power_w == 250.25);
  ck_assert_uint_eq(fk->throttle_reasons, 0x44);
  ck_assert_str_eq(fk->throttle, "sw_power_cap,hw_thermal");
  ck_assert_str_eq(cpu->health_source, "");
  ck_assert_uint_eq(cpu->health_have, 0);
  ck_assert_ptr_nonnull(strstr(cpu->health_note, "no health source"));
  wave__v1__response__free_unpacked(r, NULL);
  const char *o = th_ctl(&d, "status");
  ck_assert_msg(strstr(o, "  health     feed: 71.5 C, 250.2 W of 300 W, SM "
                "1980 MHz, memory clock 2619 MHz, 87% busy, 10.0 GiB used of "
                "80.0 GiB, throttle: sw_power_cap,hw_thermal\n") != NULL,
                "%s", o);
  ck_assert_ptr_nonnull(strstr(o, "  health     none: no health source: "));

  /* only a temperature, throttling as bits: the others are absent, not 0 */
  td_write(feed, "temp_c 40\nthrottle 0x1\n");
  p = th_wait("wavedd_device_temperature_celsius{device=\"fk0\"} 40\n", NULL);
  ck_assert_ptr_null(strstr(p, "wavedd_device_power_watts{"));
  ck_assert_ptr_null(strstr(p, "wavedd_device_clock_hertz{"));
  ck_assert_ptr_null(strstr(p, "wavedd_device_utilization_ratio{"));
  ck_assert_ptr_nonnull(strstr(p, "throttled{device=\"fk0\",reason=\"idle\"} 1\n"));
  ck_assert_ptr_nonnull(strstr(p, "throttled{device=\"fk0\",reason=\"hw_thermal\"} 0\n"));
  r = th_status(s);
  ck_assert_uint_eq(r->status->devices[0]->health_have, 0x21);
  wave__v1__response__free_unpacked(r, NULL);
  o = th_ctl(&d, "status --json");
  ck_assert_ptr_nonnull(strstr(o, "\"health\": {\"source\": \"feed\", "
                        "\"note\": \"\", \"temperature_c\": 40, \"throttle\": "
                        "\"idle\"}"));
  ck_assert_msg(strstr(o, "  \"power_w\"") == NULL && strstr(o, "power_w") == NULL,
                "%s", o);

  /* a bad line: the source stands, with the line, and nothing is shown */
  td_write(feed, "temp_c 50\npower_w lots\n");
  p = th_wait(NULL, "wavedd_device_temperature_celsius{device=\"fk0\"}");
  ck_assert_ptr_nonnull(strstr(p, "health_source{device=\"fk0\",source=\"feed\"} 1\n"));
  r = th_status(s);
  ck_assert_uint_eq(r->status->devices[0]->health_have, 0);
  ck_assert_ptr_nonnull(strstr(r->status->devices[0]->health_note,
                               "feed line 2"));
  wave__v1__response__free_unpacked(r, NULL);

  /* no file: no source, and why */
  ck_assert_int_eq(unlink(feed), 0);
  th_wait("health_source{device=\"fk0\",source=\"none\"} 1\n", NULL);
  r = th_status(s);
  ck_assert_str_eq(r->status->devices[0]->health_source, "");
  ck_assert_ptr_nonnull(strstr(r->status->devices[0]->health_note,
                               "No such file"));
  wave__v1__response__free_unpacked(r, NULL);
  o = th_ctl(&d, "status");
  ck_assert_ptr_nonnull(strstr(o, "  health     none: no health source: "
                               "telemetry "));
  nng_close(s);
  td_stop_ok(&d);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("health");
  TCase *tc = tcase_create("health");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, health_from_the_feed_everywhere);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
