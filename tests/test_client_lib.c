/* test_client_lib.c - libwaveclient without a daemon: its handling of
 * replies the real daemon never sends (wrong id, wrong kind, garbage), the
 * copies it makes of status and pack lists (ABI 1: no list or string cut
 * short), the names results point at, and the errors of a client with no
 * one listening; served by a scripted nng REP socket.
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

#include "core/sockdir.h"
#include "proto/frame.h"
#include "proto/wave.pb-c.h"
#include "wave/client.h"

/* ---- the library against a scripted server ---------------------------- */

enum { TS_ERROR, TS_BADID, TS_KIND, TS_GARBAGE, TS_STATUS, TS_SILENT,
       TS_PACKLIST, TS_NAMES, TS_FSUM };
#define TS_PACKS 40  /* pack checks in the TS_STATUS reply */

typedef struct tc_server {
  nng_socket sock;
  char url[128];
  int mode;
  unsigned calls;  /* TS_NAMES: requests answered */
  pthread_t thr;
} tc_server;

#define TS_PACK_DEVS 24  /* devices per pack in the TS_PACKLIST reply */

/* TS_FSUM: float32 fsum = 1.0 (X = 2^149: limb 2, bit 21) over one row;
 * by call: 47 bytes, an unknown flag, a value that is not X's rounding, a
 * sound answer, a sum with an exact partial.  One server thread: static
 * storage lives until the reply is packed. */
static void tc_fsum(tc_server *s, Wave__V1__Response *r,
                    Wave__V1__ReduceResult *rr)
{
  static uint8_t exact[48];
  static uint32_t one;
  memset(exact, 0, sizeof exact);
  exact[16 + 21 / 8] = 1u << (21 % 8);
  one = s->calls == 2 ? 0x3f800001u : 0x3f800000u;
  r->body_case = WAVE__V1__RESPONSE__BODY_REDUCE;
  r->reduce = rr;
  rr->dtype = WAVE__V1__DTYPE__F32;
  rr->op = s->calls == 4 ? WAVE__V1__OP__SUM : WAVE__V1__OP__FSUM;
  rr->n_bits = 1;
  rr->bits = &one;
  rr->count = rr->rows = 1;
  rr->exact.data = exact;
  rr->exact.len = s->calls == 0 ? 47 : 48;
  rr->exact_flags = s->calls == 1 ? 8u | 16u : 8u;
  s->calls++;
}

