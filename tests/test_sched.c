/* test_sched.c - hash job scheduling and ownership (issue 12), against the
 * real wavedd over raw nng + protobuf-c (tests/daemon_harness.h):
 *
 *  - a job of 2^64-1 nonces shares its device: another client's small job
 *    on the same device finishes while it runs;
 *  - limits.client_jobs: the greedy client gets BUSY, another does not;
 *  - a killed client's jobs are cancelled, its detached job runs on;
 *  - another uid (a child that setuid()s to nobody) cannot poll, cancel or
 *    list someone else's job, and gets exactly the unknown-id answer;
 *  - ended jobs' results hold at most limits.keep_result_bytes (the oldest
 *    is forgotten first), and outputs are dropped once delivered;
 *  - over tcp with tokens a job belongs to its token: another connection
 *    with the same token sees it, one with another token does not.
 *
 * No test measures time.  A wait that would never end without the
 * behaviour under test is bounded by a number of polls (each a daemon-side
 * wait of TS_POLL_MS) and fails when they run out.  Helper clients run in
 * forked children that fork before this process first uses nng.
 */
#include <check.h>
#include <inttypes.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "daemon_harness.h"
#include "skip.h"
#include "core/base.h"

#define TS_POLL_MS 2000
#define TS_POLLS 60
#define TS_HUGE UINT64_MAX  /* nonces 0 .. 2^64-2 */

static void tsc_up(td_daemon *d, const char *limits)
{
  td_prepare(d, limits);
  if (td_start(d) != 0)
    ck_abort_msg("wavedd did not start:\n%s", td_stderr(d));
}

static void tsc_down(td_daemon *d)
{
  int rc = td_stop(d);
  if (rc != 0)
    fprintf(stderr, "wavedd exited %d:\n%s\n", rc, td_stderr(d));
  ck_assert_int_eq(rc, 0);
  td_cleanup(d);
}

static Wave__V1__Response *tsc_submit(nng_socket s, uint64_t count,
                                     const char *device, int detach,
                                     int outputs)
{
  Wave__V1__HashRequest hq = WAVE__V1__HASH_REQUEST__INIT;
  hq.pack = "small";
  hq.nonce = 0;
  hq.count = count;
  hq.device = (char *)device;
  hq.detach = detach;
  hq.want_outputs = outputs;
  return td_hash_req(s, 5, &hq);
}

/* A submit that must be accepted; its job id. */
static uint64_t tsc_job(nng_socket s, uint64_t count, const char *device,
                       int detach, int outputs)
{
  Wave__V1__Response *r = tsc_submit(s, count, device, detach, outputs);
  ck_assert_msg(r->body_case == WAVE__V1__RESPONSE__BODY_JOB, "submit: %s",
                r->error ? r->error->message : "?");
  uint64_t id = r->job->job_id;
  wave__v1__response__free_unpacked(r, NULL);
  return id;
}

static int tsc_live(int state)
{
  return state == WAVE__V1__JOB_STATE__QUEUED ||
         state == WAVE__V1__JOB_STATE__RUNNING;
}

/* Poll until the job ends, at most TS_POLLS times; its final state. */
static int tsc_wait_end(nng_socket s, uint64_t id)
{
  for (int i = 0; i < TS_POLLS; i++) {
    Wave__V1__Response *r = td_job(s, id, TS_POLL_MS, 0);
    ck_assert_msg(r->body_case == WAVE__V1__RESPONSE__BODY_JOB, "poll: %s",
                  r->error ? r->error->message : "?");
    int st = r->job->state;
    wave__v1__response__free_unpacked(r, NULL);
    if (!tsc_live(st))
      return st;
  }
  ck_abort_msg("job %" PRIu64 " did not end in %d polls", id, TS_POLLS);
  return 0;
}

static int tsc_state(nng_socket s, uint64_t id)
{
  Wave__V1__Response *r = td_job(s, id, 0, 0);
  ck_assert_msg(r->body_case == WAVE__V1__RESPONSE__BODY_JOB, "poll: %s",
                r->error ? r->error->message : "?");
  int st = r->job->state;
  wave__v1__response__free_unpacked(r, NULL);
  return st;
}

/* Until the job has hashed something (a RUNNING job). */
static void tsc_wait_started(nng_socket s, uint64_t id)
{
  for (int i = 0; i < 100000; i++) {
    Wave__V1__Response *r = td_job(s, id, 0, 0);
    ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
    uint64_t done = r->job->done;
    wave__v1__response__free_unpacked(r, NULL);
    if (done > 0)
      return;
    usleep(1000);
  }
  ck_abort_msg("job %" PRIu64 " never started", id);
}

