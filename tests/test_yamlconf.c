/* test_yamlconf.c - core/yamlconf's number rule (docs/config.md "Numbers"),
 * the one rule of the config and the pack loaders, on the parser alone;
 * test_config and test_pack check it as each loader applies it. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/yamlconf.h"

/* The one number rule (core/yamlconf.h, docs/config.md "Numbers"), which
 * the pack loader shares: its edge cases on the parser itself. */
START_TEST(number_rule)
{
  static const struct {
    const char *text;
    int ok;
    uint64_t value;
  } cases[] = {
    {"0", 1, 0},
    {"42", 1, 42},
    {"010", 1, 10},                     /* a leading 0 is not octal */
    {"0x10", 1, 16},
    {"0XfF", 1, 255},
    {"1_000_000", 1, 1000000},
    {"0xdead_beef", 1, 0xdeadbeefull},
    {"18446744073709551615", 1, UINT64_MAX},
    {"0xffffffffffffffff", 1, UINT64_MAX},
    {"0x0000000000000000ff", 1, 255},   /* leading zeros never overflow */
    {"18446744073709551616", 0, 0},     /* 2^64 */
    {"0x10000000000000000", 0, 0},
    {"99999999999999999999", 0, 0},
    {"", 0, 0},
    {"_", 0, 0},
    {"0x", 0, 0},
    {"0x_", 0, 0},
    {"-1", 0, 0},
    {"+1", 0, 0},
    {" 1", 0, 0},
    {"1 ", 0, 0},
    {"12ab", 0, 0},
    {"0o17", 0, 0},                     /* octal only for file modes */
    {"0b101", 0, 0},
    {"1e3", 0, 0},
    {"1.0", 0, 0},
    {"64MiB", 0, 0},                    /* no size suffixes */
    {"4k", 0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    uint64_t v = 12345;
    int rc = wv_yc_parse_u64(cases[i].text, &v);
    ck_assert_msg((rc == 0) == cases[i].ok, "'%s': rc %d", cases[i].text, rc);
    if (cases[i].ok)
      ck_assert_msg(v == cases[i].value, "'%s': %llu", cases[i].text,
                    (unsigned long long)v);
    else
      ck_assert_msg(v == 12345, "'%s': written on failure", cases[i].text);
  }
}
END_TEST

int main(void)
{
  Suite *s = suite_create("yamlconf");
  TCase *t = tcase_create("numbers");
  tcase_add_test(t, number_rule);
  suite_add_tcase(s, t);
  SRunner *r = srunner_create(s);
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
