/* wire.c - see wire.h.  One place sets the envelope and sizes the message,
 * so the loop's replies and the decode threads' cannot disagree on it. */
#include "proto/wire.h"

nng_msg *wv_wire_response(Wave__V1__Response *r, uint64_t id,
                          unsigned version)
{
  r->version = version;
  r->id = id;
  size_t n = wave__v1__response__get_packed_size(r);
  nng_msg *m;
  if (nng_msg_alloc(&m, n) != 0)
    return NULL;
  wave__v1__response__pack(r, nng_msg_body(m));
  return m;
}

nng_msg *wv_wire_error(int code, const char *name, const char *message,
                       uint64_t id, unsigned version)
{
  Wave__V1__Error e = WAVE__V1__ERROR__INIT;
  e.code = (uint32_t)code;
  e.name = (char *)name;
  e.message = (char *)message;
  Wave__V1__Response r = WAVE__V1__RESPONSE__INIT;
  r.body_case = WAVE__V1__RESPONSE__BODY_ERROR;
  r.error = &e;
  return wv_wire_response(&r, id, version);
}
