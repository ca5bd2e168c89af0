/* status.c - wave_status_get and wave_packs_get in libwaveclient: the
 * daemon's StatusReply and PacksReply copied into one allocation each.
 *
 * Each result is a single block (wv_blk): a first pass sizes the header,
 * the lists and every string, a second carves them out, so the one free()
 * of wave_status_free / wave_packs_free releases all of it and no list or
 * string is cut to a fixed size (ABI 1, docs/changelog.md).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client/client_int.h"
#include "core/base.h"
#include "wave/client.h"

/* ---- status ------------------------------------------------------------ */

/* The bytes of the block that holds a StatusReply's devices, their pack
 * checks, the listen URLs, the shares and every string (cst_status_fill's
 * order). */
static size_t cst_status_size(const Wave__V1__StatusReply *st)
{
  size_t n = WV_BLK_ROOM(sizeof(wave_status));
  if (st == NULL)
    return n + wv_blk_size(NULL);
  n += WV_BLK_ROOM(st->n_devices * sizeof(wave_device_status));
  n += WV_BLK_ROOM((st->n_listen + 1) * sizeof(char *));
  n += WV_BLK_ROOM(st->n_listen * sizeof(uint64_t));
  n += WV_BLK_ROOM(st->n_devices * sizeof(uint64_t));  /* device_hashes */
  n += WV_BLK_ROOM(st->n_devices * sizeof(double));    /* device_hash_rate */
  n += WV_BLK_ROOM(st->n_shares * sizeof(wave_share));
  for (size_t i = 0; i < st->n_shares; i++)
    if (st->shares[i] != NULL)
      n += wv_blk_size(st->shares[i]->principal);
  n += wv_blk_size(st->version);
  for (size_t i = 0; i < st->n_listen; i++)
    n += wv_blk_size(st->listen[i]);
  for (size_t i = 0; i < st->n_devices; i++) {
    const Wave__V1__DeviceStatus *d = st->devices[i];
    if (d == NULL)
      continue;
    n += wv_blk_size(d->name) + wv_blk_size(d->backend) +
         wv_blk_size(d->description) + wv_blk_size(d->fault) +
         wv_blk_size(d->exchange) + wv_blk_size(d->exchange_reason) +
         wv_blk_size(d->health_source) + wv_blk_size(d->health_note) +
         wv_blk_size(d->throttle) + wv_blk_size(d->guard) +
         wv_blk_size(d->guard_reason);
    n += WV_BLK_ROOM(d->n_packs * sizeof(wave_pack_check));
    for (size_t k = 0; k < d->n_packs; k++)
      if (d->packs[k] != NULL)
        n += wv_blk_size(d->packs[k]->pack) + wv_blk_size(d->packs[k]->state) +
             wv_blk_size(d->packs[k]->detail);
  }
  return n;
}

static void cst_device(wv_blk *b, wave_device_status *d,
                      const Wave__V1__DeviceStatus *s)
{
  d->name = wv_blk_str(b, s->name);
  d->backend = wv_blk_str(b, s->backend);
  d->description = wv_blk_str(b, s->description);
  d->queue_depth = s->queue_depth;
  d->queue_capacity = s->queue_capacity;
  d->jobs_done = s->jobs_done;
  d->jobs_failed = s->jobs_failed;
  d->jobs_cancelled = s->jobs_cancelled;
  d->busy_ms = s->busy_ms;
  d->health_source = wv_blk_str(b, s->health_source);
  d->health_note = wv_blk_str(b, s->health_note);
  d->health_have = s->health_have;
  d->temperature_c = s->temperature_c;
  d->power_w = s->power_w;
  d->power_limit_w = s->power_limit_w;
  d->sm_clock_mhz = s->sm_clock_mhz;
  d->mem_clock_mhz = s->mem_clock_mhz;
  d->throttle_reasons = s->throttle_reasons;
  d->throttle = wv_blk_str(b, s->throttle);
  d->memory_used = s->memory_used;
  d->memory_total = s->memory_total;
  d->utilization_pct = s->utilization_pct;
  d->guard = wv_blk_str(b, s->guard);
  d->guard_reason = wv_blk_str(b, s->guard_reason);
  d->guard_throttles = s->guard_throttles;
  d->max_temperature_c = s->max_temperature_c;
  d->resume_temperature_c = s->resume_temperature_c;
  d->max_power_w = s->max_power_w;
  d->watchdog_restarts = s->watchdog_restarts;
  d->faulted = s->faulted != 0;
  d->running = s->running != 0;
  d->fault = wv_blk_str(b, s->fault);
  d->wave_width = s->wave_width;
  d->exchange = wv_blk_str(b, s->exchange);
  d->exchange_reason = wv_blk_str(b, s->exchange_reason);
  d->packs = wv_blk_take(b, s->n_packs * sizeof *d->packs);
  d->n_packs = 0;
  for (size_t i = 0; i < s->n_packs; i++) {
    const Wave__V1__PackCheck *pc = s->packs[i];
    if (pc == NULL)
      continue;
    wave_pack_check *dst = &d->packs[d->n_packs++];
    dst->pack = wv_blk_str(b, pc->pack);
    dst->ok = pc->ok != 0;
    dst->state = wv_blk_str(b, pc->state);
    dst->detail = wv_blk_str(b, pc->detail);
    dst->hash_rate = pc->hash_rate;
  }
}

