/* jsonq.c - the strict JSON reader of jsonq.h (recursive descent). */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jsonq.h"

typedef struct jq_p {
  const char *s;
  int depth;
} jq_p;

static void jq_ws(jq_p *p)
{
  while (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r')
    p->s++;
}

static jq_node *jq_value(jq_p *p);

static int jq_push(jq_node *n, jq_node *kid)
{
  jq_node **k = realloc(n->kids, (n->n + 1) * sizeof *k);
  if (k == NULL)
    return -1;
  n->kids = k;
  n->kids[n->n++] = kid;
  return 0;
}

static void jq_utf8(char **o, unsigned cp)
{
  char *d = *o;
  if (cp < 0x80) {
    *d++ = (char)cp;
  } else if (cp < 0x800) {
    *d++ = (char)(0xc0 | cp >> 6);
    *d++ = (char)(0x80 | (cp & 0x3f));
  } else {
    *d++ = (char)(0xe0 | cp >> 12);
    *d++ = (char)(0x80 | ((cp >> 6) & 0x3f));
    *d++ = (char)(0x80 | (cp & 0x3f));
  }
  *o = d;
}

/* A string literal at p->s (on the opening quote); NULL if malformed. */
static char *jq_string(jq_p *p)
{
  if (*p->s != '"')
    return NULL;
  const char *s = ++p->s;
  char *out = malloc(strlen(s) * 3 + 1), *o = out;
  if (out == NULL)
    return NULL;
  for (;;) {
    unsigned char c = (unsigned char)*s++;
    if (c == '"')
      break;
    if (c < 0x20)
      goto bad;
    if (c != '\\') {
      *o++ = (char)c;
      continue;
    }
    c = (unsigned char)*s++;
    switch (c) {
    case '"': *o++ = '"'; break;
    case '\\': *o++ = '\\'; break;
    case '/': *o++ = '/'; break;
    case 'b': *o++ = '\b'; break;
    case 'f': *o++ = '\f'; break;
    case 'n': *o++ = '\n'; break;
    case 'r': *o++ = '\r'; break;
    case 't': *o++ = '\t'; break;
    case 'u': {
      unsigned cp = 0;
      for (int i = 0; i < 4; i++) {
        if (!isxdigit((unsigned char)s[i]))
          goto bad;
        cp = cp * 16 + (unsigned)(isdigit((unsigned char)s[i])
                                      ? s[i] - '0'
                                      : tolower((unsigned char)s[i]) - 'a' + 10);
      }
      s += 4;
      jq_utf8(&o, cp);
      break;
    }
    default:
      goto bad;
    }
  }
  *o = '\0';
  p->s = s;
  return out;
bad:
  free(out);
  return NULL;
}

/* RFC 8259 number grammar, checked by hand (strtod accepts more). */
static jq_node *jq_number(jq_p *p, jq_node *n)
{
  const char *s = p->s;
  if (*s == '-')
    s++;
  if (*s == '0')
    s++;
  else if (*s >= '1' && *s <= '9')
    while (isdigit((unsigned char)*s))
      s++;
  else
    return NULL;
  if (*s == '.') {
    s++;
    if (!isdigit((unsigned char)*s))
      return NULL;
    while (isdigit((unsigned char)*s))
      s++;
  }
  if (*s == 'e' || *s == 'E') {
    s++;
    if (*s == '+' || *s == '-')
      s++;
    if (!isdigit((unsigned char)*s))
      return NULL;
    while (isdigit((unsigned char)*s))
      s++;
  }
  n->type = JQ_NUM;
  n->text = strndup(p->s, (size_t)(s - p->s));
  n->num = strtod(n->text, NULL);
  p->s = s;
  return n;
}

static jq_node *jq_value(jq_p *p)
{
  if (++p->depth > 64)
    return NULL;
  jq_ws(p);
  jq_node *n = calloc(1, sizeof *n);
  if (n == NULL)
    return NULL;
  if (*p->s == '{' || *p->s == '[') {
    int obj = *p->s == '{';
    char close = obj ? '}' : ']';
    n->type = obj ? JQ_OBJ : JQ_ARR;
    p->s++;
    jq_ws(p);
    if (*p->s == close) {
      p->s++;
      goto ok;
    }
    for (;;) {
      char *key = NULL;
      if (obj) {
        jq_ws(p);
        if ((key = jq_string(p)) == NULL)
          goto bad;
        jq_ws(p);
        if (*p->s++ != ':') {
          free(key);
          goto bad;
        }
      }
      jq_node *kid = jq_value(p);
      if (kid == NULL) {
        free(key);
        goto bad;
      }
      kid->key = key;
      if (jq_push(n, kid) != 0) {
        jq_free(kid);
        goto bad;
      }
      jq_ws(p);
      if (*p->s == ',') {
        p->s++;
        continue;
      }
      if (*p->s++ != close)
        goto bad;
      break;
    }
  } else if (*p->s == '"') {
    n->type = JQ_STR;
    if ((n->text = jq_string(p)) == NULL)
      goto bad;
  } else if (strncmp(p->s, "true", 4) == 0) {
    n->type = JQ_BOOL;
    n->b = 1;
    p->s += 4;
  } else if (strncmp(p->s, "false", 5) == 0) {
    n->type = JQ_BOOL;
    p->s += 5;
  } else if (strncmp(p->s, "null", 4) == 0) {
    n->type = JQ_NULL;
    p->s += 4;
  } else if (jq_number(p, n) == NULL) {
    goto bad;
  }
ok:
  p->depth--;
  return n;
bad:
  jq_free(n);
  return NULL;
}

jq_node *jq_parse(const char *text)
{
  jq_p p = {text, 0};
  jq_node *n = jq_value(&p);
  if (n == NULL)
    return NULL;
  jq_ws(&p);
  if (*p.s != '\0') {
    jq_free(n);
    return NULL;
  }
  return n;
}

void jq_free(jq_node *n)
{
  if (n == NULL)
    return;
  for (size_t i = 0; i < n->n; i++)
    jq_free(n->kids[i]);
  free(n->kids);
  free(n->text);
  free(n->key);
  free(n);
}

const jq_node *jq_get(const jq_node *n, const char *key)
{
  if (n == NULL || n->type != JQ_OBJ)
    return NULL;
  for (size_t i = 0; i < n->n; i++)
    if (strcmp(n->kids[i]->key, key) == 0)
      return n->kids[i];
  return NULL;
}

const jq_node *jq_at(const jq_node *n, size_t i)
{
  if (n == NULL || n->type != JQ_ARR || i >= n->n)
    return NULL;
  return n->kids[i];
}

int jq_u64(const jq_node *n, uint64_t *out)
{
  if (n == NULL || n->type != JQ_NUM || n->text[0] == '-' ||
      strpbrk(n->text, ".eE") != NULL)
    return -1;
  errno = 0;
  unsigned long long v = strtoull(n->text, NULL, 10);
  if (errno != 0)
    return -1;
  *out = v;
  return 0;
}

int jq_i64(const jq_node *n, int64_t *out)
{
  if (n == NULL || n->type != JQ_NUM || strpbrk(n->text, ".eE") != NULL)
    return -1;
  errno = 0;
  long long v = strtoll(n->text, NULL, 10);
  if (errno != 0)
    return -1;
  *out = v;
  return 0;
}
