/* conformance.h - the cross-backend conformance harness.
 *
 * conformance.c opens device 0 of every backend in wv_backends[] (minus
 * those filtered out by the environment) and runs job files against them:
 * the reduce jobs live in conformance.c, and other job kinds (hash jobs)
 * can live in their own file, conformance_<kind>.c, which tests/
 * conformance.cmake adds to the program when it exists and which provides
 * one TCase (see conf_hash_tcase below).  conformance_merge.c holds the
 * exact merges of core/ (partials, hash pieces) to whole jobs.
 *
 * Environment:
 *   WAVE_CONFORMANCE_BACKENDS  comma list: run only these backends
 *   WAVE_REQUIRE_BACKENDS      comma list: these must be built in and open,
 *                              otherwise the run fails (default: a backend
 *                              that cannot open is reported and skipped)
 *   WAVE_CONFORMANCE_MAX_LOG2  largest reduce size is 2^N rows (default 20)
 *   WAVE_CONFORMANCE_REF_MAX_LOG2  above 2^N rows (default 26) the expected
 *                              bits come from the CPU device (held to the
 *                              reference below that) rather than from the
 *                              slow single-threaded reference, but for one
 *                              masked pair per op
 *   WAVE_CONFORMANCE_EXCHANGE  hash exchange of the devices (default auto;
 *                              "shuffle" demands that path, GPU machine)
 *   WAVE_CONFORMANCE_MATCH     device name match for backends that choose
 *                              devices by name (opencl: "pocl", "nvidia")
 */
#ifndef WV_CONFORMANCE_H
#define WV_CONFORMANCE_H

#include <check.h>
#include <stdint.h>

#include "workers/worker.h"

#define CONF_MAX_DEVS 16

typedef struct conf_dev {
  const wv_backend *backend;
  wv_device *dev;
  char description[160];  /* from caps() */
  int dtypes64, argminmax; /* caps: runs the 64-bit dtypes, argmin/argmax */
  int fsum;               /* caps: runs fsum (float64: with dtypes64) */
  int moves_input;        /* caps: not reads_host_memory, so its answers
                             say the time they spent copying (transfer_s) */
  unsigned long jobs, mismatches, printed;
} conf_dev;

typedef struct conf_set {
  conf_dev devs[CONF_MAX_DEVS];
  size_t n;
  unsigned failed_required;  /* required backends missing or not opening */
  int may_be_empty;  /* conf_report: no device opened is no failure */
  unsigned skipped;  /* selected backends that cannot open here: a skip */
} conf_set;

/* Open device 0 of every selected backend with a default configuration,
 * printing a line for each backend opened or skipped (and why). */
void conf_open_all(conf_set *set);
void conf_close_all(conf_set *set);

/* Print "conformance: <backend> N jobs, M mismatches" for every device and
 * fail the running test on any mismatch or missing required backend, on no
 * device opened (unless set->may_be_empty, or some selected backend could
 * not open here: then the entry skips), and on a device that ran no job. */
void conf_report(conf_set *set, const char *kind);

/* Record one job's outcome on d; on a mismatch print the job (what) and
 * both sides, for the first 20 mismatches of the device. */
void conf_count(conf_dev *d, int same, const char *what, const char *want,
                const char *got);

/* WAVE_CONFORMANCE_EXCHANGE, or "auto". */
wv_exchange conf_exchange(void);

/* Deterministic data: splitmix64. */
uint64_t conf_rng(uint64_t *state);

/* Largest reduce size as log2 (WAVE_CONFORMANCE_MAX_LOG2). */
unsigned conf_max_log2(void);

/* Provided by conformance_hash.c when it exists (WAVE_CONF_HASH). */
TCase *conf_hash_tcase(void);
/* conformance_merge.c: core/partial and core/hashmerge against whole
 * jobs, pieces answered by the reference and by every device. */
TCase *conf_merge_tcase(void);
/* conformance_wide.c: the 64-bit dtypes and argmin/argmax on every device
 * whose caps run them, and their refusal by the others. */
TCase *conf_wide_tcase(void);
/* conformance_fsum.c: fsum on every device whose caps run it (its bits and
 * its exact partial), and its refusal by the others. */
TCase *conf_fsum_tcase(void);

#endif
