/* reload.h - what wavedd does for its supervisor: SIGHUP reloads the
 * configuration all or nothing, SIGQUIT stops like SIGTERM, and the systemd
 * watchdog is fed from the loop.  Also the pack loading that start-up and a
 * reload share.
 *
 * A reload reads the file again into a fresh wd_config and the packs it
 * names (off the loop, in libuv's thread pool), compares the result with
 * what is serving, prepares and self-checks every new or changed pack on
 * every device (setup items on the device threads), then binds the new
 * listeners, and only when all of that succeeded swaps it in.  What each
 * key does is the key table's reload column (daemon/config.c, one row per
 * key; docs/config.md "Reload (SIGHUP)"): applied (log_level, most limits,
 * metrics: the endpoint moves, listen: listeners added and removed, the
 * unchanged ones keep their connections, the packs: new hash jobs use the
 * new ones, jobs already submitted keep the pack they were given), taken
 * for the next start (a warning names the key: limits.decode_threads, the
 * region and stream limits, allow_client_shm), or refused (the reload
 * fails and says which key; restart wavedd to apply: devices, ipc_mode,
 * limits.contexts, limits.jobs_in_flight, packs.prepare).  A file that does not
 * load (its file:line:column message is logged), a pack that does not load
 * or fails its known answers on a device, a listener that cannot bind
 * (file:line:column of its URL), or any refused change leaves the old
 * configuration serving untouched.  The outcome is logged, counted
 * (metrics) and told to systemd as STATUS=.
 */
#ifndef WD_RELOAD_H
#define WD_RELOAD_H

#include <uv.h>

#include "daemon/config.h"
#include "daemon/jobs/hashjob.h"
#include "daemon/metrics.h"
#include "daemon/server.h"
#include "workers/hash/hash.h"

/* Load cfg->packs.dir, then keep the packs packs.load names (all by
 * default).  0, or WAVE_ECONFIG / WAVE_EPACKFILE with err. */
int wd_packs_load(const wd_config *cfg, wv_packset **set, wd_packs *packs,
                  wave_error *err);
void wd_packs_free(wv_packset *set, wd_packs *packs);

typedef struct wd_service wd_service;

/* Watch SIGHUP and SIGQUIT, start the watchdog when systemd asks for one
 * ($WATCHDOG_USEC), and start the metrics endpoint when cfg names one.
 * cfg (owned by the caller) is the serving config; reloaded ones are owned
 * here.  The handles are unref'd: they do not keep uv_run going. */
int wd_service_start(uv_loop_t *loop, const char *path, const wd_config *cfg,
                     wd_server *srv, wd_service **out, wave_error *err);
/* What SIGHUP does: start a reload (rl_*, reload.c), or queue one when a
 * reload is under way.  Its outcome is logged ("reloaded FILE" or "reload
 * failed, the old configuration keeps serving: why"), counted and told to
 * systemd. */
void wd_service_reload(wd_service *sv);
wd_metrics *wd_service_metrics(wd_service *sv);
/* Close the handles (run the loop once more), then free: after the server
 * is freed, as the server points into the configs. */
void wd_service_close(wd_service *sv);
void wd_service_free(wd_service *sv);

#endif
