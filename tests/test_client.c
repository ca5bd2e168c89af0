/* test_client.c - wavectl without a daemon: the input loaders (raw, .npy,
 * text), the JSON number formatting, the command line parser and the
 * progress lines.  The library against a scripted server is
 * test_client_lib.c.
 *
 * Expected values come from independent sources: .npy images are written
 * here by hand from the format's description, text numbers are checked
 * against their literal bits, printed floats are read back with strtof and
 * the JSON is read with tests/jsonq.c.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/ctl.h"
#include "jsonq.h"
#include "wave/client.h"

/* A malloc'd copy of n bytes with the one spare byte wv_load_buffer needs. */
static char *tcl_dup(const void *p, size_t n)
{
  char *b = malloc(n + 1);
  ck_assert_ptr_nonnull(b);
  if (n)
    memcpy(b, p, n);
  return b;
}

static uint32_t tcl_le32(const void *p, size_t i)
{
  const unsigned char *b = (const unsigned char *)p + 4 * i;
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
         (uint32_t)b[3] << 24;
}

static int tcl_load(const char *text, size_t len, wv_format fmt,
                   wave_dtype d, wv_chunk_buf *out, wave_error *err)
{
  return wv_load_buffer("t.in", tcl_dup(text, len), len, fmt, d, out, err);
}

/* ---- raw --------------------------------------------------------------- */

/* --format auto never reads text as raw rows; --format raw still does. */
START_TEST(auto_refuses_text)
{
  static const char *const texts[] = {"3 1 4 1 5 9 2 6\n", "1,2,3\n", "7\n",
                                      "-1.5e3 2\n", "12345678\n", "42"};
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
    wv_chunk_buf b;
    wave_error e = {0};
    ck_assert_int_eq(tcl_load(texts[i], strlen(texts[i]), WV_FMT_AUTO,
                             WAVE_U32, &b, &e), WAVE_EARG);
    ck_assert_ptr_nonnull(strstr(e.message, "--format text"));
  }
  wv_chunk_buf b;
  wave_error e = {0};
  ck_assert_int_eq(tcl_load("1234", 4, WV_FMT_RAW, WAVE_U32, &b, &e), 0);
  ck_assert_uint_eq(tcl_le32(b.data, 0), 0x34333231u);
  wv_chunk_buf_free(&b);
  /* four digit bytes and no newline: a whole row, read as raw */
  ck_assert_int_eq(tcl_load("1234", 4, WV_FMT_AUTO, WAVE_U32, &b, &e), 0);
  wv_chunk_buf_free(&b);
  /* a raw file with a byte text never has is not text */
  ck_assert_int_eq(tcl_load("12\n\x01", 4, WV_FMT_AUTO, WAVE_U32, &b, &e), 0);
  wv_chunk_buf_free(&b);
}
END_TEST

START_TEST(raw_rows)
{
  const unsigned char bytes[] = {1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0x80, 0x3f};
  wv_chunk_buf b;
  wave_error e = {0};
  ck_assert_int_eq(tcl_load((const char *)bytes, sizeof bytes, WV_FMT_AUTO,
                           WAVE_U32, &b, &e), 0);
  ck_assert_uint_eq(b.bytes, 12);
  ck_assert_int_eq(memcmp(b.data, bytes, 12), 0);
  wv_chunk_buf_free(&b);

  ck_assert_int_eq(tcl_load("", 0, WV_FMT_AUTO, WAVE_F32, &b, &e), 0);
  ck_assert_uint_eq(b.bytes, 0);
  wv_chunk_buf_free(&b);

  ck_assert_int_eq(tcl_load((const char *)bytes, 7, WV_FMT_RAW, WAVE_S32, &b,
                           &e), WAVE_ELENGTH);
  ck_assert_ptr_nonnull(strstr(e.message, "t.in"));
  ck_assert_ptr_nonnull(strstr(e.message, "7 bytes"));
}
END_TEST

START_TEST(raw_file_missing)
{
  wv_chunk_buf b;
  wave_error e = {0};
  ck_assert_int_eq(wv_load_file("/nonexistent/x.bin", WV_FMT_AUTO, WAVE_U32,
                                &b, &e), WAVE_EIO);
  ck_assert_ptr_nonnull(strstr(e.message, "/nonexistent/x.bin"));
}
END_TEST

/* ---- .npy -------------------------------------------------------------- */

/* An .npy image written from the format's description: magic, version,
 * little-endian header length, the dict, space padding to a multiple of
 * 64 ending in '\n', the data. */
static char *tcl_npy(unsigned major, const char *dict, const void *data,
                    size_t bytes, size_t *len)
{
  size_t pre = major == 1 ? 10 : 12;
  size_t hl = strlen(dict) + 1;
  hl += (64 - (pre + hl) % 64) % 64;
  *len = pre + hl + bytes;
  char *b = malloc(*len + 1);
  ck_assert_ptr_nonnull(b);
  memcpy(b, "\x93NUMPY", 6);
  b[6] = (char)major;
  b[7] = 0;
  for (size_t i = 0; i < pre - 8; i++)
    b[8 + i] = (char)(hl >> (8 * i));
  memset(b + pre, ' ', hl);
  memcpy(b + pre, dict, strlen(dict));
  b[pre + hl - 1] = '\n';
  if (bytes)
    memcpy(b + pre + hl, data, bytes);
  return b;
}

