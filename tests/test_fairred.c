/* test_fairred.c - reductions take turns by client (daemon/exec/device.c, the
 * short lane's owner ring), against the real daemon (wavedd-test: the
 * fake backend, whose "hold_prepare=DIR" device string holds a pack's
 * preparation while DIR/<pack> exists).
 *
 * The device is held inside a pack's preparation (a hash job on a
 * first-use pack starts it).  Client A (one tcp connection: principal
 * "pipe:N") queues four reductions, then client B (another connection)
 * two; status says when each batch is queued, so nothing depends on
 * timing.  Let go, the device serves the six in turns, A B A B A A, where
 * first in, first out would give A A A A B B.  The order is read from the
 * daemon's log ("job reduce ID on fk0: ok"), which the loop writes as each
 * reduction's completion arrives, in the device's order.
 *
 * The same hold shows a big reduction yield between its slices
 * (daemon/rq/slices.c, reduce_slice_rows: 65536): A's float sum of 300,000
 * rows is queued first, B's 1-row sum second; let go, B's ends first (the
 * sum left the device after its first slice), and A's has the bits of the
 * whole job (core/reduce.c's reference, over rows whose sum depends on the
 * tree).  Served whole, A's would end first.
 *
 * And a float sum of many one-row chunks yields while it is planned
 * (issue 35: its plan is one pass over the chunks, made on the device
 * before the first slice): A's sum of 40,000 chunks is queued first, B's
 * 1-row sum second, and every reduction is held inside the fake device
 * (DIR/.reduce).  Let go of the pack, the first reduction held must be
 * B's (1 row), not A's first block (256 rows): the device left A after a
 * step of its plan, before any slice.
 *
 * The slow request log (limits.slow_request_ms, net/req.c): a 1-row sum
 * held at least TFR_HELD_MS behind the hold is logged with its id, its
 * principal and the time in each stage, the held time in the last one
 * ("served", and of it in the job's queue on the device), and a poll
 * parked as long is not (the client asked to wait); with the key unset
 * nothing is logged.
 */
#include <check.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <nng/nng.h>

#include "bulk_harness.h"
#include "daemon_harness.h"
#include "core/base.h"
#include "core/reduce.h"

#define FR_A 4  /* reductions from client A */
#define FR_B 2  /* from client B */
#define TFR_HELD_MS 300  /* the slow log test holds its sum this long */

static const char *tfr_top = "";  /* more top-level keys of the config */
static uint64_t tfr_held_job;     /* the hash job tfr_start_held holds */

/* dev: more keys of fk0 ("" none). */
static void tfr_config(td_daemon *d, const char *dev)
{
  char hold[200], text[2048];
  snprintf(hold, sizeof hold, "%s/hold", d->dir);
  ck_assert_int_eq(mkdir(hold, 0700), 0);
  snprintf(text, sizeof text,
           "listen: [\"%s\", \"%s\"]\nauth: none\nlog_level: info\n"
           "allow_client_shm: true\n%s"
           "packs: {dir: %s/config/packs, load: [small], prepare: first-use}\n"
           "devices:\n  - {name: fk0, backend: fake, threads: 1, "
           "device: \"hold_prepare=%s\"%s}\n",
           d->ipc, d->tcp, tfr_top, getenv("WAVE_SOURCE_DIR"), hold, dev);
  td_write(d->cfg, text);
  d->fake = 1;
}

static void tfr_hold(td_daemon *d, int on)
{
  char path[300];
  snprintf(path, sizeof path, "%s/hold/small", d->dir);
  if (on)
    td_write(path, "held by test_fairred\n");
  else
    ck_assert_int_eq(unlink(path), 0);
}

/* fk0's queued items, as status says. */
static unsigned tfr_queued(nng_socket s)
{
  Wave__V1__Response *r = td_status(s, 1);
  ck_assert_uint_eq(r->status->n_devices, 1);
  unsigned n = r->status->devices[0]->queue_depth;
  wave__v1__response__free_unpacked(r, NULL);
  return n;
}

