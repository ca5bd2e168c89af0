/* config.c - devices.yaml -> wd_config (see config.h, docs/config.md).
 *
 * Every key the file may hold is one row of wd_cf_keys[] below: its section,
 * name, type, where it lands in the struct, bounds, default, and what a
 * SIGHUP reload does with a change (the reload column: LIVE, START or
 * REFUSE, config_keys.h; wd_config_reload_check walks it).  Defaults
 * are applied from the table, the YAML document is walked once against it,
 * and checks that need more than one value (unique device names, URLs and
 * pack names) run once their list is stored, by sorting (n log n: 100k
 * devices are a fraction of a second), each message still pointing at the
 * node that is wrong.  The result is a fresh struct, handed out only when
 * the whole file is valid: a bad file never leaves half a config behind.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/autodev.h"
#include "daemon/config.h"
#include "daemon/config_keys.h"
#include "daemon/net/tls.h"
#include "core/base.h"
#include "core/sockdir.h"
#include "core/yamlconf.h"
#include "workers/worker.h"  /* wv_exchange: cf_exchanges' order */

_Thread_local uint64_t wd_config_compares;


static const char *const cf_levels[] = {"error", "warn", "info", "debug", NULL};
/* stored as the index: wv_exchange's AUTO, SHUFFLE, LOCAL */
static const char *const cf_exchanges[] = {"auto", "shuffle", "local", NULL};
_Static_assert(WV_EXCHANGE_AUTO == 0 && WV_EXCHANGE_SHUFFLE == 1 &&
                   WV_EXCHANGE_LOCAL == 2,
               "cf_exchanges lists wv_exchange's config values in order");
static const char *const cf_bools[] = {"false", "true", NULL};
static const char *const cf_verify[] = {"none", "optional", "required", NULL};
static const char *const cf_prepare[] = {"startup", "first-use", NULL};

#define CFG wd_config
#define DEV wd_device_cfg
#define TOK wd_token_cfg
#define FLD(st, f) offsetof(st, f), sizeof(((st *)0)->f)
#define UINT(sec, st, key, f, lo, hi, d, rl)                                   \
  {sec, key, CF_UINT, FLD(st, f), lo, hi, d, NULL, NULL, 0, 0, NULL, rl}
/* the reload column (config_keys.h) */
#define LIVE CF_RL_LIVE, NULL
#define START(why) CF_RL_START, why
#define REFUSE(why) CF_RL_REFUSE, why
#define RL_DEVICES "a reload cannot change devices (restart wavedd; " \
  "docs/service.md says why)"
#define RL_REGIONS "the region table holds it from start-up"
#define RL_SHARES "the clients' shares hold it from start-up"

