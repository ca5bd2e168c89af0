/* test_wide_ways.c - the 64-bit dtypes and argmin/argmax (issue 23) by
 * every way into a real wavedd (tests/wide_harness.h): a plain message, a
 * framed message and a stream over ipc and tcp, memfd, copy and file
 * regions, and a fleet of two daemons.
 *
 * bits: every (dtype, op) pair of wv_reduce_is_wide (the 64-bit dtypes
 * with each op defined for them; argmin/argmax for all six dtypes), over
 * four input chunks (one empty) whose mask chunks have other boundaries,
 * without a mask, with one, and with one that selects nothing.  The rows
 * are chosen to make mistakes visible: many ties (argmin/argmax must give
 * the first row, counted over the chunks), 64-bit sums that wrap, float64
 * rows whose sum depends on the fixed tree (1 + 2^-53), NaN, inf, -0.0
 * and subnormals.  The jobs are bigger than the CPU device's slice (65536
 * rows) and than one fleet piece, so slices, file-reader pieces and fleet
 * pieces all merge with their index offsets; memfd regions run once more
 * through the file readers (WAVED_FILE_STAGE=1, as for a GPU) and file
 * regions once more in 256-row pieces (WAVED_FILE_LEVELS=1).  Every way
 * must give the bits, count and index of wv_reduce_reference, and the
 * finite flag of float min/max/extent.
 *
 * fsum (issue 39), float32 and float64, every way: rows over a wide range
 * of exponents that a float sum rounds differently per chunking
 * (fsum_rows_show_mistakes), finite and with NaN and infinities, under
 * the three masks and over three cuts of the same rows and mask (fsum's
 * answer may not depend on them), against the reference's bits, count
 * and exact partial (ReduceResult.exact and exact_flags, byte for byte).
 * fsum_device_split: the job cut at rows that are no chunk boundary, one
 * part on cpu0 and the other on cpu1; the two exact partials merged are
 * the reference's.
 *
 * refusals: a uint64 chunk of 12 bytes (LENGTH), xor on float64
 * (OPDTYPE), and a device without the caps (the fake backend: no 64-bit
 * dtypes, no argmin/argmax, no fsum; UNSUPPORTED naming the device): the
 * same code by every way; and the daemon serves on, a job naming no
 * device going to a device that runs it (fsum too: the pick reads
 * caps.fsum).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base.h"
#include "core/reduce.h"
#include "core/xsum.h"
#include "daemon_harness.h"
#include "wide_harness.h"

/* Input chunks: across a slice (65536 rows) and a fleet piece, an empty
 * one, a short one; the mask cut elsewhere. */
static const uint64_t tw_in_rows[] = {70100, 0, 257, 9643};
static const uint64_t tw_mask_rows[] = {1000, 60000, 19000};
#define TW_N_IN (sizeof tw_in_rows / sizeof tw_in_rows[0])
#define TW_N_MASK (sizeof tw_mask_rows / sizeof tw_mask_rows[0])
#define TW_ROWS 80000u  /* input and mask fit one frame (1 MiB) */

static uint64_t tw_next(uint64_t *x)
{
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  return *x;
}

/* A float64 row: mostly values with many ties and values whose sum
 * depends on the order of the additions, sometimes NaN, inf, -0.0 (not
 * when finite: a sum's rows, whose bits NaN would hide). */
static uint64_t tw_f64(uint64_t r, int finite)
{
  double f;
  switch (finite && r % 32 < 3 ? 10 : r % 32) {
  case 0: return 0x7ff8000000000001ull;        /* a NaN */
  case 1: return 0x7ff0000000000000ull;        /* +inf */
  case 2: return 0xfff0000000000000ull;        /* -inf */
  case 3: return 0x8000000000000000ull;        /* -0.0 */
  case 4: return 0x0000000000000001ull;        /* a subnormal */
  case 5: case 6: f = 0x1p-53; break;
  case 7: f = 1.0; break;
  case 8: case 9: f = 0x1p-45; break;  /* lost at some levels only */
  default: f = (double)((int64_t)((r >> 8) % 201) - 100) / 8.0; break;
  }
  uint64_t b;
  memcpy(&b, &f, sizeof b);
  return b;
}

