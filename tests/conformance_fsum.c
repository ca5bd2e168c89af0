/* conformance_fsum.c - the exact float sum, fsum (issue 39;
 * docs/reduction.md "fsum"), on every backend.
 *
 * float32 and float64, at sizes across the 256-row groups, the CPU's
 * 65536-row items and a worker's fold, in variants: a narrow range of
 * exponents; every finite exponent; heavy cancellation (a big row, a tiny
 * one, the big one negated); NaN, +-inf, +-0.0 and subnormals; -0.0 rows
 * with a rare +0.0 under a mask (the sign rule); a mask; chunks with empty
 * ones under a mask cut elsewhere; everything masked out; subnormals only
 * (a narrow range at the bottom); rows at the CPU's double way's bound
 * (float32 exponents spanning 19 binades, within its bound, and 20, just
 * past it, where summing a block in doubles would round; float64 16 and
 * 17); and the
 * full-range rows again reversed and cut into other chunks, which must
 * give the same answer as in order (there is one).  A device whose caps
 * set fsum (float64: and dtypes64) must give the reference's bits, count
 * and exact partial (limbs and flags: X is unique too); a device that
 * does not must refuse through wv_dev_reduce with WAVE_EUNSUPPORTED naming
 * itself and fsum (or float64): skipped for fsum, not failed.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"
#include "core/base.h"
#include "core/reduce.h"
#include "workers/cpu/cpu.h"
#include "workers/wvdev.h"

#if defined(__x86_64__) && defined(__SSE2__)
#include <xmmintrin.h>
#define CNFS_DAZ 1
#endif

enum { CF_NARROW, CF_FULL, CF_CANCEL, CF_SPECIAL, CF_NEGZERO, CF_MASK,
       CF_CHUNKS, CF_NONE, CF_REVERSED, CF_TINY, CF_SPAN, CF_N };
static const char *const cnfs_variant[CF_N] = {
  "narrow", "full-range", "cancel", "special", "signed-zeros", "mask",
  "chunks", "all-masked", "reversed", "subnormal", "span-edge"};

/* A finite row of any exponent, either sign. */
static uint64_t cnfs_full(int f64, uint64_t r, uint64_t q)
{
  if (f64)
    return (r & 0x800fffffffffffffu) | ((q % 2047) << 52);
  return ((r & 0x807fffffu) | (uint32_t)((q % 255) << 23));
}

static uint64_t cnfs_row(int f64, int v, uint64_t i, uint64_t *s,
                       uint64_t *big)
{
  static const uint64_t f64sp[] = {
    0x7ff8000000000000u, 0xfff8000000000001u, 0x7ff0000000000000u,
    0xfff0000000000000u, 0x8000000000000000u, 0, 1, 0x800fffffffffffffu,
    0x7fefffffffffffffu, 0xffefffffffffffffu};
  static const uint64_t f32sp[] = {
    0x7fc00000u, 0xffc00001u, 0x7f800000u, 0xff800000u, 0x80000000u, 0,
    1, 0x807fffffu, 0x7f7fffffu, 0xff7fffffu};
  uint64_t r = conf_rng(s), q = r >> 11;
  uint64_t sign = f64 ? 0x8000000000000000u : 0x80000000u;
  switch (v) {
  case CF_NARROW:
    return f64 ? (r & 0x800fffffffffffffu) | ((1015 + q % 16) << 52)
               : (r & 0x807fffffu) | (uint32_t)((119u + q % 16u) << 23);
  case CF_CANCEL:  /* big, tiny, -big */
    if (i % 3 == 0)
      return *big = cnfs_full(f64, r, q);
    if (i % 3 == 1)
      return r & (f64 ? 0x800000000000ffffu : 0x800000ffu);
    return *big ^ sign;
  case CF_SPECIAL:
    if (r % 3 == 0)
      return f64 ? f64sp[q % 10] : f32sp[q % 10];
    return cnfs_full(f64, r, q);
  case CF_NEGZERO:
    return q % 1000 == 0 ? 0 : sign;
  case CF_TINY:  /* subnormals only */
    return r & (f64 ? 0x800fffffffffffffu : 0x807fffffu);
  case CF_SPAN: {
    /* in every 33 rows one odd "tiny" at exponent e (or a subnormal),
     * the rest the largest significand at e + S or e + S + 1 (by 4096
     * rows), S the CPU double way's widest span (19; float64 16): 1024
     * rows of the wider span sum past 2^53 of the tiny's ulps (float64:
     * of its high part's, 2^26 of them, whence the bit 26), odd, and would
     * round (workers/cpu/cpu_xsum.c) */
    uint64_t sp = (f64 ? 16 : 19) + ((i >> 12) & 1);
    uint64_t e = (i >> 13) & 1 ? 0 : 100;
    uint64_t fb = f64 ? 52 : 23, fm = (1ull << fb) - 1;
    if (i >> 14 == 1)  /* the largest finite rows: a double would overflow */
      return fm | (f64 ? 2046ull : 254ull) << fb;
    if (i % 33 == 0)
      return (r & fm) | 1 | (f64 ? 1ull << 26 : 0) | e << fb;
    return fm | ((e ? e : 1) + sp) << fb;
  }
  default:
    return cnfs_full(f64, r, q);
  }
}