static void tsc_cancel(nng_socket s, uint64_t id)
{
  Wave__V1__Response *r = td_job(s, id, 0, 1);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
  wave__v1__response__free_unpacked(r, NULL);
  ck_assert_int_eq(tsc_wait_end(s, id), WAVE__V1__JOB_STATE__CANCELLED);
}

static Wave__V1__Response *tsc_jobs(nng_socket s)
{
  Wave__V1__JobsRequest jr = WAVE__V1__JOBS_REQUEST__INIT;
  Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
  rq.version = 2;
  rq.id = 9;
  rq.body_case = WAVE__V1__REQUEST__BODY_JOBS;
  rq.jobs = &jr;
  Wave__V1__Response *r = td_call(s, &rq);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOBS);
  return r;
}

/* ---- children ------------------------------------------------------------ */

typedef struct tsc_child {
  pid_t pid;
  int to, from;  /* pipes: parent -> child, child -> parent */
} tsc_child;

static void tsc_fork(tsc_child *k, int (*fn)(const td_daemon *d, int in, int out),
                    const td_daemon *d)
{
  int a[2], b[2];
  ck_assert_int_eq(pipe(a), 0);
  ck_assert_int_eq(pipe(b), 0);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    close(a[1]);
    close(b[0]);
    _exit(fn(d, a[0], b[1]));
  }
  close(a[0]);
  close(b[1]);
  k->pid = pid;
  k->to = a[1];
  k->from = b[0];
}

static int tsc_put(int fd, uint64_t v)
{
  return write(fd, &v, sizeof v) == (ssize_t)sizeof v ? 0 : -1;
}

static int tsc_get(int fd, uint64_t *v)
{
  return read(fd, v, sizeof *v) == (ssize_t)sizeof *v ? 0 : -1;
}

static int tsc_exit_code(tsc_child *k)
{
  int st = 0;
  ck_assert_int_eq(waitpid(k->pid, &st, 0), k->pid);
  close(k->to);
  close(k->from);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ---- fair scheduling ----------------------------------------------------- */

/* Without round robin the small job waits behind 2^64 nonces forever: its
 * wait runs out of polls. */
START_TEST(test_huge_job_shares_device)
{
  td_daemon d;
  tsc_up(&d, NULL);
  nng_socket a = td_dial(d.ipc), b = td_dial(d.tcp);
  uint64_t huge = tsc_job(a, TS_HUGE, "cpu0", 0, 0);
  tsc_wait_started(a, huge);
  for (int i = 0; i < 3; i++) {  /* another client, the same device */
    uint64_t small = tsc_job(b, 1u << 16, "cpu0", 0, 0);
    ck_assert_int_eq(tsc_wait_end(b, small), WAVE__V1__JOB_STATE__DONE);
  }
  /* two small jobs of one client next to the huge one: both finish */
  uint64_t s1 = tsc_job(b, 1u << 16, "cpu0", 0, 0);
  uint64_t s2 = tsc_job(b, 1u << 16, "cpu0", 0, 0);
  ck_assert_int_eq(tsc_wait_end(b, s1), WAVE__V1__JOB_STATE__DONE);
  ck_assert_int_eq(tsc_wait_end(b, s2), WAVE__V1__JOB_STATE__DONE);
  ck_assert(tsc_live(tsc_state(a, huge)));
  td_good(a);  /* reductions still pass on that device's neighbour */
  tsc_cancel(a, huge);
  nng_close(a);
  nng_close(b);
  tsc_down(&d);
}
END_TEST

/* ---- quotas -------------------------------------------------------------- */

START_TEST(test_client_quota)
{
  td_daemon d;
  tsc_up(&d, "  client_jobs: 2\n  jobs_in_flight: 8\n");
  nng_socket greedy = td_dial(d.ipc), other = td_dial(d.tcp);
  uint64_t g1 = tsc_job(greedy, TS_HUGE, "cpu0", 0, 0);
  uint64_t g2 = tsc_job(greedy, TS_HUGE, "cpu1", 0, 0);
  Wave__V1__Response *r = tsc_submit(greedy, 100, "cpu0", 0, 0);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_ERROR);
  ck_assert_int_eq(r->error->code, WAVE_EBUSY);
  ck_assert_msg(strstr(r->error->message, "client_jobs") != NULL, "%s",
                r->error->message);
  wave__v1__response__free_unpacked(r, NULL);
  /* another client is not locked out, and its small job runs */
  uint64_t o1 = tsc_job(other, 100, "cpu0", 0, 0);
  ck_assert_int_eq(tsc_wait_end(other, o1), WAVE__V1__JOB_STATE__DONE);
  /* an ended job frees its place in the quota */
  tsc_cancel(greedy, g1);
  uint64_t g3 = tsc_job(greedy, 100, "cpu0", 0, 0);
  ck_assert_int_eq(tsc_wait_end(greedy, g3), WAVE__V1__JOB_STATE__DONE);
  tsc_cancel(greedy, g2);
  nng_close(greedy);
  nng_close(other);
  tsc_down(&d);
}
END_TEST