/* Until fk0 has want items queued (a bound on polls, not a time). */
static void tfr_wait_queued(nng_socket s, unsigned want)
{
  unsigned n = 0;
  for (int i = 0; i < 6000 && (n = tfr_queued(s)) < want; i++) {
    struct timespec nap = {0, 5 * 1000 * 1000};
    nanosleep(&nap, NULL);
  }
  ck_assert_uint_eq(n, want);
}

/* Send rr as request id on ctx without waiting for the reply; the aio
 * carries it. */
static nng_aio *tfr_send_req(nng_ctx ctx, uint64_t id,
                            Wave__V1__ReduceRequest *rr)
{
  Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
  rq.version = 2;
  rq.id = id;
  rq.body_case = WAVE__V1__REQUEST__BODY_REDUCE;
  rq.reduce = rr;
  size_t n = wave__v1__request__get_packed_size(&rq);
  nng_msg *m;
  ck_assert_int_eq(nng_msg_alloc(&m, n), 0);
  wave__v1__request__pack(&rq, nng_msg_body(m));
  nng_aio *aio;
  ck_assert_int_eq(nng_aio_alloc(&aio, NULL, NULL), 0);
  nng_aio_set_timeout(aio, 60000);
  nng_aio_set_msg(aio, m);
  nng_ctx_send(ctx, aio);
  nng_aio_wait(aio);
  ck_assert_int_eq(nng_aio_result(aio), 0);
  nng_ctx_recv(ctx, aio);
  return aio;
}

/* A sum of the n chunks in (u32, or f32 if fsum), sent as tfr_send_req. */
static nng_aio *tfr_send_sum(nng_ctx ctx, uint64_t id, ProtobufCBinaryData *in,
                            size_t n_in, int fsum)
{
  Wave__V1__ReduceRequest rr = WAVE__V1__REDUCE_REQUEST__INIT;
  rr.dtype = fsum ? WAVE__V1__DTYPE__F32 : WAVE__V1__DTYPE__U32;
  rr.op = WAVE__V1__OP__SUM;
  rr.n_input = n_in;
  rr.input = in;
  return tfr_send_req(ctx, id, &rr);
}

/* A sum of one row, id. */
static nng_aio *tfr_send(nng_ctx ctx, uint64_t id)
{
  uint32_t v = (uint32_t)id;
  ProtobufCBinaryData in = {sizeof v, (uint8_t *)&v};
  return tfr_send_sum(ctx, id, &in, 1, 0);
}

/* The reply to request id: a sum of bits `bits` (one value). */
static void tfr_reply_bits(nng_aio *aio, uint64_t id, uint32_t bits)
{
  nng_aio_wait(aio);
  ck_assert_msg(nng_aio_result(aio) == 0, "no reply: %s",
                nng_strerror(nng_aio_result(aio)));
  nng_msg *m = nng_aio_get_msg(aio);
  Wave__V1__Response *r =
      wave__v1__response__unpack(NULL, nng_msg_len(m), nng_msg_body(m));
  nng_msg_free(m);
  nng_aio_free(aio);
  ck_assert_ptr_nonnull(r);
  ck_assert_msg(r->body_case == WAVE__V1__RESPONSE__BODY_REDUCE, "%s",
                r->error ? r->error->message : "?");
  ck_assert_uint_eq(r->id, id);
  ck_assert_uint_eq(r->reduce->n_bits, 1);
  ck_assert_uint_eq(r->reduce->bits[0], bits);
  wave__v1__response__free_unpacked(r, NULL);
}

/* The reply to request id: a sum equal to id. */
static void tfr_reply(nng_aio *aio, uint64_t id)
{
  tfr_reply_bits(aio, id, (uint32_t)id);
}

/* Start d with fk0 held inside a pack's preparation (the hold file and a
 * hash job on the first-use pack); its reductions then queue. */
