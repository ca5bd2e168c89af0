/* vkcaps.c - open the Vulkan backend's device N and print what caps()
 * says; with --expect-wave-width W, exit 1 unless the sub-group size is W.
 *
 * tests/vulkan.cmake runs it under LP_NATIVE_VECTOR_WIDTH=128/256/512 to
 * prove that lavapipe really ran the conformance suite at sub-group sizes
 * 4, 8 and 16 (the variable is read by the driver, so a typo or an ignored
 * setting would otherwise go unnoticed).
 *
 *   vkcaps [--index N] [--exchange auto|shuffle|local] [--expect-wave-width W]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workers/vulkan/vk.h"

int main(int argc, char **argv)
{
  wv_device_config cfg = {.name = "vk", .backend = "vulkan", .index = 0,
                          .exchange = WV_EXCHANGE_AUTO};
  long expect = -1;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--index") == 0 && i + 1 < argc)
      cfg.index = atoi(argv[++i]);
    else if (strcmp(argv[i], "--exchange") == 0 && i + 1 < argc &&
             wv_exchange_parse(argv[i + 1], &cfg.exchange) == 0)
      i++;
    else if (strcmp(argv[i], "--expect-wave-width") == 0 && i + 1 < argc)
      expect = strtol(argv[++i], NULL, 10);
    else {
      fprintf(stderr, "usage: %s [--index N] [--exchange auto|shuffle|local] "
              "[--expect-wave-width W]\n", argv[0]);
      return 2;
    }
  }
  wv_device *d;
  wave_error e = {0};
  int rc = wv_vulkan_backend.open(&cfg, &d, &e);
  if (rc != 0) {
    fprintf(stderr, "vkcaps: open: %s (%s)\n", e.message, wave_errname(rc));
    return 1;
  }
  wv_caps c;
  wv_vulkan_backend.caps(d, &c);
  printf("description: %s\n", c.description);
  printf("wave_width: %u\n", c.wave_width);
  printf("native_wave_reduce: %d\n", c.native_wave_reduce);
  printf("float_sum_exchange: %s\n", d->sum_shuffle ? "shuffle" : "local");
  printf("exchange: %s (%s)\n", wv_exchange_name(c.exchange_mode),
         c.exchange_reason);
  printf("hash_batch: %llu\n", (unsigned long long)c.hash_batch);
  printf("window_rows: %u\n", d->window_rows);
  printf("dtypes64: %d, argminmax: %d%s%s\n", c.dtypes64, c.argminmax,
         d->wide_why[0] ? " -- " : "", d->wide_why);
  printf("wide paths: 64-bit sub-group ops %d, float64 sum %s%s\n", d->sg64,
         d->sum64_shuffle ? "shuffle" : "local",
         d->denorm64 ? ", DenormPreserve" : "");
  wv_vulkan_backend.close(d);
  if (expect >= 0 && (long)c.wave_width != expect) {
    fprintf(stderr, "vkcaps: wave width %u, expected %ld\n", c.wave_width,
            expect);
    return 1;
  }
  return 0;
}
