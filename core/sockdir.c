/* sockdir.c - the default socket's place (see sockdir.h).
 *
 * Only the private folder is ever created here (by the daemon, make = 1);
 * the others are made by systemd, pam_systemd or daemon/net/sockpath.c.
 * The checks follow tmux's for /tmp/tmux-UID: lstat, so a link planted by
 * another user is refused rather than followed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/sockdir.h"

#define SD_SUN_MAX 108  /* sizeof sockaddr_un.sun_path */

const char *wv_private_dir(char *dir, size_t n, uid_t uid)
{
  snprintf(dir, n, "/tmp/wavedd-%lu", (unsigned long)uid);
  return dir;
}

int wv_private_dir_check(const char *dir, uid_t uid, int make, char *why,
                         size_t n)
{
  struct stat st;
  if (lstat(dir, &st) != 0) {
    int e = errno;
    if (e == ENOENT && make) {
      /* EEXIST: made meanwhile (another start, another user): check it */
      if (mkdir(dir, 0700) == 0 || errno == EEXIST)
        return wv_private_dir_check(dir, uid, 0, why, n);
      e = errno;
    }
    snprintf(why, n, "private socket folder %s: %s", dir, strerror(e));
    errno = e;
    return -1;
  }
  errno = EACCES;
  if (!S_ISDIR(st.st_mode)) {
    snprintf(why, n, "private socket folder %s is not a folder (a link or a "
             "file): refusing it; remove it", dir);
    return -1;
  }
  if (st.st_uid != uid) {
    snprintf(why, n, "private socket folder %s belongs to uid %lu, not to "
             "uid %lu: refusing it (another user made it first; remove it, "
             "or set XDG_RUNTIME_DIR or list ipc://PATH in a folder of "
             "yours)", dir, (unsigned long)st.st_uid, (unsigned long)uid);
    return -1;
  }
  if (st.st_mode & 077) {
    snprintf(why, n, "private socket folder %s has mode %04o: group or "
             "others may enter it; refusing it (chmod 700 %s)", dir,
             (unsigned)(st.st_mode & 07777), dir);
    return -1;
  }
  return 0;
}

/* $XDG_RUNTIME_DIR/wavedd/wavedd.sock into path when xdg is usable. */
static int sd_xdg(char *path, size_t n, uid_t uid, const char *xdg)
{
  struct stat st;
  if (xdg == NULL || xdg[0] != '/' ||
      strlen(xdg) + sizeof "/wavedd/" WV_SOCKET_NAME > SD_SUN_MAX ||
      stat(xdg, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != uid)
    return 0;
  snprintf(path, n, "%s/wavedd/" WV_SOCKET_NAME, xdg);
  return 1;
}

static int sd_is_socket(const char *path)
{
  struct stat st;
  return lstat(path, &st) == 0 && S_ISSOCK(st.st_mode);
}

const char *wv_sockdir_url(char *url, size_t n, uid_t uid, const char *xdg,
                           int for_client)
{
  char xpath[SD_SUN_MAX], ppath[SD_SUN_MAX], dir[64];
  const char *path = WV_SYSTEM_SOCKET;
  snprintf(ppath, sizeof ppath, "%s/" WV_SOCKET_NAME,
           wv_private_dir(dir, sizeof dir, uid));
  int have_xdg = uid != 0 && sd_xdg(xpath, sizeof xpath, uid, xdg);
  if (uid == 0)
    path = WV_SYSTEM_SOCKET;
  else if (for_client)
    path = have_xdg && sd_is_socket(xpath) ? xpath
           : sd_is_socket(ppath)          ? ppath
                                          : WV_SYSTEM_SOCKET;
  else if (have_xdg)
    path = xpath;
  else if (access("/run/wavedd", W_OK | X_OK) == 0)
    path = WV_SYSTEM_SOCKET;
  else
    path = ppath;
  snprintf(url, n, "ipc://%s", path);
  return url;
}

const char *wv_default_url(char *url, size_t n, int for_client)
{
  return wv_sockdir_url(url, n, geteuid(), getenv("XDG_RUNTIME_DIR"),
                        for_client);
}
