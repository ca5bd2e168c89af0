/* test_bulk.c - big reductions against the real wavedd (docs/protocol.md
 * "Framed requests", "Streams", "Regions"): shared-memory regions (life
 * cycle, who may register what, seals, bounds, a client that dies), streamed
 * jobs of many pieces (out of order, missing, malformed), and the same bits
 * from a region, a stream and a message job on cpu and vulkan (lavapipe),
 * with the transfer phase of the job-duration histogram they leave.
 *
 * libwaveclient drives the ordinary paths; raw nng + protobuf-c (the
 * daemon_harness helpers) the malformed ones a library would never send.
 * The streams' cases are in test_bulk_streams.c (TCase "streams").
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "bulk_harness.h"
#include "daemon_harness.h"
#include "proto/frame.h"
#include "wave/client.h"
#include "core/reduce.h"

/* test_bulk_streams.c */
TCase *bts_streams_tcase(void);
TCase *bt_gates_tcase(void);
TCase *btr_ring_tcase(void);
TCase *btp_pipes_tcase(void);

/* ---- regions ------------------------------------------------------------ */

START_TEST(region_lifecycle)
{
  td_daemon d;
  bh_start(&d, 1, NULL);
  wave_client *c = bh_client(d.ipc);
  wave_error e = {0};
  size_t rows = 1u << 20;
  wave_region *rg;
  ck_assert_int_eq(wave_region_create(&rg, rows * 4, "life", &e), 0);
  uint32_t *p = wave_region_data(rg);
  bh_fill(p, rows, 1, 0);
  ck_assert_int_eq(wave_region_register(c, rg, &e), 0);
  ck_assert_uint_ne(wave_region_id(rg), 0);
  nng_socket s = td_dial(d.ipc);
  uint64_t bytes;
  ck_assert_uint_eq(bh_regions(s, &bytes), 1);
  ck_assert_uint_eq(bytes, rows * 4);

  /* the same rows by place and by value: the same bits */
  wave_extent in[2] = {{rg, 0, rows * 2}, {rg, rows * 2, rows * 2}};
  wave_region_reduce q = {.dtype = WAVE_U32, .op = WAVE_SUM, .input = in,
                          .n_input = 2};
  wave_reduce_result a, b;
  ck_assert_int_eq(wave_reduce_region(c, &q, &a, &e), 0);
  wave_chunk ch[2] = {{p, rows * 2}, {(char *)p + rows * 2, rows * 2}};
  wave_reduce_request m = {.dtype = WAVE_U32, .op = WAVE_SUM, .input = ch,
                           .n_input = 2};
  ck_assert_int_eq(wave_reduce(c, &m, &b, &e), 0);
  ck_assert_uint_eq(a.bits[0], b.bits[0]);
  ck_assert_uint_eq(a.rows, rows);
  uint32_t want = 0;
  for (size_t i = 0; i < rows; i++)
    want += p[i];
  ck_assert_uint_eq(a.bits[0], want);

  /* a masked one: mask rows in the same region's tail are fine too */
  ck_assert_int_eq(wave_region_unregister(c, rg, &e), 0);
  ck_assert_uint_eq(bh_regions(s, NULL), 0);
  /* the old id is gone */
  wave_region_reduce q2 = q;
  wave_extent gone = {rg, 0, 16};
  q2.input = &gone;
  q2.n_input = 1;
  ck_assert_int_eq(wave_reduce_region(c, &q2, &a, &e), WAVE_EARG);
  wave_region_close(rg);

  /* the per-client limit (3) */
  wave_region *many[4];
  for (int i = 0; i < 4; i++) {
    ck_assert_int_eq(wave_region_create(&many[i], 4096, "many", &e), 0);
    int rv = wave_region_register(c, many[i], &e);
    ck_assert_int_eq(rv, i < 3 ? 0 : WAVE_EREGION);
  }
  ck_assert_ptr_nonnull(strstr(e.message, "max_client_regions"));
  ck_assert_uint_eq(bh_regions(s, NULL), 3);
  /* closing the connection releases them */
  wave_client_close(c);
  size_t left = 3;
  for (int i = 0; i < 500 && left > 0; i++) {
    left = bh_regions(s, NULL);
    if (left)
      usleep(10000);
  }
  ck_assert_uint_eq(left, 0);
  for (int i = 0; i < 4; i++)
    wave_region_close(many[i]);
  nng_close(s);
  td_stop_ok(&d);
}
END_TEST

