/* reload.c - see reload.h.
 *
 * Why refuse rather than half-apply: the devices were opened and
 * self-checked against the packs at start-up, the nng contexts and the
 * per-device job slots were sized from limits, and the listeners own their
 * URLs and socket files.  Re-seating any of those while requests are in
 * flight is a restart in all but name, so a reload that changes them
 * fails, names the key, and changes nothing; the operator restarts.  What
 * is applied is read by the loop per request (limits, log level) or is ours
 * alone (metrics), so swapping it between two callbacks is safe.
 *
 * Reloaded configs are kept until wd_service_free: the listeners keep
 * pointers into the config they started with (their URLs), and the server
 * points at the newest one.  A reload costs a few KiB that live until exit.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <systemd/sd-daemon.h>

#include "daemon/log.h"
#include "daemon/reload.h"
#include "daemon/stats.h"
#include "proto/base.h"

struct wd_service {
  uv_loop_t *loop;
  const char *path;
  wd_server *srv;
  const wd_config *cfg;      /* serving */
  wd_config **owned;         /* reloaded configs */
  size_t n_owned;
  wd_metrics *metrics;
  uv_signal_t sighup, sigquit;
  uv_timer_t watchdog;
  int watchdog_on;
  int open_handles;
};

/* ---- packs ----------------------------------------------------------------- */

