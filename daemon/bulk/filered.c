/* filered.c - reductions over file regions, read as reduced (filered.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/bulk/filered.h"
#include "daemon/bulk/fileio.h"
#include "daemon/bulk/readers.h"
#include "daemon/log.h"
#include "core/base.h"
#include "core/partial.h"
#include "core/reduce.h"
#include "core/testhook.h"
#include "workers/wvdev.h"

#define FR_MAX_SLOTS 8

typedef struct fr_piece {
  size_t chunk;       /* input chunk */
  uint64_t a, k;      /* its rows [a, a + k) */
  uint64_t lrow;      /* the job's logical row of a */
} fr_piece;

struct fr;
struct fr_slot;

/* A reader's task: rows [r0, r1) of the piece its slot is filled with. */
typedef struct fr_part {
  wd_rtask task;
  struct fr *f;
  struct fr_slot *s;
  uint64_t r0, r1;
  uint64_t selected;  /* mask applied (fr_apply): its rows selected */
} fr_part;

typedef struct fr_slot {
  uint8_t *in, *mask;            /* ring buffers (NULL where not needed) */
  const uint8_t *in_p, *mask_p;  /* the piece's rows: a buffer or memory */
  size_t idx;                    /* piece it holds; SIZE_MAX none */
  size_t want;                   /* piece its parts are filling */
  unsigned left;                 /* parts of want not done */
  unsigned in_read;              /* parts inside a read */
  int lent;                      /* left with reads inside: its buffers go
                                    back to the ring as the last returns */
  int applied;                   /* its readers apply the mask (fr_apply):
                                    the device reduces it unmasked */
  fr_part *parts;
} fr_slot;

typedef struct fr {
  wd_readers *r;                 /* the server's reader pool and rings */
  const wv_reduce_job *job;      /* the device thread's: parts touch it
                                    only outside a read (see fr_abandon) */
  const wd_fsrc *src;
  int *fds;                      /* our dup of each file span's descriptor,
                                    -1 for spans in memory */
  uint8_t *read;                 /* per span: read into the slots (a file,
                                    or memory the device would stage) */
  fr_piece *pieces;
  size_t n;
  uint64_t *mask_start;          /* logical first row of each mask chunk */
  fr_slot slots[FR_MAX_SLOTS];
  unsigned n_slots, max_parts;
  uint64_t part_rows;
  int apply;                     /* masked rows read into a slot get the
                                    mask applied by the readers (the device
                                    stages masks: caps.stages_masks) */
  wv_mask_fill fill;
  uint64_t selected, counted;    /* device thread, applied slots: rows
                                    they select; rows their calls counted
                                    (unmasked: every row) */
  double transfer;               /* device thread: the calls' transfer_s */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int stop, rc;
  _Atomic int halt;              /* stop, seen by a pipe's read unlocked */
  int fifo;                      /* some span is a pipe */
  uint64_t *fifo_at;             /* per pipe span: its bytes read so far
                                    (its next part's turn: one part a
                                    slot, each part waits for it) */
  wave_error err;                /* the first reader error */
  unsigned refs;                 /* the device thread + each part queued
                                    or running */
  unsigned running, in_read;     /* parts running; of them, inside pread */
  int abandoned;                 /* the device thread has gone */
  size_t job_spans;              /* entries of fds and read */
} fr;

/* The ring buffers are not f's: the device thread gives them back to the
 * ring (fr_give) before f can go. */
static void fr_free(fr *f)
{
  for (unsigned s = 0; s < f->n_slots; s++)
    free(f->slots[s].parts);
  for (size_t i = 0; f->fds != NULL && i < f->job_spans; i++)
    if (f->fds[i] >= 0)
      close(f->fds[i]);
  free(f->fds);
  free(f->fifo_at);
  free(f->read);
  free(f->pieces);
  free(f->mask_start);
  pthread_cond_destroy(&f->cv);
  pthread_mutex_destroy(&f->mu);
  free(f);
}

