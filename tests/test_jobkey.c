/* test_jobkey.c - job keys: a job submitted over tcp with `auth: none` (no
 * token, no uid) is reachable from another connection by its key, and by
 * nothing else (docs/protocol.md "Job ownership").
 *
 *  - on the wire: the submit reply carries 16 key bytes; from a new
 *    connection JobRequest, JobsRequest and CancelRequest with the key
 *    succeed; without it, with one bit wrong, or cut short they answer
 *    NOJOB (or list nothing); the key opens its own job only; no reply but
 *    the submit's carries a key (polls, listings); an ipc submitter (a
 *    uid) gets none;
 *  - through wavectl: every hint `submit hash --detach` prints is run as
 *    printed and works (tcp: with --key; ipc: without), `jobs --key`
 *    lists the job, `cancel --key` cancels it, and without the key or with
 *    another one `wait` and `cancel` answer NOJOB.
 * Real wavedd (tests/daemon_harness.h), started inside each test.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "daemon_harness.h"
#include "core/base.h"

enum { TK_KEY = 16 };
#define TK_LONG 1099511627776ull  /* nonces: far more than a test runs */

/* A detached hash job of count nonces on s; its id and key (len kept). */
static uint64_t tjk_submit(nng_socket s, uint64_t count, uint8_t *key,
                          size_t *key_len)
{
  Wave__V1__HashRequest hr = WAVE__V1__HASH_REQUEST__INIT;
  hr.pack = "small";
  hr.count = count;
  hr.detach = 1;
  Wave__V1__Response *r = td_hash_req(s, 5, &hr);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
  uint64_t id = r->job->job_id;
  ck_assert_uint_ne(id, 0);
  *key_len = r->job->key.len;
  if (r->job->key.len > 0 && r->job->key.len <= TK_KEY)
    memcpy(key, r->job->key.data, r->job->key.len);
  wave__v1__response__free_unpacked(r, NULL);
  return id;
}

static Wave__V1__Response *tjk_job(nng_socket s, uint64_t id, int cancel,
                                  const uint8_t *key, size_t len)
{
  Wave__V1__JobRequest jr = WAVE__V1__JOB_REQUEST__INIT;
  Wave__V1__CancelRequest cr = WAVE__V1__CANCEL_REQUEST__INIT;
  Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
  ProtobufCBinaryData k = {len, (uint8_t *)key};
  rq.version = 2;
  rq.id = 77;
  if (cancel) {
    cr.job_id = id;
    cr.key = k;
    rq.body_case = WAVE__V1__REQUEST__BODY_CANCEL;
    rq.cancel = &cr;
  } else {
    jr.job_id = id;
    jr.key = k;
    rq.body_case = WAVE__V1__REQUEST__BODY_JOB;
    rq.job = &jr;
  }
  return td_call(s, &rq);
}

/* JobsRequest with key: is job id listed?  No listing carries a key. */
static int tjk_listed(nng_socket s, uint64_t id, const uint8_t *key,
                     size_t len)
{
  Wave__V1__JobsRequest jq = WAVE__V1__JOBS_REQUEST__INIT;
  jq.key = (ProtobufCBinaryData){len, (uint8_t *)key};
  Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
  rq.version = 2;
  rq.id = 78;
  rq.body_case = WAVE__V1__REQUEST__BODY_JOBS;
  rq.jobs = &jq;
  Wave__V1__Response *r = td_call(s, &rq);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOBS);
  int found = 0;
  for (size_t i = 0; i < r->jobs->n_jobs; i++) {
    ck_assert_uint_eq(r->jobs->jobs[i]->key.len, 0);
    found += r->jobs->jobs[i]->job_id == id;
  }
  wave__v1__response__free_unpacked(r, NULL);
  return found;
}

