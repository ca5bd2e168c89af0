/* test_ctl64.c - wavectl's 64-bit dtypes and argmin/argmax without a
 * daemon (issue 23): .npy '<u8', '<i8', '<f8', text parsed exactly to 64
 * bits (and refused with file:line where the dtype cannot hold a number),
 * raw rows of 8 bytes, and the printers (exact integers, float64 that read
 * back to their bits, 16-digit bits, "index").  test_client.c has the
 * 32-bit cases.
 *
 * Expected values are literal bit patterns written from the formats'
 * descriptions, not computed by the code under test; printed float64 are
 * read back with strtod and the JSON with tests/jsonq.c.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/ctl.h"
#include "jsonq.h"
#include "wave/client.h"

static uint64_t t6_le64(const void *p, size_t i)
{
  const unsigned char *b = (const unsigned char *)p + 8 * i;
  uint64_t v = 0;
  for (int k = 7; k >= 0; k--)
    v = v << 8 | b[k];
  return v;
}

static int t6_load(const char *text, size_t len, wv_format fmt, wave_dtype d,
                   wv_chunk_buf *out, wave_error *err)
{
  char *b = malloc(len + 1);
  ck_assert_ptr_nonnull(b);
  if (len)
    memcpy(b, text, len);
  return wv_load_buffer("t.in", b, len, fmt, d, out, err);
}

/* An .npy version 1 image of the dict and the data bytes (test_client.c's
 * tc_npy, version 1 only). */
static int t6_npy(const char *dict, const void *data, size_t bytes,
                  wave_dtype d, wv_chunk_buf *out, wave_error *err)
{
  size_t hl = strlen(dict) + 1;
  hl += (64 - (10 + hl) % 64) % 64;
  size_t len = 10 + hl + bytes;
  char *b = malloc(len + 1);
  ck_assert_ptr_nonnull(b);
  memcpy(b, "\x93NUMPY\x01\x00", 8);
  b[8] = (char)(hl & 0xff);
  b[9] = (char)(hl >> 8);
  memset(b + 10, ' ', hl);
  memcpy(b + 10, dict, strlen(dict));
  b[10 + hl - 1] = '\n';
  if (bytes)
    memcpy(b + 10 + hl, data, bytes);
  return wv_load_buffer("a.npy", b, len, WV_FMT_AUTO, d, out, err);
}

/* ---- .npy and raw ------------------------------------------------------- */

START_TEST(npy_64)
{
  const uint64_t v[3] = {0xffffffffffffffffull, 2, 0x8000000000000000ull};
  static const struct { const char *descr; wave_dtype d; } ok[] = {
    {"<u8", WAVE_U64}, {"<i8", WAVE_S64}, {"<f8", WAVE_F64},
  };
  wv_chunk_buf b;
  wave_error e = {0};
  for (size_t i = 0; i < 3; i++) {
    char dict[96];
    snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, "
             "'shape': (3,), }", ok[i].descr);
    ck_assert_int_eq(t6_npy(dict, v, sizeof v, ok[i].d, &b, &e), 0);
    ck_assert_uint_eq(b.bytes, 24);
    for (size_t k = 0; k < 3; k++)
      ck_assert_uint_eq(t6_le64(b.data, k), v[k]);
    wv_chunk_buf_free(&b);
    ck_assert_str_eq(wv_npy_descr(ok[i].d), ok[i].descr);
  }
  /* 2-D shapes count rows of 8 bytes */
  ck_assert_int_eq(t6_npy("{'descr': '<f8', 'fortran_order': False, "
                          "'shape': (1, 3), }", v, sizeof v, WAVE_F64, &b, &e),
                   0);
  ck_assert_uint_eq(b.bytes, 24);
  wv_chunk_buf_free(&b);
  /* another dtype, big-endian, or a 4-byte descr for a 64-bit dtype: the
   * message names both descrs */
  ck_assert_int_eq(t6_npy("{'descr': '<i8', 'fortran_order': False, "
                          "'shape': (3,), }", v, sizeof v, WAVE_U64, &b, &e),
                   WAVE_EDTYPE);
  ck_assert_ptr_nonnull(strstr(e.message, "'<i8'"));
  ck_assert_ptr_nonnull(strstr(e.message, "'<u8'"));
  ck_assert_int_eq(t6_npy("{'descr': '>f8', 'fortran_order': False, "
                          "'shape': (3,), }", v, sizeof v, WAVE_F64, &b, &e),
                   WAVE_EDTYPE);
  ck_assert_int_eq(t6_npy("{'descr': '<f4', 'fortran_order': False, "
                          "'shape': (6,), }", v, sizeof v, WAVE_F64, &b, &e),
                   WAVE_EDTYPE);
  ck_assert_int_eq(t6_npy("{'descr': '<f8', 'fortran_order': False, "
                          "'shape': (6,), }", v, sizeof v, WAVE_F32, &b, &e),
                   WAVE_EDTYPE);
  /* the shape counts 8-byte rows: 6 rows would be 48 bytes */
  ck_assert_int_eq(t6_npy("{'descr': '<u8', 'fortran_order': False, "
                          "'shape': (6,), }", v, sizeof v, WAVE_U64, &b, &e),
                   WAVE_ELENGTH);
  ck_assert_ptr_nonnull(strstr(e.message, "48 bytes"));
}
END_TEST

