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
 * $XDG_RUNTIME_DIR/wavedd are made 0750 / 0700 when missing, and the
 * private /tmp/wavedd-UID (core/sockdir.h) 0700, which must stay ours and
 * closed to everyone else.  --check-config runs the same checks without
 * creating anything (wd_sockpath_check).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon/net/sockpath.h"
#include "core/base.h"
#include "core/sockdir.h"

/* The checks of wd_sockpath_prepare; with make 0 nothing is created and
 * a missing folder passes when it could be made (--check-config). */
static int sp_check(const char *path, int make, wave_error *err)
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
  char mine[64], why[400];
  if (strcmp(dir, wv_private_dir(mine, sizeof mine, me)) == 0) {
    /* the default folder of a user without a runtime folder: tmux's rules */
    if (wv_private_dir_check(dir, me, make, why, sizeof why) != 0 &&
        (make || errno != ENOENT))
      return wv_seterr(err, WAVE_EIO, "%s", why);
  }
  struct stat st;
  if (lstat(dir, &st) != 0) {
    if (errno != ENOENT)
      return wv_seterr(err, WAVE_EIO, "socket folder %s: %s", dir,
                       strerror(errno));
    int made = 0;
    if (!make) {  /* could the start make it?  Its parent must be ours */
      char up[4096];
      snprintf(up, sizeof up, "%s", dir);
      char *s2 = strrchr(up, '/');
      if (s2 == up)
        up[1] = '\0';
      else if (s2 != NULL)
        *s2 = '\0';
      else
        snprintf(up, sizeof up, ".");
      if (access(up, W_OK | X_OK) == 0)
        return 0;
    } else {
      made = mkdir(dir, me == 0 ? 0750 : 0700) == 0 && lstat(dir, &st) == 0;
    }
    if (!made) {
      int e = errno;
      return wv_seterr(err, WAVE_EIO, "cannot create the socket folder %s: "
                       "%s%s", dir, strerror(e),
                       me != 0 && e == EACCES
                           ? " (not root: with no ipc URL in the config a "
                             "user's daemon takes $XDG_RUNTIME_DIR/wavedd "
                             "or /tmp/wavedd-UID; or list ipc://PATH in a "
                             "folder of yours; docs/service.md \"The "
                             "socket\")"
                           : "");
    }
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
  if (access(dir, W_OK | X_OK) != 0)
    return wv_seterr(err, WAVE_EIO, "socket folder %s: we (uid %ld) may not "
                     "make a socket there: %s", dir, (long)me,
                     strerror(errno));
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

int wd_sockpath_prepare(const char *path, wave_error *err)
{
  return sp_check(path, 1, err);
}

int wd_sockpath_check(const char *path, wave_error *err)
{
  return sp_check(path, 0, err);
}

const uint8_t wd_sp_hello[8] = {0, 'S', 'P', 0, 0x00, 0x30, 0, 0};

int wd_sockpath_live(const char *path)
{
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return 0;
  int rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
  int live = rc == 0 || errno == EAGAIN;  /* EAGAIN: its backlog is full */
  if (rc == 0) {
    /* Finish the handshake so that an nng peer sees a proper client: once
     * its 8 bytes have arrived it has sent its half, and ours is in its
     * buffer, so closing now cannot break it. */
    uint8_t b[8];
    size_t got = 0;
    ssize_t w = write(fd, wd_sp_hello, sizeof wd_sp_hello);
    for (int i = 0; w == (ssize_t)sizeof wd_sp_hello && got < sizeof b && i < 50;
         i++) {
      struct pollfd p = {.fd = fd, .events = POLLIN};
      if (poll(&p, 1, 100) != 1)
        continue;
      ssize_t r = read(fd, b + got, sizeof b - got);
      if (r <= 0)
        break;
      got += (size_t)r;
    }
  }
  close(fd);
  return live;
}