static int tcl_npy_load(unsigned major, const char *dict, const void *data,
                       size_t bytes, wave_dtype d, wv_chunk_buf *out,
                       wave_error *err)
{
  size_t len;
  char *img = tcl_npy(major, dict, data, bytes, &len);
  return wv_load_buffer("a.npy", img, len, WV_FMT_AUTO, d, out, err);
}

START_TEST(npy_versions)
{
  const uint32_t v[6] = {5, 0xdeadbeef, 0, 1, 2, 3};
  wv_chunk_buf b;
  wave_error e = {0};
  for (unsigned major = 1; major <= 3; major++) {
    ck_assert_int_eq(tcl_npy_load(major, "{'descr': '<u4', 'fortran_order': "
                                 "False, 'shape': (6,), }", v, sizeof v,
                                 WAVE_U32, &b, &e), 0);
    ck_assert_uint_eq(b.bytes, 24);
    for (size_t i = 0; i < 6; i++)
      ck_assert_uint_eq(tcl_le32(b.data, i), v[i]);
    wv_chunk_buf_free(&b);
  }
  /* Any shape is flattened; double quotes and no trailing comma too. */
  ck_assert_int_eq(tcl_npy_load(1, "{\"descr\": \"<i4\", \"fortran_order\": "
                               "False, \"shape\": (2, 3)}", v, sizeof v,
                               WAVE_S32, &b, &e), 0);
  ck_assert_uint_eq(b.bytes, 24);
  wv_chunk_buf_free(&b);
  /* A 0-d array is one row; shape (0,) no rows. */
  ck_assert_int_eq(tcl_npy_load(1, "{'descr': '<f4', 'fortran_order': False, "
                               "'shape': (), }", v, 4, WAVE_F32, &b, &e), 0);
  ck_assert_uint_eq(b.bytes, 4);
  wv_chunk_buf_free(&b);
  ck_assert_int_eq(tcl_npy_load(1, "{'descr': '<f4', 'fortran_order': False, "
                               "'shape': (0,), }", NULL, 0, WAVE_F32, &b, &e),
                   0);
  ck_assert_uint_eq(b.bytes, 0);
  wv_chunk_buf_free(&b);
  /* 1-D Fortran order is the same layout, but we refuse it uniformly. */
}
END_TEST