/* A part: rows [row, row + k) of span i into dst (slot s's buffer).  A
 * span in memory is copied (the part runs, so the device thread waits for
 * it before the job's memory can go); a file is read with only f's own
 * buffer and descriptor in hand, since a read that never returns is left
 * behind with them. */
static int fr_rows(fr *f, fr_slot *sl, size_t i, uint64_t row, uint64_t k,
                   uint8_t *dst, wave_error *err)
{
  const wd_fsrc *s = &f->src[i];
  int in = i < f->job->n_input;
  const wv_span *sp = in ? &f->job->input[i]
                         : &f->job->mask[i - f->job->n_input];
  uint64_t z = in ? wv_dtype_size(f->job->dtype) : 4;  /* row bytes */
  if (s->fd < 0) {
    memcpy(dst, (const uint8_t *)sp->data + row * z, (size_t)(k * z));
    return 0;
  }
  uint64_t end = s->off + sp->rows * z, off = s->off + row * z;
  uint64_t region = s->region;
  const int fifo = s->fifo;  /* s is the job's: not to be read after */
  pthread_mutex_lock(&f->mu);
  while (fifo && !f->stop && f->fifo_at[i] != off)  /* a pipe's turn */
    pthread_cond_wait(&f->cv, &f->mu);
  if (f->stop) {
    pthread_mutex_unlock(&f->mu);
    return wv_seterr(err, WAVE_ECANCELLED, "the job stopped");
  }
  f->in_read++;
  sl->in_read++;
  pthread_mutex_unlock(&f->mu);
  int rc = fifo ? wd_fio_read_pipe(f->fds[i], dst, k * z, off, region, end,
                                   &f->halt, err)
                : wd_fio_pread(f->fds[i], dst, k * z, off, region, end, err);
  pthread_mutex_lock(&f->mu);
  if (fifo && rc == 0)  /* the next part's turn; after an error none */
    f->fifo_at[i] = off + k * z;
  f->in_read--;
  sl->in_read--;
  int gone = f->abandoned;
  if (gone) {  /* counted stuck at fr_abandon: it is back */
    wd_readers_shrink(f->r, 1);
    if (sl->lent && sl->in_read == 0) {
      if (sl->in != NULL)
        wd_ring_return(f->r, sl->in);
      if (sl->mask != NULL)
        wd_ring_return(f->r, sl->mask);
    }
  } else {
    pthread_cond_broadcast(&f->cv);
  }
  pthread_mutex_unlock(&f->mu);
  return gone ? WAVE_ECANCELLED : rc;
}

/* The mask chunk holding logical row lrow: the last m with start[m] <=
 * lrow, past empty chunks. */
static size_t fr_mask_chunk(const fr *f, uint64_t lrow)
{
  size_t lo = 0, hi = f->job->n_mask;  /* start[hi] = rows > lrow */
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (f->mask_start[mid] <= lrow)
      lo = mid;
    else
      hi = mid;
  }
  while (f->mask_start[lo + 1] <= lrow)
    lo++;
  return lo;
}

/* k rows of z bytes at row: each the mask does not select becomes fill;
 * returns the rows selected. */
static uint64_t fr_fill_rows(uint8_t *row, const uint32_t *m, uint64_t k,
                             unsigned z, uint64_t fill)
{
  uint64_t sel = 0;
  if (z == 4) {
    uint32_t *r = (uint32_t *)(void *)row, v = (uint32_t)fill;
    for (uint64_t j = 0; j < k; j++) {
      sel += m[j] != 0;
      r[j] = m[j] != 0 ? r[j] : v;
    }
  } else {  /* 8-byte rows are 4-byte aligned only */
    for (uint64_t j = 0; j < k; j++) {
      sel += m[j] != 0;
      if (m[j] == 0)
        memcpy(row + j * 8, &fill, 8);
    }
  }
  return sel;
}

