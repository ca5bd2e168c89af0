/* test_packwait.c - hash jobs that wait for their pack (hashjob.h "Packs
 * being prepared"), against the real daemon (wavedd-test: the fake
 * backend, whose "hold_prepare=DIR" device string holds a pack's
 * preparation while DIR/<pack> exists, so a test sees a pack being
 * prepared for as long as it likes, with no timing involved):
 *
 *  - an attached and a detached job submitted while their pack is being
 *    prepared are accepted in PREPARING (JobInfo says which pack, which
 *    device, steps done and in all), stay there while the preparation is
 *    held, and end DONE with the same bits as the job run after the pack
 *    is ready;
 *  - a job cancelled while PREPARING ends CANCELLED, and the device serves
 *    on;
 *  - a job on every device starts on the one whose pack is ready and ends
 *    without waiting for the one still preparing it;
 *  - a pack whose known answers really fail still gives SELFCHECK, with
 *    the check's own reason (not "pending"), to the job that waited and to
 *    the next one at submit;
 *  - at start-up the small pack is prepared before the big one (its
 *    check is ok while the big one's is held), whatever their names.
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <nng/nng.h>

#include "daemon_harness.h"
#include "core/base.h"

#define PW_PREPARING WAVE__V1__JOB_STATE__PREPARING

/* The config: one fake device that holds preparations under d->dir/hold,
 * packs from packs_dir (NULL: the shipped ones), prepare: `when`. */
static void pw_config2(td_daemon *d, const char *packs_dir,
                       const char *load, const char *when,
                       const char *more);

static void pw_config(td_daemon *d, const char *packs_dir, const char *load,
                      const char *when)
{
  pw_config2(d, packs_dir, load, when, "");
}

/* The same, with more device lines after fk0. */
static void pw_config2(td_daemon *d, const char *packs_dir,
                       const char *load, const char *when, const char *more)
{
  char hold[200], text[2048], shipped[300];
  snprintf(hold, sizeof hold, "%s/hold", d->dir);
  ck_assert_int_eq(mkdir(hold, 0700), 0);
  snprintf(shipped, sizeof shipped, "%s/config/packs",
           getenv("WAVE_SOURCE_DIR"));
  snprintf(text, sizeof text, "listen: [\"%s\"]\nlog_level: info\n"
           "packs: {dir: %s, load: [%s], prepare: %s}\n"
           "devices:\n  - {name: fk0, backend: fake, threads: 1, "
           "device: \"hold_prepare=%s\"}\n%s", d->ipc,
           packs_dir ? packs_dir : shipped, load, when, hold, more);
  td_write(d->cfg, text);
  d->fake = 1;
}

/* Hold (or let go) pack's preparation. */
static void pw_hold(td_daemon *d, const char *pack, int on)
{
  char path[300];
  snprintf(path, sizeof path, "%s/hold/%s", d->dir, pack);
  if (on)
    td_write(path, "held by test_packwait\n");
  else
    ck_assert_int_eq(unlink(path), 0);
}

/* A ragged job on `pack`: unaligned edges, winners, many pieces. */
static void pw_request(Wave__V1__HashRequest *hq, const char *pack,
                       int detach)
{
  wave__v1__hash_request__init(hq);
  hq->pack = (char *)pack;
  hq->nonce = (1ull << 20) - 777;
  hq->count = 40000;
  hq->target = 1ull << 58;
  hq->max_winners = 9;
  hq->segment_log2 = 10;
  hq->want_segments = 1;
  hq->detach = detach != 0;
}

/* Submit; the JobInfo reply (caller frees). */
static Wave__V1__Response *pw_submit(nng_socket s, uint64_t id,
                                     const char *pack, int detach)
{
  Wave__V1__HashRequest hq;
  pw_request(&hq, pack, detach);
  Wave__V1__Response *r = td_hash_req(s, id, &hq);
  ck_assert_msg(r->body_case == WAVE__V1__RESPONSE__BODY_JOB, "submit: %s",
                r->error ? r->error->message : "?");
  return r;
}

/* JobInfo says: waiting for `pack` on fk0, its preparation held before
 * its first step is done (the steps in all are known once the device has
 * begun it; until then 0). */
