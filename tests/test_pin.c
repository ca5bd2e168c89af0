/* test_pin.c - shared-memory regions pinned for the devices (daemon/
 * region.h): a region pinned piece by piece from its registration on, in
 * the device's own time, every piece released when it goes (the fake
 * backend's pinning slots, workers/fake/fake.c); and regions of huge
 * pages, mapped and unmapped by the daemon in whole huge pages; a pin that
 * waits while another device copies.  Against
 * the real wavedd-test through libwaveclient (tests/bulk_harness.h).
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <nng/nng.h>

#include "bulk_harness.h"
#include "daemon_harness.h"
#include "skip.h"
#include "wave/client.h"

/* Count of `needle` in the daemon's log so far. */
static int tp_log_count(const td_daemon *d, const char *needle)
{
  int n = 0;
  for (const char *p = td_stderr(d); (p = strstr(p, needle)) != NULL; p++)
    n++;
  return n;
}

/* The u32 sum of a region's first `rows` rows on `device` is the host's. */
static void tp_sum_on(wave_client *c, wave_region *rg, const uint32_t *p,
                      size_t rows, const char *device)
{
  wave_error e = {0};
  wave_extent in = {rg, 0, rows * 4};
  wave_region_reduce q = {.dtype = WAVE_U32, .op = WAVE_SUM, .input = &in,
                          .n_input = 1, .device = device};
  wave_reduce_result a;
  ck_assert_msg(wave_reduce_region(c, &q, &a, &e) == 0, "%s: %s", device,
                e.message);
  uint32_t want = 0;
  for (size_t i = 0; i < rows; i++)
    want += p[i];
  ck_assert_uint_eq(a.bits[0], want);
}

/* A device that pins (the fake backend's slots, workers/fake/fake.c) has a
 * registered region pinned in WD_PIN_PIECE pieces, in its own time (jobs
 * before and after give the same bits), every piece released when it is
 * unregistered; a region whose client goes away mid-pin is released
 * whole too, and the daemon keeps serving. */
START_TEST(region_pinned_in_pieces)
{
  td_daemon d;
  bh_prepare(&d, 1, "  - {name: fk0, backend: fake}\n"
                    "  - {name: cpu0, backend: cpu, threads: 1}\n");
  d.fake = 1;
  if (td_start(&d) != 0)
    ck_abort_msg("wavedd-test did not start:\n%s", td_stderr(&d));
  wave_client *c = bh_client(d.ipc);
  wave_error e = {0};
  const size_t piece = 32u << 20, bytes = 3 * piece + 3 * 4096;  /* 4 */
  const size_t rows = BH_ROWS_MAX;
  wave_region *rg;
  ck_assert_int_eq(wave_region_create(&rg, bytes, "pin", &e), 0);
  ck_assert_int_eq(wave_region_register(c, rg, &e), 0);
  uint32_t *p = wave_region_data(rg);
  bh_fill(p, rows, 3, 0);
  nng_socket s = td_dial(d.ipc);
  wave_extent in = {rg, 4096, rows * 4};
  wave_region_reduce q = {.dtype = WAVE_U32, .op = WAVE_XOR, .input = &in,
                          .n_input = 1, .device = "fk0"};
  wave_reduce_result a, b;
  ck_assert_int_eq(wave_reduce_region(c, &q, &b, &e), 0);  /* maybe partly */
  for (int i = 0; i < 500 && bh_pinned(s) == 0; i++)
    usleep(10000);
  ck_assert_uint_eq(bh_pinned(s), 1);
  ck_assert_int_eq(wave_reduce_region(c, &q, &a, &e), 0);
  ck_assert_uint_eq(a.bits[0], b.bits[0]);
  q.device = "cpu0";
  ck_assert_int_eq(wave_reduce_region(c, &q, &b, &e), 0);
  ck_assert_uint_eq(a.bits[0], b.bits[0]);
  uint32_t want = 0;
  for (size_t i = 0; i < rows; i++)
    want ^= p[1024 + i];
  ck_assert_uint_eq(a.bits[0], want);
  ck_assert_int_eq(wave_region_unregister(c, rg, &e), 0);
  wave_region_close(rg);
  char line[160];
  snprintf(line, sizeof line, "fake fk0: unpinned 4 pieces, %zu bytes; 0 left",
           bytes);
  for (int i = 0; i < 500 && tp_log_count(&d, line) == 0; i++)
    usleep(10000);
  ck_assert_msg(tp_log_count(&d, line) == 1, "no \"%s\" in:\n%s", line,
                td_stderr(&d));

  /* registered, then its client is gone while the pieces are pinned */
  wave_client *c2 = bh_client(d.ipc);
  ck_assert_int_eq(wave_region_create(&rg, 8 * piece, "gone", &e), 0);
  ck_assert_int_eq(wave_region_register(c2, rg, &e), 0);
  wave_client_close(c2);
  wave_region_close(rg);
  size_t left = 1;
  for (int i = 0; i < 500 && left > 0; i++) {
    left = bh_regions(s, NULL);
    if (left > 0)
      usleep(10000);
  }
  ck_assert_uint_eq(left, 0);
  /* whatever was pinned of it went too: no unpin leaves a piece behind */
  for (int i = 0; i < 100 && strstr(td_stderr(&d), "(gone) unmapped") == NULL;
       i++)
    usleep(10000);
  ck_assert_ptr_nonnull(strstr(td_stderr(&d), "(gone) unmapped"));
  ck_assert_int_eq(tp_log_count(&d, " left\n"), tp_log_count(&d, " 0 left\n"));
  /* and the daemon serves on */
  uint32_t rows16[16] = {1, 2, 3};
  wave_chunk ch = {rows16, sizeof rows16};
  wave_reduce_request m = {.dtype = WAVE_U32, .op = WAVE_SUM, .input = &ch,
                           .n_input = 1, .device = "fk0"};
  ck_assert_int_eq(wave_reduce(c, &m, &b, &e), 0);
  ck_assert_uint_eq(b.bits[0], 6);
  nng_close(s);
  wave_client_close(c);
  td_stop_ok(&d);
}
END_TEST

