/* pick.c - device choice (see pick.h). */
#include <string.h>

#include "daemon/log.h"
#include "daemon/exec/pick.h"
#include "daemon/exec/turns.h"
#include "core/base.h"

static wd_device *pk_find(wd_device *const *devs, size_t n, const char *name)
{
  for (size_t i = 0; i < n; i++)
    if (strcmp(wd_device_name(devs[i]), name) == 0)
      return devs[i];
  return NULL;
}

/* A named device for a hash job on pack rq->pack: 0 when it can run it. */
static const wd_pick_pack *pk_pack(const wd_pick_req *rq, wd_device *d)
{
  return &rq->packs[wd_device_index(d)];
}

static int pk_hash_ok(wd_device *d, const wd_pick_req *rq, wave_error *err)
{
  const char *name = wd_device_name(d);
  if (!wd_device_has_hash(d))
    return wv_seterr(err, WAVE_ENODEV,
                     "device %s (backend %s) does not run hash jobs", name,
                     wd_device_cfg_of(d)->backend);
  if (wd_device_faulted(d))
    return wv_seterr(err, WAVE_EDEVFAULT, "device %s is faulted", name);
  const wd_pick_pack *ck = pk_pack(rq, d);
  if (ck->failed)
    return wv_seterr(err, WAVE_ESELFCHECK,
                     "pack %s failed its self-check on device %s: %s",
                     rq->pack_name, name, ck->detail);
  return 0;
}

static int pk_named(wd_device *const *devs, size_t n_devs, const char *name,
                    const wd_pick_req *rq, wd_device **out, wave_error *err)
{
  wd_device *d = pk_find(devs, n_devs, name);
  if (d == NULL)
    return wv_seterr(err, WAVE_ENODEV, "no device named '%s'", name);
  if (rq->kind == WD_PICK_HASH) {
    int rc = pk_hash_ok(d, rq, err);
    if (rc != 0)
      return rc;
  }
  *out = d;
  return 0;
}

static int pk_all(wd_device *const *devs, size_t n_devs,
                  const wd_pick_req *rq, wd_device **out, size_t *n_out,
                  wave_error *err)
{
  int any_hash = 0, any_failed_check = 0;
  size_t n = 0;
  for (size_t i = 0; i < n_devs; i++) {
    wd_device *d = devs[i];
    if (!wd_device_has_hash(d))
      continue;
    any_hash = 1;
    if (wd_device_faulted(d))
      continue;
    if (pk_pack(rq, d)->failed) {
      any_failed_check = 1;
      continue;
    }
    out[n++] = d;
  }
  if ((*n_out = n) > 0)
    return 0;
  if (any_failed_check)
    return wv_seterr(err, WAVE_ESELFCHECK,
                     "pack %s failed its self-check on every device that "
                     "could run it", rq->pack_name);
  if (any_hash)
    return wv_seterr(err, WAVE_EDEVFAULT,
                     "every device that runs hash jobs is faulted");
  return wv_seterr(err, WAVE_ENODEV, "no device of this daemon runs hash jobs");
}

/* Two devices of one job that are one physical GPU (cuda0 and vk0 on the
 * same card: equal caps UUIDs) would only take turns on it, and the
 * switching between their contexts costs more than either gains.  Keep
 * the one that has hashed this pack fastest so far (the first in config
 * order while neither has measured it); returns the new count. */
static size_t pk_one_per_gpu(wd_device **out, size_t n, const wd_pick_req *rq)
{
  size_t kept = 0;
  for (size_t i = 0; i < n; i++) {
    wv_caps ci;
    wd_device_caps(out[i], &ci);
    size_t k = 0;
    for (; ci.has_uuid && k < kept; k++) {
      wv_caps ck;
      wd_device_caps(out[k], &ck);
      if (ck.has_uuid && memcmp(ck.uuid, ci.uuid, sizeof ci.uuid) == 0)
        break;
    }
    if (!ci.has_uuid || k == kept) {
      out[kept++] = out[i];
      continue;
    }
    wd_device *drop = out[i];
    if (pk_pack(rq, out[i])->hash_rate > pk_pack(rq, out[k])->hash_rate) {
      drop = out[k];
      out[k] = out[i];
    }
    wd_info("hash job on pack %s: %s left out, the same GPU as %s", rq->pack_name,
            wd_device_name(drop), wd_device_name(out[k]));
  }
  return kept;
}

/* A reduction's needs (rq->needs64, needs_arg, needs_fsum) against d's
 * caps. */
static int pk_reduce_ok(wd_device *d, const wd_pick_req *rq)
{
  if (!rq->needs64 && !rq->needs_arg && !rq->needs_fsum)
    return 1;
  wv_caps c;
  wd_device_caps(d, &c);
  return (!rq->needs64 || c.dtypes64) && (!rq->needs_arg || c.argminmax) &&
         (!rq->needs_fsum || c.fsum);
}

