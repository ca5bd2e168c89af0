/* test_ctl_edges.c - wavectl's rough edges of the first day, without a
 * daemon: the dtype a .npy header names (no --dtype needed, a conflict
 * refused), NumPy bool masks ('|b1') widened to uint32 rows, a CSV with a
 * header refused as text naming its line, `cancel A B`, and a cancelled
 * job printed as what happened rather than as an error.  test_formats.c
 * checks the same inputs give one answer on every way the rows travel.
 *
 * The .npy images are written here by hand from the format's description
 * (as NumPy writes them: '|b1' for bool); the widened rows are compared
 * with literal 0/1 words.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "client/ctl.h"
#include "wave/client.h"

/* A version 1 .npy image of n rows of size bytes under descr. */
static char *tce_npy(const char *descr, const void *rows, size_t n,
                    size_t size, size_t *len)
{
  char hdr[128];
  int h = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, "
                   "'shape': (%zu,), }", descr, n);
  size_t hl = (size_t)h + 1, pad = (64 - (10 + hl) % 64) % 64;
  hl += pad;
  *len = 10 + hl + n * size;
  char *b = malloc(*len + 1);  /* + the byte wv_load_buffer may write */
  ck_assert_ptr_nonnull(b);
  memcpy(b, "\x93NUMPY\x01\x00", 8);
  b[8] = (char)hl;
  b[9] = (char)(hl >> 8);
  memcpy(b + 10, hdr, (size_t)h);
  memset(b + 10 + h, ' ', pad);
  b[10 + hl - 1] = '\n';
  if (n)
    memcpy(b + 10 + hl, rows, n * size);
  return b;
}

static uint32_t tce_le32(const void *p, size_t i)
{
  const unsigned char *b = (const unsigned char *)p + 4 * i;
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
         (uint32_t)b[3] << 24;
}

/* A file in the test's folder (made by main); returns its path. */
static char tce_dir[64];

static const char *tce_file(const char *name, const void *bytes, size_t len)
{
  static char paths[8][128];
  static int next;
  char *p = paths[next++ % 8];
  snprintf(p, 128, "%s/%s", tce_dir, name);
  FILE *f = fopen(p, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(bytes, 1, len, f), len);
  fclose(f);
  return p;
}

/* ---- bool masks ----------------------------------------------------------- */

START_TEST(bool_mask_widened)
{
  const unsigned char m[5] = {1, 0, 0, 1, 7};  /* 7: nonzero still selects */
  size_t len;
  wv_chunk_buf b;
  wave_error e = {0};
  char *img = tce_npy("|b1", m, 5, 1, &len);
  ck_assert_int_eq(wv_load_buffer("m.npy", img, len, WV_FMT_AUTO,
                                  WV_DTYPE_MASK, &b, &e), 0);
  ck_assert_uint_eq(b.bytes, 20);
  const uint32_t want[5] = {1, 0, 0, 1, 1};
  for (size_t i = 0; i < 5; i++)
    ck_assert_uint_eq(tce_le32(b.data, i), want[i]);
  wv_chunk_buf_free(&b);
  /* --format npy too; an empty bool mask is zero rows */
  img = tce_npy("|b1", NULL, 0, 1, &len);
  ck_assert_int_eq(wv_load_buffer("m0.npy", img, len, WV_FMT_NPY,
                                  WV_DTYPE_MASK, &b, &e), 0);
  ck_assert_uint_eq(b.bytes, 0);
  wv_chunk_buf_free(&b);
  /* a '<u4' mask is as before */
  const uint32_t u[2] = {0, 5};
  img = tce_npy("<u4", u, 2, 4, &len);
  ck_assert_int_eq(wv_load_buffer("u.npy", img, len, WV_FMT_AUTO,
                                  WV_DTYPE_MASK, &b, &e), 0);
  ck_assert_uint_eq(b.bytes, 8);
  ck_assert_uint_eq(tce_le32(b.data, 1), 5);
  wv_chunk_buf_free(&b);
  /* bool is a mask's dtype only: as input rows it is refused */
  img = tce_npy("|b1", m, 5, 1, &len);
  ck_assert_int_eq(wv_load_buffer("m.npy", img, len, WV_FMT_AUTO, WAVE_U32,
                                  &b, &e), WAVE_EDTYPE);
  ck_assert_ptr_nonnull(strstr(e.message, "'|b1'"));
  /* a float mask is refused, naming what a mask may be */
  const float fl[2] = {1, 0};
  img = tce_npy("<f4", fl, 2, 4, &len);
  ck_assert_int_eq(wv_load_buffer("f.npy", img, len, WV_FMT_AUTO,
                                  WV_DTYPE_MASK, &b, &e), WAVE_EDTYPE);
  ck_assert_ptr_nonnull(strstr(e.message, "'|b1'"));
  /* a bool .npy whose data is shorter than its shape */
  img = tce_npy("|b1", m, 5, 1, &len);
  ck_assert_int_eq(wv_load_buffer("s.npy", img, len - 1, WV_FMT_AUTO,
                                  WV_DTYPE_MASK, &b, &e), WAVE_ELENGTH);
}
END_TEST

