/* slices.c - a big reduction in slices (see slices.h).
 *
 * Two cursors walk the job, one over the input chunks and one over the
 * mask chunks, each at the next slice's first logical row; a slice takes
 * its rows from them as spans into the job's own memory (no copy), so a
 * slice costs one backend call and one partial.  Empty chunks give no
 * rows and are stepped over (they give no pieces: docs/reduction.md).
 *
 * Chunks cost too (issue 35, finding 2): a backend call spends on each
 * chunk about what SL_CHUNK_COST rows cost, so a slice also takes at most
 * slice_rows / SL_CHUNK_COST chunks, and a job of many tiny chunks yields
 * as often as one of a few big ones.  An order-free op simply stops its
 * slice at that many chunks.  A float sum whose chunks are all short runs
 * in blocks of 256^k whole non-empty chunks, aligned at multiples of 256^k
 * in chunk order: the chunk values are reduced by the same levels as the
 * rows, so such a block's answer is exactly the node of the chunk values'
 * tree above those chunks (-0.0 padding changes no value), and the blocks'
 * values reduced by the levels give the tree's root.  The accumulator
 * takes each block as one "chunk" of one piece.
 */
#include <assert.h>
#include <stdlib.h>
#include <unistd.h>

#include "daemon/rq/slices.h"
#include "core/base.h"
#include "workers/wvdev.h"

#define SL_PIECE (1ull << 16)  /* 256^2: the smallest slice */
#define SL_CPU1 (1ull << 18)
#define SL_CPUN (1ull << 24)
#define SL_GPU (1ull << 32)
#define SL_CHUNK_COST 64       /* rows a chunk costs a backend call */

/* A float sum of only short chunks: whole chunks per slice (a power of
 * 256, those chunks' rows, each costing at least SL_CHUNK_COST, within
 * slice_rows), or 0 when that is not more than one slice. */
static uint64_t sl_block(const wv_reduce_job *job, uint64_t slice_rows)
{
  uint64_t most = SL_CHUNK_COST, n = 0, b = 0;
  for (size_t i = 0; i < job->n_input; i++)
    if (job->input[i].rows > 0) {
      n++;
      if (job->input[i].rows > most)
        most = job->input[i].rows;
    }
  for (uint64_t k = 256; k <= slice_rows / most; k *= 256)
    b = k;
  return b != 0 && n > b ? b : 0;
}

/* An order-free op: chunks per slice at most. */
static uint64_t sl_max_chunks(uint64_t p)
{
  return p / SL_CHUNK_COST;
}

uint64_t wd_slices_device_rows(const wd_device_cfg *cfg, const wv_caps *caps)
{
  if (cfg->reduce_slice_rows != 0)  /* the configured size wins */
    return cfg->reduce_slice_rows;
  if (!caps->reads_host_memory)  /* a GPU: kernels take microseconds */
    return SL_GPU;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  unsigned threads = cfg->threads ? cfg->threads
                                  : (cores > 1 ? (unsigned)cores : 1);
  return threads == 1 ? SL_CPU1 : SL_CPUN;
}

uint64_t wd_slices_rows(const wv_reduce_job *job, uint64_t slice_rows)
{
  if (slice_rows == 0)
    return 0;
  uint64_t p = slice_rows / SL_PIECE * SL_PIECE;
  if (p < SL_PIECE)
    p = SL_PIECE;
  if ((job->dtype != WAVE_F32 && job->dtype != WAVE_F64) ||
      job->op != WAVE_SUM)
    return job->rows > p || job->n_input > sl_max_chunks(p) ||
                   job->n_mask > sl_max_chunks(p)
               ? p : 0;
  /* the float sum's tree is cut only at powers of 256 */
  uint64_t f = SL_PIECE;
  while (f <= slice_rows / 256)
    f *= 256;
  uint64_t pieces = 0;
  for (size_t i = 0; i < job->n_input; i++)
    pieces += (job->input[i].rows + f - 1) / f;
  if (job->rows > f && pieces <= 2 * ((job->rows + f - 1) / f))
    return f;
  /* many chunks shorter than a slice: one call each would cost more than
   * the job; in blocks of whole chunks when all are short, else whole */
  return sl_block(job, p) ? p : 0;
}

int wd_slices_init(wd_slices *s, const wv_reduce_job *job, uint64_t p,
                   wave_error *err)
{
  *s = (wd_slices){.job = job, .p = p};
  s->fsum = (job->dtype == WAVE_F32 || job->dtype == WAVE_F64) &&
            job->op == WAVE_SUM;
  s->most = sl_max_chunks(p);
  if (s->fsum) {  /* pieces of P = p rows, unless that rule fails */
    uint64_t pieces = 0;
    for (size_t i = 0; i < job->n_input; i++)
      pieces += (job->input[i].rows + p - 1) / p;
    if (job->rows <= p || pieces > 2 * ((job->rows + p - 1) / p))
      s->block = sl_block(job, p);
  }
  size_t cap = 0;  /* float sum: chunk values + one chunk's pieces */
  if (s->fsum) {
    uint64_t most = 0;
    for (size_t i = 0; i < job->n_input; i++)
      if (job->input[i].rows > most)
        most = job->input[i].rows;
    cap = job->n_input + (size_t)((most + p - 1) / p);
  }
  s->sub = calloc(job->n_input + job->n_mask + 1, sizeof *s->sub);
  if (s->sub == NULL)
    return wv_seterr(err, WAVE_ENOMEM, "slices of a %llu-row job",
                     (unsigned long long)job->rows);
  int rc = wv_partial_init(&s->acc, job->dtype, job->op, cap, err);
  if (rc != 0) {
    free(s->sub);
    s->sub = NULL;
  }
  return rc;
}

