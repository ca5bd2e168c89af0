/* status.h - the status and packs handlers (rq/status.c), loop thread. */
#ifndef WD_RQ_STATUS_H
#define WD_RQ_STATUS_H

typedef struct wd_req wd_req;

void wd_rq_status(wd_req *c);
void wd_rq_packs(wd_req *c);

#endif
