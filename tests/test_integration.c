/* test_integration.c - the real wavedd driven through libwaveclient and the
 * wavectl binary.
 *
 * main() starts one wavedd (the built binary, WAVEDD_PATH) in a temporary
 * folder with a config of its own (integ_harness.c): two CPU devices,
 * listening on an ipc socket in that folder and on tcp://127.0.0.1:<free
 * port>.  Every test then talks to it over both transports, either through
 * the library or by running wavectl (WAVECTL_PATH) and reading its exit
 * status, stdout and stderr.  At the end the daemon gets SIGTERM and must
 * exit 0.  This file has the reductions; status, packs and the CLI's
 * reachability and help are in integ_ctl.c, hash jobs in integ_hash.c.
 *
 * Expected results are computed here, independently, from
 * docs/reduction.md (integer ops, float min/max/extent with the -0.0 < +0.0
 * rule, and the fixed float-sum tree); the JSON printed by wavectl is read
 * with tests/jsonq.c.  Bad jobs must give an error and a nonzero exit while
 * the daemon keeps answering.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "integ.h"
#include "jsonq.h"
#include "wave/client.h"

/* ---- the reference ------------------------------------------------------ */

/* A job as the test holds it: chunks of host-order rows (x86 is
 * little-endian, as the wire is) and a flat mask. */
typedef struct ti_job {
  wave_dtype dtype;
  wave_op op;
  size_t n_chunks;
  uint32_t *chunk[8];
  size_t rows[8];
  uint32_t *mask; /* NULL: no mask; else one row per input row */
  size_t mask_cuts[8]; /* mask chunk sizes, summing to the total rows */
  size_t n_mask_chunks;
} ti_job;

static float ti_f(uint32_t b)
{
  float f;
  memcpy(&f, &b, 4);
  return f;
}

static uint32_t ti_b(float f)
{
  uint32_t b;
  memcpy(&b, &f, 4);
  return b;
}

/* G and the levels of docs/reduction.md, in place over a[0..n-1]. */
static float ti_levels(float *a, size_t n)
{
  while (n > 1) {
    size_t m = (n + 255) / 256;
    for (size_t g = 0; g < m; g++) {
      float v[256];
      for (size_t i = 0; i < 256; i++)
        v[i] = 256 * g + i < n ? a[256 * g + i] : -0.0f;
      for (size_t h = 128; h >= 1; h /= 2)
        for (size_t i = 0; i < h; i++)
          v[i] = v[i] + v[i + h];
      a[g] = v[0];
    }
    n = m;
  }
  return a[0];
}

/* -0.0 < +0.0, otherwise numeric order (finite values only). */
static int ti_fless(float a, float b)
{
  return a < b || (a == b && signbit(a) && !signbit(b));
}

