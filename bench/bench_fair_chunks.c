/* bench_fair_chunks.c - bench_fair --chunks N (issue 35, finding 2): a
 * 1-row sum's latency behind one request of many tiny chunks.
 *
 * Instead of bench_fair.c's region sums, the heavy client sends ONE raw
 * protobuf ReduceRequest (nng and protobuf-c, as tests/test_stop.c does:
 * libwaveclient's decode budget refuses messages of 16,384+ chunks) of N
 * one-row chunks, all 1 (--dtype f64 or u32), over ipc.  The light client
 * times 1-row sums from before the send until the reply; they are split
 * at the heavy job's estimated start on the device (its reply's time
 * minus its `seconds`), so the wait behind decoding and the wait behind
 * the device show apart, and go on for BFC_TAIL_US after the reply (the
 * daemon frees the big request then, on a decode thread).  One slice's
 * time is the job's device seconds over its slices, counted by
 * daemon/rq/slices.c's rule for reduce_slice_rows 262144 (set in the
 * config): a float sum of one-row chunks runs 256 whole chunks a slice,
 * an order-free op 4096.
 *
 * The big request goes from a process of its own (--sender process, the
 * default: this program again, as `bench_fair --raw-sender IPC N DTYPE`,
 * which builds and dials, says "ready", sends on a byte from its stdin
 * and prints its send and reply times, CLOCK_MONOTONIC like ours).  Sent
 * from a thread of the bench (--sender thread), it shares one nng
 * instance, its poller and task threads, with the light client, so that
 * a light sum may wait in the bench while 40 MB go out: a wait in the
 * client, not in the daemon the bench measures.
 */
#include <spawn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <pthread.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "bench/bench_fair.h"
#include "proto/wave.pb-c.h"

#define BFC_TAIL_US 500000.0  /* light sums after the big reply */

extern char **environ;

typedef struct bfc_raw {
  uint8_t *msg;      /* the packed Request */
  size_t len;
  unsigned chunks;
  wave_dtype dtype;
  nng_socket s;
  pid_t pid;         /* the sender process, or 0: a thread of ours */
  FILE *from;        /* its stdout */
  int go;            /* its stdin */
  _Atomic int done;
  double t_send, t_reply, dev_s;  /* us, us, s */
} bfc_raw;

/* The Request: chunks one-row chunks of 1 (u32 or f64), sum. */
static void bfc_build(bfc_raw *r)
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

/* Dial the daemon's ipc URL. */
static void bfc_dial(bfc_raw *r, const char *ipc)
{
  int rv;
  if ((rv = nng_req0_open(&r->s)) != 0 ||
      (rv = nng_socket_set_ms(r->s, NNG_OPT_REQ_RESENDTIME,
                              NNG_DURATION_INFINITE)) != 0 ||
      (rv = nng_dial(r->s, ipc, NULL, 0)) != 0) {
    fprintf(stderr, "bench_fair: raw dial %s: %s\n", ipc, nng_strerror(rv));
    exit(1);
  }
}

/* Send the message, wait for its reply, check the sum (chunks). */
static void bfc_send(bfc_raw *r)
{
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
}

/* bench_fair --raw-sender IPC CHUNKS u32|f64: build, dial, say "ready",
 * send on a byte from stdin, print "T_SEND T_REPLY DEVICE_SECONDS". */
int bf_raw_sender_main(int argc, char **argv)
{
  if (argc != 5)
    return 2;
  bfc_raw r = {.chunks = (unsigned)strtoul(argv[3], NULL, 10),
              .dtype = wave_dtype_parse(argv[4])};
  bfc_build(&r);
  bfc_dial(&r, argv[2]);
  printf("ready\n");
  fflush(stdout);
  char go;
  if (read(0, &go, 1) != 1)
    return 1;
  bfc_send(&r);
  printf("%.3f %.3f %.9f\n", r.t_send, r.t_reply, r.dev_s);
  fflush(stdout);
  nng_close(r.s);
  free(r.msg);
  return 0;
}

