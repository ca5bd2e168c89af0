/* ctl_jobs.c - wavectl's printers for the job commands: `jobs` (the list,
 * with rate and time left), `wait ID` (a result known only by its id: no
 * pack or range is printed, since JobInfo does not carry them), `cancel
 * ID`, the progress of a running job (the bar on a terminal, a plain line
 * otherwise), and the line of `submit hash --detach`, whose hint must be a
 * command that works.
 *
 * Rate and ETA come from JobInfo alone: rate = done / seconds (the job's
 * own clock, so the figure is the same whoever asks and when), ETA =
 * (total - done) / rate; unknown ("-") before the first nonce is done. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/ctl.h"

const char *wv_job_state_name(wave_job_state s)
{
  switch (s) {
  case WAVE_JOB_QUEUED: return "queued";
  case WAVE_JOB_RUNNING: return "running";
  case WAVE_JOB_DONE: return "done";
  case WAVE_JOB_FAILED: return "failed";
  case WAVE_JOB_CANCELLED: return "cancelled";
  case WAVE_JOB_PREPARING: return "preparing";
  default: return "unknown";
  }
}

/* ---- rate, ETA and the progress line ---------------------------------- */

double wv_job_rate(const wave_job_info *j)
{
  return j->seconds > 0 && j->done > 0 ? (double)j->done / j->seconds : 0.0;
}

double wv_job_eta(const wave_job_info *j)
{
  double rate = wv_job_rate(j);
  if (rate <= 0 || j->done >= j->total)
    return j->done >= j->total && j->total > 0 ? 0.0 : -1.0;
  return (double)(j->total - j->done) / rate;
}

void wv_fmt_rate(char *buf, size_t n, double rate)
{
  static const char *const units[] = {"", "k", "M", "G", "T", "P"};
  unsigned u = 0;
  if (rate <= 0) {
    snprintf(buf, n, "-");
    return;
  }
  while (rate >= 1000.0 && u + 1 < sizeof units / sizeof units[0]) {
    rate /= 1000.0;
    u++;
  }
  snprintf(buf, n, "%.2f %sH/s", rate, units[u]);
}

void wv_fmt_eta(char *buf, size_t n, double s)
{
  if (s < 0 || s > 1e9) {  /* unknown, or beyond any sense */
    snprintf(buf, n, "-");
    return;
  }
  unsigned long t = (unsigned long)(s + 0.5);
  if (t >= 86400)
    snprintf(buf, n, "%lud%02luh", t / 86400, t % 86400 / 3600);
  else if (t >= 3600)
    snprintf(buf, n, "%luh%02lum", t / 3600, t % 3600 / 60);
  else if (t >= 60)
    snprintf(buf, n, "%lum%02lus", t / 60, t % 60);
  else
    snprintf(buf, n, "%lus", t);
}

/* "[#####-----]  12.3%" */
static void jb_bar(char *buf, size_t n, double frac)
{
  enum { WIDTH = 30 };
  char bar[WIDTH + 1];
  unsigned fill = (unsigned)(frac * WIDTH);
  for (unsigned i = 0; i < WIDTH; i++)
    bar[i] = i < fill ? '#' : '-';
  bar[WIDTH] = '\0';
  snprintf(buf, n, "[%s] %5.1f%%", bar, frac * 100.0);
}

void wv_progress_line(char *buf, size_t n, const wave_job_info *j, int bar)
{
  double frac = j->total ? (double)j->done / (double)j->total : 0.0;
  if (frac > 1.0)
    frac = 1.0;
  char wait[512];  /* the names are whole (ABI 1) */
  wv_job_waiting(j, wait, sizeof wait);
  if (wait[0] != '\0') {  /* PREPARING: the pack's progress, not the job's */
    if (bar)
      snprintf(buf, n, "%s", wait);
    else
      snprintf(buf, n, "job %" PRIu64 ": %s", j->job_id, wait);
    return;
  }
  char head[64], rate[32], eta[32];
  wv_fmt_rate(rate, sizeof rate, wv_job_rate(j));
  wv_fmt_eta(eta, sizeof eta, wv_job_eta(j));
  char state[560] = "";
  if (j->held[0] != '\0')
    snprintf(state, sizeof state, "  %sheld: %s",
             j->state == WAVE_JOB_QUEUED ? "queued, " : "", j->held);
  else if (j->state == WAVE_JOB_QUEUED)
    snprintf(state, sizeof state, "  queued");
  if (bar) {
    jb_bar(head, sizeof head, frac);
    snprintf(buf, n, "%s  %s  %.1f s  ETA %s%s", head, rate, j->seconds, eta,
             state);
  } else {
    snprintf(buf, n, "job %" PRIu64 ": %.1f%%, %" PRIu64 " of %" PRIu64
             " nonces, %s, %.1f s, ETA %s%s", j->job_id, frac * 100.0,
             j->done, j->total, rate, j->seconds, eta, state);
  }
}

