/* sockpath.c - no socket in a folder others control, none over a file
 * that is not ours.
 *
 * Why: with the socket in world-writable /tmp, another user who binds the
 * path first makes wavedd fail to start and then answers root's wavectl.
 * The default socket lives in a private runtime folder (core/sockdir.h);
 * for any ipc path wavedd refuses a folder owned by someone else (root
 * excepted: /run, systemd's RuntimeDirectory) or writable by everyone, and
 * refuses to replace an existing file that is not a socket of our uid.
 * (listen.c then refuses one a live process accepts on.)  Creating the
 * folder is the one thing done for the default layout: /run/wavedd and
 * $XDG_RUNTIME_DIR/wavedd are made 0750 / 0700 when missing.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/net/sockpath.h"
#include "core/base.h"

int wd_sockpath_prepare(const char *path, wave_error *err)
{
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash == NULL)
    snprintf(dir, sizeof dir, ".");
  else if (slash == dir)
    dir[1] = '\0';
  else
    *slash = '\0';
  uid_t me = geteuid();
  struct stat st;
  if (lstat(dir, &st) != 0) {
    if (errno != ENOENT)
      return wv_seterr(err, WAVE_EIO, "socket folder %s: %s", dir,
                       strerror(errno));
    if (mkdir(dir, me == 0 ? 0750 : 0700) != 0 || lstat(dir, &st) != 0)
      return wv_seterr(err, WAVE_EIO, "cannot create the socket folder %s: "
                       "%s", dir, strerror(errno));
  }
  if (!S_ISDIR(st.st_mode))
    return wv_seterr(err, WAVE_EIO, "socket folder %s is not a folder", dir);
  if (st.st_uid != me && st.st_uid != 0)
    return wv_seterr(err, WAVE_EIO, "socket folder %s belongs to uid %ld, not "
                     "to us (uid %ld) or root: refusing it", dir,
                     (long)st.st_uid, (long)me);
  if (st.st_mode & S_IWOTH)
    return wv_seterr(err, WAVE_EIO, "socket folder %s is writable by every "
                     "user (mode %04o): another user could take the socket "
                     "path; use a private folder such as /run/wavedd "
                     "(docs/service.md)", dir, (unsigned)(st.st_mode & 07777));
  if (lstat(path, &st) != 0)
    return 0;  /* nothing there yet */
  if (!S_ISSOCK(st.st_mode))
    return wv_seterr(err, WAVE_EIO, "%s exists and is not a socket: refusing "
                     "to replace it", path);
  if (st.st_uid != me)
    return wv_seterr(err, WAVE_EIO, "socket %s belongs to uid %ld, not to us "
                     "(uid %ld): refusing to take it over", path,
                     (long)st.st_uid, (long)me);
  return 0;
}