/* Start the sender process, and wait until it has dialled. */
static void bfc_spawn(bfc_raw *r, const char *ipc)
{
  int to[2], from[2];
  if (pipe(to) != 0 || pipe(from) != 0)
    bf_die("pipe", NULL);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, to[0], 0);
  posix_spawn_file_actions_adddup2(&fa, from[1], 1);
  posix_spawn_file_actions_addclose(&fa, to[1]);
  posix_spawn_file_actions_addclose(&fa, from[0]);
  char n[16];
  snprintf(n, sizeof n, "%u", r->chunks);
  char *argv[] = {"bench_fair", "--raw-sender", (char *)ipc, n,
                  r->dtype == WAVE_F64 ? "f64" : "u32", NULL};
  if (posix_spawn(&r->pid, "/proc/self/exe", &fa, NULL, argv, environ) != 0)
    bf_die("could not start the sender process", NULL);
  posix_spawn_file_actions_destroy(&fa);
  close(to[0]);
  close(from[1]);
  r->go = to[1];
  r->from = fdopen(from[0], "r");
  char line[64];
  if (r->from == NULL || fgets(line, sizeof line, r->from) == NULL ||
      strcmp(line, "ready\n") != 0)
    bf_die("the sender process did not dial", NULL);
}

/* The heavy request's thread: sent from here, or by the sender process. */
static void *bfc_main(void *arg)
{
  bfc_raw *r = arg;
  if (r->pid == 0) {
    bfc_send(r);
  } else {
    char line[128];
    if (write(r->go, "g", 1) != 1 ||
        fgets(line, sizeof line, r->from) == NULL ||
        sscanf(line, "%lf %lf %lf", &r->t_send, &r->t_reply, &r->dev_s) != 3)
      bf_die("the sender process failed", NULL);
  }
  atomic_store(&r->done, 1);
  return NULL;
}

static void bfc_line(const char *what, double *us, size_t n)
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
void bf_chunks(wave_client *light, const char *ipc, unsigned iters,
               unsigned chunks, wave_dtype dtype, int own_process)
{
  bfc_raw r = {.chunks = chunks, .dtype = dtype};
  if (own_process) {
    bfc_spawn(&r, ipc);
  } else {
    bfc_build(&r);
    bfc_dial(&r, ipc);
  }
  double *idle = calloc(iters, sizeof *idle);
  bf_light(light, idle, BF_WARMUP, 0, WAVE_PRIORITY_NORMAL);
  bf_light(light, idle, iters, 1, WAVE_PRIORITY_NORMAL);
  size_t cap = 1u << 22, n = 0;
  double *t0 = malloc(cap * sizeof *t0), *lat = malloc(cap * sizeof *lat);
  double *ldev = malloc(cap * sizeof *ldev);  /* each one's device time */
  pthread_t th;
  pthread_create(&th, NULL, bfc_main, &r);
  double tail_end = 0;
  while (n < cap) {
    if (atomic_load(&r.done) && tail_end == 0)
      tail_end = r.t_reply + BFC_TAIL_US;
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
         "over ipc, from %s; light 1-row u32 sums over tcp\n", chunks,
         dtype == WAVE_F64 ? "f64" : "u32",
         own_process ? "a process of its own" : "a thread of the bench");
  printf("heavy: sent at CLOCK_MONOTONIC %.6f s, replied at %.6f s\n",
         r.t_send * 1e-6, r.t_reply * 1e-6);
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
           "+%.3f s (the device from +%.3f s, the reply at +%.3f s; "
           "CLOCK_MONOTONIC %.6f s)\n",
           top + 1, lat[w], ldev[w], (t0[w] - r.t_send) * 1e-6,
           (on_dev - r.t_send) * 1e-6, (r.t_reply - r.t_send) * 1e-6,
           t0[w] * 1e-6);
    lat[w] = -lat[w];
  }
  for (size_t i = 0; i < n; i++)
    lat[i] = lat[i] < 0 ? -lat[i] : lat[i];
  double im = (qsort(idle, iters, sizeof *idle, bf_cmp), idle[iters / 2]);
  bfc_line("light idle", idle, iters);
  bfc_line("light loaded (all)", all, na);
  bfc_line("  ended before the device", dec, nd);
  bfc_line("  ended while on the device", dev, nv);
  bfc_line("  sent after the reply (0.5 s)", aft, nt);
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
  if (own_process) {
    int st = 0;
    close(r.go);
    fclose(r.from);
    if (waitpid(r.pid, &st, 0) != r.pid || !WIFEXITED(st) ||
        WEXITSTATUS(st) != 0)
      bf_die("the sender process failed", NULL);
  } else {
    nng_close(r.s);
    free(r.msg);
  }
  free(idle);
  free(t0);
  free(lat);
  free(ldev);
  free(dec);
  free(dev);
  free(all);
  free(aft);
}

