/* autodev.c - `devices: auto` and `${VAR}` expansion (see autodev.h).
 *
 * Slurm (and NVIDIA's Kubernetes device plugin) tell a process which GPUs
 * it owns through CUDA_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES: a comma
 * list of indices or UUIDs.  The CUDA and ROCm runtimes renumber the
 * visible GPUs 0..k-1, so entry i of the list is device index i for our
 * backends, whatever the entry says.  Slurm sets every vendor's variable
 * for any GPU GRES, so a GPU backend is chosen only when its driver's
 * device node is on the node (/dev/nvidiactl, /dev/kfd).
 *
 * Vulkan ignores those variables, so a granted GPU's Vulkan device is
 * found by UUID: entry i's UUID is the CUDA runtime's for visible device
 * i (cuda built, NVIDIA's driver there), else the entry's own `GPU-<hex>`
 * (the whole UUID or a prefix, as CUDA accepts); the Vulkan physical
 * device whose deviceUUID it names, when exactly one does, becomes vk<i>.
 * An index without CUDA, a MIG instance or an AMD entry (ROCm's UUIDs are
 * not Vulkan's) names no Vulkan device; the log says which.
 *
 * The UUIDs come from the backends' list_uuids slot, run in a forked child
 * that writes them to a pipe and exits: a CUDA runtime started before the
 * daemon detaches (fork) would be unusable in the daemon, and a config
 * reload on the loop thread must not start a GPU runtime either.  So the
 * probe runs only while the process has one thread (start-up), and its
 * answers are kept for the life of the process (a reload reuses them).
 */
#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon/autodev.h"
#include "daemon/log.h"
#include "workers/worker.h"
#include "workers/wvdev.h"

#define AD_MAX_UUIDS 64
#define AD_PROBE_MS 60000   /* a driver that hangs its first call */

static const char *ad_getenv(const char *name) { return getenv(name); }

wd_getenv_fn wd_config_getenv = ad_getenv;

static int ad_exists(const char *path) { return access(path, F_OK) == 0; }

wd_exists_fn wd_autodev_exists = ad_exists;

/* ---- the UUID probe ------------------------------------------------------ */

static struct ad_cache {
  char backend[16];
  int n;                        /* -1: failed (why kept) */
  unsigned char uuid[AD_MAX_UUIDS][16];
  char why[160];
} ad_cache[4];
static size_t ad_ncache;

/* Threads of this process, from /proc/self/status (0 if unknown). */
static long ad_threads(void)
{
  FILE *f = fopen("/proc/self/status", "r");
  if (f == NULL)
    return 0;
  char line[256];
  long n = 0;
  while (fgets(line, sizeof line, f) != NULL)
    if (strncmp(line, "Threads:", 8) == 0) {
      n = strtol(line + 8, NULL, 10);
      break;
    }
  fclose(f);
  return n;
}

static int ad_read_all(int fd, void *buf, size_t len, int ms)
{
  unsigned char *p = buf;
  size_t got = 0;
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  while (got < len) {
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long left = ms - ((t1.tv_sec - t0.tv_sec) * 1000L +
                      (t1.tv_nsec - t0.tv_nsec) / 1000000L);
    if (left <= 0)
      return -1;
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    int r = poll(&pf, 1, (int)left);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return -1;
    ssize_t k = read(fd, p + got, len - got);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return -1;
    got += (size_t)k;
  }
  return 0;
}

