/* wide_harness.h - one reduction job sent to a real wavedd by each way in
 * (tests/test_wide_ways.c, issue 23): a plain message over tcp (rows by
 * value, raw nng), a framed message and a stream through libwaveclient
 * over ipc and tcp, a memfd region, a copy region, a file region, and a
 * fleet of two daemons; each way's answer in one wave_reduce_result, so a
 * test holds every way to the same bits, count and index, or the same
 * refusal.  Built on daemon_harness.h and bulk_harness.h.
 */
#ifndef WW_WIDE_HARNESS_H
#define WW_WIDE_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include <nng/nng.h>

#include "daemon_harness.h"
#include "wave/client.h"
#include "wave/fleet.h"

typedef enum ww_way {
  WW_MSG,         /* ReduceRequest.input by value, raw nng over tcp */
  WW_FRAMED_IPC,  /* wave_reduce: one framed message */
  WW_FRAMED_TCP,
  WW_STREAM_IPC,  /* wave_reduce with WAVE_CLIENT_STREAM=1 */
  WW_STREAM_TCP,
  WW_MEMFD,       /* wave_reduce_region over a registered memfd */
  WW_COPY,        /* ... a copy region (the mask in a memfd) */
  WW_FILE,        /* ... a file region (the mask in another) */
  WW_FLEET,       /* wave_fleet_reduce over two daemons, 65536-row pieces */
  WW_N
} ww_way;

extern const char *const ww_way_names[WW_N];

#define WW_CHUNKS 8  /* at most, input and mask each */

/* A job in the client's terms: flat input rows (4 or 8 bytes each) and a
 * flat uint32 mask, cut into chunks of the given row counts. */
typedef struct ww_job {
  wave_dtype dt;
  wave_op op;
  const void *in;
  const uint64_t *in_rows;
  const size_t *in_bytes;   /* NULL: rows * the row size; else each
                               chunk's bytes (to send a broken length) */
  size_t n_in;
  const uint32_t *mask;
  const uint64_t *mask_rows;
  size_t n_mask;
  int has_mask;
  const char *device;   /* NULL: the daemon picks */
} ww_job;

typedef struct ww_ctx {
  wave_client *ipc, *tcp;   /* of daemon a */
  nng_socket raw;           /* tcp, of daemon a */
  wave_fleet *fleet;        /* a's ipc and fleet_url */
  char dir[200];            /* a's folder: the region files */
  uint64_t next_id;
} ww_ctx;

/* A daemon for these tests: ipc and tcp, regions on, max_job_rows 2^22,
 * limits.max_request_bytes as given (a stream's pieces are half of it),
 * CPU devices cpu0 and cpu1 that run jobs above 65536 rows in slices
 * (their reduce_slice_rows), and with fake a device fake0 of the fake backend
 * (wavedd-test) before them, which has no 64-bit dtypes, argmin/argmax
 * or fsum (lacks=fsum; a job naming no device must go past it).
 * The test fails if it does not start. */
void ww_start(td_daemon *d, int fake, unsigned max_request_bytes);
/* Clients of a; the fleet is a's ipc and fleet_url (may be a's tcp). */
void ww_open(ww_ctx *x, const td_daemon *a, const char *fleet_url);
void ww_close(ww_ctx *x);
/* j by way w: 0 and *r, or the error code with its message in *e. */
int ww_run(ww_ctx *x, ww_way w, const ww_job *j, wave_reduce_result *r,
           wave_error *e);

#endif
