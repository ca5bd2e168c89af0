/* ctl_top.c - `wavectl top`: the daemon at a glance, redrawn every second,
 * after nvidia-smi (a row per device) and htop (a row per job, keys).
 *
 * What each figure is made of (docs/cli.md "top"), from libwaveclient's
 * status and jobs calls only:
 *   - state, queue: the device's DeviceStatus (faulted, running, depth);
 *   - busy: over the last second (status is asked TP_SAMPLES_PER_S times
 *     a second), the growth of the device's busy time (DeviceStatus.busy_ms,
 *     credited as each piece of work ends) divided by the growth of the
 *     daemon's uptime; 100% when every sample found the device running (a
 *     piece longer than the second is credited only when it ends), and
 *     the share of the samples that found it running when the daemon does
 *     not report busy time (busy_ms 0: a daemon before it).  "-" until two
 *     samples are in;
 *   - rate: the nonces the device hashed a second over the last second,
 *     from the growth of its count (StatusReply.device_hashes, credited as
 *     each piece ends: its share of a job over several devices included)
 *     over the growth of the uptime; when no piece ended in that second,
 *     the daemon's own rate over its last 10 s (device_hash_rate, the
 *     metrics page's wavedd_hash_rate{window="10s"}), so that pieces
 *     longer than a second do not blink.  From a daemon that does not say, the sum of the
 *     rates of the running jobs on that device alone (a job's rate is
 *     done / seconds, as `wavectl jobs` shows it), and a note says that a
 *     job over several devices has its rate on its own row only;
 *   - temperature, power (draw/limit): the device's health as the daemon
 *     read it (NVML, amdgpu hwmon, the fake backend's feed); "-" for a
 *     field its source did not read (WAVE_HEALTH_* not in health_have),
 *     never zero.  A throttled device gets a line under the table;
 *   - jobs: the queued, preparing and running hash jobs the asker may see
 *     (its own; root over ipc: all), in submit order.  OWNER is the
 *     submitter's principal (JobInfo.owner: "uid:N", "token:NAME",
 *     "pipe:N"; "-" from an older daemon).  KIND is "hash": the only
 *     jobs the daemon lists (a reduction is answered in its own exchange
 *     and shows as its device's running state and queue).
 *
 * The live view needs stdout to be a terminal: the alternate screen, the
 * cursor hidden, each frame drawn from the top left with plain ANSI
 * escapes (no curses).  Keys are read from stdin when it is a terminal
 * too, in non-canonical mode with ISIG kept, so Ctrl-C is SIGINT: the
 * handlers only set flags, which end the wait (poll without SA_RESTART).
 * q, Ctrl-C, SIGTERM and SIGHUP quit; every exit path, errors included,
 * restores the terminal (top_term_restore), and a second Ctrl-C while a
 * call waits on a daemon that does not answer restores it in the handler
 * and exits 130.  Ctrl-Z restores it, stops, and takes the screen back on
 * SIGCONT.  Off a terminal, or with --once, one frame is printed: status
 * is sampled for a second first, so busy is known.  --json prints that
 * frame as one JSON object.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "client/ctl.h"
#include "core/base.h"

#define TP_SAMPLES_PER_S 4
#define TP_TICK_MS (1000 / TP_SAMPLES_PER_S)

int wv_top_busy(unsigned running, unsigned n, uint64_t busy_ms,
                uint64_t d_busy_ms, uint64_t d_uptime_ms)
{
  if (n < 2)
    return -1;
  if (busy_ms == 0 || d_uptime_ms == 0 || running == n)
    return (int)((running * 100u + n / 2) / n);
  if (d_busy_ms > d_uptime_ms)  /* a long piece credited as it ended */
    d_busy_ms = d_uptime_ms;
  return (int)((d_busy_ms * 100u + d_uptime_ms / 2) / d_uptime_ms);
}

/* ---- the frame -------------------------------------------------------- */

/* Lines go through top_line: cut at the width, and no byte of the
 * daemon's (a device name, a fault) can move the cursor. */
typedef struct top_out {
  FILE *f;
  unsigned width, height, lines;
} top_out;