/* A memfd of n bytes, written (no holes), sealed with seals. */
static int bt_memfd(const char *name, size_t n, int seals)
{
  int fd = memfd_create(name, MFD_ALLOW_SEALING | MFD_CLOEXEC);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(ftruncate(fd, (off_t)n), 0);
  char *b = calloc(1, n);
  memset(b, 7, n);
  ck_assert_int_eq(pwrite(fd, b, n, 0), (ssize_t)n);
  free(b);
  if (seals)
    ck_assert_int_eq(fcntl(fd, F_ADD_SEALS, seals), 0);
  return fd;
}

START_TEST(region_refusals)
{
  td_daemon d;
  bh_start(&d, 1, NULL);
  nng_socket s = td_dial(d.ipc);
  /* unsealed memfd */
  int fd = bt_memfd("unsealed", 4096, 0);
  bh_expect(bh_register_fd(d.ipc, s, fd, 0, 0, 0), WAVE_EREGION,
            "F_SEAL_SHRINK");
  /* sealed against growing only */
  ck_assert_int_eq(fcntl(fd, F_ADD_SEALS, F_SEAL_GROW), 0);
  bh_expect(bh_register_fd(d.ipc, s, fd, 0, 0, 0), WAVE_EREGION,
            "F_SEAL_SHRINK");
  /* a memfd without sealing at all */
  int fd2 = memfd_create("nosealing", 0);
  ck_assert_int_eq(ftruncate(fd2, 4096), 0);
  bh_expect(bh_register_fd(d.ipc, s, fd2, 0, 0, 0), WAVE_EREGION,
            "F_SEAL_SHRINK");
  /* a plain file cannot be sealed */
  char file[256];
  snprintf(file, sizeof file, "%s/plain", d.dir);
  int fd3 = open(file, O_RDWR | O_CREAT, 0600);
  ck_assert_int_eq(ftruncate(fd3, 4096), 0);
  bh_expect(bh_register_fd(d.ipc, s, fd3, 0, 0, 0), WAVE_EREGION,
            "sealable memfd");
  /* a path, as older clients sent: the daemon opens nothing a client
   * names, and says how to fix it */
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)getpid(), fd);
  bh_expect(bh_register(s, NULL, path, 0, 0, 0), WAVE_EREGION,
            "not /proc paths: update libwaveclient");
  /* sealed, but asking for more than there is */
  ck_assert_int_eq(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
  bh_expect(bh_register_fd(d.ipc, s, fd, 8192, 0, 0), WAVE_ERANGE,
            "8192 asked");
  /* a sparse memfd: its zero pages would be faulted in, and charged, in
   * the daemon (issue 22, finding 7) */
  int sp = memfd_create("sparse", MFD_ALLOW_SEALING | MFD_CLOEXEC);
  ck_assert_int_eq(ftruncate(sp, 1 << 20), 0);
  ck_assert_int_eq(pwrite(sp, "x", 1, 0), 1);  /* one page, then holes */
  ck_assert_int_eq(fcntl(sp, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
  bh_expect(bh_register_fd(d.ipc, s, sp, 0, 0, 0), WAVE_EREGION, "sparse");
  /* ... its first page alone has no hole */
  Wave__V1__Response *r = bh_register_fd(d.ipc, s, sp, 4096, 0, 0);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_REGION);
  wave__v1__response__free_unpacked(r, NULL);
  /* ... and read by the jobs (a file region) it holds no memory */
  r = bh_register_fd(d.ipc, s, sp, 0, 1, 1);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_REGION);
  ck_assert(r->region->file);
  wave__v1__response__free_unpacked(r, NULL);
  close(sp);
  r = bh_register_fd(d.ipc, s, fd, 0, 0, 0);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_REGION);
  ck_assert_uint_eq(r->region->bytes, 4096);
  wave__v1__response__free_unpacked(r, NULL);
  /* over tcp: no peer credentials */
  uint8_t t[16];
  ck_assert_int_eq(bh_pass_fd(d.ipc, fd, 1, t, NULL, 0), 0);
  nng_socket tc = td_dial(d.tcp);
  bh_expect(bh_register(tc, t, NULL, 0, 0, 0), WAVE_EREGION,
            "ipc connections only");
  nng_close(tc);
  nng_close(s);
  close(fd);
  close(fd2);
  close(fd3);
  td_stop_ok(&d);

  /* off */
  bh_start(&d, 0, NULL);
  wave_client *c = bh_client(d.ipc);
  wave_region *rg;
  wave_error e;
  ck_assert_int_eq(wave_region_create(&rg, 4096, "off", &e), 0);
  ck_assert_int_eq(wave_region_register(c, rg, &e), WAVE_EREGION);
  ck_assert_ptr_nonnull(strstr(e.message, "allow_client_shm"));
  wave_region_close(rg);
  wave_client_close(c);
  td_stop_ok(&d);
}
END_TEST

