/* ctl_bench.c - `wavectl bench`: the offline check of a machine's devices
 * through a running wavedd (docs/cli.md "bench").
 *
 * Per device (every one the daemon lists, or --device NAME):
 *  - known answers: the daemon's own per-device pack self-checks
 *    (StatusReply's PackCheck, what `wavectl packs` shows), ok when every
 *    pack passed, FAILED when one failed, "-" when the device has no hash
 *    support;
 *  - a timed hash job of --nonces N nonces from 0 (--pack, default the
 *    first pack the daemon lists) pinned to the device, whose
 *    job_fingerprint (FNV-1a-64 over the segment fingerprints,
 *    docs/hash.md) must equal the CPU's: the pack's C reference
 *    (workers/hash/ref.c, in the wvhash library wavectl links for --fleet
 *    anyway) over the pack in $WAVE_PACKS_DIR (else the installed
 *    folder), folded here with core/segments.h.  Not the daemon's cpu
 *    device: the client tells no backend from another (the seam
 *    tests/check_includes.sh holds), and a reference outside the daemon
 *    checks its CPU device too;
 *  - a sum and a max (keyed by the op table's order keys) of --rows
 *    generated rows of each dtype, compared bit for bit with
 *    wv_reduce_reference (core/reduce.c) and timed on the device (the
 *    result's seconds: device time, not the transfer).  A dtype the device
 *    does not serve (NODEV, UNSUPPORTED, OPDTYPE) is skipped, not failed.
 * One table (or --json), colour only on a terminal; the caller exits 1
 * when any check failed.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/ctl.h"
#include "core/base.h"
#include "core/reduce.h"
#include "core/segments.h"

#define CB_NDT 6
#define CB_NOP 2
static const wave_dtype cb_dtypes[CB_NDT] = {
  WAVE_U32, WAVE_S32, WAVE_F32, WAVE_U64, WAVE_S64, WAVE_F64};
static const wave_op cb_ops[CB_NOP] = {WAVE_SUM, WAVE_MAX};

typedef struct cb_red {
  int state;        /* 0 not run, 1 ok, 2 mismatch or error, 3 skipped */
  uint64_t bits;    /* the device's first value */
  double seconds;
  wave_err code;    /* state 2/3 from an error */
} cb_red;

typedef struct cb_row {
  const wave_device_status *d;
  const char *ka;   /* "ok", "FAILED", "pending", "-" */
  int hashed;       /* 0 none run (no hash support), 1 run */
  int hash_ok;
  uint64_t fp;
  double rate;
  wave_error herr;  /* the hash job's error, code 0 none */
  cb_red red[CB_NDT][CB_NOP];
  uint64_t red_bytes;
  double red_seconds;
  int red_ok;
} cb_row;

/* splitmix64: the generated rows, the same every run. */
static uint64_t cb_next(uint64_t *s)
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* rows of dtype, finite floats in [-2^20, 2^20) for the float dtypes. */
static void *cb_gen(wave_dtype dt, uint64_t rows, size_t *bytes)
{
  size_t w = wv_dtype_size(dt);
  unsigned char *p = malloc((size_t)rows * w + 8);
  if (p == NULL)
    return NULL;
  uint64_t s = 0x5eed0000u + (uint64_t)dt;
  for (uint64_t i = 0; i < rows; i++) {
    uint64_t r = cb_next(&s);
    if (dt == WAVE_F32) {
      float f = (float)((double)(int32_t)(uint32_t)r / 2048.0);
      memcpy(p + i * 4, &f, 4);
    } else if (dt == WAVE_F64) {
      double f = (double)(int64_t)r / 8796093022208.0;  /* 2^43 */
      memcpy(p + i * 8, &f, 8);
    } else {
      memcpy(p + i * w, &r, w);  /* little-endian hosts (core/base.h) */
    }
  }
  *bytes = rows * w;
  return p;
}

static int cb_skip_code(wave_err c)
{
  return c == WAVE_ENODEV || c == WAVE_EUNSUPPORTED || c == WAVE_EOPDTYPE;
}

