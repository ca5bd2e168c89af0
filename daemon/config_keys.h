/* config_keys.h - the key table of devices.yaml, shared by the loader
 * (config.c, which fills it), its per-value checks (config_check.c), the
 * comparison of two loaded configs and what a reload may change
 * (config_same.c).  Private to
 * daemon/config*.c. */
#ifndef WD_CONFIG_KEYS_H
#define WD_CONFIG_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include "core/yamlconf.h"
#include "daemon/config.h"

enum { CF_ROOT, CF_LIMITS, CF_PACKS, CF_DEVICE, CF_TLS, CF_AUTH, CF_TOKEN,
       CF_PRIO, CF_NSEC };
enum { CF_UINT, CF_STR, CF_ENUM, CF_MODE, CF_SECTION, CF_URLS,
       CF_NAMES, CF_DEVICES, CF_FILE, CF_AUTHSEC, CF_TOKENS };
/* ENUM stores the index (an int); FILE a path resolved against the config
 * file's folder, which must name a readable file */

/* The reload column: what a SIGHUP reload does with a changed value
 * (config_same.c's wd_config_reload_check reads it; docs/config.md
 * "Reload (SIGHUP)" says the same in words).  0 is no rule: every row
 * names one (test_config checks). */
enum {
  CF_RL_LIVE = 1,  /* applied by the reload */
  CF_RL_START,     /* taken, but what holds it keeps the value it started
                    * with: logged, applied at the next start */
  CF_RL_REFUSE,    /* a change fails the reload, naming the key */
};

/* The loader's walk: where it is in the document and the struct. */
typedef struct cf_state {
  wv_yc *y;                   /* the document and its file name */
  wd_config *cfg;
  size_t dev;                 /* device being parsed */
  size_t tok;                 /* auth token being parsed */
  int tok_generate;           /* ... and it says generate: true */
  yaml_node_t *listen;        /* the listen sequence, for later checks */
  wave_error *err;
  yaml_node_t *packs_dir;     /* where packs.dir and packs.load are */
  yaml_node_t *packs_load;
  yaml_node_t *share_at[2];   /* max_client_region_bytes, _stream_bytes
                               * where set (NULL: a quarter of the total) */
} cf_state;
/* Per-value check beyond type and bounds; fills why and returns nonzero. */
typedef int (*cf_check)(cf_state *s, const char *value, char *why, size_t n);

typedef struct cf_key {
  int sec;
  const char *name;
  int type;
  size_t off, size;           /* field in wd_config / wd_device_cfg */
  uint64_t min, max, def;     /* CF_UINT, CF_MODE */
  const char *sdef;           /* CF_STR, CF_ENUM default */
  const char *const *choices; /* CF_ENUM; NULL-terminated */
  int required;
  int sub;                    /* CF_SECTION: which section */
  cf_check check;
  int reload;                 /* CF_RL_* */
  const char *why;            /* CF_RL_START, CF_RL_REFUSE: why, for the
                               * log line or the reload's error */
} cf_key;

/* Every key the file may hold, one row each (config.c). */
extern const cf_key wd_cf_keys[];
extern const size_t wd_cf_nkeys;

/* Per-value checks (config_check.c), named in the table's check column;
 * wd_cf_check_url is cf_list's, for each listen entry. */
int wd_cf_check_devname(cf_state *s, const char *v, char *why, size_t n);
int wd_cf_check_backend(cf_state *s, const char *v, char *why, size_t n);
int wd_cf_check_metrics(cf_state *s, const char *v, char *why, size_t n);
int wd_cf_check_tokname(cf_state *s, const char *v, char *why, size_t n);
int wd_cf_check_tokfile(cf_state *s, const char *v, char *why, size_t n);
int wd_cf_check_allow(cf_state *s, const char *v, char *why, size_t n);
int wd_cf_check_url(cf_state *s, const char *v, size_t i, char *why, size_t n);

#endif