static void ti_reference(const ti_job *j, uint32_t out[2], uint64_t *count)
{
  size_t total = 0;
  for (size_t c = 0; c < j->n_chunks; c++)
    total += j->rows[c];
  uint64_t cnt = 0;
  uint32_t acc = 0, lo = 0, hi = 0;
  int have = 0;
  float *partial = calloc(j->n_chunks + 1, sizeof(float));
  size_t n_partial = 0, base = 0;
  for (size_t c = 0; c < j->n_chunks; c++) {
    float *leaves = malloc((j->rows[c] + 1) * sizeof(float));
    for (size_t i = 0; i < j->rows[c]; i++) {
      uint32_t x = j->chunk[c][i];
      int sel = j->mask == NULL || j->mask[base + i] != 0;
      leaves[i] = sel ? ti_f(x) : -0.0f;
      if (!sel)
        continue;
      cnt++;
      if (j->dtype == WAVE_F32) {
        float f = ti_f(x);
        if (!isfinite(f))
          continue;
        if (!have || ti_fless(f, ti_f(lo)))
          lo = x;
        if (!have || ti_fless(ti_f(hi), f))
          hi = x;
        have = 1;
        continue;
      }
      int first = cnt == 1;
      switch (j->op) {
      case WAVE_SUM: acc += x; break;
      case WAVE_AND: acc = first ? x : (acc & x); break;
      case WAVE_OR: acc |= x; break;
      case WAVE_XOR: acc ^= x; break;
      default:
        if (j->dtype == WAVE_S32) {
          if (first || (int32_t)x < (int32_t)lo) lo = x;
          if (first || (int32_t)x > (int32_t)hi) hi = x;
        } else {
          if (first || x < lo) lo = x;
          if (first || x > hi) hi = x;
        }
      }
    }
    if (j->rows[c] > 0)
      partial[n_partial++] = ti_levels(leaves, j->rows[c]);
    free(leaves);
    base += j->rows[c];
  }
  ck_assert_uint_eq(base, total);
  if (j->dtype == WAVE_F32 && !have)
    lo = hi = 0; /* no finite row: +0.0 */
  if (j->dtype == WAVE_F32 && j->op == WAVE_SUM) {
    float s = n_partial ? ti_levels(partial, n_partial) : 0.0f;
    acc = isnan(s) ? 0x7fc00000u : ti_b(s);
  }
  free(partial);
  if (j->op == WAVE_MIN || j->op == WAVE_EXTENT)
    out[0] = lo;
  else if (j->op == WAVE_MAX)
    out[0] = hi;
  else
    out[0] = acc;
  out[1] = hi;
  if (cnt == 0)
    out[0] = out[1] = 0; /* nothing selected: 0 for every op */
  *count = cnt;
}

static uint32_t ti_rng = 0x2545f491u;

static uint32_t ti_rand(void)
{
  ti_rng ^= ti_rng << 13;
  ti_rng ^= ti_rng >> 17;
  ti_rng ^= ti_rng << 5;
  return ti_rng;
}

/* Row values for dtype; floats of varied magnitude, with the odd special
 * (NaN, infinities, zeros of both signs, a subnormal) mixed in except for
 * sums (where one NaN would hide the order of the other additions). */
static uint32_t ti_value(wave_dtype d, int specials)
{
  uint32_t r = ti_rand();
  if (d != WAVE_F32)
    return r;
  if (specials && r % 53 == 0) {
    static const uint32_t sp[] = {0x7fc00000u, 0x7f800000u, 0xff800000u,
                                  0x80000000u, 0x00000000u, 0x00000003u,
                                  0xffc12345u};
    return sp[(r >> 8) % 7];
  }
  if (r % 4 == 0) /* small exact values: ties and repeats */
    return ti_b((float)((int32_t)(r % 2001u) - 1000) / 64.0f);
  /* any sign and mantissa, exponents 2^-12 .. 2^12: sums round, so the
   * order of additions shows in the bits */
  uint32_t e = 127 - 12 + (ti_rand() % 25);
  return (r & 0x80000000u) | e << 23 | (ti_rand() & 0x007fffffu);
}

static void ti_job_make(ti_job *j, wave_dtype d, wave_op op, size_t n,
                        const size_t *rows, int masked, const size_t *cuts,
                        size_t n_cuts)
{
  memset(j, 0, sizeof *j);
  j->dtype = d;
  j->op = op;
  j->n_chunks = n;
  size_t total = 0;
  for (size_t c = 0; c < n; c++) {
    j->rows[c] = rows[c];
    j->chunk[c] = malloc((rows[c] + 1) * 4);
    for (size_t i = 0; i < rows[c]; i++)
      j->chunk[c][i] = ti_value(d, op != WAVE_SUM);
    total += rows[c];
  }
  if (masked) {
    j->mask = malloc((total + 1) * 4);
    for (size_t i = 0; i < total; i++)
      j->mask[i] = ti_rand() % 3 == 0 ? 0 : (ti_rand() | 1);
    size_t left = total;
    for (size_t k = 0; k < n_cuts && left; k++) {
      size_t cut = cuts[k] < left ? cuts[k] : left;
      j->mask_cuts[j->n_mask_chunks++] = cut;
      left -= cut;
    }
    if (left)
      j->mask_cuts[j->n_mask_chunks++] = left;
  }
}

