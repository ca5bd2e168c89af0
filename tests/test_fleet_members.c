/* test_fleet_members.c - the fleet coordinator against members that lie,
 * stall, refuse the token or hang up (issue 22, finding 8).
 *
 * Each member is a real peer: an nng REP socket on tcp in this process,
 * speaking the wave protocol through protobuf-c, and hashing with the
 * real CPU reference (workers/hash/, pack "closed" of config/packs).  An
 * honest member answers each piece with the reference's fold of it; the
 * others answer the same but for one lie, or never progress, or answer
 * AUTH, or close the connection when given a piece.  The coordinator
 * re-hashes with wavectl's own function (wv_fleet_rehash, the pack loaded
 * by name from config/packs).  Every job's merged result must equal the
 * reference's fold of the whole job, bit for bit, and the bad member must
 * be named with its reason.  At 0c63a79's behaviour a lie changed the
 * result, a stalled member or a hang-up (reply timeout set beyond the
 * test's limit) never let the job end, and AUTH failed it.
 * Runs without fork (CK_NOFORK): nng is not fork-safe.
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>

#include "client/ctl.h"
#include "proto/wave.pb-c.h"
#include "wave/fleet.h"
#include "workers/hash/hash.h"
#include "workers/hash/pack.h"
#include "workers/hash/ref.h"

enum {
  TM_HONEST,
  TM_LIE_WINNER,   /* a made-up winner (output 0), best and count to match */
  TM_LIE_RANGE,    /* best: a nonce outside the piece */
  TM_LIE_FP,       /* made-up segment fingerprints */
  TM_LIE_LATE,     /* honest first piece, then a made-up winner */
  TM_STALL,        /* RUNNING forever, done never moves */
  TM_AUTH,         /* every request answered AUTH */
  TM_CLOSE,        /* takes a piece, then closes the connection */
};

#define TM_MAX_JOBS 256

typedef struct tfm_job {
  uint64_t nonce, count, target;
  uint32_t max_winners;
  unsigned s;
} tfm_job;

typedef struct tfm_member {
  char url[128];
  int mode;
  nng_socket sock;
  int lfd;                /* TM_CLOSE: a plain TCP listener */
  pthread_t th;
  atomic_int stop;
  tfm_job jobs[TM_MAX_JOBS];
  size_t n_jobs;
  unsigned answered;      /* DONE replies sent */
} tfm_member;

static const wv_pack *tfm_pack;
/* Honest members hold their first piece until a bad member has been
 * asked something, so that the bad one surely gets a piece (else two fast
 * honest members could finish the job before its threads start). */
static atomic_int tfm_bad_seen;

/* The reference's answer for [nonce, nonce + count): outputs folded. */
typedef struct tfm_fold {
  wv_hash_batch b;
  uint64_t nseg;
} tfm_fold;

static void tfm_fold_run(tfm_fold *f, uint64_t nonce, uint64_t count,
                        unsigned s, uint64_t target, uint32_t max_winners)
{
  memset(f, 0, sizeof *f);
  uint64_t *out = malloc(count * sizeof *out);
  ck_assert_ptr_nonnull(out);
  wv_hash_mem m = {.pack = tfm_pack};
  wv_ref_range(&m, nonce, count, out);
  f->nseg = wv_seg_count(nonce, count, s);
  f->b.nonce = nonce;
  f->b.count = count;
  f->b.seg_log2 = s;
  f->b.target = target;
  f->b.max_winners = max_winners;
  f->b.seg_fp = calloc(f->nseg, sizeof *f->b.seg_fp);
  f->b.winners = calloc(max_winners + 1, sizeof *f->b.winners);
  ck_assert_ptr_nonnull(f->b.seg_fp);
  ck_assert_ptr_nonnull(f->b.winners);
  wv_hash_fold(&f->b, out);
  free(out);
}

static void tfm_fold_free(tfm_fold *f)
{
  free(f->b.seg_fp);
  free(f->b.winners);
}

