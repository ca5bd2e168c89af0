/* bench_fair.c - a small reduction's latency behind another client's big
 * ones (daemon/exec/device.c: reductions take turns by client).
 *
 * One wavedd with one CPU device.  The heavy client (ipc, principal
 * "uid:N") keeps --heavy sums of --mib MiB in flight from as many threads
 * sharing one wave_client, over a shared-memory region, so that the rows
 * travel in no message and the device, not the transfer, is what they
 * wait for.  The light client (tcp, principal "pipe:N": another client)
 * times 1-row sums one after the other, first with the daemon idle, then
 * while the heavy client runs.  It prints both latencies (median, 90th
 * percentile), their ratio, and how long one heavy sum takes on the
 * device: with turns by client a light sum waits for at most the heavy
 * sum running when it arrives; first in, first out it waited for every
 * heavy sum queued before it.
 *
 * Before the heavy phase it times --lone sums of the region one after the
 * other from one thread with nothing else queued (a lone big job: its
 * rate must not drop when the daemon cuts big reductions into slices,
 * daemon/rq/slices.h).  --dtype f32 fills the region with floats and
 * makes every heavy and lone sum a float sum (whose slices are pieces of
 * the exact tree); the default is u32.
 *
 * --chunks N (issue 35, finding 2): instead of the region sums, the heavy
 * client sends ONE raw protobuf ReduceRequest (nng and protobuf-c, as
 * tests/test_stop.c does: libwaveclient's decode budget refuses messages
 * of 16,384+ chunks) of N one-row chunks, all 1 (--dtype f64 or u32), over
 * ipc.  The light client times 1-row sums from before the send until the
 * reply; they are split at the heavy job's estimated start on the device
 * (its reply's time minus its `seconds`), so the wait behind decoding and
 * the wait behind the device show apart, and go on for BF_TAIL_US after
 * the reply (the daemon frees the big request then, on a decode thread).  One slice's time is the job's
 * device seconds over its slices, counted by daemon/rq/slices.c's rule for
 * reduce_slice_rows 262144 (set in the config): a float sum of one-row
 * chunks runs 256 whole chunks a slice, an order-free op 4096.
 *
 * --prio 1 (issue 37): the heavy sums ask for `low` and the light ones,
 * from a second ipc client (the daemon's priority.high_allow names this
 * uid), for `high`: the device serves the high sum before every low one
 * queued, and a low sum yields to it between slices.
 *
 * --hash N (issue 37): instead of all that, hash jobs on the "small" pack
 * over one CPU device whose pieces are --batch nonces.  N `high` jobs of
 * one piece each, one after the other, first with the daemon idle, then
 * behind a `low` job of 2^40 nonces from another client on the same
 * device.  A job's clock (its result's seconds) starts with its first
 * piece, so its round trip less that clock is its wait for the first
 * piece (plus the submit and the last poll's reply, the same idle or
 * loaded).  One piece's time is the idle jobs' median device time (their
 * share's seconds), and the low job's pieces are timed too, in the same
 * phase (its clock less the high jobs' between two polls).  Behind the
 * low job each high job is sent after a pause drawn evenly from [0, one
 * piece), so that it arrives anywhere in a low piece.  Printed:
 * the waits idle and loaded (median, p90, max) in pieces: the device
 * takes the high job at the low job's next piece, so a loaded wait is at
 * most one piece more than an idle one.
 *
 *   bench_fair [--iters N] [--heavy N] [--mib N] [--lone N] [--dtype u32|f32]
 *              [--prio 0|1] [--chunks N [--dtype u32|f64]]
 *   bench_fair --hash N [--batch NONCES]
 *   (defaults: 400, 16, 16, 20, u32, 0, 0; --batch 65536)
 */
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "proto/wave.pb-c.h"
#include "wave/client.h"

#ifndef WAVE_SOURCE_DIR
#define WAVE_SOURCE_DIR "."
#endif

#define BF_WARMUP 50
#define BF_TAIL_US 500000.0  /* --chunks: light sums after the big reply */

