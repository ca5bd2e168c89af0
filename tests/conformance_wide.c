/* conformance_wide.c - the 64-bit dtypes and argmin/argmax on every
 * backend (docs/reduction.md; issue 23 part 1).
 *
 * Every (dtype, op) pair that wv_reduce_is_wide names, at sizes across the
 * 256-row groups and the CPU's 65536-row items, in variants (one chunk;
 * a mask; chunks with empty ones and a mask on its own boundaries; NaN,
 * +-inf, +-0.0, subnormals and integer extremes; few distinct values, so
 * argmin/argmax ties; everything masked out).  A device whose caps set
 * dtypes64/argminmax must give the reference's bits, count and index; a
 * device that does not must refuse each pair through wv_dev_reduce with
 * WAVE_EUNSUPPORTED and a message naming itself and the dtype or op --
 * both are counted as the device's jobs, a wrong answer or a wrong refusal
 * as a mismatch.  The CPU and CUDA backends run them (HIP compiles the
 * CUDA kernels).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"
#include "core/base.h"
#include "core/reduce.h"
#include "workers/wvdev.h"

enum { CW_PLAIN, CW_MASK, CW_CHUNKS, CW_SPECIAL, CW_TIES, CW_NONE, CW_N };
static const char *const cfw_variant[CW_N] = {
  "plain", "mask", "chunks", "special", "ties", "all-masked"};

static uint64_t cfw_row(wave_dtype d, int v, uint64_t *s)
{
  static const uint64_t f64sp[] = {
    0x7ff8000000000000u, 0xfff8000000000001u, 0x7ff0000000000000u,
    0xfff0000000000000u, 0x8000000000000000u, 0, 1, 0x800fffffffffffffu,
    0x7fefffffffffffffu, 0xffefffffffffffffu};
  static const uint64_t f32sp[] = {
    0x7fc00000u, 0xffc00001u, 0x7f800000u, 0xff800000u, 0x80000000u, 0,
    1, 0x807fffffu, 0x7f7fffffu, 0xff7fffffu};
  static const uint64_t isp[] = {
    0, 1, 0x7fffffffffffffffu, 0x8000000000000000u, UINT64_MAX,
    0xffffffffu, 0x80000000u, 0x7fffffffu};
  uint64_t r = conf_rng(s), q = r >> 8;
  int is4 = wv_dtype_size(d) == 4;
  if (v == CW_TIES)
    return d == WAVE_F64 ? (q % 2 ? 0x3ff0000000000000u : 0xbff0000000000000u)
         : d == WAVE_F32 ? (q % 2 ? 0x3f800000u : 0xbf800000u) : q % 3;
  int sp = v == CW_SPECIAL && r % 3 == 0;
  if (d == WAVE_F64)
    return sp ? f64sp[q % 10]
              : (r & 0x800fffffffffffffu) | ((uint64_t)(1015 + q % 16) << 52);
  if (d == WAVE_F32)
    return sp ? f32sp[q % 10] : (r & 0x807fffffu) | ((119u + q % 16u) << 23);
  uint64_t x = sp ? isp[q % 8] : r;
  return is4 ? x & 0xffffffffu : x;
}

typedef struct cfw_job {
  unsigned char *data;
  uint32_t *mask;
  wv_span in[4], mk[3];
  wv_reduce_job job;
  char what[160];
} cfw_job;

static void cfw_make(cfw_job *j, wave_dtype d, wave_op op, int v, size_t n,
                    uint64_t seed)
{
  uint64_t s = seed;
  unsigned size = wv_dtype_size(d);
  memset(j, 0, sizeof *j);
  j->data = malloc(n * size + 8);  /* rows start 4 bytes in */
  j->mask = malloc(n * 4 + 4);
  ck_assert(j->data != NULL && j->mask != NULL);
  unsigned char *rows = j->data + 4;
  for (size_t i = 0; i < n; i++) {
    uint64_t x = cfw_row(d, v, &s);
    memcpy(rows + size * i, &x, size);  /* little-endian: the low bytes */
    j->mask[i] = v == CW_NONE ? 0 : (conf_rng(&s) % 3 ? 1u << (i % 32) : 0);
  }
  size_t a = n / 3, b = n - n / 4;
  size_t cuts[4] = {n, 0, 0, 0}, nc = 1, mcuts[3] = {n, 0, 0}, nm = 1;
  if (v == CW_CHUNKS) {
    cuts[0] = a;  cuts[1] = 0;  cuts[2] = b - a;  cuts[3] = n - b;  nc = 4;
    mcuts[0] = n / 2;  mcuts[1] = 0;  mcuts[2] = n - n / 2;  nm = 3;
  }
  size_t off = 0;
  for (size_t c = 0; c < nc; c++) {
    j->in[c] = (wv_span){cuts[c] ? rows + size * off : NULL, cuts[c]};
    off += cuts[c];
  }
  off = 0;
  for (size_t c = 0; c < nm; c++) {
    j->mk[c] = (wv_span){mcuts[c] ? j->mask + off : NULL, mcuts[c]};
    off += mcuts[c];
  }
  int masked = v == CW_MASK || v == CW_CHUNKS || v == CW_NONE;
  j->job = (wv_reduce_job){.dtype = d, .op = op, .input = j->in,
                           .n_input = nc, .mask = j->mk,
                           .n_mask = masked ? nm : 0, .has_mask = masked,
                           .rows = n};
  snprintf(j->what, sizeof j->what, "%s %s %s, %zu rows", wave_dtype_name(d),
           wave_op_name(op), cfw_variant[v], n);
}