static void tfm_send(tfm_member *m, Wave__V1__Response *r)
{
  size_t len = wave__v1__response__get_packed_size(r);
  nng_msg *msg;
  ck_assert_int_eq(nng_msg_alloc(&msg, len), 0);
  wave__v1__response__pack(r, nng_msg_body(msg));
  if (nng_sendmsg(m->sock, msg, 0) != 0)
    nng_msg_free(msg);
}

static void tfm_error(tfm_member *m, uint64_t id, int code, const char *text)
{
  Wave__V1__Response r = WAVE__V1__RESPONSE__INIT;
  Wave__V1__Error e = WAVE__V1__ERROR__INIT;
  e.code = (uint32_t)code;
  e.message = (char *)text;
  r.version = 2;
  r.id = id;
  r.body_case = WAVE__V1__RESPONSE__BODY_ERROR;
  r.error = &e;
  tfm_send(m, &r);
}

static void tfm_jobinfo(tfm_member *m, uint64_t id, uint64_t job, int state,
                       uint64_t done, Wave__V1__HashResult *res)
{
  Wave__V1__Response r = WAVE__V1__RESPONSE__INIT;
  Wave__V1__JobInfo ji = WAVE__V1__JOB_INFO__INIT;
  ji.job_id = job;
  ji.state = state;
  ji.done = done;
  ji.instance = 7;
  ji.result = res;
  r.version = 2;
  r.id = id;
  r.body_case = WAVE__V1__RESPONSE__BODY_JOB;
  r.job = &ji;
  tfm_send(m, &r);
}

/* Piece job j answered DONE, honestly or with this member's lie. */
static void tfm_done(tfm_member *m, uint64_t id, uint64_t job)
{
  const tfm_job *j = &m->jobs[job - 1];
  tfm_fold f;
  tfm_fold_run(&f, j->nonce, j->count, j->s, j->target, j->max_winners);
  int lie = m->mode;
  if (lie == TM_LIE_LATE)
    lie = m->answered == 0 ? TM_HONEST : TM_LIE_WINNER;
  m->answered++;
  if (lie == TM_LIE_WINNER) {  /* consistent on its face: only a hash tells */
    uint64_t n = j->nonce + j->count / 2;
    size_t k = 0;
    while (k < f.b.n_winners && f.b.winners[k].nonce < n)
      k++;
    if (k == f.b.n_winners || f.b.winners[k].nonce != n) {
      memmove(&f.b.winners[k + 1], &f.b.winners[k],
              (f.b.n_winners - k) * sizeof *f.b.winners);
      f.b.winners[k] = (wv_hash_winner){n, 0};
      f.b.n_winners++;
      f.b.winner_count++;
      if (f.b.n_winners > j->max_winners)
        f.b.n_winners = j->max_winners;
    }
    f.b.best_nonce = n;
    f.b.best_output = 0;
  } else if (lie == TM_LIE_RANGE) {
    f.b.best_nonce = j->nonce > 0 ? j->nonce - 1 : j->nonce + j->count;
    f.b.best_output = 0;  /* so that it would win the merge */
  } else if (lie == TM_LIE_FP) {
    for (uint64_t i = 0; i < f.nseg; i++)
      f.b.seg_fp[i] = wv_mix64(f.b.seg_fp[i] ^ 0x5eed);
  }
  Wave__V1__HashResult hr = WAVE__V1__HASH_RESULT__INIT;
  Wave__V1__Winner *wv = calloc(f.b.n_winners + 1, sizeof *wv);
  Wave__V1__Winner **wp = calloc(f.b.n_winners + 1, sizeof *wp);
  ck_assert_ptr_nonnull(wv);
  ck_assert_ptr_nonnull(wp);
  for (size_t i = 0; i < f.b.n_winners; i++) {
    wave__v1__winner__init(&wv[i]);
    wv[i].nonce = f.b.winners[i].nonce;
    wv[i].output = f.b.winners[i].output;
    wp[i] = &wv[i];
  }
  hr.n_winners = f.b.n_winners;
  hr.winners = wp;
  hr.winner_count = f.b.winner_count;
  hr.best_nonce = f.b.best_nonce;
  hr.best_output = f.b.best_output;
  hr.hashes = j->count;
  hr.segment_log2 = j->s;
  hr.segment_count = f.nseg;
  hr.n_segments = f.nseg;
  hr.segments = f.b.seg_fp;
  hr.job_fingerprint = wv_fnv1a64_u64(WV_FNV_OFFSET, f.b.seg_fp, f.nseg);
  tfm_jobinfo(m, id, job, WAVE__V1__JOB_STATE__DONE, j->count, &hr);
  free(wv);
  free(wp);
  tfm_fold_free(&f);
}