static uint32_t tw_f32(uint64_t r, int finite)
{
  switch (finite && r % 32 < 3 ? 10 : r % 32) {
  case 0: return 0x7fc00001u;
  case 1: return 0x7f800000u;
  case 2: return 0xff800000u;
  case 3: return 0x80000000u;
  case 4: return 0x00000001u;
  default: {
    float f = (float)((int64_t)((r >> 8) % 201) - 100) / 8.0f;
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
  }
  }
}

/* n rows of dtype dt from seed into buf (wv_dtype_size(dt) * n bytes):
 * integers half small (ties) and half of the dtype's full width; floats
 * with NaN and inf unless finite. */
static void tw_fill(void *buf, wave_dtype dt, size_t n, uint64_t seed,
                    int finite)
{
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 11;
  for (size_t i = 0; i < n; i++) {
    uint64_t r = tw_next(&x), v;
    switch (dt) {
    case WAVE_F64: v = tw_f64(r, finite); break;
    case WAVE_F32: v = tw_f32(r, finite); break;
    default:
      v = (r & 1) ? (r >> 1) : (r >> 40) % 64;
      if (dt == WAVE_S64 && (r & 2))
        v = (uint64_t)-(int64_t)((r >> 40) % 64);
      if (dt == WAVE_S32 && (r & 2))
        v = (uint32_t)-(int32_t)((r >> 40) % 64);
      break;
    }
    /* huge rows at positions 0 and 128 of chunk 2, which its tree adds
     * first (they cancel exactly); in one chunk they fall in two groups
     * and swallow the small rows they meet: a float sum that loses the
     * chunk boundaries gets other bits */
    if (dt == WAVE_F64 && i == 70100)
      v = 0x43b0000000000000ull;  /* 2^60 */
    if (dt == WAVE_F64 && i == 70228)
      v = 0xc3b0000000000000ull;  /* -2^60 */
    if (wv_dtype_size(dt) == 8)
      memcpy((uint8_t *)buf + 8 * i, &v, 8);
    else {
      uint32_t w = (uint32_t)v;
      memcpy((uint8_t *)buf + 4 * i, &w, 4);
    }
  }
}

/* kind 1: stretches masked out (a whole 65536-row slice among them), the
 * rest mostly selected; kind 2: nothing selected. */
static void tw_mask(uint32_t *m, size_t n, int kind, uint64_t seed)
{
  uint64_t x = seed * 0x2545f4914f6cdd1dull + 5;
  for (size_t i = 0; i < n; i++)
    m[i] = kind == 2 ? 0 : (tw_next(&x) % 4 != 0) ? (uint32_t)(1 + (i & 3))
                                                   : 0;
  for (size_t i = 0; kind == 1 && i < n; i++)
    if (i < 400 || (i >= 65536 && i < 75000))
      m[i] = 0;
}

/* The job's reference over the same chunks; *finite (may be NULL): what
 * ReduceResult.finite must say (1 some selected row is finite, 2 none;
 * 0 for the ops other than float min/max/extent). */
