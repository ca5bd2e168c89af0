/* fleet_hash.c - wave_fleet_hash: one hash job cut into pieces of whole
 * segments, run over the fleet's pool (fleet.c), checked, and merged by
 * fleet_merge.c.
 *
 * Hash pieces are guided by default (wv_fleet_hash_guided): each about a
 * 1/(4 daemons) share of the nonces left, so they shrink toward the end
 * and the last ones, held two per daemon, are small; with pieces of one
 * size the daemons' finishing times spread by up to two whole pieces.
 *
 * The hash pieces speak protocol 2 directly (segment_log2, want_segments,
 * segment paging, the daemon instance), through wv_fleet_call: the
 * exchange of wv_client_call, but one that nng's pipe-removed event
 * (nng_pipe_notify) aborts at once, so a daemon that hangs up while it
 * holds a piece loses it now rather than after the reply timeout.
 *
 * Members are not believed (docs/fleet.md, "Checks"): fh_hash_check
 * tests every DONE answer's ranges, counts and order, and, with the
 * caller's re-hash function, its winners, best and one random segment.
 * A liar is dropped and every piece it answered goes back in the queue
 * (fl_drop, fleet.c); a piece whose `done` stands still for the stall deadline is
 * cancelled there and moved, its daemon dropped.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client_int.h"
#include "client/fleet_int.h"
#include "client/fleet_merge.h"
#include "core/base.h"
#include "wave/fleet.h"

typedef struct fh_hash {
  const wave_hash_request *req;
  unsigned s;
  uint64_t piece;
  wv_fleet_hpart *parts;
} fh_hash;

/* The exchange of one piece's calls: daemon d, its connection, the close
 * count when the piece began, and where a close is reported. */
typedef struct fh_link {
  wave_fleet *f;
  size_t d;
  wave_client *c;
  unsigned gen;
  int *why;
} fh_link;

static int fh_hash_submit(const fh_link *l, const fh_hash *h, uint64_t nonce,
                          uint64_t count, uint64_t *job, uint64_t *inst,
                          wave_error *err)
{
  wave_client *c = l->c;
  static char all[] = "all";
  char *devs[1] = {all};
  Wave__V1__HashRequest hr = WAVE__V1__HASH_REQUEST__INIT;
  hr.pack = (char *)(h->req->pack ? h->req->pack : "");
  hr.nonce = nonce;
  hr.count = count;
  hr.target = h->req->target;
  hr.max_winners = h->req->max_winners;
  hr.client = c->tag;
  hr.segment_log2 = h->s;
  hr.want_segments = 1;
  if (h->req->n_devices > 0) {  /* the caller's device list, as given */
    hr.device = (char *)"";
    hr.n_devices = h->req->n_devices;
    hr.devices = (char **)h->req->devices;
  } else if (h->req->device && h->req->device[0]) {
    hr.device = (char *)h->req->device;
  } else {
    hr.device = (char *)"";
    hr.n_devices = 1;
    hr.devices = devs;
  }
  WV_CLIENT_LEVEL(&hr, h->req);
  Wave__V1__Request r = WAVE__V1__REQUEST__INIT;
  r.body_case = WAVE__V1__REQUEST__BODY_HASH;
  r.hash = &hr;
  Wave__V1__Response *resp;
  int rv = wv_fleet_call(l->f, l->d, c, &r, WAVE__V1__RESPONSE__BODY_JOB, 0,
                         &resp, l->gen, l->why, err);
  if (rv != 0)
    return rv;
  if (resp->job == NULL || resp->job->job_id == 0) {
    wave__v1__response__free_unpacked(resp, NULL);
    return wv_seterr(err, WAVE_EIO, "%s: hash submit reply without a job id",
                     c->url);
  }
  *job = resp->job->job_id;
  *inst = resp->job->instance;
  wave__v1__response__free_unpacked(resp, NULL);
  return 0;
}

