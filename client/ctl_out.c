/* ctl_out.c - how wavectl prints results: one JSON object (--json) or a
 * short readable text.
 *
 * JSON has no NaN or infinity, so those float results are the strings
 * "nan", "inf", "-inf"; every other float32 is printed with %.9g, which is
 * enough digits for strtof() to give back the same bits, and a float64
 * with the fewest digits (15 to 17) that strtod() reads back to its bits.
 * Integers are exact, 64-bit ones too.  The raw bits are printed alongside
 * ("bits": 8 hex digits for a 32-bit dtype, 16 for a 64-bit one) for anyone
 * who needs them exactly; argmin/argmax add the row's "index", fsum the
 * exact sum ("exact": X, in units of 2^-149 or 2^-1074, as signed hex, and
 * "exact_flags").
 * 64-bit hash outputs and fingerprints are 16-digit hex strings; nonces and
 * counts are plain JSON integers (exact, though beyond 2^53 a reader that
 * parses numbers as doubles rounds them).
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "client/ctl.h"

void wv_json_str(FILE *f, const char *s)
{
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    switch (*p) {
    case '"': fputs("\\\"", f); break;
    case '\\': fputs("\\\\", f); break;
    case '\n': fputs("\\n", f); break;
    case '\r': fputs("\\r", f); break;
    case '\t': fputs("\\t", f); break;
    default:
      if (*p < 0x20 || *p == 0x7f)
        fprintf(f, "\\u%04x", *p);
      else
        fputc(*p, f);
    }
  }
  fputc('"', f);
}

/* A finite double in the fewest of 15..17 significant digits that read
 * back to the same bits (17 always do). */
static void out_f64(char *buf, size_t n, double d)
{
  for (int prec = 15; prec <= 17; prec++) {
    snprintf(buf, n, "%.*g", prec, d);
    if (prec == 17 || strtod(buf, NULL) == d)
      return;
  }
}

static const char *out_value(char *buf, size_t n, wave_dtype dtype,
                             uint64_t bits, int quote)
{
  double d = 0;
  switch (dtype) {
  case WAVE_S32:
    snprintf(buf, n, "%" PRId32, (int32_t)(uint32_t)bits);
    return buf;
  case WAVE_S64:
    snprintf(buf, n, "%" PRId64, (int64_t)bits);
    return buf;
  case WAVE_U64:
    snprintf(buf, n, "%" PRIu64, bits);
    return buf;
  case WAVE_F32: {
    uint32_t b = (uint32_t)bits;
    float f;
    memcpy(&f, &b, sizeof f);
    d = f;
    break;
  }
  case WAVE_F64:
    memcpy(&d, &bits, sizeof d);
    break;
  default:
    snprintf(buf, n, "%" PRIu32, (uint32_t)bits);
    return buf;
  }
  const char *q = quote ? "\"" : "";
  if (isnan(d))
    snprintf(buf, n, "%snan%s", q, q);
  else if (isinf(d))
    snprintf(buf, n, "%s%sinf%s", q, d < 0 ? "-" : "", q);
  else if (dtype == WAVE_F32)
    snprintf(buf, n, "%.9g", d);
  else
    out_f64(buf, n, d);
  return buf;
}

const char *wv_json_value(char *buf, size_t n, wave_dtype dtype,
                          uint64_t bits)
{
  return out_value(buf, n, dtype, bits, 1);
}

const char *wv_text_value(char *buf, size_t n, wave_dtype dtype,
                          uint64_t bits)
{
  return out_value(buf, n, dtype, bits, 0);
}

/* A double as a JSON number (never nan/inf, which JSON lacks). */
static void out_double(FILE *f, double v)
{
  fprintf(f, "%.9g", isfinite(v) ? v : 0.0);
}

/* "0x" and the bits of one value: 8 hex digits for a 32-bit dtype, 16
 * for a 64-bit one. */
static const char *out_bits(char *buf, size_t n, wave_dtype dtype,
                            uint64_t bits)
{
  if (dtype == WAVE_U64 || dtype == WAVE_S64 || dtype == WAVE_F64)
    snprintf(buf, n, "0x%016" PRIx64, bits);
  else
    snprintf(buf, n, "0x%08" PRIx32, (uint32_t)bits);
  return buf;
}

/* fsum's exact partial as JSON: "exact", X (the sum in units of 2^-149
 * or 2^-1074) as a signed hex string, and "exact_flags". */
