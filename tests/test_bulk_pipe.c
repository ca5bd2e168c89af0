/* test_bulk_pipe.c - test_bulk's pipe regions (docs/protocol.md "Pipe
 * regions") against the real wavedd, through libwaveclient: a pipe's read
 * end registered as a file region of stated bytes, written by a thread
 * while one job reads it, gives the reference's bits (float sums over many
 * pieces in flight at once, read in turn); a pipe is read once and whole;
 * a writer that closes early or stalls fails its job with REGION, and the
 * daemon serves on.  Its TCase "pipes" joins test_bulk.c's suite.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bulk_harness.h"
#include "daemon_harness.h"
#include "wave/client.h"
#include "core/base.h"
#include "core/reduce.h"

TCase *btp_pipes_tcase(void);

typedef struct btp_writer {
  int fd;
  const uint8_t *p;
  size_t n;           /* bytes to write, then close (unless hold) */
  int hold;           /* keep the pipe open after them, until closed */
  pthread_t t;
} btp_writer;

static void *btp_write_main(void *arg)
{
  btp_writer *w = arg;
  for (size_t k = 0; k < w->n;) {
    ssize_t m = write(w->fd, w->p + k, w->n - k);
    if (m < 0 && errno == EINTR)
      continue;
    if (m <= 0)
      break;  /* the daemon closed its end: the job failed */
    k += (size_t)m;
  }
  if (!w->hold)
    close(w->fd);
  return NULL;
}

/* A pipe of bytes registered on c (its read end passed, then closed
 * here); *w writes n of p from a thread. */
static wave_region *btp_open(wave_client *c, size_t bytes, btp_writer *w,
                             const void *p, size_t n, int hold)
{
  int fds[2];
  ck_assert_int_eq(pipe2(fds, O_CLOEXEC), 0);
  (void)fcntl(fds[1], F_SETPIPE_SZ, 1 << 20);
  wave_region *r = NULL;
  wave_error e;
  int rv = wave_region_file_fd(c, fds[0], bytes, "pipe", &r, &e);
  ck_assert_msg(rv == 0, "%s", e.message);
  close(fds[0]);
  *w = (btp_writer){.fd = fds[1], .p = p, .n = n, .hold = hold};
  ck_assert_int_eq(pthread_create(&w->t, NULL, btp_write_main, w), 0);
  return r;
}

/* r unregistered (the daemon closes its end) and forgotten */
static void btp_drop(wave_client *c, wave_region *r)
{
  wave_error e;
  ck_assert_int_eq(wave_region_unregister(c, r, &e), 0);
  wave_region_close(r);
}

static int btp_reduce(wave_client *c, wave_region *r, size_t off,
                      size_t bytes, wave_dtype dt, wave_op op,
                      wave_reduce_result *res, wave_error *e)
{
  wave_extent x = {r, off, bytes};
  wave_region_reduce q = {.dtype = dt, .op = op, .input = &x, .n_input = 1};
  return wave_reduce_region(c, &q, res, e);
}

/* rows of dt through a pipe: the reference's bits and count */
static void btp_same(wave_client *c, const uint32_t *rows, size_t bytes,
                     wave_dtype dt, wave_op op)
{
  btp_writer w;
  wave_region *r = btp_open(c, bytes, &w, rows, bytes, 0);
  wave_reduce_result res;
  wave_error e;
  int rv = btp_reduce(c, r, 0, bytes, dt, op, &res, &e);
  ck_assert_msg(rv == 0, "%s", e.message);
  pthread_join(w.t, NULL);
  wv_span sp = {rows, bytes / wv_dtype_size(dt)};
  wv_reduce_job job = {.dtype = dt, .op = op, .input = &sp, .n_input = 1,
                       .rows = sp.rows};
  wv_reduce_out ref;
  ck_assert_int_eq(wv_reduce_reference(&job, &ref, NULL), 0);
  ck_assert_uint_eq(res.bits[0], ref.bits[0]);
  ck_assert_uint_eq(res.count, ref.count);
  btp_drop(c, r);
}

