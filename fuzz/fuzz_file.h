/* fuzz_file.h - the input as a file, for loaders that take a path
 * (fuzz_config.c, fuzz_pack.c): one memfd per process, rewritten for every
 * input and named /proc/self/fd/N, so nothing touches the disk. */
#ifndef WF_FUZZ_FILE_H
#define WF_FUZZ_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static const char *wf_as_file(const uint8_t *data, size_t size)
{
  static int fd = -1;
  static char path[64];
  if (fd < 0) {
    fd = memfd_create("wave-fuzz", 0);
    if (fd < 0)
      abort();  /* the harness, not a finding */
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  }
  if (ftruncate(fd, 0) != 0 ||
      (size > 0 && pwrite(fd, data, size, 0) != (ssize_t)size))
    abort();
  return path;
}

#endif