static void out_exact(FILE *f, const wave_reduce_result *r)
{
  uint64_t l[WAVE_EXACT_MAX_BYTES / 8] = {0};
  size_t n = r->exact_bytes / 8;
  for (size_t i = 0; i < r->exact_bytes; i++)
    l[i / 8] |= (uint64_t)r->exact[i] << (8 * (i % 8));
  int neg = n > 0 && (l[n - 1] >> 63) != 0;
  for (size_t i = 0, c = 1; neg && i < n; i++) {  /* |X| */
    l[i] = ~l[i] + c;
    c = c && l[i] == 0;
  }
  while (n > 1 && l[n - 1] == 0)
    n--;
  fprintf(f, "\"exact\": \"%s0x%" PRIx64, neg ? "-" : "",
          n > 0 ? l[n - 1] : 0);
  for (size_t i = n - 1; n > 0 && i-- > 0;)
    fprintf(f, "%016" PRIx64, l[i]);
  fprintf(f, "\", \"exact_flags\": %" PRIu32 ", ", r->exact_flags);
}

void wv_print_reduce(FILE *f, const wave_reduce_result *r, int json)
{
  wv_print_reduce_path(f, r, json, NULL, NULL);
}

void wv_print_reduce_path(FILE *f, const wave_reduce_result *r, int json,
                          const char *path, const char *why)
{
  char buf[48], hb[24];
  unsigned n = r->n_values > 2 ? 2 : r->n_values;
  int arg = r->op == WAVE_ARGMIN || r->op == WAVE_ARGMAX;
  if (json) {
    fputs("{\"result\": [", f);
    for (unsigned i = 0; i < n; i++)
      fprintf(f, "%s%s", i ? ", " : "",
              wv_json_value(buf, sizeof buf, r->dtype, r->bits[i]));
    fputs("], \"bits\": [", f);
    for (unsigned i = 0; i < n; i++)
      fprintf(f, "%s\"%s\"", i ? ", " : "",
              out_bits(hb, sizeof hb, r->dtype, r->bits[i]));
    fputs("], ", f);
    if (arg)
      fprintf(f, "\"index\": %" PRId64 ", ", r->index);
    if (r->op == WAVE_FSUM)
      out_exact(f, r);
    fprintf(f, "\"count\": %" PRIu64 ", \"rows\": %" PRIu64
            ", \"device\": ", r->count, r->rows);
    wv_json_str(f, r->device);
    fputs(", \"dtype\": ", f);
    wv_json_str(f, wave_dtype_name(r->dtype));
    fputs(", \"op\": ", f);
    wv_json_str(f, wave_op_name(r->op));
    fputs(", \"seconds\": ", f);
    out_double(f, r->seconds);
    if (path != NULL) {
      fputs(", \"path\": ", f);
      wv_json_str(f, path);
      fputs(", \"fallback\": ", f);
      wv_json_str(f, why ? why : "");
    }
    fputs("}\n", f);
    return;
  }
  fprintf(f, "%s %s = ", wave_op_name(r->op), wave_dtype_name(r->dtype));
  if (n == 2) {
    char b2[48], hb2[24];
    fprintf(f, "[%s, %s]  (bits %s, %s)\n",
            wv_text_value(buf, sizeof buf, r->dtype, r->bits[0]),
            wv_text_value(b2, sizeof b2, r->dtype, r->bits[1]),
            out_bits(hb, sizeof hb, r->dtype, r->bits[0]),
            out_bits(hb2, sizeof hb2, r->dtype, r->bits[1]));
  } else {
    fprintf(f, "%s  (bits %s)\n",
            wv_text_value(buf, sizeof buf, r->dtype, r->bits[0]),
            out_bits(hb, sizeof hb, r->dtype, r->bits[0]));
  }
  if (arg)
    fprintf(f, "index: %" PRId64 "%s\n", r->index,
            r->index < 0 ? " (no row)" : "");
  fprintf(f, "rows selected: %" PRIu64 " of %" PRIu64 "\n", r->count,
          r->rows);
  fprintf(f, "device: %s (%.6f s)\n", r->device, r->seconds);
  if (path != NULL)
    fprintf(f, "path: %s (fallback: %s)\n", path, why ? why : "");
}