static void pw_expect_waiting(const Wave__V1__JobInfo *ji, const char *pack)
{
  ck_assert_int_eq(ji->state, PW_PREPARING);
  ck_assert_str_eq(ji->waiting_pack, pack);
  ck_assert_str_eq(ji->waiting_device, "fk0");
  ck_assert_uint_eq(ji->prepare_steps, 0);
  ck_assert_uint_eq(ji->done, 0);
  ck_assert_ptr_null(ji->error);
}

/* Poll the job until its device has begun the (held) preparation: the
 * steps in all are known, none done, and the job waits throughout. */
static void pw_wait_begun(nng_socket s, uint64_t job, const char *pack)
{
  for (int i = 0; i < 6000; i++) {
    Wave__V1__Response *r = td_job(s, job, 0, 0);
    ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
    pw_expect_waiting(r->job, pack);
    unsigned total = r->job->prepare_steps_total;
    wave__v1__response__free_unpacked(r, NULL);
    if (total > 0)
      return;
    struct timespec nap = {0, 5 * 1000 * 1000};
    nanosleep(&nap, NULL);
  }
  ck_abort_msg("job %llu: its pack's preparation never began",
               (unsigned long long)job);
}

static void pw_same(const Wave__V1__HashResult *a,
                    const Wave__V1__HashResult *b)
{
  ck_assert_uint_eq(a->job_fingerprint, b->job_fingerprint);
  ck_assert_uint_eq(a->segment_count, b->segment_count);
  ck_assert_uint_eq(a->n_segments, b->n_segments);
  for (size_t i = 0; i < a->n_segments; i++)
    ck_assert_msg(a->segments[i] == b->segments[i], "segment %zu", i);
  ck_assert_uint_eq(a->winner_count, b->winner_count);
  ck_assert_uint_eq(a->n_winners, b->n_winners);
  for (size_t i = 0; i < a->n_winners; i++) {
    ck_assert_uint_eq(a->winners[i]->nonce, b->winners[i]->nonce);
    ck_assert_uint_eq(a->winners[i]->output, b->winners[i]->output);
  }
  ck_assert_uint_eq(a->best_nonce, b->best_nonce);
  ck_assert_uint_eq(a->best_output, b->best_output);
  ck_assert_uint_eq(a->hashes, b->hashes);
}

static const Wave__V1__PackCheck *pw_check(const Wave__V1__StatusReply *st,
                                           const char *pack)
{
  const Wave__V1__DeviceStatus *ds = st->devices[0];
  for (size_t k = 0; k < ds->n_packs; k++)
    if (strcmp(ds->packs[k]->pack, pack) == 0)
      return ds->packs[k];
  ck_abort_msg("no pack %s in status", pack);
  return NULL;
}

static Wave__V1__Response *pw_wait_done(nng_socket s, uint64_t job)
{
  Wave__V1__Response *r = td_wait_job(s, job);
  ck_assert_msg(r->job->state == WAVE__V1__JOB_STATE__DONE, "state %d: %s",
                r->job->state, r->job->error ? r->job->error->message : "");
  ck_assert_ptr_nonnull(r->job->result);
  return r;
}

/* ---- tests ------------------------------------------------------------- */

