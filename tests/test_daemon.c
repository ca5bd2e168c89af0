/* test_daemon.c - the real wavedd binary, spoken to with raw nng REQ sockets
 * and protobuf-c (no client library: these tests pin the wire protocol).
 *
 * The daemon runs in a temporary folder with a temporary config
 * (daemon_harness.h): ipc in the folder and tcp on a free 127.0.0.1 port,
 * two CPU devices, small limits so that TOOBIG and JOBSIZE are cheap to
 * reach, and the shipped "closed" and "small" packs.  Expected
 * answers are computed here independently: reductions on integers and on
 * small-integer floats (exact in any order), hash outputs with the hash
 * library's CPU reference and docs/hash.md's published fingerprint.
 */
#include <check.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon_harness.h"
#include "wave/error.h"
#include "workers/hash/hash.h"

static td_daemon g_d;  /* the daemon shared by the "wire" test case */

static uint64_t td_rand_state = 0x9e3779b97f4a7c15ull;
static uint32_t td_rand(void)
{
  td_rand_state ^= td_rand_state << 13;
  td_rand_state ^= td_rand_state >> 7;
  td_rand_state ^= td_rand_state << 17;
  return (uint32_t)(td_rand_state >> 16);
}

/* ---- the shared daemon --------------------------------------------------------- */

static void td_shared_up(void)
{
  td_prepare(&g_d, "  jobs_in_flight: 2\n");
  if (td_start(&g_d) != 0) {
    fprintf(stderr, "wavedd did not start:\n%s\n", td_stderr(&g_d));
    abort();
  }
}

static void td_shared_down(void)
{
  int rc = td_stop(&g_d);
  if (rc != 0)
    fprintf(stderr, "wavedd exited %d after SIGTERM:\n%s\n", rc,
            td_stderr(&g_d));
  td_cleanup(&g_d);
  if (rc != 0)
    abort();  /* fails the run: the shutdown must be clean */
}

START_TEST(status)
{
  nng_socket s = td_dial(g_d.ipc);
  Wave__V1__Response *r = td_status(s, 7);
  Wave__V1__StatusReply *sr = r->status;
  ck_assert_str_eq(sr->version, WAVE_VERSION);
  ck_assert_uint_eq(sr->n_listen, 2);
  ck_assert_str_eq(sr->listen[0], g_d.ipc);
  ck_assert_str_eq(sr->listen[1], g_d.tcp);
  ck_assert_uint_eq(sr->n_devices, 2);
  ck_assert_str_eq(sr->devices[0]->name, "cpu0");
  ck_assert_str_eq(sr->devices[1]->name, "cpu1");
  for (int i = 0; i < 2; i++) {
    Wave__V1__DeviceStatus *d = sr->devices[i];
    ck_assert_str_eq(d->backend, "cpu");
    ck_assert_int_eq(d->faulted, 0);
    ck_assert_uint_gt(strlen(d->description), 0);
    ck_assert_uint_ge(d->wave_width, 1);
    ck_assert_uint_eq(d->n_packs, 2);
    ck_assert_str_eq(d->packs[0]->pack, "closed");
    ck_assert_str_eq(d->packs[1]->pack, "small");
  }
  ck_assert_uint_eq(sr->devices[0]->queue_capacity, 64);
  ck_assert_uint_eq(sr->devices[1]->queue_capacity, 8);
  wave__v1__response__free_unpacked(r, NULL);
  /* the same over tcp */
  nng_socket t = td_dial(g_d.tcp);
  r = td_status(t, 7);
  ck_assert_uint_eq(r->status->n_devices, 2);
  wave__v1__response__free_unpacked(r, NULL);
  nng_close(t);
  nng_close(s);
}
END_TEST