START_TEST(npy_bad)
{
  const uint32_t v[4] = {1, 2, 3, 4};
  wv_chunk_buf b;
  wave_error e = {0};
  /* dtype mismatch: names the file and both dtypes */
  ck_assert_int_eq(tcl_npy_load(1, "{'descr': '<f4', 'fortran_order': False, "
                               "'shape': (4,), }", v, sizeof v, WAVE_U32, &b,
                               &e), WAVE_EDTYPE);
  ck_assert_ptr_nonnull(strstr(e.message, "a.npy"));
  ck_assert_ptr_nonnull(strstr(e.message, "<f4"));
  ck_assert_ptr_nonnull(strstr(e.message, "<u4"));
  ck_assert_int_eq(tcl_npy_load(1, "{'descr': '>u4', 'fortran_order': False, "
                               "'shape': (4,), }", v, sizeof v, WAVE_U32, &b,
                               &e), WAVE_EDTYPE);
  ck_assert_int_eq(tcl_npy_load(1, "{'descr': '<i8', 'fortran_order': False, "
                               "'shape': (2,), }", v, sizeof v, WAVE_S32, &b,
                               &e), WAVE_EDTYPE);
  ck_assert_int_eq(tcl_npy_load(1, "{'descr': [('a', '<u4')], "
                               "'fortran_order': False, 'shape': (4,), }", v,
                               sizeof v, WAVE_U32, &b, &e), WAVE_EDTYPE);
  /* data shorter or longer than the shape says */
  ck_assert_int_eq(tcl_npy_load(1, "{'descr': '<u4', 'fortran_order': False, "
                               "'shape': (5,), }", v, sizeof v, WAVE_U32, &b,
                               &e), WAVE_ELENGTH);
  ck_assert_int_eq(tcl_npy_load(2, "{'descr': '<u4', 'fortran_order': False, "
                               "'shape': (3,), }", v, sizeof v, WAVE_U32, &b,
                               &e), WAVE_ELENGTH);
  /* Fortran order, missing and unknown keys, malformed dicts */
  ck_assert_int_eq(tcl_npy_load(1, "{'descr': '<u4', 'fortran_order': True, "
                               "'shape': (2, 2), }", v, sizeof v, WAVE_U32,
                               &b, &e), WAVE_EARG);
  ck_assert_int_eq(tcl_npy_load(1, "{'descr': '<u4', 'shape': (4,), }", v,
                               sizeof v, WAVE_U32, &b, &e), WAVE_EARG);
  ck_assert_ptr_nonnull(strstr(e.message, "fortran_order"));
  ck_assert_int_eq(tcl_npy_load(1, "{'descr': '<u4', 'fortran_order': False, "
                               "'shape': (4,), 'x': 1}", v, sizeof v, WAVE_U32,
                               &b, &e), WAVE_EARG);
  ck_assert_int_eq(tcl_npy_load(1, "{'descr': '<u4', 'fortran_order': False, "
                               "'shape': (4,", v, sizeof v, WAVE_U32, &b, &e),
                   WAVE_EARG);
  ck_assert_int_eq(tcl_npy_load(1, "{'descr': '<u4', 'fortran_order': Maybe, "
                               "'shape': (4,), }", v, sizeof v, WAVE_U32, &b,
                               &e), WAVE_EARG);
  ck_assert_int_eq(tcl_npy_load(4, "{'descr': '<u4', 'fortran_order': False, "
                               "'shape': (4,), }", v, sizeof v, WAVE_U32, &b,
                               &e), WAVE_EARG);
  ck_assert_ptr_nonnull(strstr(e.message, "version 4"));
  ck_assert_int_eq(tcl_npy_load(1, "{'descr': '<u4', 'fortran_order': False, "
                               "'shape': (99999999999999999999,), }", v,
                               sizeof v, WAVE_U32, &b, &e), WAVE_EARG);

  /* header length pointing past the end of the file */
  size_t len;
  char *img = tcl_npy(1, "{'descr': '<u4', 'fortran_order': False, 'shape': "
                     "(0,), }", NULL, 0, &len);
  img[8] = (char)0xff;
  img[9] = (char)0x7f;
  ck_assert_int_eq(wv_load_buffer("h.npy", img, len, WV_FMT_AUTO, WAVE_U32,
                                  &b, &e), WAVE_EARG);
  ck_assert_ptr_nonnull(strstr(e.message, "h.npy"));
  /* --format npy on a file without the magic; a file cut inside the
   * preamble */
  ck_assert_int_eq(tcl_load("abcdefgh", 8, WV_FMT_NPY, WAVE_U32, &b, &e),
                   WAVE_EARG);
  ck_assert_int_eq(tcl_load("\x93NUMPY\x02\x00\x10", 9, WV_FMT_AUTO, WAVE_U32,
                           &b, &e), WAVE_EARG);
  /* --format raw takes the bytes as they are, magic or not */
  img = tcl_npy(1, "{'descr': '<u4', 'fortran_order': False, 'shape': (0,), "
               "}", NULL, 0, &len);
  ck_assert_int_eq(wv_load_buffer("r.bin", img, len, WV_FMT_RAW, WAVE_U32, &b,
                                  &e), 0);
  ck_assert_uint_eq(b.bytes, len);
  wv_chunk_buf_free(&b);
}
END_TEST

/* The one format decision looks at the first WV_FORMAT_HEAD bytes and the
 * size only, so a loader holding the whole file decides as a region path
 * holding just the head. */
START_TEST(format_decide_head)
{
  wave_error e = {0};
  wv_layout lay;
  wv_chunk_buf b;
  size_t big = 2 * WV_FORMAT_HEAD;
  /* a head of text over a raw tail: refused either way */
  char *img = malloc(big + 1);
  ck_assert_ptr_nonnull(img);
  for (size_t i = 0; i < big; i++)
    img[i] = i < WV_FORMAT_HEAD ? (i % 2 ? '\n' : '7') : (char)(i * 7 + 1);
  ck_assert_int_eq(wv_format_decide("t", img, WV_FORMAT_HEAD, big,
                                    WV_FMT_AUTO, WAVE_U32, &lay, &e),
                   WAVE_EARG);
  ck_assert_ptr_nonnull(strstr(e.message, "looks like text"));
  ck_assert_int_eq(wv_load_buffer("t", img, big, WV_FMT_AUTO, WAVE_U32, &b,
                                  &e), WAVE_EARG);
  /* a .npy header longer than the head: refused even with the whole file */
  img = malloc(big + 1);
  ck_assert_ptr_nonnull(img);
  size_t hl = WV_FORMAT_HEAD + 64 - 12;
  memset(img, ' ', big);
  memcpy(img, "\x93NUMPY\x02\x00", 8);
  img[8] = (char)(hl & 0xff);
  img[9] = (char)(hl >> 8 & 0xff);
  img[10] = (char)(hl >> 16 & 0xff);
  img[11] = 0;
  const char *d = "{'descr': '<u4', 'fortran_order': False, 'shape': (";
  memcpy(img + 12, d, strlen(d));
  size_t rows = (big - 12 - hl) / 4;
  char sh[32];
  int n = snprintf(sh, sizeof sh, "%zu,), }", rows);
  memcpy(img + 12 + strlen(d), sh, (size_t)n);
  img[12 + hl - 1] = '\n';
  ck_assert_int_eq(wv_format_decide("h.npy", img, WV_FORMAT_HEAD, big,
                                    WV_FMT_AUTO, WAVE_U32, &lay, &e),
                   WAVE_EARG);
  ck_assert_ptr_nonnull(strstr(e.message, "longer than"));
  ck_assert_int_eq(wv_load_buffer("h.npy", img, big, WV_FMT_AUTO, WAVE_U32,
                                  &b, &e), WAVE_EARG);
  ck_assert_ptr_nonnull(strstr(e.message, "longer than"));
  /* a caller that hands less than the head breaks the contract */
  ck_assert_int_eq(wv_format_decide("x", "1234", 4, 8, WV_FMT_RAW, WAVE_U32,
                                    &lay, &e), WAVE_EARG);
  /* raw: the layout is the whole file */
  ck_assert_int_eq(wv_format_decide("r", "\x01\x02\x03\x04", 4, 4,
                                    WV_FMT_AUTO, WAVE_U32, &lay, &e), 0);
  ck_assert_int_eq(lay.format, WV_FMT_RAW);
  ck_assert_uint_eq(lay.offset, 0);
  ck_assert_uint_eq(lay.bytes, 4);
}
END_TEST