START_TEST(jobs_wait_for_their_pack)
{
  td_daemon d;
  td_prepare(&d, NULL);
  pw_config(&d, NULL, "closed, small", "first-use");
  pw_hold(&d, "small", 1);
  /* first-use: ready at once, nothing prepared */
  ck_assert_msg(td_start(&d) == 0, "did not start:\n%s", td_stderr(&d));
  nng_socket s = td_dial(d.ipc);
  Wave__V1__Response *r = td_status(s, 1);
  ck_assert_int_eq(r->status->ready, 1);
  ck_assert_str_eq(pw_check(r->status, "small")->state, "pending");
  ck_assert_ptr_nonnull(strstr(pw_check(r->status, "small")->detail,
                               "first-use"));
  wave__v1__response__free_unpacked(r, NULL);

  /* attached, then detached from a connection that then closes */
  r = pw_submit(s, 2, "small", 0);
  pw_expect_waiting(r->job, "small");
  uint64_t attached = r->job->job_id;
  wave__v1__response__free_unpacked(r, NULL);
  nng_socket s2 = td_dial(d.ipc);
  r = pw_submit(s2, 3, "small", 1);
  pw_expect_waiting(r->job, "small");
  uint64_t detached = r->job->job_id;
  wave__v1__response__free_unpacked(r, NULL);
  nng_close(s2);

  /* held: both still wait, as JobRequest and JobsRequest say */
  pw_wait_begun(s, attached, "small");
  r = td_job(s, detached, 0, 0);
  pw_expect_waiting(r->job, "small");
  ck_assert_uint_eq(r->job->prepare_steps_total, 1);  /* 4 MiB: one step */
  wave__v1__response__free_unpacked(r, NULL);
  Wave__V1__JobsRequest jq = WAVE__V1__JOBS_REQUEST__INIT;
  Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
  rq.version = 2;
  rq.id = 4;
  rq.body_case = WAVE__V1__REQUEST__BODY_JOBS;
  rq.jobs = &jq;
  r = td_call(s, &rq);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOBS);
  ck_assert_uint_eq(r->jobs->n_jobs, 2);
  for (size_t i = 0; i < r->jobs->n_jobs; i++) {
    pw_expect_waiting(r->jobs->jobs[i], "small");
    ck_assert_uint_eq(r->jobs->jobs[i]->prepare_steps_total, 1);
  }
  wave__v1__response__free_unpacked(r, NULL);

  /* let the preparation go: both run and end DONE */
  pw_hold(&d, "small", 0);
  Wave__V1__Response *ra = pw_wait_done(s, attached);
  nng_socket s3 = td_dial(d.ipc);
  Wave__V1__Response *rd = pw_wait_done(s3, detached);
  nng_close(s3);
  /* the same job on the ready pack: no waiting, the same bits */
  r = td_status(s, 5);
  ck_assert_str_eq(pw_check(r->status, "small")->state, "ok");
  wave__v1__response__free_unpacked(r, NULL);
  r = pw_submit(s, 6, "small", 0);
  ck_assert_int_ne(r->job->state, PW_PREPARING);
  uint64_t ref_id = r->job->job_id;
  wave__v1__response__free_unpacked(r, NULL);
  Wave__V1__Response *ref = pw_wait_done(s, ref_id);
  pw_same(ra->job->result, ref->job->result);
  pw_same(rd->job->result, ref->job->result);
  ck_assert_uint_gt(ref->job->result->winner_count, 0);
  wave__v1__response__free_unpacked(ra, NULL);
  wave__v1__response__free_unpacked(rd, NULL);
  wave__v1__response__free_unpacked(ref, NULL);
  nng_close(s);
  td_stop_ok(&d);
}
END_TEST

START_TEST(cancel_while_preparing)
{
  td_daemon d;
  td_prepare(&d, NULL);
  pw_config(&d, NULL, "small", "first-use");
  pw_hold(&d, "small", 1);
  ck_assert_msg(td_start(&d) == 0, "did not start:\n%s", td_stderr(&d));
  nng_socket s = td_dial(d.ipc);
  Wave__V1__Response *r = pw_submit(s, 1, "small", 1);
  pw_expect_waiting(r->job, "small");
  uint64_t job = r->job->job_id;
  wave__v1__response__free_unpacked(r, NULL);
  pw_wait_begun(s, job, "small");
  r = td_job(s, job, 0, 1);  /* cancel, the preparation still held */
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
  wave__v1__response__free_unpacked(r, NULL);
  r = td_wait_job(s, job);
  ck_assert_int_eq(r->job->state, WAVE__V1__JOB_STATE__CANCELLED);
  ck_assert_int_eq(r->job->error->code, WAVE_ECANCELLED);
  ck_assert_uint_eq(r->job->done, 0);
  wave__v1__response__free_unpacked(r, NULL);
  /* the preparation goes on; the next job runs */
  pw_hold(&d, "small", 0);
  r = pw_submit(s, 2, "small", 0);
  uint64_t next = r->job->job_id;
  wave__v1__response__free_unpacked(r, NULL);
  r = pw_wait_done(s, next);
  wave__v1__response__free_unpacked(r, NULL);
  nng_close(s);
  td_stop_ok(&d);
}
END_TEST