static void ti_job_free(ti_job *j)
{
  for (size_t c = 0; c < j->n_chunks; c++)
    free(j->chunk[c]);
  free(j->mask);
}

static int ti_lib_reduce(wave_client *c, const ti_job *j, const char *device,
                         wave_reduce_result *r, wave_error *e)
{
  wave_chunk in[8], mk[8];
  for (size_t k = 0; k < j->n_chunks; k++)
    in[k] = (wave_chunk){j->chunk[k], j->rows[k] * 4};
  size_t off = 0;
  for (size_t k = 0; k < j->n_mask_chunks; k++) {
    mk[k] = (wave_chunk){j->mask + off, j->mask_cuts[k] * 4};
    off += j->mask_cuts[k];
  }
  wave_reduce_request q = {
    .dtype = j->dtype, .op = j->op, .input = in, .n_input = j->n_chunks,
    .mask = mk, .n_mask = j->n_mask_chunks, .has_mask = j->mask != NULL,
    .device = device,
  };
  return wave_reduce(c, &q, r, e);
}

static void ti_check(const ti_job *j, const wave_reduce_result *r)
{
  uint32_t want[2];
  uint64_t cnt;
  size_t total = 0;
  ti_reference(j, want, &cnt);
  for (size_t k = 0; k < j->n_chunks; k++)
    total += j->rows[k];
  unsigned nv = j->op == WAVE_EXTENT ? 2 : 1;
  ck_assert_uint_eq(r->n_values, nv);
  for (unsigned i = 0; i < nv; i++)
    ck_assert_msg(r->bits[i] == want[i], "%s %s value %u: got 0x%08x, want "
                  "0x%08x", wave_op_name(j->op), wave_dtype_name(j->dtype), i,
                  (unsigned)r->bits[i], want[i]);
  ck_assert_uint_eq(r->count, cnt);
  ck_assert_uint_eq(r->rows, total);
  ck_assert_int_eq(r->dtype, j->dtype);
  ck_assert_int_eq(r->op, j->op);
}

/* ---- library: reductions ------------------------------------------------ */

static const wave_op ti_ops[] = {WAVE_SUM, WAVE_MIN, WAVE_MAX, WAVE_EXTENT,
                                 WAVE_AND, WAVE_OR, WAVE_XOR};
static const wave_dtype ti_dtypes[] = {WAVE_U32, WAVE_S32, WAVE_F32};

START_TEST(lib_reduce_all)
{
  /* chunks of 1000, 0, 24 and 3000 rows; the mask cut 512 + 512 + 7 + rest */
  static const size_t rows[] = {1000, 0, 24, 3000};
  static const size_t cuts[] = {512, 512, 7};
  for (int t = 0; t < 2; t++) {
    wave_client *c = wv_it_open(t);
    for (size_t di = 0; di < 3; di++)
      for (size_t oi = 0; oi < 7; oi++) {
        if (ti_dtypes[di] == WAVE_F32 && ti_ops[oi] >= WAVE_AND)
          continue;
        for (int masked = 0; masked < 2; masked++) {
          ti_job j;
          ti_job_make(&j, ti_dtypes[di], ti_ops[oi], 4, rows, masked, cuts,
                      3);
          wave_reduce_result r;
          wave_error e = {0};
          const char *dev = (oi & 1) ? "cpu1" : NULL;
          ck_assert_msg(ti_lib_reduce(c, &j, dev, &r, &e) == 0, "%s: %s",
                        wv_it_urls[t], e.message);
          ti_check(&j, &r);
          if (dev)
            ck_assert_str_eq(r.device, dev);
          ti_job_free(&j);
        }
      }
    wave_client_close(c);
  }
}
END_TEST

