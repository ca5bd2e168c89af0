/* stream.h - streamed reductions: a job's input and mask arrive in pieces
 * of bounded size, then a commit runs it (docs/protocol.md "Streams").
 *
 * A remote client cannot share memory, and one message per job would need
 * a socket limit as big as the largest job (and as much memory per
 * connection).  So StreamOpen announces the job (dtype, op, sizes: JOBSIZE
 * and TOOBIG come at once, before any rows travel), the daemon answers
 * the piece size (its own, from its request limit, or a smaller one the
 * open asks: a client's ring of small slots); StreamPut pieces, in any
 * order, each at a multiple of the piece size, are
 *  - online (an unmasked float sum of one chunk): reduced by the decode
 *    thread that received them, as they arrive, to the values of their
 *    blocks of 256^2 rows (256 where a piece's rows are no multiple of
 *    256^2; core/reduce.h wv_f32_block), the message then freed.  A block
 *    starts at a multiple of its size from the chunk's start, so its value
 *    is the chunk's level-2 (level-1) partial of docs/reduction.md, and the
 *    chunk's value the levels over the blocks' values in order: the commit
 *    hands a device the one-chunk job of those values, whose answer has
 *    the bits of the whole job (its count and rows are the stream's,
 *    wd_stream_stands_for).  The daemon holds one value per block (8
 *    bytes per 512 KiB of float64 rows at the default piece), not the
 *    rows, and counts only that against its limits;
 *  - kept in their received messages (order-free ops: the pieces become
 *    the job's chunks, no copy at all);
 *  - or copied into one buffer of the job's size (a masked float sum, or
 *    one of several chunks, whose blocks need not fall inside a piece);
 * A piece comes as bytes (`data`, or a framed request's payload) or by
 * place (`from`: an extent of a mapped or copy region of the connection,
 * checked as a reduction's extent is, bulk/decode.c): its rows are read
 * there before the put returns, so the client may reuse them (a ring of
 * slots, client/reduce.c wave_reduce_ring) once it has the reply.
 * StreamCommit checks that every piece arrived (INCOMPLETE names the first
 * missing one) and hands the job to a device.  A piece sent twice (nng
 * resends) lands twice in the same place.
 *
 * A stream belongs to its connection (nng pipe): another connection cannot
 * see it, and it is dropped when the connection goes.  Buffers of all
 * streams and copy regions together stay within limits.max_stream_bytes,
 * and each client's within its share (share.h).  The table has one
 * mutex; a stream is reference-counted (the table, a put copying, the job).
 */
#ifndef WD_STREAM_H
#define WD_STREAM_H

#include <stdint.h>

#include <nng/nng.h>

#include "daemon/config.h"
#include "daemon/bulk/share.h"
#include "wave/error.h"
#include "workers/worker.h"

#define WD_STREAMS_PER_CLIENT 64
#define WD_STREAM_PIECE_MAX ((uint64_t)16 << 20)

typedef struct wd_stream wd_stream;
typedef struct wd_streams wd_streams;

/* sh: the clients' shares (share.h), kept by the caller. */
int wd_streams_new(const wd_limits *lim, wd_shares *sh, wd_streams **out,
                   wave_error *err);
void wd_streams_free(wd_streams *t);

/* A stream, as StreamOpenRequest says it (bulk/decode.c reads the message;
 * this table knows no protobuf).  dtype and op as sent, checked here. */
typedef struct wd_stream_spec {
  int dtype, op;
  int masked;
  const char *device;       /* may be NULL */
  uint64_t input_bytes, mask_bytes;
  size_t n_input_chunks;    /* the client's chunk boundaries, or none */
  const uint64_t *input_chunks;
  int level;                /* its reduction's priority and deadline */
  unsigned deadline_ms;
  uint64_t piece_bytes;     /* a smaller piece asked, or 0 */
} wd_stream_spec;

/* What StreamInfo says of a stream. */
typedef struct wd_stream_info {
  uint64_t stream_id, piece_bytes, input_bytes, mask_bytes, received_bytes;
} wd_stream_info;

/* who: the principal whose share the stream draws on; key: its
 * wd_peer_key. */
int wd_streams_open(wd_streams *t, uint32_t pipe, uint64_t key,
                    const char *who,
                    const wd_stream_spec *rq, wd_stream_info *info,
                    wave_error *err);
/* One piece (data, len) of stream id; info: the stream after it.  When
 * data lies in *msg (a framed request) the stream may keep the message
 * itself (then *msg is set to NULL) instead of copying the rows. */
int wd_streams_put(wd_streams *t, uint32_t pipe, uint64_t id, int mask,
                   uint64_t offset, const uint8_t *data, size_t len,
                   nng_msg **msg, wd_stream_info *info, wave_error *err);
/* Complete?  Then the stream leaves the table and *out holds it (with the
 * table's reference) for the job; abort: it is dropped, *out NULL. */
int wd_streams_commit(wd_streams *t, uint32_t pipe, uint64_t id, int abort,
                      wd_stream **out, wd_stream_info *info,
                      wave_error *err);
void wd_streams_drop_pipe(wd_streams *t, uint32_t pipe);
unsigned wd_streams_count(wd_streams *t);
/* The priority and deadline its open asked for (wd_work.level). */
void wd_stream_level(const wd_stream *s, int *level, unsigned *deadline_ms);
/* How many open streams pipe has (the idle sweep keeps it). */
unsigned wd_streams_held(wd_streams *t, uint32_t pipe);

/* The committed job: *spans (allocated) holds the n_input input chunks,
 * then the n_mask mask chunks. */
int wd_stream_job(const wd_stream *s, wv_span **spans, size_t *n_input,
                  size_t *n_mask, wave_dtype *dtype, wave_op *op, int *masked,
                  const char **device);
void wd_stream_put(wd_stream *s);
/* An online stream (above): the input rows its job's values stand for,
 * which the reply says as its rows and count; 0 for any other stream. */
uint64_t wd_stream_stands_for(const wd_stream *s);

#endif