static void top_line(top_out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void top_line(top_out *o, const char *fmt, ...)
{
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  size_t n = strlen(buf);
  while (n > 0 && buf[n - 1] == ' ')  /* no trailing blanks */
    n--;
  if (o->width > 0 && n > o->width)
    n = o->width;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)buf[i] < 0x20 || (unsigned char)buf[i] == 0x7f)
      buf[i] = '?';
  fprintf(o->f, "%.*s\n", (int)n, buf);
  o->lines++;
}

static const char *top_dev_state(const wave_device_status *d)
{
  return d->faulted ? "FAULTED" : d->running ? "running" : "idle";
}

/* Device dev's hash rate (0: none): over the last interval, else the
 * daemon's over 10 s, else that of the running jobs on it alone. */
static double top_dev_rate(const wv_top_view *v, size_t dev)
{
  if (v->rate != NULL && v->rate[dev] > 0)
    return v->rate[dev];
  if (v->s->device_hash_rate != NULL)
    return v->s->device_hash_rate[dev];
  const char *d = v->s->devices[dev].name;
  double r = 0;
  for (size_t i = 0; i < v->n_jobs; i++) {
    const wave_job_info *j = &v->jobs[i];
    if (j->state == WAVE_JOB_RUNNING && j->n_devices <= 1 && j->device &&
        strcmp(j->device, d) == 0)
      r += wv_job_rate(j);
  }
  return r;
}

/* "63C" and "215W" or "215/700W" from what the device's health source
 * read; what it did not read stays "-". */
static void top_health(const wave_device_status *d, char *temp, size_t nt,
                      char *power, size_t np)
{
  unsigned h = d->health_have;
  if (h & WAVE_HEALTH_TEMPERATURE)
    snprintf(temp, nt, "%.0fC", d->temperature_c);
  if ((h & WAVE_HEALTH_POWER) && (h & WAVE_HEALTH_POWER_LIMIT))
    snprintf(power, np, "%.0f/%.0fW", d->power_w, d->power_limit_w);
  else if (h & WAVE_HEALTH_POWER)
    snprintf(power, np, "%.0fW", d->power_w);
}

static void top_devices(top_out *o, const wv_top_view *v)
{
  const wave_status *s = v->s;
  int w = 6;
  for (size_t i = 0; i < s->n_devices; i++)
    if ((int)strlen(s->devices[i].name) > w)
      w = (int)strlen(s->devices[i].name);
  if (w > 24)
    w = 24;
  top_line(o, "%-*s %-7s %-7s %9s %4s %12s %5s %9s", w, "DEVICE", "BACKEND",
          "STATE", "QUEUE", "BUSY", "RATE", "TEMP", "POWER");
  for (size_t i = 0; i < s->n_devices; i++) {
    const wave_device_status *d = &s->devices[i];
    char q[32], busy[16] = "-", rate[32];
    snprintf(q, sizeof q, "%u/%u", d->queue_depth, d->queue_capacity);
    int b = v->busy ? v->busy[i] : -1;
    if (b >= 0)
      snprintf(busy, sizeof busy, "%d%%", b);
    wv_fmt_rate(rate, sizeof rate, top_dev_rate(v, i));
    char temp[16] = "-", power[32] = "-";
    top_health(d, temp, sizeof temp, power, sizeof power);
    top_line(o, "%-*.*s %-7.7s %-7s %9s %4s %12s %5s %9s", w, w, d->name,
            d->backend, top_dev_state(d), q, busy, rate, temp, power);
  }
  for (size_t i = 0; i < s->n_devices; i++) {
    const wave_device_status *d = &s->devices[i];
    if (d->faulted)
      top_line(o, "  %s: %s", d->name, d->fault);
    if ((d->health_have & WAVE_HEALTH_THROTTLE) && d->throttle &&
        d->throttle[0] != '\0')
      top_line(o, "  %s: throttled: %s", d->name, d->throttle);
  }
}

