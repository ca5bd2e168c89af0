/* log.c - see log.h.  The line is formatted into a stack buffer and written
 * with a single write(2): stdio's buffering would interleave partial lines
 * from the device threads and the loop, and a log call must never block on a
 * lock held by another thread for long.
 *
 * Under journald (systemd connects stderr to the journal and says so in
 * $JOURNAL_STREAM, "DEV:INODE" of that stream, sd-daemon(3)) each line
 * starts with its syslog priority, "<3>" for an error (SD_ERR), so that
 * `journalctl -p err` finds the errors; the journal stamps the time and
 * the pid itself, so the line carries neither.  WAVEDD_LOG=journal asks for
 * that form on any stderr (a pipe to systemd-cat, a container runtime that
 * reads the prefixes), WAVEDD_LOG=plain for the plain one; otherwise
 * (a terminal, a file) a line is "TIME wavedd[PID] LEVEL: message". */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "daemon/log.h"

static _Atomic int lg_level = WD_LOG_INFO;

static const char *const lg_names[] = {"error", "warn", "info", "debug"};
/* sd-daemon.h's SD_ERR, SD_WARNING, SD_INFO, SD_DEBUG, per level */
static const char *const lg_prio[] = {SD_ERR, SD_WARNING, SD_INFO, SD_DEBUG};

static pthread_once_t lg_once = PTHREAD_ONCE_INIT;
static int lg_journal;

/* Whether stderr is the stream $JOURNAL_STREAM names. */
static int lg_stderr_is_journal(void)
{
  const char *js = getenv("JOURNAL_STREAM");
  unsigned long long dev, ino;
  char tail;
  struct stat st;
  if (js == NULL || sscanf(js, "%llu:%llu%c", &dev, &ino, &tail) != 2 ||
      fstat(STDERR_FILENO, &st) != 0)
    return 0;
  return (unsigned long long)st.st_dev == dev &&
         (unsigned long long)st.st_ino == ino;
}

static void lg_init(void)
{
  const char *v = getenv("WAVEDD_LOG");
  if (v != NULL && strcmp(v, "journal") == 0)
    lg_journal = 1;
  else if (v != NULL && strcmp(v, "plain") == 0)
    lg_journal = 0;
  else
    lg_journal = lg_stderr_is_journal();
}

int wd_log_journal(void)
{
  pthread_once(&lg_once, lg_init);
  return lg_journal;
}

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
  int n;
  if (level < 0)
    level = WD_LOG_ERROR;
  if (level > WD_LOG_DEBUG)
    level = WD_LOG_DEBUG;
  if (wd_log_journal()) {
    n = snprintf(line, sizeof line, "%s%s: ", lg_prio[level],
                 lg_names[level]);
  } else {
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    n = snprintf(line, sizeof line,
                 "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ wavedd[%ld] %s: ",
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                 tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000L,
                 (long)getpid(), lg_names[level]);
  }
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
