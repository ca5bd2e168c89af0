/* bulk_harness.h - a real wavedd with regions and streams on, driven
 * through libwaveclient, for the bulk-input suites (test_bulk.c, test_pin.c,
 * test_filered.c).  Built on daemon_harness.h. */
#ifndef TB_BULK_HARNESS_H
#define TB_BULK_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include <nng/nng.h>

#include "daemon_harness.h"
#include "wave/client.h"

#define BH_ROWS_MAX (1u << 22)  /* the daemon's max_job_rows here */

/* A daemon with regions on (or off), limits.max_job_rows BH_ROWS_MAX and
 * small region/stream limits, and the devices given (YAML list items;
 * NULL: one CPU device); bh_start also starts it (the test fails if it
 * does not start). */
void bh_prepare(td_daemon *d, int shm, const char *devices);
void bh_start(td_daemon *d, int shm, const char *devices);
/* A client of url with a 60 s timeout (the test fails if it cannot). */
wave_client *bh_client(const char *url);
/* n pseudo-random rows from seed: integers, or finite floats. */
void bh_fill(uint32_t *rows, size_t n, uint32_t seed, int floats);
/* Status over raw nng: the regions listed (and their bytes). */
size_t bh_regions(nng_socket s, uint64_t *bytes);
/* Status over raw nng: pinned_devices of the only region. */
unsigned bh_pinned(nng_socket s);

#endif