/* Every device's sum and max of each dtype against the reference. */
static int cb_reduce_all(wave_client *c, cb_row *rows, size_t n,
                         uint64_t nrows, wave_error *err)
{
  for (int t = 0; t < CB_NDT; t++) {
    size_t bytes;
    void *buf = cb_gen(cb_dtypes[t], nrows, &bytes);
    if (buf == NULL)
      return wv_seterr(err, WAVE_ENOMEM, "bench: %" PRIu64 " rows", nrows);
    for (int o = 0; o < CB_NOP; o++) {
      wv_span sp = {buf, nrows};
      wv_reduce_job job = {.dtype = cb_dtypes[t], .op = cb_ops[o],
                           .input = &sp, .n_input = 1, .rows = nrows};
      wv_reduce_out ref;
      int rc = wv_reduce_reference(&job, &ref, err);
      if (rc != 0) {
        free(buf);
        return rc;
      }
      wave_chunk ch = {buf, bytes};
      for (size_t i = 0; i < n; i++) {
        wave_reduce_request q = {.dtype = cb_dtypes[t], .op = cb_ops[o],
                                 .input = &ch, .n_input = 1,
                                 .device = rows[i].d->name};
        wave_reduce_result r;
        wave_error e = {0};
        cb_red *x = &rows[i].red[t][o];
        if (wave_reduce(c, &q, &r, &e) != 0) {
          x->code = (wave_err)e.code;
          x->state = cb_skip_code(x->code) ? 3 : 2;
          if (e.code == WAVE_ETIMEDOUT || e.code == WAVE_EIO) {
            free(buf);
            *err = e;
            return e.code;
          }
          continue;
        }
        x->bits = r.bits[0];
        x->seconds = r.seconds;
        x->state = r.bits[0] == ref.bits[0] && r.n_values == ref.n_values &&
                   r.count == ref.count ? 1 : 2;
        rows[i].red_bytes += bytes;
        rows[i].red_seconds += r.seconds;
      }
    }
    free(buf);
  }
  return 0;
}

/* The job fingerprint of [0, count) from the pack's C reference. */
static int cb_local_fp(const char *pack, uint64_t count, unsigned s,
                       uint64_t *fp, wave_error *err)
{
  wv_fleet_pack pk;
  int rc = wv_fleet_pack_open(wv_fleet_packs_dir(), pack, &pk, err);
  if (rc != 0)
    return rc;
  uint64_t seg = (uint64_t)1 << s, h = WV_FNV_OFFSET;
  uint64_t *out = malloc(seg * sizeof *out);
  if (out == NULL)
    rc = wv_seterr(err, WAVE_ENOMEM, NULL);
  for (uint64_t n0 = 0; rc == 0 && n0 < count; n0 += seg) {
    uint64_t k = count - n0 < seg ? count - n0 : seg;
    if ((rc = wv_fleet_rehash(&pk, pack, n0, k, out, err)) != 0)
      break;
    uint64_t f = wv_fnv1a64_u64(WV_FNV_OFFSET, out, k);
    h = wv_fnv1a64_u64(h, &f, 1);
  }
  free(out);
  wv_fleet_pack_close(&pk);
  *fp = h;
  return rc;
}

/* Known answers of device d: ok, FAILED, pending or "-" (none). */
static const char *cb_known(const wave_device_status *d)
{
  int ok = 0, failed = 0, pending = 0;
  for (size_t k = 0; k < d->n_packs; k++) {
    const char *s = d->packs[k].state ? d->packs[k].state : "";
    ok += strcmp(s, "ok") == 0;
    failed += strcmp(s, "failed") == 0;
    pending += strcmp(s, "pending") == 0;
  }
  return failed ? "FAILED" : pending ? "pending" : ok ? "ok" : "-";
}

/* The hash job of row w; 0, or a transport error to give up on. */
static int cb_hash_one(wave_client *c, cb_row *w, const char *pack,
                       uint64_t count, wave_error *err)
{
  wave_hash_request q = {.pack = pack, .count = count,
                         .device = w->d->name};
  wave_hash_result r;
  if (wave_hash(c, &q, &r, NULL, NULL, &w->herr) != 0) {
    if (w->herr.code == WAVE_ETIMEDOUT || w->herr.code == WAVE_EIO) {
      *err = w->herr;
      return err->code;
    }
    w->hashed = 1;
    return 0;
  }
  w->hashed = 1;
  w->fp = r.job_fingerprint;
  w->rate = r.seconds > 0 ? (double)r.hashes / r.seconds : 0.0;
  wave_hash_result_free(&r);
  return 0;
}

static const char *cb_color(int on, int ok)
{
  return !on ? "" : ok ? "\033[32m" : "\033[31m";
}

