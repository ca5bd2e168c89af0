/* tls.c - tls+tcp:// listeners with nng's own TLS (Debian's libnng is built
 * with mbedTLS; nng/supplemental/tls/tls.h).
 *
 * One tls: section of the config holds the server certificate (chain), its
 * unencrypted private key and, for client certificates, the CAs to check
 * them against and whether a client must present one (verify: none,
 * optional, required).  Every tls+tcp:// URL in listen uses it.  The PEM
 * files are read into memory here and handed to nng as strings, so an
 * unreadable or malformed file is reported with its path, at
 * --check-config time as well as at start-up (wd_tls_check runs the same
 * loading on a throwaway config).  TLS 1.2 is the floor, nng's default.
 *
 * Certificate dates (wd_tls_dates) are read with mbedTLS's X.509 parser,
 * the library nng's TLS already uses: an expired (or not yet valid)
 * certificate fails --check-config (wdmain.c), and when a tls+tcp://
 * listener starts (start-up, or a reload that adds one) it is logged at
 * error and still served, because refusing to start would also stop every
 * ipc and tcp client over a TLS-only problem; one that ends within
 * WD_TLS_WARN_DAYS days is a warning in both places.
 *
 * TLS authenticates the daemon to its clients and keeps tokens and data
 * private on the wire; who may send requests is still decided by the
 * tokens (auth.c), or by verify: required.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mbedtls/x509_crt.h>
#include <nng/nng.h>
#include <nng/supplemental/tls/tls.h>

#include "daemon/log.h"
#include "daemon/net/tls.h"
#include "core/base.h"

#define TL_PEM_MAX (1u << 20)

int wd_tls_url(const char *url)
{
  return strncmp(url, "tls+tcp://", 10) == 0 ||
         strncmp(url, "tls+tcp4://", 11) == 0 ||
         strncmp(url, "tls+tcp6://", 11) == 0;
}

/* The whole file, NUL-terminated (free it); NULL with why. */
static char *tl_read(const char *key, const char *path, char *why, size_t n)
{
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    snprintf(why, n, "%s %s: cannot open: %s", key, path, strerror(errno));
    return NULL;
  }
  char *buf = malloc(TL_PEM_MAX + 1);
  size_t got = buf ? fread(buf, 1, TL_PEM_MAX + 1, f) : 0;
  int bad = buf == NULL || ferror(f) || got > TL_PEM_MAX;
  fclose(f);
  if (bad) {
    snprintf(why, n, "%s %s: %s", key, path,
             buf == NULL ? "out of memory"
             : got > TL_PEM_MAX ? "larger than 1 MiB" : "read error");
    free(buf);
    return NULL;
  }
  buf[got] = '\0';
  if (strstr(buf, "-----BEGIN ") == NULL) {
    snprintf(why, n, "%s %s: not a PEM file (no -----BEGIN line)", key,
             path);
    free(buf);
    return NULL;
  }
  return buf;
}

/* A server config from t, or NULL with why. */
static nng_tls_config *tl_make(const wd_tls_cfg *t, char *why, size_t n)
{
  nng_tls_config *tc = NULL;
  int rv = nng_tls_config_alloc(&tc, NNG_TLS_MODE_SERVER);
  if (rv != 0) {
    snprintf(why, n, "TLS (%s): %s", nng_tls_engine_name(),
             nng_strerror(rv));
    return NULL;
  }
  char *cert = tl_read("cert_file", t->cert_file, why, n);
  char *key = cert ? tl_read("key_file", t->key_file, why, n) : NULL;
  char *ca = key && t->ca_file[0] ? tl_read("ca_file", t->ca_file, why, n)
                                  : NULL;
  int ok = key != NULL && (t->ca_file[0] == '\0' || ca != NULL);
  if (ok && (rv = nng_tls_config_own_cert(tc, cert, key, NULL)) != 0) {
    snprintf(why, n, "cert_file %s / key_file %s: %s (a PEM certificate "
             "and its unencrypted key)", t->cert_file, t->key_file,
             nng_strerror(rv));
    ok = 0;
  }
  if (ok && ca && (rv = nng_tls_config_ca_chain(tc, ca, NULL)) != 0) {
    snprintf(why, n, "ca_file %s: %s (PEM certificates)", t->ca_file,
             nng_strerror(rv));
    ok = 0;
  }
  nng_tls_auth_mode mode = t->verify == WD_TLS_VERIFY_REQUIRED
                               ? NNG_TLS_AUTH_MODE_REQUIRED
                           : t->verify == WD_TLS_VERIFY_OPTIONAL
                               ? NNG_TLS_AUTH_MODE_OPTIONAL
                               : NNG_TLS_AUTH_MODE_NONE;
  if (ok && (rv = nng_tls_config_auth_mode(tc, mode)) != 0) {
    snprintf(why, n, "verify: %s", nng_strerror(rv));
    ok = 0;
  }
  if (key)
    memset(key, 0, strlen(key));
  free(cert);
  free(key);
  free(ca);
  if (!ok) {
    nng_tls_config_free(tc);
    return NULL;
  }
  return tc;
}

