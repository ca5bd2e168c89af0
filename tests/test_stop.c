/* test_stop.c - every request gets an answer at SIGTERM (issue 35,
 * finding 4; docs/protocol.md "Stopping"), against the real wavedd.
 *
 * Each of 100 runs starts a daemon (one CPU device, one decode thread),
 * pipelines small reductions on several connections (each REQ context
 * one request in flight: nng's REQ is one request per context), and sends
 * SIGTERM once a varied number of replies came back (0 .. all but one).
 * Every request must then get its result (the right sum) or SHUTDOWN
 * before its connection closes; a request left without a reply shows as
 * its context's receive failing (the daemon gone, nothing to retry on).
 * Each request is many one-row chunks, so that decoding it takes a while
 * and some are still queued for the decode thread when the stop comes.
 * No sleeps: the test waits only on the replies and on the daemon's exit.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nng/nng.h>

#include "daemon_harness.h"
#include "wave/error.h"

#define TS_RUNS 100
#define TS_CONNS 4
#define TS_PER 4                      /* requests pipelined per connection */
#define TS_REQS (TS_CONNS * TS_PER)
#define TS_CHUNKS 16384               /* one-row chunks per request */

static void ts_start(td_daemon *d)
{
  td_prepare(d, NULL);
  char text[1024];
  snprintf(text, sizeof text,
           "listen: [\"%s\"]\n"
           "log_level: warn\n"
           "limits:\n"
           "  decode_threads: 1\n"
           "packs:\n"
           "  load: []\n"
           "devices:\n"
           "  - {name: cpu0, backend: cpu, threads: 1}\n", d->ipc);
  td_write(d->cfg, text);
  if (td_start(d) != 0)
    ck_abort_msg("wavedd did not start:\n%s", td_stderr(d));
}

/* One request's bytes: TS_CHUNKS chunks of one uint32 row each, rows
 * 1..TS_CHUNKS (sum TS_CHUNKS * (TS_CHUNKS + 1) / 2). */
static uint8_t *ts_request(size_t *len)
{
  static uint32_t rows[TS_CHUNKS];
  static ProtobufCBinaryData in[TS_CHUNKS];
  for (size_t i = 0; i < TS_CHUNKS; i++) {
    rows[i] = (uint32_t)i + 1;
    in[i] = (ProtobufCBinaryData){4, (uint8_t *)&rows[i]};
  }
  Wave__V1__ReduceRequest rr = WAVE__V1__REDUCE_REQUEST__INIT;
  rr.dtype = WAVE__V1__DTYPE__U32;
  rr.op = WAVE__V1__OP__SUM;
  rr.n_input = TS_CHUNKS;
  rr.input = in;
  Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
  rq.version = 2;
  rq.id = 35;
  rq.body_case = WAVE__V1__REQUEST__BODY_REDUCE;
  rq.reduce = &rr;
  *len = wave__v1__request__get_packed_size(&rq);
  uint8_t *b = malloc(*len);
  wave__v1__request__pack(&rq, b);
  return b;
}

/* 1: a result with the right sum, 2: SHUTDOWN; 0 (and why): neither. */
static int ts_answer(nng_aio *aio, char *why, size_t n)
{
  int rv = nng_aio_result(aio);
  if (rv != 0) {
    snprintf(why, n, "no reply: %s", nng_strerror(rv));
    return 0;
  }
  nng_msg *m = nng_aio_get_msg(aio);
  Wave__V1__Response *r =
      wave__v1__response__unpack(NULL, nng_msg_len(m), nng_msg_body(m));
  nng_msg_free(m);
  int got = 0;
  if (r == NULL)
    snprintf(why, n, "a reply that does not unpack");
  else if (r->body_case == WAVE__V1__RESPONSE__BODY_REDUCE &&
           r->reduce->n_bits == 1 &&
           r->reduce->bits[0] == (uint64_t)TS_CHUNKS * (TS_CHUNKS + 1) / 2)
    got = 1;
  else if (r->body_case == WAVE__V1__RESPONSE__BODY_ERROR &&
           r->error->code == WAVE_ESHUTDOWN)
    got = 2;
  else
    snprintf(why, n, "reply %d (%s)", (int)r->body_case,
             r->body_case == WAVE__V1__RESPONSE__BODY_ERROR
                 ? r->error->message : "a wrong result");
  if (r != NULL)
    wave__v1__response__free_unpacked(r, NULL);
  return got;
}

START_TEST(sigterm_answers_every_request)
{
  size_t len;
  uint8_t *req = ts_request(&len);
  unsigned results = 0, shutdowns = 0;
  for (int run = 0; run < TS_RUNS; run++) {
    td_daemon d;
    ts_start(&d);
    nng_socket s[TS_CONNS];
    nng_ctx ctx[TS_REQS];
    nng_aio *aio[TS_REQS];
    for (int k = 0; k < TS_CONNS; k++)
      s[k] = td_dial(d.ipc);
    for (int i = 0; i < TS_REQS; i++) {
      ck_assert_int_eq(nng_ctx_open(&ctx[i], s[i % TS_CONNS]), 0);
      ck_assert_int_eq(nng_aio_alloc(&aio[i], NULL, NULL), 0);
      nng_aio_set_timeout(aio[i], 30000);
      nng_msg *m;
      ck_assert_int_eq(nng_msg_alloc(&m, 0), 0);
      ck_assert_int_eq(nng_msg_append(m, req, len), 0);
      nng_aio_set_msg(aio[i], m);
      nng_ctx_send(ctx[i], aio[i]);
    }
    for (int i = 0; i < TS_REQS; i++) {
      nng_aio_wait(aio[i]);
      ck_assert_int_eq(nng_aio_result(aio[i]), 0);
      nng_ctx_recv(ctx[i], aio[i]);
    }
    /* the stop comes after a varied number of replies: 0 .. all but one */
    int stop_after = run % TS_REQS, seen = 0;
    if (stop_after == 0)
      ck_assert_int_eq(kill(d.pid, SIGTERM), 0);
    for (int i = 0; i < TS_REQS; i++) {
      nng_aio_wait(aio[i]);
      char why[300] = "";
      int got = ts_answer(aio[i], why, sizeof why);
      ck_assert_msg(got != 0, "run %d (SIGTERM after %d replies): request "
                    "%d of %d: %s", run, stop_after, i, TS_REQS, why);
      results += got == 1;
      shutdowns += got == 2;
      if (++seen == stop_after)
        ck_assert_int_eq(kill(d.pid, SIGTERM), 0);
    }
    for (int i = 0; i < TS_REQS; i++) {
      nng_aio_free(aio[i]);
      nng_ctx_close(ctx[i]);
    }
    for (int k = 0; k < TS_CONNS; k++)
      nng_close(s[k]);
    /* it stops by itself (a second SIGTERM could find its handlers gone) */
    int st = 0;
    ck_assert_int_eq(waitpid(d.pid, &st, 0), d.pid);
    d.pid = 0;
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "run %d: wavedd "
                  "status %d:\n%s", run, st, td_stderr(&d));
    td_cleanup(&d);
  }
  fprintf(stderr, "%d runs: %u results, %u SHUTDOWN, none unanswered\n",
          TS_RUNS, results, shutdowns);
  free(req);
}
END_TEST

int main(void)
{
  signal(SIGPIPE, SIG_IGN);
  Suite *s = suite_create("stop");
  TCase *tc = tcase_create("stop");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, sigterm_answers_every_request);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
