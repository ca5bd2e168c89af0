/* status.c - StatusRequest and PacksRequest: the StatusReply (devices,
 * their pack checks, listeners, regions, shares) and the PacksReply, built from
 * the devices' snapshots on the loop thread. */
#include <stdlib.h>
#include <string.h>

#include "daemon/net/connguard.h"
#include "daemon/net/front.h"
#include "daemon/rq/status.h"
#include "daemon/server_int.h"
#include "daemon/stats.h"
#include "core/base.h"

/* Pack k's self-check state on device d as a PackCheck; its strings point
 * into st, the pack and the device, which outlive the reply. */
static void ss_pack_check(Wave__V1__PackCheck *pc, wd_pack_state *st,
                          wd_packstate *ps, wd_device *d, size_t k,
                          const wv_pack *pack)
{
  wd_packstate_get(ps, wd_device_index(d), k, st);
  wave__v1__pack_check__init(pc);
  pc->pack = (char *)wv_pack_name(pack);
  pc->device = (char *)wd_device_name(d);
  pc->ok = st->state == WD_CHECK_OK;
  pc->state = (char *)wd_check_state_name(st->state);
  pc->detail = st->detail;
  pc->hash_rate = st->hash_rate;
}

/* Device i's health reading (kept in *hl, which outlives the reply). */
typedef struct ss_hl {
  wv_health h;
  char throttle[160];
  wd_guard_view g;
} ss_hl;

/* Device i's guards; 1 when one holds it. */
static int ss_guard(Wave__V1__DeviceStatus *ds, ss_hl *hl,
                    const wd_server *s, size_t i)
{
  wd_server_guards(s, i, &hl->g);
  ds->guard = (char *)hl->g.state;
  ds->guard_reason = hl->g.reason;
  ds->guard_throttles = hl->g.throttles;
  ds->max_temperature_c = hl->g.max_temperature_c;
  ds->resume_temperature_c = hl->g.resume_temperature_c;
  ds->max_power_w = hl->g.max_power_w;
  ds->watchdog_restarts = hl->g.restarts;
  return strcmp(hl->g.state, "throttled") == 0;
}

static void ss_health(Wave__V1__DeviceStatus *ds, ss_hl *hl,
                      const wd_server *s, size_t i)
{
  wd_server_health(s, i, &hl->h);
  const wv_health *h = &hl->h;
  ds->health_source = (char *)h->source;
  ds->health_note = (char *)h->why;
  ds->health_have = h->have;
  ds->temperature_c = h->temp_c;
  ds->power_w = h->power_w;
  ds->power_limit_w = h->power_limit_w;
  ds->sm_clock_mhz = h->sm_mhz;
  ds->mem_clock_mhz = h->mem_mhz;
  ds->throttle_reasons = h->throttle;
  wv_health_throttle_names(h->throttle, hl->throttle, sizeof hl->throttle);
  ds->throttle = hl->throttle;
  ds->memory_used = h->mem_used;
  ds->memory_total = h->mem_total;
  ds->utilization_pct = h->util_pct;
}