/* devices: all, fk0's preparation held: the job starts on cpu1 once its
 * pack is ready there, ends DONE with cpu1 doing every nonce, without
 * waiting for fk0, and equals the job on cpu1 alone. */
START_TEST(all_devices_start_when_ready)
{
  td_daemon d;
  td_prepare(&d, NULL);
  pw_config2(&d, NULL, "small", "first-use",
             "  - {name: cpu1, backend: cpu, threads: 1}\n");
  pw_hold(&d, "small", 1);
  ck_assert_msg(td_start(&d) == 0, "did not start:\n%s", td_stderr(&d));
  nng_socket s = td_dial(d.ipc);
  Wave__V1__HashRequest hq;
  pw_request(&hq, "small", 0);
  char *all[] = {(char *)"all"};
  hq.n_devices = 1;
  hq.devices = all;
  Wave__V1__Response *r = td_hash_req(s, 1, &hq);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
  ck_assert_uint_eq(r->job->n_devices, 2);
  uint64_t job = r->job->job_id;
  wave__v1__response__free_unpacked(r, NULL);
  Wave__V1__Response *both = pw_wait_done(s, job);
  const Wave__V1__HashResult *hb = both->job->result;
  ck_assert_uint_eq(hb->n_shares, 2);
  ck_assert_str_eq(hb->shares[0]->device, "fk0");
  ck_assert_uint_eq(hb->shares[0]->hashes, 0);
  ck_assert_uint_eq(hb->shares[1]->hashes, hq.count);
  /* fk0 is still held: its check is pending */
  r = td_status(s, 2);
  ck_assert_str_eq(pw_check(r->status, "small")->state, "pending");
  wave__v1__response__free_unpacked(r, NULL);
  pw_request(&hq, "small", 0);
  hq.device = (char *)"cpu1";
  r = td_hash_req(s, 3, &hq);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
  job = r->job->job_id;
  wave__v1__response__free_unpacked(r, NULL);
  Wave__V1__Response *one = pw_wait_done(s, job);
  pw_same(one->job->result, hb);
  wave__v1__response__free_unpacked(one, NULL);
  wave__v1__response__free_unpacked(both, NULL);
  pw_hold(&d, "small", 0);
  nng_close(s);
  td_stop_ok(&d);
}
END_TEST

/* small.yaml as pack "bad" whose known cache fingerprint is wrong. */
static void pw_bad_packs(td_daemon *d, char *dir, size_t n)
{
  snprintf(dir, n, "%s/packs", d->dir);
  ck_assert_int_eq(mkdir(dir, 0700), 0);
  char src[300], path[400];
  snprintf(src, sizeof src, "%s/config/packs/small.yaml",
           getenv("WAVE_SOURCE_DIR"));
  FILE *f = fopen(src, "r");
  ck_assert_ptr_nonnull(f);
  static char text[1 << 16];
  size_t len = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[len] = '\0';
  snprintf(path, sizeof path, "%s/small.yaml", dir);
  td_write(path, text);
  char *name = strstr(text, "name: small");
  ck_assert_ptr_nonnull(name);
  memcpy(name, "name: bad  ", 11);
  char *fnv = strstr(text, "cache_fnv: 0x");
  ck_assert_ptr_nonnull(fnv);
  char *last = fnv + strlen("cache_fnv: 0x") + 15;
  *last = *last == '0' ? '1' : '0';
  snprintf(path, sizeof path, "%s/bad.yaml", dir);
  td_write(path, text);
}