static nng_socket tfr_start_held(td_daemon *d, const char *dev)
{
  td_prepare(d, NULL);
  tfr_config(d, dev);
  tfr_hold(d, 1);
  ck_assert_msg(td_start(d) == 0, "did not start:\n%s", td_stderr(d));
  nng_socket s = td_dial(d->ipc);
  Wave__V1__HashRequest hq = WAVE__V1__HASH_REQUEST__INIT;
  hq.pack = "small";
  hq.count = 1000;
  hq.detach = 1;
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
    struct timespec nap = {0, 5 * 1000 * 1000};
    nanosleep(&nap, NULL);
  }
  ck_assert_uint_eq(tfr_queued(s), 0);
  tfr_held_job = job;
  return s;
}

/* The ids of the first n reductions in d's log, in the order they ended. */
static void tfr_log_order(td_daemon *d, const unsigned *want, unsigned n)
{
  const char *log = td_stderr(d), *p = log;
  unsigned got[16], k = 0;
  while ((p = strstr(p, "job reduce ")) != NULL && k < n) {
    unsigned id;
    if (sscanf(p, "job reduce %u on fk0: ok", &id) == 1)
      got[k++] = id;
    p++;
  }
  ck_assert_msg(k == n, "%u reductions in the log:\n%s", k, log);
  for (unsigned i = 0; i < n; i++)
    ck_assert_msg(got[i] == want[i], "reduction %u was %u, not %u:\n%s", i,
                  got[i], want[i], log);
}

START_TEST(reductions_take_turns_by_client)
{
  td_daemon d;
  nng_socket s = tfr_start_held(&d, "");
  nng_socket a = td_dial(d.tcp), b = td_dial(d.tcp);
  nng_ctx ca[FR_A], cb[FR_B];
  nng_aio *aa[FR_A], *ab[FR_B];
  for (int i = 0; i < FR_A; i++) {  /* A: ids 101..104, in order */
    ck_assert_int_eq(nng_ctx_open(&ca[i], a), 0);
    aa[i] = tfr_send(ca[i], 101 + (uint64_t)i);
    tfr_wait_queued(s, (unsigned)i + 1);
  }
  for (int i = 0; i < FR_B; i++) {  /* then B: ids 201, 202 */
    ck_assert_int_eq(nng_ctx_open(&cb[i], b), 0);
    ab[i] = tfr_send(cb[i], 201 + (uint64_t)i);
    tfr_wait_queued(s, FR_A + (unsigned)i + 1);
  }
  tfr_hold(&d, 0);
  for (int i = 0; i < FR_A; i++) {
    tfr_reply(aa[i], 101 + (uint64_t)i);
    nng_ctx_close(ca[i]);
  }
  for (int i = 0; i < FR_B; i++) {
    tfr_reply(ab[i], 201 + (uint64_t)i);
    nng_ctx_close(cb[i]);
  }

  /* the order the device served them in */
  static const unsigned want[FR_A + FR_B] = {101, 201, 102, 202, 103, 104};
  tfr_log_order(&d, want, FR_A + FR_B);
  nng_close(a);
  nng_close(b);
  nng_close(s);
  td_stop_ok(&d);
}
END_TEST

#define FR_BIG 300000  /* rows of A's float sum: 200,000 + 100,000 */

/* FR_BIG float rows whose sum depends on the tree (exponents -20..20,
 * signs mixed), and the bits of their whole sum (core/reduce.c's
 * reference over two spans of 200,000 and 100,000 rows). */
static float *tfr_rows(uint32_t *bits)
{
  float *rows = malloc(FR_BIG * sizeof *rows);
  ck_assert_ptr_nonnull(rows);
  uint64_t x = 0x2545f4914f6cdd1dull;
  for (size_t i = 0; i < FR_BIG; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    float m = 1.0f + (float)(x & 0xffff) / 65536.0f;
    rows[i] = ldexpf((x >> 20) & 1 ? -m : m, (int)((x >> 24) % 41) - 20);
  }
  wv_span sp[2] = {{rows, 200000}, {rows + 200000, FR_BIG - 200000}};
  wv_reduce_job job = {.dtype = WAVE_F32, .op = WAVE_SUM, .input = sp,
                       .n_input = 2, .rows = FR_BIG};
  wv_reduce_out want = {0};
  wave_error err = {0};
  ck_assert_int_eq(wv_reduce_reference(&job, &want, &err), 0);
  *bits = want.bits[0];
  return rows;
}

