/* client_int.h - what the files of libwaveclient share (not installed).
 *
 * client.c owns the connection and the one request/reply exchange every call
 * goes through (wv_client_call), and the names and blocks results are made
 * of; reduce.c (wave_reduce), region.c (regions), status.c (status, packs)
 * and job.c (hash jobs) build the calls on it.
 */
#ifndef WV_CLIENT_INT_H
#define WV_CLIENT_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <nng/nng.h>

#include "core/queue.h"
#include "proto/wave.pb-c.h"
#include "wave/client.h"

#define WV_CLIENT_TIMEOUT_MS 30000
/* wave_reduce sends a job in one framed message when the message stays
 * within this many bytes, else as a stream of pieces the daemon sizes.
 * Every daemon receives (and answers, TOOBIG at worst) any message up to
 * 1 MiB + 4 KiB (docs/protocol.md "Oversized requests"), so no job ever
 * meets nng's silent drop; a TOOBIG framed job is sent again as a stream. */
#define WV_CLIENT_FRAME_MAX ((size_t)1 << 20)
/* Stream pieces in flight at once. */
#define WV_CLIENT_STREAM_DEPTH 4

/* One name a result may point at (wv_client_name). */
struct wv_name {
  wv_qnode q;                   /* wave_client.names, newest first */
  char s[];
};

struct wave_client {
  nng_socket sock;
  char *url;
  atomic_int timeout_ms;
  atomic_uint_fast64_t next_id; /* Request.id; starts at a random value */
  uint64_t tag;                 /* HashRequest.client: random, per client */
  _Atomic uint64_t instance;    /* the daemon instance of the last submit */
  int ipc;                      /* an ipc:// URL: replies' peer uid checked */
  long trust_uid;               /* WAVE_DAEMON_UID, or -1 */
  long service_uid;             /* user wavedd (the system service), or -1 */
  char *token;                  /* Request.token, NULL: none (access.c) */
  struct wv_dial *dial;         /* a bounded dial that ran out of time and
                                   still runs (access.c) */
  pthread_mutex_t names_mu;     /* guards names */
  wv_qnode names;               /* wv_name.q: the names results point at */
  size_t n_names;
};

/* The client's copy of name s (NULL: ""), kept until wave_client_close:
 * what the `const char *` names of caller-provided results point at.  0,
 * or WAVE_ENOMEM / WAVE_EIO (past WAVE_CLIENT_NAMES_MAX) with err filled. */
int wv_client_name(wave_client *c, const char *s, const char **out,
                   wave_error *err);

/* A block that holds a result and all its strings (status, packs): sized
 * by a first pass (wv_blk_size), then carved (wv_blk_take, wv_blk_str),
 * so that one free() releases it. */
typedef struct wv_blk {
  char *at;    /* the next free byte */
  char *end;
} wv_blk;
/* Bytes to reserve for a wv_blk_take of n (with its alignment). */
#define WV_BLK_ROOM(n) ((n) + _Alignof(max_align_t))
/* Bytes for s as wv_blk_str stores it. */
size_t wv_blk_size(const char *s);
/* n bytes, zeroed, aligned for any result struct. */
void *wv_blk_take(wv_blk *b, size_t n);
/* A copy of s (NULL: "") in the block. */
const char *wv_blk_str(wv_blk *b, const char *s);

/* 0, or WAVE_EIO when the ipc peer that sent msg is not trusted. */
int wv_client_check_peer(const wave_client *c, nng_msg *msg, wave_error *err);

/* access.c: c->token from opts (or $WAVE_TOKEN_FILE), then dial c->sock to
 * url (tls+tcp://: with a TLS config from opts); now: wait for the
 * connection, at most opts->timeout_ms (WAVE_ETIMEDOUT past it).  0, or a WAVE_E* code with err filled. */
int wv_client_access(wave_client *c, const char *url,
                     const wave_client_options *opts, int now,
                     wave_error *err);
/* After nng_close: join a dial left running (access.c). */
void wv_client_access_fini(wave_client *c);

/* One exchange: fill req's version and a fresh id, send it on a context of
 * its own, wait up to the client's timeout plus extra_ms for the reply, and
 * unpack it into *resp (free with wave__v1__response__free_unpacked).  A
 * Response carrying an Error is turned into that error's code and message;
 * otherwise the body must be `want` (WAVE__V1__RESPONSE__BODY_*). */
int wv_client_call(wave_client *c, Wave__V1__Request *req, int want,
                   unsigned extra_ms, Wave__V1__Response **resp,
                   wave_error *err);

/* Build req's message (version, a fresh id in req->id): with data NULL a
 * plain Request; else a frame (proto/frame.h) with room for `payload`
 * bytes, at *data, for the caller to fill. */
int wv_client_msg(wave_client *c, Wave__V1__Request *req, size_t payload,
                  nng_msg **out, uint8_t **data, wave_error *err);
/* The exchange of wv_client_call for a message already built (taken over). */
int wv_client_call_msg(wave_client *c, nng_msg *msg, uint64_t id, int want,
                       unsigned extra_ms, Wave__V1__Response **resp,
                       wave_error *err);
/* Unpack and check a reply (taken over) as wv_client_call does. */
int wv_client_reply(wave_client *c, nng_msg *msg, uint64_t id, int want,
                    Wave__V1__Response **resp, wave_error *err);
/* reduce.c: the ReduceRequest whose chunks are ex[0..n_input) (inputs) and
 * then ex[n_input..n_input + n_mask) (masks), for reduce.c's framed
 * messages and region.c's region extents alike. */
/* The level and deadline of a request (wave_reduce_request's and
 * wave_region_reduce's last fields) into rr. */
#define WV_CLIENT_LEVEL(rr, req)                                               \
  ((rr)->priority = (Wave__V1__Priority)(req)->priority,                       \
   (rr)->deadline_ms = (req)->deadline_ms)
void wv_client_reduce_fill(Wave__V1__ReduceRequest *rr, wave_dtype dtype,
                           wave_op op, int has_mask, const char *device,
                           Wave__V1__Extent **ex, size_t n_input,
                           size_t n_mask);

/* The result of a ReduceResult reply (frees resp). */
int wv_client_reduce_result(wave_client *c, Wave__V1__Response *resp,
                            wave_reduce_result *res, wave_error *err);
/* Reductions of big inputs in pieces (reduce.c), used by wave_reduce;
 * through the slots of ring when not NULL (wave_reduce_ring). */
int wv_client_stream_reduce(wave_client *c, const wave_reduce_request *req,
                            wave_region *ring, wave_reduce_result *res,
                            wave_error *err);

/* Copy a protobuf string (NULL-safe) into a fixed buffer, truncating
 * (wave_error.message only). */
void wv_client_copy(char *dst, size_t n, const char *src);

#endif
