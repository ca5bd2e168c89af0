/* reload.c - see reload.h.
 *
 * A reload is a small state machine on the loop (rl_run, one at a time; a
 * SIGHUP meanwhile queues one more):
 *   rl_start -> [thread pool] rl_load_work: config + packs files
 *   -> rl_loaded: the refused keys; which packs are new -> one wd_prep per
 *      hash device and new pack (device threads; they take turns with the
 *      running hash job, device.c) -> rl_prep_ended, counting down
 *   -> rl_apply: any pack failed?  metrics endpoint, new listeners (all or
 *      none, listen.c) -> swap: config, packs, log level -> rl_end.
 * Every fallible step comes before the swap, so a failure anywhere leaves
 * the old configuration serving; the swap itself is pointer assignments.
 *
 * Packs.  A pack whose content (every field the hash is made of:
 * wv_pack_equal, workers/hash/) equals a serving one keeps that object and its slot (its per-device check state
 * and hash rate), as does one equal to a pack served before (sv->known:
 * a reload undone); a new or changed pack gets a new slot on every device
 * (wd_packstate_add_packs) and is prepared and self-checked there before
 * anything is swapped.  A hash job holds its pack pointer and slot from
 * submission, so a job running across a reload finishes on the pack it
 * started with.  Why no reference count frees an old pack when its last
 * job ends: the GPU backends keep a pack's prepared dataset keyed by the
 * pack's address until the device closes (worker.h has no slot to release
 * one), so a freed pack whose address a later one reused would be served
 * the wrong dataset.  Old packs (and their prepared datasets) therefore
 * live until exit, like the configs: a reload that changes packs costs
 * their memory; unchanged packs cost nothing.
 *
 * Why devices are still refused: a device's thread, queues and backend
 * context are made at start-up and jobs, regions and pins point at it;
 * adding one is feasible, but removing one while its jobs and pinned
 * regions are in flight needs a drain protocol that does not exist yet
 * (docs/service.md), so device changes fail the reload and name the key.
 * ipc_mode, limits.contexts and limits.jobs_in_flight size the socket and
 * the device queues and are refused likewise.  Which keys those are is the
 * key table's reload column (config.c), which wd_config_reload_check walks.
 *
 * Reloaded configs are kept until wd_service_free: the listeners keep
 * pointers into the config they started with (their URLs), and the server
 * points at the newest one.  A reload whose file says what the serving
 * config says (wd_config_same: every key, token secrets, positions) keeps
 * serving that one and frees what it read, so reloading an unchanged file
 * costs no memory; the log line of each reload says how many configs and
 * pack sets are kept (the start-up ones included).
 */
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <systemd/sd-daemon.h>

#include "daemon/token.h"
#include "daemon/exec/device.h"
#include "daemon/log.h"
#include "daemon/jobs/packprep.h"
#include "daemon/reload.h"
#include "daemon/stats.h"
#include "core/base.h"
#include "core/thread.h"
#include "workers/hash/pack.h"

/* A reload's packs, kept until wd_service_free. */
typedef struct rl_gen {
  wv_packset *set;
  const wv_pack *const *list;  /* from set, or kept from an older gen */
  size_t *slot;
  wd_packs packs;
} rl_gen;

/* A pack served at some time, and its slot: prepared on the devices. */
typedef struct rl_known {
  const wv_pack *pack;
  size_t slot;
} rl_known;

/* One reload under way (at most one: SIGHUPs meanwhile queue another). */
typedef struct rl_run {
  wd_service *sv;
  uv_work_t work;
  int rc;                    /* rl_load_work's */
  wave_error err;
  wd_config *nc;
  wv_packset *set;
  wd_packs np;               /* what nc names, as loaded */
  size_t *slot;              /* np's slots */
  unsigned char *fresh;      /* np.list[k] is new (to prepare) */
  int packs_changed;
  wd_prep *preps;            /* devices x fresh packs */
  wd_device **prep_dev;
  size_t n_preps, preps_left;
} rl_run;

