/* test_health.c - device health (workers/health.h, daemon/exec/health.c)
 * through every path the daemon has, on wavedd-test: a fake device whose
 * "telemetry=FILE" feed the test writes, and a CPU device (no source).
 * The guards (max_temperature_c, resume_temperature_c, max_power_w) on
 * the same feed: a crossing reading holds the device (no new hash piece:
 * its hashes_total stands still while a job on it and another device
 * ends), a reading between the two temperatures keeps it held, one at
 * resume lets it go; the power guard; the CPU device's guards inactive;
 * a reload's new limits judged at once; no reading changes nothing; a
 * throttled device's queued reductions that named no device move to
 * another, and one that named it waits for it.
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

static char thl_base[64];

static void thl_nap(void)
{
  struct timespec ts = {0, 50 * 1000 * 1000};
  nanosleep(&ts, NULL);
}

/* GET /metrics into a static buffer. */
static const char *thl_page(void)
{
  char url[120];
  snprintf(url, sizeof url, "%s/metrics", thl_base);
  static const char *body;  /* td_http_get's static buffer */
  td_http_get(url, &body, NULL);
  return body;
}

/* Until the page holds `has` and lacks `lacks` (either may be NULL). */
static const char *thl_wait(const char *has, const char *lacks)
{
  for (int i = 0; i < 600; i++) {
    const char *p = thl_page();
    if ((has == NULL || strstr(p, has) != NULL) &&
        (lacks == NULL || strstr(p, lacks) == NULL))
      return p;
    thl_nap();
  }
  ck_abort_msg("the page never held '%s' without '%s'", has ? has : "",
               lacks ? lacks : "");
  return NULL;
}

/* wavectl ARGS against d: its stdout (static). */
static const char *thl_ctl(const td_daemon *d, const char *args)
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
static Wave__V1__Response *thl_status(nng_socket s)
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
  snprintf(thl_base, sizeof thl_base, "http://127.0.0.1:%d", td_free_port());
  snprintf(text, sizeof text, "listen: [\"%s\"]\nlog_level: info\n"
           "metrics: %s\npacks: {dir: %s/config/packs, load: [small]}\n"
           "devices:\n  - {name: fk0, backend: fake, threads: 1, "
           "device: \"telemetry=%s\"}\n"
           "  - {name: cpu0, backend: cpu, threads: 1}\n", d.ipc, thl_base,
           getenv("WAVE_SOURCE_DIR"), feed);
  td_write(d.cfg, text);
  d.fake = 1;
  td_write(feed, TH_FULL);
  ck_assert_int_eq(td_start(&d), 0);
  nng_socket s = td_dial(d.ipc);

  /* every field */
  const char *p = thl_wait("wavedd_device_utilization_ratio{device=\"fk0\"} 0.87\n",
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
  Wave__V1__Response *r = thl_status(s);
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
  const char *o = thl_ctl(&d, "status");
  ck_assert_msg(strstr(o, "  health     feed: 71.5 C, 250.2 W of 300 W, SM "
                "1980 MHz, memory clock 2619 MHz, 87% busy, 10.0 GiB used of "
                "80.0 GiB, throttle: sw_power_cap,hw_thermal\n") != NULL,
                "%s", o);
  ck_assert_ptr_nonnull(strstr(o, "  health     none: no health source: "));

  /* only a temperature, throttling as bits: the others are absent, not 0 */
  td_write(feed, "temp_c 40\nthrottle 0x1\n");
  p = thl_wait("wavedd_device_temperature_celsius{device=\"fk0\"} 40\n", NULL);
  ck_assert_ptr_null(strstr(p, "wavedd_device_power_watts{"));
  ck_assert_ptr_null(strstr(p, "wavedd_device_clock_hertz{"));
  ck_assert_ptr_null(strstr(p, "wavedd_device_utilization_ratio{"));
  ck_assert_ptr_nonnull(strstr(p, "throttled{device=\"fk0\",reason=\"idle\"} 1\n"));
  ck_assert_ptr_nonnull(strstr(p, "throttled{device=\"fk0\",reason=\"hw_thermal\"} 0\n"));
  r = thl_status(s);
  ck_assert_uint_eq(r->status->devices[0]->health_have, 0x21);
  wave__v1__response__free_unpacked(r, NULL);
  o = thl_ctl(&d, "status --json");
  ck_assert_ptr_nonnull(strstr(o, "\"health\": {\"source\": \"feed\", "
                        "\"note\": \"\", \"temperature_c\": 40, \"throttle\": "
                        "\"idle\"}"));
  ck_assert_msg(strstr(o, "\"power_w\"") == NULL, "%s", o);

  /* a bad line: the source stands, with the line, and nothing is shown */
  td_write(feed, "temp_c 50\npower_w lots\n");
  p = thl_wait(NULL, "wavedd_device_temperature_celsius{device=\"fk0\"}");
  ck_assert_ptr_nonnull(strstr(p, "health_source{device=\"fk0\",source=\"feed\"} 1\n"));
  r = thl_status(s);
  ck_assert_uint_eq(r->status->devices[0]->health_have, 0);
  ck_assert_ptr_nonnull(strstr(r->status->devices[0]->health_note,
                               "feed line 2"));
  wave__v1__response__free_unpacked(r, NULL);

  /* no file: no source, and why */
  ck_assert_int_eq(unlink(feed), 0);
  thl_wait("health_source{device=\"fk0\",source=\"none\"} 1\n", NULL);
  r = thl_status(s);
  ck_assert_str_eq(r->status->devices[0]->health_source, "");
  ck_assert_ptr_nonnull(strstr(r->status->devices[0]->health_note,
                               "No such file"));
  wave__v1__response__free_unpacked(r, NULL);
  o = thl_ctl(&d, "status");
  ck_assert_ptr_nonnull(strstr(o, "  health     none: no health source: "
                               "telemetry "));
  nng_close(s);
  td_stop_ok(&d);
}
END_TEST

