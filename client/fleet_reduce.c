/* fleet_reduce.c - reductions over a fleet (include/wave/fleet.h): one job
 * cut into pieces, or a stream of whole jobs spread by load.
 *
 * One job.  Each non-empty input chunk is cut into runs of P = 256^k rows
 * from its start (P = 256, 65536 or 2^24; the last run may be shorter);
 * each run, with the slices of the mask chunks that cover the same logical
 * rows, is one ReduceRequest of one chunk, sent to whichever daemon is
 * free.  fleet_merge.c turns the answers into the whole job's bits
 * (docs/reduction.md, "Partials").  The job may be larger than any one
 * daemon's max_job_rows, since no daemon sees more than a piece.
 *
 * The coordinator validates what it must to cut the job (row lengths: 4
 * bytes, 8 for the 64-bit dtypes; mask length, dtype/op), with the
 * daemon's error codes; everything else is each daemon's to judge.  An
 * argmin/argmax piece's index is its own; each piece carries its first
 * row's place in the job (wv_partial.offset), so the merged index is
 * global.  An fsum piece carries its exact partial (wave_reduce_result.
 * exact), and the merge adds them (core/xsum.h): any cut, the same bits.
 * Float min/max/extent pieces answered +0.0
 * are checked here for a selected finite row (wv_fleet_any_finite, which
 * stops at the first), the one thing the answer does not say.
 */
#include <stdlib.h>
#include <string.h>

#include "client/fleet_int.h"
#include "client/fleet_merge.h"
#include "core/base.h"
#include "core/xsum.h"
#include "wave/fleet.h"

typedef struct frd_piece {
  size_t chunk;
  const unsigned char *data;
  uint64_t rows;
  uint64_t lrow;          /* the job's logical row of its first row */
  wave_chunk *mask;       /* spans of the job's mask chunks, or NULL */
  size_t n_mask;
} frd_piece;

typedef struct frd_job {
  const wave_reduce_request *req;
  frd_piece *pieces;
  wv_partial *parts;
} frd_job;

static int frd_run(fl_pool *p, size_t d, size_t slot, size_t i,
                  wave_error *err)
{
  frd_job *j = p->ctx;
  const frd_piece *pc = &j->pieces[i];
  wave_chunk in = {pc->data, (size_t)pc->rows * wv_dtype_size(j->req->dtype)};
  wave_reduce_request rq = {
      .dtype = j->req->dtype, .op = j->req->op, .input = &in, .n_input = 1,
      .mask = pc->mask, .n_mask = pc->n_mask, .has_mask = j->req->has_mask,
      .device = j->req->device, .priority = j->req->priority,
      .deadline_ms = j->req->deadline_ms};
  wave_reduce_result r;
  wave_client *c = wv_fleet_client(p->f, d, err);
  if (c == NULL)
    return err->code;
  int rc = wave_reduce(c, &rq, &r, err);
  if (rc != 0)
    return rc;
  if (r.rows != pc->rows || r.n_values != wave_op_values(rq.op))
    return wv_seterr(err, WAVE_EIO, "%s: a piece of %llu rows was answered "
                     "for %llu rows", p->f->urls[d],
                     (unsigned long long)pc->rows,
                     (unsigned long long)r.rows);
  wv_partial *pt = &j->parts[i];
  pt->chunk = pc->chunk;
  pt->bits[0] = r.bits[0];
  pt->bits[1] = r.n_values > 1 ? r.bits[1] : 0;
  pt->count = r.count;
  pt->index = r.index;    /* argmin/argmax: in the piece, made global */
  pt->offset = pc->lrow;  /* by its first row (core/partial.h) */
  pt->finite = r.count > 0;
  /* fsum: the exact partial (wave_reduce checked it), merged exactly */
  wave_error xe = {0};
  if (rq.op == WAVE_FSUM &&
      wv_xsum_unpack(&pt->xsum, rq.dtype, r.exact, r.exact_bytes,
                     r.exact_flags, &xe) != 0)
    return wv_seterr(err, WAVE_EIO, "%s: %s", p->f->urls[d], xe.message);
  int fminmax = (rq.dtype == WAVE_F32 || rq.dtype == WAVE_F64) &&
                (rq.op == WAVE_MIN || rq.op == WAVE_MAX ||
                 rq.op == WAVE_EXTENT);
  if (fminmax && r.finite != 0)  /* the daemon says (ReduceResult.finite) */
    pt->finite = r.finite == 1;
  else if (fminmax && r.count > 0 && pt->bits[0] == 0 && pt->bits[1] == 0)
    pt->finite = wv_fleet_any_finite(rq.dtype, pc->data, pc->rows, pc->mask,
                                     pc->n_mask);
  return 0;
}