START_TEST(raw_64)
{
  const unsigned char bytes[16] = {1, 2, 3, 4, 5, 6, 7, 8,
                                   0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0x80};
  wv_chunk_buf b;
  wave_error e = {0};
  ck_assert_int_eq(t6_load((const char *)bytes, 16, WV_FMT_RAW, WAVE_S64, &b,
                           &e), 0);
  ck_assert_uint_eq(b.bytes, 16);
  ck_assert_uint_eq(t6_le64(b.data, 0), 0x0807060504030201ull);
  ck_assert_uint_eq(t6_le64(b.data, 1), 0x80000000ffffffffull);
  wv_chunk_buf_free(&b);
  /* 12 bytes: three 32-bit rows, but not whole 8-byte rows */
  ck_assert_int_eq(t6_load((const char *)bytes, 12, WV_FMT_RAW, WAVE_U32, &b,
                           &e), 0);
  wv_chunk_buf_free(&b);
  static const wave_dtype wide[] = {WAVE_U64, WAVE_S64, WAVE_F64};
  for (size_t i = 0; i < 3; i++) {
    ck_assert_int_eq(t6_load((const char *)bytes, 12, WV_FMT_AUTO, wide[i],
                             &b, &e), WAVE_ELENGTH);
    ck_assert_ptr_nonnull(strstr(e.message, "12 bytes"));
    ck_assert_ptr_nonnull(strstr(e.message, "8-byte"));
  }
  /* the layout of a region path agrees */
  wv_layout lay;
  ck_assert_int_eq(wv_format_decide("r", bytes, 12, 12, WV_FMT_RAW, WAVE_F64,
                                    &lay, &e), WAVE_ELENGTH);
  ck_assert_int_eq(wv_format_decide("r", bytes, 16, 16, WV_FMT_AUTO,
                                    WAVE_F64, &lay, &e), 0);
  ck_assert_uint_eq(lay.bytes, 16);
}
END_TEST

/* ---- text --------------------------------------------------------------- */