/* ---- jobs, wait, cancel --------------------------------------------------- */

int wv_job_live(wave_job_state s)
{
  return s == WAVE_JOB_QUEUED || s == WAVE_JOB_RUNNING ||
         s == WAVE_JOB_PREPARING;
}

void wv_job_waiting(const wave_job_info *j, char *buf, size_t n)
{
  buf[0] = '\0';
  if (j->state != WAVE_JOB_PREPARING)
    return;
  /* NULL too: a wave_job_info that did not come from the library */
  const char *pack = j->waiting_pack && j->waiting_pack[0] ? j->waiting_pack
                                                           : "?";
  const char *dev = j->waiting_device && j->waiting_device[0]
                        ? j->waiting_device : "?";
  if (j->prepare_steps_total > 0)
    snprintf(buf, n, "waiting for pack %s on %s: %u of %u steps", pack, dev,
             j->prepare_steps, j->prepare_steps_total);
  else
    snprintf(buf, n, "waiting for pack %s on %s: %u steps done", pack, dev,
             j->prepare_steps);
}

static void jb_json_info(FILE *f, const wave_job_info *j)
{
  fprintf(f, "{\"job\": %" PRIu64 ", \"state\": \"%s\", \"done\": %" PRIu64
          ", \"total\": %" PRIu64 ", \"seconds\": %.6f, \"device\": ",
          j->job_id, wv_job_state_name(j->state), j->done, j->total,
          j->seconds);
  wv_json_str(f, j->device);
  if (j->owner != NULL && j->owner[0]) {
    fputs(", \"owner\": ", f);
    wv_json_str(f, j->owner);
  }
  fprintf(f, ", \"rate\": %.6g", wv_job_rate(j));
  double eta = wv_job_eta(j);
  if (j->state == WAVE_JOB_RUNNING && eta >= 0)
    fprintf(f, ", \"eta_seconds\": %.3f", eta);
  if (j->state == WAVE_JOB_PREPARING) {
    fputs(", \"waiting\": {\"pack\": ", f);
    wv_json_str(f, j->waiting_pack);
    fputs(", \"device\": ", f);
    wv_json_str(f, j->waiting_device);
    fprintf(f, ", \"steps\": %u, \"steps_total\": %u}", j->prepare_steps,
            j->prepare_steps_total);
  }
  if (j->held[0] != '\0') {
    fputs(", \"held\": ", f);
    wv_json_str(f, j->held);
  }
  if (j->error.code != 0) {
    fprintf(f, ", \"error\": {\"code\": %d, \"name\": \"%s\", \"message\": ",
            j->error.code, wave_errname(j->error.code));
    wv_json_str(f, j->error.message);
    fputc('}', f);
  }
  fputc('}', f);
}

void wv_print_jobs(FILE *f, const wave_job_info *jobs, size_t n, int json)
{
  if (json) {
    fputs("{\"jobs\": [", f);
    for (size_t i = 0; i < n; i++) {
      fputs(i ? ", " : "", f);
      jb_json_info(f, &jobs[i]);
    }
    fputs("]}\n", f);
    return;
  }
  if (n == 0) {
    fputs("no hash jobs\n", f);
    return;
  }
  fprintf(f, "%-20s %-9s %-10s %22s %10s %12s %8s\n", "JOB", "STATE",
          "DEVICE", "DONE/TOTAL", "SECONDS", "RATE", "ETA");
  for (size_t i = 0; i < n; i++) {
    const wave_job_info *j = &jobs[i];
    char prog[48], rate[32], eta[32] = "-";
    snprintf(prog, sizeof prog, "%" PRIu64 "/%" PRIu64, j->done, j->total);
    wv_fmt_rate(rate, sizeof rate, wv_job_rate(j));
    if (j->state == WAVE_JOB_RUNNING || j->state == WAVE_JOB_QUEUED)
      wv_fmt_eta(eta, sizeof eta, wv_job_eta(j));
    fprintf(f, "%-20" PRIu64 " %-9s %-10s %22s %10.3f %12s %8s", j->job_id,
            wv_job_state_name(j->state), j->device ? j->device : "", prog,
            j->seconds, rate, eta);
    char wait[512];  /* the names are whole (ABI 1) */
    wv_job_waiting(j, wait, sizeof wait);
    if (j->error.code != 0)
      fprintf(f, "  %s", wave_errname(j->error.code));
    else if (wait[0] != '\0')
      fprintf(f, "  %s", wait);
    else if (j->held[0] != '\0')
      fprintf(f, "  held: %s", j->held);
    fputc('\n', f);
  }
}