static double bf_now_us(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static int bf_cmp(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void bf_die(const char *what, const wave_error *err)
{
  fprintf(stderr, "bench_fair: %s%s%s\n", what, err ? ": " : "",
          err ? err->message : "");
  exit(1);
}

static int bf_free_port(void)
{
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof sa;
  if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
      getsockname(fd, (struct sockaddr *)&sa, &len) != 0)
    bf_die("no loopback port", NULL);
  int port = ntohs(sa.sin_port);
  close(fd);
  return port;
}

/* Start wavedd on cfg and wait for its READY=1. */
static pid_t bf_start(const char *dir, const char *cfg)
{
  char notify[100];
  snprintf(notify, sizeof notify, "%.80s/notify", dir);
  int ns = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", notify);
  if (ns < 0 || bind(ns, (struct sockaddr *)&sa, sizeof sa) != 0)
    bf_die("notify socket", NULL);
  char bin[512];
  const char *bd = getenv("WAVE_BINARY_DIR");
  snprintf(bin, sizeof bin, "%s", WAVEDD_PATH);
  if (bd != NULL)
    snprintf(bin, sizeof bin, "%s/wavedd", bd);
  pid_t pid = fork();
  if (pid == 0) {
    setenv("NOTIFY_SOCKET", notify, 1);
    execl(bin, bin, "--config", cfg, "--foreground", (char *)NULL);
    _exit(127);
  }
  for (int i = 0; i < 600; i++) {
    struct pollfd p = {.fd = ns, .events = POLLIN};
    if (poll(&p, 1, 100) == 1) {
      char buf[64] = {0};
      if (recv(ns, buf, sizeof buf - 1, 0) > 0 && strstr(buf, "READY=1")) {
        close(ns);
        return pid;
      }
    }
    if (waitpid(pid, NULL, WNOHANG) == pid)
      break;
  }
  bf_die("wavedd did not start", NULL);
  return -1;
}

/* ---- the heavy client --------------------------------------------------- */

typedef struct bf_heavy {
  wave_client *c;
  wave_region *r;
  wave_dtype dtype;
  wave_priority prio;
  _Atomic int stop;
  _Atomic unsigned long done, busy;
  pthread_mutex_t mu;
  double *dev_s;   /* device seconds of the sums done (under mu) */
  size_t n_dev, cap_dev;
} bf_heavy;

static void *bf_heavy_main(void *arg)
{
  bf_heavy *h = arg;
  wave_extent ex = {h->r, 0, wave_region_size(h->r)};
  wave_region_reduce rq = {.dtype = h->dtype, .op = WAVE_SUM, .input = &ex,
                           .n_input = 1, .priority = h->prio};
  while (!atomic_load(&h->stop)) {
    wave_reduce_result res;
    wave_error err = {0};
    int rc = wave_reduce_region(h->c, &rq, &res, &err);
    if (rc == WAVE_EBUSY) {  /* the queue is full: that is the load */
      atomic_fetch_add(&h->busy, 1);
      struct timespec nap = {0, 200 * 1000};
      nanosleep(&nap, NULL);
      continue;
    }
    if (rc != 0)
      bf_die("heavy sum", &err);
    atomic_fetch_add(&h->done, 1);
    pthread_mutex_lock(&h->mu);
    if (h->n_dev < h->cap_dev)
      h->dev_s[h->n_dev++] = res.seconds;
    pthread_mutex_unlock(&h->mu);
  }
  return NULL;
}

/* n sums of the region one after the other, nothing else queued: each
 * one's time on the device (dev[]) and its round trip (wall[]), in us. */
static void bf_lone(bf_heavy *h, double *dev, double *wall, unsigned n)
{
  wave_extent ex = {h->r, 0, wave_region_size(h->r)};
  wave_region_reduce rq = {.dtype = h->dtype, .op = WAVE_SUM, .input = &ex,
                           .n_input = 1};
  for (unsigned i = 0; i < n; i++) {
    wave_reduce_result res;
    wave_error err = {0};
    double t0 = bf_now_us();
    if (wave_reduce_region(h->c, &rq, &res, &err) != 0)
      bf_die("lone sum", &err);
    wall[i] = bf_now_us() - t0;
    dev[i] = res.seconds * 1e6;
  }
}

static void bf_stats(double *us, size_t n, double *med, double *p90)
{
  qsort(us, n, sizeof *us, bf_cmp);
  *med = us[n / 2];
  *p90 = us[n * 9 / 10];
}

/* The lone phase: its medians printed. */
static void bf_lone_report(bf_heavy *h, unsigned n, unsigned mib)
{
  double *dev = calloc(n, sizeof *dev), *wall = calloc(n, sizeof *wall);
  double dm, d90, wm, w90;
  bf_lone(h, dev, wall, 1);  /* warm-up */
  bf_lone(h, dev, wall, n);
  bf_stats(dev, n, &dm, &d90);
  bf_stats(wall, n, &wm, &w90);
  printf("lone %s sum (%u alone)  device median %9.1f us  %7.0f MiB/s, "
         "round trip median %9.1f us\n", h->dtype == WAVE_F32 ? "f32" : "u32",
         n, dm, (double)mib / (dm * 1e-6), wm);
  free(dev);
  free(wall);
}

/* ---- the light client ---------------------------------------------------- */

/* n 1-row sums, one after the other; their round trips in us[]. */
/* The light sum's device time (its result's seconds, us), of the last
 * bf_light call's last sum. */
static double bf_light_dev_us;

static void bf_light(wave_client *c, double *us, size_t n, int keep,
                     wave_priority prio)
{
  uint32_t v = 7;
  wave_chunk ch = {&v, sizeof v};
  wave_reduce_request rq = {.dtype = WAVE_U32, .op = WAVE_SUM, .input = &ch,
                            .n_input = 1, .priority = prio};
  for (size_t i = 0; i < n; i++) {
    wave_reduce_result res;
    wave_error err = {0};
    double t0 = bf_now_us();
    if (wave_reduce(c, &rq, &res, &err) != 0)
      bf_die("light sum", &err);
    double t1 = bf_now_us();
    if (res.bits[0] != 7)
      bf_die("light sum: wrong answer", NULL);
    if (keep)
      us[i] = t1 - t0;
    bf_light_dev_us = res.seconds * 1e6;
  }
}

/* ---- --chunks: one raw message of many one-row chunks ------------------- */

typedef struct bf_raw {
  uint8_t *msg;      /* the packed Request */
  size_t len;
  unsigned chunks;
  wave_dtype dtype;
  nng_socket s;
  _Atomic int done;
  double t_send, t_reply, dev_s;  /* us, us, s */
} bf_raw;

/* The Request: chunks one-row chunks of 1 (u32 or f64), sum. */
static void bf_raw_build(bf_raw *r)
{
  size_t w = r->dtype == WAVE_F64 ? 8 : 4;
  uint8_t *rows = malloc((size_t)r->chunks * w);
  ProtobufCBinaryData *in = malloc((size_t)r->chunks * sizeof *in);
  if (rows == NULL || in == NULL)
    bf_die("no memory for the chunks", NULL);
  double one = 1.0;
  uint32_t one32 = 1;
  for (size_t i = 0; i < r->chunks; i++) {
    memcpy(rows + i * w, w == 8 ? (void *)&one : (void *)&one32, w);
    in[i] = (ProtobufCBinaryData){w, rows + i * w};
  }
  Wave__V1__ReduceRequest rr = WAVE__V1__REDUCE_REQUEST__INIT;
  rr.dtype = w == 8 ? WAVE__V1__DTYPE__F64 : WAVE__V1__DTYPE__U32;
  rr.op = WAVE__V1__OP__SUM;
  rr.n_input = r->chunks;
  rr.input = in;
  Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
  rq.version = 2;
  rq.id = 35;
  rq.body_case = WAVE__V1__REQUEST__BODY_REDUCE;
  rq.reduce = &rr;
  r->len = wave__v1__request__get_packed_size(&rq);
  r->msg = malloc(r->len);
  if (r->msg == NULL)
    bf_die("no memory for the message", NULL);
  wave__v1__request__pack(&rq, r->msg);
  free(in);
  free(rows);
}

/* Send the message, wait for its reply, check the sum (chunks). */
static void *bf_raw_main(void *arg)
{
  bf_raw *r = arg;
  r->t_send = bf_now_us();
  int rv = nng_send(r->s, r->msg, r->len, 0);
  void *buf = NULL;
  size_t n = 0;
  if (rv == 0)
    rv = nng_recv(r->s, &buf, &n, NNG_FLAG_ALLOC);
  r->t_reply = bf_now_us();
  if (rv != 0) {
    fprintf(stderr, "bench_fair: the many-chunk request: %s\n",
            nng_strerror(rv));
    exit(1);
  }
  Wave__V1__Response *a = wave__v1__response__unpack(NULL, n, buf);
  nng_free(buf, n);
  if (a == NULL || a->body_case != WAVE__V1__RESPONSE__BODY_REDUCE) {
    fprintf(stderr, "bench_fair: the many-chunk request: %s\n",
            a != NULL && a->body_case == WAVE__V1__RESPONSE__BODY_ERROR
                ? a->error->message : "no result");
    exit(1);
  }
  double want = (double)r->chunks, got;
  if (r->dtype == WAVE_F64 && a->reduce->n_bits64 == 1)
    memcpy(&got, &a->reduce->bits64[0], sizeof got);
  else if (r->dtype != WAVE_F64 && a->reduce->n_bits == 1)
    got = (double)a->reduce->bits[0];
  else
    got = -1;
  if (got != want)
    bf_die("the many-chunk request: wrong answer", NULL);
  r->dev_s = a->reduce->seconds;
  wave__v1__response__free_unpacked(a, NULL);
  atomic_store(&r->done, 1);
  return NULL;
}

static void bf_line(const char *what, double *us, size_t n)
{
  if (n == 0) {
    printf("%-30s (none)\n", what);
    return;
  }
  qsort(us, n, sizeof *us, bf_cmp);
  printf("%-30s %6zu sums  median %8.1f us  p90 %8.1f  p99 %8.1f  "
         "p99.9 %8.1f  max %8.1f us\n", what, n, us[n / 2], us[n * 9 / 10],
         us[n * 99 / 100], us[n * 999 / 1000], us[n - 1]);
}

/* The --chunks run: idle sums, then sums while the one raw job runs. */
static void bf_chunks(wave_client *light, const char *ipc, unsigned iters,
                      unsigned chunks, wave_dtype dtype)
{
  bf_raw r = {.chunks = chunks, .dtype = dtype};
  bf_raw_build(&r);
  int rv;
  if ((rv = nng_req0_open(&r.s)) != 0 ||
      (rv = nng_socket_set_ms(r.s, NNG_OPT_REQ_RESENDTIME,
                              NNG_DURATION_INFINITE)) != 0 ||
      (rv = nng_dial(r.s, ipc, NULL, 0)) != 0) {
    fprintf(stderr, "bench_fair: raw dial %s: %s\n", ipc, nng_strerror(rv));
    exit(1);
  }
  double *idle = calloc(iters, sizeof *idle);
  bf_light(light, idle, BF_WARMUP, 0, WAVE_PRIORITY_NORMAL);
  bf_light(light, idle, iters, 1, WAVE_PRIORITY_NORMAL);
  size_t cap = 1u << 22, n = 0;
  double *t0 = malloc(cap * sizeof *t0), *lat = malloc(cap * sizeof *lat);
  double *ldev = malloc(cap * sizeof *ldev);  /* each one's device time */
  pthread_t th;
  pthread_create(&th, NULL, bf_raw_main, &r);
  double tail_end = 0;
  while (n < cap) {
    if (atomic_load(&r.done) && tail_end == 0)
      tail_end = r.t_reply + BF_TAIL_US;
    if (tail_end != 0 && bf_now_us() > tail_end)
      break;
    t0[n] = bf_now_us();
    bf_light(light, &lat[n], 1, 1, WAVE_PRIORITY_NORMAL);
    ldev[n] = bf_light_dev_us;
    n++;
  }
  pthread_join(th, NULL);
  double on_dev = r.t_reply - r.dev_s * 1e6;
  double *dec = malloc(n * sizeof *dec), *dev = malloc(n * sizeof *dev),
         *all = malloc(n * sizeof *all), *aft = malloc(n * sizeof *aft);
  size_t nd = 0, nv = 0, na = 0, nt = 0;
  for (size_t i = 0; i < n; i++) {
    if (t0[i] < r.t_send)
      continue;
    all[na++] = lat[i];
    if (t0[i] + lat[i] <= on_dev)
      dec[nd++] = lat[i];
    else if (t0[i] < r.t_reply)
      dev[nv++] = lat[i];
    else
      aft[nt++] = lat[i];
  }
  uint64_t per = dtype == WAVE_F64 ? 256 : 262144 / 64;
  uint64_t slices = (chunks + per - 1) / per;
  double slice_us = r.dev_s * 1e6 / (double)slices;
  printf("bench_fair --chunks: one raw ReduceRequest of %u one-row %s chunks "
         "(%zu bytes) over ipc; light 1-row u32 sums over tcp\n", chunks,
         dtype == WAVE_F64 ? "f64" : "u32", r.len);
  printf("heavy: round trip %.3f s = before the device %.3f s (receive + "
         "decode + queue) + on the device %.3f s in %llu slices of %.1f us\n",
         (r.t_reply - r.t_send) * 1e-6, (on_dev - r.t_send) * 1e-6, r.dev_s,
         (unsigned long long)slices, slice_us);
  for (int top = 0; top < 6; top++) {  /* when the slowest waits began */
    size_t w = n;
    for (size_t i = 0; i < n; i++)
      if (t0[i] >= r.t_send && lat[i] > 0 && (w == n || lat[i] > lat[w]))
        w = i;
    if (w == n)
      break;
    printf("slowest %d: %.1f us (%.1f us of it on the device), sent at "
           "+%.3f s (the device from +%.3f s, the reply at +%.3f s)\n",
           top + 1, lat[w], ldev[w], (t0[w] - r.t_send) * 1e-6,
           (on_dev - r.t_send) * 1e-6, (r.t_reply - r.t_send) * 1e-6);
    lat[w] = -lat[w];
  }
  for (size_t i = 0; i < n; i++)
    lat[i] = lat[i] < 0 ? -lat[i] : lat[i];
  double im = (qsort(idle, iters, sizeof *idle, bf_cmp), idle[iters / 2]);
  bf_line("light idle", idle, iters);
  bf_line("light loaded (all)", all, na);
  bf_line("  ended before the device", dec, nd);
  bf_line("  ended while on the device", dev, nv);
  bf_line("  sent after the reply (0.5 s)", aft, nt);
  double bound = 2 * im + slice_us;
  printf("target <= 2 x idle median + one slice = %.1f us: loaded median "
         "%.2fx of it, max %.2fx\n", bound,
         na ? all[na / 2] / bound : 0.0, na ? all[na - 1] / bound : 0.0);
  /* the host's own noise reaches the idle tail too: each loaded quantile
   * against 2 x the same idle quantile + one slice (both sorted above) */
  static const double qs[] = {0.5, 0.9, 0.99, 0.999, 1.0};
  printf("loaded / (2 x idle + one slice), quantile for quantile:");
  for (int i = 0; i < 5 && na > 0; i++) {
    size_t li = qs[i] >= 1.0 ? na - 1 : (size_t)(qs[i] * (double)na),
           ii = qs[i] >= 1.0 ? iters - 1 : (size_t)(qs[i] * (double)iters);
    printf("  %s %.2f", i == 4 ? "max" : i == 3 ? "p99.9" : i == 2 ? "p99"
                                       : i == 1 ? "p90" : "p50",
           all[li] / (2 * idle[ii] + slice_us));
  }
  printf("\n");
  nng_close(r.s);
  free(r.msg);
  free(idle);
  free(t0);
  free(lat);
  free(ldev);
  free(dec);
  free(dev);
  free(all);
  free(aft);
}

typedef struct bf_opts {
  unsigned iters, heavy, mib, lone, chunks;
  wave_dtype dtype;
  int prio;
  unsigned hash;        /* --hash N: the hash jobs' mode (0: off) */
  uint64_t batch;
} bf_opts;

/* ---- --hash: a high hash job behind a low one ---------------------------- */

/* One high job of count nonces from c, waited for: its wait for its first
 * piece (the round trip less the job's own clock) and that clock, in us. */
static void bf_hash_one(wave_client *c, uint64_t nonce, uint64_t count,
                        double *wait, double *ran, double *dev)
{
  wave_hash_request rq = {.pack = "small", .nonce = nonce, .count = count,
                          .priority = WAVE_PRIORITY_HIGH};
  wave_error err = {0};
  uint64_t id;
  double t0 = bf_now_us();
  if (wave_hash_submit(c, &rq, &id, &err) != 0)
    bf_die("high job", &err);
  wave_job_info info;
  wave_hash_result res;
  for (;;) {
    memset(&res, 0, sizeof res);
    if (wave_job_poll(c, id, 10000, &info, &res, &err) != 0)
      bf_die("high job poll", &err);
    if (info.state == WAVE_JOB_DONE)
      break;
    if (info.state == WAVE_JOB_FAILED || info.state == WAVE_JOB_CANCELLED)
      bf_die("high job ended", &info.error);
  }
  double t1 = bf_now_us();
  *ran = res.seconds * 1e6;
  *wait = t1 - t0 - *ran;
  *dev = res.n_shares == 1 ? res.shares[0].seconds * 1e6 : 0;
  wave_hash_result_free(&res);
}

/* n high jobs one after the other, each after a pause drawn evenly from
 * [0, pause_us) (0: none): behind the low job, a job sent at once after
 * the last one would always find a low piece just begun. */
static void bf_hash_phase(wave_client *c, unsigned n, uint64_t batch,
                          double pause_us, double *wait, double *ran,
                          double *dev)
{
  for (unsigned i = 0; i < n; i++) {
    if (pause_us >= 1)
      usleep((useconds_t)(pause_us * (double)rand() / ((double)RAND_MAX + 1)));
    bf_hash_one(c, (uint64_t)i * batch, batch, &wait[i], &ran[i], &dev[i]);
  }
}

static void bf_hash_print(const char *what, double *wait, unsigned n,
                          double piece)
{
  double m, p90;
  bf_stats(wait, n, &m, &p90);
  printf("%-28s median %9.1f us (%5.2f pieces)  p90 %5.2f  max %5.2f\n",
         what, m, m / piece, p90 / piece, wait[n - 1] / piece);
}

static int bf_hash_main(const bf_opts *o, const char *ipc)
{
  unsigned n = o->hash;
  wave_error err = {0};
  wave_client *hi, *lo;
  if (wave_client_open(&hi, ipc, &err) != 0 ||
      wave_client_open(&lo, ipc, &err) != 0)
    bf_die("connect", &err);
  double *idle = calloc(n, sizeof *idle), *loaded = calloc(n, sizeof *loaded),
         *ran = calloc(n, sizeof *ran), *dev = calloc(n, sizeof *dev);
  srand(37);
  bf_hash_phase(hi, n < 5 ? n : 5, o->batch, 0, idle, ran, dev);  /* warm */
  bf_hash_phase(hi, n, o->batch, 0, idle, ran, dev);
  double piece, clock, p90;
  bf_stats(dev, n, &piece, &p90);
  bf_stats(ran, n, &clock, &p90);

  wave_hash_request low = {.pack = "small", .nonce = 1ull << 50,
                           .count = 1ull << 40,
                           .priority = WAVE_PRIORITY_LOW};
  uint64_t id;
  wave_job_info info;
  if (wave_hash_submit(lo, &low, &id, &err) != 0)
    bf_die("low job", &err);
  do {  /* until its pieces run */
    if (wave_job_poll(lo, id, 0, &info, NULL, &err) != 0)
      bf_die("low job poll", &err);
    usleep(1000);
  } while (info.done == 0);
  wave_job_info l0 = info;
  bf_hash_phase(hi, n, o->batch, piece, loaded, ran, dev);
  if (wave_job_cancel(lo, id, &info, &err) != 0)
    bf_die("low job cancel", &err);
  /* the low job's pieces meanwhile: its clock less the high jobs' */
  double high_s = 0;
  for (unsigned i = 0; i < n; i++)
    high_s += ran[i] * 1e-6;
  double low_pieces = (double)(info.done - l0.done) / (double)o->batch;
  double low_piece = low_pieces > 0
      ? (info.seconds - l0.seconds - high_s) / low_pieces * 1e6 : 0;

  printf("bench_fair --hash: pack small, one CPU device (1 thread), "
         "%" PRIu64 " nonces a piece; %u high jobs of one piece, idle, "
         "then behind a low job of 2^40 nonces (%" PRIu64 " done by then)\n",
         o->batch, n, info.done);
  printf("one piece (idle job's device time) median %9.1f us (its job's "
         "clock %.1f us)\n", piece, clock);
  bf_hash_print("high wait, idle", idle, n, piece);
  bf_hash_print("high wait, behind low", loaded, n, piece);
  double im, lm, x;
  bf_stats(idle, n, &im, &x);
  bf_stats(loaded, n, &lm, &x);
  printf("loaded - idle wait            median %.2f pieces, max %.2f "
         "pieces\n", (lm - im) / piece, (loaded[n - 1] - im) / piece);
  printf("a low piece meanwhile    mean %9.1f us (%.0f pieces); max loaded "
         "wait %.2f of those\n", low_piece, low_pieces,
         low_piece > 0 ? loaded[n - 1] / low_piece : 0);
  wave_client_close(hi);
  wave_client_close(lo);
  free(idle);
  free(loaded);
  free(ran);
  free(dev);
  return 0;
}

/* The command line into *o; 0, or 2 (usage) after saying why. */
static int bf_args(int argc, char **argv, bf_opts *o)
{
  *o = (bf_opts){400, 16, 16, 20, 0, WAVE_U32, 0, 0, 65536};
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--lone") == 0)
      o->lone = (unsigned)strtoul(argv[i + 1], NULL, 10);
    else if (strcmp(argv[i], "--dtype") == 0)
      o->dtype = wave_dtype_parse(argv[i + 1]);
    else if (strcmp(argv[i], "--iters") == 0)
      o->iters = (unsigned)strtoul(argv[i + 1], NULL, 10);
    else if (strcmp(argv[i], "--heavy") == 0)
      o->heavy = (unsigned)strtoul(argv[i + 1], NULL, 10);
    else if (strcmp(argv[i], "--prio") == 0)
      o->prio = atoi(argv[i + 1]) != 0;
    else if (strcmp(argv[i], "--chunks") == 0)
      o->chunks = (unsigned)strtoul(argv[i + 1], NULL, 10);
    else if (strcmp(argv[i], "--hash") == 0)
      o->hash = (unsigned)strtoul(argv[i + 1], NULL, 10);
    else if (strcmp(argv[i], "--batch") == 0)
      o->batch = strtoull(argv[i + 1], NULL, 10);
    else if (strcmp(argv[i], "--mib") == 0)
      o->mib = (unsigned)strtoul(argv[i + 1], NULL, 10);
    else {
      fprintf(stderr, "usage: bench_fair [--iters N] [--heavy N] [--mib N] "
              "[--lone N] [--dtype u32|f32] [--prio 0|1] "
              "[--chunks N [--dtype u32|f64]] | --hash N [--batch NONCES]\n");
      return 2;
    }
  }
  if (o->iters < 10 || o->heavy < 1 || o->heavy > 16 || o->mib < 1 ||
      o->mib > 1024 || o->lone < 1 || o->lone > 10000 ||
      o->chunks > (1u << 24) ||
      (o->dtype != WAVE_U32 &&
       o->dtype != (o->chunks != 0 ? WAVE_F64 : WAVE_F32)) ||
      (o->hash > 0 && (o->hash < 10 || o->batch < 8192 ||
                       o->batch > (1u << 24)))) {
    fprintf(stderr, "bench_fair: --iters >= 10, --heavy 1..16 (one "
            "connection's limits.max_peer_requests), --mib 1..1024, "
            "--lone 1..10000, --dtype u32 or f32 (with --chunks "
            "0..16777216: u32 or f64), --hash >= 10 with --batch "
            "8192..2^24\n");
    return 2;
  }
  return 0;
}

