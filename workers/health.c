/* health.c - see health.h: the GPU's source (NVML, then amdgpu), the
 * amdgpu sysfs/hwmon reader, the feed parser, throttle names.
 *
 * amdgpu (Documentation/gpu/amdgpu in the kernel): each DRM card's device
 * folder /sys/class/drm/cardN/device holds unique_id (16 hex digits, on
 * GPUs that have one), gpu_busy_percent, mem_info_vram_used and
 * mem_info_vram_total; its hwmon/hwmonM folder holds temp1_input (edge,
 * millidegrees C), power1_average or power1_input (microwatts),
 * power1_cap (microwatts), freq1_input (sclk, Hz) and freq2_input (mclk,
 * Hz).  A file that is not there leaves its field absent.  amdgpu has no
 * throttle-reason file that hwmon reads, so throttle stays absent there.
 * Not verified on an AMD GPU in the session that wrote it.
 */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "workers/health.h"

void wv_health_throttle_names(uint64_t bits, char *buf, size_t n)
{
  size_t at = 0;
  buf[0] = '\0';
#define X(bit, name)                                                        \
  if ((bits & (bit)) && at < n)                                             \
    at += (size_t)snprintf(buf + at, n - at, "%s%s", at ? "," : "", name);
  WV_THROTTLE_REASONS
#undef X
}

/* The bit of a reason's name; 0 for none. */
static uint64_t wh_reason(const char *s, size_t len)
{
#define X(bit, name)                                                        \
  if (strlen(name) == len && strncmp(s, name, len) == 0)                    \
    return bit;
  WV_THROTTLE_REASONS
#undef X
  return 0;
}

/* "0x.." bits, or names joined by ','; -1 on a name it does not know. */
static int wh_throttle(const char *v, uint64_t *out)
{
  *out = 0;
  if (strncmp(v, "0x", 2) == 0) {
    char *end;
    *out = strtoull(v, &end, 16);
    return *end == '\0' && end > v + 2 ? 0 : -1;
  }
  if (strcmp(v, "none") == 0)
    return 0;
  while (*v) {
    size_t len = strcspn(v, ",");
    uint64_t b = wh_reason(v, len);
    if (b == 0)
      return -1;
    *out |= b;
    v += len + (v[len] == ',');
  }
  return 0;
}

int wv_health_parse_feed(const char *text, wv_health *out)
{
  memset(out, 0, sizeof *out);
  snprintf(out->source, sizeof out->source, "feed");
  unsigned lineno = 0;
  for (const char *p = text; *p;) {
    size_t len = strcspn(p, "\n");
    char line[160];
    lineno++;
    snprintf(line, sizeof line, "%.*s", (int)(len < 159 ? len : 159), p);
    p += len + (p[len] == '\n');
    char *hash = strchr(line, '#');
    if (hash != NULL)
      *hash = '\0';
    char key[32], val[120];
    int got = sscanf(line, "%31s %119s", key, val);
    if (got <= 0)
      continue;
    char *end = NULL;
    double d = got == 2 ? strtod(val, &end) : 0;
    int num = got == 2 && end != val && *end == '\0' && d >= 0;
    unsigned bit = 0;
    if (strcmp(key, "throttle") == 0 && got == 2) {
      if (wh_throttle(val, &out->throttle) == 0)
        bit = WV_HF_THROTTLE;
    } else if (num) {
      if (strcmp(key, "temp_c") == 0)
        out->temp_c = d, bit = WV_HF_TEMP;
      else if (strcmp(key, "power_w") == 0)
        out->power_w = d, bit = WV_HF_POWER;
      else if (strcmp(key, "power_limit_w") == 0)
        out->power_limit_w = d, bit = WV_HF_POWER_LIMIT;
      else if (strcmp(key, "sm_mhz") == 0)
        out->sm_mhz = (unsigned)d, bit = WV_HF_SM_CLOCK;
      else if (strcmp(key, "mem_mhz") == 0)
        out->mem_mhz = (unsigned)d, bit = WV_HF_MEM_CLOCK;
      else if (strcmp(key, "mem_used") == 0)
        out->mem_used = (uint64_t)d, bit = WV_HF_MEM_USED;
      else if (strcmp(key, "mem_total") == 0)
        out->mem_total = (uint64_t)d, bit = WV_HF_MEM_TOTAL;
      else if (strcmp(key, "util_pct") == 0 && d <= 100)
        out->util_pct = d, bit = WV_HF_UTIL;
    }
    if (bit == 0) {
      out->have = 0;
      snprintf(out->why, sizeof out->why, "feed line %u: '%.40s' is not "
               "\"key value\" of a known key and a good value", lineno,
               line);
      return -1;
    }
    out->have |= bit;
  }
  return 0;
}

