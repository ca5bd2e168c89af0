/* bench_bulk.c - a big reduction over tcp against a raw nng transfer of
 * the same bytes, measured in the same run (issue 10).
 *
 *   wvbench-bulk URL [LOG2_ROWS]        (default 2^28 rows = 1 GiB)
 *
 * Baseline: the bytes pushed through an nng PUSH -> PULL pair over
 * tcp://127.0.0.1 in this process, in messages of 16 MiB (the daemon's
 * largest stream piece), timed from the first send to the last receive;
 * best of 3.  Then wave_reduce (u32 sum) of the same bytes to the daemon at
 * URL, which streams them (libwaveclient: pieces of the daemon's piece size,
 * four in flight); best of 3, each checked against the sum computed here.
 * The ratio is the reduction's rate over the transfer's.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nng/nng.h>
#include <nng/protocol/pipeline0/pull.h>
#include <nng/protocol/pipeline0/push.h>

#include "wave/client.h"

#define BB_PIECE ((size_t)16 << 20)

static double bb_now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef struct bb_rx {
  nng_socket s;
  size_t bytes;
  double end;
} bb_rx;

static void *bb_recv(void *arg)
{
  bb_rx *r = arg;
  size_t got = 0;
  while (got < r->bytes) {
    nng_msg *m;
    if (nng_recvmsg(r->s, &m, 0) != 0)
      break;
    got += nng_msg_len(m);
    nng_msg_free(m);
  }
  r->end = bb_now();
  return NULL;
}

static double bb_baseline(const uint8_t *buf, size_t bytes)
{
  nng_socket pull, push;
  nng_listener l;
  if (nng_pull0_open(&pull) != 0 || nng_push0_open(&push) != 0 ||
      nng_socket_set_size(pull, NNG_OPT_RECVMAXSZ, 0) != 0 ||
      nng_listener_create(&l, pull, "tcp://127.0.0.1:0") != 0 ||
      nng_listener_start(l, 0) != 0) {
    fprintf(stderr, "baseline sockets failed\n");
    exit(1);
  }
  int port = 0;
  nng_listener_get_int(l, NNG_OPT_TCP_BOUND_PORT, &port);
  char url[64];
  snprintf(url, sizeof url, "tcp://127.0.0.1:%d", port);
  if (nng_dial(push, url, NULL, 0) != 0) {
    fprintf(stderr, "baseline dial failed\n");
    exit(1);
  }
  double best = 1e30;
  for (int it = 0; it < 3; it++) {
    bb_rx rx = {pull, bytes, 0};
    pthread_t th;
    pthread_create(&th, NULL, bb_recv, &rx);
    double t0 = bb_now();
    for (size_t off = 0; off < bytes; off += BB_PIECE) {
      size_t n = bytes - off < BB_PIECE ? bytes - off : BB_PIECE;
      nng_msg *m;
      nng_msg_alloc(&m, n);
      memcpy(nng_msg_body(m), buf + off, n);  /* as a client fills one */
      nng_sendmsg(push, m, 0);
    }
    pthread_join(th, NULL);
    if (rx.end - t0 < best)
      best = rx.end - t0;
  }
  nng_close(push);
  nng_close(pull);
  return best;
}

int main(int argc, char **argv)
{
  if (argc < 2) {
    fprintf(stderr, "usage: %s URL [LOG2_ROWS]\n", argv[0]);
    return 2;
  }
  int lg = argc > 2 ? atoi(argv[2]) : 28;
  size_t rows = (size_t)1 << lg, bytes = rows * 4;
  uint32_t *buf = malloc(bytes);
  if (buf == NULL)
    return 1;
  uint32_t want = 0;
  for (size_t i = 0; i < rows; i++) {
    buf[i] = (uint32_t)(i * 2654435761u);
    want += buf[i];
  }
  double base = bb_baseline((const uint8_t *)buf, bytes);
  printf("raw nng tcp push/pull, 16 MiB messages: %zu bytes in %.3f s "
         "(%.2f GB/s)\n", bytes, base, bytes / base / 1e9);
  wave_client *c;
  wave_error e;
  if (wave_client_open(&c, argv[1], &e) != 0) {
    fprintf(stderr, "%s\n", e.message);
    return 1;
  }
  wave_client_set_timeout(c, 120000);
  wave_chunk ch = {buf, bytes};
  wave_reduce_request q = {.dtype = WAVE_U32, .op = WAVE_SUM, .input = &ch,
                           .n_input = 1};
  double best = 1e30, dev = 0;
  int rc = 0;
  for (int it = 0; it < 3; it++) {
    wave_reduce_result r;
    double t0 = bb_now();
    if (wave_reduce(c, &q, &r, &e) != 0) {
      fprintf(stderr, "wave_reduce: %s: %s\n", wave_errname(e.code),
              e.message);
      return 1;
    }
    double t = bb_now() - t0;
    if (r.bits[0] != want) {
      fprintf(stderr, "sum 0x%08x, expected 0x%08x\n", (unsigned)r.bits[0], want);
      rc = 1;
    }
    if (t < best) {
      best = t;
      dev = r.seconds;
    }
  }
  printf("wave_reduce u32 sum over %s: %.3f s (%.2f GB/s; device %.3f s)\n",
         argv[1], best, bytes / best / 1e9, dev);
  printf("| tcp 2^%d rows | transfer %.3f s | reduction %.3f s | %.2fx the "
         "transfer rate |\n", lg, base, best, base / best);
  wave_client_close(c);
  free(buf);
  return rc;
}