static void tw_reference(const ww_job *j, wv_reduce_out *out, int *finite)
{
  wv_span sin[WW_CHUNKS], smk[WW_CHUNKS];
  unsigned z = wv_dtype_size(j->dt);
  uint64_t a = 0;
  for (size_t i = 0; i < j->n_in; a += j->in_rows[i], i++)
    sin[i] = (wv_span){(const uint8_t *)j->in + a * z, j->in_rows[i]};
  a = 0;
  for (size_t i = 0; i < j->n_mask; a += j->mask_rows[i], i++)
    smk[i] = (wv_span){j->mask + a, j->mask_rows[i]};
  wv_reduce_job rj = {.dtype = j->dt, .op = j->op, .input = sin,
                      .n_input = j->n_in, .mask = smk,
                      .n_mask = j->has_mask ? j->n_mask : 0,
                      .has_mask = j->has_mask, .rows = TW_ROWS};
  wave_error e = {0};
  ck_assert_msg(wv_reduce_reference(&rj, out, &e) == 0, "%s", e.message);
  int fl = j->dt == WAVE_F32 || j->dt == WAVE_F64;
  if (finite != NULL)
    *finite = !fl || (j->op != WAVE_MIN && j->op != WAVE_MAX &&
                      j->op != WAVE_EXTENT) ? 0
              : out->count > 0 && wv_reduce_any_finite(&rj) ? 1 : 2;
}

static td_daemon tw_a, tw_b;
static ww_ctx tw_x;

/* Daemon a (wavedd-test with fake0 when fake) and b (wavedd), clients of
 * a, the fleet of a and b (or a twice, over ipc and tcp, without b); with
 * small requests, a's stream pieces are 64 KiB (many per job).  env:
 * NAME=VALUE for daemon a, or NULL. */
static void tw_up(int fake, int with_b, int small, const char *env)
{
  char name[64] = "";
  if (env != NULL) {
    snprintf(name, sizeof name, "%.*s", (int)strcspn(env, "="), env);
    setenv(name, env + strlen(name) + 1, 1);
  }
  ww_start(&tw_a, fake, small ? 131072 : 4194304);
  if (env != NULL)
    unsetenv(name);
  if (with_b)
    ww_start(&tw_b, 0, 4194304);
  ww_open(&tw_x, &tw_a, with_b ? tw_b.tcp : tw_a.tcp);
}

static void tw_down(int with_b)
{
  ww_close(&tw_x);
  td_stop_ok(&tw_a);
  if (with_b)
    td_stop_ok(&tw_b);
}

/* The jobs of one (dtype, op) by way w against the reference. */
static void tw_check_pair(ww_way w, wave_dtype dt, wave_op op,
                          const void *in, uint32_t *mask)
{
  for (int mk = 0; mk < 3; mk++) {
    tw_mask(mask, TW_ROWS, mk, (uint64_t)dt * 31 + (uint64_t)op);
    ww_job j = {.dt = dt, .op = op, .in = in, .in_rows = tw_in_rows,
                .n_in = TW_N_IN, .mask = mask, .mask_rows = tw_mask_rows,
                .n_mask = TW_N_MASK, .has_mask = mk > 0, .device = "cpu0"};
    wv_reduce_out ref;
    int finite;
    tw_reference(&j, &ref, &finite);
    wave_reduce_result r;
    wave_error e;
    int rc = ww_run(&tw_x, w, &j, &r, &e);
    const char *what = ww_way_names[w];
    ck_assert_msg(rc == 0, "%s %s %s mask %d: %s (%d)", what,
                  wave_dtype_name(dt), wave_op_name(op), mk, e.message, rc);
    ck_assert_uint_eq(r.n_values, ref.n_values);
    for (unsigned v = 0; v < ref.n_values; v++)
      ck_assert_msg(r.bits[v] == ref.bits[v], "%s %s %s mask %d value %u: "
                    "0x%016llx, the reference 0x%016llx", what,
                    wave_dtype_name(dt), wave_op_name(op), mk, v,
                    (unsigned long long)r.bits[v],
                    (unsigned long long)ref.bits[v]);
    ck_assert_msg(r.index == ref.index, "%s %s %s mask %d: index %lld, the "
                  "reference %lld", what, wave_dtype_name(dt),
                  wave_op_name(op), mk, (long long)r.index,
                  (long long)ref.index);
    ck_assert_msg(r.count == ref.count, "%s %s %s mask %d: count %llu, the "
                  "reference %llu", what, wave_dtype_name(dt),
                  wave_op_name(op), mk, (unsigned long long)r.count,
                  (unsigned long long)ref.count);
    ck_assert_uint_eq(r.rows, TW_ROWS);
    ck_assert_int_eq(r.dtype, dt);
    ck_assert_int_eq(r.op, op);
    if (w != WW_FLEET)  /* the fleet's answer does not say it */
      ck_assert_msg(r.finite == finite, "%s %s %s mask %d: finite %d, not "
                    "%d", what, wave_dtype_name(dt), wave_op_name(op), mk,
                    r.finite, finite);
  }
}

