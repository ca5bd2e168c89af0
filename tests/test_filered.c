/* test_filered.c - file regions against the real wavedd (docs/protocol.md
 * "Regions", daemon/bulk/filered.h): a job reads the client's file in pieces
 * through a ring of buffers and merges the pieces' answers, so every case
 * here compares its bits with the same rows sent as a message and with the
 * CPU reference: every dtype and op, with and without a mask, files whose
 * row counts are not multiples of the slot or the piece, several input and
 * mask chunks whose boundaries differ (empty and all-masked ones included),
 * a mask in a mapped memfd region next to an input file, float rows that
 * make the fixed tree visible (1 + 2^-24), NaN/inf/-0.0/subnormals,
 * pieces with no finite row, and sums of selected -0.0 rows next to
 * all-masked pieces.  The same cases run with the daemon's default
 * pieces (CPU: 256 KiB, 16 per 4 MiB slot read in four parts by the
 * reader pool) and with WAVED_FILE_LEVELS=1 and 3 (256-row and 2^24-row
 * pieces, slots in four parts),
 * and, in the Vulkan build, on lavapipe (case vulkan).  With
 * WAVED_FILE_MASKS=apply (ctest test_filered_applied) the readers apply
 * every mask to the rows they read and the device reduces them unmasked,
 * as for a device that stages masks (Vulkan, where the vulkan case checks
 * the same).
 * Copy regions and memfd regions filled before registration take the same
 * path where the device would stage them (WAVED_FILE_STAGE=1 makes the CPU
 * do so here), with limits.file_readers: 3 (case region_bits_staged).
 * Then the refusals: another owner's file, a file that shrinks before or
 * during a job (REGION, the daemon keeps serving).
 */
#include <check.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nng/nng.h>

#include "bulk_harness.h"
#include "daemon_harness.h"
#include "wave/client.h"
#include "core/reduce.h"

#define FT_ROWS_MAX (1u << 22)

static const char *tfi_devices = "  - {name: cpu0, backend: cpu, threads: 2}\n";
static const char *tfi_limits = "";  /* more limits: lines */
static const char *tfi_stage;        /* WAVED_FILE_STAGE for the daemon */

static void tfi_start(td_daemon *d, const char *levels)
{
  td_prepare(d, NULL);
  char text[1024];
  snprintf(text, sizeof text,
           "listen: [\"%s\"]\n"
           "allow_client_shm: true\n"
           "log_level: debug\n"
           "limits:\n"
           "  max_request_bytes: 33554432\n"
           "  max_job_rows: %u\n%s"
           "packs:\n"
           "  load: []\n"
           "devices:\n%s",
           d->ipc, FT_ROWS_MAX, tfi_limits, tfi_devices);
  td_write(d->cfg, text);
  if (levels != NULL)
    setenv("WAVED_FILE_LEVELS", levels, 1);
  if (tfi_stage != NULL)
    setenv("WAVED_FILE_STAGE", tfi_stage, 1);
  int rc = td_start(d);
  unsetenv("WAVED_FILE_LEVELS");
  unsetenv("WAVED_FILE_STAGE");
  if (rc != 0) {
    fprintf(stderr, "wavedd did not start:\n%s\n", td_stderr(d));
    ck_abort_msg("wavedd did not start");
  }
}

static uint64_t tfi_next(uint64_t *x)
{
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  return *x;
}

/* Rows of kind 0 (integers), 1 (finite floats whose sum depends on the
 * tree), 4 (the same with some NaN and inf), 2 (floats with almost no
 * finite row). */
