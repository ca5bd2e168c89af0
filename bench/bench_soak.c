/* bench_soak.c - the soak driver (bench/soak.sh): N clients on one wavedd,
 * mixed requests for a set time, every answer checked.
 *
 *   bench_soak URL SECONDS CLIENTS PACKS_DIR
 *
 * Each client is a thread with its own REQ socket and random stream, and
 * sends, by weight:
 *   45%  reductions of every dtype and op (1..2048 rows in 1..4 chunks,
 *        a mask in 1..3 chunks one time in three, random bits: NaN, inf,
 *        subnormals), checked bit for bit and by count against
 *        wv_reduce_reference;
 *   15%  hash jobs on the closed pack (32..2048 nonces, want_outputs, a
 *        random target), polled until done, the outputs checked against
 *        the 32-lane reference (wv_ref_range) and the winner count
 *        recounted from them;
 *   10%  status (a StatusReply with the devices);
 *   10%  bad requests, each answered with its own code: garbage bytes
 *        (BADREQUEST), version 3 (VERSION), dtype 9 (DTYPE), a mask of the
 *        wrong length (MASKLEN), 7 bytes of u32 rows (LENGTH);
 * and through libwaveclient (one wave_client per client thread), of
 * 1..65536 random rows, checked against wv_reduce_reference:
 *    7%  a memfd region (created, filled, registered by descriptor,
 *        reduced, unregistered, closed);
 *    7%  a file region (a temporary file passed by descriptor; the daemon
 *        reads the file at the reduction);
 *    6%  a stream (WAVE_CLIENT_STREAM=1: StreamOpen, pieces, commit).
 * Over tcp there are no regions: those draws are streams too.  With
 * WAVE_TOKEN_FILE set, every request carries its token (libwaveclient
 * reads the variable itself), so two bench_soak processes, one over ipc
 * and one over tcp with a token, are two principals on one daemon.
 * (The weights above are of 100 draws: reduce 45, hash 15, status 10,
 * bad 10, region 7, file region 7, stream 6.)
 * A transport failure or timeout (10 s) counts as an error, a wrong
 * answer as wrong.  Prints one line per kind: answers, wrong, errors,
 * mean and max latency; exit 1 when anything was wrong or lost.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "proto/wave.pb-c.h"
#include "wave/client.h"
#include "wave/error.h"
#include "workers/hash/pack.h"
#include "workers/hash/ref.h"
#include "core/reduce.h"

enum { SK_REDUCE, SK_HASH, SK_STATUS, SK_BAD, SK_REGION, SK_FILE, SK_STREAM,
       SK_KINDS };
static const char *const sk_names[SK_KINDS] = {"reduce", "hash", "status",
                                               "bad request", "region",
                                               "file region", "stream"};
static char sk_token[256];  /* WAVE_TOKEN_FILE's line, "" none */
static int sk_ipc;          /* the URL is ipc: regions can be used */

typedef struct sk_stat {
  uint64_t n, wrong, errors;
  double sum_ms, max_ms;
} sk_stat;

static const char *sk_url;
static double sk_end;
static const wv_pack *sk_closed;
static pthread_mutex_t sk_mu = PTHREAD_MUTEX_INITIALIZER;
static sk_stat sk_total[SK_KINDS];

static double sk_now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint64_t sk_rand(uint64_t *s)  /* splitmix64 */
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* One round trip; NULL on a transport failure. */
static Wave__V1__Response *sk_raw(nng_socket s, const void *buf, size_t n)
{
  nng_msg *m;
  if (nng_msg_alloc(&m, n) != 0)
    return NULL;
  memcpy(nng_msg_body(m), buf, n);
  if (nng_sendmsg(s, m, 0) != 0) {
    nng_msg_free(m);
    return NULL;
  }
  if (nng_recvmsg(s, &m, 0) != 0)
    return NULL;
  Wave__V1__Response *r =
      wave__v1__response__unpack(NULL, nng_msg_len(m), nng_msg_body(m));
  nng_msg_free(m);
  return r;
}

static Wave__V1__Response *sk_call(nng_socket s, Wave__V1__Request *rq)
{
  if (sk_token[0] != '\0')
    rq->token = sk_token;
  size_t n = wave__v1__request__get_packed_size(rq);
  uint8_t *buf = malloc(n ? n : 1);
  if (buf == NULL)
    return NULL;
  wave__v1__request__pack(rq, buf);
  Wave__V1__Response *r = sk_raw(s, buf, n);
  free(buf);
  return r;
}

