/* health.h - a device's health as its driver reports it: temperature,
 * power draw and limit, clocks, throttle reasons, memory, utilisation.
 *
 * Sources (health.c, health_nvml.c), tried for the GPU a device's caps
 * name by UUID:
 *  - NVIDIA: NVML, loaded at run time (dlopen "libnvidia-ml.so.1"; no
 *    build dependency), the device found by its UUID string
 *    ("GPU-xxxxxxxx-xxxx-..."): CUDA's, Vulkan's and OpenCL's device UUIDs
 *    on NVIDIA are that UUID, so all three meet the same GPU;
 *  - AMD: the amdgpu driver's sysfs and hwmon files of the DRM card whose
 *    unique_id the UUID spells (HIP's UUID is the 16 hex digits of
 *    unique_id as text);
 *  - a feed: a file of "key value" lines (the fake backend's telemetry,
 *    for tests: wv_health_parse_feed).
 * A device none of them knows has no source, says why, and shows no
 * figure at all: a field not in `have` is absent, never zero.
 *
 * Reading may block (NVML calls are GPU driver calls; files on sysfs), so
 * it runs on the daemon's health thread (daemon/exec/health.c), never on
 * the loop and never on a device thread.
 */
#ifndef WV_HEALTH_H
#define WV_HEALTH_H

#include <stddef.h>
#include <stdint.h>

#include "workers/worker.h"

enum {
  WV_HF_TEMP = 1u << 0,        /* temp_c */
  WV_HF_POWER = 1u << 1,       /* power_w */
  WV_HF_POWER_LIMIT = 1u << 2, /* power_limit_w */
  WV_HF_SM_CLOCK = 1u << 3,    /* sm_mhz */
  WV_HF_MEM_CLOCK = 1u << 4,   /* mem_mhz */
  WV_HF_THROTTLE = 1u << 5,    /* throttle */
  WV_HF_MEM_USED = 1u << 6,    /* mem_used */
  WV_HF_MEM_TOTAL = 1u << 7,   /* mem_total */
  WV_HF_UTIL = 1u << 8,        /* util_pct */
};

/* Throttle reasons: NVML's clocks-throttle-reason bits (nvml.h,
 * nvmlClocksThrottleReason*), the names wavedd gives them. */
#define WV_THROTTLE_REASONS                                                 \
  X(0x1ull, "idle")                                                         \
  X(0x2ull, "app_clocks")                                                   \
  X(0x4ull, "sw_power_cap")                                                 \
  X(0x8ull, "hw_slowdown")                                                  \
  X(0x10ull, "sync_boost")                                                  \
  X(0x20ull, "sw_thermal")                                                  \
  X(0x40ull, "hw_thermal")                                                  \
  X(0x80ull, "hw_power_brake")                                              \
  X(0x100ull, "display_clocks")

typedef struct wv_health {
  char source[16];       /* "nvml", "amdgpu", "feed"; "" = none */
  char why[200];         /* no source, or a reading failed: why */
  unsigned have;         /* WV_HF_* of the fields below that are read */
  double temp_c;         /* GPU temperature, degrees Celsius */
  double power_w;        /* draw now, watts */
  double power_limit_w;  /* the enforced limit, watts */
  unsigned sm_mhz;       /* SM (shader) clock now */
  unsigned mem_mhz;      /* memory clock now */
  uint64_t throttle;     /* WV_THROTTLE_REASONS bits active now */
  uint64_t mem_used, mem_total;  /* device memory, bytes */
  double util_pct;       /* busy, percent of the last sample period */
} wv_health;

/* The GPU caps names (by UUID) through NVML, then amdgpu; without a UUID
 * or a match: no source, *out says why.  Any thread; may block. */
void wv_health_gpu(const wv_caps *caps, wv_health *out);

/* NVML alone (health_nvml.c): 1 when it knows the UUID and filled *out
 * (some fields may still be absent), 0 when NVML is not there or does not
 * know the GPU (why in out->why). */
int wv_health_nvml(const unsigned char uuid[16], wv_health *out);

/* A feed's text into *out (source "feed").  Lines "key value": temp_c,
 * power_w, power_limit_w, sm_mhz, mem_mhz, throttle (0x bits or names
 * joined by ','), mem_used, mem_total, util_pct; '#' starts a comment.
 * 0, or -1 with out->why naming the bad line (then nothing is shown). */
int wv_health_parse_feed(const char *text, wv_health *out);

/* The names of the active reasons joined by ',' ("" when none). */
void wv_health_throttle_names(uint64_t bits, char *buf, size_t n);

#endif
