/* config_check.c - the per-value checks of devices.yaml that need more
 * than a type and bounds: device and token names, backends, the metrics
 * and listen URLs, token files (read here, as auth.c reads them).  Each is
 * named in a row of the key table (config.c) and fills why; the loader
 * adds file:line:column and the key. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include <nng/nng.h>

#include "daemon/config_keys.h"
#include "daemon/net/tls.h"
#include "daemon/token.h"
#include "workers/worker.h"
/* A device or token name: letters, digits, '_', '-', '.' (what is one). */
static int cc_name(const char *what, const char *v, char *why, size_t n)
{
  if (v[0] == '\0') {
    snprintf(why, n, "expected a %s name (letters, digits, '_', '-', '.')",
             what);
    return -1;
  }
  for (const char *p = v; *p; p++)
    if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-' && *p != '.') {
      snprintf(why, n, "'%s': a %s name is letters, digits, '_', '-', '.'",
               v, what);
      return -1;
    }
  return 0;
}

int wd_cf_check_devname(cf_state *s, const char *v, char *why, size_t n)
{
  (void)s;
  return cc_name("device", v, why, n);  /* unique: cf_devices, once all
                                           are stored */
}

/* auth.tokens[].name: as a device name, unique among the tokens. */
int wd_cf_check_tokname(cf_state *s, const char *v, char *why, size_t n)
{
  if (cc_name("token", v, why, n))
    return -1;
  for (size_t i = 0; i < s->tok; i++)
    if (strcmp(s->cfg->tokens[i].name, v) == 0) {
      snprintf(why, n, "token name '%s' is already used by auth.tokens[%zu]",
               v, i);
      return -1;
    }
  return 0;
}

/* priority.high_allow: words "uid:N", "gid:N" or "token:NAME", separated
 * by spaces or commas (net/level.c matches them). */
int wd_cf_check_allow(cf_state *s, const char *v, char *why, size_t n)
{
  (void)s;
  while (*v != '\0') {
    size_t len = strcspn(v, " ,\t");
    if (len > 0) {
      char word[256], end;
      unsigned long id;
      snprintf(word, sizeof word, "%.*s", (int)len, v);
      int ok = len < sizeof word &&
               ((sscanf(word, "uid:%lu%c", &id, &end) == 1 &&
                 word[4] >= '0' && word[4] <= '9') ||
                (sscanf(word, "gid:%lu%c", &id, &end) == 1 &&
                 word[4] >= '0' && word[4] <= '9') ||
                (strncmp(word, "token:", 6) == 0 && word[6] != '\0'));
      if (!ok) {
        snprintf(why, n, "'%.64s' is not uid:N, gid:N or token:NAME", word);
        return -1;
      }
    }
    v += len;
    v += strspn(v, " ,\t");
  }
  return 0;
}

/* auth.tokens[].file (resolved): read the secret now (daemon/auth.c). */
int wd_cf_check_tokfile(cf_state *s, const char *v, char *why, size_t n)
{
  wd_token_cfg *t = &s->cfg->tokens[s->tok];
  if (wd_token_read(v, t->secret, sizeof t->secret, &t->len, why, n))
    return -1;
  for (size_t i = 0; i < s->tok; i++)
    if (s->cfg->tokens[i].len == t->len &&
        memcmp(s->cfg->tokens[i].secret, t->secret, t->len) == 0) {
      snprintf(why, n, "%s holds the same token as auth.tokens[%zu] (%s): "
               "each name needs its own", v, i, s->cfg->tokens[i].name);
      return -1;
    }
  return 0;
}

int wd_cf_check_backend(cf_state *s, const char *v, char *why, size_t n)
{
  (void)s;
  if (wv_backend_find(v) != NULL)
    return 0;
  if (wv_backend_known(v))
    snprintf(why, n, "backend '%s' not built into this wavedd", v);
  else
    snprintf(why, n,
             "unknown backend '%s' (known: cpu, cuda, hip, vulkan, opencl)", v);
  return -1;
}

/* metrics: http://host:port (the Prometheus endpoint is its /metrics). */
int wd_cf_check_metrics(cf_state *s, const char *v, char *why, size_t n)
{
  (void)s;
  if (v[0] == '\0')
    return 0;  /* off */
  nng_url *u = NULL;
  int rv = nng_url_parse(&u, v);
  if (rv != 0) {
    snprintf(why, n, "'%s' is not a URL (%s)", v, nng_strerror(rv));
    return -1;
  }
  int bad = 0;
  if (strcmp(u->u_scheme, "http") != 0) {
    snprintf(why, n, "'%s': the scheme must be http:// (e.g. "
             "http://127.0.0.1:9464)", v);
    bad = 1;
  } else if (u->u_port == NULL || u->u_port[0] == '\0' ||
             strchr(v + 7, ':') == NULL) {
    snprintf(why, n, "'%s': needs a port (http://host:port)", v);
    bad = 1;
  } else if (strcmp(u->u_path, "") != 0 && strcmp(u->u_path, "/") != 0 &&
             strcmp(u->u_path, "/metrics") != 0) {
    snprintf(why, n, "'%s': the endpoint is /metrics; give no other path",
             v);
    bad = 1;
  }
  nng_url_free(u);
  return bad ? -1 : 0;
}

int wd_cf_check_url(cf_state *s, const char *v, size_t i, char *why,
                        size_t n)
{
  nng_url *u = NULL;
  int rv = nng_url_parse(&u, v);
  if (rv != 0) {
    snprintf(why, n, "'%s' is not a URL (%s)", v, nng_strerror(rv));
    return -1;
  }
  int bad = 0;
  if (strcmp(u->u_scheme, "ipc") == 0) {
    size_t len = strlen(u->u_path);
    if (len == 0 || len > 107) {
      snprintf(why, n, "'%s': an ipc path must be 1..107 bytes", v);
      bad = 1;
    }
  } else if (strcmp(u->u_scheme, "tcp") == 0 ||
             strcmp(u->u_scheme, "tcp4") == 0 ||
             strcmp(u->u_scheme, "tcp6") == 0 || wd_tls_url(v)) {
    if (u->u_port == NULL || u->u_port[0] == '\0') {
      snprintf(why, n, "'%s': a tcp URL needs a port (%s://host:port)", v,
               u->u_scheme);
      bad = 1;
    }
  } else {
    snprintf(why, n, "'%s': the scheme must be ipc://, tcp:// or "
             "tls+tcp://", v);
    bad = 1;
  }
  nng_url_free(u);
  (void)s;
  (void)i;  /* unique: cf_list, once all are stored */
  return bad ? -1 : 0;
}
