/* level.h - the service level a request asks for, checked on the decode
 * thread right after authentication (net/req.c), so that every way in (a
 * reduction by value, framed, by region or file, a stream's open, a hash
 * job) gets the same answer: an unknown level is BADREQUEST, and `high`
 * from a principal that priority.high_allow does not name is PERM (never
 * lowered).  docs/config.md "priority" gives the list's words.
 */
#ifndef WD_LEVEL_H
#define WD_LEVEL_H

#include <stddef.h>

#include <nng/nng.h>

#include "daemon/config.h"
#include "proto/wave.pb-c.h"

/* 0, or WAVE_EPERM / WAVE_EBADREQUEST with msg filled.  who: the
 * request's principal ("uid:N", "pipe:N", "token:NAME"); p: its pipe (an
 * ipc peer's groups are read from it). */
int wd_level_gate(const wd_config *cfg, const Wave__V1__Request *rq,
                  const char *who, nng_pipe p, char *msg, size_t n);

#endif
