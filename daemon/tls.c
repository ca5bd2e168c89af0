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
 * TLS authenticates the daemon to its clients and keeps tokens and data
 * private on the wire; who may send requests is still decided by the
 * tokens (auth.c), or by verify: required.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/supplemental/tls/tls.h>

#include "daemon/tls.h"
#include "proto/base.h"

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
  char why[300];
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