/* 0 right, 1 wrong, 2 error (transport, or an error reply) */
static int sk_reduce(nng_socket s, uint64_t *rng, uint64_t id)
{
  static const int ops_int[] = {1, 2, 3, 4, 5, 6, 7}, ops_f[] = {1, 2, 3, 4};
  int dt = 1 + (int)(sk_rand(rng) % 3);
  int op = dt == 3 ? ops_f[sk_rand(rng) % 4] : ops_int[sk_rand(rng) % 7];
  uint64_t rows = 1 + sk_rand(rng) % 2048;
  uint32_t *v = malloc(rows * 4), *mk = malloc(rows * 4);
  for (uint64_t i = 0; i < rows; i++) {
    v[i] = (uint32_t)sk_rand(rng);
    mk[i] = (uint32_t)(sk_rand(rng) & 1);
  }
  int masked = sk_rand(rng) % 3 == 0;
  size_t nin = 1 + sk_rand(rng) % 4, nmk = masked ? 1 + sk_rand(rng) % 3 : 0;
  ProtobufCBinaryData in[4], mb[3];
  wv_span sin[4], smk[3];
  for (size_t k = 0, at = 0; k < nin; k++) {  /* chunk k: rows [at, end) */
    size_t end = k + 1 == nin ? rows : at + sk_rand(rng) % (rows - at + 1);
    in[k] = (ProtobufCBinaryData){(end - at) * 4, (uint8_t *)(v + at)};
    sin[k] = (wv_span){v + at, end - at};
    at = end;
  }
  for (size_t k = 0, at = 0; k < nmk; k++) {
    size_t end = k + 1 == nmk ? rows : at + sk_rand(rng) % (rows - at + 1);
    mb[k] = (ProtobufCBinaryData){(end - at) * 4, (uint8_t *)(mk + at)};
    smk[k] = (wv_span){mk + at, end - at};
    at = end;
  }
  Wave__V1__ReduceRequest rd = WAVE__V1__REDUCE_REQUEST__INIT;
  rd.dtype = dt;
  rd.op = op;
  rd.n_input = nin;
  rd.input = in;
  rd.masked = masked;
  rd.n_mask = nmk;
  rd.mask = mb;
  Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
  rq.version = 2;
  rq.id = id;
  rq.body_case = WAVE__V1__REQUEST__BODY_REDUCE;
  rq.reduce = &rd;
  Wave__V1__Response *r = sk_call(s, &rq);
  wv_reduce_job job = {.dtype = (wave_dtype)dt, .op = (wave_op)op,
                       .input = sin, .n_input = nin, .mask = smk,
                       .n_mask = nmk, .has_mask = masked, .rows = rows};
  wv_reduce_out want;
  wave_error err = {0};
  int rc = 2;
  if (wv_reduce_reference(&job, &want, &err) != 0) {
    fprintf(stderr, "soak: reference: %s\n", err.message);
    rc = 1;
  } else if (r != NULL && r->body_case == WAVE__V1__RESPONSE__BODY_REDUCE) {
    Wave__V1__ReduceResult *x = r->reduce;
    rc = x->n_bits != want.n_values || x->count != want.count ||
         x->bits[0] != want.bits[0] ||
         (want.n_values > 1 && x->bits[1] != want.bits[1]) || r->id != id;
    if (rc)
      fprintf(stderr, "soak: reduce dtype %d op %d rows %" PRIu64 ": wrong "
              "answer\n", dt, op, rows);
  } else if (r != NULL && r->body_case == WAVE__V1__RESPONSE__BODY_ERROR) {
    fprintf(stderr, "soak: reduce: %s\n", r->error->message);
  }
  if (r != NULL)
    wave__v1__response__free_unpacked(r, NULL);
  free(v);
  free(mk);
  return rc;
}