static void tfi_fill(uint32_t *rows, size_t n, uint32_t seed, int kind)
{
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 7;
  for (size_t i = 0; i < n; i++) {
    uint64_t r = tfi_next(&x);
    uint32_t b;
    if (kind == 0) {
      b = (uint32_t)(r >> 17);
    } else if (kind == 2) {
      static const uint32_t odd[] = {0x7fc00001u, 0x7f800000u, 0xff800000u,
                                     0xffc00000u};
      b = odd[r % 4];
      if (i == n - 3)
        b = 0x00000000u;  /* the one finite row, late: +0.0 */
    } else {
      switch (r % 16) {
      case 0: b = 0x3f800000u; break;             /* 1.0 */
      case 1: case 2: b = 0x33800000u; break;     /* 2^-24 */
      case 3: b = 0x80000000u; break;             /* -0.0 */
      case 4: b = 0x00000001u; break;             /* a subnormal */
      case 5: b = kind == 4 && r % 1000 == 5 ? 0x7f800000u : 0x4b000000u;
        break;
      case 6: b = kind == 4 && r % 1000 == 6 ? 0x7fc00000u : 0xcb000000u;
        break;
      default: {
        float f = (float)((int64_t)((r >> 8) % 2000001) - 1000000) / 1024.0f;
        memcpy(&b, &f, 4);
      }
      }
    }
    rows[i] = b;
  }
}

/* A mask with whole masked-out stretches (a 65536-row piece among them). */
static void tfi_mask(uint32_t *m, size_t n, uint32_t seed)
{
  uint64_t x = seed * 0x2545f4914f6cdd1dull + 3;
  for (size_t i = 0; i < n; i++)
    m[i] = (tfi_next(&x) % 3) != 0 ? (uint32_t)(1 + (i & 7)) : 0;
  for (size_t i = 65536; i < n && i < 131072; i++)
    m[i] = 0;
  for (size_t i = 0; i < n && i < 300; i++)
    m[i] = 0;
}

static int tfi_write_file(const char *path, const void *p, size_t bytes)
{
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(write(fd, p, bytes), (ssize_t)bytes);
  return fd;
}

typedef struct tfi_case {
  wave_dtype dt;
  wave_op op;
} tfi_case;

static const tfi_case tfi_cases[] = {
  {WAVE_U32, WAVE_SUM}, {WAVE_U32, WAVE_MIN}, {WAVE_U32, WAVE_MAX},
  {WAVE_U32, WAVE_EXTENT}, {WAVE_U32, WAVE_AND}, {WAVE_U32, WAVE_OR},
  {WAVE_U32, WAVE_XOR}, {WAVE_S32, WAVE_SUM}, {WAVE_S32, WAVE_MIN},
  {WAVE_S32, WAVE_MAX}, {WAVE_S32, WAVE_EXTENT}, {WAVE_S32, WAVE_AND},
  {WAVE_S32, WAVE_OR}, {WAVE_S32, WAVE_XOR}, {WAVE_F32, WAVE_SUM},
  {WAVE_F32, WAVE_MIN}, {WAVE_F32, WAVE_MAX}, {WAVE_F32, WAVE_EXTENT},
};

/* One layout of rows into chunks: cut points as fractions of n. */
typedef struct tfi_split {
  unsigned n_in, n_mask;
  double in_cut[3], mask_cut[3];  /* ends of all but the last chunk */
} tfi_split;

static const tfi_split tfi_splits[] = {
  {1, 1, {0}, {0}},
  {3, 2, {0.37, 0.37}, {0.61}},         /* an empty input chunk */
  {2, 3, {0.5}, {0.1, 0.9}},
};

static size_t tfi_cuts(size_t n, unsigned k, const double *cut, size_t *ends)
{
  for (unsigned i = 0; i + 1 < k; i++)
    ends[i] = (size_t)(cut[i] * (double)n);
  ends[k - 1] = n;
  return k;
}

/* Where the input rows are: a file region, a copy region of the same
 * file, a memfd region filled before it was registered. */
enum { FT_IN_FILE, FT_IN_COPY, FT_IN_MEMFD };
static int tfi_in_kind = FT_IN_FILE;
static void tfi_staged(const char *levels, const size_t *sizes, size_t n);

