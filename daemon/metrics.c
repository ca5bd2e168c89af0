/* metrics.c - see metrics.h.  What the page holds (docs/metrics.md):
 * per device, jobs by kind and outcome, job errors by code, queue depth and
 * capacity, rows and bytes reduced, nonces hashed and the hash rate over
 * 10 s / 60 s / 15 min, the device's fault, each pack's self-check state;
 * daemon-wide, request errors by code, reloads, uptime, open files and
 * their limit, connections open per listener, connections the guard
 * closed.
 *
 * Every connection ends: nng 1.5.2's HTTP server keeps a connection that
 * sends no request for good and has no cap on their number (no option for
 * either), so the port is handed to connguard.c, which closes connections
 * past limits.metrics_max_age_ms and beyond limits.metrics_connections.
 * The page is served with "Connection: close": a scrape's connection ends
 * with its reply, and only a peer that holds one open meets the guard.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <nng/nng.h>
#include <nng/supplemental/http/http.h>

#include "daemon/net/connguard.h"
#include "daemon/exec/device.h"
#include "daemon/exec/health.h"
#include "daemon/net/listen.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/procinfo.h"
#include "workers/health.h"
#include "daemon/stats.h"
#include "core/base.h"

#define MT_PERIOD_MS 1000
/* /livez fails once the loop has not rendered a page for this long: the
 * timer fires each second, so ten missed turns mean a stuck loop */
#define MT_STALL_NS (10ull * 1000000000ull)

struct wd_metrics {
  wd_server *srv;
  uv_timer_t timer;
  uint64_t t0;
  nng_url *url;
  nng_http_server *http;
  int started, watching;
  char bound[300];
  int port;               /* given to the guard */
  pthread_mutex_t mu;     /* page, len, beat, ready, why */
  char *page;
  size_t len;
  uint64_t beat;          /* uv_hrtime of the loop's last render */
  int ready;              /* wd_server_readiness, as of the last move */
  char why[160];
};

/* ---- the HTTP side (nng's threads) ---------------------------------------- */

static void mt_serve(nng_aio *aio)
{
  nng_http_handler *h = nng_aio_get_input(aio, 1);
  wd_metrics *m = nng_http_handler_get_data(h);
  nng_http_res *res = NULL;
  int rv = nng_http_res_alloc(&res);
  if (rv == 0) {
    pthread_mutex_lock(&m->mu);
    rv = nng_http_res_copy_data(res, m->page ? m->page : "", m->len);
    pthread_mutex_unlock(&m->mu);
  }
  if (rv == 0)
    rv = nng_http_res_set_header(res, "Content-Type",
                                 "text/plain; version=0.0.4; charset=utf-8");
  if (rv == 0)  /* nng then closes the connection once the reply is out */
    rv = nng_http_res_set_header(res, "Connection", "close");
  if (rv != 0) {
    if (res != NULL)
      nng_http_res_free(res);
    nng_aio_finish(aio, rv);
    return;
  }
  nng_aio_set_output(aio, 0, res);
  nng_aio_finish(aio, 0);
}

/* A short text/plain answer with status code. */
static void mt_answer(nng_aio *aio, uint16_t code, const char *text)
{
  nng_http_res *res = NULL;
  int rv = nng_http_res_alloc(&res);
  if (rv == 0)
    rv = nng_http_res_set_status(res, code);
  if (rv == 0)
    rv = nng_http_res_copy_data(res, text, strlen(text));
  if (rv == 0)
    rv = nng_http_res_set_header(res, "Content-Type",
                                 "text/plain; charset=utf-8");
  if (rv == 0)
    rv = nng_http_res_set_header(res, "Connection", "close");
  if (rv != 0) {
    if (res != NULL)
      nng_http_res_free(res);
    nng_aio_finish(aio, rv);
    return;
  }
  nng_aio_set_output(aio, 0, res);
  nng_aio_finish(aio, 0);
}

