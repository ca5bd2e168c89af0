/* hashrun.c - a hash job's pieces on the device threads (see
 * hashjob_int.h for the piece queue, parking and the ordered fold).
 *
 * One step of a share = one piece: take it from the job, hash and fold it
 * on the device (wv_dev_hash_batch: segment fingerprints, winners, best),
 * re-verify its winners and best on the CPU when the device's caps ask for
 * it, and merge it into the job with core/hashmerge.h, exact whatever the
 * order pieces finish in (winners, count, best, segments at their index);
 * only the job fingerprint needs the pieces in nonce order, so a piece
 * that finishes after a gap waits in the job's `held` list.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/jobs/hashjob_int.h"
#include "daemon/log.h"
#include "daemon/stats.h"
#include "core/base.h"
#include "workers/wvdev.h"

void wd_hj_piece_free(hj_piece *p)
{
  if (p != NULL)
    free(p->seg);
  free(p);
}

void wd_hj_wake_parked(wd_hjob *j)
{
  for (size_t i = 0; i < j->n_parts; i++) {
    hj_part *p = &j->parts[i];
    if (p->state == HP_PARKED) {
      p->state = HP_QUEUED;
      wd_device_resume(p->dev, &p->work);
    } else if (p->state == HP_QUEUED || p->state == HP_ACTIVE) {
      wd_device_poke(p->dev);  /* a held device's share may end now */
    }
  }
}

/* A new piece of whole segments, about `batch` nonces (under j->mu). */
static hj_piece *hr_new_piece(wd_hjob *j, uint64_t batch)
{
  const unsigned s = j->seg_log2;
  uint64_t off = j->cursor, abs = j->nonce + off;
  uint64_t k = batch >> s;
  if (k == 0)
    k = 1;
  uint64_t span = (k << s) - (abs & ((1ull << s) - 1));
  uint64_t len = j->count - off;
  if (len > span)
    len = span;
  hj_piece *p = calloc(1, sizeof *p);
  if (p == NULL)
    return NULL;
  p->off = off;
  p->len = len;
  p->n_seg = (size_t)wv_seg_count(abs, len, s);
  if ((p->seg = calloc(p->n_seg, sizeof *p->seg)) == NULL) {
    free(p);
    return NULL;
  }
  j->cursor += len;
  return p;
}

static void hr_abort_locked(wd_hjob *j, int rc, const wave_error *err)
{
  if (j->abort_rc == 0) {
    j->abort_rc = rc;
    j->abort_err = *err;
  }
  wd_hj_wake_parked(j);
}

static void hr_put_back(wd_hjob *j, hj_piece *pc)
{
  pthread_mutex_lock(&j->mu);
  wv_q_push_head(&j->returned, &pc->q);
  j->in_flight--;
  wd_hj_wake_parked(j);
  pthread_mutex_unlock(&j->mu);
}

static void hr_fold(wd_hjob *j, hj_piece *pc)
{
  wv_hash_merge_fold(&j->m, pc->seg, pc->n_seg, pc->len);
  wd_hj_piece_free(pc);
}

/* Merge a finished piece (under j->mu); the job fingerprint takes the
 * pieces in nonce order, so one that finished after a gap is held. */
static void hr_merge(wd_hjob *j, hj_piece *pc, const wv_hash_batch *b)
{
  wv_hash_merge_add(&j->m, b);
  if (pc->off == j->m.folded) {
    hr_fold(j, pc);
    while (!wv_q_empty(&j->held) &&
           HJ_PIECE(j->held.next)->off == j->m.folded)
      hr_fold(j, HJ_PIECE(wv_q_pop(&j->held)));
  } else {
    /* before the first held piece past it (or at the end) */
    wv_qnode *at = j->held.next;
    while (at != &j->held && HJ_PIECE(at)->off < pc->off)
      at = at->next;
    wv_q_push(at, &pc->q);  /* the tail of a ring headed at `at`: before it */
  }
  j->in_flight--;
  if (j->in_flight == 0 && wv_q_empty(&j->returned) &&
      j->cursor == j->count)
    wd_hj_wake_parked(j);
  atomic_fetch_add(&j->done, b->count);
}

