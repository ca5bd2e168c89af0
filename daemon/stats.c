/* stats.c - see stats.h.  Counters are relaxed atomics: each is read and
 * written whole, and nothing orders one counter against another (a scrape
 * may see a job counted whose rows are not yet; the next one sees both).
 *
 * Hash rates: the loop copies each device's hash counter into a ring of
 * one-second samples (WD_ST_RING of them, enough for the longest window);
 * the rate over a window of w seconds is the difference between the newest
 * sample and the one w seconds older, divided by w.  While the daemon is
 * younger than w, the window is the time it has run.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/log.h"
#include "daemon/stats.h"
#include "core/base.h"

#define WD_ST_NCODES WD_STATS_NCODES
#define WD_ST_RING 901

typedef struct ct_dev {
  char *name;
  _Atomic uint64_t jobs[WD_KIND_N][WD_OUT_N];
  _Atomic uint64_t errors[WD_ST_NCODES];
  _Atomic uint64_t rows, bytes, hashes;
  uint64_t ring[WD_ST_RING]; /* loop only */
  uint64_t hist[WD_KIND_N][WD_PH_N][WD_STATS_NB + 1]; /* loop only; not
                                   cumulative here (wd_stats_get sums) */
  double hist_sum[WD_KIND_N][WD_PH_N];
} ct_dev;

static struct {
  ct_dev *devs;
  size_t n;
  _Atomic uint64_t req_errors[WD_ST_NCODES];
  _Atomic uint64_t refused[WD_ST_NCODES];
  _Atomic uint64_t reload_ok, reload_failed;
  size_t samples, head;      /* loop only: ring fill and newest slot */
  uint64_t rq_hist[WD_RS_N][WD_STATS_NB + 1];  /* loop only, as ct_dev's */
  double rq_sum[WD_RS_N];
} st;

static const unsigned ct_windows[WD_STATS_NWIN] = WD_STATS_WINDOWS;
static const double ct_bounds[WD_STATS_NB] = WD_STATS_BOUNDS;

int wd_stats_init(const char *const *devices, size_t n)
{
  wd_stats_fini();
  st.devs = calloc(n + 1, sizeof *st.devs);
  if (st.devs == NULL)
    return WAVE_ENOMEM;
  for (size_t i = 0; i < n; i++)
    if ((st.devs[i].name = strdup(devices[i])) == NULL) {
      st.n = i;
      wd_stats_fini();
      return WAVE_ENOMEM;
    }
  st.n = n;
  return 0;
}

void wd_stats_fini(void)
{
  for (size_t i = 0; i < st.n; i++)
    free(st.devs[i].name);
  free(st.devs);
  memset(&st, 0, sizeof st);
}

static ct_dev *ct_find(const char *device)
{
  for (size_t i = 0; device != NULL && i < st.n; i++)
    if (strcmp(st.devs[i].name, device) == 0)
      return &st.devs[i];
  return NULL;
}

static size_t ct_code(int code)
{
  return code > 0 && code < WAVE_ERR_COUNT_ ? (size_t)code : WD_ST_NCODES - 1;
}

void wd_stats_hashed(const char *device, uint64_t n)
{
  ct_dev *d = ct_find(device);
  if (d != NULL)
    atomic_fetch_add_explicit(&d->hashes, n, memory_order_relaxed);
}

static int ct_outcome(int rc)
{
  if (rc == 0)
    return WD_OUT_OK;
  return rc == WAVE_ECANCELLED || rc == WAVE_ESHUTDOWN ? WD_OUT_CANCELLED
                                                       : WD_OUT_FAILED;
}

/* One observation v into the histogram h (not cumulative) and its sum. */
static void ct_observe(uint64_t h[WD_STATS_NB + 1], double *sum, double v)
{
  size_t b = 0;
  while (b < WD_STATS_NB && v > ct_bounds[b])
    b++;
  h[b]++;
  *sum += v;
}

/* h made cumulative into out. */
static void ct_cumulate(const uint64_t h[WD_STATS_NB + 1],
                        uint64_t out[WD_STATS_NB + 1])
{
  uint64_t sum = 0;
  for (size_t b = 0; b <= WD_STATS_NB; b++)
    out[b] = sum += h[b];
}

void wd_stats_job(int kind, uint64_t id, const char *device,
                  const double ph[WD_PH_N], int rc, uint64_t rows,
                  uint64_t bytes)
{
  int out = ct_outcome(rc);
  wd_info("job %s %" PRIu64 " on %s: %s%s%s in %.6f s",
          wd_stats_kind_name(kind), id, device ? device : "-",
          wd_stats_outcome_name(out), rc ? " " : "",
          rc ? wave_errname(rc) : "",
          ph[WD_PH_COMPUTE] > 0 ? ph[WD_PH_COMPUTE] : 0.0);
  ct_dev *d = ct_find(device);
  if (d == NULL || kind < 0 || kind >= WD_KIND_N)
    return;
  for (int p = 0; p < WD_PH_N; p++)
    if (ph[p] >= 0)
      ct_observe(d->hist[kind][p], &d->hist_sum[kind][p], ph[p]);
  atomic_fetch_add_explicit(&d->jobs[kind][out], 1, memory_order_relaxed);
  if (rc != 0)
    atomic_fetch_add_explicit(&d->errors[ct_code(rc)], 1,
                              memory_order_relaxed);
  if (rc == 0 && kind == WD_KIND_REDUCE) {
    atomic_fetch_add_explicit(&d->rows, rows, memory_order_relaxed);
    atomic_fetch_add_explicit(&d->bytes, bytes, memory_order_relaxed);
  }
}

