/* test_bulk_gates.c - test_bulk's TCase "gates": the five requests the
 * decode threads answer (stream open, put and commit, region register and
 * unregister) pass rq/route.c's gates like every other kind (issue 38,
 * step 6), against the real wavedd-test (the fake backend holds a
 * reduction on its device while the file HOLD/.reduce exists).
 *
 * - BUSY: limits.max_peer_requests 1, so a connection is answered BUSY
 *   beyond 2 requests in flight.  Two reductions held on connection A
 *   (one on each of two fake devices, each seen held in the log);
 *   then each of the five on A must be answered BUSY, with the code, name
 *   and message a StatusRequest gets there, and nothing changes: no
 *   stream opened or committed, no region registered or removed, no piece
 *   taken (once the holds go, the same piece is A's first).
 * - SHUTDOWN: a reduction held keeps a SIGTERM'd daemon stopping; each of
 *   the five on connection B must be answered as a ReduceRequest is
 *   (SHUTDOWN), and again nothing changes.
 * One daemon, no sleeps that decide anything: the test waits on the
 * daemon's log and its replies (about a second).
 */
#include <check.h>
#include <fcntl.h>
#include <pthread.h>
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
#include "wave/error.h"

TCase *bt_gates_tcase(void);

static void bg_nap(void)
{
  struct timespec ts = {0, 5 * 1000 * 1000};
  nanosleep(&ts, NULL);
}

/* How many times the log holds needle. */
static int bg_seen(td_daemon *d, const char *needle)
{
  int k = 0;
  for (const char *p = td_stderr(d); (p = strstr(p, needle)) != NULL;
       p += strlen(needle))
    k++;
  return k;
}

/* Until the log holds needle n times. */
static void bg_wait_log(td_daemon *d, const char *needle, int n)
{
  for (int i = 0; i < 6000 && bg_seen(d, needle) < n; i++)
    bg_nap();
  ck_assert_msg(bg_seen(d, needle) >= n, "'%s' not %d times in the log:\n%s",
                needle, n, td_stderr(d));
}

static void bg_hold(const char *dir, int on)
{
  char path[300];
  snprintf(path, sizeof path, "%s/.reduce", dir);
  if (on)
    td_write(path, "held by test_bulk gates\n");
  else
    ck_assert_int_eq(unlink(path), 0);
}

typedef struct bg_call {
  nng_socket s;
  const char *device;
  Wave__V1__Response *r;
} bg_call;

static void *bg_reduce(void *arg)
{
  bg_call *c = arg;
  td_chunk in = {(uint32_t[4]){1, 2, 3, 4}, 16};
  c->r = td_reduce(c->s, 5, WAVE__V1__DTYPE__U32, WAVE__V1__OP__SUM, &in, 1,
                   NULL, 0, c->device);
  return NULL;
}

static Wave__V1__Response *bg_send(nng_socket s, Wave__V1__Request__BodyCase
                                   body, void *msg)
{
  Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
  rq.version = 2;
  rq.id = 38;
  rq.body_case = body;
  rq.status = msg;  /* one member of the oneof: any of them */
  return td_call(s, &rq);
}

static Wave__V1__Response *bg_open(nng_socket s)
{
  Wave__V1__StreamOpenRequest so = WAVE__V1__STREAM_OPEN_REQUEST__INIT;
  so.dtype = WAVE__V1__DTYPE__U32;
  so.op = WAVE__V1__OP__SUM;
  so.input_bytes = 16;
  return bg_send(s, WAVE__V1__REQUEST__BODY_STREAM_OPEN, &so);
}

static Wave__V1__Response *bg_put(nng_socket s, uint64_t id)
{
  Wave__V1__StreamPutRequest sp = WAVE__V1__STREAM_PUT_REQUEST__INIT;
  sp.stream_id = id;
  sp.data.data = (uint8_t *)(uint32_t[4]){1, 2, 3, 4};
  sp.data.len = 16;
  return bg_send(s, WAVE__V1__REQUEST__BODY_STREAM_PUT, &sp);
}

static Wave__V1__Response *bg_commit(nng_socket s, uint64_t id)
{
  Wave__V1__StreamCommitRequest sc = WAVE__V1__STREAM_COMMIT_REQUEST__INIT;
  sc.stream_id = id;
  return bg_send(s, WAVE__V1__REQUEST__BODY_STREAM_COMMIT, &sc);
}

