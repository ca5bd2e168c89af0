/* log.c - see log.h.  The line is formatted into a stack buffer and written
 * with a single write(2): stdio's buffering would interleave partial lines
 * from the device threads and the loop, and a log call must never block on a
 * lock held by another thread for long. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "daemon/log.h"

static _Atomic int lg_level = WD_LOG_INFO;

static const char *const lg_names[] = {"error", "warn", "info", "debug"};

void wd_log_set_level(int level) { atomic_store(&lg_level, level); }

int wd_log_level(void) { return atomic_load(&lg_level); }

const char *wd_log_level_name(int level)
{
  return level >= 0 && level <= WD_LOG_DEBUG ? lg_names[level] : "?";
}

void wd_log(int level, const char *fmt, ...)
{
  if (level > atomic_load(&lg_level))
    return;
  char line[1024];
  struct timespec ts;
  struct tm tm;
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  int n = snprintf(line, sizeof line,
                   "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ wavedd[%ld] %s: ",
                   tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                   tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000L,
                   (long)getpid(), wd_log_level_name(level));
  if (n < 0)
    return;
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
  va_end(ap);
  size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
  if (len > sizeof line - 2)
    len = sizeof line - 2;  /* truncated: keep the newline */
  line[len++] = '\n';
  ssize_t w = write(STDERR_FILENO, line, len);
  (void)w;  /* nowhere to report a failed log write */
}

/* sd_notify(3) from libsystemd: one datagram to $NOTIFY_SOCKET (a path, or
 * "@name" for the abstract namespace); nothing without the variable. */
void wd_notify(const char *state)
{
  int rc = sd_notify(0, state);
  if (rc < 0)
    wd_debug("notify: %s", strerror(-rc));
}