void wv_print_hash(FILE *f, const wave_hash_request *q,
                   const wave_hash_result *r, uint64_t job_id, int json)
{
  double rate = r->seconds > 0 ? (double)r->hashes / r->seconds : 0.0;
  if (json) {
    fprintf(f, "{\"job\": %" PRIu64 ", \"pack\": ", job_id);
    wv_json_str(f, q->pack);
    fprintf(f, ", \"nonce\": %" PRIu64 ", \"count\": %" PRIu64
            ", \"target\": \"%016" PRIx64 "\", \"job_fingerprint\": \"%016"
            PRIx64 "\", \"best\": {\"nonce\": %" PRIu64 ", \"output\": \"%016"
            PRIx64 "\"}, \"winners\": [", q->nonce, q->count, q->target,
            r->job_fingerprint, r->best_nonce, r->best_output);
    for (size_t i = 0; i < r->n_winners; i++)
      fprintf(f, "%s{\"nonce\": %" PRIu64 ", \"output\": \"%016" PRIx64
              "\"}", i ? ", " : "", r->winners[i].nonce,
              r->winners[i].output);
    fprintf(f, "], \"winner_count\": %" PRIu64 ", \"hashes\": %" PRIu64
            ", \"seconds\": ", r->winner_count, r->hashes);
    out_double(f, r->seconds);
    fputs(", \"rate\": ", f);
    out_double(f, rate);
    fputs(", \"device\": ", f);
    wv_json_str(f, r->device);
    fputs(", \"exchange\": ", f);
    wv_json_str(f, r->exchange);
    fprintf(f, ", \"segment_log2\": %u, \"segment_count\": %" PRIu64,
            r->segment_log2, r->segment_count);
    if (r->n_segments > 0) {
      fputs(", \"segments\": [", f);
      for (size_t i = 0; i < r->n_segments; i++)
        fprintf(f, "%s\"%016" PRIx64 "\"", i ? ", " : "", r->segments[i]);
      fputc(']', f);
    }
    fputs(", \"shares\": [", f);
    for (size_t i = 0; i < r->n_shares; i++) {
      fprintf(f, "%s{\"device\": ", i ? ", " : "");
      wv_json_str(f, r->shares[i].device);
      fprintf(f, ", \"hashes\": %" PRIu64 ", \"faulted\": %s, "
              "\"seconds\": ", r->shares[i].hashes,
              r->shares[i].faulted ? "true" : "false");
      out_double(f, r->shares[i].seconds);
      fputc('}', f);
    }
    fputc(']', f);
    if (r->n_outputs > 0) {
      fputs(", \"outputs\": [", f);
      for (size_t i = 0; i < r->n_outputs; i++)
        fprintf(f, "%s\"%016" PRIx64 "\"", i ? ", " : "", r->outputs[i]);
      fputc(']', f);
    }
    fputs("}\n", f);
    return;
  }
  fprintf(f, "job %" PRIu64 ": pack %s, nonces %" PRIu64 " + %" PRIu64 "\n",
          job_id, q->pack, q->nonce, q->count);
  fprintf(f, "job fingerprint %016" PRIx64 " (%" PRIu64 " segments of 2^%u)"
          "\n", r->job_fingerprint, r->segment_count, r->segment_log2);
  for (size_t i = 0; i < r->n_segments; i++)
    fprintf(f, "  segment %zu %016" PRIx64 "\n", i, r->segments[i]);
  for (size_t i = 0; i < r->n_shares; i++)
    fprintf(f, "  device %s: %" PRIu64 " hashes%s\n", r->shares[i].device,
            r->shares[i].hashes, r->shares[i].faulted ? " (faulted)" : "");
  fprintf(f, "best         nonce %" PRIu64 " output %016" PRIx64 "\n",
          r->best_nonce, r->best_output);
  fprintf(f, "winners      %" PRIu64 " below %016" PRIx64 "\n",
          r->winner_count, q->target);
  for (size_t i = 0; i < r->n_winners; i++)
    fprintf(f, "  nonce %" PRIu64 " output %016" PRIx64 "\n",
            r->winners[i].nonce, r->winners[i].output);
  if (r->n_winners < r->winner_count)
    fprintf(f, "  (%" PRIu64 " more not listed)\n",
            r->winner_count - r->n_winners);
  fprintf(f, "hashes       %" PRIu64 " in %.3f s (%.3g hashes/s)\n",
          r->hashes, r->seconds, rate);
  fprintf(f, "device       %s, exchange %s\n", r->device, r->exchange);
  for (size_t i = 0; i < r->n_outputs; i++)
    fprintf(f, "output %" PRIu64 " %016" PRIx64 "\n", q->nonce + i,
            r->outputs[i]);
}