START_TEST(reduce_integers)
{
  nng_socket s = td_dial(g_d.ipc);
  enum { N = 3000 };
  static uint32_t v[N], m[N];
  for (int i = 0; i < N; i++) {
    v[i] = td_rand();
    m[i] = td_rand() % 3 == 0 ? 0 : td_rand() | 1;
  }
  /* independent answers, masked and not */
  uint32_t sum = 0, umin = UINT32_MAX, umax = 0, a = UINT32_MAX, o = 0, x = 0;
  int32_t smin = INT32_MAX, smax = INT32_MIN;
  uint32_t msum = 0, mcount = 0;
  for (int i = 0; i < N; i++) {
    sum += v[i];
    umin = v[i] < umin ? v[i] : umin;
    umax = v[i] > umax ? v[i] : umax;
    a &= v[i];
    o |= v[i];
    x ^= v[i];
    int32_t sv = (int32_t)v[i];
    smin = sv < smin ? sv : smin;
    smax = sv > smax ? sv : smax;
    if (m[i]) {
      msum += v[i];
      mcount++;
    }
  }
  /* input 1000 + 24 + 1976 rows, mask 512 + 2488 rows: boundaries differ */
  td_chunk in[3] = {{v, 1000 * 4}, {v + 1000, 24 * 4}, {v + 1024, 1976 * 4}};
  td_chunk mk[2] = {{m, 512 * 4}, {m + 512, 2488 * 4}};
  struct {
    int dtype, op;
    uint32_t want0, want1;
    unsigned n;
  } cases[] = {
    {WAVE__V1__DTYPE__U32, WAVE__V1__OP__SUM, sum, 0, 1},
    {WAVE__V1__DTYPE__U32, WAVE__V1__OP__MIN, umin, 0, 1},
    {WAVE__V1__DTYPE__U32, WAVE__V1__OP__MAX, umax, 0, 1},
    {WAVE__V1__DTYPE__U32, WAVE__V1__OP__EXTENT, umin, umax, 2},
    {WAVE__V1__DTYPE__U32, WAVE__V1__OP__AND, a, 0, 1},
    {WAVE__V1__DTYPE__U32, WAVE__V1__OP__OR, o, 0, 1},
    {WAVE__V1__DTYPE__U32, WAVE__V1__OP__XOR, x, 0, 1},
    {WAVE__V1__DTYPE__S32, WAVE__V1__OP__SUM, sum, 0, 1},
    {WAVE__V1__DTYPE__S32, WAVE__V1__OP__MIN, (uint32_t)smin, 0, 1},
    {WAVE__V1__DTYPE__S32, WAVE__V1__OP__MAX, (uint32_t)smax, 0, 1},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    Wave__V1__Response *r = td_reduce(s, 100 + k, cases[k].dtype, cases[k].op,
                                      in, 3, NULL, 0, NULL);
    ck_assert_msg(r->body_case == WAVE__V1__RESPONSE__BODY_REDUCE, "case %zu",
                  k);
    ck_assert_uint_eq(r->reduce->n_bits, cases[k].n);
    ck_assert_msg(r->reduce->bits[0] == cases[k].want0,
                  "case %zu: %08x, want %08x", k, r->reduce->bits[0],
                  cases[k].want0);
    if (cases[k].n == 2)
      ck_assert_uint_eq(r->reduce->bits[1], cases[k].want1);
    ck_assert_uint_eq(r->reduce->count, N);
    ck_assert_uint_eq(r->reduce->rows, N);
    ck_assert_int_eq(r->reduce->dtype, cases[k].dtype);
    ck_assert_int_eq(r->reduce->op, cases[k].op);
    wave__v1__response__free_unpacked(r, NULL);
  }
  Wave__V1__Response *r = td_reduce(s, 200, WAVE__V1__DTYPE__U32,
                                    WAVE__V1__OP__SUM, in, 3, mk, 2, "cpu1");
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_REDUCE);
  ck_assert_uint_eq(r->reduce->bits[0], msum);
  ck_assert_uint_eq(r->reduce->count, mcount);
  ck_assert_uint_eq(r->reduce->rows, N);
  ck_assert_str_eq(r->reduce->device, "cpu1");
  wave__v1__response__free_unpacked(r, NULL);
  nng_close(s);
}
END_TEST

START_TEST(reduce_floats_and_empty)
{
  nng_socket s = td_dial(g_d.tcp);
  enum { N = 1000 };
  static float f[N];
  double sum = 0;  /* small integers: every partial sum is exact */
  for (int i = 0; i < N; i++) {
    f[i] = (float)((int)(td_rand() % 2001) - 1000);
    sum += f[i];
  }
  td_chunk in = {f, sizeof f};
  Wave__V1__Response *r = td_reduce(s, 300, WAVE__V1__DTYPE__F32,
                                    WAVE__V1__OP__SUM, &in, 1, NULL, 0, "cpu0");
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_REDUCE);
  float got;
  memcpy(&got, &r->reduce->bits[0], 4);
  ck_assert_msg((double)got == sum, "sum %g, want %g", (double)got, sum);
  ck_assert_str_eq(r->reduce->device, "cpu0");
  wave__v1__response__free_unpacked(r, NULL);
  /* no rows at all: 0 and count 0 (docs/reduction.md, "Empty input") */
  td_chunk none = {NULL, 0};
  r = td_reduce(s, 301, WAVE__V1__DTYPE__U32, WAVE__V1__OP__MIN, &none, 1,
                NULL, 0, NULL);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_REDUCE);
  ck_assert_uint_eq(r->reduce->bits[0], 0);
  ck_assert_uint_eq(r->reduce->count, 0);
  wave__v1__response__free_unpacked(r, NULL);
  nng_close(s);
}
END_TEST

START_TEST(malformed)
{
  nng_socket s = td_dial(g_d.ipc);
  /* a truncated varint, then a length beyond the buffer */
  const uint8_t junk1[] = {0x08, 0xff};
  const uint8_t junk2[] = {0x52, 0x7f, 0x01};
  td_expect_error(td_call_raw(s, junk1, sizeof junk1), WAVE_EBADREQUEST, 0);
  td_good(s);
  td_expect_error(td_call_raw(s, junk2, sizeof junk2), WAVE_EBADREQUEST, 0);
  td_good(s);
  nng_close(s);
}
END_TEST

