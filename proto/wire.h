/* wire.h - a Response into an nng message: the one packer of wavedd's
 * replies (the loop's, net/front.c wd_reply, and the decode threads',
 * bulk/decode.c).  Linked by the daemon only through wvproto; the client
 * unpacks, it never packs a Response.
 */
#ifndef WV_WIRE_H
#define WV_WIRE_H

#include <stdint.h>

#include <nng/nng.h>

#include "proto/wave.pb-c.h"

/* Set r's envelope (version, id), pack it into a fresh message: the
 * message, or NULL when there is no memory for it. */
nng_msg *wv_wire_response(Wave__V1__Response *r, uint64_t id,
                          unsigned version);
/* An Error response (code, its table name wave_errname(code), message)
 * packed the same way: the message, or NULL when there is no memory. */
nng_msg *wv_wire_error(int code, const char *name, const char *message,
                       uint64_t id, unsigned version);

#endif
