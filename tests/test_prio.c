/* test_prio.c - priorities and deadlines (issue 37 items 1-2) against the
 * real daemon (wavedd-test: the fake backend).
 *
 * levels_caps_perm: fk0 is held inside a pack's preparation (as in
 * test_fairred.c: a hash job on a first-use pack, the file DIR/small), so
 * what is sent queues.  Bob (tcp, token bob) queues three low sums, then a
 * fourth is refused BUSY naming the level (priority.low_max_queued 3), and
 * so is a stream committed at low: the stream carries its open's level.
 * Bob queues a normal sum; alice (token alice, named in
 * priority.high_allow) a high one.  Bob asking for high is refused PERM
 * over every way in: a sum by value, a framed one, one by region (the
 * refusal comes before the region is looked at), a stream's open and a
 * hash job; an unknown level is BADREQUEST.  Over ipc, a uid that the list
 * does not name is refused PERM too (not as root: root may always), and
 * let in once a reload names its group (gid:N).  Let
 * go, the device serves high, normal, then low: the log's order.  Then
 * wavectl --priority gives the same answers by message and by stream
 * (tcp: PERM for bob, the sum for alice) and by file (ipc).
 *
 * deadline_never_runs: fk1 ("fault_after=3") is held inside a reduction
 * (the file DIR/.reduce).  Behind the held sum, one with deadline_ms 1
 * waits past its deadline (the test sleeps after status shows it queued),
 * and a plain one behind it.  Let go: the held and the plain one answer,
 * the one past its deadline answers DEADLINE; one more sum answers (the
 * fake device's third step) and the next fails DEVICE (its fourth): had
 * the late one run, the third would have failed.  Status and /metrics
 * count the one DEADLINE.  A hash job submitted with deadline_ms 1 while
 * its pack's preparation is held on fk0 never starts its first piece: it
 * ends FAILED with DEADLINE.
 */
#include <check.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <nng/nng.h>

#include "daemon_harness.h"
#include "wave/error.h"

#define PQ_ALICE "alice-7f3e9c1b2a5d4e6f8091"
#define PQ_BOB "bob-0a1b2c3d4e5f60718293"

