/* autodev.c - `devices: auto` and `${VAR}` expansion (see autodev.h).
 *
 * Slurm (and NVIDIA's Kubernetes device plugin) tell a process which GPUs
 * it owns through CUDA_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES: a comma
 * list of indices or UUIDs.  The CUDA and ROCm runtimes renumber the
 * visible GPUs 0..k-1, so entry i of the list is device index i for our
 * backends, whatever the entry says.  Slurm sets every vendor's variable
 * for any GPU GRES, so a GPU backend is chosen only when its driver's
 * device node is on the node (/dev/nvidiactl, /dev/kfd).  Vulkan ignores those variables; a
 * Vulkan-only build therefore gets no GPU devices from `auto` (say so in
 * the log and docs) rather than guessing which physical device is whose.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/autodev.h"
#include "workers/worker.h"

static const char *ad_getenv(const char *name) { return getenv(name); }

wd_getenv_fn wd_config_getenv = ad_getenv;

static int ad_exists(const char *path) { return access(path, F_OK) == 0; }

wd_exists_fn wd_autodev_exists = ad_exists;

/* Entries of a visible-devices list; 0 when it grants none. */
static size_t ad_count(const char *v)
{
  if (v == NULL || v[0] == '\0' || strcmp(v, "-1") == 0 ||
      strcmp(v, "NoDevFiles") == 0)
    return 0;
  size_t n = 1;
  for (const char *p = v; *p; p++)
    n += *p == ',';
  return n;
}

/* Every entry non-empty: "0,,1" or "0," is a malformed list. */
static int ad_wellformed(const char *v)
{
  size_t len = strlen(v);
  if (v[0] == ',' || v[len - 1] == ',' || strstr(v, ",,") != NULL)
    return 0;
  for (const char *p = v; *p; p++)
    if (!isalnum((unsigned char)*p) && *p != ',' && *p != '-' && *p != '_')
      return 0;
  return 1;
}

int wd_autodev_fill(wd_getenv_fn get, const wd_device_cfg *defaults,
                    wd_device_cfg **out, size_t *n, char *why, size_t why_n)
{
  *out = NULL;
  *n = 0;
  const char *backend = "cpu", *var = NULL, *list = NULL;
  const char *cuda = get("CUDA_VISIBLE_DEVICES");
  const char *rocr = get("ROCR_VISIBLE_DEVICES");
  int nvidia = wv_backend_find("cuda") && wd_autodev_exists("/dev/nvidiactl");
  int amd = wv_backend_find("hip") && wd_autodev_exists("/dev/kfd");
  if (nvidia && ad_count(cuda) > 0) {
    backend = "cuda", var = "CUDA_VISIBLE_DEVICES", list = cuda;
  } else if (amd && ad_count(rocr) > 0) {
    backend = "hip", var = "ROCR_VISIBLE_DEVICES", list = rocr;
  } else if (amd && ad_count(cuda) > 0) {
    backend = "hip", var = "CUDA_VISIBLE_DEVICES", list = cuda;
  }
  if (list != NULL && !ad_wellformed(list)) {
    snprintf(why, why_n, "devices: auto: %s='%s' is not a comma list of "
             "GPU indices or UUIDs", var, list);
    return -1;
  }
  size_t k = list ? ad_count(list) : 1;
  if (k > 255) {
    snprintf(why, why_n, "devices: auto: %s lists %zu GPUs (at most 255)",
             var, k);
    return -1;
  }
  wd_device_cfg *d = calloc(k, sizeof *d);
  if (d == NULL) {
    snprintf(why, why_n, "out of memory");
    return -1;
  }
  for (size_t i = 0; i < k; i++) {
    d[i] = *defaults;
    snprintf(d[i].name, sizeof d[i].name, "%s%zu", backend, i);
    snprintf(d[i].backend, sizeof d[i].backend, "%s", backend);
    d[i].index = (unsigned)i;
  }
  *out = d;
  *n = k;
  return 0;
}

int wd_expand_vars(wd_getenv_fn get, const char *s, char *out, size_t out_n,
                   char *why, size_t why_n)
{
  size_t o = 0;
#define AD_PUT(ch)                                                         \
  do {                                                                     \
    if (o + 1 >= out_n) {                                                  \
      snprintf(why, why_n, "'%s' is too long once expanded", s);           \
      return -1;                                                           \
    }                                                                      \
    out[o++] = (ch);                                                       \
  } while (0)
  for (const char *p = s; *p;) {
    if (p[0] == '$' && p[1] == '$') {
      AD_PUT('$');
      p += 2;
      continue;
    }
    if (p[0] != '$') {
      AD_PUT(*p++);
      continue;
    }
    if (p[1] != '{') {
      snprintf(why, why_n, "'%s': '$' starts ${NAME} (a literal '$' is '$$')",
               s);
      return -1;
    }
    const char *name = p + 2, *e = name;
    while (isalnum((unsigned char)*e) || *e == '_')
      e++;
    size_t len = (size_t)(e - name);
    const char *def = NULL, *close = NULL;
    if (e[0] == ':' && e[1] == '-') {
      def = e + 2;
      close = strchr(def, '}');
    } else if (e[0] == '}') {
      close = e;
    }
    char var[128];
    if (len == 0 || len >= sizeof var || close == NULL ||
        isdigit((unsigned char)name[0])) {
      snprintf(why, why_n, "'%s': malformed ${NAME} or ${NAME:-default}", s);
      return -1;
    }
    memcpy(var, name, len);
    var[len] = '\0';
    const char *val = get(var);
    if (val == NULL || (val[0] == '\0' && def != NULL)) {
      if (def == NULL) {
        snprintf(why, why_n, "'%s': environment variable %s is not set", s,
                 var);
        return -1;
      }
      for (const char *q = def; q < close; q++)
        AD_PUT(*q);
    } else {
      for (const char *q = val; *q; q++)
        AD_PUT(*q);
    }
    p = close + 1;
  }
  out[o] = '\0';
  return 0;
#undef AD_PUT
}