/* A reduction on fk0 of its own client, held inside the device (the fake
 * backend's DIR/.reduce): fk0 stays busy copying until the file goes. */
typedef struct tp_held {
  const char *url;
  int rc;
  uint32_t sum;
} tp_held;

static void *tp_held_reduce(void *arg)
{
  tp_held *h = arg;
  wave_client *c = bh_client(h->url);
  uint32_t rows[64];
  for (unsigned i = 0; i < 64; i++)
    rows[i] = 3 * i + 1;
  wave_chunk ch = {rows, sizeof rows};
  wave_reduce_request m = {.dtype = WAVE_U32, .op = WAVE_SUM, .input = &ch,
                           .n_input = 1, .device = "fk0"};
  wave_reduce_result r;
  wave_error e = {0};
  h->rc = wave_reduce(c, &m, &r, &e);
  h->sum = r.bits[0];
  wave_client_close(c);
  return NULL;
}

/* A pin stalls other devices' copies, so a region registered while fk0
 * copies is pinned on fk1 only after fk0's reduction, up to a bound per
 * piece (bulk/regionpin.c): the wait is said, fk1 still pins the region
 * while fk0 stays busy (the bound, so a device never idle does not keep
 * a region staged), fk0 pins it once free, and the bits are the same. */
START_TEST(region_pin_waits_for_copies)
{
  char hold[] = "/tmp/wv-pinhold-XXXXXX", flag[64], devs[400];
  ck_assert_ptr_nonnull(mkdtemp(hold));
  snprintf(flag, sizeof flag, "%s/.reduce", hold);
  snprintf(devs, sizeof devs,
           "  - {name: fk0, backend: fake, device: \"hold_prepare=%s\"}\n"
           "  - {name: fk1, backend: fake}\n", hold);
  td_daemon d;
  bh_prepare(&d, 1, devs);
  d.fake = 1;
  if (td_start(&d) != 0)
    ck_abort_msg("wavedd-test did not start:\n%s", td_stderr(&d));
  td_write(flag, "");
  tp_held h = {.url = d.ipc, .rc = -1};
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, tp_held_reduce, &h), 0);
  for (int i = 0; i < 500 && tp_log_count(&d, "fake fk0: reduction held") == 0;
       i++)
    usleep(10000);
  ck_assert_int_eq(tp_log_count(&d, "fake fk0: reduction held"), 1);

  wave_client *c = bh_client(d.ipc);
  wave_error e = {0};
  const size_t piece = 32u << 20, bytes = 2 * piece;
  wave_region *rg;
  ck_assert_int_eq(wave_region_create(&rg, bytes, "wait", &e), 0);
  uint32_t *p = wave_region_data(rg);
  bh_fill(p, bytes / 4, 9, 0);
  ck_assert_int_eq(wave_region_register(c, rg, &e), 0);
  nng_socket s = td_dial(d.ipc);
  const char *said = "waits while fk0 copies";
  for (int i = 0; i < 500 && tp_log_count(&d, said) == 0; i++)
    usleep(10000);
  ck_assert_msg(tp_log_count(&d, said) == 1, "no \"%s\" in:\n%s", said,
                td_stderr(&d));
  for (int i = 0; i < 1000 && bh_pinned(s) == 0; i++)
    usleep(10000);
  ck_assert_uint_eq(bh_pinned(s), 1);  /* fk1's, with fk0 still held */
  ck_assert_int_eq(h.rc, -1);
  unlink(flag);
  pthread_join(th, NULL);
  ck_assert_int_eq(h.rc, 0);
  ck_assert_uint_eq(h.sum, 64 + 3 * 63 * 64 / 2);
  for (int i = 0; i < 500 && bh_pinned(s) < 2; i++)
    usleep(10000);
  ck_assert_uint_eq(bh_pinned(s), 2);

  tp_sum_on(c, rg, p, BH_ROWS_MAX, "fk0");
  tp_sum_on(c, rg, p, BH_ROWS_MAX, "fk1");
  ck_assert_int_eq(wave_region_unregister(c, rg, &e), 0);
  wave_region_close(rg);
  nng_close(s);
  wave_client_close(c);
  rmdir(hold);
  td_stop_ok(&d);
}
END_TEST