START_TEST(selfcheck_failure_is_selfcheck)
{
  td_daemon d;
  td_prepare(&d, NULL);
  char packs[300];
  pw_bad_packs(&d, packs, sizeof packs);
  pw_config(&d, packs, "small, bad", "first-use");
  pw_hold(&d, "bad", 1);
  ck_assert_msg(td_start(&d) == 0, "did not start:\n%s", td_stderr(&d));
  nng_socket s = td_dial(d.ipc);
  Wave__V1__Response *r = pw_submit(s, 1, "bad", 0);
  pw_expect_waiting(r->job, "bad");
  uint64_t job = r->job->job_id;
  wave__v1__response__free_unpacked(r, NULL);
  pw_wait_begun(s, job, "bad");
  pw_hold(&d, "bad", 0);
  r = td_wait_job(s, job);
  ck_assert_int_eq(r->job->state, WAVE__V1__JOB_STATE__FAILED);
  ck_assert_int_eq(r->job->error->code, WAVE_ESELFCHECK);
  const char *msg = r->job->error->message;
  ck_assert_msg(strstr(msg, "cache fingerprint") != NULL &&
                    strstr(msg, "pending") == NULL, "message: %s", msg);
  wave__v1__response__free_unpacked(r, NULL);
  /* the next job on it is refused at once; the other pack serves */
  Wave__V1__HashRequest hq;
  pw_request(&hq, "bad", 0);
  td_expect_error(td_hash_req(s, 2, &hq), WAVE_ESELFCHECK, 2);
  r = pw_submit(s, 3, "small", 0);
  uint64_t ok = r->job->job_id;
  wave__v1__response__free_unpacked(r, NULL);
  r = pw_wait_done(s, ok);
  wave__v1__response__free_unpacked(r, NULL);
  nng_close(s);
  td_stop_ok(&d);
}
END_TEST

/* prepare: startup, main (1 GiB) named before small: small is prepared
 * first, so its check is ok while main's is held, before READY=1. */
START_TEST(small_packs_first)
{
  td_daemon d;
  td_prepare(&d, NULL);
  pw_config(&d, NULL, "main, small", "startup");
  pw_hold(&d, "main", 1);
  ck_assert_msg(td_start_listening(&d) == 0, "did not start:\n%s",
                td_stderr(&d));
  nng_socket s = td_dial(d.ipc);
  /* a bound, not a measurement: small's preparation takes a fraction of
   * a second; in name order it would wait behind the held main for ever */
  int ok = 0;
  for (int i = 0; i < 6000 && !ok; i++) {
    Wave__V1__Response *r = td_status(s, 1);
    ok = strcmp(pw_check(r->status, "small")->state, "ok") == 0;
    if (ok) {
      ck_assert_str_eq(pw_check(r->status, "main")->state, "pending");
      ck_assert_int_eq(r->status->ready, 0);
    }
    wave__v1__response__free_unpacked(r, NULL);
    struct timespec nap = {0, 10 * 1000 * 1000};
    if (!ok)
      nanosleep(&nap, NULL);
  }
  ck_assert_msg(ok, "small was not prepared while main was held");
  /* a job on main waits for the start-up preparation (no second one) */
  Wave__V1__Response *r = pw_submit(s, 2, "main", 0);
  pw_expect_waiting(r->job, "main");
  uint64_t job = r->job->job_id;
  wave__v1__response__free_unpacked(r, NULL);
  pw_wait_begun(s, job, "main");
  r = td_job(s, job, 0, 0);
  ck_assert_uint_eq(r->job->prepare_steps_total, 64);  /* 1 GiB, 16 MiB a step */
  wave__v1__response__free_unpacked(r, NULL);
  ck_assert_ptr_null(strstr(td_stderr(&d), "for its first job"));
  pw_hold(&d, "main", 0);
  nng_close(s);  /* the attached job is cancelled; the stop is clean */
  td_stop_ok(&d);
}
END_TEST

static Suite *packwait_suite(void)
{
  Suite *s = suite_create("packwait");
  TCase *tc = tcase_create("packwait");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, jobs_wait_for_their_pack);
  tcase_add_test(tc, cancel_while_preparing);
  tcase_add_test(tc, all_devices_start_when_ready);
  tcase_add_test(tc, selfcheck_failure_is_selfcheck);
  tcase_add_test(tc, small_packs_first);
  suite_add_tcase(s, tc);
  return s;
}

int main(void)
{
  signal(SIGPIPE, SIG_IGN);
  SRunner *r = srunner_create(packwait_suite());
  srunner_run_all(r, CK_ENV);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
