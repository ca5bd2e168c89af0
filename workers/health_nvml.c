/* health_nvml.c - NVML, loaded at run time (health.h).
 *
 * dlopen("libnvidia-ml.so.1") once (the soname the driver installs; no
 * header or library at build time), then dlsym the functions of NVML's
 * documented C API that are read here, each declared below with the
 * types nvml.h gives it (nvmlReturn_t is an int enum, 0 = NVML_SUCCESS;
 * nvmlDevice_t an opaque pointer).  nvmlInit_v2 once for the process;
 * NVML is thread-safe.  The GPU is found by its UUID string
 * (nvmlDeviceGetHandleByUUID), then each field is read on its own: a call
 * that fails (NVML_ERROR_NOT_SUPPORTED on boards without a power sensor,
 * say) leaves that field absent and the others stand.
 *
 * Not verified on a GPU in the session that wrote it: no NVIDIA driver
 * here.  The fake backend's feed exercises the same wv_health fields,
 * metrics and printing in CI.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "workers/health.h"

typedef int nm_ret;               /* nvmlReturn_t */
typedef struct nm_dev_st *nm_dev; /* nvmlDevice_t */
typedef struct { unsigned long long total, free, used; } nm_memory;
typedef struct { unsigned int gpu, memory; } nm_util;

enum { NV_TEMPERATURE_GPU = 0, NV_CLOCK_SM = 1, NV_CLOCK_MEM = 2 };

static struct {
  pthread_once_t once;
  int ok;
  char why[160];
  nm_ret (*init)(void);
  const char *(*error_string)(nm_ret);
  nm_ret (*by_uuid)(const char *, nm_dev *);
  nm_ret (*temperature)(nm_dev, int, unsigned *);
  nm_ret (*power)(nm_dev, unsigned *);
  nm_ret (*power_limit)(nm_dev, unsigned *);
  nm_ret (*clock)(nm_dev, int, unsigned *);
  nm_ret (*throttle)(nm_dev, unsigned long long *);
  nm_ret (*memory)(nm_dev, nm_memory *);
  nm_ret (*util)(nm_dev, nm_util *);
} nv = {.once = PTHREAD_ONCE_INIT};

static void nm_load(void)
{
  void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    snprintf(nv.why, sizeof nv.why, "no NVML (libnvidia-ml.so.1: %s)",
             dlerror());
    return;
  }
#define NV_SYM(field, name)                                                 \
  do {                                                                      \
    *(void **)&nv.field = dlsym(h, name);                                   \
    if (nv.field == NULL) {                                                 \
      snprintf(nv.why, sizeof nv.why, "NVML lacks %s", name);               \
      return;                                                               \
    }                                                                       \
  } while (0)
  NV_SYM(init, "nvmlInit_v2");
  NV_SYM(error_string, "nvmlErrorString");
  NV_SYM(by_uuid, "nvmlDeviceGetHandleByUUID");
  NV_SYM(temperature, "nvmlDeviceGetTemperature");
  NV_SYM(power, "nvmlDeviceGetPowerUsage");
  NV_SYM(power_limit, "nvmlDeviceGetEnforcedPowerLimit");
  NV_SYM(clock, "nvmlDeviceGetClockInfo");
  NV_SYM(throttle, "nvmlDeviceGetCurrentClocksThrottleReasons");
  NV_SYM(memory, "nvmlDeviceGetMemoryInfo");
  NV_SYM(util, "nvmlDeviceGetUtilizationRates");
#undef NV_SYM
  nm_ret r = nv.init();
  if (r != 0) {
    snprintf(nv.why, sizeof nv.why, "nvmlInit_v2: %s", nv.error_string(r));
    return;
  }
  nv.ok = 1;  /* the library stays loaded and initialised for good */
}

int wv_health_nvml(const unsigned char uuid[16], wv_health *out)
{
  pthread_once(&nv.once, nm_load);
  if (!nv.ok) {
    snprintf(out->why, sizeof out->why, "%s", nv.why);
    return 0;
  }
  char s[48];
  snprintf(s, sizeof s, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
           "%02x%02x%02x%02x%02x%02x", uuid[0], uuid[1], uuid[2], uuid[3],
           uuid[4], uuid[5], uuid[6], uuid[7], uuid[8], uuid[9], uuid[10],
           uuid[11], uuid[12], uuid[13], uuid[14], uuid[15]);
  nm_dev d = NULL;
  nm_ret r = nv.by_uuid(s, &d);
  if (r != 0) {
    snprintf(out->why, sizeof out->why, "NVML does not know %s: %s", s,
             nv.error_string(r));
    return 0;
  }
  snprintf(out->source, sizeof out->source, "nvml");
  unsigned v;
  if (nv.temperature(d, NV_TEMPERATURE_GPU, &v) == 0)
    out->temp_c = v, out->have |= WV_HF_TEMP;
  if (nv.power(d, &v) == 0)  /* milliwatts */
    out->power_w = v / 1000.0, out->have |= WV_HF_POWER;
  if (nv.power_limit(d, &v) == 0)
    out->power_limit_w = v / 1000.0, out->have |= WV_HF_POWER_LIMIT;
  if (nv.clock(d, NV_CLOCK_SM, &v) == 0)
    out->sm_mhz = v, out->have |= WV_HF_SM_CLOCK;
  if (nv.clock(d, NV_CLOCK_MEM, &v) == 0)
    out->mem_mhz = v, out->have |= WV_HF_MEM_CLOCK;
  unsigned long long bits;
  if (nv.throttle(d, &bits) == 0)
    out->throttle = bits, out->have |= WV_HF_THROTTLE;
  nm_memory m;
  if (nv.memory(d, &m) == 0) {
    out->mem_used = m.used;
    out->mem_total = m.total;
    out->have |= WV_HF_MEM_USED | WV_HF_MEM_TOTAL;
  }
  nm_util u;
  if (nv.util(d, &u) == 0)
    out->util_pct = u.gpu, out->have |= WV_HF_UTIL;
  return 1;
}
