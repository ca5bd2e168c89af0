/* conformance.c - every backend runs the same jobs; bits must match the CPU
 * reference (wv_reduce_reference) exactly.
 *
 * The harness (conformance.h) opens device 0 of each selected backend once
 * per test; the reference answer of each job is computed once and compared
 * with every device's answer, bits and count.  A backend that cannot open
 * (no driver, no GPU) is reported and skipped (the run exits 77, ctest's
 * "skipped": tests/skip.h) unless WAVE_REQUIRE_BACKENDS names it, so the
 * same program is the CI check here (CPU only) and the acceptance run on a
 * GPU machine (WAVE_REQUIRE_BACKENDS=cuda,vulkan
 * WAVE_CONFORMANCE_MAX_LOG2=28).  Every report asserts that a device opened
 * and that each device opened ran jobs.
 *
 * Reduce jobs: every dtype x op, in nine variants (plain; masked;
 * multi-chunk input with a differently chunked mask and empty chunks; empty
 * chunks without a mask; every row masked out; NaN/inf/-0/subnormal or
 * integer extremes; the same with a mask that drops the non-finite rows;
 * masked -0.0 rows with a rare +0.0, where a wrong leaf or a wrong zero
 * order shows; up to 600 chunks, where the merge order of chunk values
 * shows),
 * at sizes 0, 1, 31, 32, 255, 256, 257, 4097, 65539 and 2^k for
 * k = 18, 20, ... up to 2^N.  Data comes from a seeded generator, rows start
 * at 4-byte (not 16-byte) aligned addresses that vary from job to job.
 * Beside the bits, the answer's transfer_s: a device that copies its input
 * (caps without reads_host_memory) says it took time whenever rows were
 * selected, the CPU says 0.
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/base.h"
#include "tests/conformance.h"
#include "core/reduce.h"
#include "tests/skip.h"

/* ---- harness ------------------------------------------------------------- */

uint64_t conf_rng(uint64_t *s)
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

unsigned conf_max_log2(void)
{
  const char *v = getenv("WAVE_CONFORMANCE_MAX_LOG2");
  if (v == NULL || *v == '\0')
    return 20;
  long n = strtol(v, NULL, 10);
  return n < 16 ? 16 : n > 30 ? 30 : (unsigned)n;
}

/* Is name in the comma list of environment variable env? */
static int conf_listed(const char *env, const char *name)
{
  const char *p = getenv(env);
  size_t n = strlen(name);
  while (p != NULL && *p != '\0') {
    p += strspn(p, " ,");
    size_t len = strcspn(p, ",");
    size_t tl = len;
    while (tl > 0 && p[tl - 1] == ' ')
      tl--;
    if (tl == n && strncmp(p, name, n) == 0)
      return 1;
    p += len;
  }
  return 0;
}

static int conf_selected(const char *name)
{
  const char *l = getenv("WAVE_CONFORMANCE_BACKENDS");
  return l == NULL || *l == '\0' || conf_listed("WAVE_CONFORMANCE_BACKENDS",
                                                name);
}

wv_exchange conf_exchange(void)
{
  const char *x = getenv("WAVE_CONFORMANCE_EXCHANGE");
  wv_exchange e = WV_EXCHANGE_AUTO;
  if (x != NULL && *x != '\0' && wv_exchange_parse(x, &e) != 0)
    ck_abort_msg("WAVE_CONFORMANCE_EXCHANGE=%s: not auto, shuffle or local",
                 x);
  return e;
}

