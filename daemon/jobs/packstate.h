/* packstate.h - device x pack: how each pack stands on each device (its
 * known-answer check, a preparation's progress), the hash rate measured
 * with it there, and the batch rule.
 *
 * The state is keyed by the device's index in the configuration
 * (wd_device_index, wd_run_ctx.index) and the pack's slot (wd_packs_slot),
 * so the executor (daemon/exec/) knows no pack.  Any thread: one mutex
 * guards the table; the loop reads it for status, picks and waiting jobs,
 * the device threads write it from packprep.c and hashrun.c.  A reload's
 * new packs grow every device's row (wd_packstate_add_packs).
 */
#ifndef WD_PACKSTATE_H
#define WD_PACKSTATE_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/exec/device.h"
#include "workers/worker.h"

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
  double hash_rate;       /* out of wd_packstate_get: hashes/s measured
                             on this device with this pack; 0: none yet */
} wd_pack_state;

typedef struct wd_packstate wd_packstate;

/* States for devs[0 .. n_devs-1] (by index) x n_packs packs: pending on
 * a device with hash jobs, none on the others. */
int wd_packstate_new(wd_device *const *devs, size_t n_devs, size_t n_packs,
                     wd_packstate **out, wave_error *err);
void wd_packstate_free(wd_packstate *ps);
/* The state of pack on device dev; -1 when either is out of range (a
 * reload's new slot not added yet). */
int wd_packstate_get(wd_packstate *ps, unsigned dev, size_t pack,
                     wd_pack_state *out);
void wd_packstate_set(wd_packstate *ps, unsigned dev, size_t pack,
                      const wd_pack_state *st);
/* A hash batch of n nonces with pack took seconds on dev: the capacity
 * figure status reports (hash_rate), a coordinator's weight. */
void wd_packstate_add_hashes(wd_packstate *ps, unsigned dev, size_t pack,
                             uint64_t n, double seconds);
/* A reload's new packs: states for slots up to n_packs (pending). */
int wd_packstate_add_packs(wd_packstate *ps, size_t n_packs,
                           wave_error *err);
/* Nonces per hash step on dev: the configured batch (the device's
 * `batch:` key, docs/config.md) wins, then the backend's caps->hash_batch,
 * then a default; never more than 2^24 (128 MiB of outputs).  The one
 * place the rule is applied. */
uint64_t wd_packstate_batch(const wd_packstate *ps, unsigned dev,
                            const wv_caps *caps);

#endif
