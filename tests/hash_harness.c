/* hash_harness.c - see hash_harness.h. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hash_harness.h"
#include "core/base.h"
#include "workers/cpu/cpu.h"
#include "workers/hash/hash.h"

char th_dir[64];

const char *th_packs_dir(void)
{
  static char path[512];
  const char *src = getenv("WAVE_SOURCE_DIR");
  snprintf(path, sizeof path, "%s/config/packs", src ? src : ".");
  return path;
}

wv_pack *th_shipped(const char *name)
{
  char path[600];
  wave_error err;
  wv_pack *p;
  snprintf(path, sizeof path, "%s/%s.yaml", th_packs_dir(), name);
  int rv = wv_pack_load_file(path, &p, &err);
  ck_assert_msg(rv == 0, "%s", err.message);
  ck_assert(p->has_known);
  return p;
}

const char *th_write(const char *file, const char *text)
{
  static char path[128];
  snprintf(path, sizeof path, "%s/%s", th_dir, file);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
  return path;
}

char *th_program_text(const char *head, const char *const *first,
                      unsigned nfirst)
{
  char *t = malloc(16384);
  size_t k = (size_t)snprintf(t, 16384, "%sprogram:\n", head);
  unsigned n = 0;
  for (; n < nfirst; n++)
    k += (size_t)snprintf(t + k, 16384 - k, "  - \"%s\"\n", first[n]);
  unsigned swaps = 6;
  for (unsigned i = 0; i < nfirst; i++)
    swaps -= strncmp(first[i], "xchg", 4) == 0;
  for (unsigned x = 0; x < swaps; x++, n++)
    k += (size_t)snprintf(t + k, 16384 - k, "  - \"xchg r3, r3, 1\"\n");
  for (; n < 64; n++)
    k += (size_t)snprintf(t + k, 16384 - k, "  - \"xor r5, r6, r7\"\n");
  return t;
}

wv_pack *th_load_text(const char *text)
{
  wave_error err;
  wv_pack *p;
  int rv = wv_pack_load_file(th_write("t.yaml", text), &p, &err);
  ck_assert_msg(rv == 0, "%s", err.message);
  return p;
}

wv_device *th_cpu_open(unsigned threads)
{
  wv_device_config cfg = {.name = "cpu-test", .backend = "cpu",
                          .threads = threads};
  wv_device *dev;
  wave_error err;
  int rv = wv_cpu_backend.open(&cfg, &dev, &err);
  ck_assert_msg(rv == 0, "%s", err.message);
  return dev;
}

void th_setup(void)
{
  snprintf(th_dir, sizeof th_dir, "/tmp/wvhash-test-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(th_dir));
}

void th_teardown(void)
{
  char cmd[128];
  /* Only the files this test wrote live there. */
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", th_dir);
  ck_assert_int_eq(system(cmd), 0);
}
