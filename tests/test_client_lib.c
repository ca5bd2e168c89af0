/* test_client_lib.c - test_client's library cases: libwaveclient's
 * handling of replies the real daemon never sends (an error, a wrong id, a
 * wrong kind, garbage, silence), status copies and a daemon that is not
 * there, served by a scripted nng REP socket.  Its TCase "lib" joins
 * test_client.c's suite.
 */
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>

#include "proto/wave.pb-c.h"
#include "wave/client.h"

TCase *tc_lib_tcase(void);

enum { TS_ERROR, TS_BADID, TS_KIND, TS_GARBAGE, TS_STATUS, TS_SILENT };

typedef struct tc_server {
  nng_socket sock;
  char url[128];
  int mode;
  pthread_t thr;
} tc_server;

static void tc_reply(tc_server *s, const Wave__V1__Request *q)
{
  Wave__V1__Response r = WAVE__V1__RESPONSE__INIT;
  Wave__V1__Error e = WAVE__V1__ERROR__INIT;
  Wave__V1__StatusReply st = WAVE__V1__STATUS_REPLY__INIT;
  Wave__V1__ReduceResult rr = WAVE__V1__REDUCE_RESULT__INIT;
  Wave__V1__DeviceStatus d0 = WAVE__V1__DEVICE_STATUS__INIT;
  Wave__V1__DeviceStatus *devs[1] = {&d0};
  Wave__V1__PackCheck pc = WAVE__V1__PACK_CHECK__INIT;
  Wave__V1__PackCheck *pcs[1] = {&pc};
  char longname[200];
  r.version = 1;
  r.id = q->id;
  switch (s->mode) {
  case TS_ERROR:
    r.body_case = WAVE__V1__RESPONSE__BODY_ERROR;
    r.error = &e;
    e.code = WAVE_EMASKLEN;
    e.name = "MASKLEN";
    e.message = "mask has 3 rows, input 4";
    r.id = 0;
    break;
  case TS_BADID:
  case TS_KIND:
    r.id = s->mode == TS_BADID ? q->id + 1 : q->id;
    r.body_case = WAVE__V1__RESPONSE__BODY_REDUCE;
    r.reduce = &rr;
    break;
  default:
    r.body_case = WAVE__V1__RESPONSE__BODY_STATUS;
    r.status = &st;
    st.version = "9.9";
    st.jobs_served = 77;
    st.n_devices = 1;
    st.devices = devs;
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    d0.name = longname; /* longer than wave_device_status.name */
    d0.backend = "cpu";
    d0.queue_capacity = 8;
    d0.n_packs = 1;
    d0.packs = pcs;
    pc.pack = "small";
    pc.ok = 1;
    break;
  }
  size_t n = wave__v1__response__get_packed_size(&r);
  unsigned char *buf = malloc(n);
  wave__v1__response__pack(&r, buf);
  if (s->mode == TS_GARBAGE)
    memset(buf, 0xff, n);
  nng_send(s->sock, buf, n, 0);
  free(buf);
}

static void *tc_serve(void *arg)
{
  tc_server *s = arg;
  for (;;) {
    char *buf;
    size_t n;
    if (nng_recv(s->sock, &buf, &n, NNG_FLAG_ALLOC) != 0)
      return NULL;
    Wave__V1__Request *q = wave__v1__request__unpack(NULL, n, (void *)buf);
    nng_free(buf, n);
    /* No ck_assert on this thread: a bad request simply gets no reply,
     * and the call under test times out, which the test notices. */
    if (q == NULL || q->version != 2)
      continue;
    if (s->mode != TS_SILENT)
      tc_reply(s, q);
    wave__v1__request__free_unpacked(q, NULL);
  }
}

static void tc_server_start(tc_server *s, int mode)
{
  s->mode = mode;
  snprintf(s->url, sizeof s->url, "ipc:///tmp/wv-test-client-%d-%d.sock",
           (int)getpid(), mode);
  ck_assert_int_eq(nng_rep0_open(&s->sock), 0);
  ck_assert_int_eq(nng_listen(s->sock, s->url, NULL, 0), 0);
  ck_assert_int_eq(pthread_create(&s->thr, NULL, tc_serve, s), 0);
}

static void tc_server_stop(tc_server *s)
{
  nng_close(s->sock);
  pthread_join(s->thr, NULL);
}

START_TEST(lib_replies)
{
  static const int modes[] = {TS_ERROR, TS_BADID, TS_KIND, TS_GARBAGE};
  static const int want[] = {WAVE_EMASKLEN, WAVE_EIO, WAVE_EIO, WAVE_EIO};
  for (size_t i = 0; i < 4; i++) {
    tc_server s;
    tc_server_start(&s, modes[i]);
    wave_client *c;
    wave_error e = {0};
    ck_assert_int_eq(wave_client_open(&c, s.url, &e), 0);
    wave_client_set_timeout(c, 5000);
    wave_status *st = NULL;
    ck_assert_int_eq(wave_status_get(c, &st, &e), want[i]);
    ck_assert_int_eq(e.code, want[i]);
    ck_assert_ptr_null(st);
    if (modes[i] == TS_ERROR)
      ck_assert_str_eq(e.message, "mask has 3 rows, input 4");
    wave_client_close(c);
    tc_server_stop(&s);
  }
}
END_TEST