static int sk_hash(nng_socket s, uint64_t *rng, uint64_t id)
{
  Wave__V1__HashRequest hq = WAVE__V1__HASH_REQUEST__INIT;
  hq.pack = (char *)"closed";
  hq.nonce = sk_rand(rng) >> 8;
  hq.count = 32 + sk_rand(rng) % 2017;
  hq.target = sk_rand(rng) >> (sk_rand(rng) % 8);
  hq.max_winners = 16;
  hq.want_outputs = 1;
  hq.client = sk_rand(rng);
  Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
  rq.version = 2;
  rq.id = id;
  rq.body_case = WAVE__V1__REQUEST__BODY_HASH;
  rq.hash = &hq;
  Wave__V1__Response *r = sk_call(s, &rq);
  if (r == NULL || r->body_case != WAVE__V1__RESPONSE__BODY_JOB) {
    if (r != NULL && r->body_case == WAVE__V1__RESPONSE__BODY_ERROR)
      fprintf(stderr, "soak: hash: %s\n", r->error->message);
    if (r != NULL)
      wave__v1__response__free_unpacked(r, NULL);
    return 2;
  }
  uint64_t job = r->job->job_id, inst = r->job->instance;
  wave__v1__response__free_unpacked(r, NULL);
  for (int tries = 0; tries < 100; tries++) {
    Wave__V1__JobRequest jq = WAVE__V1__JOB_REQUEST__INIT;
    jq.job_id = job;
    jq.wait_ms = 5000;
    jq.instance = inst;
    rq.body_case = WAVE__V1__REQUEST__BODY_JOB;
    rq.job = &jq;
    if ((r = sk_call(s, &rq)) == NULL)
      return 2;
    if (r->body_case != WAVE__V1__RESPONSE__BODY_JOB) {
      wave__v1__response__free_unpacked(r, NULL);
      return 2;
    }
    if (r->job->state == WAVE__V1__JOB_STATE__DONE)
      break;
    if (r->job->state != WAVE__V1__JOB_STATE__QUEUED &&
        r->job->state != WAVE__V1__JOB_STATE__RUNNING) {
      wave__v1__response__free_unpacked(r, NULL);
      return 2;
    }
    wave__v1__response__free_unpacked(r, NULL);
    r = NULL;
  }
  if (r == NULL)
    return 2;
  Wave__V1__HashResult *x = r->job->result;
  uint64_t *want = malloc(hq.count * sizeof *want);
  wv_hash_mem m = {.pack = sk_closed};
  wv_ref_range(&m, hq.nonce, hq.count, want);
  uint64_t wins = 0;
  for (uint64_t i = 0; i < hq.count; i++)
    wins += want[i] < hq.target;
  int rc = x == NULL || x->n_outputs != hq.count || x->winner_count != wins ||
           x->hashes != hq.count ||
           memcmp(x->outputs, want, hq.count * sizeof *want) != 0;
  if (rc)
    fprintf(stderr, "soak: hash nonce %" PRIu64 " count %" PRIu64 ": wrong "
            "answer\n", hq.nonce, hq.count);
  free(want);
  wave__v1__response__free_unpacked(r, NULL);
  return rc;
}

static int sk_status(nng_socket s, uint64_t id)
{
  Wave__V1__StatusRequest st = WAVE__V1__STATUS_REQUEST__INIT;
  Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
  rq.version = 2;
  rq.id = id;
  rq.body_case = WAVE__V1__REQUEST__BODY_STATUS;
  rq.status = &st;
  Wave__V1__Response *r = sk_call(s, &rq);
  if (r == NULL)
    return 2;
  int rc = r->body_case != WAVE__V1__RESPONSE__BODY_STATUS ||
           r->status->n_devices == 0 || r->id != id;
  wave__v1__response__free_unpacked(r, NULL);
  return rc;
}

static int sk_bad(nng_socket s, uint64_t *rng, uint64_t id)
{
  uint32_t rows[4] = {1, 2, 3, 4}, mk[3] = {1, 1, 1};
  ProtobufCBinaryData in = {16, (uint8_t *)rows}, mb = {12, (uint8_t *)mk};
  Wave__V1__ReduceRequest rd = WAVE__V1__REDUCE_REQUEST__INIT;
  rd.dtype = 1;
  rd.op = 1;
  rd.n_input = 1;
  rd.input = &in;
  Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
  rq.version = 2;
  rq.id = id;
  rq.body_case = WAVE__V1__REQUEST__BODY_REDUCE;
  rq.reduce = &rd;
  int want;
  Wave__V1__Response *r;
  switch (sk_rand(rng) % 5) {
  case 0: {
    static const uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x12};
    want = WAVE_EBADREQUEST;
    r = sk_raw(s, junk, sizeof junk);
    break;
  }
  case 1: rq.version = 3; want = WAVE_EVERSION; r = sk_call(s, &rq); break;
  case 2: rd.dtype = 9; want = WAVE_EDTYPE; r = sk_call(s, &rq); break;
  case 3:
    rd.masked = 1;
    rd.n_mask = 1;
    rd.mask = &mb;
    want = WAVE_EMASKLEN;
    r = sk_call(s, &rq);
    break;
  default: in.len = 7; want = WAVE_ELENGTH; r = sk_call(s, &rq); break;
  }
  if (r == NULL)
    return 2;
  int rc = r->body_case != WAVE__V1__RESPONSE__BODY_ERROR ||
           r->error->code != (uint32_t)want;
  if (rc)
    fprintf(stderr, "soak: a bad request (want %s) got another answer\n",
            wave_errname(want));
  wave__v1__response__free_unpacked(r, NULL);
  return rc;
}

