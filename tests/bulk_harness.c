/* bulk_harness.c - see bulk_harness.h. */
#include <check.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "bulk_harness.h"

/* A daemon with regions on (or off), big enough limits, and the devices
 * given (YAML list items). */
void bh_prepare(td_daemon *d, int shm, const char *devices)
{
  td_prepare(d, NULL);
  char text[2048];
  snprintf(text, sizeof text,
           "listen: [\"%s\", \"%s\"]\n"
           "ipc_mode: 0666\n"
           "log_level: debug\n"
           "allow_client_shm: %s\n"
           "limits:\n"
           "  max_request_bytes: 65536\n"
           "  max_job_rows: %u\n"
           "  max_client_regions: 3\n"
           "  max_stream_bytes: 67108864\n"
           "packs:\n"
           "  load: []\n"
           "auth: none\n"
           "devices:\n%s",
           d->ipc, d->tcp, shm ? "true" : "false", BH_ROWS_MAX,
           devices ? devices : "  - {name: cpu0, backend: cpu, threads: 1}\n");
  td_write(d->cfg, text);
  chmod(d->dir, 0755);  /* the nobody test connects too */
}

void bh_start(td_daemon *d, int shm, const char *devices)
{
  bh_prepare(d, shm, devices);
  if (td_start(d) != 0) {
    fprintf(stderr, "wavedd did not start:\n%s\n", td_stderr(d));
    ck_abort_msg("wavedd did not start");
  }
}

wave_client *bh_client(const char *url)
{
  wave_client *c;
  wave_error e;
  ck_assert_int_eq(wave_client_open(&c, url, &e), 0);
  wave_client_set_timeout(c, 60000);
  return c;
}

void bh_fill(uint32_t *rows, size_t n, uint32_t seed, int floats)
{
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    if (floats) {
      float f = (float)((int64_t)(x % 2000001) - 1000000) / 1024.0f;
      memcpy(&rows[i], &f, 4);
    } else {
      rows[i] = (uint32_t)(x >> 20);
    }
  }
}

/* Status over raw nng: the regions listed. */
size_t bh_regions(nng_socket s, uint64_t *bytes)
{
  Wave__V1__Response *r = td_status(s, 5);
  size_t n = r->status->n_regions;
  if (bytes)
    *bytes = r->status->region_bytes;
  wave__v1__response__free_unpacked(r, NULL);
  return n;
}

/* Status over raw nng: pinned_devices of the only region. */
unsigned bh_pinned(nng_socket s)
{
  Wave__V1__Response *r = td_status(s, 5);
  ck_assert_uint_eq(r->status->n_regions, 1);
  unsigned n = r->status->regions[0]->pinned_devices;
  wave__v1__response__free_unpacked(r, NULL);
  return n;
}
