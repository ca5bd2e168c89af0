/* metrics.h - the Prometheus endpoint: GET <metrics>/metrics, text format
 * 0.0.4, served by nng's own HTTP server (nng_http_server_*), and the
 * probes beside it on the same listener:
 *   /livez   200 "ok" while the loop turns (it renders the page each
 *            second); 503 once it has not for 10 s;
 *   /readyz  200 "ready" once ready (wd_server_readiness: the rule of
 *            READY=1 and `status --probe`), else 503 "not ready: <why>"
 *            (starting, stopping, every device faulted).  The server tells
 *            the probe of each state move as it happens (wd_server_watch),
 *            before READY=1 goes out; faults are seen at the next tick.
 *
 * The loop renders the whole page once a second (stats.h's counters plus
 * the devices' queues, faults and pack self-checks, which only the loop may
 * read) and hands it to the HTTP side under a mutex; nng's thread answers a
 * scrape with a copy of the newest page.  So the HTTP side never touches
 * the server and a scrape never waits on the loop; a page is at most one
 * second old.
 */
#ifndef WD_METRICS_H
#define WD_METRICS_H

#include <uv.h>

#include "daemon/server.h"
#include "wave/error.h"

typedef struct wd_metrics wd_metrics;

/* Serve url ("http://host:port"; port 0 picks one) for srv.  The timer is
 * unref'd: it does not keep uv_run going.  0 or WAVE_EIO with err. */
int wd_metrics_start(uv_loop_t *loop, wd_server *srv, const char *url,
                     wd_metrics **out, wave_error *err);
/* "http://host:port/metrics" as bound. */
const char *wd_metrics_url(const wd_metrics *m);
/* Render now (also done by the timer). */
void wd_metrics_render(wd_metrics *m);
/* Stop serving and close the timer; m is freed in the close callback (run
 * the loop once more). NULL is fine. */
void wd_metrics_close(wd_metrics *m);

#endif