static long tp_read_long(const char *path)
{
  FILE *f = fopen(path, "r");
  long v = -1;
  if (f != NULL) {
    if (fscanf(f, "%ld", &v) != 1)
      v = -1;
    fclose(f);
  }
  return v;
}

static int tp_write_long(const char *path, long v)
{
  FILE *f = fopen(path, "w");
  if (f == NULL)
    return -1;
  int rc = fprintf(f, "%ld\n", v) > 0 ? 0 : -1;
  return fclose(f) == 0 ? rc : -1;
}

/* Bytes of pid's mappings in pages of kernel size kib (smaps). */
static long tp_mapped_kib(pid_t pid, long kib)
{
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%ld/smaps", (long)pid);
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  long size = 0, total = 0, page;
  while (fgets(line, sizeof line, f) != NULL) {
    if (sscanf(line, "Size: %ld kB", &size) == 1)
      continue;
    if (sscanf(line, "KernelPageSize: %ld kB", &page) == 1 && page == kib)
      total += size;
  }
  fclose(f);
  return total;
}

/* A region of 64 MiB or more is of huge pages when the host has them
 * reserved: the daemon maps it (whole huge pages, smaps) and reduces it
 * with the bits of a message job, and unmaps it all when it goes.  Where
 * the pool can be raised (root, not a read-only /proc), this test raises
 * it for the case; elsewhere it checks the fallback to ordinary pages. */