int wd_pick(wd_device *const *devs, size_t n_devs, const wd_pick_req *rq,
            wd_device **out, size_t *n_out, wave_error *err)
{
  *n_out = 0;
  int named = rq->device != NULL && rq->device[0] != '\0';
  if (rq->kind == WD_PICK_HASH && rq->n_devices > 0) {
    if (named)
      return wv_seterr(err, WAVE_EBADREQUEST,
                       "give device or devices, not both");
    if (rq->n_devices == 1 && strcmp(rq->devices[0], "all") == 0) {
      int rc = pk_all(devs, n_devs, rq, out, n_out, err);
      if (rc == 0)
        *n_out = pk_one_per_gpu(out, *n_out, rq);
      return rc;
    }
    size_t n = 0;
    for (size_t i = 0; i < n_devs; i++) {  /* config order */
      int listed = 0;
      for (size_t k = 0; k < rq->n_devices; k++)
        if (strcmp(rq->devices[k], wd_device_name(devs[i])) == 0)
          listed++;
      if (listed > 1)
        return wv_seterr(err, WAVE_EBADREQUEST, "device %s is listed twice",
                         wd_device_name(devs[i]));
      if (listed) {
        int rc = pk_hash_ok(devs[i], rq, err);
        if (rc != 0)
          return rc;
        out[n++] = devs[i];
      }
    }
    for (size_t k = 0; k < rq->n_devices; k++)
      if (pk_find(devs, n_devs, rq->devices[k]) == NULL)
        return wv_seterr(err, WAVE_ENODEV, "no device named '%s'%s",
                         rq->devices[k],
                         strcmp(rq->devices[k], "all") == 0
                             ? " (\"all\" must be the only name)" : "");
    *n_out = pk_one_per_gpu(out, n, rq);
    return 0;
  }
  if (named) {
    int rc = pk_named(devs, n_devs, rq->device, rq, out, err);
    if (rc == 0)
      *n_out = 1;
    return rc;
  }
  if (rq->kind == WD_PICK_HASH) {
    /* the fewest hash jobs in flight among those that can run the pack,
     * a device with the pack ready before one still preparing it (a job
     * there would wait for the preparation: hashjob.h) */
    wd_device *cand[n_devs ? n_devs : 1];
    size_t nc;
    int rc = pk_all(devs, n_devs, rq, cand, &nc, err);
    if (rc != 0)
      return rc;
    wd_device *best = NULL;
    unsigned best_load = 0;
    int best_ready = 0;
    for (size_t i = 0; i < nc; i++) {
      unsigned load = wd_device_long_load(cand[i]);
      /* a held device (exec/health.h) last: it takes no piece now */
      int ready = pk_pack(rq, cand[i])->ready + 2 * !wd_device_held(cand[i]);
      if (best == NULL || ready > best_ready ||
          (ready == best_ready && load < best_load)) {
        best = cand[i];
        best_load = load;
        best_ready = ready;
      }
    }
    out[0] = best;
    *n_out = 1;
    return 0;
  }
  wd_device *best = NULL;
  unsigned best_load = 0;
  int best_held = 0;
  /* a device whose caps run the job first; if none does, the least
   * loaded, whose backend says UNSUPPORTED with its name; a held one
   * (exec/health.h: it runs nothing now) only when no other can */
  for (int any = 0; any < 2 && best == NULL; any++)
    for (size_t i = 0; i < n_devs; i++) {
      wd_device *d = devs[i];
      if (wd_device_faulted(d) || (!any && !pk_reduce_ok(d, rq)))
        continue;
      unsigned load = wd_device_load(d);
      int held = wd_device_held(d);
      if (best == NULL || held < best_held ||
          (held == best_held && load < best_load)) {
        best = d;
        best_load = load;
        best_held = held;
      }
    }
  if (best == NULL)
    return wv_seterr(err, WAVE_EDEVFAULT, "every device is faulted");
  out[0] = best;
  *n_out = 1;
  return 0;
}

/* Another device for w, shed by `from`: not held, not faulted, its caps
 * run w (WD_NEEDS_*), the least loaded (config order breaks ties). */
static wd_device *pk_other(wd_device *const *devs, size_t n_devs,
                           wd_device *from, const wd_work *w)
{
  wd_pick_req rq = {.kind = WD_PICK_REDUCE,
                    .needs64 = (w->needs & WD_NEEDS_64) != 0,
                    .needs_arg = (w->needs & WD_NEEDS_ARG) != 0,
                    .needs_fsum = (w->needs & WD_NEEDS_FSUM) != 0};
  wd_device *best = NULL;
  unsigned best_load = 0;
  for (size_t i = 0; i < n_devs; i++) {
    wd_device *d = devs[i];
    if (d == from || wd_device_faulted(d) || wd_device_held(d) ||
        !pk_reduce_ok(d, &rq))
      continue;
    unsigned load = wd_device_load(d);
    if (best == NULL || load < best_load) {
      best = d;
      best_load = load;
    }
  }
  return best;
}

void wd_pick_move(wd_device *const *devs, size_t n_devs, wd_device *from)
{
  wd_fifo shed;
  wd_fifo_init(&shed);
  wd_device_shed(from, &shed);
  unsigned moved = 0, stay = 0;
  const char *to = NULL;
  for (wd_work *w; (w = wd_fifo_pop(&shed)) != NULL;) {
    wave_error err = {0};
    wd_device *d = pk_other(devs, n_devs, from, w);
    if (d != NULL && wd_device_take(d, w, 0, &err) == 0) {
      moved++;
      to = to == NULL || strcmp(to, wd_device_name(d)) == 0
               ? wd_device_name(d) : "other devices";
    } else {  /* no other device takes it: it waits where it was */
      stay += wd_device_take(from, w, 1, &err) == 0;
    }
  }
  if (moved > 0)
    wd_warn("device %s is held: %u queued reduction%s moved to %s%s",
            wd_device_name(from), moved, moved == 1 ? "" : "s", to,
            stay ? "; the others wait for it" : "");
}
