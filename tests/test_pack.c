/* test_pack.c - the pack loader's errors (docs/hash.md "Packs"): every
 * malformed field names its file:line:column and key, the dataset bound,
 * an empty packs folder, duplicate names and unknown known answers; and
 * what makes two packs the same (wv_pack_equal).  The
 * helpers (scratch folder, synthetic pack texts) are tests/hash_harness.c.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hash_harness.h"
#include "core/base.h"
#include "workers/hash/hash.h"
#include "workers/hash/pack.h"

/* ---- pack loader errors --------------------------------------------------- */

typedef struct th_bad {
  const char *what;
  const char *find, *replace;  /* edit of the valid text */
  const char *where;           /* expected ":line:column: key" fragment */
} th_bad;

/* Valid text: TH_HEAD lines 1-7, "program:" line 8, instructions on lines
 * 9..72 (first "add r2, r0, r1" on 9, the xchg on 10..15). */
static const th_bad th_bads[] = {
  {"unknown key", "rounds: 1\n", "rounds: 1\ncolour: red\n", ":6:1: colour"},
  {"missing key", "registers: 8\n", "", ":1:1: registers"},
  {"duplicate key", "rounds: 1\n", "rounds: 1\nrounds: 2\n", ":6:1: rounds"},
  {"63 instructions", "  - \"add r2, r0, r1\"\n", "", ":9:3: program"},
  {"65 instructions", "  - \"add r2, r0, r1\"\n",
   "  - \"add r2, r0, r1\"\n  - \"add r2, r0, r1\"\n", ":9:3: program"},
  {"7 exchanges", "  - \"add r2, r0, r1\"\n", "  - \"xchg r2, r0, 1\"\n",
   ":9:3: program"},
  {"m = 3", "  - \"xchg r3, r3, 1\"\n  - \"xchg r3, r3, 1\"\n  - \"xchg r3, r3, 1\"\n  - \"xchg r3, r3, 1\"\n  - \"xchg r3, r3, 1\"\n  - \"xchg r3, r3, 1\"\n",
   "  - \"xchg r3, r3, 3\"\n  - \"xchg r3, r3, 1\"\n  - \"xchg r3, r3, 1\"\n  - \"xchg r3, r3, 1\"\n  - \"xchg r3, r3, 1\"\n  - \"xchg r3, r3, 1\"\n",
   ":10:5: program[1]"},
  {"m = 32", "  - \"xchg r3, r3, 1\"\n", "  - \"xchg r3, r3, 32\"\n",
   ":10:5: program[1]"},
  {"register out of range", "add r2, r0, r1", "add r8, r0, r1",
   ":9:5: program[0]"},
  {"unknown instruction", "add r2, r0, r1", "fma r2, r0, r1",
   ":9:5: program[0]"},
  {"operand count", "add r2, r0, r1", "add r2, r0", ":9:5: program[0]"},
  {"shift 64", "add r2, r0, r1", "rotl r2, r0, 64", ":9:5: program[0]"},
  {"registers 33", "registers: 8", "registers: 33", ":4:12: registers"},
  {"bad integer", "seed: 0x1234", "seed: 12ab", ":3:7: seed"},
  {"negative", "rounds: 1", "rounds: -1", ":5:9: rounds"},
  {"no digits", "seed: 0x1234", "seed: _", ":3:7: seed"},
  {"0x, no digits", "seed: 0x1234", "seed: 0x__", ":3:7: seed"},
  {"seed of 2^64", "seed: 0x1234", "seed: 18446744073709551616", ":3:7: seed"},
  {"hex seed of 2^64", "seed: 0x1234", "seed: 0x1_0000_0000_0000_0000",
   ":3:7: seed"},
  {"plus sign", "rounds: 1", "rounds: +1", ":5:9: rounds"},
  {"size suffix", "  closed: true\n",
   "  cache_bytes: 1k\n  dataset_bytes: 1024\n  parents: 2\n",
   ":7:16: dataset.cache_bytes"},
  {"immediate of 2^64", "add r2, r0, r1", "addi r2, r0, 18446744073709551616",
   ":9:5: program[0]"},
  {"duplicate dataset key", "  closed: true\n",
   "  closed: true\n  closed: true\n", ":8:3: dataset"},
  {"hex register", "add r2, r0, r1", "add r0x2, r0, r1", ":9:5: program[0]"},
  {"register with _", "add r2, r0, r1", "add r2, r0_, r1",
   ":9:5: program[0]"},
  {"closed: false", "closed: true", "closed: false", ":7:11: dataset.closed"},
  {"not a power of two", "  closed: true\n",
   "  cache_bytes: 96\n  dataset_bytes: 1024\n  parents: 2\n",
   ":7:16: dataset.cache_bytes"},
  {"dataset of 1 TiB", "  closed: true\n",
   "  cache_bytes: 1024\n  dataset_bytes: 1099511627776\n  parents: 2\n",
   ":8:18: dataset.dataset_bytes"},
  {"dataset of 32 GiB", "  closed: true\n",
   "  cache_bytes: 1024\n  dataset_bytes: 34359738368\n  parents: 2\n",
   ":8:18: dataset.dataset_bytes"},
  {"bad YAML", "rounds: 1\n", "rounds: [1\n", ": YAML syntax: "},
  {"not a mapping", NULL, "[1, 2, 3]\n", ":1:1: (top)"},
  {"empty file", NULL, "", ":1:1: (top)"},
};
#define TH_NBADS (sizeof th_bads / sizeof th_bads[0])

