/* turns.c - the FIFOs and owner turns of a device's lanes (turns.h). */
#include <stdint.h>
#include <stdlib.h>

#include "daemon/exec/turns.h"

#define TN_WORK(n) WV_Q_ENTRY(n, wd_work, q)
#define TN_RING(n) WV_Q_ENTRY(n, wd_group, ring)
#define TN_ALL(n) WV_Q_ENTRY(n, wd_group, all)

void wd_fifo_init(wd_fifo *q)
{
  wv_q_init(&q->items);
  q->n = 0;
}

void wd_fifo_push(wd_fifo *q, wd_work *w)
{
  wv_q_push(&q->items, &w->q);
  q->n++;
}

void wd_fifo_push_front(wd_fifo *q, wd_work *w)
{
  wv_q_push_head(&q->items, &w->q);
  q->n++;
}

wd_work *wd_fifo_pop(wd_fifo *q)
{
  wv_qnode *n = wv_q_pop(&q->items);
  if (n == NULL)
    return NULL;
  q->n--;
  return TN_WORK(n);
}

int wd_fifo_remove(wd_fifo *q, wd_work *w)
{
  wv_qnode *n;
  WV_Q_EACH(n, &q->items)
    if (n == &w->q) {
      wv_q_remove(n);
      q->n--;
      return 1;
    }
  return 0;
}

void wd_fair_init(wd_fair *f)
{
  wv_q_init(&f->ring);
  wv_q_init(&f->owners);
  f->n = 0;
  f->now = 0;
}

wd_group *wd_group_find(wd_fair *f, uint64_t key)
{
  wv_qnode *n;
  WV_Q_EACH(n, &f->owners)
    if (TN_ALL(n)->key == key)
      return TN_ALL(n);
  return NULL;
}

/* key's group in f, made if it has none; NULL when out of memory. */
wd_group *wd_group_get(wd_fair *f, uint64_t key)
{
  wd_group *g = wd_group_find(f, key);
  if (g == NULL && (g = calloc(1, sizeof *g)) != NULL) {
    g->key = key;
    wd_fifo_init(&g->q);
    wv_q_init(&g->ring);
    wv_q_push_head(&f->owners, &g->all);
  }
  return g;
}

static void tn_ring_push(wd_fair *f, wd_group *g, int front)
{
  if (wv_q_linked(&g->ring))
    return;
  if (front)
    wv_q_push_head(&f->ring, &g->ring);
  else
    wv_q_push(&f->ring, &g->ring);
}

void wd_fair_unring(wd_fair *f, wd_group *g)
{
  (void)f;
  wv_q_remove(&g->ring);  /* self-linked after: harmless off the ring */
}

/* One of g's members has ended or left: drop g with its last one. */
void wd_group_release(wd_fair *f, wd_group *g)
{
  if (--g->members > 0)
    return;
  wd_fair_unring(f, g);
  wv_q_remove(&g->all);
  free(g);
}

void wd_fair_free(wd_fair *f)
{
  wv_qnode *n;
  while ((n = wv_q_pop(&f->owners)) != NULL)
    free(TN_ALL(n));  /* parked items' groups, left at stop */
  wv_q_init(&f->ring);
}

/* w (queued or parked before) into its group's queue. */
void wd_fair_push(wd_fair *f, wd_group *g, wd_work *w, int front)
{
  if (front)
    wd_fifo_push_front(&g->q, w);
  else
    wd_fifo_push(&g->q, w);
  f->n++;
  tn_ring_push(f, g, front);
}

/* The next item: the ring's first owner's first item; that owner goes to
 * the ring's end if it has more. */
wd_work *wd_fair_pop(wd_fair *f)
{
  wv_qnode *n = wv_q_pop(&f->ring);
  if (n == NULL)
    return NULL;
  wd_group *g = TN_RING(n);
  wd_work *w = wd_fifo_pop(&g->q);
  f->n--;
  if (g->q.n > 0)
    tn_ring_push(f, g, 0);
  return w;
}

/* w into its owner's queue.  An owner with nothing queued takes the turn
 * being served, or the one after its last item if that is later; each
 * further item the next turn (again, between slices: w goes first). */
void wd_short_push(wd_fair *f, wd_group *g, wd_work *w, int again)
{
  if (g->q.n == 0) {
    g->tag = g->finish > f->now ? g->finish : f->now;
    g->finish = g->tag + 1;
  } else {
    g->finish++;
  }
  g->members++;
  wd_fair_push(f, g, w, again && g->q.n > 0);
}

/* The queued reduction with the earliest turn (the ring's order among
 * equal ones); its owner's next item takes the next turn.  Owners with
 * nothing queued are forgotten once their last turn has come. */
wd_work *wd_short_pop(wd_fair *f)
{
  wd_group *g = NULL;
  wv_qnode *n, *nx;
  WV_Q_EACH(n, &f->ring)
    if (g == NULL || TN_RING(n)->tag < g->tag)
      g = TN_RING(n);
  if (g == NULL)
    return NULL;
  wd_fair_unring(f, g);
  wd_work *w = wd_fifo_pop(&g->q);
  f->n--;
  g->members--;
  f->now = g->tag++;
  if (g->q.n > 0)
    tn_ring_push(f, g, 0);
  WV_Q_EACH_SAFE(n, nx, &f->owners) {
    wd_group *o = TN_ALL(n);
    if (o->members == 0 && o->finish <= f->now) {
      wv_q_remove(n);
      free(o);
    }
  }
  return w;
}

/* A queued item wd_short_take takes: its turn, its group's place on the
 * ring, its group. */
typedef struct tn_took {
  uint64_t turn;
  unsigned ring;
  wd_group *g;
  wd_work *w;
} tn_took;

static int tn_took_cmp(const void *a, const void *b)
{
  const tn_took *x = a, *y = b;
  if (x->turn != y->turn)
    return x->turn < y->turn ? -1 : 1;
  return x->ring < y->ring ? -1 : x->ring > y->ring;
}

void wd_short_take(wd_fair *f, int (*take)(const wd_work *w), wd_fifo *out)
{
  /* the turns as queued (an owner's items: tag, tag + 1, ...), before
   * any leaves; no memory: none leaves, they wait */
  tn_took *t = f->n ? malloc(f->n * sizeof *t) : NULL;
  if (t == NULL)
    return;
  size_t n = 0;
  unsigned ring = 0;
  wv_qnode *gn, *wn;
  WV_Q_EACH(gn, &f->ring) {
    wd_group *g = TN_RING(gn);
    uint64_t turn = g->tag;
    WV_Q_EACH(wn, &g->q.items) {
      if (n == f->n)
        break;
      if (take(TN_WORK(wn)))
        t[n++] = (tn_took){turn, ring, g, TN_WORK(wn)};
      turn++;
    }
    ring++;
  }
  qsort(t, n, sizeof *t, tn_took_cmp);
  for (size_t i = 0; i < n; i++) {
    wd_group *g = t[i].g;
    wv_q_remove(&t[i].w->q);  /* off g's queue */
    g->q.n--;
    f->n--;
    g->members--;
    g->finish--;  /* its later items move up a turn */
    if (g->q.n == 0) {  /* nothing queued: as if it had not queued */
      wd_fair_unring(f, g);
      g->finish = g->tag;
    }
    wd_fifo_push(out, t[i].w);
  }
  free(t);
}

/* The lanes are a device's levels, highest first: the highest level with
 * items queued (turns.h). */
int wd_fair_top(const wd_fair *q, int n)
{
  int r = 0;
  while (r < n && wv_q_empty(&q[r].ring))
    r++;
  return r;
}
