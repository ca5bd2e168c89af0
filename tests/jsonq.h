/* jsonq.h - a small strict JSON reader for the tests of wavectl's --json
 * output.  It exists so the tests check the output with a parser that knows
 * nothing of how wavectl writes it: anything outside RFC 8259 (a bare nan, a
 * trailing comma, two objects) fails to parse.
 */
#ifndef WV_TEST_JSONQ_H
#define WV_TEST_JSONQ_H

#include <stddef.h>
#include <stdint.h>

typedef enum jq_type { JQ_NULL, JQ_BOOL, JQ_NUM, JQ_STR, JQ_ARR, JQ_OBJ } jq_type;

typedef struct jq_node {
  jq_type type;
  int b;                   /* JQ_BOOL */
  double num;              /* JQ_NUM */
  char *text;              /* JQ_NUM: the literal; JQ_STR: unescaped */
  char *key;               /* member name inside an object */
  struct jq_node **kids;   /* JQ_ARR / JQ_OBJ */
  size_t n;
} jq_node;

/* The whole of text must be one JSON value (whitespace around it allowed);
 * NULL otherwise. */
jq_node *jq_parse(const char *text);
void jq_free(jq_node *n);
/* Member of an object (NULL if absent or n is not an object). */
const jq_node *jq_get(const jq_node *n, const char *key);
/* Element of an array (NULL if out of range). */
const jq_node *jq_at(const jq_node *n, size_t i);
/* An integer literal as uint64 / int64 (exact, no double rounding);
 * 0 on success. */
int jq_u64(const jq_node *n, uint64_t *out);
int jq_i64(const jq_node *n, int64_t *out);

#endif