/* ---- fsum (issue 39) ---------------------------------------------------- */

/* Other cuts of the same TW_ROWS rows and mask: one chunk, and chunks (an
 * empty one, one of 1 row) whose boundaries fall elsewhere. */
static const uint64_t tw_one[] = {TW_ROWS};
static const uint64_t tw_in_alt[] = {1, 65535, 0, 13, 14451};
static const uint64_t tw_mask_alt[] = {7, 65536, 14457};

/* fsum rows: random signs and full significands (24 or 53 bits) at
 * exponents over 2^60 of range, so that a float sum rounds all along and
 * its bits depend on the chunks; -0.0 and the smallest subnormal; a pair
 * +-2^100 (float32: 2^60) that cancels exactly, but in the float sum's
 * tree only after each swallowed the rows it met; unless finite, a NaN
 * and both infinities every 1000 rows. */
static void tw_fill_fsum(void *buf, wave_dtype dt, size_t n, int finite)
{
  uint64_t x = (uint64_t)dt * 0x9e3779b97f4a7c15ull + 3;
  const double big = dt == WAVE_F32 ? 0x1p60 : 0x1p100;
  for (size_t i = 0; i < n; i++) {
    uint64_t r = tw_next(&x);
    int e = (int)((r >> 2) % 61) - 30;
    double f = dt == WAVE_F32 ? ldexp((double)(r >> 40), e - 23)
                              : ldexp((double)(r >> 11), e - 52);
    f = (r & 1) ? -f : f;
    switch (i % 1000) {
    case 3: f = -0.0; break;
    case 5: f = dt == WAVE_F32 ? 0x1p-149 : 0x1p-1074; break;
    case 6: f = finite ? f : NAN; break;
    case 7: f = finite ? f : INFINITY; break;
    case 8: f = finite ? f : -INFINITY; break;
    default: break;
    }
    if (i == 70101 || i == 70102)  /* apart in the tree: they swallow */
      f = i == 70101 ? big : -big;
    if (dt == WAVE_F32) {
      float g = (float)f;
      memcpy((uint8_t *)buf + 4 * i, &g, 4);
    } else {
      memcpy((uint8_t *)buf + 8 * i, &f, 8);
    }
  }
}

/* r's exact partial is the reference's (ref.xsum), byte for byte. */
static void tw_same_exact(const char *what, const wave_reduce_result *r,
                          const wv_reduce_out *ref, wave_dtype dt)
{
  uint8_t want[8 * WV_XSUM_LIMBS];
  wv_xsum_pack(&ref->xsum, want);
  size_t n = wv_xsum_wire_bytes(dt);
  ck_assert_msg(r->exact_bytes == n, "%s: exact partial of %u bytes, not "
                "%zu", what, r->exact_bytes, n);
  ck_assert_msg(memcmp(r->exact, want, n) == 0, "%s: the exact partial is "
                "not the reference's", what);
  ck_assert_msg(r->exact_flags == ref->xsum.flags, "%s: exact flags 0x%x, "
                "the reference 0x%x", what, r->exact_flags, ref->xsum.flags);
}

/* fsum of the rows in `in` by way w: for each mask kind, the reference
 * of the first cut; every cut (finite rows: three, else the first) must
 * give its bits, count and exact partial. */
