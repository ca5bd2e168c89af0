/* cpu_seg.c - the CPU backend's hash_batch slot: a batch hashed and folded
 * into segment fingerprints, winners and best (struct wv_hash_batch,
 * workers/hash/hash.h; docs/hash.md "Segments"), with the folding spread
 * over the device's thread pool.
 *
 * A batch is cut into chunks at absolute multiples of 2^20 nonces (the
 * largest segment), so no segment straddles two chunks.  Each chunk is
 * hashed by wv_cpu_hash (itself parallel) into b->outputs, or into the
 * device's scratch when the outputs are not wanted, and then folded in a
 * second pool run: a task is a run of whole segments of about 2^13 nonces
 * (one segment when segments are larger), and reports its segments'
 * fingerprints, its winner count and its best.  The tasks' results are
 * merged in nonce order on the device thread, which then collects winners
 * from the first tasks that have any until max_winners are found, so the
 * winners are the lowest-nonce ones however many nonces win.
 *
 * FNV-1a is a chain: one segment is always one thread's work, so s = 20
 * folds a 2^20-nonce chunk on one core.
 */
#include <stdlib.h>
#include <string.h>

#include "core/base.h"
#include "workers/cpu/cpu.h"
#include "workers/hash/hash.h"

#define CS_CHUNK_LOG2 20u
#define CS_CHUNK (1ull << CS_CHUNK_LOG2)
#define CS_TASK_LOG2 13u                 /* nonces per fold task, about */
#define CS_MAX_TASKS (1u << (CS_CHUNK_LOG2 - CS_TASK_LOG2))

typedef struct cs_part {
  uint64_t count;
  uint64_t best_out, best_idx;   /* index into the chunk */
} cs_part;

typedef struct cs_fold {
  const uint64_t *out;           /* the chunk's outputs */
  uint64_t lo, last;             /* the chunk's nonces, inclusive */
  unsigned s;
  uint64_t target;
  uint64_t nseg, segs_per_task;
  uint64_t *seg_fp;              /* the chunk's first segment slot */
  cs_part *parts;
} cs_fold;

/* Segment t of the chunk: first index into the chunk and length. */
static void cs_piece(const cs_fold *f, uint64_t t, uint64_t *first,
                     uint64_t *n)
{
  const unsigned s = f->s;
  uint64_t start = t == 0 ? f->lo : ((f->lo >> s) + t) << s;
  uint64_t end = start | ((1ull << s) - 1);
  if (end > f->last)
    end = f->last;
  *first = start - f->lo;
  *n = end - start + 1;
}

static void cs_task(void *arg, size_t task, unsigned worker)
{
  (void)worker;
  const cs_fold *f = arg;
  cs_part part = {0, UINT64_MAX, 0};
  uint64_t t0 = (uint64_t)task * f->segs_per_task;
  uint64_t t1 = t0 + f->segs_per_task < f->nseg ? t0 + f->segs_per_task
                                                : f->nseg;
  uint64_t first = 0, n = 0;
  for (uint64_t t = t0; t < t1; t++) {
    cs_piece(f, t, &first, &n);
    const uint64_t *q = f->out + first;
    f->seg_fp[t] = wv_fnv1a64_u64(WV_FNV_OFFSET, q, (size_t)n);
    for (uint64_t i = 0; i < n; i++) {
      part.count += q[i] < f->target;
      if (q[i] < part.best_out || (t == t0 && i == 0)) {
        part.best_out = q[i];
        part.best_idx = first + i;
      }
    }
  }
  f->parts[task] = part;
}

static int cs_scratch(wv_device *dev, wave_error *err)
{
  if (dev->seg_scratch != NULL)
    return 0;
  dev->seg_scratch = malloc(CS_CHUNK * sizeof(uint64_t));
  if (dev->seg_scratch == NULL)
    return wv_seterr(err, WAVE_ENOMEM, "%s: hash batch scratch", dev->name);
  return 0;
}

int wv_cpu_hash_batch(wv_device *dev, const struct wv_pack *p,
                      wv_hash_batch *b, wave_error *err)
{
  const unsigned s = b->seg_log2;
  if (b->count == 0 || b->nonce + (b->count - 1) < b->nonce)
    return wv_seterr(err, WAVE_ERANGE, "hash batch [%llu, +%llu): empty or "
                     "past 2^64", (unsigned long long)b->nonce,
                     (unsigned long long)b->count);
  if (s < WV_SEG_LOG2_MIN || s > WV_SEG_LOG2_MAX)
    return wv_seterr(err, WAVE_EARG, "segment_log2 %u is outside %u..%u", s,
                     WV_SEG_LOG2_MIN, WV_SEG_LOG2_MAX);
  if (b->seg_fp == NULL || (b->max_winners > 0 && b->winners == NULL))
    return wv_seterr(err, WAVE_EARG, "hash batch without result arrays");
  int rv;
  if (b->outputs == NULL && (rv = cs_scratch(dev, err)) != 0)
    return rv;
  const uint64_t last = b->nonce + (b->count - 1);
  b->n_winners = 0;
  b->winner_count = 0;
  b->best_output = UINT64_MAX;
  b->best_nonce = b->nonce;
  cs_part parts[CS_MAX_TASKS];
  uint64_t pos = b->nonce, seg0 = 0;
  for (;;) {
    const uint64_t room = CS_CHUNK - (pos & (CS_CHUNK - 1));
    const uint64_t n = last - pos < room - 1 ? last - pos + 1 : room;
    uint64_t *out = b->outputs != NULL ? b->outputs + (pos - b->nonce)
                                       : dev->seg_scratch;
    if ((rv = wv_cpu_hash(dev, p, pos, n, out, err)) != 0)
      return rv;
    cs_fold f = {.out = out, .lo = pos, .last = pos + (n - 1), .s = s,
                 .target = b->target, .nseg = wv_seg_count(pos, n, s),
                 .seg_fp = b->seg_fp + seg0, .parts = parts};
    f.segs_per_task = s >= CS_TASK_LOG2 ? 1 : 1ull << (CS_TASK_LOG2 - s);
    const uint64_t tasks = (f.nseg + f.segs_per_task - 1) / f.segs_per_task;
    wv_cpu_pool_run(dev, (size_t)tasks, cs_task, &f);
    /* Merge in nonce order: strict < keeps the lowest nonce of a tie. */
    for (uint64_t k = 0; k < tasks; k++) {
      const cs_part *pt = &parts[k];
      if (pt->best_out < b->best_output) {
        b->best_output = pt->best_out;
        b->best_nonce = pos + pt->best_idx;
      }
      b->winner_count += pt->count;
      if (pt->count == 0 || b->n_winners >= b->max_winners)
        continue;
      uint64_t first, len, first_last;
      cs_piece(&f, k * f.segs_per_task, &first, &len);
      uint64_t tl = (k + 1) * f.segs_per_task < f.nseg
                      ? (k + 1) * f.segs_per_task - 1 : f.nseg - 1;
      cs_piece(&f, tl, &first_last, &len);
      for (uint64_t i = first; i < first_last + len &&
                               b->n_winners < b->max_winners; i++)
        if (out[i] < b->target) {
          b->winners[b->n_winners].nonce = pos + i;
          b->winners[b->n_winners].output = out[i];
          b->n_winners++;
        }
    }
    seg0 += f.nseg;
    if (f.last == last)
      break;
    pos = f.last + 1;
  }
  return 0;
}