/* /livez: 200 while the loop turns (it renders a page each second). */
static void mt_livez(nng_aio *aio)
{
  nng_http_handler *h = nng_aio_get_input(aio, 1);
  wd_metrics *m = nng_http_handler_get_data(h);
  pthread_mutex_lock(&m->mu);
  uint64_t beat = m->beat;
  pthread_mutex_unlock(&m->mu);
  uint64_t now = uv_hrtime();
  if (now - beat < MT_STALL_NS) {
    mt_answer(aio, 200, "ok\n");
    return;
  }
  char text[96];
  snprintf(text, sizeof text, "not live: the loop has not turned for %.1f s\n",
           (double)(now - beat) * 1e-9);
  mt_answer(aio, 503, text);
}

/* /readyz: 200 once ready, else 503 and the one-line reason. */
static void mt_readyz(nng_aio *aio)
{
  nng_http_handler *h = nng_aio_get_input(aio, 1);
  wd_metrics *m = nng_http_handler_get_data(h);
  char text[200];
  pthread_mutex_lock(&m->mu);
  int ready = m->ready;
  snprintf(text, sizeof text, ready ? "%s\n" : "not ready: %s\n", m->why);
  pthread_mutex_unlock(&m->mu);
  mt_answer(aio, ready ? 200 : 503, text);
}

/* The loop: readiness now, for /readyz (at each state move and tick). */
static void mt_probe_update(void *arg)
{
  wd_metrics *m = arg;
  char why[sizeof m->why];
  int ready = wd_server_readiness(m->srv, why, sizeof why);
  pthread_mutex_lock(&m->mu);
  m->ready = ready;
  memcpy(m->why, why, sizeof why);
  pthread_mutex_unlock(&m->mu);
}

/* ---- the page (loop) ------------------------------------------------------- */