static void tw_check_fsum(ww_way w, wave_dtype dt, const void *in,
                          uint32_t *mask, int finite)
{
  static const struct {
    const uint64_t *in, *mk;
    size_t n_in, n_mk;
  } cuts[] = {{tw_in_rows, tw_mask_rows, TW_N_IN, TW_N_MASK},
              {tw_one, tw_mask_alt, 1, 3},
              {tw_in_alt, tw_one, 5, 1}};
  for (int mk = 0; mk < 3; mk++) {
    tw_mask(mask, TW_ROWS, mk, (uint64_t)dt * 31 + WAVE_FSUM);
    wv_reduce_out ref;
    for (int c = 0; c < (finite ? 3 : 1); c++) {
      ww_job j = {.dt = dt, .op = WAVE_FSUM, .in = in, .in_rows = cuts[c].in,
                  .n_in = cuts[c].n_in, .mask = mask,
                  .mask_rows = cuts[c].mk, .n_mask = cuts[c].n_mk,
                  .has_mask = mk > 0, .device = "cpu0"};
      if (c == 0)
        tw_reference(&j, &ref, NULL);
      wave_reduce_result r;
      wave_error e;
      char what[128];
      snprintf(what, sizeof what, "%s fsum %s%s mask %d cut %d",
               ww_way_names[w], wave_dtype_name(dt),
               finite ? "" : " (NaN, inf)", mk, c);
      ck_assert_msg(ww_run(&tw_x, w, &j, &r, &e) == 0, "%s: %s", what,
                    e.message);
      ck_assert_msg(r.n_values == 1 && r.bits[0] == ref.bits[0], "%s: "
                    "0x%016llx, the reference 0x%016llx", what,
                    (unsigned long long)r.bits[0],
                    (unsigned long long)ref.bits[0]);
      ck_assert_msg(r.count == ref.count, "%s: count %llu, not %llu", what,
                    (unsigned long long)r.count,
                    (unsigned long long)ref.count);
      ck_assert_int_eq(r.op, WAVE_FSUM);
      ck_assert_uint_eq(r.rows, TW_ROWS);
      tw_same_exact(what, &r, &ref, dt);
    }
  }
}

/* Every wide (dtype, op) pair by one way (the loop index). */
START_TEST(wide_bits)
{
  /* past the ways: memory regions through the file readers, as for a
   * device that stages (WAVED_FILE_STAGE=1), and file regions read in
   * 256-row pieces (WAVED_FILE_LEVELS=1: many pieces, many offsets) */
  static const char *const variants[] = {"WAVED_FILE_STAGE=1",
                                         "WAVED_FILE_LEVELS=1"};
  ww_way w = _i < WW_N ? (ww_way)_i : _i == WW_N ? WW_MEMFD : WW_FILE;
  tw_up(0, w == WW_FLEET, w == WW_STREAM_IPC || w == WW_STREAM_TCP,
        _i < WW_N ? NULL : variants[_i - WW_N]);
  uint8_t *in = malloc((size_t)TW_ROWS * 8);
  uint32_t *mask = malloc((size_t)TW_ROWS * 4);
  ck_assert_ptr_nonnull(in);
  ck_assert_ptr_nonnull(mask);
  unsigned pairs = 0;
  for (int d = WAVE_U32; d <= WAVE_F64; d++) {
    for (int op = WAVE_SUM; op <= WAVE_ARGMAX; op++) {
      if (wave_op_check((wave_dtype)d, (wave_op)op) != 0 ||
          !wv_reduce_is_wide((wave_dtype)d, (wave_op)op))
        continue;
      tw_fill(in, (wave_dtype)d, TW_ROWS, (uint64_t)d, op == WAVE_SUM);
      tw_check_pair(w, (wave_dtype)d, (wave_op)op, in, mask);
      pairs++;
    }
  }
  /* 3 x 9 for the integers, 6 for float64, argmin/argmax of 3 more */
  ck_assert_uint_eq(pairs, 2 * 9 + 6 + 3 * 2);
  for (int d = WAVE_F32; d <= WAVE_F64; d += WAVE_F64 - WAVE_F32)
    for (int finite = 1; finite >= 0; finite--) {
      tw_fill_fsum(in, (wave_dtype)d, TW_ROWS, finite);
      tw_check_fsum(w, (wave_dtype)d, in, mask, finite);
    }
  free(in);
  free(mask);
  tw_down(w == WW_FLEET);
}
END_TEST

