/* route.h - a decoded request to its handler (rq/route.c): the loop
 * thread's side, and the decode thread's (the rows run there). */
#ifndef WD_RQ_ROUTE_H
#define WD_RQ_ROUTE_H

typedef struct wd_req wd_req;
typedef struct wd_bulk_in wd_bulk_in;  /* bulk/decode.h */

/* Answer the decode's error, send what the decode thread answered, or
 * apply the gates (version, the connection's share, stopping) and call
 * the body's handler. */
void wd_route(wd_req *c);

/* Decode thread (wd_front_up.decode): for a row that runs there, the
 * gates (a refusal in c->dec_code, for the loop to answer), then its
 * decode body; for any other, a reduction's extents (wd_bulk_decode).
 * 1 when the request's bulk parts were taken, as wd_bulk_decode. */
int wd_route_decode(wd_req *c, const wd_bulk_in *in);

#endif
