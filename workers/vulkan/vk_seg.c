/* vk_seg.c - the Vulkan backend's hash_batch slot: a batch hashed and
 * folded on the device into segment fingerprints, winners and best
 * (struct wv_hash_batch, workers/hash/hash.h; docs/hash.md "Segments").
 *
 * A batch is cut into sub-batches at absolute multiples of 2^23 nonces, so
 * a segment (at most 2^20 nonces) never straddles two.  Each sub-batch is
 * one submission on the next slot:
 *   hash.comp  (the pack's pipeline, vk_hash.c) writes the outputs into a
 *              device-local buffer, or into the slot's host-visible output
 *              buffer when the outputs are wanted;
 *   seg.comp   fold (one work-item per segment piece: FNV, count, best into
 *              the slot's host-visible segment records), scan (one
 *              work-group: ranks of the winners, running count and best in
 *              the accumulator), collect (the winners with ranks below
 *              max_winners);
 * with a barrier between passes.  While the device runs one slot the host
 * copies the other's fingerprints (and outputs) into the batch.  The
 * accumulator and the winner slots are one host-visible buffer read once
 * at the end.  The passes are in order on one queue, so the fold of a
 * sub-batch does not overlap the next one's hashing (at s = 13 it is about
 * a hundredth of it; docs/backends.md has the figures).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base.h"
#include "vk.h"
#include "workers/hash/hash.h"
#include "workers/hash/pack.h"

#define VS_SUB_LOG2 23u
#define VS_SUB (1ull << VS_SUB_LOG2)
#define VS_SEG_MAX (1u << (VS_SUB_LOG2 - WV_SEG_LOG2_MIN))
#define VS_SEG_BYTES 32u         /* seg.comp's struct Seg */
#define VS_ACC_BYTES 32u         /* seg.comp's accumulator header */
#define VS_GROUP 256u            /* seg.comp's local size */

_Static_assert(WV_SEG_LOG2_MAX <= VS_SUB_LOG2,
               "segments never straddle sub-batches");
_Static_assert(sizeof(wv_hash_winner) == 16, "seg.comp's struct Winner");

typedef struct vs_acc {
  uint64_t count, best_out, best_nonce, pad;
} vs_acc;

typedef struct vs_rec {
  uint64_t fp, best_out;
  uint32_t cnt, best_idx, pre, pad;
} vs_rec;

struct wv_vk_seg {
  wv_vk_buf out;           /* device-local outputs of one sub-batch */
  wv_vk_buf segs[2];       /* host-visible, per slot */
  wv_vk_buf acc;           /* host-visible: vs_acc, then winner slots */
  struct {
    uint64_t pos, n, seg0;
    uint32_t nseg;
    int busy;
  } pend[2];               /* per slot: what to copy out after its fence */
};

void wv_vk_seg_free(wv_device *d)
{
  struct wv_vk_seg *v = d->seg_state;
  if (v == NULL)
    return;
  wv_vk_buf_destroy(d, &v->out);
  wv_vk_buf_destroy(d, &v->segs[0]);
  wv_vk_buf_destroy(d, &v->segs[1]);
  wv_vk_buf_destroy(d, &v->acc);
  free(v);
  d->seg_state = NULL;
}

/* Copy slot si's finished sub-batch into b. */
static void vs_drain(wv_device *d, struct wv_vk_seg *v, unsigned si,
                     wv_hash_batch *b, uint64_t *const *host_out)
{
  if (!v->pend[si].busy)
    return;
  const vs_rec *r = v->segs[si].map;
  uint64_t *fp = b->seg_fp + v->pend[si].seg0;
  for (uint32_t k = 0; k < v->pend[si].nseg; k++)
    fp[k] = r[k].fp;
  if (b->outputs != NULL)
    memcpy(b->outputs + (v->pend[si].pos - b->nonce), host_out[si],
           (size_t)v->pend[si].n * 8);
  v->pend[si].busy = 0;
  (void)d;
}

