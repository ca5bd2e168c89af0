/* principal.c - request principals and closed connections (see
 * principal.h; the job keys are jobs/owner.c's). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/net/principal.h"
#include "workers/hash/hash.h"

void wd_peer_identify(nng_msg *m, uint32_t *pipe, char *principal,
                      size_t size)
{
  nng_pipe p = nng_msg_get_pipe(m);
  int id = nng_pipe_id(p);
  uint64_t uid = 0;
  *pipe = id > 0 ? (uint32_t)id : 0;
  /* ipc answers the peer's uid (SO_PEERCRED, a uint64_t in nng); tcp
   * answers NNG_ENOTSUP */
  if (id > 0 && nng_pipe_get_uint64(p, NNG_OPT_IPC_PEER_UID, &uid) == 0)
    snprintf(principal, size, "uid:%llu", (unsigned long long)uid);
  else
    snprintf(principal, size, "pipe:%u", *pipe);
}

int wd_peer_may(const char *who, const char *owner)
{
  return strcmp(who, owner) == 0 || strcmp(who, "uid:0") == 0;
}

uint64_t wd_peer_key(const char *principal)
{
  return wv_fnv1a64(WV_FNV_OFFSET, principal, strlen(principal));
}

void wd_gone_init(wd_gone *g)
{
  memset(g, 0, sizeof *g);
  pthread_mutex_init(&g->mu, NULL);
}

void wd_gone_free(wd_gone *g)
{
  free(g->ids);
  g->ids = NULL;
  pthread_mutex_destroy(&g->mu);
}

int wd_gone_add(wd_gone *g, uint32_t pipe)
{
  int rc = 0;
  pthread_mutex_lock(&g->mu);
  if (g->n == g->cap) {
    size_t cap = g->cap ? 2 * g->cap : 64;
    uint32_t *ids = realloc(g->ids, cap * sizeof *ids);
    if (ids == NULL) {
      rc = -1;
    } else {
      g->ids = ids;
      g->cap = cap;
    }
  }
  if (rc == 0)
    g->ids[g->n++] = pipe;
  pthread_mutex_unlock(&g->mu);
  return rc;
}

void wd_gone_take(wd_gone *g, uint32_t **out, size_t *n)
{
  pthread_mutex_lock(&g->mu);
  *out = g->ids;
  *n = g->n;
  g->ids = NULL;
  g->n = g->cap = 0;
  pthread_mutex_unlock(&g->mu);
  for (size_t i = 0; i < *n; i++)
    g->recent[g->n_recent++ % WD_GONE_RECENT] = (*out)[i];
}

int wd_gone_recent(const wd_gone *g, uint32_t pipe)
{
  size_t n = g->n_recent < WD_GONE_RECENT ? g->n_recent : WD_GONE_RECENT;
  for (size_t i = 0; i < n; i++)
    if (g->recent[i] == pipe)
      return 1;
  return 0;
}