START_TEST(too_big)
{
  nng_socket s = td_dial(g_d.ipc);
  /* 70000 bytes of rows: above limits.max_request_bytes (65536) */
  static uint32_t v[17500];
  td_chunk c = {v, sizeof v};
  td_expect_error(td_reduce(s, 400, WAVE__V1__DTYPE__U32, WAVE__V1__OP__SUM,
                            &c, 1, NULL, 0, NULL),
                  WAVE_ETOOBIG, 0);
  td_good(s);
  /* within the bytes limit but above limits.max_job_rows (8192) */
  td_chunk c2 = {v, 9000 * 4};
  td_expect_error(td_reduce(s, 401, WAVE__V1__DTYPE__U32, WAVE__V1__OP__SUM,
                            &c2, 1, NULL, 0, NULL),
                  WAVE_EJOBSIZE, 401);
  td_good(s);
  /* within the bytes limit, but 30000 empty chunks would decode to 8 times
   * the wire size: refused before the memory is taken */
  static uint8_t many[60016];
  size_t n = 0;
  many[n++] = 0x08; many[n++] = 0x01;                    /* version 1 */
  many[n++] = 0x10; many[n++] = 0x07;                    /* id 7 */
  many[n++] = 0x52;                                      /* body: reduce */
  size_t body = 4 + 2 * 30000;                           /* dtype, op, chunks */
  many[n++] = (uint8_t)(0x80 | (body & 0x7f));
  many[n++] = (uint8_t)(0x80 | ((body >> 7) & 0x7f));
  many[n++] = (uint8_t)(body >> 14);
  many[n++] = 0x08; many[n++] = 0x01;                    /* dtype U32 */
  many[n++] = 0x10; many[n++] = 0x01;                    /* op SUM */
  for (int i = 0; i < 30000; i++) {
    many[n++] = 0x1a;                                    /* input: */
    many[n++] = 0x00;                                    /* empty */
  }
  ck_assert_uint_le(n, sizeof many);
  td_expect_error(td_call_raw(s, many, n), WAVE_ETOOBIG, 0);
  td_good(s);
  /* ... while 3000 one-row chunks (18 KB; 3.3 times decoded, and
   * protobuf-c's scan buffers on top while it decodes) are served
   * (issue 12: they were TOOBIG) */
  n = 0;
  many[n++] = 0x08; many[n++] = 0x02;                    /* version 2 */
  many[n++] = 0x10; many[n++] = 0x08;                    /* id 8 */
  many[n++] = 0x52;                                      /* body: reduce */
  body = 4 + 6 * 3000;
  many[n++] = (uint8_t)(0x80 | (body & 0x7f));
  many[n++] = (uint8_t)(0x80 | ((body >> 7) & 0x7f));
  many[n++] = (uint8_t)(body >> 14);
  many[n++] = 0x08; many[n++] = 0x01;                    /* dtype U32 */
  many[n++] = 0x10; many[n++] = 0x01;                    /* op SUM */
  for (uint32_t i = 0; i < 3000; i++) {
    many[n++] = 0x1a;                                    /* input: */
    many[n++] = 0x04;                                    /* one row */
    uint32_t row = i + 1;
    memcpy(many + n, &row, 4);
    n += 4;
  }
  Wave__V1__Response *r = td_call_raw(s, many, n);
  ck_assert_msg(r->body_case == WAVE__V1__RESPONSE__BODY_REDUCE, "%s",
                r->body_case == WAVE__V1__RESPONSE__BODY_ERROR
                    ? r->error->message : "not a reduce result");
  ck_assert_uint_eq(r->id, 8);
  ck_assert_uint_eq(r->reduce->bits[0], 3000u * 3001u / 2);
  ck_assert_uint_eq(r->reduce->count, 3000);
  wave__v1__response__free_unpacked(r, NULL);
  td_good(s);
  nng_close(s);
}
END_TEST

/* One reduction of n chunks by value and nm mask chunks (td_reduce: 16). */
static Wave__V1__Response *tdm_many(nng_socket s, uint64_t id, int dtype,
                                   int op, ProtobufCBinaryData *in, size_t n,
                                   ProtobufCBinaryData *mask, size_t nm)
{
  Wave__V1__ReduceRequest rr = WAVE__V1__REDUCE_REQUEST__INIT;
  rr.dtype = dtype;
  rr.op = op;
  rr.n_input = n;
  rr.input = in;
  rr.n_mask = nm;
  rr.mask = mask;
  rr.masked = nm > 0;
  Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
  rq.version = 2;
  rq.id = id;
  rq.body_case = WAVE__V1__REQUEST__BODY_REDUCE;
  rq.reduce = &rr;
  return td_call(s, &rq);
}