/* A daemon-side copy of a plain file: no seals needed, a snapshot; a file
 * of another owner refused. */
START_TEST(region_copy)
{
  td_daemon d;
  bh_start(&d, 1, NULL);
  wave_client *c = bh_client(d.ipc);
  wave_error e;
  char file[256];
  snprintf(file, sizeof file, "%s/rows.raw", d.dir);
  size_t rows = 100000;
  uint32_t *p = malloc(rows * 4);
  bh_fill(p, rows, 5, 0);
  uint32_t want = 0;
  for (size_t i = 0; i < rows; i++)
    want += p[i];
  int fd = open(file, O_RDWR | O_CREAT | O_TRUNC, 0600);
  ck_assert_int_eq(write(fd, p, rows * 4), (ssize_t)(rows * 4));
  wave_region *rg;
  ck_assert_int_eq(wave_region_copy_fd(c, fd, 0, "copy", &rg, &e), 0);
  ck_assert_ptr_null(wave_region_data(rg));
  ck_assert_uint_eq(wave_region_size(rg), rows * 4);
  /* the file changes and shrinks: the copy does not */
  ck_assert_int_eq(ftruncate(fd, 0), 0);
  wave_extent x = {rg, 0, rows * 4};
  wave_region_reduce q = {.dtype = WAVE_U32, .op = WAVE_SUM, .input = &x,
                          .n_input = 1};
  wave_reduce_result res;
  ck_assert_int_eq(wave_reduce_region(c, &q, &res, &e), 0);
  ck_assert_uint_eq(res.bits[0], want);
  nng_socket s = td_dial(d.ipc);
  Wave__V1__Response *st = td_status(s, 3);
  ck_assert_uint_eq(st->status->n_regions, 1);
  ck_assert(st->status->regions[0]->copied);
  wave__v1__response__free_unpacked(st, NULL);
  ck_assert_int_eq(wave_region_unregister(c, rg, &e), 0);
  wave_region_close(rg);
  /* an empty file has nothing to copy */
  ck_assert_int_eq(wave_region_copy_fd(c, fd, 0, "empty", &rg, &e),
                   WAVE_EREGION);
  ck_assert_ptr_nonnull(strstr(e.message, "empty"));
  /* another owner's file: the client could open it, so it may hand it
   * over (docs/security.md "Regions"); its bits are the file's */
  ck_assert_int_eq(write(fd, p, 64), 64);
  uint32_t head[16];
  int theirs = bh_theirs(fd, head);
  ck_assert_msg(wave_region_copy_fd(c, theirs, 0, "theirs", &rg, &e) == 0,
                "%s", e.message);
  wave_extent x64 = {rg, 0, 64};
  q.input = &x64;
  ck_assert_int_eq(wave_reduce_region(c, &q, &res, &e), 0);
  uint32_t want16 = 0;
  for (int i = 0; i < 16; i++)
    want16 += head[i];
  ck_assert_uint_eq(res.bits[0], want16);
  ck_assert_int_eq(wave_region_unregister(c, rg, &e), 0);
  wave_region_close(rg);
  close(theirs);
  close(fd);
  nng_close(s);
  free(p);
  wave_client_close(c);
  td_stop_ok(&d);
}
END_TEST

