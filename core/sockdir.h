/* sockdir.h - where the default ipc socket lives, for wavedd and its
 * clients alike (docs/service.md, "The socket"):
 *  - a system daemon (run as root): /run/wavedd/wavedd.sock, the folder the
 *    systemd unit's RuntimeDirectory=wavedd makes;
 *  - a user's daemon: $XDG_RUNTIME_DIR/wavedd/wavedd.sock.
 * A client (not root) takes its own user's socket when that file exists and
 * the system one otherwise.  Never a path in a world-writable folder.
 */
#ifndef WV_SOCKDIR_H
#define WV_SOCKDIR_H

#include <stddef.h>

#define WV_SYSTEM_SOCKET "/run/wavedd/wavedd.sock"

/* The default URL ("ipc://..."), into url (n bytes); for_client as above.
 * Returns url. */
const char *wv_default_url(char *url, size_t n, int for_client);

#endif
