/* test_fleet_daemons.c - the fleet coordinator (wave/fleet.h) against three
 * real wavedd processes on ipc, without Slurm or root (the Slurm cluster
 * test is tests/slurm/fleet_test.sh).
 *
 * Fleet jobs must equal the same jobs on one daemon bit for bit: hash jobs
 * (job fingerprint, segment list, winners, winner count, best) and
 * reductions (value bits and count, with empty, all-masked and non-finite
 * pieces; fsum's merged exact partial too, against the reference).  Then one daemon is stopped and another's device faults
 * mid-job (wavedd-test's fake backend): the answers stay exact and the result names both.
 * A stream of independent reductions (wave_fleet_reduce_many) gives each
 * job one daemon's answer, a bad job its own error.  ReduceResult.finite
 * is checked on its own.  Cancel is asked from the
 * first progress callback, so it always lands while pieces are running.
 * Runs without fork (CK_NOFORK): nng is not fork-safe.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/reduce.h"
#include "core/xsum.h"
#include "tests/daemon_harness.h"
#include "wave/client.h"
#include "wave/fleet.h"

static td_daemon tfdm_d[3];

/* One daemon: a CPU device, packs small and closed; with fault_after, it
 * is wavedd-test and its device a fake one (workers/fake/) that faults on
 * its second step (batches of 256 nonces, so a hash piece of more than 256
 * nonces in segments of 2^8 fails there). */
static void tfdm_config(td_daemon *d, unsigned fault_after)
{
  td_prepare(d, NULL);
  const char *src = getenv("WAVE_SOURCE_DIR");
  char text[2048], fake[80] = "";
  if (fault_after)
    snprintf(fake, sizeof fake, ", batch: 256, device: \"fault_after=%u\"",
             fault_after);
  snprintf(text, sizeof text,
           "listen: [\"%s\"]\n"
           "log_level: info\n"
           "limits: {max_request_bytes: 16777216, max_job_rows: 1048576}\n"
           "packs: {dir: %s/config/packs, load: [closed, small]}\n"
           "devices:\n"
           "  - {name: cpu0, backend: %s, threads: 1%s}\n",
           d->ipc, src ? src : ".", fault_after ? "fake" : "cpu", fake);
  d->fake = fault_after != 0;
  td_write(d->cfg, text);
}

static wave_fleet *tfdm_fleet(void)
{
  const char *urls[3] = {tfdm_d[0].ipc, tfdm_d[1].ipc, tfdm_d[2].ipc};
  wave_fleet *f;
  wave_error err = {0};
  ck_assert_msg(wave_fleet_open(&f, urls, 3, &err) == 0, "%s", err.message);
  wave_fleet_set_timeout(f, 15000);  /* generous: a loaded ASan run */
  return f;
}

/* broken: daemons that must never complete a piece (stopped or faulting);
 * they are failed if they took one, and the others did the work. */
static void tfdm_hash_same(wave_fleet *f, const wave_hash_request *q,
                         uint64_t piece, unsigned broken)
{
  wave_client *c;
  wave_error err = {0};
  ck_assert_int_eq(wave_client_open(&c, tfdm_d[0].ipc, &err), 0);
  wave_hash_request one = *q;
  one.want_segments = 1;
  wave_hash_result a;
  ck_assert_msg(wave_hash(c, &one, &a, NULL, NULL, &err) == 0, "%s",
                err.message);
  wave_client_close(c);

  wave_fleet_options o = {.piece = piece, .segment_log2 = q->segment_log2,
                          .want_segments = 1};
  wave_fleet_hash_result b;
  ck_assert_msg(wave_fleet_hash(f, q, &o, &b, NULL, NULL, &err) == 0, "%s",
                err.message);
  ck_assert_uint_eq(b.job_fingerprint, a.job_fingerprint);
  ck_assert_uint_eq(b.segment_count, a.segment_count);
  ck_assert_uint_eq(a.n_segments, a.segment_count);
  for (size_t i = 0; i < a.n_segments; i++)
    ck_assert_uint_eq(b.segments[i], a.segments[i]);
  ck_assert_uint_eq(b.winner_count, a.winner_count);
  ck_assert_uint_eq(b.n_winners, a.n_winners);
  for (size_t i = 0; i < a.n_winners; i++) {
    ck_assert_uint_eq(b.winners[i].nonce, a.winners[i].nonce);
    ck_assert_uint_eq(b.winners[i].output, a.winners[i].output);
  }
  ck_assert_uint_eq(b.best_nonce, a.best_nonce);
  ck_assert_uint_eq(b.best_output, a.best_output);
  ck_assert_uint_eq(b.hashes, q->count);
  uint64_t work = 0;
  for (size_t i = 0; i < b.n_members; i++) {
    if (broken & (1u << i)) {
      ck_assert_uint_eq(b.members[i].pieces, 0);
      ck_assert_msg(b.members[i].failed || b.members[i].error.code == 0,
                    "daemon %zu", i);
    } else {
      ck_assert_msg(!b.members[i].failed, "daemon %zu failed: %s", i,
                    b.members[i].error.message);
    }
    work += b.members[i].work;
  }
  ck_assert_uint_eq(work, q->count);
  wave_hash_result_free(&a);
  wave_fleet_hash_result_free(&b);
}