/* "[###-------]  35.2%" */
static void top_bar(char *buf, size_t n, const wave_job_info *j)
{
  enum { W = 10 };
  double frac = j->total ? (double)j->done / (double)j->total : 0.0;
  if (frac > 1.0)
    frac = 1.0;
  char bar[W + 1];
  unsigned fill = (unsigned)(frac * W);
  for (unsigned i = 0; i < W; i++)
    bar[i] = i < fill ? '#' : '-';
  bar[W] = '\0';
  snprintf(buf, n, "[%s] %5.1f%%", bar, frac * 100.0);
}

static void top_jobs(top_out *o, const wv_top_view *v)
{
  size_t live = 0, multi = 0;
  int w = 3, ow = 5;
  for (size_t i = 0; i < v->n_jobs; i++) {
    const wave_job_info *j = &v->jobs[i];
    if (!wv_job_live(j->state))
      continue;
    live++;
    int on = j->owner != NULL ? (int)strlen(j->owner) : 0;
    if (on > ow)
      ow = on < 24 ? on : 24;
    multi += j->state == WAVE_JOB_RUNNING && j->n_devices > 1;
    char id[24];
    int n = snprintf(id, sizeof id, "%" PRIu64, j->job_id);
    if (n > w)
      w = n;
  }
  if (live == 0) {
    top_line(o, "no hash jobs queued or running");
    return;
  }
  top_line(o, "%-*s %-*s %-4s %-9s %-19s %11s %6s  %s", w, "JOB", ow, "OWNER",
          "KIND", "STATE", "PROGRESS", "RATE", "ETA", "DEVICE");
  /* the rows the terminal has room for below, less the note and the
   * footer; when they do not all fit, one line says how many are left */
  size_t room = live;
  if (o->height > 0) {
    size_t below = (multi ? 1 : 0) + (v->tty ? 2 : 0) + o->lines;
    size_t avail = o->height > below ? o->height - below : 0;
    if (avail < live)
      room = avail > 0 ? avail - 1 : 0;
  }
  size_t shown = 0;
  for (size_t i = 0; i < v->n_jobs && shown < room; i++) {
    const wave_job_info *j = &v->jobs[i];
    if (!wv_job_live(j->state))
      continue;
    shown++;
    char bar[48], rate[32], eta[32] = "-", dev[160], wait[512];
    top_bar(bar, sizeof bar, j);
    wv_fmt_rate(rate, sizeof rate, wv_job_rate(j));
    if (j->state == WAVE_JOB_RUNNING)
      wv_fmt_eta(eta, sizeof eta, wv_job_eta(j));
    if (j->n_devices > 1)
      snprintf(dev, sizeof dev, "%s+%zu", j->device, j->n_devices - 1);
    else
      snprintf(dev, sizeof dev, "%s", j->device);
    wv_job_waiting(j, wait, sizeof wait);
    const char *owner = j->owner != NULL && j->owner[0] ? j->owner : "-";
    top_line(o, "%-*" PRIu64 " %-*.*s %-4s %-9s %-19s %11s %6s  %s%s%s", w,
            j->job_id, ow, ow, owner, "hash", wv_job_state_name(j->state), bar, rate,
            eta, dev, wait[0] ? "  " : "", wait);
  }
  if (shown < live)
    top_line(o, "... and %zu more (wavectl jobs lists them all)",
            live - shown);
  if (multi > 0 && v->s->device_hash_rate == NULL)
    top_line(o, "(NAME+N: a job over N more devices; its rate is on its "
            "row only)");
  else if (multi > 0)
    top_line(o, "(NAME+N: a job over N more devices)");
}

void wv_top_frame(FILE *f, const wv_top_view *v)
{
  top_out o = {f, v->width, v->height, 0};
  const wave_status *s = v->s;
  char up[32];
  wv_fmt_eta(up, sizeof up, (double)s->uptime_ms / 1000.0);
  size_t run = 0, queued = 0, prep = 0;
  for (size_t i = 0; i < v->n_jobs; i++) {
    run += v->jobs[i].state == WAVE_JOB_RUNNING;
    queued += v->jobs[i].state == WAVE_JOB_QUEUED;
    prep += v->jobs[i].state == WAVE_JOB_PREPARING;
  }
  top_line(&o, "wavedd %s at %s  up %s  %s%s%s", s->version,
          v->url ? v->url : "?", up, wv_status_ready(s) ? "ready" :
          "not ready", v->clock ? "  " : "", v->clock ? v->clock : "");
  top_line(&o, "hash jobs: %zu running, %zu queued, %zu preparing;  "
          "jobs served %" PRIu64 ", failed %" PRIu64 ", cancelled %" PRIu64,
          run, queued, prep, s->jobs_served, s->jobs_failed,
          s->jobs_cancelled);
  top_line(&o, "%s", "");
  top_devices(&o, v);
  top_line(&o, "%s", "");
  top_jobs(&o, v);
  if (v->tty) {
    top_line(&o, "%s", "");
    top_line(&o, "q or Ctrl-C: quit    (wavectl help top: what each column "
            "is)");
  }
}