/* The page's counter `series` ("name{labels}"), 0 when absent. */
static unsigned long long thl_num(const char *page, const char *series)
{
  const char *p = strstr(page, series);
  return p != NULL ? strtoull(p + strlen(series) + 1, NULL, 10) : 0;
}

/* A hash job on the small pack over `devices` (comma list) or on
 * `device`; its id. */
static uint64_t thl_job(nng_socket s, uint64_t id, uint64_t count,
                       const char *device, const char *devices)
{
  Wave__V1__HashRequest hq = WAVE__V1__HASH_REQUEST__INIT;
  hq.pack = (char *)"small";
  hq.count = count;
  hq.device = (char *)(device ? device : "");
  char list[64], *names[4];
  size_t n = 0;
  if (devices != NULL) {
    snprintf(list, sizeof list, "%s", devices);
    for (char *sv = NULL, *t = strtok_r(list, ",", &sv); t && n < 4;
         t = strtok_r(NULL, ",", &sv))
      names[n++] = t;
  }
  hq.n_devices = n;
  hq.devices = names;
  Wave__V1__Response *r = td_hash_req(s, id, &hq);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
  uint64_t job = r->job->job_id;
  wave__v1__response__free_unpacked(r, NULL);
  return job;
}

/* The job's nonces done so far. */
static uint64_t thl_done(nng_socket s, uint64_t job)
{
  Wave__V1__Response *r = td_job(s, job, 0, 0);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
  uint64_t done = r->job->done;
  wave__v1__response__free_unpacked(r, NULL);
  return done;
}

static void thl_job_done(nng_socket s, uint64_t job, uint64_t count)
{
  Wave__V1__Response *r = td_wait_job(s, job);
  ck_assert_msg(r->job->state == WAVE__V1__JOB_STATE__DONE, "state %d: %s",
                r->job->state, r->job->error ? r->job->error->message : "");
  ck_assert_uint_eq(r->job->done, count);
  wave__v1__response__free_unpacked(r, NULL);
}

/* Device i's guard state and reason, checked in the StatusReply. */
static void thl_guard(nng_socket s, size_t i, const char *state,
                     const char *reason)
{
  Wave__V1__Response *r = thl_status(s);
  const Wave__V1__DeviceStatus *ds = r->status->devices[i];
  ck_assert_str_eq(ds->guard, state);
  ck_assert_msg(strstr(ds->guard_reason, reason) != NULL, "reason '%s'",
                ds->guard_reason);
  ck_assert_uint_eq(r->status->devices_throttled,
                    strcmp(state, "throttled") == 0);
  wave__v1__response__free_unpacked(r, NULL);
}

#define TH_GUARD(dev, st)                                                   \
  "wavedd_device_guard{device=\"" dev "\",state=\"" st "\"} 1\n"