/* 4096+ chunks by value: spans, rows and checks on the decode thread
 * (bulk/decode.c, issue 35; an unknown op is the loop's to say, first). */
START_TEST(many_chunks_by_value)
{
  nng_socket s = td_dial(g_d.ipc);
  enum { N = 4500, BIG = 9000, SUM = WAVE__V1__OP__SUM };
  static uint32_t v[BIG], m[BIG];
  static ProtobufCBinaryData in[BIG], mk[BIG];
  uint64_t want = 0, count = 0;
  for (uint32_t i = 0; i < BIG; i++) {
    v[i] = i + 1;
    m[i] = i % 3 == 0;
    in[i] = (ProtobufCBinaryData){4, (uint8_t *)&v[i]};
    mk[i] = (ProtobufCBinaryData){4, (uint8_t *)&m[i]};
    if (i < N && m[i])
      want += v[i], count++;
  }
  Wave__V1__Response *r = tdm_many(s, 60, WAVE__V1__DTYPE__U32,
                                  WAVE__V1__OP__SUM, in, N, mk, N);
  ck_assert_msg(r->body_case == WAVE__V1__RESPONSE__BODY_REDUCE, "%s",
                r->body_case == WAVE__V1__RESPONSE__BODY_ERROR
                    ? r->error->message : "not a reduce result");
  ck_assert_uint_eq(r->reduce->bits[0], (uint32_t)want);
  ck_assert_uint_eq(r->reduce->count, count);
  wave__v1__response__free_unpacked(r, NULL);
  static const struct { size_t n, nm; int op, len, code; } e[] = {
      {BIG, 0, SUM, 4, WAVE_EJOBSIZE}, {N, N - 1, SUM, 4, WAVE_EMASKLEN},
      {N, 0, 99, 4, WAVE_EOP}, {N, 0, SUM, 3, WAVE_ELENGTH}};
  for (unsigned k = 0; k < 4; k++) {
    in[N - 1].len = e[k].len;
    td_expect_error(tdm_many(s, 61 + k, WAVE__V1__DTYPE__U32, e[k].op, in,
                             e[k].n, e[k].nm ? mk : NULL, e[k].nm),
                    e[k].code, 61 + k);
  }
  td_good(s);
  nng_close(s);
}
END_TEST

START_TEST(versions_and_bodies)
{
  nng_socket s = td_dial(g_d.ipc);
  Wave__V1__StatusRequest st = WAVE__V1__STATUS_REQUEST__INIT;
  Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
  rq.id = 42;
  rq.body_case = WAVE__V1__REQUEST__BODY_STATUS;
  rq.status = &st;
  rq.version = 3;
  td_expect_error(td_call(s, &rq), WAVE_EVERSION, 42);
  td_good(s);
  /* version 1: status is served as before, and answered as version 1 */
  rq.version = 1;
  Wave__V1__Response *r1 = td_call(s, &rq);
  ck_assert_int_eq(r1->body_case, WAVE__V1__RESPONSE__BODY_STATUS);
  ck_assert_uint_eq(r1->version, 1);
  wave__v1__response__free_unpacked(r1, NULL);
  /* ... but a version-1 hash submit gets VERSION, saying why */
  Wave__V1__HashRequest hq = WAVE__V1__HASH_REQUEST__INIT;
  hq.pack = (char *)"closed";
  hq.count = 32;
  Wave__V1__Request rh = WAVE__V1__REQUEST__INIT;
  rh.version = 1;
  rh.id = 43;
  rh.body_case = WAVE__V1__REQUEST__BODY_HASH;
  rh.hash = &hq;
  r1 = td_call(s, &rh);
  ck_assert_int_eq(r1->body_case, WAVE__V1__RESPONSE__BODY_ERROR);
  ck_assert_uint_eq(r1->error->code, WAVE_EVERSION);
  ck_assert_ptr_nonnull(strstr(r1->error->message, "segment"));
  wave__v1__response__free_unpacked(r1, NULL);
  td_good(s);
  rq.version = 0;
  td_expect_error(td_call(s, &rq), WAVE_EVERSION, 42);
  td_good(s);
  /* version 2^32 + 1 and 2^32 + 2 (a second version field: the last one
   * counts) are not versions 1 and 2, whatever protobuf-c's uint32 keeps
   * of them (issue 12) */
  rq.version = 1;
  rq.id = 44;
  uint8_t wide[64];
  size_t wn = wave__v1__request__pack(&rq, wide);
  static const uint8_t v41[] = {0x08, 0x81, 0x80, 0x80, 0x80, 0x10};
  memcpy(wide + wn, v41, sizeof v41);
  Wave__V1__Response *rw = td_call_raw(s, wide, wn + sizeof v41);
  ck_assert_int_eq(rw->body_case, WAVE__V1__RESPONSE__BODY_ERROR);
  ck_assert_ptr_nonnull(strstr(rw->error->message, "version 4294967297"));
  td_expect_error(rw, WAVE_EVERSION, 44);
  wide[wn + 1] = 0x82;
  td_expect_error(td_call_raw(s, wide, wn + sizeof v41), WAVE_EVERSION, 44);
  wide[wn + 5] = 0x00;  /* the same bytes meaning version 2: served */
  Wave__V1__Response *r2 = td_call_raw(s, wide, wn + sizeof v41);
  ck_assert_int_eq(r2->body_case, WAVE__V1__RESPONSE__BODY_STATUS);
  wave__v1__response__free_unpacked(r2, NULL);
  rq.id = 42;
  rq.version = 0;
  /* version 1, id 5, and a body field (99) this daemon does not know */
  const uint8_t future[] = {0x08, 0x01, 0x10, 0x05, 0x9a, 0x06, 0x00};
  td_expect_error(td_call_raw(s, future, sizeof future), WAVE_EUNSUPPORTED, 5);
  td_good(s);
  /* no body at all */
  const uint8_t bodyless[] = {0x08, 0x01, 0x10, 0x06};
  td_expect_error(td_call_raw(s, bodyless, sizeof bodyless),
                  WAVE_EUNSUPPORTED, 6);
  td_good(s);
  nng_close(s);
}
END_TEST