/* The float64 sum's tree and chunks show in its bits: the job's answer
 * differs from the same rows as one chunk and from the sum in row order,
 * so a way that loses the chunk boundaries or the tree fails wide_bits. */
START_TEST(f64_sum_shows_tree_and_chunks)
{
  uint8_t *in = malloc((size_t)TW_ROWS * 8);
  ck_assert_ptr_nonnull(in);
  tw_fill(in, WAVE_F64, TW_ROWS, WAVE_F64, 1);
  double seq = 0;
  for (size_t i = 0; i < TW_ROWS; i++) {
    double f;
    memcpy(&f, in + 8 * i, 8);
    ck_assert(isfinite(f));
    seq += f;
  }
  ww_job j = {.dt = WAVE_F64, .op = WAVE_SUM, .in = in,
              .in_rows = tw_in_rows, .n_in = TW_N_IN,
              .mask_rows = tw_mask_rows, .n_mask = TW_N_MASK};
  wv_reduce_out ref, whole;
  tw_reference(&j, &ref, NULL);
  uint64_t all = TW_ROWS;
  j.in_rows = &all;
  j.n_in = 1;
  tw_reference(&j, &whole, NULL);
  uint64_t sb;
  memcpy(&sb, &seq, 8);
  ck_assert_msg(ref.bits[0] != sb, "the rows do not show the tree");
  ck_assert_msg(ref.bits[0] != whole.bits[0], "the rows do not show the "
                "chunks");
  free(in);
}
END_TEST

/* The fsum rows show a way that answers the float sum: for both dtypes the
 * float sum of the first cut differs from fsum, and from the float sum of
 * another cut. */
START_TEST(fsum_rows_show_mistakes)
{
  uint8_t *in = malloc((size_t)TW_ROWS * 8);
  ck_assert_ptr_nonnull(in);
  for (int d = WAVE_F32; d <= WAVE_F64; d += WAVE_F64 - WAVE_F32) {
    wave_dtype dt = (wave_dtype)d;
    tw_fill_fsum(in, dt, TW_ROWS, 1);
    ww_job j = {.dt = dt, .op = WAVE_FSUM, .in = in, .in_rows = tw_in_rows,
                .n_in = TW_N_IN, .mask_rows = tw_mask_rows,
                .n_mask = TW_N_MASK};
    wv_reduce_out fs, sum, alt;
    tw_reference(&j, &fs, NULL);
    j.op = WAVE_SUM;
    tw_reference(&j, &sum, NULL);
    j.in_rows = tw_in_alt;
    j.n_in = 5;
    tw_reference(&j, &alt, NULL);
    ck_assert_msg(fs.bits[0] != sum.bits[0], "%s: fsum is the float sum",
                  wave_dtype_name(dt));
    ck_assert_msg(sum.bits[0] != alt.bits[0], "%s: the float sum does not "
                  "show the chunks", wave_dtype_name(dt));
  }
  free(in);
}
END_TEST

/* rows [a, b) of the masked job as one chunk on `device`, framed over ipc:
 * its exact partial merged into x, its count added to *count. */
static void tw_part(wave_dtype dt, const uint8_t *in, const uint32_t *mask,
                    uint64_t a, uint64_t b, const char *device, wv_xsum *x,
                    uint64_t *count)
{
  unsigned z = wv_dtype_size(dt);
  wave_chunk ci = {in + a * z, (size_t)(b - a) * z};
  wave_chunk cm = {mask + a, (size_t)(b - a) * 4};
  wave_reduce_request q = {.dtype = dt, .op = WAVE_FSUM, .input = &ci,
                           .n_input = 1, .mask = &cm, .n_mask = 1,
                           .has_mask = 1, .device = device};
  wave_reduce_result r;
  wave_error e = {0};
  ck_assert_msg(wave_reduce(tw_x.ipc, &q, &r, &e) == 0, "%s", e.message);
  ck_assert_str_eq(r.device, device);
  wv_xsum y;
  ck_assert_msg(wv_xsum_unpack(&y, dt, r.exact, r.exact_bytes,
                               r.exact_flags, &e) == 0, "%s", e.message);
  wv_xsum_merge(x, &y);
  *count += r.count;
}