void wd_rq_status(wd_req *c)
{
  wd_server *s = c->call->srv;
  size_t nd = s->n_devs, np = s->packs->n;
  Wave__V1__DeviceStatus *ds = calloc(nd + 1, sizeof *ds);
  Wave__V1__DeviceStatus **dp = calloc(nd + 1, sizeof *dp);
  wd_device_snap *snap = calloc(nd + 1, sizeof *snap);
  wv_caps *caps = calloc(nd + 1, sizeof *caps);
  Wave__V1__PackCheck *pc = calloc(nd * np + 1, sizeof *pc);
  Wave__V1__PackCheck **pp = calloc(nd * np + 1, sizeof *pp);
  wd_pack_state *st = calloc(nd * np + 1, sizeof *st);
  ss_hl *hl = calloc(nd + 1, sizeof *hl);
  uint64_t *hashes = calloc(nd + 1, sizeof *hashes);
  double *rate = calloc(nd + 1, sizeof *rate);
  if (!ds || !dp || !snap || !caps || !pc || !pp || !st || !hl || !hashes ||
      !rate) {
    wd_reply_error(c, WAVE_ENOMEM, "no memory for the status reply");
    goto out;
  }
  uint32_t throttled = 0;
  for (size_t i = 0; i < nd; i++) {
    wd_device *d = s->devs[i];
    wd_device_caps(d, &caps[i]);
    wd_device_snapshot(d, &snap[i]);
    wave__v1__device_status__init(&ds[i]);
    ds[i].name = (char *)wd_device_name(d);
    ds[i].backend = (char *)wd_device_cfg_of(d)->backend;
    ds[i].description = caps[i].description;
    ds[i].queue_depth = snap[i].queued;
    ds[i].queue_capacity = snap[i].capacity;
    ds[i].jobs_done = snap[i].done;
    ds[i].jobs_failed = snap[i].failed;
    ds[i].jobs_cancelled = snap[i].cancelled;
    ds[i].queued_high = snap[i].level_queued[WD_LEVEL_HIGH];
    ds[i].queued_normal = snap[i].level_queued[WD_LEVEL_NORMAL];
    ds[i].queued_low = snap[i].level_queued[WD_LEVEL_LOW];
    ds[i].deadline_missed = snap[i].deadline;
    ds[i].busy_ms = (uint64_t)(snap[i].busy_s * 1e3);
    ss_health(&ds[i], &hl[i], s, i);
    throttled += (uint32_t)ss_guard(&ds[i], &hl[i], s, i);
    ds[i].faulted = snap[i].faulted;
    ds[i].fault = snap[i].fault;
    ds[i].running = snap[i].running;
    ds[i].wave_width = caps[i].wave_width;
    /* a device that never opened has no caps (not even a description)
     * and says no exchange, as before */
    ds[i].exchange = caps[i].description[0] != '\0'
                         ? (char *)wv_exchange_name(caps[i].exchange_mode)
                         : "";
    ds[i].exchange_reason = caps[i].exchange_reason;
    ds[i].n_packs = np;
    ds[i].packs = pp + i * np;
    for (size_t k = 0; k < np; k++) {
      size_t x = i * np + k;
      ss_pack_check(&pc[x], &st[x], s->packstate, d, wd_packs_slot(s->packs, k),
                    s->packs->list[k]);
      pp[x] = &pc[x];
    }
    dp[i] = &ds[i];
    /* a device the registry does not hold (past its 64) says 0 */
    wd_stats_hash_rate(wd_device_name(d), &hashes[i], &rate[i]);
  }
  Wave__V1__StatusReply sr = WAVE__V1__STATUS_REPLY__INIT;
  sr.version = (char *)WAVE_VERSION;
  sr.uptime_ms = (uv_hrtime() - s->t0) / 1000000u;
  sr.jobs_served = s->served;
  sr.jobs_failed = s->failed;
  sr.jobs_cancelled = s->cancelled;
  for (size_t i = 0; i < nd; i++)
    sr.jobs_deadline += snap[i].deadline;
  sr.n_devices = nd;
  sr.devices_throttled = throttled;
  sr.devices = dp;
  sr.n_device_hashes = sr.n_device_hash_rate = nd;
  sr.device_hashes = hashes;
  sr.device_hash_rate = rate;
  sr.listen = wd_listeners_urls(s->fe->lst, &sr.n_listen);
  uint64_t *lc = calloc(sr.n_listen + 1, sizeof *lc);
  if (lc != NULL) {  /* else the reply goes without them */
    for (size_t i = 0; i < sr.n_listen; i++)
      lc[i] = wd_listeners_conns(s->fe->lst, i);
    sr.listen_connections = lc;
    sr.n_listen_connections = sr.n_listen;
  }
  sr.instance = s->instance;
  sr.ready = wd_server_ready(s) != 0;
  sr.max_files = wd_max_files();
  wd_bulk_snap rsnap;
  /* regions and shares: the asker's own only (root over ipc: all) */
  wd_bulk_status(s->bulk, c->principal, &sr, &rsnap);
  Wave__V1__Response r = WAVE__V1__RESPONSE__INIT;
  r.body_case = WAVE__V1__RESPONSE__BODY_STATUS;
  r.status = &sr;
  wd_reply(c, &r);
  wd_bulk_snap_free(&rsnap);
  free(lc);
out:
  free(ds);
  free(dp);
  free(snap);
  free(caps);
  free(pc);
  free(pp);
  free(st);
  free(hl);
  free(hashes);
  free(rate);
}

void wd_rq_packs(wd_req *c)
{
  wd_server *s = c->call->srv;
  size_t nd = s->n_devs, np = s->packs->n;
  Wave__V1__PackInfo *pi = calloc(np + 1, sizeof *pi);
  Wave__V1__PackInfo **pip = calloc(np + 1, sizeof *pip);
  Wave__V1__PackCheck *pc = calloc(nd * np + 1, sizeof *pc);
  Wave__V1__PackCheck **pp = calloc(nd * np + 1, sizeof *pp);
  wd_pack_state *st = calloc(nd * np + 1, sizeof *st);
  if (!pi || !pip || !pc || !pp || !st) {
    wd_reply_error(c, WAVE_ENOMEM, "no memory for the packs reply");
    goto out;
  }
  for (size_t k = 0; k < np; k++) {
    const wv_pack *p = s->packs->list[k];
    wave__v1__pack_info__init(&pi[k]);
    pi[k].name = (char *)wv_pack_name(p);
    pi[k].version = wv_pack_version(p);
    pi[k].dataset_bytes = wv_pack_dataset_bytes(p);
    pi[k].description = (char *)wv_pack_description(p);
    pi[k].n_devices = nd;
    pi[k].devices = pp + k * nd;
    for (size_t i = 0; i < nd; i++) {
      size_t x = k * nd + i;
      ss_pack_check(&pc[x], &st[x], s->packstate, s->devs[i],
                    wd_packs_slot(s->packs, k), p);
      pp[x] = &pc[x];
    }
    pip[k] = &pi[k];
  }
  Wave__V1__PacksReply pr = WAVE__V1__PACKS_REPLY__INIT;
  pr.n_packs = np;
  pr.packs = pip;
  Wave__V1__Response r = WAVE__V1__RESPONSE__INIT;
  r.body_case = WAVE__V1__RESPONSE__BODY_PACKS;
  r.packs = &pr;
  wd_reply(c, &r);
out:
  free(pi);
  free(pip);
  free(pc);
  free(pp);
  free(st);
}
