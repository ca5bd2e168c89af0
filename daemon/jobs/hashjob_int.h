/* hashjob_int.h - the insides of a hash job, shared by hashjob.c (the
 * loop's side: table, submit, cancel, end, views) and hashrun.c (the device
 * threads' side: pieces, the merge).  Nobody else includes it.
 *
 * A job is cut into pieces of whole segments (the first and last may be
 * partial, as the job's own edges are); each device's share (an hj_part, a
 * long work item on that device) takes pieces from the job until none is
 * left.  A piece a faulting device could not finish goes back to the job
 * (`returned`) and another share takes it.  A share that finds no piece
 * while others are still in flight parks (WD_RUN_PARK) and is resumed when
 * a piece comes back or the last one is done, so nothing is left behind and
 * no thread waits.  Pieces complete out of order: they merge at once
 * (core/hashmerge.h), but the job fingerprint folds over the completed
 * prefix (`m.folded`), so later pieces wait in `held`.
 */
#ifndef WD_HASHJOB_INT_H
#define WD_HASHJOB_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "daemon/jobs/hashjob.h"
#include "daemon/jobs/owner.h"
#include "daemon/net/principal.h"
#include "core/hashmerge.h"
#include "core/queue.h"

/* HP_WAITING: not on its device yet; it waits for the pack there (loop
 * thread only: hashjob.h "Packs being prepared"). */
enum { HP_QUEUED = 1, HP_ACTIVE, HP_PARKED, HP_ENDED, HP_WAITING };

typedef struct hj_piece {
  wv_qnode q;                /* on returned or held, or none */
  uint64_t off, len;         /* nonces [nonce + off, nonce + off + len) */
  size_t n_seg;
  uint64_t *seg;             /* its segment fingerprints */
} hj_piece;

typedef struct hj_part {
  wd_work work;              /* first member */
  wd_hjob *job;
  wd_device *dev;
  int state;                 /* HP_*, under job->mu */
  /* device thread while it runs, the loop after it ended */
  int checked, reverify;
  uint64_t hashes;
  int faulted;
  uint64_t *scratch;
  uint64_t scratch_n;
  wv_hash_winner *win;       /* a piece's winners: max_winners slots */
} hj_part;

struct wd_hjob {
  wd_jobs *table;
  uint64_t id, client, req_id;
  char principal[64];        /* the submitter (daemon/net/principal.h) */
  uint64_t owner;            /* its fairness key (wd_work.owner) */
  int level;                 /* WD_LEVEL_* */
  unsigned deadline_ms;      /* 0: none */
  int has_key;               /* an anonymous submitter's job key */
  uint8_t key[WD_JOB_KEY_BYTES];
  uint32_t pipe;             /* its connection ... */
  int detach;                /* ... unless detached */
  const wv_pack *pack;
  size_t pack_index;
  wd_packstate *packstate;   /* its table's (jobs/packstate.h) */
  uint64_t nonce, count, target;
  uint32_t max_winners;
  int want_outputs, want_segments;
  unsigned seg_log2;
  uint64_t seg_count;
  hj_part *parts;
  size_t n_parts;
  const char **dev_names;    /* n_parts */
  wd_share_view *shares;     /* n_parts, filled at the end */
  size_t live;               /* loop: shares not ended */
  size_t waiting;            /* loop: of those, HP_WAITING */

  pthread_mutex_t mu;        /* everything down to `outputs` */
  uint64_t cursor;           /* offset of the next new piece */
  wv_qnode returned;         /* hj_piece.q: pieces put back by a faulting
                                device, the last first */
  unsigned in_flight;        /* pieces being hashed */
  int abort_rc;              /* a job-level failure (mismatch, no memory) */
  wave_error abort_err;
  wv_qnode held;             /* hj_piece.q: done after a gap, by offset */
  /* the merged pieces (core/hashmerge.h): winners and tmp max_winners
   * slots each, segments seg_count when want_segments; the fingerprint
   * over the first m.folded nonces */
  wv_hash_merge m;
  char exchange[48];
  uint64_t *outputs;         /* want_outputs: count */

  _Atomic int state;         /* JobState numbers */
  _Atomic int cancel;        /* 0, or the code to end with */
  _Atomic uint64_t done;
  _Atomic uint64_t t_start_ns;
  uint64_t t_made_ns;        /* submitted (wd_hj_now_ns) */

  /* loop only */
  int ended, rc;
  wave_error err;
  int part_rc;               /* a share's error, if the job cannot finish */
  wave_error part_err;
  double seconds;
  uint64_t ended_ns;
  uint64_t kept;             /* ended: bytes its result holds */
  int outputs_sent;          /* the outputs went out and were dropped */
  wv_qnode waiters;          /* parked polls (rq/park.c's wd_waiter.q),
                                opaque here */
  wv_qnode link;             /* wd_jobs.all, in submit order */
};

#define HJ_PIECE(n) WV_Q_ENTRY(n, hj_piece, q)

uint64_t wd_hj_now_ns(void);
/* hashrun.c: the share's work item operations. */
extern const wd_work_ops wd_hj_part_ops;
/* hashrun.c, under j->mu: resume every parked share. */
void wd_hj_wake_parked(wd_hjob *j);
void wd_hj_piece_free(hj_piece *p);
/* hashjob.c, loop thread: a share came back (or was taken off its queue). */
void wd_hj_part_ended(hj_part *p);

#endif
