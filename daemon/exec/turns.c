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

void wd_short_take(wd_fair *f, int (*take)(const wd_work *w), wd_fifo *out)
{
  for (;;) {
    wd_group *g = NULL;
    wd_work **at = NULL;
    uint64_t turn = 0;
    for (wd_group *o = f->ring; o != NULL; o = o->next) {
      uint64_t t = o->tag;  /* o's items have turns tag, tag + 1, ... */
      for (wd_work **pp = &o->q.head; *pp != NULL; pp = &(*pp)->next, t++)
        if (take(*pp)) {
          if (g == NULL || t < turn) {
            g = o;
            at = pp;
            turn = t;
          }
          break;
        }
    }
    if (g == NULL)
      return;
    wd_work *w = *at;
    if ((*at = w->next) == NULL)
      g->q.tail = at;
    g->q.n--;
    f->n--;
    g->members--;
    g->finish--;
    if (g->q.head == NULL) {  /* nothing queued: as if it had not queued */
      wd_fair_unring(f, g);
      g->finish = g->tag;
    }
    wd_fifo_push(out, w);
  }
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