/* Extents outside their region or payload. */
START_TEST(region_bounds)
{
  td_daemon d;
  bh_start(&d, 1, NULL);
  wave_client *c = bh_client(d.ipc);
  wave_error e;
  wave_region *rg;
  ck_assert_int_eq(wave_region_create(&rg, 4096, "bounds", &e), 0);
  ck_assert_int_eq(wave_region_register(c, rg, &e), 0);
  wave_reduce_result res;
  struct { size_t off, bytes; int code; const char *msg; } cases[] = {
    {0, 4100, WAVE_ERANGE, "outside region"},
    {4096, 4, WAVE_ERANGE, "outside region"},
    {(size_t)-8, 16, WAVE_ERANGE, "outside region"},
    {0, 6, WAVE_ELENGTH, "not a multiple of 4"},
    {2, 8, WAVE_ERANGE, "offset 2 is not a multiple of 4"},  /* rows read
                                                               as uint32 */
    {4092, 4, 0, ""},
    {4096, 0, 0, ""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    wave_extent x = {rg, cases[i].off, cases[i].bytes};
    wave_region_reduce q = {.dtype = WAVE_U32, .op = WAVE_MAX, .input = &x,
                            .n_input = 1};
    int rv = wave_reduce_region(c, &q, &res, &e);
    ck_assert_msg(rv == cases[i].code && (rv == 0 ||
                  strstr(e.message, cases[i].msg)),
                  "case %zu: %d %s", i, rv, rv ? e.message : "");
  }
  /* a mask extent out of bounds is named as such */
  wave_extent x = {rg, 0, 64}, mx = {rg, 4000, 200};
  wave_region_reduce q = {.dtype = WAVE_U32, .op = WAVE_SUM, .input = &x,
                          .n_input = 1, .mask = &mx, .n_mask = 1,
                          .has_mask = 1};
  ck_assert_int_eq(wave_reduce_region(c, &q, &res, &e), WAVE_ERANGE);
  ck_assert_ptr_nonnull(strstr(e.message, "mask chunk 0"));
  /* a region id never given */
  nng_socket s = td_dial(d.ipc);
  Wave__V1__Extent ex = WAVE__V1__EXTENT__INIT, *exp = &ex;
  ex.region = 77;
  ex.bytes = 4;
  Wave__V1__ReduceRequest rr = WAVE__V1__REDUCE_REQUEST__INIT;
  rr.dtype = WAVE__V1__DTYPE__U32;
  rr.op = WAVE__V1__OP__SUM;
  rr.n_input_at = 1;
  rr.input_at = &exp;
  Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
  rq.version = 1;
  rq.id = 4;
  rq.body_case = WAVE__V1__REQUEST__BODY_REDUCE;
  rq.reduce = &rr;
  bh_expect(td_call(s, &rq), WAVE_EREGION, "no region 77");
  /* another connection's region is not visible */
  ex.region = wave_region_id(rg);
  bh_expect(td_call(s, &rq), WAVE_EREGION, "registered by this connection");
  /* region 0 = the payload, in an unframed request */
  ex.region = 0;
  bh_expect(td_call(s, &rq), WAVE_EBADREQUEST, "not framed");
  nng_close(s);
  wave_region_close(rg);
  wave_client_close(c);
  td_stop_ok(&d);
}
END_TEST

/* Shrinking a region mid-job: the seal refuses it, the daemon reduces on. */
typedef struct bt_job {
  wave_client *c;
  wave_region_reduce q;
  wave_reduce_result res;
  int rv;
  wave_error e;
} bt_job;

static void *bt_run(void *arg)
{
  bt_job *j = arg;
  j->rv = wave_reduce_region(j->c, &j->q, &j->res, &j->e);
  return NULL;
}

START_TEST(region_shrink_mid_job)
{
  td_daemon d;
  bh_start(&d, 1, NULL);
  wave_client *c = bh_client(d.ipc);
  wave_error e;
  size_t rows = BH_ROWS_MAX;
  wave_region *rg;
  ck_assert_int_eq(wave_region_create(&rg, rows * 4, "shrink", &e), 0);
  uint32_t *p = wave_region_data(rg);
  for (size_t i = 0; i < rows; i++)
    p[i] = (uint32_t)i;
  ck_assert_int_eq(wave_region_register(c, rg, &e), 0);
  wave_extent x = {rg, 0, rows * 4};
  bt_job j = {.c = c, .q = {.dtype = WAVE_U32, .op = WAVE_SUM, .input = &x,
                            .n_input = 1}};
  pthread_t th;
  pthread_create(&th, NULL, bt_run, &j);
  /* while it runs (or queues): try to shrink, and to drop our mapping */
  errno = 0;
  ck_assert_int_eq(ftruncate(wave_region_fd(rg), 0), -1);
  ck_assert_int_eq(errno, EPERM);
  pthread_join(th, NULL);
  ck_assert_int_eq(j.rv, 0);
  uint32_t want = 0;
  for (size_t i = 0; i < rows; i++)
    want += (uint32_t)i;
  ck_assert_uint_eq(j.res.bits[0], want);
  wave_region_close(rg);  /* unmapped here; the daemon still has it */
  nng_socket s = td_dial(d.ipc);
  td_good(s);
  nng_close(s);
  wave_client_close(c);
  td_stop_ok(&d);
}
END_TEST

/* A client that dies with a job in flight: the job's reply goes nowhere,
 * the region is released, the daemon serves on. */
START_TEST(region_client_dies)
{
  td_daemon d;
  bh_start(&d, 1, NULL);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    wave_client *c;
    wave_error e;
    wave_region *rg;
    if (wave_client_open(&c, d.ipc, &e) != 0 ||
        wave_region_create(&rg, BH_ROWS_MAX * 4, "dies", &e) != 0 ||
        wave_region_register(c, rg, &e) != 0)
      _exit(2);
    wave_client_set_timeout(c, 1);  /* submit, then give up at once */
    wave_extent x = {rg, 0, BH_ROWS_MAX * 4};
    wave_region_reduce q = {.dtype = WAVE_U32, .op = WAVE_SUM, .input = &x,
                            .n_input = 1};
    wave_reduce_result res;
    wave_reduce_region(c, &q, &res, &e);
    _exit(0);  /* no close, no unregister */
  }
  int st;
  waitpid(pid, &st, 0);
  ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  nng_socket s = td_dial(d.ipc);
  size_t left = 1;
  for (int i = 0; i < 1000 && left > 0; i++) {
    left = bh_regions(s, NULL);
    if (left)
      usleep(10000);
  }
  ck_assert_uint_eq(left, 0);
  td_good(s);
  nng_close(s);
  ck_assert_ptr_nonnull(strstr(td_stderr(&d), "its client disconnected"));
  td_stop_ok(&d);
}
END_TEST