int wave_status_get(wave_client *c, wave_status **out, wave_error *err)
{
  if (c == NULL || out == NULL)
    return wv_seterr(err, WAVE_EARG, "wave_status_get: NULL argument");
  *out = NULL;
  Wave__V1__StatusRequest sr = WAVE__V1__STATUS_REQUEST__INIT;
  Wave__V1__Request r = WAVE__V1__REQUEST__INIT;
  r.body_case = WAVE__V1__REQUEST__BODY_STATUS;
  r.status = &sr;

  Wave__V1__Response *resp;
  int rv = wv_client_call(c, &r, WAVE__V1__RESPONSE__BODY_STATUS, 0, &resp,
                          err);
  if (rv != 0)
    return rv;
  const Wave__V1__StatusReply *st = resp->status;
  /* One block: the devices, their packs, the listen pointers and every
   * string follow the header, so one free() releases it. */
  size_t bytes = cst_status_size(st);
  wv_blk b = {malloc(bytes), NULL};
  if (b.at == NULL) {
    wave__v1__response__free_unpacked(resp, NULL);
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  }
  b.end = b.at + bytes;
  wave_status *s = wv_blk_take(&b, sizeof *s);
  if (st == NULL) {
    s->version = wv_blk_str(&b, NULL);
  } else {
    s->devices = wv_blk_take(&b, st->n_devices * sizeof *s->devices);
    s->listen = wv_blk_take(&b, (st->n_listen + 1) * sizeof *s->listen);
    s->shares = wv_blk_take(&b, st->n_shares * sizeof *s->shares);
    s->version = wv_blk_str(&b, st->version);
    for (size_t i = 0; i < st->n_listen; i++)
      s->listen[s->n_listen++] = (char *)wv_blk_str(&b, st->listen[i]);
    if (st->n_device_hashes == st->n_devices &&
        st->n_device_hash_rate == st->n_devices && st->n_devices > 0) {
      s->device_hashes = wv_blk_take(&b, st->n_devices *
                                         sizeof *s->device_hashes);
      s->device_hash_rate = wv_blk_take(&b, st->n_devices *
                                            sizeof *s->device_hash_rate);
      for (size_t i = 0; i < st->n_devices; i++) {
        s->device_hashes[i] = st->device_hashes[i];
        s->device_hash_rate[i] = st->device_hash_rate[i];
      }
    }
    if (st->n_listen_connections == st->n_listen && st->n_listen > 0) {
      s->listen_connections = wv_blk_take(&b, st->n_listen *
                                              sizeof *s->listen_connections);
      for (size_t i = 0; i < st->n_listen; i++)
        s->listen_connections[i] = st->listen_connections[i];
    }
    s->uptime_ms = st->uptime_ms;
    s->jobs_served = st->jobs_served;
    s->jobs_failed = st->jobs_failed;
    s->jobs_cancelled = st->jobs_cancelled;
    s->instance = st->instance;
    s->ready = st->ready;
    s->max_files = st->max_files;
    s->devices_throttled = st->devices_throttled;
    s->fd_conns = st->fd_conns;
    s->fd_limit = st->fd_limit;
    for (size_t i = 0; i < st->n_devices; i++)
      if (st->devices[i] != NULL)
        cst_device(&b, &s->devices[s->n_devices++], st->devices[i]);
    for (size_t i = 0; i < st->n_shares; i++) {
      const Wave__V1__PrincipalShare *ps = st->shares[i];
      if (ps == NULL)
        continue;
      wave_share *w = &s->shares[s->n_shares++];
      w->principal = wv_blk_str(&b, ps->principal);
      w->region_bytes = ps->region_bytes;
      w->region_limit = ps->region_limit;
      w->stream_bytes = ps->stream_bytes;
      w->stream_limit = ps->stream_limit;
      w->fd_conns = ps->fd_conns;
      w->fd_limit = ps->fd_limit;
      w->file_fds = ps->file_fds;
      w->file_fd_limit = ps->file_fd_limit;
    }
  }
  wave__v1__response__free_unpacked(resp, NULL);
  *out = s;
  return 0;
}