/* Every case over rows[0..n) (input: as tfi_in_kind says) and mask[0..n) (a
 * file, or a mapped memfd region when mask_mem), compared with the message
 * job and the reference. */
static void tfi_run(wave_client *c, const char *dir, const uint32_t *rows,
                   const uint32_t *mask, size_t n, int floats, int mask_mem)
{
  char fin[300], fmk[300];
  snprintf(fin, sizeof fin, "%s/in.raw", dir);
  snprintf(fmk, sizeof fmk, "%s/mask.raw", dir);
  /* the input file starts with 12 bytes that no extent uses */
  uint8_t *buf = calloc(1, n * 4 + 12);
  memcpy(buf + 12, rows, n * 4);
  int fdi = tfi_write_file(fin, buf, n * 4 + 12);
  int fdm = tfi_write_file(fmk, mask, n * 4);
  wave_error e;
  wave_region *ri, *rm;
  if (tfi_in_kind == FT_IN_FILE) {
    ck_assert_int_eq(wave_region_file_fd(c, fdi, 0, "in", &ri, &e), 0);
  } else if (tfi_in_kind == FT_IN_COPY) {
    ck_assert_int_eq(lseek(fdi, 0, SEEK_SET), 0);
    ck_assert_int_eq(wave_region_copy_fd(c, fdi, 0, "in", &ri, &e), 0);
  } else {
    ck_assert_int_eq(wave_region_create(&ri, n * 4 + 12, "in", &e), 0);
    memcpy(wave_region_data(ri), buf, n * 4 + 12);
    ck_assert_int_eq(wave_region_register(c, ri, &e), 0);
  }
  free(buf);
  if (mask_mem) {
    ck_assert_int_eq(wave_region_create(&rm, n * 4 + 4, "mask", &e), 0);
    memcpy(wave_region_data(rm), mask, n * 4);
    ck_assert_int_eq(wave_region_register(c, rm, &e), 0);
  } else {
    ck_assert_int_eq(wave_region_file_fd(c, fdm, 0, "mask", &rm, &e), 0);
  }
  close(fdi);
  close(fdm);
  for (size_t sp = 0; sp < sizeof tfi_splits / sizeof tfi_splits[0]; sp++) {
    const tfi_split *s = &tfi_splits[sp];
    size_t ie[3], me[3];
    tfi_cuts(n, s->n_in, s->in_cut, ie);
    tfi_cuts(n, s->n_mask, s->mask_cut, me);
    wave_extent xin[3], xmk[3];
    wave_chunk cin[3], cmk[3];
    wv_span sin[3], smk[3];
    for (unsigned i = 0, a = 0; i < s->n_in; a = (unsigned)ie[i], i++) {
      xin[i] = (wave_extent){ri, 12 + (size_t)a * 4, (ie[i] - a) * 4};
      cin[i] = (wave_chunk){rows + a, (ie[i] - a) * 4};
      sin[i] = (wv_span){rows + a, ie[i] - a};
    }
    for (unsigned i = 0, a = 0; i < s->n_mask; a = (unsigned)me[i], i++) {
      xmk[i] = (wave_extent){rm, (size_t)a * 4, (me[i] - a) * 4};
      cmk[i] = (wave_chunk){mask + a, (me[i] - a) * 4};
      smk[i] = (wv_span){mask + a, me[i] - a};
    }
    for (size_t k = 0; k < sizeof tfi_cases / sizeof tfi_cases[0]; k++) {
      const tfi_case *fc = &tfi_cases[k];
      if ((fc->dt == WAVE_F32) != (floats != 0))
        continue;
      for (int hm = 0; hm < 2; hm++) {
        wave_region_reduce q = {.dtype = fc->dt, .op = fc->op, .input = xin,
                                .n_input = s->n_in, .mask = xmk,
                                .n_mask = hm ? s->n_mask : 0, .has_mask = hm};
        wave_reduce_request m = {.dtype = fc->dt, .op = fc->op, .input = cin,
                                 .n_input = s->n_in, .mask = cmk,
                                 .n_mask = hm ? s->n_mask : 0,
                                 .has_mask = hm};
        wv_reduce_job j = {.dtype = fc->dt, .op = fc->op, .input = sin,
                           .n_input = s->n_in, .mask = smk,
                           .n_mask = hm ? s->n_mask : 0, .has_mask = hm,
                           .rows = n};
        wave_reduce_result rf, rmsg;
        wv_reduce_out ref;
        int rc = wave_reduce_region(c, &q, &rf, &e);
        ck_assert_msg(rc == 0, "%s %s n=%zu split %zu mask %d: %s",
                      wave_dtype_name(fc->dt), wave_op_name(fc->op), n, sp,
                      hm, e.message);
        ck_assert_int_eq(wave_reduce(c, &m, &rmsg, &e), 0);
        ck_assert_int_eq(wv_reduce_reference(&j, &ref, &e), 0);
        for (unsigned v = 0; v < ref.n_values; v++)
          ck_assert_msg(rf.bits[v] == rmsg.bits[v] &&
                        rf.bits[v] == ref.bits[v],
                        "%s %s n=%zu split %zu mask %d value %u: file "
                        "0x%08x message 0x%08x reference 0x%08x",
                        wave_dtype_name(fc->dt), wave_op_name(fc->op), n, sp,
                        hm, v, (unsigned)rf.bits[v], (unsigned)rmsg.bits[v],
                        (unsigned)ref.bits[v]);
        ck_assert_uint_eq(rf.n_values, ref.n_values);
        ck_assert_uint_eq(rf.count, ref.count);
        ck_assert_uint_eq(rf.count, rmsg.count);
        ck_assert_uint_eq(rf.rows, n);
        ck_assert_int_eq(rf.finite, rmsg.finite);
      }
    }
  }
  ck_assert_int_eq(wave_region_unregister(c, ri, &e), 0);
  ck_assert_int_eq(wave_region_unregister(c, rm, &e), 0);
  wave_region_close(ri);
  wave_region_close(rm);
}