/* ---- the same bits from every path, on cpu and vulkan ------------------ */

/* The page's job-duration counts, for a failure's message (a whole page
 * is more than Check's messages carry). */
static const char *bt_counts(const char *page)
{
  static char out[3000];
  size_t n = 0;
  out[0] = '\0';
  for (const char *l = page; *l != '\0' && n < sizeof out - 1;) {
    const char *e = strchr(l, '\n');
    size_t len = e != NULL ? (size_t)(e - l + 1) : strlen(l);
    if (strncmp(l, "wavedd_job_duration_seconds_count", 33) == 0 &&
        len < sizeof out - 1 - n) {
      memcpy(out + n, l, len);
      out[n += len] = '\0';
    }
    l += len;
  }
  return out;
}

/* The metrics page at the daemon's "metrics on URL" log line, once it
 * (rendered once a second) holds `line`. */
static const char *bt_page_with(td_daemon *d, const char *line)
{
  char url[128] = "";
  const char *at = strstr(td_stderr(d), "metrics on http://");
  ck_assert_msg(at != NULL, "no metrics listener:\n%s", td_stderr(d));
  sscanf(at, "metrics on %127s", url);
  static const char *page;  /* td_http_get's buffer */
  page = "";
  for (int i = 0; i < 600 && strstr(page, line) == NULL; i++) {
    if (i > 0)
      usleep(50000);
    ck_assert_uint_eq(td_http_get(url, &page, NULL), 200);
  }
  ck_assert_msg(strstr(page, line) != NULL, "no '%s' in\n%s", line,
                bt_counts(page));
  return page;
}