/* Job keys as text: 32 hex digits, both ways. */
START_TEST(job_key_text)
{
  wave_job_key k, k2;
  wave_error e = {0};
  char hex[WAVE_JOB_KEY_HEX];
  ck_assert_int_eq(wave_job_key_parse("00112233445566778899AABBCCDDEEFF", &k,
                                      &e), 0);
  ck_assert_int_eq(k.set, 1);
  ck_assert_uint_eq(k.bytes[0], 0x00);
  ck_assert_uint_eq(k.bytes[15], 0xff);
  wave_job_key_format(&k, hex, sizeof hex);
  ck_assert_str_eq(hex, "00112233445566778899aabbccddeeff");
  ck_assert_int_eq(wave_job_key_parse(hex, &k2, &e), 0);
  ck_assert_mem_eq(k.bytes, k2.bytes, WAVE_JOB_KEY_BYTES);
  ck_assert_int_eq(wave_job_key_parse("0011", &k, &e), WAVE_EARG);
  ck_assert_int_eq(k.set, 0);
  ck_assert_int_eq(wave_job_key_parse("00112233445566778899aabbccddeefg", &k,
                                      &e), WAVE_EARG);
  ck_assert_int_eq(k.set, 0);
  wave_job_key_format(&k, hex, sizeof hex);
  ck_assert_str_eq(hex, "");
}
END_TEST

/* ---- text -------------------------------------------------------------- */

START_TEST(text_numbers)
{
  wv_chunk_buf b;
  wave_error e = {0};
  const char *t = "1, 2 3\n# a comment, 99\n 0x10,4294967295\t7 # tail\r\n";
  ck_assert_int_eq(tcl_load(t, strlen(t), WV_FMT_TEXT, WAVE_U32, &b, &e), 0);
  const uint32_t want[] = {1, 2, 3, 16, 4294967295u, 7};
  ck_assert_uint_eq(b.bytes, sizeof want);
  for (size_t i = 0; i < 6; i++)
    ck_assert_uint_eq(tcl_le32(b.data, i), want[i]);
  wv_chunk_buf_free(&b);

  t = "-2147483648 2147483647 -1 +5 -0";
  ck_assert_int_eq(tcl_load(t, strlen(t), WV_FMT_TEXT, WAVE_S32, &b, &e), 0);
  const uint32_t want_s[] = {0x80000000u, 0x7fffffffu, 0xffffffffu, 5, 0};
  ck_assert_uint_eq(b.bytes, sizeof want_s);
  for (size_t i = 0; i < 5; i++)
    ck_assert_uint_eq(tcl_le32(b.data, i), want_s[i]);
  wv_chunk_buf_free(&b);

  t = "1.5,-0.0,nan,inf,-inf,1e-45,3.4028235e38,0.1";
  ck_assert_int_eq(tcl_load(t, strlen(t), WV_FMT_TEXT, WAVE_F32, &b, &e), 0);
  ck_assert_uint_eq(b.bytes, 32);
  ck_assert_uint_eq(tcl_le32(b.data, 0), 0x3fc00000u);
  ck_assert_uint_eq(tcl_le32(b.data, 1), 0x80000000u);
  ck_assert_uint_eq(tcl_le32(b.data, 2) & 0x7f800000u, 0x7f800000u);
  ck_assert_uint_ne(tcl_le32(b.data, 2) & 0x007fffffu, 0);
  ck_assert_uint_eq(tcl_le32(b.data, 3), 0x7f800000u);
  ck_assert_uint_eq(tcl_le32(b.data, 4), 0xff800000u);
  ck_assert_uint_eq(tcl_le32(b.data, 5), 0x00000001u); /* smallest subnormal */
  ck_assert_uint_eq(tcl_le32(b.data, 6), 0x7f7fffffu);
  ck_assert_uint_eq(tcl_le32(b.data, 7), 0x3dcccccdu);
  wv_chunk_buf_free(&b);

  /* empty and comment-only text: an empty chunk */
  ck_assert_int_eq(tcl_load(" \n# none\n", 9, WV_FMT_TEXT, WAVE_F32, &b, &e),
                   0);
  ck_assert_uint_eq(b.bytes, 0);
  wv_chunk_buf_free(&b);
}
END_TEST