#define TH_CFG                                                              \
  "listen: [\"%s\"]\nlog_level: info\nmetrics: %s\n"                        \
  "packs: {dir: %s/config/packs, load: [small]}\ndevices:\n"                \
  "  - {name: fk0, backend: fake, threads: 1, batch: 4096, "                \
  "device: \"telemetry=%s\", max_temperature_c: %u, "                       \
  "resume_temperature_c: %u, max_power_w: 300}\n"                           \
  "  - {name: cpu0, backend: cpu, threads: 1, batch: 4096, "                \
  "max_temperature_c: 80}\n"

START_TEST(guards_hold_and_let_go)
{
  td_daemon d;
  td_prepare(&d, NULL);
  char feed[200], text[1024];
  snprintf(feed, sizeof feed, "%s/feed", d.dir);
  snprintf(thl_base, sizeof thl_base, "http://127.0.0.1:%d", td_free_port());
  snprintf(text, sizeof text, TH_CFG, d.ipc, thl_base,
           getenv("WAVE_SOURCE_DIR"), feed, 80u, 70u);
  td_write(d.cfg, text);
  d.fake = 1;
  td_write(feed, "temp_c 50\npower_w 100\n");
  ck_assert_int_eq(td_start(&d), 0);
  nng_socket s = td_dial(d.ipc);

  /* under the limits: ok; the CPU device has no source: inactive */
  thl_wait(TH_GUARD("fk0", "ok"), NULL);
  thl_wait(TH_GUARD("cpu0", "inactive"), NULL);
  thl_guard(s, 1, "inactive", "max_temperature_c inactive: no health source");
  ck_assert_ptr_nonnull(strstr(td_stderr(&d), "device cpu0 guards: "
                               "max_temperature_c inactive"));
  uint64_t job = thl_job(s, 1, 1u << 16, "cpu0", NULL);
  thl_job_done(s, job, 1u << 16);  /* inactive guards hold nothing */

  /* the crossing reading holds fk0: no new piece from then on */
  td_write(feed, "temp_c 85\npower_w 100\n");
  const char *p = thl_wait(TH_GUARD("fk0", "throttled"), NULL);
  ck_assert_ptr_nonnull(strstr(p, "wavedd_device_guard_throttles_total{"
                               "device=\"fk0\"} 1\n"));
  thl_guard(s, 0, "throttled", "temperature 85.0 C, max_temperature_c 80");
  ck_assert_ptr_nonnull(strstr(td_stderr(&d), "device fk0 throttled: "
                               "temperature 85.0 C"));
  unsigned long long h0 = thl_num(p, "wavedd_hashes_total{device=\"fk0\"}");
  uint64_t both = thl_job(s, 2, 1u << 18, NULL, "fk0,cpu0");
  uint64_t held = thl_job(s, 3, 4096, "fk0", NULL);
  thl_job_done(s, both, 1u << 18);  /* cpu0 ran it all; fk0's share ended */
  p = thl_wait("wavedd_device_temperature_celsius{device=\"fk0\"} 85\n", NULL);
  ck_assert_uint_eq(thl_num(p, "wavedd_hashes_total{device=\"fk0\"}"), h0);
  ck_assert_uint_eq(thl_done(s, held), 0);
  /* the held job says what holds it: its poll, `jobs` and its JSON */
  Wave__V1__Response *jr = td_job(s, held, 0, 0);
  ck_assert_int_eq(jr->job->state, WAVE__V1__JOB_STATE__QUEUED);
  ck_assert_str_eq(jr->job->held, "fk0 throttled: temperature 85.0 C, "
                   "max_temperature_c 80 (resumes at 70)");
  wave__v1__response__free_unpacked(jr, NULL);
  const char *o = thl_ctl(&d, "jobs");
  ck_assert_msg(strstr(o, " queued ") != NULL &&
                strstr(o, "  held: fk0 throttled: temperature 85.0 C") != NULL,
                "%s", o);
  o = thl_ctl(&d, "jobs --json");
  ck_assert_msg(strstr(o, "\"held\": \"fk0 throttled: temperature 85.0 C")
                != NULL, "%s", o);
  o = thl_ctl(&d, "status");
  ck_assert_msg(strstr(o, "  state      throttled: temperature 85.0 C") != NULL,
                "%s", o);
  o = thl_ctl(&d, "status --json");
  ck_assert_ptr_nonnull(strstr(o, "\"guard\": {\"state\": \"throttled\""));

  /* between resume and max: still held */
  td_write(feed, "temp_c 75\npower_w 100\n");
  thl_wait("wavedd_device_temperature_celsius{device=\"fk0\"} 75\n", NULL);
  thl_guard(s, 0, "throttled", "temperature 75.0 C");
  ck_assert_uint_eq(thl_done(s, held), 0);
  /* at resume_temperature_c: let go, and the waiting job runs */
  td_write(feed, "temp_c 70\npower_w 100\n");
  thl_wait(TH_GUARD("fk0", "ok"), NULL);
  thl_job_done(s, held, 4096);
  jr = td_job(s, held, 0, 0);
  ck_assert_str_eq(jr->job->held, "");  /* done: nothing holds it */
  wave__v1__response__free_unpacked(jr, NULL);
  ck_assert_ptr_nonnull(strstr(td_stderr(&d), "device fk0 resumed"));
  /* the series counts fk0's pieces (it stood still above), once the loop
   * renders a page after the job (once a second) */
  for (int i = 0; i < 600 && thl_num(thl_page(), "wavedd_hashes_total{device="
                                    "\"fk0\"}") < h0 + 4096; i++)
    thl_nap();
  ck_assert_uint_ge(thl_num(thl_page(), "wavedd_hashes_total{device=\"fk0\"}"),
                    h0 + 4096);

  /* the power guard */
  td_write(feed, "temp_c 50\npower_w 310\n");
  thl_wait(TH_GUARD("fk0", "throttled"), NULL);
  thl_guard(s, 0, "throttled", "power 310.0 W, max_power_w 300");
  td_write(feed, "temp_c 50\npower_w 120\n");
  p = thl_wait(TH_GUARD("fk0", "ok"), NULL);
  ck_assert_ptr_nonnull(strstr(p, "wavedd_device_guard_throttles_total{"
                               "device=\"fk0\"} 2\n"));

  /* a reload's limits are judged at once on the last reading (50 C) */
  snprintf(text, sizeof text, TH_CFG, d.ipc, thl_base,
           getenv("WAVE_SOURCE_DIR"), feed, 45u, 40u);
  td_write(d.cfg, text);
  kill(d.pid, SIGHUP);
  thl_wait(TH_GUARD("fk0", "throttled"), NULL);
  Wave__V1__Response *r = thl_status(s);
  ck_assert_uint_eq(r->status->devices[0]->max_temperature_c, 45);
  ck_assert_uint_eq(r->status->devices[0]->resume_temperature_c, 40);
  wave__v1__response__free_unpacked(r, NULL);

  /* no reading: nothing changes, and it says so */
  ck_assert_int_eq(unlink(feed), 0);
  thl_wait("health_source{device=\"fk0\",source=\"none\"} 1\n", NULL);
  thl_guard(s, 0, "throttled", "no temperature since");
  nng_close(s);
  td_stop_ok(&d);
}
END_TEST

