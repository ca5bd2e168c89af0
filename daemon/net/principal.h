/* principal.h - who sent a request, and which connections went away.
 *
 * The principal is the identity that owns the hash jobs a request submits
 * (docs/protocol.md "Job ownership"; peer.h keeps the per-connection
 * records): "uid:N" for an ipc peer (nng's NNG_OPT_IPC_PEER_UID on the message's pipe, i.e. SO_PEERCRED), "pipe:N"
 * for a tcp connection (the connection itself; an authenticated request's
 * "token:NAME" replaces it before dispatch).  Only the principal that
 * submitted a job may poll, wait on, list or cancel it; "uid:0" (root over
 * ipc) may see every job.
 *
 * Connections that close: nng's pipe callback (any nng thread) adds the
 * pipe's id to a wd_gone list and wakes the loop, which takes the ids and
 * cancels the jobs tied to them.  The loop also remembers the last
 * WD_GONE_RECENT ids it took, so that a submit decoded before its
 * connection closed but dispatched after the loop took the id is still
 * seen as orphaned.
 */
#ifndef WD_PRINCIPAL_H
#define WD_PRINCIPAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <nng/nng.h>

#define WD_PRINCIPAL_MAX 64
#define WD_GONE_RECENT 1024

/* From the received message m (any thread, before it is freed): its
 * pipe's id and the principal ("uid:N" or "pipe:N"). */
void wd_peer_identify(nng_msg *m, uint32_t *pipe, char *principal,
                      size_t size);
/* May `who` see a job that `owner` submitted? */
int wd_peer_may(const char *who, const char *owner);
/* The fairness key of a principal (device.c's wd_work.owner). */
uint64_t wd_peer_key(const char *principal);

typedef struct wd_gone {
  pthread_mutex_t mu;
  uint32_t *ids;             /* gone, not yet taken (under mu) */
  size_t n, cap;
  uint32_t recent[WD_GONE_RECENT];  /* loop only: taken lately (a ring) */
  size_t n_recent;
} wd_gone;

void wd_gone_init(wd_gone *g);
void wd_gone_free(wd_gone *g);
/* Any thread: pipe has closed.  0, or -1 when out of memory (then that
 * connection's jobs are not cancelled: they run to their end). */
int wd_gone_add(wd_gone *g, uint32_t pipe);
/* Loop: take the ids added since the last take (*out is malloc'd; may be
 * NULL with *n 0); they enter the recent ring. */
void wd_gone_take(wd_gone *g, uint32_t **out, size_t *n);
/* Loop: was pipe taken lately? */
int wd_gone_recent(const wd_gone *g, uint32_t pipe);

#endif