/* The daemon of the run: one single-thread CPU device, ipc and tcp (their
 * URLs into ipc and tcp); the packs only for --hash. */
static pid_t bf_daemon(const bf_opts *o, const char *dir, char *ipc,
                       size_t ni, char *tcp, size_t nt)
{
  char cfg[128], text[1024];
  snprintf(cfg, sizeof cfg, "%s/wavedd.yaml", dir);
  snprintf(ipc, ni, "ipc://%s/d.sock", dir);
  snprintf(tcp, nt, "tcp://127.0.0.1:%d", bf_free_port());
  char packs[160] = "load: []";
  if (o->hash > 0)
    snprintf(packs, sizeof packs, "dir: %s/config/packs, load: [small]",
             getenv("WAVE_SOURCE_DIR") ? getenv("WAVE_SOURCE_DIR")
                                       : WAVE_SOURCE_DIR);
  snprintf(text, sizeof text,
           "listen: [\"%s\", \"%s\"]\nlog_level: warn\nauth: none\n"
           "allow_client_shm: true\npacks: {%s}\n"
           "priority: {high_allow: \"uid:%u\"}\n"
           "devices: [{name: cpu0, backend: cpu, threads: 1, "
           "queue_depth: 256, batch: %" PRIu64 "%s}]\n", ipc, tcp, packs,
           (unsigned)getuid(), o->hash > 0 ? o->batch : 0,
           o->chunks ? ", reduce_slice_rows: 262144" : "");
  FILE *f = fopen(cfg, "w");
  if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0)
    bf_die("config", NULL);
  return bf_start(dir, cfg);
}