void conf_open_all(conf_set *set)
{
  memset(set, 0, sizeof *set);
  /* A required backend that is not even built in. */
  const char *req = getenv("WAVE_REQUIRE_BACKENDS");
  for (const char *p = req; p != NULL && *p != '\0';) {
    p += strspn(p, " ,");
    size_t len = strcspn(p, ", ");
    if (len > 0) {
      char name[32];
      snprintf(name, sizeof name, "%.*s", (int)len, p);
      if (wv_backend_find(name) == NULL) {
        printf("conformance: required backend %s is not built in\n", name);
        set->failed_required++;
      }
    }
    p += len;
  }
  for (size_t i = 0; wv_backends[i] != NULL; i++) {
    const wv_backend *b = wv_backends[i];
    int required = conf_listed("WAVE_REQUIRE_BACKENDS", b->name);
    if (!conf_selected(b->name) && !required) {
      printf("conformance: %s not selected (WAVE_CONFORMANCE_BACKENDS)\n",
             b->name);
      continue;
    }
    char name[64];
    snprintf(name, sizeof name, "%s0", b->name);
    wv_device_config cfg = {.name = name, .backend = b->name, .index = 0,
                            .threads = 0, .queue_depth = 16,
                            .exchange = conf_exchange(),
                            .device_match = getenv("WAVE_CONFORMANCE_MATCH")};
    wv_device *dev = NULL;
    wave_error err = {0};
    int rc = b->open(&cfg, &dev, &err);
    if (rc != 0) {
      printf("conformance: %s cannot open device 0: %s (%s)%s\n", b->name,
             err.message, wave_errname(rc),
             required ? " -- REQUIRED" : ", skipped");
      set->failed_required += required;
      if (!required) {
        set->skipped++;
        wvs_note("%s cannot open device 0 here: %s", b->name, err.message);
      }
      continue;
    }
    if (set->n == CONF_MAX_DEVS) {
      b->close(dev);
      continue;
    }
    conf_dev *d = &set->devs[set->n++];
    memset(d, 0, sizeof *d);
    d->backend = b;
    d->dev = dev;
    wv_caps caps;
    memset(&caps, 0, sizeof caps);
    b->caps(dev, &caps);
    snprintf(d->description, sizeof d->description, "%s", caps.description);
    d->dtypes64 = caps.dtypes64;
    d->argminmax = caps.argminmax;
    d->fsum = caps.fsum;
    d->moves_input = !caps.reads_host_memory;
    printf("conformance: %s opened: %s (wave width %u; exchange %s: %s)\n",
           b->name, d->description, caps.wave_width,
           wv_exchange_name(caps.exchange_mode),
           caps.exchange_reason);
  }
  fflush(stdout);
}

void conf_close_all(conf_set *set)
{
  for (size_t i = 0; i < set->n; i++)
    set->devs[i].backend->close(set->devs[i].dev);
  set->n = 0;
}

void conf_count(conf_dev *d, int same, const char *what, const char *want,
                const char *got)
{
  d->jobs++;
  if (same)
    return;
  d->mismatches++;
  if (d->printed++ < 20)
    printf("conformance: MISMATCH %s: %s: want %s, got %s\n",
           d->backend->name, what, want, got);
}

void conf_report(conf_set *set, const char *kind)
{
  unsigned long bad = 0;
  for (size_t i = 0; i < set->n; i++) {
    conf_dev *d = &set->devs[i];
    printf("conformance: %s %s: %lu jobs, %lu mismatches\n",
           d->backend->name, kind, d->jobs, d->mismatches);
    bad += d->mismatches;
  }
  fflush(stdout);
  ck_assert_msg(set->failed_required == 0,
                "%s: %u required backend(s) missing or not opening", kind,
                set->failed_required);
  /* none opened because every selected backend has no device here: the
   * entry skips (the notes say why), e.g. conformance_gpu without a GPU */
  ck_assert_msg(set->n > 0 || set->may_be_empty || set->skipped > 0,
                "%s: no device opened", kind);
  for (size_t i = 0; i < set->n; i++)
    ck_assert_msg(set->devs[i].jobs > 0, "%s: %s ran no job", kind,
                  set->devs[i].backend->name);
  ck_assert_msg(bad == 0, "%s: %lu mismatches", kind, bad);
}

/* ---- reduce jobs ----------------------------------------------------------- */