static void tfi_bits(const char *levels, const size_t *sizes, size_t n_sizes)
{
  td_daemon d;
  tfi_start(&d, levels);
  wave_client *c = bh_client(d.ipc);
  size_t most = 0;
  for (size_t i = 0; i < n_sizes; i++)
    most = sizes[i] > most ? sizes[i] : most;
  uint32_t *rows = malloc(most * 4 + 4), *mask = malloc(most * 4 + 4);
  for (size_t i = 0; i < n_sizes; i++) {
    size_t n = sizes[i];
    tfi_mask(mask, n, (uint32_t)n);
    for (int kind = 0; kind < 5; kind++) {
      if (kind == 2 && n < 4)
        continue;
      tfi_fill(rows, n, (uint32_t)(n + kind), kind == 3 ? 1 : kind);
      /* kind 3: every selected row -0.0, the others 1.0: the sum is -0.0
       * only if all-masked pieces count as -0.0 */
      for (size_t r = 0; kind == 3 && r < n; r++)
        rows[r] = mask[r] ? 0x80000000u : 0x3f800000u;
      tfi_run(c, d.dir, rows, mask, n, kind != 0, kind == 1 && i % 2 == 0);
    }
  }
  free(rows);
  free(mask);
  wave_client_close(c);
  /* masks applied by the readers where asked (test_filered_applied) or
   * where the device stages masks (Vulkan): then it said so */
  const char *ap = getenv("WAVED_FILE_MASKS");
  int vk = strstr(tfi_devices, "vulkan") != NULL;
  if ((ap != NULL && strcmp(ap, "apply") == 0) || vk)
    ck_assert_msg(strstr(td_stderr(&d), "the mask applied by the readers") !=
                    NULL, "%s", td_stderr(&d));
  /* a device that stages made its ring as it opened (limits.staging_rings:
   * startup, the default), for the rows' slots and the masks' (2 x 3 by
   * default, 2 x 4 with WAVED_FILE_LEVELS) */
  if (vk) {
    int early = strstr(tfi_limits, "first-use") == NULL;
    const char *made = strstr(td_stderr(&d), "vulkan: staging ring of ");
    const char *none = strstr(td_stderr(&d), "no staging ring at start-up");
    ck_assert_msg((made != NULL) == early, "staging_rings %s: %.300s",
                  early ? "startup" : "first-use",
                  made != NULL ? made : none != NULL ? none : "no line");
  }
  td_stop_ok(&d);
}