START_TEST(region_huge_pages)
{
  static const char *pool = "/proc/sys/vm/nr_hugepages";
  const size_t bytes = (64u << 20) + 12345 * 4;  /* not a whole huge page */
  long had = tp_read_long(pool);
  int raised = had >= 0 && tp_write_long(pool, had + 40) == 0 &&
               tp_read_long(pool) >= had + 40;
  td_daemon d;
  bh_start(&d, 1, NULL);
  wave_client *c = bh_client(d.ipc);
  wave_error e = {0};
  wave_region *rg;
  ck_assert_int_eq(wave_region_create(&rg, bytes, "huge", &e), 0);
  /* its pages are the memfd's now (a shared mapping reserves them at
   * mmap); the pool goes back before anything here can fail */
  if (raised)
    ck_assert_int_eq(tp_write_long(pool, had), 0);
  ck_assert_uint_eq(wave_region_size(rg), bytes);
  struct statfs sf;
  ck_assert_int_eq(fstatfs(wave_region_fd(rg), &sf), 0);
  int huge = sf.f_type == HUGETLBFS_MAGIC;
  ck_assert_msg(huge == raised, "huge pages %s, but the region is %s",
                raised ? "reserved" : "not reserved",
                huge ? "of huge pages" : "not");
  uint32_t *p = wave_region_data(rg);
  size_t rows = BH_ROWS_MAX;
  bh_fill(p, bytes / 4, 11, 0);
  ck_assert_int_eq(wave_region_register(c, rg, &e), 0);
  long before = tp_mapped_kib(d.pid, 2048);
  if (huge)  /* the daemon's mapping: whole huge pages past `bytes` */
    ck_assert_int_eq(before, (long)((bytes + (2u << 20) - 1) >> 21) * 2048);
  /* the last rows, up to the region's very end */
  wave_extent in = {rg, bytes - rows * 4, rows * 4};
  wave_region_reduce q = {.dtype = WAVE_U32, .op = WAVE_SUM, .input = &in,
                          .n_input = 1};
  wave_reduce_result a, b;
  ck_assert_int_eq(wave_reduce_region(c, &q, &a, &e), 0);
  wave_chunk ch = {(char *)p + bytes - rows * 4, rows * 4};
  wave_reduce_request m = {.dtype = WAVE_U32, .op = WAVE_SUM, .input = &ch,
                           .n_input = 1};
  ck_assert_int_eq(wave_reduce(c, &m, &b, &e), 0);
  ck_assert_uint_eq(a.bits[0], b.bits[0]);
  ck_assert_int_eq(wave_region_unregister(c, rg, &e), 0);
  long left = -1;
  for (int i = 0; i < 300 && left != 0; i++) {
    left = tp_mapped_kib(d.pid, 2048);
    if (left != 0)
      usleep(10000);
  }
  ck_assert_int_eq(left, 0);
  wave_region_close(rg);
  wave_client_close(c);
  td_stop_ok(&d);
  if (!raised)
    wvs_note("region_huge_pages: no huge pages to reserve here (root "
             "raises the pool); only the fallback to ordinary pages was "
             "checked");
}
END_TEST

/* A memfd of huge pages can lose a page to a punched hole
 * (FALLOC_FL_PUNCH_HOLE) under the daemon's mapping; with no free huge page
 * left, the daemon's next read of it is a SIGBUS (issue 22, finding 3).
 * So the daemon maps one only when it is sealed against writes too
 * (F_SEAL_FUTURE_WRITE or F_SEAL_WRITE), which makes the kernel refuse the
 * hole: one sealed against shrinking only is refused with REGION, the
 * sealed one cannot be punched, registers, and reduces with the bits of a
 * message job, and the daemon serves on.  The library's regions of huge
 * pages are sealed so (region_huge_pages registers one). */
START_TEST(region_huge_hole)
{
  static const char *pool = "/proc/sys/vm/nr_hugepages";
  long had = tp_read_long(pool);
  int raised = had >= 0 && tp_write_long(pool, had + 8) == 0 &&
               tp_read_long(pool) >= had + 8;
  int fd = memfd_create("hole", MFD_HUGETLB | MFD_ALLOW_SEALING | MFD_CLOEXEC);
  struct stat st;
  size_t page = fd >= 0 && fstat(fd, &st) == 0 ? (size_t)st.st_blksize : 0;
  void *m = MAP_FAILED;
  if (page > 0 && ftruncate(fd, (off_t)(4 * page)) == 0)
    m = mmap(NULL, 4 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (raised)
    ck_assert_int_eq(tp_write_long(pool, had), 0);  /* the pages are ours */
  if (m == MAP_FAILED) {
    wvs_note("region_huge_hole: no huge pages here (pool %ld, could %sraise "
             "it)", had, raised ? "" : "not ");
    if (fd >= 0)
      close(fd);
    return;
  }
  size_t rows = 4 * page / 4;
  bh_fill(m, rows, 23, 0);
  td_daemon d;
  bh_start(&d, 1, NULL);
  nng_socket s = td_dial(d.ipc);
  /* sealed against shrinking only: a hole could be punched; refused */
  ck_assert_int_eq(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
  bh_expect(bh_register_fd(d.ipc, s, fd, 0, 0, 0), WAVE_EREGION,
            "F_SEAL_FUTURE_WRITE");
  /* sealed against writes: our mapping stays writable, no hole can be made */
  ck_assert_int_eq(fcntl(fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE), 0);
  ck_assert_int_eq(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                             (off_t)page, (off_t)page), -1);
  ck_assert_int_eq(errno, EPERM);
  Wave__V1__Response *r = bh_register_fd(d.ipc, s, fd, 0, 0, 0);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_REGION);
  uint64_t id = r->region->id;
  wave__v1__response__free_unpacked(r, NULL);
  ((uint32_t *)m)[5] += 3;  /* still writable through our mapping */
  uint32_t want = 0;
  for (size_t i = 0; i < rows; i++)
    want += ((uint32_t *)m)[i];
  Wave__V1__Extent ex = WAVE__V1__EXTENT__INIT, *exp = &ex;
  ex.region = id;
  ex.bytes = rows * 4;
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
  r = td_call(s, &rq);
  ck_assert_msg(r->body_case == WAVE__V1__RESPONSE__BODY_REDUCE, "%s",
                r->body_case == WAVE__V1__RESPONSE__BODY_ERROR
                    ? r->error->message : "?");
  ck_assert_uint_eq(r->reduce->bits[0], want);
  wave__v1__response__free_unpacked(r, NULL);
  td_good(s);
  nng_close(s);
  munmap(m, 4 * page);
  close(fd);
  td_stop_ok(&d);
}
END_TEST

