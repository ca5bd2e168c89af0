/* test_cuda_jit.cu - the per-pack CUDA kernels (workers/cuda/gpu_jit.cu)
 * compile, without a GPU: every shipped pack, both exchange paths, rounds
 * unrolled and in a loop (with a launch-bounds block minimum), to a non-empty cubin for sm_90 through NVRTC.
 * Their outputs are checked on a GPU by the daemon's start-up self-check,
 * tests/conformance and wvbench-gpu-hash (bench/device-run.sh); here only
 * that the generated source is valid CUDA and that a bad architecture is a
 * reported failure (the interpreter's fallback), not a crash.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "workers/cuda/gpu_internal.h"

#define WV_HASH_FN static __host__ __device__ inline
extern "C" {
#include "workers/hash/hash.h"
#include "workers/hash/pack.h"
}

using namespace wv_cuda;

static wv_pack *load_pack(const char *name)
{
  const char *src = getenv("WAVE_SOURCE_DIR");
  char path[600];
  snprintf(path, sizeof path, "%s/config/packs/%s.yaml", src ? src : ".",
           name);
  wv_pack *p = NULL;
  wave_error err;
  ck_assert_msg(wv_pack_load_file(path, &p, &err) == 0, "%s: %s", path,
                err.message);
  return p;
}

START_TEST(compiles_every_pack)
{
  static const char *names[] = {"small", "closed", "main"};
  const char *name = names[_i / 4];
  const int local = _i & 1, unroll = (_i >> 1) & 1;
  wv_pack *p = load_pack(name);
  std::string cubin;
  char why[300] = "";
  int rv = jit_compile(p, local, 128, unroll, unroll ? 0 : 8, 9, 0, &cubin, why, sizeof why);
  ck_assert_msg(rv == 0, "pack %s local %d unroll %d: %s", name, local,
                unroll, why);
  /* An ELF image. */
  ck_assert_uint_gt(cubin.size(), 1000);
  ck_assert_int_eq(cubin[0], 0x7f);
  ck_assert_int_eq(cubin[1], 'E');
  wv_pack_free(p);
}
END_TEST

START_TEST(bad_arch_is_an_error)
{
  wv_pack *p = load_pack("small");
  std::string cubin;
  char why[300] = "";
  ck_assert_int_ne(jit_compile(p, 0, 128, 1, 0, 1, 0, &cubin, why, sizeof why),
                   0);
  ck_assert_msg(why[0] != '\0', "no reason given");
  wv_pack_free(p);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("cuda_jit");
  TCase *tc = tcase_create("nvrtc");
  tcase_set_timeout(tc, 300);
  tcase_add_loop_test(tc, compiles_every_pack, 0, 12);
  tcase_add_test(tc, bad_arch_is_an_error);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? 0 : 1;
}
