/* core/yamlconf.c - typed YAML slots with file:line:column errors (see
 * yamlconf.h for the number rule).  libyaml's marks are 0-based; every
 * message here is 1-based, as editors count. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/base.h"
#include "core/yamlconf.h"

int wv_yc_open(wv_yc *y, const char *file, int code, int open_code,
               wave_error *err)
{
  memset(y, 0, sizeof *y);
  y->file = file;
  y->code = code;
  y->err = err;
  FILE *f = fopen(file, "rb");
  if (f == NULL)
    return wv_seterr(err, open_code, "%s: cannot open: %s", file,
                     strerror(errno));
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser)) {
    fclose(f);
    return wv_seterr(err, WAVE_ENOMEM, "%s: YAML parser", file);
  }
  yaml_parser_set_input_file(&parser, f);
  int rc = 0;
  if (yaml_parser_load(&parser, &y->doc))
    y->have_doc = 1;
  else
    rc = wv_seterr(err, code, "%s:%zu:%zu: YAML syntax: %s%s%s", file,
                   parser.problem_mark.line + 1,
                   parser.problem_mark.column + 1,
                   parser.problem ? parser.problem : "unreadable",
                   parser.context ? " " : "",
                   parser.context ? parser.context : "");
  yaml_parser_delete(&parser);
  fclose(f);
  return rc;
}

void wv_yc_close(wv_yc *y)
{
  if (y->have_doc)
    yaml_document_delete(&y->doc);
  y->have_doc = 0;
}

int wv_yc_fail(wv_yc *y, const yaml_node_t *node, const char *key,
               const char *fmt, ...)
{
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  size_t line = node ? node->start_mark.line + 1 : 1;
  size_t col = node ? node->start_mark.column + 1 : 1;
  return wv_seterr(y->err, y->code, "%s:%zu:%zu: %s: %s", y->file, line, col,
                   key ? key : "(top)", what);
}

/* ---- nodes ------------------------------------------------------------- */

yaml_node_t *wv_yc_root(wv_yc *y)
{
  return y->have_doc ? yaml_document_get_root_node(&y->doc) : NULL;
}

const char *wv_yc_scalar(const yaml_node_t *n)
{
  return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value
                                          : NULL;
}

int wv_yc_is_null(const yaml_node_t *n)
{
  if (n == NULL || n->type != YAML_SCALAR_NODE ||
      n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
    return 0;
  const char *v = wv_yc_scalar(n);
  return v[0] == '\0' || strcmp(v, "~") == 0 || strcmp(v, "null") == 0;
}

size_t wv_yc_len(const yaml_node_t *seq)
{
  if (seq == NULL || seq->type != YAML_SEQUENCE_NODE)
    return 0;
  return (size_t)(seq->data.sequence.items.top -
                  seq->data.sequence.items.start);
}

yaml_node_t *wv_yc_item(wv_yc *y, const yaml_node_t *seq, size_t i)
{
  if (i >= wv_yc_len(seq))
    return NULL;
  return yaml_document_get_node(&y->doc, seq->data.sequence.items.start[i]);
}

yaml_node_t *wv_yc_get(wv_yc *y, const yaml_node_t *map, const char *key)
{
  if (map == NULL || map->type != YAML_MAPPING_NODE)
    return NULL;
  for (yaml_node_pair_t *p = map->data.mapping.pairs.start;
       p < map->data.mapping.pairs.top; p++) {
    const char *k = wv_yc_scalar(yaml_document_get_node(&y->doc, p->key));
    if (k != NULL && strcmp(k, key) == 0)
      return yaml_document_get_node(&y->doc, p->value);
  }
  return NULL;
}

int wv_yc_keys(wv_yc *y, const yaml_node_t *map, const char *section,
               const char *const *keys, size_t nkeys, yaml_node_t **vals)
{
  for (yaml_node_pair_t *pr = map->data.mapping.pairs.start;
       pr < map->data.mapping.pairs.top; pr++) {
    yaml_node_t *k = yaml_document_get_node(&y->doc, pr->key);
    const char *ks = wv_yc_scalar(k);
    size_t i = 0;
    while (i < nkeys && !(ks && strcmp(ks, keys[i]) == 0))
      i++;
    if (i == nkeys)
      return wv_yc_fail(y, k, section, "unknown key '%s'", ks ? ks : "?");
    if (vals[i] != NULL)
      return wv_yc_fail(y, k, section, "duplicate key '%s'", ks);
    vals[i] = yaml_document_get_node(&y->doc, pr->value);
  }
  return 0;
}

/* ---- the number rule ----------------------------------------------------- */

int wv_yc_parse_u64(const char *s, uint64_t *out)
{
  unsigned base = 10, digits = 0;
  if (s == NULL)
    return -1;
  if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s += 2;
  }
  uint64_t v = 0;
  for (; *s; s++) {
    unsigned d;
    if (*s >= '0' && *s <= '9')
      d = (unsigned)(*s - '0');
    else if (base == 16 && *s >= 'a' && *s <= 'f')
      d = (unsigned)(*s - 'a' + 10);
    else if (base == 16 && *s >= 'A' && *s <= 'F')
      d = (unsigned)(*s - 'A' + 10);
    else if (*s == '_')
      continue;
    else
      return -1;
    if (v > (UINT64_MAX - d) / base)
      return -1;  /* over 2^64 - 1 */
    v = v * base + d;
    digits++;
  }
  if (digits == 0)
    return -1;  /* "", "_", "0x", "0x__" */
  *out = v;
  return 0;
}

