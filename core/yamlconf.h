/* core/yamlconf.h - typed YAML slots with file:line:column errors (wvcore).
 *
 * The one YAML reader under both loaders, devices.yaml (daemon/config.c)
 * and the hash packs (workers/hash/pack.c): it loads a document with
 * libyaml's document API (every node keeps its position), formats every
 * error as "file:line:column: key: what" with the loader's error code, and
 * reads typed values (integers, octal modes, strings, one-of choices) by
 * the same rules, so that a number means the same in both files.
 *
 * The number rule (docs/config.md "Numbers", docs/hash.md "Pack files"):
 * an integer is decimal digits, or 0x / 0X and hexadecimal digits; '_' may
 * stand anywhere after the prefix as a separator and is ignored, but at
 * least one digit is needed; the value must fit in 64 bits and then in the
 * key's bounds.  No sign, no blanks, no unit or size suffix, no octal (a
 * leading 0 is decimal: 010 is ten), no float.  A YAML quoted scalar is
 * read the same as a plain one.  File modes are their own type (octal).
 */
#ifndef WV_YAMLCONF_H
#define WV_YAMLCONF_H

#include <stddef.h>
#include <stdint.h>
#include <yaml.h>

#include "wave/error.h"

typedef struct wv_yc {
  const char *file;     /* as the messages name it */
  int code;             /* the error code of a bad value */
  wave_error *err;
  yaml_document_t doc;
  int have_doc;
} wv_yc;

/* Parse the file into y->doc.  A file that cannot be opened fails with
 * open_code ("file: cannot open: why"), bad YAML with code
 * ("file:line:column: YAML syntax: problem"); wv_yc_close in every case. */
int wv_yc_open(wv_yc *y, const char *file, int code, int open_code,
               wave_error *err);
void wv_yc_close(wv_yc *y);

/* "file:line:column: key: what" with y->code; node NULL is 1:1, key NULL
 * "(top)".  Returns the code. */
int wv_yc_fail(wv_yc *y, const yaml_node_t *node, const char *key,
               const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* ---- nodes ---- */
yaml_node_t *wv_yc_root(wv_yc *y);
const char *wv_yc_scalar(const yaml_node_t *n);      /* NULL: not a scalar */
int wv_yc_is_null(const yaml_node_t *n);              /* plain "", ~, null */
size_t wv_yc_len(const yaml_node_t *seq);             /* 0: not a sequence */
yaml_node_t *wv_yc_item(wv_yc *y, const yaml_node_t *seq, size_t i);
/* The value of key in mapping map; NULL when absent or map is no mapping. */
yaml_node_t *wv_yc_get(wv_yc *y, const yaml_node_t *map, const char *key);
/* Fill vals[i] with the value of keys[i] in mapping map (section names it
 * in messages): an unknown key or a key given twice is an error (libyaml
 * leaves duplicates to us; the last one would silently win). */
int wv_yc_keys(wv_yc *y, const yaml_node_t *map, const char *section,
               const char *const *keys, size_t nkeys, yaml_node_t **vals);

/* ---- the number rule, on a string: 0 or -1 ---- */
int wv_yc_parse_u64(const char *s, uint64_t *out);
/* An octal file mode: 0660, 660 or 0o660 (at most 4 digits). */
int wv_yc_parse_mode(const char *s, uint64_t *out);

/* ---- typed slots: read node n of key, or fail naming it ---- */
int wv_yc_uint(wv_yc *y, const yaml_node_t *n, const char *key, uint64_t lo,
               uint64_t hi, uint64_t *out);
int wv_yc_pow2(wv_yc *y, const yaml_node_t *n, const char *key, uint64_t lo,
               uint64_t hi, uint64_t *out);
int wv_yc_mode(wv_yc *y, const yaml_node_t *n, const char *key, uint64_t hi,
               uint64_t *out);
/* A scalar of at most size - 1 bytes, copied into buf. */
int wv_yc_str(wv_yc *y, const yaml_node_t *n, const char *key, char *buf,
              size_t size);
/* One of the NULL-terminated choices: its index. */
int wv_yc_enum(wv_yc *y, const yaml_node_t *n, const char *key,
               const char *const *choices, int *out);

#endif