static void tc_reply(tc_server *s, const Wave__V1__Request *q)
{
  Wave__V1__Response r = WAVE__V1__RESPONSE__INIT;
  Wave__V1__Error e = WAVE__V1__ERROR__INIT;
  Wave__V1__StatusReply st = WAVE__V1__STATUS_REPLY__INIT;
  Wave__V1__ReduceResult rr = WAVE__V1__REDUCE_RESULT__INIT;
  Wave__V1__DeviceStatus d0 = WAVE__V1__DEVICE_STATUS__INIT;
  Wave__V1__DeviceStatus *devs[1] = {&d0};
  /* More packs than the old ABI's 16, and names longer than its 64. */
  Wave__V1__PackCheck pc[TS_PACKS];
  Wave__V1__PackCheck *pcs[TS_PACKS];
  char pname[TS_PACKS][16];
  char longname[200];
  Wave__V1__JobInfo ji = WAVE__V1__JOB_INFO__INIT;
  Wave__V1__PacksReply pl = WAVE__V1__PACKS_REPLY__INIT;
  Wave__V1__PackInfo pi[2];
  Wave__V1__PackInfo *pis[2] = {&pi[0], &pi[1]};
  Wave__V1__PackCheck dv[TS_PACK_DEVS];
  Wave__V1__PackCheck *dvs[TS_PACK_DEVS];
  char dname[TS_PACK_DEVS][16], devname[32];
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
  case TS_FSUM:
    tc_fsum(s, &r, &rr);
    break;
  case TS_PACKLIST:
    r.body_case = WAVE__V1__RESPONSE__BODY_PACKS;
    r.packs = &pl;
    pl.n_packs = 2;
    pl.packs = pis;
    memset(longname, 'd', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    for (int k = 0; k < TS_PACK_DEVS; k++) {
      wave__v1__pack_check__init(&dv[k]);
      snprintf(dname[k], sizeof dname[k], "dev%d", k);
      dv[k].device = dname[k];
      dv[k].ok = k != 5;
      dv[k].state = k != 5 ? "ok" : "failed";
      dv[k].detail = k != 5 ? "" : longname;
      dvs[k] = &dv[k];
    }
    for (int k = 0; k < 2; k++) {
      wave__v1__pack_info__init(&pi[k]);
      pi[k].name = k ? "second" : longname;
      pi[k].version = 3 + k;
      pi[k].description = k ? "" : "first pack";
      pi[k].n_devices = k ? 1 : TS_PACK_DEVS;
      pi[k].devices = dvs;
    }
    break;
  case TS_NAMES:
    /* Two answers per device name, a new name after each pair. */
    r.body_case = WAVE__V1__RESPONSE__BODY_JOB;
    r.job = &ji;
    snprintf(devname, sizeof devname, "dev-%u", s->calls++ / 2);
    ji.job_id = 7;
    ji.state = WAVE__V1__JOB_STATE__RUNNING;
    ji.device = devname;
    ji.waiting_pack = "pk";
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
    d0.n_packs = TS_PACKS;
    d0.packs = pcs;
    for (int k = 0; k < TS_PACKS; k++) {
      wave__v1__pack_check__init(&pc[k]);
      snprintf(pname[k], sizeof pname[k], "p%d", k);
      pc[k].pack = k ? pname[k] : "small";
      pc[k].ok = k % 2 == 0;
      pc[k].state = k % 2 == 0 ? "ok" : "failed";
      pcs[k] = &pc[k];
    }
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
    /* a framed request (wave_reduce's): its header is the Request */
    const uint8_t *hdr = (const uint8_t *)buf, *pay;
    size_t hlen = n, plen;
    if (wv_frame_split((const uint8_t *)buf, n, &hdr, &hlen, &pay, &plen) < 0)
      hlen = 0;
    Wave__V1__Request *q = wave__v1__request__unpack(NULL, hlen, hdr);
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
  s->calls = 0;
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

/* fsum's exact partial (ReduceResult.exact): a malformed one, or one whose
 * rounding is not the value, is the daemon's fault (EIO, saying why); a
 * sound one is copied whole; another op may not carry one. */
START_TEST(lib_fsum_exact)
{
  static const char *const why[] = {"not 47", "unknown bits 0x10",
                                    "not its exact partial's rounding"};
  tc_server s;
  tc_server_start(&s, TS_FSUM);
  wave_client *c;
  wave_error e = {0};
  ck_assert_int_eq(wave_client_open(&c, s.url, &e), 0);
  wave_client_set_timeout(c, 5000);
  float row = 1.0f;
  wave_chunk in = {&row, 4};
  wave_reduce_request q = {.dtype = WAVE_F32, .op = WAVE_FSUM, .input = &in,
                           .n_input = 1};
  wave_reduce_result r;
  for (int k = 0; k < 3; k++) {
    ck_assert_int_eq(wave_reduce(c, &q, &r, &e), WAVE_EIO);
    ck_assert_msg(strstr(e.message, why[k]) != NULL &&
                  strstr(e.message, "fsum") != NULL, "%d: %s", k, e.message);
  }
  ck_assert_msg(wave_reduce(c, &q, &r, &e) == 0, "%s", e.message);
  ck_assert_uint_eq(r.bits[0], 0x3f800000u);
  ck_assert_uint_eq(r.exact_bytes, WAVE_EXACT_F32_BYTES);
  ck_assert_uint_eq(r.exact_flags, WAVE_EXACT_NOT_NEGZERO);
  for (unsigned i = 0; i < r.exact_bytes; i++)
    ck_assert_uint_eq(r.exact[i], i == 18 ? 0x20 : 0);
  ck_assert_int_eq(wave_reduce(c, &q, &r, &e), WAVE_EIO);
  ck_assert_ptr_nonnull(strstr(e.message, "only fsum has one"));
  wave_client_close(c);
  tc_server_stop(&s);
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
  /* ABI 1: nothing is cut short, neither a long name nor a long list */
  ck_assert_uint_eq(strlen(st->devices[0].name), 199);
  ck_assert_str_eq(st->devices[0].backend, "cpu");
  ck_assert_str_eq(st->devices[0].fault, "");
  ck_assert_uint_eq(st->devices[0].queue_capacity, 8);
  ck_assert_uint_eq(st->devices[0].n_packs, TS_PACKS);
  ck_assert_str_eq(st->devices[0].packs[0].pack, "small");
  ck_assert_int_eq(st->devices[0].packs[0].ok, 1);
  ck_assert_str_eq(st->devices[0].packs[TS_PACKS - 1].pack, "p39");
  ck_assert_str_eq(st->devices[0].packs[TS_PACKS - 1].state, "failed");
  ck_assert_int_eq(st->devices[0].packs[TS_PACKS - 1].ok, 0);
  ck_assert_uint_eq(st->n_listen, 0);
  wave_status_free(st);
  wave_client_close(c);
  tc_server_stop(&s);
}
END_TEST

/* wave_packs_get: every device of every pack, whole names and details,
 * all in the one array wave_packs_free releases. */
START_TEST(lib_packs_copy)
{
  tc_server s;
  tc_server_start(&s, TS_PACKLIST);
  wave_client *c;
  wave_error e = {0};
  ck_assert_int_eq(wave_client_open(&c, s.url, &e), 0);
  wave_pack_info *p;
  size_t n;
  ck_assert_int_eq(wave_packs_get(c, &p, &n, &e), 0);
  ck_assert_uint_eq(n, 2);
  ck_assert_uint_eq(strlen(p[0].name), 199);
  ck_assert_str_eq(p[0].description, "first pack");
  ck_assert_uint_eq(p[0].version, 3);
  ck_assert_uint_eq(p[0].n_devices, TS_PACK_DEVS);
  for (size_t k = 0; k < TS_PACK_DEVS; k++) {
    char want[16];
    snprintf(want, sizeof want, "dev%zu", k);
    ck_assert_str_eq(p[0].devices[k].device, want);
    ck_assert_int_eq(p[0].devices[k].ok, k != 5);
  }
  ck_assert_str_eq(p[0].devices[5].state, "failed");
  ck_assert_uint_eq(strlen(p[0].devices[5].detail), 199);
  ck_assert_str_eq(p[1].name, "second");
  ck_assert_str_eq(p[1].description, "");
  ck_assert_uint_eq(p[1].n_devices, 1);
  ck_assert_str_eq(p[1].devices[0].device, "dev0");
  wave_packs_free(p);
  wave_client_close(c);
  tc_server_stop(&s);
}
END_TEST

/* A result's device is the client's one copy of that name: the same
 * pointer for the same name, valid past the call; a daemon that sends more
 * than WAVE_CLIENT_NAMES_MAX distinct names gets WAVE_EIO, not unbounded
 * memory. */
START_TEST(lib_names)
{
  tc_server s;
  tc_server_start(&s, TS_NAMES);
  wave_client *c;
  wave_error e = {0};
  ck_assert_int_eq(wave_client_open(&c, s.url, &e), 0);
  wave_job_info a, b;
  ck_assert_int_eq(wave_job_poll(c, 7, 0, &a, NULL, &e), 0);
  ck_assert_int_eq(wave_job_poll(c, 7, 0, &b, NULL, &e), 0);
  ck_assert_str_eq(a.device, "dev-0");
  ck_assert_ptr_eq(a.device, b.device);
  ck_assert_str_eq(a.waiting_pack, "pk");
  ck_assert_str_eq(a.waiting_device, "");
  ck_assert_uint_eq(b.job_id, 7);
  ck_assert_int_eq(wave_job_poll(c, 7, 0, &b, NULL, &e), 0);
  ck_assert_str_eq(b.device, "dev-1");
  ck_assert_str_eq(a.device, "dev-0");  /* still there */
  /* a new name per pair of answers, up to the bound ("pk" is one) */
  int rv = 0;
  unsigned calls = 3;
  while (rv == 0 && calls < 2u * WAVE_CLIENT_NAMES_MAX + 4) {
    rv = wave_job_poll(c, 7, 0, &b, NULL, &e);
    calls++;
  }
  ck_assert_int_eq(rv, WAVE_EIO);
  ck_assert_ptr_nonnull(strstr(e.message, "distinct names"));
  /* names dev-0 .. dev-4094 and "pk" fill the bound; dev-4095 is refused
   * on its first answer, call 8191 */
  ck_assert_uint_eq(calls, 2u * (WAVE_CLIENT_NAMES_MAX - 1) + 1);
  ck_assert_str_eq(a.device, "dev-0");
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
  char def[160];  /* the rule of core/sockdir.h: the system socket unless
                   * a daemon of this user listens in the user's place */
  ck_assert_str_eq(wave_client_url(c), wv_default_url(def, sizeof def, 1));
  if (geteuid() == 0)
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


static Suite *client_lib_suite(void)
{
  Suite *s = suite_create("client_lib");
  TCase *t = tcase_create("lib");
  tcase_add_test(t, lib_replies);
  tcase_add_test(t, lib_fsum_exact);
  tcase_add_test(t, lib_status_copy);
  tcase_add_test(t, lib_packs_copy);
  tcase_add_test(t, lib_names);
  tcase_add_test(t, lib_offline);
  suite_add_tcase(s, t);
  return s;
}

int main(void)
{
  SRunner *r = srunner_create(client_lib_suite());
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