/* The job-duration histogram's transfer phase (daemon/stats.h): every
 * reduction on vk0 (staged into its windows, or read in place from the
 * imported region) observes one, and together they took time; cpu0 reads
 * host memory where it lies and has no transfer series at all. */
static void bt_transfer_seen(td_daemon *d, unsigned jobs)
{
  char wait[200], line[200];
  snprintf(wait, sizeof wait, "wavedd_job_duration_seconds_count{device="
           "\"vk0\",kind=\"reduce\",phase=\"compute\"} %u\n", jobs);
  const char *page = bt_page_with(d, wait);
  snprintf(line, sizeof line, "wavedd_job_duration_seconds_count{device="
           "\"vk0\",kind=\"reduce\",phase=\"transfer\"} %u\n", jobs);
  ck_assert_msg(strstr(page, line) != NULL, "no '%s' in\n%s", line,
                bt_counts(page));
  const char *sum = "wavedd_job_duration_seconds_sum{device=\"vk0\","
                    "kind=\"reduce\",phase=\"transfer\"} ";
  const char *at = strstr(page, sum);
  ck_assert_msg(at != NULL, "no '%s' in\n%s", sum, bt_counts(page));
  ck_assert_double_gt(strtod(at + strlen(sum), NULL), 0.0);
  ck_assert_msg(strstr(page, "device=\"cpu0\",kind=\"reduce\","
                             "phase=\"transfer\"") == NULL,
                "cpu0 has a transfer series:\n%s", bt_counts(page));
}