START_TEST(loader_rejects_malformed)
{
  const th_bad *b = &th_bads[_i];
  const char *first[1] = {"add r2, r0, r1"};
  char *text = th_program_text(TH_HEAD, first, 1);
  char *bad = malloc(strlen(text) + strlen(b->replace) + 1);
  if (b->find == NULL) {
    strcpy(bad, b->replace);  /* the whole file */
  } else {
    char *at = strstr(text, b->find);
    ck_assert_msg(at != NULL, "%s: edit does not apply", b->what);
    size_t pre = (size_t)(at - text);
    memcpy(bad, text, pre);
    strcpy(bad + pre, b->replace);
    strcat(bad, at + strlen(b->find));
  }
  const char *path = th_write("bad.yaml", bad);
  wv_pack *p = NULL;
  wave_error err = {0};
  int rv = wv_pack_load_file(path, &p, &err);
  ck_assert_msg(rv == WAVE_EPACKFILE, "%s: rv %d (%s)", b->what, rv,
                err.message);
  ck_assert_ptr_null(p);
  ck_assert_int_eq(err.code, WAVE_EPACKFILE);
  ck_assert_msg(strncmp(err.message, path, strlen(path)) == 0 &&
                    strstr(err.message, b->where) != NULL,
                "%s: message '%s' lacks '%s'", b->what, err.message, b->where);
  free(bad);
  free(text);
}
END_TEST

/* The number rule is devices.yaml's (core/yamlconf.h): '_' separators,
 * 0x hex, a leading 0 in decimal, in keys and in immediates alike. */
START_TEST(loader_number_rule)
{
  const char *first[1] = {"addi r2, r0, 0xffff_ffff_ffff_ffff"};
  char *text = th_program_text("name: t\nversion: 0_1\nseed: 0xdead_beef\n"
                               "registers: 08\nrounds: 1\ndataset:\n"
                               "  closed: true\n", first, 1);
  wv_pack *p = th_load_text(text);
  ck_assert_uint_eq(wv_pack_version(p), 1);
  ck_assert_uint_eq(p->seed, 0xdeadbeefull);
  ck_assert_uint_eq(p->registers, 8);
  ck_assert_uint_eq(p->program[0].imm, UINT64_MAX);
  wv_pack_free(p);
  free(text);
}
END_TEST

/* The largest dataset (WV_DATASET_MAX, 16 GiB) loads: the bound is
 * inclusive.  Loading builds nothing, so this costs no memory. */
START_TEST(loader_dataset_bound)
{
  const char *first[1] = {"load r2, r0"};
  char head[512];
  snprintf(head, sizeof head, "name: t\nversion: 1\nseed: 0x1234\n"
           "registers: 8\nrounds: 1\ndataset:\n  cache_bytes: 1024\n"
           "  dataset_bytes: %llu\n  parents: 2\n",
           (unsigned long long)WV_DATASET_MAX);
  char *text = th_program_text(head, first, 1);
  wv_pack *p = th_load_text(text);
  ck_assert_uint_eq(wv_pack_dataset_bytes(p), WV_DATASET_MAX);
  wv_pack_free(p);
  free(text);
}
END_TEST