/* Let go of the device with A's big sum (id 301, aa, sent when base items
 * were queued) and B's 1-row sum (401) queued in that order: B's must end
 * first, A's with want. */
static void tfr_big_then_small(td_daemon *d, nng_socket s, unsigned base,
                              nng_aio *aa, uint32_t want)
{
  tfr_wait_queued(s, base + 1);
  nng_socket b = td_dial(d->tcp);
  nng_ctx cb;
  ck_assert_int_eq(nng_ctx_open(&cb, b), 0);
  nng_aio *ab = tfr_send(cb, 401);
  tfr_wait_queued(s, base + 2);
  tfr_hold(d, 0);
  tfr_reply(ab, 401);
  tfr_reply_bits(aa, 301, want);
  static const unsigned order[] = {401, 301};
  tfr_log_order(d, order, 2);
  nng_ctx_close(cb);
  nng_close(b);
}

START_TEST(a_big_sum_yields_between_slices)
{
  td_daemon d;
  nng_socket s = tfr_start_held(&d, ", reduce_slice_rows: 65536");
  uint32_t want;
  float *rows = tfr_rows(&want);
  ProtobufCBinaryData in[2] = {{200000 * 4, (uint8_t *)rows},
                               {(FR_BIG - 200000) * 4,
                                (uint8_t *)(rows + 200000)}};
  nng_socket a = td_dial(d.tcp);
  nng_ctx ca;
  ck_assert_int_eq(nng_ctx_open(&ca, a), 0);
  tfr_big_then_small(&d, s, 0, tfr_send_sum(ca, 301, in, 2, 1), want);
  nng_ctx_close(ca);
  nng_close(a);
  nng_close(s);
  td_stop_ok(&d);
  free(rows);
}
END_TEST

/* The same with A's rows in a region (a sealed memfd, passed by
 * SCM_RIGHTS, on A's ipc connection): the fake device reads host memory
 * as the CPU one does, so the region's spans are used in place, the job's
 * rows are all in memory and it runs in slices too (rq/reduce.c since
 * 814440a; before, every region job ran whole through the file path, and
 * A's ended first). */
START_TEST(a_big_region_sum_yields_between_slices)
{
  td_daemon d;
  nng_socket s = tfr_start_held(&d, ", reduce_slice_rows: 65536");
  uint32_t want;
  float *rows = tfr_rows(&want);
  int fd = memfd_create("fairred", MFD_ALLOW_SEALING | MFD_CLOEXEC);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(pwrite(fd, rows, FR_BIG * 4, 0), FR_BIG * 4);
  ck_assert_int_eq(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW |
                                              F_SEAL_WRITE), 0);
  nng_socket a = td_dial(d.ipc);
  Wave__V1__Response *r = bh_register_fd(d.ipc, a, fd, 0, 0, 0);
  ck_assert_msg(r->body_case == WAVE__V1__RESPONSE__BODY_REGION, "%s",
                r->error ? r->error->message : "?");
  Wave__V1__Extent ex[2] = {WAVE__V1__EXTENT__INIT, WAVE__V1__EXTENT__INIT};
  Wave__V1__Extent *exp[2] = {&ex[0], &ex[1]};
  ex[0].region = ex[1].region = r->region->id;
  wave__v1__response__free_unpacked(r, NULL);
  ex[0].bytes = 200000 * 4;
  ex[1].offset = 200000 * 4;
  ex[1].bytes = (FR_BIG - 200000) * 4;
  Wave__V1__ReduceRequest rr = WAVE__V1__REDUCE_REQUEST__INIT;
  rr.dtype = WAVE__V1__DTYPE__F32;
  rr.op = WAVE__V1__OP__SUM;
  rr.n_input_at = 2;
  rr.input_at = exp;
  nng_ctx ca;
  ck_assert_int_eq(nng_ctx_open(&ca, a), 0);
  unsigned base = tfr_queued(s);  /* the region's pin, queued behind the hold */
  tfr_big_then_small(&d, s, base, tfr_send_req(ca, 301, &rr), want);
  nng_ctx_close(ca);
  nng_close(a);
  close(fd);
  nng_close(s);
  td_stop_ok(&d);
  free(rows);
}
END_TEST