static void *tfm_serve(void *arg)
{
  tfm_member *m = arg;
  while (!atomic_load(&m->stop)) {
    nng_msg *msg;
    if (nng_recvmsg(m->sock, &msg, 0) != 0)
      continue;  /* the 100 ms receive timeout: look at stop */
    Wave__V1__Request *q =
        wave__v1__request__unpack(NULL, nng_msg_len(msg), nng_msg_body(msg));
    nng_msg_free(msg);
    if (q == NULL)
      continue;
    uint64_t id = q->id;
    if (m->mode != TM_HONEST)
      atomic_store(&tfm_bad_seen, 1);
    while (m->mode == TM_HONEST && !atomic_load(&tfm_bad_seen) &&
           !atomic_load(&m->stop))
      usleep(1000);
    if (m->mode == TM_AUTH) {
      tfm_error(m, id, WAVE_EAUTH, "wrong token");
    } else if (q->body_case == WAVE__V1__REQUEST__BODY_HASH) {
      ck_assert_uint_lt(m->n_jobs, TM_MAX_JOBS);
      tfm_job *j = &m->jobs[m->n_jobs++];
      *j = (tfm_job){q->hash->nonce, q->hash->count, q->hash->target,
                    q->hash->max_winners, q->hash->segment_log2};
      tfm_jobinfo(m, id, m->n_jobs, WAVE__V1__JOB_STATE__QUEUED, 0, NULL);
    } else if (q->body_case == WAVE__V1__REQUEST__BODY_JOB &&
               q->job->job_id >= 1 && q->job->job_id <= m->n_jobs) {
      if (m->mode == TM_STALL)
        tfm_jobinfo(m, id, q->job->job_id, WAVE__V1__JOB_STATE__RUNNING, 64,
                   NULL);
      else
        tfm_done(m, id, q->job->job_id);
    } else if (q->body_case == WAVE__V1__REQUEST__BODY_CANCEL) {
      tfm_jobinfo(m, id, q->cancel->job_id, WAVE__V1__JOB_STATE__CANCELLED, 0,
                 NULL);
    } else {
      tfm_error(m, id, WAVE_ENOJOB, "no such job");
    }
    wave__v1__request__free_unpacked(q, NULL);
  }
  nng_close(m->sock);
  return NULL;
}

/* The member that hangs up speaks SP over TCP by hand (the 8-byte SP
 * header, then 64-bit big-endian length-prefixed messages: nng's tcp
 * transport), so that its hang-up is a plain close(2) of the connection:
 * with nng's own nng_pipe_close on a REP socket the peer now and then did
 * not see the close at all.  It reads a request, closes, and does the
 * same to every redial (nng resends the request on each). */
static void *tfm_hangup(void *arg)
{
  tfm_member *m = arg;
  while (!atomic_load(&m->stop)) {
    struct pollfd pfd = {.fd = m->lfd, .events = POLLIN};
    if (poll(&pfd, 1, 100) <= 0)
      continue;
    int fd = accept(m->lfd, NULL, NULL);
    if (fd < 0)
      continue;
    const unsigned char hello[8] = {0, 'S', 'P', 0, 0x00, 0x31, 0, 0};
    unsigned char peer[8], len[8];
    if (write(fd, hello, 8) == 8 && read(fd, peer, 8) == 8 &&
        read(fd, len, 8) == 8)  /* a request is on its way: hang up */
      atomic_store(&tfm_bad_seen, 1);
    close(fd);
  }
  close(m->lfd);
  return NULL;
}