/* An empty packs folder is an empty set, not a qsort(NULL, 0) (UBSan's
 * "null pointer passed as argument 1" in the asan build, issue 12). */
START_TEST(packset_empty_folder)
{
  char sub[128];
  snprintf(sub, sizeof sub, "%s/empty", th_dir);
  ck_assert_int_eq(mkdir(sub, 0700), 0);
  wv_packset *s = NULL;
  wave_error err = {0};
  ck_assert_msg(wv_packset_load(sub, &s, &err) == 0, "%s", err.message);
  ck_assert_ptr_nonnull(s);
  ck_assert_uint_eq(wv_packset_count(s), 0);
  ck_assert_ptr_null(wv_packset_find(s, "small"));
  wv_packset_free(s);
  /* one file that is not a pack (no .yaml): still empty */
  snprintf(sub, sizeof sub, "%s/empty/README", th_dir);
  FILE *f = fopen(sub, "w");
  ck_assert_ptr_nonnull(f);
  fclose(f);
  snprintf(sub, sizeof sub, "%s/empty", th_dir);
  ck_assert_int_eq(wv_packset_load(sub, &s, &err), 0);
  ck_assert_uint_eq(wv_packset_count(s), 0);
  wv_packset_free(s);
}
END_TEST

START_TEST(packset_rejects_duplicates_and_unknown_answers)
{
  const char *first[1] = {"add r2, r0, r1"};
  char *text = th_program_text(TH_HEAD, first, 1);
  th_write("a.yaml", text);           /* no known: section */
  wv_packset *s = NULL;
  wave_error err;
  ck_assert_int_eq(wv_packset_load(th_dir, &s, &err), WAVE_EPACKFILE);
  ck_assert_ptr_nonnull(strstr(err.message, "known"));
  /* Two files with the same name: (known answers need not be right to
   * load; they are checked by the self-check) */
  char *k = malloc(strlen(text) + 4096);
  strcpy(k, text);
  strcat(k, "known:\n  batch_fnv: 1\n  vectors:\n    - nonce: 0\n"
            "      outputs: [");
  for (int i = 0; i < 32; i++)
    strcat(k, i ? ", 0" : "0");
  strcat(k, "]\n");
  th_write("a.yaml", k);
  th_write("b.yaml", k);
  ck_assert_int_eq(wv_packset_load(th_dir, &s, &err), WAVE_EPACKFILE);
  ck_assert_ptr_nonnull(strstr(err.message, "also defined"));
  unlink(th_write("b.yaml", ""));
  ck_assert_int_eq(wv_packset_load(th_dir, &s, &err), 0);
  ck_assert_uint_eq(wv_packset_count(s), 1);
  wv_packset_free(s);
  /* Duplicate keys inside known: and inside a vector are errors too (the
   * YAML parser would let the last one win silently). */
  static const char *const dups[][2] = {
    {"  batch_fnv: 1\n", "  batch_fnv: 1\n  batch_fnv: 2\n"},
    {"    - nonce: 0\n", "    - nonce: 0\n      nonce: 32\n"},
  };
  for (size_t d = 0; d < 2; d++) {
    char *bad = malloc(strlen(k) + 64);
    char *at = strstr(k, dups[d][0]);
    ck_assert_ptr_nonnull(at);
    memcpy(bad, k, (size_t)(at - k));
    strcpy(bad + (at - k), dups[d][1]);
    strcat(bad, at + strlen(dups[d][0]));
    wv_pack *p = NULL;
    ck_assert_int_eq(wv_pack_load_file(th_write("a.yaml", bad), &p, &err),
                     WAVE_EPACKFILE);
    ck_assert_ptr_null(p);
    ck_assert_msg(strstr(err.message, "duplicate key") != NULL, "%s",
                  err.message);
    free(bad);
  }
  /* known.job: loaded as written; a count of 0 or one past nonce 2^64 - 1
   * is an error naming the key */
  static const struct { const char *job; const char *err; } jobs[] = {
    {"  job: {nonce: 7, count: 24626, fingerprint: 0xabc}\n", NULL},
    {"  job: {nonce: 7, count: 0, fingerprint: 1}\n", "known.job.count"},
    {"  job: {nonce: 0xffffffffffffffff, count: 2, fingerprint: 1}\n",
     "known.job.count"},
    {"  job: {nonce: 7, count: 5}\n", "known.job"},
  };
  for (size_t j = 0; j < sizeof jobs / sizeof jobs[0]; j++) {
    char *with = malloc(strlen(k) + 128);
    strcpy(with, k);
    strcat(with, jobs[j].job);
    wv_pack *p = NULL;
    int rc = wv_pack_load_file(th_write("a.yaml", with), &p, &err);
    if (jobs[j].err == NULL) {
      ck_assert_msg(rc == 0, "%s", err.message);
      ck_assert_int_eq(p->has_job, 1);
      ck_assert_uint_eq(p->job_nonce, 7);
      ck_assert_uint_eq(p->job_count, 24626);
      ck_assert_uint_eq(p->job_fingerprint, 0xabc);
      wv_pack_free(p);
    } else {
      ck_assert_int_eq(rc, WAVE_EPACKFILE);
      ck_assert_msg(strstr(err.message, jobs[j].err) != NULL, "%s",
                    err.message);
    }
    free(with);
  }
  unlink(th_write("a.yaml", ""));
  free(k);
  free(text);
}
END_TEST

