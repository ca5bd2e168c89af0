/* turns.h - the queues a device's lanes are made of, and the turns
 * owners take in them (daemon/exec/device.c says how a device uses them).
 *
 * A wd_fifo is a plain FIFO of work items.  A wd_fair is one lane at one
 * level: its items grouped by owner (wd_work.owner), the groups that have
 * items queued forming a ring.  The long lane pops the ring's first group's
 * first item (wd_fair_pop), and an item that wants more goes to the end of
 * its group, the group to the end of the ring: owners take turns a step at
 * a time.  The short lane serves the same groups by start-time fair
 * queueing (wd_short_push/pop): an item's turn is the one being served
 * when its owner had nothing queued, or the one after its owner's last.
 *
 * Nothing here locks: every call is under the device's mutex.  The items
 * are linked through wd_work.q (a device queue's own link), the groups
 * through their ring and all nodes: every list is a core/queue.h list.
 */
#ifndef WD_TURNS_H
#define WD_TURNS_H

#include <stdint.h>

#include "daemon/exec/work.h"
#include "core/queue.h"

/* Made empty by wd_fifo_init (a zeroed one is not a list). */
typedef struct wd_fifo {
  wv_qnode items;             /* wd_work.q */
  unsigned n;
} wd_fifo;

/* One owner's items in one lane on this device (under mu).  A long-lane
 * group lives while any of its items has not ended (queued, running or
 * parked); a short-lane group while any of its items is queued. */
typedef struct wd_group {
  wv_qnode ring;              /* wd_fair.ring, while it has queued items
                                 (self-linked while off it) */
  wv_qnode all;               /* wd_fair.owners: every group of the lane */
  uint64_t key;
  wd_fifo q;                 /* its queued items, FIFO */
  unsigned members;           /* long: its items not ended; short: queued */
  uint64_t tag, finish;       /* short: its first item's turn, and the
                                 turn after its last one's */
} wd_group;

/* A lane served in turns by owner: the ring of groups with items queued,
 * and every group.  Made empty by wd_fair_init. */
typedef struct wd_fair {
  wv_qnode ring;              /* wd_group.ring */
  wv_qnode owners;            /* wd_group.all */
  unsigned n;                 /* items queued in the ring */
  uint64_t now;               /* short: the turn being served */
} wd_fair;

void wd_fifo_init(wd_fifo *q);
void wd_fifo_push(wd_fifo *q, wd_work *w);
void wd_fifo_push_front(wd_fifo *q, wd_work *w);
wd_work *wd_fifo_pop(wd_fifo *q);
/* w off q, if it is queued there; 1 if it was. */
int wd_fifo_remove(wd_fifo *q, wd_work *w);

void wd_fair_init(wd_fair *f);

/* The owner's group in f, or NULL; wd_group_get makes it (NULL: no
 * memory). */
wd_group *wd_group_find(wd_fair *f, uint64_t key);
wd_group *wd_group_get(wd_fair *f, uint64_t key);
/* One member of g ended: a group with no member left is freed. */
void wd_group_release(wd_fair *f, wd_group *g);
/* g off the ring (it has nothing queued now). */
void wd_fair_unring(wd_fair *f, wd_group *g);
void wd_fair_free(wd_fair *f);

/* Long lane: w to its group (front: it goes first again), the group onto
 * the ring; the ring's first group's first item. */
void wd_fair_push(wd_fair *f, wd_group *g, wd_work *w, int front);
wd_work *wd_fair_pop(wd_fair *f);

/* Short lane: w into its owner's queue at its turn (again: a big one back
 * between slices, first of its group); the item with the earliest turn. */
void wd_short_push(wd_fair *f, wd_group *g, wd_work *w, int again);
wd_work *wd_short_pop(wd_fair *f);

/* Short lane: take out every queued item that take(w) accepts, onto out,
 * earliest turn first (the ring's order among equal ones); the others
 * keep their turns, their owners' later items move up. */
void wd_short_take(wd_fair *f, int (*take)(const wd_work *w), wd_fifo *out);

/* The first of the n lanes q[0..n) with a group on its ring; n if none. */
int wd_fair_top(const wd_fair *q, int n);

#endif