struct wd_service {
  uv_loop_t *loop;
  const char *path;
  wd_server *srv;
  const wd_config *cfg;      /* serving */
  wd_config **owned;         /* reloaded configs */
  size_t n_owned;
  rl_gen **gens;             /* reloaded packs */
  size_t n_gens;
  size_t n_slots;            /* pack slots given out on the devices */
  rl_known *known;           /* every pack served so far */
  size_t n_known;
  rl_run *run;
  int again, closed;
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
  packs->slot = NULL;
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
      free(list);  /* *set: the caller frees it */
      /* where the name is, as every other config error says */
      unsigned line = cfg->packs_load_at ? cfg->packs_load_at[i][0] : 1;
      unsigned col = cfg->packs_load_at ? cfg->packs_load_at[i][1] : 1;
      return wv_seterr(err, WAVE_ECONFIG, "%s:%u:%u: packs.load[%zu]: no "
                       "pack named '%s' in %s", cfg->path, line, col, i,
                       cfg->packs_load[i], cfg->packs_dir);
    }
  }
  packs->list = list;
  packs->n = n;
  packs->slot = NULL;
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

/* A changed key that takes effect only at the next start (the key
 * table's reload column, config.c): said once per reload. */
static void rl_later(void *arg, const char *key, const char *why)
{
  const wd_config *nc = arg;
  wd_warn("%s: %s changed; %s, so the new value takes effect when wavedd "
          "restarts", nc->path, key, why);
}

/* 0 when nc differs from oc only in what a reload applies (or takes for
 * the next start): the key table's reload column decides. */
static int rl_check(const wd_config *oc, const wd_config *nc, wave_error *err)
{
  return wd_config_reload_check(oc, nc, rl_later, (void *)nc, err);
}

/* ---- one reload, step by step -------------------------------------------------- */

static void rl_start(wd_service *sv);

static void rl_free(rl_run *r)
{
  if (r == NULL)
    return;
  wd_packs_free(r->set, &r->np);
  free(r->slot);
  free(r->fresh);
  free(r->preps);
  free(r->prep_dev);
  wd_config_free(r->nc);
  free(r);
}

/* The outcome: logged, counted, told to systemd; then the next SIGHUP's
 * reload if one came meanwhile. */
static void rl_end(rl_run *r, int rc)
{
  wd_service *sv = r->sv;
  sv->run = NULL;
  int ready = wd_server_ready(sv->srv);
  char status[400];
  if (rc == 0) {
    wd_info("reloaded %s: log_level %s; limits, listen, packs and metrics "
            "applied; configs kept: %zu, pack sets kept: %zu", sv->path,
            wd_log_level_name(sv->cfg->log_level), sv->n_owned + 1,
            sv->n_gens + 1);
    snprintf(status, sizeof status, "%sSTATUS=serving; reloaded %s",
             ready ? "READY=1\n" : "", sv->path);
  } else {
    wd_error("reload failed, the old configuration keeps serving: %s",
             r->err.message);
    snprintf(status, sizeof status, "%sSTATUS=serving; last reload "
             "failed: %.300s", ready ? "READY=1\n" : "", r->err.message);
  }
  wd_stats_reload(rc == 0);
  rl_free(r);
  if (!sv->closed && !wd_server_stopping(sv->srv))
    wd_notify(status);
  if (sv->again && !sv->closed && !wd_server_stopping(sv->srv)) {
    sv->again = 0;
    rl_start(sv);
  }
}

/* Every check passed and every new pack is prepared: the last fallible
 * steps (the metrics endpoint, the new listeners), then the swap. */
