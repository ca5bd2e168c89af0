/* procinfo.h - the process's own figures for the standard process_*
 * metric families (Prometheus' client libraries export the same, from
 * the same /proc files): resident and virtual memory, CPU seconds, the
 * start time, open descriptors and their limit.
 */
#ifndef WD_PROCINFO_H
#define WD_PROCINFO_H

#include <stdint.h>

typedef struct wd_procinfo {
  double cpu_seconds;        /* user + system */
  uint64_t resident_bytes, virtual_bytes;
  double start_time;         /* seconds since the epoch */
  int64_t open_fds;          /* -1: unknown */
  uint64_t max_fds;          /* soft RLIMIT_NOFILE */
} wd_procinfo;

/* Read them now (any thread).  0, or -1 when /proc/self/stat cannot be
 * read (then nothing of *out is to be shown). */
int wd_procinfo_read(wd_procinfo *out);

#endif