void wave_status_free(wave_status *s)
{
  free(s);
}

/* ---- packs ------------------------------------------------------------- */

/* The bytes of the block that holds the pack array, each pack's devices
 * and every string (wave_packs_get's order). */
static size_t cst_packs_size(const Wave__V1__PacksReply *pl, size_t n)
{
  size_t bytes = WV_BLK_ROOM((n ? n : 1) * sizeof(wave_pack_info));
  for (size_t i = 0; i < n; i++) {
    const Wave__V1__PackInfo *pi = pl->packs[i];
    if (pi == NULL)
      continue;
    bytes += wv_blk_size(pi->name) + wv_blk_size(pi->description);
    bytes += WV_BLK_ROOM(pi->n_devices * sizeof(wave_pack_device));
    for (size_t j = 0; j < pi->n_devices; j++)
      if (pi->devices[j] != NULL)
        bytes += wv_blk_size(pi->devices[j]->device) +
                 wv_blk_size(pi->devices[j]->state) +
                 wv_blk_size(pi->devices[j]->detail);
  }
  return bytes;
}

static void cst_pack(wv_blk *b, wave_pack_info *d, const Wave__V1__PackInfo *pi)
{
  d->name = wv_blk_str(b, pi->name);
  d->version = pi->version;
  d->dataset_bytes = pi->dataset_bytes;
  d->description = wv_blk_str(b, pi->description);
  d->devices = wv_blk_take(b, pi->n_devices * sizeof *d->devices);
  for (size_t j = 0; j < pi->n_devices; j++) {
    const Wave__V1__PackCheck *pc = pi->devices[j];
    if (pc == NULL)
      continue;
    wave_pack_device *pd = &d->devices[d->n_devices++];
    pd->device = wv_blk_str(b, pc->device);
    pd->ok = pc->ok != 0;
    pd->state = wv_blk_str(b, pc->state);
    pd->detail = wv_blk_str(b, pc->detail);
  }
}

int wave_packs_get(wave_client *c, wave_pack_info **packs, size_t *n_packs,
                   wave_error *err)
{
  if (c == NULL || packs == NULL || n_packs == NULL)
    return wv_seterr(err, WAVE_EARG, "wave_packs_get: NULL argument");
  *packs = NULL;
  *n_packs = 0;
  Wave__V1__PacksRequest pr = WAVE__V1__PACKS_REQUEST__INIT;
  Wave__V1__Request r = WAVE__V1__REQUEST__INIT;
  r.body_case = WAVE__V1__REQUEST__BODY_PACKS;
  r.packs = &pr;

  Wave__V1__Response *resp;
  int rv = wv_client_call(c, &r, WAVE__V1__RESPONSE__BODY_PACKS, 0, &resp,
                          err);
  if (rv != 0)
    return rv;
  const Wave__V1__PacksReply *pl = resp->packs;
  size_t n = pl ? pl->n_packs : 0;
  /* The array comes first in the block, so wave_packs_free(array) frees
   * the devices and strings with it. */
  size_t bytes = cst_packs_size(pl, n);
  wv_blk b = {malloc(bytes), NULL};
  if (b.at == NULL) {
    wave__v1__response__free_unpacked(resp, NULL);
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  }
  b.end = b.at + bytes;
  wave_pack_info *p = wv_blk_take(&b, (n ? n : 1) * sizeof *p);
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (pl->packs[i] != NULL)
      cst_pack(&b, &p[k++], pl->packs[i]);
  wave__v1__response__free_unpacked(resp, NULL);
  *packs = p;
  *n_packs = k;
  return 0;
}

void wave_packs_free(wave_pack_info *packs)
{
  free(packs);
}
