/* health.c - see health.h.  One thread: read every device (outside the
 * lock: a reading may block), publish the round and judge the guards on
 * it under the lock, wait for the period or the stop on a condition
 * variable (CLOCK_MONOTONIC).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/exec/health.h"
#include "daemon/exec/pick.h"
#include "daemon/log.h"
#include "core/base.h"
#include "core/thread.h"

/* One device's guards and rate watchdog (under the mutex). */
typedef struct hl_guard {
  unsigned max_t, resume_t, max_p;  /* the limits; 0 off */
  int hot, power;                   /* over the temperature, the power */
  int state;                        /* HL_* last judged */
  char why[200];                    /* its reason */
  uint64_t throttles;
  /* the watchdog: its keys, the window being measured, its verdict */
  unsigned pct, window_s, windows, cap;
  double w_t0;                      /* the window's start (0: none) */
  uint64_t w_h0;                    /* the device's hashes then */
  int w_busy;                       /* a hash item at every reading */
  double best;                      /* its best window's rate */
  int degraded;
  unsigned below;                   /* windows degraded */
  uint64_t restarts;
  char dog[200];                    /* degraded: why */
  int held;                         /* what wd_device_hold was told */
} hl_guard;

enum { HL_OFF, HL_INACTIVE, HL_OK, HL_THROTTLED, HL_DEGRADED };
static const char *const hl_states[] = {"off", "inactive", "ok",
                                        "throttled", "degraded"};

static double hl_now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

struct wd_health {
  wd_device *const *devs;
  size_t n;
  pthread_t thread;
  pthread_mutex_t mu;     /* now[], stop */
  pthread_cond_t cv;
  int stop;
  wv_health *now;         /* the newest round */
  wv_health *next;        /* the thread's own, being read */
  hl_guard *g;            /* the guards, under mu */
};

static void hl_limits(hl_guard *g, const wd_device_cfg *c)
{
  g->max_t = c->max_temperature_c;
  g->resume_t = c->resume_temperature_c;
  g->max_p = c->max_power_w;
  g->pct = c->watchdog_min_rate_pct;
  g->window_s = c->watchdog_window_s;
  g->windows = c->watchdog_windows;
  g->cap = c->watchdog_restarts;
  if (g->pct == 0) {  /* off: it forgets what it measured */
    g->degraded = 0;
    g->below = 0;
    g->best = 0;
  }
}

/* The rate watchdog, at each reading (under mu): a window of window_s in
 * which the device had a hash item at every reading is measured; its
 * rate under pct % of the best window's marks the device degraded (held:
 * its pieces go to the job's other devices); after `windows` windows
 * degraded it is closed and opened again and judged afresh, at most
 * `cap` times, then left degraded. */
static void hl_watch(wd_health *h, size_t i)
{
  hl_guard *g = &h->g[i];
  wd_device *d = h->devs[i];
  double now = hl_now();
  uint64_t hashes = wd_device_hashes(d);
  int busy = wd_device_long_load(d) > 0;
  if (g->pct == 0) {
    g->w_t0 = 0;
    return;
  }
  if (g->w_t0 == 0 || hashes < g->w_h0) {
    g->w_t0 = now;
    g->w_h0 = hashes;
    g->w_busy = busy;
    return;
  }
  g->w_busy &= busy;
  if (now - g->w_t0 < (double)g->window_s)
    return;
  double rate = (double)(hashes - g->w_h0) / (now - g->w_t0);
  const char *name = wd_device_name(d);
  if (g->degraded) {
    if (++g->below >= g->windows && g->restarts < g->cap) {
      g->restarts++;
      g->degraded = 0;
      g->below = 0;
      wd_warn("device %s: degraded for %u windows: restart %" PRIu64
              " of %u", name, g->windows, g->restarts, g->cap);
      wd_device_reopen(d);
    } else if (g->below == g->windows) {
      size_t l = strlen(g->dog);
      snprintf(g->dog + l, sizeof g->dog - l, "; %u restarts, the cap: "
               "left degraded", g->cap);
      wd_warn("device %s: %s", name, g->dog);
    }
  } else if (g->w_busy && g->state != HL_THROTTLED) {
    if (rate > g->best) {
      g->best = rate;
    } else if (rate < g->best * g->pct / 100.0) {
      g->degraded = 1;
      g->below = 0;
      snprintf(g->dog, sizeof g->dog, "hash rate %.4g/s under %u%% of its "
               "own %.4g/s for %u s", rate, g->pct, g->best, g->window_s);
      wd_warn("device %s degraded: %s; its pieces go elsewhere", name,
              g->dog);
    }
  }
  g->w_t0 = now;
  g->w_h0 = wd_device_hashes(d);
  g->w_busy = busy;
}