/* The coordinator's own checks, with the daemon's codes. */
static int frd_validate(const wave_reduce_request *req, uint64_t *rows,
                       wave_error *err)
{
  int rc = wave_op_check(req->dtype, req->op);
  if (rc != 0)
    return wv_seterr(err, rc, "%s %s", wave_op_name(req->op),
                     wave_dtype_name(req->dtype));
  if ((req->n_input > 0 && req->input == NULL) ||
      (req->has_mask && req->n_mask > 0 && req->mask == NULL))
    return wv_seterr(err, WAVE_EARG, "wave_fleet_reduce: chunk array is NULL");
  uint64_t in = 0, mk = 0;
  unsigned z = wv_dtype_size(req->dtype);  /* 8: a 64-bit dtype */
  for (size_t i = 0; i < req->n_input; i++) {
    if (req->input[i].bytes % z)
      return wv_seterr(err, WAVE_ELENGTH, "input chunk %zu: %zu bytes is not "
                       "a whole number of %u-byte rows", i,
                       req->input[i].bytes, z);
    if (req->input[i].data == NULL && req->input[i].bytes)
      return wv_seterr(err, WAVE_EARG, "input chunk %zu has bytes but no "
                       "data", i);
    in += req->input[i].bytes / z;
  }
  for (size_t i = 0; req->has_mask && i < req->n_mask; i++) {
    if (req->mask[i].bytes % 4)
      return wv_seterr(err, WAVE_ELENGTH, "mask chunk %zu: %zu bytes is not "
                       "a whole number of 4-byte rows", i, req->mask[i].bytes);
    if (req->mask[i].data == NULL && req->mask[i].bytes)
      return wv_seterr(err, WAVE_EARG, "mask chunk %zu has bytes but no "
                       "data", i);
    mk += req->mask[i].bytes / 4;
  }
  if (req->has_mask && mk != in)
    return wv_seterr(err, WAVE_EMASKLEN, "mask has %llu rows, input %llu",
                     (unsigned long long)mk, (unsigned long long)in);
  *rows = in;
  return 0;
}

/* Mask spans for logical rows [row, row + rows), from the cursor (mask
 * chunk *mc, row *moff inside it), which moves past them. */
static int frd_mask_spans(const wave_reduce_request *req, size_t *mc,
                         uint64_t *moff, uint64_t rows, frd_piece *pc)
{
  size_t c = *mc;
  uint64_t off = *moff, left = rows, k = 0;
  while (left > 0) {  /* count first */
    uint64_t have = req->mask[c].bytes / 4 - off;
    if (have == 0) {
      c++, off = 0;
      continue;
    }
    uint64_t take = have < left ? have : left;
    k++;
    left -= take;
    off += take;
  }
  pc->mask = calloc(k ? k : 1, sizeof *pc->mask);
  if (pc->mask == NULL)
    return -1;
  c = *mc, off = *moff, left = rows;
  while (left > 0) {
    uint64_t have = req->mask[c].bytes / 4 - off;
    if (have == 0) {
      c++, off = 0;
      continue;
    }
    uint64_t take = have < left ? have : left;
    pc->mask[pc->n_mask].data =
        (const unsigned char *)req->mask[c].data + 4 * off;
    pc->mask[pc->n_mask].bytes = (size_t)take * 4;
    pc->n_mask++;
    left -= take;
    off += take;
  }
  *mc = c;
  *moff = off;
  return 0;
}

int wave_fleet_reduce(wave_fleet *f, const wave_reduce_request *req,
                      const wave_fleet_options *opt,
                      wave_fleet_reduce_result *res, wave_error *err)
{
  if (f == NULL || req == NULL || res == NULL)
    return wv_seterr(err, WAVE_EARG, "wave_fleet_reduce: NULL argument");
  memset(res, 0, sizeof *res);
  res->value.device = "";  /* many daemons ran it */
  uint64_t P = opt && opt->piece ? opt->piece : 65536;
  if (P != 256 && P != 65536 && P != (1ull << 24))
    return wv_seterr(err, WAVE_EARG, "reduce piece of %llu rows: it must be "
                     "256, 65536 or 16777216 (256^k)", (unsigned long long)P);
  uint64_t rows = 0;
  int rc = frd_validate(req, &rows, err);
  if (rc != 0)
    return rc;
  size_t n = 0;
  unsigned z = wv_dtype_size(req->dtype);
  for (size_t i = 0; i < req->n_input; i++)
    n += (size_t)((req->input[i].bytes / z + P - 1) / P);
  frd_job j = {.req = req};
  j.pieces = calloc(n ? n : 1, sizeof *j.pieces);
  j.parts = calloc(n ? n : 1, sizeof *j.parts);
  uint64_t *work = calloc(n ? n : 1, sizeof *work);
  res->members = calloc(f->n, sizeof *res->members);
  res->n_members = f->n;
  if (j.pieces == NULL || j.parts == NULL || work == NULL ||
      res->members == NULL) {
    rc = wv_seterr(err, WAVE_ENOMEM, NULL);
    goto out;
  }
  size_t k = 0, mc = 0;
  uint64_t moff = 0, lrow = 0;
  for (size_t i = 0; i < req->n_input; i++) {
    uint64_t r = req->input[i].bytes / z;
    for (uint64_t at = 0; at < r; at += P, k++) {
      frd_piece *pc = &j.pieces[k];
      pc->chunk = i;
      pc->data = (const unsigned char *)req->input[i].data + z * at;
      pc->rows = r - at < P ? r - at : P;
      pc->lrow = lrow + at;
      work[k] = pc->rows;
      if (req->has_mask && frd_mask_spans(req, &mc, &moff, pc->rows, pc)) {
        rc = wv_seterr(err, WAVE_ENOMEM, NULL);
        goto out;
      }
    }
    lrow += r;
  }
  atomic_store(&f->cancel, 0);
  double t0 = wv_fleet_now();
  rc = wv_fleet_pool_run(f, n, work, opt ? opt->depth : 0, frd_run, &j,
                         res->members, &res->retried, NULL, NULL, err);
  res->n_failed = wv_fleet_count_failed(res->members, f->n);
  res->pieces = n;
  if (rc == 0)
    rc = wv_fleet_reduce_merge(req->dtype, req->op, j.parts, n, &res->value,
                               err);
  res->value.rows = rows;
  res->value.seconds = wv_fleet_now() - t0;
  res->value.device = "";
out:
  for (size_t i = 0; j.pieces && i < n; i++)
    free(j.pieces[i].mask);
  free(j.pieces);
  free(j.parts);
  free(work);
  return rc;
}