/* A reduction of 1..4 (sum 10), device NULL: the daemon picks; run on a
 * thread of its own (the fake devices hold reductions: a test sends
 * several at once, each on its socket). */
typedef struct thl_red {
  nng_socket s;
  const char *device;
  Wave__V1__Response *r;
  pthread_t t;
} thl_red;

static void *thl_red_main(void *arg)
{
  thl_red *c = arg;
  td_chunk in = {(uint32_t[4]){1, 2, 3, 4}, 16};
  c->r = td_reduce(c->s, 7, WAVE__V1__DTYPE__U32, WAVE__V1__OP__SUM, &in, 1,
                   NULL, 0, c->device);
  return NULL;
}

static void thl_red_start(thl_red *c, const char *url, const char *device)
{
  c->s = td_dial(url);
  c->device = device;
  c->r = NULL;
  ck_assert_int_eq(pthread_create(&c->t, NULL, thl_red_main, c), 0);
}

/* Its answer: the sum, on device `dev`. */
static void thl_red_end(thl_red *c, const char *dev)
{
  ck_assert_int_eq(pthread_join(c->t, NULL), 0);
  ck_assert_int_eq(c->r->body_case, WAVE__V1__RESPONSE__BODY_REDUCE);
  ck_assert_uint_eq(c->r->reduce->bits[0], 10);
  ck_assert_str_eq(c->r->reduce->device, dev);
  wave__v1__response__free_unpacked(c->r, NULL);
  nng_close(c->s);
}

/* Until the log holds needle. */
static void thl_log(td_daemon *d, const char *needle)
{
  for (int i = 0; i < 600 && strstr(td_stderr(d), needle) == NULL; i++)
    thl_nap();
  ck_assert_msg(strstr(td_stderr(d), needle) != NULL, "no '%s' in:\n%s",
                needle, td_stderr(d));
}

