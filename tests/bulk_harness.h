/* bulk_harness.h - a real wavedd with regions and streams on, driven
 * through libwaveclient, for the bulk-input suites (test_bulk.c, test_pin.c,
 * test_filered.c).  Built on daemon_harness.h. */
#ifndef TB_BULK_HARNESS_H
#define TB_BULK_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include <nng/nng.h>

#include "daemon_harness.h"
#include "wave/client.h"

#define BH_ROWS_MAX (1u << 22)  /* the daemon's max_job_rows here */

/* A daemon with regions on (or off), limits.max_job_rows BH_ROWS_MAX and
 * small region/stream limits, and the devices given (YAML list items;
 * NULL: one CPU device); bh_start also starts it (the test fails if it
 * does not start). */
void bh_prepare(td_daemon *d, int shm, const char *devices);
void bh_prepare_with(td_daemon *d, int shm, const char *devices,
                     const char *limits);
void bh_start(td_daemon *d, int shm, const char *devices);
/* A client of url with a 60 s timeout (the test fails if it cannot). */
wave_client *bh_client(const char *url);
/* n pseudo-random rows from seed: integers, or finite floats. */
void bh_fill(uint32_t *rows, size_t n, uint32_t seed, int floats);
/* Status over raw nng: the regions listed (and their bytes). */
size_t bh_regions(nng_socket s, uint64_t *bytes);
/* Status over raw nng: pinned_devices of the only region. */
unsigned bh_pinned(nng_socket s);

/* The descriptor socket's side of a registration, by hand (the protocol of
 * daemon/net/fdpass.h, written out here rather than through libwaveclient):
 * send fd (n_fds copies of it in one message; 1 normally) to "<ipc
 * path>.fd" of ipc_url; 0 and the ticket, or the reply's error code with
 * its text in msg. */
int bh_pass_fd(const char *ipc_url, int fd, int n_fds, uint8_t ticket[16],
               char *msg, size_t n);
/* A raw RegionRegisterRequest on s naming ticket (NULL: none) or path
 * (NULL: none). */
Wave__V1__Response *bh_register(nng_socket s, const uint8_t *ticket,
                                const char *path, uint64_t bytes, int copy,
                                int file);
/* pass fd and register it on s (a raw nng connection of this process) */
Wave__V1__Response *bh_register_fd(const char *ipc_url, nng_socket s, int fd,
                                   uint64_t bytes, int copy, int file);
/* r is an Error of code whose message holds needle; frees r. */
void bh_expect(Wave__V1__Response *r, int code, const char *needle);

/* A file of another owner that this process may read, open for reading,
 * its first 64 bytes in head: as root, the file at fd (at least 64 bytes)
 * given to user nobody; as a user, /etc/passwd (root's).  Either way the
 * case runs, as root and as a user. */
int bh_theirs(int fd, uint32_t head[16]);

#endif
