/* wave/error.h - the one error table of wavedd.
 *
 * Every error the daemon, the workers and the client library can report is one
 * row of WAVE_ERRNO_MAP: a stable number (it travels on the wire, never reuse
 * or renumber one), a symbol and a message.  The enum and wave_strerror() are
 * generated from the same list, in the manner of libuv's UV_ERRNO_MAP.
 */
#ifndef WAVE_ERROR_H
#define WAVE_ERROR_H

#include "wave/export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define WAVE_ERRNO_MAP(X)                                                      \
  X(OK,          0, "success")                                                 \
  X(BADREQUEST,  1, "malformed request")                                       \
  X(VERSION,     2, "unsupported protocol version")                            \
  X(UNSUPPORTED, 3, "request kind not supported")                              \
  X(DTYPE,       4, "unknown dtype")                                           \
  X(OP,          5, "unknown reduction op")                                    \
  X(OPDTYPE,     6, "op is not defined for this dtype")                        \
  X(LENGTH,      7, "input byte length is not a whole number of rows")         \
  X(MASKLEN,     8, "mask length does not match input length")                 \
  X(TOOBIG,      9, "request larger than the daemon's limit")                  \
  X(JOBSIZE,    10, "job larger than the daemon's limit")                      \
  X(BUSY,       11, "device queue is full")                                    \
  X(NODEV,      12, "no such device, or no device serves this job kind")       \
  X(DEVFAULT,   13, "device is faulted")                                       \
  X(DEVICE,     14, "device error")                                            \
  X(PACK,       15, "unknown program pack")                                    \
  X(PACKFILE,   16, "malformed program pack")                                  \
  X(SELFCHECK,  17, "device failed the pack's known-answer self-check")        \
  X(RANGE,      18, "value or range out of bounds")                            \
  X(NOJOB,      19, "no such job")                                             \
  X(CANCELLED,  20, "job cancelled")                                           \
  X(MISMATCH,   21, "device result failed CPU verification")                   \
  X(CONFIG,     22, "configuration error")                                     \
  X(NOMEM,      23, "out of memory")                                           \
  X(IO,         24, "I/O or transport error")                                  \
  X(TIMEDOUT,   25, "timed out")                                               \
  X(SHUTDOWN,   26, "daemon is shutting down")                                 \
  X(INTERNAL,   27, "internal error")                                          \
  X(ARG,        28, "invalid argument")                                        \
  X(REGION,     29, "shared-memory region refused")                            \
  X(INCOMPLETE, 30, "streamed job is missing pieces")                         \
  X(AUTH,       31, "not authenticated: missing or wrong token")          \
  X(DEADLINE,   32, "job waited past its deadline and never ran")          \
  X(PERM,       33, "not permitted: this priority is not allowed to you")

typedef enum wave_err {
#define WAVE_ERR_ENUM_(name, num, msg) WAVE_E##name = (num),
  WAVE_ERRNO_MAP(WAVE_ERR_ENUM_)
#undef WAVE_ERR_ENUM_
  WAVE_ERR_COUNT_
} wave_err;

/* Message for an error number; never NULL ("unknown error" for numbers that
 * are not in the table, e.g. from a newer daemon). */
WAVE_API const char *wave_strerror(int err);
/* Symbol without the prefix ("MASKLEN"), or "UNKNOWN". */
WAVE_API const char *wave_errname(int err);

/* A returned error with its human message.  Functions that can fail take a
 * wave_error * (may be NULL) and fill it in when they return nonzero. */
typedef struct wave_error {
  int code;
  char message[256];
} wave_error;

#ifdef __cplusplus
}
#endif
#endif