static void mt_help(FILE *f, const char *name, const char *type,
                    const char *help)
{
  fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value: backslash, quote and newline escaped. */
static void mt_label(FILE *f, const char *v)
{
  fputc('"', f);
  for (; v != NULL && *v; v++) {
    if (*v == '\\' || *v == '"')
      fputc('\\', f);
    if (*v == '\n') {
      fputs("\\n", f);
      continue;
    }
    fputc(*v, f);
  }
  fputc('"', f);
}

static void mt_dev(FILE *f, const char *metric, const char *dev)
{
  fprintf(f, "%s{device=", metric);
  mt_label(f, dev);
}

/* The job-duration histogram: by device, kind and phase.  A transfer
 * series is written once it has an observation: only reductions on a
 * device that moves its input have one (stats.h), so a CPU device and the
 * hash kind never show it, rather than show an empty one forever. */
static void mt_hist(FILE *f, const wd_stats_dev *sd, size_t ns)
{
  static const double bounds[WD_STATS_NB] = WD_STATS_BOUNDS;
  const char *name = "wavedd_job_duration_seconds";
  mt_help(f, name, "histogram",
          "job durations by device, kind and phase: queue (submitted to "
          "its first step), transfer (a reduction's input copied to a "
          "device that does not read host memory, a part of compute), "
          "compute (its steps on the device, transfer included), total "
          "(submitted to ended)");
  for (size_t i = 0; i < ns; i++)
    for (int k = 0; k < WD_KIND_N; k++)
      for (int p = 0; p < WD_PH_N; p++) {
        if (p == WD_PH_TRANSFER && sd[i].hist[k][p][WD_STATS_NB] == 0)
          continue;
        char lab[96];
        snprintf(lab, sizeof lab, ",kind=\"%s\",phase=\"%s\"",
                 wd_stats_kind_name(k), wd_stats_phase_name(p));
        const uint64_t *h = sd[i].hist[k][p];
        for (size_t b = 0; b <= WD_STATS_NB; b++) {
          mt_dev(f, "wavedd_job_duration_seconds_bucket", sd[i].name);
          if (b < WD_STATS_NB)
            fprintf(f, "%s,le=\"%g\"} %" PRIu64 "\n", lab, bounds[b], h[b]);
          else
            fprintf(f, "%s,le=\"+Inf\"} %" PRIu64 "\n", lab, h[b]);
        }
        mt_dev(f, "wavedd_job_duration_seconds_sum", sd[i].name);
        fprintf(f, "%s} %.9g\n", lab, sd[i].hist_sum[k][p]);
        mt_dev(f, "wavedd_job_duration_seconds_count", sd[i].name);
        fprintf(f, "%s} %" PRIu64 "\n", lab, h[WD_STATS_NB]);
      }
}

/* Per device: finished jobs, errors, rows, bytes, hashes, hash rates (the
 * counters of stats.c). */
static void mt_jobs(FILE *f, const wd_stats_dev *sd, size_t ns)
{
  static const char *const windows[WD_STATS_NWIN] = {"10s", "60s", "15m"};
  mt_help(f, "wavedd_jobs_total", "counter",
          "finished jobs by device, kind and outcome");
  for (size_t i = 0; i < ns; i++)
    for (int k = 0; k < WD_KIND_N; k++)
      for (int o = 0; o < WD_OUT_N; o++) {
        mt_dev(f, "wavedd_jobs_total", sd[i].name);
        fprintf(f, ",kind=\"%s\",outcome=\"%s\"} %" PRIu64 "\n",
                wd_stats_kind_name(k), wd_stats_outcome_name(o),
                sd[i].jobs[k][o]);
      }
  mt_help(f, "wavedd_job_errors_total", "counter",
          "failed or cancelled jobs by device and error code");
  for (size_t i = 0; i < ns; i++)
    for (size_t c = 1; c < WD_STATS_NCODES; c++)
      if (sd[i].errors[c] > 0) {
        mt_dev(f, "wavedd_job_errors_total", sd[i].name);
        fprintf(f, ",code=\"%s\"} %" PRIu64 "\n",
                wave_errname((int)c), sd[i].errors[c]);
      }
  mt_help(f, "wavedd_rows_reduced_total", "counter",
          "rows of finished reductions");
  for (size_t i = 0; i < ns; i++) {
    mt_dev(f, "wavedd_rows_reduced_total", sd[i].name);
    fprintf(f, "} %" PRIu64 "\n", sd[i].rows);
  }
  mt_help(f, "wavedd_bytes_reduced_total", "counter",
          "input bytes of finished reductions");
  for (size_t i = 0; i < ns; i++) {
    mt_dev(f, "wavedd_bytes_reduced_total", sd[i].name);
    fprintf(f, "} %" PRIu64 "\n", sd[i].bytes);
  }
  mt_help(f, "wavedd_hashes_total", "counter", "nonces hashed");
  for (size_t i = 0; i < ns; i++) {
    mt_dev(f, "wavedd_hashes_total", sd[i].name);
    fprintf(f, "} %" PRIu64 "\n", sd[i].hashes);
  }
  mt_help(f, "wavedd_hash_rate", "gauge",
          "nonces hashed per second over the window");
  for (size_t i = 0; i < ns; i++)
    for (int w = 0; w < WD_STATS_NWIN; w++) {
      mt_dev(f, "wavedd_hash_rate", sd[i].name);
      fprintf(f, ",window=\"%s\"} %.17g\n", windows[w], sd[i].rate[w]);
    }
  mt_hist(f, sd, ns);
}

/* Per device now: queues, faults, pack self-checks. */
static void mt_devices(wd_metrics *m, FILE *f)
{
  static const int pack_states[] = {WD_CHECK_NONE, WD_CHECK_PENDING,
                                    WD_CHECK_OK, WD_CHECK_FAILED};
  size_t nd = 0;
  wd_device *const *devs = wd_server_devices(m->srv, &nd);
  const wd_packs *packs = wd_server_packs(m->srv);
  mt_help(f, "wavedd_queue_depth", "gauge",
          "jobs queued or running on the device, by queue");
  wd_device_snap *snap = calloc(nd + 1, sizeof *snap);
  for (size_t i = 0; snap != NULL && i < nd; i++) {
    wd_device_snapshot(devs[i], &snap[i]);
    mt_dev(f, "wavedd_queue_depth", wd_device_name(devs[i]));
    fprintf(f, ",queue=\"reduce\"} %u\n", snap[i].queued);
    mt_dev(f, "wavedd_queue_depth", wd_device_name(devs[i]));
    fprintf(f, ",queue=\"hash\"} %u\n", wd_device_long_load(devs[i]));
  }
  mt_help(f, "wavedd_queue_capacity", "gauge",
          "reductions the device queue holds (queue_depth)");
  for (size_t i = 0; snap != NULL && i < nd; i++) {
    mt_dev(f, "wavedd_queue_capacity", wd_device_name(devs[i]));
    fprintf(f, "} %u\n", snap[i].capacity);
  }
  mt_help(f, "wavedd_device_faulted", "gauge",
          "1 when the device is faulted and serves nothing");
  for (size_t i = 0; snap != NULL && i < nd; i++) {
    mt_dev(f, "wavedd_device_faulted", wd_device_name(devs[i]));
    fprintf(f, "} %d\n", snap[i].faulted ? 1 : 0);
  }
  mt_help(f, "wavedd_deadline_missed_total", "counter",
          "jobs that waited past their deadline and never ran");
  for (size_t i = 0; snap != NULL && i < nd; i++) {
    mt_dev(f, "wavedd_deadline_missed_total", wd_device_name(devs[i]));
    fprintf(f, "} %" PRIu64 "\n", snap[i].deadline);
  }
  mt_help(f, "wavedd_queued_jobs", "gauge",
          "jobs queued on the device, by priority level");
  for (size_t i = 0; snap != NULL && i < nd; i++)
    for (int l = 0; l < WD_LEVEL_N; l++) {
      mt_dev(f, "wavedd_queued_jobs", wd_device_name(devs[i]));
      fprintf(f, ",priority=\"%s\"} %u\n", wd_level_name(l),
              snap[i].level_queued[l]);
    }
  mt_help(f, "wavedd_device_busy_seconds_total", "counter",
          "seconds the device ran jobs (their steps), all told");
  for (size_t i = 0; snap != NULL && i < nd; i++) {
    mt_dev(f, "wavedd_device_busy_seconds_total", wd_device_name(devs[i]));
    fprintf(f, "} %.6f\n", snap[i].busy_s);
  }
  free(snap);
  mt_help(f, "wavedd_pack_state", "gauge",
          "known-answer self-check of each pack on each device: 1 for the "
          "current state");
  for (size_t i = 0; i < nd; i++)
    for (size_t k = 0; k < packs->n; k++) {
      wd_pack_state ps = {0};
      wd_packstate_get(wd_server_packstate(m->srv), wd_device_index(devs[i]),
                       wd_packs_slot(packs, k), &ps);
      for (size_t x = 0; x < sizeof pack_states / sizeof pack_states[0];
           x++) {
        mt_dev(f, "wavedd_pack_state", wd_device_name(devs[i]));
        fputs(",pack=", f);
        mt_label(f, wv_pack_name(packs->list[k]));
        fprintf(f, ",state=\"%s\"} %d\n", wd_check_state_name(pack_states[x]),
                ps.state == pack_states[x]);
      }
    }
}

/* The standard process_* families (procinfo.h). */
static void mt_process(FILE *f)
{
  wd_procinfo p;
  if (wd_procinfo_read(&p) != 0)
    return;
  mt_help(f, "process_cpu_seconds_total", "counter",
          "user and system CPU time spent, seconds");
  fprintf(f, "process_cpu_seconds_total %.2f\n", p.cpu_seconds);
  mt_help(f, "process_resident_memory_bytes", "gauge",
          "resident memory size, bytes");
  fprintf(f, "process_resident_memory_bytes %" PRIu64 "\n", p.resident_bytes);
  mt_help(f, "process_virtual_memory_bytes", "gauge",
          "virtual memory size, bytes");
  fprintf(f, "process_virtual_memory_bytes %" PRIu64 "\n", p.virtual_bytes);
  mt_help(f, "process_start_time_seconds", "gauge",
          "start time of the process since the epoch, seconds");
  fprintf(f, "process_start_time_seconds %.2f\n", p.start_time);
  if (p.open_fds >= 0) {
    mt_help(f, "process_open_fds", "gauge", "open file descriptors");
    fprintf(f, "process_open_fds %" PRId64 "\n", p.open_fds);
  }
  mt_help(f, "process_max_fds", "gauge",
          "the limit of open file descriptors (soft RLIMIT_NOFILE)");
  fprintf(f, "process_max_fds %" PRIu64 "\n", p.max_fds);
}

/* One health gauge per device that read it (absent is not zero). */
static void mt_hgauge(FILE *f, const wv_health *h, wd_device *const *devs,
                      size_t nd, unsigned bit, const char *name,
                      const char *help, double (*get)(const wv_health *))
{
  mt_help(f, name, "gauge", help);
  for (size_t i = 0; i < nd; i++)
    if (h[i].have & bit) {
      mt_dev(f, name, wd_device_name(devs[i]));
      fprintf(f, "} %.17g\n", get(&h[i]));
    }
}

static double mt_h_temp(const wv_health *h) { return h->temp_c; }
static double mt_h_power(const wv_health *h) { return h->power_w; }
static double mt_h_limit(const wv_health *h) { return h->power_limit_w; }
static double mt_h_used(const wv_health *h) { return (double)h->mem_used; }
static double mt_h_total(const wv_health *h) { return (double)h->mem_total; }
static double mt_h_util(const wv_health *h) { return h->util_pct / 100.0; }

/* Device health (exec/health.h's newest readings). */
static void mt_health(wd_metrics *m, FILE *f)
{
  size_t nd = 0;
  wd_device *const *devs = wd_server_devices(m->srv, &nd);
  wv_health *h = calloc(nd + 1, sizeof *h);
  if (h == NULL)
    return;
  for (size_t i = 0; i < nd; i++)
    wd_server_health(m->srv, i, &h[i]);
  mt_help(f, "wavedd_device_health_source", "gauge",
          "where the device's health is read from (nvml, amdgpu, feed; "
          "none: not read, and no health series for it)");
  for (size_t i = 0; i < nd; i++) {
    mt_dev(f, "wavedd_device_health_source", wd_device_name(devs[i]));
    fputs(",source=", f);
    mt_label(f, h[i].source[0] ? h[i].source : "none");
    fputs("} 1\n", f);
  }
  mt_hgauge(f, h, devs, nd, WV_HF_TEMP, "wavedd_device_temperature_celsius",
            "GPU temperature", mt_h_temp);
  mt_hgauge(f, h, devs, nd, WV_HF_POWER, "wavedd_device_power_watts",
            "power draw now", mt_h_power);
  mt_hgauge(f, h, devs, nd, WV_HF_POWER_LIMIT,
            "wavedd_device_power_limit_watts", "the enforced power limit",
            mt_h_limit);
  mt_help(f, "wavedd_device_clock_hertz", "gauge",
          "clocks now: the SM (shader) clock and the memory clock");
  for (size_t i = 0; i < nd; i++) {
    if (h[i].have & WV_HF_SM_CLOCK) {
      mt_dev(f, "wavedd_device_clock_hertz", wd_device_name(devs[i]));
      fprintf(f, ",clock=\"sm\"} %.17g\n", h[i].sm_mhz * 1e6);
    }
    if (h[i].have & WV_HF_MEM_CLOCK) {
      mt_dev(f, "wavedd_device_clock_hertz", wd_device_name(devs[i]));
      fprintf(f, ",clock=\"memory\"} %.17g\n", h[i].mem_mhz * 1e6);
    }
  }
  mt_help(f, "wavedd_device_throttled", "gauge",
          "1 for each clock throttle reason active now (NVML's reasons)");
  for (size_t i = 0; i < nd; i++)
    if (h[i].have & WV_HF_THROTTLE) {
#define X(bit, name)                                                        \
  mt_dev(f, "wavedd_device_throttled", wd_device_name(devs[i]));           \
  fprintf(f, ",reason=\"%s\"} %d\n", name, (h[i].throttle & (bit)) != 0);
      WV_THROTTLE_REASONS
#undef X
    }
  mt_hgauge(f, h, devs, nd, WV_HF_MEM_USED, "wavedd_device_memory_used_bytes",
            "device memory in use", mt_h_used);
  mt_hgauge(f, h, devs, nd, WV_HF_MEM_TOTAL,
            "wavedd_device_memory_total_bytes", "device memory in all",
            mt_h_total);
  mt_hgauge(f, h, devs, nd, WV_HF_UTIL, "wavedd_device_utilization_ratio",
            "the driver's busy fraction over its last sample period (0-1)",
            mt_h_util);
  free(h);
}

/* The guards (exec/health.h): one series per state, 1 for the state the
 * device is in; the times it went throttled. */
static void mt_guards(wd_metrics *m, FILE *f)
{
  static const char *const states[] = {"off", "inactive", "ok",
                                       "throttled", "degraded"};
  size_t nd = 0;
  wd_device *const *devs = wd_server_devices(m->srv, &nd);
  wd_guard_view *g = calloc(nd + 1, sizeof *g);
  if (g == NULL)
    return;
  for (size_t i = 0; i < nd; i++)
    wd_server_guards(m->srv, i, &g[i]);
  mt_help(f, "wavedd_device_guard", "gauge",
          "the device's guards: 1 for the state it is in (throttled: it "
          "takes no new work; degraded: the same, by the rate watchdog; "
          "inactive: no reading to judge)");
  for (size_t i = 0; i < nd; i++)
    for (size_t k = 0; k < sizeof states / sizeof states[0]; k++) {
      mt_dev(f, "wavedd_device_guard", wd_device_name(devs[i]));
      fprintf(f, ",state=\"%s\"} %d\n", states[k],
              strcmp(g[i].state, states[k]) == 0);
    }
  mt_help(f, "wavedd_device_guard_throttles_total", "counter",
          "times a guard throttled the device");
  for (size_t i = 0; i < nd; i++) {
    mt_dev(f, "wavedd_device_guard_throttles_total", wd_device_name(devs[i]));
    fprintf(f, "} %" PRIu64 "\n", g[i].throttles);
  }
  mt_help(f, "wavedd_device_watchdog_restarts_total", "counter",
          "times the rate watchdog closed and opened the device again");
  for (size_t i = 0; i < nd; i++) {
    mt_dev(f, "wavedd_device_watchdog_restarts_total",
           wd_device_name(devs[i]));
    fprintf(f, "} %" PRIu64 "\n", g[i].restarts);
  }
  free(g);
}

/* A counter by error code, the codes never seen left out. */
static void mt_codes(FILE *f, const char *name, const char *help,
                     const uint64_t n[WD_STATS_NCODES])
{
  mt_help(f, name, "counter", help);
  for (size_t c = 1; c < WD_STATS_NCODES; c++)
    if (n[c] > 0)
      fprintf(f, "%s{code=\"%s\"} %" PRIu64 "\n", name,
              wave_errname((int)c), n[c]);
}

/* The request histogram: every answered request by stage, from nng
 * handing it over to its reply leaving (stats.h, net/req.h). */
static void mt_requests(FILE *f)
{
  static const double bounds[WD_STATS_NB] = WD_STATS_BOUNDS;
  uint64_t h[WD_RS_N][WD_STATS_NB + 1];
  double sum[WD_RS_N];
  wd_stats_requests(h, sum);
  mt_help(f, "wavedd_request_duration_seconds", "histogram",
          "answered requests by stage: decode_wait (for a decode thread), "
          "decode, loop_wait (decoded, for the loop), serve (on the loop "
          "until the reply, its job included), total (nng handed it over "
          "to its reply)");
  for (int i = 0; i < WD_RS_N; i++) {
    const char *st = wd_stats_stage_name(i);
    for (size_t b = 0; b <= WD_STATS_NB; b++) {
      fprintf(f, "wavedd_request_duration_seconds_bucket{stage=\"%s\",", st);
      if (b < WD_STATS_NB)
        fprintf(f, "le=\"%g\"} %" PRIu64 "\n", bounds[b], h[i][b]);
      else
        fprintf(f, "le=\"+Inf\"} %" PRIu64 "\n", h[i][b]);
    }
    fprintf(f, "wavedd_request_duration_seconds_sum{stage=\"%s\"} %.9g\n",
            st, sum[i]);
    fprintf(f, "wavedd_request_duration_seconds_count{stage=\"%s\"} %" PRIu64
            "\n", st, h[i][WD_STATS_NB]);
  }
}

/* The daemon's own: error replies, reloads, descriptors, the guard. */
static void mt_daemon(wd_metrics *m, FILE *f)
{
  uint64_t req[WD_STATS_NCODES];
  wd_stats_request_errors(req);
  mt_codes(f, "wavedd_error_replies_total",
           "replies that were errors, by code (job failures included)", req);
  wd_stats_refusals(req);
  mt_codes(f, "wavedd_requests_refused_total",
           "requests refused before any device ran them, by code", req);
  mt_requests(f);
  mt_process(f);
  /* per listener URL, as bound; their sum is the daemon's */
  size_t nl;
  const wd_listeners *ls = wd_server_listeners(m->srv);
  char **urls = wd_listeners_urls(ls, &nl);
  mt_help(f, "wavedd_connections", "gauge",
          "client connections open now, by listener URL (as bound)");
  for (size_t i = 0; i < nl; i++) {
    fputs("wavedd_connections{listener=", f);
    mt_label(f, urls[i]);
    fprintf(f, "} %" PRIu64 "\n", wd_listeners_conns(ls, i));
  }
  uint64_t rok, rfail;
  wd_stats_reloads(&rok, &rfail);
  mt_help(f, "wavedd_reloads_total", "counter",
          "configuration reloads (SIGHUP) by result");
  fprintf(f, "wavedd_reloads_total{result=\"ok\"} %" PRIu64 "\n", rok);
  fprintf(f, "wavedd_reloads_total{result=\"failed\"} %" PRIu64 "\n", rfail);
  wd_guard *g = wd_server_guard(m->srv);
  mt_help(f, "wavedd_max_files", "gauge",
          "the daemon's open-files limit (soft RLIMIT_NOFILE)");
  fprintf(f, "wavedd_max_files %" PRIu64 "\n", wd_max_files());
  uint64_t of = wd_guard_open_files(g);
  if (of != (uint64_t)-1) {
    mt_help(f, "wavedd_open_files", "gauge", "descriptors the daemon holds");
    fprintf(f, "wavedd_open_files %" PRIu64 "\n", of);
  }
  mt_help(f, "wavedd_guard_closed_total", "counter",
          "connections closed by the guard: TLS ones not a pipe in time, "
          "metrics ones past their age or over the cap");
  fprintf(f, "wavedd_guard_closed_total{kind=\"tls\"} %" PRIu64 "\n",
          wd_guard_closed(g, WD_GUARD_TLS));
  fprintf(f, "wavedd_guard_closed_total{kind=\"metrics\"} %" PRIu64 "\n",
          wd_guard_closed(g, WD_GUARD_METRICS));
}

static void mt_page(wd_metrics *m, FILE *f)
{
  size_t ns = wd_stats_count();
  wd_stats_dev *sd = calloc(ns + 1, sizeof *sd);
  if (sd == NULL)
    return;
  for (size_t i = 0; i < ns; i++)
    wd_stats_get(i, &sd[i]);

  mt_help(f, "wavedd_info", "gauge", "wavedd's version (always 1)");
  fprintf(f, "wavedd_info{version=\"%s\"} 1\n", WAVE_VERSION);
  mt_help(f, "wavedd_ready", "gauge",
          "1 when ready (the rule of /readyz, READY=1 and status --probe)");
  char why[160];
  fprintf(f, "wavedd_ready %d\n", wd_server_readiness(m->srv, why, sizeof why));
  mt_help(f, "wavedd_uptime_seconds", "gauge", "seconds since start-up");
  fprintf(f, "wavedd_uptime_seconds %.3f\n",
          (double)(uv_hrtime() - m->t0) * 1e-9);

  mt_jobs(f, sd, ns);
  mt_devices(m, f);
  mt_health(m, f);
  mt_guards(m, f);
  mt_daemon(m, f);
  free(sd);
}

void wd_metrics_render(wd_metrics *m)
{
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (f != NULL)
    mt_page(m, f);
  if (f == NULL || fclose(f) != 0) {
    free(buf);
    buf = NULL;
  }
  /* after the page's snapshot, before the page is out: a fault the page
   * shows, /readyz has seen */
  mt_probe_update(m);
  pthread_mutex_lock(&m->mu);
  m->beat = uv_hrtime();
  if (buf == NULL) {
    pthread_mutex_unlock(&m->mu);
    return;
  }
  char *old = m->page;
  m->page = buf;
  m->len = len;
  pthread_mutex_unlock(&m->mu);
  free(old);
}

static void mt_tick(uv_timer_t *t)
{
  wd_metrics *m = t->data;
  wd_metrics_render(m);
}

/* ---- start and stop --------------------------------------------------------- */

static void mt_bound(wd_metrics *m)
{
  nng_sockaddr sa;
  char host[INET6_ADDRSTRLEN + 2] = "";
  unsigned port = 0;
  if (nng_http_server_get_addr(m->http, &sa) == 0) {
    if (sa.s_family == NNG_AF_INET) {
      inet_ntop(AF_INET, &sa.s_in.sa_addr, host, sizeof host);
      port = ntohs(sa.s_in.sa_port);
    } else if (sa.s_family == NNG_AF_INET6) {
      char a[INET6_ADDRSTRLEN] = "";
      inet_ntop(AF_INET6, sa.s_in6.sa_addr, a, sizeof a);
      snprintf(host, sizeof host, "[%s]", a);
      port = ntohs(sa.s_in6.sa_port);
    }
  }
  m->port = (int)port;
  if (port != 0)
    snprintf(m->bound, sizeof m->bound, "http://%s:%u/metrics", host, port);
  else
    snprintf(m->bound, sizeof m->bound, "%s/metrics", m->url->u_rawurl);
}

/* One GET handler on the server; 0 or nng's error. */
static int mt_handler(wd_metrics *m, const char *path, void (*fn)(nng_aio *))
{
  nng_http_handler *h = NULL;
  int rv = nng_http_handler_alloc(&h, path, fn);
  if (rv != 0)
    return rv;
  nng_http_handler_set_method(h, "GET");
  nng_http_handler_set_data(h, m, NULL);
  if ((rv = nng_http_server_add_handler(m->http, h)) != 0)
    nng_http_handler_free(h);
  return rv;
}

static void mt_free(wd_metrics *m)
{
  if (m->http != NULL)
    nng_http_server_release(m->http);
  if (m->url != NULL)
    nng_url_free(m->url);
  pthread_mutex_destroy(&m->mu);
  free(m->page);
  free(m);
}

int wd_metrics_start(uv_loop_t *loop, wd_server *srv, const char *url,
                     wd_metrics **out, wave_error *err)
{
  *out = NULL;
  wd_metrics *m = calloc(1, sizeof *m);
  if (m == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  m->srv = srv;
  m->t0 = uv_hrtime();
  pthread_mutex_init(&m->mu, NULL);
  /* the URL's path is "/metrics" or empty (config.c); serve the host:port */
  char base[300];
  snprintf(base, sizeof base, "%s", url);
  char *path = strstr(base + 7, "/");
  if (path != NULL)
    *path = '\0';
  int rv;
  if ((rv = nng_url_parse(&m->url, base)) != 0 ||
      (rv = nng_http_server_hold(&m->http, m->url)) != 0 ||
      (rv = mt_handler(m, "/metrics", mt_serve)) != 0 ||
      (rv = mt_handler(m, "/livez", mt_livez)) != 0 ||
      (rv = mt_handler(m, "/readyz", mt_readyz)) != 0) {
    mt_free(m);
    return wv_seterr(err, WAVE_EIO, "metrics %s: %s", url, nng_strerror(rv));
  }
  wd_metrics_render(m);  /* the first scrape has a page, the probes a state */
  if (wd_server_watch(srv, mt_probe_update, m) != 0) {
    mt_free(m);
    return wv_seterr(err, WAVE_EIO, "metrics %s: too many pages at once",
                     url);
  }
  m->watching = 1;
  if ((rv = nng_http_server_start(m->http)) != 0) {
    wd_server_unwatch(srv, m);
    mt_free(m);
    return wv_seterr(err, WAVE_EIO, "metrics %s: %s", url, nng_strerror(rv));
  }
  m->started = 1;
  mt_bound(m);
  wd_guard_port(wd_server_guard(srv), WD_GUARD_METRICS, m->port, 1);
  uv_timer_init(loop, &m->timer);
  m->timer.data = m;
  uv_timer_start(&m->timer, mt_tick, MT_PERIOD_MS, MT_PERIOD_MS);
  uv_unref((uv_handle_t *)&m->timer);
  wd_info("metrics on %s", m->bound);
  *out = m;
  return 0;
}

const char *wd_metrics_url(const wd_metrics *m) { return m->bound; }

static void mt_closed(uv_handle_t *h) { mt_free(h->data); }

void wd_metrics_close(wd_metrics *m)
{
  if (m == NULL)
    return;
  if (m->watching)
    wd_server_unwatch(m->srv, m);
  m->watching = 0;
  if (m->started) {
    wd_guard_port(wd_server_guard(m->srv), WD_GUARD_METRICS, m->port, 0);
    nng_http_server_stop(m->http);
  }
  m->started = 0;
  uv_close((uv_handle_t *)&m->timer, mt_closed);
}