START_TEST(text_64)
{
  wv_chunk_buf b;
  wave_error e = {0};
  /* beyond 2^53 (where a double would round), and the extremes */
  const char *t = "18446744073709551615, 9007199254740993\n0x8000000000000001"
                  " 0 -0\n";
  ck_assert_int_eq(t6_load(t, strlen(t), WV_FMT_TEXT, WAVE_U64, &b, &e), 0);
  const uint64_t want_u[] = {0xffffffffffffffffull, 0x20000000000001ull,
                             0x8000000000000001ull, 0, 0};
  ck_assert_uint_eq(b.bytes, sizeof want_u);
  for (size_t i = 0; i < 5; i++)
    ck_assert_uint_eq(t6_le64(b.data, i), want_u[i]);
  wv_chunk_buf_free(&b);

  t = "-9223372036854775808 9223372036854775807 -1 +5 -9007199254740993";
  ck_assert_int_eq(t6_load(t, strlen(t), WV_FMT_TEXT, WAVE_S64, &b, &e), 0);
  const uint64_t want_s[] = {0x8000000000000000ull, 0x7fffffffffffffffull,
                             0xffffffffffffffffull, 5,
                             0xffdfffffffffffffull};
  ck_assert_uint_eq(b.bytes, sizeof want_s);
  for (size_t i = 0; i < 5; i++)
    ck_assert_uint_eq(t6_le64(b.data, i), want_s[i]);
  wv_chunk_buf_free(&b);

  t = "1.5 -0.0 0.1 inf -inf 4.9e-324 1.7976931348623157e308 1e39 nan";
  ck_assert_int_eq(t6_load(t, strlen(t), WV_FMT_TEXT, WAVE_F64, &b, &e), 0);
  const uint64_t want_f[] = {0x3ff8000000000000ull, 0x8000000000000000ull,
                             0x3fb999999999999aull, 0x7ff0000000000000ull,
                             0xfff0000000000000ull, 1,
                             0x7fefffffffffffffull, 0x48078287f49c4a1dull};
  ck_assert_uint_eq(b.bytes, 9 * 8);
  for (size_t i = 0; i < 8; i++)
    ck_assert_uint_eq(t6_le64(b.data, i), want_f[i]);
  uint64_t nan = t6_le64(b.data, 8);
  ck_assert_uint_eq(nan & 0x7ff0000000000000ull, 0x7ff0000000000000ull);
  ck_assert_uint_ne(nan & 0x000fffffffffffffull, 0);
  wv_chunk_buf_free(&b);

  /* the 32-bit dtypes keep their range */
  ck_assert_int_eq(t6_load("4294967296", 10, WV_FMT_TEXT, WAVE_U32, &b, &e),
                   WAVE_EARG);
}
END_TEST

static void t6_text_err(const char *t, wave_dtype d, const char *where)
{
  wv_chunk_buf b;
  wave_error e = {0};
  ck_assert_int_eq(t6_load(t, strlen(t), WV_FMT_TEXT, d, &b, &e), WAVE_EARG);
  ck_assert_msg(strstr(e.message, where) != NULL, "'%s' lacks '%s'",
                e.message, where);
}

START_TEST(text_64_errors)
{
  /* one past each end, on the line it is on */
  t6_text_err("1\n2\n18446744073709551616\n", WAVE_U64, "t.in:3:");
  t6_text_err("1\n2\n18446744073709551616\n", WAVE_U64, "out of range");
  t6_text_err("99999999999999999999999999", WAVE_U64, "out of range");
  t6_text_err("0x10000000000000000", WAVE_U64, "out of range");
  t6_text_err("-1", WAVE_U64, "out of range for uint64");
  t6_text_err("\n9223372036854775808", WAVE_S64, "t.in:2:");
  t6_text_err("9223372036854775808", WAVE_S64, "out of range for sint64");
  t6_text_err("-9223372036854775809", WAVE_S64, "out of range");
  t6_text_err("0xffffffffffffffff", WAVE_S64, "out of range");
  /* not numbers, even past 2^64 */
  t6_text_err("123456789012345678901234x", WAVE_U64, "not a");
  t6_text_err("1.5", WAVE_S64, "not a sint64");
  t6_text_err("\n\n\n1e309", WAVE_F64, "t.in:4:");
  t6_text_err("1e309", WAVE_F64, "out of range for float64");
  t6_text_err("1.0d", WAVE_F64, "'1.0d'");
}
END_TEST

/* ---- output ------------------------------------------------------------- */