static int ad_probe(const char *backend, unsigned char (*out)[16], size_t max,
                    char *why, size_t why_n)
{
  const wv_backend *be = wv_backend_find(backend);
  if (be == NULL) {
    snprintf(why, why_n, "backend %s is not built in", backend);
    return -1;
  }
  long th = ad_threads();
  if (th != 1) {
    snprintf(why, why_n, "the %s probe runs only at start-up (one thread; "
             "this process has %ld)", backend, th);
    return -1;
  }
  int fd[2];
  if (pipe(fd) != 0) {
    snprintf(why, why_n, "pipe: %s", strerror(errno));
    return -1;
  }
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(why, why_n, "fork: %s", strerror(errno));
    close(fd[0]);
    close(fd[1]);
    return -1;
  }
  if (pid == 0) {  /* the child: ask the runtime, write, leave */
    close(fd[0]);
    static unsigned char u[AD_MAX_UUIDS][16];
    struct { int n; char why[160]; } head;
    memset(&head, 0, sizeof head);
    wave_error e = {0};
    head.n = wv_dev_list_uuids(be, u, AD_MAX_UUIDS, &e);
    if (head.n < 0)
      snprintf(head.why, sizeof head.why, "%.159s", e.message);
    size_t k = head.n > AD_MAX_UUIDS ? AD_MAX_UUIDS
               : head.n > 0 ? (size_t)head.n : 0;
    if (write(fd[1], &head, sizeof head) != (ssize_t)sizeof head ||
        (k > 0 && write(fd[1], u, k * 16) != (ssize_t)(k * 16)))
      _exit(1);
    _exit(0);
  }
  close(fd[1]);
  struct { int n; char why[160]; } head;
  int rc = ad_read_all(fd[0], &head, sizeof head, AD_PROBE_MS);
  size_t k = 0;
  if (rc == 0) {
    head.why[sizeof head.why - 1] = '\0';
    k = head.n > AD_MAX_UUIDS ? AD_MAX_UUIDS
        : head.n > 0 ? (size_t)head.n : 0;
    if (k > max)
      k = max;
    static unsigned char u[AD_MAX_UUIDS][16];
    if (k > 0 && (rc = ad_read_all(fd[0], u, k * 16, AD_PROBE_MS)) == 0)
      memcpy(out, u, k * 16);
  }
  close(fd[0]);
  if (rc != 0)
    kill(pid, SIGKILL);  /* silent or broken: our own child */
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  if (rc != 0) {
    snprintf(why, why_n, "the %s probe did not answer", backend);
    return -1;
  }
  if (head.n < 0) {
    snprintf(why, why_n, "%s", head.why);
    return -1;
  }
  return (int)k;
}

static int ad_uuids(const char *backend, unsigned char (*out)[16], size_t max,
                    char *why, size_t why_n)
{
  for (size_t i = 0; i < ad_ncache; i++) {
    struct ad_cache *c = &ad_cache[i];
    if (strcmp(c->backend, backend) != 0)
      continue;
    if (c->n < 0) {
      snprintf(why, why_n, "%s", c->why);
      return -1;
    }
    size_t k = (size_t)c->n < max ? (size_t)c->n : max;
    memcpy(out, c->uuid, k * 16);
    return (int)k;
  }
  struct ad_cache c;
  memset(&c, 0, sizeof c);
  snprintf(c.backend, sizeof c.backend, "%s", backend);
  c.n = ad_probe(backend, c.uuid, AD_MAX_UUIDS, c.why, sizeof c.why);
  /* a refusal for threads is not an answer: a later start-up may ask */
  if (ad_ncache < sizeof ad_cache / sizeof ad_cache[0] &&
      !(c.n < 0 && strstr(c.why, "one thread") != NULL))
    ad_cache[ad_ncache++] = c;
  if (c.n < 0) {
    snprintf(why, why_n, "%s", c.why);
    return -1;
  }
  size_t k = (size_t)c.n < max ? (size_t)c.n : max;
  memcpy(out, c.uuid, k * 16);
  return (int)k;
}

wd_uuids_fn wd_autodev_uuids = ad_uuids;

/* Entry `e` of a visible-devices list ("GPU-8a6f0e1c-...", maybe a
 * prefix): its hex digits into hex[] (lower case), 0 when it is not a
 * GPU UUID entry (an index, "MIG-...", or too long). */
static size_t ad_entry_hex(const char *e, size_t len, char hex[33])
{
  if (len < 5 || strncmp(e, "GPU-", 4) != 0)
    return 0;
  size_t n = 0;
  for (size_t i = 4; i < len; i++) {
    if (e[i] == '-')
      continue;
    if (!isxdigit((unsigned char)e[i]) || n == 32)
      return 0;
    hex[n++] = (char)tolower((unsigned char)e[i]);
  }
  hex[n] = '\0';
  return n;
}

static void ad_hex(const unsigned char u[16], char hex[33])
{
  for (int i = 0; i < 16; i++)
    snprintf(hex + 2 * i, 3, "%02x", u[i]);
}

/* The Vulkan devices of the granted GPUs: for entry i of list, vk<i> when
 * exactly one Vulkan device has its UUID.  Appends to d[*n] (room for k
 * more); returns how many it added. */