START_TEST(bad_reductions)
{
  nng_socket s = td_dial(g_d.ipc);
  uint32_t v[8] = {1, 2, 3, 4, 5, 6, 7, 8}, m[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  td_chunk in = {v, sizeof v}, odd = {v, 7}, mk = {m, 7 * 4}, mko = {m, 6};
  td_expect_error(td_reduce(s, 501, 9, WAVE__V1__OP__SUM, &in, 1, NULL, 0,
                            NULL), WAVE_EDTYPE, 501);
  td_good(s);
  td_expect_error(td_reduce(s, 502, WAVE__V1__DTYPE__U32, 42, &in, 1, NULL, 0,
                            NULL), WAVE_EOP, 502);
  td_good(s);
  td_expect_error(td_reduce(s, 503, WAVE__V1__DTYPE__F32, WAVE__V1__OP__XOR,
                            &in, 1, NULL, 0, NULL), WAVE_EOPDTYPE, 503);
  td_good(s);
  /* the 64-bit dtypes (issue 23): rows of 8 bytes, no bitwise float64 */
  td_chunk twelve = {v, 12};
  td_expect_error(td_reduce(s, 520, WAVE__V1__DTYPE__U64, WAVE__V1__OP__SUM,
                            &twelve, 1, NULL, 0, NULL), WAVE_ELENGTH, 520);
  td_good(s);
  td_expect_error(td_reduce(s, 521, WAVE__V1__DTYPE__F64, WAVE__V1__OP__XOR,
                            &in, 1, NULL, 0, NULL), WAVE_EOPDTYPE, 521);
  td_good(s);
  td_expect_error(td_reduce(s, 504, WAVE__V1__DTYPE__U32, WAVE__V1__OP__SUM,
                            &odd, 1, NULL, 0, NULL), WAVE_ELENGTH, 504);
  td_good(s);
  td_expect_error(td_reduce(s, 505, WAVE__V1__DTYPE__U32, WAVE__V1__OP__SUM,
                            &in, 1, &mk, 1, NULL), WAVE_EMASKLEN, 505);
  td_good(s);
  td_expect_error(td_reduce(s, 506, WAVE__V1__DTYPE__U32, WAVE__V1__OP__SUM,
                            &in, 1, &mko, 1, NULL), WAVE_ELENGTH, 506);
  td_good(s);
  td_expect_error(td_reduce(s, 507, WAVE__V1__DTYPE__U32, WAVE__V1__OP__SUM,
                            &in, 1, NULL, 0, "gpu9"), WAVE_ENODEV, 507);
  td_good(s);
  nng_close(s);
}
END_TEST

/* Many requests in flight: threads, each with its own REQ context, over
 * one ipc and one tcp socket. */
typedef struct td_worker {
  nng_socket sock;
  int id, ok;
} td_worker;

static void *td_worker_main(void *arg)
{
  td_worker *w = arg;
  nng_ctx ctx;
  if (nng_ctx_open(&ctx, w->sock) != 0)
    return NULL;
  uint32_t v[257];
  for (int k = 0; k < 25; k++) {
    uint32_t want = 0;
    size_t n = 1 + (size_t)((w->id * 31 + k * 7) % 257);
    for (size_t i = 0; i < n; i++) {
      v[i] = (uint32_t)(w->id * 100003 + k * 1009 + (int)i);
      want ^= v[i];
    }
    ProtobufCBinaryData b = {n * 4, (uint8_t *)v};
    Wave__V1__ReduceRequest rr = WAVE__V1__REDUCE_REQUEST__INIT;
    rr.dtype = WAVE__V1__DTYPE__U32;
    rr.op = WAVE__V1__OP__XOR;
    rr.n_input = 1;
    rr.input = &b;
    Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
    rq.version = 1;
    rq.id = (uint64_t)w->id * 1000 + (uint64_t)k;
    rq.body_case = WAVE__V1__REQUEST__BODY_REDUCE;
    rq.reduce = &rr;
    Wave__V1__Response *r = td_call_ctx(ctx, &rq);
    if (r->body_case == WAVE__V1__RESPONSE__BODY_REDUCE &&
        r->reduce->bits[0] == want && r->reduce->count == n)
      w->ok++;
    else if (r->body_case == WAVE__V1__RESPONSE__BODY_ERROR &&
             r->error->code == WAVE_EBUSY)
      w->ok++;  /* a full queue is a correct answer too */
    wave__v1__response__free_unpacked(r, NULL);
  }
  nng_ctx_close(ctx);
  return NULL;
}

START_TEST(concurrent)
{
  enum { T = 12 };
  nng_socket si = td_dial(g_d.ipc), st = td_dial(g_d.tcp);
  td_worker w[T];
  pthread_t th[T];
  for (int i = 0; i < T; i++) {
    w[i] = (td_worker){.sock = i % 2 ? st : si, .id = i + 1};
    ck_assert_int_eq(pthread_create(&th[i], NULL, td_worker_main, &w[i]), 0);
  }
  for (int i = 0; i < T; i++) {
    pthread_join(th[i], NULL);
    ck_assert_int_eq(w[i].ok, 25);
  }
  nng_close(si);
  nng_close(st);
}
END_TEST

/* ---- hash jobs ------------------------------------------------------------- */


START_TEST(hash_job)
{
  nng_socket s = td_dial(g_d.ipc);
  const uint64_t count = 8192, target = 1ull << 60;
  Wave__V1__Response *r = td_hash(s, 1000, "closed", 0, count, target, 5, 1,
                                  0xc0ffee, NULL);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
  uint64_t job = r->job->job_id;
  ck_assert_uint_ne(job, 0);
  ck_assert_uint_eq(r->job->total, count);
  wave__v1__response__free_unpacked(r, NULL);
  /* a resend of the same (client, id) is the same job */
  r = td_hash(s, 1000, "closed", 0, count, target, 5, 1, 0xc0ffee, NULL);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
  ck_assert_uint_eq(r->job->job_id, job);
  wave__v1__response__free_unpacked(r, NULL);

  r = td_wait_job(s, job);
  Wave__V1__JobInfo *ji = r->job;
  ck_assert_msg(ji->state == WAVE__V1__JOB_STATE__DONE, "state %d: %s",
                ji->state, ji->error ? ji->error->message : "");
  ck_assert_uint_eq(ji->done, count);
  Wave__V1__HashResult *hr = ji->result;
  ck_assert_ptr_nonnull(hr);
  /* docs/hash.md: the batch fingerprint of [0, 2^13) under "closed" is
   * segment 0's; the job's is FNV-1a-64 over that one segment */
  const uint64_t seg0 = 0x57a520b5d26aa046ull;
  ck_assert_uint_eq(hr->job_fingerprint,
                    wv_fnv1a64_u64(WV_FNV_OFFSET, &seg0, 1));
  ck_assert_uint_eq(hr->segment_log2, 13);
  ck_assert_uint_eq(hr->segment_count, 1);
  ck_assert_uint_eq(r->version, 2);
  ck_assert_uint_ne(ji->instance, 0);
  ck_assert_uint_eq(hr->hashes, count);
  ck_assert_uint_eq(hr->n_outputs, count);
  /* every output against the hash library's CPU reference */
  const char *src = getenv("WAVE_SOURCE_DIR");
  char path[512];
  snprintf(path, sizeof path, "%s/config/packs/closed.yaml", src);
  wv_pack *p;
  wave_error err;
  ck_assert_int_eq(wv_pack_load_file(path, &p, &err), 0);
  uint64_t winners = 0, best = UINT64_MAX, best_nonce = 0, fp = WV_FNV_OFFSET;
  uint64_t first[5];
  for (uint64_t n = 0; n < count; n++) {
    uint64_t want;
    ck_assert_int_eq(wv_hash_verify(p, n, &want, &err), 0);
    ck_assert_uint_eq(hr->outputs[n], want);
    uint8_t le[8];
    for (int b = 0; b < 8; b++)
      le[b] = (uint8_t)(want >> (8 * b));
    for (int b = 0; b < 8; b++)
      fp = (fp ^ le[b]) * WV_FNV_PRIME;
    if (want < target) {
      if (winners < 5)
        first[winners] = n;
      winners++;
    }
    if (want < best) {
      best = want;
      best_nonce = n;
    }
  }
  wv_pack_free(p);
  ck_assert_uint_eq(hr->job_fingerprint, wv_fnv1a64_u64(WV_FNV_OFFSET, &fp, 1));
  ck_assert_uint_eq(hr->winner_count, winners);
  ck_assert_uint_eq(hr->n_winners, winners < 5 ? winners : 5);
  for (size_t i = 0; i < hr->n_winners; i++)
    ck_assert_uint_eq(hr->winners[i]->nonce, first[i]);
  ck_assert_uint_eq(hr->best_nonce, best_nonce);
  ck_assert_uint_eq(hr->best_output, best);
  wave__v1__response__free_unpacked(r, NULL);
  nng_close(s);
}
END_TEST

START_TEST(hash_cancel)
{
  nng_socket s = td_dial(g_d.ipc);
  /* far more nonces than the test will wait for */
  Wave__V1__Response *r = td_hash(s, 1100, "closed", 5, 1ull << 40, 0, 0, 0,
                                  0, "cpu1");
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
  uint64_t job = r->job->job_id;
  ck_assert_str_eq(r->job->device, "cpu1");
  wave__v1__response__free_unpacked(r, NULL);
  /* a short wait that the job outlasts */
  r = td_job(s, job, 50, 0);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
  ck_assert_int_lt(r->job->state, WAVE__V1__JOB_STATE__DONE);
  wave__v1__response__free_unpacked(r, NULL);
  /* reductions on the same device still get through between batches */
  uint32_t v[4] = {1, 2, 3, 4};
  td_chunk c = {v, sizeof v};
  r = td_reduce(s, 1101, WAVE__V1__DTYPE__U32, WAVE__V1__OP__MAX, &c, 1, NULL,
                0, "cpu1");
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_REDUCE);
  ck_assert_uint_eq(r->reduce->bits[0], 4);
  wave__v1__response__free_unpacked(r, NULL);
  r = td_job(s, job, 0, 1);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
  wave__v1__response__free_unpacked(r, NULL);
  r = td_wait_job(s, job);
  ck_assert_int_eq(r->job->state, WAVE__V1__JOB_STATE__CANCELLED);
  ck_assert_ptr_nonnull(r->job->error);
  ck_assert_uint_eq(r->job->error->code, WAVE_ECANCELLED);
  ck_assert_uint_lt(r->job->done, 1ull << 40);
  wave__v1__response__free_unpacked(r, NULL);
  nng_close(s);
}
END_TEST