/* The one table: docs/config.md describes the same rows. */
const cf_key wd_cf_keys[] = {
  {CF_ROOT, "listen", CF_URLS, FLD(CFG, listen), 0, 0, 0, NULL, NULL, 0, 0, NULL, LIVE},
  {CF_ROOT, "ipc_mode", CF_MODE, FLD(CFG, ipc_mode), 0, 0777, 0660, NULL, NULL, 0, 0, NULL, REFUSE("a reload cannot change the socket file (restart wavedd)")},
  {CF_ROOT, "metrics", CF_STR, FLD(CFG, metrics), 0, 0, 0, "", NULL, 0, 0, wd_cf_check_metrics, LIVE},
  {CF_ROOT, "log_level", CF_ENUM, FLD(CFG, log_level), 0, 0, 0, "info", cf_levels, 0, 0, NULL, LIVE},
  {CF_ROOT, "allow_client_shm", CF_ENUM, FLD(CFG, allow_client_shm), 0, 0, 0, "true", cf_bools, 0, 0, NULL, START(RL_REGIONS)},
  {CF_ROOT, "limits", CF_SECTION, 0, 0, 0, 0, 0, NULL, NULL, 0, CF_LIMITS, NULL, LIVE},
  {CF_ROOT, "packs", CF_SECTION, 0, 0, 0, 0, 0, NULL, NULL, 0, CF_PACKS, NULL, LIVE},
  {CF_ROOT, "devices", CF_DEVICES, FLD(CFG, devices), 0, 0, 0, NULL, NULL, 1, 0, NULL, REFUSE("a reload cannot add or remove devices (restart wavedd; docs/service.md says why)")},
  {CF_ROOT, "tls", CF_SECTION, 0, 0, 0, 0, 0, NULL, NULL, 0, CF_TLS, NULL, LIVE},
  {CF_ROOT, "priority", CF_SECTION, 0, 0, 0, 0, 0, NULL, NULL, 0, CF_PRIO, NULL, LIVE},
  {CF_ROOT, "auth", CF_AUTHSEC, 0, 0, 0, 0, 0, NULL, NULL, 0, CF_AUTH, NULL, LIVE},

  UINT(CF_LIMITS, CFG, "max_request_bytes", limits.max_request_bytes, 4096, 1ull << 30, 64ull << 20, LIVE),
  UINT(CF_LIMITS, CFG, "max_job_rows", limits.max_job_rows, 1, 1ull << 32, 1ull << 28, LIVE),
  UINT(CF_LIMITS, CFG, "jobs_in_flight", limits.jobs_in_flight, 1, 65536, 64, REFUSE("a reload cannot resize the device queues (restart wavedd)")),
  UINT(CF_LIMITS, CFG, "client_jobs", limits.client_jobs, 1, 65536, 16, LIVE),
  UINT(CF_LIMITS, CFG, "keep_result_bytes", limits.keep_result_bytes, 0, 1ull << 40, 64ull << 20, LIVE),
  UINT(CF_LIMITS, CFG, "contexts", limits.contexts, 1, 4096, 64, REFUSE("a reload cannot resize the socket (restart wavedd)")),
  UINT(CF_LIMITS, CFG, "max_outputs", limits.max_outputs, 0, 1u << 20, 1u << 16, LIVE),
  UINT(CF_LIMITS, CFG, "max_winners", limits.max_winners, 0, 1u << 16, 4096, LIVE),
  UINT(CF_LIMITS, CFG, "max_wait_ms", limits.max_wait_ms, 0, 50000, 10000, LIVE),
  UINT(CF_LIMITS, CFG, "keep_jobs", limits.keep_jobs, 0, 65536, 256, LIVE),
  UINT(CF_LIMITS, CFG, "keep_seconds", limits.keep_seconds, 0, 86400, 600, LIVE),
  UINT(CF_LIMITS, CFG, "decode_threads", limits.decode_threads, 1, 64, 2, START("the decode threads are started once")),
  UINT(CF_LIMITS, CFG, "max_stream_bytes", limits.max_stream_bytes, 0, 1ull << 40, 1ull << 31, START("the stream table and the shares hold it from start-up")),
  UINT(CF_LIMITS, CFG, "max_client_regions", limits.max_client_regions, 0, 4096, 16, START(RL_REGIONS)),
  UINT(CF_LIMITS, CFG, "max_region_bytes", limits.max_region_bytes, 0, 1ull << 44, 1ull << 36, START(RL_REGIONS)),
  /* each client's share: unset, a quarter of the total (cf_shares) */
  UINT(CF_LIMITS, CFG, "max_client_region_bytes", limits.max_client_region_bytes, 0, 1ull << 44, 1ull << 34, START(RL_SHARES)),
  UINT(CF_LIMITS, CFG, "max_client_stream_bytes", limits.max_client_stream_bytes, 0, 1ull << 40, 1ull << 29, START(RL_SHARES)),
  UINT(CF_LIMITS, CFG, "max_client_files", limits.max_client_files, 0, 65536, 64, START(RL_SHARES)),
  UINT(CF_LIMITS, CFG, "region_cache_bytes", limits.region_cache_bytes, 0, 1ull << 40, 1ull << 30, START(RL_REGIONS)),
  UINT(CF_LIMITS, CFG, "region_read_timeout_ms", limits.region_read_timeout_ms, 1, 3600000, 5000, LIVE),
  UINT(CF_LIMITS, CFG, "file_readers", limits.file_readers, 0, 64, 0, START("the reader pool is started once")),
  {CF_LIMITS, "staging_rings", CF_ENUM, FLD(CFG, limits.staging_rings), 0, 0, 0, "startup", cf_prepare, 0, 0, NULL, START("the rings are made as the devices open")},
  UINT(CF_LIMITS, CFG, "max_segments", limits.max_segments, 0, 1u << 24, 1u << 20, LIVE),
  UINT(CF_LIMITS, CFG, "max_parked", limits.max_parked, 0, 65536, 1024, LIVE),
  UINT(CF_LIMITS, CFG, "max_connections", limits.max_connections, 1, 65536, 256, LIVE),
  UINT(CF_LIMITS, CFG, "max_peer_requests", limits.max_peer_requests, 1, 4096, 16, LIVE),
  UINT(CF_LIMITS, CFG, "max_peer_parked", limits.max_peer_parked, 0, 65536, 256, LIVE),
  UINT(CF_LIMITS, CFG, "send_timeout_ms", limits.send_timeout_ms, 100, 600000, 10000, LIVE),
  UINT(CF_LIMITS, CFG, "idle_timeout_ms", limits.idle_timeout_ms, 0, 86400000, 120000, LIVE),
  UINT(CF_LIMITS, CFG, "slow_request_ms", limits.slow_request_ms, 0, 3600000, 0, LIVE),
  /* connguard.c: connections nng never ends (issue 22, finding 4) */
  UINT(CF_LIMITS, CFG, "tls_handshake_ms", limits.tls_handshake_ms, 0, 600000, 10000, LIVE),
  UINT(CF_LIMITS, CFG, "max_tls_handshakes", limits.max_tls_handshakes, 1, 65536, 64, LIVE),
  UINT(CF_LIMITS, CFG, "metrics_max_age_ms", limits.metrics_max_age_ms, 0, 86400000, 30000, LIVE),
  UINT(CF_LIMITS, CFG, "metrics_connections", limits.metrics_connections, 1, 4096, 16, LIVE),
  UINT(CF_LIMITS, CFG, "auth_failures", limits.auth_failures, 1, 1000, 5, LIVE),
  UINT(CF_LIMITS, CFG, "auth_failure_ms", limits.auth_failure_ms, 1, 3600000, 1000, LIVE),

  {CF_PRIO, "high_allow", CF_STR, FLD(CFG, prio.high_allow), 0, 0, 0, "", NULL, 0, 0, wd_cf_check_allow, LIVE},
  UINT(CF_PRIO, CFG, "high_max_queued", prio.max_queued[1], 0, 65536, 0, LIVE),
  UINT(CF_PRIO, CFG, "normal_max_queued", prio.max_queued[0], 0, 65536, 0, LIVE),
  UINT(CF_PRIO, CFG, "low_max_queued", prio.max_queued[2], 0, 65536, 0, LIVE),
  UINT(CF_PRIO, CFG, "high_deadline_ms", prio.deadline_ms[1], 0, 86400000, 0, LIVE),
  UINT(CF_PRIO, CFG, "normal_deadline_ms", prio.deadline_ms[0], 0, 86400000, 0, LIVE),
  UINT(CF_PRIO, CFG, "low_deadline_ms", prio.deadline_ms[2], 0, 86400000, 0, LIVE),

  {CF_TLS, "cert_file", CF_FILE, FLD(CFG, tls.cert_file), 0, 0, 0, "", NULL, 1, 0, NULL, LIVE},
  {CF_TLS, "key_file", CF_FILE, FLD(CFG, tls.key_file), 0, 0, 0, "", NULL, 1, 0, NULL, LIVE},
  {CF_TLS, "ca_file", CF_FILE, FLD(CFG, tls.ca_file), 0, 0, 0, "", NULL, 0, 0, NULL, LIVE},
  {CF_TLS, "verify", CF_ENUM, FLD(CFG, tls.verify), 0, 0, 0, "none", cf_verify, 0, 0, NULL, LIVE},

  {CF_AUTH, "tokens", CF_TOKENS, FLD(CFG, tokens), 0, 0, 0, NULL, NULL, 1, 0, NULL, LIVE},
  {CF_TOKEN, "name", CF_STR, FLD(TOK, name), 0, 0, 0, "", NULL, 1, 0, wd_cf_check_tokname, LIVE},
  {CF_TOKEN, "file", CF_FILE, FLD(TOK, file), 0, 0, 0, "", NULL, 1, 0, wd_cf_check_tokfile, LIVE},
  {CF_TOKEN, "generate", CF_ENUM, FLD(TOK, generate), 0, 0, 0, "false", cf_bools, 0, 0, NULL, LIVE},

  {CF_PACKS, "dir", CF_STR, FLD(CFG, packs_dir), 0, 0, 0, "packs", NULL, 0, 0, NULL, LIVE},
  {CF_PACKS, "load", CF_NAMES, FLD(CFG, packs_load), 0, 0, 0, NULL, NULL, 0, 0, NULL, LIVE},
  {CF_PACKS, "prepare", CF_ENUM, FLD(CFG, packs_prepare), 0, 0, 0, "startup", cf_prepare, 0, 0, NULL, REFUSE("it says what start-up does (restart wavedd)")},

  {CF_DEVICE, "name", CF_STR, FLD(DEV, name), 0, 0, 0, "", NULL, 1, 0, wd_cf_check_devname, REFUSE(RL_DEVICES)},
  {CF_DEVICE, "backend", CF_STR, FLD(DEV, backend), 0, 0, 0, "", NULL, 1, 0, wd_cf_check_backend, REFUSE(RL_DEVICES)},
  UINT(CF_DEVICE, DEV, "index", index, 0, 255, 0, REFUSE(RL_DEVICES)),
  UINT(CF_DEVICE, DEV, "platform", platform, 0, 255, 0, REFUSE(RL_DEVICES)),
  {CF_DEVICE, "device", CF_STR, FLD(DEV, device), 0, 0, 0, "", NULL, 0, 0, NULL, REFUSE(RL_DEVICES)},
  UINT(CF_DEVICE, DEV, "threads", threads, 0, 1024, 0, REFUSE(RL_DEVICES)),
  UINT(CF_DEVICE, DEV, "queue_depth", queue_depth, 1, 65536, 64, REFUSE(RL_DEVICES)),
  {CF_DEVICE, "exchange", CF_ENUM, FLD(DEV, exchange), 0, 0, 0, "auto", cf_exchanges, 0, 0, NULL, REFUSE(RL_DEVICES)},
  UINT(CF_DEVICE, DEV, "group_units", group_units, 0, 1024, 0, REFUSE(RL_DEVICES)),
  UINT(CF_DEVICE, DEV, "batch", batch, 0, 1ull << 32, 0, REFUSE(RL_DEVICES)),
  UINT(CF_DEVICE, DEV, "reduce_slice_rows", reduce_slice_rows, 0, 1ull << 48, 0, REFUSE(RL_DEVICES)),
  UINT(CF_DEVICE, DEV, "max_temperature_c", max_temperature_c, 0, 200, 0, LIVE),
  UINT(CF_DEVICE, DEV, "resume_temperature_c", resume_temperature_c, 0, 200, 0, LIVE),
  UINT(CF_DEVICE, DEV, "max_power_w", max_power_w, 0, 100000, 0, LIVE),
  UINT(CF_DEVICE, DEV, "watchdog_min_rate_pct", watchdog_min_rate_pct, 0, 100, 0, LIVE),
  UINT(CF_DEVICE, DEV, "watchdog_window_s", watchdog_window_s, 2, 3600, 10, LIVE),
  UINT(CF_DEVICE, DEV, "watchdog_windows", watchdog_windows, 1, 1000, 3, LIVE),
  UINT(CF_DEVICE, DEV, "watchdog_restarts", watchdog_restarts, 0, 1000, 3, LIVE),
};
#undef LIVE
#undef START
#undef REFUSE
#define CF_NKEYS (sizeof wd_cf_keys / sizeof wd_cf_keys[0])
const size_t wd_cf_nkeys = CF_NKEYS;

