/* work.h - a unit of work for a device thread, in the manner of libuv's
 * uv__work ({work, done}) and Valkey's bio.c jobs: the item carries its
 * own operations, so the executor (device.c) never knows what it runs.
 *
 *  - run (device thread) does one step with the device (x: the device's
 *    handle, its caps, name and index; see wd_run_ctx): a reduction whole
 *    (or, for a big one, its slices until another owner waits: rq/reduce.c),
 *    one piece of a hash job, one step of a pack's preparation.  It
 *    returns WD_RUN_MORE to be called again (after the device has served
 *    its short lane), WD_RUN_END once w->rc/err say how it ended, or
 *    WD_RUN_PARK to leave the device without ending (whoever parked it
 *    hands it back with wd_device_resume).  A backend error of WAVE_EDEVICE
 *    left in w->rc marks the device faulted: the executor applies that rule,
 *    the item does not.  An item that changed what the device reports
 *    (a prepared pack may change the hash batch) sets w->caps_changed: the
 *    executor reads the caps again after the step.
 *  - abort (device thread, optional) ends the item instead of run when the
 *    device is faulted or stopping; without it, a faulted device ends the
 *    item with WAVE_EDEVFAULT and a stopping one still runs it.
 *  - done (loop thread) receives the ended item through the completion
 *    queue; the device keeps no pointer to it afterwards.
 */
#ifndef WD_WORK_H
#define WD_WORK_H

#include <stdint.h>

#include "core/queue.h"
#include "wave/error.h"
#include "workers/wvdev.h"

struct wd_device;
typedef struct wd_work wd_work;

/* What a run or abort op gets from its device thread.  The thread owns
 * caps (it alone reads them again), so the op reads them without a lock;
 * index is the device's place in the configuration (jobs/packstate.h
 * keys the device x pack state by it). */
typedef struct wd_run_ctx {
  wv_dev *dev;
  const wv_caps *caps;
  const char *name;
  unsigned index;
  int held;          /* the device takes no new work (wd_device_hold): a
                        long item runs only to end or park, not to start
                        a new step of work; it returns WD_RUN_MORE */
} wd_run_ctx;

enum { WD_RUN_MORE = 0, WD_RUN_END = 1, WD_RUN_PARK = 2 };

/* short: bounded by the device's queue_depth, served first, in turns
 * between owners (one step each turn: a short item that returns
 * WD_RUN_MORE takes its owner's next turn); long: bounded
 * by limits.jobs_in_flight, one step at a time, round robin between
 * owners and then between an owner's items; setup: served before long
 * items, in order, without the bound (pack preparation). */
enum { WD_LANE_SHORT = 0, WD_LANE_LONG = 1, WD_LANE_SETUP = 2 };

typedef struct wd_work_ops {
  const char *name;   /* for messages: "reduction", "hash job", ... */
  int lane;           /* WD_LANE_* */
  int (*run)(wd_work *w, const wd_run_ctx *x);
  void (*abort)(wd_work *w, const wd_run_ctx *x);
  void (*done)(wd_work *w);
  /* optional (device thread): has the item's job already begun elsewhere
   * (a hash job's share on another device)?  Then its deadline is past
   * caring: the deadline is on the job's first step. */
  int (*started)(wd_work *w);
} wd_work_ops;

/* Service levels (docs/protocol.md "Priorities and deadlines"), numbered
 * as the wire's Priority (0, what a zeroed item has, is normal); a device
 * serves high, then normal, then low. */
enum { WD_LEVEL_NORMAL = 0, WD_LEVEL_HIGH = 1, WD_LEVEL_LOW = 2,
       WD_LEVEL_N = 3 };

struct wd_work {
  wv_qnode q;                /* the device's queue link (exec/turns.h) */
  wv_qnode doneq;           /* the server's completion queue link */
  const wd_work_ops *ops;
  struct wd_device *dev;    /* set by wd_device_submit */
  int rc;                   /* result: 0 or WAVE_E*, with err */
  wave_error err;
  double seconds;           /* time on the device, all steps */
  double t_submit, t_start; /* CLOCK_MONOTONIC s: submitted, first step
                               began (0: never ran); set by device.c */
  double t_end;             /* and its end handed to the loop (device.c) */
  int caps_changed;         /* set by run: read the device's caps again */
  uint64_t owner;           /* the fairness key (set before submit; 0:
                               the daemon's own items): short-lane owners
                               take turns item by item, long-lane ones
                               step by step, and one owner's long items
                               take turns too */
  int level;                /* WD_LEVEL_* (set before submit) */
  unsigned level_cap;       /* items of its level queued on the device at
                               most (priority.*_max_queued); 0: no cap */
  double deadline;          /* CLOCK_MONOTONIC s by which its first step
                               must begin, else it ends WAVE_EDEADLINE
                               without running; 0: none */
  int movable;              /* short: the daemon picked its device (the
                               request named none), so a hold may move
                               it, queued and not begun, to another
                               device (exec/pick.h wd_pick_move) */
  unsigned needs;           /* movable: WD_NEEDS_* of the device it moves
                               to */
};

/* What a movable item needs of a device's caps. */
enum { WD_NEEDS_64 = 1,     /* dtypes64: a 64-bit dtype */
       WD_NEEDS_ARG = 2,    /* argminmax: argmin or argmax */
       WD_NEEDS_FSUM = 4 }; /* fsum */

#endif
