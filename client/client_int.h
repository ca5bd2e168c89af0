/* client_int.h - what the files of libwaveclient share (not installed).
 *
 * client.c owns the connection and the one request/reply exchange every call
 * goes through (wv_client_call); job.c builds the hash-job calls on it.
 */
#ifndef WV_CLIENT_INT_H
#define WV_CLIENT_INT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <nng/nng.h>

#include "proto/wave.pb-c.h"
#include "wave/client.h"

#define WV_CLIENT_TIMEOUT_MS 30000

struct wave_client {
  nng_socket sock;
  char *url;
  atomic_int timeout_ms;
  atomic_uint_fast64_t next_id; /* Request.id; starts at a random value */
  uint64_t tag;                 /* HashRequest.client: random, per client */
  _Atomic uint64_t instance;    /* the daemon instance of the last submit */
};

/* One exchange: fill req's version and a fresh id, send it on a context of
 * its own, wait up to the client's timeout plus extra_ms for the reply, and
 * unpack it into *resp (free with wave__v1__response__free_unpacked).  A
 * Response carrying an Error is turned into that error's code and message;
 * otherwise the body must be `want` (WAVE__V1__RESPONSE__BODY_*). */
int wv_client_call(wave_client *c, Wave__V1__Request *req, int want,
                   unsigned extra_ms, Wave__V1__Response **resp,
                   wave_error *err);

/* Copy a protobuf string (NULL-safe) into a fixed buffer, truncating. */
void wv_client_copy(char *dst, size_t n, const char *src);

#endif
