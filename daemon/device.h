/* device.h - one thread per configured device (the only thread that calls
 * the device's backend).
 *
 * The thread opens the device, then serves two FIFO queues: reductions
 * (short; bounded by queue_depth) and hash jobs (long; bounded by
 * limits.jobs_in_flight).  Each loaded pack's known-answer self-check is the
 * thread's first hash work; reductions that arrive meanwhile go first.
 * Hash jobs run one batch at a time, and the reduction queue is emptied
 * between batches, so an hours-long hash job delays a reduction by at most
 * one batch.  Finished work goes back through the post callback (the
 * server's completion queue); the device keeps no pointer to it afterwards.
 *
 * A backend call that returns WAVE_EDEVICE marks the device faulted: that
 * job and every later one fail with WAVE_EDEVFAULT, nothing else stops.
 */
#ifndef WD_DEVICE_H
#define WD_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/config.h"
#include "workers/hash/hash.h"
#include "workers/worker.h"

enum { WD_WORK_REDUCE = 1, WD_WORK_HASH = 2 };

typedef struct wd_device wd_device;

/* One unit of work handed to a device thread.  The submitter owns it; the
 * device thread reads and writes it between submit and post only. */
typedef struct wd_work {
  struct wd_work *next;   /* queue link (device, then completion queue) */
  int kind;               /* WD_WORK_* */
  wd_device *dev;
  int rc;                 /* result: 0 or WAVE_E*, with err */
  wave_error err;
  double seconds;         /* time on the device */
  wv_reduce_job job;      /* WD_WORK_REDUCE: input ... */
  wv_reduce_out out;      /* ... and result */
  struct wd_region *const *regions;  /* shared-memory regions the job's */
  size_t n_regions;                  /* spans lie in (pinned at first use) */
  void *owner;            /* the submitter's: what this work answers */
} wd_work;

typedef void (*wd_post_fn)(void *arg, wd_work *w);

/* Known-answer status of one pack on one device. */
enum { WD_CHECK_NONE = 0, WD_CHECK_PENDING, WD_CHECK_OK, WD_CHECK_FAILED };

/* "none", "pending", "ok", "failed": PackCheck.state on the wire. */
static inline const char *wd_check_state_name(int state)
{
  switch (state) {
  case WD_CHECK_PENDING: return "pending";
  case WD_CHECK_OK: return "ok";
  case WD_CHECK_FAILED: return "failed";
  default: return "none";
  }
}
typedef struct wd_pack_state {
  int state;
  char detail[160];
} wd_pack_state;

typedef struct wd_device_snap {
  unsigned queued, capacity;
  uint64_t done, failed;
  int faulted, running;
  char fault[200];
} wd_device_snap;

/* Start the device's thread (signals blocked, named "wd:<name>"); it opens
 * the device at once.  packs[] must outlive the device. */
int wd_device_start(const wd_device_cfg *cfg, unsigned slot,
                    unsigned hash_slots,
                    const wv_pack *const *packs, size_t n_packs,
                    wd_post_fn post, void *post_arg, wd_device **out,
                    wave_error *err);
/* Block until open() has returned; 0 when the device opened. */
int wd_device_wait_open(wd_device *d);
/* Queue w (kind set, fields filled).  WAVE_EBUSY when the queue is full,
 * WAVE_EDEVFAULT when the device is faulted, WAVE_ESHUTDOWN after stop. */
int wd_device_submit(wd_device *d, wd_work *w, wave_error *err);
/* Take a hash job back out of the queue if it has not started; 1 if so
 * (its post will never come). */
int wd_device_unqueue(wd_device *d, wd_work *w);
/* Have the device thread unpin region r (region.h's unpin callback); after
 * the thread ended, done at once.  Any thread. */
struct wd_region;
void wd_device_unpin(wd_device *d, struct wd_region *r);
/* Let the thread finish what is queued, close the device, join. */
void wd_device_stop(wd_device *d);
void wd_device_free(wd_device *d);

const char *wd_device_name(const wd_device *d);
const wd_device_cfg *wd_device_cfg_of(const wd_device *d);
const wv_caps *wd_device_caps(const wd_device *d); /* valid after open */
int wd_device_has_hash(const wd_device *d);
int wd_device_faulted(wd_device *d);
unsigned wd_device_load(wd_device *d);       /* reductions queued+running */
unsigned wd_device_hash_load(wd_device *d);  /* hash jobs queued+running */
int wd_device_pack_check(wd_device *d, size_t pack, wd_pack_state *out);
void wd_device_snapshot(wd_device *d, wd_device_snap *s);

#endif
