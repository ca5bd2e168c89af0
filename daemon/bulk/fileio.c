/* fileio.c - see fileio.h; and the copy region's one read, bounded in
 * time (wd_file_read_bounded, filered.h): a task of the reader pool
 * (readers.h, the file regions' threads) reads the file into the region's
 * buffer, and a read that does not return within the bound is left behind
 * with the buffer, which it unmaps when done; meanwhile the pool is given
 * a replacement thread (wd_readers_grow: the read counts as stuck), as a
 * file job's stuck part is, and takes it back when the read returns.
 * The bound is the whole copy's, scaled to its size (issue 35): limits.
 * region_read_timeout_ms plus one second per FIO_FLOOR_BPS bytes, so a
 * big copy progressing on a loaded host is not taken for a hung mount. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "daemon/bulk/fileio.h"
#include "daemon/bulk/filered.h"
#include "daemon/bulk/readers.h"
#include "daemon/log.h"
#include "core/base.h"

#define FIO_FLOOR_BPS (16ull << 20)  /* the slowest copy taken as alive */

double wd_fio_now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

uint64_t wd_fio_now_ms(void) { return (uint64_t)(wd_fio_now_s() * 1e3); }

void wd_fio_cv_init(pthread_cond_t *cv)
{
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  pthread_cond_init(cv, &a);
  pthread_condattr_destroy(&a);
}

int wd_fio_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu,
                      uint64_t deadline_ms)
{
  uint64_t now = wd_fio_now_ms();
  if (now >= deadline_ms)
    return 1;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t ns = (uint64_t)ts.tv_nsec + (deadline_ms - now) % 1000 * 1000000;
  ts.tv_sec += (time_t)((deadline_ms - now) / 1000 + ns / 1000000000);
  ts.tv_nsec = (long)(ns % 1000000000);
  return pthread_cond_timedwait(cv, mu, &ts) == ETIMEDOUT &&
         wd_fio_now_ms() >= deadline_ms;
}

int wd_fio_pread(int fd, uint8_t *buf, uint64_t bytes, uint64_t off,
                 uint64_t region, uint64_t extent_end, wave_error *err)
{
  for (uint64_t got = 0; got < bytes;) {
    ssize_t n = pread(fd, buf + got, (size_t)(bytes - got),
                      (off_t)(off + got));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return wv_seterr(err, WAVE_EREGION, "reading file region %" PRIu64
                       ": %s", region, strerror(errno));
    if (n == 0)
      return wv_seterr(err, WAVE_EREGION, "file region %" PRIu64 " shrank "
                       "under the job: it ends at byte %" PRIu64 ", an "
                       "extent of it at %" PRIu64, region, off + got,
                       extent_end);
    got += (uint64_t)n;
  }
  return 0;
}

int wd_fio_read_pipe(int fd, uint8_t *buf, uint64_t bytes, uint64_t at,
                     uint64_t region, uint64_t total, const _Atomic int *halt,
                     wave_error *err)
{
  for (uint64_t got = 0; got < bytes;) {
    if (atomic_load(halt))
      return wv_seterr(err, WAVE_ECANCELLED, "the job stopped");
    ssize_t n = read(fd, buf + got, (size_t)(bytes - got));
    if (n > 0) {
      got += (uint64_t)n;
      continue;
    }
    if (n == 0)
      return wv_seterr(err, WAVE_EREGION, "pipe region %" PRIu64 " ended "
                       "at byte %" PRIu64 ": its writer closed it before the "
                       "%" PRIu64 " bytes it was registered with", region,
                       at + got, total);
    if (errno == EINTR)
      continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK)
      return wv_seterr(err, WAVE_EREGION, "reading pipe region %" PRIu64
                       ": %s", region, strerror(errno));
    struct pollfd p = {.fd = fd, .events = POLLIN};
    (void)poll(&p, 1, 50);  /* POLLHUP: the next read says 0 */
  }
  return 0;
}