static void cb_text(FILE *f, const cb_row *rows, size_t n, const char *pack,
                    uint64_t count, const char *refname, uint64_t ref)
{
  int tty = isatty(fileno(f));
  const char *off = tty ? "\033[0m" : "";
  fprintf(f, "pack %s, nonces [0, %" PRIu64 "), C reference (%s): "
          "%016" PRIx64 "\n", pack ? pack : "-", count, refname, ref);
  fprintf(f, "%-12s %-8s %-13s %-12s %-11s %-16s %s\n", "DEVICE", "BACKEND",
          "KNOWN-ANSWERS", "HASH-RATE", "REDUCE-GB/s", "CHECKSUM", "RESULT");
  for (size_t i = 0; i < n; i++) {
    const cb_row *w = &rows[i];
    char rate[32] = "-", gbps[32] = "-", fp[24] = "-";
    int ka_bad = strcmp(w->ka, "FAILED") == 0;
    if (w->hashed && w->herr.code == 0) {
      wv_fmt_rate(rate, sizeof rate, w->rate);
      snprintf(fp, sizeof fp, "%016" PRIx64, w->fp);
    } else if (w->hashed) {
      snprintf(fp, sizeof fp, "%s", wave_errname(w->herr.code));
    }
    if (w->red_seconds > 0)
      snprintf(gbps, sizeof gbps, "%.2f",
               (double)w->red_bytes / w->red_seconds / 1e9);
    int ok = !ka_bad && (!w->hashed || w->hash_ok) && w->red_ok;
    fprintf(f, "%-12s %-8s %s%-13s%s %-12s %s%-11s%s %s%-16s%s %s%s%s\n",
            w->d->name, w->d->backend, cb_color(tty, !ka_bad), w->ka, off,
            rate, cb_color(tty, w->red_ok), gbps, off,
            cb_color(tty, !w->hashed || w->hash_ok), fp, off,
            cb_color(tty, ok), ok ? "ok" : "FAILED", off);
    for (int t = 0; t < CB_NDT; t++)
      for (int o = 0; o < CB_NOP; o++)
        if (w->red[t][o].state == 2)
          fprintf(f, "  %s: %s %s %s%s\n", w->d->name,
                  wave_op_name(cb_ops[o]), wave_dtype_name(cb_dtypes[t]),
                  w->red[t][o].code ? "failed " : "differs from the "
                  "reference", w->red[t][o].code ?
                  wave_errname(w->red[t][o].code) : "");
    int skipped = 0;
    for (int t = 0; t < CB_NDT; t++)
      for (int o = 0; o < CB_NOP; o++)
        skipped += w->red[t][o].state == 3;
    if (skipped)
      fprintf(f, "  %s: %d of %d reductions not served (skipped)\n",
              w->d->name, skipped, CB_NDT * CB_NOP);
    if (w->hashed && !w->hash_ok)
      fprintf(f, "  %s: hash %s\n", w->d->name, w->herr.code ?
              w->herr.message : "fingerprint differs from the reference");
  }
}

static void cb_json_row(FILE *f, const cb_row *w)
{
  fputs("{\"device\": ", f);
  wv_json_str(f, w->d->name);
  fputs(", \"backend\": ", f);
  wv_json_str(f, w->d->backend);
  fputs(", \"known_answers\": ", f);
  wv_json_str(f, w->ka);
  fputs(", \"hash\": ", f);
  if (!w->hashed) {
    fputs("null", f);
  } else {
    fprintf(f, "{\"ok\": %s, \"rate\": %.1f, \"fingerprint\": \"%016"
            PRIx64 "\"", w->hash_ok ? "true" : "false", w->rate, w->fp);
    if (w->herr.code) {
      fputs(", \"error\": ", f);
      wv_json_str(f, wave_errname(w->herr.code));
    }
    fputc('}', f);
  }
  fprintf(f, ", \"reduce\": {\"ok\": %s, \"gbps\": %.3f, \"runs\": [",
          w->red_ok ? "true" : "false", w->red_seconds > 0 ?
          (double)w->red_bytes / w->red_seconds / 1e9 : 0.0);
  static const char *const st[] = {"not run", "ok", "FAILED", "skipped"};
  int first = 1;
  for (int t = 0; t < CB_NDT; t++)
    for (int o = 0; o < CB_NOP; o++, first = 0) {
      const cb_red *x = &w->red[t][o];
      fprintf(f, "%s{\"dtype\": \"%s\", \"op\": \"%s\", \"result\": \"%s\","
              " \"bits\": \"%016" PRIx64 "\", \"seconds\": %.6f",
              first ? "" : ", ", wave_dtype_name(cb_dtypes[t]),
              wave_op_name(cb_ops[o]), st[x->state], x->bits, x->seconds);
      if (x->code)
        fprintf(f, ", \"error\": \"%s\"", wave_errname(x->code));
      fputc('}', f);
    }
  fputs("]}}", f);
}