int wd_tls_check(const wd_tls_cfg *t, char *why, size_t n)
{
  nng_tls_config *tc = tl_make(t, why, n);
  if (tc == NULL)
    return -1;
  nng_tls_config_free(tc);
  return 0;
}

int wd_tls_listener(nng_listener l, const char *url, const wd_tls_cfg *t,
                    wave_error *err)
{
  if (!wd_tls_url(url))
    return 0;
  if (!t->set)
    return wv_seterr(err, WAVE_ECONFIG, "listen %s: no tls: section "
                     "(cert_file, key_file)", url);
  char why[400];
  int dates = wd_tls_dates(t, time(NULL), why, sizeof why);
  if (dates == -1)
    wd_error("listen %s: %s (served anyway; other listeners are not "
             "affected)", url, why);
  else if (dates == 1)
    wd_warn("listen %s: %s", url, why);
  nng_tls_config *tc = tl_make(t, why, sizeof why);
  if (tc == NULL)
    return wv_seterr(err, WAVE_ECONFIG, "listen %s: tls %s", url, why);
  int rv = nng_listener_set_ptr(l, NNG_OPT_TLS_CONFIG, tc);
  nng_tls_config_free(tc);  /* the listener holds its own reference */
  if (rv != 0)
    return wv_seterr(err, WAVE_EIO, "listen %s: TLS config: %s", url,
                     nng_strerror(rv));
  return 0;
}

static time_t tl_time(const mbedtls_x509_time *x)
{
  struct tm tm = {.tm_year = x->year - 1900, .tm_mon = x->mon - 1,
                  .tm_mday = x->day, .tm_hour = x->hour, .tm_min = x->min,
                  .tm_sec = x->sec};
  return timegm(&tm);
}

static void tl_date(time_t t, char *out, size_t n)
{
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(out, n, "%Y-%m-%d %H:%M:%S UTC", &tm);
}

int wd_tls_dates(const wd_tls_cfg *t, time_t now, char *why, size_t n)
{
  char *pem = tl_read("cert_file", t->cert_file, why, n);
  if (pem == NULL)
    return -2;
  mbedtls_x509_crt crt;
  mbedtls_x509_crt_init(&crt);
  int rv = mbedtls_x509_crt_parse(&crt, (const unsigned char *)pem,
                                  strlen(pem) + 1);
  free(pem);
  if (rv < 0) {  /* > 0: some certificates of the file were skipped */
    snprintf(why, n, "cert_file %s: not a PEM certificate (mbedTLS -0x%04x)",
             t->cert_file, (unsigned)-rv);
    mbedtls_x509_crt_free(&crt);
    return -2;
  }
  int k = 0, at = 0, worst = 0;
  time_t end = 0, begin = 0;
  for (const mbedtls_x509_crt *c = &crt; c != NULL && c->raw.p != NULL;
       c = c->next, k++) {
    time_t b = tl_time(&c->valid_from), e = tl_time(&c->valid_to);
    int bad = b > now || e <= now;
    if (k == 0 || (bad && !worst) || (bad == worst && e < end)) {
      at = k, end = e, begin = b, worst = bad;
    }
  }
  mbedtls_x509_crt_free(&crt);
  char d1[40], d2[40];
  tl_date(begin, d1, sizeof d1);
  tl_date(end, d2, sizeof d2);
  const char *which = at == 0 ? "the certificate" : "a chain certificate";
  if (begin > now) {
    snprintf(why, n, "cert_file %s: %s (number %d in the file) is not valid "
             "before %s", t->cert_file, which, at + 1, d1);
    return -1;
  }
  if (end <= now) {
    snprintf(why, n, "cert_file %s: %s (number %d in the file) expired on %s: "
             "TLS clients refuse it; renew it", t->cert_file, which, at + 1,
             d2);
    return -1;
  }
  double days = difftime(end, now) / 86400.0;
  snprintf(why, n, "cert_file %s: %s (number %d in the file) expires on %s, "
           "in %.1f days", t->cert_file, which, at + 1, d2, days);
  return days < WD_TLS_WARN_DAYS ? 1 : 0;
}
