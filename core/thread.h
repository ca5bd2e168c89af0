/* core/thread.h - threads that never take a signal (wvcore).
 *
 * Signals are the loop's: libuv turns SIGHUP, SIGTERM, SIGQUIT, SIGUSR1
 * into loop callbacks (uv_signal_t), and a signal the kernel hands to any
 * other thread is lost to it or runs its handler at a bad time.  A thread
 * inherits the mask of the thread that creates it, so every thread we
 * start, and every library call that starts threads of its own (nng's
 * socket and listeners, libuv's work pool), runs with all signals blocked.
 * These are the only places the mask is set.
 */
#ifndef WV_THREAD_H
#define WV_THREAD_H

#include <pthread.h>
#include <signal.h>

/* Start fn(arg) on a new thread *t with every signal blocked, named name
 * (the kernel keeps 15 bytes; NULL: unnamed).  The caller's mask is kept.
 * Returns 0 or pthread_create's error number. */
int wv_thread_start(pthread_t *t, const char *name, void *(*fn)(void *),
                    void *arg);

/* Block every signal in the calling thread, saving its mask in *old; then
 * wv_sigmask_restore(old).  For a stretch of code that starts threads
 * inside a library; WV_MASKED for a single call. */
void wv_sigmask_block(sigset_t *old);
void wv_sigmask_restore(const sigset_t *old);

/* Run one statement (typically "rc = call(...)") with every signal
 * blocked: threads the call starts inherit that mask. */
#define WV_MASKED(stmt)                                                        \
  do {                                                                         \
    sigset_t wv_masked_old_;                                                   \
    wv_sigmask_block(&wv_masked_old_);                                         \
    stmt;                                                                      \
    wv_sigmask_restore(&wv_masked_old_);                                       \
  } while (0)

#endif