/* A pack check in one word: the daemon's state ("pending", "ok", "failed",
 * "none"); an older daemon sends no state, only ok. */
static const char *out_check_word(int ok, const char *state)
{
  if (state[0] != '\0')
    return state;
  return ok ? "ok" : "failed";
}

/* " (detail)", or nothing when the detail says no more than the state;
 * written whole, however long (ABI 1 keeps the daemon's whole detail). */
static void out_detail(FILE *f, const char *state, const char *detail)
{
  if (detail[0] != '\0' && strcmp(detail, state) != 0)
    fprintf(f, " (%s)", detail);
}

static void out_checks_json(FILE *f, const wave_pack_check *c, size_t n)
{
  fputc('[', f);
  for (size_t i = 0; i < n; i++) {
    fputs(i ? ", {\"pack\": " : "{\"pack\": ", f);
    wv_json_str(f, c[i].pack);
    fprintf(f, ", \"ok\": %s, \"state\": ", c[i].ok ? "true" : "false");
    wv_json_str(f, c[i].state);
    fputs(", \"detail\": ", f);
    wv_json_str(f, c[i].detail);
    fprintf(f, ", \"hash_rate\": %.6g}", c[i].hash_rate);
  }
  fputc(']', f);
}

/* A device's health: only the fields it read (absent is not zero). */
static void out_health_json(FILE *f, const wave_device_status *d)
{
  unsigned h = d->health_have;
  fputs(", \"health\": {\"source\": ", f);
  wv_json_str(f, d->health_source[0] ? d->health_source : "none");
  fputs(", \"note\": ", f);
  wv_json_str(f, d->health_note);
  if (h & WAVE_HEALTH_TEMPERATURE)
    fprintf(f, ", \"temperature_c\": %.6g", d->temperature_c);
  if (h & WAVE_HEALTH_POWER)
    fprintf(f, ", \"power_w\": %.6g", d->power_w);
  if (h & WAVE_HEALTH_POWER_LIMIT)
    fprintf(f, ", \"power_limit_w\": %.6g", d->power_limit_w);
  if (h & WAVE_HEALTH_SM_CLOCK)
    fprintf(f, ", \"sm_clock_mhz\": %u", d->sm_clock_mhz);
  if (h & WAVE_HEALTH_MEM_CLOCK)
    fprintf(f, ", \"mem_clock_mhz\": %u", d->mem_clock_mhz);
  if (h & WAVE_HEALTH_THROTTLE) {
    fputs(", \"throttle\": ", f);
    wv_json_str(f, d->throttle);
  }
  if (h & WAVE_HEALTH_MEMORY_USED)
    fprintf(f, ", \"memory_used\": %" PRIu64, d->memory_used);
  if (h & WAVE_HEALTH_MEMORY_TOTAL)
    fprintf(f, ", \"memory_total\": %" PRIu64, d->memory_total);
  if (h & WAVE_HEALTH_UTILIZATION)
    fprintf(f, ", \"utilization_pct\": %.6g", d->utilization_pct);
  fputc('}', f);
}