/* Judge device i's guards on reading r (under mu): hold or let go, log
 * each change of state. */
static void hl_judge(wd_health *h, size_t i, const wv_health *r)
{
  hl_guard *g = &h->g[i];
  const char *name = wd_device_name(h->devs[i]);
  int was = g->state, has_t = (r->have & WV_HF_TEMP) != 0,
      has_p = (r->have & WV_HF_POWER) != 0;
  char why[200] = "";
  if (g->max_t == 0)
    g->hot = 0;
  else if (has_t && r->temp_c >= g->max_t)
    g->hot = 1;
  else if (has_t && r->temp_c <= g->resume_t)
    g->hot = 0;  /* between the two: as it was; unread: as it was */
  if (g->max_p == 0)
    g->power = 0;
  else if (has_p)
    g->power = r->power_w >= g->max_p;
  if (g->hot && has_t)
    snprintf(why, sizeof why, "temperature %.1f C, max_temperature_c %u "
             "(resumes at %u)", r->temp_c, g->max_t, g->resume_t);
  else if (g->hot)
    snprintf(why, sizeof why, "over max_temperature_c %u at the last "
             "reading; no temperature since", g->max_t);
  if (g->power) {
    size_t l = strlen(why);
    snprintf(why + l, sizeof why - l, "%spower %.1f W, max_power_w %u",
             l ? "; " : "", r->power_w, g->max_p);
  }
  int miss_t = g->max_t != 0 && !has_t, miss_p = g->max_p != 0 && !has_p;
  if (g->hot || g->power) {
    g->state = HL_THROTTLED;
  } else if (g->max_t == 0 && g->max_p == 0) {
    g->state = HL_OFF;
  } else if (miss_t || miss_p) {
    g->state = (g->max_t == 0 || miss_t) && (g->max_p == 0 || miss_p)
                   ? HL_INACTIVE : HL_OK;
    snprintf(why, sizeof why, "%s%s%s inactive: %.150s",
             miss_t ? "max_temperature_c" : "",
             miss_t && miss_p ? " and " : "", miss_p ? "max_power_w" : "",
             r->source[0] == '\0' ? r->why
             : miss_t ? "the reading has no temperature"
                      : "the reading has no power draw");
  } else {
    g->state = HL_OK;
  }
  int changed = strcmp(why, g->why) != 0 || was != g->state;
  if (g->state == HL_THROTTLED && was != HL_THROTTLED) {
    g->throttles++;
    wd_warn("device %s throttled: %s; it takes no new work", name, why);
  } else if (g->state != HL_THROTTLED && was == HL_THROTTLED) {
    wd_warn("device %s resumed: %s", name,
            g->state == HL_OFF ? "its guards are off (reload)"
            : r->have & WV_HF_TEMP ? "the temperature is down"
                                   : "under its limits");
  } else if (changed && why[0] != '\0' && g->state != HL_THROTTLED) {
    wd_warn("device %s guards: %s", name, why);
  }
  snprintf(g->why, sizeof g->why, "%s", why);
  int hold = g->state == HL_THROTTLED || g->degraded;
  if (hold != g->held)
    wd_device_hold(h->devs[i], g->held = hold);
  if (hold)  /* its queued reductions go where they can run (pick.h) */
    wd_pick_move(h->devs, h->n, h->devs[i]);
}