/* Float sums over pieces read in turn (four slots in flight on the CPU's
 * 4 MiB slots; with WAVED_FILE_LEVELS=1, thousands of 1024-row slots),
 * an order-free op and the exact sum: the reference's bits. */
static void btp_bits(int small)
{
  if (small)
    setenv("WAVED_FILE_LEVELS", "1", 1);
  td_daemon d;
  bh_start(&d, 1, NULL);
  unsetenv("WAVED_FILE_LEVELS");
  wave_client *c = bh_client(d.ipc);
  size_t rows = BH_ROWS_MAX - 3;
  uint32_t *in = malloc(rows * 4);
  bh_fill(in, rows, 7, 1);
  btp_same(c, in, rows * 4, WAVE_F32, WAVE_SUM);
  btp_same(c, in, (rows - 1) * 4, WAVE_F64, WAVE_SUM);
  btp_same(c, in, rows * 4, WAVE_F32, WAVE_FSUM);
  btp_same(c, in, 4000, WAVE_U32, WAVE_XOR);
  free(in);
  wave_client_close(c);
  td_stop_ok(&d);
}

START_TEST(pipe_bits)
{
  btp_bits(0);
}
END_TEST

START_TEST(pipe_bits_small_pieces)
{
  btp_bits(1);
}
END_TEST

/* Input and mask each through a pipe, both written at once: the masked
 * reference's bits and count. */
START_TEST(pipe_masked)
{
  td_daemon d;
  bh_start(&d, 1, NULL);
  wave_client *c = bh_client(d.ipc);
  size_t rows = (5u << 20) / 2 + 7;
  uint32_t *in = malloc(rows * 4), *mk = malloc(rows * 4);
  bh_fill(in, rows, 9, 1);
  for (size_t i = 0; i < rows; i++)
    mk[i] = (uint32_t)(i % 7 != 3);
  btp_writer wi, wm;
  wave_region *ri = btp_open(c, rows * 4, &wi, in, rows * 4, 0);
  wave_region *rm = btp_open(c, rows * 4, &wm, mk, rows * 4, 0);
  wave_extent xi = {ri, 0, rows * 4}, xm = {rm, 0, rows * 4};
  wave_region_reduce q = {.dtype = WAVE_F32, .op = WAVE_SUM, .input = &xi,
                          .n_input = 1, .mask = &xm, .n_mask = 1,
                          .has_mask = 1};
  wave_reduce_result res;
  wave_error e;
  int rv = wave_reduce_region(c, &q, &res, &e);
  ck_assert_msg(rv == 0, "%s", e.message);
  pthread_join(wi.t, NULL);
  pthread_join(wm.t, NULL);
  wv_span si = {in, rows}, sm = {mk, rows};
  wv_reduce_job job = {.dtype = WAVE_F32, .op = WAVE_SUM, .input = &si,
                       .n_input = 1, .mask = &sm, .n_mask = 1, .has_mask = 1,
                       .rows = rows};
  wv_reduce_out ref;
  ck_assert_int_eq(wv_reduce_reference(&job, &ref, NULL), 0);
  ck_assert_uint_eq(res.bits[0], ref.bits[0]);
  ck_assert_uint_eq(res.count, ref.count);
  btp_drop(c, ri);
  btp_drop(c, rm);
  free(in);
  free(mk);
  wave_client_close(c);
  td_stop_ok(&d);
}
END_TEST

/* Read once and whole: a part of it is RANGE, a second job REGION; a pipe
 * registered other than as a file region of stated bytes is refused. */