/* The same frame as one JSON object (--json); null for what is not
 * known. */
void wv_top_json(FILE *f, const wv_top_view *v)
{
  const wave_status *s = v->s;
  fputs("{\"version\": ", f);
  wv_json_str(f, s->version);
  fputs(", \"url\": ", f);
  wv_json_str(f, v->url ? v->url : "");
  fprintf(f, ", \"uptime_ms\": %" PRIu64 ", \"ready\": %s, \"jobs_served\": %"
          PRIu64 ", \"jobs_failed\": %" PRIu64 ", \"jobs_cancelled\": %" PRIu64
          ", \"devices\": [", s->uptime_ms, wv_status_ready(s) ? "true" : "false",
          s->jobs_served, s->jobs_failed, s->jobs_cancelled);
  for (size_t i = 0; i < s->n_devices; i++) {
    const wave_device_status *d = &s->devices[i];
    fputs(i ? ", {\"name\": " : "{\"name\": ", f);
    wv_json_str(f, d->name);
    fputs(", \"backend\": ", f);
    wv_json_str(f, d->backend);
    fprintf(f, ", \"state\": \"%s\", \"fault\": ", d->faulted ? "faulted"
            : d->running ? "running" : "idle");
    wv_json_str(f, d->fault);
    fprintf(f, ", \"queue_depth\": %u, \"queue_capacity\": %u, "
            "\"busy_percent\": ", d->queue_depth, d->queue_capacity);
    int b = v->busy ? v->busy[i] : -1;
    if (b >= 0)
      fprintf(f, "%d", b);
    else
      fputs("null", f);
    double r = top_dev_rate(v, i);
    if (r > 0)
      fprintf(f, ", \"hash_rate\": %.6g", r);
    else
      fputs(", \"hash_rate\": null", f);
    unsigned h = d->health_have;
    if (h & WAVE_HEALTH_TEMPERATURE)
      fprintf(f, ", \"temperature_c\": %.6g", d->temperature_c);
    else
      fputs(", \"temperature_c\": null", f);
    if (h & WAVE_HEALTH_POWER)
      fprintf(f, ", \"power_w\": %.6g", d->power_w);
    else
      fputs(", \"power_w\": null", f);
    if (h & WAVE_HEALTH_POWER_LIMIT)
      fprintf(f, ", \"power_limit_w\": %.6g", d->power_limit_w);
    else
      fputs(", \"power_limit_w\": null", f);
    fputs(", \"throttle\": ", f);
    if (h & WAVE_HEALTH_THROTTLE)
      wv_json_str(f, d->throttle ? d->throttle : "");
    else
      fputs("null", f);
    fputc('}', f);
  }
  fputs("], \"jobs\": [", f);
  int first = 1;
  for (size_t i = 0; i < v->n_jobs; i++) {
    const wave_job_info *j = &v->jobs[i];
    if (!wv_job_live(j->state))
      continue;
    fprintf(f, "%s{\"job\": %" PRIu64 ", \"owner\": ", first ? "" : ", ",
            j->job_id);
    if (j->owner != NULL && j->owner[0])
      wv_json_str(f, j->owner);
    else
      fputs("null", f);
    fprintf(f, ", \"kind\": \"hash\", \"state\": \"%s\", \"done\": %" PRIu64
            ", \"total\": %" PRIu64 ", \"seconds\": %.3f, \"rate\": ",
            wv_job_state_name(j->state), j->done, j->total, j->seconds);
    first = 0;
    double r = wv_job_rate(j), eta = wv_job_eta(j);
    if (r > 0)
      fprintf(f, "%.6g", r);
    else
      fputs("null", f);
    if (j->state == WAVE_JOB_RUNNING && eta >= 0)
      fprintf(f, ", \"eta_seconds\": %.3f", eta);
    else
      fputs(", \"eta_seconds\": null", f);
    fputs(", \"device\": ", f);
    wv_json_str(f, j->device ? j->device : "");
    fprintf(f, ", \"n_devices\": %zu}", j->n_devices);
  }
  fputs("]}\n", f);
}

