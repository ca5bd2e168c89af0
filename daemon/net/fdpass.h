/* fdpass.h - region descriptors handed to the daemon by SCM_RIGHTS
 * (docs/protocol.md "Regions", docs/security.md "Regions").
 *
 * nng's ipc transport cannot carry descriptors, so beside each ipc socket
 * <path> the daemon serves a small AF_UNIX SOCK_SEQPACKET socket
 * <path>.fd, with the ipc socket's owner and mode.  A client connects,
 * sends one message (one byte, WD_FDPASS_HELLO) carrying exactly one
 * descriptor, and gets back a 128-bit random ticket; it then names the
 * ticket in RegionRegisterRequest.fd_ticket over its ipc connection.  The
 * daemon keeps the descriptor under the ticket with the side connection's
 * SO_PEERCRED (uid, pid); a registration claims it only when the ipc
 * connection's peer credentials are the same uid and pid, once.  Unclaimed
 * descriptors are closed after WD_FDPASS_TTL_MS; at most WD_FDPASS_PER_UID
 * wait per uid and WD_FDPASS_MAX in all.
 *
 * The daemon therefore never opens a path a client names: it reads exactly
 * what the client could open (region.c checks what the descriptor is).
 *
 * Threads: the ticket store is locked (the loop puts, decode threads
 * claim); the side sockets live on the loop (uv_poll, non-blocking).
 */
#ifndef WD_FDPASS_H
#define WD_FDPASS_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "wave/error.h"

#define WD_FDPASS_TICKET 16      /* bytes: 128 random bits */
#define WD_FDPASS_TTL_MS 5000    /* an unclaimed descriptor is closed then */
#define WD_FDPASS_PER_UID 32     /* unclaimed descriptors per uid */
#define WD_FDPASS_MAX 256        /* ... and in all */
#define WD_FDPASS_HELLO 1        /* the one byte a client sends */
#define WD_FDPASS_SIDE_MAX 64    /* open side connections of one socket */
#define WD_FDPASS_SIDE_PER_UID 8 /* open side connections of one uid, on
                                    one side socket */

typedef struct wd_fdpass wd_fdpass;
typedef struct wd_fdsock wd_fdsock;

int wd_fdpass_new(wd_fdpass **out, wave_error *err);
/* Closes every descriptor still kept. */
void wd_fdpass_free(wd_fdpass *fp);

/* Keep fd (ours from now on, even on failure) for uid/pid; ticket out. */
int wd_fdpass_put(wd_fdpass *fp, int fd, uint32_t uid, uint32_t pid,
                  uint8_t ticket[WD_FDPASS_TICKET], wave_error *err);
/* The descriptor kept under ticket, for the connection uid/pid: *fd is the
 * caller's then.  WAVE_EREGION when unknown, expired or another peer's
 * (that one stays: it is not this peer's to spend). */
int wd_fdpass_claim(wd_fdpass *fp, const uint8_t *ticket, size_t n,
                    uint32_t uid, uint32_t pid, int *fd, wave_error *err);
/* Close the descriptors older than WD_FDPASS_TTL_MS; how many are left. */
size_t wd_fdpass_expire(wd_fdpass *fp);

/* Any thread: the uids with side connections open now, at most max of
 * them (uid[i] holds n[i], over every side socket); *all: every uid's. */
size_t wd_fdpass_side(wd_fdpass *fp, uint32_t *uid, unsigned *n, size_t max,
                      unsigned *all);

/* "<ipc path>.fd" into out; -1 when it does not fit a socket address. */
int wd_fdpass_path(const char *ipc_path, char *out, size_t n);

/* Loop thread: serve the side socket of ipc_path (created on a temporary
 * name, given mode, renamed over "<ipc_path>.fd"; an existing file there
 * must pass sockpath.c's checks). */
int wd_fdsock_open(wd_fdpass *fp, uv_loop_t *loop, const char *ipc_path,
                   unsigned mode, wd_fdsock **out, wave_error *err);
/* Stop serving, unlink the path if it is still ours; the memory goes in
 * the handles' close callbacks (the loop must run once more). */
void wd_fdsock_close(wd_fdsock *s);

#endif