static void rl_apply(rl_run *r)
{
  wd_service *sv = r->sv;
  wave_error *err = &r->err;
  if (sv->closed || wd_server_stopping(sv->srv))
    return rl_end(r, wv_seterr(err, WAVE_ESHUTDOWN, "the daemon is stopping"));
  /* a pack that failed on a device fails the reload (a faulted device is
   * left out, as at start-up) */
  for (size_t i = 0; i < r->n_preps; i++) {
    wd_prep *p = &r->preps[i];
    if (p->work.rc == 0 || p->work.rc == WAVE_EDEVFAULT)
      continue;
    wd_pack_state st = {0};
    wd_packstate_get(wd_server_packstate(sv->srv),
                     wd_device_index(r->prep_dev[i]), p->index, &st);
    return rl_end(r, wv_seterr(err, WAVE_ECONFIG, "%s: packs: pack %s (%s) "
                               "failed on device %s: %s", r->nc->path,
                               wv_pack_name(p->pack), p->pack->path,
                               wd_device_name(r->prep_dev[i]),
                               st.detail[0] ? st.detail : p->work.err.message));
  }
  wd_config **owned = realloc(sv->owned, (sv->n_owned + 1) * sizeof *owned);
  if (owned == NULL)
    return rl_end(r, wv_seterr(err, WAVE_ENOMEM, NULL));
  sv->owned = owned;
  rl_gen **gens = realloc(sv->gens, (sv->n_gens + 1) * sizeof *gens);
  if (gens == NULL)
    return rl_end(r, wv_seterr(err, WAVE_ENOMEM, NULL));
  sv->gens = gens;
  rl_known *known = realloc(sv->known,
                            (sv->n_known + r->np.n + 1) * sizeof *known);
  if (known == NULL)
    return rl_end(r, wv_seterr(err, WAVE_ENOMEM, NULL));
  sv->known = known;
  rl_gen *g = NULL;
  if (r->packs_changed && (g = calloc(1, sizeof *g)) == NULL)
    return rl_end(r, wv_seterr(err, WAVE_ENOMEM, NULL));
  /* an unchanged file: the serving config stays and the copy just read
   * goes (rl_free), so a reload of it keeps nothing */
  const wd_config *nc = wd_config_same(sv->cfg, r->nc) ? sv->cfg : r->nc;
  wd_metrics *nm = NULL;
  int rc;
  int move_metrics = strcmp(nc->metrics, sv->cfg->metrics) != 0;
  if (move_metrics && nc->metrics[0] != '\0' &&
      (rc = wd_metrics_start(sv->loop, sv->srv, nc->metrics, &nm, err)) != 0) {
    free(g);
    return rl_end(r, rc);
  }
  size_t bad = 0;
  if ((rc = wd_server_relisten(sv->srv, nc, &bad, err)) != 0) {
    wd_metrics_close(nm);
    free(g);
    if (bad < nc->n_listen && nc->listen_at != NULL) {
      char msg[sizeof err->message];
      snprintf(msg, sizeof msg, "%s", err->message);
      wv_seterr(err, rc, "%s:%u:%u: listen[%zu]: %s", nc->path,
                nc->listen_at[bad][0], nc->listen_at[bad][1], bad, msg);
    }
    return rl_end(r, rc);
  }
  /* nothing fails from here on */
  if (nc == r->nc) {
    sv->owned[sv->n_owned++] = r->nc;
    r->nc = NULL;
  }
  if (move_metrics) {
    wd_metrics_close(sv->metrics);
    sv->metrics = nm;
  }
  if (g != NULL) {
    g->set = r->set;
    g->list = r->np.list;
    g->slot = r->slot;
    g->packs = (wd_packs){.list = g->list, .n = r->np.n, .slot = g->slot};
    r->set = NULL;
    r->np.list = NULL;
    r->np.n = 0;
    r->slot = NULL;
    sv->gens[sv->n_gens++] = g;
    for (size_t k = 0; k < g->packs.n; k++)
      if (r->fresh[k])
        sv->known[sv->n_known++] = (rl_known){g->list[k], g->slot[k]};
    wd_server_set_packs(sv->srv, &g->packs);
    for (size_t k = 0; k < g->packs.n; k++)
      wd_info("serving pack %s version %u (%s)", wv_pack_name(g->list[k]),
              wv_pack_version(g->list[k]),
              r->fresh[k] ? "new, prepared on the devices" : "unchanged");
  }
  wd_log_set_level(nc->log_level);
  wd_server_reconfigure(sv->srv, nc);
  sv->cfg = nc;
  rl_end(r, 0);
}