/* ---- jobs tied to their connection -------------------------------------- */

/* Child: an attached and a detached huge job; their ids to the parent,
 * then wait to be killed. */
static int tsc_submitter(const td_daemon *d, int in, int out)
{
  (void)in;
  nng_socket s = td_dial(d->ipc);
  uint64_t att = tsc_job(s, TS_HUGE, "cpu0", 0, 0);
  uint64_t det = tsc_job(s, TS_HUGE, "cpu1", 1, 0);
  if (tsc_put(out, att) || tsc_put(out, det))
    return 2;
  for (;;)
    pause();
}

START_TEST(test_killed_client_jobs_cancelled)
{
  td_daemon d;
  tsc_up(&d, NULL);
  tsc_child k;
  tsc_fork(&k, tsc_submitter, &d);
  uint64_t att = 0, det = 0;
  ck_assert_int_eq(tsc_get(k.from, &att), 0);
  ck_assert_int_eq(tsc_get(k.from, &det), 0);
  kill(k.pid, SIGKILL);
  ck_assert_int_eq(tsc_exit_code(&k), 128 + SIGKILL);
  nng_socket s = td_dial(d.ipc);  /* root: sees every job */
  ck_assert_int_eq(tsc_wait_end(s, att), WAVE__V1__JOB_STATE__CANCELLED);
  /* the same round cancelled the attached one: the detached runs on */
  ck_assert(tsc_live(tsc_state(s, det)));
  tsc_wait_started(s, det);
  ck_assert(tsc_live(tsc_state(s, det)));
  tsc_cancel(s, det);
  nng_close(s);
  tsc_down(&d);
}
END_TEST

/* Poll as the job's owner until it ends, at most TS_POLLS times: with the
 * bearer token (NULL: none) and the job key (len 0: none) the request
 * carries.  Its final state. */
static int tsc_wait_end_as(nng_socket s, uint64_t id, const char *token,
                          const ProtobufCBinaryData *key)
{
  for (int i = 0; i < TS_POLLS; i++) {
    Wave__V1__JobRequest jr = WAVE__V1__JOB_REQUEST__INIT;
    Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
    rq.version = 2;
    rq.id = 78;
    rq.token = (char *)token;
    jr.job_id = id;
    jr.wait_ms = TS_POLL_MS;
    if (key != NULL)
      jr.key = *key;
    rq.body_case = WAVE__V1__REQUEST__BODY_JOB;
    rq.job = &jr;
    Wave__V1__Response *r = td_call(s, &rq);
    ck_assert_msg(r->body_case == WAVE__V1__RESPONSE__BODY_JOB, "poll: %s",
                  r->error ? r->error->message : "?");
    int st = r->job->state;
    wave__v1__response__free_unpacked(r, NULL);
    if (!tsc_live(st))
      return st;
  }
  ck_abort_msg("job %" PRIu64 " did not end in %d polls", id, TS_POLLS);
  return 0;
}

