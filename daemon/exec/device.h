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
#include "workers/wvdev.h"

typedef struct wd_device wd_device;

typedef void (*wd_post_fn)(void *arg, wd_work *w);

/* What the server hands each device at its start, called on its thread
 * with arg: opened, once it opened, before it is reported open (the
 * staging rings made at start-up, limits.staging_rings); closing, just
 * before its device closes (the staging rings give back the device's
 * memory, daemon/bulk/readers.h).  Either may be NULL. */
typedef struct wd_dev_hooks {
  void (*opened)(void *arg, const wv_dev *dev, const wv_caps *caps);
  void (*closing)(void *arg, const wv_dev *dev);
  void *arg;
} wd_dev_hooks;

typedef struct wd_device_snap {
  unsigned queued, capacity;
  uint64_t done, failed, cancelled; /* cancelled: ECANCELLED, ESHUTDOWN */
  uint64_t deadline;      /* ended EDEADLINE, never run (not in failed) */
  unsigned level_queued[WD_LEVEL_N]; /* queued, by wd_work.level */
  double busy_s;          /* seconds its items ran, all told */
  int faulted, running;
  char fault[200];
} wd_device_snap;

/* Start the device's thread (signals blocked, named "wd:<name>"); it opens
 * the device at once.  index: its place in the configuration (the run
 * ops' wd_run_ctx.index, what jobs/packstate.h keys by); hooks: copied,
 * NULL for none. */
int wd_device_start(const wd_device_cfg *cfg, unsigned index,
                    unsigned long_slots, wd_post_fn post, void *post_arg,
                    const wd_dev_hooks *hooks, wd_device **out,
                    wave_error *err);
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
unsigned wd_device_index(const wd_device *d);
const wd_device_cfg *wd_device_cfg_of(const wd_device *d);
void wd_device_caps(wd_device *d, wv_caps *out); /* as of now */
/* Its health now (workers/health.h), read on the calling thread (the
 * health thread, exec/health.c), not the device's; may block. */
struct wv_health;
void wd_device_health(wd_device *d, struct wv_health *out);
int wd_device_has_hash(const wd_device *d);
int wd_device_can_pin(const wd_device *d);   /* the backend pins memory */
int wd_device_faulted(wd_device *d);
unsigned wd_device_load(wd_device *d);       /* short items queued+running */
unsigned wd_device_long_load(wd_device *d);  /* long items not ended */
void wd_device_snapshot(wd_device *d, wd_device_snap *s);
/* w's level, its level's cap and its deadline (deadline_ms from now; 0:
 * the level's default in cfg->prio), before wd_device_submit. */
void wd_work_level(wd_work *w, const wd_config *cfg, int level,
                   unsigned deadline_ms);
/* w takes like's level, cap and deadline (like NULL: w keeps its own). */
void wd_work_level_as(wd_work *w, const wd_work *like);
/* "high", "normal", "low" for a WD_LEVEL_*. */
const char *wd_level_name(int level);
/* CLOCK_MONOTONIC in seconds: the clock of wd_work's t_submit, t_start. */
double wd_device_now(void);

/* Hold the device (held 1: a guard or the watchdog, exec/health.h) or
 * let it go (0).  A held device runs no reduction and no hash step; its
 * queued items wait (setup items still run), but for the reductions
 * that wd_device_shed gives up to other devices.  Its long items run only
 * when poked, with wd_run_ctx.held set, to end or park. */
void wd_device_hold(wd_device *d, int held);
int wd_device_held(wd_device *d);
/* The held device's queued reductions that may move (wd_work.movable,
 * not begun), taken out onto out (linked through wd_work.q), the
 * highest level first, in turn order within a level; none when it is
 * not held.  exec/pick.h wd_pick_move gives them to other devices. */
struct wd_fifo;
void wd_device_shed(wd_device *d, struct wd_fifo *out);
/* Queue w, shed by another device, on d, keeping its level, deadline,
 * owner and t_submit: checked as wd_device_submit does (back 0), or
 * back on the device that shed it, unchecked (back 1: it had its place;
 * only WAVE_ENOMEM, and then w ends with it, posted as usual). */
int wd_device_take(wd_device *d, wd_work *w, int back, wave_error *err);
/* Something a held device's long items wait for has happened (a job ran
 * out of pieces, a piece came back): each queued one runs once, held. */
void wd_device_poke(wd_device *d);

/* Close the device and open it again on its thread, between two items
 * (the rate watchdog's restart, exec/health.h): the close and open hooks
 * run, the caps are read again; a pack is prepared again by its next
 * hash batch.  Any thread. */
void wd_device_reopen(wd_device *d);
/* Nonces its hash pieces hashed (jobs/hashrun.c counts them). */
void wd_device_hashed(wd_device *d, uint64_t n);
uint64_t wd_device_hashes(wd_device *d);

/* ---- the device thread, inside a run op ---- */
/* A short item of another owner than `owner` is queued at the running
 * reduction's level, or any item at a higher level: a big reduction
 * between slices then returns WD_RUN_MORE, and runs on otherwise. */
int wd_device_short_waiting(wd_device *d, uint64_t owner);

#endif