enum {
  V_PLAIN, V_MASK, V_CHUNKS, V_EMPTY, V_ALLMASKED, V_SPECIAL, V_SPECIAL_MASK,
  V_ZEROS, V_MANY, V_COUNT
};
static const char *const cnf_variant[V_COUNT] = {
  "plain", "mask", "chunks", "empty-chunks", "all-masked", "special",
  "special-masked", "signed-zeros", "many-chunks",
};

/* Every (dtype, op) pair the protocol defines (wave_op_check), dtype by
 * dtype, op by op: 7 + 7 + 4 = 18. */
static struct { wave_dtype d; wave_op op; } cnf_pairs[3 * WAVE_XOR];
static size_t cnf_n_pairs;

static void cnf_pairs_init(void)
{
  cnf_n_pairs = 0;
  for (int d = WAVE_U32; d <= WAVE_F32; d++)
    for (int op = WAVE_SUM; op <= WAVE_XOR; op++)
      if (wave_op_check((wave_dtype)d, (wave_op)op) == WAVE_EOK) {
        cnf_pairs[cnf_n_pairs].d = (wave_dtype)d;
        cnf_pairs[cnf_n_pairs].op = (wave_op)op;
        cnf_n_pairs++;
      }
  ck_assert_uint_eq(cnf_n_pairs, 18);
}

/* Every buffer holds max_rows + 8 rows; jobs start 1..4 rows in. */
typedef struct cnf_data {
  size_t max_rows;
  uint32_t *ints, *ints_sp, *floats, *floats_sp;
  uint32_t *mask, *mask_finite, *zeros;
  uint32_t *signed_zeros;  /* -0.0, and +0.0 in every 65537th row */
} cnf_data;

static uint32_t *cnf_alloc(size_t rows)
{
  uint32_t *p = calloc(rows + 8, sizeof *p);
  ck_assert_msg(p != NULL, "out of memory for %zu rows", rows);
  return p;
}

static void cnf_data_make(cnf_data *d, size_t max_rows)
{
  static const uint32_t fsp[] = {
    0x7fc00000u, 0xffc00000u, 0x7fa00001u, 0x7f800000u, 0xff800000u,
    0x80000000u, 0x80000000u, 0x00000000u, 0x00000000u, 0x00000001u,
    0x80000001u, 0x007fffffu, 0x00800000u, 0x7f7fffffu, 0xff7fffffu};
  static const uint32_t isp[] = {0, 1, 0x7fffffffu, 0x80000000u,
                                 0xffffffffu, 0x80000001u, 0xfffffffeu};
  uint64_t s = 0x5eed0001u;
  size_t n = max_rows + 8;
  d->max_rows = max_rows;
  d->ints = cnf_alloc(max_rows);
  d->ints_sp = cnf_alloc(max_rows);
  d->floats = cnf_alloc(max_rows);
  d->floats_sp = cnf_alloc(max_rows);
  d->mask = cnf_alloc(max_rows);
  d->mask_finite = cnf_alloc(max_rows);
  d->zeros = cnf_alloc(max_rows);
  d->signed_zeros = cnf_alloc(max_rows);
  for (size_t i = 0; i < n; i++) {
    uint64_t r = conf_rng(&s), q = conf_rng(&s);
    uint32_t lo = (uint32_t)r, hi = (uint32_t)(r >> 32);
    d->ints[i] = lo;
    d->ints_sp[i] = q % 3 == 0 ? lo : isp[(q >> 8) % (sizeof isp / 4)];
    /* floats of magnitude 2^-8 .. 2^8, either sign: so many roundings
     * that any change in the order of the additions changes the bits */
    uint32_t f = (hi & 0x807fffffu) | ((119u + (hi >> 23) % 16u) << 23);
    d->floats[i] = f;
    uint32_t sp = q % 4 == 0 ? fsp[(q >> 8) % (sizeof fsp / 4)] : f;
    d->floats_sp[i] = sp;
    /* half the rows selected, by assorted nonzero words */
    uint32_t m = (q >> 40) % 2 ? (uint32_t)(q >> 16) | 0x100u : 0;
    if ((q >> 41) % 16 == 0)
      m = 0x80000000u;
    d->mask[i] = m;
    d->mask_finite[i] = (sp & 0x7f800000u) != 0x7f800000u && (q >> 42) % 4;
    d->signed_zeros[i] = i % 65537 == 65536 ? 0x00000000u : 0x80000000u;
  }
}

