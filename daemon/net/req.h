/* req.h - a request context's decode step and its clearing (net/req.c).
 * The context itself (wd_req) is server_int.h's: the net side fills its
 * envelope, the handlers (rq/) its work. */
#ifndef WD_NET_REQ_H
#define WD_NET_REQ_H

#include "daemon/net/pool.h"

typedef struct wd_req wd_req;

/* Decode thread (the pool item of a context): unpack, authenticate and
 * take the bulk parts of the received message, then hand the context to
 * the loop's inbox. */
void wd_req_decode_cb(wd_pool_item *it);
/* Free what the request holds (decoded message, spans, bulk parts): once
 * its reply is packed, or when nobody is left to answer. */
void wd_req_clear(wd_req *c);

#endif