/* The mask applied to a part's rows, in the slot (wv_mask_fill): a dup
 * op's fill is the part's first selected row; a part that selects none is
 * left as read, and the device fills it (fr_fix_empty). */
static void fr_apply(fr *f, fr_part *p)
{
  fr_slot *s = p->s;
  const unsigned z = wv_dtype_size(f->job->dtype);
  uint8_t *row = s->in + p->r0 * z;
  const uint32_t *m = (const uint32_t *)(const void *)s->mask_p + p->r0;
  const uint64_t k = p->r1 - p->r0;
  uint64_t fill = f->fill.bits, j = 0;
  if (f->fill.dup) {
    while (j < k && m[j] == 0)
      j++;
    if (j == k) {
      p->selected = 0;
      return;
    }
    memcpy(&fill, row + j * z, z);
  }
  p->selected = fr_fill_rows(row, m, k, z, fill);
}

/* A part's rows: the input where its span is read, the mask where the
 * slot's mask is staged (read, or across mask chunks). */
static int fr_fill_read(fr *f, const fr_part *p, wave_error *err)
{
  fr_slot *s = p->s;
  const fr_piece *pc = &f->pieces[s->want];
  uint64_t k = p->r1 - p->r0;
  int rc = 0;
  if (s->in_p == s->in &&
      (rc = fr_rows(f, s, pc->chunk, pc->a + p->r0, k,
                    s->in + p->r0 * wv_dtype_size(f->job->dtype), err)) != 0)
    return rc;
  if (!f->job->has_mask || s->mask_p != s->mask)
    return 0;
  size_t base = f->job->n_input;
  uint64_t lrow = pc->lrow + p->r0;
  for (size_t m = fr_mask_chunk(f, lrow); k > 0 && rc == 0; m++) {
    uint64_t end = f->mask_start[m + 1];
    if (end <= lrow)
      continue;
    uint64_t seg = end - lrow < k ? end - lrow : k;
    rc = fr_rows(f, s, base + m, lrow - f->mask_start[m], seg,
                 s->mask + (lrow - pc->lrow) * 4, err);
    lrow += seg;
    k -= seg;
  }
  return rc;
}

/* A part's rows: the input where its span is read, the mask where the
 * slot's mask is staged (read, or across mask chunks); then the mask
 * applied where the slot says so. */
static int fr_fill(fr *f, fr_part *p, wave_error *err)
{
  int rc = fr_fill_read(f, p, err);
  if (rc == 0 && p->s->applied)
    fr_apply(f, p);
  return rc;
}

