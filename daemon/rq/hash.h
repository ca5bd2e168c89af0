/* hash.h - the hash-job handlers (rq/hash.c), loop thread. */
#ifndef WD_RQ_HASH_H
#define WD_RQ_HASH_H

#include "proto/wave.pb-c.h"

typedef struct wd_req wd_req;

void wd_rq_hash(wd_req *c, const Wave__V1__HashRequest *hr);
void wd_rq_job(wd_req *c, const Wave__V1__JobRequest *jr);
void wd_rq_cancel(wd_req *c, const Wave__V1__CancelRequest *cr);
void wd_rq_jobs(wd_req *c, const Wave__V1__JobsRequest *jq);

#endif