START_TEST(hash_errors)
{
  nng_socket s = td_dial(g_d.ipc);
  td_expect_error(td_hash(s, 1200, "nope", 0, 10, 0, 0, 0, 0, NULL),
                  WAVE_EPACK, 1200);
  td_expect_error(td_hash(s, 1201, "closed", 0, 0, 0, 0, 0, 0, NULL),
                  WAVE_ERANGE, 1201);
  td_expect_error(td_hash(s, 1202, "closed", 1ull << 63, (1ull << 63) + 1, 0,
                          0, 0, 0, NULL), WAVE_ERANGE, 1202);
  td_expect_error(td_hash(s, 1203, "closed", 0, 70000, 0, 0, 1, 0, NULL),
                  WAVE_EJOBSIZE, 1203);
  td_expect_error(td_hash(s, 1204, "closed", 0, 10, 0, 0, 0, 0, "gpu9"),
                  WAVE_ENODEV, 1204);
  td_expect_error(td_job(s, 12345, 0, 0), WAVE_ENOJOB, 77);
  td_expect_error(td_job(s, 12345, 0, 1), WAVE_ENOJOB, 77);
  /* the last nonce, 2^64 - 1, is a range of one: fine */
  Wave__V1__Response *r = td_hash(s, 1205, "closed", UINT64_MAX, 1, 0, 0, 1,
                                  0, NULL);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
  uint64_t job = r->job->job_id;
  wave__v1__response__free_unpacked(r, NULL);
  r = td_wait_job(s, job);
  ck_assert_int_eq(r->job->state, WAVE__V1__JOB_STATE__DONE);
  ck_assert_uint_eq(r->job->result->n_outputs, 1);
  wave__v1__response__free_unpacked(r, NULL);
  td_good(s);
  nng_close(s);
}
END_TEST

