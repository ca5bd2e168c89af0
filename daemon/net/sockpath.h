/* sockpath.h - the checks an ipc socket path passes before wavedd listens
 * on it (see sockpath.c). */
#ifndef WD_SOCKPATH_H
#define WD_SOCKPATH_H

#include <stdint.h>

#include "wave/error.h"

/* The folder of path: created (0700, or 0750 for root) when missing;
 * refused when it is owned by another user (root excepted) or writable by
 * everyone; the private folder /tmp/wavedd-UID also when group or others
 * may enter it (core/sockdir.h).  An existing path: refused unless it is a socket owned by us.
 * 0, or WAVE_EIO with err naming the path and why. */
int wd_sockpath_prepare(const char *path, wave_error *err);
/* The same checks, creating nothing: a missing folder passes when its
 * parent is writable by us (--check-config refuses what the start would). */
int wd_sockpath_check(const char *path, wave_error *err);

/* The SP handshake a REQ (0x30) peer sends. */
extern const uint8_t wd_sp_hello[8];
/* 1 when a live process accepts connections on path (it is sent the
 * handshake, so an nng peer sees a proper client). */
int wd_sockpath_live(const char *path);

#endif