START_TEST(key_on_the_wire)
{
  td_daemon d;
  td_prepare(&d, NULL);
  ck_assert_msg(td_start(&d) == 0, "did not start:\n%s", td_stderr(&d));
  nng_socket a = td_dial(d.tcp), b = td_dial(d.tcp), u = td_dial(d.ipc);
  uint8_t key[TK_KEY], key2[TK_KEY], bad[TK_KEY], none[TK_KEY];
  size_t len, len2, len_ipc;
  uint64_t id = tjk_submit(a, TK_LONG, key, &len);
  ck_assert_uint_eq(len, TK_KEY);
  uint64_t id2 = tjk_submit(a, TK_LONG, key2, &len2);
  ck_assert_uint_eq(len2, TK_KEY);
  ck_assert_msg(memcmp(key, key2, TK_KEY) != 0, "two jobs, one key");
  /* a uid owns its jobs: no key */
  uint64_t id_ipc = tjk_submit(u, 8192, none, &len_ipc);
  ck_assert_uint_eq(len_ipc, 0);

  /* another connection: nothing without the key, or with a wrong one */
  td_expect_error(tjk_job(b, id, 0, NULL, 0), WAVE_ENOJOB, 77);
  memcpy(bad, key, TK_KEY);
  bad[TK_KEY - 1] ^= 1;
  td_expect_error(tjk_job(b, id, 0, bad, TK_KEY), WAVE_ENOJOB, 77);
  td_expect_error(tjk_job(b, id, 0, key, TK_KEY - 1), WAVE_ENOJOB, 77);
  td_expect_error(tjk_job(b, id, 1, bad, TK_KEY), WAVE_ENOJOB, 77);
  /* a key opens its own job only */
  td_expect_error(tjk_job(b, id2, 0, key, TK_KEY), WAVE_ENOJOB, 77);
  td_expect_error(tjk_job(b, id_ipc, 0, key, TK_KEY), WAVE_ENOJOB, 77);
  ck_assert_int_eq(tjk_listed(b, id, NULL, 0), 0);
  ck_assert_int_eq(tjk_listed(b, id, bad, TK_KEY), 0);
  ck_assert_int_eq(tjk_listed(b, id2, key, TK_KEY), 0);

  /* with the key: poll (no key in the reply), list, cancel */
  Wave__V1__Response *r = tjk_job(b, id, 0, key, TK_KEY);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
  ck_assert_uint_eq(r->job->job_id, id);
  ck_assert_uint_eq(r->job->key.len, 0);
  ck_assert(r->job->state == WAVE__V1__JOB_STATE__QUEUED ||
            r->job->state == WAVE__V1__JOB_STATE__RUNNING);
  wave__v1__response__free_unpacked(r, NULL);
  ck_assert_int_eq(tjk_listed(b, id, key, TK_KEY), 1);
  ck_assert_int_eq(tjk_listed(b, id2, key, TK_KEY), 0);
  r = tjk_job(b, id, 1, key, TK_KEY);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
  ck_assert_uint_eq(r->job->key.len, 0);
  wave__v1__response__free_unpacked(r, NULL);
  /* the submitter's connection goes: the detached job with a key stays
   * reachable; its end is the cancel above */
  nng_close(a);
  int ended = 0;
  while (!ended) {
    Wave__V1__JobRequest jr = WAVE__V1__JOB_REQUEST__INIT;
    jr.job_id = id;
    jr.wait_ms = 1000;
    jr.key = (ProtobufCBinaryData){TK_KEY, key};
    Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
    rq.version = 2;
    rq.id = 79;
    rq.body_case = WAVE__V1__REQUEST__BODY_JOB;
    rq.job = &jr;
    r = td_call(b, &rq);
    ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
    ended = r->job->state == WAVE__V1__JOB_STATE__CANCELLED;
    ck_assert_msg(ended || r->job->state == WAVE__V1__JOB_STATE__QUEUED ||
                  r->job->state == WAVE__V1__JOB_STATE__RUNNING,
                  "state %d", r->job->state);
    wave__v1__response__free_unpacked(r, NULL);
  }
  /* the other long job, by its own key */
  r = tjk_job(b, id2, 1, key2, TK_KEY);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
  wave__v1__response__free_unpacked(r, NULL);
  nng_close(b);
  nng_close(u);
  td_stop_ok(&d);
}
END_TEST

/* ---- wavectl ---------------------------------------------------------- */

typedef struct tjk_out {
  int status;
  char out[4096], err[4096];
} tjk_out;

/* sh -c CMD with wavectl on PATH; stdout and stderr kept. */
static void tjk_sh(const td_daemon *d, const char *cmd, tjk_out *o)
{
  char full[4096], of[300], ef[300];
  snprintf(of, sizeof of, "%s/ctl.out", d->dir);
  snprintf(ef, sizeof ef, "%s/ctl.err", d->dir);
  snprintf(full, sizeof full, "PATH=%s:$PATH; %s >%s 2>%s",
           getenv("WAVE_BINARY_DIR"), cmd, of, ef);
  int st = system(full);
  o->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  FILE *f = fopen(of, "r");
  size_t n = f ? fread(o->out, 1, sizeof o->out - 1, f) : 0;
  o->out[n] = '\0';
  if (f)
    fclose(f);
  f = fopen(ef, "r");
  n = f ? fread(o->err, 1, sizeof o->err - 1, f) : 0;
  o->err[n] = '\0';
  if (f)
    fclose(f);
}

/* The job id and the hint of a `submit hash --detach` line:
 * "job N submitted (HINT)". */
static uint64_t tjk_hint(const tjk_out *o, char *hint, size_t n)
{
  unsigned long long id = 0;
  ck_assert_msg(sscanf(o->out, "job %llu submitted (", &id) == 1, "%s",
                o->out);
  const char *p = strchr(o->out, '('), *q = strrchr(o->out, ')');
  ck_assert_msg(p != NULL && q != NULL && q > p, "%s", o->out);
  snprintf(hint, n, "%.*s", (int)(q - p - 1), p + 1);
  return id;
}

