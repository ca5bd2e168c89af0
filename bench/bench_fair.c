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
 * --chunks N (issue 35, finding 2; bench_fair_chunks.c): instead of the
 * region sums, one raw request of N one-row chunks, sent from a process
 * of its own (--sender process) or from a thread of the bench (--sender
 * thread), and the light sums' latency while it is received, decoded and
 * run.
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
 *              [--prio 0|1]
 *   bench_fair --chunks N [--dtype u32|f64] [--sender process|thread]
 *              [--iters N] [--slow-log MS]
 *   bench_fair --hash N [--batch NONCES]
 *   (defaults: 400, 16, 16, 20, u32, 0, 0; --batch 65536)
 *
 * --slow-log MS sets the daemon's limits.slow_request_ms, so its log (this
 * program's stderr) says where each request slower than MS waited; the
 * times printed are CLOCK_MONOTONIC, as the log's.  The environment's
 * WAVE_DAEMON_GLIBC_TUNABLES, when set, is the daemon's GLIBC_TUNABLES
 * (docs/service.md, "Memory"), and not this program's.
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

#include "bench/bench_fair.h"
#include "wave/client.h"

#ifndef WAVE_SOURCE_DIR
#define WAVE_SOURCE_DIR "."
#endif


double bf_now_us(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

int bf_cmp(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

void bf_die(const char *what, const wave_error *err)
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
    const char *tun = getenv("WAVE_DAEMON_GLIBC_TUNABLES");
    if (tun != NULL)  /* the daemon's alone, as its unit sets them */
      setenv("GLIBC_TUNABLES", tun, 1);
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
double bf_light_dev_us;

void bf_light(wave_client *c, double *us, size_t n, int keep,
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

typedef struct bf_opts {
  unsigned iters, heavy, mib, lone, chunks;
  wave_dtype dtype;
  int prio;
  unsigned hash;        /* --hash N: the hash jobs' mode (0: off) */
  uint64_t batch;
  int own_process;      /* --chunks: --sender process (1) or thread (0) */
  unsigned slow_ms;     /* --slow-log: the daemon's slow_request_ms */
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
  *o = (bf_opts){400, 16, 16, 20, 0, WAVE_U32, 0, 0, 65536, 1, 0};
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
    else if (strcmp(argv[i], "--sender") == 0 &&
             (strcmp(argv[i + 1], "process") == 0 ||
              strcmp(argv[i + 1], "thread") == 0))
      o->own_process = strcmp(argv[i + 1], "process") == 0;
    else if (strcmp(argv[i], "--hash") == 0)
      o->hash = (unsigned)strtoul(argv[i + 1], NULL, 10);
    else if (strcmp(argv[i], "--batch") == 0)
      o->batch = strtoull(argv[i + 1], NULL, 10);
    else if (strcmp(argv[i], "--mib") == 0)
      o->mib = (unsigned)strtoul(argv[i + 1], NULL, 10);
    else if (strcmp(argv[i], "--slow-log") == 0)
      o->slow_ms = (unsigned)strtoul(argv[i + 1], NULL, 10);
    else {
      fprintf(stderr, "usage: bench_fair [--iters N] [--heavy N] [--mib N] "
              "[--lone N] [--dtype u32|f32] [--prio 0|1] "
              "[--chunks N [--dtype u32|f64] [--sender process|thread]] "
              "| --hash N [--batch NONCES]  [--slow-log MS]\n");
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
           "limits: {slow_request_ms: %u}\n"
           "priority: {high_allow: \"uid:%u\"}\n"
           "devices: [{name: cpu0, backend: cpu, threads: 1, "
           "queue_depth: 256, batch: %" PRIu64 "%s}]\n", ipc, tcp, packs,
           o->slow_ms, (unsigned)getuid(), o->hash > 0 ? o->batch : 0,
           o->chunks ? ", reduce_slice_rows: 262144" : "");
  FILE *f = fopen(cfg, "w");
  if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0)
    bf_die("config", NULL);
  return bf_start(dir, cfg);
}

int main(int argc, char **argv)
{
  if (argc > 1 && strcmp(argv[1], "--raw-sender") == 0)
    return bf_raw_sender_main(argc, argv);
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
    bf_chunks(lc, ipc, iters, o.chunks, dtype, o.own_process);
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
