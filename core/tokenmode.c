/* tokenmode.c - the token file's mode rule (see tokenmode.h). */
#include <stdio.h>
#include <sys/types.h>
#include <unistd.h>

#include "core/tokenmode.h"

/* 1 when gid is this process's effective group or a supplementary one. */
static int tm_in_group(gid_t gid)
{
  if (gid == getegid())
    return 1;
  gid_t groups[256];
  int k = getgroups((int)(sizeof groups / sizeof *groups), groups);
  for (int i = 0; i < k; i++)
    if (groups[i] == gid)
      return 1;
  return 0;
}

int wv_token_mode_ok(const struct stat *st, char *why, size_t n)
{
  unsigned mode = (unsigned)(st->st_mode & 07777);
  if ((mode & 007) != 0 || (mode & 030) != 0) {
    snprintf(why, n, "mode %04o: a token file must not be open to others, "
             "nor writable by group (chmod 600, or 440 for a group of ours)",
             mode);
    return -1;
  }
  if ((mode & 040) != 0 && !tm_in_group(st->st_gid)) {
    snprintf(why, n, "mode %04o: a token file must not be open to group "
             "%u, which is not ours (chmod 600, or chgrp to our group)",
             mode, (unsigned)st->st_gid);
    return -1;
  }
  return 0;
}