/* A reduction through libwaveclient, of kind SK_REGION, SK_FILE or
 * SK_STREAM: 0 right, 1 wrong, 2 error. */
static int sk_bulk(wave_client *c, int kind, uint64_t *rng)
{
  static const int ops_int[] = {1, 2, 3, 4, 5, 6, 7}, ops_f[] = {1, 2, 3, 4};
  int dt = 1 + (int)(sk_rand(rng) % 3);
  int op = dt == 3 ? ops_f[sk_rand(rng) % 4] : ops_int[sk_rand(rng) % 7];
  size_t rows = 1 + sk_rand(rng) % 65536, bytes = rows * 4;
  uint32_t *v = malloc(bytes);
  for (size_t i = 0; i < rows; i++)
    v[i] = (uint32_t)sk_rand(rng);
  wave_error err = {0};
  wave_reduce_result res;
  wave_region *r = NULL;
  int rc = 2, fd = -1;
  if (kind == SK_REGION) {
    if (wave_region_create(&r, bytes, "soak", &err) == 0) {
      memcpy(wave_region_data(r), v, bytes);
      if (wave_region_register(c, r, &err) != 0) {
        wave_region_close(r);
        r = NULL;
      }
    }
  } else if (kind == SK_FILE) {
    char path[] = "/tmp/wave-soak-file.XXXXXX";
    fd = mkstemp(path);
    if (fd >= 0) {
      unlink(path);
      if (write(fd, v, bytes) != (ssize_t)bytes ||
          wave_region_file_fd(c, fd, bytes, "soakf", &r, &err) != 0)
        r = NULL;
    }
  }
  int got;
  wave_reduce_request rq = {.dtype = (wave_dtype)dt, .op = (wave_op)op};
  wave_chunk ch = {v, bytes};
  if (kind == SK_STREAM) {
    rq.input = &ch;
    rq.n_input = 1;
    got = wave_reduce(c, &rq, &res, &err);
  } else if (r != NULL) {
    wave_extent ex = {r, 0, bytes};
    wave_region_reduce rr = {.dtype = (wave_dtype)dt, .op = (wave_op)op,
                             .input = &ex, .n_input = 1};
    got = wave_reduce_region(c, &rr, &res, &err);
  } else {
    got = err.code ? err.code : WAVE_EIO;
  }
  wv_span sp = {v, rows};
  wv_reduce_job job = {.dtype = (wave_dtype)dt, .op = (wave_op)op,
                       .input = &sp, .n_input = 1, .rows = rows};
  wv_reduce_out want;
  wave_error rerr = {0};
  if (got != 0) {
    fprintf(stderr, "soak: %s: %s\n", sk_names[kind], err.message);
  } else if (wv_reduce_reference(&job, &want, &rerr) != 0) {
    fprintf(stderr, "soak: reference: %s\n", rerr.message);
    rc = 1;
  } else {
    rc = res.n_values != want.n_values || res.count != want.count ||
         res.bits[0] != want.bits[0] ||
         (want.n_values > 1 && res.bits[1] != want.bits[1]);
    if (rc)
      fprintf(stderr, "soak: %s dtype %d op %d rows %zu: wrong answer\n",
              sk_names[kind], dt, op, rows);
  }
  if (r != NULL) {
    wave_error e2 = {0};
    if (wave_region_unregister(c, r, &e2) != 0 && rc == 0) {
      fprintf(stderr, "soak: unregister: %s\n", e2.message);
      rc = 2;
    }
    wave_region_close(r);
  }
  if (fd >= 0)
    close(fd);
  free(v);
  return rc;
}