/* Loop thread: one device is done with one new pack. */
static void rl_prep_ended(void *arg, wd_prep *p)
{
  rl_run *r = arg;
  (void)p;  /* a new slot: no job waits for it before the swap */
  if (--r->preps_left == 0)
    rl_apply(r);
}

/* Loop thread: the file and its packs are loaded (rl_load_work); compare
 * them with what serves, then prepare the new packs on every device. */
static void rl_loaded(uv_work_t *w, int status)
{
  rl_run *r = w->data;
  wd_service *sv = r->sv;
  wave_error *err = &r->err;
  (void)status;
  if (r->rc != 0)
    return rl_end(r, r->rc);
  if (sv->closed || wd_server_stopping(sv->srv))
    return rl_end(r, wv_seterr(err, WAVE_ESHUTDOWN, "the daemon is stopping"));
  int rc;
  if ((rc = rl_check(sv->cfg, r->nc, err)) != 0)
    return rl_end(r, rc);
  /* packs: an unchanged one keeps its object and slot; a new or changed
   * one gets a new slot and is prepared on every device first */
  const wd_packs *op = wd_server_packs(sv->srv);
  size_t n = r->np.n;
  r->slot = calloc(n + 1, sizeof *r->slot);
  r->fresh = calloc(n + 1, sizeof *r->fresh);
  if (r->slot == NULL || r->fresh == NULL)
    return rl_end(r, wv_seterr(err, WAVE_ENOMEM, NULL));
  size_t n_fresh = 0;
  r->packs_changed = n != op->n;
  for (size_t k = 0; k < n; k++) {
    const wv_pack **list = (const wv_pack **)r->np.list;
    size_t m = 0;
    while (m < op->n && !wv_pack_equal(op->list[m], list[k]))
      m++;
    size_t o = 0;  /* or one served before (a reload undone) */
    while (m == op->n && o < sv->n_known &&
           !wv_pack_equal(sv->known[o].pack, list[k]))
      o++;
    if (m < op->n) {
      list[k] = op->list[m];  /* the serving object: prepared already */
      r->slot[k] = wd_packs_slot(op, m);
      if (m != k)
        r->packs_changed = 1;
    } else if (o < sv->n_known) {
      list[k] = sv->known[o].pack;
      r->slot[k] = sv->known[o].slot;
      r->packs_changed = 1;
    } else {
      r->fresh[k] = 1;
      r->slot[k] = sv->n_slots + n_fresh++;
      r->packs_changed = 1;
    }
  }
  if (n_fresh == 0)
    return rl_apply(r);
  size_t nd = 0;
  wd_device *const *devs = wd_server_devices(sv->srv, &nd);
  sv->n_slots += n_fresh;  /* given out: a failed reload leaves them unused */
  r->preps = calloc(nd * n_fresh + 1, sizeof *r->preps);
  r->prep_dev = calloc(nd * n_fresh + 1, sizeof *r->prep_dev);
  if (r->preps == NULL || r->prep_dev == NULL)
    return rl_end(r, wv_seterr(err, WAVE_ENOMEM, NULL));
  if ((rc = wd_packstate_add_packs(wd_server_packstate(sv->srv), sv->n_slots,
                                   err)) != 0)
    return rl_end(r, rc);
  /* count them all before the first can come back */
  for (size_t i = 0; i < nd; i++) {
    if (!wd_device_has_hash(devs[i]))
      continue;
    for (size_t k = 0; k < n; k++) {
      if (!r->fresh[k])
        continue;
      wd_prep *p = &r->preps[r->n_preps];
      p->pack = r->np.list[k];
      p->index = r->slot[k];
      p->ended = rl_prep_ended;
      p->arg = r;
      r->prep_dev[r->n_preps++] = devs[i];
      wd_info("device %s: preparing pack %s version %u (reload)",
              wd_device_name(devs[i]), wv_pack_name(p->pack),
              wv_pack_version(p->pack));
    }
  }
  if (r->n_preps == 0)
    return rl_apply(r);
  r->preps_left = r->n_preps + 1;  /* + 1: held while submitting */
  for (size_t i = 0; i < r->n_preps; i++) {
    wave_error e = {0};
    int src = wd_prep_submit(wd_server_packstate(sv->srv), r->prep_dev[i],
                             &r->preps[i], &e);
    if (src != 0) {
      r->preps[i].work.rc = src;
      r->preps[i].work.err = e;
      r->preps_left--;
    }
  }
  rl_prep_ended(r, NULL);  /* the hold */
}