/* fk0's reductions queued now (StatusReply, normal level). */
static unsigned thl_queued(nng_socket s)
{
  Wave__V1__Response *r = td_status(s, 3);
  unsigned n = r->status->devices[0]->queued_normal;
  wave__v1__response__free_unpacked(r, NULL);
  return n;
}

/* A throttled device's queued reductions that named no device move to
 * one that can run them; one that named it waits for it.  Both fake
 * devices hold reductions while HOLD/.reduce exists: one each keeps them
 * busy, then two queue on fk0 (the unnamed one by the pick's tie, config
 * order; the other by name), then fk0 crosses its limit. */
START_TEST(guards_move_queued_reductions)
{
  td_daemon d;
  td_prepare(&d, NULL);
  char feed[200], hold[200], path[300], text[2048];
  snprintf(feed, sizeof feed, "%s/feed", d.dir);
  snprintf(hold, sizeof hold, "%s/hold", d.dir);
  ck_assert_int_eq(mkdir(hold, 0700), 0);
  snprintf(thl_base, sizeof thl_base, "http://127.0.0.1:%d", td_free_port());
  snprintf(text, sizeof text, "listen: [\"%s\"]\nlog_level: info\n"
           "metrics: %s\npacks: {load: []}\ndevices:\n"
           "  - {name: fk0, backend: fake, threads: 1, device: "
           "\"telemetry=%s,hold_prepare=%s\", max_temperature_c: 80, "
           "resume_temperature_c: 70}\n"
           "  - {name: fk1, backend: fake, threads: 1, device: "
           "\"hold_prepare=%s\"}\n", d.ipc, thl_base, feed, hold, hold);
  td_write(d.cfg, text);
  d.fake = 1;
  td_write(feed, "temp_c 50\n");
  ck_assert_msg(td_start(&d) == 0, "%s", td_stderr(&d));
  nng_socket s = td_dial(d.ipc);
  thl_wait(TH_GUARD("fk0", "ok"), NULL);

  snprintf(path, sizeof path, "%s/.reduce", hold);
  td_write(path, "held by test_health\n");
  thl_red busy0, busy1, picked, named;
  thl_red_start(&busy0, d.ipc, "fk0");
  thl_log(&d, "fake fk0: reduction held");
  thl_red_start(&busy1, d.ipc, "fk1");
  thl_log(&d, "fake fk1: reduction held");
  thl_red_start(&picked, d.ipc, NULL);  /* equal loads: fk0, config order */
  for (int i = 0; i < 600 && thl_queued(s) < 1; i++)
    thl_nap();
  thl_red_start(&named, d.ipc, "fk0");
  for (int i = 0; i < 600 && thl_queued(s) < 2; i++)
    thl_nap();
  ck_assert_uint_eq(thl_queued(s), 2);

  /* the crossing reading: the picked one moves to fk1, the named one stays */
  td_write(feed, "temp_c 85\n");
  thl_wait(TH_GUARD("fk0", "throttled"), NULL);
  ck_assert_uint_eq(thl_queued(s), 1);
  ck_assert_ptr_nonnull(strstr(td_stderr(&d), "device fk0 is held: 1 queued "
                               "reduction moved to fk1"));
  ck_assert_int_eq(unlink(path), 0);
  thl_red_end(&busy0, "fk0");  /* began before the reading: it finishes */
  thl_red_end(&busy1, "fk1");
  thl_red_end(&picked, "fk1");
  ck_assert_uint_eq(thl_queued(s), 1);  /* the named one waits for fk0 */
  td_write(feed, "temp_c 70\n");
  thl_wait(TH_GUARD("fk0", "ok"), NULL);
  thl_red_end(&named, "fk0");
  nng_close(s);
  td_stop_ok(&d);
}
END_TEST

/* Write the feed and wait for the page to show it: one new reading (and
 * the watchdog's judgement on it) has been made. */
static const char *thl_reading(const char *feed, unsigned *t)
{
  char text[64], has[96];
  ++*t;
  snprintf(text, sizeof text, "temp_c %u\n", *t);
  snprintf(has, sizeof has, "wavedd_device_temperature_celsius{device="
           "\"fk1\"} %u\n", *t);
  td_write(feed, text);
  return thl_wait(has, NULL);
}