static size_t ad_vulkan(const char *var, const char *list, size_t k,
                        const char *counted, const wd_device_cfg *defaults,
                        wd_device_cfg *d, size_t at)
{
  static unsigned char vk[AD_MAX_UUIDS][16], cu[AD_MAX_UUIDS][16];
  char why[200] = "";
  int nvk = wd_autodev_uuids("vulkan", vk, AD_MAX_UUIDS, why, sizeof why);
  if (nvk < 0) {
    wd_warn("devices: auto: no Vulkan devices: %s", why);
    return 0;
  }
  if (nvk == 0) {
    wd_info("devices: auto: no Vulkan physical device on this node");
    return 0;
  }
  int ncu = -1;
  if (counted != NULL &&
      (ncu = wd_autodev_uuids(counted, cu, AD_MAX_UUIDS, why, sizeof why)) < 0)
    wd_warn("devices: auto: %s's device UUIDs: %s", counted, why);
  size_t added = 0;
  const char *e = list;
  for (size_t i = 0; i < k; i++) {
    size_t len = strcspn(e, ",");
    char hex[33];
    size_t nhex = 0;
    if (ncu > 0 && i < (size_t)ncu) {
      ad_hex(cu[i], hex);
      nhex = 32;
    } else {
      nhex = ad_entry_hex(e, len, hex);
    }
    int match = -1, matches = 0;
    for (int v = 0; nhex > 0 && v < nvk; v++) {
      char vh[33];
      ad_hex(vk[v], vh);
      if (strncmp(vh, hex, nhex) == 0) {
        match = v;
        matches++;
      }
    }
    if (matches == 1) {
      wd_device_cfg *c = &d[at + added++];
      *c = *defaults;
      snprintf(c->name, sizeof c->name, "vk%zu", i);
      snprintf(c->backend, sizeof c->backend, "vulkan");
      c->index = (unsigned)match;
      wd_info("devices: auto: %s entry %zu ('%.*s') is Vulkan device %d: "
              "vk%zu", var, i, (int)len, e, match, i);
    } else {
      wd_info("devices: auto: %s entry %zu ('%.*s') has no Vulkan device: "
              "%s", var, i, (int)len, e,
              nhex == 0 ? "not a GPU-<uuid> entry, and no CUDA runtime "
                          "to name its UUID"
              : matches == 0 ? "no Vulkan device has its UUID"
                             : "its UUID prefix names several");
    }
    e += len + (e[len] == ',');
  }
  return added;
}

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
  /* the list Vulkan devices are matched against: the chosen one, else
   * whichever grants GPUs (a Vulkan-only build); none without vulkan */
  const char *vvar = var, *vlist = list;
  int vulkan = wv_backend_find("vulkan") != NULL;
  if (vlist == NULL && vulkan && ad_count(cuda) > 0)
    vvar = "CUDA_VISIBLE_DEVICES", vlist = cuda;
  else if (vlist == NULL && vulkan && ad_count(rocr) > 0)
    vvar = "ROCR_VISIBLE_DEVICES", vlist = rocr;
  if (vlist != NULL && !ad_wellformed(vlist)) {
    snprintf(why, why_n, "devices: auto: %s='%s' is not a comma list of "
             "GPU indices or UUIDs", vvar, vlist);
    return -1;
  }
  size_t k = list ? ad_count(list) : 0;
  size_t kv = vulkan && vlist ? ad_count(vlist) : 0;
  if (k > 255 || kv > 255) {
    snprintf(why, why_n, "devices: auto: %s lists %zu GPUs (at most 255)",
             vvar, k > kv ? k : kv);
    return -1;
  }
  wd_device_cfg *d = calloc(k + kv + 1, sizeof *d);
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
  size_t m = k;
  /* a backend whose devices are the granted list's entries names their
   * UUIDs (CUDA's do; workers/worker.h counts_visible_devices) */
  const wv_backend *be = list != NULL ? wv_backend_find(backend) : NULL;
  if (kv > 0)
    m += ad_vulkan(vvar, vlist, kv,
                   be != NULL && be->counts_visible_devices ? backend : NULL,
                   defaults, d, k);
  if (m == 0) {  /* nothing granted, or nothing this build can drive */
    d[0] = *defaults;
    snprintf(d[0].name, sizeof d[0].name, "cpu0");
    snprintf(d[0].backend, sizeof d[0].backend, "cpu");
    d[0].index = 0;
    m = 1;
  }
  *out = d;
  *n = m;
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
