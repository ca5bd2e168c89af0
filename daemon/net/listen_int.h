/* listen_int.h - the listeners' state, shared by listen.c (start, reload,
 * stop, the pipe counts) and lswatch.c (the ipc watchdog) only; the rest
 * of the daemon sees listen.h. */
#ifndef WD_LISTEN_INT_H
#define WD_LISTEN_INT_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include <nng/nng.h>
#include <uv.h>

#include "daemon/net/listen.h"

#define WD_LS_SLOTS 16      /* one listener serving, the rest retiring */

/* One nng listener of a URL: the serving one or a stuck one retiring. */
typedef struct wd_lsslot {
  nng_listener l;
  _Atomic int id;           /* l's id, read by the pipe callbacks; 0: free */
  _Atomic int live;         /* its pipes open now */
  _Atomic uint64_t added;   /* pipes it handed to the socket, ever */
  _Atomic uint64_t removed; /* its pipes that have gone, ever */
  uint64_t other;           /* its "other" errors when opened */
  int suspect;              /* more of them than pipes gone, last tick */
  uint64_t retired;         /* when it stopped serving (loop time) */
} wd_lsslot;

typedef struct wd_lsurl {
  wd_listeners *ls;
  const char *url;          /* as configured */
  char bound[300];          /* as reported */
  wd_lsslot s[WD_LS_SLOTS];
  int cur;                  /* the serving slot; -1: none */
  int ipc;
  char path[108];
  dev_t dev;                /* path's socket, once renamed there */
  ino_t ino;
  int have_ino;
  unsigned gen;             /* temporary names */
  /* the probe (no statistics); the pipe handle exists while probing */
  uv_pipe_t pipe;
  uv_connect_t conn;
  uv_write_t wr;
  int probing, ending;
  uint64_t since, seen, last_probe;
  int used;                 /* a configured URL's (not a removed one's) */
  int guard_port;           /* tls+tcp://: the port connguard.c watches */
  int foreign;              /* the path holds a file not ours (logged) */
  int renew_failed;         /* remaking a removed path failed (logged) */
  wd_fdsock *side;          /* ipc: "<path>.fd", descriptors (fdpass.h) */
} wd_lsurl;

struct wd_listeners {
  uv_loop_t *loop;
  wd_fdpass *fp;            /* where the side sockets keep descriptors */
  nng_socket sock;
  const wd_config *cfg;
  size_t cap;
  wd_lsurl *v;              /* never moved: nng's threads read it */
  size_t n, n_alloc;        /* slots ever used, allocated */
  char **urls;              /* the used slots' bound URLs */
  size_t n_urls;
  uv_timer_t timer;
  int timer_on;
  int stats;                /* nng has statistics */
  int fixed;                /* nngfix.c is on: no stuck listener to detect */
  unsigned recoveries;
  unsigned ticks;
  wd_guard *guard;
};

/* listen.c: start an nng listener for o's URL in slot k (for ipc bound on a
 * temporary name, then renamed over the path); it becomes the serving one.
 * 0, or WAVE_EIO with err. */
int wd_listeners_open_slot(wd_lsurl *o, int k, wave_error *err);

/* lswatch.c: the listener's "other" accept errors in nng's statistics;
 * (uint64_t)-1 when unknown. */
uint64_t wd_lswatch_other(nng_listener l);
/* Start the watchdog's timer on ls's loop, unless it runs already. */
void wd_lswatch_start(wd_listeners *ls);
/* Close o's probe connection, if one is open (a drop, the end). */
void wd_lswatch_probe_stop(wd_lsurl *o);

#endif
