/* route.h - a decoded request to its handler (rq/route.c), loop thread. */
#ifndef WD_RQ_ROUTE_H
#define WD_RQ_ROUTE_H

typedef struct wd_req wd_req;

/* Answer the decode's error, send what the decode thread answered, or
 * apply the gates (version, the connection's share, stopping) and call
 * the body's handler. */
void wd_route(wd_req *c);

#endif