/* ---- sampling ----------------------------------------------------------- */

/* The status samples of one interval: per device, how many found it
 * running, and its busy_ms, its hashes and the uptime where the interval
 * began.  A reload that changes the device count starts over. */
typedef struct top_samples {
  size_t n_devices;
  unsigned n;
  unsigned *running;
  uint64_t *busy0, *hashes0, up0;
  int have0;
  int *busy;            /* the shares of the interval that ended last */
  double *rate;         /* its hash rates (0: none, or not known) */
} top_samples;

static int top_sample(top_samples *t, const wave_status *s, wave_error *err)
{
  if (t->n_devices != s->n_devices || t->running == NULL) {
    free(t->running);
    free(t->busy);
    free(t->busy0);
    free(t->hashes0);
    free(t->rate);
    t->n_devices = s->n_devices;
    t->n = 0;
    t->have0 = 0;
    t->running = calloc(s->n_devices + 1, sizeof *t->running);
    t->busy0 = calloc(s->n_devices + 1, sizeof *t->busy0);
    t->hashes0 = calloc(s->n_devices + 1, sizeof *t->hashes0);
    t->rate = calloc(s->n_devices + 1, sizeof *t->rate);
    t->busy = malloc((s->n_devices + 1) * sizeof *t->busy);
    if (t->running == NULL || t->busy0 == NULL || t->busy == NULL ||
        t->hashes0 == NULL || t->rate == NULL)
      return wv_seterr(err, WAVE_ENOMEM, NULL);
    for (size_t i = 0; i < s->n_devices; i++)
      t->busy[i] = -1;
  }
  if (!t->have0) {
    for (size_t i = 0; i < s->n_devices; i++) {
      t->busy0[i] = s->devices[i].busy_ms;
      t->hashes0[i] = s->device_hashes ? s->device_hashes[i] : 0;
    }
    t->up0 = s->uptime_ms;
    t->have0 = 1;
  }
  t->n++;
  for (size_t i = 0; i < s->n_devices; i++)
    t->running[i] += s->devices[i].running != 0;
  return 0;
}

/* The interval ends at s, the last sample: its shares become what the
 * frame shows, and the next one starts there with no samples.  (A daemon
 * restarted meanwhile has a smaller uptime: the samples decide.) */
static void top_interval(top_samples *t, const wave_status *s)
{
  uint64_t dup = s->uptime_ms > t->up0 ? s->uptime_ms - t->up0 : 0;
  for (size_t i = 0; i < t->n_devices; i++) {
    uint64_t b = s->devices[i].busy_ms;
    t->busy[i] = wv_top_busy(t->running[i], t->n, b,
                             b > t->busy0[i] ? b - t->busy0[i] : 0, dup);
    t->running[i] = 0;
    t->busy0[i] = b;
    uint64_t h = s->device_hashes ? s->device_hashes[i] : 0;
    t->rate[i] = h > t->hashes0[i] && dup > 0
                     ? (double)(h - t->hashes0[i]) * 1e3 / (double)dup : 0.0;
    t->hashes0[i] = h;
  }
  t->up0 = s->uptime_ms;
  t->n = 0;
}

static void top_samples_free(top_samples *t)
{
  free(t->busy0);
  free(t->hashes0);
  free(t->rate);
  free(t->running);
  free(t->busy);
}

static uint64_t top_now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* One status call into *s (the previous one freed). */
static int top_status(wave_client *c, wave_status **s, top_samples *t,
                     wave_error *err)
{
  wave_status *n;
  int rv = wave_status_get(c, &n, err);
  if (rv != 0)
    return rv;
  wave_status_free(*s);
  *s = n;
  return top_sample(t, n, err);
}

