/* tls.h - the certificate of tls+tcp:// listeners (see tls.c). */
#ifndef WD_TLS_H
#define WD_TLS_H

#include <stddef.h>
#include <time.h>

#include <nng/nng.h>

#include "daemon/config.h"

/* 1 when url is a tls+tcp:// (tls+tcp4, tls+tcp6) URL. */
int wd_tls_url(const char *url);
/* Load t's files into a throwaway server config: 0, or -1 with why ("tls
 * cert_file PATH: ...").  The config checker runs it. */
int wd_tls_check(const wd_tls_cfg *t, char *why, size_t n);
/* The certificate dates of t.cert_file (every certificate in it; the one
 * that ends first counts) at time now: 0 when valid for more than
 * WD_TLS_WARN_DAYS, 1 when it ends sooner, -1 when it has ended or has not
 * begun, -2 when the file cannot be read or parsed; why says which
 * certificate and when. */
#define WD_TLS_WARN_DAYS 30
int wd_tls_dates(const wd_tls_cfg *t, time_t now, char *why, size_t n);
/* A listener created but not started: when url is tls+tcp://, give it a
 * server TLS config from t.  0 (also for other URLs), or WAVE_ECONFIG /
 * WAVE_EIO with err. */
int wd_tls_listener(nng_listener l, const char *url, const wd_tls_cfg *t,
                    wave_error *err);

#endif