static int fh_job_call(const fh_link *l, uint64_t job, uint64_t inst,
                       unsigned wait_ms, uint64_t seg_off, int cancel,
                       Wave__V1__Response **resp, wave_error *err)
{
  wave_client *c = l->c;
  Wave__V1__Request r = WAVE__V1__REQUEST__INIT;
  Wave__V1__JobRequest jr = WAVE__V1__JOB_REQUEST__INIT;
  Wave__V1__CancelRequest cr = WAVE__V1__CANCEL_REQUEST__INIT;
  if (cancel) {
    cr.job_id = job;
    cr.instance = inst;
    r.body_case = WAVE__V1__REQUEST__BODY_CANCEL;
    r.cancel = &cr;
  } else {
    jr.job_id = job;
    jr.instance = inst;
    jr.wait_ms = wait_ms;
    jr.segment_offset = seg_off;
    r.body_case = WAVE__V1__REQUEST__BODY_JOB;
    r.job = &jr;
  }
  int rv = wv_fleet_call(l->f, l->d, c, &r, WAVE__V1__RESPONSE__BODY_JOB,
                         wait_ms, resp, l->gen, l->why, err);
  if (rv == 0 && (*resp)->job == NULL) {
    wave__v1__response__free_unpacked(*resp, NULL);
    *resp = NULL;
    return wv_seterr(err, WAVE_EIO, "%s: empty job reply", c->url);
  }
  return rv;
}