/* A client that closes its own connection: same thing, no kill. */
START_TEST(test_closed_connection_jobs_cancelled)
{
  td_daemon d;
  tsc_up(&d, NULL);
  nng_socket a = td_dial(d.tcp);
  Wave__V1__Response *r = tsc_submit(a, TS_HUGE, "cpu0", 0, 0);
  ck_assert_msg(r->body_case == WAVE__V1__RESPONSE__BODY_JOB, "submit: %s",
                r->error ? r->error->message : "?");
  uint64_t att = r->job->job_id;
  /* over tcp without a token a job belongs to its connection, and its key
   * (docs/protocol.md "Job ownership") reaches it from another one: no
   * root needed to watch it end */
  uint8_t kb[32];
  ck_assert_uint_gt(r->job->key.len, 0);
  ck_assert_uint_le(r->job->key.len, sizeof kb);
  ProtobufCBinaryData key = {r->job->key.len, kb};
  memcpy(kb, r->job->key.data, key.len);
  wave__v1__response__free_unpacked(r, NULL);
  nng_close(a);
  nng_socket s = td_dial(d.tcp);
  ck_assert_int_eq(tsc_wait_end_as(s, att, NULL, &key),
                   WAVE__V1__JOB_STATE__CANCELLED);
  nng_close(s);
  tsc_down(&d);
}
END_TEST

/* ---- ownership ----------------------------------------------------------- */

/* Child: become nobody, then for the job id the parent sends and for an
 * unknown id compare the answers of poll, wait and cancel, and count
 * what JobsRequest lists.  Exit 0 when nobody saw anything. */
static int tsc_intruder(const td_daemon *d, int in, int out)
{
  (void)out;
  uint64_t id = 0;
  if (tsc_get(in, &id))
    return 2;
  struct passwd *pw = getpwnam("nobody");
  uid_t uid = pw ? pw->pw_uid : 65534;
  gid_t gid = pw ? pw->pw_gid : 65534;
  if (setgid(gid) != 0 || setuid(uid) != 0)
    return 3;
  nng_socket s = td_dial(d->ipc);
  uint64_t unknown = id ^ 0x5a5a5a5a5a5a5a5aull;
  for (int kind = 0; kind < 3; kind++) {
    char msg[2][300];
    for (int t = 0; t < 2; t++) {
      uint64_t q = t == 0 ? id : unknown;
      Wave__V1__Response *r = td_job(s, q, kind == 1 ? 200 : 0, kind == 2);
      if (r->body_case != WAVE__V1__RESPONSE__BODY_ERROR ||
          r->error->code != WAVE_ENOJOB)
        return 10 + kind;
      /* the same text but for the id */
      char num[32];
      snprintf(num, sizeof num, "%" PRIu64, q);
      const char *at = strstr(r->error->message, num);
      if (at == NULL)
        return 20 + kind;
      snprintf(msg[t], sizeof msg[t], "%.*s#%s",
               (int)(at - r->error->message), r->error->message,
               at + strlen(num));
      wave__v1__response__free_unpacked(r, NULL);
    }
    if (strcmp(msg[0], msg[1]) != 0)
      return 30 + kind;
  }
  Wave__V1__Response *r = tsc_jobs(s);
  size_t n = r->jobs->n_jobs;
  wave__v1__response__free_unpacked(r, NULL);
  nng_close(s);
  return n == 0 ? 0 : 40;
}

START_TEST(test_other_uid_cannot_touch_job)
{
  if (geteuid() != 0)
    WVS_SKIP("test_other_uid_cannot_touch_job: needs root (setuid)");
  td_daemon d;
  td_prepare(&d, NULL);
  /* let nobody reach the socket: the folder and the socket's mode */
  char *text = NULL;
  size_t len = 0;
  FILE *f = fopen(d.cfg, "r");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_gt(getdelim(&text, &len, '\0', f), 0);
  fclose(f);
  char *m = strstr(text, "ipc_mode: 0600");
  ck_assert_ptr_nonnull(m);
  memcpy(m, "ipc_mode: 0666", 14);
  td_write(d.cfg, text);
  free(text);
  ck_assert_int_eq(chmod(d.dir, 0755), 0);
  tsc_child k;
  tsc_fork(&k, tsc_intruder, &d);
  if (td_start(&d) != 0)
    ck_abort_msg("wavedd did not start:\n%s", td_stderr(&d));
  nng_socket s = td_dial(d.ipc);
  uint64_t id = tsc_job(s, TS_HUGE, "cpu0", 0, 0);
  ck_assert_int_eq(tsc_put(k.to, id), 0);
  int code = tsc_exit_code(&k);
  ck_assert_msg(code == 0, "the other uid's check failed with %d", code);
  ck_assert(tsc_live(tsc_state(s, id)));  /* its cancel did nothing */
  Wave__V1__Response *r = tsc_jobs(s);
  ck_assert_uint_eq(r->jobs->n_jobs, 1);
  wave__v1__response__free_unpacked(r, NULL);
  tsc_cancel(s, id);
  nng_close(s);
  tsc_down(&d);
}
END_TEST