START_TEST(values_64)
{
  char buf[48];
  ck_assert_str_eq(wv_json_value(buf, sizeof buf, WAVE_U64,
                                 0xffffffffffffffffull),
                   "18446744073709551615");
  ck_assert_str_eq(wv_json_value(buf, sizeof buf, WAVE_U64,
                                 0x20000000000001ull), "9007199254740993");
  ck_assert_str_eq(wv_json_value(buf, sizeof buf, WAVE_S64,
                                 0x8000000000000000ull),
                   "-9223372036854775808");
  ck_assert_str_eq(wv_json_value(buf, sizeof buf, WAVE_F64,
                                 0x3fb999999999999aull), "0.1");
  ck_assert_str_eq(wv_json_value(buf, sizeof buf, WAVE_F64,
                                 0x3fd3333333333334ull),
                   "0.30000000000000004");
  ck_assert_str_eq(wv_json_value(buf, sizeof buf, WAVE_F64,
                                 0x8000000000000000ull), "-0");
  ck_assert_str_eq(wv_json_value(buf, sizeof buf, WAVE_F64,
                                 0x7ff8000000000000ull), "\"nan\"");
  ck_assert_str_eq(wv_json_value(buf, sizeof buf, WAVE_F64,
                                 0xfff0000000000000ull), "\"-inf\"");
  ck_assert_str_eq(wv_text_value(buf, sizeof buf, WAVE_F64,
                                 0x7ff0000000000000ull), "inf");
  /* a 32-bit dtype reads the low 32 bits only */
  ck_assert_str_eq(wv_json_value(buf, sizeof buf, WAVE_S32, 0xffffffffull),
                   "-1");
  ck_assert_str_eq(wv_json_value(buf, sizeof buf, WAVE_F32, 0x3fc00000ull),
                   "1.5");

  /* every finite double prints as JSON that reads back to its bits */
  uint64_t x = 23;
  for (int i = 0; i < 20000; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t bits = i < 4 ? (uint64_t[]){1, 0x7fefffffffffffffull,
                                         0x0010000000000000ull,
                                         0x800fffffffffffffull}[i]
                          : x;
    double d;
    memcpy(&d, &bits, 8);
    if (!isfinite(d))
      continue;
    wv_json_value(buf, sizeof buf, WAVE_F64, bits);
    char doc[64];
    snprintf(doc, sizeof doc, "[%s]", buf);
    jq_node *n = jq_parse(doc);
    ck_assert_msg(n != NULL, "not JSON: %s", buf);
    ck_assert_int_eq(jq_at(n, 0)->type, JQ_NUM);
    jq_free(n);
    double back = strtod(buf, NULL);
    uint64_t bb;
    memcpy(&bb, &back, 8);
    ck_assert_msg(bb == bits, "%016llx printed as %s reads %016llx",
                  (unsigned long long)bits, buf, (unsigned long long)bb);
  }
}
END_TEST

static char *t6_print(const wave_reduce_result *r, int json)
{
  char *text;
  size_t len;
  FILE *f = open_memstream(&text, &len);
  ck_assert_ptr_nonnull(f);
  wv_print_reduce(f, r, json);
  fclose(f);
  return text;
}