void wd_stats_request_error(int code, int refused)
{
  atomic_fetch_add_explicit(&st.req_errors[ct_code(code)], 1,
                            memory_order_relaxed);
  if (refused)
    atomic_fetch_add_explicit(&st.refused[ct_code(code)], 1,
                              memory_order_relaxed);
}

void wd_stats_refusals(uint64_t out[WD_STATS_NCODES])
{
  for (size_t c = 0; c < WD_ST_NCODES; c++)
    out[c] = atomic_load(&st.refused[c]);
}

void wd_stats_reload(int ok)
{
  atomic_fetch_add(ok ? &st.reload_ok : &st.reload_failed, 1);
}

void wd_stats_sample(void)
{
  st.head = (st.head + 1) % WD_ST_RING;
  for (size_t i = 0; i < st.n; i++)
    st.devs[i].ring[st.head] = atomic_load(&st.devs[i].hashes);
  if (st.samples < WD_ST_RING)
    st.samples++;
}

size_t wd_stats_count(void) { return st.n; }

/* d's hashes a second over the last w seconds (0 before two samples). */
static double ct_rate(const ct_dev *d, unsigned w)
{
  size_t span = st.samples > 0 ? st.samples - 1 : 0;
  if (span > w)
    span = w;
  if (span == 0)
    return 0.0;
  size_t old = (st.head + WD_ST_RING - span) % WD_ST_RING;
  return (double)(d->ring[st.head] - d->ring[old]) / (double)span;
}

int wd_stats_hash_rate(const char *device, uint64_t *hashes, double *rate)
{
  const ct_dev *d = ct_find(device);
  if (d == NULL)
    return -1;
  *hashes = atomic_load(&d->hashes);
  *rate = ct_rate(d, ct_windows[0]);
  return 0;
}

void wd_stats_get(size_t i, wd_stats_dev *out)
{
  ct_dev *d = &st.devs[i];
  memset(out, 0, sizeof *out);
  out->name = d->name;
  for (int k = 0; k < WD_KIND_N; k++)
    for (int o = 0; o < WD_OUT_N; o++)
      out->jobs[k][o] = atomic_load(&d->jobs[k][o]);
  for (size_t c = 0; c < WD_ST_NCODES; c++)
    out->errors[c] = atomic_load(&d->errors[c]);
  out->rows = atomic_load(&d->rows);
  out->bytes = atomic_load(&d->bytes);
  out->hashes = atomic_load(&d->hashes);
  for (int k = 0; k < WD_KIND_N; k++)
    for (int p = 0; p < WD_PH_N; p++) {
      ct_cumulate(d->hist[k][p], out->hist[k][p]);
      out->hist_sum[k][p] = d->hist_sum[k][p];
    }
  for (int w = 0; w < WD_STATS_NWIN; w++)
    out->rate[w] = ct_rate(d, ct_windows[w]);
}

void wd_stats_request_errors(uint64_t out[WD_STATS_NCODES])
{
  for (size_t c = 0; c < WD_ST_NCODES; c++)
    out[c] = atomic_load(&st.req_errors[c]);
}

void wd_stats_request(const double s[WD_RS_N])
{
  for (int i = 0; i < WD_RS_N; i++)
    if (s[i] >= 0)
      ct_observe(st.rq_hist[i], &st.rq_sum[i], s[i]);
}

void wd_stats_requests(uint64_t hist[WD_RS_N][WD_STATS_NB + 1],
                       double sum[WD_RS_N])
{
  for (int i = 0; i < WD_RS_N; i++) {
    ct_cumulate(st.rq_hist[i], hist[i]);
    sum[i] = st.rq_sum[i];
  }
}

const char *wd_stats_stage_name(int stage)
{
  static const char *const names[WD_RS_N] = {"decode_wait", "decode",
                                             "loop_wait", "serve", "total"};
  return stage >= 0 && stage < WD_RS_N ? names[stage] : "?";
}

void wd_stats_reloads(uint64_t *ok, uint64_t *failed)
{
  *ok = atomic_load(&st.reload_ok);
  *failed = atomic_load(&st.reload_failed);
}

const char *wd_stats_kind_name(int kind)
{
  return kind == WD_KIND_REDUCE ? "reduce" : kind == WD_KIND_HASH ? "hash"
                                                                  : "?";
}

const char *wd_stats_phase_name(int phase)
{
  static const char *const names[WD_PH_N] = {"queue", "transfer", "compute",
                                             "total"};
  return phase >= 0 && phase < WD_PH_N ? names[phase] : "?";
}

const char *wd_stats_outcome_name(int outcome)
{
  static const char *const names[WD_OUT_N] = {"ok", "failed", "cancelled"};
  return outcome >= 0 && outcome < WD_OUT_N ? names[outcome] : "?";
}
