/* filered.c - reductions over file regions, read as they are reduced (see
 * filered.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "daemon/bulk/filered.h"
#include "daemon/log.h"
#include "core/base.h"
#include "core/partial.h"
#include "core/reduce.h"
#include "workers/wvdev.h"

#define FR_MAX_SLOTS 8
#define FR_MAX_READERS 4

typedef struct fr_piece {
  size_t chunk;       /* input chunk */
  uint64_t a, k;      /* its rows [a, a + k) */
  uint64_t lrow;      /* the job's logical row of a */
} fr_piece;

typedef struct fr_slot {
  uint8_t *in, *mask;            /* buffers (NULL where not needed) */
  const uint8_t *in_p, *mask_p;  /* the piece's rows: a buffer or memory */
  size_t idx;                    /* piece it holds; SIZE_MAX none */
} fr_slot;

typedef struct fr {
  const wv_reduce_job *job;      /* the device thread's: readers touch it
                                    only outside a read (see fr_abandon) */
  const wd_fsrc *src;
  int *fds;                      /* our dup of each file span's descriptor,
                                    -1 for spans in memory */
  fr_piece *pieces;
  size_t n;
  uint64_t *mask_start;          /* logical first row of each mask chunk */
  fr_slot slots[FR_MAX_SLOTS];
  unsigned n_slots;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  size_t next, done;             /* pieces claimed by readers, consumed */
  int stop, rc;
  wave_error err;                /* the first reader error */
  unsigned refs;                 /* the device thread + each reader alive */
  unsigned running, in_read;     /* readers alive; of them, inside pread */
  int abandoned;                 /* the device thread has gone: readers
                                    still in a read free f when it returns */
  int counted;                   /* ... and they count in fr_stuck */
  size_t job_spans;              /* entries of fds */
} fr;

/* Readers abandoned inside a read that has not returned, all jobs. */
static _Atomic unsigned fr_stuck;

unsigned wd_file_stuck(void) { return atomic_load(&fr_stuck); }

static uint64_t fr_now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* cv waits with a deadline: CLOCK_MONOTONIC, set in fr_cv_init. */
static void fr_cv_init(pthread_cond_t *cv)
{
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  pthread_cond_init(cv, &a);
  pthread_condattr_destroy(&a);
}

/* Wait on cv until deadline_ms (monotonic); 1 when it passed. */
static int fr_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu,
                         uint64_t deadline_ms)
{
  uint64_t now = fr_now_ms();
  if (now >= deadline_ms)
    return 1;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t ns = (uint64_t)ts.tv_nsec + (deadline_ms - now) % 1000 * 1000000;
  ts.tv_sec += (time_t)((deadline_ms - now) / 1000 + ns / 1000000000);
  ts.tv_nsec = (long)(ns % 1000000000);
  return pthread_cond_timedwait(cv, mu, &ts) == ETIMEDOUT &&
         fr_now_ms() >= deadline_ms;
}

static void fr_free(fr *f)
{
  for (unsigned s = 0; s < f->n_slots; s++) {
    free(f->slots[s].in);
    free(f->slots[s].mask);
  }
  for (size_t i = 0; f->fds != NULL && i < f->job_spans; i++)
    if (f->fds[i] >= 0)
      close(f->fds[i]);
  free(f->fds);
  free(f->pieces);
  free(f->mask_start);
  pthread_cond_destroy(&f->cv);
  pthread_mutex_destroy(&f->mu);
  free(f);
}

/* Under f->mu: one holder fewer; 1 when it was the last (free f then). */
static int fr_unref(fr *f)
{
  return --f->refs == 0;
}