static void *sk_client(void *arg)
{
  uint64_t rng = 0x5eed0000ull + (uint64_t)(uintptr_t)arg, id = 1;
  sk_stat st[SK_KINDS];
  memset(st, 0, sizeof st);
  nng_socket s;
  wave_client *c = NULL;
  wave_error cerr = {0};
  if (wave_client_open(&c, sk_url, &cerr) != 0) {
    fprintf(stderr, "soak: %s\n", cerr.message);
    st[SK_STREAM].errors++;
  } else if (nng_req0_open(&s) != 0 || nng_dial(s, sk_url, NULL, 0) != 0) {
    fprintf(stderr, "soak: cannot dial %s\n", sk_url);
    st[SK_STATUS].errors++;
  } else {
    nng_socket_set_ms(s, NNG_OPT_RECVTIMEO, 10000);
    nng_socket_set_ms(s, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
    while (sk_now() < sk_end) {
      uint64_t w = sk_rand(&rng) % 100;
      int k = w < 45 ? SK_REDUCE : w < 60 ? SK_HASH : w < 70 ? SK_STATUS
              : w < 80 ? SK_BAD : w < 87 ? SK_REGION : w < 94 ? SK_FILE
                                                               : SK_STREAM;
      if (!sk_ipc && (k == SK_REGION || k == SK_FILE))
        k = SK_STREAM;
      double t0 = sk_now();
      int rc = k == SK_REDUCE ? sk_reduce(s, &rng, id)
               : k == SK_HASH ? sk_hash(s, &rng, id)
               : k == SK_STATUS ? sk_status(s, id)
               : k == SK_BAD ? sk_bad(s, &rng, id)
                             : sk_bulk(c, k, &rng);
      double ms = (sk_now() - t0) * 1e3;
      id++;
      st[k].n++;
      st[k].wrong += rc == 1;
      st[k].errors += rc == 2;
      st[k].sum_ms += ms;
      if (ms > st[k].max_ms)
        st[k].max_ms = ms;
    }
    nng_close(s);
  }
  if (c != NULL)
    wave_client_close(c);
  pthread_mutex_lock(&sk_mu);
  for (int k = 0; k < SK_KINDS; k++) {
    sk_total[k].n += st[k].n;
    sk_total[k].wrong += st[k].wrong;
    sk_total[k].errors += st[k].errors;
    sk_total[k].sum_ms += st[k].sum_ms;
    if (st[k].max_ms > sk_total[k].max_ms)
      sk_total[k].max_ms = st[k].max_ms;
  }
  pthread_mutex_unlock(&sk_mu);
  return NULL;
}

int main(int argc, char **argv)
{
  if (argc != 5) {
    fprintf(stderr, "usage: bench_soak URL SECONDS CLIENTS PACKS_DIR\n");
    return 2;
  }
  sk_url = argv[1];
  sk_ipc = strncmp(sk_url, "ipc://", 6) == 0;
  setenv("WAVE_CLIENT_STREAM", "1", 1);  /* libwaveclient's reduces stream */
  const char *tf = getenv("WAVE_TOKEN_FILE");
  if (tf != NULL && tf[0] != '\0') {
    FILE *f = fopen(tf, "r");
    if (f == NULL || fgets(sk_token, sizeof sk_token, f) == NULL) {
      fprintf(stderr, "soak: cannot read the token file %s\n", tf);
      return 2;
    }
    fclose(f);
    sk_token[strcspn(sk_token, "\r\n")] = '\0';
  }
  double secs = atof(argv[2]);
  int n = atoi(argv[3]);
  char path[1024];
  snprintf(path, sizeof path, "%s/closed.yaml", argv[4]);
  wv_pack *p;
  wave_error err = {0};
  if (wv_pack_load_file(path, &p, &err) != 0) {
    fprintf(stderr, "soak: %s\n", err.message);
    return 2;
  }
  sk_closed = p;
  if (n < 1 || n > 4096 || secs <= 0)
    return 2;
  pthread_t *t = calloc((size_t)n, sizeof *t);
  double t0 = sk_now();
  sk_end = t0 + secs;
  for (int i = 0; i < n; i++)
    pthread_create(&t[i], NULL, sk_client, (void *)(uintptr_t)i);
  for (int i = 0; i < n; i++)
    pthread_join(t[i], NULL);
  double wall = sk_now() - t0;
  uint64_t all = 0, bad = 0;
  printf("%-12s %10s %7s %7s %9s %9s\n", "kind", "answers", "wrong", "errors",
         "mean ms", "max ms");
  for (int k = 0; k < SK_KINDS; k++) {
    sk_stat *s = &sk_total[k];
    printf("%-12s %10" PRIu64 " %7" PRIu64 " %7" PRIu64 " %9.2f %9.1f\n",
           sk_names[k], s->n, s->wrong, s->errors,
           s->n ? s->sum_ms / (double)s->n : 0.0, s->max_ms);
    all += s->n;
    bad += s->wrong + s->errors;
  }
  printf("%d clients, %.0f s: %" PRIu64 " answers checked (%.0f/s), %" PRIu64
         " wrong or lost\n", n, wall, all, (double)all / wall, bad);
  wv_pack_free(p);
  free(t);
  return bad ? 1 : 0;
}