typedef struct cnfs_job {
  unsigned char *data;
  uint32_t *mask;
  wv_span in[4], mk[3];
  wv_reduce_job job;
  char what[160];
} cnfs_job;

static void cnfs_make(cnfs_job *j, wave_dtype d, int v, size_t n, uint64_t seed)
{
  uint64_t s = seed, big = 0;
  int f64 = d == WAVE_F64;
  unsigned size = f64 ? 8 : 4;
  memset(j, 0, sizeof *j);
  j->data = malloc(n * size + 8);  /* rows start 4 bytes in */
  j->mask = malloc(n * 4 + 4);
  ck_assert(j->data != NULL && j->mask != NULL);
  unsigned char *rows = j->data + 4;
  for (size_t i = 0; i < n; i++) {
    /* reversed: the full-range rows of the same seed, last first */
    uint64_t x = cnfs_row(f64, v == CF_REVERSED ? CF_FULL : v, i, &s, &big);
    size_t at = v == CF_REVERSED ? n - 1 - i : i;
    memcpy(rows + size * at, &x, size);
    j->mask[i] = v == CF_NONE ? 0 : (conf_rng(&s) % 3 ? 1u << (i % 32) : 0);
  }
  size_t a = n / 3, b = n - n / 4;
  size_t cuts[4] = {n, 0, 0, 0}, nc = 1, mcuts[3] = {n, 0, 0}, nm = 1;
  if (v == CF_CHUNKS) {
    cuts[0] = a;  cuts[1] = 0;  cuts[2] = b - a;  cuts[3] = n - b;  nc = 4;
    mcuts[0] = n / 2;  mcuts[1] = 0;  mcuts[2] = n - n / 2;  nm = 3;
  } else if (v == CF_REVERSED) {
    cuts[0] = n / 7;  cuts[1] = n - n / 7;  nc = 2;
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
  int masked = v == CF_MASK || v == CF_CHUNKS || v == CF_NONE ||
               v == CF_NEGZERO;
  j->job = (wv_reduce_job){.dtype = d, .op = WAVE_FSUM, .input = j->in,
                           .n_input = nc, .mask = j->mk,
                           .n_mask = masked ? nm : 0, .has_mask = masked,
                           .rows = n};
  snprintf(j->what, sizeof j->what, "%s fsum %s, %zu rows",
           wave_dtype_name(d), cnfs_variant[v], n);
}

static void cnfs_fmt(char *buf, size_t len, int rc, const wave_error *e,
                   const wv_reduce_out *o)
{
  if (rc != 0) {
    snprintf(buf, len, "error %s: %s", wave_errname(rc), e->message);
    return;
  }
  unsigned top = o->xsum.n_limbs ? o->xsum.n_limbs - 1 : 0;
  snprintf(buf, len, "%016" PRIx64 " count %" PRIu64 " X limbs %u top %016"
           PRIx64 " low %016" PRIx64 " flags %x", o->bits[0], o->count,
           o->xsum.n_limbs, o->xsum.limb[top % WV_XSUM_LIMBS],
           o->xsum.limb[0], o->xsum.flags);
}

static int cnfs_same(const wv_reduce_out *a, const wv_reduce_out *b)
{
  return a->bits[0] == b->bits[0] && a->count == b->count &&
         a->n_values == b->n_values && a->xsum.n_limbs == b->xsum.n_limbs &&
         a->xsum.flags == b->xsum.flags &&
         memcmp(a->xsum.limb, b->xsum.limb, sizeof a->xsum.limb) == 0;
}

/* A device that does not run fsum refuses it, by name. */
static void cnfs_refusal(conf_dev *d, const cnfs_job *j)
{
  wave_error err = {0};
  wv_reduce_out o;
  int rc = wv_dev_reduce(&(wv_dev){d->backend, d->dev}, &j->job, &o, &err);
  int ok = rc == WAVE_EUNSUPPORTED &&
           strstr(err.message, d->backend->name) != NULL &&
           (strstr(err.message, "fsum") != NULL ||
            (j->job.dtype == WAVE_F64 && !d->dtypes64 &&
             strstr(err.message, "float64") != NULL));
  char gs[320];
  cnfs_fmt(gs, sizeof gs, rc, &err, &o);
  conf_count(d, ok, j->what, "UNSUPPORTED naming the backend and fsum",
             ok ? "" : gs);
}

START_TEST(fsum_jobs)
{
  conf_set set;
  conf_open_all(&set);
  static const size_t sizes[] = {0, 1, 3, 255, 4097, 65537, 140000,
                                 (1u << 20) + 5};
  unsigned long seq = 0;
  for (int d = 0; d < 2; d++) {
    wave_dtype dt = d ? WAVE_F64 : WAVE_F32;
    int refused[CONF_MAX_DEVS] = {0};
    for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++) {
      wv_reduce_out full;  /* the full-range answer, for the reversed */
      for (int v = 0; v < CF_N; v++, seq++) {
        cnfs_job j;
        /* the reversed rows are the full-range ones: the same seed */
        cnfs_make(&j, dt, v, sizes[z], 0xf5a3u + (z * 64 + d * 16 +
                (v == CF_REVERSED ? CF_FULL : v)) * 7919u);
        wave_error err = {0};
        wv_reduce_out want, got;
        ck_assert_msg(wv_reduce_reference(&j.job, &want, &err) == 0,
                      "%s: %s", j.what, err.message);
        if (v == CF_FULL)
          full = want;
        if (v == CF_REVERSED)
          ck_assert_msg(cnfs_same(&want, &full), "%s: the reference differs "
                        "from its rows in order", j.what);
        char ws[200], gs[320];
        cnfs_fmt(ws, sizeof ws, 0, NULL, &want);
        for (size_t i = 0; i < set.n; i++) {
          conf_dev *dv = &set.devs[i];
          if (!dv->fsum || (d && !dv->dtypes64)) {
            if (!refused[i]++)  /* once per dtype and device */
              cnfs_refusal(dv, &j);
            continue;
          }
          memset(&got, 0x5a, sizeof got);
          int rc = wv_dev_reduce(&(wv_dev){dv->backend, dv->dev}, &j.job,
                                 &got, &err);
          int same = rc == 0 && cnfs_same(&got, &want);
          if (!same)
            cnfs_fmt(gs, sizeof gs, rc, &err, &got);
          conf_count(dv, same, j.what, ws, same ? "" : gs);
        }
        free(j.data);
        free(j.mask);
      }
    }
  }
  conf_report(&set, "fsum (the exact float sum)");
  conf_close_all(&set);
}
END_TEST

