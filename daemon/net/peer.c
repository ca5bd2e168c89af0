/* peer.c - the per-connection records (see peer.h).
 *
 * Why per pipe: every client shares one pool of nng contexts (front.c), and
 * a context is held from the request's arrival until its reply has left.  A
 * peer that pipelines requests and never reads the replies would hold them
 * all and starve everyone else.  So each pipe counts the contexts it holds
 * (arrival to reply), and front.c keeps every pipe within its share of the
 * pool (limits.max_peer_requests, at most half of it): beyond it a request
 * brings its own context, beyond twice it is answered BUSY, and a pipe
 * holding four times its share while its share of replies wait for it to
 * read them (a peer that reads has about none waiting: nng writes one
 * reply per pipe at a time) is closed.  Parked polls have their own cap (limits.max_peer_parked); a parked
 * context is replaced in the pool, so it does not count as held.
 *
 * The idle sweep: nng 1.5.2 has no receive timeout on a pipe, and a peer
 * that announces a large message and stalls keeps that buffer (up to the
 * socket's receive cap) with nothing visible to the socket.  What the
 * daemon can see is that the pipe completed no message for a long time
 * while holding nothing; front.c closes such pipes (limits.idle_timeout_ms).
 * Holding counts regions and open streams too (the holds hook): a client
 * that registered a region and reduces it every few minutes keeps it.
 *
 * The table: open addressing on the pipe id, under one mutex (nng's pipe
 * callbacks and context callbacks run on nng's threads, the sweep and
 * dispatch on the loop).
 */
#include <pthread.h>
#include <stdlib.h>

#include "daemon/net/peer.h"

typedef struct pr_one {
  uint32_t pipe;           /* 0: free slot; PR_TOMB: deleted */
  int uid, pid;
  unsigned held, parked, sending;
  int doomed;
  uint64_t last_ms;        /* last complete message or reply */
} pr_one;

#define PR_TOMB UINT32_MAX

struct wd_peers {
  pthread_mutex_t mu;
  pr_one *v;
  size_t cap, used, live;  /* slots, non-free slots, live records */
  wd_peers_holds_fn holds;  /* regions or streams held: not idle */
  void *holds_arg;
};

wd_peers *wd_peers_new(void)
{
  wd_peers *p = calloc(1, sizeof *p);
  if (p == NULL)
    return NULL;
  p->cap = 64;
  if ((p->v = calloc(p->cap, sizeof *p->v)) == NULL) {
    free(p);
    return NULL;
  }
  pthread_mutex_init(&p->mu, NULL);
  return p;
}

void wd_peers_free(wd_peers *p)
{
  if (p == NULL)
    return;
  pthread_mutex_destroy(&p->mu);
  free(p->v);
  free(p);
}

static size_t pr_hash(uint32_t id, size_t cap)
{
  return (size_t)((id * 2654435761u) & (cap - 1));
}

static pr_one *pr_find(wd_peers *p, uint32_t id)
{
  for (size_t i = pr_hash(id, p->cap), k = 0; k < p->cap;
       k++, i = (i + 1) & (p->cap - 1)) {
    if (p->v[i].pipe == 0)
      return NULL;
    if (p->v[i].pipe == id)
      return &p->v[i];
  }
  return NULL;
}

static void pr_put(pr_one *v, size_t cap, const pr_one *o)
{
  size_t i = pr_hash(o->pipe, cap);
  while (v[i].pipe != 0 && v[i].pipe != PR_TOMB)
    i = (i + 1) & (cap - 1);
  v[i] = *o;
}

/* Keep the table at most half full (tombstones included). */
static int pr_grow(wd_peers *p)
{
  if ((p->used + 1) * 2 <= p->cap)
    return 0;
  size_t cap = p->cap;
  while ((p->live + 1) * 4 > cap)
    cap *= 2;
  pr_one *v = calloc(cap, sizeof *v);
  if (v == NULL)
    return -1;
  for (size_t i = 0; i < p->cap; i++)
    if (p->v[i].pipe != 0 && p->v[i].pipe != PR_TOMB)
      pr_put(v, cap, &p->v[i]);
  free(p->v);
  p->v = v;
  p->cap = cap;
  p->used = p->live;
  return 0;
}

int wd_peers_add(wd_peers *p, uint32_t pipe, int uid, int pid,
                 unsigned max_conn, uint64_t now_ms)
{
  int rc = 0;
  pthread_mutex_lock(&p->mu);
  if (pipe == 0 || pipe == PR_TOMB || pr_find(p, pipe) != NULL) {
    pthread_mutex_unlock(&p->mu);
    return 0;
  }
  if (p->live >= max_conn || pr_grow(p) != 0) {
    rc = -1;
  } else {
    pr_one o = {.pipe = pipe, .uid = uid, .pid = pid, .last_ms = now_ms};
    size_t i = pr_hash(pipe, p->cap);
    while (p->v[i].pipe != 0 && p->v[i].pipe != PR_TOMB)
      i = (i + 1) & (p->cap - 1);
    if (p->v[i].pipe == 0)
      p->used++;
    p->v[i] = o;
    p->live++;
  }
  pthread_mutex_unlock(&p->mu);
  return rc;
}