static void cfw_fmt(char *buf, size_t len, int rc, const wave_error *e,
                   const wv_reduce_out *o)
{
  if (rc != 0)
    snprintf(buf, len, "error %s: %s", wave_errname(rc), e->message);
  else
    snprintf(buf, len, "[%016" PRIx64 " %016" PRIx64 "] count %" PRIu64
             " index %" PRId64, o->bits[0], o->n_values > 1 ? o->bits[1] : 0,
             o->count, o->index);
}

static int cfw_runs(const conf_dev *d, wave_dtype dt, wave_op op)
{
  if (wv_dtype_size(dt) == 8 && !d->dtypes64)
    return 0;
  return (op != WAVE_ARGMIN && op != WAVE_ARGMAX) || d->argminmax;
}

/* A device that does not run the pair refuses it, by name. */
static void cfw_refusal(conf_dev *d, const cfw_job *j)
{
  wave_error err = {0};
  wv_reduce_out o;
  int rc = wv_dev_reduce(&(wv_dev){d->backend, d->dev}, &j->job, &o, &err);
  const char *what = wv_dtype_size(j->job.dtype) == 8
                         ? wave_dtype_name(j->job.dtype)
                         : wave_op_name(j->job.op);
  int ok = rc == WAVE_EUNSUPPORTED &&
           strstr(err.message, d->backend->name) != NULL &&
           strstr(err.message, what) != NULL;
  char gs[320];
  cfw_fmt(gs, sizeof gs, rc, &err, &o);
  conf_count(d, ok, j->what, "UNSUPPORTED naming the backend and dtype/op",
             ok ? "" : gs);
}

START_TEST(wide_jobs)
{
  conf_set set;
  conf_open_all(&set);
  /* The last size (runs of WAVE_CONFORMANCE_MAX_LOG2 >= 24 only) crosses
   * the GPU backends' 2^23-row slices of 8-byte rows. */
  static const size_t sizes[] = {0, 1, 255, 256, 257, 4097, 65537, 140000,
                                 (1u << 23) + 4099};
  const size_t nsizes = sizeof sizes / sizeof *sizes - (conf_max_log2() < 24);
  unsigned long seq = 0, pairs = 0;
  for (int d = WAVE_U32; d <= WAVE_F64; d++)
    for (int op = WAVE_SUM; op <= WAVE_ARGMAX; op++) {
      if (wave_op_check((wave_dtype)d, (wave_op)op) != 0 ||
          !wv_reduce_is_wide((wave_dtype)d, (wave_op)op))
        continue;
      pairs++;
      int refused = 0;
      for (size_t z = 0; z < nsizes; z++)
        for (int v = 0; v < CW_N; v++, seq++) {
          cfw_job j;
          cfw_make(&j, (wave_dtype)d, (wave_op)op, v, sizes[z],
                  0x771de00u + seq * 7919u);
          wave_error err = {0};
          wv_reduce_out want, got;
          ck_assert_msg(wv_reduce_reference(&j.job, &want, &err) == 0,
                        "%s: %s", j.what, err.message);
          char ws[96], gs[320];
          cfw_fmt(ws, sizeof ws, 0, NULL, &want);
          for (size_t i = 0; i < set.n; i++) {
            conf_dev *dv = &set.devs[i];
            if (!cfw_runs(dv, (wave_dtype)d, (wave_op)op)) {
              if (!refused)  /* once per pair and device */
                cfw_refusal(dv, &j);
              continue;
            }
            memset(&got, 0x5a, sizeof got);
            int rc = wv_dev_reduce(&(wv_dev){dv->backend, dv->dev}, &j.job, &got, &err);
            int same = rc == 0 && got.n_values == want.n_values &&
                       got.count == want.count && got.index == want.index &&
                       got.bits[0] == want.bits[0] &&
                       (want.n_values < 2 || got.bits[1] == want.bits[1]);
            if (!same)
              cfw_fmt(gs, sizeof gs, rc, &err, &got);
            conf_count(dv, same, j.what, ws, same ? "" : gs);
          }
          refused = 1;
          free(j.data);
          free(j.mask);
        }
    }
  ck_assert_uint_eq(pairs, 30);  /* 3 x 2 argmin/argmax + 9 + 9 + 6 */
  conf_report(&set, "wide (64-bit dtypes, argmin/argmax)");
  conf_close_all(&set);
}
END_TEST

TCase *conf_wide_tcase(void)
{
  TCase *tc = tcase_create("wide");
  tcase_set_timeout(tc, 3600);
  tcase_add_test(tc, wide_jobs);
  return tc;
}