static void pq_nap(long ms)
{
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

/* The config, with high_allow naming token alice and group gid. */
static void pq_config(td_daemon *d, unsigned gid)
{
  char text[3072];
  snprintf(text, sizeof text,
           "listen: [\"%s\", \"%s\"]\nlog_level: info\n"
           "auth:\n  tokens:\n    - {name: alice, file: alice.token}\n"
           "    - {name: bob, file: bob.token}\n"
           "priority: {high_allow: \"token:alice, gid:%u\", "
           "low_max_queued: 3}\n"
           "packs: {dir: %s/config/packs, load: [small], prepare: first-use}\n"
           "devices:\n"
           "  - {name: fk0, backend: fake, threads: 1, "
           "device: \"hold_prepare=%s/hold\"}\n"
           "  - {name: fk1, backend: fake, threads: 1, "
           "device: \"fault_after=3,hold_prepare=%s/hold\"}\n",
           d->ipc, d->tcp, gid, getenv("WAVE_SOURCE_DIR"), d->dir, d->dir);
  td_write(d->cfg, text);
}

static void pq_start(td_daemon *d)
{
  char path[300];
  td_prepare(d, NULL);
  snprintf(path, sizeof path, "%s/hold", d->dir);
  ck_assert_int_eq(mkdir(path, 0700), 0);
  snprintf(path, sizeof path, "%s/alice.token", d->dir);
  td_write(path, PQ_ALICE "\n");
  chmod(path, 0600);
  snprintf(path, sizeof path, "%s/bob.token", d->dir);
  td_write(path, PQ_BOB "\n");
  chmod(path, 0600);
  pq_config(d, (unsigned)getgid() + 12345u);  /* a group not ours */
  d->fake = 1;
  ck_assert_msg(td_start(d) == 0, "did not start:\n%s", td_stderr(d));
}

static void pq_hold(td_daemon *d, const char *name, int on)
{
  char path[300];
  snprintf(path, sizeof path, "%s/hold/%s", d->dir, name);
  if (on)
    td_write(path, "held by test_prio\n");
  else
    ck_assert_int_eq(unlink(path), 0);
}

/* Device i's status field by name. */
static Wave__V1__DeviceStatus *pq_dev(Wave__V1__Response *r, size_t i)
{
  ck_assert_uint_gt(r->status->n_devices, i);
  return r->status->devices[i];
}

/* Until device i has want items queued (a bound on polls, not a time). */
static void pq_wait_queued(nng_socket s, size_t i, unsigned want)
{
  unsigned n = 0;
  for (int k = 0; k < 6000; k++) {
    Wave__V1__Response *r = td_status(s, 1);
    n = pq_dev(r, i)->queue_depth;
    wave__v1__response__free_unpacked(r, NULL);
    if (n >= want)
      break;
    pq_nap(5);
  }
  ck_assert_uint_eq(n, want);
}

static uint32_t g_vals[64];

/* A one-row u32 sum of id on device dev at level prio (deadline ms). */
static void pq_sum(Wave__V1__Request *rq, Wave__V1__ReduceRequest *rr,
                   ProtobufCBinaryData *in, uint64_t id, const char *token,
                   const char *dev, int prio, unsigned deadline)
{
  wave__v1__request__init(rq);
  wave__v1__reduce_request__init(rr);
  g_vals[id % 64] = (uint32_t)id;
  *in = (ProtobufCBinaryData){4, (uint8_t *)&g_vals[id % 64]};
  rr->dtype = WAVE__V1__DTYPE__U32;
  rr->op = WAVE__V1__OP__SUM;
  rr->n_input = 1;
  rr->input = in;
  rr->device = (char *)dev;
  rr->priority = (Wave__V1__Priority)prio;
  rr->deadline_ms = deadline;
  rq->version = 2;
  rq->id = id;
  rq->token = (char *)(token ? token : "");
  rq->body_case = WAVE__V1__REQUEST__BODY_REDUCE;
  rq->reduce = rr;
}

/* Send rq on a fresh context of sock without waiting for the reply. */
static nng_aio *pq_send(nng_socket sock, nng_ctx *ctx, Wave__V1__Request *rq)
{
  ck_assert_int_eq(nng_ctx_open(ctx, sock), 0);
  size_t n = wave__v1__request__get_packed_size(rq);
  nng_msg *m;
  ck_assert_int_eq(nng_msg_alloc(&m, n), 0);
  wave__v1__request__pack(rq, nng_msg_body(m));
  nng_aio *aio;
  ck_assert_int_eq(nng_aio_alloc(&aio, NULL, NULL), 0);
  nng_aio_set_timeout(aio, 60000);
  nng_aio_set_msg(aio, m);
  nng_ctx_send(*ctx, aio);
  nng_aio_wait(aio);
  ck_assert_int_eq(nng_aio_result(aio), 0);
  nng_ctx_recv(*ctx, aio);
  return aio;
}

/* The reply on aio: the sum id, or (code != 0) that error, naming what. */
static void pq_reply(nng_aio *aio, nng_ctx ctx, uint64_t id, int code,
                     const char *what)
{
  nng_aio_wait(aio);
  ck_assert_int_eq(nng_aio_result(aio), 0);
  nng_msg *m = nng_aio_get_msg(aio);
  Wave__V1__Response *r =
      wave__v1__response__unpack(NULL, nng_msg_len(m), nng_msg_body(m));
  nng_msg_free(m);
  nng_aio_free(aio);
  nng_ctx_close(ctx);
  ck_assert_ptr_nonnull(r);
  ck_assert_uint_eq(r->id, id);
  if (code == 0) {
    ck_assert_msg(r->body_case == WAVE__V1__RESPONSE__BODY_REDUCE,
                  "%" PRIu64 ": %s", id, r->error ? r->error->message : "?");
    ck_assert_uint_eq(r->reduce->bits[0], (uint32_t)id);
  } else {
    ck_assert_msg(r->body_case == WAVE__V1__RESPONSE__BODY_ERROR &&
                      r->error->code == (uint32_t)code,
                  "%" PRIu64 ": want %s, got %s", id, wave_errname(code),
                  r->error ? r->error->message : "a result");
    if (what != NULL)
      ck_assert_msg(strstr(r->error->message, what) != NULL, "%s",
                    r->error->message);
  }
  wave__v1__response__free_unpacked(r, NULL);
}

/* A call answered at once with error code (message containing what). */
static void pq_refused(nng_socket sock, Wave__V1__Request *rq, int code,
                       const char *what)
{
  nng_ctx ctx;
  nng_aio *aio = pq_send(sock, &ctx, rq);
  pq_reply(aio, ctx, rq->id, code, what);
}

/* The ids of the first n reductions in d's log on dev, in order. */
static void pq_log_order(td_daemon *d, const char *dev, const unsigned *want,
                         unsigned n)
{
  const char *log = td_stderr(d), *p = log;
  char pat[64];
  snprintf(pat, sizeof pat, "job reduce %%u on %s: ok", dev);
  unsigned got[16], k = 0;
  while ((p = strstr(p, "job reduce ")) != NULL && k < n) {
    unsigned id;
    if (sscanf(p, pat, &id) == 1)
      got[k++] = id;
    p++;
  }
  ck_assert_msg(k == n, "%u reductions in the log:\n%s", k, log);
  for (unsigned i = 0; i < n; i++)
    ck_assert_msg(got[i] == want[i], "reduction %u was %u, not %u:\n%s", i,
                  got[i], want[i], log);
}

/* Hold fk0 in the preparation of "small" (a detached hash job on it). */
static void pq_hold_prepare(td_daemon *d, nng_socket s)
{
  pq_hold(d, "small", 1);
  Wave__V1__HashRequest hq = WAVE__V1__HASH_REQUEST__INIT;
  hq.pack = "small";
  hq.count = 1000;
  hq.detach = 1;
  hq.device = "fk0";
  Wave__V1__Response *r = td_hash_req(s, 2, &hq);
  ck_assert_msg(r->body_case == WAVE__V1__RESPONSE__BODY_JOB, "submit: %s",
                r->error ? r->error->message : "?");
  uint64_t job = r->job->job_id;
  wave__v1__response__free_unpacked(r, NULL);
  for (int i = 0; i < 6000; i++) {  /* until the preparation has begun */
    r = td_job(s, job, 0, 0);
    int begun = r->job->prepare_steps_total > 0;
    wave__v1__response__free_unpacked(r, NULL);
    if (begun)
      break;
    pq_nap(5);
  }
}

/* Bob asks for high every way in: PERM each time. */
static void pq_perm_everywhere(nng_socket b, nng_socket ipc)
{
  Wave__V1__Request rq;
  Wave__V1__ReduceRequest rr;
  ProtobufCBinaryData in;
  pq_sum(&rq, &rr, &in, 40, PQ_BOB, "fk0", 1, 0);
  pq_refused(b, &rq, WAVE_EPERM, "token:bob");
  /* by region: refused before the (unknown) region is looked at */
  Wave__V1__Extent ex = WAVE__V1__EXTENT__INIT, *exp = &ex;
  ex.region = 999;
  ex.bytes = 4;
  rr.n_input = 0;
  rr.n_input_at = 1;
  rr.input_at = &exp;
  rq.id = 41;
  pq_refused(b, &rq, WAVE_EPERM, "priority high");
  /* a stream's open */
  Wave__V1__StreamOpenRequest so = WAVE__V1__STREAM_OPEN_REQUEST__INIT;
  so.dtype = WAVE__V1__DTYPE__U32;
  so.op = WAVE__V1__OP__SUM;
  so.input_bytes = 4;
  so.priority = WAVE__V1__PRIORITY__PRIORITY_HIGH;
  rq.id = 42;
  rq.body_case = WAVE__V1__REQUEST__BODY_STREAM_OPEN;
  rq.stream_open = &so;
  pq_refused(b, &rq, WAVE_EPERM, "priority high");
  /* a hash job */
  Wave__V1__HashRequest hq = WAVE__V1__HASH_REQUEST__INIT;
  hq.pack = "small";
  hq.count = 10;
  hq.priority = WAVE__V1__PRIORITY__PRIORITY_HIGH;
  rq.id = 43;
  rq.body_case = WAVE__V1__REQUEST__BODY_HASH;
  rq.hash = &hq;
  pq_refused(b, &rq, WAVE_EPERM, "priority high");
  /* an unknown level */
  pq_sum(&rq, &rr, &in, 44, PQ_BOB, "fk0", 7, 0);
  pq_refused(b, &rq, WAVE_EBADREQUEST, "unknown priority 7");
  /* ipc: a uid the list does not name (root may always) */
  if (geteuid() != 0) {
    pq_sum(&rq, &rr, &in, 45, NULL, "fk0", 1, 0);
    pq_refused(ipc, &rq, WAVE_EPERM, "uid:");
  }
}

/* wavectl ARGS (env before it: "" none) against url: its stdout and
 * stderr (static), its exit status in *status. */
static const char *pq_ctl(const char *env, const char *url, const char *args,
                          int *status)
{
  static char out[1 << 14];
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "%s %s/wavectl --url %s %s 2>&1", env,
           getenv("WAVE_BINARY_DIR"), url, args);
  FILE *p = popen(cmd, "r");
  ck_assert_ptr_nonnull(p);
  size_t n = fread(out, 1, sizeof out - 1, p);
  out[n] = '\0';
  int st = pclose(p);
  *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return out;
}