static void tcl_text_err(const char *t, wave_dtype d, const char *where)
{
  wv_chunk_buf b;
  wave_error e = {0};
  ck_assert_int_eq(tcl_load(t, strlen(t), WV_FMT_TEXT, d, &b, &e), WAVE_EARG);
  ck_assert_msg(strstr(e.message, where) != NULL, "'%s' lacks '%s'",
                e.message, where);
}

START_TEST(text_errors)
{
  tcl_text_err("1 2\n3\n4 x5 6", WAVE_U32, "t.in:3:");
  tcl_text_err("1 2\n3\n4 x5 6", WAVE_U32, "'x5'");
  tcl_text_err("4294967296", WAVE_U32, "t.in:1:");
  tcl_text_err("-1", WAVE_U32, "out of range");
  tcl_text_err("2147483648", WAVE_S32, "out of range");
  tcl_text_err("-2147483649", WAVE_S32, "out of range");
  tcl_text_err("1.5", WAVE_S32, "not a");
  tcl_text_err("\n\n1e39", WAVE_F32, "t.in:3:");
  tcl_text_err("1.0f", WAVE_F32, "'1.0f'");
  tcl_text_err("0x", WAVE_U32, "'0x'");
  tcl_text_err("1e", WAVE_F32, "'1e'");
}
END_TEST

/* ---- JSON values --------------------------------------------------------- */

START_TEST(json_values)
{
  char buf[48];
  ck_assert_str_eq(wv_json_value(buf, sizeof buf, WAVE_U32, 4294967295u),
                   "4294967295");
  ck_assert_str_eq(wv_json_value(buf, sizeof buf, WAVE_S32, 0x80000000u),
                   "-2147483648");
  ck_assert_str_eq(wv_json_value(buf, sizeof buf, WAVE_F32, 0x7fc00000u),
                   "\"nan\"");
  ck_assert_str_eq(wv_json_value(buf, sizeof buf, WAVE_F32, 0xffc00001u),
                   "\"nan\"");
  ck_assert_str_eq(wv_json_value(buf, sizeof buf, WAVE_F32, 0x7f800000u),
                   "\"inf\"");
  ck_assert_str_eq(wv_json_value(buf, sizeof buf, WAVE_F32, 0xff800000u),
                   "\"-inf\"");
  ck_assert_str_eq(wv_text_value(buf, sizeof buf, WAVE_F32, 0xff800000u),
                   "-inf");
  ck_assert_str_eq(wv_json_value(buf, sizeof buf, WAVE_F32, 0x80000000u),
                   "-0");
  ck_assert_str_eq(wv_json_value(buf, sizeof buf, WAVE_F32, 0x3fc00000u),
                   "1.5");

  /* Every finite float prints as a JSON number that reads back to the same
   * bits (a spread of patterns, including subnormals and extremes). */
  uint32_t x = 12345;
  for (int i = 0; i < 20000; i++) {
    x = x * 1664525u + 1013904223u;
    uint32_t bits = i < 4 ? (uint32_t[]){0x00000001u, 0x7f7fffffu,
                                         0x00800000u, 0x807fffffu}[i]
                          : x;
    float f;
    memcpy(&f, &bits, 4);
    if (!isfinite(f))
      continue;
    wv_json_value(buf, sizeof buf, WAVE_F32, bits);
    char doc[64];
    snprintf(doc, sizeof doc, "[%s]", buf);
    jq_node *n = jq_parse(doc);
    ck_assert_msg(n != NULL, "not JSON: %s", buf);
    ck_assert_int_eq(jq_at(n, 0)->type, JQ_NUM);
    jq_free(n);
    float back = strtof(buf, NULL);
    uint32_t bb;
    memcpy(&bb, &back, 4);
    ck_assert_msg(bb == bits, "%08x printed as %s reads %08x", bits, buf, bb);
  }
}
END_TEST

