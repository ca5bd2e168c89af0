/* bench_rtt.c - the round trip of a tiny reduction through a real wavedd,
 * against a raw nng REQ/REP echo of the same request bytes, same run, same
 * transports (ipc, tcp and tls+tcp loopback).
 *
 * The echo server is a thread in this process that sends every message back
 * as it came: the floor any nng request/reply service can reach here.  The
 * difference to wavedd is the daemon's own work per request: a hand-off
 * from nng's thread to the loop, protobuf decode, validation, the queue to
 * the device thread and back, the reply's encode.  Blocks of BR_BLOCK
 * exchanges alternate between the two, so that drift on a shared machine
 * hits both; medians and 99th percentiles of all exchanges are printed in
 * microseconds, with the ratio wavedd / echo.
 *
 * The daemon has a bearer token (auth.tokens) and every request carries it
 * (ipc ignores it; tcp and tls+tcp check it, docs/security.md), so the
 * figures include the token check.  tls+tcp uses a throwaway CA and server
 * certificate made with the openssl CLI; its echo listens with the same
 * certificate, so its ratio is the daemon's work over TLS's floor.
 *
 *   bench_rtt [--rows N] [--iters N]   (defaults: 16 uint32 rows, 4000)
 */
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>
#include <nng/supplemental/tls/tls.h>

#include "proto/wave.pb-c.h"

#define BR_BLOCK 200
#define BR_WARMUP 200

