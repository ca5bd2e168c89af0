/* config_same.c - is a freshly loaded config the one being served?
 * (wd_config_same, config.h).  A reload of an unchanged file keeps the
 * serving config and frees the new one (reload.c), so nothing is kept per
 * reload.  The comparison walks the same key table the loader fills
 * (config_keys.h), so a key added there is compared without more code;
 * the fields the loader sets outside the table are listed here. */
#include <string.h>

#include "daemon/config.h"
#include "daemon/config_keys.h"

/* ---- comparing two configs ------------------------------------------------ */

/* The fields of sec's rows in base a and b (the table says where each is
 * and what it holds): equal? */
static int cf_same_rows(int sec, const void *a, const void *b)
{
  for (size_t i = 0; i < wd_cf_nkeys; i++) {
    const cf_key *e = &wd_cf_keys[i];
    if (e->sec != sec)
      continue;
    const char *x = (const char *)a + e->off, *y = (const char *)b + e->off;
    switch (e->type) {
    case CF_UINT:
    case CF_ENUM:
    case CF_MODE:
      if (memcmp(x, y, e->size) != 0)
        return 0;
      break;
    case CF_STR:
    case CF_FILE:
      if (strncmp(x, y, e->size) != 0)
        return 0;
      break;
    default:  /* sections and lists: compared by wd_config_same */
      break;
    }
  }
  return 1;
}

static int cf_same_list(char *const *a, char *const *b, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (strcmp(a[i], b[i]) != 0)
      return 0;
  return 1;
}

static int cf_same_at(const unsigned (*a)[2], const unsigned (*b)[2],
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
      !cf_same_list(a->listen, b->listen, a->n_listen) ||
      !cf_same_at(a->listen_at, b->listen_at, a->n_listen) ||
      a->tls.set != b->tls.set || a->auth_none != b->auth_none ||
      a->packs_dir_set != b->packs_dir_set ||
      a->packs_line != b->packs_line || a->packs_col != b->packs_col ||
      a->packs_all != b->packs_all || a->n_packs_load != b->n_packs_load ||
      !cf_same_list(a->packs_load, b->packs_load, a->n_packs_load) ||
      !cf_same_at(a->packs_load_at, b->packs_load_at, a->n_packs_load) ||
      a->n_devices != b->n_devices || a->n_tokens != b->n_tokens)
    return 0;
  static const int secs[] = {CF_ROOT, CF_LIMITS, CF_PACKS, CF_TLS};
  for (size_t i = 0; i < sizeof secs / sizeof secs[0]; i++)
    if (!cf_same_rows(secs[i], a, b))
      return 0;
  for (size_t i = 0; i < a->n_devices; i++)
    if (!cf_same_rows(CF_DEVICE, &a->devices[i], &b->devices[i]))
      return 0;
  for (size_t i = 0; i < a->n_tokens; i++) {
    const wd_token_cfg *x = &a->tokens[i], *y = &b->tokens[i];
    if (!cf_same_rows(CF_TOKEN, x, y) || x->len != y->len ||
        memcmp(x->secret, y->secret, x->len) != 0)
      return 0;
  }
  return 1;
}
