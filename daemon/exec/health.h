/* health.h - the health thread: each device's health (workers/health.h)
 * read every WD_HEALTH_PERIOD_MS on a thread of its own, so that NVML
 * calls and sysfs reads, which may block, never run on the loop or on a
 * device thread.  The loop (metrics.c, rq/status.c) reads the newest
 * readings, copied under a mutex: never older than a period plus one
 * reading of every device.
 */
#ifndef WD_HEALTH_H
#define WD_HEALTH_H

#include <stddef.h>

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
/* Stop the thread (it ends after the reading in progress) and free h.
 * NULL is fine. */
void wd_health_stop(wd_health *h);

#endif
