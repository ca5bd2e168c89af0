/* integ.h - the harness the integration tests share (integ_harness.c):
 * the daemon under test, wavectl runs, small file helpers.
 *
 * wv_it_daemon_start() runs the built wavedd in a fresh temporary folder with
 * a config of its own (devices cpu0 and cpu1, packs small and closed),
 * listening on wv_it_urls[0] (ipc, in that folder) and wv_it_urls[1]
 * (tcp://127.0.0.1:<free port>).  It must be called before Check forks the
 * tests, and it does not use nng itself: nng is not fork-safe, so only the
 * forked tests may touch it.
 */
#ifndef WV_TEST_INTEG_H
#define WV_TEST_INTEG_H

#include <check.h>
#include <stddef.h>
#include <sys/types.h>

#include "wave/client.h"

extern char wv_it_dir[200];
extern char wv_it_urls[2][300]; /* ipc, tcp */

/* A finished wavectl run: exit status (128 + signal if killed), output. */
typedef struct wv_it_out {
  int status; /* exit status, or 128 + signal */
  char *out, *err;
} wv_it_out;

/* A wavectl run in progress. */
typedef struct wv_it_proc {
  pid_t pid;
  char po[300], pe[300];
} wv_it_proc;

/* name inside the temporary folder */
void wv_it_path(char *out, size_t n, const char *name);
void wv_it_write(const char *path, const void *data, size_t n);
char *wv_it_slurp(const char *path); /* "" when unreadable */

/* Start wavectl with the arguments in args (NULL-terminated, at most 60),
 * stdout and stderr going to files of the temporary folder; wv_it_collect()
 * waits for it.  No ck_assert here: main() uses these too, outside any
 * test.  Status -1 when it could not be run. */
void wv_it_spawn(wv_it_proc *p, const char *const *args);
void wv_it_collect(wv_it_proc *p, wv_it_out *o);
void wv_it_ctlv(wv_it_out *o, const char *const *args);
/* the same with the arguments as a NULL-terminated list */
void wv_it_ctl(wv_it_out *o, const char *arg, ...);
void wv_it_out_free(wv_it_out *o);
/* A failed wavectl run: exit status, "wavectl: NAME: " on stderr, nothing
 * on stdout. */
void wv_it_ctl_bad(const wv_it_out *o, int status, const char *name);

/* A client of URL t (0 ipc, 1 tcp) with a generous timeout. */
wave_client *wv_it_open(int t);
/* The daemon still answers on both URLs (status and a small sum). */
void wv_it_alive(void);
/* Wait, bounded, until some device's running flag equals want; 1 if so. */
int wv_it_wait_running(wave_client *c, int want);

int wv_it_daemon_start(void);  /* 0, or -1 with the reason on stderr */
int wv_it_daemon_stop(void);   /* SIGTERM; 0 when wavedd exited 0 */
void wv_it_dump_log(void);
void wv_it_cleanup_dir(void);

/* integ_hash.c */
TCase *wv_it_hash_tcase(void);
/* integ_ctl.c: status, packs, reachability, help (into the wavectl TCase) */
void wv_it_ctl_add_tests(TCase *t);

#endif
