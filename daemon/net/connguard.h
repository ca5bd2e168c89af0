/* connguard.h - closes the TCP connections that nng holds for us but never
 * ends: TLS connections that have not become pipes in time, and metrics
 * connections past their age or over their cap (see connguard.c). */
#ifndef WD_CONNGUARD_H
#define WD_CONNGUARD_H

#include <stdint.h>

#include <nng/nng.h>
#include <uv.h>

#include "daemon/config.h"

typedef struct wd_guard wd_guard;

typedef enum wd_guard_kind {
  WD_GUARD_TLS,      /* a tls+tcp:// listener: connections before their pipe */
  WD_GUARD_METRICS,  /* the metrics port: every connection */
} wd_guard_kind;

/* A guard ticking on loop, reading its limits from *cfg at each tick (the
 * owner swaps *cfg on reload).  NULL when out of memory. */
wd_guard *wd_guard_new(uv_loop_t *loop, const wd_config *const *cfg);
/* Watch connections accepted on the local TCP port (on: 1), or stop. */
void wd_guard_port(wd_guard *g, wd_guard_kind kind, int port, int on);
/* nng's threads: a tcp or tls pipe joined (its peer's address is recorded:
 * its connection is no longer a handshake) or left the socket. */
void wd_guard_pipe_added(wd_guard *g, nng_pipe p);
void wd_guard_pipe_gone(wd_guard *g, nng_pipe p);
/* The descriptors open at the last tick; (uint64_t)-1 when unknown. */
uint64_t wd_guard_open_files(const wd_guard *g);
/* Connections the guard has closed since start, by kind. */
uint64_t wd_guard_closed(const wd_guard *g, wd_guard_kind kind);
void wd_guard_close(wd_guard *g);  /* stop ticking; free after the loop ran */
void wd_guard_free(wd_guard *g);

/* The process's RLIMIT_NOFILE soft limit now (0 when unknown). */
uint64_t wd_max_files(void);
/* 1 when this process cannot open one more file (nng then retries its
 * accept by itself after 100 ms). */
int wd_at_fd_limit(void);

#endif