/* wavectl's --priority: the same answer by message, stream and file. */
static void pq_ctl_ways(td_daemon *d)
{
  char f[300], args[900];
  uint32_t rows[4] = {1, 2, 3, 4};
  snprintf(f, sizeof f, "%s/rows.u32", d->dir);
  FILE *fp = fopen(f, "wb");
  ck_assert_ptr_nonnull(fp);
  ck_assert_uint_eq(fwrite(rows, 4, 4, fp), 4);
  fclose(fp);
  static const char *const ways[] = {"", "WAVE_CLIENT_STREAM=1"};
  int st;
  const char *out;
  for (int w = 0; w < 2; w++) {  /* tcp: the rows by message, by stream */
    snprintf(args, sizeof args, "--token-file %s/bob.token submit reduce "
             "--dtype u32 --op sum --input %s --priority high", d->dir, f);
    out = pq_ctl(ways[w], d->tcp, args, &st);
    ck_assert_msg(st == 1 && strstr(out, "PERM") != NULL, "%d: %s", st, out);
    snprintf(args, sizeof args, "--token-file %s/alice.token submit reduce "
             "--dtype u32 --op sum --input %s --priority high --deadline "
             "60000", d->dir, f);
    out = pq_ctl(ways[w], d->tcp, args, &st);
    ck_assert_msg(st == 0 && strstr(out, "10") != NULL, "%d: %s", st, out);
  }
  /* ipc: the file by descriptor */
  snprintf(args, sizeof args, "submit reduce --dtype u32 --op sum --input %s "
           "--priority low", f);
  out = pq_ctl("", d->ipc, args, &st);
  ck_assert_msg(st == 0 && strstr(out, "10") != NULL, "%d: %s", st, out);
  if (geteuid() != 0) {
    snprintf(args, sizeof args, "submit reduce --dtype u32 --op sum --input "
             "%s --priority high", f);
    out = pq_ctl("", d->ipc, args, &st);
    ck_assert_msg(st == 1 && strstr(out, "PERM") != NULL, "%d: %s", st, out);
    /* high_allow naming our group (gid:N) lets the same uid in, after a
     * reload (the key is live) */
    const char *log = td_stderr(d);
    size_t reloads = 0;
    for (const char *p = log; (p = strstr(p, "reloaded ")) != NULL; p++)
      reloads++;
    pq_config(d, (unsigned)getgid());
    kill(d->pid, SIGHUP);
    for (int i = 0;; i++) {
      size_t now = 0;
      log = td_stderr(d);
      for (const char *p = log; (p = strstr(p, "reloaded ")) != NULL; p++)
        now++;
      if (now > reloads)
        break;
      ck_assert_msg(i < 2400 && strstr(log, "reload failed") == NULL,
                    "the reload did not end well:\n%s", log);
      pq_nap(5);
    }
    out = pq_ctl("", d->ipc, args, &st);
    ck_assert_msg(st == 0 && strstr(out, "10") != NULL, "%d: %s", st, out);
  }
  out = pq_ctl("", d->ipc, "submit reduce --dtype u32 --op sum --input - "
               "--priority urgent", &st);
  ck_assert_msg(st != 0 && strstr(out, "--priority") != NULL, "%s", out);
}