static void cnf_data_free(cnf_data *d)
{
  free(d->ints);
  free(d->ints_sp);
  free(d->floats);
  free(d->floats_sp);
  free(d->mask);
  free(d->mask_finite);
  free(d->zeros);
  free(d->signed_zeros);
}

#define CR_MAX_CHUNKS 600

typedef struct cnf_job {
  wv_span in[CR_MAX_CHUNKS], mk[8];
  wv_reduce_job job;
  char what[128];
} cnf_job;

/* Chunks of the given row counts over base (zero-row chunks get NULL). */
static size_t cnf_cut(wv_span *sp, const uint32_t *base, const size_t *rows,
                     size_t n)
{
  size_t off = 0;
  for (size_t i = 0; i < n; i++) {
    sp[i].data = rows[i] ? base + off : NULL;
    sp[i].rows = rows[i];
    off += rows[i];
  }
  return n;
}

static void cnf_build(cnf_job *j, const cnf_data *d, size_t pair, int v,
                     size_t n, unsigned long seq)
{
  wave_dtype dt = cnf_pairs[pair].d;
  memset(j, 0, sizeof *j);
  j->job.dtype = dt;
  j->job.op = cnf_pairs[pair].op;
  j->job.rows = n;
  j->job.input = j->in;
  j->job.mask = j->mk;
  size_t off = 1 + seq % 4;
  const uint32_t *data = v == V_SPECIAL || v == V_SPECIAL_MASK
      ? (dt == WAVE_F32 ? d->floats_sp : d->ints_sp)
      : (dt == WAVE_F32 ? d->floats : d->ints);
  if (v == V_ZEROS)
    data = dt == WAVE_F32 ? d->signed_zeros : d->ints_sp;
  data += off;
  const uint32_t *mask = d->mask + 4 - (off - 1);
  size_t a = n * 7 / 20, b = n * 13 / 20 + (n > 2), c = n / 2 + (n > 1);
  switch (v) {
  case V_PLAIN:
  case V_SPECIAL:
    j->job.n_input = cnf_cut(j->in, data, &n, 1);
    break;
  case V_MASK:
    j->job.n_input = cnf_cut(j->in, data, &n, 1);
    j->job.n_mask = cnf_cut(j->mk, mask, &n, 1);
    j->job.has_mask = 1;
    break;
  case V_CHUNKS: {
    size_t in[] = {a, 0, b - a, n - b}, mk[] = {0, c, n - c};
    j->job.n_input = cnf_cut(j->in, data, in, 4);
    j->job.n_mask = cnf_cut(j->mk, mask, mk, 3);
    j->job.has_mask = 1;
    break;
  }
  case V_EMPTY: {
    size_t in[] = {0, n / 4, 0, 0, n - n / 4, 0};
    j->job.n_input = cnf_cut(j->in, data, in, 6);
    break;
  }
  case V_ALLMASKED: {
    size_t mk[] = {n / 2, n - n / 2};
    j->job.n_input = cnf_cut(j->in, data, &n, 1);
    j->job.n_mask = cnf_cut(j->mk, d->zeros + off, mk, 2);
    j->job.has_mask = 1;
    break;
  }
  case V_ZEROS: {  /* masked leaves must be -0.0, and -0.0 < +0.0 */
    size_t in[] = {n / 5, n / 5, n - 2 * (n / 5)};
    j->job.n_input = cnf_cut(j->in, data, in, 3);
    j->job.n_mask = cnf_cut(j->mk, mask, &n, 1);
    j->job.has_mask = 1;
    break;
  }
  case V_MANY: {  /* up to 600 chunks of assorted sizes, some empty */
    size_t in[CR_MAX_CHUNKS];
    uint64_t r = seq;
    size_t k = n / 4 + 1 < CR_MAX_CHUNKS ? n / 4 + 1 : CR_MAX_CHUNKS;
    size_t left = n;
    for (size_t i = 0; i + 1 < k; i++) {
      size_t mean = 2 * left / (k - i);
      in[i] = conf_rng(&r) % 5 == 0 ? 0 : (size_t)(conf_rng(&r) % (mean + 1));
      left -= in[i] < left ? in[i] : left;
    }
    in[k - 1] = left;
    size_t mk[] = {n / 3, 0, n - n / 3};
    j->job.n_input = cnf_cut(j->in, data, in, k);
    j->job.n_mask = cnf_cut(j->mk, mask, mk, 3);
    j->job.has_mask = seq % 2;
    break;
  }
  case V_SPECIAL_MASK: {
    size_t in[] = {n / 3, n - n / 3}, mk[] = {c, n - c};
    /* sums: drop the non-finite rows (else the sum is NaN or inf for all
     * but tiny sizes); min/max: a plain mask, so selected NaN/inf rows are
     * counted but ignored */
    const uint32_t *m = dt == WAVE_F32 && j->job.op == WAVE_SUM
        ? d->mask_finite + off : mask;
    j->job.n_input = cnf_cut(j->in, data, in, 2);
    j->job.n_mask = cnf_cut(j->mk, m, mk, 2);
    j->job.has_mask = 1;
    break;
  }
  }
  snprintf(j->what, sizeof j->what, "%s %s, %s, %zu rows (job %lu)",
           wave_dtype_name(dt), wave_op_name(j->job.op), cnf_variant[v], n,
           seq);
}

