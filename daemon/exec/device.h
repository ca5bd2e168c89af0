/* device.h - one thread per configured device: a generic executor of work
 * items (daemon/exec/work.h), and the only thread that calls the device's
 * backend (through workers/wvdev.h).
 *
 * The thread opens the device, then serves its lanes: short items
 * (reductions; bounded by queue_depth, in turns by owner: one
 * reduction, or one slice of a big one, per client in turn), setup items (pack
 * preparation; FIFO) and long ones (hash job shares; bounded by
 * limits.jobs_in_flight, round robin by owner, then by item: device.c).
 * A long item runs one step at a time and the short lane is emptied
 * between steps, so an hours-long hash job delays a reduction by at most
 * one step, and another client's hash job by one step per owner.  Setup
 * items take turns, step for step, with the long items: a reload's packs
 * are prepared while hash jobs run.  Ended items
 * go back through the post callback (the server's completion queue).
 *
 * The device-fault rule lives here and only here: an item that ends with
 * WAVE_EDEVICE marks the device faulted; that item ends with
 * WAVE_EDEVFAULT, every later one too (or its abort op runs), nothing else
 * stops.
 */
#ifndef WD_DEVICE_H
#define WD_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/config.h"
#include "daemon/exec/work.h"
#include "workers/worker.h"

typedef struct wd_device wd_device;

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
  /* PENDING: a preparation is queued or running (packprep.c), and how far
   * it got; steps_total 0 = the backend does not say.  Not queued: the
   * pack waits for its first job (packs.prepare: first-use). */
  int queued;
  unsigned steps, steps_total;
  double hash_rate;       /* out of wd_device_pack_check: hashes/s measured
                             on this device with this pack; 0: none yet */
} wd_pack_state;

typedef struct wd_device_snap {
  unsigned queued, capacity;
  uint64_t done, failed;
  int faulted, running;
  char fault[200];
} wd_device_snap;

/* Start the device's thread (signals blocked, named "wd:<name>"); it opens
 * the device at once.  n_packs: how many pack states it keeps. */
int wd_device_start(const wd_device_cfg *cfg, unsigned long_slots,
                    size_t n_packs, wd_post_fn post, void *post_arg,
                    wd_device **out, wave_error *err);
/* Block until open() has returned; 0 when the device opened. */
int wd_device_wait_open(wd_device *d);
/* Queue w (ops set).  WAVE_EBUSY when its lane is full, WAVE_EDEVFAULT when
 * the device is faulted, WAVE_ESHUTDOWN after stop. */
int wd_device_submit(wd_device *d, wd_work *w, wave_error *err);
/* A parked item (WD_RUN_PARK) goes back to the head of the long lane. */
void wd_device_resume(wd_device *d, wd_work *w);
/* Take a long item back out of the queue if it is not running; 1 if so
 * (its post will never come). */
int wd_device_unqueue(wd_device *d, wd_work *w);
/* Let the thread finish what is queued, close the device, join. */
void wd_device_stop(wd_device *d);
void wd_device_free(wd_device *d);

/* ---- any thread ---- */
const char *wd_device_name(const wd_device *d);
const wd_device_cfg *wd_device_cfg_of(const wd_device *d);
void wd_device_caps(wd_device *d, wv_caps *out); /* as of now */
uint64_t wd_device_batch(wd_device *d);      /* nonces per hash step */
int wd_device_has_hash(const wd_device *d);
int wd_device_faulted(wd_device *d);
unsigned wd_device_load(wd_device *d);       /* short items queued+running */
unsigned wd_device_long_load(wd_device *d);  /* long items not ended */
int wd_device_pack_check(wd_device *d, size_t pack, wd_pack_state *out);
/* A reload's new packs: states for slots up to n_packs (pending). */
int wd_device_add_packs(wd_device *d, size_t n_packs, wave_error *err);
void wd_device_snapshot(wd_device *d, wd_device_snap *s);

/* ---- the device thread, inside a run op ---- */
const wv_backend *wd_device_backend(const wd_device *d);
wv_device *wd_device_bdev(wd_device *d);
/* A short item of another owner than `owner` is queued: a big reduction
 * between slices then returns WD_RUN_MORE, and runs on otherwise. */
int wd_device_short_waiting(wd_device *d, uint64_t owner);
/* Read the backend's caps again (after a pack is prepared). */
void wd_device_refresh_caps(wd_device *d);
void wd_device_set_check(wd_device *d, size_t pack, const wd_pack_state *st);
/* A hash batch of n nonces with pack took seconds on the device: the
 * capacity figure status reports (hash_rate), a coordinator's weight. */
void wd_device_add_hashes(wd_device *d, size_t pack, uint64_t n,
                          double seconds);

#endif