START_TEST(levels_caps_perm)
{
  td_daemon d;
  pq_start(&d);
  nng_socket s = td_dial(d.ipc);
  pq_hold_prepare(&d, s);
  nng_socket a = td_dial(d.tcp), b = td_dial(d.tcp);
  Wave__V1__Request rq;
  Wave__V1__ReduceRequest rr;
  ProtobufCBinaryData in;
  nng_ctx ctx[8];
  nng_aio *aio[8];
  for (unsigned i = 0; i < 3; i++) {  /* bob: low 501..503 */
    pq_sum(&rq, &rr, &in, 501 + i, PQ_BOB, "fk0", 2, 0);
    aio[i] = pq_send(b, &ctx[i], &rq);
    pq_wait_queued(s, 0, i + 1);
  }
  pq_sum(&rq, &rr, &in, 504, PQ_BOB, "fk0", 2, 0);  /* past the low cap */
  pq_refused(b, &rq, WAVE_EBUSY, "3 low-priority jobs queued "
             "(priority.low_max_queued 3)");
  /* a stream committed at low meets the same cap */
  Wave__V1__StreamOpenRequest so = WAVE__V1__STREAM_OPEN_REQUEST__INIT;
  so.dtype = WAVE__V1__DTYPE__U32;
  so.op = WAVE__V1__OP__SUM;
  so.input_bytes = 4;
  so.device = "fk0";
  so.priority = WAVE__V1__PRIORITY__PRIORITY_LOW;
  Wave__V1__Request sq = WAVE__V1__REQUEST__INIT;
  sq.version = 2;
  sq.id = 60;
  sq.token = PQ_BOB;
  sq.body_case = WAVE__V1__REQUEST__BODY_STREAM_OPEN;
  sq.stream_open = &so;
  Wave__V1__Response *r = td_call(b, &sq);
  ck_assert_msg(r->body_case == WAVE__V1__RESPONSE__BODY_STREAM, "%s",
                r->error ? r->error->message : "?");
  uint64_t sid = r->stream->stream_id;
  wave__v1__response__free_unpacked(r, NULL);
  Wave__V1__StreamPutRequest sp = WAVE__V1__STREAM_PUT_REQUEST__INIT;
  uint32_t one = 1;
  sp.stream_id = sid;
  sp.data = (ProtobufCBinaryData){4, (uint8_t *)&one};
  sq.id = 61;
  sq.body_case = WAVE__V1__REQUEST__BODY_STREAM_PUT;
  sq.stream_put = &sp;
  r = td_call(b, &sq);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_STREAM);
  wave__v1__response__free_unpacked(r, NULL);
  Wave__V1__StreamCommitRequest sc = WAVE__V1__STREAM_COMMIT_REQUEST__INIT;
  sc.stream_id = sid;
  sq.id = 62;
  sq.body_case = WAVE__V1__REQUEST__BODY_STREAM_COMMIT;
  sq.stream_commit = &sc;
  pq_refused(b, &sq, WAVE_EBUSY, "priority.low_max_queued 3");

  pq_sum(&rq, &rr, &in, 301, PQ_BOB, "fk0", 0, 0);  /* bob: normal */
  aio[3] = pq_send(b, &ctx[3], &rq);
  pq_wait_queued(s, 0, 4);
  pq_sum(&rq, &rr, &in, 101, PQ_ALICE, "fk0", 1, 0);  /* alice: high */
  aio[4] = pq_send(a, &ctx[4], &rq);
  pq_wait_queued(s, 0, 5);
  r = td_status(s, 3);
  ck_assert_uint_eq(pq_dev(r, 0)->queued_high, 1);
  ck_assert_uint_eq(pq_dev(r, 0)->queued_normal, 1);
  ck_assert_uint_eq(pq_dev(r, 0)->queued_low, 3);
  wave__v1__response__free_unpacked(r, NULL);
  pq_perm_everywhere(b, s);

  pq_hold(&d, "small", 0);
  for (unsigned i = 0; i < 3; i++)
    pq_reply(aio[i], ctx[i], 501 + i, 0, NULL);
  pq_reply(aio[3], ctx[3], 301, 0, NULL);
  pq_reply(aio[4], ctx[4], 101, 0, NULL);
  static const unsigned want[] = {101, 301, 501, 502, 503};
  pq_log_order(&d, "fk0", want, 5);
  pq_ctl_ways(&d);
  nng_close(a);
  nng_close(b);
  nng_close(s);
  td_stop_ok(&d);
}
END_TEST