static double br_now_us(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static int br_cmp(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void br_die(const char *what, int rv)
{
  fprintf(stderr, "bench_rtt: %s: %s\n", what, rv ? nng_strerror(rv) : "");
  exit(1);
}

/* ---- the echo server ------------------------------------------------------ */

static void *br_echo_main(void *arg)
{
  nng_socket *s = arg;
  for (;;) {
    nng_msg *m;
    if (nng_recvmsg(*s, &m, 0) != 0)
      return NULL;  /* closed */
    if (nng_sendmsg(*s, m, 0) != 0)
      nng_msg_free(m);
  }
}

/* ---- wavedd ------------------------------------------------------------------ */

static int br_free_port(void)
{
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof sa;
  if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
      getsockname(fd, (struct sockaddr *)&sa, &len) != 0)
    br_die("no loopback port", 0);
  int port = ntohs(sa.sin_port);
  close(fd);
  return port;
}

/* Start wavedd on cfg and wait for its READY=1. */
static pid_t br_start(const char *dir, const char *cfg)
{
  char notify[100];
  snprintf(notify, sizeof notify, "%.80s/notify", dir);
  int ns = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", notify);
  if (ns < 0 || bind(ns, (struct sockaddr *)&sa, sizeof sa) != 0)
    br_die("notify socket", 0);
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
  br_die("wavedd did not start", 0);
  return -1;
}

/* ---- measuring ---------------------------------------------------------------- */

typedef struct br_side {
  nng_socket sock;
  double *us;
  size_t n;
  size_t reply_bytes;
} br_side;

static void br_exchange(br_side *sd, const uint8_t *req, size_t len, int keep)
{
  nng_msg *m;
  int rv;
  if ((rv = nng_msg_alloc(&m, len)) != 0)
    br_die("msg", rv);
  memcpy(nng_msg_body(m), req, len);
  double t0 = br_now_us();
  if ((rv = nng_sendmsg(sd->sock, m, 0)) != 0)
    br_die("send", rv);
  if ((rv = nng_recvmsg(sd->sock, &m, 0)) != 0)
    br_die("recv", rv);
  double t1 = br_now_us();
  sd->reply_bytes = nng_msg_len(m);
  nng_msg_free(m);
  if (keep)
    sd->us[sd->n++] = t1 - t0;
}

static void br_report(const char *name, br_side *d, br_side *e)
{
  qsort(d->us, d->n, sizeof *d->us, br_cmp);
  qsort(e->us, e->n, sizeof *e->us, br_cmp);
  double dm = d->us[d->n / 2], d99 = d->us[d->n * 99 / 100];
  double em = e->us[e->n / 2], e99 = e->us[e->n * 99 / 100];
  printf("%-4s wavedd  median %8.1f us  p99 %8.1f us  (reply %zu B)\n", name,
         dm, d99, d->reply_bytes);
  printf("%-4s echo    median %8.1f us  p99 %8.1f us\n", name, em, e99);
  printf("%-4s ratio   median %8.2fx     p99 %8.2fx\n", name, dm / em,
         d99 / e99);
}

/* ca: for tls+tcp, the CA file (the certificate names "localhost"). */
static nng_socket br_req(const char *url, const char *ca)
{
  nng_socket s;
  nng_dialer d;
  nng_tls_config *tc = NULL;
  int rv;
  if ((rv = nng_req0_open(&s)) != 0 ||
      (rv = nng_socket_set_ms(s, NNG_OPT_RECVTIMEO, 30000)) != 0 ||
      (rv = nng_dialer_create(&d, s, url)) != 0)
    br_die(url, rv);
  if (strncmp(url, "tls+", 4) == 0 &&
      ((rv = nng_tls_config_alloc(&tc, NNG_TLS_MODE_CLIENT)) != 0 ||
       (rv = nng_tls_config_ca_file(tc, ca)) != 0 ||
       (rv = nng_tls_config_server_name(tc, "localhost")) != 0 ||
       (rv = nng_dialer_set_ptr(d, NNG_OPT_TLS_CONFIG, tc)) != 0))
    br_die(url, rv);
  if (tc != NULL)
    nng_tls_config_free(tc);
  if ((rv = nng_dialer_start(d, 0)) != 0)
    br_die(url, rv);
  return s;
}

/* The echo's listener (tls+tcp: with the daemon's certificate). */
static void br_listen(nng_socket es, const char *url, const char *pem)
{
  nng_listener l;
  nng_tls_config *tc = NULL;
  int rv;
  if ((rv = nng_listener_create(&l, es, url)) != 0)
    br_die(url, rv);
  if (strncmp(url, "tls+", 4) == 0 &&
      ((rv = nng_tls_config_alloc(&tc, NNG_TLS_MODE_SERVER)) != 0 ||
       (rv = nng_tls_config_cert_key_file(tc, pem, NULL)) != 0 ||
       (rv = nng_listener_set_ptr(l, NNG_OPT_TLS_CONFIG, tc)) != 0))
    br_die(url, rv);
  if (tc != NULL)
    nng_tls_config_free(tc);
  if ((rv = nng_listener_start(l, 0)) != 0)
    br_die(url, rv);
}

int main(int argc, char **argv)
{
  unsigned rows = 16, iters = 4000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--rows") == 0)
      rows = (unsigned)strtoul(argv[i + 1], NULL, 0);
    else if (strcmp(argv[i], "--iters") == 0)
      iters = (unsigned)strtoul(argv[i + 1], NULL, 0);
  }
  if (iters < BR_BLOCK)
    iters = BR_BLOCK;
  signal(SIGPIPE, SIG_IGN);

  char dir[] = "/tmp/wave-rtt.XXXXXX";
  if (mkdtemp(dir) == NULL)
    br_die("mkdtemp", 0);
  char cfg[128], text[1024], d_ipc[128], d_tcp[64], e_ipc[128], e_tcp[64];
  char d_tls[64], e_tls[64], ca[128], pem[128], cmd[1024];
  snprintf(cfg, sizeof cfg, "%s/wavedd.yaml", dir);
  snprintf(ca, sizeof ca, "%s/ca.crt", dir);
  snprintf(pem, sizeof pem, "%s/srv.pem", dir);
  snprintf(d_ipc, sizeof d_ipc, "ipc://%s/d.sock", dir);
  snprintf(e_ipc, sizeof e_ipc, "ipc://%s/e.sock", dir);
  snprintf(d_tcp, sizeof d_tcp, "tcp://127.0.0.1:%d", br_free_port());
  snprintf(e_tcp, sizeof e_tcp, "tcp://127.0.0.1:%d", br_free_port());
  snprintf(d_tls, sizeof d_tls, "tls+tcp://127.0.0.1:%d", br_free_port());
  snprintf(e_tls, sizeof e_tls, "tls+tcp://127.0.0.1:%d", br_free_port());
  static const char token[] = "bench-rtt-0123456789abcdef";
  snprintf(cmd, sizeof cmd,
           "cd %s && (umask 077; echo %s > t.token) && "
           "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 "
           "-nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=rtt-ca && "
           "openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
           "-keyout srv.key -out srv.csr -subj /CN=localhost && "
           "openssl x509 -req -in srv.csr -CA ca.crt -CAkey ca.key "
           "-CAcreateserial -out srv.crt -days 2 && cat srv.crt srv.key > "
           "srv.pem", dir, token);
  if (system(cmd) != 0)  /* openssl's chatter goes to stderr */
    br_die("openssl could not make the certificates", 0);
  snprintf(text, sizeof text,
           "listen: [\"%s\", \"%s\", \"%s\"]\nlog_level: warn\n"
           "auth: {tokens: [{name: bench, file: t.token}]}\n"
           "tls: {cert_file: srv.crt, key_file: srv.key}\n"
           "packs: {load: []}\n"
           "devices: [{name: cpu0, backend: cpu, threads: 1}]\n",
           d_ipc, d_tcp, d_tls);
  FILE *f = fopen(cfg, "w");
  if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0)
    br_die("config", 0);
  pid_t pid = br_start(dir, cfg);

  /* the request: rows uint32 values, sum */
  uint32_t *v = calloc(rows ? rows : 1, sizeof *v);
  for (unsigned i = 0; i < rows; i++)
    v[i] = i * 2654435761u;
  ProtobufCBinaryData chunk = {rows * 4u, (uint8_t *)v};
  Wave__V1__ReduceRequest rr = WAVE__V1__REDUCE_REQUEST__INIT;
  rr.dtype = WAVE__V1__DTYPE__U32;
  rr.op = WAVE__V1__OP__SUM;
  rr.n_input = 1;
  rr.input = &chunk;
  Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
  rq.version = 1;
  rq.id = 1;
  rq.token = (char *)token;
  rq.body_case = WAVE__V1__REQUEST__BODY_REDUCE;
  rq.reduce = &rr;
  size_t len = wave__v1__request__get_packed_size(&rq);
  uint8_t *req = malloc(len);
  wave__v1__request__pack(&rq, req);

  printf("bench_rtt: %u-row uint32 sum, request %zu bytes, %u exchanges per "
         "side and transport, blocks of %d alternating\n",
         rows, len, iters, BR_BLOCK);
  const char *names[3] = {"ipc", "tcp", "tls"};
  const char *durl[3] = {d_ipc, d_tcp, d_tls}, *eurl[3] = {e_ipc, e_tcp, e_tls};
  for (int t = 0; t < 3; t++) {
    nng_socket es;
    int rv;
    if ((rv = nng_rep0_open(&es)) != 0)
      br_die(eurl[t], rv);
    br_listen(es, eurl[t], pem);
    pthread_t th;
    pthread_create(&th, NULL, br_echo_main, &es);
    br_side d = {.sock = br_req(durl[t], ca),
                 .us = calloc(iters, sizeof(double))};
    br_side e = {.sock = br_req(eurl[t], ca),
                 .us = calloc(iters, sizeof(double))};
    for (int i = 0; i < BR_WARMUP; i++) {
      br_exchange(&d, req, len, 0);
      br_exchange(&e, req, len, 0);
    }
    while (d.n < iters) {
      for (int i = 0; i < BR_BLOCK && d.n < iters; i++)
        br_exchange(&d, req, len, 1);
      for (int i = 0; i < BR_BLOCK && e.n < iters; i++)
        br_exchange(&e, req, len, 1);
    }
    br_report(names[t], &d, &e);
    nng_close(d.sock);
    nng_close(e.sock);
    nng_close(es);
    pthread_join(th, NULL);
    free(d.us);
    free(e.us);
  }
  kill(pid, SIGTERM);
  int st = 0;
  waitpid(pid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    fprintf(stderr, "bench_rtt: wavedd exited with status %d\n", st);
  char rm[160];
  snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
  if (system(rm) != 0)
    fprintf(stderr, "bench_rtt: could not remove %s\n", dir);
  free(req);
  free(v);
  return 0;
}