/* All of [off, off + bytes) of fd into buf. */
static int fr_pread(int fd, uint8_t *buf, uint64_t bytes, uint64_t off,
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

/* Rows [row, row + k) of span i (src[i]) into dst, or *p to them. */
static int fr_rows(const fr *f, size_t i, uint64_t row, uint64_t k,
                   uint8_t *dst, const uint8_t **p, wave_error *err)
{
  const wd_fsrc *s = &f->src[i];  /* read before any pread: see fr_abandon */
  const wv_span *sp = i < f->job->n_input ? &f->job->input[i]
                                          : &f->job->mask[i - f->job->n_input];
  if (s->fd < 0) {
    const uint8_t *m = (const uint8_t *)sp->data + row * 4;
    if (p != NULL)
      *p = m;
    else
      memcpy(dst, m, (size_t)k * 4);
    return 0;
  }
  if (p != NULL)
    *p = dst;
  uint64_t end = s->off + sp->rows * 4;
  fr *g = (fr *)f;
  pthread_mutex_lock(&g->mu);
  if (g->stop) {
    pthread_mutex_unlock(&g->mu);
    return wv_seterr(err, WAVE_ECANCELLED, "the job stopped");
  }
  g->in_read++;
  pthread_mutex_unlock(&g->mu);
  /* in here only f's own memory is touched (its buffer, its descriptor):
   * a read that never returns is left behind with them */
  int rc = fr_pread(g->fds[i], dst, k * 4, s->off + row * 4, s->region, end,
                    err);
  pthread_mutex_lock(&g->mu);
  g->in_read--;
  int gone = g->abandoned;
  if (!gone)
    pthread_cond_broadcast(&g->cv);
  pthread_mutex_unlock(&g->mu);
  return gone ? WAVE_ECANCELLED : rc;
}

/* Reader: piece i into slot s. */
static int fr_fill(fr *f, size_t i, fr_slot *s, wave_error *err)
{
  const fr_piece *pc = &f->pieces[i];
  int rc = fr_rows(f, pc->chunk, pc->a, pc->k, s->in, &s->in_p, err);
  if (rc != 0 || !f->job->has_mask)
    return rc;
  /* the mask chunk holding row lrow: the last m with start[m] <= lrow */
  size_t lo = 0, hi = f->job->n_mask;  /* start[hi] = rows > lrow */
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (f->mask_start[mid] <= pc->lrow)
      lo = mid;
    else
      hi = mid;
  }
  size_t m = lo;
  while (f->mask_start[m + 1] <= pc->lrow)  /* empty chunks at lo */
    m++;
  size_t base = f->job->n_input;
  if (pc->lrow + pc->k <= f->mask_start[m + 1])  /* one mask chunk */
    return fr_rows(f, base + m, pc->lrow - f->mask_start[m], pc->k, s->mask,
                   &s->mask_p, err);
  s->mask_p = s->mask;
  for (uint64_t pos = 0; pos < pc->k; m++) {
    uint64_t row = pc->lrow + pos, end = f->mask_start[m + 1];
    if (end <= row)
      continue;
    uint64_t seg = end - row < pc->k - pos ? end - row : pc->k - pos;
    if ((rc = fr_rows(f, base + m, row - f->mask_start[m], seg,
                      s->mask + pos * 4, NULL, err)) != 0)
      return rc;
    pos += seg;
  }
  return 0;
}

static void *fr_reader(void *arg)
{
  fr *f = arg;
  pthread_mutex_lock(&f->mu);
  while (!f->stop && f->next < f->n) {
    size_t i = f->next++;
    while (!f->stop && i >= f->done + f->n_slots)
      pthread_cond_wait(&f->cv, &f->mu);
    if (f->stop)
      break;
    pthread_mutex_unlock(&f->mu);
    fr_slot *s = &f->slots[i % f->n_slots];
    wave_error e = {0};
    int rc = fr_fill(f, i, s, &e);
    pthread_mutex_lock(&f->mu);
    if (rc != 0 && !f->stop) {
      f->stop = 1;
      f->rc = rc;
      f->err = e;
    }
    s->idx = i;
    pthread_cond_broadcast(&f->cv);
  }
  f->running--;
  if (f->counted)
    atomic_fetch_sub(&fr_stuck, 1);
  pthread_cond_broadcast(&f->cv);
  int last = fr_unref(f);
  pthread_mutex_unlock(&f->mu);
  if (last)
    fr_free(f);
  return NULL;
}

