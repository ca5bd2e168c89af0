/* config_same.c - is a freshly loaded config the one being served?
 * (wd_config_same, config.h), and what of it may a reload change?
 * (wd_config_reload_check: the key table's reload column).  A reload of an unchanged file keeps the
 * serving config and frees the new one (reload.c), so nothing is kept per
 * reload.  The comparison walks the same key table the loader fills
 * (config_keys.h), so a key added there is compared without more code;
 * the fields the loader sets outside the table are listed here. */
#include <stdio.h>
#include <string.h>

#include "core/base.h"
#include "daemon/config.h"
#include "daemon/config_keys.h"

/* ---- comparing two configs ------------------------------------------------ */

/* Row e's field in base a and b (the table says where it is and what it
 * holds): equal?  Sections and lists are compared by their callers. */
static int cfs_same_field(const cf_key *e, const void *a, const void *b)
{
  const char *x = (const char *)a + e->off, *y = (const char *)b + e->off;
  switch (e->type) {
  case CF_UINT:
  case CF_ENUM:
  case CF_MODE:
    return memcmp(x, y, e->size) == 0;
  case CF_STR:
  case CF_FILE:
    return strncmp(x, y, e->size) == 0;
  default:
    return 1;
  }
}

/* The fields of sec's rows in base a and b: equal? */
static int cfs_same_rows(int sec, const void *a, const void *b)
{
  for (size_t i = 0; i < wd_cf_nkeys; i++)
    if (wd_cf_keys[i].sec == sec &&
        !cfs_same_field(&wd_cf_keys[i], a, b))
      return 0;
  return 1;
}

/* Is sec a section of the config itself (its rows at offsets in
 * wd_config), rather than of one entry of a list (a device, a token)?
 * Every such section is compared and reload-checked: a section added to
 * the enum is, without more code. */
static int cfs_base_section(int sec)
{
  return sec != CF_DEVICE && sec != CF_TOKEN;
}

static int cfs_same_list(char *const *a, char *const *b, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (strcmp(a[i], b[i]) != 0)
      return 0;
  return 1;
}

static int cfs_same_at(const unsigned (*a)[2], const unsigned (*b)[2],
                      size_t n)
{
  if (a == NULL || b == NULL)
    return a == b;
  return memcmp(a, b, n * sizeof *a) == 0;
}

/* Every row of the table, its lists, and the fields the loader sets
 * besides (a field added to wd_config outside the table belongs here). */
int wd_config_same(const wd_config *a, const wd_config *b)
{
  if (strcmp(a->path, b->path) != 0 || a->n_listen != b->n_listen ||
      !cfs_same_list(a->listen, b->listen, a->n_listen) ||
      !cfs_same_at(a->listen_at, b->listen_at, a->n_listen) ||
      a->tls.set != b->tls.set || a->auth_none != b->auth_none ||
      a->packs_dir_set != b->packs_dir_set ||
      a->packs_line != b->packs_line || a->packs_col != b->packs_col ||
      a->packs_all != b->packs_all || a->n_packs_load != b->n_packs_load ||
      !cfs_same_list(a->packs_load, b->packs_load, a->n_packs_load) ||
      !cfs_same_at(a->packs_load_at, b->packs_load_at, a->n_packs_load) ||
      a->n_devices != b->n_devices || a->n_tokens != b->n_tokens)
    return 0;
  for (int sec = 0; sec < CF_NSEC; sec++)
    if (cfs_base_section(sec) && !cfs_same_rows(sec, a, b))
      return 0;
  for (size_t i = 0; i < a->n_devices; i++)
    if (!cfs_same_rows(CF_DEVICE, &a->devices[i], &b->devices[i]))
      return 0;
  for (size_t i = 0; i < a->n_tokens; i++) {
    const wd_token_cfg *x = &a->tokens[i], *y = &b->tokens[i];
    if (!cfs_same_rows(CF_TOKEN, x, y) || x->len != y->len ||
        memcmp(x->secret, y->secret, x->len) != 0)
      return 0;
  }
  return 1;
}