static void fr_part_run(wd_rtask *t)
{
  fr_part *p = (fr_part *)t;
  fr *f = p->f;
  fr_slot *s = p->s;
  pthread_mutex_lock(&f->mu);
  int go = !f->stop;
  f->running += go;
  pthread_mutex_unlock(&f->mu);
  wave_error e = {0};
  int rc = go ? fr_fill(f, p, &e) : 0;
  pthread_mutex_lock(&f->mu);
  f->running -= go;
  if (!f->abandoned) {
    if (rc != 0 && !f->stop) {
      f->stop = 1;
      atomic_store(&f->halt, 1);
      f->rc = rc;
      f->err = e;
    }
    if (--s->left == 0 && !f->stop)
      s->idx = s->want;
  }
  pthread_cond_broadcast(&f->cv);
  int last = --f->refs == 0;
  pthread_mutex_unlock(&f->mu);
  if (last)
    fr_free(f);
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

/* The device reads host memory itself (the CPU backend): memory spans are
 * used in place, only files are read. */
static int fr_host_reads(const wv_caps *caps)
{
  return caps != NULL && caps->reads_host_memory;
}

/* Piece sizes (filered.h); WAVED_FILE_LEVELS=k (1..3) sets P = 256^k, for
 * tests of many small pieces on any device. */
static void fr_shape(const wv_caps *caps, uint64_t *p, uint64_t *slot,
                     unsigned *slots, unsigned *parts)
{
  const char *e = wv_test_hook("WAVED_FILE_LEVELS");
  if (e != NULL && e[0] >= '1' && e[0] <= '3' && e[1] == '\0') {
    *p = (uint64_t)1 << (8 * (e[0] - '0'));
    *slot = *p * (e[0] == '3' ? 1 : 4);
    *slots = 4;
    *parts = 4;
  } else if (fr_host_reads(caps)) {
    *p = (uint64_t)WV_GROUP * WV_GROUP;   /* 256 KiB */
    *slot = *p * 16;                      /* 4 MiB, in 1 MiB parts */
    *slots = 4;
    *parts = 4;
  } else {
    *p = (uint64_t)1 << 24;               /* 64 MiB */
    *slot = *p;                           /* in 8 MiB parts */
    *slots = 3;
    *parts = 8;
  }
}

/* Whether the readers apply a job's mask for the device (caps.stages_masks;
 * every device with WAVED_FILE_MASKS=apply, for tests). */
static int fr_applies(const wv_caps *caps)
{
  const char *e = wv_test_hook("WAVED_FILE_MASKS");
  if (e != NULL && strcmp(e, "apply") == 0)
    return 1;
  return caps != NULL && caps->stages_masks;
}

/* Whether span s is read into the slots: a file always; a region that
 * dev's backend has not pinned, when dev stages (the readers beat its
 * one-thread copy); every region span with WAVED_FILE_STAGE=1 (tests). */
static int fr_reads(const wv_dev *dev, const wv_caps *caps, const wd_fsrc *s)
{
  if (s->fd >= 0)
    return 1;
  if (s->reg == NULL)
    return 0;
  const char *e = wv_test_hook("WAVED_FILE_STAGE");
  if (e != NULL && strcmp(e, "1") == 0)
    return 1;
  return !fr_host_reads(caps) && !wd_region_pinned_for(s->reg, dev);
}

int wd_file_reads_nothing(const wv_dev *dev, const wv_caps *caps,
                          const wd_fsrc *src, size_t n)
{
  size_t i = 0;
  while (i < n && !fr_reads(dev, caps, &src[i]))
    i++;
  return i == n;
}

/* The device thread's side: f with its descriptors, pieces and mask
 * starts, or an error (f is freed); *reads: some span is read. */
static int fr_open(wd_readers *rd, const wv_dev *dev, const wv_caps *caps,
                   const wv_reduce_job *job, const wd_fsrc *src,
                   uint64_t slot_rows, fr **out, int *reads, wave_error *err)
{
  fr *f = calloc(1, sizeof *f);
  if (f == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  f->r = rd;
  f->job = job;
  f->src = src;
  f->refs = 1;
  pthread_mutex_init(&f->mu, NULL);
  wd_fio_cv_init(&f->cv);
  int rc = 0;
  f->job_spans = job->n_input + job->n_mask;
  f->fds = malloc((f->job_spans + 1) * sizeof *f->fds);
  f->fifo_at = calloc(f->job_spans + 1, sizeof *f->fifo_at);
  f->read = calloc(f->job_spans + 1, 1);
  *reads = 0;
  for (size_t i = 0; f->fds != NULL && i < f->job_spans; i++)
    f->fds[i] = -1;
  for (size_t i = 0; f->fds != NULL && f->read != NULL &&
                     i < f->job_spans; i++) {
    *reads |= f->read[i] = (uint8_t)fr_reads(dev, caps, &src[i]);
    if (src[i].fd >= 0 &&
        (f->fds[i] = fcntl(src[i].fd, F_DUPFD_CLOEXEC, 0)) < 0) {
      rc = wv_seterr(err, WAVE_EREGION, "file region %" PRIu64 ": %s",
                     src[i].region, strerror(errno));
      goto fail;
    }
  }
  for (size_t i = 0; i < job->n_input; i++)
    f->n += (size_t)((job->input[i].rows + slot_rows - 1) / slot_rows);
  f->pieces = calloc(f->n + 1, sizeof *f->pieces);
  f->mask_start = calloc(job->n_mask + 2, sizeof *f->mask_start);
  if (f->fds == NULL || f->fifo_at == NULL || f->read == NULL ||
      f->pieces == NULL || f->mask_start == NULL) {
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
  *out = f;
  return 0;
fail:
  fr_free(f);  /* no reader yet */
  return rc;
}

/* Slots and their ring buffers (n_slots of slot_rows, cut in parts). */
static int fr_slots(fr *f, const wv_dev *dev,
                    uint64_t slot_rows, unsigned n_slots, unsigned parts,
                    wave_error *err)
{
  f->n_slots = n_slots < f->n ? n_slots : (unsigned)f->n;
  f->part_rows = (slot_rows + parts - 1) / parts;
  f->max_parts = parts;
  uint8_t *bufs[2 * FR_MAX_SLOTS];
  unsigned nb = f->n_slots * (f->job->has_mask ? 2 : 1);
  /* one size for the ring: 8-byte rows' (a 64-bit dtype) for masks too */
  int rc = wd_ring_take(f->r, dev, (size_t)slot_rows * wv_dtype_size(f->job->dtype),
                        nb, bufs, err);
  if (rc != 0) {
    f->n_slots = 0;
    return rc;
  }
  for (unsigned s = 0; s < f->n_slots; s++) {
    fr_slot *sl = &f->slots[s];
    sl->idx = SIZE_MAX;
    sl->in = bufs[s];
    sl->mask = f->job->has_mask ? bufs[f->n_slots + s] : NULL;
    if ((sl->parts = calloc(parts, sizeof *sl->parts)) == NULL)
      rc = wv_seterr(err, WAVE_ENOMEM, NULL);
  }
  return rc;
}

/* Device thread, under f->mu: the ring buffers back (those a read is
 * still inside lent, fr_rows returns them). */
static void fr_give(fr *f, wv_device *bdev)
{
  for (unsigned s = 0; s < f->n_slots; s++) {
    fr_slot *sl = &f->slots[s];
    int lent = sl->lent = sl->in_read > 0;
    wd_ring_give(f->r, bdev, &sl->in, &lent, 1);
    if (sl->mask != NULL)
      wd_ring_give(f->r, bdev, &sl->mask, &lent, 1);
  }
}

void wd_file_ring_prepare(wd_readers *r, const wv_dev *dev,
                          const wv_caps *caps)
{
  if (fr_host_reads(caps))
    return;
  uint64_t P, slot_rows;
  unsigned n_slots, parts;
  fr_shape(caps, &P, &slot_rows, &n_slots, &parts);
  uint8_t *bufs[2 * FR_MAX_SLOTS];
  unsigned nb = 2 * n_slots;  /* the rows' slots and the mask's */
  size_t bytes = (size_t)slot_rows * 4;
  wave_error e = {0};
  if (wd_ring_take(r, dev, bytes, nb, bufs, &e) != 0) {
    wd_warn("%s: no staging ring at start-up (%s); the first file job "
            "makes it", dev->be->name, e.message);
    return;
  }
  wd_ring_give(r, dev->impl, bufs, NULL, nb);
  wd_debug("%s: staging ring of %u x %zu bytes made", dev->be->name, nb,
           bytes);
}

/* Device thread: slot of piece i gets its pointers, and its parts go to
 * the readers (none when all its rows are used in place). */
static void fr_post(fr *f, size_t i)
{
  fr_slot *s = &f->slots[i % f->n_slots];
  const fr_piece *pc = &f->pieces[i];
  const wv_reduce_job *job = f->job;
  s->in_p = f->read[pc->chunk] ? s->in
                               : (const uint8_t *)job->input[pc->chunk].data +
                                 pc->a * wv_dtype_size(job->dtype);
  s->mask_p = NULL;
  if (job->has_mask) {
    size_t m = fr_mask_chunk(f, pc->lrow);
    s->mask_p = s->mask;  /* read, or across mask chunks: staged */
    if (pc->lrow + pc->k <= f->mask_start[m + 1] &&
        !f->read[job->n_input + m])
      s->mask_p = (const uint8_t *)job->mask[m].data +
                  (pc->lrow - f->mask_start[m]) * 4;
  }
  s->applied = f->apply && s->in_p == s->in;
  pthread_mutex_lock(&f->mu);
  s->want = i;
  s->idx = SIZE_MAX;
  s->left = 0;
  if (s->in_p != s->in && s->mask_p != s->mask) {
    s->idx = i;
    pthread_mutex_unlock(&f->mu);
    return;
  }
  unsigned np = (unsigned)((pc->k + f->part_rows - 1) / f->part_rows);
  s->left = np;
  f->refs += np;
  pthread_mutex_unlock(&f->mu);
  for (unsigned q = 0; q < np; q++) {
    fr_part *p = &s->parts[q];
    uint64_t r1 = (uint64_t)(q + 1) * f->part_rows;
    *p = (fr_part){.task.run = fr_part_run, .f = f, .s = s,
                   .r0 = (uint64_t)q * f->part_rows,
                   .r1 = r1 < pc->k ? r1 : pc->k};
    wd_readers_post(f->r, &p->task);
  }
}

/* The device thread leaves the parts (under f->mu): those not started
 * see stop and end; those running outside a read may touch the job's
 * memory, so it waits for them; those inside a read touch only f's
 * buffers and descriptors, so they are left to finish it (the last one
 * frees f), count as stuck meanwhile, and the pool starts as many
 * threads to stand in for them.  Returns how many were left. */
static unsigned fr_abandon(fr *f)
{
  f->stop = 1;
  atomic_store(&f->halt, 1);
  pthread_cond_broadcast(&f->cv);
  while (f->running > f->in_read)
    pthread_cond_wait(&f->cv, &f->mu);
  f->abandoned = 1;
  unsigned left = f->in_read;
  if (left > 0)  /* counted stuck: a replacement each */
    wd_readers_grow(f->r, left);
  return left;
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
  uint64_t deadline = wd_fio_now_ms() + timeout_ms;
  int late = 0;
  while (s->idx != i && !f->stop && !late)
    late = wd_fio_wait_until(&f->cv, &f->mu, deadline);
  *stalled = late && s->idx != i && !f->stop;
  if (f->stop && f->rc != 0) {
    rc = f->rc;
    *err = f->err;
  } else if (s->idx != i && late && f->fifo) {
    rc = wv_seterr(err, WAVE_EREGION, "a pipe region's writer sent no piece "
                   "for more than %u ms (limits.region_read_timeout_ms): "
                   "the job fails", timeout_ms);
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

/* Device thread, an applied slot of a dup op: the rows its parts select;
 * parts that select none get a copy of a row of one that does (every row
 * of such a part is a selected value or a copy of one). */
static uint64_t fr_fix_empty(fr *f, fr_slot *s, uint64_t k)
{
  const unsigned z = wv_dtype_size(f->job->dtype);
  unsigned np = (unsigned)((k + f->part_rows - 1) / f->part_rows), q = 0;
  uint64_t sel = 0;
  for (unsigned p = 0; p < np; p++)
    sel += s->parts[p].selected;
  while (q < np && s->parts[q].selected == 0)
    q++;
  if (!f->fill.dup || q == np)
    return sel;  /* a constant fill, or nothing selected (skipped) */
  uint64_t v = 0;
  memcpy(&v, s->in + s->parts[q].r0 * z, z);
  for (unsigned p = 0; p < np; p++)
    if (s->parts[p].selected == 0)
      for (uint64_t r = s->parts[p].r0; r < s->parts[p].r1; r++)
        memcpy(s->in + r * z, &v, z);
  return sel;
}

/* Piece i, in its slot, on the device in calls of P rows, each answer a
 * partial of the job (docs/reduction.md "Partials", core/partial.h).  An
 * applied slot (fr_apply) goes unmasked: its calls' counts are every row,
 * put right in wd_file_reduce from the parts' selected rows; a dup op's
 * slot that selects nothing is skipped, as an order-free op may. */
static int fr_reduce_piece(fr *f, size_t i, const wv_dev *dev,
                           uint64_t P, wv_partial_acc *acc,
                           wave_error *err)
{
  const wv_reduce_job *job = f->job;
  fr_slot *s = &f->slots[i % f->n_slots];
  const fr_piece *pc = &f->pieces[i];
  const int masked = job->has_mask && !s->applied;
  if (s->applied) {
    uint64_t sel = fr_fix_empty(f, s, pc->k);
    f->selected += sel;
    if (sel == 0 && f->fill.dup)
      return 0;
  }
  int rc = 0;
  for (uint64_t r = 0; r < pc->k && rc == 0; r += P) {
    uint64_t n = pc->k - r < P ? pc->k - r : P;
    wv_span in = {s->in_p + r * wv_dtype_size(job->dtype), n};
    wv_span mk = {masked ? s->mask_p + r * 4 : NULL, n};
    wv_reduce_job j = {.dtype = job->dtype, .op = job->op, .input = &in,
                       .n_input = 1, .mask = &mk, .n_mask = masked ? 1 : 0,
                       .has_mask = masked, .rows = n};
    wv_reduce_out o = {0};
    wv_partial pt;
    rc = wv_dev_reduce(dev, &j, &o, err);
    f->transfer += o.transfer_s;
    if (rc == 0) {
      wv_partial_of(&j, &o, pc->chunk, &pt);
      pt.offset = pc->lrow + r;  /* argmin/argmax: the call's first row */
      f->counted += s->applied ? o.count : 0;
      rc = wv_partial_add(acc, &pt, err);
    }
  }
  return rc;
}

/* Every span in memory and used in place: the job as one call, as a
 * message's (rq/reduce.c says what *some_finite is). */
static int fr_whole(const wv_dev *dev,
                    const wv_reduce_job *job, wv_reduce_out *out,
                    int *some_finite, wave_error *err)
{
  int rc = wv_dev_reduce(dev, job, out, err);
  if (rc == 0 && wv_op_plan_of(job->dtype, job->op)->says_finite)
    *some_finite = wv_reduce_some_finite(job, out);
  return rc;
}

/* The pieces in order as their slots fill, each slot posted again as it
 * is reduced; the stall, if one, in *stalled. */
static int fr_run(fr *f, const wv_dev *dev, uint64_t P,
                  unsigned timeout_ms, wv_partial_acc *acc, int *stalled,
                  wave_error *err)
{
  int rc = 0;
  /* where the time went (said at debug level): the device waiting for the
   * readers, or the readers waiting for the device */
  double t0 = wd_fio_now_s(), waited = 0, reduced = 0;
  for (size_t i = 0; i < f->n_slots; i++)
    fr_post(f, i);
  for (size_t i = 0; rc == 0 && i < f->n; i++) {
    double a = wd_fio_now_s();
    if ((rc = fr_await(f, i, timeout_ms, stalled, err)) != 0)
      break;
    double m = wd_fio_now_s();
    rc = fr_reduce_piece(f, i, dev, P, acc, err);
    waited += m - a;
    reduced += wd_fio_now_s() - m;
    if (rc == 0 && i + f->n_slots < f->n)
      fr_post(f, i + f->n_slots);
  }
  wd_debug("reduction of %" PRIu64 " rows through the readers (%u of them): "
           "%zu pieces of up to %" PRIu64 " rows, %u slots of %u parts, in "
           "%.1f ms; the device waited %.1f ms for the readers and reduced "
           "%.1f ms%s", f->job->rows, wd_readers_size(f->r), f->n,
           f->part_rows * f->max_parts, f->n_slots, f->max_parts,
           (wd_fio_now_s() - t0) * 1e3, waited * 1e3, reduced * 1e3,
           f->apply ? " (the mask applied by the readers)" : "");
  return rc;
}

int wd_file_reduce(wd_readers *r, const wv_dev *dev, const wv_caps *caps,
                   const wv_reduce_job *job, const wd_fsrc *src,
                   unsigned timeout_ms, wv_reduce_out *out, int *some_finite,
                   wave_error *err)
{
  uint64_t P, slot_rows;
  unsigned n_slots, parts;
  fr_shape(caps, &P, &slot_rows, &n_slots, &parts);
  int files = 0, fifo = 0;
  for (size_t i = 0; i < job->n_input + job->n_mask; i++) {
    files |= src[i].fd >= 0;
    fifo |= src[i].fifo;
  }
  if (fifo)
    parts = 1;  /* a pipe is read in order: one part a slot, in turn */
  fr *f = NULL;
  int reads = 0;
  int rc = fr_open(r, dev, caps, job, src, slot_rows, &f, &reads, err);
  if (rc != 0)
    return rc;
  f->fifo = fifo;
  unsigned stuck = wd_readers_stuck(r);
  /* pinned, a device that reads host memory, or readers stuck: in place */
  if (!reads || (!files && stuck >= WD_FILE_STUCK_MAX)) {
    fr_free(f);
    return fr_whole(dev, job, out, some_finite, err);
  }
  wd_debug("%s: a reduction's spans go through the readers", dev->be->name);
  if (stuck >= WD_FILE_STUCK_MAX) {
    fr_free(f);
    return wv_seterr(err, WAVE_EREGION, "%u reads of file regions never "
                     "returned (a hung mount?); no more file jobs until they "
                     "do", stuck);
  }
  /* float sum: the chunk values, and the largest chunk's device calls */
  size_t max_vals = 0;
  for (size_t i = 0; i < job->n_input; i++) {
    size_t nv = (size_t)((job->input[i].rows + slot_rows - 1) / slot_rows *
                         ((slot_rows + P - 1) / P));
    max_vals = nv > max_vals ? nv : max_vals;
  }
  wv_partial_acc acc;
  if ((rc = wv_partial_init(&acc, job->dtype, job->op,
                            job->n_input + max_vals + 1, err)) != 0) {
    fr_free(f);
    return rc;
  }
  int stalled = 0;
  f->fill = wv_op_plan_of(job->dtype, job->op)->fill;
  f->apply = job->has_mask && f->fill.ok && fr_applies(caps);
  if ((rc = fr_slots(f, dev, slot_rows, n_slots, parts, err)) == 0)
    rc = fr_run(f, dev, P, timeout_ms, &acc, &stalled, err);
  /* applied slots: the rows they select, not every row (the float
   * argmin/argmax counts itself: its fills are NaN) */
  if (f->apply && job->op != WAVE_ARGMIN && job->op != WAVE_ARGMAX)
    acc.count = acc.count - f->counted + f->selected;
  if (rc == 0)
    wv_partial_result(&acc, out, some_finite);
  out->transfer_s = f->transfer;  /* the device's copies, not the reads */
  pthread_mutex_lock(&f->mu);
  unsigned left = fr_abandon(f);
  fr_give(f, dev->impl);
  if (stalled || left > 0)
    wd_fio_stuck_warn(r, left);
  int last = --f->refs == 0;
  pthread_mutex_unlock(&f->mu);
  if (last)
    fr_free(f);
  wv_partial_fini(&acc);
  return rc;
}