/* default pieces: 4 MiB slots of 16 65536-row pieces on the CPU */
START_TEST(file_bits_default)
{
  static const size_t sizes[] = {1, 255, 65537, 300001, 1048576 + 4099};
  tfi_bits(NULL, sizes, sizeof sizes / sizeof sizes[0]);
}
END_TEST

/* 256-row pieces in 1024-row slots, 256-row parts: many pieces, a ring that
 * wraps many times, the levels above the pieces */
START_TEST(file_bits_small)
{
  static const size_t sizes[] = {3, 257, 70001};
  tfi_bits("1", sizes, sizeof sizes / sizeof sizes[0]);
}
END_TEST

/* the other devices' shape: 2^24-row pieces, one per slot */
START_TEST(file_bits_large)
{
  static const size_t sizes[] = {100003};
  tfi_bits("3", sizes, sizeof sizes / sizeof sizes[0]);
}
END_TEST

/* The same on a Vulkan device (lavapipe in CI): its pieces are 2^24 rows
 * by default, 256 with WAVED_FILE_LEVELS=1. */
START_TEST(file_bits_vulkan)
{
  tfi_devices = "  - {name: vk0, backend: vulkan}\n";
  static const size_t one[] = {100003};
  tfi_bits(NULL, one, 1);
  static const size_t small[] = {70001};
  tfi_bits("1", small, 1);
  tfi_limits = "  staging_rings: first-use\n";
  tfi_bits("1", small, 1);
  tfi_limits = "";
  static const size_t regions[] = {100003};
  tfi_staged(NULL, regions, 1);
}
END_TEST

typedef struct tfi_trunc {
  int fd;
  off_t to;
  int rc;
} tfi_trunc;

static void *tfi_truncate_soon(void *arg)
{
  tfi_trunc *t = arg;
  usleep(2000);
  t->rc = ftruncate(t->fd, t->to);
  return NULL;
}

/* Copy regions and memfd regions filled before registration, read through
 * the reader pool's parts (WAVED_FILE_STAGE=1: as a GPU whose region is
 * not pinned reads them) with a pool of 3 (limits.file_readers), next to
 * file masks and memfd masks: the same bits as messages; and the daemon
 * says the readers were used. */
static void tfi_staged(const char *levels, const size_t *sizes, size_t n)
{
  tfi_limits = "  file_readers: 3\n";
  tfi_stage = "1";
  for (int k = FT_IN_COPY; k <= FT_IN_MEMFD; k++) {
    tfi_in_kind = k;
    td_daemon d;
    tfi_start(&d, levels);
    ck_assert_msg(strstr(td_stderr(&d), "3 file readers") != NULL, "%s",
                  td_stderr(&d));
    wave_client *c = bh_client(d.ipc);
    uint32_t *rows = malloc(FT_ROWS_MAX * 4), *mask = malloc(FT_ROWS_MAX * 4);
    for (size_t i = 0; i < n; i++) {
      tfi_mask(mask, sizes[i], (uint32_t)sizes[i]);
      for (int kind = 0; kind < 2; kind++) {
        tfi_fill(rows, sizes[i], (uint32_t)(sizes[i] + kind), kind);
        tfi_run(c, d.dir, rows, mask, sizes[i], kind, (int)(i % 2));
      }
    }
    free(rows);
    free(mask);
    ck_assert_msg(strstr(td_stderr(&d), "through the readers") != NULL,
                  "%s", td_stderr(&d));
    wave_client_close(c);
    td_stop_ok(&d);
  }
  tfi_in_kind = FT_IN_FILE;
  tfi_stage = NULL;
  tfi_limits = "";
}