/* On tcp, at a port the kernel picks (nng 1.5's ipc transport has the
 * listener bug of daemon/net/listen.c, nng#1518). */
static void tfm_start(tfm_member *m, int mode)
{
  memset(m, 0, sizeof *m);
  m->mode = mode;
  atomic_init(&m->stop, 0);
  if (mode == TM_CLOSE) {
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof sa;
    m->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(m->lfd, 0);
    ck_assert_int_eq(bind(m->lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    ck_assert_int_eq(listen(m->lfd, 16), 0);
    ck_assert_int_eq(getsockname(m->lfd, (struct sockaddr *)&sa, &sl), 0);
    snprintf(m->url, sizeof m->url, "tcp://127.0.0.1:%d",
             (int)ntohs(sa.sin_port));
    ck_assert_int_eq(pthread_create(&m->th, NULL, tfm_hangup, m), 0);
    return;
  }
  ck_assert_int_eq(nng_rep0_open(&m->sock), 0);
  nng_socket_set_ms(m->sock, NNG_OPT_RECVTIMEO, 100);
  nng_listener l;
  ck_assert_int_eq(nng_listen(m->sock, "tcp://127.0.0.1:0", &l, 0), 0);
  int port = 0;
  ck_assert_int_eq(nng_listener_get_int(l, NNG_OPT_TCP_BOUND_PORT, &port), 0);
  snprintf(m->url, sizeof m->url, "tcp://127.0.0.1:%d", port);
  ck_assert_int_eq(pthread_create(&m->th, NULL, tfm_serve, m), 0);
}

static void tfm_stop(tfm_member *m)
{
  atomic_store(&m->stop, 1);
  pthread_join(m->th, NULL);
}

/* ---- the fleet ---------------------------------------------------------- */

static wv_fleet_pack tfm_fp;
static unsigned tfm_depth;   /* pieces in flight per member, 0: the default */

static const wave_hash_request tfm_req = {
  .pack = "closed", .nonce = 1000003, .count = 24000,
  .target = 0x0100000000000000ull, .max_winners = 40, .segment_log2 = 5,
};

/* Run tfm_req over members with these modes; returns the call's code, the
 * result in *r (free it). */
static int tfm_run(const int *modes, size_t n, int rehash, int stall_ms,
                  int timeout_ms, wave_fleet **fo, tfm_member *mb,
                  wave_fleet_hash_result *r, wave_error *err)
{
  const char *urls[8];
  int bad = 0;
  for (size_t i = 0; i < n; i++)
    bad |= modes[i] != TM_HONEST;
  atomic_store(&tfm_bad_seen, !bad);
  for (size_t i = 0; i < n; i++) {
    tfm_start(&mb[i], modes[i]);
    urls[i] = mb[i].url;
  }
  wave_fleet *f;
  ck_assert_int_eq(wave_fleet_open(&f, urls, n, err), 0);
  wave_fleet_set_timeout(f, timeout_ms);
  if (stall_ms)
    wave_fleet_set_stall(f, stall_ms);
  if (rehash)
    wave_fleet_set_rehash(f, wv_fleet_rehash, &tfm_fp);
  /* small fixed pieces, so every member gets several, of 64 segments, so
   * the coordinator spot-checks one of each */
  wave_fleet_options o = {.piece = 2048, .want_segments = 1,
                          .depth = tfm_depth};
  int rc = wave_fleet_hash(f, &tfm_req, &o, r, NULL, NULL, err);
  *fo = f;
  return rc;
}

/* The fleet's connections close first: nng 1.5's nng_close of a REP
 * socket can hang while a peer still redials it. */
static void tfm_finish(wave_fleet *f, tfm_member *mb, size_t n)
{
  wave_fleet_close(f);
  for (size_t i = 0; i < n; i++)
    tfm_stop(&mb[i]);
}

/* The merged result is the reference's whole job, bit for bit. */
static void tfm_same(const wave_fleet_hash_result *r)
{
  tfm_fold w;
  tfm_fold_run(&w, tfm_req.nonce, tfm_req.count, tfm_req.segment_log2,
              tfm_req.target, tfm_req.max_winners);
  ck_assert_uint_eq(r->segment_count, w.nseg);
  for (uint64_t i = 0; i < w.nseg; i++)
    ck_assert_uint_eq(r->segments[i], w.b.seg_fp[i]);
  ck_assert_uint_eq(r->job_fingerprint,
                    wv_fnv1a64_u64(WV_FNV_OFFSET, w.b.seg_fp, w.nseg));
  ck_assert_uint_gt(w.b.winner_count, 0);  /* the test means something */
  ck_assert_uint_eq(r->winner_count, w.b.winner_count);
  ck_assert_uint_eq(r->n_winners, w.b.n_winners);
  for (size_t i = 0; i < w.b.n_winners; i++) {
    ck_assert_uint_eq(r->winners[i].nonce, w.b.winners[i].nonce);
    ck_assert_uint_eq(r->winners[i].output, w.b.winners[i].output);
  }
  ck_assert_uint_eq(r->best_nonce, w.b.best_nonce);
  ck_assert_uint_eq(r->best_output, w.b.best_output);
  ck_assert_uint_eq(r->hashes, tfm_req.count);
  tfm_fold_free(&w);
}

/* Members 0 and 1 honest, member 2 `mode`: the job completes exactly, and
 * member 2 alone is dropped, with `why`; it keeps no credit. */
static void tfm_one_bad(int mode, int why, int rehash, int stall_ms,
                       int timeout_ms)
{
  int modes[3] = {TM_HONEST, TM_HONEST, mode};
  tfm_member mb[3];
  wave_fleet *f;
  wave_fleet_hash_result r;
  wave_error err = {0};
  int rc = tfm_run(modes, 3, rehash, stall_ms, timeout_ms, &f, mb, &r, &err);
  ck_assert_msg(rc == 0, "%s", err.message);
  tfm_same(&r);
  ck_assert_uint_eq(r.n_failed, 1);
  ck_assert_msg(r.members[2].failed, "member 2 was not dropped");
  ck_assert_msg(wave_fleet_member_why(f, 2) == why, "member 2: %s (%s)",
                wave_fleet_drop_name(wave_fleet_member_why(f, 2)),
                r.members[2].error.message);
  ck_assert_int_eq(wave_fleet_member_why(f, 0), WAVE_FLEET_KEPT);
  ck_assert_uint_eq(r.members[2].pieces, 0);
  ck_assert_uint_eq(r.members[0].work + r.members[1].work, tfm_req.count);
  wave_fleet_hash_result_free(&r);
  tfm_finish(f, mb, sizeof mb / sizeof mb[0]);
}

START_TEST(honest_fleet)
{
  int modes[3] = {TM_HONEST, TM_HONEST, TM_HONEST};
  tfm_member mb[3];
  wave_fleet *f;
  wave_fleet_hash_result r;
  wave_error err = {0};
  ck_assert_msg(tfm_run(modes, 3, 1, 0, 15000, &f, mb, &r, &err) == 0, "%s",
                err.message);
  tfm_same(&r);
  ck_assert_uint_eq(r.n_failed, 0);
  wave_fleet_hash_result_free(&r);
  tfm_finish(f, mb, sizeof mb / sizeof mb[0]);
}
END_TEST

START_TEST(liar_winner)
{
  tfm_one_bad(TM_LIE_WINNER, WAVE_FLEET_LIED, 1, 0, 15000);
}
END_TEST

/* A nonce outside the piece needs no hash to be caught. */
START_TEST(liar_range)
{
  tfm_one_bad(TM_LIE_RANGE, WAVE_FLEET_LIED, 0, 0, 15000);
}
END_TEST

/* Made-up fingerprints: the spot check re-folds one segment. */
START_TEST(liar_fingerprints)
{
  tfm_one_bad(TM_LIE_FP, WAVE_FLEET_LIED, 1, 0, 15000);
}
END_TEST

/* Its honest first answer is not kept once it lied. */
START_TEST(liar_late)
{
  tfm_one_bad(TM_LIE_LATE, WAVE_FLEET_LIED, 1, 0, 15000);
}
END_TEST

START_TEST(stalled)
{
  tfm_one_bad(TM_STALL, WAVE_FLEET_STALLED, 1, 300, 15000);
}
END_TEST

START_TEST(auth)
{
  tfm_one_bad(TM_AUTH, WAVE_FLEET_AUTH, 1, 0, 15000);
}
END_TEST

/* The reply timeout is longer than the test may run: only the connection
 * close can move the piece. */
START_TEST(hangs_up)
{
  /* one piece in flight per member: with two, nng 1.5 now and then loses
   * (leaks) the second request when the peer hangs up while it is sent */
  tfm_depth = 1;
  tfm_one_bad(TM_CLOSE, WAVE_FLEET_CLOSED, 1, 0, 3600 * 1000);
  tfm_depth = 0;
}
END_TEST

START_TEST(all_dropped)
{
  int modes[2] = {TM_LIE_WINNER, TM_AUTH};
  tfm_member mb[2];
  wave_fleet *f;
  wave_fleet_hash_result r;
  wave_error err = {0};
  int rc = tfm_run(modes, 2, 1, 0, 15000, &f, mb, &r, &err);
  ck_assert_int_eq(rc, WAVE_EIO);
  ck_assert_msg(strstr(err.message, mb[0].url) && strstr(err.message, "lied")
                && strstr(err.message, mb[1].url) &&
                strstr(err.message, "auth"), "%s", err.message);
  ck_assert_int_eq(wave_fleet_member_why(f, 0), WAVE_FLEET_LIED);
  ck_assert_int_eq(wave_fleet_member_why(f, 1), WAVE_FLEET_AUTH);
  wave_fleet_hash_result_free(&r);
  tfm_finish(f, mb, sizeof mb / sizeof mb[0]);
}
END_TEST

/* wavectl's pack lookup: a pack that is not there is a clear error. */
START_TEST(pack_missing)
{
  wv_fleet_pack p;
  wave_error err = {0};
  const char *src = getenv("WAVE_SOURCE_DIR");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/config/packs", src ? src : ".");
  ck_assert_int_eq(wv_fleet_pack_open(dir, "no-such-pack", &p, &err),
                   WAVE_EPACK);
  ck_assert_ptr_nonnull(strstr(err.message, "WAVE_PACKS_DIR"));
}
END_TEST

int main(void)
{
  const char *src = getenv("WAVE_SOURCE_DIR");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/config/packs", src ? src : ".");
  wave_error err = {0};
  if (wv_fleet_pack_open(dir, "closed", &tfm_fp, &err) != 0) {
    fprintf(stderr, "test_fleet_members: %s\n", err.message);
    return 1;
  }
  tfm_pack = tfm_fp.pack;
  Suite *s = suite_create("fleet_members");
  TCase *tc = tcase_create("members");
  /* CK_NOFORK has no per-test timeout: a job that never ends (the old
   * behaviour of stalled and hung-up members) meets ctest's TIMEOUT */
  tcase_add_test(tc, honest_fleet);
  tcase_add_test(tc, liar_winner);
  tcase_add_test(tc, liar_range);
  tcase_add_test(tc, liar_fingerprints);
  tcase_add_test(tc, liar_late);
  tcase_add_test(tc, stalled);
  tcase_add_test(tc, auth);
  tcase_add_test(tc, hangs_up);
  tcase_add_test(tc, all_dropped);
  tcase_add_test(tc, pack_missing);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_set_fork_status(sr, CK_NOFORK);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  wv_fleet_pack_close(&tfm_fp);
  return failed ? 1 : 0;
}