START_TEST(json_documents)
{
  char *text;
  size_t len;
  FILE *f = open_memstream(&text, &len);
  wave_reduce_result r = {
    .dtype = WAVE_F32, .op = WAVE_EXTENT, .n_values = 2,
    .bits = {0xff800000u, 0x40490fdbu}, .count = 3, .rows = 5,
    .seconds = 0.25, .device = "cpu\"0\n",
  };
  wv_print_reduce(f, &r, 1);
  fclose(f);
  ck_assert_ptr_nonnull(strchr(text, '\n'));
  ck_assert_ptr_eq(strchr(text, '\n'), text + len - 1); /* one line */
  jq_node *n = jq_parse(text);
  ck_assert_msg(n != NULL, "not JSON: %s", text);
  ck_assert_str_eq(jq_at(jq_get(n, "result"), 0)->text, "-inf");
  ck_assert_float_eq(jq_at(jq_get(n, "result"), 1)->num, (double)3.14159274f);
  ck_assert_str_eq(jq_at(jq_get(n, "bits"), 0)->text, "0xff800000");
  ck_assert_str_eq(jq_at(jq_get(n, "bits"), 1)->text, "0x40490fdb");
  uint64_t u;
  ck_assert_int_eq(jq_u64(jq_get(n, "count"), &u), 0);
  ck_assert_uint_eq(u, 3);
  ck_assert_int_eq(jq_u64(jq_get(n, "rows"), &u), 0);
  ck_assert_uint_eq(u, 5);
  ck_assert_str_eq(jq_get(n, "device")->text, "cpu\"0\n");
  ck_assert_str_eq(jq_get(n, "dtype")->text, "float32");
  ck_assert_str_eq(jq_get(n, "op")->text, "extent");
  jq_free(n);
  free(text);

  wave_winner w[2] = {{7, 0x10}, {UINT64_MAX, 0xfff}};
  wave_hash_request q = {.pack = "p", .nonce = 5, .count = 10,
                         .target = 0x1000};
  wave_hash_result h = {
    .job_fingerprint = 0x0123456789abcdefull, .n_winners = 2, .winners = w,
    .winner_count = 9, .best_nonce = 7, .best_output = 0x10, .hashes = 10,
    .seconds = 1.5, .device = "gpu0", .exchange = "shuffle",
  };
  f = open_memstream(&text, &len);
  wv_print_hash(f, &q, &h, 42, 1);
  fclose(f);
  n = jq_parse(text);
  ck_assert_msg(n != NULL, "not JSON: %s", text);
  ck_assert_str_eq(jq_get(n, "job_fingerprint")->text, "0123456789abcdef");
  ck_assert_str_eq(jq_get(jq_get(n, "best"), "output")->text,
                   "0000000000000010");
  ck_assert_int_eq(jq_u64(jq_get(jq_at(jq_get(n, "winners"), 1), "nonce"),
                          &u), 0);
  ck_assert_uint_eq(u, UINT64_MAX);
  ck_assert_int_eq(jq_u64(jq_get(n, "winner_count"), &u), 0);
  ck_assert_uint_eq(u, 9);
  ck_assert_str_eq(jq_get(n, "exchange")->text, "shuffle");
  jq_free(n);
  free(text);
}
END_TEST

/* ---- command line ----------------------------------------------------- */

static int tcl_parse(wv_args *a, wave_error *e, const char *const *v)
{
  int argc = 0;
  while (v[argc])
    argc++;
  return wv_args_parse(argc, (char **)v, a, e);
}

START_TEST(args_good)
{
  wv_args a;
  wave_error e = {0};
  const char *v[] = {"wavectl", "--url", "tcp://h:1", "submit", "reduce",
                     "--op=extent", "--dtype", "f32", "--input", "a",
                     "--mask", "m1", "--input=b", "--mask", "m2",
                     "--format", "text", "--json", "--timeout", "500", NULL};
  ck_assert_int_eq(tcl_parse(&a, &e, v), 0);
  ck_assert_int_eq(a.cmd, WV_CMD_REDUCE);
  ck_assert_str_eq(a.url, "tcp://h:1");
  ck_assert_int_eq(a.op, WAVE_EXTENT);
  ck_assert_int_eq(a.dtype, WAVE_F32);
  ck_assert_uint_eq(a.n_inputs, 2);
  ck_assert_str_eq(a.inputs[0], "a");
  ck_assert_str_eq(a.inputs[1], "b");
  ck_assert_uint_eq(a.n_masks, 2);
  ck_assert_str_eq(a.masks[1], "m2");
  ck_assert_int_eq(a.format, WV_FMT_TEXT);
  ck_assert_int_eq(a.json, 1);
  ck_assert_int_eq(a.timeout_ms, 500);
  wv_args_fini(&a);

  const char *h[] = {"wavectl", "submit", "hash", "--pack", "p", "--nonce",
                     "0x10", "--count", "18446744073709551600", "--target",
                     "FFFF", "--max-winners", "3", "--outputs", NULL};
  ck_assert_int_eq(tcl_parse(&a, &e, h), 0);
  ck_assert_int_eq(a.cmd, WV_CMD_HASH);
  ck_assert_uint_eq(a.nonce, 16);
  ck_assert_uint_eq(a.count, 18446744073709551600ull);
  ck_assert_uint_eq(a.target, 0xffff);
  ck_assert_uint_eq(a.max_winners, 3);
  ck_assert_int_eq(a.outputs, 1);
  wv_args_fini(&a);

  const char *s[] = {"wavectl", "help", "submit", "hash", NULL};
  ck_assert_int_eq(tcl_parse(&a, &e, s), 0);
  ck_assert_int_eq(a.help, 1);
  ck_assert_int_eq(a.cmd, WV_CMD_HASH);
  wv_args_fini(&a);
  const char *s1[] = {"wavectl", "submit", "--help", NULL};
  ck_assert_int_eq(tcl_parse(&a, &e, s1), 0);
  ck_assert_int_eq(a.help, 1);
  ck_assert_int_eq(a.cmd, WV_CMD_NONE);
  wv_args_fini(&a);
  /* help CMD needs no job id, and `help submit` is both kinds */
  const char *s3[] = {"wavectl", "help", "wait", NULL};
  ck_assert_int_eq(tcl_parse(&a, &e, s3), 0);
  ck_assert_int_eq(a.help, 1);
  ck_assert_int_eq(a.cmd, WV_CMD_WAIT);
  wv_args_fini(&a);
  const char *s4[] = {"wavectl", "help", "submit", NULL};
  ck_assert_int_eq(tcl_parse(&a, &e, s4), 0);
  ck_assert_int_eq(a.help_submit, 1);
  wv_args_fini(&a);
  const char *s5[] = {"wavectl", "wait", "7", "--progress", NULL};
  ck_assert_int_eq(tcl_parse(&a, &e, s5), 0);
  ck_assert_int_eq(a.progress, 1);
  wv_args_fini(&a);
  const char *s2[] = {"wavectl", "status", "-h", NULL};
  ck_assert_int_eq(tcl_parse(&a, &e, s2), 0);
  ck_assert_int_eq(a.help, 1);
  wv_args_fini(&a);
}
END_TEST