#ifdef CNFS_DAZ
/* With DAZ and FTZ set (as some -ffast-math libraries do for a whole
 * process; threads inherit it), a CPU device's fsum stays exact: its
 * double ways take no subnormal row and make no subnormal double (before
 * that, float32 subnormal rows in narrow blocks were read as 0). */
START_TEST(fsum_daz)
{
  static const int vs[] = {CF_TINY, CF_SPAN, CF_NARROW, CF_MASK, CF_FULL};
  unsigned csr = _mm_getcsr();
  _mm_setcsr(csr | 0x8040);  /* DAZ | FTZ, before the workers start */
  wv_device_config cfg = {.name = "daz", .backend = "cpu", .threads = 2};
  wv_device *dev = NULL;
  wave_error err = {0};
  ck_assert_msg(wv_cpu_backend.open(&cfg, &dev, &err) == 0, "%s",
                err.message);
  for (int d = 0; d < 2; d++)
    for (size_t v = 0; v < sizeof vs / sizeof *vs; v++) {
      cnfs_job j;
      cnfs_make(&j, d ? WAVE_F64 : WAVE_F32, vs[v], 70000, 0xda2u + v);
      wv_reduce_out want, got;
      ck_assert(wv_reduce_reference(&j.job, &want, &err) == 0);
      int rc = wv_dev_reduce(&(wv_dev){&wv_cpu_backend, dev}, &j.job, &got,
                             &err);
      char ws[200], gs[320];
      cnfs_fmt(ws, sizeof ws, 0, NULL, &want);
      cnfs_fmt(gs, sizeof gs, rc, &err, &got);
      ck_assert_msg(rc == 0 && cnfs_same(&got, &want),
                    "%s under DAZ/FTZ: want %s, got %s", j.what, ws, gs);
      free(j.data);
      free(j.mask);
    }
  wv_cpu_backend.close(dev);
  _mm_setcsr(csr);
}
END_TEST
#endif

TCase *conf_fsum_tcase(void)
{
  TCase *tc = tcase_create("fsum");
  tcase_set_timeout(tc, 3600);
  tcase_add_test(tc, fsum_jobs);
#ifdef CNFS_DAZ
  tcase_add_test(tc, fsum_daz);
#endif
  return tc;
}