/* The pack to hash with: --pack, else the first one the daemon lists. */
static const char *cb_pack(const wv_args *a, const wave_status *s)
{
  if (a->pack)
    return a->pack;
  for (size_t i = 0; i < s->n_devices; i++)
    if (s->devices[i].n_packs > 0)
      return s->devices[i].packs[0].pack;
  return NULL;
}

/* The reference fingerprint, from the pack's C reference. */
static int cb_reference(const char *pack, uint64_t count, uint64_t *fp,
                        wave_error *err)
{
  int rc = cb_local_fp(pack, count, WV_SEG_LOG2_DEFAULT, fp, err);
  if (rc != 0) {
    char why[sizeof err->message];
    snprintf(why, sizeof why, "%s", err->message);
    wv_seterr(err, rc, "bench: the C reference of pack '%s' failed: %s",
              pack, why);
  }
  return rc;
}

int wv_ctl_bench(const wv_args *a, wave_client *c, int *failed,
                 wave_error *err)
{
  wave_status *s;
  *failed = 0;
  int rc = wave_status_get(c, &s, err);
  if (rc != 0)
    return rc;
  cb_row *rows = calloc(s->n_devices ? s->n_devices : 1, sizeof *rows);
  size_t n = 0;
  if (rows == NULL) {
    wave_status_free(s);
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  }
  for (size_t i = 0; i < s->n_devices; i++)
    if (a->device == NULL || strcmp(a->device, s->devices[i].name) == 0)
      rows[n++].d = &s->devices[i];
  const char *pack = cb_pack(a, s), *refname = wv_fleet_packs_dir();
  uint64_t count = a->have_count ? a->count : (uint64_t)1 << 20, ref = 0;
  uint64_t nrows = a->rows ? a->rows : (uint64_t)1 << 22;
  if (n == 0)
    rc = wv_seterr(err, WAVE_ENODEV, "bench: no device '%s' (wavectl "
                   "status lists them)", a->device);
  if (rc == 0 && pack != NULL)
    rc = cb_reference(pack, count, &ref, err);
  for (size_t i = 0; rc == 0 && i < n; i++) {
    rows[i].ka = cb_known(rows[i].d);
    if (pack != NULL && strcmp(rows[i].ka, "-") != 0 &&
        (rc = cb_hash_one(c, &rows[i], pack, count, err)) == 0)
      rows[i].hash_ok = rows[i].herr.code == 0 && rows[i].fp == ref;
  }
  if (rc == 0)
    rc = cb_reduce_all(c, rows, n, nrows, err);
  for (size_t i = 0; rc == 0 && i < n; i++) {
    cb_row *w = &rows[i];
    w->red_ok = 1;
    for (int t = 0; t < CB_NDT; t++)
      for (int o = 0; o < CB_NOP; o++)
        w->red_ok &= w->red[t][o].state != 2;
    *failed |= strcmp(w->ka, "FAILED") == 0 || !w->red_ok ||
               (w->hashed && !w->hash_ok);
  }
  if (rc == 0 && a->json) {
    fputs("{\"pack\": ", stdout);
    wv_json_str(stdout, pack ? pack : "");
    fprintf(stdout, ", \"nonces\": %" PRIu64 ", \"rows\": %" PRIu64
            ", \"packs_dir\": ", count, nrows);
    wv_json_str(stdout, refname);
    fprintf(stdout, ", \"reference_fingerprint\": \"%016" PRIx64 "\", "
            "\"ok\": %s, \"devices\": [", ref, *failed ? "false" : "true");
    for (size_t i = 0; i < n; i++) {
      fputs(i ? ", " : "", stdout);
      cb_json_row(stdout, &rows[i]);
    }
    fputs("]}\n", stdout);
  } else if (rc == 0) {
    cb_text(stdout, rows, n, pack, count, refname, ref);
  }
  free(rows);
  wave_status_free(s);
  return rc;
}
