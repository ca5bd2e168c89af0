/* hashjob.h - hash jobs: the table the loop keeps, and what it tells the
 * reply builder.
 *
 * A hash job can run for hours, so a HashRequest only creates a job here and
 * is answered at once with its id; JobRequest/CancelRequest look the job up
 * by id.  A job runs on one device or several: it is cut into
 * segment-aligned pieces that each of its devices pulls from the job's
 * queue (daemon/jobs/hashrun.c), and the pieces' results merge exactly.
 * Ownership:
 *  - the loop thread creates, looks up, cancels and eventually drops jobs
 *    (the finished ones are kept for limits.keep_jobs / keep_seconds);
 *  - device threads run the pieces and merge them under the job's mutex;
 *    progress (state, done, start time) is published through atomics;
 *  - the job has ended when every device's share of it came back through
 *    the completion queue; only then does the loop read the result.
 * Job ids are 64 random bits from getrandom(2) (never 0, never two alike
 * in the table): nobody finds a job by guessing.  A job belongs to the
 * principal that submitted it (daemon/net/principal.h); lookups for anyone else
 * answer as for an unknown id.  A job is tied to its connection (the nng
 * pipe) unless submitted detached: when the connection closes, the job is
 * cancelled.  Per principal, limits.client_jobs jobs may be queued or
 * running at once.  Ended jobs' results (outputs and segment lists) hold
 * at most limits.keep_result_bytes: the oldest ended jobs are forgotten
 * first, and a DONE job's outputs are dropped once a reply carried them.
 *
 * Packs being prepared.  A share whose device has not yet prepared the
 * job's pack (start-up still building it, or packs.prepare: first-use and
 * no job has used it) is not queued on the device: it waits on the loop
 * (HP_WAITING) and asks for the preparation if none is queued (the
 * prepare callback: the server queues a wd_prep).  When a preparation
 * comes back (wd_jobs_pack_ended) the shares waiting for it are queued, or,
 * if the pack failed its check there, end with SELFCHECK.  While every
 * live share of a job waits, the job is PREPARING; a job on several
 * devices starts on those that are ready, the others join when theirs is,
 * and a share still waiting when the job's nonces are all done just ends.
 * Nothing here blocks: the waiting is a list walk when a preparation ends.
 */
#ifndef WD_HASHJOB_H
#define WD_HASHJOB_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/config.h"
#include "daemon/exec/device.h"
#include "daemon/jobs/packstate.h"
#include "core/queue.h"
#include "workers/hash/hash.h"

/* JobState's numbers (proto/wave.proto). */
enum { WD_JOB_QUEUED = 1, WD_JOB_RUNNING, WD_JOB_DONE, WD_JOB_FAILED,
       WD_JOB_CANCELLED, WD_JOB_PREPARING };

/* Segments returned per JobRequest at most (a page of 512 KiB). */
#define WD_SEGMENT_PAGE (1u << 16)

typedef struct wd_jobs wd_jobs;
typedef struct wd_hjob wd_hjob;

/* The packs served.  slot[k] is list[k]'s pack-state index on the devices
 * (jobs/packstate.h): a reload gives a new or changed pack a new slot
 * and an unchanged one keeps its own.  slot NULL: slot k is k. */
typedef struct wd_packs {
  const wv_pack *const *list;
  size_t n;
  const size_t *slot;
} wd_packs;

static inline size_t wd_packs_slot(const wd_packs *p, size_t k)
{
  return p->slot != NULL ? p->slot[k] : k;
}

/* A validated submit, in plain C (the dispatcher fills it from the wire). */
typedef struct wd_hash_submit {
  const char *pack;
  uint64_t nonce, count, target;
  uint32_t max_winners;
  int want_outputs, want_segments;
  unsigned segment_log2;      /* 0: WV_SEG_LOG2_DEFAULT */
  const char *device;
  char *const *devices;
  size_t n_devices;
  uint64_t client, req_id;
  const char *principal;      /* the submitter (daemon/net/principal.h) */
  uint32_t pipe;              /* its connection */
  int detach;                 /* outlives the connection */
  const wd_work *level;       /* its level, cap and deadline (for the
                                 first piece: wd_work_level) */
  unsigned deadline_ms;       /* what JobInfo says of it (0: none) */
} wd_hash_submit;

/* ended(arg, j): a job ended on the device side (loop thread). */
int wd_jobs_new(const wd_limits *lim, uint64_t instance,
                void (*ended)(void *arg, wd_hjob *j), void *arg,
                wd_jobs **out);
void wd_jobs_free(wd_jobs *t);  /* every job must have ended */
uint64_t wd_jobs_instance(const wd_jobs *t);

/* Validate, pick the devices, create and queue the job.  A resubmit of the
 * same (client != 0, req_id) returns the existing job. */
int wd_jobs_submit(wd_jobs *t, const wd_hash_submit *hs,
                   wd_device *const *devs, size_t n_devs,
                   const wd_packs *packs, wd_hjob **out, wave_error *err);
