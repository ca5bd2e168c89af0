/* log.h - wavedd's log: one line per event on stderr, with a UTC timestamp,
 * the pid, the level and the message; under journald the line starts with
 * the sd-daemon priority prefix ("<3>") instead of the time and pid
 * (log.c).  Any thread may log; each line is written with
 * one write() so lines from different threads never interleave.  The level
 * is a process-wide setting (config key log_level). */
#ifndef WD_LOG_H
#define WD_LOG_H

enum { WD_LOG_ERROR = 0, WD_LOG_WARN = 1, WD_LOG_INFO = 2, WD_LOG_DEBUG = 3 };

void wd_log_set_level(int level);
int wd_log_level(void);
const char *wd_log_level_name(int level);
/* 1 when lines carry sd-daemon "<N>" prefixes (stderr is the journal, or
 * WAVEDD_LOG=journal). */
int wd_log_journal(void);
void wd_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Tell a supervisor (systemd's NOTIFY_SOCKET, or a test harness) how we
 * are: "READY=1", "STOPPING=1", "STATUS=...".  No-op without the variable. */
void wd_notify(const char *state);

#define wd_error(...) wd_log(WD_LOG_ERROR, __VA_ARGS__)
#define wd_warn(...) wd_log(WD_LOG_WARN, __VA_ARGS__)
#define wd_info(...) wd_log(WD_LOG_INFO, __VA_ARGS__)
#define wd_debug(...) wd_log(WD_LOG_DEBUG, __VA_ARGS__)

#endif
