/* req.h - a request context's decode step and its clearing (net/req.c).
 * The context itself (wd_req) is server_int.h's: the net side fills its
 * envelope, the handlers (rq/) its work. */
#ifndef WD_NET_REQ_H
#define WD_NET_REQ_H

typedef struct wd_req wd_req;

/* Decode thread: unpack, authenticate and take the bulk parts of the
 * received message (c->msg, freed or kept), or set c->dec_code.  Touches
 * only c and what is constant or locked (cfg, the bulk tables). */
void wd_req_decode(wd_req *c);
/* Free what the request holds (decoded message, spans, bulk parts): once
 * its reply is packed, or when nobody is left to answer. */
void wd_req_clear(wd_req *c);

#endif
