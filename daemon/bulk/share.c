/* share.c - per-client shares (see share.h).  A few dozen principals at
 * most hold anything at once, so a plain array searched in order does;
 * a principal that holds nothing leaves it. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "daemon/bulk/share.h"
#include "core/base.h"

typedef struct {
  uint64_t key;
  wd_share_row row;  /* its principal's name and what it holds */
} sh_one;

struct wd_shares {
  pthread_mutex_t mu;
  sh_one *v;
  size_t n, cap;
  uint64_t max[WD_SHARE_KINDS];  /* each client's share */
  uint64_t buf, buf_max;         /* buffered bytes, all clients */
};

static const char *const sh_limit[WD_SHARE_KINDS] = {
  "limits.max_client_region_bytes", "limits.max_client_stream_bytes",
  "limits.max_client_files"};
static const char *const sh_what[WD_SHARE_KINDS] = {
  "bytes of regions", "bytes of copy regions and streams",
  "descriptors of file regions"};

wd_shares *wd_shares_new(const wd_limits *lim)
{
  wd_shares *s = calloc(1, sizeof *s);
  if (s == NULL)
    return NULL;
  pthread_mutex_init(&s->mu, NULL);
  s->max[WD_SHARE_REGION] = lim->max_client_region_bytes;
  s->max[WD_SHARE_BUF] = lim->max_client_stream_bytes;
  s->max[WD_SHARE_FILES] = lim->max_client_files;
  s->buf_max = lim->max_stream_bytes;
  return s;
}

void wd_shares_free(wd_shares *s)
{
  if (s == NULL)
    return;
  pthread_mutex_destroy(&s->mu);
  free(s->v);
  free(s);
}

static sh_one *sh_find(wd_shares *s, uint64_t key)
{
  for (size_t i = 0; i < s->n; i++)
    if (s->v[i].key == key)
      return &s->v[i];
  return NULL;
}

int wd_share_take(wd_shares *s, uint64_t key, const char *who,
                  wd_share_kind kind, uint64_t n, int code, wave_error *err)
{
  pthread_mutex_lock(&s->mu);
  sh_one *o = sh_find(s, key);
  uint64_t had = o ? o->row.used[kind] : 0, max = s->max[kind];
  uint64_t all = s->buf;
  int over = n > max || had > max - n;
  int over_all = kind == WD_SHARE_BUF &&
                 (n > s->buf_max || all > s->buf_max - n);
  if (!over && !over_all && o == NULL) {
    if (s->n == s->cap) {
      size_t cap = s->cap ? 2 * s->cap : 16;
      sh_one *v = realloc(s->v, cap * sizeof *v);
      if (v == NULL) {
        pthread_mutex_unlock(&s->mu);
        return wv_seterr(err, WAVE_ENOMEM, NULL);
      }
      s->v = v;
      s->cap = cap;
    }
    o = &s->v[s->n++];
    *o = (sh_one){.key = key};
    snprintf(o->row.who, sizeof o->row.who, "%s", who);
  }
  if (!over && !over_all) {
    o->row.used[kind] += n;
    if (kind == WD_SHARE_BUF)
      s->buf += n;
  }
  pthread_mutex_unlock(&s->mu);
  if (over_all)  /* first: a share may be the whole total */
    return wv_seterr(err, code, "copy regions and streams hold %" PRIu64
                     " bytes; %" PRIu64 " more would pass limits."
                     "max_stream_bytes (%" PRIu64 "); retry later", all, n,
                     s->buf_max);
  if (over)
    return wv_seterr(err, code, "this client holds %" PRIu64 " %s; %" PRIu64
                     " more would pass its share, %" PRIu64 " (%s)", had,
                     sh_what[kind], n, max, sh_limit[kind]);
  return 0;
}

void wd_share_give(wd_shares *s, uint64_t key, wd_share_kind kind,
                   uint64_t n)
{
  pthread_mutex_lock(&s->mu);
  sh_one *o = sh_find(s, key);
  if (o != NULL) {
    o->row.used[kind] -= n < o->row.used[kind] ? n : o->row.used[kind];
    if (kind == WD_SHARE_BUF)
      s->buf -= n < s->buf ? n : s->buf;
    int empty = 1;
    for (int k = 0; k < WD_SHARE_KINDS; k++)
      empty &= o->row.used[k] == 0;
    if (empty)
      *o = s->v[--s->n];
  }
  pthread_mutex_unlock(&s->mu);
}

uint64_t wd_share_used(wd_shares *s, uint64_t key, wd_share_kind kind)
{
  pthread_mutex_lock(&s->mu);
  sh_one *o = sh_find(s, key);
  uint64_t n = o ? o->row.used[kind] : 0;
  pthread_mutex_unlock(&s->mu);
  return n;
}

int wd_shares_list(wd_shares *s, wd_share_row **rows, size_t *n,
                   uint64_t max[WD_SHARE_KINDS])
{
  pthread_mutex_lock(&s->mu);
  size_t k = s->n;
  wd_share_row *v = calloc(k + 1, sizeof *v);
  for (size_t i = 0; v != NULL && i < k; i++)
    v[i] = s->v[i].row;
  for (int j = 0; j < WD_SHARE_KINDS; j++)
    max[j] = s->max[j];
  pthread_mutex_unlock(&s->mu);
  *rows = v;
  *n = v != NULL ? k : 0;
  return v != NULL ? 0 : WAVE_ENOMEM;
}
