/* health.h - the health thread: each device's health (workers/health.h)
 * read every WD_HEALTH_PERIOD_MS on a thread of its own, so that NVML
 * calls and sysfs reads, which may block, never run on the loop or on a
 * device thread.  The loop (metrics.c, rq/status.c) reads the newest
 * readings, copied under a mutex: never older than a period plus one
 * reading of every device.
 *
 * The guards (docs/config.md "Device guards") are judged on that thread
 * right after each reading: a device at or over max_temperature_c or
 * max_power_w is held (wd_device_hold: no new reduction or hash piece)
 * from that reading on, until its temperature is at or under
 * resume_temperature_c and its power under max_power_w.  A guard whose
 * figure the reading lacks (no source, or the field absent) is inactive:
 * it neither holds nor lets go on missing data, and says so.  At each
 * reading that finds a device held, its queued reductions that the
 * daemon picked it for move to devices that can run them
 * (exec/pick.h wd_pick_move); those that named it wait.
 *
 * The rate watchdog (watchdog_* keys) is judged there too, on the hashes
 * the device's pieces counted (wd_device_hashes): hl_watch in health.c.
 * A degraded device is held like a throttled one; its restart is
 * wd_device_reopen.
 */
#ifndef WD_HEALTH_H
#define WD_HEALTH_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/exec/device.h"
#include "wave/error.h"
#include "workers/health.h"

#define WD_HEALTH_PERIOD_MS 2000

typedef struct wd_health wd_health;

/* Start reading devs (n of them; they must outlive the thread); the
 * first round is read before the first wd_health_get sees anything
 * ("not read yet" until then).  0 or WAVE_ENOMEM / WAVE_EIO. */
int wd_health_start(wd_device *const *devs, size_t n, wd_health **out,
                    wave_error *err);
/* Device i's newest reading into *out. */
void wd_health_get(wd_health *h, size_t i, wv_health *out);
/* A device's guards: its limits (0: off) and where they stand. */
struct wd_guard_view {
  const char *state;   /* "off", "inactive", "ok", "throttled",
                          "degraded" (the rate watchdog) */
  char reason[200];    /* throttled: why; inactive (or partly): why */
  uint64_t throttles;  /* times it went throttled */
  unsigned max_temperature_c, resume_temperature_c, max_power_w;
  uint64_t restarts;   /* the watchdog's restarts */
};
typedef struct wd_guard_view wd_guard_view;

/* Device i's guards now. */
void wd_health_guard(wd_health *h, size_t i, wd_guard_view *out);
/* New limits (a reload: the devices in the same order, cfgs[i] for
 * device i), judged at once on the newest readings. */
void wd_health_set_limits(wd_health *h, const wd_device_cfg *cfgs, size_t n);

/* Stop the thread (it ends after the reading in progress) and free h.
 * NULL is fine. */
void wd_health_stop(wd_health *h);

#endif