START_TEST(deadline_never_runs)
{
  td_daemon d;
  pq_start(&d);
  nng_socket s = td_dial(d.ipc);
  Wave__V1__Request rq;
  Wave__V1__ReduceRequest rr;
  ProtobufCBinaryData in;
  nng_ctx ctx[4];
  nng_aio *aio[4];
  pq_hold(&d, ".reduce", 1);
  pq_sum(&rq, &rr, &in, 11, NULL, "fk1", 0, 0);  /* held inside (step 1) */
  aio[0] = pq_send(s, &ctx[0], &rq);
  for (int k = 0; k < 6000 && !strstr(td_stderr(&d), "fk1: reduction held");
       k++)
    pq_nap(5);
  pq_sum(&rq, &rr, &in, 12, NULL, "fk1", 0, 1);  /* 1 ms deadline */
  aio[1] = pq_send(s, &ctx[1], &rq);
  pq_wait_queued(s, 1, 1);
  pq_nap(20);  /* its deadline has passed */
  pq_sum(&rq, &rr, &in, 13, NULL, "fk1", 0, 0);
  aio[2] = pq_send(s, &ctx[2], &rq);
  pq_wait_queued(s, 1, 2);
  pq_hold(&d, ".reduce", 0);
  pq_reply(aio[0], ctx[0], 11, 0, NULL);
  pq_reply(aio[1], ctx[1], 12, WAVE_EDEADLINE, "deadline");
  pq_reply(aio[2], ctx[2], 13, 0, NULL);                  /* step 2 */
  pq_sum(&rq, &rr, &in, 14, NULL, "fk1", 0, 0);
  pq_refused(s, &rq, 0, NULL);                            /* step 3 */
  pq_sum(&rq, &rr, &in, 15, NULL, "fk1", 0, 0);
  pq_refused(s, &rq, WAVE_EDEVFAULT, "injected fault");   /* step 4 */
  Wave__V1__Response *r = td_status(s, 3);
  ck_assert_uint_eq(pq_dev(r, 1)->deadline_missed, 1);
  ck_assert_uint_eq(r->status->jobs_deadline, 1);
  wave__v1__response__free_unpacked(r, NULL);

  /* a hash job whose first piece cannot start in time */
  pq_hold_prepare(&d, s);
  Wave__V1__HashRequest hq = WAVE__V1__HASH_REQUEST__INIT;
  hq.pack = "small";
  hq.count = 100;
  hq.device = "fk0";
  hq.deadline_ms = 1;
  r = td_hash_req(s, 20, &hq);
  ck_assert_msg(r->body_case == WAVE__V1__RESPONSE__BODY_JOB, "%s",
                r->error ? r->error->message : "?");
  uint64_t job = r->job->job_id;
  ck_assert_uint_eq(r->job->deadline_ms, 1);
  wave__v1__response__free_unpacked(r, NULL);
  pq_nap(20);
  pq_hold(&d, "small", 0);
  r = td_job(s, job, 30000, 0);
  ck_assert_int_eq(r->job->state, WAVE__V1__JOB_STATE__FAILED);
  ck_assert_uint_eq(r->job->error->code, WAVE_EDEADLINE);
  ck_assert_uint_eq(r->job->done, 0);
  wave__v1__response__free_unpacked(r, NULL);
  nng_close(s);
  td_stop_ok(&d);
}
END_TEST

int main(void)
{
  signal(SIGPIPE, SIG_IGN);
  Suite *s = suite_create("prio");
  TCase *t = tcase_create("levels");
  tcase_set_timeout(t, 120);
  tcase_add_test(t, levels_caps_perm);
  tcase_add_test(t, deadline_never_runs);
  suite_add_tcase(s, t);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_ENV);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
