/* turns.c - the FIFOs and owner turns of a device's lanes (turns.h). */
#include <stdint.h>
#include <stdlib.h>

#include "daemon/exec/turns.h"

void wd_fifo_push(wd_fifo *q, wd_work *w)
{
  w->next = NULL;
  *q->tail = w;
  q->tail = &w->next;
  q->n++;
}

void wd_fifo_push_front(wd_fifo *q, wd_work *w)
{
  w->next = q->head;
  if (q->head == NULL)
    q->tail = &w->next;
  q->head = w;
  q->n++;
}

wd_work *wd_fifo_pop(wd_fifo *q)
{
  wd_work *w = q->head;
  if (w != NULL) {
    if ((q->head = w->next) == NULL)
      q->tail = &q->head;
    q->n--;
    w->next = NULL;
  }
  return w;
}

wd_group *wd_group_find(wd_fair *f, uint64_t key)
{
  for (wd_group *g = f->owners; g != NULL; g = g->all_next)
    if (g->key == key)
      return g;
  return NULL;
}

/* key's group in f, made if it has none; NULL when out of memory. */
wd_group *wd_group_get(wd_fair *f, uint64_t key)
{
  wd_group *g = wd_group_find(f, key);
  if (g == NULL && (g = calloc(1, sizeof *g)) != NULL) {
    g->key = key;
    g->q.tail = &g->q.head;
    g->all_next = f->owners;
    f->owners = g;
  }
  return g;
}

static void tn_ring_push(wd_fair *f, wd_group *g, int front)
{
  if (g->in_ring)
    return;
  g->in_ring = 1;
  if (front) {
    g->next = f->ring;
    if (f->ring == NULL)
      f->ring_tail = &g->next;
    f->ring = g;
  } else {
    g->next = NULL;
    *f->ring_tail = g;
    f->ring_tail = &g->next;
  }
}

void wd_fair_unring(wd_fair *f, wd_group *g)
{
  if (!g->in_ring)
    return;
  for (wd_group **pp = &f->ring; *pp != NULL; pp = &(*pp)->next)
    if (*pp == g) {
      *pp = g->next;
      if (f->ring_tail == &g->next)
        f->ring_tail = pp;
      break;
    }
  g->in_ring = 0;
  g->next = NULL;
}

/* One of g's members has ended or left: drop g with its last one. */
void wd_group_release(wd_fair *f, wd_group *g)
{
  if (--g->members > 0)
    return;
  wd_fair_unring(f, g);
  for (wd_group **pp = &f->owners; *pp != NULL; pp = &(*pp)->all_next)
    if (*pp == g) {
      *pp = g->all_next;
      break;
    }
  free(g);
}

void wd_fair_free(wd_fair *f)
{
  for (wd_group *g = f->owners, *nx; g != NULL; g = nx) {
    nx = g->all_next;  /* parked items' groups, left at stop */
    free(g);
  }
  f->owners = NULL;
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
  wd_group *g = f->ring;
  if (g == NULL)
    return NULL;
  if ((f->ring = g->next) == NULL)
    f->ring_tail = &f->ring;
  g->in_ring = 0;
  g->next = NULL;
  wd_work *w = wd_fifo_pop(&g->q);
  f->n--;
  if (g->q.head != NULL)
    tn_ring_push(f, g, 0);
  return w;
}

/* w into its owner's queue.  An owner with nothing queued takes the turn
 * being served, or the one after its last item if that is later; each
 * further item the next turn (again, between slices: w goes first). */
void wd_short_push(wd_fair *f, wd_group *g, wd_work *w, int again)
{
  if (g->q.head == NULL) {
    g->tag = g->finish > f->now ? g->finish : f->now;
    g->finish = g->tag + 1;
  } else {
    g->finish++;
  }
  g->members++;
  wd_fair_push(f, g, w, again && g->q.head != NULL);
}

/* The queued reduction with the earliest turn (the ring's order among
 * equal ones); its owner's next item takes the next turn.  Owners with
 * nothing queued are forgotten once their last turn has come. */
wd_work *wd_short_pop(wd_fair *f)
{
  wd_group *g = NULL;
  for (wd_group *o = f->ring; o != NULL; o = o->next)
    if (g == NULL || o->tag < g->tag)
      g = o;
  if (g == NULL)
    return NULL;
  wd_fair_unring(f, g);
  wd_work *w = wd_fifo_pop(&g->q);
  f->n--;
  g->members--;
  f->now = g->tag++;
  if (g->q.head != NULL)
    tn_ring_push(f, g, 0);
  for (wd_group **pp = &f->owners; *pp != NULL;) {
    wd_group *o = *pp;
    if (o->members == 0 && o->finish <= f->now) {
      *pp = o->all_next;
      free(o);
    } else {
      pp = &o->all_next;
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

/* Unlink w from g's queue. */
static void tn_unlink(wd_group *g, wd_work *w)
{
  for (wd_work **pp = &g->q.head; *pp != NULL; pp = &(*pp)->next)
    if (*pp == w) {
      if ((*pp = w->next) == NULL)
        g->q.tail = pp;
      g->q.n--;
      return;
    }
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
  for (wd_group *g = f->ring; g != NULL; g = g->next, ring++) {
    uint64_t turn = g->tag;
    for (wd_work *w = g->q.head; w != NULL && n < f->n; w = w->next, turn++)
      if (take(w))
        t[n++] = (tn_took){turn, ring, g, w};
  }
  qsort(t, n, sizeof *t, tn_took_cmp);
  for (size_t i = 0; i < n; i++) {
    wd_group *g = t[i].g;
    tn_unlink(g, t[i].w);
    f->n--;
    g->members--;
    g->finish--;  /* its later items move up a turn */
    if (g->q.head == NULL) {  /* nothing queued: as if it had not queued */
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
  while (r < n && q[r].ring == NULL)
    r++;
  return r;
}