/* Ids: 64 random bits, so consecutive ones are not neighbours. */
START_TEST(test_ids_unguessable)
{
  td_daemon d;
  tsc_up(&d, NULL);
  nng_socket s = td_dial(d.ipc);
  uint64_t prev = 0, high = 0;
  for (int i = 0; i < 8; i++) {
    uint64_t id = tsc_job(s, 16, "cpu0", 0, 0);
    ck_assert_uint_ne(id, 0);
    if (prev != 0) {
      uint64_t gap = id > prev ? id - prev : prev - id;
      ck_assert_uint_gt(gap, 1u << 20);
    }
    high |= id >> 52;
    prev = id;
    tsc_wait_end(s, id);
  }
  ck_assert_uint_ne(high, 0);  /* the old ids stayed below 2^52 */
  nng_close(s);
  tsc_down(&d);
}
END_TEST

/* ---- tokens (auth.c names the principal) -------------------------------- */

/* One request with a bearer token; the response (caller frees). */
static Wave__V1__Response *tsc_tok_call(nng_socket s, const char *token,
                                       Wave__V1__Request *rq)
{
  rq->version = 2;
  rq->id = 31;
  rq->token = (char *)token;
  return td_call(s, rq);
}

static Wave__V1__Response *tsc_tok_job(nng_socket s, const char *token,
                                      uint64_t id, int cancel)
{
  Wave__V1__JobRequest jr = WAVE__V1__JOB_REQUEST__INIT;
  Wave__V1__CancelRequest cr = WAVE__V1__CANCEL_REQUEST__INIT;
  Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
  if (cancel) {
    cr.job_id = id;
    rq.body_case = WAVE__V1__REQUEST__BODY_CANCEL;
    rq.cancel = &cr;
  } else {
    jr.job_id = id;
    rq.body_case = WAVE__V1__REQUEST__BODY_JOB;
    rq.job = &jr;
  }
  return tsc_tok_call(s, token, &rq);
}

START_TEST(test_token_owns_job)
{
  td_daemon d;
  td_prepare(&d, NULL);
  const char *tok[2] = {"alice-0123456789abcdef", "bob-0123456789abcdef00"};
  char path[300], *text = NULL;
  for (int i = 0; i < 2; i++) {
    snprintf(path, sizeof path, "%s/t%d.token", d.dir, i);
    td_write(path, tok[i]);
    ck_assert_int_eq(chmod(path, 0600), 0);
  }
  size_t len = 0;
  FILE *f = fopen(d.cfg, "r");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_gt(getdelim(&text, &len, '\0', f), 0);
  fclose(f);
  char *a = strstr(text, "auth: none\n");
  ck_assert_ptr_nonnull(a);
  *a = '\0';
  char cfg[4096];
  snprintf(cfg, sizeof cfg, "%sauth:\n  tokens:\n"
           "    - {name: alice, file: t0.token}\n"
           "    - {name: bob, file: t1.token}\n", text);
  free(text);
  td_write(d.cfg, cfg);
  if (td_start(&d) != 0)
    ck_abort_msg("wavedd did not start:\n%s", td_stderr(&d));
  nng_socket a1 = td_dial(d.tcp), a2 = td_dial(d.tcp), b = td_dial(d.tcp);
  Wave__V1__HashRequest hq = WAVE__V1__HASH_REQUEST__INIT;
  hq.pack = "small";
  hq.count = TS_HUGE;
  hq.device = "cpu0";
  hq.detach = 1;
  Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
  rq.body_case = WAVE__V1__REQUEST__BODY_HASH;
  rq.hash = &hq;
  Wave__V1__Response *r = tsc_tok_call(a1, tok[0], &rq);
  ck_assert_msg(r->body_case == WAVE__V1__RESPONSE__BODY_JOB, "submit: %s",
                r->error ? r->error->message : "?");
  uint64_t id = r->job->job_id;
  wave__v1__response__free_unpacked(r, NULL);
  nng_close(a1);  /* detached: it runs on */
  /* another connection with alice's token sees it; bob's does not */
  r = tsc_tok_job(b, tok[1], id, 1);
  td_expect_error(r, WAVE_ENOJOB, 31);
  r = tsc_tok_job(a2, tok[0], id, 0);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
  ck_assert(tsc_live(r->job->state));
  wave__v1__response__free_unpacked(r, NULL);
  r = tsc_tok_job(a2, tok[0], id, 1);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
  wave__v1__response__free_unpacked(r, NULL);
  /* alice's cancel above ends it; alice sees the end (no root needed) */
  ck_assert_int_eq(tsc_wait_end_as(a2, id, tok[0], NULL),
                   WAVE__V1__JOB_STATE__CANCELLED);
  nng_close(a2);
  nng_close(b);
  tsc_down(&d);
}
END_TEST