START_TEST(lib_reduce_edges)
{
  wave_client *c = wv_it_open(0);
  wave_reduce_result r;
  wave_error e = {0};
  /* -0.0 and +0.0: min is -0.0, max +0.0; NaN and inf ignored */
  uint32_t z[] = {0x00000000u, 0x7fc00000u, 0x80000000u, 0x7f800000u};
  wave_chunk ch = {z, sizeof z};
  wave_reduce_request q = {.dtype = WAVE_F32, .op = WAVE_EXTENT, .input = &ch,
                           .n_input = 1};
  ck_assert_int_eq(wave_reduce(c, &q, &r, &e), 0);
  ck_assert_uint_eq(r.bits[0], 0x80000000u);
  ck_assert_uint_eq(r.bits[1], 0x00000000u);
  ck_assert_uint_eq(r.count, 4);
  /* a sum through NaN is the canonical NaN */
  q.op = WAVE_SUM;
  ck_assert_int_eq(wave_reduce(c, &q, &r, &e), 0);
  ck_assert_uint_eq(r.bits[0], 0x7fc00000u);
  /* everything masked out: 0, count 0 (and an AND, whose identity is not
   * 0, still says 0) */
  uint32_t m[4] = {0, 0, 0, 0};
  wave_chunk mc[2] = {{m, 4}, {m + 1, 12}};
  q = (wave_reduce_request){.dtype = WAVE_U32, .op = WAVE_AND, .input = &ch,
                            .n_input = 1, .mask = mc, .n_mask = 2,
                            .has_mask = 1};
  ck_assert_int_eq(wave_reduce(c, &q, &r, &e), 0);
  ck_assert_uint_eq(r.bits[0], 0);
  ck_assert_uint_eq(r.count, 0);
  ck_assert_uint_eq(r.rows, 4);
  /* no chunks at all, and only empty chunks */
  q = (wave_reduce_request){.dtype = WAVE_S32, .op = WAVE_MIN};
  ck_assert_int_eq(wave_reduce(c, &q, &r, &e), 0);
  ck_assert_uint_eq(r.bits[0], 0);
  ck_assert_uint_eq(r.count, 0);
  wave_chunk empty[2] = {{NULL, 0}, {z, 0}};
  q = (wave_reduce_request){.dtype = WAVE_F32, .op = WAVE_EXTENT,
                            .input = empty, .n_input = 2};
  ck_assert_int_eq(wave_reduce(c, &q, &r, &e), 0);
  ck_assert_uint_eq(r.n_values, 2);
  ck_assert_uint_eq(r.bits[0] | r.bits[1], 0);
  wave_client_close(c);
}
END_TEST

static void ti_lib_bad(wave_client *c, const wave_reduce_request *q, int want)
{
  wave_reduce_result r;
  wave_error e = {0};
  int rv = wave_reduce(c, q, &r, &e);
  ck_assert_msg(rv == want, "got %s (%s), want %s", wave_errname(rv),
                e.message, wave_errname(want));
  ck_assert_int_eq(e.code, want);
  ck_assert_msg(e.message[0] != '\0', "no message for %s", wave_errname(want));
}

START_TEST(lib_reduce_errors)
{
  uint32_t v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  wave_chunk ch = {v, sizeof v}, odd = {v, 7}, m3 = {v, 12};
  for (int t = 0; t < 2; t++) {
    wave_client *c = wv_it_open(t);
    wave_reduce_request q = {.dtype = WAVE_U32, .op = WAVE_SUM, .input = &ch,
                             .n_input = 1};
    q.op = (wave_op)99;
    ti_lib_bad(c, &q, WAVE_EOP);
    q.op = WAVE_SUM;
    q.dtype = (wave_dtype)42;
    ti_lib_bad(c, &q, WAVE_EDTYPE);
    q.dtype = WAVE_F32;
    q.op = WAVE_XOR;
    ti_lib_bad(c, &q, WAVE_EOPDTYPE);
    q.dtype = WAVE_U32;
    q.op = WAVE_SUM;
    q.input = &odd;
    ti_lib_bad(c, &q, WAVE_ELENGTH);
    q.input = &ch;
    q.mask = &m3;
    q.n_mask = 1;
    q.has_mask = 1;
    ti_lib_bad(c, &q, WAVE_EMASKLEN);
    q.has_mask = 0;
    q.device = "no-such-device";
    ti_lib_bad(c, &q, WAVE_ENODEV);
    wave_client_close(c);
  }
  wv_it_alive();
}
END_TEST

