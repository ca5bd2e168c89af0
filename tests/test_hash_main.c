/* test_hash_main.c - the main pack (1 GiB dataset) on the CPU backend: its
 * cache fingerprint, vectors, a partial unit and the batch fingerprint of
 * [0, 2^13) (wv_pack_selfcheck), and light verification of its vectors from
 * the cache alone, and its known.job (a job of four segments) from the CPU
 * backend's outputs folded here by the definition (docs/hash.md
 * "Segments"; end to end through wavedd for the small and closed packs:
 * tests/integ_hash.c).  Separate from test_hash because it needs 1 GiB and
 * a few seconds of dataset generation. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workers/cpu/cpu.h"
#include "workers/hash/hash.h"
#include "workers/hash/pack.h"

START_TEST(main_pack_on_cpu)
{
  char path[600];
  const char *src = getenv("WAVE_SOURCE_DIR");
  snprintf(path, sizeof path, "%s/config/packs/main.yaml", src ? src : ".");
  wv_pack *p;
  wave_error err;
  ck_assert_msg(wv_pack_load_file(path, &p, &err) == 0, "%s", err.message);
  ck_assert_uint_eq(wv_pack_dataset_bytes(p), 1ull << 30);
  ck_assert_uint_eq(p->loads * p->rounds, 104);

  wv_device_config cfg = {.name = "cpu-main", .backend = "cpu", .threads = 0};
  wv_device *dev;
  ck_assert_msg(wv_cpu_backend.open(&cfg, &dev, &err) == 0, "%s",
                err.message);
  char detail[160];
  int rv = wv_pack_selfcheck(&wv_cpu_backend, dev, p, detail, sizeof detail,
                             &err);
  ck_assert_msg(rv == 0, "%s", err.message);
  ck_assert_int_eq(p->has_job, 1);
  uint64_t *out = malloc(p->job_count * sizeof *out);
  ck_assert_ptr_nonnull(out);
  ck_assert_msg(wv_cpu_backend.hash(dev, p, p->job_nonce, p->job_count, out,
                                    &err) == 0, "%s", err.message);
  uint64_t job = WV_FNV_OFFSET, n0 = p->job_nonce;
  unsigned segs = 0;
  for (size_t i = 0; i < p->job_count; segs++) {
    size_t j = i + 1;
    while (j < p->job_count && ((n0 + j) >> 13) == ((n0 + i) >> 13))
      j++;
    uint64_t seg = wv_fnv1a64(WV_FNV_OFFSET, out + i, (j - i) * 8);
    job = wv_fnv1a64(job, &seg, 8);
    i = j;
  }
  free(out);
  ck_assert_uint_gt(segs, 2);
  ck_assert_uint_eq(job, p->job_fingerprint);
  wv_cpu_backend.close(dev);

  for (size_t v = 0; v < p->n_vectors; v++)
    for (unsigned l = 0; l < 32; l += 7) {
      uint64_t o;
      ck_assert_int_eq(wv_hash_verify(p, p->vectors[v].nonce + l, &o, &err),
                       0);
      ck_assert_uint_eq(o, p->vectors[v].outputs[l]);
    }
  wv_pack_free(p);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("hash-main");
  TCase *tc = tcase_create("main");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, main_pack_on_cpu);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
