/* stats.h - wavedd's counters: what the metrics endpoint (metrics.c)
 * exposes and what the per-job log line says.
 *
 * One process-wide registry, like a Prometheus client's default registry:
 * the device and job code that feeds it is spread over several files and
 * threads, and threading a handle through all of them would widen every
 * interface for the sake of counters.  The registry is made once by the loop
 * (wd_stats_init, before any device thread starts) and freed after the last
 * one has joined (wd_stats_fini); in between its shape never changes, so
 * the counters themselves are plain atomics and need no lock.
 *
 * Who writes what:
 *  - device threads: wd_stats_hashed() after each hash batch;
 *  - the loop: wd_stats_job() for each finished job (and it logs the job's
 *    one info line; its phase histograms are the loop's alone),
 *    wd_stats_request() for each request as its reply leaves (net/req.c;
 *    the stage histogram is the loop's alone too),
 *    wd_stats_request_error(), wd_stats_sample() once a second (server.c's
 *    tick: the ring the hash-rate windows of the metrics page and of
 *    status are computed from, with or without a metrics listener).
 */
#ifndef WD_STATS_H
#define WD_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "wave/error.h"

enum { WD_KIND_REDUCE = 0, WD_KIND_HASH = 1, WD_KIND_N };
enum { WD_OUT_OK = 0, WD_OUT_FAILED = 1, WD_OUT_CANCELLED = 2, WD_OUT_N };
/* A job's phases: queued (submitted to its first step), moving its input
 * to the device (the backend's copies, wv_reduce_out.transfer_s: a part
 * of the steps, which may overlap their kernels), on the device (the
 * steps' time, the transfer included), and the whole (submitted to ended
 * on the loop).  Only reductions on a device that moves its input (caps
 * without reads_host_memory) have a transfer: a CPU device's jobs and
 * every hash job observe none. */
enum { WD_PH_QUEUE = 0, WD_PH_TRANSFER = 1, WD_PH_COMPUTE = 2,
       WD_PH_TOTAL = 3, WD_PH_N };
/* A request's stages, from nng handing it over to its reply leaving
 * (net/req.h's stamps): waiting for a decode thread, decoding, waiting for
 * the loop, served on the loop (its job included), and the whole. */
enum { WD_RS_DECODE_WAIT = 0, WD_RS_DECODE = 1, WD_RS_LOOP_WAIT = 2,
       WD_RS_SERVE = 3, WD_RS_TOTAL = 4, WD_RS_N };
/* Histogram bucket bounds, seconds: 10 us to 4 h. */
#define WD_STATS_BOUNDS {1e-5, 5e-5, 1e-4, 5e-4, 1e-3, 5e-3, 0.01, 0.05, \
                         0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600, 14400}
#define WD_STATS_NB 19

/* Hash-rate windows, seconds. */
#define WD_STATS_WINDOWS {10, 60, 900}
#define WD_STATS_NWIN 3
/* Error codes counted: every WAVE_E* code, and a last slot for others. */
#define WD_STATS_NCODES ((size_t)WAVE_ERR_COUNT_ + 1)

/* Make the registry for these device names (copied).  0 or WAVE_ENOMEM. */
int wd_stats_init(const char *const *devices, size_t n);
void wd_stats_fini(void);

/* Any thread: n nonces hashed on device (unknown names are ignored). */
void wd_stats_hashed(const char *device, uint64_t n);
/* Loop: a job ended; rc is 0 or its WAVE_E* code; ph[] its phases in
 * seconds (a negative one is not observed: a job that never ran has no
 * queue, transfer or compute time, a job that moves no input no
 * transfer).  Logs one info line:
 * "job <kind> <id> on <device>: <outcome> in <s> s" (s: compute). */
void wd_stats_job(int kind, uint64_t id, const char *device,
                  const double ph[WD_PH_N], int rc, uint64_t rows,
                  uint64_t bytes);
/* Loop: a request answered with an error; refused: before it reached a
 * device (a job's failure otherwise). */
void wd_stats_request_error(int code, int refused);
/* Loop: a request's reply leaves; s[] its stages in seconds (a negative
 * one is not observed). */
void wd_stats_request(const double s[WD_RS_N]);
/* Loop: a reload was tried. */
void wd_stats_reload(int ok);
/* Loop, once a second: record the hash counters for the rate windows. */
void wd_stats_sample(void);

/* Reading (the loop, for metrics.c). */
typedef struct wd_stats_dev {
  const char *name;
  uint64_t jobs[WD_KIND_N][WD_OUT_N];
  uint64_t errors[WD_STATS_NCODES]; /* job failures by code */
  uint64_t rows, bytes, hashes;
  double rate[WD_STATS_NWIN]; /* hashes per second over each window */
  /* per kind and phase: observations at or below each bound, cumulative
   * (the last: all of them), and their sum */
  uint64_t hist[WD_KIND_N][WD_PH_N][WD_STATS_NB + 1];
  double hist_sum[WD_KIND_N][WD_PH_N];
} wd_stats_dev;
size_t wd_stats_count(void);
/* The loop: device's nonces hashed so far and their rate over the first
 * (shortest) window; -1 for a name the registry does not hold. */
int wd_stats_hash_rate(const char *device, uint64_t *hashes, double *rate);
/* Device i, as of now. */
void wd_stats_get(size_t i, wd_stats_dev *out);
void wd_stats_request_errors(uint64_t out[WD_STATS_NCODES]);
void wd_stats_refusals(uint64_t out[WD_STATS_NCODES]);
void wd_stats_reloads(uint64_t *ok, uint64_t *failed);
/* The request stage histogram, cumulative as wd_stats_dev.hist. */
void wd_stats_requests(uint64_t hist[WD_RS_N][WD_STATS_NB + 1],
                       double sum[WD_RS_N]);
/* decode_wait, decode, loop_wait, serve, total */
const char *wd_stats_stage_name(int stage);
const char *wd_stats_kind_name(int kind);
const char *wd_stats_outcome_name(int outcome);
/* queue, transfer, compute, total */
const char *wd_stats_phase_name(int phase);

#endif
