/* peer.h - one record per connection (nng pipe) of wavedd's socket: what it
 * holds (contexts, parked polls), when it last completed a message, and
 * who it is (the ipc peer's uid and pid).  front.c fills it from nng's pipe
 * events and its context callbacks; see peer.c for the limits it enforces.
 * Every call is thread safe (one mutex); none calls into nng.
 */
#ifndef WD_PEER_H
#define WD_PEER_H

#include <stddef.h>
#include <stdint.h>

typedef struct wd_peers wd_peers;

wd_peers *wd_peers_new(void);
void wd_peers_free(wd_peers *p);

/* A pipe joined (uid, pid -1 when not ipc); 0, or -1 when max connections
 * are already open (the caller closes the pipe). */
int wd_peers_add(wd_peers *p, uint32_t pipe, int uid, int pid,
                 unsigned max_conn, uint64_t now_ms);
void wd_peers_remove(wd_peers *p, uint32_t pipe);
/* A request arrived on pipe and holds a context until wd_peers_end. */
void wd_peers_begin(wd_peers *p, uint32_t pipe, uint64_t now_ms);
/* Contexts the pipe holds now (parked ones excepted). */
unsigned wd_peers_held(wd_peers *p, uint32_t pipe);
/* A reply was handed to nng for pipe; returns the replies of pipe handed
 * over and not yet left, this one included. */
unsigned wd_peers_send(wd_peers *p, uint32_t pipe);
/* Replies of pipe handed over and not yet left. */
unsigned wd_peers_sending(wd_peers *p, uint32_t pipe);
/* The context's reply has left or failed (sent: it was counted by
 * wd_peers_send); the context no longer counts. */
void wd_peers_end(wd_peers *p, uint32_t pipe, int sent, uint64_t now_ms);
/* Parking a poll: 0 and counted when the pipe parks fewer than cap (its
 * context then no longer counts as held); -1 otherwise. */
int wd_peers_park(wd_peers *p, uint32_t pipe, unsigned cap);
void wd_peers_unpark(wd_peers *p, uint32_t pipe);
/* The pipe's ipc peer credentials (-1 when unknown); 0, or -1 when the
 * pipe is gone. */
int wd_peers_who(wd_peers *p, uint32_t pipe, int *uid, int *pid);
/* Mark pipe to be closed by the next wd_peers_idle (nng's callbacks do
 * not close pipes themselves). */
void wd_peers_doom(wd_peers *p, uint32_t pipe);
/* Up to n pipes marked by wd_peers_doom, and pipes that hold nothing and completed no message for idle_ms
 * (a peer stalled inside a partial message looks like this); returns how
 * many were written to out. */
size_t wd_peers_idle(wd_peers *p, uint64_t now_ms, uint64_t idle_ms,
                     uint32_t *out, size_t n);
size_t wd_peers_count(wd_peers *p);
/* What a connection holds beyond its requests (regions, open streams):
 * a pipe for which holds() answers nonzero is never idle.  server.c
 * injects the bulk tables' answer (wd_bulk_holds); called under the peer
 * table's lock, so holds() must not call back into it. */
typedef int (*wd_peers_holds_fn)(void *arg, uint32_t pipe);
void wd_peers_set_holds(wd_peers *p, wd_peers_holds_fn holds, void *arg);

#endif