/* A job split over two devices (cpu0 and cpu1) at rows that are no chunk
 * boundary: the two exact partials merged give the reference's bits and
 * partial for the whole job. */
START_TEST(fsum_device_split)
{
  tw_up(0, 0, 0, NULL);
  static const uint64_t cut_at[] = {1, 40000, 65537, TW_ROWS - 3};
  uint8_t *in = malloc((size_t)TW_ROWS * 8);
  uint32_t *mask = malloc((size_t)TW_ROWS * 4);
  ck_assert_ptr_nonnull(in);
  ck_assert_ptr_nonnull(mask);
  tw_mask(mask, TW_ROWS, 1, 77);
  for (int d = WAVE_F32; d <= WAVE_F64; d += WAVE_F64 - WAVE_F32) {
    wave_dtype dt = (wave_dtype)d;
    tw_fill_fsum(in, dt, TW_ROWS, 1);
    ww_job j = {.dt = dt, .op = WAVE_FSUM, .in = in, .in_rows = tw_in_rows,
                .n_in = TW_N_IN, .mask = mask, .mask_rows = tw_mask_rows,
                .n_mask = TW_N_MASK, .has_mask = 1};
    wv_reduce_out ref;
    tw_reference(&j, &ref, NULL);
    for (size_t k = 0; k < sizeof cut_at / sizeof cut_at[0]; k++) {
      wv_xsum x;
      uint64_t count = 0;
      wv_xsum_init(&x, dt);
      tw_part(dt, in, mask, 0, cut_at[k], "cpu0", &x, &count);
      tw_part(dt, in, mask, cut_at[k], TW_ROWS, "cpu1", &x, &count);
      wave_reduce_result m = {.exact_bytes = (uint32_t)wv_xsum_wire_bytes(dt),
                              .exact_flags = x.flags};
      wv_xsum_pack(&x, m.exact);
      char what[64];
      snprintf(what, sizeof what, "%s split at %llu", wave_dtype_name(dt),
               (unsigned long long)cut_at[k]);
      ck_assert_uint_eq(count, ref.count);
      ck_assert_msg(wv_xsum_round(&x, count) == ref.bits[0], "%s: 0x%llx, "
                    "the reference 0x%llx", what,
                    (unsigned long long)wv_xsum_round(&x, count),
                    (unsigned long long)ref.bits[0]);
      tw_same_exact(what, &m, &ref, dt);
    }
  }
  free(in);
  free(mask);
  tw_down(0);
}
END_TEST

/* One refusal by every way: code, and a needle in the message. */
static void tw_refuse(const ww_job *j, int code, const char *needle)
{
  for (int w = 0; w < WW_N; w++) {
    wave_reduce_result r;
    wave_error e;
    int rc = ww_run(&tw_x, (ww_way)w, j, &r, &e);
    ck_assert_msg(rc == code, "%s %s %s: %s (%d), not %s", ww_way_names[w],
                  wave_dtype_name(j->dt), wave_op_name(j->op),
                  rc ? e.message : "answered", rc, wave_errname(code));
    ck_assert_msg(needle == NULL || strstr(e.message, needle) != NULL,
                  "%s: \"%s\" does not say %s", ww_way_names[w], e.message,
                  needle);
  }
}