/* Re-check on the CPU what of the piece the job can still report: its
 * winners below the job's current max_winners-th (the kept set only ever
 * takes lower nonces, so a winner above a full set is never reported),
 * and its best if it beats the job's.  One check costs a unit of the
 * reference hash (~ms for a memory pack), and after the first pieces
 * nearly nothing qualifies, so the device thread is not held up. */
static int hr_verify(wd_hjob *j, const wd_run_ctx *x, const wv_hash_batch *b,
                     wave_error *err)
{
  pthread_mutex_lock(&j->mu);
  uint64_t cut = wv_hash_merge_cut(&j->m);
  int best_counts = wv_hash_merge_better(&j->m, b->best_output,
                                         b->best_nonce);
  pthread_mutex_unlock(&j->mu);
  for (size_t i = 0; i <= b->n_winners; i++) {
    uint64_t nonce, output, cpu;
    if (i < b->n_winners) {
      nonce = b->winners[i].nonce;
      output = b->winners[i].output;
      if (j->max_winners == 0 || (cut != UINT64_MAX && nonce > cut))
        continue;
    } else {
      if (!best_counts)
        continue;
      nonce = b->best_nonce;
      output = b->best_output;
    }
    wave_error e = {0};
    int rc = wv_hash_verify(j->pack, nonce, &cpu, &e);
    if (rc != 0)
      return wv_seterr(err, rc, "verifying nonce %" PRIu64 ": %s", nonce,
                       e.message);
    if (cpu != output) {
      wd_error("device %s: hash mismatch (pack %s, nonce %" PRIu64
               "): device 0x%016" PRIx64 ", CPU 0x%016" PRIx64,
               x->name, wv_pack_name(j->pack), nonce, output, cpu);
      return wv_seterr(err, WAVE_EMISMATCH, "device %s: nonce %" PRIu64
                       " gave 0x%016" PRIx64 ", the CPU says 0x%016" PRIx64,
                       x->name, nonce, output, cpu);
    }
  }
  return 0;
}

/* The first step of a share: the pack's check on this device, caps. */
static int hr_start(hj_part *p, const wd_run_ctx *x)
{
  wd_hjob *j = p->job;
  wd_pack_state ck = {.state = WD_CHECK_FAILED};
  wd_packstate_get(j->packstate, x->index, j->pack_index, &ck);
  if (ck.state != WD_CHECK_OK)
    return wv_seterr(&p->work.err, WAVE_ESELFCHECK,
                     "pack %s failed its self-check on device %s: %s",
                     wv_pack_name(j->pack), x->name, ck.detail);
  const wv_caps *caps = x->caps;
  p->reverify = caps->reverify;
  p->checked = 1;
  pthread_mutex_lock(&j->mu);
  const char *ex = wv_exchange_name(caps->exchange_mode);
  if (strstr(j->exchange, ex) == NULL) {
    size_t l = strlen(j->exchange);
    snprintf(j->exchange + l, sizeof j->exchange - l, "%s%s", l ? "," : "",
             ex);
  }
  pthread_mutex_unlock(&j->mu);
  uint64_t zero = 0;
  atomic_compare_exchange_strong(&j->t_start_ns, &zero, wd_hj_now_ns());
  int queued = WD_JOB_QUEUED;
  atomic_compare_exchange_strong(&j->state, &queued, WD_JOB_RUNNING);
  return 0;
}