#define FR_MANY 40000  /* A's one-row chunks: 3 plan steps at 65,536 rows */

/* The first "reduction held" line of d's log, once there is one (a bound
 * on polls, not a time). */
static const char *tfr_first_held(td_daemon *d)
{
  const char *p = NULL;
  for (int i = 0; i < 6000; i++) {
    if ((p = strstr(td_stderr(d), "fake fk0: reduction held")) != NULL)
      return p;
    struct timespec nap = {0, 5 * 1000 * 1000};
    nanosleep(&nap, NULL);
  }
  ck_abort_msg("no reduction held:\n%s", td_stderr(d));
  return NULL;
}

START_TEST(a_many_chunk_sum_yields_while_planned)
{
  td_daemon d;
  nng_socket s = tfr_start_held(&d, ", reduce_slice_rows: 65536");
  uint32_t unused;
  float *rows = tfr_rows(&unused);
  ProtobufCBinaryData *in = malloc(FR_MANY * sizeof *in);
  wv_span *sp = malloc(FR_MANY * sizeof *sp);
  ck_assert(in != NULL && sp != NULL);
  for (size_t i = 0; i < FR_MANY; i++) {
    in[i] = (ProtobufCBinaryData){4, (uint8_t *)(rows + i)};
    sp[i] = (wv_span){rows + i, 1};
  }
  wv_reduce_job job = {.dtype = WAVE_F32, .op = WAVE_SUM, .input = sp,
                       .n_input = FR_MANY, .rows = FR_MANY};
  wv_reduce_out want = {0};
  wave_error err = {0};
  ck_assert_int_eq(wv_reduce_reference(&job, &want, &err), 0);
  char held[300];
  snprintf(held, sizeof held, "%s/hold/.reduce", d.dir);
  td_write(held, "every reduction held by test_fairred\n");
  nng_socket a = td_dial(d.tcp), b = td_dial(d.tcp);
  nng_ctx ca, cb;
  ck_assert_int_eq(nng_ctx_open(&ca, a), 0);
  ck_assert_int_eq(nng_ctx_open(&cb, b), 0);
  nng_aio *aa = tfr_send_sum(ca, 301, in, FR_MANY, 1);
  tfr_wait_queued(s, 1);
  nng_aio *ab = tfr_send(cb, 401);
  tfr_wait_queued(s, 2);
  tfr_hold(&d, 0);
  const char *first = tfr_first_held(&d);
  ck_assert_msg(strncmp(first, "fake fk0: reduction held (1 rows)", 33) == 0,
                "the device took A's slice before B's sum:\n%s",
                td_stderr(&d));
  ck_assert_int_eq(unlink(held), 0);
  tfr_reply(ab, 401);
  tfr_reply_bits(aa, 301, (uint32_t)want.bits[0]);
  static const unsigned order[] = {401, 301};
  tfr_log_order(&d, order, 2);
  nng_ctx_close(ca);
  nng_ctx_close(cb);
  nng_close(a);
  nng_close(b);
  nng_close(s);
  td_stop_ok(&d);
  free(in);
  free(sp);
  free(rows);
}
END_TEST

/* A 1-row sum (id 501, on its own tcp connection) held TFR_HELD_MS or
 * more behind the held device, while a poll of the held job (id 77)
 * parks TFR_HELD_MS; d's log. */
