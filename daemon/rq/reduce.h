/* reduce.h - the reduction handlers (rq/reduce.c), loop thread. */
#ifndef WD_RQ_REDUCE_H
#define WD_RQ_REDUCE_H

#include "proto/wave.pb-c.h"

typedef struct wd_req wd_req;

/* ReduceRequest: chunks in the message, or by place (c->bulk.ready). */
void wd_rq_reduce(wd_req *c, const Wave__V1__ReduceRequest *r);
/* StreamCommit: the stream's pieces, gathered by bulk/decode.c. */
void wd_rq_stream_commit(wd_req *c);

#endif
