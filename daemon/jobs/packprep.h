/* packprep.h - preparing a pack on a device (its dataset) and running its
 * known answers, as a work item of the device's setup lane.
 *
 * Preparation runs in steps (wv_dev_prepare_step; the CPU backend builds
 * 16 MiB of dataset a step), and the device serves its reductions between
 * steps, so a reduction sent while the main pack's 1 GiB dataset is being
 * built is answered at once.  When the last step is done the self-check
 * runs, the device's caps are read again (a backend may measure its batch
 * size on the prepared pack), and the item comes back to the loop, which
 * counts down to readiness (StatusReply.ready, READY=1) and starts the
 * hash jobs that waited for the pack on this device (hashjob.h,
 * wd_jobs_pack_ended).  While it is queued or runs, the device's state of
 * the pack (jobs/packstate.h) says so (wd_pack_state.queued) with the steps done and the
 * steps in all, which a waiting job's JobInfo reports.
 */
#ifndef WD_PACKPREP_H
#define WD_PACKPREP_H

#include <stddef.h>

#include "daemon/exec/device.h"
#include "daemon/exec/work.h"
#include "daemon/jobs/packstate.h"
#include "workers/hash/hash.h"

typedef struct wd_prep {
  wd_work work;              /* first member */
  const wv_pack *pack;
  size_t index;              /* the pack's slot in the states */
  wd_packstate *states;      /* set by wd_prep_submit */
  unsigned dev_index;
  int prepared;
  unsigned steps;            /* preparation steps done (status detail) */
  unsigned steps_total;      /* the backend's count; 0: unknown */
  /* loop thread, once the item came back (p->work.rc: how it ended) */
  void (*ended)(void *arg, struct wd_prep *p);
  void *arg;
} wd_prep;

/* Queue p (filled by the caller: pack, index, ended, arg) on d; its
 * progress and result go to ps. */
int wd_prep_submit(wd_packstate *ps, wd_device *d, wd_prep *p,
                   wave_error *err);

#endif