/* ---- library: one client, many threads --------------------------------- */

typedef struct ti_thr {
  wave_client *c;
  unsigned id;
  int failures;
  char why[256];
} ti_thr;

static void *ti_thread(void *arg)
{
  ti_thr *t = arg;
  for (unsigned k = 0; k < 25; k++) {
    /* Each call's data differs (thread id and round in every row), so a
     * reply delivered to the wrong caller shows as a wrong sum. */
    uint32_t v[300];
    uint32_t want = 0;
    for (unsigned i = 0; i < 300; i++) {
      v[i] = t->id * 1000003u + k * 7919u + i;
      want += v[i];
    }
    wave_chunk ch[2] = {{v, 100 * 4}, {v + 100, 200 * 4}};
    wave_reduce_request q = {.dtype = WAVE_U32, .op = WAVE_SUM, .input = ch,
                             .n_input = 2};
    wave_reduce_result r;
    wave_error e = {0};
    if (wave_reduce(t->c, &q, &r, &e) != 0) {
      t->failures++;
      snprintf(t->why, sizeof t->why, "%s", e.message);
    } else if (r.bits[0] != want || r.rows != 300) {
      t->failures++;
      snprintf(t->why, sizeof t->why, "thread %u round %u: 0x%08x != 0x%08x",
               t->id, k, (unsigned)r.bits[0], want);
    }
  }
  return NULL;
}

START_TEST(lib_concurrent)
{
  for (int tr = 0; tr < 2; tr++) {
    wave_client *c = wv_it_open(tr);
    enum { N = 8 };
    pthread_t th[N];
    ti_thr a[N];
    for (unsigned i = 0; i < N; i++) {
      a[i] = (ti_thr){.c = c, .id = i + 1};
      ck_assert_int_eq(pthread_create(&th[i], NULL, ti_thread, &a[i]), 0);
    }
    for (unsigned i = 0; i < N; i++) {
      pthread_join(th[i], NULL);
      ck_assert_msg(a[i].failures == 0, "%s", a[i].why);
    }
    wave_client_close(c);
  }
}
END_TEST

/* ---- wavectl: reductions ---------------------------------------------- */

/* Write rows as a file in format fmt ("raw", "npy", "text"). */
static void ti_write_rows(const char *path, const char *fmt, wave_dtype d,
                          const uint32_t *v, size_t n)
{
  if (strcmp(fmt, "raw") == 0) {
    wv_it_write(path, v, n * 4);
  } else if (strcmp(fmt, "npy") == 0) {
    /* version 1.0 header, padded with spaces to 64 bytes, '\n' last */
    const char *descr = d == WAVE_U32 ? "<u4" : d == WAVE_S32 ? "<i4" : "<f4";
    char hdr[128];
    int hl = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': "
                      "False, 'shape': (%zu,), }", descr, n);
    size_t total = 64 * ((10 + (size_t)hl + 1 + 63) / 64);
    unsigned char *b = malloc(total + n * 4);
    memcpy(b, "\x93NUMPY\x01\x00", 8);
    b[8] = (unsigned char)((total - 10) & 0xff);
    b[9] = (unsigned char)((total - 10) >> 8);
    memset(b + 10, ' ', total - 10);
    memcpy(b + 10, hdr, (size_t)hl);
    b[total - 1] = '\n';
    memcpy(b + total, v, n * 4);
    wv_it_write(path, b, total + n * 4);
    free(b);
  } else {
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    for (size_t i = 0; i < n; i++) {
      const char *sep = i % 7 == 6 ? "\n" : (i % 2 ? ", " : " ");
      if (d == WAVE_U32)
        fprintf(f, "%u%s", v[i], sep);
      else if (d == WAVE_S32)
        fprintf(f, "%d%s", (int32_t)v[i], sep);
      else if (isnan(ti_f(v[i])))
        fprintf(f, "nan%s", sep);
      else if (isinf(ti_f(v[i])))
        fprintf(f, "%sinf%s", ti_f(v[i]) < 0 ? "-" : "", sep);
      else
        fprintf(f, "%.9g%s", (double)ti_f(v[i]), sep);
    }
    fclose(f);
  }
}

