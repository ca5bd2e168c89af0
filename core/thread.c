/* core/thread.c - threads that never take a signal (see thread.h). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>

#include "core/thread.h"

void wv_sigmask_block(sigset_t *old)
{
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, old);
}

void wv_sigmask_restore(const sigset_t *old)
{
  pthread_sigmask(SIG_SETMASK, old, NULL);
}

int wv_thread_start(pthread_t *t, const char *name, void *(*fn)(void *),
                    void *arg)
{
  sigset_t old;
  wv_sigmask_block(&old);
  int rc = pthread_create(t, NULL, fn, arg);
  wv_sigmask_restore(&old);
  if (rc == 0 && name != NULL) {
    char tname[16];  /* the kernel keeps 15 bytes and the NUL */
    snprintf(tname, sizeof tname, "%s", name);
    pthread_setname_np(*t, tname);
  }
  return rc;
}