int main(int argc, char **argv)
{
  bf_opts o;
  if (bf_args(argc, argv, &o) != 0)
    return 2;
  unsigned iters = o.iters, heavy = o.heavy, mib = o.mib, lone = o.lone;
  wave_dtype dtype = o.dtype;
  int prio = o.prio;
  signal(SIGPIPE, SIG_IGN);
  char dir[] = "/tmp/wave-fair.XXXXXX";
  if (mkdtemp(dir) == NULL)
    bf_die("mkdtemp", NULL);
  char ipc[128], tcp[64];
  pid_t pid = bf_daemon(&o, dir, ipc, sizeof ipc, tcp, sizeof tcp);
  if (o.hash > 0) {
    bf_hash_main(&o, ipc);
    goto stop;
  }

  wave_error err = {0};
  if (o.chunks != 0) {
    wave_client *lc;
    if (wave_client_open(&lc, tcp, &err) != 0)
      bf_die("connect", &err);
    bf_chunks(lc, ipc, iters, o.chunks, dtype);
    wave_client_close(lc);
    goto stop;
  }
  bf_heavy h = {.cap_dev = 1u << 20, .dtype = dtype,
                .prio = prio ? WAVE_PRIORITY_LOW : WAVE_PRIORITY_NORMAL};
  wave_priority lp = prio ? WAVE_PRIORITY_HIGH : WAVE_PRIORITY_NORMAL;
  h.dev_s = calloc(h.cap_dev, sizeof *h.dev_s);
  pthread_mutex_init(&h.mu, NULL);
  wave_client *light;
  if (wave_client_open(&h.c, ipc, &err) != 0 ||
      wave_client_open(&light, prio ? ipc : tcp, &err) != 0)
    bf_die("connect", &err);
  size_t bytes = (size_t)mib << 20;
  if (wave_region_create(&h.r, bytes, "bench-fair", &err) != 0)
    bf_die("region", &err);
  uint32_t *rows = wave_region_data(h.r);
  for (size_t i = 0; i < bytes / 4; i++) {
    float v = (float)(i % 1000) * 0.5f - 200.0f;  /* normal floats */
    if (dtype == WAVE_F32)
      memcpy(&rows[i], &v, sizeof v);
    else
      rows[i] = (uint32_t)i;
  }
  if (wave_region_register(h.c, h.r, &err) != 0)
    bf_die("region register", &err);

  double *idle = calloc(iters, sizeof *idle), *loaded = calloc(iters,
                                                               sizeof *loaded);
  bf_light(light, idle, BF_WARMUP, 0, lp);
  bf_light(light, idle, iters, 1, lp);

  bf_lone_report(&h, lone, mib);

  pthread_t th[16];
  for (unsigned i = 0; i < heavy; i++)
    pthread_create(&th[i], NULL, bf_heavy_main, &h);
  while (atomic_load(&h.done) < heavy)  /* every heavy thread is going */
    usleep(1000);
  bf_light(light, loaded, iters, 1, lp);
  unsigned long during = atomic_load(&h.done);
  atomic_store(&h.stop, 1);
  for (unsigned i = 0; i < heavy; i++)
    pthread_join(th[i], NULL);

  double im, i90, lm, l90, hm, h90;
  bf_stats(idle, iters, &im, &i90);
  bf_stats(loaded, iters, &lm, &l90);
  bf_stats(h.dev_s, h.n_dev, &hm, &h90);
  printf("bench_fair: light 1-row sums over %s (%s), %u each; heavy: %u "
         "%u-MiB region sums in flight over ipc (%s; %lu done, %lu BUSY "
         "retries)\n", prio ? "ipc" : "tcp", prio ? "high" : "normal", iters,
         heavy, mib, prio ? "low" : "normal", during,
         atomic_load(&h.busy));
  printf("heavy sum on the device  median %9.1f us\n", hm * 1e6);
  printf("light idle               median %9.1f us  p90 %9.1f us\n", im, i90);
  printf("light loaded             median %9.1f us  p90 %9.1f us\n", lm, l90);
  printf("ratio loaded / idle      median %9.2fx     p90 %9.2fx\n", lm / im,
         l90 / i90);
  printf("loaded / (idle + one heavy sum)  median %.2fx\n", lm / (im + hm * 1e6));

  wave_region_unregister(h.c, h.r, NULL);
  wave_region_close(h.r);
  wave_client_close(h.c);
  wave_client_close(light);
  free(idle);
  free(loaded);
  free(h.dev_s);
stop:
  kill(pid, SIGTERM);
  int st = 0;
  waitpid(pid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    fprintf(stderr, "bench_fair: wavedd exited with status %d\n", st);
  char rm[160];
  snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
  if (system(rm) != 0)
    fprintf(stderr, "bench_fair: could not remove %s\n", dir);
  return 0;
}
