/* auth.h - who may send requests over tcp: bearer tokens (see auth.c). */
#ifndef WD_AUTH_H
#define WD_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include <nng/nng.h>

#include "daemon/config.h"

/* Any thread: may the request that arrived on pipe p with `token` (the
 * Request's field, "" when absent) be served?  ipc connections always may
 * (the socket file's mode and the peer's uid guard them); tcp and tls+tcp
 * ones need one of cfg->tokens when any is configured.  0 (principal set to
 * "token:NAME" when a token matched, left alone otherwise), or WAVE_EAUTH
 * with why filled.  Wrong tokens are limited per peer address
 * (limits.auth_failures, limits.auth_failure_ms): past the limit the
 * answer is WAVE_EAUTH without the token being compared. */
int wd_auth_request(const wd_config *cfg, nng_pipe p, const char *token,
                    char *principal, size_t pn, char *why, size_t n);

/* wd_auth_request's check, for a peer address (NULL or an unknown family:
 * one shared bucket) at now_ms on a monotonic clock: the tests give both. */
int wd_auth_check(const wd_config *cfg, const nng_sockaddr *peer,
                  uint64_t now_ms, const char *token, char *principal,
                  size_t pn, char *why, size_t n);

/* A peer's wrong tokens are logged at warn at most once this often. */
#define WD_AUTH_LOG_MS 10000u

#endif