void wv_print_job(FILE *f, const wave_job_info *j, const wave_hash_result *r,
                  int json)
{
  if (json) {
    if (r == NULL) {
      jb_json_info(f, j);
      fputc('\n', f);
      return;
    }
    fprintf(f, "{\"job\": %" PRIu64 ", \"state\": \"done\", \"job_fingerprint\": "
            "\"%016" PRIx64 "\", \"best\": {\"nonce\": %" PRIu64
            ", \"output\": \"%016" PRIx64 "\"}, \"winners\": [", j->job_id,
            r->job_fingerprint, r->best_nonce, r->best_output);
    for (size_t i = 0; i < r->n_winners; i++)
      fprintf(f, "%s{\"nonce\": %" PRIu64 ", \"output\": \"%016" PRIx64
              "\"}", i ? ", " : "", r->winners[i].nonce,
              r->winners[i].output);
    fprintf(f, "], \"winner_count\": %" PRIu64 ", \"hashes\": %" PRIu64
            ", \"seconds\": %.6f, \"device\": ", r->winner_count, r->hashes,
            r->seconds);
    wv_json_str(f, r->device);
    fputs("}\n", f);
    return;
  }
  fprintf(f, "job %" PRIu64 ": %s, %" PRIu64 " of %" PRIu64 " nonces, "
          "%.3f s, device %s\n", j->job_id, wv_job_state_name(j->state),
          j->done, j->total, j->seconds, j->device);
  /* a job cancelled on request: the line above says all; not an error */
  if (j->error.code != 0 &&
      !(j->state == WAVE_JOB_CANCELLED && j->error.code == WAVE_ECANCELLED))
    fprintf(f, "error        %s: %s\n", wave_errname(j->error.code),
            j->error.message);
  char wait[512];  /* the names are whole (ABI 1) */
  wv_job_waiting(j, wait, sizeof wait);
  if (wait[0] != '\0')
    fprintf(f, "%s\n", wait);
  if (r == NULL)
    return;
  fprintf(f, "job fingerprint %016" PRIx64 "\n", r->job_fingerprint);
  fprintf(f, "best         nonce %" PRIu64 " output %016" PRIx64 "\n",
          r->best_nonce, r->best_output);
  fprintf(f, "winners      %" PRIu64 "\n", r->winner_count);
  for (size_t i = 0; i < r->n_winners; i++)
    fprintf(f, "  nonce %" PRIu64 " output %016" PRIx64 "\n",
            r->winners[i].nonce, r->winners[i].output);
  fprintf(f, "hashes       %" PRIu64 "\n", r->hashes);
}

/* One word for sh: as it is when it holds only safe bytes, else quoted. */
static void jb_word(FILE *f, const char *w)
{
  if (w[0] != '\0' && strspn(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP"
                               "QRSTUVWXYZ0123456789_./:@%+=,-") == strlen(w)) {
    fputs(w, f);
    return;
  }
  fputc('\'', f);
  for (const char *p = w; *p; p++)
    if (*p == '\'')
      fputs("'\\''", f);
    else
      fputc(*p, f);
  fputc('\'', f);
}

static void jb_opt(FILE *f, const char *name, const char *v)
{
  if (v == NULL || v[0] == '\0')
    return;
  fprintf(f, " --%s ", name);
  jb_word(f, v);
}

void wv_print_detached(FILE *f, const wv_args *a, const char *url,
                       uint64_t id, const wave_job_key *key, int json)
{
  char hex[WAVE_JOB_KEY_HEX];
  wave_job_key_format(key, hex, sizeof hex);
  if (json) {
    fprintf(f, "{\"job\": %" PRIu64, id);
    if (hex[0] != '\0')
      fprintf(f, ", \"key\": \"%s\"", hex);
    fputs("}\n", f);
    return;
  }
  /* Who can reach the job again (docs/protocol.md "Job ownership"): the
   * key's holder; else the same uid over ipc, the same token over tcp;
   * over tcp without a token and without a key (a daemon before keys)
   * nobody but root over ipc, and then no hint is printed. */
  const char *tf = a->token_file ? a->token_file : getenv("WAVE_TOKEN_FILE");
  int ipc = url != NULL && strncmp(url, "ipc://", 6) == 0;
  if (hex[0] == '\0' && !ipc && (tf == NULL || tf[0] == '\0')) {
    fprintf(f, "job %" PRIu64 " submitted (the daemon gave no job key, and "
            "without a token nobody but root over ipc can reach it again)\n",
            id);
    return;
  }
  fprintf(f, "job %" PRIu64 " submitted (wavectl", id);
  /* the connection as given on this command line; the environment
   * (WAVE_URL, WAVE_TOKEN_FILE, ...) is the caller's still */
  jb_opt(f, "url", a->url);
  if (hex[0] == '\0')
    jb_opt(f, "token-file", a->token_file);
  jb_opt(f, "tls-ca", a->tls_ca);
  jb_opt(f, "tls-server-name", a->tls_name);
  const char *du = getenv("WAVE_DAEMON_UID");
  if (ipc)
    jb_opt(f, "daemon-uid", du);
  fprintf(f, " wait %" PRIu64, id);
  if (hex[0] != '\0')
    fprintf(f, " --key %s", hex);
  fputs(")\n", f);
}