void wd_fio_stuck_warn(wd_readers *r, unsigned n)
{
  wd_warn("%u file-region reader(s) left blocked in a read that did not "
          "return within limits.region_read_timeout_ms; %u stuck now (at "
          "%d, file jobs are refused)", n, wd_readers_stuck(r),
          WD_FILE_STUCK_MAX);
}

/* ---- a bounded read for copy regions ------------------------------------ */

typedef struct fio_one {
  wd_rtask task;             /* on the reader pool */
  wd_readers *r;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int fd;
  void *buf;
  size_t cap;
  uint64_t bytes;
  int done, rc, abandoned;
  unsigned refs;
  wave_error err;
} fio_one;

static void fio_one_free(fio_one *o)
{
  if (o->abandoned)
    munmap(o->buf, o->cap);  /* the buffer was left to us */
  close(o->fd);
  pthread_cond_destroy(&o->cv);
  pthread_mutex_destroy(&o->mu);
  free(o);
}

static void fio_one_run(wd_rtask *t)
{
  fio_one *o = (fio_one *)(void *)((char *)t - offsetof(fio_one, task));
  wave_error e = {0};
  int rc = wd_fio_pread(o->fd, o->buf, o->bytes, 0, 0, o->bytes, &e);
  pthread_mutex_lock(&o->mu);
  o->rc = rc;
  o->err = e;
  o->done = 1;
  pthread_cond_broadcast(&o->cv);
  int late = o->abandoned;   /* its replacement thread goes */
  int last = --o->refs == 0;
  pthread_mutex_unlock(&o->mu);
  if (late)  /* it is stuck no more */
    wd_readers_shrink(o->r, 1);
  if (last)
    fio_one_free(o);
}

int wd_file_read_bounded(wd_readers *r, int fd, void *buf, size_t cap,
                         uint64_t bytes, unsigned timeout_ms, int *gave,
                         wave_error *err)
{
  *gave = 0;
  unsigned stuck = wd_readers_stuck(r);
  if (stuck >= WD_FILE_STUCK_MAX)
    return wv_seterr(err, WAVE_EREGION, "%u reads of file regions never "
                     "returned (a hung mount?); no more copies until they "
                     "do", stuck);
  fio_one *o = calloc(1, sizeof *o);
  if (o == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  if ((o->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0) {
    free(o);
    return wv_seterr(err, WAVE_EREGION, "the region's descriptor: %s",
                     strerror(errno));
  }
  pthread_mutex_init(&o->mu, NULL);
  wd_fio_cv_init(&o->cv);
  o->r = r;
  o->buf = buf;
  o->cap = cap;
  o->bytes = bytes;
  o->refs = 2;
  o->task.run = fio_one_run;
  wd_readers_post(r, &o->task);
  pthread_mutex_lock(&o->mu);
  uint64_t bound = timeout_ms + bytes * 1000 / FIO_FLOOR_BPS;
  uint64_t deadline = wd_fio_now_ms() + bound;
  int late = 0;
  while (!o->done && !late)
    late = wd_fio_wait_until(&o->cv, &o->mu, deadline);
  int rc;
  if (o->done) {
    rc = o->rc;
    if (rc != 0)
      *err = o->err;
  } else {
    o->abandoned = 1;
    /* counted stuck (a replacement thread) under o->mu: its
     * wd_readers_shrink comes after this grow */
    wd_readers_grow(r, 1);
    *gave = 1;
    rc = wv_seterr(err, WAVE_EREGION, "copying the region's %" PRIu64
                   " bytes took more than %" PRIu64 " ms (limits.region_read"
                   "_timeout_ms, %u, plus 1 s per %llu MiB of it); the read "
                   "is left behind (a hung mount?)", bytes, bound,
                   timeout_ms, FIO_FLOOR_BPS >> 20);
  }
  int last = --o->refs == 0;
  pthread_mutex_unlock(&o->mu);
  if (last)
    fio_one_free(o);
  if (*gave)
    wd_fio_stuck_warn(r, 1);
  return rc;
}