/* The decision itself says where the bytes lie and that a row is 1 byte,
 * so that the region paths can widen them. */
START_TEST(bool_mask_layout)
{
  const unsigned char m[3] = {0, 1, 1};
  size_t len;
  wave_error e = {0};
  wv_layout lay;
  char *img = tce_npy("|b1", m, 3, 1, &len);
  ck_assert_int_eq(wv_format_decide("m.npy", img, len, len, WV_FMT_AUTO,
                                    WV_DTYPE_MASK, &lay, &e), 0);
  ck_assert_int_eq(lay.format, WV_FMT_NPY);
  ck_assert_uint_eq(lay.row, 1);
  ck_assert_uint_eq(lay.bytes, 3);
  ck_assert_uint_eq(lay.offset, len - 3);
  ck_assert_int_eq(wv_format_decide("m.npy", img, len, len, WV_FMT_AUTO,
                                    WAVE_F64, &lay, &e), WAVE_EDTYPE);
  free(img);
  /* a raw mask is 4-byte rows */
  ck_assert_int_eq(wv_format_decide("r", "\1\0\0\0", 4, 4, WV_FMT_RAW,
                                    WV_DTYPE_MASK, &lay, &e), 0);
  ck_assert_uint_eq(lay.row, 4);
}
END_TEST

/* ---- the dtype a header names ---------------------------------------------- */