/* ---- a stream of whole jobs --------------------------------------------- */

typedef struct frd_many {
  const wave_reduce_request *reqs;
  wave_reduce_result *results;
  wave_error *errors;
  int *failed;
} frd_many;

static int frd_many_run(fl_pool *p, size_t d, size_t slot, size_t i,
                       wave_error *err)
{
  frd_many *m = p->ctx;
  wave_error e = {0};
  wave_client *c = wv_fleet_client(p->f, d, err);
  if (c == NULL)
    return err->code;
  int rc = wave_reduce(c, &m->reqs[i], &m->results[i], &e);
  if (rc != 0 && rc != WAVE_EBUSY) {
    /* the daemon's trouble: let the pool move the job elsewhere */
    switch (rc) {
    case WAVE_EIO: case WAVE_ETIMEDOUT: case WAVE_ESHUTDOWN:
    case WAVE_EDEVFAULT: case WAVE_EDEVICE: case WAVE_ENODEV:
    case WAVE_EVERSION: case WAVE_EUNSUPPORTED:
      *err = e;
      return rc;
    default:  /* the job's own error: it is this job's answer */
      m->failed[i] = rc;
      if (m->errors)
        m->errors[i] = e;
      memset(&m->results[i], 0, sizeof m->results[i]);
      m->results[i].device = "";
      return 0;
    }
  }
  if (rc == WAVE_EBUSY)
    *err = e;
  else if (m->errors)
    memset(&m->errors[i], 0, sizeof m->errors[i]);
  return rc;
}

int wave_fleet_reduce_many(wave_fleet *f, const wave_reduce_request *reqs,
                           size_t n, wave_reduce_result *results,
                           wave_error *errors, wave_fleet_reduce_result *run,
                           wave_error *err)
{
  if (f == NULL || (n > 0 && (reqs == NULL || results == NULL)))
    return wv_seterr(err, WAVE_EARG, "wave_fleet_reduce_many: NULL argument");
  wave_fleet_member *members = calloc(f->n, sizeof *members);
  uint64_t *work = calloc(n ? n : 1, sizeof *work);
  int *failed = calloc(n ? n : 1, sizeof *failed);
  int rc = 0;
  if (members == NULL || work == NULL || failed == NULL) {
    rc = wv_seterr(err, WAVE_ENOMEM, NULL);
    goto out;
  }
  for (size_t i = 0; i < n; i++) {
    for (size_t c = 0; c < reqs[i].n_input; c++)
      work[i] += reqs[i].input ? reqs[i].input[c].bytes / 4 : 0;
  }
  frd_many m = {reqs, results, errors, failed};
  atomic_store(&f->cancel, 0);
  uint64_t retried = 0;
  rc = wv_fleet_pool_run(f, n, work, 0, frd_many_run, &m, members, &retried,
                         NULL, NULL, err);
  for (size_t i = 0; rc == 0 && i < n; i++)
    if (failed[i]) {
      rc = wv_seterr(err, failed[i], "job %zu: %s", i,
                     errors ? errors[i].message : wave_strerror(failed[i]));
      break;
    }
  if (run != NULL) {
    memset(run, 0, sizeof *run);
    run->members = members;
    run->n_members = f->n;
    run->n_failed = wv_fleet_count_failed(members, f->n);
    run->pieces = n;
    run->retried = retried;
    members = NULL;
  }
out:
  free(members);
  free(work);
  free(failed);
  return rc;
}

void wave_fleet_reduce_result_free(wave_fleet_reduce_result *res)
{
  if (res == NULL)
    return;
  free(res->members);
  res->members = NULL;
  res->n_members = 0;
}