/* Check wavectl's --json reduce output against the reference. */
static void ti_check_json(const ti_job *j, const char *json)
{
  uint32_t want[2];
  uint64_t cnt, u;
  ti_reference(j, want, &cnt);
  jq_node *n = jq_parse(json);
  ck_assert_msg(n != NULL, "not one JSON object: %s", json);
  const jq_node *res = jq_get(n, "result"), *bits = jq_get(n, "bits");
  unsigned nv = j->op == WAVE_EXTENT ? 2 : 1;
  ck_assert_ptr_nonnull(res);
  ck_assert_uint_eq(res->n, nv);
  ck_assert_uint_eq(bits->n, nv);
  for (unsigned i = 0; i < nv; i++) {
    char hex[16];
    snprintf(hex, sizeof hex, "0x%08x", want[i]);
    ck_assert_str_eq(jq_at(bits, i)->text, hex);
    const jq_node *v = jq_at(res, i);
    if (j->dtype == WAVE_F32) {
      float f = ti_f(want[i]);
      if (isnan(f) || isinf(f)) {
        ck_assert_int_eq(v->type, JQ_STR);
        ck_assert_str_eq(v->text, isnan(f) ? "nan" : f < 0 ? "-inf" : "inf");
      } else {
        ck_assert_int_eq(v->type, JQ_NUM);
        ck_assert_uint_eq(ti_b(strtof(v->text, NULL)), want[i]);
      }
    } else if (j->dtype == WAVE_S32) {
      int64_t s;
      ck_assert_int_eq(jq_i64(v, &s), 0);
      ck_assert_int_eq(s, (int32_t)want[i]);
    } else {
      ck_assert_int_eq(jq_u64(v, &u), 0);
      ck_assert_uint_eq(u, want[i]);
    }
  }
  ck_assert_int_eq(jq_u64(jq_get(n, "count"), &u), 0);
  ck_assert_uint_eq(u, cnt);
  size_t total = 0;
  for (size_t k = 0; k < j->n_chunks; k++)
    total += j->rows[k];
  ck_assert_int_eq(jq_u64(jq_get(n, "rows"), &u), 0);
  ck_assert_uint_eq(u, total);
  ck_assert_str_eq(jq_get(n, "dtype")->text, wave_dtype_name(j->dtype));
  ck_assert_str_eq(jq_get(n, "op")->text, wave_op_name(j->op));
  ck_assert_int_eq(jq_get(n, "device")->type, JQ_STR);
  jq_free(n);
}

/* Run `wavectl submit reduce` on job j written as files of format fmt. */
static void ti_ctl_reduce(const ti_job *j, const char *fmt, int t,
                          wv_it_out *o, int json)
{
  const char *argv[48];
  char paths[16][300];
  int argc = 0, np = 0;
  argv[argc++] = "submit";
  argv[argc++] = "reduce";
  argv[argc++] = "--op";
  argv[argc++] = wave_op_name(j->op);
  argv[argc++] = "--dtype";
  argv[argc++] = wave_dtype_name(j->dtype);
  argv[argc++] = "--url";
  argv[argc++] = wv_it_urls[t];
  if (strcmp(fmt, "text") == 0) {
    argv[argc++] = "--format";
    argv[argc++] = "text";
  }
  for (size_t k = 0; k < j->n_chunks; k++, np++) {
    char name[64];
    snprintf(name, sizeof name, "in-%d-%d.%s", (int)getpid(), np, fmt);
    wv_it_path(paths[np], sizeof paths[np], name);
    ti_write_rows(paths[np], fmt, j->dtype, j->chunk[k], j->rows[k]);
    argv[argc++] = "--input";
    argv[argc++] = paths[np];
  }
  size_t off = 0;
  for (size_t k = 0; k < j->n_mask_chunks; k++, np++) {
    char name[64];
    snprintf(name, sizeof name, "mask-%d-%d.%s", (int)getpid(), np, fmt);
    wv_it_path(paths[np], sizeof paths[np], name);
    ti_write_rows(paths[np], fmt, WAVE_U32, j->mask + off, j->mask_cuts[k]);
    off += j->mask_cuts[k];
    argv[argc++] = "--mask";
    argv[argc++] = paths[np];
  }
  if (json)
    argv[argc++] = "--json";
  argv[argc] = NULL;
  wv_it_ctlv(o, argv);
  for (int k = 0; k < np; k++)
    unlink(paths[k]);
}