/* libuv's thread pool, never the loop: read the file and its packs. */
static void rl_load_work(uv_work_t *w)
{
  rl_run *r = w->data;
  r->rc = wd_config_load(r->sv->path, &r->nc, &r->err);
  if (r->rc == 0)  /* a generated token file removed since: made again */
    r->rc = wd_token_generate(r->nc, &r->err);
  if (r->rc == 0)
    r->rc = wd_packs_load(r->nc, &r->set, &r->np, &r->err);
}

static void rl_start(wd_service *sv)
{
  rl_run *r = calloc(1, sizeof *r);
  if (r == NULL) {
    wd_error("reload failed: out of memory");
    wd_stats_reload(0);
    return;
  }
  r->sv = sv;
  r->work.data = r;
  sv->run = r;
  int ready = wd_server_ready(sv->srv);
  /* before READY (packs still being prepared) systemd hears only STATUS */
  sd_notifyf(0, "%sSTATUS=reloading %s", ready ? "RELOADING=1\n" : "",
             sv->path);
  /* libuv starts its pool on the first call: its threads get no signals */
  int rv;
  WV_MASKED(rv = uv_queue_work(sv->loop, &r->work, rl_load_work, rl_loaded));
  if (rv != 0)
    rl_end(r, wv_seterr(&r->err, WAVE_EIO, "reload: %s", uv_strerror(rv)));
}

void wd_service_reload(wd_service *sv)
{
  if (sv->closed)
    return;
  if (sv->run != NULL) {  /* one at a time; this one follows */
    wd_info("a reload is under way; another follows it");
    sv->again = 1;
    return;
  }
  rl_start(sv);
}

/* ---- signals and the watchdog ------------------------------------------------- */

static void rl_sighup(uv_signal_t *h, int signum)
{
  wd_service *sv = h->data;
  (void)signum;
  wd_info("SIGHUP received: reloading %s", sv->path);
  wd_service_reload(sv);
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
  const wd_packs *packs = wd_server_packs(srv);
  sv->n_slots = packs->n;
  *out = sv;
  if ((sv->known = calloc(packs->n + 1, sizeof *sv->known)) == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  for (size_t k = 0; k < packs->n; k++)
    sv->known[sv->n_known++] = (rl_known){packs->list[k],
                                          wd_packs_slot(packs, k)};
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
  sv->closed = 1;
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
  rl_free(sv->run);  /* a reload the stop cut short */
  for (size_t i = 0; i < sv->n_owned; i++)
    wd_config_free(sv->owned[i]);
  free(sv->owned);
  for (size_t i = 0; i < sv->n_gens; i++) {
    rl_gen *g = sv->gens[i];
    wd_packs tmp = {.list = g->list, .n = g->packs.n};
    wd_packs_free(g->set, &tmp);
    free(g->slot);
    free(g);
  }
  free(sv->gens);
  free(sv->known);
  free(sv);
}
