/* sockdir.h - where the default ipc socket lives, one rule for wavedd and
 * its clients alike (docs/service.md, "The socket").  A daemon of user uid
 * takes the first of:
 *  - root: /run/wavedd/wavedd.sock, the folder the systemd unit's
 *    RuntimeDirectory=wavedd makes;
 *  - $XDG_RUNTIME_DIR/wavedd/wavedd.sock, when XDG_RUNTIME_DIR is an
 *    absolute path of a folder that uid owns (a login session's; `su`
 *    keeps the caller's, which is not ours);
 *  - /run/wavedd/wavedd.sock when that folder exists and we may write it
 *    (the unit's User=wavedd);
 *  - /tmp/wavedd-UID/wavedd.sock, a private folder as tmux's /tmp/tmux-UID:
 *    made 0700 and refused when another user owns it, it is not a folder,
 *    or group or others may enter it (wv_private_dir_check).
 * A client (not root) takes the first socket file that exists of the
 * user's places ($XDG_RUNTIME_DIR's, then the private folder's), else the
 * system one.  Never a path in a world-writable folder.
 */
#ifndef WV_SOCKDIR_H
#define WV_SOCKDIR_H

#include <stddef.h>
#include <sys/types.h>

#define WV_SYSTEM_SOCKET "/run/wavedd/wavedd.sock"
#define WV_SOCKET_NAME "wavedd.sock"

/* The default URL ("ipc://...") for this process (geteuid(), getenv),
 * into url (n bytes); for_client as above.  Returns url. */
const char *wv_default_url(char *url, size_t n, int for_client);

/* The rule itself, for user uid with XDG_RUNTIME_DIR xdg (NULL: unset);
 * what wv_default_url runs.  Returns url. */
const char *wv_sockdir_url(char *url, size_t n, uid_t uid, const char *xdg,
                           int for_client);

/* The private folder of uid: "/tmp/wavedd-UID" into dir.  Returns dir. */
const char *wv_private_dir(char *dir, size_t n, uid_t uid);

/* Is dir a private folder of uid: a folder (not a link), owned by uid,
 * closed to group and others?  With make, a missing one is created 0700
 * first.  0, or -1 with why (n bytes) saying what is wrong and what to do;
 * errno ENOENT when it is missing (and not made). */
int wv_private_dir_check(const char *dir, uid_t uid, int make, char *why,
                         size_t n);

#endif