START_TEST(ctl_reduce_formats)
{
  static const char *const fmts[] = {"raw", "npy", "text"};
  static const size_t rows[] = {700, 0, 301};
  static const size_t cuts[] = {256, 5, 300};
  for (int t = 0; t < 2; t++)
    for (size_t fi = 0; fi < 3; fi++)
      for (size_t di = 0; di < 3; di++)
        for (size_t oi = 0; oi < 7; oi++) {
          if (ti_dtypes[di] == WAVE_F32 && ti_ops[oi] >= WAVE_AND)
            continue;
          /* every format over every op would be slow: rotate ops */
          if ((oi + fi + (size_t)t) % 3 != 0 && ti_dtypes[di] != WAVE_F32)
            continue;
          ti_job j;
          int masked = (oi + di) % 2;
          ti_job_make(&j, ti_dtypes[di], ti_ops[oi], 3, rows, masked, cuts,
                      3);
          wv_it_out o;
          ti_ctl_reduce(&j, fmts[fi], t, &o, 1);
          ck_assert_msg(o.status == 0, "%s %s %s: exit %d: %s", fmts[fi],
                        wave_op_name(j.op), wave_dtype_name(j.dtype),
                        o.status, o.err);
          ck_assert_str_eq(o.err, "");
          ti_check_json(&j, o.out);
          wv_it_out_free(&o);
          ti_job_free(&j);
        }
}
END_TEST

START_TEST(ctl_reduce_text_output)
{
  static const size_t rows[] = {50};
  ti_job j;
  ti_job_make(&j, WAVE_S32, WAVE_EXTENT, 1, rows, 0, NULL, 0);
  uint32_t want[2];
  uint64_t cnt;
  ti_reference(&j, want, &cnt);
  wv_it_out o;
  ti_ctl_reduce(&j, "raw", 1, &o, 0);
  ck_assert_int_eq(o.status, 0);
  char expect[64];
  snprintf(expect, sizeof expect, "[%d, %d]", (int32_t)want[0],
           (int32_t)want[1]);
  ck_assert_msg(strstr(o.out, expect) != NULL, "'%s' lacks '%s'", o.out,
                expect);
  wv_it_out_free(&o);
  ti_job_free(&j);
}
END_TEST

