/* procinfo.c - see procinfo.h.  /proc/self/stat gives utime and stime
 * (fields 14, 15, in clock ticks), starttime (22, ticks since boot),
 * vsize (23, bytes) and rss (24, pages); /proc/stat's btime is the boot
 * time; /proc/self/fd is counted.  The command name (field 2) may hold
 * spaces and parentheses, so the fields are counted from its last ')'.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "daemon/procinfo.h"

static double pi_boot_time(void)
{
  FILE *f = fopen("/proc/stat", "r");
  if (f == NULL)
    return 0;
  char line[256];
  double bt = 0;
  while (fgets(line, sizeof line, f) != NULL)
    if (strncmp(line, "btime ", 6) == 0) {
      bt = strtod(line + 6, NULL);
      break;
    }
  fclose(f);
  return bt;
}

static int64_t pi_open_fds(void)
{
  DIR *d = opendir("/proc/self/fd");
  if (d == NULL)
    return -1;
  int64_t n = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;)
    if (e->d_name[0] != '.')
      n++;
  closedir(d);
  return n - 1;  /* not the directory's own descriptor */
}

int wd_procinfo_read(wd_procinfo *out)
{
  memset(out, 0, sizeof *out);
  char buf[1024];
  FILE *f = fopen("/proc/self/stat", "r");
  if (f == NULL)
    return -1;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  char *p = strrchr(buf, ')');
  if (p == NULL)
    return -1;
  /* p + 2 is field 3 (the state, one letter); count on from field 4 to
   * 14, 15, 22, 23, 24 */
  unsigned long long v[25] = {0};
  p += 2;
  if (*p == '\0' || p[1] != ' ')
    return -1;
  p += 2;
  for (int field = 4; field <= 24 && *p; field++) {
    char *end;
    v[field] = strtoull(p, &end, 10);
    if (end == p)
      return -1;
    p = end;
    while (*p == ' ')
      p++;
  }
  long tick = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
  if (tick <= 0 || page <= 0)
    return -1;
  out->cpu_seconds = (double)(v[14] + v[15]) / (double)tick;
  out->start_time = pi_boot_time() + (double)v[22] / (double)tick;
  out->virtual_bytes = v[23];
  out->resident_bytes = v[24] * (uint64_t)page;
  out->open_fds = pi_open_fds();
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
    out->max_fds = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : rl.rlim_cur;
  return 0;
}