START_TEST(lib_status_copy)
{
  tc_server s;
  tc_server_start(&s, TS_STATUS);
  wave_client *c;
  wave_error e = {0};
  ck_assert_int_eq(wave_client_open(&c, s.url, &e), 0);
  wave_status *st;
  ck_assert_int_eq(wave_status_get(c, &st, &e), 0);
  ck_assert_str_eq(st->version, "9.9");
  ck_assert_uint_eq(st->jobs_served, 77);
  ck_assert_uint_eq(st->n_devices, 1);
  ck_assert_uint_eq(strlen(st->devices[0].name), sizeof st->devices[0].name - 1);
  ck_assert_str_eq(st->devices[0].backend, "cpu");
  ck_assert_uint_eq(st->devices[0].queue_capacity, 8);
  ck_assert_uint_eq(st->devices[0].n_packs, 1);
  ck_assert_str_eq(st->devices[0].packs[0].pack, "small");
  ck_assert_int_eq(st->devices[0].packs[0].ok, 1);
  wave_status_free(st);
  wave_client_close(c);
  tc_server_stop(&s);
}
END_TEST

START_TEST(lib_offline)
{
  wave_client *c;
  wave_error e = {0};
  ck_assert_int_eq(wave_client_open(&c, "nope://x", &e), WAVE_EARG);
  ck_assert_ptr_nonnull(strstr(e.message, "nope://x"));
  ck_assert_int_eq(wave_client_open(NULL, NULL, &e), WAVE_EARG);

  setenv("WAVE_URL", "tcp://127.0.0.1:1", 1);
  ck_assert_int_eq(wave_client_open(&c, NULL, &e), 0);
  ck_assert_str_eq(wave_client_url(c), "tcp://127.0.0.1:1");
  wave_client_close(c);
  unsetenv("WAVE_URL");
  ck_assert_int_eq(wave_client_open(&c, NULL, &e), 0);
  ck_assert_str_eq(wave_client_url(c), WAVE_DEFAULT_URL);
  wave_client_close(c);

  /* Nobody listening: a timeout after the set time, with the URL named. */
  ck_assert_int_eq(wave_client_open(&c, "ipc:///tmp/wv-test-nobody.sock", &e),
                   0);
  wave_client_set_timeout(c, 200);
  wave_status *st;
  ck_assert_int_eq(wave_status_get(c, &st, &e), WAVE_ETIMEDOUT);
  ck_assert_ptr_nonnull(strstr(e.message, "wv-test-nobody"));
  ck_assert_int_eq(wave_reduce(c, NULL, NULL, &e), WAVE_EARG);
  /* Bad chunk lists are the caller's error, found before anything is sent
   * (a request that went out would time out here instead). */
  uint32_t rows[4] = {1, 2, 3, 4};
  wave_chunk good = {rows, sizeof rows}, nodata = {NULL, 8};
  wave_reduce_request q = {.dtype = WAVE_U32, .op = WAVE_SUM,
                           .input = &nodata, .n_input = 1};
  wave_reduce_result res;
  ck_assert_int_eq(wave_reduce(c, &q, &res, &e), WAVE_EARG);
  ck_assert_ptr_nonnull(strstr(e.message, "no data"));
  q.input = &good;
  q.mask = &nodata;
  q.n_mask = 1;
  q.has_mask = 1;
  ck_assert_int_eq(wave_reduce(c, &q, &res, &e), WAVE_EARG);
  ck_assert_ptr_nonnull(strstr(e.message, "mask chunk 0"));
  /* n_input + n_mask + 1 wraps to 1: must not size the chunk array */
  q.mask = &good;
  q.n_mask = SIZE_MAX;
  ck_assert_int_eq(wave_reduce(c, &q, &res, &e), WAVE_EARG);
  ck_assert_ptr_nonnull(strstr(e.message, "too many"));
  wave_client_close(c);

  /* A server that never answers is a timeout too. */
  tc_server s;
  tc_server_start(&s, TS_SILENT);
  ck_assert_int_eq(wave_client_open(&c, s.url, &e), 0);
  wave_client_set_timeout(c, 200);
  ck_assert_int_eq(wave_status_get(c, &st, &e), WAVE_ETIMEDOUT);
  wave_client_close(c);
  tc_server_stop(&s);
}
END_TEST

TCase *tc_lib_tcase(void)
{
  TCase *t = tcase_create("lib");
  tcase_add_test(t, lib_replies);
  tcase_add_test(t, lib_status_copy);
  tcase_add_test(t, lib_offline);
  return t;
}