/* The "health" line of the text form. */
static void out_health_text(FILE *f, const wave_device_status *d)
{
  unsigned h = d->health_have;
  fprintf(f, "  health     %s", d->health_source[0] ? d->health_source
                                                     : "none");
  if (d->health_note[0] != '\0')
    fprintf(f, ": %s", d->health_note);
  const char *sep = d->health_note[0] ? "; " : ": ";
#define OUT_SEP() (fputs(sep, f), sep = ", ")
  if (h & WAVE_HEALTH_TEMPERATURE)
    OUT_SEP(), fprintf(f, "%.1f C", d->temperature_c);
  if (h & WAVE_HEALTH_POWER) {
    OUT_SEP(), fprintf(f, "%.1f W", d->power_w);
    if (h & WAVE_HEALTH_POWER_LIMIT)
      fprintf(f, " of %.0f W", d->power_limit_w);
  } else if (h & WAVE_HEALTH_POWER_LIMIT) {
    OUT_SEP(), fprintf(f, "power limit %.0f W", d->power_limit_w);
  }
  if (h & WAVE_HEALTH_SM_CLOCK)
    OUT_SEP(), fprintf(f, "SM %u MHz", d->sm_clock_mhz);
  if (h & WAVE_HEALTH_MEM_CLOCK)
    OUT_SEP(), fprintf(f, "memory clock %u MHz", d->mem_clock_mhz);
  if (h & WAVE_HEALTH_UTILIZATION)
    OUT_SEP(), fprintf(f, "%.0f%% busy", d->utilization_pct);
  if (h & WAVE_HEALTH_MEMORY_USED) {
    OUT_SEP(), fprintf(f, "%.1f GiB used", (double)d->memory_used / 1073741824.0);
    if (h & WAVE_HEALTH_MEMORY_TOTAL)
      fprintf(f, " of %.1f GiB", (double)d->memory_total / 1073741824.0);
  }
  if (h & WAVE_HEALTH_THROTTLE)
    OUT_SEP(), fprintf(f, "throttle: %s", d->throttle[0] ? d->throttle
                                                         : "none");
#undef OUT_SEP
  fputc('\n', f);
}

/* A device's guards: state, reason, limits (0: off), throttles. */
static const char *out_guard(const wave_device_status *d)
{
  /* NULL too: a wave_device_status that did not come from the library */
  return d->guard != NULL && d->guard[0] != '\0' ? d->guard : "off";
}

static const char *out_guard_why(const wave_device_status *d)
{
  return d->guard_reason != NULL ? d->guard_reason : "";
}

static void out_guard_json(FILE *f, const wave_device_status *d)
{
  fputs(", \"guard\": {\"state\": ", f);
  wv_json_str(f, out_guard(d));
  fputs(", \"reason\": ", f);
  wv_json_str(f, out_guard_why(d));
  fprintf(f, ", \"max_temperature_c\": %u, \"resume_temperature_c\": %u, "
          "\"max_power_w\": %u, \"throttles\": %" PRIu64
          ", \"watchdog_restarts\": %" PRIu64 "}",
          d->max_temperature_c, d->resume_temperature_c, d->max_power_w,
          d->guard_throttles, d->watchdog_restarts);
}

/* The "guards" line of the text form (none while they are off). */
static void out_guard_text(FILE *f, const wave_device_status *d)
{
  if (strcmp(out_guard(d), "off") == 0)
    return;
  fprintf(f, "  guards     %s", out_guard(d));
  if (out_guard_why(d)[0] != '\0')
    fprintf(f, " (%s)", out_guard_why(d));
  if (d->max_temperature_c > 0)
    fprintf(f, "; stop at %u C, resume at %u C", d->max_temperature_c,
            d->resume_temperature_c);
  if (d->max_power_w > 0)
    fprintf(f, "; stop at %u W", d->max_power_w);
  fprintf(f, "; throttled %" PRIu64 " times, restarted %" PRIu64 " times\n",
          d->guard_throttles, d->watchdog_restarts);
}