START_TEST(pipe_once)
{
  td_daemon d;
  bh_start(&d, 1, NULL);
  wave_client *c = bh_client(d.ipc);
  uint32_t rows[1024];
  bh_fill(rows, 1024, 3, 0);
  btp_writer w;
  wave_region *r = btp_open(c, sizeof rows, &w, rows, sizeof rows, 0);
  wave_reduce_result res;
  wave_error e;
  ck_assert_int_eq(btp_reduce(c, r, 0, 2048, WAVE_U32, WAVE_SUM, &res, &e),
                   WAVE_ERANGE);
  ck_assert_msg(strstr(e.message, "read once, whole") != NULL, "%s",
                e.message);
  ck_assert_int_eq(btp_reduce(c, r, 0, sizeof rows, WAVE_U32, WAVE_SUM,
                              &res, &e), 0);
  pthread_join(w.t, NULL);
  ck_assert_int_eq(btp_reduce(c, r, 0, sizeof rows, WAVE_U32, WAVE_SUM,
                              &res, &e), WAVE_EREGION);
  ck_assert_msg(strstr(e.message, "a pipe is read once") != NULL, "%s",
                e.message);
  btp_drop(c, r);
  int fds[2];
  ck_assert_int_eq(pipe(fds), 0);
  ck_assert_int_eq(wave_region_copy_fd(c, fds[0], 4096, "p", &r, &e),
                   WAVE_EREGION);
  ck_assert_msg(strstr(e.message, "FIFO") != NULL, "%s", e.message);
  ck_assert_int_eq(wave_region_file_fd(c, fds[0], 0, "p", &r, &e),
                   WAVE_EREGION);
  ck_assert_msg(strstr(e.message, "stated bytes") != NULL, "%s", e.message);
  close(fds[0]);
  close(fds[1]);
  wave_client_close(c);
  td_stop_ok(&d);
}
END_TEST

/* A float sum of bytes of rows through a pipe whose writer writes only
 * `written` of them, then closes it (or, hold, keeps it open): REGION,
 * saying want. */
static void btp_fails(wave_client *c, const uint32_t *rows, size_t bytes,
                      size_t written, int hold, const char *want)
{
  btp_writer w;
  wave_region *r = btp_open(c, bytes, &w, rows, written, hold);
  wave_reduce_result res;
  wave_error e;
  ck_assert_int_eq(btp_reduce(c, r, 0, bytes, WAVE_F32, WAVE_SUM, &res, &e),
                   WAVE_EREGION);
  ck_assert_msg(strstr(e.message, want) != NULL, "%s", e.message);
  pthread_join(w.t, NULL);
  btp_drop(c, r);
  if (hold)
    close(w.fd);
}

/* A writer that closes early, and one that stalls past
 * region_read_timeout_ms: REGION, and the daemon serves on. */
START_TEST(pipe_short_and_stalled)
{
  td_daemon d;
  bh_prepare_with(&d, 1, NULL, "  region_read_timeout_ms: 400\n");
  ck_assert_int_eq(td_start(&d), 0);
  wave_client *c = bh_client(d.ipc);
  size_t rows = 3u << 20;  /* three 4 MiB slots */
  uint32_t *in = malloc(rows * 4);
  bh_fill(in, rows, 5, 1);
  btp_fails(c, in, rows * 4, rows * 2, 0, "ended at byte 6291456");
  /* stalled: a quarter written, the pipe held open */
  btp_fails(c, in, rows * 4, rows, 1, "sent no piece");
  /* the daemon serves on: the same rows by message */
  wave_reduce_result res;
  wave_error e;
  wave_chunk ch = {in, 4096};
  wave_reduce_request q = {.dtype = WAVE_U32, .op = WAVE_SUM, .input = &ch,
                           .n_input = 1};
  ck_assert_int_eq(wave_reduce(c, &q, &res, &e), 0);
  free(in);
  wave_client_close(c);
  td_stop_ok(&d);
}
END_TEST

TCase *btp_pipes_tcase(void)
{
  signal(SIGPIPE, SIG_IGN);  /* a writer whose job failed gets EPIPE */
  TCase *tc = tcase_create("pipes");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, pipe_bits);
  tcase_add_test(tc, pipe_bits_small_pieces);
  tcase_add_test(tc, pipe_masked);
  tcase_add_test(tc, pipe_once);
  tcase_add_test(tc, pipe_short_and_stalled);
  return tc;
}