/* limits.jobs_in_flight (2 here): a third hash job on a device is BUSY. */
START_TEST(hash_busy)
{
  nng_socket s = td_dial(g_d.ipc);
  uint64_t jobs[2];
  for (int i = 0; i < 2; i++) {
    Wave__V1__Response *r = td_hash(s, 1400 + (uint64_t)i, "closed", 0,
                                    1ull << 40, 0, 0, 0, 0, "cpu0");
    ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
    jobs[i] = r->job->job_id;
    wave__v1__response__free_unpacked(r, NULL);
  }
  td_expect_error(td_hash(s, 1402, "closed", 0, 10, 0, 0, 0, 0, "cpu0"),
                  WAVE_EBUSY, 1402);
  /* the other device still takes one */
  Wave__V1__Response *r = td_hash(s, 1403, "closed", 0, 10, 0, 0, 0, 0,
                                  "cpu1");
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
  uint64_t other = r->job->job_id;
  wave__v1__response__free_unpacked(r, NULL);
  /* the two jobs take turns on cpu0 (docs/protocol.md, "Run"): the second
   * may have started; a cancel ends it at once or at its next piece */
  r = td_job(s, jobs[1], 0, 1);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
  ck_assert_msg(r->job->state == WAVE__V1__JOB_STATE__CANCELLED ||
                    r->job->state == WAVE__V1__JOB_STATE__RUNNING,
                "state %d", r->job->state);
  wave__v1__response__free_unpacked(r, NULL);
  r = td_job(s, jobs[0], 0, 1);
  wave__v1__response__free_unpacked(r, NULL);
  for (int i = 0; i < 2; i++) {
    r = td_wait_job(s, jobs[i]);
    ck_assert_int_eq(r->job->state, WAVE__V1__JOB_STATE__CANCELLED);
    wave__v1__response__free_unpacked(r, NULL);
  }
  r = td_wait_job(s, other);
  ck_assert_int_eq(r->job->state, WAVE__V1__JOB_STATE__DONE);
  wave__v1__response__free_unpacked(r, NULL);
  td_good(s);
  nng_close(s);
}
END_TEST