/* rows: NaN/inf pieces, an all-masked chunk, an empty chunk, -0.0 */
static uint32_t tfdm_rows[3][5000];
static uint32_t tfdm_mask[10000];

/* fsum: the fleet's merged exact partial (pieces from three daemons) is
 * one daemon's, and both are the reference's, whose bits they give. */
static void tfdm_fsum_check(const wave_reduce_result *a,
                          const wave_reduce_result *b, const wave_chunk *in,
                          const wave_chunk *mk)
{
  wv_span si[4], sm[2];
  uint64_t rows = 0;
  for (size_t i = 0; i < 4; i++) {
    si[i] = (wv_span){in[i].data, in[i].bytes / 4};
    rows += si[i].rows;
  }
  for (size_t i = 0; i < 2; i++)
    sm[i] = (wv_span){mk[i].data, mk[i].bytes / 4};
  wv_reduce_job j = {.dtype = WAVE_F32, .op = WAVE_FSUM, .input = si,
                     .n_input = 4, .mask = sm, .n_mask = 2, .has_mask = 1,
                     .rows = rows};
  wv_reduce_out ref;
  wave_error e = {0};
  ck_assert_int_eq(wv_reduce_reference(&j, &ref, &e), 0);
  uint8_t want[8 * WV_XSUM_F32_LIMBS];
  wv_xsum_pack(&ref.xsum, want);
  ck_assert_uint_eq(a->bits[0], ref.bits[0]);
  ck_assert_uint_eq(a->count, ref.count);
  const wave_reduce_result *r[2] = {a, b};
  for (int k = 0; k < 2; k++) {
    ck_assert_uint_eq(r[k]->exact_bytes, sizeof want);
    ck_assert_msg(memcmp(r[k]->exact, want, sizeof want) == 0, "%s: the "
                  "exact partial is not the reference's",
                  k ? "fleet" : "one daemon");
    ck_assert_uint_eq(r[k]->exact_flags, ref.xsum.flags);
  }
}

static void tfdm_reduce_same(wave_fleet *f, wave_dtype dt, wave_op op,
                           unsigned broken)
{
  wave_chunk in[4] = {{tfdm_rows[0], sizeof tfdm_rows[0]}, {tfdm_rows[1], 0},
                      {tfdm_rows[1], sizeof tfdm_rows[1]},
                      {tfdm_rows[2], sizeof tfdm_rows[2]}};
  wave_chunk mk[2] = {{tfdm_mask, 4 * 1234}, {tfdm_mask + 1234, 4 * (15000 - 1234)}};
  static uint32_t mask_all[15000];
  memcpy(mask_all, tfdm_mask, sizeof tfdm_mask);
  memset(mask_all + 10000, 0, 4 * 5000);  /* chunk 3: every row masked */
  mk[0].data = mask_all;
  mk[1].data = mask_all + 1234;
  wave_reduce_request q = {.dtype = dt, .op = op, .input = in, .n_input = 4,
                           .mask = mk, .n_mask = 2, .has_mask = 1};
  wave_client *c;
  wave_error err = {0};
  ck_assert_int_eq(wave_client_open(&c, tfdm_d[0].ipc, &err), 0);
  wave_reduce_result a;
  ck_assert_msg(wave_reduce(c, &q, &a, &err) == 0, "%s", err.message);
  wave_client_close(c);
  wave_fleet_options o = {.piece = 256};
  wave_fleet_reduce_result b;
  ck_assert_msg(wave_fleet_reduce(f, &q, &o, &b, &err) == 0, "%s",
                err.message);
  ck_assert_uint_eq(b.value.count, a.count);
  ck_assert_uint_eq(b.value.n_values, a.n_values);
  for (unsigned v = 0; v < a.n_values; v++)
    ck_assert_msg(b.value.bits[v] == a.bits[v], "%s %s: fleet 0x%08x, one "
                  "daemon 0x%08x", wave_op_name(op), wave_dtype_name(dt),
                  (unsigned)b.value.bits[v], (unsigned)a.bits[v]);
  if (op == WAVE_FSUM)
    tfdm_fsum_check(&a, &b.value, in, mk);
  for (size_t i = 0; i < b.n_members; i++)
    if (!(broken & (1u << i)))
      ck_assert_msg(!b.members[i].failed, "daemon %zu failed: %s", i,
                    b.members[i].error.message);
    else if (i == 2)  /* stopped: never answers a piece */
      ck_assert_uint_eq(b.members[i].pieces, 0);
  wave_fleet_reduce_result_free(&b);
}