START_TEST(dtype_from_headers)
{
  const float f[2] = {1.5f, 2.5f};
  const int32_t i4[2] = {1, -2};
  const double d[1] = {3.0};
  size_t len;
  char *img;
  img = tce_npy("<f4", f, 2, 4, &len);
  const char *a = tce_file("a.npy", img, len);
  free(img);
  img = tce_npy("<f4", f, 1, 4, &len);
  const char *a2 = tce_file("a2.npy", img, len);
  free(img);
  img = tce_npy("<i4", i4, 2, 4, &len);
  const char *b = tce_file("b.npy", img, len);
  free(img);
  img = tce_npy("<f8", d, 1, 8, &len);
  const char *c = tce_file("c.npy", img, len);
  free(img);
  img = tce_npy("|b1", "\1", 1, 1, &len);
  const char *m = tce_file("m.npy", img, len);
  free(img);
  const char *raw = tce_file("r.raw", "\1\0\0\0", 4);

  wave_dtype dt;
  wave_error e = {0};
  ck_assert_int_eq(wv_inputs_dtype((const char *[]){a, a2}, 2, WV_FMT_AUTO,
                                   &dt, &e), 0);
  ck_assert_int_eq(dt, WAVE_F32);
  ck_assert_int_eq(wv_inputs_dtype((const char *[]){c}, 1, WV_FMT_NPY, &dt,
                                   &e), 0);
  ck_assert_int_eq(dt, WAVE_F64);
  /* raw files name nothing; a .npy among them does (stdin: see below) */
  ck_assert_int_eq(wv_inputs_dtype((const char *[]){raw, "-", b}, 3,
                                   WV_FMT_AUTO, &dt, &e), 0);
  ck_assert_int_eq(dt, WAVE_S32);
  /* a conflict names both files and both dtypes */
  ck_assert_int_eq(wv_inputs_dtype((const char *[]){a, b}, 2, WV_FMT_AUTO,
                                   &dt, &e), WAVE_EDTYPE);
  ck_assert_ptr_nonnull(strstr(e.message, "a.npy holds float32"));
  ck_assert_ptr_nonnull(strstr(e.message, "b.npy holds sint32"));
  /* nothing names one: --dtype is still needed */
  ck_assert_int_eq(wv_inputs_dtype((const char *[]){raw}, 1, WV_FMT_AUTO,
                                   &dt, &e), WAVE_EARG);
  ck_assert_ptr_nonnull(strstr(e.message, "missing --dtype"));
  ck_assert_int_eq(wv_inputs_dtype((const char *[]){a}, 1, WV_FMT_RAW, &dt,
                                   &e), WAVE_EARG);
  /* a header naming a dtype wavedd does not reduce */
  ck_assert_int_eq(wv_inputs_dtype((const char *[]){m}, 1, WV_FMT_AUTO, &dt,
                                   &e), WAVE_EDTYPE);
  ck_assert_ptr_nonnull(strstr(e.message, "'|b1'"));
  ck_assert_int_eq(wv_inputs_dtype((const char *[]){"/nonexistent/x.npy"}, 1,
                                   WV_FMT_AUTO, &dt, &e), WAVE_EIO);
  /* standard input is looked at when it is a file read from its start
   * (`< c.npy`), and left where it was */
  ck_assert_ptr_nonnull(freopen(c, "rb", stdin));
  ck_assert_int_eq(wv_inputs_dtype((const char *[]){"-"}, 1, WV_FMT_AUTO,
                                   &dt, &e), 0);
  ck_assert_int_eq(dt, WAVE_F64);
  ck_assert_int_eq(lseek(0, 0, SEEK_CUR), 0);
  ck_assert_int_eq(lseek(0, 1, SEEK_SET), 1);  /* read from elsewhere */
  ck_assert_int_eq(wv_inputs_dtype((const char *[]){"-"}, 1, WV_FMT_AUTO,
                                   &dt, &e), WAVE_EARG);
  ck_assert_ptr_nonnull(freopen("/dev/null", "rb", stdin));  /* not a file */
  ck_assert_int_eq(wv_inputs_dtype((const char *[]){"-", a}, 2, WV_FMT_AUTO,
                                   &dt, &e), 0);
  ck_assert_int_eq(dt, WAVE_F32);

  /* the parser no longer asks for --dtype (wavectl asks the headers) */
  wv_args args;
  const char *v[] = {"wavectl", "submit", "reduce", "--op", "sum",
                     "--input", "x.npy", NULL};
  ck_assert_int_eq(wv_args_parse(7, (char **)v, &args, &e), 0);
  ck_assert_int_eq(args.dtype, WAVE_DTYPE_NONE);
  wv_args_fini(&args);
}
END_TEST

/* ---- a CSV with a header ---------------------------------------------------- */

static int tce_text(const char *text, wave_error *e)
{
  size_t n = strlen(text);
  char *b = malloc(n + 1);
  ck_assert_ptr_nonnull(b);
  memcpy(b, text, n);
  wv_chunk_buf out;
  int rv = wv_load_buffer("t.csv", b, n, WV_FMT_AUTO, WAVE_U32, &out, e);
  if (rv == 0)
    wv_chunk_buf_free(&out);
  return rv;
}

START_TEST(csv_header_is_text)
{
  wave_error e = {0};
  /* 16 bytes: a whole number of rows, which auto once read as raw */
  ck_assert_int_eq(tce_text("time,val\n1,2\n3,4", &e), WAVE_EARG);
  ck_assert_ptr_nonnull(strstr(e.message, "t.csv:1: looks like text"));
  ck_assert_ptr_nonnull(strstr(e.message, "'time,val'"));
  /* 17 bytes: not whole rows, which gave LENGTH */
  ck_assert_int_eq(tce_text("value,count\n1,2\n", &e), WAVE_EARG);
  ck_assert_ptr_nonnull(strstr(e.message, "t.csv:1:"));
  ck_assert_ptr_nonnull(strstr(e.message, "'value,count'"));
  /* a word further down is named by its line */
  ck_assert_int_eq(tce_text("1 2\n3 4\nsum: 10\n", &e), WAVE_EARG);
  ck_assert_ptr_nonnull(strstr(e.message, "t.csv:3:"));
  ck_assert_ptr_nonnull(strstr(e.message, "'sum: 10'"));
  /* numbers only: refused as before, no line */
  ck_assert_int_eq(tce_text("1,2\n3,4\n", &e), WAVE_EARG);
  ck_assert_ptr_nonnull(strstr(e.message, "t.csv: looks like text"));
  /* printable bytes without a newline, or with a control byte, or no
   * digit, stay raw rows: "ABCDwxyz" is two uint32 rows */
  ck_assert_int_eq(tce_text("ABCDwxy9", &e), 0);
  ck_assert_int_eq(tce_text("abc\n\001\0029x", &e), 0);
  ck_assert_int_eq(tce_text("head\nxyz", &e), 0);
}
END_TEST