START_TEST(ctl_reduce_errors)
{
  char in[300], in7[300], m3[300], fnpy[300], tbad[300];
  uint32_t v[4] = {1, 2, 3, 4};
  wv_it_path(in, sizeof in, "bad-in.bin");
  wv_it_write(in, v, sizeof v);
  wv_it_path(in7, sizeof in7, "bad-in7.bin");
  wv_it_write(in7, v, 7);
  wv_it_path(m3, sizeof m3, "bad-m3.bin");
  wv_it_write(m3, v, 12);
  wv_it_path(fnpy, sizeof fnpy, "bad-f.npy");
  ti_write_rows(fnpy, "npy", WAVE_F32, v, 4);
  wv_it_path(tbad, sizeof tbad, "bad.txt");
  wv_it_write(tbad, "1 2\n3 zz\n", 9);
  for (int t = 0; t < 2; t++) {
    const char *u = wv_it_urls[t];
    wv_it_out o;
    /* mask length mismatch: the daemon says MASKLEN */
    wv_it_ctl(&o, "submit", "reduce", "--url", u, "--op", "sum", "--dtype",
           "u32", "--input", in, "--mask", m3, NULL);
    wv_it_ctl_bad(&o, 1, "MASKLEN");
    wv_it_out_free(&o);
    /* xor on float32: OPDTYPE from the daemon */
    wv_it_ctl(&o, "submit", "reduce", "--url", u, "--op", "xor", "--dtype",
           "float32", "--input", in, NULL);
    wv_it_ctl_bad(&o, 1, "OPDTYPE");
    wv_it_out_free(&o);
    /* a raw file of 7 bytes: LENGTH, naming the file */
    wv_it_ctl(&o, "submit", "reduce", "--url", u, "--op", "sum", "--dtype",
           "u32", "--input", in, "--input", in7, NULL);
    wv_it_ctl_bad(&o, 1, "LENGTH");
    ck_assert_ptr_nonnull(strstr(o.err, in7));
    wv_it_out_free(&o);
    /* an .npy of float32 given as uint32 */
    wv_it_ctl(&o, "submit", "reduce", "--url", u, "--op", "max", "--dtype",
           "uint32", "--input", fnpy, "--json", NULL);
    wv_it_ctl_bad(&o, 1, "DTYPE");
    ck_assert_ptr_nonnull(strstr(o.err, "<f4"));
    ck_assert_ptr_nonnull(strstr(o.err, "<u4"));
    wv_it_out_free(&o);
    /* a text parse error names file:line */
    wv_it_ctl(&o, "submit", "reduce", "--url", u, "--op", "sum", "--dtype",
           "u32", "--format", "text", "--input", tbad, NULL);
    wv_it_ctl_bad(&o, 1, "ARG");
    ck_assert_ptr_nonnull(strstr(o.err, "bad.txt:2:"));
    wv_it_out_free(&o);
    /* unknown op and missing options are usage errors */
    wv_it_ctl(&o, "submit", "reduce", "--url", u, "--op", "median", "--dtype",
           "u32", "--input", in, NULL);
    wv_it_ctl_bad(&o, 2, "ARG");
    wv_it_out_free(&o);
    wv_it_ctl(&o, "submit", "reduce", "--url", u, "--dtype", "u32", NULL);
    wv_it_ctl_bad(&o, 2, "ARG");
    wv_it_out_free(&o);
    /* an unknown device: NODEV */
    wv_it_ctl(&o, "submit", "reduce", "--url", u, "--op", "sum", "--dtype",
           "u32", "--input", in, "--device", "gpu9", NULL);
    wv_it_ctl_bad(&o, 1, "NODEV");
    wv_it_out_free(&o);
    wv_it_alive();
  }
}
END_TEST

static Suite *integration_suite(void)
{
  Suite *s = suite_create("integration");
  TCase *t = tcase_create("lib");
  tcase_add_test(t, lib_reduce_all);
  tcase_add_test(t, lib_reduce_edges);
  tcase_add_test(t, lib_reduce_errors);
  tcase_add_test(t, lib_concurrent);
  suite_add_tcase(s, t);
  t = tcase_create("wavectl");
  tcase_add_test(t, ctl_reduce_formats);
  tcase_add_test(t, ctl_reduce_text_output);
  tcase_add_test(t, ctl_reduce_errors);
  wv_it_ctl_add_tests(t);
  suite_add_tcase(s, t);
  suite_add_tcase(s, wv_it_hash_tcase());
  return s;
}

int main(void)
{
  /* A broken pipe to a dead daemon must not kill the test. */
  signal(SIGPIPE, SIG_IGN);
  if (wv_it_daemon_start() != 0) {
    wv_it_dump_log();
    wv_it_cleanup_dir();
    return EXIT_FAILURE;
  }
  SRunner *r = srunner_create(integration_suite());
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  int stop = wv_it_daemon_stop();
  if (failed || stop != 0)
    wv_it_dump_log();
  wv_it_cleanup_dir();
  return failed || stop != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