static void out_status_json(FILE *f, const wave_status *s, const char *url)
{
  fputs("{\"version\": ", f);
  wv_json_str(f, s->version);
  fprintf(f, ", \"devices_throttled\": %u, \"fd_conns\": %u, "
          "\"fd_limit\": %u", s->devices_throttled, s->fd_conns,
          s->fd_limit);
  fputs(", \"url\": ", f);
  wv_json_str(f, url);
  fprintf(f, ", \"uptime_ms\": %" PRIu64 ", \"jobs_served\": %" PRIu64
          ", \"jobs_failed\": %" PRIu64 ", \"jobs_cancelled\": %" PRIu64
          ", \"instance\": %" PRIu64
          ", \"ready\": %s, \"max_files\": %" PRIu64 ", \"listen\": [",
          s->uptime_ms, s->jobs_served, s->jobs_failed, s->jobs_cancelled,
          s->instance,
          s->ready ? "true" : "false", s->max_files);
  for (size_t i = 0; i < s->n_listen; i++) {
    fputs(i ? ", " : "", f);
    wv_json_str(f, s->listen[i]);
  }
  fputs("], \"listen_connections\": [", f);
  for (size_t i = 0; s->listen_connections != NULL && i < s->n_listen; i++)
    fprintf(f, "%s%" PRIu64, i ? ", " : "", s->listen_connections[i]);
  fputs("], \"shares\": [", f);
  for (size_t i = 0; i < s->n_shares; i++) {
    const wave_share *h = &s->shares[i];
    fputs(i ? ", {\"principal\": " : "{\"principal\": ", f);
    wv_json_str(f, h->principal);
    fprintf(f, ", \"region_bytes\": %" PRIu64 ", \"region_limit\": %" PRIu64
            ", \"stream_bytes\": %" PRIu64 ", \"stream_limit\": %" PRIu64
            ", \"fd_conns\": %u, \"fd_limit\": %u, \"file_fds\": %" PRIu64
            ", \"file_fd_limit\": %" PRIu64 "}", h->region_bytes,
            h->region_limit, h->stream_bytes, h->stream_limit, h->fd_conns,
            h->fd_limit, h->file_fds, h->file_fd_limit);
  }
  fputs("], \"devices\": [", f);
  for (size_t i = 0; i < s->n_devices; i++) {
    const wave_device_status *d = &s->devices[i];
    fputs(i ? ", {\"name\": " : "{\"name\": ", f);
    wv_json_str(f, d->name);
    fputs(", \"backend\": ", f);
    wv_json_str(f, d->backend);
    fputs(", \"description\": ", f);
    wv_json_str(f, d->description);
    fprintf(f, ", \"queue_depth\": %u, \"queue_capacity\": %u, "
            "\"jobs_done\": %" PRIu64 ", \"jobs_failed\": %" PRIu64
            ", \"jobs_cancelled\": %" PRIu64 ", \"busy_ms\": %" PRIu64
            ", \"running\": %s, \"faulted\": %s, \"fault\": ",
            d->queue_depth, d->queue_capacity, d->jobs_done, d->jobs_failed,
            d->jobs_cancelled, d->busy_ms,
            d->running ? "true" : "false", d->faulted ? "true" : "false");
    wv_json_str(f, d->fault);
    fprintf(f, ", \"wave_width\": %u, \"exchange\": ", d->wave_width);
    wv_json_str(f, d->exchange);
    fputs(", \"exchange_reason\": ", f);
    wv_json_str(f, d->exchange_reason);
    if (s->device_hashes != NULL)
      fprintf(f, ", \"hashes\": %" PRIu64 ", \"hash_rate\": %.6g",
              s->device_hashes[i], s->device_hash_rate[i]);
    else
      fputs(", \"hashes\": null, \"hash_rate\": null", f);
    out_health_json(f, d);
    out_guard_json(f, d);
    fputs(", \"packs\": ", f);
    out_checks_json(f, d->packs, d->n_packs);
    fputc('}', f);
  }
  fputs("]}\n", f);
}