START_TEST(region_bits_cpu_vulkan)
{
  td_daemon d;
  bh_prepare(&d, 1, "  - {name: cpu0, backend: cpu, threads: 1}\n"
                    "  - {name: vk0, backend: vulkan}\n");
  FILE *cf = fopen(d.cfg, "a");  /* and the metrics page, on a free port */
  ck_assert_ptr_nonnull(cf);
  fputs("metrics: http://127.0.0.1:0\n", cf);
  fclose(cf);
  ck_assert_msg(td_start(&d) == 0, "did not start:\n%s", td_stderr(&d));
  wave_client *c = bh_client(d.ipc);
  wave_error e;
  size_t rows = 1u << 21;
  wave_region *rg;
  ck_assert_int_eq(wave_region_create(&rg, rows * 8, "bits", &e), 0);
  uint32_t *p = wave_region_data(rg);
  bh_fill(p, rows, 9, 1);
  for (size_t i = 0; i < rows; i++)
    p[rows + i] = (uint32_t)(i % 7 != 0);
  ck_assert_int_eq(wave_region_register(c, rg, &e), 0);
  size_t cut[] = {0, 777, 1u << 20, rows};
  wave_extent ex[3];
  wave_chunk ch[3];
  for (int i = 0; i < 3; i++) {
    ex[i] = (wave_extent){rg, cut[i] * 4, (cut[i + 1] - cut[i]) * 4};
    ch[i] = (wave_chunk){p + cut[i], (cut[i + 1] - cut[i]) * 4};
  }
  wave_extent mx = {rg, rows * 4, rows * 4};
  wave_chunk mc = {p + rows, rows * 4};
  static const struct { wave_dtype dt; wave_op op; } ops[] = {
    {WAVE_F32, WAVE_SUM}, {WAVE_F32, WAVE_EXTENT},
    {WAVE_U32, WAVE_SUM}, {WAVE_S32, WAVE_MIN}, {WAVE_U32, WAVE_XOR},
  };
  const char *devs[] = {"cpu0", "vk0"};
  uint32_t first[5][2];
  for (int dv = 0; dv < 2; dv++)
    for (int k = 0; k < 5; k++)
      for (int masked = 0; masked < 2; masked++) {
        wave_region_reduce q = {.dtype = ops[k].dt, .op = ops[k].op,
                                .input = ex, .n_input = 3, .mask = &mx,
                                .n_mask = 1, .has_mask = masked,
                                .device = devs[dv]};
        wave_reduce_request m = {.dtype = ops[k].dt, .op = ops[k].op,
                                 .input = ch, .n_input = 3, .mask = &mc,
                                 .n_mask = 1, .has_mask = masked,
                                 .device = devs[dv]};
        wave_reduce_result a, b;
        ck_assert_int_eq(wave_reduce_region(c, &q, &a, &e), 0);
        ck_assert_int_eq(wave_reduce(c, &m, &b, &e), 0);  /* a stream */
        ck_assert_str_eq(a.device, devs[dv]);
        ck_assert_uint_eq(a.n_values, b.n_values);
        for (unsigned v = 0; v < a.n_values; v++)
          ck_assert_uint_eq(a.bits[v], b.bits[v]);
        ck_assert_uint_eq(a.count, b.count);
        if (!masked && dv == 0)
          first[k][0] = a.bits[0];
        if (!masked && dv == 1)
          ck_assert_uint_eq(a.bits[0], first[k][0]);
      }
  /* vk0 imported the read-only mapping (workers/vulkan/vk_pin.c): status
   * counts it (cpu0 does not pin), and no refusal was logged */
  nng_socket s = td_dial(d.ipc);
  ck_assert_uint_eq(bh_pinned(s), 1);
  nng_close(s);
  ck_assert_ptr_null(strstr(td_stderr(&d), "cannot pin it"));
  bt_transfer_seen(&d, 5 * 2 * 2);  /* vk0's region and stream jobs */
  wave_region_close(rg);
  wave_client_close(c);
  td_stop_ok(&d);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("bulk");
  TCase *rg = tcase_create("regions");
  tcase_set_timeout(rg, 300);
  tcase_add_test(rg, region_lifecycle);
  tcase_add_test(rg, region_refusals);
  tcase_add_test(rg, region_bounds);
  tcase_add_test(rg, region_copy);
  tcase_add_test(rg, region_shrink_mid_job);
  tcase_add_test(rg, region_client_dies);
  suite_add_tcase(s, rg);
  suite_add_tcase(s, bts_streams_tcase());
  suite_add_tcase(s, bt_gates_tcase());
  suite_add_tcase(s, btr_ring_tcase());
  suite_add_tcase(s, btp_pipes_tcase());
  if (getenv("WAVE_BULK_VULKAN") != NULL) {
    TCase *vk = tcase_create("vulkan");
    tcase_set_timeout(vk, 600);
    tcase_add_test(vk, region_bits_cpu_vulkan);
    suite_add_tcase(s, vk);
  }
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