/* A number from dir/name (0 when read); -1 when absent or not a number. */
static int wh_read_num(const char *dir, const char *name, double *out)
{
  char path[400], buf[64];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return -1;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  char *end;
  *out = strtod(buf, &end);
  return end == buf ? -1 : 0;
}

/* The card's hwmon folder into out (n bytes); -1 when it has none. */
static int wh_hwmon(const char *dev, char *out, size_t n)
{
  char path[320];
  snprintf(path, sizeof path, "%s/hwmon", dev);
  DIR *d = opendir(path);
  if (d == NULL)
    return -1;
  int rc = -1;
  for (struct dirent *e; rc != 0 && (e = readdir(d)) != NULL;)
    if (strncmp(e->d_name, "hwmon", 5) == 0) {
      snprintf(out, n, "%s/%.40s", path, e->d_name);
      rc = 0;
    }
  closedir(d);
  return rc;
}

static void wh_amdgpu_read(const char *dev, wv_health *out)
{
  snprintf(out->source, sizeof out->source, "amdgpu");
  double v;
  if (wh_read_num(dev, "gpu_busy_percent", &v) == 0)
    out->util_pct = v, out->have |= WV_HF_UTIL;
  if (wh_read_num(dev, "mem_info_vram_used", &v) == 0)
    out->mem_used = (uint64_t)v, out->have |= WV_HF_MEM_USED;
  if (wh_read_num(dev, "mem_info_vram_total", &v) == 0)
    out->mem_total = (uint64_t)v, out->have |= WV_HF_MEM_TOTAL;
  char hw[400];
  if (wh_hwmon(dev, hw, sizeof hw) != 0)
    return;
  if (wh_read_num(hw, "temp1_input", &v) == 0)
    out->temp_c = v / 1000.0, out->have |= WV_HF_TEMP;
  if (wh_read_num(hw, "power1_average", &v) == 0 ||
      wh_read_num(hw, "power1_input", &v) == 0)
    out->power_w = v / 1e6, out->have |= WV_HF_POWER;
  if (wh_read_num(hw, "power1_cap", &v) == 0)
    out->power_limit_w = v / 1e6, out->have |= WV_HF_POWER_LIMIT;
  if (wh_read_num(hw, "freq1_input", &v) == 0)
    out->sm_mhz = (unsigned)(v / 1e6), out->have |= WV_HF_SM_CLOCK;
  if (wh_read_num(hw, "freq2_input", &v) == 0)
    out->mem_mhz = (unsigned)(v / 1e6), out->have |= WV_HF_MEM_CLOCK;
}

/* The amdgpu card whose unique_id the UUID spells as text (HIP's UUID:
 * the 16 hex digits); 1 when found and read. */
static int wh_amdgpu(const unsigned char uuid[16], wv_health *out)
{
  for (int i = 0; i < 16; i++)
    if (!isxdigit(uuid[i]))
      return 0;
  DIR *d = opendir("/sys/class/drm");
  if (d == NULL)
    return 0;
  int found = 0;
  for (struct dirent *e; !found && (e = readdir(d)) != NULL;) {
    if (strncmp(e->d_name, "card", 4) != 0 || strchr(e->d_name, '-'))
      continue;
    char dev[300], id[64] = "";
    snprintf(dev, sizeof dev, "/sys/class/drm/%.40s/device", e->d_name);
    char path[340];
    snprintf(path, sizeof path, "%s/unique_id", dev);
    FILE *f = fopen(path, "r");
    if (f == NULL)
      continue;
    size_t n = fread(id, 1, sizeof id - 1, f);
    fclose(f);
    id[n] = '\0';
    const char *hex = strncmp(id, "0x", 2) == 0 ? id + 2 : id;
    if (strlen(hex) >= 16 && strncasecmp(hex, (const char *)uuid, 16) == 0) {
      wh_amdgpu_read(dev, out);
      found = 1;
    }
  }
  closedir(d);
  return found;
}

void wv_health_gpu(const wv_caps *caps, wv_health *out)
{
  memset(out, 0, sizeof *out);
  if (!caps->has_uuid) {
    snprintf(out->why, sizeof out->why, "no health source: the device has "
             "no GPU UUID to find it by");
    return;
  }
  if (wv_health_nvml(caps->uuid, out))
    return;
  char nv_why[sizeof out->why];
  snprintf(nv_why, sizeof nv_why, "%s", out->why);
  memset(out, 0, sizeof *out);
  if (wh_amdgpu(caps->uuid, out))
    return;
  snprintf(out->why, sizeof out->why, "no health source: %.120s; no amdgpu "
           "card with its unique_id", nv_why);
}