int wd_file_validate(const wv_reduce_job *job, wave_error *err)
{
  size_t n = job->n_input + job->n_mask;
  wv_span *sp = malloc((n + 1) * sizeof *sp);
  if (sp == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  /* a file span has no data here; validation only counts rows */
  static const uint32_t none;
  for (size_t i = 0; i < n; i++) {
    sp[i] = i < job->n_input ? job->input[i] : job->mask[i - job->n_input];
    if (sp[i].data == NULL)
      sp[i].data = &none;
  }
  wv_reduce_job j = *job;
  j.input = sp;
  j.mask = sp + job->n_input;
  int rc = wv_reduce_validate(&j, err);
  free(sp);
  return rc;
}

/* ---- the pipeline --------------------------------------------------------- */

/* Piece sizes (filered.h); WAVED_FILE_LEVELS=k (1..3) sets P = 256^k and two
 * readers, for tests of many small pieces on any device. */
static void fr_shape(const wv_caps *caps, uint64_t *p, uint64_t *slot,
                     unsigned *readers, unsigned *slots)
{
  const char *e = getenv("WAVED_FILE_LEVELS");
  if (e != NULL && e[0] >= '1' && e[0] <= '3' && e[1] == '\0') {
    *p = (uint64_t)1 << (8 * (e[0] - '0'));
    *slot = *p * (e[0] == '3' ? 1 : 4);
    *readers = 2;
    *slots = 4;
  } else if (caps != NULL && caps->reads_host_memory) {
    *p = (uint64_t)WV_GROUP * WV_GROUP;   /* 256 KiB */
    *slot = *p * 4;                       /* 1 MiB */
    *readers = 1;
    *slots = 4;
  } else {
    *p = (uint64_t)1 << 24;               /* 64 MiB */
    *slot = *p;
    *readers = 2;
    *slots = 3;
  }
}

/* Said at warn level: a reader left in a read that did not return. */
static void wd_file_stuck_warn(unsigned n)
{
  wd_warn("%u file-region reader(s) left blocked in a read that did not "
          "return within limits.region_read_timeout_ms; %u stuck now (at "
          "%d, file jobs are refused)", n, atomic_load(&fr_stuck),
          WD_FILE_STUCK_MAX);
}

/* The device thread leaves the readers (under f->mu): those outside a
 * read stop at their next step, and it waits for them, since they may
 * touch the job's memory; those inside a read touch only f's buffers and
 * descriptors, so they are left to finish it, free f when the last goes,
 * and count in fr_stuck meanwhile. */
static void fr_abandon(fr *f)
{
  f->stop = 1;
  f->abandoned = 1;
  pthread_cond_broadcast(&f->cv);
  while (f->running > f->in_read)
    pthread_cond_wait(&f->cv, &f->mu);
  if (f->running > 0) {
    f->counted = 1;
    atomic_fetch_add(&fr_stuck, f->running);
  }
}

/* The device thread's side: f with its descriptors, pieces, mask starts
 * and slot buffers (slots of slot_rows), or an error (f is freed). */
static int fr_open(const wv_reduce_job *job, const wd_fsrc *src,
                   uint64_t slot_rows, unsigned n_slots, fr **out,
                   wave_error *err)
{
  fr *f = calloc(1, sizeof *f);
  if (f == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  f->job = job;
  f->src = src;
  f->n_slots = n_slots;
  f->refs = 1;
  pthread_mutex_init(&f->mu, NULL);
  fr_cv_init(&f->cv);
  int rc = 0, need_in = 0;
  f->job_spans = job->n_input + job->n_mask;
  f->fds = malloc((f->job_spans + 1) * sizeof *f->fds);
  for (size_t i = 0; f->fds != NULL && i < f->job_spans; i++)
    f->fds[i] = -1;
  for (size_t i = 0; f->fds != NULL && i < f->job_spans; i++)
    if (src[i].fd >= 0 &&
        (f->fds[i] = fcntl(src[i].fd, F_DUPFD_CLOEXEC, 0)) < 0) {
      rc = wv_seterr(err, WAVE_EREGION, "file region %" PRIu64 ": %s",
                     src[i].region, strerror(errno));
      goto fail;
    }
  for (size_t i = 0; i < job->n_input; i++) {
    f->n += (size_t)((job->input[i].rows + slot_rows - 1) / slot_rows);
    need_in |= src[i].fd >= 0;
  }
  f->pieces = calloc(f->n + 1, sizeof *f->pieces);
  f->mask_start = calloc(job->n_mask + 2, sizeof *f->mask_start);
  if (f->fds == NULL || f->pieces == NULL || f->mask_start == NULL) {
    rc = wv_seterr(err, WAVE_ENOMEM, NULL);
    goto fail;
  }
  uint64_t lrow = 0;  /* the job's logical row of each chunk's start */
  for (size_t i = 0, k = 0; i < job->n_input; i++) {
    for (uint64_t r = 0; r < job->input[i].rows; r += slot_rows, k++) {
      uint64_t left = job->input[i].rows - r;
      f->pieces[k] = (fr_piece){i, r, left < slot_rows ? left : slot_rows,
                                lrow + r};
    }
    lrow += job->input[i].rows;
  }
  for (size_t m = 0; m < job->n_mask; m++)
    f->mask_start[m + 1] = f->mask_start[m] + job->mask[m].rows;
  size_t bytes = (size_t)slot_rows * 4;
  for (unsigned s = 0; s < n_slots; s++) {
    f->slots[s].idx = SIZE_MAX;
    if ((need_in && (f->slots[s].in = aligned_alloc(4096, bytes)) == NULL) ||
        (job->has_mask &&
         (f->slots[s].mask = aligned_alloc(4096, bytes)) == NULL)) {
      rc = wv_seterr(err, WAVE_ENOMEM, "file region buffers (%u x %zu "
                     "bytes)", n_slots, bytes);
      goto fail;
    }
  }
  *out = f;
  return 0;
fail:
  fr_free(f);  /* no reader yet */
  return rc;
}

/* Up to n readers, detached; how many started. */
static unsigned fr_start_readers(fr *f, unsigned n)
{
  pthread_attr_t at;
  pthread_attr_init(&at);
  pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
  if (n > f->n)
    n = (unsigned)f->n;
  pthread_mutex_lock(&f->mu);
  for (unsigned t = 0; t < n; t++) {
    pthread_t tid;
    f->refs++;
    f->running++;
    if (pthread_create(&tid, &at, fr_reader, f) != 0) {
      f->refs--;
      f->running--;
      break;
    }
  }
  unsigned started = f->running;
  pthread_mutex_unlock(&f->mu);
  pthread_attr_destroy(&at);
  return started;
}

/* Wait until piece i is in its slot: 0, or the reader's error, or a stall
 * past timeout_ms (*stalled set: its read is left behind). */
static int fr_await(fr *f, size_t i, unsigned timeout_ms, int *stalled,
                    wave_error *err)
{
  fr_slot *s = &f->slots[i % f->n_slots];
  int rc = 0;
  pthread_mutex_lock(&f->mu);
  /* a read that blocks (a hung network or FUSE file) fails this job after
   * the bound; the device moves on */
  uint64_t deadline = fr_now_ms() + timeout_ms;
  int late = 0;
  while (s->idx != i && !f->stop && !late)
    late = fr_wait_until(&f->cv, &f->mu, deadline);
  *stalled = late && s->idx != i && !f->stop;
  if (f->stop && f->rc != 0) {
    rc = f->rc;
    *err = f->err;
  } else if (s->idx != i && late) {
    rc = wv_seterr(err, WAVE_EREGION, "reading a file region stalled for "
                   "more than %u ms (limits.region_read_timeout_ms): the "
                   "job fails and its read is left behind (a hung mount?)",
                   timeout_ms);
  } else if (s->idx != i) {  /* stopped with no reader error: a bug */
    rc = wv_seterr(err, WAVE_EINTERNAL, "file reader stopped at piece "
                   "%zu of %zu", i, f->n);
  }
  pthread_mutex_unlock(&f->mu);
  return rc;
}

/* Piece i, in its slot, on the device in calls of P rows, each answer a
 * partial of the job (docs/reduction.md "Partials", core/partial.h). */
static int fr_reduce_piece(fr *f, size_t i, const wv_dev *dev, uint64_t P,
                           wv_partial_acc *acc, wave_error *err)
{
  const wv_reduce_job *job = f->job;
  const fr_slot *s = &f->slots[i % f->n_slots];
  const fr_piece *pc = &f->pieces[i];
  int rc = 0;
  for (uint64_t r = 0; r < pc->k && rc == 0; r += P) {
    uint64_t n = pc->k - r < P ? pc->k - r : P;
    wv_span in = {s->in_p + r * 4, n};
    wv_span mk = {job->has_mask ? s->mask_p + r * 4 : NULL, n};
    wv_reduce_job j = {.dtype = job->dtype, .op = job->op, .input = &in,
                       .n_input = 1, .mask = &mk,
                       .n_mask = job->has_mask ? 1 : 0,
                       .has_mask = job->has_mask, .rows = n};
    wv_reduce_out o = {0};
    wv_partial pt;
    if ((rc = wv_dev_reduce(dev, &j, &o, err)) == 0) {
      wv_partial_of(&j, &o, pc->chunk, &pt);
      rc = wv_partial_add(acc, &pt, err);
    }
  }
  return rc;
}

int wd_file_reduce(const wv_dev *dev, const wv_caps *caps,
                   const wv_reduce_job *job, const wd_fsrc *src,
                   unsigned timeout_ms, wv_reduce_out *out, int *some_finite,
                   wave_error *err)
{
  uint64_t P, slot_rows;
  unsigned n_readers, n_slots;
  fr_shape(caps, &P, &slot_rows, &n_readers, &n_slots);
  unsigned stuck = atomic_load(&fr_stuck);
  if (stuck >= WD_FILE_STUCK_MAX)
    return wv_seterr(err, WAVE_EREGION, "%u reads of file regions never "
                     "returned (a hung mount?); no more file jobs until they "
                     "do", stuck);
  /* float sum: the chunk values, and the largest chunk's device calls */
  size_t max_vals = 0;
  for (size_t i = 0; i < job->n_input; i++) {
    size_t nv = (size_t)((job->input[i].rows + slot_rows - 1) / slot_rows *
                         ((slot_rows + P - 1) / P));
    max_vals = nv > max_vals ? nv : max_vals;
  }
  wv_partial_acc acc;
  int rc = wv_partial_init(&acc, job->dtype, job->op,
                           job->n_input + max_vals + 1, err);
  if (rc != 0)
    return rc;
  fr *f = NULL;
  if ((rc = fr_open(job, src, slot_rows, n_slots, &f, err)) != 0) {
    wv_partial_fini(&acc);
    return rc;
  }
  if (fr_start_readers(f, n_readers) == 0 && f->n > 0)
    rc = wv_seterr(err, WAVE_ENOMEM, "cannot start a file reader thread");
  int stalled = 0;
  for (size_t i = 0; rc == 0 && i < f->n; i++) {
    if ((rc = fr_await(f, i, timeout_ms, &stalled, err)) != 0)
      break;
    rc = fr_reduce_piece(f, i, dev, P, &acc, err);
    pthread_mutex_lock(&f->mu);
    f->done = i + 1;
    if (rc != 0)
      f->stop = 1;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
  }
  if (rc == 0)
    wv_partial_result(&acc, out, some_finite);
  pthread_mutex_lock(&f->mu);
  fr_abandon(f);
  if (stalled)
    wd_file_stuck_warn(f->running);
  int last = fr_unref(f);
  pthread_mutex_unlock(&f->mu);
  if (last)
    fr_free(f);
  wv_partial_fini(&acc);
  return rc;
}

/* ---- a bounded read for copy regions ------------------------------------ */

typedef struct fr_one {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int fd;
  void *buf;
  size_t cap;
  uint64_t bytes;
  int done, rc, abandoned;
  unsigned refs;
  wave_error err;
} fr_one;

static void fr_one_free(fr_one *o)
{
  if (o->abandoned) {
    munmap(o->buf, o->cap);  /* the buffer was left to us */
    atomic_fetch_sub(&fr_stuck, 1);
  }
  close(o->fd);
  pthread_cond_destroy(&o->cv);
  pthread_mutex_destroy(&o->mu);
  free(o);
}

static void *fr_one_run(void *arg)
{
  fr_one *o = arg;
  wave_error e = {0};
  int rc = fr_pread(o->fd, o->buf, o->bytes, 0, 0, o->bytes, &e);
  pthread_mutex_lock(&o->mu);
  o->rc = rc;
  o->err = e;
  o->done = 1;
  pthread_cond_broadcast(&o->cv);
  int last = --o->refs == 0;
  pthread_mutex_unlock(&o->mu);
  if (last)
    fr_one_free(o);
  return NULL;
}

int wd_file_read_bounded(int fd, void *buf, size_t cap, uint64_t bytes,
                         unsigned timeout_ms, int *gave, wave_error *err)
{
  *gave = 0;
  unsigned stuck = atomic_load(&fr_stuck);
  if (stuck >= WD_FILE_STUCK_MAX)
    return wv_seterr(err, WAVE_EREGION, "%u reads of file regions never "
                     "returned (a hung mount?); no more copies until they "
                     "do", stuck);
  fr_one *o = calloc(1, sizeof *o);
  if (o == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  if ((o->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0) {
    free(o);
    return wv_seterr(err, WAVE_EREGION, "the region's descriptor: %s",
                     strerror(errno));
  }
  pthread_mutex_init(&o->mu, NULL);
  fr_cv_init(&o->cv);
  o->buf = buf;
  o->cap = cap;
  o->bytes = bytes;
  o->refs = 2;
  pthread_attr_t at;
  pthread_attr_init(&at);
  pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
  pthread_t tid;
  int started = pthread_create(&tid, &at, fr_one_run, o) == 0;
  pthread_attr_destroy(&at);
  if (!started) {
    o->refs = 1;
    fr_one_free(o);
    return wv_seterr(err, WAVE_ENOMEM, "cannot start a reader thread");
  }
  pthread_mutex_lock(&o->mu);
  uint64_t deadline = fr_now_ms() + timeout_ms;
  int late = 0;
  while (!o->done && !late)
    late = fr_wait_until(&o->cv, &o->mu, deadline);
  int rc;
  if (o->done) {
    rc = o->rc;
    if (rc != 0)
      *err = o->err;
  } else {
    o->abandoned = 1;
    atomic_fetch_add(&fr_stuck, 1);
    *gave = 1;
    rc = wv_seterr(err, WAVE_EREGION, "reading the region stalled for more "
                   "than %u ms (limits.region_read_timeout_ms); the read is "
                   "left behind (a hung mount?)", timeout_ms);
  }
  int last = --o->refs == 0;
  pthread_mutex_unlock(&o->mu);
  if (last)
    fr_one_free(o);
  if (*gave)
    wd_file_stuck_warn(1);
  return rc;
}
