/* queue.h - the one intrusive list of the project: a circular doubly
 * linked ring of wv_qnode, the head itself a node (libuv's QUEUE is the
 * model).  An element embeds a wv_qnode and is found again from it with
 * WV_Q_ENTRY; a list is its head node, empty when it points at itself.
 * Every operation is O(1) and allocates nothing: push and pop at either
 * end, remove from the middle, and move a whole list to another head (a
 * queue handed from one thread to another under a mutex, then walked
 * without it).  No locking: the list's owner holds whatever lock guards it.
 *
 * A node that is on no list is best kept self-linked (wv_q_init, and
 * wv_q_remove leaves it so), so that wv_q_linked says the truth and a
 * second remove is harmless.
 */
#ifndef WV_QUEUE_H
#define WV_QUEUE_H

#include <stddef.h>

typedef struct wv_qnode {
  struct wv_qnode *next, *prev;
} wv_qnode;

/* The element of type `type` whose member `field` is node n. */
#define WV_Q_ENTRY(n, type, field) \
  ((type *)(void *)((char *)(n) - offsetof(type, field)))

/* for (n = first; n != head; n = n->next): n must not be removed inside;
 * WV_Q_EACH_SAFE keeps the next one in nx first, so n may be. */
#define WV_Q_EACH(n, head) \
  for ((n) = (head)->next; (n) != (head); (n) = (n)->next)
#define WV_Q_EACH_SAFE(n, nx, head) \
  for ((n) = (head)->next, (nx) = (n)->next; (n) != (head); \
       (n) = (nx), (nx) = (n)->next)

static inline void wv_q_init(wv_qnode *q) { q->next = q->prev = q; }

static inline int wv_q_empty(const wv_qnode *q) { return q->next == q; }

/* n is on some list (a self-linked node is on none). */
static inline int wv_q_linked(const wv_qnode *n) { return n->next != n; }

/* n at the tail of q. */
static inline void wv_q_push(wv_qnode *q, wv_qnode *n)
{
  n->prev = q->prev;
  n->next = q;
  q->prev->next = n;
  q->prev = n;
}

/* n at the head of q. */
static inline void wv_q_push_head(wv_qnode *q, wv_qnode *n)
{
  n->next = q->next;
  n->prev = q;
  q->next->prev = n;
  q->next = n;
}

/* n off its list, self-linked after. */
static inline void wv_q_remove(wv_qnode *n)
{
  n->prev->next = n->next;
  n->next->prev = n->prev;
  wv_q_init(n);
}

/* The first node of q, taken off; NULL when q is empty. */
static inline wv_qnode *wv_q_pop(wv_qnode *q)
{
  if (wv_q_empty(q))
    return NULL;
  wv_qnode *n = q->next;
  wv_q_remove(n);
  return n;
}

/* Every node of from, in order, at the tail of to; from is empty after. */
static inline void wv_q_move(wv_qnode *from, wv_qnode *to)
{
  if (wv_q_empty(from))
    return;
  from->next->prev = to->prev;
  to->prev->next = from->next;
  from->prev->next = to;
  to->prev = from->prev;
  wv_q_init(from);
}

#endif