START_TEST(refusals)
{
  tw_up(1, 0, 0, NULL);
  uint64_t rows[2] = {11, 0xffffffffffffffffull};
  uint32_t r32[4] = {5, 2, 9, 2}, mask[4] = {1, 1, 1, 1};
  uint64_t two = 2, four = 4;
  size_t twelve = 12;
  /* a uint64 chunk of 12 bytes: LENGTH, on the device that runs uint64 */
  ww_job j = {.dt = WAVE_U64, .op = WAVE_SUM, .in = rows, .in_rows = &two,
              .in_bytes = &twelve, .n_in = 1, .device = "cpu0"};
  tw_refuse(&j, WAVE_ELENGTH, "12");
  /* xor on float64: OPDTYPE */
  j = (ww_job){.dt = WAVE_F64, .op = WAVE_XOR, .in = rows, .in_rows = &two,
               .n_in = 1, .mask = mask, .mask_rows = &two, .n_mask = 1,
               .has_mask = 1, .device = "cpu0"};
  tw_refuse(&j, WAVE_EOPDTYPE, "xor");
  /* a device without the caps: UNSUPPORTED, naming it */
  j.op = WAVE_SUM;
  j.device = "fake0";
  tw_refuse(&j, WAVE_EUNSUPPORTED, "fake0");
  j = (ww_job){.dt = WAVE_U32, .op = WAVE_ARGMIN, .in = r32,
               .in_rows = &four, .n_in = 1, .mask = mask,
               .mask_rows = &four, .n_mask = 1, .has_mask = 1,
               .device = "fake0"};
  tw_refuse(&j, WAVE_EUNSUPPORTED, "fake0");
  /* fsum on a device without caps.fsum: UNSUPPORTED, naming it; naming
   * no device, the daemon picks one that runs it (cpu0 or cpu1, past
   * fake0, which config order puts first) */
  float f4[4] = {0x1p30f, 1.0f, -0x1p30f, 0x1p-20f};
  ww_job fs = {.dt = WAVE_F32, .op = WAVE_FSUM, .in = f4, .in_rows = &four,
               .n_in = 1, .device = "fake0"};
  tw_refuse(&fs, WAVE_EUNSUPPORTED, "fake0");
  fs.device = NULL;
  wv_span sp = {f4, 4};
  wv_reduce_job rj = {.dtype = WAVE_F32, .op = WAVE_FSUM, .input = &sp,
                      .n_input = 1, .rows = 4};
  wv_reduce_out ref;
  wave_error re = {0};
  ck_assert_int_eq(wv_reduce_reference(&rj, &ref, &re), 0);
  for (int w = 0; w < WW_N; w++) {
    wave_reduce_result r;
    wave_error e;
    ck_assert_msg(ww_run(&tw_x, (ww_way)w, &fs, &r, &e) == 0, "%s: %s",
                  ww_way_names[w], e.message);
    ck_assert_uint_eq(r.bits[0], ref.bits[0]);
  }
  /* and it serves on, each way: the same argmin naming no device runs
   * on cpu0, past fake0 (2, first at row 1) */
  j.device = NULL;
  for (int w = 0; w < WW_N; w++) {
    wave_reduce_result r;
    wave_error e;
    ck_assert_msg(ww_run(&tw_x, (ww_way)w, &j, &r, &e) == 0, "%s: %s",
                  ww_way_names[w], e.message);
    ck_assert_uint_eq(r.bits[0], 2);
    ck_assert_int_eq(r.index, 1);
    ck_assert_uint_eq(r.count, 4);
  }
  tw_down(0);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("wide_ways");
  TCase *t = tcase_create("bits");
  tcase_set_timeout(t, 600);
  tcase_add_loop_test(t, wide_bits, 0, WW_N + 2);
  tcase_add_test(t, f64_sum_shows_tree_and_chunks);
  tcase_add_test(t, fsum_rows_show_mistakes);
  tcase_add_test(t, fsum_device_split);
  suite_add_tcase(s, t);
  TCase *r = tcase_create("refusals");
  tcase_set_timeout(r, 300);
  tcase_add_test(r, refusals);
  suite_add_tcase(s, r);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