#ifdef WAVE_PIN_OPENCL
/* A region all pinned by one backend (fk0) and reduced on a device of
 * another that stages (ocl0, PoCL): that device cannot use the other
 * backend's pins, so its job reads the rows through the reader pool (before,
 * "pinned somewhere" sent it to the device's one-thread staging, which is
 * how vk0 reduced regions cuda0 had pinned at 0.15x a pinned copy). */
START_TEST(region_pinned_by_another_backend)
{
  td_daemon d;
  bh_prepare(&d, 1, "  - {name: fk0, backend: fake}\n"
                    "  - {name: ocl0, backend: opencl, platform: 0, "
                    "index: 0}\n");
  d.fake = 1;
  if (td_start(&d) != 0)
    ck_abort_msg("wavedd-test did not start:\n%s", td_stderr(&d));
  wave_client *c = bh_client(d.ipc);
  wave_error e = {0};
  const size_t rows = 1u << 20;
  wave_region *rg;
  ck_assert_int_eq(wave_region_create(&rg, rows * 4, "other", &e), 0);
  uint32_t *p = wave_region_data(rg);
  bh_fill(p, rows, 5, 0);
  ck_assert_int_eq(wave_region_register(c, rg, &e), 0);
  nng_socket s = td_dial(d.ipc);
  for (int i = 0; i < 500 && bh_pinned(s) == 0; i++)
    usleep(10000);
  ck_assert_uint_eq(bh_pinned(s), 1);  /* fk0's slot; ocl0 does not pin */
  const char *line = "opencl: a reduction's spans go through the readers";
  ck_assert_int_eq(tp_log_count(&d, line), 0);
  tp_sum_on(c, rg, p, rows, "ocl0");
  tp_sum_on(c, rg, p, rows, "fk0");
  for (int i = 0; i < 200 && tp_log_count(&d, line) == 0; i++)
    usleep(10000);  /* the log line is written by the device thread */
  ck_assert_msg(tp_log_count(&d, line) == 1, "no \"%s\" in:\n%s", line,
                td_stderr(&d));
  ck_assert_int_eq(wave_region_unregister(c, rg, &e), 0);
  wave_region_close(rg);
  nng_close(s);
  wave_client_close(c);
  td_stop_ok(&d);
}
END_TEST
#endif

int main(void)
{
  Suite *s = suite_create("pin");
  TCase *tc = tcase_create("regions");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, region_pinned_in_pieces);
  tcase_add_test(tc, region_pin_waits_for_copies);
#ifdef WAVE_PIN_OPENCL
  tcase_add_test(tc, region_pinned_by_another_backend);
#endif
  suite_add_tcase(s, tc);
  /* huge pages: the pool is raised by root (entry test_pin_huge) */
  TCase *huge = wvs_tcase("huge", 300);
  tcase_add_test(huge, region_huge_pages);
  tcase_add_test(huge, region_huge_hole);
  suite_add_tcase(s, huge);
  return wvs_run(s, CK_NORMAL);
}
