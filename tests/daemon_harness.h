/* daemon_harness.h - running the real wavedd and talking to it with raw
 * nng REQ sockets and protobuf-c, for tests/test_daemon.c.
 *
 * A td_daemon is a temporary folder with a config (an ipc socket in the
 * folder, a tcp listener on a free 127.0.0.1 port, two CPU devices, small
 * limits, the shipped "closed" and "small" packs), the daemon's pid and its
 * stderr log.  Start-up is awaited through NOTIFY_SOCKET (the daemon's
 * READY=1), never a sleep.  The wire helpers fail the calling Check test
 * when the transport fails; protocol errors come back as Responses.
 */
#ifndef TD_DAEMON_HARNESS_H
#define TD_DAEMON_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <nng/nng.h>

#include "proto/wave.pb-c.h"

typedef struct td_daemon {
  char dir[128];
  char cfg[256];
  char ipc[256];
  char tcp[64];
  char err_path[256];
  char notify[100];  /* fits sockaddr_un.sun_path */
  pid_t pid;
  int status;        /* wait status once it exited */
  int fake;          /* run wavedd-test (the fake backend) instead */
} td_daemon;

/* ---- processes ---- */
const char *td_wavedd(void);      /* $WAVE_BINARY_DIR/wavedd */
/* $WAVE_BINARY_DIR/wavedd-test: wavedd plus the fake backend, whose
 * devices fault after "fault_after=N" steps (workers/fake/fake.c) */
const char *td_wavedd_test(void);
int td_free_port(void);
void td_write(const char *path, const char *text);
/* A fresh folder and config; limits (may be NULL) is appended to limits:. */
void td_prepare(td_daemon *d, const char *limits);
/* Run wavedd with args; with wait_ready, until READY=1 (0) or its exit
 * (-1, d->status set); without, until it exits. */
int td_spawn(td_daemon *d, const char *const *args, int wait_ready);
int td_start(td_daemon *d);       /* --config d->cfg --foreground */
/* The same, awaited only until it listens (its log says so), not READY=1:
 * wait_ready 2 of td_spawn. */
int td_start_listening(td_daemon *d);
int td_stop(td_daemon *d);        /* SIGTERM; the exit status or -1 */
/* td_stop, its log on stderr unless it exited 0, td_cleanup; the test
 * fails unless it exited 0. */
void td_stop_ok(td_daemon *d);
char *td_stderr(const td_daemon *d);  /* its log so far (static buffer) */
void td_cleanup(td_daemon *d);    /* kill if running, remove the folder */

/* ---- the wire ---- */
nng_socket td_dial(const char *url);
Wave__V1__Response *td_call_raw_ctx(nng_ctx ctx, const void *buf, size_t len);
Wave__V1__Response *td_call_raw(nng_socket s, const void *buf, size_t len);
Wave__V1__Response *td_call_ctx(nng_ctx ctx, Wave__V1__Request *rq);
Wave__V1__Response *td_call(nng_socket s, Wave__V1__Request *rq);
/* A StatusRequest (version 1, id); the response must be a StatusReply. */
Wave__V1__Response *td_status(nng_socket s, uint64_t id);
/* r is an Error with code and id; frees r. */
void td_expect_error(Wave__V1__Response *r, int code, uint64_t id);

typedef struct td_chunk {
  const void *data;
  size_t bytes;
} td_chunk;

Wave__V1__Response *td_reduce(nng_socket s, uint64_t id, int dtype, int op,
                              const td_chunk *in, size_t n_in,
                              const td_chunk *mask, size_t n_mask,
                              const char *device);
/* A good request after a bad one: 16 rows 1..16 must sum to 136. */
void td_good(nng_socket s);

/* GET url through nng's HTTP client (10 s): the status; the body (a static
 * buffer, NUL-terminated, overwritten by the next call) into *body and the
 * Content-Type ("" when none; the same buffer's life) into *type when not
 * NULL. */
unsigned td_http_get(const char *url, const char **body, const char **type);
Wave__V1__Response *td_hash(nng_socket s, uint64_t id, const char *pack,
                            uint64_t nonce, uint64_t count, uint64_t target,
                            uint32_t max_winners, int outputs,
                            uint64_t client, const char *device);
/* A HashRequest built by the caller (protocol-2 fields). */
Wave__V1__Response *td_hash_req(nng_socket s, uint64_t id,
                                Wave__V1__HashRequest *hr);
/* JobRequest (cancel: CancelRequest) with Request.id 77. */
Wave__V1__Response *td_job(nng_socket s, uint64_t job, unsigned wait,
                           int cancel);
/* Poll with waits until the job has ended (not QUEUED, PREPARING or
 * RUNNING); its JobInfo response. */
Wave__V1__Response *td_wait_job(nng_socket s, uint64_t job);

#endif
