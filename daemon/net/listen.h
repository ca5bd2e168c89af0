/* listen.h - the nng listeners of wavedd's socket, one per configured URL,
 * and the watchdog that keeps the ipc ones accepting (see listen.c). */
#ifndef WD_LISTEN_H
#define WD_LISTEN_H

#include <stddef.h>
#include <stdint.h>

#include <nng/nng.h>
#include <uv.h>

#include "daemon/config.h"
#include "daemon/net/fdpass.h"

typedef struct wd_listeners wd_listeners;

/* Start one listener per cfg->listen URL on sock, each taking messages up
 * to recv_cap bytes; each ipc one with its descriptor socket "<path>.fd"
 * (fdpass.h) keeping what it receives in fp (NULL: none).  0, or WAVE_EIO
 * with err ("listen URL: why"). */
int wd_listeners_start(uv_loop_t *loop, nng_socket sock,
                       const wd_config *cfg, size_t recv_cap, wd_fdpass *fp,
                       wd_listeners **out, wave_error *err);
/* A reload: serve cfg->listen from now on.  The URLs already served keep
 * their listener and connections; the new ones start, all or none (when
 * one cannot, those just started close again and err says why: nothing
 * changed); then the URLs cfg no longer names close, with the connections
 * they accepted.  *failed: the index in cfg->listen of the URL that could
 * not start.  cfg must outlive ls (its URLs are kept). */
int wd_listeners_update(wd_listeners *ls, const wd_config *cfg,
                        size_t *failed, wave_error *err);
/* A new message cap (a reload's max_request_bytes): new connections get it. */
void wd_listeners_set_cap(wd_listeners *ls, size_t recv_cap);
/* nng's thread (front.c's ADD_PRE pipe callback, for every pipe, before
 * its limits): a pipe of sock has joined. */
void wd_listeners_pipe_added(wd_listeners *ls, nng_pipe p);
/* nng's thread (front.c's pipe callback): a pipe of sock has gone. */
void wd_listeners_pipe_gone(wd_listeners *ls, nng_pipe p);
/* How many times a stuck ipc listener was replaced (status, tests). */
unsigned wd_listeners_recoveries(const wd_listeners *ls);
/* The connection guard (connguard.c) the listeners feed; metrics.c adds
 * its port to it. */
typedef struct wd_guard wd_guard;
wd_guard *wd_listeners_guard(const wd_listeners *ls);
/* The URLs as bound (a tcp port 0 replaced by the port chosen). */
char **wd_listeners_urls(const wd_listeners *ls, size_t *n);
/* The connections (pipes) open now on the i-th of those URLs: its serving
 * listener's and those of the stuck ones still serving theirs. */
uint64_t wd_listeners_conns(const wd_listeners *ls, size_t i);
/* Stop the watchdog, close its handles and unlink the ipc paths that are
 * still our sockets (the listeners themselves close with the socket).  Free after the loop has run the close callbacks. */
void wd_listeners_close(wd_listeners *ls);
void wd_listeners_free(wd_listeners *ls);

#endif
