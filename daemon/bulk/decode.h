/* decode.h - the bulk parts of requests, handled on the decode threads:
 * framed payloads (proto/frame.h), streamed jobs (daemon/bulk/stream.h) and
 * shared-memory regions (daemon/bulk/region.h).
 *
 * Stream and region requests are answered completely here (the loop only
 * sends the packed reply), each by its body (wd_bulk_stream_open, ...),
 * which rq/route.c runs on the decode thread once the request passed the
 * route's gates.  A StreamCommit, and a ReduceRequest whose chunks are
 * Extents (wd_bulk_decode), become a prepared reduction (spans and the
 * references that keep their memory alive) that the loop validates
 * against the devices and queues like any other (its rows counted and
 * its job validated here: the loop does nothing per chunk).  Plain
 * requests of fewer than 4,096 chunks are left to the loop.  All of it is
 * O(chunks) except a stream piece's copy into its job's buffer, the one
 * copy of those rows.
 */
#ifndef WD_BULK_H
#define WD_BULK_H

#include <nng/nng.h>

#include "daemon/config.h"
#include "daemon/bulk/filered.h"
#include "daemon/bulk/region.h"
#include "daemon/bulk/stream.h"
#include "proto/wave.pb-c.h"

typedef struct wd_bulk wd_bulk;

/* One request's bulk state; lives in its context until the reply. */
typedef struct wd_bulk_req {
  nng_msg *reply;         /* a packed reply for the loop to send */
  int failed;             /* ... and it is an error, of this code: */
  int fail_code;
  int ready;              /* a reduction is prepared: */
  wave_dtype dtype;
  wave_op op;
  wv_span *spans;         /* n_input, then n_mask */
  wd_fsrc *src;           /* ... where each lies, when files is set */
  int files;              /* some span is in a region (file, copy or
                             mapped): the job runs through wd_file_reduce,
                             which reads what it must (bulk/filered.h) */
  size_t n_input, n_mask;
  uint64_t mem_rows;      /* input rows held in the daemon's memory (a
                             payload, a copy region, a stream): what
                             limits.max_job_rows bounds; mapped and file
                             regions hold none */
  int has_mask;
  int checked;            /* rows counted and the job validated here: */
  uint64_t rows;          /* its input rows (rq/reduce.c takes them) */
  char device[64];
  int level;              /* a stream's priority and deadline (wd_work) */
  unsigned deadline_ms;
  wd_region **regions;    /* references held for the job */
  wd_region *pin;         /* registered: to pin once the reply is sent */
  size_t n_regions;
  wd_stream *stream;      /* likewise */
  uint64_t stands_for;    /* an online stream's rows (stream.h): its job
                             is the values of their blocks, its reply's
                             rows and count are these */
  nng_msg *keep;          /* the framed request whose payload spans use */
  unsigned version;       /* the request's, echoed in replies */
} wd_bulk_req;

/* rd: the server's reader pool (a copy region's read), kept by it. */
int wd_bulk_new(const wd_config *cfg, wd_readers *rd, wd_unpin_fn unpin,
                void *arg, wd_bulk **out, wave_error *err);
void wd_bulk_free(wd_bulk *b);

/* What a body on the decode thread gets: the decoded request; *msg, the
 * received message (its pipe names the client; a stream piece may keep
 * it, setting *msg to NULL); payload/plen, a frame's payload (NULL, 0 for
 * a plain request); who, the request's principal (principal.h;
 * "token:NAME" once a token named it), whose shares it draws on: "uid:N"
 * on ipc, the connection or its token on tcp. */
typedef struct wd_bulk_in {
  const Wave__V1__Request *rq;
  const char *who;
  nng_msg **msg;
  const uint8_t *payload;
  size_t plen;
} wd_bulk_in;

/* Decode thread: the five bodies answered there, rows of rq/route.c's
 * table (which runs one once its request passed the gates).  Each sets
 * out->reply (the answer, or its error), or for a commit out->ready. */
void wd_bulk_stream_open(wd_bulk *b, const wd_bulk_in *in, wd_bulk_req *out);
void wd_bulk_stream_put(wd_bulk *b, const wd_bulk_in *in, wd_bulk_req *out);
void wd_bulk_stream_commit(wd_bulk *b, const wd_bulk_in *in,
                           wd_bulk_req *out);
void wd_bulk_region_register(wd_bulk *b, const wd_bulk_in *in,
                             wd_bulk_req *out);
void wd_bulk_region_unregister(wd_bulk *b, const wd_bulk_in *in,
                               wd_bulk_req *out);
/* Decode thread, any other body: a ReduceRequest's extents (out->ready,
 * or its error in out->reply), or a framed request that is not a
 * reduction (refused).  Returns 1 when it did either, 0 for a plain
 * request for the loop. */
int wd_bulk_decode(wd_bulk *b, const wd_bulk_in *in, wd_bulk_req *out);
/* Where the side sockets keep passed descriptors (daemon/net/fdpass.h). */
wd_fdpass *wd_bulk_fdpass(wd_bulk *b);
/* Release what out holds (references, the kept message, an unsent reply). */
void wd_bulk_clear(wd_bulk_req *out);

/* A connection went away: its regions and streams go too.  Any thread. */
void wd_bulk_drop_pipe(wd_bulk *b, uint32_t pipe);
/* Nonzero when pipe holds a region or an open stream (the idle sweep's
 * hook, wd_peers_set_holds; arg is the wd_bulk). */
int wd_bulk_holds(void *arg, uint32_t pipe);

/* Status fields (the regions principal who may see, region_bytes,
 * streams, the shares who may see: its own, root over ipc every one);
 * snap holds the copies until the reply is packed. */
typedef struct wd_bulk_snap {
  wd_region_snap regions;
  Wave__V1__RegionInfo *infos, **ptrs;
  wd_share_row *rows;
  Wave__V1__PrincipalShare *shares, **share_ptrs;
  char (*side_names)[24];  /* "uid:N" of uids with only side connections */
} wd_bulk_snap;
void wd_bulk_status(wd_bulk *b, const char *who, Wave__V1__StatusReply *sr,
                    wd_bulk_snap *snap);
void wd_bulk_snap_free(wd_bulk_snap *snap);

#endif