/* fsum over finite rows too (random bits hold NaN and inf, which hide
 * the value): the rows' exponent 255 made 127 */
static void tfdm_fsum_finite(wave_fleet *f)
{
  static uint32_t keep[3][5000];
  memcpy(keep, tfdm_rows, sizeof keep);
  for (size_t c = 0; c < 3; c++)
    for (size_t r = 0; r < 5000; r++)
      if ((tfdm_rows[c][r] & 0x7f800000u) == 0x7f800000u)
        tfdm_rows[c][r] &= ~0x40000000u;
  tfdm_reduce_same(f, WAVE_F32, WAVE_FSUM, 0);
  memcpy(tfdm_rows, keep, sizeof keep);
}

static int tfdm_cancel_calls;

static void tfdm_cancel_progress(const wave_fleet_progress *p, void *arg)
{
  (void)p;
  if (tfdm_cancel_calls++ == 0)
    wave_fleet_cancel(arg);
}

START_TEST(fleet_equals_one_daemon)
{
  for (unsigned i = 0; i < 3; i++) {
    tfdm_config(&tfdm_d[i], 0);
    ck_assert_msg(td_start(&tfdm_d[i]) == 0, "%s", td_stderr(&tfdm_d[i]));
  }
  uint64_t x = 12345;
  for (size_t c = 0; c < 3; c++)
    for (size_t r = 0; r < 5000; r++) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      tfdm_rows[c][r] = (uint32_t)(x >> 32);
    }
  for (size_t r = 0; r < 600; r++)  /* a run of NaN and inf: no finite row */
    tfdm_rows[0][r] = r % 2 ? 0x7fc00000u : 0xff800000u;
  tfdm_rows[2][7] = 0x80000000u;
  for (size_t r = 0; r < 10000; r++)
    tfdm_mask[r] = (r * 7) % 5 != 0;

  wave_fleet *f = tfdm_fleet();
  wave_hash_request q = {.pack = "small", .nonce = 12345, .count = 100000,
                         .target = 0x0010000000000000ull, .max_winners = 7};
  tfdm_hash_same(f, &q, 8192, 0);
  wave_hash_request q2 = {.pack = "closed", .nonce = 1ull << 40,
                          .count = 70001, .target = 0x0004000000000000ull,
                          .max_winners = 0, .segment_log2 = 9};
  tfdm_hash_same(f, &q2, 3000, 0);
  static const struct { wave_dtype dt; wave_op op; } ops[] = {
      {WAVE_F32, WAVE_SUM}, {WAVE_F32, WAVE_MIN}, {WAVE_F32, WAVE_MAX},
      {WAVE_F32, WAVE_EXTENT}, {WAVE_U32, WAVE_XOR}, {WAVE_S32, WAVE_MIN},
      {WAVE_U32, WAVE_AND}, {WAVE_F32, WAVE_FSUM}};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    tfdm_reduce_same(f, ops[i].dt, ops[i].op, 0);
  tfdm_fsum_finite(f);
  /* a stream of independent reductions: each answered as one daemon
   * answers it, a bad one with its own error, the others unharmed */
  {
    wave_chunk ch[3] = {{tfdm_rows[0], 4 * 5000}, {tfdm_rows[1], 4 * 333},
                        {tfdm_rows[2], 4 * 4096}};
    wave_chunk bad_mask = {tfdm_mask, 4 * 7};
    wave_reduce_request rs[6];
    for (size_t i = 0; i < 6; i++)
      rs[i] = (wave_reduce_request){.dtype = i % 2 ? WAVE_F32 : WAVE_U32,
                                    .op = i % 3 == 0 ? WAVE_SUM : WAVE_MAX,
                                    .input = &ch[i % 3], .n_input = 1};
    rs[4].mask = &bad_mask;  /* 7 mask rows for 333 input rows */
    rs[4].n_mask = 1;
    rs[4].has_mask = 1;
    wave_reduce_result got[6], want;
    wave_error errs[6], err2 = {0};
    wave_fleet_reduce_result run;
    ck_assert_int_eq(wave_fleet_reduce_many(f, rs, 6, got, errs, &run, &err2),
                     WAVE_EMASKLEN);
    ck_assert_int_eq(errs[4].code, WAVE_EMASKLEN);
    ck_assert_uint_eq(run.pieces, 6);
    wave_client *one;
    ck_assert_int_eq(wave_client_open(&one, tfdm_d[1].ipc, &err2), 0);
    for (size_t i = 0; i < 6; i++) {
      if (i == 4)
        continue;
      ck_assert_int_eq(errs[i].code, 0);
      ck_assert_int_eq(wave_reduce(one, &rs[i], &want, &err2), 0);
      ck_assert_uint_eq(got[i].bits[0], want.bits[0]);
      ck_assert_uint_eq(got[i].count, want.count);
    }
    wave_client_close(one);
    wave_fleet_reduce_result_free(&run);
  }

  /* ReduceResult.finite: said for float min/max/extent only */
  wave_client *c;
  wave_error err = {0};
  ck_assert_int_eq(wave_client_open(&c, tfdm_d[0].ipc, &err), 0);
  wave_chunk nan_rows = {tfdm_rows[0], 4 * 600};
  wave_reduce_request rq = {.dtype = WAVE_F32, .op = WAVE_MIN,
                            .input = &nan_rows, .n_input = 1};
  wave_reduce_result rr;
  ck_assert_int_eq(wave_reduce(c, &rq, &rr, &err), 0);
  ck_assert_uint_eq(rr.bits[0], 0);
  ck_assert_uint_eq(rr.count, 600);
  ck_assert_int_eq(rr.finite, 2);
  uint32_t zero_nan[2] = {0x00000000u, 0x7fc00000u};
  wave_chunk zn = {zero_nan, 8};
  rq.input = &zn;
  rq.op = WAVE_EXTENT;
  ck_assert_int_eq(wave_reduce(c, &rq, &rr, &err), 0);
  ck_assert_int_eq(rr.finite, 1);
  rq.op = WAVE_SUM;
  ck_assert_int_eq(wave_reduce(c, &rq, &rr, &err), 0);
  ck_assert_int_eq(rr.finite, 0);
  wave_client_close(c);

  /* cancel from the first progress report: every piece is cancelled */
  wave_hash_request big = {.pack = "small", .nonce = 0, .count = 1ull << 32};
  wave_fleet_options o = {.piece = 1ull << 22};
  wave_fleet_hash_result b;
  tfdm_cancel_calls = 0;
  ck_assert_int_eq(wave_fleet_hash(f, &big, &o, &b, tfdm_cancel_progress, f,
                                   &err), WAVE_ECANCELLED);
  wave_fleet_hash_result_free(&b);

  /* the third daemon stopped, the second restarted with a device that
   * faults on its second step: still exact */
  wave_fleet_close(f);
  ck_assert_int_eq(td_stop(&tfdm_d[2]), 0);
  ck_assert_int_eq(td_stop(&tfdm_d[1]), 0);
  td_cleanup(&tfdm_d[1]);
  tfdm_config(&tfdm_d[1], 1);
  ck_assert_msg(td_start(&tfdm_d[1]) == 0, "%s", td_stderr(&tfdm_d[1]));
  f = tfdm_fleet();
  wave_fleet_set_timeout(f, 8000);  /* the stopped daemon costs this */
  q.segment_log2 = 8;  /* batches of 256 nonces are whole segments */
  tfdm_hash_same(f, &q, 2048, 6);
  tfdm_reduce_same(f, WAVE_F32, WAVE_SUM, 6);
  tfdm_reduce_same(f, WAVE_F32, WAVE_EXTENT, 6);
  wave_fleet_close(f);
  ck_assert_int_eq(td_stop(&tfdm_d[0]), 0);
  ck_assert_int_eq(td_stop(&tfdm_d[1]), 0);
  for (unsigned i = 0; i < 3; i++)
    td_cleanup(&tfdm_d[i]);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("fleet_daemons");
  TCase *t = tcase_create("fleet");
  tcase_set_timeout(t, 300);
  tcase_add_test(t, fleet_equals_one_daemon);
  suite_add_tcase(s, t);
  SRunner *r = srunner_create(s);
  srunner_set_fork_status(r, CK_NOFORK);
  srunner_run_all(r, CK_NORMAL);
  /* a failed assertion (no fork) leaves daemons up: stop them here */
  for (unsigned i = 0; i < 3; i++)
    td_cleanup(&tfdm_d[i]);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