void wv_print_status(FILE *f, const wave_status *s, const char *url,
                     int json)
{
  if (json) {
    out_status_json(f, s, url);
    return;
  }
  fprintf(f, "wavedd %s at %s: up %.1f s, %" PRIu64 " jobs served, %" PRIu64
          " failed, %" PRIu64 " cancelled, %s, instance %" PRIu64 "\n",
          s->version, url, (double)s->uptime_ms / 1000.0, s->jobs_served,
          s->jobs_failed, s->jobs_cancelled,
          s->ready ? "ready" : "preparing packs", s->instance);
  for (size_t i = 0; i < s->n_listen; i++) {
    fprintf(f, "%s%s", i ? ", " : "listening on ", s->listen[i]);
    if (s->listen_connections != NULL)
      fprintf(f, " (%" PRIu64 " connection%s)", s->listen_connections[i],
              s->listen_connections[i] == 1 ? "" : "s");
  }
  if (s->n_listen > 0)
    fputc('\n', f);
  if (s->max_files > 0)
    fprintf(f, "open files limit %" PRIu64 "\n", s->max_files);
  for (size_t i = 0; i < s->n_shares; i++) {
    const wave_share *h = &s->shares[i];
    fprintf(f, "share %s: regions %" PRIu64 " of %" PRIu64 " bytes, "
            "copies and streams %" PRIu64 " of %" PRIu64 " bytes, "
            "file descriptors %" PRIu64 " of %" PRIu64 ", side-socket "
            "connections %u of %u\n",
            h->principal, h->region_bytes, h->region_limit, h->stream_bytes,
            h->stream_limit, h->file_fds, h->file_fd_limit, h->fd_conns,
            h->fd_limit);
  }
  if (s->fd_limit > 0)
    fprintf(f, "descriptor side connections %u (at most %u a socket)\n",
            s->fd_conns, s->fd_limit);
  for (size_t i = 0; i < s->n_devices; i++) {
    const wave_device_status *d = &s->devices[i];
    fprintf(f, "\n%s (%s): %s\n", d->name, d->backend, d->description);
    if (d->faulted)
      fprintf(f, "  state      FAULTED: %s\n", d->fault);
    else if (strcmp(out_guard(d), "throttled") == 0 ||
             strcmp(out_guard(d), "degraded") == 0)
      fprintf(f, "  state      %s: %s\n", out_guard(d), out_guard_why(d));
    else
      fprintf(f, "  state      %s\n", d->running ? "running" : "idle");
    fprintf(f, "  queue      %u of %u\n", d->queue_depth, d->queue_capacity);
    fprintf(f, "  jobs       %" PRIu64 " done, %" PRIu64 " failed, %" PRIu64
            " cancelled; busy %.1f s\n", d->jobs_done, d->jobs_failed,
            d->jobs_cancelled, (double)d->busy_ms / 1000.0);
    if (s->device_hashes != NULL && s->device_hashes[i] > 0) {
      char r[32];
      wv_fmt_rate(r, sizeof r, s->device_hash_rate[i]);
      fprintf(f, "  hashed     %" PRIu64 " nonces; %s over the last 10 s\n",
              s->device_hashes[i], r);
    }
    out_health_text(f, d);
    out_guard_text(f, d);
    fprintf(f, "  wave width %u\n", d->wave_width);
    if (d->exchange[0] != '\0')
      fprintf(f, "  exchange   %s%s%s%s\n", d->exchange,
              d->exchange_reason[0] ? " (" : "", d->exchange_reason,
              d->exchange_reason[0] ? ")" : "");
    for (size_t k = 0; k < d->n_packs; k++) {
      fprintf(f, "  pack       %s: %s", d->packs[k].pack,
              out_check_word(d->packs[k].ok, d->packs[k].state));
      out_detail(f, d->packs[k].state, d->packs[k].detail);
      if (d->packs[k].hash_rate > 0)
        fprintf(f, ", %.4g hashes/s measured", d->packs[k].hash_rate);
      fputc('\n', f);
    }
  }
}

void wv_print_packs(FILE *f, const wave_pack_info *p, size_t n, int json)
{
  if (json) {
    fputs("{\"packs\": [", f);
    for (size_t i = 0; i < n; i++) {
      fputs(i ? ", {\"name\": " : "{\"name\": ", f);
      wv_json_str(f, p[i].name);
      fprintf(f, ", \"version\": %u, \"dataset_bytes\": %" PRIu64
              ", \"description\": ", p[i].version, p[i].dataset_bytes);
      wv_json_str(f, p[i].description);
      fputs(", \"devices\": [", f);
      for (size_t k = 0; k < p[i].n_devices; k++) {
        fputs(k ? ", {\"device\": " : "{\"device\": ", f);
        wv_json_str(f, p[i].devices[k].device);
        fprintf(f, ", \"ok\": %s, \"state\": ",
                p[i].devices[k].ok ? "true" : "false");
        wv_json_str(f, p[i].devices[k].state);
        fputs(", \"detail\": ", f);
        wv_json_str(f, p[i].devices[k].detail);
        fputc('}', f);
      }
      fputs("]}", f);
    }
    fputs("]}\n", f);
    return;
  }
  if (n == 0)
    fputs("no packs loaded\n", f);
  for (size_t i = 0; i < n; i++) {
    fprintf(f, "%s v%u", p[i].name, p[i].version);
    if (p[i].dataset_bytes)
      fprintf(f, ", dataset %" PRIu64 " bytes", p[i].dataset_bytes);
    else
      fputs(", no dataset", f);  /* the description says "closed form" */
    if (p[i].description[0])
      fprintf(f, ": %s", p[i].description);
    fputc('\n', f);
    for (size_t k = 0; k < p[i].n_devices; k++) {
      fprintf(f, "  %-12s %s", p[i].devices[k].device,
              out_check_word(p[i].devices[k].ok, p[i].devices[k].state));
      out_detail(f, p[i].devices[k].state, p[i].devices[k].detail);
      fputc('\n', f);
    }
  }
}