/* wv_pack_equal (a reload keeps an equal pack serving): the file a pack
 * came from does not count; its seed, program and known answers do. */
START_TEST(pack_equal_is_content)
{
  const char *first[1] = {"add r2, r0, r1"};
  char *text = th_program_text(TH_HEAD, first, 1);
  char *k = malloc(strlen(text) + 4096);
  strcpy(k, text);
  strcat(k, "known:\n  batch_fnv: 1\n  vectors:\n    - nonce: 0\n"
            "      outputs: [");
  for (int i = 0; i < 32; i++)
    strcat(k, i ? ", 7" : "7");
  strcat(k, "]\n");
  wave_error err = {0};
  wv_pack *a = NULL, *b = NULL, *c = NULL;
  ck_assert_msg(wv_pack_load_file(th_write("a.yaml", k), &a, &err) == 0, "%s",
                err.message);
  ck_assert_msg(wv_pack_load_file(th_write("b.yaml", k), &b, &err) == 0, "%s",
                err.message);
  ck_assert_str_ne(a->path, b->path);
  ck_assert_int_ne(wv_pack_equal(a, b), 0);
  ck_assert_int_ne(wv_pack_equal(b, a), 0);
  /* one field each: the seed, an instruction, a known output */
  static const char *const edits[][2] = {
    {"seed: 0x1234", "seed: 0x1235"},
    {"add r2, r0, r1", "sub r2, r0, r1"},
    {"outputs: [7, 7", "outputs: [7, 8"},
  };
  for (size_t e = 0; e < sizeof edits / sizeof edits[0]; e++) {
    char *at = strstr(k, edits[e][0]);
    ck_assert_ptr_nonnull(at);
    char *x = malloc(strlen(k) + 64);
    memcpy(x, k, (size_t)(at - k));
    strcpy(x + (at - k), edits[e][1]);
    strcat(x, at + strlen(edits[e][0]));
    ck_assert_msg(wv_pack_load_file(th_write("c.yaml", x), &c, &err) == 0,
                  "%s: %s", edits[e][1], err.message);
    ck_assert_msg(!wv_pack_equal(a, c), "%s: equal", edits[e][1]);
    wv_pack_free(c);
    free(x);
  }
  wv_pack_free(a);
  wv_pack_free(b);
  unlink(th_write("a.yaml", ""));
  unlink(th_write("b.yaml", ""));
  unlink(th_write("c.yaml", ""));
  free(k);
  free(text);
}
END_TEST

static Suite *pack_suite(void)
{
  Suite *s = suite_create("pack");
  TCase *tc = tcase_create("loader");
  tcase_add_checked_fixture(tc, th_setup, th_teardown);
  tcase_add_loop_test(tc, loader_rejects_malformed, 0, (int)TH_NBADS);
  tcase_add_test(tc, loader_dataset_bound);
  tcase_add_test(tc, loader_number_rule);
  tcase_add_test(tc, packset_empty_folder);
  tcase_add_test(tc, packset_rejects_duplicates_and_unknown_answers);
  tcase_add_test(tc, pack_equal_is_content);
  suite_add_tcase(s, tc);
  return s;
}

int main(void)
{
  SRunner *sr = srunner_create(pack_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