/* Draw one frame of s and the jobs the daemon lists now into f. */
static int top_draw(wave_client *c, FILE *f, const wave_status *s,
                   const top_samples *t, unsigned width, unsigned height,
                   int tty, int json, wave_error *err)
{
  wave_job_info *jobs = NULL;
  size_t n = 0;
  int rv = wave_jobs_get(c, &jobs, &n, err);
  if (rv != 0)
    return rv;
  char clock[16];
  time_t now = time(NULL);
  struct tm tm;
  localtime_r(&now, &tm);
  strftime(clock, sizeof clock, "%H:%M:%S", &tm);
  wv_top_view v = {
    .s = s, .url = wave_client_url(c), .jobs = jobs, .n_jobs = n,
    .busy = t->busy, .rate = t->rate, .clock = clock, .width = width, .height = height,
    .tty = tty,
  };
  if (json)
    wv_top_json(f, &v);
  else
    wv_top_frame(f, &v);
  wave_jobs_free(jobs);
  return 0;
}

/* --once, or stdout not a terminal: a second of samples, one frame. */
static int top_once(wave_client *c, int json, wave_error *err)
{
  top_samples t = {0};
  wave_status *s = NULL;
  int rv = 0;
  for (int i = 0; i <= TP_SAMPLES_PER_S && rv == 0; i++) {
    if (i > 0) {
      struct timespec ts = {0, TP_TICK_MS * 1000000L};
      while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
      }
    }
    rv = top_status(c, &s, &t, err);
  }
  if (rv == 0) {
    top_interval(&t, s);
    rv = top_draw(c, stdout, s, &t, 0, 0, 0, json, err);
  }
  wave_status_free(s);
  top_samples_free(&t);
  return rv;
}

/* ---- the live view ------------------------------------------------------ */

/* The terminal as found, for every way out, the signal handler's too (one
 * top per process). */
static struct termios top_saved;
static volatile sig_atomic_t top_quit, top_winch, top_tstp, top_keys_on,
    top_screen_on;
static const char top_back[] = "\033[?25h\033[?1049l";

/* The first quit ends the loop at its next wake-up.  A second one comes
 * when a call waits on a daemon that does not answer (up to --timeout):
 * it gives the terminal back here, with async-signal-safe calls only, and
 * exits 128 + the signal. */
static void top_on_quit(int sig)
{
  if (top_quit) {
    if (top_screen_on &&
        write(STDOUT_FILENO, top_back, sizeof top_back - 1) < 0)
      top_screen_on = 0;
    if (top_keys_on)
      tcsetattr(STDIN_FILENO, TCSANOW, &top_saved);
    _exit(128 + sig);
  }
  top_quit = 1;
}

static void top_on_winch(int sig)
{
  (void)sig;
  top_winch = 1;
}

static void top_on_tstp(int sig)
{
  (void)sig;
  top_tstp = 1;
}

static void top_term_take(void)
{
  if (top_keys_on) {
    struct termios raw = top_saved;
    raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    tcsetattr(STDIN_FILENO, TCSANOW, &raw);
  }
  fputs("\033[?1049h\033[?25l\033[H\033[2J", stdout);  /* alternate screen */
  fflush(stdout);
  top_screen_on = 1;
}

static void top_term_restore(void)
{
  if (!top_screen_on)
    return;
  fputs(top_back, stdout);
  fflush(stdout);
  if (top_keys_on)
    tcsetattr(STDIN_FILENO, TCSANOW, &top_saved);
  top_screen_on = 0;
}

static void top_size(unsigned *w, unsigned *h)
{
  struct winsize ws;
  *w = 80;
  *h = 24;
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 &&
      ws.ws_row > 0) {
    *w = ws.ws_col;
    *h = ws.ws_row;
  }
}

/* The frame from the top left: each line cleared to its end, the rest of
 * the screen below cleared; one write, so it does not flicker. */
