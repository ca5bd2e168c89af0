/* park.h - parked polls: a JobRequest with wait_ms waits on its job, and is
 * answered when the job ends, when its wait runs out, or when the daemon
 * stops, whichever comes first (docs/protocol.md "Waiting for a job").
 *
 * Each job keeps a list of its waiters (jobs/hashjob.h wd_hjob_waiters); a
 * waiter is embedded in its request context and says how to answer it, so
 * this file knows nothing of JobInfo (rq/hash.c's).
 */
#ifndef WD_RQ_PARK_H
#define WD_RQ_PARK_H

#include <stdint.h>

#include "daemon/jobs/hashjob.h"
#include "core/queue.h"

typedef struct wd_req wd_req;
typedef struct wd_server wd_server;

/* Answer c's poll of j now (loop thread); the page is the poll's. */
typedef void wd_park_answer_fn(wd_req *c, wd_hjob *j, uint64_t seg_offset,
                               uint32_t seg_limit);

struct wd_waiter {
  wv_qnode q;               /* the job's list (wd_hjob_waiters) */
  wd_hjob *job;            /* parked on this job; NULL: not parked */
  uint64_t seg_offset;     /* the parked poll's segment page */
  uint32_t seg_limit;
  wd_park_answer_fn *answer;
};
typedef struct wd_waiter wd_waiter;

/* Loop: park c's poll of j for wait_ms (> 0), answered later by answer.
 * 0 when parked; -1 when it may not park (the job ended, the daemon stops,
 * limits.max_parked or max_peer_parked is reached, no fresh context): the
 * caller answers at once. */
int wd_park(wd_req *c, wd_hjob *j, unsigned wait_ms, uint64_t seg_offset,
            uint32_t seg_limit, wd_park_answer_fn *answer);
/* Loop: take c off its job's list and stop its timer (it is not answered). */
void wd_unpark(wd_req *c);
/* The jobs table's end callback (arg: the server): answer j's waiters. */
void wd_park_job_ended(void *arg, wd_hjob *j);
/* Loop, on stop: answer every parked poll. */
void wd_park_answer_all(wd_server *s);

#endif