/* ---- what a reload may change ------------------------------------------ */

/* "limits.contexts": the key as the file and the messages name it. */
static void cfs_key_name(const cf_key *e, char *out, size_t n)
{
  const char *sec = "";
  for (size_t i = 0; e->sec != CF_ROOT && i < wd_cf_nkeys; i++)
    if (wd_cf_keys[i].sec == CF_ROOT && wd_cf_keys[i].sub == e->sec &&
        wd_cf_keys[i].sub != 0)
      sec = wd_cf_keys[i].name;
  snprintf(out, n, "%s%s%s", sec, sec[0] ? "." : "", e->name);
}

/* The rows of sec in bases a and b, by their reload rule: the first
 * refused change (its row), or NULL; each changed start-only one is told
 * to later. */
static const cf_key *cfs_reload_rows(int sec, const void *a, const void *b,
                                    void (*later)(void *, const char *,
                                                  const char *),
                                    void *arg)
{
  for (size_t i = 0; i < wd_cf_nkeys; i++) {
    const cf_key *e = &wd_cf_keys[i];
    if (e->sec != sec || e->reload == CF_RL_LIVE || cfs_same_field(e, a, b))
      continue;
    if (e->reload == CF_RL_REFUSE)
      return e;
    if (later != NULL) {
      char key[96];
      cfs_key_name(e, key, sizeof key);
      later(arg, key, e->why);
    }
  }
  return NULL;
}

/* The root row of a list of sec entries (devices, auth.tokens). */
static const cf_key *cfs_list_row(int type)
{
  for (size_t i = 0; i < wd_cf_nkeys; i++)
    if (wd_cf_keys[i].type == type)
      return &wd_cf_keys[i];
  return NULL;
}

int wd_config_reload_check(const wd_config *oc, const wd_config *nc,
                           void (*later)(void *arg, const char *key,
                                         const char *why),
                           void *arg, wave_error *err)
{
  const char *f = nc->path;
  /* the device list first: a device's own keys name the device */
  const cf_key *dl = cfs_list_row(CF_DEVICES);
  if (dl->reload == CF_RL_REFUSE && nc->n_devices != oc->n_devices)
    return wv_seterr(err, WAVE_ECONFIG, "%s: %s: %zu devices instead of %zu;"
                     " %s", f, dl->name, nc->n_devices, oc->n_devices,
                     dl->why);
  size_t nd = nc->n_devices < oc->n_devices ? nc->n_devices : oc->n_devices;
  for (size_t i = 0; i < nd; i++) {
    const cf_key *e = cfs_reload_rows(CF_DEVICE, &oc->devices[i],
                                     &nc->devices[i], NULL, NULL);
    if (e != NULL)
      return wv_seterr(err, WAVE_ECONFIG, "%s: %s[%zu] (%s) changed; %s", f,
                       dl->name, i, nc->devices[i].name, e->why);
  }
  for (int sec = 0; sec < CF_NSEC; sec++) {
    if (!cfs_base_section(sec))
      continue;
    const cf_key *e = cfs_reload_rows(sec, oc, nc, later, arg);
    if (e != NULL) {
      char key[96];
      cfs_key_name(e, key, sizeof key);
      return wv_seterr(err, WAVE_ECONFIG, "%s: %s changed; %s", f, key,
                       e->why);
    }
  }
  size_t nt = nc->n_tokens < oc->n_tokens ? nc->n_tokens : oc->n_tokens;
  for (size_t i = 0; i < nt; i++) {
    const cf_key *e = cfs_reload_rows(CF_TOKEN, &oc->tokens[i],
                                     &nc->tokens[i], later, arg);
    if (e != NULL)
      return wv_seterr(err, WAVE_ECONFIG, "%s: auth.tokens[%zu].%s changed; "
                       "%s", f, i, e->name, e->why);
  }
  return 0;
}