/* What one wv_vk_hash_batch_run holds across its sub-batches. */
typedef struct vs_run {
  VkPipeline hpipe;        /* the pack's hash.comp */
  VkPipeline pass[3];      /* seg.comp: fold, scan, collect */
  VkDeviceAddress dataset;
  uint64_t units_per_dispatch;
  uint64_t maxw;           /* winners kept (0 without a target) */
  wv_vk_buf *host_out[2];  /* per slot, when the outputs are wanted */
  uint64_t *host_map[2];
} vs_run;

static int vs_check(const wv_hash_batch *b, wave_error *err)
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
  if (b->max_winners > (1u << 24))
    return wv_seterr(err, WAVE_EARG, "max_winners %zu is too large",
                     b->max_winners);
  return 0;
}

/* The pipelines and buffers of a batch; the accumulator reset. */
static int vs_setup(wv_device *d, const struct wv_pack *p,
                    const wv_hash_batch *b, vs_run *r, wave_error *err)
{
  int rc = wv_vk_hash_pipe(d, p, &r->hpipe, &r->dataset,
                           &r->units_per_dispatch, err);
  if (rc != 0)
    return rc;
  if (d->seg_state == NULL &&
      (d->seg_state = calloc(1, sizeof(struct wv_vk_seg))) == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  struct wv_vk_seg *v = d->seg_state;
  r->maxw = b->target != 0 ? b->max_winners : 0;
  for (unsigned i = 0; i < 3; i++)
    if ((rc = wv_vk_pipeline(d, WV_VK_SEG, i, &r->pass[i], err)) != 0)
      return rc;
  if ((rc = wv_vk_buf_reserve(d, &v->segs[0], VS_SEG_MAX * VS_SEG_BYTES,
                              WV_VK_HOST, err)) != 0 ||
      (rc = wv_vk_buf_reserve(d, &v->segs[1], VS_SEG_MAX * VS_SEG_BYTES,
                              WV_VK_HOST, err)) != 0 ||
      (rc = wv_vk_buf_reserve(d, &v->acc, VS_ACC_BYTES + (r->maxw + 1) * 16,
                              WV_VK_HOST, err)) != 0)
    return rc;
  if (b->outputs == NULL) {
    if ((rc = wv_vk_buf_reserve(d, &v->out, VS_SUB * 8, 0, err)) != 0)
      return rc;
  } else {
    for (unsigned i = 0; i < 2; i++)
      if ((rc = wv_vk_hash_outbuf(d, i, VS_SUB, &r->host_out[i], err)) != 0)
        return rc;
  }
  r->host_map[0] = r->host_map[1] = NULL;
  if (b->outputs != NULL) {
    r->host_map[0] = r->host_out[0]->map;
    r->host_map[1] = r->host_out[1]->map;
  }
  /* Nothing of an earlier job is in flight (every entry point waits), so
   * the accumulator is the host's to reset. */
  if ((rc = wv_vk_wait_all(d, err)) != 0)
    return rc;
  *(vs_acc *)v->acc.map = (vs_acc){0, UINT64_MAX, b->nonce, 0};
  v->pend[0].busy = v->pend[1].busy = 0;
  return 0;
}

/* Record sub-batch [pos, plast] (nseg segments) on slot si: the hash
 * dispatches, then seg.comp's passes, a barrier after each. */
static int vs_record(wv_device *d, wv_vk_slot *sl, const vs_run *r,
                     const wv_hash_batch *b, unsigned si, uint64_t pos,
                     uint64_t plast, uint32_t nseg, wave_error *err)
{
  struct wv_vk_seg *v = d->seg_state;
  const uint64_t n = plast - pos + 1;
  const wv_vk_buf *ob = b->outputs != NULL ? r->host_out[si] : &v->out;
  const wv_vk_range o = {ob->buf, 0, n * 8};
  const wv_vk_range sg = {v->segs[si].buf, 0, (VkDeviceSize)nseg * 32};
  const wv_vk_range ac = {v->acc.buf, 0, v->acc.size};
  const uint64_t u_last = plast / 32;
  int rc;
  for (uint64_t u = pos / 32;;) {
    uint64_t units = u_last - u < r->units_per_dispatch - 1
                       ? u_last - u + 1 : r->units_per_dispatch;
    struct {
      uint64_t dataset, unit0, last_unit, lo, count;
    } hp = {r->dataset, u, u_last, pos, n};
    if ((rc = wv_vk_dispatch(d, sl, r->hpipe, o, o, o, &hp, sizeof hp,
                             (units + d->hash_units - 1) / d->hash_units,
                             err)) != 0)
      return rc;
    if (u + units - 1 == u_last)
      break;
    u += units;
  }
  wv_vk_barrier(sl);
  struct {
    uint64_t lo, last, target, maxw;
    uint32_t nseg, s;
  } sp = {pos, plast, b->target, r->maxw, nseg, b->seg_log2};
  const uint64_t groups = (nseg + VS_GROUP - 1) / VS_GROUP;
  if ((rc = wv_vk_dispatch(d, sl, r->pass[0], o, sg, ac, &sp, sizeof sp,
                           groups, err)) != 0)
    return rc;
  wv_vk_barrier(sl);
  if ((rc = wv_vk_dispatch(d, sl, r->pass[1], o, sg, ac, &sp, sizeof sp, 1,
                           err)) != 0)
    return rc;
  wv_vk_barrier(sl);
  if (r->maxw > 0) {
    if ((rc = wv_vk_dispatch(d, sl, r->pass[2], o, sg, ac, &sp, sizeof sp,
                             groups, err)) != 0)
      return rc;
    wv_vk_barrier(sl);
  }
  return 0;
}

int wv_vk_hash_batch_run(wv_device *d, const struct wv_pack *p,
                         wv_hash_batch *b, wave_error *err)
{
  const unsigned s = b->seg_log2;
  vs_run r;
  int rc;
  if ((rc = vs_check(b, err)) != 0 || (rc = vs_setup(d, p, b, &r, err)) != 0)
    return rc;
  struct wv_vk_seg *v = d->seg_state;

  unsigned sub_log2 = d->opt.seg_sub_log2 != 0 ? d->opt.seg_sub_log2
                                               : VS_SUB_LOG2;
  if (sub_log2 < s)
    sub_log2 = s;
  if (sub_log2 > VS_SUB_LOG2)
    sub_log2 = VS_SUB_LOG2;
  const uint64_t sub = 1ull << sub_log2;
  const uint64_t last = b->nonce + (b->count - 1);
  uint64_t pos = b->nonce, seg0 = 0;
  for (;;) {
    const uint64_t room = sub - (pos & (sub - 1));
    const uint64_t n = last - pos < room - 1 ? last - pos + 1 : room;
    const uint64_t plast = pos + (n - 1);
    const uint32_t nseg = (uint32_t)wv_seg_count(pos, n, s);
    const unsigned si = d->cur;
    wv_vk_slot *sl;
    if ((rc = wv_vk_slot_begin(d, &sl, err)) != 0)
      goto fail;
    vs_drain(d, v, si, b, r.host_map);   /* its previous sub-batch is done */
    if ((rc = vs_record(d, sl, &r, b, si, pos, plast, nseg, err)) != 0)
      goto fail;
    if ((rc = wv_vk_slot_submit(d, sl, err)) != 0)
      goto fail;
    v->pend[si].pos = pos;
    v->pend[si].n = n;
    v->pend[si].seg0 = seg0;
    v->pend[si].nseg = nseg;
    v->pend[si].busy = 1;
    seg0 += nseg;
    if (plast == last)
      break;
    pos = plast + 1;
  }
  if ((rc = wv_vk_wait_all(d, err)) != 0)
    goto fail;
  vs_drain(d, v, 0, b, r.host_map);
  vs_drain(d, v, 1, b, r.host_map);
  const vs_acc *a = v->acc.map;
  b->winner_count = a->count;
  b->best_output = a->best_out;
  b->best_nonce = a->best_nonce;
  b->n_winners = (size_t)(a->count < r.maxw ? a->count : r.maxw);
  if (b->n_winners > 0)
    memcpy(b->winners, (const unsigned char *)v->acc.map + VS_ACC_BYTES,
           b->n_winners * sizeof *b->winners);
  return 0;
fail:
  wv_vk_wait_all(d, NULL);
  v->pend[0].busy = v->pend[1].busy = 0;
  return rc;
}