/* A sealed memfd of 4096 bytes (written: no holes), passed and registered
 * on s. */
static Wave__V1__Response *bg_register(const char *ipc, nng_socket s)
{
  int fd = memfd_create("gates", MFD_ALLOW_SEALING | MFD_CLOEXEC);
  ck_assert_int_ge(fd, 0);
  static const uint8_t rows[4096];
  ck_assert_int_eq(pwrite(fd, rows, sizeof rows, 0), (ssize_t)sizeof rows);
  ck_assert_int_eq(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
  uint8_t t[16];
  char msg[256] = "";
  int rc = bh_pass_fd(ipc, fd, 1, t, msg, sizeof msg);
  ck_assert_msg(rc == 0, "descriptor refused: %d %s", rc, msg);
  close(fd);
  return bh_register(s, t, NULL, 4096, 0, 0);
}

static Wave__V1__Response *bg_unregister(nng_socket s, uint64_t id)
{
  Wave__V1__RegionUnregisterRequest ru =
      WAVE__V1__REGION_UNREGISTER_REQUEST__INIT;
  ru.region_id = id;
  return bg_send(s, WAVE__V1__REQUEST__BODY_REGION_UNREGISTER, &ru);
}

/* The id of a stream (or region) reply; frees r. */
static uint64_t bg_id(Wave__V1__Response *r, Wave__V1__Response__BodyCase b)
{
  ck_assert_msg(r->body_case == b, "reply %d, not %d: %s", r->body_case, b,
                r->body_case == WAVE__V1__RESPONSE__BODY_ERROR
                    ? r->error->message : "");
  uint64_t id = b == WAVE__V1__RESPONSE__BODY_STREAM ? r->stream->stream_id
                                                    : r->region->id;
  wave__v1__response__free_unpacked(r, NULL);
  return id;
}

/* r is the same refusal as ref (code, name, message); frees r. */
static void bg_same(Wave__V1__Response *r, const Wave__V1__Error *ref,
                    const char *what)
{
  ck_assert_msg(r->body_case == WAVE__V1__RESPONSE__BODY_ERROR,
                "%s: answered (reply %d), not %s", what, r->body_case,
                ref->name);
  ck_assert_msg(r->error->code == ref->code &&
                    strcmp(r->error->name, ref->name) == 0 &&
                    strcmp(r->error->message, ref->message) == 0,
                "%s: %s (%s), not %s (%s)", what, r->error->name,
                r->error->message, ref->name, ref->message);
  wave__v1__response__free_unpacked(r, NULL);
}

/* The five on s, each refused as ref; sid/rid: s's stream and region. */
static void bg_five(const char *ipc, nng_socket s, uint64_t sid, uint64_t rid,
                    const Wave__V1__Error *ref)
{
  bg_same(bg_open(s), ref, "StreamOpen");
  bg_same(bg_put(s, sid), ref, "StreamPut");
  bg_same(bg_commit(s, sid), ref, "StreamCommit");
  bg_same(bg_register(ipc, s), ref, "RegionRegister");
  bg_same(bg_unregister(s, rid), ref, "RegionUnregister");
}

/* Over b (never busy): the streams open and the regions listed. */
static void bg_count(nng_socket b, uint32_t streams, size_t regions)
{
  Wave__V1__Response *r = td_status(b, 3);
  ck_assert_uint_eq(r->status->streams, streams);
  wave__v1__response__free_unpacked(r, NULL);
  ck_assert_uint_eq(bh_regions(b, NULL), regions);
}

START_TEST(five_kinds_pass_the_gates)
{
  td_daemon d;
  char hold[200], devs[600];
  td_prepare(&d, NULL);
  snprintf(hold, sizeof hold, "%s/hold", d.dir);
  ck_assert_int_eq(mkdir(hold, 0700), 0);
  snprintf(devs, sizeof devs, "  - {name: fk0, backend: fake, threads: 1, "
           "device: \"hold_prepare=%s\"}\n  - {name: fk1, backend: fake, "
           "threads: 1, device: \"hold_prepare=%s\"}\n", hold, hold);
  char text[2048];
  snprintf(text, sizeof text, "listen: [\"%s\"]\nlog_level: info\n"
           "allow_client_shm: true\nlimits:\n  max_peer_requests: 1\n"
           "packs:\n  load: []\ndevices:\n%s", d.ipc, devs);
  td_write(d.cfg, text);
  d.fake = 1;
  ck_assert_msg(td_start(&d) == 0, "wavedd-test did not start:\n%s",
                td_stderr(&d));
  nng_socket a = td_dial(d.ipc), b = td_dial(d.ipc);
  uint64_t sa = bg_id(bg_open(a), WAVE__V1__RESPONSE__BODY_STREAM);
  uint64_t ra = bg_id(bg_register(d.ipc, a), WAVE__V1__RESPONSE__BODY_REGION);
  uint64_t sb = bg_id(bg_open(b), WAVE__V1__RESPONSE__BODY_STREAM);
  uint64_t rb = bg_id(bg_register(d.ipc, b), WAVE__V1__RESPONSE__BODY_REGION);
  bg_count(b, 2, 2);

  /* BUSY: a reduction of a's held on each device (one at a time, so
   * that the second is not refused for the first's company), then a
   * StatusRequest on a is BUSY */
  bg_hold(hold, 1);
  bg_call c1 = {a, "fk0", NULL}, c2 = {a, "fk1", NULL};
  pthread_t t1, t2;
  ck_assert_int_eq(pthread_create(&t1, NULL, bg_reduce, &c1), 0);
  bg_wait_log(&d, "fake fk0: reduction held", 1);
  ck_assert_int_eq(pthread_create(&t2, NULL, bg_reduce, &c2), 0);
  bg_wait_log(&d, "fake fk1: reduction held", 1);
  Wave__V1__StatusRequest sq = WAVE__V1__STATUS_REQUEST__INIT;
  Wave__V1__Response *busy = bg_send(a, WAVE__V1__REQUEST__BODY_STATUS, &sq);
  ck_assert_int_eq(busy->body_case, WAVE__V1__RESPONSE__BODY_ERROR);
  ck_assert_int_eq(busy->error->code, WAVE_EBUSY);
  ck_assert_str_eq(busy->error->name, "BUSY");
  bg_five(d.ipc, a, sa, ra, busy->error);
  wave__v1__response__free_unpacked(busy, NULL);
  bg_count(b, 2, 2);
  bg_hold(hold, 0);
  pthread_join(t1, NULL);
  pthread_join(t2, NULL);
  for (int i = 0; i < 2; i++) {
    Wave__V1__Response *r = (i ? c2 : c1).r;
    ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_REDUCE);
    wave__v1__response__free_unpacked(r, NULL);
  }
  /* the refused piece was not taken: this one is the stream's first */
  Wave__V1__Response *r = bg_put(a, sa);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_STREAM);
  ck_assert_uint_eq(r->stream->received_bytes, 16);
  wave__v1__response__free_unpacked(r, NULL);

  /* SHUTDOWN: a reduction held keeps the stop in STOPPING */
  int held = bg_seen(&d, "fake fk0: reduction held");
  bg_hold(hold, 1);
  ck_assert_int_eq(pthread_create(&t1, NULL, bg_reduce, &c1), 0);
  bg_wait_log(&d, "fake fk0: reduction held", held + 1);
  kill(d.pid, SIGTERM);
  bg_wait_log(&d, "stopping: no new work", 1);
  td_chunk in = {(uint32_t[1]){1}, 4};
  Wave__V1__Response *stop = td_reduce(b, 6, WAVE__V1__DTYPE__U32,
                                       WAVE__V1__OP__SUM, &in, 1, NULL, 0,
                                       NULL);
  ck_assert_int_eq(stop->body_case, WAVE__V1__RESPONSE__BODY_ERROR);
  ck_assert_int_eq(stop->error->code, WAVE_ESHUTDOWN);
  ck_assert_str_eq(stop->error->name, "SHUTDOWN");
  bg_five(d.ipc, b, sb, rb, stop->error);
  wave__v1__response__free_unpacked(stop, NULL);
  bg_count(b, 2, 2);
  bg_hold(hold, 0);
  pthread_join(t1, NULL);
  ck_assert_int_eq(c1.r->body_case, WAVE__V1__RESPONSE__BODY_REDUCE);
  wave__v1__response__free_unpacked(c1.r, NULL);
  nng_close(a);
  nng_close(b);
  td_stop_ok(&d);
}
END_TEST

TCase *bt_gates_tcase(void)
{
  TCase *tc = tcase_create("gates");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, five_kinds_pass_the_gates);
  return tc;
}
