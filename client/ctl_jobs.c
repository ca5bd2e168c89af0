/* ctl_jobs.c - wavectl's printers for the job commands: `jobs` (the list),
 * `wait ID` (a result known only by its id: no pack or range is printed,
 * since JobInfo does not carry them) and `cancel ID`; and the line of
 * `submit hash --detach`, whose hint must be a command that works. */
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
  default: return "unknown";
  }
}

static void jb_json_info(FILE *f, const wave_job_info *j)
{
  fprintf(f, "{\"job\": %" PRIu64 ", \"state\": \"%s\", \"done\": %" PRIu64
          ", \"total\": %" PRIu64 ", \"seconds\": %.6f, \"device\": ",
          j->job_id, wv_job_state_name(j->state), j->done, j->total,
          j->seconds);
  wv_json_str(f, j->device);
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
  fprintf(f, "%-20s %-9s %-10s %22s %10s\n", "JOB", "STATE", "DEVICE",
          "DONE/TOTAL", "SECONDS");
  for (size_t i = 0; i < n; i++) {
    const wave_job_info *j = &jobs[i];
    char prog[48];
    snprintf(prog, sizeof prog, "%" PRIu64 "/%" PRIu64, j->done, j->total);
    fprintf(f, "%-20" PRIu64 " %-9s %-10s %22s %10.3f", j->job_id,
            wv_job_state_name(j->state), j->device, prog, j->seconds);
    if (j->error.code != 0)
      fprintf(f, "  %s", wave_errname(j->error.code));
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
  if (j->error.code != 0)
    fprintf(f, "error        %s: %s\n", wave_errname(j->error.code),
            j->error.message);
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