/* ---- cancel -------------------------------------------------------------- */

START_TEST(cancel_several)
{
  wv_args a;
  wave_error e = {0};
  const char *v[] = {"wavectl", "cancel", "5", "0x10", "--json", "7", NULL};
  ck_assert_int_eq(wv_args_parse(6, (char **)v, &a, &e), 0);
  ck_assert_int_eq(a.cmd, WV_CMD_CANCEL);
  ck_assert_uint_eq(a.n_job_ids, 3);
  ck_assert_uint_eq(a.job_ids[0], 5);
  ck_assert_uint_eq(a.job_ids[1], 16);
  ck_assert_uint_eq(a.job_ids[2], 7);
  ck_assert_uint_eq(a.job_id, 5);
  ck_assert_int_eq(a.json, 1);
  wv_args_fini(&a);
  const char *bad[] = {"wavectl", "cancel", "5", "six", NULL};
  ck_assert_int_eq(wv_args_parse(4, (char **)bad, &a, &e), WAVE_EARG);
  ck_assert_ptr_nonnull(strstr(e.message, "'six'"));
  wv_args_fini(&a);
  const char *key[] = {"wavectl", "cancel", "5", "6", "--key",
                       "0123456789abcdef0123456789abcdef", NULL};
  ck_assert_int_eq(wv_args_parse(6, (char **)key, &a, &e), WAVE_EARG);
  ck_assert_ptr_nonnull(strstr(e.message, "--key reaches one job"));
  wv_args_fini(&a);
  /* wait still takes one */
  const char *w[] = {"wavectl", "wait", "5", "6", NULL};
  ck_assert_int_eq(wv_args_parse(4, (char **)w, &a, &e), WAVE_EARG);
  wv_args_fini(&a);
}
END_TEST

/* A job cancelled on request is what happened, not an error line; a job
 * that failed still shows its error. */
START_TEST(cancelled_printed)
{
  wave_job_info j = {.job_id = 7, .state = WAVE_JOB_CANCELLED, .done = 10,
                     .total = 100, .seconds = 1.0, .device = "cpu0"};
  j.error.code = WAVE_ECANCELLED;
  snprintf(j.error.message, sizeof j.error.message,
           "job 7 cancelled after 10 of 100 nonces");
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  wv_print_job(f, &j, NULL, 0);
  fclose(f);
  ck_assert_str_eq(text, "job 7: cancelled, 10 of 100 nonces, 1.000 s, "
                   "device cpu0\n");
  free(text);
  j.state = WAVE_JOB_FAILED;
  j.error.code = WAVE_EDEVFAULT;
  f = open_memstream(&text, &len);
  wv_print_job(f, &j, NULL, 0);
  fclose(f);
  ck_assert_ptr_nonnull(strstr(text, "error        DEVFAULT: "));
  free(text);
}
END_TEST

int main(void)
{
  snprintf(tce_dir, sizeof tce_dir, "/tmp/wv-edges-XXXXXX");
  if (mkdtemp(tce_dir) == NULL)
    return EXIT_FAILURE;
  Suite *s = suite_create("ctl_edges");
  TCase *t = tcase_create("edges");
  tcase_add_test(t, bool_mask_widened);
  tcase_add_test(t, bool_mask_layout);
  tcase_add_test(t, dtype_from_headers);
  tcase_add_test(t, csv_header_is_text);
  tcase_add_test(t, cancel_several);
  tcase_add_test(t, cancelled_printed);
  suite_add_tcase(s, t);
  SRunner *r = srunner_create(s);
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tce_dir);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", tce_dir);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