int wv_yc_parse_mode(const char *s, uint64_t *out)
{
  if (s[0] == '0' && (s[1] == 'o' || s[1] == 'O'))
    s += 2;
  if (*s == '\0' || strlen(s) > 4)
    return -1;
  uint64_t x = 0;
  for (const char *p = s; *p; p++) {
    if (*p < '0' || *p > '7')
      return -1;
    x = x * 8 + (uint64_t)(*p - '0');
  }
  *out = x;
  return 0;
}

/* ---- typed slots ---------------------------------------------------------- */

/* "an integer 1..32" or "a 64-bit unsigned integer" for the whole range. */
static const char *yc_range(char *buf, size_t n, const char *what,
                            uint64_t lo, uint64_t hi)
{
  if (lo == 0 && hi == UINT64_MAX)
    snprintf(buf, n, "a 64-bit unsigned %s", what);
  else
    snprintf(buf, n, "%s %s %" PRIu64 "..%" PRIu64,
             what[0] == 'i' ? "an" : "a", what, lo, hi);
  return buf;
}

static int yc_bad(wv_yc *y, const yaml_node_t *n, const char *key,
                  const char *expected)
{
  const char *s = wv_yc_scalar(n);
  if (s == NULL)
    return wv_yc_fail(y, n, key, "expected %s", expected);
  return wv_yc_fail(y, n, key, "expected %s, not '%.60s'", expected, s);
}

int wv_yc_uint(wv_yc *y, const yaml_node_t *n, const char *key, uint64_t lo,
               uint64_t hi, uint64_t *out)
{
  uint64_t v;
  if (wv_yc_parse_u64(wv_yc_scalar(n), &v) != 0 || v < lo || v > hi) {
    char r[80];
    return yc_bad(y, n, key, yc_range(r, sizeof r, "integer", lo, hi));
  }
  *out = v;
  return 0;
}

int wv_yc_pow2(wv_yc *y, const yaml_node_t *n, const char *key, uint64_t lo,
               uint64_t hi, uint64_t *out)
{
  uint64_t v;
  if (wv_yc_parse_u64(wv_yc_scalar(n), &v) != 0 || v < lo || v > hi ||
      (v & (v - 1)) != 0) {
    char r[80];
    return yc_bad(y, n, key,
                  yc_range(r, sizeof r, "power of two", lo, hi));
  }
  *out = v;
  return 0;
}

int wv_yc_mode(wv_yc *y, const yaml_node_t *n, const char *key, uint64_t hi,
               uint64_t *out)
{
  const char *s = wv_yc_scalar(n);
  uint64_t v;
  if (s == NULL || wv_yc_parse_mode(s, &v) != 0 || v > hi) {
    char r[80];
    snprintf(r, sizeof r, "an octal file mode 0..0%" PRIo64 " (e.g. 0660)",
             hi);
    return yc_bad(y, n, key, r);
  }
  *out = v;
  return 0;
}

int wv_yc_str(wv_yc *y, const yaml_node_t *n, const char *key, char *buf,
              size_t size)
{
  const char *s = wv_yc_scalar(n);
  if (s == NULL || strlen(s) >= size)
    return wv_yc_fail(y, n, key, "expected a string of at most %zu bytes",
                      size - 1);
  memcpy(buf, s, strlen(s) + 1);
  return 0;
}

int wv_yc_enum(wv_yc *y, const yaml_node_t *n, const char *key,
               const char *const *choices, int *out)
{
  const char *s = wv_yc_scalar(n);
  for (int c = 0; s && choices[c]; c++)
    if (strcmp(choices[c], s) == 0) {
      *out = c;
      return 0;
    }
  char list[160] = "";
  for (int c = 0; choices[c]; c++) {
    strncat(list, c ? ", " : "", sizeof list - strlen(list) - 1);
    strncat(list, choices[c], sizeof list - strlen(list) - 1);
  }
  return wv_yc_fail(y, n, key, "expected one of: %s", list);
}