static void tcl_bad(const char *want, const char *const *v)
{
  wv_args a;
  wave_error e = {0};
  ck_assert_int_eq(tcl_parse(&a, &e, v), WAVE_EARG);
  ck_assert_msg(strstr(e.message, want) != NULL, "'%s' lacks '%s'",
                e.message, want);
  wv_args_fini(&a);
}

START_TEST(args_bad)
{
  tcl_bad("no command", (const char *[]){"wavectl", NULL});
  tcl_bad("--progress does not apply to status",
         (const char *[]){"wavectl", "status", "--progress", NULL});
  tcl_bad("--progress applies only to submit hash and wait",
         (const char *[]){"wavectl", "--progress", "jobs", NULL});
  tcl_bad("unknown command 'frob'", (const char *[]){"wavectl", "frob", NULL});
  tcl_bad("expected 'reduce' or 'hash'",
         (const char *[]){"wavectl", "submit", NULL});
  tcl_bad("unknown option '--frob'",
         (const char *[]){"wavectl", "status", "--frob", NULL});
  tcl_bad("missing --op", (const char *[]){"wavectl", "submit", "reduce",
                                          "--dtype", "u32", "--input", "x",
                                          NULL});
  tcl_bad("missing --input", (const char *[]){"wavectl", "submit", "reduce",
                                             "--op", "sum", "--dtype", "u32",
                                             NULL});
  tcl_bad("unknown op 'mean'", (const char *[]){"wavectl", "submit", "reduce",
                                              "--op", "mean", NULL});
  tcl_bad("unknown dtype 'f16'", (const char *[]){"wavectl", "submit",
                                                "reduce", "--dtype", "f16",
                                                NULL});
  tcl_bad("unknown format", (const char *[]){"wavectl", "submit", "reduce",
                                           "--format", "csv", NULL});
  tcl_bad("needs a value", (const char *[]){"wavectl", "submit", "reduce",
                                           "--input", NULL});
  tcl_bad("takes no value", (const char *[]){"wavectl", "status", "--json=1",
                                            NULL});
  tcl_bad("does not apply to status",
         (const char *[]){"wavectl", "status", "--op", "sum", NULL});
  tcl_bad("apply only to submit reduce",
         (const char *[]){"wavectl", "--op", "sum", "status", NULL});
  tcl_bad("unexpected argument 'extra'",
         (const char *[]){"wavectl", "status", "extra", NULL});
  tcl_bad("--timeout", (const char *[]){"wavectl", "status", "--timeout",
                                       "10s", NULL});
  tcl_bad("missing --pack", (const char *[]){"wavectl", "submit", "hash",
                                            "--nonce", "1", "--count", "1",
                                            NULL});
  tcl_bad("missing --count", (const char *[]){"wavectl", "submit", "hash",
                                             "--pack", "p", "--nonce", "1",
                                             NULL});
  tcl_bad("--count", (const char *[]){"wavectl", "submit", "hash", "--count",
                                     "0", NULL});
  tcl_bad("--nonce", (const char *[]){"wavectl", "submit", "hash", "--nonce",
                                     "-1", NULL});
  tcl_bad("--target", (const char *[]){"wavectl", "submit", "hash",
                                      "--target", "12345678901234567", NULL});
  tcl_bad("passes 2^64", (const char *[]){"wavectl", "submit", "hash",
                                         "--pack", "p", "--nonce",
                                         "18446744073709551615", "--count",
                                         "2", NULL});
  tcl_bad("options are long", (const char *[]){"wavectl", "status", "-j",
                                              NULL});
}
END_TEST