START_TEST(watchdog_degrades_restarts_and_stops)
{
  td_daemon d;
  td_prepare(&d, NULL);
  char feed[200], slow[200], text[2048];
  snprintf(feed, sizeof feed, "%s/feed", d.dir);
  snprintf(slow, sizeof slow, "%s/slow", d.dir);
  snprintf(thl_base, sizeof thl_base, "http://127.0.0.1:%d", td_free_port());
  snprintf(text, sizeof text, "listen: [\"%s\"]\nlog_level: info\n"
           "metrics: %s\npacks: {dir: %s/config/packs, load: [small]}\n"
           "devices:\n  - {name: fk1, backend: fake, threads: 1, "
           "batch: 1024, device: \"telemetry=%s,slow_hash=%s\", "
           "watchdog_min_rate_pct: 20, watchdog_window_s: 2, "
           "watchdog_windows: 1, watchdog_restarts: 1}\n"
           "  - {name: cpu0, backend: cpu, threads: 1, batch: 1024}\n",
           d.ipc, thl_base, getenv("WAVE_SOURCE_DIR"), feed, slow);
  td_write(d.cfg, text);
  d.fake = 1;
  unsigned t = 30;
  td_write(feed, "temp_c 30\n");
  ck_assert_int_eq(td_start(&d), 0);
  nng_socket s = td_dial(d.ipc);
  uint64_t job = thl_job(s, 1, 1ull << 40, NULL, "fk1,cpu0");

  /* its own rate: windows in which it hashed throughout */
  for (int i = 0; i < 3; i++)
    thl_reading(feed, &t);
  ck_assert_ptr_nonnull(strstr(thl_page(), TH_GUARD("fk1", "off")));
  /* a tenth of it: degraded, then restarted once (the cap), then left
   * degraded, its pieces going to cpu0 */
  td_write(slow, "");
  thl_wait(TH_GUARD("fk1", "degraded"), NULL);
  thl_wait("wavedd_device_watchdog_restarts_total{device=\"fk1\"} 1\n", NULL);
  ck_assert_ptr_nonnull(strstr(td_stderr(&d),
                               "device fk1 degraded: hash rate "));
  /* the health thread counts the restart; the device thread says it as
   * it next wakes, after the slow step it is in: readings until then */
  for (int i = 0; i < 40 && !strstr(td_stderr(&d), "device fk1: closing "
                                    "and opening it again"); i++)
    thl_reading(feed, &t);
  ck_assert_ptr_nonnull(strstr(td_stderr(&d), "device fk1: closing and "
                               "opening it again (the rate watchdog)"));
  for (int i = 0; i < 40 && !strstr(td_stderr(&d), "the cap: left degraded");
       i++)
    thl_reading(feed, &t);
  ck_assert_ptr_nonnull(strstr(td_stderr(&d), "device fk1: hash rate "));
  thl_guard(s, 0, "degraded", "1 restarts, the cap: left degraded");
  /* a piece fk1 was in when it was left degraded may still end (it is
   * not a new one): wait for its count to stand for one reading, then no
   * reading may move it */
  const char *p = thl_reading(feed, &t);
  unsigned long long h1 = thl_num(p, "wavedd_hashes_total{device=\"fk1\"}");
  for (int i = 0; i < 40; i++) {
    unsigned long long h = thl_num(p = thl_reading(feed, &t),
                                   "wavedd_hashes_total{device=\"fk1\"}");
    if (h == h1)
      break;
    h1 = h;
  }
  uint64_t done1 = thl_done(s, job);
  p = thl_reading(feed, &t);
  ck_assert_uint_eq(thl_num(p, "wavedd_hashes_total{device=\"fk1\"}"), h1);
  ck_assert_uint_gt(thl_done(s, job), done1);  /* cpu0 goes on */
  ck_assert_ptr_nonnull(strstr(p, "wavedd_device_watchdog_restarts_total{"
                               "device=\"fk1\"} 1\n"));
  Wave__V1__Response *r = thl_status(s);
  ck_assert_uint_eq(r->status->devices[0]->watchdog_restarts, 1);
  wave__v1__response__free_unpacked(r, NULL);
  const char *o = thl_ctl(&d, "status");
  ck_assert_msg(strstr(o, "  state      degraded: hash rate ") != NULL, "%s",
                o);
  wave__v1__response__free_unpacked(td_job(s, job, 0, 1), NULL);
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
  tcase_add_test(tc, guards_hold_and_let_go);
  tcase_add_test(tc, guards_move_queued_reductions);
  tcase_add_test(tc, watchdog_degrades_restarts_and_stops);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