/* Copy the DONE result of a piece, fetching every page of its segments. */
static int fh_hash_collect(const fh_link *l, uint64_t job, uint64_t inst,
                           const Wave__V1__HashResult *hr, unsigned s,
                           wv_fleet_hpart *pt, wave_error *err)
{
  wave_client *c = l->c;
  uint64_t want = wv_seg_count(pt->nonce, pt->count, s);
  if (hr->segment_log2 != s || hr->segment_count != want ||
      hr->hashes != pt->count)
    return wv_seterr(err, WAVE_EVERSION,
                     "%s: piece [%llu, +%llu) came back with %llu segments "
                     "of 2^%u and %llu hashes, not %llu of 2^%u: the daemon "
                     "does not serve protocol-2 segments", c->url,
                     (unsigned long long)pt->nonce,
                     (unsigned long long)pt->count,
                     (unsigned long long)hr->segment_count, hr->segment_log2,
                     (unsigned long long)hr->hashes,
                     (unsigned long long)want, s);
  pt->segments = malloc(want * sizeof *pt->segments);
  if (pt->segments == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  pt->n_segments = 0;
  pt->winner_count = hr->winner_count;
  pt->best_nonce = hr->best_nonce;
  pt->best_output = hr->best_output;
  if (hr->n_winners > 0) {
    pt->winners = calloc(hr->n_winners, sizeof *pt->winners);
    if (pt->winners == NULL)
      return wv_seterr(err, WAVE_ENOMEM, NULL);
    for (size_t i = 0; i < hr->n_winners; i++)
      if (hr->winners[i]) {
        pt->winners[pt->n_winners].nonce = hr->winners[i]->nonce;
        pt->winners[pt->n_winners].output = hr->winners[i]->output;
        pt->n_winners++;
      }
  }
  const Wave__V1__HashResult *page = hr;
  Wave__V1__Response *resp = NULL;
  int rc = 0;
  for (;;) {
    if (page->segment_offset != pt->n_segments ||
        page->n_segments > want - pt->n_segments ||
        (page->n_segments == 0 && pt->n_segments < want)) {
      rc = wv_seterr(err, WAVE_EIO, "%s: segment page at %llu with %zu "
                     "entries, expected the page at %llu", c->url,
                     (unsigned long long)page->segment_offset,
                     page->n_segments, (unsigned long long)pt->n_segments);
      break;
    }
    memcpy(pt->segments + pt->n_segments, page->segments,
           page->n_segments * sizeof *page->segments);
    pt->n_segments += page->n_segments;
    if (resp)
      wave__v1__response__free_unpacked(resp, NULL);
    resp = NULL;
    if (pt->n_segments == want)
      break;
    if ((rc = fh_job_call(l, job, inst, 0, pt->n_segments, 0, &resp, err)))
      break;
    if (resp->job->state != WAVE__V1__JOB_STATE__DONE ||
        resp->job->result == NULL) {
      rc = wv_seterr(err, WAVE_EIO, "%s: job %llu no longer done while its "
                     "segments were read", c->url, (unsigned long long)job);
      break;
    }
    page = resp->job->result;
  }
  if (resp)
    wave__v1__response__free_unpacked(resp, NULL);
  return rc;
}

/* A lie: the daemon is dropped and all it answered runs again. */
static int fh_lie(const fh_link *l, wave_error *err, const char *what,
                  const wv_fleet_hpart *pt, uint64_t nonce)
{
  *l->why = WAVE_FLEET_LIED;
  return wv_seterr(err, WAVE_EMISMATCH, "%s: piece [%llu, +%llu): %s "
                   "(nonce %llu); the daemon is not believed", l->c->url,
                   (unsigned long long)pt->nonce,
                   (unsigned long long)pt->count, what,
                   (unsigned long long)nonce);
}

/* The coordinator's checks of one piece's answer (docs/fleet.md,
 * "Checks"): what needs no hash, then, with f->rehash, every winner, the
 * best and one segment re-hashed here. */
static int fh_hash_check(const fh_link *l, const fh_hash *h,
                         const wv_fleet_hpart *pt, size_t item,
                         wave_error *err)
{
  const wave_hash_request *req = h->req;
  uint64_t lo = pt->nonce, hi = pt->nonce + (pt->count - 1);
  uint64_t target = req->target;
  if (pt->n_winners > req->max_winners || pt->n_winners > pt->winner_count ||
      pt->winner_count > pt->count)
    return fh_lie(l, err, "winner counts do not add up", pt,
                  pt->winner_count);
  if (pt->winner_count > pt->n_winners && pt->n_winners < req->max_winners)
    return fh_lie(l, err, "fewer winners listed than counted", pt,
                  pt->winner_count);
  if (pt->best_nonce < lo || pt->best_nonce > hi)
    return fh_lie(l, err, "the best lies outside the piece", pt,
                  pt->best_nonce);
  if ((pt->best_output < target) != (pt->winner_count > 0))
    return fh_lie(l, err, "the best and the winner count disagree", pt,
                  pt->best_nonce);
  for (size_t j = 0; j < pt->n_winners; j++) {
    const wv_hash_winner *w = &pt->winners[j];
    if (w->nonce < lo || w->nonce > hi)
      return fh_lie(l, err, "a winner lies outside the piece", pt, w->nonce);
    if (j > 0 && w->nonce <= pt->winners[j - 1].nonce)
      return fh_lie(l, err, "winners out of nonce order", pt, w->nonce);
    if (w->output >= target)
      return fh_lie(l, err, "a winner does not meet the target", pt,
                    w->nonce);
    if (w->output < pt->best_output ||
        (w->output == pt->best_output && w->nonce < pt->best_nonce))
      return fh_lie(l, err, "a winner beats the best", pt, w->nonce);
  }
  wave_fleet *f = l->f;
  if (f->rehash == NULL)
    return 0;
  const char *pack = req->pack ? req->pack : "";
  uint64_t out;
  int rc;
  for (size_t j = 0; j < pt->n_winners; j++) {
    if ((rc = f->rehash(f->rehash_arg, pack, pt->winners[j].nonce, 1, &out,
                        err)) != 0)
      return rc;
    if (out != pt->winners[j].output)
      return fh_lie(l, err, "a winner's output is not its hash", pt,
                    pt->winners[j].nonce);
  }
  if ((rc = f->rehash(f->rehash_arg, pack, pt->best_nonce, 1, &out, err)))
    return rc;
  if (out != pt->best_output)
    return fh_lie(l, err, "the best's output is not its hash", pt,
                  pt->best_nonce);
  /* One segment in full, picked at random so a daemon cannot know which:
   * a made-up fingerprint list fails it for sure, one bad segment with
   * odds 1/segments.  Only for segments of at most 2^13 nonces and at most
   * 1/64 of the piece: the CPU reference is slow (0.2 s for 2^13 nonces of
   * pack main on one core, docs/fleet.md), and the check must stay small
   * beside the piece it checks. */
  if (h->s > 13 || pt->n_segments == 0 || (pt->count >> 6) < (1ull << h->s))
    return 0;
  uint64_t x = l->c->tag ^ ((uint64_t)item * 0x9e3779b97f4a7c15ull) ^
               (uint64_t)(wv_fleet_now() * 1e9);
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  uint64_t k = x % pt->n_segments;
  uint64_t a = ((lo >> h->s) + k) << h->s, b = a | ((1ull << h->s) - 1);
  if (a < lo)
    a = lo;
  if (b > hi)
    b = hi;
  uint64_t *o = malloc((size_t)(b - a + 1) * sizeof *o);
  if (o == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  rc = f->rehash(f->rehash_arg, pack, a, b - a + 1, o, err);
  uint64_t fp = rc == 0 ? wv_fnv1a64_u64(WV_FNV_OFFSET, o, (size_t)(b - a + 1))
                        : 0;
  free(o);
  if (rc != 0)
    return rc;
  if (fp != pt->segments[k])
    return fh_lie(l, err, "a segment fingerprint is not its outputs' (spot "
                  "check)", pt, a);
  return 0;
}

static int fh_hash_run(fl_pool *p, size_t d, size_t slot, size_t i,
                       wave_error *err)
{
  fh_hash *h = p->ctx;
  wave_client *c = wv_fleet_client(p->f, d, err);
  if (c == NULL)
    return err->code;
  fh_link l = {.f = p->f, .d = d, .c = c, .why = &p->why[slot],
               .gen = atomic_load(&p->f->closes[d])};
  wv_fleet_hpart *pt = &h->parts[i];
  free(pt->segments);
  free(pt->winners);
  uint64_t nonce = pt->nonce, count = pt->count;
  memset(pt, 0, sizeof *pt);
  pt->nonce = nonce;
  pt->count = count;

  uint64_t job = 0, inst = 0;
  int rc = fh_hash_submit(&l, h, nonce, count, &job, &inst, err);
  if (rc != 0)
    return rc;
  /* the progress deadline: `done` must grow within stall_ms */
  uint64_t seen = 0;
  double moved = wv_fleet_now(), stall = (double)p->f->stall_ms / 1e3;
  for (;;) {
    Wave__V1__Response *resp;
    if (atomic_load(&p->f->cancel)) {
      wave_error ce;
      if (fh_job_call(&l, job, inst, 0, 0, 1, &resp, &ce) == 0)
        wave__v1__response__free_unpacked(resp, NULL);
      return wv_seterr(err, WAVE_ECANCELLED, NULL);
    }
    if ((rc = fh_job_call(&l, job, inst, 200, 0, 0, &resp, err)) != 0)
      return rc;
    const Wave__V1__JobInfo *ji = resp->job;
    atomic_store(&p->inflight[slot], ji->done <= count ? ji->done : count);
    if (ji->state == WAVE__V1__JOB_STATE__DONE) {
      rc = ji->result ? fh_hash_collect(&l, job, inst, ji->result, h->s, pt,
                                        err)
                      : wv_seterr(err, WAVE_EIO, "%s: job done without a "
                                  "result", c->url);
      wave__v1__response__free_unpacked(resp, NULL);
      if (rc == 0)
        rc = fh_hash_check(&l, h, pt, i, err);
      return rc;
    }
    if (ji->state == WAVE__V1__JOB_STATE__FAILED ||
        ji->state == WAVE__V1__JOB_STATE__CANCELLED) {
      int code = ji->error && ji->error->code ? (int)ji->error->code
                 : ji->state == WAVE__V1__JOB_STATE__CANCELLED
                     ? WAVE_ESHUTDOWN  /* cancelled by someone else */
                     : WAVE_EINTERNAL;
      rc = wv_seterr(err, code, "%s: piece [%llu, +%llu): %s", c->url,
                     (unsigned long long)nonce, (unsigned long long)count,
                     ji->error && ji->error->message ? ji->error->message
                                                     : "job ended");
      wave__v1__response__free_unpacked(resp, NULL);
      return rc;
    }
    uint64_t done = ji->done;
    wave__v1__response__free_unpacked(resp, NULL);
    double now = wv_fleet_now();
    if (done > seen && done <= count) {
      seen = done;
      moved = now;
    } else if (now - moved > stall) {
      wave_error ce;  /* let it go: the piece runs elsewhere */
      if (fh_job_call(&l, job, inst, 0, 0, 1, &resp, &ce) == 0)
        wave__v1__response__free_unpacked(resp, NULL);
      *l.why = WAVE_FLEET_STALLED;
      return wv_seterr(err, WAVE_ETIMEDOUT, "%s: piece [%llu, +%llu) made "
                       "no progress for %.1f s (stall deadline; %llu of "
                       "%llu done)", c->url, (unsigned long long)nonce,
                       (unsigned long long)count, now - moved,
                       (unsigned long long)seen, (unsigned long long)count);
    }
  }
}

int wave_fleet_hash(wave_fleet *f, const wave_hash_request *req,
                    const wave_fleet_options *opt,
                    wave_fleet_hash_result *res,
                    wave_fleet_progress_fn progress, void *arg,
                    wave_error *err)
{
  if (f == NULL || req == NULL || res == NULL)
    return wv_seterr(err, WAVE_EARG, "wave_fleet_hash: NULL argument");
  memset(res, 0, sizeof *res);
  if (req->want_outputs)
    return wv_seterr(err, WAVE_EARG, "a fleet hash job does not return "
                     "outputs (ask one daemon)");
  if (req->count == 0 || req->nonce + (req->count - 1) < req->nonce)
    return wv_seterr(err, WAVE_ERANGE, "nonce range [%llu, +%llu) is empty "
                     "or passes 2^64", (unsigned long long)req->nonce,
                     (unsigned long long)req->count);
  unsigned s = opt && opt->segment_log2 ? opt->segment_log2
               : req->segment_log2 ? req->segment_log2 : WV_SEG_LOG2_DEFAULT;
  int want_segments = (opt && opt->want_segments) || req->want_segments;
  if (s < WV_SEG_LOG2_MIN || s > WV_SEG_LOG2_MAX)
    return wv_seterr(err, WAVE_EARG, "segment_log2 %u is outside %u..%u", s,
                     WV_SEG_LOG2_MIN, WV_SEG_LOG2_MAX);
  /* piece 0: guided pieces, shrinking toward the end (fleet_merge.h) */
  uint64_t piece = opt ? opt->piece : 0;
  uint64_t n = piece ? wv_fleet_hash_pieces(req->nonce, req->count, s, piece)
                     : wv_fleet_hash_guided(req->nonce, req->count, s, f->n,
                                            NULL, NULL);
  if (n > (1u << 24))
    return wv_seterr(err, WAVE_EARG, "%llu pieces: give a larger piece",
                     (unsigned long long)n);
  atomic_store(&f->cancel, 0);
  fh_hash h = {.req = req, .s = s, .piece = piece};
  uint64_t *work = calloc(n, sizeof *work);
  h.parts = calloc(n, sizeof *h.parts);
  res->members = calloc(f->n, sizeof *res->members);
  int rc = 0;
  if (work == NULL || h.parts == NULL || res->members == NULL) {
    rc = wv_seterr(err, WAVE_ENOMEM, NULL);
    goto out;
  }
  if (piece == 0) {  /* work[] holds the starts for a moment */
    wv_fleet_hash_guided(req->nonce, req->count, s, f->n, work, NULL);
    for (uint64_t i = 0; i < n; i++)
      h.parts[i].nonce = work[i];
    wv_fleet_hash_guided(req->nonce, req->count, s, f->n, NULL, work);
  }
  for (uint64_t i = 0; i < n; i++) {
    if (piece != 0)
      wv_fleet_hash_piece(req->nonce, req->count, s, piece, i,
                          &h.parts[i].nonce, &h.parts[i].count);
    else
      h.parts[i].count = work[i];
    work[i] = h.parts[i].count;
  }
  res->n_members = f->n;
  double t0 = wv_fleet_now();
  rc = wv_fleet_pool_run(f, (size_t)n, work, opt ? opt->depth : 0,
                         fh_hash_run, &h, res->members, &res->retried,
                         progress, arg, err);
  res->seconds = wv_fleet_now() - t0;
  res->n_failed = wv_fleet_count_failed(res->members, f->n);
  res->pieces = n;
  res->segment_log2 = s;
  if (rc == 0)
    rc = wv_fleet_hash_merge(h.parts, (size_t)n, s, req->max_winners,
                             want_segments, res, err);
out:
  for (uint64_t i = 0; h.parts && i < n; i++) {
    free(h.parts[i].segments);
    free(h.parts[i].winners);
  }
  free(h.parts);
  free(work);
  if (rc != 0) {  /* members stay: the caller still learns who failed */
    free(res->segments);
    free(res->winners);
    res->segments = NULL;
    res->winners = NULL;
    res->n_winners = 0;
  }
  return rc;
}

void wave_fleet_hash_result_free(wave_fleet_hash_result *res)
{
  if (res == NULL)
    return;
  free(res->segments);
  free(res->winners);
  free(res->members);
  memset(res, 0, sizeof *res);
}
