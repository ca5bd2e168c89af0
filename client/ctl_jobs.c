/* ctl_jobs.c - wavectl's printers for the job commands: `jobs` (the list),
 * `wait ID` (a result known only by its id: no pack or range is printed,
 * since JobInfo does not carry them) and `cancel ID`. */
#include <inttypes.h>
#include <stdio.h>

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
  const char *pack = j->waiting_pack[0] ? j->waiting_pack : "?";
  const char *dev = j->waiting_device[0] ? j->waiting_device : "?";
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
  if (j->state == WAVE_JOB_PREPARING) {
    fputs(", \"waiting\": {\"pack\": ", f);
    wv_json_str(f, j->waiting_pack);
    fputs(", \"device\": ", f);
    wv_json_str(f, j->waiting_device);
    fprintf(f, ", \"steps\": %u, \"steps_total\": %u}", j->prepare_steps,
            j->prepare_steps_total);
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
  fprintf(f, "%-20s %-9s %-10s %22s %10s\n", "JOB", "STATE", "DEVICE",
          "DONE/TOTAL", "SECONDS");
  for (size_t i = 0; i < n; i++) {
    const wave_job_info *j = &jobs[i];
    char prog[48];
    snprintf(prog, sizeof prog, "%" PRIu64 "/%" PRIu64, j->done, j->total);
    fprintf(f, "%-20" PRIu64 " %-9s %-10s %22s %10.3f", j->job_id,
            wv_job_state_name(j->state), j->device, prog, j->seconds);
    char wait[200];
    wv_job_waiting(j, wait, sizeof wait);
    if (j->error.code != 0)
      fprintf(f, "  %s", wave_errname(j->error.code));
    else if (wait[0] != '\0')
      fprintf(f, "  %s", wait);
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
  char wait[200];
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