START_TEST(wavectl_hints_work)
{
  td_daemon d;
  td_prepare(&d, NULL);
  ck_assert_msg(td_start(&d) == 0, "did not start:\n%s", td_stderr(&d));
  tjk_out o;
  char cmd[2048], hint[1024];

  /* tcp: the hint names the key, and runs as printed */
  snprintf(cmd, sizeof cmd, "wavectl --url %s submit hash --pack small "
           "--nonce 0 --count 8192 --detach", d.tcp);
  tjk_sh(&d, cmd, &o);
  ck_assert_msg(o.status == 0, "exit %d: %s", o.status, o.err);
  uint64_t id = tjk_hint(&o, hint, sizeof hint);
  ck_assert_msg(strstr(hint, " --key ") != NULL, "%s", hint);
  tjk_sh(&d, hint, &o);
  ck_assert_msg(o.status == 0, "'%s': exit %d: %s", hint, o.status, o.err);
  ck_assert_msg(strstr(o.out, "fingerprint") != NULL, "%s", o.out);
  /* without the key, from another wavectl: NOJOB */
  snprintf(cmd, sizeof cmd, "wavectl --url %s wait %llu", d.tcp,
           (unsigned long long)id);
  tjk_sh(&d, cmd, &o);
  ck_assert_msg(o.status == 1 && strstr(o.err, "NOJOB"), "exit %d: %s",
                o.status, o.err);

  /* a long job: jobs --key lists it, a wrong key and no key get NOJOB,
   * cancel --key cancels it */
  snprintf(cmd, sizeof cmd, "wavectl --url %s submit hash --pack small "
           "--nonce 0 --count %llu --detach --json", d.tcp, TK_LONG);
  tjk_sh(&d, cmd, &o);
  ck_assert_msg(o.status == 0, "exit %d: %s", o.status, o.err);
  unsigned long long big = 0;
  char key[33] = "";
  ck_assert_msg(sscanf(o.out, "{\"job\": %llu, \"key\": \"%32[0-9a-f]\"}",
                       &big, key) == 2, "%s", o.out);
  ck_assert_uint_eq(strlen(key), 32);
  snprintf(cmd, sizeof cmd, "wavectl --url %s jobs --key %s --json", d.tcp,
           key);
  tjk_sh(&d, cmd, &o);
  ck_assert_msg(o.status == 0, "exit %d: %s", o.status, o.err);
  char want[64];
  snprintf(want, sizeof want, "\"job\": %llu,", big);
  ck_assert_msg(strstr(o.out, want) != NULL, "%s", o.out);
  ck_assert_msg(strstr(o.out, key) == NULL, "a listing shows the key: %s",
                o.out);
  snprintf(cmd, sizeof cmd, "wavectl --url %s jobs --json", d.tcp);
  tjk_sh(&d, cmd, &o);
  ck_assert_msg(o.status == 0 && strstr(o.out, want) == NULL,
                "listed without the key: %s", o.out);
  char wrong[33];
  snprintf(wrong, sizeof wrong, "%s", key);
  wrong[0] = wrong[0] == '0' ? '1' : '0';
  snprintf(cmd, sizeof cmd, "wavectl --url %s cancel %llu --key %s", d.tcp,
           big, wrong);
  tjk_sh(&d, cmd, &o);
  ck_assert_msg(o.status == 1 && strstr(o.err, "NOJOB"), "exit %d: %s",
                o.status, o.err);
  snprintf(cmd, sizeof cmd, "wavectl --url %s cancel %llu", d.tcp, big);
  tjk_sh(&d, cmd, &o);
  ck_assert_msg(o.status == 1 && strstr(o.err, "NOJOB"), "exit %d: %s",
                o.status, o.err);
  snprintf(cmd, sizeof cmd, "wavectl --url %s cancel %llu --key %s --json",
           d.tcp, big, key);
  tjk_sh(&d, cmd, &o);
  ck_assert_msg(o.status == 0 && strstr(o.out, "\"cancelled\""),
                "exit %d: %s %s", o.status, o.out, o.err);
  /* a malformed key is a usage error */
  snprintf(cmd, sizeof cmd, "wavectl --url %s wait %llu --key 12", d.tcp,
           big);
  tjk_sh(&d, cmd, &o);
  ck_assert_msg(o.status == 2 && strstr(o.err, "ARG"), "exit %d: %s",
                o.status, o.err);

  /* ipc: a uid owns the job, so the plain hint works and has no key */
  snprintf(cmd, sizeof cmd, "wavectl --url %s submit hash --pack small "
           "--nonce 0 --count 8192 --detach", d.ipc);
  tjk_sh(&d, cmd, &o);
  ck_assert_msg(o.status == 0, "exit %d: %s", o.status, o.err);
  tjk_hint(&o, hint, sizeof hint);
  ck_assert_msg(strstr(hint, "--key") == NULL, "%s", hint);
  tjk_sh(&d, hint, &o);
  ck_assert_msg(o.status == 0, "'%s': exit %d: %s", hint, o.status, o.err);
  td_stop_ok(&d);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("jobkey");
  TCase *t = tcase_create("keys");
  tcase_set_timeout(t, 300);
  tcase_add_test(t, key_on_the_wire);
  tcase_add_test(t, wavectl_hints_work);
  suite_add_tcase(s, t);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