static void cnf_fmt(char *buf, size_t len, int rc, const wave_error *e,
                   const wv_reduce_out *o)
{
  if (rc != 0)
    snprintf(buf, len, "error %s: %s", wave_errname(rc), e->message);
  else if (o->n_values == 2)
    snprintf(buf, len, "[%08" PRIx64 " %08" PRIx64 "] count %" PRIu64,
             o->bits[0], o->bits[1], o->count);
  else
    snprintf(buf, len, "%08" PRIx64 " count %" PRIu64 " index %" PRId64
             " (%u values)", o->bits[0], o->count, o->index, o->n_values);
}

static double cnf_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Sizes above 2^WAVE_CONFORMANCE_REF_MAX_LOG2 rows (default 26) take their
 * expected bits from the CPU device instead of the single-threaded
 * reference, which needs minutes per 2^28-row job set; the CPU device is
 * itself held to the reference at every size up to there, and above it in
 * the jobs of cnf_ref_anyway. */
static unsigned cnf_ref_max_log2(void)
{
  const char *v = getenv("WAVE_CONFORMANCE_REF_MAX_LOG2");
  if (v == NULL || *v == '\0')
    return 26;
  long n = strtol(v, NULL, 10);
  return n < 16 ? 16 : n > 30 ? 30 : (unsigned)n;
}

/* Above the reference's bound, one pair per op still takes its expected
 * bits from the reference: the op's last dtype (f32 where the op has one),
 * masked. */
static int cnf_ref_anyway(size_t p, int v)
{
  if (v != V_MASK)
    return 0;
  for (size_t q = p + 1; q < cnf_n_pairs; q++)
    if (cnf_pairs[q].op == cnf_pairs[p].op)
      return 0;
  return 1;
}