START_TEST(region_bits_staged)
{
  static const size_t sizes[] = {1, 255, 300001, 1048576 + 4099};
  tfi_staged(NULL, sizes, sizeof sizes / sizeof sizes[0]);
  static const size_t small[] = {70001};
  tfi_staged("1", small, 1);
}
END_TEST

/* Shrinking and growing files, another owner's file. */
START_TEST(file_refusals)
{
  td_daemon d;
  tfi_start(&d, NULL);
  wave_client *c = bh_client(d.ipc);
  wave_error e;
  char file[300];
  snprintf(file, sizeof file, "%s/rows.raw", d.dir);
  size_t n = FT_ROWS_MAX;
  uint32_t *p = malloc(n * 4);
  tfi_fill(p, n, 11, 0);
  uint32_t want = 0;
  for (size_t i = 0; i < n; i++)
    want += p[i];
  int fd = tfi_write_file(file, p, n * 4);
  wave_region *rg;
  ck_assert_int_eq(wave_region_file_fd(c, fd, 0, "rows", &rg, &e), 0);
  ck_assert_ptr_null(wave_region_data(rg));
  ck_assert_uint_eq(wave_region_size(rg), n * 4);
  nng_socket s = td_dial(d.ipc);
  Wave__V1__Response *st = td_status(s, 3);
  ck_assert_uint_eq(st->status->n_regions, 1);
  ck_assert(st->status->regions[0]->file);
  ck_assert(!st->status->regions[0]->copied);
  wave__v1__response__free_unpacked(st, NULL);
  wave_extent x = {rg, 0, n * 4};
  wave_region_reduce q = {.dtype = WAVE_U32, .op = WAVE_SUM, .input = &x,
                          .n_input = 1};
  wave_reduce_result res;
  ck_assert_int_eq(wave_reduce_region(c, &q, &res, &e), 0);
  ck_assert_uint_eq(res.bits[0], want);
  /* the job reads the file as it is then: no snapshot */
  uint32_t one = p[0] + 5;
  ck_assert_int_eq(pwrite(fd, &one, 4, 0), 4);
  ck_assert_int_eq(wave_reduce_region(c, &q, &res, &e), 0);
  ck_assert_uint_eq(res.bits[0], want + 5);
  ck_assert_int_eq(pwrite(fd, p, 4, 0), 4);
  /* truncated during jobs: the answer, or REGION; never a crash */
  for (int round = 0; round < 3; round++) {
    tfi_trunc t = {fd, (off_t)(n * 4 / 3), -1};
    pthread_t tid;
    ck_assert_int_eq(pthread_create(&tid, NULL, tfi_truncate_soon, &t), 0);
    int rc = wave_reduce_region(c, &q, &res, &e);
    pthread_join(tid, NULL);
    ck_assert_int_eq(t.rc, 0);
    ck_assert_msg(rc == 0 ? res.bits[0] == want : rc == WAVE_EREGION,
                  "rc %d: %s", rc, e.message);
    if (rc != 0)
      ck_assert_ptr_nonnull(strstr(e.message, "shrank"));
    ck_assert_int_eq(pwrite(fd, p, n * 4, 0), (ssize_t)(n * 4));
  }
  /* truncated before the job: REGION, with where it ends */
  ck_assert_int_eq(ftruncate(fd, (off_t)(n * 2)), 0);
  ck_assert_int_eq(wave_reduce_region(c, &q, &res, &e), WAVE_EREGION);
  ck_assert_ptr_nonnull(strstr(e.message, "shrank"));
  /* the first half still reduces; a mask extent past the end fails too */
  wave_extent half = {rg, 0, n * 2};
  q.input = &half;
  ck_assert_int_eq(wave_reduce_region(c, &q, &res, &e), 0);
  wave_extent mk = {rg, n * 2, n * 2};
  q.mask = &mk;
  q.n_mask = 1;
  q.has_mask = 1;
  ck_assert_int_eq(wave_reduce_region(c, &q, &res, &e), WAVE_EREGION);
  /* a region of another size than the file, extents checked against it */
  wave_extent out = {rg, n * 4 - 4, 8};
  q = (wave_region_reduce){.dtype = WAVE_U32, .op = WAVE_SUM, .input = &out,
                           .n_input = 1};
  ck_assert_int_eq(wave_reduce_region(c, &q, &res, &e), WAVE_ERANGE);
  td_good(s);
  ck_assert_int_eq(wave_region_unregister(c, rg, &e), 0);
  wave_region_close(rg);
  /* an empty file */
  ck_assert_int_eq(ftruncate(fd, 0), 0);
  ck_assert_int_eq(wave_region_file_fd(c, fd, 0, "empty", &rg, &e),
                   WAVE_EREGION);
  ck_assert_ptr_nonnull(strstr(e.message, "empty"));
  /* a descriptor open for writing only cannot be read */
  ck_assert_int_eq(pwrite(fd, p, 64, 0), 64);
  char wpath[300];
  snprintf(wpath, sizeof wpath, "/proc/self/fd/%d", fd);
  int wfd = open(wpath, O_WRONLY | O_CLOEXEC);
  ck_assert_int_ge(wfd, 0);
  ck_assert_int_eq(wave_region_file_fd(c, wfd, 0, "wronly", &rg, &e),
                   WAVE_EREGION);
  ck_assert_msg(strstr(e.message, "not open for reading") != NULL, "%s",
                e.message);
  close(wfd);
  /* another owner's file is the client's to hand over: it could open it
   * (docs/security.md "Regions"), so the owner does not matter */
  uint32_t head[16];
  int theirs = bh_theirs(fd, head);
  ck_assert_msg(wave_region_file_fd(c, theirs, 0, "theirs", &rg, &e) == 0,
                "%s", e.message);
  wave_extent x64 = {rg, 0, 64};
  q = (wave_region_reduce){.dtype = WAVE_U32, .op = WAVE_SUM,
                           .input = &x64, .n_input = 1};
  ck_assert_int_eq(wave_reduce_region(c, &q, &res, &e), 0);
  uint32_t want16 = 0;
  for (int i = 0; i < 16; i++)
    want16 += head[i];
  ck_assert_uint_eq(res.bits[0], want16);
  ck_assert_int_eq(wave_region_unregister(c, rg, &e), 0);
  wave_region_close(rg);
  close(theirs);
  close(fd);
  td_good(s);
  nng_close(s);
  free(p);
  wave_client_close(c);
  td_stop_ok(&d);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("filered");
  TCase *b = tcase_create("bits");
  tcase_set_timeout(b, 600);
  tcase_add_test(b, file_bits_default);
  tcase_add_test(b, file_bits_small);
  tcase_add_test(b, file_bits_large);
  tcase_add_test(b, region_bits_staged);
  suite_add_tcase(s, b);
  TCase *r = tcase_create("refusals");
  tcase_set_timeout(r, 300);
  tcase_add_test(r, file_refusals);
  suite_add_tcase(s, r);
  if (getenv("WAVE_FILERED_VULKAN") != NULL) {
    TCase *vk = tcase_create("vulkan");
    tcase_set_timeout(vk, 600);
    tcase_add_test(vk, file_bits_vulkan);
    suite_add_tcase(s, vk);
  }
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