static int hr_run(wd_work *w, const wd_run_ctx *x)
{
  hj_part *p = (hj_part *)w;
  wd_hjob *j = p->job;
  pthread_mutex_lock(&j->mu);
  p->state = HP_ACTIVE;
  pthread_mutex_unlock(&j->mu);
  int cancel = atomic_load(&j->cancel);
  if (cancel) {
    w->rc = wv_seterr(&w->err, cancel, "job %" PRIu64 " cancelled after %"
                      PRIu64 " of %" PRIu64 " nonces%s", j->id,
                      atomic_load(&j->done), j->count,
                      cancel == WAVE_ESHUTDOWN ? ": daemon is shutting down"
                                               : "");
    return WD_RUN_END;
  }
  if (x->held) {  /* a guard holds the device: no new piece here */
    pthread_mutex_lock(&j->mu);
    int more = j->abort_rc == 0 && (!wv_q_empty(&j->returned) ||
                                    j->cursor < j->count);
    pthread_mutex_unlock(&j->mu);
    if (more)
      return WD_RUN_MORE;  /* waits in the queue, the others go on */
  }
  if (!p->checked && (w->rc = hr_start(p, x)) != 0)
    return WD_RUN_END;

  pthread_mutex_lock(&j->mu);
  if (j->abort_rc != 0) {
    pthread_mutex_unlock(&j->mu);
    return WD_RUN_END;  /* rc 0: this share did nothing wrong */
  }
  hj_piece *pc = NULL;
  wv_qnode *back = wv_q_pop(&j->returned);  /* a piece put back first */
  if (back != NULL) {
    pc = HJ_PIECE(back);
  } else if (j->cursor < j->count) {
    if ((pc = hr_new_piece(j, wd_packstate_batch(j->packstate, x->index,
                                                 x->caps))) == NULL) {
      wave_error e;
      wv_seterr(&e, WAVE_ENOMEM, "no memory for a piece of job %" PRIu64,
                j->id);
      hr_abort_locked(j, WAVE_ENOMEM, &e);
      pthread_mutex_unlock(&j->mu);
      return WD_RUN_END;
    }
  } else if (j->in_flight > 0) {
    p->state = HP_PARKED;  /* a piece may yet come back */
    pthread_mutex_unlock(&j->mu);
    return WD_RUN_PARK;
  } else {
    pthread_mutex_unlock(&j->mu);
    return WD_RUN_END;  /* nothing left */
  }
  j->in_flight++;
  pthread_mutex_unlock(&j->mu);

  wave_error err = {0};
  wv_hash_batch b = {
    .nonce = j->nonce + pc->off,
    .count = pc->len,
    .seg_log2 = j->seg_log2,
    .target = j->target,
    .max_winners = j->max_winners,
    .outputs = j->outputs != NULL ? j->outputs + pc->off : NULL,
    .seg_fp = pc->seg,
    .winners = p->win,
  };
  int rc = 0;
  if (rc == 0 && b.outputs == NULL && wv_dev_batch_needs_scratch(x->dev) &&
      p->scratch_n < pc->len) {
    free(p->scratch);
    p->scratch_n = 0;
    if ((p->scratch = malloc(pc->len * sizeof *p->scratch)) == NULL)
      rc = wv_seterr(&err, WAVE_ENOMEM, "device %s: no memory for a batch of "
                     "%" PRIu64 " outputs", x->name, pc->len);
    else
      p->scratch_n = pc->len;
  }
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (rc == 0)
    rc = wv_dev_hash_batch(x->dev, j->pack, &b, p->scratch, &err);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (rc == 0)  /* the capacity figure of status (hash_rate) */
    wd_packstate_add_hashes(j->packstate, x->index, j->pack_index, b.count,
                            (double)(t1.tv_sec - t0.tv_sec) +
                                (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
  if (rc == 0 && p->reverify)
    rc = hr_verify(j, x, &b, &err);
  if (rc == WAVE_EDEVICE) {
    hr_put_back(j, pc);  /* another device takes it */
    p->faulted = 1;
    w->rc = rc;
    w->err = err;
    return WD_RUN_END;
  }
  pthread_mutex_lock(&j->mu);
  if (rc != 0) {
    j->in_flight--;
    hr_abort_locked(j, rc, &err);
    pthread_mutex_unlock(&j->mu);
    wd_hj_piece_free(pc);
    w->rc = rc;
    w->err = err;
    return WD_RUN_END;
  }
  hr_merge(j, pc, &b);
  pthread_mutex_unlock(&j->mu);
  p->hashes += b.count;
  wd_stats_hashed(x->name, b.count);  /* metrics' hash rates */
  wd_device_hashed(w->dev, b.count);  /* the rate watchdog's */
  return WD_RUN_MORE;
}

static void hr_done(wd_work *w) { wd_hj_part_ended((hj_part *)w); }

/* The job's first piece began (on any device): a share's deadline is
 * past caring. */
static int hr_started(wd_work *w)
{
  return atomic_load(&((hj_part *)w)->job->t_start_ns) != 0;
}

const wd_work_ops wd_hj_part_ops = {
  .name = "hash job",
  .lane = WD_LANE_LONG,
  .run = hr_run,
  .done = hr_done,
  .started = hr_started,
};