START_TEST(numbers)
{
  uint64_t v;
  ck_assert_int_eq(wv_parse_u64("18446744073709551615", &v), 0);
  ck_assert_uint_eq(v, UINT64_MAX);
  ck_assert_int_ne(wv_parse_u64("18446744073709551616", &v), 0);
  ck_assert_int_eq(wv_parse_u64("0xFFFFFFFFFFFFFFFF", &v), 0);
  ck_assert_uint_eq(v, UINT64_MAX);
  ck_assert_int_ne(wv_parse_u64("", &v), 0);
  ck_assert_int_ne(wv_parse_u64(" 1", &v), 0);
  ck_assert_int_ne(wv_parse_u64("1 ", &v), 0);
  ck_assert_int_ne(wv_parse_u64("0x", &v), 0);
  ck_assert_int_eq(wv_parse_hex64("0x00000000000000ff", &v), 0);
  ck_assert_uint_eq(v, 255);
  ck_assert_int_ne(wv_parse_hex64("0x-1", &v), 0);
  ck_assert_int_ne(wv_parse_hex64("g", &v), 0);
}
END_TEST

/* Rate and ETA from JobInfo, the two progress forms, and the jobs table's
 * RATE and ETA columns. */
START_TEST(progress_lines)
{
  char b[256];
  wave_job_info j = {.job_id = 7, .state = WAVE_JOB_RUNNING, .done = 1000,
                     .total = 4000, .seconds = 2.0};
  ck_assert(wv_job_rate(&j) == 500.0);
  ck_assert(wv_job_eta(&j) == 6.0);
  wv_fmt_eta(b, sizeof b, 6.0);
  ck_assert_str_eq(b, "6s");
  wv_fmt_eta(b, sizeof b, 3.5 * 3600);
  ck_assert_str_eq(b, "3h30m");
  wv_fmt_eta(b, sizeof b, 185);
  ck_assert_str_eq(b, "3m05s");
  wv_fmt_eta(b, sizeof b, 2 * 86400 + 3 * 3600);
  ck_assert_str_eq(b, "2d03h");
  wv_fmt_eta(b, sizeof b, -1);
  ck_assert_str_eq(b, "-");
  wv_fmt_rate(b, sizeof b, 1.5e6);
  ck_assert_str_eq(b, "1.50 MH/s");
  wv_progress_line(b, sizeof b, &j, 0);
  ck_assert_str_eq(b, "job 7: 25.0%, 1000 of 4000 nonces, 500.00 H/s, "
                   "2.0 s, ETA 6s");
  wv_progress_line(b, sizeof b, &j, 1);
  ck_assert_str_eq(b, "[#######-----------------------]  25.0%  500.00 H/s"
                   "  2.0 s  ETA 6s");
  wave_job_info q = {.job_id = 8, .state = WAVE_JOB_QUEUED, .total = 10};
  ck_assert(wv_job_eta(&q) < 0);  /* nothing done yet: unknown */
  wv_progress_line(b, sizeof b, &q, 0);
  ck_assert_ptr_nonnull(strstr(b, "ETA -  queued"));

  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  wave_job_info two[2] = {j, {.job_id = 9, .state = WAVE_JOB_DONE,
                              .done = 10, .total = 10, .seconds = 1.0}};
  wv_print_jobs(f, two, 2, 0);
  fclose(f);
  ck_assert_ptr_nonnull(strstr(text, "RATE"));
  ck_assert_ptr_nonnull(strstr(text, "500.00 H/s"));
  ck_assert_ptr_nonnull(strstr(text, "      6s\n"));   /* running: an ETA */
  ck_assert_ptr_nonnull(strstr(text, "10.00 H/s        -\n"));  /* done */
  free(text);
}
END_TEST

static Suite *tcx_suite(void)
{
  Suite *s = suite_create("client");
  TCase *t = tcase_create("load");
  tcase_add_test(t, raw_rows);
  tcase_add_test(t, auto_refuses_text);
  tcase_add_test(t, raw_file_missing);
  tcase_add_test(t, npy_versions);
  tcase_add_test(t, npy_bad);
  tcase_add_test(t, format_decide_head);
  tcase_add_test(t, job_key_text);
  tcase_add_test(t, text_numbers);
  tcase_add_test(t, text_errors);
  suite_add_tcase(s, t);
  t = tcase_create("output");
  tcase_add_test(t, json_values);
  tcase_add_test(t, json_documents);
  tcase_add_test(t, progress_lines);
  suite_add_tcase(s, t);
  t = tcase_create("args");
  tcase_add_test(t, args_good);
  tcase_add_test(t, args_bad);
  tcase_add_test(t, numbers);
  suite_add_tcase(s, t);
  return s;
}

int main(void)
{
  SRunner *r = srunner_create(tcx_suite());
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