static void *hl_main(void *arg)
{
  wd_health *h = arg;
  pthread_mutex_lock(&h->mu);
  while (!h->stop) {
    pthread_mutex_unlock(&h->mu);
    for (size_t i = 0; i < h->n; i++)
      wd_device_health(h->devs[i], &h->next[i]);
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_sec += WD_HEALTH_PERIOD_MS / 1000;
    t.tv_nsec += (long)(WD_HEALTH_PERIOD_MS % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
      t.tv_sec++;
      t.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&h->mu);
    wv_health *x = h->now;
    h->now = h->next;
    h->next = x;
    for (size_t i = 0; i < h->n; i++) {
      hl_watch(h, i);
      hl_judge(h, i, &h->now[i]);
    }
    while (!h->stop &&
           pthread_cond_timedwait(&h->cv, &h->mu, &t) != ETIMEDOUT) {
    }
  }
  pthread_mutex_unlock(&h->mu);
  return NULL;
}

int wd_health_start(wd_device *const *devs, size_t n, wd_health **out,
                    wave_error *err)
{
  *out = NULL;
  wd_health *h = calloc(1, sizeof *h);
  if (h == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  h->devs = devs;
  h->n = n;
  h->now = calloc(n + 1, sizeof *h->now);
  h->next = calloc(n + 1, sizeof *h->next);
  h->g = calloc(n + 1, sizeof *h->g);
  if (h->now == NULL || h->next == NULL || h->g == NULL) {
    free(h->g);
    free(h->now);
    free(h->next);
    free(h);
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  }
  for (size_t i = 0; i < n; i++) {
    snprintf(h->now[i].why, sizeof h->now[i].why, "not read yet");
    hl_limits(&h->g[i], wd_device_cfg_of(devs[i]));
    h->g[i].state = HL_OFF;
  }
  pthread_mutex_init(&h->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&h->cv, &ca);
  pthread_condattr_destroy(&ca);
  int rc = wv_thread_start(&h->thread, "wd:health", hl_main, h);
  if (rc != 0) {
    pthread_cond_destroy(&h->cv);
    pthread_mutex_destroy(&h->mu);
    free(h->g);
    free(h->now);
    free(h->next);
    free(h);
    return wv_seterr(err, WAVE_EIO, "health thread: %s", strerror(rc));
  }
  *out = h;
  return 0;
}

void wd_health_get(wd_health *h, size_t i, wv_health *out)
{
  pthread_mutex_lock(&h->mu);
  *out = h->now[i];
  pthread_mutex_unlock(&h->mu);
}

void wd_health_guard(wd_health *h, size_t i, wd_guard_view *out)
{
  pthread_mutex_lock(&h->mu);
  const hl_guard *g = &h->g[i];
  int dog = g->degraded && g->state != HL_THROTTLED;
  out->state = hl_states[dog ? HL_DEGRADED : g->state];
  snprintf(out->reason, sizeof out->reason, "%s", dog ? g->dog : g->why);
  out->throttles = g->throttles;
  out->max_temperature_c = g->max_t;
  out->resume_temperature_c = g->resume_t;
  out->max_power_w = g->max_p;
  out->restarts = g->restarts;
  pthread_mutex_unlock(&h->mu);
}

void wd_health_set_limits(wd_health *h, const wd_device_cfg *cfgs, size_t n)
{
  pthread_mutex_lock(&h->mu);
  for (size_t i = 0; i < n && i < h->n; i++) {
    hl_limits(&h->g[i], &cfgs[i]);
    if (strcmp(h->now[i].why, "not read yet") != 0)
      hl_judge(h, i, &h->now[i]);
  }
  pthread_mutex_unlock(&h->mu);
}

void wd_health_stop(wd_health *h)
{
  if (h == NULL)
    return;
  pthread_mutex_lock(&h->mu);
  h->stop = 1;
  pthread_cond_signal(&h->cv);
  pthread_mutex_unlock(&h->mu);
  pthread_join(h->thread, NULL);
  pthread_cond_destroy(&h->cv);
  pthread_mutex_destroy(&h->mu);
  free(h->g);
  free(h->now);
  free(h->next);
  free(h);
}