START_TEST(reduce_jobs)
{
  conf_set set;
  conf_open_all(&set);
  unsigned max_log2 = conf_max_log2();
  size_t ref_max = (size_t)1 << cnf_ref_max_log2();
  conf_dev *cpu = NULL;
  for (size_t i = 0; i < set.n; i++)
    if (strcmp(set.devs[i].backend->name, "cpu") == 0)
      cpu = &set.devs[i];
  size_t sizes[32] = {0, 1, 31, 32, 255, 256, 257, 4097, 65539};
  size_t n_sizes = 9;
  for (unsigned k = max_log2 % 2 ? 17 : 18; k <= max_log2; k += 2)
    sizes[n_sizes++] = (size_t)1 << k;
  cnf_data data;
  cnf_data_make(&data, sizes[n_sizes - 1]);

  cnf_pairs_init();
  double t0 = cnf_now();
  unsigned long seq = 0;
  for (size_t z = 0; z < n_sizes; z++) {
    for (size_t p = 0; p < cnf_n_pairs; p++) {
      for (int v = 0; v < V_COUNT; v++, seq++) {
        cnf_job j;
        cnf_build(&j, &data, p, v, sizes[z], seq);
        wave_error err = {0};
        wv_reduce_out want, got;
        ck_assert_msg(wv_reduce_validate(&j.job, &err) == 0, "%s: %s",
                      j.what, err.message);
        int by_cpu = cpu != NULL && sizes[z] > ref_max &&
                     !cnf_ref_anyway(p, v);
        int rc = by_cpu ? cpu->backend->reduce(cpu->dev, &j.job, &want, &err)
                        : wv_reduce_reference(&j.job, &want, &err);
        ck_assert_msg(rc == 0, "%s %s: %s", by_cpu ? "cpu" : "reference",
                      j.what, err.message);
        char ws[96], gs[320];
        cnf_fmt(ws, sizeof ws, 0, NULL, &want);
        for (size_t i = 0; i < set.n; i++) {
          conf_dev *d = &set.devs[i];
          if (by_cpu && d == cpu)
            continue;  /* it gave the expected bits */
          memset(&got, 0x5a, sizeof got);
          rc = d->backend->reduce(d->dev, &j.job, &got, &err);
          int same = rc == 0 && got.n_values == want.n_values &&
                     got.count == want.count && got.bits[0] == want.bits[0] &&
                     (want.n_values < 2 || got.bits[1] == want.bits[1]);
          if (!same)
            cnf_fmt(gs, sizeof gs, rc, &err, &got);
          else if (d->moves_input ? got.count > 0 && !(got.transfer_s > 0)
                                  : got.transfer_s != 0) {
            same = 0;  /* the answer's transfer (the daemon's phase): time
                          where rows were copied, none on a host reader */
            snprintf(gs, sizeof gs, "transfer_s %g", got.transfer_s);
          }
          conf_count(d, same, j.what, ws, same ? "" : gs);
        }
      }
    }
    if (sizes[z] >= ((size_t)1 << 18)) {
      printf("conformance: reduce %zu rows done, %.1f s%s\n", sizes[z],
             cnf_now() - t0,
             cpu != NULL && sizes[z] > ref_max
                 ? " (expected bits: cpu device; one masked pair per op: "
                   "the reference)" : "");
      fflush(stdout);
    }
  }
  cnf_data_free(&data);
  conf_report(&set, "reduce");
  conf_close_all(&set);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("conformance");
  TCase *tc = tcase_create("reduce");
  tcase_set_timeout(tc, 3600);  /* 2^28-row runs on GPU machines */
  tcase_add_test(tc, reduce_jobs);
  suite_add_tcase(s, tc);
#ifdef WAVE_CONF_HASH
  suite_add_tcase(s, conf_hash_tcase());
#endif
  suite_add_tcase(s, conf_merge_tcase());
  suite_add_tcase(s, conf_wide_tcase());
  suite_add_tcase(s, conf_fsum_tcase());
  return wvs_run(s, CK_NORMAL);
}
