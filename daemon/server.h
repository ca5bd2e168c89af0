/* server.h - the request side of wavedd: nng sockets, the libuv loop's
 * handles, dispatch to the device threads, replies, shutdown.
 *
 * Lifecycle (wdmain.c): wd_server_init (devices start and open) ->
 * wd_server_listen (sockets up) -> uv_run -> [SIGINT/SIGTERM: stop taking
 * work, finish what is in flight, close] -> uv_run returns ->
 * wd_server_free -> uv_loop_close.  When init or listen fails, call
 * wd_server_close, run the loop to let the handles close, then free.
 */
#ifndef WD_SERVER_H
#define WD_SERVER_H

#include <uv.h>

#include "daemon/config.h"
#include "daemon/jobs/hashjob.h"  /* wd_packs */

typedef struct wd_server wd_server;

/* The server's lifecycle, one state at a time, in this order (a state
 * never goes back).  server.c moves it; readiness, the wake callback and
 * the gates (rq/route.c: SHUTDOWN for work) read it. */
typedef enum wd_sv_state {
  WD_SV_STARTING,   /* wd_server_init: devices open, start-up preparations
                     * queued; no socket yet */
  WD_SV_LISTENING,  /* the sockets are up; preparations still under way */
  WD_SV_READY,      /* READY=1 sent: StatusReply.ready */
  WD_SV_STOPPING,   /* SIGINT/SIGTERM/SIGQUIT: no new work; in-flight
                     * reductions finish, hash jobs are cancelled */
  WD_SV_LINGER,     /* nothing in flight: the last replies leave
                     * (SV_LINGER_MS), then the close */
  WD_SV_CLOSED,     /* contexts, socket, device threads and handles closed */
} wd_sv_state;

/* Start one thread per device and wait for every open().  Fails (WAVE_EDEVICE)
 * only when no device opened at all.  cfg and packs must outlive the server. */
int wd_server_init(uv_loop_t *loop, const wd_config *cfg,
                   const wd_packs *packs, wd_server **out, wave_error *err);
/* Open the socket, its contexts and one listener per URL. */
int wd_server_listen(wd_server *s, wave_error *err);
/* The service around the server (metrics page and probes, signals, the
 * watchdog: reload.c) is up: READY may go out once the packs are
 * prepared, never before the probes answer. */
void wd_server_serving(wd_server *s);
/* Begin the graceful stop (what SIGINT/SIGTERM do). */
void wd_server_stop(wd_server *s);
/* Close everything now (idempotent); handles finish closing in uv_run. */
void wd_server_close(wd_server *s);
void wd_server_free(wd_server *s);
/* Every device has prepared (or failed) every pack and the sockets listen:
 * StatusReply.ready; READY=1 was sent to the supervisor. */
int wd_server_ready(const wd_server *s);
wd_sv_state wd_server_state(const wd_server *s);
/* Readiness as /readyz says it (metrics.c): 1 when ready (the rule of
 * READY=1 and StatusReply.ready, while serving); else 0 and why in one
 * line: starting (what it waits for), stopping, or every device faulted.
 * Loop thread. */
int wd_server_readiness(const wd_server *s, char *why, size_t n);
/* fn(arg) on the loop at each move of the state (READY, STOPPING,
 * CLOSED), before the move is logged or notified.  Up to WD_SV_WATCHERS
 * at once (metrics.c's probes: two while a reload moves the page); -1
 * when full.  wd_server_unwatch(s, arg) ends arg's. */
#define WD_SV_WATCHERS 4
int wd_server_watch(wd_server *s, void (*fn)(void *arg), void *arg);
void wd_server_unwatch(wd_server *s, void *arg);

/* For metrics.c and reload.c, on the loop thread. */
wd_device *const *wd_server_devices(const wd_server *s, size_t *n);
const wd_packs *wd_server_packs(const wd_server *s);
wd_packstate *wd_server_packstate(const wd_server *s);
const wd_config *wd_server_config(const wd_server *s);
/* Device i's newest health reading (exec/health.h: read off the loop). */
struct wv_health;
void wd_server_health(const wd_server *s, size_t i, struct wv_health *out);
/* Device i's guards (exec/health.h). */
struct wd_guard_view;
void wd_server_guards(const wd_server *s, size_t i, struct wd_guard_view *out);
/* The listeners (their URLs and connections, net/listen.h); NULL before
 * the sockets listen. */
struct wd_listeners *wd_server_listeners(const wd_server *s);
/* The connection guard (connguard.c); NULL before the sockets listen. */
struct wd_guard *wd_server_guard(const wd_server *s);
/* Serve with cfg from now on: its limits (and later requests see its
 * values).  cfg must differ from the serving one only in what reload.c
 * allows, and outlive the server. */
void wd_server_reconfigure(wd_server *s, const wd_config *cfg);
/* A reload: not serving (before the sockets are up, or SIGTERM/SIGINT
 * seen, or closed): nothing may change now. */
int wd_server_stopping(const wd_server *s);
/* A reload's listeners (wd_listeners_update): all or nothing. */
int wd_server_relisten(wd_server *s, const wd_config *cfg, size_t *failed,
                       wave_error *err);
/* A reload's packs, prepared on the devices: new hash jobs use them; jobs
 * already submitted keep the pack they were given.  packs (and the packs
 * it lists) must outlive the server. */
void wd_server_set_packs(wd_server *s, const wd_packs *packs);

#endif
