/* pool.h - the decode threads: requests are unpacked and validated off
 * the libuv loop thread.
 *
 * nng's callback hands a received request to this pool instead of the
 * loop; a pool thread unpacks it (protobuf-c, within the context's memory
 * budget), resolves its bulk parts (daemon/bulk/decode.h: framed payloads, stream
 * pieces, shared-memory regions) and only then appends it to the loop's
 * inbox.  So a 64 MiB request costs the loop nothing, and a stream piece's
 * copy into its job's buffer happens here too.  The pool is two FIFOs
 * (small and big items) with a mutex and a condition variable, its
 * threads named "wd:decode", signals blocked (Valkey's bio.c in
 * miniature); big items never take its last thread, so a small request
 * is never decoded behind a big one (pool.c).
 */
#ifndef WD_DECODE_H
#define WD_DECODE_H

#include "core/queue.h"
#include "wave/error.h"

typedef struct wd_pool_item {
  wv_qnode q;               /* the pool's FIFO */
  void (*fn)(struct wd_pool_item *it);
  int big;                  /* its fn may take milliseconds (set by the
                               pusher): it never takes the last thread */
} wd_pool_item;

typedef struct wd_pool wd_pool;

/* threads, at least 2: big items run on all but one. */
int wd_pool_start(unsigned threads, wd_pool **out, wave_error *err);
/* Queue it; a pool thread calls it->fn(it).  Any thread. */
void wd_pool_push(wd_pool *p, wd_pool_item *it);
/* Run what is queued, then join the threads. */
void wd_pool_stop(wd_pool *p);
void wd_pool_free(wd_pool *p);

#endif
