/* front.h - the nng side of the request socket (net/front.c): the REP
 * contexts and their pool, and the reply primitives every handler answers
 * through.  Loop thread unless said otherwise.
 */
#ifndef WD_NET_FRONT_H
#define WD_NET_FRONT_H

#include <stdint.h>

#include <nng/nng.h>

#include "proto/wave.pb-c.h"
#include "wave/error.h"

typedef struct wd_req wd_req;
typedef struct wd_server wd_server;

int wd_front_listen(wd_server *s, wave_error *err);
int wd_front_add(wd_server *s, wave_error *err);  /* one more receiving ctx */
void wd_front_send(wd_req *c, nng_msg *m);
void wd_front_recv(wd_req *c);                    /* back to receiving */
void wd_front_extra(wd_req *c);    /* a context for one over its share */
void wd_front_unextra(wd_req *c);
void wd_front_retire(wd_req *c);                  /* close and free */
void wd_front_close(wd_server *s);
void wd_front_free(wd_server *s);
void wd_front_inbox(wd_server *s, wd_req *c);     /* any thread: to the loop */
/* The connection's ipc peer (uid, pid; -1 when unknown or not ipc):
 * 0, or -1 when the pipe is gone.  For job ownership. */
int wd_front_peer(wd_server *s, uint32_t pipe, int *uid, int *pid);
/* limits.max_peer_requests, bounded by a quarter of the pool */
unsigned wd_front_peer_cap(const wd_server *s);

/* Pack r (its envelope: the request's id and version) and send it; the
 * request is cleared first (net/req.c). */
void wd_reply(wd_req *c, Wave__V1__Response *r);
void wd_reply_error(wd_req *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* wd_reply_error of err, counted as a failed request. */
void wd_reply_fail(wd_req *c, const wave_error *err);

#endif