/* Move the cursor past chunks that have no rows left. */
static void sl_skip(const wv_span *c, size_t n, size_t *ci, uint64_t *off)
{
  while (*ci < n && *off == c[*ci].rows) {
    (*ci)++;
    *off = 0;
  }
}

/* The next r rows (of `size` bytes) of chunks c[0..n) from the cursor
 * (ci, off) as spans into out; the cursor moves past them.  Returns the
 * spans written. */
static size_t sl_take(const wv_span *c, size_t n, size_t *ci, uint64_t *off,
                      uint64_t r, unsigned size, wv_span *out)
{
  size_t k = 0;
  while (r > 0) {
    sl_skip(c, n, ci, off);
    assert(*ci < n);  /* a validated job has the rows it says */
    uint64_t t = c[*ci].rows - *off;
    if (t > r)
      t = r;
    out[k].data = (const uint8_t *)c[*ci].data + *off * size;
    out[k++].rows = t;
    *off += t;
    r -= t;
  }
  return k;
}

/* Rows in the next `most` chunks of c[0..n) from the cursor (ci, off). */
static uint64_t sl_rows_in(const wv_span *c, size_t n, size_t ci,
                           uint64_t off, uint64_t most)
{
  uint64_t r = 0;
  for (uint64_t k = 0; k < most && ci < n; k++, ci++, off = 0)
    r += c[ci].rows - off;
  return r;
}

int wd_slices_step(wd_slices *s, const wv_dev *dev, int *last,
                   wave_error *err)
{
  *last = 0;
  const wv_reduce_job *j = s->job;
  uint64_t r = j->rows - s->lrow;
  size_t chunk = 0;
  if (s->block) {  /* the next block of whole non-empty chunks */
    sl_skip(j->input, j->n_input, &s->ic, &s->ioff);
    r = 0;
    size_t ci = s->ic;
    for (uint64_t k = 0; k < s->block && ci < j->n_input; ci++)
      if (j->input[ci].rows > 0) {
        r += j->input[ci].rows;
        k++;
      }
    chunk = s->nblk++;
  } else if (s->fsum) {  /* one piece: the rest of this chunk, <= p rows */
    sl_skip(j->input, j->n_input, &s->ic, &s->ioff);
    r = j->input[s->ic].rows - s->ioff;
    chunk = s->ic;
  } else {  /* order-free: at most s->most chunks of inputs and masks */
    sl_skip(j->input, j->n_input, &s->ic, &s->ioff);
    if (j->has_mask)
      sl_skip(j->mask, j->n_mask, &s->mc, &s->moff);
    uint64_t in = sl_rows_in(j->input, j->n_input, s->ic, s->ioff, s->most);
    uint64_t mk = j->has_mask
                      ? sl_rows_in(j->mask, j->n_mask, s->mc, s->moff, s->most)
                      : in;
    r = in < mk ? in : mk;
  }
  if (r > s->p && !s->block)
    r = s->p;
  size_t ni = sl_take(j->input, j->n_input, &s->ic, &s->ioff, r,
                      wv_dtype_size(j->dtype), s->sub);
  size_t nm = j->has_mask ? sl_take(j->mask, j->n_mask, &s->mc, &s->moff, r,
                                    4, s->sub + ni)
                          : 0;
  wv_reduce_job sub = {
    .dtype = j->dtype,
    .op = j->op,
    .input = s->sub,
    .n_input = ni,
    .mask = s->sub + ni,
    .n_mask = nm,
    .has_mask = j->has_mask,
    .rows = r,
  };
  wv_reduce_out o = {0};
  int rc = wv_dev_reduce(dev, &sub, &o, err);
  s->transfer += o.transfer_s;
  if (rc != 0)
    return rc;
  wv_partial p;
  wv_partial_of(&sub, &o, chunk, &p);
  p.offset = s->lrow;  /* argmin/argmax: the slice's first logical row */
  if ((rc = wv_partial_add(&s->acc, &p, err)) != 0)
    return rc;
  s->lrow += r;
  *last = s->lrow == j->rows;
  return 0;
}

void wd_slices_result(wd_slices *s, wv_reduce_out *out, int *some_finite)
{
  wv_partial_result(&s->acc, out, some_finite);
  out->transfer_s = s->transfer;
}

void wd_slices_fini(wd_slices *s)
{
  wv_partial_fini(&s->acc);
  free(s->sub);
  s->sub = NULL;
}