static const char *tfr_held_sum(td_daemon *d, const char *top)
{
  tfr_top = top;
  nng_socket s = tfr_start_held(d, "");
  tfr_top = "";
  nng_socket a = td_dial(d->tcp);
  nng_ctx ca;
  ck_assert_int_eq(nng_ctx_open(&ca, a), 0);
  nng_aio *aio = tfr_send(ca, 501);
  tfr_wait_queued(s, 1);
  /* a poll parked TFR_HELD_MS: the client's wait, not the daemon's */
  Wave__V1__Response *r = td_job(s, tfr_held_job, TFR_HELD_MS, 0);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
  wave__v1__response__free_unpacked(r, NULL);
  tfr_hold(d, 0);
  tfr_reply(aio, 501);  /* logged before its reply left */
  nng_ctx_close(ca);
  nng_close(a);
  nng_close(s);
  return td_stderr(d);
}

START_TEST(a_slow_request_is_logged_with_its_stages)
{
  td_daemon d;
  const char *log = tfr_held_sum(&d, "limits: {slow_request_ms: 100}\n");
  const char *p = strstr(log, "slow request: reduce 501 from pipe:");
  ck_assert_msg(p != NULL, "no slow request line:\n%s", log);
  unsigned pipe, ms;
  double took, pool, dec, loop, served, at, pre, queued, ran, hand, after;
  int n = sscanf(p, "slow request: reduce 501 from pipe:%*u on connection %u "
                 "took %lf ms (limits.slow_request_ms %u): %lf ms waiting "
                 "for a decode thread, %lf decoding, %lf waiting for the "
                 "loop, %lf served until its reply (its job included, a "
                 "parked poll's wait not) (of it: %lf before its job was "
                 "queued, %lf queued on the device, %lf there, %lf until "
                 "the loop took its end, %lf from then to its reply); nng "
                 "handed it over at %lf s",
                 &pipe, &took, &ms, &pool, &dec, &loop, &served, &pre,
                 &queued, &ran, &hand, &after, &at);
  ck_assert_msg(n == 13, "%d fields of: %.600s", n, p);
  ck_assert_uint_eq(ms, 100);
  ck_assert_uint_gt(pipe, 0);
  ck_assert_msg(served >= TFR_HELD_MS && took >= served, "%.600s", p);
  ck_assert_msg(fabs(pool + dec + loop + served - took) < 0.01, "%.600s", p);
  /* the serve stage split: the sum waited behind the held device */
  ck_assert_msg(queued >= TFR_HELD_MS && ran < TFR_HELD_MS, "%.600s", p);
  ck_assert_msg(pre >= 0 && hand >= 0 && after >= 0, "%.600s", p);
  ck_assert_msg(fabs(pre + queued + ran + hand + after - served) < 0.01,
                "%.600s", p);
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);  /* the host's clock, in the past */
  ck_assert_msg(at > 0 && at < (double)now.tv_sec + 1, "%.400s", p);
  ck_assert_msg(strstr(log, "slow request: job 77 ") == NULL, "%s", log);
  td_stop_ok(&d);
}
END_TEST

START_TEST(no_slow_log_unless_asked)
{
  td_daemon d;
  const char *log = tfr_held_sum(&d, "");
  ck_assert_msg(strstr(log, "slow request") == NULL, "%s", log);
  td_stop_ok(&d);
}
END_TEST

static Suite *tfr_suite(void)
{
  Suite *s = suite_create("fairred");
  TCase *t = tcase_create("turns");
  tcase_set_timeout(t, 120);
  tcase_add_test(t, reductions_take_turns_by_client);
  tcase_add_test(t, a_big_sum_yields_between_slices);
  tcase_add_test(t, a_big_region_sum_yields_between_slices);
  tcase_add_test(t, a_many_chunk_sum_yields_while_planned);
  suite_add_tcase(s, t);
  TCase *slow = tcase_create("slowlog");
  tcase_set_timeout(slow, 120);
  tcase_add_test(slow, a_slow_request_is_logged_with_its_stages);
  tcase_add_test(slow, no_slow_log_unless_asked);
  suite_add_tcase(s, slow);
  return s;
}

int main(void)
{
  signal(SIGPIPE, SIG_IGN);
  SRunner *sr = srunner_create(tfr_suite());
  srunner_run_all(sr, CK_ENV);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