START_TEST(print_argmax)
{
  wave_reduce_result r = {
    .dtype = WAVE_F64, .op = WAVE_ARGMAX, .n_values = 1,
    .bits = {0x4000000000000000ull, 0}, .index = 5, .count = 4, .rows = 6,
    .seconds = 0.5, .device = "cpu0",
  };
  char *text = t6_print(&r, 1);
  jq_node *n = jq_parse(text);
  ck_assert_msg(n != NULL, "not JSON: %s", text);
  ck_assert_uint_eq(jq_get(n, "result")->n, 1);
  ck_assert_float_eq(jq_at(jq_get(n, "result"), 0)->num, 2.0);
  ck_assert_str_eq(jq_at(jq_get(n, "bits"), 0)->text, "0x4000000000000000");
  uint64_t u;
  ck_assert_int_eq(jq_u64(jq_get(n, "index"), &u), 0);
  ck_assert_uint_eq(u, 5);
  ck_assert_str_eq(jq_get(n, "op")->text, "argmax");
  ck_assert_str_eq(jq_get(n, "dtype")->text, "float64");
  jq_free(n);
  free(text);

  text = t6_print(&r, 0);
  ck_assert_msg(strstr(text, "argmax float64 = 2  (bits 0x4000000000000000)")
                != NULL, "%s", text);
  ck_assert_msg(strstr(text, "\nindex: 5\n") != NULL, "%s", text);
  free(text);

  /* no row: index -1, as a JSON number */
  r = (wave_reduce_result){.dtype = WAVE_U32, .op = WAVE_ARGMIN,
                           .n_values = 1, .index = -1, .rows = 3,
                           .device = "cpu0"};
  text = t6_print(&r, 1);
  n = jq_parse(text);
  ck_assert_msg(n != NULL, "not JSON: %s", text);
  ck_assert_int_eq(jq_get(n, "index")->type, JQ_NUM);
  ck_assert_float_eq(jq_get(n, "index")->num, -1.0);
  ck_assert_str_eq(jq_at(jq_get(n, "bits"), 0)->text, "0x00000000");
  jq_free(n);
  free(text);
  text = t6_print(&r, 0);
  ck_assert_msg(strstr(text, "index: -1") != NULL, "%s", text);
  free(text);

  /* other ops have no index; 64-bit extent bits have 16 digits */
  r = (wave_reduce_result){.dtype = WAVE_S64, .op = WAVE_EXTENT,
                           .n_values = 2,
                           .bits = {0x8000000000000000ull, 2}, .count = 3,
                           .rows = 3, .device = "cpu0"};
  text = t6_print(&r, 1);
  n = jq_parse(text);
  ck_assert_msg(n != NULL, "not JSON: %s", text);
  ck_assert_ptr_null(jq_get(n, "index"));
  ck_assert_str_eq(jq_at(jq_get(n, "bits"), 0)->text, "0x8000000000000000");
  ck_assert_str_eq(jq_at(jq_get(n, "bits"), 1)->text, "0x0000000000000002");
  jq_free(n);
  free(text);
  text = t6_print(&r, 0);
  ck_assert_msg(strstr(text, "[-9223372036854775808, 2]  (bits "
                       "0x8000000000000000, 0x0000000000000002)") != NULL,
                "%s", text);
  ck_assert_ptr_null(strstr(text, "index"));
  free(text);
}
END_TEST

/* ---- command line ------------------------------------------------------- */

START_TEST(args_64)
{
  static const struct { const char *name; wave_dtype d; } names[] = {
    {"uint64", WAVE_U64}, {"u64", WAVE_U64}, {"int64", WAVE_S64},
    {"i64", WAVE_S64}, {"s64", WAVE_S64}, {"sint64", WAVE_S64},
    {"float64", WAVE_F64}, {"f64", WAVE_F64}, {"double", WAVE_F64},
  };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    for (int op = 0; op < 2; op++) {
      wv_args a;
      wave_error e = {0};
      const char *v[] = {"wavectl", "submit", "reduce", "--op",
                         op ? "argmax" : "argmin", "--dtype", names[i].name,
                         "--input", "x", NULL};
      ck_assert_int_eq(wv_args_parse(9, (char **)v, &a, &e), 0);
      ck_assert_int_eq(a.dtype, names[i].d);
      ck_assert_int_eq(a.op, op ? WAVE_ARGMAX : WAVE_ARGMIN);
      wv_args_fini(&a);
    }
  wv_args a;
  wave_error e = {0};
  const char *v[] = {"wavectl", "submit", "reduce", "--op", "sum", "--dtype",
                     "float128", "--input", "x", NULL};
  ck_assert_int_eq(wv_args_parse(9, (char **)v, &a, &e), WAVE_EARG);
  ck_assert_ptr_nonnull(strstr(e.message, "float64"));
  wv_args_fini(&a);
  const char *w[] = {"wavectl", "submit", "reduce", "--op", "argmedian",
                     "--dtype", "u64", "--input", "x", NULL};
  ck_assert_int_eq(wv_args_parse(9, (char **)w, &a, &e), WAVE_EARG);
  ck_assert_ptr_nonnull(strstr(e.message, "argmax"));
  wv_args_fini(&a);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("ctl64");
  TCase *t = tcase_create("ctl64");
  tcase_add_test(t, npy_64);
  tcase_add_test(t, raw_64);
  tcase_add_test(t, text_64);
  tcase_add_test(t, text_64_errors);
  tcase_add_test(t, values_64);
  tcase_add_test(t, print_argmax);
  tcase_add_test(t, args_64);
  suite_add_tcase(s, t);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
