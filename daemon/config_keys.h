/* config_keys.h - the key table of devices.yaml, shared by the loader
 * (config.c, which fills it) and the comparison of two loaded configs
 * (config_same.c).  Private to daemon/config*.c. */
#ifndef WD_CONFIG_KEYS_H
#define WD_CONFIG_KEYS_H

#include <stddef.h>
#include <stdint.h>

enum { CF_ROOT, CF_LIMITS, CF_PACKS, CF_DEVICE, CF_TLS, CF_AUTH, CF_TOKEN };
enum { CF_UINT, CF_STR, CF_ENUM, CF_CHOICE, CF_MODE, CF_SECTION, CF_URLS,
       CF_NAMES, CF_DEVICES, CF_FILE, CF_AUTHSEC, CF_TOKENS };
/* ENUM stores the index, CHOICE the string; FILE a path resolved against
 * the config file's folder, which must name a readable file */

typedef struct cf_state cf_state;
/* Per-value check beyond type and bounds; fills why and returns nonzero. */
typedef int (*cf_check)(cf_state *s, const char *value, char *why, size_t n);

typedef struct cf_key {
  int sec;
  const char *name;
  int type;
  size_t off, size;           /* field in wd_config / wd_device_cfg */
  uint64_t min, max, def;     /* CF_UINT, CF_MODE */
  const char *sdef;           /* CF_STR, CF_ENUM default */
  const char *const *choices; /* CF_ENUM, CF_CHOICE; NULL-terminated */
  int required;
  int sub;                    /* CF_SECTION: which section */
  cf_check check;
} cf_key;

/* Every key the file may hold, one row each (config.c). */
extern const cf_key wd_cf_keys[];
extern const size_t wd_cf_nkeys;

#endif