/* ---- messages ---------------------------------------------------------- */

static int cf_fail(cf_state *s, const yaml_node_t *at, const char *key,
                   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int cf_fail(cf_state *s, const yaml_node_t *at, const char *key,
                   const char *fmt, ...)
{
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return wv_yc_fail(s->y, at, key, "%s", what);
}

static void cf_store_uint(void *field, size_t size, uint64_t x)
{
  if (size == sizeof(uint64_t))
    *(uint64_t *)field = x;
  else
    *(unsigned *)field = (unsigned)x;
}

/* ---- per-value checks (the others are in config_check.c) ---------------- */

/* auth.tokens[].file is absent and generate: true: the daemon makes it at
 * start (wd_token_generate), so its folder must be there and writable by us
 * now; --check-config says so before the start does. */
static int cf_token_absent(cf_state *s, const yaml_node_t *at,
                           const char *path, const char *full)
{
  char dir[WD_PATH_MAX];
  snprintf(dir, sizeof dir, "%s", full);
  char *slash = strrchr(dir, '/');
  if (slash == dir)
    slash[1] = '\0';
  else if (slash != NULL)
    *slash = '\0';
  else
    snprintf(dir, sizeof dir, ".");
  if (access(dir, W_OK | X_OK) != 0)
    return cf_fail(s, at, path, "%s is absent and generate: true, but its "
                   "folder %s is not writable: %s", full, dir,
                   strerror(errno));
  s->cfg->tokens[s->tok].pending = 1;
  return 0;
}

/* ---- duplicates ---------------------------------------------------------- */

typedef struct cf_name {
  const char *s;
  size_t i;
} cf_name;

static int cf_name_cmp(const void *a, const void *b)
{
  const cf_name *x = a, *y = b;
  wd_config_compares++;
  int c = strcmp(x->s, y->s);
  return c ? c : (x->i > y->i) - (x->i < y->i);
}

/* The lowest index whose string an earlier entry already has: 1 with *dup
 * and *first (the earliest entry with that string) set, 0 when all are
 * unique, -1 out of memory.  Sorting by (string, index): O(n log n). */
static int cf_first_dup(const char *const *strs, size_t stride, size_t n,
                        size_t *dup, size_t *first)
{
  if (n < 2)
    return 0;
  cf_name *v = malloc(n * sizeof *v);
  if (v == NULL)
    return -1;
  for (size_t i = 0; i < n; i++)
    v[i] = (cf_name){*(const char *const *)((const char *)strs + i * stride),
                     i};
  qsort(v, n, sizeof *v, cf_name_cmp);
  int found = 0;
  for (size_t g = 0; g < n;) {  /* each run of equal strings */
    size_t e = g + 1;
    while (e < n && strcmp(v[e].s, v[g].s) == 0)
      e++;
    if (e - g > 1 && (!found || v[g + 1].i < *dup)) {
      *dup = v[g + 1].i;
      *first = v[g].i;
      found = 1;
    }
    g = e;
  }
  free(v);
  return found;
}

/* The value node of key in mapping map, or map. */
static yaml_node_t *cf_key_node(cf_state *s, yaml_node_t *map, const char *key)
{
  yaml_node_t *v = wv_yc_get(s->y, map, key);
  return v ? v : map;
}

/* ---- the walk ------------------------------------------------------------ */

static void cf_defaults(int sec, void *base)
{
  for (size_t k = 0; k < wd_cf_nkeys; k++) {
    const cf_key *e = &wd_cf_keys[k];
    if (e->sec != sec)
      continue;
    char *field = (char *)base + e->off;
    if (e->type == CF_UINT || e->type == CF_MODE)
      cf_store_uint(field, e->size, e->def);
    else if (e->type == CF_STR || e->type == CF_FILE)
      snprintf(field, e->size, "%s", e->sdef);
    else if (e->type == CF_ENUM)
      for (int c = 0; e->choices[c]; c++)
        if (strcmp(e->choices[c], e->sdef) == 0)
          *(int *)field = c;
  }
}

static int cf_mapping(cf_state *s, yaml_node_t *map, int sec, void *base,
                      const char *prefix);

/* A sequence of strings (listen, packs.load); packs.load also takes "all". */
static int cf_list(cf_state *s, yaml_node_t *v, const cf_key *e,
                   const char *path)
{
  wd_config *c = s->cfg;
  if (e->type == CF_NAMES && wv_yc_scalar(v) && strcmp(wv_yc_scalar(v), "all") == 0) {
    c->packs_all = 1;
    return 0;
  }
  if (v->type != YAML_SEQUENCE_NODE)
    return cf_fail(s, v, path, e->type == CF_URLS
                                   ? "expected a list of URLs"
                                   : "expected a list of pack names or 'all'");
  size_t n = wv_yc_len(v);
  char **list = calloc(n + 1, sizeof *list);
  if (list == NULL)
    return wv_seterr(s->err, WAVE_ENOMEM, NULL);
  if (e->type == CF_URLS) {
    s->listen = v;
    c->listen = list;
    c->n_listen = 0;
    if ((c->listen_at = calloc(n + 1, sizeof *c->listen_at)) == NULL)
      return wv_seterr(s->err, WAVE_ENOMEM, NULL);
  } else {
    c->packs_load = list;
    c->n_packs_load = 0;
    c->packs_all = 0;
    if ((c->packs_load_at = calloc(n + 1, sizeof *c->packs_load_at)) == NULL)
      return wv_seterr(s->err, WAVE_ENOMEM, NULL);
  }
  for (size_t i = 0; i < n; i++) {
    yaml_node_t *it =
        wv_yc_item(s->y, v, i);
    char ipath[160], why[1300];
    snprintf(ipath, sizeof ipath, "%s[%zu]", path, i);
    const char *str = it ? wv_yc_scalar(it) : NULL;
    if (str == NULL || str[0] == '\0')
      return cf_fail(s, it, ipath, "expected a %s",
                     e->type == CF_URLS ? "URL" : "pack name");
    char expanded[1024];
    if (e->type == CF_URLS) {  /* ${VAR}: e.g. a port from the job */
      if (wd_expand_vars(wd_config_getenv, str, expanded, sizeof expanded,
                         why, sizeof why))
        return cf_fail(s, it, ipath, "%s", why);
      str = expanded;
    }
    if (e->type == CF_URLS && wd_cf_check_url(s, str, i, why, sizeof why))
      return cf_fail(s, it, ipath, "%s", why);
    if ((list[i] = strdup(str)) == NULL)
      return wv_seterr(s->err, WAVE_ENOMEM, NULL);
    if (e->type == CF_URLS) {
      c->n_listen = i + 1;
      c->listen_at[i][0] = (unsigned)it->start_mark.line + 1;
      c->listen_at[i][1] = (unsigned)it->start_mark.column + 1;
    } else {
      c->n_packs_load = i + 1;
      c->packs_load_at[i][0] = (unsigned)it->start_mark.line + 1;
      c->packs_load_at[i][1] = (unsigned)it->start_mark.column + 1;
    }
  }
  if (e->type == CF_URLS && n == 0)
    return cf_fail(s, v, path, "at least one URL is required");
  size_t dup, first;
  int d = cf_first_dup((const char *const *)list, sizeof *list, n, &dup,
                       &first);
  if (d < 0)
    return wv_seterr(s->err, WAVE_ENOMEM, NULL);
  if (d > 0) {
    char ipath[160];
    snprintf(ipath, sizeof ipath, "%s[%zu]", path, dup);
    return cf_fail(s, wv_yc_item(s->y, v, dup),
                   ipath, e->type == CF_URLS ? "'%s' is listed twice"
                                             : "pack '%s' is listed twice",
                   list[dup]);
  }
  return 0;
}

/* The temperature guard's pair: resume below the stop (exec/health.h);
 * a stop without a resume resumes 5 degrees under it. */
static int cf_guard(cf_state *s, yaml_node_t *it, const char *ipath,
                    wd_device_cfg *d)
{
  unsigned mx = d->max_temperature_c, re = d->resume_temperature_c;
  if (mx == 0 && re != 0)
    return cf_fail(s, cf_key_node(s, it, "resume_temperature_c"), ipath,
                   "resume_temperature_c needs max_temperature_c");
  if (mx != 0 && re == 0)
    d->resume_temperature_c = mx > 5 ? mx - 5 : 0;
  else if (mx != 0 && re >= mx)
    return cf_fail(s, cf_key_node(s, it, "resume_temperature_c"), ipath,
                   "resume_temperature_c %u must be below max_temperature_c "
                   "%u", re, mx);
  return 0;
}

static int cf_devices(cf_state *s, yaml_node_t *v, const char *path)
{
  wd_config *c = s->cfg;
  if (wv_yc_scalar(v) && strcmp(wv_yc_scalar(v), "auto") == 0) {
    wd_device_cfg def;  /* the table's defaults for every auto device */
    memset(&def, 0, sizeof def);
    cf_defaults(CF_DEVICE, &def);
    char why[200];
    if (wd_autodev_fill(wd_config_getenv, &def, &c->devices, &c->n_devices,
                        why, sizeof why))
      return cf_fail(s, v, path, "%s", why);
    return 0;
  }
  if (v->type != YAML_SEQUENCE_NODE)
    return cf_fail(s, v, path, "expected a list of devices or 'auto'");
  size_t n = wv_yc_len(v);
  if (n == 0)
    return cf_fail(s, v, path, "at least one device is required");
  if ((c->devices = calloc(n, sizeof *c->devices)) == NULL)
    return wv_seterr(s->err, WAVE_ENOMEM, NULL);
  for (size_t i = 0; i < n; i++) {
    yaml_node_t *it =
        wv_yc_item(s->y, v, i);
    char ipath[64];
    snprintf(ipath, sizeof ipath, "devices[%zu]", i);
    s->dev = i;
    cf_defaults(CF_DEVICE, &c->devices[i]);
    c->n_devices = i + 1;
    if (it == NULL || it->type != YAML_MAPPING_NODE)
      return cf_fail(s, it, ipath, "expected a mapping (name:, backend:, ...)");
    int rc = cf_mapping(s, it, CF_DEVICE, &c->devices[i], ipath);
    if (rc)
      return rc;
    if ((rc = cf_guard(s, it, ipath, &c->devices[i])) != 0)
      return rc;
  }
  const char **names = malloc(n * sizeof *names);
  if (names == NULL)
    return wv_seterr(s->err, WAVE_ENOMEM, NULL);
  for (size_t i = 0; i < n; i++)
    names[i] = c->devices[i].name;
  size_t dup, first;
  int d = cf_first_dup(names, sizeof *names, n, &dup, &first);
  free(names);
  if (d < 0)
    return wv_seterr(s->err, WAVE_ENOMEM, NULL);
  if (d > 0) {
    char ipath[64];
    snprintf(ipath, sizeof ipath, "devices[%zu].name", dup);
    yaml_node_t *it =
        wv_yc_item(s->y, v, dup);
    return cf_fail(s, cf_key_node(s, it, "name"), ipath,
                   "device name '%s' is already used by devices[%zu]",
                   c->devices[dup].name, first);
  }
  return 0;
}

/* v relative to the config file's folder (as packs.dir); 0 or -1. */
static int cf_resolve(const cf_state *s, const char *v, char *out, size_t n)
{
  const char *slash = strrchr(s->cfg->path, '/');
  int len = v[0] == '/' || slash == NULL
                ? snprintf(out, n, "%s", v)
                : snprintf(out, n, "%.*s/%s", (int)(slash - s->cfg->path),
                           s->cfg->path, v);
  return len < 0 || (size_t)len >= n ? -1 : 0;
}

/* 1 when the token mapping says generate: true (parsed again, and checked,
 * by cf_mapping). */
static int cf_token_generates(cf_state *s, yaml_node_t *map)
{
  for (yaml_node_pair_t *p = map->data.mapping.pairs.start;
       p < map->data.mapping.pairs.top; p++) {
    yaml_node_t *k = yaml_document_get_node(&s->y->doc, p->key);
    yaml_node_t *v = yaml_document_get_node(&s->y->doc, p->value);
    const char *kn = k ? wv_yc_scalar(k) : NULL, *vn = v ? wv_yc_scalar(v) : NULL;
    if (kn && vn && strcmp(kn, "generate") == 0 && strcmp(vn, "true") == 0)
      return 1;
  }
  return 0;
}

/* auth.tokens: a list of {name, file[, generate]}. */
static int cf_tokens(cf_state *s, yaml_node_t *v, const char *path)
{
  wd_config *c = s->cfg;
  if (v->type != YAML_SEQUENCE_NODE)
    return cf_fail(s, v, path, "expected a list of tokens ({name: ..., "
                   "file: ...})");
  size_t n = wv_yc_len(v);
  if (n == 0)
    return cf_fail(s, v, path, "at least one token is required (or say "
                   "auth: none)");
  if ((c->tokens = calloc(n, sizeof *c->tokens)) == NULL)
    return wv_seterr(s->err, WAVE_ENOMEM, NULL);
  for (size_t i = 0; i < n; i++) {
    yaml_node_t *it =
        wv_yc_item(s->y, v, i);
    char ipath[64];
    snprintf(ipath, sizeof ipath, "%s[%zu]", path, i);
    s->tok = i;
    c->n_tokens = i + 1;
    if (it == NULL || it->type != YAML_MAPPING_NODE)
      return cf_fail(s, it, ipath, "expected a mapping (name:, file:)");
    /* file: is checked as it is met, and may come before generate: */
    s->tok_generate = cf_token_generates(s, it);
    int rc = cf_mapping(s, it, CF_TOKEN, &c->tokens[i], ipath);
    if (rc)
      return rc;
  }
  return 0;
}

/* tls: its keys, then the files loaded as the listeners will load them. */
static int cf_tls(cf_state *s, yaml_node_t *v, void *base, const char *path)
{
  wd_tls_cfg *t = &s->cfg->tls;
  if (wv_yc_is_null(v))
    return cf_fail(s, v, path, "expected a mapping (cert_file:, key_file:)");
  int rc = cf_mapping(s, v, CF_TLS, base, path);
  if (rc)
    return rc;
  t->set = 1;
  if (t->verify != WD_TLS_VERIFY_NONE && t->ca_file[0] == '\0')
    return cf_fail(s, v, "tls.verify", "client certificates are checked "
                   "against tls.ca_file: give one");
  char why[400];
  if (wd_tls_check(t, why, sizeof why))
    return cf_fail(s, v, path, "%s", why);
  return 0;
}

static int cf_value(cf_state *s, yaml_node_t *v, const cf_key *e, void *base,
                    const char *path)
{
  char *field = (char *)base + e->off;
  const char *str = wv_yc_scalar(v);
  char why[400];
  uint64_t x;
  switch (e->type) {
  case CF_UINT:
  case CF_MODE:
    if ((e->type == CF_UINT ? wv_yc_uint(s->y, v, path, e->min, e->max, &x)
                            : wv_yc_mode(s->y, v, path, e->max, &x)) != 0)
      return s->y->code;
    cf_store_uint(field, e->size, x);
    return 0;
  case CF_STR:
    if (wv_yc_str(s->y, v, path, field, e->size) != 0)
      return s->y->code;
    if (e->check && e->check(s, str, why, sizeof why))
      return cf_fail(s, v, path, "%s", why);
    return 0;
  case CF_ENUM: {
    int found;
    if (wv_yc_enum(s->y, v, path, e->choices, &found) != 0)
      return s->y->code;
    *(int *)field = found;
    return 0;
  }
  case CF_FILE: {
    char full[WD_PATH_MAX], expanded[WD_PATH_MAX];
    struct stat st;
    if (str == NULL || str[0] == '\0')
      return cf_fail(s, v, path, "expected a file path");
    /* ${VAR}, as in listen: e.g. a job's token file under Slurm */
    if (wd_expand_vars(wd_config_getenv, str, expanded, sizeof expanded, why,
                       sizeof why))
      return cf_fail(s, v, path, "%s", why);
    if (cf_resolve(s, expanded, full, sizeof full) || strlen(full) >= e->size)
      return cf_fail(s, v, path, "path too long");
    if (stat(full, &st) != 0) {
      int e0 = errno;
      /* auth.tokens[].generate: a missing token file is made at start */
      if (e0 == ENOENT && e->sec == CF_TOKEN && s->tok_generate) {
        snprintf(field, e->size, "%s", full);
        return cf_token_absent(s, v, path, full);
      }
      return cf_fail(s, v, path, "%s: %s", full, strerror(e0));
    }
    if (!S_ISREG(st.st_mode))
      return cf_fail(s, v, path, "%s: not a regular file", full);
    if (access(full, R_OK) != 0)
      return cf_fail(s, v, path, "%s: cannot read: %s", full,
                     strerror(errno));
    snprintf(field, e->size, "%s", full);
    if (e->check && e->check(s, full, why, sizeof why))
      return cf_fail(s, v, path, "%s", why);
    return 0;
  }
  case CF_AUTHSEC:
    if (str != NULL && strcmp(str, "none") == 0) {
      s->cfg->auth_none = 1;
      return 0;
    }
    if (v->type != YAML_MAPPING_NODE)
      return cf_fail(s, v, path, "expected 'none' or a mapping (tokens: "
                     "[{name: ..., file: ...}])");
    return cf_mapping(s, v, e->sub, base, path);
  case CF_TOKENS:
    return cf_tokens(s, v, path);
  case CF_SECTION:
    if (e->sub == CF_TLS)
      return cf_tls(s, v, base, path);
    if (wv_yc_is_null(v))
      return 0;  /* "limits:" with nothing under it: all defaults */
    return cf_mapping(s, v, e->sub, base, path);
  case CF_URLS:
  case CF_NAMES:
    return cf_list(s, v, e, path);
  case CF_DEVICES:
    return cf_devices(s, v, path);
  }
  return wv_seterr(s->err, WAVE_EINTERNAL, "config key type %d", e->type);
}

static int cf_mapping(cf_state *s, yaml_node_t *map, int sec, void *base,
                      const char *prefix)
{
  if (map->type != YAML_MAPPING_NODE)
    return cf_fail(s, map, prefix[0] ? prefix : "(top level)",
                   "expected a mapping of keys");
  unsigned char seen[CF_NKEYS] = {0};
  for (yaml_node_pair_t *p = map->data.mapping.pairs.start;
       p < map->data.mapping.pairs.top; p++) {
    yaml_node_t *k = yaml_document_get_node(&s->y->doc, p->key);
    yaml_node_t *v = yaml_document_get_node(&s->y->doc, p->value);
    const char *name = k ? wv_yc_scalar(k) : NULL;
    if (name == NULL || v == NULL)
      return cf_fail(s, k, prefix[0] ? prefix : "(top level)",
                     "expected a plain key");
    char path[128];
    snprintf(path, sizeof path, "%s%s%s", prefix, prefix[0] ? "." : "", name);
    size_t ki = wd_cf_nkeys;
    for (size_t j = 0; j < wd_cf_nkeys; j++)
      if (wd_cf_keys[j].sec == sec && strcmp(wd_cf_keys[j].name, name) == 0)
        ki = j;
    if (ki == wd_cf_nkeys)
      return cf_fail(s, k, path, "unknown key");
    if (seen[ki]++)
      return cf_fail(s, k, path, "duplicate key");
    if (sec == CF_PACKS && strcmp(name, "dir") == 0) {
      s->cfg->packs_dir_set = 1;
      s->packs_dir = v;
    }
    if (sec == CF_PACKS && strcmp(name, "load") == 0)
      s->packs_load = v;
    if (sec == CF_LIMITS && strcmp(name, "max_client_region_bytes") == 0)
      s->share_at[0] = v;
    if (sec == CF_LIMITS && strcmp(name, "max_client_stream_bytes") == 0)
      s->share_at[1] = v;
    int rc = cf_value(s, v, &wd_cf_keys[ki], base, path);
    if (rc)
      return rc;
  }
  for (size_t j = 0; j < wd_cf_nkeys; j++)
    if (wd_cf_keys[j].sec == sec && wd_cf_keys[j].required && !seen[j])
      return cf_fail(s, map, prefix[0] ? prefix : wd_cf_keys[j].name,
                     prefix[0] ? "missing key '%s'"
                               : "missing key '%s' (at least one device)",
                     wd_cf_keys[j].name);
  return 0;
}

/* Every network listener is authenticated, or open on purpose: tokens,
 * client certificates required (tls+tcp), or auth: none. */
static int cf_check_access(cf_state *s)
{
  wd_config *c = s->cfg;
  for (size_t i = 0; i < c->n_listen; i++) {
    const char *u = c->listen[i];
    int tls = wd_tls_url(u), net = strncmp(u, "ipc://", 6) != 0;
    yaml_node_t *at =
        s->listen && s->listen->type == YAML_SEQUENCE_NODE
            ? wv_yc_item(s->y, s->listen, i)
            : NULL;
    char ipath[40];
    snprintf(ipath, sizeof ipath, "listen[%zu]", i);
    if (tls && !c->tls.set)
      return cf_fail(s, at, ipath, "'%s' needs a tls: section (cert_file:, "
                     "key_file:)", u);
    if (net && c->n_tokens == 0 && !c->auth_none &&
        !(tls && c->tls.verify == WD_TLS_VERIFY_REQUIRED))
      return cf_fail(s, at, ipath, "'%s' is reachable over the network "
                     "without authentication: list auth.tokens, or say "
                     "auth: none to serve it open (docs/security.md)", u);
  }
  return 0;
}

/* Each client's share of regions and of copies+streams (bulk/share.h):
 * unset, a quarter of its total as this file sets it (so a lowered total
 * keeps room for four clients; a reload computes it again); set, at most
 * its total. */
static int cf_shares(cf_state *s)
{
  wd_limits *l = &s->cfg->limits;
  uint64_t *share[2] = {&l->max_client_region_bytes,
                        &l->max_client_stream_bytes};
  const uint64_t total[2] = {l->max_region_bytes, l->max_stream_bytes};
  static const char *const key[2][2] = {
      {"limits.max_client_region_bytes", "limits.max_region_bytes"},
      {"limits.max_client_stream_bytes", "limits.max_stream_bytes"}};
  for (int i = 0; i < 2; i++) {
    if (s->share_at[i] == NULL)
      *share[i] = total[i] / 4;
    else if (*share[i] > total[i])
      return cf_fail(s, s->share_at[i], key[i][0], "%" PRIu64 " is above "
                     "its total, %s (%" PRIu64 "): a client's share is at "
                     "most the total (unset, a quarter of it)", *share[i],
                     key[i][1], total[i]);
  }
  return 0;
}

/* packs.dir relative to the config file's folder. */
static int cf_resolve_packs(cf_state *s)
{
  wd_config *c = s->cfg;
  if (c->packs_dir[0] == '/')
    return 0;
  char dir[WD_PATH_MAX];
  snprintf(dir, sizeof dir, "%s", c->path);
  char *slash = strrchr(dir, '/');
  if (slash == NULL)
    return 0;  /* config in the current folder: relative as it is */
  slash[1] = '\0';
  char full[WD_PATH_MAX];
  int n = snprintf(full, sizeof full, "%s%s", dir, c->packs_dir);
  if (n < 0 || (size_t)n >= sizeof full)
    return wv_seterr(s->err, WAVE_ECONFIG, "%s: packs.dir: path too long",
                     c->path);
  memcpy(c->packs_dir, full, (size_t)n + 1);
  return 0;
}

int wd_config_load(const char *path, wd_config **out, wave_error *err)
{
  *out = NULL;
  wd_config *c = calloc(1, sizeof *c);
  if (c == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  snprintf(c->path, sizeof c->path, "%s", path);
  c->packs_all = 1;
  cf_defaults(CF_ROOT, c);
  cf_defaults(CF_LIMITS, c);
  cf_defaults(CF_PACKS, c);
  cf_defaults(CF_TLS, c);

  wv_yc y;
  cf_state s = {.y = &y, .cfg = c, .err = err};
  int rc = wv_yc_open(&y, path, WAVE_ECONFIG, WAVE_ECONFIG, err);
  if (rc != 0)
    goto done;
  yaml_node_t *root = wv_yc_root(&y);
  if (root == NULL || wv_yc_is_null(root)) {
    rc = cf_fail(&s, NULL, "devices",
                 "the file is empty; at least one device is required");
    goto done;
  }
  if ((rc = cf_mapping(&s, root, CF_ROOT, c, "")) != 0)
    goto done;
  if (c->listen == NULL) {
    char def[160];  /* /run/wavedd/, or $XDG_RUNTIME_DIR/wavedd/ */
    c->listen = calloc(2, sizeof *c->listen);
    if (c->listen == NULL ||
        (c->listen[0] = strdup(wv_default_url(def, sizeof def, 0))) == NULL) {
      rc = wv_seterr(err, WAVE_ENOMEM, NULL);
      goto done;
    }
    c->n_listen = 1;
  }
  if ((rc = cf_check_access(&s)) != 0 || (rc = cf_shares(&s)) != 0)
    goto done;
  /* where packs.dir (else packs.load) is, for wd_packs_load's message */
  yaml_node_t *at = s.packs_dir ? s.packs_dir : s.packs_load;
  c->packs_line = at ? at->start_mark.line + 1 : 1;
  c->packs_col = at ? at->start_mark.column + 1 : 1;
  rc = cf_resolve_packs(&s);
done:
  wv_yc_close(&y);
  if (rc) {
    wd_config_free(c);
    return rc;
  }
  *out = c;
  return 0;
}

static void cf_free_list(char **l, size_t n)
{
  for (size_t i = 0; l && i < n; i++)
    free(l[i]);
  free(l);
}

void wd_config_free(wd_config *c)
{
  if (c == NULL)
    return;
  cf_free_list(c->listen, c->n_listen);
  free(c->listen_at);
  cf_free_list(c->packs_load, c->n_packs_load);
  free(c->packs_load_at);
  free(c->devices);
  if (c->tokens != NULL)
    memset(c->tokens, 0, c->n_tokens * sizeof *c->tokens);
  free(c->tokens);
  free(c);
}
