/* fleet_int.h - what the fleet coordinator's files share (not installed):
 * the fleet handle and the pool of one thread per daemon (fleet.c), used
 * by the hash pieces (fleet_hash.c) and the reductions (fleet_reduce.c).
 */
#ifndef WV_FLEET_INT_H
#define WV_FLEET_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "client/client_int.h"
#include "wave/fleet.h"

struct wave_fleet {
  size_t n;
  wave_client **c;        /* opened on first use (wv_fleet_client) */
  char **urls;
  atomic_int cancel;
  pthread_mutex_t mu;     /* c[] and timeout_ms */
  int timeout_ms;         /* 0: the client default */
  wave_client_options *copts; /* credentials (access.c), NULL: defaults */
  int stall_ms;           /* progress deadline (WAVE_FLEET_STALL_MS) */
  wave_fleet_rehash_fn rehash;  /* the coordinator's hash, or NULL */
  void *rehash_arg;
  int *why;               /* per daemon: wave_fleet_drop of the last call */
  atomic_uint *closes;    /* per daemon: pipes closed (nng_pipe_notify) */
  atomic_int *gone;       /* per daemon: dropped as a liar, stalled, AUTH
                             or hung up in this call: its other exchanges
                             end at once (wv_fleet_call) */
};

/* Daemon d's connection, opened on first use; NULL with err filled when
 * it cannot be opened. */
wave_client *wv_fleet_client(wave_fleet *f, size_t d, wave_error *err);

enum { FL_OK = 0, FL_DAEMON = 1, FL_AGAIN = 2, FL_JOB = 3 };

typedef struct fl_pool fl_pool;
/* Run item i on daemon d (slot: the calling thread's inflight counter);
 * 0 or a WAVE_E* code with err filled.  A run that finds the daemon at
 * fault in a way the code does not say (a lie, a stall, a closed
 * connection) also sets p->why[slot] (wave_fleet_drop). */
typedef int (*fl_run_fn)(fl_pool *p, size_t d, size_t slot, size_t i,
                         wave_error *err);

struct fl_pool {
  wave_fleet *f;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  size_t *fifo, head, tail, cap;  /* queued item indices */
  size_t items, remaining;
  size_t alive, running;          /* threads */
  int fatal;                      /* first job error (code) */
  wave_error fatal_err;
  fl_run_fn run;
  void *ctx;
  uint64_t retried;
  wave_fleet_member *members;     /* f->n */
  atomic_uint_fast64_t *inflight; /* per thread: work of its current piece */
  int *why;                       /* per thread: wave_fleet_drop of its run */
  size_t *owner;                  /* per item: daemon that answered it, or
                                     SIZE_MAX (a liar's answers run again) */
  double *first, *last;           /* per daemon: its pieces' wall span */
  atomic_uint_fast64_t done;      /* work of completed pieces */
  uint64_t total;
  const uint64_t *work;           /* per item: nonces or rows */
};

/* Run items 0..n-1 (work[i] each: nonces or rows) over the fleet, depth
 * threads per daemon (0: 2) pulling from one FIFO.  0 when every item is
 * done; the first job error; WAVE_ECANCELLED; or, when every daemon
 * failed, WAVE_EIO naming them.  members (f->n) get each daemon's share. */
int wv_fleet_pool_run(wave_fleet *f, size_t n, const uint64_t *work,
                      unsigned depth, fl_run_fn run, void *ctx,
                      wave_fleet_member *members, uint64_t *retried,
                      wave_fleet_progress_fn progress, void *parg,
                      wave_error *err);
size_t wv_fleet_count_failed(const wave_fleet_member *m, size_t n);
/* One exchange with daemon d as wv_client_call, except that a connection
 * closing while the reply is awaited ends it at once (WAVE_EIO, *why =
 * WAVE_FLEET_CLOSED) instead of after the reply timeout, and so does the
 * daemon being dropped meanwhile (f->gone[d]: WAVE_EIO).  gen: f->closes[d]
 * when the piece began (a close between two polls counts too). */
int wv_fleet_call(wave_fleet *f, size_t d, wave_client *c,
                  Wave__V1__Request *req, int want, unsigned extra_ms,
                  Wave__V1__Response **resp, unsigned gen, int *why,
                  wave_error *err);
double wv_fleet_now(void);

#endif
