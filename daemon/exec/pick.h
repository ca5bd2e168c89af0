/* pick.h - which device(s) run a request: the one place that decides.
 *
 * Reductions: the named device, else the least-loaded device that is not
 * faulted (config order breaks ties), of those whose caps run the job
 * (a 64-bit dtype: dtypes64; argmin/argmax: argminmax; fsum: fsum) when
 * there are any.  Hash jobs: the named device
 * (HashRequest.device), the listed ones (HashRequest.devices; ["all"] is
 * every device with hash jobs that can run the pack), or else the device
 * with the fewest hash jobs in flight (one with the pack ready first).  A
 * device still preparing the pack is picked like a ready one: the job
 * waits there for the pack (hashjob.h).  A named device must exist, run hash
 * jobs, not be faulted, and not have failed the pack's self-check.  Of
 * several devices that are one physical GPU (the same caps UUID, e.g. a
 * CUDA and a Vulkan device of one card) a job keeps one: the fastest on
 * the pack so far.
 */
#ifndef WD_PICK_H
#define WD_PICK_H

#include <stddef.h>

#include "daemon/exec/device.h"

enum { WD_PICK_REDUCE = 1, WD_PICK_HASH = 2 };

/* How the hash job's pack stands on one device: the caller fills these
 * from jobs/packstate.h, so that exec/ knows no pack. */
typedef struct wd_pick_pack {
  int failed;                 /* it failed its self-check there */
  int ready;                  /* prepared and checked there */
  double hash_rate;           /* hashes/s measured there; 0: none yet */
  const char *detail;         /* failed: why */
} wd_pick_pack;

typedef struct wd_pick_req {
  int kind;                   /* WD_PICK_* */
  const char *device;         /* one named device, or NULL / "" */
  char *const *devices;       /* hash: several, or {"all"} */
  size_t n_devices;
  const wd_pick_pack *packs;  /* hash: by wd_device_index */
  const char *pack_name;      /* for messages */
  int needs64, needs_arg;     /* reduce: a 64-bit dtype; argmin/argmax */
  int needs_fsum;             /* reduce: fsum (caps.fsum) */
} wd_pick_req;

/* Fill out[] (room for n_devs) with the chosen devices, *n_out of them
 * (>= 1), in config order; 0 or a WAVE_E* code with err. */
int wd_pick(wd_device *const *devs, size_t n_devs, const wd_pick_req *rq,
            wd_device **out, size_t *n_out, wave_error *err);

/* A held device's queued reductions that the daemon picked it for and
 * that have not begun (wd_device_shed) move to the least loaded other
 * device that is not held, not faulted and whose caps run them, in
 * turn order, keeping their level, deadline and owner; one that no
 * other device takes (none can, or it is full) goes back and waits.
 * Any thread but a device's (the health thread, at each judgement of a
 * held device); no backend call. */
void wd_pick_move(wd_device *const *devs, size_t n_devs, wd_device *from);

#endif