void wd_peers_remove(wd_peers *p, uint32_t pipe)
{
  pthread_mutex_lock(&p->mu);
  pr_one *o = pr_find(p, pipe);
  if (o != NULL) {
    *o = (pr_one){.pipe = PR_TOMB};
    p->live--;
  }
  pthread_mutex_unlock(&p->mu);
}

void wd_peers_begin(wd_peers *p, uint32_t pipe, uint64_t now_ms)
{
  pthread_mutex_lock(&p->mu);
  pr_one *o = pr_find(p, pipe);
  if (o != NULL) {
    o->last_ms = now_ms;
    o->held++;
  }
  pthread_mutex_unlock(&p->mu);
}

unsigned wd_peers_held(wd_peers *p, uint32_t pipe)
{
  pthread_mutex_lock(&p->mu);
  pr_one *o = pr_find(p, pipe);
  unsigned n = o ? o->held : 0;
  pthread_mutex_unlock(&p->mu);
  return n;
}

unsigned wd_peers_send(wd_peers *p, uint32_t pipe)
{
  pthread_mutex_lock(&p->mu);
  pr_one *o = pr_find(p, pipe);
  unsigned n = o ? ++o->sending : 0;
  pthread_mutex_unlock(&p->mu);
  return n;
}

unsigned wd_peers_sending(wd_peers *p, uint32_t pipe)
{
  pthread_mutex_lock(&p->mu);
  pr_one *o = pr_find(p, pipe);
  unsigned n = o ? o->sending : 0;
  pthread_mutex_unlock(&p->mu);
  return n;
}

void wd_peers_end(wd_peers *p, uint32_t pipe, int sent, uint64_t now_ms)
{
  pthread_mutex_lock(&p->mu);
  pr_one *o = pr_find(p, pipe);
  if (o != NULL) {
    if (o->held > 0)
      o->held--;
    if (sent && o->sending > 0)
      o->sending--;
    o->last_ms = now_ms;
  }
  pthread_mutex_unlock(&p->mu);
}

int wd_peers_park(wd_peers *p, uint32_t pipe, unsigned cap)
{
  int rc = -1;
  pthread_mutex_lock(&p->mu);
  pr_one *o = pr_find(p, pipe);
  if (o != NULL && o->parked < cap) {
    o->parked++;
    if (o->held > 0)
      o->held--;
    rc = 0;
  }
  pthread_mutex_unlock(&p->mu);
  return rc;
}

void wd_peers_unpark(wd_peers *p, uint32_t pipe)
{
  pthread_mutex_lock(&p->mu);
  pr_one *o = pr_find(p, pipe);
  if (o != NULL && o->parked > 0) {
    o->parked--;
    o->held++;  /* until its reply has left */
  }
  pthread_mutex_unlock(&p->mu);
}

int wd_peers_who(wd_peers *p, uint32_t pipe, int *uid, int *pid)
{
  pthread_mutex_lock(&p->mu);
  pr_one *o = pr_find(p, pipe);
  *uid = o ? o->uid : -1;
  *pid = o ? o->pid : -1;
  pthread_mutex_unlock(&p->mu);
  return o ? 0 : -1;
}

size_t wd_peers_idle(wd_peers *p, uint64_t now_ms, uint64_t idle_ms,
                     uint32_t *out, size_t n)
{
  size_t k = 0;
  pthread_mutex_lock(&p->mu);
  for (size_t i = 0; i < p->cap && k < n; i++) {
    pr_one *o = &p->v[i];
    if (o->pipe == 0 || o->pipe == PR_TOMB)
      continue;
    if (o->doomed || (idle_ms > 0 && o->held == 0 && o->parked == 0 &&
                      now_ms - o->last_ms >= idle_ms &&
                      (p->holds == NULL || !p->holds(p->holds_arg, o->pipe))))
      out[k++] = o->pipe;
  }
  pthread_mutex_unlock(&p->mu);
  return k;
}

void wd_peers_set_holds(wd_peers *p, wd_peers_holds_fn holds, void *arg)
{
  pthread_mutex_lock(&p->mu);
  p->holds = holds;
  p->holds_arg = arg;
  pthread_mutex_unlock(&p->mu);
}

void wd_peers_doom(wd_peers *p, uint32_t pipe)
{
  pthread_mutex_lock(&p->mu);
  pr_one *o = pr_find(p, pipe);
  if (o != NULL)
    o->doomed = 1;
  pthread_mutex_unlock(&p->mu);
}

size_t wd_peers_count(wd_peers *p)
{
  pthread_mutex_lock(&p->mu);
  size_t n = p->live;
  pthread_mutex_unlock(&p->mu);
  return n;
}