/* The job with this id that `who` may see (daemon/net/principal.h), or that
 * the key (key_len bytes, may be 0) opens, else NULL. */
wd_hjob *wd_jobs_find(wd_jobs *t, uint64_t id, const char *who,
                      const uint8_t *key, size_t key_len);
/* Cancel the attached jobs of a closed connection; how many. */
size_t wd_jobs_drop_pipe(wd_jobs *t, uint32_t pipe);
/* Ask the job to stop with code (WAVE_ECANCELLED, or WAVE_ESHUTDOWN); the
 * ended callback runs (maybe right here) once it has stopped. */
void wd_jobs_cancel(wd_jobs *t, wd_hjob *j, int code);
void wd_jobs_cancel_all(wd_jobs *t, int code);
void wd_jobs_prune(wd_jobs *t);
size_t wd_jobs_active(const wd_jobs *t);  /* jobs that have not ended */
/* A reload's new limits (the ones a reload may change; see reload.c). */
void wd_jobs_set_limits(wd_jobs *t, const wd_limits *lim);
/* prepare(arg, d, pack, slot, err): queue pack's preparation on d (loop
 * thread; a job found it pending with none queued).  0, or the error the
 * waiting share ends with. */
typedef int (*wd_prepare_fn)(void *arg, wd_device *d, const wv_pack *pack,
                             size_t slot, wave_error *err);
void wd_jobs_set_prepare(wd_jobs *t, wd_prepare_fn prepare, void *arg);
/* The device x pack states the table reads and its shares write (set
 * once the devices have started, before the first submit). */
void wd_jobs_set_packstate(wd_jobs *t, wd_packstate *ps);
/* A preparation of pack slot `slot` on d came back (its check state says
 * how): queue the shares that waited for it, or end them with SELFCHECK. */
void wd_jobs_pack_ended(wd_jobs *t, wd_device *d, size_t slot);
/* Walk the table in submit order: NULL gives the first job. */
wd_hjob *wd_jobs_next(wd_jobs *t, wd_hjob *j);

uint64_t wd_hjob_id(const wd_hjob *j);
/* May `who` see j, or does the key (key_len bytes, may be 0) open it? */
int wd_hjob_may(const wd_hjob *j, const char *who, const uint8_t *key,
                size_t key_len);
/* j's job key (WD_JOB_KEY_BYTES), or NULL when its submitter has none. */
const uint8_t *wd_hjob_key(const wd_hjob *j);
/* A reply carried this DONE job's outputs: they are dropped (later views
 * say outputs_delivered).  Loop thread. */
void wd_hjob_outputs_sent(wd_hjob *j);
int wd_hjob_is_ended(const wd_hjob *j);
int wd_hjob_state(const wd_hjob *j);  /* WAVE_JOB_* numbers (JobState) */
/* Where the loop parks JobRequests waiting for this job: a list of
 * rq/park.h's wd_waiter.q (opaque here); the job is kept while it is not
 * empty. */
wv_qnode *wd_hjob_waiters(wd_hjob *j);

/* What a JobInfo says, in plain C; pointers point into the job (valid until
 * the loop next changes the table). */
typedef struct wd_share_view {
  const char *device;
  uint64_t hashes;
  double seconds;
  int faulted;
} wd_share_view;

typedef struct wd_job_view {
  uint64_t id, instance;
  int state;                 /* JobState numbers */
  uint64_t done, total;
  double seconds;            /* from the first step on */
  double queued;             /* submitted to the first step (-1: none) */
  const char *device;        /* the first device */
  const char *const *devices;
  size_t n_devices;
  int rc;                    /* FAILED/CANCELLED: the error */
  const char *message;
  /* DONE */
  uint64_t job_fingerprint;
  unsigned segment_log2;
  uint64_t segment_count;
  const uint64_t *segments;  /* the page asked for (want_segments) */
  size_t n_segments;
  uint64_t segment_offset;
  const wv_hash_winner *winners;
  size_t n_winners;
  uint64_t winner_count, best_nonce, best_output, hashes;
  const char *exchange;
  const uint64_t *outputs;
  size_t n_outputs;
  int outputs_delivered;     /* want_outputs, sent in an earlier reply */
  int level;                 /* WD_LEVEL_*, and the deadline it was given */
  unsigned deadline_ms;
  const wd_share_view *shares;
  size_t n_shares;
  /* the submit reply only (rq/hash.c sets it): JobInfo.key */
  const uint8_t *key;
  size_t key_len;
  /* PREPARING: the pack it waits for, on which device, and how far that
   * device's preparation got (steps_total 0: unknown) */
  const char *wait_pack, *wait_device;
  unsigned prepare_steps, prepare_steps_total;
  const char *owner;         /* the submitter's principal */
} wd_job_view;

/* The view of j now; for a DONE job with segments, the page
 * [seg_offset, seg_offset + min(seg_limit or the bound, what is left)). */
void wd_hjob_view(const wd_hjob *j, uint64_t seg_offset, uint32_t seg_limit,
                  wd_job_view *v);

#endif