/* ---- results' memory ----------------------------------------------------- */

/* Until every job JobsRequest lists has ended (no result fetched). */
static void tsc_wait_all_ended(nng_socket s, size_t n_expect)
{
  for (int i = 0; i < 100000; i++) {
    Wave__V1__Response *r = tsc_jobs(s);
    size_t live = 0;
    for (size_t k = 0; k < r->jobs->n_jobs; k++)
      live += tsc_live(r->jobs->jobs[k]->state);
    size_t n = r->jobs->n_jobs;
    wave__v1__response__free_unpacked(r, NULL);
    if (live == 0 && n == n_expect)
      return;
    usleep(2000);
  }
  ck_abort_msg("jobs never ended");
}

START_TEST(test_result_bytes_bounded)
{
  td_daemon d;
  tsc_up(&d, "  keep_result_bytes: 1048576\n  max_outputs: 65536\n");
  nng_socket s = td_dial(d.ipc);
  enum { N = 4, C = 65536 };  /* 512 KiB of outputs each */
  uint64_t id[N];
  for (int i = 0; i < N; i++)
    id[i] = tsc_job(s, C, i % 2 ? "cpu1" : "cpu0", 0, 1);
  tsc_wait_all_ended(s, N);
  /* 2 MiB held; the next submit makes room: the oldest go first */
  uint64_t last = tsc_job(s, 16, "cpu0", 0, 0);
  tsc_wait_end(s, last);
  Wave__V1__Response *r = td_job(s, id[0], 0, 0);
  td_expect_error(r, WAVE_ENOJOB, 77);
  r = td_job(s, id[N - 1], 0, 0);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
  ck_assert_int_eq(r->job->state, WAVE__V1__JOB_STATE__DONE);
  ck_assert_uint_eq(r->job->result->n_outputs, C);
  ck_assert(!r->job->outputs_delivered);
  uint64_t o5 = r->job->result->outputs[5];
  wave__v1__response__free_unpacked(r, NULL);
  /* delivered: dropped, and the next answer says so */
  r = td_job(s, id[N - 1], 0, 0);
  ck_assert_int_eq(r->job->state, WAVE__V1__JOB_STATE__DONE);
  ck_assert_uint_eq(r->job->result->n_outputs, 0);
  ck_assert(r->job->outputs_delivered);
  wave__v1__response__free_unpacked(r, NULL);
  /* the same outputs as a fresh job's (bit for bit) */
  uint64_t again = tsc_job(s, C, "cpu0", 0, 1);
  r = td_wait_job(s, again);  /* the answer that ends the wait has them */
  ck_assert_int_eq(r->job->state, WAVE__V1__JOB_STATE__DONE);
  ck_assert_uint_eq(r->job->result->n_outputs, C);
  ck_assert_uint_eq(r->job->result->outputs[5], o5);
  wave__v1__response__free_unpacked(r, NULL);
  nng_close(s);
  tsc_down(&d);
}
END_TEST

static Suite *sched_suite(void)
{
  Suite *s = suite_create("sched");
  TCase *t = tcase_create("sched");
  tcase_set_timeout(t, 600);
  tcase_add_test(t, test_huge_job_shares_device);
  tcase_add_test(t, test_client_quota);
  tcase_add_test(t, test_killed_client_jobs_cancelled);
  tcase_add_test(t, test_closed_connection_jobs_cancelled);
  tcase_add_test(t, test_ids_unguessable);
  tcase_add_test(t, test_result_bytes_bounded);
  tcase_add_test(t, test_token_owns_job);
  suite_add_tcase(s, t);
  /* entry test_sched_other_uid: root setuids to nobody */
  TCase *uid = wvs_tcase("other_uid", 600);
  tcase_add_test(uid, test_other_uid_cannot_touch_job);
  suite_add_tcase(s, uid);
  return s;
}

int main(void)
{
  signal(SIGPIPE, SIG_IGN);
  return wvs_run(sched_suite(), CK_ENV);
}