int wd_packs_load(const wd_config *cfg, wv_packset **set, wd_packs *packs,
                  wave_error *err)
{
  *set = NULL;
  packs->list = NULL;
  packs->n = 0;
  struct stat st;
  if (stat(cfg->packs_dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    if (cfg->packs_dir_set || (!cfg->packs_all && cfg->n_packs_load > 0))
      return wv_seterr(err, WAVE_ECONFIG, "%s:%zu:%zu: %s: %s is not a "
                       "folder", cfg->path, cfg->packs_line, cfg->packs_col,
                       cfg->packs_dir_set ? "packs.dir" : "packs.load",
                       cfg->packs_dir);
    wd_info("no packs folder %s: hash jobs have no packs", cfg->packs_dir);
    return 0;
  }
  int rc = wv_packset_load(cfg->packs_dir, set, err);
  if (rc != 0)
    return rc;
  size_t n = cfg->packs_all ? wv_packset_count(*set) : cfg->n_packs_load;
  const wv_pack **list = calloc(n + 1, sizeof *list);
  if (list == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  for (size_t i = 0; i < n; i++) {
    list[i] = cfg->packs_all ? wv_packset_at(*set, i)
                             : wv_packset_find(*set, cfg->packs_load[i]);
    if (list[i] == NULL) {
      free(list);
      return wv_seterr(err, WAVE_ECONFIG, "%s: packs.load: no pack named "
                       "'%s' in %s", cfg->path, cfg->packs_load[i],
                       cfg->packs_dir);
    }
  }
  packs->list = list;
  packs->n = n;
  return 0;
}

void wd_packs_free(wv_packset *set, wd_packs *packs)
{
  free((void *)packs->list);
  packs->list = NULL;
  packs->n = 0;
  wv_packset_free(set);
}

/* ---- what a reload may change ------------------------------------------------ */

static int rl_same_device(const wd_device_cfg *a, const wd_device_cfg *b)
{
  /* every field of wd_device_cfg (config.h): a new one belongs here */
  return strcmp(a->name, b->name) == 0 && strcmp(a->backend, b->backend) == 0 &&
         a->index == b->index && a->platform == b->platform &&
         strcmp(a->device, b->device) == 0 && a->threads == b->threads &&
         a->queue_depth == b->queue_depth &&
         strcmp(a->exchange, b->exchange) == 0 &&
         a->group_units == b->group_units && a->batch == b->batch;
}

static int rl_same_packs(const wd_packs *a, const wd_packs *b)
{
  if (a->n != b->n)
    return 0;
  for (size_t i = 0; i < a->n; i++) {
    const wv_pack *p = a->list[i], *q = b->list[i];
    if (strcmp(wv_pack_name(p), wv_pack_name(q)) != 0 ||
        wv_pack_version(p) != wv_pack_version(q) ||
        wv_pack_dataset_bytes(p) != wv_pack_dataset_bytes(q) ||
        strcmp(wv_pack_description(p), wv_pack_description(q)) != 0)
      return 0;
  }
  return 1;
}

/* 0 when nc differs from oc only in what a reload applies. */
static int rl_check(const wd_config *oc, const wd_config *nc,
                    const wd_packs *op, const wd_packs *np, wave_error *err)
{
  const char *f = nc->path;
  if (nc->n_devices != oc->n_devices)
    return wv_seterr(err, WAVE_ECONFIG, "%s: devices: %zu devices instead "
                     "of %zu; a reload cannot add or remove devices "
                     "(restart wavedd)", f, nc->n_devices, oc->n_devices);
  for (size_t i = 0; i < nc->n_devices; i++)
    if (!rl_same_device(&oc->devices[i], &nc->devices[i]))
      return wv_seterr(err, WAVE_ECONFIG, "%s: devices[%zu] (%s) changed; a "
                       "reload cannot change devices (restart wavedd)", f, i,
                       nc->devices[i].name);
  int listen_same = nc->n_listen == oc->n_listen;
  for (size_t i = 0; listen_same && i < nc->n_listen; i++)
    listen_same = strcmp(nc->listen[i], oc->listen[i]) == 0;
  if (!listen_same)
    return wv_seterr(err, WAVE_ECONFIG, "%s: listen changed; a reload "
                     "cannot move the listeners (restart wavedd)", f);
  if (nc->ipc_mode != oc->ipc_mode)
    return wv_seterr(err, WAVE_ECONFIG, "%s: ipc_mode changed; a reload "
                     "cannot change the socket file (restart wavedd)", f);
  if (nc->limits.contexts != oc->limits.contexts)
    return wv_seterr(err, WAVE_ECONFIG, "%s: limits.contexts changed; a "
                     "reload cannot resize the socket (restart wavedd)", f);
  if (nc->limits.jobs_in_flight != oc->limits.jobs_in_flight)
    return wv_seterr(err, WAVE_ECONFIG, "%s: limits.jobs_in_flight "
                     "changed; a reload cannot resize the device queues "
                     "(restart wavedd)", f);
  if (!rl_same_packs(op, np))
    return wv_seterr(err, WAVE_ECONFIG, "%s: packs: the packs changed (%zu "
                     "now, %zu serving); the devices check packs at "
                     "start-up only (restart wavedd)", f, np->n, op->n);
  return 0;
}

int wd_service_reload(wd_service *sv, wave_error *err)
{
  wd_config *nc = NULL;
  wv_packset *set = NULL;
  wd_packs np = {0};
  wd_metrics *nm = NULL;
  int rc;
  if ((rc = wd_config_load(sv->path, &nc, err)) != 0)
    goto fail;
  if ((rc = wd_packs_load(nc, &set, &np, err)) != 0)
    goto fail;
  if ((rc = rl_check(sv->cfg, nc, wd_server_packs(sv->srv), &np, err)) != 0)
    goto fail;
  wd_packs_free(set, &np);  /* the same as those serving */
  set = NULL;
  int move_metrics = strcmp(nc->metrics, sv->cfg->metrics) != 0;
  if (move_metrics && nc->metrics[0] != '\0' &&
      (rc = wd_metrics_start(sv->loop, sv->srv, nc->metrics, &nm, err)) != 0)
    goto fail;
  wd_config **owned = realloc(sv->owned, (sv->n_owned + 1) * sizeof *owned);
  if (owned == NULL) {
    wd_metrics_close(nm);
    rc = wv_seterr(err, WAVE_ENOMEM, NULL);
    goto fail;
  }
  sv->owned = owned;
  sv->owned[sv->n_owned++] = nc;
  /* all checked: apply */
  if (move_metrics) {
    wd_metrics_close(sv->metrics);
    sv->metrics = nm;
  }
  wd_log_set_level(nc->log_level);
  wd_server_reconfigure(sv->srv, nc);
  sv->cfg = nc;
  wd_stats_reload(1);
  return 0;
fail:
  wd_packs_free(set, &np);
  wd_config_free(nc);
  wd_stats_reload(0);
  return rc;
}

/* ---- signals and the watchdog ------------------------------------------------- */

static void rl_sighup(uv_signal_t *h, int signum)
{
  wd_service *sv = h->data;
  (void)signum;
  wd_info("SIGHUP received: reloading %s", sv->path);
  /* before READY (packs still being prepared) systemd hears only STATUS */
  int ready = wd_server_ready(sv->srv);
  sd_notifyf(0, "%sSTATUS=reloading %s", ready ? "RELOADING=1\n" : "",
             sv->path);
  wave_error err = {0};
  char status[400];
  if (wd_service_reload(sv, &err) == 0) {
    wd_info("reloaded %s: log_level %s, limits and metrics applied",
            sv->path, wd_log_level_name(sv->cfg->log_level));
    snprintf(status, sizeof status, "%sSTATUS=serving; reloaded %s",
             ready ? "READY=1\n" : "", sv->path);
  } else {
    wd_error("reload failed, the old configuration keeps serving: %s",
             err.message);
    snprintf(status, sizeof status, "%sSTATUS=serving; last reload "
             "failed: %.300s", ready ? "READY=1\n" : "", err.message);
  }
  wd_notify(status);
}

static void rl_sigquit(uv_signal_t *h, int signum)
{
  wd_service *sv = h->data;
  (void)signum;
  wd_info("SIGQUIT received");
  wd_server_stop(sv->srv);
}

static void rl_watchdog(uv_timer_t *t)
{
  (void)t;
  wd_notify("WATCHDOG=1");
}

int wd_service_start(uv_loop_t *loop, const char *path, const wd_config *cfg,
                     wd_server *srv, wd_service **out, wave_error *err)
{
  *out = NULL;
  wd_service *sv = calloc(1, sizeof *sv);
  if (sv == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  sv->loop = loop;
  sv->path = path;
  sv->srv = srv;
  sv->cfg = cfg;
  *out = sv;
  uv_signal_init(loop, &sv->sighup);
  uv_signal_init(loop, &sv->sigquit);
  sv->sighup.data = sv->sigquit.data = sv;
  uv_signal_start(&sv->sighup, rl_sighup, SIGHUP);
  uv_signal_start(&sv->sigquit, rl_sigquit, SIGQUIT);
  uv_unref((uv_handle_t *)&sv->sighup);
  uv_unref((uv_handle_t *)&sv->sigquit);
  uv_timer_init(loop, &sv->watchdog);
  uv_unref((uv_handle_t *)&sv->watchdog);
  sv->open_handles = 1;
  uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) {
    /* twice per period, as sd_watchdog_enabled(3) advises */
    uint64_t ms = usec / 2000 ? usec / 2000 : 1;
    uv_timer_start(&sv->watchdog, rl_watchdog, ms, ms);
    sv->watchdog_on = 1;
    wd_info("systemd watchdog: every %" PRIu64 " ms", ms);
  }
  if (cfg->metrics[0] != '\0')
    return wd_metrics_start(loop, srv, cfg->metrics, &sv->metrics, err);
  return 0;
}

wd_metrics *wd_service_metrics(wd_service *sv)
{
  return sv ? sv->metrics : NULL;
}

void wd_service_close(wd_service *sv)
{
  if (sv == NULL || !sv->open_handles)
    return;
  sv->open_handles = 0;
  wd_metrics_close(sv->metrics);
  sv->metrics = NULL;
  uv_close((uv_handle_t *)&sv->sighup, NULL);
  uv_close((uv_handle_t *)&sv->sigquit, NULL);
  uv_close((uv_handle_t *)&sv->watchdog, NULL);
}

void wd_service_free(wd_service *sv)
{
  if (sv == NULL)
    return;
  for (size_t i = 0; i < sv->n_owned; i++)
    wd_config_free(sv->owned[i]);
  free(sv->owned);
  free(sv);
}