START_TEST(packs)
{
  nng_socket s = td_dial(g_d.ipc);
  Wave__V1__PacksRequest pq = WAVE__V1__PACKS_REQUEST__INIT;
  Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
  rq.version = 1;
  rq.id = 1300;
  rq.body_case = WAVE__V1__REQUEST__BODY_PACKS;
  rq.packs = &pq;
  /* the self-checks run after start-up: wait (bounded) for all of them */
  Wave__V1__Response *r = NULL;
  for (int tries = 0; tries < 600; tries++) {
    r = td_call(s, &rq);
    ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_PACKS);
    int all_ok = 1;
    for (size_t i = 0; i < r->packs->n_packs; i++)
      for (size_t k = 0; k < r->packs->packs[i]->n_devices; k++)
        all_ok &= r->packs->packs[i]->devices[k]->ok;
    if (all_ok)
      break;
    wave__v1__response__free_unpacked(r, NULL);
    r = NULL;
    struct timespec ts = {0, 100 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  ck_assert_ptr_nonnull(r);
  Wave__V1__PacksReply *pr = r->packs;
  ck_assert_uint_eq(pr->n_packs, 2);
  ck_assert_str_eq(pr->packs[0]->name, "closed");
  ck_assert_str_eq(pr->packs[1]->name, "small");
  ck_assert_uint_eq(pr->packs[0]->dataset_bytes, 0);
  ck_assert_uint_eq(pr->packs[1]->dataset_bytes, 4u << 20);
  for (size_t i = 0; i < 2; i++) {
    ck_assert_uint_eq(pr->packs[i]->n_devices, 2);
    ck_assert_str_eq(pr->packs[i]->devices[0]->device, "cpu0");
    ck_assert_str_eq(pr->packs[i]->devices[1]->device, "cpu1");
  }
  wave__v1__response__free_unpacked(r, NULL);
  nng_close(s);
}
END_TEST

START_TEST(address_in_use)
{
  /* a second daemon on the shared daemon's ipc socket must not start */
  td_daemon d;
  td_prepare(&d, NULL);
  char text[1024];
  snprintf(text, sizeof text, "listen: [\"%s\"]\n"
           "packs: {load: []}\n"
           "devices: [{name: cpu0, backend: cpu}]\n", g_d.ipc);
  td_write(d.cfg, text);
  ck_assert_int_ne(td_start(&d), 0);
  ck_assert_int_eq(WEXITSTATUS(d.status), 1);
  td_cleanup(&d);
  nng_socket s = td_dial(g_d.ipc);  /* and the first one still serves */
  td_good(s);
  nng_close(s);
}
END_TEST

static Suite *daemon_suite(void)
{
  Suite *s = suite_create("daemon");
  TCase *wire = tcase_create("wire");
  tcase_add_unchecked_fixture(wire, td_shared_up, td_shared_down);
  tcase_add_test(wire, status);
  tcase_add_test(wire, reduce_integers);
  tcase_add_test(wire, reduce_floats_and_empty);
  tcase_add_test(wire, malformed);
  tcase_add_test(wire, too_big);
  tcase_add_test(wire, many_chunks_by_value);
  tcase_add_test(wire, versions_and_bodies);
  tcase_add_test(wire, bad_reductions);
  tcase_add_test(wire, concurrent);
  tcase_add_test(wire, hash_job);
  tcase_add_test(wire, hash_cancel);
  tcase_add_test(wire, hash_errors);
  tcase_add_test(wire, hash_busy);
  tcase_add_test(wire, packs);
  tcase_add_test(wire, address_in_use);
  suite_add_tcase(s, wire);
  return s;
}

int main(void)
{
  signal(SIGPIPE, SIG_IGN);
  SRunner *r = srunner_create(daemon_suite());
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