static int top_paint(wave_client *c, const wave_status *s,
                    const top_samples *t, wave_error *err)
{
  unsigned w, h;
  top_size(&w, &h);
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  if (m == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  int rv = top_draw(c, m, s, t, w, h, 1, 0, err);
  fclose(m);
  if (rv == 0) {
    fputs("\033[H", stdout);
    unsigned row = 0;
    for (char *p = buf, *nl; p < buf + len && row < h; p = nl + 1, row++) {
      nl = memchr(p, '\n', (size_t)(buf + len - p));
      if (nl == NULL)
        nl = buf + len;
      fprintf(stdout, "%s%.*s\033[K", row ? "\r\n" : "", (int)(nl - p), p);
    }
    fputs("\033[J", stdout);
    fflush(stdout);
  }
  free(buf);
  return rv;
}

/* Wait up to ms for a key (or a signal); 1 when q was typed or the
 * terminal is gone. */
static int top_keys(int ms)
{
  struct pollfd p = {STDIN_FILENO, POLLIN, 0};
  if (poll(&p, top_keys_on ? 1 : 0, ms) <= 0)
    return 0;
  if (p.revents & (POLLHUP | POLLERR | POLLNVAL))
    return 1;
  char k[64];
  ssize_t n = read(STDIN_FILENO, k, sizeof k);
  if (n == 0)
    return 1;
  for (ssize_t i = 0; i < n; i++)
    if (k[i] == 'q' || k[i] == 'Q')
      return 1;
  return 0;
}

static int top_live(wave_client *c, wave_error *err)
{
  top_keys_on = isatty(STDIN_FILENO) &&
                tcgetattr(STDIN_FILENO, &top_saved) == 0;
  struct sigaction sa, old_int, old_term, old_hup, old_winch, old_tstp;
  memset(&sa, 0, sizeof sa);
  sigemptyset(&sa.sa_mask);
  sa.sa_handler = top_on_quit;  /* no SA_RESTART: poll returns at once */
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  sigaction(SIGHUP, &sa, &old_hup);
  sa.sa_handler = top_on_winch;
  sigaction(SIGWINCH, &sa, &old_winch);
  sa.sa_handler = top_on_tstp;
  sigaction(SIGTSTP, &sa, &old_tstp);

  top_samples t = {0};
  wave_status *s = NULL;
  int rv = top_status(c, &s, &t, err);
  if (rv == 0) {
    top_term_take();
    rv = top_paint(c, s, &t, err);
  }
  uint64_t next = top_now_ms() + 1000;
  while (rv == 0 && !top_quit) {
    uint64_t now = top_now_ms();
    uint64_t tick = now + TP_TICK_MS < next ? now + TP_TICK_MS : next;
    if (top_keys((int)(tick > now ? tick - now : 0)))
      break;
    if (top_quit)
      break;
    if (top_tstp) {  /* Ctrl-Z: give the terminal back while stopped */
      top_tstp = 0;
      top_term_restore();
      signal(SIGTSTP, SIG_DFL);
      raise(SIGTSTP);
      sigaction(SIGTSTP, &sa, NULL);  /* sa is still top_on_tstp's */
      top_term_take();
      top_winch = 1;
    }
    if (top_now_ms() < tick && !top_winch)
      continue;
    if ((rv = top_status(c, &s, &t, err)) != 0)
      break;
    if (top_now_ms() >= next) {
      top_interval(&t, s);
      next += 1000;
      if (next < top_now_ms())  /* a slow daemon: no catching up */
        next = top_now_ms() + 1000;
    } else if (!top_winch) {
      continue;
    }
    top_winch = 0;
    rv = top_paint(c, s, &t, err);
  }
  top_term_restore();
  sigaction(SIGINT, &old_int, NULL);
  sigaction(SIGTERM, &old_term, NULL);
  sigaction(SIGHUP, &old_hup, NULL);
  sigaction(SIGWINCH, &old_winch, NULL);
  sigaction(SIGTSTP, &old_tstp, NULL);
  wave_status_free(s);
  top_samples_free(&t);
  return rv;
}

int wv_ctl_top(const wv_args *a, wave_client *c, wave_error *err)
{
  if (a->once || a->json || !isatty(STDOUT_FILENO))
    return top_once(c, a->json, err);
  return top_live(c, err);
}
