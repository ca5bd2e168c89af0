/* hashjob.h - hash jobs: the table the loop keeps, and the batch step the
 * device thread runs.
 *
 * A hash job can run for hours, so a HashRequest only creates a job here and
 * is answered at once with its id; JobRequest/CancelRequest look the job up
 * by id.  Split of ownership:
 *  - the loop thread creates, looks up, cancels and eventually drops jobs
 *    (the finished ones are kept for limits.keep_jobs / keep_seconds);
 *  - the device thread runs wd_hjob_step() one batch at a time and publishes
 *    progress (state, done, start time) through atomics, which is all the
 *    loop reads while the job runs;
 *  - the result (accumulator, outputs, error) is written by the device thread
 *    and read by the loop only after the job's wd_work came back through the
 *    completion queue (wd_jobs_ended), which orders the two.
 */
#ifndef WD_HASHJOB_H
#define WD_HASHJOB_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/config.h"
#include "daemon/device.h"
#include "proto/wave.pb-c.h"

typedef struct wd_jobs wd_jobs;
typedef struct wd_hjob wd_hjob;

/* ---- device thread ------------------------------------------------------ */

typedef struct wd_hash_env {
  const wv_backend *backend;
  wv_device *bdev;
  const char *device;   /* name, for messages */
  const char *exchange; /* caps.exchange, copied into the result */
  uint64_t batch;       /* nonces per backend->hash call */
  uint64_t *buf;        /* batch outputs */
  int verify;           /* re-check winners with wv_hash_verify (GPUs) */
  int faulted;          /* in: the device is faulted */
  const wd_pack_state *check; /* in: this job's pack on this device */
  int fault;            /* out: backend returned WAVE_EDEVICE ... */
  char fault_msg[200];  /* ... with this message */
} wd_hash_env;

size_t wd_hjob_pack_index(const wd_work *w);
/* One batch (or the job's end: cancel, fault, self-check failure); returns
 * 1 when the job has ended and w->rc/err say how. */
int wd_hjob_step(wd_work *w, wd_hash_env *env);
/* End the job with w->rc/w->err as they are set (device thread). */
void wd_hjob_abort(wd_work *w);

/* ---- loop thread -------------------------------------------------------- */

typedef struct wd_packs {
  const wv_pack *const *list;
  size_t n;
} wd_packs;

int wd_jobs_new(const wd_limits *lim, wd_jobs **out);
void wd_jobs_free(wd_jobs *t);  /* every job must have ended */

/* Validate hr, pick the device, create and queue the job.  A resubmit of
 * the same (hr->client != 0, req_id) returns the existing job.  0 or a
 * WAVE_E* code with err. */
int wd_jobs_submit(wd_jobs *t, const Wave__V1__HashRequest *hr,
                   uint64_t req_id, wd_device *const *devs, size_t n_devs,
                   const wd_packs *packs, wd_hjob **out, wave_error *err);
wd_hjob *wd_jobs_find(wd_jobs *t, uint64_t id);
/* Ask the job to stop with code (WAVE_ECANCELLED, or WAVE_ESHUTDOWN);
 * returns 1 if it ended right here (it had not started). */
int wd_jobs_cancel(wd_jobs *t, wd_hjob *j, int code);
/* Cancel every job that has not ended (shutdown); ended(arg, j) is called
 * for each job that ended right away. */
void wd_jobs_cancel_all(wd_jobs *t, int code,
                        void (*ended)(void *arg, wd_hjob *j), void *arg);
/* The device posted w (a hash job's work): the job has ended. */
wd_hjob *wd_jobs_ended(wd_jobs *t, wd_work *w);
/* Drop finished jobs beyond keep_jobs / older than keep_seconds. */
void wd_jobs_prune(wd_jobs *t);
size_t wd_jobs_active(const wd_jobs *t);  /* jobs that have not ended */
/* A reload's new limits (the ones a reload may change; see reload.c). */
void wd_jobs_set_limits(wd_jobs *t, const wd_limits *lim);
/* Walk the table in submit order: NULL gives the first job. */
wd_hjob *wd_jobs_next(wd_jobs *t, wd_hjob *j);

uint64_t wd_hjob_id(const wd_hjob *j);
int wd_hjob_is_ended(const wd_hjob *j);
int wd_hjob_state(const wd_hjob *j);  /* WAVE__V1__JOB_STATE__* */
/* Where the server parks JobRequests waiting for this job (opaque). */
void **wd_hjob_waiters(wd_hjob *j);

/* JobInfo of j, as of now.  Pointers inside *ji point into j and into
 * *scratch: pack the message before j changes, then wd_jobinfo_done(). */
typedef struct wd_jobinfo_scratch {
  Wave__V1__HashResult result;
  Wave__V1__Error error;
  Wave__V1__Winner *winners;
  Wave__V1__Winner **winner_ptrs;
  char errname[32];
} wd_jobinfo_scratch;
int wd_hjob_info(const wd_hjob *j, Wave__V1__JobInfo *ji,
                 wd_jobinfo_scratch *scratch);
void wd_jobinfo_done(wd_jobinfo_scratch *scratch);

#endif
